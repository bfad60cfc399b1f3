/* sim/numa.c — nodes and home memory (sim.h, "nodes and home memory";
 * docs/SIMULATOR.md, "Nodes"): the description's settings for them (read
 * and written here for machine.c, the file's owner), their check, the home
 * node of each page by the placement policy, and the stall of references by
 * where they were served. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *const served_names[MT_SIM_NSERVED] = {
    "L1", "private", "node", "local", "remote", "remote_dirty", "three_hop"};
static const char *const placement_names[] = {"first-touch", "interleave"};

const char *mt_sim_served_name(mt_sim_served c) { return served_names[c]; }
const char *mt_sim_placement_name(mt_sim_placement p) { return placement_names[p]; }

bool sim_numa_key(const char *key)
{
    return !strcmp(key, "nodes") || !strcmp(key, "page") || !strcmp(key, "placement") ||
           !strcmp(key, "place") || !strncmp(key, "latency.", 8);
}

/* A whole number (0x... hex or decimal) with nothing after it. */
static bool parse_number(const char *s, char **end, uint64_t *v)
{
    if (*s < '0' || *s > '9')
        return false;
    errno = 0;
    unsigned long long x = strtoull(s, end, 0);
    *v = x;
    return !errno;
}

/* place = LO-HI=NODE: a range's pages homed on NODE (checked against nodes
 * when the machine is run: nodes may come after). */
static int set_place(mt_sim_machine *m, const char *value, mt_error *err)
{
    char *end;
    uint64_t lo, hi, node;
    bool ok = parse_number(value, &end, &lo) && *end == '-' &&
              parse_number(end + 1, &end, &hi) && *end == '=' &&
              parse_number(end + 1, &end, &node) && !*end && lo < hi &&
              node < MT_SIM_MAX_CPUS;
    if (!ok) {
        mt_error_set(err, "place: expected LO-HI=NODE (bytes LO below HI, a node number)");
        return -1;
    }
    if (m->nplaces == MT_SIM_MAX_PLACES) {
        mt_error_set(err, "place: more than %d ranges", MT_SIM_MAX_PLACES);
        return -1;
    }
    m->place[m->nplaces++] = (mt_sim_place){.lo = lo, .hi = hi, .node = (unsigned)node};
    return 0;
}

static int set_latency(mt_sim_machine *m, const char *cls, const char *value, mt_error *err)
{
    for (int k = 0; k < MT_SIM_NSERVED; k++) {
        if (strcmp(cls, served_names[k]))
            continue;
        char *end;
        errno = 0;
        double v = strtod(value, &end);
        if (errno || end == value || *end || !(v >= 0 && v < 1e6)) {
            mt_error_set(err, "latency.%s: expected cycles, a number from 0 below 10^6", cls);
            return -1;
        }
        m->latency[k] = v;
        return 0;
    }
    mt_error_set(err, "latency.%s: expected latency.L1, .private, .node, .local, .remote, "
                      ".remote_dirty or .three_hop", cls);
    return -1;
}

int sim_numa_set(mt_sim_machine *m, const char *key, const char *value, mt_error *err)
{
    if (!strcmp(key, "place"))
        return set_place(m, value, err);
    if (!strncmp(key, "latency.", 8))
        return set_latency(m, key + 8, value, err);
    if (!strcmp(key, "placement")) {
        for (size_t p = 0; p < MT_ARRAY_LEN(placement_names); p++)
            if (!strcmp(value, placement_names[p])) {
                m->placement = (mt_sim_placement)p;
                return 0;
            }
        mt_error_set(err, "placement: expected first-touch or interleave");
        return -1;
    }
    char *end = NULL;
    uint64_t v = 0;
    bool number = parse_number(value, &end, &v) && !*end;
    if (!strcmp(key, "nodes")) {
        if (!number || !v || v > MT_SIM_MAX_CPUS) {
            mt_error_set(err, "nodes: expected a whole number from 1 to %d", MT_SIM_MAX_CPUS);
            return -1;
        }
        m->nodes = (unsigned)v;
        return 0;
    }
    uint64_t unit = !end ? 1 : *end == 'K' ? 1u << 10 : *end == 'M' ? 1u << 20 : 1;
    if (unit > 1 && v && !end[1])
        number = true, v *= unit;
    if (!number || !v || (v & (v - 1)) || v > (1ull << 30)) {
        mt_error_set(err, "page: expected a power of two of bytes up to 1G (may end in K or M)");
        return -1;
    }
    m->page = v;
    return 0;
}

