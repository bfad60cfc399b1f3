/* analyzer/jumptable.c — recover the targets of `jmp *%reg` / `jmp *mem`
 * through a compiler's jump table.
 *
 * Method: a backward slice over the partially built CFG (instruction
 * predecessors, including branches into the middle of blocks).
 *   1. Evaluate the jump target symbolically: walking back from the jmp to
 *      the definitions of the registers it uses, build a small value
 *          target = C + ext(LOAD[size](T + size * VAR))
 *      where VAR is "register R just before instruction P".  This covers
 *        jmp *T(,%rI,8)                                   (absolute, non-PIC)
 *        mov T(,%rI,8),%rB; jmp *%rB
 *        lea T(%rip),%rA; movslq (%rA,%rI,4),%rB; add %rA,%rB; jmp *%rB
 *      in gcc's and clang's orders, -O0's `lea 0(,%rax,4),%rdx; mov
 *      (%rdx,%rax),%eax; cltq; add` form, `notrack jmp`, copies of the base.
 *      At a merge the value must be the same on every incoming path.
 *   2. Find the bound of VAR: walk back from P along every path, following
 *      copies (mov, movzx, movslq of registers; -O0 loads from a frame slot),
 *      until an unsigned `cmp $N, idx` + `ja`/`jae` (fallthrough edge) or
 *      `jbe`/`jb` (taken edge) guards the path; the other edge of such a
 *      check bounds nothing and the walk goes on past it (valgrind's
 *      memcheck reaches one table by `cmp $0x31; ja TABLE` and by paths
 *      below 0x31).  A walk is at an instruction once per edge it came
 *      back along and place of the index.  A zero extension from a byte
 *      (`movzbl`) bounds its path by 256 entries (plus an offset), which
 *      stands when no check is found further back.  Every path must be
 *      bounded; the table has the largest bound.  Any other write to the
 *      index, a call in between, or reaching the entry means no bound:
 *      unresolved.  cfg.c resolves every table again once the CFG is
 *      complete (paths found later may reach a jump resolved early).
 *   3. Read the N entries and check that every target lies inside the
 *      procedure; otherwise the jump stays unresolved (never a guess).  A
 *      bound from a byte's width often reads past a shorter table: then
 *      some entry is no target inside the procedure, and the jump stays
 *      unresolved too.
 *   4. Name the load's index and base registers: the rewriter checks the
 *      index there (its safety net against a bound the analysis got wrong).
 * Work is bounded by SLICE_BUDGET visited instructions per jump. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_internal.h"

#define SLICE_BUDGET 20000
#define MAX_DEFS 128 /* perl's Perl_leave_scope reloads one table base at 59 places */
#define MAX_EVAL_DEPTH 10
#define MAX_TABLE_ENTRIES 65536

/* A symbolic value: c + coef*VAR + ext(LOAD[load_size](load_c + load_coef*LVAR)). */
typedef struct {
    bool known;
    int64_t c;
    int64_t coef;           /* 0: no VAR term */
    uint8_t var_fam;
    uint32_t var_pos;
    bool load;
    bool load_signed;
    uint8_t load_size;
    int64_t load_c, load_coef;
    uint8_t load_fam;
    uint32_t load_pos;
    uint32_t load_insn;     /* the instruction that reads the entry */
} jt_val;

typedef struct {
    cfg_builder *b;
    int budget;
    uint32_t *stamp;        /* per instruction: the search that last visited it */
    uint32_t search;        /* the current search's number */
    uint32_t *preds;        /* scratch for predecessors: room for the most any
                               instruction has (an interpreter's dispatch head has
                               one per handler: gawk's r_interpret, 120) */
} slice;

/* The predecessors of instruction i, in s->preds (valid until the next call). */
static size_t preds_of(slice *s, size_t i)
{
    if (!s->preds)
        s->preds = mt_xcalloc(s->b->npreds + 2, sizeof *s->preds);
    return cfg_predecessors(s->b, i, s->preds, s->b->npreds + 1);
}

static jt_val unknown(void)
{
    jt_val v;
    memset(&v, 0, sizeof v);
    return v;
}

static jt_val constant(int64_t c)
{
    jt_val v = unknown();
    v.known = true;
    v.c = c;
    return v;
}

static jt_val variable(unsigned fam, size_t pos)
{
    jt_val v = constant(0);
    v.coef = 1;
    v.var_fam = (uint8_t)fam;
    v.var_pos = (uint32_t)pos;
    return v;
}

static bool same_value(const jt_val *a, const jt_val *b)
{
    if (a->known != b->known || a->c != b->c || a->coef != b->coef || a->load != b->load)
        return false;
    if (a->coef && (a->var_fam != b->var_fam || a->var_pos != b->var_pos))
        return false;
    if (a->load && (a->load_signed != b->load_signed || a->load_size != b->load_size ||
                    a->load_c != b->load_c || a->load_coef != b->load_coef ||
                    a->load_fam != b->load_fam || a->load_pos != b->load_pos || a->load_insn != b->load_insn))
        return false;
    return true;
}

static jt_val add_values(jt_val a, jt_val b)
{
    if (!a.known || !b.known || (a.load && b.load))
        return unknown();
    jt_val r = a;
    r.c = (int64_t)((uint64_t)a.c + (uint64_t)b.c);
    if (b.coef) {
        if (a.coef && (a.var_fam != b.var_fam || a.var_pos != b.var_pos))
            return unknown(); /* two different variables */
        r.coef = a.coef + b.coef;
        r.var_fam = b.var_fam;
        r.var_pos = b.var_pos;
    }
    if (b.load) {
        r.load = true;
        r.load_signed = b.load_signed;
        r.load_size = b.load_size;
        r.load_c = b.load_c;
        r.load_coef = b.load_coef;
        r.load_fam = b.load_fam;
        r.load_pos = b.load_pos;
        r.load_insn = b.load_insn;
    }
    return r;
}

