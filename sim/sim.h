/* sim/sim.h — the cache simulator: a machine description (levels, geometry,
 * replacement, inclusion, write policy), a simulator fed one memory reference
 * at a time, and the readers of trace files that feed it (docs/SIMULATOR.md).
 *
 * Notes (the simulator's conventions, decided once here; cf. the "Notes" at
 * the top of Valgrind's cachegrind/cg_sim.c):
 *  - Addresses are virtual; sets are chosen by bit selection (line number
 *    modulo the number of sets, a mask when that is a power of two); tags are
 *    whole line numbers.
 *  - Write-back: a written line is dirty; a dirty line leaving a level counts
 *    one writeback there and marks the line dirty in the level below if it
 *    holds it (an exclusive level below receives every victim, dirty or not).
 *    Writebacks are not references: they change no hit or miss count.
 *  - Write-allocate (default) or not, per level: with no-allocate, a write
 *    that misses fills nothing at that level and goes on to the next.
 *  - A reference straddling lines (straddle=access, the default and
 *    Cachegrind's rule, cg_sim.c's cachesim_ref_is_miss): every line it
 *    touches is looked up (state changes for each), the reference counts ONE
 *    reference and ONE miss if any line missed, and on a miss the whole
 *    reference goes on to the next level.  With straddle=line each line is a
 *    reference of its own and only the lines that missed go on.
 *  - Instruction fetches go to I1 when the machine has one, else to D1; both
 *    L1s share the levels below.  A trace without fetches leaves I1 untouched.
 *  - Inclusion, per level below L1, of the levels above it: non-inclusive
 *    (fills on a miss, evicts on its own: Cachegrind's LL), inclusive (its
 *    evictions invalidate the line in every level above: back-invalidation),
 *    exclusive (a victim cache: filled only by the lines the level above
 *    evicts; a hit moves the line up and out of it).
 *  - Miss causes (Hill's 3C), per level, on the references that reach it:
 *    cold = the line's first reference at that level; capacity = also a miss
 *    in a fully associative LRU cache of the same number of lines fed the same
 *    references; conflict = the rest.  A straddling reference that misses
 *    takes the cause of its first missing line.
 *  - Causes of replacement (MemSpy): every eviction of a valid line records
 *    (level, data object of the incoming reference, data object that brought
 *    the victim in).  Invalidations by an inclusive level below are counted
 *    apart (back_invalidations), not as replacements.
 *  - Line use (SIP): per line brought in, the bytes referenced before it left
 *    (spatial use) and the references to it after the one that brought it in
 *    (temporal use, "reuses"); lines still resident at the end count when
 *    mt_sim_finish is called, with the bytes used so far (as if they left
 *    then: no use is guessed for after the trace).  Each line's use is
 *    recorded twice, against the data object and against the code object
 *    (innermost loop or procedure) of the reference that brought it in (the
 *    fill: a miss, or the reference that set a prefetch off; a victim an
 *    exclusive level receives keeps those of the line it was above): per
 *    code object, the bytes used of its lines may have been used by other
 *    code, as SIP's per-line use.  Byte use is tracked in 64 chunks of line/64
 *    bytes (exact bytes for lines of 64 bytes or less).
 *  - Prefetch (off by default), per level, one of: tagged next-line (Smith
 *    1982): a miss on line X, or the first reference to a line the
 *    prefetcher brought, brings X+1; stride (Chen & Baer's reference
 *    prediction table, 256 entries by instruction address): a reference
 *    whose instruction moved by the same stride twice in a row brings the
 *    line of address + stride.  A prefetch fills only its level when the line
 *    is not there (no reference counted; the levels below are not touched:
 *    it stands for a fetch from wherever the line is).  A prefetched line
 *    left unreferenced counts as unused; it enters line use with no byte
 *    used.  Exclusive levels take no prefetcher.
 *  - Code and data objects are opaque 32-bit ids carried by each reference;
 *    the simulator tallies per (code, data) pair: references, and misses per
 *    level by cause.
 */
#ifndef MTOOL_SIM_H
#define MTOOL_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../analyzer/analyzer.h"
#include "../common/util.h"
#include "../costmodel/costmodel.h"
#include "../rewriter/rewriter.h"
#include "../timer/timer.h"

/* Levels: I1 and D1 at the top, then up to MT_SIM_MAX_LOWER unified levels
 * below them, in order (L2, L3, ...; the last one is "LL"). */
#define MT_SIM_MAX_LOWER 3
#define MT_SIM_MAX_LEVELS (2 + MT_SIM_MAX_LOWER)

typedef enum { MT_SIM_READ, MT_SIM_WRITE, MT_SIM_IFETCH } mt_sim_kind;
typedef enum { MT_SIM_LRU, MT_SIM_PLRU, MT_SIM_RANDOM } mt_sim_replacement;
typedef enum { MT_SIM_NON_INCLUSIVE, MT_SIM_INCLUSIVE, MT_SIM_EXCLUSIVE } mt_sim_inclusion;
typedef enum { MT_SIM_COLD, MT_SIM_CAPACITY, MT_SIM_CONFLICT, MT_SIM_NCAUSES } mt_sim_cause;
typedef enum { MT_SIM_PREFETCH_NONE, MT_SIM_PREFETCH_NEXT_LINE, MT_SIM_PREFETCH_STRIDE } mt_sim_prefetch;

typedef struct {
    char name[4];                    /* "I1", "D1", "L2", "L3", "L4" */
    bool present;
    uint64_t size;                   /* bytes */
    uint32_t ways, line;             /* line: bytes, a power of two */
    mt_sim_replacement replacement;
    mt_sim_inclusion inclusion;      /* of the levels above; L1s: non-inclusive */
    bool write_allocate;
    mt_sim_prefetch prefetch;        /* see Notes */
} mt_sim_level_desc;

/* ---- nodes and home memory (numa.c, mp.c; docs/SIMULATOR.md, "Nodes") ----
 *
 * Where a reference of a simulated processor was served, one class each:
 * its L1; another of its CPU's private levels; its node (a shared level of
 * the node, or a Modified copy in another CPU of the node); memory of its
 * own node (local) or of another (remote, clean); a Modified copy in a cache
 * of another node (remote dirty: that node is the requester's or the home,
 * two hops), or of a third node, neither the requester's nor the home
 * (three-hop, FlashPoint's term).  Latencies per class (core cycles,
 * load to use) come from the description. */
