/* sim/machine.c — the machine description: this machine from sysfs, the
 * description file (its one reader and writer, docs/SIMULATOR.md) and the
 * settings the command line shares with the file. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SYSFS_CACHE "/sys/devices/system/cpu/cpu0/cache"
#define FORMAT_VERSION 1

static void level_init(mt_sim_level_desc *d, const char *name)
{
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    d->replacement = MT_SIM_LRU;
    d->inclusion = MT_SIM_NON_INCLUSIVE;
    d->write_allocate = true;
}

void mt_sim_machine_init(mt_sim_machine *m)
{
    memset(m, 0, sizeof *m);
    level_init(&m->i1, "I1");
    level_init(&m->d1, "D1");
    for (unsigned i = 0; i < MT_SIM_MAX_LOWER; i++) {
        char name[4];
        snprintf(name, sizeof name, "L%u", i + 2);
        level_init(&m->lower[i], name);
    }
    m->seed = 1;
    m->cpus = 1;
    m->nodes = 1;
    m->page = 4096;
    for (unsigned i = 0; i < MT_SIM_MAX_TLB; i++)
        snprintf(m->tlb[i].name, sizeof m->tlb[i].name, "TLB%u", i + 1);
    snprintf(m->itlb.name, sizeof m->itlb.name, "ITLB");
    m->tlb_page = 4096;
}

/* This machine's data and instruction TLBs for 4 KiB pages, as cpuid
 * tells them. */
static void tlb_from_cpuid(mt_sim_machine *m)
{
    mt_tlb_level levels[MT_SIM_MAX_TLB];
    m->ntlb = (unsigned)mt_tlb_from_cpuid(levels, MT_SIM_MAX_TLB);
    for (unsigned i = 0; i < m->ntlb; i++) {
        m->tlb[i].present = true;
        m->tlb[i].entries = levels[i].entries;
        m->tlb[i].ways = levels[i].ways;
    }
    mt_tlb_level itlb;
    if (mt_itlb_from_cpuid(&itlb)) {
        m->itlb.present = true;
        m->itlb.entries = itlb.entries;
        m->itlb.ways = itlb.ways;
    }
}

/* "48K", "2048K", "300M", "64": bytes, or 0 when it is no size. */
static uint64_t parse_size(const char *s)
{
    if (!isdigit((unsigned char)*s))
        return 0;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return 0;
    uint64_t unit = 1;
    if (*end == 'K' || *end == 'k')
        unit = 1ull << 10, end++;
    else if (*end == 'M' || *end == 'm')
        unit = 1ull << 20, end++;
    else if (*end == 'G' || *end == 'g')
        unit = 1ull << 30, end++;
    if (*end || v > UINT64_MAX / unit)
        return 0;
    return v * unit;
}

/* A whole number in [1, max] with nothing after it, or 0. */
static uint64_t parse_count(const char *s, uint64_t max)
{
    uint64_t v = parse_size(s);
    return v <= max && !strpbrk(s, "KkMmGg") ? v : 0;
}

static char *read_line_of(const char *path)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return NULL;
    char buf[128];
    char *r = fgets(buf, sizeof buf, fp) ? mt_xstrdup(buf) : NULL;
    fclose(fp);
    if (r)
        r[strcspn(r, "\n")] = 0;
    return r;
}

/* One index* directory: level, type, size, ways, line.  0, or -1 when a
 * file is missing or says something else than a number. */
