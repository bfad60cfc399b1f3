/* ui/cmd_analyze.c — `mtool analyze`: the analyzer's findings for people
 * (text) or programs (--json). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../analyzer/analyzer.h"
#include "ui.h"

const char mt_analyze_usage[] =
    "usage: mtool analyze BIN [options]\n"
    "\n"
    "Analyzes an x86-64 ELF executable or shared object: procedures (from .symtab,\n"
    ".dynsym, .eh_frame and PLT stubs), blocks, typed CFG edges, jump tables, the loop\n"
    "forest, the call graph, and which procedures and loops are estimable (MTOOL's\n"
    "Tot/TDES test).  Procedures whose control flow is not fully resolved are flagged\n"
    "with the reason.\n"
    "\n"
    "options:\n"
    "  --function NAME  one procedure in detail: blocks, edges, loops, calls, jump tables\n"
    "  --loops          the loop forest of every procedure that has loops\n"
    "  --callgraph      call-graph edges, recursive SCCs, estimability with Tot/TDES\n"
    "  --json           everything as JSON (schema: docs/analysis-schema.md)\n"
    "  --blocks         with --json: include blocks, edges and call sites (default on)\n"
    "  -o FILE          write the output to FILE (atomically: no partial file on failure)\n"
    "  --no-lines       skip DWARF line tables\n"
    "  --stats          print time, speed and peak memory on stderr\n"
    "  --costs          predicted core cycles per block execution if every memory access\n"
    "                   hit L1, and the bound that limited it (docs/COST-MODEL.md)\n"
    "  --counts FILE    with --costs: counts.tsv of 'mtool count'; adds count x cycles\n"
    "                   per block and per procedure\n";

typedef struct {
    const char *path, *function, *out, *counts;
    bool json, loops, callgraph, no_lines, stats, costs;
} analyze_args;

static int parse_args(int argc, char **argv, analyze_args *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "--json") == 0)
            a->json = true;
        else if (strcmp(s, "--loops") == 0)
            a->loops = true;
        else if (strcmp(s, "--callgraph") == 0)
            a->callgraph = true;
        else if (strcmp(s, "--blocks") == 0)
            ; /* blocks are always part of the JSON */
        else if (strcmp(s, "--no-lines") == 0)
            a->no_lines = true;
        else if (strcmp(s, "--stats") == 0)
            a->stats = true;
        else if (strcmp(s, "--costs") == 0)
            a->costs = true;
        else if (strcmp(s, "--counts") == 0 && i + 1 < argc)
            a->counts = argv[++i];
        else if ((strcmp(s, "--function") == 0 || strcmp(s, "-o") == 0) && i + 1 < argc)
            *(s[1] == 'o' ? &a->out : &a->function) = argv[++i];
        else if (s[0] == '-' && s[1]) {
            mt_ui_error("analyze: unknown or incomplete option '%s'; see 'mtool help analyze'", s);
            return 2;
        } else if (!a->path)
            a->path = s;
        else {
            mt_ui_error("analyze: more than one binary given ('%s', '%s')", a->path, s);
            return 2;
        }
    }
    if (!a->path) {
        mt_ui_error("analyze: no binary given; see 'mtool help analyze'");
        return 2;
    }
    return 0;
}

/* ---- text output ------------------------------------------------------ */

typedef struct {
    uint32_t resolved, tables, loops, irreducible, recursive, estimable, plt, code_as_data;
} program_totals;

static program_totals count_totals(const mt_program *prog)
{
    program_totals t = {0};
    for (uint32_t i = 0; i < prog->nprocs; i++) {
        const mt_procedure *p = &prog->procs[i];
        t.resolved += p->resolved;
        t.recursive += p->recursive;
        t.estimable += p->estimable;
        t.plt += p->is_plt;
        t.code_as_data += p->code_as_data != NULL;
        for (uint32_t b = 0; b < p->nblocks; b++)
            t.tables += p->blocks[b].term == MT_TERM_TABLE_JUMP;
        for (uint32_t l = 0; l < p->nloops; l++) {
            t.loops += !p->loops[l].irreducible;
            t.irreducible += p->loops[l].irreducible;
        }
    }
    return t;
}

