/* Unit tests of regions (MTOOL: large loop-free procedures partitioned into
 * several m-objects) on hand-built CFGs: the cut points of analyzer/regions.c
 * (straight lines, diamonds, early returns, shared epilogues, loops, stack
 * depth, setjmp, split parts), the blocks of a region, the partition of
 * correlate/regions.c (balanced, timable, the most regions), and mt_select
 * appending the regions of a large loop-free procedure, judged. */
#include "cfg_builder.h"
#include "correlate/correlate.h"
#include "unit.h"

#include <math.h>

#define N MT_NONE

static uint32_t add_proc(test_program *t, const char *name, uint32_t nblocks, const test_edge *e,
                         uint32_t ne)
{
    uint32_t i = t->prog.nprocs++;
    mt_procedure *p = &t->procs[i];
    build_procedure(p, name, nblocks, e, ne);
    p->entry = 0x10000 + 0x1000ull * i;
    for (uint32_t b = 0; b < p->nblocks; b++) {
        p->blocks[b].start += p->entry - 0x1000;
        p->blocks[b].end += p->entry - 0x1000;
    }
    p->size = p->nblocks ? p->blocks[p->nblocks - 1].end - p->entry : 0;
    t->prog.procs = t->procs;
    return i;
}

/* Block b ends with a call to `callee` returning to b + 1. */
static void make_call(test_program *t, uint32_t pi, uint32_t b, uint32_t callee)
{
    mt_procedure *p = &t->procs[pi];
    p->blocks[b].term = MT_TERM_CALL;
    for (uint32_t e = p->blocks[b].first_succ; e < p->blocks[b].first_succ + p->blocks[b].nsucc; e++)
        if (p->edges[e].dst == b + 1)
            p->edges[e].kind = MT_EDGE_CALL_RETURN;
    mt_call_kind kind = callee != N && t->procs[callee].is_plt ? MT_CALL_PLT : MT_CALL_DIRECT;
    add_call(p, b, callee, kind);
    p->calls[p->ncalls - 1].target = callee != N ? t->procs[callee].entry : 0;
}

static void analyze_program(test_program *t)
{
    t->prog.procs = t->procs;
    for (uint32_t i = 0; i < t->prog.nprocs; i++)
        analyze_procedure(&t->procs[i]);
    mt_build_callgraph(&t->prog);
}

#define CUTS_ARE(t, pi, ...)                                                                      \
    cuts_are((t), (pi), (const uint32_t[]){__VA_ARGS__},                                          \
             (uint32_t)MT_ARRAY_LEN(((const uint32_t[]){__VA_ARGS__})))

static bool cuts_are(const test_program *t, uint32_t pi, const uint32_t *want, uint32_t nwant)
{
    uint32_t *cuts;
    uint32_t n = mt_region_cuts(&t->prog, pi, &cuts);
    bool ok = list_is(cuts, n, want, nwant);
    if (!ok) {
        printf("# cuts:");
        for (uint32_t k = 0; k < n; k++)
            printf(" %u", cuts[k]);
        printf("\n");
    }
    free(cuts);
    return ok;
}

static bool no_cuts(const test_program *t, uint32_t pi)
{
    uint32_t *cuts;
    uint32_t n = mt_region_cuts(&t->prog, pi, &cuts);
    free(cuts);
    return n == 0 && cuts == NULL;
}

/* The blocks of region [first, end) as a list. */
static bool region_is(const mt_procedure *p, uint32_t first, uint32_t end, const uint32_t *want,
                      uint32_t nwant)
{
    bool *in = mt_xcalloc(p->nblocks + 1, sizeof *in);
    mt_region_blocks(p, first, end, in);
    uint32_t got[64], n = 0;
    for (uint32_t b = 0; b < p->nblocks && n < 64; b++)
        if (in[b])
            got[n++] = b;
    free(in);
    return list_is(got, n, want, nwant);
}
#define REGION_IS(p, first, end, ...)                                                             \
    region_is((p), (first), (end), (const uint32_t[]){__VA_ARGS__},                               \
              (uint32_t)MT_ARRAY_LEN(((const uint32_t[]){__VA_ARGS__})))

