/* tests/unit/test_elf_file.c — the validated ELF view (common/elf_file.h)
 * against libelf as an independent reader of the same file (this test's own
 * executable), and its refusals of damaged copies: one line naming the file
 * and the problem, nothing left open. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/elf_file.h"
#include "unit.h"

static char dir[] = "/tmp/mtool-elf-file.XXXXXX";
static uint8_t *original;
static size_t original_size;

static uint8_t *read_whole(const char *path, size_t *size)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0)
        abort();
    uint8_t *buf = malloc((size_t)st.st_size);
    if (!buf || pread(fd, buf, (size_t)st.st_size, 0) != st.st_size)
        abort();
    close(fd);
    *size = (size_t)st.st_size;
    return buf;
}

static void write_whole(const char *path, const uint8_t *data, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) || close(fd) != 0)
        abort();
}

static size_t open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    size_t n = 0;
    while (d && readdir(d))
        n++;
    if (d)
        closedir(d);
    return n;
}

/* ---- the view against libelf ------------------------------------------ */

static void compare_headers(const mt_elf_file *f, Elf *e)
{
    GElf_Ehdr eh;
    CHECK(gelf_getehdr(e, &eh) && eh.e_entry == f->ehdr.e_entry && eh.e_type == f->ehdr.e_type &&
              eh.e_phnum == f->ehdr.e_phnum, "ELF header as libelf reads it");
    size_t nph = 0;
    elf_getphdrnum(e, &nph);
    CHECK(nph == f->nphdrs, "%zu program headers (libelf: %zu)", f->nphdrs, nph);
    bool same = nph == f->nphdrs;
    size_t interp = SIZE_MAX;
    for (size_t i = 0; same && i < nph; i++) {
        GElf_Phdr ph;
        same = gelf_getphdr(e, (int)i, &ph) && ph.p_type == f->phdrs[i].p_type &&
               ph.p_offset == f->phdrs[i].p_offset && ph.p_vaddr == f->phdrs[i].p_vaddr &&
               ph.p_filesz == f->phdrs[i].p_filesz && ph.p_flags == f->phdrs[i].p_flags;
        if (same && ph.p_type == PT_INTERP && interp == SIZE_MAX)
            interp = i;
    }
    CHECK(same, "every program header as libelf reads it");
    const Elf64_Phdr *found = mt_elf_file_phdr(f, PT_INTERP);
    CHECK(interp == SIZE_MAX ? !found : found == &f->phdrs[interp],
          "PT_INTERP by type is libelf's first PT_INTERP");
    const Elf64_Phdr *code = mt_elf_file_load_at(f, f->ehdr.e_entry, PF_X);
    CHECK(code && code->p_type == PT_LOAD && (code->p_flags & PF_X), "the entry point is in an "
          "executable PT_LOAD");
}

static void compare_sections(const mt_elf_file *f, Elf *e)
{
    size_t nsec = 0, strndx = 0;
    elf_getshdrnum(e, &nsec);
    elf_getshdrstrndx(e, &strndx);
    CHECK(nsec == f->nsections, "%zu sections (libelf: %zu)", f->nsections, nsec);
    bool same = nsec == f->nsections;
    for (size_t i = 0; same && i < nsec; i++) {
        GElf_Shdr sh;
        Elf_Scn *scn = elf_getscn(e, i);
        const char *name = scn && gelf_getshdr(scn, &sh) ? elf_strptr(e, strndx, sh.sh_name) : NULL;
        const mt_elf_section *s = &f->sections[i];
        same = name && strcmp(name, s->name) == 0 && sh.sh_type == s->type &&
               sh.sh_addr == s->addr && sh.sh_size == s->size && sh.sh_offset == s->offset &&
               sh.sh_link == s->link;
        if (!same)
            printf("# section %zu: %s / %s\n", i, name ? name : "(null)", s->name);
    }
    CHECK(same, "every section's name, type, address, size, offset and link as libelf reads them");
    const mt_elf_section *text = mt_elf_file_section(f, ".text");
    const uint8_t *by_addr = text ? mt_elf_file_bytes(f, text->addr, 64) : NULL;
    CHECK(text && by_addr && memcmp(by_addr, original + text->offset, 64) == 0 &&
              by_addr == mt_elf_file_section_bytes(f, text),
          ".text's bytes by address are its bytes at its file offset");
    uint64_t avail = 0;
    const uint8_t *from = text ? mt_elf_file_bytes_from(f, text->addr, &avail) : NULL;
    CHECK(from == by_addr && avail >= text->size, "bytes from .text's start run to its segment's "
          "end (%llu bytes)", (unsigned long long)avail);
}

