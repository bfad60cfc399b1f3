/* run/mpi.c — MPI jobs: `mtool count -- mpirun ... PROG ARGS`.  A rank
 * may initialise MPI once per launch, so mtool wraps the launcher, not the
 * ranks: it finds PROG among the launcher's arguments, instruments it, and
 * runs the launcher with PROG replaced by `mtool _rank PROFILES COPY N ENV...
 * PROG`, which gives each rank its own profile directory (PROFILES/rank-N,
 * with the rank's host name in `host`), sets the N words of environment
 * that load the libraries' copies (LD_AUDIT...: in the ranks alone, never
 * in the launcher, whose own libraries they would replace; as arguments,
 * which every launcher hands its ranks, where OpenMPI's `-x` and MPICH's
 * `-genv` differ) and execs the instrumented copy.  After
 * the job, every rank's profiles are merged apart (per-rank figures) and
 * hard-linked into PROFILES as rank-N.NAME.mtp, where the job's merge finds
 * them all (docs/REPORT.md, "MPI jobs"). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* The hidden command line of the per-rank wrapper (ui/main.c dispatches it). */
const char mt_mpi_rank_command[] = "_rank";

static const char *const launchers[] = {"mpirun", "mpiexec", "orterun", "srun"};

/* The environment variables launchers give each rank its rank in. */
static const char *const rank_variables[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                             "SLURM_PROCID"};

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

bool mt_mpi_is_launcher(const char *cmd)
{
    for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++)
        if (strcmp(base_name(cmd), launchers[i]) == 0)
            return true;
    return false;
}

static bool is_executable_elf(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || access(path, X_OK) != 0)
        return false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char magic[4] = {0};
    bool elf = fd >= 0 && read(fd, magic, sizeof magic) == (ssize_t)sizeof magic &&
               memcmp(magic, "\177ELF", 4) == 0;
    if (fd >= 0)
        close(fd);
    return elf;
}

/* What a launcher would execute for `name`: itself when it holds a slash,
 * else the first executable ELF file of that name along $PATH (NULL: none). */
static char *executable_of(const char *name)
{
    if (strchr(name, '/'))
        return is_executable_elf(name) ? mt_xstrdup(name) : NULL;
    const char *path = getenv("PATH");
    for (const char *p = path ? path : ""; *p;) {
        size_t n = strcspn(p, ":");
        char *candidate = mt_xasprintf("%.*s/%s", (int)n, n ? p : ".", name);
        if (is_executable_elf(candidate))
            return candidate;
        free(candidate);
        p += n + (p[n] == ':');
    }
    return NULL;
}

int mt_mpi_job_open(char **argv, mt_mpi_job *job, mt_error *err)
{
    memset(job, 0, sizeof *job);
    job->argv = argv;
    if (!(job->launcher = executable_of(argv[0]))) {
        mt_error_set(err, "%s: launcher not found (not an executable ELF file, nor one in $PATH)",
                     argv[0]);
        return -1;
    }
    /* The launcher's options come first; option values (`-n 4`) name no
     * executable ELF file. */
    for (int i = 1; argv[i]; i++)
        if (argv[i][0] != '-' && (job->program = executable_of(argv[i]))) {
            job->program_index = i;
            break;
        }
    if (!job->program) {
        mt_error_set(err, "%s: no program to profile among its arguments (an executable ELF file "
                          "after the launcher's options)", argv[0]);
        return -1;
    }
    int n = 0;
    while (argv[job->program_index + n])
        n++;
    job->program_argv = mt_xcalloc((size_t)n + 1, sizeof *job->program_argv);
    memcpy(job->program_argv, argv + job->program_index, (size_t)n * sizeof *argv);
    job->program_argv[0] = job->program;
    return 0;
}

char **mt_mpi_wrapped_argv(mt_mpi_job *job, const char *instrumented, const char *profiles,
                           char *const *env, mt_error *err)
{
    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        mt_error_set(err, "/proc/self/exe: cannot find mtool itself for the ranks: %s",
                     strerror(errno));
        return NULL;
    }
    self[len] = '\0';
    free(job->self);
    job->self = mt_xstrdup(self);
    int n = 0, nenv = 0;
    while (job->argv[n])
        n++;
    while (env && env[nenv])
        nenv++;
    /* PROG becomes SELF _rank PROFILES COPY N ENV... PROG: five more words and env's. */
    free(job->wrapped);
    char **w = job->wrapped = mt_xcalloc((size_t)n + (size_t)nenv + 6, sizeof *w);
    int k = 0;
    for (int i = 0; i < job->program_index; i++)
        w[k++] = job->argv[i];
    w[k++] = job->self;
    w[k++] = (char *)mt_mpi_rank_command;
    w[k++] = (char *)profiles;
    w[k++] = (char *)instrumented;
    snprintf(job->nenv, sizeof job->nenv, "%d", nenv);
    w[k++] = job->nenv;
    for (int i = 0; i < nenv; i++)
        w[k++] = env[i];
    for (int i = job->program_index; i < n; i++)
        w[k++] = job->argv[i];
    return w;
}

