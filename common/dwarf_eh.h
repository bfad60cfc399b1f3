/* common/dwarf_eh.h — one reader for the exception-handling data of x86-64
 * ELF files: the encoded values of DWARF, .eh_frame's CIEs and FDEs (Linux
 * Standard Base, "Exception Frames"), .eh_frame_hdr's fields and the header
 * and call-site table of an LSDA (the Itanium C++ ABI's language-specific
 * data area in .gcc_except_table).  The analyzer reads procedure bounds and
 * landing pads with it; the rewriter the unwind data it copies for moved code.
 *
 * Notes:
 * - Every read is bounds-checked against the cursor's end.  The first
 *   problem is kept in `fail` (a reason); every later read returns 0, so a
 *   caller checks once after a run of reads.
 * - Pointers are applied as libgcc applies them on x86-64: pc-relative to
 *   the address of the field, data-relative to 0 (libgcc sets a data base on
 *   i386 only), and a raw 0 stays 0, "no pointer".  A DW_EH_PE_indirect
 *   pointer gives the address of the slot holding the pointer: the slot is
 *   not read (callers decide; it does not move when code does).  Text-,
 *   function-relative and aligned pointers fail: no x86-64 toolchain emits
 *   them in .eh_frame or LSDAs.
 * - .eh_frame's CIE id and an FDE's CIE pointer are 4 bytes even after a
 *   64-bit length (LSB); the CIE pointer is measured back from its own field.
 * - A CIE augmentation letter this reader does not know ends the decoding of
 *   the augmentation data (its length bounds it): what was decoded before it
 *   stays valid, and `unknown_augmentation` says the rest was not read. */
#ifndef MTOOL_COMMON_DWARF_EH_H
#define MTOOL_COMMON_DWARF_EH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* DWARF pointer encodings (DW_EH_PE_*): the low nibble is the format, bits
 * 4-6 the application, bit 7 indirection. */
enum {
    MT_PE_ABSPTR = 0x00, MT_PE_ULEB128 = 0x01, MT_PE_UDATA2 = 0x02, MT_PE_UDATA4 = 0x03,
    MT_PE_UDATA8 = 0x04, MT_PE_SLEB128 = 0x09, MT_PE_SDATA2 = 0x0a, MT_PE_SDATA4 = 0x0b,
    MT_PE_SDATA8 = 0x0c, MT_PE_SIGNED = 0x08,
    MT_PE_PCREL = 0x10, MT_PE_DATAREL = 0x30, MT_PE_APPLICATION = 0x70,
    MT_PE_INDIRECT = 0x80, MT_PE_OMIT = 0xff,
};

/* Bytes [p, end) of the file image, loaded at `vaddr` (the address of *p). */
typedef struct {
    const uint8_t *p, *end;
    uint64_t vaddr;
    const char *fail;   /* first problem, NULL while fine */
} mt_eh_cursor;

uint64_t mt_eh_read(mt_eh_cursor *c, size_t n); /* n <= 8 bytes, little-endian */
void mt_eh_skip(mt_eh_cursor *c, uint64_t n);
uint64_t mt_eh_uleb(mt_eh_cursor *c);
int64_t mt_eh_sleb(mt_eh_cursor *c);
/* Bytes of a fixed-size format (2, 4 or 8), 0 for LEB128 or an unknown one. */
size_t mt_eh_encoding_size(uint8_t enc);
/* Whether the application of `enc` is one mt_eh_pointer resolves. */
bool mt_eh_pointer_supported(uint8_t enc);
/* The value of `enc`'s format, sign-extended, not applied. */
uint64_t mt_eh_value(mt_eh_cursor *c, uint8_t enc);
/* An encoded pointer, applied (see Notes). */
uint64_t mt_eh_pointer(mt_eh_cursor *c, uint8_t enc);

/* One .eh_frame entry. */
typedef struct {
    uint64_t addr;      /* of its length field */
    uint64_t id;        /* 0: a CIE; else an FDE's distance back to its CIE */
    uint64_t id_vaddr;  /* address of that field */
    mt_eh_cursor body;  /* what follows it, up to the end of the entry */
} mt_eh_entry;

/* Reads the entry at c and moves c past it: 1, 0 at the zero terminator or
 * when fewer than 4 bytes are left (trailing padding), -1 when malformed
 * (the reason in c->fail). */
int mt_eh_next_entry(mt_eh_cursor *c, mt_eh_entry *out);

typedef struct {
    uint64_t addr;
    uint8_t version;
    uint8_t fde_enc;        /* of pc_begin and pc_range in its FDEs */
    uint8_t lsda_enc;       /* of the LSDA pointer in its FDEs; MT_PE_OMIT: none */
    bool has_z;             /* augmentation data present: FDEs carry its length */
    bool unknown_augmentation;
    uint64_t code_align;
    int64_t data_align;
} mt_eh_cie;

/* The CIE whose length field is at c.  NULL, or why it cannot be used. */
const char *mt_eh_parse_cie(mt_eh_cursor c, mt_eh_cie *out);

typedef struct {
    uint64_t addr;          /* of its length field */
    uint64_t begin, end;    /* the code it covers */
    uint64_t lsda;          /* 0: none */
    mt_eh_cursor program;   /* its call-frame instructions */
    mt_eh_cie cie;          /* its CIE */
} mt_eh_fde;

/* The FDE read by mt_eh_next_entry, with its CIE.  NULL, or why not. */
const char *mt_eh_parse_fde(const mt_eh_entry *e, const mt_eh_cie *cie, mt_eh_fde *out);

/* One row of an LSDA's call-site table. */
typedef struct {
    uint64_t start, len;    /* code addresses */
    uint64_t landing_pad;   /* 0: none (unwinding goes on to the caller) */
    uint64_t action;        /* 1 + offset into the action table, 0: cleanup only */
} mt_lsda_call_site;

typedef struct {
    uint64_t lpstart;       /* what landing pads are measured from */
    uint8_t ttype_enc;      /* MT_PE_OMIT: no type table */
    uint64_t ttype_base;    /* address the type table is indexed back from; 0: none */
    uint64_t cs_end;        /* end of the call-site table: the action table's start */
    mt_lsda_call_site *sites;
    size_t nsites;
} mt_lsda;

/* The LSDA at c of the FDE starting at `fde_begin`.  NULL, or why not;
 * free with mt_lsda_free either way. */
const char *mt_lsda_parse(mt_eh_cursor c, uint64_t fde_begin, mt_lsda *out);
void mt_lsda_free(mt_lsda *l);

#endif
