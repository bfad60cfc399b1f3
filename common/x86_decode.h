/* common/x86_decode.h — the project's one x86-64 instruction decoder.
 *
 * Capstone 4 first; where it rejects the bytes (AVX-512 mask-register and
 * byte/word forms, rdpkru: the evex string functions glibc selects on an
 * AVX-512 CPU), Zydis 4 decodes them and fills the same cs_insn, so that
 * cs_regs_access, cs_insn_group and every reader of cs_insn work unchanged
 * (x86_decode.c says what is filled).  The analyzer, the rewriter's
 * relocation, liveness and tracing, and the cost model's classification
 * all decode through here, so they all see the same instruction.
 *
 * In common/ because the analyzer, the rewriter and the cost model all
 * decode, and a module's internal header may not be shared. */
#ifndef MTOOL_X86_DECODE_H
#define MTOOL_X86_DECODE_H

#include <capstone/capstone.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The id of an instruction Zydis decoded whose mnemonic capstone 4 has no
 * id for (vptestmb, vpternlogd, rdpkru...): non-zero, so cs_regs_access and
 * cs_insn_group accept it, and matching no X86_INS_* case, so consumers that
 * switch on ids treat it as an ordinary instruction (its mnemonic is set). */
#define MT_X86_INS_OTHER X86_INS_ENDING

/* Opens a capstone handle with details on (the decoder the calls below
 * take, closed with cs_close); false when capstone or Zydis cannot be
 * initialized. */
bool mt_x86_open(csh *h);

/* cs_disasm_iter's contract: decodes one instruction at *code (at most
 * *size bytes, address *address) into `insn` (from cs_malloc(h)), advances
 * the three on success; false for bytes neither decoder accepts. */
bool mt_x86_decode_iter(csh h, const uint8_t **code, size_t *size, uint64_t *address,
                        cs_insn *insn);

/* cs_disasm's contract: up to `count` instructions (0: all) until the bytes
 * end or one is invalid; *insns is freed with mt_x86_free(*insns, n). */
size_t mt_x86_decode(csh h, const uint8_t *code, size_t size, uint64_t address, size_t count,
                     cs_insn **insns);
void mt_x86_free(cs_insn *insns, size_t n);

#endif
