/* sim/fast_mp.c — the misses-only simulator of several processors
 * (mt_sim_new_misses_only with cpus > 1; sim.h, docs/SIMULATOR.md "Misses
 * only"): each CPU's private levels and the shared ones are misses-only
 * simulators of one CPU (fast.c), kept coherent by a MESI directory that
 * makes the full simulator's transitions (mp.c) and counts what they count
 * per CPU: misses per level, coherence misses per private level, true and
 * false sharing, invalidations sent and received, interventions made and
 * served, upgrades.  Exactly the full simulator's counts on the same
 * references; what it leaves out (3C causes, per-thread and per-object
 * coherence, shared lines' words, where references were served) the report
 * names.
 *
 * Conventions: one node (nodes > 1 is refused: the shared levels' copies
 * per node and the homes are the full simulator's); the machine is one
 * mp.c takes (sim_mp_check) and fast.c models (sim_fast_check).
 *
 * Where it saves over mp.c, besides fast.c's levels: a reference that skips
 * the directory.  A read within the line its D1 set used last is a hit of a
 * CPU that holds the line (only data references fill D1 when there is an
 * I1), so the directory would change nothing: no lookup.  A write within
 * that line is silent when its CPU holds the line Modified, which the
 * directory said at the CPU's last write to it through the directory and
 * no reference to the line has gone through the directory since (`mine`,
 * below).  On a line two CPUs referenced, the words such writes wrote are
 * kept aside and given their writer and a write clock when the CPU's
 * `mine` goes (the next directory reference to the line, the CPU's next
 * write through the directory, a flush): the same verdicts of true and
 * false sharing, as the clock is only compared within one line, and no
 * invalidation of the line (its CPUs' lost_at) came between. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define NO_CPU (-1)

/* The directory's entry of a line, as mp.c's (in D1's line size). */
typedef struct {
    uint32_t holders;  /* CPUs that may hold it (lines leave silently: checked before use) */
    uint32_t lost;     /* CPUs invalidated since they last held it */
    int8_t owner;      /* the CPU holding it Exclusive or Modified, NO_CPU */
    bool dirty;        /* the owner's copy is Modified */
    uint8_t first_cpu; /* the CPU that referenced it first */
    uint32_t shared;   /* index + 1 in lines, 0 while one CPU referenced it */
} fm_entry;

/* What a reference's lines decided before it went down its CPU's levels. */
typedef struct {
    bool coherence, true_sharing;
} fm_verdict;

struct sim_fast_mp {
    unsigned ncpus, nprivate;  /* private levels: the machine's first nprivate */
    int d1;                    /* D1's index among them */
    bool read_fast;            /* an I1 takes the fetches: D1 holds data lines only */
    mt_sim *cpu[MT_SIM_MAX_CPUS];
    sim_fast_top top[MT_SIM_MAX_CPUS]; /* each CPU's D1 for the MRU test, */
    bool top_ok;               /* when the test can be made (fast.c's sim_fast_top_of) */
    mt_sim *shared;            /* NULL: every level private */
    uint8_t cpu_map[64];
    unsigned ncpu_map;
    unsigned current;          /* the CPU of the references that follow */
    uint32_t thread;
    sim_map threads;           /* thread number + 1 -> 1: the threads seen */
    sim_thread_ids tids;
    uint32_t line_shift;
    sim_dir_index dir_index;   /* line -> index in dir */
    fm_entry *dir;
    size_t ndir, cap_dir;
    sim_word_writers *lines;   /* lines two CPUs referenced: their words' writers */
    size_t nlines, cap_lines;
    uint64_t clock;            /* writes to watched lines so far */
    uint64_t mine[MT_SIM_MAX_CPUS]; /* per CPU: line + 1 it holds Modified, with no directory
                                       reference to it since (0: none), */
    uint32_t mine_watched[MT_SIM_MAX_CPUS]; /* its index + 1 in lines when watched, */
    uint64_t pending[MT_SIM_MAX_CPUS]; /* the words its silent writes wrote since */
    mt_sim_cpu_stats stats[MT_SIM_MAX_CPUS];
    mt_sim_code_tally *sorted;
};

/* ---- the machine ---- */

