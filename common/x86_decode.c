/* common/x86_decode.c — capstone 4, then Zydis 4 for what capstone rejects.
 *
 * What a Zydis decode fills in the cs_insn, and why that is enough:
 *   - id: capstone's id of the same mnemonic (from capstone's own
 *     cs_insn_name table), else MT_X86_INS_OTHER.  Consumers switch on ids
 *     for control flow, the stack and a few integer idioms, all of which
 *     capstone decodes itself; what reaches Zydis is vector, mask and
 *     system code (kmov, vpcmp*, vptestm*, rdpkru).
 *   - address, size, bytes; mnemonic with its prefixes and op_str in Intel
 *     syntax (the syntax capstone's handles use here: one reading in every
 *     listing).  The cost model classifies by mnemonic.
 *   - detail->x86.operands: the operands Zydis prints, in Intel order
 *     (destination first, as capstone), the EVEX mask register as its own
 *     read operand after the destination with avx_zero_opmask for {z} (as
 *     capstone 4 does for the AVX-512 forms it knows); register by name;
 *     memory base/index/scale/disp, segment only when a prefix names one
 *     (as capstone), broadcast; immediates sign-extended, relative ones
 *     made absolute (branch targets, as capstone); size in bytes; access
 *     READ/WRITE from Zydis' actions, a conditional read or write (masked)
 *     counting as one.  CFG flow, memory access counts (analyzer/disasm.c)
 *     and the tracer (rewriter/trace.c) read these: a masked load or store
 *     counts one access per execution and is traced as one reference of the
 *     whole operand, whatever lanes the mask enables (the mask is known only
 *     at run time; Cachegrind also counts a vector access once).
 *   - regs_read/regs_write: the registers of hidden operands (rflags, the
 *     stack pointer, rdpkru's ecx/eax/edx), so cs_regs_access gives
 *     liveness, register families and the rsp check their whole story.
 *   - eflags: tested/modified/set/reset/undefined status flags and DF,
 *     which liveness reads to decide whether a probe must save flags
 *     (kortest, ktest write ZF and CF).
 *   - groups: jump, call, ret, int, relative branch and AVX512.
 *   - prefix, rex, addr_size, modrm, sib, disp and encoding (modrm, disp
 *     and immediate offsets and sizes): relocation finds a rip-relative
 *     displacement at encoding.disp_offset, which Zydis knows for EVEX too.
 *     opcode: legacy escapes and the opcode byte; for VEX/EVEX/XOP the
 *     escape byte (62, c4, c5, 8f) first, so that legacy-opcode tests
 *     (string instructions, jcc conditions) never match it.
 * Not filled: sse_cc/avx_cc/xop_cc, avx_sae, avx_rm and the capstone groups
 * of ISA subsets (bwi, vlx...): no consumer reads them.  A register
 * capstone 4 cannot name (none among general, vector, mask, segment and
 * flags registers) is X86_REG_INVALID. */
#define _GNU_SOURCE
#include "x86_decode.h"

#include <Zydis/Zydis.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Built once per process; read-only afterwards, so every thread's decoder
 * shares it (Zydis decodes into the caller's structures). */
static struct {
    bool ok;
    ZydisDecoder decoder;
    ZydisFormatter formatter;
    uint16_t mnemonic_id[ZYDIS_MNEMONIC_MAX_VALUE + 1];
    uint16_t reg_id[ZYDIS_REGISTER_MAX_VALUE + 1];
} zy;
static pthread_once_t zy_once = PTHREAD_ONCE_INIT;

typedef struct {
    const char *name;
    unsigned id;
} named_id;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const named_id *)a)->name, ((const named_id *)b)->name);
}

/* capstone's names of ids 1..end-1, sorted for bsearch. */
static named_id *capstone_names(csh h, unsigned end, const char *(*name_of)(csh, unsigned),
                                size_t *n)
{
    named_id *t = mt_xmalloc(end * sizeof *t);
    *n = 0;
    for (unsigned id = 1; id < end; id++) {
        const char *s = name_of(h, id);
        if (s && *s)
            t[(*n)++] = (named_id){s, id};
    }
    qsort(t, *n, sizeof *t, by_name);
    return t;
}

static unsigned find_name(const named_id *t, size_t n, const char *name)
{
    named_id key = {name, 0};
    const named_id *hit = name ? bsearch(&key, t, n, sizeof *t, by_name) : NULL;
    return hit ? hit->id : 0;
}

