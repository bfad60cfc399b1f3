/* tests/unit/test_costmodel.c — the block predictor on hand-assembled
 * sequences whose timing follows from the profile's own latencies and
 * throughputs (encodings from GNU as, shown beside each), and the machine
 * profile file format. */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "costmodel/costmodel.h"
#include "tests/unit/cfg_builder.h"
#include "tests/unit/unit.h"

static mt_machine machine;
static mt_predictor *predictor;

static mt_block_cost predict(const uint8_t *code, size_t len, bool loop)
{
    mt_block_cost c;
    mt_block_context ctx = {.steady_state = loop, .taken_exit = loop};
    mt_predict_block(predictor, code, len, 0x1000, &ctx, &c);
    return c;
}

static bool near(double got, double want) { return fabs(got - want) <= 0.05 * want + 0.01; }

static double lat(mt_iclass c) { return machine.timing[c][MT_W128].latency; }
static double rtp(mt_iclass c) { return machine.timing[c][MT_W128].rthroughput; }

static void test_dependent_imul_chain(void)
{
    static const uint8_t imul[] = {0x48, 0x0f, 0xaf, 0xc0}; /* imul %rax,%rax */
    uint8_t code[4 * 16];
    for (int n = 1; n <= 16; n *= 4) {
        for (int i = 0; i < n; i++)
            memcpy(code + 4 * i, imul, 4);
        mt_block_cost c = predict(code, 4 * (size_t)n, false);
        CHECK(c.ninsns == (uint32_t)n && near(c.cycles, n * lat(MT_IC_IMUL)) &&
                  c.limit == MT_BOUND_LATENCY,
              "chain of %d dependent imuls: %.2f cycles (latency-bound), %d x %.2f expected", n,
              c.cycles, n, lat(MT_IC_IMUL));
        mt_block_cost l = predict(code, 4 * (size_t)n, true);
        CHECK(near(l.cycles, n * lat(MT_IC_IMUL)) && l.limit == MT_BOUND_RECURRENCE,
              "same chain as a loop body: recurrence %.2f cycles per iteration", l.cycles);
    }
}

static void test_independent_adds(void)
{
    /* add $1 to r8..r15, rsi, rbx, rcx, rdx: twelve independent adds */
    static const uint8_t code[] = {
        0x49, 0x83, 0xc0, 0x01, 0x49, 0x83, 0xc1, 0x01, 0x49, 0x83, 0xc2, 0x01, 0x49, 0x83,
        0xc3, 0x01, 0x49, 0x83, 0xc4, 0x01, 0x49, 0x83, 0xc5, 0x01, 0x49, 0x83, 0xc6, 0x01,
        0x49, 0x83, 0xc7, 0x01, 0x48, 0x83, 0xc6, 0x01, 0x48, 0x83, 0xc3, 0x01, 0x48, 0x83,
        0xc1, 0x01, 0x48, 0x83, 0xc2, 0x01};
    mt_block_cost c = predict(code, sizeof code, true);
    double want = fmax(12 * rtp(MT_IC_ALU), 12 / machine.dispatch_width);
    CHECK(c.ninsns == 12 && near(c.cycles, want) && c.bounds[MT_BOUND_RECURRENCE] <= 1.01,
          "12 independent adds in a loop: %.2f cycles (%s), throughput %.2f expected", c.cycles,
          mt_bound_name(c.limit), want);
}

static void test_fp_reduction_loop(void)
{
    /* addsd (%rdi),%xmm0; add $8,%rdi; cmp %rax,%rdi; jne back */
    static const uint8_t code[] = {0xf2, 0x0f, 0x58, 0x07, 0x48, 0x83, 0xc7,
                                   0x08, 0x48, 0x39, 0xc7, 0x75, 0xf0};
    mt_block_cost c = predict(code, sizeof code, true);
    CHECK(near(c.cycles, fmax(lat(MT_IC_FADD), 1 / machine.taken_per_cycle)),
          "sum += a[i] (double): %.2f cycles per iteration, the FP add latency %.2f", c.cycles,
          lat(MT_IC_FADD));
    mt_block_cost once = predict(code, sizeof code, false);
    double path = machine.timing[MT_IC_VLOAD][MT_W128].latency + lat(MT_IC_FADD);
    CHECK(near(once.bounds[MT_BOUND_LATENCY], path),
          "same block once: critical path %.2f = vector load + add %.2f", once.bounds[MT_BOUND_LATENCY],
          path);
}

static void test_memory_carried(void)
{
    /* mov (%rdi),%rax; add $1,%rax; mov %rax,(%rdi) — the same counter each time */
    static const uint8_t same[] = {0x48, 0x8b, 0x07, 0x48, 0x83, 0xc0, 0x01, 0x48, 0x89, 0x07};
    /* mov -8(%rdi),%rax; add $1,%rax; mov %rax,(%rdi); add $8,%rdi — a[i] = a[i-1] + 1 */
    static const uint8_t prev[] = {0x48, 0x8b, 0x47, 0xf8, 0x48, 0x83, 0xc0, 0x01,
                                   0x48, 0x89, 0x07, 0x48, 0x83, 0xc7, 0x08};
    /* mov (%rdi),%rax; add $1,%rax; mov %rax,(%rdi); add $8,%rdi — a[i] += 1 */
    static const uint8_t own[] = {0x48, 0x8b, 0x07, 0x48, 0x83, 0xc0, 0x01,
                                  0x48, 0x89, 0x07, 0x48, 0x83, 0xc7, 0x08};
    double carried = lat(MT_IC_STLF) + lat(MT_IC_ALU);
    mt_block_cost a = predict(same, sizeof same, true), b = predict(prev, sizeof prev, true),
                  c = predict(own, sizeof own, true);
    CHECK(near(a.bounds[MT_BOUND_RECURRENCE], carried),
          "counter in memory: recurrence %.2f = forwarding + add %.2f", a.bounds[MT_BOUND_RECURRENCE],
          carried);
    CHECK(near(b.bounds[MT_BOUND_RECURRENCE], carried),
          "a[i] = a[i-1] + 1 through a moving pointer: recurrence %.2f = %.2f",
          b.bounds[MT_BOUND_RECURRENCE], carried);
    CHECK(near(c.bounds[MT_BOUND_RECURRENCE], lat(MT_IC_ALU)),
          "a[i] += 1: no memory recurrence, only the pointer's %.2f",
          c.bounds[MT_BOUND_RECURRENCE]);
}

/* Loops that chase pointers (a load's address from what it loaded in an
 * earlier iteration, through registers or a stack slot) and loops that do
 * not (a gather: addresses from a load that depends on no load). */
static void test_chases(void)
{
    static const uint8_t chase[] = {0x48, 0x8b, 0x40, 0x08,  /* mov 8(%rax),%rax */
                                    0x48, 0x85, 0xc0, 0x75, 0xf7};
    static const uint8_t two[] = {0x48, 0x8b, 0x10,          /* mov (%rax),%rdx */
                                  0x48, 0x8b, 0x42, 0x10,    /* mov 16(%rdx),%rax */
                                  0xeb, 0xf7};
    static const uint8_t gather[] = {0x48, 0x63, 0x04, 0x8f, /* movslq (%rdi,%rcx,4),%rax */
                                     0xf2, 0x0f, 0x58, 0x04, 0xc6, /* addsd (%rsi,%rax,8),%xmm0 */
                                     0x48, 0x83, 0xc1, 0x01, 0x48, 0x39, 0xca, 0x75, 0xee};
    /* -O0: the list pointer lives in -8(%rbp) */
    static const uint8_t o0walk[] = {0x48, 0x8b, 0x45, 0xf8, 0x48, 0x8b, 0x40, 0x08,
                                     0x48, 0x89, 0x45, 0xf8, 0x48, 0x83, 0x7d, 0xf8, 0x00,
                                     0x75, 0xed};
    /* -O0: sum += a[i], i in -16(%rbp) (addq $1 to it), a in -24(%rbp) */
    static const uint8_t o0sum[] = {0x48, 0x8b, 0x45, 0xf0, 0x48, 0x8d, 0x14, 0xc5, 0, 0, 0, 0,
                                    0x48, 0x8b, 0x45, 0xe8, 0x48, 0x01, 0xd0,
                                    0xf2, 0x0f, 0x10, 0x08, 0xf2, 0x0f, 0x58, 0xc1,
                                    0x48, 0x83, 0x45, 0xf0, 0x01, 0xeb, 0xde};
    struct {
        const char *name;
        const uint8_t *code;
        size_t len;
        bool chases;
    } loops[] = {{"list walk", chase, sizeof chase, true},
                 {"two loads in a cycle", two, sizeof two, true},
                 {"gather", gather, sizeof gather, false},
                 {"-O0 list walk through a stack slot", o0walk, sizeof o0walk, true},
                 {"-O0 array sum, index in a stack slot", o0sum, sizeof o0sum, false}};
    for (size_t i = 0; i < MT_ARRAY_LEN(loops); i++) {
        mt_code_range r = {loops[i].code, loops[i].len, 0x1000, true, MT_PROBE_NONE};
        bool got = mt_predict_chases(predictor, &r, 1);
        CHECK(got == loops[i].chases, "%s: %s", loops[i].name,
              got ? "chases pointers" : "chases none");
    }
}

