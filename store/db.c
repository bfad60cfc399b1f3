/* store/db.c — opening the history: where it lives, refusing files that are
 * not ours, WAL mode, schema creation and migrations (docs/HISTORY.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* "mtoh" in PRAGMA application_id: an mtool history, told apart from any
 * other SQLite file before anything is written to it. */
#define MT_STORE_APPLICATION_ID 0x6d746f68

/* A level slot's columns in sim_figures: misses by cause (NULL when the
 * run's machine has no such level), then line use (lines brought in and
 * the bytes of them used; NULL until the simulator attributes it to the
 * object). */
#define SIM_SLOT_COLUMNS(l)                                                                 \
    "  " l "_cold INTEGER, " l "_capacity INTEGER, " l "_conflict INTEGER, " l "_lines INTEGER, " \
    l "_bytes_used INTEGER,\n"

/* What a what-if remedy saves (a whole run's, or a problem's by its
 * proposed remedy): misses per level slot, every cause (NULL without the
 * level), conflict and coherence misses over the levels, sharing misses,
 * remote references, stall cycles (NULL without latencies); negative: more. */
#define SAVED_COLUMNS                                                                       \
    "  i1_saved INTEGER, d1_saved INTEGER, l2_saved INTEGER, l3_saved INTEGER,\n"           \
    "  l4_saved INTEGER, conflict_saved INTEGER, coherence_saved INTEGER,\n"               \
    "  sharing_saved INTEGER, remote_saved INTEGER, cycles_saved REAL,\n"

/* migrations[v] brings schema version v to v + 1.  Never edit a released
 * entry: append a new one and bump MT_STORE_SCHEMA_VERSION. */
