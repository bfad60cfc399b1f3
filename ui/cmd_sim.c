/* ui/cmd_sim.c — `mtool sim --trace FILE` and `mtool sim -- BIN ARGS`: a
 * trace file, or the loads and stores of a traced run (run/trace.c),
 * through the cache simulator (sim/), its figures as text or JSON
 * (docs/SIMULATOR.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/sim.h"
#include "ui.h"

const char mt_sim_usage[] =
    "usage: mtool sim --trace FILE [options]\n"
    "       mtool sim [options] -- BIN ARGS...\n"
    "       mtool sim [options] [--all] RUNDIR\n"
    "\n"
    "Runs a trace of memory references through a cache simulator and reports, per\n"
    "level, references, misses by cause (cold, capacity, conflict: Hill's 3C against a\n"
    "fully associative LRU cache of the same size), evictions, writebacks and how much\n"
    "of each line brought in was used (spatial: bytes; temporal: reuses); per code\n"
    "object (procedures of --binary for lackey traces) references, misses and the use\n"
    "of the lines its references brought in.\n"
    "The machine is this one, read from sysfs, unless a description file or the flags\n"
    "say otherwise (docs/SIMULATOR.md).\n"
    "With -- BIN ARGS, runs a copy of BIN whose procedures' loads and stores (explicit\n"
    "operands, stack traffic, rep movs/stos, vector operands) go to the simulator as\n"
    "the program runs, code objects being BIN's procedures, data objects its globals\n"
    "and their struct fields (DWARF), heap blocks by allocation site and call path,\n"
    "stack frames by procedure and TLS (per data object, code x data, causes of\n"
    "replacement); exits with the program's exit status.  The shared libraries it\n"
    "loads are traced too, as 'mtool count' counts them (--libs): their code objects\n"
    "are named LIB:PROCEDURE.\n"
    "With RUNDIR (after 'mtool run' or 'mtool time'), traces that run's program and\n"
    "arguments, only the m-objects pass 2 timed and what they call (--all: every\n"
    "procedure; the libraries' objects too, in the libraries its pass 1 counted),\n"
    "and sets each object's stall estimate (simulated misses per level x\n"
    "the latency 'mtool calibrate' measured there; the misses of streams it sees\n"
    "coming at what a line of a walk in address order costs there)\n"
    "beside the overhead pass 2 measured, with how they agree; the JSON report is\n"
    "kept as RUNDIR/sim.json and RUNDIR/report.html made again with it ('mtool help\n"
    "report').\n"
    "\n"
    "options:\n"
    "  --trace FILE          the trace to read\n"
    "  --format din|lackey   Dinero's din format (default), or the output of\n"
    "                        valgrind --tool=lackey --trace-mem=yes\n"
    "  --binary BIN          name code objects by BIN's procedures (the addresses of\n"
    "                        lackey's I lines, din's fetches)\n"
    "  --load-base ADDR      where the PIE --binary was loaded (its link-time 0); default\n"
    "                        0x108000 for lackey traces (Valgrind's place), 0 for din\n"
    "  --machine FILE        the machine description instead of sysfs's\n"
    "  --I1=S,W,L --D1=S,W,L --L2=S,W,L --L3=S,W,L --LL=S,W,L\n"
    "                        a level's size (K, M, G), ways, line bytes; 'none' drops\n"
    "                        it (below L1: with every level under it)\n"
    "  --replacement=lru|plru|random   every level's (LEVEL.replacement=... in a file)\n"
    "  --inclusion=non-inclusive|inclusive|exclusive   every level below L1's\n"
    "  --write-allocate=yes|no         every level's\n"
    "  --prefetch=none|next-line|stride  every level's (tagged next-line; stride by\n"
    "                        instruction address, lackey traces)\n"
    "  --straddle=access|line          a reference over two lines counts once (as\n"
    "                        Cachegrind does) or once per line\n"
    "  --seed=N              the random replacement's seed (default 1)\n"
    "  --cpu-map=C0,C1,...   with --set cpus=N: thread k on CPU Ck (default k mod N)\n"
    "  --cpus=N --nodes=N    N processors; N nodes, each with its own shared levels\n"
    "                        and memory (CPU c on node c * nodes / cpus)\n"
    "  --placement=first-touch|interleave  the home node of each page\n"
    "  --place=LO-HI=NODE    pages of bytes [LO, HI) homed on NODE (repeatable)\n"
    "  --TLB1=E,W --TLB2=E,W the data TLB's levels: entries, ways (default: cpuid's);\n"
    "                        'none' drops the level and the one below\n"
    "  --ITLB=E,W            the instruction TLB: entries, ways (default: cpuid's); 'none'\n"
    "  --tlb-page=SIZE       the page a translation covers (default 4K; 2M: huge pages)\n"
    "  --set KEY=VALUE       any setting of the description file (D1.prefetch=stride,\n"
    "                        L2.inclusion=inclusive, ...)\n"
    "  --cachegrind          Cachegrind's model: I1, D1 and the last level only, LRU,\n"
    "                        write-allocate, non-inclusive, no prefetch, straddle=access\n"
    "  --misses-only         only misses per level and per code object (and references),\n"
    "                        several times faster: no miss causes, evictions, writebacks,\n"
    "                        line use, data objects or pairs; LRU, non-inclusive, no\n"
    "                        prefetch; not stored in the history\n"
    "  --sample-sets 1/K     simulate 1 set in K (Kessler, Hill & Wood): estimates,\n"
    "                        with an error bound\n"
    "  --sample-time ON/PERIOD[/WARM]  of every PERIOD references (a prime: no\n"
    "                        aliasing with loops), WARM (default ON) warm the caches\n"
    "                        uncounted, ON are counted, the rest skipped: estimates\n"
    "  --print-machine       print the machine description and exit\n"
    "  --libs all|none|NAME,...  the shared libraries traced with -- BIN (default:\n"
    "                        every one it loads, glibc's included; RUNDIR\n"
    "                        traces the ones its pass 1 counted: their objects)\n"
    "  --all                 with RUNDIR: trace every procedure, not only pass 2's objects\n"
    "                        (then the stall outside them is estimated too)\n"
    "  --what-if             simulate the same references again once per remedy (pad or\n"
    "                        align a data object, a line half or twice as long, another\n"
    "                        page placement or thread-to-node mapping) and propose, per\n"
    "                        top problem (code x data cell), the one that saves most\n"
    "  --json                JSON instead of text\n"
    "  -o FILE               write to FILE (complete or not at all)\n"
    "  --no-store            do not record the run in the history (a traced run, or a\n"
    "                        trace with --binary; see 'mtool help history')\n";

typedef struct {
    const char *trace, *format, *binary, *machine, *out, *load_base;
    const char *sample_sets, *sample_time;
    mt_sim_sample sample;         /* from them (mode MT_SIM_EXACT without) */
    char **program;               /* -- BIN ARGS..., NULL-terminated, or NULL */
    const char *libs;             /* --libs, or NULL: the default */
    const char *rundir;           /* RUNDIR, or NULL */
    int argc;                     /* the command line, for the history */
    char **argv;
    bool json, cachegrind, print_machine, no_store, all, misses_only, what_if;
    const mt_whatif_report *whatif; /* --what-if's figures, once the simulation is done */
    const char *settings[32][2]; /* key, value, in the order given */
    unsigned nsettings;
} sim_args;

/* --KEY=VALUE flags that are machine settings, and their keys. */
static const char *const setting_flags[][2] = {
    {"--I1=", "I1"},
    {"--D1=", "D1"},
    {"--L2=", "L2"},
    {"--L3=", "L3"},
    {"--LL=", "LL"},
    {"--replacement=", "replacement"},
    {"--inclusion=", "inclusion"},
    {"--write-allocate=", "write_allocate"},
    {"--prefetch=", "prefetch"},
    {"--straddle=", "straddle"},
    {"--seed=", "seed"},
    {"--cpu-map=", "cpu_map"},
    {"--cpus=", "cpus"},
    {"--nodes=", "nodes"},
    {"--placement=", "placement"},
    {"--place=", "place"},
    {"--TLB1=", "TLB1"},
    {"--TLB2=", "TLB2"},
    {"--ITLB=", "ITLB"},
    {"--tlb-page=", "tlb_page"},
};

static int parse_setting(sim_args *a, const char *s)
{
    for (size_t k = 0; k < MT_ARRAY_LEN(setting_flags); k++) {
        size_t n = strlen(setting_flags[k][0]);
        if (!strncmp(s, setting_flags[k][0], n)) {
            if (a->nsettings == MT_ARRAY_LEN(a->settings))
                return -1;
            a->settings[a->nsettings][0] = setting_flags[k][1];
            a->settings[a->nsettings++][1] = s + n;
            return 0;
        }
    }
    return -1;
}

