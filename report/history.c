/* report/history.c — the page's history view: the reported run's place in
 * the run history (store/), each object's trend over the earlier runs of
 * its program, and the diff against a baseline run with regressions marked
 * by the store's rule (mt_store_regressed, `mtool history regressions`').
 *
 * A run directory does not know its run's id: the history records, with
 * each timed run, the stamp of its run directory (the SHA-256 of the
 * pass2.tsv that run wrote: mt_store_rundir_stamp), which a later pass 2
 * there changes.  A run stored before stamps were recorded is the one of
 * the same binary (content hash) whose objects' measured cycles are those
 * of pass2.tsv (written to 9 significant digits).  Measured time is noise:
 * no two runs share it for every object.
 *
 * `mtool report RUN` goes the other way (mt_report_load_run): the run's
 * recorded directory is read when its stamp is still the recorded one;
 * otherwise the page is built from the history alone (stored.c). */
#define _GNU_SOURCE
#include <limits.h>
#include <unistd.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

/* The most runs a trend chart shows: the latest ones up to the reported run. */
#define MAX_TREND_POINTS 60

static bool same_measured(double stored, double written)
{
    return fabs(stored - written) <= 1e-8 * fmax(fabs(stored), 1);
}

/* Row of `rows` of report object i (same kind, address and procedure: a
 * library's, LIB:PROCEDURE, has addresses of its own file), or MT_NONE. */
static uint32_t row_of_object(const mt_store_object_row *rows, size_t n, const mt_report *r,
                              size_t i)
{
    const mt_report_object *o = &r->objects[i];
    const char *proc = r->pass2.objects[i].prog->procs[o->proc].name;
    size_t lib = o->library ? strlen(o->library) : 0;
    bool loop = !strcmp(o->kind, "loop"), region = !strcmp(o->kind, "region");
    for (size_t k = 0; k < n; k++) {
        const char *name = rows[k].procedure;
        bool named = lib ? !strncmp(name, o->library, lib) && name[lib] == ':' &&
                               !strcmp(name + lib + 1, proc)
                         : !strcmp(name, proc);
        if (!rows[k].data_kind && rows[k].address == o->address && rows[k].is_loop == loop &&
            rows[k].is_region == region && named)
            return (uint32_t)k;
    }
    return MT_NONE;
}

/* Whether a stored run's objects are r's (measured as pass 2 measured
 * them, when `measured` says so); obj_ids[i] gets object i's stable id. */
static bool is_this_run(const mt_report *r, const mt_store_object_row *rows, size_t n,
                        bool measured, int64_t *obj_ids)
{
    for (size_t i = 0; i < r->nobjects; i++) {
        uint32_t k = row_of_object(rows, n, r, i);
        if (k == MT_NONE ||
            (measured && !same_measured(rows[k].measured_cycles, r->objects[i].measured)))
            return false;
        obj_ids[i] = rows[k].object;
    }
    return r->nobjects > 0;
}

/* Whether stored run `run` holds r's objects (`measured`: as pass 2
 * measured them); their ids into obj_ids. */
static int match_run(mt_store *s, const mt_report *r, int64_t run, bool measured, bool *matched,
                     int64_t *obj_ids, mt_error *err)
{
    mt_store_object_row *rows;
    size_t n;
    if (mt_store_run_objects(s, run, &rows, &n, err) != 0)
        return -1;
    *matched = is_this_run(r, rows, n, measured, obj_ids);
    mt_store_object_rows_free(rows, n);
    return 0;
}

/* The stored run of r, newest first among the timed runs of its build
 * stored since RUNDIR's pass2.tsv was written (a run is stored after its
 * pass 2: the runs before cannot be it, and a long history is not read
 * run by run); 0 when none.  For runs stored before stamps were. */