static void test_zero_idiom_breaks_chain(void)
{
    static const uint8_t code[] = {0x48, 0x0f, 0xaf, 0xc0, 0x31, 0xc0}; /* imul; xor %eax,%eax */
    mt_block_cost c = predict(code, sizeof code, true);
    CHECK(c.bounds[MT_BOUND_RECURRENCE] < 0.01,
          "imul then xor %%eax,%%eax: no recurrence (%.2f)", c.bounds[MT_BOUND_RECURRENCE]);
}

static void test_dispatch(void)
{
    uint8_t nops[48];
    memset(nops, 0x90, sizeof nops);
    mt_block_cost c = predict(nops, sizeof nops, true);
    CHECK(near(c.cycles, 48 / machine.dispatch_width) && c.limit == MT_BOUND_DISPATCH,
          "48 nops: %.2f cycles, dispatch-bound", c.cycles);
}

/* A rotated search loop: the header tests the byte, the latch advances and
 * jumps back.  Run together they take one taken branch per iteration, not
 * the sum of the two blocks predicted apart. */
static void test_two_block_loop(void)
{
    static const uint8_t header[] = {0x38, 0x14, 0x0f, 0x74, 0x0a}; /* cmp %dl,(%rdi,%rcx,1); je */
    static const uint8_t latch[] = {0x48, 0x83, 0xc1, 0x01, 0x48, 0x39,
                                    0xce, 0x75, 0xf1}; /* add $1,%rcx; cmp; jne */
    mt_code_range r[2] = {{header, sizeof header, 0x1000, false, MT_PROBE_NONE},
                          {latch, sizeof latch, 0x1005, true, MT_PROBE_NONE}};
    mt_block_cost joint, h, l;
    mt_predict_throughput(predictor, r, 2, &joint);
    mt_block_context in_loop = {.throughput_only = true};
    mt_predict_block(predictor, header, sizeof header, 0x1000, &in_loop, &h);
    in_loop.taken_exit = true;
    mt_predict_block(predictor, latch, sizeof latch, 0x1005, &in_loop, &l);
    /* Taken branches bound it; on a core whose add latency is one taken
     * branch's time (Zen 3) the add chain ties, and either may be named. */
    CHECK(near(joint.cycles, 1 / machine.taken_per_cycle) &&
              near(joint.bounds[MT_BOUND_TAKEN], joint.cycles) && joint.cycles < h.cycles + l.cycles,
          "two-block loop predicted together: %.2f cycles (taken branches), apart %.2f + %.2f",
          joint.cycles, h.cycles, l.cycles);
    double rec = mt_predict_recurrence(predictor, r, 2, NULL);
    CHECK(near(rec, lat(MT_IC_ALU)), "its recurrence is the index increment: %.2f", rec);
}

/* The search loop again on a core with one branch pipe: its exit test falls
 * through and its back edge is taken.  Two not-taken branches take two
 * cycles of that pipe; a taken one is bounded by taken branches per cycle
 * and takes an ALU issue slot instead, so the iteration takes one cycle. */
static void test_taken_branch_pipes(void)
{
    static const uint8_t header[] = {0x38, 0x14, 0x0f, 0x74, 0x0a}; /* cmp %dl,(%rdi,%rcx,1); je */
    static const uint8_t latch[] = {0x48, 0x83, 0xc1, 0x01, 0x48, 0x39,
                                    0xce, 0x75, 0xf1}; /* add $1,%rcx; cmp; jne */
    mt_machine m = machine;
    m.pipes[MT_IC_BRANCH] = 1u << MT_PIPE_ALU0;
    for (int w = 0; w < MT_W_COUNT; w++)
        m.timing[MT_IC_BRANCH][w].rthroughput = 1;
    m.taken_per_cycle = 1;
    mt_error err;
    mt_predictor *p = mt_predictor_new(&m, &err);
    mt_code_range not_taken[2] = {{header, sizeof header, 0x1000, false, MT_PROBE_NONE},
                                  {latch, sizeof latch, 0x1005, false, MT_PROBE_NONE}};
    mt_code_range taken[2] = {{header, sizeof header, 0x1000, false, MT_PROBE_NONE},
                              {latch, sizeof latch, 0x1005, true, MT_PROBE_NONE}};
    mt_block_cost a, b;
    mt_predict_throughput(p, not_taken, 2, &a);
    mt_predict_throughput(p, taken, 2, &b);
    CHECK(near(a.bounds[MT_BOUND_PIPES], 2) && near(b.cycles, 1) && b.bounds[MT_BOUND_PIPES] <= 1.01,
          "one branch pipe: two not-taken branches %.2f cycles, not-taken + taken %.2f (%s)",
          a.bounds[MT_BOUND_PIPES], b.cycles, mt_bound_name(b.limit));
    mt_predictor_free(p);
}

/* A loop body fetches one aligned window per cycle: the same 9-byte loop
 * takes one cycle inside a 64-byte window and two across a boundary. */
static void test_fetch_windows(void)
{
    static const uint8_t latch[] = {0x48, 0x83, 0xc1, 0x01, 0x48, 0x39,
                                    0xce, 0x75, 0xf1}; /* add $1,%rcx; cmp; jne */
    mt_machine m = machine;
    m.fetch_window = 64;
    mt_error err;
    mt_predictor *p = mt_predictor_new(&m, &err);
    mt_code_range inside = {latch, sizeof latch, 0x1000, true, MT_PROBE_NONE};
    mt_code_range across = {latch, sizeof latch, 0x103c, true, MT_PROBE_NONE};
    mt_block_cost a, b;
    mt_predict_throughput(p, &inside, 1, &a);
    mt_predict_throughput(p, &across, 1, &b);
    CHECK(near(a.bounds[MT_BOUND_FETCH], 1) && near(b.bounds[MT_BOUND_FETCH], 2) &&
              near(b.cycles, 2) && b.limit == MT_BOUND_FETCH,
          "9-byte loop: %.0f fetch window inside, %.0f across a 64-byte boundary (%.2f cycles, %s)",
          a.bounds[MT_BOUND_FETCH], b.bounds[MT_BOUND_FETCH], b.cycles, mt_bound_name(b.limit));
    mt_predictor_free(p);
}

/* The loop front end without a fetch window (Zen 5's op cache, measured
 * with loops of xors at every offset): a line holds 12 ops of a loop at the
 * dispatch width and costs 3 cycles beyond; a small loop crossing a line
 * whose first line holds more than 6 ops takes a cycle per line; crossing is
 * free otherwise. */
static void test_loop_front_end(void)
{
    mt_machine m = machine;
    m.dispatch_width = 6.96; /* Zen 5's: the host's may be narrower (a Skylake's 4) */
    m.fetch_window = 0;
    m.loop_split_ops = 6;
    m.loop_line_ops = 12;
    m.loop_overfull_cycles = 3;
    static const struct {
        unsigned ops[4];
        size_t n;
        double cycles;
    } cases[] = {
        {{12}, 1, 1},       {{13}, 1, 3},        {{6, 3}, 2, 1},      {{7, 2}, 2, 2},
        {{8, 5}, 2, 1},     {{10, 2}, 2, 2},     {{13, 3}, 2, 4},     {{6, 13}, 2, 3},
        {{5, 13}, 2, 1},    {{1, 5, 1}, 3, 2},   {{7, 5, 1}, 3, 3},   {{4, 16, 1}, 3, 4},
        {{13, 5, 1}, 3, 5}, {{7, 5, 7}, 3, 2},
    };
    for (size_t i = 0; i < MT_ARRAY_LEN(cases); i++) {
        double got = mt_front_end_cycles(&m, cases[i].ops, cases[i].n);
        CHECK(near(got, cases[i].cycles), "front end of a loop with ops %u/%u/%u per line: %.0f "
              "cycles per iteration, %.0f expected", cases[i].ops[0], cases[i].n > 1 ? cases[i].ops[1] : 0,
              cases[i].n > 2 ? cases[i].ops[2] : 0, got, cases[i].cycles);
    }
    unsigned one[] = {20};
    mt_machine none = m;
    none.loop_split_ops = none.loop_line_ops = none.loop_overfull_cycles = 0;
    CHECK(mt_front_end_cycles(&none, one, 1) == 0, "no measured limits: no front-end bound");

    /* stencil_f32, gcc -O2: 10 instructions, 39 bytes; at byte 32 of a line
     * 8 of its 9 ops are in the first line (2.03 cycles measured), at byte 0
     * or 40 it runs at the dispatch width (1.24-1.27) */
    static const uint8_t stencil[] = {
        0xf3, 0x0f, 0x58, 0xd1, 0x0f, 0x28, 0xc2, 0x0f, 0x28, 0xd1, 0xf3, 0x0f, 0x10,
        0x4c, 0x86, 0x08, 0xf3, 0x0f, 0x58, 0xc1, 0xf3, 0x0f, 0x59, 0xc3, 0xf3, 0x0f,
        0x11, 0x44, 0x87, 0x04, 0x48, 0x83, 0xc0, 0x01, 0x48, 0x39, 0xc2, 0x75, 0xd9};
    mt_error err;
    mt_predictor *p = mt_predictor_new(&m, &err);
    double at[3];
    static const uint64_t where[3] = {0x1000, 0x1020, 0x1028};
    for (int i = 0; i < 3; i++) {
        mt_code_range r = {stencil, sizeof stencil, where[i], true, MT_PROBE_NONE};
        mt_block_cost c;
        mt_predict_throughput(p, &r, 1, &c);
        at[i] = c.bounds[MT_BOUND_FETCH];
        if (i == 1)
            CHECK(near(c.cycles, 2) && c.limit == MT_BOUND_FETCH,
                  "stencil loop at byte 32: %.2f cycles (%s), 2 expected", c.cycles,
                  mt_bound_name(c.limit));
    }
    CHECK(near(at[0], 1) && near(at[1], 2) && near(at[2], 1),
          "stencil loop's front end at bytes 0, 32, 40 of a line: %.0f, %.0f, %.0f cycles", at[0],
          at[1], at[2]);
    /* the same loop entered in its middle (the header is not its lowest
     * block) is not a simple loop: no op-cache bound */
    mt_code_range two[2] = {{stencil + 16, sizeof stencil - 16, 0x1030, true, MT_PROBE_NONE},
                            {stencil, 16, 0x1020, false, MT_PROBE_NONE}};
    mt_block_cost c2;
    mt_predict_throughput(p, two, 2, &c2);
    CHECK(c2.bounds[MT_BOUND_FETCH] == 0, "a loop entered in its middle: no front-end bound (%.0f)",
          c2.bounds[MT_BOUND_FETCH]);
    mt_predictor_free(p);
}

