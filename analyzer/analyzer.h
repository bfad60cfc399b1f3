/* analyzer/analyzer.h — the binary analyzer's public interface.
 *
 * mt_analyze() reads an x86-64 ELF file (executable, PIE or shared object)
 * and builds an mt_program: its procedures (from .symtab, .dynsym, .eh_frame
 * and PLT stubs), each procedure's blocks and typed CFG edges, recovered
 * jump tables, dominator tree, loop forest, call sites; the program's call
 * graph with recursive SCCs; and estimability (MTOOL section 4).
 *
 * Everything downstream (rewriter, cost model, m-object selection, reports)
 * consumes this structure directly, or its JSON form (analysis_json.c,
 * docs/analysis-schema.md).  Addresses are link-time virtual addresses. */
#ifndef MTOOL_ANALYZER_H
#define MTOOL_ANALYZER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../common/util.h"

#define MT_ANALYSIS_SCHEMA_VERSION 1
#define MT_NONE UINT32_MAX /* "no block / no loop / no procedure" */

/* How control leaves a block. */
typedef enum {
    MT_TERM_FALLTHROUGH,  /* next instruction starts another block (a leader) */
    MT_TERM_JUMP,         /* direct unconditional jmp inside the procedure */
    MT_TERM_COND,         /* conditional branch (jcc, jrcxz, loop*) */
    MT_TERM_CALL,         /* direct call; returns to the next block */
    MT_TERM_ICALL,        /* indirect call; returns to the next block */
    MT_TERM_NORETURN_CALL,/* call to a procedure that never returns */
    MT_TERM_RET,          /* ret / iret: leaves the procedure */
    MT_TERM_TABLE_JUMP,   /* indirect jmp through a recovered jump table */
    MT_TERM_INDIRECT_JUMP,/* indirect jmp whose targets are unknown */
    MT_TERM_TAIL_CALL,    /* jmp (direct or through memory) to another procedure */
    MT_TERM_STOP,         /* hlt, ud2, int3: execution does not continue */
} mt_term_kind;

/* Typed CFG edges.  Edges that leave the procedure (return, tail call) have
 * dst == MT_NONE; `target` then holds the destination address if known. */
typedef enum {
    MT_EDGE_FALLTHROUGH,
    MT_EDGE_JUMP,
    MT_EDGE_COND_TAKEN,
    MT_EDGE_COND_FALLTHROUGH,
    MT_EDGE_CALL_RETURN, /* from a block ending in a call to the block after it */
    MT_EDGE_INDIRECT,    /* one recovered jump-table target */
    MT_EDGE_RETURN,
    MT_EDGE_TAIL_CALL,
    MT_EDGE_EXCEPTION,   /* from a block ending in a call to its landing pad (unwinding) */
} mt_edge_kind;

typedef struct {
    uint32_t src, dst; /* block indices in the procedure; dst may be MT_NONE */
    uint64_t target;   /* destination address (0 when unknown) */
    uint8_t kind;      /* mt_edge_kind */
} mt_edge;

typedef struct {
    uint64_t start, end;       /* [start, end) */
    uint32_t ninsns;
    uint32_t mem_reads;        /* memory read accesses, explicit and implicit */
    uint32_t mem_writes;       /* memory write accesses, explicit and implicit */
    uint32_t first_succ, nsucc;/* successor edges: proc->edges[first_succ ..] */
    uint32_t idom;             /* immediate dominator block, MT_NONE for entry/unreachable */
    uint32_t loop;             /* innermost loop containing it, MT_NONE if none */
    uint32_t file, line;       /* source of the first instruction with line info; file
                                  indexes prog->files, 0 means "unknown" */
    uint8_t term;              /* mt_term_kind */
    int16_t rsp_delta;         /* bytes the block pushes onto the stack, net (a call that
                                  returns counts 0); MT_RSP_UNKNOWN when it sets %rsp
                                  otherwise (leave, mov, and) or moves it too far */
} mt_block;
#define MT_RSP_UNKNOWN INT16_MIN

