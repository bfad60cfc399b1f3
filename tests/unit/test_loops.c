/* Unit tests of analyzer/loops.c on hand-built CFGs whose dominators and
 * loops are known: exact bodies, nesting, entry/exit/back edges, irreducible
 * regions, unreachable code, and procedures too large for recursion. */
#include "cfg_builder.h"
#include "unit.h"

#define N MT_NONE

static uint32_t loop_with_header(const mt_procedure *p, uint32_t header)
{
    for (uint32_t l = 0; l < p->nloops; l++)
        if (p->loops[l].header == header)
            return l;
    return N;
}

#define BODY_IS(loop, ...)                                                                         \
    list_is((loop)->blocks, (loop)->nblocks, (const uint32_t[]){__VA_ARGS__},                      \
            (uint32_t)MT_ARRAY_LEN(((const uint32_t[]){__VA_ARGS__})))

/* Index of the edge src→dst (the first one), or N. */
static uint32_t edge_index(const mt_procedure *p, uint32_t src, uint32_t dst)
{
    for (uint32_t e = 0; e < p->nedges; e++)
        if (p->edges[e].src == src && p->edges[e].dst == dst)
            return e;
    return N;
}

/* The edge list `got` holds exactly the edges given as (src, dst) pairs, in
 * edge-index order. */
static bool edges_are(const mt_procedure *p, const uint32_t *got, uint32_t ngot, const test_edge *want,
                      uint32_t nwant)
{
    if (ngot != nwant)
        return false;
    for (uint32_t i = 0; i < nwant; i++) {
        bool found = false;
        for (uint32_t k = 0; k < ngot; k++)
            found |= got[k] == edge_index(p, want[i].src, want[i].dst);
        if (!found)
            return false;
    }
    for (uint32_t k = 1; k < ngot; k++)
        if (got[k] <= got[k - 1])
            return false;
    return true;
}

#define EDGES_ARE(p, list, count, ...)                                                             \
    edges_are((p), (list), (count), (const test_edge[]){__VA_ARGS__},                              \
              (uint32_t)MT_ARRAY_LEN(((const test_edge[]){__VA_ARGS__})))
#define ENTRIES_ARE(p, l, ...) EDGES_ARE(p, (l)->entry_edges, (l)->nentry_edges, __VA_ARGS__)
#define EXITS_ARE(p, l, ...) EDGES_ARE(p, (l)->exit_edges, (l)->nexit_edges, __VA_ARGS__)
#define BACKS_ARE(p, l, ...) EDGES_ARE(p, (l)->back_edges, (l)->nback_edges, __VA_ARGS__)

static void free_procedure(mt_procedure *p)
{
    mt_procedure_free_cfg(p);
    free(p->name);
}

static void build_and_analyze(mt_procedure *p, const char *name, uint32_t nblocks, const test_edge *e, uint32_t ne)
{
    build_procedure(p, name, nblocks, e, ne);
    analyze_procedure(p);
}

/* for i { for j { for k { body } } }:
 * 0 entry → 1 (i hdr) → 2 (j hdr) → 3 (k hdr) → 4 (k body) → 3;
 * 3 → 5 (j latch) → 2; 2 → 6 (i latch) → 1; 1 → 7 exit. */
