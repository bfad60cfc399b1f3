/* store/simulated.c — a simulated run (`mtool sim`) in the history: its
 * machine summarised, each level's description and totals, per code object
 * and per data object its references, misses per level by cause and the use
 * of the lines it brought in, with cpus > 1 its coherence misses and events
 * and where its references were served, its TLB misses and page walks;
 * the run's TLB levels; the run's what-if remedies and proposals
 * (docs/HISTORY.md, schema versions 6 and 10).  A traced library's code
 * objects are its build's sites (write.c stores the build, as a timed
 * run's library objects), their rows here as the program's. */
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

static const char *const mp_names[MT_STORE_NMP] = {
    "true_sharing", "false_sharing", "invalidations", "interventions", "upgrades",
    "local_refs", "remote_refs", "remote_dirty_refs", "three_hop_refs"};

const char *mt_store_mp_name(unsigned k) { return k < MT_STORE_NMP ? mp_names[k] : "?"; }

int mt_store_mp_figure_of(const char *name)
{
    for (unsigned k = 0; k < MT_STORE_NMP; k++)
        if (!strcmp(name, mp_names[k]))
            return (int)k;
    return -1;
}

static const char *const tlb_names[MT_STORE_NTLB + 1] = {
    "tlb1_misses", "tlb2_misses", "page_walks", "itlb_misses", "walk_cycles"};

const char *mt_store_tlb_name(unsigned k) { return k <= MT_STORE_NTLB ? tlb_names[k] : "?"; }

