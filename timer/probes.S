/* timer/probes.S — the pass-2 timer code: the events the rewriter copies
 * onto the entry and exit edges of timed m-objects (timer.h,
 * MT_RT_TIMER_EVENTS), the runtime routines their rare paths call, and the
 * outside-call brackets.
 *
 * An event is inline code (EVENT_START, EVENT_STOP below): the rewriter
 * copies its bytes from the blob (mt_rt_header.event_code), with the
 * object's record offset in its two imm32 fields and the rel32 of its one
 * call aimed at the routine in the copy's runtime.  Its fast path handles
 * the common case straight-line; any other case (frames left by longjmp or
 * exceptions, a callback from an outside call, a stop whose frame is not on
 * top) restores every register and calls the routine, which handles all
 * cases, with the same stack the routines always had:
 *
 *     lea -128(%rsp),%rsp     step over the red zone (loops of leaf code use it)
 *     push $RECORD            slot offset of the object's mt_timer_record
 *     call mt_timer_start_loop (or _stop; *_flags where flags are live)
 *     lea 128(%rsp),%rsp
 *
 * without the two `lea` at a procedure's entry (start_proc, only there) and
 * where it is left (stop_leave: returns and tail calls): no red zone is in
 * use there.  Inline rather than called: a call and its `ret $8` cost 3.5
 * TSC ticks of a pair on a Xeon family 6 model 207 (Raptor Cove), whose
 * rdtsc does not overlap much with the code around it (docs/ARCHITECTURE.md).
 *
 * Every register is preserved; the *_flags variants also preserve OF SF ZF
 * AF PF CF (lahf/seto, never pushf).  All state is per thread, addressed
 * through %gs (the thread's slot).  The fast paths are straight-line: a
 * start reads the TSC last and a stop reads it first, so the bookkeeping
 * falls outside the measured interval.  The rare paths (frames left by
 * longjmp or exceptions) are C, in runtime.c.
 *
 * Outside calls (calls through the PLT) are bracketed by
 * `call mt_timer_outside_enter` / `call mt_timer_outside_exit`: at a call
 * site the flags are dead and the red zone is free (the ABI).  The call's
 * start is kept in the top frame; a timed object entered from inside it (a
 * callback, such as qsort's comparator) pauses it, and its exit resumes it,
 * so callbacks' time is not counted as outside time; but a library copy's
 * object entered from another object's outside call (the executable's call
 * through the PLT) is that call's outside time all the same
 * (mt_timer_outside_resumed). */
#include "timer.h"

    .text

/* Frames of the inserted code: the start/stop routines are entered with
 * the record offset at 8(%rsp) and the event's %rsp 144 bytes above. */

/* SAVE/RESTORE keep %rcx, %rdx, %rax (and, with `flags`, OF SF ZF AF PF
 * CF) on the stack: all the events' fast paths use; the routines save
 * %rsi and %rdi too. */
.macro SAVE flags
    push %rcx
    push %rdx
    push %rax
.if \flags
    lahf
    seto %al
    push %rax
.endif
.endm

.macro RESTORE flags
.if \flags
    pop %rax
    add $0x7f, %al              /* OF = the saved seto byte */
    sahf
.endif
    pop %rax
    pop %rdx
    pop %rcx
.endm

/* Calls C `fn(%rax)` with every caller-saved register but %rax preserved;
 * the result is left in %rax (the C code touches no vector register:
 * -mgeneral-regs-only). */
.macro CALL_C fn
    push %rcx
    push %rsi
    push %rdi
    push %r8
    push %r9
    push %r10
    push %r11
    mov %rax, %rdi
    mov %rsp, %r11
    and $-16, %rsp
    push %r11
    push %r11
    call \fn
    pop %r11
    mov %r11, %rsp
    pop %r11
    pop %r10
    pop %r9
    pop %r8
    pop %rdi
    pop %rsi
    pop %rcx
.endm

/* START name, flags, proc: a procedure's frame is unwound when its %rsp is
 * at or below the new entry's (the same call depth means it returned or was
 * left); a loop's only when strictly below (nested loops of one procedure
 * share their %rsp).
 *
 * The slot is addressed through its own address (MT_SLOT_SELF, read once
 * through %gs) rather than through %gs: on Intel's Golden Cove family a
 * store through a segment with a nonzero base issues at most one per cycle
 * (plain stores: two), and an add to memory through a base register alone
 * two per cycle (through %gs, an index or %rip: one). */
