/* costmodel/calibrate.c — `mtool calibrate`: measure this machine with the
 * TSC alone.
 *
 * Every microbenchmark is a loop whose body repeats one instruction pattern
 * REPS times: a chain of dependent instructions (latency) or independent
 * ones over many registers (reciprocal throughput).  Loops are inline asm
 * compiled into mtool rather than machine code generated at run time: the
 * assembler checks every encoding, no page is ever writable and executable
 * (hardened kernels and SELinux refuse that), and the set of instruction
 * classes is fixed by the model anyway.  AVX-512 bodies are compiled with a
 * target attribute and run only when CPUID reports the feature.
 *
 * The TSC does not tick at the core clock (the core runs faster or slower,
 * and its clock moves with load), so each sample is bracketed by two
 * measurements of the clock reference (clock_reference: a dependent `imul
 * %reg,%reg` chain, 3 cycles an instruction); a sample counts only when both
 * agree within 1.5%, which rejects clock changes and preemption.  The
 * reference is chosen for what no core shortcuts: a dependent `add
 * $1,%reg` is folded at rename on Intel's Golden Cove family (two to six a
 * cycle), so it is no clock there; an imul has no such trick on any x86-64
 * core of the last decade.  Before anything else the calibration checks the
 * imul against two independent references (mt_clock_check) and refuses to
 * measure with a clock they contradict.  The vCPU shares its physical core
 * with other threads (measured on a Zen 5: independent adds take 0.25
 * cycles each at best, 0.38 in the median sample while a neighbour runs),
 * and the model predicts the core running the program alone: so two
 * probes around every sample tell whether the core was this thread's
 * alone, and a figure is the fastest value that such quiet samples repeat
 * (mt_repeated_figure); one that none repeat is measured again when the
 * core is quiet, and still none, no profile is written. */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "costmodel.h"
#include "internal.h"

#define REPS "40"
#define NREPS 40.0

typedef void (*bench_fn)(long iters, void *buf);