static void test_shapes(void)
{
    test_program t = {0};
    /* 0 → 1 → 2 → 3 → return: every block is a cut point. */
    const test_edge line[] = {{0, 1}, {1, 2}, {2, 3}, {3, N}};
    uint32_t a = add_proc(&t, "line", 4, line, MT_ARRAY_LEN(line));
    /* A diamond: 0 → 1 | 2 → 3 → return. */
    const test_edge diamond[] = {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, N}};
    uint32_t b = add_proc(&t, "diamond", 4, diamond, MT_ARRAY_LEN(diamond));
    /* An early return: 0 → return | 1 → 2 → return. */
    const test_edge early[] = {{0, 1}, {0, N}, {1, 2}, {2, N}};
    uint32_t c = add_proc(&t, "early", 3, early, MT_ARRAY_LEN(early));
    /* A shared epilogue: 0 → 1 → 2 → 3, 0 → 3, 3 → return. */
    const test_edge shared[] = {{0, 1}, {0, 3}, {1, 2}, {2, 3}, {3, N}};
    uint32_t d = add_proc(&t, "shared", 4, shared, MT_ARRAY_LEN(shared));
    /* A loop in the middle: 0 → 1 ↔ 2 → 3 → 4 → return. */
    const test_edge loop[] = {{0, 1}, {1, 2}, {2, 1}, {2, 3}, {3, 4}, {4, N}};
    uint32_t e = add_proc(&t, "loop", 5, loop, MT_ARRAY_LEN(loop));
    /* The entry in a loop: 0 → 1 → 0, 1 → return. */
    const test_edge entry_loop[] = {{0, 1}, {1, 0}, {1, N}};
    uint32_t f = add_proc(&t, "entry_loop", 2, entry_loop, MT_ARRAY_LEN(entry_loop));
    /* Never returns: 0 → 1, 1 stops. */
    const test_edge stops[] = {{0, 1}};
    uint32_t g = add_proc(&t, "stops", 2, stops, MT_ARRAY_LEN(stops));
    /* An abort path shared by two stretches: 0 → 1 | 4, 1 → 2 → 3 → return,
     * 2 → 4 (4 stops: abort), so 4 is dominated by 0 only. */
    const test_edge abort_path[] = {{0, 1}, {0, 4}, {1, 2}, {2, 3}, {2, 4}, {3, N}};
    uint32_t h = add_proc(&t, "abort_path", 5, abort_path, MT_ARRAY_LEN(abort_path));
    analyze_program(&t);

    CHECK(CUTS_ARE(&t, a, 0, 1, 2, 3), "cuts: a straight line is cut at every block");
    CHECK(CUTS_ARE(&t, b, 0, 3), "cuts: a diamond only at its entry and its join");
    CHECK(CUTS_ARE(&t, c, 0), "cuts: an early return leaves only the entry (one region)");
    CHECK(CUTS_ARE(&t, d, 0, 3), "cuts: blocks a path around skips are no cut points");
    CHECK(CUTS_ARE(&t, e, 0, 3, 4), "cuts: none inside a loop; the loop lies whole in a region");
    CHECK(no_cuts(&t, f), "cuts: none when the entry is in a loop");
    CHECK(no_cuts(&t, g), "cuts: none in a procedure that never returns");
    CHECK(CUTS_ARE(&t, h, 0, 1, 2, 3), "cuts: a shared abort block does not hide the spine");

    const mt_procedure *pb = &t.procs[b], *pe = &t.procs[e], *ph = &t.procs[h];
    CHECK(REGION_IS(pb, 0, 3, 0, 1, 2) && REGION_IS(pb, 3, N, 3),
          "blocks: a diamond's regions are its branches and its join");
    CHECK(REGION_IS(pe, 0, 3, 0, 1, 2) && REGION_IS(pe, 3, 4, 3) && REGION_IS(pe, 0, N, 0, 1, 2, 3, 4),
          "blocks: a region holds the whole loop; [0, -) is every block");
    CHECK(REGION_IS(ph, 1, 3, 1, 2) && REGION_IS(ph, 0, 1, 0, 4),
          "blocks: the abort block belongs to the region of its dominator");
    uint32_t cuts[] = {0, 3, 4}, region[5];
    mt_region_of_blocks(pe, cuts, 3, region);
    CHECK(list_is(region, 5, (const uint32_t[]){0, 0, 0, 1, 2}, 5),
          "blocks: mt_region_of_blocks numbers each block's region");
    free_program(&t);
}

