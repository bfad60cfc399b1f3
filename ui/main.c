/* ui/main.c — `mtool` entry point: git-style subcommands. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui.h"

#ifndef MTOOL_VERSION
#define MTOOL_VERSION "unknown"
#endif

static const mt_command commands[] = {
    {"analyze", "procedures, blocks, CFG, jump tables, loops, call graph, estimability of a binary",
     mt_analyze_usage, mt_cmd_analyze},
    {"instrument", "write a drop-in copy of an executable that counts every block",
     mt_instrument_usage, mt_cmd_instrument},
    {"count", "pass 1: run a program with block counters and summarize what it executed",
     mt_count_usage, mt_cmd_count},
    {"time", "pass 2: time the loops and procedures of a count run, report memory overhead",
     mt_time_usage, mt_cmd_time},
    {"run", "both passes in one command: count, then time and report",
     mt_run_usage, mt_cmd_run},
    {"report", "a run directory's report as one HTML page (and a Callgrind export)",
     mt_report_usage, mt_cmd_report},
    {"history", "stored runs: list, show, trend, diff, regressions, sql, export, gc",
     mt_history_usage, mt_cmd_history},
    {"calibrate", "measure this machine for the cost model (latencies, throughputs, clock ratio)",
     mt_calibrate_usage, mt_cmd_calibrate},
    {"sim", "a trace of memory references through a cache simulator: misses by cause, line use",
     mt_sim_usage, mt_cmd_sim},
};

/* One line whatever the message holds: a path or symbol with a newline or
 * a terminal escape in it is data, its control bytes shown as \xHH. */
void mt_ui_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    mt_ui_progress_erase();
    fprintf(stderr, "%smtool:%s ", mt_ui_style(stderr, MT_UI_ERROR), mt_ui_style(stderr, MT_UI_PLAIN));
    for (int i = 0; i < n; i++) {
        unsigned char c = (unsigned char)msg[i];
        if (mt_is_control(c))
            fprintf(stderr, "\\x%02x", c);
        else
            fputc(c, stderr);
    }
    fputc('\n', stderr);
    free(msg);
}

char *mt_ui_escape(const char *s)
{
    size_t n = 4 * strlen(s) + 6;
    char *buf = mt_xmalloc(n);
    mt_escape_text(buf, n, s);
    return buf;
}

FILE *mt_ui_output_open(mt_outfile *out, const char *path)
{
    if (!path)
        return stdout;
    mt_error err;
    if (mt_outfile_open(out, path, &err) != 0) {
        mt_ui_error("%s", err.msg);
        return NULL;
    }
    return out->fp;
}

int mt_ui_output_close(mt_outfile *out, const char *path)
{
    mt_error err;
    if (path && mt_outfile_commit(out, &err) != 0) {
        mt_ui_error("%s", err.msg);
        return 1;
    }
    if (!path && fflush(stdout) != 0) {
        mt_ui_error("cannot write the output");
        return 1;
    }
    return 0;
}

static const mt_command *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static void print_overview(FILE *fp)
{
    fprintf(fp, "usage: mtool COMMAND [ARGS...]\n\n"
                "mtool finds the loops and procedures of an x86-64 program that lose time to memory.\n\n"
                "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(fp, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(fp, "\n'mtool help COMMAND' describes a command; 'mtool --version' prints the version.\n"
                "Colour on a terminal; '--no-color' (before or after COMMAND) or NO_COLOR=1 turns it off.\n");
}

static int help(int argc, char **argv)
{
    if (argc < 2) {
        print_overview(stdout);
        return 0;
    }
    const mt_command *cmd = find_command(argv[1]);
    if (!cmd) {
        mt_ui_error("no help for unknown command '%s'; see 'mtool help'", argv[1]);
        return 2;
    }
    fputs(cmd->usage, stdout);
    return 0;
}

/* Takes --no-color out of argv before the program's own arguments (the
 * first "--"), wherever it stands: every command takes it. */
static int take_no_color(int argc, char **argv)
{
    int kept = 1;
    bool program = false;
    for (int i = 1; i < argc; i++) {
        program |= !strcmp(argv[i], "--");
        if (!program && !strcmp(argv[i], "--no-color"))
            mt_ui_color_disable();
        else
            argv[kept++] = argv[i];
    }
    argv[kept] = NULL;
    return kept;
}

int main(int argc, char **argv)
{
    /* The per-rank wrapper of an MPI job: every word after it is the program's. */
    if (argc >= 2 && strcmp(argv[1], mt_mpi_rank_command) == 0)
        return mt_cmd_rank(argc - 1, argv + 1);
    argc = take_no_color(argc, argv);
    if (argc < 2) {
        print_overview(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
        printf("mtool %s\n", MTOOL_VERSION);
        return 0;
    }
    if (strcmp(name, "help") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
        return help(argc - 1, argv + 1);
    const mt_command *cmd = find_command(name);
    if (!cmd) {
        mt_ui_error("unknown command '%s'; see 'mtool help'", name);
        return 2;
    }
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(cmd->usage, stdout);
            return 0;
        }
    mt_ui_progress_install();
    int rc = cmd->run(argc - 1, argv + 1);
    mt_ui_progress_erase();
    return rc;
}
