/* costmodel/chase.c — does a loop chase pointers?  For the stall estimate
 * (docs/SIMULATOR.md, "The stall estimate"): the misses of a loop whose
 * loads take their addresses from what an earlier iteration's load
 * brought wait for each other (a list walk: one miss at a time); those of
 * a loop whose addresses come from arithmetic, or from loads that do not
 * depend on themselves (a gather a[idx[i]]), are independent, and the core
 * keeps as many in flight as it has fill buffers.
 *
 * Notes:
 * - A taint analysis over one iteration's instructions in layout order,
 *   repeated CHASE_PASSES times (each pass an iteration, the state carried
 *   across): every register family holds the set of loads whose values
 *   reach it (one bit a load, the k-th load bit k % 64).  A load's value
 *   carries its address's set and itself; any other instruction's result
 *   the union of its sources' (a zero idiom or a constant, none).  A write
 *   replaces the set (the loop's conditional blocks are taken as run in
 *   order, every iteration).
 * - Memory passes a set only through a stack slot (rsp- or rbp-based, no
 *   index, the same displacement): code built without optimization keeps
 *   its list pointer there.  Other stores pass nothing (a chase through a
 *   heap cell is taken as none).
 * - The loop chases when a load's address carries the load itself: its
 *   address came, through registers and stack slots, from what it loaded
 *   in an earlier iteration (or through another load that did). */
#include <string.h>

#include "internal.h"

#define CHASE_PASSES 3
#define CHASE_SLOTS 16 /* stack slots remembered */
#define FAMILIES (CM_REG_FLAGS + 1)

typedef struct {
    uint64_t reg[FAMILIES];
    struct {
        uint8_t base;
        int64_t disp;
        uint64_t loads;
    } slot[CHASE_SLOTS];
    unsigned nslots, next_slot;
} taint_state;

static bool stack_slot_address(const cm_address *a)
{
    return (a->base == CM_REG_RSP || a->base == CM_REG_GPR0 + 5) && a->index == CM_REG_NONE;
}

static uint64_t *find_slot(taint_state *s, const cm_address *a, bool add)
{
    for (unsigned k = 0; k < s->nslots; k++)
        if (s->slot[k].base == a->base && s->slot[k].disp == a->disp)
            return &s->slot[k].loads;
    if (!add)
        return NULL;
    unsigned k = s->nslots < CHASE_SLOTS ? s->nslots++ : s->next_slot++ % CHASE_SLOTS;
    s->slot[k].base = a->base;
    s->slot[k].disp = a->disp;
    s->slot[k].loads = 0;
    return &s->slot[k].loads;
}

static uint64_t family(const taint_state *s, uint8_t f)
{
    return f < FAMILIES ? s->reg[f] : 0;
}

/* One instruction (the `load`-th load of the iteration when it loads);
 * true when it is a load whose address carries itself. */
static bool taint_step(taint_state *s, const cm_insn *in, unsigned load)
{
    uint64_t srcs = 0;
    if (!in->zero_idiom && !in->const_move)
        for (unsigned i = 0; i < in->nsrcs; i++)
            srcs |= family(s, in->srcs[i]);
    uint64_t result = srcs;
    bool chased = false;
    if (in->load) {
        uint64_t self = 1ull << (load % 64);
        uint64_t address = family(s, in->mem.base) | family(s, in->mem.index);
        chased = (address & self) != 0;
        result |= address | self;
        if (stack_slot_address(&in->mem)) {
            const uint64_t *slot = find_slot(s, &in->mem, false);
            result |= slot ? *slot : 0;
        }
    }
    if (in->store && stack_slot_address(&in->mem) && !in->stack_op)
        *find_slot(s, &in->mem, true) = result; /* an add to memory stores what it loaded too */
    for (unsigned i = 0; i < in->ndsts; i++)
        if (in->dsts[i] < FAMILIES && in->dsts[i] != CM_REG_RSP)
            s->reg[in->dsts[i]] = result;
    return chased;
}

bool cm_chases(const cm_insn *ins, size_t n)
{
    taint_state s;
    memset(&s, 0, sizeof s);
    for (int pass = 0; pass < CHASE_PASSES; pass++) {
        unsigned load = 0;
        for (size_t i = 0; i < n; i++) {
            if (taint_step(&s, &ins[i], load))
                return true;
            load += ins[i].load;
        }
    }
    return false;
}
