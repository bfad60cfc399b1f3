/* rewriter/internal.h — interfaces between the rewriter's stages.
 * Not for use outside rewriter/: other modules include rewriter.h.
 *
 *   input.c      lookups by name in the original file, read through its
 *                validated view (common/elf_file.h, `in`)
 *   buf.c        growable byte buffers
 *   liveness.c   flags and general registers live at each block
 *   relocate.c   copies procedures into new code with probes, retargets
 *                branches, rip-relative operands and jump tables
 *   timers.c     pass 2: timer events on the entry and exit edges of
 *                m-objects, trampolines, outside-call brackets
 *   unwind.c     .eh_frame FDEs and LSDAs for relocated code, new .eh_frame_hdr
 *   images.c     pages of original code with the entry jumps written, for
 *                the runtime to map instead of writing the jumps
 *   rewrite.c    the driver (rewriter.h)
 */
#ifndef MTOOL_REWRITER_INTERNAL_H
#define MTOOL_REWRITER_INTERNAL_H

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/elf_file.h"
#include "../common/util.h"

/* ---- buf.c ---- */
typedef struct {
    uint8_t *data;
    size_t len, cap;
} rw_buf;

void rw_buf_put(rw_buf *b, const void *p, size_t n);
void rw_buf_u8(rw_buf *b, uint8_t v);
void rw_buf_u32(rw_buf *b, uint32_t v);
void rw_buf_u64(rw_buf *b, uint64_t v);
void rw_buf_uleb(rw_buf *b, uint64_t v);
void rw_buf_sleb(rw_buf *b, int64_t v);
void rw_buf_align(rw_buf *b, size_t align, uint8_t fill); /* pad len up to a multiple */
void rw_buf_patch_u32(rw_buf *b, size_t at, uint32_t v);
void rw_buf_free(rw_buf *b);

/* ---- input.c: lookups by name in the original file ---- */
/* Address of the defined function symbol `name` (any alias), 0 if none. */
uint64_t rw_input_function(const mt_elf_file *in, const char *name);
/* The GOT slot (R_X86_64_GLOB_DAT) of imported function `name`, 0 if none. */
uint64_t rw_input_got_slot(const mt_elf_file *in, const char *name);

/* ---- what relocate.c moved, for unwind.c ---- */
typedef struct {
    uint64_t old_start, old_end; /* original code range of one procedure part */
    uint64_t new_start, new_end; /* its relocated copy */
    /* Every original instruction start in [old_start, old_end), ascending,
     * and where its code begins in the copy (for a block start: its probe,
     * so that the probe runs with the unwind state of the instruction). */
    uint64_t *old_addrs, *new_addrs;
    uint32_t naddrs;
    /* Pass-2 landing-pad trampolines: an exception thrown from the call at
     * lp_call[i] and caught at lp_pad[i] lands at lp_new[i] (timer stops,
     * then a jump to the pad's copy). */
    uint64_t *lp_call, *lp_pad, *lp_new;
    uint32_t nlp;
} rw_moved;

/* New address of original instruction address `old` inside `m`, or 0 when
 * `old` is not an instruction start of `m`. */
uint64_t rw_moved_lookup(const rw_moved *m, uint64_t old);
/* The landing-pad trampoline for pad `pad` of a call site covering
 * [start, start + len) of `m`, or 0. */
uint64_t rw_moved_landing_pad(const rw_moved *m, uint64_t start, uint64_t len, uint64_t pad);

/* ---- relocate.c: procedures copied with probes ---- */
#include "../analyzer/analyzer.h"
#include "../timer/timer.h"
#include "rewriter.h"

/* ---- liveness.c ---- */
#include "../common/x86_decode.h"

#define RW_LIVE_FLAGS 0x1fu              /* OF SF ZF AF PF, as bits 0..4: what `incq` changes */
#define RW_LIVE_CF 0x20u                 /* CF, which `cmp` changes too */
#define RW_LIVE_GPR(i) (1u << (8 + (i))) /* general register i, in encoding order */
#define RW_LIVE_GPRS (0xffffu << 8)

