/* Unit tests of analyzer/callgraph.c and analyzer/estimability.c on
 * hand-built programs whose estimability is known (MTOOL section 4), and on
 * random programs checked against a brute-force definition: x is estimable
 * iff every node reachable from x becomes unreachable from the root once x is
 * removed, and (non-recursive x) iff Tot(x) = TDES(x). */
#include "cfg_builder.h"
#include "unit.h"

#include <math.h>

#define MAXP TEST_MAXP

/* Procedure shapes: one block; a loop (blocks 0 → 1 ↔ 2 → 3, body {1, 2});
 * or two nested loops (0 → 1 → 2 ↔ 3, 3 → 1 | 4: outer {1,2,3}, inner {2,3}). */
enum { FLAT, LOOP, NEST };

static uint32_t add_proc(test_program *t, const char *name, int shape)
{
    uint32_t i = t->prog.nprocs++;
    mt_procedure *p = &t->procs[i];
    if (shape == LOOP) {
        const test_edge e[] = {{0, 1}, {1, 2}, {1, 3}, {2, 1}, {3, MT_NONE}};
        build_procedure(p, name, 4, e, MT_ARRAY_LEN(e));
    } else if (shape == NEST) {
        const test_edge e[] = {{0, 1}, {1, 2}, {2, 3}, {3, 2}, {3, 1}, {3, 4}, {4, MT_NONE}};
        build_procedure(p, name, 5, e, MT_ARRAY_LEN(e));
    } else {
        const test_edge e[] = {{0, MT_NONE}};
        build_procedure(p, name, 1, e, 1);
    }
    /* Procedures sorted by entry, blocks inside their procedure. */
    p->entry = 0x10000 + 0x1000ull * i;
    for (uint32_t b = 0; b < p->nblocks; b++) {
        p->blocks[b].start += p->entry - 0x1000;
        p->blocks[b].end += p->entry - 0x1000;
    }
    p->size = p->blocks[p->nblocks - 1].end - p->entry;
    return i;
}

static void call(test_program *t, uint32_t caller, uint32_t block, uint32_t callee)
{
    mt_call_kind kind = callee != MT_NONE && t->procs[callee].is_plt ? MT_CALL_PLT : MT_CALL_DIRECT;
    add_call(&t->procs[caller], block, callee, kind);
}

static void analyze_program(test_program *t, const uint64_t *counts)
{
    t->prog.procs = t->procs;
    for (uint32_t i = 0; i < t->prog.nprocs; i++)
        analyze_procedure(&t->procs[i]);
    mt_build_callgraph(&t->prog);
    mt_compute_estimability(&t->prog, counts, NULL);
}

static bool tot_equals_tdes(double tot, double tdes)
{
    return tdes >= 0 && fabs(tot - tdes) <= 1e-9 * tdes;
}

/* The paper's criterion must agree with the dominator test on every
 * non-recursive procedure and loop (none of these programs has unknown work
 * outside what `skip` lists). */
static void check_tot_tdes_agree(const test_program *t, const char *what)
{
    bool agree = true;
    for (uint32_t i = 0; i < t->prog.nprocs; i++) {
        const mt_procedure *p = &t->procs[i];
        if (p->is_plt || p->recursive)
            continue;
        agree &= p->tdes >= 0 && tot_equals_tdes(p->tot, p->tdes) == p->estimable;
        for (uint32_t l = 0; l < p->nloops; l++)
            agree &= p->loops[l].tdes >= 0 && tot_equals_tdes(p->loops[l].tot, p->loops[l].tdes) == p->loops[l].estimable;
    }
    CHECK(agree, "%s: estimable <=> Tot = TDES for every non-recursive procedure and loop", what);
}

/* MTOOL's figure: main → {a, b}, a → c, b → c. */
static void test_shared_callee(void)
{
    test_program t = {0};
    uint32_t m = add_proc(&t, "main", FLAT), a = add_proc(&t, "a", FLAT), b = add_proc(&t, "b", FLAT),
             c = add_proc(&t, "shared", FLAT);
    call(&t, m, 0, a);
    call(&t, m, 0, b);
    call(&t, a, 0, c);
    call(&t, b, 0, c);
    analyze_program(&t, NULL);
    CHECK(t.procs[m].estimable && !t.procs[a].estimable && !t.procs[b].estimable && t.procs[c].estimable,
          "shared callee: main and shared estimable, a and b not");
    CHECK(t.procs[a].tot == 1.5 && t.procs[a].tdes == 2 && t.procs[m].tot == 4 && t.procs[m].tdes == 4 &&
              t.procs[c].tot == 1 && t.procs[c].tdes == 1,
          "shared callee: Tot(a)=1.5 < TDES(a)=2, Tot(main)=TDES(main)=4 (got %g/%g, %g/%g)", t.procs[a].tot,
          t.procs[a].tdes, t.procs[m].tot, t.procs[m].tdes);
    check_tot_tdes_agree(&t, "shared callee");
    free_program(&t);
}

