/* store/query.c — reading the history back: runs, a run's objects, one
 * object's trend, run and object names, garbage collection, read-only SQL. */
#define _GNU_SOURCE
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define RUN_COLUMNS                                                                             \
    "SELECT r.id, r.finished, r.tool, p.name, p.path, p.sha256, p.build_id, r.command_line, "    \
    "r.arguments, r.cwd, r.machine, r.mtool_version, r.ran, r.exit_status, r.user_s, r.sys_s, " \
    "r.wall_s, r.base_user_s, r.base_sys_s, r.base_wall_s, r.memory_ops, r.instructions, "      \
    "r.nobjects, (SELECT machine FROM sim_runs WHERE run_id = r.id), r.rundir, r.rundir_stamp, " \
    "r.predicted_cycles, r.measured_cycles, r.objects_overhead_cycles, r.memory_ops_in_objects " \
    "FROM runs r JOIN programs p ON p.id = r.program_id "

/* An object's row in a run: counted and timed runs' from figures, then
 * (UNION ALL) simulated runs' from sim_figures, the same columns: where,
 * counts and cycles, then site (build order: a simulated run's data
 * objects after its code objects), weight (the order of `show`: memory
 * operations, a simulated run's references), the run's last level,
 * simulated references and misses by level slot and cause, line use by
 * slot (lines, bytes used, the level's line size), the data object's kind
 * (NULL for a code object).  A data object has its name where a code
 * object has its procedure. */
#define OBJECT_PLACE                                                                        \
    "SELECT f.run_id, f.object_id, s.procedure, s.loop_path, s.file, s.line, s.proc_line, " \
    "s.depth, s.named, s.address, s.shape, "
#define NO_USE_COLUMNS                                                                      \
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL"
/* The processors' figures (mt_store_mp_figure's order), NULL in counted runs. */
#define MP_COLUMNS                                                                          \
    "f.true_sharing, f.false_sharing, f.invalidations, f.interventions, f.upgrades, "      \
    "f.local_refs, f.remote_refs, f.remote_dirty_refs, f.three_hop_refs"
#define NO_MP_COLUMNS "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL"
/* Then the TLB's (SIM_TLB_COLUMNS), NULL in counted runs. */
#define NO_TLB_COLUMNS "NULL, NULL, NULL, NULL, NULL"
#define COUNTED_OBJECTS                                                                     \
    OBJECT_PLACE "f.entries, f.instructions, f.memory_ops, f.measured_cycles, "             \
    "f.predicted_cycles, f.overhead_cycles, f.iterations, f.site_id AS site, "                   \
    "f.memory_ops AS weight, NULL, NULL, " SIM_MISS_NULLS ", " NO_USE_COLUMNS ", NULL, "    \
    NO_MP_COLUMNS ", " NO_TLB_COLUMNS " "                                                   \
    "FROM figures f JOIN sites s ON s.id = f.site_id "
/* Data sites' ids follow code sites' in build order: 2^40 is past any site id. */
#define SLOT_USE(l)                                                                         \
    "f." l "_lines, f." l "_bytes_used, (SELECT v.line FROM sim_levels v WHERE v.run_id = "  \
    "f.run_id AND v.level = upper('" l "'))"
#define SIMULATED_OBJECTS                                                                   \
    "SELECT f.run_id, f.object_id, coalesce(s.procedure, d.name), s.loop_path, s.file, "    \
    "coalesce(s.line, 0), coalesce(s.proc_line, 0), coalesce(s.depth, 0), "                 \
    "coalesce(s.named, 1), coalesce(s.address, d.address, 0), coalesce(s.shape, 0), "       \
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL, "                                            \
    "coalesce(f.site_id, 1099511627776 + f.data_site_id), f.refs, r.last_level, f.refs, "  \
    SIM_MISS_COLUMNS("f.") ", " SLOT_USE("i1") ", " SLOT_USE("d1") ", " SLOT_USE("l2") ", " \
    SLOT_USE("l3") ", " SLOT_USE("l4") ", d.kind, " MP_COLUMNS ", " SIM_TLB_COLUMNS("f.")   \
    " FROM sim_figures f "                                                                  \
    "JOIN sim_runs r ON r.run_id = f.run_id LEFT JOIN sites s ON s.id = f.site_id "         \
    "LEFT JOIN data_sites d ON d.id = f.data_site_id "
