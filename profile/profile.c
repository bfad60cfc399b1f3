/* profile/profile.c — reading and merging profile files (format in
 * timer/timer.h).  Files are read with pread, every size bounded by the
 * file's own length, so a truncated or corrupt file is skipped (and named
 * in profile_merge.damaged), never a crash. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile.h"

/* One profile file. */
typedef struct {
    mt_profile_header header;  /* as written (magic checked) */
    uint32_t nslots;           /* slots with counts: header.nslots, bounded by the
                                  capacity (a slot past it never got file space) */
    uint32_t nthreads;         /* threads that attached (slots are reused) */
    uint64_t *counts;          /* nslots * ncounters, slot-major */
    int32_t *tids;             /* per slot: its owner (or last owner) */
    mt_timer_record *timers;   /* nslots * header.ntimers, slot-major (pass 2) */
    uint32_t *open;            /* per timer: frames still active when the file was read
                                  (the process ended inside the object), over all slots */
    mt_call_site_record *call_sites; /* nslots * header.ncall_sites, slot-major (pass 1) */
} mt_profile;

_Static_assert(sizeof(mt_profile_header) <= MT_PROFILE_HEADER_SIZE, "profile header fits its page");
_Static_assert(sizeof(mt_slot_header) <= MT_SLOT_COUNTERS_OFFSET, "slot header fits before the counters");

static int read_exact(int fd, void *buf, size_t n, uint64_t off)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = pread(fd, (char *)buf + done, n - done, (off_t)(off + done));
        if (r <= 0)
            return -1;
        done += (size_t)r;
    }
    return 0;
}

/* Slots that hold counts: a slot index handed out past the capacity never
 * got file space (its thread counted into anonymous memory, or the process
 * died while growing the file). */
static uint32_t usable_slots(const mt_profile_header *h)
{
    return h->nslots < h->capacity ? h->nslots : h->capacity;
}

/* The bytes of each slot of h's file: runtimes before version 8 kept no
 * trace ring. */
static uint64_t slot_size(const mt_profile_header *h)
{
    return h->version < 8 ? MT_SLOT_SIZE_V7(h->ncounters, h->ntimers, h->ncall_sites,
                                            h->trace_records)
                          : MT_SLOT_SIZE(h->ncounters, h->ntimers, h->ncall_sites,
                                         h->trace_records);
}

/* Why the header cannot be trusted, or NULL. */
static const char *check_header(const mt_profile_header *h, uint64_t file_size)
{
    if (h->magic != MT_PROFILE_MAGIC)
        return "not an mtool profile";
    if (h->version < 1 || h->version > MT_PROFILE_VERSION || h->header_size != MT_PROFILE_HEADER_SIZE)
        return "profile format version not supported (this mtool reads versions 1 to 8)";
    if (h->nslots == 0 || h->capacity == 0)
        return "corrupt header: no thread slot";
    /* The runtime publishes a capacity only once the file has that size. */
    uint64_t slots = usable_slots(h);
    if ((file_size - MT_PROFILE_HEADER_SIZE) / slot_size(h) < slots)
        return "truncated: the file is shorter than its slots";
    return NULL;
}

/* Counts the frames a slot's timer stack still holds (its thread ended, or
 * the file was read, inside those objects): NULL or why not. */
static const char *read_open_frames(int fd, mt_profile *out, const mt_slot_header *sh,
                                    uint64_t at)
{
    uint64_t n = out->header.ncounters, t = out->header.ntimers;
    uint64_t frames = MT_SLOT_FRAMES_OFFSET(n, t);
    if (sh->magic == 0 || sh->timer_top == 0)
        return NULL; /* never stamped, or a thread that ran no timed code */
    if (sh->timer_top < frames || (sh->timer_top - frames) % MT_FRAME_SIZE ||
        (sh->timer_top - frames) / MT_FRAME_SIZE > t)
        return "corrupt timer stack";
    for (uint64_t f = frames + MT_FRAME_SIZE; f <= sh->timer_top; f += MT_FRAME_SIZE) {
        mt_timer_frame fr;
        if (read_exact(fd, &fr, sizeof fr, at + f) != 0)
            return "cannot read a timer frame";
        uint64_t rec = fr.record - MT_SLOT_RECORDS_OFFSET(n);
        if (fr.record < MT_SLOT_RECORDS_OFFSET(n) || rec % MT_REC_SIZE || rec / MT_REC_SIZE >= t)
            return "corrupt timer frame";
        out->open[rec / MT_REC_SIZE]++;
    }
    return NULL;
}

