/* sim/mp.c — processors: one hierarchy of private levels per CPU, the shared
 * levels below them (one copy per node), a MESI directory keeping the
 * private levels coherent, coherence misses told true from false sharing,
 * and where each reference was served: caches, local or remote memory, a
 * dirty copy in another node (sim.h, "processors", "nodes and home memory";
 * docs/SIMULATOR.md, "Processors", "Nodes").  Each CPU's private levels and
 * each node's shared levels are simulators of their own (sim.c, unchanged):
 * a reference goes to its CPU's, and on to its node's when it left the
 * private levels. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define NO_CPU (-1)

/* A line two CPUs referenced: the public record, and what tells true from
 * false sharing. */
typedef struct {
    mt_sim_shared_line pub;
    sim_word_writers w;
} shared_line;

/* The directory's entry of a line (in D1's line size). */
typedef struct {
    uint32_t holders;  /* CPUs that may hold it: lines leave private levels silently,
                          so a holder is checked before it counts */
    uint32_t lost;     /* CPUs invalidated since they last held it */
    int8_t owner;      /* the CPU holding it Exclusive or Modified, NO_CPU */
    bool dirty;        /* the owner's copy is Modified */
    uint8_t first_cpu; /* the CPU that referenced it first */
    uint32_t shared;   /* index + 1 in mp->lines, 0 while one CPU referenced it */
} dir_entry;

/* What a reference's coherence lines decided before it went down. */
typedef struct {
    bool coherence, true_sharing;
} verdict;

struct sim_mp {
    unsigned ncpus, nprivate;  /* private levels are the outer levels 0..nprivate-1 */
    uint8_t cpu_map[64];       /* the machine's: the CPU of thread k < ncpu_map */
    unsigned ncpu_map;
    mt_sim *cpu[MT_SIM_MAX_CPUS];
    unsigned nnodes;           /* CPU c on node c * nnodes / ncpus */
    mt_sim *shared[MT_SIM_MAX_CPUS]; /* per node; NULL when every level is private */
    mt_sim_machine machine;    /* the description: placement, latencies */
    sim_homes homes;           /* page -> home node */
    int supplier;              /* the CPU whose Modified copy supplied the reference
                                  being simulated, NO_CPU */
    mt_sim_cpu_stats stats[MT_SIM_MAX_CPUS];
    unsigned current;          /* the CPU of the references that follow */
    uint32_t line_shift, words; /* D1's line; its 8-byte words */
    sim_dir_index dir_index;   /* line -> index in dir */
    dir_entry *dir;
    size_t ndir, cap_dir;
    shared_line *lines;
    size_t nlines, cap_lines;
    uint32_t code, data;       /* the objects of the reference being simulated */
    sim_map pair_index;        /* code << 32 | data -> index in pairs */
    mt_sim_coherence_pair *pairs;
    size_t npairs, cap_pairs;
    sim_map threads;           /* thread number + 1 -> its index in thread_stats */
    uint32_t thread;           /* the thread of the references that follow */
    mt_sim_thread_stats *thread_stats; /* per thread, in order of appearance */
    size_t nthread_stats, cap_thread_stats;
    mt_sim_cpu_stats *ts;      /* the current thread's tallies (in thread_stats) */
    sim_thread_ids tids;       /* a traced run's thread ids */
    uint64_t clock;            /* writes to shared lines so far */
    sim_map served_index[MT_SIM_MAX_CPUS]; /* per CPU: code << 32 | data -> index in served */
    uint64_t last_served_key[MT_SIM_MAX_CPUS]; /* per CPU: the pair of its previous
                                                  reference, its index + 1 (0: none) */
    uint32_t last_served[MT_SIM_MAX_CPUS];
    mt_sim_served_pair *served;
    size_t nserved, cap_served;
    void *sorted[3];           /* what the accessors returned: pairs, lines, served */
    /* Per hierarchy (CPU c: c; node n's shared levels: ncpus + n), its levels'
     * misses and misses by cause when count_misses last looked (see there). */
    uint64_t seen_total[2 * MT_SIM_MAX_CPUS]; /* its level_misses */
    uint64_t seen_misses[2 * MT_SIM_MAX_CPUS][MT_SIM_MAX_LEVELS];
    uint64_t seen_cause[2 * MT_SIM_MAX_CPUS][MT_SIM_MAX_LEVELS][MT_SIM_NCAUSES];
};

/* ---- the machine ---- */

/* Index in m->lower of the first shared level (m->nlower: none), -1 when the
 * named level is not there. */
static int first_shared(const mt_sim_machine *m)
{
    if (!m->shared[0])
        return m->nlower ? (int)m->nlower - 1 : 0;
    if (!strcmp(m->shared, "none"))
        return (int)m->nlower;
    for (unsigned i = 0; i < m->nlower; i++)
        if (!strcmp(m->lower[i].name, m->shared))
            return (int)i;
    return -1;
}

