/* costmodel/predict.c — cycles per execution of one block, every memory
 * access an L1 hit.
 *
 * The prediction is the largest of independent lower bounds (the usual
 * analytical model of an out-of-order core; docs/COST-MODEL.md):
 *   dispatch   macro-ops / dispatch width (cmp/test + jcc fused);
 *   pipes      for every set S of execution pipes, the pipe-cycles of the
 *              instructions that can only run inside S, divided by |S|
 *              (the best any scheduler can do, by Hall's theorem);
 *   loads, stores, taken branches per cycle (a not-taken branch uses
 *              the branch pipes, a taken one an ALU slot and the taken
 *              branch rate);
 *   fetch      loop bodies: aligned fetch windows touched, one per cycle,
 *              or the op-cache lines of the loop and the ops they hold;
 *              plus the calibrated cost of each jump on a 32-byte boundary;
 *   latency    straight-line blocks: the critical path of one execution
 *              with every input ready at the start;
 *   recurrence loop bodies: the growth per iteration of the critical path
 *              when the block repeats, through registers, flags and memory
 *              (a store and a later load of the same address expression,
 *              followed symbolically through constant-offset updates). */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct mt_predictor {
    mt_machine m;
    cm_decoder d;
    cm_insn *insns;
    size_t cap;
};

mt_predictor *mt_predictor_new(const mt_machine *m, mt_error *err)
{
    mt_predictor *p = mt_xcalloc(1, sizeof *p);
    p->m = *m;
    if (!cm_decoder_open(&p->d)) {
        mt_error_set(err, "cannot initialize capstone");
        free(p);
        return NULL;
    }
    return p;
}

void mt_predictor_free(mt_predictor *p)
{
    if (!p)
        return;
    cm_decoder_close(&p->d);
    free(p->insns);
    free(p);
}

static const mt_timing *timing(const mt_predictor *p, unsigned cls, unsigned width)
{
    return &p->m.timing[cls][width];
}

static unsigned load_class(const cm_insn *in)
{
    for (unsigned i = 0; i < in->ndsts; i++)
        if (in->dsts[i] >= CM_REG_VEC0 && in->dsts[i] < CM_REG_FLAGS)
            return MT_IC_VLOAD;
    return in->cls >= MT_IC_VALU && in->cls != MT_IC_MICROCODE ? MT_IC_VLOAD : MT_IC_LOAD;
}

/* Which foldable instructions the core folds at rename: those whose flags
 * no later instruction reads (a flags writer comes first, or the end of
 * the code; measured on the Xeon family 6 model 207: `add $1,%rax` then
 * `jz`, `setz` or `cmovz` runs at 1 cycle an add, not folded).  Nothing
 * folds on a core without fold_latency. */
static void mark_folds(const mt_machine *m, cm_insn *ins, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ins[i].folded = false;
        if (!ins[i].foldable || m->fold_latency <= 0)
            continue;
        bool live = false;
        for (size_t j = i + 1; j < n; j++) {
            bool reads = false, writes = false;
            for (unsigned k = 0; k < ins[j].nsrcs; k++)
                reads = reads || ins[j].srcs[k] == CM_REG_FLAGS;
            for (unsigned k = 0; k < ins[j].ndsts; k++)
                writes = writes || ins[j].dsts[k] == CM_REG_FLAGS;
            if (reads) {
                live = true;
                break;
            }
            if (writes)
                break;
        }
        /* lea writes no flags: always folded */
        bool sets_flags = false;
        for (unsigned k = 0; k < ins[i].ndsts; k++)
            sets_flags = sets_flags || ins[i].dsts[k] == CM_REG_FLAGS;
        ins[i].folded = !(live && sets_flags);
    }
}

/* ---- throughput bounds ------------------------------------------------- */

/* A store whose data comes from a GPR or an immediate, by a move (mov,
 * push): not a vector store, not the store of a read-modify-write op
 * (whose ALU op is counted already). */
static bool store_data_on_alu(const cm_insn *in)
{
    if (!in->store || in->executes || (in->stack_op && in->branch))
        return false;
    for (unsigned i = 0; i < in->nsrcs; i++)
        if (in->srcs[i] >= CM_REG_VEC0 && in->srcs[i] < CM_REG_FLAGS)
            return false;
    return true;
}

