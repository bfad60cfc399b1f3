/* control.c — control-flow shapes with known structure:
 *   find_first: a while loop left by a break and by its condition (2 exits)
 *   dispatch:   a dense switch (a jump table) whose case 3 holds a loop
 *   apply:      calls through a function pointer (indirect call sites)
 *   fib:        self-recursion */
#include <setjmp.h>
#include <stdio.h>

#define NOINLINE __attribute__((noinline))

volatile int sink;
static jmp_buf env;

NOINLINE int find_first(const int *v, int n, int key)
{
    int i = 0;
    while (i < n) {
        if (v[i] == key)
            break;
        i++;
    }
    return i;
}

NOINLINE int dispatch(int op, int x)
{
    switch (op) {
    case 0: return x + 1;
    case 1: return x * 3;
    case 2: return x - 7;
    case 3: {
        int s = 0;
        for (int k = 0; k < x; k++)
            s += k * sink;
        return s;
    }
    case 4: return x << 2;
    case 5: return x ^ 0x55;
    case 6: return x / 3;
    case 7: return -x;
    case 8: return x % 11;
    case 9: return x | 9;
    default: return 0;
    }
}

NOINLINE int twice(int x) { return 2 * x + sink; }
NOINLINE int square(int x) { return x * x + sink; }

NOINLINE int apply(int (*f)(int), int x) { return f(x) + f(x + 1); }

NOINLINE int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

NOINLINE void bail(int code) { longjmp(env, code); }

int main(int argc, char **argv)
{
    (void)argv;
    int v[32];
    for (int i = 0; i < 32; i++)
        v[i] = i * 3;
    volatile int total = find_first(v, 32, 27 + argc - 1);
    for (int op = 0; op < 12; op++)
        total += dispatch(op, 10 + op);
    total += apply(argc > 1 ? square : twice, 5);
    total += fib(15);
    if (setjmp(env) == 0)
        bail(3);
    printf("checksum %d\n", total);
    return 0;
}
