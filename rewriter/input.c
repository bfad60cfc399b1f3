/* rewriter/input.c — the original executable, mapped read-only, with the
 * bounds-checked views of its headers the rewriter needs.  The analyzer has
 * already validated the file; these checks keep the rewriter safe on its own. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

static bool range_ok(const rw_input *in, uint64_t off, uint64_t len)
{
    return off <= in->size && len <= in->size - off;
}

static void read_sections(rw_input *in)
{
    const Elf64_Ehdr *eh = in->ehdr;
    if (eh->e_shnum == 0 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        !range_ok(in, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)) ||
        eh->e_shoff % 8 != 0)
        return;
    in->shdrs = (const Elf64_Shdr *)(in->data + eh->e_shoff);
    in->nshdrs = eh->e_shnum;
    if (eh->e_shstrndx < in->nshdrs) {
        const Elf64_Shdr *s = &in->shdrs[eh->e_shstrndx];
        if (s->sh_type == SHT_STRTAB && range_ok(in, s->sh_offset, s->sh_size)) {
            in->shstrtab = (const char *)(in->data + s->sh_offset);
            in->shstrtab_size = s->sh_size;
        }
    }
}

int rw_input_open(rw_input *in, const char *path, mt_error *err)
{
    memset(in, 0, sizeof *in);
    in->path = path;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        mt_error_set(err, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        mt_error_set(err, "%s: not an ELF file (too small)", path);
        close(fd);
        return -1;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        mt_error_set(err, "%s: cannot map: %s", path, strerror(errno));
        return -1;
    }
    in->data = p;
    in->size = (size_t)st.st_size;
    in->ehdr = (const Elf64_Ehdr *)in->data;
    const Elf64_Ehdr *eh = in->ehdr;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_machine != EM_X86_64 || eh->e_phentsize != sizeof(Elf64_Phdr) ||
        eh->e_phoff % 8 != 0 ||
        !range_ok(in, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr))) {
        mt_error_set(err, "%s: not an x86-64 ELF file with valid program headers", path);
        rw_input_close(in);
        return -1;
    }
    in->phdrs = (const Elf64_Phdr *)(in->data + eh->e_phoff);
    in->nphdrs = eh->e_phnum;
    read_sections(in);
    return 0;
}

void rw_input_close(rw_input *in)
{
    if (in->data)
        munmap((void *)in->data, in->size);
    memset(in, 0, sizeof *in);
}

const uint8_t *rw_input_bytes_at(const rw_input *in, uint64_t vaddr, uint64_t len)
{
    for (size_t i = 0; i < in->nphdrs; i++) {
        const Elf64_Phdr *ph = &in->phdrs[i];
        if (ph->p_type != PT_LOAD || vaddr < ph->p_vaddr)
            continue;
        uint64_t off = vaddr - ph->p_vaddr;
        if (off <= ph->p_filesz && len <= ph->p_filesz - off &&
            range_ok(in, ph->p_offset + off, len))
            return in->data + ph->p_offset + off;
    }
    return NULL;
}

const Elf64_Shdr *rw_input_section(const rw_input *in, const char *name)
{
    if (!in->shstrtab)
        return NULL;
    for (size_t i = 0; i < in->nshdrs; i++) {
        uint32_t n = in->shdrs[i].sh_name;
        if (n < in->shstrtab_size &&
            strncmp(in->shstrtab + n, name, in->shstrtab_size - n) == 0)
            return &in->shdrs[i];
    }
    return NULL;
}
