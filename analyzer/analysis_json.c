/* analyzer/analysis_json.c — the analysis as versioned JSON
 * (docs/analysis-schema.md).  Addresses are hex strings because JSON
 * numbers lose precision above 2^53; "no such thing" (MT_NONE) is null. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "analyzer.h"

static void put_string(FILE *fp, const char *s)
{
    putc('"', fp);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            putc('\\', fp);
            putc((int)c, fp);
        } else if (c < 0x20 || c >= 0x7f) {
            /* Control characters and every non-ASCII byte are escaped one by
             * one, so any symbol name yields valid JSON whatever its encoding. */
            fprintf(fp, "\\u%04x", c);
        } else {
            putc((int)c, fp);
        }
    }
    putc('"', fp);
}

static void put_addr(FILE *fp, uint64_t a)
{
    fprintf(fp, "\"0x%" PRIx64 "\"", a);
}

static void put_index(FILE *fp, uint32_t v)
{
    if (v == MT_NONE)
        fputs("null", fp);
    else
        fprintf(fp, "%" PRIu32, v);
}

static void put_number(FILE *fp, double v)
{
    if (isfinite(v) && v >= 0)
        fprintf(fp, "%.17g", v);
    else
        fputs("null", fp);
}

static void put_bool(FILE *fp, bool v)
{
    fputs(v ? "true" : "false", fp);
}

static void put_index_list(FILE *fp, const uint32_t *v, uint32_t n)
{
    putc('[', fp);
    for (uint32_t i = 0; i < n; i++)
        fprintf(fp, i ? ",%" PRIu32 : "%" PRIu32, v[i]);
    putc(']', fp);
}

static void put_sources(FILE *fp, uint32_t sources)
{
    static const char *const names[] = {"symtab", "dynsym", "eh_frame", "plt", "entry"};
    putc('[', fp);
    bool first = true;
    for (unsigned i = 0; i < MT_ARRAY_LEN(names); i++)
        if (sources & (1u << i)) {
            fprintf(fp, first ? "\"%s\"" : ",\"%s\"", names[i]);
            first = false;
        }
    putc(']', fp);
}

static void put_blocks(FILE *fp, const mt_procedure *p)
{
    fputs(",\"blocks\":[", fp);
    for (uint32_t b = 0; b < p->nblocks; b++) {
        const mt_block *blk = &p->blocks[b];
        fprintf(fp, "%s{\"index\":%" PRIu32 ",\"start\":", b ? "," : "", b);
        put_addr(fp, blk->start);
        fputs(",\"end\":", fp);
        put_addr(fp, blk->end);
        fprintf(fp, ",\"instructions\":%" PRIu32 ",\"mem_reads\":%" PRIu32 ",\"mem_writes\":%" PRIu32
                    ",\"term\":\"%s\",\"idom\":",
                blk->ninsns, blk->mem_reads, blk->mem_writes, mt_term_kind_name(blk->term));
        put_index(fp, blk->idom);
        fputs(",\"loop\":", fp);
        put_index(fp, blk->loop);
        fputs(",\"file\":", fp);
        put_index(fp, blk->file ? blk->file : MT_NONE);
        fputs(",\"line\":", fp);
        put_index(fp, blk->line ? blk->line : MT_NONE);
        putc('}', fp);
    }
    fputs("],\"edges\":[", fp);
    for (uint32_t e = 0; e < p->nedges; e++) {
        const mt_edge *edge = &p->edges[e];
        fprintf(fp, "%s{\"src\":%" PRIu32 ",\"dst\":", e ? "," : "", edge->src);
        put_index(fp, edge->dst);
        fprintf(fp, ",\"kind\":\"%s\",\"target\":", mt_edge_kind_name(edge->kind));
        if (edge->target)
            put_addr(fp, edge->target);
        else
            fputs("null", fp);
        putc('}', fp);
    }
    fputs("],\"calls\":[", fp);
    for (uint32_t c = 0; c < p->ncalls; c++) {
        const mt_call_site *site = &p->calls[c];
        fputs(c ? ",{\"addr\":" : "{\"addr\":", fp);
        put_addr(fp, site->addr);
        fputs(",\"target\":", fp);
        if (site->target)
            put_addr(fp, site->target);
        else
            fputs("null", fp);
        fprintf(fp, ",\"block\":%" PRIu32 ",\"callee\":", site->block);
        put_index(fp, site->callee);
        fprintf(fp, ",\"kind\":\"%s\",\"loop\":", mt_call_kind_name(site->kind));
        put_index(fp, site->loop);
        putc('}', fp);
    }
    putc(']', fp);
}

static void put_loops(FILE *fp, const mt_procedure *p)
{
    fputs(",\"loops\":[", fp);
    for (uint32_t l = 0; l < p->nloops; l++) {
        const mt_loop *loop = &p->loops[l];
        fprintf(fp, "%s{\"index\":%" PRIu32 ",\"header\":%" PRIu32 ",\"parent\":", l ? "," : "", l, loop->header);
        put_index(fp, loop->parent);
        fprintf(fp, ",\"depth\":%" PRIu32 ",\"irreducible\":", loop->depth);
        put_bool(fp, loop->irreducible);
        fputs(",\"blocks\":", fp);
        put_index_list(fp, loop->blocks, loop->nblocks);
        fputs(",\"entry_edges\":", fp);
        put_index_list(fp, loop->entry_edges, loop->nentry_edges);
        fputs(",\"exit_edges\":", fp);
        put_index_list(fp, loop->exit_edges, loop->nexit_edges);
        fputs(",\"back_edges\":", fp);
        put_index_list(fp, loop->back_edges, loop->nback_edges);
        fputs(",\"estimable\":", fp);
        put_bool(fp, loop->estimable);
        fputs(",\"tot\":", fp);
        put_number(fp, loop->tot);
        fputs(",\"tdes\":", fp);
        put_number(fp, loop->tdes);
        putc('}', fp);
    }
    putc(']', fp);
}

