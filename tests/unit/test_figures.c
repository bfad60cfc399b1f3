/* Unit tests of correlate/ on hand-built programs calling a library's
 * procedure through a pointer that pass 2 made known work (a cross callee):
 * figures.c's nesting (it lies inside the executable's objects whose
 * blocks make the call, and only those) and select.c's predictions, memory
 * operations and MTOOL's rules for a callee shared by two callers. */
#include "cfg_builder.h"
#include "unit.h"

#include "correlate/correlate.h"

#include <math.h>
#include <string.h>

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
    static const double one = 1;
    mt_correlate_clock clk = {.tsc_per_cycle = &one, .timer_bias_ticks = 0};
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

/* main (its loop calling libx.so's procedure at 0x1000 through a pointer
 * 100 times, and `a` once), `a` (the same procedure once): every block 10
 * cycles and 1 memory read per execution, the callee 1000 cycles and 100
 * memory operations per call (libx.so's figure, mt_program_costs.cross_imports). */
static void test_cross_callee_selection(void)
{
    test_program t = {0};
    build_main(&t.procs[0]);
    build_leaf(&t.procs[1], "a", 0x2000);
    t.prog.nprocs = 2;
    t.prog.procs = t.procs;
    t.prog.entry = t.procs[0].entry;
    add_call(&t.procs[0], 0, 1, MT_CALL_DIRECT);
    add_call(&t.procs[0], 2, MT_NONE, MT_CALL_INDIRECT);
    add_call(&t.procs[1], 0, MT_NONE, MT_CALL_INDIRECT);
    t.procs[0].calls[1].loop = 0;
    t.procs[0].calls[1].cross_callee = t.procs[1].calls[0].cross_callee = 1;
    t.prog.cross_callees = mt_xcalloc(1, sizeof *t.prog.cross_callees);
    t.prog.cross_callees[0] = (mt_cross_callee){mt_xstrdup("libx.so"), 0x1000, true};
    t.prog.ncross_callees = 1;
    mt_build_callgraph(&t.prog);
    mt_program_costs costs = {.nprocs = 2};
    costs.first = mt_xcalloc(3, sizeof *costs.first);
    costs.first[1] = 4, costs.first[2] = 5;
    costs.costs = mt_xcalloc(5, sizeof *costs.costs);
    costs.cross_imports = mt_xcalloc(1, sizeof *costs.cross_imports);
    costs.cross_imports[0] = (mt_import_work){.cycles = 1000, .memops = 100};
    uint64_t counts[] = {1, 101, 100, 1, 1}; /* main's loop: 100 iterations */
    for (uint32_t i = 0; i < 5; i++)
        costs.costs[i].cycles = 10;
    for (uint32_t p = 0; p < 2; p++)
        for (uint32_t b = 0; b < t.procs[p].nblocks; b++)
            t.procs[p].blocks[b].mem_reads = 1;
    mt_estimate_with_pass1(&t.prog, counts);
    CHECK(t.procs[0].estimable && !t.procs[0].loops[0].estimable && !t.procs[1].estimable,
          "estimability: main holds every call of the cross callee, its loop and a share them");
    mt_select_options o;
    mt_select_options_init(&o);
    o.coverage = 1;
    mt_selection sel;
    mt_select(&t.prog, &costs, counts, &o, &sel);
    const mt_candidate *loop = NULL, *whole = NULL, *a = NULL;
    for (size_t i = 0; i < sel.ncands; i++) {
        const mt_candidate *c = &sel.cands[i];
        if (c->proc == 0 && c->loop == 0)
            loop = c;
        else if (c->proc == 0 && c->loop == MT_NONE && !c->region.n)
            whole = c;
        else if (c->proc == 1 && !c->region.n)
            a = c;
    }
    CHECK(loop && fabs(loop->predicted - (201 * 10 + 100 * 1000)) < 1e-6 && loop->memops == 201 + 100 * 100 &&
              strstr(loop->warning, "98% caller rule (libx.so:0x1000)"),
          "main's loop: its blocks + 100 calls x 1000 cycles (%.0f), 201 + 100 x 100 memory operations "
          "(%llu), by the 98%% caller rule naming the callee (%s)",
          loop ? loop->predicted : 0, loop ? (unsigned long long)loop->memops : 0, loop ? loop->warning : "");
    CHECK(whole && whole->memops == 204 + 101 * 100,
          "main: the memory operations of its blocks, a's, and 101 calls x 100 (%llu)",
          whole ? (unsigned long long)whole->memops : 0);
    CHECK(a && a->status == MT_CAND_NOT_ESTIMABLE &&
              strcmp(a->warning, "shares a callee with other callers: libx.so:0x1000") == 0,
          "a: 1 of the callee's 101 calls, not negligible: not estimable (%s)", a ? a->warning : "");
    mt_selection_free(&sel);
    mt_program_costs_free(&costs);
    free_program(&t);
}