static void test_leaf_subtree(void)
{
    test_program t = {0};
    uint32_t m = add_proc(&t, "main", FLAT), l = add_proc(&t, "leafy", FLAT), l1 = add_proc(&t, "leaf1", FLAT),
             l2 = add_proc(&t, "leaf2", FLAT);
    call(&t, m, 0, l);
    call(&t, l, 0, l1);
    call(&t, l, 0, l2);
    call(&t, l, 0, l2);
    analyze_program(&t, NULL);
    CHECK(t.procs[l].estimable && t.procs[l1].estimable && t.procs[l2].estimable && t.procs[m].estimable &&
              t.procs[l].tdes == 3 && t.procs[l].tot == 3 && t.procs[m].tdes == 4,
          "leaf-only subtree is estimable, Tot = TDES(leafy) = 3");
    check_tot_tdes_agree(&t, "leaf subtree");
    free_program(&t);
}

/* A loop whose two callees share a helper: the loop is estimable although
 * neither callee is (the paper's per-callee sum of TDES would refuse it) —
 * unless the helper is also called outside the loop. */
static void test_loop_with_shared_helper(void)
{
    for (int outside = 0; outside < 2; outside++) {
        test_program t = {0};
        uint32_t m = add_proc(&t, "main", LOOP), x = add_proc(&t, "x", FLAT), y = add_proc(&t, "y", FLAT),
                 h = add_proc(&t, "helper", FLAT);
        call(&t, m, 2, x);
        call(&t, m, 2, y);
        call(&t, x, 0, h);
        call(&t, y, 0, h);
        if (outside)
            call(&t, m, 3, h);
        analyze_program(&t, NULL);
        const mt_loop *loop = t.procs[m].nloops == 1 ? &t.procs[m].loops[0] : NULL;
        if (!outside) {
            CHECK(loop && loop->estimable && loop->tdes == 4 && loop->tot == 4,
                  "loop whose callees share a helper: estimable, Tot = TDES = 4 (got %g/%g)", loop ? loop->tot : 0,
                  loop ? loop->tdes : 0);
            CHECK(!t.procs[x].estimable && !t.procs[y].estimable && t.procs[m].estimable,
                  "...while its callees are not; main is");
        } else {
            CHECK(loop && !loop->estimable && t.procs[m].estimable,
                  "helper also called after the loop: loop not estimable, main still is");
        }
        check_tot_tdes_agree(&t, outside ? "helper called outside the loop" : "loop with shared helper");
        free_program(&t);
    }
}

static void test_loop_callee_called_outside(void)
{
    test_program t = {0};
    uint32_t m = add_proc(&t, "main", LOOP), f = add_proc(&t, "f", FLAT);
    call(&t, m, 2, f); /* in the loop */
    call(&t, m, 3, f); /* after it */
    analyze_program(&t, NULL);
    CHECK(!t.procs[m].loops[0].estimable && t.procs[m].estimable,
          "loop calling a procedure also called outside it: loop not estimable, procedure is");
    CHECK(t.procs[m].loops[0].tot == 1.5 && t.procs[m].loops[0].tdes == 2, "loop Tot=1.5, TDES=2 (got %g/%g)",
          t.procs[m].loops[0].tot, t.procs[m].loops[0].tdes);
    check_tot_tdes_agree(&t, "loop callee called outside");
    free_program(&t);
}

/* Calls in an inner loop belong to it and to the outer loop; a call in the
 * outer loop only, to the outer loop. */
static void test_nested_loops(void)
{
    test_program t = {0};
    uint32_t m = add_proc(&t, "main", NEST), f = add_proc(&t, "f", FLAT), g = add_proc(&t, "g", FLAT);
    call(&t, m, 3, f); /* inner loop */
    call(&t, m, 1, g); /* outer loop, outside the inner one */
    call(&t, m, 1, f);
    analyze_program(&t, NULL);
    const mt_procedure *p = &t.procs[m];
    CHECK(p->nloops == 2 && p->loops[1].parent == 0, "nest: two loops");
    if (p->nloops == 2)
        CHECK(!p->loops[1].estimable && p->loops[0].estimable && p->loops[0].tdes == 3 && p->loops[1].tdes == 2,
              "f called in both loops: inner loop not estimable, outer is (TDES 3 and 2)");
    check_tot_tdes_agree(&t, "nested loops");
    free_program(&t);
}