static int parse_args(sim_args *a, int argc, char **argv)
{
    a->argc = argc;
    a->argv = argv;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        bool has_value = i + 1 < argc;
        if (!strcmp(s, "--") && has_value) {
            a->program = &argv[i + 1];
            break;
        } else if (!strcmp(s, "--trace") && has_value)
            a->trace = argv[++i];
        else if (!strcmp(s, "--format") && has_value)
            a->format = argv[++i];
        else if (!strcmp(s, "--binary") && has_value)
            a->binary = argv[++i];
        else if (!strcmp(s, "--load-base") && has_value)
            a->load_base = argv[++i];
        else if (!strcmp(s, "--sample-sets") && has_value)
            a->sample_sets = argv[++i];
        else if (!strcmp(s, "--sample-time") && has_value)
            a->sample_time = argv[++i];
        else if (!strcmp(s, "--machine") && has_value)
            a->machine = argv[++i];
        else if (!strcmp(s, "-o") && has_value)
            a->out = argv[++i];
        else if (!strcmp(s, "--json"))
            a->json = true;
        else if (!strcmp(s, "--cachegrind"))
            a->cachegrind = true;
        else if (!strcmp(s, "--misses-only"))
            a->misses_only = true;
        else if (!strcmp(s, "--what-if"))
            a->what_if = true;
        else if (!strcmp(s, "--print-machine"))
            a->print_machine = true;
        else if (!strcmp(s, "--no-store"))
            a->no_store = true;
        else if (!strcmp(s, "--set") && has_value && strchr(argv[i + 1], '=') &&
                 a->nsettings < MT_ARRAY_LEN(a->settings)) {
            /* KEY=VALUE: the key as the description file has it */
            char *eq = strchr(argv[++i], '=');
            *eq = 0;
            a->settings[a->nsettings][0] = argv[i];
            a->settings[a->nsettings++][1] = eq + 1;
        }
        else if (!strcmp(s, "--all"))
            a->all = true;
        else if (!strcmp(s, "--libs") && has_value)
            a->libs = argv[++i];
        else if (s[0] != '-' && !a->rundir)
            a->rundir = s;
        else if (parse_setting(a, s) != 0) {
            mt_ui_error("sim: unknown or incomplete option '%s'; see 'mtool help sim'", s);
            return -1;
        }
    }
    if (!a->trace && !a->program && !a->rundir && !a->print_machine) {
        mt_ui_error("sim: no trace given (--trace FILE, -- BIN ARGS or RUNDIR); see 'mtool "
                    "help sim'");
        return -1;
    }
    if (!!a->trace + !!a->program + !!a->rundir > 1) {
        mt_ui_error("sim: --trace FILE, -- BIN ARGS and RUNDIR: one of them");
        return -1;
    }
    if (a->all && !a->rundir) {
        mt_ui_error("sim: --all goes with RUNDIR (the objects of a pass 2)");
        return -1;
    }
    if (a->libs && !a->program) {
        mt_ui_error("sim: --libs goes with -- BIN ARGS (RUNDIR traces the libraries its pass 1 "
                    "counted)");
        return -1;
    }
    if (a->load_base && !a->binary) {
        mt_ui_error("sim: --load-base needs --binary (the binary it places)");
        return -1;
    }
    return 0;
}

/* The machine: a description file or sysfs (or nothing, when sysfs has
 * none and the flags give D1), then --cachegrind, then the flags in order. */
static int build_machine(const sim_args *a, mt_sim_machine *m)
{
    mt_error err;
    bool flags_give_d1 = false;
    for (unsigned i = 0; i < a->nsettings; i++)
        flags_give_d1 |= !strcmp(a->settings[i][0], "D1");
    int rc = a->machine ? mt_sim_machine_read(m, a->machine, &err)
                        : mt_sim_machine_from_sysfs(m, NULL, &err);
    if (rc != 0 && !a->machine && flags_give_d1) {
        mt_sim_machine_init(m);
        snprintf(m->source, sizeof m->source, "flags");
        rc = 0;
    }
    if (rc != 0) {
        mt_ui_error("%s", err.msg);
        return -1;
    }
    if (a->cachegrind)
        mt_sim_machine_cachegrind(m);
    for (unsigned i = 0; i < a->nsettings; i++)
        if (mt_sim_machine_set(m, a->settings[i][0], a->settings[i][1], &err) != 0) {
            mt_ui_error("sim: %s", err.msg);
            return -1;
        }
    if (mt_sim_machine_check(m, &err) != 0) {
        mt_ui_error("sim: %s", err.msg);
        return -1;
    }
    if (a->nsettings || a->cachegrind) { /* say the description was changed */
        size_t n = strlen(m->source);
        snprintf(m->source + n, sizeof m->source - n, " + flags");
    }
    return 0;
}

/* --sample-sets or --sample-time into a->sample, checked against the machine. */
static int parse_sample(sim_args *a, const mt_sim_machine *m)
{
    mt_error err;
    if (a->sample_sets && a->sample_time) {
        mt_ui_error("sim: --sample-sets and --sample-time: one or the other");
        return -1;
    }
    const char *spec = a->sample_sets ? a->sample_sets : a->sample_time;
    mt_sim_sampling mode = a->sample_sets ? MT_SIM_SAMPLE_SETS : MT_SIM_SAMPLE_TIME;
    if (spec && (mt_sim_sample_parse(&a->sample, mode, spec, &err) != 0 ||
                 mt_sim_sample_check(&a->sample, m, &err) != 0)) {
        mt_ui_error("sim: %s", err.msg);
        return -1;
    }
    if (spec && !a->no_store) { /* the history's figures are counts, not estimates */
        a->no_store = true;
        fprintf(stderr, "mtool: sim: a sampled run is not stored in the history (its counts "
                        "are estimates)\n");
    }
    return 0;
}

/* A sampled run says so, how its counts were estimated, and their error. */
static void print_sampling(FILE *fp, mt_sim *s)
{
    const mt_sim_estimate *e = mt_sim_estimate_counts(s);
    if (!e)
        return;
    const mt_sim_sample *smp = &e->sample;
    if (smp->mode == MT_SIM_SAMPLE_SETS)
        fprintf(fp, "SAMPLED: 1 set in %" PRIu32 " (set sampling)", smp->period);
    else
        fprintf(fp, "SAMPLED: %" PRIu32 " of every %" PRIu32 " references after %" PRIu32
                    " warming ones (time sampling)", smp->on, smp->period, smp->warm);
    fprintf(fp, ": %" PRIu64 " of %" PRIu64 " references counted; every count below is an "
                "estimate, %.3g x the counted ones; misses within (2 standard errors):",
            e->counted, e->offered, e->scale);
    for (unsigned l = 0; l < mt_sim_level_count(s); l++)
        if (e->error[l] < 0)
            fprintf(fp, " %s unknown", mt_sim_level(s, l)->desc->name);
        else
            fprintf(fp, " %s +-%.1f%%", mt_sim_level(s, l)->desc->name, 100 * e->error[l]);
    if (smp->mode == MT_SIM_SAMPLE_TIME) {
        fprintf(fp, "; cold-start bias: up to this share of the misses may be hits "
                    "(first references in the sample):");
        for (unsigned l = 0; l < mt_sim_level_count(s); l++)
            fprintf(fp, " %s %.1f%%", mt_sim_level(s, l)->desc->name, 100 * e->cold_start[l]);
    }
    fputc('\n', fp);
}

static void json_sampling(FILE *fp, mt_sim *s)
{
    const mt_sim_estimate *e = mt_sim_estimate_counts(s);
    if (!e)
        return;
    const mt_sim_sample *smp = &e->sample;
    fprintf(fp, ",\n  \"sampling\": {\"mode\": \"%s\", \"on\": %" PRIu32 ", \"period\": %" PRIu32
                ", \"warm\": %" PRIu32 ", \"offered\": %" PRIu64 ", \"counted\": %" PRIu64
                ", \"scale\": ",
            smp->mode == MT_SIM_SAMPLE_SETS ? "sets" : "time", smp->on, smp->period, smp->warm,
            e->offered, e->counted);
    mt_json_number(fp, e->scale);
    fprintf(fp, ", \"miss_error\": {");
    for (unsigned l = 0; l < mt_sim_level_count(s); l++) {
        fprintf(fp, "%s\"%s\": ", l ? ", " : "", mt_sim_level(s, l)->desc->name);
        if (e->error[l] < 0)
            fprintf(fp, "null");
        else
            mt_json_number(fp, e->error[l]);
    }
    fprintf(fp, "}, \"cold_start\": {");
    for (unsigned l = 0; l < mt_sim_level_count(s); l++) {
        fprintf(fp, "%s\"%s\": ", l ? ", " : "", mt_sim_level(s, l)->desc->name);
        mt_json_number(fp, e->cold_start[l]);
    }
    fprintf(fp, "}}");
}

/* ---- code objects: the pairs summed per code id ---- */

typedef struct {
    uint32_t code;
    uint64_t refs, misses[MT_SIM_MAX_LEVELS][MT_SIM_NCAUSES];
    uint64_t tlb_misses[MT_SIM_MAX_TLB], itlb_misses;
} code_row;

static uint64_t row_misses(const code_row *r, unsigned level)
{
    uint64_t n = 0;
    for (int c = 0; c < MT_SIM_NCAUSES; c++)
        n += r->misses[level][c];
    return n;
}

static unsigned sort_level; /* the level code rows are sorted by */

static int compare_rows(const void *a, const void *b)
{
    uint64_t x = row_misses(a, sort_level), y = row_misses(b, sort_level);
    if (x != y)
        return x > y ? -1 : 1;
    return ((const code_row *)a)->code < ((const code_row *)b)->code ? -1 : 1;
}

/* Rows by code id (pairs come sorted by code), the most missing first at
 * the last level. */
static code_row *code_rows(mt_sim *s, size_t *n)
{
    size_t np;
    const mt_sim_pair *p = mt_sim_pairs(s, &np);
    code_row *rows = mt_xcalloc(np + 1, sizeof *rows);
    size_t nr = 0;
    for (size_t i = 0; i < np; i++) {
        if (!nr || rows[nr - 1].code != p[i].code)
            rows[nr++].code = p[i].code;
        code_row *r = &rows[nr - 1];
        r->refs += p[i].refs;
        for (unsigned l = 0; l < MT_SIM_MAX_LEVELS; l++)
            for (int c = 0; c < MT_SIM_NCAUSES; c++)
                r->misses[l][c] += p[i].misses[l][c];
        for (unsigned l = 0; l < MT_SIM_MAX_TLB; l++)
            r->tlb_misses[l] += p[i].tlb_misses[l];
        r->itlb_misses += p[i].itlb_misses;
    }
    sort_level = mt_sim_level_count(s) - 1;
    qsort(rows, nr, sizeof *rows, compare_rows);
    *n = nr;
    return rows;
}

/* The shared libraries a traced run traced with its executable, whose code
 * objects follow the executable's (mt_trace_library_of): set while its
 * report is written, since every view (per code object, code x data,
 * coherence, what-if) names code objects through mt_sim_code_name with the
 * executable's program alone. */
static const mt_pass1_libraries *traced_libraries;
static const mt_program *traced_executable;

/* The library of a traced run holding code object `code` (its own id in
 * *own), or NULL. */
static const mt_pass1_library *library_of(const mt_program *prog, uint32_t code, uint32_t *own)
{
    if (!prog || prog != traced_executable || !traced_libraries)
        return NULL;
    return mt_trace_library_of(traced_libraries, code, own);
}