int sim_mp_check(const mt_sim_machine *m, mt_error *err)
{
    if (m->cpus <= 1)
        return 0;
    int from = first_shared(m);
    if (from < 0) {
        mt_error_set(err, "shared: %s: no such level in this machine", m->shared);
        return -1;
    }
    for (unsigned i = 0; i < m->ncpu_map; i++)
        if (m->cpu_map[i] >= m->cpus) {
            mt_error_set(err, "cpu_map: thread %u on CPU %u, of cpus = %u", i, m->cpu_map[i],
                         m->cpus);
            return -1;
        }
    if (m->straddle_line) {
        mt_error_set(err, "cpus = %u: takes straddle = access", m->cpus);
        return -1;
    }
    if (m->d1.line > MT_SIM_MAX_WORDS << SIM_WORD_SHIFT) {
        mt_error_set(err, "cpus = %u: D1's line is above %d bytes", m->cpus,
                     MT_SIM_MAX_WORDS << SIM_WORD_SHIFT);
        return -1;
    }
    const mt_sim_level_desc *private_levels[MT_SIM_MAX_LEVELS];
    unsigned n = 0;
    if (m->i1.present)
        private_levels[n++] = &m->i1;
    for (int i = 0; i < from; i++)
        private_levels[n++] = &m->lower[i];
    for (unsigned i = 0; i < n; i++)
        if (private_levels[i]->line != m->d1.line) {
            mt_error_set(err, "cpus = %u: private level %s has not D1's line (the coherence unit)",
                         m->cpus, private_levels[i]->name);
            return -1;
        }
    if (from < (int)m->nlower && m->lower[from].inclusion != MT_SIM_NON_INCLUSIVE) {
        mt_error_set(err, "cpus = %u: shared level %s must be non-inclusive", m->cpus,
                     m->lower[from].name);
        return -1;
    }
    return 0;
}

/* The private levels of one CPU, or the shared ones (the first as "D1"). */
bool sim_mp_machines(const mt_sim_machine *m, mt_sim_machine *cpu, mt_sim_machine *shared)
{
    unsigned from = (unsigned)first_shared(m);
    *cpu = *m;
    cpu->cpus = 1;
    cpu->nlower = from;
    if (from >= m->nlower)
        return false;
    *shared = *m;
    shared->cpus = 1;
    shared->i1.present = false;
    shared->d1 = m->lower[from];
    shared->d1.inclusion = MT_SIM_NON_INCLUSIVE;
    shared->ntlb = 0; /* the CPUs translate; a shared level sees physical lines */
    shared->itlb.present = false;
    shared->nlower = m->nlower - from - 1;
    for (unsigned i = 0; i < shared->nlower; i++)
        shared->lower[i] = m->lower[from + 1 + i];
    return true;
}

void sim_mp_new(mt_sim *s, const mt_sim_machine *m)
{
    struct sim_mp *mp = mt_xcalloc(1, sizeof *mp);
    mt_sim_machine p, sh;
    bool has_shared = sim_mp_machines(m, &p, &sh);
    mp->ncpus = m->cpus;
    mp->nnodes = m->nodes ? m->nodes : 1;
    mp->machine = *m;
    sim_homes_init(&mp->homes, &mp->machine);
    memcpy(mp->cpu_map, m->cpu_map, sizeof mp->cpu_map);
    mp->ncpu_map = m->ncpu_map;
    for (unsigned c = 0; c < mp->ncpus; c++)
        mp->cpu[c] = mt_sim_new(&p);
    mp->nprivate = mt_sim_level_count(mp->cpu[0]);
    if (has_shared) {
        for (unsigned n = 0; n < mp->nnodes; n++)
            mp->shared[n] = mt_sim_new(&sh);
    }
    mp->line_shift = (uint32_t)__builtin_ctzll(m->d1.line);
    mp->words = (m->d1.line + 7) >> SIM_WORD_SHIFT;
    s->mp = mp;
}

void sim_mp_free(struct sim_mp *mp)
{
    if (!mp)
        return;
    for (unsigned c = 0; c < mp->ncpus; c++)
        mt_sim_free(mp->cpu[c]);
    for (unsigned n = 0; n < mp->nnodes; n++)
        mt_sim_free(mp->shared[n]);
    sim_homes_free(&mp->homes);
    for (unsigned c = 0; c < mp->ncpus; c++)
        sim_map_free(&mp->served_index[c]);
    free(mp->served);
    sim_map_free(&mp->dir_index.map);
    sim_map_free(&mp->pair_index);
    sim_map_free(&mp->threads);
    free(mp->dir);
    free(mp->lines);
    free(mp->pairs);
    free(mp->tids.ids);
    free(mp->thread_stats);
    for (size_t i = 0; i < MT_ARRAY_LEN(mp->sorted); i++)
        free(mp->sorted[i]);
    free(mp);
}