static const char *kind_text(const mt_program *prog)
{
    return prog->kind == MT_ELF_EXEC ? "executable (non-PIE)" : prog->kind == MT_ELF_PIE ? "PIE executable"
                                                                                         : "shared object";
}

static void print_header(FILE *fp, const mt_program *prog)
{
    program_totals t = count_totals(prog);
    mt_fputs_escaped(fp, prog->path);
    fprintf(fp, ": %s\n", kind_text(prog));
    fprintf(fp, "  static          %s\n", prog->static_linked ? "yes" : "no");
    fprintf(fp, "  stripped        %s\n", prog->stripped ? "yes (no .symtab)" : "no");
    fprintf(fp, "  build-id        %s\n", prog->build_id[0] ? prog->build_id : "(none)");
    fprintf(fp, "  source lines    %s\n", prog->has_dwarf_lines ? "yes (DWARF)" : "no");
    fprintf(fp, "  procedures      %" PRIu32 " (%" PRIu32 " PLT stubs), %.1f%% with fully resolved control flow\n",
            prog->nprocs, t.plt, prog->nprocs ? 100.0 * t.resolved / prog->nprocs : 100.0);
    if (t.code_as_data)
        fprintf(fp, "  code as data    %" PRIu32 " procedures the program copies or reads: left out\n",
                t.code_as_data);
    fprintf(fp, "  instructions    %" PRIu64 "\n", prog->ninsns);
    fprintf(fp, "  jump tables     %" PRIu32 "\n", t.tables);
    fprintf(fp, "  loops           %" PRIu32 " natural, %" PRIu32 " irreducible regions\n", t.loops,
            t.irreducible);
    fprintf(fp, "  recursive       %" PRIu32 " procedures\n", t.recursive);
    fprintf(fp, "  estimable       %" PRIu32 " procedures\n", t.estimable);
}

void mt_ui_source_range(const mt_program *prog, const mt_procedure *p, const uint32_t *blocks,
                        uint32_t n, char *buf, size_t len)
{
    uint32_t file = 0, lo = UINT32_MAX, hi = 0;
    for (uint32_t k = 0; k < n; k++) {
        const mt_block *b = &p->blocks[blocks ? blocks[k] : k];
        if (!b->line)
            continue;
        if (!file)
            file = b->file;
        if (b->file != file)
            continue;
        lo = b->line < lo ? b->line : lo;
        hi = b->line > hi ? b->line : hi;
    }
    if (!file || file >= prog->nfiles) {
        buf[0] = 0;
        return;
    }
    const char *base = strrchr(prog->files[file], '/');
    char name[128];
    mt_escape_text(name, sizeof name, base ? base + 1 : prog->files[file]);
    if (lo == hi)
        snprintf(buf, len, "%s:%" PRIu32, name, lo);
    else
        snprintf(buf, len, "%s:%" PRIu32 "-%" PRIu32, name, lo, hi);
}

static void procedure_flags(const mt_procedure *p, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s%s%s%s", p->is_plt ? "plt " : "", p->code_as_data ? "code-as-data " : "",
             !p->resolved ? "unresolved " : "", p->noreturn ? "noreturn " : "", p->recursive ? "recursive " : "",
             p->estimable ? "estimable" : "");
}

static int by_instructions_desc(const void *a, const void *b, void *ctx)
{
    const mt_program *prog = ctx;
    uint64_t x = prog->procs[*(const uint32_t *)a].ninsns, y = prog->procs[*(const uint32_t *)b].ninsns;
    return x > y ? -1 : x < y;
}

#define TABLE_LIMIT 200
#define TABLE_SHOWN 50

