/* analyzer/tailcall.c — indirect jumps that leave the procedure.
 *
 * An indirect jmp whose jump table was not recovered is either a jump to
 * code of this procedure we cannot name (the procedure is then unresolved:
 * relocating it would lose counts) or a tail call through a function
 * pointer (`pop %rbx; pop %rbp; jmp *%rax`, `add $8,%rsp; jmp *0x18(%rax)`).
 * As other rewriters do (BOLT, Dyninst), it is taken for a tail call when
 * the frame is torn down at the jump: on every path from the entry, %rsp is
 * back at its entry value and every callee-saved register (rbx, rbp,
 * r12-r15) holds the value it had at the entry.  The callee then gets the
 * very state a call from our caller would give it.
 *
 * Code of the procedure itself can run in that state too (a frameless
 * procedure that never touched those registers), so two more facts are
 * required: the target is not shaped like a jump table nor a constant
 * inside the procedure (jumptable.c: *maybe_inside), and the procedure
 * never materializes an address inside itself (`lea label(%rip)`, a label
 * taken as a value for a computed goto).  What is left undetected: label
 * addresses stored in data by a frameless procedure that dispatches
 * through them without saving any register.  Compilers emit computed-goto
 * dispatch inside interpreter loops, which keep a frame.
 *
 * Forward data flow over the procedure's instructions: the state before
 * each one is the stack height (bytes below the entry %rsp, or unknown),
 * the abstract value of each callee-saved register (its own entry value,
 * an address in the frame, or anything else) and of the 8-byte stack slots
 * just below the entry %rsp.  Other entries (jumps from other procedures,
 * landing pads) start with nothing known.  Merges keep what all paths
 * agree on, so the analysis only runs down a finite lattice. */
#include <stdlib.h>
#include <string.h>

#include "cfg_internal.h"

#define TC_REGS 6        /* callee-saved: rbx rbp r12 r13 r14 r15 */
#define TC_RBP 1         /* index of rbp among them */
#define TC_SLOTS 32      /* slot k: the 8 bytes at entry %rsp - 8(k+1) */
#define TC_MAX_PASSES 64
#define TC_MAX_PREDS 4096

enum { V_OTHER, V_ENTRY, V_FRAME };

typedef struct {
    uint8_t kind;  /* V_* */
    uint8_t reg;   /* V_ENTRY: the register whose entry value this is */
    int32_t depth; /* V_FRAME: the address entry %rsp - depth */
} tc_val;

typedef struct {
    bool reached;
    bool height_known;
    int32_t height; /* %rsp = entry %rsp - height */
    tc_val regs[TC_REGS];
    tc_val slots[TC_SLOTS];
} tc_state;

/* What one instruction does to the state, decoded once. */
enum {
    E_NONE,        /* only the clobbers below */
    E_PUSH,        /* push src */
    E_POP,         /* pop into reg (or elsewhere: reg -1) */
    E_RSP_ADD,     /* height += off (sub $off,%rsp; lea -off(%rsp),%rsp) */
    E_RSP_FROM,    /* %rsp = frame register reg + off */
    E_LEAVE,       /* mov %rbp,%rsp; pop %rbp */
    E_COPY,        /* reg = src (a tracked register, or other: -1) */
    E_FRAME_ADDR,  /* reg = %rsp + off */
    E_LOAD,        /* reg = 8 bytes at off(base) */
    E_STORE,       /* size bytes at off(base) = src (or other) */
    E_CALL,        /* slots below %rsp are overwritten */
    E_INDEXED,     /* a store at off(base,index): every slot is unknown if base is in the frame */
    E_SLOTS_LOST,  /* every slot is unknown */
};

enum { BASE_RSP = -2 }; /* base of E_LOAD/E_STORE: BASE_RSP or a tracked register (rbp) */

typedef struct {
    uint8_t kind;
    uint8_t clobber;      /* tracked registers set to anything else */
    bool rsp_lost;        /* %rsp changed in a way not followed */
    int8_t reg, src, base;
    uint8_t size;
    int32_t off;
} tc_effect;

static int tracked_index(unsigned family)
{
    switch (family) {
    case 4: return 0;               /* rbx */
    case MT_FAMILY_RBP: return TC_RBP;
    case 13: return 2;              /* r12 */
    case 14: return 3;
    case 15: return 4;
    case 16: return 5;              /* r15 */
    default: return -1;
    }
}

