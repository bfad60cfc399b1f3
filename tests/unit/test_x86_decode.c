/* tests/unit/test_x86_decode.c — common/x86_decode: AVX-512 and mask-register
 * instructions capstone 4 rejects (the evex string functions of glibc), and
 * a few it accepts, decoded through the project's one entry point.
 *
 * The bytes were assembled by GNU as; every expectation is objdump's reading
 * of them (AT&T there, so operand order is reversed here: capstone's Intel
 * order, destination first).  Decoding is static: this passes on any CPU. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "common/x86_decode.h"
#include "unit.h"

typedef struct {
    char type;          /* 'r' register, 'm' memory, 'i' immediate */
    const char *reg;    /* 'r': its name; 'm': the base */
    const char *index;  /* 'm' */
    int scale;          /* 'm' */
    int64_t value;      /* 'm': displacement; 'i': the immediate */
    unsigned size;      /* bytes; 0: not checked */
    uint8_t access;     /* CS_AC_*; 0xff: not checked */
    bool zero_mask;     /* 'r': {z} on a mask operand */
} want_op;

typedef struct {
    const char *objdump; /* objdump's line, for the messages */
    uint8_t bytes[15];
    uint8_t len;
    const char *mnemonic;
    bool avx512;
    const char *reads, *writes; /* cs_regs_access, space-separated, in any order */
    uint8_t nops;
    want_op ops[5];
} case_t;

#define R CS_AC_READ
#define W CS_AC_WRITE
#define RW (CS_AC_READ | CS_AC_WRITE)

