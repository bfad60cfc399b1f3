/* ui/ui.h — the `mtool` command line: one function per subcommand.
 * Each returns the process exit status: 0 success, 1 failure, 2 usage. */
#ifndef MTOOL_UI_H
#define MTOOL_UI_H

#include <stdio.h>

#include "costmodel/costmodel.h"
#include "rewriter/rewriter.h"

typedef struct {
    const char *name;
    const char *summary; /* one line for `mtool help` */
    const char *usage;   /* full text for `mtool help CMD` */
    int (*run)(int argc, char **argv);
} mt_command;

int mt_cmd_analyze(int argc, char **argv);
extern const char mt_analyze_usage[];
int mt_cmd_instrument(int argc, char **argv);
extern const char mt_instrument_usage[];
int mt_cmd_count(int argc, char **argv);
extern const char mt_count_usage[];
int mt_cmd_history(int argc, char **argv);
extern const char mt_history_usage[];

/* Recording a run in the history (ui/history_record.c): begin with the
 * analyzed program, add the figures of every executed procedure (loop ==
 * MT_NONE) and loop, finish with the run's circumstances.  finish stores
 * in $MTOOL_HISTORY (or the XDG data directory), prints where or one error
 * line, frees everything, and returns 0 or -1. */
typedef struct mt_history mt_history;
typedef struct {
    const char *tool;          /* "count", ... */
    int argc;                  /* the subcommand's arguments, from its name on */
    char **argv;
    char **prog_argv;          /* BIN ARGS..., NULL-terminated */
    bool ran;                  /* false: nothing ran (profiles merged) */
    int exit_status;
    double user_s, sys_s, wall_s, base_user_s, base_sys_s, base_wall_s; /* NAN when absent */
} mt_history_run;
mt_history *mt_history_begin(const mt_program *prog, const char *bin);
void mt_history_add(mt_history *h, uint32_t proc, uint32_t loop, uint64_t entries,
                    uint64_t instructions, uint64_t memory_ops);
int mt_history_finish(mt_history *h, const mt_history_run *r);
int mt_cmd_calibrate(int argc, char **argv);
extern const char mt_calibrate_usage[];

/* What the rewriter did: instrumented share, procedures left out (all of
 * them when verbose, else the first ten). */
void mt_print_rewrite_report(FILE *fp, const mt_program *prog, const mt_rewrite_report *r,
                             bool verbose);

/* Cost-model reports (costs.c).  The machine profile calibrated for this CPU,
 * or the default with a warning on stderr; -1 (reported) when unreadable. */
int mt_ui_load_machine(mt_machine *m);
/* counts.tsv of `mtool count` into counts[] laid out as c->costs. */
int mt_ui_read_counts(const char *path, const mt_program *prog, const mt_program_costs *c,
                      uint64_t *counts, mt_error *err);
/* `analyze --costs`: per-block predictions, with counts per-procedure totals. */
int mt_print_costs(FILE *fp, const mt_program *prog, const char *counts_path,
                   const char *only_function, mt_error *err);

/* `count`: MTOOL's figure 2 — predicted user time from block counts (laid
 * out as mt_program_costs), measured times, probes' cost, overhead. */
typedef struct {
    double user, sys;
    double tsc_per_cycle; /* measured around the run; 0 if unknown */
} mt_run_times;
void mt_print_predicted_summary(FILE *fp, const mt_program *prog, const uint64_t *block_counts,
                                uint64_t probes, const mt_run_times *base, const mt_run_times *run);

/* Prints "mtool: MESSAGE" on stderr. */
void mt_ui_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