/* Pass 1's counter on a loop block: `incq %gs:slot` every iteration makes a
 * chain through memory (load, add, store, forwarded to the next load), so
 * the loop cannot run faster than forwarding + add; a self-loop counting in
 * a register adds only the register's one-cycle chain. */
static void test_probe_chain(void)
{
    static const uint8_t latch[] = {0x48, 0x83, 0xc1, 0x01, 0x48, 0x39,
                                    0xce, 0x75, 0xf1}; /* add $1,%rcx; cmp; jne */
    mt_code_range plain = {latch, sizeof latch, 0x1000, true, MT_PROBE_NONE};
    mt_code_range memory = {latch, sizeof latch, 0x1000, true, MT_PROBE_MEMORY};
    mt_code_range reg = {latch, sizeof latch, 0x1000, true, MT_PROBE_REGISTER};
    double a = mt_predict_recurrence(predictor, &plain, 1, NULL);
    double b = mt_predict_recurrence(predictor, &memory, 1, NULL);
    double c = mt_predict_recurrence(predictor, &reg, 1, NULL);
    double chain = lat(MT_IC_STLF) + lat(MT_IC_ALU);
    CHECK(near(a, lat(MT_IC_ALU)) && near(b, chain) && near(c, lat(MT_IC_ALU)),
          "loop recurrence %.2f; with a counter in memory %.2f (forwarding + add %.2f); in a "
          "register %.2f", a, b, chain, c);
}

/* Bypass delays: a result of class C reaches an instruction of another
 * class bypass[C] cycles late (Zen 5's FP add: 2 cycles to an FP add, 3 to
 * anything else).  Horner's rule alternates multiply and add, so each
 * iteration pays the delay once; a chain of adds through renamed copies
 * never does; the add's result stored pays it before the store. */
static void test_bypass_delay(void)
{
    /* mulsd %xmm1,%xmm0; addsd (%rdi),%xmm0; add $8,%rdi; cmp %rax,%rdi; jne */
    static const uint8_t horner[] = {0xf2, 0x0f, 0x59, 0xc1, 0xf2, 0x0f, 0x58, 0x07, 0x48,
                                     0x83, 0xc7, 0x08, 0x48, 0x39, 0xc7, 0x75, 0xed};
    /* addsd %xmm1,%xmm0; movapd %xmm0,%xmm2; addsd %xmm1,%xmm2; movapd %xmm2,%xmm0 */
    static const uint8_t adds[] = {0xf2, 0x0f, 0x58, 0xc1, 0x66, 0x0f, 0x28, 0xd0,
                                   0xf2, 0x0f, 0x58, 0xd1, 0x66, 0x0f, 0x28, 0xc2};
    /* addsd %xmm1,%xmm0; movsd %xmm0,(%rdi) */
    static const uint8_t add_store[] = {0xf2, 0x0f, 0x58, 0xc1, 0xf2, 0x0f, 0x11, 0x07};
    mt_machine m = machine;
    memset(m.bypass, 0, sizeof m.bypass);
    mt_error err;
    mt_predictor *none = mt_predictor_new(&m, &err);
    m.bypass[MT_IC_FADD] = 1;
    mt_predictor *p = mt_predictor_new(&m, &err);
    mt_block_context loop = {.steady_state = true, .taken_exit = true}, once = {0};
    mt_block_cost h, h0, a, st;
    mt_predict_block(p, horner, sizeof horner, 0x1000, &loop, &h);
    mt_predict_block(none, horner, sizeof horner, 0x1000, &loop, &h0);
    mt_predict_block(p, adds, sizeof adds, 0x1000, &loop, &a);
    mt_predict_block(p, add_store, sizeof add_store, 0x1000, &once, &st);
    double mul_add = lat(MT_IC_FMUL) + lat(MT_IC_FADD);
    CHECK(near(h.bounds[MT_BOUND_RECURRENCE], mul_add + 1) &&
              near(h0.bounds[MT_BOUND_RECURRENCE], mul_add),
          "Horner (mulsd -> addsd): recurrence %.2f with a 1-cycle FP-add bypass, %.2f + 1 "
          "expected", h.bounds[MT_BOUND_RECURRENCE], mul_add);
    CHECK(near(a.bounds[MT_BOUND_RECURRENCE], 2 * lat(MT_IC_FADD)),
          "two FP adds through renamed copies: recurrence %.2f, no bypass (%.2f)",
          a.bounds[MT_BOUND_RECURRENCE], 2 * lat(MT_IC_FADD));
    CHECK(near(st.bounds[MT_BOUND_LATENCY], lat(MT_IC_FADD) + 1),
          "FP add then a store of its result: critical path %.2f (add + bypass %.2f)",
          st.bounds[MT_BOUND_LATENCY], lat(MT_IC_FADD) + 1);
    mt_predictor_free(p);
    mt_predictor_free(none);
}

/* Chains through memory into vector registers: forwarding to a vector load
 * takes vstlf (Zen 5: 9 cycles at every width) where a GPR is renamed (0.5).
 * `xor %eax,%eax` makes %rax a known 0 and `add $16` moves it, so the store
 * to (%rdx,%rax) and the next iteration's load from there are one address
 * even though the loop clears the index each time (matmul's inner loops). */
static void test_vector_forwarding(void)
{
    /* xor %eax,%eax; movups (%rdx,%rax,1),%xmm0; addps %xmm1,%xmm0;
     * movups %xmm0,(%rdx,%rax,1); add $0x10,%rax */
    static const uint8_t code[] = {0x31, 0xc0, 0x0f, 0x10, 0x04, 0x02, 0x0f, 0x58, 0xc1,
                                   0x0f, 0x11, 0x04, 0x02, 0x48, 0x83, 0xc0, 0x10};
    /* the same with mov $0,%eax (a constant too) and a GPR: mov (%rdx,%rax,1),%rcx;
     * add $1,%rcx; mov %rcx,(%rdx,%rax,1) */
    static const uint8_t gpr[] = {0xb8, 0x00, 0x00, 0x00, 0x00, 0x48, 0x8b, 0x0c, 0x02, 0x48,
                                  0x83, 0xc1, 0x01, 0x48, 0x89, 0x0c, 0x02};
    mt_machine m = machine;
    for (int w = 0; w < MT_W_COUNT; w++)
        m.timing[MT_IC_VSTLF][w].latency = 9;
    m.bypass[MT_IC_FADD] = 1;
    mt_error err;
    mt_predictor *p = mt_predictor_new(&m, &err);
    mt_block_context loop = {.steady_state = true};
    mt_block_cost v, g;
    mt_predict_block(p, code, sizeof code, 0x1000, &loop, &v);
    mt_predict_block(p, gpr, sizeof gpr, 0x1000, &loop, &g);
    double want = 9 + m.timing[MT_IC_FADD][MT_W128].latency + 1;
    CHECK(near(v.bounds[MT_BOUND_RECURRENCE], want),
          "c[j] += x through memory, index cleared by xor every iteration: recurrence %.2f = "
          "vector forwarding 9 + add + its bypass (%.2f)", v.bounds[MT_BOUND_RECURRENCE], want);
    CHECK(near(g.bounds[MT_BOUND_RECURRENCE], lat(MT_IC_STLF) + lat(MT_IC_ALU)),
          "the same in a GPR, index set by mov $0: recurrence %.2f = GPR forwarding + add %.2f",
          g.bounds[MT_BOUND_RECURRENCE], lat(MT_IC_STLF) + lat(MT_IC_ALU));
    mt_predictor_free(p);
}

/* ALU-bound loops (Zen 5, measured with loops of k adds, a counter and
 * cmp/jne): the taken back edge costs taken_alu_cycles of ALU time, not
 * one add's, and a store of a GPR takes an ALU slot for its data where a
 * vector store does not. */
