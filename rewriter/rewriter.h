/* rewriter/rewriter.h — the binary rewriter's public interface.
 *
 * mt_rewrite() writes a drop-in replacement of an analyzed executable in
 * which every procedure whose control flow is fully resolved has been
 * relocated into a new segment with instrumentation inline; the original
 * code stays in place (its entries jump to the copies), so any path that
 * still reaches it stays correct, only uninstrumented.  The runtime
 * (timer/timer.h) is embedded and runs before the program's own entry.
 *
 * Pass 1 instrumentation is one counter per block: `incq %gs:slot+8*i`,
 * counting executions of the block's first instruction. */
#ifndef MTOOL_REWRITER_H
#define MTOOL_REWRITER_H

#include <stdbool.h>
#include <stdint.h>

#include "../analyzer/analyzer.h"

typedef struct {
    const char *profile_dir;   /* absolute default for $MTOOL_OUT */
    const char *program_name;  /* prefix of profile file names */
    bool no_loop_registers;    /* every probe increments memory (for comparisons) */
} mt_rewrite_options;

/* Why a procedure was not instrumented. */
typedef struct {
    uint32_t proc;             /* index in prog->procs */
    char *reason;
} mt_rewrite_skip;

typedef struct {
    uint32_t nprocs_candidates;   /* non-PLT procedures with code */
    uint32_t nprocs_instrumented;
    uint64_t nblocks_candidates;  /* blocks of candidate procedures */
    uint64_t nblocks_instrumented;/* = counters */
    uint32_t nprobes_saving_flags;/* probes that had to preserve live flags */
    uint32_t nloop_registers;     /* blocks looping on themselves counted in a register */
    uint32_t nwrapped_calls;      /* call sites redirected to runtime wrappers */
    uint64_t code_bytes;          /* relocated code, probes included */
    uint32_t nfdes;               /* unwind entries written for relocated code */
    mt_rewrite_skip *skipped;
    uint32_t nskipped;
    uint8_t binary_hash[32];      /* SHA-256 of the input file */
} mt_rewrite_report;

int mt_rewrite_counts(const mt_program *prog, const char *out_path, const mt_rewrite_options *opt,
                      mt_rewrite_report *report, mt_error *err);
void mt_rewrite_report_free(mt_rewrite_report *report);

/* The counter map appended (not loaded) at the end of every instrumented
 * file: counter i counts the block whose first instruction is at addrs[i]
 * (a link-time address of the original binary). */
typedef struct {
    uint8_t binary_hash[32];
    uint32_t ncounters;
    uint64_t *addrs;
} mt_counter_map;

int mt_counter_map_read(const char *instrumented_path, mt_counter_map *map, mt_error *err);
void mt_counter_map_free(mt_counter_map *map);

/* SHA-256 of a file (the identity of binaries in caches and profiles). */
int mt_file_sha256(const char *path, uint8_t out[32], mt_error *err);

#endif