static void test_recursion(void)
{
    test_program t = {0};
    uint32_t m = add_proc(&t, "main", FLAT), f = add_proc(&t, "fact", FLAT), u = add_proc(&t, "other", FLAT),
             p = add_proc(&t, "ping", FLAT), q = add_proc(&t, "pong", FLAT), r = add_proc(&t, "even", FLAT),
             s = add_proc(&t, "odd", FLAT), k = add_proc(&t, "leaf", FLAT);
    call(&t, m, 0, f);
    call(&t, f, 0, f);
    call(&t, f, 0, k);
    /* ping <-> pong, entered at ping from main and at pong from other. */
    call(&t, m, 0, p);
    call(&t, m, 0, u);
    call(&t, u, 0, q);
    call(&t, p, 0, q);
    call(&t, q, 0, p);
    /* even <-> odd, entered only at even. */
    call(&t, m, 0, r);
    call(&t, r, 0, s);
    call(&t, s, 0, r);
    analyze_program(&t, NULL);
    CHECK(t.procs[f].recursive && t.procs[f].estimable && t.procs[k].estimable && !t.procs[m].recursive,
          "self-recursion entered once: recursive and estimable");
    CHECK(t.procs[f].tot == 2 && t.procs[f].tdes == 2, "self-recursion: Tot = TDES = 2 (itself, leaf)");
    CHECK(t.procs[p].recursive && t.procs[q].recursive && t.procs[p].scc == t.procs[q].scc &&
              t.procs[p].scc != t.procs[r].scc && t.prog.nsccs == t.prog.nprocs - 2,
          "mutual recursion: one SCC per cycle");
    CHECK(!t.procs[p].estimable && !t.procs[q].estimable && !t.procs[u].estimable && t.procs[m].estimable,
          "mutual recursion entered from two places: estimable nowhere inside it; main still estimable");
    CHECK(t.procs[r].estimable && !t.procs[s].estimable && t.procs[r].tdes == 2 && t.procs[s].tdes == 2,
          "mutual recursion entered at one procedure: that one is estimable; TDES of the component is 2");
    check_tot_tdes_agree(&t, "recursion");
    free_program(&t);
}

static void test_address_taken_and_entry(void)
{
    test_program t = {0};
    uint32_t m = add_proc(&t, "main", FLAT), cb = add_proc(&t, "callback", FLAT), st = add_proc(&t, "_start", FLAT),
             w = add_proc(&t, "worker", FLAT);
    t.procs[cb].address_taken = true;
    call(&t, m, 0, cb);
    call(&t, st, 0, m);
    call(&t, m, 0, w);
    t.prog.entry = t.procs[m].entry; /* main is also the ELF entry point */
    analyze_program(&t, NULL);
    CHECK(t.procs[cb].estimable && !t.procs[m].estimable && !t.procs[st].estimable && t.procs[w].estimable,
          "address-taken callee and an entry-point callee make their callers not estimable");
    CHECK(t.procs[m].tot == 2.5 && t.procs[m].tdes == 3 && t.procs[st].tot == 1 + 2.5 / 2,
          "root calls count in calls(->w): Tot(main) = 1 + 1/2 + 1 (got %g), Tot(_start) = 1 + Tot(main)/2 (got %g)",
          t.procs[m].tot, t.procs[st].tot);
    check_tot_tdes_agree(&t, "address taken");
    free_program(&t);
}

static void test_unknown_work(void)
{
    test_program t = {0};
    uint32_t m = add_proc(&t, "main", FLAT), i = add_proc(&t, "calls_ptr", FLAT), n = add_proc(&t, "nest", NEST),
             d = add_proc(&t, "odd_direct", FLAT), u = add_proc(&t, "unresolved", LOOP),
             plt = add_proc(&t, "qsort@plt", FLAT), lib = add_proc(&t, "uses_libc", LOOP);
    t.procs[plt].is_plt = true;
    t.procs[u].resolved = false;
    call(&t, m, 0, i);
    call(&t, m, 0, n);
    call(&t, m, 0, d);
    call(&t, m, 0, u);
    call(&t, m, 0, lib);
    add_call(&t.procs[i], 0, MT_NONE, MT_CALL_INDIRECT);
    add_call(&t.procs[n], 3, MT_NONE, MT_CALL_INDIRECT); /* in the inner loop */
    add_call(&t.procs[d], 0, MT_NONE, MT_CALL_DIRECT);   /* to where no procedure starts */
    call(&t, lib, 2, plt);
    analyze_program(&t, NULL);
    const mt_procedure *pn = &t.procs[n];
    CHECK(!t.procs[i].estimable && !t.procs[m].estimable, "indirect call: its procedure and callers not estimable");
    CHECK(pn->nloops == 2 && !pn->loops[1].estimable && !pn->loops[0].estimable && !pn->estimable,
          "indirect call in an inner loop: that loop, the outer loop and the procedure not estimable");
    CHECK(!t.procs[d].estimable, "direct call to an unknown address: not estimable");
    CHECK(!t.procs[u].estimable && !t.procs[u].loops[0].estimable, "unresolved procedure and its loops: not estimable");
    CHECK(t.procs[lib].estimable && t.procs[lib].loops[0].estimable && t.procs[lib].tdes == 1,
          "calls to PLT stubs are left out: a loop calling only libc is estimable");
    CHECK(!t.procs[plt].estimable && t.procs[plt].tdes < 0, "PLT stubs are not m-objects");
    CHECK(t.prog.ncg_edges == 5 + 1, "call graph: edges to known callees only, PLT included (got %u)",
          t.prog.ncg_edges);
    free_program(&t);
}