static int read_sysfs_index(const char *dir, unsigned *level, char type[16], uint64_t *size,
                            uint32_t *ways, uint32_t *line)
{
    static const char *const names[] = {"level", "type", "size", "ways_of_associativity",
                                        "coherency_line_size"};
    char *v[MT_ARRAY_LEN(names)];
    int rc = 0;
    for (size_t i = 0; i < MT_ARRAY_LEN(names); i++) {
        char *path = mt_xasprintf("%s/%s", dir, names[i]);
        v[i] = read_line_of(path);
        free(path);
        if (!v[i])
            rc = -1;
    }
    if (rc == 0) {
        *level = (unsigned)parse_count(v[0], 9);
        snprintf(type, 16, "%s", v[1]);
        *size = parse_size(v[2]);
        *ways = (uint32_t)parse_count(v[3], 1u << 16);
        *line = (uint32_t)parse_count(v[4], 1u << 16);
        if (!*level || !*size || !*ways || !*line)
            rc = -1;
    }
    for (size_t i = 0; i < MT_ARRAY_LEN(names); i++)
        free(v[i]);
    return rc;
}

static void set_geometry(mt_sim_level_desc *d, uint64_t size, uint32_t ways, uint32_t line)
{
    d->present = true;
    d->size = size;
    d->ways = ways;
    d->line = line;
}

int mt_sim_machine_from_sysfs(mt_sim_machine *m, const char *root, mt_error *err)
{
    mt_sim_machine_init(m);
    bool this_machine = !root;
    if (!root)
        root = SYSFS_CACHE;
    for (unsigned i = 0;; i++) {
        char *dir = mt_xasprintf("%s/index%u", root, i);
        char *probe = mt_xasprintf("%s/level", dir);
        FILE *fp = fopen(probe, "r");
        free(probe);
        if (!fp) {
            free(dir);
            break;
        }
        fclose(fp);
        unsigned level;
        char type[16];
        uint64_t size;
        uint32_t ways, line;
        int rc = read_sysfs_index(dir, &level, type, &size, &ways, &line);
        free(dir);
        if (rc != 0) {
            mt_error_set(err, "%s/index%u: unreadable cache description", root, i);
            return -1;
        }
        if (level == 1 && !strcmp(type, "Instruction"))
            set_geometry(&m->i1, size, ways, line);
        else if (level == 1)
            set_geometry(&m->d1, size, ways, line);
        else if (level - 2 < MT_SIM_MAX_LOWER) {
            set_geometry(&m->lower[level - 2], size, ways, line);
            if (m->nlower < level - 1)
                m->nlower = level - 1;
        }
    }
    if (!m->d1.present) {
        mt_error_set(err, "%s: no level-1 data cache described (no sysfs cache information "
                          "here: give a machine file or --D1=, --LL=)", root);
        return -1;
    }
    for (unsigned i = 0; i < m->nlower; i++)
        if (!m->lower[i].present) {
            mt_error_set(err, "%s: level %u is missing between the levels described", root,
                         i + 2);
            return -1;
        }
    snprintf(m->source, sizeof m->source, "sysfs");
    if (this_machine) /* this machine's caches: its TLB too (not a test's tree) */
        tlb_from_cpuid(m);
    return 0;
}

/* "SIZE,WAYS,LINE" into d. */
static int set_level_geometry(mt_sim_level_desc *d, const char *value, mt_error *err)
{
    char buf[96];
    snprintf(buf, sizeof buf, "%s", value);
    char *ways_s = strchr(buf, ',');
    char *line_s = ways_s ? strchr(ways_s + 1, ',') : NULL;
    if (!line_s || strchr(line_s + 1, ',')) {
        mt_error_set(err, "%s: expected SIZE,WAYS,LINE or none", d->name);
        return -1;
    }
    *ways_s++ = 0;
    *line_s++ = 0;
    uint64_t size = parse_size(buf), ways = parse_count(ways_s, 1u << 16),
             line = parse_count(line_s, 1u << 16);
    if (!size || !ways || !line) {
        mt_error_set(err, "%s: expected SIZE,WAYS,LINE with whole numbers above 0", d->name);
        return -1;
    }
    set_geometry(d, size, (uint32_t)ways, (uint32_t)line);
    return 0;
}

/* The level a key's prefix names, NULL for none; "LL" is the last below L1
 * (L2 when there is none). */