int sim_fast_mp_check(const mt_sim_machine *m, mt_error *err)
{
    if (m->nodes > 1) {
        mt_error_set(err, "nodes = %u: the misses-only simulator models one node", m->nodes);
        return -1;
    }
    return sim_mp_check(m, err) != 0 ? -1 : sim_fast_check(m, err);
}

sim_fast_mp *sim_fast_mp_new(const mt_sim_machine *m)
{
    sim_fast_mp *fm = mt_xcalloc(1, sizeof *fm);
    mt_sim_machine cpu, shared;
    bool has_shared = sim_mp_machines(m, &cpu, &shared);
    mt_error err;
    fm->ncpus = m->cpus;
    for (unsigned c = 0; c < fm->ncpus; c++)
        fm->cpu[c] = mt_sim_new_misses_only(&cpu, &err); /* checked: cannot fail */
    if (has_shared)
        fm->shared = mt_sim_new_misses_only(&shared, &err);
    for (unsigned c = 0; c < fm->ncpus; c++)
        fm->top_ok = sim_fast_top_of(fm->cpu[c]->fast, &fm->top[c]);
    fm->nprivate = fm->cpu[0]->nlevels;
    fm->d1 = fm->cpu[0]->d1;
    fm->read_fast = m->i1.present;
    memcpy(fm->cpu_map, m->cpu_map, sizeof fm->cpu_map);
    fm->ncpu_map = m->ncpu_map;
    fm->line_shift = (uint32_t)__builtin_ctzll(m->d1.line);
    return fm;
}

void sim_fast_mp_free(sim_fast_mp *fm)
{
    if (!fm)
        return;
    for (unsigned c = 0; c < fm->ncpus; c++)
        mt_sim_free(fm->cpu[c]);
    mt_sim_free(fm->shared);
    sim_map_free(&fm->threads);
    free(fm->tids.ids);
    sim_map_free(&fm->dir_index.map);
    free(fm->dir);
    free(fm->lines);
    free(fm->sorted);
    free(fm);
}

unsigned sim_fast_mp_cpus(const sim_fast_mp *fm) { return fm->ncpus; }
unsigned sim_fast_mp_private_levels(const sim_fast_mp *fm) { return fm->nprivate; }
const mt_sim_cpu_stats *sim_fast_mp_cpu(const sim_fast_mp *fm, unsigned c)
{
    return c < fm->ncpus ? &fm->stats[c] : NULL;
}

/* ---- threads ---- */

void sim_fast_mp_set_thread(sim_fast_mp *fm, uint32_t k)
{
    if (k == fm->thread && fm->threads.n)
        return;
    fm->thread = k;
    fm->current = k < fm->ncpu_map ? fm->cpu_map[k] : k % fm->ncpus;
    if (sim_map_get(&fm->threads, (uint64_t)k + 1) == SIM_NONE) {
        sim_map_put(&fm->threads, (uint64_t)k + 1, 1);
        fm->stats[fm->current].threads++;
    }
}

void sim_fast_mp_set_tid(sim_fast_mp *fm, int32_t tid)
{
    sim_fast_mp_set_thread(fm, sim_thread_number(&fm->tids, tid));
}

/* ---- the directory (mp.c's transitions, without its per-object tallies) ---- */

static fm_entry *entry_of(sim_fast_mp *fm, uint64_t line)
{
    bool added;
    uint32_t i = sim_dir_lookup(&fm->dir_index, line, (uint32_t)fm->ndir, &added);
    if (added) {
        fm_entry e = {.owner = NO_CPU, .first_cpu = (uint8_t)fm->current};
        MT_PUSH(fm->dir, fm->ndir, fm->cap_dir, e);
    }
    return &fm->dir[i];
}

static sim_fast *levels_of(const sim_fast_mp *fm, unsigned c) { return fm->cpu[c]->fast; }

static void prune(sim_fast_mp *fm, fm_entry *e, uint64_t addr)
{
    for (uint32_t h = e->holders; h; h &= h - 1) {
        int d = __builtin_ctz(h);
        if (sim_fast_line_held(levels_of(fm, (unsigned)d), addr))
            continue;
        e->holders &= ~(1u << d);
        if (e->owner == d)
            e->owner = NO_CPU, e->dirty = false;
    }
}

