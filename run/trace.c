/* run/trace.c — tracing (`mtool sim -- BIN ARGS`): the tracing copy of BIN
 * runs with one end of a SOCK_SEQPACKET socket ($MTOOL_TRACE_FD); each
 * message names one thread's frame of records in that thread's trace ring
 * (its profile file, which mtool maps: timer/timer.h), or carries the
 * records itself; a thread of mtool receives the frames, merges them with
 * the other threads' by their TSC stamps (sim/trace.c's merge) and feeds
 * them to the simulator while the program runs, so the simulation takes
 * the other core, then releases the ring's room.  When
 * the program has ended, the records each thread made after its last
 * frame, still in its profile slot, are merged too: the trace survives
 * exit, _exit, a fatal signal or SIGKILL.
 *
 * Why not an in-process simulator: the simulator costs 190-275 ns a
 * reference (docs/SIMULATOR.md, "Speed"), 10-15 with --misses-only, so the
 * program would run at the simulator's pace on one core; out of the
 * program it keeps away from the program's memory, threads and signals.
 * The socket says which frame is ready (in order, whole, however many
 * threads send) and when the last sender has gone; the rings carry the
 * records without the socket's copies. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

/* Records held for the merge: a thread's frame comes out in time however
 * many frames of the others were sent during it, up to 2^20 records (16
 * MiB) of them. */
#define MERGE_WINDOW (1u << 20)

/* A frame in a trace ring: its records, where they lie, and the ring to
 * release up to `end` once they are merged. */
typedef struct {
    mt_trace_record *records;
    mt_trace_ring *ring;
    uint64_t end;
} ring_records;

/* A trace ring mapped: the one at byte `at` of the profile file `path`. */
typedef struct {
    char *path;
    uint64_t at;
    mt_trace_ring *ring;
} ring_map;

typedef struct {
    int fd;
    const char *profiles;      /* the run's profile directory */
    mt_trace_feed *feed;
    mt_trace_merge *merge;
    mt_stall_streams *streams; /* NULL: not tracked */
    ring_map *rings;
    size_t nrings, cap_rings;
    uint64_t frames, ring_frames, damaged_frames;
    uint64_t leftover;         /* records read from the profiles after the program */
} consumer;

/* Records of one thread to the simulator (and the streams' tracker), in
 * the merge's order. */
static void consume_records(void *ctx, int32_t tid, const mt_trace_record *records, uint32_t n)
{
    consumer *c = ctx;
    mt_trace_feed_records(c->feed, tid, records, n);
    if (c->streams)
        mt_stall_streams_add(c->streams, records, n);
}

/* Whether `path` names a file of the run's profile directory: the only
 * files whose rings mtool maps (and writes the tail of), whatever a
 * message says. */
static bool in_profiles(const consumer *c, const char *path)
{
    size_t n = strlen(c->profiles);
    return !strncmp(path, c->profiles, n) && path[n] == '/' && path[n + 1] &&
           !strchr(path + n + 1, '/');
}

/* The ring at byte `at` of the profile `path`, mapped once: NULL when it
 * cannot be (not a file this run's programs write, or too short). */
static mt_trace_ring *ring_of(consumer *c, const char *path, uint64_t at)
{
    for (size_t i = 0; i < c->nrings; i++)
        if (c->rings[i].at == at && !strcmp(c->rings[i].path, path))
            return c->rings[i].ring;
    struct stat st;
    int fd = at % 4096 || !in_profiles(c, path) ? -1 : open(path, O_RDWR | O_CLOEXEC);
    void *p = MAP_FAILED;
    if (fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_size >= at + MT_TRACE_RING_SIZE)
        p = mmap(NULL, MT_TRACE_RING_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)at);
    if (fd >= 0)
        close(fd);
    if (p == MAP_FAILED)
        return NULL;
    ring_map r = {mt_xstrdup(path), at, p};
    MT_PUSH(c->rings, c->nrings, c->cap_rings, r);
    return p;
}