static jt_val scale_value(jt_val a, int64_t k)
{
    if (!a.known || a.load || k < 0 || k > 64)
        return unknown();
    a.c *= k;
    a.coef *= k;
    return a;
}

static jt_val load_value(jt_val addr, unsigned size, bool sign, size_t insn)
{
    /* Only a load indexed by a variable is a table; a load from a fixed
     * address (a function pointer variable) is not. */
    if (!addr.known || addr.load || addr.coef == 0 || (size != 1 && size != 2 && size != 4 && size != 8))
        return unknown();
    jt_val v = constant(0);
    v.load = true;
    v.load_signed = sign;
    v.load_size = (uint8_t)size;
    v.load_c = addr.c;
    v.load_coef = addr.coef;
    v.load_fam = addr.var_fam;
    v.load_pos = addr.var_pos;
    v.load_insn = (uint32_t)insn;
    return v;
}

static jt_val sign_extend32(jt_val a)
{
    if (a.known && a.load && a.load_size == 4 && a.c == 0 && a.coef == 0) {
        a.load_signed = true;
        return a;
    }
    if (a.known && !a.load && a.c == 0 && a.coef == 1)
        return a; /* an index copy */
    return unknown();
}

/* ---- predecessor walks -------------------------------------------------- */

static bool visit(slice *s, size_t i)
{
    if (!s->stamp)
        s->stamp = mt_xcalloc(s->b->ninsns + 1, sizeof *s->stamp);
    if (s->stamp[i] == s->search)
        return false;
    s->stamp[i] = s->search;
    return true;
}

typedef struct {
    uint32_t defs[MAX_DEFS];
    size_t ndefs;
    bool open;   /* some path reaches the entry or a call without a definition */
    bool failed; /* budget exhausted or too many definitions */
} def_set;

/* Instructions that define register family `fam` last before `pos`. */
static void find_defs(slice *s, size_t pos, unsigned fam, def_set *out)
{
    cfg_builder *b = s->b;
    memset(out, 0, sizeof *out);
    s->search++;
    uint32_t *stack = NULL;
    size_t nstack = 0, cap = 0;
    size_t np = preds_of(s, pos);
    if (np == 0)
        out->open = true;
    for (size_t k = 0; k < np; k++)
        MT_PUSH(stack, nstack, cap, s->preds[k]);
    while (nstack > 0) {
        size_t i = stack[--nstack];
        if (!visit(s, i))
            continue;
        if (--s->budget < 0) {
            out->failed = true;
            break;
        }
        const cfg_insn *in = &b->insns[i];
        if ((in->flow == MT_FLOW_CALL || in->flow == MT_FLOW_ICALL) && mt_family_caller_saved(fam)) {
            out->open = true; /* clobbered by the call */
            continue;
        }
        const cs_insn *insn = cfg_redecode(b, i);
        if (!insn) {
            out->failed = true;
            break;
        }
        if (mt_insn_writes_family(b->dec, insn, fam)) {
            if (out->ndefs == MAX_DEFS) {
                out->failed = true;
                break;
            }
            out->defs[out->ndefs++] = (uint32_t)i;
            continue;
        }
        np = preds_of(s, i);
        if (np == 0)
            out->open = true;
        for (size_t k = 0; k < np; k++)
            MT_PUSH(stack, nstack, cap, s->preds[k]);
    }
    free(stack);
}

/* ---- symbolic evaluation ------------------------------------------------ */

static jt_val eval_reg(slice *s, size_t pos, unsigned fam, bool allow_load, int depth);

/* The address of memory operand `m` of the instruction at `pos` (whose
 * address and size are given: the cs_insn itself is clobbered by re-decodes). */
static jt_val eval_address(slice *s, size_t pos, const x86_op_mem *m, uint64_t next_ip, int depth)
{
    if (m->segment == X86_REG_FS || m->segment == X86_REG_GS)
        return unknown(); /* other segment prefixes (notrack is ds) are ignored in 64-bit mode */
    jt_val v = constant(m->disp);
    if (m->base == X86_REG_RIP) {
        if (m->index != X86_REG_INVALID)
            return unknown();
        v.c += (int64_t)next_ip;
    } else if (m->base != X86_REG_INVALID) {
        unsigned f = mt_reg_family(m->base);
        if (!f)
            return unknown();
        v = add_values(v, eval_reg(s, pos, f, false, depth));
    }
    if (m->index != X86_REG_INVALID) {
        unsigned f = mt_reg_family(m->index);
        if (!f)
            return unknown();
        v = add_values(v, scale_value(eval_reg(s, pos, f, false, depth), m->scale));
    }
    return v;
}

