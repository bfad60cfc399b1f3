/* store/write.c — storing one run: its build (first time: sites matched to
 * the previous build of the same program name, so objects keep their
 * identity), the run, and its figures, all in one IMMEDIATE transaction so
 * a killed writer leaves nothing half-stored and concurrent writers queue. */
#define _GNU_SOURCE
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Shell-quoted, so a stored command line can be pasted back. */
static void append_quoted(FILE *mem, const char *arg)
{
    if (arg[0] && strspn(arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                              "-_./=:,+@%") == strlen(arg)) {
        fputs(arg, mem);
        return;
    }
    fputc('\'', mem);
    for (const char *c = arg; *c; c++)
        if (*c == '\'')
            fputs("'\\''", mem);
        else
            fputc(*c, mem);
    fputc('\'', mem);
}

static char *shell_line(int argc, char **argv)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    for (int i = 0; i < argc; i++) {
        if (i)
            fputc(' ', mem);
        append_quoted(mem, argv[i]);
    }
    fclose(mem);
    return text;
}

/* The program's arguments as a JSON array, built by SQLite's own JSON
 * functions so quoting is exact. */
static char *json_arguments(mt_store *s, int n, char **args, mt_error *err)
{
    sqlite3_stmt *st;
    if (mt_store_prepare(s, "SELECT json_insert(?1, '$[#]', ?2)", &st, err) != 0)
        return NULL;
    char *json = mt_xstrdup("[]");
    for (int i = 0; i < n && json; i++) {
        sqlite3_bind_text(st, 1, json, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, args[i], -1, SQLITE_STATIC);
        free(json);
        json = sqlite3_step(st) == SQLITE_ROW ? mt_store_col_text(st, 0) : NULL;
        sqlite3_reset(st);
    }
    if (!json)
        mt_store_fail(s, err, "quoting the arguments");
    sqlite3_finalize(st);
    return json;
}

static int64_t find_program(mt_store *s, const char *sha256, mt_error *err)
{
    sqlite3_stmt *st;
    if (mt_store_prepare(s, "SELECT id FROM programs WHERE sha256 = ?", &st, err) != 0)
        return -1;
    sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    int64_t id = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        id = mt_store_fail(s, err, "looking up the program");
    sqlite3_finalize(st);
    return id;
}

/* The build whose sites a new build of `name` is matched against: the last
 * one stored under the same path, else under the same name (other than
 * build `self`, when > 0). */
static int64_t previous_build(mt_store *s, const char *name, const char *path, int64_t self,
                              mt_error *err)
{
    sqlite3_stmt *st;
    if (mt_store_prepare(s, "SELECT id FROM programs WHERE name = ?1 AND id != ?3 "
                            "ORDER BY path = ?2 DESC, id DESC LIMIT 1", &st, err) != 0)
        return -1;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, path, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, self);
    int rc = sqlite3_step(st);
    int64_t id = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        id = mt_store_fail(s, err, "looking up the previous build");
    sqlite3_finalize(st);
    return id;
}

static int64_t insert_program(mt_store *s, const mt_store_build *b, const char *name,
                              double now, mt_error *err)
{
    sqlite3_stmt *st;
    if (mt_store_prepare(s, "INSERT INTO programs(name, path, build_id, sha256, first_stored) "
                            "VALUES (?, ?, ?, ?, ?)", &st, err) != 0)
        return -1;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, b->path, -1, SQLITE_STATIC);
    if (b->build_id[0])
        sqlite3_bind_text(st, 3, b->build_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, b->sha256, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 5, now);
    int64_t id = sqlite3_step(st) == SQLITE_DONE ? sqlite3_last_insert_rowid(s->db)
                                                 : mt_store_fail(s, err, "storing the program");
    sqlite3_finalize(st);
    return id;
}

static void bind_text_or_null(sqlite3_stmt *st, int col, const char *text)
{
    if (text)
        sqlite3_bind_text(st, col, text, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, col);
}

typedef struct {
    sqlite3_stmt *object, *site;
} site_writer;