/* Both, each restricted by `where` (the same parameters). */
#define OBJECTS_WHERE(where) COUNTED_OBJECTS where " UNION ALL " SIMULATED_OBJECTS where
/* Where read_sim_figures' line use and the data kind start. */
enum { SIM_COLUMN = 20, USE_COLUMN = SIM_COLUMN + 2 + MT_STORE_SIM_LEVELS * MT_STORE_NCAUSES,
       DATA_KIND_COLUMN = USE_COLUMN + 3 * MT_STORE_SIM_LEVELS,
       MP_COLUMN = DATA_KIND_COLUMN + 1, TLB_COLUMN = MP_COLUMN + MT_STORE_NMP };

static void read_run(sqlite3_stmt *st, mt_store_run_row *r)
{
    r->id = sqlite3_column_int64(st, 0);
    r->finished = sqlite3_column_double(st, 1);
    char **texts[] = {&r->tool, &r->program, &r->path, &r->sha256, &r->build_id, &r->command_line,
                      &r->arguments, &r->cwd, &r->machine, &r->version};
    for (int k = 0; k < 10; k++)
        *texts[k] = mt_store_col_text(st, 2 + k);
    r->ran = sqlite3_column_int(st, 12);
    r->exit_status = sqlite3_column_int(st, 13);
    double *times[] = {&r->user_s, &r->sys_s, &r->wall_s, &r->base_user_s, &r->base_sys_s,
                       &r->base_wall_s};
    for (int k = 0; k < 6; k++)
        *times[k] = mt_store_col_real(st, 14 + k);
    r->memory_ops = (uint64_t)sqlite3_column_int64(st, 20);
    r->instructions = (uint64_t)sqlite3_column_int64(st, 21);
    r->nobjects = (uint32_t)sqlite3_column_int64(st, 22);
    r->sim_machine = mt_store_col_text(st, 23);
    r->rundir = mt_store_col_text(st, 24);
    r->rundir_stamp = mt_store_col_text(st, 25);
    r->timed = sqlite3_column_type(st, 26) != SQLITE_NULL;
    r->program_time = (mt_store_program_time){mt_store_col_real(st, 26), mt_store_col_real(st, 27),
                                              mt_store_col_real(st, 28),
                                              (uint64_t)sqlite3_column_int64(st, 29)};
}

/* The simulated columns from `col` on: last level, references, misses. */
static void read_sim_figures(sqlite3_stmt *st, int col, mt_store_sim_row *sim)
{
    sim->present = sqlite3_column_type(st, col + 1) != SQLITE_NULL;
    if (!sim->present)
        return;
    const char *last = (const char *)sqlite3_column_text(st, col);
    int slot = last ? mt_store_sim_level_slot(last) : -1;
    sim->last = slot >= 0 && slot < MT_STORE_SIM_LEVELS ? (unsigned)slot : MT_STORE_SIM_LL;
    sim->refs = (uint64_t)sqlite3_column_int64(st, col + 1);
    for (int l = 0; l < MT_STORE_SIM_LEVELS; l++) {
        for (int c = 0; c < MT_STORE_NCAUSES; c++)
            sim->misses[l][c] = mt_store_col_count(st, col + 2 + l * MT_STORE_NCAUSES + c);
        sim->lines[l] = mt_store_col_count(st, USE_COLUMN + 3 * l);
        sim->bytes_used[l] = mt_store_col_count(st, USE_COLUMN + 3 * l + 1);
        sim->line[l] = (uint32_t)sqlite3_column_int64(st, USE_COLUMN + 3 * l + 2);
    }
    for (int k = 0; k < MT_STORE_NMP; k++)
        sim->mp[k] = mt_store_col_count(st, MP_COLUMN + k);
    for (int k = 0; k < MT_STORE_NTLB; k++)
        sim->tlb.misses[k] = mt_store_col_count(st, TLB_COLUMN + k);
    sim->tlb.walk_cycles = mt_store_col_real(st, TLB_COLUMN + MT_STORE_NTLB);
}