static void put_procedure(FILE *fp, const mt_program *prog, uint32_t i, const mt_json_options *opt)
{
    const mt_procedure *p = &prog->procs[i];
    fprintf(fp, "{\"index\":%" PRIu32 ",\"name\":", i);
    put_string(fp, p->name);
    fputs(",\"entry\":", fp);
    put_addr(fp, p->entry);
    fprintf(fp, ",\"size\":%" PRIu64 ",\"sources\":", p->size);
    put_sources(fp, p->sources);
    fputs(",\"parent\":", fp);
    put_index(fp, p->parent);
    fputs(",\"plt\":", fp);
    put_bool(fp, p->is_plt);
    fputs(",\"resolved\":", fp);
    put_bool(fp, p->resolved);
    fputs(",\"unresolved_reason\":", fp);
    if (p->unresolved_reason)
        put_string(fp, p->unresolved_reason);
    else
        fputs("null", fp);
    fputs(",\"noreturn\":", fp);
    put_bool(fp, p->noreturn);
    fputs(",\"address_taken\":", fp);
    put_bool(fp, p->address_taken);
    fputs(",\"recursive\":", fp);
    put_bool(fp, p->recursive);
    fprintf(fp, ",\"scc\":%" PRIu32 ",\"estimable\":", p->scc);
    put_bool(fp, p->estimable);
    fputs(",\"tot\":", fp);
    put_number(fp, p->tot);
    fputs(",\"tdes\":", fp);
    put_number(fp, p->tdes);
    fprintf(fp, ",\"instructions\":%" PRIu64 ",\"mem_reads\":%" PRIu64 ",\"mem_writes\":%" PRIu64
                ",\"nblocks\":%" PRIu32 ",\"nloops\":%" PRIu32,
            p->ninsns, p->mem_reads, p->mem_writes, p->nblocks, p->nloops);
    if (opt->blocks)
        put_blocks(fp, p);
    if (opt->loops)
        put_loops(fp, p);
    putc('}', fp);
}

static const char *kind_name(uint8_t kind)
{
    return kind == MT_ELF_EXEC ? "exec" : kind == MT_ELF_PIE ? "pie" : "shared";
}

void mt_write_analysis_json(FILE *fp, const mt_program *prog, const mt_json_options *opt)
{
    fprintf(fp, "{\"schema\":\"mtool.analysis\",\"version\":%d,\"program\":{\"path\":",
            MT_ANALYSIS_SCHEMA_VERSION);
    put_string(fp, prog->path);
    fprintf(fp, ",\"kind\":\"%s\",\"static\":", kind_name(prog->kind));
    put_bool(fp, prog->static_linked);
    fputs(",\"stripped\":", fp);
    put_bool(fp, prog->stripped);
    fputs(",\"dwarf_lines\":", fp);
    put_bool(fp, prog->has_dwarf_lines);
    fputs(",\"entry\":", fp);
    put_addr(fp, prog->entry);
    fputs(",\"build_id\":", fp);
    put_string(fp, prog->build_id);
    fprintf(fp, ",\"instructions\":%" PRIu64 ",\"procedures\":%" PRIu32 "},\"procedures\":[", prog->ninsns,
            prog->nprocs);
    bool first = true;
    for (uint32_t i = 0; i < prog->nprocs; i++) {
        if (opt->only_function && strcmp(prog->procs[i].name, opt->only_function) != 0)
            continue;
        if (!first)
            putc(',', fp);
        first = false;
        put_procedure(fp, prog, i, opt);
    }
    putc(']', fp);
    if (opt->callgraph) {
        fputs(",\"callgraph\":{\"edges\":[", fp);
        for (uint32_t e = 0; e < prog->ncg_edges; e++) {
            const mt_cg_edge *edge = &prog->cg_edges[e];
            fprintf(fp, "%s{\"caller\":%" PRIu32 ",\"callee\":%" PRIu32 ",\"sites\":%" PRIu32 ",\"kind\":\"%s\"}",
                    e ? "," : "", edge->caller, edge->callee, edge->nsites, mt_call_kind_name(edge->kind));
        }
        fprintf(fp, "],\"sccs\":%" PRIu32 "}", prog->nsccs);
    }
    fputs(",\"files\":[", fp);
    for (uint32_t f = 0; f < prog->nfiles; f++) {
        if (f)
            putc(',', fp);
        put_string(fp, prog->files[f]);
    }
    fputs("],\"warnings\":[", fp);
    for (uint32_t w = 0; w < prog->nwarnings; w++) {
        if (w)
            putc(',', fp);
        put_string(fp, prog->warnings[w]);
    }
    fputs("]}\n", fp);
}
