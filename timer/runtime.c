/* timer/runtime.c — the runtime inside instrumented programs (contract in
 * timer.h).
 *
 * Freestanding: no libc (in a static program nothing of libc is set up when
 * the entry runs, and the runtime must never disturb the program's errno,
 * stdio buffers or allocator), raw system calls, position-independent code
 * with no relocations (the Makefile checks).
 *
 * Start-up (mt_runtime_init, called by entry.S): create this process's
 * profile file, map its header and slot 0 MAP_SHARED, close the file, point
 * %gs at slot 0, write the entry jumps into the original code, return the
 * original entry.  Counts then live in the page cache of a file, so they are
 * complete however the process ends — exit, _exit, abort, a fatal signal,
 * SIGKILL or exec — with nothing to flush, no signal handler, no atexit.
 *
 * Threads get their own slot through the wrappers below before they run any
 * instrumented code (the slot of a thread that has exited is reused, see
 * reuse_slot); a fork child gets its own file. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "timer.h"

#define HIDDEN __attribute__((visibility("hidden")))
#define PAGE 4096ul

/* ---- system calls ---------------------------------------------------- */

enum {
    SYS_WRITE = 1, SYS_OPEN = 2, SYS_CLOSE = 3, SYS_POLL = 7, SYS_MMAP = 9, SYS_MPROTECT = 10,
    SYS_MUNMAP = 11, SYS_RT_SIGPROCMASK = 14, SYS_PREAD64 = 17, SYS_MADVISE = 28,
    SYS_GETPID = 39, SYS_SENDMSG = 46, SYS_KILL = 62, SYS_FTRUNCATE = 77, SYS_GETCWD = 79, SYS_MKDIR = 83, SYS_UNLINK = 87,
    SYS_READLINK = 89, SYS_GETPPID = 110, SYS_ARCH_PRCTL = 158, SYS_GETTID = 186,
    SYS_FUTEX = 202, SYS_CLOCK_GETTIME = 228, SYS_TGKILL = 234, SYS_PROCESS_VM_READV = 310,
};
enum { O_RDONLY_ = 0, O_RDWR_ = 02, O_CREAT_ = 0100, O_EXCL_ = 0200, O_CLOEXEC_ = 02000000 };
enum { PROT_READ_ = 1, PROT_WRITE_ = 2, MAP_SHARED_ = 1, MAP_PRIVATE_ = 2, MAP_FIXED_ = 0x10,
       MAP_ANONYMOUS_ = 0x20 };
enum { MADV_RANDOM_ = 1 };
enum { ARCH_SET_GS = 0x1001, ARCH_GET_FS = 0x1003, ARCH_GET_GS = 0x1004, CLOCK_REALTIME_ = 0 };
enum { ESRCH_ = 3, ENOENT_ = 2, EEXIST_ = 17, EINTR_ = 4, EPIPE_ = 32, ETIMEDOUT_ = 110 };
enum { FUTEX_WAIT_ = 0, SIG_SETMASK_ = 2, POLLERR_ = 8, POLLHUP_ = 16 };
enum { MSG_NOSIGNAL_ = 0x4000 };
/* The kernel's struct iovec and struct msghdr (x86-64). */
typedef struct {
    const void *base;
    uint64_t len;
} iovec_;
typedef struct {
    void *name;
    uint32_t namelen;
    const iovec_ *iov;
    uint64_t iovlen;
    void *control;
    uint64_t controllen;
    int32_t flags;
} msghdr_;

static long syscall6(long n, long a, long b, long c, long d, long e, long f)
{
    register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}

static long sys3(long n, long a, long b, long c) { return syscall6(n, a, b, c, 0, 0, 0); }
static bool failed(long ret) { return ret < 0 && ret > -4096; }

/* The mapping's address, or -errno. */
static long map_raw(void *addr, size_t len, int flags, long fd, uint64_t off)
{
    return syscall6(SYS_MMAP, (long)addr, (long)len, PROT_READ_ | PROT_WRITE_, flags, fd, (long)off);
}

/* Maps `len` bytes of the profile file at `off`.  Without MADV_RANDOM, the
 * first touch of a counter page makes the kernel read ahead (zero, since
 * the file is sparse) up to hundreds of kilobytes of the file into the
 * page cache: most of a short process's start-up cost (git --version: 7 ms
 * of system time, Xeon family 6 model 207).  Each touched page is one
 * fault either way. */
static long map_file(void *addr, size_t len, int flags, long fd, uint64_t off)
{
    long r = map_raw(addr, len, flags, fd, off);
    if (!failed(r))
        sys3(SYS_MADVISE, r, (long)len, MADV_RANDOM_);
    return r;
}

static void *map(void *addr, size_t len, int flags, int fd, uint64_t off)
{
    long r = map_raw(addr, len, flags, fd, off);
    return failed(r) ? NULL : (void *)r;
}

/* ---- small string helpers (no libc) ------------------------------------ */

static size_t str_len(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

/* Appends `s` to buf (capacity cap, NUL-terminated), truncating. */
static void append(char *buf, size_t cap, const char *s)
{
    size_t n = str_len(buf);
    while (*s && n + 1 < cap)
        buf[n++] = *s++;
    buf[n] = '\0';
}

static void append_u64(char *buf, size_t cap, uint64_t v, int base, int min_digits)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v % (uint64_t)base];
        v /= (uint64_t)base;
    } while (v || n < min_digits);
    char out[24];
    for (int i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    out[n] = '\0';
    append(buf, cap, out);
}

static bool same_bytes(const void *a, const void *b, size_t n)
{
    const uint8_t *x = a, *y = b;
    while (n--)
        if (*x++ != *y++)
            return false;
    return true;
}

static void copy_bytes(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    while (n--)
        *d++ = *s++;
}

/* ---- state ------------------------------------------------------------- */

/* Filled in the file by the rewriter. */
HIDDEN __attribute__((section(".mt_params"), used)) mt_rt_params mt_params;
extern const char mt_blob_start[] HIDDEN;

/* Slots of this process whose mapping is remembered for reuse (see
 * reuse_slot); later ones are never reused. */
#define MAX_TRACKED 4096u

static struct {
    uintptr_t bias;                 /* run-time minus link-time addresses */
    mt_profile_header *hdr;         /* header page of the profile (file or anonymous) */
    bool in_file;                   /* false: counts go to anonymous memory */
    bool said;                      /* the one line about lost counts is written */
    uint64_t slot_size;
    char dir[MT_RT_DIR_MAX];        /* absolute output directory */
    char path[MT_RT_DIR_MAX + MT_RT_NAME_MAX + 64];
    volatile int grow_lock;         /* serializes growing the file */
    const uint8_t *random;          /* AT_RANDOM: 16 bytes from the kernel */
    uint32_t scan;                  /* where the search for a reusable slot resumes */
    mt_slot_header *slots[MAX_TRACKED]; /* by index, NULL until mapped */
    uint64_t timer_bias;            /* mt_profile_header.timer_bias, once measured */
    uintptr_t wrap_callee[MT_RT_WRAP_COUNT]; /* run-time address each wrapper calls */
    long trace_fd;                  /* $MTOOL_TRACE_FD, or -1: full frames are dropped */
    bool no_ring;                   /* $MTOOL_TRACE_RING=0: frames in their messages */
    unsigned filter_shift;          /* $MTOOL_TRACE_FILTER's line shift; 0: no filter */
    bool filter_always;             /* ... every frame, not only while mtool is behind */
    uint64_t filter_mask;           /* its partitions (timer.h) - 1 */
    uint64_t filter_lines[MT_TRACE_FILTER_LINES]; /* per partition: its last line + 1 */
} rt;

/* The real syscall() (rt.wrap_callee's), for entry.S's wrapper of it. */
HIDDEN uintptr_t mt_real_syscall;

/* In a library copy's blob, whose runtime never starts: the run-time
 * address of the executable's blob, whose runtime serves this copy's
 * wrappers (SERVING); written by that runtime when it activates the copy,
 * before any of the copy's relocated code can run.  0 in the executable. */
static uintptr_t serving_blob;

/* One line on stderr: the program's own output is never touched otherwise. */
static void say(const char *msg)
{
    char line[MT_RT_DIR_MAX + 512];
    line[0] = '\0';
    append(line, sizeof line, "mtool: ");
    append(line, sizeof line, msg);
    append(line, sizeof line, "\n");
    sys3(SYS_WRITE, 2, (long)line, (long)str_len(line));
}

/* strerror for what creating, sizing and mapping a file can meet. */
static const char *reason(long err)
{
    switch (-err) {
    case 1: return "Operation not permitted";
    case 2: return "No such file or directory";
    case 5: return "Input/output error";
    case 12: return "Cannot allocate memory";
    case 13: return "Permission denied";
    case 17: return "no unused file name";
    case 20: return "Not a directory";
    case 21: return "Is a directory";
    case 23: case 24: return "Too many open files";
    case 27: return "File too large";
    case 28: return "No space left on device";
    case 30: return "Read-only file system";
    case 36: return "File name too long";
    case 40: return "Too many levels of symbolic links";
    case 122: return "Disk quota exceeded";
    default: return NULL;
    }
}

/* "cannot write profile to DIR: [STEP: ]REASON; LOST", at most once per
 * process: a program whose every thread fails says it once. */
static void say_lost(const char *step, long err, const char *lost)
{
    if (rt.said)
        return;
    rt.said = true;
    char msg[MT_RT_DIR_MAX + 256];
    msg[0] = '\0';
    append(msg, sizeof msg, "cannot write profile to ");
    append(msg, sizeof msg, rt.dir);
    append(msg, sizeof msg, ": ");
    if (step) {
        append(msg, sizeof msg, step);
        append(msg, sizeof msg, ": ");
    }
    const char *r = reason(err);
    if (r) {
        append(msg, sizeof msg, r);
    } else {
        append(msg, sizeof msg, "error ");
        append_u64(msg, sizeof msg, (uint64_t)-err, 10, 1);
    }
    append(msg, sizeof msg, "; ");
    append(msg, sizeof msg, lost);
    say(msg);
}

static void lock(volatile int *l)
{
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
        __builtin_ia32_pause();
}

static void unlock(volatile int *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }

static uint64_t slot_offset(uint32_t index)
{
    return MT_PROFILE_HEADER_SIZE + (uint64_t)index * rt.slot_size;
}

static void set_gs(void *slot) { sys3(SYS_ARCH_PRCTL, ARCH_SET_GS, (long)slot, 0); }

static uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
}

/* The TSC once the instructions before have finished (lfence: rdtsc alone
 * may read it while a chain before it still runs). */
static uint64_t rdtsc_ordered(void)
{
    uint32_t lo, hi;
    __asm__ volatile("lfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory");
    return (uint64_t)hi << 32 | lo;
}

/* ---- pass-2 timers: slot state and the rare paths of probes.S ------------- */

static mt_timer_frame *timer_frame(mt_slot_header *s, uint64_t offset)
{
    return (mt_timer_frame *)((uintptr_t)s + offset);
}

static mt_timer_record *timer_record(mt_slot_header *s, uint64_t offset)
{
    return (mt_timer_record *)((uintptr_t)s + offset);
}

/* ---- traced references (mtool sim -- BIN; timer.h, "Traced loads") ---- */

static uint8_t *trace_area(mt_slot_header *s)
{
    return (uint8_t *)s +
           MT_SLOT_TRACE_OFFSET(mt_params.ncounters, mt_params.ntimers, mt_params.ncall_sites);
}

/* The records of slot s's frame: the area's last `capacity` (timer.h). */
static uint64_t *frame_capacity(mt_slot_header *s)
{
    return (uint64_t *)(trace_area(s) + MT_TRACE_CAPACITY);
}

static mt_trace_record *frame_stamp(mt_slot_header *s)
{
    return (mt_trace_record *)(trace_area(s) + MT_TRACE_RECORDS_AT) +
           (mt_params.trace_records - *frame_capacity(s));
}

/* The index of an empty frame, its STAMP alone. */
static int64_t empty_frame(mt_slot_header *s) { return -2 * (int64_t)(*frame_capacity(s) - 1); }

/* Set by the wrappers that create threads, before the creation: the
 * frames are short from then on (timer.h), the creator's next one too. */
static bool several_threads;

/* An empty trace frame (its earlier records, if any, were sent) but for
 * its STAMP, the time the next records come after (timer.h). */
