/* analyzer/analysis_json.c — the analysis as versioned JSON
 * (docs/analysis-schema.md).  Addresses are hex strings because JSON
 * numbers lose precision above 2^53; "no such thing" (MT_NONE) is null.
 *
 * A large shared object yields close to a gigabyte of JSON, so output goes
 * through a private buffer with hand-written number formatting: stdio's
 * per-call locking and printf parsing cost more than the analysis itself. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"

#define WRITER_BUFSIZE (1u << 16)

typedef struct {
    FILE *fp;
    size_t n;
    char *buf; /* WRITER_BUFSIZE bytes */
} writer;

static void w_flush(writer *w)
{
    if (w->n)
        fwrite(w->buf, 1, w->n, w->fp); /* errors stay on the stream: the caller checks ferror/fclose */
    w->n = 0;
}

static void w_bytes(writer *w, const char *s, size_t len)
{
    if (len > WRITER_BUFSIZE - w->n) {
        w_flush(w);
        if (len > WRITER_BUFSIZE) {
            fwrite(s, 1, len, w->fp);
            return;
        }
    }
    memcpy(w->buf + w->n, s, len);
    w->n += len;
}

static void w_char(writer *w, char c)
{
    if (w->n == WRITER_BUFSIZE)
        w_flush(w);
    w->buf[w->n++] = c;
}

/* String literals only: the length is known at compile time. */
#define W_LIT(w, lit) w_bytes((w), "" lit, sizeof(lit) - 1)

static void w_u64(writer *w, uint64_t v)
{
    char tmp[24];
    size_t i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    w_bytes(w, tmp + i, sizeof tmp - i);
}

static void w_addr(writer *w, uint64_t a)
{
    static const char hex[] = "0123456789abcdef";
    char tmp[24];
    size_t i = sizeof tmp;
    tmp[--i] = '"';
    do {
        tmp[--i] = hex[a & 15];
        a >>= 4;
    } while (a);
    tmp[--i] = 'x';
    tmp[--i] = '0';
    tmp[--i] = '"';
    w_bytes(w, tmp + i, sizeof tmp - i);
}

/* An address, or null when 0 (unknown). */
static void w_addr_or_null(writer *w, uint64_t a)
{
    if (a)
        w_addr(w, a);
    else
        W_LIT(w, "null");
}

static void w_index(writer *w, uint32_t v)
{
    if (v == MT_NONE)
        W_LIT(w, "null");
    else
        w_u64(w, v);
}

/* Tot/TDES: finite non-negative doubles, exactly (%.17g round-trips);
 * anything else (negative = "not computed") is null. */
static void w_number(writer *w, double v)
{
    if (!isfinite(v) || v < 0) {
        W_LIT(w, "null");
        return;
    }
    char tmp[40];
    int len = snprintf(tmp, sizeof tmp, "%.17g", v);
    w_bytes(w, tmp, len > 0 && (size_t)len < sizeof tmp ? (size_t)len : 0);
}

static void w_bool(writer *w, bool v)
{
    if (v)
        W_LIT(w, "true");
    else
        W_LIT(w, "false");
}

/* JSON string: quotes, backslashes and control characters escaped; valid
 * UTF-8 copied as is; any other byte (symbol names are bytes, not text)
 * becomes \u00XX of that byte, so the output is always valid JSON. */
static void w_string(writer *w, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    w_char(w, '"');
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        const unsigned char *run = p; /* plain printable ASCII is copied in runs */
        while (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\')
            p++;
        w_bytes(w, (const char *)run, (size_t)(p - run));
        unsigned c = *p;
        if (!c)
            break;
        size_t len;
        if (c == '"' || c == '\\') {
            w_char(w, '\\');
            w_char(w, (char)c);
            p++;
        } else if (c >= 0x80 && (len = mt_utf8_sequence_length(p)) != 0) {
            w_bytes(w, (const char *)p, len);
            p += len;
        } else {
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            w_bytes(w, esc, sizeof esc);
            p++;
        }
    }
    w_char(w, '"');
}

