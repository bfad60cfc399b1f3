/* rewriter/relocate.c — copies procedures into new code with a counter
 * probe at the start of every block (liveness.c says what probes may clobber).
 *
 * Every instruction keeps its length except direct branches: a rel8 branch
 * of the original stays rel8 when its target is in the same copy and in
 * reach, otherwise it becomes rel32 (jrcxz/loop: a three-instruction rel32
 * equivalent).  Layout iterates per procedure until every rel8 branch fits
 * (branches only grow), then a second pass writes bytes; loop headers keep
 * their offset modulo 64 with nops before them.  So code without probes or
 * timers keeps the original's size and layout.  Direct branches to a block
 * of any relocated procedure go to its copy (its probe); others go to the
 * original address, which is still valid code.  rip-relative operands keep
 * pointing at the original data.
 *
 * Probes.  `incq %gs:disp32` changes OF, SF, ZF, AF and PF.  A backward
 * liveness pass over the procedure's CFG finds blocks where one of those is
 * live on entry (`cmp; jl; jg` reads flags across a block boundary); their
 * probe saves flags with lahf/seto after stepping over the red zone (never
 * pushf/popf, which are slow).  Everywhere else the probe is the single
 * instruction, which a signal handler cannot split.  A block that loops on
 * itself counts in a dead register instead (self_loop_register).
 *
 * Tasks a copy creates.  A `syscall` whose number its own block sets to
 * SYS_clone, SYS_fork or SYS_clone3 (glibc's clone, clone3 and _Fork's
 * inline system call; any library's or program's own) is followed by
 *     lea -0x80(%rsp),%rsp; push $NR; call mt_timer_after_clone; lea 0x80(%rsp),%rsp
 * which keeps every register and the flags: in the child (%rax 0) the
 * runtime gives the new task its slot, or its profile, before any of its
 * own probes run; in the parent it is a test and a return per task
 * created, nothing per block.  The stack pointer only goes down first: a
 * thread's brand-new stack has nothing below it to lose, a leaf's red
 * zone is stepped over.  Why the system call, not the named entry points
 * (clone, __clone_internal, _Fork): it covers what calls the kernel
 * directly (_Fork, a library's clone3) and every libc version, static
 * programs' included.  SYS_vfork gets nothing: its child shares the
 * parent's memory and stack until exec, and the parent waits, so counting
 * on in the parent's slot is exact and writes nothing of the parent's.
 * A `syscall` whose number its block does not set (glibc's `syscall()`
 * function: `mov %rdi,%rax`) may create a task too: before it
 *     mov %rax,%gs:MT_SLOT_SYSCALL_NR
 * keeps the number in the thread's slot (no register, no flags, the stack
 * untouched), and the hook after it pushes MT_SYSCALL_NR_IN_SLOT instead
 * of a number: the child reads the number there (a forked child has its
 * copy of the slot; a vfork's parent waits); any other system call
 * returning 0 costs the child a few compares. */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../common/progress.h"
#include "internal.h"

#define PROBE_PLAIN_LEN 9
#define PROBE_SAVE_LEN 31
#define LOOP_LOAD_LEN 9  /* mov %gs:disp32,reg */
#define LOOP_LEA_LEN 4   /* lea 1(reg),reg */
#define LOOP_STORE_LEN 9 /* mov reg,%gs:disp32 */
#define TASK_HOOK_LEN (5 + 5 + 5 + 8) /* lea, push imm32, call, lea */
#define TASK_NR_STORE_LEN 9            /* mov %rax,%gs:disp32 */

static const uint8_t probe_save_before[] = {
    0x48, 0x8d, 0x64, 0x24, 0x80, /* lea -0x80(%rsp),%rsp: step over the red zone */
    0x50,                         /* push %rax */
    0x9f,                         /* lahf: SF ZF AF PF CF -> %ah */
    0x0f, 0x90, 0xc0,             /* seto %al */
};
static const uint8_t probe_save_after[] = {
    0x04, 0x7f,                               /* add $0x7f,%al: OF = old OF */
    0x9e,                                     /* sahf */
    0x58,                                     /* pop %rax */
    0x48, 0x8d, 0xa4, 0x24, 0x80, 0, 0, 0,    /* lea 0x80(%rsp),%rsp */
};

static csh handle(const rw_code *c) { return (csh)(uintptr_t)c->cs; }

int rw_code_init(rw_code *c, const mt_program *prog, const mt_elf_file *in, mt_error *err)
{
    memset(c, 0, sizeof *c);
    c->prog = prog;
    c->in = in;
    csh h;
    if (!mt_x86_open(&h)) {
        mt_error_set(err, "capstone: cannot open an x86-64 decoder");
        return -1;
    }
    c->cs = (void *)(uintptr_t)h;
    rw_live_callers_init(&c->live_callers, h, prog, in);
    return 0;
}

void rw_code_free(rw_code *c)
{
    for (size_t i = 0; i < c->nprocs; i++)
        free(c->procs[i].insns);
    free(c->procs);
    free(c->tables);
    free(c->map_old);
    free(c->map_new);
    free(c->counter_addrs);
    free(c->equations);
    free(c->call_site_addrs);
    free(c->trace_refs);
    for (uint32_t i = 0; c->decoded && i < c->prog->nprocs; i++) {
        free(c->decoded[i].insns);
        free(c->decoded[i].block_first);
        free(c->decoded[i].bl);
        free(c->decoded[i].why);
    }
    free(c->decoded);
    rw_timers_free(c);
    rw_live_callers_free(&c->live_callers);
    csh h = handle(c);
    if (h)
        cs_close(&h);
    memset(c, 0, sizeof *c);
}

/* ---- decoding and classification ---------------------------------------- */

static bool is_jcx(unsigned id)
{
    return id == X86_INS_JRCXZ || id == X86_INS_JECXZ || id == X86_INS_JCXZ ||
           id == X86_INS_LOOP || id == X86_INS_LOOPE || id == X86_INS_LOOPNE;
}

static bool has_rip_operand(const cs_x86 *x)
{
    for (int k = 0; k < x->op_count; k++)
        if (x->operands[k].type == X86_OP_MEM && x->operands[k].mem.base == X86_REG_RIP)
            return true;
    return false;
}

static bool uses_gs(const cs_x86 *x)
{
    for (int k = 0; k < x->op_count; k++)
        if (x->operands[k].type == X86_OP_MEM && x->operands[k].mem.segment == X86_REG_GS)
            return true;
    return false;
}

/* Offset of the disp32 of a rip-relative operand.  Capstone 4 leaves
 * encoding.disp_offset at 0 for some SSE/AVX forms, so the field is also
 * found from the encoding rule itself: a ModRM byte with mod=00, rm=101,
 * then the disp32, then at most a 4-byte immediate. */
static int rip_disp_offset(const cs_insn *insn, int64_t disp)
{
    const cs_x86_encoding *e = &insn->detail->x86.encoding;
    uint32_t want = (uint32_t)(int32_t)disp;
    if (e->disp_offset && e->disp_size == 4 && e->disp_offset + 4 <= insn->size &&
        memcmp(insn->bytes + e->disp_offset, &want, 4) == 0)
        return e->disp_offset;
    for (int at = insn->size - 4; at >= 1 && at >= insn->size - 8; at--)
        if ((insn->bytes[at - 1] & 0xc7) == 0x05 && memcmp(insn->bytes + at, &want, 4) == 0)
            return at;
    return -1;
}

/* Offset of a 32-bit field holding `value` (an absolute address in a
 * displacement or an immediate): the last place the bytes match. */
static int abs32_offset(const cs_insn *insn, uint64_t value)
{
    uint32_t want = (uint32_t)value;
    for (int at = insn->size - 4; at >= 1; at--)
        if (memcmp(insn->bytes + at, &want, 4) == 0)
            return at;
    return -1;
}

/* Index of the table among tables[0..ntables) whose address `insn` names
 * (rip-relative, absolute displacement or immediate), or MT_NONE; *abs
 * tells whether the address is absolute. */
static uint32_t table_reference(const rw_table *tables, size_t ntables, const cs_insn *insn,
                                bool *abs)
{
    const cs_x86 *x = &insn->detail->x86;
    for (size_t t = 0; t < ntables; t++) {
        uint64_t T = tables[t].layout.table;
        for (int k = 0; k < x->op_count; k++) {
            const cs_x86_op *op = &x->operands[k];
            if (op->type == X86_OP_MEM && op->mem.base == X86_REG_RIP &&
                insn->address + insn->size + (uint64_t)op->mem.disp == T) {
                *abs = false;
                return (uint32_t)t;
            }
            if ((op->type == X86_OP_MEM && op->mem.base == X86_REG_INVALID &&
                 (uint64_t)op->mem.disp == T) ||
                (op->type == X86_OP_IMM && (uint64_t)op->imm == T)) {
                *abs = true;
                return (uint32_t)t;
            }
        }
    }
    return MT_NONE;
}

static bool wrapped_got_slot(const rw_code *c, uint64_t addr)
{
    for (int w = 0; w < MT_RT_WRAP_COUNT; w++)
        if (c->wrap_got[w] && c->wrap_got[w] == addr)
            return true;
    return false;
}

/* Classifies one decoded instruction (decoder h); false with *why for what
 * we cannot move.  tables[0..ntables) are the procedure's (ri->table
 * indexes them). */
