/* store/export.c — runs and their figures as CSV or JSON (the JSON is built
 * by SQLite's JSON functions, so quoting is exact). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define WHERE_SELECTED                                                                     \
    "WHERE " PROGRAM_IS(1) " AND (?2 = 0 OR r.finished >= ?2) AND (?3 = 0 OR r.finished < ?3) "

/* An object's place, the same in both kinds of rows. */
#define JSON_OBJECT_PLACE                                                                  \
    "'object', f.object_id, 'kind', " SITE_KIND ", 'procedure', s.procedure, "              \
    "'loop_path', s.loop_path, 'file', s.file, 'line', s.line, 'address', s.address, "     \
    "'identified_by', CASE WHEN s.named THEN 'name' ELSE 'address' END"
/* A level slot's misses by cause, NULL when the machine has no such level
 * (json_patch drops the member). */
#define JSON_SLOT_MISSES(name, l)                                                          \
    "'" name "', CASE WHEN f." l "_cold IS NULL THEN NULL ELSE json_object('cold', f." l    \
    "_cold, 'capacity', f." l "_capacity, 'conflict', f." l "_conflict) END"

/* A level slot's line use, NULL likewise. */
#define JSON_SLOT_USE(name, l)                                                             \
    "'" name "', CASE WHEN f." l "_lines IS NULL THEN NULL ELSE json_object('lines', f." l \
    "_lines, 'bytes_used', f." l "_bytes_used) END"
#define JSON_SLOTS(m)                                                                      \
    m("I1", "i1") ", " m("D1", "d1") ", " m("L2", "l2") ", " m("L3", "l3") ", " m("L4", "l4")
/* A simulated object's processors' figures (cpus > 1), null with one CPU. */
#define JSON_PROCESSORS                                                                    \
    "'processors', CASE WHEN f.true_sharing IS NULL THEN NULL ELSE json_object("           \
    "'true_sharing', f.true_sharing, 'false_sharing', f.false_sharing, 'invalidations', "    \
    "f.invalidations, 'interventions', f.interventions, 'upgrades', f.upgrades, "           \
    "'local_refs', f.local_refs, 'remote_refs', f.remote_refs, 'remote_dirty_refs', "      \
    "f.remote_dirty_refs, 'three_hop_refs', f.three_hop_refs) END"
/* A simulated object's TLB figures (schema 10), those its machine had;
 * null without a TLB or in an older run. */
#define JSON_TLB                                                                           \
    "'tlb', CASE WHEN coalesce(f.page_walks, f.itlb_misses) IS NULL THEN NULL ELSE "       \
    "json_patch('{}', json_object('tlb1_misses', f.tlb1_misses, 'tlb2_misses', "           \
    "f.tlb2_misses, 'page_walks', f.page_walks, 'itlb_misses', f.itlb_misses, "            \
    "'walk_cycles', f.walk_cycles)) END"
/* A simulated run's TLB levels (schema 10), an empty array without. */
#define JSON_TLB_LEVELS                                                                    \
    "'tlb_levels', (SELECT json_group_array(json(x)) FROM (SELECT json_object('level', "   \
    "t.level, 'entries', t.entries, 'ways', t.ways, 'page', t.page, 'refs', t.refs, "      \
    "'misses', t.misses) AS x FROM sim_tlb_levels t WHERE t.run_id = r.id "                \
    "ORDER BY t.position))"
/* What a remedy saves (sim_remedies' and sim_problems' *_saved columns). */
#define JSON_SAVED(t)                                                                      \
    "json_object('misses', json_patch('{}', json_object('I1', " t ".i1_saved, 'D1', " t    \
    ".d1_saved, 'L2', " t ".l2_saved, 'L3', " t ".l3_saved, 'L4', " t ".l4_saved)), "        \
    "'conflict', " t ".conflict_saved, 'coherence', " t ".coherence_saved, 'sharing', " t   \
    ".sharing_saved, 'remote', " t ".remote_saved, 'cycles', " t ".cycles_saved)"