unsigned mt_sim_cpus(const mt_sim *s)
{
    return s->fast_mp ? sim_fast_mp_cpus(s->fast_mp) : s->mp ? s->mp->ncpus : 1;
}

unsigned mt_sim_private_levels(const mt_sim *s)
{
    return s->fast_mp ? sim_fast_mp_private_levels(s->fast_mp)
           : s->mp    ? s->mp->nprivate
                      : mt_sim_level_count(s);
}

const mt_sim_cpu_stats *mt_sim_cpu(const mt_sim *s, unsigned cpu)
{
    if (s->fast_mp)
        return sim_fast_mp_cpu(s->fast_mp, cpu);
    return s->mp && cpu < s->mp->ncpus ? &s->mp->stats[cpu] : NULL;
}

const mt_sim_thread_stats *mt_sim_threads(const mt_sim *s, size_t *n)
{
    *n = s->mp ? s->mp->nthread_stats : 0;
    return s->mp ? s->mp->thread_stats : NULL;
}

unsigned mt_sim_nodes(const mt_sim *s) { return s->mp ? s->mp->nnodes : 1; }

static unsigned node_of(const struct sim_mp *mp, unsigned cpu)
{
    return cpu * mp->nnodes / mp->ncpus;
}

unsigned mt_sim_cpu_node(const mt_sim *s, unsigned cpu) { return s->mp ? node_of(s->mp, cpu) : 0; }

const mt_sim_machine *mt_sim_mp_machine(const mt_sim *s) { return s->mp ? &s->mp->machine : NULL; }

/* Hierarchy i of the machine: the CPUs' private levels, then the nodes'
 * shared ones (NULL when there are none); *base: the index of its first
 * level among the machine's. */
static mt_sim *hierarchy(const struct sim_mp *mp, unsigned i, unsigned *base)
{
    *base = i < mp->ncpus ? 0 : mp->nprivate;
    return i < mp->ncpus ? mp->cpu[i] : mp->shared[i - mp->ncpus];
}

/* ---- threads ---- */

void mt_sim_set_thread(mt_sim *s, uint32_t k)
{
    struct sim_mp *mp = s->mp;
    if (s->fast_mp) {
        sim_fast_mp_set_thread(s->fast_mp, k);
        return;
    }
    if (!mp || (k == mp->thread && mp->threads.n))
        return;
    mp->thread = k;
    mp->current = k < mp->ncpu_map ? mp->cpu_map[k] : k % mp->ncpus;
    uint32_t i = sim_map_get(&mp->threads, (uint64_t)k + 1);
    if (i == SIM_NONE) {
        i = (uint32_t)mp->nthread_stats;
        mt_sim_thread_stats t = {.thread = k, .cpu = mp->current, .stats = {.threads = 1}};
        MT_PUSH(mp->thread_stats, mp->nthread_stats, mp->cap_thread_stats, t);
        sim_map_put(&mp->threads, (uint64_t)k + 1, i);
        mp->stats[mp->current].threads++;
    }
    mp->ts = &mp->thread_stats[i].stats;
}

uint32_t sim_thread_number(sim_thread_ids *t, int32_t tid)
{
    size_t k = 0;
    while (k < t->n && t->ids[k] != tid) /* a handful of threads */
        k++;
    if (k == t->n)
        MT_PUSH(t->ids, t->n, t->cap, tid);
    return (uint32_t)k;
}

void mt_sim_set_tid(mt_sim *s, int32_t tid)
{
    if (s->fast_mp)
        sim_fast_mp_set_tid(s->fast_mp, tid);
    else if (s->mp)
        mt_sim_set_thread(s, sim_thread_number(&s->mp->tids, tid));
}

bool mt_sim_set_policy(mt_sim *s, uint32_t mode, uint64_t nodes)
{
    return s->mp && sim_homes_set_policy(&s->mp->homes, s->mp->thread, mode, nodes);
}

bool mt_sim_bind(mt_sim *s, uint64_t start, uint64_t len, uint32_t mode, uint64_t nodes,
                 uint32_t flags)
{
    struct sim_mp *mp = s->mp;
    return mp && sim_homes_bind(&mp->homes, start, len, mode, nodes, flags,
                                node_of(mp, mp->current));
}

bool mt_sim_move_page(mt_sim *s, uint64_t addr, uint32_t node)
{
    return s->mp && sim_homes_move(&s->mp->homes, addr, node);
}

bool mt_sim_inherit_policy(mt_sim *s, int32_t creator)
{
    struct sim_mp *mp = s->mp;
    for (size_t k = 0; mp && k < mp->tids.n; k++)
        if (mp->tids.ids[k] == creator) {
            sim_homes_inherit(&mp->homes, (uint32_t)k, mp->thread);
            return true;
        }
    return false;
}

uint32_t sim_mp_thread(const mt_sim *s) { return s->mp ? s->mp->thread : 0; }

void sim_mp_home(mt_sim *s, uint64_t page, unsigned node)
{
    if (s->mp)
        sim_homes_home(&s->mp->homes, page, node);
}

