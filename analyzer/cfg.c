/* analyzer/cfg.c — per procedure: recursive-traversal disassembly, blocks,
 * typed edges, call sites, jump tables (jumptable.c) and the program-wide
 * noreturn fixpoint.
 *
 * One procedure is built at a time from its entry, within its bounds
 * [entry, entry+size) (size unknown: up to the next procedure's entry and the
 * end of the executable segment).  The working state is a compact record per
 * instruction (cfg_internal.h), freed when the procedure is done; capstone
 * structures are never kept.  Traversal runs in rounds: decode everything
 * reachable, then try to recover the jump tables of the new indirect jumps by
 * backward slices over what was found so far, and decode from their targets,
 * until no new instruction appears.
 *
 * Blocks follow callgrind/gcov semantics: calls end blocks (a call_return
 * edge leads to the block after the call).
 *
 * noreturn: procedures named like known noreturn functions (exit, abort,
 * __stack_chk_fail ...) are noreturn from the start; then every CFG is built,
 * procedures with no way out (no ret, no tail call or jump to a returning
 * procedure, no unresolved indirect jump) are marked noreturn, the
 * procedures calling them are rebuilt (their blocks after those calls
 * disappear), and so on until nothing changes.
 *
 * Procedures are built by up to CFG_THREADS threads, each with its own
 * capstone handle.  A build only reads shared state (bounds, entries,
 * noreturn flags) and writes its own procedure; warnings and address-taken
 * marks are collected per procedure and applied in procedure order, so the
 * output does not depend on the thread schedule. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../common/progress.h"
#include "cfg_internal.h"

#define CFG_THREADS 2
#define CFG_MAX_WARNINGS 20 /* jumps out of their procedure, listed */

/* ---- shared, read-only while procedures are built -------------------- */

typedef struct {
    uint64_t *addrs;
    size_t n, cap;
} foreign_entries;

typedef struct {
    const mt_elf_file *img;
    mt_program *prog;
    uint64_t *hi;          /* end of each procedure's bounds */
    uint64_t nwarnings;    /* build warnings seen (only the first few are kept) */
    /* Per procedure: addresses other procedures jump to besides its entry
     * (glibc's __mempcpy jumps into __memmove; foo jumps into foo.cold).
     * They are decoded and start blocks like the entry does. */
    foreign_entries *foreign;
    /* Exception call sites (sorted by start) and their distinct landing
     * pads (sorted): pads are reached by no branch, only by the unwinder,
     * so they are extra entries of the procedure holding them. */
    mt_eh_call_site *sites;
    size_t nsites;
    uint64_t *pads;
    size_t npads;
    mt_data_ref *data_refs; /* addresses inside code stored in data */
    size_t ndata_refs;
    uint32_t *next_part;    /* cfg_builder.next_part */
    /* Addresses inside a procedure, not its entry, that another one's code
     * materializes (glibc's sigaction takes __restore_rt, one byte into
     * the procedure its FDE starts, as the signal return): entries like
     * the ones jumps make (add_foreign_entries). */
    uint64_t *inner_refs;
    size_t ninner_refs, cap_inner_refs;
} cfg_program;

/* What one build produces besides the procedure's own fields. */
typedef struct {
    char **warnings;
    size_t nwarnings, cap_warnings;
    uint32_t *refs; /* procedures whose entry the code materializes */
    size_t nrefs, cap_refs;
    uint64_t *inner_refs; /* cfg_program.inner_refs this build found */
    size_t ninner_refs, cap_inner_refs;
} cfg_side;

static void side_free(cfg_side *s)
{
    for (size_t i = 0; i < s->nwarnings; i++)
        free(s->warnings[i]);
    free(s->warnings);
    free(s->refs);
    free(s->inner_refs);
    memset(s, 0, sizeof *s);
}

/* Index of the first landing pad >= addr. */
static size_t first_pad_from(const cfg_program *cp, uint64_t addr)
{
    return mt_lower_bound_u64(cp->pads, cp->npads, sizeof *cp->pads, 0, addr);
}

/* The exception call site covering the call at `addr`, or NULL.  Call-site
 * ranges of one LSDA do not overlap, and FDEs do not either. */
static const mt_eh_call_site *call_site_of(const cfg_program *cp, uint64_t addr)
{
    size_t lo = mt_upper_bound_u64(cp->sites, cp->nsites, sizeof *cp->sites,
                                   offsetof(mt_eh_call_site, start), addr);
    return lo > 0 && addr < cp->sites[lo - 1].end ? &cp->sites[lo - 1] : NULL;
}

/* Procedure whose bounds contain `addr`, or MT_NONE. */
static uint32_t proc_containing(const cfg_program *cp, uint64_t addr)
{
    uint32_t p = mt_procedure_at_or_before(cp->prog, addr);
    return p != MT_NONE && (addr < cp->hi[p] || addr == cp->prog->procs[p].entry) ? p : MT_NONE;
}

/* foo and foo.cold (or two parts of the same foo) are one function split in
 * two places: jumps between them are not calls. */
static bool split_parts_of_one_function(const mt_program *prog, uint32_t a, uint32_t b)
{
    uint32_t pa = prog->procs[a].parent, pb = prog->procs[b].parent;
    return pa == b || pb == a || (pa != MT_NONE && pa == pb);
}

/* End of the file-backed part of the executable segment holding `addr`, or 0. */
static uint64_t exec_segment_end(const mt_elf_file *img, uint64_t addr)
{
    const Elf64_Phdr *ph = mt_elf_file_load_at(img, addr, PF_X);
    return ph && addr - ph->p_vaddr < ph->p_filesz ? ph->p_vaddr + ph->p_filesz : 0;
}

static void compute_bounds(cfg_program *cp)
{
    const mt_program *prog = cp->prog;
    cp->hi = mt_xcalloc(prog->nprocs ? prog->nprocs : 1, sizeof *cp->hi);
    for (uint32_t i = 0; i < prog->nprocs; i++) {
        const mt_procedure *p = &prog->procs[i];
        uint64_t seg_end = exec_segment_end(cp->img, p->entry);
        uint64_t hi = seg_end;
        if (p->size && p->entry + p->size > p->entry) {
            hi = p->entry + p->size;
        } else {
            for (uint32_t j = i + 1; j < prog->nprocs; j++)
                if (prog->procs[j].entry > p->entry) {
                    hi = prog->procs[j].entry;
                    break;
                }
        }
        cp->hi[i] = seg_end == 0 ? p->entry : (hi < seg_end ? hi : seg_end);
    }
}

