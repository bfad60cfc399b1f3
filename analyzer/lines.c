/* analyzer/lines.c — source positions of blocks from DWARF line tables.
 *
 * Every compilation unit's line program is read once (libdwarf) into one
 * table of address ranges → (file, line), sorted, and each block gets the
 * position of its first instruction that has a line.  A binary without
 * DWARF simply has no lines; a corrupt .debug_line gives one warning.
 *
 * libdwarf runs in a child process that sends the rows back through a pipe:
 * libdwarf 20210528 has known memory-safety bugs on corrupt DWARF (several
 * CVEs were fixed after it), and a malformed file must never crash mtool.
 * If the child dies, the binary gets no lines and a warning. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <libdwarf.h>

#include "internal.h"

typedef struct {
    uint64_t start, end; /* [start, end) */
    uint32_t file, line;
} line_row;

typedef struct {
    line_row *rows;
    size_t n, cap;
    /* File names, files[0] = "" (unknown) as in mt_program.  A hash set
     * (open addressing, slot = file index + 1, 0 = empty) keeps interning
     * O(1): large programs have thousands of CUs naming thousands of files. */
    char **files;
    uint32_t nfiles;
    size_t cap_files;
    uint32_t *slots;
    size_t nslots; /* a power of two, kept at least twice nfiles */
} line_table;

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static void rehash_files(line_table *t)
{
    free(t->slots);
    t->nslots = t->nslots ? t->nslots * 2 : 64;
    t->slots = mt_xcalloc(t->nslots, sizeof *t->slots);
    for (uint32_t i = 1; i < t->nfiles; i++) {
        size_t k = hash_name(t->files[i]) & (t->nslots - 1);
        while (t->slots[k])
            k = (k + 1) & (t->nslots - 1);
        t->slots[k] = i + 1;
    }
}

static uint32_t intern_file(line_table *t, const char *name)
{
    if (t->nfiles == 0) { /* files[0], the unknown file, is never looked up */
        size_t n = 0;
        MT_PUSH(t->files, n, t->cap_files, mt_xstrdup(""));
        t->nfiles = 1;
    }
    if (!name[0])
        return 0;
    if (2 * ((size_t)t->nfiles + 1) > t->nslots)
        rehash_files(t);
    size_t k = hash_name(name) & (t->nslots - 1);
    for (; t->slots[k]; k = (k + 1) & (t->nslots - 1))
        if (strcmp(t->files[t->slots[k] - 1], name) == 0)
            return t->slots[k] - 1;
    size_t n = t->nfiles;
    MT_PUSH(t->files, n, t->cap_files, mt_xstrdup(name));
    t->slots[k] = t->nfiles + 1;
    return t->nfiles++;
}

static void line_table_free(line_table *t)
{
    for (uint32_t i = 0; i < t->nfiles; i++)
        free(t->files[i]);
    free(t->files);
    free(t->slots);
    free(t->rows);
}

static void drop_error(Dwarf_Debug dbg, Dwarf_Error *err)
{
    if (*err) {
        dwarf_dealloc_error(dbg, *err);
        *err = NULL;
    }
}

/* File index for a row, caching the CU's file numbers so libdwarf's
 * per-row string is fetched once per file, not once per row. */
static uint32_t row_file(line_table *t, Dwarf_Debug dbg, Dwarf_Line line, uint32_t **cache, size_t *ncache)
{
    Dwarf_Error err = NULL;
    Dwarf_Unsigned fileno = 0;
    if (dwarf_line_srcfileno(line, &fileno, &err) != DW_DLV_OK) {
        drop_error(dbg, &err);
        return 0;
    }
    if (fileno < 4096 && fileno < *ncache && (*cache)[fileno])
        return (*cache)[fileno];
    char *name = NULL;
    if (dwarf_linesrc(line, &name, &err) != DW_DLV_OK) {
        drop_error(dbg, &err);
        return 0;
    }
    uint32_t idx = intern_file(t, name);
    dwarf_dealloc(dbg, name, DW_DLA_STRING);
    if (fileno < 4096) {
        if (fileno >= *ncache) {
            size_t n = (size_t)fileno + 1;
            *cache = mt_xrealloc(*cache, n * sizeof **cache);
            memset(*cache + *ncache, 0, (n - *ncache) * sizeof **cache);
            *ncache = n;
        }
        (*cache)[fileno] = idx;
    }
    return idx;
}

