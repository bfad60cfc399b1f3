/* ui/ui.h — the `mtool` command line: one function per subcommand.
 * Each returns the process exit status: 0 success, 1 failure, 2 usage. */
#ifndef MTOOL_UI_H
#define MTOOL_UI_H

#include <stdio.h>

#include "../run/run.h"
#include "../sim/sim.h"
#include "../store/store.h"

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
/* MPI jobs (count_ranks.c): the per-rank wrapper's hidden command, and the
 * per-rank figures of count's summary and of count.json ("mpi": null
 * without a job). */
int mt_cmd_rank(int argc, char **argv);
void mt_count_print_ranks(FILE *fp, const mt_program *prog, const mt_pass1_libraries *libs,
                          const mt_mpi_job *job, int top);
void mt_count_json_ranks(FILE *fp, const mt_program *prog, const mt_pass1_libraries *libs,
                         const mt_mpi_job *job);
/* MPI jobs in `time` (time_ranks.c): per m-object, each rank's figures and
 * the imbalance of measured time, in the text report and report.json
 * ("mpi": null without a job). */
void mt_time_print_ranks(FILE *fp, const mt_pass2_result *rp);
void mt_time_json_ranks(FILE *fp, const mt_pass2_result *rp);
typedef struct mt_history mt_history;
/* The job's row `row` per rank, into the history after the row itself. */
void mt_time_history_ranks(mt_history *h, const mt_pass2_result *rp, const mt_mobject_figures *row);
/* An m-object's name (LIB:PROCEDURE: loop at ADDR (depth D)...) and source range (cmd_time.c). */
void mt_time_object_name(const mt_candidate *c, char *buf, size_t n);
void mt_time_source_range(const mt_candidate *c, char *buf, size_t n);
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
typedef struct {
    const char *tool;          /* "count", ... */
    int argc;                  /* the subcommand's arguments, from its name on */
    char **argv;
    char **prog_argv;          /* BIN ARGS..., NULL-terminated */
    bool ran;                  /* false: nothing ran (profiles merged) */
    int exit_status;
    double user_s, sys_s, wall_s, base_user_s, base_sys_s, base_wall_s; /* NAN when absent */
    const char *rundir;        /* a timed run's directory, absolute (its pass2.tsv stamps
                                  the run: mt_store_rundir_stamp); NULL: none */
    const mt_store_program_time *timed; /* a timed run's program figures; NULL: none */
} mt_history_run;
mt_history *mt_history_begin(const mt_program *prog, const char *bin);
/* The figures of shared library `name` (its file `path`, analyzed as
 * `prog`) in h's run: add them to the history returned, which h owns and
 * stores and frees with its own (its sites named NAME:PROCEDURE). */
mt_history *mt_history_library(mt_history *h, const mt_program *prog, const char *name,
                               const char *path);
/* entries: times control entered the object from outside it (a loop's:
 * mt_loop_entries); iterations: a loop's header executions (not stored for
 * a procedure); measured and predicted: core cycles, NAN when not measured
 * (count). */
void mt_history_add(mt_history *h, uint32_t proc, uint32_t loop, uint64_t entries,
                    uint64_t iterations, uint64_t instructions, uint64_t memory_ops,
                    double measured, double predicted);
/* Region k of procedure proc: the blocks from cut point `first` up to `end`
 * (MT_NONE: to the returns), stored as the procedure's region k. */
void mt_history_add_region(mt_history *h, uint32_t proc, uint32_t first, uint32_t end, uint32_t k,
                           uint64_t entries, uint64_t instructions, uint64_t memory_ops,
                           double measured, double predicted);
/* An MPI job's rank and its host (NULL: not recorded); then, after each
 * mt_history_add or mt_history_add_region of the job's figures, that
 * object's figures in each rank. */
void mt_history_add_rank(mt_history *h, int rank, const char *host);
void mt_history_add_rank_figures(mt_history *h, int rank, uint64_t entries, uint64_t memory_ops,
                                 double measured, double predicted);