/* One asm loop: `pre` once, then `iters` times the body repeated REPS times. */
#define LOOP_PRE(pre, body, ...)                                                             \
    __asm__ volatile(pre "\n1:\n\t.rept " REPS "\n\t" body "\n\t.endr\n\tdec %0\n\tjnz 1b"    \
                     : "+c"(iters)                                                           \
                     : "D"(buf)                                                              \
                     : "memory", "cc", ##__VA_ARGS__)
#define LOOP(body, ...) LOOP_PRE("", body, ##__VA_ARGS__)

#define GPRS "rax", "rbx", "rdx", "rsi", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"
#define XMMS "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", \
             "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"

#define IND10(op) op " %%r8\n\t" op " %%r9\n\t" op " %%r10\n\t" op " %%r11\n\t" op " %%r12\n\t" \
                  op " %%r13\n\t" op " %%r14\n\t" op " %%r15\n\t" op " %%rsi\n\t" op " %%rbx"

/* Two-operand integer form with the same register as source and
 * destination, over ten registers. */
#define IND10_RR(op) op " %%r8,%%r8\n\t" op " %%r9,%%r9\n\t" op " %%r10,%%r10\n\t" op      \
                     " %%r11,%%r11\n\t" op " %%r12,%%r12\n\t" op " %%r13,%%r13\n\t" op     \
                     " %%r14,%%r14\n\t" op " %%r15,%%r15\n\t" op " %%rsi,%%rsi\n\t" op " %%rbx,%%rbx"

/* Twelve independent instances of the pattern P(n) over registers 4..15. */
#define V12(P) P(4) "\n\t" P(5) "\n\t" P(6) "\n\t" P(7) "\n\t" P(8) "\n\t" P(9) "\n\t" \
               P(10) "\n\t" P(11) "\n\t" P(12) "\n\t" P(13) "\n\t" P(14) "\n\t" P(15)

/* Vector registers hold 1.0 (doubles) so that add 0, multiply and divide by
 * 1, sqrt and FMA keep every value normal; ymm3 holds 1.0 as floats, the
 * divisor of single-precision divides (the halves of a double 1.0 are the
 * floats 0 and 1.875: dividing by the 0 made NaNs, 210 cycles a vdivps on
 * the Xeon family 6 model 207). */
static void set_vectors_one(void)
{
    __asm__ volatile("mov $0x3ff0000000000000, %%rax\n\tvmovq %%rax, %%xmm0\n\t"
                     "vpbroadcastq %%xmm0, %%ymm0\n\t"
                     "vmovapd %%ymm0, %%ymm1\n\tvxorpd %%ymm2, %%ymm2, %%ymm2\n\t"
                     "mov $0x3f800000, %%eax\n\tvmovd %%eax, %%xmm3\n\tvbroadcastss %%xmm3, %%ymm3\n\t"
                     "vmovapd %%ymm0, %%ymm4\n\tvmovapd %%ymm0, %%ymm5\n\t"
                     "vmovapd %%ymm0, %%ymm6\n\tvmovapd %%ymm0, %%ymm7\n\tvmovapd %%ymm0, %%ymm8\n\t"
                     "vmovapd %%ymm0, %%ymm9\n\tvmovapd %%ymm0, %%ymm10\n\tvmovapd %%ymm0, %%ymm11\n\t"
                     "vmovapd %%ymm0, %%ymm12\n\tvmovapd %%ymm0, %%ymm13\n\tvmovapd %%ymm0, %%ymm14\n\t"
                     "vmovapd %%ymm0, %%ymm15" ::: "rax", XMMS);
}

/* ---- the benchmarks -------------------------------------------------------- */

/* The clock references (mt_clock_check): dependent chains of a register-
 * register add (1 cycle), an imul (3) and an FP multiply (a latency the
 * check establishes: 3 on Zen, 4 on Golden Cove).  The FP chain keeps the
 * value 1.0 (set_vectors_one). */
static void ref_add_rr(long iters, void *buf) { LOOP("add %%rax, %%rax", "rax"); }
static void ref_imul(long iters, void *buf) { LOOP("imul %%rax, %%rax", "rax"); }
static void ref_fmul(long iters, void *buf) { LOOP("vmulsd %%xmm1, %%xmm4, %%xmm4", XMMS); }
/* ALU work is register-register: an add of an immediate may be folded at
 * rename and take no ALU (Intel's Golden Cove family), which would make
 * every ALU-bound figure below too fast. */
static void alu_tp(long iters, void *buf) { LOOP(IND10_RR("add"), GPRS); }
/* Simple lea as base + index: `lea 1(%rax),%rax` is folded at rename on
 * Intel's Golden Cove family (0.17 cycles; the model charges the folded
 * forms fold_latency), `lea (%rax,%rax),%rax` is not (1.0). */
static void lea_lat(long iters, void *buf) { LOOP("lea (%%rax,%%rax), %%rax", "rax"); }
static void lea_tp(long iters, void *buf)
{
    LOOP("lea (%%r8,%%r8),%%r8\n\tlea (%%r9,%%r9),%%r9\n\tlea (%%r10,%%r10),%%r10\n\t"
         "lea (%%r11,%%r11),%%r11\n\tlea (%%r12,%%r12),%%r12\n\tlea (%%r13,%%r13),%%r13\n\t"
         "lea (%%r14,%%r14),%%r14\n\tlea (%%r15,%%r15),%%r15",
         GPRS);
}
static void lea3_lat(long iters, void *buf) { LOOP("lea 1(%%rax,%%rax,2), %%rax", "rax"); }
static void lea3_tp(long iters, void *buf)
{
    LOOP("lea 1(%%r8,%%r8,2),%%r8\n\tlea 1(%%r9,%%r9,2),%%r9\n\tlea 1(%%r10,%%r10,2),%%r10\n\t"
         "lea 1(%%r11,%%r11,2),%%r11\n\tlea 1(%%r12,%%r12,2),%%r12\n\tlea 1(%%r13,%%r13,2),%%r13\n\t"
         "lea 1(%%r14,%%r14,2),%%r14\n\tlea 1(%%r15,%%r15,2),%%r15",
         GPRS);
}
static void shift_lat(long iters, void *buf) { LOOP("rol $1, %%rax", "rax"); }
/* Throughput by immediate counts other than 1, as compilers emit them: the
 * short `rol $1` form is two ops on Intel's cores (1.04 cycles each on the
 * Xeon family 6 model 207, against 0.5 for `shr $3`). */
static void shift_tp(long iters, void *buf) { LOOP(IND10("shr $3,"), GPRS); }
static void imul_lat(long iters, void *buf) { LOOP("imul %%rax, %%rax", "rax"); }
static void imul_tp(long iters, void *buf) { LOOP(IND10_RR("imul"), GPRS); }
/* Through the high half (rdx), which is what compilers use it for (division
 * by a constant): the copy back to rax is renamed.  The low half is
 * faster on Intel (3 cycles against 4 on Golden Cove). */
static void mulwide_lat(long iters, void *buf)
{
    LOOP_PRE("mov $3, %%esi", "mul %%rsi\n\tmov %%rdx, %%rax", "rax", "rdx", "rsi");
}
static void cmov_lat(long iters, void *buf) { LOOP_PRE("xor %%edx, %%edx", "cmp %%rax, %%rdx\n\tcmovl %%rdx, %%rax", "rax", "rdx"); }
/* rax = (rax / 3) | 2^40 keeps the dividend near 2^41 (typical magnitudes);
 * the `or` adds one cycle, subtracted below. */
#define DIV_PRE "mov $3, %%r8d\n\tmov $1, %%r9d\n\tshl $40, %%r9\n\tmov %%r9, %%rax"
static void div64_lat(long iters, void *buf)
{
    LOOP_PRE(DIV_PRE, "xor %%edx, %%edx\n\tdiv %%r8\n\tor %%r9, %%rax", "rax", "rdx", "r8", "r9");
}
static void div64_tp(long iters, void *buf)
{
    LOOP_PRE(DIV_PRE, "mov %%r9, %%rax\n\txor %%edx, %%edx\n\tdiv %%r8", "rax", "rdx", "r8", "r9");
}
#define DIV32_PRE "mov $3, %%r8d\n\tmov $1, %%r9d\n\tshl $30, %%r9d\n\tmov %%r9d, %%eax"
static void div32_lat(long iters, void *buf)
{
    LOOP_PRE(DIV32_PRE, "xor %%edx, %%edx\n\tdiv %%r8d\n\tor %%r9d, %%eax", "rax", "rdx", "r8", "r9");
}
static void div32_tp(long iters, void *buf)
{
    LOOP_PRE(DIV32_PRE, "mov %%r9d, %%eax\n\txor %%edx, %%edx\n\tdiv %%r8d", "rax", "rdx", "r8", "r9");
}
/* One divide an iteration, with its loop control: iters x REPS iterations
 * (div32_tp's divides back to back hide what a loop's taken branch adds
 * to a microcoded divide). */
static void div32_loop(long iters, void *buf)
{
    __asm__ volatile("imul $" REPS ", %0, %0\n\t" DIV32_PRE "\n\t.p2align 6\n1:\n\t"
                     "mov %%r9d, %%eax\n\txor %%edx, %%edx\n\tdiv %%r8d\n\tdec %0\n\tjnz 1b"
                     : "+c"(iters)
                     : "D"(buf)
                     : "rax", "rdx", "r8", "r9", "cc");
}
static void bitcnt_tp(long iters, void *buf) { LOOP(IND10_RR("popcnt"), GPRS); }
static void bitcnt_lat(long iters, void *buf) { LOOP("popcnt %%rax, %%rax", "rax"); }
static void branch_nt_tp(long iters, void *buf)
{
    LOOP("test %%rsp, %%rsp\n\tjz .+2\n\ttest %%rsp, %%rsp\n\tjz .+2");
}
/* The smallest loop: one taken branch per iteration, iters x REPS of them;
 * aligned, so that it does not straddle a fetch window (see FETCH_LOOP). */
static void branch_taken_tp(long iters, void *buf)
{
    (void)buf;
    __asm__ volatile("imul $" REPS ", %0, %0\n\tjmp 1f\n\t.p2align 6\n1:\n\tdec %0\n\tjnz 1b"
                     : "+c"(iters) : : "cc");
}
/* A run of calls to a bare return: a call and its return a step (the
 * return address pushed below the red zone the caller may use). */
__asm__(".text\n\t.p2align 6\nmt_calibrate_ret:\n\tret\n");
static void call_ret_tp(long iters, void *buf)
{
    (void)buf;
    __asm__ volatile("sub $128, %%rsp\n\t.p2align 6\n1:\n\t.rept " REPS "\n\tcall mt_calibrate_ret\n\t"
                     ".endr\n\tdec %0\n\tjnz 1b\n\tadd $128, %%rsp"
                     : "+c"(iters) : : "cc", "memory");
}
/* Dispatch width: a nop and a zeroing xor each take a dispatch slot and no
 * pipe, but the AMD EPYC Zen 4 (family 25 model 17) passes nops for less
 * (11.8 a cycle; xors 5.9, as its loops of xors): the width is the slower
 * of the two. */
static void dispatch_tp(long iters, void *buf)
{
    LOOP("nopl 0(%%rax)\n\tnopl 0(%%rax)\n\tnopl 0(%%rax)\n\tnopl 0(%%rax)\n\t"
         "nopl 0(%%rax)\n\tnopl 0(%%rax)\n\tnopl 0(%%rax)\n\tnopl 0(%%rax)");
}
static void dispatch_xor_tp(long iters, void *buf)
{
    LOOP("xor %%r8d, %%r8d\n\txor %%r9d, %%r9d\n\txor %%r10d, %%r10d\n\txor %%r11d, %%r11d\n\t"
         "xor %%r12d, %%r12d\n\txor %%r13d, %%r13d\n\txor %%r14d, %%r14d\n\txor %%r15d, %%r15d",
         GPRS);
}

/* Renamed register moves: do they take an ALU issue slot (4 adds + 4 movs
 * as slow as 8 adds) or only a dispatch slot (as fast as 4 adds + 4 nops)? */
static void add_mov_tp(long iters, void *buf)
{
    LOOP("add %%r8, %%r8\n\tmov %%r8, %%r12\n\tadd %%r9, %%r9\n\tmov %%r9, %%r13\n\t"
         "add %%r10, %%r10\n\tmov %%r10, %%r14\n\tadd %%r11, %%r11\n\tmov %%r11, %%r15", GPRS);
}
static void add_nop_tp(long iters, void *buf)
{
    LOOP("add %%r8, %%r8\n\tnop\n\tadd %%r9, %%r9\n\tnop\n\tadd %%r10, %%r10\n\tnop\n\t"
         "add %%r11, %%r11\n\tnop", GPRS);
}

/* A two-instruction loop (9 bytes) at a chosen offset from a 64-byte
 * boundary: inside one 32-byte window, across a 32-byte boundary, across a
 * 64-byte one.  A loop whose body straddles the front end's fetch window
 * runs a cycle per window (ops = 1: iters x REPS iterations). */
#define FETCH_LOOP(skip)                                                                  \
    __asm__ volatile("imul $" REPS ", %0, %0\n\tjmp 2f\n\t.p2align 6\n\t.skip " skip     \
                     ", 0x90\n2:\n1:\n\tadd $1, %%rax\n\tdec %0\n\tjnz 1b"                  \
                     : "+c"(iters) : "D"(buf) : "rax", "cc")
/* Loops of k zero-idiom xors (3 bytes, no pipe) and dec, test, jnz (two
 * ops: the test fuses with the jnz, as the model counts them; GNU as keeps
 * the 2-byte jnz).  SPLIT(k): the xors fill the end of a 64-byte line, the
 * loop control starts the next one.  LINE(k): all in one line.  Zen 5 runs
 * SPLIT(k) at one iteration per cycle up to k = 6 and at two cycles from 7
 * on, LINE(k) at the dispatch width up to 12 ops and at 3 cycles above. */
#define OC_LOOP(skip, k)                                                                      \
    __asm__ volatile("imul $" REPS ", %0, %0\n\tjmp 1f\n\t.p2align 6\n\t.if " skip "\n\t"         \
                     ".skip " skip ", 0x90\n\t.endif\n"                                          \
                     "1:\n\t.rept " #k "\n\txor %%r8d, %%r8d\n\t.endr\n\t"                       \
                     "dec %0\n\ttest %0, %0\n\tjnz 1b"                                          \
                     : "+c"(iters) : "D"(buf) : "r8", "cc")
#define OC_SPLIT(k) static void oc_split##k(long iters, void *buf) { OC_LOOP("64-3*" #k, k); }
#define OC_LINE(k) static void oc_line##k(long iters, void *buf) { OC_LOOP("0", k); }
OC_SPLIT(4) OC_SPLIT(5) OC_SPLIT(6) OC_SPLIT(7) OC_SPLIT(8) OC_SPLIT(9) OC_SPLIT(10)
OC_LINE(8) OC_LINE(9) OC_LINE(10) OC_LINE(11) OC_LINE(12) OC_LINE(13) OC_LINE(14) OC_LINE(15)
enum { SPLIT_FIRST = 4, NSPLIT = 7, LINE_FIRST = 8, NLINE = 8 };

/* Loop exits: an inner loop of N iterations of two one-cycle add chains
 * and four zero-idiom xors (7 ops with the loop control, as small real
 * loops have), entered again and again; iters x REPS x 16 iterations in
 * all (ops 16: cycles per inner iteration).  The predictor learns the exit
 * of short loops; past some trip count (Zen 5: about 100) it mispredicts it
 * on every entry, 25-30 cycles each.  The body was the two adds alone (3
 * ops) until the Xeon family 6 model 207, which loses 80-96 cycles at the
 * exit of a loop that small but 30-50 with 7 or 25 ops (and the bench's
 * loops of 128 iterations and fewer, nothing). */
#define EXIT_LOOP(n)                                                                        \
    static void exit_loop##n(long iters, void *buf)                                         \
    {                                                                                       \
        (void)buf;                                                                          \
        long outer = iters * (long)NREPS * 16 / n;                                          \
        __asm__ volatile("jmp 1f\n\t.p2align 6\n1:\n\tmov $" #n ", %%r8d\n2:\n\t"           \
                         "add %%r9, %%r9\n\tadd %%r10, %%r10\n\txor %%r11d, %%r11d\n\t"          \
                         "xor %%r12d, %%r12d\n\txor %%r13d, %%r13d\n\txor %%r14d, %%r14d\n\t"        \
                         "dec %%r8\n\tjnz 2b\n\tdec %0\n\tjnz 1b"                                \
                         : "+c"(outer) : : "r8", "r9", "r10", "r11", "r12", "r13", "r14", "cc"); \
    }
EXIT_LOOP(32) EXIT_LOOP(64) EXIT_LOOP(96) EXIT_LOOP(128) EXIT_LOOP(160) EXIT_LOOP(192)
EXIT_LOOP(256) EXIT_LOOP(512) EXIT_LOOP(1024)
static const int exit_trips[] = {32, 64, 96, 128, 160, 192, 256, 512, 1024};
enum { NEXIT = 9 };

/* Loops of k independent adds, a counter and cmp/jne (a taken branch per
 * iteration, as real loops have): the branch costs more ALU time than an
 * add (Zen 5: about two adds' worth).  With a store of a GPR or of a
 * vector register: the GPR's data takes an ALU slot on the Zen 5. */
#define ADDS_LOOP(name, k, tail)                                                            \
    static void name(long iters, void *buf)                                                 \
    {                                                                                       \
        long n = iters * (long)NREPS;                                                       \
        __asm__ volatile("xor %%eax, %%eax\n\tjmp 1f\n\t.p2align 6\n1:\n\t.irp r," k "\n\t" \
                         "add %%\\r, %%\\r\n\t.endr\n\t" tail "add $1, %%rax\n\tcmp %0, %%rax\n\t"  \
                         "jne 1b"                                                           \
                         : "+c"(n) : "D"(buf) : GPRS, "xmm0", "memory", "cc");       \
    }
ADDS_LOOP(taken_adds4, "r8,r9,r10,r11", "")
ADDS_LOOP(taken_adds6, "r8,r9,r10,r11,r12,r13", "")
ADDS_LOOP(taken_adds8, "r8,r9,r10,r11,r12,r13,r14,r15", "")
ADDS_LOOP(adds6_store, "r8,r9,r10,r11,r12,r13", "mov %%r14, 64(%%rdi)\n\t")
ADDS_LOOP(adds6_vstore, "r8,r9,r10,r11,r12,r13", "movq %%xmm0, 64(%%rdi)\n\t")

/* Immediate folding (Intel's Golden Cove family): a dependent `add
 * $8,%reg` is folded at rename into the register's next consumer (0.17
 * cycles an add on the Xeon family 6 model 207: the dispatch width), but a
 * shift of the result waits for the constant to be added (an add then a
 * shift: 3.05 cycles, a shift alone 1). */
static void fold_lat(long iters, void *buf) { LOOP("add $8, %%rax", "rax"); }
static void shl_lat(long iters, void *buf) { LOOP("shl $2, %%rax", "rax"); }
static void fold_shl_lat(long iters, void *buf) { LOOP("add $8, %%rax\n\tshl $2, %%rax", "rax"); }
/* A cmov's data input: the flags come from an independent test (ZF clear:
 * the cmovz keeps rax).  Zen: one cycle; the Xeon family 6 model 207: 1.85. */
static void cmov_data_lat(long iters, void *buf)
{
    LOOP_PRE("xor %%edx, %%edx", "test %%rsp, %%rsp\n\tcmovz %%rdx, %%rax", "rax", "rdx");
}
/* Macro-fusion: six nops and a not-taken jz after a cmp/test (fused on
 * every core) or after a dec (fused on Intel's, as are add, sub, and and
 * inc): 7 or 8 dispatch slots. */
#define NOPS6 "nopl 0(%%rax)\n\tnopl 0(%%rax)\n\tnopl 0(%%rax)\n\tnopl 0(%%rax)\n\t" \
              "nopl 0(%%rax)\n\tnopl 0(%%rax)\n\t"
static void fuse_test(long iters, void *buf) { LOOP(NOPS6 "test %%rsp, %%rsp\n\tjz 2f\n2:"); }
static void fuse_dec(long iters, void *buf)
{
    LOOP_PRE("mov $-1, %%r8d", NOPS6 "dec %%r8\n\tjz 2f\n2:", "r8");
}
/* Small loops by their op count: k zero-idiom xors, dec, and test/jnz (one
 * op: fused everywhere), at a 64-byte boundary: k + 2 ops an iteration,
 * 3 .. 24.  The Xeon family 6 model 207 runs 3-8 ops at the dispatch width
 * (6) but 9-12 in 2.0 cycles and 17-18 in 3.0.  The loops of 10, 11, 21
 * and 22 ops start 16 bytes further: at the boundary, their test/jnz
 * would end on or cross a 32-byte boundary, which Skylake-derived cores
 * charge apart (fetch_jcc32; their table read 3.0, 4.0, 8.0 and 7.0
 * cycles there on the Xeon family 6 model 85, the rest at the dispatch
 * width); 16 bytes on, each spans the same 64-byte lines as before. */
#define LOOP_OPS(k) static void loop_ops##k(long iters, void *buf) { OC_LOOP("0", k); }
#define LOOP_OPS_OFF_JCC(k) static void loop_ops##k(long iters, void *buf) { OC_LOOP("16", k); }
LOOP_OPS(1) LOOP_OPS(2) LOOP_OPS(3) LOOP_OPS(4) LOOP_OPS(5) LOOP_OPS(6) LOOP_OPS(7)
LOOP_OPS_OFF_JCC(8) LOOP_OPS_OFF_JCC(9) LOOP_OPS(10) LOOP_OPS(11) LOOP_OPS(12) LOOP_OPS(13)
LOOP_OPS(14) LOOP_OPS(15) LOOP_OPS(16) LOOP_OPS(17) LOOP_OPS(18) LOOP_OPS_OFF_JCC(19)
LOOP_OPS_OFF_JCC(20) LOOP_OPS(21) LOOP_OPS(22)
enum { LOOP_OPS_FIRST = 3, NLOOP_OPS = 22 };

/* A chain through memory: four vectors of a 64-byte row (at buf+2K) each loaded, added
 * to and stored (c[i][j] += ..., the store forwarding to the next step's
 * load), the row changing every CHAIN_N steps among 16 rows, or never
 * (the chain alone, CHAIN_N 0); iters x REPS steps.  The core runs ahead
 * into the next row's independent chain as far as the loads it can hold
 * in flight allow (Zen 5: 6.1 cycles per step at 16 steps a row, 12.0 with
 * one row). */
#define CHAIN_ROWS(name, rows_every)                                                        \
    static void name(long iters, void *buf)                                                 \
    {                                                                                       \
        long steps = iters * (long)NREPS, every = rows_every;                               \
        long outer = every ? steps / every : 1, inner = every ? every : steps;              \
        __asm__ volatile("vxorps %%xmm1, %%xmm1, %%xmm1\n\tlea 2048(%%rdi), %%r9\n\t"      \
                         "mov %%r9, %%rdx\n\t"                                                \
                         "jmp 1f\n\t.p2align 6\n1:\n\tmov %2, %%r8\n2:\n\t"                 \
                         "vmovups (%%rdx), %%xmm2\n\tvaddps %%xmm1, %%xmm2, %%xmm2\n\t"               \
                         "vmovups %%xmm2, (%%rdx)\n\tvmovups 16(%%rdx), %%xmm3\n\t"           \
                         "vaddps %%xmm1, %%xmm3, %%xmm3\n\tvmovups %%xmm3, 16(%%rdx)\n\t"             \
                         "vmovups 32(%%rdx), %%xmm4\n\tvaddps %%xmm1, %%xmm4, %%xmm4\n\t"             \
                         "vmovups %%xmm4, 32(%%rdx)\n\tvmovups 48(%%rdx), %%xmm5\n\t"         \
                         "vaddps %%xmm1, %%xmm5, %%xmm5\n\tvmovups %%xmm5, 48(%%rdx)\n\t"             \
                         "dec %%r8\n\tjnz 2b\n\tadd $128, %%rdx\n\tsub %%r9, %%rdx\n\t"     \
                         "and $0x7ff, %%rdx\n\tadd %%r9, %%rdx\n\tdec %0\n\tjnz 1b"         \
                         : "+c"(outer) : "D"(buf), "S"(inner)                               \
                         : "rdx", "r8", "r9", XMMS, "memory", "cc");                        \
    }
enum { CHAIN_N = 16, CHAIN_LOADS = 4 };
CHAIN_ROWS(chain_rows, CHAIN_N)
CHAIN_ROWS(chain_one_row, 0)

/* Vector store-to-load forwarding: a 16-byte store and a load of it (VEX
 * encodings, as in every vector benchmark here: legacy SSE ops after the
 * 256-bit ones would merge into the upper halves). */
static void vstlf_lat(long iters, void *buf)
{
    LOOP("vmovups %%xmm4, 256(%%rdi)\n\tvmovups 256(%%rdi), %%xmm4", XMMS);
}

static void fetch_inside(long iters, void *buf) { FETCH_LOOP("8"); }
static void fetch_cross32(long iters, void *buf) { FETCH_LOOP("28"); }
static void fetch_cross64(long iters, void *buf) { FETCH_LOOP("60"); }
/* ... with its dec/jnz across a 32-byte boundary (fetch_cross32's starts
 * on it): the JCC erratum's microcode keeps such a window out of the
 * decoded-op cache (Intel's Skylake-derived cores). */
static void fetch_jcc32(long iters, void *buf) { FETCH_LOOP("27"); }

/* Pointer chasing around a ring of eight lines at buf+1024 (a load that
 * returns its own address is not a fair chase: the core may rename it). */
static void load_lat(long iters, void *buf) { LOOP_PRE("lea 1024(%%rdi), %%rax", "mov (%%rax), %%rax", "rax"); }
/* buf[1] is 0: the index stays 0, the address needs base + scaled index. */
static void load_index_lat(long iters, void *buf)
{
    LOOP_PRE("xor %%eax, %%eax", "mov 8(%%rdi,%%rax,8), %%rax", "rax");
}
static void load_tp(long iters, void *buf)
{
    LOOP("mov 8(%%rdi),%%r8\n\tmov 16(%%rdi),%%r9\n\tmov 24(%%rdi),%%r10\n\tmov 32(%%rdi),%%r11\n\t"
         "mov 40(%%rdi),%%r12\n\tmov 48(%%rdi),%%r13\n\tmov 56(%%rdi),%%r14\n\tmov 64(%%rdi),%%r15",
         GPRS);
}
static void store_tp(long iters, void *buf)
{
    /* Each store to another line of a 4 KiB window, as strided and streaming
     * stores do (rewriting the same few lines is faster than real code). */
    LOOP_PRE("xor %%eax, %%eax\n\tlea 4096(%%rdi), %%rsi",
             "mov %%r8,(%%rsi,%%rax)\n\tmov %%r8,64(%%rsi,%%rax)\n\t"
             "mov %%r8,128(%%rsi,%%rax)\n\tmov %%r8,192(%%rsi,%%rax)\n\tadd $256, %%eax\n\t"
             "and $4095, %%eax", GPRS);
}
/* Loads beside stores, a store to another line each (as store_tp) after
 * two vector loads, or after three loads: which pipes a store's address
 * takes (derive_store_pipes).  On the AMD EPYC Zen 4 (family 25 model 17)
 * 1.09 and 1.49 cycles a store, stores alone 1.0: a store takes any of the
 * loads' three AGUs, the one two vector loads leave included. */
#define LOADS_STORE(name, l1, l2, l3)                                                          \
    static void name(long iters, void *buf)                                                    \
    {                                                                                          \
        LOOP_PRE("xor %%eax, %%eax\n\tlea 4096(%%rdi), %%rsi",                                 \
                 l1 l2 l3 "mov %%r8,(%%rsi,%%rax)\n\t" l1 l2 l3 "mov %%r8,64(%%rsi,%%rax)\n\t" \
                 l1 l2 l3 "mov %%r8,128(%%rsi,%%rax)\n\t" l1 l2 l3                             \
                 "mov %%r8,192(%%rsi,%%rax)\n\tadd $256, %%eax\n\tand $4095, %%eax",           \
                 GPRS, XMMS);                                                                  \
    }
LOADS_STORE(vloads2_store, "vmovdqu 0(%%rdi),%%xmm4\n\t", "vmovdqu 16(%%rdi),%%xmm5\n\t", "")
LOADS_STORE(loads3_store, "mov 8(%%rdi),%%r9\n\t", "mov 16(%%rdi),%%r10\n\t",
            "mov 24(%%rdi),%%r11\n\t")
/* A store and the load that reads it back, 8 pairs a loop iteration (5
 * times the iterations: 40 pairs per `iters`, as every bench).  Zen 3
 * renames the store's data into the load (memory renaming) when a loop
 * holds few such pairs: a chain of pairs with an add ran 1.0 cycles a pair
 * (the add alone) at up to 24 pairs an iteration and 6.7-6.9 cycles from 28
 * pairs on (AMD EPYC Zen 3, family 25 model 1); the 40 pairs unrolled this
 * bench once measured gave that 6.0, and a loop adding to a global
 * (samples/memory.c's progress: load, add, store) was predicted at 7.1
 * cycles an iteration where it ran 1.8-2.5.  Loops of real code hold a few
 * pairs, so the figure is taken where renaming applies, if the core has
 * it.  (Zen 3 renames no vector data: 8.7 cycles at 1, 8 or 40 pairs.) */
enum { STLF_PAIRS = 8 };
static void stlf_lat(long iters, void *buf)
{
    iters *= (long)NREPS / STLF_PAIRS;
    __asm__ volatile("1:\n\t.rept 8\n\tmov %%rax, 256(%%rdi)\n\tmov 256(%%rdi), %%rax\n\t.endr\n\t"
                     "dec %0\n\tjnz 1b"
                     : "+c"(iters)
                     : "D"(buf)
                     : "memory", "cc", "rax");
}
static void vload_lat(long iters, void *buf)
{
    LOOP_PRE("xor %%eax, %%eax", "vmovq 8(%%rdi,%%rax,1), %%xmm0\n\tvmovq %%xmm0, %%rax", "rax", "xmm0");
}
static void gpr2vec_lat(long iters, void *buf)
{
    LOOP("vmovq %%rax, %%xmm0\n\tvmovq %%xmm0, %%rax", "rax", "xmm0");
}
static void vload_tp(long iters, void *buf)
{
    LOOP("vmovdqu 0(%%rdi),%%ymm4\n\tvmovdqu 32(%%rdi),%%ymm5\n\tvmovdqu 64(%%rdi),%%ymm6\n\t"
         "vmovdqu 96(%%rdi),%%ymm7\n\tvmovdqu 0(%%rdi),%%ymm8\n\tvmovdqu 32(%%rdi),%%ymm9",
         XMMS);
}

#define FP_LAT(name, body) static void name(long iters, void *buf) { LOOP(body, XMMS); }
#define FP_TP(name, P) static void name(long iters, void *buf) { LOOP(V12(P), XMMS); }
#define X(n) "%%xmm" #n
#define Y(n) "%%ymm" #n
#define Z(n) "%%zmm" #n
#define P_FADD(n) "vaddsd %%xmm2," X(n) "," X(n)
#define P_FADD256(n) "vaddpd %%ymm2," Y(n) "," Y(n)
#define P_FMUL(n) "vmulsd %%xmm1," X(n) "," X(n)
#define P_FMUL256(n) "vmulpd %%ymm1," Y(n) "," Y(n)
#define P_FMA256(n) "vfmadd231pd %%ymm2,%%ymm2," Y(n)
#define P_DIVSD(n) "vdivsd %%xmm1," X(n) "," X(n)
#define P_DIVPD256(n) "vdivpd %%ymm1," Y(n) "," Y(n)
#define P_DIVPS(n) "vdivps %%xmm3," X(n) "," X(n)
#define P_SQRTPD(n) "vsqrtpd %%xmm0," X(n)
#define P_VPADDQ(n) "vpaddq %%ymm2," Y(n) "," Y(n)
#define P_VPSLLQ(n) "vpsllq $1," Y(n) "," Y(n)
#define P_VPMULLD(n) "vpmulld %%ymm2," Y(n) "," Y(n)
#define P_VPSHUFD(n) "vpshufd $0x1b," Y(n) "," Y(n)
#define P_CVT(n) "vcvtdq2ps " X(n) "," X(n)
#define P_FADD512(n) "vaddpd %%zmm2," Z(n) "," Z(n)
#define P_FMA512(n) "vfmadd231pd %%zmm2,%%zmm2," Z(n)
#define P_VPADDQ512(n) "vpaddq %%zmm2," Z(n) "," Z(n)
#define P_DIVPD512(n) "vdivpd %%zmm1," Z(n) "," Z(n)

FP_LAT(fadd_lat, "vaddsd %%xmm2, %%xmm4, %%xmm4")
FP_TP(fadd_tp, P_FADD)
FP_LAT(fadd256_lat, "vaddpd %%ymm2, %%ymm4, %%ymm4")
FP_TP(fadd256_tp, P_FADD256)
FP_LAT(fmul_lat, "vmulsd %%xmm1, %%xmm4, %%xmm4")
FP_TP(fmul_tp, P_FMUL)
FP_TP(fmul256_tp, P_FMUL256)
FP_LAT(fma_lat, "vfmadd231sd %%xmm2, %%xmm2, %%xmm4")
FP_TP(fma_tp, P_FMA256)
FP_LAT(fdiv64_lat, "vdivsd %%xmm1, %%xmm4, %%xmm4")
FP_TP(fdiv64_tp, P_DIVSD)
FP_TP(fdiv64_256_tp, P_DIVPD256)
FP_LAT(fdiv32_lat, "vdivss %%xmm3, %%xmm4, %%xmm4")
FP_TP(fdiv32_tp, P_DIVPS)
FP_LAT(fsqrt64_lat, "vsqrtsd %%xmm4, %%xmm4, %%xmm4")
/* Square roots of 1.7: the root of 1.0 is a fast case (the Xeon family 6
 * model 207: 4.5 cycles a sqrtsd or sqrtpd against 6.0 for 2, 17, pi or
 * 1e10, which the bench's sqrt_f64 runs at). */
static void fsqrt64_tp(long iters, void *buf)
{
    LOOP_PRE("mov $0x3ffb333333333333, %%rax\n\tvmovq %%rax, %%xmm0", V12(P_SQRTPD), "rax", XMMS);
}
FP_LAT(fsqrt32_lat, "vsqrtss %%xmm4, %%xmm4, %%xmm4")
FP_LAT(valu128_lat, "vpaddq %%xmm2, %%xmm4, %%xmm4")
FP_LAT(valu_lat, "vpaddq %%ymm2, %%ymm4, %%ymm4")
FP_TP(valu_tp, P_VPADDQ)
FP_LAT(vshift128_lat, "vpsllq $1, %%xmm4, %%xmm4")
FP_LAT(vshift_lat, "vpsllq $1, %%ymm4, %%ymm4")
FP_TP(vshift_tp, P_VPSLLQ)
FP_LAT(vimul_lat, "vpmulld %%ymm4, %%ymm4, %%ymm4")
FP_TP(vimul_tp, P_VPMULLD)
FP_LAT(shuf_lat, "vpshufd $0x1b, %%xmm4, %%xmm4")
FP_LAT(perm_lat, "vpermpd $0x1b, %%ymm4, %%ymm4")
FP_TP(shuf_tp, P_VPSHUFD)
FP_LAT(cvt_lat, "vcvtdq2ps %%xmm4, %%xmm4")
FP_TP(cvt_tp, P_CVT)
FP_LAT(horiz_lat, "vhaddpd %%xmm4, %%xmm4, %%xmm4")

/* Chains alternating two classes: each round trip costs both latencies
 * plus whatever the result of either takes to reach the other class's
 * unit (derive_bypass).  Every step keeps the value 1.0. */
#define FADD_STEP "vaddsd %%xmm2, %%xmm4, %%xmm4\n\t"
FP_LAT(fadd_fmul_lat, FADD_STEP "vmulsd %%xmm1, %%xmm4, %%xmm4")
FP_LAT(fadd_valu_lat, FADD_STEP "vpaddq %%xmm2, %%xmm4, %%xmm4")
FP_LAT(fmul_valu_lat, "vmulsd %%xmm1, %%xmm4, %%xmm4\n\tvpaddq %%xmm2, %%xmm4, %%xmm4")
FP_LAT(fadd_fma_lat, FADD_STEP "vfmadd231sd %%xmm2, %%xmm2, %%xmm4")
FP_LAT(fadd_shuf_lat, FADD_STEP "vpshufd $0x44, %%xmm4, %%xmm4")

/* Gathers: the mask register is consumed, so it is re-armed each time. */
static void gather_tp(long iters, void *buf)
{
    LOOP("vpcmpeqd %%ymm3, %%ymm3, %%ymm3\n\tvpxor %%xmm2, %%xmm2, %%xmm2\n\t"
         "vpgatherdd %%ymm3, (%%rdi,%%ymm2,4), %%ymm4", XMMS);
}

#define Z512 __attribute__((target("avx512f")))
Z512 static void fadd512_tp(long iters, void *buf) { LOOP(V12(P_FADD512), XMMS); }
Z512 static void fma512_tp(long iters, void *buf) { LOOP(V12(P_FMA512), XMMS); }
Z512 static void valu512_tp(long iters, void *buf) { LOOP(V12(P_VPADDQ512), XMMS); }
Z512 static void fdiv64_512_tp(long iters, void *buf) { LOOP(V12(P_DIVPD512), XMMS); }
Z512 static void set_zmm_one(void)
{
    __asm__ volatile("vbroadcastsd %%xmm0, %%zmm1\n\tvpxorq %%zmm2, %%zmm2, %%zmm2\n\t"
                     "vmovapd %%zmm1, %%zmm4\n\tvmovapd %%zmm1, %%zmm5\n\tvmovapd %%zmm1, %%zmm6\n\t"
                     "vmovapd %%zmm1, %%zmm7\n\tvmovapd %%zmm1, %%zmm8\n\tvmovapd %%zmm1, %%zmm9\n\t"
                     "vmovapd %%zmm1, %%zmm10\n\tvmovapd %%zmm1, %%zmm11\n\tvmovapd %%zmm1, %%zmm12\n\t"
                     "vmovapd %%zmm1, %%zmm13\n\tvmovapd %%zmm1, %%zmm14\n\tvmovapd %%zmm1, %%zmm15" ::: XMMS);
}

/* The counter probe of pass 1 (rewriter/): `incq %gs:disp32`.  Measured on a
 * fs-relative slot because %gs is not set up in mtool itself; the encoding
 * and the micro-ops are the same but for the segment prefix. */
static __thread uint64_t probe_slots[16] __attribute__((used));
static void probe_tp(long iters, void *buf)
{
    LOOP("incq %%fs:probe_slots@tpoff\n\tincq %%fs:probe_slots@tpoff+8\n\t"
         "incq %%fs:probe_slots@tpoff+16\n\tincq %%fs:probe_slots@tpoff+24");
}

/* ---- measuring ---------------------------------------------------------- */

static double ticks(bench_fn f, long iters, void *buf)
{
    uint64_t t0 = __rdtsc();
    f(iters, buf);
    return (double)(__rdtsc() - t0);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* TSC ticks per core cycle: the fastest of three dependent imul chains, 3
 * cycles an imul.  A neighbour's integer work on the same physical core
 * delays a chain now and then (measured on a Zen 5: median 7% slower than
 * the fastest), which would read as a slower clock. */
static double clock_reference(long iters, void *buf)
{
    double best = 0;
    for (int k = 0; k < 3; k++) {
        double r = ticks(ref_imul, iters, buf) / (3 * NREPS * (double)iters);
        best = k == 0 || r < best ? r : best;
    }
    return best;
}

/* The probes around every sample, each after a clock reference (rdtsc
 * does not wait for the work before it: a probe right after a long divide
 * chain took part of the chain's tail).  The ALU probe: ten independent
 * register-register add chains, about 5000 cycles; the front-end probe:
 * the one-branch loop, 2000 iterations.  Their fastest readings over the
 * calibration are the core to itself (quiet_readings): a thread on the SMT sibling takes
 * ALU slots, fetch and branch-prediction cycles, which the clock
 * references (latency chains) do not notice.  Measured on the AMD EPYC
 * Zen 3 (family 25 model 1) under a load of 5 (compilers on the other
 * vCPU): the one-branch loop at 1.1-2.2 cycles an iteration for seconds
 * on end in samples whose references agreed (1.0 alone), the ALU probe
 * within 4% of its fastest all the while. */
#define PROBE_ITERS 50
#define QUIET_PROBE 0.04 /* quiet: both probes within 4% of the calibration's quiet readings */
typedef struct {
    double alu, front; /* cycles an add, cycles an iteration */
} probe_pair;

/* Both probes, in cycles at `ratio` TSC ticks a cycle. */
static probe_pair probe_cycles(double ratio, void *buf)
{
    double runs = NREPS * PROBE_ITERS;
    double alu = ticks(alu_tp, PROBE_ITERS, buf), front = ticks(branch_taken_tp, PROBE_ITERS, buf);
    return (probe_pair){alu / ratio / (10 * runs), front / ratio / runs};
}

static bool probes_quiet(probe_pair p, probe_pair quiet)
{
    return p.alu <= quiet.alu * (1 + QUIET_PROBE) && p.front <= quiet.front * (1 + QUIET_PROBE);
}

/* Samples of one benchmark over all passes, and the probes around each. */
typedef struct {
    mt_cal_sample *s;
    probe_pair *probe; /* the slower of the two around s[k] */
    size_t n, cap, pcap;
    double ratio_sum; /* TSC ticks per core cycle, summed over the samples */
} sample_set;

/* `samples` more samples of f (core cycles per body repetition, ops
 * instructions each) into set, each bracketed by the clock reference
 * (kept when both agree within 1.5%) and by the probes. */
static void measure(bench_fn f, double ops, bool zmm, void *buf, int pass, int samples,
                    sample_set *set)
{
    const int max_tries = 6 * samples;
    const long ref_iters = 240, iters = 1000; /* the reference: 29k cycles */
    int kept = 0;
    f(10, buf); /* warm up */
    for (int t = 0; t < max_tries && kept < samples; t++) {
        double r0 = clock_reference(ref_iters, buf);
        probe_pair p0 = probe_cycles(r0, buf);
        /* Vector registers back to 1.0 before every sample: the compiler's
         * own doubles between samples would otherwise seed the FP chains,
         * and a chain of products of 0.75 ends in slow denormals (a mulsd
         * chain measured 4.46 cycles instead of 3). */
        set_vectors_one();
        if (zmm)
            set_zmm_one();
        double x = ticks(f, iters, buf);
        double r1 = clock_reference(ref_iters, buf);
        probe_pair p1 = probe_cycles(r1, buf);
        if (fabs(r0 - r1) > 0.015 * fmin(r0, r1) && t < max_tries - samples)
            continue;
        double ratio = (r0 + r1) / 2;
        probe_pair p = {fmax(p0.alu, p1.alu), fmax(p0.front, p1.front)};
        mt_cal_sample s = {x / ratio / (NREPS * iters * ops), pass, false};
        size_t n = set->n;
        MT_PUSH(set->s, set->n, set->cap, s);
        MT_PUSH(set->probe, n, set->pcap, p);
        set->ratio_sum += ratio;
        kept++;
    }
}

typedef enum { LAT, TP } what;

typedef struct {
    const char *name;
    mt_iclass c;
    mt_width w;
    what kind;
    bench_fn f;
    double ops;      /* instructions of the measured kind per body */
    double subtract; /* known cycles of helper instructions per instruction */
    bool avx512;
} bench;

/* Latencies subtract their helpers' known cycles: `or` after div (1),
 * the vmovq back to a GPR for vector loads (half of the round trip). */
static const bench benches[] = {
    {"add tput", MT_IC_ALU, MT_W128, TP, alu_tp, 10, 0, false},
    {"lea lat", MT_IC_LEA, MT_W128, LAT, lea_lat, 1, 0, false},
    {"lea tput", MT_IC_LEA, MT_W128, TP, lea_tp, 8, 0, false},
    {"lea3 lat", MT_IC_LEA3, MT_W128, LAT, lea3_lat, 1, 0, false},
    {"lea3 tput", MT_IC_LEA3, MT_W128, TP, lea3_tp, 8, 0, false},
    {"shift lat", MT_IC_SHIFT, MT_W128, LAT, shift_lat, 1, 0, false},
    {"shift tput", MT_IC_SHIFT, MT_W128, TP, shift_tp, 10, 0, false},
    {"imul lat", MT_IC_IMUL, MT_W128, LAT, imul_lat, 1, 0, false},
    {"imul tput", MT_IC_IMUL, MT_W128, TP, imul_tp, 10, 0, false},
    {"mul rdx:rax lat", MT_IC_MULWIDE, MT_W128, LAT, mulwide_lat, 1, 0, false},
    {"div r64 lat", MT_IC_DIV64, MT_W128, LAT, div64_lat, 1, 1, false},
    {"div r64 tput", MT_IC_DIV64, MT_W128, TP, div64_tp, 1, 0, false},
    {"div r32 lat", MT_IC_DIV32, MT_W128, LAT, div32_lat, 1, 1, false},
    {"div r32 tput", MT_IC_DIV32, MT_W128, TP, div32_tp, 1, 0, false},
    {"popcnt lat", MT_IC_BITCNT, MT_W128, LAT, bitcnt_lat, 1, 0, false},
    {"popcnt tput", MT_IC_BITCNT, MT_W128, TP, bitcnt_tp, 10, 0, false},
    {"jcc not taken tput", MT_IC_BRANCH, MT_W128, TP, branch_nt_tp, 2, 0, false},
    {"load lat", MT_IC_LOAD, MT_W128, LAT, load_lat, 1, 0, false},
    {"load tput", MT_IC_LOAD, MT_W128, TP, load_tp, 8, 0, false},
    {"store tput", MT_IC_STORE, MT_W128, TP, store_tp, 4, 0, false},
    {"store-to-load fwd lat", MT_IC_STLF, MT_W128, LAT, stlf_lat, 1, 0, false},
    {"vector st-to-ld fwd lat", MT_IC_VSTLF, MT_W128, LAT, vstlf_lat, 1, 0, false},
    {"vector load tput", MT_IC_VLOAD, MT_W256, TP, vload_tp, 6, 0, false},
    {"fadd lat", MT_IC_FADD, MT_W128, LAT, fadd_lat, 1, 0, false},
    {"fadd tput", MT_IC_FADD, MT_W128, TP, fadd_tp, 12, 0, false},
    {"fadd ymm lat", MT_IC_FADD, MT_W256, LAT, fadd256_lat, 1, 0, false},
    {"fadd ymm tput", MT_IC_FADD, MT_W256, TP, fadd256_tp, 12, 0, false},
    {"fmul lat", MT_IC_FMUL, MT_W128, LAT, fmul_lat, 1, 0, false},
    {"fmul tput", MT_IC_FMUL, MT_W128, TP, fmul_tp, 12, 0, false},
    {"fmul ymm tput", MT_IC_FMUL, MT_W256, TP, fmul256_tp, 12, 0, false},
    {"fma lat", MT_IC_FMA, MT_W128, LAT, fma_lat, 1, 0, false},
    {"fma ymm tput", MT_IC_FMA, MT_W256, TP, fma_tp, 12, 0, false},
    {"divsd lat", MT_IC_FDIV64, MT_W128, LAT, fdiv64_lat, 1, 0, false},
    {"divsd tput", MT_IC_FDIV64, MT_W128, TP, fdiv64_tp, 12, 0, false},
    {"divpd ymm tput", MT_IC_FDIV64, MT_W256, TP, fdiv64_256_tp, 12, 0, false},
    {"divss lat", MT_IC_FDIV32, MT_W128, LAT, fdiv32_lat, 1, 0, false},
    {"divps tput", MT_IC_FDIV32, MT_W128, TP, fdiv32_tp, 12, 0, false},
    {"sqrtsd lat", MT_IC_FSQRT64, MT_W128, LAT, fsqrt64_lat, 1, 0, false},
    {"sqrtpd tput", MT_IC_FSQRT64, MT_W128, TP, fsqrt64_tp, 12, 0, false},
    {"sqrtss lat", MT_IC_FSQRT32, MT_W128, LAT, fsqrt32_lat, 1, 0, false},
    {"vpaddq xmm lat", MT_IC_VALU, MT_W128, LAT, valu128_lat, 1, 0, false},
    {"vpaddq ymm lat", MT_IC_VALU, MT_W256, LAT, valu_lat, 1, 0, false},
    {"vpaddq tput", MT_IC_VALU, MT_W256, TP, valu_tp, 12, 0, false},
    {"vpsllq xmm lat", MT_IC_VSHIFT, MT_W128, LAT, vshift128_lat, 1, 0, false},
    {"vpsllq ymm lat", MT_IC_VSHIFT, MT_W256, LAT, vshift_lat, 1, 0, false},
    {"vpsllq tput", MT_IC_VSHIFT, MT_W256, TP, vshift_tp, 12, 0, false},
    {"vpmulld lat", MT_IC_VIMUL, MT_W256, LAT, vimul_lat, 1, 0, false},
    {"vpmulld tput", MT_IC_VIMUL, MT_W256, TP, vimul_tp, 12, 0, false},
    {"vpshufd xmm lat", MT_IC_SHUF, MT_W128, LAT, shuf_lat, 1, 0, false},
    {"vpermpd lat", MT_IC_SHUF, MT_W256, LAT, perm_lat, 1, 0, false},
    {"vpshufd tput", MT_IC_SHUF, MT_W256, TP, shuf_tp, 12, 0, false},
    {"cvtdq2ps lat", MT_IC_CVT, MT_W128, LAT, cvt_lat, 1, 0, false},
    {"cvtdq2ps tput", MT_IC_CVT, MT_W128, TP, cvt_tp, 12, 0, false},
    {"haddpd lat", MT_IC_HORIZ, MT_W128, LAT, horiz_lat, 1, 0, false},
    {"gather ymm tput", MT_IC_GATHER, MT_W256, TP, gather_tp, 1, 0, false},
    {"fadd zmm tput", MT_IC_FADD, MT_W512, TP, fadd512_tp, 12, 0, true},
    {"fma zmm tput", MT_IC_FMA, MT_W512, TP, fma512_tp, 12, 0, true},
    {"vpaddq zmm tput", MT_IC_VALU, MT_W512, TP, valu512_tp, 12, 0, true},
    {"divpd zmm tput", MT_IC_FDIV64, MT_W512, TP, fdiv64_512_tp, 12, 0, true},
};
static const size_t nbenches = MT_ARRAY_LEN(benches);

/* Whether a class has a benchmark of this kind at 128 bits. */
static bool has_narrow(mt_iclass c, what kind)
{
    for (size_t i = 0; i < nbenches; i++)
        if (benches[i].c == c && benches[i].kind == kind && benches[i].w == MT_W128)
            return true;
    return false;
}

/* A measured figure sets the class at its width and every wider one; the
 * benchmarks run narrow to wide, so a wider measurement overrides.  A class
 * measured at 256 bits only sets 128 bits too: the default profile's
 * narrow figures are another core's (the Zen 5's 128-bit vector ALU ops at
 * four a cycle made the Xeon family 6 model 207's three look like four). */
static void apply(mt_machine *m, const bench *b, double v)
{
    if (b->w == MT_W256 && !has_narrow(b->c, b->kind)) {
        if (b->kind == LAT)
            m->timing[b->c][MT_W128].latency = v;
        else
            m->timing[b->c][MT_W128].rthroughput = v;
    }
    for (int w = b->w; w < MT_W_COUNT; w++) {
        if (b->kind == LAT)
            m->timing[b->c][w].latency = v;
        else
            m->timing[b->c][w].rthroughput = v;
    }
}

double cm_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return v[n / 2];
}


/* ---- the figure a benchmark's samples repeat ------------------------------ */

#define REPEAT_TOL 0.02  /* samples that agree: within 2% of the fastest of them */
#define REPEAT_MIN 3     /* the fastest value and two that confirm it */
#define WHOLE_TOL 0.04   /* a one-branch loop within 4% of a multiple of half a cycle */

static int by_sample_value(const void *a, const void *b)
{
    const mt_cal_sample *x = a, *y = b;
    return x->value < y->value ? -1 : x->value > y->value;
}

/* Passes are numbered from 0: at most 50 runs, then the passes made again
 * in quiet moments; past 64 they wrap around in this set, and count as
 * fewer passes (which only asks for more samples). */
static int distinct_passes(const mt_cal_sample *s, int n)
{
    uint64_t seen = 0;
    for (int i = 0; i < n; i++)
        seen |= 1ull << (s[i].pass & 63);
    return __builtin_popcountll(seen);
}

/* The fastest value of q[0..n) (sorted) that REPEAT_MIN samples agree
 * on, from two passes when the samples come from more than one: 0 with
 * *out set. */
static int fastest_repeated(const mt_cal_sample *q, int n, mt_repeat *out)
{
    int need_passes = distinct_passes(q, n) > 1 ? 2 : 1;
    for (int i = 0; i < n; i++) {
        int j = i;
        while (j < n && q[j].value <= q[i].value * (1 + REPEAT_TOL))
            j++;
        int agree = j - i, passes = distinct_passes(q + i, agree);
        if (agree >= REPEAT_MIN && passes >= need_passes) {
            out->figure = q[i + agree / 2].value;
            out->agree = agree;
            out->passes = passes;
            return 0;
        }
    }
    return -1;
}

/* Why the fastest value that repeats rather than the fastest sample:
 * interference only slows a sample, but one can also come out a little
 * fast (the clock changed in step with both references around it), and
 * three do not agree by chance; from two passes, because a neighbour can
 * slow a few samples in a row between quiet probes the same way (a loop
 * of 96 iterations at 1.46 cycles in three quiet samples of one pass, at
 * 1.17 in 38 of six).  Why quiet samples: a neighbour on the
 * core slows a loop the same way for seconds on end, and that slow value
 * repeats as well as a right one (on the AMD EPYC Zen 3, family 25 model
 * 1, under a load of 7: a loop of 6 ops at 1.52 cycles in 22 samples of
 * two passes, 1.00 alone).  Why a value all samples repeat will do when a
 * quiet one confirms it and none is faster: a latency chain runs as fast
 * with a neighbour as without (under a load of 5.5, 7% of the samples
 * quiet, a 4-cycle multiply chain had 2 quiet samples of 225, all at 4.00). */
int mt_repeated_figure(const mt_cal_sample *s, int n, mt_repeat *out)
{
    mt_cal_sample *q = mt_xcalloc((size_t)n + 1, sizeof *q);
    int quiet = 0;
    for (int i = 0; i < n; i++)
        if (s[i].quiet)
            q[quiet++] = s[i];
    qsort(q, (size_t)quiet, sizeof *q, by_sample_value);
    double fastest_quiet = quiet ? q[0].value : NAN;
    *out = (mt_repeat){fastest_quiet, quiet, 0, 0, 0, MT_CONFIRMED};
    int rc = fastest_repeated(q, quiet, out);
    if (rc == 0)
        out->quiet_agree = out->agree;
    else if (quiet > 0) {
        memcpy(q, s, (size_t)n * sizeof *q);
        qsort(q, (size_t)n, sizeof *q, by_sample_value);
        mt_repeat all = *out;
        if (fastest_repeated(q, n, &all) == 0 &&
            fabs(fastest_quiet / all.figure - 1) <= REPEAT_TOL) {
            for (int i = 0; i < n; i++)
                all.quiet_agree += q[i].quiet && fabs(q[i].value / all.figure - 1) <= REPEAT_TOL;
            *out = all;
            rc = 0;
        }
    }
    free(q);
    return rc;
}

/* Why a fallback rather than no profile: a benchmark that no quiet
 * samples confirm within the wait is one a neighbour slowed throughout
 * (or the probes misjudged), and refusing the whole calibration for it
 * made every command on the machine calibrate again, each paying the
 * wait (pass-1 counts 394 s of CPU against 160 s in a make test on the
 * AMD EPYC Zen 3, family 25 model 1).  The fallback is the figure the
 * branch's estimator had before quiet samples (a repeated value, which a
 * lone fast sample cannot make), and the profile names it. */
int mt_fallback_figure(const mt_cal_sample *s, int n, mt_repeat *out)
{
    if (n <= 0)
        return -1;
    mt_cal_sample *q = mt_xcalloc((size_t)n, sizeof *q);
    memcpy(q, s, (size_t)n * sizeof *q);
    qsort(q, (size_t)n, sizeof *q, by_sample_value);
    int quiet = out->quiet;
    *out = (mt_repeat){q[n > 1 ? 1 : 0].value, quiet, 0, 0, 0, MT_FELL_BACK_FASTEST};
    if (fastest_repeated(q, n, out) == 0)
        out->how = MT_FELL_BACK_REPEATED;
    free(q);
    return 0;
}

const char *mt_confirm_name(mt_confirm how)
{
    static const char *const names[] = {"confirmed", "repeated", "fastest"};
    return how <= MT_FELL_BACK_FASTEST ? names[how] : "unknown";
}

bool mt_front_end_whole(double fastest_loop)
{
    double halves = round(2 * fastest_loop) / 2;
    return halves >= 0.5 && fabs(fastest_loop - halves) <= WHOLE_TOL * halves;
}

double mt_measure_tsc_per_cycle(int samples)
{
    enum { MAX = 1024 };
    static double v[MAX];
    int n = samples < 1 ? 1 : samples > MAX ? MAX : samples;
    for (int i = 0; i < n; i++)
        v[i] = ticks(ref_imul, 667, NULL) / (3 * NREPS * 667);
    /* A low decile, not the median: chains a neighbour's work delayed read
     * as a slower clock (clock_reference). */
    qsort(v, (size_t)n, sizeof *v, by_value);
    return v[n / 10];
}

/* Latencies every x86-64 core of the last decade gives these references,
 * and how far the measurements may stray from them. */
#define CLOCK_AGREE 0.03     /* add and imul clocks at most 3% apart */
#define FMUL_MIN_CYCLES 2.0  /* an FP multiply chain: a whole number of cycles, 2..8 */
#define FMUL_MAX_CYCLES 8.0
#define FMUL_OFF_WHOLE 0.15  /* at most this far from the nearest whole cycle */
#define CLOCK_ATTEMPTS 6     /* measurements of the references before refusing, */
#define CLOCK_BACKOFF_MS 100 /* the k-th after k x this: a busy sibling's burst passes */
#define RATIO_MIN 0.1        /* TSC ticks per core cycle: a TSC of 0.6..6 GHz */
#define RATIO_MAX 5.0        /* against a core of 0.5..6.5 GHz */

int mt_clock_check(const mt_clock_refs *r, double *ratio, mt_error *err)
{
    if (!(r->imul > 0 && r->add_rr > 0 && r->fmul > 0)) {
        mt_error_set(err, "calibrate: a clock reference measured no time (add %.4f, imul %.4f, "
                          "fmul %.4f TSC ticks an instruction)", r->add_rr, r->imul, r->fmul);
        return -1;
    }
    double imul = r->imul / 3, add = r->add_rr;
    if (!(imul >= RATIO_MIN && imul <= RATIO_MAX)) {
        mt_error_set(err, "calibrate: the imul chain gives %.4f TSC ticks per core cycle, outside "
                          "%.1f..%.1f (a TSC or core clock no x86-64 machine has)", imul,
                     RATIO_MIN, RATIO_MAX);
        return -1;
    }
    if (fabs(add - imul) > CLOCK_AGREE * imul) {
        mt_error_set(err, "calibrate: the clock references disagree: a dependent add %%reg,%%reg "
                          "chain gives %.4f TSC ticks per cycle, a dependent imul chain (3 cycles "
                          "each) %.4f: %.1f%% apart, more than %.0f%% (one of them is not what "
                          "it is on every known core; no profile written)", add, imul,
                     100 * fabs(add - imul) / imul, 100 * CLOCK_AGREE);
        return -1;
    }
    double clock = (add + imul) / 2, fmul = r->fmul / clock;
    if (!(fmul >= FMUL_MIN_CYCLES - FMUL_OFF_WHOLE && fmul <= FMUL_MAX_CYCLES + FMUL_OFF_WHOLE) ||
        fabs(fmul - round(fmul)) > FMUL_OFF_WHOLE) {
        mt_error_set(err, "calibrate: the clock references disagree: a dependent FP multiply "
                          "chain takes %.2f cycles by the add and imul chains' clock (%.4f TSC "
                          "ticks per cycle), not a whole number of cycles from %.0f to %.0f "
                          "(no profile written)", fmul, clock, FMUL_MIN_CYCLES, FMUL_MAX_CYCLES);
        return -1;
    }
    *ratio = imul;
    return 0;
}

/* The most common value of v[0..n) (sorted in place): the middle of the
 * densest window of width 1%.  Quiet samples of a chain agree to a fraction
 * of a percent; samples that interference delayed spread out. */
static double densest(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    int best = 0, best_count = 0;
    for (int i = 0, j = 0; i < n; i++) {
        while (j < n && v[j] <= v[i] * 1.01)
            j++;
        if (j - i > best_count) {
            best = i;
            best_count = j - i;
        }
    }
    return v[best + best_count / 2];
}

/* The three references, taken in turn REF_ROUNDS times (chains of about
 * 80k cycles each): in every round the add and FP chains are put in cycles
 * of that round's imul clock, which cancels the clock's moves between
 * rounds (it moves with the load on the other vCPU: 0.76 to 0.84 ticks a
 * cycle within a second on the Xeon family 6 model 207).  The SMT
 * sibling's work on the same ports delays one chain or another now and
 * then.  The add and the imul share the integer ports, and either can be
 * the delayed one (a delayed imul makes the add look fast), so the add's
 * figure is the most common one over rounds, where the quiet rounds agree.
 * The FP multiply has ports of its own, which the sibling's FP work keeps
 * busy for long stretches (its median round read 4.2-5.6 cycles instead of
 * 4.0 there while another process ran FP kernels, its most common one up
 * to 4.9): its figure is the low decile over rounds.  Reported in ticks of
 * the median clock. */
static void measure_clock_refs(mt_clock_refs *r, void *buf)
{
    enum { REF_ROUNDS = 61 };
    double clock[REF_ROUNDS], add[REF_ROUNDS], fmul[REF_ROUNDS];
    ticks(ref_imul, 667, buf); /* warm up */
    for (int i = 0; i < REF_ROUNDS; i++) {
        double a = ticks(ref_add_rr, 2000, buf) / (NREPS * 2000);
        clock[i] = ticks(ref_imul, 667, buf) / (3 * NREPS * 667);
        set_vectors_one();
        double f = ticks(ref_fmul, 500, buf) / (NREPS * 500);
        add[i] = a / clock[i];
        fmul[i] = f / clock[i];
    }
    double c = cm_median(clock, REF_ROUNDS);
    r->imul = 3 * c;
    r->add_rr = densest(add, REF_ROUNDS) * c;
    qsort(fmul, REF_ROUNDS, sizeof *fmul, by_value);
    r->fmul = fmul[REF_ROUNDS / 10] * c;
}

/* Core cycles a measured figure may take on a real x86-64 core: a folded or
 * eliminated instruction takes a fraction of a cycle, the slowest divide
 * (64-bit on Skylake) about 90. */
#define FIGURE_MIN 0.04
#define FIGURE_MAX 150.0

static int check_figure(const char *name, double v, mt_error *err)
{
    if (v >= FIGURE_MIN && v <= FIGURE_MAX)
        return 0;
    mt_error_set(err, "calibrate: '%s' measured %.3f cycles, outside %.2f..%.0f (the measurement "
                      "went wrong; no profile written)", name, v, FIGURE_MIN, FIGURE_MAX);
    return -1;
}

/* The profile calibrate writes is one the reader accepts: written out and
 * read back through the reader's own checks (every value in the range a
 * real machine can have). */
static int check_profile(const mt_machine *m, mt_error *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&text, &len);
    if (!fp) {
        mt_error_set(err, "calibrate: out of memory");
        return -1;
    }
    mt_machine_write(fp, m);
    fclose(fp);
    fp = fmemopen(text, len, "r");
    mt_machine back;
    mt_error why;
    int rc = fp ? mt_machine_parse(fp, "calibrated profile", &back, &why) : -1;
    if (fp)
        fclose(fp);
    free(text);
    if (rc != 0)
        mt_error_set(err, "calibrate: a measured figure is outside what the profile accepts (%s); "
                          "no profile written", fp ? why.msg : "cannot read it back");
    return rc;
}

