/* sim/fast.c — the misses-only simulator (mt_sim_new_misses_only; sim.h,
 * docs/SIMULATOR.md "Speed"): per level and per code object, references and
 * misses, nothing else.  Cachegrind's model (LRU, non-inclusive, no
 * prefetch), with write-allocate either way and either straddle rule, and
 * any number of levels: the full simulator's hits and misses exactly, at a
 * few tens of instructions a reference instead of hundreds, because it
 * keeps no 3C shadow, no line metadata (use, dirtiness, data object), no
 * replacement or pair tallies.
 *
 * LRU as an order, not stamps (as Cachegrind's cg_sim.c does): a set's tags
 * are kept from the most recently used way to the least, a hit moves its tag
 * to the front, a miss shifts the set and puts the new line first, dropping
 * the last one.  Same hits and misses as the full simulator's stamps (which
 * line sits in which way never matters; which is least recent does, and an
 * empty way, 0, is always behind every line, as a stamp of 0 is); one load
 * and compare for the most common hit, no clock. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Code objects below this id have their row at code x row size (ids are
 * 1 + procedure index, then one per loop: small); a larger id (a damaged
 * record's) goes through a map, so no id can make the table huge. */
#define DIRECT_CODES (1u << 20)

typedef struct fast_level fast_level;
struct fast_level {
    uint64_t *tags;           /* sets x ways, line + 1, most recent first; 0 empty */
    uint64_t *mru;            /* per set, its first way's tag again (line_hit keeps it) */
    uint32_t ways, sets, set_mask, line_shift;
    bool sets_pow2, write_allocate;
    int below;                /* the next level down, -1 for the last */
    uint64_t refs[3], misses[3]; /* by mt_sim_kind */
    /* For line_chain: the next level down (NULL for the last), this level's
     * column in a code object's row, whether a reference of the kind fills
     * a line here, and whether no level from this one down has a shorter
     * line than the level above it (a reference within one line here is
     * then within one line at every level it reaches). */
    fast_level *next;
    uint32_t column;
    bool fill[3];
    bool nested;
};

struct sim_fast {
    fast_level lv[MT_SIM_MAX_LEVELS];
    unsigned nlevels;
    int top[3];               /* by mt_sim_kind: the level a reference goes to first
                                 (looked up, not computed: 4583 -> 4556 million) */
    bool straddle_line;
    uint32_t row;             /* uint64_t a code object: references, then misses per level */
    uint64_t *direct;         /* rows of ids below ndirect */
    size_t ndirect;
    sim_map far_index;        /* id -> index into far (ids from DIRECT_CODES up) */
    uint64_t *far;
    uint32_t *far_codes;
    size_t nfar, cap_far;
    mt_sim_code_tally *sorted; /* what mt_sim_code_tallies returned */
    fast_level *chain;        /* D1 when nested (line_chain can take its references), or NULL */
};

int sim_fast_check(const mt_sim_machine *m, mt_error *err)
{
    const mt_sim_level_desc *lv[MT_SIM_MAX_LEVELS];
    unsigned n = 0;
    if (m->i1.present)
        lv[n++] = &m->i1;
    lv[n++] = &m->d1;
    for (unsigned i = 0; i < m->nlower; i++)
        lv[n++] = &m->lower[i];
    for (unsigned i = 0; i < n; i++) {
        const mt_sim_level_desc *d = lv[i];
        const char *why = d->replacement != MT_SIM_LRU             ? "replacement other than lru"
                          : d->inclusion != MT_SIM_NON_INCLUSIVE   ? "inclusion other than "
                                                                     "non-inclusive"
                          : d->prefetch != MT_SIM_PREFETCH_NONE    ? "a prefetcher"
                                                                   : NULL;
        if (why) {
            mt_error_set(err, "%s: %s: the misses-only simulator models LRU, non-inclusive "
                              "levels without prefetch (Cachegrind's model) only",
                         d->name, why);
            return -1;
        }
    }
    return 0;
}

static void fast_level_init(fast_level *L, const sim_level *full)
{
    memset(L, 0, sizeof *L);
    L->ways = full->ways;
    L->sets = full->sets;
    L->set_mask = full->sets - 1;
    L->sets_pow2 = full->sets_pow2;
    L->line_shift = full->line_shift;
    L->write_allocate = full->desc.write_allocate;
    L->below = full->below;
    /* Zeroed memory: only the sets the trace touches are ever mapped. */
    L->tags = mt_xcalloc((size_t)full->sets * full->ways, sizeof *L->tags);
    L->mru = mt_xcalloc(full->sets, sizeof *L->mru);
}

