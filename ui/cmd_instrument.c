/* ui/cmd_instrument.c — `mtool instrument --counts [--time OBJECT]... BIN -o OUT`:
 * a drop-in replacement of BIN that counts every block of its instrumented
 * procedures and times the m-objects named. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../rewriter/rewriter.h"
#include "ui.h"

const char mt_instrument_usage[] =
    "usage: mtool instrument --counts [--time OBJECT]... BIN -o OUT [options]\n"
    "\n"
    "Writes OUT, a drop-in replacement of the executable BIN that counts how often\n"
    "every block of its instrumented procedures runs.  Procedures whose control flow\n"
    "is fully resolved are copied with a counter at each block; the rest run as\n"
    "before, uncounted, and are listed with the reason (-v).  OUT runs on its own,\n"
    "from any harness; each of its processes writes its own profile file\n"
    "(<name>.<pid>.<id>.mtp) into $MTOOL_OUT, or the default directory below.\n"
    "\n"
    "options:\n"
    "  --counts            block counters (pass 1; always on)\n"
    "  --time OBJECT       also time OBJECT with TSC timers on its entry and exit\n"
    "                      edges (pass 2; repeatable): NAME (a procedure), NAME@0xADDR\n"
    "                      (its loop whose header block starts at ADDR), NAME:K\n"
    "                      (its loop K, numbered as in 'mtool analyze --loops') or\n"
    "                      a region of it: NAME#A-B (from region cut point A up to\n"
    "                      cut point B), NAME#A- (from A to the returns), NAME#A\n"
    "                      (from A to the next cut point), A and B numbered as in\n"
    "                      'mtool analyze --function NAME' or given as block\n"
    "                      addresses (0x...), as pass-2 reports print them;\n"
    "                      profiles then hold per object: entries, inclusive,\n"
    "                      exclusive and outside-call TSC ticks, non-local exits\n"
    "  -o OUT              the instrumented executable (written atomically)\n"
    "  --profile-dir DIR   default profile directory (default: OUT.profiles)\n"
    "  --timers-only       with --time: no counter code (block counts stay 0), so the\n"
    "                      timed objects run at the program's own speed (pass 2)\n"
    "  --no-loop-registers count blocks that loop on themselves in memory too\n"
    "                      (slower; for comparing the two kinds of probes)\n"
    "  --no-derived-counts a probe in every block, none whose count flow determines\n"
    "                      from its neighbours' (slower; for comparisons)\n"
    "  --skip PROC         leave procedure PROC (a name, or its entry 0x...) as it is\n"
    "                      (repeatable): for code that something runs from its\n"
    "                      original bytes, such as valgrind's trampolines, which\n"
    "                      its guest executes\n"
    "  --libs all|NAME,... also count the shared libraries BIN loads (as 'mtool\n"
    "                      count --libs'): OUT is BIN's copy of that set, and\n"
    "                      OUT.env the environment that loads the libraries'\n"
    "                      copies (LD_AUDIT, MTOOL_LIBS, MTOOL_ORIGIN; NAME=VALUE\n"
    "                      entries ending in a NUL byte, as `env -0` prints them):\n"
    "                      OUT counts them only when it runs with it (a suite's\n"
    "                      harness gives each executable its own).  Libraries\n"
    "                      opened by dlopen are not followed.  Not with --time,\n"
    "                      --skip, --profile-dir or the probe options\n"
    "  -v, --verbose       list every procedure left out, with the reason\n";

typedef struct {
    const char *bin, *out, *profile_dir, *libs;
    bool counts, verbose, no_loop_registers, no_derived_counts, timers_only;
    const char **time_specs;
    size_t ntime_specs, cap_time_specs;
    const char **skip_specs;
    size_t nskip_specs, cap_skip_specs;
} instrument_args;

static int parse_args(int argc, char **argv, instrument_args *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "--counts") == 0)
            a->counts = true;
        else if (strcmp(s, "--no-loop-registers") == 0)
            a->no_loop_registers = true;
        else if (strcmp(s, "--no-derived-counts") == 0)
            a->no_derived_counts = true;
        else if (strcmp(s, "--timers-only") == 0)
            a->timers_only = true;
        else if (strcmp(s, "-v") == 0 || strcmp(s, "--verbose") == 0)
            a->verbose = true;
        else if (strcmp(s, "-o") == 0 && i + 1 < argc)
            a->out = argv[++i];
        else if (strcmp(s, "--libs") == 0 && i + 1 < argc && argv[i + 1][0])
            a->libs = argv[++i];
        else if (strcmp(s, "--profile-dir") == 0 && i + 1 < argc)
            a->profile_dir = argv[++i];
        else if (strcmp(s, "--time") == 0 && i + 1 < argc) {
            const char *spec = argv[++i];
            MT_PUSH(a->time_specs, a->ntime_specs, a->cap_time_specs, spec);
        } else if (strcmp(s, "--skip") == 0 && i + 1 < argc) {
            const char *spec = argv[++i];
            MT_PUSH(a->skip_specs, a->nskip_specs, a->cap_skip_specs, spec);
        }
        else if (s[0] == '-' && s[1]) {
            mt_ui_error("instrument: unknown or incomplete option '%s'; see 'mtool help instrument'", s);
            free(a->time_specs);
            free(a->skip_specs);
            return 2;
        } else if (!a->bin)
            a->bin = s;
        else {
            mt_ui_error("instrument: more than one binary given ('%s', '%s')", a->bin, s);
            free(a->time_specs);
            free(a->skip_specs);
            return 2;
        }
    }
    if (!a->bin || !a->out || !a->counts) {
        mt_ui_error("instrument: need --counts, BIN and -o OUT; see 'mtool help instrument'");
        free(a->time_specs);
        free(a->skip_specs);
        return 2;
    }
    if (a->libs && (a->ntime_specs || a->nskip_specs || a->timers_only || a->no_loop_registers ||
                    a->no_derived_counts || a->profile_dir)) {
        /* the set's copies are pass 1's, cached: made with its options only */
        mt_ui_error("instrument: --libs takes none of --time, --skip, --timers-only, --profile-dir "
                    "and the probe options");
        free(a->time_specs);
        free(a->skip_specs);
        return 2;
    }
    return 0;
}