/* Figures derived from pairs of measurements (mt_calibrate). */
enum { VL, G, T, PR, IX, CM, F0, F32, F64, DW, AM, AN, FADD_FMUL, FADD_VALU, FMUL_VALU,
       FADD_FMA, FADD_SHUF, SPLIT0, LINE0 = SPLIT0 + NSPLIT, EXIT0 = LINE0 + NLINE,
       TA4 = EXIT0 + NEXIT, TA6, TA8, AS, AV, CH, CH1, FOLD, SHL, FOLD_SHL, CMOV_DATA,
       FUSE_TEST, FUSE_DEC, DIV_LOOP, LOOP_OPS0, JCC32 = LOOP_OPS0 + NLOOP_OPS, VLOADS_ST,
       LOADS_ST, CALL_RET, DWX, NDERIVED };

static uint16_t first_pipes(unsigned first, double per_cycle, unsigned most)
{
    long k = lround(per_cycle);
    k = k < 1 ? 1 : k > (long)most ? (long)most : k;
    return (uint16_t)(((1u << k) - 1u) << first);
}

/* Pipes from the measured throughputs (the default profile's are another
 * core's): as many integer ALUs as independent adds per cycle, and a class
 * sustaining k per cycle uses k of its kind (the first k, as the default
 * profile does); loads and stores likewise share the AGUs. */
