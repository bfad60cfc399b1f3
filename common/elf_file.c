/* common/elf_file.c — see elf_file.h.
 *
 * The headers are parsed straight from the read-only mapping (not through
 * libelf) so that every offset and count read from the file is checked
 * against the file size before use, and so that a corrupted file gets a
 * specific error ("section header table out of file bounds") instead of a
 * generic library message. */
#define _GNU_SOURCE
#include "elf_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* True when [off, off+len) lies inside the file (overflow-safe): the one
 * range check every offset read from the file goes through. */
static bool in_file(const mt_elf_file *f, uint64_t off, uint64_t len)
{
    return off <= f->size && len <= f->size - off;
}

static int map_file(mt_elf_file *f, mt_error *err)
{
    f->fd = mt_open_regular(f->path, err); /* a FIFO would block the open */
    if (f->fd < 0)
        return -1;
    struct stat st;
    if (fstat(f->fd, &st) != 0) {
        mt_error_set(err, "%s: cannot stat: %s", f->path, strerror(errno));
        return -1;
    }
    if (st.st_size == 0) {
        mt_error_set(err, "%s: empty file", f->path);
        return -1;
    }
    if ((uint64_t)st.st_size < EI_NIDENT) {
        mt_error_set(err, "%s: not an ELF file (too short)", f->path);
        return -1;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, f->fd, 0);
    if (p == MAP_FAILED) {
        mt_error_set(err, "%s: cannot map: %s", f->path, strerror(errno));
        return -1;
    }
    f->data = p;
    f->size = (size_t)st.st_size;
    return 0;
}

static int check_ident(const mt_elf_file *f, mt_error *err)
{
    const uint8_t *id = f->data;
    if (memcmp(id, ELFMAG, SELFMAG) != 0) {
        mt_error_set(err, "%s: not an ELF file", f->path);
        return -1;
    }
    if (id[EI_CLASS] == ELFCLASS32) {
        mt_error_set(err, "%s: 32-bit ELF is not supported", f->path);
        return -1;
    }
    if (id[EI_CLASS] != ELFCLASS64) {
        mt_error_set(err, "%s: invalid ELF class %u", f->path, id[EI_CLASS]);
        return -1;
    }
    if (id[EI_DATA] != ELFDATA2LSB) {
        mt_error_set(err, "%s: big-endian ELF is not supported", f->path);
        return -1;
    }
    if (f->size < sizeof(Elf64_Ehdr)) {
        mt_error_set(err, "%s: truncated ELF header", f->path);
        return -1;
    }
    return 0;
}

static int check_ehdr(const mt_elf_file *f, mt_error *err)
{
    const Elf64_Ehdr *eh = &f->ehdr;
    if (eh->e_machine != EM_X86_64) {
        mt_error_set(err, "%s: not x86-64 (machine %u)", f->path, eh->e_machine);
        return -1;
    }
    switch (eh->e_type) {
    case ET_EXEC:
    case ET_DYN:
        break;
    case ET_REL:
        mt_error_set(err, "%s: relocatable object files are not supported; link it first",
                     f->path);
        return -1;
    case ET_CORE:
        mt_error_set(err, "%s: core files are not supported", f->path);
        return -1;
    default:
        mt_error_set(err, "%s: unsupported ELF type %u", f->path, eh->e_type);
        return -1;
    }
    if (eh->e_ehsize < sizeof(Elf64_Ehdr)) {
        mt_error_set(err, "%s: corrupted ELF header (e_ehsize %u)", f->path, eh->e_ehsize);
        return -1;
    }
    return 0;
}

/* The program headers, each PT_LOAD's file image inside the file and its
 * address range without overflow; other segments are checked where read. */
