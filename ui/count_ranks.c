/* ui/count_ranks.c — MPI jobs in `mtool count -- mpirun ... PROG`: the
 * per-rank wrapper's hidden command (run/mpi.c does its work), and the
 * per-rank figures of the count summary and of count.json ("mpi",
 * docs/REPORT.md): each rank's totals, and per procedure and loop (the
 * executable's and each counted library's) its memory operations per
 * rank with the load imbalance (max / mean). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../report/report.h"
#include "ui.h"

/* `mtool _rank PROFILES INSTRUMENTED N NAME=VALUE... PROG ARGS...`: what the
 * launcher runs in place of PROG.  Exits 127 as a shell does when the
 * program cannot run. */
int mt_cmd_rank(int argc, char **argv)
{
    if (argc < 5) {
        mt_ui_error("%s: usage: mtool %s PROFILES INSTRUMENTED N NAME=VALUE... PROG [ARGS...] "
                    "(run by mtool count)", mt_mpi_rank_command, mt_mpi_rank_command);
        return 2;
    }
    mt_error err;
    mt_mpi_rank_exec(argc - 1, argv + 1, &err);
    mt_ui_error("%s", err.msg);
    return 127;
}

/* Ranks listed on a text line; count.json has them all. */
enum { SHOWN_RANKS = 8 };

/* One procedure (loop MT_NONE) or loop of one object (the executable, or
 * a counted library): its memory operations per rank. */
typedef struct {
    size_t object;          /* 0: the executable; k: library k - 1 of the count's */
    const char *library;    /* its name (NULL: the executable) */
    const mt_program *prog;
    uint32_t proc, loop;
    uint64_t total;
    uint64_t *per_rank;
} rank_row;

/* Of counts (exact as doubles below 2^53). */
static mt_imbalance imbalance_of(const uint64_t *per_rank, uint32_t n)
{
    double *v = mt_xcalloc(n + 1, sizeof *v);
    for (uint32_t i = 0; i < n; i++)
        v[i] = (double)per_rank[i];
    mt_imbalance im = mt_imbalance_of(v, n);
    free(v);
    return im;
}

static uint64_t memops_of_blocks(const mt_program *prog, const mt_pass1_totals *t, uint32_t p,
                                 const uint32_t *blocks, uint32_t nblocks)
{
    const mt_procedure *proc = &prog->procs[p];
    const uint64_t *c = t->block_counts + t->proc_first[p];
    uint64_t memops = 0;
    for (uint32_t k = 0; k < nblocks; k++) {
        uint32_t b = blocks ? blocks[k] : k;
        memops += c[b] * (proc->blocks[b].mem_reads + proc->blocks[b].mem_writes);
    }
    return memops;
}

static int by_total_desc(const void *a, const void *b)
{
    const rank_row *x = a, *y = b;
    if (x->total != y->total)
        return x->total < y->total ? 1 : -1;
    if (x->object != y->object)
        return x->object < y->object ? -1 : 1;
    if (x->proc != y->proc)
        return x->proc < y->proc ? -1 : 1;
    return (x->loop > y->loop) - (x->loop < y->loop);
}

/* Rank r's totals of object k (0: the executable; else library k - 1). */
static const mt_pass1_totals *object_totals(const mt_mpi_job *job, uint32_t r, size_t k)
{
    return k ? &job->ranks[r].lib_totals[k - 1] : &job->ranks[r].totals;
}

/* Object k's procedures (or loops) with memory operations in some rank, onto rows. */
static void collect_object_rows(const mt_program *prog, const char *library, size_t k,
                                const mt_mpi_job *job, bool loops, rank_row **rows, size_t *n,
                                size_t *cap)
{
    for (uint32_t p = 0; p < prog->nprocs; p++) {
        const mt_procedure *proc = &prog->procs[p];
        for (uint32_t l = 0; l < (loops ? proc->nloops : 1); l++) {
            rank_row row = {.object = k, .library = library, .prog = prog, .proc = p,
                            .loop = loops ? l : MT_NONE,
                            .per_rank = mt_xcalloc(job->nranks, sizeof *row.per_rank)};
            for (uint32_t r = 0; r < job->nranks; r++) {
                const mt_pass1_totals *t = object_totals(job, r, k);
                row.per_rank[r] = loops ? memops_of_blocks(prog, t, p, proc->loops[l].blocks,
                                                           proc->loops[l].nblocks)
                                        : memops_of_blocks(prog, t, p, NULL, proc->nblocks);
                row.total += row.per_rank[r];
            }
            if (row.total)
                MT_PUSH(*rows, *n, *cap, row);
            else
                free(row.per_rank);
        }
    }
}