static void test_triple_nest(void)
{
    const test_edge e[] = {{0, 1}, {1, 2}, {1, 7}, {2, 3}, {2, 6}, {3, 4}, {3, 5}, {4, 3}, {5, 2}, {6, 1}, {7, N}};
    mt_procedure p;
    build_and_analyze(&p, "matmul", 8, e, MT_ARRAY_LEN(e));
    CHECK(p.blocks[0].idom == N && p.blocks[1].idom == 0 && p.blocks[2].idom == 1 && p.blocks[3].idom == 2 &&
              p.blocks[4].idom == 3 && p.blocks[5].idom == 3 && p.blocks[6].idom == 2 && p.blocks[7].idom == 1,
          "triple nest: dominators");
    CHECK(p.nloops == 3, "triple nest: 3 loops (got %u)", p.nloops);
    if (p.nloops != 3) {
        free_procedure(&p);
        return;
    }
    const mt_loop *li = &p.loops[0], *lj = &p.loops[1], *lk = &p.loops[2];
    CHECK(li->header == 1 && lj->header == 2 && lk->header == 3, "triple nest: parents before children");
    CHECK(li->depth == 1 && lj->depth == 2 && lk->depth == 3, "triple nest: depths 1,2,3");
    CHECK(li->parent == N && lj->parent == 0 && lk->parent == 1, "triple nest: parents");
    CHECK(BODY_IS(li, 1, 2, 3, 4, 5, 6) && BODY_IS(lj, 2, 3, 4, 5) && BODY_IS(lk, 3, 4), "triple nest: bodies");
    CHECK(ENTRIES_ARE(&p, li, {0, 1}) && ENTRIES_ARE(&p, lj, {1, 2}) && ENTRIES_ARE(&p, lk, {2, 3}),
          "triple nest: entry edges");
    CHECK(EXITS_ARE(&p, li, {1, 7}) && EXITS_ARE(&p, lj, {2, 6}) && EXITS_ARE(&p, lk, {3, 5}),
          "triple nest: exit edges");
    CHECK(BACKS_ARE(&p, li, {6, 1}) && BACKS_ARE(&p, lj, {5, 2}) && BACKS_ARE(&p, lk, {4, 3}),
          "triple nest: back edges");
    CHECK(!li->irreducible && !lj->irreducible && !lk->irreducible && !li->estimable && li->tdes == -1 &&
              li->tot == 0,
          "triple nest: natural loops, estimability fields initialized");
    CHECK(p.blocks[0].loop == N && p.blocks[1].loop == 0 && p.blocks[2].loop == 1 && p.blocks[3].loop == 2 &&
              p.blocks[4].loop == 2 && p.blocks[5].loop == 1 && p.blocks[6].loop == 0 && p.blocks[7].loop == N,
          "triple nest: innermost loop of each block");
    free_procedure(&p);
}

/* while (c) { if (x) break; ... }: 0 → 1 (hdr) → 2 (test x) → 3 (rest) → 1;
 * 1 → 4 (normal exit), 2 → 4 (break). */
static void test_while_break(void)
{
    const test_edge e[] = {{0, 1}, {1, 2}, {1, 4}, {2, 3}, {2, 4}, {3, 1}, {4, N}};
    mt_procedure p;
    build_and_analyze(&p, "while_break", 5, e, MT_ARRAY_LEN(e));
    CHECK(p.nloops == 1 && p.loops[0].header == 1, "while+break: one loop at block 1");
    if (p.nloops == 1) {
        CHECK(BODY_IS(&p.loops[0], 1, 2, 3) && EXITS_ARE(&p, &p.loops[0], {1, 4}, {2, 4}),
              "while+break: body 1..3, two exit edges (condition and break)");
        CHECK(BACKS_ARE(&p, &p.loops[0], {3, 1}) && ENTRIES_ARE(&p, &p.loops[0], {0, 1}),
              "while+break: one back edge, one entry edge");
    }
    free_procedure(&p);
}

/* Two back edges to one header (a `continue`): one loop. */
static void test_two_back_edges(void)
{
    const test_edge e[] = {{0, 1}, {1, 2}, {1, 4}, {2, 1}, {2, 3}, {3, 1}, {4, N}};
    mt_procedure p;
    build_and_analyze(&p, "continue", 5, e, MT_ARRAY_LEN(e));
    CHECK(p.nloops == 1, "two back edges to one header make one loop (got %u)", p.nloops);
    if (p.nloops == 1)
        CHECK(BODY_IS(&p.loops[0], 1, 2, 3) && BACKS_ARE(&p, &p.loops[0], {2, 1}, {3, 1}),
              "two back edges: body 1..3, both back edges listed");
    free_procedure(&p);
}

/* for (;;) { if (x) return; if (y) tail-call g; if (z) goto foo.cold; }:
 * every exit leaves the procedure (dst MT_NONE) and is an exit edge. */
static void test_exits_leaving_procedure(void)
{
    const test_edge e[] = {{0, 1}, {1, 2}, {1, N}, {2, 3}, {2, N}, {3, 1}, {3, N}};
    mt_procedure p;
    build_procedure(&p, "exit_by_return", 4, e, MT_ARRAY_LEN(e));
    p.edges[edge_index(&p, 2, N)].kind = MT_EDGE_TAIL_CALL;
    uint32_t cold = p.blocks[3].first_succ + 1;
    p.edges[cold].kind = MT_EDGE_COND_TAKEN;
    p.edges[cold].target = 0x9000; /* foo.cold */
    analyze_procedure(&p);
    CHECK(p.nloops == 1, "loop left only through the procedure's exits: found");
    if (p.nloops == 1) {
        const mt_loop *l = &p.loops[0];
        bool all_leave = l->nexit_edges == 3;
        for (uint32_t k = 0; k < l->nexit_edges; k++)
            all_leave &= p.edges[l->exit_edges[k]].dst == N;
        CHECK(all_leave && BODY_IS(l, 1, 2, 3), "return, tail call and jump to foo.cold are its 3 exit edges");
    }
    free_procedure(&p);
}

