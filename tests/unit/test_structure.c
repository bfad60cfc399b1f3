/* Structure tests: mt_analyze() on the samples (the programs in samples/,
 * built by samples/Makefile), whose loops, switch, call graph and
 * estimability are known from their source.  Where a fact can be read
 * without mtool, it is: jump-table targets come from the table bytes in the
 * file (decoded here with capstone) and from the DWARF lines of the case
 * labels; source lines come from the sources themselves.
 *
 * Loop facts asserted per optimization level are the ones both gcc 12 and
 * clang 14 keep (checked with objdump): at -O0 and -O2 matmul's nests are
 * exactly three nested loops; at -O3 gcc versions the inner loops, so only
 * "depth 3, nothing deeper" holds.
 *
 * usage: test_structure SAMPLES_DIR SOURCE_DIR */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/analyzer.h"
#include "rewriter/rewriter.h"
#include "unit.h"

static const char *samples_dir, *source_dir;

/* The C builds of samples/Makefile (C_BUILDS), minus the stripped copies. */
static const char *const c_builds[] = {
    "gcc-O0",       "gcc-O2",       "gcc-O3",         "clang-O0",        "clang-O2",        "clang-O3",
    "gcc-O0-nopie", "gcc-O2-nopie", "gcc-O3-nopie",   "clang-O0-nopie",  "clang-O2-nopie",  "clang-O3-nopie",
    "gcc-O2-static", "gcc-O2-cet"};
static const char *const cxx_builds[] = {"gxx-O0", "gxx-O2", "gxx-O3", "clangxx-O0", "clangxx-O2", "gxx-O2-nopie"};
static const char *const fortran_builds[] = {"gfortran-O0", "gfortran-O2", "gfortran-O3"};

/* ---- helpers ---------------------------------------------------------- */

static mt_program *load(const char *program, const char *build)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-%s", samples_dir, program, build);
    mt_error err;
    mt_program *prog = mt_analyze(path, NULL, &err);
    CHECK(prog != NULL, "%s-%s analyzes%s%s", program, build, prog ? "" : ": ", prog ? "" : err.msg);
    return prog;
}

static const mt_procedure *proc(const mt_program *prog, const char *name)
{
    uint32_t i = mt_find_procedure(prog, name);
    return i == MT_NONE ? NULL : &prog->procs[i];
}

static uint32_t max_loop_depth(const mt_procedure *p)
{
    uint32_t d = 0;
    for (uint32_t l = 0; p && l < p->nloops; l++)
        if (p->loops[l].depth > d)
            d = p->loops[l].depth;
    return d;
}

static bool level_is(const char *build, const char *level)
{
    return strstr(build, level) != NULL;
}

static bool is_static(const char *build)
{
    return level_is(build, "static");
}

/* Exactly three loops, each inside the previous one: a perfect i/j/k nest. */
static bool is_chain_of_three(const mt_procedure *p)
{
    return p && p->nloops == 3 && p->loops[0].depth == 1 && p->loops[1].parent == 0 && p->loops[1].depth == 2 &&
           p->loops[2].parent == 1 && p->loops[2].depth == 3;
}

/* Does `loop` contain a block whose first source line is `line`? */
static bool loop_has_line(const mt_procedure *p, const mt_loop *loop, uint32_t line)
{
    for (uint32_t i = 0; i < loop->nblocks; i++)
        if (p->blocks[loop->blocks[i]].line == line)
            return true;
    return false;
}

/* Line number of the `nth` (1-based) line of SOURCE containing `needle`, 0 if none. */
static uint32_t source_line(const char *source, const char *needle, int nth)
{
    char path[4096], line[512];
    snprintf(path, sizeof path, "%s/%s", source_dir, source);
    FILE *fp = fopen(path, "r");
    uint32_t found = 0;
    for (uint32_t n = 1; fp && !found && fgets(line, sizeof line, fp); n++)
        if (strstr(line, needle) && --nth == 0)
            found = n;
    if (fp)
        fclose(fp);
    return found;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static size_t sort_unique(uint64_t *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_u64);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!m || v[m - 1] != v[i])
            v[m++] = v[i];
    return m;
}

