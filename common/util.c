#define _GNU_SOURCE
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static void out_of_memory(size_t n)
{
    fprintf(stderr, "mtool: out of memory (allocating %zu bytes)\n", n);
    exit(70);
}

void *mt_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        out_of_memory(n);
    return p;
}

void *mt_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        out_of_memory(count * size);
    return p;
}

void *mt_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        out_of_memory(n);
    return q;
}

void *mt_xgrow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 8;
    while (c < need) {
        if (c > SIZE_MAX / 2 / size)
            out_of_memory(SIZE_MAX);
        c *= 2;
    }
    *cap = c;
    return mt_xrealloc(p, c * size);
}

char *mt_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = mt_xmalloc(n);
    memcpy(d, s, n);
    return d;
}

char *mt_xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        out_of_memory(0);
    return s;
}

void mt_error_set(mt_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
}

int mt_outfile_open(mt_outfile *out, const char *path, mt_error *err)
{
    out->path = mt_xstrdup(path);
    out->tmp_path = mt_xasprintf("%s.tmp.%ld", path, (long)getpid());
    out->fp = fopen(out->tmp_path, "w");
    if (!out->fp) {
        mt_error_set(err, "%s: cannot create: %s", path, strerror(errno));
        free(out->path);
        free(out->tmp_path);
        out->path = out->tmp_path = NULL;
        return -1;
    }
    return 0;
}

static void outfile_release(mt_outfile *out)
{
    free(out->path);
    free(out->tmp_path);
    out->path = out->tmp_path = NULL;
    out->fp = NULL;
}

int mt_outfile_commit(mt_outfile *out, mt_error *err)
{
    int failed = ferror(out->fp);
    if (fclose(out->fp) != 0)
        failed = 1;
    if (failed) {
        mt_error_set(err, "%s: write failed: %s", out->path, strerror(errno));
        unlink(out->tmp_path);
        outfile_release(out);
        return -1;
    }
    if (rename(out->tmp_path, out->path) != 0) {
        mt_error_set(err, "%s: cannot rename into place: %s", out->path, strerror(errno));
        unlink(out->tmp_path);
        outfile_release(out);
        return -1;
    }
    outfile_release(out);
    return 0;
}

void mt_outfile_abort(mt_outfile *out)
{
    if (out->fp) {
        fclose(out->fp);
        unlink(out->tmp_path);
    }
    outfile_release(out);
}

double mt_now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t mt_peak_rss_bytes(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (uint64_t)ru.ru_maxrss * 1024u;
}

int mt_compare_u64(const void *a, const void *b)
{
    uint64_t x, y;
    memcpy(&x, a, sizeof x);
    memcpy(&y, b, sizeof y);
    return x < y ? -1 : x > y;
}