static mt_sim_level_desc *level_named(mt_sim_machine *m, const char *name, size_t len,
                                      bool create)
{
    if (len == 2 && !strncmp(name, "I1", 2))
        return &m->i1;
    if (len == 2 && !strncmp(name, "D1", 2))
        return &m->d1;
    if (len == 2 && !strncmp(name, "LL", 2)) {
        if (!m->nlower && create)
            m->nlower = 1;
        return m->nlower ? &m->lower[m->nlower - 1] : NULL;
    }
    if (len == 2 && name[0] == 'L' && name[1] >= '2' && name[1] < '2' + MT_SIM_MAX_LOWER) {
        unsigned i = (unsigned)(name[1] - '2');
        if (create && m->nlower < i + 1)
            m->nlower = i + 1;
        return i < m->nlower ? &m->lower[i] : NULL;
    }
    return NULL;
}

/* `LEVEL = none`: I1 removed, or a level below L1 and every level under it
 * (names stay positional: L3 is never the level right under L1). */
static int remove_level(mt_sim_machine *m, mt_sim_level_desc *d, mt_error *err)
{
    if (d == &m->d1) {
        mt_error_set(err, "D1: the machine needs a level-1 data cache");
        return -1;
    }
    if (d == &m->i1) {
        m->i1.present = false;
        return 0;
    }
    for (unsigned i = (unsigned)(d - m->lower); i < m->nlower; i++)
        m->lower[i].present = false;
    m->nlower = (unsigned)(d - m->lower);
    return 0;
}

/* The values of the per-level settings, in the enums' order. */
static const char *const replacement_names[] = {"lru", "plru", "random"};
static const char *const inclusion_names[] = {"non-inclusive", "inclusive", "exclusive"};
static const char *const prefetch_names[] = {"none", "next-line", "stride"};
static const char *const no_yes[] = {"no", "yes"};

/* The index of v among names[0..n), or -1. */
static int name_index(const char *v, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v, names[i]))
            return i;
    return -1;
}

/* Every level present, for a setting without a level prefix. */
static unsigned all_levels(mt_sim_machine *m, mt_sim_level_desc **out)
{
    unsigned n = 0;
    out[n++] = &m->i1;
    out[n++] = &m->d1;
    for (unsigned i = 0; i < m->nlower; i++)
        out[n++] = &m->lower[i];
    return n;
}

/* A per-level attribute (replacement, inclusion, write_allocate, prefetch) on the
 * levels given. */
static int set_attribute(mt_sim_level_desc **levels, unsigned n, const char *attr,
                         const char *value, mt_error *err)
{
    int k = -1;
    if (!strcmp(attr, "replacement"))
        k = name_index(value, replacement_names, MT_ARRAY_LEN(replacement_names));
    else if (!strcmp(attr, "inclusion"))
        k = name_index(value, inclusion_names, MT_ARRAY_LEN(inclusion_names));
    else if (!strcmp(attr, "write_allocate"))
        k = name_index(value, no_yes, MT_ARRAY_LEN(no_yes));
    else if (!strcmp(attr, "prefetch"))
        k = name_index(value, prefetch_names, MT_ARRAY_LEN(prefetch_names));
    else {
        mt_error_set(err, "%s: unknown setting", attr);
        return -1;
    }
    if (k < 0) {
        mt_error_set(err, "%s: unknown value '%s'", attr, value);
        return -1;
    }
    for (unsigned i = 0; i < n; i++) {
        mt_sim_level_desc *d = levels[i];
        if (!strcmp(attr, "replacement"))
            d->replacement = (mt_sim_replacement)k;
        else if (!strcmp(attr, "inclusion") && d->name[0] == 'L') /* L1s: non-inclusive */
            d->inclusion = (mt_sim_inclusion)k;
        else if (!strcmp(attr, "write_allocate"))
            d->write_allocate = k;
        else if (!strcmp(attr, "prefetch"))
            d->prefetch = (mt_sim_prefetch)k;
    }
    return 0;
}

/* cpu_map = C0,C1,...: decimal CPUs, one per thread from thread 0 (checked
 * against cpus when the machine is run: cpus may come after). */