/* A code object's name: its procedure's, or NAME@0xHEADER for a loop (as
 * `mtool time --time` reads it back); a library's LIB:NAME
 * (liblzma.so.5:lzma_encode), as reports name library objects. */
void mt_sim_code_name(const mt_program *prog, uint32_t code, char *buf, size_t n)
{
    mt_timed_object o = {0};
    uint32_t own;
    const mt_pass1_library *lib = library_of(prog, code, &own);
    if (lib && mt_code_object_split(lib->prog, own, &o.proc, &o.loop)) {
        int k = snprintf(buf, n, "%s:", lib->name);
        if (k >= 0 && (size_t)k < n)
            mt_timed_object_format(lib->prog, &o, buf + k, n - (size_t)k);
    } else if (prog && mt_code_object_split(prog, code, &o.proc, &o.loop)) {
        mt_timed_object_format(prog, &o, buf, n);
    } else {
        snprintf(buf, n, "%s", prog ? "(outside the binary's procedures)" : "(all code)");
    }
}

/* ---- text ---- */

static double percent(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static void print_machine_line(FILE *fp, const mt_sim *s, const mt_sim_machine *m)
{
    char *source = mt_ui_escape(m->source);
    fprintf(fp, "machine (%s, straddle=%s):", source, m->straddle_line ? "line" : "access");
    free(source);
    for (unsigned i = 0; i < mt_sim_level_count(s); i++) {
        const mt_sim_level_desc *d = mt_sim_level(s, i)->desc;
        bool kib = !(d->size % 1024);
        fprintf(fp, "%s %s %" PRIu64 " %s %" PRIu32 "-way %" PRIu32 " B %s%s%s", i ? "," : "",
                d->name, kib ? d->size >> 10 : d->size, kib ? "KiB" : "B", d->ways, d->line,
                mt_sim_replacement_name(d->replacement),
                d->name[0] == 'L' ? " " : "",
                d->name[0] == 'L' ? mt_sim_inclusion_name(d->inclusion) : "");
        if (!d->write_allocate)
            fprintf(fp, " no-write-allocate");
        if (d->prefetch != MT_SIM_PREFETCH_NONE)
            fprintf(fp, " %s prefetch", mt_sim_prefetch_name(d->prefetch));
    }
    for (unsigned i = 0; i < mt_sim_tlb_count(s); i++) {
        const mt_sim_tlb_desc *d = mt_sim_tlb(s, i)->desc;
        fprintf(fp, ", %s %" PRIu32 " entries %" PRIu32 "-way %" PRIu64 " KiB pages", d->name,
                d->entries, d->ways, mt_sim_tlb_page(s) >> 10);
    }
    const mt_sim_tlb_stats *itlb = mt_sim_itlb(s);
    if (itlb)
        fprintf(fp, ", %s %" PRIu32 " entries %" PRIu32 "-way %" PRIu64 " KiB pages",
                itlb->desc->name, itlb->desc->entries, itlb->desc->ways,
                mt_sim_tlb_page(s) >> 10);
    fputc('\n', fp);
}

static void print_levels(FILE *fp, const mt_sim *s)
{
    fprintf(fp, "\n%-5s %14s %12s %7s %12s %12s %12s %12s %12s\n", "level", "refs", "misses",
            "miss%", "cold", "capacity", "conflict", "evictions", "writebacks");
    for (unsigned i = 0; i < mt_sim_level_count(s); i++) {
        const mt_sim_level_stats *st = mt_sim_level(s, i);
        fprintf(fp, "%-5s %14" PRIu64 " %12" PRIu64 " %6.2f%% %12" PRIu64 " %12" PRIu64
                    " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 "\n",
                st->desc->name, st->refs, st->misses, percent(st->misses, st->refs),
                st->cause[MT_SIM_COLD], st->cause[MT_SIM_CAPACITY], st->cause[MT_SIM_CONFLICT],
                st->evictions, st->writebacks);
    }
}

/* The data TLB's levels (none printed when it was not simulated). */
static void print_tlb(FILE *fp, const mt_sim *s)
{
    for (unsigned i = 0; i < mt_sim_tlb_count(s); i++) {
        const mt_sim_tlb_stats *st = mt_sim_tlb(s, i);
        fprintf(fp, "%s%-5s %14" PRIu64 " %12" PRIu64 " %6.2f%%%s\n",
                i ? "" : "\ndata TLB translations (a page each; the last level's misses are page "
                         "walks):\n",
                st->desc->name, st->refs, st->misses, percent(st->misses, st->refs),
                i + 1 == mt_sim_tlb_count(s) ? " walks" : "");
    }
    const mt_sim_tlb_stats *itlb = mt_sim_itlb(s);
    if (itlb)
        fprintf(fp, "\ninstruction TLB translations (a page each fetch touches):\n%-5s %14" PRIu64
                    " %12" PRIu64 " %6.2f%%\n",
                itlb->desc->name, itlb->refs, itlb->misses, percent(itlb->misses, itlb->refs));
}

static void print_use(FILE *fp, const mt_sim *s)
{
    fprintf(fp, "\nline use (lines brought in, by share of bytes used / by reuses):\n");
    for (unsigned i = 0; i < mt_sim_level_count(s); i++) {
        const mt_sim_level_stats *st = mt_sim_level(s, i);
        fprintf(fp, "  %-3s spatial", st->desc->name);
        for (int b = 0; b < MT_SIM_SPATIAL_BUCKETS; b++)
            fprintf(fp, " %s%d/8:%" PRIu64, b ? "<=" : "", b, st->spatial[b]);
        fprintf(fp, "\n      temporal");
        for (int b = 0; b < MT_SIM_TEMPORAL_BUCKETS; b++)
            if (st->temporal[b])
                fprintf(fp, " %s%u:%" PRIu64, b ? ">=" : "", b ? 1u << (b - 1) : 0u,
                        st->temporal[b]);
        fputc('\n', fp);
    }
}

/* Code tallies, the most missing first at the last level (then by id). */
static int compare_tallies(const void *a, const void *b)
{
    const mt_sim_code_tally *x = a, *y = b;
    uint64_t mx = x->misses[sort_level], my = y->misses[sort_level];
    if (mx != my)
        return mx > my ? -1 : 1;
    return x->code < y->code ? -1 : 1;
}

static mt_sim_code_tally *sorted_tallies(mt_sim *s, size_t *n)
{
    const mt_sim_code_tally *t = mt_sim_code_tallies(s, n);
    mt_sim_code_tally *copy = mt_xcalloc(*n + 1, sizeof *copy);
    if (*n)
        memcpy(copy, t, *n * sizeof *copy);
    sort_level = mt_sim_level_count(s) - 1;
    qsort(copy, *n, sizeof *copy, compare_tallies);
    return copy;
}

static void print_code_objects(FILE *fp, mt_sim *s, const mt_sim_code_map *map)
{
    size_t n;
    mt_sim_code_tally *rows = sorted_tallies(s, &n);
    enum { SHOWN = 20 };
    fprintf(fp, "\ncode objects (by misses at the last level%s):\n%-40s %14s",
            n > SHOWN ? ", the first 20" : "", "name", "refs");
    for (unsigned l = 0; l < mt_sim_level_count(s); l++)
        fprintf(fp, " %10s", mt_sim_level(s, l)->desc->name);
    unsigned ntlb = mt_sim_tlb_count(s);
    if (ntlb)
        fprintf(fp, " %10s", "walks");
    bool itlb = mt_sim_itlb(s) != NULL;
    if (itlb)
        fprintf(fp, " %10s", "ITLB");
    fputc('\n', fp);
    for (size_t i = 0; i < n && i < SHOWN; i++) {
        char raw[MT_SIM_CODE_NAME_MAX];
        mt_sim_code_name(map->prog, rows[i].code, raw, sizeof raw);
        char *name = mt_ui_escape(raw);
        fprintf(fp, "%-40s %14" PRIu64, name, rows[i].refs);
        free(name);
        for (unsigned l = 0; l < mt_sim_level_count(s); l++)
            fprintf(fp, " %10" PRIu64, rows[i].misses[l]);
        if (ntlb)
            fprintf(fp, " %10" PRIu64, rows[i].tlb_misses[ntlb - 1]);
        if (itlb)
            fprintf(fp, " %10" PRIu64, rows[i].itlb_misses);
        fputc('\n', fp);
    }
    free(rows);
}

/* The use of the lines the code objects' references brought in, per
 * level, the same code objects in the same order as print_code_objects. */
static void print_code_use(FILE *fp, mt_sim *s, const mt_sim_code_map *map)
{
    size_t n, nuses;
    mt_sim_code_tally *rows = sorted_tallies(s, &n);
    const mt_sim_object_use *uses = mt_sim_code_uses(s, &nuses);
    enum { SHOWN = 20 };
    fprintf(fp, "\ncode objects' line use (per level: lines their references brought in, %% of "
                "their bytes used before they left, reuses):\n%-40s", "name");
    for (unsigned l = 0; l < mt_sim_level_count(s); l++)
        fprintf(fp, " %10s %7s %10s", mt_sim_level(s, l)->desc->name, "used", "reuses");
    fputc('\n', fp);
    for (size_t i = 0; i < n && i < SHOWN; i++) {
        char raw[MT_SIM_CODE_NAME_MAX];
        mt_sim_code_name(map->prog, rows[i].code, raw, sizeof raw);
        char *name = mt_ui_escape(raw);
        fprintf(fp, "%-40s", name);
        free(name);
        for (unsigned l = 0; l < mt_sim_level_count(s); l++) {
            const mt_sim_object_use *u = mt_sim_use_of(uses, nuses, rows[i].code, l);
            if (u)
                fprintf(fp, " %10" PRIu64 " %6.1f%% %10" PRIu64, u->lines,
                        100 * mt_sim_spatial_use(s, u), u->reuses);
            else
                fprintf(fp, " %10s %7s %10s", "0", "-", "0");
        }
        fputc('\n', fp);
    }
    free(rows);
}

/* The trace, what names its code objects, the machine. */
static void print_heading(FILE *fp, const sim_args *a, const mt_sim *s, const mt_sim_machine *m,
                          const mt_trace_counts *c, const mt_sim_code_map *map)
{
    char *trace = mt_ui_escape(a->program ? a->program[0] : a->trace);
    fprintf(fp, "%s (%s): %" PRIu64 " records: %" PRIu64 " reads, %" PRIu64 " writes, %" PRIu64
                " fetches, %" PRIu64 " flushes\n",
            trace, a->format, c->records, c->reads, c->writes, c->fetches, c->flushes);
    free(trace);
    if (map->prog && a->binary) {
        char *binary = mt_ui_escape(a->binary);
        fprintf(fp, "code objects: the procedures of %s, load base 0x%" PRIx64 "\n", binary,
                map->bias);
        free(binary);
    } else if (map->prog) {
        char *binary = mt_ui_escape(a->program[0]);
        fprintf(fp, "code objects: the procedures and loops of %s, as its traced copy ran them\n",
                binary);
        free(binary);
    }
    print_machine_line(fp, s, m);
}

static void print_text(FILE *fp, const sim_args *a, mt_sim *s, const mt_sim_machine *m,
                       const mt_trace_counts *c, const mt_sim_code_map *map,
                       const mt_data_map *data)
{
    print_heading(fp, a, s, m, c, map);
    print_sampling(fp, s);
    print_levels(fp, s);
    print_tlb(fp, s);
    print_code_objects(fp, s, map);
    print_code_use(fp, s, map);
    if (data)
        mt_sim_data_text(fp, s, data, map->prog);
    print_use(fp, s);
    mt_sim_coherence_text(fp, s, data, map->prog);
    mt_sim_whatif_text(fp, s, a->whatif, data, map->prog);
}

/* ---- JSON ---- */

static void json_causes(FILE *fp, const uint64_t *cause)
{
    fprintf(fp, "{");
    for (int c = 0; c < MT_SIM_NCAUSES; c++)
        fprintf(fp, "%s\"%s\": %" PRIu64, c ? ", " : "", mt_sim_cause_name((mt_sim_cause)c),
                cause[c]);
    fprintf(fp, "}");
}

static void json_u64_array(FILE *fp, const uint64_t *v, int n)
{
    fputc('[', fp);
    for (int i = 0; i < n; i++)
        fprintf(fp, "%s%" PRIu64, i ? ", " : "", v[i]);
    fputc(']', fp);
}

/* A level's description, references and misses (by kind). */
static void json_level_counts(FILE *fp, const mt_sim_level_stats *st)
{
    const mt_sim_level_desc *d = st->desc;
    fprintf(fp, "    {\"name\": \"%s\", \"size\": %" PRIu64 ", \"ways\": %" PRIu32
                ", \"line\": %" PRIu32 ", \"replacement\": \"%s\", \"inclusion\": \"%s\", "
                "\"write_allocate\": %s, \"prefetch\": \"%s\",\n     \"refs\": %" PRIu64
                ", \"misses\": %" PRIu64 ", \"miss_rate\": ",
            d->name, d->size, d->ways, d->line, mt_sim_replacement_name(d->replacement),
            mt_sim_inclusion_name(d->inclusion), d->write_allocate ? "true" : "false",
            mt_sim_prefetch_name(d->prefetch), st->refs, st->misses);
    mt_json_number(fp, st->refs ? (double)st->misses / (double)st->refs : 0.0);
    fprintf(fp, ", \"reads\": %" PRIu64 ", \"read_misses\": %" PRIu64 ", \"writes\": %" PRIu64
                ", \"write_misses\": %" PRIu64 ", \"fetches\": %" PRIu64
                ", \"fetch_misses\": %" PRIu64,
            st->reads, st->read_misses, st->writes, st->write_misses, st->fetches,
            st->fetch_misses);
}

static void json_level(FILE *fp, const mt_sim_level_stats *st)
{
    json_level_counts(fp, st);
    fprintf(fp, ",\n     \"causes\": ");
    json_causes(fp, st->cause);
    fprintf(fp, ", \"evictions\": %" PRIu64 ", \"writebacks\": %" PRIu64
                ", \"back_invalidations\": %" PRIu64 ", \"prefetches\": %" PRIu64
                ", \"prefetch_hits\": %" PRIu64 ", \"prefetch_unused\": %" PRIu64
                ", \"lines_used\": %" PRIu64 ",\n     \"spatial_use\": ",
            st->evictions, st->writebacks, st->back_invalidations, st->prefetches,
            st->prefetch_hits, st->prefetch_unused, st->lines_used);
    json_u64_array(fp, st->spatial, MT_SIM_SPATIAL_BUCKETS);
    fprintf(fp, ", \"temporal_use\": ");
    json_u64_array(fp, st->temporal, MT_SIM_TEMPORAL_BUCKETS);
    fprintf(fp, "}");
}

/* misses of one code row or pair: {"D1": {"cold": ...}, ...} */
void mt_sim_json_misses(FILE *fp, const mt_sim *s, const uint64_t (*misses)[MT_SIM_NCAUSES])
{
    fprintf(fp, "{");
    for (unsigned l = 0; l < mt_sim_level_count(s); l++) {
        fprintf(fp, "%s\"%s\": ", l ? ", " : "", mt_sim_level(s, l)->desc->name);
        json_causes(fp, misses[l]);
    }
    fprintf(fp, "}");
}

/* , "tlb_misses": {"TLB1": n, ...} of a code row or pair, when the TLB was
 * simulated. */
static void json_tlb_misses(FILE *fp, const mt_sim *s, const uint64_t *misses)
{
    for (unsigned l = 0; l < mt_sim_tlb_count(s); l++)
        fprintf(fp, "%s\"%s\": %" PRIu64 "%s", l ? ", " : ", \"tlb_misses\": {",
                mt_sim_tlb(s, l)->desc->name, misses[l], l + 1 == mt_sim_tlb_count(s) ? "}" : "");
}

/* , "itlb_misses": n of a code row or pair, when the ITLB was simulated. */
static void json_itlb_misses(FILE *fp, const mt_sim *s, uint64_t misses)
{
    if (mt_sim_itlb(s))
        fprintf(fp, ", \"itlb_misses\": %" PRIu64, misses);
}

/* "tlb": the data TLB's page size and levels, when it was simulated. */
static void json_tlb(FILE *fp, const mt_sim *s)
{
    if (!mt_sim_tlb_count(s))
        return;
    fprintf(fp, ",\n  \"tlb\": {\"page\": %" PRIu64 ", \"levels\": [", mt_sim_tlb_page(s));
    for (unsigned l = 0; l < mt_sim_tlb_count(s); l++) {
        const mt_sim_tlb_stats *st = mt_sim_tlb(s, l);
        fprintf(fp, "%s{\"name\": \"%s\", \"entries\": %" PRIu32 ", \"ways\": %" PRIu32
                    ", \"refs\": %" PRIu64 ", \"misses\": %" PRIu64 "}",
                l ? ", " : "", st->desc->name, st->desc->entries, st->desc->ways, st->refs,
                st->misses);
    }
    fprintf(fp, "]}");
}

/* "itlb": the instruction TLB's page size, level and totals, when it was
 * simulated. */
static void json_itlb(FILE *fp, const mt_sim *s)
{
    const mt_sim_tlb_stats *st = mt_sim_itlb(s);
    if (st)
        fprintf(fp, ",\n  \"itlb\": {\"page\": %" PRIu64 ", \"name\": \"%s\", \"entries\": %" PRIu32
                    ", \"ways\": %" PRIu32 ", \"refs\": %" PRIu64 ", \"misses\": %" PRIu64 "}",
                mt_sim_tlb_page(s), st->desc->name, st->desc->entries, st->desc->ways, st->refs,
                st->misses);
}

/* "procedure" and "loop" (its header's address, or null) of a code object
 * of the binary. */
static void json_code_place(FILE *fp, const mt_program *prog, uint32_t code)
{
    uint32_t p, l, own;
    const mt_pass1_library *lib = library_of(prog, code, &own);
    if (lib) { /* "library": its file name, the place in it */
        fprintf(fp, ", \"library\": ");
        mt_json_string(fp, lib->name);
        prog = lib->prog;
        code = own;
    }
    if (!prog || !mt_code_object_split(prog, code, &p, &l))
        return;
    fprintf(fp, ", \"procedure\": ");
    mt_json_string(fp, prog->procs[p].name);
    if (l == MT_NONE)
        fprintf(fp, ", \"loop\": null");
    else
        fprintf(fp, ", \"loop\": \"0x%" PRIx64 "\"",
                prog->procs[p].blocks[prog->procs[p].loops[l].header].start);
}

/* A code object's entry up to its references: {"id", "name", its place, "refs". */
static void json_code_head(FILE *fp, const mt_sim_code_map *map, size_t i, uint32_t code,
                           uint64_t refs)
{
    fprintf(fp, "%s\n    {\"id\": %" PRIu32 ", \"name\": ", i ? "," : "", code);
    char name[MT_SIM_CODE_NAME_MAX];
    mt_sim_code_name(map->prog, code, name, sizeof name);
    mt_json_string(fp, name);
    json_code_place(fp, map->prog, code);
    fprintf(fp, ", \"refs\": %" PRIu64, refs);
}

static void json_code_objects(FILE *fp, mt_sim *s, const mt_sim_code_map *map)
{
    size_t n;
    code_row *rows = code_rows(s, &n);
    fprintf(fp, ",\n  \"code_objects\": [");
    size_t nuses;
    const mt_sim_object_use *uses = mt_sim_code_uses(s, &nuses);
    for (size_t i = 0; i < n; i++) {
        json_code_head(fp, map, i, rows[i].code, rows[i].refs);
        fprintf(fp, ", \"misses\": ");
        mt_sim_json_misses(fp, s, (const uint64_t(*)[MT_SIM_NCAUSES])rows[i].misses);
        json_tlb_misses(fp, s, rows[i].tlb_misses);
        json_itlb_misses(fp, s, rows[i].itlb_misses);
        fprintf(fp, ", \"use\": ");
        mt_sim_json_use(fp, s, uses, nuses, rows[i].code);
        fprintf(fp, "}");
    }
    fprintf(fp, "\n  ]");
    free(rows);
}

static void json_tallies(FILE *fp, mt_sim *s)
{
    size_t n;
    const mt_sim_pair *p = mt_sim_pairs(s, &n);
    fprintf(fp, ",\n  \"pairs\": [");
    for (size_t i = 0; i < n; i++) {
        fprintf(fp, "%s\n    {\"code\": %" PRIu32 ", \"data\": %" PRIu32 ", \"refs\": %" PRIu64
                    ", \"misses\": ",
                i ? "," : "", p[i].code, p[i].data, p[i].refs);
        mt_sim_json_misses(fp, s, (const uint64_t(*)[MT_SIM_NCAUSES])p[i].misses);
        json_tlb_misses(fp, s, p[i].tlb_misses);
        json_itlb_misses(fp, s, p[i].itlb_misses);
        fprintf(fp, "}");
    }
    const mt_sim_eviction *e = mt_sim_evictions(s, &n);
    fprintf(fp, "\n  ],\n  \"replacements\": [");
    for (size_t i = 0; i < n; i++)
        fprintf(fp, "%s\n    {\"level\": \"%s\", \"evictor\": %" PRIu32 ", \"victim\": %" PRIu32
                    ", \"count\": %" PRIu64 "}",
                i ? "," : "", mt_sim_level(s, e[i].level)->desc->name, e[i].evictor,
                e[i].victim, e[i].count);
    const mt_sim_object_use *u = mt_sim_object_uses(s, &n);
    fprintf(fp, "\n  ],\n  \"object_use\": [");
    for (size_t i = 0; i < n; i++)
        fprintf(fp, "%s\n    {\"level\": \"%s\", \"data\": %" PRIu32 ", \"lines\": %" PRIu64
                    ", \"bytes_used\": %" PRIu64 ", \"reuses\": %" PRIu64 "}",
                i ? "," : "", mt_sim_level(s, u[i].level)->desc->name, u[i].object, u[i].lines,
                u[i].bytes_used, u[i].reuses);
    fprintf(fp, "\n  ]");
}

/* The report's first fields: the trace, what names its code objects, the
 * machine. */
static void json_heading(FILE *fp, const sim_args *a, const mt_sim_machine *m,
                         const mt_trace_counts *c, const mt_sim_code_map *map)
{
    fprintf(fp, "{\n  \"version\": 1,\n  \"trace\": ");
    mt_json_string(fp, a->program ? a->program[0] : a->trace);
    fprintf(fp, ",\n  \"format\": \"%s\",\n  \"records\": %" PRIu64 ", \"reads\": %" PRIu64
                ", \"writes\": %" PRIu64 ", \"fetches\": %" PRIu64 ", \"modifies\": %" PRIu64
                ", \"flushes\": %" PRIu64 ",\n  ",
            a->format, c->records, c->reads, c->writes, c->fetches, c->modifies, c->flushes);
    if (map->prog && a->binary) {
        fprintf(fp, "\"binary\": ");
        mt_json_string(fp, a->binary);
        fprintf(fp, ", \"load_base\": %" PRIu64 ",\n  ", map->bias);
    }
    fprintf(fp, "\"machine\": ");
    mt_json_string(fp, m->source);
    fprintf(fp, ", \"straddle\": \"%s\", \"seed\": %" PRIu64,
            m->straddle_line ? "line" : "access", m->seed);
}

/* The report's fields, without the closing brace (a RUNDIR report adds its own). */
static void print_json_fields(FILE *fp, const sim_args *a, mt_sim *s, const mt_sim_machine *m,
                              const mt_trace_counts *c, const mt_sim_code_map *map,
                              const mt_data_map *data)
{
    json_heading(fp, a, m, c, map);
    fprintf(fp, ",\n  \"levels\": [\n");
    for (unsigned i = 0; i < mt_sim_level_count(s); i++) {
        json_level(fp, mt_sim_level(s, i));
        fprintf(fp, "%s\n", i + 1 < mt_sim_level_count(s) ? "," : "");
    }
    fprintf(fp, "  ]");
    json_tlb(fp, s);
    json_itlb(fp, s);
    json_sampling(fp, s);
    json_code_objects(fp, s, map);
    json_tallies(fp, s);
    if (data)
        mt_sim_data_json(fp, s, data, map->prog);
    mt_sim_coherence_json(fp, s, data, map->prog);
    mt_sim_whatif_json(fp, s, a->whatif, data, map->prog);
}

/* ---- misses only (--misses-only) ---- */

/* What a misses-only report leaves out, as its JSON names the fields. */
static const char misses_only_omits[] =
    "miss causes, evictions, writebacks, back-invalidations, prefetches, line use, "
    "code x data pairs, causes of replacement, data objects";

/* What a misses-only report of several CPUs leaves out of the processors'
 * figures, as its JSON names them. */
static const char misses_only_mp_omits[] =
    "per-thread figures, coherence per code and data object, shared lines' words, "
    "where references were served";

/* cpus > 1: per CPU its threads, references, misses per level (coherence
 * misses at the private ones) and coherence events. */
static void text_cpus_misses_only(FILE *fp, const mt_sim *s)
{
    unsigned np = mt_sim_private_levels(s);
    fprintf(fp, "\nprocessors: %u CPUs, MESI directory over the private levels; not computed: "
                "%s\n%-6s %7s %12s %-5s %12s %12s\n",
            mt_sim_cpus(s), misses_only_mp_omits, "cpu", "threads", "refs", "level", "misses",
            "coherence");
    for (unsigned c = 0; c < mt_sim_cpus(s); c++) {
        const mt_sim_cpu_stats *st = mt_sim_cpu(s, c);
        for (unsigned l = 0; l < mt_sim_level_count(s); l++) {
            if (l)
                fprintf(fp, "%-6s %7s %12s", "", "", "");
            else
                fprintf(fp, "%-6u %7" PRIu64 " %12" PRIu64, c, st->threads, st->refs);
            fprintf(fp, " %-5s %12" PRIu64, mt_sim_level(s, l)->desc->name, st->misses[l]);
            if (l < np)
                fprintf(fp, " %12" PRIu64, st->coherence[l]);
            fprintf(fp, "\n");
        }
    }
    mt_sim_cpu_events_text(fp, s);
}

/* cpus > 1: "processors", with the fields of the full report's per_cpu it
 * computes (a level's misses and, at a private level, its coherence ones). */
static void json_cpus_misses_only(FILE *fp, const mt_sim *s)
{
    unsigned np = mt_sim_private_levels(s), nl = mt_sim_level_count(s);
    fprintf(fp, ",\n  \"processors\": {\"cpus\": %u, \"protocol\": \"MESI\", "
                "\"omitted\": [\"cold\", \"capacity\", \"conflict\", \"per_thread\", "
                "\"code_objects\", \"data_objects\", \"shared_lines\", \"served\"], "
                "\"private\": [",
            mt_sim_cpus(s));
    for (unsigned l = 0; l < np; l++)
        fprintf(fp, "%s\"%s\"", l ? ", " : "", mt_sim_level(s, l)->desc->name);
    fprintf(fp, "], \"shared\": [");
    for (unsigned l = np; l < nl; l++)
        fprintf(fp, "%s\"%s\"", l > np ? ", " : "", mt_sim_level(s, l)->desc->name);
    fprintf(fp, "],\n    \"per_cpu\": [");
    for (unsigned c = 0; c < mt_sim_cpus(s); c++) {
        const mt_sim_cpu_stats *st = mt_sim_cpu(s, c);
        fprintf(fp, "%s\n      {\"cpu\": %u, \"threads\": %" PRIu64 ", \"refs\": %" PRIu64
                    ", \"misses\": {",
                c ? "," : "", c, st->threads, st->refs);
        for (unsigned l = 0; l < nl; l++) {
            fprintf(fp, "%s\"%s\": {\"misses\": %" PRIu64, l ? ", " : "",
                    mt_sim_level(s, l)->desc->name, st->misses[l]);
            if (l < np)
                fprintf(fp, ", \"coherence\": %" PRIu64, st->coherence[l]);
            fprintf(fp, "}");
        }
        fprintf(fp, "},\n       \"true_sharing\": %" PRIu64 ", \"false_sharing\": %" PRIu64
                    ", \"invalidations_sent\": %" PRIu64 ", \"invalidations_received\": {",
                st->true_sharing, st->false_sharing, st->invalidations_sent);
        for (unsigned l = 0; l < np; l++)
            fprintf(fp, "%s\"%s\": %" PRIu64, l ? ", " : "", mt_sim_level(s, l)->desc->name,
                    st->invalidations_received[l]);
        fprintf(fp, "}, \"interventions\": %" PRIu64 ", \"interventions_served\": %" PRIu64
                    ", \"upgrades\": %" PRIu64 "}",
                st->interventions, st->interventions_served, st->upgrades);
    }
    fprintf(fp, "\n    ]}");
}

static void print_text_misses_only(FILE *fp, const sim_args *a, mt_sim *s,
                                   const mt_sim_machine *m, const mt_trace_counts *c,
                                   const mt_sim_code_map *map)
{
    print_heading(fp, a, s, m, c, map);
    fprintf(fp, "MISSES ONLY (--misses-only): references and misses per level and per code "
                "object; not computed: %s\n", misses_only_omits);
    fprintf(fp, "\n%-5s %14s %12s %7s %12s %12s %12s\n", "level", "refs", "misses", "miss%",
            "read misses", "write misses", "fetch misses");
    for (unsigned i = 0; i < mt_sim_level_count(s); i++) {
        const mt_sim_level_stats *st = mt_sim_level(s, i);
        fprintf(fp, "%-5s %14" PRIu64 " %12" PRIu64 " %6.2f%% %12" PRIu64 " %12" PRIu64
                    " %12" PRIu64 "\n",
                st->desc->name, st->refs, st->misses, percent(st->misses, st->refs),
                st->read_misses, st->write_misses, st->fetch_misses);
    }
    if (mt_sim_cpus(s) > 1)
        text_cpus_misses_only(fp, s);
    print_code_objects(fp, s, map);
}

/* A code object of a misses-only report: its misses per level, plain counts. */
static void json_code_misses_only(FILE *fp, const mt_sim *s, const mt_sim_code_map *map,
                                  size_t i, const mt_sim_code_tally *t)
{
    json_code_head(fp, map, i, t->code, t->refs);
    fprintf(fp, ", \"level_misses\": {");
    for (unsigned l = 0; l < mt_sim_level_count(s); l++)
        fprintf(fp, "%s\"%s\": %" PRIu64, l ? ", " : "", mt_sim_level(s, l)->desc->name,
                t->misses[l]);
    fprintf(fp, "}}");
}

/* Fields absent rather than zero: "omitted" lists them; a code object's
 * misses are plain counts per level ("level_misses"), not by cause. */
static void print_json_misses_only(FILE *fp, const sim_args *a, mt_sim *s,
                                   const mt_sim_machine *m, const mt_trace_counts *c,
                                   const mt_sim_code_map *map)
{
    json_heading(fp, a, m, c, map);
    fprintf(fp, ",\n  \"misses_only\": true, \"omitted\": [\"causes\", \"evictions\", "
                "\"writebacks\", \"back_invalidations\", \"prefetches\", \"prefetch_hits\", "
                "\"prefetch_unused\", \"lines_used\", \"spatial_use\", \"temporal_use\", "
                "\"pairs\", \"replacements\", \"object_use\", \"data_objects\"],\n  \"levels\": [\n");
    for (unsigned i = 0; i < mt_sim_level_count(s); i++) {
        json_level_counts(fp, mt_sim_level(s, i));
        fprintf(fp, "}%s\n", i + 1 < mt_sim_level_count(s) ? "," : "");
    }
    size_t n;
    mt_sim_code_tally *rows = sorted_tallies(s, &n);
    fprintf(fp, "  ],\n  \"code_objects\": [");
    for (size_t i = 0; i < n; i++)
        json_code_misses_only(fp, s, map, i, &rows[i]);
    fprintf(fp, "\n  ]");
    if (mt_sim_cpus(s) > 1)
        json_cpus_misses_only(fp, s);
    fprintf(fp, "\n}\n");
    free(rows);
}

/* --misses-only: what goes with it, checked before anything runs; the run
 * is not stored (the history's figures are miss causes). */
static int check_misses_only(sim_args *a)
{
    if (!a->misses_only)
        return 0;
    if (a->rundir || a->sample_sets || a->sample_time) {
        mt_ui_error("sim: --misses-only goes with --trace FILE or -- BIN ARGS, without "
                    "sampling (%s need the full simulator)",
                    a->rundir ? "RUNDIR's stall estimates" : "sampled modes");
        return -1;
    }
    if (!a->no_store && (a->program || a->binary)) {
        a->no_store = true;
        fprintf(stderr, "mtool: sim: a misses-only run is not stored in the history (it has "
                        "no miss causes)\n");
    }
    return 0;
}

/* --what-if simulates the run's references again: it needs every one of
 * them through the full simulator. */
static int check_what_if(const sim_args *a)
{
    if (a->what_if && (a->misses_only || a->sample_sets || a->sample_time)) {
        mt_ui_error("sim: --what-if goes without --misses-only and sampling (its remedies are "
                    "compared by miss cause, on every reference)");
        return -1;
    }
    return 0;
}

/* The simulator the options ask for; NULL after saying why not. */
static mt_sim *new_simulator(const sim_args *a, const mt_sim_machine *m)
{
    if (!a->misses_only) {
        mt_sim *s = mt_sim_new(m);
        mt_sim_set_sample(s, &a->sample);
        if (a->what_if)
            mt_sim_record(s);
        return s;
    }
    mt_error err;
    mt_sim *s = mt_sim_new_misses_only(m, &err);
    if (!s)
        mt_ui_error("sim: --misses-only: %s", err.msg);
    return s;
}

/* A RUNDIR report's stall estimates (below), after the simulation's. */
typedef struct stall_report stall_report;
static void print_stall_text(FILE *fp, const stall_report *sr);
static void print_stall_json(FILE *fp, const stall_report *sr, unsigned nlevels);

/* ---- the command ---- */

/* The report, text or JSON, with the stall estimates when `sr` is not NULL. */
static int write_report(const sim_args *a, mt_sim *s, const mt_sim_machine *m,
                        const mt_trace_counts *c, const mt_sim_code_map *map,
                        const mt_data_map *data, const stall_report *sr)
{
    mt_outfile out = {0};
    FILE *fp = mt_ui_output_open(&out, a->out);
    if (!fp)
        return 1;
    mt_sim_estimate_counts(s); /* a sampled run's counts scaled before any is printed */
    if (mt_sim_is_misses_only(s) && a->json) {
        print_json_misses_only(fp, a, s, m, c, map);
    } else if (mt_sim_is_misses_only(s)) {
        print_text_misses_only(fp, a, s, m, c, map);
    } else if (a->json) {
        print_json_fields(fp, a, s, m, c, map, data);
        if (sr)
            print_stall_json(fp, sr, mt_sim_level_count(s));
        else
            fprintf(fp, "\n}\n");
    } else {
        print_text(fp, a, s, m, c, map, data);
        if (sr)
            print_stall_text(fp, sr);
    }
    return mt_ui_output_close(&out, a->out);
}

/* ---- code objects from --binary ---- */

/* --load-base ADDR: hexadecimal (0x first) or decimal, a page boundary. */
static int parse_load_base(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end || *s == '-' || v % 4096) {
        mt_ui_error("sim: --load-base: expected a page-aligned address (0x108000), not '%s'", s);
        return -1;
    }
    *out = v;
    return 0;
}