/* Every .symtab name, and DT_FLAGS_1, as libelf reads them. */
static void compare_symbols(const mt_elf_file *f, Elf *e)
{
    size_t checked = 0, differ = 0;
    bool has_flags_1 = false;
    uint64_t flags_1 = 0;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));) {
        GElf_Shdr sh;
        Elf_Data *d = gelf_getshdr(scn, &sh) ? elf_getdata(scn, NULL) : NULL;
        if (d && sh.sh_type == SHT_SYMTAB) {
            const mt_elf_section *symtab = &f->sections[elf_ndxscn(scn)];
            CHECK(mt_elf_file_symbol_count(symtab) == sh.sh_size / sh.sh_entsize,
                  "the symbol count of .symtab");
            for (size_t k = 0; k < sh.sh_size / sh.sh_entsize; k++) {
                GElf_Sym want;
                Elf64_Sym got;
                const char *name;
                gelf_getsym(d, (int)k, &want);
                const char *want_name = elf_strptr(e, sh.sh_link, want.st_name);
                if (!mt_elf_file_symbol(f, symtab, k, &got, &name) ||
                    got.st_value != want.st_value || !want_name || strcmp(name, want_name) != 0)
                    differ++;
                checked++;
            }
        }
        for (size_t k = 0; d && sh.sh_type == SHT_DYNAMIC && k < sh.sh_size / sh.sh_entsize; k++) {
            GElf_Dyn dyn;
            if (gelf_getdyn(d, (int)k, &dyn) && dyn.d_tag == DT_FLAGS_1 && !has_flags_1) {
                has_flags_1 = true;
                flags_1 = dyn.d_un.d_val;
            }
        }
    }
    CHECK(checked > 10 && differ == 0, "%zu .symtab symbols, %zu differ from libelf's", checked,
          differ);
    uint64_t value = 1;
    CHECK(mt_elf_file_dynamic(f, DT_FLAGS_1, &value) == has_flags_1 && value == flags_1,
          "DT_FLAGS_1 through PT_DYNAMIC is .dynamic's (0x%llx)", (unsigned long long)value);
    CHECK(!mt_elf_file_dynamic(f, 0x7ffffff0, &value) && value == 0, "an absent tag reads as 0");
}

static void test_against_libelf(const char *path)
{
    mt_elf_file f;
    mt_error err = {{0}};
    CHECK(mt_elf_file_open(&f, path, &err) == 0, "opens the test program: %s", err.msg);
    int fd = open(path, O_RDONLY);
    elf_version(EV_CURRENT);
    Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
    if (e && f.data) {
        compare_headers(&f, e);
        compare_sections(&f, e);
        compare_symbols(&f, e);
    } else {
        CHECK(false, "libelf opens the test program");
    }
    if (e)
        elf_end(e);
    if (fd >= 0)
        close(fd);
    mt_elf_file_close(&f);
}

/* ---- refusals ------------------------------------------------------------ */

static void put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static void put_u16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

/* Opens `data` written to a file; the error must be exactly "PATH: want"
 * and the view must leave no descriptor open. */
static void expect_refused(const char *label, const uint8_t *data, size_t size, const char *want)
{
    char path[64], expected[256];
    snprintf(path, sizeof path, "%s/bad", dir);
    write_whole(path, data, size);
    snprintf(expected, sizeof expected, "%s: %s", path, want);
    size_t fds = open_fds();
    mt_elf_file f;
    mt_error err = {{0}};
    int rc = mt_elf_file_open(&f, path, &err);
    CHECK(rc == -1 && strcmp(err.msg, expected) == 0 && !strchr(err.msg, '\n'),
          "%s: refused with \"%s\" (got rc %d, \"%s\")", label, want, rc, err.msg);
    CHECK(open_fds() == fds, "%s: no descriptor left open", label);
    if (rc == 0)
        mt_elf_file_close(&f);
}