typedef struct {
    unsigned use, def; /* read before written in the block; written */
    unsigned live_in;
} rw_live;

typedef struct {
    unsigned written;   /* general registers any instruction writes */
    bool calls_outside; /* calls an import or through a pointer */
    unsigned kept_by_callers; /* registers some direct caller keeps live across its
                                 calls (all, unless rw_live_across_calls said less) */
} rw_live_proc;

/* Whether an instruction's bytes may be a TLS descriptor's call, `call
 * *x@TLSCALL(%rax)` (ff 10, -mtls-dialect=gnu2), whose callee keeps every
 * register but %rax: compilers keep values in caller-saved registers
 * across it. */
bool rw_maybe_tls_descriptor_call(const uint8_t *bytes, size_t len);
/* Accumulates one instruction (in block order) into its block and
 * procedure.  Returns the general registers (RW_LIVE_GPR bits) whose value
 * it may change, wholly or in part, as a value known before it must assume:
 * a call every one (whatever liveness assumes of a local callee, it may
 * return a value), a system call the kernel's result and clobbers. */
unsigned rw_live_insn(csh h, const mt_program *prog, const cs_insn *insn, rw_live *bl,
                      rw_live_proc *lp);
/* Solves live_in for every block once all instructions were accumulated. */
void rw_live_solve(const mt_procedure *p, rw_live *bl, const rw_live_proc *lp);
typedef struct rw_insn rw_insn;
/* The status flags and general registers live just before each of the n
 * instructions of block b from `first` on, its last the block's (bl
 * solved): live[k] for first[k]; false when one cannot be decoded. */
bool rw_live_before(csh h, const mt_program *prog, const mt_procedure *p, const rw_live *bl,
                    uint32_t b, const rw_insn *first, uint32_t n, const rw_live_proc *lp,
                    unsigned *live);
/* The general register (encoding order) of capstone register `reg`, or -1;
 * *whole: writing it defines all 64 bits (32- and 64-bit writes do). */
int rw_gpr_of(unsigned reg, bool *whole);
/* A general register outside `busy` that inserted code may use, or -1. */
int rw_live_free_gpr(unsigned busy);
/* General registers that some direct caller of procedure `pi` keeps live
 * across its call, solving each caller's liveness (whose returns depend on
 * its own callers, and so on, memoized); all of them when a caller is
 * unresolved or undecodable, or the chain is too long. */
#define RW_LIVE_MAX_CALLER_DEPTH 6
typedef struct rw_decoded rw_decoded;
typedef struct {
    csh cs;
    const mt_program *prog;
    const mt_elf_file *in;
    const rw_decoded *decoded; /* by procedure: decoded ahead (rw_code_predecode), or NULL */
    unsigned *kept;     /* by procedure, once known */
    uint8_t *state;
    rw_live **solved;   /* by procedure: its blocks' liveness, once solved */
    bool *trusted;      /* ... and whether it can be trusted (resolved, decoded) */
    uint32_t *first_caller, *callers; /* callers[first_caller[p] ..[p+1]] call p */
} rw_live_callers;
void rw_live_callers_init(rw_live_callers *lc, csh h, const mt_program *prog,
                          const mt_elf_file *in);
void rw_live_callers_free(rw_live_callers *lc);
unsigned rw_live_across_calls(rw_live_callers *lc, uint32_t pi, unsigned depth);

/* How one original instruction is re-emitted. */
typedef enum {
    RW_COPY,        /* bytes verbatim */
    RW_COPY_RIPREL, /* bytes verbatim, rip-relative disp32 recomputed */
    RW_JMP,         /* direct jmp -> e9 rel32 */
    RW_JCC,         /* conditional jump -> 0f 8x rel32 */
    RW_JCX,         /* jrcxz / loop* rel8 -> op 02; eb 05; e9 rel32 */
    RW_CALL,        /* direct call -> e8 rel32 */
    RW_COPY_ABS32,  /* bytes verbatim, an absolute 32-bit address (a jump table) replaced */
} rw_insn_kind;