static int find_run_by_figures(mt_store *s, const mt_report *r, const char *rundir, int64_t *run,
                               int64_t *obj_ids, mt_error *err)
{
    *run = 0;
    char *pass2 = mt_xasprintf("%s/pass2.tsv", rundir);
    struct stat st;
    int found = stat(pass2, &st);
    free(pass2);
    if (found != 0)
        return 0; /* read before: gone since, no run to find */
    char path[PATH_MAX];
    uint8_t sha[32];
    char hex[65];
    if (!realpath(r->pass1->binary, path) || mt_file_sha256(path, sha, err) != 0)
        return 0; /* no binary to compare with: checked before, so not this run's either */
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", sha[i]);
    mt_store_filter f = {.program = path, .since = (double)st.st_mtime - 1};
    mt_store_run_row *runs;
    size_t nruns;
    if (mt_store_list(s, &f, &runs, &nruns, err) != 0)
        return -1;
    int rc = 0;
    for (size_t k = nruns; k-- > 0 && !*run && rc == 0;) {
        if (strcmp(runs[k].sha256, hex) != 0 || (strcmp(runs[k].tool, "time") != 0 &&
                                                 strcmp(runs[k].tool, "run") != 0))
            continue;
        bool matched;
        if ((rc = match_run(s, r, runs[k].id, true, &matched, obj_ids, err)) == 0 && matched)
            *run = runs[k].id;
    }
    mt_store_run_rows_free(runs, nruns);
    return rc;
}

/* The stored run of r: the newest whose stamp is RUNDIR's, else (runs
 * stored before stamps were) found by its figures; 0 when none. */
static int find_run(mt_store *s, const mt_report *r, const char *rundir, int64_t *run,
                    int64_t *obj_ids, mt_error *err)
{
    char stamp[65];
    mt_error unstamped;
    bool matched = false;
    *run = 0;
    if (mt_store_rundir_stamp(rundir, stamp, &unstamped) == 0 &&
        mt_store_run_of_stamp(s, stamp, run, err) != 0)
        return -1;
    if (*run && match_run(s, r, *run, false, &matched, obj_ids, err) != 0)
        return -1;
    return matched ? 0 : find_run_by_figures(s, r, rundir, run, obj_ids, err);
}

/* Object i's runs up to the reported one (timed, counted, simulated), the
 * latest MAX_TREND_POINTS. */
static int load_trend(mt_store *s, mt_report_history *h, size_t i, int64_t object, mt_error *err)
{
    mt_store_object_row *rows;
    size_t n;
    if (mt_store_trend(s, object, 0, &rows, &n, err) != 0)
        return -1;
    size_t cap = 0;
    for (size_t k = 0; k < n; k++) {
        const mt_store_object_row *o = &rows[k];
        mt_report_point p = {o->run, o->measured_cycles, o->predicted_cycles, o->overhead_cycles,
                             o->memory_ops == MT_STORE_NO_COUNT ? NAN : (double)o->memory_ops,
                             mt_store_sim_misses(o, MT_STORE_SIM_LL, -1), {0},
                             mt_store_metric_value(o, (mt_store_metric){MT_METRIC_SIM_TLB,
                                                                        MT_STORE_PAGE_WALKS, -1}),
                             mt_store_metric_value(o, (mt_store_metric){MT_METRIC_SIM_TLB,
                                                                        MT_STORE_ITLB_MISSES, -1})};
        for (unsigned f = 0; f < MT_STORE_NMP; f++)
            p.mp[f] = mt_store_metric_value(o, (mt_store_metric){MT_METRIC_SIM_MP, f, -1});
        if (o->run <= h->run && !o->data_kind)
            MT_PUSH(h->trend[i], h->ntrend[i], cap, p);
    }
    if (h->ntrend[i] > MAX_TREND_POINTS) {
        size_t drop = h->ntrend[i] - MAX_TREND_POINTS;
        memmove(h->trend[i], h->trend[i] + drop, MAX_TREND_POINTS * sizeof *h->trend[i]);
        h->ntrend[i] = MAX_TREND_POINTS;
    }
    mt_store_object_rows_free(rows, n);
    return 0;
}

/* The diff of the baseline (`baseline`: a RUN spec, NULL: the previous run
 * of the program) against the reported run. */
