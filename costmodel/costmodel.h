/* costmodel/costmodel.h — the static cost model: how many core cycles each
 * block would take if every memory access hit L1 (MTOOL's "predicted" time).
 *
 * A machine profile (mt_machine) holds, per instruction class, the latency
 * and reciprocal throughput measured by `mtool calibrate` (calibrate.c), the
 * execution pipes each class may use, and the widths that bound the core.
 * The predictor (predict.c) decodes a block with capstone, maps every
 * instruction to classes and pipes (classify.c), and takes the largest of
 * the throughput bounds and the dependency bound: the critical path of one
 * execution, or for a loop body the steady-state recurrence across
 * iterations (register, flag and memory-carried).  Design: docs/COST-MODEL.md. */
#ifndef MTOOL_COSTMODEL_H
#define MTOOL_COSTMODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../analyzer/analyzer.h"
#include "../common/util.h"

/* Instruction classes: one latency and throughput each, per vector width. */
typedef enum {
    MT_IC_ALU,       /* add, sub, logic, cmp, test, mov imm, movzx, setcc */
    MT_IC_CMOV,      /* cmovcc: its flags input is slower than an ALU's */
    MT_IC_LEA,       /* lea with base+index or base+disp (simple) */
    MT_IC_LEA3,      /* lea with base, index and displacement (complex) */
    MT_IC_SHIFT,     /* shl, shr, sar, rol, ror by immediate or cl */
    MT_IC_IMUL,      /* imul r, r(, imm): 64-bit product */
    MT_IC_MULWIDE,   /* mul/imul with rdx:rax result */
    MT_IC_DIV32,     /* div/idiv 32-bit */
    MT_IC_DIV64,     /* div/idiv 64-bit */
    MT_IC_BITCNT,    /* popcnt, lzcnt, tzcnt, bsf, bsr */
    MT_IC_BRANCH,    /* jcc, jmp, call, ret: the branch unit */
    MT_IC_LOAD,      /* load of a general-purpose register, L1 hit (base + displacement) */
    MT_IC_LOADX,     /* extra latency of an address with a scaled index register */
    MT_IC_VLOAD,     /* load of a vector register, L1 hit */
    MT_IC_STORE,     /* store (address and data), L1 */
    MT_IC_STLF,      /* store-to-load forwarding: store data to dependent load result */
    MT_IC_VSTLF,     /* the same into a vector register (Zen 5: 8.7 cycles at every width,
                        against 0.5 for a GPR) */
    MT_IC_VALU,      /* packed integer add, logic, compare, min/max, blend */
    MT_IC_VSHIFT,    /* packed integer shifts */
    MT_IC_VIMUL,     /* pmulld, pmuludq, pmaddwd */
    MT_IC_VMOV,      /* vector register copy */
    MT_IC_SHUF,      /* shuffles, permutes, unpacks, inserts, extracts, broadcasts */
    MT_IC_FADD,      /* add, sub, min, max, compare on floats */
    MT_IC_FMUL,
    MT_IC_FMA,
    MT_IC_FDIV32,    /* single-precision divide */
    MT_IC_FDIV64,    /* double-precision divide */
    MT_IC_FSQRT32,
    MT_IC_FSQRT64,
    MT_IC_CVT,       /* int<->float and float<->double conversions */
    MT_IC_GPR2VEC,   /* movd/movq between general and vector registers */
    MT_IC_GATHER,    /* vgather*: one per instruction, 8 elements */
    MT_IC_HORIZ,     /* haddps, dpps, ptest and other multi-step ops */
    MT_IC_MICROCODE, /* anything else: string ops, cpuid, lock prefix ... */
    MT_IC_COUNT
} mt_iclass;

/* Vector width of an instruction (scalar FP counts as 128). */
typedef enum { MT_W128, MT_W256, MT_W512, MT_W_COUNT } mt_width;

/* Execution pipes.  Names follow AMD Zen 5 (six integer ALUs, four AGUs,
 * six FP pipes); a smaller core maps its ports onto a subset of the bits
 * (a class may use any pipe of its mask). */
