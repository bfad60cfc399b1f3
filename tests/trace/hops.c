/* tests/trace/hops.c — memcpy, memmove and mempcpy of every size from 0 to
 * 300 bytes and a few large ones, in a static build for tests/trace.sh:
 * glibc's __mempcpy_* jump 3 bytes into __memmove_*, under the entry jump
 * of __memmove_*'s copy (rewriter/relocate.c, entry_hop_fits).  Prints a
 * checksum of everything copied. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

static unsigned char src[1 << 16], dst[1 << 16];

int main(void)
{
    for (unsigned i = 0; i < sizeof src; i++)
        src[i] = (unsigned char)(i * 131 + 7);
    unsigned long sum = 0;
    for (size_t n = 0; n <= 300; n++) {
        memcpy(dst + (n & 31), src + n, n);
        unsigned char *end = mempcpy(dst + 1000 + (n & 15), src + 2 * n, n);
        sum += (unsigned long)(end - dst) + dst[n & 31] + dst[1000 + n / 2];
        memmove(dst + 3, dst + 5 + (n & 7), n);
        sum = sum * 31 + dst[3 + n / 3];
    }
    size_t big[] = {4096, 20000, 65000};
    for (unsigned k = 0; k < 3; k++) {
        unsigned char *end = mempcpy(dst, src + (k * 7), big[k] - k * 7);
        memmove(dst + 9, dst, big[k] - 9 - k * 7);
        sum = sum * 31 + (unsigned long)(end - dst) + dst[big[k] / 2];
    }
    printf("%lu\n", sum);
    return 0;
}
