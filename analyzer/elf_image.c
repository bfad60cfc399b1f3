/* analyzer/elf_image.c — open and validate an x86-64 ELF file and index its
 * sections and loadable segments.
 *
 * The headers are parsed directly from the read-only mapping (not through
 * libelf) so that every offset and count read from the file is checked
 * against the file size before use, and so that a corrupted file gets a
 * specific error ("section header table out of file bounds") instead of a
 * generic libelf message.  libelf is still opened on the file because later
 * stages (DWARF line tables) use it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* True when [off, off+len) lies inside a file of `size` bytes (overflow-safe). */
static bool range_in_file(uint64_t off, uint64_t len, uint64_t size)
{
    return off <= size && len <= size - off;
}

static int map_file(mt_image *img, const char *path, mt_error *err)
{
    img->fd = mt_open_regular(path, err); /* a FIFO would block the open */
    struct stat st;
    if (img->fd < 0)
        return -1;
    if (fstat(img->fd, &st) != 0) {
        mt_error_set(err, "%s: cannot stat: %s", path, strerror(errno));
        return -1;
    }
    if (st.st_size == 0) {
        mt_error_set(err, "%s: empty file", path);
        return -1;
    }
    if ((uint64_t)st.st_size < EI_NIDENT) {
        mt_error_set(err, "%s: not an ELF file (too short)", path);
        return -1;
    }
    img->size = (size_t)st.st_size;
    void *p = mmap(NULL, img->size, PROT_READ, MAP_PRIVATE, img->fd, 0);
    if (p == MAP_FAILED) {
        mt_error_set(err, "%s: cannot map: %s", path, strerror(errno));
        return -1;
    }
    img->data = p;
    return 0;
}

static int check_ident(const mt_image *img, const char *path, mt_error *err)
{
    const uint8_t *id = img->data;
    if (memcmp(id, ELFMAG, SELFMAG) != 0) {
        mt_error_set(err, "%s: not an ELF file", path);
        return -1;
    }
    if (id[EI_CLASS] == ELFCLASS32) {
        mt_error_set(err, "%s: 32-bit ELF is not supported", path);
        return -1;
    }
    if (id[EI_CLASS] != ELFCLASS64) {
        mt_error_set(err, "%s: invalid ELF class %u", path, id[EI_CLASS]);
        return -1;
    }
    if (id[EI_DATA] != ELFDATA2LSB) {
        mt_error_set(err, "%s: big-endian ELF is not supported", path);
        return -1;
    }
    if (img->size < sizeof(Elf64_Ehdr)) {
        mt_error_set(err, "%s: truncated ELF header", path);
        return -1;
    }
    return 0;
}

static int check_ehdr(const mt_image *img, const char *path, mt_error *err)
{
    const GElf_Ehdr *eh = &img->ehdr;
    if (eh->e_machine != EM_X86_64) {
        mt_error_set(err, "%s: not x86-64 (machine %u)", path, eh->e_machine);
        return -1;
    }
    switch (eh->e_type) {
    case ET_EXEC:
    case ET_DYN:
        break;
    case ET_REL:
        mt_error_set(err, "%s: relocatable object files are not supported; link it first", path);
        return -1;
    case ET_CORE:
        mt_error_set(err, "%s: core files are not supported", path);
        return -1;
    default:
        mt_error_set(err, "%s: unsupported ELF type %u", path, eh->e_type);
        return -1;
    }
    if (eh->e_ehsize < sizeof(Elf64_Ehdr)) {
        mt_error_set(err, "%s: corrupted ELF header (e_ehsize %u)", path, eh->e_ehsize);
        return -1;
    }
    return 0;
}

/* Reads section header `i`; the table bounds were checked by the caller. */
static Elf64_Shdr read_shdr(const mt_image *img, size_t i)
{
    Elf64_Shdr sh;
    memcpy(&sh, img->data + img->ehdr.e_shoff + i * img->ehdr.e_shentsize, sizeof sh);
    return sh;
}

/* Section count and string-table index, following the extended numbering
 * convention (e_shnum == 0 / e_shstrndx == SHN_XINDEX: real values live in
 * section header 0). */
static int section_counts(const mt_image *img, const char *path, size_t *count, size_t *strndx,
                          mt_error *err)
{
    const GElf_Ehdr *eh = &img->ehdr;
    *count = eh->e_shnum;
    *strndx = eh->e_shstrndx;
    if (eh->e_shoff == 0) {
        *count = 0; /* no section headers at all (e.g. sstrip'ed) */
        return 0;
    }
    if (eh->e_shentsize != sizeof(Elf64_Shdr)) {
        mt_error_set(err, "%s: corrupted ELF header (section header size %u)", path,
                     eh->e_shentsize);
        return -1;
    }
    if (!range_in_file(eh->e_shoff, sizeof(Elf64_Shdr), img->size)) {
        mt_error_set(err, "%s: section header table out of file bounds", path);
        return -1;
    }
    if (*count == 0 || *strndx == SHN_XINDEX) {
        Elf64_Shdr sh0 = read_shdr(img, 0);
        if (*count == 0)
            *count = sh0.sh_size;
        if (*strndx == SHN_XINDEX)
            *strndx = sh0.sh_link;
    }
    /* The table must fit in the file: this also bounds the allocation below
     * by the file size, whatever the header claims. */
    if (*count > img->size / sizeof(Elf64_Shdr) ||
        !range_in_file(eh->e_shoff, (uint64_t)*count * sizeof(Elf64_Shdr), img->size)) {
        mt_error_set(err, "%s: section header table out of file bounds", path);
        return -1;
    }
    if (*count > 0 && *strndx >= *count) {
        mt_error_set(err, "%s: corrupted ELF header (section name table index %zu)", path, *strndx);
        return -1;
    }
    return 0;
}