static bool classify(const rw_code *c, csh h, const rw_table *tables, size_t ntables,
                     const cs_insn *insn, rw_insn *ri, char **why)
{
    const cs_x86 *x = &insn->detail->x86;
    unsigned id = insn->id;
    bool direct = x->op_count == 1 && x->operands[0].type == X86_OP_IMM;
    if (uses_gs(x)) {
        *why = mt_xasprintf("uses %%gs at 0x%llx (mtool's counters live there)",
                            (unsigned long long)insn->address);
        return false;
    }
    if (id == X86_INS_XBEGIN) {
        *why = mt_xasprintf("xbegin at 0x%llx", (unsigned long long)insn->address);
        return false;
    }
    ri->kind = RW_COPY;
    if (id == X86_INS_CALL && direct) {
        ri->kind = RW_CALL;
        ri->target = (uint64_t)x->operands[0].imm;
    } else if (id == X86_INS_JMP && direct) {
        ri->kind = RW_JMP;
        ri->target = (uint64_t)x->operands[0].imm;
    } else if (is_jcx(id) && direct) {
        ri->kind = RW_JCX;
        ri->target = (uint64_t)x->operands[0].imm;
    } else if (cs_insn_group(h, insn, X86_GRP_JUMP) && direct) {
        /* jcc: the condition is the low nibble of 7x (rel8) or 0f 8x (rel32). */
        uint8_t op0 = x->opcode[0], op1 = x->opcode[1];
        if ((op0 & 0xf0) == 0x70)
            ri->cc = op0 & 0x0f;
        else if (op0 == 0x0f && (op1 & 0xf0) == 0x80)
            ri->cc = op1 & 0x0f;
        else {
            *why = mt_xasprintf("unknown branch encoding at 0x%llx", (unsigned long long)insn->address);
            return false;
        }
        ri->kind = RW_JCC;
        ri->target = (uint64_t)x->operands[0].imm;
    }
    bool abs = false;
    ri->table = table_reference(tables, ntables, insn, &abs);
    if (ri->table != MT_NONE && abs) {
        int at = abs32_offset(insn, tables[ri->table].layout.table);
        if (at < 0 || ri->kind != RW_COPY) {
            *why = mt_xasprintf("cannot retarget the jump-table address at 0x%llx",
                                (unsigned long long)insn->address);
            return false;
        }
        ri->kind = RW_COPY_ABS32;
        ri->disp_offset = (uint8_t)at;
    } else if (ri->kind == RW_COPY && has_rip_operand(x)) {
        int64_t disp = 0;
        for (int k = 0; k < x->op_count; k++)
            if (x->operands[k].type == X86_OP_MEM && x->operands[k].mem.base == X86_REG_RIP)
                disp = x->operands[k].mem.disp;
        int at = rip_disp_offset(insn, disp);
        if (at < 0) {
            *why = mt_xasprintf("cannot locate the rip-relative displacement at 0x%llx",
                                (unsigned long long)insn->address);
            return false;
        }
        ri->kind = RW_COPY_RIPREL;
        ri->disp_offset = (uint8_t)at;
        ri->target = insn->address + insn->size + (uint64_t)disp;
        /* call/jmp *slot(%rip) of a wrapped import (-fno-plt): a direct
         * call/jmp to the wrapper (branch_target knows the slot). */
        if ((id == X86_INS_CALL || id == X86_INS_JMP) && wrapped_got_slot(c, ri->target))
            ri->kind = id == X86_INS_CALL ? RW_CALL : RW_JMP;
    }
    return true;
}

static size_t emitted_len(const rw_insn *ri)
{
    if (ri->near)
        return ri->len;
    switch (ri->kind) {
    case RW_JMP:
    case RW_CALL:
        return 5;
    case RW_JCC:
        return 6;
    case RW_JCX:
        return (size_t)ri->len - 1 + 1 + 2 + 5; /* prefixes+op, 02, eb 05, e9 rel32 */
    default:
        return ri->len;
    }
}

static size_t probe_len(uint8_t probe)
{
    switch (probe) {
    case RW_PROBE_PLAIN:
        return PROBE_PLAIN_LEN;
    case RW_PROBE_SAVE_FLAGS:
        return PROBE_SAVE_LEN;
    case RW_PROBE_LOOP_REGISTER:
        return LOOP_LOAD_LEN + LOOP_LEA_LEN;
    default:
        return 0;
    }
}

/* The REX prefix of `call *X` / `jmp *X` (right before its ff), or 0. */
static uint8_t branch_rex(const rw_insn *ri)
{
    uint8_t k = ri->modrm_offset;
    return k >= 2 && (ri->bytes[k - 2] & 0xf0) == 0x40 ? ri->bytes[k - 2] : 0;
}

/* Whether the operand X of `call *X` reads %r11, the register the inline
 * record of its target loads it into. */
static bool operand_uses_r11(const rw_insn *ri)
{
    uint8_t rex = branch_rex(ri), modrm = ri->bytes[ri->modrm_offset];
    unsigned mod = modrm >> 6, rm = modrm & 7, b = rex & 1, x = (rex >> 1) & 1;
    if (mod == 3 || rm != 4)
        return !(mod == 0 && rm == 5) && (rm | b << 3) == 11; /* a register, or its base */
    uint8_t sib = ri->bytes[ri->modrm_offset + 1];
    unsigned base = sib & 7, index = (sib >> 3) & 7;
    return (index | x << 3) == 11 || ((base | b << 3) == 11 && !(mod == 0 && base == 5));
}

/* Whether the target's inline record, which loads it into %r11, may run. */
static bool r11_free(const rw_insn *ri)
{
    return !operand_uses_r11(ri) && !rw_maybe_tls_descriptor_call(ri->bytes, ri->len);
}

/* Recording a call target before `call *X` (or `jmp *X`), inline where
 * the target was the site's first (nearly always: most sites have one):
 *     mov X,%r11; cmp %r11,%gs:SITE; jne 1f; incq %gs:SITE+8; jmp 2f
 *  1: push %r11; push $SITE; call mt_timer_record_call_target
 *  2: (the original call)
 * %r11 is dead at a call or a tail jump (the ABI: neither an argument nor
 * kept; not at a TLS descriptor's call), and so are the flags.  An operand
 * that reads %r11 itself, or a call that may be a descriptor's, takes the
 * out-of-line form only: push X; push $SITE; call. */
#define RECORD_INLINE_TAIL 34 /* cmp 9, jne 2, incq 9, jmp 2, push 2, push 5, call 5 */
static size_t call_target_len(const rw_insn *ri)
{
    if (!ri->call_site)
        return 0;
    if (!r11_free(ri))
        return (size_t)ri->len + 10;
    return (size_t)ri->len + (branch_rex(ri) ? 0 : 1) + RECORD_INLINE_TAIL;
}

/* The index check before an instruction that reads a jump-table entry:
 *     cmp $MAX,%index; jbe 1f
 *     incq %gs:FALLBACK; lea BASE(%rip),%base; jmp ORIGINAL
 *  1: (the instruction)
 * MAX is the largest index register value whose entry lies in the clone;
 * %base gets back the original table's address the copy had replaced (no
 * lea when no register holds it).  ORIGINAL is the instruction's original
 * address: from there the original code reads the original table. */
#define CHECK_CMP_LEN 7   /* REX.W 81 /7 imm32 */
#define CHECK_JBE_LEN 2
#define CHECK_INC_LEN 9   /* incq %gs:disp32 */
#define CHECK_LEA_LEN 7   /* lea disp32(%rip),reg */
#define CHECK_JMP_LEN 5
static const mt_jump_table *checked_table(const rw_code *c, const rw_insn *ri)
{
    return ri->table_check ? &c->tables[ri->table_check - 1].layout : NULL;
}

static size_t fallback_len(const mt_jump_table *jt)
{
    return CHECK_INC_LEN + (jt->base_reg ? CHECK_LEA_LEN : 0) + CHECK_JMP_LEN;
}

static size_t check_len(const rw_code *c, const rw_insn *ri)
{
    const mt_jump_table *jt = checked_table(c, ri);
    return jt ? CHECK_CMP_LEN + CHECK_JBE_LEN + fallback_len(jt) : 0;
}

/* The store of an unknown system call's number, before it. */
static size_t task_nr_store_len(const rw_insn *ri)
{
    return ri->task_syscall == MT_SYSCALL_NR_IN_SLOT ? TASK_NR_STORE_LEN : 0;
}

static size_t task_hook_len(const rw_insn *ri)
{
    return ri->task_syscall ? task_nr_store_len(ri) + TASK_HOOK_LEN : 0;
}

/* Bytes emitted after an instruction: the loop counter's store, then the
 * jump to the fall-through successor. */
static size_t after_len(const rw_insn *ri)
{
    return (ri->loop_exit ? LOOP_STORE_LEN : 0) + (ri->fallthrough_jmp ? 5 : 0) +
           (ri->task_syscall_next ? 2 + TASK_HOOK_LEN : 0);
}

/* The original entry gets `jmp rel32` (after its endbr64, which indirect
 * calls must still find).  Those 5 bytes must lie in the procedure's
 * contiguous code, or the alignment padding after it (nops or int3 up to the
 * next procedure: nothing executes them), and hold no other block start:
 * something could still jump there in the original code.  Without room the
 * procedure is not relocated: callers reaching the intact original would
 * leave its counters short, and a short count is worse than none. */
/* End of the nop/int3 padding from `at`, stopping at `limit` or once
 * `enough` is reached. */
static uint64_t padding_end(const rw_code *c, uint64_t at, uint64_t limit, uint64_t enough)
{
    while (at < enough && at < limit) {
        const uint8_t *code = mt_elf_file_bytes(c->in, at, 1);
        size_t avail = 1;
        while (code && avail < 15 && at + avail < limit && mt_elf_file_bytes(c->in, at, avail + 1))
            avail++;
        cs_insn *insn;
        size_t n = code ? mt_x86_decode(handle(c), code, avail, at, 1, &insn) : 0;
        bool pad = n == 1 && (insn[0].id == X86_INS_NOP || insn[0].id == X86_INS_INT3);
        uint64_t next = n == 1 ? at + insn[0].size : at;
        if (n)
            mt_x86_free(insn, n);
        if (!pad)
            break;
        at = next;
    }
    return at;
}

/* The first block of `p` past the run of contiguous blocks from block `b`
 * (p->nblocks when the run ends the procedure). */
static uint32_t block_after_run(const mt_procedure *p, uint32_t b)
{
    while (b + 1 < p->nblocks && p->blocks[b + 1].start == p->blocks[b].end)
        b++;
    return b + 1;
}

/* The end of the run of contiguous blocks of `p` from the one holding `addr`. */
static uint64_t contiguous_end(const mt_procedure *p, uint64_t addr)
{
    uint32_t b = mt_block_at(p, addr);
    return b == MT_NONE ? addr : p->blocks[block_after_run(p, b) - 1].end;
}

