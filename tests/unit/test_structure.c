/* Structure tests: mt_analyze() on the samples (the programs in samples/, built by
 * samples/Makefile), whose loops, switch, call graph and estimability are
 * known from their source.  Jump tables are checked against the table read
 * straight from the file (non-PIE) and against DWARF lines of the cases.
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
#include "unit.h"

static const char *samples_dir, *source_dir;
static const char *const builds[] = {"gcc-O0",       "gcc-O2",         "gcc-O3",         "clang-O0",
                                     "clang-O2",     "clang-O3",       "gcc-O2-nopie",   "clang-O2-nopie",
                                     "gcc-O2-static", "gcc-O2-cet"};

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

static void test_matmul(const char *build)
{
    mt_program *prog = load("matmul", build);
    if (!prog)
        return;
    const char *names[] = {"matmul_rows", "matmul_cols"};
    for (int i = 0; i < 2; i++) {
        const mt_procedure *p = proc(prog, names[i]);
        CHECK(p && p->resolved && max_loop_depth(p) == 3, "matmul-%s: %s holds a loop nest of depth 3 (got %u)",
              build, names[i], max_loop_depth(p));
    }
    CHECK(prog->kind == (strstr(build, "nopie") ? MT_ELF_EXEC : strstr(build, "static") ? prog->kind : MT_ELF_PIE),
          "matmul-%s: ELF kind", build);
    mt_program_free(prog);
}

/* First and last source line of `switch (op)` … `default:` in control.c. */
static void case_lines(uint32_t *first, uint32_t *last)
{
    char path[4096], line[512];
    snprintf(path, sizeof path, "%s/control.c", source_dir);
    FILE *fp = fopen(path, "r");
    *first = *last = 0;
    for (uint32_t n = 1; fp && fgets(line, sizeof line, fp); n++) {
        if (strstr(line, "switch (op)"))
            *first = n;
        if (*first && !*last && strstr(line, "default:"))
            *last = n;
    }
    if (fp)
        fclose(fp);
}

/* The absolute table of a non-PIE switch, read from the file: the operand
 * of `jmp *disp(,%reg,8)` or `mov disp(,%reg,8),%reg` in the procedure. */
static size_t read_absolute_table(const char *path, const mt_procedure *p, uint64_t *out, size_t max)
{
    int fd = open(path, O_RDONLY);
    elf_version(EV_CURRENT);
    Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
    size_t n = 0;
    csh cs;
    cs_open(CS_ARCH_X86, CS_MODE_64, &cs);
    cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
    uint64_t table = 0;
    for (Elf_Scn *scn = NULL; elf && (scn = elf_nextscn(elf, scn));) {
        GElf_Shdr sh;
        gelf_getshdr(scn, &sh);
        Elf_Data *d = elf_getdata(scn, NULL);
        if (!d || sh.sh_type == SHT_NOBITS)
            continue;
        if (!table && p->entry >= sh.sh_addr && p->entry + p->size <= sh.sh_addr + sh.sh_size) {
            cs_insn *insn;
            size_t count = cs_disasm(cs, (const uint8_t *)d->d_buf + (p->entry - sh.sh_addr), p->size, p->entry, 0, &insn);
            for (size_t i = 0; i < count && !table; i++)
                for (int k = 0; k < insn[i].detail->x86.op_count; k++) {
                    const cs_x86_op *op = &insn[i].detail->x86.operands[k];
                    if (op->type == X86_OP_MEM && op->mem.scale == 8 && op->mem.base == X86_REG_INVALID &&
                        op->mem.index != X86_REG_INVALID && op->mem.disp > 0)
                        table = (uint64_t)op->mem.disp;
                }
            cs_free(insn, count);
            scn = NULL; /* rescan for the table's section */
            if (!table)
                break;
            continue;
        }
        if (table && table >= sh.sh_addr && table + 8 * max <= sh.sh_addr + sh.sh_size) {
            for (n = 0; n < max; n++)
                memcpy(&out[n], (const uint8_t *)d->d_buf + (table - sh.sh_addr) + 8 * n, 8);
            break;
        }
    }
    cs_close(&cs);
    if (elf)
        elf_end(elf);
    close(fd);
    return n;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static size_t sort_unique(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_u64);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!m || v[m - 1] != v[i])
            v[m++] = v[i];
    return m;
}

