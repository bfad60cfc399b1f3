/* store/store.h — the run history: every run's per-object figures in an
 * SQLite database (schema and identity rules: docs/HISTORY.md).
 *
 * A build (one binary, by content hash) has sites: every procedure and loop
 * it contains, with where it is (name, loop nesting path, source line,
 * address).  Each site belongs to an object, the stable identity of a
 * procedure or loop across rebuilds: when a build is stored for the first
 * time its sites are matched to the previous build of the same program name
 * (store/match.c), so `trend` follows a loop whose lines moved.  A run holds
 * figures per executed site: counts now, measured/predicted cycles and
 * overhead when later passes supply them (NULL until then); a simulated
 * run (`mtool sim`) holds its references and misses per cache level by
 * cause instead, with its machine's levels (store/simulated.c).
 *
 * Integrity: WAL journal, one IMMEDIATE transaction per run, a busy timeout
 * so concurrent writers queue instead of failing; a file that is not an
 * mtool history (foreign, damaged, newer schema) is refused, never
 * rewritten. */
#ifndef MTOOL_STORE_H
#define MTOOL_STORE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../analyzer/analyzer.h"
#include "../common/util.h"

#define MT_STORE_SCHEMA_VERSION 10

/* A count a figures row does not have (NULL in the table): the entries of a
 * loop stored before version 4 by `count`, the iterations of anything but a
 * loop. */
#define MT_STORE_NO_COUNT UINT64_MAX

typedef struct mt_store mt_store;

/* $MTOOL_HISTORY, else $XDG_DATA_HOME/mtool/history.db, else
 * ~/.local/share/mtool/history.db.  Caller frees. */
char *mt_store_default_path(void);

/* MT_STORE_READ opens an existing history read-only (SQLITE_OPEN_READONLY);
 * MT_STORE_WRITE creates it (and its directory) or migrates it to the current
 * schema.  NULL with err ("FILE: reason") for a foreign, damaged or newer file. */
typedef enum { MT_STORE_READ, MT_STORE_WRITE } mt_store_mode;
mt_store *mt_store_open(const char *path, mt_store_mode mode, mt_error *err);
void mt_store_close(mt_store *s);
const char *mt_store_path(const mt_store *s);

/* ---- storing a run ------------------------------------------------------ */

/* Where a procedure, loop or region sits in one build. */
typedef struct {
    bool is_loop;
    bool is_region;         /* a region of the procedure (pass 2: a large loop-free
                               procedure timed in pieces) */
    char *procedure;        /* the procedure's name (a loop's enclosing procedure) */
    bool named;             /* false: the name is made up from the address (sub_ADDR) */
    char *loop_path;        /* "2.1": 1st loop nested in the 2nd outermost; "r2": the
                               procedure's 2nd region; NULL for a procedure */
    uint32_t depth;         /* 0 for a procedure or a region */
    char *file;             /* source of the entry/header block, NULL when unknown */
    uint32_t line;          /* its line, 0 when unknown */
    uint32_t proc_line;     /* the procedure's entry line: loops match by offset from it */
    uint64_t address;       /* entry, header or region's first block address */
    uint64_t shape;         /* fingerprint of the code's structure (unchanged by line moves) */
} mt_store_site;

typedef struct {
    char *path;             /* absolute path of the binary */
    char *library;          /* a shared library's name as programs need it (libbz2.so.1.0):
                               the build's program name, its sites' procedures named
                               LIBRARY:PROCEDURE; NULL: an executable, named by its file */
    char build_id[41];      /* NT_GNU_BUILD_ID, "" when absent */
    char sha256[65];        /* content hash, hex */
    mt_store_site *sites;   /* every procedure (PLT stubs excepted), each followed by its
                               loops, then by the regions a run added */
    size_t nsites;
    uint32_t *proc_site;    /* per procedure: index of its site, MT_NONE for PLT stubs */
} mt_store_build;

/* The sites of `prog` (sha256 from mt_file_sha256). */
void mt_store_build_from_program(const mt_program *prog, const char *abs_path,
                                 const uint8_t sha256[32], mt_store_build *out);
/* The sites of shared library `library` (its name as programs need it),
 * procedures named LIBRARY:PROCEDURE, as reports name them. */