static bool numa_default(const mt_sim_machine *m)
{
    for (int k = 0; k < MT_SIM_NSERVED; k++)
        if (m->latency[k] != 0)
            return false;
    return m->nodes <= 1 && m->page == 4096 && m->placement == MT_SIM_FIRST_TOUCH &&
           !m->nplaces;
}

void sim_numa_write(FILE *fp, const mt_sim_machine *m)
{
    if (numa_default(m)) /* descriptions without nodes stay as they were before them */
        return;
    fprintf(fp, "nodes = %u\npage = %" PRIu64 "\nplacement = %s\n", m->nodes, m->page,
            placement_names[m->placement]);
    for (unsigned i = 0; i < m->nplaces; i++)
        fprintf(fp, "place = 0x%" PRIx64 "-0x%" PRIx64 "=%u\n", m->place[i].lo, m->place[i].hi,
                m->place[i].node);
    for (int k = 0; k < MT_SIM_NSERVED; k++)
        if (m->latency[k] != 0)
            fprintf(fp, "latency.%s = %g\n", served_names[k], m->latency[k]);
}

int sim_numa_check(const mt_sim_machine *m, mt_error *err)
{
    if (m->nodes > 1 && m->nodes > m->cpus) {
        mt_error_set(err, "nodes = %u: more nodes than cpus = %u", m->nodes, m->cpus);
        return -1;
    }
    if (m->page < m->d1.line) {
        mt_error_set(err, "page: %" PRIu64 " bytes, less than D1's line", m->page);
        return -1;
    }
    for (unsigned i = 0; i < m->nplaces; i++)
        if (m->place[i].node >= (m->nodes ? m->nodes : 1)) {
            mt_error_set(err, "place: node %u, of nodes = %u", m->place[i].node,
                         m->nodes ? m->nodes : 1);
            return -1;
        }
    return 0;
}

/* ---- homes ---- */

void sim_homes_init(sim_homes *h, const mt_sim_machine *m)
{
    memset(h, 0, sizeof *h);
    h->m = m;
    h->page_shift = (unsigned)__builtin_ctzll(m->page);
}

static unsigned node_count(const sim_homes *h) { return h->m->nodes ? h->m->nodes : 1; }

static bool placed(const mt_sim_machine *m, uint64_t page, unsigned shift, unsigned *node)
{
    uint64_t first = page << shift, last = first + (((uint64_t)1 << shift) - 1);
    for (unsigned i = m->nplaces; i-- > 0;) /* the last range given wins */
        if (m->place[i].lo <= last && m->place[i].hi > first) {
            *node = m->place[i].node;
            return true;
        }
    return false;
}

/* The n-th node (from 0) of a mask that has more than n. */
static unsigned nth_node(uint64_t nodes, uint64_t n)
{
    for (; n; n--)
        nodes &= nodes - 1;
    return (unsigned)__builtin_ctzll(nodes);
}

/* The home a policy gives a page first touched from node `toucher`
 * (Linux's choices, mm/mempolicy.c): bind and preferred-many the toucher's
 * node when the mask has it, else its first node (all at one distance
 * here); preferred its node; interleave the n-th node of the mask, n = the
 * page number (a range's: its offset in an anonymous mapping) or the
 * pages the thread's interleave placed before (*interleaved, counted on);
 * local the toucher's; false for default: the next rule decides. */