static void unmap_rings(consumer *c)
{
    for (size_t i = 0; i < c->nrings; i++) {
        munmap(c->rings[i].ring, MT_TRACE_RING_SIZE);
        free(c->rings[i].path);
    }
    free(c->rings);
}

/* Up to `end` of ring g is mtool's no longer: its thread may write there
 * (timer.h, "The trace ring").  The tail is stored before `waiting` is
 * read, as the thread says it waits before it reads the tail. */
static void ring_release(mt_trace_ring *g, uint64_t end)
{
    __atomic_store_n(&g->tail, end, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&g->released, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&g->waiting, __ATOMIC_SEQ_CST) &&
        end >= __atomic_load_n(&g->wake_at, __ATOMIC_RELAXED))
        syscall(SYS_futex, &g->released, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

/* Where the frame a message names in a ring lies (its `len` bytes: the
 * frame header in f, the rest in body): false when damaged. */
static bool ring_frame(consumer *c, const mt_trace_frame *f, const uint8_t *body, size_t len,
                       ring_records *q)
{
    const size_t head = sizeof(mt_trace_ring_frame) - sizeof *f; /* `at` and `ring` */
    if (len <= sizeof *f + head || body[len - sizeof *f - 1] != '\0')
        return false;
    uint64_t at, ring, bytes = (uint64_t)f->nrecords * sizeof(mt_trace_record);
    memcpy(&at, body, 8);
    memcpy(&ring, body + 8, 8);
    if (at % MT_TRACE_RING_BYTES + bytes > MT_TRACE_RING_BYTES)
        return false;
    mt_trace_ring *g = ring_of(c, (const char *)body + head, ring);
    if (!g)
        return false;
    *q = (ring_records){
        (mt_trace_record *)((uint8_t *)g + MT_TRACE_RING_DATA + at % MT_TRACE_RING_BYTES), g,
        at + bytes};
    return true;
}

/* Reads frames until every sender has closed its end, merges and
 * simulates them.  One thread receives and simulates: a frame in a ring
 * (timer.h) is lent to the merge where it lies, and released once merged;
 * a frame in its message is received into a block the merge takes as it
 * is, not into one buffer it would copy them from (callgrind, `mtool sim
 * --misses-only --cachegrind -- phases-gcc-O2 400`, 5.06 M records: memcpy
 * 83.2 -> 0.1 million instructions).  Why not a thread receiving and
 * another simulating, as before 28 November: with the records in rings
 * the messages are small, and the queue between the two threads cost a
 * mutex and condition variables a frame, a context switch and a wake of
 * the other vCPU whenever either waited.  `gzip -9` on 2 MB, `mtool sim
 * --misses-only --cachegrind` (Xeon family 6 model 85, 2-vCPU guest,
 * load about 1), 4 rounds interleaved with Cachegrind: 3.74-4.58 s ->
 * 3.12-3.56 s wall (Cachegrind 7.25-10.42 s), involuntary context
 * switches 3700-12000 -> 60-150 a run, futex calls 26,000-64,000 ->
 * 1,800-2,800 (perf stat). */
static void *consume_frames(void *arg)
{
    consumer *c = arg;
    mt_trace_frame f;
    mt_trace_record *records = NULL;
    for (;;) {
        if (!records)
            records = mt_xmalloc(MT_TRACE_RECORDS * sizeof *records);
        struct iovec iov[2] = {{&f, sizeof f}, {records, MT_TRACE_RECORDS * sizeof *records}};
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
        ssize_t n = recvmsg(c->fd, &msg, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        ring_records q;
        if ((size_t)n >= sizeof f && f.magic == MT_TRACE_RING_MAGIC &&
            f.nrecords <= MT_TRACE_RECORDS && ring_frame(c, &f, (uint8_t *)records, (size_t)n, &q)) {
            c->frames++;
            c->ring_frames++;
            mt_trace_merge_lend(c->merge, f.tid, q.records, f.nrecords);
            ring_release(q.ring, q.end);
            continue;
        }
        if ((size_t)n < sizeof f || f.magic != MT_TRACE_FRAME_MAGIC ||
            f.nrecords > MT_TRACE_RECORDS || (size_t)n != sizeof f + f.nrecords * sizeof *records) {
            c->damaged_frames++;
            continue;
        }
        c->frames++;
        if (f.nrecords <= MT_TRACE_SHARED_RECORDS) /* a thread's among several: the
                                                      window holds a thousand */
            records = mt_xrealloc(records, f.nrecords * sizeof *records);
        mt_trace_merge_take(c->merge, f.tid, records, f.nrecords);
        records = NULL;
    }
    free(records);
    return NULL;
}

static uint32_t data_object_of(void *map, int32_t tid, const mt_trace_record *r)
{
    return mt_data_map_observe(map, tid, r);
}

static void feed_leftover(void *ctx, int32_t tid, const mt_trace_record *records, uint32_t n)
{
    consumer *c = ctx;
    c->leftover += n;
    mt_trace_merge_frame(c->merge, tid, records, n);
}

/* $MTOOL_TRACE_FILTER for the program (timer.h's filter): on when the
 * simulator's rule allows it and nothing else reads every reference (the
 * stall estimate's streams); mtool's own $MTOOL_TRACE_FILTER (`how`) says `0`, no
 * filter, or `all`, every frame the rule allows, not only while mtool is
 * behind (docs/SIMULATOR.md, "Counted in the program").  Set for every
 * traced run, off as a parent 0, its fields of fixed width, last in the
 * environment: the program's stack is then laid out the same whatever the
 * simulator, as the tests that compare two simulators' misses at the same
 * addresses need. */
static void set_program_filter(mt_sim *s, const consumer *c, const char *how)
{
    unsigned shift = 0;
    uint32_t sets = 0;
    bool on = !(how && !strcmp(how, "0")) && !c->streams &&
              mt_sim_program_filter(s, &shift, &sets);
    char v[64];
    snprintf(v, sizeof v, "%010ld:%02u:%010u:%d", on ? (long)getpid() : 0l, on ? shift : 0,
             on ? sets : 0, on && how && !strcmp(how, "all"));
    unsetenv("MTOOL_TRACE_FILTER"); /* last in the environment, whatever mtool's had */
    setenv("MTOOL_TRACE_FILTER", v, 1);
}

/* mtool's own $MTOOL_TRACE_FILTER again (NULL: none). */
static void restore_filter(const char *asked)
{
    if (asked)
        setenv("MTOOL_TRACE_FILTER", asked, 1);
    else
        unsetenv("MTOOL_TRACE_FILTER");
}

/* Runs the copy with the socket's sending end as $MTOOL_TRACE_FD while a
 * thread consumes; the end is closed here once the program has ended, so
 * the consumer sees the end of the stream when the program's own copies
 * are closed too. */
static int run_traced(const mt_trace_options *o, char **argv, mt_trace_result *r,
                      const char *profiles, consumer *c, mt_error *err)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        mt_error_set(err, "cannot create the trace socket: %s", strerror(errno));
        return -1;
    }
    /* Only the program's end is inherited. */
    fcntl(sv[1], F_SETFD, 0);
    int buf = 4 << 20;
    setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    /* The program's end: a SEQPACKET socketpair's sender blocks when its
     * send buffer is full (the default, 208 KiB, held 3 frames of 1023 records), so with
     * the consumer the slower side the program slept and woke every frame
     * or so; 4 MiB asked (the kernel doubles it, within net.core.wmem_max:
     * up to 8 MiB of frames) lets it run ahead.  `mtool sim --misses-only --cachegrind --
     * phases-gcc-O2 4000`, voluntary context switches of mtool and the
     * program: 4900-5700 -> 500-4600, median 5300 -> 2200, 8 runs each
     * interleaved (Xeon family 6 model 207, load 7 on 2 vCPUs). */
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    char fd[16];
    snprintf(fd, sizeof fd, "%d", sv[1]);
    setenv("MTOOL_TRACE_FD", fd, 1);
    const char *filter = getenv("MTOOL_TRACE_FILTER");
    char *asked = filter ? mt_xstrdup(filter) : NULL; /* set_program_filter replaces it */
    set_program_filter(o->sim, c, asked);
    c->fd = sv[0];
    c->profiles = profiles;
    pthread_t consumer_thread;
    int rc = pthread_create(&consumer_thread, NULL, consume_frames, c);
    if (rc != 0) {
        mt_error_set(err, "cannot start the trace reader: %s", strerror(rc));
        close(sv[0]);
        close(sv[1]);
        unsetenv("MTOOL_TRACE_FD");
        restore_filter(asked);
        free(asked);
        return -1;
    }
    rc = mt_run_program_unclocked(r->ins.path, argv, profiles, r->libs.env, &r->run, err);
    unsetenv("MTOOL_TRACE_FD");
    restore_filter(asked);
    free(asked);
    close(sv[1]);
    pthread_join(consumer_thread, NULL);
    unmap_rings(c);
    close(sv[0]);
    r->frames = c->frames;
    r->ring_frames = c->ring_frames;
    if (c->damaged_frames && o->log)
        fprintf(o->log, "mtool: warning: %llu damaged trace frames skipped\n",
                (unsigned long long)c->damaged_frames);
    return rc;
}

