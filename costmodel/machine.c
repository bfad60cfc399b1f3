/* costmodel/machine.c — machine profiles: the shipped default, the text
 * format `mtool calibrate` writes into the XDG config directory, and the
 * choice between them. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "costmodel.h"

static const char *const class_names[MT_IC_COUNT] = {
    "alu", "cmov", "lea", "lea3", "shift", "imul", "mulwide", "div32", "div64", "bitcnt", "branch",
    "load", "loadx", "vload", "store", "stlf", "valu", "vshift", "vimul", "vmov", "shuf", "fadd", "fmul",
    "fma", "fdiv32", "fdiv64", "fsqrt32", "fsqrt64", "cvt", "gpr2vec", "gather", "horiz",
    "microcode"};

static const char *const width_names[MT_W_COUNT] = {"128", "256", "512"};

static const char *const bound_names[MT_BOUND_COUNT] = {
    "dispatch", "pipes", "loads", "stores", "taken-branches", "fetch", "latency", "recurrence", "in-header"};

const char *mt_iclass_name(mt_iclass c) { return c < MT_IC_COUNT ? class_names[c] : "?"; }
const char *mt_width_name(mt_width w) { return w < MT_W_COUNT ? width_names[w] : "?"; }
const char *mt_bound_name(mt_bound b) { return b < MT_BOUND_COUNT ? bound_names[b] : "?"; }

#define PIPES(first, n) ((uint16_t)(((1u << (n)) - 1u) << (first)))
#define ALUS(n) PIPES(MT_PIPE_ALU0, n)
#define AGUS(n) PIPES(MT_PIPE_AGU0, n)
#define FP_MATH PIPES(MT_PIPE_FP0, 4)
#define BIT(p) ((uint16_t)(1u << (p)))
#define FP_PAIR(a, b) ((uint16_t)(BIT(MT_PIPE_FP0 + (a)) | BIT(MT_PIPE_FP0 + (b))))

/* The profile shipped for the machine mtool was developed on: a 2-vCPU
 * "AMD EPYC" KVM guest whose CPUID says family 26 (Zen 5).  Latencies and
 * throughputs are medians of `mtool calibrate` runs on it
 * (docs/COST-MODEL.md); a class with throughput k per cycle uses the first
 * k pipes of its kind, which is what the calibration's pair-interference
 * tests support (integer classes share the ALUs, FP multiply/FMA and FP add
 * use separate pairs). */
typedef struct {
    mt_iclass c;
    uint16_t pipes;
    mt_timing t[MT_W_COUNT];
} default_row;