enum {
    MT_PIPE_ALU0, MT_PIPE_ALU1, MT_PIPE_ALU2, MT_PIPE_ALU3, MT_PIPE_ALU4, MT_PIPE_ALU5,
    MT_PIPE_AGU0, MT_PIPE_AGU1, MT_PIPE_AGU2, MT_PIPE_AGU3,
    MT_PIPE_FP0, MT_PIPE_FP1, MT_PIPE_FP2, MT_PIPE_FP3, MT_PIPE_FP4, MT_PIPE_FP5,
    MT_PIPE_COUNT
};

typedef struct {
    double latency;      /* core cycles from inputs ready to result ready */
    double rthroughput;  /* core cycles per instruction when independent */
} mt_timing;

/* What a calibration measures: a profile written by an older mtool lacks
 * what came since (2: bypass delays and the loop front end; 3: loop exits,
 * the ALU time of taken branches and stored data, vector store-to-load
 * forwarding, chains through nested loops; 4: immediate folding, the
 * data latency of cmov, add/sub/and/inc/dec + jcc fusion, the cycles of
 * small loops by their op count, and the model's self-check; 5: the latency
 * of each level of the memory hierarchy; 6: those latencies without page
 * walks, the data TLB's levels and the walk's cost). */
#define MT_MACHINE_PROFILE_VERSION 6

/* The load-to-use latency of a level of the memory hierarchy (latency.c):
 * L1, L2, L3, L4, then memory. */
#define MT_MEM_LEVELS 5
#define MT_MEM_MEMORY (MT_MEM_LEVELS - 1)
typedef struct {
    double cycles;       /* core cycles a dependent load takes at this level; 0: not measured */
    double spread_pct;   /* (slowest - fastest) / fastest over the chases, % */
    double bytes;        /* the working set chased */
    double stream_cycles; /* core cycles a line of the same set walked in address order takes,
                             one independent load a line; 0: not measured (older profiles) */
} mt_mem_latency;

/* A level of the data TLB for 4 KiB pages: translations held, in sets of
 * `ways` (ways = entries: fully associative). */
typedef struct {
    uint32_t entries, ways;
} mt_tlb_level;
#define MT_TLB_LEVELS 2

