/* analyzer/ehframe.c — procedure bounds and exception landing pads from
 * .eh_frame and the LSDAs (.gcc_except_table) it points to.
 *
 * Every FDE (frame description entry) covers one contiguous range of code,
 * normally one function or one split part of it, so in a stripped binary the
 * FDE ranges are the best source of procedure bounds.  An FDE may point to a
 * language-specific data area whose call-site table says where control lands
 * when an exception unwinds through a call: those landing pads are reached by
 * no branch, so the CFG needs them as extra entries.  Only the fields needed
 * for these are decoded; call-frame instructions are skipped.  Every read is
 * bounds-checked: on malformed data a warning is recorded and parsing stops
 * with what was found so far. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* DWARF pointer encodings (DW_EH_PE_*). */
enum {
    PE_ABSPTR = 0x00, PE_ULEB128 = 0x01, PE_UDATA2 = 0x02, PE_UDATA4 = 0x03, PE_UDATA8 = 0x04,
    PE_SLEB128 = 0x09, PE_SDATA2 = 0x0a, PE_SDATA4 = 0x0b, PE_SDATA8 = 0x0c,
    PE_PCREL = 0x10, PE_TEXTREL = 0x20, PE_DATAREL = 0x30, PE_FUNCREL = 0x40, PE_ALIGNED = 0x50,
    PE_INDIRECT = 0x80, PE_OMIT = 0xff,
};

/* A cursor over [pos, end) of the section; `vaddr` is the section address so
 * pc-relative values can be resolved. */
typedef struct {
    const uint8_t *base; /* section start */
    size_t pos, end;
    uint64_t vaddr;
    const char *fail;    /* first decoding error, NULL while fine */
} cursor;

static bool need(cursor *c, size_t n)
{
    if (c->fail)
        return false;
    if (n > c->end - c->pos) {
        c->fail = "entry extends past its end";
        return false;
    }
    return true;
}

static uint64_t read_le(cursor *c, size_t n)
{
    if (!need(c, n))
        return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)c->base[c->pos + i] << (8 * i);
    c->pos += n;
    return v;
}

static uint64_t read_uleb(cursor *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        if (!need(c, 1))
            return 0;
        uint8_t b = c->base[c->pos++];
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
        if (shift > 70) {
            c->fail = "LEB128 number too long";
            return 0;
        }
    }
}

static int64_t read_sleb(cursor *c)
{
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        if (!need(c, 1))
            return 0;
        b = c->base[c->pos++];
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (shift > 77) {
            c->fail = "LEB128 number too long";
            return 0;
        }
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40))
        v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

/* Reads the value part of an encoded pointer (no application). */
static uint64_t read_encoded_value(cursor *c, uint8_t enc)
{
    switch (enc & 0x0f) {
    case PE_ABSPTR:
    case PE_UDATA8:
    case PE_SDATA8: return read_le(c, 8);
    case PE_ULEB128: return read_uleb(c);
    case PE_SLEB128: return (uint64_t)read_sleb(c);
    case PE_UDATA2: return read_le(c, 2);
    case PE_UDATA4: return read_le(c, 4);
    case PE_SDATA2: return (uint64_t)(int64_t)(int16_t)read_le(c, 2);
    case PE_SDATA4: return (uint64_t)(int64_t)(int32_t)read_le(c, 4);
    default:
        if (!c->fail)
            c->fail = "unknown pointer encoding";
        return 0;
    }
}

/* Reads an encoded pointer and applies it.  Returns false (without setting
 * c->fail) when the application is one this reader cannot resolve, so the
 * caller can skip just that FDE. */