void mt_store_build_from_library(const mt_program *prog, const char *library,
                                 const char *abs_path, const uint8_t sha256[32],
                                 mt_store_build *out);
/* Site index of loop `loop` of procedure `proc` (MT_NONE: the procedure itself). */
uint32_t mt_store_site_of(const mt_store_build *b, uint32_t proc, uint32_t loop);
/* Adds the site of region k of procedure `proc`, the blocks from `first` up
 * to `end` (analyzer: mt_region_blocks), after the procedure's loops and
 * regions, and returns its index (the same region again: the index it got).
 * Sites after it move up by one; MT_NONE for a PLT stub. */
uint32_t mt_store_build_add_region(mt_store_build *b, const mt_program *prog, uint32_t proc,
                                   uint32_t first, uint32_t end, uint32_t k);
void mt_store_build_free(mt_store_build *b);

/* Figures of one site in one run; NAN (MT_STORE_NO_COUNT for a count) for a
 * figure this run does not have.  entries: times control entered the object
 * from outside it (mt_loop_entries for a loop); iterations: a loop's header
 * executions. */
typedef struct {
    uint32_t site;
    uint64_t entries, iterations, instructions, memory_ops;
    double measured_cycles, predicted_cycles, overhead_cycles;
} mt_store_figures;

/* ---- simulated runs (`mtool sim`) ------------------------------------------ */

/* Cache levels have fixed slots in the history, by name, whatever the
 * machine: I1, D1, L2, L3, L4 (sim/sim.h's names); a run's last level (LL)
 * is one of them.  Misses are stored by cause, in this order. */
#define MT_STORE_SIM_LEVELS 5
#define MT_STORE_SIM_LL MT_STORE_SIM_LEVELS /* the run's last level, in a metric */
typedef enum { MT_STORE_COLD, MT_STORE_CAPACITY, MT_STORE_CONFLICT, MT_STORE_NCAUSES } mt_store_cause;
/* "I1", ... "L4" for slots 0-4; "LL" for MT_STORE_SIM_LL. */
const char *mt_store_sim_level_name(unsigned slot);
/* The slot of a level name (case-insensitive, "LL" included), -1 if none. */
int mt_store_sim_level_slot(const char *name);

/* A simulated run with cpus > 1 (sim.h, "processors", "nodes and home
 * memory"): per code and data object its coherence misses (true and false
 * sharing) and events (invalidations sent, interventions, upgrades: counted
 * against the reference that caused each) and its references served past
 * its node's caches, by class.  MT_STORE_NO_COUNT in a uniprocessor run's
 * rows.  Each is a metric of the same name (mt_store_mp_name). */
typedef enum {
    MT_STORE_TRUE_SHARING, MT_STORE_FALSE_SHARING, MT_STORE_INVALIDATIONS,
    MT_STORE_INTERVENTIONS, MT_STORE_UPGRADES, MT_STORE_LOCAL_REFS, MT_STORE_REMOTE_REFS,
    MT_STORE_REMOTE_DIRTY_REFS, MT_STORE_THREE_HOP_REFS, MT_STORE_NMP
} mt_store_mp_figure;
/* "true_sharing", ... "three_hop_refs": the column's and the metric's name. */
const char *mt_store_mp_name(unsigned k);
/* The figure of a name, -1 if none. */
int mt_store_mp_figure_of(const char *name);

/* A simulated run's TLB figures per object (schema 10; sim.h's "the data
 * TLB"): translations missed at the data TLB's first and second levels,
 * page walks (the last data TLB level's misses), fetches' translations the
 * instruction TLB missed; MT_STORE_NO_COUNT where the machine had no such
 * level (a data object's ITLB misses too) and in runs stored before.
 * walk_cycles: the page walks at the machine profile's calibrated walk
 * cost (what the stall estimate adds for them), NAN without a profile.
 * Each is a metric of its name (mt_store_tlb_name). */
typedef enum {
    MT_STORE_TLB1_MISSES, MT_STORE_TLB2_MISSES, MT_STORE_PAGE_WALKS, MT_STORE_ITLB_MISSES,
    MT_STORE_NTLB
} mt_store_tlb_figure;
#define MT_STORE_WALK_CYCLES MT_STORE_NTLB /* walk_cycles' metric slot, after the counts */
typedef struct {
    uint64_t misses[MT_STORE_NTLB];
    double walk_cycles;
} mt_store_sim_tlb;
/* "tlb1_misses", ... "itlb_misses", "walk_cycles" (k = MT_STORE_WALK_CYCLES):
 * the column's and the metric's name. */