static void test_stack_and_calls(void)
{
    test_program t = {0};
    const test_edge leaf_e[] = {{0, N}};
    uint32_t f = add_proc(&t, "f", 1, leaf_e, 1);
    uint32_t sj = add_proc(&t, "_setjmp@plt", 1, leaf_e, 1);
    t.procs[sj].is_plt = true;
    /* push; sub $0x80,%rsp; call f | add $0x80,%rsp; call f | ... | return:
     * after the first call the stack is deeper than at the second call. */
    const test_edge chain[] = {{0, 1}, {1, 2}, {2, 3}, {3, N}};
    uint32_t p = add_proc(&t, "deep", 4, chain, MT_ARRAY_LEN(chain));
    make_call(&t, p, 0, f);
    make_call(&t, p, 1, f);
    t.procs[p].blocks[0].rsp_delta = 8 + 0x80;
    t.procs[p].blocks[1].rsp_delta = -0x80;
    t.procs[p].blocks[3].rsp_delta = -8;
    /* %rsp set otherwise (mov, and $-16) in block 1, before a call. */
    uint32_t q = add_proc(&t, "lost", 4, chain, MT_ARRAY_LEN(chain));
    make_call(&t, q, 2, f);
    t.procs[q].blocks[1].rsp_delta = MT_RSP_UNKNOWN;
    /* ... only in the last block (`leave; ret`): nothing follows it. */
    uint32_t q2 = add_proc(&t, "leave", 4, chain, MT_ARRAY_LEN(chain));
    make_call(&t, q2, 2, f);
    t.procs[q2].blocks[3].rsp_delta = MT_RSP_UNKNOWN;
    /* setjmp in block 1: block 2 is entered again by longjmp. */
    uint32_t r = add_proc(&t, "jumps", 4, chain, MT_ARRAY_LEN(chain));
    make_call(&t, r, 1, sj);
    /* A landing pad on the spine: 0 → 1 (call, exception edge to 2), 1 → 2. */
    uint32_t s = add_proc(&t, "pad", 4, chain, MT_ARRAY_LEN(chain));
    make_call(&t, s, 1, f);
    t.procs[s].edges[1].kind = MT_EDGE_EXCEPTION;
    analyze_program(&t);
    CHECK(CUTS_ARE(&t, p, 0, 2, 3),
          "cuts: not where the stack is deeper than at a later call (call f; add $0x80,%%rsp)");
    CHECK(CUTS_ARE(&t, q, 0), "cuts: none before a call whose stack height is unknown");
    CHECK(CUTS_ARE(&t, q2, 0, 1, 2, 3), "cuts: an epilogue's `leave` does not matter");
    CHECK(CUTS_ARE(&t, r, 0, 1, 3), "cuts: not the block a setjmp call returns to");
    CHECK(CUTS_ARE(&t, s, 0, 1, 3), "cuts: not a landing pad");
    free_program(&t);
}