sim_fast *sim_fast_new(const mt_sim *s)
{
    sim_fast *f = mt_xcalloc(1, sizeof *f);
    f->nlevels = s->nlevels;
    f->straddle_line = s->straddle_line;
    f->top[MT_SIM_READ] = f->top[MT_SIM_WRITE] = s->d1;
    f->top[MT_SIM_IFETCH] = s->i1 >= 0 ? s->i1 : s->d1;
    f->row = 1 + s->nlevels;
    for (unsigned i = 0; i < s->nlevels; i++)
        fast_level_init(&f->lv[i], &s->lv[i]);
    for (unsigned i = 0; i < s->nlevels; i++) {
        fast_level *L = &f->lv[i];
        L->next = L->below >= 0 ? &f->lv[L->below] : NULL;
        L->column = 1 + i;
        L->fill[MT_SIM_READ] = L->fill[MT_SIM_IFETCH] = true;
        L->fill[MT_SIM_WRITE] = L->write_allocate;
        L->nested = true;
        for (const fast_level *a = L; a->next; a = a->next)
            L->nested &= a->next->line_shift >= a->line_shift;
    }
    fast_level *d1 = &f->lv[s->d1];
    f->chain = d1->nested ? d1 : NULL;
    return f;
}

void sim_fast_free(sim_fast *f)
{
    if (!f)
        return;
    for (unsigned i = 0; i < f->nlevels; i++) {
        free(f->lv[i].tags);
        free(f->lv[i].mru);
    }
    free(f->direct);
    sim_map_free(&f->far_index);
    free(f->far);
    free(f->far_codes);
    free(f->sorted);
    free(f);
}

/* ---- the per-reference path ---- */

/* A write that does not allocate: a hit moves the line first, a miss
 * changes nothing.  The shift a loop, not memmove: no call, so line_chain
 * keeps its state in the registers a call would clobber and saves none
 * (line_chain 399 -> 392 million, callgrind as at sim_fast_records). */
static inline bool line_hit_no_fill(uint64_t *t, uint32_t ways, uint64_t tag)
{
    for (uint32_t w = 1; w < ways; w++)
        if (t[w] == tag) {
            for (; w > 0; w--)
                t[w] = t[w - 1];
            t[0] = tag;
            return true;
        }
    return false;
}

/* The set t of `ways` ways, its first way not the line: true for a hit.
 * Scan and shift in one pass: each way takes the tag of the one before it
 * until the line is found (it goes first) or the last one drops out (a
 * miss), instead of a scan then a memmove (with sim_access inline in the
 * feed, internal.h: 5261 -> 4800 million instructions). */
static inline __attribute__((always_inline)) bool scan_shift(uint64_t *t, uint32_t ways,
                                                             uint64_t tag)
{
    uint64_t prev = t[0];
#pragma GCC unroll 32
    for (uint32_t w = 1; w < ways; w++) {
        uint64_t cur = t[w];
        t[w] = prev;
        if (cur == tag) {
            t[0] = tag;
            return true;
        }
        prev = cur;
    }
    t[0] = tag;
    return false;
}

/* The set t of `ways` ways, its first way not the line: true for a hit.
 * The line becomes the set's most recent unless it missed and `fill` is
 * false (a write that does not allocate).  The usual numbers of ways get a
 * scan of their own, unrolled whole (no count, no bound to test: a way
 * costs a load, a store, a compare and a branch): callgrind, `mtool sim
 * --misses-only --cachegrind -- phases-gcc-O2 400` (8 and 16 ways),
 * level_ref 315 -> 259 million instructions. */
static inline __attribute__((always_inline)) bool set_ref(uint64_t *t, uint32_t ways,
                                                           uint64_t tag, bool fill)
{
    if (!fill)
        return line_hit_no_fill(t, ways, tag);
    /* 8 and 16 ways (Cachegrind's D1 and LL, most machines' D1 and L2)
     * tested first: a switch is a search of the four values, 7 instructions
     * to reach 8 (line_chain 392 -> 370 million, callgrind as at
     * sim_fast_records). */
    if (ways == 8)
        return scan_shift(t, 8, tag);
    if (ways == 16)
        return scan_shift(t, 16, tag);
    if (ways == 4)
        return scan_shift(t, 4, tag);
    if (ways == 12)
        return scan_shift(t, 12, tag);
    return scan_shift(t, ways, tag);
}

