/* rewriter/trace.c — tracing copies (`mtool sim -- BIN`): code before every
 * instruction of a relocated procedure that touches memory appends one
 * record per reference to the thread's trace frame (timer/timer.h,
 * "Traced loads and stores"):
 *
 *     lea -128(%rsp),%rsp          step over the red zone
 *     push %rax; push %rcx
 *     per reference:
 *       lea OPERAND,%rax           the reference's own operand, re-encoded: every
 *                                  addressing mode; %rsp-based ones shifted by
 *                                  the 144 bytes above; rip-relative retargeted
 *       mov %fs:0,%rcx; lea (%rax,%rcx),%rax    %fs operands: the ABI keeps the
 *                                  thread pointer (the fs base) at %fs:0
 *       mov %gs:INDEX,%rcx
 *       mov %rax,%gs:END(,%rcx,8); movl $CODE,..+8; movl $SIZE|KIND<<16,..+12
 *       lea 2(%rcx),%rcx; mov %rcx,%gs:INDEX
 *       jrcxz 1f; jmp 2f; 1: call mt_timer_trace_flush; 2:
 *       mov (%rsp),%rcx; mov 8(%rsp),%rax      the next operand may use them
 *     pop %rcx; pop %rax; lea 128(%rsp),%rsp
 *
 * Nothing changes the flags (the flush saves them), so no liveness is
 * needed; the inserted code's own loads and stores are never traced.  The
 * references: explicit memory operands (a read-write operand is one
 * MT_TRACE_MODIFY, Cachegrind's one write), the stack traffic of push, pop,
 * call, ret and leave, string instructions (rep movs/stos: %rsi, %rdi and
 * %rcx before the instruction; the reader expands them element by
 * element, as Valgrind runs them).  Not traced, counted in the report:
 * gathers and scatters (one address per vector element, not an operand a
 * `lea` computes), rep cmps/scas (they stop at the first difference, so
 * %rcx is not their count), operands of no stated size (xsave) and 32-bit
 * address forms. */
#include <capstone/capstone.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define RED_ZONE 128
#define SAVED 16             /* %rax and %rcx pushed */
#define NO_REG 0xff
#define RIP_REG 0xfe

/* The encoding number of a 64-bit general register, NO_REG for none,
 * RIP_REG for %rip, -1 for any other register. */
static int reg_number(x86_reg r)
{
    static const x86_reg gprs[16] = {X86_REG_RAX, X86_REG_RCX, X86_REG_RDX, X86_REG_RBX,
                                     X86_REG_RSP, X86_REG_RBP, X86_REG_RSI, X86_REG_RDI,
                                     X86_REG_R8,  X86_REG_R9,  X86_REG_R10, X86_REG_R11,
                                     X86_REG_R12, X86_REG_R13, X86_REG_R14, X86_REG_R15};
    if (r == X86_REG_INVALID)
        return NO_REG;
    if (r == X86_REG_RIP)
        return RIP_REG;
    for (int i = 0; i < 16; i++)
        if (gprs[i] == r)
            return i;
    return -1;
}

/* lea OPERAND,%rax for a base/index/scale/disp operand (no %rip). */
static void encode_lea(rw_buf *out, unsigned base, unsigned index, unsigned scale, int32_t disp)
{
    uint8_t rex = 0x48 | (index != NO_REG && index >= 8 ? 2 : 0) | (base != NO_REG && base >= 8 ? 1 : 0);
    unsigned ss = scale == 8 ? 3 : scale == 4 ? 2 : scale == 2 ? 1 : 0;
    rw_buf_u8(out, rex);
    rw_buf_u8(out, 0x8d);
    if (base == NO_REG) { /* [index*scale + disp32] or [disp32] */
        rw_buf_u8(out, 0x04);
        rw_buf_u8(out, (uint8_t)(ss << 6 | (index == NO_REG ? 4 : index & 7) << 3 | 5));
        rw_buf_u32(out, (uint32_t)disp);
        return;
    }
    unsigned mod = disp == 0 && (base & 7) != 5 ? 0 : disp >= -128 && disp <= 127 ? 1 : 2;
    bool sib = index != NO_REG || (base & 7) == 4;
    rw_buf_u8(out, (uint8_t)(mod << 6 | (sib ? 4 : base & 7)));
    if (sib)
        rw_buf_u8(out, (uint8_t)(ss << 6 | (index == NO_REG ? 4 : index & 7) << 3 | (base & 7)));
    if (mod == 1)
        rw_buf_u8(out, (uint8_t)(int8_t)disp);
    else if (mod == 2)
        rw_buf_u32(out, (uint32_t)disp);
}

