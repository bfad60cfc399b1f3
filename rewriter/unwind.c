/* rewriter/unwind.c — unwind information for relocated code.
 *
 * C++ exceptions, backtrace() and every unwinder that follows the ABI find
 * a frame's unwind rules through PT_GNU_EH_FRAME: a sorted table of
 * (first address, FDE) pairs.  For every relocated procedure part we write
 * a copy of its FDE whose CFA program is remapped through the move (each
 * location advance lands on the new address of the same instruction; a
 * probe before an instruction runs with that instruction's unwind state),
 * still pointing at the original CIE, and a copy of its LSDA with the
 * call-site ranges and landing pads moved.  A new .eh_frame_hdr lists the
 * original FDEs (the original code still runs at times) and the new ones.
 *
 * The 31-byte flags-saving probe moves %rsp for a few instructions
 * (lea -128(%rsp) and a push of %rax around lahf/seto); an asynchronous
 * unwind from inside it (a profiler's signal, a debugger stopping there)
 * would see a wrong CFA when the CFA is %rsp-based.  That is accepted: no
 * call and no exception can happen inside a probe.
 *
 * A file without PT_GNU_EH_FRAME (a static executable linked without
 * --eh-frame-hdr) but with an .eh_frame section gets a header too: libgcc
 * finds registered FDEs of the original code but looks for any other pc
 * through PT_GNU_EH_FRAME, which the driver must then add.
 *
 * Unwinders find the copies through the new header only: tools that read
 * .eh_frame by section header (readelf, gdb) do not see the new FDEs. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum {
    PE_ABSPTR = 0x00, PE_ULEB128 = 0x01, PE_UDATA2 = 0x02, PE_UDATA4 = 0x03, PE_UDATA8 = 0x04,
    PE_SLEB128 = 0x09, PE_SDATA2 = 0x0a, PE_SDATA4 = 0x0b, PE_SDATA8 = 0x0c,
    PE_PCREL = 0x10, PE_DATAREL = 0x30, PE_OMIT = 0xff,
};

/* ---- reading, bounds-checked ------------------------------------------- */

typedef struct {
    const uint8_t *p, *end;
    uint64_t vaddr;     /* address of *p */
    bool bad;
} reader;

static bool reader_at(const rw_input *in, uint64_t vaddr, reader *r)
{
    /* Unwind data has no overall length here: read up to the end of the
     * segment's file image. */
    for (size_t i = 0; i < in->elf.nphdrs; i++) {
        const Elf64_Phdr *ph = &in->elf.phdrs[i];
        if (ph->p_type != PT_LOAD || vaddr < ph->p_vaddr || vaddr - ph->p_vaddr >= ph->p_filesz)
            continue;
        uint64_t avail = ph->p_filesz - (vaddr - ph->p_vaddr);
        const uint8_t *p = rw_input_bytes_at(in, vaddr, avail);
        if (!p)
            return false;
        *r = (reader){p, p + avail, vaddr, false};
        return true;
    }
    return false;
}

static uint64_t get(reader *r, size_t n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = true;
        return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)r->p[i] << (8 * i);
    r->p += n;
    r->vaddr += n;
    return v;
}

/* Skips n bytes (a DWARF expression). */
static void skip_bytes(reader *r, uint64_t n)
{
    if (r->bad || (uint64_t)(r->end - r->p) < n) {
        r->bad = true;
        return;
    }
    r->p += n;
    r->vaddr += n;
}

static uint64_t get_uleb(reader *r)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        uint8_t b = (uint8_t)get(r, 1);
        if (r->bad)
            return 0;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    r->bad = true;
    return 0;
}

static int64_t get_sleb(reader *r)
{
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        b = (uint8_t)get(r, 1);
        if (r->bad || shift > 63) {
            r->bad = true;
            return 0;
        }
        v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40))
        v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

/* Bytes of a fixed-size encoded value, 0 for LEB128 or unknown. */
static size_t enc_size(uint8_t enc)
{
    switch (enc & 0x0f) {
    case PE_ABSPTR: case PE_UDATA8: case PE_SDATA8: return 8;
    case PE_UDATA4: case PE_SDATA4: return 4;
    case PE_UDATA2: case PE_SDATA2: return 2;
    default: return 0;
    }
}

static uint64_t get_value(reader *r, uint8_t enc)
{
    switch (enc & 0x0f) {
    case PE_ULEB128: return get_uleb(r);
    case PE_SLEB128: return (uint64_t)get_sleb(r);
    case PE_SDATA2: return (uint64_t)(int64_t)(int16_t)get(r, 2);
    case PE_SDATA4: return (uint64_t)(int64_t)(int32_t)get(r, 4);
    default:
        if (!enc_size(enc))
            r->bad = true;
        return get(r, enc_size(enc));
    }
}

/* An encoded pointer, applied (not dereferenced: DW_EH_PE_indirect entries
 * point at a slot that does not move).  A raw 0 stays 0, "no pointer", as
 * in libgcc.  DW_EH_PE_datarel has base 0 on x86-64: libgcc sets a data
 * base only on i386. */
