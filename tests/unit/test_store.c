/* Unit tests of store/: the tolerant matcher on hand-built sites whose
 * correspondence is known (lines shifted, a loop inserted, a procedure
 * renamed, same-named statics, unnamed procedures); a stored run read back
 * figure by figure; the file's header (WAL, schema version, application id);
 * foreign, damaged and newer files refused byte-for-byte untouched; and
 * writers SIGKILLed in the middle of a large transaction leaving a
 * consistent, usable database. */
#define _GNU_SOURCE
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"
#include "unit.h"

static mt_store_site proc_site(const char *name, const char *file, uint32_t line, uint64_t shape)
{
    return (mt_store_site){.procedure = (char *)name, .named = true, .file = (char *)file,
                           .line = line, .proc_line = line, .address = 0x1000 + line,
                           .shape = shape};
}

static mt_store_site loop_site(const mt_store_site *proc, const char *path, uint32_t depth,
                               uint32_t line, uint64_t shape)
{
    mt_store_site s = *proc;
    s.is_loop = true;
    s.loop_path = (char *)path;
    s.depth = depth;
    s.line = line;
    s.shape = shape;
    return s;
}

/* b is a with every line moved by `delta`. */
static void shift(const mt_store_site *a, mt_store_site *b, size_t n, uint32_t delta)
{
    for (size_t i = 0; i < n; i++) {
        b[i] = a[i];
        b[i].line += delta;
        b[i].proc_line += delta;
        b[i].address += 0x40;
    }
}

static void test_matcher(void)
{
    mt_store_site f = proc_site("f", "a.c", 10, 100), g = proc_site("g", "a.c", 30, 200);
    mt_store_site a[] = {f, loop_site(&f, "1", 1, 12, 11), loop_site(&f, "1.1", 2, 13, 12),
                         loop_site(&f, "2", 1, 20, 13), g, loop_site(&g, "1", 1, 32, 21)};
    size_t n = MT_ARRAY_LEN(a);
    uint32_t map[16];
    uint8_t how[16];

    mt_store_match(a, n, a, n, map, how);
    bool ok = true;
    for (size_t j = 0; j < n; j++)
        ok &= map[j] == j && how[j] == MT_MATCH_SAME;
    CHECK(ok, "match: a build against itself pairs every site with itself, 'same'");

    mt_store_site b[16];
    shift(a, b, n, 3); /* comment lines inserted above f */
    mt_store_match(a, n, b, n, map, how);
    ok = true;
    for (size_t j = 0; j < n; j++)
        ok &= map[j] == j && how[j] == MT_MATCH_MOVED;
    CHECK(ok, "match: lines shifted by 3: every procedure and loop found, 'moved'");

    /* A new outermost loop inserted at line 11 of f: the old loops keep their
     * shape but their paths become 2, 2.1 and 3. */
    mt_store_site c[] = {f, loop_site(&f, "1", 1, 11, 99), loop_site(&f, "2", 1, 14, 11),
                         loop_site(&f, "2.1", 2, 15, 12), loop_site(&f, "3", 1, 22, 13), g,
                         loop_site(&g, "1", 1, 32, 21)};
    mt_store_match(a, n, c, MT_ARRAY_LEN(c), map, how);
    CHECK(map[1] == MT_NONE, "match: an inserted loop is new");
    CHECK(map[2] == 1 && map[3] == 2 && map[4] == 3 && how[2] == MT_MATCH_MOVED,
          "match: loops after an inserted one found by shape despite new paths (%u %u %u)",
          map[2], map[3], map[4]);
    CHECK(map[5] == 4 && map[6] == 5 && how[6] == MT_MATCH_SAME, "match: other procedure untouched");

    /* f renamed to f2 and its lines shifted: same file and shape. */
    mt_store_site f2 = proc_site("f2", "a.c", 15, 100);
    mt_store_site d[] = {f2, loop_site(&f2, "1", 1, 17, 11), loop_site(&f2, "1.1", 2, 18, 12),
                         loop_site(&f2, "2", 1, 25, 13), g, loop_site(&g, "1", 1, 32, 21)};
    mt_store_match(a, n, d, MT_ARRAY_LEN(d), map, how);
    CHECK(map[0] == 0 && how[0] == MT_MATCH_RENAMED, "match: renamed procedure found by file and shape");
    CHECK(map[1] == 1 && map[2] == 2 && map[3] == 3 && how[3] == MT_MATCH_RENAMED,
          "match: the loops of a renamed procedure follow it");

    /* A loop whose body changed in place keeps its identity by path. */
    mt_store_site e[16];
    memcpy(e, a, sizeof a);
    e[2].shape = 777;
    mt_store_match(a, n, e, n, map, how);
    CHECK(map[2] == 2, "match: a loop whose code changed is the same loop (same path)");

    /* Two statics named h in different files. */
    mt_store_site h1 = proc_site("h", "x.c", 5, 1), h2 = proc_site("h", "y.c", 5, 2);
    mt_store_site s1[] = {h1, h2}, s2[] = {h2, h1};
    mt_store_match(s1, 2, s2, 2, map, how);
    CHECK(map[0] == 1 && map[1] == 0, "match: same-named procedures told apart by file");

    /* Unnamed procedures: only the same address and shape. */
    mt_store_site u = {.procedure = "sub_401000", .named = false, .address = 0x401000, .shape = 5};
    mt_store_site u_moved = u, u_changed = u;
    u_moved.address = 0x401100;
    u_changed.shape = 6;
    mt_store_match(&u, 1, &u, 1, map, how);
    CHECK(map[0] == 0 && how[0] == MT_MATCH_ADDRESS, "match: unnamed procedure by address");
    mt_store_match(&u, 1, &u_moved, 1, map, how);
    CHECK(map[0] == MT_NONE, "match: unnamed procedure at another address is new");
    mt_store_match(&u, 1, &u_changed, 1, map, how);
    CHECK(map[0] == MT_NONE, "match: unnamed procedure with other code is new");
}

static mt_store_site region_site(const mt_store_site *proc, uint32_t k, uint32_t line,
                                 uint64_t shape)
{
    static char paths[8][8];
    snprintf(paths[k % 8], sizeof paths[0], "r%u", k);
    mt_store_site s = *proc;
    s.is_region = true;
    s.loop_path = paths[k % 8];
    s.line = line;
    s.address = proc->address + 16 * k;
    s.shape = shape;
    return s;
}

/* Regions (pass 2's pieces of a loop-free procedure) match like loops,
 * inside matched procedures, and never a loop. */
static void test_matcher_regions(void)
{
    mt_store_site f = proc_site("f", "a.c", 10, 100), g = proc_site("g", "a.c", 60, 200);
    mt_store_site a[] = {f, loop_site(&f, "1", 1, 12, 11), region_site(&f, 1, 10, 31),
                         region_site(&f, 2, 30, 32), region_site(&f, 3, 45, 33), g};
    size_t n = MT_ARRAY_LEN(a);
    uint32_t map[16];
    uint8_t how[16];
    mt_store_site b[16];
    shift(a, b, n, 5);
    mt_store_match(a, n, b, n, map, how);
    bool ok = true;
    for (size_t j = 0; j < n; j++)
        ok &= map[j] == j && how[j] == MT_MATCH_MOVED;
    CHECK(ok, "match: regions follow their procedure when its lines move, 'moved'");
    /* Partitioned anew: two regions where there were three (other shapes). */
    mt_store_site c[] = {f, loop_site(&f, "1", 1, 12, 11), region_site(&f, 1, 10, 41),
                         region_site(&f, 2, 40, 42), g};
    mt_store_match(a, n, c, MT_ARRAY_LEN(c), map, how);
    CHECK(map[2] == 2 && map[3] == 3, "match: regions of another partition by their number (%u %u)",
          map[2], map[3]);
    /* A loop and a region of the same shape at the same place never match. */
    mt_store_site d[] = {f, region_site(&f, 1, 12, 11)}, e[] = {f, loop_site(&f, "1", 1, 12, 11)};
    d[1].depth = 1;
    mt_store_match(e, 2, d, 2, map, how);
    CHECK(map[1] == MT_NONE, "match: a region is never a loop");
}

/* ---- a synthetic build and run ---------------------------------------------- */

static mt_store_site *synthetic_sites(size_t nprocs, size_t *n)
{
    mt_store_site *s = mt_xcalloc(nprocs * 2, sizeof *s);
    *n = 0;
    for (size_t p = 0; p < nprocs; p++) {
        mt_store_site ps = {.procedure = mt_xasprintf("proc%zu", p), .named = true,
                            .file = mt_xstrdup("big.c"), .line = (uint32_t)(10 * p + 1),
                            .proc_line = (uint32_t)(10 * p + 1), .address = 0x1000 + 64 * p,
                            .shape = p};
        s[(*n)++] = ps;
        mt_store_site ls = ps;
        ls.procedure = mt_xstrdup(ps.procedure);
        ls.file = mt_xstrdup("big.c");
        ls.is_loop = true;
        ls.loop_path = mt_xstrdup("1");
        ls.depth = 1;
        ls.line += 2;
        ls.address += 16;
        s[(*n)++] = ls;
    }
    return s;
}

