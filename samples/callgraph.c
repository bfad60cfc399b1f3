/* callgraph.c — a call graph with known estimability:
 *   main → a → shared, main → b → shared: `shared` has two callers, so
 *     neither a nor b is estimable; main and shared are.
 *   main → leafy → {leaf1, leaf2}: a leaf-only subtree, all estimable.
 *   main → countdown → countdown: self-recursion, estimable. */
#include <stdio.h>

#define NOINLINE __attribute__((noinline))

volatile int sink;

NOINLINE void shared(int x) { sink += x; }
NOINLINE void a(int x) { shared(x); sink ^= 1; }
NOINLINE void b(int x) { shared(2 * x); sink ^= 2; }
NOINLINE void leaf1(int x) { sink += x; }
NOINLINE void leaf2(int x) { sink ^= x; }
NOINLINE void leafy(int x) { leaf1(x); leaf2(x); sink += 3; }
NOINLINE int countdown(int n) { return n <= 0 ? sink : countdown(n - 1) + countdown(n - 2); }

int main(int argc, char **argv)
{
    (void)argv;
    for (int i = 0; i < 10 * argc; i++) {
        a(i);
        b(i);
    }
    leafy(argc);
    int depth = countdown(12);
    printf("checksum %d %d\n", sink, depth);
    return 0;
}
