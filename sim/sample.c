/* sim/sample.c — sampled simulation (sim.h, docs/SIMULATOR.md "Sampled
 * modes"): which references are simulated and counted, the warm-up of each
 * time sample, and the estimates: counts scaled by the ratio of references
 * offered to references counted, with each level's misses given an error
 * bound from the spread of the samples. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Misses of one level over the samples (on-periods): running sums. */
typedef struct {
    double sum, sumsq;
    uint64_t at_start;        /* the level's misses when the on-period began */
} period_misses;

struct sim_sampler {
    mt_sim_sample cfg;
    uint32_t line_shift;      /* sets: the machine's longest line, log2 */
    uint64_t residues;        /* sets: G, every level's sets a multiple of G longest lines */
    bool *sampled;            /* sets: G flags, the residues (longest line mod G) simulated */
    uint64_t offered, counted;
    uint64_t pos;             /* time: the reference's place in its period */
    uint64_t periods;         /* time: on-periods closed */
    bool in_on;               /* time: an on-period is open */
    mt_sim_level_stats saved[MT_SIM_MAX_LEVELS]; /* the counts when a warm-up began */
    period_misses period[MT_SIM_MAX_LEVELS];
    uint32_t *set_misses[MT_SIM_MAX_LEVELS];    /* sets: misses per set, sampled sets only */
    bool estimated;
    mt_sim_estimate est;
};

/* A whole number in [1, 2^31) at *p; *p moves past it. */
static int parse_count(const char **p, uint32_t *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(*p, &end, 10);
    if (end == *p || **p == '-' || **p == '+' || errno || !v || v >= 1ul << 31)
        return -1;
    *p = end;
    *out = (uint32_t)v;
    return 0;
}

int mt_sim_sample_parse(mt_sim_sample *smp, mt_sim_sampling mode, const char *spec,
                        mt_error *err)
{
    memset(smp, 0, sizeof *smp);
    smp->mode = mode;
    const char *p = spec;
    bool ok = parse_count(&p, &smp->on) == 0 && *p++ == '/' && parse_count(&p, &smp->period) == 0;
    if (ok && mode == MT_SIM_SAMPLE_TIME) {
        smp->warm = smp->on;
        if (*p == '/') {
            p++;
            ok = parse_count(&p, &smp->warm) == 0;
        }
    }
    if (!ok || *p) {
        mt_error_set(err, "%s: expected %s", spec,
                     mode == MT_SIM_SAMPLE_SETS ? "1/K (K a whole number above 1)"
                                                : "ON/PERIOD or ON/PERIOD/WARM (whole numbers)");
        return -1;
    }
    if (mode == MT_SIM_SAMPLE_SETS && (smp->on != 1 || smp->period < 2)) {
        mt_error_set(err, "%s: expected 1/K with K above 1", spec);
        return -1;
    }
    if (mode == MT_SIM_SAMPLE_TIME && (uint64_t)smp->on + smp->warm >= smp->period) {
        mt_error_set(err, "%s: ON + WARM must be less than PERIOD", spec);
        return -1;
    }
    return 0;
}

uint32_t sim_longest_line(const mt_sim_machine *m)
{
    uint32_t line = m->d1.line;
    if (m->i1.present && m->i1.line > line)
        line = m->i1.line;
    for (unsigned i = 0; i < m->nlower; i++)
        if (m->lower[i].line > line)
            line = m->lower[i].line;
    return line;
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Set sampling keeps whole sets: a line is simulated when its number in the
 * longest line, modulo G, is one of the sampled residues, G dividing every
 * level's sets counted in longest lines (so at every level a set is either
 * always or never simulated).  0 when a level's sets are not a whole
 * number of longest lines. */
static uint64_t common_sets(const mt_sim_machine *m)
{
    uint32_t longest = sim_longest_line(m);
    const mt_sim_level_desc *levels[MT_SIM_MAX_LEVELS] = {&m->i1, &m->d1};
    unsigned n = 2;
    for (unsigned i = 0; i < m->nlower; i++)
        levels[n++] = &m->lower[i];
    uint64_t g = 0;
    for (unsigned i = 0; i < n; i++) {
        const mt_sim_level_desc *d = levels[i];
        if (!d->present)
            continue;
        uint64_t sets = d->size / d->line / d->ways, per = longest / d->line;
        if (sets % per)
            return 0;
        g = gcd(g, sets / per);
    }
    return g;
}