#define LEA_RIP_LEN 7 /* lea disp32(%rip),%rax */
#define FS_LEN 13     /* mov %fs:0,%rcx; lea (%rax,%rcx),%rax */
#define RECORD_LEN 73 /* from mov %gs:INDEX,%rcx to the two restores */
/* Around the records: past the red zone, %rax and %rcx saved; back. */
static const uint8_t frame_enter[] = {0x48, 0x8d, 0x64, 0x24, 0x80, 0x50, 0x51};
static const uint8_t frame_leave[] = {0x59, 0x58, 0x48, 0x8d, 0xa4, 0x24, 0x80, 0, 0, 0};

static size_t ref_len(const rw_trace_ref *t)
{
    size_t n = t->base == RIP_REG ? LEA_RIP_LEN : 0;
    if (t->base != RIP_REG) {
        rw_buf b = {0};
        encode_lea(&b, t->base, t->index, t->scale, (int32_t)t->disp);
        n = b.len;
        rw_buf_free(&b);
    }
    return n + (t->fs ? FS_LEN : 0) + RECORD_LEN;
}

/* Adds reference `t` to instruction `ri` (its references are consecutive
 * in c->trace_refs). */
static void add_ref(rw_code *c, rw_insn *ri, rw_trace_ref t)
{
    if (t.base == 4) /* %rsp, moved by the frame above */
        t.disp += RED_ZONE + SAVED;
    if (t.base != RIP_REG && (t.disp < INT32_MIN || t.disp > INT32_MAX)) {
        c->ntrace_untraced++;
        return;
    }
    if (!ri->ntrace)
        ri->trace_first = (uint32_t)c->ntrace_refs;
    MT_PUSH(c->trace_refs, c->ntrace_refs, c->cap_trace_refs, t);
    ri->ntrace++;
    ri->trace_len = (uint16_t)(ri->trace_len + ref_len(&t));
}

/* A stack reference at %rsp + disp (before the instruction). */
static rw_trace_ref stack_ref(uint32_t code, int64_t disp, uint8_t kind)
{
    return (rw_trace_ref){.kind = kind, .size = 8, .code = code, .base = 4, .index = NO_REG,
                          .scale = 1, .disp = disp};
}

static rw_trace_ref reg_ref(uint32_t code, unsigned reg, uint16_t size, uint8_t kind)
{
    return (rw_trace_ref){.kind = kind, .size = size, .code = code, .base = (uint8_t)reg,
                          .index = NO_REG, .scale = 1};
}

enum { RSI = 6, RDI = 7, RCX = 1, RBP = 5 };