typedef enum {
    MT_SIM_AT_L1, MT_SIM_AT_PRIVATE, MT_SIM_AT_NODE, MT_SIM_AT_LOCAL, MT_SIM_AT_REMOTE,
    MT_SIM_AT_REMOTE_DIRTY, MT_SIM_AT_THREE_HOP, MT_SIM_NSERVED
} mt_sim_served;
/* The home node of a page: the node of the CPU whose reference first reached
 * memory or another cache for it (first touch: its lines were cold), or the
 * page number modulo the nodes (interleave); explicit ranges first. */
typedef enum { MT_SIM_FIRST_TOUCH, MT_SIM_INTERLEAVE } mt_sim_placement;
#define MT_SIM_MAX_PLACES 16
typedef struct {
    uint64_t lo, hi;                 /* bytes [lo, hi): every page they overlap */
    unsigned node;
} mt_sim_place;

/* The program's own placement (a traced run's events, din's policy lines;
 * docs/SIMULATOR.md, "The program's placement"): Linux's MPOL_* modes, by
 * their numbers; the mode flags (MPOL_F_*) are dropped, the nodes taken as
 * the simulated machine's.  mbind's flags: MPOL_MF_MOVE (and _ALL) move
 * the range's pages already homed off the policy's nodes. */
typedef enum {
    MT_SIM_MPOL_DEFAULT, MT_SIM_MPOL_PREFERRED, MT_SIM_MPOL_BIND, MT_SIM_MPOL_INTERLEAVE,
    MT_SIM_MPOL_LOCAL, MT_SIM_MPOL_PREFERRED_MANY, MT_SIM_MPOL_WEIGHTED_INTERLEAVE,
    MT_SIM_NMPOL
} mt_sim_mpol;
#define MT_SIM_MPOL_MODE_FLAGS 0xe000u /* MPOL_F_NUMA_BALANCING | _RELATIVE_ | _STATIC_NODES */
#define MT_SIM_MPOL_MF_MOVE 2u
#define MT_SIM_MPOL_MF_MOVE_ALL 4u

/* ---- the data TLB (tlb.c; docs/SIMULATOR.md, "The TLB") ----
 *
 * Conventions:
 *  - Up to MT_SIM_MAX_TLB levels of data TLB ("TLB1", "TLB2"), each
 *    `entries` translations in sets of `ways` (ways = entries: fully
 *    associative), LRU; a page's set is its page number modulo the sets.
 *    One page size for all of them, the description's tlb_page (4 KiB
 *    unless given; 2 MiB stands for a program on huge pages).
 *  - Every read and write translates each page it touches, once: a
 *    reference straddling two pages is two translations (either straddle
 *    rule).  A translation looks TLB1 up, on a miss TLB2, on a miss there
 *    the page is walked; every level that missed is filled (TLB2 holds
 *    what TLB1 evicted only when it holds it anyway: non-inclusive).  The
 *    last level's misses are the page walks.
 *  - Instruction fetches go through no data TLB but through the
 *    instruction TLB, one level ("ITLB", the first-level instruction TLB;
 *    same page size, sets and LRU), when the description has one: a fetch
 *    translates each page it touches like a read.  What an ITLB miss goes
 *    to (a unified or an instruction second-level TLB, a walk) is not
 *    modelled: its misses are counted, never charged as walks (stall.c).
 *  - TLB misses are tallied per (code, data) pair beside the cache misses
 *    (ITLB misses in the pair of the fetch), and per level (refs, misses).
 *  - With cpus > 1 each CPU has its TLBs (the levels' figures are the
 *    CPUs' sums); the misses-only simulator and the sampled modes simulate
 *    no TLB (their reports show none). */
#define MT_SIM_MAX_TLB 2
typedef struct {
    char name[8];                    /* "TLB1", "TLB2" */
    bool present;
    uint32_t entries, ways;
} mt_sim_tlb_desc;
typedef struct {
    const mt_sim_tlb_desc *desc;
    uint64_t refs, misses;           /* translations looked up here; those it missed */
} mt_sim_tlb_stats;

typedef struct {
    mt_sim_level_desc i1, d1;        /* i1.present false: fetches go to D1 */
    mt_sim_level_desc lower[MT_SIM_MAX_LOWER];
    unsigned nlower;
    bool straddle_line;              /* false: Cachegrind's rule (see Notes) */
    uint64_t seed;                   /* of the random replacement's generator, not 0 */
    unsigned cpus;                   /* simulated processors (0 or 1: one, no coherence) */
    char shared[5];                  /* the first level shared by the CPUs ("" = the last
                                        below L1, "none" = every level private) */
    uint8_t cpu_map[64];             /* the CPU of thread k < ncpu_map (others: k mod cpus) */
    unsigned ncpu_map;
    unsigned nodes;                  /* CPU c on node c * nodes / cpus; each its own shared levels */
    uint64_t page;                   /* bytes, a power of two (default 4 KiB) */
    mt_sim_tlb_desc tlb[MT_SIM_MAX_TLB]; /* the data TLB's levels, ntlb of them */
    mt_sim_tlb_desc itlb;            /* the instruction TLB ("ITLB"), when present */
    unsigned ntlb;
    uint64_t tlb_page;               /* bytes a translation covers (default 4 KiB) */
    mt_sim_placement placement;
    mt_sim_place place[MT_SIM_MAX_PLACES]; /* explicit homes, before the policy */
    unsigned nplaces;
    double latency[MT_SIM_NSERVED];  /* core cycles per class, 0 when not given */
    char source[256];                /* where the description came from */
} mt_sim_machine;

/* An empty description (no level), the defaults of every setting. */
void mt_sim_machine_init(mt_sim_machine *m);
/* This machine's caches from sysfs (`root` NULL: /sys/devices/system/cpu/
 * cpu0/cache), replacement LRU, non-inclusive, write-allocate; -1 with
 * "ROOT: ..." when it is absent or unreadable.  With root NULL the data
 * TLB's 4 KiB levels from cpuid (mt_tlb_from_cpuid), when it tells them. */