/* A PLT stub pass 2 joined to a counted library's procedure (known_import)
 * is a callee like the program's own, one procedure of work: a loop that
 * alone calls it is estimable with it in its TDES; two callers sharing it
 * are not (Tot < TDES), while the same calls to an unjoined stub stay left
 * out (library time is measured). */
static void test_known_import(void)
{
    for (int joined = 0; joined < 2; joined++) {
        test_program t = {0};
        uint32_t m = add_proc(&t, "main", LOOP), a = add_proc(&t, "a", FLAT), b = add_proc(&t, "b", FLAT),
                 one = add_proc(&t, "lzma_code@plt", FLAT), two = add_proc(&t, "lzma_end@plt", FLAT);
        t.procs[one].is_plt = t.procs[two].is_plt = true;
        t.procs[one].known_import = t.procs[two].known_import = joined;
        call(&t, m, 0, a);
        call(&t, m, 0, b);
        call(&t, m, 2, one); /* in main's loop only */
        call(&t, a, 0, two);
        call(&t, b, 0, two);
        analyze_program(&t, NULL);
        const mt_loop *loop = &t.procs[m].loops[0];
        if (joined) {
            CHECK(loop->estimable && loop->tdes == 2 && loop->tot == 2 && t.procs[one].estimable,
                  "known import: the loop calling it alone is estimable, Tot = TDES = 2 (got %g/%g)",
                  loop->tot, loop->tdes);
            CHECK(!t.procs[a].estimable && !t.procs[b].estimable && t.procs[a].tot == 1.5 &&
                      t.procs[a].tdes == 2 && t.procs[m].estimable,
                  "known import shared by a and b: neither estimable (Tot 1.5 < TDES 2), main is");
            check_tot_tdes_agree(&t, "known import");
        } else {
            CHECK(loop->estimable && loop->tdes == 1 && t.procs[a].estimable && t.procs[b].estimable &&
                      !t.procs[one].estimable && t.procs[one].tdes < 0,
                  "unjoined stubs: left out of the call graph (library time measured), no m-objects");
        }
        free_program(&t);
    }
}

/* A PLT stub the loader binds to the program's own procedure (-fPIC code
 * calling its own export: mt_bind_stubs) is a call of that procedure:
 * main's loop calling work@plt, which binds to work, has work's callee in
 * its TDES and is estimable; a's call through the same stub shares work
 * with the loop, so neither a nor the loop is once a calls it too.  Before
 * binding, the calls are left out and the loop is estimable alone. */
static void test_bound_stub(void)
{
    for (int shared = 0; shared < 2; shared++) {
        test_program t = {0};
        uint32_t m = add_proc(&t, "main", LOOP), a = add_proc(&t, "a", FLAT), w = add_proc(&t, "work", LOOP),
                 leaf = add_proc(&t, "leaf", FLAT), stub = add_proc(&t, "work@plt", FLAT);
        t.procs[stub].is_plt = true;
        call(&t, m, 0, a);
        call(&t, m, 2, stub); /* in main's loop */
        if (shared)
            call(&t, a, 0, stub);
        call(&t, w, 2, leaf);
        analyze_program(&t, NULL);
        const mt_loop *loop = &t.procs[m].loops[0];
        CHECK(loop->estimable && loop->tdes == 1, "before binding (%s): the stub's calls left out, the loop's TDES 1",
              shared ? "shared" : "alone");
        uint32_t stubs[] = {stub}, procs[] = {w};
        mt_bind_stubs(&t.prog, stubs, procs, 1);
        mt_compute_estimability(&t.prog, NULL, NULL);
        bool redirected = t.procs[m].calls[1].callee == w && t.procs[stub].binds_own;
        bool edge = false;
        for (uint32_t e = 0; e < t.prog.ncg_edges; e++)
            edge |= t.prog.cg_edges[e].caller == m && t.prog.cg_edges[e].callee == w;
        CHECK(redirected && edge, "bound: the site calls work, the call graph has main -> work, the stub binds_own");
        if (!shared)
            CHECK(loop->estimable && loop->tdes == 3 && loop->tot == 3 && t.procs[m].estimable,
                  "bound, one caller: the loop holds work and its leaf (Tot = TDES = 3, got %g/%g)", loop->tot,
                  loop->tdes);
        else
            CHECK(!loop->estimable && !t.procs[a].estimable && t.procs[m].estimable,
                  "bound, shared with a: neither the loop nor a estimable, main is");
        check_tot_tdes_agree(&t, "bound stub");
        free_program(&t);
    }
}