static void trace_reset(mt_slot_header *s)
{
    if (!mt_params.trace_records)
        return;
    bool shared = several_threads || __atomic_load_n(&rt.hdr->nthreads, __ATOMIC_RELAXED) > 1;
    *frame_capacity(s) = shared && MT_TRACE_SHARED_RECORDS < mt_params.trace_records
                             ? MT_TRACE_SHARED_RECORDS
                             : mt_params.trace_records;
    *frame_stamp(s) = (mt_trace_record){.addr = rdtsc(), .kind = MT_TRACE_STAMP};
    *(int64_t *)(trace_area(s) + MT_TRACE_INDEX) = empty_frame(s);
}

/* The slot's trace ring (timer.h), NULL when the slot is not the file's. */
static mt_trace_ring *trace_ring(mt_slot_header *s)
{
    return s->file_slot && !rt.no_ring ? (mt_trace_ring *)((uint8_t *)s +
                                            MT_SLOT_RING_OFFSET(mt_params.ncounters,
                                                                mt_params.ntimers,
                                                                mt_params.ncall_sites,
                                                                mt_params.trace_records))
                        : NULL;
}

/* n bytes, as one `rep movsb` (a frame is up to 128 KiB: copy_bytes's
 * loop would take several times as long). */
static void copy_fast(void *dst, const void *src, uint64_t n)
{
    __asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

/* Whether mtool has closed its end of the trace socket. */
static bool trace_reader_gone(void)
{
    struct {
        int32_t fd;
        int16_t events, revents;
    } p = {(int32_t)rt.trace_fd, 0, 0};
    long r = sys3(SYS_POLL, (long)&p, 1, 0);
    return r == 1 && (p.revents & (POLLHUP_ | POLLERR_));
}

/* Whether the ring has room up to `end` once mtool has released up to
 * `tail`.  Signed: a tail past the end (a slot two threads wrote at once,
 * as a thread libc starts does before the runtime attaches it) is room,
 * not a wait that would never end. */
static bool ring_has_room(uint64_t end, uint64_t tail)
{
    return (int64_t)(end - tail) <= (int64_t)MT_TRACE_RING_BYTES;
}

/* Waits until mtool has released the ring up to `end` - MT_TRACE_RING_BYTES
 * (its `tail`), waking every 100 ms to see whether it is still there:
 * false when it is not.  When it must wait, it asks to be woken once the
 * tail reaches `wake_at` (timer.h, "The trace ring"). */
static bool ring_room(mt_trace_ring *g, uint64_t end, uint64_t wake_at)
{
    for (;;) {
        uint32_t seen = __atomic_load_n(&g->released, __ATOMIC_ACQUIRE);
        if (ring_has_room(end, __atomic_load_n(&g->tail, __ATOMIC_ACQUIRE)))
            return true;
        /* Said before the tail is read again, as mtool stores the tail
         * before it reads `waiting`: one of the two sees the other. */
        __atomic_store_n(&g->wake_at, wake_at, __ATOMIC_RELAXED);
        __atomic_store_n(&g->waiting, 1, __ATOMIC_SEQ_CST);
        if (ring_has_room(end, __atomic_load_n(&g->tail, __ATOMIC_SEQ_CST))) {
            __atomic_store_n(&g->waiting, 0, __ATOMIC_RELAXED);
            return true;
        }
        struct {
            long sec, nsec;
        } timeout = {0, 100000000};
        long r = syscall6(SYS_FUTEX, (long)&g->released, FUTEX_WAIT_, seen, (long)&timeout, 0, 0);
        __atomic_store_n(&g->waiting, 0, __ATOMIC_RELAXED);
        if (r == -ETIMEDOUT_ && trace_reader_gone())
            return false;
    }
}

/* Whether this frame goes through the filter (timer.h): asked for, and
 * the process has had one thread (its frame is simulated whole). */
static bool filtering(void)
{
    return rt.filter_shift && !several_threads &&
           __atomic_load_n(&rt.hdr->nthreads, __ATOMIC_RELAXED) <= 1;
}

/* The HITS record of code object `code`'s references counted (`hits`:
 * reads | writes << MT_TRACE_HITS_BITS | modifies << 2 x, timer.h), if
 * any, at dst[out]: the records written. */
static uint32_t put_hits(mt_trace_record *dst, uint32_t out, uint32_t code, uint64_t hits)
{
    if (!hits)
        return out;
    dst[out] = (mt_trace_record){.addr = hits, .code = code, .kind = MT_TRACE_HITS};
    return out + 1;
}

/* The filter's partitions forgotten: no line known in any. */
static inline void forget_lines(uint64_t *last, uint64_t mask)
{
    for (uint64_t k = 0; k <= mask; k++)
        last[k] = 0;
}

/* A record as two words: its address, and code | size << 32 | kind << 48
 * | flags << 56 (timer.h's mt_trace_record, little-endian), loaded and
 * stored once each. */
typedef struct {
    uint64_t addr, meta;
} __attribute__((may_alias)) record_words;

/* The n records at src copied to dst through the filter (timer.h), for
 * lines of 2^shift bytes and partitions `mask` + 1: the records written,
 * never more than n (a HITS record stands for one reference or more left
 * out before it).  No branch on whether a reference is left out: it is
 * written, and the next record written over it (that branch would go
 * either way, as the consumer's did: sim/fast.c, "the filter"); the
 * counts in one word, in a register. */
static inline __attribute__((always_inline)) uint32_t
filter_frame(mt_trace_record *dst, const mt_trace_record *src, uint32_t n, unsigned shift,
             uint64_t mask)
{
    static const uint64_t one[3] = {1, 1ull << MT_TRACE_HITS_BITS, 1ull << 2 * MT_TRACE_HITS_BITS};
    uint64_t *last = rt.filter_lines, hits = 0;
    forget_lines(last, mask);
    record_words *out = (record_words *)dst, *first = out;
    const record_words *x = (const record_words *)src, *stop = x + n;
    uint32_t code = 0;
    for (; x < stop; x++) {
        uint64_t addr = x->addr, meta = x->meta, line = addr >> shift;
        uint64_t kind = meta >> 48 & 0xff, size = meta >> 32 & 0xffff;
        bool plain = kind <= MT_TRACE_MODIFY && size;
        if (__builtin_expect(plain && line == (addr + size - 1) >> shift, 1)) {
            if ((uint32_t)meta != code) {
                out = (record_words *)(dst + put_hits(dst, (uint32_t)(out - first), code, hits));
                hits = 0;
                code = (uint32_t)meta;
            }
            uint64_t *slot = &last[line & mask], tag = line + 1, hit = *slot == tag;
            *slot = tag;
            out->addr = addr;
            out->meta = meta;
            out += hit ^ 1;
            hits += one[kind] & -hit;
            continue;
        }
        if (plain) { /* across two lines, or wrapping */
            last[line & mask] = last[(addr + size - 1) >> shift & mask] = 0;
        } else if (kind < MT_TRACE_LOAD_BIAS) { /* rep, gather: lines not known here */
            forget_lines(last, mask);
        }
        *out++ = *x;
    }
    return put_hits(dst, (uint32_t)(out - first), code, hits);
}

/* filter_frame with constants where lines are 64 bytes and D1 has 64 sets
 * or more (every x86-64 core's so far); a shift by %cl is three operations
 * on Intel cores, and the mask a register the loop does not have. */
static uint32_t copy_filtered(mt_trace_record *dst, const mt_trace_record *src, uint32_t n)
{
    return rt.filter_shift == 6 && rt.filter_mask == MT_TRACE_FILTER_LINES - 1
               ? filter_frame(dst, src, n, 6, MT_TRACE_FILTER_LINES - 1)
               : filter_frame(dst, src, n, rt.filter_shift, rt.filter_mask);
}

/* Whether mtool is behind: a quarter of the ring or more written and not
 * released yet.  Then the filter's work is the thread's, which would
 * otherwise wait for room; when mtool keeps up (the program the slower
 * side) the frame is copied as it is. */
static bool consumer_behind(mt_trace_ring *g, uint64_t at)
{
    return at - __atomic_load_n(&g->tail, __ATOMIC_ACQUIRE) >= MT_TRACE_RING_BYTES / 4;
}

/* Puts n records (from `records`) in slot s's ring, through the filter
 * when it applies, and fills *m with the message naming them: false when
 * mtool is gone. */
static bool ring_put(mt_slot_header *s, mt_trace_ring *g, const mt_trace_record *records,
                     uint32_t n, mt_trace_ring_frame *m)
{
    uint64_t bytes = 16ull * n, at = g->head;
    if (at % MT_TRACE_RING_BYTES + bytes > MT_TRACE_RING_BYTES) /* whole: from the start */
        at += MT_TRACE_RING_BYTES - at % MT_TRACE_RING_BYTES;
    /* Woken with half the ring free, or all that was written when that is
     * less (a frame moved to the start: the frames before it end earlier). */
    uint64_t half = at + bytes - MT_TRACE_RING_BYTES / 2;
    if (!ring_room(g, at + bytes, half < g->head ? half : g->head))
        return false;
    void *dst = (uint8_t *)g + MT_TRACE_RING_DATA + at % MT_TRACE_RING_BYTES;
    if (filtering() && (rt.filter_always || consumer_behind(g, at)))
        n = copy_filtered(dst, records, n);
    else
        copy_fast(dst, records, bytes);
    g->head = at + 16ull * n;
    m->nrecords = n;
    m->at = at;
    m->ring = slot_offset((uint32_t)(s->file_slot - 1)) + (uint64_t)((uint8_t *)g - (uint8_t *)s);
    return true;
}

/* Sends the records of slot s's frame (made by thread `tid`), its STAMP
 * given the ticks since it was reset, and empties it: through the slot's
 * ring when it has one, else in the message.  A frame of its STAMP alone
 * is not sent.  Signals wait meanwhile: a handler's traced code would
 * write past the full frame. */
static void trace_send(mt_slot_header *s, int32_t tid)
{
    uint8_t *area = trace_area(s);
    int64_t *index = (int64_t *)(area + MT_TRACE_INDEX);
    uint32_t n = (uint32_t)*frame_capacity(s) - (uint32_t)(-*index / 2);
    mt_trace_record *stamp = frame_stamp(s);
    uint64_t ticks = rdtsc() - stamp->addr;
    ticks = ticks >> 48 ? (1ull << 48) - 1 : ticks;
    stamp->code = (uint32_t)ticks;
    stamp->size = (uint16_t)(ticks >> 32);
    if (n > 1 && rt.trace_fd >= 0) {
        uint64_t all = ~0ull, old = 0;
        sys3(SYS_RT_SIGPROCMASK, SIG_SETMASK_, (long)&all, (long)&old);
        mt_trace_ring *g = trace_ring(s);
        mt_trace_ring_frame m = {.magic = MT_TRACE_RING_MAGIC, .tid = tid, .nrecords = n};
        mt_trace_frame f = {.magic = MT_TRACE_FRAME_MAGIC, .tid = tid, .nrecords = n};
        bool ringed = g && ring_put(s, g, stamp, n, &m);
        /* The message: the ring's, with the file's name, or the frame and
         * its records. */
        iovec_ iov[2] = {{&f, sizeof f}, {stamp, 16ul * n}};
        if (ringed) {
            iov[0] = (iovec_){&m, sizeof m};
            iov[1] = (iovec_){rt.path, str_len(rt.path) + 1};
        }
        msghdr_ msg = {.iov = iov, .iovlen = 2};
        long r = g && !ringed ? -EPIPE_ /* the ring's reader is gone */ : -EINTR_;
        while (r == -EINTR_)
            r = sys3(SYS_SENDMSG, rt.trace_fd, (long)&msg, MSG_NOSIGNAL_);
        if (failed(r)) {
            rt.trace_fd = -1; /* mtool is gone: the program goes on, untraced */
            say_lost("sending traced references", r, "the rest of the trace is lost");
        }
        sys3(SYS_RT_SIGPROCMASK, SIG_SETMASK_, (long)&old, 0);
    }
    trace_reset(s);
}

/* An empty timer stack: the sentinel frame only, no object active.  A
 * reused slot forgets what its dead thread left open (its counts and
 * totals stay). */
static void timers_reset(mt_slot_header *s)
{
    uint64_t frames = MT_SLOT_FRAMES_OFFSET(mt_params.ncounters, mt_params.ntimers);
    mt_timer_frame *sentinel = timer_frame(s, frames);
    sentinel->rsp = ~(uint64_t)0;
    sentinel->record = 0;
    sentinel->outside_t0 = 0;
    for (uint32_t k = 0; k < mt_params.ntimers; k++)
        timer_record(s, MT_SLOT_RECORDS_OFFSET(mt_params.ncounters) + (uint64_t)k * MT_REC_SIZE)
            ->depth = 0;
    s->self = (uint64_t)(uintptr_t)s;
    s->timer_top = frames;
}

static mt_slot_header *current_slot(void)
{
    uint64_t self;
    __asm__ volatile("mov %%gs:%c1, %0" : "=r"(self) : "i"(MT_SLOT_SELF));
    return (mt_slot_header *)(uintptr_t)self;
}

/* The calling thread's full frame sent (mt_trace_flush, below). */
static void trace_flush_here(void)
{
    mt_slot_header *s = current_slot();
    trace_send(s, s->tid);
}

static bool tracing(void) { return mt_params.trace_records && rt.hdr; }

/* Appends an event (no reference) to the calling thread's frame, as the
 * inserted code appends a reference, and sends the frame when it is full. */
static void trace_event(uint8_t kind, uint64_t addr, uint32_t code)
{
    mt_slot_header *s = current_slot();
    uint8_t *area = trace_area(s);
    int64_t *index = (int64_t *)(area + MT_TRACE_INDEX);
    int64_t at = (int64_t)MT_TRACE_AREA_SIZE(mt_params.trace_records) + *index * 8;
    mt_trace_record *r = (mt_trace_record *)(area + at);
    r->addr = addr;
    r->code = code;
    r->size = 1;
    r->kind = kind;
    r->flags = 0;
    *index += 2;
    if (*index == 0)
        trace_send(s, s->tid);
}

/* The calling thread's fs base, 0 when unknown. */
static uint64_t thread_pointer(void)
{
    uint64_t fs = 0;
    sys3(SYS_ARCH_PRCTL, ARCH_GET_FS, (long)&fs, 0);
    return fs;
}

/* The thread's TLS_BASE event, when its thread pointer is set (not yet at
 * a static program's entry: the fs base is still 0 there). */
static void trace_thread_pointer(void)
{
    uint64_t fs = mt_params.trace_records ? thread_pointer() : 0;
    if (fs)
        trace_event(MT_TRACE_TLS_BASE, fs, 0);
}

/* ---- the core clock (timer.h, MT_SLOT_CLOCK_SCALE) ------------------------- */

/* A dependent chain of 8 x n imuls: 3 cycles each on every x86-64 core of
 * the last decade (costmodel/calibrate.c's clock reference), whatever the
 * loop around it, which runs beside the chain. */
static void imul_chain(uint32_t n)
{
    uint64_t x = 1;
    for (uint32_t i = 0; i < n; i++)
        __asm__ volatile("imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0\n\t"
                         "imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0"
                         : "+r"(x));
}

/* Three times 64 x 8 imuls and twice that, 13,800 cycles in all (4.6 us
 * at 3 GHz) every MT_CLOCK_PROBE_EVERY ticks (about 2 ms): 0.2% of the
 * time.  The longer chains' least ticks less the shorter ones' are 512
 * imuls' without the cost of reading the TSC or leaving the loop, the
 * least of three a chain no interrupt or busy sibling slowed; lfence
 * before each read keeps a chain's imuls on their side of it.  A short
 * chain before them brings the code in: run every 2 ms or so it is
 * cold, and a cold first chain read the clock up to 15% fast (0.69 ticks a
 * cycle where 0.807 was the fastest, Xeon family 6 model 85). */
#define CLOCK_CHAIN 64
#define CLOCK_TRIES 3
#define CLOCK_WARM 4
#define CLOCK_CYCLES (3u * 8u * CLOCK_CHAIN)
/* TSC ticks per core cycle of a TSC of 0.6..6 GHz against a core of
 * 0.5..6.5 GHz (calibrate.c's RATIO_MIN, RATIO_MAX): outside them, chains
 * something slowed throughout. */
#define CLOCK_TICKS_MIN (CLOCK_CYCLES / 10u)
#define CLOCK_TICKS_MAX (CLOCK_CYCLES * 5u)

/* The thread's core clock now, cycles per tick (timer.h,
 * MT_CLOCK_SCALE_BITS); 0 when the chains measured nothing plausible. */
static uint64_t measure_clock(void)
{
    uint64_t one = ~(uint64_t)0, two = ~(uint64_t)0;
    imul_chain(CLOCK_WARM);
    for (int k = 0; k < CLOCK_TRIES; k++) {
        uint64_t t0 = rdtsc_ordered();
        imul_chain(CLOCK_CHAIN);
        uint64_t t1 = rdtsc_ordered();
        imul_chain(2 * CLOCK_CHAIN);
        uint64_t t2 = rdtsc_ordered();
        one = t1 - t0 < one ? t1 - t0 : one;
        two = t2 - t1 < two ? t2 - t1 : two;
    }
    if (two <= one || two - one < CLOCK_TICKS_MIN || two - one > CLOCK_TICKS_MAX)
        return 0;
    return ((uint64_t)CLOCK_CYCLES << MT_CLOCK_SCALE_BITS) / (two - one);
}

/* Core cycles of `ticks` at clock `scale`. */
static uint64_t clock_cycles(uint64_t ticks, uint64_t scale)
{
    return ticks * scale >> MT_CLOCK_SCALE_BITS;
}

/* The ticks to `now` of a frame entered at `t0` that no measurement of the
 * clock has counted yet: since its entry or the last measurement, the
 * later (probes.S's stop: the lesser of its inclusive ticks and those since
 * the measurement). */
static uint64_t ticks_since_clock(const mt_slot_header *s, uint64_t t0, uint64_t now)
{
    uint64_t from = t0 > s->clock_at ? t0 : s->clock_at;
    return now > from ? now - from : 0;
}

/* Called by a stop at `now`, its object's frame on top, when the thread's
 * clock is due: measures it, adds to every open frame's record its ticks
 * since the last measurement (or its entry) at the mean of the two (the
 * clock over them, from their two ends), and counts the measurement's own
 * time as outside time of the objects below the stopping one (unless the
 * one below is in an outside call, which counts it already).  Returns
 * `now`. */
HIDDEN uint64_t mt_timer_clock_probe(uint64_t now)
{
    mt_slot_header *s = current_slot();
    uint64_t scale = measure_clock();
    uint64_t over = s->clock_scale && scale ? (s->clock_scale + scale) / 2 : s->clock_scale | scale;
    for (uint64_t at = s->timer_top; over && timer_frame(s, at)->rsp != ~(uint64_t)0;
         at -= MT_FRAME_SIZE) {
        const mt_timer_frame *f = timer_frame(s, at);
        timer_record(s, f->record)->cycles += clock_cycles(ticks_since_clock(s, f->t0, now), over);
    }
    if (over)
        s->clock_at = now;
    if (scale)
        s->clock_scale = scale;
    uint64_t end = rdtsc();
    s->clock_next = s->clock_scale ? end + MT_CLOCK_PROBE_EVERY : end;
    mt_timer_frame *below = timer_frame(s, s->timer_top - MT_FRAME_SIZE);
    if (!below->outside_t0)
        below->outside += end - now;
    return now;
}

/* Pops the top frame at time `now` as probes.S's stop does, counting it as
 * a non-local exit. */
static void close_top_nonlocal(mt_slot_header *s, uint64_t now)
{
    mt_timer_frame *f = timer_frame(s, s->timer_top), *parent = f - 1;
    mt_timer_record *r = timer_record(s, f->record);
    uint64_t elapsed = now - f->t0;
    r->inclusive += elapsed;
    r->cycles += clock_cycles(ticks_since_clock(s, f->t0, now), s->clock_scale);
    r->exclusive += elapsed - f->child;
    r->outside += f->outside;
    r->nonlocal_exits++;
    r->depth = 0;
    parent->child += elapsed;
    parent->outside += f->outside;
    if (parent->outside_t0 == MT_OUTSIDE_PAUSED)
        parent->outside_t0 = now;
    s->timer_top -= MT_FRAME_SIZE;
}

/* Whether the record at slot offset `record` is one of this copy's own. */
static bool own_record(uint64_t record)
{
    uint64_t first = MT_SLOT_RECORDS_OFFSET(mt_params.slot_ncounters ? mt_params.slot_ncounters
                                                                     : mt_params.ncounters) +
                     (uint64_t)mt_params.timer_base * MT_REC_SIZE;
    return record >= first && record < first + (uint64_t)mt_params.ntimers * MT_REC_SIZE;
}

/* Called by a stop whose object was entered from an outside call of the
 * object below it (`frame`, just popped; the caller's outside clock just
 * resumed at its t0 + elapsed).  In a library copy whose object was
 * entered from another object's outside call (the executable's, timing its
 * calls through the PLT as outside time, not predicting them), the
 * object's whole time is outside time of that caller: the pause was for
 * callbacks into the caller's own code.  The frame's own outside time was
 * added to the caller's already. */
HIDDEN uint64_t mt_timer_outside_resumed(uint64_t frame)
{
    mt_timer_frame *f = (mt_timer_frame *)(uintptr_t)frame, *caller = f - 1;
    if (!mt_params.is_library || own_record(caller->record))
        return 0;
    caller->outside += caller->outside_t0 - f->t0 - f->outside;
    return 0;
}

/* Called by a start event at %rsp `threshold` (plus one for procedures)
 * when the top frame's %rsp is below it: that frame's procedure was left
 * by longjmp or an exception.  Closes every such frame; returns the new top. */
HIDDEN uint64_t mt_timer_unwind(uint64_t threshold)
{
    mt_slot_header *s = current_slot();
    uint64_t now = rdtsc();
    while (timer_frame(s, s->timer_top)->rsp < threshold)
        close_top_nonlocal(s, now);
    return s->timer_top;
}

/* Called by a stop event of `record` whose frame is not on top: the frames
 * above it were left without their exit edge (an exception or longjmp that
 * stayed inside this object).  Closes them; returns the offset of the
 * object's own frame, now on top, or 0 when it has none. */
HIDDEN uint64_t mt_timer_close_above(uint64_t record)
{
    mt_slot_header *s = current_slot();
    /* Down to the sentinel, found by its rsp: a library copy's runtime
     * runs this too, and its own params do not say where the slot's
     * frames start (the executable's do). */
    uint64_t at = s->timer_top;
    while (timer_frame(s, at)->rsp != ~(uint64_t)0 && timer_frame(s, at)->record != record)
        at -= MT_FRAME_SIZE;
    if (timer_frame(s, at)->rsp == ~(uint64_t)0)
        return 0;
    uint64_t now = rdtsc();
    while (s->timer_top > at)
        close_top_nonlocal(s, now);
    return at;
}

/* ---- the profile file ----------------------------------------------------- */

static const char *env_value(char **envp, const char *name)
{
    size_t n = str_len(name);
    for (; *envp; envp++) {
        const char *e = *envp;
        size_t i = 0;
        while (i < n && e[i] == name[i])
            i++;
        if (i == n && e[n] == '=')
            return e + n + 1;
    }
    return NULL;
}

/* mkdir -p.  Returns the last error other than EEXIST (0 if none): it
 * explains a failure to create the file better than ENOENT does. */
static long make_dirs(const char *dir)
{
    char path[MT_RT_DIR_MAX];
    path[0] = '\0';
    append(path, sizeof path, dir);
    long err = 0;
    for (char *s = path + 1;; s++)
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            long r = sys3(SYS_MKDIR, (long)path, 0777, 0);
            if (failed(r) && r != -EEXIST_)
                err = r;
            *s = c;
            if (!c)
                return err;
        }
}