typedef struct {
    char cpu_model[128];     /* "model name" of /proc/cpuinfo: the profile's key */
    int version;             /* MT_MACHINE_PROFILE_VERSION of the mtool that wrote it */
    char source[64];         /* "default (shipped)" or "calibrated YYYY-MM-DD" */
    double tsc_per_cycle;    /* TSC ticks per core cycle when calibrated */
    double tsc_hz;           /* TSC rate */
    double dispatch_width;   /* macro-ops per cycle */
    double loads_per_cycle, stores_per_cycle;
    double taken_per_cycle;  /* taken branches per cycle */
    double probe_cycles;     /* cost of one `incq %gs:disp32` counter probe */
    double fetch_window;     /* bytes: a loop fetches at most one aligned window of
                                this size per cycle (0: no such limit seen) */
    /* Loops on an op cache without that window limit (Zen 5; calibrated,
     * 0: not measured, no limit applied): a loop whose ops fit one line
     * (loop_line_ops) runs an iteration a cycle; a line holding more costs
     * loop_overfull_cycles; a small loop across a line boundary whose first
     * line holds more than loop_split_ops ops takes a cycle per line
     * (mt_front_end_cycles, docs/COST-MODEL.md). */
    double loop_split_ops, loop_line_ops, loop_overfull_cycles;
    bool moves_take_alu;     /* renamed register moves still take an ALU issue slot */
    bool stores_take_alu;    /* a store of a GPR (or an immediate) takes an ALU issue slot
                                for its data; vector stores do not */
    /* ALU time of a taken branch in a loop (calibrated with loops of
     * independent adds: on the Zen 5 about two ALU slots; 0: one slot, the
     * ALU's reciprocal throughput). */
    double taken_alu_cycles;
    /* Cycles a taken branch adds on the divider's pipe in code holding a
     * divide (calibrated: a loop of one `div r32` an iteration against the
     * divide's throughput; the Xeon family 6 model 85's microcoded divide
     * about 1.5 a loop iteration; 0: none, or a profile older than the
     * rule). */
    double divide_loop_cycles;
    /* Cycles a loop iteration loses for each jump on its path (with the
     * compare fused to it) that crosses or ends on a 32-byte boundary
     * (calibrated: a small loop with its `dec`/`jnz` across 32 bytes against
     * the same loop beside it; Intel's Skylake-derived cores after the JCC
     * erratum's microcode do not keep such a window in the decoded-op cache;
     * 0: none, or a profile older than the rule). */
    double jcc_boundary_cycles;
    /* Cycles of a call and its return together, where they take longer
     * than two taken branches (calibrated: a run of calls to a bare `ret`;
     * 4.0 on the AMD EPYC Zen 4, family 25 model 17, whose taken branches
     * run one a cycle; 0: no more than two taken branches, or a profile
     * older than the rule).  Each call and each return is charged half, in
     * the taken-branch bound. */
    double call_ret_cycles;
    /* Loop exits (calibrated; 0: none measured, nothing charged).  A loop
     * entered for more than exit_trips iterations on average mispredicts its
     * exit once per entry and loses exit_cycles, less what the backlog of a
     * recurrence-bound loop hides (mt_loop_exit_cycles). */
    double exit_trips, exit_cycles;
    /* Chains through memory (store, forwarded load, ...) that restart at
     * each entry of a loop: the loads the core holds in flight while it
     * runs ahead of one into the next entry's independent chain
     * (calibrated; 0: no overlap). */
    double chain_loads;
    /* Immediate folding at rename (Intel's Golden Cove family; calibrated,
     * 0: none): a 64-bit add/sub $imm, inc, dec or lea disp(r) whose flags
     * nothing reads takes no execution pipe and passes its input on in
     * fold_latency cycles; a shift or rotate reading its result waits
     * fold_shift_cycles more (the constant is materialized first). */
    double fold_latency, fold_shift_cycles;
    /* A cmov's data inputs reach its result in cmov_data_cycles (0: one
     * ALU cycle, as on Zen; its flags input: the cmov class latency). */
    double cmov_data_cycles;
    /* add/sub/and/inc/dec + jcc fuse into one op (Intel), like cmp/test + jcc. */
    bool fuse_alu_jcc;
    /* Cycles per iteration of a loop of n ops (fused, in one contiguous
     * run of code), loop_ops_cycles[n] for n = 1 .. MT_LOOP_OPS_MAX when a
     * core runs small loops slower than ops / dispatch width (the Xeon
     * family 6 model 207: 9 to 12 ops take 2 cycles, 17 and 18 take 3);
     * 0: not measured, no such bound. */
#define MT_LOOP_OPS_MAX 24
    double loop_ops_cycles[MT_LOOP_OPS_MAX + 1];
    bool has_avx512;
    uint16_t pipes[MT_IC_COUNT];              /* bit set of MT_PIPE_* */
    mt_timing timing[MT_IC_COUNT][MT_W_COUNT];
    /* Extra cycles before an instruction of another class sees a result of
     * this class (a bypass delay between execution units: Zen 5's FP adds
     * forward to FP adds in 2 cycles, to anything else in 3).  Calibrated
     * from chains alternating two classes; 0 where none was measured. */
    double bypass[MT_IC_COUNT];
    /* The model's self-check at calibration (run/selfcheck.c): compute-bound
     * kernels predicted with this profile from pass-1 counts, against their
     * measured time.  check_kernels 0: not checked (shipped profiles, older
     * calibrations); the other figures then mean nothing. */
    double check_kernels;          /* kernels predicted and measured */
    double check_median_error_pct; /* median over them of |predicted / measured - 1|, % */
    double check_worst_error_pct;  /* the largest |error|, signed (+: over-predicted), % */
    char check_worst_kernel[32];   /* ... and its kernel */
    /* How busy the machine's other CPUs were while mt_calibrate measured,
     * % of their time (calibrate.c's busy meter; 0: idle, one CPU, or not known). */
    double calibration_busy_pct;
    /* How each calibration benchmark's figure was made (calibrate.c),
     * indexed as mt_calibration_bench_name: MT_CONFIRMED (or not measured:
     * a profile without the record, an AVX-512 benchmark on a core without
     * it) or the fallback a figure that quiet samples did not confirm
     * within the calibration's wait took; calibration_confirmed counts the
     * confirmed (0 with calibration_fallbacks 0: not recorded). */
#define MT_CALIBRATION_BENCHES_MAX 160
    uint8_t calibration_how[MT_CALIBRATION_BENCHES_MAX];
    double calibration_confirmed, calibration_fallbacks;
    /* Latency of each level (L1 .. L4, memory) by pointer chases
     * (latency.c); a level the machine lacks, or a profile of version < 5,
     * has 0 cycles. */
    mt_mem_latency mem_latency[MT_MEM_LEVELS];
    /* Misses to memory the core keeps in flight at once (latency.c: 16
     * independent chases against one); 0: not measured. */
    double mem_parallelism;
    /* The data TLB (latency.c; profile version 6): its 4 KiB levels as cpuid
     * told them (entries 0: not told), the cycles a page walk adds to a load
     * (0: not measured; then mem_latency's figures include walks, as
     * version 5's did), and whether the latency chases ran on huge pages
     * (the TLB then held their pages; else a walk's share was subtracted). */
    mt_tlb_level tlb[MT_TLB_LEVELS];
    double tlb_walk_cycles;
    bool latency_huge_pages;
} mt_machine;

