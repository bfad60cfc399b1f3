/* sim/internal.h — what the simulator's files share: the map from 64-bit
 * keys to indices (tallies, the 3C shadow), one cache level's state. */
#ifndef MTOOL_SIM_INTERNAL_H
#define MTOOL_SIM_INTERNAL_H

#include "sim.h"

#define SIM_NONE UINT32_MAX
#define SIM_INVALID_TAG UINT64_MAX

/* Open addressing, linear probing; a key is stored plus one so 0 is empty
 * (no key of ours is UINT64_MAX: line numbers are addresses shifted right).
 * Key and value side by side: one cache line a probe, not two. */
typedef struct {
    uint64_t key;
    uint32_t val;
} sim_map_slot;

typedef struct {
    sim_map_slot *slots;
    size_t cap, n; /* cap a power of two */
} sim_map;

/* The index stored for key, or SIM_NONE. */
uint32_t sim_map_get(const sim_map *m, uint64_t key);
/* Stores key -> val (key not yet there). */
void sim_map_put(sim_map *m, uint64_t key, uint32_t val);
void sim_map_free(sim_map *m);

/* A coherence directory's index, line -> entry (mp.c, fast_mp.c): the
 * line looked up last is tried before the map, as most references are to
 * it (callgrind: 1383 -> 1330 instructions a record in mp.c; on
 * bench/mp_same.sh's random lines no change). */
typedef struct {
    sim_map map;
    uint64_t last_line;
    uint32_t last_entry; /* its entry's index + 1 (0: none) */
} sim_dir_index;

/* The index of line's entry; a line without one gets `fresh` (*added:
 * the caller appends that entry). */
static inline uint32_t sim_dir_lookup(sim_dir_index *d, uint64_t line, uint32_t fresh, bool *added)
{
    *added = false;
    if (d->last_entry && d->last_line == line)
        return d->last_entry - 1;
    uint32_t i = sim_map_get(&d->map, line);
    if (i == SIM_NONE) {
        sim_map_put(&d->map, line, fresh);
        i = fresh;
        *added = true;
    }
    d->last_line = line;
    d->last_entry = i + 1;
    return i;
}

/* Hill's 3C oracle for one level: every line ever referenced (the cold
 * test), and which of them a fully associative LRU cache of the level's
 * number of lines holds (a doubly linked list, most recent at head). */
typedef struct {
    uint32_t prev, next;      /* SIM_NONE at the ends */
    bool resident;
} sim_shadow_node;

/* (Nodes as one array of structs, not three arrays: moving a node to the
 * front touches one cache line per node instead of three.) */
typedef struct {
    sim_map index;            /* line -> node */
    sim_shadow_node *nodes;
    size_t nnodes, cap;
    uint32_t head, tail;
    uint64_t nresident, capacity;
} sim_shadow;

/* -1 when the shadow holds the line, else MT_SIM_COLD (first reference)
 * or MT_SIM_CAPACITY (seen before, not held); the line is then its most
 * recent one.  *node: the line's node, which stays its own for the life of
 * the shadow (a flush keeps the nodes), for sim_shadow_ref_node. */
int sim_shadow_ref(sim_shadow *sh, uint64_t line, uint32_t *node);
/* The same for a line whose node is known: no hash lookup. */
int sim_shadow_ref_node(sim_shadow *sh, uint32_t node);
/* Empties the shadow as a flush empties the level: a line referenced again
 * misses there as a capacity miss, not a conflict one (not cold either: it
 * was seen). */
void sim_shadow_flush(sim_shadow *sh);
void sim_shadow_free(sim_shadow *sh);

/* The stride prefetcher's reference prediction table: direct-mapped by
 * instruction address. */
#define SIM_STRIDES 256
struct sim_stride {
    uint64_t pc, last;        /* the instruction, its last address */
    int64_t stride;
    uint32_t repeats;         /* times in a row the stride was seen again */
};

