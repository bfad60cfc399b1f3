/* ui/history_record.c — what a measuring command (count, time, run, sim)
 * hands to the history: per-object figures, the run's
 * circumstances (command line, directory, machine, version), stored in one
 * transaction.  Failing to store is reported in one line; the caller decides
 * the exit status. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "../store/store.h"
#include "ui.h"

#ifndef MTOOL_VERSION
#define MTOOL_VERSION "unknown"
#endif

struct mt_history {
    const mt_program *prog;
    mt_store_build build;
    mt_store_figures *figures;
    size_t nfigures, cap;
    const mt_store_sim *sim;  /* a simulated run's figures, or NULL */
    mt_store_rank *ranks;     /* an MPI job's ranks (hosts copied) */
    size_t nranks, ranks_cap;
    uint32_t last_site;       /* the site mt_history_add* last added, MT_NONE: none */
    mt_store_rank_figures *rank_figures;
    size_t nrank_figures, rank_figures_cap;
    mt_history **libs;        /* the shared libraries' (mt_history_library) */
    size_t nlibs;
    mt_store_sim_figures *sim_figures; /* a traced library's code objects (a simulated run) */
    size_t nsim_figures;
    bool ok;
    mt_error err;
};

/* The build of `bin` (a shared library's when `library` is not NULL). */
static mt_history *history_of(const mt_program *prog, const char *bin, const char *library)
{
    mt_history *h = mt_xcalloc(1, sizeof *h);
    h->prog = prog;
    h->last_site = MT_NONE;
    char abs_path[PATH_MAX];
    uint8_t sha[32];
    if (!realpath(bin, abs_path))
        mt_error_set(&h->err, "%s: %s", bin, strerror(errno));
    else if (mt_file_sha256(bin, sha, &h->err) == 0) {
        mt_store_build_from_library(prog, library, abs_path, sha, &h->build);
        h->ok = true;
    }
    return h;
}

mt_history *mt_history_begin(const mt_program *prog, const char *bin)
{
    return history_of(prog, bin, NULL);
}

mt_history *mt_history_library(mt_history *h, const mt_program *prog, const char *name,
                               const char *path)
{
    mt_history *lib = history_of(prog, path, name);
    if (!lib->ok && h->ok) { /* the run is not stored without it */
        h->err = lib->err;
        h->ok = false;
    }
    h->libs = mt_xrealloc(h->libs, (h->nlibs + 1) * sizeof *h->libs);
    h->libs[h->nlibs++] = lib;
    return lib;
}

/* Frees h's build, figures and ranks, its libraries' too. */
static void history_free(mt_history *h)
{
    for (size_t i = 0; i < h->nlibs; i++)
        history_free(h->libs[i]);
    free(h->libs);
    mt_store_build_free(&h->build);
    free(h->figures);
    for (size_t i = 0; i < h->nranks; i++)
        free((char *)h->ranks[i].host);
    free(h->ranks);
    free(h->rank_figures);
    free(h->sim_figures);
    free(h);
}

/* The libraries' figures as the store takes them (pointing into h's). */
static mt_store_library_figures *library_figures(const mt_history *h)
{
    mt_store_library_figures *out = mt_xcalloc(h->nlibs + 1, sizeof *out);
    for (size_t i = 0; i < h->nlibs; i++)
        out[i] = (mt_store_library_figures){.build = &h->libs[i]->build,
                                            .figures = h->libs[i]->figures,
                                            .nfigures = h->libs[i]->nfigures,
                                            .sim_figures = h->libs[i]->sim_figures,
                                            .nsim_figures = h->libs[i]->nsim_figures,
                                            .rank_figures = h->libs[i]->rank_figures,
                                            .nrank_figures = h->libs[i]->nrank_figures};
    return out;
}

void mt_history_add(mt_history *h, uint32_t proc, uint32_t loop, uint64_t entries,
                    uint64_t iterations, uint64_t instructions, uint64_t memory_ops,
                    double measured, double predicted)
{
    if (!h->ok)
        return;
    uint32_t site = h->last_site = mt_store_site_of(&h->build, proc, loop);
    if (site == MT_NONE)
        return; /* PLT stubs are never objects */
    mt_store_figures f = {.site = site, .entries = entries,
                          .iterations = loop == MT_NONE ? MT_STORE_NO_COUNT : iterations,
                          .instructions = instructions, .memory_ops = memory_ops,
                          .measured_cycles = measured, .predicted_cycles = predicted,
                          .overhead_cycles = measured - predicted};
    MT_PUSH(h->figures, h->nfigures, h->cap, f);
}