struct rw_insn {
    uint64_t old, target;      /* original address; branch or rip-relative target */
    uint64_t new_addr;         /* where its code starts in the copy (probe included) */
    const uint8_t *bytes;      /* original bytes (in the input file) */
    uint8_t len, kind, cc;     /* cc: condition code of RW_JCC */
    uint8_t disp_offset;       /* RIPREL/ABS32: offset of the 32-bit field in the bytes */
    uint32_t table;            /* index in rw_code.tables of the table it addresses, or MT_NONE */
    uint8_t probe;             /* RW_PROBE_* emitted before it */
    bool fallthrough_jmp;      /* a jmp to old+len follows (next block is elsewhere) */
    bool near;                 /* a rel8 branch kept rel8: its target is in this copy and
                                  within reach (rw_code_assign), as in the original */
    bool loop_header;          /* starts a loop's header block (not the entry's) */
    uint8_t pad;               /* nops before its code: a loop header keeps its original
                                  offset modulo 64 (rw_code_assign) */
    bool loop_exit;            /* the back edge of a RW_PROBE_LOOP_REGISTER block: the
                                  register is stored to the counter after it */
    uint8_t loop_reg;          /* the register of a RW_PROBE_LOOP_REGISTER block */
    uint32_t counter;          /* counter index when probe != RW_PROBE_NONE or loop_exit */
    uint32_t call_site;        /* a call (or tail jump) through a pointer whose target is
                                  recorded before it: 1 + its site index, 0 = none */
    uint8_t modrm_offset;      /* ... the offset of its ModRM byte (ff /2 or ff /4) */
    /* Pass-2 code (timers.c): indices in rw_code.snips, 0 = none. */
    uint32_t pre;              /* the procedure's entry events, before the entry's probe */
    uint32_t before;           /* after the probe, before the instruction (ret, jmp, call) */
    uint32_t after;            /* after the instruction (fall-through edges, call returns) */
    uint32_t tramp;            /* its taken edge goes through rw_code.tramps[tramp - 1] */
    uint16_t target_skip;      /* a branch to the own entry skips the entry's `pre` code */
    uint32_t table_check;      /* reads a jump-table entry: 1 + index in rw_code.tables of
                                  the table whose index is checked before it, 0 = none */
    uint32_t fallback_counter; /* ... the counter of the times the check sent it to the
                                  original code */
    /* Tracing copies (trace.c): its references, c->trace_refs[trace_first ..+ ntrace),
       recorded by trace_len bytes of code right before it. */
    uint32_t trace_first;
    uint8_t ntrace;
    uint16_t trace_len;
    uint8_t trace_form;        /* RW_TRACE_*: how its records are made (trace.c) */
    uint8_t trace_addr, trace_index; /* ... with which registers (encoding numbers) */
    /* A `syscall` that creates a task (SYS_clone, SYS_fork or SYS_clone3, its
       number set in its own block): the number, and the child's hook after it
       (relocate.c, "Tasks a copy creates"); 0 = none. */
    uint16_t task_syscall;
    /* The last instruction of a block that falls out of its procedure into
       such a `syscall` (glibc's clone3: its unwind entry, a stripped
       library's only procedure bound, ends right before it): the number; the
       copy runs the syscall itself, with the hook, and goes on after it. */
    uint16_t task_syscall_next;
};

/* How an instruction's records are made (trace.c): with %rax and %rcx
 * saved in a frame past the red zone; with %rcx and another register, both
 * dead there (jrcxz); with two other registers and the flags dead there
 * (add, jnz). */
enum { RW_TRACE_FRAMED, RW_TRACE_BARE, RW_TRACE_BARE_FLAGS };

enum {
    RW_PROBE_NONE,
    RW_PROBE_PLAIN,         /* incq %gs:counter */
    RW_PROBE_SAVE_FLAGS,    /* the same, flags saved with lahf/seto past the red zone */
    RW_PROBE_LOOP_REGISTER, /* a block looping on itself counts in a dead register */
    RW_PROBE_MARK,          /* timers only: no code, the block start is only mapped */
};