/* The procedures of --binary and where the trace has them: --load-base for
 * a PIE, else Valgrind's place for one when the trace is lackey's (din
 * traces are taken at link-time addresses); a non-PIE is where it links. */
static int open_code_map(const sim_args *a, mt_trace_format format, mt_sim_code_map *map)
{
    uint64_t base = format == MT_TRACE_LACKEY ? MT_SIM_VALGRIND_PIE_BASE : 0;
    if (a->load_base && parse_load_base(a->load_base, &base) != 0)
        return -1;
    mt_analyze_options opt;
    mt_analyze_options_init(&opt);
    opt.want_estimability = false;
    opt.want_lines = !a->no_store; /* the history keys a build's sites by source line */
    mt_error err;
    mt_program *prog = mt_analyze(a->binary, &opt, &err);
    if (!prog) {
        mt_ui_error("%s", err.msg);
        return -1;
    }
    if (prog->kind != MT_ELF_PIE && a->load_base) {
        char *binary = mt_ui_escape(a->binary);
        mt_ui_error("sim: --load-base: %s is not a PIE: it runs where it links", binary);
        free(binary);
        mt_program_free(prog);
        return -1;
    }
    map->prog = prog;
    map->bias = prog->kind == MT_ELF_PIE ? base : 0;
    return 0;
}

