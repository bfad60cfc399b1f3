/* sim/sim.c — the cache hierarchy: references going down the levels, fills,
 * replacement, inclusion, write-back, and the tallies (miss causes per code
 * and data object, causes of replacement, line use).  The conventions are
 * the Notes at the top of sim.h. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static uint32_t log2_of(uint64_t v) { return (uint32_t)__builtin_ctzll(v); }

/* A level's description and geometry, no state. */
static void level_describe(sim_level *L, const mt_sim_level_desc *d, int below)
{
    memset(L, 0, sizeof *L);
    L->desc = *d;
    L->stats.desc = &L->desc;
    uint64_t lines = d->size / d->line;
    L->ways = d->ways;
    L->sets = (uint32_t)(lines / d->ways);
    L->sets_pow2 = !(L->sets & (L->sets - 1));
    L->line_shift = log2_of(d->line);
    L->chunk_shift = d->line > 64 ? log2_of(d->line / 64) : 0;
    L->below = below;
}

/* The full simulator's state of a described level, every line invalid. */
static void level_allocate(sim_level *L)
{
    const mt_sim_level_desc *d = &L->desc;
    uint64_t lines = (uint64_t)L->sets * L->ways;
    /* Zeroed memory: the kernel maps a page when a set in it is first
     * filled, so a 300 MiB last level costs what the trace touches. */
    L->tags = mt_xcalloc(lines, sizeof *L->tags);
    L->meta = mt_xcalloc(lines, sizeof *L->meta);
    L->mru = mt_xcalloc(L->sets, sizeof *L->mru);
    if (d->replacement == MT_SIM_LRU)
        L->stamp = mt_xcalloc(lines, sizeof *L->stamp);
    if (d->replacement == MT_SIM_PLRU) {
        L->tree = mt_xcalloc(L->sets, sizeof *L->tree);
        L->tree_leaves = 1;
        while (L->tree_leaves < L->ways)
            L->tree_leaves *= 2;
    }
    if (d->prefetch == MT_SIM_PREFETCH_STRIDE)
        L->strides = mt_xcalloc(SIM_STRIDES, sizeof *L->strides);
    L->shadow.capacity = lines;
    L->last_eviction = L->last_use = L->last_code_use = SIM_NONE;
    L->shadow.head = L->shadow.tail = SIM_NONE;
}

/* A simulator with the machine's levels described, no level's state. */
static mt_sim *sim_describe(const mt_sim_machine *m)
{
    mt_sim *s = mt_xcalloc(1, sizeof *s);
    s->straddle_line = m->straddle_line;
    s->rng = m->seed ? m->seed : 1;
    s->last_pair = SIM_NONE;
    s->i1 = -1;
    unsigned n = 0;
    int first_lower = m->nlower ? (int)(m->i1.present ? 2 : 1) : -1;
    if (m->i1.present) {
        s->i1 = (int)n;
        level_describe(&s->lv[n++], &m->i1, first_lower);
    }
    s->d1 = (int)n;
    level_describe(&s->lv[n++], &m->d1, first_lower);
    for (unsigned i = 0; i < m->nlower; i++, n++)
        level_describe(&s->lv[n], &m->lower[i], i + 1 < m->nlower ? (int)n + 1 : -1);
    s->nlevels = n;
    return s;
}

mt_sim *mt_sim_new(const mt_sim_machine *m)
{
    mt_sim *s = sim_describe(m);
    s->tlb = sim_tlb_new(m);
    s->itlb = sim_itlb_new(m);
    if (m->cpus > 1) {
        sim_mp_new(s, m);
        return s;
    }
    for (unsigned i = 0; i < s->nlevels; i++)
        level_allocate(&s->lv[i]);
    return s;
}

mt_sim *mt_sim_new_misses_only(const mt_sim_machine *m, mt_error *err)
{
    if ((m->cpus > 1 ? sim_fast_mp_check(m, err) : sim_fast_check(m, err)) != 0)
        return NULL;
    mt_sim *s = sim_describe(m);
    if (m->cpus > 1)
        s->fast_mp = sim_fast_mp_new(m);
    else
        s->fast = sim_fast_new(s);
    return s;
}

bool mt_sim_is_misses_only(const mt_sim *s) { return s->fast || s->fast_mp; }

bool mt_sim_program_filter(const mt_sim *s, unsigned *line_shift, uint32_t *sets)
{
    return s->fast && sim_fast_program_filter(s->fast, line_shift, sets);
}