.macro START name, flags, proc
    .globl mt_timer_\name
    .hidden mt_timer_\name
    .p2align 6
mt_timer_\name:
    SAVE \flags
    push %rsi
    push %rdi
    .set words, 5 + \flags
    mov 8*words+8(%rsp), %rcx           /* the record's slot offset */
.if \proc
    lea 8*words+16(%rsp), %rsi          /* %rsp of the event (at an entry: no red zone) */
.else
    lea 8*words+144(%rsp), %rsi         /* %rsp of the event */
.endif
    mov %gs:MT_SLOT_SELF, %rdi          /* the slot */
    mov MT_SLOT_TIMER_TOP(%rdi), %rdx   /* the top frame's slot offset */
    cmp %rsi, MT_FRAME_RSP(%rdi,%rdx)
.if \proc
    jbe 4f
.else
    jb 4f
.endif
1:  mov MT_REC_DEPTH(%rdi,%rcx), %rax
    add $1, %rax
    mov %rax, MT_REC_DEPTH(%rdi,%rcx)
    cmp $1, %rax
    jne 3f
    add $MT_FRAME_SIZE, %rdx
    mov %rdx, MT_SLOT_TIMER_TOP(%rdi)
    add %rdi, %rdx                      /* the new frame */
    mov %rsi, MT_FRAME_RSP(%rdx)
    mov %rcx, MT_FRAME_RECORD(%rdx)
    add %rdi, %rcx                      /* the record */
    xor %eax, %eax
    mov %rax, MT_FRAME_CHILD(%rdx)
    mov %rax, MT_FRAME_OUTSIDE(%rdx)
    mov %rax, MT_FRAME_OUTSIDE_T0(%rdx)
    addq $1, MT_REC_ENTRIES(%rcx)
    mov %rdx, %rsi
    cmpq $0, MT_FRAME_OUTSIDE_T0-MT_FRAME_SIZE(%rsi)
    jne 5f                              /* a callback from an outside call */
    rdtsc
    shl $32, %rdx
    or %rdx, %rax
    mov %rax, MT_FRAME_T0(%rsi)
2:  pop %rdi
    pop %rsi
    RESTORE \flags
    ret $8
3:  addq $1, MT_REC_RECURSIVE(%rdi,%rcx)
    jmp 2b
5:  rdtsc
    shl $32, %rdx
    or %rdx, %rax
    mov %rax, MT_FRAME_T0(%rsi)
    sub MT_FRAME_OUTSIDE_T0-MT_FRAME_SIZE(%rsi), %rax
    add %rax, MT_FRAME_OUTSIDE-MT_FRAME_SIZE(%rsi)
    movq $MT_OUTSIDE_PAUSED, MT_FRAME_OUTSIDE_T0-MT_FRAME_SIZE(%rsi)
    jmp 2b
4:  lea \proc(%rsi), %rax               /* close frames whose rsp < %rax */
    CALL_C mt_timer_unwind
    mov %rax, %rdx
    jmp 1b
.endm

.macro STOP name, flags
    .globl mt_timer_\name
    .hidden mt_timer_\name
    .p2align 6
mt_timer_\name:
    SAVE \flags
    push %rsi
    push %rdi
    .set words, 5 + \flags
    mov 8*words+8(%rsp), %rcx           /* the record's slot offset */
    mov %gs:MT_SLOT_SELF, %rdi          /* the slot */
    mov MT_REC_DEPTH(%rdi,%rcx), %rax
    sub $1, %rax
    jb 2f                               /* not active (left by a non-local exit) */
    mov %rax, MT_REC_DEPTH(%rdi,%rcx)
    jnz 2f                              /* an inner recursive instance */
    mov MT_SLOT_TIMER_TOP(%rdi), %rsi   /* the top frame's slot offset */
    cmp %rcx, MT_FRAME_RECORD(%rdi,%rsi)
    jne 4f
