/* analyzer/saved.c — an analysis kept in a file and read back.
 *
 * What a count needs of a shared library is its analysis, and a library
 * such as libc takes most of a count's own time to analyze (decoding,
 * CFGs, jump tables): run/libs.c keeps each one in its cache by content
 * and reads it back on the next count.
 *
 * Conventions: the file is this build's memory layout, not a portable
 * format.  Its reader is the mtool build that wrote it (the cache key
 * holds the build's identity), so each structure is written as its bytes,
 * followed by what its pointers own in a fixed order; a pointer's stored
 * value only says whether it was NULL.  A string is its length (u32,
 * UINT32_MAX for NULL) and its bytes.  The file starts and ends with
 * SAVED_MAGIC, so a cut or foreign file is refused, never half read. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char SAVED_MAGIC[8] = {'M', 'T', 'A', 'N', 'L', 'Y', 'S', '1'};

/* ---- writing ------------------------------------------------------------------ */

static void put(FILE *fp, const void *bytes, size_t size, size_t n)
{
    if (size && n)
        fwrite(bytes, size, n, fp);
}

static void put_string(FILE *fp, const char *s)
{
    uint32_t len = s ? (uint32_t)strlen(s) : UINT32_MAX;
    put(fp, &len, sizeof len, 1);
    put(fp, s, 1, s ? len : 0);
}

static void put_strings(FILE *fp, char *const *s, uint32_t n)
{
    for (uint32_t i = 0; s && i < n; i++)
        put_string(fp, s[i]);
}

static void put_loop(FILE *fp, const mt_loop *l)
{
    put(fp, l->blocks, sizeof *l->blocks, l->nblocks);
    put(fp, l->entry_edges, sizeof *l->entry_edges, l->nentry_edges);
    put(fp, l->exit_edges, sizeof *l->exit_edges, l->nexit_edges);
    put(fp, l->back_edges, sizeof *l->back_edges, l->nback_edges);
}

static void put_procedure(FILE *fp, const mt_procedure *p)
{
    put_string(fp, p->name);
    put_string(fp, p->import);
    put_string(fp, p->unresolved_reason);
    put_string(fp, p->code_as_data);
    put(fp, p->foreign_entries, sizeof *p->foreign_entries, p->nforeign_entries);
    put(fp, p->blocks, sizeof *p->blocks, p->nblocks);
    put(fp, p->edges, sizeof *p->edges, p->nedges);
    put(fp, p->loops, sizeof *p->loops, p->nloops);
    for (uint32_t i = 0; p->loops && i < p->nloops; i++)
        put_loop(fp, &p->loops[i]);
    put(fp, p->calls, sizeof *p->calls, p->ncalls);
    put(fp, p->tables, sizeof *p->tables, p->ntables);
}

int mt_program_save(const mt_program *prog, const char *path, mt_error *err)
{
    mt_outfile out;
    if (mt_outfile_open(&out, path, err) != 0)
        return -1;
    put(out.fp, SAVED_MAGIC, sizeof SAVED_MAGIC, 1);
    put(out.fp, prog, sizeof *prog, 1);
    put(out.fp, prog->procs, sizeof *prog->procs, prog->nprocs);
    for (uint32_t i = 0; prog->procs && i < prog->nprocs; i++)
        put_procedure(out.fp, &prog->procs[i]);
    put(out.fp, prog->cg_edges, sizeof *prog->cg_edges, prog->ncg_edges);
    put(out.fp, prog->cross_callees, sizeof *prog->cross_callees, prog->ncross_callees);
    for (uint32_t j = 0; prog->cross_callees && j < prog->ncross_callees; j++)
        put_string(out.fp, prog->cross_callees[j].object);
    put_strings(out.fp, prog->files, prog->nfiles);
    put_strings(out.fp, prog->warnings, prog->nwarnings);
    put(out.fp, SAVED_MAGIC, sizeof SAVED_MAGIC, 1);
    return mt_outfile_commit(&out, err);
}

/* ---- reading ------------------------------------------------------------------ */

typedef struct {
    const uint8_t *at, *end;
    bool ok; /* false from the first read past the end on */
} cursor;

static bool fits(cursor *c, size_t size, size_t n)
{
    if (c->ok && size && n > (size_t)(c->end - c->at) / size)
        c->ok = false;
    return c->ok;
}

static bool take(cursor *c, void *dst, size_t size, size_t n)
{
    if (!fits(c, size, n))
        return false;
    if (size && n)
        memcpy(dst, c->at, size * n);
    c->at += size * n;
    return true;
}

/* The array a stored pointer owned: NULL when it was NULL (or the file
 * ends first), else its n elements (at least one allocated, as a
 * non-NULL pointer to none may have been). */
static void *take_array(cursor *c, const void *stored, size_t size, size_t n)
{
    if (!stored || !fits(c, size, n))
        return NULL;
    void *a = mt_xcalloc(n ? n : 1, size);
    take(c, a, size, n);
    return a;
}

static char *take_string(cursor *c)
{
    uint32_t len;
    if (!take(c, &len, sizeof len, 1) || len == UINT32_MAX || !fits(c, 1, len))
        return NULL;
    char *s = mt_xmalloc((size_t)len + 1);
    take(c, s, 1, len);
    s[len] = '\0';
    return s;
}

static char **take_strings(cursor *c, char *const *stored, uint32_t n)
{
    char **s = stored ? mt_xcalloc(n ? n : 1, sizeof *s) : NULL;
    for (uint32_t i = 0; s && i < n; i++)
        s[i] = take_string(c);
    return s;
}

