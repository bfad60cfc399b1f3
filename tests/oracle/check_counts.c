/* Checks pass-1 block counts against an independent oracle: valgrind's
 * callgrind run on the ORIGINAL binary with --dump-instr=yes
 * --compress-pos=no --compress-strings=no (no jump collection, so every
 * address line carries its Ir cost, except the line after `calls=`, which is
 * the call's inclusive cost and is skipped).
 *
 * For every block mtool counted (counts.tsv written by `mtool count`), the
 * count must equal the number of times callgrind executed the block's first
 * instruction, summed over every callgrind output given (one per process).
 * It also reports coverage: of the blocks of the analysis that callgrind saw
 * execute, how many mtool counted.  A rep-prefixed string instruction is a loop inside valgrind
 * (one Ir per iteration), so a block starting with one is compared on its
 * second instruction when it has one, and skipped otherwise.
 *
 * Calls through pointers: for every `call *X` of a counted procedure that
 * callgrind saw run, call_targets.tsv (next to COUNTS_TSV; X.call_targets.tsv
 * for X.counts.tsv, a library's) must list the
 * same calls per target in the binary, and the same number of calls in all
 * (targets in shared libraries are compared as one sum, a record's overflow
 * standing for the targets it did not name).  Tail jumps through pointers
 * are left out: callgrind does not always call them calls.
 *
 * --at-least N leaves out the blocks both counted fewer than N times: in
 * glibc's libc, what runs before the executable's entry (the loader's calls
 * of __libc_early_init, ifunc resolvers: the original code, uncounted) and
 * at exit differs between the two runs (LD_AUDIT makes the loader take its
 * locks more often; callgrind never counts the block of exit_group), while
 * a block the program runs often must match exactly.
 *
 * usage: check_counts [--at-least N] BINARY COUNTS_TSV CALLGRIND_OUT... */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/analyzer.h"
#include "tests/oracle/callgrind.h"
#include "tests/unit/unit.h"

typedef struct {
    uint64_t addr, count;
} addr_count;

typedef struct {
    addr_count *v;
    size_t n, cap;
} count_list;

static int cmp_addr(const void *a, const void *b) { return cmp_u64(a, b); }

/* Calls from a site in the binary to a target (0: outside the binary). */
typedef struct {
    uint64_t site, target, count;
} call_count;

typedef struct {
    call_count *v;
    size_t n, cap;
} call_list;

static int cmp_call(const void *a, const void *b)
{
    const call_count *x = a, *y = b;
    if (x->site != y->site)
        return x->site < y->site ? -1 : 1;
    return x->target < y->target ? -1 : x->target > y->target;
}

/* Sums the Ir of every cost line of `binary` per address, and collects the
 * calls made from it (`calls=` lines: the callee object is the `cob=` just
 * before, else the caller's; the site is the next cost line's address). */
static void read_callgrind_file(const char *path, const char *binary, count_list *out,
                                call_list *calls)
{
    FILE *fp = fopen(path, "r");
    char line[8192];
    bool in_binary = false, after_calls = false, have_cob = false, cob_in_binary = false;
    call_count pending = {0};
    int npositions = 1; /* "positions: instr line" puts a line number before the cost */
    while (fp && fgets(line, sizeof line, fp)) {
        if (strncmp(line, "positions:", 10) == 0) {
            npositions = 0;
            for (char *t = strtok(line + 10, " \n"); t; t = strtok(NULL, " \n"))
                npositions++;
        } else if (strncmp(line, "ob=", 3) == 0) {
            line[strcspn(line, "\n")] = 0;
            in_binary = same_object(line + 3, binary);
        } else if (strncmp(line, "cob=", 4) == 0) {
            line[strcspn(line, "\n")] = 0;
            have_cob = true;
            cob_in_binary = same_object(line + 4, binary);
        } else if (strncmp(line, "calls=", 6) == 0) {
            char *end;
            pending.count = strtoull(line + 6, &end, 10);
            pending.target = strtoull(end, NULL, 16);
            if (have_cob ? !cob_in_binary : !in_binary)
                pending.target = 0;
            have_cob = false;
            after_calls = true;
            continue;
        } else if (strncmp(line, "0x", 2) == 0 && in_binary && after_calls) {
            pending.site = strtoull(line, NULL, 16);
            MT_PUSH(calls->v, calls->n, calls->cap, pending);
        } else if (strncmp(line, "0x", 2) == 0 && in_binary && !after_calls) {
            char *end;
            addr_count ac = {.addr = strtoull(line, &end, 16)};
            for (int k = 1; k < npositions; k++)
                strtoull(end, &end, 10);
            ac.count = strtoull(end, NULL, 10);
            MT_PUSH(out->v, out->n, out->cap, ac);
        }
        after_calls = false;
    }
    if (fp)
        fclose(fp);
}

