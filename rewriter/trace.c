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
 *       mov %rax,%gs:END(,%rcx,8)
 *       movabs $CODE|(SIZE|KIND<<16|FLAGS<<24)<<32,%rax; mov %rax,%gs:END+8(,%rcx,8)
 *       lea 2(%rcx),%rcx; mov %rcx,%gs:INDEX
 *       jrcxz 1f; jmp 2f; 1: call mt_timer_trace_flush; 2:
 *       mov (%rsp),%rcx; mov 8(%rsp),%rax      the next operand may use them
 *     pop %rcx; pop %rax; lea 128(%rsp),%rsp
 *
 * Where the rewriter's liveness finds two general registers dead before
 * the instruction (and no loop counter in them), its records are made in
 * those, with neither the frame nor the restores (choose_registers), and
 * only the flush's call steps over the red zone: lea -128(%rsp),%rsp;
 * call; lea 128(%rsp),%rsp.  The index is %rcx when it is dead (jrcxz, the
 * flags untouched), else another where the flags are dead too (add $2 and
 * jnz).  A loop of the inserted sequence, least of 8 runs (Xeon family 6
 * model 85): 6.10 TSC ticks a record framed, 4.67 bare; the code and word
 * in one 8-byte store (movabs) instead of two 4-byte ones, 6.59 -> 6.10
 * (this core retires one store a cycle).  The framed records change no
 * flag (the flush saves them); the inserted code's own loads and stores
 * are never traced.  The
 * references: explicit memory operands (a read-write operand is one
 * MT_TRACE_MODIFY, Cachegrind's one write), the stack traffic of push, pop,
 * call, ret and leave, string instructions (rep movs/stos: %rsi, %rdi and
 * %rcx before the instruction; the reader expands them element by
 * element, as Valgrind runs them), gathers and scatters (below).  Flags
 * say which references are the stack's, thread-local, a call's or a ret's
 * return address: the reader keeps a shadow call stack with them, to name
 * stack frames and allocation call paths.  A call to an allocator the
 * runtime wraps is preceded by one more record, its CALL_SITE (the original
 * call's run-time address; a library copy's: its link-time address).  Not
 * traced, counted in the report: rep cmps/scas (they stop at the first
 * difference, so %rcx is not their count), operands of no stated size
 * (xsave) and 32-bit address forms.
 *
 * A gather or scatter has an address per vector element, which no `lea`
 * computes: its records are a group (timer/timer.h) the reader expands,
 * made from the registers as they are before the instruction (it clears
 * its mask as it goes):
 *     lea -64(%rsp),%rsp; vmovdqu INDEX,(%rsp)    the index vector
 *     lea BASE+DISP,%rax; record GATHER|SCATTER, element bytes
 *     kmovw %kN,%eax (AVX-512) | vmovmskps/pd MASK,%eax (AVX2); record VECTOR_MASK
 *     per 8 bytes of indices: mov 8q(%rsp),%rax; record VECTOR_INDEX
 *     lea 64(%rsp),%rsp
 * Nothing there changes the flags either. */
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

/* lea OPERAND,%dst for a base/index/scale/disp operand (no %rip); the
 * same length whatever dst (a REX prefix always). */
static void encode_lea(rw_buf *out, unsigned dst, unsigned base, unsigned index, unsigned scale,
                       int32_t disp)
{
    uint8_t rex = 0x48 | (dst >= 8 ? 4 : 0) | (index != NO_REG && index >= 8 ? 2 : 0) |
                  (base != NO_REG && base >= 8 ? 1 : 0);
    unsigned ss = scale == 8 ? 3 : scale == 4 ? 2 : scale == 2 ? 1 : 0, reg = (dst & 7) << 3;
    rw_buf_u8(out, rex);
    rw_buf_u8(out, 0x8d);
    if (base == NO_REG) { /* [index*scale + disp32] or [disp32] */
        rw_buf_u8(out, (uint8_t)(reg | 0x04));
        rw_buf_u8(out, (uint8_t)(ss << 6 | (index == NO_REG ? 4 : index & 7) << 3 | 5));
        rw_buf_u32(out, (uint32_t)disp);
        return;
    }
    unsigned mod = disp == 0 && (base & 7) != 5 ? 0 : disp >= -128 && disp <= 127 ? 1 : 2;
    bool sib = index != NO_REG || (base & 7) == 4;
    rw_buf_u8(out, (uint8_t)(mod << 6 | reg | (sib ? 4 : base & 7)));
    if (sib)
        rw_buf_u8(out, (uint8_t)(ss << 6 | (index == NO_REG ? 4 : index & 7) << 3 | (base & 7)));
    if (mod == 1)
        rw_buf_u8(out, (uint8_t)(int8_t)disp);
    else if (mod == 2)
        rw_buf_u32(out, (uint32_t)disp);
}

#define LEA_RIP_LEN 7 /* lea disp32(%rip),%rax */
#define FS_LEN 13     /* mov %fs:0,%rcx; lea (%rax,%rcx),%rax */
#define RECORD_LEN 68 /* from mov %gs:INDEX,%rcx to the two restores */
/* ... of a bare instruction's record (rw_insn's trace_form): no restores,
 * the flush's call past the red zone (lea -128(%rsp),%rsp; call; lea
 * 128(%rsp),%rsp: 13 bytes more); with the flags' form, `add $2` and a
 * 2-byte jnz instead of the lea and jrcxz's 4. */
#define BARE_RECORD_LEN (RECORD_LEN - 9 + 13)
#define FLAGS_RECORD_LEN (BARE_RECORD_LEN - 2)
/* Around the records: past the red zone, %rax and %rcx saved; back. */
static const uint8_t frame_enter[] = {0x48, 0x8d, 0x64, 0x24, 0x80, 0x50, 0x51};
static const uint8_t frame_leave[] = {0x59, 0x58, 0x48, 0x8d, 0xa4, 0x24, 0x80, 0, 0, 0};

static size_t lea_len(unsigned base, unsigned index, unsigned scale, int32_t disp)
{
    rw_buf b = {0};
    encode_lea(&b, 0, base, index, scale, disp);
    size_t n = b.len;
    rw_buf_free(&b);
    return n;
}

static bool vector_ref(const rw_trace_ref *t)
{
    return t->kind == MT_TRACE_GATHER || t->kind == MT_TRACE_SCATTER;
}

#define SCRATCH 64          /* bytes below the saved registers for an index vector */
#define SCRATCH_LEN 5       /* lea -64(%rsp),%rsp */
#define INDEX_LOAD_LEN 5    /* mov 8q(%rsp),%rax */

/* A gather's base + displacement, %rsp-based ones shifted by the scratch too. */
static int32_t vector_disp(const rw_trace_ref *t)
{
    return (int32_t)(t->disp + (t->base == 4 ? SCRATCH : 0));
}

/* 8-byte words of indices a gather's group records. */
static unsigned index_words(const rw_vsib *v) { return (v->elements * v->index_width + 7u) / 8u; }

static size_t vector_store_len(const rw_vsib *v)
{
    return v->index_reg < 16 && v->index_bytes <= 32 ? 5 : 7; /* VEX, else EVEX */
}

static size_t vector_ref_len(const rw_trace_ref *t)
{
    const rw_vsib *v = &t->vsib;
    unsigned words = index_words(v);
    return 2 * SCRATCH_LEN + vector_store_len(v) + lea_len(t->base, NO_REG, 1, vector_disp(t)) +
           (v->mask_form == RW_MASK_K ? 4 : 5) + words * INDEX_LOAD_LEN + (2 + words) * RECORD_LEN;
}

/* General registers by encoding number. */
enum { RAX, RCX, RSP = 4, RBP, RSI, RDI, R12 = 12, R13 };

/* The registers an instruction's records are made with (rw_insn's
 * trace_form, trace_addr, trace_index). */
typedef struct {
    uint8_t form, addr, index;
} record_regs;

static const record_regs framed_regs = {RW_TRACE_FRAMED, RAX, RCX};

static void set_record_regs(rw_insn *ri, record_regs r)
{
    ri->trace_form = r.form;
    ri->trace_addr = r.addr;
    ri->trace_index = r.index;
}

static size_t ref_len(const rw_trace_ref *t, uint8_t form)
{
    if (vector_ref(t))
        return vector_ref_len(t);
    size_t n = t->base == RIP_REG ? LEA_RIP_LEN
                                  : lea_len(t->base, t->index, t->scale, (int32_t)t->disp);
    return n + (t->fs ? FS_LEN : 0) +
           (form == RW_TRACE_FRAMED  ? RECORD_LEN
            : form == RW_TRACE_BARE ? BARE_RECORD_LEN
                                    : FLAGS_RECORD_LEN);
}

/* Adds reference `t` to instruction `ri` (its references are consecutive
 * in c->trace_refs).  A gather's or scatter's group needs the frame (its
 * index vector goes below the saved registers). */
static void add_ref(rw_code *c, rw_insn *ri, rw_trace_ref t)
{
    if (vector_ref(&t)) /* a vector instruction has no other reference */
        set_record_regs(ri, framed_regs);
    if (t.base == RSP && ri->trace_form == RW_TRACE_FRAMED) /* moved by the frame */
        t.disp += RED_ZONE + SAVED;
    if (t.base != RIP_REG && (t.disp < INT32_MIN || t.disp > INT32_MAX - SCRATCH)) {
        c->ntrace_untraced++;
        return;
    }
    if (!ri->ntrace)
        ri->trace_first = (uint32_t)c->ntrace_refs;
    MT_PUSH(c->trace_refs, c->ntrace_refs, c->cap_trace_refs, t);
    ri->ntrace++;
    ri->trace_len = (uint16_t)(ri->trace_len + ref_len(&t, ri->trace_form));
}

/* A stack reference at %rsp + disp (before the instruction). */
static rw_trace_ref stack_ref(uint32_t code, int64_t disp, uint8_t kind, uint8_t flags)
{
    return (rw_trace_ref){.kind = kind, .size = 8, .code = code, .base = 4, .index = NO_REG,
                          .scale = 1, .disp = disp, .flags = MT_TRACE_F_STACK | flags};
}

static rw_trace_ref reg_ref(uint32_t code, unsigned reg, uint16_t size, uint8_t kind)
{
    return (rw_trace_ref){.kind = kind, .size = size, .code = code, .base = (uint8_t)reg,
                          .index = NO_REG, .scale = 1};
}

/* String instructions (a4-a7, aa-af; a8 and a9 are `test $imm, %al/%eax`,
 * which touch no memory: taken for stos, they put a store to (%rdi) in the
 * trace, gzip's compress_block +18.7% D1 misses against Cachegrind): false
 * when `insn` is none. */
static bool plan_string(rw_code *c, rw_insn *ri, const cs_insn *insn, uint32_t code)
{
    const cs_x86 *x = &insn->detail->x86;
    uint8_t op = x->opcode[0];
    if (x->opcode[1] != 0 || op < 0xa4 || op > 0xaf || op == 0xa8 || op == 0xa9)
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
            c->ntrace_untraced++; /* xsave, 32-bit addresses, gather prefetches (Xeon Phi) */
            continue;
        }
        uint8_t kind = (o->access & CS_AC_READ) && (o->access & CS_AC_WRITE) ? MT_TRACE_MODIFY
                       : (o->access & CS_AC_WRITE)                           ? MT_TRACE_WRITE
                                                                             : MT_TRACE_READ;
        rw_trace_ref t = {.kind = kind, .size = o->size, .code = code, .base = (uint8_t)base,
                          .index = (uint8_t)index, .scale = (uint8_t)o->mem.scale,
                          .disp = o->mem.disp, .fs = fs,
                          .flags = (uint8_t)(fs ? MT_TRACE_F_TLS : base == 4 ? MT_TRACE_F_STACK : 0)};
        if (base == RIP_REG)
            t.disp = (int64_t)(insn->address + insn->size + (uint64_t)o->mem.disp);
        if (insn->id == X86_INS_POP && base == 4) /* its address is computed after the pop */
            t.disp += 8;
        add_ref(c, ri, t);
    }
}

