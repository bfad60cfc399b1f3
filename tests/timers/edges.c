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
 *       timed code: the comparator's time must not count as outside time;
 *   keep_regs: every general register, the red zone and the six status
 *       flags (OF and SF set at one loop's exit, CF at the other's) hold
 *       known values across the events on its entry, its two loops' edges
 *       and its return: what it saw is printed. */
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

/* keep_regs(n): 7; keep_flags[2] the flags after each loop (n and 2
 * iterations), keep_bad[18] 1 for each register (in encoding order, %rsp
 * unchecked: the pops and the return would fail) or red-zone word that
 * lost its value. */
long keep_regs(long n);
unsigned long keep_flags[2];
unsigned char keep_bad[18];
long keep_count;
int keep_value;
#define KEEP_REG(r, v) "    mov $" #v ", %" #r "\n"
#define CHECK_REG(r, v, i) "    cmp $" #v ", %" #r "\n    setne keep_bad+" #i "(%rip)\n"
#define KEEP_REGS(X)                                                                      \
    X(rax, 0x1010101, 0) X(rcx, 0x2020202, 1) X(rdx, 0x3030303, 2) X(rbx, 0x4040404, 3)   \
    X(rbp, 0x5050505, 5) X(rsi, 0x6060606, 6) X(rdi, 0x7070707, 7) X(r8, 0x8080808, 8)   \
    X(r9, 0x9090909, 9) X(r10, 0xa0a0a0a, 10) X(r11, 0xb0b0b0b, 11) X(r12, 0xc0c0c0c, 12) \
    X(r13, 0xd0d0d0d, 13) X(r14, 0xe0e0e0e, 14) X(r15, 0xf0f0f0f, 15)
#define SET(r, v, i) KEEP_REG(r, v)
__asm__(".text\n"
        ".globl keep_regs\n"
        ".type keep_regs,@function\n"
        "keep_regs:\n"
        "    push %rbx\n    push %rbp\n    push %r12\n    push %r13\n    push %r14\n    push %r15\n"
        "    mov %rdi, keep_count(%rip)\n"
        "    movq $0x5a5a5a, -16(%rsp)\n" /* -8 is where pushf writes */
        "    movq $0xa5a5a5, -128(%rsp)\n"
        KEEP_REGS(SET)
        "    stc\n"                       /* CF lives across the first loop */
        "1:  decq keep_count(%rip)\n"
        "    jnz 1b\n"
        "    pushf\n"
        "    popq keep_flags(%rip)\n"
        "    movl $0, keep_value(%rip)\n"
        "2:  addl $0x40000000, keep_value(%rip)\n"
        "    jno 2b\n"                    /* left with OF and SF set */
        "    pushf\n"
        "    popq keep_flags+8(%rip)\n"
        KEEP_REGS(CHECK_REG)
        "    cmpq $0x5a5a5a, -16(%rsp)\n"
        "    setne keep_bad+16(%rip)\n"
        "    cmpq $0xa5a5a5, -128(%rsp)\n"
        "    setne keep_bad+17(%rip)\n"
        "    pop %r15\n    pop %r14\n    pop %r13\n    pop %r12\n    pop %rbp\n    pop %rbx\n"
        "    mov $7, %eax\n"
        "    ret\n"
        ".size keep_regs, .-keep_regs\n");

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
    for (long n = 1; n < 4; n++) {
        long r = keep_regs(n);
        printf("keep_regs(%ld) = %ld, flags %#lx %#lx (OF SF ZF AF PF CF), lost:", n, r,
               keep_flags[0] & 0x8d5, keep_flags[1] & 0x8d5);
        for (int i = 0; i < 18; i++)
            if (keep_bad[i])
                printf(" %s%d", i < 16 ? "register " : "red zone word ", i < 16 ? i : i - 16);
        printf("\n");
    }
    return 0;
}