/* Sums entries with the same (site, target). */
static void merge_calls(call_list *c)
{
    if (c->n > 1)
        qsort(c->v, c->n, sizeof *c->v, cmp_call);
    size_t m = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (m && cmp_call(&c->v[m - 1], &c->v[i]) == 0)
            c->v[m - 1].count += c->v[i].count;
        else
            c->v[m++] = c->v[i];
    }
    c->n = m;
}

/* Ir per address of `binary`, and its calls, summed over the files. */
static void read_callgrind_counts(char **paths, int n, const char *binary, count_list *out,
                                  call_list *calls)
{
    for (int i = 0; i < n; i++)
        read_callgrind_file(paths[i], binary, out, calls);
    merge_calls(calls);
    if (out->n > 1)
        qsort(out->v, out->n, sizeof *out->v, cmp_addr);
    size_t m = 0;
    for (size_t i = 0; i < out->n; i++) {
        if (m && out->v[m - 1].addr == out->v[i].addr)
            out->v[m - 1].count += out->v[i].count;
        else
            out->v[m++] = out->v[i];
    }
    out->n = m;
}

static uint64_t oracle_count(const count_list *cg, uint64_t addr)
{
    addr_count key = {.addr = addr};
    const addr_count *hit = cg->n ? bsearch(&key, cg->v, cg->n, sizeof key, cmp_addr) : NULL;
    return hit ? hit->count : 0;
}

/* The binary's loaded segments, read once, and its .init and .fini
 * sections: callgrind attributes no cost to the code there (it runs, once). */
typedef struct {
    uint8_t *data;
    size_t size;
    GElf_Phdr loads[32];
    size_t nloads;
    uint64_t unseen_lo[2], unseen_hi[2];
} loaded_file;

static void find_unseen_sections(Elf *elf, loaded_file *f)
{
    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
        GElf_Shdr sh;
        const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
        int k = !name ? -1 : !strcmp(name, ".init") ? 0 : !strcmp(name, ".fini") ? 1 : -1;
        if (k >= 0) {
            f->unseen_lo[k] = sh.sh_addr;
            f->unseen_hi[k] = sh.sh_addr + sh.sh_size;
        }
    }
}

static bool unseen_by_callgrind(const loaded_file *f, uint64_t addr)
{
    for (int k = 0; k < 2; k++)
        if (addr >= f->unseen_lo[k] && addr < f->unseen_hi[k])
            return true;
    return false;
}

static void load_file(const char *path, loaded_file *f)
{
    memset(f, 0, sizeof *f);
    int fd = open(path, O_RDONLY);
    Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
    size_t nph = 0;
    if (elf && elf_getphdrnum(elf, &nph) == 0)
        for (size_t i = 0; i < nph && f->nloads < 32; i++) {
            GElf_Phdr ph;
            if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
                f->loads[f->nloads++] = ph;
        }
    if (elf)
        find_unseen_sections(elf, f);
    off_t size = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;
    if (size > 0) {
        f->data = malloc((size_t)size);
        f->size = f->data && pread(fd, f->data, (size_t)size, 0) == size ? (size_t)size : 0;
    }
    if (elf)
        elf_end(elf);
    if (fd >= 0)
        close(fd);
}

/* The file bytes at link-time address `vaddr` (n of them), or NULL. */
static const uint8_t *bytes_at(const loaded_file *f, uint64_t vaddr, size_t n)
{
    for (size_t i = 0; i < f->nloads; i++) {
        const GElf_Phdr *ph = &f->loads[i];
        if (vaddr >= ph->p_vaddr && vaddr + n <= ph->p_vaddr + ph->p_filesz &&
            ph->p_offset + (vaddr - ph->p_vaddr) + n <= f->size)
            return f->data + ph->p_offset + (vaddr - ph->p_vaddr);
    }
    return NULL;
}

/* The address to compare a block on: its first instruction, or the second
 * when the first is a rep-prefixed string instruction; 0 = skip the block
 * (a lone rep-string instruction, or code callgrind does not record). */