static void read_object(sqlite3_stmt *st, mt_store_object_row *o)
{
    o->run = sqlite3_column_int64(st, 0);
    o->object = sqlite3_column_int64(st, 1);
    o->procedure = mt_store_col_text(st, 2);
    o->loop_path = mt_store_col_text(st, 3);
    o->is_region = mt_store_path_is_region(o->loop_path);
    o->is_loop = o->loop_path != NULL && !o->is_region;
    o->file = mt_store_col_text(st, 4);
    o->line = (uint32_t)sqlite3_column_int64(st, 5);
    o->proc_line = (uint32_t)sqlite3_column_int64(st, 6);
    o->depth = (uint32_t)sqlite3_column_int64(st, 7);
    o->named = sqlite3_column_int(st, 8);
    o->address = (uint64_t)sqlite3_column_int64(st, 9);
    o->shape = (uint64_t)sqlite3_column_int64(st, 10);
    o->entries = mt_store_col_count(st, 11);
    o->instructions = mt_store_col_count(st, 12); /* NULL in a simulated run's rows */
    o->memory_ops = mt_store_col_count(st, 13);
    o->measured_cycles = mt_store_col_real(st, 14);
    o->predicted_cycles = mt_store_col_real(st, 15);
    o->overhead_cycles = mt_store_col_real(st, 16);
    o->iterations = mt_store_col_count(st, 17);
    read_sim_figures(st, SIM_COLUMN, &o->sim);
    o->data_kind = mt_store_col_text(st, DATA_KIND_COLUMN);
}

/* Steps `st` to its end, or until *n reaches `max` (0: no bound), appending
 * one row per result with `read` to the growing array *rows of *cap rows. */
static int append_rows(sqlite3_stmt *st, size_t size, void (*read)(sqlite3_stmt *, void *),
                       char **rows, size_t *n, size_t *cap, size_t max)
{
    int rc = SQLITE_DONE;
    while ((!max || *n < max) && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n >= *cap)
            *rows = mt_xgrow(*rows, cap, *n + 1, size);
        memset(*rows + *n * size, 0, size);
        read(st, *rows + *n * size);
        (*n)++;
    }
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

/* Steps `st` to the end, appending one row per result with `read`. */
static int collect(mt_store *s, sqlite3_stmt *st, size_t size, void (*read)(sqlite3_stmt *, void *),
                   void **rows, size_t *n, mt_error *err)
{
    size_t cap = 0;
    char *out = NULL;
    *n = 0;
    int rc = append_rows(st, size, read, &out, n, &cap, 0);
    sqlite3_finalize(st);
    *rows = out;
    if (rc != 0)
        return mt_store_fail(s, err, "reading the history");
    return 0;
}

static void read_run_any(sqlite3_stmt *st, void *row) { read_run(st, row); }
static void read_object_any(sqlite3_stmt *st, void *row) { read_object(st, row); }

static void reverse(void *rows, size_t n, size_t size)
{
    char *p = rows, *tmp = mt_xmalloc(size);
    for (size_t i = 0; i < n / 2; i++) {
        memcpy(tmp, p + i * size, size);
        memcpy(p + i * size, p + (n - 1 - i) * size, size);
        memcpy(p + (n - 1 - i) * size, tmp, size);
    }
    free(tmp);
}

int mt_store_list(mt_store *s, const mt_store_filter *f, mt_store_run_row **rows, size_t *n,
                  mt_error *err)
{
    sqlite3_stmt *st;
    if (mt_store_prepare(s, RUN_COLUMNS "WHERE " PROGRAM_IS(1) " AND (?2 = 0 OR r.finished >= ?2) "
                            "AND (?3 = 0 OR r.finished < ?3) ORDER BY r.id DESC LIMIT ?4", &st, err))
        return -1;
    if (f->program)
        sqlite3_bind_text(st, 1, f->program, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 2, f->since);
    sqlite3_bind_double(st, 3, f->until);
    sqlite3_bind_int64(st, 4, f->limit ? (int64_t)f->limit : -1);
    if (collect(s, st, sizeof **rows, read_run_any, (void **)rows, n, err) != 0)
        return -1;
    reverse(*rows, *n, sizeof **rows); /* oldest first */
    return 0;
}