void mt_sim_free(mt_sim *s)
{
    if (!s)
        return;
    sim_fast_free(s->fast);
    sim_fast_mp_free(s->fast_mp);
    sim_mp_free(s->mp);
    sim_log_free(s->log);
    sim_tlb_free(s->tlb);
    sim_tlb_free(s->itlb);
    for (unsigned i = 0; i < s->nlevels; i++) {
        sim_level *L = &s->lv[i];
        free(L->tags);
        free(L->meta);
        free(L->mru);
        free(L->stamp);
        free(L->tree);
        free(L->strides);
        sim_shadow_free(&L->shadow);
        sim_map_free(&L->evictions);
        sim_map_free(&L->uses);
        sim_map_free(&L->code_uses);
    }
    free(s->pairs);
    sim_map_free(&s->pair_index);
    free(s->evictions);
    free(s->uses);
    free(s->code_uses);
    free(s->victims);
    sim_sample_free(s->sampler);
    for (size_t i = 0; i < MT_ARRAY_LEN(s->sorted); i++)
        free(s->sorted[i]);
    free(s);
}

/* ---- one level: sets, replacement ---- */

static uint32_t set_of(const sim_level *L, uint64_t line)
{
    return (uint32_t)(L->sets_pow2 ? line & (L->sets - 1) : line % L->sets);
}

/* The way holding `tag` in `set`, or -1.  The way referenced last is tried
 * first: most references hit it (loops over an array, a stack frame).
 * Measured (callgrind instructions, a million records): matmul's lackey
 * trace 747 -> 736 million (-1.5%); a din trace of random writes over
 * 256 MiB 1216 -> 1229 million (+1%, the check mostly fails there). */
static int lookup(const sim_level *L, uint32_t set, uint64_t tag)
{
    const uint64_t *t = L->tags + (size_t)set * L->ways;
    uint32_t mru = L->mru[set];
    if (t[mru] == tag)
        return (int)mru;
    for (uint32_t w = 0; w < L->ways; w++)
        if (t[w] == tag)
            return (int)w;
    return -1;
}

/* Tree pseudo-LRU: inner nodes 1..leaves-1 of a heap, leaf of way w at
 * leaves + w; a node's bit says which half the next victim comes from
 * (0 left, 1 right).  A reference points every node on its path away. */
static void tree_touch(sim_level *L, uint32_t set, uint32_t way)
{
    uint64_t bits = L->tree[set];
    for (uint32_t node = L->tree_leaves + way; node > 1; node >>= 1) {
        uint32_t parent = node >> 1;
        if (node & 1)
            bits &= ~(1ull << parent);
        else
            bits |= 1ull << parent;
    }
    L->tree[set] = bits;
}

/* Follows the bits down; with ways not a power of two, a half holding no
 * way is never chosen. */
static uint32_t tree_victim(const sim_level *L, uint32_t set)
{
    uint64_t bits = L->tree[set];
    uint32_t node = 1, span = L->tree_leaves;
    while (span > 1) {
        span /= 2;
        uint32_t child = 2 * node + (uint32_t)((bits >> node) & 1);
        uint32_t first_leaf = (child - (L->tree_leaves / span)) * span;
        if (first_leaf >= L->ways)
            child ^= 1;
        node = child;
    }
    return node - L->tree_leaves;
}

/* xorshift64* (Vigna): the high half is the well-mixed one, so a way is
 * chosen from it by multiply and shift (plain xorshift's low bits, as a
 * modulo takes them, were odd for the first six draws from seed 1). */
static uint32_t random_way(uint64_t *state, uint32_t ways)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    uint64_t high = (x * 0x2545F4914F6CDD1Dull) >> 32;
    return (uint32_t)((high * ways) >> 32);
}

/* An empty way first (the lowest), else the policy's.  LRU needs one scan:
 * an empty way's stamp is 0, below every line's (one scan of the stamps
 * instead of the tags, then the stamps: 1366 -> 1354 million instructions
 * for a million-reference din trace on this machine's 4 levels, -1%). */
static uint32_t victim_way(mt_sim *s, const sim_level *L, uint32_t set)
{
    if (L->stamp) {
        const uint64_t *stamp = L->stamp + (size_t)set * L->ways;
        uint32_t oldest = 0;
        for (uint32_t w = 1; w < L->ways; w++)
            if (stamp[w] < stamp[oldest])
                oldest = w;
        return oldest;
    }
    const uint64_t *t = L->tags + (size_t)set * L->ways;
    for (uint32_t w = 0; w < L->ways; w++)
        if (!t[w])
            return w;
    if (L->tree)
        return tree_victim(L, set);
    return random_way(&s->rng, L->ways);
}