/* "rank-N" -> N; -1 for any other name. */
static int rank_of_name(const char *name)
{
    int rank, used = 0;
    if (sscanf(name, "rank-%d%n", &rank, &used) != 1 || name[used] || rank < 0)
        return -1;
    return rank;
}

int mt_mpi_clear(const char *profiles, mt_error *err)
{
    DIR *d = opendir(profiles);
    if (!d) {
        mt_error_set(err, "%s: %s", profiles, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        if (rank_of_name(e->d_name) < 0)
            continue;
        char *dir = mt_xasprintf("%s/%s", profiles, e->d_name), *host = mt_xasprintf("%s/host", dir);
        rc = mt_clear_profiles(dir, err);
        if (rc == 0 && ((unlink(host) != 0 && errno != ENOENT) || rmdir(dir) != 0)) {
            mt_error_set(err, "%s: cannot remove an earlier job's rank: %s", dir, strerror(errno));
            rc = -1;
        }
        free(host);
        free(dir);
    }
    closedir(d);
    return rc;
}

/* ---- the per-rank wrapper ------------------------------------------------------ */

static int rank_from_environment(void)
{
    for (size_t i = 0; i < sizeof rank_variables / sizeof rank_variables[0]; i++) {
        const char *v = getenv(rank_variables[i]);
        char *end;
        long rank = v && *v ? strtol(v, &end, 10) : -1;
        if (v && *v && !*end && rank >= 0 && rank <= INT_MAX)
            return (int)rank;
    }
    return -1;
}

static int write_host(const char *dir, mt_error *err)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    char *path = mt_xasprintf("%s/host", dir);
    mt_outfile out;
    int rc = mt_outfile_open(&out, path, err);
    free(path);
    if (rc != 0)
        return -1;
    fprintf(out.fp, "%s\n", host);
    return mt_outfile_commit(&out, err);
}

/* The wrapper's N NAME=VALUE words, set; -1 with err when they are not. */
static int set_environment(int argc, char **argv, int *used, mt_error *err)
{
    char *end;
    long n = strtol(argv[0], &end, 10);
    if (!*argv[0] || *end || n < 0 || n > argc - 2) {
        mt_error_set(err, "%s: not a count of environment words before the program", argv[0]);
        return -1;
    }
    for (int i = 1; i <= n; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq || eq == argv[i]) {
            mt_error_set(err, "%s: not an environment word (NAME=VALUE)", argv[i]);
            return -1;
        }
        *eq = '\0';
        int rc = setenv(argv[i], eq + 1, 1);
        *eq = '=';
        if (rc != 0) {
            mt_error_set(err, "%s: cannot set it: %s", argv[i], strerror(errno));
            return -1;
        }
    }
    *used = (int)n + 1;
    return 0;
}

int mt_mpi_rank_exec(int argc, char **argv, mt_error *err)
{
    const char *profiles = argv[0], *instrumented = argv[1];
    int used;
    if (set_environment(argc - 2, argv + 2, &used, err) != 0)
        return -1;
    argv += 2 + used;
    int rank = rank_from_environment();
    if (rank < 0) {
        mt_error_set(err, "%s: no rank in the environment (none of OMPI_COMM_WORLD_RANK, "
                          "PMIX_RANK, PMI_RANK, SLURM_PROCID)", argv[0]);
        return -1;
    }
    char *dir = mt_xasprintf("%s/rank-%d", profiles, rank);
    int rc = mt_make_dirs(dir, err);
    if (rc == 0)
        rc = write_host(dir, err);
    if (rc == 0) {
        setenv("MTOOL_OUT", dir, 1);
        execv(instrumented, argv);
        mt_error_set(err, "%s: cannot execute: %s", instrumented, strerror(errno));
        rc = -1;
    }
    free(dir);
    return rc;
}

/* ---- after the job ------------------------------------------------------------- */

int mt_mpi_collect_step(const char *profiles, mt_error *err)
{
    const char *cmd = getenv("MTOOL_MPI_COLLECT");
    if (!cmd || !*cmd)
        return 0;
    char *env[] = {mt_xasprintf("MTOOL_PROFILES=%s", profiles), NULL};
    char *argv[] = {"sh", "-c", (char *)cmd, NULL};
    mt_run_result res;
    int rc = mt_run_program_unclocked("/bin/sh", argv, NULL, env, &res, err);
    if (rc == 0 && res.status != 0) {
        char why[128];
        mt_describe_status(why, sizeof why, res.status);
        mt_error_set(err, "MTOOL_MPI_COLLECT: the collect step failed (%s): the job's ranks on "
                          "other hosts are not in %s", why, profiles);
        rc = -1;
    }
    free(env[0]);
    return rc;
}