/* What a resident line carries beside its tag. */
typedef struct {
    uint64_t used;            /* chunks of line/64 bytes (bytes when line <= 64) referenced */
    uint32_t data, code;      /* the data and code objects whose reference brought it in */
    uint32_t reuses;          /* references after that one */
    uint32_t shadow_node;     /* the line's node in the level's 3C shadow + 1, 0 unknown */
    bool dirty;
    bool prefetched;          /* brought by the prefetcher, not referenced since */
} sim_meta;

typedef struct {
    mt_sim_level_desc desc;
    mt_sim_level_stats stats;
    uint32_t sets, ways, line_shift, chunk_shift;
    bool sets_pow2;
    int below;                /* index of the next level down, -1 for the last */
    uint64_t *tags;           /* sets x ways; SIM_INVALID_TAG when empty */
    sim_meta *meta;
    uint32_t *mru;            /* per set: the way referenced last (the fast path) */
    uint64_t *stamp;          /* LRU: per way, the clock of its last reference */
    uint64_t clock;
    uint64_t *tree;           /* tree pseudo-LRU: per set, one bit per inner node */
    uint32_t tree_leaves;     /* ways rounded up to a power of two */
    sim_shadow shadow;
    struct sim_stride *strides; /* the stride prefetcher's table, SIM_STRIDES entries */
    sim_map evictions;        /* evictor << 32 | victim -> index into mt_sim.evictions */
    sim_map uses, code_uses;  /* data -> index into mt_sim.uses, code -> into code_uses */
    uint32_t last_eviction, last_use, last_code_use; /* the entries used last, SIM_NONE */
} sim_level;

/* The simulator (sim.c), shared with the sampler (sample.c). */
/* A line leaving a level for the exclusive level below it, placed there
 * once the reference that evicted it is done (sim.h: a reference first
 * looks the line up below, the victim lands after). */
typedef struct {
    int level;
    uint64_t line;            /* in that level's line size */
    uint32_t data, code;
    bool dirty;
} sim_victim;

/* The misses-only simulator (fast.c), in place of the levels' own state. */
typedef struct sim_fast sim_fast;

struct mt_sim {
    sim_fast *fast;           /* non-NULL: a misses-only simulator */
    sim_level lv[MT_SIM_MAX_LEVELS];
    unsigned nlevels;
    int i1, d1;               /* indices in lv; i1 -1 when absent */
    bool straddle_line;
    uint64_t rng;             /* xorshift64* state, never 0; one for all levels */
    mt_sim_pair *pairs;
    size_t npairs, cap_pairs;
    sim_map pair_index;       /* code << 32 | data -> index */
    uint32_t last_pair;       /* the pair of the previous reference, SIM_NONE */
    mt_sim_eviction *evictions;
    size_t nevictions, cap_evictions;
    mt_sim_object_use *uses, *code_uses;
    size_t nuses, cap_uses, ncode_uses, cap_code_uses;
    sim_victim *victims;
    size_t nvictims, cap_victims;
    void *sorted[5];          /* what the accessors returned: pairs, evictions, uses,
                                 code tallies, code uses */
    uint64_t pc;              /* of the reference being simulated */
    uint32_t code;            /* its code object: the one a line it brings in keeps */
    struct sim_sampler *sampler; /* NULL: every reference simulated and counted */
    bool uncounted;           /* warming up: tallies of replacement and line use left alone */
    mt_sim_pair warm_pair;    /* what warming references tally into, thrown away */
    struct sim_mp *mp;        /* non-NULL: cpus > 1, the CPUs' hierarchies (mp.c) */
    uint64_t level_misses;    /* misses counted at every level so far (mp.c's
                                 count_misses looks no further while it stays) */
    struct sim_log *log;      /* non-NULL: references recorded for what-if replays */
    struct sim_tlb *tlb;      /* non-NULL: the data TLB (tlb.c); with cpus > 1 only the
                                 CPUs' sums, each CPU's hierarchy translating */
    struct sim_tlb *itlb;     /* non-NULL: the instruction TLB (tlb.c), likewise */
    struct sim_fast_mp *fast_mp; /* non-NULL: a misses-only simulator of cpus > 1 */
};