/* ---- known noreturn functions ---------------------------------------- */

static const char *const noreturn_names[] = {
    "exit", "_exit", "_Exit", "quick_exit", "exit_group", "abort", "__assert_fail",
    "__assert_perror_fail", "__assert", "__stack_chk_fail", "__stack_chk_fail_local",
    "__fortify_fail", "__chk_fail", "__libc_fatal", "err", "errx", "verr", "verrx",
    "longjmp", "_longjmp", "siglongjmp", "__longjmp_chk", "pthread_exit", "__pthread_exit",
    "thrd_exit", "__cxa_throw", "__cxa_rethrow", "__cxa_bad_cast", "__cxa_bad_typeid",
    "__cxa_throw_bad_array_new_length", "__cxa_call_unexpected", "__cxa_pure_virtual",
    "__cxa_deleted_virtual", "_Unwind_Resume", "_ZSt9terminatev",
    "_ZSt17__throw_bad_allocv", "_ZSt20__throw_length_errorPKc",
    "_ZSt19__throw_logic_errorPKc", "_ZSt20__throw_out_of_rangePKc",
    "_ZSt24__throw_out_of_range_fmtPKcz", "_ZSt21__throw_bad_array_new_lengthv",
    "_ZSt16__throw_bad_castv", "_ZSt25__throw_bad_function_callv",
    "_ZSt20__throw_system_errori", "_ZSt21__throw_runtime_errorPKc",
    "_ZSt24__throw_invalid_argumentPKc", "_ZSt19__throw_range_errorPKc",
    "__gfortran_stop_string", "__gfortran_stop_numeric", "__gfortran_error_stop_string",
    "__gfortran_error_stop_numeric", "__gfortran_runtime_error", "__gfortran_runtime_error_at",
    "__gfortran_os_error", "__gfortran_os_error_at", "_gfortran_stop_string",
    "_gfortran_stop_numeric", "_gfortran_error_stop_string", "_gfortran_error_stop_numeric",
    "_gfortran_runtime_error", "_gfortran_runtime_error_at", "_gfortran_os_error",
    "_gfortran_os_error_at", "__ubsan_handle_builtin_unreachable",
    "__ubsan_handle_missing_return",
};

/* "exit@plt", "exit@GLIBC_2.2.5" and "exit" all name exit. */
static bool has_noreturn_name(const char *name)
{
    size_t len = strcspn(name, "@");
    for (size_t i = 0; i < MT_ARRAY_LEN(noreturn_names); i++)
        if (strlen(noreturn_names[i]) == len && memcmp(noreturn_names[i], name, len) == 0)
            return true;
    return false;
}

/* ---- the per-procedure builder --------------------------------------- */

static void builder_warn(cfg_side *side, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void builder_warn(cfg_side *side, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *line = mt_xvasprintf(fmt, ap);
    va_end(ap);
    MT_PUSH(side->warnings, side->nwarnings, side->cap_warnings, line);
}

static void set_unresolved(cfg_builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_unresolved(cfg_builder *b, const char *fmt, ...)
{
    if (b->unresolved)
        return; /* the first reason is the one reported */
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&b->unresolved, fmt, ap) < 0)
        b->unresolved = NULL;
    va_end(ap);
    if (!b->unresolved)
        b->unresolved = mt_xstrdup("unresolved");
}

static bool insn_falls_through(const cfg_insn *in)
{
    switch (in->flow) {
    case MT_FLOW_NONE:
    case MT_FLOW_COND:
    case MT_FLOW_ICALL:
        return true;
    case MT_FLOW_CALL:
        return !(in->flags & CFG_NORETURN_CALL);
    default:
        return false;
    }
}

size_t cfg_insn_at(const cfg_builder *b, uint64_t addr)
{
    size_t lo = mt_lower_bound_u64(b->insns, b->ninsns, sizeof *b->insns, offsetof(cfg_insn, addr),
                                   addr);
    return lo < b->ninsns && b->insns[lo].addr == addr ? lo : SIZE_MAX;
}

size_t cfg_predecessors(const cfg_builder *b, size_t i, uint32_t *out, size_t max)
{
    size_t n = 0;
    uint64_t addr = b->insns[i].addr;
    if (i > 0) {
        const cfg_insn *prev = &b->insns[i - 1];
        if (prev->addr + prev->len == addr && insn_falls_through(prev))
            out[n++] = (uint32_t)(i - 1);
    }
    size_t lo = mt_lower_bound_u64(b->preds, b->npreds, sizeof *b->preds,
                                   offsetof(__typeof__(*b->preds), target), addr);
    for (; lo < b->npreds && b->preds[lo].target == addr; lo++) {
        if (n == max)
            return SIZE_MAX;
        out[n++] = b->preds[lo].src;
    }
    return n;
}

const cs_insn *cfg_redecode(const cfg_builder *b, size_t i)
{
    const cfg_insn *in = &b->insns[i];
    return mt_decode(b->dec, b->code + (in->addr - b->lo), b->hi - in->addr, in->addr);
}

bool cfg_table_target_allowed(const cfg_builder *b, uint64_t addr)
{
    if (addr >= b->lo && addr < b->hi)
        return true;
    const cfg_program *cp = b->program_bounds;
    uint32_t q = proc_containing(cp, addr);
    return q != MT_NONE && q != b->self && split_parts_of_one_function(cp->prog, b->self, q);
}

typedef struct {
    uint64_t *items;
    size_t n, cap;
} addr_stack;

static bool in_bounds(const cfg_builder *b, uint64_t addr)
{
    return addr >= b->lo && addr < b->hi;
}

static void push_work(cfg_builder *b, addr_stack *work, uint64_t addr)
{
    if (in_bounds(b, addr))
        MT_PUSH(work->items, work->n, work->cap, addr);
}

static bool callee_is_noreturn(const cfg_program *cp, uint64_t target)
{
    uint32_t q = mt_procedure_with_entry(cp->prog, target);
    return q != MT_NONE && cp->prog->procs[q].noreturn;
}