1:  rdtsc
    shl $32, %rdx
    or %rdx, %rax
    cmp MT_SLOT_CLOCK_NEXT(%rdi), %rax
    jae 6f                              /* time to measure the clock */
7:  add %rdi, %rcx                      /* the record */
    add %rdi, %rsi                      /* its frame */
    mov %rax, %rdx
    sub MT_SLOT_CLOCK_AT(%rdi), %rdx
    sub MT_FRAME_T0(%rsi), %rax
    cmp %rax, %rdx                      /* its ticks since the clock was measured */
    cmova %rax, %rdx
    imul MT_SLOT_CLOCK_SCALE(%rdi), %rdx
    shr $MT_CLOCK_SCALE_BITS, %rdx
    add %rdx, MT_REC_CYCLES(%rcx)       /* at that clock */
    add %rax, MT_REC_INCLUSIVE(%rcx)
    add %rax, MT_FRAME_CHILD-MT_FRAME_SIZE(%rsi)
    sub MT_FRAME_CHILD(%rsi), %rax
    add %rax, MT_REC_EXCLUSIVE(%rcx)
    mov MT_FRAME_OUTSIDE(%rsi), %rax
    add %rax, MT_REC_OUTSIDE(%rcx)
    add %rax, MT_FRAME_OUTSIDE-MT_FRAME_SIZE(%rsi)
    lea -MT_FRAME_SIZE(%rsi), %rax
    sub %rdi, %rax
    mov %rax, MT_SLOT_TIMER_TOP(%rdi)
    cmpq $MT_OUTSIDE_PAUSED, MT_FRAME_OUTSIDE_T0-MT_FRAME_SIZE(%rsi)
    je 5f                               /* back in the outside call it was called from */
2:  pop %rdi
    pop %rsi
    RESTORE \flags
    ret $8
4:  mov %rcx, %rax                      /* frames above ours were left abnormally */
    CALL_C mt_timer_close_above
    mov %rax, %rsi
    test %rax, %rax
    jnz 1b
    jmp 2b
5:  rdtsc
    shl $32, %rdx
    or %rdx, %rax
    mov %rax, MT_FRAME_OUTSIDE_T0-MT_FRAME_SIZE(%rsi)
    mov %rsi, %rax                      /* the frame just popped */
    CALL_C mt_timer_outside_resumed
    jmp 2b
6:  CALL_C mt_timer_clock_probe         /* returns the stop's time, %rax */
    jmp 7b
.endm

    START start_proc, 0, 1
    START start_loop, 0, 0
    START start_loop_flags, 1, 0
    STOP stop, 0
    STOP stop_flags, 1

/* ---- events: the code the rewriter copies onto edges ---------------------
 *
 * The record's slot offset lives in
 * %rcx, so that it is one imm32 in the copy (`movl $RECORD, %ecx`) and the
 * record's fields are %gs:FIELD(%rcx); `rec` is `imm` in the copied
 * code, a register in mt_timer_calibrate's copy of the same code. */
/* Where the rewriter patches the copied code `name`: absolute symbols
 * mt_event_NAME_FIELD, offsets from its first byte (entry.S puts them in
 * the blob's header). */
.macro EVENT_MARK name, field, back
.ifnc \name,
    .globl mt_event_\name\()_\field
    .hidden mt_event_\name\()_\field
    .set mt_event_\name\()_\field, . - \back - mt_event_\name
.endif
.endm

.macro EVENT_RECORD_RCX rec, name
.ifc \rec,imm
    movl $0, %ecx
    EVENT_MARK \name, record, 4
.else
    mov \rec, %rcx
.endif
.endm

/* The slow path: every register restored, the routine called as always. */
.macro EVENT_CALL flags, redzone, rec, routine, name
    RESTORE \flags
.ifc \rec,imm
    .byte 0x68                  /* push imm32 (gas would take imm8 for 0) */
    .long 0
    EVENT_MARK \name, push, 4
.else
    push \rec
.endif
    call \routine
    EVENT_MARK \name, call, 4
.if \redzone
    lea 128(%rsp), %rsp
.endif
.endm

/* Both kinds begin stepping over the red zone, saving, loading the record
 * and the top frame's offset (%rdx), and end their fast paths restoring. */
.macro EVENT_BEGIN flags, redzone, rec, name
.if \redzone
    lea -128(%rsp), %rsp