static void derive_pipes(mt_machine *m)
{
    static const mt_iclass ints[] = {MT_IC_ALU, MT_IC_CMOV, MT_IC_LEA, MT_IC_LEA3, MT_IC_SHIFT,
                                     MT_IC_IMUL, MT_IC_MULWIDE, MT_IC_DIV32, MT_IC_DIV64,
                                     MT_IC_BITCNT, MT_IC_BRANCH, MT_IC_MICROCODE};
    double alus = 1 / m->timing[MT_IC_ALU][MT_W128].rthroughput;
    unsigned nalu = (unsigned)fmax(1, fmin(6, lround(alus)));
    for (size_t i = 0; i < MT_ARRAY_LEN(ints); i++)
        m->pipes[ints[i]] = first_pipes(MT_PIPE_ALU0, 1 / m->timing[ints[i]][MT_W128].rthroughput, nalu);
    /* Vector pipes: as many as independent vector integer adds per cycle
     * (3 on the Xeon family 6 model 207, 4 on the Zen 5), each class on k
     * of them: multiplies, FMAs, shifts, conversions, divides from the
     * first, FP adds and shuffles from the last (Golden Cove: FMA, shifts
     * and pmulld on ports 0 and 1, FP adds and shuffles on 1 and 5, vector
     * ALU ops on all three; Zen: FMUL/FMA on FP0-1, FADD on FP2-3).  The
     * default profile's pipes are another core's: the Zen 5's shifts and
     * vector multiplies on separate pairs made a mix of them, an Intel
     * core's two shared ports, look twice as fast (popcount_swar: 8.5
     * cycles an iteration predicted, 12.5 measured). */
    unsigned nvec = (unsigned)fmax(1, fmin(6, lround(1 / m->timing[MT_IC_VALU][MT_W256].rthroughput)));
    static const mt_iclass vfirst[] = {MT_IC_VALU, MT_IC_VSHIFT, MT_IC_VIMUL, MT_IC_FMUL, MT_IC_FMA,
                                       MT_IC_CVT, MT_IC_FDIV32, MT_IC_FDIV64, MT_IC_FSQRT32,
                                       MT_IC_FSQRT64};
    static const mt_iclass vlast[] = {MT_IC_FADD, MT_IC_SHUF};
    for (size_t i = 0; i < MT_ARRAY_LEN(vfirst); i++)
        m->pipes[vfirst[i]] =
            first_pipes(MT_PIPE_FP0, 1 / m->timing[vfirst[i]][MT_W256].rthroughput, nvec);
    for (size_t i = 0; i < MT_ARRAY_LEN(vlast); i++) {
        long k = lround(1 / m->timing[vlast[i]][MT_W256].rthroughput);
        k = k < 1 ? 1 : k > (long)nvec ? (long)nvec : k;
        m->pipes[vlast[i]] = first_pipes(MT_PIPE_FP0 + (unsigned)(nvec - (unsigned)k), (double)k, nvec);
    }
    static const mt_iclass mem[] = {MT_IC_LOAD, MT_IC_VLOAD, MT_IC_STORE};
    unsigned nagu = (unsigned)fmax(1, fmin(4, lround(1 / m->timing[MT_IC_LOAD][MT_W128].rthroughput)));
    for (size_t i = 0; i < MT_ARRAY_LEN(mem); i++)
        m->pipes[mem[i]] = first_pipes(MT_PIPE_AGU0, 1 / m->timing[mem[i]][MT_W256].rthroughput, nagu);
}