static void print_procedure_table(FILE *fp, const mt_program *prog)
{
    uint32_t n = prog->nprocs, shown = n;
    uint32_t *order = mt_xmalloc(((size_t)n + 1) * sizeof *order);
    for (uint32_t i = 0; i < n; i++)
        order[i] = i;
    if (n > TABLE_LIMIT) {
        qsort_r(order, n, sizeof *order, by_instructions_desc, (void *)prog);
        shown = TABLE_SHOWN;
        fprintf(fp, "\nlargest %u of %" PRIu32 " procedures by instructions (all of them: --json):\n", shown, n);
    } else {
        fprintf(fp, "\nprocedures:\n");
    }
    fprintf(fp, "  %-18s %-32s %7s %8s %7s %7s %5s  %-24s %s\n", "address", "name", "blocks", "insns", "loads",
            "stores", "loops", "source", "flags");
    for (uint32_t k = 0; k < shown; k++) {
        const mt_procedure *p = &prog->procs[order[k]];
        char src[160], flags[80], name[65];
        mt_ui_source_range(prog, p, NULL, p->nblocks, src, sizeof src);
        procedure_flags(p, flags, sizeof flags);
        mt_escape_text(name, sizeof name, p->name);
        fprintf(fp, "  0x%-16" PRIx64 " %-32s %7" PRIu32 " %8" PRIu64 " %7" PRIu64 " %7" PRIu64 " %5" PRIu32
                    "  %-24s %s\n",
                p->entry, name, p->nblocks, p->ninsns, p->mem_reads, p->mem_writes, p->nloops, src, flags);
    }
    free(order);
}

static void print_loop_forest(FILE *fp, const mt_program *prog, const mt_procedure *p)
{
    for (uint32_t l = 0; l < p->nloops; l++) {
        const mt_loop *loop = &p->loops[l];
        char src[160];
        mt_ui_source_range(prog, p, loop->blocks, loop->nblocks, src, sizeof src);
        fprintf(fp, "    %*sloop %" PRIu32 " at 0x%" PRIx64 "%s: depth %" PRIu32 ", %" PRIu32 " blocks, %" PRIu32
                    " entries, %" PRIu32 " exits, %" PRIu32 " back edges",
                (int)(2 * (loop->depth - 1)), "", l, p->blocks[loop->header].start,
                loop->irreducible ? " (irreducible)" : "", loop->depth, loop->nblocks, loop->nentry_edges,
                loop->nexit_edges, loop->nback_edges);
        if (!loop->irreducible) {
            fprintf(fp, ", %s", loop->estimable ? "estimable" : "not estimable");
            if (loop->tdes >= 0)
                fprintf(fp, " (Tot %.3g, TDES %.0f)", loop->tot, loop->tdes);
        }
        fprintf(fp, "%s%s\n", src[0] ? "  " : "", src);
    }
}

static void print_edge_target(FILE *fp, const mt_procedure *p, const mt_edge *e)
{
    if (e->dst != MT_NONE)
        fprintf(fp, "0x%" PRIx64, p->blocks[e->dst].start);
    else if (e->target)
        fprintf(fp, "0x%" PRIx64 " (outside)", e->target);
    else
        fputs("(leaves)", fp);
}

/* Blocks that end in a recovered jump table, with the table's targets. */
static void print_jump_tables(FILE *fp, const mt_procedure *p)
{
    bool any = false;
    for (uint32_t b = 0; b < p->nblocks; b++) {
        const mt_block *blk = &p->blocks[b];
        if (blk->term != MT_TERM_TABLE_JUMP)
            continue;
        if (!any)
            fprintf(fp, "  jump tables:\n");
        any = true;
        fprintf(fp, "    0x%-10" PRIx64 " %" PRIu32 " targets:", blk->start, blk->nsucc);
        for (uint32_t k = 0; k < blk->nsucc; k++) {
            fputs(k && k % 8 == 0 ? "\n                              " : " ", fp); /* 8 per line */
            print_edge_target(fp, p, &p->edges[blk->first_succ + k]);
        }
        fputc('\n', fp);
    }
}

