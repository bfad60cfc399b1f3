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

#include "../common/dwarf_eh.h"
#include "internal.h"

/* A cursor from `vaddr` to the end of its segment's file image: unwind data
 * has no overall length here. */
static bool reader_at(const mt_elf_file *in, uint64_t vaddr, mt_eh_cursor *r)
{
    uint64_t avail;
    const uint8_t *p = mt_elf_file_bytes_from(in, vaddr, &avail);
    if (p)
        *r = (mt_eh_cursor){p, p + avail, vaddr, NULL};
    return p != NULL;
}

/* ---- writing ----------------------------------------------------------- */

/* Whether `v` fits the fixed-size encoding `enc` (signed or unsigned). */
static bool fits(uint8_t enc, uint64_t v)
{
    size_t n = mt_eh_encoding_size(enc);
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
    uint64_t v = (enc & 0x70) == MT_PE_PCREL && value ? value - at : value;
    if (((enc & 0x70) != MT_PE_ABSPTR && (enc & 0x70) != MT_PE_PCREL && (enc & 0x70) != MT_PE_DATAREL) ||
        !fits(enc, v))
        return false;
    size_t n = mt_eh_encoding_size(enc);
    for (size_t i = 0; i < n; i++)
        rw_buf_u8(b, (uint8_t)(v >> (8 * i)));
    return true;
}

/* ---- the move ---------------------------------------------------------- */

/* A moved range, keyed by its original start for the search. */
typedef struct {
    uint64_t old_start;
    const rw_moved *m;
} moved_ref;

typedef struct {
    const mt_elf_file *in;
    const moved_ref *by_old;   /* the moved ranges sorted by original address */
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
    size_t lo = mt_lower_bound_u64(m->old_addrs, m->naddrs, sizeof *m->old_addrs, 0, old);
    return lo < m->naddrs ? m->new_addrs[lo] : m->new_end;
}

/* The moved range holding original instruction `old`, or NULL. */
static const rw_moved *range_of(const unwind_ctx *u, uint64_t old)
{
    size_t lo = mt_upper_bound_u64(u->by_old, u->nmoved, sizeof *u->by_old,
                                   offsetof(moved_ref, old_start), old);
    return lo > 0 && old < u->by_old[lo - 1].m->old_end ? u->by_old[lo - 1].m : NULL;
}

/* ---- CIEs and FDEs --------------------------------------------------------- */

/* The FDE whose length field is at `addr`, with its CIE, in the forms the
 * copies are written in: fixed-size pointers, no augmentation unknown. */