static void fill_run(mt_store_run *r, mt_store_figures *figs, size_t nsites, uint64_t scale)
{
    static char *argv[] = {"mtool", "count", "--", "big", "it's"};
    for (size_t i = 0; i < nsites; i++)
        figs[i] = (mt_store_figures){.site = (uint32_t)i, .entries = i + 1,
                                     .iterations = i % 2 ? 100 * (i + 1) : MT_STORE_NO_COUNT,
                                     .instructions = 10 * (i + 1) * scale,
                                     .memory_ops = 3 * (i + 1) * scale, .measured_cycles = NAN,
                                     .predicted_cycles = i == 1 ? 42.5 : NAN,
                                     .overhead_cycles = NAN};
    *r = (mt_store_run){.tool = "count", .finished = (double)time(NULL), .argc = 5, .argv = argv,
                        .nargs = 1, .args = argv + 4, .cwd = "/tmp", .machine = "test machine",
                        .version = "test", .ran = true, .exit_status = 3, .user_s = 1.5,
                        .sys_s = 0.25, .wall_s = 2, .base_user_s = NAN, .base_sys_s = NAN,
                        .base_wall_s = NAN, .figures = figs, .nfigures = nsites};
}

static mt_store_build synthetic_build(size_t nprocs, const char *sha)
{
    mt_store_build b = {.path = mt_xstrdup("/tmp/big")};
    snprintf(b.sha256, sizeof b.sha256, "%s", sha);
    b.sites = synthetic_sites(nprocs, &b.nsites);
    return b;
}

/* A new history at `path` holding one counted run of build b (figs: one
 * per site; *r left as stored); *id its id, -1 when it failed. */
static mt_store *open_with_a_run(const char *path, const mt_store_build *b, mt_store_figures *figs,
                                 mt_store_run *r, int64_t *id, mt_error *err)
{
    mt_store *s = mt_store_open(path, MT_STORE_WRITE, err);
    fill_run(r, figs, b->nsites, 1);
    *id = s ? mt_store_add_run(s, b, r, err) : -1;
    return s;
}

static void free_build(mt_store_build *b)
{
    for (size_t i = 0; i < b->nsites; i++) {
        free(b->sites[i].procedure);
        free(b->sites[i].loop_path);
        free(b->sites[i].file);
    }
    free(b->sites);
    free(b->path);
    free(b->library);
}