/* Cycles of one store after nloads loads of class `load` (the mixes
 * vloads2_store and loads3_store) with the store's address on
 * store_pipes: the bounds predict.c takes for them (pipes, loads,
 * stores). */
static double mix_cycles(const mt_machine *m, uint16_t store_pipes, mt_iclass load, double nloads)
{
    double r = m->timing[load][MT_W128].rthroughput;
    cm_pipe_demand pd = {.n = 0};
    cm_demand(&pd, m->pipes[load], nloads * r * __builtin_popcount(m->pipes[load]));
    cm_demand(&pd, store_pipes, CM_STORE_PIPE_CYCLES);
    return fmax(cm_pipe_bound(&pd), fmax(nloads * r, m->timing[MT_IC_STORE][MT_W128].rthroughput));
}

/* mt_store_pipes: the loads' first pipes, any of the loads', or pipes of
 * its own.  Stores alone do not tell: on the AMD EPYC Zen 4 (family 25
 * model 17) one a cycle, but 1.09 cycles after two vector loads (on the
 * first pipe, the vector loads' two would make it 1.5) and 1.49 after three
 * loads (on pipes of its own, 1.0): any of the loads' three. */
void mt_store_pipes(const mt_machine *m, double vloads_store, double loads_store,
                    mt_store_layouts *out)
{
    uint16_t loads = m->pipes[MT_IC_LOAD], first = m->pipes[MT_IC_STORE];
    unsigned nagu = (unsigned)__builtin_popcount(loads), ks = (unsigned)__builtin_popcount(first);
    memset(out, 0, sizeof *out);
    out->pipes[0] = first;
    out->pipes[1] = loads;
    if (nagu + ks <= 4)
        out->pipes[2] = (uint16_t)(((1u << ks) - 1u) << (MT_PIPE_AGU0 + nagu));
    double best = INFINITY;
    for (int k = 0; k < 3; k++) {
        if (!out->pipes[k])
            continue;
        out->vloads_store[k] = mix_cycles(m, out->pipes[k], MT_IC_VLOAD, 2);
        out->loads_store[k] = mix_cycles(m, out->pipes[k], MT_IC_LOAD, 3);
        double miss = fabs(log(out->vloads_store[k] / vloads_store)) +
                      fabs(log(out->loads_store[k] / loads_store));
        if (miss < best) {
            best = miss;
            out->kept = k;
        }
    }
}