static int64_t insert_site(mt_store *s, site_writer *w, int64_t program, const char *name,
                           const mt_store_site *site, int64_t *object_io, const char *matched,
                           mt_error *err)
{
    int64_t object = *object_io;
    if (object == 0) {
        sqlite3_bind_text(w->object, 1, name, -1, SQLITE_STATIC);
        sqlite3_bind_text(w->object, 2, site->is_region ? "region" : site->is_loop ? "loop" : "procedure",
                          -1, SQLITE_STATIC);
        if (sqlite3_step(w->object) != SQLITE_DONE)
            return mt_store_fail(s, err, "storing an object");
        sqlite3_reset(w->object);
        object = *object_io = sqlite3_last_insert_rowid(s->db);
    }
    sqlite3_stmt *st = w->site;
    sqlite3_bind_int64(st, 1, program);
    sqlite3_bind_int64(st, 2, object);
    sqlite3_bind_text(st, 3, site->procedure, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, site->named);
    bind_text_or_null(st, 5, site->loop_path);
    sqlite3_bind_int(st, 6, (int)site->depth);
    bind_text_or_null(st, 7, site->file);
    sqlite3_bind_int64(st, 8, site->line);
    sqlite3_bind_int64(st, 9, site->proc_line);
    sqlite3_bind_int64(st, 10, (int64_t)site->address);
    sqlite3_bind_int64(st, 11, (int64_t)site->shape);
    sqlite3_bind_text(st, 12, matched, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc == SQLITE_DONE)
        return sqlite3_last_insert_rowid(s->db);
    /* Name the site: a failure here means two sites of one build share a key. */
    char *what = mt_xasprintf("storing the site of %s%s%s at %#llx", site->procedure,
                              site->loop_path ? " loop " : "", site->loop_path ? site->loop_path : "",
                              (unsigned long long)site->address);
    int64_t failed = mt_store_fail(s, err, what);
    free(what);
    return failed;
}

/* Sites of a build stored before that this one lacks are regions (the
 * static sites are stored the first time): a run partitioned a procedure
 * anew.  Each takes the object of its counterpart among the build's stored
 * sites (another partition of the same procedure: same region number or
 * shape), else among the previous build's (mt_store_match); *objects[j] = 0
 * and how[j] untouched when none. */
static int match_new_sites(mt_store *s, const mt_store_build *b, int64_t program, const char *name,
                           const mt_store_site *old, const int64_t *old_objects, size_t nold,
                           const uint32_t *exact, int64_t *objects, uint8_t *how, mt_error *err)
{
    uint32_t *to = mt_xcalloc(b->nsites + 1, sizeof *to);
    uint8_t *by = mt_xcalloc(b->nsites + 1, 1);
    mt_store_match(old, nold, b->sites, b->nsites, to, by);
    bool left = false;
    for (size_t j = 0; j < b->nsites; j++) {
        if (exact[j] != MT_NONE || to[j] == MT_NONE || old[to[j]].is_region != b->sites[j].is_region)
            continue;
        objects[j] = old_objects[to[j]];
        how[j] = by[j];
    }
    for (size_t j = 0; j < b->nsites; j++)
        left |= exact[j] == MT_NONE && objects[j] == 0;
    int rc = 0;
    int64_t prev = left ? previous_build(s, name, b->path, program, err) : 0;
    mt_store_site *ps = NULL;
    int64_t *prev_ids = NULL, *prev_objects = NULL;
    size_t nprev = 0;
    if (prev < 0 || (prev > 0 && mt_store_load_sites(s, prev, &ps, &prev_ids, &prev_objects, &nprev,
                                                     err) != 0)) {
        rc = -1;
    } else if (prev > 0) {
        mt_store_match(ps, nprev, b->sites, b->nsites, to, by);
        for (size_t j = 0; j < b->nsites; j++)
            if (exact[j] == MT_NONE && objects[j] == 0 && to[j] != MT_NONE &&
                ps[to[j]].is_region == b->sites[j].is_region) {
                objects[j] = prev_objects[to[j]];
                how[j] = by[j];
            }
    }
    mt_store_sites_free(ps, nprev);
    free(prev_ids);
    free(prev_objects);
    free(to);
    free(by);
    return rc;
}

/* Site ids (and objects) of every site of b in the program `program`,
 * creating the sites of a build seen for the first time. */