static void intervene(sim_fast_mp *fm, const fm_entry *e, unsigned c)
{
    fm->stats[c].interventions++;
    fm->stats[e->owner].interventions_served++;
}

static void invalidate_others(sim_fast_mp *fm, fm_entry *e, sim_word_writers *w, unsigned c,
                              uint64_t addr)
{
    for (uint32_t h = e->holders & ~(1u << c); h; h &= h - 1) {
        int d = __builtin_ctz(h);
        sim_fast *f = levels_of(fm, (unsigned)d);
        for (uint32_t l = sim_fast_line_levels(f, addr); l; l &= l - 1)
            fm->stats[d].invalidations_received[__builtin_ctz(l)]++;
        sim_fast_line_invalidate(f, addr);
        fm->stats[c].invalidations_sent++;
        e->lost |= 1u << d;
        if (w)
            w->lost_at[d] = fm->clock;
    }
}

static void read_line(sim_fast_mp *fm, fm_entry *e, unsigned c)
{
    if (e->holders & (1u << c))
        return;
    if (e->owner != NO_CPU) {
        if (e->dirty)
            intervene(fm, e, c);
        e->owner = NO_CPU;
        e->dirty = false;
    }
    if (!e->holders)
        e->owner = (int8_t)c;
    e->holders |= 1u << c;
}

static void write_line(sim_fast_mp *fm, fm_entry *e, sim_word_writers *w, unsigned c,
                       uint64_t addr)
{
    bool held = e->holders & (1u << c);
    if (held && e->owner == (int)c) {
        e->dirty = true;
        return;
    }
    if (held)
        fm->stats[c].upgrades++;
    else if (e->owner != NO_CPU && e->dirty)
        intervene(fm, e, c);
    invalidate_others(fm, e, w, c, addr);
    e->holders = 1u << c;
    e->owner = (int8_t)c;
    e->dirty = true;
}

/* c's `mine` goes: the words its silent writes wrote take their writer. */
static void release_mine(sim_fast_mp *fm, unsigned c)
{
    if (fm->mine_watched[c])
        sim_words_written(&fm->lines[fm->mine_watched[c] - 1], fm->pending[c], c, ++fm->clock);
    fm->mine[c] = fm->pending[c] = fm->mine_watched[c] = 0;
}

/* One line of c's reference [ref, ref + size), before it goes down c's
 * levels: mp.c's coherence_line. */
static void coherence_line(sim_fast_mp *fm, unsigned c, uint64_t line, uint64_t ref,
                           uint32_t size, bool write, fm_verdict *v)
{
    uint64_t addr = line << fm->line_shift;
    fm_entry *e = entry_of(fm, line);
    if (e->owner != NO_CPU && fm->mine[e->owner] == line + 1)
        release_mine(fm, (unsigned)e->owner); /* the directory decides again */
    prune(fm, e, addr);
    if (!e->shared && e->first_cpu != c) {
        sim_word_writers w;
        sim_word_writers_init(&w);
        MT_PUSH(fm->lines, fm->nlines, fm->cap_lines, w);
        e->shared = (uint32_t)fm->nlines;
    }
    sim_word_writers *w = e->shared ? &fm->lines[e->shared - 1] : NULL;
    uint64_t words = w ? sim_words_of(fm->line_shift, addr, ref, size) : 0;
    if (!(e->holders & (1u << c)) && (e->lost & (1u << c))) {
        if (!v->coherence)
            *v = (fm_verdict){.coherence = true,
                              .true_sharing = w && sim_written_since_lost(w, words, c)};
        e->lost &= ~(1u << c);
    }
    if (!write) {
        read_line(fm, e, c);
        return;
    }
    write_line(fm, e, w, c, addr);
    if (w)
        sim_words_written(w, words, c, ++fm->clock);
    release_mine(fm, c);
    fm->mine[c] = line + 1;
    fm->mine_watched[c] = e->shared;
}

/* ---- references ---- */

/* A reference of the current CPU after the directory: down its levels,
 * on to the shared ones when it left them; its misses at those counted
 * (its own levels count its private ones). */