/* A --what-if run's remedies and problems, null without. */
#define JSON_WHAT_IF                                                                       \
    "'what_if', CASE WHEN NOT EXISTS (SELECT 1 FROM sim_remedies WHERE run_id = r.id) "    \
    "THEN NULL ELSE json_object('remedies', (SELECT json_group_array(json(x)) FROM "       \
    "(SELECT json_object('kind', m.kind, 'text', m.remedy, 'saved', json(" JSON_SAVED("m")  \
    ")) AS x FROM sim_remedies m WHERE m.run_id = r.id ORDER BY m.position)), "            \
    "'problems', (SELECT json_group_array(json(x)) FROM (SELECT json_object('code', "      \
    "q.code, 'data', q.data, 'misses', json_patch('{}', json_object('I1', q.i1_misses, "    \
    "'D1', q.d1_misses, 'L2', q.l2_misses, 'L3', q.l3_misses, 'L4', q.l4_misses)), "       \
    "'true_sharing', q.true_sharing, 'false_sharing', q.false_sharing, 'remote', "         \
    "q.remote, 'cycles', q.cycles, 'proposed', q.remedy, 'saved', CASE WHEN q.remedy IS "  \
    "NULL THEN NULL ELSE json(" JSON_SAVED("q") ") END) AS x FROM sim_problems q "         \
    "WHERE q.run_id = r.id ORDER BY q.position))) END"

/* A simulated run's threads (cpus > 1), an empty array with one CPU. */
#define JSON_THREADS                                                                       \
    "'threads', (SELECT json_group_array(json(x)) FROM (SELECT json_object('thread', "     \
    "t.thread, 'cpu', t.cpu, 'refs', t.refs, 'misses', json_patch('{}', json_object('I1', " \
    "t.i1_misses, 'D1', t.d1_misses, 'L2', t.l2_misses, 'L3', t.l3_misses, 'L4', "         \
    "t.l4_misses)), 'true_sharing', t.true_sharing, 'false_sharing', t.false_sharing, "     \
    "'invalidations', t.invalidations, 'interventions', t.interventions, 'upgrades', "      \
    "t.upgrades, 'local_refs', t.local_refs, 'remote_refs', t.remote_refs, "              \
    "'remote_dirty_refs', t.remote_dirty_refs, 'three_hop_refs', t.three_hop_refs, "       \
    "'stall_cycles', t.stall_cycles) AS x FROM sim_threads t WHERE t.run_id = r.id "       \
    "ORDER BY t.position))"

static const char json_sql[] =
    "SELECT json_object('id', r.id, 'finished', r.finished, 'tool', r.tool, 'program', p.name, "
    "'path', p.path, 'sha256', p.sha256, 'build_id', p.build_id, 'command_line', r.command_line, "
    "'arguments', json(r.arguments), 'cwd', r.cwd, 'machine', r.machine, "
    "'mtool_version', r.mtool_version, 'ran', json(CASE WHEN r.ran THEN 'true' ELSE 'false' END), "
    "'exit_status', r.exit_status, 'user_s', r.user_s, 'sys_s', r.sys_s, 'wall_s', r.wall_s, "
    "'base_user_s', r.base_user_s, 'base_sys_s', r.base_sys_s, 'base_wall_s', r.base_wall_s, "
    "'simulated', CASE WHEN sr.run_id IS NULL THEN NULL ELSE json_object('machine', sr.machine, "
    "'last_level', sr.last_level, 'levels', (SELECT json_group_array(json(lv)) FROM (SELECT "
    "json_object('level', l.level, 'size', l.size, 'ways', l.ways, 'line', l.line, "
    "'replacement', l.replacement, 'inclusion', l.inclusion, 'write_allocate', "
    "json(CASE WHEN l.write_allocate THEN 'true' ELSE 'false' END), 'prefetch', l.prefetch, "
    "'refs', l.refs, 'misses', l.misses, 'cold', l.cold, 'capacity', l.capacity, "
    "'conflict', l.conflict, 'evictions', l.evictions, 'writebacks', l.writebacks, "
    "'lines', l.lines, 'bytes_used', l.bytes_used) AS lv FROM sim_levels l "
    "WHERE l.run_id = r.id ORDER BY l.position)), " JSON_TLB_LEVELS ", "
    "'data_objects', (SELECT json_group_array(json(x)) FROM (SELECT json_object('object', "
    "f.object_id, 'name', d.name, 'kind', d.kind, 'address', d.address, 'size', d.size, "
    "'refs', f.refs, 'misses', json_patch('{}', json_object(" JSON_SLOTS(JSON_SLOT_MISSES) ")), "
    "'use', json_patch('{}', json_object(" JSON_SLOTS(JSON_SLOT_USE) ")), "
    JSON_PROCESSORS ", " JSON_TLB ") AS x "
    "FROM sim_figures f JOIN data_sites d ON d.id = f.data_site_id WHERE f.run_id = r.id "
    "ORDER BY f.object_id)), " JSON_WHAT_IF ", " JSON_THREADS ") END, "
    "'objects', (SELECT json_group_array(json(o)) FROM ("
    "SELECT json_object(" JSON_OBJECT_PLACE ", 'entries', f.entries, "
    "'iterations', f.iterations, 'instructions', f.instructions, 'memory_ops', f.memory_ops, "
    "'measured_cycles', f.measured_cycles, 'predicted_cycles', f.predicted_cycles, "
    "'overhead_cycles', f.overhead_cycles) AS o FROM figures f JOIN sites s ON s.id = f.site_id "
    "WHERE f.run_id = r.id UNION ALL "
    "SELECT json_object(" JSON_OBJECT_PLACE ", 'simulated', json_object('refs', f.refs, "
    "'misses', json_patch('{}', json_object(" JSON_SLOTS(JSON_SLOT_MISSES) ")), "
    "'use', json_patch('{}', json_object(" JSON_SLOTS(JSON_SLOT_USE) ")), "
    JSON_PROCESSORS ", " JSON_TLB ")) "
    "FROM sim_figures f JOIN sites s ON s.id = f.site_id WHERE f.run_id = r.id))) "
    "FROM runs r JOIN programs p ON p.id = r.program_id LEFT JOIN sim_runs sr ON sr.run_id = r.id "
    WHERE_SELECTED "ORDER BY r.id";