static int read_segments(mt_elf_file *f, mt_error *err)
{
    const Elf64_Ehdr *eh = &f->ehdr;
    if (eh->e_phoff == 0 || eh->e_phnum == 0)
        return 0; /* no segments: nothing is loadable, later stages find no code */
    if (eh->e_phentsize != sizeof(Elf64_Phdr)) {
        mt_error_set(err, "%s: corrupted ELF header (program header size %u)", f->path,
                     eh->e_phentsize);
        return -1;
    }
    if (eh->e_phnum == PN_XNUM) {
        mt_error_set(err, "%s: extended program header numbering is not supported", f->path);
        return -1;
    }
    if (!in_file(f, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr))) {
        mt_error_set(err, "%s: program header table out of file bounds", f->path);
        return -1;
    }
    Elf64_Phdr *phdrs = mt_xcalloc(eh->e_phnum, sizeof *phdrs);
    memcpy(phdrs, f->data + eh->e_phoff, eh->e_phnum * sizeof *phdrs);
    f->phdrs = phdrs;
    f->nphdrs = eh->e_phnum;
    for (size_t i = 0; i < f->nphdrs; i++) {
        const Elf64_Phdr *ph = &f->phdrs[i];
        if (ph->p_type != PT_LOAD)
            continue;
        if (!in_file(f, ph->p_offset, ph->p_filesz)) {
            mt_error_set(err, "%s: truncated file (segment %zu extends past end of file)",
                         f->path, i);
            return -1;
        }
        if (ph->p_filesz > ph->p_memsz || ph->p_vaddr + ph->p_memsz < ph->p_vaddr) {
            mt_error_set(err, "%s: corrupted program header %zu", f->path, i);
            return -1;
        }
    }
    return 0;
}

/* Reads section header `i`; the table bounds were checked by the caller. */
static Elf64_Shdr read_shdr(const mt_elf_file *f, size_t i)
{
    Elf64_Shdr sh;
    memcpy(&sh, f->data + f->ehdr.e_shoff + i * sizeof sh, sizeof sh);
    return sh;
}

/* Section count and string-table index, following the extended numbering
 * convention (e_shnum == 0 / e_shstrndx == SHN_XINDEX: real values live in
 * section header 0). */
static int section_counts(const mt_elf_file *f, size_t *count, size_t *strndx, mt_error *err)
{
    const Elf64_Ehdr *eh = &f->ehdr;
    *count = eh->e_shnum;
    *strndx = eh->e_shstrndx;
    if (eh->e_shoff == 0) {
        *count = 0; /* no section headers at all (e.g. sstrip'ed) */
        return 0;
    }
    if (eh->e_shentsize != sizeof(Elf64_Shdr)) {
        mt_error_set(err, "%s: corrupted ELF header (section header size %u)", f->path,
                     eh->e_shentsize);
        return -1;
    }
    if (!in_file(f, eh->e_shoff, sizeof(Elf64_Shdr))) {
        mt_error_set(err, "%s: section header table out of file bounds", f->path);
        return -1;
    }
    if (*count == 0 || *strndx == SHN_XINDEX) {
        Elf64_Shdr sh0 = read_shdr(f, 0);
        if (*count == 0)
            *count = sh0.sh_size;
        if (*strndx == SHN_XINDEX)
            *strndx = sh0.sh_link;
    }
    /* The table must fit in the file: this also bounds the allocation below
     * by the file size, whatever the header claims. */
    if (*count > f->size / sizeof(Elf64_Shdr) ||
        !in_file(f, eh->e_shoff, (uint64_t)*count * sizeof(Elf64_Shdr))) {
        mt_error_set(err, "%s: section header table out of file bounds", f->path);
        return -1;
    }
    if (*count > 0 && *strndx >= *count) {
        mt_error_set(err, "%s: corrupted ELF header (section name table index %zu)", f->path,
                     *strndx);
        return -1;
    }
    return 0;
}

/* A NUL-terminated string at `off` inside string table `strtab`, else "". */
static const char *string_at(const mt_elf_file *f, const mt_elf_section *strtab, uint64_t off)
{
    if (!strtab || !strtab->in_file || off >= strtab->size)
        return "";
    const char *s = (const char *)f->data + strtab->offset + off;
    return memchr(s, '\0', strtab->size - off) ? s : "";
}

