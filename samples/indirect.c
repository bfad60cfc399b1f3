/* indirect.c — indirect jumps that are not plain switches, as real programs
 * have them (gawk, xz):
 *   via_field:  a tail call through a function pointer in a struct, after
 *               a frame with callee-saved registers is torn down
 *               (`pop %rbx; ...; jmp *%rax`)
 *   via_table:  a tail call through a table of structs holding function
 *               pointers (`jmp *0x8(%rdx,%rax,8)`: 8-byte entries, stride 16)
 *   options:    a switch on a value returned by a call, copied to another
 *               register after the bound check (getopt loops)
 *   encode:     a switch on an array element compared in memory
 *               (`cmpl $4,0x8(%rdi,%rax,4); lea ...; ja`)
 *   threaded:   computed gotos through a table of label addresses, in a
 *               procedure without a frame: an indirect jump inside the
 *               procedure, never to be taken for a tail call
 *   set_unless: a 4-byte entry block (`test %esi,%esi; jne`) followed by
 *               a block the 5-byte entry jump overwrites
 *   call_forms: calls through a pointer in %r11 (the register pass 1's
 *               record of call targets loads the target into), in a stack
 *               slot addressed from %rsp, and in a global (rip-relative)
 *   dispatch:   one call site with 20 targets, more than the 15 a site
 *               records (the rest go to its overflow), as an interpreter's
 *               command dispatch (tcl) or virtual calls (cppcheck) have
 * Every procedure runs, so the callgrind oracle checks each count. */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

volatile int sink;

NOINLINE int inc(int x) { return x + 1 + sink; }
NOINLINE int dbl(int x) { return 2 * x + sink; }
NOINLINE int neg(int x) { return -x + sink; }
NOINLINE int work(int i) { return (i * 7) % 5 + sink; }

struct handler {
    int (*fn)(int);
    int bias;
};

NOINLINE int via_field(const struct handler *h, int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += work(i + h->bias);
    return h->fn(s + h->bias);
}

struct op {
    const char *name;
    int (*fn)(int);
};

static const struct op ops[] = {{"inc", inc}, {"dbl", dbl}, {"neg", neg}};

NOINLINE int via_table(unsigned i, int x)
{
    if (i >= sizeof ops / sizeof ops[0])
        return 0;
    return ops[i].fn(x);
}

NOINLINE int next_option(int k) { return (k * 5 + sink) % 13 - 1; }

NOINLINE int options(int n)
{
    int total = 0;
    for (int k = 0; k < n; k++) {
        int c = next_option(k);
        if (c == -1)
            continue;
        if (sink & 0x40)
            total += 100;
        switch (c) {
        case 0: total += 3; break;
        case 1: total ^= 5; break;
        case 2: total -= 7; break;
        case 3: total += work(k); break;
        case 4: total *= 3; break;
        case 5: total += 11; break;
        case 6: total |= 1; break;
        case 7: total += k; break;
        case 8: total -= k; break;
        case 9: total += 2 * k; break;
        default: total++; break;
        }
    }
    return total;
}

struct coder {
    unsigned pos, count;
    int symbols[64];
};

NOINLINE int encode(struct coder *rc)
{
    int out = 0;
    while (rc->pos < rc->count) {
        switch (rc->symbols[rc->pos]) {
        case 0: out = out * 3 + 1; break;
        case 1: out += 17; break;
        case 2: out ^= 0x5a; break;
        case 3: out -= 9; break;
        case 4: out = (out << 1) + sink; break;
        default: return out;
        }
        rc->pos++;
    }
    return out;
}

struct settings {
    int mode, level;
};

NOINLINE void set_unless(struct settings *s, int keep, int level)
{
    if (!keep)
        s->level = level;
}

/* Bytecode: 0 inc, 1 dec, 2 double, 3 end. */
NOINLINE int threaded(const unsigned char *code)
{
    static void *const labels[] = {&&op_inc, &&op_dec, &&op_double, &&op_end};
    int acc = 0;
    goto *labels[*code++];
op_inc:
    acc++;
    goto *labels[*code++];
op_dec:
    acc--;
    goto *labels[*code++];
op_double:
    acc *= 2;
    goto *labels[*code++];
op_end:
    return acc;
}

/* The three operand forms pass 1 records targets of differently (inline
 * through %r11, or pushed when the operand is %r11 itself).  Leaf code may
 * keep data in the red zone: the calls step over it. */
int (*global_fn)(int) = neg;
NOINLINE int call_forms(int (*f)(int), int x)
{
    int a, b, c;
    __asm__ volatile("lea -128(%%rsp), %%rsp\n\t"
                     "mov %1, %%r11\n\t"
                     "mov %2, %%edi\n\t"
                     "call *%%r11\n\t"
                     "lea 128(%%rsp), %%rsp"
                     : "=a"(a) : "r"(f), "r"(x)
                     : "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory", "cc");
    __asm__ volatile("lea -128(%%rsp), %%rsp\n\t"
                     "push %1\n\t"
                     "mov %2, %%edi\n\t"
                     "call *(%%rsp)\n\t"
                     "lea 136(%%rsp), %%rsp"
                     : "=a"(b) : "r"(f), "r"(x + 1)
                     : "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory", "cc");
    __asm__ volatile("lea -128(%%rsp), %%rsp\n\t"
                     "mov %1, %%edi\n\t"
                     "call *global_fn(%%rip)\n\t"
                     "lea 128(%%rsp), %%rsp"
                     : "=a"(c) : "r"(x + 2)
                     : "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory", "cc");
    return a + b + c;
}

#define TARGET(k) \
    NOINLINE int target##k(int x) { return x * k + sink; }
TARGET(1) TARGET(2) TARGET(3) TARGET(4) TARGET(5) TARGET(6) TARGET(7) TARGET(8) TARGET(9)
TARGET(10) TARGET(11) TARGET(12) TARGET(13) TARGET(14) TARGET(15) TARGET(16) TARGET(17)
TARGET(18) TARGET(19) TARGET(20)
int (*const targets[])(int) = {target1,  target2,  target3,  target4,  target5,
                               target6,  target7,  target8,  target9,  target10,
                               target11, target12, target13, target14, target15,
                               target16, target17, target18, target19, target20};
/* Not a tail call (a jump): the volatile read comes after the call. */
NOINLINE int dispatch(int i) { return targets[i % 20](i) + sink; }

int main(int argc, char **argv)
{
    (void)argv;
    int n = 20 + argc;
    struct handler h[] = {{inc, 1}, {dbl, 2}, {neg, 3}};
    int s = 0;
    for (int i = 0; i < n; i++)
        s += via_field(&h[i % 3], i % 7);
    for (int i = 0; i < n; i++)
        s += via_table((unsigned)i % 4, i);
    s += options(3 * n);
    struct coder rc = {.pos = 0, .count = 60};
    for (int i = 0; i < 64; i++)
        rc.symbols[i] = (i * 7 + 3) % 5;
    rc.symbols[55] = 9;
    s += encode(&rc);
    const unsigned char code[] = {0, 0, 2, 1, 2, 0, 3};
    for (int i = 0; i < n; i++)
        s += threaded(code + i % 3);
    struct settings st = {0, 0};
    for (int i = 0; i < n; i++)
        set_unless(&st, i % 3, i);
    s += st.level;
    for (int i = 0; i < n; i++)
        s += call_forms(i % 2 ? inc : dbl, i);
    for (int i = 0; i < 2 * n; i++)
        s += dispatch(i);
    printf("%d\n", s);
    return 0;
}