/* entry → A, entry → B, A ↔ B: the classic irreducible region. */
static void test_irreducible(void)
{
    const test_edge e[] = {{0, 1}, {0, 2}, {1, 2}, {1, 3}, {2, 1}, {3, N}};
    mt_procedure p;
    build_and_analyze(&p, "irreducible", 4, e, MT_ARRAY_LEN(e));
    CHECK(p.nloops == 1 && p.loops[0].irreducible, "A<->B entered at both: one irreducible region");
    if (p.nloops == 1) {
        const mt_loop *l = &p.loops[0];
        CHECK(l->header == 1 && BODY_IS(l, 1, 2) && l->depth == 1 && l->parent == N,
              "irreducible region: body {A,B}, header = lowest entry block");
        CHECK(ENTRIES_ARE(&p, l, {0, 1}, {0, 2}) && EXITS_ARE(&p, l, {1, 3}) && BACKS_ARE(&p, l, {1, 2}, {2, 1}),
              "irreducible region: entries at both blocks, one exit, back edges to its entry blocks");
        CHECK(p.blocks[1].loop == 0 && p.blocks[2].loop == 0 && p.blocks[0].loop == N,
              "irreducible region: blocks belong to it");
    }
    CHECK(p.blocks[1].idom == 0 && p.blocks[2].idom == 0, "irreducible region: both entries dominated by the entry");
    free_procedure(&p);
}

/* An irreducible region A ↔ B where B heads a natural loop B ↔ C, all inside
 * an outer natural loop H:  0 → H(1); H → A(2), H → B(3); A ↔ B; B ↔ C(4);
 * A → L(5) → H; L → X(6).  The natural loop at B runs inside the region, so
 * the region's body is {A, B, C}; the region sits inside the loop at H. */
static void test_irreducible_nesting(void)
{
    const test_edge e[] = {{0, 1}, {1, 2}, {1, 3}, {2, 3}, {2, 5}, {3, 2}, {3, 4},
                           {4, 3}, {5, 1}, {5, 6}, {6, N}};
    mt_procedure p;
    build_and_analyze(&p, "irreducible_nest", 7, e, MT_ARRAY_LEN(e));
    CHECK(p.nloops == 3, "outer loop, irreducible region, inner loop (got %u)", p.nloops);
    if (p.nloops == 3) {
        const mt_loop *outer = &p.loops[0], *region = &p.loops[1], *inner = &p.loops[2];
        CHECK(outer->header == 1 && !outer->irreducible && BODY_IS(outer, 1, 2, 3, 4, 5) && outer->depth == 1,
              "outer natural loop at H holds everything between 1 and 5");
        CHECK(region->irreducible && region->header == 2 && BODY_IS(region, 2, 3, 4) && region->parent == 0 &&
                  region->depth == 2,
              "region {A,B,C}: includes the natural loop headed inside it, nested in H");
        CHECK(!inner->irreducible && inner->header == 3 && BODY_IS(inner, 3, 4) && inner->parent == 1 &&
                  inner->depth == 3,
              "natural loop B<->C nested in the region");
        CHECK(ENTRIES_ARE(&p, region, {1, 2}, {1, 3}) && EXITS_ARE(&p, region, {2, 5}),
              "region: entered at A and B from H, left from A");
        CHECK(p.blocks[2].loop == 1 && p.blocks[3].loop == 2 && p.blocks[4].loop == 2 && p.blocks[5].loop == 0,
              "innermost loops through the region");
    }
    free_procedure(&p);
}

/* A self-loop block, and unreachable blocks: one with its own self-loop,
 * one jumping into the loop. */