/* The absolute output directory: $MTOOL_OUT, else the default chosen at
 * instrumentation time.  Absolute, so that threads and fork children
 * created after a chdir still find it. */
static void output_dir(char **envp, char *out, size_t cap)
{
    const char *dir = env_value(envp, "MTOOL_OUT");
    if (!dir || !*dir)
        dir = mt_params.default_dir;
    out[0] = '\0';
    if (dir[0] != '/') {
        char cwd[MT_RT_DIR_MAX];
        if (!failed(sys3(SYS_GETCWD, (long)cwd, sizeof cwd, 0))) {
            append(out, cap, cwd);
            append(out, cap, "/");
        }
    }
    append(out, cap, dir);
}

static uint64_t random_u64(void)
{
    uint64_t r = rdtsc() * 0x9e3779b97f4a7c15ull;
    if (rt.random) {
        uint64_t k;
        copy_bytes(&k, rt.random, 8);
        r ^= k;
    }
    return r ^ (uint64_t)sys3(SYS_GETPID, 0, 0, 0) << 32;
}

static void fill_header(mt_profile_header *h, uint32_t capacity, uint32_t flags, char **argv)
{
    h->version = MT_PROFILE_VERSION;
    h->header_size = MT_PROFILE_HEADER_SIZE;
    h->ncounters = mt_params.ncounters;
    h->ntimers = mt_params.ntimers;
    h->ncall_sites = mt_params.ncall_sites;
    h->load_bias = rt.bias;
    h->timer_bias = rt.timer_bias;
    h->timers_id = mt_params.timers_id;
    h->trace_records = mt_params.trace_records;
    h->nslots = 1;
    h->nthreads = 1;
    h->capacity = capacity;
    h->flags = flags;
    h->pid = (int32_t)sys3(SYS_GETPID, 0, 0, 0);
    h->ppid = (int32_t)sys3(SYS_GETPPID, 0, 0, 0);
    struct {
        long sec, nsec;
    } ts = {0, 0};
    sys3(SYS_CLOCK_GETTIME, CLOCK_REALTIME_, (long)&ts, 0);
    h->start_ns = (uint64_t)ts.sec * 1000000000u + (uint64_t)ts.nsec;
    copy_bytes(h->binary_hash, mt_params.binary_hash, 32);
    long n = sys3(SYS_READLINK, (long)"/proc/self/exe", (long)h->exe, sizeof h->exe - 1);
    h->exe[failed(n) ? 0 : n] = '\0';
    h->args[0] = '\0';
    for (int i = 0; argv && argv[i]; i++) {
        if (i)
            append(h->args, sizeof h->args, " ");
        append(h->args, sizeof h->args, argv[i]);
    }
    /* The magic last: a reader that sees it sees a complete header. */
    __atomic_store_n(&h->magic, MT_PROFILE_MAGIC, __ATOMIC_RELEASE);
}

