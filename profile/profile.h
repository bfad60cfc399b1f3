/* profile/profile.h — reading the profile files instrumented programs write
 * (format in timer/timer.h) and merging them.
 *
 * Every process of an instrumented program writes one file; every thread
 * has a slot of counters in it.  Merging sums the counters of every slot of
 * every file written by the same binary (same content hash). */
#ifndef MTOOL_PROFILE_H
#define MTOOL_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/util.h"
#include "../rewriter/rewriter.h"
#include "../timer/timer.h"

/* A timed object's figures summed over threads and processes (TSC ticks). */
typedef struct {
    uint64_t entries;          /* outermost entries */
    uint64_t recursive;        /* entries while already active (recursion) */
    uint64_t inclusive, exclusive, outside;
    uint64_t nonlocal_exits;   /* closed by longjmp / exception detection */
    uint64_t open;             /* still active when the process ended: time lost */
    uint64_t cycles;           /* inclusive core cycles at the threads' own clock
                                  (mt_timer_record.cycles; 0: not measured) */
} mt_timer_totals;

/* A target of a call through a pointer and the object it lies in, as the
 * profiles' headers place it: the object loaded highest at or below its
 * run-time address (objects do not overlap; an address past the end of the
 * object found, in one no header lists, lies in none of its procedures). */
typedef struct {
    uint64_t target;           /* link-time address in that object */
    uint64_t calls;
    bool in_library;           /* a library copy's (first, end: its header entry,
                                  mt_profile_library), else the executable's */
    uint32_t first, end;
} mt_merged_call_target;

/* The targets one call site through a pointer reached, over threads and
 * processes (pass 1). */
typedef struct {
    mt_merged_call_target *targets; /* by object, then address, with their calls */
    uint32_t ntargets;
    uint64_t overflow;         /* calls to targets past a thread's record: not named */
} mt_call_site_totals;

typedef struct {
    uint64_t *counts;          /* ncounters sums over every thread of every process */
    mt_timer_totals *timers;   /* ntimers sums (pass 2) */
    mt_call_site_totals *call_sites; /* ncall_sites (pass 1) */
    uint32_t ncall_sites;
    uint32_t ntimers;
    uint32_t ncounters;
    uint32_t nprocesses;       /* files merged */
    uint32_t nforked;          /* ... of which written by fork children */
    uint32_t nthreads;         /* threads of the files merged */
    uint32_t nother;           /* profiles of other binaries or builds, skipped */
    uint32_t nincomplete;      /* files whose process died before writing their header,
                                  skipped (they hold no counts yet) */
    uint32_t ndamaged;         /* files that are not complete, consistent profiles
                                  (empty, truncated, corrupt, not regular files), skipped */
    char **damaged;            /* ndamaged "FILE-NAME: reason" (the name is the
                                  program's data: escape it) */
    double timer_bias;         /* pass 2: ticks a timer pair adds to what it brackets, the
                                  least any process measured at start-up; NAN if none did */
} profile_merge;

/* Merges every *.mtp file in `dir` written by the instrumented copy whose
 * counter map is `map`; profiles of other binaries, or of copies counting,
 * timing or recording something else, are skipped (counted in nother), and
 * so are damaged files (in ndamaged and damaged: a process killed while
 * starting leaves an empty file, and one bad file must not cost the counts
 * of all the others).  An unreadable directory, or one with no profile of
 * the copy, is an error naming it. */
int mt_profile_merge(const char *dir, const mt_counter_map *map, profile_merge *out, mt_error *err);
void mt_profile_merge_free(profile_merge *m);
/* The same, handing a tracing copy's unsent records to `fn` first: per
 * slot of every profile merged, the records its thread (`tid`) made after
 * its last frame was sent (run-time addresses).  A file whose trace area is corrupt is skipped as
 * damaged. */
typedef void (*mt_trace_leftover_fn)(void *ctx, int32_t tid, const mt_trace_record *records,
                                     uint32_t n);
int mt_profile_merge_traced(const char *dir, const mt_counter_map *map, mt_trace_leftover_fn fn,
                            void *ctx, profile_merge *out, mt_error *err);

#endif
