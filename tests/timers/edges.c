/* edges.c — edge shapes the samples lack, for tests/timers/run.sh (every
 * object timed, results printed, so a clobbered flag or register changes
 * the output):
 *   flags_loop: a loop entered by a jump and left by a fall-through where
 *       the flags of the last compare are live (the next block reads them):
 *       its timer events must preserve the flags (the *_flags entries);
 *   table_loop: a loop whose header is the target of two entries of a jump
 *       table (per-target trampolines in the cloned table);
 *   tail: a procedure left by a tail call;
 *   sort_some: calls qsort (an outside call) whose comparator by_value is
 *       timed code: the comparator's time must not count as outside time. */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

volatile long sink = 1;

long flags_loop(long n);
long table_loop(unsigned op, long n);

/* flags_loop(n): 7 when n >= 0 (the loop counts up to n), 9 when n < 0. */
__asm__(".text\n"
        ".globl flags_loop\n"
        ".type flags_loop,@function\n"
        "flags_loop:\n"
        "    xor %eax, %eax\n"
        "    cmp %rdi, %rax\n"
        "    jmp 2f\n"
        "1:  add $1, %rax\n"
        "    cmp %rdi, %rax\n"
        "2:  jl 1b\n"
        "    jg 3f\n"
        "    mov $7, %eax\n"
        "    ret\n"
        "3:  mov $9, %eax\n"
        "    ret\n"
        ".size flags_loop, .-flags_loop\n");

/* table_loop(op, n): ops 0 and 2 count n down in a loop entered straight
 * from the table (returns n), 1 and 3 return 100 + op, others 0. */
__asm__(".text\n"
        ".globl table_loop\n"
        ".type table_loop,@function\n"
        "table_loop:\n"
        "    xor %eax, %eax\n"
        "    cmp $3, %edi\n"
        "    ja 9f\n"
        "    lea 8f(%rip), %rdx\n"
        "    mov %edi, %edi\n"
        "    movslq (%rdx,%rdi,4), %rcx\n"
        "    add %rdx, %rcx\n"
        "    jmp *%rcx\n"
        "4:  add $1, %rax\n"
        "    sub $1, %rsi\n"
        "    jg 4b\n"
        "    ret\n"
        "5:  lea 100(%rdi), %eax\n"
        "    ret\n"
        "9:  ret\n"
        ".size table_loop, .-table_loop\n"
        ".section .rodata\n"
        ".balign 4\n"
        "8:  .long 4b-8b, 5b-8b, 4b-8b, 5b-8b\n"
        ".text\n");

NOINLINE long leaf(long x) { return x * 3 + sink; }

NOINLINE long tail(long x)
{
    if (x > 1000)
        x -= 5;
    return leaf(x + 1); /* a tail call at -O2 */
}

NOINLINE int by_value(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    for (int k = 0; k < 50; k++)
        sink += k;
    return (x > y) - (x < y);
}

NOINLINE long sort_some(void)
{
    long v[256];
    for (int i = 0; i < 256; i++)
        v[i] = (i * 37) % 256;
    qsort(v, 256, sizeof *v, by_value);
    return v[0] + v[255];
}

int main(void)
{
    long total = 0;
    for (long n = -3; n < 40; n += 7)
        total += flags_loop(n) * 1000 + n;
    for (unsigned op = 0; op < 6; op++)
        total += table_loop(op, 5 + op) * 10;
    for (long x = 995; x < 1010; x++)
        total += tail(x);
    total += sort_some();
    printf("total %ld\n", total);
    return 0;
}
