/* tests/codedata/blob.S — code that its program copies and runs elsewhere,
 * marked the two ways binaries mark such ranges:
 *   sized_blob: a data symbol (STT_OBJECT) with a size, over two functions;
 *   label_blob: a label without type or size (as V8's
 *     v8_Default_embedded_blob_code_), its size stored in data, over two
 *     functions without unwind info; after it, a function with unwind info
 *     (.cfi) that is ordinary code.
 * The functions use only pc-relative control flow inside their blob, so a
 * byte copy runs anywhere. */
    .text

    .globl sized_blob
    .type sized_blob, @object
    .p2align 6
sized_blob:
    /* long blob_square(long x): x*x by repeated addition (a loop) */
    .globl blob_square
    .type blob_square, @function
blob_square:
    xorl %eax, %eax
    movq %rdi, %rcx
    testq %rcx, %rcx
    jle 2f
1:  addq %rdi, %rax
    decq %rcx
    jnz 1b
2:  ret
    .size blob_square, .-blob_square

    /* long blob_callback(long (*f)(long), long x): f(x) + 1, called from here */
    .globl blob_callback
    .type blob_callback, @function
blob_callback:
    subq $8, %rsp
    movq %rdi, %rax
    movq %rsi, %rdi
    call *%rax
    addq $8, %rsp
    incq %rax
    ret
    .size blob_callback, .-blob_callback
.Lsized_end:
    .size sized_blob, .Lsized_end - sized_blob

    .globl label_blob
    .p2align 6
label_blob:
    /* long lb_twice(long x) */
    .globl lb_twice
    .type lb_twice, @function
lb_twice:
    leaq (%rdi,%rdi), %rax
    ret
    .size lb_twice, .-lb_twice

    /* long lb_callback(long (*f)(long), long x): f(lb_twice(x)) */
    .p2align 4
    .globl lb_callback
    .type lb_callback, @function
lb_callback:
    pushq %rdi
    movq %rsi, %rdi
    call lb_twice
    movq %rax, %rdi
    popq %rax
    subq $8, %rsp
    call *%rax
    addq $8, %rsp
    ret
    .size lb_callback, .-lb_callback
.Llabel_end:

    /* Ordinary code after the blob: unwind info, called in place. */
    .p2align 4
    .globl after_blob
    .type after_blob, @function
after_blob:
    .cfi_startproc
    leaq 1(%rdi), %rax
    ret
    .cfi_endproc
    .size after_blob, .-after_blob

    .section .rodata
    .globl sized_blob_size, label_blob_size
    .p2align 3
sized_blob_size:
    .quad .Lsized_end - sized_blob
label_blob_size:
    .quad .Llabel_end - label_blob

    .section .note.GNU-stack, "", @progbits