static bool policy_home(const sim_policy *p, uint64_t page, unsigned toucher,
                        uint64_t *interleaved, unsigned *home)
{
    uint64_t n = (uint64_t)__builtin_popcountll(p->nodes);
    switch (p->mode) {
    case MT_SIM_MPOL_BIND:
    case MT_SIM_MPOL_PREFERRED_MANY:
        *home = p->nodes >> toucher & 1 ? toucher : nth_node(p->nodes, 0);
        return true;
    case MT_SIM_MPOL_PREFERRED:
        *home = p->nodes ? nth_node(p->nodes, 0) : toucher;
        return true;
    case MT_SIM_MPOL_INTERLEAVE:
    case MT_SIM_MPOL_WEIGHTED_INTERLEAVE: /* the weights are this machine's sysfs: equal */
        *home = nth_node(p->nodes, (interleaved ? (*interleaved)++ : page) % n);
        return true;
    case MT_SIM_MPOL_LOCAL:
        *home = toucher;
        return true;
    default:
        return false;
    }
}

/* A policy as the kernel takes it (mode flags dropped, the nodes the
 * simulated ones), false when it would refuse it. */
static bool policy_of(const sim_homes *h, uint32_t mode, uint64_t nodes, sim_policy *p)
{
    mode &= ~MT_SIM_MPOL_MODE_FLAGS;
    uint64_t ours = nodes & ((node_count(h) < 64 ? 1ull << node_count(h) : 0) - 1);
    if (mode >= MT_SIM_NMPOL || (nodes && !ours))
        return false;
    bool needs_nodes = mode == MT_SIM_MPOL_BIND || mode == MT_SIM_MPOL_INTERLEAVE ||
                       mode == MT_SIM_MPOL_PREFERRED_MANY ||
                       mode == MT_SIM_MPOL_WEIGHTED_INTERLEAVE;
    if (needs_nodes && !ours)
        return false;
    *p = (sim_policy){.mode = mode, .nodes = ours};
    return true;
}

/* The policy of the last mbind range over page `page`, false for none. */
static const sim_policy *bound_policy(const sim_homes *h, uint64_t page)
{
    uint64_t first = page << h->page_shift, last = first + (((uint64_t)1 << h->page_shift) - 1);
    for (size_t i = h->nranges; i-- > 0;)
        if (h->ranges[i].lo <= last && h->ranges[i].hi > first)
            return &h->ranges[i].policy;
    return NULL;
}

static unsigned first_home(sim_homes *h, uint64_t page, unsigned toucher, uint32_t thread)
{
    unsigned home;
    if (placed(h->m, page, h->page_shift, &home))
        return home;
    const sim_policy *bound = bound_policy(h, page);
    if (bound && policy_home(bound, page, toucher, NULL, &home))
        return home;
    sim_thread_policy *t = thread < h->nthreads ? &h->threads[thread] : NULL;
    if (t && policy_home(&t->policy, page, toucher, &t->interleaved, &home))
        return home;
    return h->m->placement == MT_SIM_INTERLEAVE ? (unsigned)(page % node_count(h)) : toucher;
}

void sim_homes_home(sim_homes *h, uint64_t page, unsigned node)
{
    if (sim_map_get(&h->pages, page) != SIM_NONE)
        return;
    sim_map_put(&h->pages, page, (uint32_t)h->nnode);
    MT_PUSH(h->node, h->nnode, h->cap_node, (uint8_t)node);
}

unsigned sim_home_of(sim_homes *h, uint64_t addr, unsigned toucher, uint32_t thread)
{
    uint64_t page = addr >> h->page_shift;
    uint32_t i = sim_map_get(&h->pages, page);
    if (i != SIM_NONE)
        return h->node[i];
    unsigned home = first_home(h, page, toucher, thread);
    sim_homes_home(h, page, home);
    return home;
}

