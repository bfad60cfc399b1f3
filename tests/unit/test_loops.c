/* Unit tests of analyzer/loops.c on hand-built CFGs whose dominators and
 * loops are known. */
#include "cfg_builder.h"
#include "unit.h"

#define N MT_NONE

static uint32_t loop_with_header(const mt_procedure *p, uint32_t header)
{
    for (uint32_t l = 0; l < p->nloops; l++)
        if (p->loops[l].header == header)
            return l;
    return MT_NONE;
}

static bool body_is(const mt_loop *l, const uint32_t *blocks, uint32_t n)
{
    if (l->nblocks != n)
        return false;
    for (uint32_t i = 0; i < n; i++)
        if (l->blocks[i] != blocks[i])
            return false;
    return true;
}

static void free_procedure(mt_procedure *p)
{
    mt_procedure_free_cfg(p);
    free(p->name);
}

/* for i { for j { for k { body } } }:
 * 0 entry → 1 (i hdr) → 2 (j hdr) → 3 (k hdr) → 4 (k body) → 3;
 * 3 → 5 (j latch) → 2; 2 → 6 (i latch) → 1; 1 → 7 exit. */
static void test_triple_nest(void)
{
    const test_edge e[] = {{0, 1}, {1, 2}, {1, 7}, {2, 3}, {2, 6}, {3, 4}, {3, 5},
                           {4, 3}, {5, 2}, {6, 1}, {7, N}};
    mt_procedure p;
    build_procedure(&p, "matmul", 8, e, MT_ARRAY_LEN(e));
    analyze_procedure(&p);
    CHECK(p.blocks[4].idom == 3 && p.blocks[3].idom == 2 && p.blocks[7].idom == 1 && p.blocks[0].idom == N,
          "triple nest: dominators");
    CHECK(p.nloops == 3, "triple nest: 3 loops (got %u)", p.nloops);
    uint32_t li = loop_with_header(&p, 1), lj = loop_with_header(&p, 2), lk = loop_with_header(&p, 3);
    CHECK(li == 0 && lj == 1 && lk == 2, "triple nest: parents before children");
    if (li == 0 && lj == 1 && lk == 2) {
        CHECK(p.loops[li].depth == 1 && p.loops[lj].depth == 2 && p.loops[lk].depth == 3, "triple nest: depths 1,2,3");
        CHECK(p.loops[lj].parent == li && p.loops[lk].parent == lj && p.loops[li].parent == N, "triple nest: parents");
        const uint32_t bi[] = {1, 2, 3, 4, 5, 6}, bj[] = {2, 3, 4, 5}, bk[] = {3, 4};
        CHECK(body_is(&p.loops[li], bi, 6) && body_is(&p.loops[lj], bj, 4) && body_is(&p.loops[lk], bk, 2),
              "triple nest: bodies");
        CHECK(p.loops[lk].nentry_edges == 1 && p.loops[lk].nexit_edges == 1 && p.loops[lk].nback_edges == 1,
              "triple nest: inner loop has one entry, one exit, one back edge");
        CHECK(p.blocks[4].loop == lk && p.blocks[5].loop == lj && p.blocks[6].loop == li && p.blocks[7].loop == N,
              "triple nest: innermost loop of each block");
    }
    free_procedure(&p);
}

/* while (c) { if (x) break; ... }: 0 → 1 (hdr) → 2 (test x) → 3 (rest) → 1;
 * 1 → 4 (normal exit), 2 → 4 (break). */
static void test_while_break(void)
{
    const test_edge e[] = {{0, 1}, {1, 2}, {1, 4}, {2, 3}, {2, 4}, {3, 1}, {4, N}};
    mt_procedure p;
    build_procedure(&p, "while_break", 5, e, MT_ARRAY_LEN(e));
    analyze_procedure(&p);
    CHECK(p.nloops == 1 && p.loops[0].header == 1, "while+break: one loop at block 1");
    if (p.nloops == 1)
        CHECK(p.loops[0].nexit_edges == 2 && p.loops[0].nblocks == 3, "while+break: two exit edges, 3 blocks");
    free_procedure(&p);
}

/* Two back edges to one header (a `continue`): one loop. */
static void test_two_back_edges(void)
{
    const test_edge e[] = {{0, 1}, {1, 2}, {1, 4}, {2, 1}, {2, 3}, {3, 1}, {4, N}};
    mt_procedure p;
    build_procedure(&p, "continue", 5, e, MT_ARRAY_LEN(e));
    analyze_procedure(&p);
    CHECK(p.nloops == 1 && p.loops[0].nback_edges == 2, "two back edges to one header make one loop");
    free_procedure(&p);
}

