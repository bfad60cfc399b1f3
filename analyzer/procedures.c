/* analyzer/procedures.c — find the procedures of a binary and the facts about
 * the file the rest of the analysis needs (kind, entry, build id).
 *
 * Candidates come from five sources: .symtab and .dynsym function symbols,
 * .eh_frame FDE ranges, PLT stubs and the ELF entry point.  They are merged
 * by entry address: one procedure per address, named by the most
 * authoritative symbol, sized by its symbol (else its FDE), and clipped so it
 * never overlaps the next procedure.  Compiler split parts ("foo.cold") are
 * tied to their parent procedure. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#ifndef DF_1_PIE
#define DF_1_PIE 0x08000000
#endif
#ifndef R_X86_64_IRELATIVE
#define R_X86_64_IRELATIVE 37
#endif
#ifndef SHT_RELR
#define SHT_RELR 19
#endif
#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

/* How authoritative a candidate's name is (higher wins). */
enum {
    RANK_NONE = 0,  /* FDE: no name */
    RANK_ENTRY,     /* "_start" made up for the entry point */
    RANK_PLT,
    RANK_DYNSYM_WEAK,
    RANK_DYNSYM_GLOBAL,
    RANK_SYMTAB_LOCAL,
    RANK_SYMTAB_WEAK,
    RANK_SYMTAB_GLOBAL,
};

typedef struct {
    uint64_t entry;
    uint64_t sym_size; /* from a symbol or PLT stub, 0 if unknown */
    uint64_t fde_size; /* from an FDE, 0 if none */
    const char *name;  /* borrowed: symbol string table, stub name or literal */
    int rank;
    uint32_t sources;
    const char *import; /* borrowed: a PLT stub's import (mt_plt_stub.import) */
} candidate;

typedef struct {
    candidate *items;
    size_t n, cap;
} candidate_list;

static void add_candidate(candidate_list *list, candidate c)
{
    MT_PUSH(list->items, list->n, list->cap, c);
}

/* ---- file facts ------------------------------------------------------- */

static void classify_file(const mt_elf_file *img, mt_program *prog)
{
    bool has_interp = mt_elf_file_phdr(img, PT_INTERP) != NULL;
    uint64_t flags_1;
    mt_elf_file_dynamic(img, DT_FLAGS_1, &flags_1);
    if (img->ehdr.e_type == ET_EXEC)
        prog->kind = MT_ELF_EXEC;
    else if (has_interp || (flags_1 & DF_1_PIE))
        prog->kind = MT_ELF_PIE;
    else
        prog->kind = MT_ELF_SHARED;
    /* A static-pie has PT_DYNAMIC (for its self-relocation) but no
     * interpreter; for executables "static" means "no dynamic loader". */
    prog->static_linked = prog->kind != MT_ELF_SHARED && !has_interp;
    prog->stripped = mt_elf_file_section_of_type(img, SHT_SYMTAB) == NULL;
    prog->entry = img->ehdr.e_entry;
}

static uint64_t align4(uint64_t v)
{
    return (v + 3) & ~(uint64_t)3;
}

/* Finds NT_GNU_BUILD_ID in one note section; true when found. */
static bool build_id_in_notes(const uint8_t *p, uint64_t size, char out[41])
{
    uint64_t off = 0;
    while (size - off >= 12) {
        uint32_t namesz, descsz, type;
        memcpy(&namesz, p + off, 4);
        memcpy(&descsz, p + off + 4, 4);
        memcpy(&type, p + off + 8, 4);
        uint64_t name_off = off + 12;
        uint64_t desc_off = name_off + align4(namesz);
        if (desc_off > size || align4(descsz) > size - desc_off)
            return false;
        if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(p + name_off, "GNU", 4) == 0 &&
            descsz > 0) {
            uint32_t n = descsz < 20 ? descsz : 20; /* out holds 20 bytes of hex */
            for (uint32_t i = 0; i < n; i++) {
                static const char hex[] = "0123456789abcdef";
                out[2 * i] = hex[p[desc_off + i] >> 4];
                out[2 * i + 1] = hex[p[desc_off + i] & 15];
            }
            out[2 * n] = '\0';
            return true;
        }
        off = desc_off + align4(descsz);
    }
    return false;
}

