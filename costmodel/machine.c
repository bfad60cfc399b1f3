/* costmodel/machine.c — machine profiles: the shipped default, the text
 * format `mtool calibrate` writes into the XDG config directory, and the
 * choice between them. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stddef.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "costmodel.h"

static const char *const class_names[MT_IC_COUNT] = {
    "alu", "cmov", "lea", "lea3", "shift", "imul", "mulwide", "div32", "div64", "bitcnt", "branch",
    "load", "loadx", "vload", "store", "stlf", "vstlf", "valu", "vshift", "vimul", "vmov", "shuf", "fadd", "fmul",
    "fma", "fdiv32", "fdiv64", "fsqrt32", "fsqrt64", "cvt", "gpr2vec", "gather", "horiz",
    "microcode"};

static const char *const width_names[MT_W_COUNT] = {"128", "256", "512"};

static const char *const bound_names[MT_BOUND_COUNT] = {
    "dispatch", "pipes", "loads", "stores", "taken-branches", "fetch", "latency", "recurrence", "in-header"};

const char *mt_iclass_name(mt_iclass c) { return c < MT_IC_COUNT ? class_names[c] : "?"; }
const char *mt_width_name(mt_width w) { return w < MT_W_COUNT ? width_names[w] : "?"; }
const char *mt_bound_name(mt_bound b) { return b < MT_BOUND_COUNT ? bound_names[b] : "?"; }

#define PIPES(first, n) ((uint16_t)(((1u << (n)) - 1u) << (first)))
#define ALUS(n) PIPES(MT_PIPE_ALU0, n)
#define AGUS(n) PIPES(MT_PIPE_AGU0, n)
#define FP_MATH PIPES(MT_PIPE_FP0, 4)
#define BIT(p) ((uint16_t)(1u << (p)))
#define FP_PAIR(a, b) ((uint16_t)(BIT(MT_PIPE_FP0 + (a)) | BIT(MT_PIPE_FP0 + (b))))

/* One class of a shipped profile: its pipes, latency and reciprocal
 * throughput per width, and its bypass delay to other classes. */
typedef struct {
    mt_iclass c;
    uint16_t pipes;
    mt_timing t[MT_W_COUNT];
    double bypass;
} default_row;

#define SAME3(lat, rtp) {{lat, rtp}, {lat, rtp}, {lat, rtp}}

/* Zen 5 figures of the loop model (docs/COST-MODEL.md; provisional until
 * calibrated below) */
#define TAKEN_ALU_Z5 0.308
#define EXIT_TRIPS_Z5 112
#define EXIT_CYCLES_Z5 24.1
#define CHAIN_LOADS_Z5 62

/* Zen 5: `mtool calibrate` on the development VM, a 2-vCPU "AMD EPYC" KVM
 * guest whose CPUID said family 26 model 2 (25 November 2026, 9 runs,
 * spread under 1% but for mulwide and gpr2vec; docs/COST-MODEL.md).  Pipes
 * as the calibration derives them: a class sustaining k per cycle uses the
 * first k of its kind (5 ALUs: 5.2 independent adds per cycle). */
static const default_row zen5_rows[] = {
    {MT_IC_ALU, ALUS(5), SAME3(1, 0.193), 0},
    {MT_IC_CMOV, ALUS(5), SAME3(1.998, 0.167), 0},
    {MT_IC_LEA, ALUS(5), SAME3(0.999, 0.187), 0},
    {MT_IC_LEA3, ALUS(2), SAME3(2, 0.431), 0},
    {MT_IC_SHIFT, ALUS(3), SAME3(0.999, 0.334), 0},
    {MT_IC_IMUL, ALUS(3), SAME3(2.994, 0.333), 0},
    {MT_IC_MULWIDE, ALUS(1), SAME3(2.997, 1), 0},
    {MT_IC_DIV32, ALUS(1), SAME3(12.973, 5.987), 0},
    {MT_IC_DIV64, ALUS(1), SAME3(13.967, 9.151), 0},
    {MT_IC_BITCNT, ALUS(5), SAME3(0.999, 0.193), 0},
    {MT_IC_BRANCH, ALUS(3), SAME3(1, 0.337), 0},
    {MT_IC_LOAD, AGUS(4), SAME3(3.989, 0.25), 0},
    {MT_IC_LOADX, 0, SAME3(1.002, 0.25), 0},
    {MT_IC_VLOAD, AGUS(2), {{6.496, 0.333}, {6.496, 0.5}, {6.496, 0.5}}, 0},
    {MT_IC_STORE, AGUS(1), SAME3(1, 1.032), 0},
    {MT_IC_STLF, 0, SAME3(0.501, 1), 0},
    {MT_IC_VSTLF, 0, SAME3(8.985, 1), 0},
    {MT_IC_VALU, FP_MATH, SAME3(1.991, 0.25), 0},
    {MT_IC_VSHIFT, FP_PAIR(1, 2), SAME3(1.991, 0.5), 0},
    {MT_IC_VIMUL, FP_PAIR(0, 3), {{3, 0.5}, {2.988, 0.5}, {2.988, 0.5}}, 0},
    {MT_IC_VMOV, FP_MATH, SAME3(0, 0.25), 0},
    {MT_IC_SHUF, FP_PAIR(1, 2), {{1.991, 0.5}, {3.982, 0.25}, {3.982, 0.25}}, 0},
    {MT_IC_FADD, FP_PAIR(2, 3), SAME3(1.991, 0.5), 1.002},
    {MT_IC_FMUL, FP_PAIR(0, 1), SAME3(2.987, 0.5), 0},
    {MT_IC_FMA, FP_PAIR(0, 1), SAME3(3.982, 0.5), 0},
    {MT_IC_FDIV32, BIT(MT_PIPE_FP1), SAME3(9.959, 5.332), 0},
    {MT_IC_FDIV64, BIT(MT_PIPE_FP1), {{12.947, 3.993}, {12.947, 3.985}, {12.947, 3.989}}, 0},
    {MT_IC_FSQRT32, BIT(MT_PIPE_FP1), {{13.947, 5}, {13.947, 5}, {13.947, 10}}, 0},
    {MT_IC_FSQRT64, BIT(MT_PIPE_FP1), SAME3(19.924, 7.489), 0},
    {MT_IC_CVT, FP_PAIR(2, 3), SAME3(2.987, 0.5), 0},
    {MT_IC_GPR2VEC, BIT(MT_PIPE_FP4), {{3.494, 1}, {3, 1}, {3, 1}}, 0},
    {MT_IC_GATHER, FP_MATH, {{15, 4}, {20, 12.025}, {25, 12.025}}, 0},
    {MT_IC_HORIZ, FP_MATH, SAME3(5.056, 2), 0},
    {MT_IC_MICROCODE, ALUS(1), SAME3(10, 5), 0},
};

/* Zen 3: the same VM when its CPUID said family 25 model 1 (November
 * 2026).  What was measured there and recorded (docs/COST-MODEL.md, the
 * commit history): 4 independent adds per cycle, 3 loads, a store to a new
 * line per cycle, 6 nops dispatched per cycle, one not-taken and one taken
 * branch per cycle, 64-byte fetch windows, renamed moves free, FP add 3
 * cycles, psadbw 3 cycles two per cycle, no bypass delays (horner_f64 within
 * 1%), TSC 2.445 GHz with the core near 3.24 GHz.  The other figures are
 * AMD's published Zen 3 latencies and throughputs (a counter probe: a
 * forwarding and an add, 2 cycles). */