/* A code address procedure `self` materializes: a procedure's entry (now
 * callable indirectly), or, by a rip-relative `lea` (an immediate inside
 * another procedure's bounds is more often a constant, O_CLOEXEC's
 * 0x80000), an address inside another procedure. */
static void note_reference(const cfg_program *cp, cfg_side *side, uint32_t self, uint64_t ref,
                           bool rip_relative)
{
    const mt_program *prog = cp->prog;
    if (!prog->nprocs || ref < prog->procs[0].entry)
        return;
    uint32_t q = ref <= prog->procs[prog->nprocs - 1].entry ? mt_procedure_with_entry(prog, ref)
                                                             : MT_NONE;
    if (q != MT_NONE) {
        if (!prog->procs[q].address_taken)
            MT_PUSH(side->refs, side->nrefs, side->cap_refs, q);
        return;
    }
    q = rip_relative ? proc_containing(cp, ref) : MT_NONE;
    if (q != MT_NONE && q != self && !split_parts_of_one_function(prog, q, self))
        MT_PUSH(side->inner_refs, side->ninner_refs, side->cap_inner_refs, ref);
}

/* Decodes one path from `addr` until it ends or meets decoded code. */
static void decode_path(cfg_builder *b, const cfg_program *cp, cfg_side *side, uint8_t *seen,
                        addr_stack *work, uint64_t addr)
{
    while (in_bounds(b, addr)) {
        uint64_t off = addr - b->lo;
        if (seen[off >> 3] & (1u << (off & 7)))
            return;
        seen[off >> 3] |= (uint8_t)(1u << (off & 7));
        const cs_insn *insn = mt_decode(b->dec, b->code + off, b->hi - addr, addr);
        if (!insn) {
            set_unresolved(b, "invalid instruction at 0x%llx", (unsigned long long)addr);
            return;
        }
        mt_insn_facts f;
        mt_insn_facts_of(insn, &f);
        if (f.ref)
            note_reference(cp, side, b->self, f.ref, insn->id == X86_INS_LEA);
        if (f.ref > b->lo && f.ref < b->hi)
            b->inner_address = true;
        cfg_insn rec = {addr, f.target, (uint8_t)insn->size, f.flow, f.reads, f.writes, 0,
                        mt_insn_rsp_change(insn)};
        if (f.flow == MT_FLOW_CALL && callee_is_noreturn(cp, f.target))
            rec.flags |= CFG_NORETURN_CALL;
        if (f.flow == MT_FLOW_JUMP_FAR)
            set_unresolved(b, "indirect jump at 0x%llx: far jump", (unsigned long long)addr);
        MT_PUSH(b->insns, b->ninsns, b->cap_insns, rec);
        if (f.flow == MT_FLOW_COND || f.flow == MT_FLOW_JUMP)
            push_work(b, work, f.target);
        if (!insn_falls_through(&rec))
            return;
        addr += rec.len;
    }
}

static int compare_insns(const void *a, const void *b)
{
    uint64_t x = ((const cfg_insn *)a)->addr, y = ((const cfg_insn *)b)->addr;
    return x < y ? -1 : x > y;
}

static int compare_preds(const void *a, const void *b)
{
    const cfg_pred *x = a, *y = b;
    if (x->target != y->target)
        return x->target < y->target ? -1 : 1;
    return x->src < y->src ? -1 : x->src > y->src;
}

static void add_pred(cfg_builder *b, uint64_t target, size_t src)
{
    cfg_pred p = {target, (uint32_t)src};
    MT_PUSH(b->preds, b->npreds, b->cap_preds, p);
}

/* Transfers other than "fall into the adjacent next instruction". */
static void build_predecessor_index(cfg_builder *b)
{
    b->npreds = 0;
    for (size_t i = 0; i < b->ninsns; i++) {
        const cfg_insn *in = &b->insns[i];
        if ((in->flow == MT_FLOW_COND || in->flow == MT_FLOW_JUMP) && in_bounds(b, in->target))
            add_pred(b, in->target, i);
        uint64_t next = in->addr + in->len;
        if (insn_falls_through(in) && !(i + 1 < b->ninsns && b->insns[i + 1].addr == next))
            add_pred(b, next, i); /* overlapping instructions */
    }
    for (size_t t = 0; t < b->ntables; t++) {
        size_t src = cfg_insn_at(b, b->tables[t].jump);
        for (uint32_t k = 0; src != SIZE_MAX && k < b->tables[t].ntargets; k++)
            add_pred(b, b->tables[t].targets[k], src);
    }
    if (b->npreds > 1)
        qsort(b->preds, b->npreds, sizeof *b->preds, compare_preds);
}

/* Resolves the jump table of the indirect jump at insns[i] into *t; when
 * there is none, records why (judged once the procedure is complete: it may
 * be a tail call) and returns false. */
static bool resolve_table_at(cfg_builder *b, size_t i, cfg_table *t)
{
    char why[160] = "";
    bool maybe_inside = true;
    *t = (cfg_table){.jump = b->insns[i].addr};
    if (cfg_resolve_jump_table(b, i, &t->targets, &t->ntargets, &t->layout, &maybe_inside, why,
                               sizeof why))
        return true;
    cfg_failed_jump f = {b->insns[i].addr, maybe_inside,
                         mt_xstrdup(why[0] ? why : "no jump table found")};
    MT_PUSH(b->failed, b->nfailed, b->cap_failed, f);
    return false;
}

/* Tries the jump tables of indirect jumps not tried yet; queues their targets. */
static void resolve_new_indirect_jumps(cfg_builder *b, addr_stack *work)
{
    for (size_t i = 0; i < b->ninsns; i++) {
        cfg_insn *in = &b->insns[i];
        if (in->flow != MT_FLOW_JUMP_REG || (in->flags & CFG_TABLE_TRIED))
            continue;
        in->flags |= CFG_TABLE_TRIED;
        cfg_table t;
        if (!resolve_table_at(b, i, &t))
            continue;
        b->insns[i].flags |= CFG_TABLE_OK;
        for (uint32_t k = 0; k < t.ntargets; k++)
            push_work(b, work, t.targets[k]);
        MT_PUSH(b->tables, b->ntables, b->cap_tables, t);
    }
}

/* A table resolved in an early round was bounded over the paths known then;
 * paths found later (through other tables' targets) may reach its jump
 * unchecked or under another bound.  Once no round finds more code, every
 * table is resolved again over the whole CFG: a larger bound queues the new
 * targets (true: another round), a failure leaves the jump unresolved. */