static bool is_reg64(const cs_x86_op *op) { return op->type == X86_OP_REG && op->size == 8; }

static bool is_rsp(const cs_x86_op *op)
{
    return op->type == X86_OP_REG && op->reg == X86_REG_RSP;
}

/* A memory operand at a fixed offset from %rsp or a tracked register, no
 * index, no segment: its base (BASE_RSP or the register's index), else -1. */
static int frame_base(const cs_x86_op *op)
{
    if (op->type != X86_OP_MEM || op->mem.index != X86_REG_INVALID ||
        op->mem.segment != X86_REG_INVALID)
        return -1;
    if (op->mem.base == X86_REG_RSP)
        return BASE_RSP;
    return op->mem.base == X86_REG_RBP ? TC_RBP : -1;
}

/* The base of an indexed memory operand, as frame_base, or -1. */
static int indexed_frame_base(const cs_x86_op *op)
{
    if (op->type != X86_OP_MEM || op->mem.index == X86_REG_INVALID)
        return -1;
    if (op->mem.base == X86_REG_RSP)
        return BASE_RSP;
    return op->mem.base == X86_REG_RBP ? TC_RBP : -1;
}

/* The effects that have a meaning of their own; false for everything else. */
static bool specific_effect(const cs_insn *insn, tc_effect *e)
{
    const cs_x86 *x = &insn->detail->x86;
    const cs_x86_op *a = &x->operands[0], *b = &x->operands[1];
    switch (insn->id) {
    case X86_INS_PUSH:
        e->kind = E_PUSH;
        e->src = (int8_t)(x->op_count == 1 && is_reg64(a) ? tracked_index(mt_reg_family(a->reg)) : -1);
        return x->op_count == 1 && (a->type != X86_OP_REG || a->size == 8);
    case X86_INS_POP:
        e->kind = E_POP;
        e->reg = (int8_t)(x->op_count == 1 && is_reg64(a) ? tracked_index(mt_reg_family(a->reg)) : -1);
        return x->op_count == 1 && a->type == X86_OP_REG && a->size == 8;
    case X86_INS_LEAVE:
        e->kind = E_LEAVE;
        return true;
    case X86_INS_CALL:
        e->kind = E_CALL;
        return true;
    default:
        break;
    }
    if (x->op_count != 2)
        return false;
    if ((insn->id == X86_INS_ADD || insn->id == X86_INS_SUB) && is_rsp(a) && b->type == X86_OP_IMM) {
        e->kind = E_RSP_ADD;
        e->off = (int32_t)(insn->id == X86_INS_SUB ? b->imm : -b->imm);
        return b->imm > -(1 << 24) && b->imm < (1 << 24);
    }
    bool lea = insn->id == X86_INS_LEA, mov = insn->id == X86_INS_MOV;
    if (!lea && !mov)
        return false;
    int base = lea ? frame_base(b) : -1;
    if (is_rsp(a)) { /* %rsp = %rsp + k, or %rbp + k */
        if (lea && base == BASE_RSP) {
            e->kind = E_RSP_ADD;
            e->off = (int32_t)-b->mem.disp;
            return true;
        }
        if ((lea && base == TC_RBP) || (mov && b->type == X86_OP_REG && b->reg == X86_REG_RBP)) {
            e->kind = E_RSP_FROM;
            e->reg = TC_RBP;
            e->off = lea ? (int32_t)b->mem.disp : 0;
            return true;
        }
        return false;
    }
    int dst = is_reg64(a) ? tracked_index(mt_reg_family(a->reg)) : -1;
    if (dst >= 0 && (is_rsp(b) || (lea && base == BASE_RSP))) {
        e->kind = E_FRAME_ADDR;
        e->reg = (int8_t)dst;
        e->off = lea ? (int32_t)b->mem.disp : 0;
        return true;
    }
    if (dst >= 0 && mov && is_reg64(b)) {
        e->kind = E_COPY;
        e->reg = (int8_t)dst;
        e->src = (int8_t)tracked_index(mt_reg_family(b->reg));
        return true;
    }
    if (dst >= 0 && mov && b->size == 8 && frame_base(b) != -1) {
        e->kind = E_LOAD;
        e->reg = (int8_t)dst;
        e->base = (int8_t)frame_base(b);
        e->off = (int32_t)b->mem.disp;
        return true;
    }
    return false;
}

