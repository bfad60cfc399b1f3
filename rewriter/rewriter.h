/* rewriter/rewriter.h — the binary rewriter's public interface.
 *
 * mt_rewrite() writes a drop-in replacement of an analyzed executable in
 * which every procedure whose control flow is fully resolved has been
 * relocated into a new segment with instrumentation inline; the original
 * code stays in place (its entries jump to the copies), so any path that
 * still reaches it stays correct, only uninstrumented.  The runtime
 * (timer/timer.h) is embedded and runs before the program's own entry.
 *
 * Pass 1 instrumentation is one counter per block: `incq %gs:slot+8*i`,
 * counting executions of the block's first instruction, except where flow
 * determines it from other blocks' counts (rewriter/counters.c): that
 * block's counter has no probe and the counter map says how to fill it.  Pass 2 adds TSC
 * timers on the entry and exit edges of the m-objects in
 * mt_rewrite_options.timed (rewriter/timers.c, timer/probes.S); blocks keep
 * their counters.  A tracing copy (mt_rewrite_options.trace) also records
 * every load and store of the relocated code (rewriter/trace.c). */
#ifndef MTOOL_REWRITER_H
#define MTOOL_REWRITER_H

#include <stdbool.h>
#include <stdint.h>

#include "../analyzer/analyzer.h"

/* An m-object to time in pass 2: a procedure (loop == MT_NONE), one of its
 * natural loops (an index in prog->procs[proc].loops), or one of its
 * regions (`region`, loop == MT_NONE): the blocks from cut point
 * region_first up to cut point region_end (MT_NONE: to the returns), as
 * mt_region_cuts and mt_region_blocks define them.  Its position in the
 * list given to the rewriter is its record index in profiles. */
typedef struct mt_timed_object {
    uint32_t proc;
    uint32_t loop;
    bool region;
    uint32_t region_first, region_end; /* block indices */
} mt_timed_object;

/* The counter map's second word of a timed object (the first is the
 * procedure's entry): 0 for a procedure, the header's address for a loop,
 * and for a region MT_TIMER_REGION | end << 32 | first, where first and end
 * are the offsets of its first block and of the next region's first block
 * from the procedure's entry (end 0: to the returns). */
#define MT_TIMER_REGION (1ull << 63)
uint64_t mt_timed_object_key(const mt_program *prog, const mt_timed_object *t);

typedef struct {
    const char *profile_dir;   /* absolute default for $MTOOL_OUT */
    const char *program_name;  /* prefix of profile file names */
    bool no_loop_registers;    /* every probe increments memory (for comparisons) */
    bool no_derived_counts;    /* a probe in every block, none derived from flow (for
                                  comparisons; rewriter/counters.c) */
    bool timers_only;          /* pass 2 without counter code: blocks are mapped but
                                  their counters stay 0, so timers see the program's
                                  own speed */
    const mt_timed_object *timed; /* pass 2: objects timed on their entry and exit edges */
    uint32_t ntimed;
    bool trace;                /* every load and store of the copies is recorded
                                  (rewriter/trace.c): `mtool sim -- BIN` */
    const mt_timed_object *traced; /* with trace: only the blocks of these objects are
                                  traced (`mtool sim RUNDIR`: pass 2's m-objects); */
    uint32_t ntraced;          /* 0: every block of every relocated procedure */
    const uint32_t *skip;      /* procedures left as they are (code something else runs
                                  from its original bytes, such as valgrind's trampolines) */
    uint32_t nskip;
    /* One set of objects counted together (docs/ARCHITECTURE.md, "Shared
     * libraries"): each counts in its own range of the one per-thread slot,
     * from counter_base on; the executable comes last, its slot sized for
     * all.  A copy activates (writes the entry jumps of) a library copy of
     * the same libs_set only; 0: no libraries. */
    uint32_t counter_base;
    uint64_t libs_set;
    bool library;              /* prog is a shared library: a copy whose entry jumps the
                                  executable's runtime writes; no runtime of its own runs:
                                  its call-target records, trace records and wrappers
                                  serve it through the executable's runtime */
    /* Timers of a set (pass 2 through libraries): the objects' records are
     * timer_base.. of the slot's, the libraries' first and the executable's
     * last (it sizes the slot for all: its map starts with timer_base pairs
     * 0, the others' records); a library's records follow slot_counters
     * counters, the executable's ncounters. */
    uint32_t timer_base;
    uint32_t slot_counters;
    /* Call-site records of a set (pass 1): the objects' records are
     * call_site_base.. of the slot's, the libraries' first and the
     * executable's last (its map starts with call_site_base addresses 0).
     * A library records its calls through pointers only when slot_counters
     * says where the slot's records lie (a counting slot: no timers). */
    uint32_t call_site_base;
    /* A library's tracing copy (`mtool sim` through libraries): its records
     * go to the slot's trace area, after slot_counters counters, no timers
     * and slot_call_sites call-site records (the executable's); its code
     * objects are code_base + its own ids, after the executable's and the
     * libraries' before it, so that one number names a code object of the
     * set. */
    uint32_t slot_call_sites;
    uint32_t code_base;
} mt_rewrite_options;