static void test_loop_alu(void)
{
    /* add $1 to r8..r13; mov %r14,0x40(%rdi) | movq %xmm0,0x40(%rdi);
     * add $1,%rax; cmp %rcx,%rax; jne */
    static const uint8_t adds[] = {0x49, 0x83, 0xc0, 0x01, 0x49, 0x83, 0xc1, 0x01, 0x49, 0x83,
                                   0xc2, 0x01, 0x49, 0x83, 0xc3, 0x01, 0x49, 0x83, 0xc4, 0x01,
                                   0x49, 0x83, 0xc5, 0x01};
    static const uint8_t gst[] = {0x4c, 0x89, 0x77, 0x40};
    static const uint8_t vst[] = {0x66, 0x0f, 0xd6, 0x47, 0x40};
    static const uint8_t ctl[] = {0x48, 0x83, 0xc0, 0x01, 0x48, 0x39, 0xc8, 0x75, 0xe0};
    uint8_t plain[64], with_g[64], with_v[64];
    size_t np = 0, ng = 0, nv = 0;
    memcpy(plain, adds, sizeof adds), np = sizeof adds;
    memcpy(plain + np, ctl, sizeof ctl), np += sizeof ctl;
    memcpy(with_g, adds, sizeof adds), ng = sizeof adds;
    memcpy(with_g + ng, gst, sizeof gst), ng += sizeof gst;
    memcpy(with_g + ng, ctl, sizeof ctl), ng += sizeof ctl;
    memcpy(with_v, adds, sizeof adds), nv = sizeof adds;
    memcpy(with_v + nv, vst, sizeof vst), nv += sizeof vst;
    memcpy(with_v + nv, ctl, sizeof ctl), nv += sizeof ctl;
    mt_machine m = machine;
    m.taken_alu_cycles = 0;
    m.stores_take_alu = false;
    mt_error err;
    mt_predictor *before = mt_predictor_new(&m, &err);
    m.taken_alu_cycles = 0.31;
    m.stores_take_alu = true;
    mt_predictor *p = mt_predictor_new(&m, &err);
    mt_block_context loop = {.steady_state = true, .taken_exit = true};
    mt_block_cost a0, a, g, v;
    mt_predict_block(before, plain, np, 0x1000, &loop, &a0);
    mt_predict_block(p, plain, np, 0x1000, &loop, &a);
    mt_predict_block(p, with_g, ng, 0x1000, &loop, &g);
    mt_predict_block(p, with_v, nv, 0x1000, &loop, &v);
    double add = rtp(MT_IC_ALU);
    CHECK(near(a0.bounds[MT_BOUND_PIPES], 8 * add) && near(a.bounds[MT_BOUND_PIPES], 7 * add + 0.31),
          "6 adds + counter + cmp/jne: ALU bound %.3f with the branch at an add's (%.3f), %.3f "
          "with its calibrated 0.31 (%.3f expected)", a0.bounds[MT_BOUND_PIPES], add,
          a.bounds[MT_BOUND_PIPES], 7 * add + 0.31);
    CHECK(near(g.bounds[MT_BOUND_PIPES], a.bounds[MT_BOUND_PIPES] + add) &&
              near(v.bounds[MT_BOUND_PIPES], a.bounds[MT_BOUND_PIPES]),
          "a GPR store adds an ALU slot (%.3f -> %.3f), a vector store none (%.3f)",
          a.bounds[MT_BOUND_PIPES], g.bounds[MT_BOUND_PIPES], v.bounds[MT_BOUND_PIPES]);
    mt_predictor_free(p);
    mt_predictor_free(before);
}

/* A divide in a loop: the taken back edge keeps the divider busy for the
 * calibrated divide_loop_cycles more (the Xeon family 6 model 85: a loop of
 * one `div` an iteration 7.98 cycles, divides back to back 6.02). */
/* A store's address pipes, decided by the two mixes of loads and a store:
 * on Zen 3's pipes (three AGUs for loads, vector loads on two of them, a
 * store on the first), the AMD EPYC Zen 4's measurements (1.095 and 1.47
 * cycles a store) pick any of the loads' AGUs, a core storing on an AGU of
 * its own (1.0 and 1.0: Intel's store-address port) its own, a store that
 * waits for the vector loads' pipe (1.5 and 1.33) the first; and gcc's
 * scalar saxpy loop (two vector loads and a store an iteration, 1.03 cycles
 * measured on the Zen 4) is pipe-bound at 1.5 cycles only on the first. */
static void test_store_pipes(void)
{
    mt_machine m;
    mt_machine_shipped(&m, 25, 1);
    mt_store_layouts zen4, own, first;
    mt_store_pipes(&m, 1.095, 1.47, &zen4);
    mt_store_pipes(&m, 1.0, 1.0, &own);
    mt_store_pipes(&m, 1.5, 1.33, &first);
    CHECK(zen4.kept == 1 && own.kept == 2 && first.kept == 0 &&
              zen4.pipes[1] == m.pipes[MT_IC_LOAD] && near(zen4.vloads_store[0], 1.5) &&
              near(zen4.vloads_store[1], 1.0) && near(zen4.loads_store[1], 4.0 / 3) &&
              near(zen4.loads_store[2], 1.0),
          "store pipes kept: %d (Zen 4's mixes), %d (a store pipe of its own), %d (the first); "
          "2 vector loads + a store predicted %.2f / %.2f / %.2f, 3 loads + a store %.2f / %.2f / "
          "%.2f", zen4.kept, own.kept, first.kept, zen4.vloads_store[0], zen4.vloads_store[1],
          zen4.vloads_store[2], zen4.loads_store[0], zen4.loads_store[1], zen4.loads_store[2]);
    static const uint8_t saxpy[] = {0xf3, 0x0f, 0x10, 0x0c, 0x06, 0xf3, 0x0f, 0x59, 0xc8, 0xf3,
                                    0x0f, 0x58, 0x0c, 0x07, 0xf3, 0x0f, 0x11, 0x0c, 0x07, 0x48,
                                    0x83, 0xc0, 0x04, 0x48, 0x39, 0xd0, 0x75, 0xe4};
    mt_block_context loop = {.steady_state = true, .taken_exit = true};
    mt_block_cost c[2];
    for (int k = 0; k < 2; k++) {
        m.pipes[MT_IC_STORE] = zen4.pipes[k];
        mt_error err;
        mt_predictor *p = mt_predictor_new(&m, &err);
        mt_predict_block(p, saxpy, sizeof saxpy, 0x1000, &loop, &c[k]);
        mt_predictor_free(p);
    }
    CHECK(near(c[0].bounds[MT_BOUND_PIPES], 1.5) && near(c[1].bounds[MT_BOUND_PIPES], 1.0),
          "saxpy's loop: pipes bound %.3f with the store on the loads' first AGU, %.3f on any of "
          "them", c[0].bounds[MT_BOUND_PIPES], c[1].bounds[MT_BOUND_PIPES]);
}

/* A call and its return where the pair takes longer than two taken
 * branches (4.1 cycles on the AMD EPYC Zen 4, family 25 model 17, taken
 * branches one a cycle): each charged half the pair in the taken-branch
 * bound; nothing more on a core without the rule. */
static void test_call_ret(void)
{
    static const uint8_t call[] = {0xe8, 0x00, 0x00, 0x00, 0x00}, ret[] = {0xc3},
                         jmp[] = {0xeb, 0x00};
    mt_machine m = machine;
    m.taken_per_cycle = 1;
    mt_block_context straight = {.steady_state = false};
    mt_block_cost c[2][3];
    for (int k = 0; k < 2; k++) {
        m.call_ret_cycles = k ? 4.1 : 0;
        mt_error err;
        mt_predictor *p = mt_predictor_new(&m, &err);
        mt_predict_block(p, call, sizeof call, 0x1000, &straight, &c[k][0]);
        mt_predict_block(p, ret, sizeof ret, 0x1000, &straight, &c[k][1]);
        mt_predict_block(p, jmp, sizeof jmp, 0x1000, &straight, &c[k][2]);
        mt_predictor_free(p);
    }
    CHECK(near(c[0][0].bounds[MT_BOUND_TAKEN], 1) && near(c[0][1].bounds[MT_BOUND_TAKEN], 1) &&
              near(c[1][0].bounds[MT_BOUND_TAKEN], 2.05) &&
              near(c[1][1].bounds[MT_BOUND_TAKEN], 2.05) &&
              near(c[1][2].bounds[MT_BOUND_TAKEN], 1),
          "taken-branch bound of a call, a return, a jump: %.2f %.2f %.2f without the rule, %.2f "
          "%.2f %.2f with a pair at 4.1 cycles", c[0][0].bounds[MT_BOUND_TAKEN],
          c[0][1].bounds[MT_BOUND_TAKEN], c[0][2].bounds[MT_BOUND_TAKEN],
          c[1][0].bounds[MT_BOUND_TAKEN], c[1][1].bounds[MT_BOUND_TAKEN],
          c[1][2].bounds[MT_BOUND_TAKEN]);
}

