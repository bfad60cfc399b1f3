/* mempolicy.c — the program's own page placement (issue 16, docs/SIMULATOR.md,
 * "The program's placement"): set_mempolicy, mbind and move_pages through
 * glibc's syscall() (no libnuma), on 8 pages of a static array, each line
 * written once then read once.  On a simulated machine of two nodes, the
 * single thread on node 0 (tests/mempolicy.sh):
 *
 *   page 0, 1  written under set_mempolicy(BIND, {1})        node 1
 *   page 2, 3  mbind(INTERLEAVE, {0, 1}) before: page number
 *              modulo 2 (the array 8 KiB-aligned)            node 0, node 1
 *   page 4     mbind(PREFERRED, {1}) before                  node 1
 *   page 5     first touch (node 0), then move_pages to 1    node 1
 *   page 6     first touch (node 0), then mbind(BIND, {1},
 *              MPOL_MF_MOVE)                                 node 1
 *   page 7     mbind(BIND, {1}) then mbind(DEFAULT) before:
 *              first touch                                   node 0
 *
 * Then, under set_mempolicy(PREFERRED, {0}), main creates a thread (the
 * second, on node 1) which writes the 2 pages of `spawned`: it inherits
 * its creator's policy, as the kernel's threads do: node 0, remote for it.
 *
 * A real kernel with one node refuses some of the calls (node 1 does not
 * exist): each call's return value and errno are printed, and must be the
 * same traced or not.  Built with -DLIBNUMA (and -lnuma), the same calls go
 * through libnuma's entry points (numaif.h) instead. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#ifdef LIBNUMA
#include <numaif.h>
#define SET_MEMPOLICY set_mempolicy
#define MBIND mbind
#define MOVE_PAGES move_pages
#else
#include <sys/syscall.h>
#include <unistd.h>
enum { MPOL_DEFAULT, MPOL_PREFERRED, MPOL_BIND, MPOL_INTERLEAVE };
#define MPOL_MF_MOVE (1u << 1)
#define SET_MEMPOLICY(...) syscall(SYS_set_mempolicy, __VA_ARGS__)
#define MBIND(...) syscall(SYS_mbind, __VA_ARGS__)
#define MOVE_PAGES(...) syscall(SYS_move_pages, __VA_ARGS__)
#endif
#define PAGE 4096
#define PAGES 8
#define LINE 64

static _Alignas(2 * PAGE) char array[PAGES * PAGE];
static _Alignas(PAGE) char spawned[2 * PAGE];

/* One call's outcome: the return value, and errno when it failed. */
static void said(const char *call, long rc)
{
    printf("%s: %ld", call, rc);
    if (rc < 0)
        printf(" (errno %d)", errno);
    printf("\n");
}

static void set_policy(int mode, unsigned long nodes)
{
    said("set_mempolicy", SET_MEMPOLICY(mode, &nodes, 8 * sizeof nodes + 1));
}

static void bind_pages(int page, int pages, int mode, unsigned long nodes, unsigned flags)
{
    said("mbind", MBIND(array + page * PAGE, (unsigned long)pages * PAGE, mode,
                        mode == MPOL_DEFAULT ? NULL : &nodes, 8 * sizeof nodes + 1, flags));
}

/* Writes one byte of every line of pages [first, first + n). */
static void write_pages(int first, int n)
{
    for (long i = (long)first * PAGE; i < (long)(first + n) * PAGE; i += LINE)
        ((volatile char *)array)[i] = (char)i;
}

/* The created thread: one byte of each line of `spawned`. */
static void *spawn(void *arg)
{
    for (long i = 0; i < 2 * PAGE; i += LINE)
        ((volatile char *)spawned)[i] = (char)i;
    return arg;
}

int main(void)
{
    set_policy(MPOL_BIND, 1ul << 1);
    write_pages(0, 2);
    set_policy(MPOL_DEFAULT, 0);
    bind_pages(2, 2, MPOL_INTERLEAVE, 3, 0);
    bind_pages(4, 1, MPOL_PREFERRED, 1ul << 1, 0);
    bind_pages(7, 1, MPOL_BIND, 1ul << 1, 0);
    bind_pages(7, 1, MPOL_DEFAULT, 0, 0);
    write_pages(2, 6);
    void *page5 = array + 5 * PAGE;
    int node = 1, status = -1;
    said("move_pages", MOVE_PAGES(0, 1ul, &page5, &node, &status, 0));
    printf("move_pages status: %d\n", status);
    bind_pages(6, 1, MPOL_BIND, 1ul << 1, MPOL_MF_MOVE);
    long sum = 0;
    for (long i = 0; i < PAGES * PAGE; i += LINE)
        sum += ((volatile char *)array)[i];
    printf("sum %ld\n", sum);
    set_policy(MPOL_PREFERRED, 1ul << 0);
    pthread_t thread;
    if (pthread_create(&thread, NULL, spawn, NULL) != 0 || pthread_join(thread, NULL) != 0)
        return 1;
    set_policy(MPOL_DEFAULT, 0);
    return 0;
}