static bool read_encoded_pointer(cursor *c, uint8_t enc, uint64_t *out)
{
    uint64_t field_addr = c->vaddr + c->pos;
    uint64_t v = read_encoded_value(c, enc);
    if (c->fail)
        return false;
    switch (enc & 0x70) {
    case PE_ABSPTR: *out = v; break;
    case PE_PCREL: *out = field_addr + v; break;
    default: return false; /* textrel/datarel/funcrel/aligned: not used on x86-64 .eh_frame */
    }
    return !(enc & PE_INDIRECT); /* indirect: the pointer is stored in memory; skip */
}

typedef struct {
    uint8_t fde_enc;     /* encoding of pc_begin/pc_range in its FDEs */
    uint8_t lsda_enc;    /* encoding of the LSDA pointer in its FDEs, PE_OMIT if none */
    bool has_z;          /* augmentation data present (FDEs carry a length) */
} cie_info;

/* Parses the CIE starting at section offset `off`.  Returns NULL on success
 * or a reason it cannot be used. */
static const char *parse_cie(const cursor *sec, size_t off, cie_info *cie)
{
    cursor c = *sec;
    c.pos = off;
    c.end = sec->end;
    uint64_t len = read_le(&c, 4);
    bool is64 = len == 0xffffffffu;
    if (is64)
        len = read_le(&c, 8);
    if (c.fail || len > c.end - c.pos)
        return "CIE length out of bounds";
    c.end = c.pos + len;
    uint64_t id = read_le(&c, 4); /* 4 bytes even with a 64-bit length (LSB) */
    if (c.fail || id != 0)
        return "FDE's CIE pointer does not point to a CIE";
    uint8_t version = (uint8_t)read_le(&c, 1);
    if (version != 1 && version != 3 && version != 4)
        return "unsupported CIE version";
    const char *aug = (const char *)c.base + c.pos;
    const uint8_t *nul = c.fail ? NULL : memchr(aug, '\0', c.end - c.pos);
    if (!nul)
        return "unterminated CIE augmentation string";
    c.pos += (size_t)((const char *)nul - aug) + 1;
    if (version == 4) {
        read_le(&c, 1); /* address size */
        read_le(&c, 1); /* segment selector size */
    }
    if (strstr(aug, "eh"))
        read_le(&c, 8); /* old GCC "eh" data pointer */
    read_uleb(&c);      /* code alignment */
    read_sleb(&c);      /* data alignment */
    if (version == 1)
        read_le(&c, 1); /* return address register */
    else
        read_uleb(&c);
    cie->fde_enc = PE_ABSPTR;
    cie->lsda_enc = PE_OMIT;
    cie->has_z = aug[0] == 'z';
    if (!cie->has_z)
        return c.fail ? c.fail : (aug[0] && strcmp(aug, "eh") != 0 ? "unknown CIE augmentation" : NULL);
    uint64_t aug_len = read_uleb(&c);
    if (c.fail || aug_len > c.end - c.pos)
        return "CIE augmentation data out of bounds";
    c.end = c.pos + aug_len;
    for (const char *a = aug + 1; *a; a++) {
        switch (*a) {
        case 'R': cie->fde_enc = (uint8_t)read_le(&c, 1); break;
        case 'L': cie->lsda_enc = (uint8_t)read_le(&c, 1); break;
        case 'P': {
            uint8_t penc = (uint8_t)read_le(&c, 1);
            if (!c.fail && penc != PE_OMIT)
                read_encoded_value(&c, penc); /* personality routine */
            break;
        }
        case 'S': case 'B': case 'G': break; /* signal frame, AArch64 keys, MTE */
        default:
            /* Unknown letter: its data cannot be decoded, but aug_len
             * bounds it, and the FDE encoding found so far stays valid. */
            goto done;
        }
    }
done:
    if (c.fail)
        return c.fail;
    if (cie->fde_enc == PE_OMIT)
        return "CIE has no FDE pointer encoding";
    return NULL;
}

/* Warning text prefix, e.g. "/bin/x: .eh_frame: malformed entry at offset 0x40". */
static void warn_malformed(mt_program *prog, const mt_image *img, size_t off, const char *why)
{
    if (prog)
        mt_warn(prog, "%s: .eh_frame: malformed entry at offset 0x%zx (%s); ignoring the rest",
                img->path, off, why);
}