/* The longest line of the machine's levels (sample.c: its sets' unit;
 * whatif.c: what padding pads to). */
uint32_t sim_longest_line(const mt_sim_machine *m);

/* Sampling (sample.c): what to do with the reference at addr. */
typedef enum { SIM_SKIP, SIM_WARM, SIM_COUNT } sim_sample_step;
sim_sample_step sim_sample_ref(mt_sim *s, uint64_t addr);
/* A miss at level li in `set`, counted (the sets' spread). */
void sim_sample_miss(mt_sim *s, unsigned li, uint32_t set);
/* The end of the trace: a warm-up or on-period in progress closed. */
void sim_sample_finish(mt_sim *s);
void sim_sample_free(struct sim_sampler *sm);

/* The misses-only simulator (fast.c): whether it models the machine, its
 * state for a simulator whose levels are described (their geometry), one
 * reference, a flush, the level counts into s's stats, the code tallies. */
int sim_fast_check(const mt_sim_machine *m, mt_error *err);
sim_fast *sim_fast_new(const mt_sim *s);
void sim_fast_free(sim_fast *f);
void sim_fast_access(sim_fast *f, uint64_t addr, uint32_t size, mt_sim_kind kind, uint32_t code);
void sim_fast_flush(sim_fast *f);
/* A tracing copy's plain references (READ, WRITE, MODIFY records of a sane
 * size) from r on, up to the first other record: simulated as the feed
 * would, counted in *counts; returns how many records it took (0 when this
 * machine's D1 takes the feed's own path: sets no power of two). */
uint32_t sim_fast_records(sim_fast *f, const mt_trace_record *r, uint32_t n,
                          mt_trace_feed_counts *counts);
/* mt_sim_program_filter's answer; and a HITS record's references (timer.h)
 * counted as D1 hits of code object `code`: false, nothing counted, when
 * the filter's rule does not hold here. */
bool sim_fast_program_filter(const sim_fast *f, unsigned *line_shift, uint32_t *sets);
bool sim_fast_hits(sim_fast *f, uint32_t code, uint64_t reads, uint64_t writes,
                   uint64_t modifies);
void sim_fast_finish(sim_fast *f, mt_sim *s);
const mt_sim_code_tally *sim_fast_code_tallies(sim_fast *f, size_t *n);

/* D1's geometry in locals, for the batches (fast.c, fast_mp.c): read
 * through a pointer, each test reloaded them after every counter's
 * increment (a uint64_t store may alias them): 12 instructions a test. */
typedef struct {
    const uint64_t *mru;      /* per set, the tag of its most recent line */
    uint64_t set_mask;
    uint32_t line_shift;
} sim_fast_top;

/* D1's geometry for a batch; false when the batch cannot take this
 * machine (D1's sets no power of two). */
bool sim_fast_top_of(const sim_fast *f, sim_fast_top *top);

/* Whether [addr, end] lies within the line its D1 set used last: a hit
 * that changes no state at any level (LRU ranks that line first already;
 * nothing below is looked up), so counting it is all there is to do. */
static inline bool sim_fast_top_mru(sim_fast_top L, uint64_t line)
{
    return L.mru[line & L.set_mask] == line + 1;
}
static inline bool sim_fast_top_hit(sim_fast_top L, uint64_t addr, uint64_t end)
{
    uint64_t line = addr >> L.line_shift;
    return line == end >> L.line_shift && sim_fast_top_mru(L, line);
}

/* The loop of a batch of a tracing copy's plain references (fast.c's
 * sim_fast_records, fast_mp.c's; their comments say what it takes and
 * why it is exact): each reference counted, then `hit` (a test that
 * changes nothing it does not say, given `mru`: sim_fast_top_hit's answer)
 * or else `miss` (the reference from its top level on); D1's hits counted
 * once at the end.  Inlined into each with its functions, so the one-CPU
 * loop stays as it was. */