static const default_row default_rows[] = {
    {MT_IC_ALU, ALUS(6), {{1, 0.193}, {1, 0.193}, {1, 0.193}}},
    {MT_IC_CMOV, ALUS(6), {{2.001, 0.167}, {2.001, 0.167}, {2.001, 0.167}}},
    {MT_IC_LEA, ALUS(6), {{1, 0.188}, {1, 0.188}, {1, 0.188}}},
    {MT_IC_LEA3, ALUS(6), {{2.001, 0.431}, {2.001, 0.431}, {2.001, 0.431}}},
    {MT_IC_SHIFT, ALUS(3), {{1, 0.334}, {1, 0.334}, {1, 0.334}}},
    {MT_IC_IMUL, ALUS(3), {{2.997, 0.333}, {2.997, 0.333}, {2.997, 0.333}}},
    {MT_IC_MULWIDE, ALUS(3), {{2.998, 1}, {2.998, 1}, {2.998, 1}}},
    {MT_IC_DIV32, ALUS(1), {{12.97, 5.981}, {12.97, 5.981}, {12.97, 5.981}}},
    {MT_IC_DIV64, ALUS(1), {{13.965, 9.164}, {13.965, 9.164}, {13.965, 9.164}}},
    {MT_IC_BITCNT, ALUS(6), {{1, 0.193}, {1, 0.193}, {1, 0.193}}},
    {MT_IC_BRANCH, ALUS(2), {{1, 0.338}, {1, 0.338}, {1, 0.338}}},
    {MT_IC_LOAD, AGUS(4), {{3.996, 0.25}, {3.996, 0.25}, {3.996, 0.25}}},
    {MT_IC_LOADX, 0, {{0.999, 0.25}, {0.999, 0.25}, {0.999, 0.25}}},
    {MT_IC_VLOAD, AGUS(4), {{6.502, 0.333}, {6.502, 0.501}, {6.502, 0.501}}},
    {MT_IC_STORE, AGUS(2), {{1, 1.042}, {1, 1.042}, {1, 1.042}}},
    {MT_IC_STLF, 0, {{0.502, 1}, {0.502, 1}, {0.502, 1}}},
    {MT_IC_VALU, FP_MATH, {{1.992, 0.25}, {1.992, 0.25}, {1.992, 0.25}}},
    {MT_IC_VSHIFT, FP_PAIR(1, 2), {{1.993, 0.5}, {1.991, 0.5}, {1.991, 0.5}}},
    {MT_IC_VIMUL, FP_PAIR(0, 3), {{3, 0.5}, {2.984, 0.5}, {2.984, 0.5}}},
    {MT_IC_VMOV, FP_MATH, {{0, 0.25}, {0, 0.25}, {0, 0.25}}},
    {MT_IC_SHUF, FP_PAIR(1, 2), {{1.993, 0.5}, {3.975, 0.25}, {3.975, 0.25}}},
    {MT_IC_FADD, FP_PAIR(2, 3), {{1.992, 0.5}, {1.992, 0.5}, {1.992, 0.5}}},
    {MT_IC_FMUL, FP_PAIR(0, 1), {{2.985, 0.5}, {2.985, 0.5}, {2.985, 0.5}}},
    {MT_IC_FMA, FP_PAIR(0, 1), {{3.975, 0.5}, {3.975, 0.5}, {3.975, 0.5}}},
    {MT_IC_FDIV32, BIT(MT_PIPE_FP1), {{12.001, 2.777}, {12.001, 2.777}, {12.001, 2.777}}},
    {MT_IC_FDIV64, BIT(MT_PIPE_FP1), {{16.102, 4.278}, {16.102, 4.274}, {16.102, 4.276}}},
    {MT_IC_FSQRT32, BIT(MT_PIPE_FP1), {{17.315, 5}, {17.315, 5}, {17.315, 10}}},
    {MT_IC_FSQRT64, BIT(MT_PIPE_FP1), {{19.659, 8.461}, {19.659, 8.461}, {19.659, 8.461}}},
    {MT_IC_CVT, FP_PAIR(2, 3), {{2.984, 0.5}, {2.984, 0.5}, {2.984, 0.5}}},
    {MT_IC_GPR2VEC, BIT(MT_PIPE_FP4), {{3.494, 1}, {3, 1}, {3, 1}}},
    {MT_IC_GATHER, FP_MATH, {{15, 4}, {20, 12.035}, {25, 12.035}}},
    {MT_IC_HORIZ, FP_MATH, {{5.059, 2}, {5.059, 2}, {5.059, 2}}},
    {MT_IC_MICROCODE, ALUS(6), {{10, 5}, {10, 5}, {10, 5}}},
};

void mt_machine_default(mt_machine *m)
{
    memset(m, 0, sizeof *m);
    snprintf(m->cpu_model, sizeof m->cpu_model, "AMD EPYC");
    snprintf(m->source, sizeof m->source, "default (shipped, AMD EPYC family 26)");
    m->tsc_per_cycle = 0.5649;
    m->tsc_hz = 2.096e9;
    m->dispatch_width = 8;
    m->loads_per_cycle = 3.99;
    m->stores_per_cycle = 0.96;
    m->taken_per_cycle = 0.90;
    m->probe_cycles = 1.974;
    m->has_avx512 = true;
    m->moves_take_alu = true; /* 6 adds + 6 movs took twice 6 adds */
    for (size_t i = 0; i < MT_ARRAY_LEN(default_rows); i++) {
        const default_row *r = &default_rows[i];
        m->pipes[r->c] = r->pipes;
        memcpy(m->timing[r->c], r->t, sizeof r->t);
    }
}

/* The model name and, since one name can cover several generations (a KVM
 * guest's "AMD EPYC" was a Zen 5 and then a Zen 3 here), the family and
 * model numbers: "AMD EPYC (family 25, model 1)". */