/* A trace none of whose instructions falls in the binary's procedures was
 * made by another binary, or the load base is wrong: say so (the figures
 * are still the trace's, all under code object 0). */
static void warn_if_no_procedure_named(const sim_args *a, mt_sim *s, const mt_sim_code_map *map)
{
    size_t n;
    const mt_sim_code_tally *t = mt_sim_code_tallies(s, &n);
    if (!map->prog || (n && t[n - 1].code != 0))
        return;
    char *binary = mt_ui_escape(a->binary);
    fprintf(stderr, "mtool: warning: sim: no reference of the trace is in a procedure of %s "
                    "at load base 0x%" PRIx64 " (another binary, or --load-base)\n",
            binary, map->bias);
    free(binary);
}

/* What a trace file's references are named by with --binary: the binary's
 * procedures (code objects) and its globals and their fields (data
 * objects; a trace says nothing of the heap, the stack or threads, so
 * every other reference is "other"). */
typedef struct {
    mt_sim_code_map *code;
    mt_data_map *data;
} trace_names;

static uint32_t trace_code_of(void *ctx, uint64_t addr)
{
    return mt_sim_procedure_of(((trace_names *)ctx)->code, addr);
}

static uint32_t trace_data_at(void *ctx, uint64_t addr, uint32_t size, bool write)
{
    mt_trace_record r = {.addr = addr, .size = (uint16_t)size,
                         .kind = write ? MT_TRACE_WRITE : MT_TRACE_READ};
    return mt_data_map_observe(((trace_names *)ctx)->data, 0, &r);
}