/* ---- the directory ---- */

/* The line's entry, made at its first reference (sim_dir_lookup). */
static dir_entry *entry_of(struct sim_mp *mp, uint64_t line)
{
    bool added;
    uint32_t i = sim_dir_lookup(&mp->dir_index, line, (uint32_t)mp->ndir, &added);
    if (added) {
        dir_entry e = {.owner = NO_CPU, .first_cpu = (uint8_t)mp->current};
        MT_PUSH(mp->dir, mp->ndir, mp->cap_dir, e);
    }
    return &mp->dir[i];
}

/* A second CPU references the line: from now on its words are watched. */
static shared_line *share(struct sim_mp *mp, dir_entry *e, uint64_t line)
{
    shared_line sh = {.pub = {.addr = line << mp->line_shift, .words = mp->words}};
    sim_word_writers_init(&sh.w);
    MT_PUSH(mp->lines, mp->nlines, mp->cap_lines, sh);
    e->shared = (uint32_t)mp->nlines;
    return &mp->lines[mp->nlines - 1];
}

/* Holders whose private levels let the line go (silently) are dropped. */
static void prune(struct sim_mp *mp, dir_entry *e, uint64_t addr)
{
    for (uint32_t h = e->holders; h; h &= h - 1) {
        int d = __builtin_ctz(h);
        if (sim_line_held(mp->cpu[d], addr))
            continue;
        e->holders &= ~(1u << d);
        if (e->owner == d)
            e->owner = NO_CPU, e->dirty = false; /* a Modified line was written back */
    }
}

void sim_word_writers_init(sim_word_writers *w)
{
    memset(w, 0, sizeof *w);
    memset(w->writer, NO_CPU, sizeof w->writer);
}

bool sim_written_since_lost(const sim_word_writers *w, uint64_t words, unsigned c)
{
    for (; words; words &= words - 1) {
        int i = __builtin_ctzll(words);
        if (w->writer[i] != NO_CPU && w->writer[i] != (int)c && w->written_at[i] > w->lost_at[c])
            return true;
    }
    return false;
}

void sim_words_written(sim_word_writers *w, uint64_t words, unsigned c, uint64_t clock)
{
    for (; words; words &= words - 1) {
        w->written_at[__builtin_ctzll(words)] = clock;
        w->writer[__builtin_ctzll(words)] = (int8_t)c;
    }
}

/* The coherence tallies of the reference being simulated's (code, data)
 * pair (valid until the next call: the array grows). */
static mt_sim_coherence_pair *pair_of(struct sim_mp *mp)
{
    uint64_t key = (uint64_t)mp->code << 32 | mp->data;
    uint32_t i = sim_map_get(&mp->pair_index, key);
    if (i == SIM_NONE) {
        mt_sim_coherence_pair p = {.code = mp->code, .data = mp->data};
        i = (uint32_t)mp->npairs;
        MT_PUSH(mp->pairs, mp->npairs, mp->cap_pairs, p);
        sim_map_put(&mp->pair_index, key, i);
    }
    return &mp->pairs[i];
}

/* The owner's Modified copy supplies the line to c (a three-hop miss). */
static void intervene(struct sim_mp *mp, dir_entry *e, shared_line *sh, unsigned c, uint64_t addr)
{
    mp->stats[c].interventions++;
    mp->ts->interventions++;
    pair_of(mp)->interventions++;
    mp->stats[e->owner].interventions_served++;
    if (mp->supplier == NO_CPU)
        mp->supplier = e->owner;
    if (sh)
        sh->pub.interventions++;
    sim_line_clean(mp->cpu[e->owner], addr);
}

/* c writes: every other holder's copy goes, at every level holding it. */
static void invalidate_others(struct sim_mp *mp, dir_entry *e, shared_line *sh, unsigned c,
                              uint64_t addr)
{
    for (uint32_t h = e->holders & ~(1u << c); h; h &= h - 1) {
        int d = __builtin_ctz(h);
        for (uint32_t l = sim_line_levels(mp->cpu[d], addr); l; l &= l - 1)
            mp->stats[d].invalidations_received[__builtin_ctz(l)]++;
        sim_line_invalidate(mp->cpu[d], addr);
        mp->stats[c].invalidations_sent++;
        mp->ts->invalidations_sent++;
        pair_of(mp)->invalidations++;
        e->lost |= 1u << d;
        if (sh) { /* always there: d and c both referenced the line */
            sh->w.lost_at[d] = mp->clock;
            sh->pub.invalidations++;
        }
    }
}

/* c writes: the copies other nodes' shared levels hold go too (a node's
 * own copy stays: its CPUs' private levels sit above it). */
static void invalidate_other_nodes(struct sim_mp *mp, unsigned c, uint64_t addr)
{
    for (unsigned n = 0; n < mp->nnodes; n++)
        if (n != node_of(mp, c) && mp->shared[n] && sim_line_held(mp->shared[n], addr))
            sim_line_invalidate(mp->shared[n], addr);
}

