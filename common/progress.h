/* common/progress.h — how far long work got, for a progress line.
 *
 * Analysing and rewriting a large binary takes seconds (node: 20 s); the
 * stages that take them report their progress here, from any thread.
 * Library code never prints: the command line installs a hook (ui/term.c
 * draws a line on stderr when it is a terminal) and nothing happens
 * without one.  The hook is called at most every 100 ms, from whichever
 * thread's report crosses that interval, never from two threads at once. */
#ifndef MTOOL_PROGRESS_H
#define MTOOL_PROGRESS_H

#include <stdint.h>

/* `stage` names the work ("building control-flow graphs"), `done` of
 * `total` units (procedures) are finished; total 0: not known. */
typedef void (*mt_progress_hook)(const char *stage, uint64_t done, uint64_t total);

void mt_progress_set_hook(mt_progress_hook hook);
/* A new stage of `total` units, none done yet.  Called by one thread,
 * before the workers of the stage start. */
void mt_progress_stage(const char *stage, uint64_t total);
/* `n` more units of the current stage are done (any thread). */
void mt_progress_add(uint64_t n);
/* The long work is over (one thread, the workers joined): the hook is
 * called with stage NULL, at once, so that the line goes away before
 * anything else is printed or a program runs on the terminal. */
void mt_progress_end(void);

#endif