/* An absolute path for `path`, whose directory must exist. */
static char *absolute_path(const char *path)
{
    char *copy = mt_xstrdup(path), *copy2 = mt_xstrdup(path);
    char dir[PATH_MAX];
    char *res = realpath(dirname(copy), dir) ? mt_xasprintf("%s/%s", dir, basename(copy2)) : NULL;
    free(copy);
    free(copy2);
    return res;
}

static double percent(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 100.0;
}

void mt_print_rewrite_report(FILE *fp, const mt_program *prog, const mt_rewrite_report *r,
                             bool verbose)
{
    fprintf(fp, "instrumented %u of %u procedures (%.1f%%), %" PRIu64 " of %" PRIu64 " blocks (%.1f%%)\n",
            r->nprocs_instrumented, r->nprocs_candidates,
            percent(r->nprocs_instrumented, r->nprocs_candidates), r->nblocks_instrumented,
            r->nblocks_candidates, percent(r->nblocks_instrumented, r->nblocks_candidates));
    fprintf(fp, "  %" PRIu64 " bytes of relocated code; %u block counts derived from others' "
                "(no probe); %u probes save flags; %u self-loops count in a register; %u calls to "
                "thread and process creation wrapped; %u system calls that may create a task hooked; %u "
                "calls through pointers record their targets; %u jump-table reads check their "
                "index; %u unwind entries\n",
            r->code_bytes, r->nderived, r->nprobes_saving_flags, r->nloop_registers,
            r->nwrapped_calls, r->ntask_hooks, r->ncall_sites, r->ntable_checks, r->nfdes);
    uint32_t shown = verbose ? r->nskipped : (r->nskipped < 10 ? r->nskipped : 10);
    for (uint32_t i = 0; i < shown; i++) {
        char *name = mt_ui_escape(prog->procs[r->skipped[i].proc].name),
             *reason = mt_ui_escape(r->skipped[i].reason);
        fprintf(fp, "  not instrumented: %s: %s\n", name, reason);
        free(name);
        free(reason);
    }
    if (shown < r->nskipped)
        fprintf(fp, "  ... and %u more (-v lists them all)\n", r->nskipped - shown);
    if (r->ntimed || r->ntimer_events)
        fprintf(fp, "  timed %u m-objects: %u start/stop events on edges (%u save flags), %u trampolines\n",
                r->ntimed, r->ntimer_events, r->ntimer_events_saving_flags, r->ntrampolines);
}

/* Objects named by --time whose procedure could not be relocated. */
static void print_untimed(FILE *fp, const mt_program *prog, const mt_rewrite_report *r,
                          const instrument_args *a)
{
    for (size_t i = 0; i < a->ntime_specs; i++) {
        mt_timed_object o;
        mt_error err;
        if (mt_timed_object_parse(prog, a->time_specs[i], &o, &err) != 0)
            continue;
        for (uint32_t k = 0; k < r->nskipped; k++)
            if (r->skipped[k].proc == o.proc)
                fprintf(fp, "  not timed: %s: %s\n", a->time_specs[i], r->skipped[k].reason);
    }
}

