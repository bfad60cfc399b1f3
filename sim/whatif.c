/* sim/whatif.c — what-if remedies: the references of a run, recorded as
 * the simulator took them, simulated again once per remedy with one change
 * (a data object padded, another line size, page placement or mapping of
 * threads to nodes), and the counts compared with the run's (sim.h,
 * "what-if remedies"; docs/SIMULATOR.md, "What-if remedies").  The program
 * is not run again: a remedy is a transformation of the recorded addresses
 * or of the description the same references go through. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- the recording ---- */

/* One reference as the simulator took it, 24 bytes: a flush is a record of
 * kind FLUSH_KIND; the instruction address (the stride prefetcher's key,
 * lackey's) a record of kind PC_KIND, only where it changes (a traced
 * run's are all 0: none).  Threads above UINT16_MAX share the last number. */
typedef struct {
    uint64_t addr;
    uint32_t code, data;
    uint16_t size, thread;
    uint8_t kind;
    uint8_t spare[3];         /* named: every byte written to the file is defined */
} log_rec;

#define FLUSH_KIND 0xfeu
#define PC_KIND 0xffu
#define LOG_BATCH 4096

/* A temporary file (unlinked: the references of a traced run can be far
 * more than memory holds), written and read a batch at a time. */
struct sim_log {
    FILE *fp;
    uint64_t n;               /* records */
    uint64_t refs;            /* references among them */
    uint64_t pc;              /* the instruction address of the last record */
    bool failed;              /* a write failed: no replay */
    bool clipped;             /* a size or thread above UINT16_MAX: the replay is not exact */
    log_rec buf[LOG_BATCH];
    size_t nbuf;
};

void mt_sim_record(mt_sim *s)
{
    struct sim_log *log = mt_xcalloc(1, sizeof *log);
    log->fp = tmpfile();
    log->failed = !log->fp;
    s->log = log;
}

static void log_drain(struct sim_log *log)
{
    if (!log->failed && fwrite(log->buf, sizeof *log->buf, log->nbuf, log->fp) != log->nbuf)
        log->failed = true;
    log->nbuf = 0;
}

static void log_push(struct sim_log *log, log_rec r)
{
    log->buf[log->nbuf++] = r;
    log->n++;
    if (log->nbuf == LOG_BATCH)
        log_drain(log);
}

void sim_log_ref(mt_sim *s, uint64_t addr, uint32_t size, mt_sim_kind kind, uint32_t code,
                 uint32_t data, uint64_t pc)
{
    struct sim_log *log = s->log;
    if (pc != log->pc) {
        log_push(log, (log_rec){.addr = pc, .kind = PC_KIND});
        log->pc = pc;
    }
    uint32_t thread = sim_mp_thread(s);
    log->refs++;
    log->clipped |= size > UINT16_MAX || thread > UINT16_MAX;
    log_push(log, (log_rec){.addr = addr, .code = code, .data = data,
                            .size = (uint16_t)(size > UINT16_MAX ? UINT16_MAX : size),
                            .thread = (uint16_t)(thread > UINT16_MAX ? UINT16_MAX : thread),
                            .kind = (uint8_t)kind});
}

void sim_log_flush(mt_sim *s) { log_push(s->log, (log_rec){.kind = FLUSH_KIND}); }

void sim_log_free(struct sim_log *log)
{
    if (!log)
        return;
    if (log->fp)
        fclose(log->fp);
    free(log);
}

/* Calls visit(ctx, r) for every recorded reference, in order; -1 when the
 * file cannot be read back. */
static int log_each(struct sim_log *log, void (*visit)(void *, const log_rec *), void *ctx)
{
    if (log->failed || fseek(log->fp, 0, SEEK_SET) != 0)
        return -1;
    log_rec *batch = mt_xcalloc(LOG_BATCH, sizeof *batch);
    uint64_t left = log->n - log->nbuf; /* the rest is still in buf */
    while (left) {
        size_t want = left < LOG_BATCH ? (size_t)left : LOG_BATCH;
        if (fread(batch, sizeof *batch, want, log->fp) != want) {
            free(batch);
            return -1;
        }
        for (size_t i = 0; i < want; i++)
            visit(ctx, &batch[i]);
        left -= want;
    }
    free(batch);
    for (size_t i = 0; i < log->nbuf; i++)
        visit(ctx, &log->buf[i]);
    return 0;
}

