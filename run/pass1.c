/* run/pass1.c — pass 1: instrument BIN with a counter on every block
 * (cached by content), run it uninstrumented and then instrumented, merge
 * the block counts of every process, sum them, and predict the whole
 * program (MTOOL's figure 2). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

void rn_warn_damaged_profiles(FILE *log, const char *dir, const profile_merge *m)
{
    enum { NAMED = 3 };
    if (!m->ndamaged || !log)
        return;
    char name[PATH_MAX + 256];
    mt_escape_text(name, sizeof name, dir);
    fprintf(log, "mtool: warning: %s: skipped %u damaged profile%s:", name, m->ndamaged,
            m->ndamaged == 1 ? "" : "s");
    for (uint32_t i = 0; i < m->ndamaged && i < NAMED; i++) {
        mt_escape_text(name, sizeof name, m->damaged[i]);
        fprintf(log, "%s %s", i ? ";" : "", name);
    }
    if (m->ndamaged > NAMED)
        fprintf(log, "; and %u more", m->ndamaged - NAMED);
    fputc('\n', log);
}

void rn_accumulate(const mt_program *prog, const mt_counter_map *map, const uint64_t *counts,
                   mt_pass1_totals *t)
{
    t->proc_first = mt_xcalloc(prog->nprocs + 1, sizeof *t->proc_first);
    for (uint32_t p = 0; p < prog->nprocs; p++)
        t->proc_first[p + 1] = t->proc_first[p] + prog->procs[p].nblocks;
    t->block_counts = mt_xcalloc(t->proc_first[prog->nprocs] + 1, sizeof *t->block_counts);
    t->derived = mt_xcalloc(t->proc_first[prog->nprocs] + 1, sizeof *t->derived);
    bool *derived = mt_xcalloc((size_t)map->ncounters + 1, sizeof *derived);
    for (uint32_t k = 0; k < map->nequation_words; k += 1 + (uint32_t)(map->equations[k] >> 32))
        derived[(uint32_t)map->equations[k]] = true;
    for (uint32_t i = 0; i < map->ncounters; i++) {
        if (map->addrs[i] & MT_COUNTER_FALLBACK) {
            if (counts[i])
                MT_PUSH(t->fallbacks, t->nfallbacks, t->cap_fallbacks, i);
            continue;
        }
        uint32_t p = mt_procedure_at(prog, map->addrs[i]);
        if (p == MT_NONE)
            continue;
        uint32_t b = mt_block_at(&prog->procs[p], map->addrs[i]);
        if (b == MT_NONE || prog->procs[p].blocks[b].start != map->addrs[i])
            continue;
        const mt_block *blk = &prog->procs[p].blocks[b];
        t->block_counts[t->proc_first[p] + b] = counts[i];
        t->derived[t->proc_first[p] + b] = derived[i];
        t->probes += derived[i] ? 0 : counts[i];
        t->counted_blocks++;
        t->executed_blocks += counts[i] != 0;
        t->blocks += counts[i];
        t->insns += counts[i] * blk->ninsns;
        t->reads += counts[i] * blk->mem_reads;
        t->writes += counts[i] * blk->mem_writes;
    }
    free(derived);
}

/* ---- figure 2 ---------------------------------------------------------------- */