static uint64_t get_pointer(reader *r, uint8_t enc)
{
    uint64_t field = r->vaddr, v = get_value(r, enc);
    switch (enc & 0x70) {
    case PE_ABSPTR: case PE_DATAREL: return v;
    case PE_PCREL: return v ? field + v : 0;
    default: r->bad = true; return 0;
    }
}

/* ---- writing ----------------------------------------------------------- */

/* Whether `v` fits the fixed-size encoding `enc` (signed or unsigned). */
static bool fits(uint8_t enc, uint64_t v)
{
    size_t n = enc_size(enc);
    if (n == 0)
        return false;
    if (n == 8)
        return true;
    unsigned bits = (unsigned)(8 * n);
    if (enc & 0x08) { /* sdata: v sign-extended from `bits` is v */
        uint64_t high = v >> (bits - 1);
        return high == 0 || high == ~(uint64_t)0 >> (bits - 1);
    }
    return v >> bits == 0;
}

/* Writes `value` with the fixed-size encoding `enc` (absolute, pc-relative
 * or data-relative to 0) at output address `at`; false when it does not fit. */
static bool put_pointer(rw_buf *b, uint8_t enc, uint64_t value, uint64_t at)
{
    uint64_t v = (enc & 0x70) == PE_PCREL && value ? value - at : value;
    if (((enc & 0x70) != PE_ABSPTR && (enc & 0x70) != PE_PCREL && (enc & 0x70) != PE_DATAREL) ||
        !fits(enc, v))
        return false;
    size_t n = enc_size(enc);
    for (size_t i = 0; i < n; i++)
        rw_buf_u8(b, (uint8_t)(v >> (8 * i)));
    return true;
}

/* ---- the move ---------------------------------------------------------- */

typedef struct {
    const rw_input *in;
    const rw_moved **by_old;   /* the moved ranges sorted by original address */
    size_t nmoved;
    rw_buf *out;
    uint64_t out_vaddr;
    mt_error *err;
} unwind_ctx;

static uint64_t here(const unwind_ctx *u) { return u->out_vaddr + u->out->len; }

/* New address of the first copied instruction at or after `old` in `m`
 * (copies keep the original order), or m->new_end past the last one. */
static uint64_t map_at_or_after(const rw_moved *m, uint64_t old)
{
    size_t lo = 0, hi = m->naddrs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->old_addrs[mid] < old)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->naddrs ? m->new_addrs[lo] : m->new_end;
}

/* The moved range holding original instruction `old`, or NULL. */
static const rw_moved *range_of(const unwind_ctx *u, uint64_t old)
{
    size_t lo = 0, hi = u->nmoved;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (u->by_old[mid]->old_start <= old)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && old < u->by_old[lo - 1]->old_end ? u->by_old[lo - 1] : NULL;
}

static int by_old_start(const void *a, const void *b)
{
    const rw_moved *x = *(const rw_moved *const *)a, *y = *(const rw_moved *const *)b;
    return x->old_start < y->old_start ? -1 : x->old_start > y->old_start;
}

/* ---- CIEs and FDEs --------------------------------------------------------- */

typedef struct {
    uint64_t addr;
    uint8_t fde_enc, lsda_enc;
    bool has_z;
    uint64_t code_align;
} cie_info;

typedef struct {
    uint64_t addr;                 /* of the length field */
    uint64_t begin, end;           /* code range */
    uint64_t lsda;                 /* 0 = none */
    const uint8_t *insns, *insns_end; /* CFA program */
    uint64_t insns_vaddr;             /* its address, for DW_CFA_set_loc */
    cie_info cie;
} fde_info;

/* A reader over the CIE or FDE at `addr`, bounded by its length (the
 * 64-bit DWARF format does not occur in .eh_frame on x86-64). */
static bool entry_at(const rw_input *in, uint64_t addr, reader *r)
{
    if (!reader_at(in, addr, r))
        return false;
    uint64_t len = get(r, 4);
    if (len == 0xffffffffu || len > (uint64_t)(r->end - r->p))
        return false;
    r->end = r->p + len;
    return true;
}

