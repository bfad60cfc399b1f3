/* analyzer/program.c — the mt_program every stage builds and every module
 * reads: warnings, lookups by name and address, the names of its kinds,
 * and freeing it.  Kept apart from the stage driver (analyze.c) so that the
 * stages depend on this file and the driver on them, not in a circle. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void mt_warn(mt_program *prog, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *line = mt_xvasprintf(fmt, ap);
    va_end(ap);
    prog->warnings = mt_xrealloc(prog->warnings, (prog->nwarnings + 1) * sizeof *prog->warnings);
    prog->warnings[prog->nwarnings++] = line;
}

void mt_procedure_free_cfg(mt_procedure *proc)
{
    mt_free_loops(proc);
    free(proc->blocks);
    free(proc->edges);
    free(proc->calls);
    free(proc->tables);
    free(proc->foreign_entries);
    proc->foreign_entries = NULL;
    proc->nforeign_entries = 0;
    proc->tables = NULL;
    proc->ntables = 0;
    proc->blocks = NULL;
    proc->edges = NULL;
    proc->calls = NULL;
    proc->nblocks = proc->nedges = proc->ncalls = 0;
}

void mt_program_free(mt_program *prog)
{
    if (!prog)
        return;
    for (uint32_t i = 0; i < prog->nprocs; i++) {
        mt_procedure *p = &prog->procs[i];
        mt_procedure_free_cfg(p);
        free(p->name);
        free(p->unresolved_reason);
        free(p->import);
        free(p->code_as_data);
    }
    free(prog->procs);
    free(prog->cg_edges);
    for (uint32_t j = 0; j < prog->ncross_callees; j++)
        free(prog->cross_callees[j].object);
    free(prog->cross_callees);
    for (uint32_t i = 0; i < prog->nfiles; i++)
        free(prog->files[i]);
    free(prog->files);
    for (uint32_t i = 0; i < prog->nwarnings; i++)
        free(prog->warnings[i]);
    free(prog->warnings);
    free(prog->path);
    free(prog);
}

uint32_t mt_find_procedure(const mt_program *prog, const char *name)
{
    for (uint32_t i = 0; i < prog->nprocs; i++)
        if (strcmp(prog->procs[i].name, name) == 0)
            return i;
    return MT_NONE;
}

uint32_t mt_procedure_at_or_before(const mt_program *prog, uint64_t addr)
{
    size_t after = mt_upper_bound_u64(prog->procs, prog->nprocs, sizeof *prog->procs,
                                      offsetof(mt_procedure, entry), addr);
    return after == 0 ? MT_NONE : (uint32_t)after - 1;
}

uint32_t mt_procedure_with_entry(const mt_program *prog, uint64_t addr)
{
    uint32_t p = mt_procedure_at_or_before(prog, addr);
    return p != MT_NONE && prog->procs[p].entry == addr ? p : MT_NONE;
}

uint32_t mt_procedure_at(const mt_program *prog, uint64_t addr)
{
    uint32_t i = mt_procedure_at_or_before(prog, addr);
    if (i == MT_NONE)
        return MT_NONE;
    const mt_procedure *p = &prog->procs[i];
    /* Inside its bounds, or in one of its blocks (a procedure of unknown
     * size is known only by the code we decoded). */
    if (addr == p->entry || addr < p->entry + p->size || mt_block_at(p, addr) != MT_NONE)
        return i;
    return MT_NONE;
}

uint32_t mt_block_at(const mt_procedure *proc, uint64_t addr)
{
    size_t after = mt_upper_bound_u64(proc->blocks, proc->nblocks, sizeof *proc->blocks,
                                      offsetof(mt_block, start), addr);
    return after > 0 && addr < proc->blocks[after - 1].end ? (uint32_t)after - 1 : MT_NONE;
}

const char *mt_edge_kind_name(mt_edge_kind kind)
{
    static const char *const names[] = {
        [MT_EDGE_FALLTHROUGH] = "fallthrough", [MT_EDGE_JUMP] = "jump",
        [MT_EDGE_COND_TAKEN] = "cond_taken",   [MT_EDGE_COND_FALLTHROUGH] = "cond_fallthrough",
        [MT_EDGE_CALL_RETURN] = "call_return", [MT_EDGE_INDIRECT] = "indirect",
        [MT_EDGE_RETURN] = "return",           [MT_EDGE_TAIL_CALL] = "tail_call",
        [MT_EDGE_EXCEPTION] = "exception",
    };
    return (unsigned)kind < MT_ARRAY_LEN(names) ? names[kind] : "?";
}

const char *mt_term_kind_name(mt_term_kind kind)
{
    static const char *const names[] = {
        [MT_TERM_FALLTHROUGH] = "fallthrough", [MT_TERM_JUMP] = "jump",
        [MT_TERM_COND] = "cond",               [MT_TERM_CALL] = "call",
        [MT_TERM_ICALL] = "indirect_call",     [MT_TERM_NORETURN_CALL] = "noreturn_call",
        [MT_TERM_RET] = "return",              [MT_TERM_TABLE_JUMP] = "table_jump",
        [MT_TERM_INDIRECT_JUMP] = "indirect_jump", [MT_TERM_TAIL_CALL] = "tail_call",
        [MT_TERM_STOP] = "stop",
    };
    return (unsigned)kind < MT_ARRAY_LEN(names) ? names[kind] : "?";
}

const char *mt_call_kind_name(mt_call_kind kind)
{
    static const char *const names[] = {
        [MT_CALL_DIRECT] = "direct", [MT_CALL_PLT] = "plt",
        [MT_CALL_TAIL] = "tail",     [MT_CALL_INDIRECT] = "indirect",
    };
    return (unsigned)kind < MT_ARRAY_LEN(names) ? names[kind] : "?";
}

uint32_t mt_code_object_loops(const mt_program *prog, uint32_t proc)
{
    uint32_t id = 1 + prog->nprocs;
    for (uint32_t p = 0; p < proc; p++)
        id += prog->procs[p].nloops;
    return id;
}

uint32_t mt_code_object_of_block(const mt_program *prog, uint32_t p, uint32_t b, uint32_t loops)
{
    const mt_procedure *proc = &prog->procs[p];
    uint32_t l = proc->blocks[b].loop;
    while (l != MT_NONE && proc->loops[l].irreducible)
        l = proc->loops[l].parent;
    return l == MT_NONE ? 1 + p : loops + l;
}

bool mt_code_object_split(const mt_program *prog, uint32_t id, uint32_t *proc, uint32_t *loop)
{
    if (id == 0)
        return false;
    if (id <= prog->nprocs) {
        *proc = id - 1;
        *loop = MT_NONE;
        return true;
    }
    uint32_t k = id - 1 - prog->nprocs;
    for (uint32_t p = 0; p < prog->nprocs; p++) {
        if (k < prog->procs[p].nloops) {
            *proc = p;
            *loop = k;
            return true;
        }
        k -= prog->procs[p].nloops;
    }
    return false;
}