static void figure2_compute(mt_figure2 *f, const mt_program *prog, const mt_pass1_totals *t,
                            const mt_run_times *base, const mt_run_times *run, FILE *log)
{
    const uint64_t *block_counts = t->block_counts, probes = t->probes;
    memset(f, 0, sizeof *f);
    f->compensated_s = f->measured_s = f->overhead_s = f->overhead_percent = NAN;
    f->probes = probes;
    f->has_base = base != NULL;
    f->has_run = run != NULL;
    f->base_user_s = base ? base->user : NAN;
    f->base_sys_s = base ? base->sys : NAN;
    f->run_user_s = run ? run->user : NAN;
    f->run_sys_s = run ? run->sys : NAN;
    mt_machine_cpu_model(f->cpu_model, sizeof f->cpu_model);
    mt_machine m;
    mt_program_costs c;
    mt_error err;
    if (mt_run_load_machine(&m, &f->calibrated, log, &err) != 0) {
        snprintf(f->machine_error, sizeof f->machine_error, "%s", err.msg);
        snprintf(f->error, sizeof f->error, "no machine profile for this CPU");
        return;
    }
    mt_model_check_of(&f->check, &m);
    snprintf(f->profile_cpu_model, sizeof f->profile_cpu_model, "%s", m.cpu_model);
    snprintf(f->profile_source, sizeof f->profile_source, "%s", m.source);
    f->profile_version = m.version;
    f->tsc_hz = m.tsc_hz;
    if (mt_predict_executed(&m, prog, run != NULL, t->derived, block_counts, &c, &err) != 0) {
        snprintf(f->error, sizeof f->error, "%s", err.msg);
        return;
    }
    f->predicted = true;
    for (uint32_t p = 0; p < c.nprocs; p++) /* blocks, loop exits and chains */
        f->cycles += mt_predicted_cycles_proc(prog, &c, block_counts, p);
    for (uint64_t i = 0; i < c.first[c.nprocs]; i++)
        if (!t->derived[i])
            f->probe_cycles += (double)block_counts[i] * c.costs[i].probe_cycles;
    mt_program_costs_free(&c);
    /* Core cycles become seconds at the clock the measured run saw. */
    const mt_run_times *timed = base ? base : run;
    if (timed && timed->tsc_per_cycle > 0) {
        f->tsc_per_cycle = timed->tsc_per_cycle;
        f->tsc_per_cycle_from = base ? "uninstrumented run" : "instrumented run";
    } else {
        f->tsc_per_cycle = mt_measure_tsc_per_cycle(9);
        f->tsc_per_cycle_from = "now (no run)";
    }
    double sec_per_cycle = f->tsc_per_cycle / m.tsc_hz;
    /* The counters' cost is predicted like the program's: each block again
     * with its counter, the difference (a counter's own chain through
     * memory sets a loop's pace; elsewhere it mostly hides in the block's). */
    f->predicted_s = f->cycles * sec_per_cycle;
    f->probe_s = f->probe_cycles * sec_per_cycle;
    if (run)
        f->compensated_s = run->user - f->probe_s;
    if (base) {
        f->measured_s = base->user;
        f->measured_from = "user time of the uninstrumented run";
    } else if (run) {
        f->measured_s = f->compensated_s;
        f->measured_from = "user time of the instrumented run minus the probes' predicted cost";
    }
    if (f->measured_s >= 0 && f->predicted_s > 0) { /* a compensated time below 0: no estimate */
        f->overhead_s = f->measured_s - f->predicted_s;
        f->overhead_percent = 100 * f->overhead_s / f->predicted_s;
    }
}

/* ---- the pass ------------------------------------------------------------------ */

/* The run directory and where the counting copy's profiles go. */
static int prepare_dirs(const mt_pass1_options *o, mt_pass1_result *r, mt_error *err)
{
    char *rundir = o->rundir ? mt_xstrdup(o->rundir) : mt_default_rundir(r->argv[0]);
    int rc = mt_make_dirs(rundir, err);
    if (rc == 0 && !(r->rundir = mt_absolute(rundir))) {
        mt_error_set(err, "%s: %s", rundir, strerror(errno));
        rc = -1;
    }
    free(rundir);
    if (rc != 0)
        return -1;
    r->profiles = o->profiles ? mt_absolute(o->profiles) : mt_xasprintf("%s/profiles", r->rundir);
    if (!r->profiles) {
        mt_error_set(err, "%s: %s", o->profiles, strerror(errno));
        return -1;
    }
    if (mt_make_dirs(r->profiles, err) != 0 ||
        (!o->profiles && mt_clear_profiles(r->profiles, err) != 0))
        return -1;
    return 0;
}

/* The uninstrumented runs: the one with the least user time is kept. */
static int run_baseline(const char *exe, char **argv, int runs, mt_pass1_result *r, mt_error *err)
{
    for (int k = 0; k < runs; k++) {
        mt_run_result one;
        if (mt_run_program(exe, argv, NULL, &one, err) != 0)
            return -1;
        if (k == 0 || one.user < r->base.user)
            r->base = one;
    }
    return 0;
}

/* The counting copy: on its own, or the last of the set with its libraries. */
static int instrument(mt_pass1_result *r, const char *bin, mt_error *err)
{
    if (!r->libs.set)
        return mt_instrument_cached(r->prog, bin, NULL, 0, false, &r->ins, err);
    mt_rewrite_options member = {.counter_base = r->libs.ncounters, .libs_set = r->libs.set,
                                 .call_site_base = r->libs.ncall_sites};
    return mt_instrument_in_set(r->prog, bin, &member, &r->ins, err);
}