static bool all_digits(const char *t)
{
    if (!*t)
        return false;
    for (; *t; t++)
        if (!isdigit((unsigned char)*t))
            return false;
    return true;
}

bool mt_store_is_run_spec(const char *spec)
{
    return all_digits(spec) || strcmp(spec, "last") == 0 ||
           (strncmp(spec, "last~", 5) == 0 && all_digits(spec + 5));
}

int mt_store_resolve_run(mt_store *s, const char *spec, const char *program, int64_t *id,
                         mt_error *err)
{
    sqlite3_stmt *st;
    long long back = 0;
    if (!mt_store_is_run_spec(spec)) {
        mt_error_set(err, "'%s' is not a run: give an id, 'last' or 'last~K'", spec);
        return -1;
    }
    if (all_digits(spec)) {
        if (mt_store_prepare(s, "SELECT id FROM runs WHERE id = ?", &st, err) != 0)
            return -1;
        sqlite3_bind_int64(st, 1, strtoll(spec, NULL, 10));
    } else {
        back = spec[4] == '~' ? strtoll(spec + 5, NULL, 10) : 0;
        if (mt_store_prepare(s, "SELECT r.id FROM runs r JOIN programs p ON p.id = r.program_id "
                                "WHERE " PROGRAM_IS(1) " ORDER BY r.id DESC LIMIT 1 OFFSET ?2",
                             &st, err) != 0)
            return -1;
        if (program)
            sqlite3_bind_text(st, 1, program, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, back);
    }
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW)
        return 0;
    if (rc != SQLITE_DONE)
        return mt_store_fail(s, err, "looking up a run");
    mt_error_set(err, "%s: no run '%s'%s%s", s->path, spec, program ? " of " : "",
                 program ? program : "");
    return -1;
}