/* for (;;) { if (x) return; }: the only exit is a return edge. */
static void test_exit_by_return(void)
{
    const test_edge e[] = {{0, 1}, {1, 2}, {1, N}, {2, 1}};
    mt_procedure p;
    build_procedure(&p, "exit_by_return", 3, e, MT_ARRAY_LEN(e));
    analyze_procedure(&p);
    CHECK(p.nloops == 1 && p.loops[0].nexit_edges == 1 && p.edges[p.loops[0].exit_edges[0]].dst == N,
          "loop left only by a return: its exit edge is the return");
    free_procedure(&p);
}

/* entry → A, entry → B, A ↔ B: the classic irreducible region. */
static void test_irreducible(void)
{
    const test_edge e[] = {{0, 1}, {0, 2}, {1, 2}, {2, 1}, {1, 3}, {3, N}};
    mt_procedure p;
    build_procedure(&p, "irreducible", 4, e, MT_ARRAY_LEN(e));
    analyze_procedure(&p);
    CHECK(p.nloops == 1 && p.loops[0].irreducible, "A<->B entered at both: one irreducible region");
    if (p.nloops == 1) {
        CHECK(p.loops[0].nentry_edges == 2 && p.loops[0].header == 1 && p.loops[0].nblocks == 2,
              "irreducible region: two entry edges, header = lowest entry block");
        CHECK(p.blocks[1].loop == 0 && p.blocks[2].loop == 0, "irreducible region: blocks belong to it");
    }
    free_procedure(&p);
}

/* A self-loop block and an unreachable block. */
static void test_self_loop_and_unreachable(void)
{
    const test_edge e[] = {{0, 1}, {1, 1}, {1, 2}, {2, N}, {3, 1}};
    mt_procedure p;
    build_procedure(&p, "self_loop", 4, e, MT_ARRAY_LEN(e));
    analyze_procedure(&p);
    CHECK(p.nloops == 1 && p.loops[0].nblocks == 1 && p.loops[0].header == 1, "self-loop is a one-block loop");
    CHECK(p.blocks[3].idom == N && p.blocks[3].loop == N, "unreachable block: no dominator, no loop");
    if (p.nloops == 1)
        CHECK(p.loops[0].nentry_edges == 2, "edges from unreachable blocks still count as entries");
    free_procedure(&p);
}

/* A loop inside one case of a switch: 0 → {1, 2, 5} (switch), case 1 holds
 * a loop 3 ↔ 4, all cases join at 5. */
static void test_loop_in_switch_case(void)
{
    const test_edge e[] = {{0, 1}, {0, 2}, {0, 5}, {1, 5}, {2, 3}, {3, 4}, {3, 5}, {4, 3}, {5, N}};
    mt_procedure p;
    build_procedure(&p, "switch_loop", 6, e, MT_ARRAY_LEN(e));
    analyze_procedure(&p);
    CHECK(p.nloops == 1 && p.loops[0].header == 3 && p.loops[0].depth == 1 && p.loops[0].parent == N,
          "loop inside a switch case: one outermost loop at the case's block");
    free_procedure(&p);
}

/* A call inside an inner loop records that loop. */
static void test_call_loop(void)
{
    const test_edge e[] = {{0, 1}, {1, 2}, {1, 4}, {2, 3}, {2, 1}, {3, 2}, {4, N}};
    mt_procedure p;
    build_procedure(&p, "call_loop", 5, e, MT_ARRAY_LEN(e));
    add_call(&p, 3, 0, MT_CALL_DIRECT);
    add_call(&p, 4, 0, MT_CALL_DIRECT);
    analyze_procedure(&p);
    uint32_t inner = loop_with_header(&p, 2);
    CHECK(p.nloops == 2 && inner != N && p.calls[0].loop == inner && p.calls[1].loop == N,
          "call sites record their innermost loop");
    free_procedure(&p);
}

int main(void)
{
    test_triple_nest();
    test_while_break();
    test_two_back_edges();
    test_exit_by_return();
    test_irreducible();
    test_self_loop_and_unreachable();
    test_loop_in_switch_case();
    test_call_loop();
    return unit_finish();
}