static bool overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
    return a < b + blen && b < a + alen;
}

/* Where glibc's __mempcpy jumps 3 bytes into __memmove, under its entry
 * jump: the entry gets `jmp rel8` (2 bytes) to a slot of 5 bytes further
 * on, `jmp COPY` there, and every foreign entry `jmp` to its block's copy,
 * so that no byte of the original runs again and the jumps of procedures
 * left as they are land on whole instructions.  It needs the procedure
 * entered from outside by direct branches only (no landing pad, no address
 * in data), 5 contiguous bytes of its own code at each foreign entry with
 * no other in them, a slot within reach of the rel8, and no jump table (a
 * failed table check goes on in the original).  True with *slot set. */
static bool entry_hop_fits(const mt_procedure *p, uint64_t at, uint64_t *slot)
{
    if (!p->branch_entries_only || p->ntables)
        return false;
    for (uint32_t k = 0; k < p->nforeign_entries; k++) {
        uint64_t f = p->foreign_entries[k];
        if (f < at + 2 || contiguous_end(p, f) < f + 5 ||
            (k + 1 < p->nforeign_entries && p->foreign_entries[k + 1] < f + 5))
            return false;
    }
    uint64_t end = contiguous_end(p, at);
    for (uint64_t s = at + 2; s + 5 <= end && s <= at + 2 + 127; s++) {
        bool free_bytes = true;
        for (uint32_t k = 0; k < p->nforeign_entries && free_bytes; k++)
            free_bytes = !overlaps(s, 5, p->foreign_entries[k], 5);
        if (free_bytes) {
            *slot = s;
            return true;
        }
    }
    return false;
}

static bool entry_patch_fits(const rw_code *c, uint32_t pi, const rw_insn *first,
                             uint64_t *patch_at, uint64_t *entry_slot, char **why)
{
    const mt_procedure *p = &c->prog->procs[pi];
    uint64_t at = p->entry;
    if (first->len == 4 && memcmp(first->bytes, "\xf3\x0f\x1e\xfa", 4) == 0)
        at += 4;
    uint32_t after = block_after_run(p, 0);
    uint64_t covered = p->blocks[after - 1].end;
    if (at + 5 > covered) {
        uint64_t limit = pi + 1 < c->prog->nprocs ? c->prog->procs[pi + 1].entry : covered;
        if (after < p->nblocks && p->blocks[after].start < limit)
            limit = p->blocks[after].start;
        covered = padding_end(c, covered, limit, at + 5);
    }
    if (at + 5 > covered) {
        *why = mt_xasprintf("too small for an entry jump (%llu contiguous bytes)",
                            (unsigned long long)(covered - p->entry));
        return false;
    }
    /* A block starting under the jump (`test %esi,%esi; jne .+3; mov ...`)
     * is harmless when nothing but the procedure's own code enters it: that
     * code runs from the copy once the jump is written, before any code of
     * the program runs.  When other procedures jump in there too, the
     * entry hops (entry_hop_fits). */
    *entry_slot = 0;
    uint32_t under = 1;
    while (under < p->nblocks && !(p->blocks[under].start > at && p->blocks[under].start < at + 5))
        under++;
    if (under < p->nblocks && !p->entry_only && !entry_hop_fits(p, at, entry_slot)) {
        *why = mt_xasprintf("block 0x%llx starts inside the entry jump",
                            (unsigned long long)p->blocks[under].start);
        return false;
    }
    *patch_at = at;
    return true;
}

static bool creates_task(int64_t nr)
{
    return nr == MT_NR_CLONE || nr == MT_NR_FORK || nr == MT_NR_CLONE3;
}

/* The general registers' values known in a block so far (-1: unknown):
 * constants propagated through moves of immediates and of whole registers
 * (`mov $435,%ebx; mov %rbx,%rax`); any other write makes a register
 * unknown, a system call's result included. */
typedef struct {
    int64_t v[16];
} known_regs;

static void forget_regs(known_regs *k)
{
    for (int g = 0; g < 16; g++)
        k->v[g] = -1;
}

/* The known values after an instruction that may change the registers
 * `changed` (rw_live_insn's answer): a whole-register move of a constant or
 * of a known register keeps it known, every other change forgets it. */
static void regs_after(const cs_insn *insn, unsigned changed, known_regs *k)
{
    const cs_x86 *x = &insn->detail->x86;
    bool whole = false, src_whole = false;
    int dst = x->op_count == 2 && x->operands[0].type == X86_OP_REG
                  ? rw_gpr_of(x->operands[0].reg, &whole) : -1;
    if (insn->id == X86_INS_MOV && dst >= 0 && whole) {
        uint64_t width = x->operands[0].size == 4 ? 0xffffffffu : ~(uint64_t)0;
        int src = x->operands[1].type == X86_OP_REG ? rw_gpr_of(x->operands[1].reg, &src_whole) : -1;
        int64_t v = x->operands[1].type == X86_OP_IMM ? (int64_t)((uint64_t)x->operands[1].imm & width)
                    : src >= 0 && src_whole && k->v[src] >= 0 ? (int64_t)((uint64_t)k->v[src] & width)
                                                                : -1;
        k->v[dst] = v;
        return;
    }
    for (int g = 0; g < 16; g++)
        if (changed & RW_LIVE_GPR(g))
            k->v[g] = -1;
}

static bool block_at(const mt_procedure *p, uint64_t addr)
{
    for (uint32_t b = 0; b < p->nblocks; b++)
        if (p->blocks[b].start == addr)
            return true;
    return false;
}

static bool syscall_at(const mt_elf_file *in, uint64_t addr)
{
    const uint8_t *b = mt_elf_file_bytes(in, addr, 2);
    return b && b[0] == 0x0f && b[1] == 0x05;
}

static bool decode_block(const rw_code *c, csh h, const rw_table *tables, size_t ntables,
                         const mt_block *blk, rw_insn **insns, uint32_t *n, size_t *cap,
                         rw_live *bl, rw_live_proc *lp, char **why)
{
    const uint8_t *code = mt_elf_file_bytes(c->in, blk->start, blk->end - blk->start);
    if (!code) {
        *why = mt_xasprintf("block 0x%llx is not in the file", (unsigned long long)blk->start);
        return false;
    }
    cs_insn *insn = cs_malloc(h);
    const uint8_t *p = code;
    size_t left = blk->end - blk->start;
    uint64_t addr = blk->start;
    bool ok = true;
    known_regs known; /* set in this block so far */
    forget_regs(&known);
    while (left > 0) {
        if (!mt_x86_decode_iter(h, &p, &left, &addr, insn)) {
            *why = mt_xasprintf("cannot decode 0x%llx", (unsigned long long)addr);
            ok = false;
            break;
        }
        rw_insn ri = {.old = insn->address, .bytes = code + (insn->address - blk->start),
                      .len = (uint8_t)insn->size, .table = MT_NONE};
        if (!classify(c, h, tables, ntables, insn, &ri, why)) {
            ok = false;
            break;
        }
        if (insn->id == X86_INS_SYSCALL && creates_task(known.v[0]))
            ri.task_syscall = (uint16_t)known.v[0];
        else if (insn->id == X86_INS_SYSCALL && known.v[0] < 0)
            ri.task_syscall = MT_SYSCALL_NR_IN_SLOT;
        regs_after(insn, rw_live_insn(h, c->prog, insn, bl, lp), &known);
        MT_PUSH(*insns, *n, *cap, ri);
    }
    cs_free(insn, 1);
    if (ok && *n && creates_task(known.v[0]) && syscall_at(c->in, blk->end))
        (*insns)[*n - 1].task_syscall_next = (uint16_t)known.v[0]; /* kept if it falls there */
    return ok;
}

/* Decodes and classifies every block of p (decoder h), accumulating each
 * block's liveness; false with *why at the first failure. */
static bool decode_procedure(const rw_code *c, csh h, const mt_procedure *p,
                             const rw_table *tables, size_t ntables, rw_insn **insns,
                             uint32_t *ninsns, uint32_t *block_first, rw_live *bl,
                             rw_live_proc *lp, char **why)
{
    size_t cap = 0;
    bool ok = true;
    for (uint32_t b = 0; b < p->nblocks && ok; b++) {
        block_first[b] = *ninsns;
        ok = decode_block(c, h, tables, ntables, &p->blocks[b], insns, ninsns, &cap, &bl[b], lp,
                          why);
        if (ok && *ninsns == block_first[b]) {
            *why = mt_xasprintf("empty block 0x%llx", (unsigned long long)p->blocks[b].start);
            ok = false;
        }
    }
    return ok;
}

/* ---- decoding in parallel ------------------------------------------------ */

/* Decoding (capstone with details) is most of rewriting: rw_code_predecode
 * decodes the procedures rw_code_add will be asked for on RW_THREADS
 * threads, each with its own decoder, ahead of the sequential part
 * (gdb: 1.5M instructions). */
#define RW_THREADS 2

typedef struct {
    rw_code *c;
    const uint32_t *procs;
    size_t nprocs;
    _Atomic size_t next;
} predecode_job;

static bool collect_tables(const rw_code *c, const mt_procedure *p, rw_table **tables,
                           size_t *ntables, size_t *cap, char **why);

static void predecode_one(const rw_code *c, csh h, uint32_t pi, rw_decoded *d)
{
    const mt_procedure *p = &c->prog->procs[pi];
    rw_table *tables = NULL;
    size_t ntables = 0, cap = 0;
    char *why = NULL;
    if (!collect_tables(c, p, &tables, &ntables, &cap, &why)) {
        free(why); /* rw_code_add finds it again first */
        free(tables);
        return;
    }
    d->block_first = mt_xmalloc((p->nblocks + 1) * sizeof *d->block_first);
    d->bl = mt_xcalloc(p->nblocks + 1, sizeof *d->bl);
    if (!decode_procedure(c, h, p, tables, ntables, &d->insns, &d->ninsns, d->block_first, d->bl,
                          &d->lp, &d->why))
        d->undecodable = true;
    free(tables);
    d->done = true;
}

