/* costmodel/classify.c — from one capstone-decoded instruction to what the
 * predictor needs: its class and width (latency, pipes), the register
 * families it reads and writes, its memory operand, dispatch slots.
 *
 * Classes come from the mnemonic (VEX/EVEX forms share the legacy name
 * after their leading 'v'), because capstone 4's per-operand access flags
 * are wrong for many SIMD forms (see analyzer/disasm.c); which operand is
 * written follows the Intel operand order instead: operand 0 is the
 * destination, read as well for two-operand legacy forms, written only for
 * three-operand VEX forms, and read only for compares and tests. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- register families ------------------------------------------------ */

static const char *const gpr_names[16][5] = {
    {"rax", "eax", "ax", "al", "ah"},   {"rcx", "ecx", "cx", "cl", "ch"},
    {"rdx", "edx", "dx", "dl", "dh"},   {"rbx", "ebx", "bx", "bl", "bh"},
    {"rsp", "esp", "sp", "spl", ""},    {"rbp", "ebp", "bp", "bpl", ""},
    {"rsi", "esi", "si", "sil", ""},    {"rdi", "edi", "di", "dil", ""},
};

static uint8_t family_of_name(const char *n)
{
    for (int f = 0; f < 8; f++)
        for (int k = 0; k < 5; k++)
            if (gpr_names[f][k][0] && strcmp(n, gpr_names[f][k]) == 0)
                return (uint8_t)(CM_REG_GPR0 + f);
    char *end;
    if (n[0] == 'r' && n[1] >= '0' && n[1] <= '9') {
        long v = strtol(n + 1, &end, 10);
        if (v >= 8 && v <= 15 && (!*end || !strcmp(end, "d") || !strcmp(end, "w") || !strcmp(end, "b")))
            return (uint8_t)(CM_REG_GPR0 + v);
    }
    if ((n[0] == 'x' || n[0] == 'y' || n[0] == 'z') && !strncmp(n + 1, "mm", 2)) {
        long v = strtol(n + 3, &end, 10);
        if (end != n + 3 && !*end && v >= 0 && v < 32)
            return (uint8_t)(CM_REG_VEC0 + v);
    }
    if (n[0] == 'k' && n[1] >= '0' && n[1] <= '7' && !n[2])
        return (uint8_t)(CM_REG_K0 + (n[1] - '0'));
    if (!strcmp(n, "rflags") || !strcmp(n, "eflags") || !strcmp(n, "flags"))
        return CM_REG_FLAGS;
    return CM_REG_NONE;
}

bool cm_decoder_open(cm_decoder *d)
{
    memset(d, 0, sizeof *d);
    if (!mt_x86_open(&d->cs))
        return false;
    if (!(d->insn = cs_malloc(d->cs))) {
        cs_close(&d->cs);
        return false;
    }
    for (unsigned r = 1; r < X86_REG_ENDING; r++) {
        const char *n = cs_reg_name(d->cs, r);
        d->reg_family[r] = n ? family_of_name(n) : CM_REG_NONE;
    }
    return true;
}

void cm_decoder_close(cm_decoder *d)
{
    if (d->insn)
        cs_free(d->insn, 1);
    if (d->cs)
        cs_close(&d->cs);
    memset(d, 0, sizeof *d);
}

/* ---- mnemonic tables ---------------------------------------------------- */

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool any_prefix(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (starts(s, *list))
            return true;
    return false;
}

static bool any_equal(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return true;
    return false;
}