.endif
    SAVE \flags
    EVENT_RECORD_RCX \rec, \name
    mov %gs:MT_SLOT_TIMER_TOP, %rdx
.endm

.macro EVENT_DONE flags, redzone
    RESTORE \flags
.if \redzone
    lea 128(%rsp), %rsp
.endif
    jmp 9f
.endm

/* A start: a frame pushed unless the top one was left by a non-local exit
 * (its %rsp below the event's; for a procedure entry at or below it) or is
 * in an outside call (a callback): the routine closes or pauses those.  A
 * recursive entry only counts. */
.macro EVENT_START flags, redzone, rec, routine, name=
    EVENT_BEGIN \flags, \redzone, \rec, \name
    lea 8*(3+\flags)+128*\redzone(%rsp), %rax   /* %rsp of the event */
    cmp %rax, %gs:MT_FRAME_RSP(%rdx)
.if \redzone
    jb 8f
.else
    jbe 8f                      /* a procedure's entry: at the same depth too */
.endif
    cmpq $0, %gs:MT_FRAME_OUTSIDE_T0(%rdx)
    jne 8f
    cmpq $0, %gs:MT_REC_DEPTH(%rcx)
    jne 7f
    movq $1, %gs:MT_REC_DEPTH(%rcx)
    addq $1, %gs:MT_REC_ENTRIES(%rcx)
    add $MT_FRAME_SIZE, %rdx
    mov %rdx, %gs:MT_SLOT_TIMER_TOP
    mov %rax, %gs:MT_FRAME_RSP(%rdx)
    mov %rcx, %gs:MT_FRAME_RECORD(%rdx)
    xor %eax, %eax
    mov %rax, %gs:MT_FRAME_CHILD(%rdx)
    mov %rax, %gs:MT_FRAME_OUTSIDE(%rdx)
    mov %rax, %gs:MT_FRAME_OUTSIDE_T0(%rdx)
    mov %rdx, %rcx
    rdtsc
    shl $32, %rdx
    or %rdx, %rax
    mov %rax, %gs:MT_FRAME_T0(%rcx)
6:  EVENT_DONE \flags, \redzone
7:  addq $1, %gs:MT_REC_DEPTH(%rcx)
    addq $1, %gs:MT_REC_RECURSIVE(%rcx)
    jmp 6b
8:  EVENT_CALL \flags, \redzone, \rec, \routine, \name
9:
.endm

/* A stop of the outermost instance whose frame is on top, with no outside
 * call to resume: the frame popped, its times added to its record and its
 * parent, its cycles at the thread's clock to its record.  An inner
 * recursive instance only counts down, an inactive object (its frame
 * closed by a non-local exit) does nothing, and the rest -- the clock due
 * to be measured among it -- goes to the routine. */
.macro EVENT_STOP flags, redzone, rec, routine, name=
    EVENT_BEGIN \flags, \redzone, \rec, \name
    cmpq $1, %gs:MT_REC_DEPTH(%rcx)
    jne 7f
    cmp %rcx, %gs:MT_FRAME_RECORD(%rdx)
    jne 8f                      /* frames above ours were left abnormally */
    cmpq $MT_OUTSIDE_PAUSED, %gs:MT_FRAME_OUTSIDE_T0-MT_FRAME_SIZE(%rdx)
    je 8f                       /* back in the outside call it was called from */
    rdtsc
    shl $32, %rdx
    or %rdx, %rax
    cmp %gs:MT_SLOT_CLOCK_NEXT, %rax
    jae 8f                      /* the clock due: the routine measures it */
    movq $0, %gs:MT_REC_DEPTH(%rcx)
    mov %gs:MT_SLOT_TIMER_TOP, %rdx
    push %rsi
    mov %rax, %rsi
    sub %gs:MT_SLOT_CLOCK_AT, %rsi
    sub %gs:MT_FRAME_T0(%rdx), %rax
    cmp %rax, %rsi              /* its ticks since the clock was measured */
    cmova %rax, %rsi
    imul %gs:MT_SLOT_CLOCK_SCALE, %rsi
    shr $MT_CLOCK_SCALE_BITS, %rsi
    add %rsi, %gs:MT_REC_CYCLES(%rcx)   /* at that clock */
    pop %rsi
    add %rax, %gs:MT_REC_INCLUSIVE(%rcx)
    add %rax, %gs:MT_FRAME_CHILD-MT_FRAME_SIZE(%rdx)
    sub %gs:MT_FRAME_CHILD(%rdx), %rax
    add %rax, %gs:MT_REC_EXCLUSIVE(%rcx)
    mov %gs:MT_FRAME_OUTSIDE(%rdx), %rax
    test %rax, %rax
    jnz 5f                      /* it made outside calls */
