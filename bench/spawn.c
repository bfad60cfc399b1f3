/* bench/spawn.c — runs a command N times in a row, each waited for, with
 * stdout and stderr sent to /dev/null, and prints "wall SECONDS user
 * SECONDS sys SECONDS" for all N together (the children's rusage): what a
 * test suite that starts thousands of short processes pays.
 *
 *   spawn N CMD [ARGS...] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double seconds(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6; }

int main(int argc, char **argv)
{
    int n = argc > 2 ? atoi(argv[1]) : 0;
    if (n <= 0) {
        fprintf(stderr, "usage: spawn N CMD [ARGS...]\n");
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("spawn: fork");
            return 2;
        }
        if (pid == 0) {
            int fd = open("/dev/null", O_WRONLY);
            dup2(fd, 1);
            dup2(fd, 2);
            execvp(argv[2], argv + 2);
            _exit(127);
        }
        int status;
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) == 127) {
            fprintf(stderr, "spawn: %s did not run or exit normally\n", argv[2]);
            return 2;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    printf("wall %.6f user %.6f sys %.6f\n",
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9,
           seconds(ru.ru_utime), seconds(ru.ru_stime));
    return 0;
}