/* A jump from foo's loop into foo.cold: the cold part runs for that loop. */
static void test_split_part(void)
{
    test_program t = {0};
    uint32_t m = add_proc(&t, "main", FLAT), foo = add_proc(&t, "foo", LOOP), cold = add_proc(&t, "foo.cold", FLAT),
             h = add_proc(&t, "helper", FLAT);
    t.procs[cold].parent = foo;
    call(&t, m, 0, foo);
    call(&t, cold, 0, h);
    /* Block 2 of foo (in the loop) gets a conditional jump to foo.cold. */
    mt_procedure *p = &t.procs[foo];
    const test_edge e[] = {{0, 1}, {1, 2}, {1, 3}, {2, 1}, {2, MT_NONE}, {3, MT_NONE}};
    mt_procedure_free_cfg(p);
    free(p->name);
    build_procedure(p, "foo", 4, e, MT_ARRAY_LEN(e));
    p->entry = 0x11000;
    for (uint32_t b = 0; b < p->nblocks; b++) {
        p->blocks[b].start += 0x10000;
        p->blocks[b].end += 0x10000;
    }
    mt_edge *jump = &p->edges[p->blocks[2].first_succ + 1];
    jump->kind = MT_EDGE_COND_TAKEN;
    jump->target = t.procs[cold].entry;
    analyze_program(&t, NULL);
    CHECK(p->nloops == 1 && p->loops[0].estimable && p->estimable && t.procs[cold].estimable &&
              p->loops[0].tdes == 3 && p->tdes == 3,
          "foo.cold entered from foo's loop: owned by the loop (TDES 3), not a root of the call graph");
    call(&t, m, 0, h); /* now helper is shared */
    analyze_program(&t, NULL);
    CHECK(!p->loops[0].estimable && !p->estimable && !t.procs[cold].estimable && t.procs[m].estimable,
          "helper shared by foo.cold and main: foo's loop and foo not estimable");
    free_program(&t);
}

static void test_dynamic_counts(void)
{
    test_program t = {0};
    uint32_t m = add_proc(&t, "main", FLAT), a = add_proc(&t, "a", FLAT), b = add_proc(&t, "b", FLAT),
             c = add_proc(&t, "shared", FLAT), i = add_proc(&t, "ptr", FLAT);
    call(&t, m, 0, a);
    call(&t, m, 0, b);
    call(&t, m, 0, i);
    call(&t, a, 0, c);
    call(&t, b, 0, c);
    add_call(&t.procs[i], 0, MT_NONE, MT_CALL_INDIRECT);
    analyze_program(&t, NULL);
    CHECK(!t.procs[a].estimable && !t.procs[i].estimable, "static: a shares a callee, ptr calls indirectly");
    /* Sites in procedure order: main→a, main→b, main→ptr, a→shared,
     * b→shared (never ran), ptr's indirect call (never ran). */
    const uint64_t counts[] = {10, 1, 3, 1000, 0, 0};
    mt_compute_estimability(&t.prog, counts, NULL);
    CHECK(t.procs[a].estimable && t.procs[i].estimable, "calls that never ran drop out: a and ptr become estimable");
    CHECK(t.procs[b].estimable && t.procs[m].estimable && t.procs[a].tdes == 2 && t.procs[b].tdes == 1,
          "b (no calls ran) and main estimable");
    const uint64_t counts2[] = {10, 1, 3, 999, 1, 0};
    mt_compute_estimability(&t.prog, counts2, NULL);
    CHECK(!t.procs[a].estimable && fabs(t.procs[a].tot - 1.999) < 1e-12 && fabs(t.procs[b].tot - 1.001) < 1e-12,
          "weights are call counts: Tot(a) = 1 + 999/1000 (got %.6f)", t.procs[a].tot);
    free_program(&t);
}

