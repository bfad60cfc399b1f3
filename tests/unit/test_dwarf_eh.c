/* Unit tests of common/dwarf_eh.c on hand-assembled bytes: LEB128 edge
 * cases, pointer encodings and their application (pc-relative, a raw 0
 * staying 0, indirect), CIE and FDE decoding with a 'zPLR' augmentation, an
 * LSDA's call-site table, and refusals of truncated or malformed data. */
#include "common/dwarf_eh.h"
#include "unit.h"

#include <string.h>

#define AT 0x1000 /* load address of every test buffer */

static mt_eh_cursor over(const uint8_t *bytes, size_t n)
{
    return (mt_eh_cursor){bytes, bytes + n, AT, NULL};
}

static void test_leb128(void)
{
    static const uint8_t b[] = {0xe5, 0x8e, 0x26, /* 624485 */
                                0x7f,             /* sleb -1 */
                                0x80, 0x7f,       /* sleb -128 */
                                0x3f,             /* sleb 63 */
                                0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    mt_eh_cursor c = over(b, sizeof b);
    CHECK(mt_eh_uleb(&c) == 624485, "uleb 0xe5 0x8e 0x26 is 624485");
    CHECK(mt_eh_sleb(&c) == -1, "sleb 0x7f is -1");
    CHECK(mt_eh_sleb(&c) == -128, "sleb 0x80 0x7f is -128");
    CHECK(mt_eh_sleb(&c) == 63, "sleb 0x3f is 63");
    CHECK(mt_eh_uleb(&c) == UINT64_MAX && !c.fail, "a 10-byte uleb is UINT64_MAX");
    CHECK(c.p == c.end && c.vaddr == AT + sizeof b, "the cursor moved over every byte");

    static const uint8_t runaway[12] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                        0x80, 0x80, 0x80, 0x80, 0x80, 0x80};
    c = over(runaway, sizeof runaway);
    mt_eh_uleb(&c);
    CHECK(c.fail != NULL, "a LEB128 number with no last byte fails (%s)", c.fail ? c.fail : "-");
    CHECK(mt_eh_read(&c, 1) == 0, "reads after a failure give 0");

    static const uint8_t short4[3] = {1, 2, 3};
    c = over(short4, sizeof short4);
    CHECK(mt_eh_read(&c, 4) == 0 && c.fail, "a 4-byte read of 3 bytes fails");
}

static void test_pointers(void)
{
    /* pcrel|sdata4 -8 at AT: AT - 8; then a raw 0: no pointer; udata2 0xbeef;
     * indirect|pcrel sdata4 +16 at AT+10: the slot AT+26; datarel|udata4
     * 0x40: 0x40 (data base 0). */
    static const uint8_t b[] = {0xf8, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0xef, 0xbe,
                                0x10, 0, 0, 0, 0x40, 0, 0, 0};
    mt_eh_cursor c = over(b, sizeof b);
    CHECK(mt_eh_pointer(&c, MT_PE_PCREL | MT_PE_SDATA4) == AT - 8, "pcrel sdata4 -8");
    CHECK(mt_eh_pointer(&c, MT_PE_PCREL | MT_PE_SDATA4) == 0, "a raw 0 stays 0");
    CHECK(mt_eh_pointer(&c, MT_PE_UDATA2) == 0xbeef, "udata2");
    CHECK(mt_eh_pointer(&c, MT_PE_INDIRECT | MT_PE_PCREL | MT_PE_SDATA4) == AT + 10 + 16,
          "indirect gives the slot's address");
    CHECK(mt_eh_pointer(&c, MT_PE_DATAREL | MT_PE_UDATA4) == 0x40 && !c.fail,
          "datarel is relative to 0");
    CHECK(mt_eh_encoding_size(MT_PE_SDATA2) == 2 && mt_eh_encoding_size(MT_PE_ULEB128) == 0 &&
              mt_eh_encoding_size(MT_PE_ABSPTR) == 8,
          "encoding sizes");

    c = over(b, sizeof b);
    mt_eh_pointer(&c, 0x20 | MT_PE_UDATA4); /* textrel */
    CHECK(c.fail != NULL, "a text-relative pointer fails");
    c = over(b, sizeof b);
    mt_eh_value(&c, 0x05);
    CHECK(c.fail != NULL, "an unknown format fails");
}

/* .eh_frame: a CIE "zPLR" (personality udata4, LSDA pcrel|sdata4, FDEs
 * pcrel|sdata4), then an FDE of [AT+0x100, AT+0x140) with an LSDA at
 * AT+0x200 and two call-frame instructions, then the terminator. */
