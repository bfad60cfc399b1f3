/* run/run.h — what a run of a program under mtool is: the pipeline of
 * pass 1 (count) and pass 2 (time), the run directory they share (its
 * format, docs/REPORT.md "The run directory"), the cache of instrumented
 * copies and their identity, running a program, and the machine profile a
 * run predicts with (calibrated and self-checked when there is none).
 *
 * ui/ parses the options, prints these results (text, JSON) and decides
 * the exit status; nothing here decides what a user sees but the progress
 * lines written to the caller's `log` stream (NULL: none). */
#ifndef MTOOL_RUN_H
#define MTOOL_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../correlate/correlate.h"
#include "../costmodel/costmodel.h"
#include "../dataobj/dataobj.h"
#include "../profile/profile.h"
#include "../rewriter/rewriter.h"
#include "../sim/sim.h"

/* ---- directories (runner.c) ----------------------------------------------- */

char *mt_cache_root(void);                          /* $XDG_CACHE_HOME/mtool */
int mt_make_dirs(const char *path, mt_error *err);  /* mkdir -p */
/* Removes the profiles (*.mtp) of an earlier run from a run directory. */
int mt_clear_profiles(const char *dir, mt_error *err);
char *mt_default_rundir(const char *bin);           /* CACHE/runs/NAME-TIME-PID */
char *mt_absolute(const char *path);                /* realpath, or NULL */

/* ---- instrumented copies, cached (runner.c) -------------------------------- */

typedef struct {
    char *path;                /* the instrumented copy */
    mt_rewrite_report rewrite; /* what the rewriter did (reasons on one line each) */
} mt_instrumented;
/* The copy of `bin` that counts every block (ntimed == 0), or that times
 * `timed` without counters (pass 2); with `trace`, the copy that counts
 * every block and records every load and store, of the blocks of `timed`
 * only when ntimed > 0 (they are then traced, not timed).  Cached under the
 * binary's content hash, this mtool's identity, the set and tracing, with
 * the rewriter's report (the cache's report.tsv). */
int mt_instrument_cached(const mt_program *prog, const char *bin, const mt_timed_object *timed,
                         uint32_t ntimed, bool trace, mt_instrumented *out, mt_error *err);
/* The copy of `bin` as one object of a set counted or timed together
 * (docs/ARCHITECTURE.md, "Shared libraries"), `member` saying which:
 * counter_base, libs_set, library; for pass 2 (timers_only) its timed
 * objects, timer_base and, a library, slot_counters.  Activating
 * (or, a `library`, activated with) the copies of the same libs_set.
 * Library copies are cached under CACHE/libs/. */
int mt_instrument_in_set(const mt_program *prog, const char *bin, const mt_rewrite_options *member,
                         mt_instrumented *out, mt_error *err);
void mt_instrumented_free(mt_instrumented *ins);
/* Identity of this mtool build, so a rebuilt rewriter never reuses copies
 * made by an older one. */
uint64_t mt_tool_identity(void);

/* ---- running a program (runner.c) ------------------------------------------- */

typedef struct {
    double user, sys, wall;
    double tsc_per_cycle;   /* core clock during the run: the mean of its measurements
                               before and after (NAN: mt_run_program_unclocked) */
    double tsc_per_cycle_lo, tsc_per_cycle_hi; /* the lesser and the greater of the two:
                               how far the clock moved around the run */
    int status;             /* from waitpid */
} mt_run_result;
/* Runs exe with argv (MTOOL_OUT=profile_dir when not NULL), waiting for it
 * with the terminal's SIGINT/SIGQUIT left to it. */
int mt_run_program(const char *exe, char **argv, const char *profile_dir, mt_run_result *r,
                   mt_error *err);
/* The same with "NAME=VALUE" strings added to its environment (env, NULL-terminated). */
int mt_run_program_env(const char *exe, char **argv, const char *profile_dir, char *const *env,
                       mt_run_result *r, mt_error *err);
/* The same without the core clock measured around the run (tsc_per_cycle
 * NAN), for runs whose figures are not cycles (traced runs, the MPI collect
 * step): the clock's two measurements are 20-25 ms a run (perf of `mtool
 * sim -- phases-gcc-O2 1`, 14% of its samples; Xeon family 6 model 85). */
int mt_run_program_unclocked(const char *exe, char **argv, const char *profile_dir,
                             char *const *env, mt_run_result *r, mt_error *err);
int mt_exit_code(int status);                       /* as a shell reports it */
void mt_describe_status(char *buf, size_t n, int status);

/* ---- the run directory (rundir.c; docs/REPORT.md, "The run directory") ----- */

