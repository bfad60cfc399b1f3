// exceptions.cpp — C++ exceptions thrown through several frames:
//   main → catcher → middle → thrower; thrower throws, middle's local
//   object is destroyed by a cleanup landing pad, catcher's catch handler
//   (another landing pad) takes it.  Landing pads are reached only by the
//   unwinder, through .gcc_except_table, never by a branch.
#include <cstdio>
#include <stdexcept>

#define NOINLINE __attribute__((noinline))

static volatile int sink;

struct Guard {
    int id;
    explicit Guard(int i) : id(i) { sink = sink + 1; }
    ~Guard() { sink = sink + id; }
};

NOINLINE int thrower(int x)
{
    if (x % 3 == 0)
        throw std::runtime_error("multiple of three");
    return x * 2;
}

NOINLINE int middle(int x)
{
    Guard g(x);
    return thrower(x + 1) + 1;
}

NOINLINE int catcher(int x)
{
    try {
        return middle(x);
    } catch (const std::runtime_error &e) {
        return -1;
    }
}

int main()
{
    long total = 0;
    for (int i = 0; i < 30; i++)
        total += catcher(i);
    std::printf("checksum %ld %d\n", total, (int)sink);
    return 0;
}