static void print_procedure_detail(FILE *fp, const mt_program *prog, uint32_t index)
{
    const mt_procedure *p = &prog->procs[index];
    char flags[80], src[160], name[1024];
    procedure_flags(p, flags, sizeof flags);
    mt_ui_source_range(prog, p, NULL, p->nblocks, src, sizeof src);
    mt_escape_text(name, sizeof name, p->name);
    fprintf(fp, "\nprocedure %s at 0x%" PRIx64 ", %" PRIu64 " bytes%s%s\n", name, p->entry, p->size,
            src[0] ? ", " : "", src);
    fprintf(fp, "  %" PRIu32 " blocks, %" PRIu64 " instructions, %" PRIu64 " loads, %" PRIu64 " stores; %s\n",
            p->nblocks, p->ninsns, p->mem_reads, p->mem_writes, flags[0] ? flags : "not estimable");
    if (p->parent != MT_NONE) {
        fputs("  split part of ", fp);
        mt_fputs_escaped(fp, prog->procs[p->parent].name);
        fputc('\n', fp);
    }
    if (p->code_as_data) {
        char why[1024];
        mt_escape_text(why, sizeof why, p->code_as_data);
        fprintf(fp, "  left out: %s\n", why);
    }
    if (!p->resolved) {
        fputs("  unresolved: ", fp);
        mt_fputs_escaped(fp, p->unresolved_reason ? p->unresolved_reason : "?");
        fputc('\n', fp);
    }
    if (p->tdes >= 0)
        fprintf(fp, "  Tot %.4g, TDES %.0f\n", p->tot, p->tdes);
    fprintf(fp, "  blocks:\n");
    for (uint32_t b = 0; b < p->nblocks; b++) {
        const mt_block *blk = &p->blocks[b];
        fprintf(fp, "    0x%-10" PRIx64 " %3" PRIu32 " insns %2" PRIu32 "r %2" PRIu32 "w %-14s", blk->start,
                blk->ninsns, blk->mem_reads, blk->mem_writes, mt_term_kind_name(blk->term));
        for (uint32_t k = 0; k < blk->nsucc; k++) {
            const mt_edge *e = &p->edges[blk->first_succ + k];
            fprintf(fp, " %s->", mt_edge_kind_name(e->kind));
            print_edge_target(fp, p, e);
        }
        if (blk->line && blk->file < prog->nfiles) {
            const char *name = strrchr(prog->files[blk->file], '/');
            fputs("  [", fp);
            mt_fputs_escaped(fp, name ? name + 1 : prog->files[blk->file]);
            fprintf(fp, ":%" PRIu32 "]", blk->line);
        }
        fputc('\n', fp);
    }
    if (p->nloops) {
        fprintf(fp, "  loops:\n");
        print_loop_forest(fp, prog, p);
    }
    uint32_t *cuts;
    uint32_t ncuts = mt_region_cuts(prog, index, &cuts);
    if (ncuts > 1) {
        fprintf(fp, "  region cut points (time a region with 'mtool instrument --time %s#A-B'):\n",
                name);
        for (uint32_t k = 0; k < ncuts; k++)
            fprintf(fp, "%s%u 0x%" PRIx64 "%s", k % 6 == 0 ? "    " : "  ", k,
                    p->blocks[cuts[k]].start, k % 6 == 5 || k + 1 == ncuts ? "\n" : "");
    }
    free(cuts);
    print_jump_tables(fp, p);
    if (p->ncalls) {
        fprintf(fp, "  calls:\n");
        for (uint32_t c = 0; c < p->ncalls; c++) {
            const mt_call_site *s = &p->calls[c];
            fprintf(fp, "    0x%-10" PRIx64 " %-8s ", s->addr, mt_call_kind_name(s->kind));
            mt_fputs_escaped(fp, s->callee != MT_NONE ? prog->procs[s->callee].name : "(unknown)");
            fputs(s->loop != MT_NONE ? "  (in a loop)\n" : "\n", fp);
        }
    }
}

static void print_all_loops(FILE *fp, const mt_program *prog)
{
    fprintf(fp, "\nloop forests:\n");
    for (uint32_t i = 0; i < prog->nprocs; i++) {
        const mt_procedure *p = &prog->procs[i];
        if (!p->nloops)
            continue;
        fputs("  ", fp);
        mt_fputs_escaped(fp, p->name);
        fprintf(fp, " (0x%" PRIx64 ")\n", p->entry);
        print_loop_forest(fp, prog, p);
    }
}

