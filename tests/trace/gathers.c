/* tests/trace/gathers.c — gathers and scatters for tests/trace.sh.
 *
 *   gathers        AVX2 gathers (dword and qword indices, one masked), to
 *                  compare with Cachegrind (Valgrind runs AVX2, not AVX-512)
 *   gathers 512    AVX-512 gathers and a scatter with data registers 16-31 (capstone 4 decodes no index register above 15), a
 *                  scaled disp8, a negative displacement and an AVX2 gather
 *                  through ymm9-11, in `vector_kernel` (assembly, so that
 *                  every reference is known): 24 references, of which 19
 *                  touch lines nothing touched before (hand count, below);
 *                  then `touch_expected` loads those 19 lines plainly:
 *                  0 misses if the gathers touched exactly them.
 * Prints a checksum of what was gathered, so that the traced run's output
 * can be compared with the original's. */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N (1 << 18)
static float tab[N];
static double dtab[N];
static int idx[1 << 16];
static long long qidx[1 << 16];

__attribute__((noinline, target("avx2"))) static float gather_ps(void)
{
    __m256 s = _mm256_setzero_ps();
    for (int k = 0; k < (1 << 16); k += 8)
        s = _mm256_add_ps(s, _mm256_i32gather_ps(tab, _mm256_loadu_si256((void *)(idx + k)), 4));
    return s[0] + s[7];
}

__attribute__((noinline, target("avx2"))) static double gather_pd_masked(void)
{
    __m256d s = _mm256_setzero_pd();
    __m256d m = _mm256_castsi256_pd(_mm256_set_epi64x(-1, 0, -1, -1));
    for (int k = 0; k < (1 << 16); k += 4) {
        __m256i i = _mm256_loadu_si256((void *)(qidx + k));
        s = _mm256_add_pd(s, _mm256_mask_i64gather_pd(s, dtab, i, m, 8));
    }
    return s[0] + s[3];
}

/* vector_kernel(table, idx16, qidx8, out, mask4): the hand count.
 *   vmovdqu32 idx16           1 reference (a line main wrote: hit)
 *   vgatherdps 4(table + 4 idx), k1 = 0x5555: idx16[i] = 32 i, so elements
 *       0, 2, ..., 14 read table lines 0, 4, ..., 28: 8 references, 8 misses
 *   vmovdqu64 qidx8           1 (hit)
 *   vscatterqpd -64(out + 8 qidx), k2 = 0xff: qidx8[i] = 16 i + 8, so out
 *       lines 2 i, i = 0..7: 8 references, 8 misses
 *   vmovdqu qidx8, mask4      2 (hits)
 *   vgatherqpd (table + 8 qidx), mask4 = {-1, 0, -1, -1}: elements 0, 2, 3
 *       read table lines 1, 5, 7: 3 references, 3 misses
 *   ret                       1 (hit: the call wrote it)
 * 24 references, 19 misses. */
double vector_kernel(float *table, const int *idx16, const long long *qidx8, double *out,
                     const long long *mask4);
__asm__(".text\n"
        ".globl vector_kernel\n"
        ".type vector_kernel, @function\n"
        "vector_kernel:\n"
        "    vmovdqu32 (%rsi), %zmm7\n"
        "    mov $0x5555, %eax\n"
        "    kmovw %eax, %k1\n"
        "    vpxord %zmm18, %zmm18, %zmm18\n"
        "    vgatherdps 4(%rdi,%zmm7,4), %zmm18{%k1}\n"
        "    vmovdqu64 (%rdx), %zmm5\n"
        "    mov $0xff, %eax\n"
        "    kmovw %eax, %k2\n"
        "    vcvtps2pd %ymm18, %zmm19\n"
        "    vscatterqpd %zmm19, -64(%rcx,%zmm5,8){%k2}\n"
        "    vmovdqu (%rdx), %ymm9\n"
        "    vmovdqu (%r8), %ymm10\n"
        "    vxorpd %ymm11, %ymm11, %ymm11\n"
        "    vgatherqpd %ymm10, (%rdi,%ymm9,8), %ymm11\n"
        "    vaddpd %ymm11, %ymm19, %ymm0\n"
        "    vhaddpd %ymm0, %ymm0, %ymm0\n"
        "    vzeroupper\n"
        "    ret\n"
        ".size vector_kernel, .-vector_kernel\n");

/* Loads the 19 lines vector_kernel should have touched. */
__attribute__((noinline)) static double touch_expected(const float *table, const double *out)
{
    double s = 0;
    for (int i = 0; i < 8; i++)
        s += table[16 * 4 * i] + out[16 * i];
    return s + table[16 * 1] + table[16 * 5] + table[16 * 7];
}

static float vtable[1 << 12] __attribute__((aligned(64)));
static double vout[1 << 10] __attribute__((aligned(64)));
static int vidx[16] __attribute__((aligned(64)));
static long long vqidx[8] __attribute__((aligned(64)));
static long long vmask[4] __attribute__((aligned(64))) = {-1, 0, -1, -1};

static int run_512(void)
{
    for (int i = 0; i < (1 << 12); i++)
        vtable[i] = (float)(i % 97);
    /* vtable was written: out of a 16 KiB D1 with 64 KiB of other lines,
     * written here (memset is libc's: not traced). */
    static char sweep[1 << 16];
    for (volatile char *p = sweep; p < sweep + sizeof sweep; p += 64)
        *p = 1;
    for (int i = 0; i < 16; i++)
        vidx[i] = 32 * i;
    for (int i = 0; i < 8; i++)
        vqidx[i] = 16 * i + 8;
    vmask[1] = 0;
    double v = vector_kernel(vtable, vidx, vqidx, vout, vmask);
    double t = touch_expected(vtable, vout);
    printf("512: %.1f %.1f\n", v, t);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "512") == 0)
        return run_512();
    srand(1);
    for (int k = 0; k < (1 << 16); k++) {
        idx[k] = rand() % N;
        qidx[k] = rand() % N;
    }
    for (int k = 0; k < N; k++) {
        tab[k] = (float)(k % 13);
        dtab[k] = k % 7;
    }
    printf("%.1f %.1f\n", gather_ps(), gather_pd_masked());
    return 0;
}