/* Whether `insn` (a call) calls an allocator the runtime wraps: directly
 * (its PLT stub, or the procedure in a static program) or through its GOT
 * slot (-fno-plt). */
static bool calls_allocator(const rw_code *c, const cs_insn *insn)
{
    const cs_x86 *x = &insn->detail->x86;
    if (x->op_count != 1)
        return false;
    const cs_x86_op *o = &x->operands[0];
    uint64_t target = o->type == X86_OP_IMM ? (uint64_t)o->imm : 0;
    uint64_t slot = o->type == X86_OP_MEM && o->mem.base == X86_REG_RIP &&
                            o->mem.index == X86_REG_INVALID
                        ? insn->address + insn->size + (uint64_t)o->mem.disp
                        : 0;
    for (int w = MT_RT_WRAP_MALLOC; w < MT_RT_WRAP_SYSCALL; w++) /* the placement's after */
        if ((target && c->wrap_real[w] == target) || (slot && c->wrap_got[w] == slot))
            return true;
    return false;
}

/* The stack traffic of `insn` (its explicit operand, if any, comes first:
 * `push (mem)` reads it before writing the stack). */
static void plan_stack(rw_code *c, rw_insn *ri, const cs_insn *insn, uint32_t code)
{
    switch (insn->id) {
    case X86_INS_CALL:
        /* The site: a rip-relative lea of the call itself; in a library's
         * copy its link-time address (an absolute disp32), since the reader
         * knows the executable's load bias only (dataobj/map.c). */
        if (calls_allocator(c, insn))
            add_ref(c, ri, (rw_trace_ref){.kind = MT_TRACE_CALL_SITE, .size = 1, .code = code,
                                          .base = c->library ? NO_REG : RIP_REG,
                                          .index = NO_REG, .scale = 1,
                                          .disp = (int64_t)insn->address});
        add_ref(c, ri, stack_ref(code, -8, MT_TRACE_WRITE, MT_TRACE_F_CALL));
        break;
    case X86_INS_PUSH:
    case X86_INS_PUSHFQ:
        add_ref(c, ri, stack_ref(code, -8, MT_TRACE_WRITE, 0));
        break;
    case X86_INS_POP:
    case X86_INS_POPFQ:
        add_ref(c, ri, stack_ref(code, 0, MT_TRACE_READ, 0));
        break;
    case X86_INS_RET:
        add_ref(c, ri, stack_ref(code, 0, MT_TRACE_READ, MT_TRACE_F_RET));
        break;
    case X86_INS_LEAVE: {
        rw_trace_ref t = reg_ref(code, RBP, 8, MT_TRACE_READ);
        t.flags = MT_TRACE_F_STACK;
        add_ref(c, ri, t);
        break;
    }
    default:
        break;
    }
}

