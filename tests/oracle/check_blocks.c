/* Cross-checks mtool's blocks against an independent oracle: valgrind's
 * callgrind, run with --dump-instr=yes --collect-jumps=yes
 * --compress-pos=no --compress-strings=no.
 *
 *   - every instruction callgrind saw executing in the binary must lie in a
 *     block we found, at an instruction boundary we found (blocks are
 *     re-decoded here with capstone to list their boundaries);
 *   - every jump target callgrind saw in the binary must be a block start.
 * Addresses inside procedures mtool flagged unresolved are counted apart:
 * their CFG is partial by design, and says so.  So are, in a stripped
 * binary, addresses in no procedure at all: crt code such as frame_dummy or
 * register_tm_clones has neither a symbol left nor an FDE, and is reached
 * only through .init_array / DT_INIT, so stripping loses it.
 *
 * Callgrind 3.19 prints addresses relative to each object's load bias, i.e.
 * link-time addresses; older versions print run-time ones.  The bias is
 * found without trusting symbols (stripped binaries have none): the ELF
 * entry point always executes, so the bias is the candidate — 0, or
 * AT_ENTRY − e_entry from the loader's LD_SHOW_AUXV=1 output — that puts
 * the entry among the executed addresses.
 *
 * usage: check_blocks BINARY CALLGRIND_OUT [PROGRAM_STDOUT_WITH_AUXV] */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/analyzer.h"
#include "tests/oracle/callgrind.h"
#include "tests/unit/unit.h"

typedef struct {
    uint64_t *addrs;
    size_t n, cap;
} addr_list;

typedef struct {
    addr_list executed, jump_targets; /* sorted, without duplicates */
} callgrind_facts;

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

static void read_callgrind(const char *path, const char *binary, callgrind_facts *f)
{
    FILE *fp = fopen(path, "r");
    char line[8192];
    bool in_binary = false, pending_jump = false;
    uint64_t jump_target = 0;
    while (fp && fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\n")] = 0;
        if (strncmp(line, "ob=", 3) == 0) {
            in_binary = same_object(line + 3, binary);
        } else if (strncmp(line, "jump=", 5) == 0 || strncmp(line, "jcnd=", 5) == 0) {
            char *sp = strchr(line, ' ');
            jump_target = sp ? strtoull(sp + 1, NULL, 16) : 0;
            pending_jump = jump_target != 0;
        } else if (strncmp(line, "0x", 2) == 0 && in_binary) {
            uint64_t addr = strtoull(line, NULL, 16);
            MT_PUSH(f->executed.addrs, f->executed.n, f->executed.cap, addr);
            /* A rep-prefixed string instruction is a loop in valgrind's IR: it
             * "jumps" to itself once per iteration.  That is not a CFG edge. */
            if (pending_jump && jump_target != addr)
                MT_PUSH(f->jump_targets.addrs, f->jump_targets.n, f->jump_targets.cap, jump_target);
            pending_jump = false;
        } else if (strncmp(line, "calls=", 6) != 0) {
            pending_jump = false;
        }
    }
    if (fp)
        fclose(fp);
    f->executed.n = sort_unique(f->executed.addrs, f->executed.n);
    f->jump_targets.n = sort_unique(f->jump_targets.addrs, f->jump_targets.n);
}

static bool executed(const callgrind_facts *f, uint64_t addr)
{
    return bsearch(&addr, f->executed.addrs, f->executed.n, sizeof addr, cmp_u64) != NULL;
}

/* The bias that maps callgrind's addresses to link-time ones, or false when
 * no candidate puts the entry point among the executed instructions. */
static bool find_bias(const callgrind_facts *f, uint64_t e_entry, const char *auxv_path, uint64_t *bias)
{
    *bias = 0;
    if (executed(f, e_entry))
        return true;
    FILE *fp = auxv_path ? fopen(auxv_path, "r") : NULL;
    char line[512];
    bool found = false;
    while (fp && !found && fgets(line, sizeof line, fp)) {
        if (strncmp(line, "AT_ENTRY:", 9) != 0)
            continue;
        uint64_t at_entry = strtoull(line + 9, NULL, 16);
        *bias = at_entry - e_entry;
        found = executed(f, at_entry);
    }
    if (fp)
        fclose(fp);
    return found;
}

/* The file's bytes at a link-time address, from its PROGBITS sections. */
typedef struct {
    Elf *elf;
    int fd;
} elf_file;

static const uint8_t *bytes_at(elf_file *ef, uint64_t addr, size_t *avail)
{
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(ef->elf, scn));) {
        GElf_Shdr sh;
        gelf_getshdr(scn, &sh);
        if (sh.sh_type != SHT_PROGBITS || addr < sh.sh_addr || addr >= sh.sh_addr + sh.sh_size)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        if (!d)
            return NULL;
        *avail = sh.sh_addr + sh.sh_size - addr;
        return (const uint8_t *)d->d_buf + (addr - sh.sh_addr);
    }
    return NULL;
}