static void test_switch(const char *build, const mt_program *prog)
{
    const mt_procedure *p = proc(prog, "dispatch");
    if (!p) {
        CHECK(false, "control-%s: dispatch found", build);
        return;
    }
    uint32_t tables = 0, table_block = MT_NONE;
    for (uint32_t b = 0; b < p->nblocks; b++)
        if (p->blocks[b].term == MT_TERM_TABLE_JUMP) {
            tables++;
            table_block = b;
        }
    CHECK(p->resolved && tables == 1, "control-%s: dispatch's switch is one recovered jump table", build);
    if (tables != 1)
        return;
    uint64_t ours[64];
    size_t nours = 0;
    const mt_block *tb = &p->blocks[table_block];
    for (uint32_t k = 0; k < tb->nsucc && nours < 64; k++)
        ours[nours++] = p->blocks[p->edges[tb->first_succ + k].dst].start;
    nours = sort_unique(ours, nours);

    uint32_t first, last;
    case_lines(&first, &last);
    bool lines_ok = first && last;
    for (size_t i = 0; i < nours; i++) {
        uint32_t b = mt_block_at(p, ours[i]);
        uint32_t line = b == MT_NONE ? 0 : p->blocks[b].line;
        if (line < first || line > last)
            lines_ok = false;
    }
    CHECK(lines_ok && nours >= 9, "control-%s: %zu table targets, each on a case line of the switch (%u-%u)", build,
          nours, first, last);

    if (strstr(build, "nopie")) {
        char path[4096];
        snprintf(path, sizeof path, "%s/control-%s", samples_dir, build);
        uint64_t table[10];
        size_t n = sort_unique(table, read_absolute_table(path, p, table, 10)); /* cases 0..9 */
        bool same = n == nours && memcmp(table, ours, n * sizeof *table) == 0;
        CHECK(same, "control-%s: targets equal the 10-entry table read from the file (%zu vs %zu)", build, n, nours);
    }
}

static void test_control(const char *build)
{
    mt_program *prog = load("control", build);
    if (!prog)
        return;
    const mt_procedure *ff = proc(prog, "find_first");
    uint32_t exits = 0;
    for (uint32_t l = 0; ff && l < ff->nloops; l++)
        if (ff->loops[l].depth == 1 && ff->loops[l].nexit_edges > exits)
            exits = ff->loops[l].nexit_edges;
    CHECK(exits >= 2, "control-%s: find_first's while loop has >= 2 exits (break and condition; got %u)", build,
          exits);
    test_switch(build, prog);
    const mt_procedure *d = proc(prog, "dispatch");
    CHECK(d && d->nloops >= 1 && d->loops[0].depth == 1, "control-%s: the loop inside case 3 is an outermost loop",
          build);
    const mt_procedure *ap = proc(prog, "apply");
    bool indirect = false;
    for (uint32_t c = 0; ap && c < ap->ncalls; c++)
        indirect |= ap->calls[c].kind == MT_CALL_INDIRECT;
    CHECK(ap && indirect && !ap->estimable, "control-%s: apply calls through a pointer and is not estimable", build);
    const mt_procedure *fib = proc(prog, "fib");
    CHECK(fib && fib->recursive, "control-%s: fib is recursive", build);
    /* gcc -O2/-O3 moves dispatch's unlikely default path to dispatch.cold. */
    if (strncmp(build, "gcc-O", 5) == 0 && build[5] != '0' && !strstr(build, "static")) {
        const mt_procedure *cold = proc(prog, "dispatch.cold");
        CHECK(cold && d && cold->parent == (uint32_t)(d - prog->procs),
              "control-%s: dispatch.cold is tied to dispatch", build);
    }
    const mt_procedure *bail = proc(prog, "bail");
    CHECK(bail && bail->noreturn, "control-%s: bail (longjmp) never returns", build);
    mt_program_free(prog);
}