static const default_row zen3_rows[] = {
    {MT_IC_ALU, ALUS(4), SAME3(1, 0.25), 0},
    {MT_IC_CMOV, ALUS(4), SAME3(1, 0.25), 0},
    {MT_IC_LEA, ALUS(4), SAME3(1, 0.25), 0},
    {MT_IC_LEA3, ALUS(2), SAME3(2, 0.5), 0},
    {MT_IC_SHIFT, ALUS(2), SAME3(1, 0.5), 0},
    {MT_IC_IMUL, ALUS(1), SAME3(3, 1), 0},
    {MT_IC_MULWIDE, ALUS(1), SAME3(3, 2), 0},
    {MT_IC_DIV32, ALUS(1), SAME3(10, 6), 0},
    {MT_IC_DIV64, ALUS(1), SAME3(14, 9), 0},
    {MT_IC_BITCNT, ALUS(4), SAME3(1, 0.25), 0},
    {MT_IC_BRANCH, ALUS(1), SAME3(1, 1), 0},
    {MT_IC_LOAD, AGUS(3), SAME3(4, 0.333), 0},
    {MT_IC_LOADX, 0, SAME3(1, 0.333), 0},
    {MT_IC_VLOAD, AGUS(2), SAME3(7, 0.5), 0},
    {MT_IC_STORE, AGUS(1), SAME3(1, 1), 0},
    {MT_IC_STLF, 0, SAME3(1, 1), 0},   /* renamed: 1.0 in loops of up to ~24 pairs */
    {MT_IC_VSTLF, 0, SAME3(9, 1), 0},  /* 8.7-9.0 measured, as calibrate measures it */
    {MT_IC_VALU, FP_MATH, SAME3(1, 0.25), 0},
    {MT_IC_VSHIFT, FP_PAIR(1, 2), SAME3(1, 0.5), 0},
    {MT_IC_VIMUL, FP_PAIR(0, 3), SAME3(3, 0.5), 0},
    {MT_IC_VMOV, FP_MATH, SAME3(0, 0.25), 0},
    {MT_IC_SHUF, FP_PAIR(1, 2), {{1, 0.5}, {3, 0.5}, {3, 0.5}}, 0},
    {MT_IC_FADD, FP_PAIR(2, 3), SAME3(3, 0.5), 0},
    {MT_IC_FMUL, FP_PAIR(0, 1), SAME3(3, 0.5), 0},
    {MT_IC_FMA, FP_PAIR(0, 1), SAME3(4, 0.5), 0},
    {MT_IC_FDIV32, BIT(MT_PIPE_FP1), SAME3(10.5, 3.5), 0},
    {MT_IC_FDIV64, BIT(MT_PIPE_FP1), SAME3(13.5, 4.5), 0},
    {MT_IC_FSQRT32, BIT(MT_PIPE_FP1), {{14, 5}, {14, 5}, {14, 10}}, 0},
    {MT_IC_FSQRT64, BIT(MT_PIPE_FP1), SAME3(20, 9), 0},
    {MT_IC_CVT, FP_PAIR(2, 3), SAME3(3, 0.5), 0},
    {MT_IC_GPR2VEC, BIT(MT_PIPE_FP4), SAME3(3, 1), 0},
    {MT_IC_GATHER, FP_MATH, {{15, 4}, {20, 9}, {25, 9}}, 0},
    {MT_IC_HORIZ, FP_MATH, SAME3(6, 2), 0},
    {MT_IC_MICROCODE, ALUS(1), SAME3(10, 5), 0},
};

/* Intel Xeon family 6 model 207 (Emerald Rapids, Raptor Cove cores of the
 * Golden Cove family): `mtool calibrate` on the development VM, a 2-vCPU
 * KVM guest, 26 November 2026 (docs/COST-MODEL.md).  Three integer-vector
 * and FP pipes, five ALUs, three loads a cycle, one store to a new line;
 * the bypass delays are the solution of the calibration's five chains. */
static const default_row golden_cove_rows[] = {
    {MT_IC_ALU, ALUS(5), SAME3(1, 0.201), 0},
    {MT_IC_CMOV, ALUS(5), SAME3(1, 0.167), 0},
    {MT_IC_LEA, ALUS(5), SAME3(1, 0.212), 0},
    {MT_IC_LEA3, ALUS(3), SAME3(2, 0.334), 0},
    {MT_IC_SHIFT, ALUS(2), SAME3(1.032, 0.5), 0},
    {MT_IC_IMUL, ALUS(1), SAME3(3, 1), 0},
    {MT_IC_MULWIDE, ALUS(1), SAME3(4, 1), 0},
    {MT_IC_DIV32, ALUS(1), SAME3(10.98, 5.99), 0},
    {MT_IC_DIV64, ALUS(1), SAME3(13.98, 9.98), 0},
    {MT_IC_BITCNT, ALUS(1), SAME3(3, 1), 0},
    {MT_IC_BRANCH, ALUS(2), SAME3(1, 0.506), 0},
    {MT_IC_LOAD, AGUS(3), SAME3(4.99, 0.333), 0},
    {MT_IC_LOADX, 0, SAME3(0, 0.25), 0},
    {MT_IC_VLOAD, AGUS(3), SAME3(5.99, 0.334), 0},
    {MT_IC_STORE, AGUS(1), SAME3(1, 1), 0},
    {MT_IC_STLF, 0, SAME3(0.5, 1), 0},
    {MT_IC_VSTLF, 0, SAME3(7.0, 1), 0},
    {MT_IC_VALU, PIPES(MT_PIPE_FP0, 3), {{1, 0.333}, {1, 0.333}, {1, 0.5}}, 0.705},
    {MT_IC_VSHIFT, PIPES(MT_PIPE_FP0, 2), SAME3(1, 0.5), 0},
    {MT_IC_VIMUL, BIT(MT_PIPE_FP0), SAME3(10, 1.077), 0},
    {MT_IC_VMOV, PIPES(MT_PIPE_FP0, 3), SAME3(0, 0.25), 0},
    {MT_IC_SHUF, FP_PAIR(1, 2), {{1, 0.5}, {3, 0.5}, {3, 0.5}}, 0.681},
    {MT_IC_FADD, FP_PAIR(1, 2), SAME3(2, 0.5), 0.311},
    {MT_IC_FMUL, FP_PAIR(0, 1), SAME3(4, 0.5), 0.681},
    {MT_IC_FMA, FP_PAIR(0, 1), SAME3(4, 0.5), 0.682},
    {MT_IC_FDIV32, BIT(MT_PIPE_FP0), SAME3(10.98, 3), 0},
    {MT_IC_FDIV64, BIT(MT_PIPE_FP0), {{12.99, 3.99}, {12.99, 8.02}, {12.99, 16.04}}, 0},
    {MT_IC_FSQRT32, BIT(MT_PIPE_FP0), {{11.98, 5}, {11.98, 5}, {11.98, 10}}, 0},
    {MT_IC_FSQRT64, BIT(MT_PIPE_FP0), SAME3(12.97, 5.99), 0},
    {MT_IC_CVT, FP_PAIR(0, 1), SAME3(4, 0.5), 0},
    {MT_IC_GPR2VEC, BIT(MT_PIPE_FP4), {{2, 1}, {3, 1}, {3, 1}}, 0},
    {MT_IC_GATHER, PIPES(MT_PIPE_FP0, 3), {{15, 4.11}, {20, 4.11}, {25, 4.11}}, 0},
    {MT_IC_HORIZ, PIPES(MT_PIPE_FP0, 3), SAME3(5, 2), 0},
    {MT_IC_MICROCODE, ALUS(1), SAME3(10, 5), 0},
};