void mt_history_add_region(mt_history *h, uint32_t proc, uint32_t first, uint32_t end, uint32_t k,
                           uint64_t entries, uint64_t instructions, uint64_t memory_ops,
                           double measured, double predicted)
{
    if (!h->ok)
        return;
    size_t before = h->build.nsites;
    uint32_t site = h->last_site = mt_store_build_add_region(&h->build, h->prog, proc, first, end, k);
    if (site == MT_NONE)
        return;
    if (h->build.nsites > before) { /* sites after it moved up */
        for (size_t i = 0; i < h->nfigures; i++)
            h->figures[i].site += h->figures[i].site >= site;
        for (size_t i = 0; i < h->nrank_figures; i++)
            h->rank_figures[i].f.site += h->rank_figures[i].f.site >= site;
    }
    mt_store_figures f = {.site = site, .entries = entries, .iterations = MT_STORE_NO_COUNT,
                          .instructions = instructions, .memory_ops = memory_ops,
                          .measured_cycles = measured, .predicted_cycles = predicted,
                          .overhead_cycles = measured - predicted};
    MT_PUSH(h->figures, h->nfigures, h->cap, f);
}

void mt_history_add_rank(mt_history *h, int rank, const char *host)
{
    mt_store_rank r = {rank, host ? mt_xstrdup(host) : NULL};
    MT_PUSH(h->ranks, h->nranks, h->ranks_cap, r);
}

void mt_history_add_rank_figures(mt_history *h, int rank, uint64_t entries, uint64_t memory_ops,
                                 double measured, double predicted)
{
    if (!h->ok || h->last_site == MT_NONE)
        return;
    mt_store_rank_figures rf = {rank, {.site = h->last_site,
                                       .entries = entries, .iterations = MT_STORE_NO_COUNT,
                                       .memory_ops = memory_ops, .measured_cycles = measured,
                                       .predicted_cycles = predicted,
                                       .overhead_cycles = measured - predicted}};
    MT_PUSH(h->rank_figures, h->nrank_figures, h->rank_figures_cap, rf);
}

/* "host, CPU model, N cpus, Linux release": enough to tell machines apart
 * until pass 2 brings a measured machine profile. */
static char *machine_profile(void)
{
    char model[512] = "unknown CPU", line[512];
    FILE *fp = fopen("/proc/cpuinfo", "r");
    while (fp && fgets(line, sizeof line, fp))
        if (strncmp(line, "model name", 10) == 0) {
            const char *v = strchr(line, ':');
            snprintf(model, sizeof model, "%s", v ? v + 1 + strspn(v + 1, " \t") : line);
            model[strcspn(model, "\n")] = '\0';
            break;
        }
    if (fp)
        fclose(fp);
    struct utsname u;
    if (uname(&u) != 0)
        memset(&u, 0, sizeof u);
    return mt_xasprintf("%s, %s, %ld cpus, %s %s", u.nodename, model, sysconf(_SC_NPROCESSORS_ONLN),
                        u.sysname, u.release);
}

int mt_history_finish(mt_history *h, const mt_history_run *r)
{
    int rc = -1;
    char *path = mt_store_default_path(), *machine = machine_profile(), cwd[PATH_MAX];
    char **argv = mt_xcalloc((size_t)r->argc + 2, sizeof *argv);
    argv[0] = "mtool";
    memcpy(argv + 1, r->argv, (size_t)r->argc * sizeof *argv);
    int nargs = 0;
    while (r->prog_argv[nargs + 1])
        nargs++;
    mt_store_run run = {.tool = r->tool, .finished = (double)time(NULL), .argc = r->argc + 1,
                        .argv = argv, .nargs = nargs, .args = r->prog_argv + 1,
                        .cwd = getcwd(cwd, sizeof cwd) ? cwd : "?", .machine = machine,
                        .version = MTOOL_VERSION, .ran = r->ran, .exit_status = r->exit_status,
                        .user_s = r->user_s, .sys_s = r->sys_s, .wall_s = r->wall_s,
                        .base_user_s = r->base_user_s, .base_sys_s = r->base_sys_s,
                        .base_wall_s = r->base_wall_s, .figures = h->figures,
                        .nfigures = h->nfigures, .sim = h->sim, .ranks = h->ranks,
                        .nranks = h->nranks, .rank_figures = h->rank_figures,
                        .nrank_figures = h->nrank_figures};
    /* A run directory that cannot be stamped is not recorded: `mtool report
     * RUN` could not tell its run from a later one there. */
    char stamp[65];
    mt_error stamp_err;
    bool stamped = r->rundir && mt_store_rundir_stamp(r->rundir, stamp, &stamp_err) == 0;
    run.rundir = stamped ? r->rundir : NULL;
    run.rundir_stamp = stamped ? stamp : NULL;
    run.timed = r->timed;
    mt_store_library_figures *libs = library_figures(h);
    run.libs = libs;
    run.nlibs = h->nlibs;
    mt_store *s = h->ok ? mt_store_open(path, MT_STORE_WRITE, &h->err) : NULL;
    int64_t id = s ? mt_store_add_run(s, &h->build, &run, &h->err) : -1;
    if (id > 0) {
        char *shown = mt_ui_escape(path);
        fprintf(stderr, "run %lld stored in %s ('mtool history show %lld')\n", (long long)id,
                shown, (long long)id);
        free(shown);
        rc = 0;
    } else
        mt_ui_error("history: %s; run not stored (--no-store skips the history)", h->err.msg);
    mt_store_close(s);
    free(libs);
    free(argv);
    free(machine);
    free(path);
    history_free(h);
    return rc;
}