static bool legacy_prefix(uint8_t b)
{
    return b == 0x26 || b == 0x2e || b == 0x36 || b == 0x3e || b == 0x64 || b == 0x65 ||
           b == 0x66 || b == 0x67 || b == 0xf2 || b == 0xf3;
}

/* The fields of a VEX (C4) or EVEX (62) prefix a VSIB operand needs. */
typedef struct {
    bool evex;
    unsigned x, b, w, v_high, vvvv, aaa, vl; /* vl: vector bytes */
    const uint8_t *opcode;
} vex_fields;

/* False unless `b` starts with a VEX or EVEX prefix of opcode map 0F38. */
static bool decode_vex(const uint8_t *b, size_t n, vex_fields *f)
{
    if (n >= 7 && b[0] == 0x62 && (b[1] & 0x0f) == 2) {
        unsigned ll = (b[3] >> 5) & 3;
        *f = (vex_fields){.evex = true, .x = !(b[1] & 0x40), .b = !(b[1] & 0x20),
                          .w = b[2] >> 7, .v_high = !(b[3] & 0x08), .aaa = b[3] & 7,
                          .vl = ll == 3 ? 0 : 16u << ll, .opcode = b + 4};
        return f->vl != 0;
    }
    if (n >= 6 && b[0] == 0xc4 && (b[1] & 0x1f) == 2) {
        *f = (vex_fields){.x = !(b[1] & 0x40), .b = !(b[1] & 0x20), .w = b[2] >> 7,
                          .vvvv = (~b[2] >> 3) & 15, .vl = b[2] & 4 ? 32 : 16, .opcode = b + 3};
        return true;
    }
    return false;
}

