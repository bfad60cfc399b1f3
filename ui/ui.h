/* ui/ui.h — the `mtool` command line: one function per subcommand.
 * Each returns the process exit status: 0 success, 1 failure, 2 usage. */
#ifndef MTOOL_UI_H
#define MTOOL_UI_H

#include <stdio.h>

#include "../costmodel/costmodel.h"
#include "../profile/profile.h"
#include "../rewriter/rewriter.h"

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
int mt_cmd_time(int argc, char **argv);
extern const char mt_time_usage[];
int mt_cmd_run(int argc, char **argv);
extern const char mt_run_usage[];
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
/* measured and predicted: core cycles, NAN when not measured (count). */
void mt_history_add(mt_history *h, uint32_t proc, uint32_t loop, uint64_t entries,
                    uint64_t instructions, uint64_t memory_ops, double measured,
                    double predicted);
/* Region k of procedure proc: the blocks from cut point `first` up to `end`
 * (MT_NONE: to the returns), stored as the procedure's region k. */
void mt_history_add_region(mt_history *h, uint32_t proc, uint32_t first, uint32_t end, uint32_t k,
                           uint64_t entries, uint64_t instructions, uint64_t memory_ops,
                           double measured, double predicted);
int mt_history_finish(mt_history *h, const mt_history_run *r);
int mt_cmd_calibrate(int argc, char **argv);
extern const char mt_calibrate_usage[];
int mt_cmd_sim(int argc, char **argv);
extern const char mt_sim_usage[];

/* What the rewriter did: instrumented share, procedures left out (all of
 * them when verbose, else the first ten). */
void mt_print_rewrite_report(FILE *fp, const mt_program *prog, const mt_rewrite_report *r,
                             bool verbose);

/* Cost-model reports (costs.c).  The machine profile calibrated for this CPU;
 * without one, this machine is calibrated now and the profile kept (said on
 * stderr).  -1 (reported) when a profile is unreadable or no calibration
 * succeeds and mtool ships none for this CPU. */
int mt_ui_load_machine(mt_machine *m);
/* What `mtool calibrate` measures (cmd_calibrate.c), into *m: `runs` runs of
 * every microbenchmark, their figures and spreads on `report` (or NULL). */
int mt_ui_calibrate(mt_machine *m, int runs, FILE *report, mt_error *err);
/* The model's self-check (selfcheck.c): the embedded compute-bound kernels
 * counted by pass 1, predicted with *m and timed `passes` times each; their
 * median and worst error go into m (check_*), the table to `report` (or
 * NULL).  -1 with err when the check could not be made (m then says "not
 * checked"). */
int mt_ui_selfcheck(mt_machine *m, int passes, FILE *report, mt_error *err);
/* What every report says beside its figures: the model's checked error on
 * this CPU, from the machine profile (mt_model_check_of), or that it was
 * not checked; a warning line when it is above 10%.  Each line starts with
 * `indent`.  The same as a JSON object (report.json, count.json). */
typedef struct {
    double kernels;            /* 0: not checked */
    double median_pct, worst_pct;
    char worst_kernel[32];
    char source[64];           /* the profile's */
} mt_model_check;
void mt_model_check_of(mt_model_check *c, const mt_machine *m);
void mt_ui_print_model_check(FILE *fp, const mt_model_check *c, const char *indent);
void mt_ui_model_check_json(FILE *fp, const mt_model_check *c);
/* `analyze --costs`: per-block predictions, with counts per-procedure totals. */
int mt_print_costs(FILE *fp, const mt_program *prog, const char *counts_path,
                   const char *only_function, mt_error *err);

/* `count`: MTOOL's figure 2 — predicted user time from block counts (laid
 * out as mt_program_costs), measured times, probes' cost, overhead —
 * computed once (mt_figure2_compute, which loads the machine profile as
 * mt_ui_load_machine does, calibrating when there is none) and written as
 * text or JSON by whoever reports it. */
typedef struct {
    double user, sys;
    double tsc_per_cycle; /* measured around the run; 0 if unknown */
} mt_run_times;
typedef struct {
    bool predicted;             /* false: no prediction, `error` says why */
    char error[512];
    /* The machine profile in use and this CPU. */
    char profile_cpu_model[128], profile_source[64], cpu_model[128];
    bool calibrated;            /* a calibration of this machine (kept, or made now), not a
                                   shipped profile */
    int profile_version;
    double tsc_hz;
    /* The prediction: core cycles, and seconds at the clock ratio the run saw. */
    double cycles;              /* counted blocks, every memory access an L1 hit */
    uint64_t probes;            /* counter increments executed */
    double probe_cycles;        /* their predicted cost */
    double tsc_per_cycle;
    const char *tsc_per_cycle_from;  /* which run it was measured around, or "now" */
    double predicted_s, probe_s;
    bool has_base, has_run;
    double base_user_s, base_sys_s, run_user_s, run_sys_s;
    double compensated_s;       /* instrumented user time - probe_s; NAN without that run */
    double measured_s;          /* what the overhead compares with; NAN when nothing ran */
    const char *measured_from;
    double overhead_s, overhead_percent; /* NAN when not known */
    mt_model_check check;       /* the profile's self-check (kernels 0 without a profile) */
} mt_figure2;
void mt_figure2_compute(mt_figure2 *f, const mt_program *prog, const uint64_t *block_counts,
                        uint64_t probes, const mt_run_times *base, const mt_run_times *run);