void cm_demand(cm_pipe_demand *pd, uint16_t mask, double pipe_cycles)
{
    if (!mask || pipe_cycles <= 0)
        return;
    for (unsigned i = 0; i < pd->n; i++)
        if (pd->mask[i] == mask) {
            pd->occupancy[i] += pipe_cycles;
            return;
        }
    if (pd->n < MT_ARRAY_LEN(pd->mask)) {
        pd->mask[pd->n] = mask;
        pd->occupancy[pd->n++] = pipe_cycles;
    }
}

double cm_pipe_bound(const cm_pipe_demand *pd)
{
    uint16_t used = 0;
    for (unsigned i = 0; i < pd->n; i++)
        used |= pd->mask[i];
    double best = 0;
    /* Every subset S of the used pipes: work confined to S over |S|. */
    for (uint32_t s = used;; s = (s - 1) & used) {
        if (s) {
            double work = 0;
            for (unsigned i = 0; i < pd->n; i++)
                if ((pd->mask[i] & ~s) == 0)
                    work += pd->occupancy[i];
            double b = work / __builtin_popcount(s);
            if (b > best)
                best = b;
        }
        if (s == 0)
            break;
    }
    return best;
}

/* Whether `in` (cmp/test, or an ALU op on cores that fuse those) fuses
 * with a conditional branch right after it. */
static bool fuses_with_jcc(const mt_machine *m, const cm_insn *in)
{
    return in->fusible || (m->fuse_alu_jcc && in->fusible_alu);
}

static void throughput_bounds(const mt_predictor *p, const cm_insn *ins, size_t n,
                              mt_block_cost *out)
{
    const mt_machine *m = &p->m;
    cm_pipe_demand pd = {.n = 0};
    double mops = 0, loads = 0, stores = 0, taken = 0, call_ret_extra = 0;
    int divider = -1; /* the class of a divide in the code, if any */
    for (size_t i = 0; i < n; i++) {
        const cm_insn *in = &ins[i];
        if (in->executes && (in->cls == MT_IC_DIV32 || in->cls == MT_IC_DIV64))
            divider = in->cls;
        bool fused_cmp = fuses_with_jcc(m, in) && i + 1 < n && ins[i + 1].cond_branch;
        if (!fused_cmp)
            mops += in->macro_ops;
        bool taken_branch = in->branch && (!in->cond_branch || in->taken);
        /* Not-taken branches go through the branch pipes (measured on a run
         * of them: one per cycle here).  A taken one is bounded by taken
         * branches per cycle instead and takes only an ALU issue slot: a
         * loop with a not-taken exit test and its taken back edge runs both
         * in one cycle (find_byte: 1.07 cycles per iteration). */
        if (in->executes && !fused_cmp && taken_branch)
            cm_demand(&pd, m->pipes[MT_IC_ALU],
                      (m->taken_alu_cycles > 0 ? m->taken_alu_cycles
                                               : timing(p, MT_IC_ALU, in->width)->rthroughput) *
                          __builtin_popcount(m->pipes[MT_IC_ALU]));
        else if (in->executes && !fused_cmp && !in->folded) /* a fold takes no pipe */
            cm_demand(&pd, m->pipes[in->cls],
                      timing(p, in->cls, in->width)->rthroughput *
                          __builtin_popcount(m->pipes[in->cls]));
        /* Renamed GPR moves cost no latency; on some cores (Zen 5: 6 adds +
         * 6 movs take twice 6 adds) as much issue bandwidth as an ALU op,
         * on others (Zen 3) only a dispatch slot: calibrated. */
        if (in->eliminated && in->cls == MT_IC_ALU && m->moves_take_alu)
            cm_demand(&pd, m->pipes[MT_IC_ALU],
                      timing(p, MT_IC_ALU, in->width)->rthroughput *
                          __builtin_popcount(m->pipes[MT_IC_ALU]));
        if (in->load) {
            unsigned lc = load_class(in);
            double r = timing(p, lc, in->width)->rthroughput;
            loads += r;
            cm_demand(&pd, m->pipes[lc], r * __builtin_popcount(m->pipes[lc]));
        }
        if (in->store) {
            double r = timing(p, MT_IC_STORE, in->width)->rthroughput;
            stores += r;
            /* Its address takes one cycle of one of its pipes (which ones:
             * calibrate's derive_store_pipes); r is the rate stores leave
             * for the cache, the stores bound. */
            cm_demand(&pd, m->pipes[MT_IC_STORE], CM_STORE_PIPE_CYCLES);
            /* The data of a plain store of a GPR or an immediate takes an
             * ALU issue slot on some cores (Zen 5: k adds and a GPR store
             * take 0.21-0.25 cycles more than k adds and a vector store). */
            if (m->stores_take_alu && store_data_on_alu(in))
                cm_demand(&pd, m->pipes[MT_IC_ALU],
                          timing(p, MT_IC_ALU, MT_W128)->rthroughput *
                              __builtin_popcount(m->pipes[MT_IC_ALU]));
        }
        if (taken_branch)
            taken += 1;
        /* A call or a return: half a pair's cycles, where the pair takes
         * longer than two taken branches. */
        if (m->call_ret_cycles > 0 && in->branch && in->stack_op)
            call_ret_extra += m->call_ret_cycles / 2 - 1 / m->taken_per_cycle;
    }
    /* A taken branch in code holding a divide keeps the divider busy for
     * longer on some cores (calibrated: 0 where it does not): a loop of one
     * `div` an iteration runs 7.98 cycles, divides back to back 6.02 (Xeon
     * family 6 model 85). */
    if (divider >= 0 && taken > 0 && m->divide_loop_cycles > 0)
        cm_demand(&pd, m->pipes[divider],
                  m->divide_loop_cycles * taken * __builtin_popcount(m->pipes[divider]));
    out->bounds[MT_BOUND_DISPATCH] = mops / m->dispatch_width;
    out->bounds[MT_BOUND_PIPES] = cm_pipe_bound(&pd);
    out->bounds[MT_BOUND_LOADS] = loads;
    out->bounds[MT_BOUND_STORES] = stores;
    out->bounds[MT_BOUND_TAKEN] = taken / m->taken_per_cycle + fmax(0, call_ret_extra);
}

