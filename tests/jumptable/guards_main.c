/* tests/jumptable/guards_main.c — drives guards.S over every byte value:
 * prints how many bytes fell in each case (an index above the guard that
 * reached a wrong entry changes them, or crashes). */
#include <stdio.h>

int classify(unsigned char c);

int main(void)
{
    unsigned cases[101] = {0};
    for (int round = 0; round < 3; round++)
        for (int c = 0; c < 256; c++)
            cases[classify((unsigned char)c)]++;
    for (int k = 0; k <= 100; k++)
        if (cases[k])
            printf("case %d: %u\n", k, cases[k]);
    return (int)(cases[5] / 3); /* 1: byte 255 reached the last entry */
}
