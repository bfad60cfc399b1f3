/* store/match.c — which procedure or loop of one build is which of another.
 *
 * Procedures match by name (same file preferred, then the nearest line);
 * a renamed procedure by its file and structure fingerprint; an unnamed one
 * (sub_ADDR: no symbol) by address and fingerprint only.  Loops match only
 * inside matched procedures: same nesting path and fingerprint first, then
 * the same fingerprint at the nearest line relative to the procedure's entry
 * (a loop inserted before it shifts its path), then the same nesting path
 * (a loop whose code changed in place).  Regions (pass 2's pieces of large
 * loop-free procedures, paths "r1", "r2", ...) match regions the same way.
 * Sites must come in build order: every procedure followed by its loops
 * and regions. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "store.h"

const char *mt_match_kind_name(mt_match_kind k)
{
    static const char *const names[] = {"same", "moved", "renamed", "address"};
    return k <= MT_MATCH_ADDRESS ? names[k] : "?";
}

static bool same_text(const char *x, const char *y)
{
    return x == y || (x && y && strcmp(x, y) == 0);
}

/* Source files compare by name only: the same project built in another
 * directory has other absolute paths in its DWARF. */
static bool same_file(const char *x, const char *y)
{
    if (!x || !y)
        return x == y;
    const char *bx = strrchr(x, '/'), *by = strrchr(y, '/');
    return strcmp(bx ? bx + 1 : x, by ? by + 1 : y) == 0;
}

/* A loop or a region: a site that belongs to the procedure before it. */
static bool nested(const mt_store_site *s) { return s->is_loop || s->is_region; }

static uint32_t distance(uint32_t x, uint32_t y) { return x > y ? x - y : y - x; }

/* Relative line of a loop inside its procedure (robust to code moved above it). */
static int64_t relative_line(const mt_store_site *s)
{
    return s->line && s->proc_line ? (int64_t)s->line - (int64_t)s->proc_line : -1;
}

typedef struct {
    const mt_store_site *a;
    uint32_t *order;      /* procedure sites of a, sorted by the current key */
    size_t n;
    bool *taken;          /* per site of a */
} proc_index;

typedef int (*site_cmp)(const mt_store_site *, const mt_store_site *);
static int cmp_name(const mt_store_site *p, const mt_store_site *q)
{
    return strcmp(p->procedure, q->procedure);
}
static int cmp_shape(const mt_store_site *p, const mt_store_site *q)
{
    return p->shape < q->shape ? -1 : p->shape > q->shape;
}

/* qsort_r's comparator: indices into ix->a under the key `cmp`. */
typedef struct {
    const mt_store_site *a;
    site_cmp cmp;
} sort_key;
static int by_key(const void *x, const void *y, void *arg)
{
    const sort_key *k = arg;
    return k->cmp(&k->a[*(const uint32_t *)x], &k->a[*(const uint32_t *)y]);
}

static void sort_index(proc_index *ix, site_cmp cmp)
{
    sort_key key = {ix->a, cmp};
    qsort_r(ix->order, ix->n, sizeof *ix->order, by_key, &key);
}

/* The best untaken candidate among order[lo..hi) for site b: same file
 * first, then nearest line. */
static uint32_t best_candidate(const proc_index *ix, size_t lo, size_t hi, const mt_store_site *b,
                               bool need_file)
{
    uint32_t best = MT_NONE;
    uint64_t best_score = UINT64_MAX;
    for (size_t k = lo; k < hi; k++) {
        uint32_t i = ix->order[k];
        if (ix->taken[i])
            continue;
        bool file = same_file(ix->a[i].file, b->file);
        if (need_file && (!file || !b->file))
            continue;
        uint64_t score = (file ? 0 : 1ull << 40) + distance(ix->a[i].line, b->line);
        if (score < best_score) {
            best_score = score;
            best = i;
        }
    }
    return best;
}