/* A natural loop (or, when `irreducible`, a strongly connected region with
 * several entry blocks; such regions are reported but are not m-objects). */
typedef struct {
    uint32_t header;            /* block index (lowest-address entry if irreducible) */
    uint32_t parent;            /* enclosing loop index or MT_NONE */
    uint32_t depth;             /* 1 = outermost */
    bool irreducible;
    uint32_t *blocks;           /* body incl. header and nested loops, sorted */
    uint32_t nblocks;
    uint32_t *entry_edges;      /* edges from outside the body into it */
    uint32_t nentry_edges;
    uint32_t *exit_edges;       /* edges from the body to outside it (incl. returns) */
    uint32_t nexit_edges;
    uint32_t *back_edges;       /* edges from the body to the header */
    uint32_t nback_edges;
    /* Estimability of the loop as a virtual call-graph node (estimability.c). */
    bool estimable;
    double tot, tdes;           /* Tot(L), TDES(L); tdes < 0 when not computed */
} mt_loop;

typedef enum {
    MT_CALL_DIRECT,   /* call to a procedure of this file */
    MT_CALL_PLT,      /* call to an import through its PLT stub */
    MT_CALL_TAIL,     /* tail call: jmp to another procedure's entry */
    MT_CALL_INDIRECT, /* call/jmp through a register or memory: callee unknown */
} mt_call_kind;

typedef struct {
    uint64_t addr;     /* address of the call instruction */
    uint64_t target;   /* call target address, 0 when unknown */
    uint32_t block;    /* block that ends with this call */
    uint32_t callee;   /* procedure index, MT_NONE when unknown */
    uint32_t loop;     /* innermost loop containing the call site, MT_NONE if none */
    uint8_t kind;      /* mt_call_kind */
    uint32_t line;     /* source line of the call instruction (DWARF), 0 unknown */
    double share;      /* of its block's executions that make this call: 1, or for one
                          target of a call through a pointer its share of the site's
                          calls (mt_add_dynamic_calls) */
    uint32_t cross_callee; /* a target of a call through a pointer in another object
                          (callee MT_NONE): 1 + its index in prog->cross_callees; 0: none
                          (1-based so that a zeroed site names none) */
} mt_call_site;

/* Calls site `s` made when its block executed `block_count` times. */
static inline double mt_site_calls(const mt_call_site *s, uint64_t block_count)
{
    return s->share * (double)block_count;
}

/* A recovered jump table: the jmp at `jump` goes to
 * base + ext(entry k) for entries k < nentries stored at `table`.
 * base is 0 for tables of absolute addresses, and usually equals `table`
 * for the position-independent tables of offsets. */
typedef struct {
    uint64_t jump;
    uint64_t table;
    uint64_t base;
    uint32_t nentries;
    uint8_t entry_size;       /* bytes per entry: 4 or 8 */
    bool entry_signed;
    /* The instruction at `load` reads the entry at (its address registers)
     * table + index_scale * index_reg, with base_reg (0: none) holding
     * base_value on every path: a copy checks index_reg there.  Registers
     * are 64-bit families, mt_reg_family's numbers (encoding + 1);
     * index_reg 0: not found (the copy cannot check the index). */
    uint64_t load;
    uint8_t index_reg, base_reg, index_scale;
    uint64_t base_value;
} mt_jump_table;

/* Where a procedure's existence and bounds come from (bit set). */
enum {
    MT_SRC_SYMTAB = 1u << 0,
    MT_SRC_DYNSYM = 1u << 1,
    MT_SRC_EH_FRAME = 1u << 2,
    MT_SRC_PLT = 1u << 3,
    MT_SRC_ENTRY = 1u << 4, /* the ELF entry point */
};