/* String instructions (a4-af): false when `insn` is none. */
static bool plan_string(rw_code *c, rw_insn *ri, const cs_insn *insn, uint32_t code)
{
    const cs_x86 *x = &insn->detail->x86;
    uint8_t op = x->opcode[0];
    if (x->opcode[1] != 0 || op < 0xa4 || op > 0xaf)
        return false;
    if (x->addr_size != 8) {
        c->ntrace_untraced++;
        return true;
    }
    uint16_t size = (op & 1) == 0 ? 1 : (x->rex & 8) ? 8 : x->prefix[2] == 0x66 ? 2 : 4;
    bool rep = x->prefix[0] == X86_PREFIX_REP || x->prefix[0] == X86_PREFIX_REPNE;
    bool source = op <= 0xa7 || op == 0xac || op == 0xad;     /* movs, cmps, lods */
    bool dest = op <= 0xab || op >= 0xae;                      /* movs, cmps, stos, scas */
    bool dest_read = op == 0xa6 || op == 0xa7 || op >= 0xae;  /* cmps, scas */
    if (rep && dest_read) { /* they stop early: %rcx is not their count */
        c->ntrace_untraced++;
        return true;
    }
    if (!rep) {
        if (source)
            add_ref(c, ri, reg_ref(code, RSI, size, MT_TRACE_READ));
        if (dest)
            add_ref(c, ri, reg_ref(code, RDI, size, dest_read ? MT_TRACE_READ : MT_TRACE_WRITE));
        return true;
    }
    if (source)
        add_ref(c, ri, reg_ref(code, RSI, size, MT_TRACE_REP_SOURCE));
    add_ref(c, ri, reg_ref(code, RDI, size, MT_TRACE_REP_DEST));
    add_ref(c, ri, reg_ref(code, RCX, (uint16_t)(source ? 1 | 2 : 2), MT_TRACE_REP_COUNT));
    return true;
}

static bool no_access(unsigned id)
{
    return id == X86_INS_LEA || id == X86_INS_NOP || id == X86_INS_PREFETCH ||
           id == X86_INS_PREFETCHNTA || id == X86_INS_PREFETCHT0 || id == X86_INS_PREFETCHT1 ||
           id == X86_INS_PREFETCHT2 || id == X86_INS_PREFETCHW || id == X86_INS_CLFLUSH ||
           id == X86_INS_CLFLUSHOPT;
}

/* The explicit memory operand of `insn`, if any. */
static void plan_operand(rw_code *c, rw_insn *ri, const cs_insn *insn, uint32_t code)
{
    const cs_x86 *x = &insn->detail->x86;
    for (int k = 0; k < x->op_count; k++) {
        const cs_x86_op *o = &x->operands[k];
        if (o->type != X86_OP_MEM || no_access(insn->id))
            continue;
        int base = reg_number(o->mem.base), index = reg_number(o->mem.index);
        bool fs = o->mem.segment == X86_REG_FS;
        if (base < 0 || index < 0 || index == RIP_REG || o->size == 0 || x->addr_size != 8 ||
            (o->mem.segment != X86_REG_INVALID && !fs && o->mem.segment != X86_REG_DS &&
             o->mem.segment != X86_REG_SS && o->mem.segment != X86_REG_ES)) {
            c->ntrace_untraced++; /* gathers (a vector index), xsave, 32-bit addresses */
            continue;
        }
        uint8_t kind = (o->access & CS_AC_READ) && (o->access & CS_AC_WRITE) ? MT_TRACE_MODIFY
                       : (o->access & CS_AC_WRITE)                           ? MT_TRACE_WRITE
                                                                             : MT_TRACE_READ;
        rw_trace_ref t = {.kind = kind, .size = o->size, .code = code, .base = (uint8_t)base,
                          .index = (uint8_t)index, .scale = (uint8_t)o->mem.scale,
                          .disp = o->mem.disp, .fs = fs};
        if (base == RIP_REG)
            t.disp = (int64_t)(insn->address + insn->size + (uint64_t)o->mem.disp);
        if (insn->id == X86_INS_POP && base == 4) /* its address is computed after the pop */
            t.disp += 8;
        add_ref(c, ri, t);
    }
}

/* The stack traffic of `insn` (its explicit operand, if any, comes first:
 * `push (mem)` reads it before writing the stack). */