/* The binary's data objects, placed at the trace's load base; NULL said
 * on stderr when its file cannot be read again. */
static mt_data_map *trace_data_map(const mt_sim_code_map *map)
{
    mt_error err;
    mt_data_map *d = mt_data_map_new(map->prog, stderr, &err);
    if (!d) {
        mt_ui_error("%s", err.msg);
        return NULL;
    }
    mt_trace_record bias = {.addr = map->bias, .kind = MT_TRACE_LOAD_BIAS};
    mt_data_map_observe(d, 0, &bias);
    return d;
}

/* --what-if: the remedies simulated on the finished run's references
 * (*out NULL without the option); -1 after saying why they could not be.
 * Data object 0 is every reference when the run names none. */
static int run_what_if(const sim_args *a, mt_sim *s, const mt_sim_machine *m,
                       const mt_data_map *data, mt_whatif_report **out)
{
    *out = NULL;
    if (!a->what_if)
        return 0;
    mt_whatif_report *w = mt_xcalloc(1, sizeof *w);
    mt_error err;
    if (mt_whatif_run(s, m, data == NULL, w, &err) != 0) {
        mt_ui_error("sim: %s", err.msg);
        free(w);
        return -1;
    }
    *out = w;
    return 0;
}

static int simulate(const sim_args *a, const mt_sim_machine *m, mt_trace_format format,
                    mt_sim_code_map *map)
{
    mt_sim *s = new_simulator(a, m);
    if (!s)
        return 1;
    /* the misses-only simulator keeps no data object's tallies */
    bool with_data = map->prog && !mt_sim_is_misses_only(s);
    trace_names names = {.code = map, .data = with_data ? trace_data_map(map) : NULL};
    mt_trace_counts counts;
    mt_error err;
    int rc = 1;
    if (with_data && !names.data) {
        mt_sim_free(s);
        return 1; /* said */
    }
    if (mt_trace_read(s, a->trace, format, map->prog ? trace_code_of : NULL,
                      names.data ? trace_data_at : NULL, &names, &counts, &err) != 0)
        mt_ui_error("%s", err.msg);
    else {
        mt_sim_finish(s);
        warn_if_no_procedure_named(a, s, map);
        sim_args with = *a;
        mt_whatif_report *w;
        if (run_what_if(a, s, m, names.data, &w) == 0) {
            with.whatif = w;
            rc = write_report(&with, s, m, &counts, map, names.data, NULL);
            if (rc == 0 && !a->no_store && map->prog)
                mt_history_record_sim(s, m, map->prog, NULL, names.data, w, NAN, a->argc, a->argv,
                                      (char *[]){(char *)a->binary, NULL}, NULL);
            free(w);
        }
    }
    mt_data_map_free(names.data);
    mt_sim_free(s);
    return rc;
}