/* One line at level L: true for a hit, the line then the set's most recent
 * (as after a miss unless `fill` is false: a write that does not
 * allocate); the MRU test left out (`test_mru` false) when the caller
 * made it.  The MRU test reads the set's copy of its first way (`mru`),
 * not the set's tags: 8 bytes a set, so an 8 MiB 16-way LL's tests touch
 * 64 KiB, not its 1 MiB of tags (this CPU's L2 is 512 KiB), and D1's 512
 * bytes.  The consumer's CPU time replaying gzip -9's 70.6 M records
 * (500 KB, bench/trace.sh's geometry; AMD EPYC Zen 3, family 25 model 1,
 * loaded 2-vCPU guest, 8 runs each interleaved): 0.524-0.588 -> 0.484-0.528
 * s (-8% the least of each); the whole of `mtool sim --misses-only` on
 * gzip -9 of 2 MB, 5 runs each interleaved at load 9-10: user time
 * 4.09-5.23 -> 3.63-4.60 s.  (AVX2 scans of the sets, without the MRU test
 * or after it, were slower or no faster: docs/SIMULATOR.md "Misses
 * only".) */
static inline __attribute__((always_inline)) bool line_hit(fast_level *L, uint64_t line,
                                                            bool fill, bool test_mru)
{
    uint32_t set = L->sets_pow2 ? (uint32_t)line & L->set_mask : (uint32_t)(line % L->sets);
    uint64_t *t = L->tags + (size_t)set * L->ways;
    uint64_t tag = line + 1;
    if (test_mru && L->mru[set] == tag)
        return true;
    bool hit = set_ref(t, L->ways, tag, fill);
    L->mru[set] = t[0];
    return hit;
}

static unsigned level_ref(sim_fast *f, int li, uint64_t addr, uint32_t size, mt_sim_kind kind,
                          uint64_t *row);

/* straddle=line: each line's part of the reference is a reference of its
 * own (sim.c's level_access, the same parts). */
static void split_ref(sim_fast *f, int li, uint64_t addr, uint32_t size, mt_sim_kind kind,
                      uint64_t *row)
{
    const fast_level *L = &f->lv[li];
    uint64_t first = addr >> L->line_shift, last = (addr + size - 1) >> L->line_shift;
    for (uint64_t line = first; line <= last; line++) {
        uint64_t lo = line << L->line_shift, hi = lo + (1ull << L->line_shift) - 1;
        if (lo < addr)
            lo = addr;
        if (hi > addr + size - 1)
            hi = addr + size - 1;
        level_ref(f, li, lo, (uint32_t)(hi - lo + 1), kind, row);
    }
}

/* straddle=access: whether any of the lines a reference touches misses,
 * each looked up.  Rare: out of line, so level_ref holds one copy of
 * line_hit's unrolled scans, not two. */
static __attribute__((noinline)) bool straddle_miss(fast_level *L, uint64_t first, uint64_t last,
                                                    bool fill)
{
    bool miss = false;
    for (uint64_t line = first; line <= last; line++)
        miss |= !line_hit(L, line, fill, true);
    return miss;
}

/* A reference at level li and, while it misses, the levels below: every
 * line it touches is looked up, it counts once, and a miss sends it whole
 * to the next level (sim.h's Notes).  Returns at how many levels it missed,
 * li's first (under straddle=access, which processors take: fast_mp.c). */
static unsigned level_ref(sim_fast *f, int li, uint64_t addr, uint32_t size, mt_sim_kind kind,
                          uint64_t *row)
{
    unsigned missed = 0;
    while (li >= 0) {
        fast_level *L = &f->lv[li];
        uint64_t first = addr >> L->line_shift, last = (addr + size - 1) >> L->line_shift;
        bool fill = kind != MT_SIM_WRITE || L->write_allocate, miss;
        if (first == last) {
            miss = !line_hit(L, first, fill, true);
        } else if (f->straddle_line) {
            split_ref(f, li, addr, size, kind, row);
            return missed;
        } else {
            miss = straddle_miss(L, first, last, fill);
        }
        L->refs[kind]++;
        if (!miss)
            return missed;
        missed++;
        L->misses[kind]++;
        row[1 + li]++;
        li = L->below;
    }
    return missed;
}