static bool ends(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static bool is_double(const char *b) { return ends(b, "pd") || ends(b, "sd"); }

/* Class of a SIMD/FP mnemonic `b` (leading 'v' stripped); MT_IC_COUNT if
 * it is not one. */
static mt_iclass simd_class(const char *b)
{
    static const char *const shuf[] = {
        "pshuf", "punpck", "palignr", "pack", "pmovzx", "pmovsx", "perm", "pinsr", "pextr",
        "insert", "extract", "shufp", "unpck", "align", "pbroadcast", "broadcast", "compress",
        "expand", "movhl", "movlh", "movhp", "movlp", "movddup", "movshdup", "movsldup", "pslldq",
        "psrldq", "pmovqd", "pmovdb", "pmovdw", "pmovqb", "pmovqw", "pmovwb", NULL};
    static const char *const vshift[] = {"psll", "psrl", "psra", "prol", "pror", NULL};
    /* psadbw runs in the vector multiply pipes (3 cycles, two per cycle on
     * Zen 3), not as a multi-step horizontal op */
    static const char *const vimul[] = {"pmul", "pmadd", "psadbw", NULL};
    static const char *const horiz[] = {"hadd", "hsub", "phadd", "phsub", "dpp", "ptest",
                                        "testp", "mpsadbw", "phminpos", NULL};
    static const char *const fma[] = {"fmadd", "fmsub", "fnmadd", "fnmsub", NULL};
    static const char *const fadd[] = {"addp", "adds", "subp", "subs", "minp", "mins", "maxp",
                                       "maxs", "cmpp", "cmps", "ucomis", "comis", "roundp",
                                       "rounds", "addsubp", "rndscale", "getexp", "getmant",
                                       "reduce", "range", "fixupimm", "scalef", NULL};
    static const char *const vmov[] = {"movaps", "movups", "movapd", "movupd", "movdqa", "movdqu",
                                       "movntdq", "movntp", "movntdqa", NULL};
    if (starts(b, "gather") || starts(b, "pgather"))
        return MT_IC_GATHER;
    if (starts(b, "scatter") || starts(b, "pscatter"))
        return MT_IC_MICROCODE;
    if (any_prefix(b, fma))
        return MT_IC_FMA;
    if (starts(b, "mulp") || starts(b, "muls") || starts(b, "rcp") || starts(b, "rsqrt"))
        return MT_IC_FMUL;
    if (starts(b, "divp") || starts(b, "divs"))
        return is_double(b) ? MT_IC_FDIV64 : MT_IC_FDIV32;
    if (starts(b, "sqrtp") || starts(b, "sqrts"))
        return is_double(b) ? MT_IC_FSQRT64 : MT_IC_FSQRT32;
    if (starts(b, "cvt"))
        return MT_IC_CVT;
    if (any_prefix(b, horiz))
        return MT_IC_HORIZ;
    if (any_prefix(b, fadd))
        return MT_IC_FADD;
    if (any_prefix(b, vimul))
        return MT_IC_VIMUL;
    if (any_prefix(b, vshift))
        return MT_IC_VSHIFT;
    if (any_prefix(b, shuf))
        return MT_IC_SHUF;
    if (any_prefix(b, vmov))
        return MT_IC_VMOV;
    if (!strcmp(b, "movd") || !strcmp(b, "movq") || starts(b, "movmsk") || starts(b, "pmovmsk"))
        return MT_IC_GPR2VEC;
    if (!strcmp(b, "movss") || !strcmp(b, "movsd"))
        return MT_IC_VALU; /* register form merges: a blend */
    static const char *const valu[] = {"padd", "psub", "pand", "por", "pxor", "pcmp", "pmin",
                                       "pmax", "pabs", "pavg", "psign", "pblend", "pternlog",
                                       "andp", "orp", "xorp", "andnp", "blend", "movdq", "k",
                                       "pmov", "pconflict", "plzcnt", "popcnt", "pshld", "pshrd",
                                       "ptestm", "ptestnm", "pbroadcastm", NULL};
    if (any_prefix(b, valu))
        return MT_IC_VALU;
    return MT_IC_COUNT;
}

/* Class of a general-purpose mnemonic; MT_IC_COUNT if unknown. */
static mt_iclass gpr_class(const char *m, const cs_insn *insn)
{
    const cs_x86 *x = &insn->detail->x86;
    static const char *const shifts[] = {"shl", "shr", "sar", "sal", "rol", "ror", "rcl", "rcr",
                                         "shld", "shrd", "shlx", "shrx", "sarx", "rorx", NULL};
    static const char *const bitcnt[] = {"popcnt", "lzcnt", "tzcnt", "bsf", "bsr", NULL};
    if (any_equal(m, shifts))
        return MT_IC_SHIFT;
    if (any_equal(m, bitcnt))
        return MT_IC_BITCNT;
    if (starts(m, "cmov"))
        return MT_IC_CMOV;
    if (!strcmp(m, "imul"))
        return x->op_count == 1 ? MT_IC_MULWIDE : MT_IC_IMUL;
    if (!strcmp(m, "mul") || !strcmp(m, "mulx"))
        return MT_IC_MULWIDE;
    if (!strcmp(m, "div") || !strcmp(m, "idiv"))
        return x->op_count && x->operands[0].size >= 8 ? MT_IC_DIV64 : MT_IC_DIV32;
    if (!strcmp(m, "lea")) {
        const x86_op_mem *mem = &x->operands[1].mem;
        return mem->base != X86_REG_INVALID && mem->index != X86_REG_INVALID && mem->disp
                   ? MT_IC_LEA3
                   : MT_IC_LEA;
    }
    static const char *const micro[] = {"cpuid", "rdtsc", "rdtscp", "xchg", "cmpxchg", "xadd",
                                        "syscall", "pause", "lfence", "mfence", "sfence",
                                        "clflush", "bt", "bts", "btr", "btc", NULL};
    if (any_equal(m, micro))
        return MT_IC_MICROCODE;
    if (m[0] == 'f') /* x87 */
        return MT_IC_MICROCODE;
    return MT_IC_COUNT;
}

/* ---- operands ------------------------------------------------------------ */

typedef enum { DST_RW, DST_W, DST_R } dst_mode;

static dst_mode operand0_mode(const char *m, const char *b, bool vex, const cs_insn *insn)
{
    static const char *const read_only[] = {"cmp", "test", "bt", "ucomiss", "ucomisd", "comiss",
                                            "comisd", "ptest", "kortestw", "kortestb",
                                            "kortestd", "kortestq", "ktestw", "push", "testps",
                                            "testpd", NULL};
    static const char *const write_prefix[] = {"mov", "lea", "cvt", "set", "pop", "pshuf",
                                               "pmovzx", "pmovsx", "pmovmsk", "popcnt", "lzcnt",
                                               "tzcnt", "extract", "pextr", "sqrtp", "rcpp",
                                               "rsqrtp", "roundp", "andn", "bzhi", "bextr",
                                               "blsi", "blsr", "blsmsk", "pdep", "pext", "rorx",
                                               "sarx", "shlx", "shrx", "mulx", "broadcast",
                                               "pbroadcast", "lddqu", "bsf", "bsr", NULL};
    const cs_x86 *x = &insn->detail->x86;
    if (any_equal(b, read_only))
        return DST_R;
    if (vex) {
        static const char *const vex_rw[] = {"fmadd", "fmsub", "fnmadd", "fnmsub", "permi2",
                                             "permt2", "pdpbusd", "pdpwssd", "pternlog",
                                             "gather", "pgather", NULL};
        return any_prefix(b, vex_rw) ? DST_RW : DST_W;
    }
    if (any_prefix(m, write_prefix))
        return DST_W;
    if (!strcmp(m, "imul") && x->op_count == 3)
        return DST_W;
    return DST_RW;
}

static void add_reg(uint8_t *list, uint8_t *n, uint8_t max, uint8_t fam)
{
    if (fam == CM_REG_NONE)
        return;
    for (uint8_t i = 0; i < *n; i++)
        if (list[i] == fam)
            return;
    if (*n < max)
        list[(*n)++] = fam;
}

static void add_src(cm_insn *o, uint8_t fam) { add_reg(o->srcs, &o->nsrcs, CM_MAX_SRCS, fam); }
static void add_dst(cm_insn *o, uint8_t fam) { add_reg(o->dsts, &o->ndsts, CM_MAX_DSTS, fam); }

static mt_width width_of(const cs_insn *insn)
{
    const cs_x86 *x = &insn->detail->x86;
    unsigned widest = 0;
    for (unsigned i = 0; i < x->op_count; i++)
        if (x->operands[i].type == X86_OP_REG && x->operands[i].size > widest)
            widest = x->operands[i].size;
    return widest >= 64 ? MT_W512 : widest >= 32 ? MT_W256 : MT_W128;
}

static bool uses_vector_regs(const cm_decoder *d, const cs_insn *insn)
{
    const cs_x86 *x = &insn->detail->x86;
    for (unsigned i = 0; i < x->op_count; i++)
        if (x->operands[i].type == X86_OP_REG && d->reg_family[x->operands[i].reg] >= CM_REG_VEC0 &&
            d->reg_family[x->operands[i].reg] < CM_REG_FLAGS)
            return true;
    return false;
}

/* Registers and memory from the explicit operands. */
static void explicit_operands(const cm_decoder *d, const cs_insn *insn, dst_mode mode,
                              bool is_lea, cm_insn *o)
{
    const cs_x86 *x = &insn->detail->x86;
    for (unsigned i = 0; i < x->op_count; i++) {
        const cs_x86_op *op = &x->operands[i];
        if (op->type == X86_OP_REG) {
            uint8_t fam = d->reg_family[op->reg];
            if (i == 0 && mode != DST_R) {
                add_dst(o, fam);
                /* 8/16-bit writes merge into the old value. */
                if (mode == DST_RW || (fam >= CM_REG_GPR0 && fam < CM_REG_VEC0 && op->size < 4))
                    add_src(o, fam);
            } else {
                add_src(o, fam);
            }
        } else if (op->type == X86_OP_MEM) {
            bool rip = op->mem.base == X86_REG_RIP;
            o->mem.base = rip ? CM_REG_NONE : d->reg_family[op->mem.base];
            o->mem.index = d->reg_family[op->mem.index];
            o->mem.scale = (uint8_t)op->mem.scale;
            /* rip-relative operands name one absolute address */
            o->mem.disp = rip ? (int64_t)(insn->address + insn->size) + op->mem.disp : op->mem.disp;
            if (is_lea) {
                add_src(o, o->mem.base);
                add_src(o, o->mem.index);
            } else if (i == 0 && mode != DST_R) {
                o->store = true;
                o->load = o->load || mode == DST_RW;
            } else {
                o->load = true;
            }
        }
    }
}

static void implicit_registers(const cm_decoder *d, const cs_insn *insn, cm_insn *o)
{
    const cs_detail *det = insn->detail;
    for (unsigned i = 0; i < det->regs_read_count; i++) {
        uint8_t fam = d->reg_family[det->regs_read[i]];
        if (!(o->stack_op && fam == CM_REG_RSP))
            add_src(o, fam);
    }
    for (unsigned i = 0; i < det->regs_write_count; i++) {
        uint8_t fam = d->reg_family[det->regs_write[i]];
        if (!(o->stack_op && fam == CM_REG_RSP))
            add_dst(o, fam);
    }
}

/* xor r,r / sub r,r / pxor x,x / vxorps x,y,y and pcmpeq (all ones): the
 * result does not depend on the inputs. */
static bool is_zero_idiom(const char *b, bool vex, const cs_insn *insn)
{
    static const char *const idioms[] = {"xor", "sub", "pxor", "xorps", "xorpd", "psubb",
                                         "psubw", "psubd", "psubq", "pcmpeqb", "pcmpeqw",
                                         "pcmpeqd", "pxord", "pxorq", "sbb", NULL};
    const cs_x86 *x = &insn->detail->x86;
    if (!any_equal(b, idioms))
        return false;
    unsigned a = vex ? 1 : 0;
    return x->op_count >= a + 2 && x->operands[a].type == X86_OP_REG &&
           x->operands[a + 1].type == X86_OP_REG && x->operands[a].reg == x->operands[a + 1].reg &&
           strcmp(b, "sbb") != 0;
}

/* dst = src + constant: add/sub r,imm, inc, dec, lea disp(r), mov r,r. */
static void offset_arithmetic(const cm_decoder *d, const char *m, const cs_insn *insn, cm_insn *o)
{
    const cs_x86 *x = &insn->detail->x86;
    if (x->op_count < 1 || x->operands[0].type != X86_OP_REG || x->operands[0].size != 8)
        return;
    uint8_t dst = d->reg_family[x->operands[0].reg];
    const cs_x86_op *s = x->op_count > 1 ? &x->operands[1] : NULL;
    if ((!strcmp(m, "inc") || !strcmp(m, "dec")) && x->op_count == 1) {
        o->offset_move = true, o->offset_src = dst, o->offset = m[0] == 'i' ? 1 : -1;
    } else if ((!strcmp(m, "add") || !strcmp(m, "sub")) && s && s->type == X86_OP_IMM) {
        o->offset_move = true, o->offset_src = dst, o->offset = m[0] == 'a' ? s->imm : -s->imm;
    } else if (!strcmp(m, "lea") && s && s->mem.index == X86_REG_INVALID &&
               s->mem.base != X86_REG_RIP && s->mem.base != X86_REG_INVALID) {
        o->offset_move = true, o->offset_src = d->reg_family[s->mem.base], o->offset = s->mem.disp;
    } else if (!strcmp(m, "mov") && s && s->type == X86_OP_REG && s->size == 8) {
        o->offset_move = true, o->offset_src = d->reg_family[s->reg], o->offset = 0;
    }
    if (o->offset_move && (o->offset_src < CM_REG_GPR0 || o->offset_src >= CM_REG_VEC0))
        o->offset_move = false;
    /* Folded at rename (fold_latency): a constant added to a 64-bit
     * register, into the same register for add/sub/inc/dec; not a copy. */
    if (o->offset_move && strcmp(m, "mov") != 0 && o->offset > -FOLD_IMM_LIMIT &&
        o->offset < FOLD_IMM_LIMIT && dst != CM_REG_RSP && o->offset_src != CM_REG_RSP)
        o->foldable = true;
}

/* dst = a constant: mov $imm into a GPR of 4 or 8 bytes (a 4-byte write
 * zero-extends), and the zero idioms of GPRs. */
static void constant_value(const cm_decoder *d, const char *m, const cs_insn *insn, cm_insn *o)
{
    const cs_x86 *x = &insn->detail->x86;
    if (x->op_count < 1 || x->operands[0].type != X86_OP_REG || x->operands[0].size < 4)
        return;
    uint8_t dst = d->reg_family[x->operands[0].reg];
    if (dst < CM_REG_GPR0 || dst >= CM_REG_VEC0)
        return;
    if (o->zero_idiom) {
        o->const_move = true, o->const_value = 0;
    } else if ((!strcmp(m, "mov") || !strcmp(m, "movabs")) && x->op_count == 2 &&
               x->operands[1].type == X86_OP_IMM) {
        o->const_move = true;
        o->const_value = x->operands[0].size == 4 ? (int64_t)(uint32_t)x->operands[1].imm
                                                  : x->operands[1].imm;
    }
}

static bool has_group(const cs_insn *insn, uint8_t group)
{
    const cs_detail *det = insn->detail;
    for (unsigned i = 0; i < det->groups_count; i++)
        if (det->groups[i] == group)
            return true;
    return false;
}

/* Control transfers, stack operations and moves, which the class tables do
 * not describe. */
static void control_and_stack(const char *m, const cs_insn *insn, cm_insn *o)
{
    if (has_group(insn, X86_GRP_JUMP) || has_group(insn, X86_GRP_CALL) ||
        has_group(insn, X86_GRP_RET)) {
        o->branch = true;
        o->cls = MT_IC_BRANCH;
        o->cond_branch = has_group(insn, X86_GRP_JUMP) && insn->id != X86_INS_JMP;
    }
    if (!strcmp(m, "push") || !strcmp(m, "call")) {
        o->stack_op = true;
        o->store = true;
        o->mem = (cm_address){.base = CM_REG_RSP, .disp = -8};
    } else if (!strcmp(m, "pop") || !strcmp(m, "ret")) {
        o->stack_op = true;
        o->load = true;
        o->mem = (cm_address){.base = CM_REG_RSP};
    } else if (!strcmp(m, "leave")) {
        o->load = true;
        o->mem = (cm_address){.base = CM_REG_GPR0 + 5}; /* pop rbp after mov rsp, rbp */
    }
}

static void set_execution(cm_decoder *d, const char *m, const char *b, bool vex, cm_insn *o)
{
    const cs_insn *insn = d->insn;
    const cs_x86 *x = &insn->detail->x86;
    bool vector = uses_vector_regs(d, insn);
    mt_iclass c = o->branch ? MT_IC_BRANCH : MT_IC_COUNT;
    if (c == MT_IC_COUNT && (vex || vector || m[0] == 'p' || m[0] == 'k'))
        c = simd_class(b);
    if (c == MT_IC_COUNT)
        c = gpr_class(m, insn);
    if (c == MT_IC_COUNT)
        c = vector ? MT_IC_VALU : MT_IC_ALU;
    o->cls = (uint8_t)c;
    o->executes = true;
    bool reg_to_reg = x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
                      x->operands[1].type == X86_OP_REG;
    bool pure_move = !strcmp(m, "mov") || c == MT_IC_VMOV || starts(b, "broadcast") ||
                     starts(b, "pbroadcast") || !strcmp(m, "movzx") || !strcmp(m, "movsx") ||
                     !strcmp(m, "movsxd") || !strcmp(b, "movd") || !strcmp(b, "movq") ||
                     !strcmp(b, "movss") || !strcmp(b, "movsd") || !strcmp(b, "movddup") ||
                     !strcmp(m, "push") || !strcmp(m, "pop");
    /* Loads and stores of a move are the whole instruction. */
    if (pure_move && (o->load || o->store))
        o->executes = false;
    /* Full-width register copies are renamed, not executed. */
    if ((!strcmp(m, "mov") && reg_to_reg && x->operands[0].size >= 4) ||
        (c == MT_IC_VMOV && reg_to_reg))
        o->eliminated = true, o->executes = false;
    if (!strcmp(m, "nop") || !strcmp(m, "endbr64") || starts(m, "prefetch") ||
        !strcmp(b, "zeroupper"))
        o->executes = false, o->nsrcs = o->ndsts = 0, o->load = o->store = false;
    if (o->branch && !strcmp(m, "call"))
        o->executes = true;
}

static uint8_t macro_ops_of(const cm_insn *o, const char *m)
{
    switch (o->cls) {
    case MT_IC_MULWIDE: case MT_IC_DIV32: case MT_IC_DIV64:
        return 2;
    case MT_IC_GATHER:
        return 8;
    case MT_IC_MICROCODE:
        return 4;
    default:
        break;
    }
    if (!strcmp(m, "call") || !strcmp(m, "leave") || (o->load && o->store && o->executes))
        return 2;
    return 1;
}

unsigned cm_classify(cm_decoder *d, const uint8_t *code, size_t avail, uint64_t addr,
                     cm_insn *o)
{
    size_t size = avail > 15 ? 15 : avail;
    uint64_t a = addr;
    const uint8_t *p = code;
    memset(o, 0, sizeof *o);
    if (!mt_x86_decode_iter(d->cs, &p, &size, &a, d->insn))
        return 0;
    const cs_insn *insn = d->insn;
    char m[32];
    snprintf(m, sizeof m, "%s", insn->mnemonic);
    char *space = strrchr(m, ' '); /* "lock add", "rep movsb", "notrack jmp" */
    bool prefixed = space != NULL;
    if (space)
        memmove(m, space + 1, strlen(space));
    bool vex = m[0] == 'v' && strncmp(m, "ver", 3) != 0;
    const char *b = vex ? m + 1 : m;
    dst_mode mode = operand0_mode(m, b, vex, insn);
    control_and_stack(m, insn, o);
    if (o->branch)
        mode = DST_R;
    explicit_operands(d, insn, mode, !strcmp(m, "lea"), o);
    implicit_registers(d, insn, o);
    set_execution(d, m, b, vex, o);
    if (prefixed && strncmp(insn->mnemonic, "notrack", 7) != 0 &&
        strncmp(insn->mnemonic, "bnd", 3) != 0)
        o->cls = MT_IC_MICROCODE, o->executes = true;
    o->width = (uint8_t)width_of(insn);
    if (is_zero_idiom(b, vex, insn)) {
        o->zero_idiom = true;
        o->executes = false;
        o->nsrcs = 0;
    }
    offset_arithmetic(d, m, insn, o);
    constant_value(d, m, insn, o);
    o->fusible = (!strcmp(m, "cmp") || !strcmp(m, "test")) &&
                 !(o->load && insn->detail->x86.op_count == 2 &&
                   insn->detail->x86.operands[1].type == X86_OP_IMM);
    /* add/sub/and/inc/dec of a register (not read-modify-write memory)
     * fuse with a following jcc on Intel's cores since Sandy Bridge */
    o->fusible_alu = (!strcmp(m, "add") || !strcmp(m, "sub") || !strcmp(m, "and") ||
                      !strcmp(m, "inc") || !strcmp(m, "dec")) &&
                     !o->store && !(o->load && insn->detail->x86.op_count == 2 &&
                                    insn->detail->x86.operands[1].type == X86_OP_IMM);
    o->macro_ops = macro_ops_of(o, m);
    return insn->size;
}