typedef struct {
    char *name;               /* "main", "malloc@plt", "foo.cold", "sub_401a30" */
    uint64_t entry;           /* first instruction */
    uint64_t size;            /* bytes, from the symbol or FDE (0 = unknown) */
    uint32_t sources;         /* MT_SRC_* */
    uint32_t parent;          /* for a split part (foo.cold): index of foo, else MT_NONE */
    bool is_plt;              /* a PLT stub: calls to it are calls to an import */
    char *import;             /* a PLT stub: the symbol its GOT slot's relocation names
                                 ("malloc"); NULL for other procedures, PLT0, an IRELATIVE
                                 slot (a static binary's) or a slot no relocation names */
    bool known_import;        /* a PLT stub whose import is an estimable procedure of a
                                 counted library (pass 2 joins the analyses, run/libs.c):
                                 calls to it are known work, predicted and timed inside */
    bool binds_own;           /* a PLT stub whose import the loader binds to a procedure
                                 of this object itself (pass 2, run/libs.c: -fPIC code
                                 calls its own exported functions through its PLT): its
                                 call sites call that procedure (mt_bind_stubs), and calls
                                 to it are no outside time */
    bool known_export;        /* a procedure another object calls as its known_import:
                                 its calls through its own PLT are outside time (brackets)
                                 whether or not a timed object of its file reaches it */
    bool resolved;            /* every control transfer's target is known */
    char *unresolved_reason;  /* set when !resolved: "indirect jump at 0x...: ..." */
    bool noreturn;            /* never returns to its caller */
    bool address_taken;       /* its address appears in code or data (callable indirectly) */
    bool entry_only;          /* nothing enters its code but at the entry: no jump from another
                                 procedure, no landing pad, no address inside it (but the entry)
                                 in data or materialized by code */
    bool branch_entries_only; /* the same, but for direct jumps and calls of other procedures
                                 to its foreign_entries (entry_only: there are none) */
    uint64_t *foreign_entries;/* addresses other than the entry that other procedures' direct
                                 jumps and calls reach (glibc's __mempcpy into __memmove),
                                 sorted */
    uint32_t nforeign_entries;
    char *code_as_data;       /* set when the program copies or reads this code as data (it
                                 lies in a range a data symbol names, codedata.c): why; such
                                 code is left as it is, never instrumented */

    mt_block *blocks;         /* sorted by start address; blocks[0] is the entry */
    uint32_t nblocks;
    mt_edge *edges;           /* grouped by source block */
    uint32_t nedges;
    mt_loop *loops;           /* parents before children */
    uint32_t nloops;
    mt_call_site *calls;      /* sorted by address */
    uint32_t ncalls;
    mt_jump_table *tables;    /* one per MT_TERM_TABLE_JUMP block, by jump address */
    uint32_t ntables;

    uint64_t ninsns, mem_reads, mem_writes; /* static totals over blocks */

    /* Call-graph facts (callgraph.c, estimability.c). */
    uint32_t scc;             /* index of its strongly connected component */
    bool recursive;           /* in a cycle of the call graph (incl. self-calls) */
    bool estimable;
    double tot, tdes;         /* Tot(v), TDES(v); tdes < 0 when not computed */
} mt_procedure;

/* A procedure of another counted object that calls through pointers
 * reached (pass 1's LIB:0xTARGET, mt_add_dynamic_calls): for those calls
 * what a PLT stub is for calls through the PLT.  Their work is unknown
 * until pass 2 joins the object's analysis (run/libs.c) and marks it
 * known_import: a leaf standing for that procedure's work per call. */
typedef struct {
    char *object;             /* the object's name as the program needs it */
    uint64_t target;          /* the procedure's entry, that object's link-time address */
    bool known_import;
} mt_cross_callee;

/* A call-graph edge aggregates every call site from caller to callee. */
typedef struct {
    uint32_t caller, callee;  /* procedure indices */
    uint32_t nsites;
    uint8_t kind;             /* the first of direct, plt, tail among its sites */
} mt_cg_edge;