/* The format this mtool writes (the `format` file, "mtool-run 2"); a run
 * directory without that file is of version 1, the same files before they
 * carried a version, read as version 2 when they parse. */
#define MT_RUNDIR_VERSION 2
/* counts.tsv: pass 1's count of every counted block, read into new counts
 * laid out as mt_block_offsets (NULL with err: refused when its blocks or
 * procedure names are not the program's, or when the directory holding it
 * says a format this mtool does not know). */
uint64_t *mt_rundir_read_counts(const char *path, const mt_program *prog, mt_error *err);
/* call_targets.tsv: pass 1's calls through pointers, for
 * mt_refine_with_pass1 (*out freed by the caller); a missing file (a run of
 * an older mtool) has none. */
int mt_rundir_read_call_targets(const char *path, mt_call_target_count **out, size_t *nout,
                                mt_error *err);
/* Frees what mt_rundir_read_call_targets read (the objects' names with it). */
void mt_rundir_free_call_targets(mt_call_target_count *targets, size_t n);
/* argv and pass1.txt: the pass-1 run `mtool time RUNDIR` builds on. */
typedef struct {
    char *binary, *sha256;    /* absolute path; content hash, hex */
    char **argv;              /* BIN ARGS..., NULL-terminated, into argv_buf */
    char *argv_buf;
    double base_user, base_sys, base_wall, base_tsc_per_cycle; /* NAN when pass 1 had no baseline */
} mt_pass1;
/* Refused (one line naming the file) when the run directory's format is
 * not one this mtool reads. */
int mt_rundir_read_pass1(const char *rundir, mt_pass1 *p, mt_error *err);
/* Whether RUNDIR holds a finished pass 1 (its pass1.txt, written last). */
bool mt_rundir_has_pass1(const char *rundir);
/* Forgets RUNDIR's pass 1, so that only a pass 1 that finishes now marks
 * the directory finished. */
void mt_rundir_forget_pass1(const char *rundir);
void mt_pass1_free(mt_pass1 *p);
/* -1 with err when pass1.txt's binary changed since pass 1 counted it. */
int mt_rundir_check_binary(const mt_pass1 *p, mt_error *err);
/* The program as pass 1 saw it run: its counts (into *counts, malloc'd,
 * laid out as mt_block_offsets) and its calls through pointers refine the
 * analysis, once. */
int mt_rundir_refine(const char *rundir, mt_program *prog, uint64_t **counts, mt_error *err);
/* The same for the shared library `name` pass 1 counted:
 * libs/NAME.counts.tsv and libs/NAME.call_targets.tsv. */
int mt_rundir_refine_library(const char *rundir, const char *name, mt_program *prog,
                             uint64_t **counts, mt_error *err);

/* pass2.tsv: the m-objects the last pass 2 timed (written by mt_run_pass2,
 * removed by a new pass 1), for `mtool sim RUNDIR`, the HTML report and the
 * history: the executable's and its counted libraries' (docs/REPORT.md,
 * "pass2.tsv"). */
typedef struct mt_pass1_library_s mt_pass1_library;     /* below */
typedef struct mt_pass1_libraries_s mt_pass1_libraries; /* below */
typedef struct {
    mt_timed_object object;   /* in prog */
    const mt_program *prog;   /* the executable's (pass1.txt's binary) or lib's */
    const mt_pass1_library *lib; /* the counted library it is in, NULL: the executable */
    char *spec;               /* its spec in prog (mt_timed_object_format) */
    uint64_t memops;          /* pass 1's, inclusive of callees */
    double predicted, measured; /* core cycles: the cost model's, the least timed */
    bool outermost;           /* not nested in another timed object */
} mt_pass2_object;
typedef struct {
    double program_predicted, program_measured, objects_overhead; /* core cycles */
    mt_pass2_object *objects; /* largest overhead first, as pass 2 ranked them */
    size_t nobjects;
} mt_pass2_record;
/* An MPI job's pass 1 (docs/REPORT.md, "MPI jobs"): mpi/rank-N.counts.tsv
 * per rank (as counts.tsv) and mpi/rank-N.LIB.counts.tsv per rank and
 * counted library of libs (as libs/LIB.counts.tsv), then mpi/launcher (the
 * launcher's command line, as argv), which pass 2 runs again. */
struct mt_mpi_job;
struct mt_pass1_libraries_s;
int mt_rundir_write_job(const char *rundir, const mt_program *prog, const mt_counter_map *map,
                        const struct mt_pass1_libraries_s *libs, const struct mt_mpi_job *job,
                        mt_error *err);
/* The job's launcher command line (*argv into *buf, both to free), or
 * *argv NULL when RUNDIR's pass 1 was no job. */
