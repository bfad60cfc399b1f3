/* rewriter/input.c — the original executable, mapped read-only
 * (common/elf_file.h), with the bounds-checked views of its sections and
 * symbols the rewriter needs.  The analyzer has already validated the file;
 * these checks keep the rewriter safe on its own. */
#define _GNU_SOURCE
#include <string.h>

#include "internal.h"

static bool range_ok(const rw_input *in, uint64_t off, uint64_t len)
{
    return off <= in->elf.size && len <= in->elf.size - off;
}

static void read_sections(rw_input *in)
{
    const Elf64_Ehdr *eh = in->elf.ehdr;
    if (eh->e_shnum == 0 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        !range_ok(in, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)) ||
        eh->e_shoff % 8 != 0)
        return;
    in->shdrs = (const Elf64_Shdr *)(in->elf.data + eh->e_shoff);
    in->nshdrs = eh->e_shnum;
    if (eh->e_shstrndx < in->nshdrs) {
        const Elf64_Shdr *s = &in->shdrs[eh->e_shstrndx];
        if (s->sh_type == SHT_STRTAB && range_ok(in, s->sh_offset, s->sh_size)) {
            in->shstrtab = (const char *)(in->elf.data + s->sh_offset);
            in->shstrtab_size = s->sh_size;
        }
    }
}

int rw_input_open(rw_input *in, const char *path, mt_error *err)
{
    memset(in, 0, sizeof *in);
    if (mt_elf_file_open(&in->elf, path, err) != 0)
        return -1;
    read_sections(in);
    return 0;
}

void rw_input_close(rw_input *in)
{
    mt_elf_file_close(&in->elf);
    memset(in, 0, sizeof *in);
}

const uint8_t *rw_input_bytes_at(const rw_input *in, uint64_t vaddr, uint64_t len)
{
    return mt_elf_file_bytes(&in->elf, vaddr, len);
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

/* The address of a defined function symbol `name` in .symtab or .dynsym, 0
 * if there is none.  Unlike the analyzer's procedure names this sees every
 * alias: static glibc defines pthread_create as a weak alias of
 * __pthread_create, and fork of __libc_fork. */
uint64_t rw_input_function(const rw_input *in, const char *name)
{
    for (size_t i = 0; i < in->nshdrs; i++) {
        const Elf64_Shdr *sym = &in->shdrs[i];
        if ((sym->sh_type != SHT_SYMTAB && sym->sh_type != SHT_DYNSYM) ||
            sym->sh_entsize != sizeof(Elf64_Sym) || sym->sh_link >= in->nshdrs ||
            !range_ok(in, sym->sh_offset, sym->sh_size) || sym->sh_offset % 8 != 0)
            continue;
        const Elf64_Shdr *str = &in->shdrs[sym->sh_link];
        if (!range_ok(in, str->sh_offset, str->sh_size))
            continue;
        const Elf64_Sym *syms = (const Elf64_Sym *)(in->elf.data + sym->sh_offset);
        const char *names = (const char *)(in->elf.data + str->sh_offset);
        for (size_t k = 1; k < sym->sh_size / sizeof(Elf64_Sym); k++) {
            const Elf64_Sym *s = &syms[k];
            unsigned type = ELF64_ST_TYPE(s->st_info);
            if ((type == STT_FUNC || type == STT_GNU_IFUNC) && s->st_shndx != SHN_UNDEF &&
                s->st_value && s->st_name < str->sh_size &&
                strncmp(names + s->st_name, name, str->sh_size - s->st_name) == 0)
                return s->st_value;
        }
    }
    return 0;
}

/* The GOT slot the loader fills with the address of imported function
 * `name` (R_X86_64_GLOB_DAT: what `call *name@GOTPCREL(%rip)` reads when
 * built with -fno-plt), 0 if none. */
uint64_t rw_input_got_slot(const rw_input *in, const char *name)
{
    for (size_t i = 0; i < in->nshdrs; i++) {
        const Elf64_Shdr *rela = &in->shdrs[i];
        if (rela->sh_type != SHT_RELA || rela->sh_entsize != sizeof(Elf64_Rela) ||
            rela->sh_link >= in->nshdrs || !range_ok(in, rela->sh_offset, rela->sh_size) ||
            rela->sh_offset % 8 != 0)
            continue;
        const Elf64_Shdr *sym = &in->shdrs[rela->sh_link];
        if (sym->sh_type != SHT_DYNSYM || sym->sh_entsize != sizeof(Elf64_Sym) ||
            sym->sh_link >= in->nshdrs || !range_ok(in, sym->sh_offset, sym->sh_size) ||
            sym->sh_offset % 8 != 0)
            continue;
        const Elf64_Shdr *str = &in->shdrs[sym->sh_link];
        if (!range_ok(in, str->sh_offset, str->sh_size))
            continue;
        const Elf64_Rela *r = (const Elf64_Rela *)(in->elf.data + rela->sh_offset);
        const Elf64_Sym *syms = (const Elf64_Sym *)(in->elf.data + sym->sh_offset);
        const char *names = (const char *)(in->elf.data + str->sh_offset);
        size_t nsyms = sym->sh_size / sizeof *syms;
        for (size_t k = 0; k < rela->sh_size / sizeof *r; k++) {
            uint64_t s = ELF64_R_SYM(r[k].r_info);
            if (ELF64_R_TYPE(r[k].r_info) != R_X86_64_GLOB_DAT || s >= nsyms ||
                syms[s].st_name >= str->sh_size)
                continue;
            if (strncmp(names + syms[s].st_name, name, str->sh_size - syms[s].st_name) == 0)
                return r[k].r_offset;
        }
    }
    return 0;
}

uint64_t rw_input_dynamic(const rw_input *in, int64_t tag)
{
    for (size_t i = 0; i < in->elf.nphdrs; i++) {
        const Elf64_Phdr *ph = &in->elf.phdrs[i];
        if (ph->p_type != PT_DYNAMIC || !range_ok(in, ph->p_offset, ph->p_filesz))
            continue;
        for (uint64_t k = 0; k + sizeof(Elf64_Dyn) <= ph->p_filesz; k += sizeof(Elf64_Dyn)) {
            Elf64_Dyn d;
            memcpy(&d, in->elf.data + ph->p_offset + k, sizeof d);
            if (d.d_tag == DT_NULL)
                break;
            if (d.d_tag == tag)
                return d.d_tag == DT_TEXTREL ? 1 : d.d_un.d_val;
        }
    }
    return 0;
}