/* A fresh profile directory for the run, removed with its files after. */
static char *profile_dir(mt_error *err)
{
    const char *tmp = getenv("TMPDIR");
    char *dir = mt_xasprintf("%s/mtool-trace-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        mt_error_set(err, "%s: cannot create a profile directory: %s", dir, strerror(errno));
        free(dir);
        return NULL;
    }
    return dir;
}

static void remove_dir(const char *dir)
{
    mt_error ignored;
    mt_clear_profiles(dir, &ignored);
    rmdir(dir);
}

/* What `mtool sim RUNDIR` traces of prog, the executable (lib NULL) or a
 * library: pass 2's objects in it and every procedure they call (their
 * time is the objects'), as objects of its tracing copy. */
static mt_timed_object *objects_and_callees(const mt_program *prog, const mt_pass1_library *lib,
                                            const mt_pass2_record *p2, uint32_t *n)
{
    bool *called = mt_xcalloc(prog->nprocs + 1, sizeof *called);
    for (size_t i = 0; i < p2->nobjects; i++) {
        if (p2->objects[i].lib != lib)
            continue;
        const mt_timed_object *t = &p2->objects[i].object;
        const mt_procedure *p = &prog->procs[t->proc];
        bool *in = mt_xcalloc(p->nblocks + 1, sizeof *in);
        mt_object_blocks(p, t->loop, t->region, t->region_first, t->region_end, in);
        mt_blocks_callees(prog, t->proc, in, called);
        free(in);
    }
    mt_timed_object *list = mt_xcalloc(p2->nobjects + prog->nprocs + 1, sizeof *list);
    *n = 0;
    for (size_t i = 0; i < p2->nobjects; i++)
        if (p2->objects[i].lib == lib)
            list[(*n)++] = p2->objects[i].object;
    for (uint32_t q = 0; q < prog->nprocs; q++)
        if (called[q])
            list[(*n)++] = (mt_timed_object){.proc = q, .loop = MT_NONE};
    free(called);
    return list;
}

