/* store/ranks.c — an MPI job's ranks in the history (schema 8, docs/HISTORY.md):
 * run_ranks (each rank's host) and rank_figures (each timed object's figures
 * in each rank, its shared libraries' objects' too), written with the job's
 * run and read back by `history show`. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int insert_rank_hosts(mt_store *s, const mt_store_run *r, int64_t run, mt_error *err)
{
    sqlite3_stmt *st;
    if (mt_store_prepare(s, "INSERT INTO run_ranks(run_id, rank, host) VALUES (?,?,?)", &st,
                         err) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < r->nranks; i++) {
        sqlite3_bind_int64(st, 1, run);
        sqlite3_bind_int(st, 2, r->ranks[i].rank);
        if (r->ranks[i].host)
            sqlite3_bind_text(st, 3, r->ranks[i].host, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 3);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = mt_store_fail(s, err, "storing the job's ranks");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

int mt_store_insert_ranks(mt_store *s, const mt_store_run *r, int64_t run, const site_ref *refs,
                          mt_error *err)
{
    if (!r->nranks)
        return 0;
    return insert_rank_hosts(s, r, run, err) != 0
               ? -1 : mt_store_insert_rank_figures(s, r->rank_figures, r->nrank_figures, run, refs, err);
}

int mt_store_insert_rank_figures(mt_store *s, const mt_store_rank_figures *figures, size_t n,
                                 int64_t run, const site_ref *refs, mt_error *err)
{
    sqlite3_stmt *st;
    if (mt_store_prepare(s, "INSERT INTO rank_figures(run_id, site_id, rank, object_id, entries, "
                            "memory_ops, measured_cycles, predicted_cycles, overhead_cycles) "
                            "VALUES (?,?,?,?,?,?,?,?,?)", &st, err) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const mt_store_rank_figures *rf = &figures[i];
        sqlite3_bind_int64(st, 1, run);
        sqlite3_bind_int64(st, 2, refs[rf->f.site].site);
        sqlite3_bind_int(st, 3, rf->rank);
        sqlite3_bind_int64(st, 4, refs[rf->f.site].object);
        mt_store_bind_count(st, 5, rf->f.entries);
        mt_store_bind_count(st, 6, rf->f.memory_ops);
        mt_store_bind_real(st, 7, rf->f.measured_cycles);
        mt_store_bind_real(st, 8, rf->f.predicted_cycles);
        mt_store_bind_real(st, 9, rf->f.overhead_cycles);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = mt_store_fail(s, err, "storing the job's figures per rank");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

int mt_store_run_ranks(mt_store *s, int64_t run, mt_store_rank_row **rows, size_t *n,
                       mt_error *err)
{
    *rows = NULL;
    *n = 0;
    sqlite3_stmt *st;
    /* The job's own row orders the objects (largest overhead first), as `show` lists them. */
    if (mt_store_prepare(s, "SELECT rf.object_id, rf.rank, rr.host, s.procedure, s.loop_path, "
                            "rf.entries, rf.memory_ops, rf.measured_cycles, rf.predicted_cycles, "
                            "rf.overhead_cycles FROM rank_figures rf "
                            "JOIN sites s ON s.id = rf.site_id "
                            "LEFT JOIN run_ranks rr ON rr.run_id = rf.run_id AND rr.rank = rf.rank "
                            "LEFT JOIN figures f ON f.run_block = ?2 AND f.run_id = rf.run_id "
                            "AND f.object_id = rf.object_id AND f.site_id = rf.site_id "
                            "WHERE rf.run_id = ?1 "
                            "ORDER BY f.overhead_cycles DESC NULLS LAST, rf.object_id, rf.rank",
                         &st, err) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_int64(st, 2, mt_store_run_block(run));
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        mt_store_rank_row row = {
            .object = sqlite3_column_int64(st, 0), .rank = sqlite3_column_int(st, 1),
            .host = mt_store_col_text(st, 2), .procedure = mt_store_col_text(st, 3),
            .loop_path = mt_store_col_text(st, 4), .entries = mt_store_col_count(st, 5),
            .memory_ops = mt_store_col_count(st, 6), .measured_cycles = mt_store_col_real(st, 7),
            .predicted_cycles = mt_store_col_real(st, 8),
            .overhead_cycles = mt_store_col_real(st, 9)};
        MT_PUSH(*rows, *n, cap, row);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        mt_store_rank_rows_free(*rows, *n);
        *rows = NULL;
        *n = 0;
        return mt_store_fail(s, err, "reading the job's ranks");
    }
    return 0;
}

void mt_store_rank_rows_free(mt_store_rank_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(rows[i].host);
        free(rows[i].procedure);
        free(rows[i].loop_path);
    }
    free(rows);
}
