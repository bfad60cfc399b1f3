/* Unit tests of correlate/figures.c's nesting across objects on hand-built
 * programs: a library procedure reached from the executable's code through
 * a pointer that pass 2 made known work (a cross callee, mt_object_call's
 * cross_callee) lies inside the executable's objects whose blocks make that
 * call, and only those. */
#include "cfg_builder.h"
#include "unit.h"

#include "correlate/correlate.h"

/* main: blocks 0 -> 1 <-> 2 -> 3, its loop {1, 2}. */
static void build_main(mt_procedure *p)
{
    const test_edge e[] = {{0, 1}, {1, 2}, {1, 3}, {2, 1}, {3, MT_NONE}};
    build_procedure(p, "main", 4, e, MT_ARRAY_LEN(e));
    analyze_procedure(p);
}

static void build_leaf(mt_procedure *p, const char *name, uint64_t entry)
{
    const test_edge e[] = {{0, MT_NONE}};
    build_procedure(p, name, 1, e, 1);
    p->entry = p->blocks[0].start = entry;
    p->blocks[0].end = entry + 16;
}

/* Whether candidate `which` of `sel` (timed, its first ntimed) comes out
 * outermost. */
static bool outermost(const mt_selection *sel, size_t which)
{
    mt_timer_totals *totals = mt_xcalloc(sel->ntimed + 1, sizeof *totals);
    mt_timer_totals *const runs[] = {totals};
    mt_correlate_clock clk = {.tsc_per_cycle = 1, .timer_bias_ticks = 0};
    size_t n;
    mt_mobject_figures *rows = mt_correlate(sel, runs, 1, &clk, &n);
    bool out = false;
    for (size_t i = 0; i < n; i++)
        if (rows[i].cand == &sel->cands[which])
            out = rows[i].outermost;
    free(rows);
    free(totals);
    return out;
}

static void test_cross_callee_nesting(void)
{
    test_program exe = {0}, lib = {0};
    build_main(&exe.procs[0]);
    exe.prog.nprocs = 1;
    exe.prog.procs = exe.procs;
    /* in the loop: a pointer call into lib's k1; after it: into k2 */
    add_call(&exe.procs[0], 2, MT_NONE, MT_CALL_INDIRECT);
    add_call(&exe.procs[0], 3, MT_NONE, MT_CALL_INDIRECT);
    exe.procs[0].calls[0].cross_callee = 1;
    exe.procs[0].calls[1].cross_callee = 2;
    build_leaf(&lib.procs[0], "k1", 0x1000);
    build_leaf(&lib.procs[1], "k2", 0x2000);
    lib.prog.nprocs = 2;
    lib.prog.procs = lib.procs;

    mt_object_call calls[] = {{.from = &exe.prog, .to = &lib.prog, .stub = MT_NONE, .proc = 0, .cross_callee = 1},
                              {.from = &exe.prog, .to = &lib.prog, .stub = MT_NONE, .proc = 1, .cross_callee = 2}};
    mt_candidate cands[] = {{.proc = 0, .loop = 0, .prog = &exe.prog},
                            {.proc = 0, .loop = MT_NONE, .prog = &lib.prog, .object = "lib.so"},
                            {.proc = 1, .loop = MT_NONE, .prog = &lib.prog, .object = "lib.so"},
                            {.proc = 0, .loop = MT_NONE, .prog = &exe.prog}};
    mt_selection sel = {.cands = cands, .ncands = 3, .ntimed = 3, .object_calls = calls, .nobject_calls = 2};
    CHECK(outermost(&sel, 0) && !outermost(&sel, 1) && outermost(&sel, 2),
          "main's loop holds k1, called through a pointer in its blocks, not k2, called after it");
    sel.nobject_calls = 1;
    CHECK(outermost(&sel, 2) && !outermost(&sel, 1), "k2's call not known work: k2 outside every object");
    /* main itself timed (k2 first among the timed) */
    mt_candidate whole[] = {cands[2], cands[3]};
    mt_selection all = {.cands = whole, .ncands = 2, .ntimed = 2, .object_calls = calls, .nobject_calls = 2};
    CHECK(!outermost(&all, 0) && outermost(&all, 1), "main holds k2, called from its own blocks");
    for (uint32_t p = 0; p < 2; p++) {
        mt_procedure_free_cfg(&lib.procs[p]);
        free(lib.procs[p].name);
    }
    mt_procedure_free_cfg(&exe.procs[0]);
    free(exe.procs[0].name);
}

int main(void)
{
    test_cross_callee_nesting();
    return unit_finish();
}