const char *mt_store_tlb_name(unsigned k);
/* The figure of a name (MT_STORE_WALK_CYCLES included), -1 if none. */
int mt_store_tlb_figure_of(const char *name);

/* One TLB level of the simulated machine (TLB1, TLB2, ITLB), with the
 * run's totals there (schema 10). */
typedef struct {
    char name[8];
    uint32_t entries, ways;
    uint64_t page;               /* bytes a translation covers */
    uint64_t refs, misses;
} mt_store_sim_tlb_level;

/* One level of the simulated machine, with the run's totals there. */
typedef struct {
    unsigned slot;
    uint64_t size;
    uint32_t ways, line;
    char replacement[16], inclusion[16], prefetch[16]; /* sim/'s names */
    bool write_allocate;
    uint64_t refs, misses, cause[MT_STORE_NCAUSES], evictions, writebacks;
    uint64_t lines, bytes_used; /* lines whose use was recorded, bytes of them used */
} mt_store_sim_level;

/* One code object's simulated figures: its references, its misses per
 * level slot by cause, and the use of the lines its references brought in
 * there (MT_STORE_NO_COUNT where the machine has no such level). */
typedef struct {
    uint32_t site;
    uint64_t refs;
    uint64_t misses[MT_STORE_SIM_LEVELS][MT_STORE_NCAUSES];
    uint64_t lines[MT_STORE_SIM_LEVELS], bytes_used[MT_STORE_SIM_LEVELS];
    uint64_t mp[MT_STORE_NMP];
    mt_store_sim_tlb tlb;
} mt_store_sim_figures;

/* One data object's simulated figures (dataobj/): its references, misses
 * per level slot by cause, and the use of the lines it brought in there
 * (MT_STORE_NO_COUNT where the machine has no such level).  Identified by
 * name within a build; a rebuild's object of the same name is the same
 * object. */
typedef struct {
    const char *name;            /* dataobj's name ("records.key", "stack:main", ...) */
    const char *kind;            /* mt_data_kind_name's */
    uint64_t address, size;      /* link-time start and bytes; 0 when it has none */
    uint64_t refs;
    uint64_t misses[MT_STORE_SIM_LEVELS][MT_STORE_NCAUSES];
    uint64_t lines[MT_STORE_SIM_LEVELS], bytes_used[MT_STORE_SIM_LEVELS];
    uint64_t mp[MT_STORE_NMP];
    mt_store_sim_tlb tlb;
} mt_store_sim_data;

/* What a what-if remedy saves (`mtool sim --what-if`, sim.h's "what-if
 * remedies"): against the whole run, or a problem's by the remedy proposed
 * for it.  Negative: more. */
#define MT_STORE_NO_SAVING INT64_MIN /* a level slot the machine lacks */
typedef struct {
    int64_t misses[MT_STORE_SIM_LEVELS]; /* per level slot, every cause */
    int64_t conflict, coherence;         /* summed over the levels */
    int64_t sharing, remote;             /* true + false sharing misses; remote references */
    double cycles;                       /* stall cycles; NAN without latencies */
} mt_store_saving;
typedef struct {
    const char *kind;            /* mt_whatif_kind_name's */
    const char *text;            /* what it is, in words */
    mt_store_saving saved;       /* against the run */
} mt_store_remedy;
/* A top problem (a code x data cell) and the remedy proposed for it. */
typedef struct {
    const char *code, *data;     /* the cell's objects, named */
    uint64_t misses[MT_STORE_SIM_LEVELS]; /* per level slot, every cause; NO_COUNT: no level */
    uint64_t true_sharing, false_sharing, remote;
    double cycles;               /* NAN without latencies */
    int remedy;                  /* index in the run's remedies, -1: none saves it */
    mt_store_saving saved;       /* by that remedy, on the cell */
} mt_store_problem;