/* foo jumps into foo.cold from block 1, which jumps back to block 3. */
static void test_split_part(void)
{
    for (int leaves = 0; leaves < 2; leaves++) {
        test_program t = {0};
        const test_edge chain[] = {{0, 1}, {1, 2}, {1, N}, {2, 3}, {3, 4}, {4, 5}, {5, N}};
        uint32_t p = add_proc(&t, "foo", 6, chain, MT_ARRAY_LEN(chain));
        const test_edge part_e[] = {{0, N}, {0, N}};
        uint32_t c = add_proc(&t, "foo.cold", 1, part_e, leaves ? 2 : 1);
        t.procs[c].parent = p;
        mt_edge *into = &t.procs[p].edges[2];
        into->kind = MT_EDGE_COND_TAKEN;
        into->target = t.procs[c].entry;
        t.procs[c].edges[0].kind = MT_EDGE_JUMP;
        t.procs[c].edges[0].target = t.procs[p].blocks[3].start;
        analyze_program(&t);
        if (!leaves)
            CHECK(CUTS_ARE(&t, p, 0, 1, 4, 5),
                  "cuts: a jump into foo.cold and its way back lie in one region");
        else
            CHECK(CUTS_ARE(&t, p, 0, 1),
                  "cuts: all in the last region when foo.cold also returns");
        free_program(&t);
    }
}

static bool starts_are(const uint32_t *starts, uint32_t n, const uint32_t *want, uint32_t nwant)
{
    return list_is(starts, n, want, nwant);
}

static void test_partition(void)
{
    double cyc[8], mem[8], ent[8];
    uint32_t starts[1024];
    for (int k = 0; k < 8; k++)
        cyc[k] = 1000, mem[k] = 100, ent[k] = 1;
    /* Timable at 250 cycles and 25 memory operations per entry: 4 regions of 2. */
    uint32_t n = mt_partition_segments(cyc, mem, ent, 8, 250, 25, 8, starts);
    CHECK(n == 8, "partition: as many regions as segments when each is timable (%u)", n);
    n = mt_partition_segments(cyc, mem, ent, 8, 2000, 150, 8, starts);
    CHECK(n == 4 && starts_are(starts, n, (const uint32_t[]){0, 2, 4, 6}, 4),
          "partition: 4 equal regions of 2 segments when a region needs 2 (%u)", n);
    n = mt_partition_segments(cyc, mem, ent, 8, 250, 25, 3, starts);
    uint32_t widest = 0;
    for (uint32_t r = 0; r < n; r++) {
        uint32_t w = (r + 1 < n ? starts[r + 1] : 8) - starts[r];
        widest = w > widest ? w : widest;
    }
    CHECK(n == 3 && starts[0] == 0 && widest == 3,
          "partition: at most max_regions, the largest as small as possible (%u: %u %u %u)", n,
          starts[0], n > 1 ? starts[1] : 0, n > 2 ? starts[2] : 0);
    n = mt_partition_segments(cyc, mem, ent, 8, 4001, 10, 8, starts);
    CHECK(n == 0, "partition: none when fewer than 2 regions are timable (%u)", n);
    n = mt_partition_segments(cyc, mem, ent, 8, 10, 401, 8, starts);
    CHECK(n == 0, "partition: memory operations per entry count too (%u)", n);
    /* Memory operations only in the first half: every region needs some. */
    double mem2[8] = {100, 100, 100, 100, 0, 0, 0, 0};
    n = mt_partition_segments(cyc, mem2, ent, 8, 250, 50, 8, starts);
    CHECK(n == 4 && starts[3] == 3, "partition: a region without memory operations is not timable: "
                                    "the last takes them all (%u regions, last at %u)", n,
          n ? starts[n - 1] : 0);
    /* Per entry: a segment run 10 times as often needs 10 times the work. */
    double ent2[8] = {1, 1, 1, 1, 10, 10, 10, 10};
    n = mt_partition_segments(cyc, mem, ent2, 8, 500, 50, 8, starts);
    bool per_entry = n >= 2;
    for (uint32_t k = 0; k < n; k++)
        per_entry &= starts[k] < 4 || k == 0;
    CHECK(per_entry, "partition: timability per entry of the region's first cut point (%u)", n);
    /* Uneven: a heavy segment alone, the light ones together. */
    double cyc3[6] = {3000, 500, 500, 500, 500, 3000}, mem3[6] = {10, 10, 10, 10, 10, 10}, ent3[6] = {1, 1, 1, 1, 1, 1};
    n = mt_partition_segments(cyc3, mem3, ent3, 6, 1000, 1, 3, starts);
    CHECK(n == 3 && starts_are(starts, n, (const uint32_t[]){0, 1, 5}, 3),
          "partition: regions of nearly equal predicted time (%u)", n);
    /* Many cut points: grouped first, still balanced. */
    enum { MANY = 1000 };
    double *c = mt_xcalloc(MANY, sizeof *c), *m = mt_xcalloc(MANY, sizeof *m), *e = mt_xcalloc(MANY, sizeof *e);
    for (int k = 0; k < MANY; k++)
        c[k] = 10 + k % 7, m[k] = 1, e[k] = 1;
    n = mt_partition_segments(c, m, e, MANY, 100, 10, 8, starts);
    double total = 0, largest = 0;
    for (int k = 0; k < MANY; k++)
        total += c[k];
    for (uint32_t r = 0; r < n; r++) {
        double sum = 0;
        for (uint32_t k = starts[r]; k < (r + 1 < n ? starts[r + 1] : MANY); k++)
            sum += c[k];
        largest = sum > largest ? sum : largest;
    }
    CHECK(n == 8 && largest <= total / 8 * 1.02,
          "partition: 1000 cut points, 8 regions within 2%% of an equal share (%u, largest %.0f of %.0f)",
          n, largest, total);
    free(c);
    free(m);
    free(e);
}