int mt_store_run_of_stamp(mt_store *s, const char *stamp, int64_t *run, mt_error *err)
{
    sqlite3_stmt *st;
    if (mt_store_prepare(s, "SELECT max(id) FROM runs WHERE rundir_stamp = ?", &st, err) != 0)
        return -1;
    sqlite3_bind_text(st, 1, stamp, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    *run = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0; /* NULL reads as 0 */
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : mt_store_fail(s, err, "looking up a run");
}

int mt_store_get_run(mt_store *s, int64_t id, mt_store_run_row **row, mt_error *err)
{
    sqlite3_stmt *st;
    if (mt_store_prepare(s, RUN_COLUMNS "WHERE r.id = ?", &st, err) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, id);
    mt_store_run_row *rows;
    size_t n;
    if (collect(s, st, sizeof *rows, read_run_any, (void **)&rows, &n, err) != 0)
        return -1;
    if (n == 0) {
        free(rows);
        mt_error_set(err, "%s: no run %lld", s->path, (long long)id);
        return -1;
    }
    *row = rows;
    return 0;
}

int mt_store_objects_of_run(mt_store *s, int64_t run, bool build_order,
                            mt_store_object_row **rows, size_t *n, mt_error *err)
{
    sqlite3_stmt *st;
    if (mt_store_prepare(s, build_order ? OBJECTS_WHERE("WHERE f.run_id = ?1") " ORDER BY site"
                                        : OBJECTS_WHERE("WHERE f.run_id = ?1")
                                              " ORDER BY weight DESC, site", &st, err) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, run);
    return collect(s, st, sizeof **rows, read_object_any, (void **)rows, n, err);
}

int mt_store_run_objects(mt_store *s, int64_t run, mt_store_object_row **rows, size_t *n,
                         mt_error *err)
{
    return mt_store_objects_of_run(s, run, false, rows, n, err);
}

/* The first and last run blocks (-1, -2 when there is no run). */
static int run_block_range(mt_store *s, int64_t *first, int64_t *last, mt_error *err)
{
    sqlite3_stmt *st;
    /* Two subqueries: each is one b-tree edge lookup, min() and max() together scan. */
    if (mt_store_prepare(s, "SELECT (SELECT min(id) FROM runs), (SELECT max(id) FROM runs)", &st,
                         err) != 0)
        return -1;
    int rc = sqlite3_step(st);
    bool any = rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL;
    *first = any ? mt_store_run_block(sqlite3_column_int64(st, 0)) : -1;
    *last = any ? mt_store_run_block(sqlite3_column_int64(st, 1)) : -2;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : mt_store_fail(s, err, "looking up the runs");
}

int mt_store_trend(mt_store *s, int64_t object, size_t limit, mt_store_object_row **rows,
                   size_t *n, mt_error *err)
{
    int64_t first, last;
    sqlite3_stmt *st;
    *rows = NULL;
    *n = 0;
    /* One primary-key range per block of runs, newest block first and newest
     * run first inside it (the key's order read backwards: no sort), so
     * `--last N` stops after the blocks it needs. */
    if (run_block_range(s, &first, &last, err) != 0 ||
        mt_store_prepare(s, OBJECTS_WHERE("WHERE f.run_block = ?1 AND f.object_id = ?2")
                                " ORDER BY 1 DESC, site DESC", &st, err) != 0)
        return -1;
    char *out = NULL;
    size_t cap = 0;
    int rc = 0;
    sqlite3_bind_int64(st, 2, object);
    for (int64_t block = last; rc == 0 && block >= first && (!limit || *n < limit); block--) {
        sqlite3_bind_int64(st, 1, block);
        rc = append_rows(st, sizeof **rows, read_object_any, &out, n, &cap, limit);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    *rows = (mt_store_object_row *)out;
    if (rc != 0) {
        mt_store_object_rows_free(*rows, *n);
        *rows = NULL;
        *n = 0;
        return mt_store_fail(s, err, "reading the history");
    }
    reverse(*rows, *n, sizeof **rows);
    return 0;
}

int mt_store_previous_run(mt_store *s, int64_t run, int64_t *prev, mt_error *err)
{
    sqlite3_stmt *st;
    if (mt_store_prepare(s, "SELECT r2.id FROM runs r2 JOIN programs p2 ON p2.id = r2.program_id "
                            "WHERE r2.id < ?1 AND p2.name = (SELECT p.name FROM runs r JOIN "
                            "programs p ON p.id = r.program_id WHERE r.id = ?1) "
                            "ORDER BY r2.id DESC LIMIT 1", &st, err) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, run);
    int rc = sqlite3_step(st);
    *prev = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : mt_store_fail(s, err, "looking up a run");
}

/* "FILE:LINE" when the text after the last ':' is a line number (and the
 * colon is not part of a C++ "::"). */
static bool split_file_line(const char *spec, char **file, long *line)
{
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec || colon[-1] == ':' || !all_digits(colon + 1))
        return false;
    *file = strndup(spec, (size_t)(colon - spec));
    *line = strtol(colon + 1, NULL, 10);
    return true;
}

/* Steps `st` (rows: object, program name, build, where) to the object
 * `spec` names: the latest build holding such a site decides, and it must
 * name one object of one program (`how` says how to name one of several).
 * 1 with *id, 0 when there is none, -1 with err. */
static int single_object(mt_store *s, sqlite3_stmt *st, const char *spec, const char *how,
                         int64_t *id, mt_error *err)
{
    int64_t latest = 0;
    char *name = NULL, *where_first = NULL;
    int rc = 0, step;
    *id = 0;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t object = sqlite3_column_int64(st, 0), build = sqlite3_column_int64(st, 2);
        const char *pname = (const char *)sqlite3_column_text(st, 1);
        if (!*id) {
            *id = object;
            latest = build;
            name = mt_xstrdup(pname);
            where_first = mt_store_col_text(st, 3);
        } else if (strcmp(pname, name) != 0) {
            mt_error_set(err, "'%s' is in several programs (%s, %s): add --program NAME", spec,
                         name, pname);
            rc = -1;
        } else if (build == latest && object != *id) {
            mt_error_set(err, "'%s' names several objects of %s (%s and %s): %s", spec, name,
                         where_first, (const char *)sqlite3_column_text(st, 3), how);
            rc = -1;
        }
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = mt_store_fail(s, err, "looking up an object");
    sqlite3_finalize(st);
    free(name);
    free(where_first);
    return rc < 0 ? -1 : *id != 0;
}

/* The data object named `spec`: its whole name, or a heap site's name
 * without its " <- " call path, or "#ID". */
static int resolve_data_object(mt_store *s, const char *spec, const char *program, int64_t *id,
                               mt_error *err)
{
    sqlite3_stmt *st;
    if (mt_store_prepare(s, "SELECT d.object_id, o.program_name, d.program_id, d.name "
                            "FROM data_sites d JOIN objects o ON o.id = d.object_id "
                            "JOIN programs p ON p.id = d.program_id WHERE " PROGRAM_IS(1)
                            " AND (d.name = ?2 OR substr(d.name, 1, length(?2) + 4) = ?2 || ' <- '"
                            " OR '#' || d.object_id = ?2) "
                            "ORDER BY d.program_id DESC, d.name <> ?2", &st, err) != 0)
        return -1;
    if (program)
        sqlite3_bind_text(st, 1, program, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, spec, -1, SQLITE_STATIC);
    return single_object(s, st, spec, "give the whole name (with its call path) or #ID", id,
                         err);
}

int mt_store_resolve_object(mt_store *s, const char *spec, const char *program, int64_t *id,
                            mt_error *err)
{
    int found = resolve_data_object(s, spec, program, id, err);
    if (found != 0)
        return found < 0 ? -1 : 0;
    const char *base = "SELECT s.object_id, o.program_name, s.program_id, "
                       "'at ' || coalesce(s.file, '?') || ':' || s.line FROM sites s "
                       "JOIN objects o ON o.id = s.object_id JOIN programs p ON p.id = s.program_id "
                       "WHERE " PROGRAM_IS(1) " AND ";
    char *file = NULL, *where;
    long line = 0;
    const char *slash = strchr(spec, '/');
    if (spec[0] == '#' && all_digits(spec + 1))
        where = mt_xasprintf("%ss.object_id = %lld ORDER BY s.program_id DESC", base,
                             strtoll(spec + 1, NULL, 10));
    else if (split_file_line(spec, &file, &line))
        where = mt_xasprintf("%s(s.file = ?2 OR s.file LIKE '%%/' || ?2) AND s.line = ?3 "
                             "ORDER BY s.program_id DESC, s.depth DESC, s.loop_path IS NULL", base);
    else if (slash)
        where = mt_xasprintf("%ss.procedure = ?2 AND s.loop_path = ?3 ORDER BY s.program_id DESC",
                             base);
    else
        where = mt_xasprintf("%ss.procedure = ?2 AND s.loop_path IS NULL ORDER BY s.program_id DESC",
                             base);
    sqlite3_stmt *st;
    int rc = mt_store_prepare(s, where, &st, err);
    free(where);
    if (rc != 0) {
        free(file);
        return -1;
    }
    char *proc = slash ? strndup(spec, (size_t)(slash - spec)) : NULL;
    if (program)
        sqlite3_bind_text(st, 1, program, -1, SQLITE_STATIC);
    if (file) {
        sqlite3_bind_text(st, 2, file, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, line);
    } else if (slash) {
        sqlite3_bind_text(st, 2, proc, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, slash + 1, -1, SQLITE_STATIC);
    } else if (spec[0] != '#')
        sqlite3_bind_text(st, 2, spec, -1, SQLITE_STATIC);
    found = single_object(s, st, spec, "name it by FILE:LINE or #ID", id, err);
    free(file);
    free(proc);
    if (found == 0)
        mt_error_set(err, "%s: no procedure, loop or data object '%s'%s%s (OBJECT is PROC, "
                          "PROC/LOOP-PATH, FILE:LINE, a data object's name or #ID)", s->path,
                     spec, program ? " in " : "", program ? program : "");
    return found > 0 ? 0 : -1;
}

int mt_store_load_sites(mt_store *s, int64_t program, mt_store_site **sites, int64_t **ids,
                        int64_t **objects, size_t *n, mt_error *err)
{
    sqlite3_stmt *st;
    if (mt_store_prepare(s, "SELECT id, object_id, procedure, named, loop_path, depth, file, line, "
                            "proc_line, address, shape FROM sites WHERE program_id = ? ORDER BY id",
                         &st, err) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, program);
    size_t cap = 0, icap = 0, ocap = 0;
    *sites = NULL;
    *ids = *objects = NULL;
    *n = 0;
    size_t ni = 0, no = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        mt_store_site x = {.procedure = mt_store_col_text(st, 2), .named = sqlite3_column_int(st, 3),
                           .loop_path = mt_store_col_text(st, 4),
                           .depth = (uint32_t)sqlite3_column_int64(st, 5),
                           .file = mt_store_col_text(st, 6),
                           .line = (uint32_t)sqlite3_column_int64(st, 7),
                           .proc_line = (uint32_t)sqlite3_column_int64(st, 8),
                           .address = (uint64_t)sqlite3_column_int64(st, 9),
                           .shape = (uint64_t)sqlite3_column_int64(st, 10)};
        x.is_region = mt_store_path_is_region(x.loop_path);
        x.is_loop = x.loop_path != NULL && !x.is_region;
        MT_PUSH(*sites, *n, cap, x);
        MT_PUSH(*ids, ni, icap, sqlite3_column_int64(st, 0));
        MT_PUSH(*objects, no, ocap, sqlite3_column_int64(st, 1));
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : mt_store_fail(s, err, "reading a build's sites");
}

void mt_store_sites_free(mt_store_site *sites, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(sites[i].procedure);
        free(sites[i].loop_path);
        free(sites[i].file);
    }
    free(sites);
}