/* Parses "NAME" (a procedure), "NAME@0xADDR" (its loop headed at that
 * block address), "NAME:K" (its loop K, in the analyzer's order: parents
 * before children), or a region: "NAME#A-B" (from cut point A up to cut
 * point B), "NAME#A-" (from A to the returns) or "NAME#A" (from A to the
 * next cut point), where A and B are cut point numbers (mt_region_cuts'
 * order, from 0) or block addresses (0x...).  -1 with err naming the
 * problem. */
int mt_timed_object_parse(const mt_program *prog, const char *spec, mt_timed_object *out,
                          mt_error *err);
/* The spec of `o` that mt_timed_object_parse reads back to the same object
 * (loops by header address, regions by block addresses), for `mtool
 * instrument --time SPEC`. */
void mt_timed_object_format(const mt_program *prog, const mt_timed_object *o, char *buf,
                            size_t n);

/* Why a procedure was not instrumented. */
typedef struct {
    uint32_t proc;             /* index in prog->procs */
    char *reason;
} mt_rewrite_skip;

typedef struct {
    uint32_t nprocs_candidates;   /* non-PLT procedures with code */
    uint32_t nprocs_instrumented;
    uint64_t nblocks_candidates;  /* blocks of candidate procedures */
    uint64_t nblocks_instrumented;/* = counters, less one per table check */
    uint32_t ntable_checks;       /* jump-table reads whose index the copy checks */
    uint32_t nprobes_saving_flags;/* probes that had to preserve live flags */
    uint32_t nloop_registers;     /* blocks looping on themselves counted in a register */
    uint32_t nderived;            /* blocks whose count is derived from others': no probe */
    uint32_t nwrapped_calls;      /* call sites redirected to runtime wrappers */
    uint32_t ntask_hooks;         /* system calls creating a task, the child hooked after */
    uint32_t ncall_sites;         /* calls through pointers whose targets are recorded */
    uint64_t code_bytes;          /* relocated code, probes included */
    uint32_t nfdes;               /* unwind entries written for relocated code */
    mt_rewrite_skip *skipped;
    uint32_t nskipped;
    uint32_t ntimed;              /* objects given that are timed (their procedure relocated) */
    uint32_t ntimer_events;       /* start/stop events inserted on edges */
    uint32_t ntimer_events_saving_flags; /* ... where flags are live */
    uint32_t ntrampolines;        /* taken-branch and jump-table edges given code */
    uint32_t ntrace_sites;        /* tracing: instructions whose references are recorded */
    uint32_t ntrace_bare;         /* ... of which without saving registers (dead there) */
    uint32_t ntrace_refs;         /* ... references recorded per execution of them all */
    uint32_t ntrace_untraced;     /* memory operands not traced (rep cmps/scas, operands
                                     of no stated size, prefixed gathers) */
    uint8_t binary_hash[32];      /* SHA-256 of the input file */
} mt_rewrite_report;

