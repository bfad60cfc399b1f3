/* common/dwarf_eh.c — the exception-handling data reader (conventions in
 * dwarf_eh.h). */
#define _GNU_SOURCE
#include "dwarf_eh.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

static bool need(mt_eh_cursor *c, uint64_t n)
{
    if (c->fail)
        return false;
    if (n > (uint64_t)(c->end - c->p)) {
        c->fail = "entry extends past its end";
        return false;
    }
    return true;
}

void mt_eh_skip(mt_eh_cursor *c, uint64_t n)
{
    if (!need(c, n))
        return;
    c->p += n;
    c->vaddr += n;
}

uint64_t mt_eh_read(mt_eh_cursor *c, size_t n)
{
    if (!need(c, n))
        return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)c->p[i] << (8 * i);
    mt_eh_skip(c, n);
    return v;
}

/* The bytes of a LEB128 number, little group first; *last the final byte. */
static uint64_t leb_groups(mt_eh_cursor *c, unsigned *shift, uint8_t *last)
{
    uint64_t v = 0;
    for (*shift = 0;; *shift += 7) {
        if (*shift > 70) {
            c->fail = "LEB128 number too long";
            return 0;
        }
        uint8_t b = (uint8_t)mt_eh_read(c, 1);
        if (c->fail)
            return 0;
        if (*shift < 64)
            v |= (uint64_t)(b & 0x7f) << *shift;
        if (!(b & 0x80)) {
            *shift += 7;
            *last = b;
            return v;
        }
    }
}

uint64_t mt_eh_uleb(mt_eh_cursor *c)
{
    unsigned shift;
    uint8_t last;
    return leb_groups(c, &shift, &last);
}