/* [lo, hi) of the sorted order whose sites equal `key` under cmp. */
static void equal_range(const proc_index *ix, site_cmp cmp, const mt_store_site *key, size_t *lo,
                        size_t *hi)
{
    size_t l = 0, h = ix->n;
    while (l < h) { /* first >= key */
        size_t m = (l + h) / 2;
        if (cmp(&ix->a[ix->order[m]], key) < 0)
            l = m + 1;
        else
            h = m;
    }
    *lo = l;
    h = ix->n;
    while (l < h) { /* first > key */
        size_t m = (l + h) / 2;
        if (cmp(&ix->a[ix->order[m]], key) <= 0)
            l = m + 1;
        else
            h = m;
    }
    *hi = l;
}

static void match_procedures(proc_index *ix, const mt_store_site *b, size_t nb, uint32_t *b_to_a,
                             uint8_t *how)
{
    /* By name, for named procedures. */
    sort_index(ix, cmp_name);
    for (size_t j = 0; j < nb; j++) {
        if (nested(&b[j]) || !b[j].named)
            continue;
        size_t lo, hi;
        equal_range(ix, cmp_name, &b[j], &lo, &hi);
        uint32_t i = best_candidate(ix, lo, hi, &b[j], false);
        if (i != MT_NONE && ix->a[i].named) {
            ix->taken[i] = true;
            b_to_a[j] = i;
            how[j] = ix->a[i].line == b[j].line && same_file(ix->a[i].file, b[j].file)
                         ? MT_MATCH_SAME : MT_MATCH_MOVED;
        }
    }
    /* Renamed (same file and fingerprint), or unnamed (same address and
     * fingerprint). */
    sort_index(ix, cmp_shape);
    for (size_t j = 0; j < nb; j++) {
        if (nested(&b[j]) || b_to_a[j] != MT_NONE)
            continue;
        size_t lo, hi;
        equal_range(ix, cmp_shape, &b[j], &lo, &hi);
        uint32_t i = MT_NONE;
        if (b[j].named) {
            i = best_candidate(ix, lo, hi, &b[j], true);
            if (i != MT_NONE && !ix->a[i].named)
                i = MT_NONE;
        } else {
            for (size_t k = lo; k < hi && i == MT_NONE; k++)
                if (!ix->taken[ix->order[k]] && ix->a[ix->order[k]].address == b[j].address &&
                    !ix->a[ix->order[k]].named)
                    i = ix->order[k];
        }
        if (i != MT_NONE) {
            ix->taken[i] = true;
            b_to_a[j] = i;
            how[j] = b[j].named ? MT_MATCH_RENAMED : MT_MATCH_ADDRESS;
        }
    }
}

/* Loops [a0, a1) of a procedure in a and [b0, b1) of its counterpart in b. */
typedef enum { BY_PATH_AND_SHAPE, BY_SHAPE_NEAREST, BY_PATH } loop_pass;

static void match_loops(const mt_store_site *a, size_t a0, size_t a1, const mt_store_site *b,
                        size_t b0, size_t b1, bool *taken, uint32_t *b_to_a, uint8_t *how,
                        mt_match_kind proc_how)
{
    for (int pass = BY_PATH_AND_SHAPE; pass <= BY_PATH; pass++)
        for (size_t j = b0; j < b1; j++) {
            if (b_to_a[j] != MT_NONE)
                continue;
            uint32_t best = MT_NONE;
            uint64_t best_d = UINT64_MAX;
            for (size_t i = a0; i < a1; i++) {
                if (taken[i] || a[i].depth != b[j].depth || a[i].is_region != b[j].is_region)
                    continue;
                bool path = same_text(a[i].loop_path, b[j].loop_path), shape = a[i].shape == b[j].shape;
                bool ok = pass == BY_PATH_AND_SHAPE ? path && shape
                          : pass == BY_SHAPE_NEAREST ? shape : path;
                int64_t ra = relative_line(&a[i]), rb = relative_line(&b[j]);
                uint64_t d = ra < 0 || rb < 0 ? UINT64_MAX - 1
                                              : (uint64_t)(ra > rb ? ra - rb : rb - ra);
                if (ok && d < best_d) {
                    best_d = d;
                    best = (uint32_t)i;
                }
            }
            if (best == MT_NONE)
                continue;
            taken[best] = true;
            b_to_a[j] = best;
            bool same = a[best].line == b[j].line && same_file(a[best].file, b[j].file) &&
                        same_text(a[best].loop_path, b[j].loop_path);
            how[j] = proc_how == MT_MATCH_RENAMED || proc_how == MT_MATCH_ADDRESS ? proc_how
                     : same ? MT_MATCH_SAME : MT_MATCH_MOVED;
        }
}