/* One thread of a simulated run of cpus > 1 (sim.h's per-thread view). */
typedef struct {
    uint32_t thread, cpu;        /* its number (sim.h's), the CPU it ran on */
    uint64_t refs;
    uint64_t misses[MT_STORE_SIM_LEVELS]; /* per level slot, every cause; NO_COUNT: no level */
    uint64_t mp[MT_STORE_NMP];   /* invalidations: those its writes sent */
    double stall_cycles;         /* of where its references were served; NAN: no latencies */
} mt_store_sim_thread;

typedef struct {
    const char *machine;         /* the description, summarised as flags */
    mt_store_sim_level *levels;  /* in the machine's order, the last level last */
    size_t nlevels;
    mt_store_sim_tlb_level *tlb_levels; /* the data TLB's levels, then the ITLB */
    size_t ntlb_levels;
    mt_store_sim_figures *figures;
    size_t nfigures;
    mt_store_sim_data *data;     /* data objects, when the trace gave them */
    size_t ndata;
    mt_store_remedy *remedies;   /* --what-if's, in the order it tried them */
    size_t nremedies;
    mt_store_problem *problems;  /* most problem misses first */
    size_t nproblems;
    mt_store_sim_thread *threads; /* cpus > 1: per thread, in sim.h's order */
    size_t nthreads;
} mt_store_sim;

/* The program's figures in a timed run (pass 2): core cycles, and the
 * memory operations inside the outermost timed objects. */
typedef struct {
    double predicted, measured, objects_overhead;
    uint64_t memory_ops_in_objects;
} mt_store_program_time;

/* What identifies the run a run directory holds: the SHA-256 (hex) of its
 * pass2.tsv, which every pass 2 there writes anew; -1 with err when the
 * file cannot be read (no pass 2 there, or the directory is gone). */
int mt_store_rundir_stamp(const char *rundir, char stamp[65], mt_error *err);

/* An MPI job's rank (schema 8): its host, and per timed object its
 * figures in that rank alone (site: as mt_store_figures'; iterations and
 * instructions not kept). */
typedef struct {
    int rank;
    const char *host;            /* NULL: not recorded */
} mt_store_rank;
typedef struct {
    int rank;
    mt_store_figures f;
} mt_store_rank_figures;
/* A shared library's figures in a run (pass 2 times its objects too; a
 * simulated run traced its code): its build (mt_store_build_from_library)
 * is stored as a program of its own, never the run's, and its sites'
 * figures are the run's. */
typedef struct {
    const mt_store_build *build;
    mt_store_figures *figures;   /* sites of build */
    size_t nfigures;
    const mt_store_sim_figures *sim_figures; /* a simulated run's, sites of build */
    size_t nsim_figures;
    const mt_store_rank_figures *rank_figures; /* an MPI job's per rank, sites of build */
    size_t nrank_figures;
} mt_store_library_figures;

typedef struct {
    const char *tool;            /* "count", "time", "run", "sim" */
    double finished;             /* when the result was stored: Unix time, seconds */
    int argc;                    /* the whole mtool command line */
    char **argv;
    int nargs;                   /* the program's own arguments (after BIN) */
    char **args;
    const char *cwd;
    const char *machine;         /* machine profile */
    const char *version;         /* mtool version */
    bool ran;                    /* false: profiles merged, no process ran */
    int exit_status;             /* 0-255, 128+signal */
    double user_s, sys_s, wall_s;/* the measured run; NAN when absent */
    double base_user_s, base_sys_s, base_wall_s; /* uninstrumented run; NAN when absent */
    mt_store_figures *figures;
    size_t nfigures;
    const mt_store_sim *sim;     /* a simulated run's figures (then nfigures is 0), or NULL */
    const char *rundir;          /* its run directory, absolute; NULL: none */
    const char *rundir_stamp;    /* mt_store_rundir_stamp's of it when stored; NULL: none */
    const mt_store_program_time *timed; /* a timed run's program figures; NULL: none */
    const mt_store_rank *ranks;  /* an MPI job's ranks (nranks 0: no job) */
    size_t nranks;
    const mt_store_rank_figures *rank_figures;
    size_t nrank_figures;
    const mt_store_library_figures *libs; /* a timed run's objects in shared libraries */
    size_t nlibs;
} mt_store_run;

/* Stores the build (first time only: sites and their identities) and the run
 * in one transaction.  Returns the run's id, or -1 with err. */
int64_t mt_store_add_run(mt_store *s, const mt_store_build *b, const mt_store_run *r,
                         mt_error *err);

