/* ui/cmd_history.c — `mtool history`: the stored runs (store/store.h) as
 * lists, one run, one object's trend, the difference of two runs, a
 * regression gate for CI, read-only SQL, CSV/JSON export and garbage
 * collection. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../store/store.h"
#include "ui.h"

const char mt_history_usage[] =
    "usage: mtool history COMMAND [options]\n"
    "\n"
    "Every 'mtool count', 'time', 'run' and 'sim' stores its figures per procedure\n"
    "and loop in a history database: $MTOOL_HISTORY, else\n"
    "$XDG_DATA_HOME/mtool/history.db (~/.local/share/mtool/history.db).  Procedures\n"
    "and loops keep their identity across rebuilds: by name and source line (lines\n"
    "may move), by address only when the binary has neither (then said so).\n"
    "Schema: docs/HISTORY.md.\n"
    "\n"
    "commands:\n"
    "  list [--program NAME] [--since DATE] [--until DATE] [--limit N]\n"
    "                   the stored runs, oldest first (DATE: YYYY-MM-DD[ HH:MM[:SS]], local)\n"
    "  show RUN [--top N]\n"
    "                   one run: its circumstances and every executed object\n"
    "  trend OBJECT [--last N]\n"
    "                   one procedure, loop, region or data object over every run\n"
    "                   holding it\n"
    "  diff RUN1 RUN2 [--threshold P] [--metric M]\n"
    "                   objects regressed, improved, new and gone from RUN1 to RUN2\n"
    "  regressions [RUN [BASE]] [--threshold P] [--min-share P] [--metric M]\n"
    "                   exits 1 when an object of RUN (default: last) regressed by more\n"
    "                   than P% (default 5) against BASE (default: the previous run of\n"
    "                   the same program); objects below --min-share P% (default 1) of\n"
    "                   both runs' totals are ignored.  For CI: exits 0 when none\n"
    "                   regressed, 1 when some did, 2 on errors.\n"
    "  sql \"SELECT ...\"  read-only SQL on the database (tab-separated, with a header)\n"
    "  export --csv|--json [--program NAME] [--since DATE] [--until DATE] [-o FILE]\n"
    "  gc [--keep N] [--before DATE]\n"
    "                   remove runs (all but the newest N per program, or older than\n"
    "                   DATE), then what no run refers to, and compact the file\n"
    "\n"
    "RUN is an id, 'last' or 'last~K' (K runs before the last; with --program NAME,\n"
    "among that program's runs).  OBJECT is PROC, PROC/LOOP-PATH (loop nesting path:\n"
    "'2.1' is the first loop inside the second outermost loop), PROC/rK (region K of\n"
    "a large loop-free procedure timed in pieces by pass 2), FILE:LINE, a data object's\n"
    "name of a simulated run ('records.key', 'malloc@fill:43': a heap site's, with or\n"
    "without its ' <- ' call path) or #ID.\n"
    "METRIC (what regresses): memops, instructions, entries, measured, predicted,\n"
    "overhead; of simulated runs (mtool sim) sim_refs, LEVEL_misses,\n"
    "LEVEL_CAUSE_misses, LEVEL_lines (lines brought in) and LEVEL_spatial_use (% of\n"
    "their bytes used: regresses when it drops), LEVEL one of i1, d1, l2, l3, l4, ll\n"
    "(the run's last level), CAUSE one of cold, capacity, conflict (d1_misses,\n"
    "ll_capacity_misses, d1_spatial_use); of simulated runs with cpus > 1\n"
    "true_sharing, false_sharing (coherence misses), invalidations, interventions,\n"
    "upgrades, local_refs, remote_refs, remote_dirty_refs, three_hop_refs (references\n"
    "served by memory or another node's cache); with a simulated TLB tlb1_misses,\n"
    "tlb2_misses, page_walks, itlb_misses and walk_cycles (the walks' cycles in the\n"
    "stall estimate: simulated runs of a RUNDIR); or auto (default: overhead, else measured\n"
    "cycles, else memory operations, else last-level misses, whichever both runs\n"
    "have).  Data objects are compared as procedures and loops are, their share\n"
    "taken of the data objects' total.\n"
    "\n"
    "options for every command:\n"
    "  --db FILE        the database (instead of $MTOOL_HISTORY or the default)\n"
    "  --program NAME   only runs of this program (its file name or full path)\n";

static const char *const metric_names[] = {"auto", "memops", "instructions", "entries",
                                           "measured", "predicted", "overhead", "sim_refs"};
static const char *const metric_titles[] = {
    "", "memory operations (measured counts)", "instructions (measured counts)",
    "entries (measured counts)", "measured cycles", "predicted cycles",
    "overhead cycles (measured - predicted)", "references (simulated)"};
static const char *const cause_names[MT_STORE_NCAUSES] = {"cold", "capacity", "conflict"};

/* "d1_misses", "ll_capacity_misses": a simulated level's misses;
 * "d1_lines", "d1_spatial_use": its line use. */
