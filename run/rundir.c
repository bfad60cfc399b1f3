/* run/rundir.c — the run directory's own files (docs/REPORT.md, "The run
 * directory"): format, counts.tsv, call_targets.tsv, argv, pass1.txt,
 * pass2.tsv, machine.txt and sim.json, each with its one writer and its one reader here.  Names and paths in the
 * tab-separated files are escaped (mt_tsv_field), so any byte a symbol or
 * a path may hold — newline, tab, backslash — reads back as written. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* One line at a time, without its newline; NULL at the end.  No length
 * limit: a C++ symbol can be kilobytes long. */
typedef struct {
    FILE *fp;
    const char *path;
    char *line;
    size_t cap;
    int lineno;
} line_reader;

static char *next_line(line_reader *r)
{
    ssize_t n = getline(&r->line, &r->cap, r->fp);
    if (n < 0)
        return NULL;
    r->lineno++;
    if (n > 0 && r->line[n - 1] == '\n')
        r->line[n - 1] = '\0';
    return r->line;
}

static int open_lines(line_reader *r, const char *path, mt_error *err)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    r->fp = mt_fopen_regular(path, err);
    return r->fp ? 0 : -1;
}

static void close_lines(line_reader *r)
{
    if (r->fp)
        fclose(r->fp);
    free(r->line);
}

/* Splits a line at its tabs into at most `max` fields, unescaped in place;
 * the number of fields, or -1 for an escape mtool never writes. */
static int split_fields(char *line, char **fields, int max)
{
    int n = 0;
    for (char *f = line; f && n < max; n++) {
        char *tab = strchr(f, '\t');
        if (tab)
            *tab++ = '\0';
        if (mt_tsv_unescape(f) != 0)
            return -1;
        fields[n] = f;
        f = tab;
    }
    return n;
}

static char *rundir_file(const char *rundir, const char *name)
{
    return mt_xasprintf("%s/%s", rundir, name);
}

/* One of the run directory's files, opened to be written whole (mt_outfile). */
static int open_rundir_output(mt_outfile *out, const char *rundir, const char *name, mt_error *err)
{
    char *path = rundir_file(rundir, name);
    int rc = mt_outfile_open(out, path, err);
    free(path);
    return rc;
}

/* ---- format: the run directory's version ----------------------------------- */

/* "mtool-run VERSION", one line, written before the other files. */
static int write_format(const char *rundir, mt_error *err)
{
    mt_outfile out;
    if (open_rundir_output(&out, rundir, "format", err) != 0)
        return -1;
    fprintf(out.fp, "mtool-run %d\n", MT_RUNDIR_VERSION);
    return mt_outfile_commit(&out, err);
}

/* -1 with err when the directory says a format this mtool does not read.
 * No format file: version 1 (the same files, before they carried a
 * version), whose files are then read as they parse. */
static int check_format(const char *rundir, mt_error *err)
{
    char *path = rundir_file(rundir, "format");
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        free(path);
        return 0;
    }
    line_reader r;
    int rc = open_lines(&r, path, err), version = 0, used = 0;
    const char *line = rc == 0 ? next_line(&r) : NULL;
    if (rc == 0 && (!line || sscanf(line, "mtool-run %d%n", &version, &used) != 1 || line[used] ||
                    version < 1 || version > MT_RUNDIR_VERSION)) {
        mt_error_set(err, "%s: run directory format '%.60s' unknown to this mtool (it reads "
                          "mtool-run 1 to %d)", path, line ? line : "", MT_RUNDIR_VERSION);
        rc = -1;
    }
    close_lines(&r);
    free(path);
    return rc;
}

/* ---- counts.tsv: pass 1's count of every counted block -------------------- */

static int write_counts_named(const char *rundir, const char *name, const mt_program *prog,
                              const mt_counter_map *map, const uint64_t *counts, mt_error *err)
{
    mt_outfile out;
    if (open_rundir_output(&out, rundir, name, err) != 0)
        return -1;
    fprintf(out.fp, "# block\tcount\tprocedure\n");
    for (uint32_t i = 0; i < map->ncounters; i++) {
        if ((map->addrs[i] & MT_COUNTER_FALLBACK) || !map->addrs[i])
            continue; /* not a block (count.json and the summary report it), or a
                         shared library's counter (not kept yet) */
        uint32_t p = mt_procedure_at(prog, map->addrs[i]);
        fprintf(out.fp, "0x%" PRIx64 "\t%" PRIu64 "\t", map->addrs[i], counts[i]);
        mt_tsv_field(out.fp, p == MT_NONE ? "?" : prog->procs[p].name);
        fputc('\n', out.fp);
    }
    return mt_outfile_commit(&out, err);
}

/* One counts line into counts[]; the procedure named must be the one at
 * the block, else the counts are another binary's. */
static int read_count_line(line_reader *r, const mt_program *prog, const uint64_t *first,
                           uint64_t *counts, mt_error *err)
{
    char *f[3];
    uint64_t addr, n;
    char *end;
    if (split_fields(r->line, f, 3) != 3 || sscanf(f[0], "0x%" SCNx64, &addr) != 1 ||
        (n = strtoull(f[1], &end, 10), end == f[1] || *end)) {
        mt_error_set(err, "%s:%d: not a counts line (0xADDRESS<TAB>COUNT<TAB>PROCEDURE)", r->path,
                     r->lineno);
        return -1;
    }
    uint32_t p = mt_procedure_at(prog, addr);
    uint32_t b = p == MT_NONE ? MT_NONE : mt_block_at(&prog->procs[p], addr);
    if (b == MT_NONE || prog->procs[p].blocks[b].start != addr ||
        (strcmp(f[2], "?") != 0 && strcmp(f[2], prog->procs[p].name) != 0)) {
        mt_error_set(err, "%s:%d: no block of that procedure starts at 0x%" PRIx64 " in %s "
                          "(counts of another binary?)", r->path, r->lineno, addr, prog->path);
        return -1;
    }
    counts[first[p] + b] = n;
    return 0;
}