/* ---- simulated runs ---------------------------------------------------------- */

/* "32K", "8M", or bytes: as the flags and the description file take it. */
static void size_text(uint64_t size, char *buf, size_t n)
{
    static const char units[] = "GMK";
    for (int k = 0; k < 3; k++) {
        uint64_t unit = 1ull << (10 * (3 - k));
        if (size % unit == 0) {
            snprintf(buf, n, "%" PRIu64 "%c", size / unit, units[k]);
            return;
        }
    }
    snprintf(buf, n, "%" PRIu64, size);
}

/* The processors' settings, when there are several (sim.h's defaults left
 * out): " cpus=2 nodes=2 placement=interleave ...". */
static void processors_summary(FILE *mem, const mt_sim_machine *m)
{
    if (m->cpus <= 1)
        return;
    fprintf(mem, " cpus=%u", m->cpus);
    if (m->shared[0])
        fprintf(mem, " shared=%s", m->shared);
    for (unsigned t = 0; t < m->ncpu_map; t++)
        fprintf(mem, "%s%u", t ? "," : " cpu_map=", m->cpu_map[t]);
    if (m->nodes > 1)
        fprintf(mem, " nodes=%u page=%" PRIu64 " placement=%s", m->nodes, m->page,
                mt_sim_placement_name(m->placement));
    for (unsigned k = 0; k < m->nplaces; k++)
        fprintf(mem, " place=0x%" PRIx64 "-0x%" PRIx64 "=%u", m->place[k].lo, m->place[k].hi,
                m->place[k].node);
}

/* The machine as the settings that make it again (`mtool sim --set
 * KEY=VALUE`), defaults left out, then where it came from:
 * "D1=8K,4,64 LL=64K,8,64 L2.inclusion=inclusive (sysfs + flags)". */
static char *machine_summary(const mt_sim *s, const mt_sim_machine *m)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    bool random = false;
    for (unsigned i = 0; i < mt_sim_level_count(s); i++) {
        const mt_sim_level_desc *d = mt_sim_level(s, i)->desc;
        char size[32];
        size_text(d->size, size, sizeof size);
        fprintf(mem, "%s%s=%s,%" PRIu32 ",%" PRIu32, i ? " " : "", d->name, size, d->ways, d->line);
        if (d->replacement != MT_SIM_LRU)
            fprintf(mem, " %s.replacement=%s", d->name, mt_sim_replacement_name(d->replacement));
        if (d->inclusion != MT_SIM_NON_INCLUSIVE)
            fprintf(mem, " %s.inclusion=%s", d->name, mt_sim_inclusion_name(d->inclusion));
        if (!d->write_allocate)
            fprintf(mem, " %s.write_allocate=no", d->name);
        if (d->prefetch != MT_SIM_PREFETCH_NONE)
            fprintf(mem, " %s.prefetch=%s", d->name, mt_sim_prefetch_name(d->prefetch));
        random |= d->replacement == MT_SIM_RANDOM;
    }
    if (m->straddle_line)
        fprintf(mem, " straddle=line");
    processors_summary(mem, m);
    if (random)
        fprintf(mem, " seed=%" PRIu64, m->seed);
    fprintf(mem, " (%s)", m->source);
    fclose(mem);
    return text;
}

/* Each level's description and the run's totals there; slot_of[i]: level
 * i's slot in the history. */
static mt_store_sim_level *sim_levels(mt_sim *s, unsigned *slot_of)
{
    unsigned n = mt_sim_level_count(s);
    mt_store_sim_level *levels = mt_xcalloc(n + 1, sizeof *levels);
    size_t nuses;
    const mt_sim_object_use *uses = mt_sim_object_uses(s, &nuses);
    for (unsigned i = 0; i < n; i++) {
        const mt_sim_level_stats *st = mt_sim_level(s, i);
        const mt_sim_level_desc *d = st->desc;
        int slot = mt_store_sim_level_slot(d->name);
        slot_of[i] = slot >= 0 && slot < MT_STORE_SIM_LEVELS ? (unsigned)slot : MT_STORE_SIM_LEVELS;
        mt_store_sim_level *l = &levels[i];
        *l = (mt_store_sim_level){.slot = slot_of[i], .size = d->size, .ways = d->ways,
                                  .line = d->line, .write_allocate = d->write_allocate,
                                  .refs = st->refs, .misses = st->misses,
                                  .evictions = st->evictions, .writebacks = st->writebacks,
                                  .lines = st->lines_used};
        snprintf(l->replacement, sizeof l->replacement, "%s", mt_sim_replacement_name(d->replacement));
        snprintf(l->inclusion, sizeof l->inclusion, "%s", mt_sim_inclusion_name(d->inclusion));
        snprintf(l->prefetch, sizeof l->prefetch, "%s", mt_sim_prefetch_name(d->prefetch));
        for (int c = 0; c < MT_STORE_NCAUSES; c++)
            l->cause[c] = st->cause[c]; /* the store keeps sim's order of causes */
        for (size_t k = 0; k < nuses; k++)
            if (uses[k].level == i)
                l->bytes_used += uses[k].bytes_used;
    }
    return levels;
}