static void derive_store_pipes(mt_machine *m, const double *d, FILE *report)
{
    static const char *const layout_names[] = {"the loads' first", "any of the loads'",
                                               "its own"};
    mt_store_layouts l;
    mt_store_pipes(m, d[VLOADS_ST], d[LOADS_ST], &l);
    m->pipes[MT_IC_STORE] = l.pipes[l.kept];
    if (report) {
        fprintf(report, "  a store's address: 2 vector loads + a store %.3f cycles, 3 loads + a "
                        "store %.3f; predicted", d[VLOADS_ST], d[LOADS_ST]);
        for (int k = 0; k < 3; k++)
            if (l.pipes[k])
                fprintf(report, "%s %.2f and %.2f on %s pipes", k ? "," : "", l.vloads_store[k],
                        l.loads_store[k], layout_names[k]);
        fprintf(report, ": on %s\n", layout_names[l.kept]);
    }
}

/* The loop front end without a fetch-window limit (fetch_window 0): E, the
 * most xors the first line of a split loop holds at the speed of the loop in
 * one line; S, the most ops a loop in one line holds at the dispatch width,
 * and P, the cycles one more op costs.  0 when no limit shows in the range
 * measured (then the model applies none). */
static void derive_loop_front_end(mt_machine *m, const double *d, FILE *report)
{
    m->loop_split_ops = m->loop_line_ops = m->loop_overfull_cycles = 0;
    double one = d[F0]; /* a loop in one window: an iteration a cycle */
    for (int k = 0; k < NSPLIT; k++)
        if (d[SPLIT0 + k] > 1.5 * one) {
            m->loop_split_ops = k == 0 ? 0 : SPLIT_FIRST + k - 1;
            break;
        }
    for (int k = 0; k < NLINE; k++) {
        double ops = LINE_FIRST + k + 2, fast = fmax(one, ops / m->dispatch_width);
        if (d[LINE0 + k] > 1.4 * fast) {
            if (k > 0) {
                m->loop_line_ops = ops - 1;
                m->loop_overfull_cycles = d[LINE0 + k];
            }
            break;
        }
    }
    if (!(m->loop_split_ops > 0 && m->loop_line_ops > 0))
        m->loop_split_ops = m->loop_line_ops = m->loop_overfull_cycles = 0;
    if (report)
        fprintf(report, "  loop front end: %.0f ops in the first line of a split loop, %.0f ops in "
                        "one line, %.2f cycles beyond (0: no limit seen)\n",
                m->loop_split_ops, m->loop_line_ops, m->loop_overfull_cycles);
}

/* Loop exits from inner loops of exit_trips[k] iterations (d: cycles per
 * iteration): with the per-iteration rate of the two longest loops (both
 * mispredict their exits) and the per-entry overhead of the shortest, the
 * rest of an entry's time is the exit's.  exit_cycles: the median over
 * loops of 256 iterations and more; exit_trips: the longest loop before the
 * first that loses half of that.  None (0) when the longest lose under 5
 * cycles. */
static void derive_exits(mt_machine *m, const double *d, FILE *report)
{
    double e[NEXIT], pen[NEXIT];
    for (int k = 0; k < NEXIT; k++)
        e[k] = d[EXIT0 + k] * exit_trips[k]; /* cycles per entry */
    double rate = (e[NEXIT - 1] - e[NEXIT - 2]) / (exit_trips[NEXIT - 1] - exit_trips[NEXIT - 2]);
    double over = e[0] - rate * exit_trips[0];
    double big[NEXIT];
    int nbig = 0;
    for (int k = 0; k < NEXIT; k++) {
        pen[k] = e[k] - over - rate * exit_trips[k];
        if (exit_trips[k] >= 256)
            big[nbig++] = pen[k];
    }
    if (report) {
        fprintf(report, "  loop exits: per entry beyond the loop's iterations");
        for (int k = 0; k < NEXIT; k++)
            fprintf(report, " %d:%.0f", exit_trips[k], pen[k]);
        fputc('\n', report);
    }
    qsort(big, (size_t)nbig, sizeof *big, by_value);
    /* The loops past 256 iterations all mispredict their exit: their
     * penalties are one figure measured three times, differences of
     * figures a hundred times larger.  Apart by more than a quarter (and 5
     * cycles), one of them is wrong (on the AMD EPYC Zen 3, family 25
     * model 1, under a load of 6: -8, -34, -34 in one calibration, 16, 16,
     * 16 in the next): the default profile's figures stay. */
    if (big[nbig - 1] - big[0] > fmax(5, 0.25 * fabs(big[nbig / 2]))) {
        if (report)
            fprintf(report, "  loop exits: the penalties of the loops past 256 iterations disagree "
                            "(%.0f to %.0f cycles an entry): the default profile's %.1f cycles "
                            "past %.0f kept\n", big[0], big[nbig - 1], m->exit_cycles,
                    m->exit_trips);
        return;
    }
    m->exit_cycles = big[nbig / 2];
    m->exit_trips = 0;
    for (int k = 0; k < NEXIT && pen[k] < m->exit_cycles / 2; k++)
        m->exit_trips = exit_trips[k];
    if (m->exit_cycles < 5 || m->exit_trips >= exit_trips[NEXIT - 1])
        m->exit_cycles = m->exit_trips = 0;
    if (report)
        fprintf(report, "  loop exit: %.1f cycles per entry past %.0f iterations (0: none)\n",
                m->exit_cycles, m->exit_trips);
}

/* The ALU time of a loop's taken branch: loops of k adds, a counter and
 * cmp/jne take k + 1 adds' time plus the branch's (the median of k = 4, 6,
 * 8); not modelled (0) when that is under an add's.  A GPR store's data
 * takes an ALU slot when it slows the loop of 6 adds by more than half an
 * add against a vector store. */
static void derive_loop_alu(mt_machine *m, const double *d, FILE *report)
{
    double add = m->timing[MT_IC_ALU][MT_W128].rthroughput;
    double t[3] = {d[TA4] - 5 * add, d[TA6] - 7 * add, d[TA8] - 9 * add};
    qsort(t, 3, sizeof *t, by_value);
    m->taken_alu_cycles = t[1] > add ? t[1] : 0;
    m->stores_take_alu = d[AS] - d[AV] > 0.5 * add;
    /* A loop of one divide against divides back to back: what the loop's
     * taken branch adds on the divider (under a quarter cycle: noise). */
    double extra = d[DIV_LOOP] - m->timing[MT_IC_DIV32][MT_W128].rthroughput;
    m->divide_loop_cycles = extra >= 0.25 ? extra : 0;
    if (report)
        fprintf(report, "  taken branch in a loop: %.3f cycles of ALU time (0: an add's); GPR store "
                        "data on an ALU: %s; %.3f more on the divider with a divide in the loop "
                        "(0: none)\n", m->taken_alu_cycles, m->stores_take_alu ? "yes" : "no",
                m->divide_loop_cycles);
}

/* How far the core runs ahead of a chain through memory into the next
 * independent one, as loads in flight: with the row changing every CHAIN_N
 * steps of CHAIN_LOADS loads each, a step takes chain / (1 + ahead /
 * CHAIN_N) where ahead = loads / CHAIN_LOADS steps. */
static void derive_chain(mt_machine *m, const double *d, FILE *report)
{
    double chain = d[CH1], step = d[CH];
    m->chain_loads = step > 0 && chain > step ? (chain / step - 1) * CHAIN_N * CHAIN_LOADS : 0;
    if (report)
        fprintf(report, "  chain through memory: %.2f cycles a step, %.2f restarted every %d steps: "
                        "%.0f loads in flight ahead\n", chain, step, CHAIN_N, m->chain_loads);
}

/* Bypass delays from chains alternating two classes A and B: a round trip
 * costs lat A + lat B + x_A + x_B, x_C being the extra cycles before
 * another class sees C's result.  A cycle cannot tell which side of a
 * pair is slow, so the three pairs of FP add, FP multiply and vector
 * integer add are solved together, and FMA and shuffles paired with the FP
 * add.  Zen 5: only the FP add's x is 1 (to itself 2 cycles, to anything
 * else 3); Zen 3: none. */