/* independent[c]: code object c of `prog` (the trace's code_base + c) is a
 * loop that chases no pointer (a procedure's own code is not judged). */
static int mark_independent(const mt_machine *m, const mt_program *prog, uint32_t code_base,
                            bool *independent, mt_error *err)
{
    bool *chases = mt_chasing_loops(m, prog, err);
    if (!chases)
        return -1;
    uint32_t loops = mt_code_object_loops(prog, 0), ncodes = mt_code_object_loops(prog, prog->nprocs);
    for (uint32_t c = loops; c <= ncodes; c++)
        independent[code_base + c] = !chases[c];
    free(chases);
    return 0;
}

/* The streams' tracker of the executable's and its traced libraries' code objects. */
static int track_streams(mt_trace_result *r, mt_error *err)
{
    uint32_t ncodes = mt_trace_libraries_number(&r->libs,
                                                mt_code_object_loops(r->prog, r->prog->nprocs));
    bool *independent = mt_xcalloc(ncodes + 1, sizeof *independent);
    int rc = mark_independent(&r->machine, r->prog, 0, independent, err);
    for (size_t i = 0; rc == 0 && i < r->libs.nlibs; i++) {
        const mt_pass1_library *lib = &r->libs.libs[i];
        if (!lib->note)
            rc = mark_independent(&r->machine, lib->prog, lib->code_base, independent, err);
    }
    if (rc == 0)
        r->streams = mt_stall_streams_new(ncodes, independent);
    free(independent);
    return rc;
}