/* Calls through a pointer resolved by pass 1's recorded targets
 * (mt_add_dynamic_calls): main → loop in disp → *ptr → {k1, k2}, the
 * kernels' addresses taken. */
static void test_dynamic_call_graph(void)
{
    test_program t = {0};
    uint32_t m = add_proc(&t, "main", FLAT), d = add_proc(&t, "disp", LOOP),
             k1 = add_proc(&t, "k1", FLAT), k2 = add_proc(&t, "k2", FLAT);
    call(&t, m, 0, d);
    add_call(&t.procs[d], 2, MT_NONE, MT_CALL_INDIRECT); /* in the loop body */
    t.procs[k1].address_taken = t.procs[k2].address_taken = true;
    analyze_program(&t, NULL);
    uint64_t site = t.procs[d].calls[0].addr;
    const mt_call_target_count seen[] = {{site, t.procs[k2].entry, 30, NULL}, {site, t.procs[k1].entry, 70, NULL}};
    mt_add_dynamic_calls(&t.prog, seen, MT_ARRAY_LEN(seen));
    const mt_procedure *dp = &t.procs[d];
    CHECK(dp->ncalls == 2 && dp->calls[0].callee == k1 && fabs(dp->calls[0].share - 0.7) < 1e-12 &&
              dp->calls[1].callee == k2 && fabs(dp->calls[1].share - 0.3) < 1e-12 &&
              dp->calls[0].loop == 0 && t.prog.ncg_edges == 3,
          "the site became one call per target, with its share, in its loop; call graph rebuilt");
    /* Sites: main→disp, disp→k1, disp→k2; entries: the block counts. */
    const uint64_t counts[] = {1, 70, 30};
    uint64_t entries[] = {1, 1, 70, 30};
    mt_compute_estimability(&t.prog, counts, entries);
    CHECK(dp->loops[0].estimable && dp->estimable,
          "every entry of the kernels is a recorded call: disp's loop estimable");
    entries[k2] = 31; /* one call from code we cannot see (a library callback) */
    mt_compute_estimability(&t.prog, counts, entries);
    CHECK(!dp->loops[0].estimable && t.procs[k1].estimable,
          "a kernel entered from elsewhere too: disp's loop not estimable");
    entries[k2] = MT_UNKNOWN_ENTRIES;
    mt_compute_estimability(&t.prog, counts, entries);
    CHECK(!dp->loops[0].estimable, "a kernel whose entries cannot be told: not estimable");
    free_program(&t);

    /* A share of calls into a shared library stays unknown work. */
    t = (test_program){0};
    m = add_proc(&t, "main", FLAT);
    d = add_proc(&t, "disp", LOOP);
    k1 = add_proc(&t, "k1", FLAT);
    call(&t, m, 0, d);
    add_call(&t.procs[d], 2, MT_NONE, MT_CALL_INDIRECT);
    analyze_program(&t, NULL);
    site = t.procs[d].calls[0].addr;
    const mt_call_target_count lib[] = {{site, t.procs[k1].entry, 9, NULL}, {site, 0x7f0000001000ull, 1, NULL}};
    mt_add_dynamic_calls(&t.prog, lib, MT_ARRAY_LEN(lib));
    dp = &t.procs[d];
    CHECK(dp->ncalls == 2 && dp->calls[0].callee == k1 && dp->calls[1].callee == MT_NONE &&
              fabs(dp->calls[1].share - 0.1) < 1e-12,
          "calls to no procedure of the file stay an unknown callee with their share");
    const uint64_t counts3[] = {1, 9, 1};
    const uint64_t entries3[] = {1, 1, 9};
    mt_compute_estimability(&t.prog, counts3, entries3);
    CHECK(!dp->loops[0].estimable && t.procs[k1].estimable, "... so the loop is not estimable");
    free_program(&t);
}

/* Calls through pointers into another object's procedures (pass 1's
 * LIB:0xTARGET): one cross callee per object and address, unknown work
 * until pass 2 marks it a known import, then a leaf as a known_import
 * stub is: main's loop calling libx.so's 0x1000 alone is estimable, a and
 * b sharing 0x2000 are not; libx.so's 0x2000 and liby.so's are two. */