/* What the rewriter left out, on stderr: the report itself is the trace's. */
static void say_coverage(const mt_trace_result *r)
{
    const mt_rewrite_report *w = &r->ins.rewrite;
    fprintf(stderr,
            "mtool: traced %u of %u procedures: %u instructions (%u without saving "
            "registers), %u references each time they run; %llu records (%llu frames sent "
            "while it ran, %llu records after the program ended); %llu frames through the "
            "trace rings\n",
            w->nprocs_instrumented, w->nprocs_candidates, w->ntrace_sites, w->ntrace_bare,
            w->ntrace_refs,
            (unsigned long long)r->counts.records, (unsigned long long)r->frames,
            (unsigned long long)r->leftover, (unsigned long long)r->ring_frames);
    for (size_t i = 0; i < r->libs.nlibs; i++) {
        const mt_pass1_library *lib = &r->libs.libs[i];
        if (!lib->code_base)
            continue;
        const mt_rewrite_report *lw = &lib->ins.rewrite;
        char *name = mt_ui_escape(lib->name);
        fprintf(stderr, "mtool: ... and %u of %u procedures of %s: %u instructions, %u references\n",
                lw->nprocs_instrumented, lw->nprocs_candidates, name, lw->ntrace_sites,
                lw->ntrace_refs);
        free(name);
    }
    if (w->ntrace_untraced)
        fprintf(stderr,
                "mtool: %u memory operands not traced (rep cmps/scas: they stop before "
                "%%rcx runs out; operands of no stated size; 32-bit addresses or segment "
                "prefixes)\n",
                w->ntrace_untraced);
    if (r->counts.hits)
        fprintf(stderr, "mtool: %llu of the records were D1 hits the program counted itself "
                "(the filter: docs/SIMULATOR.md)\n", (unsigned long long)r->counts.hits);
    if (r->counts.hits_interleaved)
        fprintf(stderr,
                "mtool: warning: %llu of those came from frames another thread's references "
                "interrupted: the misses may differ from the exact ones by as many\n",
                (unsigned long long)r->counts.hits_interleaved);
    if (r->counts.damaged)
        fprintf(stderr, "mtool: warning: %llu damaged trace records skipped\n",
                (unsigned long long)r->counts.damaged);
}

/* The report of a traced run, once its simulation is finished: the
 * command's exit status. */
typedef int (*traced_report)(const sim_args *a, mt_sim *s, const mt_sim_machine *m,
                             const mt_trace_result *r);

/* A traced run (o: what to trace), then its report. */
static int simulate_traced(const sim_args *a, const mt_sim_machine *m, mt_trace_options o,
                           traced_report report)
{
    mt_sim *s = new_simulator(a, m);
    if (!s)
        return 1;
    o.sim = s;
    o.log = stderr;
    mt_trace_result r;
    mt_error err;
    int rc = 1;
    if (mt_run_trace(&o, &r, &err) != 0) {
        mt_ui_error("%s", err.msg);
    } else {
        mt_sim_finish(s);
        say_coverage(&r);
        sim_args with = *a;
        mt_whatif_report *w;
        traced_libraries = &r.libs;
        traced_executable = r.prog;
        if (run_what_if(a, s, m, r.data, &w) == 0) {
            with.whatif = w;
            rc = report(&with, s, m, &r);
            free(w);
        }
        traced_libraries = NULL;
        traced_executable = NULL;
    }
    mt_trace_result_free(&r);
    mt_sim_free(s);
    return rc;
}

/* A traced run's counts as the report prints a trace file's. */
static mt_trace_counts traced_counts(const mt_trace_result *r)
{
    return (mt_trace_counts){.records = r->counts.records, .reads = r->counts.reads,
                             .writes = r->counts.writes, .modifies = r->counts.modifies};
}

/* -- BIN ARGS: the report; the program's exit status. */
static int report_program(const sim_args *a, mt_sim *s, const mt_sim_machine *m,
                          const mt_trace_result *r)
{
    mt_trace_counts c = traced_counts(r);
    mt_sim_code_map map = {.prog = r->prog}; /* the traced copy names its code objects */
    int rc = write_report(a, s, m, &c, &map, r->data, NULL);
    if (rc == 0 && !a->no_store)
        mt_history_record_sim(s, m, r->prog, &r->libs, r->data, a->whatif, NAN, a->argc,
                              a->argv, a->program, &r->run);
    return rc == 0 ? mt_exit_code(r->run.status) : rc;
}

/* ---- RUNDIR: the stall estimate beside pass 2's overhead ---- */

struct stall_report {
    const char *rundir;
    const mt_trace_result *r;
    mt_stall *stalls;         /* per pass-2 object */
    mt_stall outside;
    mt_stall_agreement agree;
    unsigned cpus;            /* simulated: more than one, the coherence stall shown */
};

static double pct_of(double part, double whole) { return whole > 0 ? 100 * part / whole : NAN; }

/* A pass-2 object's name as reports give it: SPEC, or LIB:SPEC for a
 * library's (report/data.c); escaped for a terminal line when `escaped`. */
static char *object_name(const mt_pass2_object *p, bool escaped)
{
    char *raw = p->lib ? mt_xasprintf("%s:%s", p->lib->name, p->spec) : mt_xstrdup(p->spec);
    if (!escaped)
        return raw;
    char *shown = mt_ui_escape(raw);
    free(raw);
    return shown;
}

/* cpus > 1: pass 2's overhead beside the coherence stall estimate. */
static void print_coherence_stall_text(FILE *fp, const stall_report *sr)
{
    const mt_trace_result *r = sr->r;
    fprintf(fp, "coherence stall estimate per m-object (%u CPUs: its code objects' true and "
                "false sharing misses, each a\nload the last level serves, alone; core cycles, "
                "%% of its prediction):\n%-40s %11s %9s %11s %11s %9s %9s\n", sr->cpus,
            "  object", "overhead", "%", "coherence", "stall", "%", "/ovh");
    for (size_t i = 0; i < r->pass2.nobjects; i++) {
        const mt_pass2_object *p = &r->pass2.objects[i];
        const mt_stall *st = &sr->stalls[i];
        double overhead = p->measured - p->predicted;
        char *name = object_name(p, true);
        char ratio[16] = "-";
        if (overhead > 0)
            snprintf(ratio, sizeof ratio, "%.3f", st->coherence / overhead);
        fprintf(fp, "  %-38s %11.4g %+8.1f%% %11" PRIu64 " %11.4g %+8.1f%% %9s\n", name,
                overhead, pct_of(overhead, p->predicted), st->coherence_misses, st->coherence,
                pct_of(st->coherence, p->predicted), ratio);
        free(name);
    }
}

static void print_stall_text(FILE *fp, const stall_report *sr)
{
    const mt_trace_result *r = sr->r;
    fprintf(fp, "\nstall estimate per m-object pass 2 timed (core cycles; %% of its prediction):\n"
                "  measured by 'mtool calibrate' (%s), cycles a load, alone / in a stream:",
            r->machine.source);
    for (int l = 0; l < MT_MEM_LEVELS; l++)
        if (r->machine.mem_latency[l].cycles > 0)
            fprintf(fp, " %s %.1f/%.1f", mt_mem_level_name(l), r->machine.mem_latency[l].cycles,
                    r->machine.mem_latency[l].stream_cycles);
    fprintf(fp, "; %.1f misses in flight; a page walk %.1f\n%-40s %11s %9s %11s %9s %21s %7s %8s\n",
            r->machine.mem_parallelism, r->machine.tlb_walk_cycles, "  object", "overhead", "%",
            "stall est.", "%", "[overlapped .. serial]", "est/ovh", "regular");
    for (size_t i = 0; i < r->pass2.nobjects; i++) {
        const mt_pass2_object *p = &r->pass2.objects[i];
        const mt_stall *st = &sr->stalls[i];
        double overhead = p->measured - p->predicted;
        char *name = object_name(p, true);
        char ratio[16] = "-"; /* no overhead to explain */
        if (overhead > 0)
            snprintf(ratio, sizeof ratio, "%.2f", st->estimate / overhead);
        fprintf(fp, "  %-38s %11.4g %+8.1f%% %11.4g %+8.1f%% [%9.3g .. %9.3g] %7s %7.0f%%\n",
                name, overhead, pct_of(overhead, p->predicted), st->estimate,
                pct_of(st->estimate, p->predicted), st->lower, st->serial, ratio,
                100 * st->regular_share);
        free(name);
    }
    const mt_stall_agreement *ag = &sr->agree;
    if (sr->cpus > 1)
        print_coherence_stall_text(fp, sr);
    fprintf(fp, "agreement: %zu of %zu pairs of objects ordered the same by overhead %% and by "
                "stall estimate %% (objects measured more than %.0f%% below their prediction left "
                "out)", ag->concordant, ag->pairs, MT_STALL_MODEL_ERROR_PCT);
    if (ag->memory_bound)
        fprintf(fp, "; on the %zu memory-bound (overhead >= %.0f%%), estimate / overhead %.2f "
                    "to %.2f", ag->memory_bound, MT_STALL_MEMORY_BOUND_PCT, ag->ratio_min,
                ag->ratio_max);
    double overhead = r->pass2.program_measured - r->pass2.program_predicted;
    double unexplained = overhead - r->pass2.objects_overhead;
    fprintf(fp, "\nprogram: overhead %.4g cycles, %.4g of it outside the timed objects "
                "(unexplained); simulated stall outside them %.4g (%.4g .. %.4g)%s\n",
            overhead, unexplained, sr->outside.estimate, sr->outside.lower, sr->outside.serial,
            sr->outside.refs ? "" : ": not traced (--all traces it)");
}

