/* common/util.h — small helpers shared by every mtool module:
 * checked allocation, growable arrays, error strings and atomic output files. */
#ifndef MTOOL_UTIL_H
#define MTOOL_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MT_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Allocation that never returns NULL: out of memory is reported and the
 * process exits, because no mtool command can do anything useful after it. */
void *mt_xmalloc(size_t n);
void *mt_xcalloc(size_t count, size_t size);
void *mt_xrealloc(void *p, size_t n);
/* Grows an array to hold at least `need` elements of `size` bytes;
 * `*cap` is updated.  Capacity doubles so appends are amortized O(1). */
void *mt_xgrow(void *p, size_t *cap, size_t need, size_t size);
char *mt_xstrdup(const char *s);
/* qsort/bsearch order of uint64_t values, or of records that start with one. */
int mt_compare_u64(const void *a, const void *b);
char *mt_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *mt_xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* Binary search of base[0..n), `size`-byte elements sorted by the uint64_t
 * key at byte `key_offset` of each (offsetof; 0 for an array of uint64_t):
 * the index of the first element whose key is not below `key` (lower
 * bound) or is above it (upper bound); n when there is none.  "The last
 * element starting at or before addr" is the upper bound minus one.
 * Inline: the analyzer's slices call these in their inner loops. */
static inline size_t mt_bound_u64(const void *base, size_t n, size_t size, size_t key_offset,
                                  uint64_t key, int upper)
{
    const unsigned char *b = (const unsigned char *)base;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t k = *(const uint64_t *)(const void *)(b + mid * size + key_offset);
        if (k < key || (upper && k == key))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
static inline size_t mt_lower_bound_u64(const void *base, size_t n, size_t size,
                                        size_t key_offset, uint64_t key)
{
    return mt_bound_u64(base, n, size, key_offset, key, 0);
}
static inline size_t mt_upper_bound_u64(const void *base, size_t n, size_t size,
                                        size_t key_offset, uint64_t key)
{
    return mt_bound_u64(base, n, size, key_offset, key, 1);
}

/* Append one element to a growable array declared as
 *   T *items; size_t n, cap;  */
#define MT_PUSH(arr, n, cap, value)                                          \
    do {                                                                     \
        if ((n) >= (cap))                                                    \
            (arr) = mt_xgrow((arr), &(cap), (n) + 1, sizeof(*(arr)));        \
        (arr)[(n)++] = (value);                                              \
    } while (0)

/* Error text is formatted into a caller-provided buffer so library code never
 * prints; the command line decides how to show it ("mtool: FILE: reason"). */
typedef struct {
    char msg[512];
} mt_error;

void mt_error_set(mt_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Output files are written to "<path>.tmp.<pid>" and renamed over `path` only
 * when complete, so a failed command never leaves partial output behind. */
typedef struct {
    FILE *fp;
    char *path;
    char *tmp_path;
} mt_outfile;

int mt_outfile_open(mt_outfile *out, const char *path, mt_error *err);
int mt_outfile_commit(mt_outfile *out, mt_error *err); /* fclose + rename */
void mt_outfile_abort(mt_outfile *out);               /* fclose + unlink */

/* Opens a file the user named for reading, refusing anything but a regular
 * file before it can block: a FIFO's open waits for a writer forever, a
 * device or directory is no input of ours.  "PATH: is a directory", "PATH:
 * not a regular file" or "PATH: <strerror>" in err.  A descriptor, or -1. */
int mt_open_regular(const char *path, mt_error *err);
/* The same as a stdio stream ("r"), or NULL. */
FILE *mt_fopen_regular(const char *path, mt_error *err);

/* Monotonic wall time in seconds, for progress and benchmark figures. */
double mt_now_seconds(void);

/* Length of the well-formed UTF-8 sequence at p, 0 if there is none. */
size_t mt_utf8_sequence_length(const unsigned char *p);
/* A JSON string for the bytes of s: escapes, valid UTF-8 kept, other bytes \u00XX. */
void mt_json_string(FILE *fp, const char *s);
/* A byte that drives a terminal instead of showing: C0 controls and DEL. */
static inline bool mt_is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }
/* s for one terminal line or message, at most n bytes with the NUL: printable
 * ASCII kept, every other byte (and the backslash) as \xHH; cut short when
 * it does not fit. */
void mt_escape_text(char *buf, size_t n, const char *s);
/* The same escaping, whole, onto a stream. */
void mt_fputs_escaped(FILE *fp, const char *s);
/* A field of a tab-separated file, any bytes: backslash, tab, newline and
 * carriage return written as \\ \t \n \r, the other control bytes (below
 * 0x20, and 0x7f) as \xHH so that a file shown on a terminal drives no escape
 * sequence, every other byte as it is. */
void mt_tsv_field(FILE *fp, const char *s);
/* Undoes mt_tsv_field in place; -1 for any other backslash sequence. */
int mt_tsv_unescape(char *s);
/* A JSON number for a measured or derived figure (%.6g), null when it is not
 * finite (a figure that does not exist). */
void mt_json_number(FILE *fp, double v);
/* SHA-256 of a regular file's content (the identity of a binary in caches,
 * run directories and the history), and its 64-digit lower-case hex form. */
int mt_file_sha256(const char *path, uint8_t out[32], mt_error *err);
void mt_sha256_hex(const uint8_t sha[32], char out[65]);
/* Peak resident set size of this process in bytes (from getrusage). */
uint64_t mt_peak_rss_bytes(void);

/* Runs work(ctx, fd) in a forked child, its stderr on /dev/null, and returns
 * the bytes it wrote to fd (*size of them; free them), or NULL when the
 * child crashed or exited non-zero: for libraries with known memory-safety
 * bugs on malformed input (libdwarf), which must never crash mtool. */
typedef bool (*mt_isolated_work)(void *ctx, int fd);
uint8_t *mt_run_isolated(mt_isolated_work work, void *ctx, size_t *size);
/* write(2) until all n bytes are out; false on an error. */
bool mt_write_all(int fd, const void *buf, size_t n);
/* Bytes received from mt_run_isolated, taken in order with their bounds
 * checked: mt_take is false when fewer than n are left. */
typedef struct {
    const uint8_t *p, *end;
} mt_byte_reader;
bool mt_take(mt_byte_reader *r, void *out, size_t n);

#endif