/* The value that instruction `d` leaves in family `fam`. */
static jt_val eval_def(slice *s, size_t d, unsigned fam, bool allow_load, int depth)
{
    const cs_insn *insn = cfg_redecode(s->b, d);
    if (!insn)
        return unknown();
    /* Copy what is needed: nested evaluations re-decode into the same cs_insn. */
    unsigned id = insn->id;
    cs_x86 x = insn->detail->x86;
    uint64_t next_ip = insn->address + insn->size;
    if (x.op_count < 1 && id != X86_INS_CDQE)
        return unknown();
    const cs_x86_op *dst = &x.operands[0], *src = &x.operands[1];
    if (id == X86_INS_CDQE)
        return fam == MT_FAMILY_RAX ? sign_extend32(eval_reg(s, d, fam, allow_load, depth)) : unknown();
    if (dst->type != X86_OP_REG || mt_reg_family(dst->reg) != fam || x.op_count != 2)
        return unknown();
    switch (id) {
    case X86_INS_LEA:
        return src->type == X86_OP_MEM ? eval_address(s, d, &src->mem, next_ip, depth) : unknown();
    case X86_INS_MOV:
    case X86_INS_MOVABS:
    case X86_INS_MOVZX:
    case X86_INS_MOVSX:
    case X86_INS_MOVSXD: {
        bool sign = id == X86_INS_MOVSX || id == X86_INS_MOVSXD;
        if (src->type == X86_OP_IMM) {
            int64_t imm = src->imm;
            return constant(dst->size == 4 ? (int64_t)(uint32_t)imm : imm);
        }
        if (src->type == X86_OP_REG) {
            unsigned f = mt_reg_family(src->reg);
            if (!f)
                return unknown();
            jt_val v = eval_reg(s, d, f, allow_load, depth);
            return sign && src->size == 4 ? sign_extend32(v) : v;
        }
        if (src->type == X86_OP_MEM && allow_load)
            return load_value(eval_address(s, d, &src->mem, next_ip, depth), src->size, sign, d);
        return unknown();
    }
    case X86_INS_ADD:
        if (src->type == X86_OP_IMM)
            return add_values(eval_reg(s, d, fam, allow_load, depth), constant(src->imm));
        if (src->type == X86_OP_REG && mt_reg_family(src->reg))
            return add_values(eval_reg(s, d, fam, allow_load, depth),
                              eval_reg(s, d, mt_reg_family(src->reg), allow_load, depth));
        return unknown();
    case X86_INS_SUB:
        if (src->type == X86_OP_IMM)
            return add_values(eval_reg(s, d, fam, allow_load, depth), constant(-src->imm));
        return unknown();
    case X86_INS_SHL:
        if (src->type == X86_OP_IMM && src->imm >= 0 && src->imm <= 6)
            return scale_value(eval_reg(s, d, fam, allow_load, depth), (int64_t)1 << src->imm);
        return unknown();
    default:
        return unknown();
    }
}

/* Value of `fam` just before instruction `pos`.  Anything not understood is
 * the opaque VAR(fam, pos), whose range the bound search may establish. */
static jt_val eval_reg(slice *s, size_t pos, unsigned fam, bool allow_load, int depth)
{
    if (depth > MAX_EVAL_DEPTH || fam == MT_FAMILY_RSP)
        return variable(fam, pos);
    def_set ds;
    find_defs(s, pos, fam, &ds);
    if (ds.failed || ds.open || ds.ndefs == 0)
        return variable(fam, pos);
    jt_val result = unknown();
    for (size_t k = 0; k < ds.ndefs; k++) {
        jt_val v = eval_def(s, ds.defs[k], fam, allow_load, depth + 1);
        if (!v.known || (k > 0 && !same_value(&v, &result)))
            return variable(fam, pos);
        result = v;
    }
    /* An offset index (idx - k after `sub $k`) is tracked from here: the
     * bound check compares the offset value, not the original.  So is a
     * plain copy of another register: the bound search follows copies
     * backward itself and must start at the latest one, or it would walk
     * from the copy's source across what lies in between (`call getopt;
     * mov %eax,%r9d; ...; cmp $N,%r9d; ja; mov %r9d,%eax; jmp *T(,%rax,8)`). */
    if (!result.load && result.coef != 0 && (result.c != 0 || result.coef == 1))
        return variable(fam, pos);
    return result;
}

/* ---- the bound of the index ------------------------------------------- */

/* Where the index lives while walking back: a register family or, at -O0,
 * a frame slot disp(%rbp) / disp(%rsp). */
typedef struct {
    bool slot;        /* in memory at disp(base) or disp(base,idx,scale) */
    uint8_t fam;      /* register family, or the slot's base family */
    uint8_t idx;      /* the slot's index family, 0 if none */
    uint8_t scale;
    int64_t disp;
    int64_t offset;   /* index = value here + offset (after `add $k` / `sub $k`) */
    bool shared;      /* the slot is not in the frame (base other than %rbp/%rsp): any
                         store or call may change it */
    uint32_t limit;   /* entries a zero extension on this path allows (`movzbl`: 256 +
                         offset), 0 if none: the bound of a path no compare guards */
} index_loc;

typedef struct {
    uint32_t insn, succ;
    index_loc loc;
} walk_item;

static bool same_loc(const index_loc *a, const index_loc *b)
{
    return a->slot == b->slot && a->fam == b->fam && a->idx == b->idx && a->scale == b->scale &&
           a->disp == b->disp && a->offset == b->offset && a->shared == b->shared && a->limit == b->limit;
}

/* Whether the bound walk has been at `w` before.  What the walk learns at an
 * instruction depends on the edge it came back along (a `ja` bounds the index
 * on its fallthrough edge, not on its taken one) and on where the index is
 * there, so a visit is the whole item, not the instruction alone. */
typedef struct {
    walk_item *items;
    uint32_t *next;         /* per item: 1 + the previous item at its instruction */
    uint32_t *head;         /* per instruction: 1 + its last item */
    size_t n, cap, cap_next;
} walk_seen;

static bool walk_visit(walk_seen *seen, const cfg_builder *b, const walk_item *w)
{
    if (!seen->head)
        seen->head = mt_xcalloc(b->ninsns + 1, sizeof *seen->head);
    for (uint32_t k = seen->head[w->insn]; k; k = seen->next[k - 1])
        if (seen->items[k - 1].succ == w->succ && same_loc(&seen->items[k - 1].loc, &w->loc))
            return false;
    size_t n = seen->n;
    MT_PUSH(seen->next, n, seen->cap_next, seen->head[w->insn]);
    MT_PUSH(seen->items, seen->n, seen->cap, *w);
    seen->head[w->insn] = (uint32_t)seen->n;
    return true;
}

static void walk_seen_free(walk_seen *seen)
{
    free(seen->items);
    free(seen->next);
    free(seen->head);
}