static void test_self_loop_and_unreachable(void)
{
    const test_edge e[] = {{0, 1}, {1, 1}, {1, 2}, {2, N}, {3, 1}, {4, 4}, {4, 3}};
    mt_procedure p;
    build_and_analyze(&p, "self_loop", 5, e, MT_ARRAY_LEN(e));
    CHECK(p.nloops == 1 && p.loops[0].header == 1 && BODY_IS(&p.loops[0], 1), "self-loop is a one-block loop");
    CHECK(p.blocks[3].idom == N && p.blocks[4].idom == N && p.blocks[3].loop == N && p.blocks[4].loop == N,
          "unreachable blocks: no dominator, no loop (not even a self-loop)");
    if (p.nloops == 1) {
        CHECK(BACKS_ARE(&p, &p.loops[0], {1, 1}) && EXITS_ARE(&p, &p.loops[0], {1, 2}),
              "self-loop: back edge to itself, one exit");
        CHECK(ENTRIES_ARE(&p, &p.loops[0], {0, 1}, {3, 1}), "edges from unreachable blocks still count as entries");
    }
    free_procedure(&p);
}

/* A loop inside one case of a switch: 0 → {1, 2, 5} (switch), case 2 holds
 * a loop 3 ↔ 4, all cases join at 5.  Then a switch inside a loop whose
 * cases all come back to the header: one loop, no nesting. */
static void test_switch(void)
{
    const test_edge e[] = {{0, 1}, {0, 2}, {0, 5}, {1, 5}, {2, 3}, {3, 4}, {3, 5}, {4, 3}, {5, N}};
    mt_procedure p;
    build_and_analyze(&p, "switch_loop", 6, e, MT_ARRAY_LEN(e));
    CHECK(p.nloops == 1 && p.loops[0].header == 3 && p.loops[0].depth == 1 && p.loops[0].parent == N &&
              BODY_IS(&p.loops[0], 3, 4),
          "loop inside a switch case: one outermost loop at the case's block");
    CHECK(p.blocks[5].idom == 0 && p.blocks[3].idom == 2, "switch: join dominated by the switch block");
    free_procedure(&p);

    const test_edge f[] = {{0, 1}, {1, 2}, {1, 3}, {1, 4}, {1, 5}, {2, 1}, {3, 1}, {4, 1}, {5, N}};
    build_and_analyze(&p, "loop_switch", 6, f, MT_ARRAY_LEN(f));
    CHECK(p.nloops == 1 && BODY_IS(&p.loops[0], 1, 2, 3, 4) && p.loops[0].nback_edges == 3,
          "switch in a loop: one loop, one back edge per case");
    free_procedure(&p);
}

/* Sibling loops in an outer loop: preorder, siblings by header address,
 * even when the later sibling is larger. */
static void test_sibling_order(void)
{
    /* 0 → 1 (outer) → 2 ↔ 3 (first, small) → 4 → 5 → 6 → 4 (second, larger) ... 7 → 1; 1 → 8. */
    const test_edge e[] = {{0, 1}, {1, 2}, {1, 8}, {2, 3}, {3, 2}, {3, 4}, {4, 5}, {5, 6}, {5, 7},
                           {6, 4}, {7, 1}, {8, N}};
    mt_procedure p;
    build_and_analyze(&p, "siblings", 9, e, MT_ARRAY_LEN(e));
    CHECK(p.nloops == 3 && p.loops[0].header == 1 && p.loops[1].header == 2 && p.loops[2].header == 4 &&
              p.loops[1].parent == 0 && p.loops[2].parent == 0,
          "sibling loops ordered by header after their parent");
    free_procedure(&p);
}

/* A call inside an inner loop records that loop; recomputing loops does not
 * leak or duplicate. */
static void test_call_loop(void)
{
    const test_edge e[] = {{0, 1}, {1, 2}, {1, 4}, {2, 3}, {2, 1}, {3, 2}, {4, N}};
    mt_procedure p;
    build_procedure(&p, "call_loop", 5, e, MT_ARRAY_LEN(e));
    add_call(&p, 3, 0, MT_CALL_DIRECT);
    add_call(&p, 4, 0, MT_CALL_DIRECT);
    add_call(&p, 1, 0, MT_CALL_DIRECT);
    analyze_procedure(&p);
    analyze_procedure(&p);
    uint32_t outer = loop_with_header(&p, 1), inner = loop_with_header(&p, 2);
    CHECK(p.nloops == 2 && inner != N && p.calls[0].loop == inner && p.calls[1].loop == N && p.calls[2].loop == outer,
          "call sites record their innermost loop");
    free_procedure(&p);
}

static void test_empty_and_straight(void)
{
    mt_procedure p;
    memset(&p, 0, sizeof p);
    mt_compute_dominators(&p);
    mt_find_loops(&p);
    CHECK(p.nloops == 0 && p.loops == NULL, "a procedure without blocks: nothing to do");
    const test_edge e[] = {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, N}};
    build_and_analyze(&p, "diamond", 4, e, MT_ARRAY_LEN(e));
    CHECK(p.nloops == 0 && p.blocks[3].idom == 0 && p.blocks[1].idom == 0, "diamond: no loop, join's idom is the split");
    free_procedure(&p);
}