static const mt_cg_edge *cg_edge(const mt_program *prog, const char *from, const char *to)
{
    uint32_t f = mt_find_procedure(prog, from), t = mt_find_procedure(prog, to);
    for (uint32_t e = 0; f != MT_NONE && t != MT_NONE && e < prog->ncg_edges; e++)
        if (prog->cg_edges[e].caller == f && prog->cg_edges[e].callee == t)
            return &prog->cg_edges[e];
    return NULL;
}

static bool has_edge(const mt_program *prog, const char *from, const char *to)
{
    return cg_edge(prog, from, to) != NULL;
}

static bool edge_kind_is(const mt_program *prog, const char *from, const char *to, mt_call_kind kind)
{
    const mt_cg_edge *e = cg_edge(prog, from, to);
    return e && e->kind == kind;
}

/* Every loop of `p` has depth 1 (no loop encloses another). */
static bool all_outermost(const mt_procedure *p)
{
    for (uint32_t l = 0; p && l < p->nloops; l++)
        if (p->loops[l].depth != 1 || p->loops[l].parent != MT_NONE)
            return false;
    return p != NULL;
}

/* Every part named "X.cold" / "X.cold.N" is tied to X. */
static void check_cold_parts(const mt_program *prog, const char *label)
{
    uint32_t parts = 0, tied = 0;
    for (uint32_t i = 0; i < prog->nprocs; i++) {
        const char *dot = strstr(prog->procs[i].name, ".cold");
        if (!dot || prog->procs[i].is_plt)
            continue;
        char *parent_name = mt_xstrdup(prog->procs[i].name);
        parent_name[dot - prog->procs[i].name] = 0;
        uint32_t parent = mt_find_procedure(prog, parent_name);
        parts++;
        if (parent != MT_NONE && prog->procs[i].parent == parent)
            tied++;
        else
            printf("# %s: %s is not tied to %s\n", label, prog->procs[i].name, parent_name);
        free(parent_name);
    }
    if (parts)
        CHECK(tied == parts, "%s: %u of %u .cold parts tied to their parent", label, tied, parts);
}

/* ---- the file's own bytes -------------------------------------------- */

typedef struct {
    int fd;
    Elf *elf;
} elf_file;

static bool elf_open(elf_file *ef, const char *path)
{
    elf_version(EV_CURRENT);
    ef->fd = open(path, O_RDONLY);
    ef->elf = ef->fd < 0 ? NULL : elf_begin(ef->fd, ELF_C_READ, NULL);
    return ef->elf != NULL;
}

static void elf_close(elf_file *ef)
{
    if (ef->elf)
        elf_end(ef->elf);
    if (ef->fd >= 0)
        close(ef->fd);
}

/* Copy `len` bytes at link-time address `addr` from the section holding them. */
static bool read_at(elf_file *ef, uint64_t addr, void *out, size_t len)
{
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(ef->elf, scn));) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !(sh.sh_flags & SHF_ALLOC))
            continue;
        if (addr < sh.sh_addr || addr + len > sh.sh_addr + sh.sh_size)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        if (!d || d->d_size < (addr - sh.sh_addr) + len)
            return false;
        memcpy(out, (const uint8_t *)d->d_buf + (addr - sh.sh_addr), len);
        return true;
    }
    return false;
}

/* The `n` targets of the switch table used by procedure `p`, read from the
 * file: either an absolute table (`jmp *T(,%r,8)` / `mov T(,%r,8),%r`, non-PIE)
 * or a table of 32-bit offsets from its own base T (`lea T(%rip),%r` …
 * `movslq (%r,%r,4),%r`; `add`; `jmp *%r`), as gcc and clang emit in PIE. */