/* The TLB levels of the machine and the run's totals there: the data
 * TLB's, then the ITLB (malloc'd, *n of them). */
static mt_store_sim_tlb_level *sim_tlb_levels(const mt_sim *s, size_t *n)
{
    const mt_sim_tlb_stats *itlb = mt_sim_itlb(s);
    unsigned ntlb = mt_sim_tlb_count(s);
    mt_store_sim_tlb_level *out = mt_xcalloc(ntlb + 2, sizeof *out);
    *n = 0;
    for (unsigned i = 0; i <= ntlb; i++) {
        const mt_sim_tlb_stats *st = i < ntlb ? mt_sim_tlb(s, i) : itlb;
        if (!st)
            continue;
        mt_store_sim_tlb_level *l = &out[(*n)++];
        *l = (mt_store_sim_tlb_level){.entries = st->desc->entries, .ways = st->desc->ways,
                                      .page = mt_sim_tlb_page(s), .refs = st->refs,
                                      .misses = st->misses};
        snprintf(l->name, sizeof l->name, "%s", st->desc->name);
    }
    return out;
}

/* An object's TLB figures before its first reference: zero at the levels
 * the machine has, none (NULL) at the others and in the walk cycles
 * (tlb_add_walk_cycles's). */
static mt_store_sim_tlb empty_tlb(const mt_sim *s)
{
    unsigned ntlb = mt_sim_tlb_count(s);
    mt_store_sim_tlb t = {.walk_cycles = NAN};
    t.misses[MT_STORE_TLB1_MISSES] = ntlb >= 1 ? 0 : MT_STORE_NO_COUNT;
    t.misses[MT_STORE_TLB2_MISSES] = ntlb >= 2 ? 0 : MT_STORE_NO_COUNT;
    t.misses[MT_STORE_PAGE_WALKS] = ntlb ? 0 : MT_STORE_NO_COUNT;
    t.misses[MT_STORE_ITLB_MISSES] = mt_sim_itlb(s) ? 0 : MT_STORE_NO_COUNT;
    return t;
}

/* A (code, data) pair's TLB misses added to an object's (those of levels
 * it has: the ITLB's only to a code object's, `fetches`). */
static void add_tlb(mt_store_sim_tlb *t, const mt_sim *s, const mt_sim_pair *p, bool fetches)
{
    unsigned ntlb = mt_sim_tlb_count(s);
    for (unsigned l = 0; l < ntlb; l++)
        t->misses[MT_STORE_TLB1_MISSES + l] += p->tlb_misses[l];
    if (ntlb)
        t->misses[MT_STORE_PAGE_WALKS] += p->tlb_misses[ntlb - 1];
    if (fetches && mt_sim_itlb(s))
        t->misses[MT_STORE_ITLB_MISSES] += p->itlb_misses;
}

/* The walk cycles of t's page walks at `walk_cost` cycles each (left NAN
 * without a cost or a data TLB). */
static void tlb_add_walk_cycles(mt_store_sim_tlb *t, double walk_cost)
{
    if (walk_cost > 0 && t->misses[MT_STORE_PAGE_WALKS] != MT_STORE_NO_COUNT)
        t->walk_cycles = (double)t->misses[MT_STORE_PAGE_WALKS] * walk_cost;
}

/* A site's figures before the first reference: zero misses and line use
 * at the levels the machine has, none (NULL) at the others; zero
 * processors' figures with several CPUs, none with one; the TLB's as
 * empty_tlb's. */
static mt_store_sim_figures empty_figures(uint32_t site, mt_sim *s, const unsigned *slot_of)
{
    mt_store_sim_figures f = {.site = site, .tlb = empty_tlb(s)};
    for (int k = 0; k < MT_STORE_NMP; k++)
        f.mp[k] = mt_sim_cpus(s) > 1 ? 0 : MT_STORE_NO_COUNT;
    for (int l = 0; l < MT_STORE_SIM_LEVELS; l++) {
        for (int c = 0; c < MT_STORE_NCAUSES; c++)
            f.misses[l][c] = MT_STORE_NO_COUNT;
        f.lines[l] = f.bytes_used[l] = MT_STORE_NO_COUNT;
    }
    for (unsigned l = 0; l < mt_sim_level_count(s); l++)
        if (slot_of[l] < MT_STORE_SIM_LEVELS) {
            memset(f.misses[slot_of[l]], 0, sizeof f.misses[0]);
            f.lines[slot_of[l]] = f.bytes_used[slot_of[l]] = 0;
        }
    return f;
}