static const char *const migrations[MT_STORE_SCHEMA_VERSION] = {
    /* 0 -> 1: the first schema. */
    "CREATE TABLE programs(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  name TEXT NOT NULL,\n"
    "  path TEXT NOT NULL,\n"
    "  build_id TEXT,\n"
    "  sha256 TEXT NOT NULL UNIQUE,\n"
    "  first_stored REAL NOT NULL);\n"
    "CREATE INDEX programs_by_name ON programs(name, id);\n"
    "CREATE TABLE objects(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  program_name TEXT NOT NULL,\n"
    "  kind TEXT NOT NULL CHECK(kind IN ('procedure', 'loop')));\n"
    "CREATE TABLE sites(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  program_id INTEGER NOT NULL REFERENCES programs(id),\n"
    "  object_id INTEGER NOT NULL REFERENCES objects(id),\n"
    "  procedure TEXT NOT NULL,\n"
    "  named INTEGER NOT NULL,\n"
    "  loop_path TEXT,\n"
    "  depth INTEGER NOT NULL,\n"
    "  file TEXT,\n"
    "  line INTEGER NOT NULL,\n"
    "  proc_line INTEGER NOT NULL,\n"
    "  address INTEGER NOT NULL,\n"
    "  shape INTEGER NOT NULL,\n"
    "  matched TEXT NOT NULL,\n"
    "  UNIQUE(program_id, address, loop_path));\n"
    "CREATE INDEX sites_by_object ON sites(object_id, program_id);\n"
    "CREATE INDEX sites_by_name ON sites(procedure, loop_path);\n"
    "CREATE TABLE runs(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  program_id INTEGER NOT NULL REFERENCES programs(id),\n"
    "  tool TEXT NOT NULL,\n"
    "  finished REAL NOT NULL,\n"
    "  command_line TEXT NOT NULL,\n"
    "  arguments TEXT NOT NULL,\n"
    "  cwd TEXT NOT NULL,\n"
    "  machine TEXT NOT NULL,\n"
    "  mtool_version TEXT NOT NULL,\n"
    "  ran INTEGER NOT NULL,\n"
    "  exit_status INTEGER,\n"
    "  user_s REAL, sys_s REAL, wall_s REAL,\n"
    "  base_user_s REAL, base_sys_s REAL, base_wall_s REAL,\n"
    "  memory_ops INTEGER NOT NULL,\n"
    "  instructions INTEGER NOT NULL,\n"
    "  nobjects INTEGER NOT NULL);\n"
    "CREATE INDEX runs_by_program ON runs(program_id, id);\n"
    "CREATE INDEX runs_by_time ON runs(finished);\n"
    "CREATE TABLE figures(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
    "  site_id INTEGER NOT NULL REFERENCES sites(id),\n"
    "  object_id INTEGER NOT NULL REFERENCES objects(id),\n"
    "  entries INTEGER NOT NULL,\n"
    "  instructions INTEGER NOT NULL,\n"
    "  memory_ops INTEGER NOT NULL,\n"
    "  measured_cycles REAL,\n"
    "  predicted_cycles REAL,\n"
    "  overhead_cycles REAL,\n"
    "  PRIMARY KEY(run_id, site_id)) WITHOUT ROWID;\n",
    /* 1 -> 2: figures clustered by block of runs, then object, so `trend`
     * reads one short range per block instead of one page per run, while a
     * store still dirties only the current block's pages (store/internal.h,
     * MT_STORE_RUN_BLOCK_BITS); figures_by_run keeps lookups by run (show,
     * diff, export, ON DELETE CASCADE, users' SQL) indexed at the cost of
     * one appended entry per figure. */
    "CREATE TABLE figures_v2(\n"
    "  run_block INTEGER NOT NULL,\n"
    "  object_id INTEGER NOT NULL REFERENCES objects(id),\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
    "  site_id INTEGER NOT NULL REFERENCES sites(id),\n"
    "  entries INTEGER NOT NULL,\n"
    "  instructions INTEGER NOT NULL,\n"
    "  memory_ops INTEGER NOT NULL,\n"
    "  measured_cycles REAL,\n"
    "  predicted_cycles REAL,\n"
    "  overhead_cycles REAL,\n"
    "  CHECK(run_block = run_id >> 5),\n"
    "  PRIMARY KEY(run_block, object_id, run_id, site_id)) WITHOUT ROWID;\n"
    "INSERT INTO figures_v2 SELECT run_id >> 5, object_id, run_id, site_id, entries, instructions, "
    "memory_ops, measured_cycles, predicted_cycles, overhead_cycles FROM figures "
    "ORDER BY run_id >> 5, object_id, run_id, site_id;\n"
    "DROP TABLE figures;\n"
    "ALTER TABLE figures_v2 RENAME TO figures;\n"
    "CREATE INDEX figures_by_run ON figures(run_id, site_id);\n",
    /* 2 -> 3: objects may be regions (pass 2 times large loop-free procedures
     * in pieces; their sites have loop paths "r1", "r2", ...).  SQLite cannot
     * change a CHECK in place: the table is rebuilt, ids kept (foreign keys
     * are off while migrating, mt_store_open). */
    "CREATE TABLE objects_v3(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  program_name TEXT NOT NULL,\n"
    "  kind TEXT NOT NULL CHECK(kind IN ('procedure', 'loop', 'region')));\n"
    "INSERT INTO objects_v3(id, program_name, kind) SELECT id, program_name, kind FROM objects;\n"
    "DROP TABLE objects;\n"
    "ALTER TABLE objects_v3 RENAME TO objects;\n",
    /* 3 -> 4: one definition of a loop's entries, times control entered it
     * from outside (analyzer: mt_loop_entries).  `count` stored a loop's
     * header executions as its entries: they move to the new column
     * `iterations` and the entries of those rows become unknown (NULL: pass 1
     * kept no block counts to compute them from), so no command compares the
     * two meanings.  `time` and `run` stored the timer's entries from outside
     * (the same meaning), procedures and regions their entries: kept.
     * Dropping NOT NULL means rebuilding the table, in the same order. */
    "CREATE TABLE figures_v4(\n"
    "  run_block INTEGER NOT NULL,\n"
    "  object_id INTEGER NOT NULL REFERENCES objects(id),\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
    "  site_id INTEGER NOT NULL REFERENCES sites(id),\n"
    "  entries INTEGER,\n"
    "  iterations INTEGER,\n"
    "  instructions INTEGER NOT NULL,\n"
    "  memory_ops INTEGER NOT NULL,\n"
    "  measured_cycles REAL,\n"
    "  predicted_cycles REAL,\n"
    "  overhead_cycles REAL,\n"
    "  CHECK(run_block = run_id >> 5),\n"
    "  PRIMARY KEY(run_block, object_id, run_id, site_id)) WITHOUT ROWID;\n"
    "INSERT INTO figures_v4 SELECT f.run_block, f.object_id, f.run_id, f.site_id, "
    "CASE WHEN r.tool = 'count' AND o.kind = 'loop' THEN NULL ELSE f.entries END, "
    "CASE WHEN r.tool = 'count' AND o.kind = 'loop' THEN f.entries END, f.instructions, "
    "f.memory_ops, f.measured_cycles, f.predicted_cycles, f.overhead_cycles "
    "FROM figures f LEFT JOIN runs r ON r.id = f.run_id LEFT JOIN objects o ON o.id = f.object_id "
    "ORDER BY f.run_block, f.object_id, f.run_id, f.site_id;\n"
    "DROP TABLE figures;\n"
    "ALTER TABLE figures_v4 RENAME TO figures;\n"
    "CREATE INDEX figures_by_run ON figures(run_id, site_id);\n",
    /* 4 -> 5: simulated runs (`mtool sim`).  Their figures are not counts,
     * so they get tables of their own instead of NULLs in `figures` (whose
     * NOT NULL counts would mean rebuilding it, 16-19 s at 10,000 runs):
     * sim_runs (the machine summarised), sim_levels (each level's
     * description and the run's totals there), sim_figures (per object:
     * references, misses per level slot by cause, line use), clustered as
     * figures is so `trend` reads one range per block of runs.  Data
     * objects (issue 15) will be objects of kind 'data' with a data_sites
     * row per build, their sim_figures rows naming a data site instead of
     * a site: the objects CHECK is widened now (a rebuild, ids kept; the
     * table is small). */
    "CREATE TABLE objects_v5(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  program_name TEXT NOT NULL,\n"
    "  kind TEXT NOT NULL CHECK(kind IN ('procedure', 'loop', 'region', 'data')));\n"
    "INSERT INTO objects_v5(id, program_name, kind) SELECT id, program_name, kind FROM objects;\n"
    "DROP TABLE objects;\n"
    "ALTER TABLE objects_v5 RENAME TO objects;\n"
    "CREATE TABLE data_sites(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  program_id INTEGER NOT NULL REFERENCES programs(id),\n"
    "  object_id INTEGER NOT NULL REFERENCES objects(id),\n"
    "  name TEXT NOT NULL,\n"
    "  kind TEXT NOT NULL,\n"
    "  file TEXT,\n"
    "  line INTEGER NOT NULL,\n"
    "  address INTEGER,\n"
    "  size INTEGER,\n"
    "  UNIQUE(program_id, name));\n"
    "CREATE TABLE sim_runs(\n"
    "  run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,\n"
    "  machine TEXT NOT NULL,\n"
    "  last_level TEXT NOT NULL);\n"
    "CREATE TABLE sim_levels(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
    "  position INTEGER NOT NULL,\n"
    "  level TEXT NOT NULL,\n"
    "  size INTEGER NOT NULL, ways INTEGER NOT NULL, line INTEGER NOT NULL,\n"
    "  replacement TEXT NOT NULL, inclusion TEXT NOT NULL, write_allocate INTEGER NOT NULL,\n"
    "  prefetch TEXT NOT NULL,\n"
    "  refs INTEGER NOT NULL, misses INTEGER NOT NULL, cold INTEGER NOT NULL,\n"
    "  capacity INTEGER NOT NULL, conflict INTEGER NOT NULL, evictions INTEGER NOT NULL,\n"
    "  writebacks INTEGER NOT NULL, lines INTEGER NOT NULL, bytes_used INTEGER NOT NULL,\n"
    "  PRIMARY KEY(run_id, position)) WITHOUT ROWID;\n"
    "CREATE TABLE sim_figures(\n"
    "  run_block INTEGER NOT NULL,\n"
    "  object_id INTEGER NOT NULL REFERENCES objects(id),\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
    "  site_id INTEGER REFERENCES sites(id),\n"
    "  data_site_id INTEGER REFERENCES data_sites(id),\n"
    "  refs INTEGER NOT NULL,\n"
    SIM_SLOT_COLUMNS("i1") SIM_SLOT_COLUMNS("d1") SIM_SLOT_COLUMNS("l2") SIM_SLOT_COLUMNS("l3")
    SIM_SLOT_COLUMNS("l4")
    "  CHECK(run_block = run_id >> 5),\n"
    "  CHECK((site_id IS NULL) <> (data_site_id IS NULL)),\n"
    "  PRIMARY KEY(run_block, object_id, run_id)) WITHOUT ROWID;\n"
    "CREATE INDEX sim_figures_by_run ON sim_figures(run_id);\n",
    /* 5 -> 6: per object of a simulated run with cpus > 1 its coherence
     * misses and events and its references by where served beyond its
     * node's caches (NULL with one CPU and in rows stored before); a run's
     * what-if remedies with their predicted savings, and its top problems
     * with the remedy proposed for each.  Columns added, no row rewritten. */
    "ALTER TABLE sim_figures ADD COLUMN true_sharing INTEGER;\n"
    "ALTER TABLE sim_figures ADD COLUMN false_sharing INTEGER;\n"
    "ALTER TABLE sim_figures ADD COLUMN invalidations INTEGER;\n"
    "ALTER TABLE sim_figures ADD COLUMN interventions INTEGER;\n"
    "ALTER TABLE sim_figures ADD COLUMN upgrades INTEGER;\n"
    "ALTER TABLE sim_figures ADD COLUMN local_refs INTEGER;\n"
    "ALTER TABLE sim_figures ADD COLUMN remote_refs INTEGER;\n"
    "ALTER TABLE sim_figures ADD COLUMN remote_dirty_refs INTEGER;\n"
    "ALTER TABLE sim_figures ADD COLUMN three_hop_refs INTEGER;\n"
    "CREATE TABLE sim_remedies(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
    "  position INTEGER NOT NULL,\n"
    "  kind TEXT NOT NULL,\n"
    "  remedy TEXT NOT NULL,\n"
    SAVED_COLUMNS
    "  PRIMARY KEY(run_id, position)) WITHOUT ROWID;\n"
    "CREATE TABLE sim_problems(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
    "  position INTEGER NOT NULL,\n"
    "  code TEXT NOT NULL,\n"
    "  data TEXT NOT NULL,\n"
    "  i1_misses INTEGER, d1_misses INTEGER, l2_misses INTEGER, l3_misses INTEGER,\n"
    "  l4_misses INTEGER,\n"
    "  true_sharing INTEGER NOT NULL, false_sharing INTEGER NOT NULL, remote INTEGER NOT NULL,\n"
    "  cycles REAL,\n"
    "  remedy INTEGER,\n"
    SAVED_COLUMNS
    "  PRIMARY KEY(run_id, position)) WITHOUT ROWID;\n",
    /* 6 -> 7: where a run's files are and whether they still hold it
     * (`mtool report RUN`): rundir, the run directory's absolute path;
     * rundir_stamp, the SHA-256 of its pass2.tsv as the run left it (a
     * later pass 2 there rewrites the file); a timed run's program
     * figures (pass2.tsv's: predicted, measured and the timed objects'
     * overhead cycles; the memory operations inside the outermost timed
     * objects), the page's overview when the run directory is gone.  NULL
     * in older runs and where a run has none.  Added columns: no table is
     * rebuilt. */
    "ALTER TABLE runs ADD COLUMN rundir TEXT;\n"
    "ALTER TABLE runs ADD COLUMN rundir_stamp TEXT;\n"
    "ALTER TABLE runs ADD COLUMN predicted_cycles REAL;\n"
    "ALTER TABLE runs ADD COLUMN measured_cycles REAL;\n"
    "ALTER TABLE runs ADD COLUMN objects_overhead_cycles REAL;\n"
    "ALTER TABLE runs ADD COLUMN memory_ops_in_objects INTEGER;\n"
    "CREATE INDEX runs_by_stamp ON runs(rundir_stamp) WHERE rundir_stamp IS NOT NULL;\n",
    /* 7 -> 8: a simulated run of cpus > 1, per thread (sim.h's per-thread
     * view): the CPU it ran on, its references, its misses per level slot
     * (every cause, coherence too; NULL: the machine has no such level),
     * its coherence misses and events and its references served past its
     * node's caches (sim_figures' names; invalidations: those its writes
     * sent), and the stall cycles of where they were served (NULL without
     * latencies); position: sim.h's order (of first reference).  A new
     * table: no row of an older run. */
    "CREATE TABLE sim_threads(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
    "  position INTEGER NOT NULL,\n"
    "  thread INTEGER NOT NULL,\n"
    "  cpu INTEGER NOT NULL,\n"
    "  refs INTEGER NOT NULL,\n"
    "  i1_misses INTEGER, d1_misses INTEGER, l2_misses INTEGER, l3_misses INTEGER,\n"
    "  l4_misses INTEGER,\n"
    "  true_sharing INTEGER NOT NULL, false_sharing INTEGER NOT NULL,\n"
    "  invalidations INTEGER NOT NULL, interventions INTEGER NOT NULL,\n"
    "  upgrades INTEGER NOT NULL, local_refs INTEGER NOT NULL, remote_refs INTEGER NOT NULL,\n"
    "  remote_dirty_refs INTEGER NOT NULL, three_hop_refs INTEGER NOT NULL,\n"
    "  stall_cycles REAL,\n"
    "  PRIMARY KEY(run_id, position)) WITHOUT ROWID;\n",
    /* 8 -> 9: MPI jobs (docs/REPORT.md, "MPI jobs"): a job is one run (its
     * figures the whole job's, in `figures`); run_ranks names each rank's
     * host, rank_figures holds each timed object's figures per rank (NULL
     * where a rank has none).  New tables only: nothing is rebuilt. */
    "CREATE TABLE run_ranks(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
    "  rank INTEGER NOT NULL,\n"
    "  host TEXT,\n"
    "  PRIMARY KEY(run_id, rank)) WITHOUT ROWID;\n"
    "CREATE TABLE rank_figures(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
    "  site_id INTEGER NOT NULL REFERENCES sites(id),\n"
    "  rank INTEGER NOT NULL,\n"
    "  object_id INTEGER NOT NULL REFERENCES objects(id),\n"
    "  entries INTEGER,\n"
    "  memory_ops INTEGER,\n"
    "  measured_cycles REAL,\n"
    "  predicted_cycles REAL,\n"
    "  overhead_cycles REAL,\n"
    "  PRIMARY KEY(run_id, site_id, rank)) WITHOUT ROWID;\n",
    /* 9 -> 10: the simulated TLBs (docs/SIMULATOR.md, "The TLB"): per code
     * and data object its data TLB misses per level, page walks, ITLB
     * misses (NULL: no such level, a data object's ITLB, older runs) and
     * the walks' cycles in the stall estimate (NULL without a machine
     * profile); sim_tlb_levels, the run's TLB levels and totals.  Added
     * columns and a new table: nothing is rebuilt. */
    "ALTER TABLE sim_figures ADD COLUMN tlb1_misses INTEGER;\n"
    "ALTER TABLE sim_figures ADD COLUMN tlb2_misses INTEGER;\n"
    "ALTER TABLE sim_figures ADD COLUMN page_walks INTEGER;\n"
    "ALTER TABLE sim_figures ADD COLUMN itlb_misses INTEGER;\n"
    "ALTER TABLE sim_figures ADD COLUMN walk_cycles REAL;\n"
    "CREATE TABLE sim_tlb_levels(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
    "  position INTEGER NOT NULL,\n"
    "  level TEXT NOT NULL,\n"
    "  entries INTEGER NOT NULL,\n"
    "  ways INTEGER NOT NULL,\n"
    "  page INTEGER NOT NULL,\n"
    "  refs INTEGER NOT NULL,\n"
    "  misses INTEGER NOT NULL,\n"
    "  PRIMARY KEY(run_id, position)) WITHOUT ROWID;\n",
};

