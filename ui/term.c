/* ui/term.c — colour on the terminal: only where it helps reading (the
 * overhead column, errors), only when the output is a terminal that wants
 * it.  Colour is off when the stream is not a terminal (a file, a pipe, a
 * report kept in RUNDIR), when NO_COLOR is set to anything but the empty
 * string (https://no-color.org), when TERM is unset or "dumb", and after
 * --no-color.  The escapes are SGR sequences every terminal since the VT100
 * understands; program-derived text never carries one (mt_ui_escape). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