/* Reads slot `s` into out->counts/tids/timers/call_sites: NULL or why not. */
static const char *read_slot(int fd, mt_profile *out, uint32_t s)
{
    uint64_t n = out->header.ncounters, t = out->header.ntimers, c = out->header.ncall_sites;
    uint64_t at = MT_PROFILE_HEADER_SIZE + s * slot_size(&out->header);
    mt_slot_header sh;
    if (read_exact(fd, &sh, sizeof sh, at) != 0 ||
        read_exact(fd, out->counts + s * n, (size_t)n * 8, at + MT_SLOT_COUNTERS_OFFSET) != 0 ||
        read_exact(fd, out->timers + s * t, (size_t)t * sizeof *out->timers,
                   at + MT_SLOT_RECORDS_OFFSET(n)) != 0 ||
        read_exact(fd, out->call_sites + s * c, (size_t)c * sizeof *out->call_sites,
                   at + MT_SLOT_CALL_SITES_OFFSET(n, t)) != 0)
        return "cannot read a slot";
    /* A slot handed out to a thread that died before stamping it holds
     * zeros: harmless. */
    if (sh.magic != MT_SLOT_MAGIC && sh.magic != 0)
        return "corrupt slot header";
    out->tids[s] = sh.tid;
    return t ? read_open_frames(fd, out, &sh, at) : NULL;
}

static const char *read_profile(int fd, uint64_t size, mt_profile *out)
{
    if (size < MT_PROFILE_HEADER_SIZE || read_exact(fd, &out->header, sizeof out->header, 0) != 0)
        return "too short for a profile header";
    const char *why = check_header(&out->header, size);
    if (why)
        return why;
    mt_profile_header *h = &out->header;
    if (h->version < 3) /* not in older headers */
        h->ncall_sites = 0, h->load_bias = 0, h->timer_bias = 0;
    if (h->version == 1)
        h->ntimers = 0;
    if (h->version < 4)
        h->trace_records = 0;
    if (h->version < 7)
        h->nlibraries = 0;
    if (h->trace_records > MT_TRACE_RECORDS)
        return "corrupt header: more trace records per frame than a runtime writes";
    out->nslots = usable_slots(h);
    /* Files of older runtimes have no thread count: one thread per slot. */
    out->nthreads = h->nthreads > h->nslots ? h->nthreads : h->nslots;
    /* Bounded by the file size (check_header), so a corrupt ncounters
     * cannot ask for more memory than the file holds. */
    out->counts = mt_xmalloc((size_t)((uint64_t)out->nslots * h->ncounters + 1) * sizeof *out->counts);
    out->tids = mt_xmalloc(((size_t)out->nslots + 1) * sizeof *out->tids);
    out->timers = mt_xmalloc((size_t)((uint64_t)out->nslots * h->ntimers + 1) * sizeof *out->timers);
    out->open = mt_xcalloc((size_t)h->ntimers + 1, sizeof *out->open);
    out->call_sites = mt_xmalloc((size_t)((uint64_t)out->nslots * h->ncall_sites + 1) *
                                 sizeof *out->call_sites);
    for (uint32_t s = 0; s < out->nslots; s++)
        if ((why = read_slot(fd, out, s)))
            return why;
    return NULL;
}

static void profile_free(mt_profile *p)
{
    free(p->counts);
    free(p->tids);
    free(p->timers);
    free(p->open);
    free(p->call_sites);
    p->counts = NULL;
    p->tids = NULL;
    p->timers = NULL;
    p->open = NULL;
    p->call_sites = NULL;
}

static bool is_profile_name(const char *name)
{
    size_t n = strlen(name);
    return n > 4 && strcmp(name + n - 4, ".mtp") == 0;
}