static char *query_text(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    char *out = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            out = mt_xstrdup((const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return out ? out : mt_xstrdup("(error)");
}

static bool query_is(const char *path, const char *sql, const char *want)
{
    char *got = query_text(path, sql);
    bool ok = strcmp(got, want) == 0;
    if (!ok)
        printf("# %s: got '%s', want '%s'\n", sql, got, want);
    free(got);
    return ok;
}

static void test_round_trip(const char *dir)
{
    char *path = mt_xasprintf("%s/sub/dir/h.db", dir);
    mt_error err;
    mt_store *s = mt_store_open(path, MT_STORE_WRITE, &err);
    CHECK(s != NULL, "store: creates the database and its directories (%s)", s ? "" : err.msg);
    if (!s)
        return;
    mt_store_build b = synthetic_build(5, "aa");
    mt_store_figures figs[10];
    mt_store_run r;
    fill_run(&r, figs, b.nsites, 1);
    int64_t id1 = mt_store_add_run(s, &b, &r, &err);
    fill_run(&r, figs, b.nsites, 2);
    r.rundir = "/tmp/rundir";
    r.rundir_stamp = "5eed";
    r.timed = &(mt_store_program_time){100.5, 250.25, 120, 77};
    int64_t id2 = mt_store_add_run(s, &b, &r, &err);
    CHECK(id1 == 1 && id2 == 2, "store: two runs stored, ids 1 and 2");
    mt_store_close(s);

    CHECK(query_is(path, "PRAGMA journal_mode", "wal"), "store: WAL journal");
    CHECK(query_is(path, "PRAGMA user_version", "10"), "store: schema version 10 in user_version");
    CHECK(query_is(path, "SELECT count(*) FROM sites", "10"),
          "store: sites stored once per build (10, not 20)");
    CHECK(query_is(path, "SELECT count(DISTINCT object_id) FROM figures", "10"),
          "store: one object per site, shared by both runs");

    s = mt_store_open(path, MT_STORE_READ, &err);
    mt_store_run_row *run;
    mt_store_object_row *objs;
    size_t n;
    CHECK(s && mt_store_get_run(s, id2, &run, &err) == 0, "store: run read back");
    if (!s)
        return;
    CHECK(strcmp(run->command_line, "mtool count -- big 'it'\\''s'") == 0,
          "store: command line shell-quoted (%s)", run->command_line);
    CHECK(strcmp(run->arguments, "[\"it's\"]") == 0, "store: arguments as JSON (%s)", run->arguments);
    CHECK(run->exit_status == 3 && run->user_s == 1.5 && isnan(run->base_user_s),
          "store: exit status, times, absent baseline as NULL");
    CHECK(run->rundir && !strcmp(run->rundir, "/tmp/rundir") && !strcmp(run->rundir_stamp, "5eed") &&
          run->timed && run->program_time.predicted == 100.5 &&
          run->program_time.measured == 250.25 && run->program_time.objects_overhead == 120 &&
          run->program_time.memory_ops_in_objects == 77,
          "store: the run directory, its stamp and the program's timed figures read back");
    mt_store_run_row *first;
    CHECK(mt_store_get_run(s, id1, &first, &err) == 0 && !first->rundir && !first->rundir_stamp &&
          !first->timed, "store: a run without them reads NULLs");
    mt_store_run_rows_free(first, 1);
    int64_t stamped = -1, unknown = -1;
    CHECK(mt_store_run_of_stamp(s, "5eed", &stamped, &err) == 0 && stamped == id2 &&
          mt_store_run_of_stamp(s, "beef", &unknown, &err) == 0 && unknown == 0,
          "store: the run of a stamp (%lld), 0 for an unknown stamp", (long long)stamped);
    CHECK(mt_store_is_run_spec("12") && mt_store_is_run_spec("last") &&
          mt_store_is_run_spec("last~3") && !mt_store_is_run_spec("last~") &&
          !mt_store_is_run_spec("runs/12") && !mt_store_is_run_spec(""),
          "store: RUN specs are ids, last and last~K");
    CHECK(run->memory_ops == 3 * 2 * (1 + 3 + 5 + 7 + 9), "store: run total sums procedures only "
                                                         "(%llu)", (unsigned long long)run->memory_ops);
    mt_store_run_rows_free(run, 1);
    CHECK(mt_store_run_objects(s, id2, &objs, &n, &err) == 0 && n == 10, "store: 10 objects");
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        size_t site = (size_t)objs[i].entries - 1; /* entries = site + 1 */
        ok &= objs[i].memory_ops == 6 * (site + 1) && objs[i].instructions == 20 * (site + 1);
        ok &= site == 1 ? objs[i].predicted_cycles == 42.5 : isnan(objs[i].predicted_cycles);
        ok &= isnan(objs[i].measured_cycles) && isnan(objs[i].overhead_cycles);
        ok &= objs[i].iterations == (site % 2 ? 100 * (site + 1) : MT_STORE_NO_COUNT);
        ok &= i == 0 || objs[i - 1].memory_ops >= objs[i].memory_ops;
    }
    CHECK(ok, "store: every figure read back exactly; absent cycles and iterations stay absent");
    int64_t object = n ? objs[0].object : 0;
    mt_store_object_rows_free(objs, n);
    CHECK(mt_store_trend(s, object, 0, &objs, &n, &err) == 0 && n == 2 && objs[0].run == 1 &&
              objs[1].memory_ops == 2 * objs[0].memory_ops,
          "store: trend of one object over both runs, oldest first");
    mt_store_object_rows_free(objs, n);
    int64_t last, prev;
    CHECK(mt_store_resolve_run(s, "last~1", NULL, &last, &err) == 0 && last == 1 &&
              mt_store_previous_run(s, 2, &prev, &err) == 0 && prev == 1,
          "store: 'last~1' and the previous run");
    CHECK(mt_store_add_run(s, &b, &r, &err) < 0, "store: a read-only open refuses to store");
    mt_store_close(s);
    free_build(&b);
    free(path);
}

/* A static inline function of a header, compiled in several files: copies
 * with one name, file and line but their own addresses and loops.  Storing
 * the same build again must find each copy's own sites (by address), not
 * pair copies crosswise and store a copy's loops a second time (xz and gawk
 * failed so with "UNIQUE constraint failed: sites..."). */
static void test_same_build_again(const char *dir)
{
    char *path = mt_xasprintf("%s/copies.db", dir);
    mt_store_build b = {.path = mt_xstrdup("/tmp/copies")};
    snprintf(b.sha256, sizeof b.sha256, "cc");
    b.sites = mt_xcalloc(16, sizeof *b.sites);
    for (uint32_t copy = 0; copy < 4; copy++) {
        mt_store_site p = {.procedure = mt_xstrdup("h"), .named = true, .file = mt_xstrdup("x.h"),
                           .line = 5, .proc_line = 5, .address = 0x1000 + 0x100 * copy,
                           .shape = copy};
        b.sites[b.nsites++] = p;
        for (uint32_t l = 1; l <= copy; l++) { /* copy k has k loops */
            mt_store_site ls = p;
            ls.procedure = mt_xstrdup("h");
            ls.file = mt_xstrdup("x.h");
            ls.is_loop = true;
            ls.loop_path = mt_xasprintf("%u", l);
            ls.depth = 1;
            ls.line = 6 + l;
            ls.address += 16 * l;
            b.sites[b.nsites++] = ls;
        }
    }
    mt_error err;
    mt_store *s = mt_store_open(path, MT_STORE_WRITE, &err);
    mt_store_figures figs[16];
    mt_store_run r;
    bool ok = s != NULL;
    for (int k = 1; ok && k <= 3; k++) {
        fill_run(&r, figs, b.nsites, (uint64_t)k);
        ok = mt_store_add_run(s, &b, &r, &err) == k;
    }
    CHECK(ok, "store: the same build with same-named copies stored three times (%s)",
          ok ? "" : err.msg);
    mt_store_close(s);
    CHECK(query_is(path, "SELECT count(*) FROM sites", "10"), "store: copies' sites stored once");
    CHECK(query_is(path, "SELECT count(*) FROM (SELECT site_id FROM figures GROUP BY site_id "
                         "HAVING count(*) = 3 AND min(entries) = max(entries))", "10"),
          "store: every site's figures in all three runs are its own");
    free_build(&b);
    free(path);
}

/* Stores `nruns` runs of a 5-procedure build, run k with figures scaled by
 * k (memory_ops of site i = 3 (i + 1) k); returns the object of site 0. */
static int64_t store_scaled_runs(mt_store *s, const mt_store_build *b, int nruns)
{
    mt_store_figures figs[10];
    mt_store_run r;
    mt_error err;
    for (int k = 1; k <= nruns; k++) {
        fill_run(&r, figs, b->nsites, (uint64_t)k);
        if (mt_store_add_run(s, b, &r, &err) != k)
            return 0;
    }
    mt_store_object_row *objs;
    size_t n;
    if (mt_store_run_objects(s, 1, &objs, &n, &err) != 0)
        return 0;
    int64_t object = 0;
    for (size_t i = 0; i < n; i++)
        if (objs[i].entries == 1) /* entries = site + 1 */
            object = objs[i].object;
    mt_store_object_rows_free(objs, n);
    return object;
}

/* The trend of site 0's object is runs first..nruns, memory_ops 3 k each. */
static bool trend_is(mt_store *s, int64_t object, size_t last, int first, int nruns)
{
    mt_store_object_row *rows;
    size_t n;
    mt_error err;
    if (mt_store_trend(s, object, last, &rows, &n, &err) != 0)
        return false;
    bool ok = n == (size_t)(nruns - first + 1);
    for (size_t i = 0; ok && i < n; i++)
        ok = rows[i].run == first + (int64_t)i && rows[i].memory_ops == 3 * (uint64_t)rows[i].run &&
             rows[i].object == object;
    mt_store_object_rows_free(rows, n);
    return ok;
}

/* Trend reads figures block by block (32 runs a block, newest first): 70
 * runs span three blocks, the last of them partly filled. */
static void test_trend_across_blocks(const char *dir)
{
    char *path = mt_xasprintf("%s/blocks.db", dir);
    mt_error err;
    mt_store *s = mt_store_open(path, MT_STORE_WRITE, &err);
    mt_store_build b = synthetic_build(5, "bb");
    int64_t object = s ? store_scaled_runs(s, &b, 70) : 0;
    CHECK(object > 0, "trend: 70 runs stored");
    CHECK(object > 0 && trend_is(s, object, 0, 1, 70),
          "trend: all 70 runs over three blocks, oldest first, each run's own figure");
    CHECK(object > 0 && trend_is(s, object, 5, 66, 70) && trend_is(s, object, 40, 31, 70),
          "trend --last 5 and 40 (within and across blocks): the newest ones, oldest first");
    mt_store_close(s);
    free_build(&b);
    free(path);
}

/* A version-1 file (figures keyed by run; its table definition as released)
 * is rebuilt to version 2 on open, every figure kept. */
/* An older file made from a new one: without the table and columns
 * version 10 added, then without the tables version 9 added,
 * then the table version 8 added, then the columns version 7 added, then
 * without the tables versions 5 and 6 added (sim_figures with the columns 6
 * added to it). */
#define DROP_VERSION_10_TLB                                                                  \
    "DROP TABLE sim_tlb_levels; ALTER TABLE sim_figures DROP COLUMN tlb1_misses; "           \
    "ALTER TABLE sim_figures DROP COLUMN tlb2_misses; "                                      \
    "ALTER TABLE sim_figures DROP COLUMN page_walks; "                                       \
    "ALTER TABLE sim_figures DROP COLUMN itlb_misses; "                                      \
    "ALTER TABLE sim_figures DROP COLUMN walk_cycles; "
#define DROP_VERSION_9_TABLES DROP_VERSION_10_TLB "DROP TABLE rank_figures; DROP TABLE run_ranks; "
#define DROP_VERSION_8_TABLE DROP_VERSION_9_TABLES "DROP TABLE sim_threads; "
#define DROP_VERSION_7_COLUMNS                                                              \
    DROP_VERSION_8_TABLE                                                                    \
    "DROP INDEX runs_by_stamp; ALTER TABLE runs DROP COLUMN rundir; "                       \
    "ALTER TABLE runs DROP COLUMN rundir_stamp; ALTER TABLE runs DROP COLUMN predicted_cycles; " \
    "ALTER TABLE runs DROP COLUMN measured_cycles; "                                        \
    "ALTER TABLE runs DROP COLUMN objects_overhead_cycles; "                                \
    "ALTER TABLE runs DROP COLUMN memory_ops_in_objects; "
#define DROP_VERSION_5_TABLES                                                               \
    DROP_VERSION_7_COLUMNS                                                                  \
    "DROP TABLE sim_figures; DROP TABLE sim_levels; DROP TABLE sim_runs; DROP TABLE data_sites; " \
    "DROP TABLE sim_remedies; DROP TABLE sim_problems; "

/* A version-6 file (runs without their directory) becomes version 10: its
 * runs kept, read with no run directory, stamp or program figures; a new
 * run stores them. */
static void test_migration_from_v6(const char *dir)
{
    char *path = mt_xasprintf("%s/v6.db", dir);
    mt_error err;
    mt_store_build b = synthetic_build(3, "c5");
    mt_store_figures figs[6];
    mt_store_run r;
    int64_t id;
    mt_store *s = open_with_a_run(path, &b, figs, &r, &id, &err);
    mt_store_close(s);
    sqlite3 *db;
    sqlite3_open(path, &db);
    int rc = sqlite3_exec(db, "BEGIN; " DROP_VERSION_7_COLUMNS "PRAGMA user_version = 6; COMMIT",
                          NULL, NULL, NULL);
    sqlite3_close(db);
    CHECK(id == 1 && rc == SQLITE_OK && query_is(path, "PRAGMA user_version", "6"),
          "migrate: a version-6 history with a run made");
    s = mt_store_open(path, MT_STORE_WRITE, &err);
    mt_store_run_row *row = NULL;
    CHECK(s && query_is(path, "PRAGMA user_version", "10") && mt_store_get_run(s, 1, &row, &err) == 0 &&
              !row->rundir && !row->rundir_stamp && !row->timed,
          "migrate: version 10, the run kept with no run directory (%s)", s ? "" : err.msg);
    mt_store_run_rows_free(row, row ? 1 : 0);
    r.rundir = "/tmp/v6";
    r.rundir_stamp = "5eed";
    int64_t next = -1;
    CHECK(s && mt_store_add_run(s, &b, &r, &err) == 2 &&
              mt_store_run_of_stamp(s, "5eed", &next, &err) == 0 && next == 2,
          "migrate: the migrated file stores a run with its run directory");
    mt_store_close(s);
    free_build(&b);
    free(path);
}

/* A history at `path` holding one counted run, made version `version`
 * by `drop` (SQL taking out what later versions added): true when made. */
static bool older_history(const char *path, const char *tag, const char *drop, int version)
{
    mt_error err;
    mt_store_build b = synthetic_build(3, tag);
    mt_store_figures figs[6];
    mt_store_run r;
    int64_t id;
    mt_store_close(open_with_a_run(path, &b, figs, &r, &id, &err));
    free_build(&b);
    char *sql = mt_xasprintf("BEGIN; %sPRAGMA user_version = %d; COMMIT", drop, version);
    char want[16];
    snprintf(want, sizeof want, "%d", version);
    sqlite3 *db;
    sqlite3_open(path, &db);
    int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_close(db);
    free(sql);
    return id == 1 && rc == SQLITE_OK && query_is(path, "PRAGMA user_version", want);
}

/* A version-7 file (no per-thread view, no MPI ranks) becomes version 10:
 * sim_threads, run_ranks and rank_figures made, empty, its run kept. */
static void test_migration_from_v7(const char *dir)
{
    char *path = mt_xasprintf("%s/v7.db", dir);
    mt_error err;
    CHECK(older_history(path, "c7", DROP_VERSION_8_TABLE, 7) &&
              query_is(path, "SELECT count(*) FROM sqlite_master WHERE name = 'sim_threads'", "0"),
          "migrate: a version-7 history with a run made");
    mt_store *s = mt_store_open(path, MT_STORE_WRITE, &err);
    mt_store_sim_thread *t = NULL;
    size_t n = 1;
    CHECK(s && query_is(path, "PRAGMA user_version", "10") &&
              mt_store_sim_threads(s, 1, &t, &n, &err) == 0 && n == 0 &&
              query_is(path, "SELECT count(*) FROM run_ranks", "0") &&
              query_is(path, "SELECT count(*) FROM rank_figures", "0") &&
              query_is(path, "SELECT count(*) FROM runs", "1"),
          "migrate: version 10, sim_threads and the MPI tables made and empty, the run kept (%s)",
          s ? "" : err.msg);
    free(t);
    mt_store_close(s);
    free(path);
}

/* A version-9 file (no simulated TLB) becomes version 10: sim_tlb_levels
 * made and empty, sim_figures' TLB columns added, its run kept. */
static void test_migration_from_v9(const char *dir)
{
    char *path = mt_xasprintf("%s/v9.db", dir);
    mt_error err;
    CHECK(older_history(path, "c9", DROP_VERSION_10_TLB, 9) &&
              query_is(path, "SELECT count(*) FROM sqlite_master WHERE name = 'sim_tlb_levels'",
                       "0"),
          "migrate: a version-9 history with a run made");
    mt_store *s = mt_store_open(path, MT_STORE_WRITE, &err);
    mt_store_sim_tlb_level *t = NULL;
    size_t n = 1;
    CHECK(s && query_is(path, "PRAGMA user_version", "10") &&
              mt_store_sim_tlb_levels(s, 1, &t, &n, &err) == 0 && n == 0 &&
              query_is(path, "SELECT count(*) FROM pragma_table_info('sim_figures') WHERE name IN "
                             "('tlb1_misses', 'tlb2_misses', 'page_walks', 'itlb_misses', "
                             "'walk_cycles')", "5") &&
              query_is(path, "SELECT count(*) FROM runs", "1"),
          "migrate: version 10, sim_tlb_levels made and empty, the TLB columns added, the run "
          "kept (%s)", s ? "" : err.msg);
    free(t);
    mt_store_close(s);
    free(path);
}

static void test_migration_from_v1(const char *dir)
{
    char *path = mt_xasprintf("%s/v1.db", dir);
    mt_error err;
    mt_store *s = mt_store_open(path, MT_STORE_WRITE, &err);
    mt_store_build b = synthetic_build(5, "cc");
    int64_t object = s ? store_scaled_runs(s, &b, 40) : 0;
    mt_store_close(s);
    /* Version 2 changed only figures: put back version 1's table. */
    sqlite3 *db;
    sqlite3_open(path, &db);
    int rc = sqlite3_exec(db,
        "BEGIN; " DROP_VERSION_5_TABLES "CREATE TABLE figures_v1(\n"
        "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
        "  site_id INTEGER NOT NULL REFERENCES sites(id),\n"
        "  object_id INTEGER NOT NULL REFERENCES objects(id),\n"
        "  entries INTEGER NOT NULL,\n"
        "  instructions INTEGER NOT NULL,\n"
        "  memory_ops INTEGER NOT NULL,\n"
        "  measured_cycles REAL,\n"
        "  predicted_cycles REAL,\n"
        "  overhead_cycles REAL,\n"
        "  PRIMARY KEY(run_id, site_id)) WITHOUT ROWID;\n"
        "INSERT INTO figures_v1 SELECT run_id, site_id, object_id, entries, instructions, "
        "memory_ops, measured_cycles, predicted_cycles, overhead_cycles FROM figures;"
        "DROP TABLE figures; ALTER TABLE figures_v1 RENAME TO figures; "
        "PRAGMA user_version = 1; COMMIT", NULL, NULL, NULL);
    sqlite3_close(db);
    CHECK(object > 0 && rc == SQLITE_OK && query_is(path, "PRAGMA user_version", "1") &&
              query_is(path, "SELECT count(*) FROM pragma_table_info('figures') "
                             "WHERE name = 'run_block'", "0"),
          "migrate: a version-1 history with 40 runs made");
    s = mt_store_open(path, MT_STORE_READ, &err);
    CHECK(s != NULL, "migrate: a read-only open of version 1 succeeds (%s)", s ? "" : err.msg);
    CHECK(query_is(path, "PRAGMA user_version", "10") &&
              query_is(path, "SELECT count(*) FROM figures", "400") &&
              query_is(path, "SELECT count(*) FROM figures WHERE run_block <> run_id >> 5", "0") &&
              query_is(path, "SELECT sum(memory_ops) FROM figures",
                       "135300") && /* 3 (1 + ... + 10) (1 + ... + 40) */
              query_is(path, "SELECT count(*) FROM sqlite_master WHERE name = 'figures_by_run'", "1") &&
              query_is(path, "PRAGMA integrity_check", "ok"),
          "migrate: version 10, all 400 figures kept, blocked by run_id >> 5, indexed by run");
    CHECK(s && trend_is(s, object, 0, 1, 40), "migrate: trend of the migrated runs is exact");
    mt_store_close(s);
    s = mt_store_open(path, MT_STORE_WRITE, &err);
    mt_store_figures figs[10];
    mt_store_run r;
    fill_run(&r, figs, b.nsites, 41);
    CHECK(s && mt_store_add_run(s, &b, &r, &err) == 41 && trend_is(s, object, 0, 1, 41),
          "migrate: the migrated file takes run 41, and trend follows it");
    mt_store_close(s);
    free_build(&b);
    free(path);
}

/* A build of procedure "big" (a loop, then regions r1..rN at `addrs`). */
static mt_store_build region_build(const char *sha, uint32_t line_shift, const uint64_t *addrs,
                                   uint32_t nregions)
{
    mt_store_build b = {.path = mt_xstrdup("/tmp/regions")};
    snprintf(b.sha256, sizeof b.sha256, "%s", sha);
    b.sites = mt_xcalloc(8, sizeof *b.sites);
    mt_store_site p = {.procedure = mt_xstrdup("big"), .named = true, .file = mt_xstrdup("big.c"),
                       .line = 10 + line_shift, .proc_line = 10 + line_shift,
                       .address = 0x1000 + 0x40 * line_shift, .shape = 7};
    b.sites[b.nsites++] = p;
    for (uint32_t k = 1; k <= nregions; k++) {
        mt_store_site r = p;
        r.procedure = mt_xstrdup("big");
        r.file = mt_xstrdup("big.c");
        r.is_region = true;
        r.loop_path = mt_xasprintf("r%u", k);
        r.line = p.line + 10 * k;
        r.address = addrs[k - 1] + 0x40 * line_shift;
        r.shape = 100 + addrs[k - 1];
        b.sites[b.nsites++] = r;
    }
    return b;
}

static int64_t store_regions_run(mt_store *s, const mt_store_build *b, mt_error *err)
{
    mt_store_figures figs[8];
    mt_store_run r;
    fill_run(&r, figs, b->nsites, 1);
    return mt_store_add_run(s, b, &r, err);
}

/* Region sites stored with their kind; another partition of a build stored
 * before keeps the region numbers' objects; a rebuild finds them too. */
static void test_regions_stored(const char *dir)
{
    char *path = mt_xasprintf("%s/regions.db", dir);
    mt_error err;
    mt_store *s = mt_store_open(path, MT_STORE_WRITE, &err);
    const uint64_t four[] = {0x1000, 0x1100, 0x1200, 0x1300}, three[] = {0x1000, 0x1180, 0x1280};
    mt_store_build b1 = region_build("e1", 0, four, 4), b2 = region_build("e1", 0, three, 3);
    mt_store_build b3 = region_build("e3", 2, four, 4), b0 = region_build("e3", 2, four, 0);
    bool ok = s && store_regions_run(s, &b1, &err) == 1 && store_regions_run(s, &b2, &err) == 2 &&
              store_regions_run(s, &b0, &err) == 3 && store_regions_run(s, &b3, &err) == 4;
    CHECK(ok, "regions: four runs stored (%s)", ok ? "" : err.msg);
    mt_store_object_row *rows = NULL;
    size_t n = 0;
    bool kinds = s && mt_store_run_objects(s, 1, &rows, &n, &err) == 0 && n == 5;
    for (size_t i = 0; kinds && i < n; i++)
        kinds = rows[i].is_region == (rows[i].loop_path != NULL) && !rows[i].is_loop;
    mt_store_object_rows_free(rows, n);
    mt_store_close(s);
    CHECK(kinds, "regions: read back as regions, not loops");
    CHECK(query_is(path, "SELECT count(*) FROM objects WHERE kind = 'region'", "4"),
          "regions: stored as objects of kind 'region' (4: the 3-region partition reuses them)");
    CHECK(query_is(path, "SELECT count(*) FROM sites s JOIN programs p ON p.id = s.program_id "
                         "WHERE p.sha256 = 'e1' AND s.loop_path LIKE 'r%'", "6"),
          "regions: a second partition of the same build adds its new sites (4 + 2)");
    CHECK(query_is(path, "SELECT group_concat(n) FROM (SELECT count(DISTINCT f.run_id) AS n FROM figures f "
                         "JOIN sites s ON s.id = f.site_id WHERE s.loop_path LIKE 'r%' "
                         "GROUP BY f.object_id ORDER BY min(s.loop_path))", "3,3,3,2"),
          "regions: r1-r4 one object each over both partitions of a build and a rebuild stored "
          "first without regions (r1-r3 in 3 runs, r4 in 2)");
    CHECK(query_is(path, "SELECT count(*) FROM sites WHERE loop_path LIKE 'r%' AND matched = 'new'", "4"),
          "regions: only the first partition's regions are new");
    s = mt_store_open(path, MT_STORE_READ, &err);
    FILE *out = s ? tmpfile() : NULL;
    char csv[4096] = "";
    if (out && mt_store_export(s, &(mt_store_filter){0}, false, out, &err) == 0) {
        rewind(out);
        size_t len = fread(csv, 1, sizeof csv - 1, out);
        csv[len] = '\0';
    }
    if (out)
        fclose(out);
    mt_store_close(s);
    CHECK(strstr(csv, ",region,big,r1,") != NULL, "regions: exported with kind 'region'");
    free_build(&b1);
    free_build(&b2);
    free_build(&b3);
    free_build(&b0);
    free(path);
}

/* A library build of `nprocs` procedures (and their loops) named `name`. */
static mt_store_build library_build(size_t nprocs, const char *sha, const char *name)
{
    mt_store_build b = synthetic_build(nprocs, sha);
    free(b.path);
    b.path = mt_xasprintf("/usr/lib/%s", name);
    b.library = mt_xstrdup(name);
    return b;
}

/* A timed run of build exe with figures of every site of lib. */
static int64_t store_with_library(mt_store *s, const mt_store_build *exe, const mt_store_build *lib,
                                  mt_error *err)
{
    mt_store_figures *figs = mt_xcalloc(exe->nsites + 1, sizeof *figs);
    mt_store_figures *lib_figs = mt_xcalloc(lib->nsites + 1, sizeof *lib_figs);
    mt_store_run r;
    fill_run(&r, figs, exe->nsites, 1);
    mt_store_run lr;
    fill_run(&lr, lib_figs, lib->nsites, 7);
    mt_store_library_figures libs = {.build = lib, .figures = lib_figs, .nfigures = lib->nsites};
    r.libs = &libs;
    r.nlibs = 1;
    int64_t id = mt_store_add_run(s, exe, &r, err);
    free(figs);
    free(lib_figs);
    return id;
}

/* An MPI job's library objects per rank: stored with the library's sites,
 * read back by mt_store_run_ranks beside the executable's, each rank's
 * figures its own. */
static void test_library_rank_figures(const char *dir)
{
    char *path = mt_xasprintf("%s/libranks.db", dir);
    mt_error err;
    mt_store *s = mt_store_open(path, MT_STORE_WRITE, &err);
    mt_store_build exe = synthetic_build(2, "exe");
    mt_store_build lib = library_build(3, "lib1", "libx.so.1");
    mt_store_figures *figs = mt_xcalloc(exe.nsites + 1, sizeof *figs);
    mt_store_figures *lib_figs = mt_xcalloc(lib.nsites + 1, sizeof *lib_figs);
    mt_store_run r, lr;
    fill_run(&r, figs, exe.nsites, 1);
    fill_run(&lr, lib_figs, lib.nsites, 7);
    const mt_store_rank ranks[] = {{0, "hostA"}, {1, "hostB"}};
    /* the executable's site 0 and the library's site 2 in both ranks */
    mt_store_rank_figures exe_ranks[2], lib_ranks[2];
    for (int k = 0; k < 2; k++) {
        exe_ranks[k] = (mt_store_rank_figures){k, {.site = 0, .entries = 1, .memory_ops = 5,
                                                   .measured_cycles = 100 + k,
                                                   .predicted_cycles = 50,
                                                   .overhead_cycles = 50 + k}};
        lib_ranks[k] = (mt_store_rank_figures){k, {.site = 2, .entries = 6, .memory_ops = 7 + k,
                                                   .measured_cycles = 200 * (k + 1),
                                                   .predicted_cycles = 90 * (k + 1),
                                                   .overhead_cycles = 110 * (k + 1)}};
    }
    mt_store_library_figures libs = {.build = &lib, .figures = lib_figs, .nfigures = lib.nsites,
                                     .rank_figures = lib_ranks, .nrank_figures = 2};
    r.libs = &libs;
    r.nlibs = 1;
    r.ranks = ranks;
    r.nranks = 2;
    r.rank_figures = exe_ranks;
    r.nrank_figures = 2;
    int64_t id = s ? mt_store_add_run(s, &exe, &r, &err) : -1;
    CHECK(id == 1, "library ranks: the job stored (%s)", id == 1 ? "" : err.msg);
    CHECK(query_is(path, "SELECT group_concat(x, ',') FROM (SELECT rf.rank || ':' || "
                         "rf.measured_cycles AS x FROM rank_figures rf JOIN sites s ON "
                         "s.id = rf.site_id JOIN programs p ON p.id = s.program_id WHERE "
                         "p.name = 'libx.so.1' ORDER BY rf.rank)",
                   "0:200.0,1:400.0"),
          "library ranks: each rank's figures of the library's object, on the library's site");
    mt_store_rank_row *rows = NULL;
    size_t n = 0;
    bool read = s && mt_store_run_ranks(s, id, &rows, &n, &err) == 0;
    size_t of_lib = 0;
    for (size_t i = 0; read && i < n; i++)
        of_lib += rows[i].memory_ops == 7 + (uint64_t)rows[i].rank &&
                  rows[i].predicted_cycles == 90.0 * (rows[i].rank + 1);
    CHECK(read && n == 4 && of_lib == 2,
          "library ranks: read back beside the executable's, 4 rows, 2 the library's (%zu, %zu)",
          n, of_lib);
    mt_store_rank_rows_free(rows, n);
    mt_store_close(s);
    free(figs);
    free(lib_figs);
    free_build(&exe);
    free_build(&lib);
    free(path);
}

/* A run's library objects: the library a build of its own (named by the
 * library), its sites' figures the run's; a rebuilt library's objects are
 * the same objects; gc keeps a library build that figures name, and drops
 * one that none do. */
static void test_library_figures(const char *dir)
{
    char *path = mt_xasprintf("%s/libs.db", dir);
    mt_error err;
    mt_store *s = mt_store_open(path, MT_STORE_WRITE, &err);
    mt_store_build exe = synthetic_build(2, "exe");
    mt_store_build lib1 = library_build(3, "lib1", "libx.so.1");
    mt_store_build lib2 = library_build(3, "lib2", "libx.so.1");
    int64_t id1 = s ? store_with_library(s, &exe, &lib1, &err) : -1;
    int64_t id2 = id1 > 0 ? store_with_library(s, &exe, &lib2, &err) : -1;
    CHECK(id1 == 1 && id2 == 2, "libraries: two runs stored (%s)", id2 == 2 ? "" : err.msg);
    CHECK(query_is(path, "SELECT group_concat(name || ':' || sha256) FROM (SELECT * FROM programs "
                         "ORDER BY id)", "big:exe,libx.so.1:lib1,libx.so.1:lib2"),
          "libraries: each library build a program of its own, named by the library");
    CHECK(query_is(path, "SELECT group_concat(p.name) FROM runs r JOIN programs p ON "
                         "p.id = r.program_id", "big,big"),
          "libraries: the runs are the executable's");
    CHECK(query_is(path, "SELECT count(*) FROM figures f JOIN sites s ON s.id = f.site_id JOIN "
                         "programs p ON p.id = s.program_id WHERE f.run_id = 2 AND "
                         "p.name = 'libx.so.1' AND f.memory_ops % 7 = 0", "6"),
          "libraries: the run's figures of the library's 6 sites, the library's own");
    CHECK(query_is(path, "SELECT nobjects FROM runs WHERE id = 2", "10"),
          "libraries: nobjects counts the executable's 4 objects and the library's 6");
    CHECK(query_is(path, "SELECT count(DISTINCT f.object_id) FROM figures f JOIN sites s ON "
                         "s.id = f.site_id JOIN programs p ON p.id = s.program_id WHERE "
                         "p.name = 'libx.so.1'", "6"),
          "libraries: the rebuilt library's sites are the first build's objects");
    size_t removed = 0;
    bool gc = s && mt_store_gc(s, 0, 1, &removed, &err) == 0 && removed == 1;
    mt_store_close(s);
    CHECK(gc, "libraries: gc keeping the last run removed one (%s)", gc ? "" : err.msg);
    CHECK(query_is(path, "SELECT group_concat(sha256) FROM (SELECT p.sha256 FROM programs p "
                         "WHERE EXISTS (SELECT 1 FROM sites s WHERE s.program_id = p.id) "
                         "ORDER BY p.id)", "exe,lib2"),
          "libraries: gc kept the library build run 2 names, with its sites, and dropped the other");
    CHECK(query_is(path, "SELECT count(*) FROM programs", "2"),
          "libraries: the dropped library build's program row is gone too");
    free_build(&exe);
    free_build(&lib1);
    free_build(&lib2);
    free(path);
}

/* A version-2 file (objects could not be regions) becomes version 3 (then 4): the
 * objects table rebuilt with every object and reference kept. */
static void test_migration_from_v2(const char *dir)
{
    char *path = mt_xasprintf("%s/v2.db", dir);
    mt_error err;
    mt_store *s = mt_store_open(path, MT_STORE_WRITE, &err);
    mt_store_build b = synthetic_build(5, "v2");
    int64_t object = s ? store_scaled_runs(s, &b, 10) : 0;
    mt_store_close(s);
    sqlite3 *db;
    sqlite3_open(path, &db);
    int rc = sqlite3_exec(db,
        "BEGIN; " DROP_VERSION_5_TABLES "CREATE TABLE objects_v2(\n"
        "  id INTEGER PRIMARY KEY,\n"
        "  program_name TEXT NOT NULL,\n"
        "  kind TEXT NOT NULL CHECK(kind IN ('procedure', 'loop')));\n"
        "INSERT INTO objects_v2 SELECT * FROM objects; DROP TABLE objects; "
        "ALTER TABLE objects_v2 RENAME TO objects; PRAGMA user_version = 2; COMMIT",
        NULL, NULL, NULL);
    bool refused = sqlite3_exec(db, "INSERT INTO objects(program_name, kind) VALUES ('x', 'region')",
                                NULL, NULL, NULL) != SQLITE_OK;
    sqlite3_close(db);
    CHECK(object > 0 && rc == SQLITE_OK && refused && query_is(path, "PRAGMA user_version", "2"),
          "migrate: a version-2 history whose objects cannot be regions");
    s = mt_store_open(path, MT_STORE_WRITE, &err);
    CHECK(s != NULL && query_is(path, "PRAGMA user_version", "10") &&
              query_is(path, "SELECT count(*) FROM objects", "10") &&
              query_is(path, "SELECT count(*) FROM pragma_foreign_key_check", "0") &&
              query_is(path, "PRAGMA integrity_check", "ok") &&
              query_is(path, "SELECT sql LIKE '%region%' FROM sqlite_master WHERE name = 'objects'", "1"),
          "migrate: version 10 (through 3, 4, 5, 6, 7 and 8), every object kept, references intact (%s)",
          s ? "" : err.msg);
    CHECK(s && trend_is(s, object, 0, 1, 10), "migrate: trend of the migrated runs is exact");
    const uint64_t addrs[] = {0x2000, 0x2100};
    mt_store_build rb = region_build("v2r", 0, addrs, 2);
    CHECK(s && store_regions_run(s, &rb, &err) == 11 &&
              query_is(path, "SELECT count(*) FROM objects WHERE kind = 'region'", "2"),
          "migrate: the migrated file stores regions");
    mt_store_close(s);
    free_build(&rb);
    free_build(&b);
    free(path);
}

static bool same_bytes(const char *path, const char *want, size_t n)
{
    FILE *fp = fopen(path, "rb");
    char *got = mt_xcalloc(n + 16, 1);
    size_t len = fp ? fread(got, 1, n + 16, fp) : 0;
    if (fp)
        fclose(fp);
    bool ok = len == n && memcmp(got, want, n) == 0;
    free(got);
    return ok;
}

static void test_refused_files(const char *dir)
{
    mt_error err;
    /* A database of another application. */
    char *foreign = mt_xasprintf("%s/foreign.db", dir);
    sqlite3 *db;
    sqlite3_open(foreign, &db);
    sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES (1)", NULL, NULL, NULL);
    sqlite3_close(db);
    FILE *fp = fopen(foreign, "rb");
    char before[65536];
    size_t nbefore = fread(before, 1, sizeof before, fp);
    fclose(fp);
    mt_store *s = mt_store_open(foreign, MT_STORE_WRITE, &err);
    CHECK(!s && strstr(err.msg, "not an mtool history") && strstr(err.msg, foreign),
          "refuse: foreign SQLite file named as such (%s)", err.msg);
    CHECK(same_bytes(foreign, before, nbefore), "refuse: foreign file left byte-for-byte untouched");
    mt_store_close(s);

    /* Not SQLite at all. */
    char *junk = mt_xasprintf("%s/junk.db", dir);
    const char text[] = "this is a text file, not a database, long enough to have a header......"
                        "................................................................";
    fp = fopen(junk, "wb");
    fwrite(text, 1, sizeof text - 1, fp);
    fclose(fp);
    s = mt_store_open(junk, MT_STORE_WRITE, &err);
    CHECK(!s && strstr(err.msg, "damaged") && !strchr(err.msg, '\n'),
          "refuse: non-database file is one line saying damaged (%s)", err.msg);
    CHECK(same_bytes(junk, text, sizeof text - 1), "refuse: non-database file untouched");
    mt_store_close(s);

    /* Ours, but from a newer mtool. */
    char *newer = mt_xasprintf("%s/newer.db", dir);
    s = mt_store_open(newer, MT_STORE_WRITE, &err);
    mt_store_close(s);
    sqlite3_open(newer, &db);
    sqlite3_exec(db, "PRAGMA user_version=99", NULL, NULL, NULL);
    sqlite3_close(db);
    s = mt_store_open(newer, MT_STORE_READ, &err);
    CHECK(!s && strstr(err.msg, "newer"), "refuse: newer schema (%s)", err.msg);
    mt_store_close(s);
    free(foreign);
    free(junk);
    free(newer);
}

/* A child stores a run of `nprocs` procedures (and as many loops); the
 * parent kills it a random moment after it starts writing. */
static int store_and_get_killed(const char *path, size_t nprocs, unsigned delay_us,
                                const char *marker)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        mt_error err;
        mt_store *s = mt_store_open(path, MT_STORE_WRITE, &err);
        mt_store_build b = synthetic_build(nprocs, "bb");
        mt_store_figures *figs = mt_xcalloc(b.nsites, sizeof *figs);
        mt_store_run r;
        fill_run(&r, figs, b.nsites, 1);
        r.cwd = marker;
        if (write(fds[1], "w", 1) != 1)
            _exit(2);
        _exit(s && mt_store_add_run(s, &b, &r, &err) > 0 ? 0 : 1);
    }
    close(fds[1]);
    char c;
    ssize_t got = read(fds[0], &c, 1);
    close(fds[0]);
    usleep(delay_us);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    return got == 1 && WIFSIGNALED(status) ? 1 : 0; /* 1: killed mid-write */
}