/* Creates <rt.dir>/<name>.<pid>.<random>.mtp sized for `capacity` slots and maps
 * its header; the fd is closed before returning.  NULL on failure, with the
 * step that failed (NULL: creating the file) and -errno. */
static mt_profile_header *create_file(uint32_t capacity, const char **step, long *err)
{
    long dir_err = make_dirs(rt.dir);
    *step = NULL;
    for (int attempt = 0; attempt < 8; attempt++) {
        rt.path[0] = '\0';
        append(rt.path, sizeof rt.path, rt.dir);
        append(rt.path, sizeof rt.path, "/");
        append(rt.path, sizeof rt.path, mt_params.program_name);
        append(rt.path, sizeof rt.path, ".");
        append_u64(rt.path, sizeof rt.path, (uint64_t)sys3(SYS_GETPID, 0, 0, 0), 10, 1);
        append(rt.path, sizeof rt.path, ".");
        append_u64(rt.path, sizeof rt.path, random_u64(), 16, 16);
        append(rt.path, sizeof rt.path, ".mtp");
        long fd = sys3(SYS_OPEN, (long)rt.path, O_RDWR_ | O_CREAT_ | O_EXCL_ | O_CLOEXEC_, 0644);
        if (fd == -EEXIST_)
            continue;
        if (failed(fd)) {
            *err = fd == -ENOENT_ && dir_err ? dir_err : fd;
            return NULL;
        }
        long r = sys3(SYS_FTRUNCATE, fd, (long)slot_offset(capacity), 0);
        if (failed(r))
            *step = "sizing the file";
        else if (failed(r = map_file(NULL, MT_PROFILE_HEADER_SIZE, MAP_SHARED_, fd, 0)))
            *step = "mapping the file";
        sys3(SYS_CLOSE, fd, 0, 0);
        if (!failed(r))
            return (mt_profile_header *)r;
        /* No headerless file left behind for the merge to reject. */
        sys3(SYS_UNLINK, (long)rt.path, 0, 0);
        *err = r;
        return NULL;
    }
    *err = -EEXIST_;
    return NULL;
}

/* Reopens the profile to grow it or map a slot: the program never sees an
 * extra descriptor for longer than this call. */
static long reopen(void) { return sys3(SYS_OPEN, (long)rt.path, O_RDWR_ | O_CLOEXEC_, 0); }

/* Grows the file, open as `fd`, to have room for slot `index`: 0 or -errno.
 * The capacity is published only once the file has that size, so slots
 * below it are always backed by the file (never SIGBUS). */
static long reserve_slot(long fd, uint32_t index)
{
    if (index < __atomic_load_n(&rt.hdr->capacity, __ATOMIC_ACQUIRE))
        return 0;
    long r = 0;
    lock(&rt.grow_lock);
    uint64_t cap = rt.hdr->capacity;
    if (index >= cap) {
        while (cap <= index)
            cap *= 2;
        if (cap > UINT32_MAX)
            r = -27; /* EFBIG */
        else if (!failed(r = sys3(SYS_FTRUNCATE, fd, (long)slot_offset((uint32_t)cap), 0)))
            __atomic_store_n(&rt.hdr->capacity, (uint32_t)cap, __ATOMIC_RELEASE);
    }
    unlock(&rt.grow_lock);
    return failed(r) ? r : 0;
}

/* Maps slot `index` of the file (at `at` when not NULL), or anonymous
 * memory when the process has no file or the file cannot give the slot;
 * stamps it with the calling thread. */
static mt_slot_header *map_slot(uint32_t index, void *at)
{
    int fixed = at ? MAP_FIXED_ : 0;
    long r = -1;
    if (rt.in_file) {
        long fd = r = reopen();
        if (!failed(fd)) {
            r = reserve_slot(fd, index);
            if (!failed(r))
                r = map_file(at, rt.slot_size, MAP_SHARED_ | fixed, fd, slot_offset(index));
            sys3(SYS_CLOSE, fd, 0, 0);
        }
        if (failed(r))
            say_lost("mapping a thread's counters", r, "the counts of that thread are lost");
    }
    bool from_file = !failed(r);
    if (failed(r))
        r = map_raw(at, rt.slot_size, MAP_PRIVATE_ | MAP_ANONYMOUS_ | fixed, -1, 0);
    if (failed(r))
        return NULL;
    mt_slot_header *sh = (mt_slot_header *)r;
    sh->magic = MT_SLOT_MAGIC;
    sh->file_slot = from_file ? index + 1ull : 0;
    timers_reset(sh);
    trace_reset(sh);
    __atomic_store_n(&sh->tid, (int32_t)sys3(SYS_GETTID, 0, 0, 0), __ATOMIC_RELEASE);
    return sh;
}

/* Remembers where slot `index` is mapped, for reuse_slot. */
static void track(uint32_t index, mt_slot_header *slot)
{
    if (slot && index < MAX_TRACKED)
        __atomic_store_n(&rt.slots[index], slot, __ATOMIC_RELEASE);
}

/* A slot whose thread has exited, claimed for thread `tid`, or NULL.  Each
 * slot is a mapping of its own, which the process keeps: without reuse, a
 * program that creates and joins threads by the thousand would exhaust the
 * kernel's limit on mappings (vm.max_map_count, ~65530) and fill the disk.
 * The counts of a reused slot keep adding up, so totals stay exact.  A few
 * slots are tried per call, resuming where the last search stopped: thread
 * creation costs O(1) system calls however many threads are alive.  tgkill
 * says ESRCH only once the thread is gone from the kernel, when it can run
 * no more code; it says so at once of a task outside the thread group (a
 * clone with CLONE_VM alone), which kill, by its id alone, still finds
 * while it lives.  The compare-and-swap keeps two new threads off one slot. */
static mt_slot_header *reuse_slot(int32_t tid)
{
    uint32_t n = __atomic_load_n(&rt.hdr->nslots, __ATOMIC_ACQUIRE);
    if (n > MAX_TRACKED)
        n = MAX_TRACKED;
    long pid = sys3(SYS_GETPID, 0, 0, 0);
    for (uint32_t k = 0; k < n && k < 16; k++) {
        uint32_t i = __atomic_fetch_add(&rt.scan, 1, __ATOMIC_RELAXED) % n;
        mt_slot_header *s = __atomic_load_n(&rt.slots[i], __ATOMIC_ACQUIRE);
        int32_t owner = s ? __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE) : 0;
        if (owner > 0 && sys3(SYS_TGKILL, pid, owner, 0) == -ESRCH_ &&
            sys3(SYS_KILL, owner, 0, 0) == -ESRCH_ &&
            __atomic_compare_exchange_n(&s->tid, &owner, tid, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            if (mt_params.trace_records) /* the dead thread's last records (never its
                                            tid back in the slot: another thread would
                                            claim the slot too) */
                trace_send(s, owner);
            timers_reset(s);
            return s;
        }
    }
    return NULL;
}

static void trace_library_tls_blocks(void);

/* Gives the calling thread a slot of its own and points %gs at it; false
 * when there is none (it shares its creator's). */
static bool attach_thread(void)
{
    __atomic_fetch_add(&rt.hdr->nthreads, 1, __ATOMIC_RELAXED);
    mt_slot_header *slot = reuse_slot((int32_t)sys3(SYS_GETTID, 0, 0, 0));
    if (!slot) {
        uint32_t index = __atomic_fetch_add(&rt.hdr->nslots, 1, __ATOMIC_ACQ_REL);
        slot = map_slot(index, NULL);
        track(index, slot);
    }
    if (slot) {
        set_gs(slot);
        trace_thread_pointer();
        trace_library_tls_blocks();
    }
    return slot;
}


/* %gs points at a slot of this very thread (libgomp reuses its threads). */
static bool attached(void)
{
    uintptr_t base = 0;
    sys3(SYS_ARCH_PRCTL, ARCH_GET_GS, (long)&base, 0);
    return base && ((const mt_slot_header *)base)->tid == (int32_t)sys3(SYS_GETTID, 0, 0, 0);
}

/* Around a call that may wait on another thread or start one
 * (pthread_create, pthread_join, fork) in a tracing copy: the calling
 * thread's frame sent before and after, each time starting again with a
 * new STAMP (trace_send; a frame of its STAMP alone is not sent), so that
 * what it does after the call is ordered after the call's end.  After it,
 * because a traced libc records inside the call: its frame, stamped before
 * the call, would otherwise carry what followed (a set_mempolicy after
 * pthread_create came before the new thread's start, which then took that
 * policy: tests/mempolicy.sh). */
static void frame_cut(void)
{
    if (tracing() && attached()) {
        mt_slot_header *s = current_slot();
        trace_send(s, s->tid);
    }
}

/* The calling thread's id, as the creator of a thread a tracing copy
 * reports (0: none to report). */
static int32_t traced_creator(void) { return tracing() && attached() ? current_slot()->tid : 0; }

/* A new thread's THREAD_PARENT event, once it has a slot of its own: the
 * kernel gives it its creator's memory policy. */
static void trace_parent(bool own_slot, int32_t creator)
{
    if (own_slot && creator)
        trace_event(MT_TRACE_THREAD_PARENT, (uint64_t)(uint32_t)creator, 0);
}

/* ---- start-up ------------------------------------------------------------ */

enum { AT_RANDOM_ = 25 };

/* Creates the process's profile; on failure says so once and counts into
 * anonymous memory, so the program runs exactly as it would otherwise. */
static void open_profile(char **argv, uint32_t flags)
{
    const char *step = NULL;
    long err = 0;
    /* One slot: the file's length grows with the threads (reserve_slot),
     * so a single-threaded process's profile is one slot long. */
    enum { INITIAL_CAPACITY = 1 };
    rt.hdr = create_file(INITIAL_CAPACITY, &step, &err);
    rt.in_file = rt.hdr != NULL;
    if (!rt.hdr) {
        say_lost(step, err, "the counts of this process are lost");
        rt.hdr = map(NULL, MT_PROFILE_HEADER_SIZE, MAP_PRIVATE_ | MAP_ANONYMOUS_, -1, 0);
    }
    if (rt.hdr)
        fill_header(rt.hdr, INITIAL_CAPACITY, flags, argv);
}

/* Writes the entry jumps (timer.h, mt_rt_patch, sorted by address): each
 * run of adjacent pages of one protection is made writable with one
 * mprotect, written, and given back its protection with another (a page
 * at a time took 632 calls for git, 1 ms). */
static void apply_patches(const mt_rt_patch *p, uint32_t n, uintptr_t bias)
{
    for (uint32_t i = 0, end; i < n; i = end) {
        uintptr_t lo = (p[i].vaddr + bias) & ~(PAGE - 1), hi = lo;
        for (end = i; end < n && p[end].prot == p[i].prot; end++) {
            uintptr_t at = p[end].vaddr + bias;
            if ((at & ~(PAGE - 1)) > hi)
                break;
            uintptr_t last = (at + p[end].len + PAGE - 1) & ~(PAGE - 1);
            hi = last > hi ? last : hi;
        }
        if (failed(sys3(SYS_MPROTECT, (long)lo, (long)(hi - lo), PROT_READ_ | PROT_WRITE_))) {
            say("cannot write the entry jumps into the program's code: it runs uninstrumented "
                "from here on");
            return;
        }
        for (uint32_t k = i; k < end; k++)
            copy_bytes((void *)(p[k].vaddr + bias), p[k].bytes, p[k].len);
        sys3(SYS_MPROTECT, (long)lo, (long)(hi - lo), p[i].prot);
    }
}

