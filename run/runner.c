/* run/runner.c — what every run (pass 1, pass 2, the model's self-check)
 * shares: its directories (cache, run directories), instrumented copies cached by
 * the binary's content, this mtool's identity and the timed-object set, and
 * running a program with its times, clock ratio and exit status. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run.h"

char *mt_cache_root(void)
{
    const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (x && x[0] == '/')
        return mt_xasprintf("%s/mtool", x);
    return mt_xasprintf("%s/.cache/mtool", home && home[0] ? home : "/tmp");
}

int mt_make_dirs(const char *path, mt_error *err)
{
    char *p = mt_xstrdup(path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0777);
            *s = '/';
        }
    int rc = mkdir(p, 0777) == 0 || errno == EEXIST ? 0 : -1;
    if (rc)
        mt_error_set(err, "%s: cannot create directory: %s", path, strerror(errno));
    free(p);
    return rc;
}

/* A run directory used again: the profiles of its earlier run must not be
 * merged into this one's. */
int mt_clear_profiles(const char *dir, mt_error *err)
{
    DIR *d = opendir(dir);
    if (!d) {
        mt_error_set(err, "%s: %s", dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n > 4 && strcmp(e->d_name + n - 4, ".mtp") == 0 && unlinkat(dirfd(d), e->d_name, 0) != 0) {
            mt_error_set(err, "%s/%s: cannot remove an earlier run's profile: %s", dir, e->d_name,
                         strerror(errno));
            rc = -1;
        }
    }
    closedir(d);
    return rc;
}

/* Identity of this mtool build, so a rebuilt rewriter never reuses copies
 * made by an older one. */
uint64_t mt_tool_identity(void)
{
    struct stat st;
    if (stat("/proc/self/exe", &st) != 0)
        return 0;
    return (uint64_t)st.st_size * 1000003u ^ (uint64_t)st.st_mtim.tv_sec ^
           (uint64_t)st.st_mtim.tv_nsec << 20;
}

/* ---- instrumentation, cached ---------------------------------------------- */

/* The rewriter's report kept beside a cached copy, report.tsv (this file is
 * its only reader and writer): one "NAME<TAB>VALUE" line per figure, then
 * "skipped<TAB>INDEX<TAB>0xENTRY<TAB>REASON" per procedure left out.
 * Reasons are kept on one line (tabs and line breaks become spaces). */
#define REWRITE_FIGURES(X)                                                                     \
    X(nprocs_candidates) X(nprocs_instrumented) X(nblocks_candidates) X(nblocks_instrumented) \
    X(nprobes_saving_flags) X(nloop_registers) X(nderived) X(nwrapped_calls) X(ntask_hooks) X(ncall_sites) \
    X(code_bytes) X(nfdes) X(ntimed) X(ntimer_events) X(ntimer_events_saving_flags)           \
    X(ntrampolines) X(ntable_checks) X(ntrace_sites) X(ntrace_bare) X(ntrace_refs) X(ntrace_untraced)

static void one_line(char *s)
{
    for (; *s; s++)
        if (*s == '\t' || *s == '\n' || *s == '\r')
            *s = ' ';
}

static int write_rewrite_report(const char *path, const mt_program *prog,
                                const mt_rewrite_report *r, mt_error *err)
{
    mt_outfile f;
    if (mt_outfile_open(&f, path, err) != 0)
        return -1;
    fprintf(f.fp, "# what the rewriter did (run/runner.c)\n");
#define W(field) fprintf(f.fp, #field "\t%" PRIu64 "\n", (uint64_t)r->field);
    REWRITE_FIGURES(W)
#undef W
    for (uint32_t i = 0; i < r->nskipped; i++)
        fprintf(f.fp, "skipped\t%" PRIu32 "\t0x%" PRIx64 "\t%s\n", r->skipped[i].proc,
                prog->procs[r->skipped[i].proc].entry, r->skipped[i].reason);
    return mt_outfile_commit(&f, err);
}