/* ---- what the recorded references say (one pass before the remedies) ---- */

#define PAGE_ROW (2 * MT_SIM_MAX_CPUS)
#define MAX_THREADS 64         /* threads a mapping places (a cpu_map's length) */
#define STRIDE_BITS 48         /* power-of-two strides counted, 2^0 .. 2^47 */

/* A data object the remedies may pad: the bytes its references covered,
 * and how often they moved by each power-of-two stride. */
typedef struct {
    uint32_t data;
    uint64_t lo, hi;           /* hi excluded */
    uint64_t last;             /* its previous reference's address (once seen) */
    bool seen;
    uint64_t strides[STRIDE_BITS];
} object_shape;

typedef struct {
    const mt_sim_machine *m;
    object_shape obj[MT_WHATIF_TOP];
    unsigned nobj;
    unsigned nodes;
    unsigned page_shift, line_shift;
    sim_map pages;             /* page -> index in page_refs */
    uint64_t *page_refs;       /* per page, references per node, then per node the
                                  number of its last one (PAGE_ROW a row) */
    uint64_t nrefs;            /* references so far */
    size_t npages, cap_pages;
    sim_map lines;             /* line -> index in line_threads */
    uint64_t *line_threads;    /* per line, the threads (bit k: thread k < 64) */
    size_t nlines, cap_lines;
    uint32_t nthreads;         /* 1 + the highest thread seen below MAX_THREADS */
} trace_shape;

/* The CPU a description puts thread k on, and a CPU's node. */
static unsigned cpu_of(const mt_sim_machine *m, uint32_t k)
{
    return k < m->ncpu_map ? m->cpu_map[k] : k % (m->cpus > 1 ? m->cpus : 1);
}

static unsigned node_of_cpu(const mt_sim_machine *m, unsigned c)
{
    unsigned cpus = m->cpus > 1 ? m->cpus : 1, nodes = m->nodes ? m->nodes : 1;
    return c * nodes / cpus;
}

static void shape_object(object_shape *o, const log_rec *r)
{
    if (!o->seen || r->addr < o->lo)
        o->lo = r->addr;
    if (!o->seen || r->addr + r->size > o->hi)
        o->hi = r->addr + r->size;
    uint64_t d = o->seen ? (r->addr > o->last ? r->addr - o->last : o->last - r->addr) : 0;
    if (d && !(d & (d - 1)) && __builtin_ctzll(d) < STRIDE_BITS)
        o->strides[__builtin_ctzll(d)]++;
    o->last = r->addr;
    o->seen = true;
}

/* The row of key in map (rows of `width` counts), a new zeroed one if absent. */
static uint64_t *row_of(sim_map *map, uint64_t key, uint64_t **rows, size_t *n, size_t *cap,
                        size_t width)
{
    uint32_t i = sim_map_get(map, key);
    if (i == SIM_NONE) {
        if (*n >= *cap)
            *rows = mt_xgrow(*rows, cap, *n + 1, width * sizeof **rows);
        memset(*rows + *n * width, 0, width * sizeof **rows);
        i = (uint32_t)(*n)++;
        sim_map_put(map, key, i);
    }
    return *rows + (size_t)i * width;
}