static void predecode_run(predecode_job *job, csh h)
{
    for (;;) {
        size_t k = atomic_fetch_add(&job->next, 1);
        if (k >= job->nprocs)
            break;
        predecode_one(job->c, h, job->procs[k], &job->c->decoded[job->procs[k]]);
        mt_progress_add(1);
    }
}

static void *predecode_thread(void *arg)
{
    predecode_job *job = arg;
    csh h;
    if (!mt_x86_open(&h))
        return NULL; /* the main thread does it all */
    predecode_run(job, h);
    cs_close(&h);
    return NULL;
}

void rw_code_predecode(rw_code *c, const uint32_t *procs, size_t nprocs)
{
    if (!c->decoded)
        c->decoded = mt_xcalloc(c->prog->nprocs + 1, sizeof *c->decoded);
    predecode_job job = {.c = c, .procs = procs, .nprocs = nprocs};
    mt_progress_stage("instrumenting: decoding procedures", nprocs);
    atomic_init(&job.next, 0);
    pthread_t th[RW_THREADS];
    int started = 0;
    for (int t = 1; t < RW_THREADS && nprocs >= 64; t++)
        if (pthread_create(&th[started], NULL, predecode_thread, &job) == 0)
            started++;
    predecode_run(&job, handle(c));
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    c->live_callers.decoded = c->decoded;
}

static void add_counter(rw_code *c, rw_insn *ri, uint8_t probe)
{
    ri->probe = probe;
    ri->counter = c->ncounters;
    MT_PUSH(c->counter_addrs, c->ncounters, c->cap_counters, ri->old);
    if (probe == RW_PROBE_SAVE_FLAGS)
        c->nprobes_saving_flags++;
}

/* Registers the procedure's jump tables for cloning.  Position-independent
 * tables of 32-bit offsets from the table itself, and (in non-PIE
 * executables, where they need no relocation) tables of absolute addresses
 * can be cloned; a table shared by several jumps is cloned once. */
static bool collect_tables(const rw_code *c, const mt_procedure *p, rw_table **tables,
                           size_t *ntables, size_t *cap, char **why)
{
    size_t first = *ntables;
    for (uint32_t t = 0; t < p->ntables; t++) {
        const mt_jump_table *jt = &p->tables[t];
        bool relative = jt->entry_size == 4 && jt->entry_signed && jt->base == jt->table;
        bool absolute = jt->entry_size == 8 && jt->base == 0 && c->prog->kind == MT_ELF_EXEC;
        if (!relative && !absolute) {
            *why = mt_xasprintf("jump table 0x%llx: %u-byte entries relative to 0x%llx cannot be cloned",
                                (unsigned long long)jt->table, jt->entry_size,
                                (unsigned long long)jt->base);
            *ntables = first;
            return false;
        }
        size_t k = first;
        while (k < *ntables && (*tables)[k].layout.table != jt->table)
            k++;
        if (k == *ntables) {
            rw_table rt = {.layout = *jt};
            MT_PUSH(*tables, *ntables, *cap, rt);
        } else if ((*tables)[k].layout.nentries < jt->nentries) {
            (*tables)[k].layout = *jt; /* jumps that share it may select different ranges */
        }
    }
    return true;
}

static bool add_tables(rw_code *c, const mt_procedure *p, char **why)
{
    return collect_tables(c, p, &c->tables, &c->ntables, &c->cap_tables, why);
}

/* Every cloned table needs an instruction that names it, to point at the clone. */
static bool tables_referenced(const rw_code *c, size_t first, const rw_proc *rp, char **why)
{
    for (size_t t = first; t < c->ntables; t++) {
        bool found = false;
        for (uint32_t k = 0; k < rp->ninsns && !found; k++)
            found = rp->insns[k].table == t;
        if (!found) {
            *why = mt_xasprintf("no instruction names jump table 0x%llx",
                                (unsigned long long)c->tables[t].layout.table);
            return false;
        }
    }
    return true;
}

/* A block that loops on itself (its last instruction a conditional jump
 * back to its start, falling through out of the loop) can count in a
 * register instead of memory: a chain of `incq` on one memory counter
 * costs a store-to-load forwarding per iteration, several times the
 * iteration itself in tight loops.  The register must be one the block
 * does not touch and that is dead where the loop exits; the copy loads the
 * counter into it on entry, adds with `lea` (flags untouched) on every
 * iteration and stores it on exit.  Returns the register, or -1. */
static int self_loop_register(const mt_procedure *p, const rw_live *bl, uint32_t b,
                              const rw_insn *last)
{
    const mt_block *blk = &p->blocks[b];
    if (blk->nsucc != 2 || last->kind != RW_JCC || last->target != blk->start)
        return -1;
    uint32_t exit = MT_NONE;
    for (uint32_t e = blk->first_succ; e < blk->first_succ + blk->nsucc; e++) {
        const mt_edge *edge = &p->edges[e];
        if (edge->kind == MT_EDGE_COND_FALLTHROUGH && edge->dst != MT_NONE && edge->dst != b)
            exit = edge->dst;
        else if (edge->kind != MT_EDGE_COND_TAKEN || edge->dst != b)
            return -1;
    }
    if (exit == MT_NONE)
        return -1;
    return rw_live_free_gpr(bl[b].use | bl[b].def | bl[exit].live_in);
}

static bool lacks_loop_register(const mt_procedure *p, const rw_live *bl, const rw_proc *rp,
                                const uint32_t *block_first)
{
    for (uint32_t b = 0; b < p->nblocks; b++) {
        uint32_t last = (b + 1 < p->nblocks ? block_first[b + 1] : rp->ninsns) - 1;
        const rw_insn *li = &rp->insns[last];
        if (li->kind == RW_JCC && li->target == p->blocks[b].start &&
            self_loop_register(p, bl, b, li) < 0)
            return true;
    }
    return false;
}

uint8_t rw_opcode_offset(const rw_insn *ri)
{
    static const uint8_t prefixes[] = {0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65, 0x66, 0x67, 0xf0, 0xf2, 0xf3};
    uint8_t k = 0;
    while (k < ri->len && (memchr(prefixes, ri->bytes[k], sizeof prefixes) ||
                           (ri->bytes[k] & 0xf0) == 0x40))
        k++;
    return k;
}

/* Offset of the ModRM byte of `call *X` (ff /2) or `jmp *X` (ff /4), after
 * legacy prefixes and REX; 0 for any other encoding. */
static uint8_t indirect_branch_modrm(const rw_insn *ri)
{
    uint8_t k = rw_opcode_offset(ri);
    if (k + 1 >= ri->len || ri->bytes[k] != 0xff)
        return 0;
    unsigned reg = (ri->bytes[k + 1] >> 3) & 7;
    return reg == 2 || reg == 4 ? k + 1 : 0;
}

/* The safety net of every jump table (docs/ARCHITECTURE.md): the copy of
 * the instruction that reads an entry first checks the index against the
 * clone's size and, beyond it, goes on in the original code, which reads
 * the original table.  The check's `cmp` changes the flags: they must be
 * dead there.  Marks the instructions; false with *why when a table's
 * index cannot be checked. */
static bool plan_table_checks(const rw_code *c, const mt_procedure *p, rw_proc *rp, size_t first_table,
                              const uint32_t *block_first, const rw_live *bl, const rw_live_proc *lp,
                              char **why)
{
    for (uint32_t t = 0; t < p->ntables; t++) {
        const mt_jump_table *jt = &p->tables[t];
        uint32_t k = 0, b = 0;
        while (k < rp->ninsns && rp->insns[k].old != jt->load)
            k++;
        while (b + 1 < p->nblocks && block_first[b + 1] <= k)
            b++;
        uint32_t last = (b + 1 < p->nblocks ? block_first[b + 1] : rp->ninsns) - 1;
        if (!jt->index_reg || k == rp->ninsns) {
            *why = mt_xasprintf("jump table 0x%llx: no index register to check before its entry is read",
                                (unsigned long long)jt->table);
            return false;
        }
        if (rp->patch_at && jt->load >= rp->patch_at && jt->load < rp->patch_at + 5) {
            *why = mt_xasprintf("jump table 0x%llx: its entry is read under the entry jump (0x%llx), "
                                "where the check's fallback could not go on",
                                (unsigned long long)jt->table, (unsigned long long)jt->load);
            return false;
        }
        uint32_t n = last - k + 1;
        unsigned *live = mt_xcalloc(n, sizeof *live);
        bool flags_dead = rw_live_before(handle(c), c->prog, p, bl, b, &rp->insns[k], n, lp, live) &&
                          !(live[0] & (RW_LIVE_FLAGS | RW_LIVE_CF));
        free(live);
        if (!flags_dead) {
            *why = mt_xasprintf("jump table 0x%llx: flags live where its index would be checked (0x%llx)",
                                (unsigned long long)jt->table, (unsigned long long)jt->load);
            return false;
        }
        size_t i = first_table;
        while (c->tables[i].layout.table != jt->table)
            i++;
        rp->insns[k].table_check = (uint32_t)i + 1;
    }
    return true;
}

/* A counter per checked load: the times its index was beyond the clone.  Its
 * map entry is the load's address tagged MT_COUNTER_FALLBACK. */
static void add_fallback_counters(rw_code *c, rw_proc *rp)
{
    for (uint32_t k = 0; k < rp->ninsns; k++) {
        if (!rp->insns[k].table_check)
            continue;
        rp->insns[k].fallback_counter = c->ncounters;
        c->ntable_checks++;
        uint64_t tagged = rp->insns[k].old | MT_COUNTER_FALLBACK;
        MT_PUSH(c->counter_addrs, c->ncounters, c->cap_counters, tagged);
    }
}

/* Pass 1 records the targets of the procedure's calls and tail jumps
 * through pointers (the dynamic call graph).  A site in a block that was
 * not decoded as one, or with an unexpected encoding, is not recorded: its
 * callees stay unknown. */