int mt_history_finish(mt_history *h, const mt_history_run *r);
/* A simulated run (`mtool sim`), recorded whole: the machine `m` as the
 * finished simulator `s` ran it, its code objects (mt_code_object_split's
 * ids) named by `prog`, the analysis of prog_argv[0] (BIN ARGS...,
 * NULL-terminated; a trace read with --binary: BIN alone), and those of
 * the libraries `libs` traced with it (NULL: none) by theirs, each
 * library's build stored as a program of its own; `run` the
 * traced process, NULL for a trace file.  Stored: per level the machine's
 * description and the totals, per procedure and loop its references and
 * misses per level by cause, and with `data` (NULL: none) per data object
 * its references, misses and line use; with cpus > 1 per object its
 * coherence misses and events and references by where served; with
 * `whatif` (NULL: none) its remedies and proposals; with a simulated TLB
 * per object its TLB misses and page walks, the walks' cycles at
 * `walk_cost` each (the machine profile's; NAN: none).  As
 * mt_history_finish: 0, or -1 said. */
int mt_history_record_sim(mt_sim *s, const mt_sim_machine *m, const mt_program *prog,
                          const mt_pass1_libraries *libs, const mt_data_map *data,
                          const mt_whatif_report *whatif, double walk_cost, int argc,
                          char **argv, char **prog_argv, const mt_run_result *run);
int mt_cmd_report(int argc, char **argv);
extern const char mt_report_usage[];
/* RUNDIR's HTML report at `html` and, when `callgrind` is not NULL, its
 * Callgrind export (ui/cmd_report.c): both written whole or neither; 0, or
 * 1 said on stderr.  `pass2`: the pass 2 just made there, whose analyzed
 * program and machine profile the report borrows; NULL: RUNDIR is read. */
int mt_ui_write_report(const char *rundir, const mt_pass2_result *pass2, const char *html,
                       const char *callgrind);
int mt_cmd_calibrate(int argc, char **argv);
extern const char mt_calibrate_usage[];
int mt_cmd_sim(int argc, char **argv);
extern const char mt_sim_usage[];
/* mtool sim's report, shared by cmd_sim.c and sim_data.c: a code object's
 * name (its procedure's, NAME@0xHEADER for a loop); the misses of a code
 * object, data object or pair per level by cause, as JSON; the data
 * objects' sections, text and JSON. */
#define MT_SIM_CODE_NAME_MAX 1024
void mt_sim_code_name(const mt_program *prog, uint32_t code, char *buf, size_t n);
void mt_sim_json_misses(FILE *fp, const mt_sim *s, const uint64_t (*misses)[MT_SIM_NCAUSES]);
/* Line use (mt_sim_object_uses' or mt_sim_code_uses' rows): object id's
 * row at level l, or NULL; its bytes used over bytes brought in; its rows
 * as JSON, {LEVEL: {"lines", "bytes_used", "reuses", "spatial_use"}}. */
const mt_sim_object_use *mt_sim_use_of(const mt_sim_object_use *uses, size_t n, uint32_t id,
                                       unsigned l);
double mt_sim_spatial_use(const mt_sim *s, const mt_sim_object_use *u);
void mt_sim_json_use(FILE *fp, const mt_sim *s, const mt_sim_object_use *uses, size_t n,
                     uint32_t id);
/* The pairs summed per data object that has a reference, the most missed
 * first; *n rows. */
typedef struct {
    uint32_t id;
    uint64_t refs, misses[MT_SIM_MAX_LEVELS][MT_SIM_NCAUSES];
} mt_sim_data_row;
mt_sim_data_row *mt_sim_data_rows(mt_sim *s, const mt_data_map *d, size_t *n);
void mt_sim_data_text(FILE *fp, mt_sim *s, const mt_data_map *d, const mt_program *prog);
void mt_sim_data_json(FILE *fp, mt_sim *s, const mt_data_map *d, const mt_program *prog);
/* A simulator of cpus > 1: per CPU, per code and data object (d may be
 * NULL) and per shared line, the coherence sections (docs/SIMULATOR.md,
 * "Processors"); nothing for one CPU. */
void mt_sim_coherence_text(FILE *fp, mt_sim *s, const mt_data_map *d, const mt_program *prog);
/* Per CPU its true and false sharing misses, invalidations sent and received,
 * interventions made and served, upgrades (the full and misses-only reports). */
void mt_sim_cpu_events_text(FILE *fp, const mt_sim *s);
void mt_sim_coherence_json(FILE *fp, mt_sim *s, const mt_data_map *d, const mt_program *prog);
/* A code object's name (by_data false) or a data object's (its id when d
 * names none). */
void mt_sim_object_name(const mt_data_map *d, const mt_program *prog, bool by_data, uint32_t id,
                        char *buf, size_t n);
/* Nodes and where references were served (sim_numa.c; docs/SIMULATOR.md,
 * "Nodes"), for cpus > 1: the text section; a CPU's classes as JSON
 * (`"node": N, "served": {...}, "served_stall_cycles": C|null`); the
 * processors object's node fields and per code and data object classes. */
