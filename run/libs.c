/* run/libs.c — pass 1 through the program's shared libraries
 * (docs/ARCHITECTURE.md, "Shared libraries"): which libraries the loader
 * finds for BIN, their counting copies, each in its own range of the one
 * per-thread slot, and the environment that makes the loader take the
 * copies for one run (LD_AUDIT with timer/audit.c). */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <link.h>
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
 * runpath, $LD_LIBRARY_PATH, its cache), without running BIN.  A BIN
 * without a slash is given as ./BIN: the loader would look for it as a
 * library, in its search path. */
static char *loader_list(const char *interp, const char *bin, mt_error *err)
{
    int fds[2];
    if (pipe(fds) != 0) {
        mt_error_set(err, "cannot make a pipe: %s", strerror(errno));
        return NULL;
    }
    char *path = strchr(bin, '/') ? mt_xstrdup(bin) : mt_xasprintf("./%s", bin);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl(interp, interp, "--list", path, (char *)NULL);
        _exit(127);
    }
    free(path);
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

/* The loader (ld-linux): the kernel maps it with the program, before any
 * audit library, so no copy of it can be loaded.  glibc's other objects
 * are counted like any library, by default too (docs/ARCHITECTURE.md,
 * "glibc's own objects"). */
static bool the_loader(const char *name)
{
    return strncmp(name, "ld-linux", strlen("ld-linux")) == 0;
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
    if (!log || strcmp(spec, "all") == 0 || strcmp(spec, "none") == 0)
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

/* Why a library named by `spec` stays original, or NULL: it is counted. */
static char *note_for(const char *spec, const char *name, const char *path)
{
    if (!named(spec, name))
        return mt_xstrdup("not asked for");
    if (strcmp(path, "not found") == 0)
        return mt_xstrdup("not found by the loader");
    if (the_loader(name))
        return mt_xstrdup("the loader: mapped by the kernel, no copy can replace it");
    if (path[0] != '/' || strchr(path, '\n') || strchr(path, '\t'))
        return mt_xstrdup("its path cannot be handed to the audit library");
    return NULL;
}

static void add_library(mt_pass1_libraries *l, size_t *cap, const char *name, const char *path,
                        const char *spec, bool dlopened)
{
    mt_pass1_library lib = {.name = mt_xstrdup(name), .path = mt_xstrdup(path),
                            .asked = named(spec, name), .dlopened = dlopened,
                            .note = note_for(spec, name, path)};
    MT_PUSH(l->libs, l->nlibs, *cap, lib);
}

/* "\tNAME => PATH (0xADDR)" lines, each named one a library; the vDSO and
 * the loader itself have no "=>". */
static void parse_list(char *text, const char *spec, mt_pass1_libraries *out, size_t *cap)
{
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        line += strspn(line, " \t");
        char *arrow = strstr(line, " => ");
        if (!arrow)
            continue;
        *arrow = '\0';
        char *path = arrow + 4, *addr = strstr(path, " (0x");
        if (addr)
            *addr = '\0';
        /* a relative directory of $LD_LIBRARY_PATH: the run has mtool's cwd */
        char *absolute = path[0] != '/' ? realpath(path, NULL) : NULL;
        add_library(out, cap, line, absolute ? absolute : path, spec, false);
        free(absolute);
    }
}

/* ---- libraries opened by dlopen ------------------------------------------------- */

/* CACHE/libs: the copies, the audit library, what was seen opened. */
static char *libs_cache_dir(void)
{
    char *root = mt_cache_root(), *dir = mt_xasprintf("%s/libs", root);
    free(root);
    return dir;
}

/* The library of the list at `path` (a file or a copy's), or NULL. */
static mt_pass1_library *library_at(const mt_pass1_libraries *l, const char *path)
{
    for (size_t i = 0; i < l->nlibs; i++)
        if (strcmp(l->libs[i].path, path) == 0 ||
            (l->libs[i].ins.path && strcmp(l->libs[i].ins.path, path) == 0))
            return &l->libs[i];
    return NULL;
}

/* Where the libraries BIN opened with dlopen in earlier counts are kept,
 * one path a line: CACHE/libs/dlopened-HASH (HASH: BIN's content). */
static char *remembered_file(const char *bin, mt_error *err)
{
    uint8_t hash[32];
    char hex[65];
    if (mt_file_sha256(bin, hash, err) != 0)
        return NULL;
    mt_sha256_hex(hash, hex);
    char *dir = libs_cache_dir(), *path = mt_xasprintf("%s/dlopened-%.16s", dir, hex);
    free(dir);
    return path;
}