static int resolve_sites(mt_store *s, const mt_store_build *b, int64_t program, bool known,
                         int64_t against, const char *name, site_ref *refs, mt_error *err)
{
    mt_store_site *old = NULL;
    int64_t *old_ids = NULL, *old_objects = NULL;
    size_t nold = 0;
    if (against > 0 && mt_store_load_sites(s, against, &old, &old_ids, &old_objects, &nold, err) != 0)
        return -1;
    uint32_t *to_old = mt_xcalloc(b->nsites + 1, sizeof *to_old);
    uint8_t *how = mt_xcalloc(b->nsites + 1, 1);
    int64_t *new_objects = mt_xcalloc(b->nsites + 1, sizeof *new_objects);
    int rc = 0;
    if (known) {
        mt_store_match_exact(old, nold, b->sites, b->nsites, to_old);
        rc = match_new_sites(s, b, program, name, old, old_objects, nold, to_old, new_objects, how,
                             err);
    } else {
        mt_store_match(old, nold, b->sites, b->nsites, to_old, how);
        for (size_t j = 0; j < b->nsites; j++)
            new_objects[j] = to_old[j] == MT_NONE ? 0 : old_objects[to_old[j]];
    }
    site_writer w = {0};
    rc = rc ? rc : mt_store_prepare(s, "INSERT INTO objects(program_name, kind) VALUES (?, ?)", &w.object, err);
    rc = rc ? rc : mt_store_prepare(s, "INSERT INTO sites(program_id, object_id, procedure, named, "
                                       "loop_path, depth, file, line, proc_line, address, shape, "
                                       "matched) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", &w.site, err);
    for (size_t j = 0; rc == 0 && j < b->nsites; j++) {
        uint32_t i = to_old[j];
        if (known && i != MT_NONE) { /* same build, stored before */
            refs[j] = (site_ref){old_ids[i], old_objects[i]};
            continue;
        }
        int64_t object = new_objects[j];
        const char *matched = object == 0 ? "new" : mt_match_kind_name(how[j]);
        int64_t site = insert_site(s, &w, program, name, &b->sites[j], &object, matched, err);
        if (site < 0)
            rc = -1;
        else
            refs[j] = (site_ref){site, object};
    }
    sqlite3_finalize(w.object);
    sqlite3_finalize(w.site);
    free(to_old);
    free(how);
    free(new_objects);
    mt_store_sites_free(old, nold);
    free(old_ids);
    free(old_objects);
    return rc;
}

int mt_store_rundir_stamp(const char *rundir, char stamp[65], mt_error *err)
{
    char *path = mt_xasprintf("%s/pass2.tsv", rundir);
    uint8_t sha[32];
    int rc = mt_file_sha256(path, sha, err);
    free(path);
    if (rc == 0)
        mt_sha256_hex(sha, stamp);
    return rc;
}

static int64_t insert_run(mt_store *s, const mt_store_build *b, const mt_store_run *r,
                          int64_t program, mt_error *err)
{
    uint64_t memops = 0, insns = 0;
    for (size_t i = 0; i < r->nfigures; i++)
        if (!b->sites[r->figures[i].site].is_loop && !b->sites[r->figures[i].site].is_region) {
            memops += r->figures[i].memory_ops;
            insns += r->figures[i].instructions;
        }
    char *args = json_arguments(s, r->nargs, r->args, err);
    if (!args)
        return -1;
    char *cmd = shell_line(r->argc, r->argv);
    sqlite3_stmt *st;
    int64_t id = -1;
    if (mt_store_prepare(s, "INSERT INTO runs(program_id, tool, finished, command_line, arguments, "
                            "cwd, machine, mtool_version, ran, exit_status, user_s, sys_s, wall_s, "
                            "base_user_s, base_sys_s, base_wall_s, memory_ops, instructions, "
                            "nobjects, rundir, rundir_stamp, predicted_cycles, measured_cycles, "
                            "objects_overhead_cycles, memory_ops_in_objects) "
                            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                         &st, err) == 0) {
        sqlite3_bind_int64(st, 1, program);
        sqlite3_bind_text(st, 2, r->tool, -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 3, r->finished);
        sqlite3_bind_text(st, 4, cmd, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, args, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, r->cwd, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 7, r->machine, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 8, r->version, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 9, r->ran);
        if (r->ran)
            sqlite3_bind_int(st, 10, r->exit_status);
        else
            sqlite3_bind_null(st, 10);
        const double times[] = {r->user_s, r->sys_s, r->wall_s, r->base_user_s, r->base_sys_s,
                                r->base_wall_s};
        for (int k = 0; k < 6; k++)
            mt_store_bind_real(st, 11 + k, times[k]);
        sqlite3_bind_int64(st, 17, (int64_t)memops);
        sqlite3_bind_int64(st, 18, (int64_t)insns);
        size_t nobjects = r->nfigures + (r->sim ? r->sim->nfigures : 0);
        for (size_t i = 0; i < r->nlibs; i++)
            nobjects += r->libs[i].nfigures + r->libs[i].nsim_figures;
        sqlite3_bind_int64(st, 19, (int64_t)nobjects);
        bind_text_or_null(st, 20, r->rundir);
        bind_text_or_null(st, 21, r->rundir_stamp);
        const mt_store_program_time *t = r->timed;
        mt_store_bind_real(st, 22, t ? t->predicted : NAN);
        mt_store_bind_real(st, 23, t ? t->measured : NAN);
        mt_store_bind_real(st, 24, t ? t->objects_overhead : NAN);
        mt_store_bind_count(st, 25, t ? t->memory_ops_in_objects : MT_STORE_NO_COUNT);
        id = sqlite3_step(st) == SQLITE_DONE ? sqlite3_last_insert_rowid(s->db)
                                             : mt_store_fail(s, err, "storing the run");
        sqlite3_finalize(st);
    }
    free(cmd);
    free(args);
    return id;
}