/* A reference within one line of level L, not that set's most recent
 * line, L and the levels below it nested (fast_level's `nested`): what
 * level_ref does for it without the straddle rules, each level found by
 * pointer, and no count of the levels it missed (the batch's misses,
 * sim_fast_records), taken when the batch saw the reference within one of
 * D1's lines.  Callgrind, gzip -9 of 200 KB as at sim_fast_records (4.77 M
 * references past the MRU test): level_ref's 617 million instructions
 * became line_chain's 399 and 71 more in the batch, the feed and the
 * levels 1207 -> 1059 million (phases-gcc-O2 400: 486 -> 429).  L's MRU
 * test is not made again (the batch made it): the records of gzip -9 of
 * 500 KB replayed (as at line_hit), callgrind 4546 -> 4455 million
 * instructions, CPU time 0.502-0.509 -> 0.478-0.479 s the least of 10,
 * twice (-5%). */
static inline __attribute__((always_inline)) void line_chain(fast_level *L, uint64_t addr,
                                                            mt_sim_kind kind, uint64_t *row)
{
    bool hit = line_hit(L, addr >> L->line_shift, L->fill[kind], false);
    for (;;) {
        L->refs[kind]++;
        if (hit)
            return;
        L->misses[kind]++;
        row[L->column]++;
        if (!(L = L->next))
            return;
        hit = line_hit(L, addr >> L->line_shift, L->fill[kind], true);
    }
}

/* line_chain for each kind of the batch: the kind a constant, its counters
 * and fill flag at fixed offsets (callgrind as at sim_fast_records: line_chain
 * 370 -> 335 million, the batch 599 -> 612 to choose; the feed 971 -> 948). */
static __attribute__((noinline)) void line_chain_read(fast_level *L, uint64_t addr, uint64_t *row)
{
    line_chain(L, addr, MT_SIM_READ, row);
}

static __attribute__((noinline)) void line_chain_write(fast_level *L, uint64_t addr, uint64_t *row)
{
    line_chain(L, addr, MT_SIM_WRITE, row);
}

/* The row of a code object beyond the direct table. */
static uint64_t *far_row(sim_fast *f, uint32_t code)
{
    uint32_t i = sim_map_get(&f->far_index, code);
    if (i == SIM_NONE) {
        i = (uint32_t)f->nfar;
        if (f->nfar == f->cap_far) {
            f->cap_far = f->cap_far ? 2 * f->cap_far : 16;
            f->far = mt_xrealloc(f->far, f->cap_far * f->row * sizeof *f->far);
            f->far_codes = mt_xrealloc(f->far_codes, f->cap_far * sizeof *f->far_codes);
        }
        memset(f->far + (size_t)i * f->row, 0, f->row * sizeof *f->far);
        f->far_codes[f->nfar++] = code;
        sim_map_put(&f->far_index, code, i);
    }
    return f->far + (size_t)i * f->row;
}

/* The row of a code object not yet in the direct table.  Cold, not
 * inlined: inlined, it made sim_fast_access save six registers a call
 * (4800 -> 4583 million instructions, the measure of internal.h's
 * sim_access). */
__attribute__((cold, noinline)) static uint64_t *code_row(sim_fast *f, uint32_t code)
{
    if (code >= DIRECT_CODES)
        return far_row(f, code);
    size_t n = f->ndirect ? f->ndirect : 64;
    while (n <= code)
        n *= 2;
    f->direct = mt_xrealloc(f->direct, n * f->row * sizeof *f->direct);
    memset(f->direct + f->ndirect * f->row, 0, (n - f->ndirect) * f->row * sizeof *f->direct);
    f->ndirect = n;
    return f->direct + (size_t)code * f->row;
}

