/* control.c — control-flow shapes with known structure:
 *   find_first: a while loop left by a break and by its condition (2 exits)
 *   dispatch:   a dense switch (a jump table) whose case 3 holds a loop
 *   apply:      calls through a function pointer (indirect call sites)
 *   fib:        self-recursion
 *   registers_survive: values in caller-saved registers across a call to a
 *               leaf procedure that never writes them (callers compiled with
 *               -fipa-ra rely on that) and across a loop: a rewriter that
 *               borrows a register for a counter must not pick one of those */
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

/* leaf_loop(n): 3n, in a block that loops on itself; writes rax and rdi only. */
__asm__(".text\n"
        ".globl leaf_loop\n"
        ".type leaf_loop,@function\n"
        "leaf_loop:\n"
        "    movl $0, %eax\n"
        "1:  add $3, %rax\n"
        "    sub $1, %rdi\n"
        "    jnz 1b\n"
        "    ret\n"
        ".size leaf_loop, .-leaf_loop\n");

NOINLINE long registers_survive(long n)
{
    long sum;
    __asm__ volatile("mov $8, %%r8\n\tmov $9, %%r9\n\tmov $10, %%r10\n\tmov $11, %%r11\n\t"
                     "mov $2, %%rcx\n\tmov $4, %%rsi\n\tmov $5, %%rdx\n\t"
                     "mov %[n], %%rdi\n\t"
                     "sub $128, %%rsp\n\t" /* the call must not clobber our red zone */
                     "call leaf_loop\n\t"
                     "add $128, %%rsp\n\t"
                     "mov $1000, %%rdi\n"
                     "2:\n\tadd $1, %%rax\n\tsub $1, %%rdi\n\tjnz 2b\n\t"
                     "add %%r8, %%rax\n\tadd %%r9, %%rax\n\tadd %%r10, %%rax\n\tadd %%r11, %%rax\n\t"
                     "add %%rcx, %%rax\n\tadd %%rsi, %%rax\n\tadd %%rdx, %%rax\n\t"
                     "mov %%rax, %[sum]"
                     : [sum] "=m"(sum)
                     : [n] "r"(n)
                     : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "cc", "memory");
    return sum;
}

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
    total += (int)registers_survive(50); /* 3*50 + 1000 + 49 = 1199 */
    if (setjmp(env) == 0)
        bail(3);
    printf("checksum %d\n", total);
    return 0;
}