static bool parse_cie(const rw_input *in, uint64_t addr, cie_info *c)
{
    reader r;
    if (!entry_at(in, addr, &r))
        return false;
    if (get(&r, 4) != 0)
        return false;
    uint8_t version = (uint8_t)get(&r, 1);
    const char *aug = (const char *)r.p;
    const uint8_t *nul = r.bad ? NULL : memchr(r.p, 0, (size_t)(r.end - r.p));
    if (!nul || (version != 1 && version != 3))
        return false;
    r.vaddr += (uint64_t)(nul + 1 - r.p);
    r.p = nul + 1;
    c->addr = addr;
    c->code_align = get_uleb(&r);
    get_sleb(&r); /* data alignment */
    if (version == 1)
        get(&r, 1);
    else
        get_uleb(&r);
    c->fde_enc = PE_ABSPTR;
    c->lsda_enc = PE_OMIT;
    c->has_z = aug[0] == 'z';
    if (!c->has_z)
        return !r.bad && aug[0] == 0;
    uint64_t aug_len = get_uleb(&r);
    if (r.bad || aug_len > (uint64_t)(r.end - r.p))
        return false;
    for (const char *a = aug + 1; *a && !r.bad; a++) {
        if (*a == 'R')
            c->fde_enc = (uint8_t)get(&r, 1);
        else if (*a == 'L')
            c->lsda_enc = (uint8_t)get(&r, 1);
        else if (*a == 'P')
            get_pointer(&r, (uint8_t)get(&r, 1));
        else if (*a != 'S')
            return false;
    }
    return !r.bad && enc_size(c->fde_enc) != 0;
}

static bool parse_fde(const rw_input *in, uint64_t addr, fde_info *f)
{
    reader r;
    if (!entry_at(in, addr, &r))
        return false;
    uint64_t id_at = r.vaddr, cie_ptr = get(&r, 4);
    if (r.bad || cie_ptr == 0 || cie_ptr > id_at || !parse_cie(in, id_at - cie_ptr, &f->cie))
        return false;
    f->addr = addr;
    f->begin = get_pointer(&r, f->cie.fde_enc);
    f->end = f->begin + get_value(&r, f->cie.fde_enc & 0x0f);
    f->lsda = 0;
    if (f->cie.has_z) {
        uint64_t aug_len = get_uleb(&r);
        if (r.bad || aug_len > (uint64_t)(r.end - r.p))
            return false;
        const uint8_t *after = r.p + aug_len;
        if (f->cie.lsda_enc != PE_OMIT && aug_len)
            f->lsda = get_pointer(&r, f->cie.lsda_enc);
        r.vaddr += (uint64_t)(after - r.p);
        r.p = after;
    }
    f->insns = r.p;
    f->insns_end = r.end;
    f->insns_vaddr = r.vaddr;
    return !r.bad;
}

/* ---- the CFA program, remapped ------------------------------------------ */

static void put_advance(rw_buf *b, uint64_t delta)
{
    if (delta == 0)
        return;
    if (delta < 0x40) {
        rw_buf_u8(b, (uint8_t)(0x40 | delta));
    } else if (delta <= 0xff) {
        rw_buf_u8(b, 0x02);
        rw_buf_u8(b, (uint8_t)delta);
    } else if (delta <= 0xffff) {
        rw_buf_u8(b, 0x03);
        rw_buf_u8(b, (uint8_t)delta);
        rw_buf_u8(b, (uint8_t)(delta >> 8));
    } else {
        rw_buf_u8(b, 0x04);
        rw_buf_u32(b, (uint32_t)delta);
    }
}

/* Skips the operands of DW_CFA opcode `op` (not an advance). */
static void skip_operands(reader *r, uint8_t op)
{
    if ((op & 0xc0) == 0x80) { /* DW_CFA_offset */
        get_uleb(r);
        return;
    }
    if ((op & 0xc0) == 0xc0) /* DW_CFA_restore */
        return;
    switch (op) {
    case 0x05: case 0x09: case 0x0c: case 0x14: case 0x2f:
        get_uleb(r); get_uleb(r); break;
    case 0x11: case 0x12: case 0x15:
        get_uleb(r); get_sleb(r); break;
    case 0x06: case 0x07: case 0x08: case 0x0d: case 0x0e: case 0x2e:
        get_uleb(r); break;
    case 0x13: get_sleb(r); break;
    case 0x0f:                                          /* def_cfa_expression */
        skip_bytes(r, get_uleb(r));
        break;
    case 0x10: case 0x16:                               /* (val_)expression */
        get_uleb(r);
        skip_bytes(r, get_uleb(r));
        break;
    case 0x00: case 0x0a: case 0x0b: break;
    default: r->bad = true;
    }
}

/* When `op` moves the location (DW_CFA_advance_loc*, DW_CFA_set_loc), reads
 * its operand and updates *loc; false for every other opcode.  The code
 * alignment factor is 1 (checked by the caller). */
static bool location_op(reader *r, uint8_t op, const fde_info *f, uint64_t *loc)
{
    if ((op & 0xc0) == 0x40)
        *loc += op & 0x3f;
    else if (op == 0x02)
        *loc += get(r, 1);
    else if (op == 0x03)
        *loc += get(r, 2);
    else if (op == 0x04)
        *loc += get(r, 4);
    else if (op == 0x01)
        *loc = get_pointer(r, f->cie.fde_enc);
    else
        return false;
    return true;
}

/* Copies the FDE's CFA program for the part [lo, hi) of moved range `m`:
 * rules stated before lo apply from the new start, every location is
 * remapped (DW_CFA_set_loc becomes an advance: the copy keeps the original
 * order), and the program stops at hi. */
