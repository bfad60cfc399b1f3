/* store/internal.h — shared by the store's files: the open database and
 * small statement helpers that turn SQLite failures into "FILE: reason". */
#ifndef MTOOL_STORE_INTERNAL_H
#define MTOOL_STORE_INTERNAL_H

#include <sqlite3.h>

#include "store.h"

struct mt_store {
    sqlite3 *db;
    char *path;
    bool writable;
    bool had_wal, had_shm;  /* -wal, -shm existed before this open */
    bool bad_header;        /* its first 100 bytes are no header SQLite writes */
    bool refused;           /* found damaged, another application's or newer: the
                               -wal and -shm this open created go on closing */
};

/* Figures are clustered by run_block = run_id >> 5 (blocks of 32 runs), then
 * object: fixed by schema version 2, whose CHECK refuses any other value. */
static inline int64_t mt_store_run_block(int64_t run) { return run >> 5; }

/* Sets err to "PATH: WHAT: sqlite's message", naming damage plainly. */
int mt_store_fail(mt_store *s, mt_error *err, const char *what);
/* Prepares `sql` (-1 with err on failure). */
int mt_store_prepare(mt_store *s, const char *sql, sqlite3_stmt **st, mt_error *err);
/* Runs statements that return no rows. */
int mt_store_exec(mt_store *s, const char *sql, mt_error *err);

/* Column helpers: NULL text reads as NULL, NULL real as NAN, NULL count as
 * MT_STORE_NO_COUNT. */
char *mt_store_col_text(sqlite3_stmt *st, int col);
double mt_store_col_real(sqlite3_stmt *st, int col);
uint64_t mt_store_col_count(sqlite3_stmt *st, int col);
/* Binds NAN (MT_STORE_NO_COUNT) as NULL. */
void mt_store_bind_real(sqlite3_stmt *st, int col, double v);
void mt_store_bind_count(sqlite3_stmt *st, int col, uint64_t v);

/* A stored loop path names a region ("r2") or a loop ("2.1"). */
static inline bool mt_store_path_is_region(const char *loop_path)
{
    return loop_path && loop_path[0] == 'r';
}

/* SQL: the kind of site s. */
#define SITE_KIND                                                                      \
    "CASE WHEN s.loop_path IS NULL THEN 'procedure' WHEN s.loop_path LIKE 'r%' THEN 'region' " \
    "ELSE 'loop' END"

/* SQL condition on programs p: ?N is NULL, its name or its path. */
#define PROGRAM_IS(n) "(?" #n " IS NULL OR p.name = ?" #n " OR p.path = ?" #n ")"

/* The TLB's figures of an object (mt_store_tlb_figure's order, walk_cycles last). */
#define SIM_TLB_COLUMNS(t) t "tlb1_misses, " t "tlb2_misses, " t "page_walks, " t "itlb_misses, " \
                           t "walk_cycles"
/* sim_figures' miss columns, slot by slot (I1, D1, L2, L3, L4), cause by
 * cause (cold, capacity, conflict: mt_store_cause's order), each with the
 * prefix t (a table alias and its dot, or ""). */
#define SIM_SLOT_MISSES(t, l) t l "_cold, " t l "_capacity, " t l "_conflict"
#define SIM_MISS_COLUMNS(t)                                                                \
    SIM_SLOT_MISSES(t, "i1") ", " SIM_SLOT_MISSES(t, "d1") ", " SIM_SLOT_MISSES(t, "l2") ", " \
    SIM_SLOT_MISSES(t, "l3") ", " SIM_SLOT_MISSES(t, "l4")
#define SIM_MISS_NULLS                                                                     \
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL"

/* Where a site of the build being stored went: its row and its object. */
typedef struct {
    int64_t site, object;
} site_ref;

/* The build a run is stored under: its row, the build its objects were
 * matched against when it was first stored (0: none), its file name. */
typedef struct {
    int64_t program, against;
    const char *name;
} mt_store_sim_build;

/* Stores a simulated run's machine, level totals, per-object figures and
 * data objects (store/simulated.c), inside mt_store_add_run's transaction. */
/* An MPI job's ranks and per-rank figures (ranks.c). */
/* Objects' figures per rank (refs: their build's sites). */
int mt_store_insert_rank_figures(mt_store *s, const mt_store_rank_figures *figures, size_t n,
                                 int64_t run, const site_ref *refs, mt_error *err);
int mt_store_insert_ranks(mt_store *s, const mt_store_run *r, int64_t run, const site_ref *refs,
                          mt_error *err);
int mt_store_insert_sim(mt_store *s, const mt_store_sim *sim, int64_t run, const site_ref *refs,
                        const mt_store_sim_build *b, mt_error *err);
/* A simulated run's figures of n code sites of one build (refs: its sites'
 * rows): the program's (mt_store_insert_sim) or a traced library's. */
int mt_store_insert_sim_figures(mt_store *s, const mt_store_sim_figures *figures, size_t n,
                                int64_t run, const site_ref *refs, mt_error *err);
/* threads.c: a simulated run's per-thread figures (sim_threads). */
int mt_store_insert_sim_threads(mt_store *s, const mt_store_sim *sim, int64_t run, mt_error *err);

/* A run's objects, in build order (each procedure before its loops) or
 * most memory operations first. */
int mt_store_objects_of_run(mt_store *s, int64_t run, bool build_order,
                            mt_store_object_row **rows, size_t *n, mt_error *err);

/* The sites of a stored build, in site-id order (ids[i] is sites[i]'s id,
 * objects[i] its object). */
int mt_store_load_sites(mt_store *s, int64_t program, mt_store_site **sites, int64_t **ids,
                        int64_t **objects, size_t *n, mt_error *err);
void mt_store_sites_free(mt_store_site *sites, size_t n);

#endif