/* The counter map of the copy; the libraries' copies recording their calls
 * through pointers once the slot's counters are known. */
static int read_map(mt_pass1_result *r, mt_error *err)
{
    if (mt_counter_map_read(r->ins.path, &r->map, err) != 0)
        return -1;
    if (r->libs.set)
        mt_pass1_libraries_copy(&r->libs, r->map.ncounters);
    return 0;
}

/* What --libs asks, or the default: every library a run loads, glibc's
 * included (docs/ARCHITECTURE.md, "Shared libraries": the ones it spends time in
 * are among them, and the others cost it nothing but their activation);
 * none for a job (each count would analyze its MPI library and the
 * components that library opens, seconds to minutes; `--libs` names what
 * a job counts).  Merged profiles do not name the set of the copy that
 * wrote them: `none` is tried first (mtool instrument's default), then
 * `all` (a count's, whose RUNDIR/profiles they may be: merge_profiles). */
static const char *libraries_asked(const mt_pass1_options *o, const mt_pass1_result *r)
{
    if (o->libs)
        return o->libs;
    return r->ran && !r->job ? "all" : "none";
}

/* The libraries' copies and the environment that loads them; what dlopen
 * maps that is no copy is written to PROFILES/dlopened.txt. */
static int prepare_libraries(const mt_pass1_options *o, mt_pass1_result *r, const char *bin,
                             const char *spec, mt_error *err)
{
    return mt_pass1_libraries_prepare(bin, spec, !o->libs, &r->libs, o->log, err);
}

static int libraries_env(mt_pass1_result *r, const char *bin, mt_error *err)
{
    char *seen = mt_xasprintf("%s/dlopened.txt", r->profiles);
    int rc = unlink(seen) != 0 && errno != ENOENT ? -1 : 0;
    if (rc != 0)
        mt_error_set(err, "%s: cannot remove an earlier run's list: %s", seen, strerror(errno));
    else
        rc = mt_pass1_libraries_env(&r->libs, bin, r->ins.path, seen, err);
    free(seen);
    return rc;
}

/* The libraries the run opened with dlopen that were not counted. */
static int libraries_seen(mt_pass1_result *r, const char *bin, mt_error *err)
{
    if (!r->ran || !r->libs.set)
        return 0;
    char *seen = mt_xasprintf("%s/dlopened.txt", r->profiles);
    int rc = mt_pass1_libraries_seen(&r->libs, bin, seen, err);
    unlink(seen);
    free(seen);
    return rc;
}

/* A launcher's command line is an MPI job: its program is the one counted,
 * the launcher is what runs (mpi.c). */
static int open_job(const mt_pass1_options *o, mt_pass1_result *r, mt_error *err)
{
    if (!mt_mpi_is_launcher(o->argv[0]))
        return 0;
    r->job = mt_xcalloc(1, sizeof *r->job);
    if (mt_mpi_job_open(o->argv, r->job, err) != 0)
        return -1;
    r->argv = r->job->program_argv;
    return 0;
}

/* The counting run: the instrumented copy, or the launcher running it in
 * every rank; then every process's counts merged (a job's rank by rank
 * first). */
static int run_counted(const mt_pass1_options *o, mt_pass1_result *r, mt_error *err)
{
    mt_mpi_job *job = r->job;
    if (job && r->ran && mt_mpi_clear(r->profiles, err) != 0)
        return -1;
    char **argv = o->argv;
    if (job && r->ran &&
        !(argv = mt_mpi_wrapped_argv(job, r->ins.path, r->profiles, r->libs.env, err)))
        return -1;
    /* a job's ranks set the libraries' environment themselves (mpi.c) */
    if (r->ran && mt_run_program_env(job ? job->launcher : r->ins.path, argv, r->profiles,
                                     job ? NULL : r->libs.env, &r->run, err) != 0)
        return -1;
    if (job && r->ran && mt_mpi_collect_step(r->profiles, err) != 0)
        return -1;
    if (job && mt_mpi_collect(job, r->profiles, &r->map, o->log, err) != 0)
        return -1;
    if (job)
        mt_mpi_accumulate(job, r->prog, &r->map, &r->libs);
    return mt_profile_merge(r->profiles, &r->map, &r->merge, err);
}