int mt_sim_machine_from_sysfs(mt_sim_machine *m, const char *root, mt_error *err);
/* A description file (docs/SIMULATOR.md): `version = 1`, then `key = value`
 * lines as mt_sim_machine_set takes them, `#` comments.  Replaces *m;
 * -1 with "PATH:LINE: reason". */
int mt_sim_machine_read(mt_sim_machine *m, const char *path, mt_error *err);
/* One setting, the same keys for the file and the command line:
 *   I1 | D1 | L2 | L3 | L4 = SIZE,WAYS,LINE (SIZE may end in K, M or G), or
 *                         "none": I1 dropped, or that level and all below it
 *   LL = SIZE,WAYS,LINE    the last level (added as L2 when there is none below L1)
 *   LEVEL.replacement = lru | plru | random,  replacement = ... (every level)
 *   LEVEL.inclusion = inclusive | exclusive | non-inclusive, inclusion = ... (below L1)
 *   LEVEL.write_allocate = yes | no,  write_allocate = ... (every level)
 *   LEVEL.prefetch = none | next-line | stride,  prefetch = ... (every level)
 *   straddle = access | line;  seed = N
 *   cpus = N (1..MT_SIM_MAX_CPUS);  shared = L2 | L3 | L4 | none;
 *   cpu_map = C0,C1,... (the CPUs of threads 0, 1, ...; see "processors")
 *   nodes = N (1..cpus);  page = SIZE;  placement = first-touch | interleave;
 *   place = LO-HI=NODE (hex or decimal bytes, HI excluded; up to 16, added);
 *   latency.CLASS = CYCLES (CLASS: mt_sim_served_name's)
 *   TLB1 | TLB2 = ENTRIES,WAYS, or "none": that TLB level and the one below;
 *   ITLB = ENTRIES,WAYS, or "none": the instruction TLB;
 *   tlb_page = SIZE (4K or more, a power of two; the ITLB's too)
 * -1 with "KEY: reason" (the caller adds where it came from). */
int mt_sim_machine_set(mt_sim_machine *m, const char *key, const char *value, mt_error *err);
/* Cachegrind's configuration on the levels given: no level between L1 and
 * the last, LRU, write-allocate, non-inclusive, no prefetch, straddle=access,
 * no TLB nor ITLB (Cachegrind has none). */
void mt_sim_machine_cachegrind(mt_sim_machine *m);
/* A description the simulator can run: D1 present, sizes a whole number of
 * sets, lines powers of two, ... -1 with the first problem. */
int mt_sim_machine_check(const mt_sim_machine *m, mt_error *err);
/* The description in the file format mt_sim_machine_read reads. */
void mt_sim_machine_write(FILE *fp, const mt_sim_machine *m);
const char *mt_sim_replacement_name(mt_sim_replacement r);
const char *mt_sim_inclusion_name(mt_sim_inclusion i);
const char *mt_sim_cause_name(mt_sim_cause c);
const char *mt_sim_prefetch_name(mt_sim_prefetch p);
/* "L1", "private", "node", "local", "remote", "remote_dirty", "three_hop". */
const char *mt_sim_served_name(mt_sim_served c);
const char *mt_sim_placement_name(mt_sim_placement p);

/* Spatial use in ninths: bucket 0 = no byte used, bucket k (1..8) = more
 * than (k-1)/8 and at most k/8 of the line.  Temporal use: bucket 0 = no
 * reuse, bucket k = 2^(k-1) .. 2^k - 1 reuses, the last one open. */
#define MT_SIM_SPATIAL_BUCKETS 9
#define MT_SIM_TEMPORAL_BUCKETS 16

typedef struct {
    const mt_sim_level_desc *desc;
    uint64_t refs, misses;
    uint64_t reads, read_misses, writes, write_misses, fetches, fetch_misses;
    uint64_t cause[MT_SIM_NCAUSES];  /* misses by cause; they sum to misses */
    uint64_t evictions, writebacks, back_invalidations;
    uint64_t prefetches, prefetch_hits, prefetch_unused; /* lines fetched ahead; first
                                                            references to them; left unused */
    uint64_t lines_used;             /* lines whose use was recorded (left or finished) */
    uint64_t spatial[MT_SIM_SPATIAL_BUCKETS], temporal[MT_SIM_TEMPORAL_BUCKETS];
} mt_sim_level_stats;

/* Per (code object, data object): references and misses per level by cause;
 * level index as in mt_sim_level_count's order.  (Every tally's record
 * starts with its uint32_t keys, for sim.c's sorting.) */
typedef struct {
    uint32_t code, data;
    uint64_t refs;
    uint64_t misses[MT_SIM_MAX_LEVELS][MT_SIM_NCAUSES];
    uint64_t tlb_misses[MT_SIM_MAX_TLB]; /* translations missed per TLB level */
    uint64_t itlb_misses;                /* fetches' translations the ITLB missed */
} mt_sim_pair;

/* Causes of replacement: at `level`, lines of `victim` evicted to make room
 * for lines of `evictor`, `count` times. */
typedef struct {
    uint32_t level, evictor, victim;
    uint64_t count;
} mt_sim_eviction;

/* Line use per (level, object whose reference brought the line in): the
 * data object (mt_sim_object_uses) or the code object (mt_sim_code_uses). */
typedef struct {
    uint32_t level, object;
    uint64_t lines, bytes_used, reuses;
} mt_sim_object_use;

/* Sampled simulation (docs/SIMULATOR.md, "Sampled modes"): the counts of
 * a part of the references, scaled up to estimates of the whole trace's.
 *  - sets (Kessler, Hill & Wood): only the references to 1 set in K=`period`
 *    at every level are simulated (sets chosen at random among the residues
 *    of the line, in the machine's longest line, modulo the levels' sets in
 *    common), the 3C shadows holding 1/K of the lines; a straddling
 *    reference goes by its first line.
 *  - time (Buck & Hollingsworth): of every `period` references, the first
 *    `warm` are simulated without being counted (they fill the caches the
 *    off-period left stale: the cold-start bias), the next `on` are
 *    simulated and counted, the rest skipped; the caches keep their state
 *    through the off-periods.  What bias remains is bounded: a miss that
 *    is the first reference to its line in the sample may be a hit in the
 *    full run, none other is (cold_start below).
 * Estimates: every count x K (sets, the expansion estimator) or x
 * (references offered / references counted) (time); each level's misses
 * with an error bound of two standard errors from the spread of misses over
 * the sampled sets (sets: G/K of every G, drawn at random once, G the
 * levels' sets in common) or the on-periods (time). */