static uint64_t comparable_address(csh cs, const mt_program *prog, const loaded_file *file,
                                   uint64_t start)
{
    uint32_t p = mt_procedure_at(prog, start);
    uint32_t b = p == MT_NONE ? MT_NONE : mt_block_at(&prog->procs[p], start);
    if (unseen_by_callgrind(file, start))
        return 0;
    /* Statically linked C library code (no line information) takes CPU-
     * dependent paths (cpuid, IFUNC choices) that differ on valgrind's
     * emulated CPU: only the program's own code is compared. */
    if (prog->static_linked && b != MT_NONE && prog->procs[p].blocks[b].file == 0)
        return 0;
    if (b == MT_NONE)
        return start;
    const mt_block *blk = &prog->procs[p].blocks[b];
    const uint8_t *code = bytes_at(file, start, 1);
    if (!code)
        return start;
    size_t avail = 15;
    while (avail > 1 && !bytes_at(file, start, avail))
        avail--;
    cs_insn *insn;
    size_t n = cs_disasm(cs, code, avail, start, 1, &insn);
    bool rep = n == 1 && (insn[0].detail->x86.prefix[0] == 0xf3 || insn[0].detail->x86.prefix[0] == 0xf2) &&
               strstr(insn[0].mnemonic, "rep") != NULL;
    uint64_t next = n == 1 ? start + insn[0].size : 0;
    if (n)
        cs_free(insn, n);
    if (!rep)
        return start;
    return blk->ninsns > 1 ? next : 0;
}

/* Executed blocks (per callgrind) of the analysis, and how many were counted.
 * With CHECK_COUNTS_UNCOUNTED set in the environment, also one line per
 * procedure with executed blocks left uncounted (how many, and their summed
 * executions), to find what costs coverage. */
static void print_coverage(csh cs, const mt_program *prog, const loaded_file *file,
                           const count_list *cg, count_list *counted)
{
    if (counted->n > 1)
        qsort(counted->v, counted->n, sizeof *counted->v, cmp_addr);
    bool list = getenv("CHECK_COUNTS_UNCOUNTED") != NULL;
    uint64_t ran = 0, covered = 0;
    for (uint32_t p = 0; p < prog->nprocs; p++) {
        uint64_t lost = 0, lost_runs = 0;
        for (uint32_t b = 0; b < prog->procs[p].nblocks; b++) {
            uint64_t start = prog->procs[p].blocks[b].start, at = comparable_address(cs, prog, file, start);
            uint64_t runs = at ? oracle_count(cg, at) : 0;
            if (runs == 0)
                continue;
            ran++;
            addr_count key = {.addr = start};
            bool hit = counted->n && bsearch(&key, counted->v, counted->n, sizeof key, cmp_addr) != NULL;
            covered += hit;
            lost += !hit;
            lost_runs += hit ? 0 : runs;
        }
        if (list && lost)
            printf("# uncounted: %" PRIu64 " executed blocks (%" PRIu64 " executions) in %s\n", lost,
                   lost_runs, prog->procs[p].name);
    }
    printf("# coverage: %" PRIu64 " of %" PRIu64 " executed blocks counted (%.2f%%)\n", covered, ran,
           ran ? 100.0 * (double)covered / (double)ran : 100.0);
}

static bool in_file(const loaded_file *f, uint64_t addr)
{
    for (size_t i = 0; i < f->nloads; i++)
        if (addr >= f->loads[i].p_vaddr && addr - f->loads[i].p_vaddr < f->loads[i].p_memsz)
            return true;
    return false;
}

/* A site's overflow: the runtime records 15 targets per site, then counts
 * the calls to any other (docs/ARCHITECTURE.md). */
#define OVERFLOW_TARGET UINT64_MAX

/* call_targets.tsv as calls, targets outside the file as 0, a site's
 * overflow as OVERFLOW_TARGET. */
