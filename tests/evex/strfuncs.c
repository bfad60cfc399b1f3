/* tests/evex/strfuncs.c — calls strlen, memchr, strcmp and memcmp N times
 * (argv[1]) on fixed buffers, so that a static build runs the variants
 * glibc's ifuncs select on this CPU (the evex ones where AVX-512 is there).
 * Prints its results with write(2) only: stdio would call strlen itself.
 * With a second argument "memchr" it makes exactly one call, memchr on a
 * 64-byte buffer whose byte 40 matches, for the traced run's hand count. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char text[200], other[200];
static unsigned char block[64] __attribute__((aligned(64)));

static void put_number(unsigned long v)
{
    char buf[24];
    int i = sizeof buf;
    buf[--i] = '\n';
    do
        buf[--i] = (char)('0' + v % 10);
    while (v /= 10);
    if (write(1, buf + i, sizeof buf - (size_t)i) < 0)
        exit(2);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1;
    /* volatile pointers: the compiler may not fold or hoist the calls */
    char *volatile t = text, *volatile o = other;
    unsigned char *volatile b = block;
    memset(text, 'a', 150);
    memset(other, 'a', 150);
    other[149] = 'b';
    block[40] = 7;
    if (argc > 2 && !strcmp(argv[2], "memchr")) {
        put_number((unsigned long)((unsigned char *)memchr(b, 7, 64) - block));
        return 0;
    }
    unsigned long sum = 0;
    for (long i = 0; i < n; i++) {
        sum += strlen(t);
        sum += (unsigned long)((char *)memchr(t, 'b', 200) == NULL);
        sum += (unsigned long)(strcmp(t, o) < 0);
        sum += (unsigned long)(memcmp(t, o, 150) != 0);
    }
    put_number(sum);
    return 3;
}
