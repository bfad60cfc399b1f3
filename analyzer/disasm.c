/* analyzer/disasm.c — decoder wrapper (common/x86_decode.h: capstone, then
 * Zydis): decode, classify control flow, count memory accesses.
 *
 * Memory accesses.  Capstone 4.0.2 was checked instruction by instruction
 * (see the table below) and found to:
 *   - report no implicit accesses at all: push/pop/call/ret/leave/enter touch
 *     the stack without any memory operand, xlat has no operand;
 *   - report many stores through operand 0 as reads only (vmovdqu, movnti,
 *     movbe, movhps, vmovss, pextrd and vmaskmovpd stores; fst/fstp/fist/
 *     fistp/fnstcw/stmxcsr) and some read-modify-writes as reads (cmpxchg,
 *     cmpxchg8b/16b, rol/ror/rcl/rcr with a memory destination);
 *   - report its arithmetic read-modify-writes (add, inc, xadd, bts ...) and
 *     mov/setcc stores correctly.
 * So explicit operands go through fix_destination_access(), and implicit
 * accesses come from implicit_accesses[] and the string-opcode table.  Counts
 * are per execution: a `rep movsb` counts 1 read and 1 write although it
 * executes rcx times, because the repeat count is only known at run time. */
#define _GNU_SOURCE
#include "disasm.h"
#include "../common/util.h"

#include <string.h>

bool mt_decoder_open(mt_decoder *d)
{
    memset(d, 0, sizeof *d);
    if (!mt_x86_open(&d->cs))
        return false;
    d->insn = cs_malloc(d->cs);
    if (!d->insn) {
        cs_close(&d->cs);
        return false;
    }
    return true;
}

void mt_decoder_close(mt_decoder *d)
{
    if (d->insn)
        cs_free(d->insn, 1);
    if (d->cs)
        cs_close(&d->cs);
    memset(d, 0, sizeof *d);
}

const cs_insn *mt_decode(mt_decoder *d, const uint8_t *code, uint64_t avail, uint64_t addr)
{
    size_t size = avail > 15 ? 15 : (size_t)avail;
    uint64_t a = addr;
    if (!mt_x86_decode_iter(d->cs, &code, &size, &a, d->insn))
        return NULL;
    return d->insn;
}

/* ---- control flow ---------------------------------------------------- */

static bool is_conditional_branch(unsigned id)
{
    switch (id) {
    case X86_INS_JAE: case X86_INS_JA: case X86_INS_JBE: case X86_INS_JB:
    case X86_INS_JCXZ: case X86_INS_JECXZ: case X86_INS_JRCXZ:
    case X86_INS_JE: case X86_INS_JGE: case X86_INS_JG: case X86_INS_JLE:
    case X86_INS_JL: case X86_INS_JNE: case X86_INS_JNO: case X86_INS_JNP:
    case X86_INS_JNS: case X86_INS_JO: case X86_INS_JP: case X86_INS_JS:
    case X86_INS_LOOP: case X86_INS_LOOPE: case X86_INS_LOOPNE:
    case X86_INS_XBEGIN: /* aborts continue at the target */
        return true;
    default:
        return false;
    }
}

static uint64_t imm_operand(const cs_insn *insn)
{
    const cs_x86 *x = &insn->detail->x86;
    for (unsigned i = 0; i < x->op_count; i++)
        if (x->operands[i].type == X86_OP_IMM)
            return (uint64_t)x->operands[i].imm;
    return 0;
}

static mt_flow jump_flow(const cs_insn *insn)
{
    const cs_x86 *x = &insn->detail->x86;
    if (x->op_count < 1)
        return MT_FLOW_JUMP_REG;
    const cs_x86_op *op = &x->operands[0];
    if (op->type == X86_OP_IMM)
        return MT_FLOW_JUMP;
    if (op->type == X86_OP_MEM && op->mem.base == X86_REG_RIP && op->mem.index == X86_REG_INVALID)
        return MT_FLOW_JUMP_SLOT;
    return MT_FLOW_JUMP_REG;
}

