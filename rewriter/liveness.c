/* rewriter/liveness.c — which status flags and general registers are live
 * at each block of a procedure, so that inserted code knows what it may
 * clobber: a counter probe must save the flags only where they are live; a
 * loop's counter may live in a register that nothing reads there.
 *
 * The answers must be safe, not tight.  Rules where the code alone does not
 * tell (the ABI and GCC's -fipa-ra decide):
 *  - a call to an import or through a pointer reads the argument registers
 *    (and, as every call, its operand's) and clobbers every caller-saved
 *    register (the ABI);
 *  - a call to a procedure of this file reads the argument registers and
 *    clobbers nothing: with -fipa-ra GCC keeps values in caller-saved
 *    registers across calls to local procedures that do not write them;
 *  - a return reads the return, callee-saved and stack registers, and every
 *    caller-saved register the procedure cannot be assumed to clobber (the
 *    caller may rely on it under -fipa-ra): those it never writes, unless
 *    it calls an import or a pointer, which clobbers them all anyway, or
 *    unless no direct caller keeps them live across its calls (which
 *    rw_live_across_calls finds by solving the callers' liveness);
 *  - a call that may be a TLS descriptor's (`call *(%rax)`) clobbers %rax
 *    alone, and is no call outside (a descriptor keeps the rest);
 *  - a tail call, an edge to an unknown target, syscall and int read all. */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define GPR(i) RW_LIVE_GPR(i)
enum { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11, R12, R13, R14, R15 };
#define GPRS_ALL RW_LIVE_GPRS
#define GPRS_ARGS (GPR(RDI) | GPR(RSI) | GPR(RDX) | GPR(RCX) | GPR(R8) | GPR(R9) | GPR(RAX) | GPR(RSP))
#define GPRS_CALLER_SAVED                                                                       \
    (GPR(RAX) | GPR(RCX) | GPR(RDX) | GPR(RSI) | GPR(RDI) | GPR(R8) | GPR(R9) | GPR(R10) |   \
     GPR(R11))
#define GPRS_RETURN (GPR(RAX) | GPR(RDX))

/* General register of a capstone register and whether writing it defines
 * the whole 64 bits (32- and 64-bit writes do; 8- and 16-bit ones merge).
 * A table by register id (a search over the names cost 1.7% of rewriting
 * gdb): 1 + register, plus WHOLE, 0 for what is no general register. */
#define WHOLE 0x40
#define GPR_NAMES(i, r64, r32, r16, r8)                                                       \
    [r64] = (i) + 1 + WHOLE, [r32] = (i) + 1 + WHOLE, [r16] = (i) + 1, [r8] = (i) + 1
static const uint8_t gpr_table[X86_REG_ENDING] = {
    GPR_NAMES(0, X86_REG_RAX, X86_REG_EAX, X86_REG_AX, X86_REG_AL), [X86_REG_AH] = 1,
    GPR_NAMES(1, X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL), [X86_REG_CH] = 2,
    GPR_NAMES(2, X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL), [X86_REG_DH] = 3,
    GPR_NAMES(3, X86_REG_RBX, X86_REG_EBX, X86_REG_BX, X86_REG_BL), [X86_REG_BH] = 4,
    GPR_NAMES(4, X86_REG_RSP, X86_REG_ESP, X86_REG_SP, X86_REG_SPL),
    GPR_NAMES(5, X86_REG_RBP, X86_REG_EBP, X86_REG_BP, X86_REG_BPL),
    GPR_NAMES(6, X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL),
    GPR_NAMES(7, X86_REG_RDI, X86_REG_EDI, X86_REG_DI, X86_REG_DIL),
    GPR_NAMES(8, X86_REG_R8, X86_REG_R8D, X86_REG_R8W, X86_REG_R8B),
    GPR_NAMES(9, X86_REG_R9, X86_REG_R9D, X86_REG_R9W, X86_REG_R9B),
    GPR_NAMES(10, X86_REG_R10, X86_REG_R10D, X86_REG_R10W, X86_REG_R10B),
    GPR_NAMES(11, X86_REG_R11, X86_REG_R11D, X86_REG_R11W, X86_REG_R11B),
    GPR_NAMES(12, X86_REG_R12, X86_REG_R12D, X86_REG_R12W, X86_REG_R12B),
    GPR_NAMES(13, X86_REG_R13, X86_REG_R13D, X86_REG_R13W, X86_REG_R13B),
    GPR_NAMES(14, X86_REG_R14, X86_REG_R14D, X86_REG_R14W, X86_REG_R14B),
    GPR_NAMES(15, X86_REG_R15, X86_REG_R15D, X86_REG_R15W, X86_REG_R15B),
};

