/* report/history.c — the page's history view: the reported run's place in
 * the run history (store/), each object's trend over the earlier runs of
 * its program, and the diff against a baseline run with regressions marked
 * by the store's rule (mt_store_regressed, `mtool history regressions`').
 *
 * A run directory does not know its run's id: the stored run is the one of
 * the same binary (content hash) whose objects' measured cycles are those
 * of pass2.tsv (written to 9 significant digits).  Measured time is noise:
 * no two runs share it for every object. */
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

/* Row of `rows` of report object o (same kind, same address), or MT_NONE. */
static uint32_t row_of_object(const mt_store_object_row *rows, size_t n, const mt_report_object *o)
{
    bool loop = !strcmp(o->kind, "loop"), region = !strcmp(o->kind, "region");
    for (size_t i = 0; i < n; i++)
        if (!rows[i].data_kind && rows[i].address == o->address && rows[i].is_loop == loop &&
            rows[i].is_region == region)
            return (uint32_t)i;
    return MT_NONE;
}

/* Whether a stored run's objects are r's, measured as pass 2 measured
 * them; obj_ids[i] gets object i's stable id. */
static bool is_this_run(const mt_report *r, const mt_store_object_row *rows, size_t n,
                        int64_t *obj_ids)
{
    for (size_t i = 0; i < r->nobjects; i++) {
        uint32_t k = row_of_object(rows, n, &r->objects[i]);
        if (k == MT_NONE || !same_measured(rows[k].measured_cycles, r->objects[i].measured))
            return false;
        obj_ids[i] = rows[k].object;
    }
    return r->nobjects > 0;
}

/* The stored run of r, newest first among the timed runs of its build
 * stored since RUNDIR's pass2.tsv was written (a run is stored after its
 * pass 2: the runs before cannot be it, and a long history is not read
 * run by run); 0 when none. */
static int find_run(mt_store *s, const mt_report *r, const char *rundir, int64_t *run,
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
        mt_store_object_row *rows;
        size_t n;
        if ((rc = mt_store_run_objects(s, runs[k].id, &rows, &n, err)) != 0)
            break;
        if (is_this_run(r, rows, n, obj_ids))
            *run = runs[k].id;
        mt_store_object_rows_free(rows, n);
    }
    mt_store_run_rows_free(runs, nruns);
    return rc;
}

/* Object i's timed runs up to the reported one, the latest MAX_TREND_POINTS. */
static int load_trend(mt_store *s, mt_report_history *h, size_t i, int64_t object, mt_error *err)
{
    mt_store_object_row *rows;
    size_t n;
    if (mt_store_trend(s, object, 0, &rows, &n, err) != 0)
        return -1;
    size_t cap = 0;
    for (size_t k = 0; k < n; k++)
        if (rows[k].run <= h->run && !isnan(rows[k].measured_cycles)) {
            mt_report_point p = {rows[k].run, rows[k].measured_cycles, rows[k].predicted_cycles,
                                 rows[k].overhead_cycles};
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

/* What the history holds of the reported run: it, the trends, the diff;
 * -1 with why when it cannot be read. */
static int load_run(mt_store *s, mt_report *r, const char *rundir, const char *baseline,
                    mt_error *why)
{
    mt_report_history *h = &r->history;
    h->trend = mt_xcalloc(r->nobjects + 1, sizeof *h->trend);
    h->ntrend = mt_xcalloc(r->nobjects + 1, sizeof *h->ntrend);
    int64_t *obj_ids = mt_xcalloc(r->nobjects + 1, sizeof *obj_ids);
    int rc = find_run(s, r, rundir, &h->run, obj_ids, why);
    for (size_t i = 0; i < r->nobjects && rc == 0 && h->run; i++)
        rc = load_trend(s, h, i, obj_ids[i], why);
    if (rc == 0 && h->run)
        rc = load_diff(s, h, baseline, why);
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

void mt_report_history_free(mt_report_history *h, size_t nobjects)
{
    for (size_t i = 0; h->trend && i < nobjects; i++)
        free(h->trend[i]);
    free(h->trend);
    free(h->ntrend);
    free(h->why);
    free(h->compared);
    free(h->regressed);
    mt_store_diff_free(&h->diff);
    memset(h, 0, sizeof *h);
}
