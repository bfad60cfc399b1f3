/* ui/cmd_report.c — `mtool report RUN | RUNDIR`: the run's HTML report
 * (report/html.c) and, with --callgrind, its Callgrind export. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../report/report.h"
#include "ui.h"

const char mt_report_usage[] =
    "usage: mtool report [options] RUN | RUNDIR\n"
    "\n"
    "The report of a run directory after pass 2 ('mtool run -o RUNDIR' or 'mtool\n"
    "time RUNDIR'), or of RUN, a run of the history (an id, 'last', 'last~K', as\n"
    "'mtool history' takes them), as one self-contained HTML file (inline style, script and SVG;\n"
    "no network; opens from file://): the program's predicted, measured and\n"
    "overhead time, the m-objects as a histogram and a sortable table, and the\n"
    "source of each object with its lines shaded by overhead and by memory\n"
    "operations, the call tree of measured time as a flame graph, and, after\n"
    "'mtool sim RUNDIR', the simulation: the stall estimate beside the measured\n"
    "overhead, miss causes, the code x data matrix, line use and coherence misses\n"
    "(docs/REPORT.md, \"HTML report\").  Source files are read now, through the\n"
    "paths the binary's DWARF gives; a procedure without them is shown as its\n"
    "annotated disassembly.  When the run is in the history ($MTOOL_HISTORY, see\n"
    "'mtool help history'), the page has each object's trend over the earlier runs\n"
    "of the program and the diff against a baseline run, regressions marked as\n"
    "'mtool history regressions' finds them.\n"
    "\n"
    "RUN: the history records a timed run's directory and a stamp of its pass2.tsv;\n"
    "the page is that directory's while it still holds the run.  When it is gone,\n"
    "holds a later run, or was never recorded (count and sim runs), the page is\n"
    "built from the history alone: the overview, the objects (a count run's memory\n"
    "operations, a sim run's last-level misses), their trends and the diff, each\n"
    "object's first source line when its file is still readable; the page and\n"
    "stderr say what it lacks.  An argument that is both a RUN and a directory is\n"
    "refused: write ./NAME for the directory.\n"
    "\n"
    "options:\n"
    "  -o FILE          where to write the page (default RUNDIR/report.html;\n"
    "                   for RUN, mtool-run-ID.html in the current directory)\n"
    "  --callgrind FILE also write the per-line figures in Callgrind's format\n"
    "                   (callgrind_annotate, KCachegrind): events predicted,\n"
    "                   measured, overhead (core cycles) and memops; a page built\n"
    "                   from the history alone has none to write\n"
    "  --baseline RUN   the run the diff compares with (an id, 'last', 'last~K';\n"
    "                   default: the previous run of the same program)\n";

typedef struct {
    const char *run_or_dir, *html, *callgrind, *baseline; /* RUN or RUNDIR */
} report_args;

static int parse_args(int argc, char **argv, report_args *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        bool has_value = i + 1 < argc;
        if (strcmp(s, "-o") == 0 && has_value)
            a->html = argv[++i];
        else if (strcmp(s, "--callgrind") == 0 && has_value)
            a->callgrind = argv[++i];
        else if (strcmp(s, "--baseline") == 0 && has_value)
            a->baseline = argv[++i];
        else if (s[0] != '-' && !a->run_or_dir)
            a->run_or_dir = s;
        else {
            mt_ui_error("report: unexpected argument '%s'; see 'mtool help report'", s);
            return -1;
        }
    }
    if (!a->run_or_dir) {
        mt_ui_error("report: no run or run directory given; see 'mtool help report'");
        return -1;
    }
    return 0;
}