void sim_fast_access(sim_fast *f, uint64_t addr, uint32_t size, mt_sim_kind kind, uint32_t code)
{
    uint64_t *row = code < f->ndirect ? f->direct + (size_t)code * f->row : code_row(f, code);
    row[0]++;
    int top = f->top[kind];
    /* The most common reference, inline: within one line of its top level,
     * the set's most recent line (a hit that changes nothing; with
     * sim.c's sim_full_access out of line, 6325 -> 5261 million). */
    fast_level *L = &f->lv[top];
    uint64_t line = addr >> L->line_shift;
    if (line == (addr + size - 1) >> L->line_shift) {
        uint32_t set = L->sets_pow2 ? (uint32_t)line & L->set_mask : (uint32_t)(line % L->sets);
        if (L->mru[set] == line + 1) {
            L->refs[kind]++;
            return;
        }
    }
    level_ref(f, top, addr, size, kind, row);
}

/* The row of a code object, direct or not. */
static inline uint64_t *row_of(sim_fast *f, uint32_t code)
{
    return code < f->ndirect ? f->direct + (size_t)code * f->row : code_row(f, code);
}

bool sim_fast_top_of(const sim_fast *f, sim_fast_top *top)
{
    const fast_level *D = &f->lv[f->top[MT_SIM_READ]];
    if (!D->sets_pow2 || f->top[MT_SIM_WRITE] != f->top[MT_SIM_READ])
        return false;
    *top = (sim_fast_top){.mru = D->mru, .set_mask = D->set_mask, .line_shift = D->line_shift};
    return true;
}

void sim_fast_count_top_hits(sim_fast *f, uint64_t reads, uint64_t writes)
{
    fast_level *D = &f->lv[f->top[MT_SIM_READ]];
    D->refs[MT_SIM_READ] += reads;
    D->refs[MT_SIM_WRITE] += writes;
}

uint64_t *sim_fast_row(sim_fast *f, uint32_t code) { return row_of(f, code); }

unsigned sim_fast_ref(sim_fast *f, uint64_t addr, uint32_t size, mt_sim_kind kind, uint64_t *row)
{
    return level_ref(f, f->top[kind], addr, size, kind, row);
}

/* The batch's test and path (sim_batch_records): D1's MRU line, then the
 * levels. */
static inline bool batch_hit(void *ctx, bool mru, uint64_t addr, uint64_t end, bool write)
{
    (void)ctx, (void)addr, (void)end, (void)write;
    return mru;
}

static inline void batch_miss(void *ctx, uint64_t addr, uint32_t size, mt_sim_kind kind,
                              uint32_t code, uint64_t *row, bool one_line)
{
    sim_fast *f = ctx;
    (void)code;
    if (one_line && f->chain)
        kind == MT_SIM_READ ? line_chain_read(f->chain, addr, row)
                            : line_chain_write(f->chain, addr, row);
    else
        level_ref(f, f->top[kind], addr, size, kind, row);
}

/* ---- the filter: D1's MRU test for a chunk, then its misses ----
 *
 * Under LRU with write-allocate at D1, every reference within one D1 line
 * leaves that line its set's most recent, hit or miss; so which set's most
 * recent line a reference meets is known from the references alone, in
 * order, without the levels' state.  The filter makes D1's MRU test for a
 * chunk of records first, in a loop without a branch on its outcome (the
 * outcome picks where the next miss index goes: `nmiss += miss`), writing
 * each reference's line as its set's most recent; then the chunk's misses
 * go down the levels in order (line_chain, D1's MRU test not made again).
 * Exact: a hit changes no state at any level, so the levels see the same
 * misses in the same order as the batch's one loop gives them, and D1's
 * `mru` ends as line_hit leaves it (the last reference to a set is its
 * last miss's line, or a hit on that same line).  Only records the test
 * takes whole: plain references within one D1 line; the loop stops at any
 * other (the feed takes it, then calls again).  Why: in the batch's one
 * loop the MRU test's branch goes either way (gzip -9: 30% past it), and
 * its mispredictions were the loop's largest cost: perf, the samples on
 * the two instructions after that branch, 20% of the batch's.  Measured
 * (Xeon family 6 model 85): the records of gzip -9 of 500 KB (70.1 M,
 * bench/trace.sh's geometry) replayed into the feed, its CPU time the
 * least of 5, the batch's one loop 0.711-0.717 s, the filter 0.544-0.558
 * s, the same counts; `mtool sim --misses-only` on gzip -9 of 2 MB, the
 * best of 3 interleaved, 3.39 -> 2.75 s (docs/SIMULATOR.md). */
#define FILTER_CHUNK 512