int mt_store_gc(mt_store *s, double before, size_t keep, size_t *removed, mt_error *err)
{
    sqlite3_stmt *st;
    *removed = 0;
    if (mt_store_exec(s, "BEGIN IMMEDIATE", err) != 0)
        return -1;
    if (mt_store_prepare(s, "DELETE FROM runs WHERE (?1 > 0 AND finished < ?1) OR (?2 > 0 AND id IN "
                            "(SELECT id FROM (SELECT r.id, row_number() OVER (PARTITION BY p.name "
                            "ORDER BY r.id DESC) AS k FROM runs r JOIN programs p ON "
                            "p.id = r.program_id) WHERE k > ?2))", &st, err) != 0)
        goto fail;
    sqlite3_bind_double(st, 1, before);
    sqlite3_bind_int64(st, 2, (int64_t)keep);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        mt_store_fail(s, err, "removing runs");
        goto fail;
    }
    *removed = (size_t)sqlite3_changes(s->db);
    /* Builds no run refers to, and objects no build has, go with them. */
    if (mt_store_exec(s, "DELETE FROM figures WHERE run_id NOT IN (SELECT id FROM runs);"
                         "DELETE FROM sim_figures WHERE run_id NOT IN (SELECT id FROM runs);"
                         "DELETE FROM sim_levels WHERE run_id NOT IN (SELECT id FROM runs);"
                         "DELETE FROM sim_runs WHERE run_id NOT IN (SELECT id FROM runs);"
                         "DELETE FROM sim_remedies WHERE run_id NOT IN (SELECT id FROM runs);"
                         "DELETE FROM sim_problems WHERE run_id NOT IN (SELECT id FROM runs);"
                         /* a library's build has no runs of its own: its sites stay
                          * while a run's figures name them */
                         "DELETE FROM sites WHERE program_id NOT IN (SELECT program_id FROM runs) "
                         "AND program_id NOT IN (SELECT s.program_id FROM figures f JOIN sites s "
                         "ON s.id = f.site_id);"
                         "DELETE FROM data_sites WHERE program_id NOT IN "
                         "(SELECT program_id FROM runs);"
                         "DELETE FROM programs WHERE id NOT IN (SELECT program_id FROM runs) "
                         "AND id NOT IN (SELECT program_id FROM sites);"
                         "DELETE FROM objects WHERE id NOT IN (SELECT object_id FROM sites) AND "
                         "id NOT IN (SELECT object_id FROM data_sites);"
                         "COMMIT", err) != 0)
        goto fail;
    return mt_store_exec(s, "VACUUM; PRAGMA wal_checkpoint(TRUNCATE)", err);