static size_t loops_end(const mt_store_site *s, size_t n, size_t proc)
{
    size_t e = proc + 1;
    while (e < n && nested(&s[e]))
        e++;
    return e;
}

void mt_store_match(const mt_store_site *a, size_t na, const mt_store_site *b, size_t nb,
                    uint32_t *b_to_a, uint8_t *how)
{
    uint8_t *how_buf = how ? how : mt_xcalloc(nb + 1, 1);
    for (size_t j = 0; j < nb; j++)
        b_to_a[j] = MT_NONE;
    proc_index ix = {.a = a, .order = mt_xcalloc(na + 1, sizeof(uint32_t)),
                     .taken = mt_xcalloc(na + 1, sizeof(bool))};
    for (size_t i = 0; i < na; i++)
        if (!nested(&a[i]))
            ix.order[ix.n++] = (uint32_t)i;
    match_procedures(&ix, b, nb, b_to_a, how_buf);
    for (size_t j = 0; j < nb; j++) {
        if (nested(&b[j]) || b_to_a[j] == MT_NONE)
            continue;
        size_t i = b_to_a[j];
        match_loops(a, i + 1, loops_end(a, na, i), b, j + 1, loops_end(b, nb, j), ix.taken,
                    b_to_a, how_buf, how_buf[j]);
    }
    free(ix.order);
    free(ix.taken);
    if (!how)
        free(how_buf);
}

/* Sites ordered by (address, loop path), no path first. */
static int cmp_site_key(const void *x, const void *y, void *arg)
{
    const mt_store_site *a = arg, *p = &a[*(const uint32_t *)x], *q = &a[*(const uint32_t *)y];
    if (p->address != q->address)
        return p->address < q->address ? -1 : 1;
    if (!p->loop_path || !q->loop_path)
        return (p->loop_path != NULL) - (q->loop_path != NULL);
    return strcmp(p->loop_path, q->loop_path);
}

void mt_store_match_exact(const mt_store_site *a, size_t na, const mt_store_site *b, size_t nb,
                          uint32_t *b_to_a)
{
    /* One sorted array of both: a's sites, then b's (index na + j). */
    size_t n = na + nb;
    mt_store_site *all = mt_xcalloc(n + 1, sizeof *all);
    memcpy(all, a, na * sizeof *a);
    memcpy(all + na, b, nb * sizeof *b);
    uint32_t *order = mt_xcalloc(n + 1, sizeof *order);
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    qsort_r(order, n, sizeof *order, cmp_site_key, all);
    for (size_t j = 0; j < nb; j++)
        b_to_a[j] = MT_NONE;
    /* In each run of equal keys, the first site of a is the counterpart. */
    for (size_t k = 0; k < n;) {
        size_t e = k + 1;
        while (e < n && cmp_site_key(&order[k], &order[e], all) == 0)
            e++;
        uint32_t from_a = MT_NONE;
        for (size_t m = k; m < e; m++)
            if (order[m] < na && from_a == MT_NONE)
                from_a = order[m];
        for (size_t m = k; m < e; m++)
            if (order[m] >= na)
                b_to_a[order[m] - na] = from_a;
        k = e;
    }
    free(order);
    free(all);
}
