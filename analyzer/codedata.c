/* analyzer/codedata.c — code the program treats as data.
 *
 * Some programs copy or read ranges of their own code: V8 copies its
 * embedded builtins (the bytes from the label v8_Default_embedded_blob_code_)
 * into its code range and finds code objects by pc against that blob; blobs
 * of generated code and self-checking programs do the like.  Such code must
 * stay byte for byte as it is, and must run where the program put it: an
 * entry jump written into it travels with a copy (and jumps nowhere from
 * there), and a pc in a relocated copy is in no range the program knows.
 *
 * Two rules, both from symbols, find it without catching ordinary function
 * pointers (a function's address taken names the function, not a range):
 *   - a data symbol (STT_OBJECT) with a size, in an executable section, that
 *     covers procedure entries: the range it names is data;
 *   - a label without a size (STT_OBJECT or STT_NOTYPE) in an executable
 *     section, at a procedure entry the code or data takes the address of,
 *     where that procedure has no unwind info in a file whose compiled code
 *     has it: the range runs over that procedure and the ones after it up to
 *     the first with unwind info (a generated blob has none; compiled code,
 *     and hand-written assembly with .cfi directives, has an FDE).
 * The procedures inside keep their CFG (the analysis of the bytes is right),
 * but carry `code_as_data`, and the rewriter leaves them out. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The section holding symbol `sym`, if it is an executable one. */
static const mt_elf_section *code_section_of(const mt_elf_file *img, const Elf64_Sym *sym)
{
    if (sym->st_shndx == SHN_UNDEF || sym->st_shndx >= img->nsections)
        return NULL;
    const mt_elf_section *s = &img->sections[sym->st_shndx];
    if (!(s->flags & SHF_EXECINSTR) || sym->st_value < s->addr || sym->st_value - s->addr >= s->size)
        return NULL;
    return s;
}

/* A symbol that names data, or a plain label; assembler-local markers
 * (".annobin_*", ".L*") name nothing the program uses. */
static bool is_data_label(const Elf64_Sym *sym, const char *name)
{
    unsigned type = ELF64_ST_TYPE(sym->st_info);
    return (type == STT_OBJECT || type == STT_NOTYPE) && name[0] != '\0' && name[0] != '.';
}

static void mark(mt_program *prog, uint32_t p, const char *object, const char *how)
{
    mt_procedure *proc = &prog->procs[p];
    if (!proc->code_as_data && !proc->is_plt)
        proc->code_as_data = mt_xasprintf("code used as data: inside object %s%s", object, how);
}

/* Procedures whose entry lies in [lo, hi). */
static void mark_range(mt_program *prog, uint64_t lo, uint64_t hi, const char *object)
{
    uint32_t p = mt_procedure_at_or_before(prog, lo);
    if (p == MT_NONE || prog->procs[p].entry < lo)
        p = p == MT_NONE ? 0 : p + 1;
    for (; p < prog->nprocs && prog->procs[p].entry < hi; p++)
        mark(prog, p, object, "");
}

static bool file_has_unwind_info(const mt_program *prog)
{
    for (uint32_t i = 0; i < prog->nprocs; i++)
        if (prog->procs[i].sources & MT_SRC_EH_FRAME)
            return true;
    return false;
}

/* The run of procedures without unwind info that starts at the label. */
static void mark_run_without_unwind_info(mt_program *prog, uint64_t label, const char *object)
{
    uint32_t p = mt_procedure_with_entry(prog, label);
    if (p == MT_NONE || !prog->procs[p].address_taken || (prog->procs[p].sources & MT_SRC_EH_FRAME))
        return;
    for (; p < prog->nprocs && !(prog->procs[p].sources & MT_SRC_EH_FRAME); p++)
        mark(prog, p, object, " (a label without a size: up to the next code with unwind info)");
}

typedef struct {
    const mt_elf_file *img;
    mt_program *prog;
    bool unwind_info; /* the file has some */
} marker;

static void mark_from_symbol(void *ctx, const Elf64_Sym *sym, const char *name)
{
    marker *m = ctx;
    const mt_elf_section *sec = is_data_label(sym, name) ? code_section_of(m->img, sym) : NULL;
    if (!sec)
        return;
    if (sym->st_size && ELF64_ST_TYPE(sym->st_info) == STT_OBJECT) {
        uint64_t room = sec->size - (sym->st_value - sec->addr); /* the object ends with its section */
        mark_range(m->prog, sym->st_value,
                   sym->st_value + (sym->st_size < room ? sym->st_size : room), name);
    } else if (!sym->st_size && m->unwind_info) {
        mark_run_without_unwind_info(m->prog, sym->st_value, name);
    }
}

void mt_mark_code_used_as_data(const mt_elf_file *img, mt_program *prog)
{
    if (prog->nprocs == 0)
        return;
    marker m = {img, prog, file_has_unwind_info(prog)};
    mt_elf_file_each_symbol(img, SHT_SYMTAB, mark_from_symbol, &m);
    mt_elf_file_each_symbol(img, SHT_DYNSYM, mark_from_symbol, &m);
    uint32_t n = 0, first = MT_NONE;
    for (uint32_t i = 0; i < prog->nprocs; i++)
        if (prog->procs[i].code_as_data && n++ == 0)
            first = i;
    if (n)
        mt_warn(prog, "%s: %u procedures are code the program uses as data and are left as they "
                "are (first: %s)", prog->path, n, prog->procs[first].code_as_data);
}