static const uint8_t eh_frame[] = {
    /* CIE at AT: length 24 */
    0x18, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'P', 'L', 'R', 0,
    0x01,             /* code alignment 1 */
    0x78,             /* data alignment -8 */
    0x10,             /* return address register 16 */
    0x07,             /* augmentation data: 7 bytes */
    0x03, 0x44, 0x33, 0x22, 0x11, /* P: udata4 0x11223344 */
    0x1b,             /* L: pcrel|sdata4 */
    0x1b,             /* R: pcrel|sdata4 */
    0, 0, 0,          /* padding (DW_CFA_nop) */
    /* FDE at AT+28: length 24 */
    0x18, 0, 0, 0,
    0x20, 0, 0, 0,    /* CIE pointer: AT+32 - 0x20 = AT */
    0xdc, 0, 0, 0,    /* pc_begin at AT+36: +0xdc -> AT+0x100 */
    0x40, 0, 0, 0,    /* pc_range 0x40 */
    0x04,             /* augmentation data: 4 bytes */
    0xb3, 0x01, 0, 0, /* LSDA at AT+45: +0x1b3 -> AT+0x1e0 */
    0x0e, 0x10,       /* DW_CFA_def_cfa_offset 16 */
    0x44,             /* DW_CFA_advance_loc 4 */
    0, 0, 0, 0,       /* padding (DW_CFA_nop) to the FDE's end */
    0, 0, 0, 0,       /* terminator */
};

static void test_cie_fde(void)
{
    mt_eh_cursor c = over(eh_frame, sizeof eh_frame), cie_at = c;
    mt_eh_entry e;
    CHECK(mt_eh_next_entry(&c, &e) == 1 && e.id == 0 && e.addr == AT, "first entry: a CIE");
    mt_eh_cie cie;
    const char *why = mt_eh_parse_cie(cie_at, &cie);
    CHECK(!why, "CIE parses (%s)", why ? why : "ok");
    CHECK(cie.has_z && cie.fde_enc == 0x1b && cie.lsda_enc == 0x1b && cie.code_align == 1 &&
              cie.data_align == -8 && !cie.unknown_augmentation,
          "CIE fields: z, R 0x1b, L 0x1b, alignments 1 and -8");
    CHECK(mt_eh_next_entry(&c, &e) == 1 && e.id == 0x20 && e.id_vaddr == AT + 32 &&
              e.id_vaddr - e.id == AT,
          "second entry: an FDE pointing back to the CIE");
    mt_eh_fde f;
    why = mt_eh_parse_fde(&e, &cie, &f);
    CHECK(!why && f.begin == AT + 0x100 && f.end == AT + 0x140,
          "FDE range [AT+0x100, AT+0x140) (%s)", why ? why : "ok");
    CHECK(f.lsda == AT + 0x1e0, "FDE's LSDA pointer applied pc-relative");
    CHECK(f.program.end - f.program.p == 7 && f.program.p[0] == 0x0e && f.cie.addr == AT,
          "FDE's call-frame program: 7 bytes, starting with def_cfa_offset");
    CHECK(mt_eh_next_entry(&c, &e) == 0, "then the terminator");

    uint8_t broken[sizeof eh_frame];
    memcpy(broken, eh_frame, sizeof broken);
    broken[0] = 0xf0; /* CIE length past the section */
    c = over(broken, sizeof broken);
    CHECK(mt_eh_next_entry(&c, &e) == -1 && c.fail, "a length past the end is malformed");
    CHECK(mt_eh_parse_cie(over(broken, sizeof broken), &cie) != NULL, "and no CIE parses");
    memcpy(broken, eh_frame, sizeof broken);
    broken[8] = 2; /* CIE version 2 */
    CHECK(mt_eh_parse_cie(over(broken, sizeof broken), &cie) != NULL, "CIE version 2 refused");
    memcpy(broken, eh_frame, sizeof broken);
    broken[10] = 'Q'; /* "zQLR": the letter is unknown */
    why = mt_eh_parse_cie(over(broken, sizeof broken), &cie);
    CHECK(!why && cie.unknown_augmentation, "an unknown augmentation letter stops decoding, said");
}

/* An LSDA of a procedure at 0x4000: LPStart omitted, a type table at
 * offset 9 from its field, two call sites (uleb128): [0x10, 0x18) landing at
 * 0x40 with action 1, and [0x20, 0x24) with no landing pad. */
static void test_lsda(void)
{
    static const uint8_t b[] = {0xff,       /* LPStart omitted */
                                0x9b, 0x09, /* ttype indirect|pcrel|sdata4, base +9 */
                                0x01, 0x08, /* call sites uleb128, 8 bytes */
                                0x10, 0x08, 0x40, 0x01, 0x20, 0x04, 0x00, 0x00};
    mt_lsda l;
    const char *why = mt_lsda_parse(over(b, sizeof b), 0x4000, &l);
    CHECK(!why && l.nsites == 2, "LSDA: two call sites (%s)", why ? why : "ok");
    CHECK(l.nsites == 2 && l.sites[0].start == 0x4010 && l.sites[0].len == 8 &&
              l.sites[0].landing_pad == 0x4040 && l.sites[0].action == 1,
          "first site [0x4010, +8) lands at 0x4040, action 1");
    CHECK(l.nsites == 2 && l.sites[1].landing_pad == 0 && l.sites[1].start == 0x4020,
          "second site has no landing pad");
    CHECK(l.ttype_base == AT + 3 + 9 && l.cs_end == AT + 5 + 8 && l.lpstart == 0x4000,
          "type-table base, end of the call sites, LPStart");
    mt_lsda_free(&l);

    why = mt_lsda_parse(over(b, sizeof b - 2), 0x4000, &l);
    CHECK(why != NULL, "a call-site table past the end is refused");
    mt_lsda_free(&l);
}

int main(void)
{
    test_leb128();
    test_pointers();
    test_cie_fde();
    test_lsda();
    return unit_finish();
}