static void test_cross_callees(void)
{
    test_program t = {0};
    uint32_t m = add_proc(&t, "main", LOOP), a = add_proc(&t, "a", FLAT), b = add_proc(&t, "b", FLAT);
    call(&t, m, 0, a);
    call(&t, m, 0, b);
    add_call(&t.procs[m], 2, MT_NONE, MT_CALL_INDIRECT); /* in main's loop */
    add_call(&t.procs[a], 0, MT_NONE, MT_CALL_INDIRECT);
    add_call(&t.procs[b], 0, MT_NONE, MT_CALL_INDIRECT);
    analyze_program(&t, NULL);
    uint64_t sm = t.procs[m].calls[2].addr, sa = t.procs[a].calls[0].addr, sb = t.procs[b].calls[0].addr;
    const mt_call_target_count seen[] = {{sm, 0x1000, 8, "libx.so"}, {sa, 0x2000, 3, "libx.so"},
                                         {sb, 0x2000, 5, "libx.so"}, {sb, 0x2000, 5, "liby.so"}};
    mt_add_dynamic_calls(&t.prog, seen, MT_ARRAY_LEN(seen));
    const mt_call_site *cm = &t.procs[m].calls[2], *ca = &t.procs[a].calls[0], *cb = t.procs[b].calls;
    const mt_cross_callee *cc = t.prog.cross_callees;
    CHECK(t.prog.ncross_callees == 3 && cm->cross_callee && ca->cross_callee && t.procs[b].ncalls == 2 &&
              cc[cm->cross_callee - 1].target == 0x1000 && ca->cross_callee == cb[0].cross_callee &&
              cb[0].cross_callee != cb[1].cross_callee &&
              strcmp(cc[cb[1].cross_callee - 1].object, "liby.so") == 0 && cm->callee == MT_NONE &&
              cm->target == 0 && cm->loop == 0 && fabs(cb[0].share - 0.5) < 1e-12,
          "one cross callee per object and address, each site's share of its calls, in its loop");
    mt_compute_estimability(&t.prog, NULL, NULL);
    CHECK(!t.procs[m].loops[0].estimable && !t.procs[a].estimable,
          "cross callees not joined: unknown work, not estimable");
    for (uint32_t j = 0; j < t.prog.ncross_callees; j++)
        t.prog.cross_callees[j].known_import = true;
    mt_compute_estimability(&t.prog, NULL, NULL);
    const mt_loop *loop = &t.procs[m].loops[0];
    CHECK(loop->estimable && loop->tot == 2 && loop->tdes == 2 && !t.procs[a].estimable &&
              t.procs[a].tot == 1.5 && t.procs[a].tdes == 2 && t.procs[m].estimable,
          "known cross callees: leaves as known imports are (loop Tot = TDES = 2; a shares 0x2000 with b)");
    check_tot_tdes_agree(&t, "cross callees");
    free_program(&t);
}

static void test_callgraph_edges(void)
{
    test_program t = {0};
    uint32_t m = add_proc(&t, "main", FLAT), f = add_proc(&t, "f", FLAT), g = add_proc(&t, "g", FLAT);
    add_call(&t.procs[m], 0, g, MT_CALL_TAIL);
    add_call(&t.procs[m], 0, f, MT_CALL_DIRECT);
    add_call(&t.procs[m], 0, g, MT_CALL_DIRECT);
    add_call(&t.procs[m], 0, MT_NONE, MT_CALL_INDIRECT);
    add_call(&t.procs[g], 0, g, MT_CALL_DIRECT);
    analyze_program(&t, NULL);
    const mt_cg_edge *e = t.prog.cg_edges;
    CHECK(t.prog.ncg_edges == 3 && e[0].caller == m && e[0].callee == f && e[0].nsites == 1 && e[1].caller == m &&
              e[1].callee == g && e[1].nsites == 2 && e[1].kind == MT_CALL_DIRECT && e[2].caller == g &&
              e[2].callee == g,
          "call-graph edges aggregated per (caller, callee), sorted");
    CHECK(t.procs[g].recursive && !t.procs[m].recursive && !t.procs[f].recursive && t.prog.nsccs == 3,
          "a self-call is recursion; 3 singleton SCCs");
    free_program(&t);
}

/* ---- random programs against brute force ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

/* Extended-graph model rebuilt naively: node p < n for procedure p, n + p for
 * its (single) loop, 2n for the root. */
typedef struct {
    uint32_t n, nodes;
    uint8_t adj[2 * MAXP + 1][2 * MAXP + 1];
} model;

static void model_reach(const model *g, uint32_t from, uint32_t removed, uint8_t *seen)
{
    uint32_t stack[2 * MAXP + 1], sp = 0;
    memset(seen, 0, g->nodes);
    if (from == removed)
        return;
    seen[from] = 1;
    stack[sp++] = from;
    while (sp) {
        uint32_t v = stack[--sp];
        for (uint32_t w = 0; w < g->nodes; w++)
            if (g->adj[v][w] && !seen[w] && w != removed) {
                seen[w] = 1;
                stack[sp++] = w;
            }
    }
}