static int by_object_then_address(const mt_merged_call_target *x, const mt_merged_call_target *y)
{
    if (x->in_library != y->in_library)
        return x->in_library ? 1 : -1;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return x->target < y->target ? -1 : x->target > y->target;
}

/* Adds `one`'s calls to its target of a merged site. */
static void add_call_target(mt_call_site_totals *t, const mt_merged_call_target *one)
{
    uint32_t k = 0;
    while (k < t->ntargets && by_object_then_address(&t->targets[k], one) < 0)
        k++;
    if (k == t->ntargets || by_object_then_address(&t->targets[k], one) != 0) {
        t->targets = mt_xrealloc(t->targets, (t->ntargets + 1) * sizeof *t->targets);
        memmove(&t->targets[k + 1], &t->targets[k], (t->ntargets - k) * sizeof *t->targets);
        t->targets[k] = *one;
        t->targets[k].calls = 0;
        t->ntargets++;
    }
    t->targets[k].calls += one->calls;
}

/* The header's entries in use. */
static uint32_t header_libraries(const mt_profile_header *h)
{
    return h->nlibraries < MT_PROFILE_LIBRARIES ? h->nlibraries : MT_PROFILE_LIBRARIES;
}

/* The object of site i: the library copy whose range holds it (the last
 * one activated there: a copy opened again may lie elsewhere), else the
 * executable. */
static mt_merged_call_target site_object(const mt_profile_header *h, uint32_t i, uint64_t *base)
{
    for (uint32_t k = header_libraries(h); k-- > 0;)
        if (h->libraries[k].first <= i && i < h->libraries[k].end) {
            *base = h->libraries[k].base;
            return (mt_merged_call_target){.in_library = true, .first = h->libraries[k].first,
                                           .end = h->libraries[k].end};
        }
    *base = h->load_bias;
    return (mt_merged_call_target){0};
}

/* Whether the copy of entry k was activated again later (closed and
 * opened again: it may lie elsewhere now). */
static bool activated_again(const mt_profile_header *h, uint32_t k)
{
    for (uint32_t j = k + 1; j < header_libraries(h); j++)
        if (h->libraries[j].first == h->libraries[k].first && h->libraries[j].end == h->libraries[k].end)
            return true;
    return false;
}

/* Run-time target `addr` of site i placed in the object loaded highest at
 * or below it (the last activated of equal bases), the site's own object
 * when none lies below it. */
static mt_merged_call_target place_target(const mt_profile_header *h, uint32_t i, uint64_t addr)
{
    uint64_t base;
    mt_merged_call_target at = site_object(h, i, &base);
    bool found = h->load_bias <= addr;
    if (found) {
        base = h->load_bias;
        at = (mt_merged_call_target){0};
    }
    for (uint32_t k = 0; k < header_libraries(h); k++) {
        const mt_profile_library *lib = &h->libraries[k];
        if (lib->base > addr || (found && lib->base < base) || activated_again(h, k))
            continue;
        found = true;
        base = lib->base;
        at = (mt_merged_call_target){.in_library = true, .first = lib->first, .end = lib->end};
    }
    at.target = addr - base;
    return at;
}

/* (Files older than version 3 recorded no call sites: they add none.) */
static void add_call_sites(profile_merge *m, const mt_profile *p, uint32_t s)
{
    for (uint32_t i = 0; i < p->header.ncall_sites; i++) {
        const mt_call_site_record *r = &p->call_sites[(uint64_t)s * p->header.ncall_sites + i];
        mt_call_site_totals *t = &m->call_sites[i];
        for (int k = 0; k < MT_CALL_TARGETS && r->targets[k].target; k++) {
            if (!r->targets[k].calls)
                continue;
            mt_merged_call_target one = place_target(&p->header, i, r->targets[k].target);
            one.calls = r->targets[k].calls;
            add_call_target(t, &one);
        }
        t->overflow += r->overflow;
    }
}