static bool recheck_tables(cfg_builder *b, addr_stack *work)
{
    bool grown = false;
    for (size_t t = 0; t < b->ntables;) {
        cfg_table *tab = &b->tables[t], now;
        size_t i = cfg_insn_at(b, tab->jump);
        if (!resolve_table_at(b, i, &now)) {
            b->insns[i].flags = (uint8_t)(b->insns[i].flags & ~CFG_TABLE_OK);
            free(tab->targets);
            memmove(tab, tab + 1, (b->ntables - t - 1) * sizeof *tab);
            b->ntables--;
            continue;
        }
        if (now.layout.nentries != tab->layout.nentries) {
            for (uint32_t k = 0; k < now.ntargets; k++)
                push_work(b, work, now.targets[k]);
            free(tab->targets);
            *tab = now;
            grown = true;
        } else {
            free(now.targets);
        }
        t++;
    }
    return grown;
}

static void traverse(cfg_builder *b, const cfg_program *cp, cfg_side *side)
{
    uint8_t *seen = mt_xcalloc((size_t)((b->hi - b->lo) >> 3) + 1, 1);
    addr_stack work = {0};
    push_work(b, &work, b->lo);
    if (cp->foreign)
        for (size_t k = 0; k < cp->foreign[b->self].n; k++)
            MT_PUSH(b->extra_entries, b->nextra, b->cap_extra, cp->foreign[b->self].addrs[k]);
    for (size_t k = first_pad_from(cp, b->lo); k < cp->npads && cp->pads[k] < b->hi; k++)
        MT_PUSH(b->extra_entries, b->nextra, b->cap_extra, cp->pads[k]);
    for (size_t k = 0; k < b->nextra; k++)
        push_work(b, &work, b->extra_entries[k]);
    do {
        while (work.n > 0) {
            while (work.n > 0)
                decode_path(b, cp, side, seen, &work, work.items[--work.n]);
            if (b->ninsns > 1)
                qsort(b->insns, b->ninsns, sizeof *b->insns, compare_insns);
            build_predecessor_index(b);
            resolve_new_indirect_jumps(b, &work);
        }
    } while (recheck_tables(b, &work));
    free(work.items);
    free(seen);
}

/* ---- blocks and edges ------------------------------------------------ */

static void mark_leader(cfg_builder *b, uint64_t addr)
{
    size_t i = cfg_insn_at(b, addr);
    if (i != SIZE_MAX)
        b->insns[i].flags |= CFG_LEADER;
}

static bool ends_block(const cfg_insn *in)
{
    return in->flow != MT_FLOW_NONE;
}

static void mark_leaders(cfg_builder *b, const cfg_program *cp)
{
    if (b->ninsns)
        b->insns[0].flags |= CFG_LEADER;
    if (cp->foreign)
        for (size_t k = 0; k < cp->foreign[b->self].n; k++)
            mark_leader(b, cp->foreign[b->self].addrs[k]);
    for (size_t k = first_pad_from(cp, b->lo); k < cp->npads && cp->pads[k] < b->hi; k++)
        mark_leader(b, cp->pads[k]);
    for (size_t i = 0; i < b->ninsns; i++) {
        const cfg_insn *in = &b->insns[i];
        uint64_t next = in->addr + in->len;
        if ((in->flow == MT_FLOW_COND || in->flow == MT_FLOW_JUMP) && in_bounds(b, in->target))
            mark_leader(b, in->target);
        bool adjacent = i + 1 < b->ninsns && b->insns[i + 1].addr == next;
        if (ends_block(in) && adjacent)
            b->insns[i + 1].flags |= CFG_LEADER;
        else if (!adjacent)
            mark_leader(b, next);
    }
    for (size_t t = 0; t < b->ntables; t++)
        for (uint32_t k = 0; k < b->tables[t].ntargets; k++)
            mark_leader(b, b->tables[t].targets[k]);
}

typedef struct {
    mt_block *blocks;
    size_t nblocks, cap_blocks;
    uint32_t *last; /* index of each block's last instruction */
    size_t cap_last;
    mt_edge *edges;
    size_t nedges, cap_edges;
    mt_call_site *calls;
    size_t ncalls, cap_calls;
} cfg_out;

static void form_blocks(const cfg_builder *b, cfg_out *o)
{
    bool closed = true; /* the previous block ended: the next instruction starts one */
    for (size_t i = 0; i < b->ninsns; i++) {
        const cfg_insn *in = &b->insns[i];
        if (closed || (in->flags & CFG_LEADER) || o->blocks[o->nblocks - 1].end != in->addr) {
            mt_block blk = {.start = in->addr, .end = in->addr, .idom = MT_NONE, .loop = MT_NONE};
            MT_PUSH(o->blocks, o->nblocks, o->cap_blocks, blk);
        }
        mt_block *blk = &o->blocks[o->nblocks - 1];
        blk->ninsns++;
        blk->mem_reads += in->reads;
        blk->mem_writes += in->writes;
        int32_t rsp = blk->rsp_delta + in->rsp;
        blk->rsp_delta = in->rsp == MT_RSP_LOST || blk->rsp_delta == MT_RSP_UNKNOWN ||
                                 rsp <= MT_RSP_UNKNOWN || rsp > INT16_MAX
                             ? MT_RSP_UNKNOWN : (int16_t)rsp;
        blk->end = in->addr + in->len;
        closed = i + 1 == b->ninsns || (b->insns[i + 1].flags & CFG_LEADER) ||
                 b->insns[i + 1].addr != blk->end || ends_block(in);
        if (i + 1 < b->ninsns && b->insns[i + 1].addr < blk->end)
            blk->end = b->insns[i + 1].addr; /* overlapping instructions: keep blocks disjoint */
        if (closed) {
            if (o->cap_last < o->cap_blocks)
                o->last = mt_xgrow(o->last, &o->cap_last, o->cap_blocks, sizeof *o->last);
            o->last[o->nblocks - 1] = (uint32_t)i;
        }
    }
}

static uint32_t block_starting_at(const cfg_out *o, uint64_t addr)
{
    size_t lo = mt_lower_bound_u64(o->blocks, o->nblocks, sizeof *o->blocks,
                                   offsetof(mt_block, start), addr);
    return lo < o->nblocks && o->blocks[lo].start == addr ? (uint32_t)lo : MT_NONE;
}