/* ---- dependency bounds ------------------------------------------------- */

/* Symbolic value of a general-purpose register: an unknown `sym` plus a
 * known constant, so `add $8,%rdi` keeps [rdi] and [rdi-8] comparable. */
typedef struct {
    uint32_t sym;
    int64_t off;
} sym_value;

typedef struct {
    uint32_t base, index; /* syms, 0 for none */
    uint8_t scale;
    int64_t off;
    double data_ready;
} store_rec;

#define STORE_WINDOW 64

typedef struct {
    double ready[CM_NREGS];
    uint8_t producer[CM_NREGS]; /* class of the instruction that wrote it
                                   (MT_IC_COUNT: none, or a load) */
    sym_value val[CM_REG_VEC0];
    uint32_t next_sym;
    store_rec stores[STORE_WINDOW];
    unsigned nstores; /* total recorded; ring indexed modulo the window */
    unsigned forwarded; /* loads whose data came later through forwarding than from the cache */
    bool pending_fold[CM_REG_VEC0]; /* written by a folded op: a constant still to add */
} dep_state;

static void dep_init(dep_state *s)
{
    memset(s, 0, sizeof *s);
    memset(s->producer, MT_IC_COUNT, sizeof s->producer);
    for (unsigned r = 0; r < CM_REG_VEC0; r++)
        s->val[r].sym = r + 1;
    s->next_sym = CM_REG_VEC0 + 1;
}

/* a + b as the machine adds addresses: modulo 2^64 (a register that grows
 * by a constant in a long loop, as in node's code, would overflow int64_t). */
static int64_t wrap_add(int64_t a, uint64_t b)
{
    return (int64_t)((uint64_t)a + b);
}

static store_rec address_key(const dep_state *s, const cm_address *a)
{
    store_rec k = {.scale = a->scale, .off = a->disp};
    if (a->base && a->base < CM_REG_VEC0) {
        k.base = s->val[a->base].sym;
        k.off = wrap_add(k.off, (uint64_t)s->val[a->base].off);
    }
    if (a->index && a->index < CM_REG_VEC0) {
        k.index = s->val[a->index].sym;
        k.off = wrap_add(k.off, (uint64_t)s->val[a->index].off * a->scale);
    }
    return k;
}