/* The objects named by --time: -1 after one error line. */
static int parse_objects(const mt_program *prog, const instrument_args *a, mt_timed_object *objs)
{
    for (size_t i = 0; i < a->ntime_specs; i++) {
        mt_error err;
        if (mt_timed_object_parse(prog, a->time_specs[i], &objs[i], &err) != 0) {
            mt_ui_error("instrument: --time %s", err.msg);
            return -1;
        }
        for (size_t j = 0; j < i; j++)
            if (objs[j].proc == objs[i].proc &&
                mt_timed_object_key(prog, &objs[j]) == mt_timed_object_key(prog, &objs[i])) {
                mt_ui_error("instrument: --time %s: named twice", a->time_specs[i]);
                return -1;
            }
    }
    return 0;
}

/* The procedures named by --skip (a name or an entry address): -1 after one
 * error line. */
static int parse_skips(const mt_program *prog, const instrument_args *a, uint32_t *procs)
{
    for (size_t i = 0; i < a->nskip_specs; i++) {
        const char *spec = a->skip_specs[i];
        char *end = NULL;
        uint64_t entry = strncmp(spec, "0x", 2) == 0 ? strtoull(spec, &end, 16) : 0;
        uint32_t p = end && *end == '\0' ? mt_procedure_with_entry(prog, entry) : mt_find_procedure(prog, spec);
        if (p == MT_NONE) {
            char shown[256];
            mt_escape_text(shown, sizeof shown, spec);
            mt_ui_error("instrument: --skip %s: no procedure of that name or entry in %s", shown, a->bin);
            return -1;
        }
        procs[i] = p;
    }
    return 0;
}

/* `path`'s bytes into `out`, executable, written atomically. */
static int copy_executable(const char *path, const char *out, mt_error *err)
{
    FILE *in = fopen(path, "rb");
    if (!in) {
        mt_error_set(err, "%s: %s", path, strerror(errno));
        return -1;
    }
    mt_outfile f;
    int rc = mt_outfile_open(&f, out, err);
    char buf[65536];
    for (size_t n; rc == 0 && (n = fread(buf, 1, sizeof buf, in)) > 0;)
        if (fwrite(buf, 1, n, f.fp) != n) {
            mt_error_set(err, "%s: cannot write: %s", out, strerror(errno));
            rc = -1;
        }
    if (rc == 0 && (ferror(in) || fchmod(fileno(f.fp), 0755) != 0)) {
        mt_error_set(err, "%s: cannot copy to %s: %s", path, out, strerror(errno));
        rc = -1;
    }
    fclose(in);
    if (rc == 0)
        return mt_outfile_commit(&f, err);
    if (f.fp)
        mt_outfile_abort(&f);
    return -1;
}

/* The environment entries, each ending in a NUL byte, into `path`. */
static int write_env(char *const *env, const char *path, mt_error *err)
{
    mt_outfile f;
    if (mt_outfile_open(&f, path, err) != 0)
        return -1;
    for (size_t i = 0; env && env[i]; i++)
        fwrite(env[i], 1, strlen(env[i]) + 1, f.fp);
    return mt_outfile_commit(&f, err);
}

/* Libraries of the set that have a counting copy (the others are left
 * original, with their note). */
static size_t counted_libraries(const mt_pass1_libraries *l)
{
    size_t n = 0;
    for (size_t i = 0; i < l->nlibs; i++)
        n += !l->libs[i].note;
    return n;
}

/* --libs: BIN's copy in the set of its libraries' copies (pass 1's, as
 * `mtool count --libs` makes them: run/pass1.c), to OUT; the environment
 * that loads those copies to OUT.env.  No dlopen list (MTOOL_LIBS_SEEN
 * empty): no mtool run reads it afterwards.  What preparing the libraries
 * says (each library's line, a name matching none) is shown once OUT is
 * written; a refusal is one line. */