/* One row of line use added to the history's slot of its level. */
static void add_use(uint64_t *lines, uint64_t *bytes_used, mt_sim *s, const unsigned *slot_of,
                    const mt_sim_object_use *u)
{
    unsigned slot = u->level < mt_sim_level_count(s) ? slot_of[u->level] : MT_STORE_SIM_LEVELS;
    if (slot < MT_STORE_SIM_LEVELS) {
        lines[slot] += u->lines;
        bytes_used[slot] += u->bytes_used;
    }
}

/* The simulator's misses per level by cause added to the history's slots. */
static void add_misses(uint64_t (*to)[MT_STORE_NCAUSES], const uint64_t (*from)[MT_SIM_NCAUSES],
                       mt_sim *s, const unsigned *slot_of)
{
    for (unsigned l = 0; l < mt_sim_level_count(s); l++)
        for (int c = 0; c < MT_STORE_NCAUSES && slot_of[l] < MT_STORE_SIM_LEVELS; c++)
            to[slot_of[l]][c] += from[l][c];
}

static void add_pair(mt_store_sim_figures *f, mt_sim *s, const unsigned *slot_of,
                     const mt_sim_pair *p)
{
    f->refs += p->refs;
    add_misses(f->misses, (const uint64_t(*)[MT_SIM_NCAUSES])p->misses, s, slot_of);
    add_tlb(&f->tlb, s, p, true);
}

/* A (code, data) pair's coherence misses and events added to an object's. */
static void add_coherence(uint64_t *mp, const mt_sim_coherence_pair *p)
{
    mp[MT_STORE_TRUE_SHARING] += p->true_sharing;
    mp[MT_STORE_FALSE_SHARING] += p->false_sharing;
    mp[MT_STORE_INVALIDATIONS] += p->invalidations;
    mp[MT_STORE_INTERVENTIONS] += p->interventions;
    mp[MT_STORE_UPGRADES] += p->upgrades;
}

/* A (code, data, CPU) triple's references served past its node's caches. */
static void add_served(uint64_t *mp, const mt_sim_served_pair *p)
{
    mp[MT_STORE_LOCAL_REFS] += p->served[MT_SIM_AT_LOCAL];
    mp[MT_STORE_REMOTE_REFS] += p->served[MT_SIM_AT_REMOTE];
    mp[MT_STORE_REMOTE_DIRTY_REFS] += p->served[MT_SIM_AT_REMOTE_DIRTY];
    mp[MT_STORE_THREE_HOP_REFS] += p->served[MT_SIM_AT_THREE_HOP];
}

/* The sites of code object `code` and of every object enclosing it, in
 * *sites (grown as needed; none outside the binary's procedures or in a
 * PLT stub): how many.  The binary's code objects are the trace's from
 * code_base + 1 on (a traced library's; 0: the executable's). */
static size_t enclosing_sites(const mt_program *prog, uint32_t code_base, const mt_store_build *b,
                              uint32_t code, uint32_t **sites, size_t *cap)
{
    uint32_t proc, loop;
    size_t n = 0;
    if (code <= code_base || !mt_code_object_split(prog, code - code_base, &proc, &loop))
        return 0;
    for (uint32_t l = loop;; l = prog->procs[proc].loops[l].parent) {
        uint32_t site = mt_store_site_of(b, proc, l);
        if (site == MT_NONE)
            break; /* PLT stubs are never objects */
        MT_PUSH(*sites, n, *cap, site);
        if (l == MT_NONE)
            break;
    }
    return n;
}

/* The figures of site `site`, started empty the first time. */
static mt_store_sim_figures *site_figures(mt_store_sim_figures *by_site, bool *touched,
                                          uint32_t site, mt_sim *s, const unsigned *slot_of)
{
    if (!touched[site])
        by_site[site] = empty_figures(site, s, slot_of);
    touched[site] = true;
    return &by_site[site];
}

/* Per procedure and loop of the build, with the meaning `count` gives its
 * figures: a procedure's include its loops', a loop's its inner loops'
 * (the simulator's code objects are the innermost: each reference is
 * added to its object and every object enclosing it, and so is the use of
 * each line it brought in).  Summed over data
 * objects; references outside the binary's procedures (code object 0:
 * libraries, the loader) are in the levels' totals only.  Page walks cost
 * `walk_cost` cycles each (NAN: unknown). */
