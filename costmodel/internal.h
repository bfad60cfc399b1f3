/* costmodel/internal.h — private to costmodel/: one decoded instruction as
 * the predictor sees it (classify.c), and the register families it tracks. */
#ifndef MTOOL_COSTMODEL_INTERNAL_H
#define MTOOL_COSTMODEL_INTERNAL_H

#include <capstone/capstone.h>

#include "../common/x86_decode.h"
#include "costmodel.h"

/* Register families: a value the predictor tracks dependencies through.
 * 0 is "not tracked" (rip, segment registers). */
enum {
    CM_REG_NONE = 0,
    CM_REG_GPR0 = 1,   /* rax .. r15: 1 .. 16 */
    CM_REG_RSP = 5,
    CM_REG_VEC0 = 17,  /* xmm/ymm/zmm 0 .. 31: 17 .. 48 */
    CM_REG_K0 = 49,    /* mask registers k0 .. k7 */
    CM_REG_FLAGS = 57,
    CM_NREGS = 58
};

#define CM_MAX_SRCS 8
/* Immediates a rename-time fold takes: on the Xeon family 6 model 207 a
 * chain of `add $1023,%rax` runs at 0.52 cycles an add, `add $1024` at 1.0
 * (not folded), and lea displacements likewise. */
#define FOLD_IMM_LIMIT 1024
#define CM_MAX_DSTS 4

typedef struct {
    uint8_t base, index;      /* register families, CM_REG_NONE when absent */
    uint8_t scale;
    int64_t disp;
} cm_address;

/* One instruction: what it reads and writes, and how it executes. */
typedef struct {
    uint8_t cls;              /* mt_iclass of its execution part */
    uint8_t width;            /* mt_width */
    uint8_t nsrcs, ndsts;
    uint8_t srcs[CM_MAX_SRCS];/* register families read (flags included) */
    uint8_t dsts[CM_MAX_DSTS];/* register families written */
    bool executes;            /* uses an execution pipe (not a pure load/store/move) */
    bool eliminated;          /* register move done at rename: result = source, no pipe */
    bool zero_idiom;          /* xor r,r and friends: no input dependency */
    bool load, store;         /* reads / writes memory (L1 hit assumed) */
    bool stack_op;            /* push/pop/call/ret: rsp handled by the stack engine */
    bool branch, cond_branch;
    bool taken;               /* a conditional branch predicted taken (set by the caller) */
    bool fusible;             /* cmp/test that fuses with a following jcc */
    bool fusible_alu;         /* add/sub/and/inc/dec of a register, which fuse with a
                                 following jcc on some cores (mt_machine.fuse_alu_jcc) */
    /* add/sub $imm, inc, dec, lea disp(r) on a 64-bit register with |imm| <
     * FOLD_IMM_LIMIT: folded at rename on cores with fold_latency (Golden
     * Cove family) when no later instruction reads its flags (`folded`, set
     * by the predictor from the instructions after it). */
    bool foldable;
    bool folded;
    cm_address mem;           /* the memory operand, when load or store */
    uint8_t macro_ops;        /* dispatch slots */
    uint8_t size;             /* bytes (set by the predictor's decoder) */
    uint64_t addr;            /* link address (likewise) */
    /* Constant-offset register arithmetic (add/sub imm, inc, dec, lea disp(r),
     * mov r,r): dst = src + offset; tracked so that a store and a later load
     * of the same address are recognized across loop iterations. */
    bool offset_move;
    uint8_t offset_src;
    int64_t offset;
    /* mov $imm, r (and zero idioms, value 0): dst = a known constant */
    bool const_move;
    int64_t const_value;
} cm_insn;

typedef struct {
    csh cs;
    cs_insn *insn;
    uint8_t reg_family[X86_REG_ENDING];
} cm_decoder;

bool cm_decoder_open(cm_decoder *d);
void cm_decoder_close(cm_decoder *d);
/* Decodes and classifies the instruction at code (avail bytes); returns its
 * size, 0 for invalid bytes. */
unsigned cm_classify(cm_decoder *d, const uint8_t *code, size_t avail, uint64_t addr,
                     cm_insn *out);

/* chase.c: whether one iteration's instructions (in layout order) hold a
 * load whose address comes from what it loaded in an earlier iteration. */
bool cm_chases(const cm_insn *ins, size_t n);

/* Pipe demand of some code (predict.c): pipe-cycles per execution by the
 * exact set of pipes that can run them; the pipes bound is, over every set
 * S of pipes, the work confined to S over |S| (Hall's theorem). */
typedef struct {
    uint16_t mask[64];
    double occupancy[64]; /* pipe-cycles per execution needing exactly mask[i] */
    unsigned n;
} cm_pipe_demand;

void cm_demand(cm_pipe_demand *pd, uint16_t mask, double pipe_cycles);
double cm_pipe_bound(const cm_pipe_demand *pd);

/* A store's address: one cycle of one of the store class's pipes, however
 * many it has (a profile's store rthroughput is the rate stores leave for
 * the cache: the stores bound). */
#define CM_STORE_PIPE_CYCLES 1.0

/* The median of v[0..n) (v reordered; calibrate.c). */
double cm_median(double *v, int n);

#endif