/* Appends the rows of one CU's line program; returns false on a DWARF error. */
static bool read_cu_lines(line_table *t, Dwarf_Debug dbg, Dwarf_Die cu)
{
    Dwarf_Error err = NULL;
    Dwarf_Unsigned version = 0;
    Dwarf_Small table_count = 0;
    Dwarf_Line_Context ctx = NULL;
    int rc = dwarf_srclines_b(cu, &version, &table_count, &ctx, &err);
    if (rc == DW_DLV_NO_ENTRY)
        return true;
    if (rc != DW_DLV_OK) {
        drop_error(dbg, &err);
        return false;
    }
    Dwarf_Line *lines = NULL;
    Dwarf_Signed count = 0;
    bool ok = dwarf_srclines_from_linecontext(ctx, &lines, &count, &err) == DW_DLV_OK;
    drop_error(dbg, &err);
    uint32_t *cache = NULL;
    size_t ncache = 0;
    for (Dwarf_Signed i = 0; ok && i + 1 < count; i++) {
        Dwarf_Addr addr = 0, next = 0;
        Dwarf_Unsigned lineno = 0;
        Dwarf_Bool end_seq = 0;
        if (dwarf_lineendsequence(lines[i], &end_seq, &err) != DW_DLV_OK ||
            dwarf_lineaddr(lines[i], &addr, &err) != DW_DLV_OK ||
            dwarf_lineaddr(lines[i + 1], &next, &err) != DW_DLV_OK ||
            dwarf_lineno(lines[i], &lineno, &err) != DW_DLV_OK) {
            drop_error(dbg, &err);
            ok = false;
            break;
        }
        /* A row covers up to the next row of its sequence; an end_sequence
         * row covers nothing, and neither do rows for address 0 (code that
         * the linker discarded) or line 0 (no source line). */
        if (end_seq || next <= addr || addr == 0 || lineno == 0 || lineno > UINT32_MAX)
            continue;
        line_row row = {addr, next, row_file(t, dbg, lines[i], &cache, &ncache), (uint32_t)lineno};
        MT_PUSH(t->rows, t->n, t->cap, row);
    }
    free(cache);
    dwarf_srclines_dealloc_b(ctx);
    return ok;
}

static bool read_all_lines(line_table *t, Dwarf_Debug dbg)
{
    Dwarf_Error err = NULL;
    for (;;) {
        Dwarf_Unsigned next_cu = 0;
        Dwarf_Half cu_type = 0;
        int rc = dwarf_next_cu_header_d(dbg, 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, &next_cu,
                                        &cu_type, &err);
        if (rc == DW_DLV_NO_ENTRY)
            return true;
        if (rc != DW_DLV_OK) {
            drop_error(dbg, &err);
            return false;
        }
        Dwarf_Die cu = NULL;
        rc = dwarf_siblingof_b(dbg, NULL, 1, &cu, &err);
        if (rc == DW_DLV_ERROR) {
            drop_error(dbg, &err);
            return false;
        }
        if (rc == DW_DLV_OK) {
            bool ok = read_cu_lines(t, dbg, cu);
            dwarf_dealloc(dbg, cu, DW_DLA_DIE);
            if (!ok)
                return false;
        }
    }
}