static void read_call_targets(const char *path, const loaded_file *file, call_list *out)
{
    FILE *fp = fopen(path, "r");
    char line[4096];
    while (fp && fgets(line, sizeof line, fp)) {
        if (line[0] == '#')
            continue;
        char *end;
        call_count c = {.site = strtoull(line, &end, 16)};
        /* "overflow": calls past the site's record; "outside" and
         * LIB:0xTARGET: targets in no procedure of the binary (another
         * object's code), compared as callgrind's targets outside the
         * binary are, as one sum */
        size_t field = strcspn(end + 1, "\t");
        bool overflow = strncmp(end + 1, "overflow", 8) == 0,
             outside = strncmp(end + 1, "outside", 7) == 0 || memchr(end + 1, ':', field);
        if (overflow || outside) {
            c.target = overflow ? OVERFLOW_TARGET : 0;
            end += 1 + strcspn(end + 1, "\t");
        } else {
            c.target = strtoull(end + 1, &end, 16);
        }
        c.count = strtoull(end, NULL, 10);
        if (!overflow && !in_file(file, c.target))
            c.target = 0;
        MT_PUSH(out->v, out->n, out->cap, c);
    }
    if (fp)
        fclose(fp);
    merge_calls(out);
}

/* Whether `site` is a `call` through a pointer of a counted procedure (not
 * of static libc code, whose IFUNC choices differ on valgrind's CPU). */
static bool recorded_call(const mt_program *prog, const count_list *counted, uint64_t site)
{
    uint32_t p = mt_procedure_at(prog, site);
    if (p == MT_NONE)
        return false;
    const mt_procedure *proc = &prog->procs[p];
    uint32_t b = mt_block_at(proc, site);
    if (b == MT_NONE || (prog->static_linked && proc->blocks[b].file == 0))
        return false;
    addr_count key = {.addr = proc->entry};
    if (!counted->n || !bsearch(&key, counted->v, counted->n, sizeof key, cmp_addr))
        return false;
    for (uint32_t k = 0; k < proc->ncalls; k++)
        if (proc->calls[k].addr == site)
            return proc->calls[k].kind == MT_CALL_INDIRECT &&
                   proc->blocks[proc->calls[k].block].term == MT_TERM_ICALL;
    return false;
}

/* Where the profile has an overflow at a site, callgrind's calls to the
 * targets it did not record there go to that overflow. */
static void fold_overflow(call_list *want, const call_list *got)
{
    for (size_t i = 0; i < want->n; i++) {
        call_count overflow = {.site = want->v[i].site, .target = OVERFLOW_TARGET};
        if (got->n && bsearch(&overflow, got->v, got->n, sizeof overflow, cmp_call) &&
            !bsearch(&want->v[i], got->v, got->n, sizeof want->v[i], cmp_call))
            want->v[i].target = OVERFLOW_TARGET;
    }
    merge_calls(want);
}

/* Compares the recorded calls through pointers with callgrind's calls. */
static bool check_call_targets(const char *name, const mt_program *prog, const count_list *counted,
                               const call_list *cg, const call_list *recorded)
{
    call_list want = {0}, got = {0};
    for (size_t i = 0; i < cg->n; i++)
        if (recorded_call(prog, counted, cg->v[i].site))
            MT_PUSH(want.v, want.n, want.cap, cg->v[i]);
    for (size_t i = 0; i < recorded->n; i++)
        if (recorded_call(prog, counted, recorded->v[i].site))
            MT_PUSH(got.v, got.n, got.cap, recorded->v[i]);
    fold_overflow(&want, &got);
    uint64_t calls = 0, sites = 0;
    bool same = want.n == got.n;
    for (size_t i = 0; i < want.n && same; i++) {
        same = cmp_call(&want.v[i], &got.v[i]) == 0 && want.v[i].count == got.v[i].count;
        calls += want.v[i].count;
        sites += i == 0 || want.v[i].site != want.v[i - 1].site;
    }
    /* Both lists are sorted by site and target: walk them side by side and
     * show the pairs that differ (a target only one of them saw, or other
     * counts), not the first ones, which may all agree. */
    for (size_t i = 0, j = 0, shown = 0; !same && shown < 10 && (i < want.n || j < got.n);) {
        int order = i == want.n ? 1 : j == got.n ? -1 : cmp_call(&want.v[i], &got.v[j]);
        const call_count *w = order <= 0 ? &want.v[i++] : NULL, *g = order >= 0 ? &got.v[j++] : NULL;
        if (w && g && w->count == g->count)
            continue;
        printf("# calls through pointers: callgrind 0x%" PRIx64 " -> 0x%" PRIx64 " x%" PRIu64
               ", mtool 0x%" PRIx64 " -> 0x%" PRIx64 " x%" PRIu64 " (0 = outside the binary, 0xffffffffffffffff = the site's overflow)\n",
               w ? w->site : 0, w ? w->target : 0, w ? w->count : 0, g ? g->site : 0,
               g ? g->target : 0, g ? g->count : 0);
        shown++;
    }
    if ((want.n || got.n) && same)
        printf("ok - %s: calls through pointers: %" PRIu64 " calls at %" PRIu64
               " sites, every target's calls equal callgrind's\n", name, calls, sites);
    else if (want.n || got.n)
        printf("not ok - %s: calls through pointers: %zu (site, target) pairs recorded, callgrind %zu;"
               " differences above\n", name, got.n, want.n);
    free(want.v);
    free(got.v);
    return same;
}