typedef bool sim_batch_hit(void *ctx, bool mru, uint64_t addr, uint64_t end, bool write);
typedef void sim_batch_miss(void *ctx, uint64_t addr, uint32_t size, mt_sim_kind kind,
                            uint32_t code, uint64_t *row, bool one_line);
typedef uint64_t *sim_batch_row(sim_fast *f, uint32_t code);
void sim_fast_count_top_hits(sim_fast *f, uint64_t reads, uint64_t writes);
static inline __attribute__((always_inline)) uint32_t
sim_batch_records(void *ctx, sim_fast *f, sim_fast_top top, const mt_trace_record *r, uint32_t n,
                  mt_trace_feed_counts *counts, sim_batch_row *row_of, sim_batch_hit *hit,
                  sim_batch_miss *miss)
{
    /* Only what a record cannot be counted without is counted in the loop
     * (kept in registers): the writes, the modifies and the references that
     * missed the MRU test.  The rest follows at the end: reads = records -
     * writes + modifies; D1's hits = its references (every plain reference
     * goes to D1 first) - those that went to `miss`; a code object's
     * references (records + modifies of its run) added when its run ends
     * (before the next row is looked up: that may move the rows).  Callgrind,
     * the consumer's batch (sim_fast_records, level_ref apart) of `mtool sim
     * --misses-only --cachegrind` on gzip -9 of 200 KB, 13.3 M records:
     * 699 -> 591 million instructions (52 -> 44 a record; AMD EPYC Zen 3). */
    const mt_trace_record *first = r, *stop = r + n, *run = r;
    uint64_t writes = 0, modifies = 0, run_modifies = 0, missed[2] = {0, 0};
    uint32_t code = n ? ~r->code : 0; /* the first record starts a run */
    uint64_t *row = NULL;
    for (; r < stop; r++) {
        unsigned kind = r->kind;
        uint32_t size = r->size;
        if (kind > MT_TRACE_MODIFY)
            break;
        if (!size)
            break;
        uint64_t addr = r->addr, end = addr + size - 1;
        if (r->code != code) {
            if (row)
                row[0] += (uint64_t)(r - run) + modifies - run_modifies;
            run = r;
            run_modifies = modifies;
            code = r->code;
            row = row_of(f, code);
        }
        /* Within one line of D1, and its set's most recent line: the MRU
         * test made once for a modify's read and write unless the read
         * went down the levels.  A reference that wraps around the address
         * space is not within one line, so it fails the test and is looked
         * for on that path only (the feed takes it: nothing of it counted
         * yet).  With the size and kind tested apart, callgrind as above:
         * the batch 660 -> 606 million instructions (with line_chain's
         * call); the test made once, 606 -> 599 million. */
        uint64_t line = addr >> top.line_shift;
        bool one_line = line == end >> top.line_shift;
        bool mru = one_line && sim_fast_top_mru(top, line);
        if (kind != MT_TRACE_WRITE && !hit(ctx, mru, addr, end, false)) {
            if (end < addr)
                break;
            missed[MT_SIM_READ]++;
            miss(ctx, addr, size, MT_SIM_READ, code, row, one_line);
            mru = one_line && sim_fast_top_mru(top, line);
        }
        if (kind != MT_TRACE_READ) {
            if (!hit(ctx, mru, addr, end, true)) {
                if (end < addr)
                    break;
                missed[MT_SIM_WRITE]++;
                miss(ctx, addr, size, MT_SIM_WRITE, code, row, one_line);
            }
            writes++;
            modifies += kind == MT_TRACE_MODIFY;
        }
    }
    uint32_t taken = (uint32_t)(r - first);
    uint64_t reads = taken - writes + modifies;
    if (row)
        row[0] += (uint64_t)(r - run) + modifies - run_modifies;
    sim_fast_count_top_hits(f, reads - missed[MT_SIM_READ], writes - missed[MT_SIM_WRITE]);
    counts->records += taken;
    counts->reads += reads;
    counts->writes += writes;
    counts->modifies += modifies;
    return taken;
}