/* Compressed adjacency lists (analyzer/graph.c), node v's neighbours in
 * the order of the input edges: the CFG and call-graph stages' graphs, and
 * the call graph read backwards (a procedure's callers) by the selection. */
typedef struct {
    uint32_t n;
    uint32_t *off; /* node v's neighbours: adj[off[v] .. off[v+1]) */
    uint32_t *adj;
    uint32_t *eid; /* index of the input edge behind each adj slot */
} mt_csr;
void mt_csr_build(mt_csr *g, uint32_t n, const uint32_t *from, const uint32_t *to, size_t m);
void mt_csr_free(mt_csr *g);

typedef enum { MT_ELF_EXEC, MT_ELF_PIE, MT_ELF_SHARED } mt_elf_kind;

typedef struct mt_program {
    char *path;
    uint8_t kind;             /* mt_elf_kind */
    bool static_linked;       /* no PT_INTERP and no PT_DYNAMIC */
    bool stripped;            /* no .symtab */
    bool has_dwarf_lines;     /* a usable .debug_line was read */
    uint64_t entry;           /* ELF entry point (0 for most shared objects) */
    char build_id[41];        /* hex of NT_GNU_BUILD_ID, "" if absent */

    mt_procedure *procs;      /* sorted by entry address */
    uint32_t nprocs;
    mt_cg_edge *cg_edges;     /* sorted by (caller, callee) */
    uint32_t ncg_edges;
    uint32_t nsccs;
    mt_cross_callee *cross_callees; /* reached through pointers (mt_call_site.cross_callee) */
    uint32_t ncross_callees;

    char **files;             /* source files; files[0] = "" (unknown) */
    uint32_t nfiles;

    char **warnings;          /* degraded analysis, one line each */
    uint32_t nwarnings;

    uint64_t ninsns;          /* instructions decoded in all procedures */
} mt_program;

typedef struct {
    bool want_lines;          /* read DWARF line tables (default true) */
    bool want_estimability;   /* static Tot/TDES (default true; rewriting needs none) */
} mt_analyze_options;

void mt_analyze_options_init(mt_analyze_options *opt);

/* Analyze the ELF file at `path`.  Returns NULL with `err` set
 * ("FILE: reason") when the file cannot be analyzed at all; degraded results
 * (no symbols, unresolved jumps, bad DWARF) are listed in prog->warnings. */
mt_program *mt_analyze(const char *path, const mt_analyze_options *opt, mt_error *err);
void mt_program_free(mt_program *prog);
/* An analysis kept in a file (temp + rename) and read back, the same
 * structure with `bin` as its path; read by the mtool build that wrote it
 * only (saved.c).  NULL with err set for a file cut short or not one. */
int mt_program_save(const mt_program *prog, const char *path, mt_error *err);
mt_program *mt_program_load(const char *path, const char *bin, mt_error *err);

/* Recompute estimability with dynamic call counts: `site_counts` holds, for
 * each procedure in order and each of its call sites in order, how often the
 * site executed (pass 1).  Sites never executed drop out of the call graph.
 * NULL means the static call graph (every site counts once).  With counts,
 * `entries` (per procedure, pass 1; MT_UNKNOWN_ENTRIES when block counts
 * cannot tell) lets a procedure whose address is taken lose its edge from
 * the invisible callers when the calls seen account for all its entries. */
#define MT_UNKNOWN_ENTRIES UINT64_MAX
void mt_compute_estimability(mt_program *prog, const uint64_t *site_counts, const uint64_t *entries);

/* A target pass 1 saw at a call (or tail jump) through a pointer. */
typedef struct {
    uint64_t site;     /* address of the call instruction */
    uint64_t target;   /* link-time address reached; 0: calls to targets it did not name */
    uint64_t calls;
    const char *object;/* the counted object `target` lies in; NULL: the calling one */
} mt_call_target_count;