/* Name of a section: a NUL-terminated string inside the name table, else "". */
static const char *section_name(const mt_image *img, const Elf64_Shdr *strtab, uint32_t off)
{
    if (!strtab || strtab->sh_type == SHT_NOBITS ||
        !range_in_file(strtab->sh_offset, strtab->sh_size, img->size) || off >= strtab->sh_size)
        return "";
    const char *s = (const char *)img->data + strtab->sh_offset + off;
    if (!memchr(s, '\0', strtab->sh_size - off))
        return "";
    return s;
}

static int read_sections(mt_image *img, const char *path, mt_error *err)
{
    size_t count, strndx;
    if (section_counts(img, path, &count, &strndx, err) != 0)
        return -1;
    if (count == 0)
        return 0;
    Elf64_Shdr strtab = read_shdr(img, strndx);
    img->sections = mt_xcalloc(count, sizeof *img->sections);
    img->nsections = count;
    for (size_t i = 0; i < count; i++) {
        Elf64_Shdr sh = read_shdr(img, i);
        mt_section *s = &img->sections[i];
        s->name = section_name(img, strndx ? &strtab : NULL, sh.sh_name);
        s->addr = sh.sh_addr;
        s->size = sh.sh_size;
        s->offset = sh.sh_offset;
        s->type = sh.sh_type;
        s->flags = sh.sh_flags;
        s->entsize = sh.sh_entsize;
        s->link = sh.sh_link;
        s->in_file = sh.sh_type != SHT_NOBITS && sh.sh_type != SHT_NULL &&
                     range_in_file(sh.sh_offset, sh.sh_size, img->size);
    }
    return 0;
}

static int read_segments(mt_image *img, const char *path, mt_error *err)
{
    const GElf_Ehdr *eh = &img->ehdr;
    if (eh->e_phoff == 0 || eh->e_phnum == 0)
        return 0; /* no segments: nothing is loadable, later stages find no code */
    if (eh->e_phentsize != sizeof(Elf64_Phdr)) {
        mt_error_set(err, "%s: corrupted ELF header (program header size %u)", path,
                     eh->e_phentsize);
        return -1;
    }
    if (eh->e_phnum == PN_XNUM) {
        mt_error_set(err, "%s: extended program header numbering is not supported", path);
        return -1;
    }
    if (!range_in_file(eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr), img->size)) {
        mt_error_set(err, "%s: program header table out of file bounds", path);
        return -1;
    }
    size_t cap = 0;
    for (size_t i = 0; i < eh->e_phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, img->data + eh->e_phoff + i * sizeof ph, sizeof ph);
        if (ph.p_type == PT_INTERP)
            img->has_interp = true;
        else if (ph.p_type == PT_DYNAMIC)
            img->has_dynamic = true;
        if (ph.p_type != PT_LOAD)
            continue;
        if (!range_in_file(ph.p_offset, ph.p_filesz, img->size)) {
            mt_error_set(err, "%s: truncated file (segment %zu extends past end of file)", path, i);
            return -1;
        }
        if (ph.p_filesz > ph.p_memsz || ph.p_vaddr + ph.p_memsz < ph.p_vaddr) {
            mt_error_set(err, "%s: corrupted program header %zu", path, i);
            return -1;
        }
        mt_segment seg = {ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz, ph.p_flags};
        MT_PUSH(img->segments, img->nsegments, cap, seg);
    }
    return 0;
}

static int open_libelf(mt_image *img, const char *path, mt_error *err)
{
    if (elf_version(EV_CURRENT) == EV_NONE) {
        mt_error_set(err, "%s: libelf initialization failed: %s", path, elf_errmsg(-1));
        return -1;
    }
    img->elf = elf_begin(img->fd, ELF_C_READ_MMAP, NULL);
    if (!img->elf) {
        mt_error_set(err, "%s: libelf cannot read it: %s", path, elf_errmsg(-1));
        return -1;
    }
    return 0;
}

