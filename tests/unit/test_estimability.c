/* Unit tests of analyzer/callgraph.c and analyzer/estimability.c on
 * hand-built programs whose estimability is known (MTOOL section 4). */
#include "cfg_builder.h"
#include "unit.h"

#include <math.h>

#define MAXP 16

typedef struct {
    mt_program prog;
    mt_procedure procs[MAXP];
} test_program;

/* One-block procedures, or a procedure with a loop (blocks 0 → 1 ↔ 2 → 3)
 * whose loop body is blocks 1..2; calls are then placed with add_call. */
static uint32_t add_proc(test_program *t, const char *name, bool with_loop)
{
    uint32_t i = t->prog.nprocs++;
    if (with_loop) {
        const test_edge e[] = {{0, 1}, {1, 2}, {1, 3}, {2, 1}, {3, MT_NONE}};
        build_procedure(&t->procs[i], name, 4, e, MT_ARRAY_LEN(e));
    } else {
        const test_edge e[] = {{0, MT_NONE}};
        build_procedure(&t->procs[i], name, 1, e, 1);
    }
    t->procs[i].entry = 0x1000 + 0x100u * i;
    return i;
}

static void analyze_program(test_program *t, const uint64_t *counts)
{
    t->prog.procs = t->procs;
    for (uint32_t i = 0; i < t->prog.nprocs; i++)
        analyze_procedure(&t->procs[i]);
    mt_build_callgraph(&t->prog);
    mt_compute_estimability(&t->prog, counts);
}

static void free_program(test_program *t)
{
    for (uint32_t i = 0; i < t->prog.nprocs; i++) {
        mt_procedure_free_cfg(&t->procs[i]);
        free(t->procs[i].name);
    }
    free(t->prog.cg_edges);
}

/* The paper's criterion must agree with the dominator test. */
static void check_tot_tdes_agree(const test_program *t, const char *what)
{
    bool agree = true;
    for (uint32_t i = 0; i < t->prog.nprocs; i++) {
        const mt_procedure *p = &t->procs[i];
        if (p->recursive || p->is_plt || p->tdes < 0)
            continue;
        bool equal = fabs(p->tot - p->tdes) <= 1e-9 * p->tdes;
        if (equal != p->estimable)
            agree = false;
    }
    CHECK(agree, "%s: estimable <=> Tot = TDES for every non-recursive procedure", what);
}

static void test_shared_callee(void)
{
    test_program t = {0};
    uint32_t m = add_proc(&t, "main", false), a = add_proc(&t, "a", false), b = add_proc(&t, "b", false),
             c = add_proc(&t, "shared", false);
    add_call(&t.procs[m], 0, a, MT_CALL_DIRECT);
    add_call(&t.procs[m], 0, b, MT_CALL_DIRECT);
    add_call(&t.procs[a], 0, c, MT_CALL_DIRECT);
    add_call(&t.procs[b], 0, c, MT_CALL_DIRECT);
    analyze_program(&t, NULL);
    CHECK(t.procs[m].estimable && !t.procs[a].estimable && !t.procs[b].estimable && t.procs[c].estimable,
          "shared callee: main and shared estimable, a and b not");
    CHECK(t.procs[a].tot == 1.5 && t.procs[a].tdes == 2 && t.procs[m].tot == 4 && t.procs[m].tdes == 4,
          "shared callee: Tot(a)=1.5 < TDES(a)=2, Tot(main)=TDES(main)=4 (got %g/%g, %g/%g)", t.procs[a].tot,
          t.procs[a].tdes, t.procs[m].tot, t.procs[m].tdes);
    CHECK(t.prog.ncg_edges == 4, "call graph has 4 edges");
    check_tot_tdes_agree(&t, "shared callee");
    free_program(&t);
}

static void test_leaf_subtree(void)
{
    test_program t = {0};
    uint32_t m = add_proc(&t, "main", false), l = add_proc(&t, "leafy", false), l1 = add_proc(&t, "leaf1", false),
             l2 = add_proc(&t, "leaf2", false);
    add_call(&t.procs[m], 0, l, MT_CALL_DIRECT);
    add_call(&t.procs[l], 0, l1, MT_CALL_DIRECT);
    add_call(&t.procs[l], 0, l2, MT_CALL_DIRECT);
    add_call(&t.procs[l], 0, l2, MT_CALL_DIRECT);
    analyze_program(&t, NULL);
    CHECK(t.procs[l].estimable && t.procs[l1].estimable && t.procs[l2].estimable && t.procs[l].tdes == 3,
          "leaf-only subtree is estimable, TDES(leafy)=3");
    check_tot_tdes_agree(&t, "leaf subtree");
    free_program(&t);
}

/* A loop whose two callees share a helper nobody else calls: the loop is
 * estimable although neither callee is (the paper's per-callee sum of TDES
 * would refuse it). */