static bool has_edge(const mt_program *prog, const char *from, const char *to)
{
    uint32_t f = mt_find_procedure(prog, from), t = mt_find_procedure(prog, to);
    for (uint32_t e = 0; e < prog->ncg_edges; e++)
        if (prog->cg_edges[e].caller == f && prog->cg_edges[e].callee == t)
            return true;
    return false;
}

static void test_callgraph(const char *build)
{
    mt_program *prog = load("callgraph", build);
    if (!prog)
        return;
    CHECK(has_edge(prog, "main", "a") && has_edge(prog, "main", "b") && has_edge(prog, "a", "shared") &&
              has_edge(prog, "b", "shared") && has_edge(prog, "main", "leafy") && has_edge(prog, "leafy", "leaf1") &&
              has_edge(prog, "leafy", "leaf2"),
          "callgraph-%s: call-graph edges from the source", build);
    const mt_procedure *a = proc(prog, "a"), *b = proc(prog, "b"), *sh = proc(prog, "shared"),
                       *l = proc(prog, "leafy"), *l1 = proc(prog, "leaf1"), *l2 = proc(prog, "leaf2"),
                       *cd = proc(prog, "countdown"), *m = proc(prog, "main");
    CHECK(a && b && !a->estimable && !b->estimable && sh && sh->estimable,
          "callgraph-%s: a and b share a callee: not estimable; shared is", build);
    CHECK(l && l1 && l2 && l->estimable && l1->estimable && l2->estimable && l->tdes == 3 && l->tot == 3,
          "callgraph-%s: leaf-only subtree estimable, Tot = TDES = 3", build);
    CHECK(cd && cd->recursive && cd->estimable, "callgraph-%s: self-recursive countdown estimable", build);
    if (!prog->static_linked) {
        CHECK(m && m->estimable, "callgraph-%s: main estimable (library calls are measured, not predicted)", build);
        CHECK(proc(prog, "printf@plt") != NULL, "callgraph-%s: PLT stub printf@plt named", build);
    } else {
        CHECK(prog->nprocs > 500 && m, "callgraph-%s: static binary: %u procedures incl. libc", build, prog->nprocs);
    }
    mt_program_free(prog);
}

static void test_stripped(void)
{
    mt_program *full = load("callgraph", "gcc-O2"), *stripped = load("callgraph", "gcc-O2-stripped");
    if (!full || !stripped)
        return;
    uint32_t missing = 0, covered = 0;
    for (uint32_t i = 0; i < full->nprocs; i++) {
        if (!(full->procs[i].sources & MT_SRC_EH_FRAME))
            continue;
        covered++;
        uint32_t j = mt_procedure_at(stripped, full->procs[i].entry);
        if (j == MT_NONE || stripped->procs[j].entry != full->procs[i].entry)
            missing++;
    }
    CHECK(stripped->stripped && covered > 5 && missing == 0,
          "stripped binary: all %u FDE-covered procedures found at the same entries (%u missing)", covered, missing);
    mt_program_free(full);
    mt_program_free(stripped);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s SAMPLES_DIR SOURCE_DIR\n", argv[0]);
        return 2;
    }
    samples_dir = argv[1];
    source_dir = argv[2];
    for (size_t i = 0; i < MT_ARRAY_LEN(builds); i++) {
        test_matmul(builds[i]);
        test_control(builds[i]);
        test_callgraph(builds[i]);
    }
    test_stripped();
    return unit_finish();
}