/* Way i of level L empty again (its LRU stamp too: see victim_way). */
static void invalidate(sim_level *L, size_t i)
{
    L->tags[i] = 0;
    if (L->stamp)
        L->stamp[i] = 0;
}

static void touch(sim_level *L, uint32_t set, uint32_t way)
{
    L->mru[set] = way;
    if (L->stamp)
        L->stamp[(size_t)set * L->ways + way] = ++L->clock;
    else if (L->tree)
        tree_touch(L, set, way);
}

/* ---- tallies ---- */

static mt_sim_pair *pair_of(mt_sim *s, uint32_t code, uint32_t data)
{
    if (s->last_pair != SIM_NONE && s->pairs[s->last_pair].code == code &&
        s->pairs[s->last_pair].data == data)
        return &s->pairs[s->last_pair];
    uint64_t key = (uint64_t)code << 32 | data;
    uint32_t i = sim_map_get(&s->pair_index, key);
    if (i == SIM_NONE) {
        mt_sim_pair p = {.code = code, .data = data};
        i = (uint32_t)s->npairs;
        MT_PUSH(s->pairs, s->npairs, s->cap_pairs, p);
        sim_map_put(&s->pair_index, key, i);
    }
    s->last_pair = i;
    return &s->pairs[i];
}

static void tally_eviction(mt_sim *s, int li, uint32_t evictor, uint32_t victim)
{
    if (s->uncounted)
        return;
    sim_level *L = &s->lv[li];
    uint64_t key = (uint64_t)evictor << 32 | victim;
    uint32_t i = L->last_eviction;
    if (i != SIM_NONE && s->evictions[i].evictor == evictor && s->evictions[i].victim == victim) {
        /* A loop evicts its own lines over and over: the last entry again,
         * no hash lookup (with record_use's same cache, phases 400's line
         * leaving went from 166 to 137 instructions). */
        s->evictions[i].count++;
        return;
    }
    i = sim_map_get(&L->evictions, key);
    if (i == SIM_NONE) {
        mt_sim_eviction e = {.level = (uint32_t)li, .evictor = evictor, .victim = victim};
        i = (uint32_t)s->nevictions;
        MT_PUSH(s->evictions, s->nevictions, s->cap_evictions, e);
        sim_map_put(&L->evictions, key, i);
    }
    s->evictions[i].count++;
    L->last_eviction = i;
}

/* Bits set, without a call: built for any x86-64, gcc makes
 * __builtin_popcountll a call to libgcc's __popcountdi2 (21 instructions a
 * line leaving, with the call).  SWAR (Hacker's Delight, 5-2). */
static uint64_t popcount64(uint64_t x)
{
    x -= (x >> 1) & 0x5555555555555555ull;
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
    return (x * 0x0101010101010101ull) >> 56;
}

/* A line's use added to its object's row of level li in *rows (found
 * through `index`; *last: the row used last, which a loop's lines hit
 * again without a lookup).  Inlined: as a call, its two uses per line
 * leaving cost 111.6 M instructions on a 1 M-reference din trace (D1 32K,
 * L2 1M; callgrind), against 1.70 G for the whole command before. */
static inline __attribute__((always_inline)) void tally_use(mt_sim_object_use **rows, size_t *n, size_t *cap, sim_map *index,
                      uint32_t *last, int li, uint32_t object, uint64_t bytes, uint32_t reuses)
{
    uint32_t i = *last;
    if (i == SIM_NONE || (*rows)[i].object != object)
        i = sim_map_get(index, object);
    if (i == SIM_NONE) {
        mt_sim_object_use u = {.level = (uint32_t)li, .object = object};
        i = (uint32_t)*n;
        MT_PUSH(*rows, *n, *cap, u);
        sim_map_put(index, object, i);
    }
    (*rows)[i].lines++;
    (*rows)[i].bytes_used += bytes;
    (*rows)[i].reuses += reuses;
    *last = i;
}

/* A line's use (SIP) when it leaves the level or the simulation ends. */
static void record_use(mt_sim *s, int li, const sim_meta *m)
{
    sim_level *L = &s->lv[li];
    uint64_t bytes = popcount64(m->used) << L->chunk_shift;
    uint64_t line = L->desc.line;
    L->stats.lines_used++;
    L->stats.spatial[bytes ? (bytes * 8 + line - 1) / line : 0]++;
    unsigned t = m->reuses ? 64 - (unsigned)__builtin_clzll(m->reuses) : 0;
    L->stats.temporal[t < MT_SIM_TEMPORAL_BUCKETS ? t : MT_SIM_TEMPORAL_BUCKETS - 1]++;
    L->stats.prefetch_unused += m->prefetched;
    if (s->uncounted)
        return;
    tally_use(&s->uses, &s->nuses, &s->cap_uses, &L->uses, &L->last_use, li, m->data, bytes,
              m->reuses);
    tally_use(&s->code_uses, &s->ncode_uses, &s->cap_code_uses, &L->code_uses,
              &L->last_code_use, li, m->code, bytes, m->reuses);
}