static void add_profile(profile_merge *m, const mt_profile *p)
{
    for (uint32_t s = 0; s < p->nslots; s++) {
        const uint64_t *c = p->counts + (uint64_t)s * m->ncounters;
        for (uint32_t i = 0; i < m->ncounters; i++)
            m->counts[i] += c[i];
        for (uint32_t k = 0; k < m->ntimers; k++) {
            const mt_timer_record *r = &p->timers[(uint64_t)s * m->ntimers + k];
            mt_timer_totals *t = &m->timers[k];
            t->entries += r->entries;
            t->recursive += r->recursive;
            t->inclusive += r->inclusive;
            t->exclusive += r->exclusive;
            t->outside += r->outside;
            t->nonlocal_exits += r->nonlocal_exits;
            t->cycles += r->cycles;
        }
        add_call_sites(m, p, s);
    }
    for (uint32_t k = 0; k < m->ntimers; k++)
        m->timers[k].open += p->open[k];
    double bias = (double)p->header.timer_bias / 1000;
    if (p->header.timer_bias && (isnan(m->timer_bias) || bias < m->timer_bias))
        m->timer_bias = bias;
    m->nprocesses++;
    m->nforked += (p->header.flags & MT_PROFILE_FORKED) != 0;
    m->nthreads += p->nthreads;
}

/* Skips a file that cannot be merged, remembering why for the warning. */
static void skip_damaged(profile_merge *m, const char *name, const char *why)
{
    m->damaged = mt_xrealloc(m->damaged, (m->ndamaged + 1) * sizeof *m->damaged);
    m->damaged[m->ndamaged++] = mt_xasprintf("%s: %s", name, why);
}

/* What the open regular file `fd` holds: 1 a profile read into `p`, 0 nothing to
 * merge (counted in m: a damaged or incomplete file), never an error: one
 * bad file must not cost the counts of all the others. */
static int read_one(profile_merge *m, int fd, const char *name, mt_profile *p)
{
    struct stat st;
    uint64_t magic = 1;
    const char *why = NULL;
    if (fstat(fd, &st) != 0)
        why = strerror(errno);
    else if (st.st_size == 0)
        why = "empty (its process was killed while creating it)";
    /* Killed between sizing the file and writing its header (the runtime
     * writes the magic last): all zeros, no counts. */
    else if (st.st_size >= MT_PROFILE_HEADER_SIZE && read_exact(fd, &magic, sizeof magic, 0) == 0 &&
             magic == 0) {
        m->nincomplete++;
        return 0;
    } else
        why = read_profile(fd, (uint64_t)st.st_size, p);
    if (!why)
        return 1;
    skip_damaged(m, name, why);
    return 0;
}

/* Hands the records slot by slot of `p` (open as `fd`) left unsent to fn:
 * NULL or why they cannot be read. */
static const char *read_trace_leftovers(int fd, const mt_profile *p, mt_trace_leftover_fn fn,
                                        void *ctx)
{
    const mt_profile_header *h = &p->header;
    uint32_t r = h->trace_records;
    mt_trace_record *recs = mt_xmalloc(((size_t)r + 1) * sizeof *recs);
    const char *why = NULL;
    for (uint32_t s = 0; s < p->nslots && !why; s++) {
        uint64_t at = MT_PROFILE_HEADER_SIZE + s * slot_size(h) +
                      MT_SLOT_TRACE_OFFSET(h->ncounters, h->ntimers, h->ncall_sites);
        int64_t index;
        uint64_t capacity; /* the frame: the area's last `capacity` records */
        if (read_exact(fd, &index, sizeof index, at + MT_TRACE_INDEX) != 0 ||
            read_exact(fd, &capacity, sizeof capacity, at + MT_TRACE_CAPACITY) != 0)
            why = "cannot read a trace frame";
        else if (index == 0) /* a slot that never traced */
            continue;
        else if ((capacity = capacity ? capacity : r) > r)
            why = "corrupt trace frame capacity";
        else if (index > 0 || index % 2 || -index > 2 * (int64_t)capacity)
            why = "corrupt trace frame index";
        else {
            uint32_t n = (uint32_t)capacity - (uint32_t)(-index / 2);
            uint64_t first = at + MT_TRACE_RECORDS_AT + (r - capacity) * sizeof *recs;
            if (n && read_exact(fd, recs, n * sizeof *recs, first) != 0)
                why = "cannot read trace records";
            else if (n)
                fn(ctx, p->tids[s], recs, n);
        }
    }
    free(recs);
    return why;
}