static int compare_rows(const void *a, const void *b)
{
    const line_row *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* The row of the first instruction in [start, end) that has a source line:
 * the row containing start (the last row starting at or before it), else
 * the first row starting inside the block.  Rows without a line (line 0,
 * which clang emits for compiler-generated code) were never stored, so a
 * block that begins with such code takes the line of what follows. */
static const line_row *row_for_block(const line_table *t, uint64_t start, uint64_t end)
{
    size_t lo = mt_upper_bound_u64(t->rows, t->n, sizeof *t->rows, offsetof(line_row, start),
                                   start);
    if (lo && start < t->rows[lo - 1].end)
        return &t->rows[lo - 1];
    return lo < t->n && t->rows[lo].start < end ? &t->rows[lo] : NULL;
}

/* Child side: read every line table with libdwarf into t.  Returns 0 when
 * the tables were read whole, 1 when they were corrupt (partial rows). */
static int read_with_libdwarf(int fd, line_table *t)
{
    Dwarf_Debug dbg = NULL;
    Dwarf_Error err = NULL;
    int rc = dwarf_init_b(fd, DW_DLC_READ, DW_GROUPNUMBER_ANY, NULL, NULL, &dbg, &err);
    if (rc != DW_DLV_OK) {
        if (rc == DW_DLV_ERROR)
            dwarf_dealloc_error(dbg, err);
        return rc == DW_DLV_NO_ENTRY ? 0 : 1;
    }
    int status = read_all_lines(t, dbg) ? 0 : 1;
    dwarf_finish(dbg, &err);
    drop_error(dbg, &err);
    return status;
}

/* Wire format: u32 status, u32 nfiles, then per file u32 length + bytes,
 * then u64 nrows and the rows. */
static bool send_table(int fd, const line_table *t, uint32_t status)
{
    bool ok = mt_write_all(fd, &status, 4) && mt_write_all(fd, &t->nfiles, 4);
    for (uint32_t i = 0; ok && i < t->nfiles; i++) {
        uint32_t len = (uint32_t)strlen(t->files[i]);
        ok = mt_write_all(fd, &len, 4) && mt_write_all(fd, t->files[i], len);
    }
    uint64_t n = t->n;
    return ok && mt_write_all(fd, &n, 8) && mt_write_all(fd, t->rows, t->n * sizeof *t->rows);
}

/* Parent side: rebuild the table from the child's bytes, validating every
 * length and file index. */
static bool receive_table(const uint8_t *buf, size_t size, line_table *t, uint32_t *status)
{
    mt_byte_reader r = {buf, buf + size};
    uint32_t nfiles = 0;
    if (!mt_take(&r, status, 4) || !mt_take(&r, &nfiles, 4) || nfiles > size)
        return false;
    for (uint32_t i = 0; i < nfiles; i++) {
        uint32_t len = 0;
        if (!mt_take(&r, &len, 4) || len > (size_t)(r.end - r.p))
            return false;
        char *name = mt_xmalloc((size_t)len + 1);
        memcpy(name, r.p, len);
        name[len] = 0;
        r.p += len;
        size_t n = t->nfiles;
        MT_PUSH(t->files, n, t->cap_files, name);
        t->nfiles++;
    }
    uint64_t nrows = 0;
    if (!mt_take(&r, &nrows, 8) || nrows != (uint64_t)(r.end - r.p) / sizeof(line_row) ||
        (uint64_t)(r.end - r.p) % sizeof(line_row))
        return false;
    t->rows = mt_xmalloc(((size_t)nrows + 1) * sizeof *t->rows);
    t->n = t->cap = (size_t)nrows;
    memcpy(t->rows, r.p, (size_t)nrows * sizeof *t->rows);
    for (size_t i = 0; i < t->n; i++)
        if (t->rows[i].file >= t->nfiles)
            t->rows[i].file = 0;
    return true;
}

/* Child side of read_isolated: ctx is the ELF file. */
static bool read_and_send(void *ctx, int fd)
{
    const mt_elf_file *img = ctx;
    line_table mine = {0};
    intern_file(&mine, "");
    int st = read_with_libdwarf(img->fd, &mine);
    return send_table(fd, &mine, (uint32_t)st);
}

/* Runs read_with_libdwarf in a child; false when the child failed. */
static bool read_isolated(const mt_elf_file *img, line_table *t, uint32_t *status)
{
    size_t size = 0;
    uint8_t *buf = mt_run_isolated(read_and_send, (void *)img, &size);
    bool ok = buf && receive_table(buf, size, t, status);
    free(buf);
    return ok;
}

/* Each block's position (its first instruction with a line) and each call
 * site's (its call instruction's: a block's first line may be another
 * statement's, and a heap site is named by its call). */
static void assign_block_lines(const line_table *t, mt_program *prog, const uint32_t *file_map)
{
    for (uint32_t p = 0; p < prog->nprocs; p++) {
        mt_procedure *proc = &prog->procs[p];
        for (uint32_t b = 0; b < proc->nblocks; b++) {
            const mt_block *blk = &proc->blocks[b];
            const line_row *row = row_for_block(t, blk->start, blk->end);
            if (row) {
                proc->blocks[b].file = file_map[row->file];
                proc->blocks[b].line = row->line;
            }
        }
        for (uint32_t c = 0; c < proc->ncalls; c++) {
            mt_call_site *cs = &proc->calls[c];
            const line_row *row = row_for_block(t, cs->addr, cs->addr + 1);
            cs->line = row ? row->line : 0;
        }
    }
}

/* Interns the table's file names into prog->files; returns the index map. */
static uint32_t *adopt_files(const line_table *t, mt_program *prog)
{
    uint32_t *map = mt_xcalloc(t->nfiles + 1, sizeof *map);
    for (uint32_t i = 1; i < t->nfiles; i++) {
        prog->files = mt_xrealloc(prog->files, (prog->nfiles + 1) * sizeof *prog->files);
        prog->files[prog->nfiles] = mt_xstrdup(t->files[i]);
        map[i] = prog->nfiles++;
    }
    return map;
}

void mt_read_lines(const mt_elf_file *img, mt_program *prog)
{
    if (!mt_elf_file_section(img, ".debug_line"))
        return;
    line_table t = {0};
    uint32_t status = 0;
    if (!read_isolated(img, &t, &status)) {
        mt_warn(prog, "%s: DWARF could not be read (libdwarf failed on it); no source lines", prog->path);
        line_table_free(&t);
        return;
    }
    if (status != 0)
        mt_warn(prog, "%s: corrupt DWARF line table; source lines are partial", prog->path);
    if (t.n > 1)
        qsort(t.rows, t.n, sizeof *t.rows, compare_rows);
    prog->has_dwarf_lines = t.n > 0;
    uint32_t *map = adopt_files(&t, prog);
    assign_block_lines(&t, prog, map);
    free(map);
    line_table_free(&t);
}