static bool operand_is_loc(const cs_x86_op *op, const index_loc *loc)
{
    if (!loc->slot)
        return op->type == X86_OP_REG && mt_reg_family(op->reg) == loc->fam;
    bool same_index = loc->idx ? mt_reg_family(op->mem.index) == loc->idx && op->mem.scale == loc->scale
                               : op->mem.index == X86_REG_INVALID;
    return op->type == X86_OP_MEM && same_index &&
           op->mem.segment != X86_REG_FS && op->mem.segment != X86_REG_GS && mt_reg_family(op->mem.base) == loc->fam &&
           op->mem.disp == loc->disp;
}

/* The instruction that falls through into instruction `*p` (moving `*p` to
 * it), or NULL when `*p` is reached otherwise or nothing precedes it. */
static const cs_insn *straight_line_prev(slice *s, size_t *p)
{
    cfg_builder *bld = s->b;
    if (*p == 0)
        return NULL;
    const cfg_insn *prev = &bld->insns[*p - 1];
    if (prev->addr + prev->len != bld->insns[*p].addr || prev->flow != MT_FLOW_NONE)
        return NULL;
    (*p)--;
    return cfg_redecode(bld, *p);
}

/* Whether registers `a` and `b` hold the same value just before instruction
 * `p`: a register copy between them precedes it in straight-line code, and
 * neither changes in between (`mov %ebx,%esi; ...; cmp $N,%esi`). */
static bool copies_before(slice *s, size_t p, unsigned a, unsigned b)
{
    cfg_builder *bld = s->b;
    for (int steps = 0; steps < 16; steps++) {
        const cs_insn *insn = straight_line_prev(s, &p);
        if (!insn)
            return false;
        const cs_x86 *x = &insn->detail->x86;
        bool writes_a = mt_insn_writes_family(bld->dec, insn, a);
        bool writes_b = mt_insn_writes_family(bld->dec, insn, b);
        if (!writes_a && !writes_b)
            continue;
        if ((insn->id == X86_INS_MOV || insn->id == X86_INS_MOVZX) && x->op_count == 2 &&
            x->operands[0].type == X86_OP_REG && x->operands[1].type == X86_OP_REG) {
            unsigned d = mt_reg_family(x->operands[0].reg), sr = mt_reg_family(x->operands[1].reg);
            return (d == a && sr == b) || (d == b && sr == a);
        }
        return false;
    }
    return false;
}

/* Whether frame slot `loc` holds the value register family `reg` has just
 * before instruction `p`: a store `mov %reg, slot` precedes it in
 * straight-line code and neither changes in between (clang -O0 keeps the
 * switch index in a slot and checks the register: `mov %rax,-0x10(%rbp);
 * sub $8,%rax; ja default; mov -0x10(%rbp),%rax`). */
static bool slot_stored_before(slice *s, size_t p, const index_loc *loc, unsigned reg)
{
    cfg_builder *bld = s->b;
    for (int steps = 0; steps < 16; steps++) {
        const cs_insn *insn = straight_line_prev(s, &p);
        if (!insn)
            return false;
        const cs_x86 *x = &insn->detail->x86;
        if (x->op_count >= 1 && operand_is_loc(&x->operands[0], loc))
            return insn->id == X86_INS_MOV && x->op_count == 2 && x->operands[1].type == X86_OP_REG &&
                   mt_reg_family(x->operands[1].reg) == reg;
        if (mt_insn_writes_family(bld->dec, insn, reg) || mt_insn_writes_family(bld->dec, insn, loc->fam))
            return false;
    }
    return false;
}

/* If the jcc at `p`, reached through its taken (or fallthrough) edge, is
 * an unsigned bound check `cmp $N, loc`, returns the number of table
 * entries it allows; else 0. */
static bool step_back(slice *s, size_t p, index_loc *loc);

static bool leaves_flags(unsigned id)
{
    return id == X86_INS_LEA || id == X86_INS_MOV || id == X86_INS_MOVZX || id == X86_INS_MOVSX ||
           id == X86_INS_MOVSXD;
}

/* The compare that sets the flags the jcc at `p` tests: the instruction
 * just before it, or before a few moves (which leave the flags alone) that
 * only straight-line code reaches; `loc` follows the index back across
 * them.  A store there to another place than the index's slot is passed
 * over even when it might alias the slot: the compiler reloads the index
 * after it without checking it again, so it knows the value is the one
 * compared (`cmpl $11,(%r14); movb $0,0x2df(%r14); ja cold; mov
 * (%r14),%eax`).  Returns its index, or SIZE_MAX. */
static size_t flag_setter(slice *s, size_t p, index_loc *loc)
{
    cfg_builder *b = s->b;
    uint32_t preds[2];
    for (int between = 0; between <= 4; between++) {
        if (p == 0 || b->insns[p - 1].addr + b->insns[p - 1].len != b->insns[p].addr)
            return SIZE_MAX;
        if (between > 0 && cfg_predecessors(b, p, preds, 2) != 1)
            return SIZE_MAX; /* entered from elsewhere: other flags */
        const cs_insn *insn = cfg_redecode(b, p - 1);
        if (!insn)
            return SIZE_MAX;
        if (!leaves_flags(insn->id))
            return p - 1;
        const cs_x86 *x = &insn->detail->x86;
        bool store = insn->id == X86_INS_MOV && x->op_count == 2 && x->operands[0].type == X86_OP_MEM;
        if (store && operand_is_loc(&x->operands[0], loc))
            return SIZE_MAX;
        if (!store && !step_back(s, p - 1, loc))
            return SIZE_MAX;
        p--;
    }
    return SIZE_MAX;
}