/* Gathers and scatters (VEX/EVEX map 0F38, opcodes 90-93, EVEX A0-A3),
 * decoded from their bytes: capstone 4 gives a scatter's index as a
 * general register (vscatterdps (%rdx,%zmm2,4) as (%rdx,%rdx,4)).  False
 * when `ri` is none of them. */
static bool plan_vector(rw_code *c, rw_insn *ri, uint32_t code)
{
    const uint8_t *b = ri->bytes, *end = ri->bytes + ri->len;
    while (b < end && legacy_prefix(*b))
        b++;
    vex_fields f;
    if (!decode_vex(b, (size_t)(end - b), &f))
        return false;
    const uint8_t *p = f.opcode;
    uint8_t op = p[0], modrm = p[1], sib = p[2];
    bool scatter = f.evex && op >= 0xa0 && op <= 0xa3;
    if (!(op >= 0x90 && op <= 0x93) && !scatter)
        return false;
    if (modrm >> 6 == 3 || (modrm & 7) != 4)
        return false;
    unsigned mod = modrm >> 6, base = (sib & 7) | f.b << 3;
    unsigned iw = op & 1 ? 8 : 4, ew = f.w ? 8 : 4;
    int64_t disp = 0;
    const uint8_t *d = p + 3;
    if (mod == 0 && (sib & 7) == 5) {
        base = NO_REG;
        mod = 2;
    }
    if ((mod == 1 && d + 1 > end) || (mod == 2 && d + 4 > end))
        return false;
    if (mod == 1)
        disp = (int8_t)d[0] * (int64_t)(f.evex ? ew : 1); /* EVEX: disp8 x element size */
    else if (mod == 2)
        disp = (int32_t)((uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 |
                         (uint32_t)d[3] << 24);
    if (b != ri->bytes || (f.evex && f.aaa == 0)) { /* prefixed: segment, 32-bit address */
        c->ntrace_untraced++;
        return true;
    }
    unsigned elements = f.vl / (iw > ew ? iw : ew);
    rw_vsib v = {.index_reg = (uint8_t)(((sib >> 3) & 7) | f.x << 3 | f.v_high << 4),
                 .index_bytes = (uint8_t)(elements * iw < 16 ? 16 : elements * iw),
                 .index_width = (uint8_t)iw,
                 .elements = (uint8_t)elements,
                 .mask_reg = (uint8_t)(f.evex ? f.aaa : f.vvvv),
                 .mask_form = f.evex ? RW_MASK_K : ew == 4 ? RW_MASK_PS : RW_MASK_PD,
                 .mask_bytes = (uint8_t)(elements * ew < 16 ? 16 : elements * ew)};
    add_ref(c, ri, (rw_trace_ref){.kind = scatter ? MT_TRACE_SCATTER : MT_TRACE_GATHER,
                                  .size = (uint16_t)ew, .code = code, .base = (uint8_t)base,
                                  .index = NO_REG, .scale = (uint8_t)(1u << (sib >> 6)),
                                  .disp = disp, .vsib = v});
    return true;
}

/* Every reference of `insn`, in the order it makes them. */
static void plan_insn(rw_code *c, rw_insn *ri, const cs_insn *insn, uint32_t code)
{
    if (plan_string(c, ri, insn, code) || plan_vector(c, ri, code))
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

/* The registers instruction ri's records are made with, given what is
 * live before it (`live`: flags and general registers): two dead general
 * registers, the index %rcx when it is dead (jrcxz, the flags untouched)
 * or another when the flags are dead (add and jnz); else %rax and %rcx,
 * saved in the frame.  Never %rsp, %r12 (no index), %rbp or %r13 (a base
 * without displacement needs one: the fixed lengths).  What this rule
 * asks of liveness.c, which the counters asked less of, found three of
 * its gaps, now mended there: a call's operand registers, capstone 4's
 * carry readers (adc, sbb, ...), a block without successor (python3's
 * cold paths call procedures taken for noreturn that return). */
static void choose_registers(rw_insn *ri, unsigned live)
{
    unsigned busy = (live & RW_LIVE_GPRS) | RW_LIVE_GPR(RSP) | RW_LIVE_GPR(R12) |
                    RW_LIVE_GPR(RBP) | RW_LIVE_GPR(R13);
    bool flags_dead = !(live & (RW_LIVE_FLAGS | RW_LIVE_CF));
    int index = !(busy & RW_LIVE_GPR(RCX)) ? RCX : flags_dead ? rw_live_free_gpr(busy) : -1;
    int addr = index < 0 ? -1 : rw_live_free_gpr(busy | RW_LIVE_GPR(index));
    if (addr < 0)
        set_record_regs(ri, framed_regs);
    else
        set_record_regs(ri, (record_regs){index == RCX ? RW_TRACE_BARE : RW_TRACE_BARE_FLAGS,
                                          (uint8_t)addr, (uint8_t)index});
}

/* Chooses the registers of the instructions of block b (insns [first,
 * first + n)) from what the rewriter's liveness finds live before each,
 * a loop counter's register (relocate.c's loop registers) counted live
 * throughout its block.  Safe, not tight: a block that cannot be decoded
 * keeps every record framed. */
static void plan_registers(const rw_code *c, csh h, const mt_procedure *p, uint32_t b,
                           rw_insn *first, uint32_t n, const rw_live *bl, const rw_live_proc *lp)
{
    unsigned *live = mt_xcalloc(n + 1, sizeof *live);
    if (!rw_live_before(h, c->prog, p, bl, b, first, n, lp, live))
        for (uint32_t k = 0; k < n; k++)
            live[k] = ~0u;
    unsigned held = first->probe == RW_PROBE_LOOP_REGISTER ? RW_LIVE_GPR(first->loop_reg) : 0;
    for (uint32_t k = 0; k < n; k++)
        choose_registers(&first[k], live[k] | held);
    free(live);
}

void rw_trace_plan(rw_code *c, rw_insn *insns, uint32_t ninsns, uint32_t proc,
                   const uint32_t *block_first, const rw_live *bl, const rw_live_proc *lp)
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
        uint32_t code = c->code_base + mt_code_object_of_block(c->prog, proc, b, loops);
        uint32_t end = b + 1 < p->nblocks ? block_first[b + 1] : ninsns;
        plan_registers(c, h, p, b, &insns[block_first[b]], end - block_first[b], bl, lp);
        for (uint32_t k = block_first[b]; k < end; k++) {
            rw_insn *ri = &insns[k];
            const uint8_t *bytes = ri->bytes;
            size_t left = ri->len;
            uint64_t addr = ri->old;
            if (!mt_x86_decode_iter(h, &bytes, &left, &addr, insn))
                continue; /* decoded once already: cannot happen */
            plan_insn(c, ri, insn, code);
            c->ntrace_sites += ri->ntrace > 0;
            c->ntrace_bare += ri->ntrace > 0 && ri->trace_form != RW_TRACE_FRAMED;
        }
    }
    free(traced);
    cs_free(insn, 1);
}