/* ---- lines leaving ---- */

/* The way of level L that holds line l (in L's line size), or SIZE_MAX. */
static size_t way_holding(const sim_level *L, uint64_t l)
{
    uint32_t set = set_of(L, l);
    int w = lookup(L, set, l + 1);
    return w < 0 ? SIZE_MAX : (size_t)set * L->ways + (uint32_t)w;
}

/* A way of a level above li (the nearest level first) that holds a part of
 * `line` of level li, its level in *u; SIZE_MAX when none does. */
static size_t held_above(const mt_sim *s, int li, uint64_t line, int *u)
{
    const sim_level *L = &s->lv[li];
    for (*u = li - 1; *u >= 0; (*u)--) {
        const sim_level *U = &s->lv[*u];
        uint64_t first = line << (L->line_shift - U->line_shift);
        uint64_t n = 1ull << (L->line_shift - U->line_shift);
        for (uint64_t l = first; l < first + n; l++) {
            size_t i = way_holding(U, l);
            if (i != SIZE_MAX)
                return i;
        }
    }
    return SIZE_MAX;
}

/* Inclusion: the lines of every level above that lie in `line` of level
 * li are invalidated; true when one of them was dirty. */
static bool back_invalidate(mt_sim *s, int li, uint64_t line)
{
    bool dirty = false;
    int u;
    for (size_t i; (i = held_above(s, li, line, &u)) != SIZE_MAX;) {
        sim_level *U = &s->lv[u];
        record_use(s, u, &U->meta[i]);
        dirty |= U->meta[i].dirty;
        invalidate(U, i);
        s->lv[li].stats.back_invalidations++;
    }
    return dirty;
}

/* A valid line leaves level li (evicted): its use, its writeback, the
 * exclusive level below receiving it or the level below marking it dirty. */
static void leave(mt_sim *s, int li, uint64_t line, const sim_meta *m)
{
    sim_level *L = &s->lv[li];
    record_use(s, li, m);
    if (m->dirty)
        L->stats.writebacks++;
    if (L->below < 0)
        return;
    sim_level *B = &s->lv[L->below];
    uint64_t bline = (line << L->line_shift) >> B->line_shift;
    if (B->desc.inclusion == MT_SIM_EXCLUSIVE) {
        sim_victim v = {.level = L->below, .line = bline, .data = m->data, .code = m->code,
                        .dirty = m->dirty};
        MT_PUSH(s->victims, s->nvictims, s->cap_victims, v);
    } else if (m->dirty) {
        size_t i = way_holding(B, bline);
        if (i != SIZE_MAX)
            B->meta[i].dirty = true;
    }
}

static void evict(mt_sim *s, int li, size_t i, uint32_t evictor)
{
    sim_level *L = &s->lv[li];
    uint64_t line = L->tags[i] - 1;
    sim_meta m = L->meta[i];
    L->tags[i] = 0;
    L->stats.evictions++;
    tally_eviction(s, li, evictor, m.data);
    if (L->desc.inclusion == MT_SIM_INCLUSIVE)
        m.dirty |= back_invalidate(s, li, line);
    leave(s, li, line, &m);
}

static void fill(mt_sim *s, int li, uint64_t line, const sim_meta *m)
{
    sim_level *L = &s->lv[li];
    uint32_t set = set_of(L, line);
    uint32_t w = victim_way(s, L, set);
    size_t i = (size_t)set * L->ways + w;
    if (L->tags[i])
        evict(s, li, i, m->data);
    L->tags[i] = line + 1;
    L->meta[i] = *m;
    touch(L, set, w);
}

/* Victims of the reference just simulated into their exclusive levels (which
 * may push theirs further down). */
static void place_victims(mt_sim *s)
{
    for (size_t k = 0; k < s->nvictims; k++) {
        sim_victim v = s->victims[k];
        sim_level *L = &s->lv[v.level];
        size_t i = way_holding(L, v.line);
        if (i != SIZE_MAX) {
            L->meta[i].dirty |= v.dirty;
            continue;
        }
        sim_meta m = {.data = v.data, .code = v.code, .dirty = v.dirty};
        fill(s, v.level, v.line, &m);
    }
    s->nvictims = 0;
}