static void add_call_sites(rw_code *c, const mt_procedure *p, rw_proc *rp, const uint32_t *block_first)
{
    for (uint32_t k = 0; k < p->ncalls; k++) {
        const mt_call_site *cs = &p->calls[k];
        if (cs->kind != MT_CALL_INDIRECT || cs->block >= p->nblocks)
            continue;
        uint32_t last = (cs->block + 1 < p->nblocks ? block_first[cs->block + 1] : rp->ninsns) - 1;
        rw_insn *ri = &rp->insns[last];
        uint8_t modrm = ri->old == cs->addr && (ri->kind == RW_COPY || ri->kind == RW_COPY_RIPREL)
                            ? indirect_branch_modrm(ri) : 0;
        /* One record an instruction: a refined analysis (mt_add_dynamic_calls)
         * lists a site once per target it reached, which mt_rewrite_bounds
         * does not count (it bounds the copies made before refining). */
        if (!modrm || ri->call_site)
            continue;
        ri->modrm_offset = modrm;
        MT_PUSH(c->call_site_addrs, c->ncall_sites, c->cap_call_sites, cs->addr);
        ri->call_site = c->ncall_sites;
    }
}

bool rw_code_add(rw_code *c, uint32_t pi, char **why)
{
    const mt_procedure *p = &c->prog->procs[pi];
    rw_proc rp = {.proc = pi};
    size_t first_table = c->ntables;
    if (!add_tables(c, p, why))
        return false;
    uint32_t *block_first;
    rw_live *bl = mt_xcalloc(p->nblocks, sizeof *bl);
    rw_live_proc lp = {.kept_by_callers = RW_LIVE_GPRS};
    bool ok = true;
    rw_decoded *d = c->decoded && c->decoded[pi].done ? &c->decoded[pi] : NULL;
    if (d) { /* decoded by rw_code_predecode: its tables are ours, in order */
        rp.insns = d->insns;
        rp.ninsns = d->ninsns;
        block_first = d->block_first;
        d->insns = NULL;
        d->block_first = NULL;
        memcpy(bl, d->bl, p->nblocks * sizeof *bl);
        lp.written = d->lp.written;
        lp.calls_outside = d->lp.calls_outside;
        if (d->why) {
            *why = d->why;
            d->why = NULL;
            ok = false;
        }
    } else {
        block_first = mt_xmalloc(p->nblocks * sizeof *block_first);
        ok = decode_procedure(c, handle(c), p, &c->tables[first_table], c->ntables - first_table,
                              &rp.insns, &rp.ninsns, block_first, bl, &lp, why);
    }
    for (uint32_t k = 0; k < rp.ninsns; k++) /* the procedure's tables -> all tables */
        if (rp.insns[k].table != MT_NONE)
            rp.insns[k].table += (uint32_t)first_table;
    ok = ok && entry_patch_fits(c, pi, &rp.insns[0], &rp.patch_at, &rp.entry_slot, why);
    ok = ok && tables_referenced(c, first_table, &rp, why);
    if (!ok) {
        c->ntables = first_table;
        free(rp.insns);
        free(block_first);
        free(bl);
        return false;
    }
    rw_live_solve(p, bl, &lp);
    if (c->loop_registers && !lp.calls_outside &&
        lacks_loop_register(p, bl, &rp, block_first)) {
        /* A leaf: its callers may rely on the registers it never writes
         * (-fipa-ra), unless none does. */
        lp.kept_by_callers = rw_live_across_calls(&c->live_callers, pi, 0);
        rw_live_solve(p, bl, &lp);
    }
    if (!plan_table_checks(c, p, &rp, first_table, block_first, bl, &lp, why) ||
        !rw_timers_plan(c, pi, &rp, bl, block_first, why)) {
        c->ntables = first_table;
        free(rp.insns);
        free(block_first);
        free(bl);
        return false;
    }
    bool *derived = mt_xcalloc((size_t)p->nblocks + 1, sizeof *derived);
    rw_flow_plan plan = {0};
    if (c->derive_counts && !c->timers_only)
        rw_flow_plan_proc(p, rp.insns, block_first, rp.ninsns, derived, &plan);
    for (uint32_t b = 0; b < p->nblocks; b++) {
        rw_insn *first = &rp.insns[block_first[b]];
        uint32_t last = (b + 1 < p->nblocks ? block_first[b + 1] : rp.ninsns) - 1;
        rw_insn *li = &rp.insns[last];
        int reg = c->loop_registers && !c->timers_only ? self_loop_register(p, bl, b, li) : -1;
        if (c->timers_only || derived[b]) {
            add_counter(c, first, RW_PROBE_MARK); /* its counter stays 0 (derived: the map
                                                     says from which others) */
        } else if (reg >= 0) {
            add_counter(c, first, RW_PROBE_LOOP_REGISTER);
            first->loop_reg = li->loop_reg = (uint8_t)reg;
            li->counter = first->counter;
            li->loop_exit = true;
            c->nloop_registers++;
        } else {
            add_counter(c, first,
                        (bl[b].live_in & RW_LIVE_FLAGS) ? RW_PROBE_SAVE_FLAGS : RW_PROBE_PLAIN);
        }
        /* The copy of a block that falls through must be followed by its
         * successor's copy, or jump there. */
        bool next_follows = b + 1 < p->nblocks && p->blocks[b + 1].start == li->old + li->len;
        bool can_fall = p->blocks[b].term != MT_TERM_JUMP && p->blocks[b].term != MT_TERM_RET &&
                        p->blocks[b].term != MT_TERM_TABLE_JUMP &&
                        p->blocks[b].term != MT_TERM_INDIRECT_JUMP &&
                        p->blocks[b].term != MT_TERM_TAIL_CALL;
        li->fallthrough_jmp = can_fall && !next_follows;
        if (li->task_syscall_next && (!li->fallthrough_jmp || block_at(p, li->old + li->len)))
            li->task_syscall_next = 0;
    }
    rw_flow_plan_commit(c, &plan, rp.insns, block_first);
    free(plan.words);
    free(derived);
    for (uint32_t l = 0; l < p->nloops; l++)
        if (p->loops[l].header != 0)
            rp.insns[block_first[p->loops[l].header]].loop_header = true;
    if (!c->timers_only && (!c->library || (c->slot_ncounters && !c->ntimed)))
        add_call_sites(c, p, &rp, block_first); /* a library's lie past the slot's counters */
    if (c->trace)
        rw_trace_plan(c, rp.insns, rp.ninsns, pi, block_first, bl, &lp);
    add_fallback_counters(c, &rp);
    free(block_first);
    free(bl);
    MT_PUSH(c->procs, c->nprocs, c->cap_procs, rp);
    return true;
}

/* ---- layout ------------------------------------------------------------- */

/* Builds the sorted old -> new map of block starts (probe addresses). */
static void build_map(rw_code *c)
{
    size_t n = 0;
    for (size_t i = 0; i < c->nprocs; i++)
        for (uint32_t k = 0; k < c->procs[i].ninsns; k++)
            n += c->procs[i].insns[k].probe != RW_PROBE_NONE;
    uint64_t *pairs = mt_xmalloc(2 * n * sizeof *pairs + 1);
    size_t m = 0;
    for (size_t i = 0; i < c->nprocs; i++)
        for (uint32_t k = 0; k < c->procs[i].ninsns; k++)
            if (c->procs[i].insns[k].probe != RW_PROBE_NONE) {
                pairs[2 * m] = c->procs[i].insns[k].old;
                pairs[2 * m + 1] = c->procs[i].insns[k].new_addr;
                m++;
            }
    qsort(pairs, m, 2 * sizeof *pairs, mt_compare_u64);
    free(c->map_old);
    free(c->map_new);
    c->map_old = mt_xmalloc(m * sizeof *c->map_old + 1);
    c->map_new = mt_xmalloc(m * sizeof *c->map_new + 1);
    for (size_t k = 0; k < m; k++) {
        c->map_old[k] = pairs[2 * k];
        c->map_new[k] = pairs[2 * k + 1];
    }
    c->nmap = m;
    free(pairs);
}

/* A branch the original encodes in its rel8 form (jmp, jcc, jrcxz/loop). */
static bool rel8_in_original(const rw_insn *ri)
{
    return (ri->kind == RW_JMP && ri->len == 2 && ri->bytes[0] == 0xeb) ||
           (ri->kind == RW_JCC && ri->len == 2 && (ri->bytes[0] & 0xf0) == 0x70) ||
           ri->kind == RW_JCX;
}

/* Lays out copy `rp` from `at` with its branches' current forms; returns
 * the end of its trampolines. */
static uint64_t layout_proc(rw_code *c, rw_proc *rp, uint64_t at)
{
    rp->new_start = at;
    for (uint32_t k = 0; k < rp->ninsns; k++) {
        rw_insn *ri = &rp->insns[k];
        /* A loop keeps its header where the compiler put it in its fetch
         * window (a small loop moved across a 32-byte boundary runs up to a
         * cycle per iteration slower): the nops run once per entry.  What
         * keeps the header's offset is where the back edge lands: for a
         * self-loop counting in a register, past the counter's load (matmul's
         * inner loop, a 9-byte shift across a 32-byte boundary: 1.32x -> 1.07x
         * on an Emerald Rapids core; sieve 1.16x -> 0.98x). */
        uint64_t top = at + (ri->probe == RW_PROBE_LOOP_REGISTER ? LOOP_LOAD_LEN : 0);
        ri->pad = ri->loop_header ? (uint8_t)((ri->old - top) & 63) : 0;
        at += ri->pad;
        ri->new_addr = at;
        at += probe_len(ri->probe) + call_target_len(ri) + check_len(c, ri) + rw_trace_len(ri) +
              emitted_len(ri) + task_hook_len(ri) + after_len(ri) + rw_timers_insn_len(c, ri);
    }
    rp->new_end = at;
    return rw_timers_assign(c, rp, at);
}

/* Where the branch `ri` of copy `rp` lands when that is in the copy (a
 * block of it or one of its trampolines), else 0. */