/* Its small loops, cycles an iteration by op count (index: ops, 3..24). */
static const double golden_cove_loop_ops[MT_LOOP_OPS_MAX + 1] = {
    0, 0, 0, 1, 1, 1, 1, 1.166, 1.332, 2, 2, 2, 2, 2.164, 2.332, 2.497, 2.663, 2.995, 2.996,
    3.161, 3.329, 3.496, 3.66, 3.845, 3.995};

/* Intel Xeon family 6 model 85 (Cascade Lake, Skylake-SP cores): `mtool
 * calibrate` on the development VM, a 2-vCPU KVM guest, TSC 2.5 GHz, 28
 * November 2026 (docs/COST-MODEL.md; 132 of 135 figures confirmed by quiet
 * samples, the vector divide and square root throughputs the fastest
 * repeated values).  Four ALUs, two loads a cycle, four ops dispatched a
 * cycle, no immediate folding, ALU + jcc fusion; gathers at 26 cycles (its
 * microcode's Gather Data Sampling mitigation); GPR store forwarding 4.4. */
static const default_row skylake_rows[] = {
    {MT_IC_ALU, ALUS(4), SAME3(1, 0.251), 0},
    {MT_IC_CMOV, ALUS(4), SAME3(0.998, 0.167), 0},
    {MT_IC_LEA, ALUS(2), SAME3(0.999, 0.576), 0},
    {MT_IC_LEA3, ALUS(1), SAME3(2.997, 0.999), 0},
    {MT_IC_SHIFT, ALUS(2), SAME3(1.104, 0.501), 0},
    {MT_IC_IMUL, ALUS(1), SAME3(2.997, 0.999), 0},
    {MT_IC_MULWIDE, ALUS(1), SAME3(3.995, 1), 0},
    {MT_IC_DIV32, ALUS(1), SAME3(25.34, 6.018), 0},
    {MT_IC_DIV64, ALUS(1), SAME3(33.86, 21.0), 0},
    {MT_IC_BITCNT, ALUS(1), SAME3(2.997, 0.999), 0},
    {MT_IC_BRANCH, ALUS(1), SAME3(1, 1.012), 0},
    {MT_IC_LOAD, AGUS(2), SAME3(3.995, 0.5), 0},
    {MT_IC_LOADX, 0, SAME3(0.998, 0.25), 0},
    {MT_IC_VLOAD, AGUS(2), SAME3(5.992, 0.5), 0},
    {MT_IC_STORE, AGUS(1), SAME3(1, 1.002), 0},
    {MT_IC_STLF, 0, SAME3(4.435, 1), 0},
    {MT_IC_VSTLF, 0, SAME3(4.995, 1), 0},
    {MT_IC_VALU, PIPES(MT_PIPE_FP0, 3), {{0.999, 0.333}, {0.999, 0.333}, {0.999, 0.499}}, 1.384},
    {MT_IC_VSHIFT, FP_PAIR(0, 1), SAME3(1, 0.499), 0},
    {MT_IC_VIMUL, BIT(MT_PIPE_FP0), SAME3(9.987, 1.164), 0},
    {MT_IC_VMOV, PIPES(MT_PIPE_FP0, 3), SAME3(0, 0.25), 0},
    {MT_IC_SHUF, BIT(MT_PIPE_FP2), {{0.999, 0.999}, {2.997, 0.999}, {2.997, 0.999}}, 0},
    {MT_IC_FADD, FP_PAIR(1, 2), SAME3(3.995, 0.5), 0},
    {MT_IC_FMUL, FP_PAIR(0, 1), SAME3(3.995, 0.499), 0},
    {MT_IC_FMA, FP_PAIR(0, 1), SAME3(3.995, 0.5), 0},
    {MT_IC_FDIV32, BIT(MT_PIPE_FP0), SAME3(10.985, 2.996), 0},
    {MT_IC_FDIV64, BIT(MT_PIPE_FP0), {{12.983, 3.995}, {12.983, 8.061}, {12.983, 16.14}}, 0},
    {MT_IC_FSQRT32, BIT(MT_PIPE_FP0), {{11.984, 5}, {11.984, 5}, {11.984, 10}}, 0},
    {MT_IC_FSQRT64, BIT(MT_PIPE_FP0), SAME3(12.983, 6.04), 0},
    {MT_IC_CVT, FP_PAIR(0, 1), SAME3(3.995, 0.499), 0},
    {MT_IC_GPR2VEC, BIT(MT_PIPE_FP4), {{1.998, 1}, {3, 1}, {3, 1}}, 0},
    {MT_IC_GATHER, PIPES(MT_PIPE_FP0, 3), {{15, 25.975}, {20, 25.975}, {25, 25.975}}, 0},
    {MT_IC_HORIZ, PIPES(MT_PIPE_FP0, 3), SAME3(5.992, 2), 0},
    {MT_IC_MICROCODE, ALUS(1), SAME3(10, 5), 0},
};

/* Zen 4: the same VM when its CPUID said family 25 model 17 (29 November
 * 2026): `mtool calibrate` there, 141 of 141 figures confirmed by quiet
 * samples (docs/COST-MODEL.md, "AMD EPYC Zen 4"): 4 ALUs, 2 shifts, 3
 * loads, a store to a new line per cycle on any of the loads' AGUs, 2
 * vector loads, renamed moves charged an ALU slot (as calibrate decides
 * there), a call and its return 4.1 cycles, 6 ops dispatched. */