/* ---- one line of a CPU's hierarchy, for the coherence directory (mp.c) ---- */

uint32_t sim_line_levels(const mt_sim *s, uint64_t addr)
{
    uint32_t levels = 0;
    for (unsigned li = 0; li < s->nlevels; li++)
        if (way_holding(&s->lv[li], addr >> s->lv[li].line_shift) != SIZE_MAX)
            levels |= 1u << li;
    return levels;
}

/* Whether any level holds the line at addr: the directory's check that a
 * holder still holds it (mp.c).  D1 first, the level that holds a data
 * line most often, and no further once found; by sim_line_levels (every
 * level, I1's ways scanned for a data line) it cost, in callgrind
 * instructions a record of the whole of `mtool sim --set cpus=2 $GEOMETRY
 * -- sharing-gcc-O2 200000` (bench/trace.sh's Cachegrind geometry), 1637
 * -> 1383; bench/mp_same.sh's din trace 2452 -> 2364. */
bool sim_line_held(const mt_sim *s, uint64_t addr)
{
    const sim_level *D = &s->lv[s->d1];
    if (way_holding(D, addr >> D->line_shift) != SIZE_MAX)
        return true;
    for (unsigned li = 0; li < s->nlevels; li++)
        if ((int)li != s->d1 && way_holding(&s->lv[li], addr >> s->lv[li].line_shift) != SIZE_MAX)
            return true;
    return false;
}

void sim_line_invalidate(mt_sim *s, uint64_t addr)
{
    for (unsigned li = 0; li < s->nlevels; li++) {
        sim_level *L = &s->lv[li];
        size_t i = way_holding(L, addr >> L->line_shift);
        if (i != SIZE_MAX) {
            record_use(s, (int)li, &L->meta[i]);
            invalidate(L, i);
        }
    }
}

void sim_line_clean(mt_sim *s, uint64_t addr)
{
    for (unsigned li = 0; li < s->nlevels; li++) {
        sim_level *L = &s->lv[li];
        size_t i = way_holding(L, addr >> L->line_shift);
        if (i != SIZE_MAX)
            L->meta[i].dirty = false;
    }
}

/* ---- references ---- */

/* The chunks of `line` that [addr, addr + size) covers. */
static uint64_t chunks_of(const sim_level *L, uint64_t line, uint64_t addr, uint32_t size)
{
    uint64_t start = line << L->line_shift, end = start + L->desc.line - 1;
    uint64_t lo = addr > start ? addr - start : 0;
    uint64_t last = addr + size - 1;
    uint64_t hi = (last < end ? last : end) - start;
    uint32_t a = (uint32_t)(lo >> L->chunk_shift), b = (uint32_t)(hi >> L->chunk_shift);
    uint64_t upto = b >= 63 ? ~0ull : (1ull << (b + 1)) - 1;
    return upto & ~((1ull << a) - 1);
}

/* An exclusive level's hit hands the line up: the level above that just
 * took it gets its dirtiness. */
static void hand_up(mt_sim *s, int li, uint64_t line, bool dirty)
{
    int u;
    size_t i = dirty ? held_above(s, li, line, &u) : SIZE_MAX;
    if (i != SIZE_MAX)
        s->lv[u].meta[i].dirty = true;
}

/* A prefetch of `line` into level li, unless the level holds it. */
static void prefetch_line(mt_sim *s, int li, uint64_t line, uint32_t data)
{
    sim_level *L = &s->lv[li];
    if (way_holding(L, line) != SIZE_MAX)
        return;
    sim_meta m = {.data = data, .code = s->code, .prefetched = true};
    L->stats.prefetches++;
    fill(s, li, line, &m);
}

/* The stride prefetcher of level li sees a reference that reached it:
 * when its instruction's stride repeats, the line one stride ahead. */
static void prefetch_stride(mt_sim *s, int li, uint64_t addr, uint32_t data)
{
    sim_level *L = &s->lv[li];
    struct sim_stride *e = &L->strides[(s->pc ^ s->pc >> 8) % SIM_STRIDES];
    if (e->pc != s->pc) {
        *e = (struct sim_stride){.pc = s->pc, .last = addr};
        return;
    }
    int64_t stride = (int64_t)(addr - e->last);
    e->repeats = stride == e->stride && stride ? e->repeats + 1 : 0;
    e->stride = stride;
    e->last = addr;
    uint64_t ahead = addr + (uint64_t)stride;
    if (e->repeats && ahead >> L->line_shift != addr >> L->line_shift)
        prefetch_line(s, li, ahead >> L->line_shift, data);
}