uint64_t *mt_rundir_read_counts(const char *path, const mt_program *prog, mt_error *err)
{
    char *copy = mt_xstrdup(path);
    int known = check_format(dirname(copy), err);
    free(copy);
    line_reader r;
    if (known != 0 || open_lines(&r, path, err) != 0)
        return NULL;
    uint64_t *first = mt_block_offsets(prog);
    uint64_t *counts = mt_xcalloc(first[prog->nprocs] + 1, sizeof *counts);
    int rc = 0;
    while (rc == 0 && next_line(&r))
        if (r.line[0] != '#')
            rc = read_count_line(&r, prog, first, counts, err);
    close_lines(&r);
    free(first);
    if (rc != 0) {
        free(counts);
        return NULL;
    }
    return counts;
}

/* ---- call_targets.tsv: pass 1's calls through pointers -------------------- */

/* The counted library a merged target lies in (its index in `libs`), as
 * the runtime named its copy (timer/timer.h, mt_profile_library): by its
 * call-site records, or by its counter_base when it has none;
 * MT_FROM_EXECUTABLE for the executable's; NO_COUNTED_OBJECT: no counted
 * object this pass 1 knows. */
static const size_t NO_COUNTED_OBJECT = SIZE_MAX - 1;
static size_t target_object(const mt_pass1_libraries *libs, const mt_merged_call_target *t)
{
    if (!t->in_library)
        return MT_FROM_EXECUTABLE;
    for (size_t i = 0; libs && i < libs->nlibs; i++) {
        const mt_pass1_library *lib = &libs->libs[i];
        bool records = lib->map.ncall_sites > lib->call_site_base;
        if (!lib->note && (t->first < t->end ? records && lib->call_site_base == t->first &&
                                                   lib->map.ncall_sites == t->end
                                             : !records && lib->counter_base == t->first))
            return i;
    }
    return NO_COUNTED_OBJECT;
}

/* One target of a site of object `self` (MT_FROM_EXECUTABLE or a library's
 * index): 0xTARGET in its own procedures, LIB:0xTARGET at a procedure's
 * entry in another counted library, else outside; then its calls and
 * callee. */
static void write_call_target(FILE *fp, const mt_program *prog, size_t self,
                              const mt_pass1_libraries *libs, const mt_merged_call_target *t)
{
    size_t in = target_object(libs, t);
    const mt_pass1_library *other = in != self && libs && in < libs->nlibs ? &libs->libs[in] : NULL;
    uint32_t q = MT_NONE;
    if (in == self && mt_procedure_at(prog, t->target) != MT_NONE) {
        q = mt_procedure_with_entry(prog, t->target);
        fprintf(fp, "0x%" PRIx64, t->target);
    } else if (other && (q = mt_procedure_with_entry(other->prog, t->target)) != MT_NONE) {
        mt_tsv_field(fp, other->name);
        fprintf(fp, ":0x%" PRIx64, t->target);
    } else {
        fprintf(fp, "outside");
    }
    fprintf(fp, "\t%" PRIu64 "\t", t->calls);
    mt_tsv_field(fp, q == MT_NONE ? "?" : other ? other->prog->procs[q].name : prog->procs[q].name);
    fputc('\n', fp);
}

/* Per recorded site of object `self` (0 in the map: another object's), its
 * targets with their calls: link-time addresses of that object, or of the
 * counted library another procedure's entry lies in (LIB:0xTARGET); a
 * target in neither ("outside": an object not counted, code no analysis
 * knows, or the executable reached from a library) and the calls to
 * targets past a thread's record ("overflow") name no callee. */
static int write_call_targets_named(const char *rundir, const char *name, const mt_program *prog,
                                    size_t self, const mt_pass1_libraries *libs,
                                    const mt_counter_map *map, const profile_merge *merge,
                                    mt_error *err)
{
    mt_outfile out;
    if (open_rundir_output(&out, rundir, name, err) != 0)
        return -1;
    fprintf(out.fp, "# site\ttarget\tcalls\tcallee\n");
    for (uint32_t i = 0; i < map->ncall_sites && i < merge->ncall_sites; i++) {
        const mt_call_site_totals *t = &merge->call_sites[i];
        for (uint32_t k = 0; map->call_sites[i] && k < t->ntargets; k++) {
            fprintf(out.fp, "0x%" PRIx64 "\t", map->call_sites[i]);
            write_call_target(out.fp, prog, self, libs, &t->targets[k]);
        }
        if (map->call_sites[i] && t->overflow)
            fprintf(out.fp, "0x%" PRIx64 "\toverflow\t%" PRIu64 "\t?\n", map->call_sites[i],
                    t->overflow);
    }
    return mt_outfile_commit(&out, err);
}

/* LIB:0xTARGET: a target in another counted object, read into c (its
 * object's name and address there: mt_add_dynamic_calls makes it a cross
 * callee of the calling object). */
static bool read_other_object_target(char *field, mt_call_target_count *c)
{
    char *colon = strrchr(field, ':');
    char tail;
    if (!colon || colon == field || sscanf(colon + 1, "0x%" SCNx64 "%c", &c->target, &tail) != 1)
        return false;
    *colon = '\0';
    c->object = mt_xstrdup(field);
    return true;
}