/* Large procedures, built directly (the test builder is quadratic):
 * a 100000-block straight line (deep dominator tree: any recursion would
 * overflow the stack), then 30000 sequential loops, then a 2000-deep nest. */
static void build_large(mt_procedure *p, uint32_t nblocks, test_edge *edges, uint32_t nedges)
{
    memset(p, 0, sizeof *p);
    p->name = mt_xstrdup("large");
    p->entry = 0x1000;
    p->parent = N;
    p->resolved = true;
    p->blocks = mt_xcalloc(nblocks, sizeof *p->blocks);
    p->nblocks = nblocks;
    p->edges = mt_xcalloc(nedges, sizeof *p->edges);
    p->nedges = nedges;
    /* Count, then place, edges by source. */
    for (uint32_t i = 0; i < nedges; i++)
        p->blocks[edges[i].src].nsucc++;
    uint32_t at = 0;
    for (uint32_t b = 0; b < nblocks; b++) {
        p->blocks[b].start = 0x1000 + 16ull * b;
        p->blocks[b].end = p->blocks[b].start + 16;
        p->blocks[b].first_succ = at;
        at += p->blocks[b].nsucc;
        p->blocks[b].nsucc = 0;
    }
    for (uint32_t i = 0; i < nedges; i++) {
        mt_block *b = &p->blocks[edges[i].src];
        mt_edge *out = &p->edges[b->first_succ + b->nsucc++];
        out->src = edges[i].src;
        out->dst = edges[i].dst;
        out->kind = edges[i].dst == N ? MT_EDGE_RETURN : MT_EDGE_JUMP;
    }
}

static void test_large(void)
{
    const uint32_t n = 100000;
    test_edge *e = mt_xmalloc(4ull * n * sizeof *e);
    uint32_t m = 0;
    for (uint32_t b = 0; b + 1 < n; b++)
        e[m++] = (test_edge){b, b + 1};
    e[m++] = (test_edge){n - 1, N};
    mt_procedure p;
    build_large(&p, n, e, m);
    analyze_procedure(&p);
    CHECK(p.nloops == 0 && p.blocks[n - 1].idom == n - 2, "100000-block straight line: no loop, chain of idoms");
    free_procedure(&p);

    /* Loops b → b+1 → b+2 → b (exit b → b+3) for b = 0, 3, ..., then a nest
     * of depth D: headers h_i = base + i, latches n-1-i. */
    m = 0;
    uint32_t b = 0, nseq = 0;
    for (; b < 90000; b += 3, nseq++) {
        e[m++] = (test_edge){b, b + 1};
        e[m++] = (test_edge){b, b + 3};
        e[m++] = (test_edge){b + 1, b + 2};
        e[m++] = (test_edge){b + 2, b};
    }
    const uint32_t base = b, depth = 2000;
    for (uint32_t i = 0; i < depth; i++) {
        uint32_t h = base + i, latch = n - 1 - i;
        e[m++] = (test_edge){h, i + 1 < depth ? h + 1 : latch};
        e[m++] = (test_edge){latch, h};
        e[m++] = (test_edge){latch, i ? latch + 1 : N};
    }
    for (uint32_t k = base + depth; k < n - depth; k++) /* filler blocks: unreachable chain */
        e[m++] = (test_edge){k, k + 1};
    build_large(&p, n, e, m);
    analyze_procedure(&p);
    CHECK(p.nloops == nseq + depth, "30000 sequential loops and a 2000-deep nest (got %u loops)", p.nloops);
    if (p.nloops == nseq + depth) {
        const mt_loop *deepest = &p.loops[p.nloops - 1];
        CHECK(p.loops[nseq].header == base && p.loops[nseq].nblocks == 2 * depth && deepest->depth == depth &&
                  deepest->nblocks == 2 && p.loops[0].header == 0 && p.loops[0].nblocks == 3,
              "large: nest depths and bodies");
    }
    free_procedure(&p);
    free(e);
}

int main(void)
{
    test_triple_nest();
    test_while_break();
    test_two_back_edges();
    test_exits_leaving_procedure();
    test_irreducible();
    test_irreducible_nesting();
    test_self_loop_and_unreachable();
    test_switch();
    test_sibling_order();
    test_call_loop();
    test_empty_and_straight();
    test_large();
    return unit_finish();
}
