/* analyzer/lines.c — source positions of blocks from DWARF line tables.
 *
 * Every compilation unit's line program is read once (libdwarf) into one
 * table of address ranges → (file, line), sorted, and each block gets the
 * position of the row containing its first instruction.  A binary without
 * DWARF simply has no lines; a corrupt .debug_line gives one warning. */
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
    /* File names interned into prog->files, looked up linearly from the
     * most recent: one CU's rows name few files. */
    mt_program *prog;
} line_table;

static uint32_t intern_file(line_table *t, const char *name)
{
    mt_program *prog = t->prog;
    for (uint32_t i = prog->nfiles; i-- > 1;)
        if (strcmp(prog->files[i], name) == 0)
            return i;
    prog->files = mt_xrealloc(prog->files, (prog->nfiles + 1) * sizeof *prog->files);
    prog->files[prog->nfiles] = mt_xstrdup(name);
    return prog->nfiles++;
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

/* The row containing addr (the last row starting at or before it). */
static const line_row *row_at(const line_table *t, uint64_t addr)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->rows[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo && addr < t->rows[lo - 1].end ? &t->rows[lo - 1] : NULL;
}

static void assign_block_lines(const line_table *t, mt_program *prog)
{
    for (uint32_t p = 0; p < prog->nprocs; p++) {
        mt_procedure *proc = &prog->procs[p];
        for (uint32_t b = 0; b < proc->nblocks; b++) {
            const line_row *row = row_at(t, proc->blocks[b].start);
            if (row) {
                proc->blocks[b].file = row->file;
                proc->blocks[b].line = row->line;
            }
        }
    }
}

void mt_read_lines(const mt_image *img, mt_program *prog)
{
    if (!mt_image_section(img, ".debug_line"))
        return;
    Dwarf_Debug dbg = NULL;
    Dwarf_Error err = NULL;
    int rc = dwarf_init_b(img->fd, DW_DLC_READ, DW_GROUPNUMBER_ANY, NULL, NULL, &dbg, &err);
    if (rc != DW_DLV_OK) {
        if (rc == DW_DLV_ERROR) {
            mt_warn(prog, "%s: cannot read DWARF: %s; no source lines", prog->path, dwarf_errmsg(err));
            dwarf_dealloc_error(dbg, err);
        }
        return;
    }
    line_table t = {.prog = prog};
    if (!read_all_lines(&t, dbg))
        mt_warn(prog, "%s: corrupt DWARF line table; source lines are partial", prog->path);
    if (t.n > 1)
        qsort(t.rows, t.n, sizeof *t.rows, compare_rows);
    prog->has_dwarf_lines = t.n > 0;
    assign_block_lines(&t, prog);
    free(t.rows);
    dwarf_finish(dbg, &err);
    drop_error(dbg, &err);
}