static bool parse_sim_metric(const char *name, mt_store_metric *m)
{
    int mp = mt_store_mp_figure_of(name);
    if (mp >= 0) { /* true_sharing, remote_refs, ...: a processors' figure */
        *m = (mt_store_metric){MT_METRIC_SIM_MP, (unsigned)mp, -1};
        return true;
    }
    int tlb = mt_store_tlb_figure_of(name);
    if (tlb >= 0) { /* tlb1_misses, page_walks, walk_cycles, ...: a TLB's figure */
        *m = (mt_store_metric){MT_METRIC_SIM_TLB, (unsigned)tlb, -1};
        return true;
    }
    const char *us = strchr(name, '_');
    char level[4];
    if (!us || us - name >= (ptrdiff_t)sizeof level)
        return false;
    snprintf(level, sizeof level, "%.*s", (int)(us - name), name);
    int slot = mt_store_sim_level_slot(level);
    if (slot < 0 || strpbrk(level, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
        return false;
    *m = (mt_store_metric){MT_METRIC_SIM_MISSES, (unsigned)slot, -1};
    if (!strcmp(us + 1, "lines") || !strcmp(us + 1, "spatial_use")) {
        m->kind = us[1] == 'l' ? MT_METRIC_SIM_LINES : MT_METRIC_SIM_SPATIAL_USE;
        return true;
    }
    if (!strcmp(us + 1, "misses"))
        return true;
    for (int c = 0; c < MT_STORE_NCAUSES; c++) {
        size_t n = strlen(cause_names[c]);
        if (!strncmp(us + 1, cause_names[c], n) && !strcmp(us + 1 + n, "_misses")) {
            m->cause = c;
            return true;
        }
    }
    return false;
}

static void metric_title(mt_store_metric m, char *buf, size_t n)
{
    const char *level = mt_store_sim_level_name(m.slot);
    if (m.kind == MT_METRIC_SIM_LINES)
        snprintf(buf, n, "%s lines brought in (simulated)", level);
    else if (m.kind == MT_METRIC_SIM_SPATIAL_USE)
        snprintf(buf, n, "%s spatial use, %% of the bytes brought in (simulated)", level);
    else if (m.kind == MT_METRIC_SIM_MP)
        snprintf(buf, n, "%s (simulated processors)", mt_store_mp_name(m.slot));
    else if (m.kind == MT_METRIC_SIM_TLB)
        snprintf(buf, n, "%s (simulated TLB)", mt_store_tlb_name(m.slot));
    else if (m.kind != MT_METRIC_SIM_MISSES)
        snprintf(buf, n, "%s", metric_titles[m.kind]);
    else
        snprintf(buf, n, "%s %s%smisses (simulated)", mt_store_sim_level_name(m.slot),
                 m.cause < 0 ? "" : cause_names[m.cause], m.cause < 0 ? "" : " ");
}

typedef struct {
    const char *db, *program, *out;
    const char *pos[3];
    int npos;
    double since, until, before;
    size_t limit, top, keep;
    double threshold, min_share;
    mt_store_metric metric;
    bool csv, json;
} history_args;

/* "YYYY-MM-DD[ HH:MM[:SS]]" (or with 'T') in local time, or "@UNIXTIME". */
static int parse_date(const char *s, double *out)
{
    if (s[0] == '@') {
        char *end;
        *out = strtod(s + 1, &end);
        return *end ? -1 : 0;
    }
    static const char *const formats[] = {"%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S",
                                          "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%Y-%m-%d"};
    for (size_t i = 0; i < MT_ARRAY_LEN(formats); i++) {
        struct tm tm = {0};
        const char *end = strptime(s, formats[i], &tm);
        if (end && !*end) {
            tm.tm_isdst = -1;
            *out = (double)mktime(&tm);
            return 0;
        }
    }
    return -1;
}

static int parse_number(const char *opt, const char *s, double *out)
{
    char *end;
    *out = strtod(s, &end);
    if (*end || end == s || *out < 0) {
        mt_ui_error("history: %s wants a non-negative number, not '%s'", opt, s);
        return -1;
    }
    return 0;
}

static int parse_option(history_args *a, const char *opt, const char *val)
{
    double v;
    if (!strcmp(opt, "--db"))
        a->db = val;
    else if (!strcmp(opt, "--program"))
        a->program = val;
    else if (!strcmp(opt, "-o"))
        a->out = val;
    else if (!strcmp(opt, "--since") || !strcmp(opt, "--until") || !strcmp(opt, "--before")) {
        double *dst = opt[2] == 's' ? &a->since : opt[2] == 'u' ? &a->until : &a->before;
        if (parse_date(val, dst) != 0) {
            mt_ui_error("history: %s wants YYYY-MM-DD[ HH:MM[:SS]] or @UNIXTIME, not '%s'", opt, val);
            return -1;
        }
    } else if (!strcmp(opt, "--metric")) {
        for (size_t m = 0; m < MT_ARRAY_LEN(metric_names); m++)
            if (!strcmp(val, metric_names[m])) {
                a->metric = (mt_store_metric){(mt_store_metric_kind)m, 0, -1};
                return 0;
            }
        if (parse_sim_metric(val, &a->metric))
            return 0;
        mt_ui_error("history: unknown metric '%s'; see 'mtool help history'", val);
        return -1;
    } else if (parse_number(opt, val, &v) != 0)
        return -1;
    else if (!strcmp(opt, "--threshold"))
        a->threshold = v;
    else if (!strcmp(opt, "--min-share"))
        a->min_share = v;
    else
        *(!strcmp(opt, "--limit") ? &a->limit : !strcmp(opt, "--keep") ? &a->keep : &a->top) =
            (size_t)v; /* --top, --last */
    return 0;
}

static int parse_args(int argc, char **argv, history_args *a)
{
    static const char *const with_value[] = {"--db", "--program", "-o", "--since", "--until",
                                             "--before", "--metric", "--threshold",
                                             "--min-share", "--limit", "--keep", "--top", "--last"};
    memset(a, 0, sizeof *a);
    a->threshold = MT_STORE_REGRESSION_PCT;
    a->min_share = MT_STORE_MIN_SHARE_PCT;
    for (int i = 2; i < argc; i++) {
        const char *s = argv[i];
        bool known = false;
        for (size_t k = 0; k < MT_ARRAY_LEN(with_value) && !known; k++)
            known = !strcmp(s, with_value[k]);
        if (known) {
            if (i + 1 >= argc) {
                mt_ui_error("history: %s needs a value", s);
                return 2;
            }
            if (parse_option(a, s, argv[++i]) != 0)
                return 2;
        } else if (!strcmp(s, "--csv"))
            a->csv = true;
        else if (!strcmp(s, "--json"))
            a->json = true;
        else if (s[0] == '-' && s[1]) {
            mt_ui_error("history: unknown option '%s'; see 'mtool help history'", s);
            return 2;
        } else if (a->npos < 3)
            a->pos[a->npos++] = s;
        else {
            mt_ui_error("history: too many arguments ('%s'); see 'mtool help history'", s);
            return 2;
        }
    }
    return 0;
}

static mt_store *open_history(const history_args *a, mt_store_mode mode)
{
    char *path = a->db ? mt_xstrdup(a->db) : mt_store_default_path();
    mt_error err;
    struct stat st;
    mt_store *s = NULL;
    if (mode == MT_STORE_WRITE && stat(path, &st) != 0) /* gc never creates one */
        mt_ui_error("%s: no history yet (nothing has been stored there)", path);
    else if (!(s = mt_store_open(path, mode, &err)))
        mt_ui_error("%s", err.msg);
    free(path);
    return s;
}

/* ---- formatting ------------------------------------------------------------ */

static void format_time(double t, char *buf, size_t n)
{
    time_t tt = (time_t)t;
    struct tm tm;
    strftime(buf, n, "%Y-%m-%d %H:%M:%S", localtime_r(&tt, &tm));
}

static void format_real(double v, char *buf, size_t n)
{
    if (isnan(v))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.0f", v);
}

/* Labels and places are for terminal lines: escaped (symbols are data). */
static char *escaped_free(char *raw)
{
    char *e = mt_ui_escape(raw);
    free(raw);
    return e;
}

static char *object_label(const mt_store_object_row *o)
{
    if (o->data_kind)
        return mt_ui_escape(o->procedure);
    return escaped_free(o->is_loop || o->is_region
                            ? mt_xasprintf("%s/%s", o->procedure, o->loop_path)
                            : mt_xstrdup(o->procedure));
}

static char *object_place(const mt_store_object_row *o)
{
    if (o->data_kind) /* a heap site's or a frame's objects have no address */
        return escaped_free(o->address ? mt_xasprintf("%s 0x%" PRIx64, o->data_kind, o->address)
                                       : mt_xstrdup(o->data_kind));
    if (!o->named)
        return mt_xasprintf("0x%" PRIx64 " (by address)", o->address);
    if (!o->file)
        return mt_xasprintf("0x%" PRIx64, o->address);
    const char *slash = strrchr(o->file, '/');
    return escaped_free(mt_xasprintf("%s:%u", slash ? slash + 1 : o->file, o->line));
}

static void print_object_header(FILE *fp, const char *first_column)
{
    fprintf(fp, "  %6s  %-32s %-24s %14s %16s %16s %12s %12s %12s\n", first_column, "name", "at",
            "entries", "instructions", "memory ops", "measured", "predicted", "overhead");
}

/* A table row built in memory and written at once: printf's per-conversion
 * cost, then fwrite's per-call cost, were most of `trend`'s instructions
 * with 10,000 rows. */
typedef struct {
    FILE *fp;
    size_t len;
    char buf[256];
} row_writer;

static void row_put(row_writer *w, const char *s, size_t n)
{
    if (w->len + n > sizeof w->buf) {
        fwrite(w->buf, 1, w->len, w->fp);
        w->len = 0;
    }
    if (n > sizeof w->buf) {
        fwrite(s, 1, n, w->fp);
        return;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

/* `text` after `gap` spaces, padded to `width` columns (negative: left-
 * aligned) as printf's "%*s" does: never truncated. */
static void put_column(row_writer *w, size_t gap, const char *text, int width)
{
    static const char spaces[] = "                                        ";
    size_t len = strlen(text), wd = (size_t)abs(width), pad = len < wd ? wd - len : 0;
    row_put(w, spaces, gap + (width > 0 ? pad : 0));
    row_put(w, text, len);
    if (width < 0)
        row_put(w, spaces, pad);
}

static const char *decimal(uint64_t v, char buf[24])
{
    char *p = buf + 23;
    *p = '\0';
    do
        *--p = (char)('0' + v % 10);
    while (v /= 10);
    return p;
}

/* One row of print_object_header's table. */
static void print_object(FILE *fp, const mt_store_object_row *o, const char *first_column)
{
    char *label = object_label(o), *place = object_place(o), m[32], p[32], v[32], d[3][24];
    format_real(o->measured_cycles, m, sizeof m);
    format_real(o->predicted_cycles, p, sizeof p);
    format_real(o->overhead_cycles, v, sizeof v);
    row_writer w = {.fp = fp};
    put_column(&w, 2, first_column, 6);
    put_column(&w, 2, label, -32);
    put_column(&w, 1, place, -24);
    put_column(&w, 1, o->entries == MT_STORE_NO_COUNT ? "-" : decimal(o->entries, d[0]), 14);
    put_column(&w, 1, decimal(o->instructions, d[1]), 16);
    put_column(&w, 1, decimal(o->memory_ops, d[2]), 16);
    put_column(&w, 1, m, 12);
    put_column(&w, 1, p, 12);
    put_column(&w, 1, v, 12);
    row_put(&w, "\n", 1);
    fwrite(w.buf, 1, w.len, fp);
    free(label);
    free(place);
}

static const char figures_note[] =
    "(counts are measured; measured/predicted/overhead cycles are '-' until a run records them,\n"
    " entries '-' for loops of count runs stored before history version 4: docs/HISTORY.md)\n";
static const char sim_note[] =
    "(simulated runs, mtool sim: references traced and misses per cache level by cause, a\n"
    " procedure's including its loops'; used: bytes of the lines its references brought in\n"
    " used before they left, '-' when not recorded; levels without a miss left out)\n";

/* The level slots in which any of the rows has a simulated miss (a traced
 * run's I1 has none: instruction fetches are not traced). */
static void sim_slots(const mt_store_object_row *rows, size_t n, bool slots[MT_STORE_SIM_LEVELS])
{
    for (unsigned l = 0; l < MT_STORE_SIM_LEVELS; l++) {
        slots[l] = false;
        for (size_t i = 0; i < n && !slots[l]; i++)
            slots[l] = mt_store_sim_misses(&rows[i], l, -1) > 0;
    }
}

static void print_sim_header(FILE *fp, const char *first_column, const bool *slots)
{
    fprintf(fp, "  %6s  %-32s %-24s %14s", first_column, "name", "at", "references");
    for (int l = 0; l < MT_STORE_SIM_LEVELS; l++)
        if (slots[l]) {
            char title[16];
            snprintf(title, sizeof title, "%s misses", mt_store_sim_level_name((unsigned)l));
            fprintf(fp, " %12s %10s %10s %10s %7s", title, "cold", "capacity", "conflict",
                    "used");
        }
    fputc('\n', fp);
}

/* One row of print_sim_header's table. */
static void print_sim_object(FILE *fp, const mt_store_object_row *o, const char *first_column,
                             const bool *slots)
{
    char *label = object_label(o), *place = object_place(o), d[24];
    row_writer w = {.fp = fp};
    put_column(&w, 2, first_column, 6);
    put_column(&w, 2, label, -32);
    put_column(&w, 1, place, -24);
    put_column(&w, 1, decimal(o->sim.refs, d), 14);
    for (unsigned l = 0; l < MT_STORE_SIM_LEVELS; l++) {
        if (!slots[l])
            continue;
        double all = mt_store_sim_misses(o, l, -1);
        put_column(&w, 1, isnan(all) ? "-" : decimal((uint64_t)all, d), 12);
        for (int c = 0; c < MT_STORE_NCAUSES; c++)
            put_column(&w, 1, isnan(all) ? "-" : decimal(o->sim.misses[l][c], d), 10);
        char used[16] = "-";
        double use = mt_store_sim_spatial_use(o, l);
        if (!isnan(use))
            snprintf(used, sizeof used, "%.1f%%", use);
        put_column(&w, 1, used, 7);
    }
    row_put(&w, "\n", 1);
    fwrite(w.buf, 1, w.len, fp);
    free(label);
    free(place);
}

/* ---- processors' figures and what-if remedies of simulated runs ---- */

static const char mp_note[] =
    "(simulated processors, cpus > 1: coherence misses true and false sharing; events counted\n"
    " against the reference that caused them: invalidations sent, interventions, upgrades;\n"
    " references served by local memory, remote memory, a remote dirty copy, three hops)\n";

static bool has_mp(const uint64_t *mp) { return mp[0] != MT_STORE_NO_COUNT; }

/* first_column NULL: none (the data objects' table of `show`); name_width
 * < 0: no name column, the figures' titles after what the caller printed. */
static void print_mp_header(FILE *fp, const char *first_column, int name_width)
{
    if (first_column)
        fprintf(fp, "  %6s", first_column);
    if (name_width >= 0)
        fprintf(fp, "  %-*s", name_width, "name");
    fprintf(fp, " %8s %8s %8s %8s %8s %10s %10s %10s %10s\n", "true",
            "false", "inval.", "interv.", "upgrades", "local", "remote", "rem.dirty", "three-hop");
}

static void print_mp_figures(FILE *fp, const uint64_t *mp)
{
    static const int widths[MT_STORE_NMP] = {8, 8, 8, 8, 8, 10, 10, 10, 10};
    for (int k = 0; k < MT_STORE_NMP; k++)
        fprintf(fp, " %*" PRIu64, widths[k], mp[k]);
    fputc('\n', fp);
}

/* The processors' table of the simulated rows that have its figures. */
static void print_mp_objects(const mt_store_object_row *rows, size_t n, size_t top,
                             const char *first_title,
                             void (*first_column)(const mt_store_object_row *, char *, size_t))
{
    size_t shown = 0;
    for (size_t i = 0; i < n && (!top || shown < top); i++) {
        if (!rows[i].sim.present || !has_mp(rows[i].sim.mp))
            continue;
        if (!shown++)
            print_mp_header(stdout, first_title, 32);
        char first[32], *label = object_label(&rows[i]);
        first_column(&rows[i], first, sizeof first);
        printf("  %6s  %-32s", first, label);
        print_mp_figures(stdout, rows[i].sim.mp);
        free(label);
    }
    if (shown)
        fputs(mp_note, stdout);
}

/* One saving: misses per level slot the run has, conflict and coherence,
 * sharing, remote, cycles. */
static void print_saving(const mt_store_saving *v, const bool *slots)
{
    for (int l = 0; l < MT_STORE_SIM_LEVELS; l++)
        if (slots[l])
            printf(" %9" PRId64, v->misses[l]);
    printf(" %9" PRId64 " %9" PRId64 " %9" PRId64 " %9" PRId64, v->conflict, v->coherence,
           v->sharing, v->remote);
    if (isnan(v->cycles))
        printf(" %12s\n", "-");
    else
        printf(" %12.0f\n", v->cycles);
}

static void print_saving_header(const char *first, int width, const bool *slots)
{
    printf("  %-*s", width, first);
    for (int l = 0; l < MT_STORE_SIM_LEVELS; l++)
        if (slots[l])
            printf(" %9s", mt_store_sim_level_name((unsigned)l));
    printf(" %9s %9s %9s %9s %12s\n", "conflict", "coherence", "sharing", "remote", "cycles");
}

/* A simulated run's what-if remedies (`mtool sim --what-if`) and the
 * proposal for each top problem, as stored: predicted savings. */
static int print_whatif(mt_store *s, int64_t run)
{
    mt_store_remedy *rem;
    mt_store_problem *prob;
    size_t nr, np;
    mt_error err;
    if (mt_store_sim_whatif(s, run, &rem, &nr, &prob, &np, &err) != 0) {
        mt_ui_error("%s", err.msg);
        return -1;
    }
    bool slots[MT_STORE_SIM_LEVELS] = {false};
    for (int l = 0; l < MT_STORE_SIM_LEVELS; l++)
        slots[l] = nr && rem[0].saved.misses[l] != MT_STORE_NO_SAVING;
    if (nr) {
        printf("\n  what-if remedies (mtool sim --what-if: predicted savings against the run, "
               "misses per level, then over the levels; negative: more)\n");
        print_saving_header("remedy", 64, slots);
    }
    for (size_t i = 0; i < nr; i++) {
        char *text = mt_ui_escape(rem[i].text);
        printf("  %-64s", text);
        free(text);
        print_saving(&rem[i].saved, slots);
    }
    if (np)
        printf("\n  proposals (top problems, code x data, and the remedy that saves each most: "
               "its predicted saving in that cell)\n");
    for (size_t i = 0; i < np; i++) {
        const mt_store_problem *p = &prob[i];
        char *code = mt_ui_escape(p->code), *data = mt_ui_escape(p->data);
        printf("  %s x %s:", code, data);
        free(code);
        free(data);
        for (int l = 0; l < MT_STORE_SIM_LEVELS; l++)
            if (p->misses[l] != MT_STORE_NO_COUNT)
                printf(" %s %" PRIu64, mt_store_sim_level_name((unsigned)l), p->misses[l]);
        printf(", true sharing %" PRIu64 ", false sharing %" PRIu64 ", remote %" PRIu64 "\n",
               p->true_sharing, p->false_sharing, p->remote);
        if (p->remedy < 0 || (size_t)p->remedy >= nr) {
            printf("    no remedy tried saves it\n");
            continue;
        }
        char *text = mt_ui_escape(rem[p->remedy].text);
        printf("    proposed: %-52s", text);
        free(text);
        print_saving(&p->saved, slots);
    }
    mt_store_whatif_free(rem, nr, prob, np);
    return 0;
}

/* A simulated run's per-thread view (cpus > 1), as stored. */
static int print_threads(mt_store *s, int64_t run)
{
    mt_store_sim_thread *t;
    size_t n;
    mt_error err;
    if (mt_store_sim_threads(s, run, &t, &n, &err) != 0) {
        mt_ui_error("%s", err.msg);
        return -1;
    }
    if (n) {
        printf("\n  per thread (the CPU it ran on, its references, misses per level, the stall "
               "cycles of where its\n  references were served, then as per object; inval.: "
               "those its writes sent)\n  %6s %4s %12s", "thread", "cpu", "refs");
        for (int l = 0; l < MT_STORE_SIM_LEVELS; l++)
            if (t[0].misses[l] != MT_STORE_NO_COUNT)
                printf(" %9s", mt_store_sim_level_name((unsigned)l));
        printf(" %12s", "stall");
        print_mp_header(stdout, NULL, -1);
    }
    for (size_t i = 0; i < n; i++) {
        printf("  %6" PRIu32 " %4" PRIu32 " %12" PRIu64, t[i].thread, t[i].cpu, t[i].refs);
        for (int l = 0; l < MT_STORE_SIM_LEVELS; l++)
            if (t[i].misses[l] != MT_STORE_NO_COUNT)
                printf(" %9" PRIu64, t[i].misses[l]);
        if (isnan(t[i].stall_cycles))
            printf(" %12s", "-");
        else
            printf(" %12.0f", t[i].stall_cycles);
        print_mp_figures(stdout, t[i].mp);
    }
    free(t);
    return 0;
}

/* The rows of a run (`show`) or of an object's runs (`trend`): counted and
 * timed ones in one table, simulated ones in another (their figures are
 * others); at most `top` of each when top > 0.  first_column(row) says
 * which row it is. */
static void print_object_tables(const mt_store_object_row *rows, size_t n, size_t top,
                                const char *first_title,
                                void (*first_column)(const mt_store_object_row *, char *, size_t))
{
    size_t nsim = 0, shown = 0;
    for (size_t i = 0; i < n; i++)
        nsim += rows[i].sim.present;
    char first[32];
    if (nsim < n || n == 0) {
        print_object_header(stdout, first_title);
        for (size_t i = 0; i < n && (!top || shown < top); i++)
            if (!rows[i].sim.present) {
                first_column(&rows[i], first, sizeof first);
                print_object(stdout, &rows[i], first);
                shown++;
            }
        fputs(figures_note, stdout);
    }
    if (!nsim)
        return;
    bool slots[MT_STORE_SIM_LEVELS];
    sim_slots(rows, n, slots);
    if (nsim < n)
        fputc('\n', stdout);
    print_sim_header(stdout, first_title, slots);
    shown = 0;
    for (size_t i = 0; i < n && (!top || shown < top); i++)
        if (rows[i].sim.present) {
            first_column(&rows[i], first, sizeof first);
            print_sim_object(stdout, &rows[i], first, slots);
            shown++;
        }
    fputs(sim_note, stdout);
    print_mp_objects(rows, n, top, first_title, first_column);
}

static void object_id_column(const mt_store_object_row *o, char *buf, size_t n)
{
    snprintf(buf, n, "#%" PRId64, o->object);
}

static void run_id_column(const mt_store_object_row *o, char *buf, size_t n)
{
    snprintf(buf, n, "%" PRId64, o->run);
}

/* A simulated run's data objects (none when its trace named none), the
 * most missed first, at most `top` (0: all); the line use at the first
 * data level of the run's `levels`. */
static int print_sim_data(mt_store *s, const mt_store_run_row *r, size_t top,
                          const mt_store_sim_level *levels, size_t nlevels)
{
    mt_store_sim_data *data;
    size_t n;
    mt_error err;
    if (mt_store_sim_data_of_run(s, r->id, &data, &n, &err) != 0) {
        mt_ui_error("%s", err.msg);
        return -1;
    }
    /* the first data level: I1 (slot 0) brings no data line */
    const mt_store_sim_level *first = NULL;
    for (size_t l = 0; l < nlevels && !first; l++)
        first = levels[l].slot > 0 ? &levels[l] : NULL;
    if (n) {
        printf("  data objects (misses per level, all causes; used: at the first data level)\n"
               "  %-40s %-6s %14s", "name", "kind", "references");
        for (int l = 0; l < MT_STORE_SIM_LEVELS; l++)
            if (data[0].misses[l][0] != MT_STORE_NO_COUNT)
                printf(" %12s", mt_store_sim_level_name((unsigned)l));
        printf(" %8s\n", "used");
    }
    for (size_t i = 0; i < n && (!top || i < top); i++) {
        const mt_store_sim_data *d = &data[i];
        char *name = mt_ui_escape(d->name), *kind = mt_ui_escape(d->kind), used[16] = "-";
        printf("  %-40s %-6s %14" PRIu64, name, kind, d->refs);
        free(name);
        free(kind);
        for (int l = 0; l < MT_STORE_SIM_LEVELS; l++)
            if (d->misses[l][0] != MT_STORE_NO_COUNT)
                printf(" %12" PRIu64, d->misses[l][MT_STORE_COLD] +
                                          d->misses[l][MT_STORE_CAPACITY] +
                                          d->misses[l][MT_STORE_CONFLICT]);
        if (first && first->slot < MT_STORE_SIM_LEVELS && d->lines[first->slot] &&
            d->lines[first->slot] != MT_STORE_NO_COUNT)
            snprintf(used, sizeof used, "%.1f%%", 100.0 * (double)d->bytes_used[first->slot] /
                                                      ((double)d->lines[first->slot] * first->line));
        printf(" %8s\n", used);
    }
    if (n)
        printf("\n");
    for (size_t i = 0; i < n && has_mp(data[0].mp) && (!top || i < top); i++) {
        if (!i)
            print_mp_header(stdout, NULL, 40);
        char *name = mt_ui_escape(data[i].name);
        printf("  %-40s", name);
        free(name);
        print_mp_figures(stdout, data[i].mp);
    }
    if (n && has_mp(data[0].mp))
        printf("%s\n", mp_note);
    mt_store_sim_data_free(data, n);
    return 0;
}

/* A simulated run's TLB levels and its totals there (nothing without). */
static int print_sim_tlb_levels(mt_store *s, const mt_store_run_row *r)
{
    mt_store_sim_tlb_level *levels;
    size_t n;
    mt_error err;
    if (mt_store_sim_tlb_levels(s, r->id, &levels, &n, &err) != 0) {
        mt_ui_error("%s", err.msg);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const mt_store_sim_tlb_level *l = &levels[i];
        if (!i)
            printf("  %-5s %10s %5s %7s %14s %12s\n", "TLB", "entries", "ways", "page",
                   "translations", "misses");
        printf("  %-5s %10" PRIu32 " %5" PRIu32 " %6" PRIu64 "K %14" PRIu64 " %12" PRIu64 "\n",
               l->name, l->entries, l->ways, l->page >> 10, l->refs, l->misses);
    }
    if (n)
        printf("  (the last data TLB level's misses are the page walks; metrics tlb1_misses, "
               "tlb2_misses, page_walks, itlb_misses, walk_cycles)\n\n");
    free(levels);
    return 0;
}

/* A simulated run's machine and its totals per level, then its TLB
 * levels, then its data objects (at most `top`). */
static int print_sim_levels(mt_store *s, const mt_store_run_row *r, size_t top)
{
    mt_store_sim_level *levels;
    size_t n;
    mt_error err;
    if (mt_store_sim_levels(s, r->id, &levels, &n, &err) != 0) {
        mt_ui_error("%s", err.msg);
        return -1;
    }
    char *machine = mt_ui_escape(r->sim_machine);
    printf("  simulated machine: %s\n  %-5s %10s %5s %5s %14s %12s %12s %12s %12s %12s %12s %8s\n",
           machine, "level", "size", "ways", "line", "references", "misses", "cold", "capacity",
           "conflict", "evictions", "writebacks", "used");
    free(machine);
    for (size_t i = 0; i < n; i++) {
        const mt_store_sim_level *l = &levels[i];
        char used[16];
        double bytes = (double)l->lines * l->line;
        snprintf(used, sizeof used, bytes > 0 ? "%.1f%%" : "-", 100.0 * (double)l->bytes_used / bytes);
        printf("  %-5s %10" PRIu64 " %5" PRIu32 " %5" PRIu32 " %14" PRIu64 " %12" PRIu64 " %12" PRIu64
               " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %8s\n",
               mt_store_sim_level_name(l->slot), l->size, l->ways, l->line, l->refs, l->misses,
               l->cause[MT_STORE_COLD], l->cause[MT_STORE_CAPACITY], l->cause[MT_STORE_CONFLICT],
               l->evictions, l->writebacks, used);
    }
    printf("  (used: bytes of the lines brought in that were referenced before they left)\n\n");
    int rc = print_sim_tlb_levels(s, r);
    if (rc == 0)
        rc = print_sim_data(s, r, top, levels, n);
    free(levels);
    return rc;
}

/* ---- list, show ------------------------------------------------------------- */

static mt_store_filter filter_of(const history_args *a)
{
    return (mt_store_filter){.program = a->program, .since = a->since, .until = a->until,
                             .limit = a->limit};
}

static int cmd_list(mt_store *s, const history_args *a)
{
    mt_store_filter f = filter_of(a);
    mt_store_run_row *rows;
    size_t n;
    mt_error err;
    if (mt_store_list(s, &f, &rows, &n, &err) != 0) {
        mt_ui_error("%s", err.msg);
        return 1;
    }
    printf("%6s  %-19s  %-6s %-24s %-8s %4s %9s %16s %7s  %s\n", "run", "finished", "tool",
           "program", "build", "exit", "user s", "memory ops", "objects", "command");
    for (size_t i = 0; i < n; i++) {
        const mt_store_run_row *r = &rows[i];
        char when[32], exit_s[16], user[32], memops[24];
        format_time(r->finished, when, sizeof when);
        /* a simulated run counted nothing: its figures are others */
        const char *memops_text = r->sim_machine ? "-" : decimal(r->memory_ops, memops);
        snprintf(exit_s, sizeof exit_s, r->ran ? "%d" : "-", r->exit_status);
        snprintf(user, sizeof user, isnan(r->user_s) ? "-" : "%.3f", r->user_s);
        char *program = mt_ui_escape(r->program), *command = mt_ui_escape(r->command_line);
        printf("%6" PRId64 "  %-19s  %-6s %-24s %-8.8s %4s %9s %16s %7u  %s\n", r->id, when,
               r->tool, program, r->sha256, exit_s, user, memops_text, r->nobjects, command);
        free(program);
        free(command);
    }
    if (n == 0)
        printf("(no run%s%s)\n", a->program ? " of " : "", a->program ? a->program : "");
    mt_store_run_rows_free(rows, n);
    return 0;
}

static void print_times(const char *what, double user, double sys, double wall)
{
    if (!isnan(user))
        printf("  %s: user %.3f s, system %.3f s, wall %.3f s (measured)\n", what, user, sys, wall);
}

/* Moves the code objects before the data objects, each in its order;
 * returns how many code objects there are. */
static size_t code_objects_first(mt_store_object_row *rows, size_t n)
{
    mt_store_object_row *tmp = mt_xcalloc(n + 1, sizeof *tmp);
    size_t ncode = 0, k = 0;
    for (size_t i = 0; i < n; i++)
        ncode += !rows[i].data_kind;
    for (size_t i = 0; i < n; i++)
        tmp[rows[i].data_kind ? ncode + k++ : i - k] = rows[i];
    memcpy(rows, tmp, n * sizeof *rows);
    free(tmp);
    return ncode;
}

/* One object's rows of an MPI job (rows[0 .. n), its ranks ascending). */
static void print_rank_object(const mt_store_rank_row *rows, size_t n)
{
    double *measured = mt_xcalloc(n + 1, sizeof *measured);
    for (size_t i = 0; i < n; i++)
        measured[i] = rows[i].measured_cycles;
    mt_imbalance im = mt_imbalance_of(measured, (uint32_t)n);
    free(measured);
    char *proc = mt_ui_escape(rows[0].procedure), *path = mt_ui_escape(rows[0].loop_path ? rows[0].loop_path : "");
    printf("  object %" PRId64 " %s%s%s: imbalance %.2fx, slowest rank %d\n", rows[0].object, proc,
           rows[0].loop_path ? " loop " : "", path, im.imbalance, rows[im.max_rank].rank);
    free(proc);
    free(path);
    printf("    %6s %10s %13s %13s %13s  %s\n", "rank", "entries", "measured", "predicted",
           "overhead", "host");
    for (size_t i = 0; i < n; i++) {
        char *host = mt_ui_escape(rows[i].host ? rows[i].host : "?");
        printf("    %6d %10" PRIu64 " %13.4g %13.4g %13.4g  %s\n", rows[i].rank, rows[i].entries,
               rows[i].measured_cycles, rows[i].predicted_cycles, rows[i].overhead_cycles, host);
        free(host);
    }
}

/* An MPI job's figures per rank and the imbalance of each object's measured
 * time (nothing for a run that was no job). */
static int print_ranks(mt_store *s, int64_t run, size_t top)
{
    mt_store_rank_row *rows;
    size_t n;
    mt_error err;
    if (mt_store_run_ranks(s, run, &rows, &n, &err) != 0) {
        mt_ui_error("%s", err.msg);
        return -1;
    }
    size_t objects = 0;
    for (size_t i = 0, end; i < n; i = end) {
        for (end = i + 1; end < n && rows[end].object == rows[i].object; end++)
            ;
        if (objects++ == 0)
            printf("\nMPI job: per object, each rank's figures (core cycles; imbalance: max / mean "
                   "of measured over ranks):\n");
        if (!top || objects <= top)
            print_rank_object(rows + i, end - i);
    }
    mt_store_rank_rows_free(rows, n);
    return 0;
}

static int cmd_show(mt_store *s, const history_args *a)
{
    if (a->npos != 1) {
        mt_ui_error("history show: give one RUN (an id, 'last' or 'last~K')");
        return 2;
    }
    mt_error err;
    int64_t id;
    mt_store_run_row *rp;
    mt_store_object_row *objs;
    size_t n;
    if (mt_store_resolve_run(s, a->pos[0], a->program, &id, &err) != 0 ||
        mt_store_get_run(s, id, &rp, &err) != 0) {
        mt_ui_error("%s", err.msg);
        return 1;
    }
    if (mt_store_run_objects(s, id, &objs, &n, &err) != 0) {
        mt_ui_error("%s", err.msg);
        mt_store_run_rows_free(rp, 1);
        return 1;
    }
    const mt_store_run_row r = *rp;
    char when[32], status[64];
    format_time(r.finished, when, sizeof when);
    snprintf(status, sizeof status, r.ran ? "exit status %d"
                                    : r.sim_machine ? "a trace file simulated, nothing ran"
                                                    : "profiles merged, nothing ran",
             r.exit_status);
    char *program = mt_ui_escape(r.program), *path = mt_ui_escape(r.path),
         *command = mt_ui_escape(r.command_line), *args = mt_ui_escape(r.arguments),
         *cwd = mt_ui_escape(r.cwd);
    printf("run %" PRId64 ": %s of %s, finished %s, %s\n", r.id, r.tool, program, when, status);
    printf("  program: %s\n  sha256: %s\n  build-id: %s\n", path, r.sha256,
           r.build_id ? r.build_id : "(none)");
    printf("  command: %s\n  arguments: %s\n  directory: %s\n  machine: %s\n  mtool: %s\n",
           command, args, cwd, r.machine, r.version);
    free(program);
    free(path);
    free(command);
    free(args);
    free(cwd);
    print_times("instrumented run", r.user_s, r.sys_s, r.wall_s);
    print_times("uninstrumented run", r.base_user_s, r.base_sys_s, r.base_wall_s);
    int rc = 0;
    if (r.sim_machine)
        rc = print_sim_levels(s, &r, a->top) == 0 ? 0 : 1;
    else
        printf("  executed (measured counts, procedures summed): %" PRIu64 " instructions, %" PRIu64
               " memory operations; %u procedures and loops\n\n", r.instructions, r.memory_ops,
               r.nobjects);
    if (rc == 0) /* the data objects were listed with the levels */
        print_object_tables(objs, code_objects_first(objs, n), a->top, "object",
                            object_id_column);
    if (rc == 0 && r.sim_machine && (print_whatif(s, r.id) != 0 || print_threads(s, r.id) != 0))
        rc = 1;
    if (rc == 0 && !r.sim_machine && print_ranks(s, r.id, a->top) != 0)
        rc = 1;
    mt_store_object_rows_free(objs, n);
    mt_store_run_rows_free(rp, 1);
    return rc;
}

/* ---- trend ------------------------------------------------------------------- */

static int cmd_trend(mt_store *s, const history_args *a)
{
    if (a->npos != 1) {
        mt_ui_error("history trend: give one OBJECT (PROC, PROC/LOOP-PATH, FILE:LINE or #ID)");
        return 2;
    }
    mt_error err;
    int64_t object;
    mt_store_object_row *rows;
    size_t n;
    if (mt_store_resolve_object(s, a->pos[0], a->program, &object, &err) != 0 ||
        mt_store_trend(s, object, a->top, &rows, &n, &err) != 0) {
        mt_ui_error("%s", err.msg);
        return 1;
    }
    char *label = n ? object_label(&rows[n - 1]) : mt_ui_escape(a->pos[0]);
    const mt_store_object_row *last = n ? &rows[n - 1] : NULL;
    char *kind = last && last->data_kind ? escaped_free(mt_xasprintf("data object, %s",
                                                                     last->data_kind))
                                         : mt_xstrdup(last && last->is_region ? "region"
                                                      : last && last->is_loop ? "loop"
                                                                              : "procedure");
    printf("trend of %s (%s, object #%" PRId64 "): %zu run%s%s\n", label, kind,
           object, n, n == 1 ? "" : "s",
           n && !rows[n - 1].named ? "; identified by address only (no symbol)" : "");
    print_object_tables(rows, n, 0, "run", run_id_column);
    free(label);
    free(kind);
    mt_store_object_rows_free(rows, n);
    return 0;
}

/* ---- diff and regressions ------------------------------------------------------ */

static const char *how_text(const mt_store_diff *d, size_t j, char *buf, size_t n)
{
    const mt_store_object_row *before = &d->a[d->b_to_a[j]];
    switch (d->how[j]) {
    case MT_MATCH_MOVED: snprintf(buf, n, "lines moved (was line %u)", before->line); break;
    case MT_MATCH_RENAMED: {
        char *was = mt_ui_escape(before->procedure);
        snprintf(buf, n, "renamed (was %s)", was);
        free(was);
        break;
    }
    case MT_MATCH_ADDRESS: snprintf(buf, n, "identified by address only"); break;
    default: buf[0] = '\0';
    }
    return buf;
}

static void print_compared(const mt_store_diff *d, const mt_store_compared *c)
{
    const mt_store_object_row *o = &d->b[c->row];
    char *label = object_label(o), *place = object_place(o), how[256], change[32];
    if (isinf(c->change))
        snprintf(change, sizeof change, "from 0");
    else
        snprintf(change, sizeof change, "%+.1f%%", c->change);
    const char *f = c->before == floor(c->before) && c->after == floor(c->after) ? "%.0f" : "%.1f";
    char before[32], after[32];
    snprintf(before, sizeof before, f, c->before);
    snprintf(after, sizeof after, f, c->after);
    printf("  #%-6" PRId64 " %-32s %-24s %16s -> %-16s %9s  %s\n", o->object, label, place,
           before, after, change, how_text(d, c->row, how, sizeof how));
    free(label);
    free(place);
}

static int load_diff(mt_store *s, const char *spec_a, const char *spec_b, const char *program,
                     int64_t *ra, int64_t *rb, mt_store_diff *d)
{
    mt_error err;
    if ((spec_a && mt_store_resolve_run(s, spec_a, program, ra, &err) != 0) ||
        mt_store_resolve_run(s, spec_b, program, rb, &err) != 0 ||
        (!spec_a && mt_store_previous_run(s, *rb, ra, &err) != 0)) {
        mt_ui_error("%s", err.msg);
        return -1;
    }
    if (!*ra) /* no earlier run of this program: nothing to compare */
        return 0;
    if (mt_store_diff_runs(s, *ra, *rb, d, &err) != 0) {
        mt_ui_error("%s", err.msg);
        mt_store_diff_free(d);
        return -1;
    }
    return 0;
}

static void print_unpaired(const char *title, const mt_store_object_row *rows, size_t n,
                           const bool *skip, const uint32_t *paired_b)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += skip ? !skip[i] : paired_b[i] == MT_NONE;
    printf("%s (%zu):\n", title, count);
    for (size_t i = 0; i < n; i++)
        if (skip ? !skip[i] : paired_b[i] == MT_NONE) {
            char *label = object_label(&rows[i]), *place = object_place(&rows[i]);
            bool sim = rows[i].sim.present;
            printf("  #%-6" PRId64 " %-32s %-24s %16" PRIu64 " %s\n", rows[i].object, label, place,
                   sim ? rows[i].sim.refs : rows[i].memory_ops,
                   sim ? "references (simulated)" : "memory ops");
            free(label);
            free(place);
        }
}

static int cmd_diff(mt_store *s, const history_args *a)
{
    if (a->npos != 2) {
        mt_ui_error("history diff: give two runs, RUN1 RUN2");
        return 2;
    }
    int64_t ra = 0, rb = 0;
    mt_store_diff d;
    if (load_diff(s, a->pos[0], a->pos[1], a->program, &ra, &rb, &d) != 0)
        return 1;
    mt_store_metric m = mt_store_choose_metric(&d, a->metric);
    size_t n;
    mt_store_compared *c = mt_store_compare(&d, m, &n);
    char title[64];
    metric_title(m, title, sizeof title);
    printf("diff run %" PRId64 " -> run %" PRId64 " by %s, threshold %g%%\n", ra, rb, title,
           a->threshold);
    const char *titles[] = {"regressed", "improved"};
    size_t unchanged = n;
    for (int k = 0; k < 2; k++) {
        size_t count = 0;
        for (size_t i = 0; i < n; i++)
            count += k == 0 ? c[i].worse > a->threshold : c[i].worse < -a->threshold;
        unchanged -= count;
        printf("%s (%zu):\n", titles[k], count);
        for (size_t i = 0; i < n; i++) {
            size_t at = k == 0 ? i : n - 1 - i; /* improvements: largest drop first */
            if (k == 0 ? c[at].worse > a->threshold : c[at].worse < -a->threshold)
                print_compared(&d, &c[at]);
        }
    }
    printf("unchanged within %g%%: %zu\n", a->threshold, unchanged);
    print_unpaired("new (executed in the second run only)", d.b, d.nb, NULL, d.b_to_a);
    print_unpaired("gone (executed in the first run only)", d.a, d.na, d.a_paired, NULL);
    free(c);
    mt_store_diff_free(&d);
    return 0;
}

static int cmd_regressions(mt_store *s, const history_args *a)
{
    const char *run = a->npos >= 1 ? a->pos[0] : "last", *base = a->npos >= 2 ? a->pos[1] : NULL;
    int64_t ra = 0, rb = 0;
    mt_store_diff d;
    if (load_diff(s, base, run, a->program, &ra, &rb, &d) != 0)
        return 2;
    if (!ra) {
        printf("regressions: run %" PRId64 " is the first of its program; nothing to compare\n", rb);
        return 0;
    }
    mt_store_metric m = mt_store_choose_metric(&d, a->metric);
    size_t n, regressed = 0, considered = 0;
    mt_store_compared *c = mt_store_compare(&d, m, &n);
    char title[64];
    metric_title(m, title, sizeof title);
    printf("regressions: run %" PRId64 " against run %" PRId64 " by %s; threshold %g%%, objects "
           "holding at least %g%% of either run's total\n", rb, ra, title, a->threshold,
           a->min_share);
    for (size_t i = 0; i < n; i++) {
        if (c[i].share < a->min_share)
            continue;
        considered++;
        if (mt_store_regressed(&c[i], a->threshold, a->min_share)) {
            print_compared(&d, &c[i]);
            regressed++;
        }
    }
    if (regressed)
        printf("%zu of %zu objects regressed by more than %g%%\n", regressed, considered, a->threshold);
    else
        printf("no object regressed by more than %g%% (%zu compared)\n", a->threshold, considered);
    free(c);
    mt_store_diff_free(&d);
    return regressed ? 1 : 0;
}

/* ---- sql, export, gc -------------------------------------------------------------- */

static int cmd_sql(mt_store *s, const history_args *a)
{
    if (a->npos != 1) {
        mt_ui_error("history sql: give one quoted SQL text, e.g. \"SELECT count(*) FROM runs\"");
        return 2;
    }
    mt_error err;
    if (mt_store_sql(s, a->pos[0], stdout, &err) != 0) {
        mt_ui_error("%s", err.msg);
        return 1;
    }
    return 0;
}

static int cmd_export(mt_store *s, const history_args *a)
{
    if (a->csv == a->json || a->npos) {
        mt_ui_error("history export: give exactly one of --csv or --json");
        return 2;
    }
    mt_store_filter f = filter_of(a);
    mt_error err;
    /* To a file: temp + rename.  To stdout: through an unnamed temporary
     * file, copied out only when complete (no partial output either way). */
    mt_outfile out = {.fp = a->out ? NULL : tmpfile()};
    if (a->out ? mt_outfile_open(&out, a->out, &err) != 0 : !out.fp) {
        mt_ui_error("%s", a->out ? err.msg : "history export: cannot create a temporary file");
        return 1;
    }
    if (mt_store_export(s, &f, a->json, out.fp, &err) != 0) {
        mt_ui_error("%s", err.msg);
        if (a->out)
            mt_outfile_abort(&out);
        else
            fclose(out.fp);
        return 1;
    }
    if (a->out)
        return mt_outfile_commit(&out, &err) == 0 ? 0 : (mt_ui_error("%s", err.msg), 1);
    rewind(out.fp);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, out.fp)) > 0)
        fwrite(buf, 1, n, stdout);
    fclose(out.fp);
    return 0;
}