static size_t read_switch_table(const char *path, const mt_procedure *p, uint64_t *out, size_t n)
{
    elf_file ef;
    size_t got = 0;
    if (!elf_open(&ef, path) || p->size == 0 || p->size > 65536) {
        elf_close(&ef);
        return 0;
    }
    uint8_t *code = mt_xmalloc(p->size);
    csh cs;
    cs_open(CS_ARCH_X86, CS_MODE_64, &cs);
    cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
    cs_insn *insn = NULL;
    size_t count = read_at(&ef, p->entry, code, p->size) ? cs_disasm(cs, code, p->size, p->entry, 0, &insn) : 0;
    uint64_t absolute = 0, relative = 0;
    for (size_t i = 0; i < count && !absolute; i++) {
        const cs_x86 *x = &insn[i].detail->x86;
        for (int k = 0; k < x->op_count; k++) {
            const cs_x86_op *op = &x->operands[k];
            if (op->type != X86_OP_MEM)
                continue;
            if (op->mem.scale == 8 && op->mem.base == X86_REG_INVALID && op->mem.index != X86_REG_INVALID &&
                op->mem.disp > 0)
                absolute = (uint64_t)op->mem.disp;
            else if (insn[i].id == X86_INS_LEA && op->mem.base == X86_REG_RIP && !relative)
                relative = insn[i].address + insn[i].size + (uint64_t)op->mem.disp;
        }
    }
    for (got = 0; got < n; got++) {
        if (absolute) {
            if (!read_at(&ef, absolute + 8 * got, &out[got], 8))
                break;
        } else if (relative) {
            int32_t off;
            if (!read_at(&ef, relative + 4 * got, &off, 4))
                break;
            out[got] = relative + (uint64_t)(int64_t)off;
        } else {
            break;
        }
    }
    cs_free(insn, count);
    cs_close(&cs);
    free(code);
    elf_close(&ef);
    return got;
}

/* ---- matmul ------------------------------------------------------------ */

static void test_matmul(const char *build)
{
    mt_program *prog = load("matmul", build);
    if (!prog)
        return;
    const char *names[] = {"matmul_rows", "matmul_cols"};
    for (int i = 0; i < 2; i++) {
        const mt_procedure *p = proc(prog, names[i]);
        if (level_is(build, "-O3"))
            CHECK(p && p->resolved && max_loop_depth(p) == 3 && p->nloops >= 3,
                  "matmul-%s: %s holds a loop nest of depth 3, nothing deeper (got depth %u, %u loops)", build,
                  names[i], max_loop_depth(p), p ? p->nloops : 0);
        else
            CHECK(p && p->resolved && is_chain_of_three(p),
                  "matmul-%s: %s is exactly a nest of 3 loops, depths 1-2-3 (got depth %u, %u loops)", build,
                  names[i], max_loop_depth(p), p ? p->nloops : 0);
        /* The multiply-add is in the innermost loop. */
        uint32_t fma_line = source_line("matmul.c", "sum += a[i][k]", i + 1);
        bool inner_has_fma = false;
        for (uint32_t l = 0; p && l < p->nloops; l++)
            if (p->loops[l].depth == 3 && loop_has_line(p, &p->loops[l], fma_line))
                inner_has_fma = true;
        CHECK(prog->has_dwarf_lines && inner_has_fma, "matmul-%s: %s's depth-3 loop holds line %u (sum += a*b)",
              build, names[i], fma_line);
    }
    mt_elf_kind kind = level_is(build, "nopie") || is_static(build) ? MT_ELF_EXEC : MT_ELF_PIE;
    CHECK(prog->kind == kind && prog->static_linked == is_static(build), "matmul-%s: ELF kind %d, static %d",
          build, prog->kind, prog->static_linked);
    mt_program_free(prog);
}

/* ---- control ----------------------------------------------------------- */

/* Source lines of `case 0:` … `case 9:` and `default:` in control.c. */
static bool case_lines(uint32_t lines[11])
{
    char label[32];
    for (int k = 0; k < 10; k++) {
        snprintf(label, sizeof label, "case %d:", k);
        lines[k] = source_line("control.c", label, 1);
    }
    lines[10] = source_line("control.c", "default:", 1);
    for (int k = 0; k < 11; k++)
        if (!lines[k] || (k && lines[k] <= lines[k - 1]))
            return false;
    return true;
}

static const mt_block *table_jump_block(const mt_procedure *p, uint32_t *count)
{
    const mt_block *tb = NULL;
    *count = 0;
    for (uint32_t b = 0; b < p->nblocks; b++)
        if (p->blocks[b].term == MT_TERM_TABLE_JUMP) {
            ++*count;
            tb = &p->blocks[b];
        }
    return tb;
}

