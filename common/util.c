#define _GNU_SOURCE
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <nettle/sha2.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
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

char *mt_xvasprintf(const char *fmt, va_list ap)
{
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        out_of_memory(0);
    return s;
}

char *mt_xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = mt_xvasprintf(fmt, ap);
    va_end(ap);
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
    /* The temporary file is renamed over the target: a device, FIFO or
     * directory there would be replaced (as root, `-o /dev/null` left a
     * regular file in /dev for every other program). */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        mt_error_set(err, "%s: not a regular file (outputs are written to a temporary file "
                          "renamed over the target)", path);
        out->path = out->tmp_path = NULL;
        out->fp = NULL;
        return -1;
    }
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

/* O_NONBLOCK makes the open of a FIFO return at once; fstat of the very
 * descriptor then tells what was opened (a stat before the open could be
 * raced).  Regular files ignore O_NONBLOCK, but it is cleared anyway. */
int mt_open_regular(const char *path, mt_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        mt_error_set(err, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    const char *why = fstat(fd, &st) != 0 ? strerror(errno)
                      : S_ISDIR(st.st_mode) ? "is a directory"
                      : !S_ISREG(st.st_mode) ? "not a regular file"
                      : fcntl(fd, F_SETFL, 0) != 0 ? strerror(errno)
                                                   : NULL;
    if (why) {
        mt_error_set(err, "%s: %s", path, why);
        close(fd);
        return -1;
    }
    return fd;
}

FILE *mt_fopen_regular(const char *path, mt_error *err)
{
    int fd = mt_open_regular(path, err);
    FILE *fp = fd < 0 ? NULL : fdopen(fd, "r");
    if (fd >= 0 && !fp) {
        mt_error_set(err, "%s: %s", path, strerror(errno));
        close(fd);
    }
    return fp;
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

/* Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0 if there is none. */
size_t mt_utf8_sequence_length(const unsigned char *p)
{
    unsigned c = p[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        lo = c == 0xe0 ? 0xa0 : 0x80;
        hi = c == 0xed ? 0x9f : 0xbf;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        lo = c == 0xf0 ? 0x90 : 0x80;
        hi = c == 0xf4 ? 0x8f : 0xbf;
    } else {
        return 0;
    }
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++) /* a NUL terminator fails this test too */
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return len;
}

/* The same escaping as the analysis JSON (analyzer/analysis_json.c), on a
 * FILE: always valid JSON whatever bytes the string holds. */
void mt_json_string(FILE *fp, const char *s)
{
    fputc('"', fp);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t len;
        if (*p == '"' || *p == '\\') {
            fputc('\\', fp);
            fputc(*p++, fp);
        } else if (*p >= 0x20 && *p < 0x7f) {
            fputc(*p++, fp);
        } else if (*p >= 0x80 && (len = mt_utf8_sequence_length(p)) != 0) {
            fwrite(p, 1, len, fp);
            p += len;
        } else {
            fprintf(fp, "\\u%04x", *p++);
        }
    }
    fputc('"', fp);
}

/* What a terminal line shows as it is: printable ASCII but the backslash,
 * which starts the \\xHH of every other byte. */
static bool kept_in_text(unsigned char c) { return c >= 0x20 && c < 0x7f && c != '\\'; }

void mt_escape_text(char *buf, size_t n, const char *s)
{
    size_t k = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && k + 5 < n; p++) {
        if (kept_in_text(*p))
            buf[k++] = (char)*p;
        else
            k += (size_t)snprintf(buf + k, n - k, "\\x%02x", *p);
    }
    if (n)
        buf[k < n ? k : n - 1] = '\0';
}

void mt_fputs_escaped(FILE *fp, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (kept_in_text(*p))
            fputc(*p, fp);
        else
            fprintf(fp, "\\x%02x", *p);
    }
}

