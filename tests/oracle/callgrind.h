/* tests/oracle/callgrind.h — what the oracle checkers share about reading
 * callgrind output (--dump-instr=yes --compress-pos=no --compress-strings=no). */
#ifndef MTOOL_TESTS_CALLGRIND_H
#define MTOOL_TESTS_CALLGRIND_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Whether callgrind's object name `ob` is the file `binary`. */
static inline bool same_object(const char *ob, const char *binary)
{
    char *a = realpath(ob, NULL), *b = realpath(binary, NULL);
    bool same = a && b && strcmp(a, b) == 0;
    free(a);
    free(b);
    return same;
}

#endif