char *mt_store_default_path(void)
{
    const char *env = getenv("MTOOL_HISTORY");
    if (env && env[0])
        return mt_xstrdup(env);
    const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0] == '/')
        return mt_xasprintf("%s/mtool/history.db", xdg);
    return mt_xasprintf("%s/.local/share/mtool/history.db", home && home[0] ? home : "/tmp");
}

const char *mt_store_path(const mt_store *s) { return s->path; }

/* The one wording for every kind of damage: a file SQLite cannot read as a
 * database, a header no SQLite writes, pages that fail a check. */
static int damaged(const char *path, mt_error *err, const char *why)
{
    mt_error_set(err, "%s: damaged history database (%s); left untouched, move it aside to start "
                      "a new one", path, why);
    return -1;
}

int mt_store_fail(mt_store *s, mt_error *err, const char *what)
{
    int code = sqlite3_extended_errcode(s->db) & 0xff;
    const char *msg = sqlite3_errmsg(s->db);
    /* SQLite says "unsupported file format" (SQLITE_ERROR) of some garbled
     * headers: check_file saw them, the wording is the same as any damage's. */
    bool header = s->bad_header && code != SQLITE_BUSY && code != SQLITE_LOCKED;
    if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB || header) {
        s->refused = true;
        char why[256];
        snprintf(why, sizeof why, "%s%s while %s", header ? "its header is not SQLite's: " : "",
                 msg, what);
        return damaged(s->path, err, why);
    }
    mt_error_set(err, "%s: %s: %s", s->path, what, msg);
    return -1;
}