/* Every procedure (or loop) of the executable and of the counted libraries
 * with memory operations in some rank, the most first. */
static rank_row *collect_rank_rows(const mt_program *prog, const mt_pass1_libraries *libs,
                                   const mt_mpi_job *job, bool loops, size_t *n)
{
    rank_row *rows = NULL;
    size_t nrows = 0, cap = 0;
    collect_object_rows(prog, NULL, 0, job, loops, &rows, &nrows, &cap);
    for (size_t k = 0; k < libs->nlibs; k++)
        if (!libs->libs[k].note && k < job->ranks[0].nlib_totals)
            collect_object_rows(libs->libs[k].prog, libs->libs[k].name, k + 1, job, loops, &rows,
                                &nrows, &cap);
    if (nrows > 1)
        qsort(rows, nrows, sizeof *rows, by_total_desc);
    *n = nrows;
    return rows;
}

static void free_rank_rows(rank_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(rows[i].per_rank);
    free(rows);
}

static const char *object_source(const rank_row *row, char *buf, size_t n)
{
    const mt_program *prog = row->prog;
    const mt_procedure *p = &prog->procs[row->proc];
    const mt_block *b = &p->blocks[row->loop == MT_NONE ? 0 : p->loops[row->loop].header];
    if (b->file && b->file < prog->nfiles)
        snprintf(buf, n, "%s:%u", prog->files[b->file], b->line);
    else
        snprintf(buf, n, "0x%" PRIx64, b->start);
    return buf;
}

static void print_per_rank(FILE *fp, const uint64_t *v, uint32_t n)
{
    fputs("      per rank:", fp);
    for (uint32_t r = 0; r < n && r < SHOWN_RANKS; r++)
        fprintf(fp, " %" PRIu64, v[r]);
    if (n > SHOWN_RANKS)
        fprintf(fp, " ... (%u more in count.json)", n - SHOWN_RANKS);
    fputc('\n', fp);
}

static void print_rank_rows(FILE *fp, const mt_program *prog, const mt_pass1_libraries *libs,
                            const mt_mpi_job *job, int top, bool loops)
{
    size_t n;
    rank_row *rows = collect_rank_rows(prog, libs, job, loops, &n);
    fprintf(fp, "\ntop %s by memory operations, per rank (imbalance: max / mean over ranks):\n",
            loops ? "loops" : "procedures");
    fprintf(fp, "  %9s %8s %16s  %s\n", "imbalance", "max rank", "memory ops",
            loops ? "loop (depth) in procedure, at" : "procedure, at");
    for (size_t i = 0; i < n && (int)i < top; i++) {
        mt_imbalance im = imbalance_of(rows[i].per_rank, job->nranks);
        const mt_procedure *p = &rows[i].prog->procs[rows[i].proc];
        char src[512];
        char *full = mt_xasprintf("%s%s%s", rows[i].library ? rows[i].library : "",
                                  rows[i].library ? ":" : "", p->name);
        char *name = mt_ui_escape(full), *at = mt_ui_escape(object_source(&rows[i], src, sizeof src));
        free(full);
        char *last = loops ? mt_xasprintf("loop (%u) in %s, %s", p->loops[rows[i].loop].depth,
                                          name, at)
                           : mt_xasprintf("%s, %s", name, at);
        int column = fprintf(fp, "  %8.2fx %8d %16" PRIu64 "  ", im.imbalance,
                             job->ranks[im.max_rank].rank, rows[i].total);
        mt_ui_last_column(fp, column > 0 ? (size_t)column : 0, last);
        print_per_rank(fp, rows[i].per_rank, job->nranks);
        free(last);
        free(name);
        free(at);
    }
    free_rank_rows(rows, n);
}