static mt_store_sim_figures *sim_figures(mt_sim *s, const mt_program *prog, uint32_t code_base,
                                         const mt_store_build *b, const unsigned *slot_of,
                                         double walk_cost, size_t *n)
{
    size_t np, nuses, cap = 0;
    const mt_sim_pair *p = mt_sim_pairs(s, &np);
    const mt_sim_object_use *uses = mt_sim_code_uses(s, &nuses);
    mt_store_sim_figures *by_site = mt_xcalloc(b->nsites + 1, sizeof *by_site);
    bool *touched = mt_xcalloc(b->nsites + 1, sizeof *touched);
    uint32_t *sites = NULL;
    for (size_t i = 0; i < np; i++) {
        size_t k = enclosing_sites(prog, code_base, b, p[i].code, &sites, &cap);
        while (k--)
            add_pair(site_figures(by_site, touched, sites[k], s, slot_of), s, slot_of, &p[i]);
    }
    for (size_t i = 0; i < nuses; i++) {
        size_t k = enclosing_sites(prog, code_base, b, uses[i].object, &sites, &cap);
        while (k--) {
            mt_store_sim_figures *f = site_figures(by_site, touched, sites[k], s, slot_of);
            add_use(f->lines, f->bytes_used, s, slot_of, &uses[i]);
        }
    }
    size_t nc, ns;
    const mt_sim_coherence_pair *cp = mt_sim_coherence_pairs(s, &nc);
    for (size_t i = 0; i < nc; i++)
        for (size_t k = enclosing_sites(prog, code_base, b, cp[i].code, &sites, &cap); k--;)
            add_coherence(site_figures(by_site, touched, sites[k], s, slot_of)->mp, &cp[i]);
    const mt_sim_served_pair *sp = mt_sim_served_pairs(s, &ns);
    for (size_t i = 0; i < ns; i++)
        for (size_t k = enclosing_sites(prog, code_base, b, sp[i].code, &sites, &cap); k--;)
            add_served(site_figures(by_site, touched, sites[k], s, slot_of)->mp, &sp[i]);
    free(sites);
    *n = 0;
    for (size_t site = 0; site < b->nsites; site++)
        if (touched[site]) {
            tlb_add_walk_cycles(&by_site[site].tlb, walk_cost);
            by_site[(*n)++] = by_site[site];
        }
    free(touched);
    return by_site;
}

/* Per data object with a reference: its name (allocated), references,
 * misses per level slot by cause, the use of the lines it brought in and
 * its data TLB misses (NULL, nothing, without data objects). */
static mt_store_sim_data *sim_data(mt_sim *s, const mt_data_map *d, const unsigned *slot_of,
                                   double walk_cost, size_t *n)
{
    *n = 0;
    if (!d)
        return NULL;
    size_t nrows, nuses;
    mt_sim_data_row *rows = mt_sim_data_rows(s, d, &nrows);
    const mt_sim_object_use *uses = mt_sim_object_uses(s, &nuses);
    mt_store_sim_data *out = mt_xcalloc(nrows + 1, sizeof *out);
    uint32_t *row_of = mt_xcalloc(mt_data_map_count(d) + 1, sizeof *row_of);
    for (size_t i = 0; i < nrows; i++) {
        const mt_data_object *o = mt_data_map_object(d, rows[i].id);
        mt_store_sim_data *x = &out[i];
        mt_store_sim_figures f = empty_figures(0, s, slot_of);
        /* a heap site's objects differ by call path: the path is their identity too */
        char *name = o->path && o->path[0] ? mt_xasprintf("%s <- %s", o->name, o->path)
                                           : mt_xstrdup(o->name);
        *x = (mt_store_sim_data){.name = name, .kind = mt_data_kind_name(o->kind),
                                 .address = o->start, .size = o->size, .refs = rows[i].refs};
        memcpy(x->misses, f.misses, sizeof x->misses);
        memcpy(x->lines, f.lines, sizeof x->lines);
        memcpy(x->bytes_used, f.bytes_used, sizeof x->bytes_used);
        memcpy(x->mp, f.mp, sizeof x->mp);
        x->tlb = f.tlb;
        x->tlb.misses[MT_STORE_ITLB_MISSES] = MT_STORE_NO_COUNT; /* fetches: the code's */
        add_misses(x->misses, (const uint64_t(*)[MT_SIM_NCAUSES])rows[i].misses, s, slot_of);
        row_of[rows[i].id] = (uint32_t)i + 1;
    }
    for (size_t k = 0; k < nuses; k++) {
        uint32_t r = uses[k].object < mt_data_map_count(d) ? row_of[uses[k].object] : 0;
        if (r)
            add_use(out[r - 1].lines, out[r - 1].bytes_used, s, slot_of, &uses[k]);
    }
    size_t np;
    const mt_sim_pair *p = mt_sim_pairs(s, &np);
    for (size_t k = 0; k < np; k++) {
        uint32_t r = p[k].data < mt_data_map_count(d) ? row_of[p[k].data] : 0;
        if (r)
            add_tlb(&out[r - 1].tlb, s, &p[k], false);
    }
    for (size_t i = 0; i < nrows; i++)
        tlb_add_walk_cycles(&out[i].tlb, walk_cost);
    size_t nc, ns;
    const mt_sim_coherence_pair *cp = mt_sim_coherence_pairs(s, &nc);
    for (size_t k = 0; k < nc; k++) {
        uint32_t r = cp[k].data < mt_data_map_count(d) ? row_of[cp[k].data] : 0;
        if (r)
            add_coherence(out[r - 1].mp, &cp[k]);
    }
    const mt_sim_served_pair *sp = mt_sim_served_pairs(s, &ns);
    for (size_t k = 0; k < ns; k++) {
        uint32_t r = sp[k].data < mt_data_map_count(d) ? row_of[sp[k].data] : 0;
        if (r)
            add_served(out[r - 1].mp, &sp[k]);
    }
    free(row_of);
    free(rows);
    *n = nrows;
    return out;
}