int mt_store_prepare(mt_store *s, const char *sql, sqlite3_stmt **st, mt_error *err)
{
    if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK)
        return mt_store_fail(s, err, "preparing a query");
    return 0;
}

int mt_store_exec(mt_store *s, const char *sql, mt_error *err)
{
    if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return mt_store_fail(s, err, "writing");
    return 0;
}

char *mt_store_col_text(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t ? mt_xstrdup((const char *)t) : NULL;
}

double mt_store_col_real(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? NAN : sqlite3_column_double(st, col);
}

uint64_t mt_store_col_count(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? MT_STORE_NO_COUNT
                                                       : (uint64_t)sqlite3_column_int64(st, col);
}

void mt_store_bind_count(sqlite3_stmt *st, int col, uint64_t v)
{
    if (v == MT_STORE_NO_COUNT)
        sqlite3_bind_null(st, col);
    else
        sqlite3_bind_int64(st, col, (int64_t)v);
}

void mt_store_bind_real(sqlite3_stmt *st, int col, double v)
{
    if (isnan(v))
        sqlite3_bind_null(st, col);
    else
        sqlite3_bind_double(st, col, v);
}

typedef enum { FILE_EMPTY, FILE_OURS, FILE_REFUSED } file_kind;

/* Reads the header fields only, so a foreign or damaged file is recognized
 * before anything (even the journal mode) is written to it. */