static void test_switch(const char *build, const mt_procedure *p)
{
    uint32_t tables;
    const mt_block *tb = table_jump_block(p, &tables);
    CHECK(p->resolved && tables == 1, "control-%s: dispatch's switch is one recovered jump table (%u)", build,
          tables);
    if (tables != 1)
        return;
    uint64_t ours[64];
    size_t nours = 0;
    for (uint32_t k = 0; k < tb->nsucc && nours < 64; k++)
        if (p->edges[tb->first_succ + k].dst != MT_NONE)
            ours[nours++] = p->blocks[p->edges[tb->first_succ + k].dst].start;
    nours = sort_unique(ours, nours);

    /* Independent source 1: the table in the file (cases 0..9: 10 entries). */
    char path[4096];
    snprintf(path, sizeof path, "%s/control-%s", samples_dir, build);
    uint64_t table[10];
    size_t n = read_switch_table(path, p, table, 10);
    bool read_all = n == 10;
    n = sort_unique(table, n);
    bool same = read_all && n == nours && memcmp(table, ours, n * sizeof *table) == 0;
    CHECK(same, "control-%s: jump-table targets equal the 10-entry table read from the file (%zu vs %zu distinct)",
          build, n, nours);

    /* Independent source 2: DWARF lines.  Each case's code starts on its own
     * source line(s), so every case k must own a target whose first line lies
     * between `case k:` and the next label. */
    uint32_t lines[11];
    bool lines_ok = case_lines(lines);
    uint32_t covered = 0;
    for (int k = 0; lines_ok && k < 10; k++) {
        bool found = false;
        for (size_t i = 0; i < nours && !found; i++) {
            uint32_t line = p->blocks[mt_block_at(p, ours[i])].line;
            found = line >= lines[k] && line < lines[k + 1];
        }
        covered += found;
        if (!found)
            printf("# control-%s: no table target on the lines of case %d (%u-%u)\n", build, k, lines[k],
                   lines[k + 1] - 1);
    }
    CHECK(lines_ok && covered == 10, "control-%s: each of the 10 cases has a table target on its source lines (%u)",
          build, covered);
}

/* Is block `b` dominated by block `dom` (walking the dominator tree)? */
static bool dominated_by(const mt_procedure *p, uint32_t b, uint32_t dom)
{
    for (uint32_t steps = 0; b != MT_NONE && steps <= p->nblocks; steps++, b = p->blocks[b].idom)
        if (b == dom)
            return true;
    return false;
}

static void test_control(const char *build)
{
    mt_program *prog = load("control", build);
    if (!prog)
        return;
    const mt_procedure *ff = proc(prog, "find_first");
    CHECK(ff && ff->nloops == 1 && ff->loops[0].nexit_edges == 2,
          "control-%s: find_first is one loop with 2 exits, the break and the condition (%u loops, %u exits)",
          build, ff ? ff->nloops : 0, ff && ff->nloops ? ff->loops[0].nexit_edges : 0);

    const mt_procedure *d = proc(prog, "dispatch");
    if (d)
        test_switch(build, d);
    else
        CHECK(false, "control-%s: dispatch found", build);
    /* The loop of case 3 is outermost and lies behind the switch: its header
     * is dominated by the block that jumps through the table. */
    uint32_t tables = 0, behind = 0;
    const mt_block *tb = d ? table_jump_block(d, &tables) : NULL;
    for (uint32_t l = 0; tb && l < d->nloops; l++)
        behind += dominated_by(d, d->loops[l].header, (uint32_t)(tb - d->blocks));
    CHECK(d && d->nloops >= 1 && all_outermost(d) && tb && behind == d->nloops,
          "control-%s: the loop(s) inside case 3 are outermost and dominated by the table jump (%u loops, %u behind)",
          build, d ? d->nloops : 0, behind);

    const mt_procedure *ap = proc(prog, "apply");
    bool indirect = false;
    for (uint32_t c = 0; ap && c < ap->ncalls; c++)
        indirect |= ap->calls[c].kind == MT_CALL_INDIRECT;
    CHECK(ap && indirect && !ap->estimable, "control-%s: apply calls through a pointer and is not estimable", build);
    const mt_procedure *tw = proc(prog, "twice"), *sq = proc(prog, "square");
    CHECK(tw && sq && tw->address_taken && sq->address_taken, "control-%s: twice and square have their address taken",
          build);
    const mt_procedure *fib = proc(prog, "fib");
    CHECK(fib && fib->recursive, "control-%s: fib is recursive", build);
    /* gcc -O2/-O3 moves dispatch's unlikely default path to dispatch.cold. */
    if (strncmp(build, "gcc-O", 5) == 0 && build[5] != '0' && !is_static(build)) {
        const mt_procedure *cold = proc(prog, "dispatch.cold");
        CHECK(cold && d && cold->parent == (uint32_t)(d - prog->procs), "control-%s: dispatch.cold is tied to dispatch",
              build);
    }
    const mt_procedure *bail = proc(prog, "bail");
    CHECK(bail && bail->noreturn, "control-%s: bail (longjmp) never returns", build);
    if (!prog->static_linked)
        CHECK(proc(prog, "_setjmp@plt") || proc(prog, "setjmp@plt"), "control-%s: setjmp's PLT stub named", build);
    check_cold_parts(prog, "control");
    mt_program_free(prog);
}