static bool at_instruction_boundary(csh cs, elf_file *ef, const mt_block *b, uint64_t addr)
{
    size_t avail = 0;
    const uint8_t *code = bytes_at(ef, b->start, &avail);
    if (!code)
        return false;
    size_t len = b->end - b->start < avail ? b->end - b->start : avail;
    uint64_t pc = b->start;
    cs_insn *insn = cs_malloc(cs);
    bool found = false;
    while (len && pc <= addr && cs_disasm_iter(cs, &code, &len, &pc, insn))
        if (insn->address == addr)
            found = true;
    cs_free(insn, 1);
    return found;
}

static const char *proc_name(const mt_program *prog, uint32_t p)
{
    return p == MT_NONE ? "no procedure" : prog->procs[p].name;
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s BINARY CALLGRIND_OUT [PROGRAM_STDOUT_WITH_AUXV]\n", argv[0]);
        return 2;
    }
    const char *binary = argv[1], *name = strrchr(argv[1], '/') ? strrchr(argv[1], '/') + 1 : argv[1];
    mt_error err;
    mt_program *prog = mt_analyze(binary, NULL, &err);
    if (!prog) {
        CHECK(false, "%s: analyze: %s", name, err.msg);
        return unit_finish();
    }
    callgrind_facts f = {0};
    read_callgrind(argv[2], binary, &f);

    elf_version(EV_CURRENT);
    elf_file ef = {.fd = open(binary, O_RDONLY)};
    ef.elf = elf_begin(ef.fd, ELF_C_READ, NULL);
    GElf_Ehdr eh;
    uint64_t bias = 0;
    if (!ef.elf || !gelf_getehdr(ef.elf, &eh) || !find_bias(&f, eh.e_entry, argc == 4 ? argv[3] : NULL, &bias)) {
        CHECK(false, "%s: callgrind saw the entry point execute (%zu instructions in this binary)", name,
              f.executed.n);
        goto out;
    }
    csh cs;
    cs_open(CS_ARCH_X86, CS_MODE_64, &cs);

    size_t outside = 0, unknown = 0, misaligned = 0, unresolved = 0, bad_targets = 0, unresolved_targets = 0,
           unknown_targets = 0;
    for (size_t i = 0; i < f.executed.n; i++) {
        uint64_t addr = f.executed.addrs[i] - bias;
        uint32_t p = mt_procedure_at(prog, addr);
        uint32_t b = p == MT_NONE ? MT_NONE : mt_block_at(&prog->procs[p], addr);
        if (b == MT_NONE) {
            if (p == MT_NONE && prog->stripped)
                unknown++; /* lost by stripping: see above */
            else if (p != MT_NONE && !prog->procs[p].resolved)
                unresolved++;
            else if (outside++ < 5)
                printf("# executed 0x%llx (in %s) outside every block\n", (unsigned long long)addr,
                       proc_name(prog, p));
        } else if (!at_instruction_boundary(cs, &ef, &prog->procs[p].blocks[b], addr)) {
            if (misaligned++ < 5)
                printf("# executed 0x%llx (in %s) inside an instruction we decoded\n", (unsigned long long)addr,
                       proc_name(prog, p));
        }
    }
    for (size_t i = 0; i < f.jump_targets.n; i++) {
        uint64_t addr = f.jump_targets.addrs[i] - bias;
        uint32_t p = mt_procedure_at(prog, addr);
        uint32_t b = p == MT_NONE ? MT_NONE : mt_block_at(&prog->procs[p], addr);
        if (b != MT_NONE && prog->procs[p].blocks[b].start == addr)
            continue;
        if (p == MT_NONE && prog->stripped)
            unknown_targets++;
        else if (p != MT_NONE && !prog->procs[p].resolved)
            unresolved_targets++;
        else if (bad_targets++ < 5)
            printf("# jump target 0x%llx (in %s) is not a block start\n", (unsigned long long)addr,
                   proc_name(prog, p));
    }
    CHECK(outside == 0 && misaligned == 0,
          "%s: %zu executed instructions inside our blocks at our boundaries (outside %zu, misaligned %zu; "
          "in unresolved procedures %zu)",
          name, f.executed.n, outside, misaligned, unresolved);
    CHECK(bad_targets == 0, "%s: %zu jump targets are block starts (%zu are not; in unresolved procedures %zu)",
          name, f.jump_targets.n, bad_targets, unresolved_targets);
    if (unknown || unknown_targets)
        printf("# %s: stripped: %zu executed instructions and %zu jump targets in no procedure we know "
               "(crt code without an FDE: reported, not judged)\n",
               name, unknown, unknown_targets);
    cs_close(&cs);
out:
    if (ef.elf)
        elf_end(ef.elf);
    if (ef.fd >= 0)
        close(ef.fd);
    free(f.executed.addrs);
    free(f.jump_targets.addrs);
    mt_program_free(prog);
    return unit_finish();
}