static file_kind identify(mt_store *s, int64_t *version, mt_error *err)
{
    /* One statement, so the three come from one snapshot even while another
     * process is creating the schema. */
    sqlite3_stmt *st;
    if (mt_store_prepare(s, "SELECT (SELECT application_id FROM pragma_application_id()), "
                            "(SELECT user_version FROM pragma_user_version()), "
                            "(SELECT count(*) FROM sqlite_master)", &st, err) != 0)
        return FILE_REFUSED; /* err says "damaged" or why */
    int rc = sqlite3_step(st);
    int64_t app = sqlite3_column_int64(st, 0), ver = sqlite3_column_int64(st, 1),
            tables = sqlite3_column_int64(st, 2);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW) {
        mt_store_fail(s, err, "reading the header");
        return FILE_REFUSED;
    }
    *version = ver;
    if (app == 0 && tables == 0 && ver == 0)
        return FILE_EMPTY;
    if (app != MT_STORE_APPLICATION_ID) {
        mt_error_set(err, "%s: not an mtool history (an SQLite database of another application, "
                          "application_id 0x%llx); left untouched", s->path, (unsigned long long)app);
        return FILE_REFUSED;
    }
    if (ver > MT_STORE_SCHEMA_VERSION) {
        mt_error_set(err, "%s: history schema version %lld is newer than this mtool's (%d); "
                          "left untouched, use a newer mtool", s->path, (long long)ver,
                     MT_STORE_SCHEMA_VERSION);
        return FILE_REFUSED;
    }
    return FILE_OURS;
}