/* ---- callgraph --------------------------------------------------------- */

static void test_callgraph(const char *build)
{
    mt_program *prog = load("callgraph", build);
    if (!prog)
        return;
    CHECK(has_edge(prog, "main", "a") && has_edge(prog, "main", "b") && has_edge(prog, "a", "shared") &&
              has_edge(prog, "b", "shared") && has_edge(prog, "main", "leafy") && has_edge(prog, "leafy", "leaf1") &&
              has_edge(prog, "leafy", "leaf2") && has_edge(prog, "main", "countdown") &&
              has_edge(prog, "countdown", "countdown"),
          "callgraph-%s: call-graph edges from the source", build);
    /* gcc -O2 may turn a's call to shared into a tail jump; either is direct. */
    CHECK(edge_kind_is(prog, "main", "a", MT_CALL_DIRECT) && edge_kind_is(prog, "main", "leafy", MT_CALL_DIRECT) &&
              (edge_kind_is(prog, "a", "shared", MT_CALL_DIRECT) || edge_kind_is(prog, "a", "shared", MT_CALL_TAIL)),
          "callgraph-%s: edges to procedures of the file are direct (or tail) calls", build);
    const mt_procedure *a = proc(prog, "a"), *b = proc(prog, "b"), *sh = proc(prog, "shared"),
                       *l = proc(prog, "leafy"), *l1 = proc(prog, "leaf1"), *l2 = proc(prog, "leaf2"),
                       *cd = proc(prog, "countdown"), *m = proc(prog, "main");
    CHECK(a && b && !a->estimable && !b->estimable && sh && sh->estimable,
          "callgraph-%s: a and b share a callee: not estimable; shared is", build);
    CHECK(l && l1 && l2 && l->estimable && l1->estimable && l2->estimable && l->tdes == 3 && l->tot == 3,
          "callgraph-%s: leaf-only subtree estimable, Tot = TDES = 3", build);
    CHECK(cd && cd->recursive && cd->estimable && a && !a->recursive && l && !l->recursive,
          "callgraph-%s: self-recursive countdown flagged recursive and estimable; a, leafy not recursive", build);
    if (!prog->static_linked) {
        CHECK(m && m->estimable, "callgraph-%s: main estimable (library calls are measured, not predicted)", build);
        CHECK(proc(prog, "printf@plt") && proc(prog, "printf@plt")->is_plt &&
                  edge_kind_is(prog, "main", "printf@plt", MT_CALL_PLT),
              "callgraph-%s: main calls printf through its PLT stub printf@plt", build);
    } else {
        CHECK(prog->nprocs > 500 && m && proc(prog, "printf"), "callgraph-%s: static binary: %u procedures incl. libc",
              build, prog->nprocs);
    }
    mt_program_free(prog);
}

/* ---- linked, threads --------------------------------------------------- */

static bool loop_reads_memory(const mt_procedure *p)
{
    for (uint32_t l = 0; p && l < p->nloops; l++)
        for (uint32_t i = 0; i < p->loops[l].nblocks; i++)
            if (p->blocks[p->loops[l].blocks[i]].mem_reads)
                return true;
    return false;
}

static void test_linked(const char *build)
{
    mt_program *prog = load("linked", build);
    if (!prog)
        return;
    const char *kernels[] = {"walk", "triad", "polynomial"};
    for (int i = 0; i < 3; i++) {
        const mt_procedure *p = proc(prog, kernels[i]);
        CHECK(p && p->resolved && p->nloops >= 1 && all_outermost(p) && p->ncalls == 0 && p->estimable,
              "linked-%s: %s is a call-free leaf with only outermost loops (%u), estimable", build, kernels[i],
              p ? p->nloops : 0);
    }
    const mt_procedure *w = proc(prog, "walk"), *t = proc(prog, "triad");
    CHECK(w && w->nloops == 1 && loop_reads_memory(w) && loop_reads_memory(t),
          "linked-%s: walk is one loop; walk's and triad's loops read memory", build);
    mt_program_free(prog);
}