/* Other CPUs busier than this (%) during a calibration: a KVM guest's vCPUs
 * may be SMT siblings of one physical core, which the guest cannot see, and
 * a busy sibling slows what the calibration measures (on the Xeon family 6
 * model 207 with a test suite on the other vCPU: a one-branch loop 1.62
 * cycles an iteration instead of 1.0, and every whole program predicted
 * 20-50% long).  Such a profile is not kept by the commands that calibrate
 * by themselves, and every report that predicts with it says so. */
#define MT_CALIBRATION_BUSY_PCT 50


const char *mt_iclass_name(mt_iclass c);
const char *mt_width_name(mt_width w);

/* The profiles shipped with mtool (calibrations of the Zen 5 and Zen 3
 * guests it was developed on): the one for a CPU of this family and model,
 * else of this family, else the newest.  mt_machine_default: for this CPU. */
void mt_machine_shipped(mt_machine *m, int family, int model);
void mt_machine_default(mt_machine *m);
/* The shipped profile measured on this CPU's own family and model into *m;
 * false (m untouched) when mtool ships none for it. */
bool mt_machine_shipped_for_this_cpu(mt_machine *m);
/* This CPU's "model name" ("unknown" when /proc/cpuinfo has none). */
void mt_machine_cpu_model(char *buf, size_t n);
/* $XDG_CONFIG_HOME/mtool/machine-<model>.txt (~/.config when unset). */
char *mt_machine_profile_path(const char *cpu_model);
/* Loads the profile calibrated for this CPU, or the default one: `*calibrated`
 * says which (callers calibrate when false: mt_run_load_machine).  -1 with err when a profile exists
 * but cannot be read. */
int mt_machine_load(mt_machine *m, bool *calibrated, mt_error *err);
int mt_machine_read(const char *path, mt_machine *m, mt_error *err);
/* Reads a profile from fp (`name` for messages): every line a key and its
 * value, each value in the range a real machine can have; an error names the
 * file, line, key and value. */
int mt_machine_parse(FILE *fp, const char *name, mt_machine *m, mt_error *err);
/* Whether the reader accepts the profile m is written as: -1 with the
 * reader's error (the key and its value) when not.  Every writer checks
 * first, and so does a calibration before it is used: under load one
 * measured a memory latency of 5146 cycles, which the reader refuses. */
int mt_machine_check(const mt_machine *m, mt_error *err);
/* Writes the profile (checked) to path, atomically. */
int mt_machine_save(const mt_machine *m, const char *path, mt_error *err);
void mt_machine_write(FILE *fp, const mt_machine *m);

/* What limited a block's predicted time. */
typedef enum {
    MT_BOUND_DISPATCH,   /* macro-ops per cycle */
    MT_BOUND_PIPES,      /* execution pipes (the busiest subset) */
    MT_BOUND_LOADS,
    MT_BOUND_STORES,
    MT_BOUND_TAKEN,      /* taken branches per cycle */
    MT_BOUND_FETCH,      /* loop bodies: fetch windows, or op-cache lines, per iteration */
    MT_BOUND_LATENCY,    /* critical path of one execution */
    MT_BOUND_RECURRENCE, /* loop-carried dependencies, per iteration */
    MT_BOUND_IN_HEADER,  /* runs every iteration: predicted with its loop's header */
    MT_BOUND_COUNT
} mt_bound;