static int read_call_target_line(line_reader *r, mt_call_target_count *c, mt_error *err)
{
    char *f[4], *end;
    memset(c, 0, sizeof *c);
    if (split_fields(r->line, f, 4) < 3 || sscanf(f[0], "0x%" SCNx64, &c->site) != 1 ||
        (strcmp(f[1], "overflow") != 0 && strcmp(f[1], "outside") != 0 &&
         !read_other_object_target(f[1], c) && sscanf(f[1], "0x%" SCNx64, &c->target) != 1) ||
        (c->calls = strtoull(f[2], &end, 10), end == f[2] || *end)) {
        free((char *)c->object);
        mt_error_set(err, "%s:%d: not a call-target line (0xSITE<TAB>0xTARGET, LIB:0xTARGET, "
                          "outside or overflow<TAB>CALLS)", r->path, r->lineno);
        return -1;
    }
    return 0;
}

int mt_rundir_read_call_targets(const char *path, mt_call_target_count **out, size_t *nout,
                                mt_error *err)
{
    *out = NULL;
    *nout = 0;
    if (access(path, F_OK) != 0 && errno == ENOENT)
        return 0; /* a run of an older mtool: calls through pointers stay unknown */
    line_reader r;
    if (open_lines(&r, path, err) != 0)
        return -1;
    int rc = 0;
    mt_call_target_count *t = NULL;
    size_t n = 0, cap = 0;
    while (rc == 0 && next_line(&r)) {
        mt_call_target_count c;
        if (r.line[0] == '#')
            continue;
        if ((rc = read_call_target_line(&r, &c, err)) == 0)
            MT_PUSH(t, n, cap, c);
    }
    close_lines(&r);
    if (rc != 0) {
        mt_rundir_free_call_targets(t, n);
        return -1;
    }
    *out = t;
    *nout = n;
    return 0;
}

void mt_rundir_free_call_targets(mt_call_target_count *targets, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free((char *)targets[i].object);
    free(targets);
}

/* ---- argv and pass1.txt: what `mtool time RUNDIR` builds on ---------------- */

/* A command line as NAME: each argument followed by a NUL (the one byte an
 * argument cannot hold). */
static int write_command_line(const char *rundir, const char *name, char **argv, mt_error *err)
{
    mt_outfile out;
    if (open_rundir_output(&out, rundir, name, err) != 0)
        return -1;
    for (char **a = argv; *a; a++)
        fwrite(*a, 1, strlen(*a) + 1, out.fp);
    return mt_outfile_commit(&out, err);
}

/* argv: the program's command line, each argument followed by a NUL (the one
 * byte an argument cannot hold).  pass1.txt: KEY<TAB>VALUE lines, the
 * binary's path escaped, its content hash, the uninstrumented run's times. */
static int write_argv_and_pass1(const char *rundir, char **argv, const mt_run_result *base,
                                mt_error *err)
{
    char *bin = mt_absolute(argv[0]);
    uint8_t sha[32];
    mt_outfile out;
    int rc = !bin ? (mt_error_set(err, "%s: cannot resolve its path", argv[0]), -1)
                  : mt_file_sha256(bin, sha, err);
    if (rc == 0)
        rc = write_command_line(rundir, "argv", argv, err);
    if (rc == 0 && (rc = open_rundir_output(&out, rundir, "pass1.txt", err)) == 0) {
        fprintf(out.fp, "# the pass-1 run 'mtool time' builds on\nbinary\t");
        mt_tsv_field(out.fp, bin);
        char hex[65];
        mt_sha256_hex(sha, hex);
        fprintf(out.fp, "\nsha256\t%s\n", hex);
        if (base)
            fprintf(out.fp, "base_user\t%.6f\nbase_sys\t%.6f\nbase_wall\t%.6f\n"
                            "base_tsc_per_cycle\t%.6f\n",
                    base->user, base->sys, base->wall, base->tsc_per_cycle);
        rc = mt_outfile_commit(&out, err);
    }
    free(bin);
    return rc;
}

void mt_pass1_free(mt_pass1 *p)
{
    free(p->binary);
    free(p->sha256);
    free(p->argv);
    free(p->argv_buf);
    memset(p, 0, sizeof *p);
}

/* The whole file, NUL-terminated (its own NULs kept: argv's separators). */
static char *slurp(const char *path, size_t *len, mt_error *err)
{
    FILE *fp = mt_fopen_regular(path, err);
    if (!fp)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        buf = mt_xgrow(buf, &cap, n + 4096, 1);
        got = fread(buf + n, 1, cap - n - 1, fp);
        n += got;
    } while (got > 0);
    fclose(fp);
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* A command line kept as NAME: each argument followed by a NUL; *buf holds
 * the words *argv points into.  -1 when unreadable or empty. */
static int read_command_line(const char *rundir, const char *name, char **buf, char ***argv,
                             mt_error *err)
{
    char *path = rundir_file(rundir, name);
    size_t len = 0, n = 0;
    *buf = slurp(path, &len, err);
    if (*buf) {
        for (size_t i = 0; i < len; i++)
            n += (*buf)[i] == '\0';
        *argv = mt_xcalloc(n + 1, sizeof **argv);
        for (size_t i = 0, k = 0; k < n; i += strlen(*buf + i) + 1)
            (*argv)[k++] = *buf + i;
        if (!n)
            mt_error_set(err, "%s: an empty command line", path);
    }
    free(path);
    return *buf && n ? 0 : -1;
}

static int read_argv(const char *rundir, mt_pass1 *p, mt_error *err)
{
    return read_command_line(rundir, "argv", &p->argv_buf, &p->argv, err);
}

static void read_pass1_field(mt_pass1 *p, const char *key, const char *value)
{
    if (strcmp(key, "binary") == 0 && !p->binary)
        p->binary = mt_xstrdup(value);
    else if (strcmp(key, "sha256") == 0 && !p->sha256)
        p->sha256 = mt_xstrdup(value);
    else if (strcmp(key, "base_user") == 0)
        p->base_user = strtod(value, NULL);
    else if (strcmp(key, "base_sys") == 0)
        p->base_sys = strtod(value, NULL);
    else if (strcmp(key, "base_wall") == 0)
        p->base_wall = strtod(value, NULL);
    else if (strcmp(key, "base_tsc_per_cycle") == 0)
        p->base_tsc_per_cycle = strtod(value, NULL);
}