static void test_kill_during_write(const char *dir)
{
    char *path = mt_xasprintf("%s/kill.db", dir);
    mt_error err;
    mt_store_build b = synthetic_build(3, "cc");
    mt_store_figures figs[6];
    mt_store_run r;
    int64_t first;
    mt_store *s = open_with_a_run(path, &b, figs, &r, &first, &err);
    CHECK(first == 1, "kill: a first run stored");
    mt_store_close(s);
    /* How long a whole store of that size takes, so every kill lands
     * between 10% and 90% of the way through the transaction. */
    char *full = mt_xasprintf("%s/full.db", dir);
    mt_store_build big = synthetic_build(50000, "dd");
    mt_store_figures *bigfigs = mt_xcalloc(big.nsites, sizeof *bigfigs);
    mt_store_run bigrun;
    fill_run(&bigrun, bigfigs, big.nsites, 1);
    s = mt_store_open(full, MT_STORE_WRITE, &err);
    double t0 = mt_now_seconds();
    bool stored = s && mt_store_add_run(s, &big, &bigrun, &err) == 1;
    double took = mt_now_seconds() - t0;
    mt_store_close(s);
    CHECK(stored && took > 0.02, "kill: a whole run of 100000 objects stores in %.0f ms", took * 1e3);
    free_build(&big);
    free(bigfigs);
    free(full);
    /* A writer that finished before its kill (the whole store ran faster
     * than the measured one, which a loaded machine may have slowed) halves
     * the delays after it: kills are counted, not tries. */
    enum { KILLS = 5, MAX_TRIES = 16 };
    int killed = 0, tries = 0;
    double scale = took * 1e6;
    bool each_ok = true;
    srand((unsigned)getpid());
    while (killed < KILLS && tries < MAX_TRIES) {
        unsigned delay = (unsigned)(scale * (0.1 + 0.5 * (double)rand() / RAND_MAX));
        char marker[32], *sql;
        snprintf(marker, sizeof marker, "child-%d", tries++);
        int k = store_and_get_killed(path, 50000, delay, marker);
        killed += k == 1;
        if (k != 1)
            scale /= 2;
        /* A writer killed before its commit leaves no trace; one that got to
         * finish (a slow parent) left its whole run. */
        sql = mt_xasprintf("SELECT count(*) FROM runs WHERE cwd = '%s'", marker);
        each_ok &= query_is(path, sql, k == 1 ? "0" : "1");
        free(sql);
    }
    CHECK(killed == KILLS, "kill: %d writers killed 10-60%% of the way through storing 100000 "
                           "objects, in %d tries", killed, tries);
    CHECK(each_ok, "kill: no killed writer's run is in the database, even partly");
    CHECK(query_is(path, "PRAGMA integrity_check", "ok"), "kill: integrity_check ok afterwards");
    CHECK(query_is(path, "SELECT count(*) FROM runs r WHERE nobjects <> (SELECT count(*) FROM "
                         "figures f WHERE f.run_id = r.id)", "0"),
          "kill: every stored run has all its figures");
    CHECK(query_is(path, "SELECT count(*) FROM programs p WHERE NOT EXISTS (SELECT 1 FROM runs "
                         "r WHERE r.program_id = p.id)", "0"), "kill: no orphan build left");
    s = mt_store_open(path, MT_STORE_WRITE, &err);
    CHECK(s && mt_store_add_run(s, &b, &r, &err) > 1, "kill: the database takes the next run");
    mt_store_close(s);
    free_build(&b);
    free(path);
}

