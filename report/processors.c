/* report/processors.c — the history view's figures of a simulated run of
 * more than one CPU (report/history.c loads them): per code and data object
 * its coherence misses and events and where its references were served
 * (store.h's mp figures, named as the metrics: mt_store_mp_name), the
 * --what-if remedies with what each saves over the run, the top problems
 * with the remedy proposed for each, per thread the same figures (and its
 * misses per level, the stall of where its references were served), and,
 * against the baseline, each object's figures before and after.
 *
 * Conventions: counts are written whole; a saving is negative when the
 * remedy costs more; null: no such figure (a level slot the machine lacks,
 * cycles without latencies, a baseline of one CPU). */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "internal.h"

/* ",KEY:{name: figure, ...}" of the nine processors' figures. */
static void write_figures(FILE *fp, const char *key, const double *mp)
{
    fprintf(fp, ",\"%s\":{", key);
    for (unsigned k = 0; k < MT_STORE_NMP; k++) {
        fprintf(fp, "%s\"%s\":", k ? "," : "", mt_store_mp_name(k));
        mt_report_json_count(fp, mp[k]);
    }
    fputc('}', fp);
}

/* ",KEY:{...}" of o's processors' figures. */
static void write_mp_figures(FILE *fp, const char *key, const mt_store_object_row *o)
{
    double mp[MT_STORE_NMP];
    for (unsigned k = 0; k < MT_STORE_NMP; k++)
        mp[k] = mt_store_metric_value(o, (mt_store_metric){MT_METRIC_SIM_MP, k, -1});
    write_figures(fp, key, mp);
}

/* "KEY":{"D1": n, ...} over the level slots the machine has. */
static void write_slot_counts(FILE *fp, const char *key, const double *per_slot)
{
    fprintf(fp, "\"%s\":{", key);
    bool first = true;
    for (unsigned slot = 0; slot < MT_STORE_SIM_LEVELS; slot++)
        if (!isnan(per_slot[slot])) {
            fprintf(fp, "%s\"%s\":", first ? "" : ",", mt_store_sim_level_name(slot));
            mt_report_json_count(fp, per_slot[slot]);
            first = false;
        }
    fputc('}', fp);
}

/* "KEY":{...} of per-slot counts, MT_STORE_NO_COUNT where the machine has
 * no such level. */
static void write_slot_misses(FILE *fp, const char *key, const uint64_t *per_slot)
{
    double misses[MT_STORE_SIM_LEVELS];
    for (unsigned slot = 0; slot < MT_STORE_SIM_LEVELS; slot++)
        misses[slot] = per_slot[slot] == MT_STORE_NO_COUNT ? NAN : (double)per_slot[slot];
    write_slot_counts(fp, key, misses);
}

/* An array's element (the first without a comma) opened with two texts. */
static void open_with_texts(FILE *fp, size_t i, const char *k1, const char *v1, const char *k2,
                            const char *v2)
{
    fprintf(fp, "%s{\"%s\":", i ? "," : "", k1);
    mt_report_json_text(fp, v1);
    fprintf(fp, ",\"%s\":", k2);
    mt_report_json_text(fp, v2);
}

static void write_saving(FILE *fp, const mt_store_saving *v)
{
    double misses[MT_STORE_SIM_LEVELS];
    for (unsigned slot = 0; slot < MT_STORE_SIM_LEVELS; slot++)
        misses[slot] = v->misses[slot] == MT_STORE_NO_SAVING ? NAN : (double)v->misses[slot];
    fputc('{', fp);
    write_slot_counts(fp, "misses", misses);
    mt_report_json_key_count(fp, "coherence", (double)v->coherence);
    mt_report_json_key_count(fp, "sharing", (double)v->sharing);
    mt_report_json_key_count(fp, "remote", (double)v->remote);
    mt_report_json_key_number(fp, "cycles", v->cycles);
    fputc('}', fp);
}

static void write_remedies(FILE *fp, const mt_report_history *h)
{
    fputs("\"remedies\":[", fp);
    for (size_t i = 0; i < h->nremedies; i++) {
        const mt_store_remedy *m = &h->remedies[i];
        open_with_texts(fp, i, "kind", m->kind, "text", m->text);
        fputs(",\"saved\":", fp);
        write_saving(fp, &m->saved);
        fputc('}', fp);
    }
    fputc(']', fp);
}