typedef enum { MT_SIM_EXACT, MT_SIM_SAMPLE_SETS, MT_SIM_SAMPLE_TIME } mt_sim_sampling;
typedef struct {
    mt_sim_sampling mode;
    uint32_t on, period, warm;       /* sets: 1 of every period (on = 1, warm = 0) */
} mt_sim_sample;
/* "1/K" for sets; "ON/PERIOD" or "ON/PERIOD/WARM" for time (WARM defaults
 * to ON; warm + on <= period).  -1 with "SPEC: reason". */
int mt_sim_sample_parse(mt_sim_sample *smp, mt_sim_sampling mode, const char *spec,
                        mt_error *err);
/* Whether the machine's levels can be sampled 1 set in `period`. */
int mt_sim_sample_check(const mt_sim_sample *smp, const mt_sim_machine *m, mt_error *err);
typedef struct {
    mt_sim_sample sample;
    uint64_t offered, counted;       /* references given to mt_sim_access; counted of them */
    double scale;                    /* offered / counted, what the counts were multiplied by */
    double error[MT_SIM_MAX_LEVELS]; /* each level's misses: two standard errors, relative
                                        to the estimate; -1 when none can be given */
    double cold_start[MT_SIM_MAX_LEVELS]; /* time: the share of the misses that were first
                                        references in the sample, each of which the full
                                        run may have hit (a line of an off-period): the
                                        bound of the cold-start bias, downwards */
} mt_sim_estimate;

typedef struct mt_sim mt_sim;

/* A simulator for a checked machine, every line invalid. */
mt_sim *mt_sim_new(const mt_sim_machine *m);
/* The misses-only simulator (fast.c; docs/SIMULATOR.md, "Speed"): the same
 * hits and misses per level and per code object as mt_sim_new's on the
 * same references, and nothing else: per level only refs, misses and their
 * split by kind (no causes, evictions, writebacks, line use, prefetch
 * counts), no pairs, replacements or object use (those accessors return
 * none), no sampling.  It models LRU, non-inclusive levels without
 * prefetch (Cachegrind's model), write-allocate or not, either straddle
 * rule; NULL with "LEVEL: reason" for another machine.  With cpus > 1
 * (fast_mp.c), on one node, the processors' directory too: mt_sim_cpu's
 * references, misses per level, coherence misses per private level, true
 * and false sharing, invalidations, interventions and upgrades, as the
 * full simulator's (not its 3C causes or served classes); no per-thread,
 * per-object or shared-line figures. */
mt_sim *mt_sim_new_misses_only(const mt_sim_machine *m, mt_error *err);
bool mt_sim_is_misses_only(const mt_sim *s);
/* Whether a tracing copy may leave D1's sure hits out of its frames and
 * count them (timer.h's filter, $MTOOL_TRACE_FILTER): the misses-only
 * simulator of one CPU whose D1 is LRU, write-allocate, of sets a power
 * of two, its lower levels nested (the rule sim/fast.c's filter relies
 * on); if so, D1's line shift and sets. */
bool mt_sim_program_filter(const mt_sim *s, unsigned *line_shift, uint32_t *sets);
/* Samples the references from now on (a checked sample, before the first
 * reference). */
void mt_sim_set_sample(mt_sim *s, const mt_sim_sample *smp);
/* After mt_sim_finish, on a sampled simulator: every count scaled to an
 * estimate of the whole trace's (once); NULL for an exact simulator. */
const mt_sim_estimate *mt_sim_estimate_counts(mt_sim *s);
void mt_sim_free(mt_sim *s);
/* One reference of `size` bytes (at least 1) at `addr`, made by the
 * instruction at `pc` (0 when unknown: the stride prefetcher's key). */
void mt_sim_access(mt_sim *s, uint64_t addr, uint32_t size, mt_sim_kind kind, uint32_t code,
                   uint32_t data, uint64_t pc);
/* Writes back and invalidates every level (Dinero's flush record). */
void mt_sim_flush(mt_sim *s);
/* Records the use of every line still resident (call once, at the end). */
void mt_sim_finish(mt_sim *s);

/* Levels in order: I1 (if present), D1, then the lower ones. */
unsigned mt_sim_level_count(const mt_sim *s);
const mt_sim_level_stats *mt_sim_level(const mt_sim *s, unsigned i);
/* The data TLB's levels simulated (0: none, see "the data TLB"), each one's
 * figures; the page size they translate. */
unsigned mt_sim_tlb_count(const mt_sim *s);
const mt_sim_tlb_stats *mt_sim_tlb(const mt_sim *s, unsigned i);
uint64_t mt_sim_tlb_page(const mt_sim *s);
/* The instruction TLB's level and figures, NULL when it is not simulated
 * or translated no fetch (a trace without fetches: a traced run's). */
const mt_sim_tlb_stats *mt_sim_itlb(const mt_sim *s);
/* Tallies, sorted by (code, data), (level, evictor, victim), (level, data),
 * (level, code):
 * copies, valid until the same accessor is called again or mt_sim_free. */
const mt_sim_pair *mt_sim_pairs(mt_sim *s, size_t *n);
const mt_sim_eviction *mt_sim_evictions(mt_sim *s, size_t *n);
const mt_sim_object_use *mt_sim_object_uses(mt_sim *s, size_t *n);
/* The same per (level, code object), sorted likewise. */
const mt_sim_object_use *mt_sim_code_uses(mt_sim *s, size_t *n);
/* Per code object (sorted by id, those with a reference): references and
 * misses per level, either simulator's (the pairs summed per code). */
typedef struct {
    uint32_t code;
    uint64_t refs;
    uint64_t misses[MT_SIM_MAX_LEVELS];
    uint64_t tlb_misses[MT_SIM_MAX_TLB]; /* the full simulator's; 0 in the misses-only one */
    uint64_t itlb_misses;                /* likewise */
} mt_sim_code_tally;
const mt_sim_code_tally *mt_sim_code_tallies(mt_sim *s, size_t *n);

