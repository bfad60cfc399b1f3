/* rewriter/input.c — the two lookups by name the rewriter makes in the
 * original file, over its validated view (common/elf_file.h). */
#define _GNU_SOURCE
#include <string.h>

#include "internal.h"

/* The address of a defined function symbol `name` in .symtab or .dynsym, 0
 * if there is none.  Unlike the analyzer's procedure names this sees every
 * alias: static glibc defines pthread_create as a weak alias of
 * __pthread_create, and fork of __libc_fork. */
uint64_t rw_input_function(const mt_elf_file *in, const char *name)
{
    for (size_t i = 0; i < in->nsections; i++) {
        const mt_elf_section *symtab = &in->sections[i];
        Elf64_Sym s;
        const char *sname;
        /* Symbol 0 is the null symbol. */
        for (size_t k = 1; mt_elf_file_symbol(in, symtab, k, &s, &sname); k++) {
            unsigned type = ELF64_ST_TYPE(s.st_info);
            if ((type == STT_FUNC || type == STT_GNU_IFUNC) && s.st_shndx != SHN_UNDEF &&
                s.st_value && strcmp(sname, name) == 0)
                return s.st_value;
        }
    }
    return 0;
}

/* The GOT slot the loader fills with the address of imported function
 * `name` (R_X86_64_GLOB_DAT: what `call *name@GOTPCREL(%rip)` reads when
 * built with -fno-plt), 0 if none. */
uint64_t rw_input_got_slot(const mt_elf_file *in, const char *name)
{
    for (size_t i = 0; i < in->nsections; i++) {
        const mt_elf_section *rela = &in->sections[i];
        const mt_elf_section *dynsym = mt_elf_file_linked_section(in, rela);
        if (!dynsym || dynsym->type != SHT_DYNSYM)
            continue;
        Elf64_Rela r;
        for (size_t k = 0; mt_elf_file_rela(in, rela, k, &r); k++) {
            Elf64_Sym s;
            const char *sname;
            if (ELF64_R_TYPE(r.r_info) == R_X86_64_GLOB_DAT &&
                mt_elf_file_symbol(in, dynsym, ELF64_R_SYM(r.r_info), &s, &sname) &&
                strcmp(sname, name) == 0)
                return r.r_offset;
        }
    }
    return 0;
}