/* The columns of a CSV row before the figures: the run and the object (a
 * data object's place is its name and kind, in the last two columns). */
#define CSV_RUN                                                                            \
    "SELECT r.id AS run, r.finished, r.tool, p.name AS program, p.sha256, r.exit_status, "  \
    "f.object_id AS object, "
#define CSV_RUN_AND_OBJECT                                                                 \
    CSV_RUN SITE_KIND " AS kind, s.procedure, s.loop_path, s.file, s.line, s.address, "    \
    "CASE WHEN s.named THEN 'name' ELSE 'address' END AS identified_by, "
#define CSV_SLOT_NULLS(l)                                                                  \
    "NULL AS " l "_cold_misses, NULL AS " l "_capacity_misses, NULL AS " l "_conflict_misses"
#define CSV_USE_NULLS(l) "NULL AS " l "_lines, NULL AS " l "_bytes_used"
#define CSV_SLOT_USE(l) "f." l "_lines, f." l "_bytes_used"
#define CSV_MP_COLUMNS                                                                     \
    "f.true_sharing, f.false_sharing, f.invalidations, f.interventions, f.upgrades, "      \
    "f.local_refs, f.remote_refs, f.remote_dirty_refs, f.three_hop_refs"
#define CSV_MP_NULLS                                                                       \
    "NULL AS true_sharing, NULL AS false_sharing, NULL AS invalidations, "                 \
    "NULL AS interventions, NULL AS upgrades, NULL AS local_refs, NULL AS remote_refs, "   \
    "NULL AS remote_dirty_refs, NULL AS three_hop_refs"
#define CSV_TLB_NULLS                                                                      \
    "NULL AS tlb1_misses, NULL AS tlb2_misses, NULL AS page_walks, NULL AS itlb_misses, "  \
    "NULL AS walk_cycles"
#define CSV_SIM_FIGURES                                                                    \
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL, f.refs, sr.last_level, "                    \
    SIM_MISS_COLUMNS("f.") ", " CSV_SLOT_USE("i1") ", " CSV_SLOT_USE("d1") ", "            \
    CSV_SLOT_USE("l2") ", " CSV_SLOT_USE("l3") ", " CSV_SLOT_USE("l4") ", " CSV_MP_COLUMNS \
    ", " SIM_TLB_COLUMNS("f.")
#define CSV_FROM(table)                                                                    \
    " FROM " table " f JOIN sites s ON s.id = f.site_id JOIN runs r ON r.id = f.run_id "  \
    "JOIN programs p ON p.id = r.program_id "

/* One row per run and object; a simulated run's rows have its references,
 * last level, misses per level slot by cause (named as the metrics of
 * `history diff`), line use per slot, the processors' figures (cpus > 1)
 * and the TLB's,
 * the counts and cycles empty, and
 * the other way round; its data objects' rows come after its code
 * objects', with kind `data`, their name and kind in data_name and
 * data_kind. */
