/* Prints the merged pass-2 timer records of an instrumented copy, one
 * tab-separated line per timed object, for the timer tests (tests/timers.sh):
 *
 *   index proc_entry loop_header entries recursive inclusive exclusive
 *   outside nonlocal_exits open cycles
 *
 * (addresses in hex, loop_header 0 for a procedure, times in TSC ticks but
 * `cycles`, the inclusive time at the threads' own clock);
 * with `bias`, only the timer bias the processes measured at start-up.
 *
 * usage: dump_timers INSTRUMENTED PROFILE_DIR [bias] */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "profile/profile.h"
#include "rewriter/rewriter.h"

int main(int argc, char **argv)
{
    if (argc != 3 && (argc != 4 || strcmp(argv[3], "bias") != 0)) {
        fprintf(stderr, "usage: dump_timers INSTRUMENTED PROFILE_DIR [bias]\n");
        return 2;
    }
    mt_error err;
    mt_counter_map map;
    if (mt_counter_map_read(argv[1], &map, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    profile_merge m;
    int rc = 1;
    if (mt_profile_merge(argv[2], &map, &m, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
    } else if (argc == 4) {
        printf("%.1f\n", m.timer_bias);
        rc = 0;
    } else {
        for (uint32_t i = 0; i < m.ntimers; i++) {
            const mt_timer_totals *t = &m.timers[i];
            printf("%u\t%" PRIx64 "\t%" PRIx64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
                   "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n",
                   i, map.timer_procs[i], map.timer_loops[i], t->entries, t->recursive,
                   t->inclusive, t->exclusive, t->outside, t->nonlocal_exits, t->open, t->cycles);
        }
        rc = 0;
    }
    mt_profile_merge_free(&m);
    mt_counter_map_free(&map);
    return rc;
}