void mt_machine_cpu_model(char *buf, size_t n)
{
    snprintf(buf, n, "unknown");
    FILE *fp = fopen("/proc/cpuinfo", "r");
    if (!fp)
        return;
    char line[512], name[256] = "", family[32] = "", model[32] = "";
    while (fgets(line, sizeof line, fp) && !(name[0] && family[0] && model[0])) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        v[strcspn(v, "\n")] = '\0';
        if (!strncmp(line, "model name", 10) && !name[0])
            snprintf(name, sizeof name, "%s", v);
        else if (!strncmp(line, "cpu family", 10) && !family[0])
            snprintf(family, sizeof family, "%s", v);
        else if (!strncmp(line, "model\t", 6) && !model[0])
            snprintf(model, sizeof model, "%s", v);
    }
    fclose(fp);
    if (name[0] && family[0] && model[0])
        snprintf(buf, n, "%s (family %s, model %s)", name, family, model);
    else if (name[0])
        snprintf(buf, n, "%s", name);
}

char *mt_machine_profile_path(const char *cpu_model)
{
    char key[128];
    size_t k = 0;
    for (const char *s = cpu_model; *s && k + 1 < sizeof key; s++)
        key[k++] = isalnum((unsigned char)*s) ? (char)tolower((unsigned char)*s) : '-';
    key[k] = '\0';
    const char *x = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    if (x && x[0] == '/')
        return mt_xasprintf("%s/mtool/machine-%s.txt", x, key);
    return mt_xasprintf("%s/.config/mtool/machine-%s.txt", home && home[0] ? home : "/tmp", key);
}

void mt_machine_write(FILE *fp, const mt_machine *m)
{
    fprintf(fp, "# mtool machine profile (mtool calibrate); cycles are core cycles\n");
    fprintf(fp, "cpu_model %s\nsource %s\n", m->cpu_model, m->source);
    fprintf(fp, "tsc_per_cycle %.4f\ntsc_hz %.0f\n", m->tsc_per_cycle, m->tsc_hz);
    fprintf(fp, "dispatch_width %.2f\nloads_per_cycle %.2f\nstores_per_cycle %.2f\n",
            m->dispatch_width, m->loads_per_cycle, m->stores_per_cycle);
    fprintf(fp, "taken_per_cycle %.2f\nprobe_cycles %.3f\nhas_avx512 %d\nfetch_window %.0f\n"
                "moves_take_alu %d\n", m->taken_per_cycle, m->probe_cycles, m->has_avx512,
            m->fetch_window, m->moves_take_alu);
    fprintf(fp, "# class pipes(bits: alu0-5 agu0-3 fp0-5) then latency/rthroughput at 128 256 512\n");
    for (int c = 0; c < MT_IC_COUNT; c++) {
        fprintf(fp, "class %s 0x%03x", class_names[c], m->pipes[c]);
        for (int w = 0; w < MT_W_COUNT; w++)
            fprintf(fp, " %.3f %.3f", m->timing[c][w].latency, m->timing[c][w].rthroughput);
        fputc('\n', fp);
    }
    fprintf(fp, "# class, then extra cycles before another class's instruction sees its result\n");
    for (int c = 0; c < MT_IC_COUNT; c++)
        if (m->bypass[c] > 0)
            fprintf(fp, "bypass %s %.3f\n", class_names[c], m->bypass[c]);
}

int mt_machine_save(const mt_machine *m, const char *path, mt_error *err)
{
    char *dir = mt_xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        char *parent = mt_xstrdup(dir), *pslash = strrchr(parent, '/');
        if (pslash) {
            *pslash = '\0';
            mkdir(parent, 0777);
        }
        free(parent);
        mkdir(dir, 0777);
    }
    free(dir);
    mt_outfile out;
    if (mt_outfile_open(&out, path, err) != 0)
        return -1;
    mt_machine_write(out.fp, m);
    return mt_outfile_commit(&out, err);
}

static int class_by_name(const char *name)
{
    for (int c = 0; c < MT_IC_COUNT; c++)
        if (strcmp(name, class_names[c]) == 0)
            return c;
    return -1;
}

