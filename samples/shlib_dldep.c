/* samples/shlib_dldep.c — the library libmtdl.so needs (DT_NEEDED), loaded
 * only when the program dlopens libmtdl.so (tests/libs.sh). */
long dl_dep_mix(long x, int k)
{
    return k & 1 ? x * 3 + k : x ^ (k >> 2);
}