static void shape_ref(void *ctx, const log_rec *r)
{
    trace_shape *t = ctx;
    if (r->kind == FLUSH_KIND || r->kind == PC_KIND)
        return;
    for (unsigned i = 0; i < t->nobj; i++)
        if (t->obj[i].data == r->data)
            shape_object(&t->obj[i], r);
    if (t->nodes <= 1 || r->kind == MT_SIM_IFETCH)
        return;
    unsigned node = node_of_cpu(t->m, cpu_of(t->m, r->thread));
    uint64_t *page = row_of(&t->pages, r->addr >> t->page_shift, &t->page_refs, &t->npages,
                            &t->cap_pages, PAGE_ROW);
    page[node]++;
    page[MT_SIM_MAX_CPUS + node] = ++t->nrefs;
    if (r->thread >= MAX_THREADS)
        return;
    *row_of(&t->lines, r->addr >> t->line_shift, &t->line_threads, &t->nlines, &t->cap_lines,
            1) |= (uint64_t)1 << r->thread;
    if ((uint32_t)r->thread + 1 > t->nthreads)
        t->nthreads = (uint32_t)r->thread + 1;
}

static void shape_free(trace_shape *t)
{
    sim_map_free(&t->pages);
    sim_map_free(&t->lines);
    free(t->page_refs);
    free(t->line_threads);
}

/* ---- a replay ---- */

/* Where a padded object goes: a region of its own, far above every user
 * address, at the same offset modulo 1 GiB as its first line (its sets,
 * before the padding spreads it, are the ones it had). */
#define PAD_REGION ((uint64_t)1 << 56)
#define PAD_ALIGN ((uint64_t)1 << 30)

typedef struct {
    mt_sim *sim;
    uint64_t pc;               /* the instruction address of the references that follow */
    const mt_whatif_remedy *r; /* NULL: unchanged */
    uint64_t base, region;     /* pad: the object's first byte (a word's, a line's), its place */
} replay_ctx;

static uint64_t padded(const replay_ctx *x, uint64_t addr)
{
    uint64_t o = addr - x->base;
    if (x->r->kind == MT_WHATIF_PAD_WORDS)
        return x->region + (o >> 3) * x->r->line + (o & 7);
    return x->region + o + o / x->r->row * x->r->line;
}

static void replay_ref(void *ctx, const log_rec *r)
{
    replay_ctx *x = ctx;
    if (r->kind == FLUSH_KIND) {
        mt_sim_flush(x->sim);
        return;
    }
    if (r->kind == PC_KIND) {
        x->pc = r->addr;
        return;
    }
    uint64_t addr = r->addr;
    if (x->r && (x->r->kind == MT_WHATIF_PAD_WORDS || x->r->kind == MT_WHATIF_PAD_ROWS) &&
        r->data == x->r->data)
        addr = padded(x, addr);
    mt_sim_set_thread(x->sim, r->thread);
    mt_sim_access(x->sim, addr, r->size, (mt_sim_kind)r->kind, r->code, r->data, x->pc);
}

/* Owner-computes: each page homed on the node that referenced it most, of
 * those tied the one that referenced it last (a page one thread sets up
 * and another then computes on, as often, goes to the one computing),
 * before the first reference. */
static void home_by_owner(mt_sim *s, const trace_shape *t)
{
    for (size_t i = 0; i < t->pages.cap; i++) {
        const sim_map_slot *slot = &t->pages.slots[i];
        if (!slot->key)
            continue;
        const uint64_t *refs = t->page_refs + (size_t)slot->val * PAGE_ROW;
        const uint64_t *last = refs + MT_SIM_MAX_CPUS;
        unsigned best = 0;
        for (unsigned n = 1; n < t->nodes; n++)
            if (refs[n] > refs[best] || (refs[n] == refs[best] && last[n] > last[best]))
                best = n;
        sim_mp_home(s, slot->key - 1, best);
    }
}

/* The references simulated again through m, with remedy r (NULL: none);
 * NULL when the recording cannot be read. */