static mt_flow call_flow(const cs_insn *insn, uint64_t *target)
{
    const cs_x86 *x = &insn->detail->x86;
    if (x->op_count < 1 || x->operands[0].type != X86_OP_IMM)
        return MT_FLOW_ICALL;
    *target = (uint64_t)x->operands[0].imm;
    /* `call .+5` (PIC thunks, pushing the pc) is data flow, not a call. */
    if (*target == insn->address + insn->size) {
        *target = 0;
        return MT_FLOW_NONE;
    }
    return MT_FLOW_CALL;
}

static mt_flow flow_of(const cs_insn *insn, uint64_t *target)
{
    unsigned id = insn->id;
    *target = 0;
    if (is_conditional_branch(id)) {
        *target = imm_operand(insn);
        return MT_FLOW_COND;
    }
    switch (id) {
    case X86_INS_JMP: {
        mt_flow f = jump_flow(insn);
        if (f == MT_FLOW_JUMP)
            *target = imm_operand(insn);
        return f;
    }
    case X86_INS_LJMP:
        return MT_FLOW_JUMP_FAR;
    case X86_INS_CALL:
        return call_flow(insn, target);
    case X86_INS_LCALL:
        return MT_FLOW_ICALL;
    case X86_INS_RET: case X86_INS_RETF: case X86_INS_RETFQ:
    case X86_INS_IRET: case X86_INS_IRETD: case X86_INS_IRETQ:
    case X86_INS_SYSRET: case X86_INS_SYSEXIT:
        return MT_FLOW_RET;
    case X86_INS_HLT: case X86_INS_UD0: case X86_INS_UD2: case X86_INS_UD2B:
    case X86_INS_INT3:
        return MT_FLOW_STOP;
    default:
        return MT_FLOW_NONE;
    }
}

/* An address the instruction puts in a register or on the stack, which
 * makes a procedure at that address callable indirectly. */
static uint64_t materialized_address(const cs_insn *insn)
{
    const cs_x86 *x = &insn->detail->x86;
    switch (insn->id) {
    case X86_INS_LEA:
        if (x->op_count == 2 && x->operands[1].type == X86_OP_MEM &&
            x->operands[1].mem.base == X86_REG_RIP && x->operands[1].mem.index == X86_REG_INVALID)
            return insn->address + insn->size + (uint64_t)x->operands[1].mem.disp;
        return 0;
    case X86_INS_MOV:
    case X86_INS_MOVABS:
    case X86_INS_PUSH:
        return imm_operand(insn);
    default:
        return 0;
    }
}

void mt_insn_facts_of(const cs_insn *insn, mt_insn_facts *out)
{
    out->flow = (uint8_t)flow_of(insn, &out->target);
    out->ref = materialized_address(insn);
    mt_count_mem_accesses(insn, &out->reads, &out->writes);
}

/* ---- stack pointer ------------------------------------------------------ */

static bool is_rsp_reg(const cs_x86_op *op)
{
    return op->type == X86_OP_REG && op->reg == X86_REG_RSP;
}

int16_t mt_insn_rsp_change(const cs_insn *insn)
{
    const cs_x86 *x = &insn->detail->x86;
    switch (insn->id) {
    case X86_INS_PUSH:
        return x->op_count == 1 && x->operands[0].size == 2 ? 2 : 8;
    case X86_INS_PUSHFQ:
        return 8;
    case X86_INS_POP:
        if (x->op_count == 1 && is_rsp_reg(&x->operands[0]))
            return MT_RSP_LOST;
        return x->op_count == 1 && x->operands[0].size == 2 ? -2 : -8;
    case X86_INS_POPFQ:
        return -8;
    case X86_INS_CALL: case X86_INS_RET: /* a call's return pops its push; a ret ends the block */
        return 0;
    case X86_INS_SUB: case X86_INS_ADD:
        if (x->op_count == 2 && is_rsp_reg(&x->operands[0])) {
            if (x->operands[1].type != X86_OP_IMM || x->operands[1].imm < -16384 ||
                x->operands[1].imm > 16384)
                return MT_RSP_LOST;
            return (int16_t)(insn->id == X86_INS_SUB ? x->operands[1].imm : -x->operands[1].imm);
        }
        break;
    case X86_INS_LEA:
        if (x->op_count == 2 && is_rsp_reg(&x->operands[0])) {
            const x86_op_mem *m = &x->operands[1].mem;
            if (m->base != X86_REG_RSP || m->index != X86_REG_INVALID || m->disp < -16384 ||
                m->disp > 16384)
                return MT_RSP_LOST;
            return (int16_t)-m->disp;
        }
        return 0;
    case X86_INS_LEAVE: case X86_INS_ENTER: case X86_INS_PUSHAL: case X86_INS_POPAL:
    case X86_INS_PUSHF: case X86_INS_POPF:
        return MT_RSP_LOST;
    default:
        break;
    }
    /* Anything else that writes %rsp (mov, and, xchg, cmov, ...). */
    for (uint8_t k = 0; k < x->op_count; k++)
        if (is_rsp_reg(&x->operands[k]) && (x->operands[k].access & CS_AC_WRITE))
            return MT_RSP_LOST;
    for (uint8_t k = 0; k < insn->detail->regs_write_count; k++)
        if (insn->detail->regs_write[k] == X86_REG_RSP)
            return MT_RSP_LOST;
    return 0;
}