int rw_gpr_of(unsigned reg, bool *whole)
{
    unsigned v = reg < X86_REG_ENDING ? gpr_table[reg] : 0;
    *whole = (v & WHOLE) != 0;
    return (int)(v & ~WHOLE) - 1;
}

#define ALL_FLAGS (RW_LIVE_FLAGS | RW_LIVE_CF)

static unsigned flag_bits(uint64_t eflags, uint64_t of, uint64_t sf, uint64_t zf, uint64_t af,
                          uint64_t pf, uint64_t cf)
{
    return ((eflags & of) ? 1u : 0) | ((eflags & sf) ? 2u : 0) | ((eflags & zf) ? 4u : 0) |
           ((eflags & af) ? 8u : 0) | ((eflags & pf) ? 16u : 0) | ((eflags & cf) ? RW_LIVE_CF : 0);
}

/* Instructions whose very purpose is to read flags: trusted even when the
 * decoder's flag table is silent about them.  Capstone 4 is for the carry
 * chains: adc, sbb, rcl, rcr, cmc, adcx and adox list their flags as
 * written only (a tracing record's `add` before an adc broke liblzma's
 * range coder). */
static bool reads_flags_by_name(const char *m)
{
    return (m[0] == 'j' && strcmp(m, "jmp") != 0 && strncmp(m, "jrcxz", 5) != 0 &&
            strncmp(m, "jecxz", 5) != 0) ||
           strncmp(m, "set", 3) == 0 || strncmp(m, "cmov", 4) == 0 ||
           strncmp(m, "fcmov", 5) == 0 || strncmp(m, "pushf", 5) == 0 ||
           strcmp(m, "lahf") == 0 || strncmp(m, "loope", 5) == 0 || strncmp(m, "loopne", 6) == 0 ||
           strncmp(m, "adc", 3) == 0 || strcmp(m, "adox") == 0 || strcmp(m, "sbb") == 0 ||
           strcmp(m, "rcl") == 0 || strcmp(m, "rcr") == 0 || strcmp(m, "cmc") == 0;
}

static void insn_flags(const cs_insn *insn, unsigned *reads, unsigned *writes)
{
    uint64_t e = insn->detail->x86.eflags;
    *reads = flag_bits(e, X86_EFLAGS_TEST_OF, X86_EFLAGS_TEST_SF, X86_EFLAGS_TEST_ZF,
                       X86_EFLAGS_TEST_AF, X86_EFLAGS_TEST_PF, X86_EFLAGS_TEST_CF);
    if (reads_flags_by_name(insn->mnemonic))
        *reads = ALL_FLAGS;
    *writes = flag_bits(e, X86_EFLAGS_MODIFY_OF | X86_EFLAGS_RESET_OF | X86_EFLAGS_SET_OF |
                               X86_EFLAGS_UNDEFINED_OF,
                        X86_EFLAGS_MODIFY_SF | X86_EFLAGS_RESET_SF | X86_EFLAGS_SET_SF |
                            X86_EFLAGS_UNDEFINED_SF,
                        X86_EFLAGS_MODIFY_ZF | X86_EFLAGS_RESET_ZF | X86_EFLAGS_SET_ZF |
                            X86_EFLAGS_UNDEFINED_ZF,
                        X86_EFLAGS_MODIFY_AF | X86_EFLAGS_RESET_AF | X86_EFLAGS_SET_AF |
                            X86_EFLAGS_UNDEFINED_AF,
                        X86_EFLAGS_MODIFY_PF | X86_EFLAGS_RESET_PF | X86_EFLAGS_SET_PF |
                            X86_EFLAGS_UNDEFINED_PF,
                        X86_EFLAGS_MODIFY_CF | X86_EFLAGS_RESET_CF | X86_EFLAGS_SET_CF |
                            X86_EFLAGS_UNDEFINED_CF);
    /* The ABI does not preserve flags across a call: the callee clobbers them. */
    if (insn->id == X86_INS_CALL)
        *writes = ALL_FLAGS;
}

/* Registers read (a partial write reads the rest), wholly written, and
 * written at all (`changed`: wholly or in part). */