bool mt_rundir_has_pass1(const char *rundir)
{
    char *path = rundir_file(rundir, "pass1.txt");
    bool has = access(path, R_OK) == 0;
    free(path);
    return has;
}

void mt_rundir_forget_pass1(const char *rundir)
{
    char *path = rundir_file(rundir, "pass1.txt");
    unlink(path);
    free(path);
}

int mt_rundir_read_pass1(const char *rundir, mt_pass1 *p, mt_error *err)
{
    memset(p, 0, sizeof *p);
    p->base_user = p->base_sys = p->base_wall = p->base_tsc_per_cycle = NAN;
    if (check_format(rundir, err) != 0)
        return -1;
    char *path = rundir_file(rundir, "pass1.txt");
    line_reader r;
    int rc = open_lines(&r, path, err);
    while (rc == 0 && next_line(&r)) {
        char *f[2];
        if (r.line[0] == '#')
            continue;
        if (split_fields(r.line, f, 2) != 2) {
            mt_error_set(err, "%s:%d: not a KEY<TAB>VALUE line", path, r.lineno);
            rc = -1;
        } else
            read_pass1_field(p, f[0], f[1]);
    }
    close_lines(&r);
    if (rc == 0 && (!p->binary || !p->sha256)) {
        mt_error_set(err, "%s: no binary or hash recorded", path);
        rc = -1;
    }
    if (rc == 0 && read_argv(rundir, p, err) != 0) {
        if (p->argv)
            mt_error_set(err, "%s/argv: no command line recorded", rundir);
        rc = -1;
    }
    if (rc != 0) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        mt_error_set(err, "%.400s (not a run directory of 'mtool count'?)", why);
    }
    free(path);
    return rc;
}

/* The binary must be the one pass 1 counted. */
int mt_rundir_check_binary(const mt_pass1 *p, mt_error *err)
{
    uint8_t sha[32];
    if (mt_file_sha256(p->binary, sha, err) != 0)
        return -1;
    char hex[65];
    mt_sha256_hex(sha, hex);
    if (strcmp(hex, p->sha256) != 0) {
        mt_error_set(err, "%s: changed since pass 1 (its content hash differs): run 'mtool count' "
                          "again", p->binary);
        return -1;
    }
    return 0;
}

/* The program as pass 1 saw it run: its counts (into *counts) and its
 * calls through pointers refine the analysis, once. */
/* libs/NAME.counts.tsv and libs/NAME.call_targets.tsv: each counted shared
 * library's blocks and calls through pointers, as counts.tsv and
 * call_targets.tsv ('/' in a name becomes '_'); pass 2 reads them back
 * (mt_rundir_refine_library). */
static char *library_file(const char *name, const char *suffix)
{
    char *file = mt_xasprintf("libs/%s.%s", name, suffix);
    for (char *c = file + 5; *c && c < file + 5 + strlen(name); c++)
        *c = *c == '/' ? '_' : *c;
    return file;
}

/* Counts and calls through pointers read from these two files refine the
 * analysis (a missing call-target file: none). */
static int refine_from(const char *counts_path, const char *targets_path, mt_program *prog,
                       uint64_t **counts, mt_error *err)
{
    mt_call_target_count *targets = NULL;
    size_t ntargets = 0;
    bool read = (*counts = mt_rundir_read_counts(counts_path, prog, err)) &&
                mt_rundir_read_call_targets(targets_path, &targets, &ntargets, err) == 0;
    if (read)
        mt_refine_with_pass1(prog, *counts, targets, ntargets);
    mt_rundir_free_call_targets(targets, ntargets);
    return read ? 0 : -1;
}

int mt_rundir_refine(const char *rundir, mt_program *prog, uint64_t **counts,
                             mt_error *err)
{
    char *counts_path = mt_xasprintf("%s/counts.tsv", rundir);
    char *targets_path = mt_xasprintf("%s/call_targets.tsv", rundir);
    int rc = refine_from(counts_path, targets_path, prog, counts, err);
    free(targets_path);
    free(counts_path);
    return rc;
}

int mt_rundir_refine_library(const char *rundir, const char *name, mt_program *prog,
                             uint64_t **counts, mt_error *err)
{
    char *counts_file = library_file(name, "counts.tsv");
    char *targets_file = library_file(name, "call_targets.tsv");
    char *counts_path = rundir_file(rundir, counts_file), *targets_path = rundir_file(rundir, targets_file);
    int rc = refine_from(counts_path, targets_path, prog, counts, err);
    free(counts_path);
    free(targets_path);
    free(counts_file);
    free(targets_file);
    return rc;
}

/* Removes a file an earlier pass left that no longer goes with the run. */
static int remove_stale(const char *rundir, const char *name, mt_error *err)
{
    char *path = rundir_file(rundir, name);
    int rc = unlink(path) != 0 && errno != ENOENT ? -1 : 0;
    if (rc != 0)
        mt_error_set(err, "%s: cannot remove it: %s", path, strerror(errno));
    free(path);
    return rc;
}

/* NAME.counts.tsv or NAME.call_targets.tsv (write_library_files). */
static bool is_counts_file(const char *name)
{
    static const char *const suffixes[] = {".counts.tsv", ".call_targets.tsv"};
    size_t n = strlen(name);
    for (size_t k = 0; k < sizeof suffixes / sizeof *suffixes; k++)
        if (n > strlen(suffixes[k]) && strcmp(name + n - strlen(suffixes[k]), suffixes[k]) == 0)
            return true;
    return false;
}