int mt_store_tlb_figure_of(const char *name)
{
    for (unsigned k = 0; k <= MT_STORE_NTLB; k++)
        if (!strcmp(name, tlb_names[k]))
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

/* Binds row i of `rows` from column 3 on (1 and 2: the run, the position). */
typedef void bind_row_fn(sqlite3_stmt *st, const void *rows, size_t i);

/* n rows of a run by position (0 first), each bound by `bind`; `what` names
 * a row in an error. */
static int insert_positions(mt_store *s, const char *sql, int64_t run, const void *rows, size_t n,
                            bind_row_fn *bind, const char *what, mt_error *err)
{
    sqlite3_stmt *st;
    if (mt_store_prepare(s, sql, &st, err) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        sqlite3_bind_int64(st, 1, run);
        sqlite3_bind_int64(st, 2, (int64_t)i);
        bind(st, rows, i);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = mt_store_fail(s, err, what);
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    }
    sqlite3_finalize(st);
    return rc;
}

static void bind_level(sqlite3_stmt *st, const void *rows, size_t i)
{
    const mt_store_sim_level *l = (const mt_store_sim_level *)rows + i;
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
}

static int insert_sim_levels(mt_store *s, const mt_store_sim *sim, int64_t run, mt_error *err)
{
    return insert_positions(s, "INSERT INTO sim_levels(run_id, position, level, size, ways, line, "
                               "replacement, inclusion, write_allocate, prefetch, refs, misses, "
                               "cold, capacity, conflict, evictions, writebacks, lines, "
                               "bytes_used) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                            run, sim->levels, sim->nlevels, bind_level, "storing a simulated level",
                            err);
}

static void bind_tlb_level(sqlite3_stmt *st, const void *rows, size_t i)
{
    const mt_store_sim_tlb_level *l = (const mt_store_sim_tlb_level *)rows + i;
    sqlite3_bind_text(st, 3, l->name, -1, SQLITE_STATIC);
    const uint64_t figures[] = {l->entries, l->ways, l->page, l->refs, l->misses};
    for (int k = 0; k < (int)MT_ARRAY_LEN(figures); k++)
        sqlite3_bind_int64(st, 4 + k, (int64_t)figures[k]);
}

static int insert_tlb_levels(mt_store *s, const mt_store_sim *sim, int64_t run, mt_error *err)
{
    return insert_positions(s, "INSERT INTO sim_tlb_levels(run_id, position, level, entries, "
                               "ways, page, refs, misses) VALUES (?,?,?,?,?,?,?,?)",
                            run, sim->tlb_levels, sim->ntlb_levels, bind_tlb_level,
                            "storing a simulated TLB level", err);
}

/* A level slot's figures of a code or data object: misses by cause, lines
 * brought in and bytes of them used. */
#define SLOT_FIGURES(l) SIM_SLOT_MISSES("", l) ", " l "_lines, " l "_bytes_used"
#define SLOT_COLUMNS SLOT_FIGURES("i1") ", " SLOT_FIGURES("d1") ", " SLOT_FIGURES("l2") ", " \
                     SLOT_FIGURES("l3") ", " SLOT_FIGURES("l4")
/* Then the processors' figures, in mt_store_mp_figure's order. */
#define MP_COLUMNS "true_sharing, false_sharing, invalidations, interventions, upgrades, " \
                   "local_refs, remote_refs, remote_dirty_refs, three_hop_refs"
/* Then the TLB's, in mt_store_tlb_figure's order, walk_cycles last. */
#define FIGURE_COLUMNS SLOT_COLUMNS ", " MP_COLUMNS ", " SIM_TLB_COLUMNS("")
#define FIGURE_VALUES "?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?"
enum { SLOT_NVALUES = MT_STORE_NCAUSES + 2, FIRST_SLOT_COLUMN = 6,
       FIRST_MP_COLUMN = FIRST_SLOT_COLUMN + MT_STORE_SIM_LEVELS * SLOT_NVALUES,
       FIRST_TLB_COLUMN = FIRST_MP_COLUMN + MT_STORE_NMP };
_Static_assert(sizeof FIGURE_VALUES ==
                   2 * (FIRST_TLB_COLUMN - FIRST_SLOT_COLUMN + MT_STORE_NTLB + 1),
               "a value per figure column");

/* Binds every slot's figures from FIRST_SLOT_COLUMN on, then the
 * processors' figures, then the TLB's. */
static void bind_figures(sqlite3_stmt *st, const uint64_t (*misses)[MT_STORE_NCAUSES],
                         const uint64_t *lines, const uint64_t *bytes_used, const uint64_t *mp,
                         const mt_store_sim_tlb *tlb)
{
    for (int l = 0; l < MT_STORE_SIM_LEVELS; l++) {
        int col = FIRST_SLOT_COLUMN + l * SLOT_NVALUES;
        for (int c = 0; c < MT_STORE_NCAUSES; c++)
            mt_store_bind_count(st, col + c, misses[l][c]);
        mt_store_bind_count(st, col + MT_STORE_NCAUSES, lines[l]);
        mt_store_bind_count(st, col + MT_STORE_NCAUSES + 1, bytes_used[l]);
    }
    for (int k = 0; k < MT_STORE_NMP; k++)
        mt_store_bind_count(st, FIRST_MP_COLUMN + k, mp[k]);
    for (int k = 0; k < MT_STORE_NTLB; k++)
        mt_store_bind_count(st, FIRST_TLB_COLUMN + k, tlb->misses[k]);
    mt_store_bind_real(st, FIRST_TLB_COLUMN + MT_STORE_NTLB, tlb->walk_cycles);
}

int mt_store_insert_sim_figures(mt_store *s, const mt_store_sim_figures *figures, size_t n,
                                int64_t run, const site_ref *refs, mt_error *err)
{
    sqlite3_stmt *st;
    if (mt_store_prepare(s, "INSERT INTO sim_figures(run_block, run_id, site_id, object_id, refs, "
                            FIGURE_COLUMNS ") VALUES (?,?,?,?,?," FIGURE_VALUES ")", &st, err) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const mt_store_sim_figures *f = &figures[i];
        sqlite3_bind_int64(st, 1, mt_store_run_block(run));
        sqlite3_bind_int64(st, 2, run);
        sqlite3_bind_int64(st, 3, refs[f->site].site);
        sqlite3_bind_int64(st, 4, refs[f->site].object);
        sqlite3_bind_int64(st, 5, (int64_t)f->refs);
        bind_figures(st, (const uint64_t(*)[MT_STORE_NCAUSES])f->misses, f->lines, f->bytes_used,
                     f->mp, &f->tlb);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = mt_store_fail(s, err, "storing simulated figures");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

/* The first row of `sql` (binding ?1 an integer, ?2 a text) as two
 * integers; 0 when there is none, -1 on error. */
static int select_pair(mt_store *s, const char *sql, int64_t a, const char *b, int64_t out[2],
                       mt_error *err)
{
    sqlite3_stmt *st;
    if (mt_store_prepare(s, sql, &st, err) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_text(st, 2, b, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        out[0] = sqlite3_column_int64(st, 0);
        out[1] = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : mt_store_fail(s, err, "reading a data site");
}

/* The data site of d in build `program` (created the first time) and its
 * object: that of the data object of the same name in build `against`
 * (the build compared with when this one was first stored), else new. */
static int data_site(mt_store *s, const mt_store_sim_build *b, const mt_store_sim_data *d,
                     site_ref *out, mt_error *err)
{
    int64_t row[2];
    int found = select_pair(s, "SELECT id, object_id FROM data_sites WHERE program_id = ? AND "
                               "name = ?", b->program, d->name, row, err);
    if (found < 0)
        return -1;
    if (found) {
        *out = (site_ref){row[0], row[1]};
        return 0;
    }
    found = b->against > 0 ? select_pair(s, "SELECT object_id, 0 FROM data_sites WHERE "
                                            "program_id = ? AND name = ?", b->against, d->name,
                                         row, err)
                           : 0;
    if (found < 0)
        return -1;
    sqlite3_stmt *st;
    if (!found) {
        if (mt_store_prepare(s, "INSERT INTO objects(program_name, kind) VALUES (?, 'data')", &st,
                             err) != 0)
            return -1;
        sqlite3_bind_text(st, 1, b->name, -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            return mt_store_fail(s, err, "storing a data object");
        row[0] = sqlite3_last_insert_rowid(s->db);
    }
    if (mt_store_prepare(s, "INSERT INTO data_sites(program_id, object_id, name, kind, line, "
                            "address, size) VALUES (?, ?, ?, ?, 0, ?, ?)", &st, err) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, b->program);
    sqlite3_bind_int64(st, 2, row[0]);
    sqlite3_bind_text(st, 3, d->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, d->kind, -1, SQLITE_STATIC);
    if (d->address) /* a heap site's or a frame's objects have no fixed address */
        sqlite3_bind_int64(st, 5, (int64_t)d->address);
    if (d->size)
        sqlite3_bind_int64(st, 6, (int64_t)d->size);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return mt_store_fail(s, err, "storing a data site");
    *out = (site_ref){sqlite3_last_insert_rowid(s->db), row[0]};
    return 0;
}

static int insert_sim_data(mt_store *s, const mt_store_sim *sim, int64_t run,
                           const mt_store_sim_build *b, mt_error *err)
{
    sqlite3_stmt *st;
    if (mt_store_prepare(s, "INSERT INTO sim_figures(run_block, run_id, data_site_id, object_id, "
                            "refs, " FIGURE_COLUMNS ") VALUES (?,?,?,?,?," FIGURE_VALUES ")", &st,
                         err) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sim->ndata; i++) {
        const mt_store_sim_data *d = &sim->data[i];
        site_ref ref = {0, 0};
        if (data_site(s, b, d, &ref, err) != 0) {
            rc = -1;
            break;
        }
        sqlite3_bind_int64(st, 1, mt_store_run_block(run));
        sqlite3_bind_int64(st, 2, run);
        sqlite3_bind_int64(st, 3, ref.site);
        sqlite3_bind_int64(st, 4, ref.object);
        sqlite3_bind_int64(st, 5, (int64_t)d->refs);
        bind_figures(st, (const uint64_t(*)[MT_STORE_NCAUSES])d->misses, d->lines, d->bytes_used,
                     d->mp, &d->tlb);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = mt_store_fail(s, err, "storing a data object's simulated figures");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

/* ---- what-if remedies and problems ---- */

#define SAVED_COLUMNS "i1_saved, d1_saved, l2_saved, l3_saved, l4_saved, conflict_saved, " \
                      "coherence_saved, sharing_saved, remote_saved, cycles_saved"
#define SAVED_VALUES "?,?,?,?,?,?,?,?,?,?"
enum { NSAVED = MT_STORE_SIM_LEVELS + 5 };

static void bind_saving(sqlite3_stmt *st, int col, const mt_store_saving *v)
{
    for (int l = 0; l < MT_STORE_SIM_LEVELS; l++)
        if (v->misses[l] == MT_STORE_NO_SAVING)
            sqlite3_bind_null(st, col + l);
        else
            sqlite3_bind_int64(st, col + l, v->misses[l]);
    const int64_t sums[] = {v->conflict, v->coherence, v->sharing, v->remote};
    for (int k = 0; k < (int)MT_ARRAY_LEN(sums); k++)
        sqlite3_bind_int64(st, col + MT_STORE_SIM_LEVELS + k, sums[k]);
    mt_store_bind_real(st, col + NSAVED - 1, v->cycles);
}

static mt_store_saving col_saving(sqlite3_stmt *st, int col)
{
    mt_store_saving v;
    for (int l = 0; l < MT_STORE_SIM_LEVELS; l++)
        v.misses[l] = sqlite3_column_type(st, col + l) == SQLITE_NULL
                          ? MT_STORE_NO_SAVING : sqlite3_column_int64(st, col + l);
    int64_t *sums[] = {&v.conflict, &v.coherence, &v.sharing, &v.remote};
    for (int k = 0; k < (int)MT_ARRAY_LEN(sums); k++)
        *sums[k] = sqlite3_column_int64(st, col + MT_STORE_SIM_LEVELS + k);
    v.cycles = mt_store_col_real(st, col + NSAVED - 1);
    return v;
}

static void bind_remedy(sqlite3_stmt *st, const void *rows, size_t i)
{
    const mt_store_remedy *r = (const mt_store_remedy *)rows + i;
    sqlite3_bind_text(st, 3, r->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, r->text, -1, SQLITE_STATIC);
    bind_saving(st, 5, &r->saved);
}

static int insert_remedies(mt_store *s, const mt_store_sim *sim, int64_t run, mt_error *err)
{
    return insert_positions(s, "INSERT INTO sim_remedies(run_id, position, kind, remedy, "
                               SAVED_COLUMNS ") VALUES (?,?,?,?," SAVED_VALUES ")",
                            run, sim->remedies, sim->nremedies, bind_remedy,
                            "storing a what-if remedy", err);
}

static void bind_problem(sqlite3_stmt *st, const void *rows, size_t i)
{
    const mt_store_problem *p = (const mt_store_problem *)rows + i;
    sqlite3_bind_text(st, 3, p->code, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, p->data, -1, SQLITE_STATIC);
    for (int l = 0; l < MT_STORE_SIM_LEVELS; l++)
        mt_store_bind_count(st, 5 + l, p->misses[l]);
    sqlite3_bind_int64(st, 10, (int64_t)p->true_sharing);
    sqlite3_bind_int64(st, 11, (int64_t)p->false_sharing);
    sqlite3_bind_int64(st, 12, (int64_t)p->remote);
    mt_store_bind_real(st, 13, p->cycles);
    if (p->remedy >= 0) { /* no proposal: the saving stays NULL */
        sqlite3_bind_int64(st, 14, p->remedy);
        bind_saving(st, 15, &p->saved);
    }
}

static int insert_problems(mt_store *s, const mt_store_sim *sim, int64_t run, mt_error *err)
{
    return insert_positions(s, "INSERT INTO sim_problems(run_id, position, code, data, "
                               "i1_misses, d1_misses, l2_misses, l3_misses, l4_misses, "
                               "true_sharing, false_sharing, remote, cycles, remedy, "
                               SAVED_COLUMNS ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,"
                               SAVED_VALUES ")",
                            run, sim->problems, sim->nproblems, bind_problem,
                            "storing a what-if problem", err);
}

static void read_remedy(sqlite3_stmt *st, mt_store_remedy *r)
{
    *r = (mt_store_remedy){.kind = mt_store_col_text(st, 0), .text = mt_store_col_text(st, 1),
                           .saved = col_saving(st, 2)};
}

static void read_problem(sqlite3_stmt *st, mt_store_problem *p)
{
    *p = (mt_store_problem){.code = mt_store_col_text(st, 0), .data = mt_store_col_text(st, 1),
                            .true_sharing = (uint64_t)sqlite3_column_int64(st, 7),
                            .false_sharing = (uint64_t)sqlite3_column_int64(st, 8),
                            .remote = (uint64_t)sqlite3_column_int64(st, 9),
                            .cycles = mt_store_col_real(st, 10), .remedy = -1};
    for (int l = 0; l < MT_STORE_SIM_LEVELS; l++)
        p->misses[l] = mt_store_col_count(st, 2 + l);
    if (sqlite3_column_type(st, 11) != SQLITE_NULL) {
        p->remedy = sqlite3_column_int(st, 11);
        p->saved = col_saving(st, 12);
    }
}

int mt_store_sim_whatif(mt_store *s, int64_t run, mt_store_remedy **remedies, size_t *nremedies,
                        mt_store_problem **problems, size_t *nproblems, mt_error *err)
{
    *remedies = NULL;
    *problems = NULL;
    *nremedies = *nproblems = 0;
    sqlite3_stmt *rs, *ps;
    if (mt_store_prepare(s, "SELECT kind, remedy, " SAVED_COLUMNS " FROM sim_remedies WHERE "
                            "run_id = ? ORDER BY position", &rs, err) != 0)
        return -1;
    if (mt_store_prepare(s, "SELECT code, data, i1_misses, d1_misses, l2_misses, l3_misses, "
                            "l4_misses, true_sharing, false_sharing, remote, cycles, remedy, "
                            SAVED_COLUMNS " FROM sim_problems WHERE run_id = ? ORDER BY "
                            "position", &ps, err) != 0) {
        sqlite3_finalize(rs);
        return -1;
    }
    sqlite3_bind_int64(rs, 1, run);
    sqlite3_bind_int64(ps, 1, run);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(rs)) == SQLITE_ROW) {
        mt_store_remedy r;
        read_remedy(rs, &r);
        MT_PUSH(*remedies, *nremedies, cap, r);
    }
    cap = 0;
    while (rc == SQLITE_DONE) {
        if ((rc = sqlite3_step(ps)) != SQLITE_ROW)
            break;
        mt_store_problem p;
        read_problem(ps, &p);
        MT_PUSH(*problems, *nproblems, cap, p);
        rc = SQLITE_DONE;
    }
    sqlite3_finalize(rs);
    sqlite3_finalize(ps);
    if (rc == SQLITE_DONE)
        return 0;
    mt_store_whatif_free(*remedies, *nremedies, *problems, *nproblems);
    *remedies = NULL;
    *problems = NULL;
    *nremedies = *nproblems = 0;
    return mt_store_fail(s, err, "reading a simulated run's what-if remedies");
}

void mt_store_whatif_free(mt_store_remedy *remedies, size_t nremedies,
                          mt_store_problem *problems, size_t nproblems)
{
    for (size_t i = 0; i < nremedies; i++) {
        free((char *)remedies[i].kind);
        free((char *)remedies[i].text);
    }
    for (size_t i = 0; i < nproblems; i++) {
        free((char *)problems[i].code);
        free((char *)problems[i].data);
    }
    free(remedies);
    free(problems);
}

int mt_store_insert_sim(mt_store *s, const mt_store_sim *sim, int64_t run, const site_ref *refs,
                        const mt_store_sim_build *b, mt_error *err)
{
    if (sim->nlevels == 0) {
        mt_error_set(err, "%s: a simulated run without a cache level", s->path);
        return -1;
    }
    if (insert_sim_run(s, sim, run, err) != 0 || insert_sim_levels(s, sim, run, err) != 0 ||
        insert_tlb_levels(s, sim, run, err) != 0 ||
        mt_store_insert_sim_figures(s, sim->figures, sim->nfigures, run, refs, err) != 0 ||
        insert_sim_data(s, sim, run, b, err) != 0)
        return -1;
    if (insert_remedies(s, sim, run, err) != 0 || insert_problems(s, sim, run, err) != 0)
        return -1;
    return mt_store_insert_sim_threads(s, sim, run, err);
}

/* Misses at the deepest slot the run has, then above it; then by name. */
static int most_missed_first(const void *a, const void *b)
{
    const mt_store_sim_data *x = a, *y = b;
    for (int l = MT_STORE_SIM_LEVELS; l-- > 0;) {
        uint64_t mx = 0, my = 0;
        for (int c = 0; c < MT_STORE_NCAUSES; c++) {
            mx += x->misses[l][c] == MT_STORE_NO_COUNT ? 0 : x->misses[l][c];
            my += y->misses[l][c] == MT_STORE_NO_COUNT ? 0 : y->misses[l][c];
        }
        if (mx != my)
            return mx > my ? -1 : 1;
    }
    return strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

int mt_store_sim_data_of_run(mt_store *s, int64_t run, mt_store_sim_data **data, size_t *n,
                             mt_error *err)
{
    sqlite3_stmt *st;
    *data = NULL;
    *n = 0;
    if (mt_store_prepare(s, "SELECT d.name, d.kind, d.address, d.size, f.refs, " FIGURE_COLUMNS
                            " FROM sim_figures f JOIN data_sites d ON d.id = f.data_site_id "
                            "WHERE f.run_id = ?", &st, err) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, run);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        mt_store_sim_data d = {.name = mt_store_col_text(st, 0), .kind = mt_store_col_text(st, 1),
                               .address = (uint64_t)sqlite3_column_int64(st, 2),
                               .size = (uint64_t)sqlite3_column_int64(st, 3),
                               .refs = (uint64_t)sqlite3_column_int64(st, 4)};
        for (int l = 0; l < MT_STORE_SIM_LEVELS; l++) {
            int col = FIRST_SLOT_COLUMN - 1 + l * SLOT_NVALUES;
            for (int c = 0; c < MT_STORE_NCAUSES; c++)
                d.misses[l][c] = mt_store_col_count(st, col + c);
            d.lines[l] = mt_store_col_count(st, col + MT_STORE_NCAUSES);
            d.bytes_used[l] = mt_store_col_count(st, col + MT_STORE_NCAUSES + 1);
        }
        for (int k = 0; k < MT_STORE_NMP; k++)
            d.mp[k] = mt_store_col_count(st, FIRST_MP_COLUMN - 1 + k);
        for (int k = 0; k < MT_STORE_NTLB; k++)
            d.tlb.misses[k] = mt_store_col_count(st, FIRST_TLB_COLUMN - 1 + k);
        d.tlb.walk_cycles = mt_store_col_real(st, FIRST_TLB_COLUMN - 1 + MT_STORE_NTLB);
        MT_PUSH(*data, *n, cap, d);
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE) {
        if (*n > 1)
            qsort(*data, *n, sizeof **data, most_missed_first);
        return 0;
    }
    mt_store_sim_data_free(*data, *n);
    *data = NULL;
    *n = 0;
    return mt_store_fail(s, err, "reading a simulated run's data objects");
}

void mt_store_sim_data_free(mt_store_sim_data *data, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free((char *)data[i].name);
        free((char *)data[i].kind);
    }
    free(data);
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

int mt_store_sim_tlb_levels(mt_store *s, int64_t run, mt_store_sim_tlb_level **levels, size_t *n,
                            mt_error *err)
{
    sqlite3_stmt *st;
    *levels = NULL;
    *n = 0;
    if (mt_store_prepare(s, "SELECT level, entries, ways, page, refs, misses FROM sim_tlb_levels "
                            "WHERE run_id = ? ORDER BY position", &st, err) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, run);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        mt_store_sim_tlb_level l = {.entries = (uint32_t)sqlite3_column_int64(st, 1),
                                    .ways = (uint32_t)sqlite3_column_int64(st, 2),
                                    .page = (uint64_t)sqlite3_column_int64(st, 3),
                                    .refs = (uint64_t)sqlite3_column_int64(st, 4),
                                    .misses = (uint64_t)sqlite3_column_int64(st, 5)};
        copy_name(l.name, sizeof l.name, st, 0);
        MT_PUSH(*levels, *n, cap, l);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : mt_store_fail(s, err, "reading a simulated run's TLB levels");
}
