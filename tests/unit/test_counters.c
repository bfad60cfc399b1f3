/* Unit tests of rewriter/counters.c: which blocks get no probe, and whether
 * their counts, filled in from the counter map's equations, equal the
 * counts a probe in every block would give.  The oracle is a walker that
 * runs random paths through hand-built CFGs and counts every block itself,
 * including paths that end inside a call (a callee that never returns:
 * exit, longjmp) or at a syscall, and paths entering at a foreign entry. */
#include <stdio.h>

#include "rewriter/internal.h"
#include "rewriter/rewriter.h"
#include "tests/unit/cfg_builder.h"
#include "tests/unit/unit.h"

enum { MAXB = 16 };

typedef struct {
    mt_procedure p;
    rw_insn insns[MAXB];
    uint32_t block_first[MAXB];
    bool derived[MAXB];
    rw_flow_plan plan;
    rw_code code;
} fixture;

static const uint8_t NOP[] = {0x90}, SYSCALL[] = {0x0f, 0x05}, REX_SYSCALL[] = {0x48, 0x0f, 0x05};

/* One instruction per block (a nop unless set otherwise), counter b. */
static void fixture_init(fixture *f, uint32_t nblocks, const test_edge *edges, uint32_t nedges)
{
    memset(f, 0, sizeof *f);
    build_procedure(&f->p, "f", nblocks, edges, nedges);
    for (uint32_t b = 0; b < nblocks; b++) {
        f->block_first[b] = b;
        f->insns[b] = (rw_insn){.old = f->p.blocks[b].start, .bytes = NOP, .len = 1, .counter = b};
        f->p.blocks[b].term = f->p.blocks[b].nsucc == 2 ? MT_TERM_COND : MT_TERM_JUMP;
        for (uint32_t k = 0; k < f->p.blocks[b].nsucc; k++)
            if (f->p.edges[f->p.blocks[b].first_succ + k].dst == MT_NONE)
                f->p.blocks[b].term = MT_TERM_RET;
    }
}

static void plan(fixture *f)
{
    rw_flow_plan_proc(&f->p, f->insns, f->block_first, f->p.nblocks, f->derived, &f->plan);
    rw_flow_plan_commit(&f->code, &f->plan, f->insns, f->block_first);
}

static void fixture_free(fixture *f)
{
    free(f->plan.words);
    free(f->code.equations);
    mt_procedure_free_cfg(&f->p);
    free(f->p.name);
}

static uint32_t derived_count(const fixture *f)
{
    uint32_t n = 0;
    for (uint32_t b = 0; b < f->p.nblocks; b++)
        n += f->derived[b];
    return n;
}

/* A small deterministic generator (the test must not depend on libc's). */
static uint32_t next_random(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

/* Walks `walks` random paths from the entry (or, one in four, from
 * `foreign`, when it is not MT_NONE), counting every block entered.  A
 * call block ends the path one time in three (its callee never returned),
 * a block holding a syscall one time in five. */
static void walk(const fixture *f, uint32_t walks, uint32_t foreign, uint64_t *truth)
{
    uint64_t seed = 42;
    for (uint32_t w = 0; w < walks; w++) {
        uint32_t b = foreign != MT_NONE && next_random(&seed) % 4 == 0 ? foreign : 0;
        for (uint32_t steps = 0; b != MT_NONE && steps < 200; steps++) {
            truth[b]++;
            const mt_block *blk = &f->p.blocks[b];
            if (blk->term == MT_TERM_CALL && next_random(&seed) % 3 == 0)
                break;
            if (f->insns[b].bytes != NOP && next_random(&seed) % 5 == 0)
                break;
            if (!blk->nsucc)
                break;
            b = f->p.edges[blk->first_succ + next_random(&seed) % blk->nsucc].dst;
        }
    }
}

/* The counts a run of the copy would give: the walk's for probed blocks,
 * 0 for derived ones, then filled in from the map as mt_profile_merge does. */
static bool derived_counts_exact(const fixture *f, uint32_t foreign)
{
    uint64_t truth[MAXB] = {0}, counts[MAXB] = {0};
    walk(f, 5000, foreign, truth);
    for (uint32_t b = 0; b < f->p.nblocks; b++)
        counts[b] = f->derived[b] ? 0 : truth[b];
    mt_counter_map map = {.ncounters = f->p.nblocks,
                          .equations = f->code.equations,
                          .nequation_words = (uint32_t)f->code.nequation_words};
    mt_counter_map_derive(&map, counts);
    bool same = true;
    for (uint32_t b = 0; b < f->p.nblocks; b++) {
        if (counts[b] != truth[b])
            printf("# block %u: derived %llu, walked %llu\n", b, (unsigned long long)counts[b],
                   (unsigned long long)truth[b]);
        same &= counts[b] == truth[b];
    }
    return same;
}

/* if-then-else: 0 -> {1, 2} -> 3 -> return.  Block 0 is the sum of 1 and 2
 * (out-rule), block 3 the sum of 1 and 2 (in-rule): two probes, not four. */
static void test_diamond(void)
{
    static const test_edge e[] = {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, MT_NONE}};
    fixture f;
    fixture_init(&f, 4, e, 5);
    plan(&f);
    CHECK(f.derived[0] && !f.derived[1] && !f.derived[2] && f.derived[3],
          "diamond: the branch and the join derived, the two arms probed");
    CHECK(f.code.nderived == 2, "diamond: two equations committed (%u)", f.code.nderived);
    CHECK(derived_counts_exact(&f, MT_NONE), "diamond: derived counts equal the walked ones");
    fixture_free(&f);
}