static bool remap_program(const fde_info *f, const rw_moved *m, uint64_t lo, uint64_t hi,
                          rw_buf *b)
{
    reader r = {f->insns, f->insns_end, f->insns_vaddr, false};
    uint64_t loc = f->begin, new_loc = map_at_or_after(m, lo);
    while (r.p < r.end && !r.bad) {
        const uint8_t *start = r.p;
        uint8_t op = (uint8_t)get(&r, 1);
        uint64_t before = loc;
        if (location_op(&r, op, f, &loc)) {
            if (loc < before)
                return false; /* a location going back: no unwinder reads that */
            if (loc >= hi)
                break;
            if (loc > lo) {
                uint64_t to = map_at_or_after(m, loc);
                put_advance(b, to - new_loc);
                new_loc = to;
            }
            continue;
        }
        skip_operands(&r, op);
        rw_buf_put(b, start, (size_t)(r.p - start));
    }
    return !r.bad;
}

/* ---- LSDAs ------------------------------------------------------------------ */

typedef struct {
    uint64_t start, len, lp, action;
} call_site;

typedef struct {
    uint8_t ttype_enc;
    uint64_t cs_end;          /* address where the action table starts */
    uint64_t ttype_base;      /* 0 when there is no type table */
    uint64_t region_end;      /* end of actions, types and exception specs */
    call_site *sites;
    size_t nsites, cap;
    uint64_t max_filter;      /* entries used in the type table */
} lsda_info;

/* An exception specification list (after the type-table base, a list of
 * type-table indices ending in 0): its end and the entries it uses. */
static bool measure_spec(const rw_input *in, lsda_info *l, uint64_t offset)
{
    reader s;
    if (!reader_at(in, l->ttype_base + offset - 1, &s))
        return false;
    for (uint64_t index; (index = get_uleb(&s)) != 0 && !s.bad;)
        if (index > l->max_filter)
            l->max_filter = index;
    if (s.vaddr > l->region_end)
        l->region_end = s.vaddr;
    return !s.bad;
}

/* Walks the action chains the call sites use: how many type-table entries
 * and how many exception-spec bytes the LSDA really has. */
static void measure_actions(const rw_input *in, lsda_info *l, reader *base)
{
    for (size_t i = 0; i < l->nsites && !base->bad; i++) {
        uint64_t a = l->sites[i].action;
        for (int guard = 0; a && guard < 1000; guard++) {
            reader r;
            if (!reader_at(in, l->cs_end + a - 1, &r)) {
                base->bad = true;
                return;
            }
            int64_t filter = get_sleb(&r);
            uint64_t next_at = r.vaddr;
            int64_t disp = get_sleb(&r);
            if (r.bad) {
                base->bad = true;
                return;
            }
            if (r.vaddr > l->region_end)
                l->region_end = r.vaddr;
            if (filter > 0 && (uint64_t)filter > l->max_filter)
                l->max_filter = (uint64_t)filter;
            if (filter < 0 && l->ttype_base && !measure_spec(in, l, 0 - (uint64_t)filter)) {
                base->bad = true;
                return;
            }
            if (disp == 0)
                break;
            a = next_at + (uint64_t)disp - l->cs_end + 1;
        }
    }
    if (l->ttype_base > l->region_end)
        l->region_end = l->ttype_base;
}

static bool parse_lsda(const rw_input *in, const fde_info *f, lsda_info *l)
{
    memset(l, 0, sizeof *l);
    reader r;
    if (!reader_at(in, f->lsda, &r))
        return false;
    uint64_t lpstart = f->begin;
    uint8_t lpstart_enc = (uint8_t)get(&r, 1);
    if (lpstart_enc != PE_OMIT)
        lpstart = get_pointer(&r, lpstart_enc);
    l->ttype_enc = (uint8_t)get(&r, 1);
    if (l->ttype_enc != PE_OMIT) {
        uint64_t off = get_uleb(&r);
        l->ttype_base = r.vaddr + off;
    }
    uint8_t cs_enc = (uint8_t)get(&r, 1);
    uint64_t cs_len = get_uleb(&r);
    if (r.bad || cs_len > (uint64_t)(r.end - r.p))
        return false;
    const uint8_t *cs_end = r.p + cs_len;
    l->cs_end = r.vaddr + cs_len;
    while (r.p < cs_end && !r.bad) {
        call_site s;
        s.start = f->begin + get_value(&r, cs_enc);
        s.len = get_value(&r, cs_enc);
        uint64_t lp = get_value(&r, cs_enc);
        s.lp = lp ? lpstart + lp : 0;
        s.action = get_uleb(&r);
        MT_PUSH(l->sites, l->nsites, l->cap, s);
    }
    l->region_end = l->cs_end;
    if (l->ttype_base && l->ttype_base < l->cs_end)
        return false; /* the type table would overlap the call sites */
    if (!r.bad)
        measure_actions(in, l, &r);
    return !r.bad && (l->ttype_enc == PE_OMIT || enc_size(l->ttype_enc) != 0);
}

