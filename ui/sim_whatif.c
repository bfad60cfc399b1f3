/* ui/sim_whatif.c — `mtool sim --what-if`: each remedy simulated on the
 * run's references (sim/whatif.c) with what it saves, and per top problem
 * (code x data cell) the remedy that saves it most, as text or JSON
 * (docs/SIMULATOR.md, "What-if remedies"). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ui.h"

/* ---- what a remedy is, in words ---- */

void mt_sim_remedy_text(const mt_whatif_remedy *r, const mt_data_map *d, char *buf, size_t n)
{
    char name[MT_SIM_CODE_NAME_MAX];
    switch (r->kind) {
    case MT_WHATIF_PAD_WORDS:
    case MT_WHATIF_PAD_ROWS:
        mt_sim_object_name(d, NULL, true, r->data, name, sizeof name);
        if (r->kind == MT_WHATIF_PAD_WORDS)
            snprintf(buf, n, "pad %s: each 8-byte word on a %" PRIu32 "-byte line of its own",
                     name, r->line);
        else
            snprintf(buf, n, "pad %s: a %" PRIu32 "-byte line after every %" PRIu64
                             "-byte row", name, r->line, r->row);
        return;
    case MT_WHATIF_LINE:
        snprintf(buf, n, "line of %" PRIu32 " bytes at every level", r->line);
        return;
    case MT_WHATIF_PLACEMENT:
        snprintf(buf, n, "placement %s", mt_whatif_placement_name(r->placement));
        return;
    case MT_WHATIF_MAPPING: {
        int k = snprintf(buf, n, "threads on CPUs");
        for (unsigned t = 0; t < r->ncpu_map && k > 0 && (size_t)k < n; t++)
            k += snprintf(buf + k, n - (size_t)k, "%s%u", t ? "," : " ", r->cpu_map[t]);
        return;
    }
    }
}

static uint64_t level_misses(const mt_whatif_figures *f, unsigned l)
{
    uint64_t v = 0;
    for (int c = 0; c <= MT_WHATIF_COHERENCE; c++)
        v += f->misses[l][c];
    return v;
}

static int64_t saved_misses(const mt_whatif_figures *base, const mt_whatif_figures *now,
                            unsigned l, int cause)
{
    return (int64_t)base->misses[l][cause] - (int64_t)now->misses[l][cause];
}

/* ---- text ---- */

static void text_cycles(FILE *fp, double base, double now)
{
    if (base < 0 || now < 0)
        fprintf(fp, " %14s", "-");
    else
        fprintf(fp, " %14.0f", base - now);
}

void mt_sim_whatif_saving(const mt_sim *s, const mt_whatif_figures *base,
                          const mt_whatif_figures *now, mt_sim_saving *out)
{
    *out = (mt_sim_saving){.cycles = base->cycles < 0 || now->cycles < 0
                                         ? NAN : base->cycles - now->cycles};
    for (unsigned l = 0; l < mt_sim_level_count(s); l++) {
        out->level[l] = (int64_t)level_misses(base, l) - (int64_t)level_misses(now, l);
        out->conflict += saved_misses(base, now, l, MT_SIM_CONFLICT);
        out->coherence += saved_misses(base, now, l, MT_WHATIF_COHERENCE);
    }
    out->sharing = (int64_t)(base->true_sharing + base->false_sharing) -
                   (int64_t)(now->true_sharing + now->false_sharing);
    out->remote = (int64_t)base->remote - (int64_t)now->remote;
}

/* One row: saved misses per level, then conflict and coherence summed over
 * the levels, remote references, cycles. */
static void text_saved(FILE *fp, const mt_sim *s, const mt_whatif_figures *base,
                       const mt_whatif_figures *now)
{
    mt_sim_saving v;
    mt_sim_whatif_saving(s, base, now, &v);
    for (unsigned l = 0; l < mt_sim_level_count(s); l++)
        fprintf(fp, " %10" PRId64, v.level[l]);
    fprintf(fp, " %10" PRId64 " %10" PRId64 " %10" PRId64 " %10" PRId64, v.conflict, v.coherence,
            v.sharing, v.remote);
    text_cycles(fp, base->cycles, now->cycles);
    fputc('\n', fp);
}

static void text_heads(FILE *fp, const mt_sim *s, const char *first)
{
    fprintf(fp, "  %-66s", first);
    for (unsigned l = 0; l < mt_sim_level_count(s); l++)
        fprintf(fp, " %10s", mt_sim_level(s, l)->desc->name);
    fprintf(fp, " %10s %10s %10s %10s %14s\n", "conflict", "coherence", "sharing", "remote",
            "cycles");
}