/* A jump table cloned with entries that lead to the copies. */
typedef struct {
    mt_jump_table layout;      /* the original */
    uint64_t new_addr;
} rw_table;

typedef struct {
    uint32_t proc;             /* index in prog->procs */
    rw_insn *insns;            /* every instruction of every block, by address */
    uint32_t ninsns;
    uint64_t patch_at;         /* where the entry jmp goes in the original code, 0 = no room */
    uint64_t entry_slot;       /* 0, or: a block under the entry jmp is a foreign entry, so the
                                  entry gets a 2-byte jmp to this slot of 5, which jumps to the
                                  copy, and every foreign entry a jmp of its own (relocate.c) */
    uint64_t new_start, new_end;
    uint32_t first_tramp, ntramps; /* its trampolines in rw_code.tramps, laid out after new_end */
} rw_proc;

/* A procedure decoded ahead of rw_code_add (rw_code_predecode), on
 * another thread: its instructions classified (table indices relative to
 * its own tables), each block's liveness accumulated, not solved. */
struct rw_decoded {
    rw_insn *insns;
    uint32_t ninsns;
    uint32_t *block_first;     /* index in insns of each block's first instruction */
    rw_live *bl;               /* use and def of each block */
    rw_live_proc lp;           /* written, calls_outside */
    char *why;                 /* why it cannot be relocated, NULL when it can */
    bool undecodable;          /* ... and the reason is in its instructions */
    bool done;                 /* decoded; else rw_code_add decodes it itself */
};

/* ---- trace.c: tracing copies, a record per memory reference ---- */
/* One reference of an instruction: its address is `lea` of base + index *
 * scale + disp (encoding numbers, 0xff none; base 0xfe: disp is the
 * link-time address of a rip-relative operand), plus the fs base when fs. */
/* A gather's or scatter's vector operands (kind MT_TRACE_GATHER or
 * MT_TRACE_SCATTER; base, scale and disp as for any reference, index none). */
typedef struct {
    uint8_t index_reg;         /* the vector register of the indices, 0..31 */
    uint8_t index_bytes;       /* bytes of it stored: 16, 32 or 64 */
    uint8_t index_width;       /* bytes per index: 4 or 8 */
    uint8_t elements;
    uint8_t mask_reg;          /* k1..k7, or the vector register of an AVX2 mask */
    uint8_t mask_form;         /* RW_MASK_K, RW_MASK_PS, RW_MASK_PD */
    uint8_t mask_bytes;        /* an AVX2 mask's bytes: 16 or 32 */
} rw_vsib;
enum { RW_MASK_K, RW_MASK_PS, RW_MASK_PD };

typedef struct {
    uint8_t kind;              /* MT_TRACE_* */
    uint8_t base, index, scale;
    bool fs;
    uint8_t flags;             /* MT_TRACE_F_* */
    uint16_t size;             /* bytes (REP_COUNT: which of source, destination went before) */
    uint32_t code;             /* code object */
    int64_t disp;
    rw_vsib vsib;              /* gathers and scatters */
} rw_trace_ref;

typedef struct rw_code rw_code;
/* Plans the references of the instructions of procedure `proc` (its
 * blocks start at insns[block_first[b]]); each carries its block's code
 * object (mt_code_object_of_block: the innermost loop, or the procedure). */
void rw_trace_plan(rw_code *c, rw_insn *insns, uint32_t ninsns, uint32_t proc,
                   const uint32_t *block_first, const rw_live *bl, const rw_live_proc *lp);
/* Bytes of code before `ri` that record its references. */
size_t rw_trace_len(const rw_insn *ri);
/* Writes that code, `vaddr` being the link-time address of out's start. */
bool rw_trace_emit(const rw_code *c, const rw_insn *ri, uint64_t vaddr, rw_buf *out,
                   mt_error *err);

/* ---- timers.c: pass-2 timer events inserted on CFG edges ---- */
enum {
    RW_EV_START_PROC,
    RW_EV_START_LOOP,
    RW_EV_STOP,
    RW_EV_OUTSIDE_ENTER,       /* before a call to uninstrumented code */
    RW_EV_OUTSIDE_EXIT,        /* after it */
};