int main(int argc, char **argv)
{
    uint64_t at_least = 0;
    if (argc > 2 && strcmp(argv[1], "--at-least") == 0) {
        at_least = strtoull(argv[2], NULL, 10);
        argv += 2;
        argc -= 2;
    }
    if (argc < 4) {
        fprintf(stderr, "usage: check_counts [--at-least N] BINARY COUNTS_TSV CALLGRIND_OUT...\n");
        return 2;
    }
    elf_version(EV_CURRENT);
    const char *binary = argv[1], *name = strrchr(binary, '/') ? strrchr(binary, '/') + 1 : binary;
    mt_analyze_options opt;
    mt_analyze_options_init(&opt);
    opt.want_lines = true; /* tells the program's own code from static libc's */
    mt_error err;
    mt_program *prog = mt_analyze(binary, &opt, &err);
    if (!prog) {
        printf("not ok - %s: %s\n", name, err.msg);
        return 1;
    }
    loaded_file file;
    load_file(binary, &file);
    count_list cg = {0};
    call_list cg_calls = {0}, recorded = {0};
    read_callgrind_counts(argv + 3, argc - 3, binary, &cg, &cg_calls);
    /* X.counts.tsv's calls are in X.call_targets.tsv (a library's, in the
     * run directory's libs/), any other file's in call_targets.tsv beside it */
    char *dir = strdup(argv[2]), *slash = strrchr(dir, '/');
    size_t len = strlen(argv[2]), suffix = strlen("counts.tsv");
    char *targets_path = len >= suffix && strcmp(argv[2] + len - suffix, "counts.tsv") == 0
                             ? mt_xasprintf("%.*scall_targets.tsv", (int)(len - suffix), argv[2])
                             : mt_xasprintf("%s/call_targets.tsv", slash ? (*slash = 0, dir) : ".");
    read_call_targets(targets_path, &file, &recorded);
    csh cs;
    cs_open(CS_ARCH_X86, CS_MODE_64, &cs);
    cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
    FILE *fp = fopen(argv[2], "r");
    char line[4096];
    uint64_t blocks = 0, equal = 0, skipped = 0, executed = 0;
    count_list counted = {0};
    int shown = 0;
    while (fp && fgets(line, sizeof line, fp)) {
        if (line[0] == '#')
            continue;
        char *end;
        uint64_t addr = strtoull(line, &end, 16), count = strtoull(end, NULL, 10);
        uint64_t at = comparable_address(cs, prog, &file, addr);
        addr_count ac = {addr, count};
        MT_PUSH(counted.v, counted.n, counted.cap, ac);
        blocks++;
        executed += count != 0;
        if (!at) {
            skipped++;
            continue;
        }
        uint64_t want = oracle_count(&cg, at);
        if (want < at_least && count < at_least)
            skipped++;
        else if (want == count)
            equal++;
        else if (shown++ < 20)
            printf("# block 0x%" PRIx64 ": mtool counted %" PRIu64 ", callgrind executed it %" PRIu64
                   " times\n", addr, count, want);
    }
    if (fp)
        fclose(fp);
    bool ok = fp && blocks > 0 && equal + skipped == blocks && executed > 0;
    printf("%s - %s: %" PRIu64 " of %" PRIu64 " counted blocks equal callgrind's counts (%" PRIu64
           " executed, %" PRIu64 " skipped: a lone rep-string instruction, .init/.fini, static libc code, or run fewer times than --at-least)\n",
           ok ? "ok" : "not ok", name, equal, blocks, executed, skipped);
    print_coverage(cs, prog, &file, &cg, &counted);
    ok &= check_call_targets(name, prog, &counted, &cg_calls, &recorded);
    free(cg_calls.v);
    free(recorded.v);
    free(targets_path);
    free(dir);
    free(file.data);
    cs_close(&cs);
    free(counted.v);
    free(cg.v);
    mt_program_free(prog);
    return ok ? 0 : 1;
}