/* One FDE as the walker reports it. */
typedef struct {
    uint64_t begin, end;
    uint64_t lsda; /* address of its LSDA, 0 when it has none */
} fde_info;

typedef void (*fde_visitor)(const fde_info *fde, void *ctx);

/* The LSDA pointer in an FDE's augmentation data (cursor just after pc_range). */
static uint64_t read_fde_lsda(cursor *e, const cie_info *cie)
{
    if (!cie->has_z)
        return 0;
    uint64_t aug_len = read_uleb(e);
    if (e->fail || aug_len > e->end - e->pos || cie->lsda_enc == PE_OMIT || aug_len == 0)
        return 0;
    cursor a = *e;
    a.end = a.pos + aug_len;
    uint64_t lsda = 0;
    return read_encoded_pointer(&a, cie->lsda_enc, &lsda) ? lsda : 0;
}

/* Calls `visit` for every non-empty FDE of .eh_frame whose pc_begin can be
 * resolved.  Problems are reported to `prog`, unless it is NULL (a second
 * walk over the same section). */
static void walk_fdes(const mt_image *img, mt_program *prog, fde_visitor visit, void *ctx)
{
    const mt_section *sec = mt_image_section(img, ".eh_frame");
    const uint8_t *bytes = mt_image_section_bytes(img, sec);
    if (!bytes)
        return;
    cursor c = {bytes, 0, sec->size, sec->addr, NULL};
    size_t skipped = 0;

    while (c.pos < c.end) {
        size_t entry_off = c.pos;
        if (c.end - c.pos < 4)
            break; /* trailing padding */
        uint64_t len = read_le(&c, 4);
        if (len == 0)
            break; /* zero terminator */
        bool is64 = len == 0xffffffffu;
        if (is64)
            len = read_le(&c, 8);
        if (c.fail || len > c.end - c.pos) {
            warn_malformed(prog, img, entry_off, "length out of bounds");
            break;
        }
        size_t next = c.pos + (size_t)len;
        cursor e = c;
        e.end = next;
        size_t id_pos = e.pos;
        uint64_t cie_ptr = read_le(&e, 4); /* always 4 bytes in .eh_frame (LSB) */
        if (e.fail) {
            warn_malformed(prog, img, entry_off, e.fail);
            break;
        }
        c.pos = next;
        if (cie_ptr == 0)
            continue; /* a CIE: parsed on demand by its FDEs */
        if (cie_ptr > id_pos) {
            warn_malformed(prog, img, entry_off, "CIE pointer out of bounds");
            break;
        }
        cie_info cie;
        const char *why = parse_cie(&c, id_pos - (size_t)cie_ptr, &cie);
        if (why) {
            warn_malformed(prog, img, entry_off, why);
            break;
        }
        uint64_t begin = 0, range = 0;
        if (!read_encoded_pointer(&e, cie.fde_enc, &begin)) {
            if (e.fail) {
                warn_malformed(prog, img, entry_off, e.fail);
                break;
            }
            skipped++;
            continue;
        }
        range = read_encoded_value(&e, cie.fde_enc & 0x0f);
        if (e.fail) {
            warn_malformed(prog, img, entry_off, e.fail);
            break;
        }
        if (range == 0 || begin + range < begin)
            continue; /* empty FDE (discarded function) */
        fde_info f = {begin, begin + range, read_fde_lsda(&e, &cie)};
        visit(&f, ctx);
    }
    if (skipped && prog)
        mt_warn(prog, "%s: .eh_frame: %zu FDEs use a pointer encoding that is not supported; "
                "their ranges are ignored", img->path, skipped);
}

typedef struct {
    mt_fde_range *items;
    size_t n, cap;
} range_list;