static void check_random_program(uint32_t round, bool *ok_est, bool *ok_tdes, bool *ok_agree)
{
    test_program t = {0};
    uint32_t n = 2 + rnd(MAXP - 2);
    char name[32];
    for (uint32_t i = 0; i < n; i++) {
        snprintf(name, sizeof name, "p%u", i);
        add_proc(&t, name, rnd(3) == 0 ? LOOP : FLAT);
        t.procs[i].address_taken = i > 0 && rnd(8) == 0;
    }
    static model g;
    memset(&g, 0, sizeof g);
    g.n = n;
    g.nodes = 2 * n + 1;
    /* Every procedure but p0 gets a caller with a lower index, so the root's
     * targets are exactly p0 and the address-taken ones; extra calls go
     * anywhere, back edges making recursion. */
    uint32_t ncalls = n - 1 + rnd(2 * n);
    for (uint32_t k = 0; k < ncalls; k++) {
        uint32_t callee = k < n - 1 ? k + 1 : rnd(n);
        uint32_t caller = k < n - 1 ? rnd(callee) : rnd(n);
        bool in_loop = t.procs[caller].nblocks == 4 && rnd(2);
        call(&t, caller, in_loop ? 2 : 0, callee);
        g.adj[in_loop ? n + caller : caller][callee] = 1;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (t.procs[i].nblocks == 4)
            g.adj[i][n + i] = 1;
        if (i == 0 || t.procs[i].address_taken)
            g.adj[2 * n][i] = 1;
    }
    /* If p0 is called, it is from inside its own cycle (p0 reaches
     * everything): a cycle nothing outside calls may be entered at any of its
     * procedures, so each gets a root edge. */
    uint8_t reach[2 * MAXP + 1], without[2 * MAXP + 1];
    bool p0_called = false;
    for (uint32_t y = 0; y < 2 * n; y++)
        p0_called |= g.adj[y][0];
    for (uint32_t i = 1; p0_called && i < n; i++) {
        model_reach(&g, i, MT_NONE, reach);
        if (reach[0])
            g.adj[2 * n][i] = 1;
    }
    analyze_program(&t, NULL);
    for (uint32_t x = 0; x < 2 * n; x++) {
        bool is_loop = x >= n;
        const mt_procedure *p = &t.procs[is_loop ? x - n : x];
        if (is_loop && p->nloops == 0)
            continue;
        bool est = is_loop ? p->loops[0].estimable : p->estimable;
        double tot = is_loop ? p->loops[0].tot : p->tot, tdes = is_loop ? p->loops[0].tdes : p->tdes;
        model_reach(&g, x, MT_NONE, reach);
        model_reach(&g, 2 * n, x, without);
        bool dominated_all = true, recursive = false;
        uint32_t procs_reached = 0;
        for (uint32_t y = 0; y < g.nodes; y++) {
            if (!reach[y])
                continue;
            procs_reached += y < n;
            if (y != x && without[y])
                dominated_all = false;
        }
        for (uint32_t y = 0; y < g.nodes; y++) /* x reaches itself through a successor */
            if (g.adj[x][y]) {
                model_reach(&g, y, MT_NONE, without);
                recursive |= without[x];
            }
        if (est != dominated_all) {
            *ok_est = false;
            printf("# round %u: node %u estimable %d, brute force %d\n", round, x, est, dominated_all);
        }
        if (tdes != (is_loop ? 1 : 0) + procs_reached)
            *ok_tdes = false;
        if (!recursive && tot_equals_tdes(tot, tdes) != est)
            *ok_agree = false;
    }
    free_program(&t);
}

static void test_random_programs(void)
{
    bool ok_est = true, ok_tdes = true, ok_agree = true;
    for (uint32_t round = 0; round < 400; round++)
        check_random_program(round, &ok_est, &ok_tdes, &ok_agree);
    CHECK(ok_est, "random programs: estimable <=> x dominates everything it reaches (brute force)");
    CHECK(ok_tdes, "random programs: TDES = 1 + distinct procedures reached, recursion included (brute force)");
    CHECK(ok_agree, "random programs: estimable <=> Tot = TDES for non-recursive procedures and loops");
}

int main(void)
{
    test_shared_callee();
    test_leaf_subtree();
    test_loop_with_shared_helper();
    test_loop_callee_called_outside();
    test_nested_loops();
    test_recursion();
    test_address_taken_and_entry();
    test_unknown_work();
    test_known_import();
    test_bound_stub();
    test_split_part();
    test_dynamic_counts();
    test_dynamic_call_graph();
    test_cross_callees();
    test_callgraph_edges();
    test_random_programs();
    return unit_finish();
}