void mt_print_figure2(FILE *fp, const mt_figure2 *f);

/* What the measuring commands share (runner.c). */
char *mt_cache_root(void);                          /* $XDG_CACHE_HOME/mtool */
int mt_make_dirs(const char *path, mt_error *err);  /* mkdir -p */
/* Removes the profiles (*.mtp) of an earlier run from a run directory. */
int mt_clear_profiles(const char *dir, mt_error *err);
char *mt_default_rundir(const char *bin);           /* CACHE/runs/NAME-TIME-PID */
char *mt_absolute(const char *path);                /* realpath, or NULL */
typedef struct {
    char *path;             /* the instrumented copy */
    char *report;           /* what the rewriter did, as text (mt_print_rewrite_report) */
    mt_rewrite_report rewrite; /* the same as figures (reasons on one line each) */
} mt_instrumented;
/* The copy of `bin` that counts every block (ntimed == 0), or that times
 * `timed` without counters (pass 2), cached under the binary's content
 * hash, this mtool's identity and the timed set, with the rewriter's
 * report (the cache's report.tsv). */
int mt_instrument_cached(const mt_program *prog, const char *bin, const mt_timed_object *timed,
                         uint32_t ntimed, bool verbose, mt_instrumented *out, mt_error *err);
void mt_instrumented_free(mt_instrumented *ins);
typedef struct {
    double user, sys, wall;
    double tsc_per_cycle;   /* core clock during the run: measured before and after */
    int status;             /* from waitpid */
} mt_run_result;
/* Runs exe with argv (MTOOL_OUT=profile_dir when not NULL), waiting for it
 * with the terminal's SIGINT/SIGQUIT left to it. */
int mt_run_program(const char *exe, char **argv, const char *profile_dir, mt_run_result *r,
                   mt_error *err);
int mt_exit_code(int status);                       /* as a shell reports it */
void mt_describe_status(char *buf, size_t n, int status);

/* The run directory's files (rundir.c; format: docs/REPORT.md, "The run
 * directory"), one writer and one reader each.  counts.tsv: pass 1's count
 * of every counted block; read into new counts laid out as
 * mt_block_offsets (NULL with err: refused when its blocks or procedure
 * names are not the program's). */
int mt_rundir_write_counts(const char *rundir, const mt_program *prog, const mt_counter_map *map,
                           const uint64_t *counts, mt_error *err);
uint64_t *mt_ui_read_counts(const char *path, const mt_program *prog, mt_error *err);
/* call_targets.tsv: pass 1's calls through pointers, for
 * mt_refine_with_pass1 (*out freed by the caller); a missing file (a run of
 * an older mtool) has none. */
int mt_rundir_write_call_targets(const char *rundir, const mt_program *prog,
                                 const mt_counter_map *map, const profile_merge *merge,
                                 mt_error *err);
int mt_ui_read_call_targets(const char *path, mt_call_target_count **out, size_t *nout,
                            mt_error *err);
/* argv and pass1.txt: the pass-1 run `mtool time RUNDIR` builds on. */
typedef struct {
    char *binary, *sha256;    /* absolute path; content hash, hex */
    char **argv;              /* BIN ARGS..., NULL-terminated, into argv_buf */
    char *argv_buf;
    double base_user, base_sys, base_wall, base_tsc_per_cycle; /* NAN when pass 1 had no baseline */
} mt_pass1;
int mt_rundir_write_pass1(const char *rundir, char **argv, const mt_run_result *base,
                          mt_error *err);
int mt_rundir_read_pass1(const char *rundir, mt_pass1 *p, mt_error *err);
void mt_pass1_free(mt_pass1 *p);

/* "file.c:12-40" from the lines of blocks[0..n) of p (all its blocks when
 * blocks is NULL), or "" when they have none (cmd_analyze.c). */
void mt_ui_source_range(const mt_program *prog, const mt_procedure *p, const uint32_t *blocks,
                        uint32_t n, char *buf, size_t len);

/* Prints "mtool: MESSAGE" on stderr, one line (control bytes as \xHH). */
void mt_ui_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A program-derived string (symbol, path, command line) for a terminal
 * line: mt_escape_text, whole, in a new string the caller frees. */
char *mt_ui_escape(const char *s);
/* Where a command's report goes: `path` through an mt_outfile (complete or
 * not at all), or stdout when path is NULL.  NULL, said, when the file
 * cannot be made.  The close commits the file or flushes stdout: 0, or 1
 * (said) when the report could not be written. */
FILE *mt_ui_output_open(mt_outfile *out, const char *path);
int mt_ui_output_close(mt_outfile *out, const char *path);
/* One warning line naming (escaped) the damaged profiles a merge of `dir`
 * skipped; nothing when there were none. */
void mt_ui_warn_damaged_profiles(const char *dir, const profile_merge *m);

#endif