int mt_rundir_read_job(const char *rundir, char **buf, char ***argv, mt_error *err);
/* mpi/pass2.tsv: an MPI job's last pass 2 per rank (written with pass2.tsv,
 * for the HTML report; report.json's "mpi" is written from the same
 * figures, report/job.c): its ranks, and each timed object's figures per
 * rank (spec as pass2.tsv's; predicted NAN and memops 0 where the rank's
 * counts do not predict it).  No file: nranks 0. */
typedef struct {
    int rank;
    char *host;               /* NULL: not recorded */
} mt_job_rank;
typedef struct {
    char *spec;
    char *library;            /* the object's shared library file name (NULL: the executable's) */
    int rank;
    uint64_t entries;
    double predicted, measured; /* core cycles */
    uint64_t memops;          /* the rank's pass-1 count (0 from an mtool before it) */
} mt_job_figures;
typedef struct {
    mt_job_rank *ranks;
    size_t nranks;
    mt_job_figures *figures;
    size_t nfigures;
} mt_job_pass2;
int mt_rundir_read_job_pass2(const char *rundir, mt_job_pass2 *p, mt_error *err);
void mt_job_pass2_free(mt_job_pass2 *p);
/* Load imbalance over an MPI job's ranks: the most over the mean (1 =
 * balanced; NAN when the total is 0), ranks with a NAN figure left out,
 * and the index of the rank with the most (the lowest on a tie). */
typedef struct {
    double imbalance;
    uint32_t max_rank;
} mt_imbalance;
mt_imbalance mt_imbalance_of(const double *per_rank, uint32_t n);
/* Rank N's pass-1 counts of the executable (library NULL) or of that
 * counted library, laid out as mt_rundir_read_counts'. */
uint64_t *mt_rundir_read_rank_counts(const char *rundir, int rank, const char *library,
                                     const mt_program *prog, mt_error *err);

/* Refused (one line naming the file) when there is none (no pass 2 yet),
 * a line does not parse, or an object is not one of prog's or of its
 * library's in libs (mt_pass2_libraries_prepare's; NULL: the libraries'
 * objects are skipped, the executable's read). */
int mt_rundir_read_pass2(const char *rundir, const mt_program *prog,
                         const mt_pass1_libraries *libs, mt_pass2_record *p, mt_error *err);
void mt_pass2_record_free(mt_pass2_record *p);
/* machine.txt: the machine profile the last pass 2 predicted with (the
 * profile format of costmodel/machine.c).  *found false (and 0) when there
 * is none: a run directory of an mtool before it, or no pass 2 yet. */
int mt_rundir_read_machine(const char *rundir, mt_machine *m, bool *found, mt_error *err);
/* sim.json: what `mtool sim RUNDIR` found, its JSON document (docs/SIMULATOR.md,
 * "`mtool sim` output"), for `mtool report`; removed by a new pass 1 or
 * pass 2, whose objects it did not simulate.  The reader gives *json NULL
 * (and 0) when there is none, and refuses (one line naming the file) a file
 * that is not one JSON object. */
int mt_rundir_write_sim(const char *rundir, const char *json, size_t len, mt_error *err);
int mt_rundir_read_sim(const char *rundir, char **json, mt_error *err);

/* ---- the machine profile (machine.c, selfcheck.c) --------------------------- */

/* The machine profile calibrated for this CPU; without one, this machine is
 * calibrated now and the profile kept (said on `log`).  *calibrated: a
 * calibration of this machine (kept, or made now), not a shipped profile.
 * -1 with err when a profile is unreadable or no calibration succeeds and
 * mtool ships none for this CPU. */
int mt_run_load_machine(mt_machine *m, bool *calibrated, FILE *log, mt_error *err);
/* What `mtool calibrate` measures, into *m: `runs` runs of every
 * microbenchmark, their figures and spreads on `report` (or NULL); then,
 * when `check`, the model's self-check (a check that cannot be made leaves
 * the profile "not checked", said on `log`).  The calibration waits for
 * quiet moments `wait_seconds` at most, the check half as long. */
int mt_run_calibrate(mt_machine *m, int runs, bool check, double wait_seconds, FILE *report,
                     FILE *log, mt_error *err);
/* The latencies of the memory hierarchy (mt_calibrate_latencies) into a
 * profile that has none (older, or shipped), for this run only: said on
 * `log`. */
int mt_run_measure_latencies(mt_machine *m, FILE *log, mt_error *err);
/* The model's self-check: the embedded compute-bound kernels counted by
 * pass 1, predicted with *m and timed `passes` times each (more samples in
 * quiet moments, waited for `wait_seconds` at most); their median and
 * worst error go into m (check_*), the table to `report` (or NULL).  -1
 * with err when the check could not be made (m then says "not checked"). */
