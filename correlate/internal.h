/* correlate/internal.h — between m-object selection (select.c) and the
 * partition of large loop-free procedures into regions (regions.c).  Not
 * for use outside correlate/. */
#ifndef MTOOL_CORRELATE_INTERNAL_H
#define MTOOL_CORRELATE_INTERNAL_H

#include "correlate.h"

/* What regions.c needs from the selection in progress: the pass-1 data,
 * and the selector's own judgement, so that regions are judged by the same
 * rules as loops and procedures. */
typedef struct {
    const mt_program *prog;
    const mt_program_costs *costs;
    const uint64_t *counts;
    const mt_select_options *o;
    void *sel;
    /* Predicted cycles and memory operations (callees included) per call of
     * procedure q, every callee averaged over all its calls. */
    double (*cycles_per_call)(void *sel, uint32_t q);
    double (*memops_per_call)(void *sel, uint32_t q);
    /* Memory operations of the procedures reachable from the executed calls
     * of procedure p's blocks `in`, each once. */
    uint64_t (*callee_memops)(void *sel, uint32_t p, const bool *in);
    /* Timable and estimable (mt_candidate_status), filling predicted and warning. */
    uint8_t (*judge)(void *sel, mt_candidate *c);
} mt_region_context;

/* After procedure candidate `proc` (cands[at]) was judged: when it is large,
 * mostly loop-free and worth timing, partitions it into regions, judges each
 * and appends them to *cands (nothing when fewer than 2 would be timed). */
void mt_select_regions(const mt_region_context *ctx, size_t at, mt_candidate **cands, size_t *n,
                       size_t *cap);

#endif