static void add_edge(cfg_out *o, uint32_t src, uint32_t dst, uint64_t target, mt_edge_kind kind)
{
    mt_edge e = {src, dst, target, (uint8_t)kind};
    MT_PUSH(o->edges, o->nedges, o->cap_edges, e);
}

static void add_call(cfg_out *o, uint64_t addr, uint64_t target, uint32_t block, uint32_t callee,
                     mt_call_kind kind)
{
    mt_call_site c = {.addr = addr, .target = target, .block = block, .callee = callee,
                      .loop = MT_NONE, .kind = (uint8_t)kind, .share = 1.0};
    MT_PUSH(o->calls, o->ncalls, o->cap_calls, c);
}

typedef struct {
    const cfg_builder *b;
    const cfg_program *cp;
    cfg_side *side;
    cfg_out *o;
} edge_ctx;

/* An edge to `addr` inside the procedure (or leaving it by falling off). */
static void add_flow_edge(edge_ctx *x, uint32_t src, uint64_t addr, mt_edge_kind kind)
{
    uint32_t dst = in_bounds(x->b, addr) ? block_starting_at(x->o, addr) : MT_NONE;
    add_edge(x->o, src, dst, addr, kind);
}

/* A direct jmp or jcc.  Returns the block's terminator kind. */
static mt_term_kind add_branch_edge(edge_ctx *x, uint32_t src, const cfg_insn *in, mt_edge_kind kind)
{
    mt_term_kind term = kind == MT_EDGE_JUMP ? MT_TERM_JUMP : MT_TERM_COND;
    uint64_t t = in->target;
    if (in_bounds(x->b, t)) {
        add_flow_edge(x, src, t, kind);
        return term;
    }
    const mt_program *prog = x->cp->prog;
    uint32_t q = proc_containing(x->cp, t);
    if (q != MT_NONE && split_parts_of_one_function(prog, x->b->self, q)) {
        add_edge(x->o, src, MT_NONE, t, kind); /* into foo.cold or back: not a call */
        return term;
    }
    if (q != MT_NONE && prog->procs[q].entry == t) {
        /* A conditional tail call keeps its cond_taken edge and term cond. */
        add_edge(x->o, src, MT_NONE, t, kind == MT_EDGE_JUMP ? MT_EDGE_TAIL_CALL : kind);
        add_call(x->o, in->addr, t, src, q, MT_CALL_TAIL);
        return kind == MT_EDGE_JUMP ? MT_TERM_TAIL_CALL : term;
    }
    add_edge(x->o, src, MT_NONE, t, kind);
    builder_warn(x->side, "%s: jump at 0x%llx to 0x%llx, %s", prog->procs[x->b->self].name,
                     (unsigned long long)in->addr, (unsigned long long)t,
                     q == MT_NONE ? "outside every procedure"
                                  : "into the middle of another procedure");
    return term;
}

static const cfg_table *table_of(const cfg_builder *b, uint64_t jump)
{
    for (size_t t = 0; t < b->ntables; t++)
        if (b->tables[t].jump == jump)
            return &b->tables[t];
    return NULL;
}

static void add_direct_call(edge_ctx *x, uint32_t src, const cfg_insn *in)
{
    const mt_program *prog = x->cp->prog;
    uint32_t q = mt_procedure_with_entry(prog, in->target);
    mt_call_kind kind = q != MT_NONE && prog->procs[q].is_plt ? MT_CALL_PLT : MT_CALL_DIRECT;
    add_call(x->o, in->addr, in->target, src, q, kind);
}

/* A call that may throw into a landing pad of this function (possibly in its
 * .cold part, then the edge leaves the procedure like a jump into it does). */
static void add_exception_edge(edge_ctx *x, uint32_t src, const cfg_insn *in)
{
    const mt_eh_call_site *site = call_site_of(x->cp, in->addr);
    if (site)
        add_flow_edge(x, src, site->landing_pad, MT_EDGE_EXCEPTION);
}

/* A jmp to a procedure known only at run time. */
static mt_term_kind indirect_tail_call(cfg_out *o, uint32_t bi, const cfg_insn *in)
{
    add_edge(o, bi, MT_NONE, 0, MT_EDGE_TAIL_CALL);
    add_call(o, in->addr, 0, bi, MT_NONE, MT_CALL_INDIRECT);
    return MT_TERM_TAIL_CALL;
}

/* Edges of a jmp through a register or memory that is not a tail call. */
static mt_term_kind table_jump_edges(edge_ctx *x, uint32_t bi, const cfg_insn *in)
{
    const cfg_table *t = (in->flags & CFG_TABLE_OK) ? table_of(x->b, in->addr) : NULL;
    for (uint32_t k = 0; t && k < t->ntargets; k++)
        add_flow_edge(x, bi, t->targets[k], MT_EDGE_INDIRECT);
    return t ? MT_TERM_TABLE_JUMP : MT_TERM_INDIRECT_JUMP;
}

/* Successor edges, terminator and call site of block `bi`. */
static void finish_block(edge_ctx *x, uint32_t bi)
{
    cfg_out *o = x->o;
    const cfg_insn *in = &x->b->insns[o->last[bi]];
    mt_block *blk = &o->blocks[bi];
    uint64_t next = in->addr + in->len;
    blk->first_succ = (uint32_t)o->nedges;
    mt_term_kind term = MT_TERM_FALLTHROUGH;
    switch (in->flow) {
    case MT_FLOW_NONE:
        add_flow_edge(x, bi, next, MT_EDGE_FALLTHROUGH);
        break;
    case MT_FLOW_COND:
        term = add_branch_edge(x, bi, in, MT_EDGE_COND_TAKEN);
        add_flow_edge(x, bi, next, MT_EDGE_COND_FALLTHROUGH);
        break;
    case MT_FLOW_JUMP:
        term = add_branch_edge(x, bi, in, MT_EDGE_JUMP);
        break;
    case MT_FLOW_CALL:
        add_direct_call(x, bi, in);
        if (in->flags & CFG_NORETURN_CALL) {
            term = MT_TERM_NORETURN_CALL;
        } else {
            term = MT_TERM_CALL;
            add_flow_edge(x, bi, next, MT_EDGE_CALL_RETURN);
        }
        add_exception_edge(x, bi, in);
        break;
    case MT_FLOW_ICALL:
        term = MT_TERM_ICALL;
        add_call(o, in->addr, 0, bi, MT_NONE, MT_CALL_INDIRECT);
        add_flow_edge(x, bi, next, MT_EDGE_CALL_RETURN);
        add_exception_edge(x, bi, in);
        break;
    case MT_FLOW_RET:
        term = MT_TERM_RET;
        add_edge(o, bi, MT_NONE, 0, MT_EDGE_RETURN);
        break;
    case MT_FLOW_STOP:
        term = MT_TERM_STOP;
        break;
    case MT_FLOW_JUMP_REG:
        term = (in->flags & CFG_TAIL_JUMP) ? indirect_tail_call(o, bi, in) : table_jump_edges(x, bi, in);
        break;
    case MT_FLOW_JUMP_SLOT:
        term = indirect_tail_call(o, bi, in);
        break;
    case MT_FLOW_JUMP_FAR:
        term = MT_TERM_INDIRECT_JUMP;
        break;
    }
    blk->term = (uint8_t)term;
    blk->nsucc = (uint32_t)o->nedges - blk->first_succ;
}