/* ---- matching objects across builds (match.c) ---------------------------- */

typedef enum {
    MT_MATCH_SAME,       /* same name, same nesting path, same line */
    MT_MATCH_MOVED,      /* same name and shape or path; its lines moved */
    MT_MATCH_RENAMED,    /* procedure renamed: same file, same shape, nearest line */
    MT_MATCH_ADDRESS,    /* no name or line to go by: same address and shape */
} mt_match_kind;

/* For every site of `b`, the index of its counterpart in `a` (MT_NONE when
 * new) and how it was found.  `how` may be NULL. */
void mt_store_match(const mt_store_site *a, size_t na, const mt_store_site *b, size_t nb,
                    uint32_t *b_to_a, uint8_t *how);
/* The same build stored again: every site of `b` to the site of `a` with the
 * same address and loop path (the key the database keeps unique), MT_NONE
 * when `a` has none.  Name-based matching could pair two same-named
 * procedures crosswise and leave their loops to be stored twice. */
void mt_store_match_exact(const mt_store_site *a, size_t na, const mt_store_site *b, size_t nb,
                          uint32_t *b_to_a);
const char *mt_match_kind_name(mt_match_kind k);

/* ---- queries ------------------------------------------------------------- */

typedef struct {
    int64_t id;
    double finished;
    char *tool, *program, *path, *sha256, *build_id, *command_line, *arguments, *cwd,
        *machine, *version;
    bool ran;
    int exit_status;
    double user_s, sys_s, wall_s, base_user_s, base_sys_s, base_wall_s; /* NAN when absent */
    uint64_t memory_ops, instructions; /* sums over executed procedures */
    uint32_t nobjects;
    char *sim_machine;          /* a simulated run's machine, summarised; else NULL */
    char *rundir, *rundir_stamp; /* NULL: none recorded (mt_store_run's) */
    bool timed;                 /* the program's figures below were stored */
    mt_store_program_time program_time; /* a timed run's (mt_store_run's) */
} mt_store_run_row;

/* A simulated run's figures of one object: present only in a row of a
 * simulated run; misses MT_STORE_NO_COUNT in the slots of levels its
 * machine lacks, line use (lines brought in, bytes of them used) too and
 * in the rows of runs stored before code objects had it. */
typedef struct {
    bool present;
    unsigned last;               /* the slot of the run's last level */
    uint32_t line[MT_STORE_SIM_LEVELS]; /* each slot's line size, 0 without the level */
    uint64_t refs;
    uint64_t misses[MT_STORE_SIM_LEVELS][MT_STORE_NCAUSES];
    uint64_t lines[MT_STORE_SIM_LEVELS], bytes_used[MT_STORE_SIM_LEVELS];
    uint64_t mp[MT_STORE_NMP];   /* MT_STORE_NO_COUNT: one CPU, or stored before */
    mt_store_sim_tlb tlb;
} mt_store_sim_row;

/* One object's figures in one run, with where it was.  A data object of a
 * simulated run has data_kind (mt_data_kind_name's), its name in
 * `procedure`, its address when it has one, no loop path, file or line. */
typedef struct {
    int64_t run, object;
    char *procedure, *loop_path, *file;
    char *data_kind;            /* NULL: a procedure, loop or region */
    bool is_loop, is_region, named;
    uint32_t line, proc_line, depth;
    uint64_t address, shape;
    uint64_t entries, iterations, instructions, memory_ops; /* MT_STORE_NO_COUNT: NULL */
    double measured_cycles, predicted_cycles, overhead_cycles;
    mt_store_sim_row sim;       /* a simulated run's (its counts are then NULL) */
} mt_store_object_row;

typedef struct {
    const char *program;  /* name (basename) or path; NULL: every program */
    double since, until;  /* Unix times; 0: no bound */
    size_t limit;         /* the most recent ones; 0: all */
} mt_store_filter;

int mt_store_list(mt_store *s, const mt_store_filter *f, mt_store_run_row **rows, size_t *n,
                  mt_error *err);
/* RUN is an id, "last" or "last~K" (the K-th run before the last), counted
 * among the runs of `program` when it is not NULL. */
int mt_store_resolve_run(mt_store *s, const char *spec, const char *program, int64_t *id,
                         mt_error *err);
