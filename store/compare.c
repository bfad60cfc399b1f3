/* store/compare.c — comparing two runs' objects (a mt_store_diff): what a
 * metric reads in a row, which metric both runs have, each pair's change
 * and share, and the regression rule.  One rule for `mtool history diff`
 * and `regressions` (ui/cmd_history.c) and for the HTML report's diff view
 * (report/history.c), so that the page marks exactly what the CI gate
 * fails on. */
#include <math.h>
#include <stdlib.h>

#include "internal.h"

static double count_value(uint64_t v) { return v == MT_STORE_NO_COUNT ? NAN : (double)v; }

double mt_store_sim_misses(const mt_store_object_row *o, unsigned slot, int cause)
{
    if (!o->sim.present)
        return NAN;
    if (slot == MT_STORE_SIM_LL)
        slot = o->sim.last;
    if (slot >= MT_STORE_SIM_LEVELS || o->sim.misses[slot][0] == MT_STORE_NO_COUNT)
        return NAN;
    if (cause >= 0)
        return (double)o->sim.misses[slot][cause];
    uint64_t n = 0;
    for (int c = 0; c < MT_STORE_NCAUSES; c++)
        n += o->sim.misses[slot][c];
    return (double)n;
}

/* The slot a metric reads in o (each run's own last level for LL), or
 * MT_STORE_SIM_LEVELS when o was not simulated. */
static unsigned sim_slot(const mt_store_object_row *o, unsigned slot)
{
    if (!o->sim.present)
        return MT_STORE_SIM_LEVELS;
    return slot == MT_STORE_SIM_LL ? o->sim.last : slot;
}

/* Lines o's references brought into a slot, NAN when not recorded. */
static double sim_lines(const mt_store_object_row *o, unsigned slot)
{
    slot = sim_slot(o, slot);
    return slot < MT_STORE_SIM_LEVELS ? count_value(o->sim.lines[slot]) : NAN;
}

double mt_store_sim_spatial_use(const mt_store_object_row *o, unsigned slot)
{
    double lines = sim_lines(o, slot);
    slot = sim_slot(o, slot);
    if (!(lines > 0) || !o->sim.line[slot])
        return NAN;
    return 100.0 * (double)o->sim.bytes_used[slot] / (lines * o->sim.line[slot]);
}

double mt_store_metric_value(const mt_store_object_row *o, mt_store_metric m)
{
    switch (m.kind) {
    case MT_METRIC_INSNS: return count_value(o->instructions);
    case MT_METRIC_ENTRIES: return count_value(o->entries);
    case MT_METRIC_MEASURED: return o->measured_cycles;
    case MT_METRIC_PREDICTED: return o->predicted_cycles;
    case MT_METRIC_OVERHEAD: return o->overhead_cycles;
    case MT_METRIC_SIM_REFS: return o->sim.present ? (double)o->sim.refs : NAN;
    case MT_METRIC_SIM_MISSES: return mt_store_sim_misses(o, m.slot, m.cause);
    case MT_METRIC_SIM_LINES: return sim_lines(o, m.slot);
    case MT_METRIC_SIM_SPATIAL_USE: return mt_store_sim_spatial_use(o, m.slot);
    case MT_METRIC_SIM_MP:
        return o->sim.present && m.slot < MT_STORE_NMP ? count_value(o->sim.mp[m.slot]) : NAN;
    case MT_METRIC_SIM_TLB:
        if (!o->sim.present || m.slot > MT_STORE_NTLB)
            return NAN;
        return m.slot == MT_STORE_WALK_CYCLES ? o->sim.tlb.walk_cycles
                                              : count_value(o->sim.tlb.misses[m.slot]);
    default: return count_value(o->memory_ops);
    }
}

mt_store_metric mt_store_choose_metric(const mt_store_diff *d, mt_store_metric asked)
{
    if (asked.kind != MT_METRIC_AUTO)
        return asked;
    static const mt_store_metric order[] = {{MT_METRIC_OVERHEAD, 0, -1},
                                            {MT_METRIC_MEASURED, 0, -1},
                                            {MT_METRIC_MEMOPS, 0, -1},
                                            {MT_METRIC_SIM_MISSES, MT_STORE_SIM_LL, -1}};
    for (size_t k = 0; k < MT_ARRAY_LEN(order); k++) {
        mt_store_metric m = order[k];
        bool in_a = false, in_b = false;
        for (size_t i = 0; i < d->na; i++)
            in_a |= !isnan(mt_store_metric_value(&d->a[i], m));
        for (size_t j = 0; j < d->nb; j++)
            in_b |= !isnan(mt_store_metric_value(&d->b[j], m));
        if (in_a && in_b)
            return m;
    }
    return order[2];
}

static int by_worse_desc(const void *x, const void *y)
{
    double p = ((const mt_store_compared *)x)->worse, q = ((const mt_store_compared *)y)->worse;
    return p < q ? 1 : p > q ? -1 : 0;
}

/* Spatial use is the one metric that improves as it grows. */
static bool higher_is_better(mt_store_metric m) { return m.kind == MT_METRIC_SIM_SPATIAL_USE; }

/* The metric summed over the procedures (code: a procedure's figures hold
 * its loops' and regions') or over the data objects (data), what an
 * object's share is of: the data objects' misses include those of code
 * outside the binary's procedures. */
static double total_of(const mt_store_object_row *rows, size_t n, mt_store_metric m, bool data)
{
    double t = 0;
    for (size_t i = 0; i < n; i++)
        if (!rows[i].is_loop && !rows[i].is_region && !rows[i].data_kind == !data &&
            !isnan(mt_store_metric_value(&rows[i], m)))
            t += fabs(mt_store_metric_value(&rows[i], m));
    return t;
}

/* The larger of an object's shares of either run's total, in percent; 100
 * for a metric that is no count (a percentage sums to no total). */
static double share_of(const mt_store_diff *d, const mt_store_compared *c, mt_store_metric m,
                       const double (*totals)[2])
{
    if (m.kind == MT_METRIC_SIM_SPATIAL_USE)
        return 100;
    const double *t = totals[d->b[c->row].data_kind != NULL];
    return fmax(t[0] ? 100 * fabs(c->before) / t[0] : 0, t[1] ? 100 * fabs(c->after) / t[1] : 0);
}

mt_store_compared *mt_store_compare(const mt_store_diff *d, mt_store_metric m, size_t *n)
{
    const double totals[2][2] = {{total_of(d->a, d->na, m, false), total_of(d->b, d->nb, m, false)},
                                 {total_of(d->a, d->na, m, true), total_of(d->b, d->nb, m, true)}};
    mt_store_compared *out = mt_xcalloc(d->nb + 1, sizeof *out);
    *n = 0;
    for (size_t j = 0; j < d->nb; j++) {
        if (d->b_to_a[j] == MT_NONE)
            continue;
        double x = mt_store_metric_value(&d->a[d->b_to_a[j]], m);
        double y = mt_store_metric_value(&d->b[j], m);
        if (isnan(x) || isnan(y))
            continue;
        double change = x != 0 ? 100.0 * (y - x) / fabs(x) : y > 0 ? INFINITY : y < 0 ? -INFINITY : 0;
        mt_store_compared *c = &out[(*n)++];
        *c = (mt_store_compared){(uint32_t)j, x, y, change, higher_is_better(m) ? -change : change, 0};
        c->share = share_of(d, c, m, totals);
    }
    qsort(out, *n, sizeof *out, by_worse_desc);
    return out;
}

bool mt_store_regressed(const mt_store_compared *c, double threshold, double min_share)
{
    return c->share >= min_share && c->worse > threshold;
}
