/* run/pass2.c — pass 2 on top of a pass-1 run directory: the analysis
 * refined once with what pass 1 measured, the m-objects selected
 * (correlate/), timed in a copy without counters, the copy run N times, and
 * each object's least time correlated against its prediction. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* What the timed runs share: the copy, its counter map, where it writes. */
typedef struct {
    mt_instrumented ins;
    mt_counter_map map;
    char *profiles;
    profile_merge *merges;
    mt_timer_totals **totals;
    double *tsc_per_cycle;      /* each run's core clock */
    int nmerged;
    mt_mpi_job *jobs;           /* an MPI job: each run's ranks (NULL: no job) */
} timed_runs;

static void timed_runs_free(timed_runs *t, int runs)
{
    for (int k = 0; t->jobs && k < runs; k++)
        mt_mpi_job_free(&t->jobs[k]);
    free(t->jobs);
    for (int k = 0; k < t->nmerged; k++)
        mt_profile_merge_free(&t->merges[k]);
    free(t->merges);
    free(t->totals);
    free(t->tsc_per_cycle);
    mt_counter_map_free(&t->map);
    mt_instrumented_free(&t->ins);
    free(t->profiles);
}

/* Runs the timed copy o->runs times: the program's figures are its least
 * loaded run's; each run's clock and the least and most any run's
 * measurements found; the share of time off the CPU the least any run had. */
static int run_timed(const mt_pass2_options *o, mt_pass2_result *r, timed_runs *t, mt_error *err)
{
    t->merges = mt_xcalloc((size_t)o->runs, sizeof *t->merges);
    t->totals = mt_xcalloc((size_t)o->runs, sizeof *t->totals);
    t->tsc_per_cycle = mt_xcalloc((size_t)o->runs, sizeof *t->tsc_per_cycle);
    for (int k = 0; k < o->runs; k++) {
        mt_run_result one;
        if (o->log)
            fprintf(o->log, "mtool time: running the timed copy (%d of %d)\n", k + 1, o->runs);
        if (mt_clear_profiles(t->profiles, err) != 0 ||
            (t->jobs ? rn_job_run_timed(&t->jobs[k], t->ins.path, t->profiles, r->libs.env,
                                        &t->map, o->log, &one, err)
                     : mt_run_program_env(t->ins.path, r->pass1.argv, t->profiles, r->libs.env,
                                          &one, err)) != 0 ||
            mt_profile_merge(t->profiles, &t->map, &t->merges[k], err) != 0)
            return -1;
        rn_warn_damaged_profiles(o->log, t->profiles, &t->merges[k]);
        t->nmerged++;
        t->totals[k] = t->merges[k].timers;
        t->tsc_per_cycle[k] = one.tsc_per_cycle;
        r->clock_lo = k == 0 ? one.tsc_per_cycle_lo : fmin(r->clock_lo, one.tsc_per_cycle_lo);
        r->clock_hi = k == 0 ? one.tsc_per_cycle_hi : fmax(r->clock_hi, one.tsc_per_cycle_hi);
        if (k == 0 || one.user + one.sys < r->run.user + r->run.sys)
            r->run = one; /* the program's figures: its least loaded run */
        /* A single-threaded program off the CPU: timers count that time too. */
        double off = t->merges[k].nthreads == 1 && one.wall > 0
                         ? 1 - (one.user + one.sys) / one.wall : 0;
        if (k == 0 || off < r->off_cpu)
            r->off_cpu = off;
    }
    return 0;
}

/* The timers' bias: as given, else the least any timed run measured. */
static int choose_bias(const mt_pass2_options *o, const timed_runs *t, double *bias,
                       mt_error *err)
{
    *bias = o->timer_bias;
    for (int k = 0; isnan(o->timer_bias) && k < o->runs; k++)
        if (isnan(*bias) || t->merges[k].timer_bias < *bias)
            *bias = t->merges[k].timer_bias;
    if (isnan(*bias) && t->map.ntimers == 0)
        *bias = 0; /* nothing timed: no bias to subtract */
    if (isnan(*bias)) {
        mt_error_set(err, "%s: the timed runs measured no timer bias (give --timer-bias)",
                     t->ins.path);
        return -1;
    }
    return 0;
}