/* A simulated run beside a counted one of the same build: its figures read
 * back exactly (levels the machine lacks as NO_COUNT, no counts), the run's
 * levels in order, and the object's trend holding both runs. */
static void test_simulated_run(const char *dir)
{
    char *path = mt_xasprintf("%s/sim.db", dir);
    mt_error err;
    mt_store_build b = synthetic_build(2, "cc");
    mt_store_figures figs[4];
    mt_store_run r;
    int64_t counted;
    mt_store *s = open_with_a_run(path, &b, figs, &r, &counted, &err);
    mt_store_sim_level levels[2] = {
        {.slot = 1, .size = 8192, .ways = 4, .line = 64, .replacement = "lru",
         .inclusion = "non-inclusive", .prefetch = "none", .write_allocate = true, .refs = 100,
         .misses = 10, .cause = {4, 5, 1}, .lines = 10, .bytes_used = 320},
        {.slot = 3, .size = 65536, .ways = 8, .line = 64, .replacement = "plru",
         .inclusion = "inclusive", .prefetch = "stride", .refs = 10, .misses = 4,
         .cause = {4, 0, 0}}};
    mt_store_sim_figures sf[2];
    for (uint32_t k = 0; k < 2; k++) {
        sf[k] = (mt_store_sim_figures){.site = k, .refs = 50 + k};
        for (int l = 0; l < MT_STORE_SIM_LEVELS; l++)
            for (int c = 0; c < MT_STORE_NCAUSES; c++)
                sf[k].misses[l][c] = l == 1 || l == 3 ? (uint64_t)(10 * l + c + k) : MT_STORE_NO_COUNT;
    }
    for (int f = 0; f < MT_STORE_NMP; f++) { /* site 0: distinct processors' figures; 1: none */
        sf[0].mp[f] = (uint64_t)(f + 1) * 7;
        sf[1].mp[f] = MT_STORE_NO_COUNT;
    }
    /* site 0: a TLB of one data level (no TLB2) and an ITLB, walk cycles
     * known; site 1: no TLB at all */
    sf[0].tlb = (mt_store_sim_tlb){{17, MT_STORE_NO_COUNT, 17, 5}, 17 * 31.5};
    sf[1].tlb = (mt_store_sim_tlb){{MT_STORE_NO_COUNT, MT_STORE_NO_COUNT, MT_STORE_NO_COUNT,
                                    MT_STORE_NO_COUNT}, NAN};
    mt_store_sim_tlb_level tlb_levels[2] = {{"TLB1", 64, 4, 4096, 90, 17},
                                            {"ITLB", 32, 32, 2097152, 12, 5}};
    mt_store_remedy rem[2] = {
        {.kind = "line", .text = "line of 32 bytes at every level",
         .saved = {.misses = {MT_STORE_NO_SAVING, -3, MT_STORE_NO_SAVING, 4, MT_STORE_NO_SAVING},
                   .conflict = 1, .coherence = 2, .sharing = 3, .remote = 5, .cycles = NAN}},
        {.kind = "pad_words", .text = "pad x: each 8-byte word on a 64-byte line of its own",
         .saved = {.misses = {MT_STORE_NO_SAVING, 6, MT_STORE_NO_SAVING, -1, MT_STORE_NO_SAVING},
                   .conflict = 0, .coherence = 12, .sharing = 6, .remote = -2, .cycles = 56}}};
    mt_store_problem prob[2] = {
        {.code = "worker", .data = "x", .misses = {MT_STORE_NO_COUNT, 8, MT_STORE_NO_COUNT, 1,
                                                  MT_STORE_NO_COUNT},
         .true_sharing = 1, .false_sharing = 6, .remote = 2, .cycles = 448, .remedy = 1,
         .saved = {.misses = {MT_STORE_NO_SAVING, 3, MT_STORE_NO_SAVING, 0, MT_STORE_NO_SAVING},
                   .coherence = 6, .sharing = 3, .remote = 1, .cycles = 108}},
        {.code = "main", .data = "y", .misses = {MT_STORE_NO_COUNT, 2, MT_STORE_NO_COUNT, 2,
                                                MT_STORE_NO_COUNT},
         .cycles = NAN, .remedy = -1}};
    mt_store_sim sim = {.machine = "D1=8K,4,64 L3=64K,8,64 (flags)", .levels = levels,
                        .nlevels = 2, .figures = sf, .nfigures = 2, .remedies = rem,
                        .nremedies = 2, .problems = prob, .nproblems = 2,
                        .tlb_levels = tlb_levels, .ntlb_levels = 2};
    r.tool = "sim";
    r.nfigures = 0;
    r.sim = &sim;
    int64_t simulated = s ? mt_store_add_run(s, &b, &r, &err) : -1;
    CHECK(counted == 1 && simulated == 2, "sim: a counted and a simulated run stored (%s)",
          simulated == 2 ? "" : err.msg);
    mt_store_close(s);
    s = mt_store_open(path, MT_STORE_READ, &err);
    mt_store_object_row *objs = NULL, *trend = NULL;
    mt_store_sim_level *back = NULL;
    size_t n = 0, nt = 0, nl = 0;
    bool ok = s && mt_store_run_objects(s, 2, &objs, &n, &err) == 0 && n == 2;
    for (size_t i = 0; ok && i < n; i++) {
        uint32_t k = objs[i].sim.refs == 51; /* site k had 50 + k references */
        ok &= objs[i].sim.present && objs[i].sim.last == 3 && objs[i].memory_ops == MT_STORE_NO_COUNT &&
              objs[i].instructions == MT_STORE_NO_COUNT && objs[i].entries == MT_STORE_NO_COUNT;
        for (int l = 0; l < MT_STORE_SIM_LEVELS; l++)
            ok &= objs[i].sim.misses[l][2] == sf[k].misses[l][2];
        for (int f = 0; f < MT_STORE_NMP; f++) {
            double v = mt_store_metric_value(&objs[i], (mt_store_metric){MT_METRIC_SIM_MP,
                                                                         (unsigned)f, -1});
            ok &= objs[i].sim.mp[f] == sf[k].mp[f] &&
                  (k ? isnan(v) : v == (double)sf[k].mp[f]);
        }
        for (unsigned f = 0; f <= MT_STORE_NTLB; f++) {
            double v = mt_store_metric_value(&objs[i], (mt_store_metric){MT_METRIC_SIM_TLB, f, -1});
            double want = f == MT_STORE_WALK_CYCLES ? sf[k].tlb.walk_cycles
                          : sf[k].tlb.misses[f] == MT_STORE_NO_COUNT ? NAN
                                                                    : (double)sf[k].tlb.misses[f];
            ok &= isnan(want) ? isnan(v) : v == want;
        }
        ok &= i == 0 || objs[i - 1].sim.refs >= objs[i].sim.refs;
    }
    CHECK(ok, "sim: the simulated run's objects read back exactly (the processors' and the TLB's "
              "figures, NULL ones as none), most references first");
    mt_store_sim_tlb_level *tb = NULL;
    size_t ntb = 0;
    CHECK(s && mt_store_sim_tlb_levels(s, 2, &tb, &ntb, &err) == 0 && ntb == 2 &&
              !memcmp(tb, tlb_levels, sizeof tlb_levels) &&
              mt_store_tlb_figure_of("walk_cycles") == MT_STORE_WALK_CYCLES &&
              mt_store_tlb_figure_of("page_walks") == MT_STORE_PAGE_WALKS &&
              mt_store_tlb_figure_of("tlb3_misses") < 0,
          "sim: the TLB levels read back in order; the TLB metrics by name");
    free(tb);
    mt_store_remedy *rb = NULL;
    mt_store_problem *pb = NULL;
    size_t nrb = 0, npb = 0;
    ok = s && mt_store_sim_whatif(s, 2, &rb, &nrb, &pb, &npb, &err) == 0 && nrb == 2 && npb == 2;
    for (size_t i = 0; ok && i < 2; i++) {
        ok &= !strcmp(rb[i].kind, rem[i].kind) && !strcmp(rb[i].text, rem[i].text) &&
              !memcmp(rb[i].saved.misses, rem[i].saved.misses, sizeof rem[i].saved.misses) &&
              rb[i].saved.conflict == rem[i].saved.conflict &&
              rb[i].saved.coherence == rem[i].saved.coherence &&
              rb[i].saved.sharing == rem[i].saved.sharing &&
              rb[i].saved.remote == rem[i].saved.remote &&
              (isnan(rem[i].saved.cycles) ? isnan(rb[i].saved.cycles)
                                          : rb[i].saved.cycles == rem[i].saved.cycles);
        ok &= !strcmp(pb[i].code, prob[i].code) && !strcmp(pb[i].data, prob[i].data) &&
              !memcmp(pb[i].misses, prob[i].misses, sizeof prob[i].misses) &&
              pb[i].true_sharing == prob[i].true_sharing &&
              pb[i].false_sharing == prob[i].false_sharing && pb[i].remote == prob[i].remote &&
              pb[i].remedy == prob[i].remedy;
    }
    ok &= ok && pb[0].cycles == 448 && isnan(pb[1].cycles) && pb[0].saved.cycles == 108 &&
          pb[0].saved.misses[1] == 3 && pb[0].saved.misses[0] == MT_STORE_NO_SAVING &&
          pb[0].saved.coherence == 6 && pb[0].saved.remote == 1;
    CHECK(ok, "sim: the what-if remedies and problems read back exactly, in order");
    mt_store_whatif_free(rb, nrb, pb, npb);
    CHECK(s && mt_store_sim_whatif(s, 1, &rb, &nrb, &pb, &npb, &err) == 0 && nrb == 0 && npb == 0,
          "sim: a run without --what-if has no remedy");
    mt_store_whatif_free(rb, nrb, pb, npb);
    CHECK(s && mt_store_sim_levels(s, 2, &back, &nl, &err) == 0 && nl == 2 && back[0].slot == 1 &&
              back[1].slot == 3 && !strcmp(back[1].inclusion, "inclusive") &&
              !strcmp(back[1].prefetch, "stride") && back[0].bytes_used == 320 &&
              back[0].cause[MT_STORE_CAPACITY] == 5 && back[0].write_allocate &&
              !back[1].write_allocate,
          "sim: the machine's levels read back in order");
    CHECK(s && mt_store_trend(s, objs ? objs[0].object : 0, 0, &trend, &nt, &err) == 0 && nt == 2 &&
              !trend[0].sim.present && trend[0].run == 1 && trend[1].sim.present && trend[1].run == 2,
          "sim: the trend of an object holds its counted and its simulated run, oldest first");
    free(back);
    CHECK(s && mt_store_sim_levels(s, 1, &back, &nl, &err) == 0 && nl == 0,
          "sim: a counted run has no simulated level");
    mt_store_object_rows_free(objs, n);
    mt_store_object_rows_free(trend, nt);
    free(back);
    mt_store_close(s);
    free_build(&b);
    free(path);
}

