/* timer/timer.h — the contract between the rewriter and the runtime that
 * lives inside instrumented programs, and the profile file format.
 *
 * The runtime (timer/runtime.c, timer/entry.S) is built freestanding: no
 * libc, raw system calls, position-independent code with no relocations,
 * linked into one flat blob that starts with an mt_rt_header.  The rewriter
 * copies the blob into the instrumented executable's new segment, fills the
 * mt_rt_params block inside it and points e_entry at the entry stub.
 *
 * Counters.  Every thread has its own slot of counters in a profile file
 * mapped MAP_SHARED, and the %gs base of each thread points at its slot, so a
 * probe is one instruction, `incq %gs:MT_SLOT_COUNTERS_OFFSET+8*i`: exact
 * under signals, never shared between threads (no lost updates, no shared
 * cache lines), and already on disk when the process ends however it ends
 * (exit, _exit, abort, fatal signal, SIGKILL, exec).  New threads inherit the
 * creator's %gs base; the runtime's wrappers (pthread_create, thrd_create,
 * the libgomp parallel entry points) give them their own slot before they
 * run any instrumented code.  fork's and _Fork's wrappers give the child
 * its own profile file.
 *
 * This header is included both by the host (mtool) and by the runtime, so it
 * uses only fixed-size types. */
#ifndef MTOOL_TIMER_H
#define MTOOL_TIMER_H

#define MT_RT_MAGIC 0x3154524c4f4f544d /* "MTOOLRT1" little-endian */
#define MT_RT_VERSION 13

/* Entry points of the runtime (timer/probes.S) called from code the
 * rewriter inserts: the outside-call brackets of pass 2, and pass 1's
 * recording of the targets of calls through pointers; and the one the
 * audit library (timer/audit.c) calls when the loader's list is
 * consistent: at start-up, once every object is mapped and relocated and
 * before their constructors (the runtime starts there), then whenever
 * dlopen has mapped new objects.
 * X(ID, symbol suffix). */
#define MT_RT_TIMER_ENTRIES(X)                                      \
    X(OUTSIDE_ENTER, outside_enter)                                 \
    X(OUTSIDE_EXIT, outside_exit)                                   \
    X(RECORD_CALL_TARGET, record_call_target)                       \
    X(TRACE_FLUSH, trace_flush) /* a trace frame is full */         \
    X(AFTER_CLONE, after_clone) /* after a task-creating syscall */ \
    X(ACTIVATE_LIBRARIES, activate_libraries) /* void (long *initial_stack), C ABI */

/* Pass-2 timer events: code the rewriter copies from the blob onto the
 * edges of timed m-objects (probes.S, EVENT), patched per event
 * (mt_rt_event_code).  X(ID, symbol suffix). */
#define MT_RT_TIMER_EVENTS(X)                                       \
    X(START_PROC, start_proc) /* at entries: flags dead, no red zone (the ABI) */ \
    X(START_LOOP, start_loop)                                       \
    X(START_LOOP_FLAGS, start_loop_flags)                           \
    X(STOP_LEAVE, stop_leave) /* at returns and tail calls: the same */ \
    X(STOP, stop)                                                   \
    X(STOP_FLAGS, stop_flags)

/* Byte offsets of the timer fields in a slot (also used by probes.S).
 * Slot header: */