static const default_row zen4_rows[] = {
    {MT_IC_ALU, ALUS(4), SAME3(1, 0.251), 0},
    {MT_IC_CMOV, ALUS(4), SAME3(1, 0.25), 0},
    {MT_IC_LEA, ALUS(3), SAME3(1, 0.292), 0},
    {MT_IC_LEA3, ALUS(2), SAME3(2, 0.5), 0},
    {MT_IC_SHIFT, ALUS(2), SAME3(1, 0.5), 0},
    {MT_IC_IMUL, ALUS(1), SAME3(3, 1), 0},
    {MT_IC_MULWIDE, ALUS(1), SAME3(4, 2), 0},
    {MT_IC_DIV32, ALUS(1), SAME3(12, 6), 0},
    {MT_IC_DIV64, ALUS(1), SAME3(13, 7), 0},
    {MT_IC_BITCNT, ALUS(4), SAME3(1, 0.25), 0},
    {MT_IC_BRANCH, ALUS(1), SAME3(1, 1), 0},
    {MT_IC_LOAD, AGUS(3), SAME3(4, 0.335), 0},
    {MT_IC_LOADX, 0, SAME3(1, 0.333), 0},
    {MT_IC_VLOAD, AGUS(2), SAME3(7, 0.5), 0},
    {MT_IC_STORE, AGUS(3), SAME3(1, 1), 0},
    {MT_IC_STLF, 0, SAME3(1, 1), 0},
    {MT_IC_VSTLF, 0, SAME3(9, 1), 0},
    {MT_IC_VALU, FP_MATH, {{1, 0.25}, {1, 0.25}, {1, 0.5}}, 0},
    {MT_IC_VSHIFT, FP_PAIR(0, 1), SAME3(1, 0.5), 0},
    {MT_IC_VIMUL, FP_PAIR(0, 1), SAME3(3, 0.5), 0},
    {MT_IC_VMOV, FP_MATH, SAME3(0, 0.25), 0},
    {MT_IC_SHUF, PIPES(MT_PIPE_FP1, 3), {{1, 0.369}, {3.992, 0.369}, {3.992, 0.369}}, 0},
    {MT_IC_FADD, FP_PAIR(2, 3), {{3, 0.5}, {3, 0.5}, {3, 1}}, 0},
    {MT_IC_FMUL, FP_PAIR(0, 1), SAME3(3, 0.5), 0},
    {MT_IC_FMA, FP_PAIR(0, 1), {{4, 0.5}, {4, 0.5}, {4, 1}}, 0},
    {MT_IC_FDIV32, BIT(MT_PIPE_FP0), SAME3(11, 3), 0},
    {MT_IC_FDIV64, BIT(MT_PIPE_FP0), {{13, 4.5}, {13, 4.5}, {13, 9}}, 0},
    {MT_IC_FSQRT32, BIT(MT_PIPE_FP0), {{15, 5}, {15, 5}, {15, 10}}, 0},
    {MT_IC_FSQRT64, BIT(MT_PIPE_FP0), SAME3(21, 8.4), 0},
    {MT_IC_CVT, FP_PAIR(0, 1), SAME3(3, 0.5), 0},
    {MT_IC_GPR2VEC, BIT(MT_PIPE_FP4), SAME3(3, 1), 0},
    {MT_IC_GATHER, FP_MATH, {{15, 8}, {20, 8}, {25, 8}}, 0},
    {MT_IC_HORIZ, FP_MATH, SAME3(4.1, 2), 0},
    {MT_IC_MICROCODE, ALUS(1), SAME3(10, 5), 0},
};

/* Its loops by op count (the same calibration): 3-6 ops a cycle, 10-12 two,
 * then the dispatch width. */
static const double zen4_loop_ops[MT_LOOP_OPS_MAX + 1] = {
    0, 0, 0, 1.002, 1.002, 1.002, 1.002, 1.169, 1.335, 1.503, 2.003, 2.003, 2.003, 2.17, 2.336,
    2.503, 2.671, 2.837, 3.004, 3.171, 3.337, 3.505, 3.671, 3.838, 4.005};

/* Its small loops by op count, at the dispatch width from 5 ops on (7 and
 * 8: 2.0), measured with their test/jnz off 32-byte boundaries (before,
 * 10, 11, 21 and 22 ops read 3.0, 4.0, 8.0 and 7.0: the jump on a
 * boundary, now jcc_boundary_cycles). */
static const double skylake_loop_ops[MT_LOOP_OPS_MAX + 1] = {
    0, 0, 0, 1.001, 1.001, 1.25, 1.5, 1.998, 1.999, 2.249, 2.498, 2.748, 2.998, 3.247, 3.497,
    3.747, 3.996, 4.246, 4.496, 4.745, 4.995, 5.245, 5.494, 5.744, 5.994};

/* The profiles mtool ships, newest core first: a CPU without a calibrated
 * profile gets the one of its family and model (or of a model it lists as
 * the same core), else of its family (Zen 4, family 25 too, is closer to
 * Zen 3 than to Zen 5), else the first. */
typedef struct {
    int family, model;
    const char *core;
    double tsc_per_cycle, tsc_hz, dispatch_width, loads_per_cycle, stores_per_cycle,
        taken_per_cycle, probe_cycles, fetch_window, loop_split_ops, loop_line_ops,
        loop_overfull_cycles, taken_alu_cycles, divide_loop_cycles, jcc_boundary_cycles, call_ret_cycles,
        exit_trips, exit_cycles, chain_loads;
    bool moves_take_alu, stores_take_alu, has_avx512;
    const default_row *rows;
    size_t nrows;
    const char *vendor;      /* "AMD EPYC" when NULL */
    double fold_latency, fold_shift_cycles, cmov_data_cycles;
    bool fuse_alu_jcc;
    const double *loop_ops; /* MT_LOOP_OPS_MAX + 1 figures, or NULL: none */
    int same_core[8];       /* other models of this family with the same core, 0-ended */
} shipped_profile;

/* Figures a core was not measured for are "none": 0, nothing charged (loop
 * exits, the taken branch's extra ALU time, the overlap of memory-carried
 * chains), or false. */
