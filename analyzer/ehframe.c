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

#include "../common/dwarf_eh.h"
#include "internal.h"

/* Warning text prefix, e.g. "/bin/x: .eh_frame: malformed entry at offset 0x40". */
static void warn_malformed(mt_program *prog, const mt_elf_file *img, size_t off, const char *why)
{
    if (prog)
        mt_warn(prog, "%s: .eh_frame: malformed entry at offset 0x%zx (%s); ignoring the rest",
                img->path, off, why);
}

typedef void (*fde_visitor)(const mt_eh_fde *fde, void *ctx);

/* The bytes of .eh_frame; false when there are none. */
static bool eh_frame_cursor(const mt_elf_file *img, mt_eh_cursor *c)
{
    const mt_elf_section *sec = mt_elf_file_section(img, ".eh_frame");
    const uint8_t *bytes = mt_elf_file_section_bytes(img, sec);
    if (!bytes)
        return false;
    *c = (mt_eh_cursor){bytes, bytes + sec->size, sec->addr, NULL};
    return true;
}

/* The CIE of FDE entry `e`, found in the section `sec`. */
static const char *cie_of(const mt_eh_cursor *sec, const mt_eh_entry *e, mt_eh_cie *cie)
{
    uint64_t at = e->id_vaddr - e->id;
    if (e->id > e->id_vaddr || at < sec->vaddr)
        return "CIE pointer out of bounds";
    mt_eh_cursor c = *sec;
    mt_eh_skip(&c, at - sec->vaddr);
    return c.fail ? "CIE pointer out of bounds" : mt_eh_parse_cie(c, cie);
}

/* Calls `visit` for every non-empty FDE of .eh_frame whose pc_begin can be
 * resolved.  Problems are reported to `prog`, unless it is NULL (a second
 * walk over the same section). */
static void walk_fdes(const mt_elf_file *img, mt_program *prog, fde_visitor visit, void *ctx)
{
    mt_eh_cursor sec;
    if (!eh_frame_cursor(img, &sec))
        return;
    mt_eh_cursor c = sec;
    size_t skipped = 0;
    mt_eh_entry e = {0};
    int more;
    while ((more = mt_eh_next_entry(&c, &e)) == 1) {
        if (e.body.fail) {
            warn_malformed(prog, img, e.addr - sec.vaddr, e.body.fail);
            return;
        }
        if (e.id == 0)
            continue; /* a CIE: parsed on demand by its FDEs */
        mt_eh_cie cie;
        mt_eh_fde f;
        const char *why = cie_of(&sec, &e, &cie);
        if (!why && (!mt_eh_pointer_supported(cie.fde_enc) || (cie.fde_enc & MT_PE_INDIRECT))) {
            skipped++;
            continue;
        }
        if (!why)
            why = mt_eh_parse_fde(&e, &cie, &f);
        if (why) {
            warn_malformed(prog, img, e.addr - sec.vaddr, why);
            return;
        }
        if (f.begin && f.end > f.begin)
            visit(&f, ctx); /* address or size 0: the FDE of discarded code */
    }
    if (more < 0)
        warn_malformed(prog, img, e.addr - sec.vaddr, c.fail);
    if (skipped && prog)
        mt_warn(prog, "%s: .eh_frame: %zu FDEs use a pointer encoding that is not supported; "
                "their ranges are ignored", img->path, skipped);
}

typedef struct {
    mt_fde_range *items;
    size_t n, cap;
} range_list;

static void collect_range(const mt_eh_fde *f, void *ctx)
{
    range_list *l = ctx;
    mt_fde_range r = {f->begin, f->end};
    MT_PUSH(l->items, l->n, l->cap, r);
}

size_t mt_read_eh_frame(const mt_elf_file *img, mt_program *prog, mt_fde_range **out)
{
    range_list l = {0};
    walk_fdes(img, prog, collect_range, &l);
    *out = l.items;
    return l.n;
}

/* ---- LSDAs: call-site tables ----------------------------------------- */

/* A cursor over the loaded bytes from `addr` to the end of its segment's
 * file image (an LSDA has no length of its own). */
static bool cursor_at(const mt_elf_file *img, uint64_t addr, mt_eh_cursor *c)
{
    uint64_t avail;
    const uint8_t *bytes = mt_elf_file_bytes_from(img, addr, &avail);
    if (bytes)
        *c = (mt_eh_cursor){bytes, bytes + avail, addr, NULL};
    return bytes != NULL;
}

typedef struct {
    const mt_elf_file *img;
    mt_eh_call_site *items;
    size_t n, cap;
    size_t bad; /* LSDAs that could not be decoded */
} site_list;

/* The landing pads of one FDE's LSDA (the layout GCC and LLVM emit for C++
 * and every language using the Itanium personality routines). */
static bool read_lsda(const mt_eh_fde *f, site_list *l)
{
    mt_eh_cursor c;
    mt_lsda lsda;
    if (!cursor_at(l->img, f->lsda, &c))
        return false;
    const char *why = mt_lsda_parse(c, f->begin, &lsda);
    for (size_t i = 0; !why && i < lsda.nsites; i++) {
        const mt_lsda_call_site *cs = &lsda.sites[i];
        if (!cs->landing_pad)
            continue; /* unwinding goes on to the caller */
        mt_eh_call_site s = {cs->start, cs->start + cs->len, cs->landing_pad};
        MT_PUSH(l->items, l->n, l->cap, s);
    }
    mt_lsda_free(&lsda);
    return !why;
}

static void collect_sites(const mt_eh_fde *f, void *ctx)
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

size_t mt_read_eh_call_sites(const mt_elf_file *img, mt_program *prog, mt_eh_call_site **out)
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