static bool in_part(const call_site *s, uint64_t lo, uint64_t hi)
{
    return s->start < hi && s->start + s->len > lo;
}

/* A part of a procedure being written: [lo, hi) of moved range m, whose
 * new FDE starts at new_begin. */
typedef struct {
    const rw_moved *m;
    uint64_t lo, hi, new_begin;
} part;

/* The new landing pads of the part's call sites (0: none) and the LPStart
 * they are measured from: the new start, unless a pad lies at or below it
 * (in another moved part), as an offset of 0 means "no landing pad".
 * NULL with u->err set when a pad was not relocated. */
static uint64_t *move_landing_pads(unwind_ctx *u, const lsda_info *l, const part *pt,
                                   uint64_t *lpstart)
{
    uint64_t *new_lp = mt_xcalloc(l->nsites + 1, sizeof *new_lp);
    *lpstart = pt->new_begin;
    for (size_t i = 0; i < l->nsites; i++) {
        const call_site *s = &l->sites[i];
        if (!s->lp || !in_part(s, pt->lo, pt->hi))
            continue;
        const rw_moved *pm = range_of(u, s->lp);
        new_lp[i] = rw_moved_landing_pad(pt->m, s->start, s->len, s->lp);
        if (!new_lp[i])
            new_lp[i] = pm ? rw_moved_lookup(pm, s->lp) : 0;
        if (!new_lp[i]) {
            mt_error_set(u->err, "%s: procedure at 0x%llx: landing pad 0x%llx not relocated",
                         u->in->elf.path, (unsigned long long)pt->m->old_start,
                         (unsigned long long)s->lp);
            free(new_lp);
            return NULL;
        }
        if (new_lp[i] <= *lpstart)
            *lpstart = new_lp[i] - 1;
    }
    return new_lp;
}

/* The call-site table of the part, uleb128-encoded.  A call site reaching
 * past the part is cut at its edge: its other piece, if relocated, belongs
 * to another part and gets its own record there. */
static void write_call_sites(rw_buf *cs, const lsda_info *l, const uint64_t *new_lp,
                             const part *pt, uint64_t lpstart)
{
    for (size_t i = 0; i < l->nsites; i++) {
        const call_site *s = &l->sites[i];
        if (!in_part(s, pt->lo, pt->hi))
            continue;
        uint64_t end = s->start + s->len < pt->hi ? s->start + s->len : pt->hi;
        uint64_t ns = map_at_or_after(pt->m, s->start > pt->lo ? s->start : pt->lo);
        uint64_t ne = end >= pt->m->old_end ? pt->m->new_end : map_at_or_after(pt->m, end);
        rw_buf_uleb(cs, ns - pt->new_begin);
        rw_buf_uleb(cs, ne - ns);
        rw_buf_uleb(cs, new_lp[i] ? new_lp[i] - lpstart : 0);
        rw_buf_uleb(cs, s->action);
    }
}

/* Re-encodes, for their new position, the pc-relative type-table entries
 * of the region copied from l->cs_end to out address `new_region` (the
 * typeinfo objects, or for DW_EH_PE_indirect the slots holding their
 * addresses, do not move).  Absolute entries stay as they are. */
static bool move_type_table(unwind_ctx *u, const lsda_info *l, uint64_t new_region)
{
    if (!l->ttype_base)
        return true;
    size_t es = enc_size(l->ttype_enc);
    uint64_t base_in_region = l->ttype_base - l->cs_end;
    if (l->max_filter > base_in_region / es)
        return false; /* entries in use reach back into the call-site table */
    if ((l->ttype_enc & 0x70) == PE_ABSPTR || (l->ttype_enc & 0x70) == PE_DATAREL)
        return true; /* absolute (datarel has base 0 on x86-64) */
    if ((l->ttype_enc & 0x70) != PE_PCREL)
        return false;
    uint8_t *region = u->out->data + (new_region - u->out_vaddr);
    for (uint64_t i = 1; i <= l->max_filter; i++) {
        uint8_t *p = region + base_in_region - i * es;
        uint64_t v = 0;
        for (size_t k = 0; k < es; k++)
            v |= (uint64_t)p[k] << (8 * k);
        if (v == 0)
            continue; /* catch (...) */
        if ((l->ttype_enc & 0x08) && es < 8 && (v >> (8 * es - 1)))
            v |= ~(uint64_t)0 << (8 * es); /* sign-extend */
        v += l->cs_end - new_region;
        if (!fits(l->ttype_enc, v))
            return false;
        for (size_t k = 0; k < es; k++)
            p[k] = (uint8_t)(v >> (8 * k));
    }
    return true;
}

static size_t uleb_size(uint64_t v)
{
    size_t n = 1;
    while (v >>= 7)
        n++;
    return n;
}

/* Appends the new LSDA: header, the call-site table `cs`, then the action
 * table, type table and exception specs copied from the original region. */
