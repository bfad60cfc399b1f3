/* tests/jumptable/guards.S — one jump table reached under two guards, the
 * shape of valgrind's memcheck at 0x58190530: `cmp $0x31; ja TABLE` sends
 * every index above 0x31 to the table, and the indices up to 0x31 reach it
 * through other paths.  No compare bounds the first path: only the byte
 * the index is (movzbl), so the table has all 256 entries.
 *
 *   int classify(unsigned char c);  returns the case number of c */
        .text
        .globl  classify
        .type   classify, @function
classify:
        movzbl  %dil, %ecx
        cmp     $0x31, %cl
        ja      .Ldispatch              /* c > 0x31: the taken edge bounds nothing */
        movabs  $0x3030303030303, %rax
        bt      %rcx, %rax
        jb      .Lspecial               /* a few small indices go round first */
.Ldispatch:
        lea     .Ltable(%rip), %rdx
        movzbl  %cl, %eax
        movslq  (%rdx,%rax,4), %rax
        add     %rdx, %rax
        jmp     *%rax
.Lspecial:
        test    $1, %cl
        je      .Ldispatch              /* c <= 0x31 and even: to the table */
        mov     $100, %eax
        ret
.Lc0:   mov     $0, %eax
        ret
.Lc1:   mov     $1, %eax
        ret
.Lc2:   mov     $2, %eax
        ret
.Lhigh0:
        mov     $3, %eax
        ret
.Lhigh1:
        mov     $4, %eax
        ret
.Lfar:  mov     $5, %eax
        ret
        .size   classify, .-classify

        .section .rodata
        .p2align 2
.Ltable:
        .set    i, 0
        .rept   256
        .if     i <= 0x31
          .if   (i % 3) == 0
            .long .Lc0 - .Ltable
          .elseif (i % 3) == 1
            .long .Lc1 - .Ltable
          .else
            .long .Lc2 - .Ltable
          .endif
        .elseif i == 255
            .long .Lfar - .Ltable
        .elseif (i % 5) == 0
            .long .Lhigh0 - .Ltable
        .else
            .long .Lhigh1 - .Ltable
        .endif
        .set    i, i + 1
        .endr
        .section .note.GNU-stack, "", @progbits