/* -1 when missing or not this program's: the copy is made again. */
static int read_rewrite_report(const char *path, const mt_program *prog, mt_rewrite_report *r)
{
    memset(r, 0, sizeof *r);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    while (rc == 0 && getline(&line, &cap, fp) > 0) {
        line[strcspn(line, "\n")] = '\0';
        char *tab = strchr(line, '\t');
        if (line[0] == '#')
            continue;
        if (!tab) {
            rc = -1;
            break;
        }
        *tab++ = '\0';
        char *end;
        if (strcmp(line, "skipped") == 0) {
            uint32_t proc = (uint32_t)strtoul(tab, &end, 10);
            uint64_t entry;
            int used = 0;
            if (end == tab || *end != '\t' || proc >= prog->nprocs ||
                sscanf(end + 1, "0x%" SCNx64 "\t%n", &entry, &used) != 1 || used == 0 ||
                prog->procs[proc].entry != entry) {
                rc = -1;
                break;
            }
            r->skipped = mt_xrealloc(r->skipped, (r->nskipped + 1) * sizeof *r->skipped);
            r->skipped[r->nskipped++] = (mt_rewrite_skip){.proc = proc,
                                                          .reason = mt_xstrdup(end + 1 + used)};
            continue;
        }
        uint64_t v = strtoull(tab, &end, 10);
        bool known = false;
#define R(field)                                                                               \
    if (strcmp(line, #field) == 0) {                                                           \
        r->field = v;                                                                          \
        known = true;                                                                          \
    }
        REWRITE_FIGURES(R)
#undef R
        if (!known || end == tab || *end)
            rc = -1;
    }
    free(line);
    fclose(fp);
    if (rc != 0)
        mt_rewrite_report_free(r);
    return rc;
}

void mt_instrumented_free(mt_instrumented *ins)
{
    free(ins->path);
    mt_rewrite_report_free(&ins->rewrite);
    memset(ins, 0, sizeof *ins);
}

/* The copy of `bin` made with `ro` in cache directory `dir` (kept there
 * with the rewriter's report, report.tsv), or the one already there. */
static int instrument_into(const char *dir, const mt_program *prog, const char *bin,
                           mt_rewrite_options *ro, const uint8_t hash[32], mt_instrumented *out,
                           mt_error *err)
{
    char *name = mt_xstrdup(bin);
    out->path = mt_xasprintf("%s/%s", dir, basename(name));
    char *report_path = mt_xasprintf("%s/report.tsv", dir);
    char *profiles = mt_xasprintf("%s/profiles", dir);
    int rc = mt_make_dirs(dir, err);
    if (rc == 0 && !(access(out->path, ro->library ? R_OK : X_OK) == 0 &&
                     read_rewrite_report(report_path, prog, &out->rewrite) == 0)) {
        ro->profile_dir = profiles;
        ro->program_name = basename(name);
        rc = mt_rewrite_counts(prog, out->path, ro, &out->rewrite, err);
        for (uint32_t i = 0; rc == 0 && i < out->rewrite.nskipped; i++)
            one_line(out->rewrite.skipped[i].reason);
        mt_error ignored; /* a cache that cannot keep the report makes the copy again */
        if (rc == 0)
            write_rewrite_report(report_path, prog, &out->rewrite, &ignored);
    }
    if (rc == 0)
        memcpy(out->rewrite.binary_hash, hash, 32); /* not kept in report.tsv */
    free(report_path);
    free(profiles);
    free(name);
    return rc;
}

/* The copy lives in the cache under the binary's content hash and this
 * mtool's identity, next to the rewriter's report; its default profile
 * directory is the cache's own (runs set $MTOOL_OUT). */
/* CACHE/KIND/HASH-IDENTITY-SET: where the copy of bin (its content hashed
 * into `hash`) for `set` lives; NULL with err when bin cannot be read. */
static char *copy_dir(const char *bin, const char *kind, const char *set, uint8_t hash[32],
                      mt_error *err)
{
    if (mt_file_sha256(bin, hash, err) != 0)
        return NULL;
    char h[65];
    mt_sha256_hex(hash, h);
    char *root = mt_cache_root();
    char *dir = mt_xasprintf("%s/%s/%.32s-%016" PRIx64 "%s", root, kind, h, mt_tool_identity(), set);
    free(root);
    return dir;
}

int mt_instrument_cached(const mt_program *prog, const char *bin, const mt_timed_object *timed,
                         uint32_t ntimed, bool trace, mt_instrumented *out, mt_error *err)
{
    /* Pass-2 copies time a set of objects, without counters: one per set;
     * tracing copies may trace a set of objects only: one per set too. */
    char set[64] = "";
    if (ntimed && !trace)
        snprintf(set, sizeof set, "-t%016" PRIx64 "-g%016" PRIx64,
                 mt_timed_objects_id(prog, timed, ntimed), mt_call_graph_id(prog));
    else if (ntimed)
        snprintf(set, sizeof set, "-s%016" PRIx64, mt_timed_objects_id(prog, timed, ntimed));
    if (trace)
        strcat(set, "-trace");
    uint8_t hash[32];
    char *dir = copy_dir(bin, "instrumented", set, hash, err);
    if (!dir)
        return -1;
    mt_rewrite_options ro = {.trace = trace};
    if (trace) {
        ro.traced = timed;
        ro.ntraced = ntimed;
    } else {
        ro.timed = timed;
        ro.ntimed = ntimed;
        ro.timers_only = ntimed > 0;
    }
    int rc = instrument_into(dir, prog, bin, &ro, hash, out, err);
    free(dir);
    return rc;
}

int mt_instrument_in_set(const mt_program *prog, const char *bin, const mt_rewrite_options *member,
                         mt_instrumented *out, mt_error *err)
{
    char set[160];
    int n = snprintf(set, sizeof set, "-l%016" PRIx64, member->libs_set);
    if (member->timers_only) /* a pass-2 member: its objects, brackets and records */
        snprintf(set + n, sizeof set - (size_t)n, "-t%016" PRIx64 "-g%016" PRIx64 "-r%u-%u",
                 mt_timed_objects_id(prog, member->timed, member->ntimed), mt_call_graph_id(prog),
                 member->timer_base, member->slot_counters);
    else if (member->call_site_base || member->slot_counters) /* where its call-site records lie */
        snprintf(set + n, sizeof set - (size_t)n, "-c%u-%u", member->call_site_base,
                 member->slot_counters);
    if (member->trace) /* what it traces, where its records go, how its code objects are numbered */
        snprintf(set + strlen(set), sizeof set - strlen(set), "-s%016" PRIx64 "-trace-k%u-%u",
                 member->ntraced ? mt_timed_objects_id(prog, member->traced, member->ntraced) : 0,
                 member->slot_call_sites, member->code_base);
    uint8_t hash[32];
    char *dir = copy_dir(bin, member->library ? "libs" : "instrumented", set, hash, err);
    if (!dir)
        return -1;
    mt_rewrite_options ro = *member;
    int rc = instrument_into(dir, prog, bin, &ro, hash, out, err);
    free(dir);
    return rc;
}

/* ---- running ------------------------------------------------------------ */


static double tv_seconds(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec / 1e6; }

int mt_run_program(const char *exe, char **argv, const char *profile_dir, mt_run_result *r,
                   mt_error *err)
{
    return mt_run_program_env(exe, argv, profile_dir, NULL, r, err);
}

/* Runs exe; the core clock measured before and after when `clocked`. */
static int run_program(const char *exe, char **argv, const char *profile_dir, char *const *env,
                       bool clocked, mt_run_result *r, mt_error *err)
{
    double ratio0 = clocked ? mt_measure_tsc_per_cycle(400) : NAN; /* 10 ms: a sustained clock */
    double t0 = mt_now_seconds();
    pid_t pid = fork();
    if (pid < 0) {
        mt_error_set(err, "cannot fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        if (profile_dir)
            setenv("MTOOL_OUT", profile_dir, 1);
        for (char *const *e = env; e && *e; e++)
            putenv(*e);
        execv(exe, argv);
        fprintf(stderr, "mtool: %s: cannot execute: %s\n", exe, strerror(errno));
        _exit(127);
    }
    struct rusage ru;
    int status;
    /* The program owns the terminal's signals while it runs. */
    void (*old_int)(int) = signal(SIGINT, SIG_IGN), (*old_quit)(int) = signal(SIGQUIT, SIG_IGN);
    while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
        ;
    signal(SIGINT, old_int);
    signal(SIGQUIT, old_quit);
    r->wall = mt_now_seconds() - t0;
    double ratio1 = clocked ? mt_measure_tsc_per_cycle(400) : NAN;
    r->tsc_per_cycle = (ratio0 + ratio1) / 2;
    r->tsc_per_cycle_lo = fmin(ratio0, ratio1);
    r->tsc_per_cycle_hi = fmax(ratio0, ratio1);
    r->user = tv_seconds(ru.ru_utime);
    r->sys = tv_seconds(ru.ru_stime);
    r->status = status;
    return 0;
}

int mt_run_program_env(const char *exe, char **argv, const char *profile_dir, char *const *env,
                       mt_run_result *r, mt_error *err)
{
    return run_program(exe, argv, profile_dir, env, true, r, err);
}

int mt_run_program_unclocked(const char *exe, char **argv, const char *profile_dir,
                             char *const *env, mt_run_result *r, mt_error *err)
{
    return run_program(exe, argv, profile_dir, env, false, r, err);
}

int mt_exit_code(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void mt_describe_status(char *buf, size_t n, int status)
{
    if (WIFEXITED(status))
        snprintf(buf, n, "exit status %d", WEXITSTATUS(status));
    else
        snprintf(buf, n, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
}

char *mt_default_rundir(const char *bin)
{
    char *root = mt_cache_root(), *copy = mt_xstrdup(bin);
    char stamp[32];
    time_t now = time(NULL);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime(&now));
    char *dir = mt_xasprintf("%s/runs/%s-%s-%d", root, basename(copy), stamp, (int)getpid());
    free(root);
    free(copy);
    return dir;
}

char *mt_absolute(const char *path)
{
    char buf[PATH_MAX];
    return realpath(path, buf) ? mt_xstrdup(buf) : NULL;
}