/* Whether the filter's rule holds where a batch can be made
 * (sim_fast_top_of): D1 write-allocate and the levels nested (line_chain
 * can take D1's misses). */
static bool filter_takes(const sim_fast *f)
{
    return f->chain == &f->lv[f->top[MT_SIM_READ]] && f->chain->write_allocate;
}

/* A code object's references so far in a chunk: its run [from, to) of
 * records, and the modifies among them (each a read and a write). */
static inline void add_run(sim_fast *f, uint32_t code, uint32_t from, uint32_t to,
                           uint64_t modifies)
{
    row_of(f, code)[0] += (uint64_t)(to - from) + modifies;
}

/* One chunk's MRU tests and its code objects' references: the records
 * taken (from c on, up to m), the indices of those that missed in
 * miss_at, their number in *nmiss; the writes (modifies included) and
 * modifies added to *writes and *modifies.  Its steps, on the replay
 * above: the filter as first written 0.617-0.621 s; the line's shift a
 * constant where lines are 64 bytes (a shift by %cl is 3 ops on Intel
 * cores) and the records prefetched 4 KiB ahead (they come from the
 * other core's ring: on traced gzip -9 of 2 MB, 2.95-3.62 -> 2.81-2.94 s
 * wall, 4 rounds), 0.544-0.558 s.  Not kept: the code objects counted in
 * a loop of their own after this one (0.663 s); the writes and modifies
 * in one count through a table by kind (0.622 s); chunks of 256 to 2048
 * records (no difference); a D1 scan without a branch on the way found
 * (compares and masks: 0.77 s; gcc's conditional moves: 0.578 s). */
static inline __attribute__((always_inline)) uint32_t
filter_chunk(sim_fast *f, unsigned shift, const mt_trace_record *c, uint32_t m,
             uint16_t *miss_at, uint32_t *nmiss, uint64_t *writes, uint64_t *modifies)
{
    _Static_assert(MT_TRACE_READ == 0 && MT_TRACE_WRITE == 1 && MT_TRACE_MODIFY == 2,
                   "kinds summed: a modify counts as two");
    uint64_t *mru = f->chain->mru;
    const uint64_t set_mask = f->chain->set_mask;
    uint32_t misses = 0, i, run = 0, code = c->code;
    uint64_t w = 0, kinds = 0, run_mod = 0; /* modifies: kinds - w */
    for (i = 0; i < m; i++) {
        const mt_trace_record *x = c + i;
        __builtin_prefetch(x + 256);
        unsigned kind = x->kind;
        uint32_t size = x->size;
        if (kind > MT_TRACE_MODIFY || !size)
            break;
        uint64_t addr = x->addr, line = addr >> shift;
        if (line != (addr + size - 1) >> shift) /* straddling or wrapping */
            break;
        if (x->code != code) {
            add_run(f, code, run, i, kinds - w - run_mod);
            run = i;
            run_mod = kinds - w;
            code = x->code;
        }
        uint64_t *slot = &mru[line & set_mask], tag = line + 1;
        miss_at[misses] = (uint16_t)i;
        misses += *slot != tag;
        *slot = tag;
        w += kind != MT_TRACE_READ;
        kinds += kind;
    }
    if (i > run)
        add_run(f, code, run, i, kinds - w - run_mod);
    *nmiss = misses;
    *writes += w;
    *modifies += kinds - w;
    return i;
}

static uint32_t filter_chunk_64(sim_fast *f, const mt_trace_record *c, uint32_t m,
                                uint16_t *miss_at, uint32_t *nmiss, uint64_t *writes,
                                uint64_t *modifies)
{
    return filter_chunk(f, 6, c, m, miss_at, nmiss, writes, modifies);
}

static uint32_t filter_chunk_any(sim_fast *f, const mt_trace_record *c, uint32_t m,
                                 uint16_t *miss_at, uint32_t *nmiss, uint64_t *writes,
                                 uint64_t *modifies)
{
    return filter_chunk(f, f->chain->line_shift, c, m, miss_at, nmiss, writes, modifies);
}

/* sim_fast_records by the filter: chunk after chunk while each is taken
 * whole.  A modify that misses is a read miss; its write then hits (the
 * read brought the line to D1). */