static void insn_gprs(csh h, const cs_insn *insn, unsigned *reads, unsigned *writes,
                      unsigned *changed)
{
    cs_regs rd, wr;
    uint8_t nrd = 0, nwr = 0;
    *reads = *writes = *changed = 0;
    if (cs_regs_access(h, insn, rd, &nrd, wr, &nwr) != CS_ERR_OK) {
        *reads = *changed = GPRS_ALL;
        return;
    }
    /* What capstone 4 leaves out: xlatb reads %rbx and %al, enter %rbp
     * and %rsp (it lists no register for either). */
    if (insn->id == X86_INS_XLATB)
        *reads |= GPR(RBX) | GPR(RAX);
    else if (insn->id == X86_INS_ENTER)
        *reads |= GPR(RBP) | GPR(RSP);
    bool whole;
    for (uint8_t k = 0; k < nrd; k++) {
        int g = rw_gpr_of(rd[k], &whole);
        if (g >= 0)
            *reads |= GPR(g);
    }
    for (uint8_t k = 0; k < nwr; k++) {
        int g = rw_gpr_of(wr[k], &whole);
        if (g >= 0) { /* a merged write keeps the old value live */
            *(whole ? writes : reads) |= GPR(g);
            *changed |= GPR(g);
        }
    }
}

bool rw_maybe_tls_descriptor_call(const uint8_t *bytes, size_t len)
{
    return len == 2 && bytes[0] == 0xff && bytes[1] == 0x10;
}

static bool calls_outside(const mt_program *prog, const cs_insn *insn)
{
    const cs_x86 *x = &insn->detail->x86;
    if (x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
        return true; /* through a pointer */
    uint32_t callee = mt_procedure_at(prog, (uint64_t)x->operands[0].imm);
    return callee == MT_NONE || prog->procs[callee].is_plt;
}

unsigned rw_live_insn(csh h, const mt_program *prog, const cs_insn *insn, rw_live *bl,
                      rw_live_proc *lp)
{
    unsigned fr, fw, gr, gw, changed;
    insn_flags(insn, &fr, &fw);
    insn_gprs(h, insn, &gr, &gw, &changed);
    if (insn->id == X86_INS_CALL && rw_maybe_tls_descriptor_call(insn->bytes, insn->size)) {
        gr = GPRS_ARGS | GPR(R10);
        gw = GPR(RAX);
    } else if (insn->id == X86_INS_CALL) {
        /* A call reads its own operand's registers (`call *(%r15,%rbx,8)`)
         * whoever it calls: capstone's reads, kept for every call (dropped
         * for calls outside before, which let a tracing record clobber
         * them, and could let a loop counter live in them). */
        bool outside = calls_outside(prog, insn);
        gr |= GPRS_ARGS | GPR(R10);
        gw = outside ? GPRS_CALLER_SAVED : 0;
        lp->calls_outside |= outside;
    } else if (insn->id == X86_INS_SYSCALL || insn->id == X86_INS_INT ||
               insn->id == X86_INS_INT3 || insn->id == X86_INS_INTO) {
        gr = GPRS_ALL;
        gw = 0;
    }
    lp->written |= gw;
    bl->use |= (fr | gr) & ~bl->def;
    bl->def |= fw | gw;
    if (insn->id == X86_INS_CALL || insn->id == X86_INS_INT || insn->id == X86_INS_INT3 ||
        insn->id == X86_INS_INTO)
        return GPRS_ALL;
    if (insn->id == X86_INS_SYSCALL)
        return changed | GPR(RAX) | GPR(RCX) | GPR(R11);
    return changed;
}

/* What a return leaves live for the caller. */
static unsigned return_live(const rw_live_proc *lp)
{
    unsigned clobbered = lp->calls_outside ? GPRS_CALLER_SAVED
                                           : (lp->written | ~lp->kept_by_callers) & GPRS_CALLER_SAVED;
    return GPRS_ALL & ~(clobbered & ~GPRS_RETURN); /* flags: dead by the ABI */
}

/* Live after block b: the union over its successors. */
static unsigned live_out(const mt_procedure *p, const rw_live *bl, uint32_t b, unsigned ret)
{
    unsigned out = 0;
    const mt_block *blk = &p->blocks[b];
    /* No successor: a call the analysis took for one that does not return
     * (an error path's), ud2, hlt.  If it returns after all, what follows
     * may read anything (python3's cold paths: rbx read after a call to a
     * procedure taken for noreturn). */
    if (blk->nsucc == 0)
        return ALL_FLAGS | GPRS_ALL;
    for (uint32_t e = blk->first_succ; e < blk->first_succ + blk->nsucc; e++) {
        const mt_edge *edge = &p->edges[e];
        if (edge->kind == MT_EDGE_RETURN)
            out |= ret;
        else if (edge->kind == MT_EDGE_TAIL_CALL)
            out |= GPRS_ALL; /* the flags are dead by the ABI, the arguments are not */
        else
            out |= edge->dst == MT_NONE ? ALL_FLAGS | GPRS_ALL : bl[edge->dst].live_in;
    }
    return out;
}

void rw_live_solve(const mt_procedure *p, rw_live *bl, const rw_live_proc *lp)
{
    unsigned ret = return_live(lp);
    for (uint32_t b = 0; b < p->nblocks; b++)
        bl[b].live_in = bl[b].use;
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t b = p->nblocks; b-- > 0;) {
            unsigned in = bl[b].use | (live_out(p, bl, b, ret) & ~bl[b].def);
            if (in != bl[b].live_in) {
                bl[b].live_in = in;
                changed = true;
            }
        }
    }
}