static const shipped_profile shipped[] = {
    {.family = 26, .model = 2, .core = "Zen 5", .tsc_per_cycle = 0.5766, .tsc_hz = 2.596e9,
     .dispatch_width = 6.96, .loads_per_cycle = 4, .stores_per_cycle = 0.97,
     .taken_per_cycle = 1, .probe_cycles = 1.822, .fetch_window = 0, .loop_split_ops = 6,
     .loop_line_ops = 12, .loop_overfull_cycles = 3, .taken_alu_cycles = TAKEN_ALU_Z5,
     .exit_trips = EXIT_TRIPS_Z5, .exit_cycles = EXIT_CYCLES_Z5, .chain_loads = CHAIN_LOADS_Z5,
     .moves_take_alu = true, .stores_take_alu = true, .has_avx512 = true, .rows = zen5_rows,
     .nrows = MT_ARRAY_LEN(zen5_rows)},
    {.family = 25, .model = 1, .core = "Zen 3", .tsc_per_cycle = 0.7548, .tsc_hz = 2.445e9,
     .dispatch_width = 6, .loads_per_cycle = 3, .stores_per_cycle = 1, .taken_per_cycle = 1,
     .probe_cycles = 2, .fetch_window = 64, .rows = zen3_rows, .nrows = MT_ARRAY_LEN(zen3_rows)},
    /* Zen 4's server (17: Genoa, 160: Bergamo) and client (97, 116, 117,
     * 120) models; after Zen 3, whose profile the family's other models
     * get. */
    {.family = 25, .model = 17, .core = "Zen 4", .tsc_per_cycle = 0.7020, .tsc_hz = 2.596e9,
     .dispatch_width = 5.91, .loads_per_cycle = 3, .stores_per_cycle = 1, .taken_per_cycle = 1,
     .probe_cycles = 1.657, .fetch_window = 64, .chain_loads = 49.5, .call_ret_cycles = 4.104,
     .moves_take_alu = true, .has_avx512 = true, .fuse_alu_jcc = true, .loop_ops = zen4_loop_ops,
     .rows = zen4_rows, .nrows = MT_ARRAY_LEN(zen4_rows), .same_core = {160, 97, 116, 117, 120}},
    {.family = 6, .model = 207, .core = "Golden Cove", .vendor = "Intel Xeon",
     .tsc_per_cycle = 0.7531, .tsc_hz = 2.1e9, .dispatch_width = 6, .loads_per_cycle = 3,
     .stores_per_cycle = 1, .taken_per_cycle = 1, .probe_cycles = 1, .fetch_window = 0,
     .exit_trips = 128, .exit_cycles = 38, .chain_loads = 51, .has_avx512 = true,
     .fold_latency = 0.174, .fold_shift_cycles = 1.82, .cmov_data_cycles = 1.85,
     .fuse_alu_jcc = true, .loop_ops = golden_cove_loop_ops, .rows = golden_cove_rows,
     .nrows = MT_ARRAY_LEN(golden_cove_rows)},
    /* Skylake's core is also the client Skylake (78, 94), Kaby, Coffee and
     * Whiskey Lake (142, 158) and Comet Lake (165, 166) one, without
     * AVX-512: nearer to this than to Golden Cove (no folding, 4 ALUs). */
    {.family = 6, .model = 85, .core = "Skylake-SP", .vendor = "Intel Xeon",
     .tsc_per_cycle = 0.9272, .tsc_hz = 2.5e9, .dispatch_width = 4, .loads_per_cycle = 2,
     .stores_per_cycle = 1, .taken_per_cycle = 1, .probe_cycles = 1.418, .fetch_window = 64,
     .taken_alu_cycles = 0.254, .divide_loop_cycles = 1.959, .jcc_boundary_cycles = 0.997,
     .exit_trips = 64, .exit_cycles = 20.9, .chain_loads = 20.9,
     .has_avx512 = true, .fuse_alu_jcc = true, .loop_ops = skylake_loop_ops,
     .rows = skylake_rows, .nrows = MT_ARRAY_LEN(skylake_rows),
     .same_core = {78, 94, 142, 158, 165, 166}},
};

static bool same_core(const shipped_profile *sp, int model)
{
    for (const int *m = sp->same_core; *m; m++)
        if (*m == model)
            return true;
    return false;
}

static const shipped_profile *shipped_for(int family, int model)
{
    for (size_t i = 0; i < MT_ARRAY_LEN(shipped); i++)
        if (shipped[i].family == family &&
            (shipped[i].model == model || same_core(&shipped[i], model)))
            return &shipped[i];
    for (size_t i = 0; i < MT_ARRAY_LEN(shipped); i++)
        if (shipped[i].family == family)
            return &shipped[i];
    return &shipped[0];
}

void mt_machine_shipped(mt_machine *m, int family, int model)
{
    const shipped_profile *sp = shipped_for(family, model);
    memset(m, 0, sizeof *m);
    m->version = MT_MACHINE_PROFILE_VERSION;
    const char *vendor = sp->vendor ? sp->vendor : "AMD EPYC";
    snprintf(m->cpu_model, sizeof m->cpu_model, "%s (family %d, model %d)", vendor, sp->family,
             sp->model);
    snprintf(m->source, sizeof m->source, "default (shipped, %s: %s family %d model %d)",
             sp->core, vendor, sp->family, sp->model);
    m->tsc_per_cycle = sp->tsc_per_cycle;
    m->tsc_hz = sp->tsc_hz;
    m->dispatch_width = sp->dispatch_width;
    m->loads_per_cycle = sp->loads_per_cycle;
    m->stores_per_cycle = sp->stores_per_cycle;
    m->taken_per_cycle = sp->taken_per_cycle;
    m->probe_cycles = sp->probe_cycles;
    m->fetch_window = sp->fetch_window;
    m->loop_split_ops = sp->loop_split_ops;
    m->loop_line_ops = sp->loop_line_ops;
    m->loop_overfull_cycles = sp->loop_overfull_cycles;
    m->taken_alu_cycles = sp->taken_alu_cycles;
    m->divide_loop_cycles = sp->divide_loop_cycles;
    m->jcc_boundary_cycles = sp->jcc_boundary_cycles;
    m->call_ret_cycles = sp->call_ret_cycles;
    m->exit_trips = sp->exit_trips;
    m->exit_cycles = sp->exit_cycles;
    m->chain_loads = sp->chain_loads;
    m->moves_take_alu = sp->moves_take_alu;
    m->stores_take_alu = sp->stores_take_alu;
    m->has_avx512 = sp->has_avx512;
    m->fold_latency = sp->fold_latency;
    m->fold_shift_cycles = sp->fold_shift_cycles;
    m->cmov_data_cycles = sp->cmov_data_cycles;
    m->fuse_alu_jcc = sp->fuse_alu_jcc;
    if (sp->loop_ops)
        memcpy(m->loop_ops_cycles, sp->loop_ops, sizeof m->loop_ops_cycles);
    for (size_t i = 0; i < sp->nrows; i++) {
        const default_row *r = &sp->rows[i];
        m->pipes[r->c] = r->pipes;
        memcpy(m->timing[r->c], r->t, sizeof r->t);
        m->bypass[r->c] = r->bypass;
    }
}

/* "model name", "cpu family" and "model" of the first CPU in /proc/cpuinfo
 * (empty strings when absent). */
static void read_cpuinfo(char *name, size_t nname, char *family, char *model, size_t nnum)
{
    name[0] = family[0] = model[0] = '\0';
    FILE *fp = fopen("/proc/cpuinfo", "r");
    if (!fp)
        return;
    char line[512];
    while (fgets(line, sizeof line, fp) && !(name[0] && family[0] && model[0])) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        v[strcspn(v, "\n")] = '\0';
        if (!strncmp(line, "model name", 10) && !name[0])
            snprintf(name, nname, "%s", v);
        else if (!strncmp(line, "cpu family", 10) && !family[0])
            snprintf(family, nnum, "%s", v);
        else if (!strncmp(line, "model\t", 6) && !model[0])
            snprintf(model, nnum, "%s", v);
    }
    fclose(fp);
}

void mt_machine_default(mt_machine *m)
{
    char name[256], family[32], model[32];
    read_cpuinfo(name, sizeof name, family, model, sizeof family);
    mt_machine_shipped(m, family[0] ? atoi(family) : -1, model[0] ? atoi(model) : -1);
}

bool mt_machine_shipped_for_this_cpu(mt_machine *m)
{
    char name[256], family[32], model[32];
    read_cpuinfo(name, sizeof name, family, model, sizeof family);
    int f = family[0] ? atoi(family) : -1, mo = model[0] ? atoi(model) : -1;
    const shipped_profile *sp = shipped_for(f, mo);
    if (sp->family != f || sp->model != mo)
        return false;
    mt_machine_shipped(m, f, mo);
    return true;
}

/* The model name and, since one name can cover several generations (a KVM
 * guest's "AMD EPYC" was a Zen 5, then a Zen 3, then a Zen 5 again here),
 * the family and model numbers: "AMD EPYC (family 25, model 1)". */