/* The program to trace and what of it: BIN ARGS as given, or a run
 * directory's pass 1, the libraries it counted and the objects its pass 2
 * timed (*traced, the executable's, malloc'd; none with o->all:
 * everything). */
static int program_to_trace(const mt_trace_options *o, mt_trace_result *r, char ***argv,
                            mt_timed_object **traced, uint32_t *ntraced, mt_error *err)
{
    *argv = o->argv;
    *traced = NULL;
    *ntraced = 0;
    if (o->rundir && (mt_rundir_read_pass1(o->rundir, &r->pass1, err) != 0 ||
                      mt_rundir_check_binary(&r->pass1, err) != 0))
        return -1;
    if (o->rundir)
        *argv = r->pass1.argv;
    mt_analyze_options opt;
    mt_analyze_options_init(&opt);
    if (!(r->prog = mt_analyze((*argv)[0], &opt, err)))
        return -1;
    if (!o->rundir)
        return 0;
    uint64_t *counts = NULL; /* pass 2's view: its calls through pointers included */
    bool calibrated;
    int rc = mt_rundir_refine(o->rundir, r->prog, &counts, err) != 0 ||
                     mt_pass2_libraries_prepare(o->rundir, (*argv)[0], &r->libs, err) != 0 ||
                     mt_rundir_read_pass2(o->rundir, r->prog, &r->libs, &r->pass2, err) != 0 ||
                     mt_run_load_machine(&r->machine, &calibrated, o->log, err) != 0 ||
                     (!(r->machine.mem_latency[0].cycles > 0 &&
                        r->machine.mem_latency[0].stream_cycles > 0 &&
                        r->machine.tlb_walk_cycles > 0) &&
                      mt_run_measure_latencies(&r->machine, o->log, err) != 0) ||
                     mt_stall_latencies_of(o->sim, &r->machine, &r->latencies, err) != 0
                 ? -1 : 0;
    free(counts);
    if (rc == 0)
        rc = track_streams(r, err);
    if (rc == 0 && !o->all)
        *traced = objects_and_callees(r->prog, NULL, &r->pass2, ntraced);
    return rc;
}

/* What dlopen maps that is no copy, written by the audit library. */
static char *seen_file(const char *profiles) { return mt_xasprintf("%s/dlopened.txt", profiles); }

/* The libraries' tracing copies: of a run directory's pass-2 objects in
 * each and their callees (none: not traced), or whole. */
static void trace_libraries(const mt_trace_options *o, mt_trace_result *r, const mt_counter_map *map)
{
    size_t n = r->libs.nlibs;
    bool selected = o->rundir && !o->all;
    mt_timed_object **traced = selected ? mt_xcalloc(n + 1, sizeof *traced) : NULL;
    uint32_t *ntraced = selected ? mt_xcalloc(n + 1, sizeof *ntraced) : NULL;
    for (size_t i = 0; selected && i < n; i++)
        if (!r->libs.libs[i].note)
            traced[i] = objects_and_callees(r->libs.libs[i].prog, &r->libs.libs[i], &r->pass2,
                                            &ntraced[i]);
    mt_trace_libraries_copy(&r->libs, (const mt_timed_object *const *)traced, ntraced,
                            map->ncounters, map->ncall_sites, o->log);
    for (size_t i = 0; selected && i < n; i++)
        free(traced[i]);
    free(traced);
    free(ntraced);
}

