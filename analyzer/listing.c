/* analyzer/listing.c — a procedure's instructions as text: the HTML
 * report's disassembly view of code without source lines (report/).
 *
 * The analysis keeps no instruction (analyzer/disasm.h); the blocks are
 * decoded again from the file, through the same decoder and the same
 * memory-access count the blocks' mem_reads and mem_writes came from, so
 * an instruction's marks add up to its block's. */
#include <stdio.h>
#include <stdlib.h>

#include "disasm.h"
#include "internal.h"

/* One block's instructions appended to *out; -1 with err at bytes that do
 * not decode (the file changed since the analysis). */
static int list_block(const mt_elf_file *img, mt_decoder *dec, const mt_program *prog,
                      const mt_procedure *p, uint32_t b, mt_insn_text **out, size_t *n,
                      size_t *cap, mt_error *err)
{
    const mt_block *bl = &p->blocks[b];
    const uint8_t *code = mt_elf_file_bytes(img, bl->start, bl->end - bl->start);
    for (uint64_t a = bl->start; a < bl->end;) {
        const cs_insn *insn = code ? mt_decode(dec, code + (a - bl->start), bl->end - a, a) : NULL;
        if (!insn) {
            mt_error_set(err, "%s: no instruction decodes at 0x%llx in %s (changed since the "
                         "analysis?)", prog->path, (unsigned long long)a, p->name);
            return -1;
        }
        mt_insn_text t = {.address = a, .block = b};
        mt_count_mem_accesses(insn, &t.reads, &t.writes);
        snprintf(t.text, sizeof t.text, "%s%s%s", insn->mnemonic, insn->op_str[0] ? " " : "",
                 insn->op_str);
        MT_PUSH(*out, *n, *cap, t);
        a += insn->size;
    }
    return 0;
}

int mt_procedure_listing(const mt_program *prog, uint32_t proc, mt_insn_text **out, size_t *n,
                         mt_error *err)
{
    *out = NULL;
    *n = 0;
    mt_elf_file img;
    if (mt_elf_file_open(&img, prog->path, err) != 0)
        return -1;
    mt_decoder dec;
    int rc = -1;
    if (!mt_decoder_open(&dec))
        mt_error_set(err, "%s: the instruction decoder cannot be initialized", prog->path);
    else {
        const mt_procedure *p = &prog->procs[proc];
        size_t cap = 0;
        rc = 0;
        for (uint32_t b = 0; b < p->nblocks && rc == 0; b++)
            rc = list_block(&img, &dec, prog, p, b, out, n, &cap, err);
        mt_decoder_close(&dec);
    }
    mt_elf_file_close(&img);
    if (rc != 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}