static void text_remedies(FILE *fp, const mt_sim *s, const mt_whatif_report *w,
                          const mt_data_map *d)
{
    fprintf(fp, "\nwhat-if remedies (the run's %" PRIu64 " references simulated again, one "
                "change each; misses saved per level, then conflict and coherence misses over "
                "the levels, sharing misses, remote references and stall cycles saved; "
                "negative: more)%s:\n",
            w->refs, w->exact ? "" : " [WARNING: the unchanged replay did not give the run's "
                                     "misses]");
    text_heads(fp, s, "remedy");
    for (unsigned i = 0; i < w->nremedies; i++) {
        char raw[MT_SIM_REMEDY_TEXT_MAX];
        mt_sim_remedy_text(&w->remedy[i], d, raw, sizeof raw);
        char *text = mt_ui_escape(raw);
        fprintf(fp, "  %-66s", text);
        free(text);
        text_saved(fp, s, &w->base, &w->remedy[i].total);
    }
}

static void text_problem(FILE *fp, const mt_sim *s, const mt_whatif_report *w, unsigned c,
                         const mt_data_map *d, const mt_program *prog)
{
    char code[MT_SIM_CODE_NAME_MAX], data[MT_SIM_CODE_NAME_MAX];
    mt_sim_code_name(prog, w->code[c], code, sizeof code);
    mt_sim_object_name(d, prog, true, w->data[c], data, sizeof data);
    char *ecode = mt_ui_escape(code), *edata = mt_ui_escape(data);
    const mt_whatif_figures *f = &w->base_cell[c];
    fprintf(fp, "  %s x %s:", ecode, edata);
    free(ecode);
    free(edata);
    for (unsigned l = 0; l < mt_sim_level_count(s); l++)
        fprintf(fp, " %s %" PRIu64 " (conflict %" PRIu64 ")", mt_sim_level(s, l)->desc->name,
                level_misses(f, l), f->misses[l][MT_SIM_CONFLICT]);
    fprintf(fp, ", true sharing %" PRIu64 ", false sharing %" PRIu64 "\n", f->true_sharing,
            f->false_sharing);
    if (w->best[c] < 0) {
        fprintf(fp, "    no remedy tried saves it\n");
        return;
    }
    const mt_whatif_remedy *r = &w->remedy[w->best[c]];
    char raw[MT_SIM_REMEDY_TEXT_MAX];
    mt_sim_remedy_text(r, d, raw, sizeof raw);
    char *text = mt_ui_escape(raw);
    fprintf(fp, "    proposed: %-54s", text);
    free(text);
    text_saved(fp, s, f, &r->cell[c]);
}

void mt_sim_whatif_text(FILE *fp, const mt_sim *s, const mt_whatif_report *w,
                        const mt_data_map *d, const mt_program *prog)
{
    if (!w)
        return;
    text_remedies(fp, s, w, d);
    fprintf(fp, "\ntop problems (code x data: the most conflict misses at a level + coherence "
                "misses + remote references) and the remedy that saves each most (its saving in that cell, the "
                "whole run no worse):\n");
    if (!w->ncells)
        fprintf(fp, "  none: no conflict or coherence miss, no remote reference\n");
    for (unsigned c = 0; c < w->ncells; c++)
        text_problem(fp, s, w, c, d, prog);
}

/* ---- JSON ---- */

/* Cycles, or null when the description gives no latency. */
static void json_cycles(FILE *fp, double v, bool known)
{
    if (!known)
        fprintf(fp, "null");
    else
        mt_json_number(fp, v);
}

static const char *cause_name(int c)
{
    return c == MT_WHATIF_COHERENCE ? "coherence" : mt_sim_cause_name((mt_sim_cause)c);
}

static void json_figures(FILE *fp, const mt_sim *s, const mt_whatif_figures *f)
{
    fprintf(fp, "{\"misses\": {");
    for (unsigned l = 0; l < mt_sim_level_count(s); l++) {
        fprintf(fp, "%s\"%s\": {", l ? ", " : "", mt_sim_level(s, l)->desc->name);
        for (int c = 0; c <= MT_WHATIF_COHERENCE; c++)
            fprintf(fp, "%s\"%s\": %" PRIu64, c ? ", " : "", cause_name(c), f->misses[l][c]);
        fprintf(fp, ", \"total\": %" PRIu64 "}", level_misses(f, l));
    }
    fprintf(fp, "}, \"true_sharing\": %" PRIu64 ", \"false_sharing\": %" PRIu64
                ", \"remote\": %" PRIu64 ", \"cycles\": ",
            f->true_sharing, f->false_sharing, f->remote);
    json_cycles(fp, f->cycles, f->cycles >= 0);
    fprintf(fp, "}");
}