static void *shrink(void *p, size_t n, size_t size)
{
    if (n == 0) {
        free(p);
        return NULL;
    }
    return mt_xrealloc(p, n * size);
}

static int by_jump(const void *a, const void *b)
{
    uint64_t x = ((const mt_jump_table *)a)->jump, y = ((const mt_jump_table *)b)->jump;
    return x < y ? -1 : x > y;
}

/* The layouts of the tables whose jumps ended up in blocks, by jump address. */
static void copy_tables(const cfg_builder *b, mt_procedure *proc)
{
    proc->ntables = 0;
    proc->tables = b->ntables ? mt_xmalloc(b->ntables * sizeof *proc->tables) : NULL;
    for (size_t t = 0; t < b->ntables; t++)
        proc->tables[proc->ntables++] = b->tables[t].layout;
    if (proc->ntables > 1)
        qsort(proc->tables, proc->ntables, sizeof *proc->tables, by_jump);
}

/* Moves the builder's result into the procedure. */
static void emit_cfg(cfg_builder *b, const cfg_program *cp, cfg_side *side, mt_procedure *proc)
{
    cfg_out o = {0};
    mark_leaders(b, cp);
    form_blocks(b, &o);
    edge_ctx x = {b, cp, side, &o};
    for (uint32_t bi = 0; bi < o.nblocks; bi++)
        finish_block(&x, bi);
    free(o.last);
    proc->blocks = shrink(o.blocks, o.nblocks, sizeof *o.blocks);
    proc->nblocks = (uint32_t)o.nblocks;
    proc->edges = shrink(o.edges, o.nedges, sizeof *o.edges);
    proc->nedges = (uint32_t)o.nedges;
    proc->calls = shrink(o.calls, o.ncalls, sizeof *o.calls);
    proc->ncalls = (uint32_t)o.ncalls;
    copy_tables(b, proc);
    proc->ninsns = proc->mem_reads = proc->mem_writes = 0;
    for (uint32_t i = 0; i < proc->nblocks; i++) {
        proc->ninsns += proc->blocks[i].ninsns;
        proc->mem_reads += proc->blocks[i].mem_reads;
        proc->mem_writes += proc->blocks[i].mem_writes;
    }
}

static void builder_free(cfg_builder *b)
{
    free(b->insns);
    free(b->preds);
    for (size_t t = 0; t < b->ntables; t++)
        free(b->tables[t].targets);
    free(b->tables);
    for (size_t k = 0; k < b->nfailed; k++)
        free(b->failed[k].why);
    free(b->failed);
    free(b->extra_entries);
    free(b->unresolved);
}

/* Builds procedure `i`'s CFG (replacing any previous one). */
static void build_procedure(const cfg_program *cp, mt_decoder *dec, uint32_t i, cfg_side *side)
{
    mt_procedure *proc = &cp->prog->procs[i];
    mt_procedure_free_cfg(proc);
    free(proc->unresolved_reason);
    proc->unresolved_reason = NULL;
    proc->entry_only = proc->branch_entries_only = false;
    proc->ninsns = proc->mem_reads = proc->mem_writes = 0;

    cfg_builder b = {.img = cp->img, .prog = cp->prog, .program_bounds = cp, .dec = dec, .self = i,
                     .lo = proc->entry, .hi = cp->hi[i], .data_refs = cp->data_refs,
                     .ndata_refs = cp->ndata_refs, .next_part = cp->next_part};
    if (b.hi > b.lo)
        b.code = mt_elf_file_bytes(cp->img, b.lo, b.hi - b.lo);
    if (!b.code) {
        proc->resolved = false;
        proc->unresolved_reason = mt_xasprintf("entry 0x%llx is not in an executable segment",
                                               (unsigned long long)proc->entry);
        return;
    }
    traverse(&b, cp, side);
    cfg_find_tail_jumps(&b);
    for (size_t k = 0; k < b.nfailed; k++) {
        size_t j = cfg_insn_at(&b, b.failed[k].addr);
        if (j == SIZE_MAX || !(b.insns[j].flags & CFG_TAIL_JUMP))
            set_unresolved(&b, "indirect jump at 0x%llx: %s", (unsigned long long)b.failed[k].addr,
                           b.failed[k].why);
    }
    emit_cfg(&b, cp, side, proc);
    if (!b.unresolved && proc->nblocks == 0)
        set_unresolved(&b, "no instruction decoded at 0x%llx", (unsigned long long)b.lo);
    proc->resolved = b.unresolved == NULL;
    proc->unresolved_reason = b.unresolved;
    size_t nforeign = cp->foreign ? cp->foreign[i].n : 0;
    proc->branch_entries_only = b.nextra == nforeign && !b.inner_address &&
                                !cfg_data_names_inner_address(&b);
    proc->entry_only = proc->branch_entries_only && nforeign == 0;
    if (nforeign) {
        proc->foreign_entries = mt_xmalloc(nforeign * sizeof *proc->foreign_entries);
        memcpy(proc->foreign_entries, cp->foreign[i].addrs, nforeign * sizeof *proc->foreign_entries);
        proc->nforeign_entries = (uint32_t)nforeign;
        qsort(proc->foreign_entries, nforeign, sizeof *proc->foreign_entries, mt_compare_u64);
    }
    b.unresolved = NULL;
    builder_free(&b);
}