/* The program's clock while it ran: its outermost objects' own (the
 * clock their threads measured, weighted by their ticks) when each has
 * one, else the one measured around its least loaded run. */
static void program_clock(mt_pass2_result *r)
{
    double ticks = 0, cycles = 0;
    bool all = r->nrows > 0;
    for (size_t i = 0; i < r->nrows; i++)
        if (r->rows[i].outermost) {
            all = all && r->rows[i].clock_in_program;
            ticks += r->rows[i].measured * r->rows[i].tsc_per_cycle;
            cycles += r->rows[i].measured;
        }
    r->clock_in_program = all && cycles > 0;
    r->tsc_per_cycle = r->clock_in_program ? ticks / cycles : r->run.tsc_per_cycle;
}

static void summarize(mt_pass2_result *r)
{
    for (size_t i = 0; i < r->nrows; i++)
        if (r->rows[i].outermost) {
            r->objects_overhead += r->rows[i].overhead;
            r->objects_outside += r->rows[i].outside;
            r->memops_in_objects += r->rows[i].cand->memops;
        }
}

/* The selection options pass 2 was given. */
static mt_select_options select_options(const mt_pass2_options *o)
{
    mt_select_options so;
    mt_select_options_init(&so);
    so.coverage = o->coverage;
    so.inner_first = o->inner_first;
    so.max_regions = o->max_regions;
    return so;
}

/* The calling object of a known import: its analysis, and the costs the
 * import's figure goes into (the executable's, or library i's in `costs`). */
static mt_program *caller_prog(const mt_pass2_result *r, size_t from)
{
    return from == MT_FROM_EXECUTABLE ? r->prog : r->libs.libs[from].prog;
}

static mt_program_costs *caller_costs(mt_pass2_result *r, mt_program_costs *costs, size_t from)
{
    return from == MT_FROM_EXECUTABLE ? &r->costs : &costs[from];
}

/* The calls of object `from` into counted library `lib` (its costs): each
 * stub whose library procedure has a figure per call that holds (estimable
 * there, or by MTOOL's rules) becomes a known import priced at it in the
 * caller's costs; the others stay outside time.  Returns how many became
 * known. */
static size_t price_imports(mt_pass2_result *r, mt_program_costs *costs, size_t from, size_t lib)
{
    mt_pass1_libraries *l = &r->libs;
    mt_pass1_library *to = &l->libs[lib];
    mt_program *prog = caller_prog(r, from);
    mt_program_costs *into = caller_costs(r, costs, from);
    uint32_t *procs = mt_xcalloc(l->nimports + 1, sizeof *procs);
    size_t *at = mt_xcalloc(l->nimports + 1, sizeof *at), n = 0, known = 0;
    for (size_t k = 0; k < l->nimports; k++)
        if (l->imports[k].from == from && l->imports[k].lib == lib) {
            at[n] = k;
            procs[n++] = l->imports[k].proc;
        }
    if (n && !into->imports)
        into->imports = mt_xcalloc(prog->nprocs + 1, sizeof *into->imports);
    if (n && !into->cross_imports)
        into->cross_imports = mt_xcalloc(prog->ncross_callees + 1, sizeof *into->cross_imports);
    mt_import_work *work = mt_xcalloc(n + 1, sizeof *work);
    bool *holds = mt_xcalloc(n + 1, sizeof *holds);
    mt_procedures_work(to->prog, &costs[lib], to->counts, procs, n, work, holds);
    for (size_t j = 0; j < n; j++) {
        const mt_known_import *ki = &l->imports[at[j]];
        if (!holds[j])
            continue;
        if (ki->cross_callee) {
            into->cross_imports[ki->cross_callee - 1] = work[j];
            prog->cross_callees[ki->cross_callee - 1].known_import = true;
        } else {
            into->imports[ki->stub] = work[j];
            prog->procs[ki->stub].known_import = true;
        }
        to->prog->procs[ki->proc].known_export = true;
        known++;
    }
    free(procs);
    free(at);
    free(work);
    free(holds);
    return known;
}

