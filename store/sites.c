/* store/sites.c — the sites of one build, from the analyzer's program: every
 * procedure and loop with what identifies it across rebuilds (name, loop
 * nesting path, source line, structure fingerprint) and its address. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* FNV-1a over the structure counts: equal for code that only moved. */
static uint64_t mix(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        h ^= (v >> (8 * i)) & 0xff;
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t procedure_shape(const mt_procedure *p)
{
    uint64_t h = 0xcbf29ce484222325ull;
    h = mix(h, p->nblocks);
    h = mix(h, p->nedges);
    h = mix(h, p->ninsns);
    h = mix(h, p->mem_reads);
    h = mix(h, p->mem_writes);
    return mix(h, p->nloops);
}

static uint64_t loop_shape(const mt_procedure *p, const mt_loop *lp)
{
    uint64_t insns = 0, reads = 0, writes = 0;
    for (uint32_t k = 0; k < lp->nblocks; k++) {
        const mt_block *b = &p->blocks[lp->blocks[k]];
        insns += b->ninsns;
        reads += b->mem_reads;
        writes += b->mem_writes;
    }
    uint64_t h = 0xcbf29ce484222325ull;
    h = mix(h, lp->nblocks);
    h = mix(h, insns);
    h = mix(h, reads);
    h = mix(h, writes);
    h = mix(h, lp->depth);
    h = mix(h, lp->nback_edges);
    return mix(h, lp->nexit_edges);
}

static char *file_of(const mt_program *prog, const mt_block *b)
{
    return b->file && b->file < prog->nfiles ? mt_xstrdup(prog->files[b->file]) : NULL;
}

/* Ordinal of each loop among the loops sharing its parent, by header
 * address (blocks are sorted by address, so header index order is address
 * order); then paths "2.1", built parents first. */
static char **loop_paths(const mt_procedure *p)
{
    uint32_t *ordinal = mt_xcalloc(p->nloops + 1, sizeof *ordinal);
    for (uint32_t l = 0; l < p->nloops; l++) {
        ordinal[l] = 1;
        for (uint32_t m = 0; m < p->nloops; m++)
            if (p->loops[m].parent == p->loops[l].parent && p->loops[m].header < p->loops[l].header)
                ordinal[l]++;
    }
    char **paths = mt_xcalloc(p->nloops + 1, sizeof *paths);
    for (uint32_t l = 0; l < p->nloops; l++) {
        uint32_t parent = p->loops[l].parent;
        paths[l] = parent == MT_NONE ? mt_xasprintf("%u", ordinal[l])
                                     : mt_xasprintf("%s.%u", paths[parent], ordinal[l]);
    }
    free(ordinal);
    return paths;
}

/* A site's procedure name: LIBRARY:PROCEDURE in a shared library's build. */
static char *site_procedure(const mt_store_build *b, const mt_procedure *p)
{
    return b->library ? mt_xasprintf("%s:%s", b->library, p->name) : mt_xstrdup(p->name);
}

void mt_store_build_from_program(const mt_program *prog, const char *abs_path,
                                 const uint8_t sha256[32], mt_store_build *out)
{
    mt_store_build_from_library(prog, NULL, abs_path, sha256, out);
}

void mt_store_build_from_library(const mt_program *prog, const char *library,
                                 const char *abs_path, const uint8_t sha256[32],
                                 mt_store_build *out)
{
    memset(out, 0, sizeof *out);
    out->path = mt_xstrdup(abs_path);
    out->library = library ? mt_xstrdup(library) : NULL;
    snprintf(out->build_id, sizeof out->build_id, "%s", prog->build_id);
    mt_sha256_hex(sha256, out->sha256);
    out->proc_site = mt_xcalloc(prog->nprocs + 1, sizeof *out->proc_site);
    size_t cap = 0;
    for (uint32_t pi = 0; pi < prog->nprocs; pi++) {
        const mt_procedure *p = &prog->procs[pi];
        out->proc_site[pi] = MT_NONE;
        if (p->is_plt || p->nblocks == 0)
            continue;
        out->proc_site[pi] = (uint32_t)out->nsites;
        bool named = (p->sources & (MT_SRC_SYMTAB | MT_SRC_DYNSYM)) != 0;
        mt_store_site site = {.procedure = site_procedure(out, p), .named = named,
                              .file = file_of(prog, &p->blocks[0]), .line = p->blocks[0].line,
                              .proc_line = p->blocks[0].line, .address = p->entry,
                              .shape = procedure_shape(p)};
        MT_PUSH(out->sites, out->nsites, cap, site);
        char **paths = loop_paths(p);
        for (uint32_t l = 0; l < p->nloops; l++) {
            const mt_loop *lp = &p->loops[l];
            const mt_block *h = &p->blocks[lp->header];
            mt_store_site ls = {.is_loop = true, .procedure = site_procedure(out, p),
                                .named = named,
                                .loop_path = paths[l], .depth = lp->depth, .file = file_of(prog, h),
                                .line = h->line, .proc_line = p->blocks[0].line,
                                .address = h->start, .shape = loop_shape(p, lp)};
            MT_PUSH(out->sites, out->nsites, cap, ls);
        }
        free(paths);
    }
}

static uint64_t region_shape(const mt_procedure *p, const bool *in)
{
    uint64_t nblocks = 0, insns = 0, reads = 0, writes = 0;
    for (uint32_t b = 0; b < p->nblocks; b++)
        if (in[b]) {
            nblocks++;
            insns += p->blocks[b].ninsns;
            reads += p->blocks[b].mem_reads;
            writes += p->blocks[b].mem_writes;
        }
    uint64_t h = 0xcbf29ce484222325ull;
    h = mix(h, 0x726567696f6eull); /* "region": never a loop's */
    h = mix(h, nblocks);
    h = mix(h, insns);
    h = mix(h, reads);
    return mix(h, writes);
}

uint32_t mt_store_build_add_region(mt_store_build *b, const mt_program *prog, uint32_t proc,
                                   uint32_t first, uint32_t end, uint32_t k)
{
    uint32_t at = b->proc_site[proc];
    if (at == MT_NONE)
        return MT_NONE;
    const mt_procedure *p = &prog->procs[proc];
    char *path = mt_xasprintf("r%u", k);
    uint64_t address = p->blocks[first].start;
    for (at++; at < b->nsites && (b->sites[at].is_loop || b->sites[at].is_region); at++)
        if (b->sites[at].is_region && b->sites[at].address == address &&
            strcmp(b->sites[at].loop_path, path) == 0) {
            free(path);
            return at;
        }
    bool *in = mt_xcalloc(p->nblocks + 1, sizeof *in);
    mt_region_blocks(p, first, end, in);
    const mt_store_site *ps = &b->sites[b->proc_site[proc]];
    mt_store_site site = {.is_region = true, .procedure = site_procedure(b, p), .named = ps->named,
                          .loop_path = path, .file = file_of(prog, &p->blocks[first]),
                          .line = p->blocks[first].line, .proc_line = ps->proc_line,
                          .address = address, .shape = region_shape(p, in)};
    free(in);
    size_t cap = b->nsites; /* full: MT_PUSH grows it */
    MT_PUSH(b->sites, b->nsites, cap, site);
    memmove(&b->sites[at + 1], &b->sites[at], (b->nsites - 1 - at) * sizeof *b->sites);
    b->sites[at] = site;
    for (uint32_t q = 0; q < prog->nprocs; q++)
        if (b->proc_site[q] != MT_NONE && b->proc_site[q] >= at)
            b->proc_site[q]++;
    return at;
}

uint32_t mt_store_site_of(const mt_store_build *b, uint32_t proc, uint32_t loop)
{
    uint32_t first = b->proc_site[proc];
    return first == MT_NONE || loop == MT_NONE ? first : first + 1 + loop;
}

void mt_store_build_free(mt_store_build *b)
{
    mt_store_sites_free(b->sites, b->nsites);
    free(b->proc_site);
    free(b->path);
    free(b->library);
    memset(b, 0, sizeof *b);
}