int mt_sim_sample_check(const mt_sim_sample *smp, const mt_sim_machine *m, mt_error *err)
{
    if (m->cpus > 1 && smp->mode != MT_SIM_EXACT) {
        mt_error_set(err, "cpus = %u: sampled modes simulate one CPU", m->cpus);
        return -1;
    }
    if (smp->mode != MT_SIM_SAMPLE_SETS)
        return 0;
    uint64_t g = common_sets(m);
    if (g % smp->period || g / smp->period < 2) { /* two sets at least: an error bound */
        mt_error_set(err,
                     "--sample-sets 1/%u: the levels have %llu sets in common (their greatest "
                     "common divisor): K must divide it and leave 2 or more",
                     smp->period, (unsigned long long)g);
        return -1;
    }
    bool prefetch = m->d1.prefetch || (m->i1.present && m->i1.prefetch);
    for (unsigned i = 0; i < m->nlower; i++)
        prefetch |= m->lower[i].prefetch != MT_SIM_PREFETCH_NONE;
    if (prefetch) { /* its lines would land in sets never simulated, their hits unseen */
        mt_error_set(err, "--sample-sets: not with a prefetcher (it fills sets not simulated)");
        return -1;
    }
    return 0;
}

/* G/K residues of G, drawn at random (a fixed xorshift sequence: the same
 * sets every run): sets taken at random, not every K-th, so a stride of a
 * power of two lines neither always nor never meets them, and the spread of
 * the sampled sets estimates the error (Kessler, Hill & Wood's random set
 * sampling). */
static bool *draw_residues(uint64_t g, uint32_t k)
{
    bool *sampled = mt_xcalloc(g, sizeof *sampled);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (uint64_t taken = 0; taken < g / k;) {
        x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
        uint64_t r = ((x * 0x2545F4914F6CDD1Dull) >> 11) % g;
        if (!sampled[r])
            sampled[r] = true, taken++;
    }
    return sampled;
}

void mt_sim_set_sample(mt_sim *s, const mt_sim_sample *smp)
{
    if (smp->mode == MT_SIM_EXACT)
        return;
    sim_tlb_free(s->tlb); /* sampled sets or periods say nothing of the pages' reuse */
    sim_tlb_free(s->itlb);
    s->tlb = s->itlb = NULL;
    struct sim_sampler *sm = mt_xcalloc(1, sizeof *sm);
    sm->cfg = *smp;
    uint32_t longest = 0;
    for (unsigned li = 0; li < s->nlevels; li++)
        if (s->lv[li].desc.line > longest)
            longest = s->lv[li].desc.line;
    sm->line_shift = (uint32_t)__builtin_ctz(longest);
    if (smp->mode == MT_SIM_SAMPLE_SETS) {
        sm->residues = s->lv[s->nlevels - 1].sets;
        for (unsigned li = 0; li < s->nlevels; li++)
            sm->residues = gcd(sm->residues, s->lv[li].sets >> (sm->line_shift - s->lv[li].line_shift));
        sm->sampled = draw_residues(sm->residues, smp->period);
    }
    if (smp->mode == MT_SIM_SAMPLE_SETS)
        for (unsigned li = 0; li < s->nlevels; li++) {
            sim_level *L = &s->lv[li];
            /* the fully associative shadow of the sampled part: 1/K of the lines */
            L->shadow.capacity = (uint64_t)L->sets * L->ways / smp->period;
            sm->set_misses[li] = mt_xcalloc(L->sets, sizeof *sm->set_misses[li]);
        }
    s->sampler = sm;
}

void sim_sample_free(struct sim_sampler *sm)
{
    if (!sm)
        return;
    for (unsigned li = 0; li < MT_SIM_MAX_LEVELS; li++)
        free(sm->set_misses[li]);
    free(sm->sampled);
    free(sm);
}

/* ---- time sampling: warm-up, on-period, off ---- */

static void begin_warm(mt_sim *s)
{
    for (unsigned li = 0; li < s->nlevels; li++)
        s->sampler->saved[li] = s->lv[li].stats;
    s->uncounted = true;
}

/* The warm-up's counts are dropped: the levels' counts go back to what they
 * were before it (the tallies of replacement and line use were not kept). */