/* ---- building many procedures, possibly in parallel ------------------- */

typedef struct {
    const cfg_program *cp;
    cfg_program *cp_mut;  /* for the warning counter, used after the threads joined */
    const uint32_t *todo; /* procedure indices */
    size_t ntodo;
    cfg_side *sides;      /* one per todo entry */
    atomic_size_t next;
    bool decoder_failed;
} build_job;

static void run_builds(build_job *job, mt_decoder *dec)
{
    for (;;) {
        size_t k = atomic_fetch_add(&job->next, 1);
        if (k >= job->ntodo)
            break;
        build_procedure(job->cp, dec, job->todo[k], &job->sides[k]);
        mt_progress_add(1);
    }
}

static void *build_thread(void *arg)
{
    build_job *job = arg;
    mt_decoder dec;
    if (!mt_decoder_open(&dec)) {
        job->decoder_failed = true;
        return NULL;
    }
    run_builds(job, &dec);
    mt_decoder_close(&dec);
    return NULL;
}

/* Applies the side results in procedure order (deterministic output). */
static void apply_sides(mt_program *prog, build_job *job)
{
    for (size_t k = 0; k < job->ntodo; k++) {
        cfg_side *s = &job->sides[k];
        for (size_t w = 0; w < s->nwarnings; w++)
            if (job->cp_mut->nwarnings++ < CFG_MAX_WARNINGS)
                mt_warn(prog, "%s", s->warnings[w]);
        for (size_t r = 0; r < s->nrefs; r++)
            prog->procs[s->refs[r]].address_taken = true;
        for (size_t r = 0; r < s->ninner_refs; r++)
            MT_PUSH(job->cp_mut->inner_refs, job->cp_mut->ninner_refs, job->cp_mut->cap_inner_refs,
                    s->inner_refs[r]);
        side_free(s);
    }
}

/* `stage`: what the progress line says of this round. */
static void build_procedures(cfg_program *cp, mt_decoder *dec, const uint32_t *todo, size_t ntodo,
                             const char *stage)
{
    if (ntodo == 0)
        return;
    build_job job = {.cp = cp, .cp_mut = cp, .todo = todo, .ntodo = ntodo};
    mt_progress_stage(stage, ntodo);
    job.sides = mt_xcalloc(ntodo, sizeof *job.sides);
    atomic_init(&job.next, 0);
    pthread_t th;
    bool threaded = CFG_THREADS > 1 && ntodo >= 64 &&
                    pthread_create(&th, NULL, build_thread, &job) == 0;
    run_builds(&job, dec);
    if (threaded)
        pthread_join(th, NULL);
    if (job.decoder_failed)
        run_builds(&job, dec); /* nothing left in practice: the main thread took it all */
    apply_sides(cp->prog, &job);
    free(job.sides);
}

/* ---- noreturn fixpoint ----------------------------------------------- */

/* Whether some path leaves procedure `i` back to its caller. */
static bool may_return(const cfg_program *cp, uint32_t i)
{
    const mt_program *prog = cp->prog;
    const mt_procedure *p = &prog->procs[i];
    if (p->nblocks == 0)
        return true; /* nothing known: assume it returns */
    for (uint32_t bi = 0; bi < p->nblocks; bi++)
        if (p->blocks[bi].term == MT_TERM_INDIRECT_JUMP)
            return true;
    for (uint32_t e = 0; e < p->nedges; e++) {
        const mt_edge *ed = &p->edges[e];
        if (ed->dst != MT_NONE)
            continue;
        if (ed->kind == MT_EDGE_RETURN || ed->target == 0)
            return true;
        uint32_t q = proc_containing(cp, ed->target);
        if (q == MT_NONE || q == i || !prog->procs[q].noreturn)
            return true; /* unknown places and returning procedures return */
    }
    return false;
}

static bool calls_any_of(const mt_procedure *p, const bool *marked)
{
    for (uint32_t c = 0; c < p->ncalls; c++)
        if (p->calls[c].kind != MT_CALL_TAIL && p->calls[c].kind != MT_CALL_INDIRECT &&
            p->calls[c].callee != MT_NONE && marked[p->calls[c].callee])
            return true;
    return false;
}

/* Marks procedures (among `set`) that cannot return; rebuilds their callers;
 * repeats until nothing changes.  Every round only adds noreturn marks, so
 * it ends after at most nprocs rounds. */
static void noreturn_fixpoint(cfg_program *cp, mt_decoder *dec, const uint32_t *set,
                              size_t nset)
{
    mt_program *prog = cp->prog;
    bool *newly = mt_xcalloc(prog->nprocs, sizeof *newly);
    uint32_t *rebuild = mt_xmalloc(nset * sizeof *rebuild + 1);
    for (;;) {
        bool changed = false;
        for (size_t k = 0; k < nset; k++) {
            mt_procedure *p = &prog->procs[set[k]];
            if (!p->noreturn && !p->is_plt && !may_return(cp, set[k])) {
                p->noreturn = newly[set[k]] = changed = true;
            }
        }
        if (!changed)
            break;
        size_t nrebuild = 0;
        for (size_t k = 0; k < nset; k++)
            if (calls_any_of(&prog->procs[set[k]], newly))
                rebuild[nrebuild++] = set[k];
        memset(newly, 0, prog->nprocs * sizeof *newly);
        build_procedures(cp, dec, rebuild, nrebuild,
                         "analyzing: control-flow graphs again (calls that never return)");
    }
    free(rebuild);
    free(newly);
}

/* ---- entry point ------------------------------------------------------ */

static void summarize(const cfg_program *cp, const uint32_t *set, size_t nset)
{
    mt_program *prog = cp->prog;
    if (cp->nwarnings > CFG_MAX_WARNINGS)
        mt_warn(prog, "... and %llu more jumps leaving their procedure",
                (unsigned long long)(cp->nwarnings - CFG_MAX_WARNINGS));
    prog->ninsns = 0;
    uint32_t unresolved = 0;
    for (size_t k = 0; k < nset; k++) {
        const mt_procedure *p = &prog->procs[set[k]];
        prog->ninsns += p->ninsns;
        unresolved += !p->resolved;
    }
    if (unresolved)
        mt_warn(prog, "%u of %zu procedures have unresolved control flow (see unresolved_reason)",
                unresolved, nset);
}