static bool same_address(const store_rec *a, const store_rec *b)
{
    return a->base == b->base && a->index == b->index && a->off == b->off &&
           (a->index == 0 || a->scale == b->scale);
}

/* When the data of the youngest earlier store to the same address is ready,
 * or a negative value when no store in the window matches. */
static double forwarded(const dep_state *s, const store_rec *key)
{
    unsigned first = s->nstores > STORE_WINDOW ? s->nstores - STORE_WINDOW : 0;
    for (unsigned i = s->nstores; i-- > first;) {
        const store_rec *r = &s->stores[i % STORE_WINDOW];
        if (same_address(r, key))
            return r->data_ready;
    }
    return -1;
}

static double max2(double a, double b) { return a > b ? a : b; }

/* When register r is ready for instruction `in`: a result reaches an
 * instruction of another class after the producer's bypass delay. */
static double ready_for(const mt_predictor *p, const dep_state *s, uint8_t r, const cm_insn *in)
{
    uint8_t c = s->producer[r];
    double t = s->ready[r] + (c < MT_IC_COUNT && c != in->cls ? p->m.bypass[c] : 0);
    /* a shift cannot take a folded constant along: it is added first */
    if (r < CM_REG_VEC0 && s->pending_fold[r] && in->cls == MT_IC_SHIFT && !in->folded)
        t += p->m.fold_shift_cycles;
    return t;
}

/* Executes one instruction in dataflow order; returns when its result (or
 * stored data) is ready.  Branches return a negative value: they end no
 * dependency chain (predicted, they stall nothing). */
static double execute(const mt_predictor *p, dep_state *s, const cm_insn *in)
{
    /* A cmov's data inputs pass in one ALU cycle; its flags input takes the
     * calibrated cmov latency (a cmp+cmov chain measures 1 + that). */
    double alu = timing(p, MT_IC_ALU, in->width)->latency;
    /* its data inputs pass in cmov_data_cycles (an ALU cycle where not
     * measured), its flags input in the cmov latency */
    double cmov_data = p->m.cmov_data_cycles > 0 ? p->m.cmov_data_cycles : alu;
    double flags_extra = in->cls == MT_IC_CMOV ? timing(p, MT_IC_CMOV, in->width)->latency - cmov_data : 0;
    double src = 0, as_is = 0;
    for (unsigned i = 0; i < in->nsrcs; i++) {
        src = max2(src, ready_for(p, s, in->srcs[i], in) + (in->srcs[i] == CM_REG_FLAGS ? flags_extra : 0));
        as_is = max2(as_is, s->ready[in->srcs[i]]);
    }
    double data = 0;
    if (in->load) {
        double addr = max2(in->mem.base ? s->ready[in->mem.base] : 0,
                           in->mem.index ? s->ready[in->mem.index] : 0);
        const mt_timing *lt = timing(p, load_class(in), in->width);
        data = addr + lt->latency;
        if (in->mem.index)
            data += timing(p, MT_IC_LOADX, in->width)->latency;
        if (!in->stack_op) {
            store_rec key = address_key(s, &in->mem);
            double fwd = forwarded(s, &key);
            /* a GPR load is renamed to the store's data (Zen 5: 0.5 cycles);
             * a vector load waits for the forwarding proper (9 cycles) */
            unsigned fc = load_class(in) == MT_IC_VLOAD ? MT_IC_VSTLF : MT_IC_STLF;
            if (fwd >= 0 && fwd + timing(p, fc, in->width)->latency > data) {
                data = fwd + timing(p, fc, in->width)->latency;
                s->forwarded++;
            }
        }
    }
    double done;
    if (in->zero_idiom)
        done = 0;
    else if (in->eliminated)
        done = as_is; /* a renamed copy: the source as it is, bypass still due */
    else if (in->folded)
        done = as_is + p->m.fold_latency; /* folded at rename: consumers add the constant */
    else if (in->executes)
        done = max2(src, data) + (in->cls == MT_IC_CMOV ? cmov_data : timing(p, in->cls, in->width)->latency);
    else
        done = in->load ? data : src;
    if (in->store && !in->stack_op) {
        store_rec r = address_key(s, &in->mem);
        r.data_ready = in->executes ? done : src;
        s->stores[s->nstores++ % STORE_WINDOW] = r;
    }
    sym_value moved = {0, 0};
    if (in->offset_move) {
        moved = s->val[in->offset_src];
        moved.off = wrap_add(moved.off, (uint64_t)in->offset);
    }
    /* A renamed copy keeps its source's producer: an FP add's result moved
     * to another register still reaches the next FP add directly. */
    uint8_t made = (in->eliminated || in->folded) && in->nsrcs ? s->producer[in->srcs[0]]
                   : in->executes                          ? in->cls
                                                           : MT_IC_COUNT;
    for (unsigned i = 0; i < in->ndsts; i++) {
        uint8_t d = in->dsts[i];
        s->ready[d] = done;
        s->producer[d] = made;
        if (d < CM_REG_VEC0)
            s->pending_fold[d] = in->folded && d != CM_REG_FLAGS;
        if (d < CM_REG_VEC0)
            s->val[d] = in->offset_move ? moved
                        : in->const_move ? (sym_value){0, in->const_value} /* sym 0: a constant */
                                         : (sym_value){s->next_sym++, 0};
    }
    return in->branch ? -1 : (in->store ? max2(done, src) : done);
}