static void w_index_list(writer *w, const uint32_t *v, uint32_t n)
{
    w_char(w, '[');
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            w_char(w, ',');
        w_u64(w, v[i]);
    }
    w_char(w, ']');
}

static void put_sources(writer *w, uint32_t sources)
{
    static const char *const names[] = {"symtab", "dynsym", "eh_frame", "plt", "entry"};
    w_char(w, '[');
    bool first = true;
    for (unsigned i = 0; i < MT_ARRAY_LEN(names); i++)
        if (sources & (1u << i)) {
            if (!first)
                w_char(w, ',');
            w_string(w, names[i]);
            first = false;
        }
    w_char(w, ']');
}

static void put_block(writer *w, const mt_block *blk, uint32_t b)
{
    W_LIT(w, "{\"index\":");
    w_u64(w, b);
    W_LIT(w, ",\"start\":");
    w_addr(w, blk->start);
    W_LIT(w, ",\"end\":");
    w_addr(w, blk->end);
    W_LIT(w, ",\"instructions\":");
    w_u64(w, blk->ninsns);
    W_LIT(w, ",\"mem_reads\":");
    w_u64(w, blk->mem_reads);
    W_LIT(w, ",\"mem_writes\":");
    w_u64(w, blk->mem_writes);
    W_LIT(w, ",\"term\":");
    w_string(w, mt_term_kind_name(blk->term));
    W_LIT(w, ",\"idom\":");
    w_index(w, blk->idom);
    W_LIT(w, ",\"loop\":");
    w_index(w, blk->loop);
    /* file 0 / line 0 mean "no source position": null, not index 0. */
    W_LIT(w, ",\"file\":");
    w_index(w, blk->file && blk->line ? blk->file : MT_NONE);
    W_LIT(w, ",\"line\":");
    w_index(w, blk->line ? blk->line : MT_NONE);
    w_char(w, '}');
}

static void put_blocks_and_edges(writer *w, const mt_procedure *p)
{
    W_LIT(w, ",\"blocks\":[");
    for (uint32_t b = 0; b < p->nblocks; b++) {
        if (b)
            w_char(w, ',');
        put_block(w, &p->blocks[b], b);
    }
    W_LIT(w, "],\"edges\":[");
    for (uint32_t e = 0; e < p->nedges; e++) {
        const mt_edge *edge = &p->edges[e];
        if (e)
            w_char(w, ',');
        W_LIT(w, "{\"src\":");
        w_u64(w, edge->src);
        W_LIT(w, ",\"dst\":");
        w_index(w, edge->dst);
        W_LIT(w, ",\"kind\":");
        w_string(w, mt_edge_kind_name(edge->kind));
        W_LIT(w, ",\"target\":");
        w_addr_or_null(w, edge->target);
        w_char(w, '}');
    }
    w_char(w, ']');
}

static void put_calls(writer *w, const mt_procedure *p)
{
    W_LIT(w, ",\"calls\":[");
    for (uint32_t c = 0; c < p->ncalls; c++) {
        const mt_call_site *site = &p->calls[c];
        if (c)
            w_char(w, ',');
        W_LIT(w, "{\"addr\":");
        w_addr(w, site->addr);
        W_LIT(w, ",\"target\":");
        w_addr_or_null(w, site->target);
        W_LIT(w, ",\"block\":");
        w_index(w, site->block);
        W_LIT(w, ",\"callee\":");
        w_index(w, site->callee);
        W_LIT(w, ",\"kind\":");
        w_string(w, mt_call_kind_name(site->kind));
        W_LIT(w, ",\"loop\":");
        w_index(w, site->loop);
        w_char(w, '}');
    }
    w_char(w, ']');
}