/* Object `from`'s calls into the libraries already priced (done[j]: their
 * own known imports decided), then its estimability again when some became
 * known work, or when `rebound` (mt_pass2_libraries_join bound some of its
 * stubs to its own procedures): the calls to them are callees now. */
static void price_caller(mt_pass2_result *r, mt_program_costs *costs, const bool *done,
                         size_t from, const uint64_t *counts, bool rebound)
{
    size_t known = 0;
    for (size_t j = 0; j < r->libs.nlibs; j++)
        if (done[j] && j != from)
            known += price_imports(r, costs, from, j);
    if (known || rebound)
        mt_estimate_with_pass1(caller_prog(r, from), counts);
}

/* Whether pass 2 made import `ki` known work. */
static bool is_known(const mt_pass2_result *r, const mt_known_import *ki)
{
    const mt_program *prog = caller_prog(r, ki->from);
    return ki->cross_callee ? prog->cross_callees[ki->cross_callee - 1].known_import
                            : prog->procs[ki->stub].known_import;
}

/* Only the known imports stay listed (the others are outside time, or
 * unknown work through pointers). */
static void keep_known_imports(mt_pass2_result *r)
{
    mt_pass1_libraries *l = &r->libs;
    size_t n = 0;
    for (size_t k = 0; k < l->nimports; k++)
        if (is_known(r, &l->imports[k]))
            l->imports[n++] = l->imports[k];
    l->nimports = n;
}

/* The known imports as calls across objects (correlate/). */
static mt_object_call *object_calls(const mt_pass2_result *r, size_t *n)
{
    const mt_pass1_libraries *l = &r->libs;
    mt_object_call *calls = mt_xcalloc(l->nimports + 1, sizeof *calls);
    for (size_t k = 0; k < l->nimports; k++)
        calls[k] = (mt_object_call){.from = caller_prog(r, l->imports[k].from),
                                    .to = l->libs[l->imports[k].lib].prog,
                                    .stub = l->imports[k].stub, .proc = l->imports[k].proc,
                                    .cross_callee = l->imports[k].cross_callee};
    *n = l->nimports;
    return calls;
}

/* The m-objects of each counted library and of the executable, each
 * selected among its own procedures (covering its own memory operations),
 * joined in the order of their timer records: the libraries' first.  The
 * calls through the PLT of the executable and of the libraries into
 * counted libraries are joined to them first, and each object's known
 * imports (those whose figure per call holds) priced with its callee's
 * figures before its own estimability and selection: the libraries in
 * the reverse of the loader's order, which lists a library before the
 * ones it needs, so that a library's callees are priced before it (a call
 * into one listed earlier stays outside time), the executable last. */