/* A code object's simulated figures with `refs` references and refs / 10
 * + cause misses at D1, no other level, processor or TLB. */
static mt_store_sim_figures d1_figures(uint32_t site, uint64_t refs)
{
    mt_store_sim_figures f = {.site = site, .refs = refs, .tlb.walk_cycles = NAN};
    for (int l = 0; l < MT_STORE_SIM_LEVELS; l++) {
        for (int c = 0; c < MT_STORE_NCAUSES; c++)
            f.misses[l][c] = l == 1 ? refs / 10 + (uint64_t)c : MT_STORE_NO_COUNT;
        f.lines[l] = f.bytes_used[l] = MT_STORE_NO_COUNT;
    }
    for (int k = 0; k < MT_STORE_NMP; k++)
        f.mp[k] = MT_STORE_NO_COUNT;
    for (int k = 0; k < MT_STORE_NTLB; k++)
        f.tlb.misses[k] = MT_STORE_NO_COUNT;
    return f;
}

/* A simulated run's traced library code objects (mtool sim -- BIN through
 * its libraries): rows naming the library build's sites, read back with
 * the run's objects, counted in nobjects, and an object's trend found by
 * its library site's name. */
static void test_library_sim_figures(const char *dir)
{
    char *path = mt_xasprintf("%s/libsim.db", dir);
    mt_error err;
    mt_store *s = mt_store_open(path, MT_STORE_WRITE, &err);
    mt_store_build exe = synthetic_build(2, "exe");
    mt_store_build lib = library_build(3, "lib", "libx.so.1");
    for (size_t k = 2; k < 4; k++) { /* a library's sites are named LIB:PROCEDURE */
        free(lib.sites[k].procedure);
        lib.sites[k].procedure = mt_xstrdup("libx.so.1:chase");
    }
    mt_store_sim_level level = {.slot = 1, .size = 8192, .ways = 4, .line = 64,
                                .replacement = "lru", .inclusion = "non-inclusive",
                                .prefetch = "none", .write_allocate = true, .refs = 300,
                                .misses = 30, .cause = {10, 10, 10}};
    mt_store_sim_figures exe_sf = d1_figures(0, 40), lib_sf[2] = {d1_figures(1, 70),
                                                                  d1_figures(2, 190)};
    mt_store_sim sim = {.machine = "D1=8K,4,64 (flags)", .levels = &level, .nlevels = 1,
                        .figures = &exe_sf, .nfigures = 1};
    mt_store_run r;
    fill_run(&r, NULL, 0, 1);
    r.tool = "sim";
    r.sim = &sim;
    mt_store_library_figures libs = {.build = &lib, .sim_figures = lib_sf, .nsim_figures = 2};
    r.libs = &libs;
    r.nlibs = 1;
    int64_t id = s ? mt_store_add_run(s, &exe, &r, &err) : -1;
    mt_store_close(s);
    CHECK(id == 1, "library sim: the run stored (%s)", id == 1 ? "" : err.msg);
    CHECK(query_is(path, "SELECT group_concat(p.name || '/' || f.refs) FROM (SELECT * FROM "
                         "sim_figures ORDER BY refs) f JOIN sites s ON s.id = f.site_id JOIN "
                         "programs p ON p.id = s.program_id WHERE f.run_id = 1",
                   "big/40,libx.so.1/70,libx.so.1/190"),
          "library sim: the library's rows name its own build's sites");
    CHECK(query_is(path, "SELECT nobjects FROM runs WHERE id = 1", "3"),
          "library sim: nobjects counts the executable's object and the library's 2");
    s = mt_store_open(path, MT_STORE_READ, &err);
    mt_store_object_row *objs = NULL, *trend = NULL;
    size_t n = 0, nt = 0;
    int64_t object = 0;
    bool ok = s && mt_store_run_objects(s, 1, &objs, &n, &err) == 0 && n == 3;
    for (size_t i = 0; ok && i < n; i++)
        ok = objs[i].sim.present && objs[i].sim.misses[1][2] == objs[i].sim.refs / 10 + 2;
    CHECK(ok, "library sim: the run's 3 code objects read back with their misses");
    ok = s && mt_store_resolve_object(s, "libx.so.1:chase", NULL, &object, &err) == 0 &&
         mt_store_trend(s, object, 0, &trend, &nt, &err) == 0 && nt == 1 &&
         trend[0].sim.refs == 190;
    CHECK(ok, "library sim: trend of libx.so.1:chase has its 190 references (%s)",
          ok ? "" : err.msg);
    mt_store_object_rows_free(objs, n);
    mt_store_object_rows_free(trend, nt);
    mt_store_close(s);
    free_build(&exe);
    free_build(&lib);
    free(path);
}

int main(void)
{
    char tmpl[] = "/tmp/mtool-test-store.XXXXXX";
    char *dir = mkdtemp(tmpl);
    if (!dir)
        return 1;
    test_matcher();
    test_matcher_regions();
    test_round_trip(dir);
    test_simulated_run(dir);
    test_regions_stored(dir);
    test_library_figures(dir);
    test_library_sim_figures(dir);
    test_library_rank_figures(dir);
    test_migration_from_v2(dir);
    test_migration_from_v6(dir);
    test_migration_from_v7(dir);
    test_migration_from_v9(dir);
    test_same_build_again(dir);
    test_trend_across_blocks(dir);
    test_migration_from_v1(dir);
    test_refused_files(dir);
    test_kill_during_write(dir);
    char *rm = mt_xasprintf("rm -rf '%s'", dir);
    if (system(rm) != 0)
        printf("# could not remove %s\n", dir);
    free(rm);
    return unit_finish();
}