#define MT_SLOT_TIMER_TOP 8       /* uint64_t: slot offset of the top timer frame */
#define MT_SLOT_SELF 24           /* uint64_t: the slot's own address (for C code) */
#define MT_SLOT_SYSCALL_NR 32     /* uint64_t: the number of the last system call the
                                     rewriter could not name (relocate.c, "Tasks a copy
                                     creates") */
#define MT_SLOT_CLOCK_NEXT 40     /* uint64_t: TSC from which a stop measures the clock */
#define MT_SLOT_CLOCK_SCALE 48    /* uint64_t: core cycles per TSC tick, fixed point with
                                     MT_CLOCK_SCALE_BITS fraction bits (0: not measured) */
#define MT_SLOT_CLOCK_AT 56       /* uint64_t: TSC of the last measurement */
/* The core clock in the timed program's own thread (runtime.c,
 * mt_timer_clock_probe).  Without performance counters a core cycle is a
 * TSC tick times a ratio, and mtool's measurements before and after a run
 * miss a clock that moves within milliseconds (docs/REPORT.md, "The clock
 * is measured around a run").  So a stop at least MT_CLOCK_PROBE_EVERY
 * ticks after the last measurement times dependent imul chains there and
 * adds to the record of every open frame its ticks since that measurement
 * (or since its entry) at the clock over them, the mean of the two
 * measurements; every stop adds its own frame's ticks since the last
 * measurement at the latest clock.  A record's `cycles` is so the integral
 * of its inclusive time over the thread's clock.  16 fraction bits: 1/65536
 * of a cycle a tick, and ticks x scale stays below 2^64 for 2^46 ticks (7
 * hours at 2.5 GHz). */
#define MT_CLOCK_SCALE_BITS 16
#define MT_CLOCK_PROBE_EVERY 5000000
/* The task hook's number when the number is MT_SLOT_SYSCALL_NR's (no
 * system call has it). */
#define MT_SYSCALL_NR_IN_SLOT 0xffff
/* The system calls that create a task (x86-64 numbers, whatever the host
 * that rewrites): the rewriter hooks them (relocate.c), the hook tells
 * them from the rest (probes.S), the runtime reads each one's flags. */
#define MT_NR_CLONE 56
#define MT_NR_FORK 57
#define MT_NR_CLONE3 435
/* Timer frame (one per active m-object, innermost on top): */
#define MT_FRAME_RSP 0
#define MT_FRAME_T0 8
#define MT_FRAME_CHILD 16
#define MT_FRAME_OUTSIDE 24
#define MT_FRAME_RECORD 32
#define MT_FRAME_OUTSIDE_T0 40    /* TSC when its current outside call began, 0 = none,
                                     MT_OUTSIDE_PAUSED while a callback's object runs */
#define MT_FRAME_SIZE 48
#define MT_OUTSIDE_PAUSED 1
/* Timer record (one per m-object): */
#define MT_REC_ENTRIES 0
#define MT_REC_RECURSIVE 8
#define MT_REC_INCLUSIVE 16
#define MT_REC_EXCLUSIVE 24
#define MT_REC_OUTSIDE 32
#define MT_REC_NONLOCAL 40
#define MT_REC_DEPTH 48
#define MT_REC_CYCLES 56
#define MT_REC_SIZE 64

/* Call targets (pass 1): before every call (or tail jump) through a
 * pointer in a counting copy, `push TARGET; push $SITE; call
 * mt_timer_record_call_target` counts the target in the site's table: the
 * first MT_CALL_TARGETS distinct targets each with their calls, the rest
 * together in `overflow`.  Run-time addresses: the header's load_bias makes
 * the executable's link-time ones; a library copy's sites are a range of
 * the slot's whose load base the runtime puts in the header's `libraries`
 * when it activates the copy (version 7). */
#define MT_CALL_TARGETS 15
#define MT_CALL_SITE_SIZE 256
#define MT_CALL_SITE_OVERFLOW (16 * MT_CALL_TARGETS)

/* Functions whose call sites in instrumented code the rewriter redirects to
 * a runtime wrapper with the same signature.  X(ID, "symbol name").
 * C11's thrd_create and glibc's _Fork are wrapped through imports only (a
 * PLT stub or GOT slot), never as a static executable's own functions:
 * there glibc's thrd_create runs pthread_create's body and its fork calls
 * _Fork, both wrapped already (MT_RT_IMPORT_ONLY). */
#define MT_RT_WRAPPERS(X)                                           \
    X(FORK, "fork")                                                 \
    X(PTHREAD_CREATE, "pthread_create")                             \
    X(THRD_CREATE, "thrd_create")                                   \
    X(FORK_ONLY, "_Fork")                                           \
    X(GOMP_PARALLEL, "GOMP_parallel")                               \
    X(GOMP_PARALLEL_SECTIONS, "GOMP_parallel_sections")             \
    X(GOMP_PARALLEL_LOOP_STATIC, "GOMP_parallel_loop_static")       \
    X(GOMP_PARALLEL_LOOP_DYNAMIC, "GOMP_parallel_loop_dynamic")     \
    X(GOMP_PARALLEL_LOOP_GUIDED, "GOMP_parallel_loop_guided")       \
    X(GOMP_PARALLEL_LOOP_RUNTIME, "GOMP_parallel_loop_runtime")     \
    X(GOMP_PARALLEL_LOOP_NONMONOTONIC_DYNAMIC,                      \
      "GOMP_parallel_loop_nonmonotonic_dynamic")                    \
    X(GOMP_PARALLEL_LOOP_NONMONOTONIC_GUIDED,                       \
      "GOMP_parallel_loop_nonmonotonic_guided")                     \
    MT_RT_HEAP_WRAPPERS(X)

/* The allocator's entry points, wrapped in tracing copies only (the rewriter
 * leaves them alone in counting and timing copies): each reports the block
 * it made or retired as records of the thread's trace frame ("Traced loads
 * and stores").  They come last: MT_RT_WRAP_MALLOC is the first of them. */
#define MT_RT_HEAP_WRAPPERS(X)                                      \
    X(MALLOC, "malloc")                                             \
    X(CALLOC, "calloc")                                             \
    X(REALLOC, "realloc")                                           \
    X(FREE, "free")                                                 \
    X(ALIGNED_ALLOC, "aligned_alloc")                               \
    X(POSIX_MEMALIGN, "posix_memalign")                             \
    X(MEMALIGN, "memalign")                                         \
    X(VALLOC, "valloc")                                             \
    X(NEW, "_Znwm")                                                 \
    X(NEW_ARRAY, "_Znam")                                           \
    X(DELETE, "_ZdlPv")                                             \
    X(DELETE_ARRAY, "_ZdaPv")                                       \
    X(DELETE_SIZED, "_ZdlPvm")                                      \
    X(DELETE_ARRAY_SIZED, "_ZdaPvm")                                \
    X(MMAP, "mmap")                                                 \
    X(MUNMAP, "munmap")                                             \
    MT_RT_PLACEMENT_WRAPPERS(X)

/* The program's own page placement, wrapped in tracing copies only, after
 * the allocator's (MT_RT_WRAP_SYSCALL is the first of them): libnuma's
 * entry points and glibc's syscall(), whose wrapper (entry.S) goes
 * straight on to the real one for any other system call.  Each reports
 * the call as events of the thread's trace frame ("Traced loads and
 * stores") and returns what the real one returned.  pthread_join too: the
 * thread's frame is sent before it waits and stamped again after; and
 * ld.so's __tls_get_addr, whose answer places a library's TLS block in the
 * calling thread (LIBRARY_TLS). */
#define MT_RT_PLACEMENT_WRAPPERS(X)                                 \
    X(SYSCALL, "syscall")                                           \
    X(MBIND, "mbind")                                               \
    X(SET_MEMPOLICY, "set_mempolicy")                               \
    X(MOVE_PAGES, "move_pages")                                     \
    X(PTHREAD_JOIN, "pthread_join")                                 \
    X(TLS_GET_ADDR, "__tls_get_addr")

/* What follows is C only; the macros above also serve timer/entry.S. */
#ifndef __ASSEMBLER__
#include <stdint.h>

enum {
#define MT_RT_WRAP_ENUM(id, name) MT_RT_WRAP_##id,
    MT_RT_WRAPPERS(MT_RT_WRAP_ENUM)
#undef MT_RT_WRAP_ENUM
    MT_RT_WRAP_COUNT
};
/* Wrapped through imports only (MT_RT_WRAPPERS; __tls_get_addr: a
 * library's, which ld.so exports). */
#define MT_RT_IMPORT_ONLY(w)                                                                 \
    ((w) == MT_RT_WRAP_THRD_CREATE || (w) == MT_RT_WRAP_FORK_ONLY || (w) == MT_RT_WRAP_TLS_GET_ADDR)

enum {
#define MT_RT_TIMER_ENUM(id, name) MT_RT_TIMER_##id,
    MT_RT_TIMER_ENTRIES(MT_RT_TIMER_ENUM)
#undef MT_RT_TIMER_ENUM
    MT_RT_TIMER_COUNT
};

enum {
#define MT_RT_EVENT_ENUM(id, name) MT_RT_EVENT_##id,
    MT_RT_TIMER_EVENTS(MT_RT_EVENT_ENUM)
#undef MT_RT_EVENT_ENUM
    MT_RT_EVENT_COUNT
};

/* One timer event's code in the blob.  The copy takes `len` bytes from
 * `offset`, puts the object's record offset (an mt_timer_record's slot
 * offset) in the imm32 fields at `record` and `push`, and aims the rel32
 * at `call` (the rare path) at the routine at blob offset `routine`.
 * Offsets within the code are from its first byte. */
typedef struct {
    uint32_t offset;
    uint32_t routine;
    uint16_t len;
    uint16_t record;
    uint16_t push;
    uint16_t call;
} mt_rt_event_code;

/* At offset 0 of the blob.  Offsets are from the blob's start. */
typedef struct {
    uint64_t magic;                 /* MT_RT_MAGIC */
    uint32_t version;               /* MT_RT_VERSION */
    uint32_t blob_size;             /* bytes of the blob (code and initialized data) */
    uint32_t bss_size;              /* zero bytes the runtime needs right after the blob */
    uint32_t entry_offset;          /* the entry stub: the new e_entry */
    uint32_t params_offset;         /* the mt_rt_params the rewriter fills */
    uint32_t data_offset;           /* page-aligned start of writable data: bytes
                                       before it are mapped R+X, from it on R+W */
    uint32_t wrapper_offset[MT_RT_WRAP_COUNT];
    uint32_t timer_offset[MT_RT_TIMER_COUNT];
    mt_rt_event_code event_code[MT_RT_EVENT_COUNT];
} mt_rt_header;

#define MT_RT_DIR_MAX 1024
#define MT_RT_NAME_MAX 128

/* Filled by the rewriter.  Addresses are link-time virtual addresses of the
 * instrumented executable; the runtime adds the load bias it computes from
 * its own run-time address and `blob_vaddr`. */
typedef struct {
    uint64_t blob_vaddr;            /* where the blob's first byte is linked */
    uint64_t original_entry;        /* the executable's original e_entry */
    uint64_t wrap_real[MT_RT_WRAP_COUNT]; /* the real callee (PLT stub or procedure), 0 = none */
    uint32_t ncounters;             /* counters per slot */
    uint32_t ncall_sites;           /* calls through pointers whose targets are recorded */
    uint8_t binary_hash[32];        /* SHA-256 of the original (uninstrumented) file */
    char default_dir[MT_RT_DIR_MAX];/* absolute directory used when $MTOOL_OUT is unset */
    char program_name[MT_RT_NAME_MAX]; /* file-name prefix of profiles */
    uint64_t patches_vaddr;         /* mt_rt_patch[npatches], sorted by vaddr */
    uint32_t npatches;
    uint32_t ntimers;               /* timed m-objects (pass 2): records per slot */
    uint64_t timers_id;             /* identity of the timed object list (mt_timer_set_id) */
    /* Callees reached through a GOT slot (-fno-plt): the slot's address; the
     * real callee is read from it at start-up, once the loader filled it. */
    uint64_t wrap_got[MT_RT_WRAP_COUNT];
    /* Pages of the original code with the entry jumps already written
     * (mt_rt_image[nimages], sorted by vaddr), mapped over the loader's at
     * start-up; 0 images: the runtime writes the jumps itself. */
    uint64_t images_vaddr;
    uint32_t nimages;
    /* Timers of a set (pass 2 through libraries): this object's records are
     * [timer_base, timer_base + ntimers) of the slot's; the executable's
     * ntimers counts every object's (the libraries' first).  A library's
     * records lie after slot_ncounters counters, the executable's ncounters
     * (0: a copy without timers or the executable, its own). */
    uint32_t timer_base;
    uint32_t trace_records;         /* records a slot's trace area holds: the copy traces, else 0 */
    uint32_t slot_ncounters;
    uint64_t params_file_offset;    /* where this very block lies in the file: the
                                       runtime maps images only from a file that
                                       holds the same block there */
    /* Shared libraries counted with the executable (docs/ARCHITECTURE.md,
     * "Shared libraries"): each object's counters are a range of the one
     * slot from counter_base; an executable's runtime writes the entry
     * jumps of every loaded library copy with its own libs_set (0: none). */
    uint64_t libs_set;
    uint32_t counter_base;
    uint32_t is_library;            /* this copy is a library's: its runtime never starts */
    /* Its call-site records are [call_site_base, ncall_sites) of the slot's
     * (pass 1 of a set; a library's follow slot_ncounters counters). */
    uint32_t call_site_base;
    /* A library's tracing copy: the executable's call-site records, which
     * with slot_ncounters place the slot's trace area its records go to
     * (0: a copy that does not trace, or the executable, its own). */
    uint32_t slot_ncall_sites;
} mt_rt_params;

/* One entry jump into relocated code.  The file keeps the original code
 * intact; the runtime writes these jumps at start-up, once %gs is set up,
 * because code of the executable can run before its entry point (shared
 * libraries' constructors calling functions the executable defines or
 * interposes, such as operator new or template instances): that code must
 * run the original, uncounted, not a probe with no counters behind it. */
typedef struct {
    uint64_t vaddr;                 /* link-time address of the bytes to write */
    uint8_t len;                    /* bytes used in `bytes` */
    uint8_t prot;                   /* PROT_* of the page afterwards (its segment's) */
    uint8_t bytes[6];
} mt_rt_patch;

/* A run of pages of an original segment, entry jumps included, stored
 * page-aligned in the instrumented file.  Mapping it (MAP_PRIVATE|MAP_FIXED
 * from /proc/self/exe) replaces writing the jumps into the loader's pages:
 * those writes made a private copy of every page with a jump (630 page
 * faults and copies for git, 3 ms per process); the mapped pages are shared
 * by every process through the page cache. */
typedef struct {
    uint64_t vaddr;                 /* link-time, page-aligned */
    uint64_t size;                  /* bytes, a multiple of the page size */
    uint64_t file_offset;           /* page-aligned */
    uint32_t prot;                  /* PROT_* of its segment */
    uint32_t reserved;
} mt_rt_image;

/* ---- Profile files: <dir>/<program_name>.<pid>.<16 hex digits>.mtp ----
 *
 * [mt_profile_header, padded to MT_PROFILE_HEADER_SIZE]
 * [slot 0][slot 1]... each MT_SLOT_SIZE(ncounters, ntimers, ncall_sites, trace_records)
 * bytes:
 *     [mt_slot_header, padded to MT_SLOT_COUNTERS_OFFSET][uint64_t counters[ncounters]]
 *     [mt_timer_record records[ntimers + 1]][mt_timer_frame frames[ntimers + 1]]
 *     [mt_call_site_record call_sites[ncall_sites]]
 *     [the trace area and, page aligned, the trace ring, when trace_records: see
 *      "Traced loads and stores"]
 * (the last record is the runtime's own: it measures timer_bias at start-up)
 * Only slots below `nslots` are meaningful.  The file is created sized for
 * one slot (`capacity`) and doubles as threads attach; it is sparse: only
 * the pages of counters a process touched take disk space.  The runtime
 * maps it with MADV_RANDOM, so touching a counter page reads nothing ahead.
 *
 * Timers (pass 2).  Each thread keeps a stack of frames, one per active
 * m-object (frames[0] is a sentinel whose rsp is UINT64_MAX); a recursive
 * entry of an active object only counts depth.  Version 1 files have no
 * timers (ntimers reads as 0 from the header's zero padding), version 2
 * files no call sites. */
#define MT_PROFILE_MAGIC 0x31464f5250544dull /* "MTPROF1" */
#define MT_PROFILE_VERSION 8
#define MT_PROFILE_HEADER_SIZE 4096u
#define MT_SLOT_COUNTERS_OFFSET 64u
#define MT_SLOT_RECORDS_OFFSET(n) (MT_SLOT_COUNTERS_OFFSET + (uint64_t)(n) * 8u)
/* Records: one per timed object, then the runtime's own (timer_bias). */
#define MT_SLOT_FRAMES_OFFSET(n, t) (MT_SLOT_RECORDS_OFFSET(n) + ((uint64_t)(t) + 1u) * MT_REC_SIZE)
#define MT_SLOT_CALL_SITES_OFFSET(n, t)                                                      \
    (MT_SLOT_FRAMES_OFFSET(n, t) + ((uint64_t)(t) + 1u) * MT_FRAME_SIZE)
/* The trace area (tracing copies only, `r` = MT_TRACE_RECORDS, else 0). */
#define MT_SLOT_TRACE_OFFSET(n, t, c)                                                        \
    (MT_SLOT_CALL_SITES_OFFSET(n, t) + (uint64_t)(c) * MT_CALL_SITE_SIZE)
/* The trace ring (tracing copies, version 8): page aligned after the trace area. */
#define MT_SLOT_RING_OFFSET(n, t, c, r)                                                      \
    ((MT_SLOT_TRACE_OFFSET(n, t, c) + MT_TRACE_AREA_SIZE(r) + 4095u) & ~(uint64_t)4095u)
#define MT_SLOT_SIZE(n, t, c, r)                                                             \
    ((r) ? MT_SLOT_RING_OFFSET(n, t, c, r) + MT_TRACE_RING_SIZE                               \
         : (MT_SLOT_TRACE_OFFSET(n, t, c) + 4095u) & ~(uint64_t)4095u)
/* ... in the files of runtimes before version 8 (no ring). */
#define MT_SLOT_SIZE_V7(n, t, c, r)                                                          \
    ((MT_SLOT_TRACE_OFFSET(n, t, c) + ((r) ? MT_TRACE_AREA_SIZE(r) : 0) + 4095u) &           \
     ~(uint64_t)4095u)

/* Traced loads and stores (mtool sim -- BIN; version 4, events and flags
 * version 5).  A slot's trace area:
 *     [int64_t index][uint64_t capacity][16 bytes unused][mt_trace_record records[r]]
 * `index` is minus the 8-byte words left before the records' end, so that
 * the inserted code writes a record at %gs:END(,index,8), adds 2 with a
 * `lea` and calls mt_timer_trace_flush when `jrcxz` finds 0: no flag
 * changes.  The frame is the area's last `capacity` records (its STAMP
 * first; 0 in the files of older runtimes: all r): the runtime chooses it
 * when it empties the frame, since the inserted code only counts up to the
 * end.  A process that has had one thread only fills all r
 * (MT_TRACE_RECORDS); once it has had a second, MT_TRACE_SHARED_RECORDS,
 * so that the merge interleaves the threads' records at that grain.  The
 * flush copies the frame's records into the slot's trace ring (below) and
 * sends a message naming them, an mt_trace_ring_frame, on a SOCK_SEQPACKET
 * socket ($MTOOL_TRACE_FD; atomic, so the threads' messages never mix),
 * then starts over; where the ring cannot be used (the profile is in
 * anonymous memory) the message carries the records themselves, an
 * mt_trace_frame and its records.  Whatever is left when the process ends
 * stays in the file, for mtool to read.
 *
 * The trace ring (version 8): MT_TRACE_RING_SIZE bytes at
 * MT_SLOT_RING_OFFSET, an mt_trace_ring (its page) then
 * MT_TRACE_RING_BYTES of records.  One producer, the slot's thread, one
 * consumer, mtool, which maps the file.  Positions count bytes from the
 * ring's start and only grow; a frame's records lie at position % BYTES,
 * whole (a frame that would wrap starts at the next multiple of BYTES).
 * The thread writes a frame only where mtool has released what was there
 * (`tail`, which mtool advances to the end of each frame it is done with,
 * adding one to `released` and waking the futex there when `waiting` is
 * set and the tail has reached `wake_at`), then moves `head` past it and
 * sends its message.  A thread that finds the ring full waits until half
 * of it is free (`wake_at`), not for one frame's room: woken once for
 * several frames, since mtool, the slower side, would otherwise wake it at
 * every frame it releases.  A thread that waits for room wakes every
 * 100 ms to see whether mtool is still there.
 * $MTOOL_TRACE_RING=0 in the program's environment sends every frame in
 * its message (the tests compare the two ways).
 * Why a ring: the records cross from the program to mtool without the
 * socket's two copies (into the kernel, out of it) and its buffers'
 * allocations: Debian's gzip -9 on 2 MB, `mtool sim --misses-only`, the
 * kernel's copies were 17% of the run's CPU samples (perf, AMD EPYC Zen 3).
 *
 * Besides references, a frame carries events (version 5), in the order they
 * happened in the thread: LOAD_BIAS, once, the runtime's first record (sent
 * at once, ahead of every other thread's frames); TLS_BASE, a thread's
 * thread pointer (its fs base) when it starts (the main thread's only when
 * the loader had set it: not in a static program); CALL_SITE, made by the
 * inserted code before a call to a wrapped allocator, the run-time address
 * of the original call instruction (a library copy's: its link-time
 * address, which its rewritten code carries); ALLOC_SIZE then
 * ALLOC (or FREE), made by the heap wrappers (MT_RT_HEAP_WRAPPERS) after the
 * allocator returned: the block's bytes, then its address with `code` = the
 * wrapper's MT_RT_WRAP_* id.  A free while the process has several threads sends the
 * frame at once, so that a block freed here and reallocated by another
 * thread reaches mtool freed first.
 *
 * Every frame starts with a STAMP (version 6): `addr` = the TSC when the
 * frame was emptied (the first of its records came after), `code` | `size`
 * << 32 = the TSC ticks from then to the frame's sending, saturated at
 * 2^48 - 1 (0 in the records left in the file at exit): mtool merges the
 * threads' frames by these times (run/trace.c).
 *
 * The program's own placement (MT_RT_PLACEMENT_WRAPPERS; version 6), after
 * the call returned, whatever the kernel answered (the simulated machine
 * is not this one): set_mempolicy is POLICY_NODES then SET_POLICY; mbind is
 * POLICY_NODES, MBIND_LENGTH then MBIND; move_pages with nodes, one
 * MOVE_PAGE per page of its own process.  A node mask is the first 64
 * nodes of the kernel's (maxnode - 1 bits, the kernel's reading); an
 * unreadable mask or array sends no event (the kernel refused the call
 * with EFAULT).  Each sends the frame at once (with several threads), so
 * that other threads' later frames come after it.  A thread created
 * through the wrapped pthread_create (or an OpenMP thread at its first
 * region) says which thread created it: THREAD_PARENT, after its TLS_BASE.
 * When the executable's runtime activates a library's tracing copy (at
 * start-up, after a dlopen), it says where the copy lies (version 11):
 * LIBRARY_BASE, `addr` = its load base (run-time minus link-time
 * addresses), `code` = its params' counter_base, which names the copy
 * among the set's; the frame is sent at once.  Each call the copy makes
 * of __tls_get_addr (MT_RT_WRAP_TLS_GET_ADDR) is followed by LIBRARY_TLS,
 * `addr` = the start of the copy's TLS block in the calling thread (the
 * address returned minus the offset asked), `code` = its counter_base.
 * pthread_create and pthread_join send the calling thread's frame before
 * the call and stamp the empty frame again after it: what it recorded
 * before is before what the new (or joined) thread did, and the wait is
 * in no frame. */
/* The filter ($MTOOL_TRACE_FILTER=PPID:SHIFT:SETS:ALWAYS, set by mtool when
 * its simulator is the misses-only one on one CPU with an LRU,
 * write-allocate D1 of 2^SHIFT-byte lines and SETS sets, a power of two).
 * The process whose parent is PPID (the program mtool started, not its
 * children), while it has had one thread (pthread_create, fork,
 * posix_spawn's vfork and the clones the runtime sees stop it), and while
 * mtool is behind (a quarter of the ring or more not released: the thread
 * would wait for room otherwise) or always when ALWAYS is 1 (tests),
 * copies a frame to its ring without the references that are D1 hits
 * whatever the simulated caches hold: a plain reference (READ, WRITE,
 * MODIFY) within one line, that line the last one this frame referenced
 * among the lines of its set (of its partition: the set's index modulo
 * MT_TRACE_FILTER_LINES, which covers the set).  Such a reference finds
 * its line its set's most recent (a frame is simulated whole, no other
 * thread's references between), and under LRU such a hit changes nothing
 * at any level; the frame's other records keep their order.  The
 * references left out are counted by code object and kind: one HITS
 * record for each code object's run of records, placed at its run's end.
 * A record that may touch lines of unknown sets (rep, gather, a reference
 * across two lines) forgets the partitions it touches.  docs/SIMULATOR.md,
 * "Counted in the program". */
#define MT_TRACE_FILTER_LINES 64u
#define MT_TRACE_HITS_BITS 21u
/* A frame's records, its STAMP included, in a process that has had one
 * thread: a message, a sleep and a wake per frame are what the transport
 * costs, not its bytes.  Debian's gzip -9 on 2 MB (332 M references),
 * `mtool sim --misses-only`, 1023 -> 8191 records a frame: system time
 * 4.2-5.1 -> 2.0-2.4 s, wall 6.5-7.4 -> 5.5-5.7 s, 3 runs each interleaved
 * (AMD EPYC Zen 3, family 25 model 1, 2-vCPU guest, load under 1). */
#define MT_TRACE_RECORDS 8191u
/* ... once it has had a second (the merge orders the threads' records by
 * the stamps of frames this long). */
#define MT_TRACE_SHARED_RECORDS 1023u
#define MT_TRACE_INDEX 0
#define MT_TRACE_CAPACITY 8
#define MT_TRACE_RECORDS_AT 32
#define MT_TRACE_AREA_SIZE(r) (MT_TRACE_RECORDS_AT + 16ull * (r))
/* The ring: 16 frames of a lone thread's length, 128 of several threads'. */
#define MT_TRACE_RING_BYTES (2ull << 20)
/* The records start after the control page (mt_trace_ring). */
#define MT_TRACE_RING_DATA 4096ull
#define MT_TRACE_RING_SIZE (MT_TRACE_RING_DATA + MT_TRACE_RING_BYTES)
#define MT_TRACE_RING_MAGIC 0x52435254u /* "TRCR" */
#define MT_TRACE_FRAME_MAGIC 0x45435254u /* "TRCE" */
/* Record kinds (mt_trace_record.kind). */
enum {
    MT_TRACE_READ,
    MT_TRACE_WRITE,
    MT_TRACE_MODIFY,      /* read and written by one instruction: Cachegrind counts one write */
    MT_TRACE_REP_SOURCE,  /* rep movs/cmps/lods: %rsi before it (elements of `size` bytes) */
    MT_TRACE_REP_DEST,    /* rep movs/stos/cmps/scas: %rdi before it */
    MT_TRACE_REP_COUNT,   /* ... %rcx before it, in `addr`: the instruction's elements;
                             its `size` bits say which of the two went before (1 source,
                             2 destination, 4 destination read) */
    /* A gather or scatter is a group of records, in this order: */
    MT_TRACE_GATHER,      /* base + displacement of a gather (reads), `size` = element bytes */
    MT_TRACE_SCATTER,     /* ... of a scatter (writes) */
    MT_TRACE_VECTOR_MASK, /* `addr`: bit i set when element i is referenced; `size`:
                             elements | index bytes << 8 | scale << 12 */
    MT_TRACE_VECTOR_INDEX, /* `addr`: the next 8 bytes of the index vector (element 0
                              first); as many as the elements' indices fill */
    MT_TRACE_LOAD_BIAS,   /* events (no reference): see above; `addr` = the executable's
                             run-time minus link-time addresses */
    MT_TRACE_TLS_BASE,    /* `addr` = the thread's fs base */
    MT_TRACE_CALL_SITE,   /* `addr` = run-time address of the call to an allocator (in a
                             library's copy: its link-time address) */
    MT_TRACE_ALLOC_SIZE,  /* `addr` = bytes of the block the next ALLOC reports */
    MT_TRACE_ALLOC,       /* `addr` = the block; `code` = MT_RT_WRAP_* of the allocator */
    MT_TRACE_FREE,        /* `addr` = the block retired (free, delete, munmap's start) */
    MT_TRACE_STAMP,       /* `addr` = TSC at the frame's start; `code` | `size` << 32 = ticks
                             to its sending */
    MT_TRACE_POLICY_NODES, /* `addr` = nodes 0-63 of the mask of the SET_POLICY or MBIND
                              that follows */
    MT_TRACE_SET_POLICY,  /* set_mempolicy: `code` = its mode (MPOL_*, with MPOL_F_* flags) */
    MT_TRACE_MBIND_LENGTH, /* `addr` = bytes of the MBIND that follows, `code` = its
                              MPOL_MF_* flags */
    MT_TRACE_MBIND,       /* `addr` = the range's start, `code` = the mode */
    MT_TRACE_MOVE_PAGE,   /* `addr` = an address of the page, `code` = its new node */
    MT_TRACE_THREAD_PARENT, /* `addr` = the id of the thread that created this one (its
                               memory policy is the creator's) */
    MT_TRACE_LIBRARY_BASE, /* `addr` = a traced library copy's load base, `code` = its
                              counter_base (version 11) */
    MT_TRACE_LIBRARY_TLS, /* `addr` = the start of its TLS block in this thread, `code` =
                             its counter_base */
    MT_TRACE_HITS,        /* references the program counted instead of sending them (the
                             filter below): `code` = their code object, `addr` = reads |
                             writes << 21 | modifies << 42 (MT_TRACE_HITS_BITS each) */
    MT_TRACE_KINDS
};
/* Flags of a reference (mt_trace_record.flags, version 5). */
enum {
    MT_TRACE_F_STACK = 1, /* %rsp-based operand, or push, pop, call, ret */
    MT_TRACE_F_TLS = 2,   /* an %fs operand: thread-local storage */
    MT_TRACE_F_CALL = 4,  /* the return address a call pushes */
    MT_TRACE_F_RET = 8,   /* the return address a ret pops */
};

enum {
    MT_PROFILE_FORKED = 1u << 0,   /* written by a fork child (counts since the fork) */
    MT_PROFILE_FALLBACK = 1u << 1, /* never set in a file: see runtime.c */
};

/* The call-site records [first, end) of the slot's belong to a library
 * copy loaded at `base` (run-time minus link-time addresses) in this
 * process: written when the runtime activates it, for every copy while
 * the executable records call targets; a copy without records of its own
 * is named by its counter_base (first == end == counter_base: an empty
 * range), so that a target any object's call lands in it is placed too
 * (profile/profile.c).  The sites of copies past the table's end are read
 * at the executable's load bias, where their targets lie in no procedure
 * of theirs: callees unknown, never wrong. */
typedef struct {
    uint32_t first, end;
    uint64_t base;
} mt_profile_library;
#define MT_PROFILE_LIBRARIES 48

typedef struct {
    uint64_t magic;                 /* MT_PROFILE_MAGIC */
    uint32_t version;               /* MT_PROFILE_VERSION */
    uint32_t header_size;           /* MT_PROFILE_HEADER_SIZE */
    uint32_t ncounters;
    uint32_t nslots;                /* slots handed out (threads that attached) */
    uint32_t capacity;              /* slots the file is sized for */
    uint32_t flags;                 /* MT_PROFILE_* */
    int32_t pid, ppid;
    uint64_t start_ns;              /* CLOCK_REALTIME at start */
    uint8_t binary_hash[32];        /* copied from mt_rt_params */
    char exe[1024];                 /* readlink("/proc/self/exe") */
    char args[2048];                /* argv joined by spaces, truncated */
    uint32_t nthreads;              /* threads that attached: slots of exited threads are
                                       reused, so there may be more threads than slots */
    uint32_t ntimers;               /* timer records per slot (version 2) */
    uint64_t timers_id;             /* which objects they time (mt_rt_params) */
    uint32_t ncall_sites;           /* call-site records per slot (version 3) */
    uint32_t reserved;
    uint64_t load_bias;             /* run-time minus link-time addresses of the executable */
    uint64_t timer_bias;            /* pass 2: TSC ticks x 1000 a start/stop pair adds to
                                       the time it brackets, measured at start-up (the
                                       least of 16 batches of 64 empty pairs); 0 = none */
    uint32_t trace_records;         /* records a slot's trace area holds (version 4), 0 = none */
    uint32_t nlibraries;            /* entries of `libraries` in use (version 7) */
    mt_profile_library libraries[MT_PROFILE_LIBRARIES];
} mt_profile_header;

/* A trace frame: the records that follow it were made by thread `tid`. */
typedef struct {
    uint32_t magic;                 /* MT_TRACE_FRAME_MAGIC */
    int32_t tid;
    uint32_t nrecords;
    uint32_t reserved;
} mt_trace_frame;

/* The control page of a slot's trace ring (see above). */
typedef struct {
    uint64_t head;                  /* bytes written (the thread) */
    uint64_t reserved1[7];
    uint64_t tail;                  /* bytes released (mtool) */
    uint64_t wake_at;               /* while `waiting`: the tail to wake the thread at
                                       (version 8 files before it: 0, any release) */
    uint64_t reserved2[6];
    uint32_t released;              /* futex word: releases so far (mtool) */
    uint32_t waiting;               /* the thread waits for room */
} mt_trace_ring;

/* The message of a frame in the ring: its records are `nrecords` at
 * position `at` of the ring whose control page is at byte `ring` of the
 * profile file `path` (NUL-terminated, the message's rest). */
typedef struct {
    uint32_t magic;                 /* MT_TRACE_RING_MAGIC */
    int32_t tid;
    uint32_t nrecords;
    uint32_t reserved;
    uint64_t at;
    uint64_t ring;
    char path[];
} mt_trace_ring_frame;

/* One traced reference (16 bytes, written by the inserted code). */
typedef struct {
    uint64_t addr;                  /* run-time address (REP_COUNT: the element count) */
    uint32_t code;                  /* code object: procedure index + 1 */
    uint16_t size;                  /* bytes */
    uint8_t kind;                   /* MT_TRACE_* */
    uint8_t flags;                  /* MT_TRACE_F_* (version 5; 0 before) */
} mt_trace_record;

typedef struct {
    uint32_t magic;                 /* MT_SLOT_MAGIC */
    int32_t tid;                    /* the thread that owns the slot (or last owned it) */
    uint64_t timer_top;             /* MT_SLOT_TIMER_TOP */
    uint64_t file_slot;             /* 1 + the slot's index in the file, 0 when the slot
                                       is anonymous memory (no trace ring; version 8) */
    uint64_t self;                  /* MT_SLOT_SELF */
    uint64_t syscall_nr;            /* MT_SLOT_SYSCALL_NR */
    uint64_t clock_next;            /* MT_SLOT_CLOCK_NEXT */
    uint64_t clock_scale;           /* MT_SLOT_CLOCK_SCALE */
    uint64_t clock_at;              /* MT_SLOT_CLOCK_AT */
} mt_slot_header;

/* Per thread and m-object; TSC ticks.  Entries count outermost entries
 * (a recursive entry of an active object counts in `recursive`). */
typedef struct {
    uint64_t entries, recursive;
    uint64_t inclusive;             /* ticks from outermost entry to its exit */
    uint64_t exclusive;             /* inclusive minus time in nested timed objects */
    uint64_t outside;               /* inclusive ticks spent in calls to uninstrumented
                                       code (PLT calls): never memory overhead */
    uint64_t nonlocal_exits;        /* closed because their frame was unwound (longjmp,
                                       exceptions) or left under an inner active object */
    uint64_t depth;                 /* active instances (runtime state) */
    uint64_t cycles;                /* inclusive core cycles: each stop's ticks at the
                                       thread's clock then (MT_SLOT_CLOCK_SCALE; 0 in
                                       profiles of runtimes before it: no clock) */
} mt_timer_record;

typedef struct {
    uint64_t rsp;                   /* %rsp at the entry event */
    uint64_t t0;                    /* TSC at entry */
    uint64_t child;                 /* ticks of nested timed objects */
    uint64_t outside;               /* ticks in outside calls while on top (inclusive) */
    uint64_t record;                /* slot offset of its mt_timer_record */
    uint64_t outside_t0;            /* MT_FRAME_OUTSIDE_T0 */
} mt_timer_frame;
#define MT_SLOT_MAGIC 0x544f4c53u /* "SLOT" */

/* Per thread and call site through a pointer (MT_CALL_SITE_SIZE bytes). */
typedef struct {
    uint64_t target;                /* run-time address, 0 = unused */
    uint64_t calls;
} mt_call_target;

typedef struct {
    mt_call_target targets[MT_CALL_TARGETS];
    uint64_t overflow;              /* calls to targets past the table */
    uint64_t reserved;
} mt_call_site_record;

/* The runtime blob, linked into mtool (build/timer/runtime_blob.o). */
extern const unsigned char mt_runtime_blob[];
extern const unsigned long mt_runtime_blob_size;
/* The audit library that loads a run's rewritten shared libraries
 * (timer/audit.c), linked into mtool the same way. */
extern const unsigned char mt_audit_lib[];
extern const unsigned long mt_audit_lib_size;

#endif /* __ASSEMBLER__ */
#endif
