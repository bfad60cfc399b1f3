/* ui/term.c — colour on the terminal: only where it helps reading (the
 * overhead column, errors), only when the output is a terminal that wants
 * it.  Colour is off when the stream is not a terminal (a file, a pipe, a
 * report kept in RUNDIR), when NO_COLOR is set to anything but the empty
 * string (https://no-color.org), when TERM is unset or "dumb", and after
 * --no-color.  The escapes are SGR sequences every terminal since the VT100
 * understands; program-derived text never carries one (mt_ui_escape). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "../common/progress.h"
#include "ui.h"

static bool color_disabled;

void mt_ui_color_disable(void) { color_disabled = true; }

static bool colored(FILE *fp)
{
    if (color_disabled || (fp != stdout && fp != stderr))
        return false;
    const char *no_color = getenv("NO_COLOR"), *term = getenv("TERM");
    if ((no_color && no_color[0]) || !term || !strcmp(term, "dumb"))
        return false;
    return isatty(fileno(fp));
}

const char *mt_ui_style(FILE *fp, mt_ui_style_kind kind)
{
    static const char *const sgr[] = {
        [MT_UI_PLAIN] = "\033[0m", [MT_UI_BOLD] = "\033[1m",  [MT_UI_DIM] = "\033[2m",
        [MT_UI_RED] = "\033[31m",  [MT_UI_YELLOW] = "\033[33m", [MT_UI_GREEN] = "\033[32m",
        [MT_UI_ERROR] = "\033[1;31m",
    };
    return colored(fp) ? sgr[kind] : "";
}

mt_ui_style_kind mt_ui_overhead_style(double percent)
{
    /* The bands of the report's reading: a memory-bound object (at least
     * half again its prediction), a visible cost (beyond the model's
     * checked error of about 10%), and the model's own error (below). */
    return percent >= 50 ? MT_UI_RED : percent >= 10 ? MT_UI_YELLOW : percent < -10 ? MT_UI_DIM
                                                                                   : MT_UI_PLAIN;
}

/* ---- the progress line (common/progress.h) ------------------------------
 * On stderr when it is a terminal that takes colour's rules (not dumb: the
 * line is redrawn with a carriage return and erased with EL), once the work
 * has lasted MTOOL_PROGRESS_DELAY seconds (default 1; git's
 * GIT_PROGRESS_DELAY), never wider than the terminal, since a wrapped line
 * cannot be taken back with a carriage return. */

static uint64_t progress_started_ns, progress_delay_ns;
static bool progress_shown;

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void progress_erase(void)
{
    if (progress_shown)
        fputs("\r\033[K", stderr);
    progress_shown = false;
}

static void draw_progress(const char *stage, uint64_t done, uint64_t total)
{
    if (!stage) {
        progress_erase();
        return;
    }
    if (monotonic_ns() - progress_started_ns < progress_delay_ns)
        return;
    char line[256];
    int n = total ? snprintf(line, sizeof line, "mtool: %s: %" PRIu64 " of %" PRIu64 " (%.0f%%)",
                             stage, done, total, 100.0 * (double)done / (double)total)
                  : snprintf(line, sizeof line, "mtool: %s: %" PRIu64, stage, done);
    struct winsize ws;
    size_t width = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col - 1 : 79;
    if (n > 0 && (size_t)n > width && width < sizeof line)
        line[width] = '\0';
    fprintf(stderr, "\r\033[K%s", line);
    fflush(stderr);
    progress_shown = true;
}

void mt_ui_progress_install(void)
{
    const char *term = getenv("TERM"), *delay = getenv("MTOOL_PROGRESS_DELAY");
    if (!isatty(STDERR_FILENO) || !term || !strcmp(term, "dumb"))
        return;
    double seconds = delay && *delay ? atof(delay) : 1.0;
    progress_delay_ns = seconds > 0 ? (uint64_t)(seconds * 1e9) : 0;
    progress_started_ns = monotonic_ns();
    mt_progress_set_hook(draw_progress);
}

void mt_ui_progress_erase(void) { progress_erase(); }

/* ---- width-aware tables -------------------------------------------------- */

enum { NARROWEST = 24 };

static size_t terminal_width(FILE *fp)
{
    struct winsize ws;
    if (!isatty(fileno(fp)) || ioctl(fileno(fp), TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0)
        return 0;
    return ws.ws_col;
}

void mt_ui_last_column(FILE *fp, size_t column, const char *text)
{
    size_t width = terminal_width(fp), len = strlen(text);
    size_t room = width > column + NARROWEST ? width - column : NARROWEST;
    if (width == 0 || column + len <= width || len <= room)
        fprintf(fp, "%s\n", text);
    else {
        size_t cut = room - 3;
        while (cut > 0 && ((unsigned char)text[cut] & 0xc0) == 0x80)
            cut--; /* not inside a UTF-8 sequence (the em dash of a note) */
        fprintf(fp, "%.*s...\n", (int)cut, text);
    }
}