size_t rw_trace_len(const rw_insn *ri)
{
    if (!ri->ntrace)
        return 0;
    bool framed = ri->trace_form == RW_TRACE_FRAMED;
    return (framed ? sizeof frame_enter + sizeof frame_leave : 0) + ri->trace_len;
}

/* A 64-bit move between register `reg` and %gs:disp32, or
 * %gs:disp32(,%index,8) (index NO_REG: none): `op` 8b loads, 89 stores;
 * 9 bytes whatever the registers. */
static void emit_gs_mov(rw_buf *out, uint8_t op, unsigned reg, unsigned index, uint32_t disp)
{
    rw_buf_u8(out, 0x65);
    rw_buf_u8(out, (uint8_t)(0x48 | (reg >= 8 ? 4 : 0) | (index != NO_REG && index >= 8 ? 2 : 0)));
    rw_buf_u8(out, op);
    rw_buf_u8(out, (uint8_t)((reg & 7) << 3 | 4));
    rw_buf_u8(out, (uint8_t)(index == NO_REG ? 0x25 : 0xc0 | (index & 7) << 3 | 5));
    rw_buf_u32(out, disp);
}

/* The record of a reference whose address (or value) is in the address
 * register: `word` is its size | kind << 16; `vaddr` is the link-time
 * address of out's start. */