static bool is_directory(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Opens `path` into out[*n] (said when it cannot be made). */
static int open_output(mt_outfile *out, size_t *n, const char *path)
{
    mt_error err;
    if (mt_outfile_open(&out[*n], path, &err) != 0) {
        mt_ui_error("report: %s", err.msg);
        return -1;
    }
    (*n)++;
    return 0;
}

/* The report of RUNDIR (of the pass 2 just made, when pass2 is given), with
 * what the history holds of its run. */
static int load_report(const char *rundir, const mt_pass2_result *pass2, const char *baseline,
                       mt_report *r)
{
    mt_error err;
    char *db = mt_store_default_path();
    int rc = (pass2 ? mt_report_of_pass2(rundir, pass2, r, &err)
                    : mt_report_load(rundir, stderr, r, &err)) != 0 ||
             mt_report_load_history(r, rundir, db, baseline, &err) != 0;
    free(db);
    if (rc)
        mt_ui_error("report: %s", err.msg);
    return rc;
}

/* History run `spec`'s report, refused when it is built from the history
 * alone and an export is asked for (the history has no figures per line);
 * what such a page lacks is said on stderr too. */
static int load_run_report(const char *spec, const char *baseline, bool callgrind, mt_report *r)
{
    mt_error err;
    char *db = mt_store_default_path();
    int rc = mt_report_load_run(spec, db, baseline, stderr, r, &err);
    free(db);
    if (rc != 0)
        mt_ui_error("report: %s", err.msg);
    else if (r->stored && callgrind) {
        mt_ui_error("report: --callgrind: %s", r->stored->missing);
        rc = -1;
    } else if (r->stored) {
        char *shown = mt_ui_escape(r->stored->missing);
        fprintf(stderr, "report: %s\n", shown);
        free(shown);
    }
    return rc;
}

/* The page (and export) of the report `r` loaded, both written whole or neither. */
static int write_loaded(const mt_report *r, const char *html, const char *callgrind)
{
    mt_error err;
    mt_outfile out[2];
    size_t n = 0;
    int rc = open_output(out, &n, html) != 0 || (callgrind && open_output(out, &n, callgrind) != 0);
    if (rc == 0) {
        mt_report_write_html(out[0].fp, r);
        if (callgrind)
            mt_report_write_callgrind(out[1].fp, r);
    }
    /* Both files or neither: each is flushed before either is renamed into
     * place, so that a full disk leaves the old files as they were. */
    for (size_t k = 0; k < n && rc == 0; k++)
        if (fflush(out[k].fp) != 0 || ferror(out[k].fp)) {
            mt_ui_error("report: %s: write failed", out[k].path);
            rc = 1;
        }
    for (size_t k = 0; k < n; k++) {
        if (rc != 0)
            mt_outfile_abort(&out[k]);
        else if (mt_outfile_commit(&out[k], &err) != 0) {
            mt_ui_error("report: %s", err.msg);
            rc = 1;
        }
    }
    return rc;
}

static int write_report(const char *rundir, const mt_pass2_result *pass2, const char *html,
                        const char *callgrind, const char *baseline)
{
    mt_report r;
    int rc = load_report(rundir, pass2, baseline, &r) != 0 ? 1 : write_loaded(&r, html, callgrind);
    mt_report_free(&r);
    return rc;
}

int mt_ui_write_report(const char *rundir, const mt_pass2_result *pass2, const char *html,
                       const char *callgrind)
{
    return write_report(rundir, pass2, html, callgrind, NULL);
}

/* The report of history run `spec`, at `html` or ./mtool-run-ID.html. */
static int write_run_report(const char *spec, const report_args *a, char **html)
{
    mt_report r;
    int rc = load_run_report(spec, a->baseline, a->callgrind != NULL, &r) != 0;
    if (rc == 0) {
        *html = a->html ? mt_xstrdup(a->html)
                        : mt_xasprintf("mtool-run-%lld.html", (long long)r.history.run);
        rc = write_loaded(&r, *html, a->callgrind);
    }
    mt_report_free(&r);
    return rc;
}

int mt_cmd_report(int argc, char **argv)
{
    report_args a;
    if (parse_args(argc, argv, &a) != 0)
        return 2;
    bool run = mt_store_is_run_spec(a.run_or_dir), dir = is_directory(a.run_or_dir);
    if (run && dir) {
        mt_ui_error("report: '%s' is both a run of the history and a directory: write ./%s for "
                    "the directory", a.run_or_dir, a.run_or_dir);
        return 2;
    }
    char *html = NULL;
    int rc;
    if (run)
        rc = write_run_report(a.run_or_dir, &a, &html);
    else {
        html = a.html ? mt_xstrdup(a.html) : mt_xasprintf("%s/report.html", a.run_or_dir);
        rc = write_report(a.run_or_dir, NULL, html, a.callgrind, a.baseline);
    }
    if (rc == 0) {
        char *shown = mt_ui_escape(html);
        fprintf(stderr, "report written to %s\n", shown);
        free(shown);
    }
    free(html);
    return rc;
}