static bool put_lsda(unwind_ctx *u, const lsda_info *l, const rw_buf *cs, uint64_t lpstart,
                     uint64_t new_begin, const uint8_t *region)
{
    rw_buf *b = u->out;
    rw_buf_u8(b, lpstart == new_begin ? PE_OMIT : PE_PCREL | PE_SDATA4);
    if (lpstart != new_begin && !put_pointer(b, PE_PCREL | PE_SDATA4, lpstart, here(u)))
        return false;
    rw_buf_u8(b, l->ttype_enc);
    if (l->ttype_enc != PE_OMIT) {
        /* Measured from the end of this field: the call-site encoding and
         * length, the table, then the region up to the base. */
        rw_buf_uleb(b, 1 + uleb_size(cs->len) + cs->len + (l->ttype_base - l->cs_end));
    }
    rw_buf_u8(b, PE_ULEB128);
    rw_buf_uleb(b, cs->len);
    rw_buf_put(b, cs->data, cs->len);
    uint64_t new_region = here(u);
    rw_buf_put(b, region, l->region_end - l->cs_end);
    return move_type_table(u, l, new_region);
}

/* Writes the LSDA of the part; returns its address, or 0 with u->err set. */
static uint64_t write_lsda(unwind_ctx *u, const fde_info *f, const part *pt)
{
    lsda_info l;
    if (!parse_lsda(u->in, f, &l)) {
        free(l.sites);
        mt_error_set(u->err, "%s: malformed exception table (LSDA) at 0x%llx", u->in->elf.path,
                     (unsigned long long)f->lsda);
        return 0;
    }
    uint64_t lpstart, at = 0;
    uint64_t *new_lp = move_landing_pads(u, &l, pt, &lpstart);
    const uint8_t *region = rw_input_bytes_at(u->in, l.cs_end, l.region_end - l.cs_end);
    if (new_lp && !region)
        mt_error_set(u->err, "%s: exception table at 0x%llx extends past its segment",
                     u->in->elf.path, (unsigned long long)f->lsda);
    if (new_lp && region) {
        rw_buf cs = {0};
        write_call_sites(&cs, &l, new_lp, pt, lpstart);
        at = here(u);
        if (!put_lsda(u, &l, &cs, lpstart, pt->new_begin, region)) {
            mt_error_set(u->err, "%s: exception table at 0x%llx: type table or landing-pad "
                         "base cannot be moved", u->in->elf.path, (unsigned long long)f->lsda);
            at = 0;
        }
        rw_buf_free(&cs);
    }
    free(new_lp);
    free(l.sites);
    return at;
}

/* ---- new FDEs ------------------------------------------------------------ */

typedef struct {
    uint64_t loc, fde; /* first code address, FDE address */
} hdr_entry;

typedef struct {
    hdr_entry *v;
    size_t n, cap;
} hdr_table;

/* The FDE's header fields: length (patched by the caller), CIE pointer,
 * code range and augmentation data with the LSDA pointer. */
static bool put_fde_header(unwind_ctx *u, const fde_info *f, uint64_t new_begin,
                           uint64_t new_end, uint64_t lsda)
{
    rw_buf *b = u->out;
    rw_buf_u32(b, 0);
    /* The distance back to the original CIE, read as unsigned 32 bits. */
    uint64_t cie_delta = here(u) - f->cie.addr;
    if (cie_delta >> 32)
        return false;
    rw_buf_u32(b, (uint32_t)cie_delta);
    if (!put_pointer(b, f->cie.fde_enc, new_begin, here(u)) ||
        !put_pointer(b, f->cie.fde_enc & 0x0f, new_end - new_begin, here(u)))
        return false;
    if (!f->cie.has_z)
        return true;
    size_t n = f->cie.lsda_enc != PE_OMIT ? enc_size(f->cie.lsda_enc) : 0;
    rw_buf_uleb(b, n);
    return !n || put_pointer(b, f->cie.lsda_enc, lsda, here(u));
}

/* Writes the FDE, and the LSDA when there is one, of a part. */
static bool write_fde(unwind_ctx *u, const fde_info *f, const part *pt, uint64_t new_end,
                      hdr_table *t, rw_unwind_out *res)
{
    uint64_t lsda = 0;
    if (f->lsda) {
        if (!(lsda = write_lsda(u, f, pt)))
            return false;
        res->nlsdas_written++;
    }
    rw_buf *b = u->out;
    rw_buf_align(b, 8, 0);
    size_t start = b->len;
    uint64_t fde_addr = here(u);
    if (!put_fde_header(u, f, pt->new_begin, new_end, lsda)) {
        mt_error_set(u->err, "%s: FDE at 0x%llx: a field of its copy does not fit its encoding",
                     u->in->elf.path, (unsigned long long)f->addr);
        return false;
    }
    if (!remap_program(f, pt->m, pt->lo, pt->hi, b)) {
        mt_error_set(u->err, "%s: FDE at 0x%llx: call-frame program cannot be remapped",
                     u->in->elf.path, (unsigned long long)f->addr);
        return false;
    }
    rw_buf_align(b, 8, 0); /* DW_CFA_nop */
    rw_buf_patch_u32(b, start, (uint32_t)(b->len - start - 4));
    hdr_entry e = {pt->new_begin, fde_addr};
    MT_PUSH(t->v, t->n, t->cap, e);
    res->nfdes_written++;
    return true;
}