/* Every SUBDIR/NAME.counts.tsv and NAME.call_targets.tsv an earlier pass 1
 * left (libs/: it may have counted other libraries, or none; mpi/: another
 * job's ranks), and SUBDIR itself once empty. */
static int remove_stale_counts(const char *rundir, const char *subdir, mt_error *err)
{
    char *dir = rundir_file(rundir, subdir);
    DIR *d = opendir(dir);
    int rc = !d && errno != ENOENT ? -1 : 0;
    if (rc != 0)
        mt_error_set(err, "%s: %s", dir, strerror(errno));
    for (struct dirent *e; d && rc == 0 && (e = readdir(d));) {
        if (is_counts_file(e->d_name) && unlinkat(dirfd(d), e->d_name, 0) != 0) {
            mt_error_set(err, "%s/%s: cannot remove it: %s", dir, e->d_name, strerror(errno));
            rc = -1;
        }
    }
    if (d)
        closedir(d);
    if (d && rc == 0)
        rmdir(dir); /* kept when something else is in it */
    free(dir);
    return rc;
}

/* ---- the whole pass 1 ------------------------------------------------------------ */

static int write_library_files(const char *rundir, const mt_pass1_libraries *libs,
                               const profile_merge *merge, mt_error *err)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < libs->nlibs; i++) {
        const mt_pass1_library *lib = &libs->libs[i];
        if (lib->note)
            continue;
        char *dir = rundir_file(rundir, "libs"), *counts = library_file(lib->name, "counts.tsv"),
             *targets = library_file(lib->name, "call_targets.tsv");
        rc = mt_make_dirs(dir, err);
        if (rc == 0)
            rc = write_counts_named(rundir, counts, lib->prog, &lib->map, merge->counts, err);
        if (rc == 0)
            rc = write_call_targets_named(rundir, targets, lib->prog, i, libs, &lib->map, merge, err);
        free(dir);
        free(counts);
        free(targets);
    }
    return rc;
}

int mt_rundir_write_pass1(const char *rundir, const mt_program *prog, const mt_counter_map *map,
                          const profile_merge *merge, const mt_pass1_libraries *libs, char **argv,
                          const mt_run_result *base, mt_error *err)
{
    /* an earlier pass 2 timed another pass 1's objects, and its simulation
     * traced them */
    if (remove_stale(rundir, "pass2.tsv", err) != 0 || remove_stale(rundir, "sim.json", err) != 0 ||
        remove_stale(rundir, "mpi/launcher", err) != 0 || remove_stale(rundir, "mpi/pass2.tsv", err) != 0 ||
        remove_stale_counts(rundir, "libs", err) != 0 || remove_stale_counts(rundir, "mpi", err) != 0)
        return -1;
    if (write_format(rundir, err) != 0 ||
        write_counts_named(rundir, "counts.tsv", prog, map, merge->counts, err) != 0 ||
        write_call_targets_named(rundir, "call_targets.tsv", prog, MT_FROM_EXECUTABLE, libs, map, merge,
                                 err) != 0 ||
        write_library_files(rundir, libs, merge, err) != 0)
        return -1;
    return write_argv_and_pass1(rundir, argv, base, err);
}

/* ---- mpi/: an MPI job's launcher and each rank's counts ---------------------------- */

/* mpi/rank-N.counts.tsv, or a library's mpi/rank-N.LIB.counts.tsv ('/' in
 * LIB becomes '_', as in libs/). */
static char *rank_counts_name(int rank, const char *library)
{
    char *own = library ? library_file(library, "counts.tsv") : NULL;
    char *name = own ? mt_xasprintf("mpi/rank-%d.%s", rank, own + strlen("libs/"))
                     : mt_xasprintf("mpi/rank-%d.counts.tsv", rank);
    free(own);
    return name;
}

/* Rank r's counts of the executable and of every counted library. */
static int write_rank_counts(const char *rundir, const mt_program *prog, const mt_counter_map *map,
                             const mt_pass1_libraries *libs, const mt_mpi_rank *r, mt_error *err)
{
    char *name = rank_counts_name(r->rank, NULL);
    int rc = write_counts_named(rundir, name, prog, map, r->merge.counts, err);
    free(name);
    for (size_t k = 0; rc == 0 && k < libs->nlibs; k++) {
        const mt_pass1_library *lib = &libs->libs[k];
        if (lib->note)
            continue;
        name = rank_counts_name(r->rank, lib->name);
        rc = write_counts_named(rundir, name, lib->prog, &lib->map, r->merge.counts, err);
        free(name);
    }
    return rc;
}

int mt_rundir_write_job(const char *rundir, const mt_program *prog, const mt_counter_map *map,
                        const mt_pass1_libraries *libs, const mt_mpi_job *job, mt_error *err)
{
    char *dir = rundir_file(rundir, "mpi");
    int rc = mt_make_dirs(dir, err);
    free(dir);
    for (uint32_t i = 0; rc == 0 && i < job->nranks; i++)
        rc = write_rank_counts(rundir, prog, map, libs, &job->ranks[i], err);
    /* the launcher last: a run directory with it has every rank's counts */
    return rc == 0 ? write_command_line(rundir, "mpi/launcher", job->argv, err) : -1;
}

int mt_rundir_read_job(const char *rundir, char **buf, char ***argv, mt_error *err)
{
    *buf = NULL;
    *argv = NULL;
    char *path = rundir_file(rundir, "mpi/launcher");
    bool job = access(path, F_OK) == 0;
    free(path);
    return job ? read_command_line(rundir, "mpi/launcher", buf, argv, err) : 0;
}