/* base - now, in json_figures' shape (signed). */
static void json_saved(FILE *fp, const mt_sim *s, const mt_whatif_figures *base,
                       const mt_whatif_figures *now)
{
    fprintf(fp, "{\"misses\": {");
    for (unsigned l = 0; l < mt_sim_level_count(s); l++) {
        fprintf(fp, "%s\"%s\": {", l ? ", " : "", mt_sim_level(s, l)->desc->name);
        for (int c = 0; c <= MT_WHATIF_COHERENCE; c++)
            fprintf(fp, "%s\"%s\": %" PRId64, c ? ", " : "", cause_name(c),
                    saved_misses(base, now, l, c));
        fprintf(fp, ", \"total\": %" PRId64 "}",
                (int64_t)level_misses(base, l) - (int64_t)level_misses(now, l));
    }
    fprintf(fp, "}, \"true_sharing\": %" PRId64 ", \"false_sharing\": %" PRId64
                ", \"remote\": %" PRId64 ", \"cycles\": ",
            (int64_t)base->true_sharing - (int64_t)now->true_sharing,
            (int64_t)base->false_sharing - (int64_t)now->false_sharing,
            (int64_t)base->remote - (int64_t)now->remote);
    json_cycles(fp, base->cycles - now->cycles, base->cycles >= 0 && now->cycles >= 0);
    fprintf(fp, "}");
}

static void json_remedy_head(FILE *fp, const mt_whatif_remedy *r, const mt_data_map *d)
{
    char text[MT_SIM_REMEDY_TEXT_MAX];
    mt_sim_remedy_text(r, d, text, sizeof text);
    fprintf(fp, "\"kind\": \"%s\", \"text\": ", mt_whatif_kind_name(r->kind));
    mt_json_string(fp, text);
    if (r->kind == MT_WHATIF_PAD_WORDS || r->kind == MT_WHATIF_PAD_ROWS) {
        char name[MT_SIM_CODE_NAME_MAX];
        mt_sim_object_name(d, NULL, true, r->data, name, sizeof name);
        fprintf(fp, ", \"data\": %" PRIu32 ", \"data_name\": ", r->data);
        mt_json_string(fp, name);
        fprintf(fp, ", \"line\": %" PRIu32, r->line);
        if (r->kind == MT_WHATIF_PAD_ROWS)
            fprintf(fp, ", \"row\": %" PRIu64, r->row);
    } else if (r->kind == MT_WHATIF_LINE)
        fprintf(fp, ", \"line\": %" PRIu32, r->line);
    else if (r->kind == MT_WHATIF_PLACEMENT)
        fprintf(fp, ", \"placement\": \"%s\"", mt_whatif_placement_name(r->placement));
    else {
        fprintf(fp, ", \"cpu_map\": [");
        for (unsigned t = 0; t < r->ncpu_map; t++)
            fprintf(fp, "%s%u", t ? ", " : "", r->cpu_map[t]);
        fprintf(fp, "]");
    }
}

static void json_problem(FILE *fp, const mt_sim *s, const mt_whatif_report *w, unsigned c,
                         const mt_data_map *d, const mt_program *prog)
{
    char code[MT_SIM_CODE_NAME_MAX], data[MT_SIM_CODE_NAME_MAX];
    mt_sim_code_name(prog, w->code[c], code, sizeof code);
    mt_sim_object_name(d, prog, true, w->data[c], data, sizeof data);
    fprintf(fp, "%s\n      {\"code\": %" PRIu32 ", \"code_name\": ", c ? "," : "", w->code[c]);
    mt_json_string(fp, code);
    fprintf(fp, ", \"data\": %" PRIu32 ", \"data_name\": ", w->data[c]);
    mt_json_string(fp, data);
    fprintf(fp, ", \"figures\": ");
    json_figures(fp, s, &w->base_cell[c]);
    if (w->best[c] < 0)
        fprintf(fp, ", \"best\": null");
    else
        fprintf(fp, ", \"best\": %d", w->best[c]);
    fprintf(fp, ",\n       \"saved\": [");
    for (unsigned i = 0; i < w->nremedies; i++) {
        fprintf(fp, "%s", i ? ", " : "");
        json_saved(fp, s, &w->base_cell[c], &w->remedy[i].cell[c]);
    }
    fprintf(fp, "]}");
}

void mt_sim_whatif_json(FILE *fp, const mt_sim *s, const mt_whatif_report *w,
                        const mt_data_map *d, const mt_program *prog)
{
    if (!w)
        return;
    fprintf(fp, ",\n  \"what_if\": {\"references\": %" PRIu64 ", \"exact\": %s, \"run\": ",
            w->refs, w->exact ? "true" : "false");
    json_figures(fp, s, &w->base);
    fprintf(fp, ",\n    \"remedies\": [");
    for (unsigned i = 0; i < w->nremedies; i++) {
        const mt_whatif_remedy *r = &w->remedy[i];
        fprintf(fp, "%s\n      {", i ? "," : "");
        json_remedy_head(fp, r, d);
        fprintf(fp, ",\n       \"figures\": ");
        json_figures(fp, s, &r->total);
        fprintf(fp, ",\n       \"saved\": ");
        json_saved(fp, s, &w->base, &r->total);
        fprintf(fp, "}");
    }
    fprintf(fp, "\n    ],\n    \"problems\": [");
    for (unsigned c = 0; c < w->ncells; c++)
        json_problem(fp, s, w, c, d, prog);
    fprintf(fp, "\n    ]}");
}
