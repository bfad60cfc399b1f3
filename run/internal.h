/* run/internal.h — what only run/'s files share. */
#ifndef MTOOL_RUN_INTERNAL_H
#define MTOOL_RUN_INTERNAL_H

#include "run.h"

/* Keeps pass 1 in rundir (rundir.c, the one writer of each file): format
 * first, then counts.tsv, call_targets.tsv, each library's libs/NAME.counts.tsv, argv,
 * and pass1.txt last. */
int mt_rundir_write_pass1(const char *rundir, const mt_program *prog, const mt_counter_map *map,
                          const profile_merge *merge, const mt_pass1_libraries *libs, char **argv,
                          const mt_run_result *base, mt_error *err);

/* pass2.tsv (rundir.c, its one writer): the m-objects pass 2 timed, with
 * their figures, for `mtool sim RUNDIR`; pass 1's writer removes it. */
int mt_rundir_write_pass2(const char *rundir, const mt_pass2_result *r, mt_error *err);

/* machine.txt (rundir.c, its one writer): the machine profile pass 2
 * predicted with, so that `mtool report` predicts each line as pass 2 did
 * without calibrating again. */
int mt_rundir_write_machine(const char *rundir, const mt_machine *m, mt_error *err);

/* One warning line on log naming (escaped) the damaged profiles a merge of
 * `dir` skipped; nothing when there were none (pass1.c). */
void rn_warn_damaged_profiles(FILE *log, const char *dir, const profile_merge *m);

/* Sums counts (of one merge, laid out as `map`) into *t per block of prog
 * (pass1.c); rn_pass1_totals_free frees what it made. */
void rn_accumulate(const mt_program *prog, const mt_counter_map *map, const uint64_t *counts,
                   mt_pass1_totals *t);
void rn_pass1_totals_free(mt_pass1_totals *t);
/* A counted library's counts (the slot's, laid out as its map) derived
 * and summed into *t as rn_accumulate does (libs.c). */
void rn_library_accumulate(const mt_pass1_library *lib, uint64_t *counts, mt_pass1_totals *t);

/* The identity of a set of objects counted or timed together (libs.c):
 * FNV-1a over `words` (contents, timed lists), never 0 (no set). */
uint64_t rn_set_id(const uint64_t *words, uint32_t n);

/* Pass 2 of an MPI job (pass2_ranks.c): one timed run, the launcher
 * running timed_copy in every rank (each rank's timers merged apart in
 * job->ranks); then each rank's figures for the job's timed objects
 * (r->ranks), from every run's jobs[k]. */
int rn_job_run_timed(mt_mpi_job *job, const char *timed_copy, const char *profiles,
                     char *const *env, const mt_counter_map *map, FILE *log, mt_run_result *run,
                     mt_error *err);
/* Every run's ranks' totals for mt_correlate_clock.parts (run k's rank p
 * at [k * nparts + p]; owned), refused when the ranks changed between runs:
 * rn_job_correlate_ranks, below, takes the ranks so checked. */
int rn_job_parts(const mt_pass2_options *o, const mt_mpi_job *jobs, mt_timer_totals ***parts,
                 size_t *nparts, mt_error *err);
int rn_job_correlate_ranks(const mt_pass2_options *o, mt_pass2_result *r,
                           const mt_select_options *so, const mt_mpi_job *jobs,
                           const mt_correlate_clock *clk, mt_error *err);
void rn_pass2_ranks_free(mt_pass2_result *r);

#endif