/* ---- processors and coherence (mp.c; docs/SIMULATOR.md, "Processors") ----
 *
 * With cpus = N > 1 each CPU has its own copy of the private levels (I1, D1
 * and every level above the first shared one) and the CPUs of a node share
 * the rest (one node by default; see "nodes and home memory" above).
 * A reference is made by the CPU of its thread: thread k runs on CPU k mod N,
 * or on the CPU cpu_map gives it (threads numbered by the trace's 4th din column, or in the order a traced
 * run's threads first appear).  A directory over the private levels keeps
 * them coherent with MESI (Intel's protocol, this machine's; MOESI's Owned
 * state only spares the writeback of a dirty line read by another CPU, a
 * count we do not model as a miss):
 *  - a read missing in its CPU's private levels takes the line Exclusive when
 *    no other CPU holds it, else Shared; a CPU holding it Modified supplies it
 *    (an intervention: a three-hop miss) and keeps it Shared, clean;
 *  - a write needs the line alone: a write hit on a Shared line is an upgrade,
 *    a write miss a read for ownership; either invalidates every other CPU's
 *    copy (at every private level; one invalidation sent by the writer, one
 *    received per level that held it), a Modified copy being an intervention;
 *  - lines leave private levels silently (the directory learns it at the next
 *    reference); instruction fetches take no part in coherence;
 *  - with nodes > 1, a write that is not silent, and the first write to an
 *    Exclusive line, also drop the line from other nodes' shared levels
 *    (they hold clean copies only: a Modified line leaving its CPU's
 *    private levels counts as written back to its home memory);
 *  - a coherence miss: a private-level miss on a line its CPU lost to an
 *    invalidation since it last held it, split (Dubois et al. 1993) into true
 *    sharing (a byte now referenced was written by another CPU since the line
 *    was lost) and false sharing (only other bytes of the line were); the
 *    3C oracle's verdict (conflict or capacity) moves to "coherence" in the
 *    level totals and the CPUs' (the per-object pairs keep the 3C verdict,
 *    the coherence tallies below split them);
 *  - words (8 bytes) are tracked only for lines two CPUs have referenced:
 *    per word its last writer, per CPU the words read and written.
 * It takes straddle = access, shared levels non-inclusive, and every private
 * level (I1 too) with D1's line (the coherence unit); no sampling; the
 * misses-only simulator on one node only. */
#define MT_SIM_MAX_CPUS 16
#define MT_SIM_MAX_WORDS 64          /* 8-byte words of a line (lines up to 512 bytes) */

typedef struct {
    uint64_t refs, threads;          /* references made; threads mapped to it */
    uint64_t misses[MT_SIM_MAX_LEVELS];
    uint64_t cause[MT_SIM_MAX_LEVELS][MT_SIM_NCAUSES]; /* with coherence taken out */
    uint64_t coherence[MT_SIM_MAX_LEVELS];             /* the 4th cause */
    uint64_t true_sharing, false_sharing;  /* coherence misses at its first private level */
    uint64_t invalidations_sent, invalidations_received[MT_SIM_MAX_LEVELS];
    uint64_t interventions;          /* its misses a Modified line elsewhere supplied */
    uint64_t interventions_served;   /* its Modified lines supplied to another CPU */
    uint64_t upgrades;               /* its write hits on Shared lines */
    uint64_t served[MT_SIM_NSERVED]; /* its references by where served; they sum to refs */
} mt_sim_cpu_stats;

/* One thread's share of its CPU's figures: its references, misses per
 * level by cause (coherence the 4th), true and false sharing misses, the
 * invalidations its writes sent, the interventions its misses needed, its
 * upgrades, its references by where served.  What a CPU's caches undergo
 * for others (invalidations received, interventions served) belongs to no
 * thread: 0 here, and `threads` is 1. */
typedef struct {
    uint32_t thread;                 /* its number: the din column, or a traced run's
                                        order of appearance */
    unsigned cpu;
    mt_sim_cpu_stats stats;
} mt_sim_thread_stats;

/* References per (code object, data object, CPU) by where they were served,
 * sorted by (code, data, cpu). */
typedef struct {
    uint32_t code, data, cpu;
    uint64_t served[MT_SIM_NSERVED];
} mt_sim_served_pair;

/* Coherence misses and events per (code object, data object), sorted by
 * them: an event is counted against the reference that caused it (the
 * invalidations a write sent, one per CPU whose copy went; a miss a
 * Modified copy elsewhere supplied; a write hit on a Shared line). */
typedef struct {
    uint32_t code, data;
    uint64_t true_sharing, false_sharing;
    uint64_t invalidations, interventions, upgrades;
} mt_sim_coherence_pair;

/* A line two CPUs referenced: its coherence events, and per CPU the words
 * read and written (bit w = bytes 8w..8w+7) since it became shared. */
typedef struct {
    uint64_t addr;                   /* its first byte */
    uint32_t data;                   /* data object of its last reference */
    uint32_t words;                  /* 8-byte words in a line */
    uint64_t true_sharing, false_sharing, invalidations, interventions, upgrades;
    uint64_t read_words[MT_SIM_MAX_CPUS], written_words[MT_SIM_MAX_CPUS];
} mt_sim_shared_line;

/* 1 for a uniprocessor simulator. */
unsigned mt_sim_cpus(const mt_sim *s);
/* Levels 0..n-1 (mt_sim_level's order) are each CPU's own, the rest shared. */
unsigned mt_sim_private_levels(const mt_sim *s);
/* The thread of the references that follow: thread k (its number in a
 * trace), or a traced run's thread id (numbered as they first appear). */
void mt_sim_set_thread(mt_sim *s, uint32_t k);
void mt_sim_set_tid(mt_sim *s, int32_t tid);
/* The program's placement, at this point of the trace (nothing for a
 * uniprocessor simulator; false when ignored, as the kernel would refuse
 * it: an unknown mode, no simulated node in a mask that needs one):
 * set_mempolicy of the current thread, for its later first touches; mbind
 * of [start, start + len), for their later first touches (MT_SIM_MPOL_DEFAULT:
 * the range's policy dropped), its pages already homed moved with
 * MT_SIM_MPOL_MF_MOVE; move_pages of one page, if it has a home. */
