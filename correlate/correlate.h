/* correlate/correlate.h — pass 2 around the timed run: which loops and
 * procedures to time (m-object selection, MTOOL section 4 and Figure 1),
 * and what their timers say against the predictions (the report's rows).
 *
 * Selection: procedures sorted by the memory operations of their own blocks
 * (pass-1 counts), kept until `coverage` of all counted memory operations is
 * held; for each, its loops are tried (outermost first, as MTOOL did, or
 * innermost first), then the procedure itself.  An m-object is timed when it
 * is timable (per entry it runs far longer than a timer start/stop pair and
 * does far more memory operations than the pair does) and estimable (Tot =
 * TDES on the call graph weighted by pass-1 counts: every callee's work is
 * done on its behalf, so the counts predict its whole time) — or, failing
 * that, when each callee it shares with others is estimated per call by one
 * of MTOOL's three rules: a constant-time leaf, a caller making 98% of the
 * calls, or a negligible product (the last two with a warning).  Nested
 * m-objects are all timed: the timers are nesting-aware.
 *
 * A call through the PLT to a known import (a counted library's estimable
 * procedure, joined by pass 2) is a callee like the program's own, at the
 * library's figures per call (costs->imports); other PLT calls are outside.
 *
 * Figures: measured = inclusive TSC ticks − ticks spent outside instrumented
 * code (PLT calls but known imports: shared libraries, system calls) − the timer's own bias
 * per entry, in core cycles at the clock ratio measured around the run;
 * predicted = Σ count × cycles over the object's blocks and those of its
 * estimable callees (costmodel); overhead = measured − predicted. */
#ifndef MTOOL_CORRELATE_H
#define MTOOL_CORRELATE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../analyzer/analyzer.h"
#include "../costmodel/costmodel.h"
#include "../profile/profile.h"

typedef struct {
    double coverage;          /* share of memory operations to cover (MTOOL: 0.95) */
    bool inner_first;         /* try innermost loops first (finer localization) */
    double timer_cycles;      /* one start/stop pair, core cycles */
    double min_cost_ratio;    /* timable: predicted cycles per entry >= this x timer_cycles */
    double min_memops_ratio;  /* timable: memory ops per entry >= this x the pair's own */
    double timer_memops;      /* memory operations of one start/stop pair */
    double loops_cover;       /* a procedure whose timed loops hold this share of its
                                 memory operations is not timed itself (0.9) */
    int caller_levels;        /* a procedure with nothing timable is timed from its
                                 callers' loops, up to this many levels up (8) */
    int max_regions;          /* a large, mostly loop-free selected procedure is also
                                 timed in up to this many regions (8; < 2: never) */
} mt_select_options;

/* MTOOL's defaults with this runtime's measured timer (docs/ARCHITECTURE.md):
 * a pair costs about 70 core cycles and 12 memory operations; an object is
 * timable at 50x both, so timers add at most about 2% to what they time. */
void mt_select_options_init(mt_select_options *o);

typedef enum {
    MT_CAND_TIMED,
    MT_CAND_NOT_TIMABLE,
    MT_CAND_NOT_ESTIMABLE,
    MT_CAND_IRREDUCIBLE,      /* several entry blocks: no single entry edge set */
    MT_CAND_NOT_RUN,          /* no entry in pass 1 */
    MT_CAND_COVERED,          /* outer-first: an enclosing loop is timed already; a
                                 procedure: its timed loops hold nearly all of it */
} mt_candidate_status;

/* A region of a procedure (analyzer: mt_region_cuts): the blocks from cut
 * point `first` up to cut point `end` (MT_NONE: to the returns). */
typedef struct {
    uint32_t first, end;      /* block indices */
    uint16_t k, n;            /* region k of n (from 1); n == 0: not a region */
} mt_region;

typedef struct {
    uint32_t proc, loop;      /* loop == MT_NONE: the procedure, or one of its regions */
    mt_region region;         /* region.n > 0: a region of the procedure */
    uint64_t entries;         /* pass 1: procedure entries, or loop entries (mt_loop_entries) */
    uint64_t iterations;      /* pass 1: a loop's header executions; 0 for the others */
    uint64_t memops;          /* inclusive of callees (pass-1 counts) */
    uint64_t insns;
    double predicted;         /* core cycles, inclusive of estimable callees */
    uint8_t status;           /* mt_candidate_status */
    char warning[160];        /* an estimability heuristic used, or why none applied */
    const mt_program *prog;   /* the object whose code it is (mt_select's prog) */
    const char *object;       /* that object's shared library file name, named in reports
                                 as OBJECT:PROCEDURE; NULL: the executable */
} mt_candidate;

/* A call from one object into another that is known work (a known import,
 * run/libs.c): `from`'s PLT stub `stub`, or its calls through pointers to
 * cross callee `cross_callee` (mt_call_site.cross_callee's numbering; 0:
 * through the stub), reach procedure `proc` of `to`. */
typedef struct {
    const mt_program *from, *to;
    uint32_t stub, proc;
    uint32_t cross_callee;
} mt_object_call;

