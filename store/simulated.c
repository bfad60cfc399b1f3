/* store/simulated.c — a simulated run (`mtool sim`) in the history: its
 * machine summarised, each level's description and totals, and per code
 * object its references and misses per level by cause (docs/HISTORY.md,
 * schema version 5). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

static const char *const slot_names[MT_STORE_SIM_LEVELS + 1] = {"I1", "D1", "L2", "L3", "L4",
                                                                "LL"};

const char *mt_store_sim_level_name(unsigned slot)
{
    return slot <= MT_STORE_SIM_LEVELS ? slot_names[slot] : "?";
}

int mt_store_sim_level_slot(const char *name)
{
    for (unsigned k = 0; k <= MT_STORE_SIM_LEVELS; k++)
        if (!strcasecmp(name, slot_names[k]))
            return (int)k;
    return -1;
}

static int insert_sim_run(mt_store *s, const mt_store_sim *sim, int64_t run, mt_error *err)
{
    sqlite3_stmt *st;
    if (mt_store_prepare(s, "INSERT INTO sim_runs(run_id, machine, last_level) VALUES (?, ?, ?)",
                         &st, err) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_text(st, 2, sim->machine, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, mt_store_sim_level_name(sim->levels[sim->nlevels - 1].slot), -1,
                      SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : mt_store_fail(s, err, "storing the simulated machine");
    sqlite3_finalize(st);
    return rc;
}

static int insert_sim_levels(mt_store *s, const mt_store_sim *sim, int64_t run, mt_error *err)
{
    sqlite3_stmt *st;
    if (mt_store_prepare(s, "INSERT INTO sim_levels(run_id, position, level, size, ways, line, "
                            "replacement, inclusion, write_allocate, prefetch, refs, misses, cold, "
                            "capacity, conflict, evictions, writebacks, lines, bytes_used) "
                            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", &st, err) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sim->nlevels; i++) {
        const mt_store_sim_level *l = &sim->levels[i];
        sqlite3_bind_int64(st, 1, run);
        sqlite3_bind_int64(st, 2, (int64_t)i);
        sqlite3_bind_text(st, 3, mt_store_sim_level_name(l->slot), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, (int64_t)l->size);
        sqlite3_bind_int64(st, 5, l->ways);
        sqlite3_bind_int64(st, 6, l->line);
        sqlite3_bind_text(st, 7, l->replacement, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 8, l->inclusion, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 9, l->write_allocate);
        sqlite3_bind_text(st, 10, l->prefetch, -1, SQLITE_STATIC);
        const uint64_t totals[] = {l->refs, l->misses, l->cause[MT_STORE_COLD],
                                   l->cause[MT_STORE_CAPACITY], l->cause[MT_STORE_CONFLICT],
                                   l->evictions, l->writebacks, l->lines, l->bytes_used};
        for (int k = 0; k < (int)MT_ARRAY_LEN(totals); k++)
            sqlite3_bind_int64(st, 11 + k, (int64_t)totals[k]);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = mt_store_fail(s, err, "storing a simulated level");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

static int insert_sim_figures(mt_store *s, const mt_store_sim *sim, int64_t run,
                              const site_ref *refs, mt_error *err)
{
    sqlite3_stmt *st;
    if (mt_store_prepare(s, "INSERT INTO sim_figures(run_block, run_id, site_id, object_id, refs, "
                            SIM_MISS_COLUMNS("") ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                         &st, err) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sim->nfigures; i++) {
        const mt_store_sim_figures *f = &sim->figures[i];
        sqlite3_bind_int64(st, 1, mt_store_run_block(run));
        sqlite3_bind_int64(st, 2, run);
        sqlite3_bind_int64(st, 3, refs[f->site].site);
        sqlite3_bind_int64(st, 4, refs[f->site].object);
        sqlite3_bind_int64(st, 5, (int64_t)f->refs);
        for (int l = 0; l < MT_STORE_SIM_LEVELS; l++)
            for (int c = 0; c < MT_STORE_NCAUSES; c++)
                mt_store_bind_count(st, 6 + l * MT_STORE_NCAUSES + c, f->misses[l][c]);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = mt_store_fail(s, err, "storing simulated figures");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

int mt_store_insert_sim(mt_store *s, const mt_store_sim *sim, int64_t run, const site_ref *refs,
                        mt_error *err)
{
    if (sim->nlevels == 0) {
        mt_error_set(err, "%s: a simulated run without a cache level", s->path);
        return -1;
    }
    if (insert_sim_run(s, sim, run, err) != 0 || insert_sim_levels(s, sim, run, err) != 0)
        return -1;
    return insert_sim_figures(s, sim, run, refs, err);
}

static void copy_name(char *dst, size_t n, sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    snprintf(dst, n, "%s", t ? (const char *)t : "");
}

int mt_store_sim_levels(mt_store *s, int64_t run, mt_store_sim_level **levels, size_t *n,
                        mt_error *err)
{
    sqlite3_stmt *st;
    *levels = NULL;
    *n = 0;
    if (mt_store_prepare(s, "SELECT level, size, ways, line, replacement, inclusion, "
                            "write_allocate, prefetch, refs, misses, cold, capacity, conflict, "
                            "evictions, writebacks, lines, bytes_used FROM sim_levels "
                            "WHERE run_id = ? ORDER BY position", &st, err) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, run);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int slot = mt_store_sim_level_slot((const char *)sqlite3_column_text(st, 0));
        mt_store_sim_level l = {.slot = slot < 0 ? MT_STORE_SIM_LEVELS : (unsigned)slot,
                                .size = (uint64_t)sqlite3_column_int64(st, 1),
                                .ways = (uint32_t)sqlite3_column_int64(st, 2),
                                .line = (uint32_t)sqlite3_column_int64(st, 3),
                                .write_allocate = sqlite3_column_int(st, 6)};
        copy_name(l.replacement, sizeof l.replacement, st, 4);
        copy_name(l.inclusion, sizeof l.inclusion, st, 5);
        copy_name(l.prefetch, sizeof l.prefetch, st, 7);
        uint64_t *totals[] = {&l.refs, &l.misses, &l.cause[MT_STORE_COLD],
                              &l.cause[MT_STORE_CAPACITY], &l.cause[MT_STORE_CONFLICT],
                              &l.evictions, &l.writebacks, &l.lines, &l.bytes_used};
        for (int k = 0; k < (int)MT_ARRAY_LEN(totals); k++)
            *totals[k] = (uint64_t)sqlite3_column_int64(st, 8 + k);
        MT_PUSH(*levels, *n, cap, l);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : mt_store_fail(s, err, "reading a simulated run's levels");
}