/* ---- memory accesses ------------------------------------------------- */

enum { EXPLICIT_COUNT, EXPLICIT_IGNORE };

typedef struct {
    uint16_t id;
    uint8_t reads, writes; /* implicit, per execution */
    uint8_t explicit_ops;  /* EXPLICIT_IGNORE: operands are addresses, not accesses */
} implicit_access;

/* Indexed by instruction id (looked up for every instruction decoded, twice
 * per instruction when rewriting: a search of the list was 3.5% of
 * rewriting gdb); id 0 (X86_INS_INVALID) marks the others. */
#define IMPLICIT(id, reads, writes, explicit_ops) [id] = {id, reads, writes, explicit_ops}
static const implicit_access implicit_accesses[X86_INS_ENDING] = {
    IMPLICIT(X86_INS_PUSH, 0, 1, EXPLICIT_COUNT),   /* push mem: +1 read from the operand */
    IMPLICIT(X86_INS_PUSHF, 0, 1, EXPLICIT_COUNT),
    IMPLICIT(X86_INS_PUSHFD, 0, 1, EXPLICIT_COUNT),
    IMPLICIT(X86_INS_PUSHFQ, 0, 1, EXPLICIT_COUNT),
    IMPLICIT(X86_INS_POP, 1, 0, EXPLICIT_COUNT),    /* pop mem: +1 write to the operand */
    IMPLICIT(X86_INS_POPF, 1, 0, EXPLICIT_COUNT),
    IMPLICIT(X86_INS_POPFD, 1, 0, EXPLICIT_COUNT),
    IMPLICIT(X86_INS_POPFQ, 1, 0, EXPLICIT_COUNT),
    IMPLICIT(X86_INS_CALL, 0, 1, EXPLICIT_COUNT),   /* call *mem: +1 read of the target */
    IMPLICIT(X86_INS_LCALL, 0, 1, EXPLICIT_COUNT),
    IMPLICIT(X86_INS_RET, 1, 0, EXPLICIT_COUNT),
    IMPLICIT(X86_INS_RETF, 1, 0, EXPLICIT_COUNT),
    IMPLICIT(X86_INS_RETFQ, 1, 0, EXPLICIT_COUNT),
    IMPLICIT(X86_INS_IRET, 1, 0, EXPLICIT_COUNT),
    IMPLICIT(X86_INS_IRETD, 1, 0, EXPLICIT_COUNT),
    IMPLICIT(X86_INS_IRETQ, 1, 0, EXPLICIT_COUNT),
    IMPLICIT(X86_INS_LEAVE, 1, 0, EXPLICIT_COUNT),  /* pop rbp */
    IMPLICIT(X86_INS_ENTER, 0, 1, EXPLICIT_IGNORE), /* push rbp (nesting level 0) */
    IMPLICIT(X86_INS_XLATB, 1, 0, EXPLICIT_COUNT),  /* reads [rbx+al], no operand */
    IMPLICIT(X86_INS_LEA, 0, 0, EXPLICIT_IGNORE),
    IMPLICIT(X86_INS_NOP, 0, 0, EXPLICIT_IGNORE),
    IMPLICIT(X86_INS_PREFETCH, 0, 0, EXPLICIT_IGNORE),
    IMPLICIT(X86_INS_PREFETCHNTA, 0, 0, EXPLICIT_IGNORE),
    IMPLICIT(X86_INS_PREFETCHT0, 0, 0, EXPLICIT_IGNORE),
    IMPLICIT(X86_INS_PREFETCHT1, 0, 0, EXPLICIT_IGNORE),
    IMPLICIT(X86_INS_PREFETCHT2, 0, 0, EXPLICIT_IGNORE),
    IMPLICIT(X86_INS_PREFETCHW, 0, 0, EXPLICIT_IGNORE),
    IMPLICIT(X86_INS_CLFLUSH, 0, 0, EXPLICIT_IGNORE),
    IMPLICIT(X86_INS_CLFLUSHOPT, 0, 0, EXPLICIT_IGNORE),
    IMPLICIT(X86_INS_CLWB, 0, 0, EXPLICIT_IGNORE),
};

