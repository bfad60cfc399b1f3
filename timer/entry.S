/* timer/entry.S — the blob's header (at offset 0) and its entry point.
 *
 * The blob is linked at address 0, so a symbol's link-time address is its
 * offset in the blob: the header's offsets are plain absolute values.  All
 * code is position-independent (rip-relative only). */
#include "timer.h"

    .section .mt_header, "a"
    .globl mt_blob_start
    .hidden mt_blob_start
mt_blob_start:
    .quad MT_RT_MAGIC
    .long MT_RT_VERSION
    .long mt_blob_end                 /* blob_size */
    .long mt_bss_size                 /* bss_size (blob.ld) */
    .long mt_entry                    /* entry_offset */
    .long mt_params                   /* params_offset */
    .long mt_data_start               /* data_offset */
#define MT_RT_WRAP_OFFSET(id, name) .long mt_wrap_##id;
    MT_RT_WRAPPERS(MT_RT_WRAP_OFFSET)
#define MT_RT_TIMER_OFFSET(id, name) .long mt_timer_##name;
    MT_RT_TIMER_ENTRIES(MT_RT_TIMER_OFFSET)
#define MT_RT_EVENT_CODE(id, name)                                             \
    .long mt_event_##name, mt_event_##name##_routine;                         \
    .short mt_event_##name##_len, mt_event_##name##_record, mt_event_##name##_push, \
        mt_event_##name##_call;
    MT_RT_TIMER_EVENTS(MT_RT_EVENT_CODE)

/* The new e_entry.  The kernel left argc/argv/envp/auxv at %rsp and, for a
 * dynamically linked program, the dynamic loader put its finalizer in %rdx:
 * both must reach the original entry untouched. */
    .text
    .globl mt_entry
    .hidden mt_entry
mt_entry:
    mov %rdx, %r12            /* callee-saved across the C call */
    mov %rsp, %rdi            /* the initial stack: argc, argv..., envp..., auxv */
    mov %rsp, %rbp
    and $-16, %rsp            /* the ABI's alignment at a call */
    call mt_runtime_init      /* returns the original entry's run-time address */
    mov %rbp, %rsp
    mov %r12, %rdx
    xor %ebp, %ebp            /* as the kernel leaves it: the outermost frame */
    jmp *%rax

/* syscall() of a tracing copy: the three placement calls go to
 * mt_placement_syscall (runtime.c), which reports them; any other goes
 * straight on to the real syscall(), by a jump: its stack, registers and
 * errno as if called directly (a vfork through syscall() included). */
    .globl mt_wrap_SYSCALL
    .hidden mt_wrap_SYSCALL
mt_wrap_SYSCALL:
    cmp $237, %rdi            /* SYS_mbind */
    je mt_placement_syscall
    cmp $238, %rdi            /* SYS_set_mempolicy */
    je mt_placement_syscall
    cmp $279, %rdi            /* SYS_move_pages */
    je mt_placement_syscall
    mov mt_real_syscall(%rip), %r11
    test %r11, %r11
    jz 1f
    jmp *%r11
    /* A library copy: its runtime never starts, so nothing set
     * mt_real_syscall; its own syscall() is looked up (mt_own_syscall),
     * the argument registers and the stack left as they came. */
1:  push %rdi
    push %rsi
    push %rdx
    push %rcx
    push %r8
    push %r9
    sub $8, %rsp              /* the call's 16-byte alignment */
    call mt_own_syscall
    add $8, %rsp
    pop %r9
    pop %r8
    pop %rcx
    pop %rdx
    pop %rsi
    pop %rdi
    jmp *%rax

/* Writable data starts on its own page (the rewriter maps it R+W); one
 * word keeps .data non-empty so the flat image reaches mt_blob_end. */
    .data
    .quad 1

    .section .note.GNU-stack, "", @progbits