static mt_sim *replay(struct sim_log *log, const mt_sim_machine *m, const mt_whatif_remedy *r,
                      const trace_shape *t)
{
    replay_ctx x = {.sim = mt_sim_new(m), .r = r};
    if (r && (r->kind == MT_WHATIF_PAD_WORDS || r->kind == MT_WHATIF_PAD_ROWS)) {
        const object_shape *o = NULL;
        for (unsigned i = 0; i < t->nobj; i++)
            if (t->obj[i].data == r->data)
                o = &t->obj[i];
        x.base = r->kind == MT_WHATIF_PAD_WORDS ? o->lo & ~(uint64_t)7 : o->lo & ~(uint64_t)(r->line - 1);
        x.region = PAD_REGION + (x.base & (PAD_ALIGN - 1) & ~(uint64_t)(r->line - 1));
    }
    if (r && r->kind == MT_WHATIF_PLACEMENT && r->placement == MT_WHATIF_OWNER_COMPUTES)
        home_by_owner(x.sim, t);
    if (log_each(log, replay_ref, &x) != 0) {
        mt_sim_free(x.sim);
        return NULL;
    }
    mt_sim_finish(x.sim);
    return x.sim;
}

/* ---- figures ---- */

/* The stall of misses per level (the levels' order) at the description's
 * classes, for a simulator with no served classes (one CPU): a miss at the
 * L1s served by the next level, each level below L1 private but the last
 * (node, the shared level of a node), memory local. */
static double levels_stall(const mt_sim *s, const mt_sim_machine *m,
                           const uint64_t misses[MT_SIM_MAX_LEVELS])
{
    uint64_t served[MT_SIM_NSERVED] = {0};
    unsigned nl = mt_sim_level_count(s), first_lower = m->i1.present ? 2 : 1;
    uint64_t above = 0;
    for (unsigned l = 0; l < first_lower; l++)
        above += misses[l];
    for (unsigned l = first_lower; l < nl; l++) {
        mt_sim_served at = l + 1 < nl ? MT_SIM_AT_PRIVATE : MT_SIM_AT_NODE;
        served[at] += above > misses[l] ? above - misses[l] : 0;
        above = misses[l];
    }
    served[MT_SIM_AT_LOCAL] += above;
    return mt_sim_served_stall(m, served);
}

static uint64_t beyond_node(const uint64_t served[MT_SIM_NSERVED])
{
    return served[MT_SIM_AT_REMOTE] + served[MT_SIM_AT_REMOTE_DIRTY] +
           served[MT_SIM_AT_THREE_HOP];
}

static void total_figures(const mt_sim *s, const mt_sim_machine *m, mt_whatif_figures *f)
{
    memset(f, 0, sizeof *f);
    uint64_t level_misses[MT_SIM_MAX_LEVELS] = {0}, served[MT_SIM_NSERVED] = {0};
    for (unsigned l = 0; l < mt_sim_level_count(s); l++) {
        const mt_sim_level_stats *st = mt_sim_level(s, l);
        memcpy(f->misses[l], st->cause, sizeof st->cause);
        level_misses[l] = st->misses;
    }
    for (unsigned c = 0; c < mt_sim_cpus(s) && mt_sim_cpus(s) > 1; c++) {
        const mt_sim_cpu_stats *cs = mt_sim_cpu(s, c);
        for (unsigned l = 0; l < mt_sim_level_count(s); l++)
            f->misses[l][MT_WHATIF_COHERENCE] += cs->coherence[l];
        f->true_sharing += cs->true_sharing;
        f->false_sharing += cs->false_sharing;
        for (int k = 0; k < MT_SIM_NSERVED; k++)
            served[k] += cs->served[k];
    }
    f->remote = beyond_node(served);
    f->cycles = mt_sim_cpus(s) > 1 ? mt_sim_served_stall(m, served)
                                   : levels_stall(s, m, level_misses);
}

/* A sorted tally's entry of (code, data): every tally starts with them. */
static const void *find_cell(const void *rows, size_t n, size_t size, uint32_t code,
                             uint32_t data)
{
    if (!n)
        return NULL;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const uint32_t *k = (const uint32_t *)((const char *)rows + mid * size);
        if (k[0] < code || (k[0] == code && k[1] < data))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == n)
        return NULL;
    const uint32_t *k = (const uint32_t *)((const char *)rows + lo * size);
    return k[0] == code && k[1] == data ? k : NULL;
}