bool mt_sim_set_policy(mt_sim *s, uint32_t mode, uint64_t nodes);
bool mt_sim_bind(mt_sim *s, uint64_t start, uint64_t len, uint32_t mode, uint64_t nodes,
                 uint32_t flags);
bool mt_sim_move_page(mt_sim *s, uint64_t addr, uint32_t node);
/* The current thread takes the policy of the traced run's thread `creator`
 * (a thread id, mt_sim_set_tid's), which created it; false when that
 * thread is unknown. */
bool mt_sim_inherit_policy(mt_sim *s, int32_t creator);
/* After mt_sim_finish: per CPU (NULL for a uniprocessor simulator). */
const mt_sim_cpu_stats *mt_sim_cpu(const mt_sim *s, unsigned cpu);
/* Per thread, in order of their first reference (none for a uniprocessor
 * simulator); they sum to the CPUs' references, misses, sharing misses,
 * invalidations sent, interventions, upgrades and classes. */
const mt_sim_thread_stats *mt_sim_threads(const mt_sim *s, size_t *n);
/* Copies, valid until the same accessor is called again or mt_sim_free:
 * pairs sorted by (code, data); shared lines by coherence misses, most
 * first, then address. */
const mt_sim_coherence_pair *mt_sim_coherence_pairs(mt_sim *s, size_t *n);
const mt_sim_shared_line *mt_sim_shared_lines(mt_sim *s, size_t *n);
const mt_sim_served_pair *mt_sim_served_pairs(mt_sim *s, size_t *n);
/* The machine's nodes (1 for a uniprocessor simulator), a CPU's node. */
unsigned mt_sim_nodes(const mt_sim *s);
unsigned mt_sim_cpu_node(const mt_sim *s, unsigned cpu);
/* The description of a simulator of cpus > 1 (NULL for one CPU). */
const mt_sim_machine *mt_sim_mp_machine(const mt_sim *s);
/* The stall of references served as counted: per class, the cycles its
 * latency exceeds an L1 hit's (the cost model's), every one waited for
 * alone; -1 when the description gives no latency.local. */
double mt_sim_served_stall(const mt_sim_machine *m, const uint64_t served[MT_SIM_NSERVED]);

/* ---- what-if remedies (whatif.c; docs/SIMULATOR.md, "What-if remedies") ----
 *
 * A simulator told to record (before its first reference) keeps every
 * reference it is given, with its thread, in a temporary file; after
 * mt_sim_finish, mt_whatif_run simulates those same references again, once
 * per remedy, each with one change, and compares the counts with the run's:
 *  - pad_words: the references to one data object moved to a place of their
 *    own (lines no other object shares), each of its 8-byte words at the
 *    start of a line of its own (the machine's longest), offsets within a
 *    word kept: a struct's fields, or an array's per-thread counters, a line
 *    apart (objects of at most 4 KiB);
 *  - pad_rows: the data object moved likewise, one line of padding inserted
 *    after every row, a row being the power-of-two stride its references
 *    most often moved by (at least D1's way size: sets * line), so that
 *    rows no longer fall into one set;
 *  - line: every level's line halved or doubled (sizes and ways kept);
 *  - placement (nodes > 1): first touch, interleave, or owner-computes (each
 *    page homed on the node whose CPUs referenced it most in the run, of
 *    nodes tied the one that referenced it last);
 *  - mapping (nodes > 1): threads placed so that those sharing the most
 *    lines are on one node (greedy, a node filled at a time).
 * Only addresses (pad), the description (line, placement, cpu_map) or the
 * homes of pages (owner-computes) change; the order, sizes, kinds, code
 * and data objects and threads of the references are the recorded ones.
 * Figures per level: misses by cause, coherence apart (the CPUs' view);
 * stall cycles at the description's latency classes (mt_sim_served_stall:
 * with one CPU the levels below L1 are private but the last, which is
 * node), -1 without latency.local. */
#define MT_WHATIF_TOP 5                /* problems: code x data cells */
#define MT_WHATIF_MAX_REMEDIES 20
#define MT_WHATIF_COHERENCE MT_SIM_NCAUSES /* the 4th cause's index in figures */
typedef enum {
    MT_WHATIF_PAD_WORDS, MT_WHATIF_PAD_ROWS, MT_WHATIF_LINE, MT_WHATIF_PLACEMENT,
    MT_WHATIF_MAPPING
} mt_whatif_kind;
typedef struct {
    uint64_t misses[MT_SIM_MAX_LEVELS][MT_SIM_NCAUSES + 1]; /* cold, capacity, conflict,
                                        coherence (a cell's: the 3C verdict only, its
                                        coherence misses in the sharing counts) */
    uint64_t true_sharing, false_sharing; /* coherence misses at the first private level */
    uint64_t remote;                 /* references served by another node's memory or cache */
    double cycles;                   /* stall; -1 when the description has no latency */
} mt_whatif_figures;
typedef struct {
    mt_whatif_kind kind;
    uint32_t data;                   /* pad: the object */
    uint64_t row;                    /* pad_rows: bytes a row (one line inserted after each) */
    uint32_t line;                   /* pad: the line each word or row is padded to; line:
                                        the new line size */
    int placement;                   /* placement: mt_sim_placement, or
                                        MT_WHATIF_OWNER_COMPUTES */
    uint8_t cpu_map[64];             /* mapping: the CPU of thread k < ncpu_map */
    unsigned ncpu_map;
    mt_whatif_figures total, cell[MT_WHATIF_TOP];
} mt_whatif_remedy;
#define MT_WHATIF_OWNER_COMPUTES 2
typedef struct {
    uint64_t refs;                   /* references recorded and replayed */
    bool exact;                      /* the unchanged replay gave the run's misses */
    unsigned ncells;                 /* top problems: the cells with the most conflict
                                        misses (at any one level) + coherence misses +
                                        remote references */
    uint32_t code[MT_WHATIF_TOP], data[MT_WHATIF_TOP];
    mt_whatif_figures base, base_cell[MT_WHATIF_TOP];
    mt_whatif_remedy remedy[MT_WHATIF_MAX_REMEDIES];
    unsigned nremedies;
    int best[MT_WHATIF_TOP];         /* per cell, the remedy that saves it the most cycles
                                        (misses without latencies), none making the whole
                                        run worse; -1 when none saves */
} mt_whatif_report;
/* Records the references from now on (no sampling, not misses-only). */
void mt_sim_record(mt_sim *s);
/* s finished and recording, m its description: the remedies' figures.
 * pad_other: data object 0 may be padded (a trace that names no object,
 * where 0 is every reference; elsewhere it is "other", no one object).
 * -1 when the recording failed (the temporary file). */
