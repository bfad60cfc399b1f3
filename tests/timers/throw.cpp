// throw.cpp — C++ exceptions through timed objects, for tests/timers/run.sh:
//   catch_inside: its loop is left by an exception thrown in a callee and
//       caught by catch_inside itself: 4 entries of each; the loop is
//       stopped at the landing pad (a trampoline the rewritten LSDA points
//       at): no non-local exit; the thrower's frames are (4);
//   main's second loop: the exception lands in main, goes through main.cold
//       and back into the loop, which must stay active (no exit);
//   recurse: throws at depth 10, caught in main: 3 outermost entries, 30
//       recursive ones, 3 non-local exits.
#include <cstdio>
#include <stdexcept>

#define NOINLINE __attribute__((noinline))

volatile long sink;

NOINLINE void thrower(int i)
{
    if (i == 7)
        throw std::runtime_error("seven");
    sink += i;
}

NOINLINE long catch_inside(int n)
{
    long s = 0;
    try {
        for (int i = 0; i < n; i++) {
            thrower(i);
            s += i;
        }
    } catch (const std::exception &) {
        s = -s;
    }
    return s;
}

NOINLINE void recurse(int depth)
{
    if (depth == 0)
        throw std::runtime_error("deep");
    recurse(depth - 1);
    sink++;
}

int main()
{
    long total = 0;
    for (int k = 0; k < 4; k++)
        total += catch_inside(20);
    for (int k = 0; k < 3; k++) {
        try {
            recurse(10);
        } catch (const std::exception &e) {
            total += 1000;
        }
    }
    std::printf("total %ld\n", total);
    return 0;
}
