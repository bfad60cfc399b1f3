/* report/internal.h — what only report/'s files share. */
#ifndef MTOOL_REPORT_INTERNAL_H
#define MTOOL_REPORT_INTERNAL_H

#include "report.h"

/* The page's style and script (report/page.css, report/page.js), built in
 * as NUL-terminated text (assets.c). */
extern const char mt_report_page_css[];
extern const char mt_report_page_js[];

/* history.c's allocations (r->history). */
void mt_report_history_free(mt_report_history *h);
/* The trends of the objects `objects` (stable ids) of run h->run, up to
 * it, and the diff of `baseline` (a RUN spec; NULL: the program's previous
 * run) against it. */
int mt_report_history_views(mt_store *s, mt_report_history *h, const int64_t *objects, size_t n,
                            const char *baseline, mt_error *err);

/* Whether a stored object has processors' figures (a run of cpus > 1). */
bool mt_report_has_mp(const mt_store_object_row *o);

/* stored.c: run `row` (taken) of s built from the history alone; `why`:
 * the reason its run directory is not read, the start of r->stored->missing. */
int mt_report_load_stored(mt_store *s, mt_store_run_row *row, const char *why, mt_report *r,
                          mt_error *err);
void mt_report_stored_free(mt_report_stored *st);
/* The page's figures of a report built from the history (the keys
 * html.c writes from a run directory: binary ... disasm). */
void mt_report_write_stored(FILE *fp, const mt_report *r);

/* html.c's writers, shared with stored.c: a JSON string safe inside a
 * <script> element (NULL: null); ",KEY:NUMBER" (NAN: null); a source file's text (or
 * null, with why); a stored object's name as `mtool history` writes it
 * (PROC, PROC/LOOP-PATH, a data object's name), allocated. */
void mt_report_json_text(FILE *fp, const char *s);
void mt_report_json_key_number(FILE *fp, const char *key, double v);
/* ",KEY:COUNT", a count held in a double written whole (NAN: null). */
void mt_report_json_key_count(FILE *fp, const char *key, double v);
/* A count held in a double (NAN: null), written whole. */
void mt_report_json_count(FILE *fp, double v);
void mt_report_write_source(FILE *fp, const char *path);
char *mt_report_stored_name(const mt_store_object_row *o);
/* A stored object's name and place, as `mtool history` names them (PROC,
 * PROC/LOOP-PATH; FILE:LINE), unescaped (the page shows text): an open
 * JSON object {"name", "kind", "place" the caller adds to and closes. */
void mt_report_write_stored_object(FILE *fp, const mt_store_object_row *o);

/* processors.c: the history view's processors' figures of h->run (a
 * simulated run of cpus > 1: ",processors:{...}"; nothing for another). */
void mt_report_write_processors(FILE *fp, const mt_report_history *h);

#endif