static void test_divide_loop(void)
{
    /* mov %r9d,%eax; xor %edx,%edx; div %r8d; dec %rcx; jnz */
    static const uint8_t loop[] = {0x44, 0x89, 0xc8, 0x31, 0xd2, 0x41, 0xf7, 0xf0,
                                   0x48, 0xff, 0xc9, 0x75, 0xf3};
    static const uint8_t two[] = {0x44, 0x89, 0xc8, 0x31, 0xd2, 0x41, 0xf7, 0xf0, 0x44, 0x89,
                                  0xc8, 0x31, 0xd2, 0x41, 0xf7, 0xf0, 0x48, 0xff, 0xc9, 0x75, 0xee};
    mt_machine m = machine;
    for (int w = 0; w < MT_W_COUNT; w++)
        m.timing[MT_IC_DIV32][w].rthroughput = 6;
    m.divide_loop_cycles = 0;
    mt_error err;
    mt_predictor *without = mt_predictor_new(&m, &err);
    m.divide_loop_cycles = 1.5;
    mt_predictor *with = mt_predictor_new(&m, &err);
    mt_block_context ctx = {.steady_state = true, .taken_exit = true};
    mt_block_cost a, b, c;
    mt_predict_block(without, loop, sizeof loop, 0x1000, &ctx, &a);
    mt_predict_block(with, loop, sizeof loop, 0x1000, &ctx, &b);
    mt_predict_block(with, two, sizeof two, 0x1000, &ctx, &c);
    CHECK(near(a.bounds[MT_BOUND_PIPES], 6) && near(b.bounds[MT_BOUND_PIPES], 7.5) &&
              near(c.bounds[MT_BOUND_PIPES], 13.5),
          "a loop of one divide: the divider bound %.2f without the rule, %.2f with 1.5 cycles a "
          "taken branch (7.5 expected); two divides an iteration %.2f (13.5: once an iteration)",
          a.bounds[MT_BOUND_PIPES], b.bounds[MT_BOUND_PIPES], c.bounds[MT_BOUND_PIPES]);
    mt_predictor_free(with);
    mt_predictor_free(without);
}

/* A jump on a 32-byte boundary: the calibrated jcc_boundary_cycles added
 * to the loop's front end once for each jump (with the compare fused to
 * it) that crosses a boundary or ends on one; none when the pair starts on
 * the boundary, none when dec and jnz do not fuse and the jnz alone is
 * inside a window, none without the rule (the Xeon family 6 model 85: a
 * loop of four adds and dec/jnz 2.4-2.75 cycles an iteration, 4.0-6.2
 * with the pair on a boundary). */
static void test_jcc_boundary(void)
{
    /* add $1,%rax; dec %rcx; jnz back to the add (9 bytes) */
    static const uint8_t loop[] = {0x48, 0x83, 0xc0, 0x01, 0x48, 0xff, 0xc9, 0x75, 0xf7};
    mt_machine m = machine;
    m.fuse_alu_jcc = true;
    m.jcc_boundary_cycles = 0;
    mt_error err;
    mt_predictor *without = mt_predictor_new(&m, &err);
    m.jcc_boundary_cycles = 1.5;
    mt_predictor *with = mt_predictor_new(&m, &err);
    m.fuse_alu_jcc = false;
    mt_predictor *unfused = mt_predictor_new(&m, &err);
    mt_block_context ctx = {.steady_state = true, .taken_exit = true};
    mt_block_cost none, across, on_end, starts_on, apart, apart_end;
    mt_predict_block(without, loop, sizeof loop, 0x1000 + 27, &ctx, &none);
    mt_predict_block(with, loop, sizeof loop, 0x1000 + 27, &ctx, &across);  /* dec/jnz 31..35 */
    mt_predict_block(with, loop, sizeof loop, 0x1000 + 23, &ctx, &on_end);  /* dec/jnz 27..31 */
    mt_predict_block(with, loop, sizeof loop, 0x1000 + 28, &ctx, &starts_on); /* 32..36 */
    mt_predict_block(unfused, loop, sizeof loop, 0x1000 + 27, &ctx, &apart); /* jnz 34..35 */
    mt_predict_block(unfused, loop, sizeof loop, 0x1000 + 23, &ctx, &apart_end); /* jnz 30..31 */
    double f0 = none.bounds[MT_BOUND_FETCH];
    CHECK(near(across.bounds[MT_BOUND_FETCH], f0 + 1.5) && near(on_end.bounds[MT_BOUND_FETCH], f0 + 1.5) &&
              near(starts_on.bounds[MT_BOUND_FETCH], f0) && near(apart.bounds[MT_BOUND_FETCH], f0) &&
              near(apart_end.bounds[MT_BOUND_FETCH], f0 + 1.5),
          "a jump on a 32-byte boundary: front end %.2f without the rule; with 1.5 a jump: "
          "fused pair across %.2f, ending on it %.2f, starting on it %.2f; unfused jnz inside a "
          "window %.2f, ending on the boundary %.2f",
          f0, across.bounds[MT_BOUND_FETCH], on_end.bounds[MT_BOUND_FETCH],
          starts_on.bounds[MT_BOUND_FETCH], apart.bounds[MT_BOUND_FETCH],
          apart_end.bounds[MT_BOUND_FETCH]);
    mt_predictor_free(unfused);
    mt_predictor_free(with);
    mt_predictor_free(without);
}

/* Rename-time rules a calibration may find (Intel's Golden Cove family;
 * the figures here are made up, each rule checked against its own): an
 * immediate add folded when its flags are dead, a shift after it waiting
 * for the constant, a cmov's data latency, dec + jcc fused, and a small
 * loop's cycles from the op-count table. */
static void test_rename_rules(void)
{
    static const uint8_t adds[] = {0x48, 0x83, 0xc0, 0x08, 0x48, 0x83, 0xc0, 0x08, 0x48, 0x83,
                                   0xc0, 0x08, 0x48, 0x83, 0xc0, 0x08}; /* add $8,%rax x 4 */
    static const uint8_t add_shl[] = {0x48, 0x83, 0xc0, 0x08, 0x48, 0xc1, 0xe0, 0x02}; /* add $8; shl $2 */
    static const uint8_t add_setz[] = {0x48, 0x83, 0xc0, 0x01, 0x0f, 0x94, 0xc3}; /* add $1; setz %bl */
    static const uint8_t big[] = {0x48, 0x05, 0x00, 0x04, 0x00, 0x00}; /* add $1024,%rax */
    static const uint8_t cmov[] = {0x48, 0x85, 0xdb, 0x48, 0x0f, 0x45, 0xc2}; /* test %rbx,%rbx; cmovne %rdx,%rax */
    static const uint8_t dec_jne[] = {0x48, 0xff, 0xc9, 0x75, 0xfb}; /* dec %rcx; jne */
    uint8_t xors[64];
    size_t nx = 0;
    for (int i = 0; i < 7; i++) /* xor %r8d,%r8d x 7, dec %rcx, test %rcx,%rcx, jne: 9 ops */
        xors[nx++] = 0x45, xors[nx++] = 0x31, xors[nx++] = 0xc0;
    static const uint8_t ctl[] = {0x48, 0xff, 0xc9, 0x48, 0x85, 0xc9, 0x75, 0xe9};
    memcpy(xors + nx, ctl, sizeof ctl), nx += sizeof ctl;

    mt_machine m = machine;
    m.fold_latency = m.fold_shift_cycles = m.cmov_data_cycles = 0;
    m.fuse_alu_jcc = false;
    memset(m.loop_ops_cycles, 0, sizeof m.loop_ops_cycles);
    mt_error err;
    mt_predictor *off = mt_predictor_new(&m, &err);
    m.fold_latency = 0.25;
    m.fold_shift_cycles = 1.5;
    m.cmov_data_cycles = 1.75;
    m.fuse_alu_jcc = true;
    m.loop_ops_cycles[9] = 2.5;
    mt_predictor *on = mt_predictor_new(&m, &err);
    mt_block_context once = {0}, loop = {.steady_state = true, .taken_exit = true};
    mt_block_cost a, b;
    mt_predict_block(off, adds, sizeof adds, 0x1000, &once, &a);
    mt_predict_block(on, adds, sizeof adds, 0x1000, &once, &b);
    CHECK(near(a.bounds[MT_BOUND_LATENCY], 4 * lat(MT_IC_ALU)) &&
              near(b.bounds[MT_BOUND_LATENCY], 4 * 0.25) && b.bounds[MT_BOUND_PIPES] < 0.01 &&
              near(b.bounds[MT_BOUND_DISPATCH], 4 / m.dispatch_width),
          "4 dependent add $8: %.2f cycles, folded %.2f (4 x 0.25) on no pipe (%.2f) but 4 "
          "dispatch slots (%.2f)", a.bounds[MT_BOUND_LATENCY], b.bounds[MT_BOUND_LATENCY],
          b.bounds[MT_BOUND_PIPES], b.bounds[MT_BOUND_DISPATCH]);
    mt_predict_block(on, add_shl, sizeof add_shl, 0x1000, &loop, &b);
    CHECK(near(b.bounds[MT_BOUND_RECURRENCE], 0.25 + 1.5 + lat(MT_IC_SHIFT)),
          "add $8 then shl: the shift waits for the folded constant, %.2f a round (%.2f expected)",
          b.bounds[MT_BOUND_RECURRENCE], 0.25 + 1.5 + lat(MT_IC_SHIFT));
    mt_predict_block(on, add_setz, sizeof add_setz, 0x1000, &loop, &b);
    mt_predict_block(on, big, sizeof big, 0x1000, &loop, &a);
    CHECK(near(b.bounds[MT_BOUND_RECURRENCE], lat(MT_IC_ALU)) &&
              near(a.bounds[MT_BOUND_RECURRENCE], lat(MT_IC_ALU)),
          "not folded: an add whose flags a setz reads (%.2f), an add of 1024 (%.2f)",
          b.bounds[MT_BOUND_RECURRENCE], a.bounds[MT_BOUND_RECURRENCE]);
    mt_predict_block(off, cmov, sizeof cmov, 0x1000, &loop, &a);
    mt_predict_block(on, cmov, sizeof cmov, 0x1000, &loop, &b);
    CHECK(near(a.bounds[MT_BOUND_RECURRENCE], lat(MT_IC_ALU)) && near(b.bounds[MT_BOUND_RECURRENCE], 1.75),
          "a chain through cmov's data input: %.2f cycles (an ALU's), %.2f with cmov_data_cycles 1.75",
          a.bounds[MT_BOUND_RECURRENCE], b.bounds[MT_BOUND_RECURRENCE]);
    mt_predict_block(off, dec_jne, sizeof dec_jne, 0x1000, &loop, &a);
    mt_predict_block(on, dec_jne, sizeof dec_jne, 0x1000, &loop, &b);
    CHECK(near(a.bounds[MT_BOUND_DISPATCH], 2 / m.dispatch_width) &&
              near(b.bounds[MT_BOUND_DISPATCH], 1 / m.dispatch_width),
          "dec + jne: 2 ops, 1 fused (%.3f, %.3f cycles of dispatch)", a.bounds[MT_BOUND_DISPATCH],
          b.bounds[MT_BOUND_DISPATCH]);
    mt_predict_block(off, xors, nx, 0x1000, &loop, &a);
    mt_predict_block(on, xors, nx, 0x1000, &loop, &b);
    CHECK(b.limit == MT_BOUND_FETCH && near(b.cycles, 2.5) && a.cycles < 2.4,
          "a loop of 9 ops: %.2f cycles by the small-loop table (2.5), %.2f without one", b.cycles,
          a.cycles);
    mt_predictor_free(on);
    mt_predictor_free(off);
}

