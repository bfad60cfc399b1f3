/* common/elf_file.h — the one validated view of an x86-64 ELF executable or
 * shared object, mapped read-only: the analyzer, the rewriter and the cost
 * model all read the file through it.
 *
 * Every check is made once, at open, with a one-line error naming the file
 * and the problem: the identification and header, the program header table
 * and each PT_LOAD's file image, the section header table and every section
 * name.  After that, the accessors below only index what open checked
 * (a section whose bytes do not lie in the file is kept, with in_file false,
 * and yields no bytes, symbols or relocations). */
#ifndef MTOOL_COMMON_ELF_FILE_H
#define MTOOL_COMMON_ELF_FILE_H

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

typedef struct {
    const char *name;  /* NUL-terminated inside the section-name table, else "" */
    uint64_t addr, size, offset;
    uint32_t type;     /* SHT_* */
    uint64_t flags;    /* SHF_* */
    uint64_t entsize;
    uint32_t link;
    bool in_file;      /* bytes [offset, offset+size) lie inside the file */
} mt_elf_section;

typedef struct {
    const char *path;
    int fd;               /* open while the view is: libdwarf reads by descriptor */
    const uint8_t *data;  /* the whole file */
    size_t size;
    Elf64_Ehdr ehdr;      /* ET_EXEC or ET_DYN, x86-64, little-endian */
    const Elf64_Phdr *phdrs;  /* every program header (copied: no alignment assumed) */
    size_t nphdrs;
    const mt_elf_section *sections; /* every section header, index = section number */
    size_t nsections;
} mt_elf_file;

/* 0, or -1 with err ("FILE: reason") when the file cannot be read or is not
 * a well-formed x86-64 ELF executable or shared object. */
int mt_elf_file_open(mt_elf_file *f, const char *path, mt_error *err);
void mt_elf_file_close(mt_elf_file *f);

/* File bytes backing [vaddr, vaddr+len) inside one PT_LOAD's file image, or NULL. */
const uint8_t *mt_elf_file_bytes(const mt_elf_file *f, uint64_t vaddr, uint64_t len);
/* File bytes from `vaddr` to the end of its PT_LOAD's file image (*avail of
 * them), or NULL: for data with no length of its own (LSDAs, unwind tables). */
const uint8_t *mt_elf_file_bytes_from(const mt_elf_file *f, uint64_t vaddr, uint64_t *avail);
/* The first PT_LOAD whose memory image holds `vaddr` and whose p_flags include
 * every flag of `flags` (0, or PF_X for code), or NULL. */
const Elf64_Phdr *mt_elf_file_load_at(const mt_elf_file *f, uint64_t vaddr, uint32_t flags);
/* The first program header of `type` (PT_INTERP, PT_GNU_EH_FRAME...), or NULL. */
const Elf64_Phdr *mt_elf_file_phdr(const mt_elf_file *f, uint32_t type);
/* Whether the PT_DYNAMIC array (what the loader reads) has `tag` before
 * DT_NULL; *value is its value, 0 when absent. */
bool mt_elf_file_dynamic(const mt_elf_file *f, int64_t tag, uint64_t *value);

/* Section by name, or NULL. */
const mt_elf_section *mt_elf_file_section(const mt_elf_file *f, const char *name);
/* The first section of a type (SHT_SYMTAB, SHT_DYNSYM...) whose bytes lie in
 * the file, found by type so that a damaged name table does not hide it. */
const mt_elf_section *mt_elf_file_section_of_type(const mt_elf_file *f, uint32_t type);
/* Bytes of a section if it lies inside the file, else NULL. */
const uint8_t *mt_elf_file_section_bytes(const mt_elf_file *f, const mt_elf_section *sec);
/* The section a symbol/relocation section links to (sh_link), or NULL. */
const mt_elf_section *mt_elf_file_linked_section(const mt_elf_file *f, const mt_elf_section *sec);

/* Symbols of a SHT_SYMTAB/SHT_DYNSYM section (0 if unusable); symbol `i`
 * with its name ("" when the name is out of bounds).  False if i is out of range. */
size_t mt_elf_file_symbol_count(const mt_elf_section *symtab);
bool mt_elf_file_symbol(const mt_elf_file *f, const mt_elf_section *symtab, size_t i,
                        Elf64_Sym *sym, const char **name);
/* Calls visit(ctx, sym, name) for every symbol but the null one of the
 * first section of `type` (SHT_SYMTAB or SHT_DYNSYM); none if it is absent. */
typedef void (*mt_elf_symbol_visitor)(void *ctx, const Elf64_Sym *sym, const char *name);
void mt_elf_file_each_symbol(const mt_elf_file *f, uint32_t type, mt_elf_symbol_visitor visit,
                             void *ctx);
/* Entries of a SHT_RELA section (0 if unusable); entry `i`.  False if out of range. */
size_t mt_elf_file_rela_count(const mt_elf_section *rela);
bool mt_elf_file_rela(const mt_elf_file *f, const mt_elf_section *rela, size_t i,
                      Elf64_Rela *out);

#endif
