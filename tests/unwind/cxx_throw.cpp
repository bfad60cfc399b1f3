// tests/unwind/cxx_throw.cpp — C++ exceptions through relocated frames:
// std::stoi throwing std::invalid_argument (thrown inside libstdc++) through
// frames with cleanups, catch by base class, rethrow, catch (...), a dynamic
// exception specification (-std=gnu++14: an LSDA spec list), std::regex_error
// thrown from regex templates instantiated in the program, and callee-saved
// registers checked after the catch.
#include <cstdio>
#include <cstring>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#define NOINLINE __attribute__((noinline))

static volatile int sink;

NOINLINE int parse(const std::string &s)
{
    std::string copy = s + "";           // a cleanup in this frame
    return std::stoi(copy);
}

NOINLINE int parse_all(const std::vector<std::string> &v)
{
    int total = 0;
    for (const auto &s : v) {
        std::string label = "item " + s;  // another cleanup
        total += parse(s);
        sink = (int)label.size();
    }
    return total;
}

NOINLINE int by_base(const std::vector<std::string> &v)
{
    try {
        return parse_all(v);
    } catch (const std::exception &e) {   // std::invalid_argument via its base
        std::printf("by_base caught: %s\n", e.what());
        return -1;
    }
}

NOINLINE int rethrow(const std::vector<std::string> &v)
{
    try {
        return parse_all(v);
    } catch (const std::invalid_argument &) {
        sink = 1;
        throw;
    }
}

NOINLINE int catch_all(const std::vector<std::string> &v)
{
    try {
        return rethrow(v);
    } catch (...) {
        return -2;
    }
}

NOINLINE int with_spec(int x) throw(std::out_of_range, std::invalid_argument)
{
    if (x > 2)
        throw std::out_of_range("with_spec");
    return x;
}

NOINLINE int regex_count(const char *pattern, const char *text)
{
    try {
        std::regex re(pattern);
        auto b = std::cregex_iterator(text, text + std::strlen(text), re);
        return (int)std::distance(b, std::cregex_iterator());
    } catch (const std::regex_error &e) {
        std::printf("regex_error for \"%s\": code %d\n", pattern, (int)e.code());
        return -3;
    }
}

// Values live in callee-saved registers across a call that throws.
NOINLINE long registers_survive(int n)
{
    long a = n * 3L + sink, b = n * 5L + sink, c = n * 7L + sink, d = n * 11L + sink,
         e = n * 13L + sink, f = n * 17L + sink;
    try {
        with_spec(n);
        parse("x");
    } catch (const std::out_of_range &) {
        return a + b + c + d + e + f;
    } catch (const std::invalid_argument &) {
        return -(a + b + c + d + e + f);
    }
    return 0;
}

int main()
{
    std::vector<std::string> good = {"1", "22", "333"}, bad = {"4", "five", "6"};
    std::printf("by_base good %d\n", by_base(good));
    std::printf("by_base bad %d\n", by_base(bad));
    std::printf("catch_all good %d bad %d\n", catch_all(good), catch_all(bad));
    long sum = 0;
    for (int i = 0; i < 6; i++)
        sum += registers_survive(i);
    std::printf("registers %ld\n", sum);
    std::printf("regex %d\n", regex_count("a+b", "aab ab b aaab"));
    std::printf("regex %d\n", regex_count("a(b", "ab"));
    std::printf("regex %d\n", regex_count("[z-a]", "ab"));
    try {
        parse("99999999999999999999");
    } catch (const std::out_of_range &e) {
        std::printf("main caught out_of_range\n");
    }
    return 0;
}