/* Longest chain of one pass over the block, starting at `s`; with
 * `forwarded`, counts per instruction the loads whose data came through
 * store forwarding. */
static double run_once(const mt_predictor *p, dep_state *s, const cm_insn *ins, size_t n,
                       unsigned *forwarded)
{
    double end = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned before = s->forwarded;
        end = max2(end, execute(p, s, &ins[i]));
        if (forwarded && s->forwarded != before)
            forwarded[i]++;
    }
    return end;
}

static double critical_path(const mt_predictor *p, const cm_insn *ins, size_t n)
{
    dep_state s;
    dep_init(&s);
    return run_once(p, &s, ins, n, NULL);
}

enum { WARM = 8, MEASURED = 8 };

/* Steady-state growth per iteration of the block repeated: chains that do
 * not cross iterations stop growing, carried ones grow by their length.
 * With `forwarded` (n counters, zeroed by the caller), the loads fed by
 * store forwarding over the MEASURED repetitions. */
static double recurrence(const mt_predictor *p, const cm_insn *ins, size_t n, unsigned *forwarded)
{
    dep_state s;
    dep_init(&s);
    double t_warm = 0, t_end = 0;
    for (int k = 0; k < WARM + MEASURED; k++) {
        double t = run_once(p, &s, ins, n, k >= WARM ? forwarded : NULL);
        if (k == WARM - 1)
            t_warm = t;
        t_end = t;
    }
    return (t_end - t_warm) / MEASURED;
}

/* ---- the front end of a loop ------------------------------------------ */

/* Measured on the Zen 5 (family 26 model 2) with loops of zero-idiom xors
 * and a fused test/jnz at every start offset and split between lines
 * (docs/COST-MODEL.md has the tables): n_1 .. n_m macro-ops starting in the
 * m 64-byte lines a loop touches, first the line of its start; E =
 * loop_split_ops (6 there), S = loop_line_ops (12), P = loop_overfull_cycles
 * (3).  Cycles per iteration, at least:
 *   one line:            1, or P when it holds more than S ops;
 *   first line over S:   m - 1 + P;
 *   E < n_1, n_1 + n_m <= S (a small loop whose first line holds more
 *                        than E): m, a cycle per line;
 *   n_1 <= E, n_1 + n_2 > S + E:  m - 1 + P - 1;
 *   otherwise            m - 1 (two lines: one cycle, the dispatch width
 *                        binds).
 * A small loop whose first line holds at most E ops, or which holds more
 * than S ops in all (the rule is not monotonic), crosses a line for free:
 * charging every crossing cost saxpy_f32 +78%. */