static void end_warm(mt_sim *s)
{
    for (unsigned li = 0; li < s->nlevels; li++)
        s->lv[li].stats = s->sampler->saved[li];
    s->uncounted = false;
}

static void begin_on(mt_sim *s)
{
    for (unsigned li = 0; li < s->nlevels; li++)
        s->sampler->period[li].at_start = s->lv[li].stats.misses;
    s->sampler->in_on = true;
}

static void end_on(mt_sim *s)
{
    struct sim_sampler *sm = s->sampler;
    for (unsigned li = 0; li < s->nlevels; li++) {
        double m = (double)(s->lv[li].stats.misses - sm->period[li].at_start);
        sm->period[li].sum += m;
        sm->period[li].sumsq += m * m;
    }
    sm->periods++;
    sm->in_on = false;
}

static sim_sample_step time_step(mt_sim *s)
{
    struct sim_sampler *sm = s->sampler;
    uint64_t pos = sm->pos;
    sm->pos = pos + 1 == sm->cfg.period ? 0 : pos + 1;
    if (pos < sm->cfg.warm) {
        if (pos == 0)
            begin_warm(s);
        return SIM_WARM;
    }
    if (pos == sm->cfg.warm) {
        if (s->uncounted)
            end_warm(s);
        begin_on(s);
    }
    if (pos < (uint64_t)sm->cfg.warm + sm->cfg.on)
        return SIM_COUNT;
    if (sm->in_on)
        end_on(s);
    return SIM_SKIP;
}

sim_sample_step sim_sample_ref(mt_sim *s, uint64_t addr)
{
    struct sim_sampler *sm = s->sampler;
    sm->offered++;
    sim_sample_step step = sm->cfg.mode == MT_SIM_SAMPLE_SETS
                               ? (sm->sampled[(addr >> sm->line_shift) % sm->residues] ? SIM_COUNT
                                                                                     : SIM_SKIP)
                               : time_step(s);
    sm->counted += step == SIM_COUNT;
    return step;
}

void sim_sample_miss(mt_sim *s, unsigned li, uint32_t set)
{
    uint32_t *per_set = s->sampler->set_misses[li];
    if (per_set && per_set[set] < UINT32_MAX)
        per_set[set]++;
}

void sim_sample_finish(mt_sim *s)
{
    if (s->uncounted)
        end_warm(s);
    if (s->sampler->in_on)
        end_on(s);
}

/* ---- estimates ---- */

/* Two standard errors of an expansion estimate N x mean over n of N units
 * (sets or periods) whose values have sum and sum of squares given,
 * without replacement; relative to `total`, the estimate. */
static double error_bound(double sum, double sumsq, double n, double units, double total)
{
    if (n < 2 || total <= 0) /* no spread to measure, or nothing seen: no bound */
        return -1;
    double mean = sum / n;
    double var = (sumsq - n * mean * mean) / (n - 1);
    /* Never below a count's own (Poisson) spread: on walks' regular sweep
     * at 1/4 the sampled residues' D1 misses hardly differed, the stated
     * error was +-0.0%, and the exact count (133,650) lay 10 misses outside
     * the estimate (133,640; tests/sim_sampled.sh, 27 Nov 2026). */
    if (var < mean)
        var = mean;
    double finite = units > n ? 1 - n / units : 0;
    return 2 * units * sqrt(finite * var / n) / total;
}

/* Sets: the spread of misses over the sampled residues of level li (the
 * residues are what was drawn at random, each a cluster of sets: treating
 * the sets themselves as drawn would understate the error, as it did on
 * bench/sim.sh's trace at 1/8: L2 4.4% off, stated +-1.9%). */
static double sets_error(const mt_sim *s, unsigned li, double total)
{
    const struct sim_sampler *sm = s->sampler;
    const sim_level *L = &s->lv[li];
    uint32_t lines_per_longest = 1u << (sm->line_shift - L->line_shift);
    double *cluster = mt_xcalloc(sm->residues, sizeof *cluster);
    for (uint32_t set = 0; set < L->sets; set++)
        cluster[(set / lines_per_longest) % sm->residues] += sm->set_misses[li][set];
    double sum = 0, sumsq = 0, n = 0;
    for (uint64_t r = 0; r < sm->residues; r++)
        if (sm->sampled[r])
            sum += cluster[r], sumsq += cluster[r] * cluster[r], n++;
    free(cluster);
    return error_bound(sum, sumsq, n, (double)sm->residues, total);
}