static int select_objects(const mt_pass2_options *o, mt_pass2_result *r, const uint64_t *counts,
                          mt_error *err)
{
    mt_select_options so = select_options(o);
    size_t nlibs = r->libs.nlibs;
    mt_selection *parts = mt_xcalloc(nlibs + 1, sizeof *parts);
    mt_program_costs *costs = mt_xcalloc(nlibs + 1, sizeof *costs);
    bool *done = mt_xcalloc(nlibs + 1, sizeof *done);
    const char **objects = mt_xcalloc(nlibs + 1, sizeof *objects);
    int rc = 0;
    bool *rebound = mt_xcalloc(nlibs + 1, sizeof *rebound);
    mt_pass2_libraries_join(&r->libs, r->prog, rebound);
    for (size_t i = nlibs; rc == 0 && i-- > 0;) {
        mt_pass1_library *lib = &r->libs.libs[i];
        if (lib->note || (rc = mt_predict_program(&r->machine, lib->prog, false, lib->counts, &costs[i], err)) != 0)
            continue;
        price_caller(r, costs, done, i, lib->counts, rebound[i]);
        mt_select(lib->prog, &costs[i], lib->counts, &so, &parts[i]);
        done[i] = true;
    }
    if (rc == 0) {
        price_caller(r, costs, done, MT_FROM_EXECUTABLE, counts, rebound[nlibs]);
        keep_known_imports(r);
        mt_select(r->prog, &r->costs, counts, &so, &parts[nlibs]);
        mt_selection *joined = mt_xcalloc(nlibs + 1, sizeof *joined); /* parts' shallow copies */
        size_t n = 0;
        for (size_t i = 0; i <= nlibs; i++)
            if (i == nlibs || done[i]) {
                joined[n] = parts[i];
                objects[n++] = i == nlibs ? NULL : r->libs.libs[i].name;
            }
        mt_selection_join(joined, objects, n, &r->sel);
        r->sel.object_calls = object_calls(r, &r->sel.nobject_calls);
        free(joined);
    }
    for (size_t k = 0; k <= nlibs; k++) {
        mt_selection_free(&parts[k]);
        mt_program_costs_free(&costs[k]);
    }
    free(parts);
    free(costs);
    free(done);
    free(rebound);
    free(objects);
    return rc;
}

/* The pass-2 set: pass 1's and every object's timed list, so that a timed
 * copy only ever activates library copies timing the same objects. */
static uint64_t timed_set(const mt_pass2_result *r, const mt_timed_object *const *timed,
                          const uint32_t *ntimed, const mt_timed_object *own, uint32_t nown)
{
    size_t n = 0;
    uint64_t *words = mt_xcalloc(r->libs.nlibs + 2, sizeof *words);
    words[n++] = r->libs.set;
    for (size_t i = 0; i < r->libs.nlibs; i++)
        if (!r->libs.libs[i].note)
            words[n++] = mt_timed_objects_id(r->libs.libs[i].prog, timed[i], ntimed[i]);
    words[n++] = mt_timed_objects_id(r->prog, own, nown);
    uint64_t set = rn_set_id(words, (uint32_t)n);
    free(words);
    return set;
}

/* The threads a library starts itself run in their creator's slot
 * (docs/ARCHITECTURE.md, "Shared libraries"): concurrent ones share its
 * timer frames too. */
static void warn_shared_slot(FILE *log, const mt_pass1_library *lib)
{
    char name[512];
    mt_escape_text(name, sizeof name, lib->name);
    fprintf(log, "mtool time: warning: %s calls %s itself: threads it starts share their "
                 "creator's timers, and its objects' figures may mix them\n", name, lib->starts);
}

/* The timed copies of the executable and its counted libraries, each
 * timing its part of `timed` (the joined selection's order), and the
 * environment that loads the libraries' for the runs. */
static int instrument_with_libraries(const mt_pass2_options *o, mt_pass2_result *r,
                                     const mt_timed_object *timed, timed_runs *t, mt_error *err)
{
    size_t nlibs = r->libs.nlibs;
    const mt_timed_object **parts = mt_xcalloc(nlibs + 1, sizeof *parts);
    uint32_t *nparts = mt_xcalloc(nlibs + 1, sizeof *nparts), at = 0;
    for (size_t i = 0; i < nlibs; i++) {
        parts[i] = &timed[at];
        while (!r->libs.libs[i].note && at < r->sel.ntimed &&
               r->sel.cands[at].object == r->libs.libs[i].name)
            nparts[i]++, at++;
    }
    uint32_t nown = (uint32_t)r->sel.ntimed - at;
    mt_rewrite_options exe = {.counter_base = r->libs.ncounters, .timers_only = true,
                              .timed = &timed[at], .ntimed = nown, .timer_base = at,
                              .libs_set = timed_set(r, parts, nparts, &timed[at], nown)};
    char *seen = mt_xasprintf("%s/dlopened.txt", t->profiles);
    int rc = mt_instrument_in_set(r->prog, r->pass1.binary, &exe, &t->ins, err) != 0 ||
                     mt_counter_map_read(t->ins.path, &t->map, err) != 0 ||
                     mt_pass2_libraries_time(&r->libs, parts, nparts, exe.libs_set,
                                             t->map.ncounters, err) != 0 ||
                     mt_pass1_libraries_env(&r->libs, r->pass1.binary, t->ins.path, seen, err) != 0
                 ? -1 : 0;
    bool counted = false; /* none after --libs none ($ORIGIN's pins only) */
    for (size_t i = 0; i < nlibs; i++)
        counted |= !r->libs.libs[i].note;
    if (rc == 0 && o->log && counted)
        fprintf(o->log, "mtool time: %u of them in shared libraries\n", at);
    for (size_t i = 0; rc == 0 && o->log && i < nlibs; i++)
        if (nparts[i] && r->libs.libs[i].starts)
            warn_shared_slot(o->log, &r->libs.libs[i]);
    free(seen);
    free(parts);
    free(nparts);
    return rc;
}