int mt_whatif_run(mt_sim *s, const mt_sim_machine *m, bool pad_other, mt_whatif_report *out,
                  mt_error *err);
const char *mt_whatif_kind_name(mt_whatif_kind k);
/* "first-touch", "interleave", "owner-computes". */
const char *mt_whatif_placement_name(int placement);

/* Trace files. */
typedef enum { MT_TRACE_DIN, MT_TRACE_LACKEY } mt_trace_format;
/* "din" or "lackey"; -1 for another name. */
int mt_trace_format_of(const char *name, mt_trace_format *f);
/* The code object of an instruction address (lackey's I lines), or
 * `fallback` when the caller knows none; NULL: every reference gets 0. */
typedef uint32_t (*mt_trace_code_of)(void *ctx, uint64_t addr);
/* The data object a trace's read or write of `size` bytes at `addr`
 * touches (dataobj/'s id; ctx as code_of's); NULL: every one gets 0. */
typedef uint32_t (*mt_trace_data_at)(void *ctx, uint64_t addr, uint32_t size, bool write);
typedef struct {
    uint64_t records, reads, writes, fetches, modifies, flushes;
} mt_trace_counts;
/* The procedures of an analyzed program as code objects, at the addresses a
 * trace gives: a trace address A is link-time address A - bias (0 for a
 * non-PIE binary; a PIE's load base, where its link-time 0 was mapped). */
typedef struct {
    const mt_program *prog;
    uint64_t bias;
} mt_sim_code_map;
/* Where Valgrind (amd64, 3.x) maps a PIE main executable's link-time 0:
 * the load base of every lackey trace of a PIE (docs/SIMULATOR.md). */
#define MT_SIM_VALGRIND_PIE_BASE 0x108000u
/* An mt_trace_code_of with ctx = an mt_sim_code_map: procedure index + 1,
 * 0 for an address in none of them. */
uint32_t mt_sim_procedure_of(void *map, uint64_t addr);
/* Reads the trace at `path` in `format` into the simulator, record by
 * record.  din: "LABEL ADDRESS [SIZE [THREAD]]" (thread: decimal, 0 when
 * absent, see mt_sim_set_thread; label 0 read, 1 write, 2 fetch, 3
 * read, 4 flush; hex address; decimal size, default 1).  lackey (valgrind
 * --tool=lackey --trace-mem=yes): "I  ADDR,SIZE", " L ADDR,SIZE",
 * " S ADDR,SIZE", " M ADDR,SIZE" (a load then a store), valgrind's own
 * lines ("==", "--", "**", "###") skipped.  din's placement lines (our
 * extension, docs/SIMULATOR.md): "mempolicy MODE NODES [THREAD]", "mbind
 * ADDRESS LENGTH MODE NODES [move]", "move_pages ADDRESS NODE" (MODE
 * default, preferred, bind, interleave, local, preferred_many or
 * weighted_interleave; NODES a hex mask; LENGTH hex bytes; NODE decimal).
 * -1 with "PATH:LINE: reason" at the first malformed line. */
int mt_trace_read(mt_sim *s, const char *path, mt_trace_format format, mt_trace_code_of code_of,
                  mt_trace_data_at data_at, void *ctx, mt_trace_counts *counts, mt_error *err);

/* Records of a tracing copy (timer/timer.h, mt_trace_record), fed as they
 * arrive, thread by thread: a modify is a read then a write (as lackey's M:
 * Cachegrind counts it once, its store always hits); rep movs/stos are
 * expanded element by element, source then destination, as Valgrind runs
 * them (the direction flag taken as clear, the ABI's state); a gather's or
 * scatter's group of records becomes its elements whose mask bit is set, in
 * element order, as Valgrind runs them; references of
 * no size or of an unknown kind are counted in `damaged` and skipped.  A
 * thread's records of one instruction may span two of its frames, so the
 * feed keeps each thread's pending rep operands. */
typedef struct mt_trace_feed mt_trace_feed;
typedef struct {
    uint64_t records, reads, writes, modifies, rep_elements, vector_elements, events, damaged;
    /* References a HITS record stood for (timer.h's filter: counted in
     * records, reads, writes and modifies too), and those of them from a
     * frame that another thread's records had interrupted before it (the
     * filter's rule did not hold: a process it was not meant for). */
    uint64_t hits, hits_interleaved;
} mt_trace_feed_counts;
mt_trace_feed *mt_trace_feed_new(mt_sim *s);
/* Every record (events too: allocations, the load bias; timer.h) goes to
 * data_of first, which returns a reference's data object (dataobj/); rep
 * elements take their operand's.  Without it every data object is 0. */
typedef uint32_t (*mt_trace_data_of)(void *ctx, int32_t tid, const mt_trace_record *r);
void mt_trace_feed_set_data(mt_trace_feed *f, mt_trace_data_of data_of, void *ctx);
void mt_trace_feed_records(mt_trace_feed *f, int32_t tid, const mt_trace_record *r, uint32_t n);
const mt_trace_feed_counts *mt_trace_feed_counts_of(const mt_trace_feed *f);
void mt_trace_feed_free(mt_trace_feed *f);

/* The order the threads' frames reach the simulator (docs/SIMULATOR.md,
 * "Threads"): by time, each record of a frame given a time between its
 * STAMP and its sending (timer.h), evenly; whole frames by their STAMP; or
 * as they arrive (sent when full, before stamps).  $MTOOL_TRACE_ORDER
 * (stamps, frames or arrival; stamps when unset) picks one for a traced
 * run (run/trace.c), for measuring. */
typedef enum { MT_TRACE_BY_STAMPS, MT_TRACE_BY_FRAMES, MT_TRACE_BY_ARRIVAL } mt_trace_order;
/* "stamps", "frames" or "arrival"; -1 for another name. */
int mt_trace_order_of(const char *name, mt_trace_order *o);
/* The merge: frames as they arrive in, runs of one thread's records out to
 * `sink` in the order, at most `window` records held (the first frame out
 * when one more comes beyond them: a frame arriving after records later than its own
 * went out comes out as soon as it is the earliest held). */
