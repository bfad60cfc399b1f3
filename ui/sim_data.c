/* ui/sim_data.c — the data objects of `mtool sim -- BIN` (dataobj/): per
 * data object references, misses per level by cause and line use; the code
 * x data matrix (MemSpy's), most misses first; the causes of replacement by
 * name.  Text and JSON (docs/SIMULATOR.md, "Data objects"). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ui.h"

static uint64_t misses_at(const uint64_t (*misses)[MT_SIM_NCAUSES], unsigned level)
{
    uint64_t n = 0;
    for (int c = 0; c < MT_SIM_NCAUSES; c++)
        n += misses[level][c];
    return n;
}

static unsigned last_level; /* rows are sorted by misses there, then at the levels above */

static int most_missed_first(const uint64_t (*a)[MT_SIM_NCAUSES],
                             const uint64_t (*b)[MT_SIM_NCAUSES])
{
    for (unsigned l = last_level + 1; l-- > 0;) {
        uint64_t x = misses_at(a, l), y = misses_at(b, l);
        if (x != y)
            return x > y ? -1 : 1;
    }
    return 0;
}

static int compare_rows(const void *a, const void *b)
{
    const mt_sim_data_row *x = a, *y = b;
    int c = most_missed_first((const uint64_t(*)[MT_SIM_NCAUSES])x->misses,
                              (const uint64_t(*)[MT_SIM_NCAUSES])y->misses);
    return c ? c : x->id < y->id ? -1 : x->id > y->id;
}

static int compare_pairs(const void *a, const void *b)
{
    const mt_sim_pair *x = a, *y = b;
    int c = most_missed_first((const uint64_t(*)[MT_SIM_NCAUSES])x->misses,
                              (const uint64_t(*)[MT_SIM_NCAUSES])y->misses);
    if (c)
        return c;
    return x->code != y->code ? (x->code < y->code ? -1 : 1)
                              : (x->data < y->data ? -1 : x->data > y->data);
}

mt_sim_data_row *mt_sim_data_rows(mt_sim *s, const mt_data_map *d, size_t *n)
{
    size_t np, count = mt_data_map_count(d);
    const mt_sim_pair *p = mt_sim_pairs(s, &np);
    mt_sim_data_row *rows = mt_xcalloc(count + 1, sizeof *rows);
    for (size_t i = 0; i < count; i++)
        rows[i].id = (uint32_t)i;
    for (size_t i = 0; i < np; i++) {
        if (p[i].data >= count)
            continue;
        mt_sim_data_row *r = &rows[p[i].data];
        r->refs += p[i].refs;
        for (unsigned l = 0; l < MT_SIM_MAX_LEVELS; l++)
            for (int c = 0; c < MT_SIM_NCAUSES; c++)
                r->misses[l][c] += p[i].misses[l][c];
    }
    size_t kept = 0;
    for (size_t i = 0; i < count; i++)
        if (rows[i].refs)
            rows[kept++] = rows[i];
    last_level = mt_sim_level_count(s) - 1;
    qsort(rows, kept, sizeof *rows, compare_rows);
    *n = kept;
    return rows;
}

/* The pairs, the most missed first (a copy). */
static mt_sim_pair *sorted_pairs(mt_sim *s, size_t *n)
{
    const mt_sim_pair *p = mt_sim_pairs(s, n);
    mt_sim_pair *copy = mt_xmalloc((*n + 1) * sizeof *copy);
    memcpy(copy, p, *n * sizeof *copy);
    last_level = mt_sim_level_count(s) - 1;
    qsort(copy, *n, sizeof *copy, compare_pairs);
    return copy;
}

static const char *data_name(const mt_data_map *d, uint32_t id)
{
    const mt_data_object *o = mt_data_map_object(d, id);
    return o ? o->name : "?";
}

double mt_sim_spatial_use(const mt_sim *s, const mt_sim_object_use *u)
{
    return u->lines ? (double)u->bytes_used /
                          ((double)u->lines * (double)mt_sim_level(s, u->level)->desc->line)
                    : 0.0;
}

const mt_sim_object_use *mt_sim_use_of(const mt_sim_object_use *uses, size_t n, uint32_t id,
                                       unsigned l)
{
    for (size_t i = 0; i < n; i++)
        if (uses[i].level == l && uses[i].object == id)
            return &uses[i];
    return NULL;
}