/* The 3C shadow's verdict on a line the level holds in way i: through the
 * node the line keeps, no hash lookup, and nothing at all when the line is
 * already the shadow's most recent (a loop's references to one line).
 * With the shadow's nodes and map slots as arrays of structs (internal.h),
 * measured with callgrind simulating this machine's D1 (48 KiB) and L2
 * (2 MiB) on the consumer of `mtool sim --cachegrind -- phases 400` (5.06 M
 * references; Xeon family 6 model 207): 2769 -> 2684 million instructions,
 * D1 misses 33.6 -> 21.2 million, L2 misses 11.9 -> 7.3 million. */
static void shadow_ref_held(sim_level *L, uint64_t line, sim_meta *m)
{
    if (m->shadow_node) {
        if (L->shadow.head != m->shadow_node - 1)
            sim_shadow_ref_node(&L->shadow, m->shadow_node - 1);
        return;
    }
    uint32_t node;
    sim_shadow_ref(&L->shadow, line, &node);
    m->shadow_node = node + 1;
}

/* One line of a reference at level li: -1 for a hit, else the miss's cause;
 * a miss fills the line (unless the level is exclusive, or does not
 * allocate on writes and this is one). */
static int line_ref(mt_sim *s, int li, uint64_t line, uint64_t chunks, mt_sim_kind kind,
                    uint32_t data)
{
    sim_level *L = &s->lv[li];
    uint32_t set = set_of(L, line);
    int w = lookup(L, set, line + 1);
    bool write = kind == MT_SIM_WRITE;
    uint32_t node;
    if (w >= 0) {
        size_t i = (size_t)set * L->ways + (uint32_t)w;
        if (L->desc.inclusion == MT_SIM_EXCLUSIVE) {
            sim_shadow_ref(&L->shadow, line, &node);
            invalidate(L, i);
            hand_up(s, li, line, L->meta[i].dirty);
            return -1;
        }
        sim_meta *m = &L->meta[i];
        shadow_ref_held(L, line, m);
        m->used |= chunks;
        m->reuses += !m->prefetched; /* the prefetch did not reference it */
        m->dirty |= write;
        touch(L, set, (uint32_t)w);
        if (m->prefetched) {
            m->prefetched = false;
            L->stats.prefetch_hits++;
            if (L->desc.prefetch == MT_SIM_PREFETCH_NEXT_LINE)
                prefetch_line(s, li, line + 1, data);
        }
        return -1;
    }
    int cause = sim_shadow_ref(&L->shadow, line, &node);
    if (cause < 0)
        cause = MT_SIM_CONFLICT;
    if ((write && !L->desc.write_allocate) || L->desc.inclusion == MT_SIM_EXCLUSIVE)
        return cause;
    sim_meta m = {.used = chunks, .data = data, .code = s->code, .dirty = write,
                  .shadow_node = node + 1};
    fill(s, li, line, &m);
    if (L->desc.prefetch == MT_SIM_PREFETCH_NEXT_LINE)
        prefetch_line(s, li, line + 1, data);
    return cause;
}

static void count_ref(sim_level *L, mt_sim_kind kind, int cause)
{
    mt_sim_level_stats *st = &L->stats;
    bool miss = cause >= 0;
    st->refs++;
    st->misses += miss;
    if (kind == MT_SIM_READ)
        st->reads++, st->read_misses += miss;
    else if (kind == MT_SIM_WRITE)
        st->writes++, st->write_misses += miss;
    else
        st->fetches++, st->fetch_misses += miss;
    if (miss)
        st->cause[cause]++;
}

/* The fast path: a reference within one line that its set holds in the way
 * referenced last, the line being also the 3C shadow's most recent one (and
 * neither prefetched nor at an exclusive level), is a hit that changes no
 * replacement state, so it is done here without lookup, touch or shadow.
 * Exact: LRU and pseudo-LRU already rank that way first in its set (every
 * touch sets the set's mru way; LRU stamps are compared only within a set,
 * so skipping one increment of the clock changes no comparison; a tree
 * touch of the same way twice is the touch once), and the shadow's order
 * is already this line first.  Only the line's use, its dirtiness and the
 * counts move, as on the general path.  Measured (callgrind instructions,
 * `mtool sim --cachegrind -- reuse`, 256093 references, most of them four
 * 16-byte reads per line): 113.5 -> 92.0 million for the whole command; on
 * phases, whose successive references alternate lines, +1%. */
