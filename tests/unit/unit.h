/* tests/unit/unit.h — a minimal TAP-style checker shared by the unit tests:
 * every CHECK prints "ok - ..." or "not ok - ...", and unit_finish()
 * returns the exit status. */
#ifndef MTOOL_UNIT_H
#define MTOOL_UNIT_H

#include <stdio.h>

static int unit_failures;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (cond) {                                                            \
            printf("ok - ");                                                   \
        } else {                                                               \
            printf("not ok - ");                                               \
            unit_failures++;                                                   \
        }                                                                      \
        printf(__VA_ARGS__);                                                   \
        printf("\n");                                                          \
    } while (0)

static inline int unit_finish(void)
{
    return unit_failures ? 1 : 0;
}

#endif