static const case_t cases[] = {
    {"kmovd %k0,%eax", {0xc5, 0xfb, 0x93, 0xc0}, 4, "kmovd", true, "k0", "eax", 2,
     {{'r', "eax", 0, 0, 0, 4, W, 0}, {'r', "k0", 0, 0, 0, 0, R, 0}}},
    {"kmovq %rcx,%k1", {0xc4, 0xe1, 0xfb, 0x92, 0xc9}, 5, "kmovq", true, "rcx", "k1", 2,
     {{'r', "k1", 0, 0, 0, 0, W, 0}, {'r', "rcx", 0, 0, 0, 8, R, 0}}},
    {"vpcmpeqb (%rdi),%ymm16,%k0", {0x62, 0xf1, 0x7d, 0x20, 0x74, 0x07}, 6, "vpcmpeqb", true,
     "ymm16 rdi", "k0", 3,
     {{'r', "k0", 0, 0, 0, 0, W, 0}, {'r', "ymm16", 0, 0, 0, 32, R, 0},
      {'m', "rdi", NULL, 1, 0, 32, R, 0}}},
    {"vptestmb %ymm17,%ymm17,%k2", {0x62, 0xb2, 0x75, 0x20, 0x26, 0xd1}, 6, "vptestmb", true,
     "ymm17", "k2", 3,
     {{'r', "k2", 0, 0, 0, 0, W, 0}, {'r', "ymm17", 0, 0, 0, 32, R, 0},
      {'r', "ymm17", 0, 0, 0, 32, R, 0}}},
    {"vptestnmb %ymm17,%ymm17,%k2", {0x62, 0xb2, 0x76, 0x20, 0x26, 0xd1}, 6, "vptestnmb", true,
     "ymm17", "k2", 3,
     {{'r', "k2", 0, 0, 0, 0, W, 0}, {'r', "ymm17", 0, 0, 0, 32, R, 0},
      {'r', "ymm17", 0, 0, 0, 32, R, 0}}},
    {"vptestnmd %zmm1,%zmm1,%k3{%k1}", {0x62, 0xf2, 0x76, 0x49, 0x27, 0xd9}, 6, "vptestnmd", true,
     "k1 zmm1", "k3", 4,
     {{'r', "k3", 0, 0, 0, 0, W, 0}, {'r', "k1", 0, 0, 0, 0, R, false},
      {'r', "zmm1", 0, 0, 0, 64, R, 0}, {'r', "zmm1", 0, 0, 0, 64, R, 0}}},
    {"vpcmpeqb 0x40(%rdi,%rcx,2),%zmm16,%k0", {0x62, 0xf1, 0x7d, 0x40, 0x74, 0x44, 0x4f, 0x01}, 8,
     "vpcmpeqb", true, "zmm16 rdi rcx", "k0", 3,
     {{'r', "k0", 0, 0, 0, 0, W, 0}, {'r', "zmm16", 0, 0, 0, 64, R, 0},
      {'m', "rdi", "rcx", 2, 0x40, 64, R, 0}}},
    {"vpcmpneqb (%rdi),%ymm16,%k1{%k2}", {0x62, 0xf3, 0x7d, 0x22, 0x3f, 0x0f, 0x04}, 7, "vpcmpb",
     true, "k2 ymm16 rdi", "k1", 5,
     {{'r', "k1", 0, 0, 0, 0, W, 0}, {'r', "k2", 0, 0, 0, 0, R, false},
      {'r', "ymm16", 0, 0, 0, 32, R, 0}, {'m', "rdi", NULL, 1, 0, 32, R, 0},
      {'i', NULL, 0, 0, 4, 1, 0xff, 0}}},
    {"rdpkru", {0x0f, 0x01, 0xee}, 3, "rdpkru", false, "ecx", "eax edx", 0, {{0}}},
    {"vmovdqu8 (%rdi),%zmm0{%k1}{z}", {0x62, 0xf1, 0x7f, 0xc9, 0x6f, 0x07}, 6, "vmovdqu8", false,
     "k1 rdi", "zmm0", 3,
     {{'r', "zmm0", 0, 0, 0, 64, W, 0}, {'r', "k1", 0, 0, 0, 0, R, true},
      {'m', "rdi", NULL, 1, 0, 64, 0xff, 0}}},
    {"vpternlogd $0xde,%zmm1,%zmm2,%zmm3", {0x62, 0xf3, 0x6d, 0x48, 0x25, 0xd9, 0xde}, 7,
     "vpternlogd", true, "zmm3 zmm2 zmm1", "zmm3", 4,
     {{'r', "zmm3", 0, 0, 0, 64, RW, 0}, {'r', "zmm2", 0, 0, 0, 64, R, 0},
      {'r', "zmm1", 0, 0, 0, 64, R, 0}, {'i', NULL, 0, 0, 0xde, 1, 0xff, 0}}},
    {"kortestd %k0,%k1", {0xc4, 0xe1, 0xf9, 0x98, 0xc8}, 5, "kortestd", true, "k1 k0", "rflags",
     2, {{'r', "k1", 0, 0, 0, 0, R, 0}, {'r', "k0", 0, 0, 0, 0, R, 0}}},
    {"vpcompressd %zmm1,(%rdi){%k1}", {0x62, 0xf2, 0x7d, 0x49, 0x8b, 0x0f}, 6, "vpcompressd", true,
     "rdi k1", "", 3,
     {{'m', "rdi", NULL, 1, 0, 64, 0xff, 0}, {'r', "k1", 0, 0, 0, 0, R, false},
      {'r', "zmm1", 0, 0, 0, 64, 0xff, 0}}},
    {"vpcmpeqb 0x1234(%rip),%ymm16,%k1",
     {0x62, 0xf1, 0x7d, 0x20, 0x74, 0x0d, 0x34, 0x12, 0x00, 0x00}, 10, "vpcmpeqb", true,
     "ymm16 rip", "k1", 3,
     {{'r', "k1", 0, 0, 0, 0, W, 0}, {'r', "ymm16", 0, 0, 0, 32, R, 0},
      {'m', "rip", NULL, 1, 0x1234, 32, R, 0}}},
    {"vmovdqu64 0x1234(%rip),%zmm5",
     {0x62, 0xf1, 0xfe, 0x48, 0x6f, 0x2d, 0x34, 0x12, 0x00, 0x00}, 10, "vmovdqu64", true, "rip",
     "zmm5", 2, {{'r', "zmm5", 0, 0, 0, 64, W, 0}, {'m', "rip", NULL, 1, 0x1234, 64, R, 0}}},
};

static bool same_name(csh h, unsigned reg, const char *want)
{
    const char *n = reg ? cs_reg_name(h, reg) : NULL;
    return want ? n && !strcmp(n, want) : reg == X86_REG_INVALID;
}