/* The dynamic call graph: every call site through a pointer with recorded
 * targets becomes one call site per procedure it reached (kind
 * MT_CALL_INDIRECT, callee set, `share` its part of the site's calls), plus
 * the site itself with an unknown callee for the share of calls that went
 * elsewhere (shared libraries, PLT stubs, addresses where no procedure
 * starts, targets not named).  A target in another object (`object`) is a
 * site of its own with an unknown callee naming it (mt_call_site.cross_callee,
 * one prog->cross_callees entry per object and target).  The call graph and its SCCs are rebuilt.
 * Called once per analysis (a site already expanded is not again). */
void mt_add_dynamic_calls(mt_program *prog, const mt_call_target_count *targets, size_t n);

/* Calls to PLT stub stubs[k] become calls to procedure procs[k] of the same
 * program, where the loader binds the stub's import (run/libs.c): each
 * such call site's callee, and the stub marked binds_own; the call graph
 * and its SCCs are rebuilt.  Estimability is the caller's to decide again
 * (mt_estimate_with_pass1). */
void mt_bind_stubs(mt_program *prog, const uint32_t *stubs, const uint32_t *procs, size_t n);

/* Per-block figures of a whole program (pass-1 counts, predicted cycles) are
 * laid out procedure after procedure, each procedure's blocks in order:
 * procedure p's start at offsets[p] (nprocs + 1 offsets, the last the total;
 * the caller frees them). */
uint64_t *mt_block_offsets(const mt_program *prog);

/* Pass 1's measurements applied to the analysis, once, before anything is
 * predicted or selected (pass1.c): the calls through pointers it saw
 * (`targets`) become call edges (mt_add_dynamic_calls), then estimability
 * is decided again with the call sites that ran and the procedures' entries
 * (`counts`: pass-1 block counts laid out as mt_block_offsets). */
void mt_refine_with_pass1(mt_program *prog, const uint64_t *counts,
                          const mt_call_target_count *targets, size_t ntargets);
/* Estimability decided again with pass-1 counts (as mt_refine_with_pass1
 * does after the dynamic calls): after pass 2 marks known imports. */
void mt_estimate_with_pass1(mt_program *prog, const uint64_t *counts);

/* A procedure's and a loop's entries from pass-1 block counts (`counts` laid
 * out as `first`, mt_block_offsets): the one definition count, m-object
 * selection, the cost model and the history use.  Calls into procedure
 * `proc`: its entry block's count, unless that block is a loop header (jumps
 * back to it count too); then the calls of the sites that call it directly. */
double mt_procedure_calls(const mt_program *prog, const uint64_t *first, const uint64_t *counts,
                          uint32_t proc);
/* Times control entered loop `loop` of procedure `proc` from outside it (not
 * its iterations: those are its header's count).  An entry edge whose source
 * can only go into the loop counts exactly, a branching one at most the
 * header's executions (pass 2 measures the exact figure); a loop headed by
 * the procedure's entry block is entered by its calls.  Never more than the
 * header's count. */
uint64_t mt_loop_entries(const mt_program *prog, const uint64_t *first, const uint64_t *counts,
                         uint32_t proc, uint32_t loop);

/* Single-entry regions of a procedure (regions.c), to time a large procedure
 * in pieces.  Cut points are the blocks that every path from the entry to a
 * return passes through, that lie on no cycle, are no landing pad and are
 * not re-entered from a split part; they form a chain of the dominator
 * tree.  mt_region_cuts returns how many there are (0 when the procedure
 * cannot be cut: unresolved, a split part, its entry in a loop, no return),
 * in order, the entry block first; *cuts is malloc'd (NULL when 0).
 * Region [first, end) for two cut points first before end: the blocks
 * dominated by `first` and not by `end` (end == MT_NONE: to the returns);
 * it is entered only at `first`. */
