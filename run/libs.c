/* run/libs.c — pass 1 through the program's shared libraries
 * (docs/ARCHITECTURE.md, "Shared libraries"): which libraries the loader
 * finds for BIN, their counting copies, each in its own range of the one
 * per-thread slot, and the environment that makes the loader take the
 * copies for one run (LD_AUDIT with timer/audit.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/elf_file.h"
#include "internal.h"

/* ---- what the loader finds ---------------------------------------------- */

/* BIN's PT_INTERP into *interp, NULL for a static program (it needs no library). */
static int interpreter_of(const char *bin, char **interp, mt_error *err)
{
    mt_elf_file in;
    *interp = NULL;
    if (mt_elf_file_open(&in, bin, err) != 0)
        return -1;
    const Elf64_Phdr *ph = mt_elf_file_phdr(&in, PT_INTERP);
    if (ph && ph->p_filesz > 1 && ph->p_offset <= in.size && ph->p_filesz <= in.size - ph->p_offset &&
        memchr(in.data + ph->p_offset, '\0', ph->p_filesz))
        *interp = mt_xstrdup((const char *)in.data + ph->p_offset);
    mt_elf_file_close(&in);
    return 0;
}

/* What `INTERP --list BIN` prints: the loader's own search (rpath,
 * runpath, $LD_LIBRARY_PATH, its cache), without running BIN. */
static char *loader_list(const char *interp, const char *bin, mt_error *err)
{
    int fds[2];
    if (pipe(fds) != 0) {
        mt_error_set(err, "cannot make a pipe: %s", strerror(errno));
        return NULL;
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl(interp, interp, "--list", bin, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (ssize_t n = 1; pid > 0 && n > 0;) {
        if (cap - len < 4097)
            text = mt_xrealloc(text, cap = 2 * cap + 8192);
        n = read(fds[0], text + len, cap - len - 1);
        len += n > 0 ? (size_t)n : 0;
    }
    close(fds[0]);
    int status = 0;
    while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        mt_error_set(err, "%s: its loader %s cannot list its shared libraries", bin, interp);
        free(text);
        return NULL;
    }
    text[len] = '\0';
    return text;
}

/* glibc's own objects: they run inside the loader and before the runtime
 * starts, and capstone 4 cannot decode the AVX-512 string functions its
 * ifuncs select on this machine: not counted in this slice. */
static bool part_of_glibc(const char *name)
{
    static const char *const glibc[] = {"libc.so", "libm.so", "libpthread.so", "libdl.so",
                                        "librt.so", "libmvec.so", "libresolv.so", "libutil.so",
                                        "libanl.so", "ld-linux", "libBrokenLocale.so"};
    for (size_t i = 0; i < sizeof glibc / sizeof *glibc; i++)
        if (strncmp(name, glibc[i], strlen(glibc[i])) == 0)
            return true;
    return false;
}

/* Whether --libs names `name`: by its file name, or by that name up to ".so". */
static bool named(const char *spec, const char *name)
{
    if (strcmp(spec, "all") == 0)
        return true;
    size_t stem = strcspn(name, ".");
    for (const char *s = spec; *s;) {
        size_t n = strcspn(s, ",");
        if ((n == strlen(name) || n == stem) && strncmp(s, name, n) == 0)
            return true;
        s += n + (s[n] == ',');
    }
    return false;
}

/* A NAME of --libs that is no library of the program is said, not ignored. */
static void warn_unmatched(const char *spec, const mt_pass1_libraries *l, FILE *log)
{
    if (!log || strcmp(spec, "all") == 0)
        return;
    for (const char *s = spec; *s;) {
        size_t n = strcspn(s, ",");
        char *one = mt_xasprintf("%.*s", (int)n, s);
        bool found = false;
        for (size_t i = 0; i < l->nlibs && !found; i++)
            found = named(one, l->libs[i].name);
        if (!found && n) {
            char shown[512];
            mt_escape_text(shown, sizeof shown, one);
            fprintf(log, "mtool: warning: --libs: %s is no shared library the program needs\n",
                    shown);
        }
        free(one);
        s += n + (s[n] == ',');
    }
}

/* "\tNAME => PATH (0xADDR)" lines, each named one a library; the vDSO and
 * the loader itself have no "=>". */
static void parse_list(char *text, const char *spec, mt_pass1_libraries *out)
{
    size_t cap = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        line += strspn(line, " \t");
        char *arrow = strstr(line, " => ");
        if (!arrow)
            continue;
        *arrow = '\0';
        char *path = arrow + 4, *addr = strstr(path, " (0x");
        if (addr)
            *addr = '\0';
        mt_pass1_library lib = {.name = mt_xstrdup(line), .path = mt_xstrdup(path),
                                .asked = named(spec, line)};
        if (!lib.asked)
            lib.note = mt_xstrdup("not asked for");
        else if (strcmp(path, "not found") == 0)
            lib.note = mt_xstrdup("not found by the loader");
        else if (part_of_glibc(line))
            lib.note = mt_xstrdup("part of glibc: not counted yet");
        else if (path[0] != '/' || strchr(path, '\n') || strchr(path, '\t'))
            lib.note = mt_xstrdup("its path cannot be handed to the audit library");
        MT_PUSH(out->libs, out->nlibs, cap, lib);
    }
}

/* ---- their copies ------------------------------------------------------------ */

/* The set's identity: the executable's content and each library's, in
 * order (each library's range follows from the ones before it). */