typedef struct {
    uint8_t kind;              /* RW_EV_* */
    bool save_flags;           /* the flags are live where the event runs */
    bool no_red_zone;          /* at the entry or where the procedure is left (return,
                                  tail call): no red zone to step over */
    uint32_t obj;              /* index of the timed object (record) */
} rw_event;

typedef struct {
    uint32_t first, n;         /* rw_code.events[first .. first + n) */
    uint32_t len;              /* bytes of code */
} rw_snip;

/* Code on a taken branch edge or a jump-table entry: the branch (or the
 * cloned table's entry) leads here; the events run, then `jmp` to the copy
 * of `dst`. */
typedef struct {
    uint32_t snip;
    uint64_t dst;              /* original address it leads to */
    uint16_t dst_skip;         /* bytes skipped at the copy of dst (its entry code) */
    uint64_t table;            /* original address of the jump table, 0 for a branch */
    uint64_t call;             /* a landing pad's: the call whose exception lands here, else 0 */
    uint64_t new_addr;
} rw_tramp;

struct rw_code {
    const mt_program *prog;
    const mt_elf_file *in;
    rw_proc *procs;
    size_t nprocs, cap_procs;
    /* Block starts of all relocated procedures: old -> new, sorted by old. */
    uint64_t *map_old, *map_new;
    size_t nmap;
    rw_table *tables;
    size_t ntables, cap_tables;
    uint32_t ncounters;        /* counter_base included */
    uint64_t *counter_addrs;   /* first instruction of the block each counter counts (0 for
                                  the counter_base counters of other objects before ours) */
    uint32_t counter_base;     /* this object's first counter in the slot ("Shared libraries") */
    uint64_t *equations;       /* flow equations of the derived blocks (counters.c), in the
                                  counter map's form (rewriter.h, mt_counter_map) */
    size_t nequation_words, cap_equations;
    uint32_t nderived;         /* blocks whose count is derived: no probe */
    bool derive_counts;        /* derive what flow determines (counters.c) */
    bool library;              /* a shared library's copy: its call sites are recorded
                                  only where slot_ncounters places them */
    size_t cap_counters;
    uint32_t ncall_sites;      /* calls through pointers whose targets are recorded,
                                  call_site_base included */
    uint32_t call_site_base;   /* this object's first call-site record in the slot */
    uint32_t ntable_checks;    /* jump-table reads whose index is checked (a counter each) */
    uint64_t *call_site_addrs; /* ... the address of each one's instruction (0 for the
                                  call_site_base records of other objects before ours) */
    size_t cap_call_sites;
    uint64_t wrap_real[MT_RT_WRAP_COUNT]; /* original callee of each runtime wrapper */
    uint64_t wrap_new[MT_RT_WRAP_COUNT];  /* wrapper address in the output, 0 = none */
    uint64_t wrap_got[MT_RT_WRAP_COUNT];  /* GOT slot of a callee called through it (-fno-plt) */
    uint32_t nprobes_saving_flags, nwrapped_calls, nloop_registers, ntask_hooks;
    bool loop_registers;       /* count self-loops in a dead register (relocate.c) */
    bool timers_only;          /* pass 2: no counter code, only timers (RW_PROBE_MARK) */
    rw_live_callers live_callers; /* what callers keep across calls (liveness.c) */
    rw_decoded *decoded;       /* by procedure, from rw_code_predecode, or NULL */
    void *cs;                  /* capstone handle (csh) */
    /* Pass 2 (timers.c). */
    const struct mt_timed_object *timed; /* the m-objects to time, by record index */
    uint32_t ntimed;
    uint32_t timer_base;       /* record of timed[0] in the slot (mt_rt_params.timer_base) */
    uint32_t slot_ncounters;   /* counters of the slot its records follow: a library's
                                  executable's, else ncounters once all are placed */
    bool *outside_calls;       /* per procedure: bracket its PLT calls (reachable from a timed object
                                  or a known export); NULL: none */
    rw_event *events;
    size_t nevents, cap_events;
    rw_snip *snips;            /* snips[0] is the empty one */
    size_t nsnips, cap_snips;
    rw_tramp *tramps;
    size_t ntramps, cap_tramps;
    uint64_t timer_entry[MT_RT_TIMER_COUNT]; /* runtime entry points in the output */
    const uint8_t *blob;       /* the runtime blob (mt_rt_header first): the events' code */
    uint64_t event_routine[MT_RT_EVENT_COUNT]; /* their rare paths' routines in the output */
    uint32_t nevents_placed;   /* timer start/stop events inserted */
    uint32_t nevents_saving_flags; /* ... of which preserve live flags */
    /* Tracing (trace.c). */
    bool trace;                /* record every memory reference */
    const mt_timed_object *traced; /* ... in the blocks of these objects only */
    uint32_t ntraced;          /* (0: in every block) */
    rw_trace_ref *trace_refs;
    size_t ntrace_refs, cap_trace_refs;
    uint32_t ntrace_sites;     /* instructions whose references are recorded */
    uint32_t ntrace_bare;      /* ... without saving %rax and %rcx (dead there) */
    uint32_t ntrace_untraced;  /* memory operands left out (rep cmps/scas, ...) */
    uint32_t code_base;        /* added to the code objects of its records (a library's) */
    uint32_t slot_ncall_sites; /* a library's: the slot's call-site records (the
                                  executable's), before the trace area */
};