/* Whether `spec` is written as a RUN is: digits, "last" or "last~K". */
bool mt_store_is_run_spec(const char *spec);
/* The newest run stored with rundir_stamp `stamp` (mt_store_rundir_stamp's), 0 when none. */
int mt_store_run_of_stamp(mt_store *s, const char *stamp, int64_t *run, mt_error *err);
/* One run (an array of one, freed with mt_store_run_rows_free(row, 1)). */
int mt_store_get_run(mt_store *s, int64_t id, mt_store_run_row **row, mt_error *err);
/* The levels of a simulated run's machine, in its order (none for another run). */
int mt_store_sim_levels(mt_store *s, int64_t run, mt_store_sim_level **levels, size_t *n,
                        mt_error *err);
/* The TLB levels of a simulated run's machine (none for another run, a
 * machine without TLB, or a run stored before schema 10), malloc'd. */
int mt_store_sim_tlb_levels(mt_store *s, int64_t run, mt_store_sim_tlb_level **levels, size_t *n,
                            mt_error *err);
/* A simulated run's data objects, most last-level misses first (names and
 * kinds allocated: mt_store_sim_data_free). */
int mt_store_sim_data_of_run(mt_store *s, int64_t run, mt_store_sim_data **data, size_t *n,
                             mt_error *err);
void mt_store_sim_data_free(mt_store_sim_data *data, size_t n);
/* A simulated run's what-if remedies and problems (none without
 * --what-if): mt_store_whatif_free. */
int mt_store_sim_whatif(mt_store *s, int64_t run, mt_store_remedy **remedies, size_t *nremedies,
                        mt_store_problem **problems, size_t *nproblems, mt_error *err);
void mt_store_whatif_free(mt_store_remedy *remedies, size_t nremedies,
                          mt_store_problem *problems, size_t nproblems);
/* A simulated run's threads (none with one CPU, or stored before schema 8),
 * in sim.h's order (malloc'd). */
int mt_store_sim_threads(mt_store *s, int64_t run, mt_store_sim_thread **threads, size_t *n,
                         mt_error *err);
/* Every object of a run, most memory operations (a simulated run's:
 * references) first; a simulated run's data objects among them
 * (data_kind set). */
/* An MPI job's figures per rank (schema 8): one row per object and rank,
 * objects in the order of their largest overhead in the job's figures,
 * ranks ascending; *n 0 for a run that was no job. */
typedef struct {
    int64_t object;
    int rank;
    char *host, *procedure, *loop_path; /* host NULL: not recorded */
    uint64_t entries, memory_ops;       /* MT_STORE_NO_COUNT: NULL */
    double measured_cycles, predicted_cycles, overhead_cycles;
} mt_store_rank_row;
int mt_store_run_ranks(mt_store *s, int64_t run, mt_store_rank_row **rows, size_t *n,
                       mt_error *err);
void mt_store_rank_rows_free(mt_store_rank_row *rows, size_t n);
int mt_store_run_objects(mt_store *s, int64_t run, mt_store_object_row **rows, size_t *n,
                         mt_error *err);
/* OBJECT: a data object's name (whole, or a heap site's without its
 * " <- " call path), "PROC", "PROC/LOOPPATH", "FILE:LINE" (loop or
 * procedure whose header is there in the latest build holding such a site)
 * or "#ID". */
int mt_store_resolve_object(mt_store *s, const char *spec, const char *program, int64_t *id,
                            mt_error *err);
/* The object's figures in every run holding it, oldest first (last `limit` when > 0). */
int mt_store_trend(mt_store *s, int64_t object, size_t limit, mt_store_object_row **rows,
                   size_t *n, mt_error *err);
/* The last run of the same program before `run`, or 0 when there is none. */
int mt_store_previous_run(mt_store *s, int64_t run, int64_t *prev, mt_error *err);

/* Two runs' objects paired: by stable identity first, then by the same
 * tolerant matching as across builds (for runs of different program names,
 * or objects the chain lost); data objects by identity, then by the same
 * name and kind.  a and b are in build order, data objects last. */