int64_t mt_eh_sleb(mt_eh_cursor *c)
{
    unsigned shift;
    uint8_t last = 0;
    uint64_t v = leb_groups(c, &shift, &last);
    if (!c->fail && shift < 64 && (last & 0x40))
        v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

size_t mt_eh_encoding_size(uint8_t enc)
{
    switch (enc & 0x0f) {
    case MT_PE_ABSPTR: case MT_PE_UDATA8: case MT_PE_SDATA8: return 8;
    case MT_PE_UDATA4: case MT_PE_SDATA4: return 4;
    case MT_PE_UDATA2: case MT_PE_SDATA2: return 2;
    default: return 0;
    }
}

bool mt_eh_pointer_supported(uint8_t enc)
{
    uint8_t app = enc & MT_PE_APPLICATION;
    return app == MT_PE_ABSPTR || app == MT_PE_PCREL || app == MT_PE_DATAREL;
}

uint64_t mt_eh_value(mt_eh_cursor *c, uint8_t enc)
{
    switch (enc & 0x0f) {
    case MT_PE_ULEB128: return mt_eh_uleb(c);
    case MT_PE_SLEB128: return (uint64_t)mt_eh_sleb(c);
    case MT_PE_SDATA2: return (uint64_t)(int64_t)(int16_t)mt_eh_read(c, 2);
    case MT_PE_SDATA4: return (uint64_t)(int64_t)(int32_t)mt_eh_read(c, 4);
    default: {
        size_t n = mt_eh_encoding_size(enc);
        if (n)
            return mt_eh_read(c, n);
        if (!c->fail)
            c->fail = "unknown pointer encoding";
        return 0;
    }
    }
}

uint64_t mt_eh_pointer(mt_eh_cursor *c, uint8_t enc)
{
    uint64_t field = c->vaddr, v = mt_eh_value(c, enc);
    if (c->fail)
        return 0;
    if (!mt_eh_pointer_supported(enc)) {
        c->fail = "unsupported pointer application";
        return 0;
    }
    return (enc & MT_PE_APPLICATION) == MT_PE_PCREL && v ? field + v : v;
}

int mt_eh_next_entry(mt_eh_cursor *c, mt_eh_entry *out)
{
    if (c->fail)
        return -1;
    if (c->end - c->p < 4)
        return 0;
    out->addr = c->vaddr;
    uint64_t len = mt_eh_read(c, 4);
    if (len == 0)
        return 0;
    if (len == 0xffffffffu)
        len = mt_eh_read(c, 8);
    if (c->fail || len > (uint64_t)(c->end - c->p) || len < 4) {
        c->fail = "length out of bounds";
        return -1;
    }
    out->body = (mt_eh_cursor){c->p, c->p + len, c->vaddr, NULL};
    out->id_vaddr = out->body.vaddr;
    out->id = mt_eh_read(&out->body, 4);
    mt_eh_skip(c, len);
    return 1;
}

/* Decodes the augmentation data of `aug` (after its 'z'). */
static void read_augmentation(mt_eh_cursor *a, const char *aug, mt_eh_cie *cie)
{
    for (const char *l = aug + 1; *l && !a->fail; l++) {
        switch (*l) {
        case 'R': cie->fde_enc = (uint8_t)mt_eh_read(a, 1); break;
        case 'L': cie->lsda_enc = (uint8_t)mt_eh_read(a, 1); break;
        case 'P': {
            uint8_t penc = (uint8_t)mt_eh_read(a, 1);
            if (!a->fail && penc != MT_PE_OMIT)
                mt_eh_value(a, penc); /* the personality routine */
            break;
        }
        case 'S': case 'B': case 'G': break; /* signal frame, AArch64 keys, MTE */
        default:
            cie->unknown_augmentation = true;
            return;
        }
    }
}

const char *mt_eh_parse_cie(mt_eh_cursor c, mt_eh_cie *out)
{
    memset(out, 0, sizeof *out);
    mt_eh_entry e;
    if (mt_eh_next_entry(&c, &e) != 1)
        return c.fail ? c.fail : "CIE length out of bounds";
    if (e.id != 0)
        return "FDE's CIE pointer does not point to a CIE";
    mt_eh_cursor *b = &e.body;
    out->addr = e.addr;
    out->version = (uint8_t)mt_eh_read(b, 1);
    if (out->version != 1 && out->version != 3 && out->version != 4)
        return "unsupported CIE version";
    const char *aug = (const char *)b->p;
    const uint8_t *nul = b->fail ? NULL : memchr(b->p, '\0', (size_t)(b->end - b->p));
    if (!nul)
        return "unterminated CIE augmentation string";
    mt_eh_skip(b, (uint64_t)(nul + 1 - b->p));
    if (out->version == 4)
        mt_eh_skip(b, 2); /* address and segment selector sizes */
    if (strstr(aug, "eh"))
        mt_eh_skip(b, 8); /* old GCC "eh" data pointer */
    out->code_align = mt_eh_uleb(b);
    out->data_align = mt_eh_sleb(b);
    if (out->version == 1)
        mt_eh_read(b, 1); /* return address register */
    else
        mt_eh_uleb(b);
    out->fde_enc = MT_PE_ABSPTR;
    out->lsda_enc = MT_PE_OMIT;
    out->has_z = aug[0] == 'z';
    if (!out->has_z) {
        out->unknown_augmentation = aug[0] && strcmp(aug, "eh") != 0;
        return b->fail;
    }
    uint64_t aug_len = mt_eh_uleb(b);
    if (b->fail || aug_len > (uint64_t)(b->end - b->p))
        return "CIE augmentation data out of bounds";
    mt_eh_cursor a = {b->p, b->p + aug_len, b->vaddr, NULL};
    read_augmentation(&a, aug, out);
    if (a.fail)
        return a.fail;
    return out->fde_enc == MT_PE_OMIT ? "CIE has no FDE pointer encoding" : NULL;
}

const char *mt_eh_parse_fde(const mt_eh_entry *e, const mt_eh_cie *cie, mt_eh_fde *out)
{
    mt_eh_cursor b = e->body;
    memset(out, 0, sizeof *out);
    out->addr = e->addr;
    out->cie = *cie;
    out->begin = mt_eh_pointer(&b, cie->fde_enc);
    out->end = out->begin + mt_eh_value(&b, cie->fde_enc & 0x0f);
    if (cie->has_z) {
        uint64_t aug_len = mt_eh_uleb(&b);
        if (b.fail || aug_len > (uint64_t)(b.end - b.p))
            return "FDE augmentation data out of bounds";
        mt_eh_cursor a = {b.p, b.p + aug_len, b.vaddr, NULL};
        if (cie->lsda_enc != MT_PE_OMIT && aug_len) {
            if (cie->lsda_enc & MT_PE_INDIRECT)
                return "indirect LSDA pointer";
            out->lsda = mt_eh_pointer(&a, cie->lsda_enc);
        }
        if (a.fail)
            return a.fail;
        mt_eh_skip(&b, aug_len);
    }
    out->program = b;
    return b.fail;
}

const char *mt_lsda_parse(mt_eh_cursor c, uint64_t fde_begin, mt_lsda *out)
{
    memset(out, 0, sizeof *out);
    out->lpstart = fde_begin;
    uint8_t lpstart_enc = (uint8_t)mt_eh_read(&c, 1);
    if (lpstart_enc != MT_PE_OMIT)
        out->lpstart = mt_eh_pointer(&c, lpstart_enc);
    out->ttype_enc = (uint8_t)mt_eh_read(&c, 1);
    if (out->ttype_enc != MT_PE_OMIT) {
        uint64_t offset = mt_eh_uleb(&c);
        out->ttype_base = c.vaddr + offset;
    }
    uint8_t cs_enc = (uint8_t)mt_eh_read(&c, 1);
    uint64_t cs_len = mt_eh_uleb(&c);
    if (c.fail)
        return c.fail;
    if (cs_len > (uint64_t)(c.end - c.p))
        return "call-site table out of bounds";
    mt_eh_cursor cs = {c.p, c.p + cs_len, c.vaddr, NULL};
    out->cs_end = c.vaddr + cs_len;
    size_t cap = 0;
    while (cs.p < cs.end && !cs.fail) {
        /* Call-site fields are offsets, not applied pointers. */
        mt_lsda_call_site s;
        s.start = fde_begin + mt_eh_value(&cs, cs_enc);
        s.len = mt_eh_value(&cs, cs_enc);
        uint64_t lp = mt_eh_value(&cs, cs_enc);
        s.landing_pad = lp ? out->lpstart + lp : 0;
        s.action = mt_eh_uleb(&cs);
        if (!cs.fail)
            MT_PUSH(out->sites, out->nsites, cap, s);
    }
    return cs.fail;
}

void mt_lsda_free(mt_lsda *l)
{
    free(l->sites);
    l->sites = NULL;
    l->nsites = 0;
}