void mt_machine_cpu_model(char *buf, size_t n)
{
    char name[256], family[32], model[32];
    read_cpuinfo(name, sizeof name, family, model, sizeof family);
    if (name[0] && family[0] && model[0])
        snprintf(buf, n, "%s (family %s, model %s)", name, family, model);
    else
        snprintf(buf, n, "%s", name[0] ? name : "unknown");
}

char *mt_machine_profile_path(const char *cpu_model)
{
    char key[128];
    size_t k = 0;
    for (const char *s = cpu_model; *s && k + 1 < sizeof key; s++)
        key[k++] = isalnum((unsigned char)*s) ? (char)tolower((unsigned char)*s) : '-';
    key[k] = '\0';
    const char *x = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    if (x && x[0] == '/')
        return mt_xasprintf("%s/mtool/machine-%s.txt", x, key);
    return mt_xasprintf("%s/.config/mtool/machine-%s.txt", home && home[0] ? home : "/tmp", key);
}

/* The measured levels, one `latency LEVEL CYCLES SPREAD% BYTES STREAM` line each. */
static void write_latencies(FILE *fp, const mt_machine *m)
{
    fprintf(fp, "# latency: level, core cycles a dependent load, spread %% over the chases, "
                "bytes chased, core cycles a line walked in address order\n");
    for (int l = 0; l < MT_MEM_LEVELS; l++)
        if (m->mem_latency[l].cycles > 0)
            fprintf(fp, "latency %s %.3f %.1f %.0f %.3f\n", mt_mem_level_name(l),
                    m->mem_latency[l].cycles, m->mem_latency[l].spread_pct,
                    m->mem_latency[l].bytes, m->mem_latency[l].stream_cycles);
    if (m->mem_parallelism > 0)
        fprintf(fp, "# misses to memory in flight at once\nmem_parallelism %.2f\n",
                m->mem_parallelism);
    if (m->tlb_walk_cycles > 0)
        fprintf(fp, "# the latencies above without page walks (chased on huge pages: 1, or a walk's "
                    "share subtracted: 0); the cycles a walk adds\nlatency_huge_pages %d\n"
                    "tlb_walk_cycles %.1f\n", m->latency_huge_pages, m->tlb_walk_cycles);
    for (int l = 0; l < MT_TLB_LEVELS; l++)
        if (m->tlb[l].entries)
            fprintf(fp, "%stlb %d %" PRIu32 " %" PRIu32 "\n",
                    l ? "" : "# data TLB, 4 KiB pages (cpuid): level, entries, ways\n", l + 1,
                    m->tlb[l].entries, m->tlb[l].ways);
}

/* How many of the calibration's figures quiet samples confirmed, and a
 * line for each that fell back (calibrate.c): its fallback, its benchmark. */
static void write_confirmation(FILE *fp, const mt_machine *m)
{
    if (m->calibration_confirmed + m->calibration_fallbacks == 0)
        return;
    fprintf(fp, "# calibration figures quiet samples confirmed; each that fell back: how, benchmark\n"
                "calibration_confirmed %.0f\n", m->calibration_confirmed);
    for (size_t i = 0; i < mt_calibration_benches(); i++)
        if (m->calibration_how[i] != MT_CONFIRMED)
            fprintf(fp, "fallback %s %s\n", mt_confirm_name(m->calibration_how[i]),
                    mt_calibration_bench_name(i));
}

void mt_machine_write(FILE *fp, const mt_machine *m)
{
    fprintf(fp, "# mtool machine profile (mtool calibrate); cycles are core cycles\n");
    fprintf(fp, "version %d\ncpu_model %s\nsource %s\n", m->version, m->cpu_model, m->source);
    fprintf(fp, "tsc_per_cycle %.4f\ntsc_hz %.0f\n", m->tsc_per_cycle, m->tsc_hz);
    fprintf(fp, "dispatch_width %.2f\nloads_per_cycle %.2f\nstores_per_cycle %.2f\n",
            m->dispatch_width, m->loads_per_cycle, m->stores_per_cycle);
    fprintf(fp, "taken_per_cycle %.2f\nprobe_cycles %.3f\nhas_avx512 %d\nfetch_window %.0f\n"
                "moves_take_alu %d\n", m->taken_per_cycle, m->probe_cycles, m->has_avx512,
            m->fetch_window, m->moves_take_alu);
    fprintf(fp, "loop_split_ops %.0f\nloop_line_ops %.0f\nloop_overfull_cycles %.2f\n",
            m->loop_split_ops, m->loop_line_ops, m->loop_overfull_cycles);
    fprintf(fp, "stores_take_alu %d\ntaken_alu_cycles %.3f\nexit_trips %.0f\nexit_cycles %.1f\n"
                "chain_loads %.1f\n", m->stores_take_alu, m->taken_alu_cycles, m->exit_trips,
            m->exit_cycles, m->chain_loads);
    fprintf(fp, "fold_latency %.3f\nfold_shift_cycles %.3f\ncmov_data_cycles %.3f\nfuse_alu_jcc %d\n",
            m->fold_latency, m->fold_shift_cycles, m->cmov_data_cycles, m->fuse_alu_jcc);
    fprintf(fp, "divide_loop_cycles %.3f\njcc_boundary_cycles %.3f\ncall_ret_cycles %.3f\n",
            m->divide_loop_cycles, m->jcc_boundary_cycles, m->call_ret_cycles);
    fprintf(fp, "# cycles per iteration of a loop of N ops (none listed: no such bound)\n");
    for (int n = 1; n <= MT_LOOP_OPS_MAX; n++)
        if (m->loop_ops_cycles[n] > 0)
            fprintf(fp, "loop_ops %d %.3f\n", n, m->loop_ops_cycles[n]);
    fprintf(fp, "# class pipes(bits: alu0-5 agu0-3 fp0-5) then latency/rthroughput at 128 256 512\n");
    for (int c = 0; c < MT_IC_COUNT; c++) {
        fprintf(fp, "class %s 0x%03x", class_names[c], m->pipes[c]);
        for (int w = 0; w < MT_W_COUNT; w++)
            fprintf(fp, " %.3f %.3f", m->timing[c][w].latency, m->timing[c][w].rthroughput);
        fputc('\n', fp);
    }
    fprintf(fp, "# class, then extra cycles before another class's instruction sees its result\n");
    for (int c = 0; c < MT_IC_COUNT; c++)
        if (m->bypass[c] > 0)
            fprintf(fp, "bypass %s %.3f\n", class_names[c], m->bypass[c]);
    fprintf(fp, "# how busy the other CPUs were while calibrate measured, %% of their time\n"
                "calibration_busy_pct %.0f\n", m->calibration_busy_pct);
    write_confirmation(fp, m);
    write_latencies(fp, m);
    if (m->check_kernels > 0)
        fprintf(fp, "# the model's self-check: kernels, median |error| %%, worst error %% and its kernel\n"
                    "check_kernels %.0f\ncheck_median_error_pct %.2f\ncheck_worst_error_pct %.2f\n"
                    "check_worst_kernel %s\n", m->check_kernels, m->check_median_error_pct,
                m->check_worst_error_pct, m->check_worst_kernel[0] ? m->check_worst_kernel : "none");
}