static int load_diff(mt_store *s, mt_report_history *h, const char *baseline, mt_error *err)
{
    if (baseline ? mt_store_resolve_run(s, baseline, NULL, &h->baseline, err) != 0
                 : mt_store_previous_run(s, h->run, &h->baseline, err) != 0)
        return -1;
    if (!h->baseline)
        return 0;
    if (mt_store_diff_runs(s, h->baseline, h->run, &h->diff, err) != 0)
        return -1;
    h->metric = mt_store_choose_metric(&h->diff, (mt_store_metric){MT_METRIC_AUTO, 0, -1});
    h->compared = mt_store_compare(&h->diff, h->metric, &h->ncompared);
    h->regressed = mt_xcalloc(h->ncompared + 1, sizeof *h->regressed);
    for (size_t k = 0; k < h->ncompared; k++)
        h->regressed[k] = mt_store_regressed(&h->compared[k], MT_STORE_REGRESSION_PCT,
                                             MT_STORE_MIN_SHARE_PCT);
    return 0;
}

bool mt_report_has_mp(const mt_store_object_row *o)
{
    return !isnan(mt_store_metric_value(o, (mt_store_metric){MT_METRIC_SIM_MP, 0, -1}));
}

/* A simulated run of cpus > 1: its objects' processors' figures, its
 * what-if remedies and problems, its threads (nothing kept for another run). */
static int load_processors(mt_store *s, mt_report_history *h, mt_error *err)
{
    if (mt_store_run_objects(s, h->run, &h->mp_rows, &h->nmp_rows, err) != 0)
        return -1;
    bool any = false;
    for (size_t i = 0; i < h->nmp_rows && !any; i++)
        any = mt_report_has_mp(&h->mp_rows[i]);
    if (!any) {
        mt_store_object_rows_free(h->mp_rows, h->nmp_rows);
        h->mp_rows = NULL;
        h->nmp_rows = 0;
        return 0;
    }
    if (mt_store_sim_whatif(s, h->run, &h->remedies, &h->nremedies, &h->problems,
                            &h->nproblems, err) != 0)
        return -1;
    return mt_store_sim_threads(s, h->run, &h->threads, &h->nthreads, err);
}

int mt_report_history_views(mt_store *s, mt_report_history *h, const int64_t *objects, size_t n,
                            const char *baseline, mt_error *err)
{
    h->nobjects = n;
    h->trend = mt_xcalloc(n + 1, sizeof *h->trend);
    h->ntrend = mt_xcalloc(n + 1, sizeof *h->ntrend);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = load_trend(s, h, i, objects[i], err);
    if (rc == 0)
        rc = load_processors(s, h, err);
    return rc == 0 ? load_diff(s, h, baseline, err) : -1;
}

/* What the history holds of the reported run: it, the trends, the diff;
 * -1 with why when it cannot be read. */
static int load_run(mt_store *s, mt_report *r, const char *rundir, const char *baseline,
                    mt_error *why)
{
    mt_report_history *h = &r->history;
    int64_t *obj_ids = mt_xcalloc(r->nobjects + 1, sizeof *obj_ids);
    int rc = find_run(s, r, rundir, &h->run, obj_ids, why);
    if (rc == 0 && h->run)
        rc = mt_report_history_views(s, h, obj_ids, r->nobjects, baseline, why);
    free(obj_ids);
    return rc;
}

int mt_report_load_history(mt_report *r, const char *rundir, const char *db, const char *baseline,
                           mt_error *err)
{
    mt_report_history *h = &r->history;
    mt_error why;
    bool exists = access(db, F_OK) == 0;
    mt_store *s = exists ? mt_store_open(db, MT_STORE_READ, &why) : NULL;
    int rc = s ? load_run(s, r, rundir, baseline, &why) : -1;
    if (s)
        mt_store_close(s);
    if (rc == 0 && !h->run)
        mt_error_set(&why, "%s holds no run with this run directory's measured figures (run "
                     "with --no-store, or not stored yet: 'mtool time' and 'run' store it after "
                     "writing their page, 'mtool report RUNDIR' then finds it)", db);
    else if (!exists)
        mt_error_set(&why, "%s: no history there", db);
    if (rc == 0 && h->run)
        return 0;
    h->run = 0; /* the view says why */
    h->why = mt_xstrdup(why.msg);
    if (!baseline)
        return 0;
    mt_error_set(err, "--baseline %s: %s", baseline, why.msg);
    return -1;
}