static int instrument_with_libraries(const instrument_args *a, const char *out_abs, mt_error *err)
{
    mt_analyze_options opt;
    mt_analyze_options_init(&opt);
    mt_program *prog = mt_analyze(a->bin, &opt, err);
    if (!prog)
        return -1;
    mt_pass1_libraries libs;
    mt_instrumented ins = {0};
    mt_counter_map map = {0};
    char *env_path = mt_xasprintf("%s.env", out_abs), *said = NULL;
    size_t said_len = 0;
    FILE *log = open_memstream(&said, &said_len);
    int rc = mt_pass1_libraries_prepare(a->bin, a->libs, false, &libs, log ? log : stderr, err);
    if (log)
        fclose(log);
    mt_rewrite_options member = {.counter_base = libs.ncounters, .libs_set = libs.set,
                                 .call_site_base = libs.ncall_sites};
    if (rc == 0 && counted_libraries(&libs) > 0)
        rc = mt_instrument_in_set(prog, a->bin, &member, &ins, err);
    if (rc == 0 && ins.path && (rc = mt_counter_map_read(ins.path, &map, err)) == 0)
        mt_pass1_libraries_copy(&libs, map.ncounters);
    if (rc == 0 && counted_libraries(&libs) == 0) { /* none analyzed, or none rewritten */
        mt_error_set(err, "%s: --libs %s: no library to count (mtool count --libs %s -- BIN says why)",
                     a->bin, a->libs, a->libs);
        rc = -1;
    }
    /* OUT first: its directory, real, is the $ORIGIN the environment maps */
    bool wrote = rc == 0 && (rc = copy_executable(ins.path, out_abs, err)) == 0;
    if (rc == 0 && (rc = mt_pass1_libraries_env(&libs, a->bin, out_abs, "", err)) == 0)
        rc = write_env(libs.env, env_path, err);
    if (rc != 0 && wrote)
        unlink(out_abs); /* no OUT without its environment */
    if (rc == 0) {
        fputs(said ? said : "", stderr);
        mt_print_rewrite_report(stderr, prog, &ins.rewrite, a->verbose);
        char *dir = mt_xstrdup(ins.path), *out = mt_ui_escape(a->out), *env = mt_ui_escape(env_path),
             *profiles = mt_ui_escape(dirname(dir));
        fprintf(stderr, "wrote %s and %s (its environment); profiles go to $MTOOL_OUT or %s/profiles\n",
                out, env, profiles);
        free(dir);
        free(out);
        free(env);
        free(profiles);
    }
    free(env_path);
    free(said);
    mt_counter_map_free(&map);
    mt_instrumented_free(&ins);
    mt_pass1_libraries_free(&libs);
    mt_program_free(prog);
    return rc;
}

int mt_cmd_instrument(int argc, char **argv)
{
    instrument_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    if (a.libs) {
        char *out = absolute_path(a.out);
        mt_error err;
        rc = out ? instrument_with_libraries(&a, out, &err) : 1;
        if (!out)
            mt_ui_error("%s: the output directory does not exist", a.out);
        else if (rc != 0)
            mt_ui_error("%s", err.msg);
        free(out);
        free(a.time_specs);
        free(a.skip_specs);
        return rc ? 1 : 0;
    }
    char *out_abs = absolute_path(a.out);
    if (!out_abs) {
        mt_ui_error("%s: the output directory does not exist", a.out);
        return 1;
    }
    char *dir = a.profile_dir ? absolute_path(a.profile_dir) : mt_xasprintf("%s.profiles", out_abs);
    char *name_copy = mt_xstrdup(a.bin);
    mt_rewrite_options ro = {.profile_dir = dir ? dir : "", .program_name = basename(name_copy),
                             .no_loop_registers = a.no_loop_registers,
                             .no_derived_counts = a.no_derived_counts,
                             .timers_only = a.timers_only};
    mt_analyze_options opt;
    mt_analyze_options_init(&opt);
    opt.want_lines = false;
    opt.want_estimability = false;
    mt_error err;
    rc = 1;
    mt_program *prog = NULL;
    mt_timed_object *objs = mt_xcalloc(a.ntime_specs + 1, sizeof *objs);
    ro.timed = objs;
    ro.ntimed = (uint32_t)a.ntime_specs;
    uint32_t *skips = mt_xcalloc(a.nskip_specs + 1, sizeof *skips);
    ro.skip = skips;
    ro.nskip = (uint32_t)a.nskip_specs;
    if (!dir)
        mt_ui_error("%s: the profile directory's parent does not exist", a.profile_dir);
    else if (!(prog = mt_analyze(a.bin, &opt, &err)))
        mt_ui_error("%s", err.msg);
    else if (parse_objects(prog, &a, objs) != 0 || parse_skips(prog, &a, skips) != 0)
        rc = 1;
    else {
        mt_rewrite_report report;
        if (mt_rewrite_counts(prog, a.out, &ro, &report, &err) != 0)
            mt_ui_error("%s", err.msg);
        else {
            mt_print_rewrite_report(stderr, prog, &report, a.verbose);
            print_untimed(stderr, prog, &report, &a);
            fprintf(stderr, "wrote %s; profiles go to $MTOOL_OUT or %s\n", a.out, dir);
            rc = 0;
        }
        mt_rewrite_report_free(&report);
    }
    mt_program_free(prog);
    free(objs);
    free(skips);
    free(a.time_specs);
    free(a.skip_specs);
    free(name_copy);
    free(dir);
    free(out_abs);
    return rc;
}
