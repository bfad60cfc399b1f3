/* ui/sim_numa.c — the nodes' sections of `mtool sim` with cpus > 1 (sim.h,
 * "nodes and home memory"): per CPU its node and its references by where
 * they were served (L1, a private level, its node, local or remote memory,
 * a remote dirty copy, three hops) with the stall the description's
 * latencies give them; the same classes per code object and per data
 * object.  Text and JSON (docs/SIMULATOR.md, "Nodes"). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ui.h"

#define SHOWN_ROWS 20 /* code or data objects in the text report */

/* The classes summed per code object (by_data false) or data object. */
typedef struct {
    uint32_t id;
    uint64_t served[MT_SIM_NSERVED];
    uint64_t by_cpu[MT_SIM_MAX_CPUS][MT_SIM_NSERVED];
} served_row;

/* References that left the private levels: what placement changes. */
static uint64_t past_private(const uint64_t *served)
{
    uint64_t n = 0;
    for (int k = MT_SIM_AT_NODE; k < MT_SIM_NSERVED; k++)
        n += served[k];
    return n;
}

static int most_past_private_first(const void *a, const void *b)
{
    const served_row *x = a, *y = b;
    uint64_t nx = past_private(x->served), ny = past_private(y->served);
    if (nx != ny)
        return nx > ny ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static served_row *served_rows(mt_sim *s, bool by_data, size_t *n)
{
    size_t np;
    const mt_sim_served_pair *p = mt_sim_served_pairs(s, &np);
    served_row *rows = mt_xcalloc(np + 1, sizeof *rows);
    *n = 0;
    for (size_t i = 0; i < np; i++) {
        uint32_t id = by_data ? p[i].data : p[i].code;
        size_t r = 0;
        while (r < *n && rows[r].id != id)
            r++;
        if (r == *n)
            rows[(*n)++].id = id;
        for (int k = 0; k < MT_SIM_NSERVED; k++) {
            rows[r].served[k] += p[i].served[k];
            rows[r].by_cpu[p[i].cpu][k] += p[i].served[k];
        }
    }
    if (*n)
        qsort(rows, *n, sizeof *rows, most_past_private_first);
    return rows;
}

/* ---- text ---- */

static void text_header(FILE *fp, const char *first, int width)
{
    fprintf(fp, "%-*s", width, first);
    for (int k = 0; k < MT_SIM_NSERVED; k++)
        fprintf(fp, " %12s", mt_sim_served_name((mt_sim_served)k));
}

static void text_classes(FILE *fp, const uint64_t *served)
{
    for (int k = 0; k < MT_SIM_NSERVED; k++)
        fprintf(fp, " %12" PRIu64, served[k]);
}

static void text_cpus(FILE *fp, const mt_sim *s)
{
    const mt_sim_machine *m = mt_sim_mp_machine(s);
    fprintf(fp, "\nnodes: %u, page %" PRIu64 " bytes, placement %s%s; references by where "
                "served:\n",
            mt_sim_nodes(s), m->page, mt_sim_placement_name(m->placement),
            m->nplaces ? " (with explicit ranges)" : "");
    text_header(fp, "cpu node", 9);
    fprintf(fp, " %14s\n", "stall cycles");
    for (unsigned c = 0; c < mt_sim_cpus(s); c++) {
        const mt_sim_cpu_stats *st = mt_sim_cpu(s, c);
        fprintf(fp, "%-4u %-4u", c, mt_sim_cpu_node(s, c));
        text_classes(fp, st->served);
        double stall = mt_sim_served_stall(m, st->served);
        if (stall < 0)
            fprintf(fp, " %14s\n", "-");
        else
            fprintf(fp, " %14.0f\n", stall);
    }
}

static void text_objects(FILE *fp, mt_sim *s, const mt_data_map *d, const mt_program *prog,
                         bool by_data)
{
    size_t n;
    served_row *rows = served_rows(s, by_data, &n);
    fprintf(fp, "\nwhere served per %s object%s:\n", by_data ? "data" : "code",
            n > SHOWN_ROWS ? " (the first 20, most beyond the private levels first)" : "");
    text_header(fp, "name", 40);
    fprintf(fp, "\n");
    for (size_t i = 0; i < n && i < SHOWN_ROWS; i++) {
        char raw[MT_SIM_CODE_NAME_MAX];
        mt_sim_object_name(d, prog, by_data, rows[i].id, raw, sizeof raw);
        char *name = mt_ui_escape(raw);
        fprintf(fp, "%-40s", name);
        text_classes(fp, rows[i].served);
        fprintf(fp, "\n");
        free(name);
    }
    free(rows);
}

void mt_sim_numa_text(FILE *fp, mt_sim *s, const mt_data_map *d, const mt_program *prog)
{
    text_cpus(fp, s);
    text_objects(fp, s, d, prog, false);
    text_objects(fp, s, d, prog, true);
}

/* ---- JSON ---- */

static void json_classes(FILE *fp, const uint64_t *served)
{
    fprintf(fp, "{");
    for (int k = 0; k < MT_SIM_NSERVED; k++)
        fprintf(fp, "%s\"%s\": %" PRIu64, k ? ", " : "", mt_sim_served_name((mt_sim_served)k),
                served[k]);
    fprintf(fp, "}");
}

static void json_stall(FILE *fp, double stall)
{
    if (stall < 0)
        fprintf(fp, "null");
    else
        fprintf(fp, "%.0f", stall);
}

void mt_sim_numa_served_json(FILE *fp, const mt_sim *s, const uint64_t *served)
{
    fprintf(fp, "\"served\": ");
    json_classes(fp, served);
    fprintf(fp, ", \"served_stall_cycles\": ");
    json_stall(fp, mt_sim_served_stall(mt_sim_mp_machine(s), served));
}

void mt_sim_numa_cpu_json(FILE *fp, const mt_sim *s, unsigned cpu)
{
    fprintf(fp, "\"node\": %u, ", mt_sim_cpu_node(s, cpu));
    mt_sim_numa_served_json(fp, s, mt_sim_cpu(s, cpu)->served);
}

static void json_objects(FILE *fp, mt_sim *s, const mt_data_map *d, const mt_program *prog,
                         bool by_data)
{
    size_t n;
    served_row *rows = served_rows(s, by_data, &n);
    fprintf(fp, ",\n    \"%s\": [", by_data ? "served_data_objects" : "served_code_objects");
    for (size_t i = 0; i < n; i++) {
        char raw[MT_SIM_CODE_NAME_MAX];
        mt_sim_object_name(d, prog, by_data, rows[i].id, raw, sizeof raw);
        fprintf(fp, "%s\n      {\"id\": %" PRIu32 ", \"name\": ", i ? "," : "", rows[i].id);
        mt_json_string(fp, raw);
        fprintf(fp, ", \"served\": ");
        json_classes(fp, rows[i].served);
        fprintf(fp, ", \"served_stall_cycles\": ");
        json_stall(fp, mt_sim_served_stall(mt_sim_mp_machine(s), rows[i].served));
        fprintf(fp, ",\n       \"by_cpu\": [");
        bool first = true;
        for (unsigned c = 0; c < mt_sim_cpus(s); c++) {
            const uint64_t *served = rows[i].by_cpu[c];
            if (!past_private(served) && !served[MT_SIM_AT_L1] && !served[MT_SIM_AT_PRIVATE])
                continue;
            fprintf(fp, "%s{\"cpu\": %u, \"served\": ", first ? "" : ", ", c);
            json_classes(fp, served);
            fprintf(fp, "}");
            first = false;
        }
        fprintf(fp, "]}");
    }
    fprintf(fp, "\n    ]");
    free(rows);
}

void mt_sim_numa_json(FILE *fp, mt_sim *s, const mt_data_map *d, const mt_program *prog)
{
    const mt_sim_machine *m = mt_sim_mp_machine(s);
    fprintf(fp, ",\n    \"nodes\": %u, \"page\": %" PRIu64 ", \"placement\": \"%s\", "
                "\"latency_cycles\": {",
            mt_sim_nodes(s), m->page, mt_sim_placement_name(m->placement));
    for (int k = 0; k < MT_SIM_NSERVED; k++)
        fprintf(fp, "%s\"%s\": %g", k ? ", " : "", mt_sim_served_name((mt_sim_served)k),
                m->latency[k]);
    fprintf(fp, "}");
    json_objects(fp, s, d, prog, false);
    json_objects(fp, s, d, prog, true);
}