const char *mt_bound_name(mt_bound b);

typedef struct {
    double cycles;                  /* the prediction: max of bounds[] */
    double bounds[MT_BOUND_COUNT];  /* each bound, cycles per execution */
    uint8_t limit;                  /* mt_bound that gave `cycles` */
    uint32_t ninsns;
    uint32_t nundecoded;            /* bytes that did not decode: 0 normally */
    double probe_cycles;            /* what pass 1's counter adds per execution
                                       (mt_predict_program with probes) */
} mt_block_cost;

/* The counter pass 1 puts at a block's start: `incq %gs:disp32` (a slot per
 * block), or for a block that loops on itself an increment of a register. */
typedef enum { MT_PROBE_NONE, MT_PROBE_MEMORY, MT_PROBE_REGISTER } mt_probe;

/* How a block runs.  By default once, in a straight line: its critical path
 * bounds it.  `steady_state`: it is a whole loop body repeating, so its
 * recurrence across iterations bounds it instead.  `throughput_only`: it is
 * one block of a larger loop body, whose recurrence is predicted for the body
 * as a whole (mt_predict_recurrence).  `taken_exit`: it ends with a taken
 * branch (a loop's back edge). */
typedef struct {
    bool steady_state;
    bool throughput_only;
    bool taken_exit;
    uint8_t probe;       /* mt_probe: a counter runs first */
} mt_block_context;

/* A piece of straight-line code; `taken_exit`: its final conditional
 * branch is taken. */
typedef struct {
    const uint8_t *code;
    size_t len;
    uint64_t addr;
    bool taken_exit;
    uint8_t probe;       /* mt_probe: a counter runs before it */
} mt_code_range;

typedef struct mt_predictor mt_predictor;

mt_predictor *mt_predictor_new(const mt_machine *m, mt_error *err);
void mt_predictor_free(mt_predictor *p);

/* Predicts one execution of the instructions in code[0..len) (link address
 * `addr`).  Always succeeds; undecodable bytes are counted and skipped. */
void mt_predict_block(mt_predictor *p, const uint8_t *code, size_t len, uint64_t addr,
                      const mt_block_context *ctx, mt_block_cost *out);

/* Cycles per iteration of the dependency recurrence of a loop body made of
 * the ranges executed in this order every iteration (infinite resources).
 * With `forwarded` (n values), the loads of each range per iteration whose
 * data comes through store forwarding (a chain through memory). */
double mt_predict_recurrence(mt_predictor *p, const mt_code_range *ranges, size_t n,
                             double *forwarded);
/* Whether the ranges, a loop's own blocks in layout order, chase
 * pointers: a load takes its address from what a load of an earlier
 * iteration brought, itself among them (chase.c). */
bool mt_predict_chases(mt_predictor *p, const mt_code_range *ranges, size_t n);
/* Throughput bounds of the ranges executed together (their work shares the
 * core's resources): out gets the bounds, the limiting one and its cycles
 * (no dependency bound). */
void mt_predict_throughput(mt_predictor *p, const mt_code_range *ranges, size_t n,
                           mt_block_cost *out);

/* Front end of a loop iteration on an op cache without a fetch-window limit:
 * `ops[i]` macro-ops start in the i-th of the `nlines` 64-byte lines the
 * body's bytes touch, in execution order from the loop's start.  Cycles per
 * iteration by the rules measured on the Zen 5 with the machine's
 * loop_split_ops (E), loop_line_ops (S) and loop_overfull_cycles (P); 0 when
 * the machine has none.  Exposed for the unit tests. */
double mt_front_end_cycles(const mt_machine *m, const unsigned *ops, size_t nlines);

/* Per-block predictions for a whole analyzed program: blocks of procedure p
 * are costs[first[p] .. first[p+1]).  Blocks outside loops run their
 * critical path.  A loop's body is its blocks laid out between the header
 * and the last back edge (out-of-line blocks are taken as cold); every body
 * block is bounded by its throughput.  The blocks that run on every
 * iteration (the header and the dominators of the only back edge) are
 * predicted together, as one iteration's work sharing the core, and that
 * figure goes to the header (the others report MT_BOUND_IN_HEADER and 0);
 * the header also carries what the recurrence of each path of an iteration
 * needs beyond the conditional blocks on the path. */