static void read_line(struct sim_mp *mp, dir_entry *e, shared_line *sh, unsigned c,
                      uint64_t addr)
{
    if (e->holders & (1u << c))
        return;
    if (e->owner != NO_CPU) { /* Exclusive or Modified elsewhere: both Shared now */
        if (e->dirty)
            intervene(mp, e, sh, c, addr);
        e->owner = NO_CPU;
        e->dirty = false;
    }
    if (!e->holders)
        e->owner = (int8_t)c; /* Exclusive */
    e->holders |= 1u << c;
}

static void write_line(struct sim_mp *mp, dir_entry *e, shared_line *sh, unsigned c,
                       uint64_t addr)
{
    bool mine = e->holders & (1u << c);
    if (mine && e->owner == (int)c) { /* Exclusive or Modified: silent */
        if (!e->dirty) /* other nodes' shared levels may keep clean copies of an E line */
            invalidate_other_nodes(mp, c, addr);
        e->dirty = true;
        return;
    }
    if (mine) { /* Shared: an upgrade */
        mp->stats[c].upgrades++;
        mp->ts->upgrades++;
        pair_of(mp)->upgrades++;
        if (sh)
            sh->pub.upgrades++;
    } else if (e->owner != NO_CPU && e->dirty)
        intervene(mp, e, sh, c, addr);
    invalidate_others(mp, e, sh, c, addr);
    invalidate_other_nodes(mp, c, addr);
    e->holders = 1u << c;
    e->owner = (int8_t)c;
    e->dirty = true;
}

/* One line of c's reference [ref, ref + size), before the reference goes
 * down c's levels: the protocol's transitions, and whether it is a
 * coherence miss (c lost the line to an invalidation), true or false. */
static void coherence_line(struct sim_mp *mp, unsigned c, uint64_t line, uint64_t ref,
                           uint32_t size, bool write, uint32_t data, verdict *v)
{
    uint64_t addr = line << mp->line_shift;
    dir_entry *e = entry_of(mp, line);
    prune(mp, e, addr);
    shared_line *sh = e->shared ? &mp->lines[e->shared - 1] : NULL;
    if (!sh && e->first_cpu != c)
        sh = share(mp, e, line);
    uint64_t words = sh ? sim_words_of(mp->line_shift, addr, ref, size) : 0;
    if (!(e->holders & (1u << c)) && (e->lost & (1u << c))) {
        bool true_sharing = sh && sim_written_since_lost(&sh->w, words, c);
        if (!v->coherence)
            *v = (verdict){.coherence = true, .true_sharing = true_sharing};
        if (sh)
            true_sharing ? sh->pub.true_sharing++ : sh->pub.false_sharing++;
        e->lost &= ~(1u << c);
    }
    if (write)
        write_line(mp, e, sh, c, addr);
    else
        read_line(mp, e, sh, c, addr);
    if (!sh)
        return;
    sh->pub.data = data;
    if (!write) {
        sh->pub.read_words[c] |= words;
        return;
    }
    sh->pub.written_words[c] |= words;
    sim_words_written(&sh->w, words, c, ++mp->clock);
}

/* ---- references ---- */

/* d misses of cause k at level l into a CPU's or a thread's tallies, a
 * coherence miss's moved from its 3C cause (private levels only). */
static void add_misses(mt_sim_cpu_stats *t, unsigned l, int k, uint64_t d, bool coherence)
{
    t->misses[l] += d;
    t->cause[l][k] += d;
    if (coherence) {
        t->cause[l][k]--;
        t->coherence[l]++;
    }
}

/* The misses hierarchy `hi` (h) counted since count_misses last looked at
 * it, into c's and its thread's tallies (from the machine's level of h's
 * first on), a
 * coherence miss moved from its 3C cause to coherence at each level it
 * missed; whether the reference left h (missed at a last level); *missed:
 * at how many levels it missed.  A level's counts change only in the
 * mt_sim_access calls of sim_mp_access (count_ref, the one place counting
 * a miss, counts misses and its cause together), and each is followed by
 * this: so the difference from what was seen last is this reference's,
 * and a level whose misses did not move is passed over.  Measured
 * (callgrind instructions a record, the whole of `mtool sim --set cpus=2
 * $GEOMETRY -- sharing-gcc-O2 200000`, 1.2 M records, bench/trace.sh's
 * Cachegrind geometry), against a copy of every level's causes before each
 * reference and their difference after: 2062 -> 1637; bench/mp_same.sh's
 * din trace 2651 -> 2452. */