static void init_zydis(void)
{
    csh h;
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
        return;
    size_t ni, nr;
    named_id *insns = capstone_names(h, X86_INS_ENDING, cs_insn_name, &ni);
    named_id *regs = capstone_names(h, X86_REG_ENDING, cs_reg_name, &nr);
    for (int m = 1; m <= ZYDIS_MNEMONIC_MAX_VALUE; m++) {
        unsigned id = find_name(insns, ni, ZydisMnemonicGetString((ZydisMnemonic)m));
        zy.mnemonic_id[m] = (uint16_t)(id ? id : MT_X86_INS_OTHER);
    }
    for (int r = 1; r <= ZYDIS_REGISTER_MAX_VALUE; r++)
        zy.reg_id[r] = (uint16_t)find_name(regs, nr, ZydisRegisterGetString((ZydisRegister)r));
    /* capstone names its one flags register "rflags" whatever the width. */
    zy.reg_id[ZYDIS_REGISTER_FLAGS] = zy.reg_id[ZYDIS_REGISTER_EFLAGS] = X86_REG_EFLAGS;
    zy.reg_id[ZYDIS_REGISTER_RFLAGS] = X86_REG_EFLAGS;
    free(insns);
    free(regs);
    cs_close(&h);
    zy.ok = ZYAN_SUCCESS(ZydisDecoderInit(&zy.decoder, ZYDIS_MACHINE_MODE_LONG_64,
                                          ZYDIS_STACK_WIDTH_64)) &&
            ZYAN_SUCCESS(ZydisFormatterInit(&zy.formatter, ZYDIS_FORMATTER_STYLE_INTEL));
}

bool mt_x86_open(csh *h)
{
    pthread_once(&zy_once, init_zydis);
    if (!zy.ok || cs_open(CS_ARCH_X86, CS_MODE_64, h) != CS_ERR_OK)
        return false;
    if (cs_option(*h, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK) {
        cs_close(h);
        return false;
    }
    return true;
}

/* ---- filling a cs_insn from Zydis ---------------------------------------- */

static x86_reg cs_reg(ZydisRegister r)
{
    return r > ZYDIS_REGISTER_NONE && r <= ZYDIS_REGISTER_MAX_VALUE ? (x86_reg)zy.reg_id[r]
                                                                    : X86_REG_INVALID;
}

static uint8_t access_of(ZydisOperandActions a)
{
    return (uint8_t)(((a & ZYDIS_OPERAND_ACTION_MASK_READ) ? CS_AC_READ : 0) |
                     ((a & ZYDIS_OPERAND_ACTION_MASK_WRITE) ? CS_AC_WRITE : 0));
}

static x86_avx_bcast broadcast_of(ZydisBroadcastMode m)
{
    switch (m) {
    case ZYDIS_BROADCAST_MODE_1_TO_2: return X86_AVX_BCAST_2;
    case ZYDIS_BROADCAST_MODE_1_TO_4: return X86_AVX_BCAST_4;
    case ZYDIS_BROADCAST_MODE_1_TO_8: return X86_AVX_BCAST_8;
    case ZYDIS_BROADCAST_MODE_1_TO_16: return X86_AVX_BCAST_16;
    default: return X86_AVX_BCAST_INVALID;
    }
}

static void add_reg(uint16_t *list, uint8_t *n, size_t cap, x86_reg r)
{
    if (r == X86_REG_INVALID)
        return;
    for (uint8_t i = 0; i < *n; i++)
        if (list[i] == r)
            return;
    if (*n < cap)
        list[(*n)++] = (uint16_t)r;
}

/* A hidden operand: its registers become implicit reads and writes. */
static void add_hidden(cs_detail *d, const ZydisDecodedOperand *o)
{
    uint8_t acc = access_of(o->actions);
    if (o->type == ZYDIS_OPERAND_TYPE_REGISTER) {
        if (acc & CS_AC_READ)
            add_reg(d->regs_read, &d->regs_read_count, MT_ARRAY_LEN(d->regs_read), cs_reg(o->reg.value));
        if (acc & CS_AC_WRITE)
            add_reg(d->regs_write, &d->regs_write_count, MT_ARRAY_LEN(d->regs_write),
                    cs_reg(o->reg.value));
    } else if (o->type == ZYDIS_OPERAND_TYPE_MEMORY) {
        add_reg(d->regs_read, &d->regs_read_count, MT_ARRAY_LEN(d->regs_read), cs_reg(o->mem.base));
        add_reg(d->regs_read, &d->regs_read_count, MT_ARRAY_LEN(d->regs_read), cs_reg(o->mem.index));
    }
}

static void fill_operand(const ZydisDecodedInstruction *zi, const ZydisDecodedOperand *o,
                         uint64_t address, cs_x86_op *op)
{
    memset(op, 0, sizeof *op);
    op->size = (uint8_t)(o->size / 8);
    op->access = access_of(o->actions);
    switch (o->type) {
    case ZYDIS_OPERAND_TYPE_REGISTER:
        op->type = X86_OP_REG;
        op->reg = cs_reg(o->reg.value);
        /* {z} as written (EVEX.z): a compare into a mask register zeroes
         * masked-off bits without it, and capstone and objdump say no {z}. */
        if (o->encoding == ZYDIS_OPERAND_ENCODING_MASK)
            op->avx_zero_opmask = zi->encoding == ZYDIS_INSTRUCTION_ENCODING_EVEX && zi->raw.evex.z;
        break;
    case ZYDIS_OPERAND_TYPE_MEMORY:
        op->type = X86_OP_MEM;
        op->mem.segment = (zi->attributes & ZYDIS_ATTRIB_HAS_SEGMENT) ? cs_reg(o->mem.segment)
                                                                       : X86_REG_INVALID;
        op->mem.base = cs_reg(o->mem.base);
        op->mem.index = cs_reg(o->mem.index);
        op->mem.scale = o->mem.scale ? o->mem.scale : 1;
        op->mem.disp = o->mem.disp.has_displacement ? o->mem.disp.value : 0;
        op->avx_bcast = broadcast_of(zi->avx.broadcast.mode);
        break;
    case ZYDIS_OPERAND_TYPE_POINTER:
        op->type = X86_OP_IMM;
        op->imm = o->ptr.offset;
        break;
    case ZYDIS_OPERAND_TYPE_IMMEDIATE: {
        op->type = X86_OP_IMM;
        ZyanU64 target;
        if (o->imm.is_relative && ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(zi, o, address, &target)))
            op->imm = (int64_t)target;
        else
            op->imm = o->imm.is_signed ? o->imm.value.s : (int64_t)o->imm.value.u;
        break;
    }
    default:
        op->type = X86_OP_INVALID;
        break;
    }
}