static uint64_t scaled(uint64_t v, double f) { return (uint64_t)llround((double)v * f); }

static void scale_array(uint64_t *v, size_t n, double f)
{
    for (size_t i = 0; i < n; i++)
        v[i] = scaled(v[i], f);
}

/* Every count of a level x f; misses stay the sum of their causes. */
static void scale_level(mt_sim_level_stats *st, double f)
{
    uint64_t *counts[] = {&st->refs, &st->reads, &st->read_misses, &st->writes,
                          &st->write_misses, &st->fetches, &st->fetch_misses, &st->evictions,
                          &st->writebacks, &st->back_invalidations, &st->prefetches,
                          &st->prefetch_hits, &st->prefetch_unused, &st->lines_used};
    for (size_t i = 0; i < MT_ARRAY_LEN(counts); i++)
        *counts[i] = scaled(*counts[i], f);
    scale_array(st->cause, MT_SIM_NCAUSES, f);
    scale_array(st->spatial, MT_SIM_SPATIAL_BUCKETS, f);
    scale_array(st->temporal, MT_SIM_TEMPORAL_BUCKETS, f);
    st->misses = 0;
    for (int c = 0; c < MT_SIM_NCAUSES; c++)
        st->misses += st->cause[c];
}

static void scale_uses(mt_sim_object_use *u, size_t n, double f)
{
    for (size_t i = 0; i < n; i++) {
        u[i].lines = scaled(u[i].lines, f);
        u[i].bytes_used = scaled(u[i].bytes_used, f);
        u[i].reuses = scaled(u[i].reuses, f);
    }
}

static void scale_tallies(mt_sim *s, double f)
{
    for (size_t i = 0; i < s->npairs; i++) {
        s->pairs[i].refs = scaled(s->pairs[i].refs, f);
        for (unsigned li = 0; li < MT_SIM_MAX_LEVELS; li++)
            scale_array(s->pairs[i].misses[li], MT_SIM_NCAUSES, f);
    }
    for (size_t i = 0; i < s->nevictions; i++)
        s->evictions[i].count = scaled(s->evictions[i].count, f);
    scale_uses(s->uses, s->nuses, f);
    scale_uses(s->code_uses, s->ncode_uses, f);
}

const mt_sim_estimate *mt_sim_estimate_counts(mt_sim *s)
{
    struct sim_sampler *sm = s->sampler;
    if (!sm)
        return NULL;
    if (sm->estimated)
        return &sm->est;
    mt_sim_estimate *e = &sm->est;
    e->sample = sm->cfg;
    e->offered = sm->offered;
    e->counted = sm->counted;
    /* sets: the expansion estimator, K x the sampled sets' counts (the
     * sets sampled at random, it is unbiased; a ratio to the references
     * counted is not when references crowd into a few sets: on bench/sim.sh's
     * trace, whose writes favour some lines, it put L2's misses 25% high);
     * time: the references offered over those counted, period / on but for
     * the last period. */
    if (sm->cfg.mode == MT_SIM_SAMPLE_SETS)
        e->scale = sm->cfg.period;
    else
        e->scale = sm->counted ? (double)sm->offered / (double)sm->counted : 0;
    for (unsigned li = 0; li < s->nlevels; li++) {
        scale_level(&s->lv[li].stats, e->scale);
        double total = (double)s->lv[li].stats.misses;
        e->cold_start[li] = sm->cfg.mode == MT_SIM_SAMPLE_TIME && total > 0
                                ? (double)s->lv[li].stats.cause[MT_SIM_COLD] / total
                                : 0;
        if (sm->cfg.mode == MT_SIM_SAMPLE_SETS)
            e->error[li] = sets_error(s, li, total);
        else {
            /* units: the trace in slices of an on-period's length, one of
             * them sampled per period */
            double units = ceil((double)sm->offered / sm->cfg.on);
            e->error[li] = error_bound(sm->period[li].sum, sm->period[li].sumsq,
                                       (double)sm->periods, units, total);
        }
    }
    scale_tallies(s, e->scale);
    sm->estimated = true;
    return e;
}