static bool count_misses(struct sim_mp *mp, unsigned hi, const verdict *v, unsigned *missed)
{
    unsigned base;
    const mt_sim *h = hierarchy(mp, hi, &base);
    bool left = false;
    *missed = 0;
    /* A hit, at once: count_misses 130 -> 77 callgrind instructions a
     * record (as above, though that run had 51,552 invalidations a CPU,
     * the one before 2); the din trace 2341 -> 2319 for the whole. */
    if (h->level_misses == mp->seen_total[hi])
        return false;
    mp->seen_total[hi] = h->level_misses;
    for (unsigned l = 0; l < h->nlevels; l++) {
        const mt_sim_level_stats *st = &h->lv[l].stats;
        if (st->misses == mp->seen_misses[hi][l])
            continue;
        mp->seen_misses[hi][l] = st->misses;
        uint64_t *seen = mp->seen_cause[hi][l];
        for (int k = 0; k < MT_SIM_NCAUSES; k++) {
            uint64_t d = st->cause[k] - seen[k];
            if (!d)
                continue;
            seen[k] = st->cause[k];
            add_misses(&mp->stats[mp->current], base + l, k, d, v->coherence && !base);
            add_misses(mp->ts, base + l, k, d, v->coherence && !base);
        }
        ++*missed;
        left |= h->lv[l].below < 0;
    }
    return left;
}

/* c's (code, data) pair's index + 1 in mp->served, found or added (the
 * pair of c's previous reference being another). */
static uint32_t served_pair(struct sim_mp *mp, unsigned c, uint32_t code, uint32_t data)
{
    uint64_t key = (uint64_t)code << 32 | data;
    uint32_t i = sim_map_get(&mp->served_index[c], key);
    if (i == SIM_NONE) {
        mt_sim_served_pair p = {.code = code, .data = data, .cpu = c};
        i = (uint32_t)mp->nserved;
        MT_PUSH(mp->served, mp->nserved, mp->cap_served, p);
        sim_map_put(&mp->served_index[c], key, i);
    }
    mp->last_served_key[c] = key;
    mp->last_served[c] = i + 1;
    return i + 1;
}

/* Inlined, the lookup out of line: 1330 -> 1274
 * callgrind instructions a record (as count_misses); bench/mp_same.sh's
 * din trace 2364 -> 2338. */
static inline void tally_served(struct sim_mp *mp, uint32_t code, uint32_t data,
                                mt_sim_served at)
{
    unsigned c = mp->current;
    mp->stats[c].served[at]++;
    mp->ts->served[at]++;
    uint64_t key = (uint64_t)code << 32 | data;
    uint32_t i = mp->last_served[c] && mp->last_served_key[c] == key /* the common case: a loop */
                     ? mp->last_served[c]
                     : served_pair(mp, c, code, data);
    mp->served[i - 1].served[at]++;
}

/* The home of a reference reaching memory or another cache, by its first
 * byte; every page it spans is homed now (the toucher's node first touch). */
static unsigned home_of(struct sim_mp *mp, uint64_t addr, uint32_t size, unsigned toucher)
{
    unsigned home = sim_home_of(&mp->homes, addr, toucher, mp->thread);
    sim_home_of(&mp->homes, addr + size - 1, toucher, mp->thread);
    return home;
}

/* Where a reference that left c's private levels was served: a Modified
 * copy elsewhere (in c's node, two hops with c's or the supplier's node the
 * home, else three), c's node's shared levels, or the home's memory. */
static mt_sim_served beyond_private(struct sim_mp *mp, unsigned c, uint64_t addr, uint32_t size,
                                    bool memory)
{
    unsigned node = node_of(mp, c);
    if (mp->supplier != NO_CPU && node_of(mp, (unsigned)mp->supplier) == node)
        return MT_SIM_AT_NODE;
    if (mp->supplier == NO_CPU && !memory)
        return MT_SIM_AT_NODE;
    unsigned home = mp->nnodes > 1 ? home_of(mp, addr, size, node) : 0;
    if (mp->supplier == NO_CPU)
        return home == node ? MT_SIM_AT_LOCAL : MT_SIM_AT_REMOTE;
    return home == node || home == node_of(mp, (unsigned)mp->supplier) ? MT_SIM_AT_REMOTE_DIRTY
                                                                       : MT_SIM_AT_THREE_HOP;
}