fail:
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
}

/* Every statement is prepared and checked before any runs, so a refused
 * one leaves no partial output. */
static int check_read_only(mt_store *s, const char *sql, size_t *count, mt_error *err)
{
    *count = 0;
    for (const char *rest = sql; rest && *rest;) {
        sqlite3_stmt *st;
        const char *tail;
        if (sqlite3_prepare_v2(s->db, rest, -1, &st, &tail) != SQLITE_OK) {
            mt_error_set(err, "sql: %s", sqlite3_errmsg(s->db));
            return -1;
        }
        if (st && !sqlite3_stmt_readonly(st)) {
            mt_error_set(err, "sql: refused, not a read-only statement: %.*s",
                         (int)strcspn(rest, ";"), rest + strspn(rest, " \t\n"));
            sqlite3_finalize(st);
            return -1;
        }
        *count += st != NULL;
        sqlite3_finalize(st);
        rest = tail;
    }
    if (*count == 0) {
        mt_error_set(err, "sql: no statement given");
        return -1;
    }
    return 0;
}

static void print_rows(sqlite3_stmt *st, FILE *out, bool header)
{
    int ncols = sqlite3_column_count(st);
    if (header)
        for (int c = 0; c < ncols; c++)
            fprintf(out, "%s%s", sqlite3_column_name(st, c), c + 1 < ncols ? "\t" : "\n");
    /* Values are program-derived (names, paths, command lines): a TSV
     * field's escapes keep the rows rows and the terminal undriven. */
    for (int c = 0; c < ncols; c++) {
        const unsigned char *t = sqlite3_column_text(st, c);
        mt_tsv_field(out, t ? (const char *)t : "");
        fputc(c + 1 < ncols ? '\t' : '\n', out);
    }
}