/* A cell's references by where served, summed over the CPUs: its rows of
 * mt_sim_served_pairs (sorted by code, data, CPU) follow each other. */
static void cell_served(const mt_sim_served_pair *rows, size_t n, uint32_t code, uint32_t data,
                        uint64_t served[MT_SIM_NSERVED])
{
    const mt_sim_served_pair *sp = find_cell(rows, n, sizeof *sp, code, data);
    for (; sp && sp < rows + n && sp->code == code && sp->data == data; sp++)
        for (int k = 0; k < MT_SIM_NSERVED; k++)
            served[k] += sp->served[k];
}

static void cell_figures(mt_sim *s, const mt_sim_machine *m, uint32_t code, uint32_t data,
                         mt_whatif_figures *f)
{
    memset(f, 0, sizeof *f);
    size_t n;
    const mt_sim_pair *pairs = mt_sim_pairs(s, &n);
    const mt_sim_pair *p = find_cell(pairs, n, sizeof *p, code, data);
    uint64_t level_misses[MT_SIM_MAX_LEVELS] = {0};
    for (unsigned l = 0; p && l < mt_sim_level_count(s); l++)
        for (int c = 0; c < MT_SIM_NCAUSES; c++) {
            f->misses[l][c] = p->misses[l][c];
            level_misses[l] += p->misses[l][c];
        }
    const mt_sim_coherence_pair *cps = mt_sim_coherence_pairs(s, &n);
    const mt_sim_coherence_pair *cp = find_cell(cps, n, sizeof *cp, code, data);
    if (cp) {
        f->true_sharing = cp->true_sharing;
        f->false_sharing = cp->false_sharing;
    }
    if (mt_sim_cpus(s) <= 1) {
        f->cycles = levels_stall(s, m, level_misses);
        return;
    }
    uint64_t served[MT_SIM_NSERVED] = {0};
    const mt_sim_served_pair *rows = mt_sim_served_pairs(s, &n);
    cell_served(rows, n, code, data, served);
    f->remote = beyond_node(served);
    f->cycles = mt_sim_served_stall(m, served);
}

/* ---- the problems: cells with the most conflict and coherence misses and
 * remote references ---- */

static uint64_t problem_misses(const mt_sim_pair *p, const mt_sim_coherence_pair *cp,
                               const mt_sim_served_pair *rows, size_t nrows)
{
    uint64_t conflict = 0, served[MT_SIM_NSERVED] = {0};
    for (unsigned l = 0; l < MT_SIM_MAX_LEVELS; l++)
        if (p->misses[l][MT_SIM_CONFLICT] > conflict)
            conflict = p->misses[l][MT_SIM_CONFLICT];
    cell_served(rows, nrows, p->code, p->data, served);
    return conflict + (cp ? cp->true_sharing + cp->false_sharing : 0) + beyond_node(served);
}

/* The MT_WHATIF_TOP cells of the most problem misses (ties: by code, data). */
static void pick_problems(mt_sim *s, mt_whatif_report *out)
{
    size_t n, nc, ns;
    const mt_sim_pair *p = mt_sim_pairs(s, &n);
    const mt_sim_coherence_pair *cp = mt_sim_coherence_pairs(s, &nc);
    const mt_sim_served_pair *sp = mt_sim_served_pairs(s, &ns);
    uint64_t score[MT_WHATIF_TOP] = {0};
    out->ncells = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = problem_misses(&p[i], find_cell(cp, nc, sizeof *cp, p[i].code, p[i].data),
                                    sp, ns);
        unsigned at = out->ncells;
        while (at > 0 && score[at - 1] < v)
            at--;
        if (!v || at >= MT_WHATIF_TOP)
            continue;
        unsigned last = out->ncells < MT_WHATIF_TOP ? out->ncells++ : MT_WHATIF_TOP - 1;
        for (unsigned k = last; k > at; k--) {
            score[k] = score[k - 1];
            out->code[k] = out->code[k - 1];
            out->data[k] = out->data[k - 1];
        }
        score[at] = v;
        out->code[at] = p[i].code;
        out->data[at] = p[i].data;
    }
}

