/* dataobj/heap.c — live heap blocks by address: a treap keyed by start
 * (random priorities keep it balanced whatever order blocks come in),
 * with the block of the last lookup kept aside, since consecutive
 * references mostly fall in one block. */
#include <stdlib.h>

#include "internal.h"

typedef struct node {
    uint64_t start, end;       /* [start, end) */
    uint32_t id, priority;
    struct node *left, *right;
} node;

struct dataobj_heap {
    node *root;
    uint64_t last_start, last_end; /* the last block found; both 0: none */
    uint32_t last_id;
    uint64_t seed;
};

dataobj_heap *dataobj_heap_new(void)
{
    dataobj_heap *h = mt_xcalloc(1, sizeof *h);
    h->seed = 0x9e3779b97f4a7c15u;
    return h;
}

static void free_tree(node *n)
{
    while (n) {
        free_tree(n->left);
        node *right = n->right;
        free(n);
        n = right;
    }
}

void dataobj_heap_free(dataobj_heap *h)
{
    if (!h)
        return;
    free_tree(h->root);
    free(h);
}

static uint32_t next_priority(dataobj_heap *h)
{
    h->seed ^= h->seed >> 12; /* xorshift64* */
    h->seed ^= h->seed << 25;
    h->seed ^= h->seed >> 27;
    return (uint32_t)((h->seed * 2685821657736338717u) >> 32);
}

/* Splits t into the nodes starting below `key` and the rest. */
static void split(node *t, uint64_t key, node **below, node **rest)
{
    if (!t) {
        *below = *rest = NULL;
    } else if (t->start < key) {
        split(t->right, key, &t->right, rest);
        *below = t;
    } else {
        split(t->left, key, below, &t->left);
        *rest = t;
    }
}

/* Joins a and b, every start of a below every start of b. */
static node *join(node *a, node *b)
{
    if (!a || !b)
        return a ? a : b;
    if (a->priority > b->priority) {
        a->right = join(a->right, b);
        return a;
    }
    b->left = join(a, b->left);
    return b;
}

/* Takes the node starting at `start` out of t, if any: *out gets it. */
static node *take_out(node *t, uint64_t start, node **out)
{
    node *below, *rest, *at, *above;
    split(t, start, &below, &rest);
    split(rest, start + 1, &at, &above);
    *out = at; /* starts are unique: at most one node */
    return join(below, above);
}

void dataobj_heap_insert(dataobj_heap *h, uint64_t start, uint64_t size, uint32_t id)
{
    node *old = NULL;
    h->root = take_out(h->root, start, &old);
    free(old);
    node *n = mt_xcalloc(1, sizeof *n);
    n->start = start;
    n->end = start + size > start ? start + size : UINT64_MAX;
    n->id = id;
    n->priority = next_priority(h);
    node *below, *above;
    split(h->root, start, &below, &above);
    h->root = join(join(below, n), above);
    h->last_start = h->last_end = 0;
}

void dataobj_heap_remove(dataobj_heap *h, uint64_t start)
{
    node *old = NULL;
    h->root = take_out(h->root, start, &old);
    free(old);
    h->last_start = h->last_end = 0;
}

uint32_t dataobj_heap_find(dataobj_heap *h, uint64_t addr)
{
    if (addr - h->last_start < h->last_end - h->last_start)
        return h->last_id;
    const node *best = NULL; /* the last block starting at or below addr */
    for (const node *n = h->root; n;)
        if (n->start <= addr) {
            best = n;
            n = n->right;
        } else {
            n = n->left;
        }
    if (!best || addr >= best->end)
        return 0;
    h->last_start = best->start;
    h->last_end = best->end;
    h->last_id = best->id;
    return best->id;
}