/* main calls big (a chain of 8 blocks, 2000 cycles and 1000 memory operations
 * each per entry, called 100 times; block 5 calls the constant-time leaf
 * `leaf`, which main calls too) and loopy (most of its memory operations in
 * a loop). */
static void test_select(void)
{
    test_program t = {0};
    const test_edge main_e[] = {{0, 1}, {1, 2}, {2, 3}, {3, N}};
    uint32_t mainp = add_proc(&t, "main", 4, main_e, MT_ARRAY_LEN(main_e));
    const test_edge big_e[] = {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}, {7, N}};
    uint32_t big = add_proc(&t, "big", 8, big_e, MT_ARRAY_LEN(big_e));
    const test_edge loopy_e[] = {{0, 1}, {1, 2}, {2, 1}, {2, 3}, {3, N}};
    uint32_t loopy = add_proc(&t, "loopy", 4, loopy_e, MT_ARRAY_LEN(loopy_e));
    const test_edge leaf_e[] = {{0, N}};
    uint32_t leaf = add_proc(&t, "leaf", 1, leaf_e, 1);
    make_call(&t, mainp, 0, big);
    make_call(&t, mainp, 1, loopy);
    make_call(&t, mainp, 2, leaf);
    make_call(&t, big, 5, leaf);
    t.prog.entry = t.procs[mainp].entry;
    analyze_program(&t);
    mt_program_costs costs = {.nprocs = t.prog.nprocs};
    costs.first = mt_xcalloc(t.prog.nprocs + 1, sizeof *costs.first);
    for (uint32_t p = 0; p < t.prog.nprocs; p++)
        costs.first[p + 1] = costs.first[p] + t.procs[p].nblocks;
    uint64_t nb = costs.first[t.prog.nprocs];
    costs.costs = mt_xcalloc(nb, sizeof *costs.costs);
    uint64_t *counts = mt_xcalloc(nb, sizeof *counts);
    for (uint32_t p = 0; p < t.prog.nprocs; p++)
        for (uint32_t b = 0; b < t.procs[p].nblocks; b++)
            costs.costs[costs.first[p] + b].cycles = 10, counts[costs.first[p] + b] = 1;
    for (uint32_t b = 0; b < 8; b++) {
        t.procs[big].blocks[b].mem_reads = 1000;
        costs.costs[costs.first[big] + b].cycles = 2000;
        counts[costs.first[big] + b] = 100;
    }
    counts[costs.first[mainp] + 2] = 200; /* main calls leaf 200 times, big 100 */
    counts[costs.first[leaf]] = 300;
    t.procs[loopy].blocks[1].mem_reads = t.procs[loopy].blocks[2].mem_reads = 500;
    t.procs[loopy].blocks[0].mem_reads = 10;
    costs.costs[costs.first[loopy] + 1].cycles = costs.costs[costs.first[loopy] + 2].cycles = 5000;
    counts[costs.first[loopy] + 1] = counts[costs.first[loopy] + 2] = 100;

    mt_refine_with_pass1(&t.prog, counts, NULL, 0); /* what pass 2 does before selecting */
    mt_select_options o;
    mt_select_options_init(&o);
    mt_selection sel;
    mt_select(&t.prog, &costs, counts, &o, &sel);
    uint32_t nregions = 0, timed = 0, loopy_regions = 0;
    bool entries = true, exact = true, order = true;
    uint16_t last_k = 0;
    double sum = 0;
    for (size_t i = 0; i < sel.ncands; i++) {
        const mt_candidate *c = &sel.cands[i];
        loopy_regions += c->proc == loopy && c->region.n;
        if (c->proc != big || !c->region.n)
            continue;
        nregions++;
        timed += c->status == MT_CAND_TIMED;
        entries &= c->entries == 100;
        exact &= !c->warning[0];
        order &= c->region.k == last_k + 1;
        last_k = c->region.k;
        sum += c->predicted;
    }
    /* 16000 cycles and 8000 memory operations per call (+ the leaf): timable
     * at 3500 and 600, so 4 regions of 2 blocks. */
    CHECK(nregions == 4 && timed == 4, "select: the loop-free procedure in 4 timed regions (%u, %u timed)",
          nregions, timed);
    CHECK(entries && order, "select: each region entered once per call, numbered in order");
    CHECK(exact, "select: a constant-time leaf shared by main keeps the regions estimable, silently");
    CHECK(fabs(sum - (1600000 + 100 * 10)) < 1,
          "select: the regions' predictions add up to the procedure's (%.0f)", sum);
    CHECK(loopy_regions == 0, "select: a procedure whose memory operations are in a loop is not cut");

    /* A library's selection and the executable's, joined as pass 2 times
     * them: timed candidates part after part (their records' order), then
     * the others; totals summed; each named by its object. */
    mt_selection parts[2] = {sel, sel}, joined;
    const char *objects[2] = {"liba.so", NULL};
    mt_selection_join(parts, objects, 2, &joined);
    bool in_order = joined.ncands == 2 * sel.ncands && joined.ntimed == 2 * sel.ntimed;
    size_t others = sel.ncands - sel.ntimed;
    for (size_t i = 0; in_order && others && i < joined.ncands; i++) {
        bool timed_part = i < 2 * sel.ntimed;
        size_t part = timed_part ? i / sel.ntimed : (i - 2 * sel.ntimed) / others;
        size_t j = timed_part ? i % sel.ntimed : sel.ntimed + (i - 2 * sel.ntimed) % others;
        in_order = joined.cands[i].object == objects[part] && joined.cands[i].prog == &t.prog &&
                   joined.cands[i].proc == sel.cands[j].proc &&
                   joined.cands[i].status == sel.cands[j].status &&
                   (joined.cands[i].status == MT_CAND_TIMED) == (i < joined.ntimed);
    }
    CHECK(sel.ntimed > 0 && sel.ncands > sel.ntimed && in_order,
          "select: joined parts keep each part's timed candidates first, part after part, then "
          "the others, each named by its object");
    CHECK(joined.memops_total == 2 * sel.memops_total &&
              fabs(joined.predicted_total - 2 * sel.predicted_total) < 1e-6,
          "select: a join's totals are its parts' sums");
    mt_selection_free(&joined);
    mt_selection_free(&sel);

    o.max_regions = 0;
    mt_select(&t.prog, &costs, counts, &o, &sel);
    nregions = 0;
    for (size_t i = 0; i < sel.ncands; i++)
        nregions += sel.cands[i].region.n > 0;
    CHECK(nregions == 0, "select: --max-regions 0 (max_regions < 2) cuts nothing");
    mt_selection_free(&sel);
    free(costs.first);
    free(costs.costs);
    free(counts);
    free_program(&t);
}

int main(void)
{
    test_shapes();
    test_stack_and_calls();
    test_split_part();
    test_partition();
    test_select();
    return unit_finish();
}