static void add_group(cs_detail *d, uint8_t g)
{
    if (d->groups_count < MT_ARRAY_LEN(d->groups))
        d->groups[d->groups_count++] = g;
}

static bool relative_branch(const ZydisDecodedInstruction *zi)
{
    return (zi->attributes & ZYDIS_ATTRIB_IS_RELATIVE) != 0;
}

static void fill_groups(const ZydisDecodedInstruction *zi, cs_detail *d)
{
    switch (zi->meta.category) {
    case ZYDIS_CATEGORY_COND_BR:
    case ZYDIS_CATEGORY_UNCOND_BR:
        add_group(d, X86_GRP_JUMP);
        break;
    case ZYDIS_CATEGORY_CALL:
        add_group(d, X86_GRP_CALL);
        break;
    case ZYDIS_CATEGORY_RET:
        add_group(d, X86_GRP_RET);
        break;
    case ZYDIS_CATEGORY_INTERRUPT:
        add_group(d, X86_GRP_INT);
        break;
    default:
        break;
    }
    if (relative_branch(zi) && d->groups_count)
        add_group(d, X86_GRP_BRANCH_RELATIVE);
    const char *isa = ZydisISASetGetString(zi->meta.isa_set);
    if (zi->encoding == ZYDIS_INSTRUCTION_ENCODING_EVEX || (isa && !strncmp(isa, "AVX512", 6)))
        add_group(d, X86_GRP_AVX512);
}

