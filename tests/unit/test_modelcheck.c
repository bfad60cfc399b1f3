/* tests/unit/test_modelcheck.c — the model's self-check in the machine
 * profile (costmodel/machine.c): written and read back, every value range-
 * checked, and profiles without it (shipped ones, older calibrations) read
 * as not checked.  The check itself runs end to end in tests/modelcheck.sh. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "costmodel/costmodel.h"
#include "tests/unit/unit.h"

static char path[64];

static int read_text(const char *text, mt_machine *m, mt_error *err)
{
    FILE *fp = fopen(path, "w");
    fputs(text, fp);
    fclose(fp);
    return mt_machine_read(path, m, err);
}

int main(void)
{
    snprintf(path, sizeof path, "/tmp/mtool-test-modelcheck.%d.txt", (int)getpid());
    mt_error err;
    mt_machine m, back;

    mt_machine_shipped(&m, 26, 2);
    CHECK(m.check_kernels == 0 && m.version == MT_MACHINE_PROFILE_VERSION,
          "a shipped profile is not checked (version %d, the current)",
          m.version);
    mt_machine_shipped(&m, 25, 1);
    CHECK(m.check_kernels == 0, "neither is the other shipped profile");

    m.check_kernels = 12;
    m.check_median_error_pct = 3.71;
    m.check_worst_error_pct = -31.25;
    snprintf(m.check_worst_kernel, sizeof m.check_worst_kernel, "popcount_swar");
    CHECK(mt_machine_save(&m, path, &err) == 0 && mt_machine_read(path, &back, &err) == 0 &&
              back.check_kernels == 12 && back.check_median_error_pct == 3.71 &&
              back.check_worst_error_pct == -31.25 &&
              !strcmp(back.check_worst_kernel, "popcount_swar"),
          "the check is written and read back (%s)", back.check_worst_kernel);

    m.check_kernels = 0;
    FILE *fp = fopen(path, "w");
    mt_machine_write(fp, &m);
    fclose(fp);
    fp = fopen(path, "r");
    char line[256];
    bool any = false;
    while (fgets(line, sizeof line, fp))
        any |= !strncmp(line, "check_", 6);
    fclose(fp);
    CHECK(!any && mt_machine_read(path, &back, &err) == 0 && back.check_kernels == 0,
          "a profile not checked has no check lines and reads back as not checked");

    CHECK(read_text("version 3\ncpu_model Old CPU\ntsc_per_cycle 0.7\n", &back, &err) == 0 &&
              back.version == 3 && back.check_kernels == 0 && back.check_worst_kernel[0] == '\0',
          "a version-3 profile (before the check) reads fine, not checked");

    CHECK(read_text("version 4\ncheck_kernels 12\ncheck_median_error_pct 250.5\n"
                    "check_worst_error_pct 900\ncheck_worst_kernel call_leaf\n",
                    &back, &err) == 0 &&
              back.check_median_error_pct == 250.5 && back.check_worst_error_pct == 900,
          "a large checked error is a valid profile (reports warn about it)");

    /* Which calibration figures fell back: written as fallback lines,
     * read back to the same benchmarks; none recorded, none written. */
    mt_machine_shipped(&m, 25, 1);
    int lea = mt_calibration_bench_index("lea lat"), loop = mt_calibration_bench_index("loop of 7 ops");
    m.calibration_how[lea] = MT_FELL_BACK_REPEATED;
    m.calibration_how[loop] = MT_FELL_BACK_FASTEST;
    m.calibration_confirmed = 120;
    m.calibration_fallbacks = 2;
    CHECK(lea >= 0 && loop >= 0 && mt_machine_save(&m, path, &err) == 0 &&
              mt_machine_read(path, &back, &err) == 0 && back.calibration_confirmed == 120 &&
              back.calibration_fallbacks == 2 && back.calibration_how[lea] == MT_FELL_BACK_REPEATED &&
              back.calibration_how[loop] == MT_FELL_BACK_FASTEST &&
              !memcmp(back.calibration_how, m.calibration_how, sizeof m.calibration_how),
          "the figures that fell back are written and read back (%.0f confirmed, %.0f fell back)",
          back.calibration_confirmed, back.calibration_fallbacks);
    CHECK(read_text("version 6\ncpu_model Old CPU\n", &back, &err) == 0 &&
              back.calibration_confirmed == 0 && back.calibration_fallbacks == 0,
          "a profile without the record reads as none recorded");

    static const struct {
        const char *text, *key;
    } bad[] = {
        {"fallback repeated no such benchmark\n", "'fallback'"},
        {"fallback confirmed lea lat\n", "'fallback'"},
        {"fallback lea lat\n", "'fallback'"},
        {"fallback fastest\n", "'fallback'"},
        {"fallback fastest lea lat\nfallback repeated lea lat\n", "'fallback'"},
        {"calibration_confirmed -3\n", "'calibration_confirmed'"},
        {"check_kernels -1\n", "'check_kernels'"},
        {"check_kernels 5000\n", "'check_kernels'"},
        {"check_median_error_pct -2\n", "'check_median_error_pct'"},
        {"check_median_error_pct nan\n", "'check_median_error_pct'"},
        {"check_worst_error_pct -150\n", "'check_worst_error_pct'"},
        {"check_worst_error_pct 1e9\n", "'check_worst_error_pct'"},
        {"check_worst_error_pct twelve\n", "'check_worst_error_pct'"},
        {"check_worst_kernel a b\n", "'check_worst_kernel'"},
        {"check_worst_kernel \x1b[31m\n", "'check_worst_kernel'"},
        {"check_worst_kernel a_name_longer_than_thirty_one_chars\n", "'check_worst_kernel'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = read_text(bad[i].text, &back, &err);
        CHECK(rc != 0 && strstr(err.msg, bad[i].key) &&
                  (strstr(err.msg, ":1:") || strstr(err.msg, ":2:")) &&
                  !strchr(err.msg, '\x1b'),
              "refused: %s", rc ? err.msg : bad[i].text);
    }
    unlink(path);
    return unit_finish();
}