static void read_build_id(const mt_elf_file *img, mt_program *prog)
{
    prog->build_id[0] = '\0';
    for (size_t i = 0; i < img->nsections; i++) {
        const mt_elf_section *s = &img->sections[i];
        const uint8_t *bytes = s->type == SHT_NOTE ? mt_elf_file_section_bytes(img, s) : NULL;
        if (bytes && build_id_in_notes(bytes, s->size, prog->build_id))
            return;
    }
}

/* ---- candidates ------------------------------------------------------- */

static int symbol_rank(bool dynamic, unsigned bind)
{
    if (dynamic)
        return bind == STB_GLOBAL ? RANK_DYNSYM_GLOBAL : RANK_DYNSYM_WEAK;
    if (bind == STB_GLOBAL)
        return RANK_SYMTAB_GLOBAL;
    return bind == STB_WEAK ? RANK_SYMTAB_WEAK : RANK_SYMTAB_LOCAL;
}

static bool is_defined_function(const Elf64_Sym *sym)
{
    unsigned type = ELF64_ST_TYPE(sym->st_info);
    return (type == STT_FUNC || type == STT_GNU_IFUNC) && sym->st_shndx != SHN_UNDEF &&
           sym->st_value != 0;
}

typedef struct {
    const mt_elf_file *img;
    uint32_t source;
    candidate_list *list;
} symbol_source;

static void add_symbol(void *ctx, const Elf64_Sym *sym, const char *name)
{
    symbol_source *s = ctx;
    if (!is_defined_function(sym) || !mt_elf_file_load_at(s->img, sym->st_value, PF_X))
        return;
    candidate c = {sym->st_value, sym->st_size, 0, *name ? name : NULL,
                   *name ? symbol_rank(s->source == MT_SRC_DYNSYM, ELF64_ST_BIND(sym->st_info))
                         : RANK_NONE,
                   s->source, NULL};
    add_candidate(s->list, c);
}

static void add_symbols(const mt_elf_file *img, uint32_t type, uint32_t source,
                        candidate_list *list)
{
    symbol_source s = {img, source, list};
    mt_elf_file_each_symbol(img, type, add_symbol, &s);
}

static void add_fde_ranges(const mt_elf_file *img, const mt_fde_range *r, size_t n,
                           candidate_list *list)
{
    for (size_t i = 0; i < n; i++)
        if (mt_elf_file_load_at(img, r[i].begin, PF_X)) {
            candidate c = {r[i].begin, 0, r[i].end - r[i].begin, NULL, RANK_NONE, MT_SRC_EH_FRAME, NULL};
            add_candidate(list, c);
        }
}

static void add_plt_stubs(const mt_elf_file *img, const mt_plt_stub *s, size_t n,
                          candidate_list *list)
{
    for (size_t i = 0; i < n; i++)
        if (mt_elf_file_load_at(img, s[i].addr, PF_X)) {
            candidate c = {s[i].addr, s[i].size, 0, s[i].name, RANK_PLT, MT_SRC_PLT, s[i].import};
            add_candidate(list, c);
        }
}

static int compare_candidates(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    return x->entry < y->entry ? -1 : x->entry > y->entry;
}

static size_t leading_underscores(const char *s)
{
    size_t n = 0;
    while (s[n] == '_')
        n++;
    return n;
}

/* Among aliases of the same rank prefer the public-looking name ("memcpy"
 * over "__memcpy"), then the alphabetically first, so output is stable. */
static bool better_name(const candidate *c, const candidate *than)
{
    if (!c->name)
        return false;
    if (!than->name || c->rank != than->rank)
        return !than->name || c->rank > than->rank;
    size_t uc = leading_underscores(c->name), ut = leading_underscores(than->name);
    if (uc != ut)
        return uc < ut;
    return strcmp(c->name, than->name) < 0;
}