static void test_threads(const char *build)
{
    mt_program *prog = load("threads", build);
    if (!prog)
        return;
    const mt_procedure *w = proc(prog, "worker");
    uint32_t wi = mt_find_procedure(prog, "worker");
    bool called_directly = false;
    for (uint32_t e = 0; e < prog->ncg_edges; e++)
        called_directly |= prog->cg_edges[e].callee == wi;
    CHECK(w && w->address_taken && !called_directly && w->nloops >= 1 && all_outermost(w),
          "threads-%s: worker is reached through a pointer only and holds outermost loop(s)", build);
    /* Static glibc names it __pthread_create (one of its aliases). */
    uint32_t m = mt_find_procedure(prog, "main");
    bool calls_create = false;
    for (uint32_t e = 0; m != MT_NONE && e < prog->ncg_edges; e++)
        if (prog->cg_edges[e].caller == m) {
            const mt_procedure *callee = &prog->procs[prog->cg_edges[e].callee];
            calls_create |= strstr(callee->name, "pthread_create") && callee->is_plt == !prog->static_linked;
        }
    CHECK(calls_create, "threads-%s: main calls pthread_create (%s)", build,
          prog->static_linked ? "direct" : "through the PLT");
    mt_program_free(prog);
}

/* ---- C++, Fortran ------------------------------------------------------ */

static void test_exceptions(const char *build)
{
    mt_program *prog = load("exceptions", build);
    if (!prog)
        return;
    CHECK(has_edge(prog, "main", "_Z7catcheri") && has_edge(prog, "_Z7catcheri", "_Z6middlei") &&
              has_edge(prog, "_Z6middlei", "_Z7throweri"),
          "exceptions-%s: main -> catcher -> middle -> thrower", build);
    const mt_procedure *thr = proc(prog, "__cxa_throw@plt"), *resume = proc(prog, "_Unwind_Resume@plt");
    CHECK(thr && thr->noreturn && resume && resume->noreturn,
          "exceptions-%s: __cxa_throw@plt and _Unwind_Resume@plt never return", build);
    const char *names[] = {"_Z7throweri", "_Z6middlei", "_Z7catcheri"};
    bool resolved = true;
    for (int i = 0; i < 3; i++)
        resolved &= proc(prog, names[i]) && proc(prog, names[i])->resolved;
    CHECK(resolved, "exceptions-%s: thrower, middle, catcher resolved", build);
    /* The unwinder enters a landing pad: its procedure is not entered only
     * at its entry. */
    uint32_t with_pads = 0, wrong = 0;
    for (uint32_t i = 0; i < prog->nprocs; i++) {
        const mt_procedure *p = &prog->procs[i];
        bool pad = false;
        for (uint32_t e = 0; e < p->nedges; e++)
            pad |= p->edges[e].kind == MT_EDGE_EXCEPTION && p->edges[e].dst != MT_NONE;
        with_pads += pad;
        wrong += pad && p->entry_only;
    }
    CHECK(with_pads > 0 && wrong == 0, "exceptions-%s: no procedure with a landing pad is entry_only (%u of %u)",
          build, wrong, with_pads);
    check_cold_parts(prog, "exceptions");
    mt_program_free(prog);
}

static void test_doloop(const char *build)
{
    mt_program *prog = load("doloop", build);
    if (!prog)
        return;
    const mt_procedure *mm = proc(prog, "mm_");
    if (level_is(build, "-O3"))
        CHECK(mm && max_loop_depth(mm) == 3, "doloop-%s: mm_ holds a DO nest of depth 3, nothing deeper (got %u)",
              build, max_loop_depth(mm));
    else
        CHECK(mm && mm->resolved && is_chain_of_three(mm), "doloop-%s: mm_ is exactly a nest of 3 DO loops (%u loops)",
              build, mm ? mm->nloops : 0);
    CHECK(has_edge(prog, "main", "MAIN__") && has_edge(prog, "MAIN__", "mm_"), "doloop-%s: main -> MAIN__ -> mm_",
          build);
    mt_program_free(prog);
}

/* ---- stripped ---------------------------------------------------------- */