int mt_run_selfcheck(mt_machine *m, int passes, double wait_seconds, FILE *report, mt_error *err);
/* Samples of each kernel the check takes after a calibration of `runs`
 * runs: the fastest of them counts. */
#define MT_SELFCHECK_PASSES(runs) ((runs) + 6)
/* What every report says beside its figures: the model's checked error on
 * this CPU, from the machine profile, or that it was not checked; a warning
 * line when it is above 10%, one when the profile was calibrated while
 * other CPUs were busier than MT_CALIBRATION_BUSY_PCT, and one naming the
 * calibration's figures that fell back (no quiet samples confirmed them).
 * Each line starts with `indent`.  The same as a JSON object (report.json,
 * count.json). */
typedef struct {
    double kernels;            /* 0: not checked */
    double median_pct, worst_pct;
    char worst_kernel[32];
    char source[64];           /* the profile's */
    double busy_pct;           /* other CPUs' busy share while it was calibrated (%) */
    double confirmed, fallbacks; /* the calibration's figures (both 0: not recorded) */
    uint8_t how[MT_CALIBRATION_BENCHES_MAX]; /* per benchmark, mt_confirm */
} mt_model_check;
void mt_model_check_of(mt_model_check *c, const mt_machine *m);
void mt_model_check_print(FILE *fp, const mt_model_check *c, const char *indent);
void mt_model_check_json(FILE *fp, const mt_model_check *c);

/* ---- pass 1 (pass1.c) --------------------------------------------------------- */

/* MTOOL's figure 2 — predicted user time from block counts (laid out as
 * mt_program_costs), measured times, probes' cost, overhead. */