void sim_mp_access(mt_sim *s, uint64_t addr, uint32_t size, mt_sim_kind kind, uint32_t code,
                   uint32_t data, uint64_t pc)
{
    struct sim_mp *mp = s->mp;
    if (!mp->threads.n) /* no thread named yet: thread 0 */
        mt_sim_set_thread(s, mp->thread);
    unsigned c = mp->current;
    mp->stats[c].refs++;
    mp->ts->refs++;
    mp->supplier = NO_CPU;
    mp->code = code;
    mp->data = data;
    verdict v = {0};
    if (kind != MT_SIM_IFETCH) /* code is read-only: no coherence (sim.h) */
        for (uint64_t l = addr >> mp->line_shift; l <= (addr + size - 1) >> mp->line_shift; l++)
            coherence_line(mp, c, l, addr, size, kind == MT_SIM_WRITE, data, &v);
    mt_sim_access(mp->cpu[c], addr, size, kind, code, data, pc);
    unsigned missed;
    bool left = count_misses(mp, c, &v, &missed);
    if (v.coherence) {
        v.true_sharing ? mp->stats[c].true_sharing++ : mp->stats[c].false_sharing++;
        v.true_sharing ? mp->ts->true_sharing++ : mp->ts->false_sharing++;
        v.true_sharing ? pair_of(mp)->true_sharing++ : pair_of(mp)->false_sharing++;
    }
    if (!left) {
        tally_served(mp, code, data, missed ? MT_SIM_AT_PRIVATE : MT_SIM_AT_L1);
        return;
    }
    unsigned node = node_of(mp, c);
    bool memory = true;
    if (mp->shared[node]) {
        mt_sim_access(mp->shared[node], addr, size, kind, code, data, pc);
        verdict none = {0};
        memory = count_misses(mp, mp->ncpus + node, &none, &missed);
    }
    tally_served(mp, code, data, beyond_private(mp, c, addr, size, memory));
}

void sim_mp_flush(mt_sim *s)
{
    struct sim_mp *mp = s->mp;
    for (unsigned c = 0; c < mp->ncpus; c++)
        mt_sim_flush(mp->cpu[c]);
    for (unsigned n = 0; n < mp->nnodes; n++)
        if (mp->shared[n])
            mt_sim_flush(mp->shared[n]);
    for (size_t i = 0; i < mp->ndir; i++) {
        dir_entry *e = &mp->dir[i];
        e->holders = e->lost = 0;
        e->owner = NO_CPU;
        e->dirty = false;
    }
}

/* ---- the totals ---- */

/* Every field after desc is a uint64_t count. */
void sim_add_level_stats(mt_sim_level_stats *to, const mt_sim_level_stats *from)
{
    _Static_assert((sizeof *to - offsetof(mt_sim_level_stats, refs)) % sizeof(uint64_t) == 0,
                   "a level's counts are uint64_t");
    uint64_t *t = &to->refs;
    const uint64_t *f = &from->refs;
    size_t n = (sizeof *to - offsetof(mt_sim_level_stats, refs)) / sizeof(uint64_t);
    for (size_t i = 0; i < n; i++)
        t[i] += f[i];
}

/* A tally's records: `keys` uint32_t keys, then uint64_t counts from
 * `counts` on (sim.h's pairs, evictions, object uses). */
typedef struct {
    size_t size, keys, counts;
} record_shape;

static size_t merge_keys; /* for compare_records: qsort takes no context */

static int compare_records(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    for (size_t i = 0; i < merge_keys; i++)
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    return 0;
}

/* Records gathered from the CPUs' and the shared simulators, sorted; those
 * of the same keys summed into one.  Returns how many are left. */
static size_t combine_records(void *items, size_t n, const record_shape *shape)
{
    merge_keys = shape->keys;
    if (n)
        qsort(items, n, shape->size, compare_records);
    char *base = items;
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        char *r = base + i * shape->size;
        char *last = base + (out ? out - 1 : 0) * shape->size;
        if (out && !memcmp(r, last, shape->keys * sizeof(uint32_t))) {
            uint64_t *t = (uint64_t *)(last + shape->counts);
            const uint64_t *f = (const uint64_t *)(r + shape->counts);
            for (size_t k = 0; k < (shape->size - shape->counts) / sizeof(uint64_t); k++)
                t[k] += f[k];
        } else
            memmove(base + out++ * shape->size, r, shape->size);
    }
    return out;
}

/* Every hierarchy's pairs: the private levels' as they are, the shared
 * levels' moved below them (their references are the CPUs' already). */
static void merge_pairs(mt_sim *s, struct sim_mp *mp)
{
    free(s->pairs);
    s->pairs = NULL;
    s->npairs = s->cap_pairs = 0;
    for (unsigned c = 0; c < mp->ncpus + mp->nnodes; c++) {
        unsigned base;
        mt_sim *h = hierarchy(mp, c, &base);
        if (!h)
            continue;
        size_t n;
        const mt_sim_pair *p = mt_sim_pairs(h, &n);
        for (size_t i = 0; i < n; i++) {
            mt_sim_pair q = p[i];
            if (base) {
                memset(q.misses, 0, sizeof q.misses);
                q.refs = 0;
                for (unsigned l = 0; l + mp->nprivate < MT_SIM_MAX_LEVELS; l++)
                    memcpy(q.misses[mp->nprivate + l], p[i].misses[l], sizeof q.misses[l]);
            }
            MT_PUSH(s->pairs, s->npairs, s->cap_pairs, q);
        }
    }
    record_shape shape = {sizeof(mt_sim_pair), 2, offsetof(mt_sim_pair, refs)};
    s->npairs = combine_records(s->pairs, s->npairs, &shape);
}

