/* common/elf_file.c — see elf_file.h. */
#define _GNU_SOURCE
#include "elf_file.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static bool range_ok(const mt_elf_file *f, uint64_t off, uint64_t len)
{
    return off <= f->size && len <= f->size - off;
}

int mt_elf_file_open(mt_elf_file *f, const char *path, mt_error *err)
{
    memset(f, 0, sizeof *f);
    f->path = path;
    int fd = mt_open_regular(path, err);
    if (fd < 0)
        return -1;
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
    f->data = p;
    f->size = (size_t)st.st_size;
    f->ehdr = (const Elf64_Ehdr *)f->data;
    const Elf64_Ehdr *eh = f->ehdr;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_machine != EM_X86_64 || eh->e_phentsize != sizeof(Elf64_Phdr) ||
        eh->e_phoff % 8 != 0 ||
        !range_ok(f, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr))) {
        mt_error_set(err, "%s: not an x86-64 ELF file with valid program headers", path);
        mt_elf_file_close(f);
        return -1;
    }
    f->phdrs = (const Elf64_Phdr *)(f->data + eh->e_phoff);
    f->nphdrs = eh->e_phnum;
    return 0;
}

void mt_elf_file_close(mt_elf_file *f)
{
    if (f->data)
        munmap((void *)f->data, f->size);
    memset(f, 0, sizeof *f);
}

const uint8_t *mt_elf_file_bytes(const mt_elf_file *f, uint64_t vaddr, uint64_t len)
{
    for (size_t i = 0; i < f->nphdrs; i++) {
        const Elf64_Phdr *ph = &f->phdrs[i];
        if (ph->p_type != PT_LOAD || vaddr < ph->p_vaddr)
            continue;
        uint64_t off = vaddr - ph->p_vaddr;
        if (off <= ph->p_filesz && len <= ph->p_filesz - off &&
            range_ok(f, ph->p_offset + off, len))
            return f->data + ph->p_offset + off;
    }
    return NULL;
}