static void check_operand(csh h, const case_t *c, unsigned k, const cs_x86_op *op)
{
    const want_op *w = &c->ops[k];
    if (w->type == 'r') {
        CHECK(op->type == X86_OP_REG && same_name(h, op->reg, w->reg), "%s: operand %u is %s",
              c->objdump, k, w->reg);
        CHECK(op->avx_zero_opmask == w->zero_mask, "%s: operand %u {z} %s", c->objdump, k,
              w->zero_mask ? "set" : "clear");
    } else if (w->type == 'm') {
        CHECK(op->type == X86_OP_MEM && same_name(h, op->mem.base, w->reg) &&
                  same_name(h, op->mem.index, w->index) && op->mem.scale == w->scale &&
                  op->mem.disp == w->value && op->mem.segment == X86_REG_INVALID,
              "%s: operand %u is memory %s+%s*%d%+lld", c->objdump, k, w->reg,
              w->index ? w->index : "-", w->scale, (long long)w->value);
    } else {
        CHECK(op->type == X86_OP_IMM && op->imm == w->value, "%s: operand %u is $%lld",
              c->objdump, k, (long long)w->value);
    }
    if (w->size)
        CHECK(op->size == w->size, "%s: operand %u is %u bytes (decoded %u)", c->objdump, k,
              w->size, op->size);
    if (w->access != 0xff)
        CHECK(op->access == w->access, "%s: operand %u access %u (decoded %u)", c->objdump, k,
              w->access, op->access);
}

/* Every name of the space-separated `want` is in regs[0..n) and no other. */
static bool same_set(csh h, const uint16_t *regs, uint8_t n, const char *want)
{
    char copy[64];
    snprintf(copy, sizeof copy, "%s", want);
    unsigned count = 0;
    for (char *save, *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        bool found = false;
        for (uint8_t i = 0; i < n; i++)
            found |= !strcmp(cs_reg_name(h, regs[i]), t);
        if (!found)
            return false;
        count++;
    }
    return count == n;
}

static void check_case(csh h, cs_insn *insn, const case_t *c)
{
    const uint8_t *code = c->bytes;
    size_t size = c->len;
    uint64_t address = 0x401000;
    if (!mt_x86_decode_iter(h, &code, &size, &address, insn)) {
        CHECK(false, "%s: decodes", c->objdump);
        return;
    }
    CHECK(insn->size == c->len && size == 0 && address == 0x401000u + c->len &&
              insn->address == 0x401000 && !memcmp(insn->bytes, c->bytes, c->len),
          "%s: %u bytes at 0x401000", c->objdump, c->len);
    CHECK(!strcmp(insn->mnemonic, c->mnemonic), "%s: mnemonic %s (decoded %s)", c->objdump,
          c->mnemonic, insn->mnemonic);
    const char *name = cs_insn_name(h, insn->id);
    CHECK(insn->id != 0 && (insn->id == MT_X86_INS_OTHER || (name && !strcmp(name, c->mnemonic))),
          "%s: id is capstone's for %s, or MT_X86_INS_OTHER", c->objdump, c->mnemonic);
    const cs_x86 *x = &insn->detail->x86;
    CHECK(x->op_count == c->nops, "%s: %u operands (decoded %u)", c->objdump, c->nops,
          x->op_count);
    for (unsigned k = 0; k < c->nops && k < x->op_count; k++)
        check_operand(h, c, k, &x->operands[k]);
    if (c->avx512)
        CHECK(cs_insn_group(h, insn, X86_GRP_AVX512), "%s: in the AVX512 group", c->objdump);
    cs_regs rd, wr;
    uint8_t nrd = 0, nwr = 0;
    CHECK(cs_regs_access(h, insn, rd, &nrd, wr, &nwr) == CS_ERR_OK && same_set(h, rd, nrd, c->reads) &&
              same_set(h, wr, nwr, c->writes),
          "%s: cs_regs_access reads {%s} writes {%s}", c->objdump, c->reads, c->writes);
}