/* What a loop needs beyond its blocks' count x cycles, applied with the
 * counts (mt_predicted_cycles_proc, _loop). */
typedef struct {
    double slack;       /* recurrence per iteration beyond the throughput bounds: the
                           backlog of a recurrence-bound loop hides its exit */
    double chain;       /* a loop with nested loops: the recurrence of an iteration
                           through them (cycles per iteration; 0: none) */
    bool through_memory;/* that chain passes loads fed by store forwarding */
} mt_loop_cost;

/* The work of one call into another object, known from that object's own
 * counts and predictions (a known_import stub's library procedure). */
typedef struct {
    double cycles, memops;
} mt_import_work;

typedef struct {
    mt_block_cost *costs;
    uint64_t *first;     /* nprocs + 1 offsets */
    uint32_t nprocs;
    mt_loop_cost *loops; /* loops of procedure p: loops[loop_first[p] ..] */
    uint64_t *loop_first;
    /* the machine's loop figures: exits, and loads in flight ahead of a chain */
    double exit_trips, exit_cycles, chain_loads;
    /* Per procedure, what a call to a known_import stub costs: its counted
     * library procedure's inclusive prediction per call (cycles, and memory
     * operations for m-object selection); NULL when pass 2 joined none.
     * Owned by the costs (mt_program_costs_free). */
    mt_import_work *imports;
    /* The same per prog->cross_callees entry marked known_import (calls
     * through pointers into a counted library); NULL when none. */
    mt_import_work *cross_imports;
} mt_program_costs;

/* The work per call of call site `s` when its callee is a known import in
 * another object reached through a pointer, else NULL. */
const mt_import_work *mt_site_cross_import(const mt_program *prog, const mt_program_costs *c,
                                           const mt_call_site *s);

/* Cycles a loop entry loses at its exit: exit_cycles when the loop runs
 * more than exit_trips iterations per entry (the predictor does not learn
 * the exit), less the backlog a recurrence leaves, trips x slack. */
double mt_loop_exit_cycles(const mt_program_costs *c, double trips, double slack);

/* What a chain of `chain` cycles per iteration through memory costs per
 * iteration when each entry of `trips` iterations restarts it, with
 * `loads` loads per iteration: the core runs chain_loads / loads
 * iterations ahead into the next entry's independent chain, so chain /
 * (1 + that / trips). */
double mt_chain_cycles(const mt_program_costs *c, double chain, double loads, double trips);

/* `with_probes`: also predict every block with pass 1's counter and set
 * probe_cycles to the difference (a loop's on its header), which is what
 * compensates an instrumented run's time for its counters.  `counts`
 * (parallel to out->costs, or NULL) say which blocks of a called leaf ran:
 * a leaf whose unrun blocks are its only branches overlaps its caller's
 * loop as inlined code would (program.c, straight_path). */
int mt_predict_program(const mt_machine *m, const mt_program *prog, bool with_probes,
                       const uint64_t *counts, mt_program_costs *out, mt_error *err);
/* The same for the procedures with an executed block only (`counts`
 * parallel to out->costs), probes left out of the blocks whose count pass 1
 * derived (`derived`, parallel too; NULL: none); the others keep zero
 * costs, which is all their zero counts need.  A test suite's run of perl executes a few percent of
 * its procedures: predicting them all, twice with probes, took seconds. */
int mt_predict_executed(const mt_machine *m, const mt_program *prog, bool with_probes,
                        const bool *derived, const uint64_t *counts, mt_program_costs *out,
                        mt_error *err);
void mt_program_costs_free(mt_program_costs *c);

/* Per code object (mt_code_object_loops' numbering; ncodes + 1 values),
 * whether it is a loop that chases pointers (mt_predict_chases over its
 * own blocks, nested loops left out); NULL with err when the binary cannot
 * be read.  The caller frees it. */
bool *mt_chasing_loops(const mt_machine *m, const mt_program *prog, mt_error *err);

/* Sum over blocks of count x cycles: `counts` parallel to out->costs (same
 * offsets), plus what loops lose beyond their blocks (their exits, chains
 * through nested loops).  mt_predicted_cycles_proc: the procedure's own
 * blocks and loops. */
