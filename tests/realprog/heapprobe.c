/* tests/realprog/heapprobe.c — sim.sh's heap probe, built static like the
 * programs: prints where its first malloc'd block lies past its static TLS
 * (the first thing glibc takes from the brk).  Run in both runs' settings,
 * the difference is what glibc's start-up allocated more in one than in the
 * other (the native run's vDSO link map, the executable's directory...). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static __thread int tls_var;

int main(void)
{
    char *block = malloc(16);
    printf("%ld\n", (long)((uintptr_t)block - (uintptr_t)&tls_var));
    free(block);
    return 0;
}