static bool emit_record(const rw_code *c, rw_buf *out, uint32_t code, uint32_t word,
                        record_regs r, uint64_t vaddr, mt_error *err)
{
    uint64_t area = c->library ? MT_SLOT_TRACE_OFFSET(c->slot_ncounters, 0, c->slot_ncall_sites)
                               : MT_SLOT_TRACE_OFFSET(c->ncounters, c->ntimed, c->ncall_sites);
    uint32_t index = (uint32_t)(area + MT_TRACE_INDEX);
    uint32_t end = (uint32_t)(area + MT_TRACE_AREA_SIZE(MT_TRACE_RECORDS));
    static const uint8_t skip_flush[] = {0xe3, 0x02, 0xeb, 0x05};      /* jrcxz 1f; jmp 2f */
    static const uint8_t skip_bare_flush[] = {0xe3, 0x02, 0xeb, 0x12}; /* ... over 18 bytes */
    static const uint8_t restore[] = {0x48, 0x8b, 0x0c, 0x24,          /* mov (%rsp),%rcx */
                                      0x48, 0x8b, 0x44, 0x24, 0x08};   /* mov 8(%rsp),%rax */
    static const uint8_t below_red_zone[] = {0x48, 0x8d, 0x64, 0x24, 0x80}; /* lea -128(%rsp),%rsp */
    static const uint8_t above_red_zone[] = {0x48, 0x8d, 0xa4, 0x24, 0x80, 0, 0, 0}; /* lea 128(%rsp),%rsp */
    unsigned a = r.addr, i = r.index;
    emit_gs_mov(out, 0x8b, i, NO_REG, index);
    emit_gs_mov(out, 0x89, a, i, end);
    rw_buf_u8(out, (uint8_t)(0x48 | (a >= 8))); /* movabs: code and word in one store */
    rw_buf_u8(out, (uint8_t)(0xb8 | (a & 7)));
    rw_buf_u32(out, code);
    rw_buf_u32(out, word);
    emit_gs_mov(out, 0x89, a, i, end + 8);
    if (r.form == RW_TRACE_BARE_FLAGS) { /* add $2,%index; jnz 2f */
        uint8_t step[] = {(uint8_t)(0x48 | (i >= 8)), 0x83, (uint8_t)(0xc0 | (i & 7)), 2};
        rw_buf_put(out, step, sizeof step);
        emit_gs_mov(out, 0x89, i, NO_REG, index);
        uint8_t skip[] = {0x75, 0x12};
        rw_buf_put(out, skip, sizeof skip);
    } else { /* lea 2(%rcx),%rcx; jrcxz 1f; jmp 2f */
        static const uint8_t step[] = {0x48, 0x8d, 0x49, 0x02};
        rw_buf_put(out, step, sizeof step);
        emit_gs_mov(out, 0x89, i, NO_REG, index);
        if (r.form == RW_TRACE_FRAMED)
            rw_buf_put(out, skip_flush, sizeof skip_flush);
        else
            rw_buf_put(out, skip_bare_flush, sizeof skip_bare_flush);
    }
    if (r.form != RW_TRACE_FRAMED) /* the call's return address must miss the red zone */
        rw_buf_put(out, below_red_zone, sizeof below_red_zone);
    int64_t d = (int64_t)(c->timer_entry[MT_RT_TIMER_TRACE_FLUSH] - (vaddr + out->len + 5));
    if (d < INT32_MIN || d > INT32_MAX) {
        mt_error_set(err, "%s: the trace flush is out of rel32 range", c->in->path);
        return false;
    }
    rw_buf_u8(out, 0xe8);
    rw_buf_u32(out, (uint32_t)(int32_t)d);
    if (r.form != RW_TRACE_FRAMED)
        rw_buf_put(out, above_red_zone, sizeof above_red_zone);
    else
        rw_buf_put(out, restore, sizeof restore);
    return true;
}

