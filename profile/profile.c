/* profile/profile.c — reading and merging profile files (format in
 * timer/timer.h).  Files are read with pread, every size bounded by the
 * file's own length, so a truncated or corrupt file is an error, never a
 * crash. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile.h"

static int read_exact(int fd, void *buf, size_t n, uint64_t off)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = pread(fd, (char *)buf + done, n - done, (off_t)(off + done));
        if (r <= 0)
            return -1;
        done += (size_t)r;
    }
    return 0;
}

static const char *check_header(const mt_profile_header *h, uint64_t file_size)
{
    if (h->magic != MT_PROFILE_MAGIC)
        return "not an mtool profile (or its program died before writing the header)";
    if (h->version != MT_PROFILE_VERSION || h->header_size != MT_PROFILE_HEADER_SIZE)
        return "profile format version not supported";
    if (h->nslots == 0)
        return "no thread slot";
    if (MT_SLOT_SIZE(h->ncounters) == 0 ||
        (file_size - MT_PROFILE_HEADER_SIZE) / MT_SLOT_SIZE(h->ncounters) < h->nslots)
        return "truncated: fewer slots than its header says";
    return NULL;
}

int mt_profile_read(const char *path, mt_profile *out, mt_error *err)
{
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        mt_error_set(err, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    const char *why = NULL;
    uint64_t size = (uint64_t)st.st_size;
    if (size < MT_PROFILE_HEADER_SIZE || read_exact(fd, &out->header, sizeof out->header, 0) != 0)
        why = "too short for a profile header";
    else
        why = check_header(&out->header, size);
    const mt_profile_header *h = &out->header;
    if (!why) {
        uint64_t slot = MT_SLOT_SIZE(h->ncounters), n = h->ncounters;
        out->nslots = h->nslots;
        out->counts = mt_xmalloc((size_t)(out->nslots * n + 1) * sizeof *out->counts);
        out->tids = mt_xmalloc((out->nslots + 1) * sizeof *out->tids);
        for (uint32_t s = 0; s < out->nslots && !why; s++) {
            uint64_t at = MT_PROFILE_HEADER_SIZE + s * slot;
            mt_slot_header sh;
            if (read_exact(fd, &sh, sizeof sh, at) != 0 ||
                read_exact(fd, out->counts + s * n, (size_t)n * 8, at + MT_SLOT_COUNTERS_OFFSET) != 0)
                why = "cannot read a slot";
            /* A slot handed out to a thread that died before stamping it
             * holds zeros: harmless, and counted as a thread. */
            else if (sh.magic != MT_SLOT_MAGIC && sh.magic != 0)
                why = "corrupt slot header";
            out->tids[s] = sh.tid;
        }
    }
    close(fd);
    if (why) {
        mt_error_set(err, "%s: %s", path, why);
        mt_profile_free(out);
        return -1;
    }
    return 0;
}

void mt_profile_free(mt_profile *p)
{
    free(p->counts);
    free(p->tids);
    p->counts = NULL;
    p->tids = NULL;
}

static bool is_profile_name(const char *name)
{
    size_t n = strlen(name);
    return n > 4 && strcmp(name + n - 4, ".mtp") == 0;
}

static void add_profile(profile_merge *m, const mt_profile *p)
{
    for (uint32_t s = 0; s < p->nslots; s++) {
        const uint64_t *c = p->counts + (uint64_t)s * m->ncounters;
        for (uint32_t i = 0; i < m->ncounters; i++)
            m->counts[i] += c[i];
    }
    m->nprocesses++;
    m->nforked += (p->header.flags & MT_PROFILE_FORKED) != 0;
    m->nthreads += p->nslots;
}

int mt_profile_merge_dir(const char *dir, const uint8_t hash[32], uint32_t ncounters,
                         profile_merge *out, mt_error *err)
{
    memset(out, 0, sizeof *out);
    out->ncounters = ncounters;
    out->counts = mt_xcalloc((size_t)ncounters + 1, sizeof *out->counts);
    DIR *d = opendir(dir);
    if (!d) {
        mt_error_set(err, "%s: %s", dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (!is_profile_name(e->d_name))
            continue;
        char *path = mt_xasprintf("%s/%s", dir, e->d_name);
        mt_profile p;
        if (mt_profile_read(path, &p, err) != 0) {
            rc = -1;
        } else {
            if (memcmp(p.header.binary_hash, hash, 32) != 0 || p.header.ncounters != ncounters)
                out->nother++;
            else
                add_profile(out, &p);
            mt_profile_free(&p);
        }
        free(path);
    }
    closedir(d);
    return rc;
}

void mt_profile_merge_free(profile_merge *m)
{
    free(m->counts);
    m->counts = NULL;
}
