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
        if (m->keys[i] == key + 1)
            return m->vals[i];
        if (!m->keys[i])
            return SIM_NONE;
    }
}

static void map_insert(uint64_t *keys, uint32_t *vals, size_t cap, uint64_t stored,
                       uint32_t val)
{
    size_t i = slot_of(stored - 1, cap);
    while (keys[i])
        i = (i + 1) & (cap - 1);
    keys[i] = stored;
    vals[i] = val;
}

void sim_map_put(sim_map *m, uint64_t key, uint32_t val)
{
    if (2 * (m->n + 1) > m->cap) { /* at most half full: probes stay short */
        size_t cap = m->cap ? 2 * m->cap : 64;
        uint64_t *keys = mt_xcalloc(cap, sizeof *keys);
        uint32_t *vals = mt_xmalloc(cap * sizeof *vals);
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i])
                map_insert(keys, vals, cap, m->keys[i], m->vals[i]);
        free(m->keys);
        free(m->vals);
        m->keys = keys;
        m->vals = vals;
        m->cap = cap;
    }
    map_insert(m->keys, m->vals, m->cap, key + 1, val);
    m->n++;
}

void sim_map_free(sim_map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static void unlink_node(sim_shadow *sh, uint32_t n)
{
    if (sh->prev[n] != SIM_NONE)
        sh->next[sh->prev[n]] = sh->next[n];
    else
        sh->head = sh->next[n];
    if (sh->next[n] != SIM_NONE)
        sh->prev[sh->next[n]] = sh->prev[n];
    else
        sh->tail = sh->prev[n];
}

static void push_front(sim_shadow *sh, uint32_t n)
{
    sh->prev[n] = SIM_NONE;
    sh->next[n] = sh->head;
    if (sh->head != SIM_NONE)
        sh->prev[sh->head] = n;
    else
        sh->tail = n;
    sh->head = n;
}

static uint32_t new_node(sim_shadow *sh, uint64_t line)
{
    if (sh->nnodes == sh->cap) {
        size_t cap = sh->cap;
        sh->prev = mt_xgrow(sh->prev, &cap, sh->nnodes + 1, sizeof *sh->prev);
        cap = sh->cap;
        sh->next = mt_xgrow(sh->next, &cap, sh->nnodes + 1, sizeof *sh->next);
        cap = sh->cap;
        sh->resident = mt_xgrow(sh->resident, &cap, sh->nnodes + 1, sizeof *sh->resident);
        sh->cap = cap;
    }
    uint32_t n = (uint32_t)sh->nnodes++;
    sh->resident[n] = false;
    sim_map_put(&sh->index, line, n);
    return n;
}

int sim_shadow_ref(sim_shadow *sh, uint64_t line)
{
    uint32_t n = sim_map_get(&sh->index, line);
    int cause = -1;
    if (n == SIM_NONE) {
        n = new_node(sh, line);
        cause = MT_SIM_COLD;
    } else if (!sh->resident[n])
        cause = MT_SIM_CAPACITY;
    else if (sh->head == n)
        return -1;
    else
        unlink_node(sh, n);
    if (cause >= 0) {
        sh->resident[n] = true;
        if (sh->nresident == sh->capacity) {
            uint32_t lru = sh->tail;
            unlink_node(sh, lru);
            sh->resident[lru] = false;
        } else
            sh->nresident++;
    }
    push_front(sh, n);
    return cause;
}

void sim_shadow_flush(sim_shadow *sh)
{
    for (size_t n = 0; n < sh->nnodes; n++)
        sh->resident[n] = false;
    sh->head = sh->tail = SIM_NONE;
    sh->nresident = 0;
}

void sim_shadow_free(sim_shadow *sh)
{
    sim_map_free(&sh->index);
    free(sh->prev);
    free(sh->next);
    free(sh->resident);
    memset(sh, 0, sizeof *sh);
}