static void plan_stack(rw_code *c, rw_insn *ri, const cs_insn *insn, uint32_t code)
{
    switch (insn->id) {
    case X86_INS_PUSH:
    case X86_INS_PUSHFQ:
    case X86_INS_CALL:
        add_ref(c, ri, stack_ref(code, -8, MT_TRACE_WRITE));
        break;
    case X86_INS_POP:
    case X86_INS_POPFQ:
    case X86_INS_RET:
        add_ref(c, ri, stack_ref(code, 0, MT_TRACE_READ));
        break;
    case X86_INS_LEAVE:
        add_ref(c, ri, reg_ref(code, RBP, 8, MT_TRACE_READ));
        break;
    default:
        break;
    }
}

/* Every reference of `insn`, in the order it makes them. */
static void plan_insn(rw_code *c, rw_insn *ri, const cs_insn *insn, uint32_t code)
{
    if (plan_string(c, ri, insn, code))
        return;
    if (insn->id == X86_INS_POP) { /* the stack is read before the operand is written */
        plan_stack(c, ri, insn, code);
        plan_operand(c, ri, insn, code);
    } else {
        plan_operand(c, ri, insn, code);
        plan_stack(c, ri, insn, code);
    }
}

/* in[b]: whether block b of procedure `proc` is traced: every block, or
 * those of the objects c->traced lists in it. */
static void mark_traced_blocks(const rw_code *c, uint32_t proc, bool *in)
{
    const mt_procedure *p = &c->prog->procs[proc];
    for (uint32_t b = 0; b < p->nblocks; b++)
        in[b] = c->ntraced == 0;
    bool *object = mt_xcalloc(p->nblocks + 1, sizeof *object);
    for (uint32_t i = 0; i < c->ntraced; i++) {
        const mt_timed_object *t = &c->traced[i];
        if (t->proc != proc)
            continue;
        mt_object_blocks(p, t->loop, t->region, t->region_first, t->region_end, object);
        for (uint32_t b = 0; b < p->nblocks; b++)
            in[b] |= object[b];
    }
    free(object);
}

void rw_trace_plan(rw_code *c, rw_insn *insns, uint32_t ninsns, uint32_t proc,
                   const uint32_t *block_first)
{
    csh h = (csh)(uintptr_t)c->cs;
    cs_insn *insn = cs_malloc(h);
    const mt_procedure *p = &c->prog->procs[proc];
    uint32_t loops = mt_code_object_loops(c->prog, proc);
    bool *traced = mt_xcalloc(p->nblocks + 1, sizeof *traced);
    mark_traced_blocks(c, proc, traced);
    for (uint32_t b = 0; b < p->nblocks; b++) {
        if (!traced[b])
            continue;
        uint32_t code = mt_code_object_of_block(c->prog, proc, b, loops);
        uint32_t end = b + 1 < p->nblocks ? block_first[b + 1] : ninsns;
        for (uint32_t k = block_first[b]; k < end; k++) {
            rw_insn *ri = &insns[k];
            const uint8_t *bytes = ri->bytes;
            size_t left = ri->len;
            uint64_t addr = ri->old;
            if (!cs_disasm_iter(h, &bytes, &left, &addr, insn))
                continue; /* decoded once already: cannot happen */
            plan_insn(c, ri, insn, code);
            c->ntrace_sites += ri->ntrace > 0;
        }
    }
    free(traced);
    cs_free(insn, 1);
}

size_t rw_trace_len(const rw_insn *ri) { return ri->ntrace ? sizeof frame_enter + sizeof frame_leave + ri->trace_len : 0; }

static void emit_gs(rw_buf *out, const uint8_t *op, size_t n, uint32_t disp)
{
    rw_buf_u8(out, 0x65);
    rw_buf_put(out, op, n);
    rw_buf_u32(out, disp);
}