/* A rip-relative EVEX operand is relocated through its disp32's offset. */
static void check_rip_displacement(csh h, cs_insn *insn)
{
    const case_t *c = &cases[MT_ARRAY_LEN(cases) - 2];
    const uint8_t *code = c->bytes;
    size_t size = c->len;
    uint64_t address = 0;
    bool ok = mt_x86_decode_iter(h, &code, &size, &address, insn);
    const cs_x86_encoding *e = &insn->detail->x86.encoding;
    CHECK(ok && e->disp_offset == 6 && e->disp_size == 4,
          "%s: the disp32 is at byte 6 (objdump: 62 f1 7d 20 74 0d | 34 12 00 00)", c->objdump);
}

/* Flags that liveness reads: kortestd sets ZF and CF, clears OF SF AF PF. */
static void check_flags(csh h, cs_insn *insn)
{
    static const uint8_t kortestd[] = {0xc4, 0xe1, 0xf9, 0x98, 0xc8};
    const uint8_t *code = kortestd;
    size_t size = sizeof kortestd;
    uint64_t address = 0;
    bool ok = mt_x86_decode_iter(h, &code, &size, &address, insn);
    uint64_t e = insn->detail->x86.eflags;
    CHECK(ok && (e & X86_EFLAGS_MODIFY_ZF) && (e & X86_EFLAGS_MODIFY_CF) &&
              (e & X86_EFLAGS_RESET_OF) && (e & X86_EFLAGS_RESET_SF) &&
              !(e & (X86_EFLAGS_TEST_ZF | X86_EFLAGS_TEST_CF)),
          "kortestd: writes ZF and CF, clears OF and SF, tests nothing");
}

/* Bytes neither decoder accepts stay invalid; a run of them decodes as a
 * whole (cs_disasm's contract) up to the first invalid one. */
static void check_sequence(csh h)
{
    static const uint8_t invalid[][3] = {{0x06}, {0x62, 0xf1, 0x7d}};
    static const size_t invalid_len[] = {1, 3};
    cs_insn *insn = cs_malloc(h);
    for (size_t i = 0; i < MT_ARRAY_LEN(invalid); i++) {
        const uint8_t *code = invalid[i];
        size_t size = invalid_len[i];
        uint64_t address = 0;
        CHECK(!mt_x86_decode_iter(h, &code, &size, &address, insn) && size == invalid_len[i] &&
                  code == invalid[i],
              "invalid bytes %zu stay invalid, nothing consumed", i);
    }
    cs_free(insn, 1);
    uint8_t buf[256];
    size_t len = 0;
    for (size_t i = 0; i < MT_ARRAY_LEN(cases); i++) {
        memcpy(buf + len, cases[i].bytes, cases[i].len);
        len += cases[i].len;
    }
    buf[len++] = 0x06;
    cs_insn *all = NULL;
    size_t n = mt_x86_decode(h, buf, len, 0x1000, 0, &all);
    bool lengths = n == MT_ARRAY_LEN(cases);
    uint64_t at = 0x1000;
    for (size_t i = 0; lengths && i < n; i++) {
        lengths = all[i].address == at && all[i].size == cases[i].len &&
                  !strcmp(all[i].mnemonic, cases[i].mnemonic);
        at += cases[i].len;
    }
    CHECK(lengths, "mt_x86_decode: all %zu instructions in order, stops at the invalid byte",
          MT_ARRAY_LEN(cases));
    mt_x86_free(all, n);
    n = mt_x86_decode(h, buf, len, 0x1000, 2, &all);
    CHECK(n == 2 && !strcmp(all[1].mnemonic, "kmovq"), "mt_x86_decode: count 2 gives 2");
    mt_x86_free(all, n);
}

int main(void)
{
    csh h;
    if (!mt_x86_open(&h)) {
        CHECK(false, "mt_x86_open");
        return unit_finish();
    }
    cs_insn *insn = cs_malloc(h);
    for (size_t i = 0; i < MT_ARRAY_LEN(cases); i++)
        check_case(h, insn, &cases[i]);
    check_rip_displacement(h, insn);
    check_flags(h, insn);
    cs_free(insn, 1);
    check_sequence(h);
    cs_close(&h);
    return unit_finish();
}