/* The lines of a file of paths; none when it does not exist. */
static char **read_paths(const char *file, size_t *n, mt_error *err)
{
    char **paths = NULL, line[4096];
    size_t cap = 0;
    *n = 0;
    FILE *fp = fopen(file, "r");
    if (!fp && errno != ENOENT) {
        mt_error_set(err, "%s: %s", file, strerror(errno));
        return NULL;
    }
    while (fp && fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == '/')
            MT_PUSH(paths, *n, cap, mt_xstrdup(line));
    }
    if (fp)
        fclose(fp);
    return paths ? paths : mt_xcalloc(1, sizeof *paths);
}

static void free_paths(char **paths, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}

static const char *file_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* The libraries earlier counts saw BIN open with dlopen, after the
 * loader's: each gets its range of counters like those. */
static int add_remembered(const char *bin, const char *spec, mt_pass1_libraries *l, size_t *cap,
                          mt_error *err)
{
    char *file = remembered_file(bin, err);
    size_t n;
    char **paths = file ? read_paths(file, &n, err) : NULL;
    free(file);
    if (!paths)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!library_at(l, paths[i]) && access(paths[i], R_OK) == 0)
            add_library(l, cap, file_name(paths[i]), paths[i], spec, true);
    free_paths(paths, n);
    return 0;
}

/* BIN's remembered libraries and `more`, written whole (temp file, rename). */
static int remember(const char *bin, char **more, size_t nmore, mt_error *err)
{
    char *file = remembered_file(bin, err), *dir = libs_cache_dir();
    size_t n;
    char **paths = file ? read_paths(file, &n, err) : NULL;
    mt_outfile out;
    int rc = paths ? 0 : -1;
    if (rc == 0 && (rc = mt_make_dirs(dir, err)) == 0 && (rc = mt_outfile_open(&out, file, err)) == 0) {
        for (size_t i = 0; i < n; i++)
            fprintf(out.fp, "%s\n", paths[i]);
        for (size_t i = 0; i < nmore; i++)
            fprintf(out.fp, "%s\n", more[i]);
        rc = mt_outfile_commit(&out, err);
    }
    if (paths)
        free_paths(paths, n);
    free(dir);
    free(file);
    return rc;
}

int mt_pass1_libraries_seen(mt_pass1_libraries *l, const char *bin, const char *seen,
                            mt_error *err)
{
    size_t n, nnew = 0, cap = l->nlibs;
    char **paths = read_paths(seen, &n, err), **fresh = mt_xcalloc(n + 1, sizeof *fresh);
    int rc = paths ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (library_at(l, paths[i]))
            continue; /* counted, or seen twice (dlclose, dlopen) */
        add_library(l, &cap, file_name(paths[i]), paths[i], l->spec, true);
        mt_pass1_library *lib = &l->libs[l->nlibs - 1];
        char *why = note_for("all", lib->name, lib->path); /* another count may ask for it */
        if (!why)
            fresh[nnew++] = paths[i];
        if (!lib->note)
            lib->note = mt_xstrdup("opened by dlopen, not known before the run (copies and "
                                   "counter ranges are made before it): counted from the "
                                   "next count of this program");
        free(why);
    }
    if (rc == 0 && nnew)
        rc = remember(bin, fresh, nnew, err);
    free(fresh);
    if (paths)
        free_paths(paths, n);
    return rc;
}

/* ---- their copies ------------------------------------------------------------ */

/* The set's identity: the executable's content and each library's, in
 * order (each library's range follows from the ones before it). */
uint64_t rn_set_id(const uint64_t *words, uint32_t n)
{
    uint64_t *zeros = mt_xcalloc((size_t)n + 1, sizeof *zeros);
    uint64_t set = mt_timer_set_id(words, zeros, n) | 1; /* never 0: "none" */
    free(zeros);
    return set;
}

static int set_identity(const char *bin, const mt_pass1_libraries *l, uint64_t *set, mt_error *err)
{
    uint64_t *words = mt_xcalloc(l->nlibs + 2, sizeof *words);
    uint8_t hash[32];
    int rc = mt_file_sha256(bin, hash, err);
    if (rc == 0)
        memcpy(&words[0], hash, 8);
    for (size_t i = 0; rc == 0 && i < l->nlibs; i++)
        if (!l->libs[i].note && (rc = mt_file_sha256(l->libs[i].path, l->libs[i].sha256, err)) == 0)
            memcpy(&words[i + 1], l->libs[i].sha256, 8);
    *set = rn_set_id(words, (uint32_t)l->nlibs + 1);
    free(words);
    return rc;
}