static void effect_of(const mt_decoder *dec, const cs_insn *insn, tc_effect *e)
{
    memset(e, 0, sizeof *e);
    e->reg = e->src = -1;
    if (specific_effect(insn, e))
        return;
    memset(e, 0, sizeof *e);
    e->reg = e->src = -1;
    e->kind = E_NONE;
    cs_regs rd, wr;
    uint8_t nrd = 0, nwr = 0;
    if (cs_regs_access(dec->cs, insn, rd, &nrd, wr, &nwr) != CS_ERR_OK) {
        e->clobber = (1u << TC_REGS) - 1;
        e->rsp_lost = true;
        e->kind = E_SLOTS_LOST;
        return;
    }
    for (unsigned i = 0; i < nwr; i++) {
        unsigned f = mt_reg_family(wr[i]);
        int t = tracked_index(f);
        if (t >= 0)
            e->clobber |= (uint8_t)(1u << t);
        if (f == MT_FAMILY_RSP)
            e->rsp_lost = true;
    }
    const cs_x86 *x = &insn->detail->x86;
    for (unsigned i = 0; i < x->op_count; i++) {
        const cs_x86_op *op = &x->operands[i];
        if (op->type != X86_OP_MEM || !(op->access & CS_AC_WRITE))
            continue;
        if (e->kind != E_NONE) {
            e->kind = E_SLOTS_LOST;
        } else if (indexed_frame_base(op) != -1) {
            e->kind = E_INDEXED;
            e->base = (int8_t)indexed_frame_base(op);
        } else if (frame_base(op) != -1) {
            /* mov %reg,off(%rsp) keeps the register's value; any other store
             * in the frame makes the bytes it covers unknown */
            bool save = insn->id == X86_INS_MOV && i == 0 && x->op_count == 2 && is_reg64(&x->operands[1]);
            e->kind = E_STORE;
            e->base = (int8_t)frame_base(op);
            e->off = (int32_t)op->mem.disp;
            e->size = op->size ? op->size : 16;
            e->src = (int8_t)(save ? tracked_index(mt_reg_family(x->operands[1].reg)) : -1);
            if (save && e->src >= 0)
                e->clobber = 0;
        }
    }
}

/* ---- the lattice ------------------------------------------------------- */

static tc_val other(void) { return (tc_val){V_OTHER, 0, 0}; }

static bool same_val(tc_val a, tc_val b)
{
    return a.kind == b.kind && (a.kind != V_ENTRY || a.reg == b.reg) &&
           (a.kind != V_FRAME || a.depth == b.depth);
}

static tc_state top_state(void)
{
    tc_state s;
    memset(&s, 0, sizeof s); /* V_OTHER everywhere, height unknown */
    s.reached = true;
    return s;
}

static tc_state entry_state(void)
{
    tc_state s = top_state();
    s.height_known = true;
    for (int r = 0; r < TC_REGS; r++)
        s.regs[r] = (tc_val){V_ENTRY, (uint8_t)r, 0};
    return s;
}

/* Merges `in` into `*acc`; returns whether *acc changed. */
static bool merge(tc_state *acc, const tc_state *in)
{
    if (!in->reached)
        return false;
    if (!acc->reached) {
        *acc = *in;
        return true;
    }
    bool changed = false;
    if (acc->height_known && (!in->height_known || in->height != acc->height)) {
        acc->height_known = false;
        changed = true;
    }
    for (int r = 0; r < TC_REGS; r++)
        if (acc->regs[r].kind != V_OTHER && !same_val(acc->regs[r], in->regs[r])) {
            acc->regs[r] = other();
            changed = true;
        }
    for (int k = 0; k < TC_SLOTS; k++)
        if (acc->slots[k].kind != V_OTHER && !same_val(acc->slots[k], in->slots[k])) {
            acc->slots[k] = other();
            changed = true;
        }
    return changed;
}

/* ---- transfer ---------------------------------------------------------- */

static void forget_slots(tc_state *s)
{
    for (int k = 0; k < TC_SLOTS; k++)
        s->slots[k] = other();
}