static void merge_evictions_and_uses(mt_sim *s, struct sim_mp *mp)
{
    for (unsigned c = 0; c < mp->ncpus + mp->nnodes; c++) {
        unsigned base;
        mt_sim *h = hierarchy(mp, c, &base);
        if (!h)
            continue;
        size_t n;
        const mt_sim_eviction *e = mt_sim_evictions(h, &n);
        for (size_t i = 0; i < n; i++) {
            mt_sim_eviction x = e[i];
            x.level += base;
            MT_PUSH(s->evictions, s->nevictions, s->cap_evictions, x);
        }
        const mt_sim_object_use *u = mt_sim_object_uses(h, &n);
        for (size_t i = 0; i < n; i++) {
            mt_sim_object_use x = u[i];
            x.level += base;
            MT_PUSH(s->uses, s->nuses, s->cap_uses, x);
        }
    }
    record_shape ev = {sizeof(mt_sim_eviction), 3, offsetof(mt_sim_eviction, count)};
    record_shape use = {sizeof(mt_sim_object_use), 2, offsetof(mt_sim_object_use, lines)};
    s->nevictions = combine_records(s->evictions, s->nevictions, &ev);
    s->nuses = combine_records(s->uses, s->nuses, &use);
}

/* The machine's totals into s's levels and tallies: what every view of a
 * uniprocessor simulator shows, summed over the CPUs. */
void sim_mp_finish(mt_sim *s)
{
    struct sim_mp *mp = s->mp;
    for (unsigned c = 0; c < mp->ncpus; c++) {
        mt_sim_finish(mp->cpu[c]);
        for (unsigned l = 0; l < mp->nprivate; l++)
            sim_add_level_stats(&s->lv[l].stats, mt_sim_level(mp->cpu[c], l));
        sim_tlb_add_stats(s->tlb, mp->cpu[c]->tlb);
        sim_tlb_add_stats(s->itlb, mp->cpu[c]->itlb);
    }
    for (unsigned l = 0; l < mp->nprivate; l++) /* coherence taken out of the 3C causes */
        for (int k = 0; k < MT_SIM_NCAUSES; k++) {
            s->lv[l].stats.cause[k] = 0;
            for (unsigned c = 0; c < mp->ncpus; c++)
                s->lv[l].stats.cause[k] += mp->stats[c].cause[l][k];
        }
    for (unsigned n = 0; n < mp->nnodes && mp->shared[n]; n++) {
        mt_sim_finish(mp->shared[n]);
        for (unsigned l = 0; l < mt_sim_level_count(mp->shared[n]); l++)
            sim_add_level_stats(&s->lv[mp->nprivate + l].stats, mt_sim_level(mp->shared[n], l));
    }
    merge_pairs(s, mp);
    merge_evictions_and_uses(s, mp);
}

/* ---- the coherence tallies ---- */

/* A copy of a tally sorted by its `keys` first uint32_t fields, kept in
 * sorted[slot] until the next call. */
static void *sorted_copy(struct sim_mp *mp, unsigned slot, const void *items, size_t n,
                         size_t size, size_t keys)
{
    free(mp->sorted[slot]);
    void *p = mt_xcalloc(n + 1, size);
    merge_keys = keys;
    if (n) {
        memcpy(p, items, n * size);
        qsort(p, n, size, compare_records);
    }
    mp->sorted[slot] = p;
    return p;
}

static uint64_t coherence_misses(const mt_sim_shared_line *l)
{
    return l->true_sharing + l->false_sharing;
}

static int compare_shared_lines(const void *a, const void *b)
{
    const mt_sim_shared_line *x = a, *y = b;
    if (coherence_misses(x) != coherence_misses(y))
        return coherence_misses(x) > coherence_misses(y) ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

const mt_sim_coherence_pair *mt_sim_coherence_pairs(mt_sim *s, size_t *n)
{
    *n = 0;
    if (!s->mp)
        return NULL;
    *n = s->mp->npairs;
    return sorted_copy(s->mp, 0, s->mp->pairs, *n, sizeof *s->mp->pairs, 2);
}

const mt_sim_shared_line *mt_sim_shared_lines(mt_sim *s, size_t *n)
{
    *n = 0;
    if (!s->mp)
        return NULL;
    struct sim_mp *mp = s->mp;
    free(mp->sorted[1]);
    mt_sim_shared_line *l = mt_xcalloc(mp->nlines + 1, sizeof *l);
    for (size_t i = 0; i < mp->nlines; i++)
        l[i] = mp->lines[i].pub;
    if (mp->nlines)
        qsort(l, mp->nlines, sizeof *l, compare_shared_lines);
    mp->sorted[1] = l;
    *n = mp->nlines;
    return l;
}

const mt_sim_served_pair *mt_sim_served_pairs(mt_sim *s, size_t *n)
{
    *n = 0;
    if (!s->mp)
        return NULL;
    *n = s->mp->nserved;
    return sorted_copy(s->mp, 2, s->mp->served, *n, sizeof *s->mp->served, 3);
}