static int insert_figures(mt_store *s, const mt_store_figures *figures, size_t nfigures,
                          int64_t run, const site_ref *refs, mt_error *err)
{
    sqlite3_stmt *st;
    if (mt_store_prepare(s, "INSERT INTO figures(run_block, run_id, site_id, object_id, entries, "
                            "iterations, instructions, memory_ops, measured_cycles, "
                            "predicted_cycles, overhead_cycles) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                         &st, err) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < nfigures; i++) {
        const mt_store_figures *f = &figures[i];
        sqlite3_bind_int64(st, 1, mt_store_run_block(run));
        sqlite3_bind_int64(st, 2, run);
        sqlite3_bind_int64(st, 3, refs[f->site].site);
        sqlite3_bind_int64(st, 4, refs[f->site].object);
        mt_store_bind_count(st, 5, f->entries);
        mt_store_bind_count(st, 6, f->iterations);
        sqlite3_bind_int64(st, 7, (int64_t)f->instructions);
        sqlite3_bind_int64(st, 8, (int64_t)f->memory_ops);
        mt_store_bind_real(st, 9, f->measured_cycles);
        mt_store_bind_real(st, 10, f->predicted_cycles);
        mt_store_bind_real(st, 11, f->overhead_cycles);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = mt_store_fail(s, err, "storing figures");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

/* A build stored (the first time: with its sites matched against the
 * previous build of its name) and refs[] set to its sites' ids; its
 * program's id, *against the build its sites were matched with, *name its
 * program name (malloc'd), or -1 with err. */
static int64_t store_build(mt_store *s, const mt_store_build *b, double now, site_ref *refs,
                           int64_t *against, char **name, mt_error *err)
{
    char *copy = mt_xstrdup(b->path);
    *name = mt_xstrdup(b->library ? b->library : basename(copy));
    free(copy);
    int64_t program = find_program(s, b->sha256, err);
    bool known = program > 0;
    *against = known ? program : program == 0 ? previous_build(s, *name, b->path, 0, err) : -1;
    if (*against >= 0 && !known)
        program = insert_program(s, b, *name, now, err);
    return program > 0 && *against >= 0 &&
                   resolve_sites(s, b, program, known, *against, *name, refs, err) == 0
               ? program : -1;
}

/* A timed or simulated run's figures of its libraries' objects, each
 * library's build stored as a program of its own. */
static int insert_library_figures(mt_store *s, const mt_store_run *r, int64_t run, mt_error *err)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < r->nlibs; i++) {
        const mt_store_library_figures *l = &r->libs[i];
        site_ref *refs = mt_xcalloc(l->build->nsites + 1, sizeof *refs);
        int64_t against;
        char *name;
        rc = store_build(s, l->build, r->finished, refs, &against, &name, err) < 0 ||
                     insert_figures(s, l->figures, l->nfigures, run, refs, err) != 0 ||
                     mt_store_insert_sim_figures(s, l->sim_figures, l->nsim_figures, run, refs,
                                                 err) != 0 ||
                     mt_store_insert_rank_figures(s, l->rank_figures, l->nrank_figures, run, refs,
                                                  err) != 0
                 ? -1 : 0;
        free(name);
        free(refs);
    }
    return rc;
}

int64_t mt_store_add_run(mt_store *s, const mt_store_build *b, const mt_store_run *r,
                         mt_error *err)
{
    if (!s->writable) {
        mt_error_set(err, "%s: opened read-only", s->path);
        return -1;
    }
    if (mt_store_exec(s, "BEGIN IMMEDIATE", err) != 0)
        return -1;
    site_ref *refs = mt_xcalloc(b->nsites + 1, sizeof *refs);
    int64_t run = -1, against;
    char *name;
    int64_t program = store_build(s, b, r->finished, refs, &against, &name, err);
    if (program > 0 && (run = insert_run(s, b, r, program, err)) > 0 &&
        insert_figures(s, r->figures, r->nfigures, run, refs, err) == 0 &&
        insert_library_figures(s, r, run, err) == 0 &&
        mt_store_insert_ranks(s, r, run, refs, err) == 0 &&
        (!r->sim || mt_store_insert_sim(s, r->sim, run, refs,
                                        &(mt_store_sim_build){program, against, name}, err) == 0) &&
        mt_store_exec(s, "COMMIT", err) == 0)
        goto done;
    run = -1;
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
done:
    free(refs);
    free(name);
    return run;
}
