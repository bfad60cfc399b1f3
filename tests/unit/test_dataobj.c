/* tests/unit/test_dataobj.c — the heap blocks' lookup (dataobj/heap.c)
 * against a plain array of live blocks searched end to end: random
 * allocations, frees and lookups, addresses reused after a free, lookups
 * repeated so that the last-hit cache answers (and must forget a freed
 * block). */
#include <stdint.h>
#include <stdlib.h>

#include "dataobj/internal.h"
#include "unit.h"

enum { SLOTS = 512, OPS = 200000 };

typedef struct {
    uint64_t start, size;
    uint32_t id;
    int live;
} block;

/* The oracle: the live block holding addr, 0 for none. */
static uint32_t oracle_find(const block *b, uint64_t addr)
{
    for (int i = 0; i < SLOTS; i++)
        if (b[i].live && addr - b[i].start < b[i].size)
            return b[i].id;
    return 0;
}

static uint64_t next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void test_against_oracle(void)
{
    /* Slot k's blocks live in [k * 4096, k * 4096 + 4096): disjoint, as
     * live heap blocks are; a slot freed and allocated again reuses its
     * start, as an allocator does. */
    block b[SLOTS] = {{0}};
    dataobj_heap *h = dataobj_heap_new();
    uint64_t x = 88172645463325252u, last = 0;
    uint32_t id = 0;
    unsigned wrong = 0, hits = 0;
    for (int op = 0; op < OPS; op++) {
        uint64_t r = next(&x);
        int k = (int)(r % SLOTS);
        uint64_t base = 0x10000000u + (uint64_t)k * 4096;
        switch ((r >> 20) % 4) {
        case 0: /* allocate (again: the same start) */
            b[k] = (block){base, 1 + (r >> 32) % 4096, ++id, 1};
            dataobj_heap_insert(h, base, b[k].size, id);
            break;
        case 1: /* free */
            b[k].live = 0;
            dataobj_heap_remove(h, base);
            break;
        default: { /* look up: near the last address half the time (the cache) */
            uint64_t addr = (r >> 40) & 1 ? last + (r >> 50) % 64
                                          : 0x10000000u + (r >> 24) % ((uint64_t)SLOTS * 4096 + 8192);
            last = addr;
            uint32_t want = oracle_find(b, addr), got = dataobj_heap_find(h, addr);
            wrong += want != got;
            hits += want != 0;
        }
        }
    }
    CHECK(wrong == 0 && hits > 10000,
          "heap blocks: %d random operations agree with a linear search (%u wrong, %u lookups in a block)",
          OPS, wrong, hits);
    dataobj_heap_free(h);
}

static void test_reuse_after_free(void)
{
    dataobj_heap *h = dataobj_heap_new();
    dataobj_heap_insert(h, 0x1000, 0x100, 7);
    uint32_t before = dataobj_heap_find(h, 0x1010);
    dataobj_heap_remove(h, 0x1000);
    uint32_t freed = dataobj_heap_find(h, 0x1010);
    dataobj_heap_insert(h, 0x1000, 0x80, 9);
    uint32_t again = dataobj_heap_find(h, 0x1010), past = dataobj_heap_find(h, 0x1090);
    CHECK(before == 7 && freed == 0 && again == 9 && past == 0,
          "heap blocks: a freed block is gone, its address reused lands on the new one "
          "(%u, %u, %u, %u)", before, freed, again, past);
    dataobj_heap_free(h);
}

int main(void)
{
    test_reuse_after_free();
    test_against_oracle();
    return unit_finish();
}