static void put_loops(writer *w, const mt_procedure *p)
{
    W_LIT(w, ",\"loops\":[");
    for (uint32_t l = 0; l < p->nloops; l++) {
        const mt_loop *loop = &p->loops[l];
        if (l)
            w_char(w, ',');
        W_LIT(w, "{\"index\":");
        w_u64(w, l);
        W_LIT(w, ",\"header\":");
        w_index(w, loop->header);
        W_LIT(w, ",\"parent\":");
        w_index(w, loop->parent);
        W_LIT(w, ",\"depth\":");
        w_u64(w, loop->depth);
        W_LIT(w, ",\"irreducible\":");
        w_bool(w, loop->irreducible);
        W_LIT(w, ",\"blocks\":");
        w_index_list(w, loop->blocks, loop->nblocks);
        W_LIT(w, ",\"entry_edges\":");
        w_index_list(w, loop->entry_edges, loop->nentry_edges);
        W_LIT(w, ",\"exit_edges\":");
        w_index_list(w, loop->exit_edges, loop->nexit_edges);
        W_LIT(w, ",\"back_edges\":");
        w_index_list(w, loop->back_edges, loop->nback_edges);
        W_LIT(w, ",\"estimable\":");
        w_bool(w, loop->estimable);
        W_LIT(w, ",\"tot\":");
        w_number(w, loop->tot);
        W_LIT(w, ",\"tdes\":");
        w_number(w, loop->tdes);
        w_char(w, '}');
    }
    w_char(w, ']');
}

static void put_procedure(writer *w, const mt_program *prog, uint32_t i, const mt_json_options *opt)
{
    const mt_procedure *p = &prog->procs[i];
    W_LIT(w, "{\"index\":");
    w_u64(w, i);
    W_LIT(w, ",\"name\":");
    w_string(w, p->name ? p->name : "");
    W_LIT(w, ",\"entry\":");
    w_addr(w, p->entry);
    W_LIT(w, ",\"size\":");
    w_u64(w, p->size);
    W_LIT(w, ",\"sources\":");
    put_sources(w, p->sources);
    W_LIT(w, ",\"parent\":");
    w_index(w, p->parent);
    W_LIT(w, ",\"plt\":");
    w_bool(w, p->is_plt);
    W_LIT(w, ",\"import\":");
    if (p->import)
        w_string(w, p->import);
    else
        W_LIT(w, "null");
    W_LIT(w, ",\"resolved\":");
    w_bool(w, p->resolved);
    W_LIT(w, ",\"unresolved_reason\":");
    if (p->unresolved_reason)
        w_string(w, p->unresolved_reason);
    else
        W_LIT(w, "null");
    W_LIT(w, ",\"code_as_data\":");
    if (p->code_as_data)
        w_string(w, p->code_as_data);
    else
        W_LIT(w, "null");
    W_LIT(w, ",\"noreturn\":");
    w_bool(w, p->noreturn);
    W_LIT(w, ",\"address_taken\":");
    w_bool(w, p->address_taken);
    W_LIT(w, ",\"recursive\":");
    w_bool(w, p->recursive);
    W_LIT(w, ",\"scc\":");
    w_index(w, p->scc);
    W_LIT(w, ",\"estimable\":");
    w_bool(w, p->estimable);
    W_LIT(w, ",\"tot\":");
    w_number(w, p->tot);
    W_LIT(w, ",\"tdes\":");
    w_number(w, p->tdes);
    W_LIT(w, ",\"instructions\":");
    w_u64(w, p->ninsns);
    W_LIT(w, ",\"mem_reads\":");
    w_u64(w, p->mem_reads);
    W_LIT(w, ",\"mem_writes\":");
    w_u64(w, p->mem_writes);
    W_LIT(w, ",\"nblocks\":");
    w_u64(w, p->nblocks);
    W_LIT(w, ",\"nloops\":");
    w_u64(w, p->nloops);
    if (opt->blocks)
        put_blocks_and_edges(w, p);
    put_calls(w, p);
    if (opt->loops)
        put_loops(w, p);
    if (opt->blocks) {
        uint32_t *cuts;
        uint32_t ncuts = mt_region_cuts(prog, i, &cuts);
        W_LIT(w, ",\"region_cuts\":");
        w_index_list(w, cuts, ncuts);
        free(cuts);
    }
    w_char(w, '}');
}