/* The thread or process creations a library imports (undefined dynamic
 * symbols) that the runtime does not wrap: pthread_create, thrd_create,
 * fork and _Fork are wrapped in a library's copy as in the executable
 * (timer/runtime.c, SERVING); clone and clone3 are not (a new stack, a
 * function of the caller's: docs/ARCHITECTURE.md, "Threads and processes a
 * library starts"): what they start counts into its creator's counters
 * unless libc is counted, whose copy hooks their system calls
 * (clear_creations_hooked). */
static void note_creation(void *ctx, const Elf64_Sym *sym, const char *name)
{
    static const char *const creations[] = {"clone", "clone3"};
    const char **starts = ctx;
    for (size_t i = 0; !*starts && sym->st_shndx == SHN_UNDEF &&
                       i < sizeof creations / sizeof *creations; i++)
        if (strcmp(name, creations[i]) == 0)
            *starts = creations[i];
}

static const char *creation_imported(const char *path)
{
    mt_elf_file f;
    mt_error ignored;
    const char *starts = NULL;
    if (mt_elf_file_open(&f, path, &ignored) != 0)
        return NULL;
    mt_elf_file_each_symbol(&f, SHT_DYNSYM, note_creation, &starts);
    mt_elf_file_close(&f);
    return starts;
}

/* A counted libc's copy gives what its clone and clone3 start a slot or a
 * profile of its own from the system call on (rewriter/relocate.c, "Tasks
 * a copy creates"): no library's import of them is inexact then. */
static void clear_creations_hooked(mt_pass1_libraries *l)
{
    bool libc_counted = false;
    for (size_t i = 0; i < l->nlibs; i++)
        libc_counted |= !l->libs[i].note && strncmp(l->libs[i].name, "libc.so", 7) == 0;
    for (size_t i = 0; libc_counted && i < l->nlibs; i++)
        l->libs[i].starts = NULL;
}

/* CACHE/libs/analysis-SHA256-TOOL: a library's analysis by its content
 * and this mtool build (mt_program_save's file is its build's layout). */
static char *saved_analysis(const mt_pass1_library *lib)
{
    char hex[65], *dir = libs_cache_dir();
    mt_sha256_hex(lib->sha256, hex);
    char *path = mt_xasprintf("%s/analysis-%s-%016" PRIx64, dir, hex, mt_tool_identity());
    free(dir);
    return path;
}

/* Its analysis, or a note: it stays original.  Analyzing libc took most of
 * a count's own time (about 0.4 s of 0.8 s user for `mawk 'BEGIN{print
 * 1}'`), the same for every count of every program that loads it: each
 * analysis is saved by content and read back (a few ms).  A saved one that
 * cannot be read is made anew; one that cannot be saved costs the next
 * count its analysis again, never this count. */
static void analyze_library(mt_pass1_library *lib)
{
    mt_analyze_options opt;
    mt_analyze_options_init(&opt);
    mt_error err;
    char *saved = saved_analysis(lib), *dir = libs_cache_dir();
    if (!(lib->prog = mt_program_load(saved, lib->path, &err)) &&
        (lib->prog = mt_analyze(lib->path, &opt, &err)) && mt_make_dirs(dir, &err) == 0)
        mt_program_save(lib->prog, saved, &err);
    if (!lib->prog)
        lib->note = mt_xstrdup(err.msg);
    free(saved);
    free(dir);
}

/* Its counting copy in its ranges (member), or a note: it stays original. */
static void rewrite_library(mt_pass1_library *lib, const mt_rewrite_options *member)
{
    mt_error err;
    if (mt_instrument_in_set(lib->prog, lib->path, member, &lib->ins, &err) != 0 ||
        mt_counter_map_read(lib->ins.path, &lib->map, &err) != 0) {
        mt_instrumented_free(&lib->ins);
        mt_counter_map_free(&lib->map);
        lib->note = mt_xstrdup(err.msg);
    }
}

/* A note is one line of the count report and of MTOOL_LIBS. */
static void one_line(char *note)
{
    for (char *c = note; c && *c; c++)
        *c = *c == '\n' || *c == '\t' ? ' ' : *c;
}

/* The counting copy of a library: its call-site records (when it has
 * calls through pointers) past the slot's slot_counters counters, none
 * when slot_counters is 0. */
static void counting_copy(mt_pass1_library *lib, uint64_t set, uint32_t slot_counters,
                          uint32_t call_sites_end)
{
    bool records = slot_counters && call_sites_end > lib->call_site_base;
    mt_rewrite_options member = {.counter_base = lib->counter_base, .libs_set = set,
                                 .library = true, .slot_counters = records ? slot_counters : 0,
                                 .call_site_base = records ? lib->call_site_base : 0};
    rewrite_library(lib, &member);
    one_line(lib->note);
}