static int set_cpu_map(mt_sim_machine *m, const char *value, mt_error *err)
{
    unsigned n = 0;
    for (const char *s = value; *s; s += *s == ',') {
        unsigned cpu = 0;
        const char *start = s;
        for (; *s >= '0' && *s <= '9' && cpu < MT_SIM_MAX_CPUS; s++)
            cpu = cpu * 10 + (unsigned)(*s - '0');
        if (s == start || cpu >= MT_SIM_MAX_CPUS || (*s && *s != ',') ||
            n == MT_ARRAY_LEN(m->cpu_map)) {
            mt_error_set(err, "cpu_map: expected up to %zu CPU numbers below %d, comma-separated",
                         MT_ARRAY_LEN(m->cpu_map), MT_SIM_MAX_CPUS);
            return -1;
        }
        m->cpu_map[n++] = (uint8_t)cpu;
    }
    if (!n) {
        mt_error_set(err, "cpu_map: expected CPU numbers, comma-separated");
        return -1;
    }
    m->ncpu_map = n;
    return 0;
}

/* cpus = N, shared = LEVEL | none (sim.h, "processors"); the level named is
 * checked against the machine's when it is run (mt_sim_machine_check), as
 * levels may still be added or dropped after it. */
static int set_processors(mt_sim_machine *m, const char *key, const char *value,
                          mt_error *err)
{
    if (!strcmp(key, "shared")) {
        bool level = strlen(value) == 2 && value[0] == 'L' && value[1] >= '2' &&
                     value[1] < '2' + MT_SIM_MAX_LOWER;
        if (!level && strcmp(value, "none")) {
            mt_error_set(err, "shared: expected L2, L3, L4 or none");
            return -1;
        }
        snprintf(m->shared, sizeof m->shared, "%s", value);
        return 0;
    }
    if (!strcmp(key, "cpu_map"))
        return set_cpu_map(m, value, err);
    uint64_t n = parse_count(value, MT_SIM_MAX_CPUS);
    if (!n) {
        mt_error_set(err, "cpus: expected a whole number from 1 to %d", MT_SIM_MAX_CPUS);
        return -1;
    }
    m->cpus = (unsigned)n;
    return 0;
}

/* d's ENTRIES,WAYS from `value` (key: for the error). */
static int set_tlb_geometry(mt_sim_tlb_desc *d, const char *key, const char *value,
                            mt_error *err)
{
    char buf[64], extra;
    unsigned entries, ways;
    snprintf(buf, sizeof buf, "%s", value);
    if (sscanf(buf, "%u,%u%c", &entries, &ways, &extra) != 2 || !entries || !ways ||
        entries > 65536 || entries % ways) {
        mt_error_set(err, "%s: expected ENTRIES,WAYS: whole numbers, ENTRIES at most 65536 and "
                          "a multiple of WAYS", key);
        return -1;
    }
    d->present = true;
    d->entries = entries;
    d->ways = ways;
    return 0;
}

/* TLB1 | TLB2 | ITLB = ENTRIES,WAYS or none; tlb_page = SIZE. */
static int set_tlb(mt_sim_machine *m, const char *key, const char *value, mt_error *err)
{
    if (!strcmp(key, "ITLB")) {
        m->itlb.present = false;
        return strcmp(value, "none") ? set_tlb_geometry(&m->itlb, key, value, err) : 0;
    }
    if (!strcmp(key, "tlb_page")) {
        uint64_t page = parse_size(value);
        if (page < 4096 || (page & (page - 1))) {
            mt_error_set(err, "tlb_page: expected a power of two of 4K or more");
            return -1;
        }
        m->tlb_page = page;
        return 0;
    }
    unsigned i = (unsigned)(key[3] - '1');
    if (!strcmp(value, "none")) {
        for (unsigned k = i; k < MT_SIM_MAX_TLB; k++)
            m->tlb[k].present = false;
        m->ntlb = m->ntlb < i ? m->ntlb : i;
        return 0;
    }
    if (i > m->ntlb) {
        mt_error_set(err, "%s: TLB%u comes first", key, i);
        return -1;
    }
    if (set_tlb_geometry(&m->tlb[i], key, value, err) != 0)
        return -1;
    if (m->ntlb < i + 1)
        m->ntlb = i + 1;
    return 0;
}