/* Merges sorted candidates that share an entry address, in place. */
static size_t merge_by_entry(candidate *c, size_t n)
{
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        if (out > 0 && c[out - 1].entry == c[i].entry) {
            candidate *m = &c[out - 1];
            if (better_name(&c[i], m)) {
                m->name = c[i].name;
                m->rank = c[i].rank;
            }
            m->sources |= c[i].sources;
            if (c[i].import)
                m->import = c[i].import;
            if (c[i].sym_size > m->sym_size)
                m->sym_size = c[i].sym_size;
            if (c[i].fde_size > m->fde_size)
                m->fde_size = c[i].fde_size;
        } else {
            c[out++] = c[i];
        }
    }
    return out;
}

/* Drops FDE-only candidates strictly inside a symbol-sized procedure: when
 * symbols exist they are authoritative, and an FDE starting mid-function
 * (hand-written assembly with several FDEs) is not a procedure entry. */
static size_t drop_fdes_inside_symbols(candidate *c, size_t n)
{
    size_t out = 0;
    uint64_t covered_end = 0;
    for (size_t i = 0; i < n; i++) {
        if (c[i].sources == MT_SRC_EH_FRAME && c[i].entry < covered_end)
            continue;
        if (c[i].sym_size && c[i].entry + c[i].sym_size > covered_end &&
            c[i].entry + c[i].sym_size > c[i].entry)
            covered_end = c[i].entry + c[i].sym_size;
        c[out++] = c[i];
    }
    return out;
}

/* ---- procedures ------------------------------------------------------- */

/* End of the file-backed part of the executable segment holding `addr`:
 * no procedure extends past it, whatever a (corrupted) symbol size says. */
static uint64_t code_end(const mt_elf_file *img, uint64_t addr)
{
    const Elf64_Phdr *ph = mt_elf_file_load_at(img, addr, PF_X);
    if (!ph)
        return addr;
    return addr - ph->p_vaddr < ph->p_filesz ? ph->p_vaddr + ph->p_filesz : addr;
}

static void make_procedures(const mt_elf_file *img, mt_program *prog, const candidate *c, size_t n)
{
    const uint32_t from_symbols = MT_SRC_SYMTAB | MT_SRC_DYNSYM;
    prog->procs = mt_xcalloc(n, sizeof *prog->procs);
    prog->nprocs = (uint32_t)n;
    uint32_t clipped = 0;
    size_t first_clipped = 0;
    for (size_t i = 0; i < n; i++) {
        mt_procedure *p = &prog->procs[i];
        p->entry = c[i].entry;
        p->name = c[i].name ? mt_xstrdup(c[i].name)
                            : mt_xasprintf("sub_%llx", (unsigned long long)c[i].entry);
        p->sources = c[i].sources;
        p->size = c[i].sym_size ? c[i].sym_size : c[i].fde_size;
        p->parent = MT_NONE;
        p->is_plt = (c[i].sources & MT_SRC_PLT) != 0;
        p->import = c[i].import ? mt_xstrdup(c[i].import) : NULL;
        p->tdes = -1;
        uint64_t limit = code_end(img, p->entry) - p->entry;
        if (p->size > limit)
            p->size = limit;
        if (i + 1 < n && p->size > c[i + 1].entry - c[i].entry) {
            /* A symbol overlapping the next symbol is worth reporting (wrong
             * size in hand-written assembly); an FDE range swallowing a
             * label is routine. */
            if (c[i].sym_size && (c[i + 1].sources & from_symbols) && clipped++ == 0)
                first_clipped = i;
            p->size = c[i + 1].entry - c[i].entry;
        }
    }
    if (clipped)
        mt_warn(prog, "%s: %u procedure sizes overlap the next procedure and were clipped "
                "(first: %s at 0x%llx)", prog->path, clipped, prog->procs[first_clipped].name,
                (unsigned long long)prog->procs[first_clipped].entry);
}

/* Length of the parent name if `name` is a split part "foo.cold" or
 * "foo.cold.N", else 0.  ".part.N" is a separate, called function. */
static size_t split_part_base_len(const char *name)
{
    const char *p = NULL;
    for (const char *s = strstr(name, ".cold"); s; s = strstr(s + 1, ".cold"))
        p = s;
    if (!p || p == name)
        return 0;
    const char *rest = p + 5;
    if (*rest == '.') {
        rest++;
        if (!*rest)
            return 0;
        while (isdigit((unsigned char)*rest))
            rest++;
    }
    return *rest ? 0 : (size_t)(p - name);
}

