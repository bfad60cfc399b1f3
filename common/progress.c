/* common/progress.c — progress of long stages, passed to the command line's
 * hook at most every 100 ms (see progress.h).  The cost when no hook is
 * installed is one relaxed load per report; with one, an atomic add and a
 * clock read (vDSO, ~20 ns) per report: reports come once per procedure,
 * not per instruction. */
#define _GNU_SOURCE
#include "progress.h"

#include <stdatomic.h>
#include <stddef.h>
#include <time.h>

#define INTERVAL_NS 100000000ull

static _Atomic(mt_progress_hook) hook;
static const char *_Atomic stage_name;
static atomic_uint_fast64_t done, total, last_call_ns;
static atomic_flag calling = ATOMIC_FLAG_INIT;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void mt_progress_set_hook(mt_progress_hook h) { atomic_store(&hook, h); }

void mt_progress_stage(const char *stage, uint64_t units)
{
    atomic_store(&stage_name, stage);
    atomic_store(&total, units);
    atomic_store(&done, 0);
    mt_progress_add(0);
}

void mt_progress_add(uint64_t n)
{
    mt_progress_hook h = atomic_load_explicit(&hook, memory_order_relaxed);
    if (!h)
        return;
    uint64_t d = atomic_fetch_add(&done, n) + n, t = now_ns();
    if (t - atomic_load(&last_call_ns) < INTERVAL_NS || atomic_flag_test_and_set(&calling))
        return;
    atomic_store(&last_call_ns, t);
    h(atomic_load(&stage_name), d, atomic_load(&total));
    atomic_flag_clear(&calling);
}

void mt_progress_end(void)
{
    mt_progress_hook h = atomic_load(&hook);
    if (h)
        h(NULL, 0, 0);
    atomic_store(&last_call_ns, 0);
}