/* ---- the remedies ---- */

/* The power-of-two stride an object's references moved by most often, at
 * least D1's way size (its rows alias in the sets then); the way size when
 * none is. */
static uint64_t row_of_object(const object_shape *o, const mt_sim_machine *m)
{
    uint64_t way = m->d1.size / m->d1.ways;
    int best = -1;
    for (int b = 0; b < STRIDE_BITS; b++)
        if (((uint64_t)1 << b) >= way && o->strides[b] && (best < 0 || o->strides[b] > o->strides[best]))
            best = b;
    return best < 0 ? way : (uint64_t)1 << best;
}

/* An object whose words are padded apart spans at most this: a struct, an
 * array of per-thread counters (a larger array padded word by word, 8 times
 * its size at 64-byte lines, is no remedy anyone applies, and its replay
 * holds that many more lines). */
#define PAD_WORDS_MAX 4096

/* Per object, its words a line apart (a small one); and its rows padded,
 * when it spans more than a row (else that is the same remedy). */
static void add_pads(mt_whatif_report *out, const mt_sim_machine *m, const trace_shape *t)
{
    for (unsigned i = 0; i < t->nobj && out->nremedies + 2 <= MT_WHATIF_MAX_REMEDIES; i++) {
        const object_shape *o = &t->obj[i];
        if (!o->seen)
            continue;
        if (o->hi - o->lo <= PAD_WORDS_MAX)
            out->remedy[out->nremedies++] = (mt_whatif_remedy){
                .kind = MT_WHATIF_PAD_WORDS, .data = o->data, .line = sim_longest_line(m)};
        uint64_t row = row_of_object(o, m);
        if (o->hi - o->lo > row)
            out->remedy[out->nremedies++] = (mt_whatif_remedy){
                .kind = MT_WHATIF_PAD_ROWS, .data = o->data, .line = sim_longest_line(m), .row = row};
    }
}

/* m with every level's line set to `line` (sizes and ways kept); false when
 * the description cannot take it. */
static bool with_line(const mt_sim_machine *m, uint32_t line, mt_sim_machine *out)
{
    *out = *m;
    out->d1.line = line;
    if (out->i1.present)
        out->i1.line = line;
    for (unsigned i = 0; i < out->nlower; i++)
        out->lower[i].line = line;
    mt_error err;
    return line >= 4 && mt_sim_machine_check(out, &err) == 0;
}

static void add_lines(mt_whatif_report *out, const mt_sim_machine *m)
{
    uint32_t lines[] = {m->d1.line / 2, m->d1.line * 2};
    mt_sim_machine other;
    for (size_t i = 0; i < MT_ARRAY_LEN(lines) && out->nremedies < MT_WHATIF_MAX_REMEDIES; i++)
        if (with_line(m, lines[i], &other))
            out->remedy[out->nremedies++] =
                (mt_whatif_remedy){.kind = MT_WHATIF_LINE, .line = lines[i]};
}

static void add_placements(mt_whatif_report *out, const mt_sim_machine *m)
{
    int all[] = {MT_SIM_FIRST_TOUCH, MT_SIM_INTERLEAVE, MT_WHATIF_OWNER_COMPUTES};
    for (size_t i = 0; i < MT_ARRAY_LEN(all) && out->nremedies < MT_WHATIF_MAX_REMEDIES; i++)
        if (all[i] != (int)m->placement)
            out->remedy[out->nremedies++] =
                (mt_whatif_remedy){.kind = MT_WHATIF_PLACEMENT, .placement = all[i]};
}

/* Lines each pair of threads both referenced. */
static void sharing_matrix(const trace_shape *t, uint64_t share[MAX_THREADS][MAX_THREADS])
{
    memset(share, 0, sizeof(uint64_t) * MAX_THREADS * MAX_THREADS);
    for (size_t l = 0; l < t->nlines; l++) {
        uint64_t w = t->line_threads[l];
        if (!(w & (w - 1)))
            continue;
        for (uint32_t i = 0; i < t->nthreads; i++)
            for (uint32_t j = 0; j < t->nthreads; j++)
                share[i][j] += i != j && (w >> i & 1) && (w >> j & 1);
    }
}