void mt_pass1_libraries_copy(mt_pass1_libraries *l, uint32_t slot_counters)
{
    for (size_t i = 0; i < l->nlibs; i++) {
        mt_pass1_library *lib = &l->libs[i];
        uint32_t end = i + 1 < l->nlibs ? l->libs[i + 1].call_site_base : l->ncall_sites;
        if (!lib->note)
            counting_copy(lib, l->set, slot_counters, end);
    }
}

/* The audit library, from mtool's own bytes into the cache once per build. */
static char *audit_library(mt_error *err)
{
    char *dir = libs_cache_dir();
    char *path = mt_xasprintf("%s/audit-%016" PRIx64 ".so", dir, mt_tool_identity());
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

/* An environment variable's text, NAME=VALUE. */
static void push_env(mt_pass1_libraries *l, size_t *n, char *entry)
{
    l->env = mt_xrealloc(l->env, (*n + 2) * sizeof *l->env);
    l->env[(*n)++] = entry;
    l->env[*n] = NULL;
}

/* A directory of `path`, made absolute and free of symbolic links as the
 * loader's $ORIGIN is; NULL when it cannot be had. */
static char *origin_of(const char *path)
{
    char *real = realpath(path, NULL), *slash = real ? strrchr(real, '/') : NULL;
    if (slash)
        *slash = '\0';
    return real;
}

/* Bytes of static TLS the libraries' blocks take (each rounded to its
 * alignment, with room to align it), read from their files. */
static uint64_t libraries_tls_bytes(const mt_pass1_libraries *l)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < l->nlibs; i++) {
        mt_elf_file f;
        mt_error ignored;
        if (mt_elf_file_open(&f, l->libs[i].path, &ignored) != 0)
            continue;
        const Elf64_Phdr *tls = mt_elf_file_phdr(&f, PT_TLS);
        if (tls && tls->p_memsz < (1ull << 32) && tls->p_align < (1ull << 32))
            bytes += tls->p_memsz + 2 * (tls->p_align ? tls->p_align : 1);
        mt_elf_file_close(&f);
    }
    return bytes;
}

/* Under LD_AUDIT ld.so sets up the static TLS before it maps the program's
 * libraries: their blocks get the surplus only, glibc's optional part 512
 * bytes by default, where without it every start-up library's block is
 * static.  Too little, an initial-exec library fails to load ("cannot
 * allocate memory in static TLS block") and a TLS-descriptor one goes
 * dynamic: the surplus grows by the libraries' blocks (a GLIBC_TUNABLES of
 * the caller's own comes after, and wins). */
static char *static_tls_tunable(const mt_pass1_libraries *l)
{
    enum { GLIBC_OPTIONAL_STATIC_TLS = 512 };
    const char *before = getenv("GLIBC_TUNABLES");
    uint64_t bytes = GLIBC_OPTIONAL_STATIC_TLS + libraries_tls_bytes(l);
    return before && *before
               ? mt_xasprintf("GLIBC_TUNABLES=glibc.rtld.optional_static_tls=%" PRIu64 ":%s", bytes,
                              before)
               : mt_xasprintf("GLIBC_TUNABLES=glibc.rtld.optional_static_tls=%" PRIu64, bytes);
}

int mt_pass1_libraries_env(mt_pass1_libraries *l, const char *bin, const char *copy,
                           const char *seen, mt_error *err)
{
    if (!l->set)
        return 0;
    char *audit = audit_library(err);
    if (!audit)
        return -1;
    size_t n = 0;
    const char *before = getenv("LD_AUDIT");
    push_env(l, &n, before && *before ? mt_xasprintf("LD_AUDIT=%s:%s", audit, before)
                                      : mt_xasprintf("LD_AUDIT=%s", audit));
    free(audit);
    push_env(l, &n, static_tls_tunable(l));
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
    push_env(l, &n, list);
    /* What dlopen looks for in the copy's $ORIGIN is looked for in the
     * original's, where the program keeps its plug-ins. */
    char *from = origin_of(copy), *to = origin_of(bin);
    if (from && to && !strchr(from, '\t'))
        push_env(l, &n, mt_xasprintf("MTOOL_ORIGIN=%s\t%s", from, to));
    free(from);
    free(to);
    push_env(l, &n, mt_xasprintf("MTOOL_LIBS_SEEN=%s", seen));
    return 0;
}

/* Whether BIN looks for its libraries in $ORIGIN (its DT_RUNPATH or
 * DT_RPATH says so): its copy, in the cache, would find none of them
 * there, so even with --libs none the audit library pins each to the
 * original's (mt_pass1_libraries_env), counting none. */
