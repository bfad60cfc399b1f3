/* copies.c — a hot loop whose work is in glibc: each step copies a 4 KB
 * page with memcpy and measures the text in it with strlen, so its
 * procedure is estimable only when libc is counted (the calls are then
 * known work, at memcpy's and strlen's figures per call; pass 2, `mtool
 * run`, docs/ARCHITECTURE.md "glibc's own objects").
 *
 * usage: copies [ROUNDS]   (work grows linearly with ROUNDS, default 200) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
#define PAGE 4096
#define PAGES 256 /* 1 MB each way: from L2 and L3, not memory */

static char from[PAGES * PAGE], to[PAGES * PAGE];

/* Every page of `from` copied into `to`, the text in each measured. */
NOINLINE size_t copy_pages(size_t page_bytes, int rounds)
{
    size_t text = 0;
    for (int r = 0; r < rounds; r++)
        for (size_t p = 0; p < PAGES; p++) {
            memcpy(to + p * page_bytes, from + p * page_bytes, page_bytes);
            text += strlen(to + p * page_bytes);
        }
    return text;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    memset(from, 'a', sizeof from); /* main's own memory operations: few */
    for (size_t p = 0; p < PAGES; p++)
        from[p * PAGE + PAGE - 1] = '\0';
    /* the size from the command line's side of the compiler: no inlined copy */
    size_t page_bytes = argc > 2 ? (size_t)atol(argv[2]) : PAGE;
    if (page_bytes > PAGE)
        page_bytes = PAGE;
    printf("%zu\n", copy_pages(page_bytes, rounds));
    return 0;
}