/* The counting copy of library set `spec`, its counter map and the
 * environment that loads its libraries' copies. */
static int counting_copy(const mt_pass1_options *o, mt_pass1_result *r, const char *bin,
                         const char *spec, mt_error *err)
{
    return prepare_libraries(o, r, bin, spec, err) != 0 || instrument(r, bin, err) != 0 ||
                   read_map(r, err) != 0 || libraries_env(r, bin, err) != 0
               ? -1
               : 0;
}

/* --profiles: the profiles merged into the copy of the set asked; without
 * --libs, into `none`'s copy, else, when every profile of this binary has
 * other counters (made with its libraries), into `all`'s. */
static int merge_profiles(const mt_pass1_options *o, mt_pass1_result *r, const char *bin,
                          mt_error *err)
{
    if (run_counted(o, r, err) == 0)
        return 0;
    if (o->libs || r->job || !r->merge.nother)
        return -1;
    mt_profile_merge_free(&r->merge);
    mt_counter_map_free(&r->map);
    mt_instrumented_free(&r->ins);
    mt_pass1_libraries_free(&r->libs);
    return counting_copy(o, r, bin, "all", err) != 0 ? -1 : run_counted(o, r, err);
}

int mt_run_pass1(const mt_pass1_options *o, mt_pass1_result *r, mt_error *err)
{
    memset(r, 0, sizeof *r);
    r->argv = o->argv;
    r->ran = !o->profiles;
    r->baseline = r->ran && !o->no_baseline;
    if (open_job(o, r, err) != 0)
        return -1;
    const char *bin = r->argv[0];
    const char *exe = r->job ? r->job->launcher : o->argv[0];
    mt_analyze_options opt;
    mt_analyze_options_init(&opt);
    if (prepare_dirs(o, r, err) != 0 || !(r->prog = mt_analyze(bin, &opt, err)) ||
        counting_copy(o, r, bin, libraries_asked(o, r), err) != 0 ||
        (r->baseline && run_baseline(exe, o->argv, o->baseline_runs, r, err) != 0) ||
        (r->ran ? run_counted(o, r, err) : merge_profiles(o, r, bin, err)) != 0 ||
        libraries_seen(r, bin, err) != 0)
        return -1;
    rn_warn_damaged_profiles(o->log, r->profiles, &r->merge);
    rn_accumulate(r->prog, &r->map, r->merge.counts, &r->totals);
    mt_pass1_libraries_accumulate(&r->libs, r->merge.counts);
    mt_run_times bt = {r->base.user, r->base.sys, r->base.tsc_per_cycle};
    mt_run_times rt = {r->run.user, r->run.sys, r->run.tsc_per_cycle};
    figure2_compute(&r->fig, r->prog, &r->totals, r->baseline ? &bt : NULL, r->ran ? &rt : NULL,
                    o->log);
    return 0;
}

int mt_run_pass1_keep(const mt_pass1_result *r, mt_error *err)
{
    if (mt_rundir_write_pass1(r->rundir, r->prog, &r->map, &r->merge, &r->libs, r->argv,
                              r->baseline ? &r->base : NULL, err) != 0)
        return -1;
    if (r->job && mt_rundir_write_job(r->rundir, r->prog, &r->map, &r->libs, r->job, err) != 0) {
        mt_rundir_forget_pass1(r->rundir); /* pass 2 would run the program without its launcher */
        return -1;
    }
    return 0;
}

void rn_pass1_totals_free(mt_pass1_totals *t)
{
    free(t->block_counts);
    free(t->derived);
    free(t->proc_first);
    free(t->fallbacks);
    memset(t, 0, sizeof *t);
}

void mt_pass1_result_free(mt_pass1_result *r)
{
    rn_pass1_totals_free(&r->totals);
    mt_pass1_libraries_free(&r->libs);
    if (r->job)
        mt_mpi_job_free(r->job);
    free(r->job);
    mt_profile_merge_free(&r->merge);
    mt_counter_map_free(&r->map);
    mt_instrumented_free(&r->ins);
    mt_program_free(r->prog);
    free(r->profiles);
    free(r->rundir);
    memset(r, 0, sizeof *r);
}