static void print_callgraph(FILE *fp, const mt_program *prog)
{
    fprintf(fp, "\ncall graph: %" PRIu32 " edges, %" PRIu32 " strongly connected components\n", prog->ncg_edges,
            prog->nsccs);
    for (uint32_t e = 0; e < prog->ncg_edges; e++) {
        const mt_cg_edge *edge = &prog->cg_edges[e];
        fputs("  ", fp);
        mt_fputs_escaped(fp, prog->procs[edge->caller].name);
        fputs(" -> ", fp);
        mt_fputs_escaped(fp, prog->procs[edge->callee].name);
        fprintf(fp, "  (%" PRIu32 " site%s, %s)\n", edge->nsites, edge->nsites == 1 ? "" : "s",
                mt_call_kind_name(edge->kind));
    }
    fprintf(fp, "\nestimability (Tot = TDES means every descendant works only for this procedure):\n");
    for (uint32_t i = 0; i < prog->nprocs; i++) {
        const mt_procedure *p = &prog->procs[i];
        if (p->is_plt)
            continue;
        char name[65];
        mt_escape_text(name, sizeof name, p->name);
        fprintf(fp, "  %-40s %-14s Tot %-8.4g TDES ", name, p->estimable ? "estimable" : "not estimable",
                p->tot);
        if (p->tdes >= 0)
            fprintf(fp, "%.0f", p->tdes);
        else
            fputs("(not computed)", fp);
        fprintf(fp, "%s\n", p->recursive ? "  recursive" : "");
    }
}

static void print_warnings(const mt_program *prog)
{
    const uint32_t limit = 20;
    for (uint32_t w = 0; w < prog->nwarnings && w < limit; w++) {
        char line[1024]; /* warnings quote symbol names */
        mt_escape_text(line, sizeof line, prog->warnings[w]);
        fprintf(stderr, "mtool: warning: %s\n", line);
    }
    if (prog->nwarnings > limit)
        fprintf(stderr, "mtool: warning: ... and %" PRIu32 " more (all of them: --json)\n",
                prog->nwarnings - limit);
}

static void print_text(FILE *fp, const mt_program *prog, const analyze_args *a)
{
    print_header(fp, prog);
    if (a->function)
        print_procedure_detail(fp, prog, mt_find_procedure(prog, a->function));
    else
        print_procedure_table(fp, prog);
    if (a->loops)
        print_all_loops(fp, prog);
    if (a->callgraph)
        print_callgraph(fp, prog);
}

/* ---- the command ------------------------------------------------------ */

static void print_stats(const mt_program *prog, double seconds)
{
    uint64_t rss = mt_peak_rss_bytes();
    double insns = (double)prog->ninsns;
    fprintf(stderr,
            "stats: wall %.3f s, %" PRIu64 " instructions, %.2f M instructions/s, peak RSS %.1f MiB, %.1f "
            "bytes/instruction\n",
            seconds, prog->ninsns, seconds > 0 ? insns / seconds / 1e6 : 0.0, (double)rss / (1024.0 * 1024.0),
            insns > 0 ? (double)rss / insns : 0.0);
}

static int write_output(const mt_program *prog, const analyze_args *a)
{
    static char buffer[1 << 20];
    mt_outfile out = {0};
    mt_error err;
    FILE *fp = mt_ui_output_open(&out, a->out);
    if (!fp)
        return 1;
    setvbuf(fp, buffer, _IOFBF, sizeof buffer);
    if (a->costs) {
        if (mt_print_costs(fp, prog, a->counts, a->function, &err) != 0) {
            mt_ui_error("%s", err.msg);
            if (a->out)
                mt_outfile_abort(&out);
            return 1;
        }
    } else if (a->json) {
        mt_json_options jo = {.loops = true, .callgraph = true, .blocks = true, .only_function = a->function};
        mt_write_analysis_json(fp, prog, &jo);
    } else {
        print_text(fp, prog, a);
    }
    return mt_ui_output_close(&out, a->out);
}

int mt_cmd_analyze(int argc, char **argv)
{
    analyze_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    mt_analyze_options opt;
    mt_analyze_options_init(&opt);
    opt.want_lines = !a.no_lines;
    mt_error err;
    double t0 = mt_now_seconds();
    mt_program *prog = mt_analyze(a.path, &opt, &err);
    if (!prog) {
        mt_ui_error("%s", err.msg);
        return 1;
    }
    if (a.function && mt_find_procedure(prog, a.function) == MT_NONE) {
        mt_ui_error("%s: no procedure named '%s'", a.path, a.function);
        mt_program_free(prog);
        return 1;
    }
    rc = write_output(prog, &a);
    if (a.stats)
        print_stats(prog, mt_now_seconds() - t0);
    print_warnings(prog);
    mt_program_free(prog);
    return rc;
}