/* The unplaced thread to put next on a node holding `members`: the one
 * sharing most with them (with every unplaced thread when the node is
 * empty); the lowest of those tied. */
static uint32_t next_thread(const trace_shape *t, uint64_t share[MAX_THREADS][MAX_THREADS],
                            const int *node, uint64_t members)
{
    uint32_t best = UINT32_MAX;
    uint64_t most = 0;
    for (uint32_t k = 0; k < t->nthreads; k++) {
        if (node[k] >= 0)
            continue;
        uint64_t v = 0;
        for (uint32_t j = 0; j < t->nthreads; j++)
            if (members ? (members >> j & 1) : node[j] < 0)
                v += share[k][j];
        if (best == UINT32_MAX || v > most)
            best = k, most = v;
    }
    return best;
}

/* Threads that share the most lines on one node: nodes filled one at a
 * time, ceil(threads / nodes) each, a node's threads on its CPUs in turn.
 * False when that puts every thread on the node it had. */
static bool affinity_map(const trace_shape *t, const mt_sim_machine *m, mt_whatif_remedy *r)
{
    uint64_t(*share)[MAX_THREADS] = mt_xcalloc(MAX_THREADS, sizeof *share);
    sharing_matrix(t, share);
    int node[MAX_THREADS];
    for (uint32_t k = 0; k < t->nthreads; k++)
        node[k] = -1;
    unsigned cap = (t->nthreads + t->nodes - 1) / t->nodes;
    bool moved = false;
    for (unsigned n = 0; n < t->nodes; n++) {
        unsigned cpus[MT_SIM_MAX_CPUS], ncpus = 0;
        for (unsigned c = 0; c < m->cpus; c++)
            if (node_of_cpu(m, c) == n)
                cpus[ncpus++] = c;
        uint64_t members = 0;
        for (unsigned i = 0; i < cap; i++) {
            uint32_t k = next_thread(t, share, node, members);
            if (k == UINT32_MAX)
                break;
            node[k] = (int)n;
            members |= (uint64_t)1 << k;
            r->cpu_map[k] = (uint8_t)cpus[i % ncpus];
            moved |= node_of_cpu(m, cpu_of(m, k)) != n;
        }
    }
    r->ncpu_map = t->nthreads;
    free(share);
    return moved;
}

static void add_mapping(mt_whatif_report *out, const mt_sim_machine *m, const trace_shape *t)
{
    mt_whatif_remedy r = {.kind = MT_WHATIF_MAPPING};
    if (t->nthreads > 1 && out->nremedies < MT_WHATIF_MAX_REMEDIES && affinity_map(t, m, &r))
        out->remedy[out->nremedies++] = r;
}

/* The description a remedy's references go through. */
static mt_sim_machine machine_of(const mt_sim_machine *m, const mt_whatif_remedy *r)
{
    mt_sim_machine out = *m;
    if (r->kind == MT_WHATIF_LINE)
        with_line(m, r->line, &out);
    else if (r->kind == MT_WHATIF_PLACEMENT && r->placement != MT_WHATIF_OWNER_COMPUTES)
        out.placement = (mt_sim_placement)r->placement;
    else if (r->kind == MT_WHATIF_MAPPING) {
        memcpy(out.cpu_map, r->cpu_map, sizeof out.cpu_map);
        out.ncpu_map = r->ncpu_map;
    }
    return out;
}

/* What a cell has saved: stall cycles, or misses at every level when the
 * description gives no latency. */
static double saving(const mt_whatif_figures *base, const mt_whatif_figures *now, unsigned nl)
{
    if (base->cycles >= 0 && now->cycles >= 0)
        return base->cycles - now->cycles;
    double v = 0;
    for (unsigned l = 0; l < nl; l++)
        for (int c = 0; c <= MT_WHATIF_COHERENCE; c++)
            v += (double)base->misses[l][c] - (double)now->misses[l][c];
    return v;
}