/* Maps the pages of the original code that carry entry jumps from their
 * images in the file (timer.h, mt_rt_image) over the loader's: no page is
 * written, so none is copied.  Only from the very file the loader mapped:
 * /proc/self/exe is the dynamic loader when the program was started as
 * `ld.so PROGRAM`, so the file must hold these params where they say.
 * False when it cannot: the caller writes the jumps instead (idempotent
 * over images already mapped). */
static bool map_images(void)
{
    if (!mt_params.nimages)
        return false;
    long fd = sys3(SYS_OPEN, (long)"/proc/self/exe", O_RDONLY_ | O_CLOEXEC_, 0);
    if (failed(fd))
        return false;
    mt_rt_params on_disk;
    bool ok = syscall6(SYS_PREAD64, fd, (long)&on_disk, sizeof on_disk,
                       (long)mt_params.params_file_offset, 0, 0) == (long)sizeof on_disk &&
              same_bytes(&on_disk, &mt_params, sizeof on_disk);
    const mt_rt_image *im = (const mt_rt_image *)(mt_params.images_vaddr + rt.bias);
    for (uint32_t i = 0; ok && i < mt_params.nimages; i++)
        ok = !failed(syscall6(SYS_MMAP, (long)(im[i].vaddr + rt.bias), (long)im[i].size,
                              im[i].prot, MAP_PRIVATE_ | MAP_FIXED_, fd, (long)im[i].file_offset));
    sys3(SYS_CLOSE, fd, 0, 0);
    return ok;
}

/* ---- shared libraries (docs/ARCHITECTURE.md, "Shared libraries") -------- */

/* The loader's public view of a loaded object (<link.h>) and of its list. */
typedef struct link_map_ {
    uintptr_t l_addr;
    const char *l_name;
    void *l_ld;
    struct link_map_ *l_next, *l_prev;
} link_map_;
typedef struct {
    int r_version;
    link_map_ *r_map;
} r_debug_;
typedef struct {
    uint32_t p_type, p_flags;
    uint64_t p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align;
} elf_phdr_;
enum { PT_DYNAMIC_ = 2, DT_DEBUG_ = 21, AT_PHDR_ = 3, AT_PHNUM_ = 5, EHDR_ENTRY = 24 };

/* n bytes at `at`, which may be unmapped (another object's headers): false
 * instead of a fault. */
static bool read_safely(uintptr_t at, void *buf, size_t n)
{
    struct {
        uintptr_t base;
        size_t len;
    } local = {(uintptr_t)buf, n}, remote = {at, n};
    long pid = sys3(SYS_GETPID, 0, 0, 0);
    return syscall6(SYS_PROCESS_VM_READV, pid, (long)&local, 1, (long)&remote, 1, 0) == (long)n;
}

/* The loader's r_debug, from the executable's DT_DEBUG (the loader fills
 * it before any constructor runs); NULL for a static one. */
static const r_debug_ *loader_debug(const elf_phdr_ *phdr, uint64_t phnum)
{
    for (uint64_t i = 0; phdr && i < phnum; i++) {
        if (phdr[i].p_type != PT_DYNAMIC_)
            continue;
        for (const int64_t *d = (const int64_t *)(phdr[i].p_vaddr + rt.bias); d[0]; d += 2)
            if (d[0] == DT_DEBUG_ && d[1])
                return (const r_debug_ *)d[1];
    }
    return NULL;
}

/* Activation of library copies: at start-up, and whenever dlopen maps more
 * objects (the audit library calls mt_timer_activate_libraries). */
static struct {
    const r_debug_ *debug;  /* the loader's list (NULL: a static program) */
    bool ready;             /* %gs points at a slot: copies may count from now on */
    volatile int lock;      /* one walk at a time: start-up, and dlopen in any thread */
} libs;

/* Whether a copy's entry jumps are in: its first one is.  An active copy
 * is never written again, since other threads may run its code, and
 * apply_patches takes the execute right off its pages while it writes. */
static bool already_active(const mt_rt_params *p, uintptr_t l_addr)
{
    const mt_rt_patch *first = (const mt_rt_patch *)(p->patches_vaddr + l_addr);
    return same_bytes((const void *)(first->vaddr + l_addr), first->bytes, first->len);
}

/* Points the wrappers of the library copy whose blob is at `blob` at this
 * runtime: its serving_blob, at the same offset in its blob as in ours. */
static void serve_copy(uintptr_t blob)
{
    uintptr_t at = blob + ((uintptr_t)&serving_blob - (uintptr_t)mt_blob_start);
    __atomic_store_n((uintptr_t *)at, (uintptr_t)mt_blob_start, __ATOMIC_RELEASE);
}

/* Whether a library copy's timer records are the slot's: placed after
 * this executable's counters, inside its records. */
static bool timers_fit(const mt_rt_params *p)
{
    return !p->ntimers || (p->slot_ncounters == mt_params.ncounters &&
                           p->timer_base <= mt_params.ntimers &&
                           p->ntimers <= mt_params.ntimers - p->timer_base);
}

/* Whether a library copy's call-site records are the slot's: after this
 * executable's counters in a slot without timers, inside its records. */
static bool call_sites_fit(const mt_rt_params *p)
{
    return p->ncall_sites <= p->call_site_base ||
           (p->slot_ncounters == mt_params.ncounters && !mt_params.ntimers &&
            p->ncall_sites <= mt_params.ncall_sites);
}

/* Where the library copy lies in this process, for the reader: its
 * call-site records' targets are run-time addresses of this process, and
 * so are the targets of any object's calls that land in it.  Every copy
 * activated while the executable records call targets is listed, one
 * without records of its own named by its counter_base (first == end). */
static void note_call_sites(const mt_rt_params *p, uintptr_t l_addr)
{
    mt_profile_header *h = rt.hdr;
    if (!mt_params.ncall_sites || !h || h->nlibraries >= MT_PROFILE_LIBRARIES)
        return;
    bool own = p->ncall_sites > p->call_site_base;
    h->libraries[h->nlibraries] =
        (mt_profile_library){.first = own ? p->call_site_base : p->counter_base,
                             .end = own ? p->ncall_sites : p->counter_base, .base = l_addr};
    __atomic_store_n(&h->nlibraries, h->nlibraries + 1, __ATOMIC_RELEASE);
}

/* Whether a library copy's trace records are the slot's: a tracing copy
 * of this tracing executable's layout (no timers), its trace area where
 * this one's is. */
static bool trace_fits(const mt_rt_params *p)
{
    return !p->trace_records ||
           (p->trace_records == mt_params.trace_records && !mt_params.ntimers &&
            p->slot_ncounters == mt_params.ncounters && p->slot_ncall_sites == mt_params.ncall_sites);
}

/* A tracing copy just activated: LIBRARY_BASE, sent at once, so that
 * other threads' later frames, which may reach the copy's data, come
 * after it. */
static void trace_library_base(const mt_rt_params *p, uintptr_t l_addr)
{
    if (!tracing() || !p->trace_records)
        return;
    trace_event(MT_TRACE_LIBRARY_BASE, l_addr, p->counter_base);
    trace_flush_here();
}

/* ---- a library's static and descriptor TLS --------------------------------
 * A copy built for initial-exec TLS (its GOT slots hold offsets from the
 * thread pointer, R_X86_64_TPOFF64) or TLS descriptors (-mtls-dialect=gnu2:
 * R_X86_64_TLSDESC, whose function returns such an offset) never calls
 * __tls_get_addr: its block is found through one such relocation of its
 * own, an anchor, read at start-up once the loader has relocated it.  A
 * thread's block is then its thread pointer plus the anchor's offset minus
 * the variable's offset in the block: LIBRARY_TLS, sent at start-up and at
 * each thread's attach.  A slot holds the same offset in every thread (a
 * static block); a descriptor is called in each thread, as the copy's code
 * calls it: a dynamic block (a descriptor ld.so could not give static TLS)
 * is then allocated in that thread at its attach rather than at first use.
 * Why not the loader's own answer (dl_iterate_phdr's dlpi_tls_data): this
 * runtime has no libc, and a traced libc's routine would trace itself. */
typedef struct {
    int64_t r_offset;
    uint64_t r_info;
    int64_t r_addend;
} elf_rela_;
typedef struct {
    uint32_t st_name;
    uint8_t st_info, st_other;
    uint16_t st_shndx;
    uint64_t st_value, st_size;
} elf_sym_;
enum { DT_PLTRELSZ_ = 2, DT_SYMTAB_ = 6, DT_RELA_ = 7, DT_RELASZ_ = 8, DT_JMPREL_ = 23 };
enum { R_X86_64_TPOFF64_ = 18, R_X86_64_TLSDESC_ = 36, STT_TLS_ = 6 };

typedef struct {
    uintptr_t slot;   /* run-time address of the GOT slot or the descriptor */
    uint64_t var;     /* the variable's offset in the copy's block (S + A) */
    uint32_t library; /* the copy's counter_base */
    bool descriptor;
} tls_anchor;

/* Copies of the set with an anchor; written at start-up only. */
#define MAX_TLS_ANCHORS 64u
static struct {
    tls_anchor at[MAX_TLS_ANCHORS];
    uint32_t n;
} tls_anchors;

/* A dynamic-section address: glibc adds the load base in place to those it
 * reads (a writable dynamic section), other loaders may not; an object's
 * link-time addresses lie below its base. */
static uintptr_t dynamic_address(uint64_t d, uintptr_t l_addr) { return d >= l_addr ? d : d + l_addr; }

/* A relocation placing a thread-pointer offset of the copy's own block: a
 * local variable (no symbol) or a TLS symbol it defines. */
static bool own_tls_relocation(const elf_rela_ *r, const elf_sym_ *symtab, uint64_t *var)
{
    uint32_t type = (uint32_t)r->r_info, sym = (uint32_t)(r->r_info >> 32);
    if (type != R_X86_64_TPOFF64_ && type != R_X86_64_TLSDESC_)
        return false;
    if (sym && (!symtab || (symtab[sym].st_info & 0xf) != STT_TLS_ || !symtab[sym].st_shndx))
        return false;
    *var = (sym ? symtab[sym].st_value : 0) + (uint64_t)r->r_addend;
    return true;
}

/* The copy's first anchor among its relocations (RELA, then JMPREL). */
static bool find_tls_anchor(const link_map_ *m, tls_anchor *a)
{
    const elf_sym_ *symtab = NULL;
    const elf_rela_ *tables[2] = {NULL, NULL};
    uint64_t sizes[2] = {0, 0};
    for (const int64_t *d = (const int64_t *)m->l_ld; d && d[0]; d += 2)
        if (d[0] == DT_SYMTAB_)
            symtab = (const elf_sym_ *)dynamic_address((uint64_t)d[1], m->l_addr);
        else if (d[0] == DT_RELA_)
            tables[0] = (const elf_rela_ *)dynamic_address((uint64_t)d[1], m->l_addr);
        else if (d[0] == DT_RELASZ_)
            sizes[0] = (uint64_t)d[1];
        else if (d[0] == DT_JMPREL_)
            tables[1] = (const elf_rela_ *)dynamic_address((uint64_t)d[1], m->l_addr);
        else if (d[0] == DT_PLTRELSZ_)
            sizes[1] = (uint64_t)d[1];
    for (int t = 0; t < 2; t++)
        for (uint64_t i = 0; tables[t] && i < sizes[t] / sizeof(elf_rela_); i++)
            if (own_tls_relocation(&tables[t][i], symtab, &a->var)) {
                a->slot = m->l_addr + (uintptr_t)tables[t][i].r_offset;
                a->descriptor = (uint32_t)tables[t][i].r_info == R_X86_64_TLSDESC_;
                return true;
            }
    return false;
}

/* A TLS descriptor's answer for the calling thread, as the copy's code
 * asks it: %rax = the descriptor, `call *(%rax)`; the function keeps every
 * other register.  The stack aligned as at a call site. */
static int64_t descriptor_offset(uintptr_t descriptor)
{
    uint64_t rax = descriptor;
    __asm__ volatile("mov %%rsp, %%r12\n\tand $-16, %%rsp\n\tcall *(%%rax)\n\tmov %%r12, %%rsp"
                     : "+a"(rax)
                     :
                     : "r12", "memory", "cc");
    return (int64_t)rax;
}