/* String instructions by primary opcode (capstone shares ids such as
 * X86_INS_MOVSD and X86_INS_CMPSD with SSE instructions, the opcode does
 * not lie).  Their operands are ignored: the table is the truth. */
typedef struct {
    uint8_t opcode, reads, writes;
} string_access;

static const string_access string_accesses[] = {
    {0xA4, 1, 1}, {0xA5, 1, 1}, /* movs */
    {0xA6, 2, 0}, {0xA7, 2, 0}, /* cmps */
    {0xAA, 0, 1}, {0xAB, 0, 1}, /* stos */
    {0xAC, 1, 0}, {0xAD, 1, 0}, /* lods */
    {0xAE, 1, 0}, {0xAF, 1, 0}, /* scas */
    {0x6C, 0, 1}, {0x6D, 0, 1}, /* ins */
    {0x6E, 1, 0}, {0x6F, 1, 0}, /* outs */
};

static const string_access *string_instruction(const cs_insn *insn)
{
    const cs_x86 *x = &insn->detail->x86;
    uint8_t op = x->opcode[0];
    if (x->opcode[1] != 0 || ((op & 0xf0) != 0xa0 && (op & 0xfc) != 0x6c))
        return NULL; /* one-byte opcodes only, a4-af or 6c-6f */
    for (size_t i = 0; i < MT_ARRAY_LEN(string_accesses); i++)
        if (string_accesses[i].opcode == x->opcode[0])
            return &string_accesses[i];
    return NULL;
}

static const implicit_access *implicit_access_of(unsigned id)
{
    return id < X86_INS_ENDING && implicit_accesses[id].id == id && id != X86_INS_INVALID
               ? &implicit_accesses[id]
               : NULL;
}

/* Corrects capstone's access flags for a memory operand in position 0 (the
 * destination in Intel order) that it reports as read-only. */
static uint8_t fix_destination_access(unsigned id, unsigned op_count, uint8_t access)
{
    if (access & CS_AC_WRITE)
        return access;
    switch (id) {
    case X86_INS_CMPXCHG: case X86_INS_CMPXCHG8B: case X86_INS_CMPXCHG16B:
    case X86_INS_ROL: case X86_INS_ROR: case X86_INS_RCL: case X86_INS_RCR:
    case X86_INS_SHL: case X86_INS_SHR: case X86_INS_SAL: case X86_INS_SAR:
        return CS_AC_READ | CS_AC_WRITE;
    case X86_INS_FST: case X86_INS_FSTP: case X86_INS_FIST: case X86_INS_FISTP:
    case X86_INS_FISTTP: case X86_INS_FBSTP: case X86_INS_FNSTCW: case X86_INS_FNSTSW:
    case X86_INS_FNSTENV: case X86_INS_FNSAVE: case X86_INS_STMXCSR: case X86_INS_VSTMXCSR:
    case X86_INS_SGDT: case X86_INS_SIDT: case X86_INS_SLDT: case X86_INS_STR:
    case X86_INS_SMSW:
        return CS_AC_WRITE;
    case X86_INS_CMP: case X86_INS_TEST: case X86_INS_BT:
        return access;
    default:
        /* Two or more operands with memory first: a store (mov-like). */
        return op_count >= 2 ? CS_AC_WRITE : access;
    }
}