static void test_refusals(void)
{
    size_t n = original_size;
    uint8_t *c = malloc(n);
    Elf64_Ehdr eh;
    memcpy(&eh, original, sizeof eh);
#define FRESH() memcpy(c, original, n)
    expect_refused("empty file", original, 0, "empty file");
    expect_refused("10 bytes", original, 10, "not an ELF file (too short)");
    expect_refused("40 bytes", original, 40, "truncated ELF header");
    FRESH(); c[0] = 'X';
    expect_refused("bad magic", c, n, "not an ELF file");
    FRESH(); c[EI_CLASS] = ELFCLASS32;
    expect_refused("32-bit class", c, n, "32-bit ELF is not supported");
    FRESH(); c[EI_DATA] = ELFDATA2MSB;
    expect_refused("big-endian", c, n, "big-endian ELF is not supported");
    FRESH(); put_u16(c + offsetof(Elf64_Ehdr, e_machine), EM_AARCH64);
    expect_refused("aarch64", c, n, "not x86-64 (machine 183)");
    FRESH(); put_u16(c + offsetof(Elf64_Ehdr, e_type), ET_REL);
    expect_refused("relocatable", c, n, "relocatable object files are not supported; link it first");
    FRESH(); put_u64(c + offsetof(Elf64_Ehdr, e_phoff), UINT64_MAX - 8);
    expect_refused("e_phoff near 2^64", c, n, "program header table out of file bounds");
    FRESH(); put_u16(c + offsetof(Elf64_Ehdr, e_phentsize), 1);
    expect_refused("e_phentsize 1", c, n, "corrupted ELF header (program header size 1)");
    FRESH(); put_u64(c + offsetof(Elf64_Ehdr, e_shoff), n - 10);
    expect_refused("e_shoff at the end", c, n, "section header table out of file bounds");
    FRESH(); put_u16(c + offsetof(Elf64_Ehdr, e_shstrndx), 0xfffe);
    char want[128];
    snprintf(want, sizeof want, "corrupted ELF header (section name table index %u)", 0xfffe);
    expect_refused("e_shstrndx 0xfffe", c, n, want);
    /* The first PT_LOAD's file image past the end of the file. */
    for (size_t i = 0; i < eh.e_phnum; i++) {
        uint8_t *ph = c + eh.e_phoff + i * sizeof(Elf64_Phdr);
        FRESH();
        uint32_t type;
        memcpy(&type, ph + offsetof(Elf64_Phdr, p_type), 4);
        if (type != PT_LOAD)
            continue;
        put_u64(ph + offsetof(Elf64_Phdr, p_offset), UINT64_MAX - 2);
        snprintf(want, sizeof want, "truncated file (segment %zu extends past end of file)", i);
        expect_refused("a PT_LOAD past the end", c, n, want);
        break;
    }
    free(c);
#undef FRESH
}

/* A section whose bytes are outside the file is kept but yields nothing;
 * a name outside the name table reads as "". */
static void test_damaged_section(void)
{
    uint8_t *c = malloc(original_size);
    memcpy(c, original, original_size);
    Elf64_Ehdr eh;
    memcpy(&eh, c, sizeof eh);
    mt_elf_file f;
    mt_error err = {{0}};
    char path[64];
    snprintf(path, sizeof path, "%s/damaged", dir);
    size_t symtab = 0;
    for (size_t i = 1; i < eh.e_shnum; i++) {
        uint8_t *sh = c + eh.e_shoff + i * sizeof(Elf64_Shdr);
        uint32_t type;
        memcpy(&type, sh + offsetof(Elf64_Shdr, sh_type), 4);
        if (type == SHT_SYMTAB) {
            symtab = i;
            put_u64(sh + offsetof(Elf64_Shdr, sh_offset), UINT64_MAX - 4);
            memcpy(sh + offsetof(Elf64_Shdr, sh_name), &(uint32_t){0x7fffffff}, 4);
        }
    }
    write_whole(path, c, original_size);
    CHECK(symtab && mt_elf_file_open(&f, path, &err) == 0, "a file with .symtab out of bounds "
          "opens: %s", err.msg);
    if (symtab && f.data) {
        const mt_elf_section *s = &f.sections[symtab];
        Elf64_Sym sym;
        const char *name;
        CHECK(!s->in_file && !mt_elf_file_section_bytes(&f, s) &&
                  mt_elf_file_symbol_count(s) == 0 && !mt_elf_file_symbol(&f, s, 1, &sym, &name),
              "its bytes, symbols: none");
        CHECK(strcmp(s->name, "") == 0 && !mt_elf_file_section(&f, ".symtab"),
              "its name is \"\" and .symtab is not found by name");
        mt_elf_file_close(&f);
    }
    free(c);
}

/* Every truncation of the first pages either opens or is refused with one
 * line naming the file; under ASan any read past the file would stop here. */
static void test_truncations(void)
{
    char path[64];
    snprintf(path, sizeof path, "%s/trunc", dir);
    size_t refused = 0, opened = 0, bad = 0;
    for (size_t len = 0; len < 8192 && len < original_size; len += 7) {
        write_whole(path, original, len);
        mt_elf_file f;
        mt_error err = {{0}};
        if (mt_elf_file_open(&f, path, &err) == 0) {
            opened++;
            mt_elf_file_close(&f);
        } else if (strncmp(err.msg, path, strlen(path)) == 0 && !strchr(err.msg, '\n')) {
            refused++;
        } else {
            bad++;
        }
    }
    CHECK(bad == 0 && refused > 0, "truncations: %zu refused with one line naming the file, "
          "%zu opened, %zu otherwise", refused, opened, bad);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 2;
    char self[64];
    snprintf(self, sizeof self, "%s/self", dir);
    original = read_whole("/proc/self/exe", &original_size);
    write_whole(self, original, original_size);
    test_against_libelf(self);
    test_refusals();
    test_damaged_section();
    test_truncations();
    free(original);
    const char *names[] = {"self", "bad", "damaged", "trunc"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char p[64];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
    return unit_finish();
}