/* `size` bytes written at entry %rsp - depth get `v` (an exact slot) or
 * become unknown. */
static void write_bytes(tc_state *s, int64_t depth, unsigned size, tc_val v)
{
    if (size == 8 && depth % 8 == 0 && depth >= 8 && depth <= 8 * TC_SLOTS) {
        s->slots[depth / 8 - 1] = v;
        return;
    }
    /* bytes at depth-size+1 .. depth below the entry %rsp */
    for (int k = 0; k < TC_SLOTS; k++) {
        int64_t lo = 8 * (int64_t)k + 1, hi = 8 * (int64_t)k + 8;
        if (depth - (int64_t)size + 1 <= hi && depth >= lo)
            s->slots[k] = other();
    }
}

static tc_val read_slot(const tc_state *s, int64_t depth)
{
    return depth % 8 == 0 && depth >= 8 && depth <= 8 * TC_SLOTS ? s->slots[depth / 8 - 1] : other();
}

/* Depth below the entry %rsp of off(base), when known. */
static bool depth_of(const tc_state *s, int base, int32_t off, int64_t *depth)
{
    if (base == BASE_RSP && s->height_known) {
        *depth = (int64_t)s->height - off;
        return true;
    }
    if (base >= 0 && s->regs[base].kind == V_FRAME) {
        *depth = (int64_t)s->regs[base].depth - off;
        return true;
    }
    return false;
}

static tc_val reg_or_other(const tc_state *s, int r) { return r >= 0 ? s->regs[r] : other(); }

static void set_reg(tc_state *s, int r, tc_val v)
{
    if (r >= 0)
        s->regs[r] = v;
}

static void pop_into(tc_state *s, int r)
{
    tc_val v = s->height_known ? read_slot(s, s->height) : other();
    s->height -= 8;
    set_reg(s, r, v);
}

static void set_height_from_frame(tc_state *s, int r, int32_t off)
{
    s->height_known = s->regs[r].kind == V_FRAME;
    s->height = s->regs[r].depth - off;
}

static void transfer(const tc_effect *e, tc_state *s)
{
    int64_t depth;
    switch (e->kind) {
    case E_PUSH:
        s->height += 8;
        if (s->height_known)
            write_bytes(s, s->height, 8, reg_or_other(s, e->src));
        break;
    case E_POP:
        pop_into(s, e->reg);
        break;
    case E_RSP_ADD:
        s->height += e->off;
        break;
    case E_RSP_FROM:
        set_height_from_frame(s, e->reg, e->off);
        break;
    case E_LEAVE:
        set_height_from_frame(s, TC_RBP, 0);
        pop_into(s, TC_RBP);
        break;
    case E_COPY:
        set_reg(s, e->reg, reg_or_other(s, e->src));
        break;
    case E_FRAME_ADDR:
        set_reg(s, e->reg, s->height_known ? (tc_val){V_FRAME, 0, s->height - e->off} : other());
        break;
    case E_LOAD:
        set_reg(s, e->reg, depth_of(s, e->base, e->off, &depth) ? read_slot(s, depth) : other());
        break;
    case E_STORE:
        /* through %rbp when it does not hold a frame address: not a store
         * to the frame (compiled code does not reach saved registers
         * through pointers) */
        if (depth_of(s, e->base, e->off, &depth))
            write_bytes(s, depth, e->size, reg_or_other(s, e->src));
        else if (e->base == BASE_RSP)
            forget_slots(s);
        break;
    case E_INDEXED:
        if (e->base == BASE_RSP || s->regs[e->base].kind == V_FRAME)
            forget_slots(s);
        break;
    case E_CALL:
        /* the callee keeps callee-saved registers and writes below %rsp */
        for (int k = 0; k < TC_SLOTS; k++)
            if (!s->height_known || 8 * (k + 1) > s->height)
                s->slots[k] = other();
        break;
    case E_SLOTS_LOST:
        forget_slots(s);
        break;
    default:
        break;
    }
    for (int r = 0; r < TC_REGS; r++)
        if (e->clobber & (1u << r))
            s->regs[r] = other();
    if (e->rsp_lost)
        s->height_known = false;
}

/* ---- the analysis ------------------------------------------------------ */