int mt_machine_check(const mt_machine *m, mt_error *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out) {
        mt_error_set(err, "cannot check a machine profile: %s", strerror(errno));
        return -1;
    }
    mt_machine_write(out, m);
    fclose(out);
    FILE *in = fmemopen(text, len, "r");
    mt_machine *read_back = mt_xmalloc(sizeof *read_back);
    int rc = -1;
    if (!in)
        mt_error_set(err, "cannot check a machine profile: %s", strerror(errno));
    else
        rc = mt_machine_parse(in, "the measured profile", read_back, err);
    if (in)
        fclose(in);
    free(read_back);
    free(text);
    return rc;
}

int mt_machine_save(const mt_machine *m, const char *path, mt_error *err)
{
    if (mt_machine_check(m, err) != 0)
        return -1;
    char *dir = mt_xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        char *parent = mt_xstrdup(dir), *pslash = strrchr(parent, '/');
        if (pslash) {
            *pslash = '\0';
            mkdir(parent, 0777);
        }
        free(parent);
        mkdir(dir, 0777);
    }
    free(dir);
    mt_outfile out;
    if (mt_outfile_open(&out, path, err) != 0)
        return -1;
    mt_machine_write(out.fp, m);
    return mt_outfile_commit(&out, err);
}

static int class_by_name(const char *name)
{
    for (int c = 0; c < MT_IC_COUNT; c++)
        if (strcmp(name, class_names[c]) == 0)
            return c;
    return -1;
}

/* The lines of a profile.  Each parser returns NULL when the line is valid,
 * else what is wrong with it (the caller names the file, line, key and
 * value). */
static const char *parse_class_line(const char *rest, mt_machine *m)
{
    char name[32];
    unsigned pipes;
    double v[2 * MT_W_COUNT];
    if (sscanf(rest, "%31s %x %lf %lf %lf %lf %lf %lf", name, &pipes, &v[0], &v[1], &v[2], &v[3],
               &v[4], &v[5]) != 8)
        return "expected NAME PIPES and a latency and reciprocal throughput at each of 3 widths";
    int c = class_by_name(name);
    if (c < 0)
        return "no such instruction class";
    if (pipes >= (1u << MT_PIPE_COUNT))
        return "pipes outside the 16 the model has";
    for (int w = 0; w < MT_W_COUNT; w++)
        if (!(v[2 * w] >= 0 && v[2 * w] < 1000 && v[2 * w + 1] > 0 && v[2 * w + 1] < 1000))
            return "latency outside 0..1000 or reciprocal throughput outside (0, 1000) cycles";
    m->pipes[c] = (uint16_t)pipes;
    for (int w = 0; w < MT_W_COUNT; w++)
        m->timing[c][w] = (mt_timing){v[2 * w], v[2 * w + 1]};
    return NULL;
}

static const char *parse_bypass_line(const char *rest, mt_machine *m)
{
    char name[32];
    double v;
    if (sscanf(rest, "%31s %lf", name, &v) != 2)
        return "expected CLASS CYCLES";
    int c = class_by_name(name);
    if (c < 0)
        return "no such instruction class";
    if (!(v >= 0 && v < 100))
        return "outside 0..100 cycles";
    m->bypass[c] = v;
    return NULL;
}

static const char *parse_loop_ops_line(const char *rest, mt_machine *m)
{
    int n;
    double v;
    char extra;
    if (sscanf(rest, "%d %lf %c", &n, &v, &extra) != 2)
        return "expected OPS CYCLES";
    if (n < 1 || n > MT_LOOP_OPS_MAX)
        return "ops outside 1..24";
    if (!(v > 0 && v < 100))
        return "cycles outside (0, 100)";
    m->loop_ops_cycles[n] = v;
    return NULL;
}

/* `latency LEVEL CYCLES SPREAD BYTES [STREAM]`: a dependent load takes at
 * least a cycle and, even across a socket, well under 5000, and no fewer
 * cycles than at a shallower level of the profile; no level is
 * chased over less than a KiB or more than a TiB; a line walked in order
 * takes more than 0 and at most what a dependent load takes (profiles
 * before it was measured have no STREAM). */
static const char *parse_latency_line(const char *rest, mt_machine *m)
{
    char level[16], extra;
    double cycles, spread, bytes, stream = 0;
    int n = sscanf(rest, "%15s %lf %lf %lf %lf %c", level, &cycles, &spread, &bytes, &stream,
                   &extra);
    if (n != 4 && n != 5)
        return "expected LEVEL CYCLES SPREAD BYTES [STREAM]";
    int l = 0;
    while (l < MT_MEM_LEVELS && strcmp(level, mt_mem_level_name(l)) != 0)
        l++;
    if (l == MT_MEM_LEVELS)
        return "level not L1, L2, L3, L4 or memory";
    if (!(cycles >= 1 && cycles < 5000))
        return "cycles outside [1, 5000)";
    if (!(spread >= 0 && spread <= 1e4))
        return "spread outside [0, 10000] %";
    if (!(bytes >= 1024 && bytes <= 1099511627776.0))
        return "bytes outside [1 KiB, 1 TiB]";
    if (n == 5 && !(stream > 0 && stream <= cycles))
        return "stream cycles outside (0, CYCLES]";
    for (int k = 0; k < MT_MEM_LEVELS; k++)
        if (m->mem_latency[k].cycles > 0 && k != l &&
            (k < l ? cycles < m->mem_latency[k].cycles : cycles > m->mem_latency[k].cycles))
            return k < l ? "cycles below a shallower level's (a deeper level is never faster)"
                         : "cycles above a deeper level's (a deeper level is never faster)";
    m->mem_latency[l] = (mt_mem_latency){cycles, spread, bytes, stream};
    return NULL;
}

/* `tlb LEVEL ENTRIES WAYS`: level 1 or 2, at most 65536 entries in sets of
 * WAYS (a divisor of ENTRIES); level 2 only after level 1. */
static const char *parse_tlb_line(const char *rest, mt_machine *m)
{
    int level;
    unsigned entries, ways;
    char extra;
    if (sscanf(rest, "%d %u %u %c", &level, &entries, &ways, &extra) != 3)
        return "expected LEVEL ENTRIES WAYS";
    if (level < 1 || level > MT_TLB_LEVELS)
        return "level not 1 or 2";
    if (entries < 1 || entries > 65536)
        return "entries outside 1..65536";
    if (ways < 1 || entries % ways)
        return "ways not a divisor of the entries";
    if (level == 2 && !m->tlb[0].entries)
        return "level 2 before level 1";
    m->tlb[level - 1] = (mt_tlb_level){entries, ways};
    return NULL;
}

/* `fallback HOW BENCHMARK`: a calibration figure no quiet samples
 * confirmed, HOW "repeated" or "fastest", a benchmark listed once. */