/* A string a stored pointer owned: there if and only if it was not NULL. */
static char *take_owned_string(cursor *c, const char *stored)
{
    char *s = take_string(c);
    if (!stored != !s)
        c->ok = false;
    return s;
}

static void take_loop(cursor *c, mt_loop *l)
{
    l->blocks = take_array(c, l->blocks, sizeof *l->blocks, l->nblocks);
    l->entry_edges = take_array(c, l->entry_edges, sizeof *l->entry_edges, l->nentry_edges);
    l->exit_edges = take_array(c, l->exit_edges, sizeof *l->exit_edges, l->nexit_edges);
    l->back_edges = take_array(c, l->back_edges, sizeof *l->back_edges, l->nback_edges);
}

/* p holds its stored bytes: its pointers say only which arrays follow.
 * Each is replaced by what was read, or NULL (a program read part way is
 * freed with mt_program_free). */
static void take_procedure(cursor *c, mt_procedure *p)
{
    p->name = take_owned_string(c, p->name);
    p->import = take_owned_string(c, p->import);
    p->unresolved_reason = take_owned_string(c, p->unresolved_reason);
    p->code_as_data = take_owned_string(c, p->code_as_data);
    p->foreign_entries = take_array(c, p->foreign_entries, sizeof *p->foreign_entries,
                                    p->nforeign_entries);
    p->blocks = take_array(c, p->blocks, sizeof *p->blocks, p->nblocks);
    p->edges = take_array(c, p->edges, sizeof *p->edges, p->nedges);
    p->loops = take_array(c, p->loops, sizeof *p->loops, p->nloops);
    if (!p->loops)
        p->nloops = 0; /* mt_free_loops walks them */
    for (uint32_t i = 0; i < p->nloops; i++)
        take_loop(c, &p->loops[i]);
    p->calls = take_array(c, p->calls, sizeof *p->calls, p->ncalls);
    p->tables = take_array(c, p->tables, sizeof *p->tables, p->ntables);
}

static void take_procedures(cursor *c, mt_program *prog, const mt_program *stored)
{
    prog->procs = take_array(c, stored->procs, sizeof *prog->procs, stored->nprocs);
    for (uint32_t i = 0; prog->procs && i < stored->nprocs; i++, prog->nprocs++)
        take_procedure(c, &prog->procs[i]);
}

static void take_cross_callees(cursor *c, mt_program *prog, const mt_program *stored)
{
    prog->cross_callees = take_array(c, stored->cross_callees, sizeof *prog->cross_callees,
                                     stored->ncross_callees);
    for (uint32_t j = 0; prog->cross_callees && j < stored->ncross_callees;
         j++, prog->ncross_callees++)
        prog->cross_callees[j].object = take_string(c);
}

/* The program's fields as stored; each pointer and its count set as what
 * follows is read, so that a cut file frees what was read, no more. */
static mt_program *take_program(cursor *c, const char *path)
{
    mt_program stored;
    if (!take(c, &stored, sizeof stored, 1))
        return NULL;
    mt_program *prog = mt_xcalloc(1, sizeof *prog);
    *prog = stored;
    prog->path = mt_xstrdup(path); /* the same content may be found at another path */
    prog->procs = NULL, prog->nprocs = 0;
    prog->cg_edges = NULL;
    prog->cross_callees = NULL, prog->ncross_callees = 0;
    prog->files = prog->warnings = NULL, prog->nfiles = prog->nwarnings = 0;
    take_procedures(c, prog, &stored);
    prog->cg_edges = take_array(c, stored.cg_edges, sizeof *prog->cg_edges, stored.ncg_edges);
    take_cross_callees(c, prog, &stored);
    if ((prog->files = take_strings(c, stored.files, stored.nfiles)))
        prog->nfiles = stored.nfiles;
    if ((prog->warnings = take_strings(c, stored.warnings, stored.nwarnings)))
        prog->nwarnings = stored.nwarnings;
    return prog;
}

/* The whole file, or NULL with err set. */
static uint8_t *read_whole(const char *path, size_t *size, mt_error *err)
{
    FILE *fp = mt_fopen_regular(path, err);
    if (!fp)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    uint8_t *bytes = mt_xmalloc(cap);
    for (size_t n; (n = fread(bytes + len, 1, cap - len, fp)) > 0;)
        if ((len += n) == cap)
            bytes = mt_xrealloc(bytes, cap *= 2);
    bool failed = ferror(fp);
    fclose(fp);
    if (failed) {
        mt_error_set(err, "%s: cannot be read", path);
        free(bytes);
        return NULL;
    }
    *size = len;
    return bytes;
}

mt_program *mt_program_load(const char *path, const char *bin, mt_error *err)
{
    size_t size;
    uint8_t *bytes = read_whole(path, &size, err);
    if (!bytes)
        return NULL;
    cursor c = {bytes, bytes + size, true};
    char magic[sizeof SAVED_MAGIC];
    mt_program *prog = NULL;
    if (take(&c, magic, sizeof magic, 1) && memcmp(magic, SAVED_MAGIC, sizeof magic) == 0)
        prog = take_program(&c, bin);
    bool whole = take(&c, magic, sizeof magic, 1) &&
                 memcmp(magic, SAVED_MAGIC, sizeof magic) == 0 && c.at == c.end;
    free(bytes);
    if (!prog || !whole) {
        mt_program_free(prog);
        mt_error_set(err, "%s: not a whole analysis saved by this mtool", path);
        return NULL;
    }
    return prog;
}