typedef struct {
    mt_store_object_row *a, *b;
    size_t na, nb;
    uint32_t *b_to_a;       /* per row of b: its row in a, MT_NONE when new */
    uint8_t *how;           /* per row of b: mt_match_kind */
    bool *a_paired;         /* per row of a: false when gone */
} mt_store_diff;
int mt_store_diff_runs(mt_store *s, int64_t run_a, int64_t run_b, mt_store_diff *d, mt_error *err);
void mt_store_diff_free(mt_store_diff *d);

/* ---- comparing two runs (compare.c) ----------------------------------------
 * The one rule `history diff` and `history regressions` apply and the HTML
 * report's diff view marks with (docs/HISTORY.md). */

/* What is compared: a figure, or a simulated level's misses (of one cause,
 * or all: cause -1; slot MT_STORE_SIM_LL: each run's last level), lines
 * brought in or spatial use.  AUTO: mt_store_choose_metric's choice. */
typedef enum {
    MT_METRIC_AUTO, MT_METRIC_MEMOPS, MT_METRIC_INSNS, MT_METRIC_ENTRIES, MT_METRIC_MEASURED,
    MT_METRIC_PREDICTED, MT_METRIC_OVERHEAD, MT_METRIC_SIM_REFS, MT_METRIC_SIM_MISSES,
    MT_METRIC_SIM_LINES, MT_METRIC_SIM_SPATIAL_USE, MT_METRIC_SIM_MP, MT_METRIC_SIM_TLB
} mt_store_metric_kind;
typedef struct {
    mt_store_metric_kind kind;
    unsigned slot;               /* MT_METRIC_SIM_MP: the mt_store_mp_figure;
                                    MT_METRIC_SIM_TLB: the mt_store_tlb_figure or
                                    MT_STORE_WALK_CYCLES */
    int cause;
} mt_store_metric;

/* `history regressions`' defaults: an object regressed when its metric got
 * worse by more than this many percent ... */
#define MT_STORE_REGRESSION_PCT 5.0
/* ... and it holds at least this many percent of either run's total. */
#define MT_STORE_MIN_SHARE_PCT 1.0

/* The metric in o, NAN when o has no such figure. */
double mt_store_metric_value(const mt_store_object_row *o, mt_store_metric m);
/* A simulated level's misses of o (cause -1: all), NAN when o was not
 * simulated or its machine had no such level; the share of the bytes of the
 * lines o brought into the level used before they left, in percent. */
double mt_store_sim_misses(const mt_store_object_row *o, unsigned slot, int cause);
double mt_store_sim_spatial_use(const mt_store_object_row *o, unsigned slot);
/* `asked`, or for AUTO the first both runs have: overhead, measured
 * cycles, memory operations, last-level misses. */
mt_store_metric mt_store_choose_metric(const mt_store_diff *d, mt_store_metric asked);

/* One pair of a diff: change in percent (INFINITY from zero); worse: the
 * change for the worse (its opposite for spatial use, the higher the
 * better); share: the larger of the object's shares of either run's total
 * (procedures' or data objects'), in percent, 100 for spatial use. */
typedef struct {
    uint32_t row;           /* in b */
    double before, after, change, worse, share;
} mt_store_compared;
/* The pairs whose metric both runs have, most worsened first (malloc'd). */
mt_store_compared *mt_store_compare(const mt_store_diff *d, mt_store_metric m, size_t *n);
/* The regression rule: worse by more than `threshold` percent, holding at
 * least `min_share` percent of either run's total. */
bool mt_store_regressed(const mt_store_compared *c, double threshold, double min_share);

/* Writes the runs `f` selects with every object's figures: CSV (one row per
 * run and object) or JSON (an array of runs, each with its objects). */
int mt_store_export(mt_store *s, const mt_store_filter *f, bool json, FILE *out, mt_error *err);

/* Removes runs (older than `before` when > 0; all but the newest `keep` per
 * program when > 0), then whatever no run refers to, and compacts the file. */
int mt_store_gc(mt_store *s, double before, size_t keep, size_t *removed, mt_error *err);

/* Runs one read-only SQL text (every statement must be read-only; refused
 * otherwise) and prints the result as tab-separated rows with a header,
 * each value as mt_tsv_field writes it (control bytes as \xHH). */
int mt_store_sql(mt_store *s, const char *sql, FILE *out, mt_error *err);

void mt_store_run_rows_free(mt_store_run_row *rows, size_t n);
void mt_store_object_rows_free(mt_store_object_row *rows, size_t n);

#endif