/* Switching to WAL needs a moment with no other connection in a transaction;
 * a concurrent first store may hold one, so wait for it. */
static int enable_wal(mt_store *s, mt_error *err)
{
    for (int attempt = 0;; attempt++) {
        sqlite3_stmt *st;
        if (mt_store_prepare(s, "PRAGMA journal_mode=WAL", &st, err) != 0)
            return -1;
        int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc == SQLITE_ROW)
            return 0;
        if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || attempt >= 1000)
            return mt_store_fail(s, err, "switching to WAL mode");
        usleep(10000);
    }
}

/* Brings the schema to the current version inside one IMMEDIATE transaction;
 * the version is read again under the lock, since a concurrent writer may
 * have migrated the file in the meantime. */
static int migrate(mt_store *s, mt_error *err)
{
    if (mt_store_exec(s, "BEGIN IMMEDIATE", err) != 0)
        return -1;
    int64_t version;
    if (identify(s, &version, err) == FILE_REFUSED)
        goto fail;
    for (int64_t v = version; v < MT_STORE_SCHEMA_VERSION; v++)
        if (mt_store_exec(s, migrations[v], err) != 0)
            goto fail;
    char *set = mt_xasprintf("PRAGMA application_id=%d; PRAGMA user_version=%d",
                             MT_STORE_APPLICATION_ID, MT_STORE_SCHEMA_VERSION);
    int rc = mt_store_exec(s, set, err);
    free(set);
    if (rc == 0 && mt_store_exec(s, "COMMIT", err) == 0)
        return 0;
fail:
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
}

static int make_parent_dirs(const char *path, mt_error *err)
{
    char *p = mt_xstrdup(path);
    for (char *c = p + 1; *c; c++) {
        if (*c != '/')
            continue;
        *c = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            mt_error_set(err, "%s: cannot create directory %s: %s", path, p, strerror(errno));
            free(p);
            return -1;
        }
        *c = '/';
    }
    free(p);
    return 0;
}

static bool side_file_exists(const char *path, const char *suffix)
{
    char *p = mt_xasprintf("%s%s", path, suffix);
    bool there = access(p, F_OK) == 0;
    free(p);
    return there;
}

/* Opening a WAL database creates its -wal and -shm even read-only; a file
 * mtool refuses is written by no mtool, so the ones a read-only open
 * created are removed again. */
