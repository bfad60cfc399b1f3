/* tests/unit/cfg_builder.h — builds synthetic procedures for unit tests of
 * the loop and estimability stages, without an ELF file.  Block i spans
 * [0x1000 + 16*i, 0x1000 + 16*i + 16). */
#ifndef MTOOL_CFG_BUILDER_H
#define MTOOL_CFG_BUILDER_H

#include <stdlib.h>
#include <string.h>

#include "analyzer/internal.h"

typedef struct {
    uint32_t src, dst;
} test_edge;

/* A procedure with `nblocks` blocks and the given edges (dst MT_NONE = a
 * return).  Edges are sorted by source so they group per block. */
static inline void build_procedure(mt_procedure *proc, const char *name, uint32_t nblocks,
                                   const test_edge *edges, uint32_t nedges)
{
    memset(proc, 0, sizeof *proc);
    proc->name = mt_xstrdup(name);
    proc->entry = 0x1000;
    proc->parent = MT_NONE;
    proc->resolved = true;
    proc->blocks = mt_xcalloc(nblocks, sizeof *proc->blocks);
    proc->nblocks = nblocks;
    proc->edges = mt_xcalloc(nedges ? nedges : 1, sizeof *proc->edges);
    proc->nedges = nedges;
    uint32_t k = 0;
    for (uint32_t b = 0; b < nblocks; b++) {
        mt_block *blk = &proc->blocks[b];
        blk->start = 0x1000 + 16u * b;
        blk->end = blk->start + 16;
        blk->ninsns = 4;
        blk->first_succ = k;
        blk->idom = blk->loop = MT_NONE;
        for (uint32_t e = 0; e < nedges; e++) {
            if (edges[e].src != b)
                continue;
            mt_edge *out = &proc->edges[k++];
            out->src = b;
            out->dst = edges[e].dst;
            out->kind = edges[e].dst == MT_NONE ? MT_EDGE_RETURN : MT_EDGE_JUMP;
        }
        blk->nsucc = k - blk->first_succ;
    }
}

/* Adds a direct call site in block `block` of `proc` to procedure `callee`. */
static inline void add_call(mt_procedure *proc, uint32_t block, uint32_t callee, mt_call_kind kind)
{
    proc->calls = mt_xrealloc(proc->calls, (proc->ncalls + 1) * sizeof *proc->calls);
    mt_call_site *c = &proc->calls[proc->ncalls++];
    memset(c, 0, sizeof *c);
    c->addr = proc->blocks[block].start + 8;
    c->block = block;
    c->callee = callee;
    c->share = 1.0;
    c->kind = (uint8_t)kind;
    c->loop = MT_NONE;
}

static inline void analyze_procedure(mt_procedure *proc)
{
    mt_compute_dominators(proc);
    mt_find_loops(proc);
}

/* A program of up to TEST_MAXP hand-built procedures. */
#define TEST_MAXP 64
typedef struct {
    mt_program prog;
    mt_procedure procs[TEST_MAXP];
} test_program;

static inline void free_program(test_program *t)
{
    for (uint32_t i = 0; i < t->prog.nprocs; i++) {
        mt_procedure_free_cfg(&t->procs[i]);
        free(t->procs[i].name);
    }
    free(t->prog.cg_edges);
    for (uint32_t j = 0; j < t->prog.ncross_callees; j++)
        free(t->prog.cross_callees[j].object);
    free(t->prog.cross_callees);
    for (uint32_t i = 0; i < t->prog.nwarnings; i++)
        free(t->prog.warnings[i]);
    free(t->prog.warnings);
    memset(t, 0, sizeof *t);
}

/* Whether got[0..ngot) is exactly want[0..nwant). */
static inline bool list_is(const uint32_t *got, uint32_t ngot, const uint32_t *want, uint32_t nwant)
{
    if (ngot != nwant)
        return false;
    for (uint32_t i = 0; i < nwant; i++)
        if (got[i] != want[i])
            return false;
    return true;
}

#endif