/* Hand-made costs for a hand-built procedure: every block `cycles`. */
static void make_costs(mt_program_costs *c, const mt_procedure *proc, const double *cycles)
{
    memset(c, 0, sizeof *c);
    c->nprocs = 1;
    c->first = mt_xcalloc(2, sizeof *c->first);
    c->first[1] = proc->nblocks;
    c->costs = mt_xcalloc(proc->nblocks, sizeof *c->costs);
    for (uint32_t b = 0; b < proc->nblocks; b++)
        c->costs[b].cycles = cycles[b];
    c->loop_first = mt_xcalloc(2, sizeof *c->loop_first);
    c->loop_first[1] = proc->nloops;
    c->loops = mt_xcalloc(proc->nloops + 1, sizeof *c->loops);
    c->exit_trips = 112;
    c->exit_cycles = 24;
    c->chain_loads = 62;
}

/* Loop exits (Zen 5: loops of more than about 112 iterations per entry
 * mispredict their exit, 24-26 cycles; a recurrence-bound loop's backlog
 * hides it): charged per entry, with the trip count from pass 1's counts. */
static void test_loop_exits(void)
{
    test_program t;
    memset(&t, 0, sizeof t);
    static const test_edge e[] = {{0, 1}, {1, 1}, {1, 2}, {2, MT_NONE}};
    build_procedure(&t.procs[0], "f", 3, e, 4);
    analyze_procedure(&t.procs[0]);
    t.prog.procs = t.procs;
    t.prog.nprocs = 1;
    mt_program_costs c;
    make_costs(&c, &t.procs[0], (const double[]){5, 1, 2});
    uint64_t long_loop[] = {10, 10240, 10}, short_loop[] = {10, 1000, 10};
    double base = 10 * 5 + 10240 + 10 * 2;
    double got = mt_predicted_cycles_proc(&t.prog, &c, long_loop, 0);
    double loop = mt_predicted_cycles_loop(&t.prog, &c, long_loop, 0, 0, NULL);
    CHECK(t.procs[0].nloops == 1 && near(got, base + 10 * 24) && near(loop, 10240 + 10 * 24),
          "1024 iterations per entry, 10 entries: %.0f cycles, blocks %.0f + 10 exits x 24 (loop %.0f)",
          got, base, loop);
    got = mt_predicted_cycles_proc(&t.prog, &c, short_loop, 0);
    CHECK(near(got, 10 * 5 + 1000 + 10 * 2), "100 iterations per entry: no exit charged (%.0f)", got);
    c.loops[0].slack = 0.01;
    got = mt_predicted_cycles_proc(&t.prog, &c, long_loop, 0);
    CHECK(near(got, base + 10 * (24 - 1024 * 0.01)),
          "a recurrence 0.01 cycles longer than the throughput hides 10 of the 24 (%.0f)", got);
    c.loops[0].slack = 0;
    c.exit_cycles = 0;
    got = mt_predicted_cycles_proc(&t.prog, &c, long_loop, 0);
    CHECK(near(got, base), "no exit figure (a core where it was not measured): none charged (%.0f)", got);
    CHECK(mt_loop_exit_cycles(&c, 1e6, 0) == 0, "and the exit rule gives none");
    mt_program_costs_free(&c);
    free_program(&t);
}

/* A chain through memory across nested loops (matmul's c[i][j] loaded,
 * added to and stored every k): the outer loop's recurrence per iteration,
 * applied with counts, where it outlasts the blocks' work; the core runs
 * chain_loads / (loads per iteration) iterations ahead into the next
 * entry's independent chain (calibrated: 12.0 cycles a step alone, 6.09
 * with 16-step rows of 4 loads: 62 loads). */
static void test_memory_chain(void)
{
    mt_program_costs cal = {.chain_loads = 62};
    CHECK(fabs(mt_chain_cycles(&cal, 12, 4, 16) - 6.09) < 0.02,
          "the calibration's own case: 12-cycle chain, 4 loads a step, 16 steps an entry: %.2f "
          "cycles a step (6.09 measured)", mt_chain_cycles(&cal, 12, 4, 16));
    test_program t;
    memset(&t, 0, sizeof t);
    /* 0 -> 1 (outer header) -> 2 (inner, 4 iterations) -> 3 (outer latch) -> 1 | 4 */
    static const test_edge e[] = {{0, 1}, {1, 2}, {2, 2}, {2, 3}, {3, 1}, {3, 4}, {4, MT_NONE}};
    build_procedure(&t.procs[0], "mm", 5, e, 7);
    analyze_procedure(&t.procs[0]);
    t.procs[0].blocks[1].mem_reads = 1;
    t.procs[0].blocks[2].mem_reads = 2;
    t.prog.procs = t.procs;
    t.prog.nprocs = 1;
    uint32_t outer = t.procs[0].blocks[1].loop, inner = t.procs[0].blocks[2].loop;
    mt_program_costs c;
    make_costs(&c, &t.procs[0], (const double[]){3, 1.5, 1.45, 0, 2});
    uint64_t counts[] = {16, 256, 1024, 256, 16};
    double blocks = 16 * 3 + 256 * 1.5 + 1024 * 1.45 + 16 * 2;
    double plain = mt_predicted_cycles_proc(&t.prog, &c, counts, 0);
    c.loops[c.loop_first[0] + outer].chain = 12;
    c.loops[c.loop_first[0] + outer].through_memory = true;
    double chained = mt_predicted_cycles_proc(&t.prog, &c, counts, 0);
    double step = 12 / (1 + 62 / 9.0 / 16);
    double want = 16 * 3 + 256 * step + 16 * 2;
    double in_outer = mt_predicted_cycles_loop(&t.prog, &c, counts, 0, outer, NULL);
    double in_inner = mt_predicted_cycles_loop(&t.prog, &c, counts, 0, inner, NULL);
    CHECK(outer != inner && near(plain, blocks) && near(chained, want) && near(in_outer, 256 * step) &&
              near(in_inner, 1024 * 1.45),
          "16 entries x 16 iterations, a 12-cycle chain, 9 loads an iteration: %.0f cycles "
          "(%.2f an iteration), blocks alone %.0f; the outer loop %.0f, the inner %.0f", chained,
          step, plain, in_outer, in_inner);
    c.loops[c.loop_first[0] + outer].through_memory = false;
    double reg = mt_predicted_cycles_proc(&t.prog, &c, counts, 0);
    c.loops[c.loop_first[0] + outer].through_memory = true;
    c.chain_loads = 0;
    double none = mt_predicted_cycles_proc(&t.prog, &c, counts, 0);
    CHECK(near(reg, 16 * 3 + 256 * 12 + 16 * 2) && near(none, reg),
          "a chain through registers, or no calibrated overlap: the whole chain (%.0f, %.0f)", reg,
          none);
    c.loops[c.loop_first[0] + outer].chain = 5;
    c.chain_loads = 62;
    double shorter = mt_predicted_cycles_proc(&t.prog, &c, counts, 0);
    CHECK(near(shorter, blocks), "a chain shorter than the work: nothing added (%.0f)", shorter);
    mt_program_costs_free(&c);
    free_program(&t);
}

/* A machine without a calibrated profile gets the shipped one of its
 * family and model, else of its family, else the newest (Zen 5). */
