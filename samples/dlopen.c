/* samples/dlopen.c — a program that opens its own library with dlopen
 * (libmtdl.so, shlib_dl.c, which needs libmtdldep.so; tests/libs.sh): two
 * threads call into it, it is closed and opened again, and what it
 * computed is printed with an exit status of its own, so that a copy that
 * differs shows.  The library is found beside the program ($ORIGIN), or
 * at the path given as the first argument. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef long (*work_fn)(int n, int seed);

static work_fn work;

static void *call_in_thread(void *seed)
{
    return (void *)work(3000, (int)(long)seed);
}

/* Opens the library, calls it from two threads and this one, closes it. */
static long one_round(const char *name, int round)
{
    void *lib = dlopen(name, RTLD_NOW);
    if (!lib || !(work = (work_fn)dlsym(lib, "dl_work"))) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        exit(1);
    }
    pthread_t threads[2];
    long sum = work(1000, round);
    for (long i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, call_in_thread, (void *)(2 * round + i));
    for (int i = 0; i < 2; i++) {
        void *part;
        pthread_join(threads[i], &part);
        sum += (long)part;
    }
    dlclose(lib);
    return sum;
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "libmtdl.so";
    long first = one_round(name, 1), second = one_round(name, 2);
    printf("dlopen rounds %ld %ld\n", first, second);
    return 5;
}