static void trace_anchor_block(const tls_anchor *a, uint64_t fs)
{
    int64_t offset = a->descriptor ? descriptor_offset(a->slot) : *(const int64_t *)a->slot;
    trace_event(MT_TRACE_LIBRARY_TLS, fs + (uint64_t)offset - a->var, a->library);
}

/* The calling thread's blocks of every anchored copy (a new thread's). */
static void trace_library_tls_blocks(void)
{
    uint32_t n = __atomic_load_n(&tls_anchors.n, __ATOMIC_ACQUIRE);
    uint64_t fs = n && tracing() ? thread_pointer() : 0;
    for (uint32_t i = 0; fs && i < n; i++)
        trace_anchor_block(&tls_anchors.at[i], fs);
}

/* A tracing copy activated at start-up (relocated: a dlopen's copy is
 * activated before its relocation, and has no anchor read): its anchor
 * kept, and the calling thread's block sent. */
static void anchor_library_tls(const mt_rt_params *p, const link_map_ *m)
{
    tls_anchor *a = &tls_anchors.at[tls_anchors.n];
    if (!tracing() || !p->trace_records || tls_anchors.n == MAX_TLS_ANCHORS || !find_tls_anchor(m, a))
        return;
    a->library = p->counter_base;
    __atomic_store_n(&tls_anchors.n, tls_anchors.n + 1, __ATOMIC_RELEASE);
    trace_anchor_block(a, thread_pointer());
}

/* A library copy of this executable's set is marked by its e_entry, the
 * blob's entry stub (the loader ignores a library's): its params say
 * where its entry jumps are; they are written once %gs points at a slot,
 * so that before (in start-up constructors) its original code runs.  An
 * object dlopen maps is written before anything of it runs: nothing else
 * can reach its code while dlopen has not returned. */
static void activate_library(const link_map_ *m, bool relocated)
{
    uintptr_t l_addr = m->l_addr;
    const mt_rt_header *own = (const mt_rt_header *)(const void *)mt_blob_start;
    uint64_t entry;
    mt_rt_header h;
    mt_rt_params p;
    if (!read_safely(l_addr + EHDR_ENTRY, &entry, sizeof entry) || entry < own->entry_offset)
        return;
    uintptr_t blob = l_addr + entry - own->entry_offset;
    /* The same header: the same blob build, whose routines and variables
     * lie at the same offsets as this one's (serve_copy). */
    if (!read_safely(blob, &h, sizeof h) || !same_bytes(&h, own, sizeof h) ||
        !read_safely(blob + h.params_offset, &p, sizeof p))
        return;
    if (p.is_library && p.libs_set == mt_params.libs_set && p.ncounters <= mt_params.ncounters &&
        timers_fit(&p) && call_sites_fit(&p) && trace_fits(&p) && blob - p.blob_vaddr == l_addr &&
        p.npatches && !already_active(&p, l_addr)) {
        note_call_sites(&p, l_addr);
        serve_copy(blob);
        apply_patches((const mt_rt_patch *)(p.patches_vaddr + l_addr), p.npatches, l_addr);
        trace_library_base(&p, l_addr);
        if (relocated)
            anchor_library_tls(&p, m);
    }
}

/* Every loaded copy of the set not active yet (the executable's own params
 * are no library's), `relocated` at start-up. */
static void activate_libraries(bool relocated)
{
    lock(&libs.lock);
    if (libs.ready)
        for (const link_map_ *m = libs.debug->r_map; m; m = m->l_next)
            activate_library(m, relocated);
    unlock(&libs.lock);
}

static void start_activating_libraries(const elf_phdr_ *phdr, uint64_t phnum)
{
    if (!mt_params.libs_set || !(libs.debug = loader_debug(phdr, phnum)))
        return;
    __atomic_store_n(&libs.ready, true, __ATOMIC_RELEASE);
    activate_libraries(true);
}

HIDDEN void mt_timer_calibrate(uint64_t record, long pairs);

/* What a start/stop pair adds to the time it brackets, on this machine, in
 * this process: empty objects timed on the runtime's own record, the least
 * of 16 batches of 64 pairs (an interrupt or a cold cache only ever adds).
 * About 1000 pairs, tens of microseconds, before the program's entry. */
static void calibrate_timers(void)
{
    enum { BATCHES = 16, PAIRS = 64 };
    uint64_t offset = MT_SLOT_RECORDS_OFFSET(mt_params.ncounters) +
                      (uint64_t)mt_params.ntimers * MT_REC_SIZE;
    mt_timer_record *r = timer_record(current_slot(), offset);
    uint64_t least = ~(uint64_t)0;
    for (int b = 0; b < BATCHES; b++) {
        uint64_t before = r->inclusive;
        mt_timer_calibrate(offset, PAIRS);
        if (r->inclusive - before < least)
            least = r->inclusive - before;
    }
    rt.timer_bias = least * 1000 / PAIRS;
    rt.hdr->timer_bias = rt.timer_bias;
}

/* The real callee of wrapper `w` in this blob's object: a PLT stub or
 * procedure of it, or what the loader stored in its GOT slot (-fno-plt). */
static uintptr_t own_callee(int w)
{
    uintptr_t bias = (uintptr_t)mt_blob_start - mt_params.blob_vaddr;
    return mt_params.wrap_got[w] ? *(const uintptr_t *)(mt_params.wrap_got[w] + bias)
                                 : mt_params.wrap_real[w] + bias;
}

/* The executable's, once the loader has filled its GOT (at its entry). */
static void find_wrap_callees(void)
{
    for (int w = 0; w < MT_RT_WRAP_COUNT; w++)
        rt.wrap_callee[w] = own_callee(w);
    mt_real_syscall = rt.wrap_callee[MT_RT_WRAP_SYSCALL];
}

/* The decimal number at *v, below 2^31 (-1 when there is none or it is
 * larger), *v left past its digits. */
static long decimal_at(const char **v)
{
    const char *p = *v;
    long n = *p >= '0' && *p <= '9' ? 0 : -1;
    for (; *p >= '0' && *p <= '9'; p++)
        n = n >= 0 && n < (1l << 31) / 10 ? n * 10 + (*p - '0') : -1;
    *v = p;
    return n;
}

/* $MTOOL_TRACE_FD (decimal) when the copy traces, else -1. */
static long trace_fd(char **envp)
{
    const char *v = mt_params.trace_records ? env_value(envp, "MTOOL_TRACE_FD") : NULL;
    long fd = v ? decimal_at(&v) : -1;
    return v && *v ? -1 : fd;
}

/* $MTOOL_TRACE_FILTER (timer.h), for the process mtool started. */
static void trace_filter(char **envp)
{
    const char *v = mt_params.trace_records ? env_value(envp, "MTOOL_TRACE_FILTER") : NULL;
    long field[4] = {-1, -1, -1, -1}, parent, shift, sets;
    for (unsigned k = 0; v && k < 4; k++) {
        field[k] = decimal_at(&v);
        if (*v != (k < 3 ? ':' : 0))
            return;
        v += k < 3;
    }
    parent = field[0], shift = field[1], sets = field[2];
    if (parent <= 0 || shift < 1 || shift > 30 || sets < 1 || (sets & (sets - 1)) ||
        field[3] < 0 || field[3] > 1 || parent != sys3(SYS_GETPPID, 0, 0, 0))
        return;
    rt.filter_shift = (unsigned)shift;
    rt.filter_always = field[3] == 1;
    rt.filter_mask = (uint64_t)(sets < MT_TRACE_FILTER_LINES ? sets : MT_TRACE_FILTER_LINES) - 1;
}

/* The runtime's start, once per process: by the audit library before the
 * libraries' constructors run (mt_timer_activate_libraries), else by
 * entry.S at the program's entry; `sp` the initial stack (argc, argv...,
 * envp..., auxv). */
static void runtime_start(long *sp)
{
    static bool started;
    if (started)
        return;
    started = true;
    rt.bias = (uintptr_t)mt_blob_start - mt_params.blob_vaddr;
    find_wrap_callees();
    rt.slot_size = MT_SLOT_SIZE(mt_params.ncounters, mt_params.ntimers, mt_params.ncall_sites,
                                mt_params.trace_records);
    int argc = (int)sp[0];
    char **argv = (char **)(sp + 1), **envp = argv + argc + 1;
    char **e = envp;
    while (*e)
        e++;
    const elf_phdr_ *phdr = NULL;
    uint64_t phnum = 0;
    for (uint64_t *aux = (uint64_t *)(e + 1); aux[0]; aux += 2)
        if (aux[0] == AT_RANDOM_)
            rt.random = (const uint8_t *)aux[1];
        else if (aux[0] == AT_PHDR_)
            phdr = (const elf_phdr_ *)aux[1];
        else if (aux[0] == AT_PHNUM_)
            phnum = aux[1];
    output_dir(envp, rt.dir, sizeof rt.dir);
    rt.trace_fd = trace_fd(envp);
    trace_filter(envp);
    const char *ring = env_value(envp, "MTOOL_TRACE_RING");
    rt.no_ring = ring && ring[0] == '0' && !ring[1];
    open_profile(argv, 0);
    mt_slot_header *slot = rt.hdr ? map_slot(0, NULL) : NULL;
    track(0, slot);
    if (slot) {
        set_gs(slot);
        if (mt_params.trace_records) { /* before any other thread's frame can be sent */
            trace_event(MT_TRACE_LOAD_BIAS, rt.bias, 0);
            trace_thread_pointer();
            trace_send(slot, slot->tid);
        }
        if (mt_params.ntimers)
            calibrate_timers();
        if (!map_images())
            apply_patches((const mt_rt_patch *)(mt_params.patches_vaddr + rt.bias),
                          mt_params.npatches, rt.bias);
        start_activating_libraries(phdr, phnum);
    } else {
        say("no memory for counters: the program runs uninstrumented");
    }
}

/* Called by entry.S with the initial stack; returns the original entry. */
HIDDEN uintptr_t mt_runtime_init(long *sp)
{
    runtime_start(sp);
    return mt_params.original_entry + rt.bias;
}

/* Called by the audit library when the loader's list is consistent: first
 * at start-up, every object mapped and relocated, before their
 * constructors, where the runtime starts (so that what they run counts:
 * docs/ARCHITECTURE.md, "Init order"); then after each dlopen that mapped
 * objects (the loader holds its own lock then, and relocates them after). */
HIDDEN void mt_timer_activate_libraries(long *initial_stack)
{
    if (!libs.ready && initial_stack)
        runtime_start(initial_stack);
    else
        activate_libraries(false);
}


/* ---- wrappers (call sites in instrumented code are redirected here) ------ */

/* A library copy's calls are redirected to its own blob's wrappers, like
 * the executable's, but that blob's runtime never starts (its state is
 * the executable's runtime's): the copy's wrapper calls its object's own
 * real callee (REAL) through the routines of the executable's runtime,
 * SERVING(routine), which lies at the same offset in that runtime's blob
 * (activate_library checks that the headers are the same). */
