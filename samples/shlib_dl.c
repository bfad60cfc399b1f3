/* samples/shlib_dl.c — the library samples/dlopen.c opens with dlopen
 * (tests/libs.sh): a constructor that fills a table (it runs inside
 * dlopen, after the copy's activation: counted), a loop calling into its
 * own DT_NEEDED library, libmtdldep.so (shlib_dldep.c). */
long dl_dep_mix(long x, int k);

static long table[256];

__attribute__((constructor)) static void fill_table(void)
{
    for (int i = 0; i < 256; i++)
        table[i] = (long)i * i % 251;
}

long dl_work(int n, int seed)
{
    long sum = 0;
    for (int i = 0; i < n; i++)
        sum += dl_dep_mix(table[(i + seed) & 255], i);
    return sum;
}