/* The timed copy (with its libraries' when pass 1 counted some). */
static int instrument_timed(const mt_pass2_options *o, mt_pass2_result *r,
                            const mt_timed_object *timed, timed_runs *t, mt_error *err)
{
    if (!r->libs.set)
        return mt_instrument_cached(r->prog, r->pass1.binary, timed, (uint32_t)r->sel.ntimed,
                                    false, &t->ins, err) != 0 ||
                       mt_counter_map_read(t->ins.path, &t->map, err) != 0
                   ? -1 : 0;
    return instrument_with_libraries(o, r, timed, t, err);
}

/* An MPI job's pass 1: every timed run is its launcher's (one job per run,
 * each holding that run's ranks). */
static int open_jobs(const mt_pass2_options *o, const mt_pass2_result *r, timed_runs *t,
                     mt_error *err)
{
    if (!r->launcher_argv)
        return 0;
    t->jobs = mt_xcalloc((size_t)o->runs, sizeof *t->jobs);
    for (int k = 0; k < o->runs; k++)
        if (mt_mpi_job_open(r->launcher_argv, &t->jobs[k], err) != 0)
            return -1;
    return 0;
}

/* How many calls into counted libraries became known work, the
 * executable's and the libraries', and how many of them go through
 * pointers rather than the PLT. */
static void log_known_imports(FILE *log, const mt_pass1_libraries *l)
{
    size_t own = 0, pointers = 0;
    for (size_t k = 0; k < l->nimports; k++) {
        own += l->imports[k].from == MT_FROM_EXECUTABLE;
        pointers += l->imports[k].cross_callee != 0;
    }
    fprintf(log, "mtool time: %zu of the executable's imports are known work (procedures of counted "
                 "libraries estimable or estimated per call)", own);
    if (l->nimports > own)
        fprintf(log, ", and %zu of the libraries' imports from one another", l->nimports - own);
    if (pointers)
        fprintf(log, "; %zu of all of them called through pointers", pointers);
    fputc('\n', log);
}