/* A record's size, kind and flags word (timer.h's mt_trace_record). */
static uint32_t record_word(unsigned size, unsigned kind, unsigned flags)
{
    return size | kind << 16 | flags << 24;
}

/* vmovdqu (VEX) or vmovdqu64 (EVEX: registers 16-31, 64 bytes) of the
 * index vector's first v->index_bytes to (%rsp). */
static void emit_vector_store(rw_buf *out, const rw_vsib *v)
{
    unsigned r = v->index_reg, modrm = (r & 7) << 3 | 4;
    if (vector_store_len(v) == 5) {
        uint8_t vex[] = {0xc5, (uint8_t)((~r >> 3 & 1) << 7 | 0x78 | (v->index_bytes == 32) << 2 | 2),
                         0x7f, (uint8_t)modrm, 0x24};
        rw_buf_put(out, vex, sizeof vex);
        return;
    }
    unsigned ll = v->index_bytes == 64 ? 2 : v->index_bytes == 32 ? 1 : 0;
    uint8_t evex[] = {0x62, (uint8_t)((~r >> 3 & 1) << 7 | 0x60 | (~r >> 4 & 1) << 4 | 1), 0xfe,
                      (uint8_t)(ll << 5 | 0x08), 0x7f, (uint8_t)modrm, 0x24};
    rw_buf_put(out, evex, sizeof evex);
}

/* The mask, one bit per element, into %eax: kmovw %kN,%eax, or
 * vmovmskps/vmovmskpd of an AVX2 mask vector (its elements' sign bits). */
static void emit_mask(rw_buf *out, const rw_vsib *v)
{
    unsigned m = v->mask_reg;
    if (v->mask_form == RW_MASK_K) {
        uint8_t kmov[] = {0xc5, 0xf8, 0x93, (uint8_t)(0xc0 | m)};
        rw_buf_put(out, kmov, sizeof kmov);
        return;
    }
    uint8_t movmsk[] = {0xc4, (uint8_t)(0xc0 | (~m >> 3 & 1) << 5 | 1),
                        (uint8_t)(0x78 | (v->mask_bytes == 32) << 2 | (v->mask_form == RW_MASK_PD)),
                        0x50, (uint8_t)(0xc0 | (m & 7))};
    rw_buf_put(out, movmsk, sizeof movmsk);
}