bool rw_live_before(csh h, const mt_program *prog, const mt_procedure *p, const rw_live *bl,
                    uint32_t b, const rw_insn *first, uint32_t n, const rw_live_proc *lp,
                    unsigned *live)
{
    unsigned now = live_out(p, bl, b, return_live(lp));
    for (uint32_t k = n; k-- > 0;) {
        const rw_insn *ri = &first[k];
        cs_insn *insn = NULL;
        if (mt_x86_decode(h, ri->bytes, ri->len, ri->old, 1, &insn) != 1) {
            mt_x86_free(insn, 0);
            return false;
        }
        rw_live one = {0};
        rw_live_proc scratch = *lp; /* its running facts are the block pass's, not ours */
        rw_live_insn(h, prog, insn, &one, &scratch);
        mt_x86_free(insn, 1);
        now = (now & ~one.def) | one.use;
        live[k] = now;
    }
    return true;
}

int rw_live_free_gpr(unsigned busy)
{
    /* Preference: scratch registers first; never rsp, nor r12 (its
     * addressing needs a SIB byte: the probes have fixed lengths). */
    static const int order[] = {R11, R10, R9, R8, RSI, RDI, RCX, RDX, RAX,
                                RBX, RBP, R13, R14, R15};
    for (size_t i = 0; i < sizeof order / sizeof *order; i++)
        if (!(busy & GPR(order[i])))
            return order[i];
    return -1;
}

/* Block liveness of procedure `pi` from its original bytes, its returns
 * reading what its own callers keep; false when a block cannot be decoded. */
static bool solve_procedure(rw_live_callers *lc, uint32_t pi, unsigned depth, rw_live *bl)
{
    const mt_procedure *p = &lc->prog->procs[pi];
    rw_live_proc lp = {.kept_by_callers = rw_live_across_calls(lc, pi, depth + 1)};
    const rw_decoded *d = lc->decoded ? &lc->decoded[pi] : NULL;
    if (d && d->done && !d->undecodable) { /* decoded ahead (rw_code_predecode) */
        for (uint32_t b = 0; b < p->nblocks; b++) {
            bl[b].use = d->bl[b].use;
            bl[b].def = d->bl[b].def;
        }
        lp.written = d->lp.written;
        lp.calls_outside = d->lp.calls_outside;
        rw_live_solve(p, bl, &lp);
        return true;
    }
    cs_insn *insn = cs_malloc(lc->cs);
    bool ok = true;
    for (uint32_t b = 0; b < p->nblocks && ok; b++) {
        const mt_block *blk = &p->blocks[b];
        const uint8_t *code = mt_elf_file_bytes(lc->in, blk->start, blk->end - blk->start);
        size_t left = code ? blk->end - blk->start : 0;
        uint64_t addr = blk->start;
        ok = code != NULL;
        while (ok && left > 0) {
            ok = mt_x86_decode_iter(lc->cs, &code, &left, &addr, insn);
            if (ok)
                rw_live_insn(lc->cs, lc->prog, insn, &bl[b], &lp);
        }
    }
    cs_free(insn, 1);
    if (ok)
        rw_live_solve(p, bl, &lp);
    return ok;
}