int rw_code_init(rw_code *c, const mt_program *prog, const mt_elf_file *in, mt_error *err);
void rw_code_free(rw_code *c);
/* Decodes procedures procs[0..nprocs) on several threads, ahead of
 * rw_code_add (optional: it decodes what was not). */
void rw_code_predecode(rw_code *c, const uint32_t *procs, size_t nprocs);
/* Decodes procedure `p` and plans its copy; false with *why (malloc'd) when
 * it cannot be relocated. */
bool rw_code_add(rw_code *c, uint32_t p, char **why);
/* Lays the copies out from `vaddr` (entries and loop headers keep their
 * offset modulo 64, so loops keep their alignment); returns the end address. */
uint64_t rw_code_assign(rw_code *c, uint64_t vaddr);
/* Writes the copies (byte 0 of `out` is `vaddr`) and appends to `patches`
 * the entry jumps the runtime writes at start-up (mt_rt_patch records,
 * ascending).  -1 with err on a displacement that does not fit. */
int rw_code_emit(rw_code *c, uint64_t vaddr, rw_buf *out, rw_buf *patches, mt_error *err);
/* The rw_moved ranges of the copies, for unwind.c (caller frees with rw_moved_free). */
rw_moved *rw_code_moved(const rw_code *c, size_t *n);
void rw_moved_free(rw_moved *m, size_t n);

/* timers.c: the runtime blob whose event code the copies take, the objects
 * to time (record order) and the procedures whose PLT calls are bracketed. */
void rw_timers_init(rw_code *c, const uint8_t *blob, const struct mt_timed_object *timed,
                    uint32_t ntimed);
/* timers.c: plans the pass-2 events of a procedure being added (its
 * liveness solved, block_first[b] = index of block b's first instruction);
 * false with *why when an object of it cannot be timed. */
bool rw_timers_plan(rw_code *c, uint32_t proc_index, rw_proc *rp, const rw_live *bl,
                    const uint32_t *block_first, char **why);
/* Bytes of pass-2 code around one instruction. */
size_t rw_timers_insn_len(const rw_code *c, const rw_insn *ri);
/* Lays out the trampolines of procedure copy `rp` from `at`; returns the end. */
uint64_t rw_timers_assign(rw_code *c, rw_proc *rp, uint64_t at);
/* Writes snip `s` (0: nothing) at the end of `out`, whose byte 0 is `vaddr`. */
bool rw_timers_emit_snip(const rw_code *c, uint32_t s, uint64_t vaddr, rw_buf *out, mt_error *err);
/* Writes the trampolines of `rp`; `target` gives the copy of an original address. */
bool rw_timers_emit_tramps(const rw_code *c, const rw_proc *rp, uint64_t vaddr, rw_buf *out,
                           uint64_t (*target)(const rw_code *, uint64_t), mt_error *err);