int mt_sim_machine_set(mt_sim_machine *m, const char *key, const char *value, mt_error *err)
{
    if (!strcmp(key, "TLB1") || !strcmp(key, "TLB2") || !strcmp(key, "ITLB") ||
        !strcmp(key, "tlb_page"))
        return set_tlb(m, key, value, err);
    if (!strcmp(key, "straddle")) {
        if (strcmp(value, "access") && strcmp(value, "line")) {
            mt_error_set(err, "straddle: expected access or line");
            return -1;
        }
        m->straddle_line = !strcmp(value, "line");
        return 0;
    }
    if (!strcmp(key, "seed")) {
        char *end;
        errno = 0;
        unsigned long long v = isdigit((unsigned char)*value) ? strtoull(value, &end, 0) : 0;
        if (errno || !v || *end) {
            mt_error_set(err, "seed: expected a whole number above 0");
            return -1;
        }
        m->seed = v;
        return 0;
    }
    if (!strcmp(key, "cpus") || !strcmp(key, "shared") || !strcmp(key, "cpu_map"))
        return set_processors(m, key, value, err);
    if (sim_numa_key(key))
        return sim_numa_set(m, key, value, err);
    const char *dot = strchr(key, '.');
    size_t len = dot ? (size_t)(dot - key) : strlen(key);
    mt_sim_level_desc *d = level_named(m, key, len, !dot && strcmp(value, "none"));
    if (!dot && d) {
        if (!strcmp(value, "none"))
            return remove_level(m, d, err);
        return set_level_geometry(d, value, err);
    }
    if (!dot && len == 2 && (key[0] == 'L' || key[0] == 'I') && !strcmp(value, "none"))
        return 0; /* removing a level the machine does not have */
    mt_sim_level_desc *levels[MT_SIM_MAX_LEVELS];
    unsigned n;
    const char *attr = key;
    if (dot) {
        if (!d) {
            mt_error_set(err, "%s: no such level in this machine", key);
            return -1;
        }
        levels[0] = d;
        n = 1;
        attr = dot + 1;
    } else
        n = all_levels(m, levels);
    return set_attribute(levels, n, attr, value, err);
}

void mt_sim_machine_cachegrind(mt_sim_machine *m)
{
    if (m->nlower > 1) {
        char name[4];
        memcpy(name, m->lower[0].name, sizeof name);
        m->lower[0] = m->lower[m->nlower - 1];
        memcpy(m->lower[0].name, name, sizeof name);
        for (unsigned i = 1; i < m->nlower; i++)
            m->lower[i].present = false;
        m->nlower = 1;
    }
    mt_sim_level_desc *levels[MT_SIM_MAX_LEVELS];
    unsigned n = all_levels(m, levels);
    for (unsigned i = 0; i < n; i++) {
        levels[i]->replacement = MT_SIM_LRU;
        levels[i]->inclusion = MT_SIM_NON_INCLUSIVE;
        levels[i]->write_allocate = true;
        levels[i]->prefetch = MT_SIM_PREFETCH_NONE;
    }
    m->straddle_line = false;
    for (unsigned i = 0; i < MT_SIM_MAX_TLB; i++)
        m->tlb[i].present = false;
    m->ntlb = 0;
    m->itlb.present = false;
}

static bool power_of_two(uint64_t v) { return v && !(v & (v - 1)); }