static bool searches_origin(const char *bin)
{
    mt_elf_file f;
    mt_error ignored;
    if (mt_elf_file_open(&f, bin, &ignored) != 0)
        return false;
    static const int64_t paths[] = {DT_RUNPATH, DT_RPATH};
    uint64_t strtab, at, avail = 0;
    bool found = false;
    for (size_t i = 0; i < sizeof paths / sizeof *paths && !found; i++) {
        const char *text = mt_elf_file_dynamic(&f, DT_STRTAB, &strtab) &&
                                   mt_elf_file_dynamic(&f, paths[i], &at)
                               ? (const char *)mt_elf_file_bytes_from(&f, strtab + at, &avail)
                               : NULL;
        found = text && memmem(text, strnlen(text, avail), "ORIGIN", 6);
    }
    mt_elf_file_close(&f);
    return found;
}

int mt_pass1_libraries_prepare(const char *bin, const char *spec, bool by_default,
                               mt_pass1_libraries *out, FILE *log, mt_error *err)
{
    memset(out, 0, sizeof *out);
    out->spec = spec;
    out->by_default = by_default;
    if (strcmp(spec, "none") == 0 && !searches_origin(bin))
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
    size_t cap = 0;
    parse_list(text, spec, out, &cap);
    free(text);
    free(interp);
    if (add_remembered(bin, spec, out, &cap, err) != 0)
        return -1;
    warn_unmatched(spec, out, log);
    int rc = set_identity(bin, out, &out->set, err);
    for (size_t i = 0; rc == 0 && i < out->nlibs; i++) {
        mt_pass1_library *lib = &out->libs[i];
        if (log && lib->asked)
            fprintf(log, "mtool: %s %s\n", lib->note ? "leaving original:" : "instrumenting",
                    lib->name);
        lib->counter_base = out->ncounters;
        lib->call_site_base = out->ncall_sites;
        if (!lib->note)
            analyze_library(lib);
        one_line(lib->note);
        if (lib->note)
            continue;
        /* Its ranges from what any copy of it can use: the executable's
         * copy, whose counters size the slot, is made before any library's
         * (mt_pass1_libraries_copy), and each library's once. */
        uint32_t counters, call_sites;
        mt_rewrite_bounds(lib->prog, &counters, &call_sites);
        out->ncounters += counters;
        out->ncall_sites += call_sites;
        lib->starts = creation_imported(lib->path);
    }
    clear_creations_hooked(out);
    return rc;
}

/* ---- pass 2 through them ------------------------------------------------------ */

/* The libraries pass 1 counted, by the counts it kept of each
 * (RUNDIR/libs/NAME.counts.tsv): "NAME,NAME...", or "none". */
static char *counted_in(const char *rundir)
{
    char *dir = mt_xasprintf("%s/libs", rundir), *spec = mt_xstrdup("");
    static const char suffix[] = ".counts.tsv";
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t n = strlen(e->d_name), k = sizeof suffix - 1;
        if (n <= k || strcmp(e->d_name + n - k, suffix) != 0)
            continue;
        char *more = mt_xasprintf("%s%s%.*s", spec, spec[0] ? "," : "", (int)(n - k), e->d_name);
        free(spec);
        spec = more;
    }
    if (d)
        closedir(d);
    free(dir);
    if (!spec[0]) {
        free(spec);
        spec = mt_xstrdup("none");
    }
    return spec;
}

int mt_pass2_libraries_prepare(const char *rundir, const char *bin, mt_pass1_libraries *out,
                               mt_error *err)
{
    char *spec = counted_in(rundir);
    int rc = mt_pass1_libraries_prepare(bin, spec, false, out, NULL, err);
    out->owned_spec = spec; /* out->spec's text */
    for (size_t i = 0; rc == 0 && i < out->nlibs; i++) {
        mt_pass1_library *lib = &out->libs[i];
        if (lib->note)
            continue;
        rc = mt_rundir_refine_library(rundir, lib->name, lib->prog, &lib->counts, err);
    }
    return rc;
}

/* The calling objects' PLT stubs by import name, each resolved to the
 * first object in the loader's order defining it (lib: a library's index,
 * else one of the two below). */
typedef struct {
    const char *name;       /* the stub's import */
    size_t len;
    size_t from;            /* its object: MT_FROM_EXECUTABLE or a library's index */
    uint32_t stub;
    size_t lib;
    uint64_t value;
} stub_import;

static const size_t UNRESOLVED = SIZE_MAX, IN_EXECUTABLE = SIZE_MAX - 1;

typedef struct {
    stub_import *items;
    size_t n, cap, lib;
    size_t only_from;       /* resolve only this object's stubs (UNRESOLVED: all) */
    void *loaded;           /* the object being read, when mtool has it loaded too */
    uintptr_t bias;         /* its load bias in mtool */
} import_lookup;