static bool parse_class_line(const char *rest, mt_machine *m)
{
    char name[32];
    unsigned pipes;
    double v[2 * MT_W_COUNT];
    if (sscanf(rest, "%31s %x %lf %lf %lf %lf %lf %lf", name, &pipes, &v[0], &v[1], &v[2], &v[3],
               &v[4], &v[5]) != 8)
        return false;
    int c = class_by_name(name);
    if (c < 0 || pipes >= (1u << MT_PIPE_COUNT))
        return false;
    m->pipes[c] = (uint16_t)pipes;
    for (int w = 0; w < MT_W_COUNT; w++) {
        if (!(v[2 * w] >= 0 && v[2 * w] < 1000 && v[2 * w + 1] > 0 && v[2 * w + 1] < 1000))
            return false;
        m->timing[c][w] = (mt_timing){v[2 * w], v[2 * w + 1]};
    }
    return true;
}

static bool parse_bypass_line(const char *rest, mt_machine *m)
{
    char name[32];
    double v;
    if (sscanf(rest, "%31s %lf", name, &v) != 2 || !(v >= 0 && v < 100))
        return false;
    int c = class_by_name(name);
    if (c < 0)
        return false;
    m->bypass[c] = v;
    return true;
}

static bool parse_number(const char *rest, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(rest, &end);
    while (*end == ' ' || *end == '\n')
        end++;
    if (end == rest || *end || !(v >= lo && v <= hi))
        return false;
    *out = v;
    return true;
}

static bool parse_line(char *line, mt_machine *m)
{
    line[strcspn(line, "\n")] = '\0';
    char *sp = strchr(line, ' ');
    if (!sp)
        return false;
    *sp = '\0';
    const char *key = line, *rest = sp + 1;
    double avx = 0;
    if (!strcmp(key, "cpu_model"))
        return snprintf(m->cpu_model, sizeof m->cpu_model, "%s", rest) >= 0;
    if (!strcmp(key, "source"))
        return snprintf(m->source, sizeof m->source, "%s", rest) >= 0;
    if (!strcmp(key, "class"))
        return parse_class_line(rest, m);
    if (!strcmp(key, "bypass"))
        return parse_bypass_line(rest, m);
    if (!strcmp(key, "tsc_per_cycle"))
        return parse_number(rest, 0.05, 20, &m->tsc_per_cycle);
    if (!strcmp(key, "tsc_hz"))
        return parse_number(rest, 1e6, 1e11, &m->tsc_hz);
    if (!strcmp(key, "dispatch_width"))
        return parse_number(rest, 1, 32, &m->dispatch_width);
    if (!strcmp(key, "loads_per_cycle"))
        return parse_number(rest, 0.5, 16, &m->loads_per_cycle);
    if (!strcmp(key, "stores_per_cycle"))
        return parse_number(rest, 0.25, 16, &m->stores_per_cycle);
    if (!strcmp(key, "taken_per_cycle"))
        return parse_number(rest, 0.1, 8, &m->taken_per_cycle);
    if (!strcmp(key, "probe_cycles"))
        return parse_number(rest, 0, 100, &m->probe_cycles);
    if (!strcmp(key, "fetch_window"))
        return parse_number(rest, 0, 4096, &m->fetch_window);
    if (!strcmp(key, "moves_take_alu")) {
        bool ok = parse_number(rest, 0, 1, &avx);
        m->moves_take_alu = avx != 0;
        return ok;
    }
    if (!strcmp(key, "has_avx512")) {
        bool ok = parse_number(rest, 0, 1, &avx);
        m->has_avx512 = avx != 0;
        return ok;
    }
    return false;
}

int mt_machine_read(const char *path, mt_machine *m, mt_error *err)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        mt_error_set(err, "%s: %s", path, strerror(errno));
        return -1;
    }
    mt_machine_default(m);
    /* A profile lists every bypass delay it measured: none listed is none
     * measured (profiles from before they were calibrated included). */
    memset(m->bypass, 0, sizeof m->bypass);
    char line[1024];
    int lineno = 0, rc = 0;
    while (fgets(line, sizeof line, fp)) {
        lineno++;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (!parse_line(line, m)) {
            mt_error_set(err, "%s:%d: not a valid machine profile line", path, lineno);
            rc = -1;
            break;
        }
    }
    fclose(fp);
    return rc;
}

int mt_machine_load(mt_machine *m, bool *calibrated, mt_error *err)
{
    char model[128];
    mt_machine_cpu_model(model, sizeof model);
    char *path = mt_machine_profile_path(model);
    *calibrated = access(path, F_OK) == 0;
    int rc = 0;
    if (*calibrated)
        rc = mt_machine_read(path, m, err);
    else
        mt_machine_default(m);
    free(path);
    return rc;
}