uint64_t *mt_rundir_read_rank_counts(const char *rundir, int rank, const char *library,
                                     const mt_program *prog, mt_error *err)
{
    char *name = rank_counts_name(rank, library), *path = rundir_file(rundir, name);
    uint64_t *counts = mt_rundir_read_counts(path, prog, err);
    free(path);
    free(name);
    return counts;
}

/* A finite number, the whole field. */
static bool parse_figure(const char *s, double *v)
{
    char *end;
    *v = strtod(s, &end);
    return end != s && !*end && isfinite(*v);
}

/* mpi/pass2.tsv: an MPI job's pass 2 per rank, for the HTML report:
 * `rank<TAB>N<TAB>HOST` per rank (HOST empty: not recorded), then
 * `object<TAB>SPEC<TAB>RANK<TAB>ENTRIES<TAB>PREDICTED<TAB>MEASURED<TAB>MEMORY_OPS[<TAB>LIBRARY]`
 * per timed object (in pass2.tsv's order; LIBRARY: a shared library's
 * object, SPEC in that library) and rank; PREDICTED nan where the rank's
 * own counts do not predict the object.  A file of an mtool before
 * MEMORY_OPS is read with 0 there. */
static int write_job_pass2(const char *rundir, const mt_pass2_result *r, mt_error *err)
{
    mt_outfile out;
    if (open_rundir_output(&out, rundir, "mpi/pass2.tsv", err) != 0)
        return -1;
    mt_job_pass2 job;
    mt_job_pass2_of(r, &job);
    fputs("# an MPI job's pass 2 per rank, core cycles\n# rank\tRANK\tHOST\n"
          "# object\tSPEC\tRANK\tENTRIES\tPREDICTED\tMEASURED\tMEMORY_OPS[\tLIBRARY]\n", out.fp);
    for (size_t k = 0; k < job.nranks; k++) {
        fprintf(out.fp, "rank\t%d\t", job.ranks[k].rank);
        mt_tsv_field(out.fp, job.ranks[k].host ? job.ranks[k].host : "");
        fputc('\n', out.fp);
    }
    for (size_t i = 0; i < job.nfigures; i++) {
        const mt_job_figures *f = &job.figures[i];
        fputs("object\t", out.fp);
        mt_tsv_field(out.fp, f->spec);
        /* %.17g: the doubles themselves, so that the page's overheads
         * (measured - predicted) are report.json's, near 0 too (at %.9g an
         * overhead of a few cycles on a million differed in its 6th digit) */
        fprintf(out.fp, "\t%d\t%" PRIu64 "\t%.17g\t%.17g\t%" PRIu64, f->rank, f->entries,
                f->predicted, f->measured, f->memops);
        if (f->library) {
            fputc('\t', out.fp);
            mt_tsv_field(out.fp, f->library);
        }
        fputc('\n', out.fp);
    }
    mt_job_pass2_free(&job);
    return mt_outfile_commit(&out, err);
}

static int read_job_pass2_line(line_reader *r, mt_job_pass2 *p, size_t *caps, mt_error *err)
{
    char *f[8], *end;
    int n = split_fields(r->line, f, 8);
    long rank = n >= 3 ? strtol(f[n == 3 ? 1 : 2], &end, 10) : -1;
    bool rank_ok = n >= 3 && *f[n == 3 ? 1 : 2] && !*end && rank >= 0 && rank <= INT_MAX;
    if (n == 3 && !strcmp(f[0], "rank") && rank_ok) {
        mt_job_rank k = {(int)rank, f[2][0] ? mt_xstrdup(f[2]) : NULL};
        MT_PUSH(p->ranks, p->nranks, caps[0], k);
        return 0;
    }
    mt_job_figures o = {.rank = (int)rank};
    double entries, memops = 0;
    if (n < 6 || n > 8 || strcmp(f[0], "object") != 0 || !rank_ok ||
        !parse_figure(f[3], &entries) || entries < 0 ||
        (strcmp(f[4], "nan") != 0 && !parse_figure(f[4], &o.predicted)) ||
        !parse_figure(f[5], &o.measured) ||
        (n >= 7 && (!parse_figure(f[6], &memops) || memops < 0)) || (n == 8 && !f[7][0])) {
        mt_error_set(err, "%s:%d: not a line of a job's pass 2 (rank<TAB>N<TAB>HOST, or "
                          "object<TAB>SPEC<TAB>RANK<TAB>4 figures[<TAB>LIBRARY])", r->path,
                     r->lineno);
        return -1;
    }
    if (!strcmp(f[4], "nan"))
        o.predicted = NAN;
    o.entries = (uint64_t)entries;
    o.memops = (uint64_t)memops;
    o.spec = mt_xstrdup(f[1]);
    o.library = n == 8 ? mt_xstrdup(f[7]) : NULL;
    MT_PUSH(p->figures, p->nfigures, caps[1], o);
    return 0;
}

int mt_rundir_read_job_pass2(const char *rundir, mt_job_pass2 *p, mt_error *err)
{
    memset(p, 0, sizeof *p);
    char *path = rundir_file(rundir, "mpi/pass2.tsv");
    line_reader r = {0};
    int rc = access(path, F_OK) != 0 && errno == ENOENT ? 0 : open_lines(&r, path, err) != 0 ? -1 : 1;
    size_t caps[2] = {0, 0};
    while (rc == 1 && next_line(&r))
        if (r.line[0] != '#' && read_job_pass2_line(&r, p, caps, err) != 0)
            rc = -1;
    if (rc == 1)
        close_lines(&r);
    free(path);
    if (rc < 0)
        mt_job_pass2_free(p);
    return rc < 0 ? -1 : 0;
}

void mt_job_pass2_free(mt_job_pass2 *p)
{
    for (size_t i = 0; i < p->nranks; i++)
        free(p->ranks[i].host);
    for (size_t i = 0; i < p->nfigures; i++) {
        free(p->figures[i].spec);
        free(p->figures[i].library);
    }
    free(p->ranks);
    free(p->figures);
    memset(p, 0, sizeof *p);
}

