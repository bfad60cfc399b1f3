/* bench/history_fill.c — fills a history with NRUNS runs of BIN for
 * `make bench` (bench/history.sh): BIN's real sites (analyzer), stored as 10
 * builds (the last under BIN's real hash, so a later `mtool count` of BIN
 * finds its build), each run with figures for a pseudo-random third of the
 * objects plus every procedure named main, through the store's own API, one
 * transaction per run as `mtool count` does.
 *
 *   history_fill DB BIN NRUNS */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rewriter/rewriter.h"
#include "store/store.h"

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: history_fill DB BIN NRUNS\n");
        return 2;
    }
    mt_error err;
    mt_analyze_options opt;
    mt_analyze_options_init(&opt);
    mt_program *prog = mt_analyze(argv[2], &opt, &err);
    uint8_t sha[32];
    mt_store *s = prog && mt_file_sha256(argv[2], sha, &err) == 0
                      ? mt_store_open(argv[1], MT_STORE_WRITE, &err) : NULL;
    if (!s) {
        fprintf(stderr, "history_fill: %s\n", err.msg);
        return 1;
    }
    char abs_path[4096];
    if (!realpath(argv[2], abs_path))
        snprintf(abs_path, sizeof abs_path, "%s", argv[2]);
    mt_store_build b;
    mt_store_build_from_program(prog, abs_path, sha, &b);
    long nruns = atol(argv[3]);
    mt_store_figures *figs = mt_xcalloc(b.nsites, sizeof *figs);
    static char *cmd[] = {"count", "--", "bench"};
    unsigned seed = 12345;
    char real_sha[65];
    memcpy(real_sha, b.sha256, sizeof real_sha);
    double t0 = mt_now_seconds();
    for (long i = 0; i < nruns; i++) {
        int build = (int)(i * 10 / nruns);
        memcpy(b.sha256, real_sha, sizeof real_sha);
        if (build < 9)
            b.sha256[63] = (char)('g' + build); /* not hex: cannot collide with a real hash */
        size_t n = 0;
        for (size_t k = 0; k < b.nsites; k++) {
            seed = seed * 1103515245u + 12345u;
            bool is_main = strcmp(b.sites[k].procedure, "main") == 0;
            if (!is_main && (seed >> 16) % 3 != 0)
                continue;
            uint64_t base = 1000 + (seed >> 8) % 100000;
            figs[n++] = (mt_store_figures){.site = (uint32_t)k, .entries = base / 10,
                                           .instructions = base * 4, .memory_ops = base,
                                           .measured_cycles = NAN, .predicted_cycles = NAN,
                                           .overhead_cycles = NAN};
        }
        mt_store_run r = {.tool = "count", .finished = (double)time(NULL) - (double)(nruns - i) * 60,
                          .argc = 3, .argv = cmd, .nargs = 0, .args = cmd + 3, .cwd = "/bench",
                          .machine = "bench", .version = "bench", .ran = true, .user_s = NAN,
                          .sys_s = NAN, .wall_s = NAN, .base_user_s = NAN, .base_sys_s = NAN,
                          .base_wall_s = NAN, .figures = figs, .nfigures = n};
        if (mt_store_add_run(s, &b, &r, &err) < 0) {
            fprintf(stderr, "history_fill: %s\n", err.msg);
            return 1;
        }
    }
    printf("stored %ld runs of %s (%zu sites, about a third executed per run) in %.1f s\n", nruns,
           argv[2], b.nsites, mt_now_seconds() - t0);
    free(figs);
    mt_store_build_free(&b);
    mt_store_close(s);
    mt_program_free(prog);
    return 0;
}
