/* Cross-checks mtool's blocks against an independent oracle: valgrind's
 * callgrind, run with --dump-instr=yes --collect-jumps=yes
 * --compress-pos=no --compress-strings=no.
 *
 *   - every instruction callgrind saw executing in the binary must lie in a
 *     block we found, at an instruction boundary we found (blocks are
 *     re-decoded here with capstone to list their boundaries);
 *   - every jump target callgrind saw in the binary must be a block start.
 * Addresses inside procedures mtool flagged unresolved are counted apart:
 * their CFG is partial by design, and says so.
 *
 * Callgrind prints run-time addresses; a PIE is loaded at some bias.  The
 * bias is page-aligned and `main`'s first instruction always executes, so
 * bias = (lowest address callgrind attributes to main) − (main's entry).
 *
 * usage: check_blocks BINARY CALLGRIND_OUT */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/analyzer.h"
#include "tests/unit/unit.h"

typedef struct {
    uint64_t *addrs;
    size_t n, cap;
} addr_list;

typedef struct {
    addr_list executed, jump_targets;
    uint64_t main_lowest;
} callgrind_facts;

static bool same_object(const char *ob, const char *binary)
{
    char *a = realpath(ob, NULL), *b = realpath(binary, NULL);
    bool same = a && b && strcmp(a, b) == 0;
    free(a);
    free(b);
    return same;
}

static void read_callgrind(const char *path, const char *binary, callgrind_facts *f)
{
    FILE *fp = fopen(path, "r");
    char line[8192];
    bool in_binary = false, in_main = false, pending_jump = false;
    uint64_t jump_target = 0;
    f->main_lowest = UINT64_MAX;
    while (fp && fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\n")] = 0;
        if (strncmp(line, "ob=", 3) == 0) {
            in_binary = same_object(line + 3, binary);
        } else if (strncmp(line, "fn=", 3) == 0) {
            in_main = strcmp(line + 3, "main") == 0;
        } else if (strncmp(line, "jump=", 5) == 0 || strncmp(line, "jcnd=", 5) == 0) {
            char *sp = strchr(line, ' ');
            jump_target = sp ? strtoull(sp + 1, NULL, 16) : 0;
            pending_jump = jump_target != 0;
        } else if (strncmp(line, "0x", 2) == 0 && in_binary) {
            uint64_t addr = strtoull(line, NULL, 16);
            MT_PUSH(f->executed.addrs, f->executed.n, f->executed.cap, addr);
            if (in_main && addr < f->main_lowest)
                f->main_lowest = addr;
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

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s BINARY CALLGRIND_OUT\n", argv[0]);
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
    uint32_t main_proc = mt_find_procedure(prog, "main");
    if (f.executed.n == 0 || f.main_lowest == UINT64_MAX || main_proc == MT_NONE) {
        CHECK(false, "%s: callgrind output names main in this binary", name);
        mt_program_free(prog);
        return unit_finish();
    }
    uint64_t bias = f.main_lowest - prog->procs[main_proc].entry;

    elf_version(EV_CURRENT);
    elf_file ef = {.fd = open(binary, O_RDONLY)};
    ef.elf = elf_begin(ef.fd, ELF_C_READ, NULL);
    csh cs;
    cs_open(CS_ARCH_X86, CS_MODE_64, &cs);

    size_t outside = 0, misaligned = 0, unresolved = 0, bad_targets = 0;
    for (size_t i = 0; i < f.executed.n; i++) {
        uint64_t addr = f.executed.addrs[i] - bias;
        uint32_t p = mt_procedure_at(prog, addr);
        uint32_t b = p == MT_NONE ? MT_NONE : mt_block_at(&prog->procs[p], addr);
        if (b == MT_NONE) {
            if (p != MT_NONE && !prog->procs[p].resolved)
                unresolved++;
            else if (outside++ < 5)
                printf("# executed 0x%llx outside every block\n", (unsigned long long)addr);
        } else if (!at_instruction_boundary(cs, &ef, &prog->procs[p].blocks[b], addr)) {
            if (misaligned++ < 5)
                printf("# executed 0x%llx inside an instruction we decoded\n", (unsigned long long)addr);
        }
    }
    for (size_t i = 0; i < f.jump_targets.n; i++) {
        uint64_t addr = f.jump_targets.addrs[i] - bias;
        uint32_t p = mt_procedure_at(prog, addr);
        uint32_t b = p == MT_NONE ? MT_NONE : mt_block_at(&prog->procs[p], addr);
        bool start = b != MT_NONE && prog->procs[p].blocks[b].start == addr;
        if (!start && !(p != MT_NONE && !prog->procs[p].resolved) && bad_targets++ < 5)
            printf("# jump target 0x%llx is not a block start\n", (unsigned long long)addr);
    }
    CHECK(outside == 0 && misaligned == 0,
          "%s: %zu executed instructions inside our blocks at our boundaries (outside %zu, misaligned %zu, in "
          "unresolved procedures %zu)",
          name, f.executed.n, outside, misaligned, unresolved);
    CHECK(bad_targets == 0, "%s: %zu jump targets are block starts (%zu are not)", name, f.jump_targets.n,
          bad_targets);
    cs_close(&cs);
    elf_end(ef.elf);
    close(ef.fd);
    free(f.executed.addrs);
    free(f.jump_targets.addrs);
    mt_program_free(prog);
    return unit_finish();
}
