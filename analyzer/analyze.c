/* analyzer/analyze.c — runs the analysis stages in order (the stages are
 * listed in internal.h; what they all use of the mt_program is in
 * program.c). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "../common/progress.h"
#include "internal.h"

void mt_analyze_options_init(mt_analyze_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->want_lines = true;
    opt->want_estimability = true;
}

mt_program *mt_analyze(const char *path, const mt_analyze_options *opt, mt_error *err)
{
    mt_analyze_options defaults;
    if (!opt) {
        mt_analyze_options_init(&defaults);
        opt = &defaults;
    }
    mt_elf_file img;
    if (mt_elf_file_open(&img, path, err) != 0)
        return NULL;

    mt_program *prog = mt_xcalloc(1, sizeof *prog);
    prog->path = mt_xstrdup(path);
    prog->files = mt_xcalloc(1, sizeof *prog->files);
    prog->files[0] = mt_xstrdup("");
    prog->nfiles = 1;

    if (mt_discover_procedures(&img, prog, err) != 0) {
        mt_program_free(prog);
        mt_elf_file_close(&img);
        return NULL;
    }
    mt_mark_data_address_taken(&img, prog);
    mt_build_cfgs(&img, prog);
    mt_mark_code_used_as_data(&img, prog);
    mt_progress_stage("analyzing: loops of procedures", prog->nprocs);
    for (uint32_t i = 0; i < prog->nprocs; i++) {
        mt_compute_dominators(&prog->procs[i]);
        mt_find_loops(&prog->procs[i]);
        mt_progress_add(1);
    }
    mt_build_callgraph(prog);
    if (opt->want_estimability)
        mt_compute_estimability(prog, NULL, NULL);
    if (opt->want_lines) {
        mt_progress_stage("analyzing: source lines (DWARF)", 0);
        mt_read_lines(&img, prog);
    }
    mt_progress_end();
    mt_elf_file_close(&img);
    return prog;
}