static mt_elf_section section_of(const mt_elf_file *f, const Elf64_Shdr *sh)
{
    return (mt_elf_section){
        .addr = sh->sh_addr, .size = sh->sh_size, .offset = sh->sh_offset,
        .type = sh->sh_type, .flags = sh->sh_flags, .entsize = sh->sh_entsize,
        .link = sh->sh_link,
        .in_file = sh->sh_type != SHT_NOBITS && sh->sh_type != SHT_NULL &&
                   in_file(f, sh->sh_offset, sh->sh_size)};
}

static int read_sections(mt_elf_file *f, mt_error *err)
{
    size_t count, strndx;
    if (section_counts(f, &count, &strndx, err) != 0)
        return -1;
    if (count == 0)
        return 0;
    mt_elf_section *sections = mt_xcalloc(count, sizeof *sections);
    for (size_t i = 0; i < count; i++) {
        Elf64_Shdr sh = read_shdr(f, i);
        sections[i] = section_of(f, &sh);
    }
    /* Section 0 is never the name table (SHN_UNDEF): no names then. */
    const mt_elf_section *names = strndx ? &sections[strndx] : NULL;
    for (size_t i = 0; i < count; i++)
        sections[i].name = string_at(f, names, read_shdr(f, i).sh_name);
    f->sections = sections;
    f->nsections = count;
    return 0;
}

int mt_elf_file_open(mt_elf_file *f, const char *path, mt_error *err)
{
    memset(f, 0, sizeof *f);
    f->path = path;
    f->fd = -1;
    if (map_file(f, err) != 0 || check_ident(f, err) != 0)
        goto fail;
    memcpy(&f->ehdr, f->data, sizeof f->ehdr);
    if (check_ehdr(f, err) != 0 || read_segments(f, err) != 0 || read_sections(f, err) != 0)
        goto fail;
    return 0;
fail:
    mt_elf_file_close(f);
    return -1;
}

void mt_elf_file_close(mt_elf_file *f)
{
    if (f->data)
        munmap((void *)f->data, f->size);
    if (f->fd >= 0)
        close(f->fd);
    free((void *)f->phdrs);
    free((void *)f->sections);
    memset(f, 0, sizeof *f);
    f->fd = -1;
}

/* ---- segments ----------------------------------------------------------- */

/* Every PT_LOAD's file image was checked inside the file at open. */
const uint8_t *mt_elf_file_bytes(const mt_elf_file *f, uint64_t vaddr, uint64_t len)
{
    for (size_t i = 0; i < f->nphdrs; i++) {
        const Elf64_Phdr *ph = &f->phdrs[i];
        if (ph->p_type != PT_LOAD || vaddr < ph->p_vaddr)
            continue;
        uint64_t rel = vaddr - ph->p_vaddr;
        if (rel <= ph->p_filesz && len <= ph->p_filesz - rel)
            return f->data + ph->p_offset + rel;
    }
    return NULL;
}

const uint8_t *mt_elf_file_bytes_from(const mt_elf_file *f, uint64_t vaddr, uint64_t *avail)
{
    for (size_t i = 0; i < f->nphdrs; i++) {
        const Elf64_Phdr *ph = &f->phdrs[i];
        if (ph->p_type != PT_LOAD || vaddr < ph->p_vaddr || vaddr - ph->p_vaddr >= ph->p_filesz)
            continue;
        *avail = ph->p_filesz - (vaddr - ph->p_vaddr);
        return f->data + ph->p_offset + (vaddr - ph->p_vaddr);
    }
    return NULL;
}

const Elf64_Phdr *mt_elf_file_load_at(const mt_elf_file *f, uint64_t vaddr, uint32_t flags)
{
    for (size_t i = 0; i < f->nphdrs; i++) {
        const Elf64_Phdr *ph = &f->phdrs[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & flags) == flags && vaddr >= ph->p_vaddr &&
            vaddr - ph->p_vaddr < ph->p_memsz)
            return ph;
    }
    return NULL;
}

const Elf64_Phdr *mt_elf_file_phdr(const mt_elf_file *f, uint32_t type)
{
    for (size_t i = 0; i < f->nphdrs; i++)
        if (f->phdrs[i].p_type == type)
            return &f->phdrs[i];
    return NULL;
}