static const char *parse_fallback_line(const char *rest, mt_machine *m)
{
    const char *sp = strchr(rest, ' ');
    if (!sp)
        return "expected HOW BENCHMARK";
    mt_confirm how = MT_CONFIRMED;
    for (mt_confirm h = MT_FELL_BACK_REPEATED; h <= MT_FELL_BACK_FASTEST; h++)
        if ((size_t)(sp - rest) == strlen(mt_confirm_name(h)) &&
            !strncmp(rest, mt_confirm_name(h), (size_t)(sp - rest)))
            how = h;
    if (how == MT_CONFIRMED)
        return "not a fallback (repeated or fastest)";
    int i = mt_calibration_bench_index(sp + 1);
    if (i < 0)
        return "not a calibration benchmark";
    if (m->calibration_how[i] != MT_CONFIRMED)
        return "benchmark listed twice";
    m->calibration_how[i] = (uint8_t)how;
    m->calibration_fallbacks++;
    return NULL;
}

/* A numeric key: where it goes and the values a real machine can have. */
typedef struct {
    const char *key;
    size_t offset;   /* of a double in mt_machine, or of a bool when is_bool */
    double lo, hi;
    bool is_bool;
} number_key;

#define NUM(k, lo, hi) {#k, offsetof(mt_machine, k), lo, hi, false}
#define FLAG(k) {#k, offsetof(mt_machine, k), 0, 1, true}
static const number_key number_keys[] = {
    NUM(tsc_per_cycle, 0.05, 20), NUM(tsc_hz, 1e6, 1e11), NUM(dispatch_width, 1, 32),
    NUM(loads_per_cycle, 0.5, 16), NUM(stores_per_cycle, 0.25, 16), NUM(taken_per_cycle, 0.1, 8),
    NUM(probe_cycles, 0, 100), NUM(fetch_window, 0, 4096), NUM(loop_split_ops, 0, 64),
    NUM(loop_line_ops, 0, 64), NUM(loop_overfull_cycles, 0, 64), NUM(taken_alu_cycles, 0, 10),
    NUM(divide_loop_cycles, 0, 50), NUM(jcc_boundary_cycles, 0, 50), NUM(call_ret_cycles, 0, 50),
    NUM(exit_trips, 0, 1e6), NUM(exit_cycles, 0, 1000), NUM(chain_loads, 0, 1000),
    NUM(fold_latency, 0, 10), NUM(fold_shift_cycles, 0, 20), NUM(cmov_data_cycles, 0, 20),
    FLAG(stores_take_alu), FLAG(moves_take_alu), FLAG(has_avx512), FLAG(fuse_alu_jcc),
    /* the self-check: errors of -100% (nothing predicted) up to 1000x */
    NUM(check_kernels, 0, 1000), NUM(check_median_error_pct, 0, 1e5),
    NUM(check_worst_error_pct, -100, 1e5), NUM(calibration_busy_pct, 0, 100),
    NUM(calibration_confirmed, 0, MT_CALIBRATION_BENCHES_MAX),
    NUM(mem_parallelism, 0, 64),
    /* a nested (2D) walk under a hypervisor reads up to 24 entries */
    NUM(tlb_walk_cycles, 0, 5000), FLAG(latency_huge_pages),
};

static const char *parse_number_key(const number_key *k, const char *rest, mt_machine *m)
{
    char *end;
    double v = strtod(rest, &end);
    while (*end == ' ')
        end++;
    if (end == rest || *end)
        return "not a number";
    if (!(v >= k->lo && v <= k->hi))
        return k->is_bool ? "not 0 or 1" : "outside the range a machine can have";
    if (k->is_bool && v != 0 && v != 1)
        return "not 0 or 1";
    char *field = (char *)m + k->offset;
    if (k->is_bool)
        *(bool *)field = v != 0;
    else
        *(double *)field = v;
    return NULL;
}

static const char *parse_line(const char *key, const char *rest, mt_machine *m)
{
    if (!strcmp(key, "cpu_model"))
        return snprintf(m->cpu_model, sizeof m->cpu_model, "%s", rest) >= 0 ? NULL : "unreadable";
    if (!strcmp(key, "source"))
        return snprintf(m->source, sizeof m->source, "%s", rest) >= 0 ? NULL : "unreadable";
    if (!strcmp(key, "version")) {
        char *end;
        long v = strtol(rest, &end, 10);
        if (end == rest || *end || v < 1 || v > 1000)
            return "not a version number";
        m->version = (int)v;
        return NULL;
    }
    if (!strcmp(key, "check_worst_kernel")) {
        size_t n = strlen(rest);
        if (n == 0 || n >= sizeof m->check_worst_kernel ||
            strspn(rest, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != n)
            return "not a kernel name (letters, digits and _, at most 31)";
        memcpy(m->check_worst_kernel, rest, n + 1);
        return NULL;
    }
    if (!strcmp(key, "class"))
        return parse_class_line(rest, m);
    if (!strcmp(key, "bypass"))
        return parse_bypass_line(rest, m);
    if (!strcmp(key, "loop_ops"))
        return parse_loop_ops_line(rest, m);
    if (!strcmp(key, "latency"))
        return parse_latency_line(rest, m);
    if (!strcmp(key, "tlb"))
        return parse_tlb_line(rest, m);
    if (!strcmp(key, "fallback"))
        return parse_fallback_line(rest, m);
    for (size_t i = 0; i < MT_ARRAY_LEN(number_keys); i++)
        if (!strcmp(key, number_keys[i].key))
            return parse_number_key(&number_keys[i], rest, m);
    return "unknown key";
}

int mt_machine_parse(FILE *fp, const char *name, mt_machine *m, mt_error *err)
{
    mt_machine_default(m);
    /* A profile lists every bypass delay it measured: none listed is none
     * measured (profiles from before they were calibrated included). */
    memset(m->bypass, 0, sizeof m->bypass);
    memset(m->loop_ops_cycles, 0, sizeof m->loop_ops_cycles); /* likewise */
    memset(m->mem_latency, 0, sizeof m->mem_latency);          /* likewise */
    memset(m->tlb, 0, sizeof m->tlb);                          /* likewise */
    m->version = 1; /* the first profiles had no version line */
    char line[1024];
    int lineno = 0;
    while (fgets(line, sizeof line, fp)) {
        lineno++;
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == '#' || line[0] == '\0')
            continue;
        char *sp = strchr(line, ' ');
        const char *why = "expected KEY VALUE";
        if (sp) {
            *sp = '\0';
            why = parse_line(line, sp + 1, m);
        }
        if (why) {
            char key[64], value[128];
            mt_escape_text(key, sizeof key, line);
            mt_escape_text(value, sizeof value, sp ? sp + 1 : "");
            mt_error_set(err, "%s:%d: machine profile key '%s' value '%s': %s", name, lineno, key,
                         value, why);
            return -1;
        }
    }
    return 0;
}

int mt_machine_read(const char *path, mt_machine *m, mt_error *err)
{
    FILE *fp = mt_fopen_regular(path, err);
    if (!fp)
        return -1;
    int rc = mt_machine_parse(fp, path, m, err);
    fclose(fp);
    return rc;
}

int mt_machine_load(mt_machine *m, bool *calibrated, mt_error *err)
{
    char model[128];
    mt_machine_cpu_model(model, sizeof model);
    char *path = mt_machine_profile_path(model);
    *calibrated = access(path, F_OK) == 0;
    int rc = 0;
    if (*calibrated)
        rc = mt_machine_read(path, m, err);
    else
        mt_machine_default(m);
    free(path);
    return rc;
}
