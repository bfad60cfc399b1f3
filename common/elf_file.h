/* common/elf_file.h — an x86-64 ELF executable mapped read-only, with its
 * program headers checked: the bytes the rewriter copies and the cost model
 * decodes come from here (the analysis keeps no instruction bytes). */
#ifndef MTOOL_COMMON_ELF_FILE_H
#define MTOOL_COMMON_ELF_FILE_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

typedef struct {
    const char *path;
    const uint8_t *data;
    size_t size;
    const Elf64_Ehdr *ehdr;
    const Elf64_Phdr *phdrs;
    size_t nphdrs;
} mt_elf_file;

/* 0, or -1 with err ("FILE: reason") when the file cannot be read or is not
 * an x86-64 ELF file with valid program headers. */
int mt_elf_file_open(mt_elf_file *f, const char *path, mt_error *err);
void mt_elf_file_close(mt_elf_file *f);
/* File bytes backing [vaddr, vaddr+len) inside one PT_LOAD's file image, or NULL. */
const uint8_t *mt_elf_file_bytes(const mt_elf_file *f, uint64_t vaddr, uint64_t len);

#endif