void mt_sim_numa_text(FILE *fp, mt_sim *s, const mt_data_map *d, const mt_program *prog);
void mt_sim_numa_cpu_json(FILE *fp, const mt_sim *s, unsigned cpu);
/* `"served": {CLASS: n}, "served_stall_cycles": C|null` of a CPU's or a
 * thread's classes. */
void mt_sim_numa_served_json(FILE *fp, const mt_sim *s, const uint64_t *served);
void mt_sim_numa_json(FILE *fp, mt_sim *s, const mt_data_map *d, const mt_program *prog);
/* What-if remedies (sim_whatif.c; docs/SIMULATOR.md, "What-if remedies"):
 * the remedies' savings and the top problems' proposed remedies, text or
 * the "what_if" JSON field; nothing when w is NULL. */
void mt_sim_whatif_text(FILE *fp, const mt_sim *s, const mt_whatif_report *w,
                        const mt_data_map *d, const mt_program *prog);
void mt_sim_whatif_json(FILE *fp, const mt_sim *s, const mt_whatif_report *w,
                        const mt_data_map *d, const mt_program *prog);
/* A remedy in words ("pad adjacent.a: each 8-byte word on a 64-byte line of
 * its own"), raw: escape it to show it. */
#define MT_SIM_REMEDY_TEXT_MAX (MT_SIM_CODE_NAME_MAX + 128)
void mt_sim_remedy_text(const mt_whatif_remedy *r, const mt_data_map *d, char *buf, size_t n);
/* What `now` saves against `base` (negative: more), as the report's rows:
 * misses per level (every cause), conflict and coherence misses over the
 * levels, sharing misses, remote references, stall cycles (NAN without
 * latencies). */
typedef struct {
    int64_t level[MT_SIM_MAX_LEVELS];
    int64_t conflict, coherence, sharing, remote;
    double cycles;
} mt_sim_saving;
void mt_sim_whatif_saving(const mt_sim *s, const mt_whatif_figures *base,
                          const mt_whatif_figures *now, mt_sim_saving *out);

/* What the rewriter did: instrumented share, procedures left out (all of
 * them when verbose, else the first ten). */
void mt_print_rewrite_report(FILE *fp, const mt_program *prog, const mt_rewrite_report *r,
                             bool verbose);

/* `analyze --costs`: per-block predictions, with counts per-procedure totals. */
int mt_print_costs(FILE *fp, const mt_program *prog, const char *counts_path,
                   const char *only_function, mt_error *err);

/* `count`: MTOOL's figure 2 (mt_pass1_result's), as text. */
void mt_print_figure2(FILE *fp, const mt_figure2 *f);

/* "file.c:12-40" from the lines of blocks[0..n) of p (all its blocks when
 * blocks is NULL), or "" when they have none (cmd_analyze.c). */
void mt_ui_source_range(const mt_program *prog, const mt_procedure *p, const uint32_t *blocks,
                        uint32_t n, char *buf, size_t len);

/* Colour (term.c): SGR escapes for fp, or "" when fp is not a terminal that
 * wants colour (not a tty, NO_COLOR set, TERM dumb, --no-color). */
typedef enum {
    MT_UI_PLAIN, MT_UI_BOLD, MT_UI_DIM, MT_UI_RED, MT_UI_YELLOW, MT_UI_GREEN, MT_UI_ERROR
} mt_ui_style_kind;
const char *mt_ui_style(FILE *fp, mt_ui_style_kind kind);
/* --no-color: no escape on any stream from now on. */
void mt_ui_color_disable(void);
/* How an overhead of `percent` % of the prediction is shown. */
mt_ui_style_kind mt_ui_overhead_style(double percent);

/* The last column of a table row that starts at `column` (its visible
 * width), and the newline: on a terminal, cut to its width with "..." (a
 * C++ name can run to hundreds of characters; report.json has it whole),
 * never below 24 characters; whole into a file or a pipe.  `text` is
 * already escaped (mt_ui_escape): one byte, one column. */
void mt_ui_last_column(FILE *fp, size_t column, const char *text);

/* The progress line of long work (term.c; common/progress.h): drawn on
 * stderr when it is a terminal, after MTOOL_PROGRESS_DELAY seconds (1);
 * erased by mt_progress_end and before every error. */
void mt_ui_progress_install(void);
void mt_ui_progress_erase(void);

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

#endif
