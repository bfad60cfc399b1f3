/* analyzer/cfg_internal.h — the per-procedure working state shared by cfg.c
 * (traversal, blocks, edges) and jumptable.c (backward slices).
 *
 * It lives only while one procedure is built: a compact record per decoded
 * instruction (24 bytes), no capstone structure.  Instructions the slices
 * need are decoded again. */
#ifndef MTOOL_CFG_INTERNAL_H
#define MTOOL_CFG_INTERNAL_H

#include "disasm.h"
#include "internal.h"

enum {
    CFG_LEADER = 1u << 0,      /* starts a block */
    CFG_TABLE_TRIED = 1u << 1, /* jump-table recovery attempted (MT_FLOW_JUMP_REG) */
    CFG_TABLE_OK = 1u << 2,    /* ... and succeeded: targets in the builder's tables */
    CFG_NORETURN_CALL = 1u << 3, /* direct call to a noreturn procedure */
    CFG_TAIL_JUMP = 1u << 4,   /* indirect jmp without a table that leaves the procedure */
};

typedef struct {
    uint64_t addr;
    uint64_t target;       /* direct target (mt_insn_facts.target) */
    uint8_t len, flow;     /* flow: mt_flow */
    uint8_t reads, writes;
    uint8_t flags;         /* CFG_* */
    int16_t rsp;           /* mt_insn_rsp_change */
} cfg_insn;

/* One control transfer into `target` from instruction `src` (an index in
 * the sorted instruction array), used to walk predecessors. */
typedef struct {
    uint64_t target;
    uint32_t src;
} cfg_pred;

/* Recovered targets of one table jump. */
typedef struct {
    uint64_t jump;      /* address of the jmp */
    uint64_t *targets;  /* sorted, distinct */
    uint32_t ntargets;
    mt_jump_table layout; /* where the table lives and how entries encode targets */
} cfg_table;

/* An indirect jump whose jump table was not recovered. */
typedef struct {
    uint64_t addr;
    bool maybe_inside; /* see cfg_resolve_jump_table */
    char *why;
} cfg_failed_jump;

typedef struct {
    const mt_elf_file *img;
    const mt_program *prog;
    const void *program_bounds; /* cfg.c's per-procedure bounds */
    mt_decoder *dec;
    uint32_t self;           /* procedure index */
    uint64_t lo, hi;         /* bounds: [lo, hi) */
    const uint8_t *code;     /* bytes of [lo, hi) */

    cfg_insn *insns;         /* sorted by address between traversal rounds */
    size_t ninsns, cap_insns;
    cfg_pred *preds;         /* sorted by target; rebuilt each round */
    size_t npreds, cap_preds;
    cfg_table *tables;
    size_t ntables, cap_tables;

    uint64_t *extra_entries; /* entered besides lo: jumps from other procedures, landing pads */
    size_t nextra, cap_extra;
    cfg_failed_jump *failed; /* indirect jumps without a recovered table */
    size_t nfailed, cap_failed;
    bool inner_address;      /* some instruction materializes an address inside [lo, hi)
                                other than lo (a label taken as a value) */
    const mt_data_ref *data_refs; /* mt_data_refs_into_code of the program */
    size_t ndata_refs;
    const uint32_t *next_part; /* per procedure: the next part of its function (foo -> foo.cold
                                  -> ...), MT_NONE at the end */

    char *unresolved;        /* first reason the procedure is not resolved */
} cfg_builder;

/* Index of the instruction starting at `addr`, or SIZE_MAX. */
size_t cfg_insn_at(const cfg_builder *b, uint64_t addr);
/* Indices of the instructions that can execute just before instruction `i`
 * (at most `max`); returns how many, or SIZE_MAX when there are more. */
size_t cfg_predecessors(const cfg_builder *b, size_t i, uint32_t *out, size_t max);
/* Decodes instruction `i` again with the builder's decoder. */
const cs_insn *cfg_redecode(const cfg_builder *b, size_t i);

/* Whether a jump-table entry may point to `addr`: inside [lo, hi), or into
 * another part of the same split function (foo / foo.cold). */
bool cfg_table_target_allowed(const cfg_builder *b, uint64_t addr);

/* jumptable.c: recovers the targets of the indirect jmp at instruction `i`.
 * On success returns true with *targets (malloc'd, sorted, distinct, all
 * allowed by cfg_table_target_allowed); on failure returns false with `why`
 * explaining, and *maybe_inside false when the target is a plain pointer:
 * loaded whole from memory or received (an argument, a call's result),
 * nothing added to it, as a switch adds a table entry to a base. */
bool cfg_resolve_jump_table(cfg_builder *b, size_t i, uint64_t **targets, uint32_t *ntargets,
                            mt_jump_table *layout, bool *maybe_inside, char *why, size_t whylen);

/* tailcall.c: marks CFG_TAIL_JUMP on each failed indirect jump (in
 * b->failed, with maybe_inside false) that leaves the procedure: the stack
 * pointer and every callee-saved register hold their entry values there on
 * every path, and no address inside the procedure (but its entry) is
 * materialized by its code or stored in data outside its own jump tables. */
void cfg_find_tail_jumps(cfg_builder *b);

/* tailcall.c: whether data holds an address inside the procedure or another
 * part of its function (foo / foo.cold), other than an entry, outside the
 * procedure's own jump tables: a label taken as a value. */
bool cfg_data_names_inner_address(const cfg_builder *b);

#endif
