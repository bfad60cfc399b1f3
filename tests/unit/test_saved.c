/* Unit tests of analyzer/saved.c: an analysis saved and read back is the
 * analysis.  Oracles independent of the file format: the JSON of the
 * analysis (loops, call graph, blocks and edges) and the counting copy the
 * rewriter makes from it (jump tables, foreign entries, code read as data
 * and call sites all shape its bytes) equal the fresh analysis's; a file cut
 * short anywhere or not one is refused, with nothing leaked.
 * Usage: test_saved [ELF]   (default: the system's libc.so.6) */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/analyzer.h"
#include "rewriter/rewriter.h"
#include "tests/unit/unit.h"

static char *analysis_json(const mt_program *prog, size_t *len)
{
    char *text = NULL;
    FILE *fp = open_memstream(&text, len);
    mt_json_options opt = {.loops = true, .callgraph = true, .blocks = true};
    mt_write_analysis_json(fp, prog, &opt);
    fclose(fp);
    return text;
}

static uint8_t *file_bytes(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    uint8_t *bytes = NULL;
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    *len = (size_t)ftell(fp);
    rewind(fp);
    bytes = malloc(*len ? *len : 1);
    if (fread(bytes, 1, *len, fp) != *len) {
        free(bytes);
        bytes = NULL;
    }
    fclose(fp);
    return bytes;
}

static void write_bytes(const char *path, const uint8_t *bytes, size_t len)
{
    FILE *fp = fopen(path, "wb");
    fwrite(bytes, 1, len, fp);
    fclose(fp);
}

/* The counting copy of the library made from prog, its bytes. */
static uint8_t *counting_copy(const mt_program *prog, const char *out, size_t *len)
{
    mt_rewrite_options opt = {.library = true};
    mt_rewrite_report report;
    mt_error err;
    if (mt_rewrite_counts(prog, out, &opt, &report, &err) != 0) {
        printf("# %s\n", err.msg);
        return NULL;
    }
    mt_rewrite_report_free(&report);
    uint8_t *bytes = file_bytes(out, len);
    unlink(out);
    return bytes;
}

static void check_same_analysis(const mt_program *fresh, const mt_program *loaded,
                                const char *dir)
{
    size_t a_len, b_len;
    char *a = analysis_json(fresh, &a_len), *b = analysis_json(loaded, &b_len);
    CHECK(a_len > 1000 && a_len == b_len && memcmp(a, b, a_len) == 0,
          "the JSON of the analysis read back equals the fresh one's (%zu and %zu bytes)", a_len,
          b_len);
    free(a);
    free(b);
    char *out = NULL;
    if (asprintf(&out, "%s/copy", dir) < 0)
        return;
    uint8_t *x = counting_copy(fresh, out, &a_len), *y = counting_copy(loaded, out, &b_len);
    CHECK(x && y && a_len == b_len && memcmp(x, y, a_len) == 0,
          "the counting copy made from it equals the fresh analysis's byte for byte (%zu bytes)",
          a_len);
    free(x);
    free(y);
    free(out);
}

/* Every cut of the file (at n points and the last byte) and a foreign
 * first byte are refused with a reason. */
static void check_refusals(const char *saved, const char *bin, const char *dir)
{
    size_t len;
    uint8_t *bytes = file_bytes(saved, &len);
    char *cut = NULL;
    if (!bytes || asprintf(&cut, "%s/cut", dir) < 0)
        return;
    int accepted = 0, tried = 0;
    mt_error err = {{0}};
    for (size_t k = 0; k <= 64; k++, tried++) {
        write_bytes(cut, bytes, k == 64 ? len - 1 : len * k / 64);
        mt_program *p = mt_program_load(cut, bin, &err);
        accepted += p != NULL;
        mt_program_free(p);
    }
    CHECK(accepted == 0 && strstr(err.msg, "not a whole analysis"),
          "a saved analysis cut short is refused at each of %d cuts (%d accepted): %s", tried,
          accepted, err.msg);
    bytes[0] ^= 0xff;
    write_bytes(cut, bytes, len);
    mt_program *p = mt_program_load(cut, bin, &err);
    CHECK(!p, "a file that is no saved analysis is refused");
    mt_program_free(p);
    unlink(cut);
    free(cut);
    free(bytes);
}

int main(int argc, char **argv)
{
    const char *bin = argc > 1 ? argv[1] : "/lib/x86_64-linux-gnu/libc.so.6";
    char dir[] = "/tmp/test_saved.XXXXXX", *saved = NULL;
    mt_analyze_options opt;
    mt_analyze_options_init(&opt);
    mt_error err;
    mt_program *fresh = mt_analyze(bin, &opt, &err);
    CHECK(fresh != NULL, "%s analyzed", bin);
    if (!fresh || !mkdtemp(dir) || asprintf(&saved, "%s/saved", dir) < 0)
        return unit_finish();
    CHECK(mt_program_save(fresh, saved, &err) == 0, "its analysis saved");
    mt_program *loaded = mt_program_load(saved, bin, &err);
    CHECK(loaded && strcmp(loaded->path, bin) == 0 && loaded->nprocs == fresh->nprocs,
          "read back: %u procedures", loaded ? loaded->nprocs : 0);
    if (loaded)
        check_same_analysis(fresh, loaded, dir);
    check_refusals(saved, bin, dir);
    mt_program_free(loaded);
    mt_program_free(fresh);
    unlink(saved);
    rmdir(dir);
    free(saved);
    return unit_finish();
}