/* The first line of DIR/host, or NULL. */
static char *read_host(const char *dir)
{
    char *path = mt_xasprintf("%s/host", dir);
    FILE *fp = fopen(path, "r");
    free(path);
    if (!fp)
        return NULL;
    char line[256];
    char *host = NULL;
    if (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\n")] = '\0';
        host = mt_xstrdup(line);
    }
    fclose(fp);
    return host;
}

/* Every profile of the rank also under PROFILES, as rank-N.NAME: the job's
 * merge reads them there (a link left by an earlier merge is kept). */
static int link_rank_profiles(const char *profiles, const mt_mpi_rank *r, mt_error *err)
{
    DIR *d = opendir(r->dir);
    if (!d) {
        mt_error_set(err, "%s: %s", r->dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n <= 4 || strcmp(e->d_name + n - 4, ".mtp") != 0)
            continue;
        char *from = mt_xasprintf("%s/%s", r->dir, e->d_name),
             *to = mt_xasprintf("%s/rank-%d.%s", profiles, r->rank, e->d_name);
        if (link(from, to) != 0 && errno != EEXIST) {
            mt_error_set(err, "%s: cannot link into the job's profiles: %s", from, strerror(errno));
            rc = -1;
        }
        free(from);
        free(to);
    }
    closedir(d);
    return rc;
}

static int by_rank(const void *a, const void *b)
{
    const mt_mpi_rank *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static int find_ranks(mt_mpi_job *job, const char *profiles, mt_error *err)
{
    DIR *d = opendir(profiles);
    if (!d) {
        mt_error_set(err, "%s: %s", profiles, strerror(errno));
        return -1;
    }
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        int rank = rank_of_name(e->d_name);
        if (rank >= 0) {
            mt_mpi_rank r = {.rank = rank, .dir = mt_xasprintf("%s/%s", profiles, e->d_name)};
            MT_PUSH(job->ranks, n, cap, r);
        }
    }
    closedir(d);
    job->nranks = (uint32_t)n;
    if (n > 1)
        qsort(job->ranks, n, sizeof *job->ranks, by_rank);
    if (n == 0) {
        mt_error_set(err, "%s: no rank of the job wrote a profile directory (rank-N)", profiles);
        return -1;
    }
    return 0;
}

int mt_mpi_collect(mt_mpi_job *job, const char *profiles, const mt_counter_map *map, FILE *log,
                   mt_error *err)
{
    mt_mpi_ranks_free(job);
    if (find_ranks(job, profiles, err) != 0)
        return -1;
    for (uint32_t i = 0; i < job->nranks; i++) {
        mt_mpi_rank *r = &job->ranks[i];
        r->host = read_host(r->dir);
        if (link_rank_profiles(profiles, r, err) != 0 ||
            mt_profile_merge(r->dir, map, &r->merge, err) != 0)
            return -1;
        rn_warn_damaged_profiles(log, r->dir, &r->merge);
    }
    return 0;
}

void mt_mpi_accumulate(mt_mpi_job *job, const mt_program *prog, const mt_counter_map *map,
                       const mt_pass1_libraries *libs)
{
    for (uint32_t i = 0; i < job->nranks; i++) {
        mt_mpi_rank *r = &job->ranks[i];
        rn_accumulate(prog, map, r->merge.counts, &r->totals);
        r->lib_totals = mt_xcalloc(libs->nlibs + 1, sizeof *r->lib_totals);
        r->nlib_totals = libs->nlibs;
        for (size_t k = 0; k < libs->nlibs; k++)
            if (!libs->libs[k].note)
                rn_library_accumulate(&libs->libs[k], r->merge.counts, &r->lib_totals[k]);
    }
}

void mt_mpi_ranks_free(mt_mpi_job *job)
{
    for (uint32_t i = 0; i < job->nranks; i++) {
        mt_mpi_rank *r = &job->ranks[i];
        free(r->dir);
        free(r->host);
        mt_profile_merge_free(&r->merge);
        rn_pass1_totals_free(&r->totals);
        for (size_t k = 0; k < r->nlib_totals; k++)
            rn_pass1_totals_free(&r->lib_totals[k]);
        free(r->lib_totals);
    }
    free(job->ranks);
    job->ranks = NULL;
    job->nranks = 0;
}

void mt_mpi_job_free(mt_mpi_job *job)
{
    mt_mpi_ranks_free(job);
    free(job->launcher);
    free(job->program);
    free(job->program_argv);
    free(job->wrapped);
    free(job->self);
    memset(job, 0, sizeof *job);
}