int mt_store_sql(mt_store *s, const char *sql, FILE *out, mt_error *err)
{
    size_t count;
    sqlite3_limit(s->db, SQLITE_LIMIT_ATTACHED, 0);
    if (check_read_only(s, sql, &count, err) != 0)
        return -1;
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    int rc = 0;
    for (const char *rest = sql; rc == 0 && rest && *rest;) {
        sqlite3_stmt *st;
        const char *tail;
        if (sqlite3_prepare_v2(s->db, rest, -1, &st, &tail) != SQLITE_OK)
            rc = mt_store_fail(s, err, "sql");
        int step = SQLITE_DONE;
        for (bool first = true; rc == 0 && st && (step = sqlite3_step(st)) == SQLITE_ROW; first = false)
            print_rows(st, mem, first);
        if (rc == 0 && step != SQLITE_DONE)
            rc = mt_store_fail(s, err, "sql");
        sqlite3_finalize(st);
        rest = tail;
    }
    fclose(mem);
    if (rc == 0)
        fwrite(text, 1, len, out);
    free(text);
    return rc;
}

void mt_store_run_rows_free(mt_store_run_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        mt_store_run_row *r = &rows[i];
        char *texts[] = {r->tool, r->program, r->path, r->sha256, r->build_id, r->command_line,
                         r->arguments, r->cwd, r->machine, r->version};
        for (size_t k = 0; k < MT_ARRAY_LEN(texts); k++)
            free(texts[k]);
        free(r->sim_machine);
        free(r->rundir);
        free(r->rundir_stamp);
    }
    free(rows);
}

void mt_store_object_rows_free(mt_store_object_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(rows[i].procedure);
        free(rows[i].loop_path);
        free(rows[i].file);
        free(rows[i].data_kind);
    }
    free(rows);
}