/* The pieces the processors' misses-only simulator (fast_mp.c) drives a
 * CPU's or the shared levels' with: D1 hits a batch counted; a code
 * object's row (its references first); one reference from its top level
 * on, without the MRU test, returning at how many levels it missed (the
 * top one first, then the levels below it in order); a line's levels
 * (bit i = level i), whether any level holds it, the line dropped from
 * every level. */
uint64_t *sim_fast_row(sim_fast *f, uint32_t code);
unsigned sim_fast_ref(sim_fast *f, uint64_t addr, uint32_t size, mt_sim_kind kind,
                      uint64_t *row);
uint32_t sim_fast_line_levels(const sim_fast *f, uint64_t addr);
bool sim_fast_line_held(const sim_fast *f, uint64_t addr);
void sim_fast_line_invalidate(sim_fast *f, uint64_t addr);

/* Processors (mp.c): whether a machine's CPUs can be simulated; a
 * simulator of cpus > 1 whose levels hold the CPUs' totals once finished,
 * with every reference, flush and the finish going to the CPUs'. */
int sim_mp_check(const mt_sim_machine *m, mt_error *err);
void sim_mp_new(mt_sim *s, const mt_sim_machine *m);
void sim_mp_access(mt_sim *s, uint64_t addr, uint32_t size, mt_sim_kind kind, uint32_t code,
                   uint32_t data, uint64_t pc);
void sim_mp_flush(mt_sim *s);
void sim_mp_finish(mt_sim *s);
void sim_mp_free(struct sim_mp *mp);
/* A line in one CPU's hierarchy (sim.c), addr any byte of it: the levels
 * holding it (bit i = level i); it dropped from every level (its use
 * recorded, no writeback: its data goes to the CPU that takes it); its dirty
 * copies made clean (written back as another CPU reads it). */
uint32_t sim_line_levels(const mt_sim *s, uint64_t addr);
bool sim_line_held(const mt_sim *s, uint64_t addr); /* at any level */
void sim_line_invalidate(mt_sim *s, uint64_t addr);
void sim_line_clean(mt_sim *s, uint64_t addr);

/* The machines of one CPU's private levels and of the shared ones (their
 * first as "D1"); false when every level is private (*shared untouched). */
bool sim_mp_machines(const mt_sim_machine *m, mt_sim_machine *cpu, mt_sim_machine *shared);
/* A level's counts added to another's. */
void sim_add_level_stats(mt_sim_level_stats *to, const mt_sim_level_stats *from);

#define SIM_WORD_SHIFT 3 /* true and false sharing are told apart in 8-byte words */

/* A line two CPUs referenced, its words watched (mp.c, fast_mp.c): per
 * word its last writer and the write clock then, per CPU the clock when it
 * lost the line (Dubois et al.'s test of true sharing). */
typedef struct {
    uint64_t written_at[MT_SIM_MAX_WORDS];
    int8_t writer[MT_SIM_MAX_WORDS];       /* -1 before any write */
    uint64_t lost_at[MT_SIM_MAX_CPUS];
} sim_word_writers;
void sim_word_writers_init(sim_word_writers *w);
/* The 8-byte words of the line at `addr` (of 1 << line_shift bytes) that
 * [ref, ref + size) covers, bit w for bytes 8w..8w+7. */
/* (Inline: as a call from fast_mp.c's silent writes, 15 callgrind instructions
 * a record of bench/trace.sh's threads sample.) */
