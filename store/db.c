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

int mt_store_fail(mt_store *s, mt_error *err, const char *what)
{
    int code = sqlite3_extended_errcode(s->db) & 0xff;
    const char *msg = sqlite3_errmsg(s->db);
    if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
        mt_error_set(err, "%s: damaged history database (%s while %s); left untouched, move it "
                          "aside to start a new one", s->path, msg, what);
    else
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

static mt_store *open_db(const char *path, mt_store_mode mode, mt_error *err)
{
    mt_store *s = mt_xcalloc(1, sizeof *s);
    s->path = mt_xstrdup(path);
    s->writable = mode == MT_STORE_WRITE;
    /* NOMUTEX: a store is used by one thread, and SQLite's per-call mutex
     * was a fifth of `trend`'s instructions (callgrind, 10,000 rows). */
    int flags = SQLITE_OPEN_NOMUTEX |
                (s->writable ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY);
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        mt_store_fail(s, err, "cannot open");
        mt_store_close(s);
        return NULL;
    }
    sqlite3_extended_result_codes(s->db, 1);
    sqlite3_busy_timeout(s->db, 60000);
    return s;
}

mt_store *mt_store_open(const char *path, mt_store_mode mode, mt_error *err)
{
    struct stat st;
    if (mode == MT_STORE_READ && stat(path, &st) != 0) {
        mt_error_set(err, "%s: no history yet (nothing has been stored there): %s", path,
                     strerror(errno));
        return NULL;
    }
    if (mode == MT_STORE_WRITE && make_parent_dirs(path, err) != 0)
        return NULL;
    mt_store *s = open_db(path, mode, err);
    if (!s)
        return NULL;
    int64_t version;
    file_kind kind = identify(s, &version, err);
    if (kind == FILE_REFUSED)
        goto fail;
    if (mode == MT_STORE_READ) {
        if (kind == FILE_EMPTY || version < MT_STORE_SCHEMA_VERSION) {
            /* An older schema is migrated by a writable open first. */
            mt_store_close(s);
            s = kind == FILE_EMPTY ? NULL : mt_store_open(path, MT_STORE_WRITE, err);
            if (kind == FILE_EMPTY)
                mt_error_set(err, "%s: empty history (nothing has been stored there)", path);
            if (!s)
                return NULL;
            mt_store_close(s);
            return mt_store_open(path, MT_STORE_READ, err);
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
    if ((kind == FILE_EMPTY && enable_wal(s, err) != 0) ||
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
    free(s->path);
    free(s);
}