double mt_front_end_cycles(const mt_machine *m, const unsigned *ops, size_t nlines)
{
    double e = m->loop_split_ops, s = m->loop_line_ops, pen = m->loop_overfull_cycles;
    if (e <= 0 || s <= 0 || pen <= 0 || nlines == 0)
        return 0;
    double total = 0;
    for (size_t i = 0; i < nlines; i++)
        total += ops[i];
    double first = ops[0], last = ops[nlines - 1], lines = (double)nlines;
    if (nlines == 1)
        return total > s ? pen : 1;
    if (first > s)
        return lines - 1 + pen;
    if (first > e && first + last <= s)
        return lines;
    if (first <= e && first + ops[1] > s + e)
        return lines - 1 + pen - 1;
    return lines - 1;
}

/* The front-end bound of one iteration of a loop whose code is the
 * contiguous range [start, end) entered at `start`, instructions ins[0..n). */
static double loop_front_end(const mt_predictor *p, const cm_insn *ins, size_t n, uint64_t start,
                             uint64_t end)
{
    enum { LINES = 64 };
    unsigned ops[LINES] = {0};
    if (end <= start || (end - 1) / 64 - start / 64 + 1 > LINES)
        return 0;
    size_t nlines = (size_t)((end - 1) / 64 - start / 64 + 1);
    for (size_t i = 0; i < n; i++) {
        uint64_t line = (ins[i].addr < start ? start : ins[i].addr) / 64 - start / 64;
        /* cmp/test + jcc fuse into one op when both start in one line */
        if (fuses_with_jcc(&p->m, &ins[i]) && i + 1 < n &&
            ins[i + 1].cond_branch && ins[i + 1].addr / 64 == ins[i].addr / 64)
            continue;
        if (line < nlines)
            ops[line] += ins[i].macro_ops;
    }
    return mt_front_end_cycles(&p->m, ops, nlines);
}

/* Cycles per iteration of a loop of `ops` fused ops by the calibrated table
 * (0 when there is none for that many). */
static double loop_ops_bound(const mt_machine *m, double ops)
{
    long n = lround(ops);
    return n >= 1 && n <= MT_LOOP_OPS_MAX ? m->loop_ops_cycles[n] : 0;
}

/* [start, end) when the ranges tile one contiguous piece of code entered at
 * the first range and left by the taken branch ending the last one in
 * address order (a loop without jumps inside its iteration); else false. */
static bool simple_loop(const mt_code_range *ranges, size_t n, uint64_t *start, uint64_t *end)
{
    if (n == 0 || n > 64)
        return false;
    uint64_t lo = ranges[0].addr, hi = ranges[0].addr + ranges[0].len, covered = 0;
    size_t last = 0;
    for (size_t i = 0; i < n; i++) {
        if (ranges[i].addr < lo)
            return false; /* entered in the middle: rotated, jumps inside */
        if (ranges[i].addr + ranges[i].len >= hi) {
            hi = ranges[i].addr + ranges[i].len;
            last = i;
        }
        covered += ranges[i].len;
    }
    if (covered != hi - lo || !ranges[last].taken_exit)
        return false;
    *start = lo;
    *end = hi;
    return true;
}

/* ---- the block ---------------------------------------------------------- */

static void set_limit(mt_block_cost *out)
{
    out->limit = MT_BOUND_DISPATCH;
    for (int b = 0; b < MT_BOUND_COUNT; b++)
        if (out->bounds[b] > out->bounds[out->limit])
            out->limit = (uint8_t)b;
    out->cycles = out->bounds[out->limit];
}

/* Decodes code[0..len) after the `n` instructions already in p->insns;
 * returns the new count. */