/* Each problem with its remedy's index ("proposed", null: none saves it). */
static void write_problems(FILE *fp, const mt_report_history *h)
{
    fputs(",\"problems\":[", fp);
    for (size_t i = 0; i < h->nproblems; i++) {
        const mt_store_problem *q = &h->problems[i];
        open_with_texts(fp, i, "code", q->code, "data", q->data);
        fputc(',', fp);
        write_slot_misses(fp, "misses", q->misses);
        mt_report_json_key_count(fp, "true_sharing", (double)q->true_sharing);
        mt_report_json_key_count(fp, "false_sharing", (double)q->false_sharing);
        mt_report_json_key_count(fp, "remote", (double)q->remote);
        mt_report_json_key_number(fp, "cycles", q->cycles);
        if (q->remedy < 0) {
            fputs(",\"proposed\":null,\"saved\":null}", fp);
            continue;
        }
        fprintf(fp, ",\"proposed\":%d,\"saved\":", q->remedy);
        write_saving(fp, &q->saved);
        fputc('}', fp);
    }
    fputc(']', fp);
}

/* The run's objects with processors' figures, code objects first (the
 * store's order within each). */
static void write_objects(FILE *fp, const mt_report_history *h)
{
    fputs("\"objects\":[", fp);
    bool first = true;
    for (int data = 0; data <= 1; data++)
        for (size_t i = 0; i < h->nmp_rows; i++) {
            const mt_store_object_row *o = &h->mp_rows[i];
            if (!mt_report_has_mp(o) || (o->data_kind != NULL) != data)
                continue;
            fputs(first ? "" : ",", fp);
            mt_report_write_stored_object(fp, o);
            write_mp_figures(fp, "figures", o);
            fputc('}', fp);
            first = false;
        }
    fputc(']', fp);
}

static bool any_mp_figure(const mt_store_object_row *o)
{
    for (unsigned k = 0; k < MT_STORE_NMP; k++)
        if (mt_store_metric_value(o, (mt_store_metric){MT_METRIC_SIM_MP, k, -1}) > 0)
            return true;
    return false;
}

/* The objects paired with the baseline's, both with processors' figures
 * and some not zero: before (the baseline's) and after. */
static void write_diff(FILE *fp, const mt_report_history *h)
{
    const mt_store_diff *d = &h->diff;
    fputs(",\"diff\":[", fp);
    bool first = true;
    for (size_t j = 0; h->baseline && j < d->nb; j++) {
        uint32_t i = d->b_to_a[j];
        if (i == MT_NONE || !mt_report_has_mp(&d->b[j]) || !mt_report_has_mp(&d->a[i]) ||
            (!any_mp_figure(&d->b[j]) && !any_mp_figure(&d->a[i])))
            continue;
        fputs(first ? "" : ",", fp);
        mt_report_write_stored_object(fp, &d->b[j]);
        write_mp_figures(fp, "before", &d->a[i]);
        write_mp_figures(fp, "after", &d->b[j]);
        fputc('}', fp);
        first = false;
    }
    fputc(']', fp);
}

static void write_threads(FILE *fp, const mt_report_history *h)
{
    fputs(",\"threads\":[", fp);
    for (size_t i = 0; i < h->nthreads; i++) {
        const mt_store_sim_thread *t = &h->threads[i];
        fprintf(fp, "%s{\"thread\":%" PRIu32 ",\"cpu\":%" PRIu32 ",\"refs\":%" PRIu64 ",",
                i ? "," : "", t->thread, t->cpu, t->refs);
        double mp[MT_STORE_NMP];
        write_slot_misses(fp, "misses", t->misses);
        for (unsigned k = 0; k < MT_STORE_NMP; k++)
            mp[k] = (double)t->mp[k];
        write_figures(fp, "figures", mp);
        mt_report_json_key_number(fp, "stall_cycles", t->stall_cycles);
        fputc('}', fp);
    }
    fputc(']', fp);
}

void mt_report_write_processors(FILE *fp, const mt_report_history *h)
{
    if (!h->nmp_rows)
        return;
    fputs(",\"processors\":{", fp);
    write_objects(fp, h);
    write_diff(fp, h);
    write_threads(fp, h);
    if (h->nremedies) {
        fputs(",\"what_if\":{", fp);
        write_remedies(fp, h);
        write_problems(fp, h);
        fputc('}', fp);
    } else {
        fputs(",\"what_if\":null", fp);
    }
    fputc('}', fp);
}