static uint32_t filter_records(sim_fast *f, const mt_trace_record *r, uint32_t n,
                               mt_trace_feed_counts *counts)
{
    uint16_t miss_at[FILTER_CHUNK];
    uint64_t writes = 0, modifies = 0, missed = 0, missed_writes = 0;
    uint32_t taken = 0;
    while (taken < n) {
        const mt_trace_record *c = r + taken;
        uint32_t m = n - taken < FILTER_CHUNK ? n - taken : FILTER_CHUNK, nmiss;
        uint32_t k = (f->chain->line_shift == 6 ? filter_chunk_64 : filter_chunk_any)(
            f, c, m, miss_at, &nmiss, &writes, &modifies);
        for (uint32_t j = 0; j < nmiss; j++) {
            const mt_trace_record *x = c + miss_at[j];
            uint64_t *row = row_of(f, x->code);
            bool write = x->kind == MT_TRACE_WRITE;
            missed_writes += write;
            if (write) /* rare past the test: 0.6% of gzip's */
                line_chain_write(f->chain, x->addr, row);
            else /* inline (the replay: 0.544 -> 0.524 s) */
                line_chain(f->chain, x->addr, MT_SIM_READ, row);
        }
        missed += nmiss;
        taken += k;
        if (k < m)
            break;
    }
    uint64_t reads = taken - writes + modifies;
    sim_fast_count_top_hits(f, reads - (missed - missed_writes), writes - missed_writes);
    counts->records += taken;
    counts->reads += reads;
    counts->writes += writes;
    counts->modifies += modifies;
    return taken;
}

bool sim_fast_program_filter(const sim_fast *f, unsigned *line_shift, uint32_t *sets)
{
    sim_fast_top top;
    if (!sim_fast_top_of(f, &top) || !filter_takes(f))
        return false;
    *line_shift = f->chain->line_shift;
    *sets = f->chain->sets;
    return true;
}

/* The program's filter made the same test as filter_chunk's, on a frame
 * simulated whole: its references are D1 MRU hits, which change no state.
 * A modify is one reference of the code object's and a read and a write
 * of D1's, as add_run and filter_records count it. */
bool sim_fast_hits(sim_fast *f, uint32_t code, uint64_t reads, uint64_t writes,
                   uint64_t modifies)
{
    unsigned shift;
    uint32_t sets;
    if (!sim_fast_program_filter(f, &shift, &sets))
        return false;
    row_of(f, code)[0] += reads + writes + 2 * modifies;
    sim_fast_count_top_hits(f, reads + modifies, writes + modifies);
    return true;
}

/* Records decoded in a batch (sim_fast_records in internal.h): the feed's
 * per-record work (kind and size checks, the data-object call, the switch,
 * sim_access's size fixes and the dispatch) becomes one loop over a frame's
 * plain references, with the code object's row kept while the code object
 * stays the same and D1's MRU hits counted apart (derived since: internal.h's
 * sim_batch_records).  Exact: it takes only what sim_access would take
 * unchanged (a size of 1 or more that does not wrap), reads and writes both
 * go to D1 first, and the MRU test is the one sim_fast_access makes, done
 * again for a modify's write after its read went down the levels.
 * Callgrind, `mtool sim --misses-only --cachegrind -- phases-gcc-O2 400`
 * (5.06 M references, 3.5 M of them D1 MRU hits): the feed and the
 * simulator 797 -> 567 million instructions (157 -> 112 a reference), the
 * whole command 946 -> 635 million.  The loop is fast_mp.c's too
 * (sim_batch_records): shared, it costs about one instruction a reference
 * more here (`mtool sim --misses-only $GEOMETRY -- sharing-gcc-O2 200000`,
 * 2.4 M references: sim_fast_records 67.4 -> 69.7 million; AMD EPYC Zen 3).
 * Where its rule holds (most machines: a write-allocate D1), the filter
 * above takes the records instead, the batch's loop the rest. */
uint32_t sim_fast_records(sim_fast *f, const mt_trace_record *r, uint32_t n,
                          mt_trace_feed_counts *counts)
{
    sim_fast_top top;
    if (!sim_fast_top_of(f, &top))
        return 0;
    if (filter_takes(f))
        return filter_records(f, r, n, counts);
    return sim_batch_records(f, f, top, r, n, counts, row_of, batch_hit, batch_miss);
}

/* ---- one line, for the coherence directory (fast_mp.c) ---- */