static size_t decode(mt_predictor *p, size_t n, const uint8_t *code, size_t len, uint64_t addr,
                     uint8_t probe, uint32_t *nundecoded)
{
    if (probe != MT_PROBE_NONE) {
        /* incq %gs:disp32 with a slot of its own (the block's address), or
         * lea 1(%r11),%r11 for a self-loop counting in a dead register */
        uint32_t slot = (uint32_t)((addr & 0x0fffffffu) << 3);
        const uint8_t mem[] = {0x65, 0x48, 0xff, 0x04, 0x25, (uint8_t)slot, (uint8_t)(slot >> 8),
                               (uint8_t)(slot >> 16), (uint8_t)(slot >> 24)};
        const uint8_t reg[] = {0x4d, 0x8d, 0x5b, 0x01};
        if (n >= p->cap)
            p->insns = mt_xgrow(p->insns, &p->cap, n + 1, sizeof *p->insns);
        if (probe == MT_PROBE_MEMORY ? cm_classify(&p->d, mem, sizeof mem, addr, &p->insns[n])
                                     : cm_classify(&p->d, reg, sizeof reg, addr, &p->insns[n])) {
            p->insns[n].addr = addr; /* the copy's layout differs: counted in the block's line */
            p->insns[n].size = 0;
            n++;
        }
    }
    for (size_t off = 0; off < len;) {
        if (n >= p->cap)
            p->insns = mt_xgrow(p->insns, &p->cap, n + 1, sizeof *p->insns);
        unsigned size = cm_classify(&p->d, code + off, len - off, addr + off, &p->insns[n]);
        if (size == 0) {
            (*nundecoded)++;
            off++;
            continue;
        }
        p->insns[n].addr = addr + off;
        p->insns[n].size = (uint8_t)size;
        off += size;
        n++;
    }
    return n;
}

/* What the jumps of a loop's path cost for sitting on a 32-byte boundary:
 * a jump, with the compare fused to it, that crosses one or ends on one
 * (Intel's JCC erratum: the window is not kept in the decoded-op cache, so
 * it is decoded again each pass), times the calibrated jcc_boundary_cycles
 * (0 on cores without the effect).  Measured on the Xeon family 6 model 85
 * (Cascade Lake): a loop of four adds and dec/jnz at each of 64 offsets,
 * 2.4-2.75 against 4.0-6.2 cycles an iteration at the ten where the pair
 * crosses or ends on a boundary (docs/COST-MODEL.md). */
static double jcc_boundary(const mt_predictor *p, const cm_insn *ins, size_t n)
{
    if (p->m.jcc_boundary_cycles <= 0)
        return 0;
    unsigned jumps = 0;
    for (size_t i = 0; i < n; i++) {
        if (!ins[i].branch || !ins[i].size)
            continue;
        uint64_t start = ins[i].addr, end = ins[i].addr + ins[i].size - 1;
        const cm_insn *before = i > 0 ? &ins[i - 1] : NULL;
        if (before && ins[i].cond_branch && before->size && before->addr + before->size == start &&
            fuses_with_jcc(&p->m, before))
            start = before->addr;
        jumps += start / 32 != end / 32 || end % 32 == 31;
    }
    return jumps * p->m.jcc_boundary_cycles;
}

void mt_predict_block(mt_predictor *p, const uint8_t *code, size_t len, uint64_t addr,
                      const mt_block_context *ctx, mt_block_cost *out)
{
    memset(out, 0, sizeof *out);
    size_t n = decode(p, 0, code, len, addr, ctx->probe, &out->nundecoded);
    out->ninsns = (uint32_t)n;
    if (n && ctx->taken_exit)
        p->insns[n - 1].taken = p->insns[n - 1].cond_branch;
    mark_folds(&p->m, p->insns, n);
    throughput_bounds(p, p->insns, n, out);
    if (ctx->steady_state && ctx->taken_exit && p->m.fetch_window < 16)
        out->bounds[MT_BOUND_FETCH] = loop_front_end(p, p->insns, n, addr, addr + len);
    if (ctx->steady_state && ctx->taken_exit)
        out->bounds[MT_BOUND_FETCH] =
            max2(out->bounds[MT_BOUND_FETCH],
                 loop_ops_bound(&p->m, out->bounds[MT_BOUND_DISPATCH] * p->m.dispatch_width));
    if (ctx->steady_state && ctx->taken_exit)
        out->bounds[MT_BOUND_FETCH] += jcc_boundary(p, p->insns, n);
    if (ctx->steady_state)
        out->bounds[MT_BOUND_RECURRENCE] = recurrence(p, p->insns, n, NULL);
    else if (!ctx->throughput_only)
        out->bounds[MT_BOUND_LATENCY] = critical_path(p, p->insns, n);
    set_limit(out);
}