typedef struct {
    double user, sys;
    double tsc_per_cycle; /* measured around the run; 0 if unknown */
} mt_run_times;
typedef struct {
    bool predicted;             /* false: no prediction, `error` says why */
    char error[512];
    char machine_error[512];    /* why no machine profile could be loaded ("" otherwise) */
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

typedef struct {
    const char *rundir;     /* where the run is kept: made when missing */
    const char *profiles;   /* merge these instead of running (NULL: run) */
    char **argv;            /* BIN ARGS..., NULL-terminated */
    bool no_baseline;
    int baseline_runs;      /* >= 1: the least user time is kept */
    FILE *log;              /* progress and warnings (NULL: none) */
    const char *libs;       /* shared libraries counted too: "all", "none" or NAME,...
                               (docs/ARCHITECTURE.md, "Shared libraries"); NULL: the
                               default, "all" for a run, "none" for --profiles or a job */
} mt_pass1_options;

/* Pass 1's measured counts per block of the program, and their sums. */
typedef struct {
    uint64_t *block_counts; /* per procedure: offset into one array */
    bool *derived;          /* parallel: the count follows from others' (no probe ran) */
    uint64_t *proc_first;   /* first block count index of each procedure */
    uint64_t blocks, insns, reads, writes;
    uint64_t probes;        /* executions of probes: blocks, less the derived ones */
    uint64_t executed_blocks, counted_blocks;
    uint32_t *fallbacks;    /* counters of jump-table reads that went on in the original code */
    size_t nfallbacks, cap_fallbacks;
} mt_pass1_totals;

/* A shared library of the program (libs.c): counted with it, or left
 * original with the reason. */
typedef struct mt_pass1_library_s {
    char *name;             /* as the program needs it (DT_NEEDED): liblzma.so.5 */
    char *path;             /* the file the loader finds */
    char *note;             /* NULL: counted; else why it stays original (one line) */
    bool asked;             /* named by --libs (others are loaded from where the loader
                               finds them for the original, not from beside the copy) */
    bool dlopened;          /* opened by dlopen in this run or an earlier one, not
                               listed by the loader for BIN */
    const char *starts;     /* a thread or process creation it calls itself that
                               the runtime does not wrap ("clone", "clone3"), or
                               NULL: what that starts counts
                               into its creator's counters, so concurrent threads
                               may lose increments */
    uint8_t sha256[32];     /* its content (counted ones only): the set's identity, its
                               saved analysis's name */
    mt_program *prog;
    mt_instrumented ins;
    mt_counter_map map;     /* its counters: [counter_base, map.ncounters) of the slot;
                               its call-site records [call_site_base, map.ncall_sites) */
    uint32_t counter_base, call_site_base;
    uint32_t code_base;     /* tracing: its code object k is the trace's code_base + k
                               (0: not traced; the executable's ids come first) */
    mt_pass1_totals totals;
    uint64_t *counts;       /* pass 2: pass 1's counts of its blocks (mt_block_offsets) */
} mt_pass1_library;

/* A call through a PLT into a counted library, from the executable or
 * from another counted library: the calling object, its stub, and the
 * procedure of library `lib` the stub's import resolves to
 * (mt_pass2_libraries_join); known work when that procedure's figure per
 * call is (pass 2 marks it then: known_import, known_export).  Calls
 * through pointers that pass 1 saw reach a counted library's procedure
 * (the caller's cross callee, mt_call_site.cross_callee) are joined the
 * same way, `cross_callee` in place of the stub. */
#define MT_FROM_EXECUTABLE SIZE_MAX
typedef struct {
    size_t from;            /* the caller: index in mt_pass1_libraries.libs, or
                               MT_FROM_EXECUTABLE */
    uint32_t stub;          /* in the caller's analysis (MT_NONE: a cross callee) */
    size_t lib;             /* index in mt_pass1_libraries.libs */
    uint32_t proc;          /* in that library's analysis */
    uint32_t cross_callee;  /* 1 + index in the caller's cross_callees; 0: the stub */
} mt_known_import;

typedef struct mt_pass1_libraries_s {
    mt_pass1_library *libs; /* in the order the loader lists them, then the ones
                               opened by dlopen */
    size_t nlibs;
    uint32_t ncounters;     /* set aside for every library copy: the executable's
                               counter_base */
    uint32_t ncall_sites;   /* call-site records set aside for them, each library's as
                               many as its analysis has calls through pointers: the
                               executable's call_site_base */
    uint64_t set;           /* their libs_set (0: none counted) */
    const char *spec;       /* what was asked: "all", "none" or NAME,... */
    bool by_default;        /* spec is the default, not --libs */
    char **env;             /* LD_AUDIT=..., MTOOL_LIBS=..., MTOOL_ORIGIN=...,
                               MTOOL_LIBS_SEEN=..., NULL-terminated */
    char *owned_spec;       /* pass 2: spec, made from what pass 1 counted */
    mt_known_import *imports; /* pass 2: every object's known imports */
    size_t nimports;
} mt_pass1_libraries;

/* The shared libraries BIN needs (transitively, as its loader finds them)
 * and the ones earlier counts saw it open with dlopen, that `spec` names
 * ("all", "none", NAME,...), each analyzed and given its ranges of
 * counters and call-site records (as long as any copy of it can use:
 * mt_rewrite_bounds), glibc's included (the loader is not); `by_default`:
 * no --libs named them.  -1 with err only when the list cannot be had;
 * a library that cannot be analyzed gets a note.  No copy is made yet. */
int mt_pass1_libraries_prepare(const char *bin, const char *spec, bool by_default,
                               mt_pass1_libraries *out, FILE *log, mt_error *err);
/* Once the executable's counting copy is made (its counters, the slot's,
 * known: slot_counters), each library's counting copy, made once in the
 * ranges prepare laid out, recording its calls through pointers in its
 * range of the slot's call-site records (docs/ARCHITECTURE.md, "Shared
 * libraries"); a library whose copy cannot be made gets a note. */
void mt_pass1_libraries_copy(mt_pass1_libraries *l, uint32_t slot_counters);
/* The environment that loads the copies for one run of `copy` (BIN's
 * counting copy), the objects dlopen maps that are no copy written to the
 * file `seen`. */
int mt_pass1_libraries_env(mt_pass1_libraries *l, const char *bin, const char *copy,
                           const char *seen, mt_error *err);
/* After the run: the libraries in `seen` (a missing file: none) that were
 * not counted join the list, said not counted (asked ones), and are
 * remembered for BIN's next count. */
int mt_pass1_libraries_seen(mt_pass1_libraries *l, const char *bin, const char *seen,
                            mt_error *err);
/* Each counted library's counts from the merged counts of the set. */
void mt_pass1_libraries_accumulate(mt_pass1_libraries *l, uint64_t *counts);
void mt_pass1_libraries_free(mt_pass1_libraries *l);
/* Pass 2: the libraries RUNDIR's pass 1 counted (its libs/NAME.counts.tsv;
 * none: out->set 0), analyzed, each refined with its counts (lib->counts). */
int mt_pass2_libraries_prepare(const char *rundir, const char *bin, mt_pass1_libraries *out,
                               mt_error *err);
/* The calls through the PLT of the executable and of each counted library
 * into counted libraries, joined to their analyses (docs/ARCHITECTURE.md,
 * "Pass 2 through the libraries"): each stub's import (its GOT slot's
 * relocation names it) is looked up where the loader looks (a library's
 * in the executable first), then in the .dynsym of the libraries in the
 * loader's order, the first that defines it as a function; when that is
 * another library that was counted and a procedure starts at the symbol's
 * address, l->imports lists it.  A stub the loader binds to its own
 * object (an object opened by dlopen: in its own scope, after the global
 * one) becomes a call to that procedure (mt_bind_stubs); rebound[i] (i <
 * l->nlibs, and l->nlibs for the executable) says that object's calls
 * changed, so that its estimability is decided again. */
void mt_pass2_libraries_join(mt_pass1_libraries *l, mt_program *exe, bool *rebound);
/* Their timed copies, in place of the counting ones (lib->ins): library i
 * (counted ones) times timed[i][0 .. ntimed[i]), its records after the
 * previous ones', after slot_counters counters, in the set `set`. */
int mt_pass2_libraries_time(mt_pass1_libraries *l, const mt_timed_object *const *timed,
                            const uint32_t *ntimed, uint64_t set, uint32_t slot_counters,
                            mt_error *err);

/* Tracing through them (`mtool sim`): each counted library's code objects
 * numbered from first_code on (lib->code_base: after the executable's, the
 * libraries' before it); the first code object after theirs. */
uint32_t mt_trace_libraries_number(mt_pass1_libraries *l, uint32_t first_code);
/* Once the executable's tracing copy is made (the slot's counters and
 * call-site records known), each numbered library's tracing copy in place
 * of its counting one: of the blocks of traced[i][0 .. ntraced[i]) only,
 * none when ntraced[i] is 0, or every block (traced NULL).  A library
 * traced in no block, or whose tracing copy cannot be made (said on `log`),
 * gets its counting copy, untraced: its code_base becomes 0. */
void mt_trace_libraries_copy(mt_pass1_libraries *l, const mt_timed_object *const *traced,
                             const uint32_t *ntraced, uint32_t slot_counters,
                             uint32_t slot_call_sites, FILE *log);
/* The library whose code objects hold the trace's code object `code`, its
 * own id in *own; NULL: none does (the executable's, or none). */
const mt_pass1_library *mt_trace_library_of(const mt_pass1_libraries *l, uint32_t code,
                                            uint32_t *own);

/* ---- MPI jobs (mpi.c; docs/REPORT.md, "MPI jobs") ------------------------------ */

/* One rank of a job: its profiles (PROFILES/rank-N), merged and summed. */
typedef struct {
    int rank;
    char *host;             /* as the rank recorded it (NULL: none) */
    char *dir;
    profile_merge merge;
    mt_pass1_totals totals;
    mt_pass1_totals *lib_totals; /* per library of the count's (mt_mpi_accumulate) */
    size_t nlib_totals;
} mt_mpi_rank;
typedef struct mt_mpi_job {
    char **argv;            /* the launcher's command line (the caller's) */
    char *launcher;         /* its executable, searched in $PATH */
    int program_index;      /* argv[program_index] names the program */
    char *program;          /* the program's executable */
    char **program_argv;    /* PROGRAM ARGS..., NULL-terminated */
    mt_mpi_rank *ranks;     /* by rank, after mt_mpi_collect */
    uint32_t nranks;
    char **wrapped, *self;  /* mt_mpi_wrapped_argv's */
    char nenv[16];          /* mt_mpi_wrapped_argv's count of environment words */
} mt_mpi_job;
extern const char mt_mpi_rank_command[];  /* the per-rank wrapper's hidden command */
/* Whether cmd's base name is a launcher mtool wraps (mpirun, mpiexec, orterun, srun). */
bool mt_mpi_is_launcher(const char *cmd);
/* The launcher and the program among its arguments (the first argument, not
 * an option, naming an executable ELF file): -1 with err when either is
 * not found. */
int mt_mpi_job_open(char **argv, mt_mpi_job *job, mt_error *err);
/* The launcher's command line with the program run through the per-rank
 * wrapper: `mtool _rank PROFILES INSTRUMENTED N NAME=VALUE... PROGRAM ARGS...`
 * (owned by job; NULL with err when mtool cannot name its own executable),
 * the N words env's (NULL: none): the environment that loads the
 * libraries' copies (mt_pass1_libraries_env), given to the ranks alone,
 * not to the launcher, and through any launcher as arguments. */
char **mt_mpi_wrapped_argv(mt_mpi_job *job, const char *instrumented, const char *profiles,
                           char *const *env, mt_error *err);
/* Removes an earlier job's rank directories (their profiles, host, the directory). */
int mt_mpi_clear(const char *profiles, mt_error *err);
/* The wrapper, in each rank, given the words after `_rank` (argc >= 4):
 * MTOOL_OUT=PROFILES/rank-N (N from the launcher's environment) and the N
 * NAME=VALUE words set, the host name in its `host` file, then execs
 * INSTRUMENTED with PROGRAM ARGS...; returns (-1 with err) only when the
 * words are wrong or that fails. */
int mt_mpi_rank_exec(int argc, char **argv, mt_error *err);
/* After the job: every rank's profiles merged apart (job->ranks, replacing
 * an earlier collect's), and linked into PROFILES as rank-N.NAME.mtp for
 * the job's merge. */
int mt_mpi_collect(mt_mpi_job *job, const char *profiles, const mt_counter_map *map, FILE *log,
                   mt_error *err);
/* The collect step of a job whose ranks ran on several hosts without a
 * shared RUN (docs/REPORT.md, "MPI jobs"): after each launch, before the
 * merge, $MTOOL_MPI_COLLECT (when set) run by /bin/sh with
 * MTOOL_PROFILES=PROFILES, to bring the other hosts' rank-N directories
 * there; -1 with err when it fails. */
int mt_mpi_collect_step(const char *profiles, mt_error *err);
/* Each collected rank's totals of the executable (prog, map) and of each
 * counted library of libs (their counts derived in the rank's merge). */
void mt_mpi_accumulate(mt_mpi_job *job, const mt_program *prog, const mt_counter_map *map,
                       const mt_pass1_libraries *libs);
/* Frees job->ranks (nranks 0). */
void mt_mpi_ranks_free(mt_mpi_job *job);
void mt_mpi_job_free(mt_mpi_job *job);

typedef struct {
    char *rundir;           /* absolute */
    char *profiles;         /* absolute */
    mt_program *prog;
    mt_instrumented ins;
    mt_counter_map map;
    profile_merge merge;
    mt_pass1_totals totals;
    bool ran, baseline;     /* the instrumented run, the uninstrumented ones */
    mt_run_result base, run;
    mt_figure2 fig;
    char **argv;            /* the program's: the options', or the program's part of a
                               launcher's command line */
    mt_pass1_libraries libs;/* shared libraries counted with the program (--libs) */
    mt_mpi_job *job;        /* an MPI job run through its launcher (NULL: none) */
} mt_pass1_result;

/* Analyzes BIN, instruments it (cached), runs it uninstrumented
 * baseline_runs times and then the counting copy (or merges `profiles`),
 * merges every process's counts, sums them and computes figure 2.  -1 with
 * err (and *r to be freed) when any step fails. */
int mt_run_pass1(const mt_pass1_options *o, mt_pass1_result *r, mt_error *err);
/* Keeps pass 1 in its run directory: format, counts.tsv, call_targets.tsv,
 * argv, pass1.txt — pass1.txt last, so that a run directory with it is
 * complete. */
int mt_run_pass1_keep(const mt_pass1_result *r, mt_error *err);
void mt_pass1_result_free(mt_pass1_result *r);

/* ---- tracing (trace.c) ------------------------------------------------------- */

typedef struct {
    char **argv;            /* BIN ARGS..., NULL-terminated (NULL with rundir) */
    const char *rundir;     /* or: the program and arguments of this run directory's pass 1,
                               tracing only the m-objects its pass 2 timed (pass2.tsv) */
    bool all;               /* with rundir: trace every procedure all the same */
    const char *libs;       /* the shared libraries traced too: "all", "none", NAME,...;
                               NULL: as `mtool count` (all it loads) */
    mt_sim *sim;            /* where the references go */
    FILE *log;              /* warnings (NULL: none) */
} mt_trace_options;

typedef struct {
    mt_pass1 pass1;         /* with rundir: the run traced, ... */
    mt_pass2_record pass2;  /* ... the objects pass 2 timed, */
    mt_machine machine;     /* ... the machine profile (its latencies), */
    mt_stall_latencies latencies; /* ... mapped onto the simulated levels, */
    mt_stall_streams *streams;    /* ... and the streams' regularity per code object */
    mt_program *prog;
    mt_instrumented ins;    /* the tracing copy and the rewriter's report */
    mt_run_result run;      /* the traced run: times and exit status */
    mt_trace_feed_counts counts; /* records read, references simulated */
    uint64_t frames;        /* frames received while the program ran, */
    uint64_t ring_frames;   /* ... of them through the threads' trace rings */
    uint64_t leftover;      /* records read from the profiles after it ended */
    mt_data_map *data;      /* the data objects the references were given (dataobj/) */
    mt_pass1_libraries libs;/* the shared libraries traced with it (their tracing copies;
                               the trace's code objects past the executable's are theirs:
                               mt_trace_library_of) */
} mt_trace_result;

/* Analyzes BIN (with rundir: pass 1's binary, refused when it changed
 * since, and reads pass 2's objects), makes its tracing copy (cached; with
 * rundir and not all, of pass 2's objects' blocks only), runs it with a
 * SOCK_SEQPACKET socket whose frames of records (timer/timer.h) a thread
 * of this process feeds to o->sim as they come (on the other core), then
 * the records the threads left in their profile slots.  -1 with err (and
 * *r to be freed) when a step fails; the program's own failure is not one
 * (r->run.status). */
int mt_run_trace(const mt_trace_options *o, mt_trace_result *r, mt_error *err);
void mt_trace_result_free(mt_trace_result *r);
/* After a traced run of a run directory and mt_sim_finish: the stall
 * estimate of each of pass 2's objects (per_object[i] for
 * r->pass2.objects[i]), of the code no object holds (*outside), and how
 * they agree with pass 2's overheads. */
void mt_trace_stalls(const mt_trace_result *r, mt_sim *s, mt_stall *per_object,
                     mt_stall *outside, mt_stall_agreement *agreement);

/* ---- pass 2 (pass2.c) --------------------------------------------------------- */

typedef struct {
    const char *rundir;     /* absolute: a pass-1 run directory */
    double coverage;        /* mt_select_options' */
    bool inner_first;
    int max_regions;
    int runs;               /* of the timed copy, >= 1 */
    double timer_bias;      /* TSC ticks; NAN: the least the timed runs measured */
    FILE *log;              /* progress and warnings (NULL: none) */
} mt_pass2_options;

/* One rank of an MPI job's pass 2 (pass2_ranks.c). */
typedef struct {
    int rank;
    char *host;                /* as the rank's first timed run recorded it (NULL: none) */
    mt_candidate *cands;       /* the job's timed objects, predicted with this rank's counts */
    mt_mobject_figures *objects; /* the same order: objects[i].cand == &cands[i] */
} mt_pass2_rank;

typedef struct {
    mt_pass1 pass1;            /* what pass 2 built on */
    mt_program *prog;          /* refined with pass 1 (mt_refine_with_pass1) */
    mt_machine machine;        /* the profile predicted with: its self-check */
    mt_program_costs costs;
    mt_selection sel;          /* of the executable and the libraries, their candidates
                                  named by their object (mt_candidate.object) */
    mt_pass1_libraries libs;   /* the shared libraries pass 1 counted, timed with it
                                  (their analyses are the candidates' programs) */
    mt_mobject_figures *rows;  /* measured objects, as correlate ranks them */
    size_t nrows;
    mt_run_result run;         /* the least loaded run */
    double program_predicted, program_measured; /* core cycles */
    const char *measured_from;
    double tsc_per_cycle, tsc_hz, timer_bias; /* tsc_per_cycle: the program's figures'
                                  clock (pass2.c, program_clock) */
    bool clock_in_program;     /* that clock the program's threads measured as they ran,
                                  not the one measured around its least loaded run */
    double clock_lo, clock_hi; /* the least and the most measured around the runs */
    bool bias_given;           /* the options' timer bias, not the runs' own calibration */
    double objects_overhead;   /* sum over outermost rows */
    double objects_outside;    /* their time in uninstrumented code (libraries, kernel) */
    uint64_t memops_in_objects;/* sum over outermost rows */
    int runs;
    double off_cpu;            /* least share of wall time a run spent descheduled */
    bool inner_first;
    char **launcher_argv;      /* an MPI job's launcher command line (NULL: no job) */
    char *launcher_buf;
    mt_pass2_rank *ranks;      /* an MPI job's ranks, by rank (nranks 0: no job) */
    uint32_t nranks;
} mt_pass2_result;

/* Reads the pass-1 run (refused when the binary changed since), analyzes
 * the binary and refines the analysis with pass 1's counts and calls,
 * predicts, selects the m-objects, instruments them (cached), runs the
 * timed copy `runs` times, and correlates the best of them against the
 * prediction.  -1 with err (and *r to be freed) when any step fails. */
int mt_run_pass2(const mt_pass2_options *o, mt_pass2_result *r, mt_error *err);
void mt_pass2_result_free(mt_pass2_result *r);
/* An MPI job's pass 2 per rank as mpi/pass2.tsv holds it (nranks 0: no
 * job): the executable's timed objects, in r's order. */
void mt_job_pass2_of(const mt_pass2_result *r, mt_job_pass2 *out);

#endif