/* Index of the last original FDE starting at or before `addr` (it may
 * cover it), or of the first one when none does. */
static size_t first_fde_covering(const hdr_table *t, size_t n, uint64_t addr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->v[mid].loc <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 ? lo - 1 : 0;
}

/* Writes the FDEs of moved range `m`: one per original FDE overlapping it,
 * for the overlap.  `t` holds the `noriginal` original FDEs, sorted, and
 * receives the new ones. */
static bool write_range(unwind_ctx *u, const rw_moved *m, hdr_table *t, size_t noriginal,
                        rw_unwind_out *res)
{
    for (size_t k = first_fde_covering(t, noriginal, m->old_start);
         k < noriginal && t->v[k].loc < m->old_end; k++) {
        fde_info f;
        if (!parse_fde(u->in, t->v[k].fde, &f)) {
            mt_error_set(u->err, "%s: malformed FDE at 0x%llx", u->in->elf.path,
                         (unsigned long long)t->v[k].fde);
            return false;
        }
        part pt = {m, f.begin > m->old_start ? f.begin : m->old_start,
                   f.end < m->old_end ? f.end : m->old_end, 0};
        if (pt.lo >= pt.hi)
            continue;
        if (f.cie.code_align != 1) {
            mt_error_set(u->err, "%s: CIE at 0x%llx: code alignment factor %llu, not 1",
                         u->in->elf.path, (unsigned long long)f.cie.addr,
                         (unsigned long long)f.cie.code_align);
            return false;
        }
        pt.new_begin = map_at_or_after(m, pt.lo);
        uint64_t new_end = pt.hi >= m->old_end ? m->new_end : map_at_or_after(m, pt.hi);
        if (pt.new_begin >= new_end)
            continue; /* no instruction of the overlap was copied */
        if (!write_fde(u, &f, &pt, new_end, t, res))
            return false;
    }
    return true;
}

/* ---- the original .eh_frame_hdr and .eh_frame ----------------------------- */

static const Elf64_Phdr *eh_frame_phdr(const rw_input *in)
{
    for (size_t i = 0; i < in->elf.nphdrs; i++)
        if (in->elf.phdrs[i].p_type == PT_GNU_EH_FRAME)
            return &in->elf.phdrs[i];
    return NULL;
}

/* Reads the header's eh_frame_ptr and, when it has a search table in the
 * one encoding unwinders use (*has_table), the table. */
static bool read_hdr(const rw_input *in, const Elf64_Phdr *ph, uint64_t *eh_frame,
                     bool *has_table, hdr_table *t)
{
    reader r;
    if (!reader_at(in, ph->p_vaddr, &r))
        return false;
    uint64_t hdr = r.vaddr;
    uint8_t version = (uint8_t)get(&r, 1), ptr_enc = (uint8_t)get(&r, 1),
            count_enc = (uint8_t)get(&r, 1), table_enc = (uint8_t)get(&r, 1);
    if (r.bad || version != 1)
        return false;
    *eh_frame = get_pointer(&r, ptr_enc);
    *has_table = count_enc != PE_OMIT && table_enc == (PE_DATAREL | PE_SDATA4);
    if (!*has_table)
        return !r.bad;
    uint64_t n = get_value(&r, count_enc);
    if (r.bad || n > (uint64_t)(r.end - r.p) / 8)
        return false;
    for (uint64_t i = 0; i < n; i++) {
        hdr_entry e;
        e.loc = hdr + (uint64_t)(int64_t)(int32_t)get(&r, 4);
        e.fde = hdr + (uint64_t)(int64_t)(int32_t)get(&r, 4);
        MT_PUSH(t->v, t->n, t->cap, e);
    }
    return !r.bad;
}

/* Collects the FDEs of .eh_frame at [at, end) (end 0: up to its zero
 * terminator or the end of its segment), skipping CIEs and FDEs of
 * discarded code (address or size 0). */
static bool walk_eh_frame(const rw_input *in, uint64_t at, uint64_t end, hdr_table *t)
{
    reader r;
    if (!end && reader_at(in, at, &r))
        end = at + (uint64_t)(r.end - r.p);
    while (at < end) {
        if (!reader_at(in, at, &r))
            return false;
        uint64_t len = get(&r, 4);
        if (!r.bad && len == 0)
            return true; /* terminator */
        uint64_t id = get(&r, 4);
        if (r.bad || len == 0xffffffffu || len - 4 > (uint64_t)(r.end - r.p))
            return false;
        fde_info f;
        if (id != 0 && !parse_fde(in, at, &f))
            return false;
        if (id != 0 && f.begin && f.end > f.begin) {
            hdr_entry e = {f.begin, at};
            MT_PUSH(t->v, t->n, t->cap, e);
        }
        at += 4 + len;
    }
    return true;
}