/* Thread `thread`'s policy from now on (its interleave from the first node). */
static void thread_policy(sim_homes *h, uint32_t thread, sim_policy p)
{
    if (thread >= h->nthreads) {
        size_t n = (size_t)thread + 1;
        h->threads = mt_xrealloc(h->threads, n * sizeof *h->threads);
        memset(h->threads + h->nthreads, 0, (n - h->nthreads) * sizeof *h->threads);
        h->nthreads = n;
    }
    h->threads[thread] = (sim_thread_policy){.policy = p};
}

bool sim_homes_set_policy(sim_homes *h, uint32_t thread, uint32_t mode, uint64_t nodes)
{
    sim_policy p;
    if (!policy_of(h, mode, nodes, &p))
        return false;
    thread_policy(h, thread, p);
    return true;
}

void sim_homes_inherit(sim_homes *h, uint32_t creator, uint32_t thread)
{
    sim_policy p = creator < h->nthreads ? h->threads[creator].policy : (sim_policy){0};
    thread_policy(h, thread, p);
}

/* A homed page of an mbind range with MPOL_MF_MOVE: off the policy's
 * nodes (the kernel's test), to where the policy puts it (default and
 * local: the caller's node, every page). */
static void move_to_policy(sim_homes *h, uint64_t page, uint32_t index, const sim_policy *p,
                           unsigned caller)
{
    unsigned home = h->node[index];
    if (p->nodes >> home & 1)
        return;
    if (!policy_home(p, page, caller, NULL, &home) || p->mode == MT_SIM_MPOL_LOCAL)
        home = caller;
    h->node[index] = (uint8_t)home;
}

static void move_range(sim_homes *h, uint64_t lo, uint64_t hi, const sim_policy *p,
                       unsigned caller)
{
    uint64_t first = lo >> h->page_shift, last = (hi - 1) >> h->page_shift;
    if (last - first < h->nnode) { /* the range's pages, or the homed ones if fewer */
        for (uint64_t page = first; page <= last; page++) {
            uint32_t i = sim_map_get(&h->pages, page);
            if (i != SIM_NONE)
                move_to_policy(h, page, i, p, caller);
        }
        return;
    }
    for (size_t k = 0; k < h->pages.cap; k++) {
        const sim_map_slot *slot = &h->pages.slots[k];
        if (slot->key && slot->key - 1 >= first && slot->key - 1 <= last)
            move_to_policy(h, slot->key - 1, slot->val, p, caller);
    }
}

bool sim_homes_bind(sim_homes *h, uint64_t start, uint64_t len, uint32_t mode, uint64_t nodes,
                    uint32_t flags, unsigned caller)
{
    sim_policy p;
    if (!len || len > UINT64_MAX - start || !policy_of(h, mode, nodes, &p))
        return false;
    sim_bound_range r = {.lo = start, .hi = start + len, .policy = p};
    MT_PUSH(h->ranges, h->nranges, h->cap_ranges, r);
    if (flags & (MT_SIM_MPOL_MF_MOVE | MT_SIM_MPOL_MF_MOVE_ALL))
        move_range(h, r.lo, r.hi, &p, caller);
    return true;
}

bool sim_homes_move(sim_homes *h, uint64_t addr, uint32_t node)
{
    uint32_t i = sim_map_get(&h->pages, addr >> h->page_shift);
    if (node >= node_count(h) || i == SIM_NONE) /* the kernel: -ENODEV, -ENOENT */
        return false;
    h->node[i] = (uint8_t)node;
    return true;
}

void sim_homes_free(sim_homes *h)
{
    sim_map_free(&h->pages);
    free(h->node);
    free(h->threads);
    free(h->ranges);
}

/* ---- the stall ---- */

double mt_sim_served_stall(const mt_sim_machine *m, const uint64_t served[MT_SIM_NSERVED])
{
    if (!m || m->latency[MT_SIM_AT_LOCAL] <= 0)
        return -1;
    double cycles = 0;
    for (int k = MT_SIM_AT_PRIVATE; k < MT_SIM_NSERVED; k++) {
        double over = m->latency[k] - m->latency[MT_SIM_AT_L1];
        cycles += (double)served[k] * (over > 0 ? over : 0);
    }
    return cycles;
}