uint32_t mt_region_cuts(const mt_program *prog, uint32_t proc, uint32_t **cuts);
/* in[b] for every block b of p: whether it is in region [first, end). */
void mt_region_blocks(const mt_procedure *p, uint32_t first, uint32_t end, bool *in);
/* in[b] for every block b of p: whether it belongs to the object `loop`
 * (a natural loop's body with its nested loops), or with `region` to the
 * region [first, end), or else (loop == MT_NONE) to the procedure: every
 * block (callgraph.c). */
void mt_object_blocks(const mt_procedure *p, uint32_t loop, bool region, uint32_t first,
                      uint32_t end, bool *in);
/* called[q] set for every procedure the blocks in[] of procedure p call,
 * directly or through their callees (call sites with a known callee: direct
 * calls, tail calls, and the targets pass 1 recorded; callgraph.c). */
void mt_blocks_callees(const mt_program *prog, uint32_t p, const bool *in, bool *called);
/* For cut points cuts[0..n) (a chain of the dominator tree, in order):
 * region[b] = the k of the region [cuts[k], cuts[k+1]) holding block b, or
 * MT_NONE for blocks the first cut does not dominate. */
void mt_region_of_blocks(const mt_procedure *p, const uint32_t *cuts, uint32_t n, uint32_t *region);

/* Lookup helpers. */
/* One instruction of a procedure, as text (mnemonic and operands, Intel
 * syntax, capstone's), with its block and its memory accesses per
 * execution (explicit and implicit, as the block's mem_reads/mem_writes). */
typedef struct {
    uint64_t address;
    uint32_t block;            /* index in the procedure's blocks */
    uint8_t reads, writes;
    char text[200];            /* capstone's mnemonic (32), a space, its operands (160) */
} mt_insn_text;
/* The instructions of procedure `proc`'s blocks, in block (address) order,
 * decoded again from prog->path (malloc'd into *out); -1 with err ("FILE:
 * reason") when the file cannot be read or no longer decodes there. */
int mt_procedure_listing(const mt_program *prog, uint32_t proc, mt_insn_text **out, size_t *n,
                         mt_error *err);

uint32_t mt_find_procedure(const mt_program *prog, const char *name); /* MT_NONE if absent */
uint32_t mt_procedure_at(const mt_program *prog, uint64_t addr);     /* containing proc */
uint32_t mt_procedure_with_entry(const mt_program *prog, uint64_t addr); /* entry == addr */
uint32_t mt_block_at(const mt_procedure *proc, uint64_t addr);       /* containing block */

/* Code objects, the ids simulated references carry (rewriter/trace.c,
 * sim/): 0 = none, 1 + p = procedure p, then one per loop in procedure
 * order: procedure p's loop l is mt_code_object_loops(prog, p) + l. */
uint32_t mt_code_object_loops(const mt_program *prog, uint32_t proc);
/* The code object of block b of procedure p: its innermost natural loop
 * (irreducible regions are not m-objects: their enclosing loop), else p;
 * `loops` = mt_code_object_loops(prog, p). */
uint32_t mt_code_object_of_block(const mt_program *prog, uint32_t p, uint32_t b, uint32_t loops);
/* Procedure and loop (MT_NONE: the procedure itself) of code object `id`;
 * false for 0 or an id past the last loop. */
bool mt_code_object_split(const mt_program *prog, uint32_t id, uint32_t *proc, uint32_t *loop);

const char *mt_edge_kind_name(mt_edge_kind kind);
const char *mt_term_kind_name(mt_term_kind kind);
const char *mt_call_kind_name(mt_call_kind kind);

/* Serialize the analysis as JSON (schema: docs/analysis-schema.md). */
typedef struct {
    bool loops;              /* include the loop forest */
    bool callgraph;          /* include call-graph edges and SCCs */
    bool blocks;             /* include blocks and edges */
    const char *only_function;
} mt_json_options;

void mt_write_analysis_json(FILE *fp, const mt_program *prog, const mt_json_options *opt);

#endif