/* BIN's tracing copy, with the shared libraries o->libs names (without
 * it every library, glibc's included; a run directory's: the ones its pass
 * 1 counted) traced in one set with it, as count counts them: their copies,
 * and the environment that loads them (docs/SIMULATOR.md, "Libraries"). */
static int instrument_traced(const mt_trace_options *o, mt_trace_result *r, char **argv,
                             const mt_timed_object *traced, uint32_t ntraced,
                             const char *profiles, mt_counter_map *map, mt_error *err)
{
    if (!o->rundir &&
        mt_pass1_libraries_prepare(argv[0], o->libs ? o->libs : "all", !o->libs, &r->libs, o->log,
                                   err) != 0)
        return -1;
    if (!o->rundir)
        mt_trace_libraries_number(&r->libs, mt_code_object_loops(r->prog, r->prog->nprocs));
    if (!r->libs.set)
        return mt_instrument_cached(r->prog, argv[0], traced, ntraced, true, &r->ins, err) != 0 ||
                       mt_counter_map_read(r->ins.path, map, err) != 0
                   ? -1 : 0;
    mt_rewrite_options member = {.counter_base = r->libs.ncounters, .libs_set = r->libs.set,
                                 .call_site_base = r->libs.ncall_sites, .trace = true,
                                 .traced = traced, .ntraced = ntraced};
    if (mt_instrument_in_set(r->prog, argv[0], &member, &r->ins, err) != 0 ||
        mt_counter_map_read(r->ins.path, map, err) != 0)
        return -1;
    trace_libraries(o, r, map);
    char *seen = seen_file(profiles);
    int rc = mt_pass1_libraries_env(&r->libs, argv[0], r->ins.path, seen, err);
    free(seen);
    return rc;
}

/* The libraries the run opened with dlopen that were no copies: joined to
 * the list, untraced, and remembered, so that the next run of BIN traces
 * them (as count counts them from its next count). */
static void libraries_seen(mt_trace_result *r, const char *bin, const char *profiles, FILE *log)
{
    char *seen = seen_file(profiles);
    mt_error err;
    size_t known = r->libs.nlibs;
    if (r->libs.set && mt_pass1_libraries_seen(&r->libs, bin, seen, &err) != 0 && log)
        fprintf(log, "mtool: warning: %s\n", err.msg);
    for (size_t i = known; log && i < r->libs.nlibs; i++) {
        char name[512];
        mt_escape_text(name, sizeof name, r->libs.libs[i].name);
        fprintf(log, "mtool: %s: opened by dlopen, not known before the run: not traced (traced "
                     "from the next run of this program)\n", name);
    }
    unlink(seen);
    free(seen);
}