static int set_identity(const char *bin, const mt_pass1_libraries *l, uint64_t *set, mt_error *err)
{
    uint64_t *words = mt_xcalloc(l->nlibs + 2, sizeof *words);
    uint64_t *zeros = mt_xcalloc(l->nlibs + 2, sizeof *zeros);
    uint8_t hash[32];
    int rc = mt_file_sha256(bin, hash, err);
    if (rc == 0)
        memcpy(&words[0], hash, 8);
    for (size_t i = 0; rc == 0 && i < l->nlibs; i++)
        if (!l->libs[i].note && (rc = mt_file_sha256(l->libs[i].path, hash, err)) == 0)
            memcpy(&words[i + 1], hash, 8);
    *set = mt_timer_set_id(words, zeros, (uint32_t)l->nlibs + 1) | 1; /* never 0: "none" */
    free(words);
    free(zeros);
    return rc;
}

static void rewrite_library(mt_pass1_library *lib, uint32_t base, uint64_t set)
{
    mt_analyze_options opt;
    mt_analyze_options_init(&opt);
    mt_error err;
    if (!(lib->prog = mt_analyze(lib->path, &opt, &err)) ||
        mt_instrument_in_set(lib->prog, lib->path, base, set, true, &lib->ins, &err) != 0 ||
        mt_counter_map_read(lib->ins.path, &lib->map, &err) != 0) {
        lib->note = mt_xstrdup(err.msg);
        for (char *c = lib->note; *c; c++)
            *c = *c == '\n' || *c == '\t' ? ' ' : *c;
    }
}

/* The audit library, from mtool's own bytes into the cache once per build. */
static char *audit_library(mt_error *err)
{
    char *root = mt_cache_root(), *dir = mt_xasprintf("%s/libs", root);
    char *path = mt_xasprintf("%s/audit-%016" PRIx64 ".so", dir, mt_tool_identity());
    free(root);
    mt_outfile f;
    int rc = mt_make_dirs(dir, err);
    if (rc == 0 && access(path, R_OK) != 0 && (rc = mt_outfile_open(&f, path, err)) == 0) {
        fwrite(mt_audit_lib, 1, (size_t)mt_audit_lib_size, f.fp);
        rc = mt_outfile_commit(&f, err);
    }
    free(dir);
    if (rc == 0 && strchr(path, ':')) {
        mt_error_set(err, "%s: LD_AUDIT cannot take a path with ':'", path);
        rc = -1;
    }
    if (rc != 0) {
        free(path);
        return NULL;
    }
    return path;
}

static int build_env(mt_pass1_libraries *l, mt_error *err)
{
    char *audit = audit_library(err);
    if (!audit)
        return -1;
    const char *before = getenv("LD_AUDIT");
    char *list = mt_xstrdup("MTOOL_LIBS=");
    /* Every library the loader found for the original, the ones not
     * counted at their own path: the copy of the executable lives in the
     * cache, where its $ORIGIN would find none of them. */
    for (size_t i = 0; i < l->nlibs; i++) {
        const mt_pass1_library *lib = &l->libs[i];
        if (lib->path[0] != '/' || strchr(lib->path, '\n') || strchr(lib->path, '\t'))
            continue;
        char *more = mt_xasprintf("%s%s\t%s\n", list, lib->path, lib->note ? lib->path : lib->ins.path);
        free(list);
        list = more;
    }
    l->env = mt_xcalloc(3, sizeof *l->env);
    l->env[0] = before && *before ? mt_xasprintf("LD_AUDIT=%s:%s", audit, before)
                                  : mt_xasprintf("LD_AUDIT=%s", audit);
    l->env[1] = list;
    free(audit);
    return 0;
}

int mt_pass1_libraries_prepare(const char *bin, const char *spec, mt_pass1_libraries *out,
                               FILE *log, mt_error *err)
{
    memset(out, 0, sizeof *out);
    if (!spec || strcmp(spec, "none") == 0)
        return 0;
    char *interp, *text;
    if (interpreter_of(bin, &interp, err) != 0)
        return -1;
    if (!interp)
        return 0;
    if (!(text = loader_list(interp, bin, err))) {
        free(interp);
        return -1;
    }
    parse_list(text, spec, out);
    warn_unmatched(spec, out, log);
    free(text);
    free(interp);
    int rc = set_identity(bin, out, &out->set, err);
    for (size_t i = 0; rc == 0 && i < out->nlibs; i++) {
        mt_pass1_library *lib = &out->libs[i];
        if (log && lib->asked)
            fprintf(log, "mtool: %s %s\n", lib->note ? "leaving original:" : "instrumenting",
                    lib->name);
        if (!lib->note)
            rewrite_library(lib, out->ncounters, out->set);
        if (!lib->note)
            out->ncounters = lib->map.ncounters;
    }
    return rc == 0 ? build_env(out, err) : -1;
}

void mt_pass1_libraries_accumulate(mt_pass1_libraries *l, uint64_t *counts)
{
    for (size_t i = 0; i < l->nlibs; i++)
        if (!l->libs[i].note) {
            mt_counter_map_derive(&l->libs[i].map, counts); /* its own range of counts */
            rn_accumulate(l->libs[i].prog, &l->libs[i].map, counts, &l->libs[i].totals);
        }
}

void mt_pass1_libraries_free(mt_pass1_libraries *l)
{
    for (size_t i = 0; i < l->nlibs; i++) {
        mt_pass1_library *lib = &l->libs[i];
        free(lib->name);
        free(lib->path);
        free(lib->note);
        mt_program_free(lib->prog);
        mt_instrumented_free(&lib->ins);
        mt_counter_map_free(&lib->map);
        rn_pass1_totals_free(&lib->totals);
    }
    free(l->libs);
    for (char **e = l->env; e && *e; e++)
        free(*e);
    free(l->env);
    memset(l, 0, sizeof *l);
}