static inline uint64_t sim_words_of(uint32_t line_shift, uint64_t addr, uint64_t ref, uint32_t size)
{
    uint64_t lo = ref > addr ? ref - addr : 0;
    uint64_t end = addr + ((uint64_t)1 << line_shift) - 1, last = ref + size - 1;
    uint64_t hi = (last < end ? last : end) - addr;
    unsigned a = (unsigned)(lo >> SIM_WORD_SHIFT), b = (unsigned)(hi >> SIM_WORD_SHIFT);
    uint64_t upto = b >= 63 ? ~0ull : (1ull << (b + 1)) - 1;
    return upto & ~((1ull << a) - 1);
}
/* Did another CPU than c write one of `words` since c lost the line? */
bool sim_written_since_lost(const sim_word_writers *w, uint64_t words, unsigned c);
/* c wrote `words` at write clock `clock`. */
void sim_words_written(sim_word_writers *w, uint64_t words, unsigned c, uint64_t clock);

/* A traced run's thread ids, numbered in order of appearance. */
typedef struct {
    int32_t *ids;
    size_t n, cap;
} sim_thread_ids;
uint32_t sim_thread_number(sim_thread_ids *t, int32_t tid);

/* The misses-only simulator of several processors (fast_mp.c): whether it
 * models the machine; its state; the processors' accessors (sim.h's
 * mt_sim_cpus, ...); a reference's thread; one reference; a batch of a
 * tracing copy's plain references, as sim_fast_records; a flush; the
 * totals into s's levels; the code tallies of every CPU and the shared
 * levels. */
typedef struct sim_fast_mp sim_fast_mp;
int sim_fast_mp_check(const mt_sim_machine *m, mt_error *err);
sim_fast_mp *sim_fast_mp_new(const mt_sim_machine *m);
void sim_fast_mp_free(sim_fast_mp *fm);
unsigned sim_fast_mp_cpus(const sim_fast_mp *fm);
unsigned sim_fast_mp_private_levels(const sim_fast_mp *fm);
const mt_sim_cpu_stats *sim_fast_mp_cpu(const sim_fast_mp *fm, unsigned c);
void sim_fast_mp_set_thread(sim_fast_mp *fm, uint32_t k);
void sim_fast_mp_set_tid(sim_fast_mp *fm, int32_t tid);
void sim_fast_mp_access(sim_fast_mp *fm, uint64_t addr, uint32_t size, mt_sim_kind kind,
                        uint32_t code);
uint32_t sim_fast_mp_records(sim_fast_mp *fm, const mt_trace_record *r, uint32_t n,
                             mt_trace_feed_counts *counts);
void sim_fast_mp_flush(sim_fast_mp *fm);
void sim_fast_mp_finish(sim_fast_mp *fm, mt_sim *s);
const mt_sim_code_tally *sim_fast_mp_code_tallies(sim_fast_mp *fm, size_t *n);

/* Processors, for what-if replays (whatif.c): the thread of the
 * references that follow (0 with one CPU); a page's home set before the
 * first reference (owner-computes), in place of the placement's. */
uint32_t sim_mp_thread(const mt_sim *s);
void sim_mp_home(mt_sim *s, uint64_t page, unsigned node);

/* The recording of references for what-if replays (whatif.c): one
 * reference, a flush, the log freed. */
void sim_log_ref(mt_sim *s, uint64_t addr, uint32_t size, mt_sim_kind kind, uint32_t code,
                 uint32_t data, uint64_t pc);
void sim_log_flush(mt_sim *s);
void sim_log_free(struct sim_log *log);

/* The TLBs (tlb.c): the data TLB's state for a machine (NULL without TLB
 * levels), the instruction TLB's (NULL without ITLB); the translations of
 * one reference, each level's misses tallied into misses[level]; the
 * figures of another TLB of the same levels added (a CPU's, mp.c). */
struct sim_tlb *sim_tlb_new(const mt_sim_machine *m);
struct sim_tlb *sim_itlb_new(const mt_sim_machine *m);
void sim_tlb_free(struct sim_tlb *t);
void sim_tlb_access(struct sim_tlb *t, uint64_t addr, uint32_t size, uint64_t *misses);
void sim_tlb_add_stats(struct sim_tlb *to, const struct sim_tlb *from);

