/* store/diff.c — pairing the objects of two runs. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static mt_store_site site_view(const mt_store_object_row *o)
{
    /* Borrowed strings: the view never outlives the row. */
    return (mt_store_site){.is_loop = o->is_loop, .is_region = o->is_region, .procedure = o->procedure, .named = o->named,
                           .loop_path = o->loop_path, .depth = o->depth, .file = o->file,
                           .line = o->line, .proc_line = o->proc_line, .address = o->address,
                           .shape = o->shape};
}

/* A row of a, keyed by its object id (ids are positive) for the search. */
typedef struct {
    uint64_t object;
    uint32_t row;
} object_ref;

/* Row of a with object `object` (`order`: a's rows sorted by object), or MT_NONE. */
static uint32_t find_object(const object_ref *order, size_t n, int64_t object)
{
    size_t lo = mt_lower_bound_u64(order, n, sizeof *order, offsetof(object_ref, object),
                                   (uint64_t)object);
    return lo < n && order[lo].object == (uint64_t)object ? order[lo].row : MT_NONE;
}

static bool same_text(const char *x, const char *y)
{
    return x == y || (x && y && strcmp(x, y) == 0);
}

/* How an object found by identity changed place between the two runs. */
static mt_match_kind change_of(const mt_store_object_row *x, const mt_store_object_row *y)
{
    if (y->data_kind)
        return MT_MATCH_SAME; /* a data object's name is its identity */
    if (!y->named)
        return MT_MATCH_ADDRESS;
    if (!same_text(x->procedure, y->procedure))
        return MT_MATCH_RENAMED;
    return x->line == y->line && same_text(x->file, y->file) && same_text(x->loop_path, y->loop_path)
               ? MT_MATCH_SAME : MT_MATCH_MOVED;
}

/* The rows before the first data object (rows in build order: code objects
 * first). */
static size_t code_rows(const mt_store_object_row *rows, size_t n)
{
    size_t k = 0;
    while (k < n && !rows[k].data_kind)
        k++;
    return k;
}

/* A data object identity did not pair: the unpaired one of a with the same
 * name and kind (a data object's name is its identity within a program). */
static void pair_data_by_name(mt_store_diff *d, size_t first_a, size_t first_b)
{
    for (size_t j = first_b; j < d->nb; j++)
        for (size_t i = first_a; i < d->na && d->b_to_a[j] == MT_NONE; i++)
            if (!d->a_paired[i] && same_text(d->a[i].procedure, d->b[j].procedure) &&
                same_text(d->a[i].data_kind, d->b[j].data_kind)) {
                d->b_to_a[j] = (uint32_t)i;
                d->a_paired[i] = true;
                d->how[j] = MT_MATCH_SAME;
            }
}

int mt_store_diff_runs(mt_store *s, int64_t run_a, int64_t run_b, mt_store_diff *d, mt_error *err)
{
    memset(d, 0, sizeof *d);
    if (mt_store_objects_of_run(s, run_a, true, &d->a, &d->na, err) != 0 ||
        mt_store_objects_of_run(s, run_b, true, &d->b, &d->nb, err) != 0)
        return -1;
    mt_store_site *sa = mt_xcalloc(d->na + 1, sizeof *sa), *sb = mt_xcalloc(d->nb + 1, sizeof *sb);
    for (size_t i = 0; i < d->na; i++)
        sa[i] = site_view(&d->a[i]);
    for (size_t j = 0; j < d->nb; j++)
        sb[j] = site_view(&d->b[j]);
    uint32_t *tolerant = mt_xcalloc(d->nb + 1, sizeof *tolerant);
    uint8_t *tolerant_how = mt_xcalloc(d->nb + 1, 1);
    /* Data objects have no place for the tolerant matcher to go by. */
    size_t code_a = code_rows(d->a, d->na), code_b = code_rows(d->b, d->nb);
    for (size_t j = code_b; j < d->nb; j++)
        tolerant[j] = MT_NONE;
    mt_store_match(sa, code_a, sb, code_b, tolerant, tolerant_how);
    object_ref *order = mt_xcalloc(d->na + 1, sizeof *order);
    for (size_t i = 0; i < d->na; i++)
        order[i] = (object_ref){(uint64_t)d->a[i].object, (uint32_t)i};
    qsort(order, d->na, sizeof *order, mt_compare_u64);
    d->b_to_a = mt_xcalloc(d->nb + 1, sizeof *d->b_to_a);
    d->how = mt_xcalloc(d->nb + 1, 1);
    d->a_paired = mt_xcalloc(d->na + 1, sizeof *d->a_paired);
    /* Identity first; the tolerant match fills in where identity has no pair. */
    for (size_t j = 0; j < d->nb; j++) {
        uint32_t i = find_object(order, d->na, d->b[j].object);
        d->b_to_a[j] = i;
        if (i != MT_NONE) {
            d->a_paired[i] = true;
            d->how[j] = change_of(&d->a[i], &d->b[j]);
        }
    }
    for (size_t j = 0; j < d->nb; j++) {
        uint32_t i = tolerant[j];
        if (d->b_to_a[j] == MT_NONE && i != MT_NONE && !d->a_paired[i]) {
            d->b_to_a[j] = i;
            d->a_paired[i] = true;
            d->how[j] = tolerant_how[j];
        }
    }
    pair_data_by_name(d, code_a, code_b);
    free(order);
    free(tolerant);
    free(tolerant_how);
    free(sa);
    free(sb);
    return 0;
}

void mt_store_diff_free(mt_store_diff *d)
{
    mt_store_object_rows_free(d->a, d->na);
    mt_store_object_rows_free(d->b, d->nb);
    free(d->b_to_a);
    free(d->how);
    free(d->a_paired);
    memset(d, 0, sizeof *d);
}