static int check_level(const mt_sim_level_desc *d, mt_error *err)
{
    if (!power_of_two(d->line) || d->line < 4) {
        mt_error_set(err, "%s: line size %" PRIu32 " is not a power of two of 4 bytes or more",
                     d->name, d->line);
        return -1;
    }
    if (d->size % ((uint64_t)d->ways * d->line)) {
        mt_error_set(err, "%s: size %" PRIu64 " is not a whole number of sets of %" PRIu32
                     " ways of %" PRIu32 " bytes", d->name, d->size, d->ways, d->line);
        return -1;
    }
    /* The level's arrays are allocated whole (sim.c): 2^28 lines is 16 GiB of
     * 64-byte lines and 10 GiB of bookkeeping. */
    if (d->size / d->line > (1u << 28)) {
        mt_error_set(err, "%s: more than 2^28 lines", d->name);
        return -1;
    }
    if (d->replacement == MT_SIM_PLRU && d->ways > 64) {
        mt_error_set(err, "%s: tree pseudo-LRU takes at most 64 ways", d->name);
        return -1;
    }
    return 0;
}

/* An inclusive or exclusive level finds the levels above's copies of its
 * lines inside its own: their lines may not be longer.  An exclusive level
 * is filled by victims only: no prefetcher. */
static int check_nesting(const mt_sim_machine *m, unsigned i, mt_error *err)
{
    const mt_sim_level_desc *d = &m->lower[i];
    if (d->inclusion == MT_SIM_EXCLUSIVE && d->prefetch != MT_SIM_PREFETCH_NONE) {
        mt_error_set(err, "%s: an exclusive level takes no prefetcher", d->name);
        return -1;
    }
    if (d->inclusion == MT_SIM_NON_INCLUSIVE)
        return 0;
    uint32_t longest = m->d1.line;
    if (m->i1.present && m->i1.line > longest)
        longest = m->i1.line;
    for (unsigned k = 0; k < i; k++)
        if (m->lower[k].line > longest)
            longest = m->lower[k].line;
    if (longest > d->line) {
        mt_error_set(err, "%s: %s needs lines at least as long as the levels above", d->name,
                     mt_sim_inclusion_name(d->inclusion));
        return -1;
    }
    return 0;
}

int mt_sim_machine_check(const mt_sim_machine *m, mt_error *err)
{
    if (!m->d1.present) {
        mt_error_set(err, "D1: the machine needs a level-1 data cache");
        return -1;
    }
    if ((m->i1.present && check_level(&m->i1, err) != 0) || check_level(&m->d1, err) != 0)
        return -1;
    for (unsigned i = 0; i < m->nlower; i++)
        if (check_level(&m->lower[i], err) != 0 || check_nesting(m, i, err) != 0)
            return -1;
    return sim_numa_check(m, err) != 0 ? -1 : sim_mp_check(m, err);
}

static void write_level(FILE *fp, const mt_sim_level_desc *d, bool lower)
{
    fprintf(fp, "%s = %" PRIu64 ",%" PRIu32 ",%" PRIu32 "\n", d->name, d->size, d->ways, d->line);
    fprintf(fp, "%s.replacement = %s\n", d->name, mt_sim_replacement_name(d->replacement));
    if (lower)
        fprintf(fp, "%s.inclusion = %s\n", d->name, mt_sim_inclusion_name(d->inclusion));
    fprintf(fp, "%s.write_allocate = %s\n", d->name, d->write_allocate ? "yes" : "no");
    fprintf(fp, "%s.prefetch = %s\n", d->name, mt_sim_prefetch_name(d->prefetch));
}

