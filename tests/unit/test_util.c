/* tests/unit/test_util.c — common/util.c's escaping of tab-separated fields
 * (the run directory's names and paths: docs/REPORT.md) and its refusal of
 * files that are not regular before they can block.
 *
 * Oracles: every byte 1-255 round-trips through mt_tsv_field and
 * mt_tsv_unescape, and the written field holds no control byte (the reader
 * splits on tab and newline; a terminal obeys the others); escapes mtool
 * never writes are
 * refused; a FIFO with no writer (open would wait forever without
 * O_NONBLOCK), a directory and a character device are refused in words,
 * and a regular file reads back what was written; a file's SHA-256 is the
 * digest of its content (Python's hashlib for the constants) whenever it is
 * asked, also when the file was rewritten in place, with the same size,
 * right after it was hashed, or after its hash was remembered. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "unit.h"

/* The field as mt_tsv_field writes it, in a new string. */
static char *written(const char *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    mt_tsv_field(fp, s);
    fclose(fp);
    return buf;
}

static void test_round_trip(void)
{
    char all[256];
    for (int i = 1; i < 256; i++)
        all[i - 1] = (char)i;
    all[255] = '\0';
    char *w = written(all);
    bool control = false;
    for (const char *c = w; *c; c++)
        control |= (unsigned char)*c < 0x20 || *c == 0x7f;
    CHECK(!control, "tsv: no control byte in a written field");
    /* \\ \t \n \r grow by one byte, the 29 other control bytes by three (\xHH) */
    CHECK(strlen(w) == 255 + 4 + 29 * 3, "tsv: only the escaped bytes grow (%zu bytes)", strlen(w));
    CHECK(mt_tsv_unescape(w) == 0 && strcmp(w, all) == 0, "tsv: bytes 1-255 read back as written");
    free(w);
    char plain[] = "plain_name";
    CHECK(mt_tsv_unescape(plain) == 0 && strcmp(plain, "plain_name") == 0,
          "tsv: a name without escapes is itself");
    const char *bad[] = {"a\\", "a\\x41", "\\0", "\\\\\\", "\\x00", "\\x1", "\\x1B", "\\xzz"};
    for (size_t i = 0; i < MT_ARRAY_LEN(bad); i++) {
        char *copy = strdup(bad[i]);
        CHECK(mt_tsv_unescape(copy) != 0, "tsv: '%s' (an escape never written) is refused", bad[i]);
        free(copy);
    }
}

static void expect_refused(const char *path, const char *why)
{
    mt_error err = {{0}};
    int fd = mt_open_regular(path, &err);
    char want[600];
    snprintf(want, sizeof want, "%s: %s", path, why);
    CHECK(fd < 0 && strcmp(err.msg, want) == 0, "open_regular: %s refused ('%s')", path, err.msg);
    if (fd >= 0)
        close(fd);
}

static void test_open_regular(void)
{
    char dir[] = "/tmp/mtool-test-util.XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "open_regular: cannot make a directory");
        return;
    }
    char *fifo = mt_xasprintf("%s/fifo", dir), *file = mt_xasprintf("%s/file", dir);
    CHECK(mkfifo(fifo, 0600) == 0, "open_regular: made a FIFO");
    expect_refused(fifo, "not a regular file"); /* blocks forever if it waits for a writer */
    expect_refused(dir, "is a directory");
    expect_refused("/dev/null", "not a regular file");
    /* An output is never renamed over something that is not a regular file. */
    mt_outfile out;
    mt_error oerr = {{0}};
    struct stat st;
    CHECK(mt_outfile_open(&out, fifo, &oerr) != 0 && strstr(oerr.msg, "not a regular file") &&
              stat(fifo, &st) == 0 && S_ISFIFO(st.st_mode),
          "outfile: a FIFO as target is refused and left a FIFO ('%s')", oerr.msg);
    FILE *w = fopen(file, "w");
    fputs("line\n", w);
    fclose(w);
    mt_error err;
    FILE *fp = mt_fopen_regular(file, &err);
    char line[16] = "";
    CHECK(fp && fgets(line, sizeof line, fp) && strcmp(line, "line\n") == 0,
          "open_regular: a regular file reads back");
    if (fp)
        fclose(fp);
    unlink(fifo);
    unlink(file);
    rmdir(dir);
    free(fifo);
    free(file);
}

/* Rewrites `path` in place (same inode) with `text`. */
static void rewrite(const char *path, const char *text)
{
    FILE *w = fopen(path, "r+");
    if (w) {
        fputs(text, w);
        fclose(w);
    }
}

static bool sha256_is(const char *path, const char *hex)
{
    uint8_t sha[32];
    char got[65];
    mt_error err;
    if (mt_file_sha256(path, sha, &err) != 0)
        return false;
    mt_sha256_hex(sha, got);
    return strcmp(got, hex) == 0;
}

static void test_sha256(void)
{
    static const char first[] = "fe5887e7fb37f2280c5e74882404b37974c857dd38fd839a9ed2817867f0dc83",
                      other[] = "c9c35465c79d12978ce82af86aa8652840acdc22c8b5bcd7d828a855a55dbd57";
    char dir[] = "/tmp/mtool-test-sha.XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "sha256: cannot make a directory");
        return;
    }
    char *file = mt_xasprintf("%s/file", dir);
    FILE *w = fopen(file, "w");
    fputs("first content\n", w);
    fclose(w);
    CHECK(sha256_is(file, first), "sha256: a file's digest");
    rewrite(file, "other content\n"); /* within the file system's timestamp tick */
    CHECK(sha256_is(file, other), "sha256: rewritten at once, same size: the new digest");
    sleep(2); /* old enough to be remembered (util.c) */
    CHECK(sha256_is(file, other) && sha256_is(file, other), "sha256: asked again, the same");
    rewrite(file, "first content\n");
    CHECK(sha256_is(file, first), "sha256: rewritten after it was remembered: the new digest");
    unlink(file);
    rmdir(dir);
    free(file);
}

int main(void)
{
    test_round_trip();
    test_open_regular();
    test_sha256();
    return unit_finish();
}