/* A gather's or scatter's group of records (see the top of the file). */
static bool emit_vector_ref(const rw_code *c, rw_buf *out, const rw_trace_ref *t, uint64_t vaddr,
                            mt_error *err)
{
    static const uint8_t scratch_enter[] = {0x48, 0x8d, 0x64, 0x24, 0xc0}; /* lea -64(%rsp),%rsp */
    static const uint8_t scratch_leave[] = {0x48, 0x8d, 0x64, 0x24, 0x40}; /* lea 64(%rsp),%rsp */
    const rw_vsib *v = &t->vsib;
    rw_buf_put(out, scratch_enter, sizeof scratch_enter);
    emit_vector_store(out, v);
    encode_lea(out, 0, t->base, NO_REG, 1, vector_disp(t));
    if (!emit_record(c, out, t->code, record_word(t->size, t->kind, t->flags), framed_regs, vaddr,
                     err))
        return false;
    emit_mask(out, v);
    unsigned shape = v->elements | v->index_width << 8 | t->scale << 12;
    if (!emit_record(c, out, t->code, record_word(shape, MT_TRACE_VECTOR_MASK, 0), framed_regs,
                     vaddr, err))
        return false;
    for (unsigned q = 0; q < index_words(v); q++) {
        uint8_t load[] = {0x48, 0x8b, 0x44, 0x24, (uint8_t)(8 * q)}; /* mov 8q(%rsp),%rax */
        rw_buf_put(out, load, sizeof load);
        if (!emit_record(c, out, t->code, record_word(8, MT_TRACE_VECTOR_INDEX, 0), framed_regs,
                         vaddr, err))
            return false;
    }
    rw_buf_put(out, scratch_leave, sizeof scratch_leave);
    return true;
}

/* One record of reference `t`; `vaddr` is the link-time address of out's start. */
static bool emit_ref(const rw_code *c, rw_buf *out, const rw_trace_ref *t, record_regs r,
                     uint64_t vaddr, mt_error *err)
{
    if (vector_ref(t))
        return emit_vector_ref(c, out, t, vaddr, err);
    unsigned a = r.addr, i = r.index;
    if (t->base == RIP_REG) {
        int64_t d = (int64_t)((uint64_t)t->disp - (vaddr + out->len + LEA_RIP_LEN));
        if (d < INT32_MIN || d > INT32_MAX) {
            mt_error_set(err, "%s: traced operand 0x%llx out of rel32 range", c->in->path,
                         (unsigned long long)t->disp);
            return false;
        }
        uint8_t lea_rip[] = {(uint8_t)(0x48 | (a >= 8 ? 4 : 0)), 0x8d, (uint8_t)((a & 7) << 3 | 5)};
        rw_buf_put(out, lea_rip, sizeof lea_rip);
        rw_buf_u32(out, (uint32_t)(int32_t)d);
    } else {
        encode_lea(out, a, t->base, t->index, t->scale, (int32_t)t->disp);
    }
    if (t->fs) { /* mov %fs:0,%index; lea (%addr,%index),%addr */
        uint8_t fs_base[] = {0x64, (uint8_t)(0x48 | (i >= 8 ? 4 : 0)), 0x8b,
                             (uint8_t)((i & 7) << 3 | 4), 0x25, 0, 0, 0, 0,
                             (uint8_t)(0x48 | (a >= 8 ? 5 : 0) | (i >= 8 ? 2 : 0)), 0x8d,
                             (uint8_t)((a & 7) << 3 | 4), (uint8_t)((i & 7) << 3 | (a & 7))};
        rw_buf_put(out, fs_base, sizeof fs_base);
    }
    return emit_record(c, out, t->code, record_word(t->size, t->kind, t->flags), r, vaddr, err);
}

bool rw_trace_emit(const rw_code *c, const rw_insn *ri, uint64_t vaddr, rw_buf *out,
                   mt_error *err)
{
    if (!ri->ntrace)
        return true;
    record_regs r = {ri->trace_form, ri->trace_addr, ri->trace_index};
    if (r.form == RW_TRACE_FRAMED)
        rw_buf_put(out, frame_enter, sizeof frame_enter);
    for (uint32_t k = 0; k < ri->ntrace; k++)
        if (!emit_ref(c, out, &c->trace_refs[ri->trace_first + k], r, vaddr, err))
            return false;
    if (r.form == RW_TRACE_FRAMED)
        rw_buf_put(out, frame_leave, sizeof frame_leave);
    return true;
}