/* A what-if saving in the history's level slots. */
static mt_store_saving saving_of(const mt_sim *s, const unsigned *slot_of,
                                 const mt_whatif_figures *base, const mt_whatif_figures *now)
{
    mt_sim_saving v;
    mt_sim_whatif_saving(s, base, now, &v);
    mt_store_saving out = {.conflict = v.conflict, .coherence = v.coherence,
                           .sharing = v.sharing, .remote = v.remote, .cycles = v.cycles};
    for (int l = 0; l < MT_STORE_SIM_LEVELS; l++)
        out.misses[l] = MT_STORE_NO_SAVING;
    for (unsigned l = 0; l < mt_sim_level_count(s); l++)
        if (slot_of[l] < MT_STORE_SIM_LEVELS)
            out.misses[slot_of[l]] = v.level[l];
    return out;
}

/* --what-if's remedies (texts allocated) with what each saves the run. */
static mt_store_remedy *whatif_remedies(const mt_sim *s, const mt_whatif_report *w,
                                        const mt_data_map *d, const unsigned *slot_of)
{
    mt_store_remedy *out = mt_xcalloc(w->nremedies + 1, sizeof *out);
    for (unsigned i = 0; i < w->nremedies; i++) {
        char text[MT_SIM_REMEDY_TEXT_MAX];
        mt_sim_remedy_text(&w->remedy[i], d, text, sizeof text);
        out[i] = (mt_store_remedy){.kind = mt_whatif_kind_name(w->remedy[i].kind),
                                   .text = mt_xstrdup(text),
                                   .saved = saving_of(s, slot_of, &w->base, &w->remedy[i].total)};
    }
    return out;
}

/* --what-if's top problems (names allocated), each with its proposal. */
static mt_store_problem *whatif_problems(const mt_sim *s, const mt_whatif_report *w,
                                         const mt_data_map *d, const mt_program *prog,
                                         const unsigned *slot_of)
{
    mt_store_problem *out = mt_xcalloc(w->ncells + 1, sizeof *out);
    for (unsigned c = 0; c < w->ncells; c++) {
        char code[MT_SIM_CODE_NAME_MAX], data[MT_SIM_CODE_NAME_MAX];
        mt_sim_code_name(prog, w->code[c], code, sizeof code);
        mt_sim_object_name(d, prog, true, w->data[c], data, sizeof data);
        const mt_whatif_figures *f = &w->base_cell[c];
        mt_store_problem *p = &out[c];
        *p = (mt_store_problem){.code = mt_xstrdup(code), .data = mt_xstrdup(data),
                                .true_sharing = f->true_sharing,
                                .false_sharing = f->false_sharing, .remote = f->remote,
                                .cycles = f->cycles < 0 ? NAN : f->cycles, .remedy = w->best[c]};
        for (int l = 0; l < MT_STORE_SIM_LEVELS; l++)
            p->misses[l] = MT_STORE_NO_COUNT;
        for (unsigned l = 0; l < mt_sim_level_count(s); l++)
            if (slot_of[l] < MT_STORE_SIM_LEVELS) {
                p->misses[slot_of[l]] = 0;
                for (int k = 0; k <= MT_WHATIF_COHERENCE; k++)
                    p->misses[slot_of[l]] += f->misses[l][k];
            }
        if (p->remedy >= 0)
            p->saved = saving_of(s, slot_of, f, &w->remedy[p->remedy].cell[c]);
    }
    return out;
}