4:  sub $MT_FRAME_SIZE, %rdx
    mov %rdx, %gs:MT_SLOT_TIMER_TOP
6:  EVENT_DONE \flags, \redzone
5:  add %rax, %gs:MT_REC_OUTSIDE(%rcx)
    add %rax, %gs:MT_FRAME_OUTSIDE-MT_FRAME_SIZE(%rdx)
    jmp 4b
7:  cmpq $0, %gs:MT_REC_DEPTH(%rcx)
    je 6b                       /* not active (left by a non-local exit) */
    subq $1, %gs:MT_REC_DEPTH(%rcx)
    jmp 6b                      /* an inner recursive instance */
8:  EVENT_CALL \flags, \redzone, \rec, \routine, \name
9:
.endm

/* EVENT name, start, flags, redzone, routine: the copied code
 * mt_event_NAME, of mt_event_NAME_len bytes. */
.macro EVENT name, start, flags, redzone, routine
    .globl mt_event_\name
    .hidden mt_event_\name
mt_event_\name:
.if \start
    EVENT_START \flags, \redzone, imm, \routine, \name
.else
    EVENT_STOP \flags, \redzone, imm, \routine, \name
.endif
    EVENT_MARK \name, len, 0
    .globl mt_event_\name\()_routine
    .hidden mt_event_\name\()_routine
    .set mt_event_\name\()_routine, \routine
.endm

    EVENT start_proc, 1, 0, 0, mt_timer_start_proc
    EVENT start_loop, 1, 0, 1, mt_timer_start_loop
    EVENT start_loop_flags, 1, 1, 1, mt_timer_start_loop_flags
    EVENT stop_leave, 0, 0, 0, mt_timer_stop
    EVENT stop, 0, 0, 1, mt_timer_stop
    EVENT stop_flags, 0, 1, 1, mt_timer_stop_flags

    .globl mt_timer_outside_enter
    .hidden mt_timer_outside_enter
mt_timer_outside_enter:
    push %rax
    push %rdx
    /* A frame below the call site's %rsp was left by longjmp or an
     * exception: close it first, or the call's time would go to it. */
    lea 24(%rsp), %rax
    mov %gs:MT_SLOT_TIMER_TOP, %rdx
    cmp %rax, %gs:MT_FRAME_RSP(%rdx)
    jb 2f
1:  rdtsc
    shl $32, %rdx
    or %rdx, %rax
    mov %gs:MT_SLOT_TIMER_TOP, %rdx
    mov %rax, %gs:MT_FRAME_OUTSIDE_T0(%rdx)
    pop %rdx
    pop %rax
    ret
2:  CALL_C mt_timer_unwind
    jmp 1b

    .globl mt_timer_outside_exit
    .hidden mt_timer_outside_exit
mt_timer_outside_exit:
    push %rax
    push %rdx
    rdtsc
    shl $32, %rdx
    or %rdx, %rax
    mov %gs:MT_SLOT_TIMER_TOP, %rdx
    cmpq $MT_OUTSIDE_PAUSED, %gs:MT_FRAME_OUTSIDE_T0(%rdx)
    jbe 1f                              /* no call in progress (left by longjmp) */
    sub %gs:MT_FRAME_OUTSIDE_T0(%rdx), %rax
    add %rax, %gs:MT_FRAME_OUTSIDE(%rdx)
1:  movq $0, %gs:MT_FRAME_OUTSIDE_T0(%rdx)
    pop %rdx
    pop %rax
    ret

