/* report/callgrind.c — the report's lines in the Callgrind profile format
 * (valgrind's "Callgrind Format Specification"), for callgrind_annotate and
 * KCachegrind: one cost line per source line of each procedure, with the
 * events predicted, measured and overhead (core cycles) and memops
 * (executed memory operations).  Costs are whole numbers: cycles are
 * rounded to the nearest. */
#include <math.h>

#include "internal.h"

/* A name in the format's text: one line, control bytes as \xHH. */
static void write_name(FILE *fp, const char *s)
{
    char buf[4096];
    mt_escape_text(buf, sizeof buf, s);
    fputs(buf, fp);
}

static void write_header(FILE *fp, const mt_report *r)
{
    fputs("# callgrind format\nversion: 1\ncreator: mtool " MTOOL_VERSION "\ncmd:", fp);
    for (char **a = r->pass1->argv; *a; a++) {
        fputc(' ', fp);
        write_name(fp, *a);
    }
    fputs("\npositions: line\nevents: predicted measured overhead memops\n\n", fp);
}

void mt_report_write_callgrind(FILE *fp, const mt_report *r)
{
    write_header(fp, r);
    for (size_t i = 0; i < r->nlines; i++) {
        const mt_report_line *l = &r->lines[i];
        /* Names are given in full once, then by their number (compression). */
        if (i == 0 || l->file != r->lines[i - 1].file || l->proc != r->lines[i - 1].proc) {
            fprintf(fp, "fl=(%u) ", l->file + 1);
            write_name(fp, l->file ? r->prog->files[l->file] : "???");
            fprintf(fp, "\nfn=(%u) ", l->proc + 1);
            write_name(fp, r->prog->procs[l->proc].name);
            fputc('\n', fp);
        }
        double predicted = round(l->predicted);
        fprintf(fp, "%u %.0f %.0f %.0f %llu\n", l->line, predicted,
                predicted + round(l->overhead), round(l->overhead),
                (unsigned long long)l->memops);
    }
}