/* Zydis' flag masks onto capstone's X86_EFLAGS_* bits. */
static uint64_t eflags_of(const ZydisAccessedFlags *f)
{
    static const struct {
        uint32_t zydis;
        uint64_t test, modify, reset, set, undefined;
    } map[] = {
        {ZYDIS_CPUFLAG_OF, X86_EFLAGS_TEST_OF, X86_EFLAGS_MODIFY_OF, X86_EFLAGS_RESET_OF,
         X86_EFLAGS_SET_OF, X86_EFLAGS_UNDEFINED_OF},
        {ZYDIS_CPUFLAG_SF, X86_EFLAGS_TEST_SF, X86_EFLAGS_MODIFY_SF, X86_EFLAGS_RESET_SF,
         X86_EFLAGS_SET_SF, X86_EFLAGS_UNDEFINED_SF},
        {ZYDIS_CPUFLAG_ZF, X86_EFLAGS_TEST_ZF, X86_EFLAGS_MODIFY_ZF, X86_EFLAGS_RESET_ZF,
         X86_EFLAGS_SET_ZF, X86_EFLAGS_UNDEFINED_ZF},
        {ZYDIS_CPUFLAG_AF, X86_EFLAGS_TEST_AF, X86_EFLAGS_MODIFY_AF, X86_EFLAGS_RESET_AF,
         X86_EFLAGS_SET_AF, X86_EFLAGS_UNDEFINED_AF},
        {ZYDIS_CPUFLAG_PF, X86_EFLAGS_TEST_PF, X86_EFLAGS_MODIFY_PF, X86_EFLAGS_RESET_PF,
         X86_EFLAGS_SET_PF, X86_EFLAGS_UNDEFINED_PF},
        {ZYDIS_CPUFLAG_CF, X86_EFLAGS_TEST_CF, X86_EFLAGS_MODIFY_CF, X86_EFLAGS_RESET_CF,
         X86_EFLAGS_SET_CF, X86_EFLAGS_UNDEFINED_CF},
        {ZYDIS_CPUFLAG_DF, X86_EFLAGS_TEST_DF, X86_EFLAGS_MODIFY_DF, X86_EFLAGS_RESET_DF,
         X86_EFLAGS_SET_DF, 0},
    };
    uint64_t e = 0;
    for (size_t i = 0; f && i < MT_ARRAY_LEN(map); i++) {
        uint32_t z = map[i].zydis;
        e |= ((f->tested & z) ? map[i].test : 0) | ((f->modified & z) ? map[i].modify : 0) |
             ((f->set_0 & z) ? map[i].reset : 0) | ((f->set_1 & z) ? map[i].set : 0) |
             ((f->undefined & z) ? map[i].undefined : 0);
    }
    return e;
}

static void fill_opcode(const ZydisDecodedInstruction *zi, const uint8_t *code, cs_x86 *x)
{
    uint8_t k = 0;
    switch (zi->encoding) {
    case ZYDIS_INSTRUCTION_ENCODING_VEX: x->opcode[k++] = code[zi->raw.vex.offset]; break;
    case ZYDIS_INSTRUCTION_ENCODING_EVEX: x->opcode[k++] = code[zi->raw.evex.offset]; break;
    case ZYDIS_INSTRUCTION_ENCODING_XOP: x->opcode[k++] = code[zi->raw.xop.offset]; break;
    case ZYDIS_INSTRUCTION_ENCODING_MVEX: x->opcode[k++] = code[zi->raw.mvex.offset]; break;
    default:
        if (zi->opcode_map != ZYDIS_OPCODE_MAP_DEFAULT)
            x->opcode[k++] = 0x0f;
        if (zi->opcode_map == ZYDIS_OPCODE_MAP_0F38)
            x->opcode[k++] = 0x38;
        else if (zi->opcode_map == ZYDIS_OPCODE_MAP_0F3A)
            x->opcode[k++] = 0x3a;
        break;
    }
    x->opcode[k] = zi->opcode;
}

/* capstone's prefix slots: rep/lock, segment, operand size, address size. */
static void fill_prefixes(const ZydisDecodedInstruction *zi, cs_x86 *x)
{
    for (uint8_t i = 0; i < zi->raw.prefix_count; i++) {
        uint8_t v = zi->raw.prefixes[i].value;
        if (zi->raw.prefixes[i].type != ZYDIS_PREFIX_TYPE_EFFECTIVE)
            continue;
        if (v == 0xf0 || v == 0xf2 || v == 0xf3)
            x->prefix[0] = v;
        else if (v == 0x2e || v == 0x36 || v == 0x3e || v == 0x26 || v == 0x64 || v == 0x65)
            x->prefix[1] = v;
        else if (v == 0x66)
            x->prefix[2] = v;
        else if (v == 0x67)
            x->prefix[3] = v;
    }
}

static void fill_encoding(const ZydisDecodedInstruction *zi, const uint8_t *code, cs_x86 *x)
{
    fill_prefixes(zi, x);
    fill_opcode(zi, code, x);
    if (zi->attributes & ZYDIS_ATTRIB_HAS_REX)
        x->rex = (uint8_t)(0x40 | zi->raw.rex.W << 3 | zi->raw.rex.R << 2 | zi->raw.rex.X << 1 |
                           zi->raw.rex.B);
    x->addr_size = (uint8_t)(zi->address_width / 8);
    if (zi->attributes & ZYDIS_ATTRIB_HAS_MODRM) {
        x->modrm = code[zi->raw.modrm.offset];
        x->encoding.modrm_offset = zi->raw.modrm.offset;
    }
    if (zi->attributes & ZYDIS_ATTRIB_HAS_SIB)
        x->sib = code[zi->raw.sib.offset];
    if (zi->raw.disp.size) {
        x->disp = zi->raw.disp.value;
        x->encoding.disp_offset = zi->raw.disp.offset;
        x->encoding.disp_size = (uint8_t)(zi->raw.disp.size / 8);
    }
    if (zi->raw.imm[0].size) {
        x->encoding.imm_offset = zi->raw.imm[0].offset;
        x->encoding.imm_size = (uint8_t)(zi->raw.imm[0].size / 8);
    }
}

