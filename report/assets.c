/* report/assets.c — the page's style and script, kept as the files they are
 * (report/page.css, report/page.js: edited, linted and read as CSS and
 * JavaScript) and built into mtool as NUL-terminated data, so that a
 * report needs nothing beside the binary. */
#include "internal.h"

__asm__(".section .rodata\n"
        ".global mt_report_page_css\n"
        "mt_report_page_css:\n"
        ".incbin \"report/page.css\"\n"
        ".byte 0\n"
        ".global mt_report_page_js\n"
        "mt_report_page_js:\n"
        ".incbin \"report/page.js\"\n"
        ".byte 0\n"
        ".previous\n");