/* ---- pass2.tsv: the m-objects pass 2 timed, for `mtool sim RUNDIR` --------- */

int mt_rundir_write_pass2(const char *rundir, const mt_pass2_result *r, mt_error *err)
{
    mt_outfile out;
    /* the simulation set its stall estimates beside the last pass 2's figures */
    if (remove_stale(rundir, "sim.json", err) != 0 ||
        open_rundir_output(&out, rundir, "pass2.tsv", err) != 0)
        return -1;
    fprintf(out.fp, "# the m-objects pass 2 timed, core cycles\n"
                    "# program\tpredicted\tmeasured\tobjects_overhead\n"
                    "# object\tspec\tmemory_ops\tpredicted\tmeasured\toutermost[\tlibrary]\n"
                    "program\t%.9g\t%.9g\t%.9g\n",
            r->program_predicted, r->program_measured, r->objects_overhead);
    for (size_t i = 0; i < r->nrows; i++) {
        const mt_mobject_figures *f = &r->rows[i];
        mt_timed_object o = mt_candidate_object(f->cand);
        char spec[1024];
        mt_timed_object_format(f->cand->prog, &o, spec, sizeof spec);
        fprintf(out.fp, "object\t");
        mt_tsv_field(out.fp, spec);
        fprintf(out.fp, "\t%" PRIu64 "\t%.9g\t%.9g\t%d", f->cand->memops, f->cand->predicted,
                f->measured, f->outermost);
        if (f->cand->object) { /* a shared library's: its spec is in that library */
            fputc('\t', out.fp);
            mt_tsv_field(out.fp, f->cand->object);
        }
        fputc('\n', out.fp);
    }
    if (mt_outfile_commit(&out, err) != 0)
        return -1;
    /* a job's figures per rank beside them; none left from an earlier job's */
    return r->nranks ? write_job_pass2(rundir, r, err) : remove_stale(rundir, "mpi/pass2.tsv", err);
}

void mt_pass2_record_free(mt_pass2_record *p)
{
    for (size_t i = 0; i < p->nobjects; i++)
        free(p->objects[i].spec);
    free(p->objects);
    memset(p, 0, sizeof *p);
}

/* A finite number, the whole field. */

/* The counted library of `name` in libs, NULL when pass 1 counted none of
 * that name. */
static const mt_pass1_library *counted_library(const mt_pass1_libraries *libs, const char *name)
{
    for (size_t i = 0; i < libs->nlibs; i++)
        if (!libs->libs[i].note && !strcmp(libs->libs[i].name, name))
            return &libs->libs[i];
    return NULL;
}

/* One object line: *keep false for a library's object when the reader
 * asked for the executable's alone (libs NULL). */
static int read_pass2_object(line_reader *r, char **f, int n, const mt_program *prog,
                             const mt_pass1_libraries *libs, mt_pass2_object *o, bool *keep,
                             mt_error *err)
{
    double memops;
    if ((n != 6 && n != 7) || strcmp(f[0], "object") != 0 || !parse_figure(f[2], &memops) ||
        memops < 0 || !parse_figure(f[3], &o->predicted) || !(o->predicted > 0) ||
        !parse_figure(f[4], &o->measured) || (strcmp(f[5], "0") != 0 && strcmp(f[5], "1") != 0) ||
        (n == 7 && !f[6][0])) {
        mt_error_set(err, "%s:%d: not a pass-2 line (program<TAB>3 figures, or "
                          "object<TAB>SPEC<TAB>4 figures[<TAB>LIBRARY])", r->path, r->lineno);
        return -1;
    }
    *keep = n == 6 || libs;
    if (!*keep)
        return 0;
    if (n == 7 && !(o->lib = counted_library(libs, f[6]))) {
        char name[256];
        mt_escape_text(name, sizeof name, f[6]);
        mt_error_set(err, "%s:%d: an object of %s, a library this run directory's pass 1 did "
                          "not count", r->path, r->lineno, name);
        return -1;
    }
    o->prog = o->lib ? o->lib->prog : prog;
    mt_error why;
    if (mt_timed_object_parse(o->prog, f[1], &o->object, &why) != 0) {
        mt_error_set(err, "%s:%d: %.300s (objects of another binary?)", r->path, r->lineno,
                     why.msg);
        return -1;
    }
    o->memops = (uint64_t)memops;
    o->outermost = f[5][0] == '1';
    char spec[1024]; /* as pass 2 names it, however the file spelt it */
    mt_timed_object_format(o->prog, &o->object, spec, sizeof spec);
    o->spec = mt_xstrdup(spec);
    return 0;
}

static int read_pass2_line(line_reader *r, const mt_program *prog, const mt_pass1_libraries *libs,
                           mt_pass2_record *p, size_t *cap, mt_error *err)
{
    char *f[8];
    int n = split_fields(r->line, f, 8);
    if (n == 4 && !strcmp(f[0], "program") && parse_figure(f[1], &p->program_predicted) &&
        parse_figure(f[2], &p->program_measured) && parse_figure(f[3], &p->objects_overhead))
        return 0;
    mt_pass2_object o = {0};
    bool keep;
    if (read_pass2_object(r, f, n, prog, libs, &o, &keep, err) != 0)
        return -1;
    if (keep)
        MT_PUSH(p->objects, p->nobjects, *cap, o);
    return 0;
}