static int cmd_gc(mt_store *s, const history_args *a)
{
    size_t removed;
    mt_error err;
    if (mt_store_gc(s, a->before, a->keep, &removed, &err) != 0) {
        mt_ui_error("%s", err.msg);
        return 1;
    }
    printf("gc: removed %zu run%s; unreferenced builds and objects removed, file compacted\n",
           removed, removed == 1 ? "" : "s");
    return 0;
}

int mt_cmd_history(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(mt_store *, const history_args *);
        bool writes;
    } subs[] = {{"list", cmd_list, false},   {"show", cmd_show, false},
                {"trend", cmd_trend, false}, {"diff", cmd_diff, false},
                {"regressions", cmd_regressions, false}, {"sql", cmd_sql, false},
                {"export", cmd_export, false}, {"gc", cmd_gc, true}};
    /* "mtool history --db FILE CMD ...": the database may come first. */
    const char *db = NULL;
    if (argc >= 3 && strcmp(argv[1], "--db") == 0) {
        db = argv[2];
        argv[2] = argv[0];
        argc -= 2;
        argv += 2;
    }
    if (argc < 2) {
        mt_ui_error("history: give a command (list, show, trend, diff, regressions, sql, export, gc)");
        return 2;
    }
    for (size_t i = 0; i < MT_ARRAY_LEN(subs); i++) {
        if (strcmp(argv[1], subs[i].name) != 0)
            continue;
        history_args a;
        int rc = parse_args(argc, argv, &a);
        if (rc)
            return rc;
        if (db && !a.db)
            a.db = db;
        mt_store *s = open_history(&a, subs[i].writes ? MT_STORE_WRITE : MT_STORE_READ);
        if (!s)
            return subs[i].run == cmd_regressions ? 2 : 1;
        rc = subs[i].run(s, &a);
        mt_store_close(s);
        return rc;
    }
    mt_ui_error("history: unknown command '%s'; see 'mtool help history'", argv[1]);
    return 2;
}