static bool in_own_table(const cfg_builder *b, uint64_t where)
{
    for (size_t t = 0; t < b->ntables; t++) {
        const mt_jump_table *l = &b->tables[t].layout;
        if (where >= l->table && where < l->table + (uint64_t)l->nentries * l->entry_size)
            return true;
    }
    return false;
}

/* Whether data holds an address in [lo, hi) outside the procedure's own
 * jump tables (the data references are sorted by value, and hold no
 * procedure entry). */
static bool data_names_address_in(const cfg_builder *b, uint64_t lo, uint64_t hi)
{
    size_t first = 0, end = b->ndata_refs;
    while (first < end) {
        size_t mid = first + (end - first) / 2;
        if (b->data_refs[mid].value < lo)
            first = mid + 1;
        else
            end = mid;
    }
    for (size_t k = first; k < b->ndata_refs && b->data_refs[k].value < hi; k++)
        if (!in_own_table(b, b->data_refs[k].where))
            return true;
    return false;
}

bool cfg_data_names_inner_address(const cfg_builder *b)
{
    const mt_program *prog = b->prog;
    uint32_t root = prog->procs[b->self].parent != MT_NONE ? prog->procs[b->self].parent : b->self;
    for (uint32_t q = root; q != MT_NONE; q = b->next_part[q]) {
        uint64_t hi = q + 1 < prog->nprocs ? prog->procs[q + 1].entry : UINT64_MAX;
        if (data_names_address_in(b, prog->procs[q].entry, hi))
            return true;
    }
    return false;
}

static bool worth_analyzing(const cfg_builder *b)
{
    bool opaque = false;
    for (size_t k = 0; k < b->nfailed; k++)
        opaque |= !b->failed[k].maybe_inside;
    return opaque && !b->inner_address && !cfg_data_names_inner_address(b);
}

/* States before every instruction; false when the analysis gave up. */
static bool solve(cfg_builder *b, const tc_effect *eff, tc_state *in)
{
    size_t entry = cfg_insn_at(b, b->lo);
    if (entry == SIZE_MAX)
        return false;
    in[entry] = entry_state();
    for (size_t k = 0; k < b->nextra; k++) {
        size_t i = cfg_insn_at(b, b->extra_entries[k]);
        if (i != SIZE_MAX)
            in[i] = top_state();
    }
    uint32_t *preds = mt_xmalloc(TC_MAX_PREDS * sizeof *preds);
    bool changed = true, ok = true;
    for (int pass = 0; changed && ok; pass++) {
        if (pass == TC_MAX_PASSES) {
            ok = false;
            break;
        }
        changed = false;
        for (size_t i = 0; i < b->ninsns && ok; i++) {
            size_t np = cfg_predecessors(b, i, preds, TC_MAX_PREDS);
            if (np == SIZE_MAX) {
                ok = false;
                break;
            }
            for (size_t k = 0; k < np; k++) {
                if (!in[preds[k]].reached)
                    continue;
                tc_state out = in[preds[k]];
                transfer(&eff[preds[k]], &out);
                changed |= merge(&in[i], &out);
            }
        }
    }
    free(preds);
    return ok;
}

static bool frame_torn_down(const tc_state *s)
{
    if (!s->reached || !s->height_known || s->height != 0)
        return false;
    for (int r = 0; r < TC_REGS; r++)
        if (s->regs[r].kind != V_ENTRY || s->regs[r].reg != r)
            return false;
    return true;
}

void cfg_find_tail_jumps(cfg_builder *b)
{
    if (!worth_analyzing(b) || b->ninsns == 0)
        return;
    tc_effect *eff = mt_xcalloc(b->ninsns, sizeof *eff);
    tc_state *in = mt_xcalloc(b->ninsns, sizeof *in);
    bool ok = true;
    for (size_t i = 0; i < b->ninsns && ok; i++) {
        const cs_insn *insn = cfg_redecode(b, i);
        if (!insn)
            ok = false;
        else
            effect_of(b->dec, insn, &eff[i]);
    }
    if (ok && solve(b, eff, in))
        for (size_t k = 0; k < b->nfailed; k++) {
            size_t i = cfg_insn_at(b, b->failed[k].addr);
            if (!b->failed[k].maybe_inside && i != SIZE_MAX && frame_torn_down(&in[i]))
                b->insns[i].flags |= CFG_TAIL_JUMP;
        }
    free(in);
    free(eff);
}