void mt_count_mem_accesses(const cs_insn *insn, uint8_t *reads, uint8_t *writes)
{
    unsigned r = 0, w = 0;
    const string_access *s = string_instruction(insn);
    if (s) {
        *reads = s->reads;
        *writes = s->writes;
        return;
    }
    const implicit_access *ia = implicit_access_of(insn->id);
    if (ia) {
        r += ia->reads;
        w += ia->writes;
    }
    if (!ia || ia->explicit_ops == EXPLICIT_COUNT) {
        const cs_x86 *x = &insn->detail->x86;
        for (unsigned i = 0; i < x->op_count; i++) {
            const cs_x86_op *op = &x->operands[i];
            if (op->type != X86_OP_MEM)
                continue;
            uint8_t acc = op->access;
            if (i == 0)
                acc = fix_destination_access(insn->id, x->op_count, acc);
            if (acc == 0)
                acc = CS_AC_READ;
            r += (acc & CS_AC_READ) != 0;
            w += (acc & CS_AC_WRITE) != 0;
        }
    }
    *reads = (uint8_t)r;
    *writes = (uint8_t)w;
}

/* ---- registers ------------------------------------------------------- */

unsigned mt_reg_family(unsigned reg)
{
    switch (reg) {
    case X86_REG_RAX: case X86_REG_EAX: case X86_REG_AX: case X86_REG_AL: case X86_REG_AH:
        return 1;
    case X86_REG_RCX: case X86_REG_ECX: case X86_REG_CX: case X86_REG_CL: case X86_REG_CH:
        return 2;
    case X86_REG_RDX: case X86_REG_EDX: case X86_REG_DX: case X86_REG_DL: case X86_REG_DH:
        return 3;
    case X86_REG_RBX: case X86_REG_EBX: case X86_REG_BX: case X86_REG_BL: case X86_REG_BH:
        return 4;
    case X86_REG_RSP: case X86_REG_ESP: case X86_REG_SP: case X86_REG_SPL:
        return 5;
    case X86_REG_RBP: case X86_REG_EBP: case X86_REG_BP: case X86_REG_BPL:
        return 6;
    case X86_REG_RSI: case X86_REG_ESI: case X86_REG_SI: case X86_REG_SIL:
        return 7;
    case X86_REG_RDI: case X86_REG_EDI: case X86_REG_DI: case X86_REG_DIL:
        return 8;
    case X86_REG_R8: case X86_REG_R8D: case X86_REG_R8W: case X86_REG_R8B: return 9;
    case X86_REG_R9: case X86_REG_R9D: case X86_REG_R9W: case X86_REG_R9B: return 10;
    case X86_REG_R10: case X86_REG_R10D: case X86_REG_R10W: case X86_REG_R10B: return 11;
    case X86_REG_R11: case X86_REG_R11D: case X86_REG_R11W: case X86_REG_R11B: return 12;
    case X86_REG_R12: case X86_REG_R12D: case X86_REG_R12W: case X86_REG_R12B: return 13;
    case X86_REG_R13: case X86_REG_R13D: case X86_REG_R13W: case X86_REG_R13B: return 14;
    case X86_REG_R14: case X86_REG_R14D: case X86_REG_R14W: case X86_REG_R14B: return 15;
    case X86_REG_R15: case X86_REG_R15D: case X86_REG_R15W: case X86_REG_R15B: return 16;
    default:
        return 0;
    }
}

bool mt_insn_writes_family(const mt_decoder *d, const cs_insn *insn, unsigned family)
{
    cs_regs rd, wr;
    uint8_t nrd = 0, nwr = 0;
    if (cs_regs_access(d->cs, insn, rd, &nrd, wr, &nwr) != CS_ERR_OK)
        return true; /* unknown: assume the worst */
    for (unsigned i = 0; i < nwr; i++)
        if (mt_reg_family(wr[i]) == family)
            return true;
    return false;
}

bool mt_family_caller_saved(unsigned family)
{
    /* rax rcx rdx rsi rdi r8-r11 */
    return family == 1 || family == 2 || family == 3 || family == 7 || family == 8 ||
           (family >= 9 && family <= 12);
}