static uint64_t bound_from_check(slice *s, size_t p, const index_loc *loc_at_jcc, bool taken)
{
    cfg_builder *b = s->b;
    const cs_insn *jcc = cfg_redecode(b, p);
    if (!jcc)
        return 0;
    unsigned jid = jcc->id;
    index_loc at = *loc_at_jcc;
    const index_loc *loc = &at;
    size_t c = flag_setter(s, p, &at);
    if (c == SIZE_MAX)
        return 0;
    /* `sub $N, %reg` sets the flags as `cmp $N, %reg` does, but changes the
     * register: it only bounds a copy of the value taken before it. */
    const cs_insn *cmp = cfg_redecode(b, c);
    if (!cmp || (cmp->id != X86_INS_CMP && cmp->id != X86_INS_SUB))
        return 0;
    bool is_sub = cmp->id == X86_INS_SUB;
    const cs_x86 *x = &cmp->detail->x86;
    if (x->op_count != 2 || x->operands[1].type != X86_OP_IMM)
        return 0;
    unsigned size = x->operands[0].size;
    uint64_t n = (uint64_t)x->operands[1].imm;
    unsigned cmp_fam = x->operands[0].type == X86_OP_REG ? mt_reg_family(x->operands[0].reg) : 0;
    bool on_index = !is_sub && operand_is_loc(&x->operands[0], loc);
    if (!on_index && cmp_fam)
        on_index = loc->slot ? slot_stored_before(s, c, loc, cmp_fam)
                             : !is_sub && copies_before(s, c, cmp_fam, loc->fam);
    if (!on_index)
        return 0;
    if (size < 8)
        n &= ((uint64_t)1 << (size * 8)) - 1;
    if (n >= MAX_TABLE_ENTRIES)
        return UINT64_MAX;
    if ((jid == X86_INS_JA && !taken) || (jid == X86_INS_JBE && taken))
        return n + 1;
    if ((jid == X86_INS_JAE && !taken) || (jid == X86_INS_JB && taken))
        return n;
    return 0;
}

/* `and $mask, idx` also bounds the index: mask + 1 entries. */
static uint64_t bound_from_mask(slice *s, size_t p, const index_loc *loc)
{
    if (loc->slot)
        return 0;
    const cs_insn *insn = cfg_redecode(s->b, p);
    if (!insn || insn->id != X86_INS_AND)
        return 0;
    const cs_x86 *x = &insn->detail->x86;
    if (x->op_count != 2 || !operand_is_loc(&x->operands[0], loc) || x->operands[1].type != X86_OP_IMM)
        return 0;
    int64_t mask = x->operands[1].imm;
    return mask >= 0 && mask < MAX_TABLE_ENTRIES ? (uint64_t)mask + 1 : 0;
}

/* Entries selectable by idx = v + offset when v < n. */
static uint64_t apply_offset(uint64_t n, int64_t offset)
{
    if (n == 0 || (offset < 0 && (uint64_t)-offset >= n))
        return 0;
    uint64_t r = offset < 0 ? n - (uint64_t)-offset : n + (uint64_t)offset;
    return r < MAX_TABLE_ENTRIES ? r : 0;
}

/* A zero extension from `n`-entry wide values bounds the index on this path
 * whatever came before it. */
static void narrow_limit(index_loc *loc, uint64_t n)
{
    if (n && (loc->limit == 0 || n < loc->limit))
        loc->limit = (uint32_t)n;
}

/* Follows the index backward across instruction `p` (not a bound check).
 * Returns false when the index gets a value we cannot follow. */
/* The slot's index register gets a new value at `insn`: follow
 * `lea k(%rX),%idx`, `add $k,%idx` and `mov %rX,%idx` (64-bit) by moving
 * the slot's displacement; anything else loses the slot. */
static bool step_back_slot_index(const cs_insn *insn, index_loc *loc)
{
    const cs_x86 *x = &insn->detail->x86;
    if (x->op_count != 2 || x->operands[0].type != X86_OP_REG || x->operands[0].size != 8 ||
        mt_reg_family(x->operands[0].reg) != loc->idx)
        return false;
    const cs_x86_op *src = &x->operands[1];
    int64_t k;
    if (insn->id == X86_INS_LEA && src->mem.index == X86_REG_INVALID && mt_reg_family(src->mem.base) &&
        src->mem.segment == X86_REG_INVALID) {
        loc->idx = (uint8_t)mt_reg_family(src->mem.base);
        k = src->mem.disp;
    } else if (insn->id == X86_INS_ADD && src->type == X86_OP_IMM) {
        k = src->imm;
    } else if (insn->id == X86_INS_MOV && src->type == X86_OP_REG && src->size == 8 &&
               mt_reg_family(src->reg)) {
        loc->idx = (uint8_t)mt_reg_family(src->reg);
        k = 0;
    } else {
        return false;
    }
    if (k <= -MAX_TABLE_ENTRIES || k >= MAX_TABLE_ENTRIES)
        return false;
    loc->disp += k * loc->scale;
    return true;
}