static void json_stall(FILE *fp, const mt_stall *st, unsigned nlevels)
{
    fprintf(fp, "{\"refs\": %" PRIu64 ", \"misses\": [", st->refs);
    for (unsigned l = 0; l < nlevels; l++)
        fprintf(fp, "%s%" PRIu64, l ? ", " : "", st->misses[l]);
    fprintf(fp, "], \"new_lines\": %" PRIu64 ", \"regular\": %" PRIu64 ", \"written\": %" PRIu64
                ", \"independent_refs\": %" PRIu64 ", \"coherence_misses\": %" PRIu64
                ", \"coherence_cycles\": ", st->new_lines, st->regular, st->written,
            st->independent_refs, st->coherence_misses);
    mt_json_number(fp, st->coherence);
    fprintf(fp, ", \"estimate_cycles\": ");
    mt_json_number(fp, st->estimate);
    fprintf(fp, ", \"streamed_cycles\": ");
    mt_json_number(fp, st->streamed);
    fprintf(fp, ", \"overlapped_cycles\": ");
    mt_json_number(fp, st->lower);
    fprintf(fp, ", \"serial_cycles\": ");
    mt_json_number(fp, st->serial);
    fprintf(fp, ", \"walks\": %" PRIu64 ", \"walk_cycles\": ", st->walks);
    mt_json_number(fp, st->walk_cycles);
    fprintf(fp, "}");
}

static void print_stall_json(FILE *fp, const stall_report *sr, unsigned nlevels)
{
    const mt_trace_result *r = sr->r;
    fprintf(fp, ",\n  \"stall\": {\"run_directory\": ");
    mt_json_string(fp, sr->rundir);
    fprintf(fp, ", \"latency_cycles\": {");
    for (int l = 0, k = 0; l < MT_MEM_LEVELS; l++)
        if (r->machine.mem_latency[l].cycles > 0) {
            fprintf(fp, "%s\"%s\": ", k++ ? ", " : "", mt_mem_level_name(l));
            mt_json_number(fp, r->machine.mem_latency[l].cycles);
        }
    fprintf(fp, "}, \"stream_cycles\": {");
    for (int l = 0, k = 0; l < MT_MEM_LEVELS; l++)
        if (r->machine.mem_latency[l].cycles > 0) {
            fprintf(fp, "%s\"%s\": ", k++ ? ", " : "", mt_mem_level_name(l));
            mt_json_number(fp, r->machine.mem_latency[l].stream_cycles);
        }
    fprintf(fp, "}, \"parallelism\": ");
    mt_json_number(fp, r->machine.mem_parallelism);
    fprintf(fp, ", \"walk_cycles\": ");
    mt_json_number(fp, r->machine.tlb_walk_cycles);
    fprintf(fp, ", \"profile\": ");
    mt_json_string(fp, r->machine.source);
    fprintf(fp, ",\n    \"objects\": [");
    for (size_t i = 0; i < r->pass2.nobjects; i++) {
        const mt_pass2_object *p = &r->pass2.objects[i];
        fprintf(fp, "%s\n      {\"name\": ", i ? "," : "");
        char *name = object_name(p, false);
        mt_json_string(fp, name);
        free(name);
        if (p->lib) {
            fprintf(fp, ", \"library\": ");
            mt_json_string(fp, p->lib->name);
        }
        fprintf(fp, ", \"procedure\": ");
        mt_json_string(fp, p->prog->procs[p->object.proc].name);
        fprintf(fp, ", \"kind\": \"%s\", \"outermost\": %s, \"memory_ops\": %" PRIu64
                    ", \"predicted_cycles\": ",
                p->object.region ? "region" : p->object.loop == MT_NONE ? "procedure" : "loop",
                p->outermost ? "true" : "false", p->memops);
        mt_json_number(fp, p->predicted);
        fprintf(fp, ", \"measured_cycles\": ");
        mt_json_number(fp, p->measured);
        fprintf(fp, ", \"overhead_cycles\": ");
        mt_json_number(fp, p->measured - p->predicted);
        fprintf(fp, ", \"stall\": ");
        json_stall(fp, &sr->stalls[i], nlevels);
        fprintf(fp, "}");
    }
    const mt_stall_agreement *ag = &sr->agree;
    fprintf(fp, "\n    ],\n    \"outside\": ");
    json_stall(fp, &sr->outside, nlevels);
    fprintf(fp, ", \"outside_traced\": %s,\n    \"program\": {\"predicted_cycles\": ",
            sr->outside.refs ? "true" : "false");
    mt_json_number(fp, r->pass2.program_predicted);
    fprintf(fp, ", \"measured_cycles\": ");
    mt_json_number(fp, r->pass2.program_measured);
    fprintf(fp, ", \"unexplained_overhead_cycles\": ");
    mt_json_number(fp, r->pass2.program_measured - r->pass2.program_predicted -
                           r->pass2.objects_overhead);
    fprintf(fp, "},\n    \"agreement\": {\"pairs\": %zu, \"same_order\": %zu, "
                "\"memory_bound\": %zu, \"ratio_min\": ", ag->pairs, ag->concordant,
            ag->memory_bound);
    mt_json_number(fp, ag->ratio_min);
    fprintf(fp, ", \"ratio_max\": ");
    mt_json_number(fp, ag->ratio_max);
    fprintf(fp, "}}\n}\n");
}

/* What a RUNDIR report shows: the program pass 1 ran, as its traced copy ran it. */
typedef struct {
    sim_args args;
    mt_trace_counts counts;
    mt_sim_code_map map;
} rundir_view;

static rundir_view view_of(const sim_args *a, const stall_report *sr)
{
    rundir_view v = {.args = *a, .counts = traced_counts(sr->r), .map = {.prog = sr->r->prog}};
    v.args.program = sr->r->pass1.argv;
    return v;
}

static int write_rundir_report(const sim_args *a, mt_sim *s, const mt_sim_machine *m,
                               const stall_report *sr)
{
    rundir_view v = view_of(a, sr);
    return write_report(&v.args, s, m, &v.counts, &v.map, sr->r->data, sr);
}

/* The JSON report, whatever the command line asked for, kept as
 * RUNDIR/sim.json (run/rundir.c), and the run's HTML page made again with
 * it (report/); 1 when either cannot be written. */
static int store_in_rundir(const sim_args *a, mt_sim *s, const mt_sim_machine *m,
                           const stall_report *sr)
{
    rundir_view v = view_of(a, sr);
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem)
        abort(); /* out of memory: the process ends, as mt_xmalloc's callers' does */
    print_json_fields(mem, &v.args, s, m, &v.counts, &v.map, sr->r->data);
    print_stall_json(mem, sr, mt_sim_level_count(s));
    fclose(mem);
    mt_error err;
    int rc = mt_rundir_write_sim(a->rundir, buf, len, &err);
    free(buf);
    if (rc != 0) {
        mt_ui_error("sim: %s", err.msg);
        return 1;
    }
    char *html = mt_xasprintf("%s/report.html", a->rundir);
    rc = mt_ui_write_report(a->rundir, NULL, html, NULL);
    if (rc == 0) {
        char *shown = mt_ui_escape(a->rundir);
        fprintf(stderr, "mtool: sim: kept in %s/sim.json; report written to %s/report.html\n",
                shown, shown);
        free(shown);
    }
    free(html);
    return rc;
}

/* RUNDIR: the report with the stall estimates; 1 when it cannot be written. */
static int report_rundir(const sim_args *a, mt_sim *s, const mt_sim_machine *m,
                         const mt_trace_result *r)
{
    stall_report sr = {.rundir = a->rundir, .r = r,
                       .stalls = mt_xcalloc(r->pass2.nobjects + 1, sizeof *sr.stalls),
                       .cpus = mt_sim_cpus(s)};
    mt_sim_estimate_counts(s); /* the stalls of a sampled run from its estimates */
    mt_trace_stalls(r, s, sr.stalls, &sr.outside, &sr.agree);
    int rc = write_rundir_report(a, s, m, &sr);
    if (rc == 0)
        rc = store_in_rundir(a, s, m, &sr);
    free(sr.stalls);
    /* Only a whole trace is a run of the program's figures: pass 2's objects
     * alone would show every other procedure with no miss. */
    if (rc == 0 && !a->no_store && a->all)
        mt_history_record_sim(s, m, r->prog, &r->libs, r->data, a->whatif,
                              r->machine.tlb_walk_cycles,
                              a->argc, a->argv, r->pass1.argv, &r->run);
    else if (rc == 0 && !a->no_store)
        fprintf(stderr, "mtool: sim: not stored in the history: only pass 2's objects were "
                        "traced (--all traces the whole program)\n");
    return rc;
}

int mt_cmd_sim(int argc, char **argv)
{
    sim_args a = {.format = "din"};
    if (parse_args(&a, argc, argv) != 0)
        return 2;
    if (a.program || a.rundir)
        a.format = "traced";
    mt_trace_format format = MT_TRACE_DIN;
    if (!a.program && !a.rundir && mt_trace_format_of(a.format, &format) != 0) {
        mt_ui_error("sim: --format: expected din or lackey, not '%s'", a.format);
        return 2;
    }
    mt_sim_machine m;
    if (check_misses_only(&a) != 0 || check_what_if(&a) != 0)
        return 2;
    if (build_machine(&a, &m) != 0 || parse_sample(&a, &m) != 0)
        return 1;
    if (a.print_machine) {
        mt_sim_machine_write(stdout, &m);
        return 0;
    }
    if (a.program)
        return simulate_traced(&a, &m, (mt_trace_options){.argv = a.program, .libs = a.libs},
                               report_program);
    if (a.rundir) /* pass 1's program: pass 2's objects, or everything with --all */
        return simulate_traced(&a, &m,
                               (mt_trace_options){.rundir = a.rundir, .all = a.all},
                               report_rundir);
    mt_sim_code_map map = {0};
    if (a.binary && open_code_map(&a, format, &map) != 0)
        return 1;
    int rc = simulate(&a, &m, format, &map);
    mt_program_free((mt_program *)map.prog);
    return rc;
}