/* The way of L holding the line at addr, or NULL. */
static uint64_t *way_of(const fast_level *L, uint64_t addr)
{
    uint64_t line = addr >> L->line_shift;
    uint32_t set = L->sets_pow2 ? (uint32_t)line & L->set_mask : (uint32_t)(line % L->sets);
    uint64_t *t = L->tags + (size_t)set * L->ways;
    for (uint32_t w = 0; w < L->ways; w++)
        if (t[w] == line + 1)
            return t + w;
    return NULL;
}

uint32_t sim_fast_line_levels(const sim_fast *f, uint64_t addr)
{
    uint32_t levels = 0;
    for (unsigned li = 0; li < f->nlevels; li++)
        if (way_of(&f->lv[li], addr))
            levels |= 1u << li;
    return levels;
}

/* D1 first, as sim.c's sim_line_held. */
bool sim_fast_line_held(const sim_fast *f, uint64_t addr)
{
    int d1 = f->top[MT_SIM_READ];
    if (way_of(&f->lv[d1], addr))
        return true;
    for (unsigned li = 0; li < f->nlevels; li++)
        if ((int)li != d1 && way_of(&f->lv[li], addr))
            return true;
    return false;
}

/* The line leaves its way and the ways behind it move up one: an empty way
 * ranks last, as sim.c's invalidated way with its stamp of 0. */
void sim_fast_line_invalidate(sim_fast *f, uint64_t addr)
{
    for (unsigned li = 0; li < f->nlevels; li++) {
        const fast_level *L = &f->lv[li];
        uint64_t *t = way_of(L, addr);
        if (!t)
            continue;
        size_t set = (size_t)(t - L->tags) / L->ways;
        uint64_t *set_end = L->tags + set * L->ways + L->ways;
        memmove(t, t + 1, (size_t)(set_end - t - 1) * sizeof *t);
        set_end[-1] = 0;
        L->mru[set] = L->tags[set * L->ways];
    }
}

void sim_fast_flush(sim_fast *f)
{
    for (unsigned i = 0; i < f->nlevels; i++) {
        fast_level *L = &f->lv[i];
        memset(L->tags, 0, (size_t)L->sets * L->ways * sizeof *L->tags);
        memset(L->mru, 0, L->sets * sizeof *L->mru);
    }
}

/* ---- results ---- */

void sim_fast_finish(sim_fast *f, mt_sim *s)
{
    for (unsigned i = 0; i < f->nlevels; i++) {
        const fast_level *L = &f->lv[i];
        mt_sim_level_stats *st = &s->lv[i].stats;
        st->reads = L->refs[MT_SIM_READ];
        st->writes = L->refs[MT_SIM_WRITE];
        st->fetches = L->refs[MT_SIM_IFETCH];
        st->read_misses = L->misses[MT_SIM_READ];
        st->write_misses = L->misses[MT_SIM_WRITE];
        st->fetch_misses = L->misses[MT_SIM_IFETCH];
        st->refs = st->reads + st->writes + st->fetches;
        st->misses = st->read_misses + st->write_misses + st->fetch_misses;
    }
}

static void add_tally(sim_fast *f, size_t *n, uint32_t code, const uint64_t *row)
{
    if (!row[0])
        return;
    mt_sim_code_tally *t = &f->sorted[(*n)++];
    memset(t, 0, sizeof *t);
    t->code = code;
    t->refs = row[0];
    for (unsigned l = 0; l < f->nlevels; l++)
        t->misses[l] = row[1 + l];
}

static int compare_codes(const void *a, const void *b)
{
    uint32_t x = ((const mt_sim_code_tally *)a)->code, y = ((const mt_sim_code_tally *)b)->code;
    return x < y ? -1 : x > y;
}

const mt_sim_code_tally *sim_fast_code_tallies(sim_fast *f, size_t *n)
{
    free(f->sorted);
    f->sorted = mt_xcalloc(f->ndirect + f->nfar + 1, sizeof *f->sorted);
    *n = 0;
    for (size_t c = 0; c < f->ndirect; c++)
        add_tally(f, n, (uint32_t)c, f->direct + c * f->row);
    for (size_t i = 0; i < f->nfar; i++)
        add_tally(f, n, f->far_codes[i], f->far + i * f->row);
    qsort(f->sorted, *n, sizeof *f->sorted, compare_codes); /* the far ones are in id order */
    return f->sorted;
}