/* The first data level: D1 (I1 comes first when present). */
static unsigned first_data_level(const mt_sim *s)
{
    return strcmp(mt_sim_level(s, 0)->desc->name, "I1") == 0 ? 1 : 0;
}

/* ---- text ---- */

static void print_level_heads(FILE *fp, const mt_sim *s)
{
    for (unsigned l = 0; l < mt_sim_level_count(s); l++)
        fprintf(fp, " %10s", mt_sim_level(s, l)->desc->name);
}

static void print_escaped(FILE *fp, const char *raw, int width)
{
    char *e = mt_ui_escape(raw);
    fprintf(fp, "%-*s", width, e);
    free(e);
}

static void text_objects(FILE *fp, mt_sim *s, const mt_data_map *d)
{
    enum { SHOWN = 20 };
    size_t n, nuses;
    mt_sim_data_row *rows = mt_sim_data_rows(s, d, &n);
    const mt_sim_object_use *uses = mt_sim_object_uses(s, &nuses);
    unsigned d1 = first_data_level(s);
    fprintf(fp, "\ndata objects (by misses at the last level%s):\n%-40s %-6s %14s",
            n > SHOWN ? ", the first 20" : "", "name", "kind", "refs");
    print_level_heads(fp, s);
    fprintf(fp, " %6s\n", "used");
    for (size_t i = 0; i < n && i < SHOWN; i++) {
        const mt_data_object *o = mt_data_map_object(d, rows[i].id);
        print_escaped(fp, o->name, 40);
        fprintf(fp, " %-6s %14" PRIu64, mt_data_kind_name(o->kind), rows[i].refs);
        for (unsigned l = 0; l < mt_sim_level_count(s); l++)
            fprintf(fp, " %10" PRIu64,
                    misses_at((const uint64_t(*)[MT_SIM_NCAUSES])rows[i].misses, l));
        const mt_sim_object_use *u = mt_sim_use_of(uses, nuses, rows[i].id, d1);
        fprintf(fp, " %5.1f%%", u ? 100.0 * mt_sim_spatial_use(s, u) : 0.0);
        if (o->path && o->path[0]) {
            fprintf(fp, "  <- ");
            print_escaped(fp, o->path, 0);
        }
        fputc('\n', fp);
    }
    free(rows);
}

static void text_matrix(FILE *fp, mt_sim *s, const mt_data_map *d, const mt_program *prog)
{
    enum { SHOWN = 20 };
    size_t n;
    mt_sim_pair *p = sorted_pairs(s, &n);
    fprintf(fp, "\ncode x data (by misses at the last level%s):\n%-30s %-30s %14s",
            n > SHOWN ? ", the first 20" : "", "code", "data", "refs");
    print_level_heads(fp, s);
    fputc('\n', fp);
    for (size_t i = 0; i < n && i < SHOWN; i++) {
        char code[MT_SIM_CODE_NAME_MAX];
        mt_sim_code_name(prog, p[i].code, code, sizeof code);
        print_escaped(fp, code, 30);
        fputc(' ', fp);
        print_escaped(fp, data_name(d, p[i].data), 30);
        fprintf(fp, " %14" PRIu64, p[i].refs);
        for (unsigned l = 0; l < mt_sim_level_count(s); l++)
            fprintf(fp, " %10" PRIu64, misses_at((const uint64_t(*)[MT_SIM_NCAUSES])p[i].misses, l));
        fputc('\n', fp);
    }
    free(p);
}

static int by_count(const void *a, const void *b)
{
    const mt_sim_eviction *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->level != y->level ? (x->level < y->level ? -1 : 1)
                                : memcmp(&x->evictor, &y->evictor, 8);
}

static void text_replacements(FILE *fp, mt_sim *s, const mt_data_map *d)
{
    enum { SHOWN = 10 };
    size_t n;
    const mt_sim_eviction *e = mt_sim_evictions(s, &n);
    mt_sim_eviction *copy = mt_xmalloc((n + 1) * sizeof *copy);
    memcpy(copy, e, n * sizeof *copy);
    qsort(copy, n, sizeof *copy, by_count);
    fprintf(fp, "\ncauses of replacement (lines of VICTIM evicted for EVICTOR%s):\n",
            n > SHOWN ? ", the first 10" : "");
    for (size_t i = 0; i < n && i < SHOWN; i++) {
        fprintf(fp, "  %-3s %12" PRIu64 "  ", mt_sim_level(s, copy[i].level)->desc->name,
                copy[i].count);
        print_escaped(fp, data_name(d, copy[i].evictor), 0);
        fprintf(fp, " evicted ");
        print_escaped(fp, data_name(d, copy[i].victim), 0);
        fputc('\n', fp);
    }
    free(copy);
}