static const char csv_sql[] =
    CSV_RUN_AND_OBJECT "f.entries, f.iterations, f.instructions, f.memory_ops AS memory_ops, "
    "f.measured_cycles, f.predicted_cycles, f.overhead_cycles, NULL AS sim_refs, "
    "NULL AS last_level, " CSV_SLOT_NULLS("i1") ", " CSV_SLOT_NULLS("d1") ", "
    CSV_SLOT_NULLS("l2") ", " CSV_SLOT_NULLS("l3") ", " CSV_SLOT_NULLS("l4") ", "
    CSV_USE_NULLS("i1") ", " CSV_USE_NULLS("d1") ", " CSV_USE_NULLS("l2") ", "
    CSV_USE_NULLS("l3") ", " CSV_USE_NULLS("l4") ", " CSV_MP_NULLS ", " CSV_TLB_NULLS
    ", NULL AS data_name, NULL AS data_kind"
    CSV_FROM("figures") WHERE_SELECTED "UNION ALL "
    CSV_RUN_AND_OBJECT CSV_SIM_FIGURES ", NULL, NULL"
    CSV_FROM("sim_figures") "JOIN sim_runs sr ON sr.run_id = r.id " WHERE_SELECTED "UNION ALL "
    CSV_RUN "'data', NULL, NULL, NULL, NULL, d.address, 'name', " CSV_SIM_FIGURES
    ", d.name, d.kind FROM sim_figures f JOIN data_sites d ON d.id = f.data_site_id "
    "JOIN runs r ON r.id = f.run_id JOIN programs p ON p.id = r.program_id "
    "JOIN sim_runs sr ON sr.run_id = r.id " WHERE_SELECTED
    "ORDER BY run, data_kind, memory_ops DESC, sim_refs DESC";

/* Whether a spreadsheet would take the text for a formula: it starts with
 * =, +, - or @ and is not a number (OWASP's CSV injection rule; a negative
 * overhead keeps its sign). */
static bool formula_like(const char *t)
{
    if (!t[0] || !strchr("=+-@", t[0]))
        return false;
    char *end;
    strtod(t, &end);
    return end == t || *end != '\0';
}

/* RFC 4180: quoted when it holds a comma or a quote.  Control bytes
 * (line breaks included) are written as \xHH: the fields are program-derived
 * (names, paths, command lines), and a CSV file shown on a terminal must not
 * drive it (docs/HISTORY.md, "Export"); a text a spreadsheet would run as a
 * formula gets a leading '. */
static void csv_field(FILE *out, const char *t)
{
    if (!t)
        return;
    bool quoted = t[strcspn(t, ",\"")] != '\0';
    if (quoted)
        fputc('"', out);
    if (formula_like(t))
        fputc('\'', out);
    for (const unsigned char *c = (const unsigned char *)t; *c; c++) {
        if (*c == '"')
            fputs("\"\"", out);
        else if (mt_is_control(*c))
            fprintf(out, "\\x%02x", *c);
        else
            fputc(*c, out);
    }
    if (quoted)
        fputc('"', out);
}

int mt_store_export(mt_store *s, const mt_store_filter *f, bool json, FILE *out, mt_error *err)
{
    sqlite3_stmt *st;
    if (mt_store_prepare(s, json ? json_sql : csv_sql, &st, err) != 0)
        return -1;
    if (f->program)
        sqlite3_bind_text(st, 1, f->program, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 2, f->since);
    sqlite3_bind_double(st, 3, f->until);
    int ncols = sqlite3_column_count(st);
    if (json)
        fputs("[", out);
    else
        for (int c = 0; c < ncols; c++)
            fprintf(out, "%s%s", sqlite3_column_name(st, c), c + 1 < ncols ? "," : "\n");
    size_t nrows = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (json) {
            fprintf(out, "%s\n%s", nrows ? "," : "", (const char *)sqlite3_column_text(st, 0));
        } else
            for (int c = 0; c < ncols; c++) {
                csv_field(out, (const char *)sqlite3_column_text(st, c));
                fputc(c + 1 < ncols ? ',' : '\n', out);
            }
        nrows++;
    }
    if (json)
        fputs("\n]\n", out);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : mt_store_fail(s, err, "exporting");
}
