/* chase.c — a pointer chase whose lines are a quarter used, for the cache
 * simulator's samples (docs/SIMULATOR.md, "Samples of known behaviour").
 * Nodes of 16 bytes (next, value), one per 64-byte line, 8192 of them (512
 * KiB, more than the simulated D1 of 8 KiB and LL of 64 KiB hold):
 *
 *   link_nodes   links node k to node k+1, node k in slot k * 4099 mod 8192
 *                (4099 is odd: a permutation, with no array to hold it);
 *                writes 16 bytes of each line: one cold miss per node
 *   chase        follows the list 4 times round, reading next and value:
 *                one miss per node visited (the list is 128 times what D1
 *                holds), capacity; a line leaves D1 with 16 of its 64
 *                bytes used: spatial use 25% */
#include <stdio.h>

#define NOINLINE __attribute__((noinline))

enum { NODES = 8192, STEP = 4099, ROUNDS = 4 };

struct node {
    struct node *next;
    long value;
};

/* One node at the start of each line; the rest of the line is never touched. */
struct slot {
    _Alignas(64) struct node node;
};

struct slot pool[NODES];
volatile long sink;

static struct node *node_at(unsigned k)
{
    return &pool[(unsigned long)k * STEP % NODES].node;
}

NOINLINE static struct node *link_nodes(void)
{
    for (unsigned k = 0; k < NODES; k++) {
        node_at(k)->next = node_at((k + 1) % NODES);
        node_at(k)->value = k;
    }
    return node_at(0);
}

NOINLINE static long chase(const struct node *p)
{
    long sum = 0;
    for (unsigned n = 0; n < NODES * ROUNDS; n++) {
        sum += p->value;
        p = p->next;
    }
    return sum;
}

int main(void)
{
    sink = chase(link_nodes());
    printf("%ld\n", sink);
    return 0;
}