/* A jump from one procedure into the middle of another gives the target an
 * extra entry: rebuild the targets until no new entry appears (a few rounds
 * at most; each round can only add entries).  A target that already starts
 * a block is an entry too (the target's entry_only must say so). */
static bool is_new_foreign_entry(const cfg_program *cp, uint32_t q, uint64_t target)
{
    const mt_procedure *proc = &cp->prog->procs[q];
    if (target == proc->entry)
        return false;
    for (size_t k = 0; k < cp->foreign[q].n; k++)
        if (cp->foreign[q].addrs[k] == target)
            return false;
    return true;
}

/* Procedures to build again, each once per round. */
typedef struct {
    uint32_t *todo;
    size_t n, cap;
    bool *queued;
} rebuild_list;

/* `target`, inside procedure q (MT_NONE: none), an entry of q from elsewhere. */
static void add_foreign_entry(cfg_program *cp, uint32_t q, uint64_t target, rebuild_list *r)
{
    if (q == MT_NONE || !is_new_foreign_entry(cp, q, target))
        return;
    foreign_entries *fe = &cp->foreign[q];
    MT_PUSH(fe->addrs, fe->n, fe->cap, target);
    if (!r->queued[q]) {
        r->queued[q] = true;
        MT_PUSH(r->todo, r->n, r->cap, q);
    }
}

static void add_foreign_entries(cfg_program *cp, mt_decoder *dec)
{
    mt_program *prog = cp->prog;
    cp->foreign = mt_xcalloc((size_t)prog->nprocs + 1, sizeof *cp->foreign);
    bool *queued = mt_xcalloc((size_t)prog->nprocs + 1, sizeof *queued);
    for (int round = 0; round < 4; round++) {
        rebuild_list r = {.queued = queued};
        for (uint32_t p = 0; p < prog->nprocs; p++) {
            const mt_procedure *proc = &prog->procs[p];
            for (uint32_t e = 0; e < proc->nedges; e++) {
                const mt_edge *edge = &proc->edges[e];
                if (edge->dst != MT_NONE || !edge->target || edge->kind == MT_EDGE_RETURN)
                    continue;
                uint32_t q = proc_containing(cp, edge->target);
                add_foreign_entry(cp, q == p ? MT_NONE : q, edge->target, &r);
            }
        }
        for (size_t k = 0; k < cp->ninner_refs; k++)
            add_foreign_entry(cp, proc_containing(cp, cp->inner_refs[k]), cp->inner_refs[k], &r);
        uint32_t *todo = r.todo;
        size_t ntodo = r.n;
        for (size_t k = 0; k < ntodo; k++)
            queued[todo[k]] = false;
        if (ntodo)
            build_procedures(cp, dec, todo, ntodo,
                             "analyzing: control-flow graphs again (jumps into other procedures)");
        free(todo);
        if (!ntodo)
            break;
    }
    free(queued);
}

static void free_foreign_entries(cfg_program *cp)
{
    for (uint32_t i = 0; cp->foreign && i < cp->prog->nprocs; i++)
        free(cp->foreign[i].addrs);
    free(cp->foreign);
    cp->foreign = NULL;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void read_landing_pads(cfg_program *cp)
{
    cp->nsites = mt_read_eh_call_sites(cp->img, cp->prog, &cp->sites);
    cp->pads = mt_xmalloc((cp->nsites + 1) * sizeof *cp->pads);
    for (size_t i = 0; i < cp->nsites; i++)
        cp->pads[i] = cp->sites[i].landing_pad;
    if (cp->nsites > 1)
        qsort(cp->pads, cp->nsites, sizeof *cp->pads, compare_u64);
    cp->npads = 0;
    for (size_t i = 0; i < cp->nsites; i++)
        if (cp->npads == 0 || cp->pads[cp->npads - 1] != cp->pads[i])
            cp->pads[cp->npads++] = cp->pads[i];
}

/* Chains the parts of each split function from its main part. */
static void link_function_parts(cfg_program *cp)
{
    const mt_program *prog = cp->prog;
    cp->next_part = mt_xmalloc(((size_t)prog->nprocs + 1) * sizeof *cp->next_part);
    for (uint32_t q = 0; q < prog->nprocs; q++)
        cp->next_part[q] = MT_NONE;
    for (uint32_t q = 0; q < prog->nprocs; q++) {
        uint32_t root = prog->procs[q].parent;
        if (root != MT_NONE && root < prog->nprocs) {
            cp->next_part[q] = cp->next_part[root];
            cp->next_part[root] = q;
        }
    }
}

void mt_build_cfgs(const mt_elf_file *img, mt_program *prog)
{
    cfg_program cp = {.img = img, .prog = prog};
    compute_bounds(&cp);
    read_landing_pads(&cp);
    cp.ndata_refs = mt_data_refs_into_code(img, prog, &cp.data_refs);
    link_function_parts(&cp);
    for (uint32_t i = 0; i < prog->nprocs; i++) {
        mt_procedure *p = &prog->procs[i];
        p->noreturn = has_noreturn_name(p->name);
        p->resolved = true;
    }
    mt_decoder dec;
    if (!mt_decoder_open(&dec)) {
        mt_warn(prog, "capstone cannot be initialized: no control-flow graphs");
        for (uint32_t i = 0; i < prog->nprocs; i++)
            prog->procs[i].resolved = false;
        free(cp.hi);
        free(cp.sites);
        free(cp.pads);
        free(cp.data_refs);
        free(cp.next_part);
        return;
    }
    uint32_t *all = mt_xmalloc((prog->nprocs + 1) * sizeof *all);
    for (uint32_t i = 0; i < prog->nprocs; i++)
        all[i] = i;
    build_procedures(&cp, &dec, all, prog->nprocs, "analyzing: control-flow graphs of procedures");
    noreturn_fixpoint(&cp, &dec, all, prog->nprocs);
    add_foreign_entries(&cp, &dec);
    summarize(&cp, all, prog->nprocs);
    free_foreign_entries(&cp);
    free(all);
    mt_decoder_close(&dec);
    free(cp.hi);
    free(cp.sites);
    free(cp.pads);
    free(cp.data_refs);
    free(cp.next_part);
    free(cp.inner_refs);
}