/* The per-thread view of a run of cpus > 1 (none for one CPU). */
static mt_store_sim_thread *sim_threads(const mt_sim *s, const unsigned *slot_of, size_t *n)
{
    const mt_sim_thread_stats *t = mt_sim_threads(s, n);
    mt_store_sim_thread *out = mt_xcalloc(*n + 1, sizeof *out);
    for (size_t i = 0; i < *n; i++) {
        const mt_sim_cpu_stats *c = &t[i].stats;
        mt_store_sim_thread *o = &out[i];
        double stall = mt_sim_served_stall(mt_sim_mp_machine(s), c->served);
        *o = (mt_store_sim_thread){.thread = t[i].thread, .cpu = t[i].cpu, .refs = c->refs,
                                   .stall_cycles = stall < 0 ? NAN : stall,
                                   .mp = {c->true_sharing, c->false_sharing,
                                          c->invalidations_sent, c->interventions, c->upgrades,
                                          c->served[MT_SIM_AT_LOCAL], c->served[MT_SIM_AT_REMOTE],
                                          c->served[MT_SIM_AT_REMOTE_DIRTY],
                                          c->served[MT_SIM_AT_THREE_HOP]}};
        for (int slot = 0; slot < MT_STORE_SIM_LEVELS; slot++)
            o->misses[slot] = MT_STORE_NO_COUNT;
        for (unsigned l = 0; l < mt_sim_level_count(s); l++)
            if (slot_of[l] < MT_STORE_SIM_LEVELS)
                o->misses[slot_of[l]] = c->misses[l];
    }
    return out;
}

/* Whether a reference of the run is in traced library `lib`'s code. */
static bool library_referenced(mt_sim *s, const mt_pass1_library *lib)
{
    size_t np;
    const mt_sim_pair *p = mt_sim_pairs(s, &np);
    uint32_t ncodes = mt_code_object_loops(lib->prog, lib->prog->nprocs);
    for (size_t i = 0; i < np; i++)
        if (p[i].code > lib->code_base && p[i].code - lib->code_base < ncodes)
            return true;
    return false;
}

/* The code objects of the libraries traced with the program, each
 * library's build a program of its own (as a timed run's library objects),
 * its procedures named LIB:PROCEDURE; a library whose code made no
 * reference is not stored (as a timed run stores only the libraries its
 * objects are in). */
static void sim_libraries(mt_history *h, mt_sim *s, const mt_pass1_libraries *libs,
                          const unsigned *slot_of, double walk_cost)
{
    for (size_t i = 0; libs && i < libs->nlibs; i++) {
        const mt_pass1_library *lib = &libs->libs[i];
        if (lib->note || !lib->code_base || !library_referenced(s, lib)) /* not traced, not run */
            continue;
        mt_history *l = mt_history_library(h, lib->prog, lib->name, lib->path);
        if (l->ok)
            l->sim_figures = sim_figures(s, lib->prog, lib->code_base, &l->build, slot_of,
                                         walk_cost, &l->nsim_figures);
    }
}

int mt_history_record_sim(mt_sim *s, const mt_sim_machine *m, const mt_program *prog,
                          const mt_pass1_libraries *libs, const mt_data_map *data,
                          const mt_whatif_report *whatif, double walk_cost, int argc,
                          char **argv, char **prog_argv, const mt_run_result *run)
{
    mt_history_run r = {.tool = "sim", .argc = argc, .argv = argv, .prog_argv = prog_argv,
                        .ran = run != NULL, .exit_status = run ? mt_exit_code(run->status) : 0,
                        .user_s = run ? run->user : NAN, .sys_s = run ? run->sys : NAN,
                        .wall_s = run ? run->wall : NAN, .base_user_s = NAN, .base_sys_s = NAN,
                        .base_wall_s = NAN};
    mt_history *h = mt_history_begin(prog, prog_argv[0]);
    unsigned slot_of[MT_SIM_MAX_LEVELS];
    char *machine = machine_summary(s, m);
    mt_store_sim sim = {.machine = machine, .levels = sim_levels(s, slot_of),
                        .nlevels = mt_sim_level_count(s)};
    sim.tlb_levels = sim_tlb_levels(s, &sim.ntlb_levels);
    if (h->ok) {
        sim.figures = sim_figures(s, prog, 0, &h->build, slot_of, walk_cost, &sim.nfigures);
        sim_libraries(h, s, libs, slot_of, walk_cost);
        sim.data = sim_data(s, data, slot_of, walk_cost, &sim.ndata);
        sim.threads = sim_threads(s, slot_of, &sim.nthreads);
    }
    if (h->ok && whatif) {
        sim.remedies = whatif_remedies(s, whatif, data, slot_of);
        sim.nremedies = whatif->nremedies;
        sim.problems = whatif_problems(s, whatif, data, prog, slot_of);
        sim.nproblems = whatif->ncells;
    }
    h->sim = &sim;
    int rc = mt_history_finish(h, &r);
    free(machine);
    free(sim.levels);
    free(sim.tlb_levels);
    free(sim.figures);
    for (size_t i = 0; i < sim.ndata; i++)
        free((char *)sim.data[i].name);
    free(sim.data);
    for (size_t i = 0; i < sim.nremedies; i++)
        free((char *)sim.remedies[i].text);
    free(sim.remedies);
    for (size_t i = 0; i < sim.nproblems; i++) {
        free((char *)sim.problems[i].code);
        free((char *)sim.problems[i].data);
    }
    free(sim.problems);
    free(sim.threads);
    return rc;
}