static void test_stripped(const char *program, const char *build)
{
    char stripped_build[64];
    snprintf(stripped_build, sizeof stripped_build, "%s-stripped", build);
    mt_program *full = load(program, build), *stripped = load(program, stripped_build);
    if (full && stripped) {
        uint32_t missing = 0, covered = 0;
        for (uint32_t i = 0; i < full->nprocs; i++) {
            if (!(full->procs[i].sources & (MT_SRC_EH_FRAME | MT_SRC_PLT)))
                continue;
            covered++;
            uint32_t j = mt_procedure_at(stripped, full->procs[i].entry);
            if (j == MT_NONE || stripped->procs[j].entry != full->procs[i].entry) {
                if (missing++ < 3)
                    printf("# %s-%s: %s at 0x%llx not found\n", program, stripped_build, full->procs[i].name,
                           (unsigned long long)full->procs[i].entry);
            }
        }
        CHECK(stripped->stripped && !full->stripped && covered > 5 && missing == 0,
              "%s-%s: all %u FDE- or PLT-covered procedures found at the same entries (%u missing)", program,
              stripped_build, covered, missing);
        /* Procedures known only from .symtab (crt's _init, frame_dummy,
         * register_tm_clones, ...: no FDE, reached only through DT_INIT or
         * .init_array) are legitimately lost by stripping: reported, not judged. */
        CHECK(stripped->nprocs >= covered, "%s-%s: %u procedures found, at least the %u covered ones", program,
              stripped_build, stripped->nprocs, covered);
        printf("# %s-%s: %u procedures, %u in the unstripped binary\n", program, stripped_build, stripped->nprocs,
               full->nprocs);
    }
    if (full)
        mt_program_free(full);
    if (stripped)
        mt_program_free(stripped);
}

/* ---- indirect ---------------------------------------------------------- */

/* Blocks of `p` ending in a tail call to an unknown target (an indirect
 * jmp taken for a tail call). */
static uint32_t indirect_tail_calls(const mt_procedure *p)
{
    uint32_t n = 0;
    for (uint32_t b = 0; p && b < p->nblocks; b++) {
        const mt_block *blk = &p->blocks[b];
        for (uint32_t e = 0; blk->term == MT_TERM_TAIL_CALL && e < blk->nsucc; e++)
            n += p->edges[blk->first_succ + e].target == 0;
    }
    return n;
}

static uint32_t table_targets(const mt_procedure *p)
{
    uint32_t n = 0;
    for (uint32_t b = 0; p && b < p->nblocks; b++)
        for (uint32_t e = 0; p->blocks[b].term == MT_TERM_TABLE_JUMP && e < p->blocks[b].nsucc; e++)
            n++;
    return n;
}

static void test_indirect(const char *build)
{
    mt_program *prog = load("indirect", build);
    if (!prog)
        return;
    bool optimized = !level_is(build, "O0");
    /* At -O2/-O3 both compilers end via_field and via_table with
     * `jmp *%rax` / `jmp *mem` once the frame is gone (checked with objdump). */
    const char *tails[] = {"via_field", "via_table"};
    for (int k = 0; k < 2; k++) {
        const mt_procedure *p = proc(prog, tails[k]);
        CHECK(p && p->resolved && indirect_tail_calls(p) == (optimized ? 1u : 0u),
              "indirect-%s: %s is resolved with %u indirect tail call(s) (%u)", build, tails[k],
              optimized ? 1u : 0u, indirect_tail_calls(p));
    }
    /* encode: one table, the 5 cases and the default (the loop exit may
     * share a target); never a tail call. */
    const mt_procedure *enc = proc(prog, "encode");
    CHECK(enc && enc->resolved && table_targets(enc) >= 5 && indirect_tail_calls(enc) == 0,
          "indirect-%s: encode's switch on rc->symbols[rc->pos] is a recovered table (%u targets)", build,
          table_targets(enc));
    /* Jumps inside their procedure are never tail calls: options' switch
     * (resolved, or unresolved where gcc keeps the table base across a call
     * by interprocedural register allocation) and the computed gotos of
     * threaded, whose label table is data and whose frame is empty. */
    const mt_procedure *opt = proc(prog, "options"), *thr = proc(prog, "threaded");
    CHECK(opt && indirect_tail_calls(opt) == 0 && (!opt->resolved || table_targets(opt) >= 10),
          "indirect-%s: options' switch is a table or unresolved, never a tail call (%u targets)", build,
          table_targets(opt));
    CHECK(thr && !thr->resolved && indirect_tail_calls(thr) == 0,
          "indirect-%s: threaded's computed gotos leave it unresolved, not tail calls", build);
    /* Only the entry enters set_unless; threaded's labels are in data. */
    const mt_procedure *set = proc(prog, "set_unless");
    CHECK(set && set->entry_only && thr && !thr->entry_only,
          "indirect-%s: set_unless is entered only at its entry, threaded also at its labels", build);
    if (set && optimized && level_is(build, "gcc"))
        CHECK(set->nblocks >= 2 && set->blocks[1].start < set->entry + 5 + (level_is(build, "cet") ? 4 : 0),
              "indirect-%s: set_unless has a block under its entry jump (0x%llx, entry 0x%llx)", build,
              set && set->nblocks >= 2 ? (unsigned long long)set->blocks[1].start : 0ull,
              set ? (unsigned long long)set->entry : 0ull);
    mt_program_free(prog);
}

