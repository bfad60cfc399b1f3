/* store/threads.c — a simulated run's per-thread view (sim_threads,
 * schema 8; docs/HISTORY.md "Processors and what-if remedies"): per thread
 * of a run of cpus > 1 the CPU it ran on, its references, its misses per
 * level slot, its coherence misses and events, where its references were
 * served and what that cost.  Threads keep sim.h's numbers and order
 * (position). */
#include <math.h>
#include <stdlib.h>

#include "internal.h"

#define THREAD_COLUMNS                                                                      \
    "thread, cpu, refs, i1_misses, d1_misses, l2_misses, l3_misses, l4_misses, "            \
    "true_sharing, false_sharing, invalidations, interventions, upgrades, local_refs, "     \
    "remote_refs, remote_dirty_refs, three_hop_refs, stall_cycles"
#define FIRST_MISSES 3 /* the column of i1_misses, 0-based */
#define FIRST_MP (FIRST_MISSES + MT_STORE_SIM_LEVELS)

int mt_store_insert_sim_threads(mt_store *s, const mt_store_sim *sim, int64_t run, mt_error *err)
{
    sqlite3_stmt *st;
    if (sim->nthreads == 0)
        return 0;
    if (mt_store_prepare(s, "INSERT INTO sim_threads(run_id, position, " THREAD_COLUMNS
                            ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", &st, err) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sim->nthreads; i++) {
        const mt_store_sim_thread *t = &sim->threads[i];
        /* parameter 3 + a column's 0-based place in THREAD_COLUMNS */
        sqlite3_bind_int64(st, 1, run);
        sqlite3_bind_int64(st, 2, (int64_t)i);
        sqlite3_bind_int64(st, 3, t->thread);
        sqlite3_bind_int64(st, 4, t->cpu);
        sqlite3_bind_int64(st, 5, (int64_t)t->refs);
        for (int l = 0; l < MT_STORE_SIM_LEVELS; l++)
            mt_store_bind_count(st, 3 + FIRST_MISSES + l, t->misses[l]);
        for (int k = 0; k < MT_STORE_NMP; k++)
            sqlite3_bind_int64(st, 3 + FIRST_MP + k, (int64_t)t->mp[k]);
        mt_store_bind_real(st, 3 + FIRST_MP + MT_STORE_NMP, t->stall_cycles);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = mt_store_fail(s, err, "storing a simulated thread");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

static mt_store_sim_thread read_thread(sqlite3_stmt *st)
{
    mt_store_sim_thread t = {.thread = (uint32_t)sqlite3_column_int64(st, 0),
                             .cpu = (uint32_t)sqlite3_column_int64(st, 1),
                             .refs = (uint64_t)sqlite3_column_int64(st, 2),
                             .stall_cycles = mt_store_col_real(st, FIRST_MP + MT_STORE_NMP)};
    for (int l = 0; l < MT_STORE_SIM_LEVELS; l++)
        t.misses[l] = mt_store_col_count(st, FIRST_MISSES + l);
    for (int k = 0; k < MT_STORE_NMP; k++)
        t.mp[k] = (uint64_t)sqlite3_column_int64(st, FIRST_MP + k);
    return t;
}

int mt_store_sim_threads(mt_store *s, int64_t run, mt_store_sim_thread **threads, size_t *n,
                         mt_error *err)
{
    *threads = NULL;
    *n = 0;
    sqlite3_stmt *st;
    if (mt_store_prepare(s, "SELECT " THREAD_COLUMNS " FROM sim_threads WHERE run_id = ? "
                            "ORDER BY position", &st, err) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, run);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        mt_store_sim_thread t = read_thread(st);
        MT_PUSH(*threads, *n, cap, t);
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE)
        return 0;
    free(*threads);
    *threads = NULL;
    *n = 0;
    return mt_store_fail(s, err, "reading a simulated run's threads");
}