static bool step_back(slice *s, size_t p, index_loc *loc)
{
    cfg_builder *b = s->b;
    const cs_insn *insn = cfg_redecode(b, p);
    if (!insn)
        return false;
    const cs_x86 *x = &insn->detail->x86;
    if (loc->slot) {
        if (mt_insn_writes_family(b->dec, insn, loc->fam))
            return false; /* the frame moved */
        if (loc->idx && mt_insn_writes_family(b->dec, insn, loc->idx))
            return step_back_slot_index(insn, loc);
        for (unsigned i = 0; i < x->op_count; i++) {
            const cs_x86_op *op = &x->operands[i];
            if (op->type == X86_OP_MEM && operand_is_loc(op, loc)) {
                if (i != 0 || x->op_count < 2 || insn->id == X86_INS_CMP || insn->id == X86_INS_TEST)
                    continue; /* a read */
                if (insn->id == X86_INS_MOV && x->operands[1].type == X86_OP_REG &&
                    mt_reg_family(x->operands[1].reg)) {
                    *loc = (index_loc){.fam = (uint8_t)mt_reg_family(x->operands[1].reg),
                                       .offset = loc->offset, .limit = loc->limit};
                    return true; /* stored from a register: follow it */
                }
                return false;
            }
            if (loc->shared && op->type == X86_OP_MEM && (op->access & CS_AC_WRITE))
                return false; /* a store that may alias it */
        }
        return true;
    }
    if (!mt_insn_writes_family(b->dec, insn, loc->fam))
        return true;
    unsigned id = insn->id;
    if ((id == X86_INS_ADD || id == X86_INS_SUB) && x->op_count == 2 &&
        x->operands[0].type == X86_OP_REG && mt_reg_family(x->operands[0].reg) == loc->fam &&
        x->operands[1].type == X86_OP_IMM && x->operands[1].imm > -MAX_TABLE_ENTRIES &&
        x->operands[1].imm < MAX_TABLE_ENTRIES) {
        /* idx = v + k: a bound on v bounds idx (the lower end is the code's business). */
        loc->offset += id == X86_INS_ADD ? x->operands[1].imm : -x->operands[1].imm;
        return true;
    }
    bool copy = id == X86_INS_MOV || id == X86_INS_MOVZX || id == X86_INS_MOVSXD ||
                (id == X86_INS_MOVSX && x->op_count == 2 && x->operands[1].size == 4);
    if (!copy || x->op_count != 2 || x->operands[0].type != X86_OP_REG ||
        mt_reg_family(x->operands[0].reg) != loc->fam)
        return false;
    const cs_x86_op *src = &x->operands[1];
    if (id == X86_INS_MOVZX && src->size == 1)
        narrow_limit(loc, apply_offset(256, loc->offset));
    if (src->type == X86_OP_REG && mt_reg_family(src->reg)) {
        loc->fam = (uint8_t)mt_reg_family(src->reg);
        return true;
    }
    /* Loaded from memory: follow the slot back to its bound check
     * (`cmpl $5,0x50(%rdi); ja default; mov 0x50(%rdi),%edx`, or an array
     * element: `cmpl $4,0x30(%rax,%rdx,4); lea 0xc(%rdx),%rcx; ja default;
     * mov (%rax,%rcx,4),%ecx`). */
    unsigned base = mt_reg_family(src->mem.base), index = mt_reg_family(src->mem.index);
    if (src->type == X86_OP_MEM && base && (src->mem.index == X86_REG_INVALID || index) &&
        src->mem.base != X86_REG_RIP && src->mem.segment != X86_REG_FS &&
        src->mem.segment != X86_REG_GS) {
        *loc = (index_loc){.slot = true, .fam = (uint8_t)base, .idx = (uint8_t)index,
                           .scale = (uint8_t)src->mem.scale, .disp = src->mem.disp,
                           .offset = loc->offset, .limit = loc->limit,
                           .shared = index || (base != MT_FAMILY_RBP && base != MT_FAMILY_RSP)};
        return true;
    }
    return false;
}

static uint64_t find_bound(slice *s, unsigned fam, size_t pos, char *why, size_t whylen, int depth);
static uint64_t read_entry(const uint8_t *p, unsigned size, bool sign);

/* Two-level tables (glibc's vfprintf): the index is itself read from a
 * byte/word table, `movzbl T1(%rB,%rI), idx`, with a bounded inner index.
 * The outer index is then below max(T1[0..n1)) + 1. */
static uint64_t bound_from_index_table(slice *s, size_t p, const index_loc *loc, int depth)
{
    if (loc->slot)
        return 0;
    const cs_insn *insn = cfg_redecode(s->b, p);
    if (!insn || insn->id != X86_INS_MOVZX || insn->detail->x86.op_count != 2)
        return 0;
    cs_x86_op dst = insn->detail->x86.operands[0], src = insn->detail->x86.operands[1];
    uint64_t next_ip = insn->address + insn->size;
    if (dst.type != X86_OP_REG || mt_reg_family(dst.reg) != loc->fam || src.type != X86_OP_MEM ||
        (src.size != 1 && src.size != 2))
        return 0;
    jt_val a = eval_address(s, p, &src.mem, next_ip, 0);
    uint64_t n1 = 0;
    char why[96];
    if (a.known && !a.load && a.coef == src.size)
        n1 = find_bound(s, a.var_fam, a.var_pos, why, sizeof why, depth + 1);
    const uint8_t *bytes = n1 ? mt_elf_file_bytes(s->b->img, (uint64_t)a.c, n1 * src.size) : NULL;
    if (!bytes)
        return 0;
    uint64_t max = 0;
    for (uint64_t k = 0; k < n1; k++) {
        uint64_t e = read_entry(bytes + k * src.size, src.size, false);
        if (e > max)
            max = e;
    }
    return max + 1 < MAX_TABLE_ENTRIES ? max + 1 : 0;
}

/* The entries a path allows given `n` from a check on it (0: none found):
 * within the limit a zero extension sets on it. */
static uint64_t path_bound(uint64_t n, const index_loc *loc)
{
    return loc->limit && n > loc->limit ? loc->limit : n;
}

/* Number of table entries the index VAR(fam, pos) may select, or 0 with
 * `why`: the largest of the bounds of every path that reaches the jump. */