void mt_sim_machine_write(FILE *fp, const mt_sim_machine *m)
{
    fprintf(fp, "# mtool machine description (docs/SIMULATOR.md)\nversion = %d\n",
            FORMAT_VERSION);
    if (m->i1.present)
        write_level(fp, &m->i1, false);
    write_level(fp, &m->d1, false);
    for (unsigned i = 0; i < m->nlower; i++)
        write_level(fp, &m->lower[i], true);
    fprintf(fp, "straddle = %s\nseed = %" PRIu64 "\n", m->straddle_line ? "line" : "access",
            m->seed);
    if (m->cpus > 1) /* a uniprocessor's description stays as it was before processors */
        fprintf(fp, "cpus = %u\nshared = %s\n", m->cpus,
                m->shared[0] ? m->shared : m->nlower ? m->lower[m->nlower - 1].name : "none");
    for (unsigned i = 0; i < m->ncpu_map; i++)
        fprintf(fp, "%s%u%s", i ? "," : "cpu_map = ", m->cpu_map[i], i + 1 < m->ncpu_map ? "" : "\n");
    for (unsigned i = 0; i < m->ntlb; i++) /* none: a description as it was before the TLB */
        fprintf(fp, "%s = %" PRIu32 ",%" PRIu32 "\n", m->tlb[i].name, m->tlb[i].entries,
                m->tlb[i].ways);
    if (m->itlb.present)
        fprintf(fp, "ITLB = %" PRIu32 ",%" PRIu32 "\n", m->itlb.entries, m->itlb.ways);
    if ((m->ntlb || m->itlb.present) && m->tlb_page != 4096)
        fprintf(fp, "tlb_page = %" PRIu64 "\n", m->tlb_page);
    sim_numa_write(fp, m);
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    return s;
}

/* One "key = value" line of a description file; *seen_version set by the
 * version line, which must come first. */
static int read_setting(mt_sim_machine *m, char *line, bool *seen_version, mt_error *err)
{
    char *eq = strchr(line, '=');
    if (!eq) {
        mt_error_set(err, "expected KEY = VALUE");
        return -1;
    }
    *eq = 0;
    char *key = trim(line), *value = trim(eq + 1);
    if (!strcmp(key, "version")) {
        if (*seen_version || strcmp(value, "1")) {
            mt_error_set(err, "version: expected one 'version = %d' line", FORMAT_VERSION);
            return -1;
        }
        *seen_version = true;
        return 0;
    }
    if (!*seen_version) {
        mt_error_set(err, "expected 'version = %d' first", FORMAT_VERSION);
        return -1;
    }
    return mt_sim_machine_set(m, key, value, err);
}

int mt_sim_machine_read(mt_sim_machine *m, const char *path, mt_error *err)
{
    FILE *fp = mt_fopen_regular(path, err);
    if (!fp)
        return -1;
    mt_sim_machine_init(m);
    char *line = NULL;
    size_t cap = 0;
    unsigned lineno = 0;
    bool seen_version = false;
    int rc = 0;
    mt_error why;
    while (rc == 0 && getline(&line, &cap, fp) >= 0) {
        lineno++;
        line[strcspn(line, "#\n")] = 0;
        char *s = trim(line);
        if (*s && read_setting(m, s, &seen_version, &why) != 0) {
            mt_error_set(err, "%s:%u: %s", path, lineno, why.msg);
            rc = -1;
        }
    }
    if (rc == 0 && ferror(fp)) {
        mt_error_set(err, "%s: read error", path);
        rc = -1;
    }
    if (rc == 0 && !seen_version) {
        mt_error_set(err, "%s: not a machine description (no 'version = %d' line)", path,
                     FORMAT_VERSION);
        rc = -1;
    }
    if (rc == 0 && mt_sim_machine_check(m, &why) != 0) {
        mt_error_set(err, "%s: %s", path, why.msg);
        rc = -1;
    }
    free(line);
    fclose(fp);
    if (rc == 0)
        snprintf(m->source, sizeof m->source, "%s", path);
    return rc;
}

const char *mt_sim_replacement_name(mt_sim_replacement r) { return replacement_names[r]; }
const char *mt_sim_inclusion_name(mt_sim_inclusion i) { return inclusion_names[i]; }
const char *mt_sim_prefetch_name(mt_sim_prefetch p) { return prefetch_names[p]; }

const char *mt_sim_cause_name(mt_sim_cause c)
{
    static const char *const names[] = {"cold", "capacity", "conflict"};
    return names[c];
}