static bool mru_hit(sim_level *L, uint64_t line, uint64_t addr, uint32_t size, mt_sim_kind kind)
{
    uint32_t set = set_of(L, line);
    size_t i = (size_t)set * L->ways + L->mru[set];
    sim_meta *m = &L->meta[i];
    if (L->tags[i] != line + 1 || !m->shadow_node || m->shadow_node - 1 != L->shadow.head ||
        m->prefetched || L->desc.inclusion == MT_SIM_EXCLUSIVE)
        return false;
    m->used |= chunks_of(L, line, addr, size);
    m->reuses++;
    m->dirty |= kind == MT_SIM_WRITE;
    return true;
}

static void level_access(mt_sim *s, int li, uint64_t addr, uint32_t size, mt_sim_kind kind,
                         uint32_t data, mt_sim_pair *p)
{
    sim_level *L = &s->lv[li];
    uint64_t first = addr >> L->line_shift, last = (addr + size - 1) >> L->line_shift;
    if (first == last && mru_hit(L, first, addr, size, kind)) {
        count_ref(L, kind, -1);
        if (L->strides)
            prefetch_stride(s, li, addr, data);
        return;
    }
    if (s->straddle_line && first != last) {
        for (uint64_t line = first; line <= last; line++) {
            uint64_t lo = line << L->line_shift, hi = lo + L->desc.line - 1;
            if (lo < addr)
                lo = addr;
            if (hi > addr + size - 1)
                hi = addr + size - 1;
            level_access(s, li, lo, (uint32_t)(hi - lo + 1), kind, data, p);
        }
        return;
    }
    int cause = -1;
    for (uint64_t line = first; line <= last; line++) {
        int c = line_ref(s, li, line, chunks_of(L, line, addr, size), kind, data);
        if (c >= 0 && cause < 0)
            cause = c;
    }
    count_ref(L, kind, cause);
    if (L->strides)
        prefetch_stride(s, li, addr, data);
    if (cause < 0)
        return;
    s->level_misses++;
    p->misses[li][cause]++;
    if (s->sampler)
        sim_sample_miss(s, (unsigned)li, set_of(L, first));
    if (L->below >= 0)
        level_access(s, L->below, addr, size, kind, data, p);
}

/* Not inlined into mt_sim_access and the feed: its inlined levels made
 * every call save and restore six registers, the misses-only dispatch's
 * too.  With fast.c's inline MRU check: 6325 -> 5261 million instructions
 * (callgrind, the whole of `mtool sim --misses-only --cachegrind --
 * phases-gcc-O2 4000`, 27 M references; Xeon family 6 model 207). */
__attribute__((noinline)) void sim_full_access(mt_sim *s, uint64_t addr, uint32_t size,
                                               mt_sim_kind kind, uint32_t code, uint32_t data,
                                               uint64_t pc)
{
    if (s->fast_mp) {
        sim_fast_mp_access(s->fast_mp, addr, size, kind, code);
        return;
    }
    if (s->log)
        sim_log_ref(s, addr, size, kind, code, data, pc);
    if (s->mp) {
        sim_mp_access(s, addr, size, kind, code, data, pc);
        return;
    }
    s->pc = pc;
    s->code = code;
    mt_sim_pair *p = &s->warm_pair;
    sim_sample_step step = s->sampler ? sim_sample_ref(s, addr) : SIM_COUNT;
    if (step == SIM_SKIP)
        return;
    if (step == SIM_COUNT)
        p = pair_of(s, code, data);
    p->refs++;
    if (s->tlb && kind != MT_SIM_IFETCH)
        sim_tlb_access(s->tlb, addr, size, p->tlb_misses);
    if (s->itlb && kind == MT_SIM_IFETCH)
        sim_tlb_access(s->itlb, addr, size, &p->itlb_misses);
    int top = kind == MT_SIM_IFETCH && s->i1 >= 0 ? s->i1 : s->d1;
    level_access(s, top, addr, size, kind, data, p);
    place_victims(s);
}

void mt_sim_access(mt_sim *s, uint64_t addr, uint32_t size, mt_sim_kind kind, uint32_t code,
                   uint32_t data, uint64_t pc)
{
    sim_access(s, addr, size, kind, code, data, pc);
}

void mt_sim_flush(mt_sim *s)
{
    if (s->fast) {
        sim_fast_flush(s->fast);
        return;
    }
    if (s->fast_mp) {
        sim_fast_mp_flush(s->fast_mp);
        return;
    }
    if (s->log)
        sim_log_flush(s);
    if (s->mp) {
        sim_mp_flush(s);
        return;
    }
    for (unsigned li = 0; li < s->nlevels; li++) {
        sim_level *L = &s->lv[li];
        size_t lines = (size_t)L->sets * L->ways;
        for (size_t i = 0; i < lines; i++)
            if (L->tags[i]) {
                record_use(s, (int)li, &L->meta[i]);
                L->stats.writebacks += L->meta[i].dirty;
                invalidate(L, i);
            }
        sim_shadow_flush(&L->shadow);
    }
}

