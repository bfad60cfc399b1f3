/* tests/codedata/codedata_prog.c — a program that copies ranges of its own
 * code (blob.S) to fresh memory and runs the copies, and finds code by
 * return address against the ranges it knows, the way V8 copies its
 * embedded builtins and looks up a pc in them.  It checks itself: it exits
 * 1 when a copy computes something else, or a return address is not where
 * the code it called lies.  Instrumented, it must print the same. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

extern const unsigned char sized_blob[], label_blob[];
extern const uint64_t sized_blob_size, label_blob_size;
long blob_square(long x);
long blob_callback(long (*f)(long), long x);
long lb_twice(long x);
long lb_callback(long (*f)(long), long x);
long after_blob(long x);

/* The range the return address of the callback must lie in. */
static const unsigned char *expect_lo, *expect_hi;
static int failures;

static void check(int ok, const char *what)
{
    printf("%s: %s\n", what, ok ? "yes" : "NO");
    failures += !ok;
}

__attribute__((noinline)) static long where_from(long x)
{
    const unsigned char *ret = __builtin_return_address(0);
    check(ret >= expect_lo && ret < expect_hi, "  return address inside the code called");
    return x * 10;
}

static void *copy_code(const unsigned char *from, size_t size)
{
    unsigned char *to = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (to == MAP_FAILED || (memcpy(to, from, size), mprotect(to, size, PROT_READ | PROT_EXEC)) != 0) {
        perror("codedata_prog: mmap");
        exit(2);
    }
    return to;
}

/* The same function in the copy `to` of the blob at `from`. */
static void *moved(const void *fn, const unsigned char *from, const unsigned char *to)
{
    return (void *)(to + ((const unsigned char *)fn - from));
}

static int by_value(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 7;
    const unsigned char *sized = copy_code(sized_blob, sized_blob_size);
    const unsigned char *label = copy_code(label_blob, label_blob_size);
    long (*square_copy)(long) = moved((const void *)blob_square, sized_blob, sized);
    long (*callback_copy)(long (*)(long), long) = moved((const void *)blob_callback, sized_blob, sized);
    long (*lb_callback_copy)(long (*)(long), long) = moved((const void *)lb_callback, label_blob, label);

    printf("in place: square %ld, twice %ld, after %ld\n", blob_square(n), lb_twice(n), after_blob(n));
    check(square_copy(n) == n * n, "copy of the sized blob squares");
    expect_lo = sized_blob, expect_hi = sized_blob + sized_blob_size;
    check(blob_callback(where_from, n) == 10 * n + 1, "sized blob in place calls back");
    expect_lo = sized, expect_hi = sized + sized_blob_size;
    check(callback_copy(where_from, n) == 10 * n + 1, "copy of the sized blob calls back");
    expect_lo = label_blob, expect_hi = label_blob + label_blob_size;
    check(lb_callback(where_from, n) == 20 * n, "label blob in place calls back");
    expect_lo = label, expect_hi = label + label_blob_size;
    check(lb_callback_copy(where_from, n) == 20 * n, "copy of the label blob calls back");

    long v[] = {5, n, 3, 9, 1}; /* an ordinary function pointer: not code as data */
    qsort(v, 5, sizeof *v, by_value);
    printf("sorted: %ld %ld %ld %ld %ld\n", v[0], v[1], v[2], v[3], v[4]);
    return failures ? 1 : 0;
}