/* Every m-object of a program written as a --time spec
 * (mt_timed_object_format) reads back as itself (mt_timed_object_parse):
 * procedures, reducible loops, and the regions between consecutive cut
 * points and from the last one to the returns. */
static bool spec_round_trips(const mt_program *prog, const mt_timed_object *o)
{
    char spec[1024];
    mt_timed_object back;
    mt_error err;
    mt_timed_object_format(prog, o, spec, sizeof spec);
    return mt_timed_object_parse(prog, spec, &back, &err) == 0 && back.proc == o->proc &&
           back.loop == o->loop && back.region == o->region &&
           (!o->region ||
            (back.region_first == o->region_first && back.region_end == o->region_end));
}

static void test_time_specs(const char *program, const char *build)
{
    mt_program *prog = load(program, build);
    if (!prog)
        return;
    uint32_t objects = 0, bad = 0;
    for (uint32_t p = 0; p < prog->nprocs; p++) {
        if (mt_find_procedure(prog, prog->procs[p].name) != p)
            continue; /* a name shared by two procedures names the first */
        mt_timed_object o = {.proc = p, .loop = MT_NONE, .region_first = MT_NONE,
                             .region_end = MT_NONE};
        objects++, bad += !spec_round_trips(prog, &o);
        for (uint32_t l = 0; l < prog->procs[p].nloops; l++)
            if (!prog->procs[p].loops[l].irreducible) {
                o.loop = l;
                objects++, bad += !spec_round_trips(prog, &o);
            }
        o.loop = MT_NONE;
        uint32_t *cuts = NULL, n = mt_region_cuts(prog, p, &cuts);
        for (uint32_t k = 0; k < n; k++) {
            o = (mt_timed_object){.proc = p, .loop = MT_NONE, .region = true,
                                  .region_first = cuts[k],
                                  .region_end = k + 1 < n ? cuts[k + 1] : MT_NONE};
            objects++, bad += !spec_round_trips(prog, &o);
        }
        free(cuts);
    }
    CHECK(bad == 0 && objects > 0, "%s-%s: %u m-objects' --time specs read back as themselves "
          "(%u did not)", program, build, objects, bad);
    mt_program_free(prog);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s SAMPLES_DIR SOURCE_DIR\n", argv[0]);
        return 2;
    }
    samples_dir = argv[1];
    source_dir = argv[2];
    for (size_t i = 0; i < MT_ARRAY_LEN(c_builds); i++) {
        test_matmul(c_builds[i]);
        test_control(c_builds[i]);
        test_callgraph(c_builds[i]);
        test_linked(c_builds[i]);
        test_threads(c_builds[i]);
        test_indirect(c_builds[i]);
    }
    test_time_specs("control", "gcc-O2");
    test_time_specs("matmul", "clang-O0");
    test_time_specs("exceptions", "gxx-O2");
    for (size_t i = 0; i < MT_ARRAY_LEN(cxx_builds); i++)
        test_exceptions(cxx_builds[i]);
    for (size_t i = 0; i < MT_ARRAY_LEN(fortran_builds); i++)
        test_doloop(fortran_builds[i]);
    const char *stripped_programs[] = {"matmul", "control", "callgraph", "linked", "threads", "exceptions"};
    for (size_t i = 0; i < MT_ARRAY_LEN(stripped_programs); i++)
        test_stripped(stripped_programs[i], i == 5 ? "gxx-O2" : "gcc-O2");
    return unit_finish();
}