static void levels_ref(sim_fast_mp *fm, uint64_t addr, uint32_t size, mt_sim_kind kind,
                       uint32_t code, uint64_t *row, fm_verdict v)
{
    unsigned c = fm->current;
    unsigned missed = sim_fast_ref(levels_of(fm, c), addr, size, kind, row);
    if (v.coherence) {
        /* a data reference's levels: D1 and those below it, in order */
        for (unsigned l = 0; l < missed; l++)
            fm->stats[c].coherence[fm->d1 + l]++;
        v.true_sharing ? fm->stats[c].true_sharing++ : fm->stats[c].false_sharing++;
    }
    unsigned chain = fm->nprivate - (unsigned)fm->d1; /* a fetch's too: I1, then below D1 */
    if (missed < chain || !fm->shared)
        return;
    sim_fast *sh = fm->shared->fast;
    uint64_t *srow = sim_fast_row(sh, code);
    srow[0]++; /* a row with a reference is a tally; add_tallies drops these references */
    missed = sim_fast_ref(sh, addr, size, kind, srow);
    for (unsigned l = 0; l < missed; l++)
        fm->stats[c].misses[fm->nprivate + l]++;
}

/* A reference that did not take a fast path: the directory for each of
 * its lines (not for a fetch: code is read-only), then the levels. */
static void slow_ref(void *ctx, uint64_t addr, uint32_t size, mt_sim_kind kind, uint32_t code,
                     uint64_t *row)
{
    sim_fast_mp *fm = ctx;
    fm_verdict v = {0};
    if (kind != MT_SIM_IFETCH)
        for (uint64_t l = addr >> fm->line_shift; l <= (addr + size - 1) >> fm->line_shift; l++)
            coherence_line(fm, fm->current, l, addr, size, kind == MT_SIM_WRITE, &v);
    levels_ref(fm, addr, size, kind, code, row, v);
}

/* Whether a data reference [addr, end] of the current CPU takes no
 * directory and no level beyond D1's MRU test (the Notes at the top); a
 * silent write's words kept aside on a watched line. */
static inline bool fast_hit(void *ctx, bool mru, uint64_t addr, uint64_t end, bool write)
{
    sim_fast_mp *fm = ctx;
    if (!mru) /* (the batch's D1 test, or sim_fast_mp_access's) */
        return false;
    if (!write)
        return fm->read_fast;
    unsigned c = fm->current;
    uint64_t line = addr >> fm->line_shift;
    if (fm->mine[c] != line + 1)
        return false;
    if (fm->mine_watched[c])
        fm->pending[c] |= sim_words_of(fm->line_shift, line << fm->line_shift, addr,
                                       (uint32_t)(end - addr + 1));
    return true;
}

void sim_fast_mp_access(sim_fast_mp *fm, uint64_t addr, uint32_t size, mt_sim_kind kind,
                        uint32_t code)
{
    if (!fm->threads.n) /* no thread named yet: thread 0 */
        sim_fast_mp_set_thread(fm, fm->thread);
    sim_fast *f = levels_of(fm, fm->current);
    uint64_t *row = sim_fast_row(f, code);
    row[0]++;
    if (kind != MT_SIM_IFETCH && fast_hit(fm,
                                          fm->top_ok && sim_fast_top_hit(fm->top[fm->current], addr,
                                                                         addr + size - 1),
                                          addr, addr + size - 1, kind == MT_SIM_WRITE)) {
        sim_fast_count_top_hits(f, kind == MT_SIM_READ, kind == MT_SIM_WRITE);
        return;
    }
    slow_ref(fm, addr, size, kind, code, row);
}

/* slow_ref as the batch's miss: whether the reference lies within one line
 * of D1 does not matter here (the directory looks at every line). */
static void batch_slow_ref(void *ctx, uint64_t addr, uint32_t size, mt_sim_kind kind,
                           uint32_t code, uint64_t *row, bool one_line)
{
    (void)one_line;
    slow_ref(ctx, addr, size, kind, code, row);
}

/* A frame's plain references in a batch, as fast.c's sim_fast_records
 * (the same records taken, the same counts) with the fast paths above. */