static uint64_t find_bound(slice *s, unsigned fam, size_t pos, char *why, size_t whylen, int depth)
{
    cfg_builder *b = s->b;
    walk_item *stack = NULL;
    size_t nstack = 0, cap = 0;
    walk_seen seen = {0};
    uint64_t bound = 0;
    index_loc start = {.fam = (uint8_t)fam};
    size_t np = preds_of(s, pos);
    if (np == 0) {
        snprintf(why, whylen, "no bound check on the index");
        return 0;
    }
    for (size_t k = 0; k < np; k++) {
        walk_item w = {s->preds[k], (uint32_t)pos, start};
        MT_PUSH(stack, nstack, cap, w);
    }
    while (nstack > 0) {
        walk_item w = stack[--nstack];
        if (!walk_visit(&seen, b, &w))
            continue;
        if (--s->budget < 0) {
            snprintf(why, whylen, "slice too long");
            goto fail;
        }
        const cfg_insn *in = &b->insns[w.insn];
        uint64_t n = 0;
        if (in->flow == MT_FLOW_COND) {
            uint64_t succ = b->insns[w.succ].addr;
            bool taken = in->target == succ, fall = in->addr + in->len == succ;
            n = taken != fall ? bound_from_check(s, w.insn, &w.loc, taken) : 0;
            if (n == UINT64_MAX && !w.loc.limit) {
                snprintf(why, whylen, "bound check too large");
                goto fail;
            }
            n = n == UINT64_MAX ? w.loc.limit : path_bound(apply_offset(n, w.loc.offset), &w.loc);
        }
        if (!n)
            n = path_bound(apply_offset(bound_from_mask(s, w.insn, &w.loc), w.loc.offset), &w.loc);
        const char *unbounded = NULL; /* why the path has no bound check, if it has none */
        bool is_call = in->flow == MT_FLOW_CALL || in->flow == MT_FLOW_ICALL;
        if (n) {
            /* the path ends at a check or a mask */
        } else if (is_call && ((!w.loc.slot && mt_family_caller_saved(w.loc.fam)) || w.loc.shared)) {
            unbounded = "call at 0x%llx between bound check and jump";
            n = w.loc.limit;
        } else if (!is_call && !step_back(s, w.insn, &w.loc)) {
            /* A call keeps callee-saved registers and the caller's frame slots. */
            n = depth == 0 ? apply_offset(bound_from_index_table(s, w.insn, &w.loc, depth), w.loc.offset) : 0;
            n = n ? path_bound(n, &w.loc) : w.loc.limit;
            unbounded = "index redefined at 0x%llx before any bound check";
        } else {
            np = preds_of(s, w.insn);
            unbounded = np == 0 ? "no bound check on the index on the path through 0x%llx" : NULL;
            n = np == 0 ? w.loc.limit : 0;
            for (size_t k = 0; k < np; k++) {
                walk_item nw = {s->preds[k], w.insn, w.loc};
                MT_PUSH(stack, nstack, cap, nw);
            }
        }
        if (n > bound)
            bound = n;
        if (!n && unbounded) {
            snprintf(why, whylen, unbounded, (unsigned long long)in->addr);
            goto fail;
        }
    }
    free(stack);
    walk_seen_free(&seen);
    if (bound == 0)
        snprintf(why, whylen, "no bound check on the index");
    return bound;
fail:
    free(stack);
    walk_seen_free(&seen);
    return 0;
}

/* ---- reading the table ------------------------------------------------ */

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t read_entry(const uint8_t *p, unsigned size, bool sign)
{
    uint64_t v = 0;
    for (unsigned k = 0; k < size; k++)
        v |= (uint64_t)p[k] << (8 * k);
    if (sign && size < 8 && (v >> (size * 8 - 1)) & 1)
        v |= ~(uint64_t)0 << (size * 8);
    return v;
}

static bool read_table(cfg_builder *b, const jt_val *v, uint64_t n, uint64_t **targets,
                       uint32_t *ntargets, mt_jump_table *layout, char *why, size_t whylen)
{
    uint64_t base = (uint64_t)v->load_c;
    const uint8_t *p = mt_elf_file_bytes(b->img, base, n * v->load_size);
    if (!p) {
        snprintf(why, whylen, "table at 0x%llx (%llu entries) is not in the file",
                 (unsigned long long)base, (unsigned long long)n);
        return false;
    }
    uint64_t *t = mt_xmalloc(n * sizeof *t);
    for (uint64_t k = 0; k < n; k++) {
        t[k] = (uint64_t)v->c + read_entry(p + k * v->load_size, v->load_size, v->load_signed);
        if (!cfg_table_target_allowed(b, t[k])) {
            snprintf(why, whylen, "entry %llu of table 0x%llx points to 0x%llx outside the procedure",
                     (unsigned long long)k, (unsigned long long)base, (unsigned long long)t[k]);
            free(t);
            return false;
        }
    }
    if (n > 1)
        qsort(t, n, sizeof *t, compare_u64);
    uint32_t m = 0;
    for (uint64_t k = 0; k < n; k++)
        if (m == 0 || t[m - 1] != t[k])
            t[m++] = t[k];
    *targets = t;
    *ntargets = m;
    *layout = (mt_jump_table){.table = base, .base = (uint64_t)v->c, .nentries = (uint32_t)n,
                              .entry_size = v->load_size, .entry_signed = v->load_signed};
    return true;
}

/* ---- entry point ------------------------------------------------------- */

static jt_val jump_target_value(slice *s, size_t i)
{
    const cs_insn *insn = cfg_redecode(s->b, i);
    if (!insn || insn->detail->x86.op_count != 1)
        return unknown();
    cs_x86_op op = insn->detail->x86.operands[0];
    uint64_t next_ip = insn->address + insn->size;
    if (op.type == X86_OP_REG && mt_reg_family(op.reg))
        return eval_reg(s, i, mt_reg_family(op.reg), true, 0);
    if (op.type == X86_OP_MEM)
        return load_value(eval_address(s, i, &op.mem, next_ip, 0), 8, false, i);
    return unknown();
}