/* Adds the landing-pad trampolines of `rp` to its moved range `m`. */
void rw_timers_moved(const rw_code *c, const rw_proc *rp, rw_moved *m);
/* Where a cloned table's entry for original target `old` leads, 0 = no trampoline. */
uint64_t rw_timers_table_tramp(const rw_code *c, uint64_t table, uint64_t old);
void rw_timers_free(rw_code *c);

/* ---- unwind.c ---- */
typedef struct {
    uint64_t hdr_vaddr, hdr_size; /* the new .eh_frame_hdr, for PT_GNU_EH_FRAME */
    uint32_t nfdes_written;       /* FDEs written for moved ranges */
    uint32_t nlsdas_written;      /* LSDAs rewritten for moved ranges */
} rw_unwind_out;

/* Appends to `out`, whose byte 0 is linked at `out_vaddr`: for each moved
 * range covered by an FDE of the original .eh_frame, a copy of that FDE for
 * the new range (CFA program locations remapped through the moved range,
 * pointing back at the original CIE), a rewritten LSDA when the FDE has one
 * (call-site ranges and landing pads moved, action and type tables carried
 * over with pc-relative entries re-encoded), and finally a new
 * .eh_frame_hdr whose sorted search table covers the original FDEs and the
 * new ones.  Ranges without an FDE get none.  The original's FDEs come from
 * its .eh_frame_hdr table, else from walking .eh_frame (static binaries
 * linked without a header get one anyway); with neither, nothing is written
 * and res->hdr_size is 0.
 * Returns 0, or -1 with `err` set ("FILE: reason"). */
int rw_unwind_build(const mt_elf_file *in, const rw_moved *moved, size_t nmoved, rw_buf *out,
                    uint64_t out_vaddr, rw_unwind_out *res, mt_error *err);

/* ---- images.c ---- */
/* PROT_READ|PROT_WRITE|PROT_EXEC (1|2|4) of a segment's p_flags. */
uint32_t rw_segment_prot(const Elf64_Phdr *ph);
/* Plans the images of the pages that the entry jumps `patches` (sorted by
 * address) write: one per segment, from its first patched page to its
 * last, file offsets still 0.  Returns how many, 0 when some patch cannot
 * be served from the file (a segment longer in memory than in the file, or
 * code the loader relocates: DT_TEXTREL); the runtime then writes the
 * jumps itself. */
size_t rw_images_plan(const mt_elf_file *in, const mt_rt_patch *patches, size_t npatches,
                      rw_buf *images);
/* Appends each image's pages to `file`, page-aligned: the original bytes
 * with the jumps written; sets its file offset. */
void rw_images_emit(const mt_elf_file *in, const mt_rt_patch *patches, size_t npatches,
                    mt_rt_image *images, size_t nimages, rw_buf *file);

/* Offset of the opcode of `ri` after its legacy prefixes and REX
 * (relocate.c); ri->len when nothing follows them. */
uint8_t rw_opcode_offset(const rw_insn *ri);

/* ---- counters.c: which blocks need a probe ---------------------------- */

/* A procedure's flow equations by block index, each as: hub, n, n members. */
typedef struct {
    uint32_t *words;
    size_t n, cap;
} rw_flow_plan;

/* Chooses the blocks of procedure p whose counts follow from others' (sets
 * derived[b]; derived has p->nblocks entries, zeroed) and their equations. */
void rw_flow_plan_proc(const mt_procedure *p, const rw_insn *insns, const uint32_t *block_first,
                       uint32_t ninsns, bool *derived, rw_flow_plan *plan);
/* Appends plan's equations to c->equations, in counter indices (the blocks'
 * counters assigned). */
void rw_flow_plan_commit(rw_code *c, const rw_flow_plan *plan, const rw_insn *insns,
                         const uint32_t *block_first);

#endif