/* Selects the m-objects, times them and correlates. */
static int time_objects(const mt_pass2_options *o, mt_pass2_result *r, const uint64_t *counts,
                        mt_error *err)
{
    if (select_objects(o, r, counts, err) != 0)
        return -1;
    if (o->log && r->libs.nimports)
        log_known_imports(o->log, &r->libs);
    if (o->log)
        fprintf(o->log, "mtool time: %zu of %zu candidate m-objects timable and estimable; "
                        "instrumenting them\n", r->sel.ntimed, r->sel.ncands);
    mt_timed_object *timed = mt_xcalloc(r->sel.ntimed + 1, sizeof *timed);
    for (size_t i = 0; i < r->sel.ntimed; i++)
        timed[i] = mt_candidate_object(&r->sel.cands[i]);
    timed_runs t = {.profiles = mt_xasprintf("%s/profiles-time", o->rundir)};
    double bias = NAN;
    int rc = open_jobs(o, r, &t, err) != 0 || instrument_timed(o, r, timed, &t, err) != 0 ||
                     mt_make_dirs(t.profiles, err) != 0 ||
                     run_timed(o, r, &t, err) != 0
                 ? -1 : 0;
    if (rc == 0 && t.map.ntimers != r->sel.ntimed) {
        mt_error_set(err, "%s: %u objects timed, %zu selected: rewriter and selection disagree",
                     t.ins.path, t.map.ntimers, r->sel.ntimed);
        rc = -1;
    }
    mt_timer_totals **ranks = NULL;
    size_t nranks = 0;
    if (rc == 0 && (rc = choose_bias(o, &t, &bias, err)) == 0 &&
        (!t.jobs || (rc = rn_job_parts(o, t.jobs, &ranks, &nranks, err)) == 0)) {
        mt_correlate_clock clk = {.tsc_per_cycle = t.tsc_per_cycle, .timer_bias_ticks = bias,
                                  .parts = ranks, .nparts = nranks};
        r->rows = mt_correlate(&r->sel, t.totals, (size_t)o->runs, &clk, &r->nrows);
        r->timer_bias = bias;
        mt_select_options so = select_options(o);
        clk.nparts = 0; /* each rank's own figures from its totals whole */
        if (t.jobs)
            rc = rn_job_correlate_ranks(o, r, &so, t.jobs, &clk, err);
    }
    free(ranks);
    timed_runs_free(&t, o->runs);
    free(timed);
    return rc;
}

int mt_run_pass2(const mt_pass2_options *o, mt_pass2_result *r, mt_error *err)
{
    memset(r, 0, sizeof *r);
    r->runs = o->runs;
    r->inner_first = o->inner_first;
    r->bias_given = !isnan(o->timer_bias);
    r->program_measured = -1;
    uint64_t *counts = NULL;
    bool calibrated;
    mt_analyze_options opt;
    mt_analyze_options_init(&opt);
    int rc = mt_rundir_read_pass1(o->rundir, &r->pass1, err) != 0 ||
                     mt_rundir_read_job(o->rundir, &r->launcher_buf, &r->launcher_argv, err) != 0 ||
                     mt_rundir_check_binary(&r->pass1, err) != 0 ||
                     !(r->prog = mt_analyze(r->pass1.binary, &opt, err)) ||
                     /* every file of the run directory read before a
                      * calibration can take seconds: bad input fails first */
                     mt_rundir_refine(o->rundir, r->prog, &counts, err) != 0 ||
                     mt_pass2_libraries_prepare(o->rundir, r->pass1.binary, &r->libs, err) != 0 ||
                     mt_run_load_machine(&r->machine, &calibrated, o->log, err) != 0 ||
                     mt_predict_program(&r->machine, r->prog, false, counts, &r->costs, err) != 0 ||
                     time_objects(o, r, counts, err) != 0
                 ? -1 : 0;
    free(counts);
    if (rc != 0)
        return -1;
    r->program_predicted = r->sel.predicted_total;
    program_clock(r);
    r->tsc_hz = r->machine.tsc_hz;
    /* The program's measured time on the timers' own basis: this run
     * (timers only, close to the program's speed), user and system time,
     * as timers count the kernel's work inside an object too (page faults). */
    r->program_measured = (r->run.user + r->run.sys) * r->machine.tsc_hz / r->tsc_per_cycle;
    r->measured_from = "user + system time of the timed run";
    summarize(r);
    return mt_rundir_write_pass2(o->rundir, r, err) != 0 ||
                   mt_rundir_write_machine(o->rundir, &r->machine, err) != 0
               ? -1 : 0;
}

void mt_pass2_result_free(mt_pass2_result *r)
{
    rn_pass2_ranks_free(r);
    free(r->rows);
    mt_selection_free(&r->sel);
    mt_pass1_libraries_free(&r->libs);
    mt_program_costs_free(&r->costs);
    mt_program_free(r->prog);
    mt_pass1_free(&r->pass1);
    memset(r, 0, sizeof *r);
}
