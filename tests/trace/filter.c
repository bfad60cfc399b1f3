/* tests/trace/filter.c — references that would show the tracing copy's D1
 * filter (timer/timer.h, "The D1 filter") counting a reference as a hit on
 * its set's most recent line when the simulator, fed every reference,
 * would not find it so: lines of one D1 set (16 KiB apart: one set for any
 * D1 of 64-byte lines and at most 256 sets; more lines than its ways) taken
 * in turn by plain loads, by loads straddling into the next set, by
 * read-modify-write instructions, by rep movsb and rep stosq (expanded by
 * the reader: the copy's table cannot follow them), and by two threads
 * taking turns on the same set, each turn ending with a free() that sends
 * the thread's frame (a program with threads sends it at once: timer.h), so
 * the order the simulator sees the threads in is the order they ran.  Every
 * run makes the same references in the same order (no polling: the turns
 * are semaphores, in libc).  Prints a checksum; exits 0. */
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WAY 16384 /* bytes between lines of one set */
#define LINES 24  /* lines in play */
#define TURNS 40
static char area[LINES * WAY + 128] __attribute__((aligned(4096)));
static sem_t turn[2], ready;
static void *volatile block; /* (a malloc then free of a local is optimized away) */

/* With threads, a free sends the calling thread's frame (timer.h). */
static void send_frame(void)
{
    block = malloc(16);
    free(block);
}

/* An 8-byte load at p, which may straddle two lines. */
static uint64_t load8(const char *p)
{
    uint64_t v;
    __asm__ volatile("movq (%1), %0" : "=r"(v) : "r"(p) : "memory");
    return v;
}

static void add8(char *p) { __asm__ volatile("addq $1, (%0)" : : "r"(p) : "memory"); }

static void rep_copy(char *dst, const char *src, size_t n)
{
    __asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

static void rep_fill(char *dst, size_t words)
{
    __asm__ volatile("rep stosq" : "+D"(dst), "+c"(words) : "a"(0x0101010101010101ull) : "memory");
}

static char *line_of(unsigned k, unsigned set) { return area + (size_t)k * WAY + 64u * set; }

/* Loads k lines of `set`, first + (from + j) % lines for j < k: misses,
 * each taking the set's least recent line out. */
static uint64_t sweep(unsigned set, unsigned first, unsigned lines, unsigned from, unsigned k)
{
    uint64_t sum = 0;
    for (unsigned j = 0; j < k; j++)
        sum += load8(line_of(first + (from + j) % lines, set) + 48);
    return sum;
}

/* `n` rounds over lines first .. first + lines - 1 (lines >= 11) of set
 * `set`.  Each marked reference (*) finds the line it names second in its
 * set, where the thread's own last plain reference to the set left it
 * first: counted as a hit without moving it up, the line would leave the
 * set before the other one after k more lines (k = 1 to 8: one less than
 * the ways, for D1s of 2 to 9 ways), and the probe after the sweep would
 * miss where the simulator, sent every reference, hits. */
static uint64_t rounds(unsigned set, unsigned first, unsigned lines, unsigned n)
{
    uint64_t sum = 0;
    for (unsigned r = 0; r < n; r++)
        for (unsigned i = 0; i < lines; i++) {
            char *line = line_of(first + i, set);
            char *prev = line_of(first + (i + lines - 1) % lines, set);
            char *other = line_of(first + (i + 1) % lines, set);
            /* the sweep: lines not touched for a while (not line, prev, other) */
            unsigned k = 1 + (r * lines + i) % 8, from = i + lines - 9;
            sum += load8(line) + load8(line + 8); /* a miss, then a hit on the MRU line */
            rep_copy(other + 32, other, 16);      /* other's line first in the set */
            sum += load8(line + 24);              /* (*) */
            sum += sweep(set, first, lines, from, k);
            sum += load8(line + 40);              /* the probe */
            sum += load8(prev + 64);              /* set + 1: prev's line */
            sum += load8(line + 60);              /* straddles: line's line first in set + 1 */
            sum += load8(prev + 72);              /* (*) */
            sum += sweep(set + 1, first, lines, from, k);
            sum += load8(prev + 64);              /* the probe */
            add8(line + 32);                      /* a read, then a write */
            rep_fill(other, 2);
            add8(line + 32);                      /* (*) */
            sum += sweep(set, first, lines, from, k);
            sum += load8(line + 40);              /* the probe */
        }
    return sum;
}

/* The set of a 64-byte line at p, for a D1 of 64 sets. */
static unsigned set_of(const void *p) { return (unsigned)((uintptr_t)p >> 6) & 63; }

static unsigned stack_set[2], turn_set;

/* Two threads taking turns on set turn_set, lines of their own; each turn
 * first loads the line it ended the last one with (the other thread's
 * turn, a frame in between, took the set; the set is one their stacks'
 * references, which come between, do not touch). */
static void *player(void *arg)
{
    unsigned me = (unsigned)(uintptr_t)arg, first = me * (LINES / 2);
    uint64_t sum = 0;
    stack_set[me] = set_of(__builtin_frame_address(0));
    sem_post(&ready); /* attached: the process has threads */
    for (unsigned t = 0; t < TURNS; t++) {
        sem_wait(&turn[me]);
        sum += load8(line_of(first + LINES / 2 - 1, turn_set) + 40);
        sum += rounds(turn_set, first, LINES / 2, 3);
        send_frame();
        sem_post(&turn[!me]);
    }
    return (void *)(uintptr_t)sum;
}

int main(void)
{
    memset(area, 1, sizeof area);
    uint64_t sum = rounds(0, 0, LINES, 20) + rounds(62, 0, LINES, 20);
    sem_init(&turn[0], 0, 0);
    sem_init(&turn[1], 0, 0);
    sem_init(&ready, 0, 0);
    pthread_t t[2];
    for (unsigned i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, player, (void *)(uintptr_t)i);
    sem_wait(&ready);
    sem_wait(&ready);
    /* of sets 16, 32, 48 (not the globals' few, not 63), the farthest from both stacks' */
    unsigned best = 0;
    for (unsigned c = 16; c < 64; c += 16) {
        unsigned d = 64;
        for (unsigned i = 0; i < 2; i++) {
            unsigned a = (c - stack_set[i]) & 63, b = (stack_set[i] - c) & 63;
            d = a < d ? a : d;
            d = b < d ? b : d;
        }
        if (d > best) {
            best = d;
            turn_set = c;
        }
    }
    send_frame(); /* before their turns */
    sem_post(&turn[0]);
    for (unsigned i = 0; i < 2; i++) {
        void *r;
        pthread_join(t[i], &r);
        sum += (uint64_t)(uintptr_t)r;
    }
    printf("sum %llu\n", (unsigned long long)sum);
    return 0;
}