/* Why run `row`'s directory is not read (NULL: it holds the run). */
static char *why_not_rundir(const mt_store_run_row *row)
{
    char stamp[65];
    mt_error err;
    if (!row->rundir)
        return mt_xasprintf("run %lld ('mtool %s') recorded no run directory", (long long)row->id,
                            row->tool);
    if (mt_store_rundir_stamp(row->rundir, stamp, &err) != 0)
        return mt_xasprintf("run %lld's run directory is gone (%s)", (long long)row->id, err.msg);
    if (strcmp(stamp, row->rundir_stamp) != 0)
        return mt_xasprintf("run %lld's run directory %s holds another run now (its pass2.tsv "
                            "changed since)", (long long)row->id, row->rundir);
    return NULL;
}

/* The history views of r, the report of the run directory of stored run
 * `row`, which holds it. */
static int load_views_of_rundir(mt_store *s, const mt_store_run_row *row, const char *baseline,
                                mt_report *r, mt_error *err)
{
    int64_t *obj_ids = mt_xcalloc(r->nobjects + 1, sizeof *obj_ids);
    bool matched;
    int rc = match_run(s, r, row->id, false, &matched, obj_ids, err);
    if (rc == 0 && !matched) { /* the same pass2.tsv: only a damaged history gets here */
        mt_error_set(err, "%s: run %lld does not hold the objects of %s/pass2.tsv",
                     mt_store_path(s), (long long)row->id, row->rundir);
        rc = -1;
    }
    r->history.run = row->id;
    if (rc == 0)
        rc = mt_report_history_views(s, &r->history, obj_ids, r->nobjects, baseline, err);
    free(obj_ids);
    return rc;
}

int mt_report_load_run(const char *spec, const char *db, const char *baseline, FILE *log,
                       mt_report *r, mt_error *err)
{
    memset(r, 0, sizeof *r);
    if (access(db, F_OK) != 0) {
        mt_error_set(err, "run %s: no history at %s (mtool count, time, run and sim store "
                          "their runs there; $MTOOL_HISTORY names another)", spec, db);
        return -1;
    }
    mt_store *s = mt_store_open(db, MT_STORE_READ, err);
    int64_t id;
    mt_store_run_row *row = NULL;
    int rc = !s || mt_store_resolve_run(s, spec, NULL, &id, err) != 0 ||
                     mt_store_get_run(s, id, &row, err) != 0 ? -1 : 0;
    char *why = rc == 0 ? why_not_rundir(row) : NULL;
    mt_error unreadable;
    if (rc == 0 && !why && mt_report_load(row->rundir, log, r, &unreadable) != 0) {
        mt_report_free(r); /* its binary rebuilt since, say: the history still has the run */
        why = mt_xasprintf("run %lld's run directory cannot be read (%s)", (long long)id,
                           unreadable.msg);
    }
    if (rc == 0 && !why) {
        rc = load_views_of_rundir(s, row, baseline, r, err);
        mt_store_run_rows_free(row, 1);
    } else if (rc == 0 && (rc = mt_report_load_stored(s, row, why, r, err)) == 0) {
        const mt_report_stored *st = r->stored;
        int64_t *obj_ids = mt_xcalloc(st->nobjects + 1, sizeof *obj_ids);
        for (size_t i = 0; i < st->nobjects; i++)
            obj_ids[i] = st->objects[i].object;
        r->history.run = id;
        rc = mt_report_history_views(s, &r->history, obj_ids, st->nobjects, baseline, err);
        free(obj_ids);
    }
    free(why);
    mt_store_close(s);
    return rc;
}

void mt_report_history_free(mt_report_history *h)
{
    for (size_t i = 0; h->trend && i < h->nobjects; i++)
        free(h->trend[i]);
    free(h->trend);
    free(h->ntrend);
    free(h->why);
    free(h->compared);
    free(h->regressed);
    mt_store_diff_free(&h->diff);
    mt_store_object_rows_free(h->mp_rows, h->nmp_rows);
    mt_store_whatif_free(h->remedies, h->nremedies, h->problems, h->nproblems);
    free(h->threads);
    memset(h, 0, sizeof *h);
}