static void remove_new_side_files(const mt_store *s)
{
    for (int k = 0; k < 2; k++) {
        const char *suffix = k ? "-shm" : "-wal";
        if ((k ? s->had_shm : s->had_wal) || !side_file_exists(s->path, suffix))
            continue;
        char *p = mt_xasprintf("%s%s", s->path, suffix);
        unlink(p);
        free(p);
    }
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The fields of SQLite's 100-byte header that every SQLite writes with
 * fixed or few values (https://www.sqlite.org/fileformat.html, 1.3). */
static bool plausible_header(const unsigned char *h)
{
    unsigned page = (unsigned)h[16] << 8 | h[17];
    return memcmp(h, "SQLite format 3", 16) == 0 &&
           (page == 1 || (page >= 512 && (page & (page - 1)) == 0)) &&
           h[18] >= 1 && h[18] <= 2 && h[19] >= 1 && h[19] <= 2 && h[21] == 64 && h[22] == 32 &&
           h[23] == 32 && be32(h + 44) >= 1 && be32(h + 44) <= 4 && be32(h + 56) <= 3;
}

/* A store writes the file and creates its -wal and -shm beside it. */
static bool writable(const char *path, mt_error *err)
{
    char *dir = mt_xstrdup(path), *slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir] = '\0';
    const char *d = slash ? dir : ".", *denied = access(path, W_OK) != 0 ? path
                                                : access(d, W_OK) != 0 ? d : NULL;
    if (denied)
        mt_error_set(err, "%s: cannot store: %s: %s", path, denied, strerror(errno));
    free(dir);
    return !denied;
}

/* What the file is, from the file system and its first 100 bytes, before
 * SQLite opens it: opening creates -wal and -shm files beside a WAL
 * database, and a directory or a FIFO would give "disk I/O error" or wait
 * forever.  A file whose header is another application's (application_id)
 * or a newer mtool's is refused here; the header of a WAL database may be
 * older than its WAL, so identify() asks SQLite again after opening.
 * *bad_header: not a header SQLite writes (its refusal is then "damaged"). */
static int check_file(const char *path, mt_store_mode mode, bool *bad_header, mt_error *err)
{
    *bad_header = false;
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT && mode == MT_STORE_WRITE)
            return 0;
        mt_error_set(err, errno == ENOENT ? "%s: no history yet (nothing has been stored there): %s"
                                          : "%s: %s", path, strerror(errno));
        return -1;
    }
    if (mode == MT_STORE_WRITE && !writable(path, err))
        return -1;
    unsigned char h[100];
    int fd = mt_open_regular(path, err);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, h, sizeof h);
    close(fd);
    if (n == 0)
        return 0; /* empty: a new history */
    /* A header SQLite would not write is left to SQLite to refuse: the file
     * may be a concurrent writer's, half created, which SQLite's locks wait for. */
    if (n < (ssize_t)sizeof h || !plausible_header(h)) {
        *bad_header = true;
        return 0;
    }
    uint32_t app = be32(h + 68), version = be32(h + 60);
    if (app != 0 && app != MT_STORE_APPLICATION_ID) {
        mt_error_set(err, "%s: not an mtool history (an SQLite database of another application, "
                          "application_id 0x%lx); left untouched", path, (unsigned long)app);
        return -1;
    }
    if (app == MT_STORE_APPLICATION_ID && version > MT_STORE_SCHEMA_VERSION) {
        mt_error_set(err, "%s: history schema version %lu is newer than this mtool's (%d); "
                          "left untouched, use a newer mtool", path, (unsigned long)version,
                     MT_STORE_SCHEMA_VERSION);
        return -1;
    }
    return 0;
}

/* "file:PATH?immutable=1" (RFC 3986 escapes, as sqlite3_open_v2 wants). */
static char *immutable_uri(const char *path)
{
    char *uri = mt_xmalloc(3 * strlen(path) + 32), *o = uri;
    o += sprintf(o, "file:");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++)
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("/._-~", *p))
            *o++ = (char)*p;
        else
            o += sprintf(o, "%%%02X", *p);
    strcpy(o, "?immutable=1");
    return uri;
}

static mt_store *open_db(const char *path, mt_store_mode mode, bool immutable, bool bad_header,
                         mt_error *err)
{
    mt_store *s = mt_xcalloc(1, sizeof *s);
    s->path = mt_xstrdup(path);
    s->bad_header = bad_header;
    s->writable = mode == MT_STORE_WRITE;
    s->had_wal = side_file_exists(path, "-wal");
    s->had_shm = side_file_exists(path, "-shm");
    /* NOMUTEX: a store is used by one thread, and SQLite's per-call mutex
     * was a fifth of `trend`'s instructions (callgrind, 10,000 rows). */
    int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI |
                (s->writable ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY);
    char *name = immutable ? immutable_uri(path) : mt_xasprintf("%s%s", path[0] == '/' ? "" : "./",
                                                               path);
    int rc = sqlite3_open_v2(name, &s->db, flags, NULL);
    free(name);
    if (rc != SQLITE_OK) {
        mt_store_fail(s, err, "cannot open");
        mt_store_close(s);
        return NULL;
    }
    sqlite3_extended_result_codes(s->db, 1);
    sqlite3_busy_timeout(s->db, 60000);
    return s;
}

/* Refused for what the file is (damaged, another application's, newer),
 * not for a moment's failure (busy, I/O), after which the -wal may be a
 * writer's. */
static bool refused_for_content(const mt_store *s)
{
    int code = sqlite3_extended_errcode(s->db) & 0xff;
    return code == SQLITE_OK || code == SQLITE_ROW || code == SQLITE_DONE ||
           code == SQLITE_CORRUPT || code == SQLITE_NOTADB;
}

static bool readonly_wal_refused(const mt_store *s)
{
    int code = sqlite3_extended_errcode(s->db) & 0xff;
    return code == SQLITE_CANTOPEN || code == SQLITE_READONLY;
}

/* A whole quick_check reads every page: 4.5-5 ms CPU per MB on the Xeon
 * family 6 model 207 (1.4 s for 10,000 runs of 1,845 sites, 312 MB; 50 ms
 * for 260 runs, 10 MB).  Up to this size a store affords it (about 40 ms);
 * above it, the tables besides figures are checked (under the 10 ms
 * resolution of `time` at 10,000 runs), and figures' pages on the path of
 * an insert are checked by SQLite as it reads them. */