double mt_predicted_cycles_proc(const mt_program *prog, const mt_program_costs *c,
                                const uint64_t *counts, uint32_t proc);
/* Every procedure's prediction inclusive of its estimable callees (MTOOL):
 * its own blocks plus, for each call site to an estimable procedure, the
 * site's count x the callee's inclusive prediction per call (a known_import
 * stub's: c->imports'; a known cross callee's: c->cross_imports').  Recursive
 * calls are left out.  A leaf that runs straight through, called from a
 * loop, overlaps the loop's other iterations like inlined code: its cost
 * there is per_call_in_loop (its throughput; the loop's recurrence through
 * it is on the caller's loop header).  total, per_call and per_call_in_loop
 * have nprocs values each. */
typedef struct {
    double *total;
    double *per_call;
    double *per_call_in_loop;
} mt_inclusive;
void mt_predicted_inclusive(const mt_program *prog, const mt_program_costs *c,
                            const uint64_t *counts, mt_inclusive *out);
/* Whether a call from inside a loop to procedure q costs per_call_in_loop
 * (a leaf that ran straight through: its calls overlap the loop's other
 * iterations) rather than per_call. */
bool mt_call_overlaps_loop(const mt_program *prog, const mt_program_costs *c,
                           const uint64_t *counts, uint32_t q);
void mt_inclusive_free(mt_inclusive *inc);
/* A loop's blocks (nested loops included), and with `inc` (or NULL) its
 * calls to estimable callees. */
double mt_predicted_cycles_loop(const mt_program *prog, const mt_program_costs *c,
                                const uint64_t *counts, uint32_t proc, uint32_t loop,
                                const mt_inclusive *inc);

/* TSC ticks per core cycle now: the low decile of `samples` (at most 1024)
 * dependent imul chains of 80k cycles (about 25 us) each (other tenants'
 * work on the core delays some chains).  The ratio moves with load, so
 * figures are converted with one measured in the same run. */
double mt_measure_tsc_per_cycle(int samples);

/* The clock references, in TSC ticks per instruction of a dependent chain:
 * `add %reg,%reg` (1 cycle), `imul %reg,%reg` (3 cycles) and an FP
 * multiply (a whole number of cycles, 2 to 8, that the check finds). */
typedef struct {
    double add_rr, imul, fmul;
} mt_clock_refs;

/* The clock ratio (TSC ticks per core cycle) the references agree on: the
 * imul chain's, when the add chain's is within 3% of it and the FP chain
 * comes out a whole number of cycles by their clock.  -1 with err naming
 * the measurement that disagrees (calibrate then writes no profile). */
int mt_clock_check(const mt_clock_refs *r, double *ratio, mt_error *err);

/* One sample of a calibration benchmark (calibrate.c): its figure in core
 * cycles, the pass over all benchmarks it was taken in, and whether it was
 * quiet (the probes around it as fast as the calibration's fastest: no
 * other thread on the physical core meanwhile). */
typedef struct {
    double value;
    int pass;
    bool quiet;
} mt_cal_sample;

/* How a calibration figure was made: confirmed by quiet samples
 * (mt_repeated_figure), or, none confirming it within the calibration's
 * wait, a fallback (mt_fallback_figure): the fastest value three samples
 * of any kind repeat, else the second-fastest sample. */
typedef enum { MT_CONFIRMED, MT_FELL_BACK_REPEATED, MT_FELL_BACK_FASTEST } mt_confirm;
const char *mt_confirm_name(mt_confirm how); /* "confirmed", "repeated", "fastest" */

/* What mt_repeated_figure found: the figure, the quiet samples, how many
 * samples agree on it, how many of those are quiet, from how many passes,
 * and how it was made. */
typedef struct {
    double figure;
    int quiet, agree, passes, quiet_agree;
    mt_confirm how;
} mt_repeat;

/* The figure a benchmark's samples repeat: the fastest value that three
 * quiet samples agree on within 2%, from two passes unless all come from
 * one (the median of those that do); else
 * the fastest value three samples agree on, when the fastest quiet sample
 * is within 2% of it (the benchmark runs as fast with a neighbour on the
 * core).  -1 when neither (out->figure is then the fastest quiet sample,
 * NAN when there is none). */
