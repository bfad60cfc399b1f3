/* report/report.h — what a run directory shows once pass 2 has run:
 * the self-contained HTML report (`mtool report RUNDIR`) and the Callgrind
 * export (`--callgrind FILE`), docs/REPORT.md "HTML report".
 *
 * Data flows into it only: the run directory through run/'s readers
 * (pass1.txt, counts.tsv, pass2.tsv, machine.txt, sim.json), the program through the analyzer,
 * the per-block predictions through the cost model and the machine
 * profile, the run history through store/'s readers (history.c).  Nothing
 * here prints; the caller owns the output file. */
#ifndef MTOOL_REPORT_H
#define MTOOL_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../run/run.h"
#include "../store/store.h"

/* One m-object pass 2 timed, with where its blocks are in the source. */
typedef struct {
    char *spec;               /* as report.json's time_spec; LIB:SPEC in a shared library */
    const char *library;      /* the shared library it is in (its name), NULL: the
                                 executable; the page shows no lines nor disassembly of it */
    const char *kind;         /* "procedure", "loop" or "region" */
    uint32_t proc;            /* in its program: the executable's or the library's */
    uint64_t address;         /* entry, loop header or the region's first block */
    uint64_t memops;          /* inclusive of callees (pass 1) */
    uint64_t memops_own;      /* of its own blocks */
    uint64_t memops_in_loops; /* of its own blocks inside loops */
    uint32_t nloops, ncalls;  /* loops among its blocks, call sites among them that ran */
    double predicted, measured, overhead; /* core cycles, as report.json's */
    double extra_per_memop;   /* overhead / memops (0 without memory operations) */
    bool outermost;
    uint64_t entries;         /* pass 1's: calls, a loop's entries from outside, a region's */
    uint32_t parent;          /* in the tree of measured time (data.c), MT_NONE: the program's */
    uint32_t file;            /* prog->files index of its entry block's line, 0: none */
    uint32_t first_line, last_line, hot_line; /* hot: its line with the most overhead */
} mt_report_object;

/* One source line of one procedure: its blocks' figures summed.  A block's
 * figures go to the line of its first instruction (the analyzer's lines). */
typedef struct {
    uint32_t proc, file, line; /* file 0 / line 0: no line information */
    uint64_t executions;      /* the most executions of a block starting on it */
    uint64_t memops;          /* executed memory operations */
    double predicted;         /* count x cycles, core cycles */
    double overhead;          /* memops x the extra cycles per memory op of the innermost
                                 timed object holding the block (0 outside every object) */
    uint32_t object;          /* that object's index, MT_NONE when none */
} mt_report_line;

/* One instruction of a procedure without source lines (the disassembly
 * view): its block's executions, its executed memory operations and their
 * overhead (as a line's: memops x the extra cycles per memory op of the
 * innermost timed object holding the block, which is `object`). */
typedef struct {
    uint32_t proc;
    mt_insn_text insn;
    uint64_t executions, memops;
    double overhead;
    uint32_t object;          /* MT_NONE when outside every timed object */
} mt_report_insn;

/* One run of an object in the history: a timed run's cycles, a counted
 * (or timed) run's memory operations, a simulated run's misses. */
typedef struct {
    int64_t run;
    double measured, predicted, overhead; /* core cycles (NAN: not stored) */
    double memops;            /* pass 1's memory operations (NAN: a simulated run) */
    double ll_misses;         /* the run's last-level misses (NAN: not simulated) */
    double mp[MT_STORE_NMP];  /* a run of cpus > 1: its processors' figures (NAN: else) */
    double page_walks, itlb_misses; /* a simulated TLB's (NAN: none) */
} mt_report_point;

/* The reported run in the history (history.c): run 0 and `why` when it is
 * not there or the history cannot be read. */
typedef struct {
    int64_t run, baseline;    /* baseline 0: the run is its program's first */
    char *why;
    mt_report_point **trend;  /* per object, oldest first, up to the run */
    size_t *ntrend;
    size_t nobjects;          /* of trend[] */
    mt_store_diff diff;       /* baseline (a) -> run (b) */
    mt_store_metric metric;
    mt_store_compared *compared; /* the pairs, most worsened first */
    size_t ncompared;
    bool *regressed;          /* per pair: mt_store_regressed at the CI gate's defaults */
    /* A simulated run of cpus > 1: its objects (code and data; those
     * with processors' figures shown), its --what-if remedies and
     * problems, its threads.  None for another run. */
    mt_store_object_row *mp_rows;
    size_t nmp_rows;
    mt_store_remedy *remedies;
    size_t nremedies;
    mt_store_problem *problems;
    size_t nproblems;
    mt_store_sim_thread *threads; /* its per-thread view */
    size_t nthreads;
} mt_report_history;