static uint64_t local_target(const rw_code *c, const rw_proc *rp, const rw_insn *ri)
{
    if (ri->tramp)
        return c->tramps[ri->tramp - 1].new_addr;
    for (int w = 0; w < MT_RT_WRAP_COUNT; w++)
        if (c->wrap_real[w] == ri->target)
            return 0; /* retargeted at a runtime wrapper */
    size_t lo = mt_lower_bound_u64(rp->insns, rp->ninsns, sizeof *rp->insns,
                                   offsetof(__typeof__(*rp->insns), old), ri->target);
    if (lo == rp->ninsns || rp->insns[lo].old != ri->target || rp->insns[lo].probe == RW_PROBE_NONE)
        return 0;
    return rp->insns[lo].new_addr + ri->target_skip + (ri->loop_exit ? LOOP_LOAD_LEN : 0);
}

/* Where the instruction itself starts in the copy, after the code before it. */
static uint64_t insn_start(const rw_code *c, const rw_insn *ri)
{
    uint64_t at = ri->new_addr + probe_len(ri->probe) + call_target_len(ri) + check_len(c, ri) +
                  rw_trace_len(ri) + task_nr_store_len(ri);
    if (c->nsnips)
        at += c->snips[ri->pre].len + c->snips[ri->before].len;
    return at;
}

/* Lays out copy `rp` keeping the original's rel8 branches rel8 wherever
 * their target stays in the copy and in reach, so that code without timers
 * keeps the original's size and layout.  Branches only ever grow, so the
 * iteration ends, on a layout every rel8 branch was checked against. */
static uint64_t assign_proc(rw_code *c, rw_proc *rp, uint64_t start)
{
    for (uint32_t k = 0; k < rp->ninsns; k++)
        rp->insns[k].near = rel8_in_original(&rp->insns[k]);
    for (;;) {
        uint64_t end = layout_proc(c, rp, start);
        bool grown = false;
        for (uint32_t k = 0; k < rp->ninsns; k++) {
            rw_insn *ri = &rp->insns[k];
            if (!ri->near)
                continue;
            uint64_t to = local_target(c, rp, ri);
            int64_t d = (int64_t)(to - (insn_start(c, ri) + ri->len));
            if (!to || d < INT8_MIN || d > INT8_MAX) {
                ri->near = false;
                grown = true;
            }
        }
        if (!grown)
            return end;
    }
}

uint64_t rw_code_assign(rw_code *c, uint64_t vaddr)
{
    uint64_t at = vaddr;
    for (size_t i = 0; i < c->nprocs; i++) {
        rw_proc *rp = &c->procs[i];
        const mt_procedure *p = &c->prog->procs[rp->proc];
        /* Same offset modulo 64 as the original: loops keep their alignment. */
        at += (p->entry - at) & 63;
        at = assign_proc(c, rp, at);
    }
    for (size_t t = 0; t < c->ntables; t++) {
        at = (at + 7) & ~(uint64_t)7;
        c->tables[t].new_addr = at;
        at += (uint64_t)c->tables[t].layout.nentries * c->tables[t].layout.entry_size;
    }
    build_map(c);
    return at;
}

/* ---- emission ------------------------------------------------------------ */

/* Where a branch to original address `old` goes: the copy of a block when
 * there is one, a runtime wrapper for wrapped callees, else `old` itself. */
static uint64_t branch_target(const rw_code *c, uint64_t old, bool *wrapped)
{
    *wrapped = false;
    for (int w = 0; w < MT_RT_WRAP_COUNT; w++)
        if (c->wrap_new[w] && (c->wrap_real[w] == old || c->wrap_got[w] == old)) {
            *wrapped = true;
            return c->wrap_new[w];
        }
    size_t lo = mt_lower_bound_u64(c->map_old, c->nmap, sizeof *c->map_old, 0, old);
    return lo < c->nmap && c->map_old[lo] == old ? c->map_new[lo] : old;
}

/* The copy of the block at original address `old` (for trampolines). */
static uint64_t block_copy(const rw_code *c, uint64_t old)
{
    bool wrapped;
    return branch_target(c, old, &wrapped);
}

static bool rel32(uint64_t target, uint64_t next, uint32_t *out)
{
    int64_t d = (int64_t)(target - next);
    if (d < INT32_MIN || d > INT32_MAX)
        return false;
    *out = (uint32_t)(int32_t)d;
    return true;
}

static uint32_t counter_disp(const rw_insn *ri)
{
    return MT_SLOT_COUNTERS_OFFSET + 8u * ri->counter;
}

/* mov %gs:disp32,reg (opcode 8b) or mov reg,%gs:disp32 (89): 9 bytes. */
static void emit_gs_mov(rw_buf *out, uint8_t opcode, unsigned reg, uint32_t disp)
{
    const uint8_t code[] = {0x65, (uint8_t)(0x48 | (reg >= 8 ? 0x04 : 0)), opcode,
                            (uint8_t)(0x04 | (reg & 7) << 3), 0x25};
    rw_buf_put(out, code, sizeof code);
    rw_buf_u32(out, disp);
}

static void emit_probe(rw_buf *out, const rw_insn *ri)
{
    uint32_t disp = counter_disp(ri);
    static const uint8_t inc_gs[] = {0x65, 0x48, 0xff, 0x04, 0x25}; /* incq %gs:disp32 */
    if (ri->probe == RW_PROBE_LOOP_REGISTER) {
        unsigned r = ri->loop_reg;
        emit_gs_mov(out, 0x8b, r, disp);
        /* lea 1(reg),reg: rsp and r12 are never chosen (they need a SIB). */
        const uint8_t lea[] = {(uint8_t)(0x48 | (r >= 8 ? 0x05 : 0)), 0x8d,
                               (uint8_t)(0x40 | (r & 7) << 3 | (r & 7)), 0x01};
        rw_buf_put(out, lea, sizeof lea);
        return;
    }
    if (ri->probe == RW_PROBE_MARK)
        return;
    if (ri->probe == RW_PROBE_SAVE_FLAGS)
        rw_buf_put(out, probe_save_before, sizeof probe_save_before);
    rw_buf_put(out, inc_gs, sizeof inc_gs);
    rw_buf_u32(out, disp);
    if (ri->probe == RW_PROBE_SAVE_FLAGS)
        rw_buf_put(out, probe_save_after, sizeof probe_save_after);
}

static bool emit_table_check(const rw_code *c, rw_buf *out, const rw_insn *ri, uint64_t at, mt_error *err)
{
    const mt_jump_table *jt = checked_table(c, ri);
    unsigned index = jt->index_reg - 1u, base = jt->base_reg - 1u; /* encodings */
    uint64_t max = (uint64_t)jt->entry_size * (jt->nentries - 1) / jt->index_scale;
    const uint8_t cmp[] = {(uint8_t)(0x48 | (index >= 8 ? 0x01 : 0)), 0x81, (uint8_t)(0xf8 | (index & 7))};
    rw_buf_put(out, cmp, sizeof cmp);
    rw_buf_u32(out, (uint32_t)max);
    const uint8_t jbe[] = {0x76, (uint8_t)fallback_len(jt)};
    rw_buf_put(out, jbe, sizeof jbe);
    static const uint8_t inc_gs[] = {0x65, 0x48, 0xff, 0x04, 0x25}; /* incq %gs:disp32 */
    rw_buf_put(out, inc_gs, sizeof inc_gs);
    rw_buf_u32(out, MT_SLOT_COUNTERS_OFFSET + 8u * ri->fallback_counter);
    at += CHECK_CMP_LEN + CHECK_JBE_LEN + CHECK_INC_LEN;
    uint32_t r = 0;
    bool ok = true;
    if (jt->base_reg) {
        const uint8_t lea[] = {(uint8_t)(0x48 | (base >= 8 ? 0x04 : 0)), 0x8d, (uint8_t)(0x05 | (base & 7) << 3)};
        rw_buf_put(out, lea, sizeof lea);
        at += CHECK_LEA_LEN;
        ok = rel32(jt->base_value, at, &r);
        rw_buf_u32(out, r);
    }
    rw_buf_u8(out, 0xe9);
    ok = ok && rel32(ri->old, at + CHECK_JMP_LEN, &r);
    rw_buf_u32(out, r);
    if (!ok)
        mt_error_set(err, "%s: the index check of 0x%llx is out of rel32 range", c->in->path,
                     (unsigned long long)ri->old);
    return ok;
}

/* The branch's operand X made `push X` (ModRM's reg field 6) or, with
 * `to_r11`, `mov X,%r11` (REX.W and REX.R set, opcode 8b, reg field 3);
 * prefixes, SIB and displacement carried, a rip-relative one recomputed for
 * its new place (an operand based on %rsp is addressed before any push).
 * Returns its length, 0 when a displacement does not fit. */
static size_t emit_operand_copy(rw_buf *out, const rw_insn *ri, uint64_t at, bool to_r11)
{
    size_t pos = out->len, k = ri->modrm_offset, added = 0;
    uint8_t rex = branch_rex(ri), modrm = ri->bytes[k];
    if (to_r11) {
        rw_buf_put(out, ri->bytes, rex ? k - 2 : k - 1); /* legacy prefixes */
        rw_buf_u8(out, (uint8_t)(0x4c | (rex & 3)));
        rw_buf_u8(out, 0x8b);
        rw_buf_u8(out, (uint8_t)((modrm & 0xc7) | 3u << 3));
        rw_buf_put(out, ri->bytes + k + 1, ri->len - k - 1u);
        added = rex ? 0 : 1;
    } else {
        rw_buf_put(out, ri->bytes, ri->len);
        out->data[pos + k] = (uint8_t)((modrm & 0xc7) | 6u << 3);
    }
    size_t len = ri->len + added;
    uint32_t r = 0;
    if (ri->kind == RW_COPY_RIPREL) {
        if (!rel32(ri->target, at + len, &r))
            return 0;
        rw_buf_patch_u32(out, pos + ri->disp_offset + added, r);
    }
    return len;
}