/* mnemonic (with its prefixes, "lock add") and op_str, split as capstone
 * splits them: the formatted text up to the end of the mnemonic's name. */
static void fill_text(const ZydisDecodedInstruction *zi, const ZydisDecodedOperand *ops,
                      uint64_t address, cs_insn *insn)
{
    char full[256];
    insn->mnemonic[0] = insn->op_str[0] = '\0';
    if (!ZYAN_SUCCESS(ZydisFormatterFormatInstruction(&zy.formatter, zi, ops,
                                                      zi->operand_count_visible, full,
                                                      sizeof full, address, NULL)))
        return;
    const char *name = ZydisMnemonicGetString(zi->mnemonic);
    const char *at = name ? strstr(full, name) : NULL;
    size_t end = at ? (size_t)(at - full) + strlen(name) : strcspn(full, " ");
    snprintf(insn->mnemonic, sizeof insn->mnemonic, "%.*s", (int)end, full);
    const char *rest = full + end;
    while (*rest == ' ')
        rest++;
    snprintf(insn->op_str, sizeof insn->op_str, "%s", rest);
}

/* Zydis lists an EVEX instruction's mask even when it is k0 (no masking);
 * capstone lists none then. */
static bool no_mask(const ZydisDecodedOperand *o)
{
    return o->type == ZYDIS_OPERAND_TYPE_REGISTER && o->encoding == ZYDIS_OPERAND_ENCODING_MASK &&
           o->reg.value == ZYDIS_REGISTER_K0;
}

static bool zydis_decode(const uint8_t *code, size_t size, uint64_t address, cs_insn *insn)
{
    ZydisDecodedInstruction zi;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (!insn->detail ||
        !ZYAN_SUCCESS(ZydisDecoderDecodeFull(&zy.decoder, code, size, &zi, ops)))
        return false;
    insn->id = zy.mnemonic_id[zi.mnemonic];
    insn->address = address;
    insn->size = zi.length;
    memcpy(insn->bytes, code, zi.length);
    fill_text(&zi, ops, address, insn);
    cs_detail *d = insn->detail;
    memset(d, 0, sizeof *d);
    cs_x86 *x = &d->x86;
    fill_encoding(&zi, code, x);
    x->eflags = eflags_of(zi.cpu_flags);
    for (uint8_t i = 0; i < zi.operand_count; i++) {
        if (no_mask(&ops[i]))
            continue;
        if (i < zi.operand_count_visible && x->op_count < MT_ARRAY_LEN(x->operands))
            fill_operand(&zi, &ops[i], address, &x->operands[x->op_count++]);
        else
            add_hidden(d, &ops[i]);
    }
    fill_groups(&zi, d);
    return true;
}

/* ---- the entry points ----------------------------------------------------- */

bool mt_x86_decode_iter(csh h, const uint8_t **code, size_t *size, uint64_t *address,
                        cs_insn *insn)
{
    if (cs_disasm_iter(h, code, size, address, insn))
        return true;
    if (!*size || !zydis_decode(*code, *size, *address, insn))
        return false;
    *code += insn->size;
    *size -= insn->size;
    *address += insn->size;
    return true;
}

size_t mt_x86_decode(csh h, const uint8_t *code, size_t size, uint64_t address, size_t count,
                     cs_insn **insns)
{
    cs_insn *out = NULL;
    size_t n = 0, cap = 0;
    while (size > 0 && (count == 0 || n < count)) {
        cs_detail detail;
        cs_insn one = {.detail = &detail};
        if (!mt_x86_decode_iter(h, &code, &size, &address, &one))
            break;
        one.detail = mt_xmalloc(sizeof detail);
        memcpy(one.detail, &detail, sizeof detail);
        MT_PUSH(out, n, cap, one);
    }
    *insns = out;
    return n;
}

void mt_x86_free(cs_insn *insns, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(insns[i].detail);
    free(insns);
}