static void test_shipped_profiles(void)
{
    mt_machine z5, z3, z4, other, gc, intel;
    mt_machine_shipped(&z5, 26, 2);
    mt_machine_shipped(&z3, 25, 1);
    mt_machine_shipped(&z4, 25, 0x21);
    mt_machine_shipped(&other, 23, 49);
    mt_machine_shipped(&gc, 6, 207);
    mt_machine_shipped(&intel, 6, 151);
    CHECK(strstr(z5.source, "Zen 5") && strstr(z5.source, "family 26 model 2") &&
              z5.timing[MT_IC_FADD][MT_W128].latency < 2.5 && z5.bypass[MT_IC_FADD] > 0.9 &&
              z5.exit_trips > 64 && z5.exit_cycles > 20 && z5.taken_alu_cycles > 0.25 &&
              z5.stores_take_alu && z5.chain_loads > 30 && z5.timing[MT_IC_VSTLF][MT_W128].latency > 8,
          "family 26 model 2: the Zen 5 profile (%s; FP add %.2f, bypass %.2f)", z5.source,
          z5.timing[MT_IC_FADD][MT_W128].latency, z5.bypass[MT_IC_FADD]);
    CHECK(strstr(z3.source, "Zen 3") && z3.timing[MT_IC_FADD][MT_W128].latency == 3 &&
              z3.bypass[MT_IC_FADD] == 0 && __builtin_popcount(z3.pipes[MT_IC_ALU]) == 4 &&
              z3.fetch_window == 64 && !z3.moves_take_alu && !z3.stores_take_alu &&
              z3.exit_cycles == 0 && z3.taken_alu_cycles == 0 && z3.chain_loads == 0 &&
              z3.timing[MT_IC_VSTLF][MT_W128].latency > 8 &&
              z3.timing[MT_IC_STLF][MT_W128].latency <= 1,
          "family 25 model 1: the Zen 3 profile (%s; FP add %.0f, 4 ALUs, 64-byte windows, GPR "
          "forwarding renamed, vector forwarding measured, no "
          "loop-exit, taken-branch, store-data or chain figures)",
          z3.source, z3.timing[MT_IC_FADD][MT_W128].latency);
    bool none = true;
    for (int n = 0; n <= MT_LOOP_OPS_MAX; n++)
        none = none && z5.loop_ops_cycles[n] == 0 && z3.loop_ops_cycles[n] == 0;
    CHECK(none && z5.fold_latency == 0 && z3.fold_latency == 0 && z5.cmov_data_cycles == 0 &&
              !z5.fuse_alu_jcc && !z3.fuse_alu_jcc,
          "the Zen profiles have none of the rename rules measured on Intel (folding, cmov data, "
          "ALU + jcc fusion, the small-loop table)");
    bool table = false;
    for (int n = 0; n <= MT_LOOP_OPS_MAX; n++)
        table = table || gc.loop_ops_cycles[n] > 0;
    CHECK(strstr(gc.source, "Intel") && strstr(gc.source, "family 6 model 207") &&
              strstr(gc.cpu_model, "Intel") && gc.fold_latency > 0 && gc.fuse_alu_jcc &&
              gc.cmov_data_cycles > 0 && table && gc.loop_split_ops == 0 && gc.fetch_window == 0 &&
              !gc.moves_take_alu && !gc.stores_take_alu && !strcmp(intel.source, gc.source),
          "family 6 model 207: the Golden Cove-family Xeon profile, with the rename rules and no "
          "op-cache line rule (%s); another family-6 model gets it too", gc.source);
    mt_machine skx, coffee;
    mt_machine_shipped(&skx, 6, 85);
    mt_machine_shipped(&coffee, 6, 158);
    CHECK(strstr(skx.source, "Skylake-SP") && strstr(skx.source, "family 6 model 85") &&
              __builtin_popcount(skx.pipes[MT_IC_ALU]) == 4 && skx.fold_latency == 0 &&
              skx.fuse_alu_jcc && skx.dispatch_width == 4 && skx.loads_per_cycle == 2 &&
              !strcmp(coffee.source, skx.source),
          "family 6 model 85: the Skylake-SP profile (4 ALUs, no folding, 4 ops a cycle); a Coffee "
          "Lake (model 158, the same core) gets it, not Golden Cove's (%s)", coffee.source);
    CHECK(!strcmp(z4.source, z3.source) && !strcmp(other.source, z5.source),
          "another family-25 model gets the Zen 3 profile (%s), another family the newest (%s)",
          z4.source, other.source);
    mt_machine genoa, raphael;
    mt_machine_shipped(&genoa, 25, 17);
    mt_machine_shipped(&raphael, 25, 0x61);
    CHECK(strstr(genoa.source, "Zen 4") && strstr(genoa.source, "family 25 model 17") &&
              !strcmp(raphael.source, genoa.source) && genoa.call_ret_cycles > 4 &&
              genoa.pipes[MT_IC_STORE] == genoa.pipes[MT_IC_LOAD] && genoa.dispatch_width < 6.5 &&
              genoa.loop_ops_cycles[10] == genoa.loop_ops_cycles[12],
          "family 25 model 17: the Zen 4 profile (%s: a call and its return %.1f cycles, stores "
          "on the loads' AGUs, 6 ops a cycle, loops of 10-12 ops alike); a Zen 4 client (model "
          "97) gets it", genoa.source, genoa.call_ret_cycles);
}

static void test_profile_file(void)
{
    char path[] = "/tmp/mtool-profile-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    mt_error err;
    mt_machine m = machine, back;
    m.timing[MT_IC_FMA][MT_W256].latency = 4.25;
    m.fetch_window = 64;
    m.loop_split_ops = 5;
    m.loop_line_ops = 10;
    m.loop_overfull_cycles = 2.5;
    m.bypass[MT_IC_FADD] = 1.5;
    m.exit_trips = 96;
    m.exit_cycles = 27.5;
    m.taken_alu_cycles = 0.375;
    m.divide_loop_cycles = 1.875;
    m.jcc_boundary_cycles = 1.625;
    m.call_ret_cycles = 4.125;
    m.stores_take_alu = true;
    m.chain_loads = 40.5;
    m.timing[MT_IC_VSTLF][MT_W128].latency = 8.5;
    m.fold_latency = 0.125;
    m.fold_shift_cycles = 1.75;
    m.cmov_data_cycles = 1.5;
    m.fuse_alu_jcc = true;
    memset(m.loop_ops_cycles, 0, sizeof m.loop_ops_cycles);
    m.loop_ops_cycles[9] = 2;
    m.loop_ops_cycles[24] = 4.5;
    m.tlb[0] = (mt_tlb_level){64, 64};
    m.tlb[1] = (mt_tlb_level){2048, 8};
    m.tlb_walk_cycles = 128.5;
    m.latency_huge_pages = true;
    snprintf(m.cpu_model, sizeof m.cpu_model, "Test CPU 9000");
    CHECK(mt_machine_save(&m, path, &err) == 0 && mt_machine_read(path, &back, &err) == 0 &&
              back.timing[MT_IC_FMA][MT_W256].latency == 4.25 &&
              !strcmp(back.cpu_model, "Test CPU 9000") && back.pipes[MT_IC_FADD] == m.pipes[MT_IC_FADD] &&
              fabs(back.tsc_per_cycle - m.tsc_per_cycle) < 1e-4 && back.fetch_window == 64 &&
              back.bypass[MT_IC_FADD] == 1.5 && back.bypass[MT_IC_FMUL] == m.bypass[MT_IC_FMUL] &&
              back.loop_split_ops == 5 && back.loop_line_ops == 10 && back.loop_overfull_cycles == 2.5 &&
              back.exit_trips == 96 && back.exit_cycles == 27.5 && back.taken_alu_cycles == 0.375 &&
              back.stores_take_alu && back.chain_loads == 40.5 &&
              back.timing[MT_IC_VSTLF][MT_W128].latency == 8.5 && back.fold_latency == 0.125 &&
              back.fold_shift_cycles == 1.75 && back.cmov_data_cycles == 1.5 && back.fuse_alu_jcc &&
              back.loop_ops_cycles[9] == 2 && back.loop_ops_cycles[24] == 4.5 &&
              back.loop_ops_cycles[10] == 0 && back.divide_loop_cycles == 1.875 &&
              back.jcc_boundary_cycles == 1.625 && back.call_ret_cycles == 4.125 &&
              back.tlb[0].entries == 64 &&
              back.tlb[0].ways == 64 && back.tlb[1].entries == 2048 && back.tlb[1].ways == 8 &&
              back.tlb_walk_cycles == 128.5 && back.latency_huge_pages,
          "machine profile written and read back");
    CHECK(back.version == MT_MACHINE_PROFILE_VERSION, "a new profile carries this mtool's version");
    FILE *fp = fopen(path, "w");
    fputs("cpu_model Old CPU\ntsc_per_cycle 0.7\n", fp);
    fclose(fp);
    CHECK(mt_machine_read(path, &back, &err) == 0 && back.version == 1,
          "a profile without a version line is version 1 (an older calibration: warned)");
    fp = fopen(path, "a");
    fputs("class fadd 0x3 nonsense\n", fp);
    fclose(fp);
    CHECK(mt_machine_read(path, &back, &err) != 0 && strstr(err.msg, path) && strstr(err.msg, ":"),
          "a bad profile line is an error naming the file and line: %s", err.msg);
    /* What a calibration with the wrong clock wrote on the Xeon family 6
     * model 207: 9.54 GHz cores, loads 4x too fast per cycle. */
    fp = fopen(path, "w");
    fputs("version 3\ntaken_per_cycle 9.7\n", fp);
    fclose(fp);
    CHECK(mt_machine_read(path, &back, &err) != 0 && strstr(err.msg, ":2:") &&
              strstr(err.msg, "'taken_per_cycle'") && strstr(err.msg, "'9.7'"),
          "an out-of-range value is an error naming the line, key and value: %s", err.msg);
    fp = fopen(path, "w");
    fputs("version 4\nloop_ops 25 3.0\n", fp);
    fclose(fp);
    CHECK(mt_machine_read(path, &back, &err) != 0 && strstr(err.msg, ":2:") &&
              strstr(err.msg, "'loop_ops'"),
          "a small-loop entry beyond the table is refused: %s", err.msg);
    static const struct {
        const char *text, *key, *why;
    } bad_tlb[] = {
        {"tlb 1 64 64\ntlb 2 2048 7\n", "'2 2048 7'", "ways not a divisor"},
        {"tlb 2 2048 8\n", "'2 2048 8'", "level 2 before level 1"},
        {"tlb 3 64 4\n", "'3 64 4'", "level not 1 or 2"},
        {"tlb 1 0 1\n", "'1 0 1'", "entries outside"},
        {"tlb_walk_cycles 9000\n", "'9000'", "outside the range"},
        {"latency_huge_pages 2\n", "'2'", "not 0 or 1"},
    };
    for (size_t i = 0; i < MT_ARRAY_LEN(bad_tlb); i++) {
        fp = fopen(path, "w");
        fprintf(fp, "version 6\n%s", bad_tlb[i].text);
        fclose(fp);
        CHECK(mt_machine_read(path, &back, &err) != 0 && strstr(err.msg, bad_tlb[i].key) &&
                  strstr(err.msg, bad_tlb[i].why),
              "a bad TLB key is refused, naming the value and why: %s", err.msg);
    }
    fp = fopen(path, "w");
    fputs("dispatch_width 4\nmoves_take_alu 0.5\n", fp);
    fclose(fp);
    CHECK(mt_machine_read(path, &back, &err) != 0 && strstr(err.msg, "'moves_take_alu'"),
          "a flag other than 0 or 1 is refused: %s", err.msg);
    fp = fopen(path, "w");
    fputs("\x1b[31mkey value\n", fp);
    fclose(fp);
    CHECK(mt_machine_read(path, &back, &err) != 0 && !strchr(err.msg, '\x1b') &&
              strstr(err.msg, "\\x1b"),
          "the file's bytes are escaped in the error: %s", err.msg);
    /* What a calibration under load measured on the Xeon family 6 model
     * 207 (27 Nov 2026): a memory latency the reader refuses.  Neither
     * written nor used: the check names the measurement. */
    m.mem_latency[MT_MEM_MEMORY] = (mt_mem_latency){5146, 20, 1 << 28, 14};
    CHECK(mt_machine_check(&m, &err) != 0 && strstr(err.msg, "'latency'") && strstr(err.msg, "5146"),
          "a measured figure the reader would refuse fails the check, naming it: %s", err.msg);
    unlink(path);
    CHECK(mt_machine_save(&m, path, &err) != 0 && access(path, F_OK) != 0,
          "and no profile is written with it");
    m.mem_latency[MT_MEM_MEMORY].cycles = 512;
    CHECK(mt_machine_check(&m, &err) == 0, "the same profile with a memory latency of 512 passes");
    char *p = mt_machine_profile_path("AMD EPYC 9R14 96-Core");
    CHECK(strstr(p, "machine-amd-epyc-9r14-96-core.txt") != NULL, "profile path keyed by model: %s", p);
    free(p);
}

