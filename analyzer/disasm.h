/* analyzer/disasm.h — decoder wrapper (common/x86_decode.h) for the CFG
 * builder (private to analyzer/): decode one instruction, classify its control flow, count its
 * memory accesses, and name register families for jump-table slices.
 *
 * The CFG builder keeps no cs_insn per instruction: it decodes into the one
 * reusable cs_insn of an mt_decoder, extracts the few facts below, and
 * re-decodes later only where a backward slice needs operands. */
#ifndef MTOOL_DISASM_H
#define MTOOL_DISASM_H

#include <capstone/capstone.h>
#include <stdbool.h>
#include <stdint.h>

#include "../common/x86_decode.h"

typedef struct {
    csh cs;
    cs_insn *insn; /* reused for every decode */
} mt_decoder;

/* How an instruction passes control on. */
typedef enum {
    MT_FLOW_NONE,      /* falls through to the next instruction */
    MT_FLOW_COND,      /* jcc, jrcxz, loop*, xbegin: target or next */
    MT_FLOW_JUMP,      /* direct jmp */
    MT_FLOW_JUMP_REG,  /* jmp through a register or non-rip memory: maybe a jump table */
    MT_FLOW_JUMP_SLOT, /* jmp *disp(%rip): through a GOT-like slot (tail call) */
    MT_FLOW_JUMP_FAR,  /* ljmp: target unknowable */
    MT_FLOW_CALL,      /* direct call (not `call .+5`, which is MT_FLOW_NONE) */
    MT_FLOW_ICALL,     /* indirect or far call */
    MT_FLOW_RET,       /* ret, iret, sysret */
    MT_FLOW_STOP,      /* hlt, ud0/ud1/ud2, int3 */
} mt_flow;

typedef struct {
    uint8_t flow;          /* mt_flow */
    uint8_t reads, writes; /* memory accesses per execution, explicit + implicit */
    uint64_t target;       /* direct branch/call target, else 0 */
    uint64_t ref;          /* an address the instruction materializes (lea rip-relative,
                              mov/push immediate) that may be a procedure entry, else 0 */
} mt_insn_facts;

bool mt_decoder_open(mt_decoder *d);
void mt_decoder_close(mt_decoder *d);

/* Decodes the instruction at `addr` from `code` (at most `avail` bytes).
 * Returns the decoder's cs_insn (valid until the next decode) or NULL for
 * invalid bytes. */
const cs_insn *mt_decode(mt_decoder *d, const uint8_t *code, uint64_t avail, uint64_t addr);

void mt_insn_facts_of(const cs_insn *insn, mt_insn_facts *out);

/* Memory accesses of one execution of the instruction (see disasm.c). */
void mt_count_mem_accesses(const cs_insn *insn, uint8_t *reads, uint8_t *writes);

/* How the instruction moves %rsp: bytes it pushes (negative: pops), a
 * call counting 0 (its return pops what it pushed), or MT_RSP_LOST when it
 * sets %rsp some other way (leave, mov, and, a large or variable amount). */
#define MT_RSP_LOST INT16_MIN
int16_t mt_insn_rsp_change(const cs_insn *insn);

/* General-purpose register family (1..16 for rax..r15 in any width), 0 for
 * every other register. */
unsigned mt_reg_family(unsigned reg);
/* True when the instruction writes any register of `family`. */
bool mt_insn_writes_family(const mt_decoder *d, const cs_insn *insn, unsigned family);
/* Caller-saved (clobbered by a call) in the System V ABI. */
bool mt_family_caller_saved(unsigned family);

#define MT_FAMILY_RAX 1
#define MT_FAMILY_RSP 5
#define MT_FAMILY_RBP 6

#endif
