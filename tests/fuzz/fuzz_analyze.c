/* tests/fuzz/fuzz_analyze.c — libFuzzer target for the binary analyzer.
 *
 * Each input is written to an anonymous memory file and analyzed through
 * its /proc/self/fd path, exactly as `mtool analyze FILE` would, then
 * serialized to /dev/null so the JSON writer sees every odd program too.
 * A crash, sanitizer report, leak or timeout here is a bug: malformed input
 * must only ever produce an error or warnings. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "analyzer/analyzer.h"

static int write_all(int fd, const uint8_t *data, size_t size)
{
    while (size > 0) {
        ssize_t n = write(fd, data, size);
        if (n <= 0)
            return -1;
        data += n;
        size -= (size_t)n;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *devnull;
    if (!devnull)
        devnull = fopen("/dev/null", "w");
    int fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
    if (fd < 0)
        abort();
    if (write_all(fd, data, size) != 0)
        abort();
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);

    mt_analyze_options opts;
    mt_analyze_options_init(&opts);
    opts.want_lines = true;
    mt_error err = {{0}};
    mt_program *prog = mt_analyze(path, &opts, &err);
    if (prog) {
        mt_json_options jopt = {.loops = true, .callgraph = true, .blocks = true};
        if (devnull)
            mt_write_analysis_json(devnull, prog, &jopt);
        mt_program_free(prog);
    } else if (err.msg[0] == '\0') {
        abort(); /* a failure must always say why */
    }
    close(fd);
    return 0;
}