typedef void (*mt_trace_sink)(void *ctx, int32_t tid, const mt_trace_record *r, uint32_t n);
typedef struct mt_trace_merge mt_trace_merge;
mt_trace_merge *mt_trace_merge_new(mt_trace_order order, uint32_t window, mt_trace_sink sink,
                                   void *ctx);
void mt_trace_merge_frame(mt_trace_merge *m, int32_t tid, const mt_trace_record *r, uint32_t n);
/* The same for records in a malloc'd block of which the merge takes charge
 * (it frees it): no copy. */
void mt_trace_merge_take(mt_trace_merge *m, int32_t tid, mt_trace_record *r, uint32_t n);
/* The same for records the caller keeps: a lone thread's long frame goes
 * out at once (after what it holds), any other is copied. */
void mt_trace_merge_lend(mt_trace_merge *m, int32_t tid, const mt_trace_record *r, uint32_t n);
/* Every frame held out, in the order. */
void mt_trace_merge_drain(mt_trace_merge *m);
void mt_trace_merge_free(mt_trace_merge *m);

/* ---- the stall estimate (stall.c; docs/SIMULATOR.md, "The stall estimate") ---- */

/* Per code object, how regular its stream of references is: references to
 * a line other than its previous one ("new lines"), and those of them in a
 * 4 KiB page where it went to a new line recently (among its last 16 such
 * pages): misses a hardware prefetcher sees coming and that do not wait
 * for the previous one.  Fed the records of a traced run as they come. */
typedef struct mt_stall_streams mt_stall_streams;
/* independent[c] (NULL: none): code object c is a loop that chases no
 * pointer (mt_chasing_loops), whose irregular misses overlap. */
mt_stall_streams *mt_stall_streams_new(uint32_t ncodes, const bool *independent);
void mt_stall_streams_add(mt_stall_streams *st, const mt_trace_record *r, uint32_t n);
void mt_stall_streams_free(mt_stall_streams *st);

/* The cost of a load served by each simulated level (index as
 * mt_sim_level's; [mt_sim_level_count] = memory), core cycles: alone
 * (a dependent load) and in a stream (a line of a walk in address order). */
typedef struct {
    double cycles[MT_SIM_MAX_LEVELS + 1];
    double stream[MT_SIM_MAX_LEVELS + 1];
    double parallelism;     /* misses in flight at once */
    double walk;            /* cycles a page walk adds to a load */
    unsigned walk_level;    /* the simulated TLB level whose misses are walks + 1; 0: the
                               simulator has no TLB */
} mt_stall_latencies;
/* The machine profile's latencies and streaming costs
 * (mt_calibrate_latencies) onto the simulated levels by name (D1 = L1; I1
 * takes none), its memory-level parallelism and page-walk cost; -1 with err
 * naming what the profile has no figure for. */
int mt_stall_latencies_of(const mt_sim *s, const mt_machine *m, mt_stall_latencies *out,
                          mt_error *err);

typedef struct {
    uint64_t refs;                       /* simulated references of its code objects */
    uint64_t misses[MT_SIM_MAX_LEVELS];  /* per simulated level */
    uint64_t walks;                      /* page walks (the last TLB level's misses) */
    double walk_cycles;                  /* walks x the walk's cost: in every figure below */
    uint64_t new_lines, regular, written; /* mt_stall_streams': changes of line, those
                                             judged regular, those by a write */
    double regular_share;                /* regular / new_lines (0 without) */
    double serial;      /* core cycles: every miss waited for alone (the upper bound) */
    double streamed;    /* every miss at the cost of a line in a stream */
    double lower;       /* the less of streamed (its walks / parallelism) and serial /
                           parallelism: every miss overlapped */
    double estimate;    /* the regular share streamed (written lines twice), the rest
                           serial, or over the parallelism in loops chasing no pointer */
    uint64_t independent_refs; /* refs of loops chasing no pointer */
    /* cpus > 1: its true and false sharing misses (at the first private
     * level), and the coherence stall: each a load the last simulated
     * level serves, waited for alone (a line another CPU took is no stream
     * a prefetcher follows); 0 with one CPU. */
    uint64_t coherence_misses;
    double coherence;
} mt_stall;
/* The stall of m-object `o` of prog: the misses of the code objects of its
 * blocks and of every procedure they call, directly or not (code objects
 * are loops and procedures: a region gets its procedure's own references
 * outside loops whole), prog's code object k being the trace's
 * code_base + k (a shared library's traced with its program; 0: the
 * executable's).  `st` may be NULL (then every miss is serial). */
void mt_stall_of_object(mt_sim *s, const mt_stall_streams *st, const mt_stall_latencies *lat,
                        const mt_program *prog, uint32_t code_base, const mt_timed_object *o,
                        mt_stall *out);
/* How the estimates agree with pass 2's measured overheads, both as % of
 * the objects' predicted cycles: over the pairs of objects (those measured
 * below -MT_STALL_MODEL_ERROR_PCT, the cost model's over-predictions, left
 * out) ordered differently by both (ties skipped), the pairs both order the
 * same way; over the memory-bound ones (measured overhead at least
 * MT_STALL_MEMORY_BOUND_PCT), the least and largest estimate / measured. */
#define MT_STALL_MODEL_ERROR_PCT 10.0
#define MT_STALL_MEMORY_BOUND_PCT 100.0
typedef struct {
    size_t pairs, concordant;
    size_t memory_bound;
    double ratio_min, ratio_max;    /* NAN without a memory-bound object */
} mt_stall_agreement;
void mt_stall_agree(const double *measured_pct, const double *estimate_pct, size_t n,
                    mt_stall_agreement *out);
/* The stall of every code object none of objs[0..n) holds, nor anything
 * they call: where the program's unexplained overhead may lie (code object
 * 0, outside the binary's procedures, included). */
void mt_stall_outside(mt_sim *s, const mt_stall_streams *st, const mt_stall_latencies *lat,
                      const mt_program *prog, const mt_timed_object *objs, size_t n,
                      mt_stall *out);

#endif
