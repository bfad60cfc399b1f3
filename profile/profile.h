/* profile/profile.h — reading the profile files instrumented programs write
 * (format in timer/timer.h) and merging them.
 *
 * Every process of an instrumented program writes one file; every thread
 * has a slot of counters in it.  Merging sums the counters of every slot of
 * every file written by the same binary (same content hash). */
#ifndef MTOOL_PROFILE_H
#define MTOOL_PROFILE_H

#include <stdint.h>

#include "../common/util.h"
#include "../timer/timer.h"

/* One profile file. */
typedef struct {
    mt_profile_header header;  /* as written (magic checked) */
    uint32_t nslots;           /* slots with counts: header.nslots, bounded by the
                                  capacity (a slot past it never got file space) */
    uint32_t nthreads;         /* threads that attached (slots are reused) */
    uint64_t *counts;          /* nslots * ncounters, slot-major */
    int32_t *tids;             /* per slot: its owner (or last owner) */
} mt_profile;

/* Reads one file.  -1 with err ("FILE: reason") when it is not a complete,
 * consistent profile. */
int mt_profile_read(const char *path, mt_profile *out, mt_error *err);
void mt_profile_free(mt_profile *p);

typedef struct {
    uint64_t *counts;          /* ncounters sums over every thread of every process */
    uint32_t ncounters;
    uint32_t nprocesses;       /* files merged */
    uint32_t nforked;          /* ... of which written by fork children */
    uint32_t nthreads;         /* threads of the files merged */
    uint32_t nother;           /* profiles of other binaries or builds, skipped */
    uint32_t nincomplete;      /* files whose process died before writing their header,
                                  skipped (they hold no counts yet) */
} profile_merge;

/* Merges every *.mtp file in `dir` written for the binary with `hash` and
 * `ncounters` counters.  A file that cannot be read, or a directory with no
 * profile of the binary, is an error naming it. */
int mt_profile_merge_dir(const char *dir, const uint8_t hash[32], uint32_t ncounters,
                         profile_merge *out, mt_error *err);
void mt_profile_merge_free(profile_merge *m);

#endif