static bool parse_fde(const mt_elf_file *in, uint64_t addr, mt_eh_fde *f)
{
    mt_eh_cie cie;
    mt_eh_cursor r, at_cie;
    mt_eh_entry e;
    if (!reader_at(in, addr, &r) || mt_eh_next_entry(&r, &e) != 1 || e.body.fail || e.id == 0 ||
        e.id > e.id_vaddr || !reader_at(in, e.id_vaddr - e.id, &at_cie))
        return false;
    return !mt_eh_parse_cie(at_cie, &cie) && !cie.unknown_augmentation &&
           mt_eh_encoding_size(cie.fde_enc) != 0 && !mt_eh_parse_fde(&e, &cie, f);
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
static void skip_operands(mt_eh_cursor *r, uint8_t op)
{
    if ((op & 0xc0) == 0x80) { /* DW_CFA_offset */
        mt_eh_uleb(r);
        return;
    }
    if ((op & 0xc0) == 0xc0) /* DW_CFA_restore */
        return;
    switch (op) {
    case 0x05: case 0x09: case 0x0c: case 0x14: case 0x2f:
        mt_eh_uleb(r); mt_eh_uleb(r); break;
    case 0x11: case 0x12: case 0x15:
        mt_eh_uleb(r); mt_eh_sleb(r); break;
    case 0x06: case 0x07: case 0x08: case 0x0d: case 0x0e: case 0x2e:
        mt_eh_uleb(r); break;
    case 0x13: mt_eh_sleb(r); break;
    case 0x0f:                                          /* def_cfa_expression */
        mt_eh_skip(r, mt_eh_uleb(r));
        break;
    case 0x10: case 0x16:                               /* (val_)expression */
        mt_eh_uleb(r);
        mt_eh_skip(r, mt_eh_uleb(r));
        break;
    case 0x00: case 0x0a: case 0x0b: break;
    default: r->fail = "unknown call-frame instruction";
    }
}

/* When `op` moves the location (DW_CFA_advance_loc*, DW_CFA_set_loc), reads
 * its operand and updates *loc; false for every other opcode.  The code
 * alignment factor is 1 (checked by the caller). */
static bool location_op(mt_eh_cursor *r, uint8_t op, const mt_eh_fde *f, uint64_t *loc)
{
    if ((op & 0xc0) == 0x40)
        *loc += op & 0x3f;
    else if (op == 0x02)
        *loc += mt_eh_read(r, 1);
    else if (op == 0x03)
        *loc += mt_eh_read(r, 2);
    else if (op == 0x04)
        *loc += mt_eh_read(r, 4);
    else if (op == 0x01)
        *loc = mt_eh_pointer(r, f->cie.fde_enc);
    else
        return false;
    return true;
}

/* Copies the FDE's CFA program for the part [lo, hi) of moved range `m`:
 * rules stated before lo apply from the new start, every location is
 * remapped (DW_CFA_set_loc becomes an advance: the copy keeps the original
 * order), and the program stops at hi. */
static bool remap_program(const mt_eh_fde *f, const rw_moved *m, uint64_t lo, uint64_t hi,
                          rw_buf *b)
{
    mt_eh_cursor r = f->program;
    uint64_t loc = f->begin, new_loc = map_at_or_after(m, lo);
    while (r.p < r.end && !r.fail) {
        const uint8_t *start = r.p;
        uint8_t op = (uint8_t)mt_eh_read(&r, 1);
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
    return !r.fail;
}

/* ---- LSDAs ------------------------------------------------------------------ */

/* An LSDA as read, and how far its action table, type table and exception
 * specifications reach: the region copied after the new call-site table. */
typedef struct {
    mt_lsda lsda;
    uint64_t region_end;      /* end of actions, types and exception specs */
    uint64_t max_filter;      /* entries used in the type table */
} lsda_info;

/* An exception specification list (after the type-table base, a list of
 * type-table indices ending in 0): its end and the entries it uses. */
static bool measure_spec(const mt_elf_file *in, lsda_info *l, uint64_t offset)
{
    mt_eh_cursor s;
    if (!reader_at(in, l->lsda.ttype_base + offset - 1, &s))
        return false;
    for (uint64_t index; (index = mt_eh_uleb(&s)) != 0 && !s.fail;)
        if (index > l->max_filter)
            l->max_filter = index;
    if (s.vaddr > l->region_end)
        l->region_end = s.vaddr;
    return !s.fail;
}

/* One action record at `a` (1 + its offset in the action table): what it
 * uses; *next the next record's, 0 at the end of the chain. */
static bool measure_action(const mt_elf_file *in, lsda_info *l, uint64_t a, uint64_t *next)
{
    mt_eh_cursor r;
    uint64_t cs_end = l->lsda.cs_end;
    if (!reader_at(in, cs_end + a - 1, &r))
        return false;
    int64_t filter = mt_eh_sleb(&r);
    uint64_t next_at = r.vaddr;
    int64_t disp = mt_eh_sleb(&r);
    if (r.fail)
        return false;
    if (r.vaddr > l->region_end)
        l->region_end = r.vaddr;
    if (filter > 0 && (uint64_t)filter > l->max_filter)
        l->max_filter = (uint64_t)filter;
    if (filter < 0 && l->lsda.ttype_base && !measure_spec(in, l, 0 - (uint64_t)filter))
        return false;
    *next = disp ? next_at + (uint64_t)disp - cs_end + 1 : 0;
    return true;
}

/* Walks the action chains the call sites use: how many type-table entries
 * and how many exception-spec bytes the LSDA really has. */
static bool measure_actions(const mt_elf_file *in, lsda_info *l)
{
    for (size_t i = 0; i < l->lsda.nsites; i++) {
        uint64_t a = l->lsda.sites[i].action;
        for (int guard = 0; a && guard < 1000; guard++)
            if (!measure_action(in, l, a, &a))
                return false;
    }
    if (l->lsda.ttype_base > l->region_end)
        l->region_end = l->lsda.ttype_base;
    return true;
}

static bool parse_lsda(const mt_elf_file *in, const mt_eh_fde *f, lsda_info *l)
{
    memset(l, 0, sizeof *l);
    mt_eh_cursor r;
    if (!reader_at(in, f->lsda, &r) || mt_lsda_parse(r, f->begin, &l->lsda))
        return false;
    l->region_end = l->lsda.cs_end;
    if (l->lsda.ttype_base && l->lsda.ttype_base < l->lsda.cs_end)
        return false; /* the type table would overlap the call sites */
    return measure_actions(in, l) &&
           (l->lsda.ttype_enc == MT_PE_OMIT || mt_eh_encoding_size(l->lsda.ttype_enc) != 0);
}

static bool in_part(const mt_lsda_call_site *s, uint64_t lo, uint64_t hi)
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
    uint64_t *new_lp = mt_xcalloc(l->lsda.nsites + 1, sizeof *new_lp);
    *lpstart = pt->new_begin;
    for (size_t i = 0; i < l->lsda.nsites; i++) {
        const mt_lsda_call_site *s = &l->lsda.sites[i];
        if (!s->landing_pad || !in_part(s, pt->lo, pt->hi))
            continue;
        const rw_moved *pm = range_of(u, s->landing_pad);
        new_lp[i] = rw_moved_landing_pad(pt->m, s->start, s->len, s->landing_pad);
        if (!new_lp[i])
            new_lp[i] = pm ? rw_moved_lookup(pm, s->landing_pad) : 0;
        if (!new_lp[i]) {
            mt_error_set(u->err, "%s: procedure at 0x%llx: landing pad 0x%llx not relocated",
                         u->in->path, (unsigned long long)pt->m->old_start,
                         (unsigned long long)s->landing_pad);
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
    for (size_t i = 0; i < l->lsda.nsites; i++) {
        const mt_lsda_call_site *s = &l->lsda.sites[i];
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
 * of the region copied from l->lsda.cs_end to out address `new_region` (the
 * typeinfo objects, or for DW_EH_PE_indirect the slots holding their
 * addresses, do not move).  Absolute entries stay as they are. */
static bool move_type_table(unwind_ctx *u, const lsda_info *l, uint64_t new_region)
{
    if (!l->lsda.ttype_base)
        return true;
    size_t es = mt_eh_encoding_size(l->lsda.ttype_enc);
    uint64_t base_in_region = l->lsda.ttype_base - l->lsda.cs_end;
    if (l->max_filter > base_in_region / es)
        return false; /* entries in use reach back into the call-site table */
    if ((l->lsda.ttype_enc & 0x70) == MT_PE_ABSPTR || (l->lsda.ttype_enc & 0x70) == MT_PE_DATAREL)
        return true; /* absolute (datarel has base 0 on x86-64) */
    if ((l->lsda.ttype_enc & 0x70) != MT_PE_PCREL)
        return false;
    uint8_t *region = u->out->data + (new_region - u->out_vaddr);
    for (uint64_t i = 1; i <= l->max_filter; i++) {
        uint8_t *p = region + base_in_region - i * es;
        uint64_t v = 0;
        for (size_t k = 0; k < es; k++)
            v |= (uint64_t)p[k] << (8 * k);
        if (v == 0)
            continue; /* catch (...) */
        if ((l->lsda.ttype_enc & 0x08) && es < 8 && (v >> (8 * es - 1)))
            v |= ~(uint64_t)0 << (8 * es); /* sign-extend */
        v += l->lsda.cs_end - new_region;
        if (!fits(l->lsda.ttype_enc, v))
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
    rw_buf_u8(b, lpstart == new_begin ? MT_PE_OMIT : MT_PE_PCREL | MT_PE_SDATA4);
    if (lpstart != new_begin && !put_pointer(b, MT_PE_PCREL | MT_PE_SDATA4, lpstart, here(u)))
        return false;
    rw_buf_u8(b, l->lsda.ttype_enc);
    if (l->lsda.ttype_enc != MT_PE_OMIT) {
        /* Measured from the end of this field: the call-site encoding and
         * length, the table, then the region up to the base. */
        rw_buf_uleb(b, 1 + uleb_size(cs->len) + cs->len + (l->lsda.ttype_base - l->lsda.cs_end));
    }
    rw_buf_u8(b, MT_PE_ULEB128);
    rw_buf_uleb(b, cs->len);
    rw_buf_put(b, cs->data, cs->len);
    uint64_t new_region = here(u);
    rw_buf_put(b, region, l->region_end - l->lsda.cs_end);
    return move_type_table(u, l, new_region);
}

/* Writes the LSDA of the part; returns its address, or 0 with u->err set. */
static uint64_t write_lsda(unwind_ctx *u, const mt_eh_fde *f, const part *pt)
{
    lsda_info l;
    if (!parse_lsda(u->in, f, &l)) {
        mt_lsda_free(&l.lsda);
        mt_error_set(u->err, "%s: malformed exception table (LSDA) at 0x%llx", u->in->path,
                     (unsigned long long)f->lsda);
        return 0;
    }
    uint64_t lpstart, at = 0;
    uint64_t *new_lp = move_landing_pads(u, &l, pt, &lpstart);
    const uint8_t *region = mt_elf_file_bytes(u->in, l.lsda.cs_end, l.region_end - l.lsda.cs_end);
    if (new_lp && !region)
        mt_error_set(u->err, "%s: exception table at 0x%llx extends past its segment",
                     u->in->path, (unsigned long long)f->lsda);
    if (new_lp && region) {
        rw_buf cs = {0};
        write_call_sites(&cs, &l, new_lp, pt, lpstart);
        at = here(u);
        if (!put_lsda(u, &l, &cs, lpstart, pt->new_begin, region)) {
            mt_error_set(u->err, "%s: exception table at 0x%llx: type table or landing-pad "
                         "base cannot be moved", u->in->path, (unsigned long long)f->lsda);
            at = 0;
        }
        rw_buf_free(&cs);
    }
    free(new_lp);
    mt_lsda_free(&l.lsda);
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
static bool put_fde_header(unwind_ctx *u, const mt_eh_fde *f, uint64_t new_begin,
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
    size_t n = f->cie.lsda_enc != MT_PE_OMIT ? mt_eh_encoding_size(f->cie.lsda_enc) : 0;
    rw_buf_uleb(b, n);
    return !n || put_pointer(b, f->cie.lsda_enc, lsda, here(u));
}

/* Writes the FDE, and the LSDA when there is one, of a part. */
static bool write_fde(unwind_ctx *u, const mt_eh_fde *f, const part *pt, uint64_t new_end,
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
                     u->in->path, (unsigned long long)f->addr);
        return false;
    }
    if (!remap_program(f, pt->m, pt->lo, pt->hi, b)) {
        mt_error_set(u->err, "%s: FDE at 0x%llx: call-frame program cannot be remapped",
                     u->in->path, (unsigned long long)f->addr);
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
    size_t lo = mt_upper_bound_u64(t->v, n, sizeof *t->v, offsetof(hdr_entry, loc), addr);
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
        mt_eh_fde f;
        if (!parse_fde(u->in, t->v[k].fde, &f)) {
            mt_error_set(u->err, "%s: malformed FDE at 0x%llx", u->in->path,
                         (unsigned long long)t->v[k].fde);
            return false;
        }
        part pt = {m, f.begin > m->old_start ? f.begin : m->old_start,
                   f.end < m->old_end ? f.end : m->old_end, 0};
        if (pt.lo >= pt.hi)
            continue;
        if (f.cie.code_align != 1) {
            mt_error_set(u->err, "%s: CIE at 0x%llx: code alignment factor %llu, not 1",
                         u->in->path, (unsigned long long)f.cie.addr,
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

/* Reads the header's eh_frame_ptr and, when it has a search table in the
 * one encoding unwinders use (*has_table), the table. */
static bool read_hdr(const mt_elf_file *in, const Elf64_Phdr *ph, uint64_t *eh_frame,
                     bool *has_table, hdr_table *t)
{
    mt_eh_cursor r;
    if (!reader_at(in, ph->p_vaddr, &r))
        return false;
    uint64_t hdr = r.vaddr;
    uint8_t version = (uint8_t)mt_eh_read(&r, 1), ptr_enc = (uint8_t)mt_eh_read(&r, 1),
            count_enc = (uint8_t)mt_eh_read(&r, 1), table_enc = (uint8_t)mt_eh_read(&r, 1);
    if (r.fail || version != 1)
        return false;
    *eh_frame = mt_eh_pointer(&r, ptr_enc);
    *has_table = count_enc != MT_PE_OMIT && table_enc == (MT_PE_DATAREL | MT_PE_SDATA4);
    if (!*has_table)
        return !r.fail;
    uint64_t n = mt_eh_value(&r, count_enc);
    if (r.fail || n > (uint64_t)(r.end - r.p) / 8)
        return false;
    for (uint64_t i = 0; i < n; i++) {
        hdr_entry e;
        e.loc = hdr + (uint64_t)(int64_t)(int32_t)mt_eh_read(&r, 4);
        e.fde = hdr + (uint64_t)(int64_t)(int32_t)mt_eh_read(&r, 4);
        MT_PUSH(t->v, t->n, t->cap, e);
    }
    return !r.fail;
}

/* Collects the FDEs of .eh_frame at [at, end) (end 0: up to its zero
 * terminator or the end of its segment), skipping CIEs and FDEs of
 * discarded code (address or size 0). */
static bool walk_eh_frame(const mt_elf_file *in, uint64_t at, uint64_t end, hdr_table *t)
{
    mt_eh_cursor r;
    if (!reader_at(in, at, &r))
        return !end;
    if (end && end - at < (uint64_t)(r.end - r.p))
        r.end = r.p + (end - at);
    mt_eh_entry e;
    int more;
    while ((more = mt_eh_next_entry(&r, &e)) == 1) {
        mt_eh_fde f;
        if (e.body.fail || (e.id != 0 && !parse_fde(in, e.addr, &f)))
            return false;
        if (e.id != 0 && f.begin && f.end > f.begin) {
            hdr_entry h = {f.begin, e.addr};
            MT_PUSH(t->v, t->n, t->cap, h);
        }
    }
    return more == 0;
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
static bool original_fdes(const mt_elf_file *in, const Elf64_Phdr *ph,
                          const mt_elf_section *sec, uint64_t *eh_frame, hdr_table *t)
{
    bool has_table = false;
    if (ph && !read_hdr(in, ph, eh_frame, &has_table, t))
        return false;
    if (!ph)
        *eh_frame = sec->addr;
    uint64_t end = 0;
    if (sec) {
        if (sec->addr != *eh_frame)
            return false; /* the header and the section disagree */
        end = sec->addr + sec->size;
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
    rw_buf_u8(b, MT_PE_PCREL | MT_PE_SDATA4);
    rw_buf_u8(b, MT_PE_UDATA4);
    rw_buf_u8(b, MT_PE_DATAREL | MT_PE_SDATA4);
    if (!put_pointer(b, MT_PE_PCREL | MT_PE_SDATA4, eh_frame, here(u)) || t->n >> 32)
        return false;
    rw_buf_u32(b, (uint32_t)t->n);
    if (t->n)
        qsort(t->v, t->n, sizeof *t->v, by_loc);
    for (size_t i = 0; i < t->n; i++)
        if (!fits(MT_PE_SDATA4, t->v[i].loc - hdr) || !fits(MT_PE_SDATA4, t->v[i].fde - hdr))
            return false;
    for (size_t i = 0; i < t->n; i++) {
        rw_buf_u32(b, (uint32_t)(t->v[i].loc - hdr));
        rw_buf_u32(b, (uint32_t)(t->v[i].fde - hdr));
    }
    res->hdr_vaddr = hdr;
    res->hdr_size = here(u) - hdr;
    return true;
}

int rw_unwind_build(const mt_elf_file *in, const rw_moved *moved, size_t nmoved, rw_buf *out,
                    uint64_t out_vaddr, rw_unwind_out *res, mt_error *err)
{
    memset(res, 0, sizeof *res);
    const Elf64_Phdr *ph = mt_elf_file_phdr(in, PT_GNU_EH_FRAME);
    const mt_elf_section *sec = mt_elf_file_section(in, ".eh_frame");
    if (sec && (sec->type != SHT_PROGBITS || !sec->addr))
        sec = NULL;
    if (!ph && !sec)
        return 0;
    uint64_t eh_frame = 0;
    hdr_table t = {0};
    if (!original_fdes(in, ph, sec, &eh_frame, &t)) {
        free(t.v);
        mt_error_set(err, "%s: .eh_frame_hdr or .eh_frame is malformed or uses an unsupported "
                     "encoding", in->path);
        return -1;
    }
    moved_ref *by_old = mt_xcalloc(nmoved + 1, sizeof *by_old);
    for (size_t i = 0; i < nmoved; i++)
        by_old[i] = (moved_ref){moved[i].old_start, &moved[i]};
    qsort(by_old, nmoved, sizeof *by_old, mt_compare_u64);
    unwind_ctx u = {in, by_old, nmoved, out, out_vaddr, err};
    size_t noriginal = t.n;
    int rc = 0;
    for (size_t i = 0; i < nmoved && rc == 0; i++)
        if (!write_range(&u, by_old[i].m, &t, noriginal, res))
            rc = -1;
    if (rc == 0 && !write_hdr(&u, eh_frame, &t, res)) {
        mt_error_set(err, "%s: the new .eh_frame_hdr is too far from .eh_frame or the code",
                     in->path);
        rc = -1;
    }
    free(by_old);
    free(t.v);
    return rc;
}