static int by_import_name(const void *a, const void *b)
{
    const stub_import *x = a, *y = b;
    int c = strncmp(x->name, y->name, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* The link-time address of the function an indirect function (IFUNC) of
 * the object resolves to, or 0.  Its symbol is the resolver's; the loader
 * calls that in the process, choosing by the CPU (glibc's memcpy, strlen,
 * ...: the string functions a program calls most).  mtool has glibc's
 * objects loaded itself, from the same files, on the same CPU and with
 * the run's environment (GLIBC_TUNABLES), so its own loader's choice is
 * the run's; an object mtool has not loaded leaves them unknown work. */
static uint64_t ifunc_choice(const import_lookup *look, const char *name)
{
    void *at = look->loaded ? dlsym(look->loaded, name) : NULL;
    return at ? (uint64_t)((uintptr_t)at - look->bias) : 0;
}

/* A function the object defines and exports, for the stubs that import it
 * and no earlier object defined (the loader's order: the first wins; the
 * executable first, its own stubs included).  An indirect function's value
 * is what it resolves to (ifunc_choice). */
static void resolve_import(void *ctx, const Elf64_Sym *sym, const char *name)
{
    import_lookup *look = ctx;
    int bind = ELF64_ST_BIND(sym->st_info), type = ELF64_ST_TYPE(sym->st_info);
    if (sym->st_shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_GNU_IFUNC) ||
        (bind != STB_GLOBAL && bind != STB_WEAK) || !look->n)
        return;
    uint64_t value = type == STT_FUNC ? sym->st_value : ifunc_choice(look, name);
    if (!value)
        return;
    stub_import key = {.name = name, .len = strlen(name)};
    stub_import *hit = bsearch(&key, look->items, look->n, sizeof key, by_import_name);
    size_t at = hit ? (size_t)(hit - look->items) : look->n;
    while (at > 0 && at < look->n && by_import_name(&key, &look->items[at - 1]) == 0)
        at--; /* bsearch lands on any of the stubs of one name */
    for (; at < look->n && by_import_name(&key, &look->items[at]) == 0; at++)
        if (look->items[at].lib == UNRESOLVED &&
            (look->only_from == UNRESOLVED || look->items[at].from == look->only_from)) {
            look->items[at].lib = look->lib;
            look->items[at].value = value;
        }
}

/* Object `from`'s stubs whose GOT slot's relocation names an import (the
 * analyzer's mt_procedure.import), added to look. */
static void add_plt_imports(import_lookup *look, const mt_program *prog, size_t from)
{
    for (uint32_t p = 0; p < prog->nprocs; p++) {
        const char *import = prog->procs[p].import;
        if (prog->procs[p].is_plt && import) {
            stub_import si = {import, strlen(import), from, p, UNRESOLVED, 0};
            MT_PUSH(look->items, look->n, look->cap, si);
        }
    }
}

/* The exports of the file at `path` resolve what is still unresolved.
 * RTLD_NOLOAD: the file when mtool has it loaded already (the loader
 * matches it by device and inode), never a new object in mtool. */
static void resolve_in(import_lookup *look, const char *path, size_t lib)
{
    mt_elf_file f;
    mt_error ignored;
    if (mt_elf_file_open(&f, path, &ignored) != 0)
        return; /* unreadable: what it exports stays unresolved */
    look->lib = lib;
    struct link_map *map = NULL;
    look->loaded = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (look->loaded && dlinfo(look->loaded, RTLD_DI_LINKMAP, &map) != 0)
        map = NULL;
    look->bias = map ? map->l_addr : 0;
    if (!map && look->loaded) {
        dlclose(look->loaded);
        look->loaded = NULL;
    }
    mt_elf_file_each_symbol(&f, SHT_DYNSYM, resolve_import, look);
    if (look->loaded)
        dlclose(look->loaded);
    look->loaded = NULL;
    mt_elf_file_close(&f);
}

/* Every calling object's stubs (the executable's and the counted
 * libraries'), resolved where the loader would bind them: a library's in
 * the executable first, which the loader searches first (a function it
 * exports interposes), then in the libraries in the loader's order.  Each
 * object's symbols are read once for all the callers (one scan per
 * object, not one per caller and object: n^2 scans with --libs all). */
static import_lookup resolve_all_imports(const mt_pass1_libraries *l, const mt_program *exe)
{
    import_lookup look = {.only_from = UNRESOLVED};
    add_plt_imports(&look, exe, MT_FROM_EXECUTABLE);
    for (size_t i = 0; i < l->nlibs; i++)
        if (!l->libs[i].note && l->libs[i].prog)
            add_plt_imports(&look, l->libs[i].prog, i);
    qsort(look.items, look.n, sizeof *look.items, by_import_name);
    resolve_in(&look, exe->path, IN_EXECUTABLE);
    for (size_t i = 0; i < l->nlibs; i++) {
        const char *path = l->libs[i].path;
        /* dlopen'ed objects are not in the global scope; a name without a
         * '/' is one the loader did not find */
        if (!l->libs[i].dlopened && path && path[0] == '/')
            resolve_in(&look, path, i);
    }
    /* An object opened by dlopen binds what the global scope does not
     * define in its own scope, itself first (libbz2's calls of its own
     * exports, opened for Python's _bz2). */
    for (size_t i = 0; i < l->nlibs; i++) {
        const char *path = l->libs[i].path;
        if (l->libs[i].dlopened && path && path[0] == '/') {
            look.only_from = i;
            resolve_in(&look, path, i);
        }
    }
    return look;
}

/* Object `from`'s resolved stubs joined to counted libraries' procedures;
 * a stub resolving to its own object is no call across objects (bind_own). */
static void join_imports_of(mt_pass1_libraries *l, size_t from, const import_lookup *look,
                            size_t *cap)
{
    for (size_t k = 0; k < look->n; k++) {
        const stub_import *si = &look->items[k];
        mt_pass1_library *lib = si->lib < l->nlibs ? &l->libs[si->lib] : NULL;
        if (si->from != from || !lib || si->lib == from || lib->note || !lib->prog)
            continue; /* no library defines it, or one not counted (libc by default) */
        uint32_t q = mt_procedure_with_entry(lib->prog, si->value);
        if (q == MT_NONE)
            continue;
        mt_known_import ki = {from, si->stub, si->lib, q, 0};
        MT_PUSH(l->imports, l->nimports, *cap, ki);
    }
}

/* Object `from`'s calls through pointers into procedures of other counted
 * libraries (its cross callees, named by the library and the procedure's
 * entry as pass 1 recorded them) joined as its stubs are. */
static void join_cross_callees_of(mt_pass1_libraries *l, size_t from, const mt_program *prog,
                                  size_t *cap)
{
    for (uint32_t j = 0; j < prog->ncross_callees; j++) {
        const mt_cross_callee *cc = &prog->cross_callees[j];
        for (size_t i = 0; i < l->nlibs; i++) {
            const mt_pass1_library *lib = &l->libs[i];
            uint32_t q = i == from || lib->note || !lib->prog || strcmp(lib->name, cc->object) != 0
                             ? MT_NONE : mt_procedure_with_entry(lib->prog, cc->target);
            if (q == MT_NONE)
                continue;
            mt_known_import ki = {from, MT_NONE, i, q, j + 1};
            MT_PUSH(l->imports, l->nimports, *cap, ki);
            break;
        }
    }
}

/* Object `from`'s stubs that the loader binds to its own procedures
 * become calls to them (mt_bind_stubs): -fPIC code calls its exported
 * functions through its PLT, and bracketed as outside time such a call
 * hid work the caller's own objects then measured as callbacks (libbz2's
 * loop around BZ2_compressBlock@plt measured the compressor's timed loops
 * inside it, +3000% of its own prediction).  Returns whether any did. */
static bool bind_own(mt_program *prog, size_t from, size_t in, const import_lookup *look)
{
    uint32_t *stubs = mt_xcalloc(look->n + 1, sizeof *stubs), *procs = mt_xcalloc(look->n + 1, sizeof *procs);
    size_t n = 0;
    for (size_t k = 0; k < look->n; k++) {
        const stub_import *si = &look->items[k];
        uint32_t q = si->from == from && si->lib == in ? mt_procedure_with_entry(prog, si->value) : MT_NONE;
        if (q != MT_NONE && !prog->procs[q].is_plt) {
            stubs[n] = si->stub;
            procs[n++] = q;
        }
    }
    if (n)
        mt_bind_stubs(prog, stubs, procs, n);
    free(stubs);
    free(procs);
    return n > 0;
}

void mt_pass2_libraries_join(mt_pass1_libraries *l, mt_program *exe, bool *rebound)
{
    free(l->imports); /* joined anew */
    l->imports = NULL;
    l->nimports = 0;
    size_t cap = 0;
    import_lookup look = resolve_all_imports(l, exe);
    rebound[l->nlibs] = bind_own(exe, MT_FROM_EXECUTABLE, IN_EXECUTABLE, &look);
    for (size_t i = 0; i < l->nlibs; i++)
        rebound[i] = !l->libs[i].note && l->libs[i].prog && bind_own(l->libs[i].prog, i, i, &look);
    join_imports_of(l, MT_FROM_EXECUTABLE, &look, &cap);
    join_cross_callees_of(l, MT_FROM_EXECUTABLE, exe, &cap);
    for (size_t i = 0; i < l->nlibs; i++)
        if (!l->libs[i].note && l->libs[i].prog) {
            join_imports_of(l, i, &look, &cap);
            join_cross_callees_of(l, i, l->libs[i].prog, &cap);
        }
    free(look.items);
}

int mt_pass2_libraries_time(mt_pass1_libraries *l, const mt_timed_object *const *timed,
                            const uint32_t *ntimed, uint64_t set, uint32_t slot_counters,
                            mt_error *err)
{
    uint32_t timer_base = 0;
    for (size_t i = 0; i < l->nlibs; i++) {
        mt_pass1_library *lib = &l->libs[i];
        if (lib->note)
            continue;
        mt_rewrite_options member = {.counter_base = lib->counter_base, .libs_set = set,
                                     .library = true, .timers_only = true, .timed = timed[i],
                                     .ntimed = ntimed[i], .timer_base = timer_base,
                                     .slot_counters = slot_counters};
        timer_base += ntimed[i];
        mt_instrumented_free(&lib->ins); /* the counting copy: the timed one loads instead */
        if (mt_instrument_in_set(lib->prog, lib->path, &member, &lib->ins, err) != 0)
            return -1;
    }
    l->set = set;
    return 0;
}

void rn_library_accumulate(const mt_pass1_library *lib, uint64_t *counts, mt_pass1_totals *t)
{
    mt_counter_map_derive(&lib->map, counts); /* its own range of counts */
    rn_accumulate(lib->prog, &lib->map, counts, t);
}

void mt_pass1_libraries_accumulate(mt_pass1_libraries *l, uint64_t *counts)
{
    for (size_t i = 0; i < l->nlibs; i++)
        if (!l->libs[i].note)
            rn_library_accumulate(&l->libs[i], counts, &l->libs[i].totals);
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
        free(lib->counts);
    }
    free(l->libs);
    free(l->owned_spec);
    free(l->imports);
    for (char **e = l->env; e && *e; e++)
        free(*e);
    free(l->env);
    memset(l, 0, sizeof *l);
}