double mt_predict_recurrence(mt_predictor *p, const mt_code_range *ranges, size_t n,
                             double *forwarded)
{
    size_t ninsns = 0;
    uint32_t nundecoded = 0;
    size_t *first = forwarded ? mt_xcalloc(n + 1, sizeof *first) : NULL;
    for (size_t i = 0; i < n; i++) {
        if (first)
            first[i] = ninsns;
        ninsns = decode(p, ninsns, ranges[i].code, ranges[i].len, ranges[i].addr, ranges[i].probe,
                        &nundecoded);
    }
    unsigned *fw = forwarded ? mt_xcalloc(ninsns + 1, sizeof *fw) : NULL;
    mark_folds(&p->m, p->insns, ninsns);
    double r = recurrence(p, p->insns, ninsns, fw);
    if (forwarded) {
        first[n] = ninsns;
        for (size_t i = 0; i < n; i++) {
            unsigned sum = 0;
            for (size_t k = first[i]; k < first[i + 1]; k++)
                sum += fw[k];
            forwarded[i] = (double)sum / MEASURED;
        }
    }
    free(first);
    free(fw);
    return r;
}

bool mt_predict_chases(mt_predictor *p, const mt_code_range *ranges, size_t n)
{
    size_t ninsns = 0;
    uint32_t nundecoded = 0;
    for (size_t i = 0; i < n; i++)
        ninsns = decode(p, ninsns, ranges[i].code, ranges[i].len, ranges[i].addr, ranges[i].probe,
                        &nundecoded);
    return cm_chases(p->insns, ninsns);
}

/* Distinct `window`-byte aligned windows the ranges' code touches. */
static unsigned fetch_windows(const mt_code_range *ranges, size_t n, unsigned window)
{
    enum { MAX = 256 };
    uint64_t seen[MAX];
    unsigned nseen = 0;
    for (size_t i = 0; i < n; i++) {
        if (!ranges[i].len)
            continue;
        for (uint64_t w = ranges[i].addr / window; w <= (ranges[i].addr + ranges[i].len - 1) / window; w++) {
            unsigned k = 0;
            while (k < nseen && seen[k] != w)
                k++;
            if (k == nseen && nseen < MAX)
                seen[nseen++] = w;
        }
    }
    return nseen;
}

void mt_predict_throughput(mt_predictor *p, const mt_code_range *ranges, size_t n,
                           mt_block_cost *out)
{
    size_t ninsns = 0;
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < n; i++) {
        ninsns = decode(p, ninsns, ranges[i].code, ranges[i].len, ranges[i].addr, ranges[i].probe,
                        &out->nundecoded);
        if (ninsns && ranges[i].taken_exit)
            p->insns[ninsns - 1].taken = p->insns[ninsns - 1].cond_branch;
    }
    out->ninsns = (uint32_t)ninsns;
    mark_folds(&p->m, p->insns, ninsns);
    throughput_bounds(p, p->insns, ninsns, out);
    /* The op cache delivers one aligned window per cycle: a loop body that
     * straddles a window boundary needs a cycle per window it touches
     * (measured by `mtool calibrate`: 64 bytes on the Zen 3).  Without that
     * limit (Zen 5), the lines of a simple loop and the ops they hold. */
    uint64_t start, end;
    if (p->m.fetch_window >= 16)
        out->bounds[MT_BOUND_FETCH] = fetch_windows(ranges, n, (unsigned)p->m.fetch_window);
    else if (simple_loop(ranges, n, &start, &end))
        out->bounds[MT_BOUND_FETCH] = loop_front_end(p, p->insns, ninsns, start, end);
    /* a small loop's ops by the calibrated table (Golden Cove: 9 to 12 ops
     * take 2 cycles an iteration, not 1.5 to 2) */
    if (simple_loop(ranges, n, &start, &end))
        out->bounds[MT_BOUND_FETCH] =
            max2(out->bounds[MT_BOUND_FETCH],
                 loop_ops_bound(&p->m, out->bounds[MT_BOUND_DISPATCH] * p->m.dispatch_width));
    out->bounds[MT_BOUND_FETCH] += jcc_boundary(p, p->insns, ninsns);
    set_limit(out);
}