typedef struct {
    const char *name;
    uint32_t index;
} name_index;

static int compare_name_index(const void *a, const void *b)
{
    const name_index *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* First entry of the sorted `names` not before the prefix base[0, len). */
static size_t lower_bound_name(const name_index *names, size_t n, const char *base, size_t len)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strncmp(names[mid].name, base, len) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static uint64_t distance(uint64_t a, uint64_t b)
{
    return a > b ? a - b : b - a;
}

static void tie_split_parts(mt_program *prog)
{
    name_index *names = mt_xcalloc(prog->nprocs, sizeof *names);
    for (uint32_t i = 0; i < prog->nprocs; i++)
        names[i] = (name_index){prog->procs[i].name, i};
    qsort(names, prog->nprocs, sizeof *names, compare_name_index);
    for (uint32_t i = 0; i < prog->nprocs; i++) {
        mt_procedure *part = &prog->procs[i];
        size_t len = split_part_base_len(part->name);
        if (!len)
            continue;
        /* Several procedures may share the parent's name (static functions
         * of different files): take the nearest one. */
        uint32_t best = MT_NONE;
        for (size_t k = lower_bound_name(names, prog->nprocs, part->name, len);
             k < prog->nprocs && strncmp(names[k].name, part->name, len) == 0; k++) {
            if (names[k].name[len] != '\0')
                continue;
            uint32_t cand = names[k].index;
            if (best == MT_NONE || distance(prog->procs[cand].entry, part->entry) <
                                       distance(prog->procs[best].entry, part->entry))
                best = cand;
        }
        part->parent = best;
    }
    free(names);
}

static void warn_if_only_eh_frame(const mt_elf_file *img, mt_program *prog)
{
    if (!prog->stripped)
        return;
    uint32_t unnamed = 0;
    for (uint32_t i = 0; i < prog->nprocs; i++)
        if (prog->procs[i].sources == MT_SRC_EH_FRAME)
            unnamed++;
    if (unnamed)
        mt_warn(prog, "%s: stripped (no .symtab): %u of %u procedures are known only from "
                ".eh_frame and are named sub_ADDR", img->path, unnamed, prog->nprocs);
}

/* Damage in the headers that the open accepted but that loses information. */
static void warn_about_image(const mt_elf_file *img, mt_program *prog)
{
    if (img->nsections == 0) {
        mt_warn(prog, "%s: no section headers: no symbols, .eh_frame or PLT names", img->path);
        return;
    }
    size_t outside = 0, unnamed = 0;
    for (size_t i = 1; i < img->nsections; i++) {
        const mt_elf_section *s = &img->sections[i];
        if (!s->in_file && s->type != SHT_NOBITS && s->type != SHT_NULL)
            outside++;
        if (!s->name[0])
            unnamed++;
    }
    if (outside)
        mt_warn(prog, "%s: %zu sections lie outside the file and are ignored", img->path, outside);
    if (unnamed == img->nsections - 1 && unnamed > 0)
        mt_warn(prog, "%s: section names are unreadable", img->path);
    if (img->ehdr.e_entry && prog->kind != MT_ELF_SHARED &&
        !mt_elf_file_load_at(img, img->ehdr.e_entry, PF_X))
        mt_warn(prog, "%s: entry point 0x%llx is not in an executable segment", img->path,
                (unsigned long long)img->ehdr.e_entry);
}

int mt_discover_procedures(const mt_elf_file *img, mt_program *prog, mt_error *err)
{
    classify_file(img, prog);
    read_build_id(img, prog);
    warn_about_image(img, prog);

    candidate_list list = {0};
    add_symbols(img, SHT_SYMTAB, MT_SRC_SYMTAB, &list);
    add_symbols(img, SHT_DYNSYM, MT_SRC_DYNSYM, &list);
    mt_fde_range *fdes;
    size_t nfdes = mt_read_eh_frame(img, prog, &fdes);
    add_fde_ranges(img, fdes, nfdes, &list);
    free(fdes);
    mt_plt_stub *stubs;
    size_t nstubs = mt_find_plt_stubs(img, prog, &stubs);
    add_plt_stubs(img, stubs, nstubs, &list);
    if (img->ehdr.e_entry && mt_elf_file_load_at(img, img->ehdr.e_entry, PF_X)) {
        candidate c = {img->ehdr.e_entry, 0, 0, "_start", RANK_ENTRY, MT_SRC_ENTRY, NULL};
        add_candidate(&list, c);
    }

    int rc = 0;
    if (list.n == 0) {
        mt_error_set(err, "%s: no code found (no symbols, no .eh_frame)", img->path);
        rc = -1;
    } else {
        qsort(list.items, list.n, sizeof *list.items, compare_candidates);
        size_t n = merge_by_entry(list.items, list.n);
        n = drop_fdes_inside_symbols(list.items, n);
        make_procedures(img, prog, list.items, n);
        tie_split_parts(prog);
        warn_if_only_eh_frame(img, prog);
    }
    free(list.items);
    for (size_t i = 0; i < nstubs; i++) {
        free(stubs[i].name);
        free(stubs[i].import);
    }
    free(stubs);
    return rc;
}

/* ---- address-taken procedures ---------------------------------------- */

static uint64_t load_word(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Someone told about each address stored in data: the value and where it
 * is stored (0 when that is not a place in memory). */
typedef struct {
    void (*visit)(void *ctx, uint64_t value, uint64_t where);
    void *ctx;
} data_visitor;

static void visit_words_in_section(const mt_elf_file *img, const data_visitor *v,
                                   const mt_elf_section *s)
{
    const uint8_t *bytes = mt_elf_file_section_bytes(img, s);
    if (!bytes)
        return;
    uint64_t skip = (8 - (s->addr & 7)) & 7; /* align by address, not by offset */
    for (uint64_t off = skip; off + 8 <= s->size && off + 8 > off; off += 8)
        v->visit(v->ctx, load_word(bytes + off), s->addr + off);
}

static void visit_rela_targets(const mt_elf_file *img, const data_visitor *v,
                               const mt_elf_section *rela)
{
    const mt_elf_section *symtab = mt_elf_file_linked_section(img, rela);
    size_t count = mt_elf_file_rela_count(rela);
    for (size_t i = 0; i < count; i++) {
        Elf64_Rela r;
        mt_elf_file_rela(img, rela, i, &r);
        uint32_t type = (uint32_t)ELF64_R_TYPE(r.r_info);
        Elf64_Sym sym;
        const char *name;
        if (type == R_X86_64_RELATIVE || type == R_X86_64_IRELATIVE)
            v->visit(v->ctx, (uint64_t)r.r_addend, r.r_offset);
        else if ((type == R_X86_64_64 || type == R_X86_64_GLOB_DAT) &&
                 mt_elf_file_symbol(img, symtab, ELF64_R_SYM(r.r_info), &sym, &name) &&
                 sym.st_shndx != SHN_UNDEF)
            v->visit(v->ctx, sym.st_value + (uint64_t)r.r_addend, r.r_offset);
    }
}

/* SHT_RELR (-z pack-relative-relocs): a list of relocated word addresses,
 * encoded as an address followed by bitmaps; the addend is the word itself. */
static void visit_relr_targets(const mt_elf_file *img, const data_visitor *v,
                               const mt_elf_section *relr)
{
    const uint8_t *bytes = mt_elf_file_section_bytes(img, relr);
    if (!bytes)
        return;
    uint64_t next = 0;
    for (uint64_t off = 0; off + 8 <= relr->size; off += 8) {
        uint64_t e = load_word(bytes + off);
        if (!(e & 1)) {
            const uint8_t *w = mt_elf_file_bytes(img, e, 8);
            if (w)
                v->visit(v->ctx, load_word(w), e);
            next = e + 8;
            continue;
        }
        for (unsigned bit = 1; bit < 64; bit++) {
            uint64_t at = next + (bit - 1) * 8;
            const uint8_t *w = (e >> bit) & 1 ? mt_elf_file_bytes(img, at, 8) : NULL;
            if (w)
                v->visit(v->ctx, load_word(w), at);
        }
        next += 63 * 8;
    }
}

/* Data sections whose 8-byte words may hold function pointers in a
 * position-dependent executable, where such pointers need no relocation. */
static bool may_hold_code_pointers(const mt_elf_section *s)
{
    if (s->type != SHT_PROGBITS || !(s->flags & SHF_ALLOC) || (s->flags & SHF_EXECINSTR))
        return false;
    return strncmp(s->name, ".data", 5) == 0 || strncmp(s->name, ".rodata", 7) == 0 ||
           strcmp(s->name, ".got") == 0;
}

/* Every address stored in data: init/fini arrays, relocations, and (in a
 * position-dependent executable) the words of its data sections. */
static void visit_data_addresses(const mt_elf_file *img, const mt_program *prog,
                                 const data_visitor *v)
{
    for (size_t i = 0; i < img->nsections; i++) {
        const mt_elf_section *s = &img->sections[i];
        if (s->type == SHT_INIT_ARRAY || s->type == SHT_FINI_ARRAY || s->type == SHT_PREINIT_ARRAY)
            visit_words_in_section(img, v, s);
        else if (s->type == SHT_RELA && (s->flags & SHF_ALLOC))
            visit_rela_targets(img, v, s);
        else if (s->type == SHT_RELR)
            visit_relr_targets(img, v, s);
        else if (prog->kind == MT_ELF_EXEC && may_hold_code_pointers(s))
            visit_words_in_section(img, v, s);
    }
}

static void mark_entry_at(void *ctx, uint64_t addr, uint64_t where)
{
    (void)where;
    mt_program *prog = ctx;
    uint32_t p = mt_procedure_with_entry(prog, addr);
    if (p != MT_NONE)
        prog->procs[p].address_taken = true;
}

static void mark_if_exported(void *prog, const Elf64_Sym *sym, const char *name)
{
    (void)name;
    unsigned bind = ELF64_ST_BIND(sym->st_info);
    unsigned vis = ELF64_ST_VISIBILITY(sym->st_other);
    if (is_defined_function(sym) && (bind == STB_GLOBAL || bind == STB_WEAK) &&
        (vis == STV_DEFAULT || vis == STV_PROTECTED))
        mark_entry_at(prog, sym->st_value, 0);
}

static void mark_exported(const mt_elf_file *img, mt_program *prog)
{
    mt_elf_file_each_symbol(img, SHT_DYNSYM, mark_if_exported, prog);
}

void mt_mark_data_address_taken(const mt_elf_file *img, mt_program *prog)
{
    if (prog->nprocs == 0)
        return;
    if (img->ehdr.e_entry)
        mark_entry_at(prog, img->ehdr.e_entry, 0);
    mark_exported(img, prog);
    /* _init/_fini are called by the dynamic loader. */
    uint64_t init, fini;
    mt_elf_file_dynamic(img, DT_INIT, &init);
    mt_elf_file_dynamic(img, DT_FINI, &fini);
    mark_entry_at(prog, init, 0);
    mark_entry_at(prog, fini, 0);
    data_visitor v = {mark_entry_at, prog};
    visit_data_addresses(img, prog, &v);
}

typedef struct {
    const mt_elf_file *img;
    const mt_program *prog;
    mt_data_ref *refs;
    size_t n, cap;
} inner_refs;

static void note_inner_ref(void *ctx, uint64_t value, uint64_t where)
{
    inner_refs *r = ctx;
    if (mt_elf_file_load_at(r->img, value, PF_X) &&
        mt_procedure_with_entry(r->prog, value) == MT_NONE) {
        mt_data_ref ref = {value, where};
        MT_PUSH(r->refs, r->n, r->cap, ref);
    }
}

static int compare_refs(const void *a, const void *b)
{
    const mt_data_ref *x = a, *y = b;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    return x->where < y->where ? -1 : x->where > y->where;
}

size_t mt_data_refs_into_code(const mt_elf_file *img, const mt_program *prog, mt_data_ref **out)
{
    inner_refs r = {.img = img, .prog = prog};
    data_visitor v = {note_inner_ref, &r};
    visit_data_addresses(img, prog, &v);
    if (r.n > 1)
        qsort(r.refs, r.n, sizeof *r.refs, compare_refs);
    *out = r.refs;
    return r.n;
}