void mt_count_print_ranks(FILE *fp, const mt_program *prog, const mt_pass1_libraries *libs,
                          const mt_mpi_job *job, int top)
{
    char *launcher = mt_ui_escape(job->argv[0]);
    fprintf(fp, "\nMPI job (%s): %u rank%s, per rank (measured counts):\n", launcher, job->nranks,
            job->nranks == 1 ? "" : "s");
    free(launcher);
    fprintf(fp, "  %6s %9s %16s %16s %16s  %s\n", "rank", "processes", "blocks", "instructions",
            "memory ops", "host");
    uint64_t *memops = mt_xcalloc(job->nranks, sizeof *memops);
    for (uint32_t i = 0; i < job->nranks; i++) {
        const mt_mpi_rank *r = &job->ranks[i];
        char *host = mt_ui_escape(r->host ? r->host : "?");
        memops[i] = r->totals.reads + r->totals.writes;
        fprintf(fp, "  %6d %9u %16" PRIu64 " %16" PRIu64 " %16" PRIu64 "  %s\n", r->rank,
                r->merge.nprocesses, r->totals.blocks, r->totals.insns, memops[i], host);
        free(host);
    }
    mt_imbalance im = imbalance_of(memops, job->nranks);
    fprintf(fp, "  memory operations: imbalance %.2fx (max / mean over ranks), the most on rank %d\n",
            im.imbalance, job->ranks[im.max_rank].rank);
    free(memops);
    for (int loops = 0; loops < 2; loops++)
        print_rank_rows(fp, prog, libs, job, top, loops);
}

/* ---- count.json's "mpi" --------------------------------------------------------- */

static void json_imbalance(FILE *fp, const mt_mpi_job *job, const uint64_t *per_rank)
{
    mt_imbalance im = imbalance_of(per_rank, job->nranks);
    fputs(",\"imbalance\":", fp);
    mt_json_number(fp, im.imbalance);
    fprintf(fp, ",\"max_rank\":%d", job->ranks[im.max_rank].rank);
}

static void json_rank_rows(FILE *fp, const mt_program *prog, const mt_pass1_libraries *libs,
                           const mt_mpi_job *job, bool loops)
{
    size_t n;
    rank_row *rows = collect_rank_rows(prog, libs, job, loops, &n);
    fprintf(fp, ",\"%s\":[", loops ? "loops" : "procedures");
    for (size_t i = 0; i < n; i++) {
        const mt_procedure *p = &rows[i].prog->procs[rows[i].proc];
        char src[512];
        fputs(i ? ",{\"object\":" : "{\"object\":", fp);
        if (rows[i].library)
            mt_json_string(fp, rows[i].library);
        else
            fputs("null", fp);
        fputs(loops ? ",\"procedure\":" : ",\"name\":", fp);
        mt_json_string(fp, p->name);
        if (loops)
            fprintf(fp, ",\"loop\":%u,\"depth\":%u", rows[i].loop, p->loops[rows[i].loop].depth);
        fputs(",\"source\":", fp);
        mt_json_string(fp, object_source(&rows[i], src, sizeof src));
        fprintf(fp, ",\"memory_ops\":%" PRIu64 ",\"memory_ops_per_rank\":[", rows[i].total);
        for (uint32_t r = 0; r < job->nranks; r++)
            fprintf(fp, "%s%" PRIu64, r ? "," : "", rows[i].per_rank[r]);
        fputc(']', fp);
        json_imbalance(fp, job, rows[i].per_rank);
        fputc('}', fp);
    }
    fputc(']', fp);
    free_rank_rows(rows, n);
}

void mt_count_json_ranks(FILE *fp, const mt_program *prog, const mt_pass1_libraries *libs,
                         const mt_mpi_job *job)
{
    fputs(",\"mpi\":", fp);
    if (!job) {
        fputs("null", fp);
        return;
    }
    fputc('{', fp);
    mt_report_json_launcher(fp, job->argv);
    fprintf(fp, ",\"ranks\":[");
    uint64_t *memops = mt_xcalloc(job->nranks, sizeof *memops);
    for (uint32_t i = 0; i < job->nranks; i++) {
        const mt_mpi_rank *r = &job->ranks[i];
        memops[i] = r->totals.reads + r->totals.writes;
        fprintf(fp, "%s{\"rank\":%d,\"host\":", i ? "," : "", r->rank);
        if (r->host)
            mt_json_string(fp, r->host);
        else
            fputs("null", fp);
        fprintf(fp, ",\"processes\":%u,\"threads\":%u,\"blocks\":%" PRIu64
                    ",\"instructions\":%" PRIu64 ",\"memory_ops\":%" PRIu64
                    ",\"memory_reads\":%" PRIu64 ",\"memory_writes\":%" PRIu64 "}",
                r->merge.nprocesses, r->merge.nthreads, r->totals.blocks, r->totals.insns,
                memops[i], r->totals.reads, r->totals.writes);
    }
    fputc(']', fp);
    json_imbalance(fp, job, memops); /* of the ranks' memory operations */
    free(memops);
    json_rank_rows(fp, prog, libs, job, false);
    json_rank_rows(fp, prog, libs, job, true);
    fputc('}', fp);
}