static int by_loc(const void *a, const void *b)
{
    const hdr_entry *x = a, *y = b;
    return x->loc < y->loc ? -1 : x->loc > y->loc;
}

/* The original .eh_frame (by section header; through the header's
 * eh_frame_ptr in files without sections) and its FDEs, sorted: from the
 * header's search table, else by walking .eh_frame.  `ph` is NULL when the
 * file has no header (static executables linked without --eh-frame-hdr). */
static bool original_fdes(const rw_input *in, const Elf64_Phdr *ph,
                          const Elf64_Shdr *sec, uint64_t *eh_frame, hdr_table *t)
{
    bool has_table = false;
    if (ph && !read_hdr(in, ph, eh_frame, &has_table, t))
        return false;
    if (!ph)
        *eh_frame = sec->sh_addr;
    uint64_t end = 0;
    if (sec) {
        if (sec->sh_addr != *eh_frame)
            return false; /* the header and the section disagree */
        end = sec->sh_addr + sec->sh_size;
    }
    if (!has_table && !walk_eh_frame(in, *eh_frame, end, t))
        return false;
    if (t->n)
        qsort(t->v, t->n, sizeof *t->v, by_loc);
    return true;
}

/* ---- the new .eh_frame_hdr -------------------------------------------------- */

/* Appends the header: version 1, eh_frame_ptr pcrel|sdata4 to the original
 * .eh_frame, count udata4, and the table datarel|sdata4 (relative to the
 * header, 4-byte aligned as libgcc requires for its binary search). */
static bool write_hdr(unwind_ctx *u, uint64_t eh_frame, hdr_table *t, rw_unwind_out *res)
{
    rw_buf *b = u->out;
    rw_buf_align(b, 4, 0);
    uint64_t hdr = here(u);
    rw_buf_u8(b, 1);
    rw_buf_u8(b, PE_PCREL | PE_SDATA4);
    rw_buf_u8(b, PE_UDATA4);
    rw_buf_u8(b, PE_DATAREL | PE_SDATA4);
    if (!put_pointer(b, PE_PCREL | PE_SDATA4, eh_frame, here(u)) || t->n >> 32)
        return false;
    rw_buf_u32(b, (uint32_t)t->n);
    if (t->n)
        qsort(t->v, t->n, sizeof *t->v, by_loc);
    for (size_t i = 0; i < t->n; i++)
        if (!fits(PE_SDATA4, t->v[i].loc - hdr) || !fits(PE_SDATA4, t->v[i].fde - hdr))
            return false;
    for (size_t i = 0; i < t->n; i++) {
        rw_buf_u32(b, (uint32_t)(t->v[i].loc - hdr));
        rw_buf_u32(b, (uint32_t)(t->v[i].fde - hdr));
    }
    res->hdr_vaddr = hdr;
    res->hdr_size = here(u) - hdr;
    return true;
}

int rw_unwind_build(const rw_input *in, const rw_moved *moved, size_t nmoved, rw_buf *out,
                    uint64_t out_vaddr, rw_unwind_out *res, mt_error *err)
{
    memset(res, 0, sizeof *res);
    const Elf64_Phdr *ph = eh_frame_phdr(in);
    const Elf64_Shdr *sec = rw_input_section(in, ".eh_frame");
    if (sec && (sec->sh_type != SHT_PROGBITS || !sec->sh_addr))
        sec = NULL;
    if (!ph && !sec)
        return 0;
    uint64_t eh_frame = 0;
    hdr_table t = {0};
    if (!original_fdes(in, ph, sec, &eh_frame, &t)) {
        free(t.v);
        mt_error_set(err, "%s: .eh_frame_hdr or .eh_frame is malformed or uses an unsupported "
                     "encoding", in->elf.path);
        return -1;
    }
    const rw_moved **by_old = mt_xcalloc(nmoved + 1, sizeof *by_old);
    for (size_t i = 0; i < nmoved; i++)
        by_old[i] = &moved[i];
    qsort(by_old, nmoved, sizeof *by_old, by_old_start);
    unwind_ctx u = {in, by_old, nmoved, out, out_vaddr, err};
    size_t noriginal = t.n;
    int rc = 0;
    for (size_t i = 0; i < nmoved && rc == 0; i++)
        if (!write_range(&u, by_old[i], &t, noriginal, res))
            rc = -1;
    if (rc == 0 && !write_hdr(&u, eh_frame, &t, res)) {
        mt_error_set(err, "%s: the new .eh_frame_hdr is too far from .eh_frame or the code",
                     in->elf.path);
        rc = -1;
    }
    free(by_old);
    free(t.v);
    return rc;
}
