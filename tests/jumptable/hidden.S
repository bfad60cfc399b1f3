/* tests/jumptable/hidden.S — a jump table whose real bound the analysis
 * cannot see.  The index is checked in memory (`cmpl $3,(%rbx); ja`) and
 * read again after a tgkill system call; the signal's handler may store a
 * larger index in between (no call and no store of this code lies between
 * check and read, so the analysis takes 4 entries).  The table's data goes
 * on to an eighth entry, which the original reaches: the instrumented copy
 * must too, through its safety net.
 *
 *   int hidden_dispatch(volatile int *slot);  the case of *slot */
        .text
        .globl  hidden_dispatch
        .type   hidden_dispatch, @function
hidden_dispatch:
        push    %rbx
        push    %r12
        push    %r13
        mov     %rdi, %rbx
        call    getpid
        mov     %eax, %r12d
        call    gettid
        mov     %eax, %r13d
        cmpl    $3, (%rbx)
        ja      .Ldefault
        mov     $234, %eax              /* tgkill(getpid(), gettid(), SIGUSR1) */
        mov     %r12d, %edi
        mov     %r13d, %esi
        mov     $10, %edx
        syscall
        movl    (%rbx), %eax
        lea     .Lhtable(%rip), %rdx
        movslq  (%rdx,%rax,4), %rax
        add     %rdx, %rax
        jmp     *%rax
.Lh0:   mov     $10, %eax
        jmp     .Lout
.Lh1:   mov     $11, %eax
        jmp     .Lout
.Lh2:   mov     $12, %eax
        jmp     .Lout
.Lh3:   mov     $13, %eax
        jmp     .Lout
.Lhidden:
        mov     $77, %eax
        jmp     .Lout
.Ldefault:
        mov     $-1, %eax
.Lout:  pop     %r13
        pop     %r12
        pop     %rbx
        ret
        .size   hidden_dispatch, .-hidden_dispatch

        .section .rodata
        .p2align 2
.Lhtable:
        .long   .Lh0 - .Lhtable, .Lh1 - .Lhtable, .Lh2 - .Lhtable, .Lh3 - .Lhtable
        .long   .Lh0 - .Lhtable, .Lh0 - .Lhtable, .Lh0 - .Lhtable, .Lhidden - .Lhtable
        .section .note.GNU-stack, "", @progbits