static void test_loop_with_shared_helper(void)
{
    test_program t = {0};
    uint32_t m = add_proc(&t, "main", true), x = add_proc(&t, "x", false), y = add_proc(&t, "y", false),
             h = add_proc(&t, "helper", false);
    add_call(&t.procs[m], 2, x, MT_CALL_DIRECT);
    add_call(&t.procs[m], 2, y, MT_CALL_DIRECT);
    add_call(&t.procs[x], 0, h, MT_CALL_DIRECT);
    add_call(&t.procs[y], 0, h, MT_CALL_DIRECT);
    analyze_program(&t, NULL);
    CHECK(t.procs[m].nloops == 1 && t.procs[m].loops[0].estimable, "loop whose callees share a helper: estimable");
    CHECK(!t.procs[x].estimable && !t.procs[y].estimable, "...while its callees are not");
    CHECK(t.procs[m].loops[0].tdes == 4 && t.procs[m].loops[0].tot == 4, "loop: Tot = TDES = 4 (got %g/%g)",
          t.procs[m].loops[0].tot, t.procs[m].loops[0].tdes);
    free_program(&t);
}

static void test_loop_callee_called_outside(void)
{
    test_program t = {0};
    uint32_t m = add_proc(&t, "main", true), f = add_proc(&t, "f", false);
    add_call(&t.procs[m], 2, f, MT_CALL_DIRECT); /* in the loop */
    add_call(&t.procs[m], 3, f, MT_CALL_DIRECT); /* after it */
    analyze_program(&t, NULL);
    CHECK(!t.procs[m].loops[0].estimable && t.procs[m].estimable,
          "loop calling a procedure also called outside it: loop not estimable, procedure is");
    CHECK(t.procs[m].loops[0].tot == 1.5 && t.procs[m].loops[0].tdes == 2, "loop Tot=1.5, TDES=2 (got %g/%g)",
          t.procs[m].loops[0].tot, t.procs[m].loops[0].tdes);
    free_program(&t);
}

static void test_recursion(void)
{
    test_program t = {0};
    uint32_t m = add_proc(&t, "main", false), f = add_proc(&t, "fact", false), u = add_proc(&t, "other", false),
             p = add_proc(&t, "ping", false), q = add_proc(&t, "pong", false);
    add_call(&t.procs[m], 0, f, MT_CALL_DIRECT);
    add_call(&t.procs[f], 0, f, MT_CALL_DIRECT);
    /* ping <-> pong, entered at ping from main and at pong from other. */
    add_call(&t.procs[m], 0, p, MT_CALL_DIRECT);
    add_call(&t.procs[m], 0, u, MT_CALL_DIRECT);
    add_call(&t.procs[u], 0, q, MT_CALL_DIRECT);
    add_call(&t.procs[p], 0, q, MT_CALL_DIRECT);
    add_call(&t.procs[q], 0, p, MT_CALL_DIRECT);
    analyze_program(&t, NULL);
    CHECK(t.procs[f].recursive && t.procs[f].estimable, "self-recursion entered once: recursive and estimable");
    CHECK(t.procs[p].recursive && t.procs[q].recursive && t.procs[p].scc == t.procs[q].scc,
          "mutual recursion: one SCC");
    CHECK(!t.procs[p].estimable && !t.procs[q].estimable && !t.procs[u].estimable && t.procs[m].estimable,
          "mutual recursion entered from two places: estimable nowhere inside it; main still estimable");
    free_program(&t);
}

static void test_address_taken_and_indirect(void)
{
    test_program t = {0};
    uint32_t m = add_proc(&t, "main", false), cb = add_proc(&t, "callback", false), i = add_proc(&t, "calls_ptr", false),
             plt = add_proc(&t, "qsort@plt", false);
    t.procs[plt].is_plt = true;
    t.procs[cb].address_taken = true;
    add_call(&t.procs[m], 0, cb, MT_CALL_DIRECT);
    add_call(&t.procs[m], 0, i, MT_CALL_DIRECT);
    add_call(&t.procs[m], 0, plt, MT_CALL_PLT);
    add_call(&t.procs[i], 0, MT_NONE, MT_CALL_INDIRECT);
    analyze_program(&t, NULL);
    CHECK(t.procs[cb].estimable && !t.procs[i].estimable && !t.procs[m].estimable,
          "address-taken callee and an indirect call make their callers not estimable");
    CHECK(!t.procs[plt].estimable && t.procs[plt].tdes < 0, "PLT stubs are not m-objects");
    free_program(&t);
}

static void test_dynamic_counts(void)
{
    test_program t = {0};
    uint32_t m = add_proc(&t, "main", false), a = add_proc(&t, "a", false), b = add_proc(&t, "b", false),
             c = add_proc(&t, "shared", false);
    add_call(&t.procs[m], 0, a, MT_CALL_DIRECT);
    add_call(&t.procs[m], 0, b, MT_CALL_DIRECT);
    add_call(&t.procs[a], 0, c, MT_CALL_DIRECT);
    add_call(&t.procs[b], 0, c, MT_CALL_DIRECT);
    /* Sites in procedure order: main→a, main→b, a→shared, b→shared (never ran). */
    const uint64_t counts[] = {10, 1, 1000, 0};
    analyze_program(&t, counts);
    CHECK(t.procs[a].estimable, "a call that never ran drops out: a becomes estimable");
    CHECK(t.procs[b].estimable && t.procs[m].estimable, "b (no calls ran) and main estimable");
    free_program(&t);
}

int main(void)
{
    test_shared_callee();
    test_leaf_subtree();
    test_loop_with_shared_helper();
    test_loop_callee_called_outside();
    test_recursion();
    test_address_taken_and_indirect();
    test_dynamic_counts();
    return unit_finish();
}