/* The callers of each procedure, from the call graph, built once. */
static void index_callers(rw_live_callers *lc)
{
    const mt_program *prog = lc->prog;
    lc->first_caller = mt_xcalloc(prog->nprocs + 2, sizeof *lc->first_caller);
    lc->callers = mt_xmalloc((prog->ncg_edges + 1) * sizeof *lc->callers);
    for (uint32_t i = 0; i < prog->ncg_edges; i++)
        lc->first_caller[prog->cg_edges[i].callee + 2]++;
    for (uint32_t p = 0; p < prog->nprocs; p++)
        lc->first_caller[p + 2] += lc->first_caller[p + 1];
    for (uint32_t i = 0; i < prog->ncg_edges; i++)
        lc->callers[lc->first_caller[prog->cg_edges[i].callee + 1]++] = prog->cg_edges[i].caller;
}

/* The solved block liveness of procedure q (cached), or NULL when it cannot
 * be trusted: its CFG is not resolved or a block does not decode. */
static const rw_live *caller_liveness(rw_live_callers *lc, uint32_t q, unsigned depth)
{
    if (!lc->solved[q]) {
        const mt_procedure *caller = &lc->prog->procs[q];
        lc->solved[q] = mt_xcalloc(caller->nblocks + 1, sizeof *lc->solved[q]);
        lc->trusted[q] = caller->resolved && solve_procedure(lc, q, depth, lc->solved[q]);
    }
    return lc->trusted[q] ? lc->solved[q] : NULL;
}

/* What the direct callers of `pi` keep live across their calls to it; a
 * tail call passes on what the tail caller's own callers keep. */
static unsigned kept_by_callers(rw_live_callers *lc, uint32_t pi, unsigned depth)
{
    const mt_program *prog = lc->prog;
    unsigned kept = 0;
    for (uint32_t i = lc->first_caller[pi]; i < lc->first_caller[pi + 1] && kept != GPRS_ALL; i++) {
        uint32_t q = lc->callers[i];
        const mt_procedure *caller = &prog->procs[q];
        const rw_live *bl = caller_liveness(lc, q, depth);
        if (!bl)
            return GPRS_ALL; /* a caller we cannot see whole may keep anything */
        for (uint32_t k = 0; k < caller->ncalls; k++) {
            const mt_call_site *cs = &caller->calls[k];
            if (cs->callee != pi)
                continue;
            if (cs->kind == MT_CALL_TAIL || cs->block == MT_NONE) {
                kept |= cs->kind == MT_CALL_TAIL ? rw_live_across_calls(lc, q, depth + 1) : GPRS_ALL;
                continue;
            }
            const mt_block *blk = &caller->blocks[cs->block];
            for (uint32_t e = blk->first_succ; e < blk->first_succ + blk->nsucc; e++)
                if (caller->edges[e].kind == MT_EDGE_CALL_RETURN)
                    kept |= caller->edges[e].dst == MT_NONE ? GPRS_ALL
                                                            : bl[caller->edges[e].dst].live_in;
        }
    }
    return kept;
}

void rw_live_callers_init(rw_live_callers *lc, csh h, const mt_program *prog, const mt_elf_file *in)
{
    memset(lc, 0, sizeof *lc);
    lc->cs = h;
    lc->prog = prog;
    lc->in = in;
}

void rw_live_callers_free(rw_live_callers *lc)
{
    for (uint32_t p = 0; lc->solved && p < lc->prog->nprocs; p++)
        free(lc->solved[p]);
    free(lc->solved);
    free(lc->trusted);
    free(lc->first_caller);
    free(lc->callers);
    free(lc->kept);
    free(lc->state);
    memset(lc, 0, sizeof *lc);
}

/* Memoized; a cycle of calls or a long chain of callers keeps everything. */
unsigned rw_live_across_calls(rw_live_callers *lc, uint32_t pi, unsigned depth)
{
    enum { UNKNOWN, SOLVING, KNOWN };
    if (!lc->state) {
        lc->kept = mt_xcalloc(lc->prog->nprocs + 1, sizeof *lc->kept);
        lc->state = mt_xcalloc(lc->prog->nprocs + 1, sizeof *lc->state);
        lc->solved = mt_xcalloc(lc->prog->nprocs + 1, sizeof *lc->solved);
        lc->trusted = mt_xcalloc(lc->prog->nprocs + 1, sizeof *lc->trusted);
        index_callers(lc);
    }
    if (lc->state[pi] == KNOWN)
        return lc->kept[pi];
    if (lc->state[pi] == SOLVING || depth > RW_LIVE_MAX_CALLER_DEPTH)
        return GPRS_ALL; /* not memoized: a shallower query may do better */
    lc->state[pi] = SOLVING;
    lc->kept[pi] = kept_by_callers(lc, pi, depth);
    lc->state[pi] = KNOWN;
    return lc->kept[pi];
}