int mt_repeated_figure(const mt_cal_sample *s, int n, mt_repeat *out);
/* A figure for samples whose quiet ones confirm none (after the wait):
 * the fastest value three samples agree on, from two passes unless all
 * come from one (out->how MT_FELL_BACK_REPEATED), else the second-fastest
 * sample (MT_FELL_BACK_FASTEST; the fastest when there is one).  -1 when
 * there are no samples. */
int mt_fallback_figure(const mt_cal_sample *s, int n, mt_repeat *out);
/* The calibration's benchmarks: how many, and the name of the i-th (the
 * index of mt_machine.calibration_how); -1 for a name that is none. */
size_t mt_calibration_benches(void);
const char *mt_calibration_bench_name(size_t i);
int mt_calibration_bench_index(const char *name);

/* Whether the fastest one-branch loop (cycles an iteration) the
 * calibration saw is a loop with the core's front end to itself: within
 * 4% of a multiple of half a cycle (1.0 on every x86-64 core measured; a
 * thread on the SMT sibling makes it 1.1-2.2). */
bool mt_front_end_whole(double fastest_loop);

/* Which pipes a store's address takes, decided by two measured mixes
 * (cycles a store after two vector loads, and after three loads, each
 * store to another line): the loads' first AGUs (m's store pipes as
 * derived from the throughputs), any of the loads' AGUs, or AGUs of its own
 * after them.  Each layout's predictions of the two mixes are kept; the
 * layout nearest both measurements is `kept` (the first on a tie). */
typedef struct {
    uint16_t pipes[3]; /* 0: a layout the AGU bits cannot hold */
    double vloads_store[3], loads_store[3];
    int kept;
} mt_store_layouts;
void mt_store_pipes(const mt_machine *m, double vloads_store, double loads_store,
                    mt_store_layouts *out);

/* Calibration (calibrate.c): measures this machine into *m, starting from
 * the default profile for anything it cannot measure.  `runs` repeats every
 * measurement; the spread over runs is written to `report` (may be NULL).
 * Benchmarks whose quiet samples repeat no figure are measured again in
 * quiet moments for at most `wait_seconds` (MT_CALIBRATE_WAIT_SECONDS for
 * `mtool calibrate`; a command calibrating by itself waits less), then
 * take a fallback figure (mt_fallback_figure), recorded in
 * m->calibration_how.  Refused (-1) only when the clock references
 * disagree or a figure is out of range. */
int mt_calibrate(mt_machine *m, int runs, double wait_seconds, FILE *report, mt_error *err);
#define MT_CALIBRATE_WAIT_SECONDS 6.0
/* The latency of each level (latency.c), after mt_calibrate (its clock
 * ratio): a random pointer chase over working_set[l] bytes (0: the level is
 * not measured), the fastest of `runs` (3 to 5) short chases, into
 * m->mem_latency; a line per level on `report` (may be NULL). */
int mt_calibrate_latencies(mt_machine *m, const uint64_t working_set[MT_MEM_LEVELS], int runs,
                           FILE *report, mt_error *err);
/* This CPU's data TLB levels for 4 KiB pages from cpuid (AMD: leaves
 * 0x80000005 and 0x80000006; Intel: leaf 0x18, else leaf 2), at most
 * `max`, first level first: how many it told (0 on another CPU, or a
 * hypervisor hiding them). */
int mt_tlb_from_cpuid(mt_tlb_level *out, int max);
/* The first-level instruction TLB of 4 KiB pages as cpuid tells it
 * (Intel's leaf 0x18 instruction or unified level 1, else leaf 2; AMD's
 * leaf 0x80000005): 1 with *out, 0 when cpuid does not say. */
int mt_itlb_from_cpuid(mt_tlb_level *out);
/* The TLB levels of 4 KiB pages Intel's leaf 2 descriptors in regs (EAX,
 * EBX, ECX, EDX) name: the data levels (a shared second level among them),
 * or with `instruction` the instruction ones; at most `max`, first level
 * first. */
int mt_tlb_from_leaf2(const uint32_t regs[4], bool instruction, mt_tlb_level *out, int max);
/* "L1", "L2", "L3", "L4", "memory": the names the profile's latency lines use. */
const char *mt_mem_level_name(int level);

#endif