void mt_sim_finish(mt_sim *s)
{
    if (s->fast) {
        sim_fast_finish(s->fast, s);
        return;
    }
    if (s->fast_mp) {
        sim_fast_mp_finish(s->fast_mp, s);
        return;
    }
    if (s->mp) {
        sim_mp_finish(s);
        return;
    }
    if (s->sampler)
        sim_sample_finish(s);
    for (unsigned li = 0; li < s->nlevels; li++) {
        sim_level *L = &s->lv[li];
        size_t lines = (size_t)L->sets * L->ways;
        for (size_t i = 0; i < lines; i++)
            if (L->tags[i])
                record_use(s, (int)li, &L->meta[i]);
    }
}

unsigned mt_sim_level_count(const mt_sim *s) { return s->nlevels; }

const mt_sim_level_stats *mt_sim_level(const mt_sim *s, unsigned i) { return &s->lv[i].stats; }

/* The tallies' records start with their uint32_t keys, most significant
 * first: n of them compared in order. */
static int compare_keys(const void *a, const void *b, int n)
{
    const uint32_t *x = a, *y = b;
    for (int i = 0; i < n; i++)
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    return 0;
}

static int compare_pairs(const void *a, const void *b) { return compare_keys(a, b, 2); }
static int compare_evictions(const void *a, const void *b) { return compare_keys(a, b, 3); }
static int compare_uses(const void *a, const void *b) { return compare_keys(a, b, 2); }

/* A sorted copy of a tally in *copy (the tally keeps the order its index
 * map points into, so the simulation may go on). */
static const void *sorted_copy(void **copy, const void *items, size_t n, size_t size,
                               int (*compare)(const void *, const void *))
{
    free(*copy);
    *copy = mt_xmalloc(n * size + 1);
    if (n) { /* memcpy and qsort take no NULL, even for nothing */
        memcpy(*copy, items, n * size);
        qsort(*copy, n, size, compare);
    }
    return *copy;
}

const mt_sim_pair *mt_sim_pairs(mt_sim *s, size_t *n)
{
    *n = s->npairs;
    return sorted_copy(&s->sorted[0], s->pairs, s->npairs, sizeof *s->pairs, compare_pairs);
}

const mt_sim_eviction *mt_sim_evictions(mt_sim *s, size_t *n)
{
    *n = s->nevictions;
    return sorted_copy(&s->sorted[1], s->evictions, s->nevictions, sizeof *s->evictions,
                       compare_evictions);
}

const mt_sim_object_use *mt_sim_object_uses(mt_sim *s, size_t *n)
{
    *n = s->nuses;
    return sorted_copy(&s->sorted[2], s->uses, s->nuses, sizeof *s->uses, compare_uses);
}

const mt_sim_object_use *mt_sim_code_uses(mt_sim *s, size_t *n)
{
    *n = s->ncode_uses;
    return sorted_copy(&s->sorted[4], s->code_uses, s->ncode_uses, sizeof *s->code_uses,
                       compare_uses);
}

const mt_sim_code_tally *mt_sim_code_tallies(mt_sim *s, size_t *n)
{
    if (s->fast)
        return sim_fast_code_tallies(s->fast, n);
    if (s->fast_mp)
        return sim_fast_mp_code_tallies(s->fast_mp, n);
    size_t np;
    const mt_sim_pair *p = mt_sim_pairs(s, &np); /* sorted by code */
    mt_sim_code_tally *t = mt_xcalloc(np + 1, sizeof *t);
    size_t nt = 0;
    for (size_t i = 0; i < np; i++) {
        if (!nt || t[nt - 1].code != p[i].code)
            t[nt++].code = p[i].code;
        t[nt - 1].refs += p[i].refs;
        for (unsigned l = 0; l < s->nlevels; l++)
            for (int c = 0; c < MT_SIM_NCAUSES; c++)
                t[nt - 1].misses[l] += p[i].misses[l][c];
        for (unsigned l = 0; l < MT_SIM_MAX_TLB; l++)
            t[nt - 1].tlb_misses[l] += p[i].tlb_misses[l];
        t[nt - 1].itlb_misses += p[i].itlb_misses;
    }
    free(s->sorted[3]);
    s->sorted[3] = t;
    *n = nt;
    return t;
}