#define REAL(id, type) \
    ((type)(mt_params.is_library ? own_callee(MT_RT_WRAP_##id) : rt.wrap_callee[MT_RT_WRAP_##id]))
#define SERVING(routine)                                                                     \
    (mt_params.is_library                                                                    \
         ? (__typeof__(&routine))(__atomic_load_n(&serving_blob, __ATOMIC_ACQUIRE) +          \
                                  ((uintptr_t)&routine - (uintptr_t)mt_blob_start))          \
         : &routine)

/* Called by mt_timer_trace_flush (probes.S) when the calling thread's frame
 * is full; a library copy's records are the slot's, which the executable's
 * runtime sends. */
HIDDEN void mt_trace_flush(void) { SERVING(trace_flush_here)(); }

typedef int (*fork_fn)(void);

/* In a new process (fork, or a clone without CLONE_VM): its counts go to a
 * file of its own, from zero, at the same address (the calling thread's %gs
 * keeps pointing at its slot). */
static void become_child_process(void)
{
    uintptr_t slot = 0;
    sys3(SYS_ARCH_PRCTL, ARCH_GET_GS, (long)&slot, 0);
    mt_profile_header *parent = rt.hdr;
    rt.grow_lock = 0; /* a parent thread may have held it at the fork */
    rt.filter_shift = 0; /* its frames and the parent's interleave */
    /* The parent's slots are not the child's to reuse. */
    for (uint32_t i = 0; i < parent->nslots && i < MAX_TRACKED; i++)
        rt.slots[i] = NULL;
    open_profile(NULL, MT_PROFILE_FORKED);
    /* The child keeps the parent's command line. */
    if (rt.hdr) { /* ... and its libraries, where they were */
        copy_bytes(rt.hdr->args, parent->args, sizeof parent->args);
        copy_bytes(rt.hdr->libraries, parent->libraries, sizeof parent->libraries);
        rt.hdr->nlibraries = parent->nlibraries;
    }
    if (parent != rt.hdr)
        sys3(SYS_MUNMAP, (long)parent, MT_PROFILE_HEADER_SIZE, 0);
    if (slot && rt.hdr)
        track(0, map_slot(0, (void *)slot));
}

static int fork_counted(fork_fn real)
{
    /* The parent and the child run at once from here: their frames are
     * short (as a second thread's), and what the parent recorded before
     * goes first (mtool simulates a long frame as it comes: sim/trace.c's
     * merge). */
    several_threads = true;
    frame_cut();
    mt_profile_header *before = rt.hdr;
    int pid = real();
    /* A counted libc's _Fork gave the child its profile already
     * (clone_child_here): rt.hdr is that one. */
    if (pid != 0 || !rt.hdr || rt.hdr != before) {
        if (pid != 0)
            frame_cut();
        return pid;
    }
    become_child_process();
    return pid;
}

HIDDEN int mt_wrap_FORK(void) { return SERVING(fork_counted)(REAL(FORK, fork_fn)); }
HIDDEN int mt_wrap_FORK_ONLY(void) { return SERVING(fork_counted)(REAL(FORK_ONLY, fork_fn)); }

/* Threads: a trampoline record lives in a page of its own until the new
 * thread has read it (thread creation costs far more than an mmap). */
typedef struct {
    void *(*start)(void *);         /* pthread_create's */
    int (*c11_start)(void *);       /* thrd_create's */
    void *arg;
    int32_t creator;                /* traced_creator's */
} thread_start_rec;

/* The new thread's record, read before it runs any instrumented code, with
 * a slot of its own.  A start can pass two wrappers: a library's
 * thrd_create wrapped at its import calls libc's, and a counted libc's own
 * call of pthread_create inside it is wrapped too (as in a static
 * program), so the thread runs both trampolines: the first attaches it,
 * the second finds it attached (a second slot would count it as two
 * threads). */
static thread_start_rec attach_started(void *p)
{
    thread_start_rec r = *(thread_start_rec *)p;
    sys3(SYS_MUNMAP, (long)p, PAGE, 0);
    if (!attached())
        trace_parent(attach_thread(), r.creator);
    return r;
}

static void *thread_start(void *p)
{
    thread_start_rec r = attach_started(p);
    return r.start(r.arg);
}

static int c11_thread_start(void *p)
{
    thread_start_rec r = attach_started(p);
    return r.c11_start(r.arg);
}

/* A record for the thread about to be created, NULL when none can be had:
 * the thread then shares its creator's slot (counts stay, exactness may
 * not). */
static thread_start_rec *start_record(void *arg)
{
    thread_start_rec *r = rt.hdr ? map(NULL, PAGE, MAP_PRIVATE_ | MAP_ANONYMOUS_, -1, 0) : NULL;
    if (r) {
        r->arg = arg;
        r->creator = traced_creator();
        several_threads = true;
        frame_cut();
    }
    return r;
}

/* After the creation call: the record is the new thread's, or nobody's. */
static int created(thread_start_rec *r, int rc)
{
    frame_cut();
    if (rc != 0) /* pthread_create's and thrd_create's success are both 0 */
        sys3(SYS_MUNMAP, (long)r, PAGE, 0);
    return rc;
}

typedef int (*create_fn)(void *, const void *, void *(*)(void *), void *);

static int create_thread(create_fn real, void *thread, const void *attr, void *(*start)(void *),
                         void *arg)
{
    thread_start_rec *r = start_record(arg);
    if (!r)
        return real(thread, attr, start, arg);
    r->start = start;
    return created(r, real(thread, attr, thread_start, r));
}

HIDDEN int mt_wrap_PTHREAD_CREATE(void *thread, const void *attr, void *(*start)(void *), void *arg)
{
    return SERVING(create_thread)(REAL(PTHREAD_CREATE, create_fn), thread, attr, start, arg);
}

typedef int (*c11_create_fn)(void *, int (*)(void *), void *);

static int create_c11_thread(c11_create_fn real, void *thread, int (*start)(void *), void *arg)
{
    thread_start_rec *r = start_record(arg);
    if (!r)
        return real(thread, start, arg);
    r->c11_start = start;
    return created(r, real(thread, c11_thread_start, r));
}

HIDDEN int mt_wrap_THRD_CREATE(void *thread, int (*start)(void *), void *arg)
{
    return SERVING(create_c11_thread)(REAL(THRD_CREATE, c11_create_fn), thread, start, arg);
}

/* Tasks that a counted or traced object's own system calls create
 * (rewriter/relocate.c, "Tasks a copy creates"), called in the child
 * before it runs any probe, on whatever stack it was given.  A task of
 * a thread group it does not lead (CLONE_THREAD: its tid is not its pid)
 * is a thread.
 * Else the flags say what it is: without CLONE_VM a process (fork's
 * treatment: a profile of its own); with CLONE_VFORK as well, a task that
 * borrows the parent's memory while the parent waits (posix_spawn): it
 * counts on in the parent's slot, exactly, and nothing of the parent's is
 * written; else a thread outside the thread group, given a slot of its
 * own (reuse_slot asks the kernel about it by its id alone).  A thread a
 * wrapper created finds itself attached in its trampoline.  clone's flags
 * are in %rdi; clone3's in its arguments' memory, which a thread of the
 * group must not read (its creator may have reused that stack already:
 * glibc's pthread_create), a process child reads in its own copy, and a
 * CLONE_VFORK child while its parent waits; only a clone3 with CLONE_VM
 * alone (no libc issues one) reads them while its creator runs on.  The
 * window left: a signal delivered between the system call and this hook
 * runs its handler on the creator's slot (glibc's threads start with
 * signals blocked; a fork child may not). */
enum { CLONE_VM_ = 0x100, CLONE_VFORK_ = 0x4000 };

static uint64_t clone_flags(long nr, uint64_t arg)
{
    if (sys3(SYS_GETTID, 0, 0, 0) != sys3(SYS_GETPID, 0, 0, 0))
        return CLONE_VM_; /* CLONE_THREAD, which needs CLONE_VM */
    return nr == MT_NR_CLONE3 ? *(const uint64_t *)(uintptr_t)arg /* clone_args.flags */
           : nr == MT_NR_CLONE ? arg
                              : 0; /* SYS_fork */
}

static void clone_child_here(long nr, uint64_t arg)
{
    if (!rt.hdr)
        return;
    uint64_t flags = clone_flags(nr, arg);
    if (!(flags & CLONE_VM_)) {
        become_child_process();
        return;
    }
    if (flags & CLONE_VFORK_) { /* the parent's filter too (shared memory): what the
                                   child runs next may be traced beside it */
        rt.filter_shift = 0;
        return;
    }
    int32_t creator = tracing() ? current_slot()->tid : 0;
    __atomic_store_n(&several_threads, true, __ATOMIC_RELAXED);
    trace_parent(attach_thread(), creator);
}

HIDDEN void mt_after_clone(long nr, uint64_t arg) { SERVING(clone_child_here)(nr, arg); }

/* OpenMP: every thread of a parallel region runs `fn`; the region is
 * synchronous, so the record can live on the caller's stack. */
typedef struct {
    void (*fn)(void *);
    void *data;
    int32_t creator;                /* traced_creator's */
} omp_rec;

static void omp_start(void *p)
{
    const omp_rec *r = p;
    if (!attached())
        trace_parent(attach_thread(), r->creator);
    r->fn(r->data);
}

typedef void (*omp_fn)(void *);

/* Before a parallel region: at the first, the creator's frame (long while
 * it was alone) is sent, and the frames are short from then on. */
static int32_t omp_creator(void)
{
    if (!several_threads) {
        several_threads = true;
        frame_cut();
    }
    return traced_creator();
}

HIDDEN void mt_wrap_GOMP_PARALLEL(omp_fn fn, void *data, unsigned n, unsigned flags)
{
    omp_rec r = {fn, data, SERVING(omp_creator)()};
    REAL(GOMP_PARALLEL, void (*)(omp_fn, void *, unsigned, unsigned))(SERVING(omp_start), &r, n,
                                                                       flags);
}

HIDDEN void mt_wrap_GOMP_PARALLEL_SECTIONS(omp_fn fn, void *data, unsigned n, unsigned count,
                                           unsigned flags)
{
    omp_rec r = {fn, data, SERVING(omp_creator)()};
    REAL(GOMP_PARALLEL_SECTIONS, void (*)(omp_fn, void *, unsigned, unsigned, unsigned))(
        SERVING(omp_start), &r, n, count, flags);
}

#define LOOP_WRAPPER(id)                                                                       \
    HIDDEN void mt_wrap_##id(omp_fn fn, void *data, unsigned n, long start, long end, long incr, \
                             long chunk, unsigned flags)                                       \
    {                                                                                          \
        omp_rec r = {fn, data, SERVING(omp_creator)()};                                     \
        REAL(id, void (*)(omp_fn, void *, unsigned, long, long, long, long, unsigned))(        \
            SERVING(omp_start), &r, n, start, end, incr, chunk, flags);                        \
    }
LOOP_WRAPPER(GOMP_PARALLEL_LOOP_STATIC)
LOOP_WRAPPER(GOMP_PARALLEL_LOOP_DYNAMIC)
LOOP_WRAPPER(GOMP_PARALLEL_LOOP_GUIDED)
LOOP_WRAPPER(GOMP_PARALLEL_LOOP_NONMONOTONIC_DYNAMIC)
LOOP_WRAPPER(GOMP_PARALLEL_LOOP_NONMONOTONIC_GUIDED)

HIDDEN void mt_wrap_GOMP_PARALLEL_LOOP_RUNTIME(omp_fn fn, void *data, unsigned n, long start,
                                               long end, long incr, unsigned flags)
{
    omp_rec r = {fn, data, SERVING(omp_creator)()};
    typedef void (*loop_runtime_fn)(omp_fn, void *, unsigned, long, long, long, unsigned);
    REAL(GOMP_PARALLEL_LOOP_RUNTIME, loop_runtime_fn)(SERVING(omp_start), &r, n, start, end, incr,
                                                      flags);
}

/* ---- the allocator (tracing copies only: MT_RT_HEAP_WRAPPERS) ------------- */

/* Sends the calling thread's frame now when the process has several
 * threads: what it just recorded reaches mtool before the later frames of
 * the others (timer.h). */
static void send_if_threads(void)
{
    if (__atomic_load_n(&rt.hdr->nthreads, __ATOMIC_RELAXED) > 1) {
        mt_slot_header *s = current_slot();
        trace_send(s, s->tid);
    }
}

/* A block made by allocator `wrap` (NULL: none, nothing to say); a
 * library copy's, in the executable's runtime (SERVING): its trace state. */
static void *heap_made_here(int wrap, void *p, uint64_t bytes)
{
    if (p && tracing()) {
        trace_event(MT_TRACE_ALLOC_SIZE, bytes, 0);
        trace_event(MT_TRACE_ALLOC, (uint64_t)(uintptr_t)p, (uint32_t)wrap);
    }
    return p;
}

static void *heap_made(int wrap, void *p, uint64_t bytes)
{
    return SERVING(heap_made_here)(wrap, p, bytes);
}

/* Where the calling thread's frame stands: its STAMP (a frame sent gets a
 * new one: trace_reset) and its index; stamp 0 when not tracing. */
typedef struct {
    uint64_t stamp;
    int64_t index;
} frame_mark;

static frame_mark frame_mark_here(void)
{
    frame_mark m = {0, 0};
    if (tracing()) {
        mt_slot_header *s = current_slot();
        m.stamp = frame_stamp(s)->addr;
        m.index = *(int64_t *)(trace_area(s) + MT_TRACE_INDEX);
    }
    return m;
}

static mt_trace_record *frame_record(mt_slot_header *s, int64_t index)
{
    return (mt_trace_record *)(trace_area(s) + MT_TRACE_AREA_SIZE(mt_params.trace_records) +
                               index * 8);
}

/* A block the allocator wrote itself before returning it (calloc's
 * zeroing, recorded inside a traced libc): its ALLOC events go before
 * the records made since `m`, the allocation call's start, so that mtool
 * gives those stores to the block rather than to "(other)" (the block is
 * only known once the call returns).  Moved only while every record since
 * `m` is still in the frame, with room for the events: a frame sent in
 * between (a zeroing of more records than the frame holds: 1023 once the
 * process has had a second thread) keeps them after, as before.  Why here
 * rather than by mtool attributing a range afterwards: the frame's records
 * are in order already, and the simulator's data objects stay as they are
 * (an event before the references that fall in its range). */
static void *heap_made_before_here(frame_mark m, int wrap, void *p, uint64_t bytes)
{
    if (!p || !tracing())
        return p;
    mt_slot_header *s = current_slot();
    int64_t *index = (int64_t *)(trace_area(s) + MT_TRACE_INDEX);
    bool in_frame = m.stamp && frame_stamp(s)->addr == m.stamp && *index >= m.index &&
                    *index + 4 < 0; /* the two events send nothing */
    heap_made_here(wrap, p, bytes);
    if (!in_frame)
        return p;
    mt_trace_record *first = frame_record(s, m.index), *end = frame_record(s, *index);
    mt_trace_record events[2] = {end[-2], end[-1]};
    for (mt_trace_record *r = end - 1; r >= first + 2; r--)
        *r = r[-2];
    first[0] = events[0];
    first[1] = events[1];
    return p;
}

/* A block about to be retired.  With several threads the frame goes at
 * once: another thread may get the same block back as soon as it is free,
 * and its frame must not reach mtool before this free (timer.h). */
static void heap_retired_here(void *p)
{
    if (!p || !tracing())
        return;
    trace_event(MT_TRACE_FREE, (uint64_t)(uintptr_t)p, 0);
    send_if_threads();
}

static void heap_retired(void *p) { SERVING(heap_retired_here)(p); }

typedef void *(*alloc1_fn)(uint64_t);
typedef void *(*alloc2_fn)(uint64_t, uint64_t);
typedef void (*free_fn)(void *);
typedef void (*free_sized_fn)(void *, uint64_t);

HIDDEN void *mt_wrap_MALLOC(uint64_t n)
{
    return heap_made(MT_RT_WRAP_MALLOC, REAL(MALLOC, alloc1_fn)(n), n);
}

HIDDEN void *mt_wrap_CALLOC(uint64_t n, uint64_t size)
{
    frame_mark m = SERVING(frame_mark_here)();
    return SERVING(heap_made_before_here)(m, MT_RT_WRAP_CALLOC, REAL(CALLOC, alloc2_fn)(n, size),
                                         n * size);
}

/* realloc(p, 0) frees p and returns NULL; a failed realloc leaves p alone. */
HIDDEN void *mt_wrap_REALLOC(void *old, uint64_t n)
{
    void *p = REAL(REALLOC, void *(*)(void *, uint64_t))(old, n);
    if (p || n == 0)
        heap_retired(old);
    return heap_made(MT_RT_WRAP_REALLOC, p, n);
}

HIDDEN void mt_wrap_FREE(void *p)
{
    heap_retired(p);
    REAL(FREE, free_fn)(p);
}

HIDDEN void *mt_wrap_ALIGNED_ALLOC(uint64_t align, uint64_t n)
{
    return heap_made(MT_RT_WRAP_ALIGNED_ALLOC, REAL(ALIGNED_ALLOC, alloc2_fn)(align, n), n);
}

HIDDEN int mt_wrap_POSIX_MEMALIGN(void **out, uint64_t align, uint64_t n)
{
    int rc = REAL(POSIX_MEMALIGN, int (*)(void **, uint64_t, uint64_t))(out, align, n);
    if (rc == 0)
        heap_made(MT_RT_WRAP_POSIX_MEMALIGN, *out, n);
    return rc;
}

HIDDEN void *mt_wrap_MEMALIGN(uint64_t align, uint64_t n)
{
    return heap_made(MT_RT_WRAP_MEMALIGN, REAL(MEMALIGN, alloc2_fn)(align, n), n);
}

HIDDEN void *mt_wrap_VALLOC(uint64_t n)
{
    return heap_made(MT_RT_WRAP_VALLOC, REAL(VALLOC, alloc1_fn)(n), n);
}

HIDDEN void *mt_wrap_NEW(uint64_t n)
{
    return heap_made(MT_RT_WRAP_NEW, REAL(NEW, alloc1_fn)(n), n);
}

HIDDEN void *mt_wrap_NEW_ARRAY(uint64_t n)
{
    return heap_made(MT_RT_WRAP_NEW_ARRAY, REAL(NEW_ARRAY, alloc1_fn)(n), n);
}

HIDDEN void mt_wrap_DELETE(void *p)
{
    heap_retired(p);
    REAL(DELETE, free_fn)(p);
}

HIDDEN void mt_wrap_DELETE_ARRAY(void *p)
{
    heap_retired(p);
    REAL(DELETE_ARRAY, free_fn)(p);
}

HIDDEN void mt_wrap_DELETE_SIZED(void *p, uint64_t n)
{
    heap_retired(p);
    REAL(DELETE_SIZED, free_sized_fn)(p, n);
}

HIDDEN void mt_wrap_DELETE_ARRAY_SIZED(void *p, uint64_t n)
{
    heap_retired(p);
    REAL(DELETE_ARRAY_SIZED, free_sized_fn)(p, n);
}

HIDDEN void *mt_wrap_MMAP(void *addr, uint64_t len, int prot, int flags, int fd, int64_t off)
{
    void *p = REAL(MMAP, void *(*)(void *, uint64_t, int, int, int, int64_t))(addr, len, prot,
                                                                               flags, fd, off);
    return p == (void *)-1 ? p : heap_made(MT_RT_WRAP_MMAP, p, len);
}

HIDDEN int mt_wrap_MUNMAP(void *addr, uint64_t len)
{
    heap_retired(addr);
    return REAL(MUNMAP, int (*)(void *, uint64_t))(addr, len);
}

/* ---- the program's page placement (tracing copies: MT_RT_PLACEMENT_WRAPPERS) */

enum { SYS_MBIND = 237, SYS_SET_MEMPOLICY = 238, SYS_MOVE_PAGES = 279 };

/* The first 64 nodes of a node mask as the kernel reads it (maxnode - 1
 * bits; none from a NULL mask, or with maxnode 1); false when the kernel
 * refuses it (more bits than a page holds, an unreadable mask). */
static bool node_mask(const uint64_t *mask, uint64_t maxnode, uint64_t *nodes)
{
    *nodes = 0;
    if (!mask || maxnode == 1)
        return true;
    if (maxnode - 1 > PAGE * 8 || !read_safely((uintptr_t)mask, nodes, sizeof *nodes))
        return false;
    if (maxnode - 1 < 64)
        *nodes &= (1ull << (maxnode - 1)) - 1;
    return true;
}

static void policy_set(long mode, const uint64_t *mask, uint64_t maxnode)
{
    uint64_t nodes;
    if (!tracing() || !node_mask(mask, maxnode, &nodes))
        return;
    trace_event(MT_TRACE_POLICY_NODES, nodes, 0);
    trace_event(MT_TRACE_SET_POLICY, 0, (uint32_t)mode);
    send_if_threads();
}

static void range_bound(uint64_t start, uint64_t len, long mode, const uint64_t *mask,
                        uint64_t maxnode, uint64_t flags)
{
    uint64_t nodes;
    if (!tracing() || !node_mask(mask, maxnode, &nodes))
        return;
    trace_event(MT_TRACE_POLICY_NODES, nodes, 0);
    trace_event(MT_TRACE_MBIND_LENGTH, len, (uint32_t)flags);
    trace_event(MT_TRACE_MBIND, start, (uint32_t)mode);
    send_if_threads();
}

/* move_pages of this process with nodes (without: a query, nothing moves):
 * a MOVE_PAGE per page, up to the first entry that cannot be read. */
static void pages_moved(long pid, uint64_t count, const uint64_t *pages, const int32_t *nodes)
{
    if (!tracing() || !nodes || (pid && pid != sys3(SYS_GETPID, 0, 0, 0)))
        return;
    enum { CHUNK = 32 };
    for (uint64_t at = 0; at < count; at += CHUNK) {
        uint64_t n = count - at < CHUNK ? count - at : CHUNK, page[CHUNK];
        int32_t node[CHUNK];
        if (!read_safely((uintptr_t)(pages + at), page, n * sizeof *page) ||
            !read_safely((uintptr_t)(nodes + at), node, n * sizeof *node))
            break;
        for (uint64_t i = 0; i < n; i++)
            if (node[i] >= 0)
                trace_event(MT_TRACE_MOVE_PAGE, page[i], (uint32_t)node[i]);
    }
    send_if_threads();
}

typedef long (*mbind_fn)(void *, uint64_t, long, const uint64_t *, uint64_t, uint64_t);
typedef long (*set_mempolicy_fn)(long, const uint64_t *, uint64_t);
typedef long (*move_pages_fn)(long, uint64_t, void **, const int32_t *, int32_t *, long);

HIDDEN long mt_wrap_MBIND(void *start, uint64_t len, long mode, const uint64_t *mask,
                          uint64_t maxnode, uint64_t flags)
{
    long rc = REAL(MBIND, mbind_fn)(start, len, mode, mask, maxnode, flags);
    range_bound((uint64_t)(uintptr_t)start, len, (int)mode, mask, maxnode, (uint32_t)flags);
    return rc;
}

HIDDEN long mt_wrap_SET_MEMPOLICY(long mode, const uint64_t *mask, uint64_t maxnode)
{
    long rc = REAL(SET_MEMPOLICY, set_mempolicy_fn)(mode, mask, maxnode);
    policy_set((int)mode, mask, maxnode);
    return rc;
}

HIDDEN long mt_wrap_MOVE_PAGES(long pid, uint64_t count, void **pages, const int32_t *nodes,
                               int32_t *status, long flags)
{
    long rc = REAL(MOVE_PAGES, move_pages_fn)(pid, count, pages, nodes, status, flags);
    pages_moved((int)pid, count, (const uint64_t *)pages, nodes);
    return rc;
}

/* syscall(SYS_mbind | SYS_set_mempolicy | SYS_move_pages, ...), which
 * entry.S's mt_wrap_SYSCALL jumps to with the caller's arguments as they
 * were (the seventh, if any, on the stack); the int arguments as the
 * kernel takes them, their low 32 bits. */
/* The real syscall(): the executable's is found at its entry
 * (mt_real_syscall); a library copy's runtime never starts, so its own is
 * looked up on each call (libnuma's mbind: its copy jumped to 0). */
HIDDEN uintptr_t mt_own_syscall(void) { return own_callee(MT_RT_WRAP_SYSCALL); }

HIDDEN long mt_placement_syscall(long nr, long a, long b, long c, long d, long e, long f)
{
    uintptr_t real = mt_params.is_library ? mt_own_syscall() : mt_real_syscall;
    long rc = ((long (*)(long, ...))real)(nr, a, b, c, d, e, f);
    if (nr == SYS_SET_MEMPOLICY)
        policy_set((int)a, (const uint64_t *)b, (uint64_t)c);
    else if (nr == SYS_MBIND)
        range_bound((uint64_t)a, (uint64_t)b, (int)c, (const uint64_t *)d, (uint64_t)e,
                    (uint32_t)f);
    else
        pages_moved((int)a, (uint64_t)b, (const uint64_t *)c, (const int32_t *)d);
    return rc;
}

/* A thread's TLS block of a traced library (general- and local-dynamic
 * TLS, gcc's for -fPIC: the library's code asks ld.so's __tls_get_addr
 * for the address of module id + offset; the block may be static or one
 * ld.so allocates in each thread on its first use, as libmtmem.so's is
 * under LD_AUDIT, where ld.so sets up the main thread's TLS before it
 * maps the program's libraries): LIBRARY_TLS with the block's start, made in
 * the copy's runtime, which knows its counter_base.  An event a call: the
 * call itself makes two references (its return address), and nothing
 * per thread is at hand here to remember the block in. */
typedef struct {
    uint64_t module, offset;
} tls_index_;

static void tls_block_seen(uint64_t block, uint32_t library)
{
    if (tracing())
        trace_event(MT_TRACE_LIBRARY_TLS, block, library);
}

HIDDEN void *mt_wrap_TLS_GET_ADDR(const tls_index_ *ti)
{
    void *p = REAL(TLS_GET_ADDR, void *(*)(const tls_index_ *))(ti);
    SERVING(tls_block_seen)((uint64_t)(uintptr_t)p - ti->offset, mt_params.counter_base);
    return p;
}

HIDDEN int mt_wrap_PTHREAD_JOIN(uint64_t thread, void **value)
{
    frame_cut();
    int rc = REAL(PTHREAD_JOIN, int (*)(uint64_t, void **))(thread, value);
    frame_cut();
    return rc;
}
