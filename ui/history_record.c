/* ui/history_record.c — what a measuring command (count now; time, run and
 * the simulator later) hands to the history: per-object figures, the run's
 * circumstances (command line, directory, machine, version), stored in one
 * transaction.  Failing to store is reported in one line; the caller decides
 * the exit status. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "../store/store.h"
#include "ui.h"

#ifndef MTOOL_VERSION
#define MTOOL_VERSION "unknown"
#endif

struct mt_history {
    const mt_program *prog;
    mt_store_build build;
    mt_store_figures *figures;
    size_t nfigures, cap;
    bool ok;
    mt_error err;
};

mt_history *mt_history_begin(const mt_program *prog, const char *bin)
{
    mt_history *h = mt_xcalloc(1, sizeof *h);
    h->prog = prog;
    char abs_path[PATH_MAX];
    uint8_t sha[32];
    if (!realpath(bin, abs_path))
        mt_error_set(&h->err, "%s: %s", bin, strerror(errno));
    else if (mt_file_sha256(bin, sha, &h->err) == 0) {
        mt_store_build_from_program(prog, abs_path, sha, &h->build);
        h->ok = true;
    }
    return h;
}

void mt_history_add(mt_history *h, uint32_t proc, uint32_t loop, uint64_t entries,
                    uint64_t iterations, uint64_t instructions, uint64_t memory_ops,
                    double measured, double predicted)
{
    if (!h->ok)
        return;
    uint32_t site = mt_store_site_of(&h->build, proc, loop);
    if (site == MT_NONE)
        return; /* PLT stubs are never objects */
    mt_store_figures f = {.site = site, .entries = entries,
                          .iterations = loop == MT_NONE ? MT_STORE_NO_COUNT : iterations,
                          .instructions = instructions, .memory_ops = memory_ops,
                          .measured_cycles = measured, .predicted_cycles = predicted,
                          .overhead_cycles = measured - predicted};
    MT_PUSH(h->figures, h->nfigures, h->cap, f);
}

void mt_history_add_region(mt_history *h, uint32_t proc, uint32_t first, uint32_t end, uint32_t k,
                           uint64_t entries, uint64_t instructions, uint64_t memory_ops,
                           double measured, double predicted)
{
    if (!h->ok)
        return;
    size_t before = h->build.nsites;
    uint32_t site = mt_store_build_add_region(&h->build, h->prog, proc, first, end, k);
    if (site == MT_NONE)
        return;
    if (h->build.nsites > before) /* sites after it moved up */
        for (size_t i = 0; i < h->nfigures; i++)
            h->figures[i].site += h->figures[i].site >= site;
    mt_store_figures f = {.site = site, .entries = entries, .iterations = MT_STORE_NO_COUNT,
                          .instructions = instructions, .memory_ops = memory_ops,
                          .measured_cycles = measured, .predicted_cycles = predicted,
                          .overhead_cycles = measured - predicted};
    MT_PUSH(h->figures, h->nfigures, h->cap, f);
}

/* "host, CPU model, N cpus, Linux release": enough to tell machines apart
 * until pass 2 brings a measured machine profile. */
static char *machine_profile(void)
{
    char model[512] = "unknown CPU", line[512];
    FILE *fp = fopen("/proc/cpuinfo", "r");
    while (fp && fgets(line, sizeof line, fp))
        if (strncmp(line, "model name", 10) == 0) {
            const char *v = strchr(line, ':');
            snprintf(model, sizeof model, "%s", v ? v + 1 + strspn(v + 1, " \t") : line);
            model[strcspn(model, "\n")] = '\0';
            break;
        }
    if (fp)
        fclose(fp);
    struct utsname u;
    if (uname(&u) != 0)
        memset(&u, 0, sizeof u);
    return mt_xasprintf("%s, %s, %ld cpus, %s %s", u.nodename, model, sysconf(_SC_NPROCESSORS_ONLN),
                        u.sysname, u.release);
}

int mt_history_finish(mt_history *h, const mt_history_run *r)
{
    int rc = -1;
    char *path = mt_store_default_path(), *machine = machine_profile(), cwd[PATH_MAX];
    char **argv = mt_xcalloc((size_t)r->argc + 2, sizeof *argv);
    argv[0] = "mtool";
    memcpy(argv + 1, r->argv, (size_t)r->argc * sizeof *argv);
    int nargs = 0;
    while (r->prog_argv[nargs + 1])
        nargs++;
    mt_store_run run = {.tool = r->tool, .finished = (double)time(NULL), .argc = r->argc + 1,
                        .argv = argv, .nargs = nargs, .args = r->prog_argv + 1,
                        .cwd = getcwd(cwd, sizeof cwd) ? cwd : "?", .machine = machine,
                        .version = MTOOL_VERSION, .ran = r->ran, .exit_status = r->exit_status,
                        .user_s = r->user_s, .sys_s = r->sys_s, .wall_s = r->wall_s,
                        .base_user_s = r->base_user_s, .base_sys_s = r->base_sys_s,
                        .base_wall_s = r->base_wall_s, .figures = h->figures,
                        .nfigures = h->nfigures};
    mt_store *s = h->ok ? mt_store_open(path, MT_STORE_WRITE, &h->err) : NULL;
    int64_t id = s ? mt_store_add_run(s, &h->build, &run, &h->err) : -1;
    if (id > 0) {
        char *shown = mt_ui_escape(path);
        fprintf(stderr, "run %lld stored in %s ('mtool history show %lld')\n", (long long)id,
                shown, (long long)id);
        free(shown);
        rc = 0;
    } else
        mt_ui_error("history: %s; run not stored (--no-store skips the history)", h->err.msg);
    mt_store_close(s);
    free(argv);
    free(machine);
    free(path);
    mt_store_build_free(&h->build);
    free(h->figures);
    free(h);
    return rc;
}
