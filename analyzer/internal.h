/* analyzer/internal.h — interfaces between the analyzer's stages.
 * Not for use outside analyzer/: other modules include analyzer.h.
 *
 * Stages, in the order analyze.c runs them:
 *   (common/elf_file.h opens and validates the ELF file: the stages read it
 *   through that view, `img`)
 *   procedures.c   find procedures: .symtab, .dynsym, .eh_frame (ehframe.c),
 *                  PLT stubs (plt.c), entry point; tie foo.cold to foo;
 *                  mark procedures whose address is stored in data
 *   cfg.c          per procedure: decode (disasm.c), blocks, typed edges,
 *                  call sites, jump tables (jumptable.c), noreturn fixpoint
 *   codedata.c     code the program copies or reads as data (left as it is)
 *   loops.c        dominator tree, natural loops, irreducible regions
 *   callgraph.c    call-graph edges, SCCs, recursion
 *   estimability.c Tot/TDES and the estimability test
 *   lines.c        DWARF line tables -> block file:line
 * Every stage uses program.c (warnings, lookups, freeing), never analyze.c.
 * After pass 1, pass1.c refines the program once with its measurements
 * (mt_refine_with_pass1: dynamic call edges, estimability with counts).
 */
#ifndef MTOOL_ANALYZER_INTERNAL_H
#define MTOOL_ANALYZER_INTERNAL_H

#include "../common/elf_file.h"
#include "analyzer.h"

/* program.c: procedures are sorted by entry; binary searches over them. */
uint32_t mt_procedure_at_or_before(const mt_program *prog, uint64_t addr); /* last entry <= addr */

/* Append a warning line to prog->warnings (printf-style). */
void mt_warn(mt_program *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ehframe.c: FDE address ranges from .eh_frame (pc_begin, pc_end pairs). */
typedef struct {
    uint64_t begin, end;
} mt_fde_range;
/* Returns the number of ranges (caller frees *out); warnings go to prog. */
size_t mt_read_eh_frame(const mt_elf_file *img, mt_program *prog, mt_fde_range **out);
/* One call-site record with a landing pad: an exception unwinding through a
 * call in [start, end) continues at landing_pad. */
typedef struct {
    uint64_t start, end, landing_pad;
} mt_eh_call_site;
/* Every call site with a landing pad, sorted by start (caller frees *out). */
size_t mt_read_eh_call_sites(const mt_elf_file *img, mt_program *prog, mt_eh_call_site **out);

/* plt.c: one entry per PLT stub found in .plt, .plt.sec and .plt.got. */
typedef struct {
    uint64_t addr, size;
    char *name;   /* "malloc@plt" */
    char *import; /* "malloc": the symbol its GOT slot's relocation names, or NULL */
} mt_plt_stub;
size_t mt_find_plt_stubs(const mt_elf_file *img, mt_program *prog, mt_plt_stub **out);

/* procedures.c: fills prog->procs (sorted, deduplicated, named) and
 * prog->entry/kind/static_linked/stripped/build_id. */
int mt_discover_procedures(const mt_elf_file *img, mt_program *prog, mt_error *err);
/* Marks address_taken for procedures whose entry is stored in data
 * (relocations, .init_array, pointer-sized words in data sections) or that
 * are exported; code references are marked by cfg.c. */
void mt_mark_data_address_taken(const mt_elf_file *img, mt_program *prog);
/* Addresses inside code that are not procedure entries, stored in data
 * (labels taken as values, non-PIE jump tables), sorted by value: returns
 * how many (caller frees *out). */
typedef struct {
    uint64_t value, where; /* where: address of the word holding it, 0 if unknown */
} mt_data_ref;
size_t mt_data_refs_into_code(const mt_elf_file *img, const mt_program *prog, mt_data_ref **out);

/* codedata.c: sets code_as_data on procedures inside ranges of code that a
 * data symbol names (needs address_taken from the CFGs). */
void mt_mark_code_used_as_data(const mt_elf_file *img, mt_program *prog);

/* cfg.c: blocks, edges, call sites and noreturn for every procedure
 * Sets prog->ninsns. */
void mt_build_cfgs(const mt_elf_file *img, mt_program *prog);

/* graph.c: the graph algorithms that the CFG and call-graph stages share
 * (mt_csr, analyzer.h). */
/* idom[v] for nodes reachable from root; MT_NONE for root and unreachable. */
void mt_graph_dominators(const mt_csr *succ, const mt_csr *pred, uint32_t root, uint32_t *idom);
/* Strongly connected components numbered in reverse topological order
 * (edges between components go from higher to lower numbers). */
uint32_t mt_graph_sccs(const mt_csr *succ, uint32_t *comp);

/* A dominator tree with preorder/postorder numbers for O(1) dominance tests. */
typedef struct {
    mt_csr children;
    uint32_t *pre, *post;
    uint32_t *order; /* nodes in preorder */
} mt_domtree;
void mt_domtree_build(mt_domtree *t, const uint32_t *idom, uint32_t n);
void mt_domtree_free(mt_domtree *t);
bool mt_domtree_dominates(const mt_domtree *t, uint32_t a, uint32_t b);

/* loops.c */
void mt_compute_dominators(mt_procedure *proc);
void mt_find_loops(mt_procedure *proc); /* needs dominators; sets block.loop, call.loop */
void mt_free_loops(mt_procedure *proc); /* the loop forest, emptied */

/* callgraph.c */
void mt_build_callgraph(mt_program *prog);

/* lines.c: block file/line from DWARF; sets prog->files, has_dwarf_lines. */
void mt_read_lines(const mt_elf_file *img, mt_program *prog);

/* Frees one procedure's CFG data (blocks, edges, loops, calls). */
void mt_procedure_free_cfg(mt_procedure *proc);

#endif