/* Where a copy can check the index before reading an entry (the rewriter's
 * safety net, docs/ARCHITECTURE.md): of the load's address registers, the
 * one that carries the index (`index_reg`, times `index_scale` in the
 * address) and the one that holds the table's address (`base_reg`, whose
 * value `base_value` every path gives it).  Left 0 when the address has
 * another shape: the rewriter then leaves the procedure out. */
static void locate_index(slice *s, size_t load, mt_jump_table *layout)
{
    const cs_insn *insn = cfg_redecode(s->b, load);
    if (!insn)
        return;
    const cs_x86 *x = &insn->detail->x86;
    const cs_x86_op *mem = NULL;
    for (unsigned k = 0; k < x->op_count; k++)
        if (x->operands[k].type == X86_OP_MEM)
            mem = &x->operands[k];
    if (!mem || x->addr_size != 8 || mem->mem.segment == X86_REG_FS || mem->mem.segment == X86_REG_GS ||
        mem->mem.base == X86_REG_RIP)
        return;
    x86_reg regs[2] = {mem->mem.base, mem->mem.index};
    unsigned scales[2] = {1, (unsigned)mem->mem.scale};
    mt_jump_table found = *layout;
    found.load = insn->address;
    for (int r = 0; r < 2; r++) {
        if (regs[r] == X86_REG_INVALID)
            continue;
        unsigned fam = mt_reg_family(regs[r]);
        if (!fam)
            return;
        jt_val v = eval_reg(s, load, fam, false, 0);
        if (v.known && !v.load && v.coef == 0 && !found.base_reg) {
            found.base_reg = (uint8_t)fam;
            found.base_value = (uint64_t)v.c;
        } else if (!found.index_reg) {
            found.index_reg = (uint8_t)fam;
            found.index_scale = (uint8_t)scales[r];
        } else {
            return;
        }
    }
    if (found.index_reg)
        *layout = found;
}

/* Whether register `fam` just before instruction `pos` holds a whole
 * pointer nothing was added to: every definition reaching it is an 8-byte
 * load, a copy of such a register, a constant outside the procedure, or
 * none (an argument, a call's result).  A switch computes its target
 * (`movslq (%rB,%rI,4),%rax; add %rB,%rax`); a pointer is only loaded. */
static bool plain_pointer_in(slice *s, size_t pos, unsigned fam, int depth)
{
    if (depth > MAX_EVAL_DEPTH || fam == MT_FAMILY_RSP)
        return false;
    def_set ds;
    find_defs(s, pos, fam, &ds);
    if (ds.failed)
        return false;
    for (size_t k = 0; k < ds.ndefs; k++) {
        const cs_insn *insn = cfg_redecode(s->b, ds.defs[k]);
        if (!insn || insn->id != X86_INS_MOV || insn->detail->x86.op_count != 2)
            return false;
        cs_x86_op dst = insn->detail->x86.operands[0], src = insn->detail->x86.operands[1];
        if (dst.type != X86_OP_REG || mt_reg_family(dst.reg) != fam)
            return false;
        if (src.type == X86_OP_IMM) {
            if (cfg_table_target_allowed(s->b, (uint64_t)src.imm & (dst.size == 4 ? 0xffffffffu : ~0ull)))
                return false;
        } else if (src.type == X86_OP_MEM) {
            if (dst.size != 8 || src.mem.segment != X86_REG_INVALID)
                return false;
        } else if (src.type != X86_OP_REG || dst.size != 8 || src.size != 8 ||
                   !plain_pointer_in(s, ds.defs[k], mt_reg_family(src.reg), depth + 1)) {
            return false;
        }
    }
    return true;
}

/* Whether the indirect jmp at `i` goes to a plain pointer (see above):
 * `jmp *%reg` with such a register, or `jmp *mem` (8 bytes loaded). */
static bool plain_pointer(slice *s, size_t i)
{
    const cs_insn *insn = cfg_redecode(s->b, i);
    if (!insn || insn->detail->x86.op_count != 1)
        return false;
    cs_x86_op op = insn->detail->x86.operands[0];
    if (op.type == X86_OP_MEM)
        return op.mem.segment == X86_REG_INVALID;
    return op.type == X86_OP_REG && mt_reg_family(op.reg) && plain_pointer_in(s, i, mt_reg_family(op.reg), 0);
}

bool cfg_resolve_jump_table(cfg_builder *b, size_t i, uint64_t **targets, uint32_t *ntargets,
                            mt_jump_table *layout, bool *maybe_inside, char *why, size_t whylen)
{
    slice s = {.b = b, .budget = SLICE_BUDGET};
    bool ok = false;
    jt_val v = jump_target_value(&s, i);
    if (v.known && !v.load && v.coef == 0) {
        snprintf(why, whylen, "target is the constant 0x%llx", (unsigned long long)v.c);
    } else if (!v.known || !v.load) {
        snprintf(why, whylen, "target not loaded from a table");
    } else if (v.coef != 0) {
        snprintf(why, whylen, "target depends on a register besides the table entry");
    } else if (v.load_coef == 1) {
        snprintf(why, whylen, "target is a pointer loaded from memory, not a table entry");
    } else if (v.load_coef != v.load_size) {
        snprintf(why, whylen, "index scale %lld differs from entry size %u",
                 (long long)v.load_coef, v.load_size);
    } else {
        s.budget = SLICE_BUDGET;
        uint64_t n = find_bound(&s, v.load_fam, v.load_pos, why, whylen, 0);
        if (n)
            ok = read_table(b, &v, n, targets, ntargets, layout, why, whylen);
        if (ok) {
            layout->jump = b->insns[i].addr;
            s.budget = SLICE_BUDGET;
            locate_index(&s, v.load_insn, layout);
        }
    }
    if (!ok) {
        s.budget = SLICE_BUDGET;
        *maybe_inside = !plain_pointer(&s, i);
    }
    free(s.stamp);
    free(s.preds);
    return ok;
}