/* One record of reference `t`, emitted at link-time address `at`. */
static bool emit_ref(const rw_code *c, rw_buf *out, const rw_trace_ref *t, uint64_t at,
                     mt_error *err)
{
    uint64_t area = MT_SLOT_TRACE_OFFSET(c->ncounters, c->ntimed, c->ncall_sites);
    uint32_t index = (uint32_t)(area + MT_TRACE_INDEX);
    uint32_t end = (uint32_t)(area + MT_TRACE_AREA_SIZE(MT_TRACE_RECORDS));
    size_t start = out->len;
    if (t->base == RIP_REG) {
        int64_t d = (int64_t)((uint64_t)t->disp - (at + LEA_RIP_LEN));
        if (d < INT32_MIN || d > INT32_MAX) {
            mt_error_set(err, "%s: traced operand 0x%llx out of rel32 range", c->in->path,
                         (unsigned long long)t->disp);
            return false;
        }
        static const uint8_t lea_rip[] = {0x48, 0x8d, 0x05};
        rw_buf_put(out, lea_rip, sizeof lea_rip);
        rw_buf_u32(out, (uint32_t)(int32_t)d);
    } else {
        encode_lea(out, t->base, t->index, t->scale, (int32_t)t->disp);
    }
    if (t->fs) {
        static const uint8_t fs_base[] = {0x64, 0x48, 0x8b, 0x0c, 0x25, 0, 0, 0, 0, /* mov %fs:0,%rcx */
                                          0x48, 0x8d, 0x04, 0x08}; /* lea (%rax,%rcx),%rax */
        rw_buf_put(out, fs_base, sizeof fs_base);
    }
    static const uint8_t load_index[] = {0x48, 0x8b, 0x0c, 0x25};     /* mov %gs:d,%rcx */
    static const uint8_t store_addr[] = {0x48, 0x89, 0x04, 0xcd};     /* mov %rax,%gs:d(,%rcx,8) */
    static const uint8_t store_imm[] = {0xc7, 0x04, 0xcd};            /* movl $i,%gs:d(,%rcx,8) */
    static const uint8_t step[] = {0x48, 0x8d, 0x49, 0x02};           /* lea 2(%rcx),%rcx */
    static const uint8_t store_index[] = {0x48, 0x89, 0x0c, 0x25};    /* mov %rcx,%gs:d */
    static const uint8_t skip_flush[] = {0xe3, 0x02, 0xeb, 0x05};     /* jrcxz 1f; jmp 2f */
    static const uint8_t restore[] = {0x48, 0x8b, 0x0c, 0x24,         /* mov (%rsp),%rcx */
                                      0x48, 0x8b, 0x44, 0x24, 0x08};  /* mov 8(%rsp),%rax */
    emit_gs(out, load_index, sizeof load_index, index);
    emit_gs(out, store_addr, sizeof store_addr, end);
    emit_gs(out, store_imm, sizeof store_imm, end + 8);
    rw_buf_u32(out, t->code);
    emit_gs(out, store_imm, sizeof store_imm, end + 12);
    rw_buf_u32(out, (uint32_t)t->size | (uint32_t)t->kind << 16);
    rw_buf_put(out, step, sizeof step);
    emit_gs(out, store_index, sizeof store_index, index);
    rw_buf_put(out, skip_flush, sizeof skip_flush);
    uint64_t next = at + (out->len - start) + 5;
    int64_t d = (int64_t)(c->timer_entry[MT_RT_TIMER_TRACE_FLUSH] - next);
    if (d < INT32_MIN || d > INT32_MAX) {
        mt_error_set(err, "%s: the trace flush is out of rel32 range", c->in->path);
        return false;
    }
    rw_buf_u8(out, 0xe8);
    rw_buf_u32(out, (uint32_t)(int32_t)d);
    rw_buf_put(out, restore, sizeof restore);
    return true;
}

bool rw_trace_emit(const rw_code *c, const rw_insn *ri, uint64_t vaddr, rw_buf *out,
                   mt_error *err)
{
    if (!ri->ntrace)
        return true;
    rw_buf_put(out, frame_enter, sizeof frame_enter);
    for (uint32_t k = 0; k < ri->ntrace; k++)
        if (!emit_ref(c, out, &c->trace_refs[ri->trace_first + k], vaddr + out->len, err))
            return false;
    rw_buf_put(out, frame_leave, sizeof frame_leave);
    return true;
}