/* mt_timer_calibrate(record, pairs): `pairs` times, an empty object timed
 * on `record` with the very code the rewriter copies onto a loop's edges
 * (the record in %rdi instead of an imm32); what the record's inclusive
 * time grows by is the timers' own bias (runtime.c, calibrate_timers).
 * C-callable: the events preserve every register. */
    .globl mt_timer_calibrate
    .hidden mt_timer_calibrate
mt_timer_calibrate:
1:  EVENT_START 0, 1, %rdi, mt_timer_start_loop
    EVENT_STOP 0, 1, %rdi, mt_timer_stop
    sub $1, %rsi
    jnz 1b
    ret

/* Pass 1: counts one call through a pointer in its site's record
 * (timer.h, MT_CALL_TARGETS).  The inserted code is
 *
 *     push TARGET             the call's own operand (`call *X` -> `push X`)
 *     push $SITE              slot offset of the site's mt_call_site_record
 *     call mt_timer_record_call_target
 *     call *X                 the original call (or tail jump)
 *
 * and the routine pops both words (`ret $16`).  At a call site the flags
 * are dead and the red zone free (the ABI); every register is preserved.
 * Targets fill the record in the order they are first seen, so a lookup
 * ends at the first free entry; claiming one is a cmpxchg, so a signal
 * handler recording at the same site in between is not overwritten. */
    .globl mt_timer_record_call_target
    .hidden mt_timer_record_call_target
mt_timer_record_call_target:
    push %rax
    push %rcx
    push %rdx
    push %rsi
    mov 40(%rsp), %rcx                  /* the site's record */
    mov 48(%rsp), %rsi                  /* the target */
    lea MT_CALL_SITE_OVERFLOW(%rcx), %rdx
1:  mov %gs:(%rcx), %rax
    cmp %rsi, %rax
    je 3f
    test %rax, %rax
    jz 2f
    add $16, %rcx
    cmp %rdx, %rcx
    jne 1b
    addq $1, %gs:(%rdx)                 /* more targets than the record holds */
    jmp 4f
2:  cmpxchg %rsi, %gs:(%rcx)            /* %rax is 0: claim the free entry */
    jne 1b                              /* taken in between: look at it again */
3:  addq $1, %gs:8(%rcx)
4:  pop %rsi
    pop %rdx
    pop %rcx
    pop %rax
    ret $16

/* A full trace frame (timer.h, "Traced loads"): the inserted code calls
 * this past the red zone when its `jrcxz` finds the frame's index at 0,
 * with the flags possibly live: rare enough for pushf/popf.  Every register
 * is preserved. */
    .globl mt_timer_trace_flush
    .hidden mt_timer_trace_flush
mt_timer_trace_flush:
    pushfq
    push %rax
    push %rdx
    CALL_C mt_trace_flush
    pop %rdx
    pop %rax
    popfq
    ret

/* After a system call that creates a task (the rewriter's "Tasks a copy
 * creates", relocate.c): called past the red zone with the call's number
 * pushed, which `ret $8` pops; MT_SYSCALL_NR_IN_SLOT when the number is
 * the slot's (a system call the rewriter could not name, which may create
 * none).  The parent (%rax not 0: the child's id or an error) only tests;
 * the child of clone, fork or clone3 (%rax 0) gets its slot or profile
 * from mt_after_clone(number, %rdi: clone's flags or clone3's arguments)
 * before it runs any probe.  Every register and the flags are preserved. */
    .globl mt_timer_after_clone
    .hidden mt_timer_after_clone
mt_timer_after_clone:
    pushfq
    test %rax, %rax
    jnz 1f
    push %rax
    push %rdx
    push %rsi
    mov 40(%rsp), %rax                  /* the number: past rsi, rdx, rax, flags, return */
    cmp $MT_SYSCALL_NR_IN_SLOT, %rax
    jne 2f
    mov %gs:MT_SLOT_SYSCALL_NR, %rax
    cmp $MT_NR_CLONE, %rax
    je 2f
    cmp $MT_NR_FORK, %rax
    je 2f
    cmp $MT_NR_CLONE3, %rax
    jne 3f                              /* another system call returning 0 */
2:  mov %rdi, %rsi
    CALL_C mt_after_clone
3:  pop %rsi
    pop %rdx
    pop %rax
1:  popfq
    ret $8

    .section .note.GNU-stack, "", @progbits
