/* tests/unit/test_call_site_bases.c — the merge of call-site records makes
 * each site's run-time targets link-time addresses of its own object
 * (timer/timer.h, mt_profile_library): a profile written by hand with the
 * executable's sites and two libraries' ranges, one of them activated
 * twice (closed and opened again elsewhere: its last base counts), and a
 * version-6 file, whose header has no library table; and each target
 * placed in the object it lies in: the executable's calls into library A
 * and into library C, which has no call sites of its own (its entry named
 * by its counter_base), at their link-time addresses there. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile/profile.h"
#include "tests/unit/unit.h"

enum { NCOUNTERS = 3, NSITES = 6, LIB_C_COUNTERS = 2 };
static const uint64_t LOAD_BIAS = 0x555500000000, LIB_A = 0x7f0000000000,
                      LIB_B_FIRST = 0x7f1000000000, LIB_B = 0x7f2000000000, LIB_C = 0x7f3000000000;

/* One slot: site i called its target 0x1000 * (i + 1) at run time plus
 * its object's base (sites 4 and 5: library A's and C's), 7 times. */
static void write_profile(const char *path, uint32_t version)
{
    uint64_t slot = MT_SLOT_SIZE(NCOUNTERS, 0, NSITES, 0);
    uint8_t *file = calloc(1, MT_PROFILE_HEADER_SIZE + slot);
    mt_profile_header *h = (mt_profile_header *)file;
    *h = (mt_profile_header){.magic = MT_PROFILE_MAGIC, .version = version,
                             .header_size = MT_PROFILE_HEADER_SIZE, .ncounters = NCOUNTERS,
                             .nslots = 1, .capacity = 1, .nthreads = 1, .ncall_sites = NSITES,
                             .load_bias = LOAD_BIAS};
    /* sites 0-1: library A; 2: library B, opened twice; 3-5: the executable's */
    h->libraries[0] = (mt_profile_library){.first = 0, .end = 2, .base = LIB_A};
    h->libraries[1] = (mt_profile_library){.first = 2, .end = 3, .base = LIB_B_FIRST};
    h->libraries[2] = (mt_profile_library){.first = LIB_C_COUNTERS, .end = LIB_C_COUNTERS,
                                           .base = LIB_C};
    h->libraries[3] = (mt_profile_library){.first = 2, .end = 3, .base = LIB_B};
    h->nlibraries = 4;
    const uint64_t base[NSITES] = {LIB_A, LIB_A, LIB_B, LOAD_BIAS, LIB_A, LIB_C};
    mt_call_site_record *sites =
        (mt_call_site_record *)(file + MT_PROFILE_HEADER_SIZE +
                                MT_SLOT_CALL_SITES_OFFSET(NCOUNTERS, 0));
    for (int i = 0; i < NSITES; i++)
        sites[i].targets[0] = (mt_call_target){.target = base[i] + 0x1000 * (i + 1), .calls = 7};
    FILE *fp = fopen(path, "wb");
    fwrite(file, 1, MT_PROFILE_HEADER_SIZE + slot, fp);
    fclose(fp);
    free(file);
}

/* Site i's one target (0: not one target of 7 calls), and its object. */
static void merge_one(uint32_t version, uint64_t *targets, mt_merged_call_target *placed)
{
    char dir[] = "/tmp/mtool-sites.XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "temporary directory");
    char *path = mt_xasprintf("%s/p.1.0000000000000000.mtp", dir);
    write_profile(path, version);
    uint64_t zero_sites[NSITES] = {0x10, 0x20, 0x30, 0x40, 0x50, 0x60};
    mt_counter_map map = {.ncounters = NCOUNTERS, .ncall_sites = NSITES, .call_sites = zero_sites};
    profile_merge m;
    mt_error err;
    int rc = mt_profile_merge(dir, &map, &m, &err);
    CHECK(rc == 0 && m.nprocesses == 1, "version %u: the profile merges (%s)", version,
          rc == 0 ? "ok" : err.msg);
    for (int i = 0; rc == 0 && i < NSITES; i++) {
        bool one = m.call_sites[i].ntargets == 1 && m.call_sites[i].targets[0].calls == 7;
        targets[i] = one ? m.call_sites[i].targets[0].target : 0;
        if (one)
            placed[i] = m.call_sites[i].targets[0];
    }
    if (rc == 0)
        mt_profile_merge_free(&m);
    unlink(path);
    rmdir(dir);
    free(path);
}

int main(void)
{
    uint64_t t[NSITES] = {0};
    mt_merged_call_target at[NSITES] = {{0}};
    merge_one(MT_PROFILE_VERSION, t, at);
    CHECK(t[0] == 0x1000 && t[1] == 0x2000,
          "a library's sites: run-time targets minus its load base (0x%llx, 0x%llx)",
          (unsigned long long)t[0], (unsigned long long)t[1]);
    CHECK(t[2] == 0x3000, "a library activated twice: its last base (0x%llx)",
          (unsigned long long)t[2]);
    CHECK(t[3] == 0x4000, "a site in no library's range: the executable's load bias (0x%llx)",
          (unsigned long long)t[3]);
    CHECK(at[0].in_library && at[0].first == 0 && at[0].end == 2 && at[2].first == 2 &&
              !at[3].in_library,
          "each site's own targets placed in its own object");
    CHECK(t[4] == 0x5000 && at[4].in_library && at[4].first == 0 && at[4].end == 2,
          "the executable's call into library A: A's entry, at 0x5000 there (0x%llx)",
          (unsigned long long)t[4]);
    CHECK(t[5] == 0x6000 && at[5].in_library && at[5].first == LIB_C_COUNTERS &&
              at[5].end == LIB_C_COUNTERS,
          "into library C, which records no calls: its entry named by its counter_base, at 0x6000 (0x%llx)",
          (unsigned long long)t[5]);
    uint64_t old[NSITES] = {0};
    mt_merged_call_target old_at[NSITES] = {{0}};
    merge_one(6, old, old_at);
    CHECK(old[0] == LIB_A + 0x1000 - LOAD_BIAS && old[3] == 0x4000,
          "a version-6 header has no library table: every site the executable's");
    return unit_finish();
}
