/* sim/tlb.c — the TLBs: translations of the pages a reference touches
 * through set-associative LRU levels, misses tallied per level and per
 * (code, data) pair: the data TLB's up to two levels, the instruction
 * TLB's one.  The conventions are sim.h's "the data TLB". */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
    mt_sim_tlb_desc desc;
    mt_sim_tlb_stats stats;
    uint32_t sets, ways;
    uint64_t *pages;          /* sets x ways: page number + 1, 0 when empty */
    uint64_t *stamp;          /* per way, the clock of its last use (0: empty) */
    uint64_t clock;
} tlb_level;

struct sim_tlb {
    tlb_level lv[MT_SIM_MAX_TLB];
    unsigned n;
    unsigned page_shift;
};

/* A TLB of the n levels `desc` describes, translating pages of `page` bytes. */
static struct sim_tlb *tlb_of(const mt_sim_tlb_desc *desc, unsigned n, uint64_t page)
{
    struct sim_tlb *t = mt_xcalloc(1, sizeof *t);
    t->n = n;
    t->page_shift = (unsigned)__builtin_ctzll(page);
    for (unsigned i = 0; i < t->n; i++) {
        tlb_level *L = &t->lv[i];
        L->desc = desc[i];
        L->stats.desc = &L->desc;
        L->ways = L->desc.ways;
        L->sets = L->desc.entries / L->ways;
        L->pages = mt_xcalloc(L->desc.entries, sizeof *L->pages);
        L->stamp = mt_xcalloc(L->desc.entries, sizeof *L->stamp);
    }
    return t;
}

struct sim_tlb *sim_tlb_new(const mt_sim_machine *m)
{
    return m->ntlb ? tlb_of(m->tlb, m->ntlb, m->tlb_page) : NULL;
}

struct sim_tlb *sim_itlb_new(const mt_sim_machine *m)
{
    return m->itlb.present ? tlb_of(&m->itlb, 1, m->tlb_page) : NULL;
}

void sim_tlb_free(struct sim_tlb *t)
{
    if (!t)
        return;
    for (unsigned i = 0; i < t->n; i++) {
        free(t->lv[i].pages);
        free(t->lv[i].stamp);
    }
    free(t);
}

/* Looks `page` up in L: true on a hit (its way made the most recent); on
 * a miss the page takes the set's least recent way (an empty way's stamp,
 * 0, is the least of all). */
static bool tlb_lookup_fill(tlb_level *L, uint64_t page)
{
    size_t base = (size_t)(page % L->sets) * L->ways;
    size_t oldest = base;
    for (size_t w = base; w < base + L->ways; w++) {
        if (L->pages[w] == page + 1) {
            L->stamp[w] = ++L->clock;
            return true;
        }
        if (L->stamp[w] < L->stamp[oldest])
            oldest = w;
    }
    L->pages[oldest] = page + 1;
    L->stamp[oldest] = ++L->clock;
    return false;
}

/* One translation: down the levels until one holds the page; each level
 * that missed now holds it, its miss tallied in misses[level]. */
static void translate(struct sim_tlb *t, uint64_t page, uint64_t *misses)
{
    for (unsigned i = 0; i < t->n; i++) {
        tlb_level *L = &t->lv[i];
        L->stats.refs++;
        if (tlb_lookup_fill(L, page))
            return;
        L->stats.misses++;
        misses[i]++;
    }
}

void sim_tlb_access(struct sim_tlb *t, uint64_t addr, uint32_t size, uint64_t *misses)
{
    uint64_t first = addr >> t->page_shift, last = (addr + size - 1) >> t->page_shift;
    for (uint64_t page = first; page <= last; page++)
        translate(t, page, misses);
}

void sim_tlb_add_stats(struct sim_tlb *to, const struct sim_tlb *from)
{
    for (unsigned i = 0; to && from && i < to->n && i < from->n; i++) {
        to->lv[i].stats.refs += from->lv[i].stats.refs;
        to->lv[i].stats.misses += from->lv[i].stats.misses;
    }
}

unsigned mt_sim_tlb_count(const mt_sim *s) { return s->tlb ? s->tlb->n : 0; }

const mt_sim_tlb_stats *mt_sim_tlb(const mt_sim *s, unsigned i) { return &s->tlb->lv[i].stats; }

uint64_t mt_sim_tlb_page(const mt_sim *s) { return s->tlb ? 1ull << s->tlb->page_shift : 0; }

const mt_sim_tlb_stats *mt_sim_itlb(const mt_sim *s)
{
    return s->itlb && s->itlb->lv[0].stats.refs ? &s->itlb->lv[0].stats : NULL;
}