int mt_rewrite_counts(const mt_program *prog, const char *out_path, const mt_rewrite_options *opt,
                      mt_rewrite_report *report, mt_error *err);
void mt_rewrite_report_free(mt_rewrite_report *report);
/* The most counters and call-site records of its own (past counter_base
 * and call_site_base) any copy of prog uses, known from the analysis
 * before a copy is made: a set's ranges can then be laid out, and the
 * executable's copy made, before each library is rewritten once
 * (docs/ARCHITECTURE.md, "Counters: disjoint ranges of the one slot"). */
void mt_rewrite_bounds(const mt_program *prog, uint32_t *counters, uint32_t *call_sites);

/* The counter map appended (not loaded) at the end of every instrumented
 * file (a library's and an executable counting with libraries start with
 * counter_base entries 0, the other objects' counters): counter i counts the block whose first instruction is at addrs[i]
 * (a link-time address of the original binary) or, when addrs[i] has
 * MT_COUNTER_FALLBACK set, the times the copy of the instruction at
 * addrs[i] & ~MT_COUNTER_FALLBACK found a jump-table index beyond what the
 * analysis bounded and went on in the original code, uncounted (the counts
 * of that procedure are then incomplete). */
#define MT_COUNTER_FALLBACK (1ull << 63)
typedef struct {
    uint8_t binary_hash[32];
    uint32_t ncounters;
    uint64_t *addrs;
    uint32_t ntimers;          /* timed objects: record i times ... */
    uint64_t *timer_procs;     /* ... the procedure entered at timer_procs[i], */
    uint64_t *timer_loops;     /* ... its loop headed at timer_loops[i], or 0, or a
                                  region (MT_TIMER_REGION set: mt_timed_object_key) */
    uint64_t timers_id;        /* mt_timer_set_id of those pairs (profiles carry it) */
    uint32_t ncall_sites;      /* pass 1: calls through pointers whose targets are recorded: */
    uint64_t *call_sites;      /* ... record i is the call (or tail jump) at call_sites[i]
                                  (0: another object's record, a set's call_site_base) */
    /* Derived blocks (rewriter/counters.c): their counters have no probe.
     * Equation words: n << 32 | counter i, then the n counters whose sum is
     * counter i's count; a term is counted or derived by an earlier
     * equation (checked when the map is read). */
    uint64_t *equations;
    uint32_t nequation_words;
} mt_counter_map;

/* FNV-1a over the (procedure entry, loop header or 0) pairs of a timed
 * object list: profiles of copies timing other objects are not merged. */
uint64_t mt_timer_set_id(const uint64_t *procs, const uint64_t *loops, uint32_t n);
/* The same over a list of timed objects (their entries and object keys). */
uint64_t mt_timed_objects_id(const mt_program *prog, const mt_timed_object *timed, uint32_t n);
/* The same over the call graph's (caller, callee) entry pairs, then the
 * known imports and exports pass 2 joined and the stubs bound to their own
 * object (entry, 1 | 2 | 4): which procedures a timed copy brackets the
 * library calls of depends on the call graph, which pass 1's calls through
 * pointers extend, and which calls it leaves unbracketed on them, so it is
 * part of a cached pass-2 copy's identity. */
uint64_t mt_call_graph_id(const mt_program *prog);

int mt_counter_map_read(const char *instrumented_path, mt_counter_map *map, mt_error *err);
void mt_counter_map_free(mt_counter_map *map);
/* Fills the derived blocks' counters of `counts` (the map's ncounters,
 * summed over threads and processes) from their equations. */
void mt_counter_map_derive(const mt_counter_map *map, uint64_t *counts);

#endif
