/* tests/jumptable/hidden_main.c — drives hidden.S: on the calls where
 * `armed` is set, the SIGUSR1 handler moves the index from 0..3 to 7
 * between its check and its read.  Prints every result; exits with the
 * number of times the hidden entry was taken (HIDDEN_HITS). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define HIDDEN_HITS 3

int hidden_dispatch(volatile int *slot);

static volatile int slot;
static volatile sig_atomic_t armed;

static void move_index(int sig)
{
    (void)sig;
    if (armed)
        slot = 7;
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = move_index;
    sigaction(SIGUSR1, &sa, NULL);
    int hits = 0;
    for (int i = 0; i < 12; i++) {
        slot = i % 5; /* 4: above the check, the default */
        armed = i == 2 || i == 6 || i == 11;
        int r = hidden_dispatch(&slot);
        hits += r == 77;
        printf("%d: %d\n", i, r);
    }
    return hits == HIDDEN_HITS ? HIDDEN_HITS : 100 + hits;
}