void mt_tsv_field(FILE *fp, const char *s)
{
    for (; *s; s++) {
        const char *esc = *s == '\\' ? "\\\\" : *s == '\t' ? "\\t" : *s == '\n' ? "\\n"
                          : *s == '\r' ? "\\r" : NULL;
        if (esc)
            fputs(esc, fp);
        else if (mt_is_control((unsigned char)*s))
            fprintf(fp, "\\x%02x", (unsigned char)*s);
        else
            fputc(*s, fp);
    }
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int mt_tsv_unescape(char *s)
{
    static const char code[] = "\\tnr", byte[] = "\\\t\n\r";
    char *out = s;
    while (*s) {
        if (*s != '\\') {
            *out++ = *s++;
            continue;
        }
        if (s[1] == 'x') {
            int hi = hex_digit(s[2]), lo = hi < 0 ? -1 : hex_digit(s[3]);
            if (lo < 0 || !(hi << 4 | lo) || !mt_is_control((unsigned char)(hi << 4 | lo)))
                return -1;
            *out++ = (char)(hi << 4 | lo);
            s += 4;
            continue;
        }
        const char *k = s[1] ? strchr(code, s[1]) : NULL;
        if (!k)
            return -1;
        *out++ = byte[k - code];
        s += 2;
    }
    *out = '\0';
    return 0;
}

void mt_json_number(FILE *fp, double v)
{
    if (isfinite(v))
        fprintf(fp, "%.6g", v);
    else
        fputs("null", fp);
}

/* The files this process hashed, by what stat says of them: a binary and
 * the libraries it loads are asked for several times a command (the cache
 * of copies, the libraries' set, the dlopen list), libc's 1.9 MB each time.
 * A file whose device, inode, size, mtime and ctime are the same is taken
 * to have the same content within one process, when its ctime was a second
 * old or more as it was hashed: a file system's timestamps are as coarse as
 * its clock's tick (ext4: a few milliseconds), so two writes of a file
 * being written could leave the same times, which a second later they
 * cannot.  Measured (callgrind, `mtool count -- phases-gcc-O2 1`, glibc
 * counted): 611 -> 501 million instructions, SHA-256's 206 -> 96 million
 * (libc's 1.9 MB hashed once, not three times). */
typedef struct {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
    uint8_t sha[32];
} hashed_file;

static hashed_file hashed[16];
static unsigned nhashed;
static pthread_mutex_t hashed_lock = PTHREAD_MUTEX_INITIALIZER;

static hashed_file identity_of(const struct stat *st)
{
    return (hashed_file){st->st_dev, st->st_ino, st->st_size, st->st_mtim, st->st_ctim, {0}};
}

static bool same_file(const hashed_file *h, const struct stat *st)
{
    return h->dev == st->st_dev && h->ino == st->st_ino && h->size == st->st_size &&
           h->mtime.tv_sec == st->st_mtim.tv_sec && h->mtime.tv_nsec == st->st_mtim.tv_nsec &&
           h->ctime.tv_sec == st->st_ctim.tv_sec && h->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

/* The remembered hash of the file st describes: false when there is none. */
static bool recall_sha256(const struct stat *st, uint8_t out[32])
{
    bool found = false;
    pthread_mutex_lock(&hashed_lock);
    unsigned n = nhashed < MT_ARRAY_LEN(hashed) ? nhashed : (unsigned)MT_ARRAY_LEN(hashed);
    for (unsigned i = 0; i < n && !found; i++)
        if (same_file(&hashed[i], st)) {
            memcpy(out, hashed[i].sha, 32);
            found = true;
        }
    pthread_mutex_unlock(&hashed_lock);
    return found;
}

static void remember_sha256(const struct stat *st, const uint8_t sha[32])
{
    pthread_mutex_lock(&hashed_lock);
    hashed_file *h = &hashed[nhashed++ % MT_ARRAY_LEN(hashed)];
    *h = identity_of(st);
    memcpy(h->sha, sha, 32);
    pthread_mutex_unlock(&hashed_lock);
}

int mt_file_sha256(const char *path, uint8_t out[32], mt_error *err)
{
    int fd = mt_open_regular(path, err);
    if (fd < 0)
        return -1;
    struct stat before;
    bool known = fstat(fd, &before) == 0;
    if (known && recall_sha256(&before, out)) {
        close(fd);
        return 0;
    }
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    uint8_t buf[1 << 16];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        sha256_update(&ctx, (size_t)n, buf);
    int saved = errno;
    struct stat after;
    /* Remembered only when the file did not change while it was read, and
     * had not changed for a second before. */
    struct timespec now;
    bool settled = known && n == 0 && fstat(fd, &after) == 0 && clock_gettime(CLOCK_REALTIME, &now) == 0;
    if (settled) {
        hashed_file was = identity_of(&before);
        settled = same_file(&was, &after) && now.tv_sec - after.st_ctim.tv_sec > 1;
    }
    close(fd);
    if (n < 0) {
        mt_error_set(err, "%s: %s", path, strerror(saved));
        return -1;
    }
    sha256_digest(&ctx, SHA256_DIGEST_SIZE, out);
    if (settled)
        remember_sha256(&before, out);
    return 0;
}

void mt_sha256_hex(const uint8_t sha[32], char out[65])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = digits[sha[i] >> 4];
        out[2 * i + 1] = digits[sha[i] & 15];
    }
    out[64] = '\0';
}

bool mt_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

bool mt_take(mt_byte_reader *r, void *out, size_t n)
{
    if ((size_t)(r->end - r->p) < n)
        return false;
    memcpy(out, r->p, n);
    r->p += n;
    return true;
}

static uint8_t *read_pipe(int fd, size_t *size)
{
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = mt_xmalloc(cap);
    for (;;) {
        if (n == cap)
            buf = mt_xgrow(buf, &cap, n + 1, 1);
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    *size = n;
    return buf;
}

uint8_t *mt_run_isolated(mt_isolated_work work, void *ctx, size_t *size)
{
    int fds[2];
    if (pipe(fds) != 0)
        return NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return NULL;
    }
    if (pid == 0) {
        close(fds[0]);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 2); /* a crash report is the caller's to summarize */
        _exit(work(ctx, fds[1]) ? 0 : 1);
    }
    close(fds[1]);
    uint8_t *buf = read_pipe(fds[0], size);
    close(fds[0]);
    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}