int mt_image_open(mt_image *img, const char *path, mt_error *err)
{
    memset(img, 0, sizeof *img);
    img->path = path;
    img->fd = -1;
    if (map_file(img, path, err) != 0 || check_ident(img, path, err) != 0)
        goto fail;
    Elf64_Ehdr eh;
    memcpy(&eh, img->data, sizeof eh);
    img->ehdr = eh; /* GElf_Ehdr is Elf64_Ehdr */
    if (check_ehdr(img, path, err) != 0 || read_segments(img, path, err) != 0 ||
        read_sections(img, path, err) != 0 || open_libelf(img, path, err) != 0)
        goto fail;
    return 0;
fail:
    mt_image_close(img);
    return -1;
}

void mt_image_close(mt_image *img)
{
    if (img->elf)
        elf_end(img->elf);
    if (img->data)
        munmap((void *)img->data, img->size);
    if (img->fd >= 0)
        close(img->fd);
    free(img->sections);
    free(img->segments);
    img->elf = NULL;
    img->data = NULL;
    img->fd = -1;
    img->sections = NULL;
    img->segments = NULL;
    img->nsections = img->nsegments = 0;
}

const mt_section *mt_image_section(const mt_image *img, const char *name)
{
    for (size_t i = 0; i < img->nsections; i++)
        if (strcmp(img->sections[i].name, name) == 0)
            return &img->sections[i];
    return NULL;
}

const uint8_t *mt_image_bytes_at(const mt_image *img, uint64_t vaddr, uint64_t len)
{
    for (size_t i = 0; i < img->nsegments; i++) {
        const mt_segment *s = &img->segments[i];
        if (vaddr < s->vaddr)
            continue;
        uint64_t rel = vaddr - s->vaddr;
        if (rel < s->filesz && len <= s->filesz - rel)
            return img->data + s->offset + rel; /* segment checked inside file at open */
    }
    return NULL;
}

const uint8_t *mt_image_section_bytes(const mt_image *img, const mt_section *sec)
{
    return sec && sec->in_file ? img->data + sec->offset : NULL;
}

bool mt_image_is_code(const mt_image *img, uint64_t vaddr)
{
    for (size_t i = 0; i < img->nsegments; i++) {
        const mt_segment *s = &img->segments[i];
        if ((s->flags & PF_X) && vaddr >= s->vaddr && vaddr - s->vaddr < s->memsz)
            return true;
    }
    return false;
}

const mt_section *mt_image_linked_section(const mt_image *img, const mt_section *sec)
{
    if (!sec || sec->link == 0 || sec->link >= img->nsections)
        return NULL;
    return &img->sections[sec->link];
}

const mt_section *mt_image_section_of_type(const mt_image *img, uint32_t type)
{
    for (size_t i = 0; i < img->nsections; i++)
        if (img->sections[i].type == type && img->sections[i].in_file)
            return &img->sections[i];
    return NULL;
}

/* Fixed-size records of a section; the record size is the ELF one whatever
 * sh_entsize says, since a wrong entsize must not let reads escape the file. */
static size_t record_count(const mt_section *sec, uint32_t type, size_t rec_size)
{
    if (!sec || !sec->in_file || sec->type != type)
        return 0;
    return sec->size / rec_size;
}

size_t mt_image_symbol_count(const mt_image *img, const mt_section *symtab)
{
    (void)img;
    if (symtab && symtab->type == SHT_DYNSYM)
        return record_count(symtab, SHT_DYNSYM, sizeof(Elf64_Sym));
    return record_count(symtab, SHT_SYMTAB, sizeof(Elf64_Sym));
}

bool mt_image_symbol(const mt_image *img, const mt_section *symtab, size_t i, GElf_Sym *sym,
                     const char **name)
{
    if (i >= mt_image_symbol_count(img, symtab))
        return false;
    memcpy(sym, img->data + symtab->offset + i * sizeof(Elf64_Sym), sizeof *sym);
    *name = "";
    const mt_section *strtab = mt_image_linked_section(img, symtab);
    if (strtab && strtab->in_file && strtab->type == SHT_STRTAB && sym->st_name < strtab->size) {
        const char *s = (const char *)img->data + strtab->offset + sym->st_name;
        if (memchr(s, '\0', strtab->size - sym->st_name))
            *name = s;
    }
    return true;
}

void mt_image_each_symbol(const mt_image *img, uint32_t type, mt_symbol_visitor visit, void *ctx)
{
    const mt_section *symtab = mt_image_section_of_type(img, type);
    size_t count = mt_image_symbol_count(img, symtab);
    for (size_t i = 1; i < count; i++) {
        GElf_Sym sym;
        const char *name;
        mt_image_symbol(img, symtab, i, &sym, &name);
        visit(ctx, &sym, name);
    }
}

size_t mt_image_rela_count(const mt_image *img, const mt_section *rela)
{
    (void)img;
    return record_count(rela, SHT_RELA, sizeof(Elf64_Rela));
}

bool mt_image_rela(const mt_image *img, const mt_section *rela, size_t i, GElf_Rela *out)
{
    if (i >= mt_image_rela_count(img, rela))
        return false;
    memcpy(out, img->data + rela->offset + i * sizeof(Elf64_Rela), sizeof *out);
    return true;
}