static void derive_bypass(mt_machine *m, const double *d, FILE *report)
{
    enum { ADD, MUL, VALU, FMA, SHUF, N };
    static const mt_iclass cls[N] = {MT_IC_FADD, MT_IC_FMUL, MT_IC_VALU, MT_IC_FMA, MT_IC_SHUF};
    double lat[N], x[N];
    for (int i = 0; i < N; i++)
        lat[i] = m->timing[cls[i]][MT_W128].latency;
    /* each pair's round trip beyond its latencies: x of one plus x of the other */
    double add_mul = d[FADD_FMUL] - lat[ADD] - lat[MUL];
    double add_valu = d[FADD_VALU] - lat[ADD] - lat[VALU];
    double mul_valu = d[FMUL_VALU] - lat[MUL] - lat[VALU];
    x[ADD] = (add_mul + add_valu - mul_valu) / 2;
    x[MUL] = add_mul - x[ADD];
    x[VALU] = add_valu - x[ADD];
    x[FMA] = d[FADD_FMA] - lat[ADD] - lat[FMA] - x[ADD];
    x[SHUF] = d[FADD_SHUF] - lat[ADD] - lat[SHUF] - x[ADD];
    for (int i = 0; i < N; i++) {
        /* below a tenth of a cycle is the chains' noise, not a delay */
        m->bypass[cls[i]] = x[i] < 0.1 ? 0 : x[i];
        if (report)
            fprintf(report, "  bypass %-17s %8.3f cycles   (before another class sees its result)\n",
                    mt_iclass_name(cls[i]), m->bypass[cls[i]]);
    }
}

/* Immediate folding: a chain of add $8 faster than three quarters of an
 * ALU cycle is folded; the shift after a fold waits for what the pair takes
 * beyond the shift and the fold.  A cmov's data latency when it differs
 * from an ALU cycle by a tenth; add/sub/and/inc/dec + jcc fuse when six
 * nops and dec + jz dispatch within 5% of six nops and test + jz. */
static void derive_rename(mt_machine *m, const double *d, FILE *report)
{
    double alu = m->timing[MT_IC_ALU][MT_W128].latency;
    m->fold_latency = d[FOLD] < 0.75 * alu ? d[FOLD] : 0;
    m->fold_shift_cycles =
        m->fold_latency > 0 ? fmax(0, d[FOLD_SHL] - d[SHL] - m->fold_latency) : 0;
    if (m->fold_shift_cycles < 0.1)
        m->fold_shift_cycles = 0;
    m->cmov_data_cycles = fabs(d[CMOV_DATA] - alu) > 0.1 * alu ? d[CMOV_DATA] : 0;
    m->fuse_alu_jcc = d[FUSE_DEC] < 1.05 * d[FUSE_TEST];
    if (report)
        fprintf(report, "  immediate folding: add $8 chain %.3f cycles an add (fold latency %.3f; 0: "
                        "none), a shift after it waits %.3f more; cmov data %.3f cycles (0: an "
                        "ALU's); dec + jcc fused: %s\n", d[FOLD], m->fold_latency,
                m->fold_shift_cycles, d[CMOV_DATA], d[FUSE_DEC] < 1.05 * d[FUSE_TEST] ? "yes" : "no");
}

/* Small loops: the cycles of a loop of n ops, kept as a table when some n
 * runs more than 12% slower than max(1, n / dispatch width) and the core
 * has no op-cache line rule (which covers its small loops: Zen 5). */
static void derive_loop_ops(mt_machine *m, const double *d, FILE *report)
{
    memset(m->loop_ops_cycles, 0, sizeof m->loop_ops_cycles);
    bool slow = false;
    for (int k = 0; k < NLOOP_OPS; k++) {
        double n = LOOP_OPS_FIRST + k;
        slow = slow || d[LOOP_OPS0 + k] > 1.12 * fmax(1, n / m->dispatch_width);
    }
    if (slow && m->loop_line_ops <= 0)
        for (int k = 0; k < NLOOP_OPS; k++)
            m->loop_ops_cycles[LOOP_OPS_FIRST + k] = d[LOOP_OPS0 + k];
    if (report) {
        fprintf(report, "  loops by op count (cycles an iteration):");
        for (int k = 0; k < NLOOP_OPS; k++)
            fprintf(report, " %d:%.2f", LOOP_OPS_FIRST + k, d[LOOP_OPS0 + k]);
        fprintf(report, "\n  small-loop table: %s\n", m->loop_ops_cycles[LOOP_OPS_FIRST] > 0
                                                            ? "kept (slower than the dispatch width)"
                                                            : "none");
    }
}

/* ---- how busy the other CPUs were (busy_meter) ------------------------- */

/* The other CPUs' busy share over an interval: /proc/stat's busy time of
 * every CPU less this process's own CPU time, over what the other CPUs had
 * (every CPU's time less this one's wall time).  Start, measure, read. */
typedef struct {
    double busy_s, total_s;  /* every CPU's, from /proc/stat */
    double self_s, wall_s;   /* this process's CPU time; the clock */
    bool ok;                 /* /proc/stat was read */
} busy_meter;

/* Every CPU's busy and total time in seconds, from /proc/stat's "cpu" line
 * (user nice system idle iowait irq softirq steal ...: steal is time the
 * host gave to others, neither busy nor idle here). */
static bool read_cpu_times(double *busy_s, double *total_s)
{
    FILE *fp = fopen("/proc/stat", "r");
    if (!fp)
        return false;
    unsigned long long v[8] = {0};
    int n = fscanf(fp, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]);
    fclose(fp);
    double hz = (double)sysconf(_SC_CLK_TCK);
    if (n < 5 || !(hz > 0))
        return false;
    double busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6]);
    *busy_s = busy / hz;
    *total_s = (busy + (double)(v[3] + v[4])) / hz;
    return true;
}

static double self_cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static void busy_meter_start(busy_meter *b)
{
    b->ok = read_cpu_times(&b->busy_s, &b->total_s);
    b->self_s = self_cpu_seconds();
    b->wall_s = mt_now_seconds();
}

/* % of the other CPUs' time they were busy since the start; 0 when the
 * machine has one CPU or /proc/stat cannot be read. */
static double busy_meter_others_pct(const busy_meter *b)
{
    double busy, total;
    if (!b->ok || !read_cpu_times(&busy, &total))
        return 0;
    double others_busy = (busy - b->busy_s) - (self_cpu_seconds() - b->self_s);
    double others_time = (total - b->total_s) - (mt_now_seconds() - b->wall_s);
    if (!(others_time > 0.05)) /* one CPU, or too short to tell */
        return 0;
    return 100 * fmin(1, fmax(0, others_busy / others_time));
}

static const char *const derived_names[NDERIVED] = {
    "vmovq load + vmovq to gpr", "gpr<->vector round trip", "taken loop branch tput",
    "counter probe tput", "load lat, indexed", "cmp+cmov chain", "loop in one window",
    "loop across 32 bytes", "loop across 64 bytes", "dispatch (nop tput)",
    "4 adds + 4 movs", "4 adds + 4 nops", "fadd+fmul chain", "fadd+vpaddq chain",
    "fmul+vpaddq chain", "fadd+fma chain", "fadd+vpshufd chain",
    "split loop, 4 ops first", "split loop, 5 ops first", "split loop, 6 ops first",
    "split loop, 7 ops first", "split loop, 8 ops first", "split loop, 9 ops first",
    "split loop, 10 ops first", "one-line loop, 10 ops", "one-line loop, 11 ops",
    "one-line loop, 12 ops", "one-line loop, 13 ops", "one-line loop, 14 ops",
    "one-line loop, 15 ops", "one-line loop, 16 ops", "one-line loop, 17 ops",
    "loop of 32, per iteration", "loop of 64, per iteration", "loop of 96, per iteration",
    "loop of 128, per iteration", "loop of 160, per iteration", "loop of 192, per iteration",
    "loop of 256, per iteration", "loop of 512, per iteration", "loop of 1024, per iteration",
    "4 adds + loop control", "6 adds + loop control", "8 adds + loop control",
    "6 adds + GPR store", "6 adds + vector store", "chain, row every 16 steps",
    "chain, one row", "add $8 chain", "shl $2 chain", "add $8 + shl $2 chain",
    "cmov data chain", "6 nops + test/jz", "6 nops + dec/jz", "loop of one div r32",
    "loop of 3 ops",
    "loop of 4 ops", "loop of 5 ops", "loop of 6 ops", "loop of 7 ops", "loop of 8 ops",
    "loop of 9 ops", "loop of 10 ops", "loop of 11 ops", "loop of 12 ops", "loop of 13 ops",
    "loop of 14 ops", "loop of 15 ops", "loop of 16 ops", "loop of 17 ops", "loop of 18 ops",
    "loop of 19 ops", "loop of 20 ops", "loop of 21 ops", "loop of 22 ops", "loop of 23 ops",
    "loop of 24 ops", "loop with its jump across 32 bytes", "2 vector loads + a store",
    "3 loads + a store", "call + ret", "dispatch (zeroing xors)"};
static const bench_fn derived_fns[NDERIVED] = {vload_lat, gpr2vec_lat, branch_taken_tp,
                                               probe_tp, load_index_lat, cmov_lat,
                                               fetch_inside, fetch_cross32, fetch_cross64,
                                               dispatch_tp, add_mov_tp, add_nop_tp,
                                               fadd_fmul_lat, fadd_valu_lat, fmul_valu_lat,
                                               fadd_fma_lat, fadd_shuf_lat,
                                               oc_split4, oc_split5, oc_split6, oc_split7,
                                               oc_split8, oc_split9, oc_split10, oc_line8,
                                               oc_line9, oc_line10, oc_line11, oc_line12,
                                               oc_line13, oc_line14, oc_line15,
                                               exit_loop32, exit_loop64, exit_loop96,
                                               exit_loop128, exit_loop160, exit_loop192,
                                               exit_loop256, exit_loop512, exit_loop1024,
                                               taken_adds4, taken_adds6, taken_adds8,
                                               adds6_store, adds6_vstore, chain_rows,
                                               chain_one_row, fold_lat, shl_lat, fold_shl_lat,
                                               cmov_data_lat, fuse_test, fuse_dec, div32_loop,
                                               loop_ops1, loop_ops2, loop_ops3, loop_ops4,
                                               loop_ops5, loop_ops6, loop_ops7, loop_ops8,
                                               loop_ops9, loop_ops10, loop_ops11, loop_ops12,
                                               loop_ops13, loop_ops14, loop_ops15, loop_ops16,
                                               loop_ops17, loop_ops18, loop_ops19, loop_ops20,
                                               loop_ops21, loop_ops22, fetch_jcc32,
                                               vloads2_store, loads3_store, call_ret_tp,
                                               dispatch_xor_tp};
static const double derived_ops[NDERIVED] = {1, 1, 1, 4, 1, 1, 1, 1, 1, 8, 1, 1,
                                             1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                             1, 1, 1, 1, 1, 1, 1, 1,
                                             16, 16, 16, 16, 16, 16, 16, 16, 16,
                                             1, 1, 1, 1, 1, 1, 1,
                                             1, 1, 1, 1, 1, 1, 1,
                                             1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                             1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 4, 1, 8};
_Static_assert(MT_ARRAY_LEN(benches) + NDERIVED <= MT_CALIBRATION_BENCHES_MAX,
               "mt_machine.calibration_how has a slot for every benchmark");

size_t mt_calibration_benches(void)
{
    return MT_ARRAY_LEN(benches) + NDERIVED;
}

const char *mt_calibration_bench_name(size_t i)
{
    size_t nb = MT_ARRAY_LEN(benches);
    return i < nb ? benches[i].name : i < nb + NDERIVED ? derived_names[i - nb] : NULL;
}

int mt_calibration_bench_index(const char *name)
{
    for (size_t i = 0; i < mt_calibration_benches(); i++)
        if (!strcmp(name, mt_calibration_bench_name(i)))
            return (int)i;
    return -1;
}

static void measure_bench(size_t i, void *buf, int pass, int samples, sample_set *set)
{
    size_t nb = MT_ARRAY_LEN(benches);
    if (i < nb)
        measure(benches[i].f, benches[i].ops, benches[i].avx512, buf, pass, samples, set);
    else
        measure(derived_fns[i - nb], derived_ops[i - nb], false, buf, pass, samples, set);
}

/* Passes over the benchmarks whose samples repeat no figure yet, each
 * when the probes say the core is quiet (polled every QUIET_POLL_MS), for
 * at most the caller's wait (MT_CALIBRATE_WAIT_SECONDS, or a command's
 * own calibration's, shorter): a pass over a few of them takes
 * milliseconds, and a neighbour's compile on the SMT sibling leaves the core now and then
 * (on the AMD EPYC Zen 3, family 25 model 1, under a load of 5.5: the
 * one-branch loop alone in 7% of 22000 samples, in stretches). */
#define QUIET_POLL_MS 2
#define PASS_SAMPLES 15 /* samples of a benchmark in a pass */
#define EXTRA_SAMPLES 5 /* ... in a pass after them */

/* The probes' readings with the core to itself: the third fastest of
 * every probe of the calibration (thousands) rather than the fastest, which
 * one reading the clock references got a little wrong could set; not a
 * percentile, since under load the core is this thread's alone in a few
 * percent of the probes only (on the AMD EPYC Zen 3, family 25 model 1,
 * under a load of 5: the first percentile of the one-branch loop 1.042
 * cycles, its fastest 1.01). */
static probe_pair quiet_readings(const sample_set *sets, size_t total)
{
    size_t n = 0;
    for (size_t i = 0; i < total; i++)
        n += sets[i].n;
    double *alu = mt_xcalloc(n + 1, sizeof *alu), *front = mt_xcalloc(n + 1, sizeof *front);
    size_t k = 0;
    for (size_t i = 0; i < total; i++)
        for (size_t j = 0; j < sets[i].n; j++, k++) {
            alu[k] = sets[i].probe[j].alu;
            front[k] = sets[i].probe[j].front;
        }
    qsort(alu, n, sizeof *alu, by_value);
    qsort(front, n, sizeof *front, by_value);
    size_t third = n > 2 ? 2 : 0;
    probe_pair f = {n ? alu[third] : NAN, n ? front[third] : NAN};
    free(alu);
    free(front);
    return f;
}

/* Each benchmark's figure (rep[i].agree 0: none repeats), its samples
 * quiet when both probes around them are within QUIET_PROBE of the
 * calibration's quiet readings; how many benchmarks have none.  Quiet
 * readings whose one-branch loop is at no whole number of cycles were
 * never the core to itself (another thread had its front end throughout:
 * a slow loop figure then repeats as well as a right one, and the profile
 * the Xeon family 6 model 207 kept that way predicted add_i32 50% long),
 * so no sample is quiet then and every figure falls back. */