/* A run whose page is built from the history alone: its run directory is
 * gone, holds a later run, or was never recorded (count, sim, runs stored
 * before mtool recorded them). */
typedef struct {
    mt_store_run_row *run;
    mt_store_object_row *objects; /* shown: a timed run's timed objects, largest overhead
                                     first; else its code objects, most memory operations
                                     (a simulated run's: references) first, the first
                                     MT_REPORT_MAX_STORED; the run's others after them */
    size_t nobjects, nrows;
    char *missing;                /* why, and what the page lacks: one sentence */
} mt_report_stored;
#define MT_REPORT_MAX_STORED 100

typedef struct {
    mt_report_stored *stored;  /* not NULL: the page is built from the history alone,
                                  and none of the fields below but history is set */
    const mt_pass1 *pass1;
    const mt_program *prog;    /* refined with pass 1 */
    mt_pass1 own_pass1;        /* what mt_report_load read (a pass 2 result's are borrowed) */
    mt_program *own_prog;
    mt_pass2_record pass2;
    mt_pass1_libraries own_libs; /* the counted libraries mt_report_load read (a pass 2
                                    result's are borrowed), their objects' programs */
    mt_model_check check;
    mt_report_object *objects; /* pass 2's order: largest overhead first */
    size_t nobjects;
    mt_report_line *lines;     /* sorted by procedure, file, line */
    size_t nlines;
    uint64_t memops_total, memops_in_objects; /* counted; in the outermost objects */
    char *sim_json;            /* `mtool sim RUNDIR`'s sim.json, NULL when none */
    mt_job_pass2 job;          /* an MPI job's figures per rank (mpi/pass2.tsv; nranks 0: none) */
    char **job_launcher;       /* its launcher's command line (mpi/launcher), NULL: none */
    char *job_launcher_buf;
    mt_report_insn *insns;     /* the timed objects' procedures without source lines */
    size_t ninsns;
    mt_report_history history;
} mt_report;

/* Reads RUNDIR after a pass 2 (refused, one line naming the file, when a
 * file is missing, damaged, or of another binary); a machine profile is
 * loaded as pass 2 loads it (`log` says when one had to be calibrated). */
int mt_report_load(const char *rundir, FILE *log, mt_report *r, mt_error *err);
/* The same report for the pass 2 just made in RUNDIR (`mtool time`, `run`):
 * its program, already analyzed and refined, its pass 1 and its machine
 * profile are borrowed, not read and analyzed again; `p` must outlive *r. */
int mt_report_of_pass2(const char *rundir, const mt_pass2_result *p, mt_report *r, mt_error *err);
void mt_report_free(mt_report *r);
/* The history view's figures of RUNDIR's run from the history at `db` (a missing or
 * unreadable one, or one without this run: r->history says why, 0); the
 * diff against `baseline` (a RUN spec: an id, "last", "last~K"), NULL: the
 * previous run of the program.  -1 with err only when `baseline` is given
 * and cannot be compared. */
int mt_report_load_history(mt_report *r, const char *rundir, const char *db, const char *baseline,
                           mt_error *err);

/* The report of history run `spec` (an id, "last", "last~K") of the
 * history at `db`: read from its run directory when that still holds it
 * (the stamp the history recorded is its pass2.tsv's, mt_store_rundir_stamp),
 * else (also when that directory cannot be read: its binary rebuilt since)
 * built from the history alone (r->stored says what it lacks and why).
 * -1 with err, one line, when there is no history there or no such run. */
int mt_report_load_run(const char *spec, const char *db, const char *baseline, FILE *log,
                       mt_report *r, mt_error *err);

/* The HTML page: one file, inline CSS, script and SVG, no network request;
 * program-derived text is data to the page, never markup. */
void mt_report_write_html(FILE *fp, const mt_report *r);
/* ,"mpi": an MPI job's figures per rank (null when job has no ranks),
 * report.json's format (docs/REPORT.md): its `launcher` (NULL: written
 * null), ranks, and per object (the job's figures of one spec, together)
 * its imbalance of measured time, slowest rank and figures per rank;
 * names[k] the k-th object's name (NULL: its spec). */
void mt_report_write_job(FILE *fp, char **launcher, const mt_job_pass2 *job,
                         const char *const *names);
/* "launcher":ARGV[0],"launcher_arguments":[ARGV[1]...] (count.json's and
 * report.json's "mpi"). */
void mt_report_json_launcher(FILE *fp, char **argv);
/* The Callgrind profile format (valgrind's docs, "Callgrind Format
 * Specification"): events predicted, measured, overhead and memops per
 * source line, fl=/fn= per procedure. */
void mt_report_write_callgrind(FILE *fp, const mt_report *r);

#endif