int mt_rundir_read_pass2(const char *rundir, const mt_program *prog,
                         const mt_pass1_libraries *libs, mt_pass2_record *p, mt_error *err)
{
    memset(p, 0, sizeof *p);
    if (check_format(rundir, err) != 0)
        return -1;
    char *path = rundir_file(rundir, "pass2.tsv");
    line_reader r = {0};
    int rc = 0;
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        mt_error_set(err, "%s: no pass 2 in this run directory (run 'mtool time' on it first)",
                     path);
        rc = -1;
    } else
        rc = open_lines(&r, path, err);
    size_t cap = 0;
    bool program = false;
    while (rc == 0 && next_line(&r)) {
        if (r.line[0] == '#')
            continue;
        program |= !strncmp(r.line, "program\t", 8);
        rc = read_pass2_line(&r, prog, libs, p, &cap, err);
    }
    if (rc == 0 && !program) {
        mt_error_set(err, "%s: no program line", path);
        rc = -1;
    }
    close_lines(&r);
    free(path);
    if (rc != 0)
        mt_pass2_record_free(p);
    return rc;
}

/* ---- machine.txt: the profile pass 2 predicted with, for `mtool report` ---- */

int mt_rundir_write_machine(const char *rundir, const mt_machine *m, mt_error *err)
{
    mt_outfile out;
    if (mt_machine_check(m, err) != 0 || open_rundir_output(&out, rundir, "machine.txt", err) != 0)
        return -1;
    mt_machine_write(out.fp, m);
    return mt_outfile_commit(&out, err);
}

int mt_rundir_read_machine(const char *rundir, mt_machine *m, bool *found, mt_error *err)
{
    char *path = rundir_file(rundir, "machine.txt");
    *found = !(access(path, F_OK) != 0 && errno == ENOENT);
    FILE *fp = NULL;
    int rc = !*found ? 0
             : !(fp = mt_fopen_regular(path, err)) ? -1
             : mt_machine_parse(fp, path, m, err);
    if (fp)
        fclose(fp);
    free(path);
    return rc;
}

/* ---- sim.json: `mtool sim RUNDIR`'s result, for `mtool report` ----------- */

int mt_rundir_write_sim(const char *rundir, const char *json, size_t len, mt_error *err)
{
    mt_outfile out;
    if (open_rundir_output(&out, rundir, "sim.json", err) != 0)
        return -1;
    fwrite(json, 1, len, out.fp);
    return mt_outfile_commit(&out, err);
}

/* RFC 8259's grammar, to refuse a damaged sim.json before a page embeds
 * it: each *_at moves *p past what it accepts.  Nesting is bounded so that
 * no file can exhaust the stack. */
enum { JSON_MAX_DEPTH = 64 };

static void json_space_at(const char **p)
{
    while (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r')
        (*p)++;
}

static bool json_string_at(const char **p)
{
    const unsigned char *s = (const unsigned char *)*p;
    if (*s++ != '"')
        return false;
    for (unsigned char c; (c = *s++) != '"';) {
        if (c < 0x20) /* a control byte, or the end of the text */
            return false;
        if (c != '\\')
            continue;
        c = *s++;
        if (c == 'u') {
            for (int k = 0; k < 4; k++)
                if (!isxdigit(*s++))
                    return false;
        } else if (!c || !strchr("\"\\/bfnrt", c))
            return false;
    }
    *p = (const char *)s;
    return true;
}

static bool json_digits_at(const char **p)
{
    if (!isdigit((unsigned char)**p))
        return false;
    while (isdigit((unsigned char)**p))
        (*p)++;
    return true;
}

static bool json_number_at(const char **p)
{
    if (**p == '-')
        (*p)++;
    if (**p == '0')
        (*p)++;
    else if (!json_digits_at(p))
        return false;
    if (**p == '.' && (++*p, !json_digits_at(p)))
        return false;
    if (**p == 'e' || **p == 'E') {
        (*p)++;
        if (**p == '+' || **p == '-')
            (*p)++;
        return json_digits_at(p);
    }
    return true;
}

static bool json_value_at(const char **p, int depth);

/* An object's or an array's members, after its opening brace or bracket. */
static bool json_members_at(const char **p, char close, int depth)
{
    json_space_at(p);
    if (**p == close)
        return ++*p, true;
    for (;;) {
        if (close == '}') {
            json_space_at(p);
            if (!json_string_at(p))
                return false;
            json_space_at(p);
            if (*(*p)++ != ':')
                return false;
        }
        if (!json_value_at(p, depth + 1))
            return false;
        json_space_at(p);
        char c = *(*p)++;
        if (c == close)
            return true;
        if (c != ',')
            return false;
    }
}

static bool json_value_at(const char **p, int depth)
{
    static const char *const literals[] = {"true", "false", "null"};
    json_space_at(p);
    if (depth > JSON_MAX_DEPTH)
        return false;
    if (**p == '{' || **p == '[') {
        char close = **p == '{' ? '}' : ']';
        (*p)++;
        return json_members_at(p, close, depth);
    }
    if (**p == '"')
        return json_string_at(p);
    for (size_t k = 0; k < MT_ARRAY_LEN(literals); k++) {
        size_t n = strlen(literals[k]);
        if (!strncmp(*p, literals[k], n))
            return *p += n, true;
    }
    return json_number_at(p);
}

int mt_rundir_read_sim(const char *rundir, char **json, mt_error *err)
{
    *json = NULL;
    char *path = rundir_file(rundir, "sim.json");
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        free(path);
        return 0;
    }
    size_t len = 0;
    char *text = slurp(path, &len, err);
    const char *end = text;
    bool whole = text && (json_space_at(&end), *end == '{') && json_value_at(&end, 0) &&
                 (json_space_at(&end), end == text + len);
    if (text && !whole) {
        mt_error_set(err, "%s: not a JSON object at byte %zu (damaged? 'mtool sim %s' writes it "
                          "again)", path, (size_t)(end - text), rundir);
        free(text);
    } else
        *json = text;
    free(path);
    return whole ? 0 : -1;
}