/* Nodes (numa.c): the settings machine.c hands on (sim.h's keys nodes,
 * page, placement, place, latency.*), their lines in a description file
 * (none while every one is at its default), their check; the home node of
 * each page, decided once (toucher: the node whose reference came first,
 * thread: the simulated thread of that reference) unless the program
 * moves it, by the description's ranges, then the program's own placement
 * (mbind ranges, then the thread's set_mempolicy), then the policy. */
bool sim_numa_key(const char *key);
int sim_numa_set(mt_sim_machine *m, const char *key, const char *value, mt_error *err);
void sim_numa_write(FILE *fp, const mt_sim_machine *m);
int sim_numa_check(const mt_sim_machine *m, mt_error *err);
typedef struct {
    uint32_t mode;            /* mt_sim_mpol */
    uint64_t nodes;           /* of the simulated ones */
} sim_policy;
typedef struct {
    sim_policy policy;
    uint64_t interleaved;     /* pages its interleave placed so far */
} sim_thread_policy;
typedef struct {
    uint64_t lo, hi;          /* bytes [lo, hi) */
    sim_policy policy;
} sim_bound_range;
typedef struct {
    const mt_sim_machine *m;
    unsigned page_shift;
    sim_map pages;            /* page number -> index in node */
    uint8_t *node;            /* the home of each page homed, in order */
    size_t nnode, cap_node;
    sim_thread_policy *threads; /* by thread number, DEFAULT beyond nthreads */
    size_t nthreads;
    sim_bound_range *ranges;  /* mbind's, in order (the last one covering a page wins) */
    size_t nranges, cap_ranges;
} sim_homes;
void sim_homes_init(sim_homes *h, const mt_sim_machine *m);
unsigned sim_home_of(sim_homes *h, uint64_t addr, unsigned toucher, uint32_t thread);
/* Page number `page` homed on `node`, unless it has a home already. */
void sim_homes_home(sim_homes *h, uint64_t page, unsigned node);
/* The program's placement calls (sim.h's mt_sim_set_policy, ...). */
bool sim_homes_set_policy(sim_homes *h, uint32_t thread, uint32_t mode, uint64_t nodes);
bool sim_homes_bind(sim_homes *h, uint64_t start, uint64_t len, uint32_t mode, uint64_t nodes,
                    uint32_t flags, unsigned caller);
bool sim_homes_move(sim_homes *h, uint64_t addr, uint32_t node);
/* Thread `thread` takes its creator's policy (as the kernel's clone). */
void sim_homes_inherit(sim_homes *h, uint32_t creator, uint32_t thread);
void sim_homes_free(sim_homes *h);

/* The full simulator's reference, its size already made sane (sim.c). */
void sim_full_access(mt_sim *s, uint64_t addr, uint32_t size, mt_sim_kind kind, uint32_t code,
                     uint32_t data, uint64_t pc);
/* mt_sim_access, inline for the feeds of this module (trace.c): a
 * misses-only reference reaches fast.c without a call in between (with
 * fast.c's scan and shift in one pass: 5261 -> 4800 million instructions,
 * callgrind, the whole of `mtool sim --misses-only --cachegrind --
 * phases-gcc-O2 4000`, 27 M references). */
static inline void sim_access(mt_sim *s, uint64_t addr, uint32_t size, mt_sim_kind kind,
                              uint32_t code, uint32_t data, uint64_t pc)
{
    if (!size)
        size = 1;
    if (size - 1 > UINT64_MAX - addr) /* no reference wraps around the address space */
        size = (uint32_t)(UINT64_MAX - addr + 1);
    if (s->fast)
        sim_fast_access(s->fast, addr, size, kind, code);
    else
        sim_full_access(s, addr, size, kind, code, data, pc);
}

#endif