void mt_sim_data_text(FILE *fp, mt_sim *s, const mt_data_map *d, const mt_program *prog)
{
    text_objects(fp, s, d);
    text_matrix(fp, s, d, prog);
    text_replacements(fp, s, d);
}

/* ---- JSON ---- */

static void json_string_or_null(FILE *fp, const char *s)
{
    if (s)
        mt_json_string(fp, s);
    else
        fprintf(fp, "null");
}

void mt_sim_json_use(FILE *fp, const mt_sim *s, const mt_sim_object_use *uses, size_t n,
                     uint32_t id)
{
    fprintf(fp, "{");
    for (unsigned l = 0, first = 1; l < mt_sim_level_count(s); l++) {
        const mt_sim_object_use *u = mt_sim_use_of(uses, n, id, l);
        if (!u)
            continue;
        fprintf(fp, "%s\"%s\": {\"lines\": %" PRIu64 ", \"bytes_used\": %" PRIu64
                    ", \"reuses\": %" PRIu64 ", \"spatial_use\": ",
                first ? "" : ", ", mt_sim_level(s, l)->desc->name, u->lines, u->bytes_used,
                u->reuses);
        mt_json_number(fp, mt_sim_spatial_use(s, u));
        fprintf(fp, "}");
        first = 0;
    }
    fprintf(fp, "}");
}

static void json_objects(FILE *fp, mt_sim *s, const mt_data_map *d)
{
    size_t n, nuses;
    mt_sim_data_row *rows = mt_sim_data_rows(s, d, &n);
    const mt_sim_object_use *uses = mt_sim_object_uses(s, &nuses);
    fprintf(fp, ",\n  \"data_objects\": [");
    for (size_t i = 0; i < n; i++) {
        const mt_data_object *o = mt_data_map_object(d, rows[i].id);
        fprintf(fp, "%s\n    {\"id\": %" PRIu32 ", \"name\": ", i ? "," : "", rows[i].id);
        mt_json_string(fp, o->name);
        fprintf(fp, ", \"kind\": \"%s\", \"type\": ", mt_data_kind_name(o->kind));
        json_string_or_null(fp, o->type);
        fprintf(fp, ", \"start\": %" PRIu64 ", \"size\": %" PRIu64 ", \"path\": ", o->start,
                o->size);
        json_string_or_null(fp, o->path);
        fprintf(fp, ", \"blocks\": %" PRIu64 ", \"refs\": %" PRIu64 ",\n     \"misses\": ",
                o->blocks, rows[i].refs);
        mt_sim_json_misses(fp, s, (const uint64_t(*)[MT_SIM_NCAUSES])rows[i].misses);
        fprintf(fp, ",\n     \"use\": ");
        mt_sim_json_use(fp, s, uses, nuses, rows[i].id);
        fprintf(fp, "}");
    }
    fprintf(fp, "\n  ]");
    free(rows);
}

static void json_matrix(FILE *fp, mt_sim *s, const mt_data_map *d, const mt_program *prog)
{
    size_t n;
    mt_sim_pair *p = sorted_pairs(s, &n);
    fprintf(fp, ",\n  \"code_data\": [");
    for (size_t i = 0; i < n; i++) {
        char code[MT_SIM_CODE_NAME_MAX];
        mt_sim_code_name(prog, p[i].code, code, sizeof code);
        fprintf(fp, "%s\n    {\"code\": %" PRIu32 ", \"code_name\": ", i ? "," : "", p[i].code);
        mt_json_string(fp, code);
        fprintf(fp, ", \"data\": %" PRIu32 ", \"data_name\": ", p[i].data);
        mt_json_string(fp, data_name(d, p[i].data));
        fprintf(fp, ", \"refs\": %" PRIu64 ", \"misses\": ", p[i].refs);
        mt_sim_json_misses(fp, s, (const uint64_t(*)[MT_SIM_NCAUSES])p[i].misses);
        fprintf(fp, "}");
    }
    fprintf(fp, "\n  ]");
    free(p);
}

void mt_sim_data_json(FILE *fp, mt_sim *s, const mt_data_map *d, const mt_program *prog)
{
    json_objects(fp, s, d);
    json_matrix(fp, s, d, prog);
}