/* A loop: 0 -> 1; 1 -> {2, 3}; 2 -> 1 (back edge); 3 -> return.  The header
 * has two predecessors and two successors, one of which (3) it shares with
 * nobody: 1 = 2 + 3 by the out-rule, and 0 = 1?  No: 1 is also entered
 * from 2, so 0 -> 1 proves nothing about 0 alone. */
static void test_loop(void)
{
    static const test_edge e[] = {{0, 1}, {1, 2}, {1, 3}, {2, 1}, {3, MT_NONE}};
    fixture f;
    fixture_init(&f, 4, e, 5);
    plan(&f);
    CHECK(!f.derived[0] && f.derived[1] && !f.derived[2] && !f.derived[3],
          "loop: only the header derived (body + exit)");
    CHECK(derived_counts_exact(&f, MT_NONE), "loop: derived counts equal the walked ones");
    fixture_free(&f);
}

/* A call block may not return: 0 -> 1 (0 ends in a call, 1 after it); 1 ->
 * return.  Nothing is derived across the call.  With the call in a block
 * of its own before a diamond, the diamond's rules still hold. */
static void test_call_not_assumed_to_return(void)
{
    static const test_edge e1[] = {{0, 1}, {1, MT_NONE}};
    fixture f;
    fixture_init(&f, 2, e1, 2);
    f.p.blocks[0].term = MT_TERM_CALL;
    f.p.edges[0].kind = MT_EDGE_CALL_RETURN;
    plan(&f);
    CHECK(derived_count(&f) == 0, "call: nothing derived across a call that may not return");
    CHECK(derived_counts_exact(&f, MT_NONE), "call: counts equal the walked ones");
    fixture_free(&f);

    static const test_edge e2[] = {{0, 1}, {1, 2}, {1, 3}, {2, 4}, {3, 4}, {4, MT_NONE}};
    fixture_init(&f, 5, e2, 6);
    f.p.blocks[0].term = MT_TERM_CALL;
    f.p.edges[0].kind = MT_EDGE_CALL_RETURN;
    plan(&f);
    CHECK(!f.derived[0] && f.derived[1] && f.derived[4],
          "call then diamond: the call block probed, the diamond's branch and join derived");
    CHECK(derived_counts_exact(&f, MT_NONE),
          "call then diamond: derived counts equal the walked ones, paths ending in the call");
    fixture_free(&f);
}

/* A block holding a syscall (exit_group, a fatal tgkill) may stop there:
 * in the diamond with a syscall in block 1, block 3 = 1 + 2 would count a
 * path that ended in 1; only the out-rule at 0 remains.  With a REX prefix
 * before the syscall too. */
static void test_syscall_block(void)
{
    static const test_edge e[] = {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, MT_NONE}};
    const uint8_t *forms[] = {SYSCALL, REX_SYSCALL};
    const uint8_t lens[] = {sizeof SYSCALL, sizeof REX_SYSCALL};
    for (int k = 0; k < 2; k++) {
        fixture f;
        fixture_init(&f, 4, e, 5);
        f.insns[1].bytes = forms[k];
        f.insns[1].len = lens[k];
        plan(&f);
        CHECK(f.derived[0] && !f.derived[3],
              "syscall form %d: the join after a syscall block probed, the branch derived", k);
        CHECK(derived_counts_exact(&f, MT_NONE),
              "syscall form %d: derived counts equal the walked ones, paths ending at it", k);
        fixture_free(&f);
    }
}

