/* sim/shadow.c — the map from 64-bit keys to indices, and Hill's 3C oracle
 * built on it: a fully associative LRU cache with a memory of every line it
 * ever saw. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Fibonacci hashing: line numbers of a stride fill the table evenly. */
static size_t slot_of(uint64_t key, size_t cap)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

uint32_t sim_map_get(const sim_map *m, uint64_t key)
{
    if (!m->cap)
        return SIM_NONE;
    for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->slots[i].key == key + 1)
            return m->slots[i].val;
        if (!m->slots[i].key)
            return SIM_NONE;
    }
}

static void map_insert(sim_map_slot *slots, size_t cap, sim_map_slot slot)
{
    size_t i = slot_of(slot.key - 1, cap);
    while (slots[i].key)
        i = (i + 1) & (cap - 1);
    slots[i] = slot;
}

void sim_map_put(sim_map *m, uint64_t key, uint32_t val)
{
    if (2 * (m->n + 1) > m->cap) { /* at most half full: probes stay short */
        size_t cap = m->cap ? 2 * m->cap : 64;
        sim_map_slot *slots = mt_xcalloc(cap, sizeof *slots);
        for (size_t i = 0; i < m->cap; i++)
            if (m->slots[i].key)
                map_insert(slots, cap, m->slots[i]);
        free(m->slots);
        m->slots = slots;
        m->cap = cap;
    }
    map_insert(m->slots, m->cap, (sim_map_slot){.key = key + 1, .val = val});
    m->n++;
}

void sim_map_free(sim_map *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static void unlink_node(sim_shadow *sh, uint32_t n)
{
    sim_shadow_node *x = &sh->nodes[n];
    if (x->prev != SIM_NONE)
        sh->nodes[x->prev].next = x->next;
    else
        sh->head = x->next;
    if (x->next != SIM_NONE)
        sh->nodes[x->next].prev = x->prev;
    else
        sh->tail = x->prev;
}

static void push_front(sim_shadow *sh, uint32_t n)
{
    sh->nodes[n].prev = SIM_NONE;
    sh->nodes[n].next = sh->head;
    if (sh->head != SIM_NONE)
        sh->nodes[sh->head].prev = n;
    else
        sh->tail = n;
    sh->head = n;
}

static uint32_t new_node(sim_shadow *sh, uint64_t line)
{
    if (sh->nnodes == sh->cap)
        sh->nodes = mt_xgrow(sh->nodes, &sh->cap, sh->nnodes + 1, sizeof *sh->nodes);
    uint32_t n = (uint32_t)sh->nnodes++;
    sh->nodes[n].resident = false;
    sim_map_put(&sh->index, line, n);
    return n;
}

/* A line entering the fully associative cache: the least recent one leaves
 * when it is full. */
static void make_resident(sim_shadow *sh, uint32_t n)
{
    sh->nodes[n].resident = true;
    if (sh->nresident == sh->capacity) {
        uint32_t lru = sh->tail;
        unlink_node(sh, lru);
        sh->nodes[lru].resident = false;
    } else
        sh->nresident++;
}

int sim_shadow_ref(sim_shadow *sh, uint64_t line, uint32_t *node)
{
    uint32_t n = sim_map_get(&sh->index, line);
    if (n != SIM_NONE) {
        *node = n;
        return sim_shadow_ref_node(sh, n);
    }
    *node = n = new_node(sh, line);
    make_resident(sh, n);
    push_front(sh, n);
    return MT_SIM_COLD;
}

int sim_shadow_ref_node(sim_shadow *sh, uint32_t n)
{
    if (sh->head == n)
        return -1;
    int cause = -1;
    if (!sh->nodes[n].resident) {
        cause = MT_SIM_CAPACITY;
        make_resident(sh, n);
    } else
        unlink_node(sh, n);
    push_front(sh, n);
    return cause;
}

void sim_shadow_flush(sim_shadow *sh)
{
    for (size_t n = 0; n < sh->nnodes; n++)
        sh->nodes[n].resident = false;
    sh->head = sh->tail = SIM_NONE;
    sh->nresident = 0;
}

void sim_shadow_free(sim_shadow *sh)
{
    sim_map_free(&sh->index);
    free(sh->nodes);
    memset(sh, 0, sizeof *sh);
}