bool mt_elf_file_dynamic(const mt_elf_file *f, int64_t tag, uint64_t *value)
{
    for (size_t i = 0; i < f->nphdrs; i++) {
        const Elf64_Phdr *ph = &f->phdrs[i];
        if (ph->p_type != PT_DYNAMIC || !in_file(f, ph->p_offset, ph->p_filesz))
            continue;
        for (uint64_t k = 0; k + sizeof(Elf64_Dyn) <= ph->p_filesz; k += sizeof(Elf64_Dyn)) {
            Elf64_Dyn d;
            memcpy(&d, f->data + ph->p_offset + k, sizeof d);
            if (d.d_tag == DT_NULL)
                break;
            if (d.d_tag == tag) {
                *value = d.d_un.d_val;
                return true;
            }
        }
    }
    *value = 0;
    return false;
}

/* ---- sections ----------------------------------------------------------- */

const mt_elf_section *mt_elf_file_section(const mt_elf_file *f, const char *name)
{
    for (size_t i = 0; i < f->nsections; i++)
        if (strcmp(f->sections[i].name, name) == 0)
            return &f->sections[i];
    return NULL;
}

const mt_elf_section *mt_elf_file_section_of_type(const mt_elf_file *f, uint32_t type)
{
    for (size_t i = 0; i < f->nsections; i++)
        if (f->sections[i].type == type && f->sections[i].in_file)
            return &f->sections[i];
    return NULL;
}

const uint8_t *mt_elf_file_section_bytes(const mt_elf_file *f, const mt_elf_section *sec)
{
    return sec && sec->in_file ? f->data + sec->offset : NULL;
}

const mt_elf_section *mt_elf_file_linked_section(const mt_elf_file *f, const mt_elf_section *sec)
{
    if (!sec || sec->link == 0 || sec->link >= f->nsections)
        return NULL;
    return &f->sections[sec->link];
}

/* Fixed-size records of a section; the record size is the ELF one whatever
 * sh_entsize says, since a wrong entsize must not let reads escape the file. */
static size_t record_count(const mt_elf_section *sec, uint32_t type, size_t rec_size)
{
    if (!sec || !sec->in_file || sec->type != type)
        return 0;
    return sec->size / rec_size;
}

size_t mt_elf_file_symbol_count(const mt_elf_section *symtab)
{
    if (symtab && symtab->type == SHT_DYNSYM)
        return record_count(symtab, SHT_DYNSYM, sizeof(Elf64_Sym));
    return record_count(symtab, SHT_SYMTAB, sizeof(Elf64_Sym));
}

bool mt_elf_file_symbol(const mt_elf_file *f, const mt_elf_section *symtab, size_t i,
                        Elf64_Sym *sym, const char **name)
{
    if (i >= mt_elf_file_symbol_count(symtab))
        return false;
    memcpy(sym, f->data + symtab->offset + i * sizeof(Elf64_Sym), sizeof *sym);
    const mt_elf_section *strtab = mt_elf_file_linked_section(f, symtab);
    *name = strtab && strtab->type == SHT_STRTAB ? string_at(f, strtab, sym->st_name) : "";
    return true;
}

void mt_elf_file_each_symbol(const mt_elf_file *f, uint32_t type, mt_elf_symbol_visitor visit,
                             void *ctx)
{
    const mt_elf_section *symtab = mt_elf_file_section_of_type(f, type);
    size_t count = mt_elf_file_symbol_count(symtab);
    for (size_t i = 1; i < count; i++) {
        Elf64_Sym sym;
        const char *name;
        mt_elf_file_symbol(f, symtab, i, &sym, &name);
        visit(ctx, &sym, name);
    }
}

size_t mt_elf_file_rela_count(const mt_elf_section *rela)
{
    return record_count(rela, SHT_RELA, sizeof(Elf64_Rela));
}

bool mt_elf_file_rela(const mt_elf_file *f, const mt_elf_section *rela, size_t i,
                      Elf64_Rela *out)
{
    if (i >= mt_elf_file_rela_count(rela))
        return false;
    memcpy(out, f->data + rela->offset + i * sizeof(Elf64_Rela), sizeof *out);
    return true;
}
