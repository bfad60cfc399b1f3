/* ui/sim_coherence.c — the processors' sections of `mtool sim` with cpus > 1
 * (sim.h, "processors"): per CPU its misses by cause (coherence the 4th),
 * invalidations, interventions and upgrades; coherence misses true and
 * false per code object and per data object; the top shared lines with the
 * words each CPU read and wrote.  Text and JSON (docs/SIMULATOR.md,
 * "Processors"). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ui.h"

#define SHOWN_LINES 10 /* shared lines in the text report */
#define SHOWN_ROWS 20  /* code or data objects in the text report */

/* Coherence misses and events summed per code object (by_data false) or
 * data object. */
typedef struct {
    uint32_t id;
    uint64_t true_sharing, false_sharing, invalidations, interventions, upgrades;
} sharing_row;

static uint64_t events(const sharing_row *r)
{
    return r->invalidations + r->interventions + r->upgrades;
}

static int most_sharing_first(const void *a, const void *b)
{
    const sharing_row *x = a, *y = b;
    uint64_t nx = x->true_sharing + x->false_sharing, ny = y->true_sharing + y->false_sharing;
    if (nx != ny)
        return nx > ny ? -1 : 1;
    if (events(x) != events(y))
        return events(x) > events(y) ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static sharing_row *sharing_rows(mt_sim *s, bool by_data, size_t *n)
{
    size_t np;
    const mt_sim_coherence_pair *p = mt_sim_coherence_pairs(s, &np);
    sharing_row *rows = mt_xcalloc(np + 1, sizeof *rows);
    *n = 0;
    for (size_t i = 0; i < np; i++) {
        uint32_t id = by_data ? p[i].data : p[i].code;
        size_t r = 0;
        while (r < *n && rows[r].id != id)
            r++;
        if (r == *n)
            rows[(*n)++].id = id;
        rows[r].true_sharing += p[i].true_sharing;
        rows[r].false_sharing += p[i].false_sharing;
        rows[r].invalidations += p[i].invalidations;
        rows[r].interventions += p[i].interventions;
        rows[r].upgrades += p[i].upgrades;
    }
    if (*n)
        qsort(rows, *n, sizeof *rows, most_sharing_first);
    return rows;
}

/* A data object's name, or its id when the run names none. */
static void data_name(const mt_data_map *d, uint32_t id, char *buf, size_t n)
{
    const mt_data_object *o = d ? mt_data_map_object(d, id) : NULL;
    if (o)
        snprintf(buf, n, "%s", o->name);
    else
        snprintf(buf, n, "data object %" PRIu32, id);
}

void mt_sim_object_name(const mt_data_map *d, const mt_program *prog, bool by_data, uint32_t id,
                        char *buf, size_t n)
{
    if (by_data)
        data_name(d, id, buf, n);
    else
        mt_sim_code_name(prog, id, buf, n);
}

/* ---- text ---- */

/* A CPU's or a thread's rows of misses per level by cause: its number, a
 * second figure (a CPU's threads, a thread's CPU), its references. */
static void text_misses(FILE *fp, const mt_sim *s, uint64_t id, uint64_t second,
                        const mt_sim_cpu_stats *st)
{
    for (unsigned l = 0; l < mt_sim_level_count(s); l++) {
        if (l == 0)
            fprintf(fp, "%-6" PRIu64 " %7" PRIu64 " %12" PRIu64, id, second, st->refs);
        else
            fprintf(fp, "%-6s %7s %12s", "", "", "");
        fprintf(fp, " %-5s %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 "\n",
                mt_sim_level(s, l)->desc->name, st->misses[l], st->cause[l][MT_SIM_COLD],
                st->cause[l][MT_SIM_CAPACITY], st->cause[l][MT_SIM_CONFLICT], st->coherence[l]);
    }
}

/* References served by another node's memory or cache. */
static uint64_t remote_refs(const uint64_t *served)
{
    return served[MT_SIM_AT_REMOTE] + served[MT_SIM_AT_REMOTE_DIRTY] + served[MT_SIM_AT_THREE_HOP];
}

/* Each thread's share of its CPU's figures. */
static void text_threads(FILE *fp, const mt_sim *s)
{
    size_t n;
    const mt_sim_thread_stats *t = mt_sim_threads(s, &n);
    fprintf(fp, "\nthreads (each its CPU's share; the invalidations a CPU received and the "
                "interventions it served are its caches', no thread's):\n%-6s %7s %12s %-5s %10s "
                "%10s %10s %10s %10s\n",
            "thread", "cpu", "refs", "level", "misses", "cold", "capacity", "conflict",
            "coherence");
    for (size_t i = 0; i < n; i++)
        text_misses(fp, s, t[i].thread, t[i].cpu, &t[i].stats);
    fprintf(fp, "\n%-6s %12s %12s %12s %13s %12s %12s %12s\n", "thread", "true-shar.",
            "false-shar.", "inval.sent", "interventions", "upgrades", "local", "remote");
    for (size_t i = 0; i < n; i++) {
        const mt_sim_cpu_stats *st = &t[i].stats;
        fprintf(fp, "%-6" PRIu32 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %13" PRIu64
                    " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 "\n",
                t[i].thread, st->true_sharing, st->false_sharing, st->invalidations_sent,
                st->interventions, st->upgrades, st->served[MT_SIM_AT_LOCAL],
                remote_refs(st->served));
    }
}

static void text_cpus(FILE *fp, mt_sim *s)
{
    unsigned np = mt_sim_private_levels(s);
    fprintf(fp, "\nprocessors: %u CPUs, MESI directory over the private levels (", mt_sim_cpus(s));
    for (unsigned l = 0; l < np; l++)
        fprintf(fp, "%s%s", l ? " " : "", mt_sim_level(s, l)->desc->name);
    fprintf(fp, "); shared:");
    for (unsigned l = np; l < mt_sim_level_count(s); l++)
        fprintf(fp, " %s", mt_sim_level(s, l)->desc->name);
    fprintf(fp, np == mt_sim_level_count(s) ? " none\n" : "\n");
    fprintf(fp, "%-6s %7s %12s %-5s %10s %10s %10s %10s %10s\n", "cpu", "threads", "refs",
            "level", "misses", "cold", "capacity", "conflict", "coherence");
    for (unsigned c = 0; c < mt_sim_cpus(s); c++)
        text_misses(fp, s, c, mt_sim_cpu(s, c)->threads, mt_sim_cpu(s, c));
    mt_sim_cpu_events_text(fp, s);
}

void mt_sim_cpu_events_text(FILE *fp, const mt_sim *s)
{
    unsigned np = mt_sim_private_levels(s);
    fprintf(fp, "\n%-6s %12s %12s %12s %12s %13s %12s %12s\n", "cpu", "true-shar.",
            "false-shar.", "inval.sent", "inval.recv", "interventions", "served", "upgrades");
    for (unsigned c = 0; c < mt_sim_cpus(s); c++) {
        const mt_sim_cpu_stats *st = mt_sim_cpu(s, c);
        uint64_t received = 0;
        for (unsigned l = 0; l < np; l++)
            received += st->invalidations_received[l];
        fprintf(fp, "%-6u %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %13" PRIu64
                    " %12" PRIu64 " %12" PRIu64 "\n",
                c, st->true_sharing, st->false_sharing, st->invalidations_sent, received,
                st->interventions, st->interventions_served, st->upgrades);
    }
}

static void text_sharing(FILE *fp, mt_sim *s, const mt_data_map *d, const mt_program *prog,
                         bool by_data)
{
    size_t n;
    sharing_row *rows = sharing_rows(s, by_data, &n);
    fprintf(fp, "\ncoherence misses and events per %s object%s:\n%-40s %12s %12s %12s %13s "
                "%12s\n",
            by_data ? "data" : "code", n > SHOWN_ROWS ? " (the first 20)" : "", "name",
            "true", "false", "inval.sent", "interventions", "upgrades");
    for (size_t i = 0; i < n && i < SHOWN_ROWS; i++) {
        char raw[MT_SIM_CODE_NAME_MAX];
        mt_sim_object_name(d, prog, by_data, rows[i].id, raw, sizeof raw);
        char *name = mt_ui_escape(raw);
        fprintf(fp, "%-40s %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %13" PRIu64 " %12" PRIu64
                    "\n",
                name, rows[i].true_sharing, rows[i].false_sharing, rows[i].invalidations,
                rows[i].interventions, rows[i].upgrades);
        free(name);
    }
    free(rows);
}

/* One CPU's use of a line's words: R read, W written, B both, . neither. */
static void word_picture(const mt_sim_shared_line *l, unsigned c, char *out)
{
    for (uint32_t w = 0; w < l->words; w++) {
        bool r = l->read_words[c] >> w & 1, wr = l->written_words[c] >> w & 1;
        out[w] = r && wr ? 'B' : wr ? 'W' : r ? 'R' : '.';
    }
    out[l->words] = 0;
}

static void text_lines(FILE *fp, mt_sim *s, const mt_data_map *d)
{
    size_t n;
    const mt_sim_shared_line *lines = mt_sim_shared_lines(s, &n);
    fprintf(fp, "\nshared lines (by coherence misses%s; per CPU each 8-byte word: R read, "
                "W written, B both):\n",
            n > SHOWN_LINES ? ", the first 10" : "");
    for (size_t i = 0; i < n && i < SHOWN_LINES; i++) {
        const mt_sim_shared_line *l = &lines[i];
        char raw[MT_SIM_CODE_NAME_MAX];
        data_name(d, l->data, raw, sizeof raw);
        char *name = mt_ui_escape(raw);
        fprintf(fp, "  0x%" PRIx64 " %s: coherence misses %" PRIu64 " true %" PRIu64
                    " false, %" PRIu64 " invalidations, %" PRIu64 " interventions, %" PRIu64
                    " upgrades\n",
                l->addr, name, l->true_sharing, l->false_sharing, l->invalidations,
                l->interventions, l->upgrades);
        free(name);
        for (unsigned c = 0; c < mt_sim_cpus(s); c++) {
            char words[MT_SIM_MAX_WORDS + 1];
            word_picture(l, c, words);
            fprintf(fp, "    cpu %-3u %s\n", c, words);
        }
    }
}

void mt_sim_coherence_text(FILE *fp, mt_sim *s, const mt_data_map *d, const mt_program *prog)
{
    if (mt_sim_cpus(s) <= 1)
        return;
    text_cpus(fp, s);
    text_threads(fp, s);
    text_sharing(fp, s, d, prog, false);
    text_sharing(fp, s, d, prog, true);
    text_lines(fp, s, d);
    mt_sim_numa_text(fp, s, d, prog);
}

/* ---- JSON ---- */

static void json_level_names(FILE *fp, const mt_sim *s, unsigned from, unsigned to)
{
    fprintf(fp, "[");
    for (unsigned l = from; l < to; l++)
        fprintf(fp, "%s\"%s\"", l > from ? ", " : "", mt_sim_level(s, l)->desc->name);
    fprintf(fp, "]");
}

/* "misses": {LEVEL: {misses, cold, capacity, conflict, coherence}}. */
static void json_misses(FILE *fp, const mt_sim *s, const mt_sim_cpu_stats *st)
{
    fprintf(fp, "\"misses\": {");
    for (unsigned l = 0; l < mt_sim_level_count(s); l++)
        fprintf(fp, "%s\"%s\": {\"misses\": %" PRIu64 ", \"cold\": %" PRIu64
                    ", \"capacity\": %" PRIu64 ", \"conflict\": %" PRIu64
                    ", \"coherence\": %" PRIu64 "}",
                l ? ", " : "", mt_sim_level(s, l)->desc->name, st->misses[l],
                st->cause[l][MT_SIM_COLD], st->cause[l][MT_SIM_CAPACITY],
                st->cause[l][MT_SIM_CONFLICT], st->coherence[l]);
    fprintf(fp, "}");
}

static void json_thread(FILE *fp, const mt_sim *s, const mt_sim_thread_stats *t)
{
    const mt_sim_cpu_stats *st = &t->stats;
    fprintf(fp, "\n      {\"thread\": %" PRIu32 ", \"cpu\": %u, \"refs\": %" PRIu64 ", ",
            t->thread, t->cpu, st->refs);
    json_misses(fp, s, st);
    fprintf(fp, ",\n       \"true_sharing\": %" PRIu64 ", \"false_sharing\": %" PRIu64
                ", \"invalidations_sent\": %" PRIu64 ", \"interventions\": %" PRIu64
                ", \"upgrades\": %" PRIu64 ", \"remote\": %" PRIu64 ",\n       ",
            st->true_sharing, st->false_sharing, st->invalidations_sent, st->interventions,
            st->upgrades, remote_refs(st->served));
    mt_sim_numa_served_json(fp, s, st->served);
    fprintf(fp, "}");
}

static void json_cpu(FILE *fp, const mt_sim *s, unsigned c)
{
    const mt_sim_cpu_stats *st = mt_sim_cpu(s, c);
    fprintf(fp, "\n      {\"cpu\": %u, \"threads\": %" PRIu64 ", \"refs\": %" PRIu64 ", ",
            c, st->threads, st->refs);
    json_misses(fp, s, st);
    fprintf(fp, ",\n       \"true_sharing\": %" PRIu64 ", \"false_sharing\": %" PRIu64
                ", \"invalidations_sent\": %" PRIu64 ", \"invalidations_received\": {",
            st->true_sharing, st->false_sharing, st->invalidations_sent);
    for (unsigned l = 0; l < mt_sim_private_levels(s); l++)
        fprintf(fp, "%s\"%s\": %" PRIu64, l ? ", " : "", mt_sim_level(s, l)->desc->name,
                st->invalidations_received[l]);
    fprintf(fp, "}, \"interventions\": %" PRIu64 ", \"interventions_served\": %" PRIu64
                ", \"upgrades\": %" PRIu64 ",\n       ",
            st->interventions, st->interventions_served, st->upgrades);
    mt_sim_numa_cpu_json(fp, s, c);
    fprintf(fp, "}");
}

static void json_sharing(FILE *fp, mt_sim *s, const mt_data_map *d, const mt_program *prog,
                         bool by_data)
{
    size_t n;
    sharing_row *rows = sharing_rows(s, by_data, &n);
    fprintf(fp, ",\n    \"%s\": [", by_data ? "data_objects" : "code_objects");
    for (size_t i = 0; i < n; i++) {
        char raw[MT_SIM_CODE_NAME_MAX];
        mt_sim_object_name(d, prog, by_data, rows[i].id, raw, sizeof raw);
        fprintf(fp, "%s\n      {\"id\": %" PRIu32 ", \"name\": ", i ? "," : "", rows[i].id);
        mt_json_string(fp, raw);
        fprintf(fp, ", \"true_sharing\": %" PRIu64 ", \"false_sharing\": %" PRIu64
                    ", \"invalidations\": %" PRIu64 ", \"interventions\": %" PRIu64
                    ", \"upgrades\": %" PRIu64 "}",
                rows[i].true_sharing, rows[i].false_sharing, rows[i].invalidations,
                rows[i].interventions, rows[i].upgrades);
    }
    fprintf(fp, "\n    ]");
    free(rows);
}

static void json_masks(FILE *fp, const uint64_t *masks, unsigned n)
{
    fprintf(fp, "[");
    for (unsigned c = 0; c < n; c++)
        fprintf(fp, "%s%" PRIu64, c ? ", " : "", masks[c]);
    fprintf(fp, "]");
}

static void json_lines(FILE *fp, mt_sim *s, const mt_data_map *d)
{
    size_t n;
    const mt_sim_shared_line *lines = mt_sim_shared_lines(s, &n);
    fprintf(fp, ",\n    \"shared_lines\": [");
    for (size_t i = 0; i < n; i++) {
        const mt_sim_shared_line *l = &lines[i];
        char raw[MT_SIM_CODE_NAME_MAX];
        data_name(d, l->data, raw, sizeof raw);
        fprintf(fp, "%s\n      {\"addr\": %" PRIu64 ", \"data\": %" PRIu32 ", \"data_name\": ",
                i ? "," : "", l->addr, l->data);
        mt_json_string(fp, raw);
        fprintf(fp, ", \"true_sharing\": %" PRIu64 ", \"false_sharing\": %" PRIu64
                    ", \"invalidations\": %" PRIu64 ", \"interventions\": %" PRIu64
                    ", \"upgrades\": %" PRIu64 ", \"words\": %" PRIu32 ",\n       \"read_words\": ",
                l->true_sharing, l->false_sharing, l->invalidations, l->interventions,
                l->upgrades, l->words);
        json_masks(fp, l->read_words, mt_sim_cpus(s));
        fprintf(fp, ", \"written_words\": ");
        json_masks(fp, l->written_words, mt_sim_cpus(s));
        fprintf(fp, "}");
    }
    fprintf(fp, "\n    ]");
}

void mt_sim_coherence_json(FILE *fp, mt_sim *s, const mt_data_map *d, const mt_program *prog)
{
    if (mt_sim_cpus(s) <= 1)
        return;
    unsigned np = mt_sim_private_levels(s);
    fprintf(fp, ",\n  \"processors\": {\"cpus\": %u, \"protocol\": \"MESI\", \"private\": ",
            mt_sim_cpus(s));
    json_level_names(fp, s, 0, np);
    fprintf(fp, ", \"shared\": ");
    json_level_names(fp, s, np, mt_sim_level_count(s));
    fprintf(fp, ",\n    \"per_cpu\": [");
    for (unsigned c = 0; c < mt_sim_cpus(s); c++)
        json_cpu(fp, s, c), fprintf(fp, "%s", c + 1 < mt_sim_cpus(s) ? "," : "");
    fprintf(fp, "\n    ],\n    \"per_thread\": [");
    size_t nt;
    const mt_sim_thread_stats *t = mt_sim_threads(s, &nt);
    for (size_t i = 0; i < nt; i++)
        json_thread(fp, s, &t[i]), fprintf(fp, "%s", i + 1 < nt ? "," : "");
    fprintf(fp, "\n    ]");
    json_sharing(fp, s, d, prog, false);
    json_sharing(fp, s, d, prog, true);
    json_lines(fp, s, d);
    mt_sim_numa_json(fp, s, d, prog);
    fprintf(fp, "\n  }");
}