/* A checked jump-table read may go on in the original code: its block is
 * never a hub of the out-rule nor a predecessor in the in-rule. */
static void test_checked_table_read(void)
{
    static const test_edge e[] = {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, MT_NONE}};
    fixture f;
    fixture_init(&f, 4, e, 5);
    f.insns[0].table_check = 1;
    plan(&f);
    CHECK(!f.derived[0] && f.derived[3],
          "checked table read: its block probed, the join derived");
    fixture_free(&f);
}

/* Another procedure jumps to block 1 (a foreign entry): 1's entries are
 * not all from 0, so 0 = 1 + 2 does not hold, and 3 = 1 + 2 still does. */
static void test_foreign_entry(void)
{
    static const test_edge e[] = {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, MT_NONE}};
    fixture f;
    fixture_init(&f, 4, e, 5);
    uint64_t entry = f.p.blocks[1].start;
    f.p.foreign_entries = &entry;
    f.p.nforeign_entries = 1;
    plan(&f);
    CHECK(!f.derived[0] && f.derived[3],
          "foreign entry: the branch probed (an arm has other entries), the join derived");
    CHECK(derived_counts_exact(&f, 1),
          "foreign entry: derived counts equal the walked ones, paths entering at the arm");
    f.p.foreign_entries = NULL;
    f.p.nforeign_entries = 0;
    fixture_free(&f);
}

/* A chain of diamonds, each hub feeding the next rule: equations refer to
 * blocks derived by earlier ones, never to later ones (the map's order). */
static void test_chained_equations(void)
{
    static const test_edge e[] = {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, 4}, {3, 5},
                                  {4, 6}, {5, 6}, {6, 7}, {6, 8}, {7, 9}, {8, 9},
                                  {9, MT_NONE}};
    fixture f;
    fixture_init(&f, 10, e, 13);
    plan(&f);
    CHECK(derived_count(&f) >= 4, "chain of diamonds: %u blocks derived", derived_count(&f));
    CHECK(derived_counts_exact(&f, MT_NONE),
          "chain of diamonds: derived counts equal the walked ones");
    bool *defined = mt_xcalloc(f.p.nblocks, sizeof *defined);
    for (uint32_t b = 0; b < f.p.nblocks; b++)
        defined[b] = !f.derived[b];
    bool ordered = true;
    for (size_t k = 0; k < f.code.nequation_words;) {
        uint32_t d = (uint32_t)f.code.equations[k], n = (uint32_t)(f.code.equations[k] >> 32);
        for (uint32_t j = 1; j <= n; j++)
            ordered &= defined[f.code.equations[k + j]];
        defined[d] = true;
        k += 1 + n;
    }
    CHECK(ordered, "chain of diamonds: every term counted or derived by an earlier equation");
    free(defined);
    fixture_free(&f);
}

/* A switch: 0 -> {1, 2, 3} through a jump table (two entries to 3), each
 * case -> 4.  0 is the sum of its three distinct successors. */
static void test_switch(void)
{
    static const test_edge e[] = {{0, 1}, {0, 2}, {0, 3}, {0, 3}, {1, 4}, {2, 4}, {3, 4},
                                  {4, MT_NONE}};
    fixture f;
    fixture_init(&f, 5, e, 8);
    f.p.blocks[0].term = MT_TERM_TABLE_JUMP;
    for (uint32_t k = 0; k < 4; k++)
        f.p.edges[k].kind = MT_EDGE_INDIRECT;
    plan(&f);
    CHECK(f.derived[0] && f.derived[4] && derived_count(&f) == 2,
          "switch: the dispatch and the join derived, the cases probed");
    CHECK(derived_counts_exact(&f, MT_NONE), "switch: derived counts equal the walked ones");
    fixture_free(&f);
}

int main(void)
{
    test_diamond();
    test_loop();
    test_call_not_assumed_to_return();
    test_syscall_block();
    test_checked_table_read();
    test_foreign_entry();
    test_chained_equations();
    test_switch();
    return unit_finish();
}