static const char *kind_name(uint8_t kind)
{
    return kind == MT_ELF_EXEC ? "exec" : kind == MT_ELF_PIE ? "pie" : "shared";
}

static void put_program(writer *w, const mt_program *prog)
{
    W_LIT(w, "\"program\":{\"path\":");
    w_string(w, prog->path);
    W_LIT(w, ",\"kind\":");
    w_string(w, kind_name(prog->kind));
    W_LIT(w, ",\"static\":");
    w_bool(w, prog->static_linked);
    W_LIT(w, ",\"stripped\":");
    w_bool(w, prog->stripped);
    W_LIT(w, ",\"dwarf_lines\":");
    w_bool(w, prog->has_dwarf_lines);
    W_LIT(w, ",\"entry\":");
    w_addr(w, prog->entry);
    W_LIT(w, ",\"build_id\":");
    w_string(w, prog->build_id);
    W_LIT(w, ",\"instructions\":");
    w_u64(w, prog->ninsns);
    W_LIT(w, ",\"procedures\":");
    w_u64(w, prog->nprocs);
    w_char(w, '}');
}

static void put_callgraph(writer *w, const mt_program *prog)
{
    W_LIT(w, ",\"callgraph\":{\"edges\":[");
    for (uint32_t e = 0; e < prog->ncg_edges; e++) {
        const mt_cg_edge *edge = &prog->cg_edges[e];
        if (e)
            w_char(w, ',');
        W_LIT(w, "{\"caller\":");
        w_u64(w, edge->caller);
        W_LIT(w, ",\"callee\":");
        w_u64(w, edge->callee);
        W_LIT(w, ",\"sites\":");
        w_u64(w, edge->nsites);
        W_LIT(w, ",\"kind\":");
        w_string(w, mt_call_kind_name(edge->kind));
        w_char(w, '}');
    }
    W_LIT(w, "],\"sccs\":");
    w_u64(w, prog->nsccs);
    w_char(w, '}');
}

static void put_string_array(writer *w, char *const *items, uint32_t n)
{
    w_char(w, '[');
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            w_char(w, ',');
        w_string(w, items[i]);
    }
    w_char(w, ']');
}

void mt_write_analysis_json(FILE *fp, const mt_program *prog, const mt_json_options *opt)
{
    mt_json_options defaults = {.loops = true, .callgraph = true, .blocks = true};
    if (!opt)
        opt = &defaults;
    writer w = {fp, 0, mt_xmalloc(WRITER_BUFSIZE)};
    W_LIT(&w, "{\"schema\":\"mtool.analysis\",\"version\":");
    w_u64(&w, MT_ANALYSIS_SCHEMA_VERSION);
    w_char(&w, ',');
    put_program(&w, prog);
    W_LIT(&w, ",\"procedures\":[");
    bool first = true;
    for (uint32_t i = 0; i < prog->nprocs; i++) {
        if (opt->only_function && strcmp(prog->procs[i].name, opt->only_function) != 0)
            continue;
        if (!first)
            w_char(&w, ',');
        first = false;
        put_procedure(&w, prog, i, opt);
    }
    w_char(&w, ']');
    if (opt->callgraph)
        put_callgraph(&w, prog);
    W_LIT(&w, ",\"files\":");
    put_string_array(&w, prog->files, prog->nfiles);
    W_LIT(&w, ",\"warnings\":");
    put_string_array(&w, prog->warnings, prog->nwarnings);
    W_LIT(&w, "}\n");
    w_flush(&w);
    free(w.buf);
}