/* The calibration's clock: the imul chain's ratio, when an add chain and an
 * FP multiply chain agree with it; every way they can disagree refused. */
static void test_clock_check(void)
{
    mt_error err;
    double ratio = 0;
    mt_clock_refs ok = {0.756, 2.268, 3.024}; /* 1, 3 and 4 cycles at 0.756 ticks a cycle */
    CHECK(mt_clock_check(&ok, &ratio, &err) == 0 && fabs(ratio - 0.756) < 1e-9,
          "agreeing references give the imul chain's ratio: %.4f", ratio);
    mt_clock_refs zen = {0.72, 2.16, 2.16}; /* FP multiply 3 cycles */
    CHECK(mt_clock_check(&zen, &ratio, &err) == 0 && fabs(ratio - 0.72) < 1e-9,
          "an FP multiply of another whole latency is accepted: %.4f", ratio);
    /* the Xeon family 6 model 207 folding immediate adds, had the add chain
     * used them: two adds a cycle */
    mt_clock_refs folded = {0.384, 2.268, 3.024};
    CHECK(mt_clock_check(&folded, &ratio, &err) != 0 && strstr(err.msg, "disagree") &&
              strstr(err.msg, "add") && strstr(err.msg, "0.3840"),
          "an add chain at half the imul clock is refused: %s", err.msg);
    mt_clock_refs slow_add = {0.80, 2.268, 3.024}; /* 5.8% apart */
    CHECK(mt_clock_check(&slow_add, &ratio, &err) != 0 && strstr(err.msg, "disagree"),
          "references 6%% apart are refused: %s", err.msg);
    mt_clock_refs near = {0.77, 2.268, 3.024}; /* 1.9% apart: noise */
    CHECK(mt_clock_check(&near, &ratio, &err) == 0, "references 2%% apart are accepted");
    mt_clock_refs half = {0.756, 2.268, 3.402}; /* FP multiply 4.5 cycles */
    CHECK(mt_clock_check(&half, &ratio, &err) != 0 && strstr(err.msg, "FP multiply") &&
              strstr(err.msg, "4.5"),
          "an FP chain of no whole number of cycles is refused: %s", err.msg);
    mt_clock_refs tiny = {0.022, 0.066, 0.088}; /* a 95 GHz core */
    CHECK(mt_clock_check(&tiny, &ratio, &err) != 0 && strstr(err.msg, "imul"),
          "a clock no machine has is refused: %s", err.msg);
    mt_clock_refs none = {0, 2.268, 3.024};
    CHECK(mt_clock_check(&none, &ratio, &err) != 0, "a reference that measured nothing is refused");
}

/* Intel's leaf 2 descriptors: what a Xeon family 6 model 85 (Skylake-SP)
 * returns, which has no leaf 0x18, and an older core's data TLB0/TLB1. */
static void test_tlb_leaf2(void)
{
    const uint32_t skylake_sp[4] = {0x76036301, 0x00f0b5ff, 0x00000000, 0x00c30000};
    mt_tlb_level t[MT_TLB_LEVELS];
    int n = mt_tlb_from_leaf2(skylake_sp, false, t, MT_TLB_LEVELS);
    CHECK(n == 2 && t[0].entries == 64 && t[0].ways == 4 && t[1].entries == 1536 && t[1].ways == 6,
          "Skylake-SP's data TLB 64 entries 4-way (0x03), the shared level 1536 6-way (0xc3): %d", n);
    n = mt_tlb_from_leaf2(skylake_sp, true, t, 1);
    CHECK(n == 1 && t[0].entries == 64 && t[0].ways == 8,
          "its instruction TLB 64 entries 8-way (0xb5; 0x76's large pages and AL's count 01 are no 4 KiB TLB)");
    /* Core 2: 0x56 (4 MiB pages), 0x57 data TLB0 16 4-way, 0xb4 data TLB1 256 4-way, 0x50 instruction 64. */
    const uint32_t core2[4] = {0x56575001, 0x000000b4, 0x80c30000, 0};
    n = mt_tlb_from_leaf2(core2, false, t, MT_TLB_LEVELS);
    CHECK(n == 2 && t[0].entries == 16 && t[0].ways == 4 && t[1].entries == 256 && t[1].ways == 4,
          "data TLB0 is level 1, TLB1 level 2; a register with bit 31 set is skipped: %d", n);
    n = mt_tlb_from_leaf2(core2, true, t, 1);
    CHECK(n == 1 && t[0].entries == 64 && t[0].ways == 64, "0x50: 64 entries, fully associative");
    const uint32_t none[4] = {0x00000001, 0, 0, 0x000000ff};
    CHECK(mt_tlb_from_leaf2(none, false, t, MT_TLB_LEVELS) == 0, "no TLB descriptor: none told");
}

int main(void)
{
    mt_error err;
    mt_machine_default(&machine);
    /* The tests below check the model against the profile's own figures,
     * written with chains of `add $1` as one ALU op each: the renamer's rules
     * (folding, ALU + jcc fusion, cmov data latency, the small-loop table),
     * which the host's profile has on Intel, are off here and tested on
     * their own (test_rename_rules). */
    machine.fold_latency = machine.fold_shift_cycles = machine.cmov_data_cycles = 0;
    machine.fuse_alu_jcc = false;
    memset(machine.loop_ops_cycles, 0, sizeof machine.loop_ops_cycles);
    predictor = mt_predictor_new(&machine, &err);
    if (!predictor) {
        printf("not ok - predictor: %s\n", err.msg);
        return 1;
    }
    test_dependent_imul_chain();
    test_independent_adds();
    test_fp_reduction_loop();
    test_memory_carried();
    test_zero_idiom_breaks_chain();
    test_chases();
    test_dispatch();
    test_two_block_loop();
    test_taken_branch_pipes();
    test_fetch_windows();
    test_loop_front_end();
    test_probe_chain();
    test_bypass_delay();
    test_vector_forwarding();
    test_loop_alu();
    test_store_pipes();
    test_call_ret();
    test_divide_loop();
    test_jcc_boundary();
    test_rename_rules();
    test_loop_exits();
    test_memory_chain();
    test_shipped_profiles();
    test_profile_file();
    test_clock_check();
    test_tlb_leaf2();
    mt_predictor_free(predictor);
    return unit_finish();
}