static int repeat_all(sample_set *sets, mt_repeat *rep, const bool *skip, size_t total)
{
    probe_pair quiet = quiet_readings(sets, total);
    bool front_alone = mt_front_end_whole(quiet.front);
    int failed = 0;
    for (size_t i = 0; i < total; i++) {
        if (skip[i])
            continue;
        for (size_t k = 0; k < sets[i].n; k++)
            sets[i].s[k].quiet = front_alone && probes_quiet(sets[i].probe[k], quiet);
        failed += mt_repeated_figure(sets[i].s, (int)sets[i].n, &rep[i]) != 0;
    }
    return failed;
}

static bool quiet_now(probe_pair quiet, void *buf)
{
    return probes_quiet(probe_cycles(clock_reference(240, buf), buf), quiet);
}

/* Waits until the probes are quiet (true), or until `deadline` (false). */
static bool wait_quiet(probe_pair quiet, double deadline, void *buf)
{
    while (mt_now_seconds() < deadline) {
        if (quiet_now(quiet, buf))
            return true;
        struct timespec pause = {0, QUIET_POLL_MS * 1000000L};
        nanosleep(&pause, NULL);
    }
    return false;
}

/* `runs` passes over every benchmark, so that a benchmark's samples are
 * far apart in time (a busy neighbour on the core lasts tens of
 * milliseconds, longer than one benchmark's samples), then passes over
 * those whose quiet samples repeat no figure yet; those still without one
 * after the wait fall back (mt_fallback_figure). */
static void measure_until_repeated(sample_set *sets, mt_repeat *rep, const bool *skip, int runs,
                                   double wait_seconds, void *buf, FILE *report)
{
    size_t total = MT_ARRAY_LEN(benches) + NDERIVED;
    for (int r = 0; r < runs; r++)
        for (size_t i = 0; i < total; i++)
            if (!skip[i])
                measure_bench(i, buf, r, PASS_SAMPLES, &sets[i]);
    int failed = repeat_all(sets, rep, skip, total), first_failed = failed, extra = 0;
    size_t next = 0;
    double start = mt_now_seconds();
    probe_pair quiet = quiet_readings(sets, total);
    while (failed && wait_quiet(quiet, start + wait_seconds, buf)) {
        extra++;
        /* A quiet moment may be short: each benchmark a few samples, the
         * first of them where the last pass stopped. */
        for (size_t k = 0; k < total; k++) {
            size_t i = (next + k) % total;
            if (!skip[i] && !rep[i].agree) {
                measure_bench(i, buf, runs + extra - 1, EXTRA_SAMPLES, &sets[i]);
                next = i + 1;
                if (!quiet_now(quiet, buf))
                    break;
            }
        }
        failed = repeat_all(sets, rep, skip, total);
        quiet = quiet_readings(sets, total);
    }
    if (report && extra)
        fprintf(report, "  %d benchmark%s without a figure three quiet samples repeat: measured again "
                        "in %d more passes over %.1f s, %d still without (they fall back)\n",
                first_failed, first_failed > 1 ? "s" : "", extra, mt_now_seconds() - start, failed);
    double front = quiet_readings(sets, total).front;
    if (report && !mt_front_end_whole(front))
        fprintf(report, "  the one-branch loop probe never ran at a whole number of cycles an "
                        "iteration (at best %.3f): another thread shared this core's front end "
                        "throughout, so no sample was quiet and every figure falls back\n", front);
    for (size_t i = 0; i < total; i++)
        if (!skip[i] && !rep[i].agree)
            mt_fallback_figure(sets[i].s, (int)sets[i].n, &rep[i]);
}

static void report_line(FILE *report, const char *name, const sample_set *set, const mt_repeat *r,
                        double value)
{
    if (!report)
        return;
    double *v = mt_xcalloc(set->n + 1, sizeof *v);
    for (size_t k = 0; k < set->n; k++)
        v[k] = set->s[k].value;
    double median = cm_median(v, (int)set->n);
    free(v);
    fprintf(report, "  %-24s %8.3f cycles   %d of %zu samples quiet; %d agree, %d of them quiet "
                    "(%d passes); median sample %+.0f%%%s%s\n", name, value, r->quiet, set->n,
            r->agree, r->quiet_agree, r->passes,
            r->figure > 0 ? 100 * (median - r->figure) / r->figure : 0,
            r->how == MT_CONFIRMED ? "" : "; fell back: ", r->how == MT_CONFIRMED ? "" :
            r->how == MT_FELL_BACK_REPEATED ? "the fastest value any three samples repeat"
                                            : "the second-fastest sample");
}

/* Which figures quiet samples confirmed and which fell back, into the
 * profile (m->calibration_how) and one line of the report naming the
 * latter. */
static void record_confirmation(mt_machine *m, const mt_repeat *rep, const bool *skip, size_t total,
                                FILE *report)
{
    memset(m->calibration_how, MT_CONFIRMED, sizeof m->calibration_how);
    m->calibration_confirmed = m->calibration_fallbacks = 0;
    for (size_t i = 0; i < total; i++) {
        if (skip[i])
            continue;
        m->calibration_how[i] = (uint8_t)rep[i].how;
        if (rep[i].how == MT_CONFIRMED)
            m->calibration_confirmed++;
        else
            m->calibration_fallbacks++;
    }
    if (!report)
        return;
    fprintf(report, "  figures confirmed by quiet samples: %.0f of %.0f", m->calibration_confirmed,
            m->calibration_confirmed + m->calibration_fallbacks);
    const char *sep = "; fell back (not confirmed within the wait): ";
    for (size_t i = 0; i < total; i++)
        if (!skip[i] && rep[i].how != MT_CONFIRMED) {
            fprintf(report, "%s'%s' (%s)", sep, mt_calibration_bench_name(i),
                    mt_confirm_name(rep[i].how));
            sep = ", ";
        }
    fputc('\n', report);
}

int mt_calibrate(mt_machine *m, int runs, double wait_seconds, FILE *report, mt_error *err)
{
    if (runs < 1 || runs > 50) {
        mt_error_set(err, "calibrate: runs must be 1..50");
        return -1;
    }
    mt_machine_default(m);
    mt_machine_cpu_model(m->cpu_model, sizeof m->cpu_model);
    busy_meter busy;
    busy_meter_start(&busy);
    /* 0..4 KiB: loads (a ring at 1 KiB); 4..8 KiB: the store window */
    uint64_t *buf = aligned_alloc(64, 8192);
    memset(buf, 0, 8192);
    mt_clock_refs refs;
    double ratio;
    /* A disagreement that load on the SMT sibling made passes when measured
     * again; one that the core makes stays.  Back to back, three attempts
     * all failed once in CI (an FP multiply chain at 5.38 cycles: the
     * sibling's FP work delaying the chain for the whole ~10 ms), so the
     * attempts are spread over 1.5 s. */
    int rc = -1;
    for (int attempt = 0; attempt < CLOCK_ATTEMPTS && rc != 0; attempt++) {
        if (attempt > 0) {
            if (report && err)
                fprintf(report, "  %s; measured again in %d ms\n", err->msg,
                        attempt * CLOCK_BACKOFF_MS);
            struct timespec pause = {0, (long)attempt * CLOCK_BACKOFF_MS * 1000000L};
            nanosleep(&pause, NULL);
        }
        measure_clock_refs(&refs, buf);
        if (report)
            fprintf(report, "  clock references (TSC ticks per instruction, dependent chains): add "
                            "%.4f, imul %.4f (%.4f per cycle), FP multiply %.4f (%.2f cycles)\n",
                    refs.add_rr, refs.imul, refs.imul / 3, refs.fmul, refs.fmul / (refs.imul / 3));
        rc = mt_clock_check(&refs, &ratio, err);
    }
    if (rc != 0) {
        free(buf);
        return -1;
    }
    __builtin_cpu_init();
    m->has_avx512 = __builtin_cpu_supports("avx512f");
    for (int k = 0; k < 8; k++) /* the ring load_lat chases */
        buf[128 + 8 * k] = (uint64_t)(uintptr_t)&buf[128 + 8 * ((k + 1) % 8)];
    /* Runs are passes over every benchmark, so that a benchmark's runs are
     * far apart in time: a busy neighbour on the core lasts tens of
     * milliseconds, longer than one benchmark's samples. */
    size_t nb = MT_ARRAY_LEN(benches), total = nb + NDERIVED;
    sample_set *sets = mt_xcalloc(total, sizeof *sets);
    mt_repeat *rep = mt_xcalloc(total, sizeof *rep);
    bool *skip = mt_xcalloc(total, sizeof *skip);
    for (size_t i = 0; i < nb; i++)
        skip[i] = benches[i].avx512 && !m->has_avx512;
    measure_until_repeated(sets, rep, skip, runs, wait_seconds, buf, report);
    record_confirmation(m, rep, skip, total, report);
    double d[NDERIVED];
    for (size_t i = 0; i < total && rc == 0; i++) {
        if (skip[i])
            continue;
        double v = rep[i].figure - (i < nb ? benches[i].subtract : 0);
        report_line(report, mt_calibration_bench_name(i), &sets[i], &rep[i], v);
        if (i < nb)
            apply(m, &benches[i], v);
        else
            d[i - nb] = v;
    }
    for (size_t i = 0; i < total && rc == 0; i++)
        if (!skip[i])
            rc = check_figure(mt_calibration_bench_name(i), rep[i].figure, err);
    double *ratios = mt_xcalloc(total, sizeof *ratios);
    int nratio = 0;
    for (size_t i = 0; i < total; i++)
        if (sets[i].n)
            ratios[nratio++] = sets[i].ratio_sum / (double)sets[i].n;
    m->tsc_per_cycle = nratio ? cm_median(ratios, nratio) : ratio;
    free(ratios);
    for (size_t i = 0; i < total; i++) {
        free(sets[i].s);
        free(sets[i].probe);
    }
    free(sets);
    free(rep);
    free(skip);
    if (rc != 0) {
        free(buf);
        return -1;
    }
    for (int w = 0; w < MT_W_COUNT; w++) {
        /* vmovq load + vmovq back to a GPR: half the round trip is the latter */
        m->timing[MT_IC_VLOAD][w].latency = fmax(0, d[VL] - d[G] / 2);
        /* cmp (one ALU cycle) then cmov: the rest is the cmov's */
        m->timing[MT_IC_CMOV][w].latency = fmax(0, d[CM] - 1);
        /* none on Intel's Golden Cove family (the difference is noise there) */
        m->timing[MT_IC_LOADX][w].latency =
            fmax(0, d[IX] - m->timing[MT_IC_LOAD][MT_W128].latency);
    }
    m->timing[MT_IC_GPR2VEC][MT_W128].latency = d[G] / 2;
    m->taken_per_cycle = 1 / d[T];
    m->dispatch_width = fmin(32, fmax(1, 1 / fmax(d[DW], d[DWX])));
    m->moves_take_alu = d[AM] > 1.2 * d[AN];
    derive_pipes(m);
    derive_store_pipes(m, d, report);
    derive_bypass(m, d, report);
    /* The smallest window whose boundary makes the loop half as fast. */
    m->fetch_window = d[F32] > 1.5 * d[F0] ? 32 : d[F64] > 1.5 * d[F0] ? 64 : 0;
    /* The same loop with its jump, not its start, across 32 bytes: what a
     * jump on a boundary costs (under a quarter cycle: noise). */
    double jcc = d[JCC32] - d[F32];
    m->jcc_boundary_cycles = jcc >= 0.25 ? jcc : 0;
    /* A call and its return: charged where they take a tenth more than two
     * taken branches. */
    m->call_ret_cycles = d[CALL_RET] > 1.1 * 2 * d[T] ? d[CALL_RET] : 0;
    if (report)
        fprintf(report, "  a jump across a 32-byte boundary: %.3f more cycles an iteration (0: none); "
                        "a call and its return %.3f cycles (two taken branches %.3f; kept: %.3f)\n",
                m->jcc_boundary_cycles, d[CALL_RET], 2 * d[T], m->call_ret_cycles);
    derive_loop_front_end(m, d, report);
    derive_exits(m, d, report);
    derive_loop_alu(m, d, report);
    derive_chain(m, d, report);
    derive_rename(m, d, report);
    derive_loop_ops(m, d, report);
    m->probe_cycles = d[PR];
    m->loads_per_cycle = 1 / m->timing[MT_IC_LOAD][MT_W128].rthroughput;
    m->stores_per_cycle = 1 / m->timing[MT_IC_STORE][MT_W128].rthroughput;
    struct timespec ts0, ts1;
    clock_gettime(CLOCK_MONOTONIC, &ts0);
    uint64_t c0 = __rdtsc();
    do
        clock_gettime(CLOCK_MONOTONIC, &ts1);
    while ((double)(ts1.tv_sec - ts0.tv_sec) + (double)(ts1.tv_nsec - ts0.tv_nsec) * 1e-9 < 0.05);
    m->tsc_hz = (double)(__rdtsc() - c0) /
                ((double)(ts1.tv_sec - ts0.tv_sec) + (double)(ts1.tv_nsec - ts0.tv_nsec) * 1e-9);
    time_t now = time(NULL);
    strftime(m->source, sizeof m->source, "calibrated %Y-%m-%d %H:%M", localtime(&now));
    m->calibration_busy_pct = busy_meter_others_pct(&busy);
    if (report)
        fprintf(report, "  other CPUs busy during the measurements: %.0f%% of their time%s\n",
                m->calibration_busy_pct,
                m->calibration_busy_pct > MT_CALIBRATION_BUSY_PCT
                    ? " (one may share this core: the figures are from its quiet samples)" : "");
    free(buf);
    return check_profile(m, err);
}