/* gs-relative disp32 operand forms: ModRM (mod 00, rm 100), SIB 0x25. */
static void emit_gs_abs(rw_buf *out, uint8_t rex, uint8_t opcode, uint8_t reg, uint32_t disp)
{
    const uint8_t code[] = {0x65, rex, opcode, (uint8_t)(0x04 | reg << 3), 0x25};
    rw_buf_put(out, code, sizeof code);
    rw_buf_u32(out, disp);
}

/* The record of a call target (call_target_len says which form). */
static bool emit_call_target(const rw_code *c, rw_buf *out, const rw_insn *ri, uint64_t at,
                             mt_error *err)
{
    /* A library's records follow the executable's counters in a slot
     * without timers; the executable's own slot is sized by its params. */
    uint64_t records = c->library ? MT_SLOT_CALL_SITES_OFFSET(c->slot_ncounters, 0)
                                  : MT_SLOT_CALL_SITES_OFFSET(c->ncounters, c->timer_base + c->ntimed);
    uint32_t site = (uint32_t)(records + (uint64_t)(ri->call_site - 1) * MT_CALL_SITE_SIZE);
    bool inline_first = r11_free(ri);
    size_t start = out->len, n = emit_operand_copy(out, ri, at, inline_first);
    bool ok = n > 0;
    if (inline_first) {
        emit_gs_abs(out, 0x4c, 0x39, 3, site); /* cmp %r11,%gs:site */
        rw_buf_u8(out, 0x75);                  /* jne 1f */
        rw_buf_u8(out, 9 + 2);
        emit_gs_abs(out, 0x48, 0xff, 0, site + 8); /* incq %gs:site+8 */
        rw_buf_u8(out, 0xeb);                      /* jmp 2f */
        rw_buf_u8(out, 2 + 5 + 5);
        rw_buf_u8(out, 0x41); /* 1: push %r11 */
        rw_buf_u8(out, 0x53);
    }
    rw_buf_u8(out, 0x68); /* push imm32: slot offsets lie below 2 GiB */
    rw_buf_u32(out, site);
    uint32_t r = 0;
    uint64_t next = at + (out->len - start) + 5;
    rw_buf_u8(out, 0xe8);
    ok = ok && rel32(c->timer_entry[MT_RT_TIMER_RECORD_CALL_TARGET], next, &r);
    rw_buf_u32(out, r);
    if (!ok)
        mt_error_set(err, "%s: the call-target record of 0x%llx is out of rel32 range",
                     c->in->path, (unsigned long long)ri->old);
    return ok;
}

/* The child's hook after a system call that creates a task (the file's
 * comment, "Tasks a copy creates"); `at` is its address. */
static bool emit_task_hook(rw_code *c, rw_buf *out, const rw_insn *ri, uint64_t at,
                           mt_error *err)
{
    static const uint8_t below_red_zone[] = {0x48, 0x8d, 0x64, 0x24, 0x80};
    static const uint8_t back_up[] = {0x48, 0x8d, 0xa4, 0x24, 0x80, 0, 0, 0};
    rw_buf_put(out, below_red_zone, sizeof below_red_zone);
    rw_buf_u8(out, 0x68); /* push imm32: the system call's number, popped by ret $8 */
    rw_buf_u32(out, ri->task_syscall);
    uint32_t r = 0;
    bool ok = rel32(c->timer_entry[MT_RT_TIMER_AFTER_CLONE], at + 5 + 5 + 5, &r);
    rw_buf_u8(out, 0xe8);
    rw_buf_u32(out, r);
    rw_buf_put(out, back_up, sizeof back_up);
    c->ntask_hooks++;
    if (!ok)
        mt_error_set(err, "%s: the task hook after 0x%llx is out of rel32 range", c->in->path,
                     (unsigned long long)ri->old);
    return ok;
}

/* Emits one instruction (its probe already written); `at` is its address. */
static bool emit_insn(rw_code *c, rw_buf *out, const rw_insn *ri, uint64_t at, mt_error *err)
{
    uint32_t r = 0;
    bool wrapped = false, ok = true;
    uint64_t target = ri->table != MT_NONE                                ? c->tables[ri->table].new_addr
                      : ri->kind == RW_COPY || ri->kind == RW_COPY_RIPREL ? ri->target
                      : ri->tramp                                         ? c->tramps[ri->tramp - 1].new_addr
                                                                          : branch_target(c, ri->target, &wrapped) + ri->target_skip;
    if (ri->loop_exit)
        target += LOOP_LOAD_LEN; /* the back edge: the counter is already in its register */
    size_t len = emitted_len(ri);
    if (ri->near) { /* the original's rel8 form (rw_code_assign checked its reach) */
        rw_buf_put(out, ri->bytes, ri->len - 1u);
        rw_buf_u8(out, (uint8_t)(int8_t)(int64_t)(target - (at + ri->len)));
        return true;
    }
    switch (ri->kind) {
    case RW_COPY:
        rw_buf_put(out, ri->bytes, ri->len);
        break;
    case RW_COPY_RIPREL: {
        size_t pos = out->len;
        rw_buf_put(out, ri->bytes, ri->len);
        ok = rel32(target, at + ri->len, &r);
        rw_buf_patch_u32(out, pos + ri->disp_offset, r);
        break;
    }
    case RW_COPY_ABS32: {
        size_t pos = out->len;
        rw_buf_put(out, ri->bytes, ri->len);
        ok = target <= INT32_MAX;
        rw_buf_patch_u32(out, pos + ri->disp_offset, (uint32_t)target);
        break;
    }
    case RW_JMP:
    case RW_CALL:
        rw_buf_u8(out, ri->kind == RW_JMP ? 0xe9 : 0xe8);
        ok = rel32(target, at + 5, &r);
        rw_buf_u32(out, r);
        c->nwrapped_calls += wrapped;
        break;
    case RW_JCC:
        rw_buf_u8(out, 0x0f);
        rw_buf_u8(out, (uint8_t)(0x80 | ri->cc));
        ok = rel32(target, at + 6, &r);
        rw_buf_u32(out, r);
        break;
    case RW_JCX: /* jrcxz 1f; jmp 2f; 1: jmp target; 2: */
        rw_buf_put(out, ri->bytes, ri->len - 1u);
        rw_buf_u8(out, 0x02);
        rw_buf_u8(out, 0xeb);
        rw_buf_u8(out, 0x05);
        rw_buf_u8(out, 0xe9);
        ok = rel32(target, at + len, &r);
        rw_buf_u32(out, r);
        break;
    }
    if (!ok)
        mt_error_set(err, "%s: target 0x%llx of the instruction at 0x%llx is out of rel32 range",
                     c->in->path, (unsigned long long)target, (unsigned long long)ri->old);
    return ok;
}

/* `n` bytes of nops, in the fewest instructions (the recommended long
 * forms, up to 11 bytes each). */