/* Two runs of one timed loop, each at the clock measured around it: run 0
 * 1000 ticks at 1 tick a cycle, run 1 850 ticks (100 of them outside) at
 * 0.8, a faster clock.  Its least is run 0's 1000 cycles, not run 1's 850
 * ticks at the runs' mean clock (944 cycles: a clock change read as a
 * gain); the most run 1's 1062.5; the outside time the least run's. */
static void test_clock_per_run(void)
{
    test_program t = {0};
    build_main(&t.procs[0]);
    t.prog.nprocs = 1;
    t.prog.procs = t.procs;
    mt_candidate cand = {.proc = 0, .loop = 0, .prog = &t.prog, .predicted = 900};
    mt_selection sel = {.cands = &cand, .ncands = 1, .ntimed = 1};
    mt_timer_totals run0 = {.entries = 1, .inclusive = 1000, .exclusive = 1000, .outside = 0},
                    run1 = {.entries = 1, .inclusive = 950, .exclusive = 950, .outside = 100};
    mt_timer_totals *const runs[] = {&run0, &run1};
    static const double clock[] = {1, 0.8};
    mt_correlate_clock clk = {.tsc_per_cycle = clock, .timer_bias_ticks = 0};
    size_t n;
    mt_mobject_figures *rows = mt_correlate(&sel, runs, 2, &clk, &n);
    CHECK(n == 1 && fabs(rows[0].measured - 1000) < 1e-9 && fabs(rows[0].measured_max - 1062.5) < 1e-9 &&
              rows[0].outside == 0 && fabs(rows[0].overhead - 100) < 1e-9,
          "each run in cycles at its own clock: least 1000 (%g), most 1062.5 (%g), outside 0 (%g)",
          n ? rows[0].measured : 0, n ? rows[0].measured_max : 0, n ? rows[0].outside : 0);
    static const double swapped[] = {0.8, 1};
    clk.tsc_per_cycle = swapped;
    free(rows);
    rows = mt_correlate(&sel, runs, 2, &clk, &n);
    CHECK(n == 1 && fabs(rows[0].measured - 850) < 1e-9 && fabs(rows[0].outside - 100) < 1e-9,
          "the clocks the other way round: run 1 the least, 850 cycles (%g), its 100 outside (%g)",
          n ? rows[0].measured : 0, n ? rows[0].outside : 0);
    free(rows);
    /* The program measured run 1's clock as the loop ran: its 950 ticks
     * were 1187.5 cycles (0.8 a cycle), whatever the clock around the run. */
    run1.cycles = 1187;
    rows = mt_correlate(&sel, runs, 2, &clk, &n);
    double at = 950.0 / 1187;
    CHECK(n == 1 && fabs(rows[0].measured - 850 / at) < 1e-9 && rows[0].clock_in_program &&
              fabs(rows[0].tsc_per_cycle - at) < 1e-12 && fabs(rows[0].outside - 100 / at) < 1e-9,
          "run 1 at the clock its thread measured: %g cycles (%g), the clock %g (%g), from the program",
          n ? rows[0].measured : 0, 850 / at, n ? rows[0].tsc_per_cycle : 0, at);
    free(rows);
    /* One run of two ranks, 600 ticks at 0.5 a cycle and 400 (100 outside)
     * at 1: 1200 + 300 cycles, the sum of the ranks' own figures, where
     * their summed ticks at their ticks-weighted clock (1000 ticks over
     * 1600 cycles) give 1440. */
    mt_timer_totals rank0 = {.entries = 1, .inclusive = 600, .cycles = 1200},
                    rank1 = {.entries = 1, .inclusive = 400, .outside = 100, .cycles = 400},
                    job = {.entries = 2, .inclusive = 1000, .outside = 100, .cycles = 1600};
    mt_timer_totals *const job_runs[] = {&job}, *const ranks[] = {&rank0, &rank1};
    clk = (mt_correlate_clock){.tsc_per_cycle = clock, .parts = ranks, .nparts = 2};
    rows = mt_correlate(&sel, job_runs, 1, &clk, &n);
    CHECK(n == 1 && fabs(rows[0].measured - 1500) < 1e-9 && fabs(rows[0].outside - 100) < 1e-9,
          "a job's figure the sum of its ranks' at their own clocks: 1500 cycles (%g), outside 100 (%g)",
          n ? rows[0].measured : 0, n ? rows[0].outside : 0);
    free(rows);
    mt_procedure_free_cfg(&t.procs[0]);
    free(t.procs[0].name);
}

int main(void)
{
    test_clock_per_run();
    test_cross_callee_nesting();
    test_cross_callee_selection();
    return unit_finish();
}
