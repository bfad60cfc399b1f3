/* report/internal.h — what only report/'s files share. */
#ifndef MTOOL_REPORT_INTERNAL_H
#define MTOOL_REPORT_INTERNAL_H

#include "report.h"

/* The page's style and script (report/page.css, report/page.js), built in
 * as NUL-terminated text (assets.c). */
extern const char mt_report_page_css[];
extern const char mt_report_page_js[];

/* history.c's allocations (r->history of a report of `nobjects`). */
void mt_report_history_free(mt_report_history *h, size_t nobjects);

#endif