uint32_t sim_fast_mp_records(sim_fast_mp *fm, const mt_trace_record *r, uint32_t n,
                             mt_trace_feed_counts *counts)
{
    if (!fm->threads.n)
        sim_fast_mp_set_thread(fm, fm->thread);
    if (!fm->top_ok)
        return 0;
    return sim_batch_records(fm, levels_of(fm, fm->current), fm->top[fm->current], r, n, counts,
                             sim_fast_row, fast_hit, batch_slow_ref);
}

void sim_fast_mp_flush(sim_fast_mp *fm)
{
    for (unsigned c = 0; c < fm->ncpus; c++)
        mt_sim_flush(fm->cpu[c]);
    if (fm->shared)
        mt_sim_flush(fm->shared);
    for (size_t i = 0; i < fm->ndir; i++)
        fm->dir[i] = (fm_entry){.owner = NO_CPU, .first_cpu = fm->dir[i].first_cpu,
                                .shared = fm->dir[i].shared};
    for (unsigned c = 0; c < fm->ncpus; c++)
        release_mine(fm, c);
}

/* ---- results ---- */

/* The machine's level totals into s's levels; each CPU's references and
 * misses at its private levels into its figures. */
void sim_fast_mp_finish(sim_fast_mp *fm, mt_sim *s)
{
    for (unsigned c = 0; c < fm->ncpus; c++) {
        mt_sim *h = fm->cpu[c];
        mt_sim_finish(h);
        fm->stats[c].refs = 0;
        for (unsigned l = 0; l < fm->nprivate; l++) {
            const mt_sim_level_stats *st = mt_sim_level(h, l);
            sim_add_level_stats(&s->lv[l].stats, st);
            fm->stats[c].misses[l] = st->misses;
            if ((int)l == h->d1 || (int)l == h->i1) /* every reference counts once at its top */
                fm->stats[c].refs += st->refs;
        }
    }
    if (!fm->shared)
        return;
    mt_sim_finish(fm->shared);
    for (unsigned l = 0; l < fm->shared->nlevels; l++)
        sim_add_level_stats(&s->lv[fm->nprivate + l].stats, mt_sim_level(fm->shared, l));
}

/* A hierarchy's code tallies added to the rows at *out (n of them, by id),
 * its levels from `base` on (the shared levels' references are the CPUs'
 * already). */
static void add_tallies(mt_sim_code_tally **out, size_t *n, size_t *cap, mt_sim *h,
                        unsigned base)
{
    size_t k;
    const mt_sim_code_tally *t = mt_sim_code_tallies(h, &k);
    for (size_t i = 0; i < k; i++) {
        mt_sim_code_tally row = {.code = t[i].code, .refs = base ? 0 : t[i].refs};
        for (unsigned l = 0; l + base < MT_SIM_MAX_LEVELS; l++)
            row.misses[base + l] = t[i].misses[l];
        MT_PUSH(*out, *n, *cap, row);
    }
}

static int compare_codes(const void *a, const void *b)
{
    uint32_t x = ((const mt_sim_code_tally *)a)->code, y = ((const mt_sim_code_tally *)b)->code;
    return x < y ? -1 : x > y;
}

const mt_sim_code_tally *sim_fast_mp_code_tallies(sim_fast_mp *fm, size_t *n)
{
    mt_sim_code_tally *all = NULL;
    size_t nall = 0, cap = 0;
    for (unsigned c = 0; c < fm->ncpus; c++)
        add_tallies(&all, &nall, &cap, fm->cpu[c], 0);
    if (fm->shared)
        add_tallies(&all, &nall, &cap, fm->shared, fm->nprivate);
    if (nall)
        qsort(all, nall, sizeof *all, compare_codes);
    size_t out = 0; /* the rows of one code summed */
    for (size_t i = 0; i < nall; i++) {
        if (out && all[out - 1].code == all[i].code) {
            all[out - 1].refs += all[i].refs;
            for (unsigned l = 0; l < MT_SIM_MAX_LEVELS; l++)
                all[out - 1].misses[l] += all[i].misses[l];
        } else {
            all[out++] = all[i];
        }
    }
    free(fm->sorted);
    fm->sorted = all;
    *n = out;
    return all;
}