static void collect_range(const fde_info *f, void *ctx)
{
    range_list *l = ctx;
    mt_fde_range r = {f->begin, f->end};
    MT_PUSH(l->items, l->n, l->cap, r);
}

size_t mt_read_eh_frame(const mt_image *img, mt_program *prog, mt_fde_range **out)
{
    range_list l = {0};
    walk_fdes(img, prog, collect_range, &l);
    *out = l.items;
    return l.n;
}

/* ---- LSDAs: call-site tables ----------------------------------------- */

/* A cursor over the loaded bytes from `addr` to the end of its segment's
 * file image (an LSDA has no length of its own). */
static bool cursor_at(const mt_image *img, uint64_t addr, cursor *c)
{
    for (size_t i = 0; i < img->nsegments; i++) {
        const mt_segment *s = &img->segments[i];
        if (addr < s->vaddr || addr - s->vaddr >= s->filesz)
            continue;
        const uint8_t *bytes = mt_image_bytes_at(img, s->vaddr, s->filesz);
        if (!bytes)
            return false;
        *c = (cursor){bytes, (size_t)(addr - s->vaddr), (size_t)s->filesz, s->vaddr, NULL};
        return true;
    }
    return false;
}

typedef struct {
    const mt_image *img;
    mt_eh_call_site *items;
    size_t n, cap;
    size_t bad; /* LSDAs that could not be decoded */
} site_list;

/* Decodes the LSDA of one FDE (the layout GCC and LLVM emit for C++ and
 * every language using the Itanium personality routines). */
static bool read_lsda(const fde_info *f, site_list *l)
{
    cursor c;
    if (!cursor_at(l->img, f->lsda, &c))
        return false;
    uint64_t lpstart = f->begin;
    uint8_t lpstart_enc = (uint8_t)read_le(&c, 1);
    if (lpstart_enc != PE_OMIT && !read_encoded_pointer(&c, lpstart_enc, &lpstart))
        return false;
    uint8_t ttype_enc = (uint8_t)read_le(&c, 1);
    if (ttype_enc != PE_OMIT)
        read_uleb(&c); /* offset of the type table: not needed here */
    uint8_t cs_enc = (uint8_t)read_le(&c, 1);
    uint64_t cs_len = read_uleb(&c);
    if (c.fail || cs_len > c.end - c.pos)
        return false;
    c.end = c.pos + cs_len;
    while (c.pos < c.end) {
        /* Call-site fields are offsets, not applied pointers. */
        uint64_t start = read_encoded_value(&c, cs_enc);
        uint64_t len = read_encoded_value(&c, cs_enc);
        uint64_t lp = read_encoded_value(&c, cs_enc);
        read_uleb(&c); /* action */
        if (c.fail)
            return false;
        if (lp == 0)
            continue; /* no landing pad: unwinding goes on to the caller */
        mt_eh_call_site s = {f->begin + start, f->begin + start + len, lpstart + lp};
        MT_PUSH(l->items, l->n, l->cap, s);
    }
    return true;
}

static void collect_sites(const fde_info *f, void *ctx)
{
    site_list *l = ctx;
    if (f->lsda && !read_lsda(f, l))
        l->bad++;
}

static int compare_sites(const void *a, const void *b)
{
    const mt_eh_call_site *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

size_t mt_read_eh_call_sites(const mt_image *img, mt_program *prog, mt_eh_call_site **out)
{
    site_list l = {img, NULL, 0, 0, 0};
    walk_fdes(img, NULL, collect_sites, &l); /* .eh_frame problems were reported by mt_read_eh_frame */
    if (l.bad)
        mt_warn(prog, "%s: %zu exception tables (LSDAs) could not be decoded; their landing pads "
                "are missing from the control-flow graphs", img->path, l.bad);
    if (l.n > 1)
        qsort(l.items, l.n, sizeof *l.items, compare_sites);
    *out = l.items;
    return l.n;
}