static void pick_best(mt_whatif_report *out, unsigned nl)
{
    for (unsigned c = 0; c < out->ncells; c++) {
        out->best[c] = -1;
        double most = 0;
        for (unsigned i = 0; i < out->nremedies; i++) {
            const mt_whatif_remedy *r = &out->remedy[i];
            double v = saving(&out->base_cell[c], &r->cell[c], nl);
            if (v > most && saving(&out->base, &r->total, nl) >= 0)
                out->best[c] = (int)i, most = v;
        }
    }
}

static bool same_misses(const mt_sim *a, const mt_sim *b)
{
    for (unsigned l = 0; l < mt_sim_level_count(a); l++)
        if (mt_sim_level(a, l)->misses != mt_sim_level(b, l)->misses)
            return false;
    return true;
}

/* The figures of one replay: the whole run's and each problem cell's. */
static void replay_figures(mt_sim *s, const mt_sim_machine *m, const mt_whatif_report *out,
                           mt_whatif_figures *total, mt_whatif_figures *cells)
{
    total_figures(s, m, total);
    for (unsigned c = 0; c < out->ncells; c++)
        cell_figures(s, m, out->code[c], out->data[c], &cells[c]);
}

int mt_whatif_run(mt_sim *s, const mt_sim_machine *m, bool pad_other, mt_whatif_report *out,
                  mt_error *err)
{
    memset(out, 0, sizeof *out);
    struct sim_log *log = s->log;
    if (!log) {
        mt_error_set(err, "what-if: the references were not recorded (mt_sim_record)");
        return -1;
    }
    log_drain(log);
    out->refs = log->refs;
    pick_problems(s, out);
    replay_figures(s, m, out, &out->base, out->base_cell);
    trace_shape t = {.m = m, .nodes = m->nodes > 1 ? m->nodes : 1,
                     .page_shift = (unsigned)__builtin_ctzll(m->page ? m->page : 4096),
                     .line_shift = (unsigned)__builtin_ctzll(m->d1.line)};
    for (unsigned c = 0; c < out->ncells; c++) {
        bool listed = false;
        for (unsigned i = 0; i < t.nobj; i++)
            listed |= t.obj[i].data == out->data[c];
        if (!listed && (out->data[c] || pad_other))
            t.obj[t.nobj++].data = out->data[c];
    }
    mt_sim *same = NULL;
    int rc = -1;
    if (log_each(log, shape_ref, &t) != 0 || !(same = replay(log, m, NULL, &t)))
        goto done;
    out->exact = same_misses(s, same) && !log->clipped;
    mt_sim_free(same); /* one replay's state at a time: a traced run's can be large */
    same = NULL;
    add_pads(out, m, &t);
    add_lines(out, m);
    if (t.nodes > 1) {
        add_placements(out, m);
        add_mapping(out, m, &t);
    }
    for (unsigned i = 0; i < out->nremedies; i++) {
        mt_whatif_remedy *r = &out->remedy[i];
        mt_sim_machine rm = machine_of(m, r);
        mt_sim *w = replay(log, &rm, r, &t);
        if (!w)
            goto done;
        replay_figures(w, &rm, out, &r->total, r->cell);
        mt_sim_free(w);
    }
    pick_best(out, mt_sim_level_count(s));
    rc = 0;
done:
    if (rc != 0)
        mt_error_set(err, "what-if: the recorded references cannot be read back (temporary "
                          "file)");
    mt_sim_free(same);
    shape_free(&t);
    return rc;
}

const char *mt_whatif_kind_name(mt_whatif_kind k)
{
    static const char *const names[] = {"pad_words", "pad_rows", "line", "placement", "mapping"};
    return names[k];
}

const char *mt_whatif_placement_name(int placement)
{
    return placement == MT_WHATIF_OWNER_COMPUTES ? "owner-computes"
                                                 : mt_sim_placement_name((mt_sim_placement)placement);
}