typedef struct {
    mt_candidate *cands;      /* every object considered; timed ones first */
    size_t ncands;
    size_t ntimed;            /* cands[0 .. ntimed) are timed, in that order */
    uint64_t memops_total;    /* all counted memory operations of the run */
    uint64_t memops_selected; /* own memory operations of the selected procedures */
    double predicted_total;   /* the whole program, core cycles */
    mt_object_call *object_calls; /* the calls across objects that are known work
                                 (owned; NULL: none): what they reach is nested in
                                 the objects making them */
    size_t nobject_calls;
} mt_selection;

/* `counts` are pass-1 block counts laid out as `costs`; `prog` has been
 * refined with them (mt_refine_with_pass1: dynamic calls, estimability). */
void mt_select(const mt_program *prog, const mt_program_costs *costs, const uint64_t *counts,
               const mt_select_options *o, mt_selection *out);
void mt_selection_free(mt_selection *s);
/* What one call of each procedure procs[k] costs, callees included as
 * selection counts them (pass-1 counts laid out as `costs`): its predicted
 * cycles per call (inclusive of estimable callees, mt_predicted_inclusive,
 * or for a procedure MTOOL's rules estimate, its callees' averages) and its
 * memory operations with its callees', over its calls.  known[k]: the
 * figure holds for every call, the procedure being estimable or estimated
 * by the rules, so that another object's call to it is known work (a known
 * import, run/pass2.c). */
void mt_procedures_work(const mt_program *prog, const mt_program_costs *costs, const uint64_t *counts,
                        const uint32_t *procs, size_t n, mt_import_work *out, bool *known);
/* One selection of the objects timed together (a program and its shared
 * libraries, docs/ARCHITECTURE.md "Shared libraries"): each part's timed
 * candidates, part after part (the order of their timer records), then
 * every part's others; totals summed.  Each part's candidates are named
 * with objects[k] (NULL: the executable). */
void mt_selection_join(const mt_selection *parts, const char *const *objects, size_t nparts,
                       mt_selection *out);
const char *mt_candidate_status_name(uint8_t status);

/* ---- regions (regions.c) ---------------------------------------------------- */

/* MTOOL: "large loop-free procedures partitioned into several regions".
 * Regions are made of consecutive segments (cycles[k], memops[k]: pass-1
 * totals of segment k, from cut point k to the next; entries[k]: executions
 * of cut point k).  Chooses the most regions, up to max_regions, each
 * timable (its cycles and memory operations per entry of its first cut
 * point at least min_cycles and min_memops), with the largest region's
 * cycles as small as possible (regions of nearly equal predicted time);
 * returns their number (0 when fewer than 2 are possible) and the first
 * segment of each in starts[0 .. n), starts[0] = 0. */
uint32_t mt_partition_segments(const double *cycles, const double *memops,
                               const double *entries, uint32_t nsegments, double min_cycles,
                               double min_memops, uint32_t max_regions, uint32_t *starts);

/* The blocks of a candidate (a procedure: all; a loop: its body; a region:
 * its blocks), as in[b] (malloc'd, nblocks + 1 entries). */
/* The object the rewriter times for candidate c. */
mt_timed_object mt_candidate_object(const mt_candidate *c);
bool *mt_candidate_blocks(const mt_program *prog, const mt_candidate *c);

/* ---- the report's rows ----------------------------------------------------- */

typedef struct {
    const mt_candidate *cand;
    uint64_t entries;         /* measured: outermost entries in pass 2 */
    uint64_t recursive;       /* entries while already active */
    double measured;          /* core cycles, compensated: the least over the runs */
    double measured_max;      /* the most over the runs (= measured with one run) */
    double outside;           /* core cycles in uninstrumented code (not overhead) */
    double tsc_per_cycle;     /* the clock `measured` is at: the least run's object_clock */
    bool clock_in_program;    /* that clock measured by the program's threads as the
                                 object ran, not around the run */
    double overhead;          /* measured - predicted */
    bool outermost;           /* not nested in another timed object: sums use these */
    uint64_t nonlocal_exits, open;
} mt_mobject_figures;

typedef struct {
    const double *tsc_per_cycle; /* per run: the core clock measured around it */
    double timer_bias_ticks;  /* per entry, subtracted */
    /* A run's parts, each at its own clock (an MPI job's ranks: parts[k *
     * nparts + p][i], rank p's totals of run k, whose sum runs[k] holds);
     * nparts 0: runs' totals whole.  Summing cycles, not ticks, keeps an
     * object's figure the sum of its ranks'. */
    mt_timer_totals *const *parts;
    size_t nparts;
} mt_correlate_clock;

/* Rows for the timed objects of `sel` from merged timer totals of each of
 * `nruns` runs (runs[r][i]: object i, its position in the timed list),
 * sorted by overhead, largest first.  An object's measured time is its least
 * over the runs, each run's ticks in core cycles at the clock the object ran
 * at (the program's threads measure it: mt_timer_totals.cycles), else at
 * the clock measured around that run: other load only ever adds cycles,
 * but a faster clock takes fewer ticks, so the least ticks at the runs'
 * mean clock read a clock change as a gain (the Xeon family 6 model 85's
 * core moved between 0.807, 0.927 and 1.042 TSC ticks a cycle within
 * milliseconds); the most gives the spread. */
mt_mobject_figures *mt_correlate(const mt_selection *sel,
                                 mt_timer_totals *const *runs, size_t nruns,
                                 const mt_correlate_clock *clk, size_t *nrows);

#endif