/* Adds the file `name` of `dir` to the merge, or skips it (mt_open_regular:
 * a FIFO named like a profile must not hang the merge). */
static void merge_file(profile_merge *m, const char *dir, const char *name,
                       const mt_counter_map *map, mt_trace_leftover_fn fn, void *ctx)
{
    char *path = mt_xasprintf("%s/%s", dir, name);
    mt_error err;
    int fd = mt_open_regular(path, &err);
    if (fd < 0) {
        /* err is "PATH: reason" (cut short for a very long PATH): the
         * warning names the file itself. */
        size_t prefix = strlen(path) + 2;
        skip_damaged(m, name, strlen(err.msg) > prefix ? err.msg + prefix : err.msg);
    }
    free(path);
    if (fd < 0)
        return;
    mt_profile p;
    memset(&p, 0, sizeof p);
    int got = read_one(m, fd, name, &p);
    const char *why = NULL;
    if (got && (memcmp(p.header.binary_hash, map->binary_hash, 32) != 0 ||
                p.header.ncounters != m->ncounters || p.header.ntimers != m->ntimers ||
                (m->ntimers && p.header.timers_id != map->timers_id) ||
                (p.header.version >= 3 && p.header.ncall_sites != m->ncall_sites)))
        m->nother++;
    else if (got && fn && p.header.trace_records && (why = read_trace_leftovers(fd, &p, fn, ctx)))
        skip_damaged(m, name, why);
    else if (got)
        add_profile(m, &p);
    close(fd);
    profile_free(&p);
}

int mt_profile_merge(const char *dir, const mt_counter_map *map, profile_merge *out, mt_error *err)
{
    return mt_profile_merge_traced(dir, map, NULL, NULL, out, err);
}

int mt_profile_merge_traced(const char *dir, const mt_counter_map *map, mt_trace_leftover_fn fn,
                            void *ctx, profile_merge *out, mt_error *err)
{
    memset(out, 0, sizeof *out);
    out->timer_bias = NAN;
    out->ncounters = map->ncounters;
    out->counts = mt_xcalloc((size_t)map->ncounters + 1, sizeof *out->counts);
    out->ntimers = map->ntimers;
    out->timers = mt_xcalloc((size_t)map->ntimers + 1, sizeof *out->timers);
    out->ncall_sites = map->ncall_sites;
    out->call_sites = mt_xcalloc((size_t)map->ncall_sites + 1, sizeof *out->call_sites);
    DIR *d = opendir(dir);
    if (!d) {
        mt_error_set(err, "%s: %s", dir, strerror(errno));
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d)))
        if (is_profile_name(e->d_name))
            merge_file(out, dir, e->d_name, map, fn, ctx);
    closedir(d);
    if (out->nprocesses > 0) {
        mt_counter_map_derive(map, out->counts);
        return 0;
    }
    char first[512] = ""; /* the first damaged file's name and why: the name is data */
    if (out->ndamaged)
        mt_escape_text(first, sizeof first, out->damaged[0]);
    mt_error_set(err,
                 "%s: no profile of this binary (%u of other binaries or builds, %u incomplete, "
                 "%u damaged%s%s)",
                 dir, out->nother, out->nincomplete, out->ndamaged, out->ndamaged ? ": " : "",
                 first);
    return -1;
}

void mt_profile_merge_free(profile_merge *m)
{
    free(m->counts);
    free(m->timers);
    for (uint32_t i = 0; m->call_sites && i < m->ncall_sites; i++)
        free(m->call_sites[i].targets);
    free(m->call_sites);
    for (uint32_t i = 0; i < m->ndamaged; i++)
        free(m->damaged[i]);
    free(m->damaged);
    m->damaged = NULL;
    m->ndamaged = 0;
    m->counts = NULL;
    m->timers = NULL;
    m->call_sites = NULL;
}