static void emit_nops(rw_buf *out, size_t n)
{
    static const uint8_t nops[11][11] = {
        {0x90},
        {0x66, 0x90},
        {0x0f, 0x1f, 0x00},
        {0x0f, 0x1f, 0x40, 0x00},
        {0x0f, 0x1f, 0x44, 0x00, 0x00},
        {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00},
        {0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00},
        {0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
        {0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
        {0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
        {0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
    };
    while (n > 0) {
        size_t k = n < 11 ? n : 11;
        rw_buf_put(out, nops[k - 1], k);
        n -= k;
    }
}

/* PROT_* of the loaded segment holding `vaddr` (the runtime restores it
 * after writing an entry jump). */
static uint8_t segment_prot(const mt_elf_file *in, uint64_t vaddr)
{
    const Elf64_Phdr *ph = mt_elf_file_load_at(in, vaddr, 0);
    return ph ? (uint8_t)rw_segment_prot(ph) : 5; /* PROT_READ | PROT_EXEC: entries are code */
}

/* `jmp to` written at `at` of the original, as a record for the runtime (timer.h). */
static bool add_jump_patch(const rw_code *c, uint64_t at, uint64_t to, rw_buf *patches,
                           mt_error *err)
{
    uint32_t r = 0;
    if (to == at) {
        mt_error_set(err, "%s: no copy of the block at 0x%llx", c->in->path, (unsigned long long)at);
        return false;
    }
    if (!rel32(to, at + 5, &r)) {
        mt_error_set(err, "%s: entry 0x%llx out of rel32 range of its copy", c->in->path,
                     (unsigned long long)at);
        return false;
    }
    mt_rt_patch p = {.vaddr = at, .len = 5, .prot = segment_prot(c->in, at)};
    p.bytes[0] = 0xe9;
    memcpy(p.bytes + 1, &r, 4);
    rw_buf_put(patches, &p, sizeof p);
    return true;
}

/* The entry jump of one copy; with an entry slot, the hop to it and the
 * jumps of the foreign entries too (entry_hop_fits). */
static bool add_entry_patch(const rw_code *c, const rw_proc *rp, rw_buf *patches, mt_error *err)
{
    if (!rp->patch_at)
        return true;
    if (!rp->entry_slot)
        return add_jump_patch(c, rp->patch_at, rp->insns[0].new_addr, patches, err);
    mt_rt_patch hop = {.vaddr = rp->patch_at, .len = 2, .prot = segment_prot(c->in, rp->patch_at)};
    hop.bytes[0] = 0xeb;
    hop.bytes[1] = (uint8_t)(rp->entry_slot - (rp->patch_at + 2));
    rw_buf_put(patches, &hop, sizeof hop);
    if (!add_jump_patch(c, rp->entry_slot, rp->insns[0].new_addr, patches, err))
        return false;
    const mt_procedure *p = &c->prog->procs[rp->proc];
    for (uint32_t k = 0; k < p->nforeign_entries; k++)
        if (!add_jump_patch(c, p->foreign_entries[k], block_copy(c, p->foreign_entries[k]),
                            patches, err))
            return false;
    return true;
}

/* The clone's entries lead to the copies of the original targets. */
static bool emit_table(const rw_code *c, const rw_table *t, uint64_t vaddr, rw_buf *out,
                       mt_error *err)
{
    const mt_jump_table *jt = &t->layout;
    const uint8_t *orig =
        mt_elf_file_bytes(c->in, jt->table, (uint64_t)jt->nentries * jt->entry_size);
    if (!orig) {
        mt_error_set(err, "%s: jump table 0x%llx is not in the file", c->in->path,
                     (unsigned long long)jt->table);
        return false;
    }
    while (vaddr + out->len < t->new_addr)
        rw_buf_u8(out, 0);
    for (uint32_t k = 0; k < jt->nentries; k++) {
        bool wrapped;
        if (jt->entry_size == 8) {
            uint64_t old;
            memcpy(&old, orig + 8 * k, 8);
            uint64_t tramp = rw_timers_table_tramp(c, jt->table, old);
            rw_buf_u64(out, tramp ? tramp : branch_target(c, old, &wrapped));
            continue;
        }
        int32_t off;
        memcpy(&off, orig + 4 * k, 4);
        uint32_t r;
        uint64_t old = jt->table + (uint64_t)(int64_t)off;
        uint64_t tramp = rw_timers_table_tramp(c, jt->table, old);
        if (!rel32(tramp ? tramp : branch_target(c, old, &wrapped), t->new_addr, &r)) {
            mt_error_set(err, "%s: jump table 0x%llx: clone out of range", c->in->path,
                         (unsigned long long)jt->table);
            return false;
        }
        rw_buf_u32(out, r);
    }
    return true;
}

/* A linear sweep of a procedure that was not relocated: its unresolved
 * parts are unknown to the CFG, but compilers put no data in .text, so
 * decoding its bytes in order finds every instruction.  Trusted only if
 * every block the analyzer found starts at an instruction of the sweep. */
static cs_insn *sweep_procedure(const rw_code *c, const mt_procedure *p, size_t *n)
{
    const uint8_t *code = p->size ? mt_elf_file_bytes(c->in, p->entry, p->size) : NULL;
    *n = 0;
    if (!code)
        return NULL;
    cs_insn *insns;
    *n = mt_x86_decode(handle(c), code, p->size, p->entry, 0, &insns);
    size_t k = 0;
    for (uint32_t b = 0; b < p->nblocks && *n; b++) {
        uint64_t start = p->blocks[b].start;
        while (k < *n && insns[k].address < start)
            k++;
        if (start < p->entry + p->size && (k == *n || insns[k].address != start)) {
            mt_x86_free(insns, *n);
            *n = 0;
        }
    }
    return *n ? insns : NULL;
}

/* Calls and tail calls to a wrapped callee from procedures that were not
 * relocated still create threads and processes: they are retargeted at the
 * wrapper in place (same length; through the GOT: a direct call and a nop),
 * by the runtime at start-up like the entry jumps. */
static void add_wrapper_call_patches(const rw_code *c, rw_buf *patches)
{
    bool *relocated = mt_xcalloc(c->prog->nprocs ? c->prog->nprocs : 1, sizeof *relocated);
    for (size_t i = 0; i < c->nprocs; i++)
        relocated[c->procs[i].proc] = true;
    for (uint32_t pi = 0; pi < c->prog->nprocs; pi++) {
        const mt_procedure *p = &c->prog->procs[pi];
        size_t n = 0;
        bool leave = relocated[pi] || p->is_plt || p->code_as_data; /* the blob's bytes stay */
        cs_insn *insns = leave ? NULL : sweep_procedure(c, p, &n);
        for (size_t k = 0; k < n; k++) {
            const cs_insn *ins = &insns[k];
            /* call/jmp rel32 (e8/e9), or call/jmp *disp32(%rip) (ff 15/25) */
            bool direct = ins->size == 5 && (ins->bytes[0] == 0xe8 || ins->bytes[0] == 0xe9);
            bool via_got = ins->size == 6 && ins->bytes[0] == 0xff &&
                           (ins->bytes[1] == 0x15 || ins->bytes[1] == 0x25);
            if (!direct && !via_got)
                continue;
            int32_t d;
            memcpy(&d, ins->bytes + ins->size - 4, 4);
            bool wrapped;
            uint64_t to = branch_target(c, ins->address + ins->size + (uint64_t)(int64_t)d, &wrapped);
            uint32_t r;
            if (!wrapped || !rel32(to, ins->address + 5, &r))
                continue;
            mt_rt_patch patch = {.vaddr = ins->address, .len = ins->size,
                                 .prot = segment_prot(c->in, ins->address)};
            patch.bytes[0] = direct ? ins->bytes[0] : ins->bytes[1] == 0x15 ? 0xe8 : 0xe9;
            memcpy(patch.bytes + 1, &r, 4);
            patch.bytes[5] = 0x90; /* after a call: where it returns; never reached after a jmp */
            rw_buf_put(patches, &patch, sizeof patch);
        }
        if (insns)
            mt_x86_free(insns, n);
    }
    free(relocated);
}

int rw_code_emit(rw_code *c, uint64_t vaddr, rw_buf *out, rw_buf *patches, mt_error *err)
{
    for (size_t i = 0; i < c->nprocs; i++) {
        const rw_proc *rp = &c->procs[i];
        while (vaddr + out->len < rp->new_start)
            rw_buf_u8(out, 0xcc); /* int3 between copies: nothing should run there */
        for (uint32_t k = 0; k < rp->ninsns; k++) {
            const rw_insn *ri = &rp->insns[k];
            emit_nops(out, ri->pad);
            if (!rw_timers_emit_snip(c, ri->pre, vaddr, out, err))
                return -1;
            if (ri->probe != RW_PROBE_NONE)
                emit_probe(out, ri);
            if (!rw_timers_emit_snip(c, ri->before, vaddr, out, err) ||
                (ri->call_site && !emit_call_target(c, out, ri, vaddr + out->len, err)) ||
                (ri->table_check && !emit_table_check(c, out, ri, vaddr + out->len, err)) ||
                !rw_trace_emit(c, ri, vaddr, out, err))
                return -1;
            if (task_nr_store_len(ri))
                emit_gs_mov(out, 0x89, 0, MT_SLOT_SYSCALL_NR); /* mov %rax,%gs:NR */
            uint64_t at = vaddr + out->len;
            if (!emit_insn(c, out, ri, at, err) ||
                (ri->task_syscall && !emit_task_hook(c, out, ri, vaddr + out->len, err)))
                return -1;
            if (ri->loop_exit)
                emit_gs_mov(out, 0x89, ri->loop_reg, counter_disp(ri));
            if (!rw_timers_emit_snip(c, ri->after, vaddr, out, err))
                return -1;
            if (ri->fallthrough_jmp) {
                bool wrapped;
                uint32_t r;
                uint64_t fall = ri->old + ri->len;
                if (ri->task_syscall_next) { /* the syscall it falls into, run here */
                    static const uint8_t syscall[] = {0x0f, 0x05};
                    rw_buf_put(out, syscall, sizeof syscall);
                    rw_insn hooked = {.old = fall, .task_syscall = ri->task_syscall_next};
                    if (!emit_task_hook(c, out, &hooked, vaddr + out->len, err))
                        return -1;
                    fall += sizeof syscall;
                }
                uint64_t next = vaddr + out->len + 5;
                if (!rel32(branch_target(c, fall, &wrapped), next, &r)) {
                    mt_error_set(err, "%s: fall-through of 0x%llx out of rel32 range", c->in->path,
                                 (unsigned long long)ri->old);
                    return -1;
                }
                rw_buf_u8(out, 0xe9);
                rw_buf_u32(out, r);
            }
        }
        if (!rw_timers_emit_tramps(c, rp, vaddr, out, block_copy, err) ||
            !add_entry_patch(c, rp, patches, err))
            return -1;
    }
    add_wrapper_call_patches(c, patches);
    /* The runtime makes each run of pages writable once: ascending order. */
    if (patches->len)
        qsort(patches->data, patches->len / sizeof(mt_rt_patch), sizeof(mt_rt_patch),
              mt_compare_u64 /* by vaddr, the first field */);
    for (size_t t = 0; t < c->ntables; t++)
        if (!emit_table(c, &c->tables[t], vaddr, out, err))
            return -1;
    return 0;
}

/* ---- moved ranges for unwind info ----------------------------------------- */

uint64_t rw_moved_lookup(const rw_moved *m, uint64_t old)
{
    if (old == m->old_end)
        return m->new_end;
    size_t lo = mt_lower_bound_u64(m->old_addrs, m->naddrs, sizeof *m->old_addrs, 0, old);
    return lo < m->naddrs && m->old_addrs[lo] == old ? m->new_addrs[lo] : 0;
}

uint64_t rw_moved_landing_pad(const rw_moved *m, uint64_t start, uint64_t len, uint64_t pad)
{
    for (uint32_t i = 0; i < m->nlp; i++)
        if (m->lp_pad[i] == pad && m->lp_call[i] >= start && m->lp_call[i] - start < len)
            return m->lp_new[i];
    return 0;
}

rw_moved *rw_code_moved(const rw_code *c, size_t *n)
{
    rw_moved *m = mt_xcalloc(c->nprocs + 1, sizeof *m);
    for (size_t i = 0; i < c->nprocs; i++) {
        const rw_proc *rp = &c->procs[i];
        const mt_procedure *p = &c->prog->procs[rp->proc];
        m[i].old_start = p->entry;
        m[i].old_end = p->blocks[p->nblocks - 1].end;
        m[i].new_start = rp->new_start;
        m[i].new_end = rp->new_end;
        m[i].old_addrs = mt_xmalloc(rp->ninsns * sizeof(uint64_t));
        m[i].new_addrs = mt_xmalloc(rp->ninsns * sizeof(uint64_t));
        for (uint32_t k = 0; k < rp->ninsns; k++) {
            m[i].old_addrs[k] = rp->insns[k].old;
            m[i].new_addrs[k] = rp->insns[k].new_addr;
        }
        m[i].naddrs = rp->ninsns;
        rw_timers_moved(c, rp, &m[i]);
    }
    *n = c->nprocs;
    return m;
}

void rw_moved_free(rw_moved *m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(m[i].old_addrs);
        free(m[i].new_addrs);
        free(m[i].lp_call);
        free(m[i].lp_pad);
        free(m[i].lp_new);
    }
    free(m);
}