#define FULL_CHECK_MAX_BYTES (8u << 20)

/* The first answer of one quick_check: "ok", or damage in err. */
static int quick_check(mt_store *s, const char *table, mt_error *err)
{
    char *sql = table ? mt_xasprintf("PRAGMA quick_check(%s)", table)
                      : mt_xstrdup("PRAGMA quick_check(1)");
    sqlite3_stmt *st;
    int rc = mt_store_prepare(s, sql, &st, err);
    free(sql);
    if (rc != 0)
        return -1;
    if (sqlite3_step(st) != SQLITE_ROW) {
        mt_store_fail(s, err, "checking its integrity");
        sqlite3_finalize(st);
        return -1;
    }
    char *first = mt_store_col_text(st, 0);
    sqlite3_finalize(st);
    int ok = first && strcmp(first, "ok") == 0 ? 0 : -1;
    if (ok != 0) {
        char why[300];
        snprintf(why, sizeof why, "quick_check: %.250s", first ? first : "no answer");
        for (char *c = why; *c; c++)
            if (*c == '\n')
                *c = ' '; /* one line: its report lists a problem per line */
        damaged(s->path, err, why);
        s->refused = true;
    }
    free(first);
    return ok;
}

/* Damage is looked for before anything is written: SQLite would write new
 * pages wherever a damaged free list or b-tree says, spreading it. */
static int check_integrity(mt_store *s, mt_error *err)
{
    struct stat st;
    if (stat(s->path, &st) != 0 || (uint64_t)st.st_size <= FULL_CHECK_MAX_BYTES)
        return quick_check(s, NULL, err);
    static const char *const tables[] = {"programs", "objects", "sites", "runs"};
    for (size_t i = 0; i < MT_ARRAY_LEN(tables); i++)
        if (quick_check(s, tables[i], err) != 0)
            return -1;
    return 0;
}

/* A read-only open of an empty or older file: migrated by a writable open
 * first, then opened read-only again. */
static mt_store *reopen_migrated(const char *path, file_kind kind, mt_error *err)
{
    if (kind == FILE_EMPTY) {
        mt_error_set(err, "%s: empty history (nothing has been stored there)", path);
        return NULL;
    }
    mt_store *w = mt_store_open(path, MT_STORE_WRITE, err);
    if (!w)
        return NULL;
    mt_store_close(w);
    return mt_store_open(path, MT_STORE_READ, err);
}

mt_store *mt_store_open(const char *path, mt_store_mode mode, mt_error *err)
{
    bool bad_header;
    if (check_file(path, mode, &bad_header, err) != 0 ||
        (mode == MT_STORE_WRITE && make_parent_dirs(path, err) != 0))
        return NULL;
    mt_store *s = open_db(path, mode, false, bad_header, err);
    int64_t version = 0;
    file_kind kind = s ? identify(s, &version, err) : FILE_REFUSED;
    if (s && kind == FILE_REFUSED && mode == MT_STORE_READ && readonly_wal_refused(s)) {
        mt_store_close(s);
        s = open_db(path, mode, true, bad_header, err);
        kind = s ? identify(s, &version, err) : FILE_REFUSED;
    }
    if (s && kind == FILE_REFUSED && refused_for_content(s))
        s->refused = true;
    if (kind == FILE_REFUSED)
        goto fail;
    if (mode == MT_STORE_READ) {
        if (kind == FILE_EMPTY || version < MT_STORE_SCHEMA_VERSION) {
            mt_store_close(s);
            return reopen_migrated(path, kind, err);
        }
        /* No memory map: with 10,000 runs, faulting pages in cost `trend`
         * a third more CPU than reading them (34 vs 25 ms, bench/history.sh). */
        if (mt_store_exec(s, "PRAGMA query_only=1", err) != 0)
            goto fail;
        return s;
    }
    /* NORMAL is safe in WAL mode: a killed process never corrupts the file;
     * only a power loss may drop the last runs. */
    /* Foreign keys on after migrating: a migration may rebuild a table that
     * others refer to (2 -> 3), which SQLite allows only with them off. */
    if ((kind == FILE_OURS && check_integrity(s, err) != 0) ||
        (kind == FILE_EMPTY && enable_wal(s, err) != 0) ||
        mt_store_exec(s, "PRAGMA synchronous=NORMAL", err) != 0 ||
        (version < MT_STORE_SCHEMA_VERSION && migrate(s, err) != 0) ||
        mt_store_exec(s, "PRAGMA foreign_keys=ON", err) != 0)
        goto fail;
    return s;
fail:
    mt_store_close(s);
    return NULL;
}

void mt_store_close(mt_store *s)
{
    if (!s)
        return;
    sqlite3_close_v2(s->db);
    if (s->refused && !s->writable) /* a writer's -wal may hold another writer's runs */
        remove_new_side_files(s);
    free(s->path);
    free(s);
}
