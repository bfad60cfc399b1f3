/* samples/shlib_init.c — a shared library whose constructor runs its own
 * code before the program's entry, where the runtime has not set %gs yet
 * (tests/libs.sh): its copy must run the original bytes there. */
static volatile long started;

static long steps(int n)
{
    long s = 0;
    for (int i = 0; i < n; i++)
        s += i % 7;
    return s;
}

__attribute__((constructor)) static void at_load(void) { started = steps(1000); }

long shlib_init_value(void) { return started + steps(10); }