/* ---- tracing through them (mtool sim) ----------------------------------------- */

uint32_t mt_trace_libraries_number(mt_pass1_libraries *l, uint32_t first_code)
{
    uint32_t next = first_code;
    for (size_t i = 0; i < l->nlibs; i++) {
        mt_pass1_library *lib = &l->libs[i];
        if (lib->note)
            continue;
        lib->code_base = next - 1; /* a library's own ids start at 1 */
        next = lib->code_base + mt_code_object_loops(lib->prog, lib->prog->nprocs);
    }
    return next;
}

void mt_trace_libraries_copy(mt_pass1_libraries *l, const mt_timed_object *const *traced,
                             const uint32_t *ntraced, uint32_t slot_counters,
                             uint32_t slot_call_sites, FILE *log)
{
    for (size_t i = 0; i < l->nlibs; i++) {
        mt_pass1_library *lib = &l->libs[i];
        if (lib->note)
            continue;
        mt_rewrite_options member = {.counter_base = lib->counter_base, .libs_set = l->set,
                                     .library = true, .trace = true,
                                     .traced = traced ? traced[i] : NULL,
                                     .ntraced = traced ? ntraced[i] : 0,
                                     .slot_counters = slot_counters,
                                     .call_site_base = lib->call_site_base,
                                     .slot_call_sites = slot_call_sites,
                                     .code_base = lib->code_base};
        mt_instrumented ins;
        mt_error err;
        if (traced && !ntraced[i]) /* none of its blocks */
            lib->code_base = 0;
        if (lib->code_base && mt_instrument_in_set(lib->prog, lib->path, &member, &ins, &err) != 0) {
            if (log)
                fprintf(log, "mtool: warning: %s: counted, not traced: %s\n", lib->name, err.msg);
            lib->code_base = 0;
        } else if (lib->code_base) {
            lib->ins = ins;
        }
        if (!lib->code_base) /* its counting copy, without call-site records */
            counting_copy(lib, l->set, 0, 0);
    }
}

const mt_pass1_library *mt_trace_library_of(const mt_pass1_libraries *l, uint32_t code,
                                            uint32_t *own)
{
    for (size_t i = 0; i < l->nlibs; i++) {
        const mt_pass1_library *lib = &l->libs[i];
        if (lib->note || !lib->code_base || code <= lib->code_base)
            continue;
        uint32_t k = code - lib->code_base;
        if (k < mt_code_object_loops(lib->prog, lib->prog->nprocs)) {
            *own = k;
            return lib;
        }
    }
    return NULL;
}