int mt_run_trace(const mt_trace_options *o, mt_trace_result *r, mt_error *err)
{
    memset(r, 0, sizeof *r);
    mt_trace_order order = MT_TRACE_BY_STAMPS;
    const char *by = getenv("MTOOL_TRACE_ORDER");
    if (by && mt_trace_order_of(by, &order) != 0) {
        mt_error_set(err, "$MTOOL_TRACE_ORDER: expected stamps, frames or arrival");
        return -1;
    }
    char **argv;
    mt_timed_object *traced;
    uint32_t ntraced;
    mt_counter_map map = {0};
    if (program_to_trace(o, r, &argv, &traced, &ntraced, err) != 0) {
        free(traced);
        return -1;
    }
    char *profiles = profile_dir(err);
    int rc = profiles ? instrument_traced(o, r, argv, traced, ntraced, profiles, &map, err) : -1;
    free(traced);
    /* A misses-only simulator tallies no data object: no map, and no
     * lookup a record (the feed gives every reference data object 0). */
    bool data_objects = !mt_sim_is_misses_only(o->sim);
    if (rc == 0 && data_objects && !(r->data = mt_data_map_new(r->prog, o->log, err)))
        rc = -1;
    for (size_t i = 0; rc == 0 && r->data && i < r->libs.nlibs; i++) {
        const mt_pass1_library *lib = &r->libs.libs[i];
        if (!lib->note && lib->code_base) /* traced: its frames and sites named LIB:PROC */
            mt_data_map_add_library(r->data, lib->name, lib->prog, lib->code_base,
                                    lib->counter_base, o->log);
    }
    if (rc != 0) {
        mt_counter_map_free(&map);
        if (profiles)
            remove_dir(profiles);
        free(profiles);
        return -1;
    }
    consumer c = {.fd = -1, .feed = mt_trace_feed_new(o->sim), .streams = r->streams};
    c.merge = mt_trace_merge_new(order, MERGE_WINDOW, consume_records, &c);
    if (data_objects)
        mt_trace_feed_set_data(c.feed, data_object_of, r->data);
    profile_merge merge;
    rc = run_traced(o, argv, r, profiles, &c, err);
    if (rc == 0 && mt_profile_merge_traced(profiles, &map, feed_leftover, &c, &merge, err) == 0) {
        rn_warn_damaged_profiles(o->log, profiles, &merge);
        mt_profile_merge_free(&merge);
    } else if (rc == 0 && o->log) { /* killed before its profile had a header: nothing left */
        fprintf(o->log, "mtool: warning: %s\n", err->msg);
    }
    libraries_seen(r, argv[0], profiles, o->log);
    mt_trace_merge_drain(c.merge);
    mt_trace_merge_free(c.merge);
    r->leftover = c.leftover;
    r->counts = *mt_trace_feed_counts_of(c.feed);
    mt_trace_feed_free(c.feed);
    mt_counter_map_free(&map);
    remove_dir(profiles);
    free(profiles);
    return rc;
}

void mt_trace_stalls(const mt_trace_result *r, mt_sim *s, mt_stall *per_object,
                     mt_stall *outside, mt_stall_agreement *agreement)
{
    size_t n = r->pass2.nobjects;
    mt_timed_object *objs = mt_xcalloc(n + 1, sizeof *objs);
    double *measured = mt_xcalloc(n + 1, sizeof *measured);
    double *estimate = mt_xcalloc(n + 1, sizeof *estimate);
    size_t nexe = 0; /* the executable's objects, in objs */
    for (size_t i = 0; i < n; i++) {
        const mt_pass2_object *p = &r->pass2.objects[i];
        memset(&per_object[i], 0, sizeof per_object[i]);
        if (!p->lib) {
            objs[nexe++] = p->object;
            mt_stall_of_object(s, r->streams, &r->latencies, r->prog, 0, &p->object,
                               &per_object[i]);
        } else if (p->lib->code_base) { /* traced: its code objects follow the executable's */
            mt_stall_of_object(s, r->streams, &r->latencies, p->lib->prog, p->lib->code_base,
                               &p->object, &per_object[i]);
        }
        measured[i] = 100 * (p->measured - p->predicted) / p->predicted;
        estimate[i] = 100 * per_object[i].estimate / p->predicted;
    }
    mt_stall_outside(s, r->streams, &r->latencies, r->prog, objs, nexe, outside);
    mt_stall_agree(measured, estimate, n, agreement);
    free(estimate);
    free(measured);
    free(objs);
}

void mt_trace_result_free(mt_trace_result *r)
{
    mt_stall_streams_free(r->streams);
    mt_pass2_record_free(&r->pass2);
    mt_pass1_free(&r->pass1);
    mt_instrumented_free(&r->ins);
    mt_program_free(r->prog);
    mt_data_map_free(r->data);
    mt_pass1_libraries_free(&r->libs);
    memset(r, 0, sizeof *r);
}
