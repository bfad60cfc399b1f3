/* sim/trace.c — the trace files the simulator reads: Dinero's din format and
 * Valgrind lackey's --trace-mem=yes output (docs/SIMULATOR.md). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Sizes above this are no single reference of any x86-64 instruction (an
 * AVX-512 store is 64 bytes, a cache line's zeroing 256): a damaged line. */
#define MAX_REFERENCE_SIZE 4096

int mt_trace_format_of(const char *name, mt_trace_format *f)
{
    if (!strcmp(name, "din"))
        *f = MT_TRACE_DIN;
    else if (!strcmp(name, "lackey"))
        *f = MT_TRACE_LACKEY;
    else
        return -1;
    return 0;
}

uint32_t mt_sim_procedure_of(void *map, uint64_t addr)
{
    const mt_sim_code_map *m = map;
    uint32_t p = mt_procedure_at(m->prog, addr - m->bias);
    return p == MT_NONE ? 0 : p + 1;
}

/* The value of a hex digit, -1 for another byte.  No ctype: isxdigit and
 * tolower through the locale tables cost 12% of all instructions on a
 * lackey trace (838 -> 736 million for a million records). */
static int hex_digit(unsigned char c)
{
    if ((unsigned)(c - '0') < 10)
        return c - '0';
    if ((unsigned)((c | 0x20) - 'a') < 6)
        return (c | 0x20) - 'a' + 10;
    return -1;
}

/* Hex digits (an optional 0x first) at *p, at most 64 bits; *p moves past
 * them.  -1 when there are none or too many. */
static int parse_hex(const char **p, uint64_t *out)
{
    const unsigned char *s = (const unsigned char *)*p;
    if (s[0] == '0' && (s[1] | 0x20) == 'x' && hex_digit(s[2]) >= 0)
        s += 2;
    while (*s == '0' && hex_digit(s[1]) >= 0)
        s++;
    uint64_t v = 0;
    int n = 0, d;
    for (; (d = hex_digit(*s)) >= 0; s++, n++) {
        if (n == 16)
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    if (!n)
        return -1;
    *p = (const char *)s;
    *out = v;
    return 0;
}

/* A decimal size in [1, MAX_REFERENCE_SIZE] at *p. */
static int parse_size(const char **p, uint32_t *out)
{
    const char *s = *p;
    uint32_t v = 0;
    for (; (unsigned)(*s - '0') < 10; s++) {
        v = v * 10 + (uint32_t)(*s - '0');
        if (v > MAX_REFERENCE_SIZE)
            return -1;
    }
    if (s == *p || !v)
        return -1;
    *p = s;
    *out = v;
    return 0;
}

static const char *skip_blanks(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

typedef struct {
    mt_sim *sim;
    mt_trace_code_of code_of;
    mt_trace_data_at data_at;
    void *ctx;
    uint32_t code;            /* of the last instruction fetch */
    uint64_t pc;              /* its address (lackey) */
    mt_trace_counts *counts;
} trace_reader;

/* A read or write of the trace, with its data object when the caller
 * names them. */
static void data_access(trace_reader *r, uint64_t addr, uint32_t size, mt_sim_kind kind)
{
    uint32_t data = r->data_at ? r->data_at(r->ctx, addr, size, kind == MT_SIM_WRITE) : 0;
    sim_access(r->sim, addr, size, kind, r->code, data, r->pc);
}

static void fetch(trace_reader *r, uint64_t addr, uint32_t size)
{
    if (r->code_of)
        r->code = r->code_of(r->ctx, addr);
    r->pc = addr;
    r->counts->fetches++;
    sim_access(r->sim, addr, size, MT_SIM_IFETCH, r->code, 0, r->pc);
}

/* din's optional 4th column (our extension, docs/SIMULATOR.md): the thread
 * of the reference, which picks its simulated CPU. */
static int din_thread(trace_reader *r, const char **p)
{
    const char *s = *p;
    uint64_t k = 0;
    for (; (unsigned)(*s - '0') < 10; s++)
        if ((k = k * 10 + (uint64_t)(*s - '0')) > UINT32_MAX)
            return -1;
    if (s == *p)
        return -1;
    *p = s;
    mt_sim_set_thread(r->sim, (uint32_t)k);
    return 0;
}

static const char *const mpol_names[MT_SIM_NMPOL] = {
    "default", "preferred", "bind", "interleave", "local", "preferred_many", "weighted_interleave"};

/* The word at *p (letters and '_') when it is followed by a blank or the
 * end, its length; 0 for none. */
static size_t din_word(const char *s)
{
    size_t n = 0;
    while ((s[n] >= 'a' && s[n] <= 'z') || s[n] == '_')
        n++;
    return s[n] && s[n] != ' ' && s[n] != '\t' ? 0 : n;
}

/* A placement mode's name and a hex node mask at *p. */
static const char *din_policy(const char **p, uint32_t *mode, uint64_t *nodes)
{
    const char *s = skip_blanks(*p);
    size_t n = din_word(s);
    for (*mode = 0; *mode < MT_SIM_NMPOL; (*mode)++)
        if (n == strlen(mpol_names[*mode]) && !strncmp(s, mpol_names[*mode], n))
            break;
    if (*mode == MT_SIM_NMPOL)
        return "expected a mode: default, preferred, bind, interleave, local, preferred_many "
               "or weighted_interleave";
    s = skip_blanks(s + n);
    if (parse_hex(&s, nodes) != 0)
        return "expected a hexadecimal node mask after the mode";
    *p = skip_blanks(s);
    return NULL;
}

/* "mempolicy MODE NODES [THREAD]": set_mempolicy of the thread. */
static const char *din_mempolicy(trace_reader *r, const char *s)
{
    uint32_t mode;
    uint64_t nodes;
    const char *why = din_policy(&s, &mode, &nodes);
    if (why)
        return why;
    if (*s && din_thread(r, &s) != 0)
        return "expected a decimal thread number below 2^32 after the node mask";
    if (*skip_blanks(s))
        return "unexpected text after mempolicy MODE NODES [THREAD]";
    mt_sim_set_policy(r->sim, mode, nodes);
    return NULL;
}

/* "mbind ADDRESS LENGTH MODE NODES [move]". */
static const char *din_mbind(trace_reader *r, const char *s)
{
    uint64_t addr, len, nodes;
    uint32_t mode;
    s = skip_blanks(s);
    if (parse_hex(&s, &addr) != 0)
        return "expected a hexadecimal address after mbind";
    s = skip_blanks(s);
    if (parse_hex(&s, &len) != 0)
        return "expected a hexadecimal length after the address";
    const char *why = din_policy(&s, &mode, &nodes);
    if (why)
        return why;
    bool move = din_word(s) == 4 && !strncmp(s, "move", 4);
    if (*skip_blanks(s + (move ? 4 : 0)))
        return "unexpected text after mbind ADDRESS LENGTH MODE NODES [move]";
    mt_sim_bind(r->sim, addr, len, mode, nodes, move ? MT_SIM_MPOL_MF_MOVE : 0);
    return NULL;
}

/* "move_pages ADDRESS NODE". */
static const char *din_move(trace_reader *r, const char *s)
{
    uint64_t addr, node = 0;
    s = skip_blanks(s);
    if (parse_hex(&s, &addr) != 0)
        return "expected a hexadecimal address after move_pages";
    s = skip_blanks(s);
    const char *digits = s;
    for (; (unsigned)(*s - '0') < 10 && node <= UINT32_MAX; s++)
        node = node * 10 + (uint64_t)(*s - '0');
    if (s == digits || node > UINT32_MAX || *skip_blanks(s))
        return "expected a decimal node after the address, and nothing after it";
    mt_sim_move_page(r->sim, addr, (uint32_t)node);
    return NULL;
}

/* din's placement lines, or "" when the line is none. */
static const char *din_placement(trace_reader *r, const char *s)
{
    static const struct {
        const char *word;
        const char *(*read)(trace_reader *, const char *);
    } lines[] = {{"mempolicy", din_mempolicy}, {"mbind", din_mbind}, {"move_pages", din_move}};
    size_t n = din_word(s);
    for (size_t k = 0; n && k < MT_ARRAY_LEN(lines); k++)
        if (n == strlen(lines[k].word) && !strncmp(s, lines[k].word, n)) {
            r->counts->records++;
            return lines[k].read(r, s + n);
        }
    return "";
}

/* din: "LABEL ADDRESS [SIZE [THREAD]]", or a placement line. */
static const char *din_record(trace_reader *r, const char *s)
{
    s = skip_blanks(s);
    if (!*s)
        return NULL; /* blank line */
    const char *placement = din_placement(r, s);
    if (!placement || *placement)
        return placement;
    if (*s < '0' || *s > '4' || (s[1] != ' ' && s[1] != '\t'))
        return "expected a label 0-4 (read, write, fetch, other, flush) and an address";
    int label = *s - '0';
    s = skip_blanks(s + 1);
    uint64_t addr;
    uint32_t size = 1;
    if (parse_hex(&s, &addr) != 0)
        return "expected a hexadecimal address of at most 64 bits";
    s = skip_blanks(s);
    if (*s && parse_size(&s, &size) != 0)
        return "expected a decimal size from 1 to 4096 after the address";
    s = skip_blanks(s);
    if (*s && din_thread(r, &s) != 0)
        return "expected a decimal thread number below 2^32 after the size";
    if (*skip_blanks(s))
        return "unexpected text after LABEL ADDRESS [SIZE [THREAD]]";
    r->counts->records++;
    switch (label) {
    case 0:
    case 3: /* Dinero's "unknown access type": a read */
        r->counts->reads++;
        data_access(r, addr, size, MT_SIM_READ);
        break;
    case 1:
        r->counts->writes++;
        data_access(r, addr, size, MT_SIM_WRITE);
        break;
    case 2:
        fetch(r, addr, size);
        break;
    default:
        r->counts->flushes++;
        mt_sim_flush(r->sim);
    }
    return NULL;
}

/* lackey: "I  ADDR,SIZE" or " K ADDR,SIZE" with K in L, S, M. */
static const char *lackey_record(trace_reader *r, const char *s)
{
    if (!*s || !strncmp(s, "==", 2) || !strncmp(s, "--", 2) || !strncmp(s, "**", 2) ||
        !strncmp(s, "###", 3))
        return NULL; /* blank, or one of valgrind's own lines (its messages; its DWARF
                        reader's "### unhandled dwarf2 abbrev form" on clang's output) */
    char kind;
    if (s[0] == 'I' && s[1] == ' ' && s[2] == ' ')
        kind = 'I';
    else if (s[0] == ' ' && strchr("LSM", s[1]) && s[1] && s[2] == ' ')
        kind = s[1];
    else
        return "expected 'I  ADDR,SIZE' or ' L|S|M ADDR,SIZE'";
    s += 3;
    uint64_t addr;
    uint32_t size;
    if (parse_hex(&s, &addr) != 0)
        return "expected a hexadecimal address of at most 64 bits";
    if (*s++ != ',' || parse_size(&s, &size) != 0)
        return "expected ',SIZE' with a size from 1 to 4096";
    if (*skip_blanks(s))
        return "unexpected text after ADDR,SIZE";
    r->counts->records++;
    if (kind == 'I')
        fetch(r, addr, size);
    else if (kind == 'L' || kind == 'M') {
        r->counts->reads++;
        data_access(r, addr, size, MT_SIM_READ);
    }
    if (kind == 'S' || kind == 'M') {
        r->counts->writes++;
        data_access(r, addr, size, MT_SIM_WRITE);
    }
    r->counts->modifies += kind == 'M';
    return NULL;
}

int mt_trace_read(mt_sim *s, const char *path, mt_trace_format format, mt_trace_code_of code_of,
                  mt_trace_data_at data_at, void *ctx, mt_trace_counts *counts, mt_error *err)
{
    FILE *fp = mt_fopen_regular(path, err);
    if (!fp)
        return -1;
    memset(counts, 0, sizeof *counts);
    trace_reader r = {.sim = s, .code_of = code_of, .data_at = data_at, .ctx = ctx,
                      .counts = counts};
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    uint64_t lineno = 0;
    int rc = 0;
    while (rc == 0 && (len = getline(&line, &cap, fp)) >= 0) {
        lineno++;
        if (len && line[len - 1] == '\n')
            line[--len] = 0;
        const char *why = (size_t)len != strlen(line) ? "a NUL byte in the line"
                          : format == MT_TRACE_DIN    ? din_record(&r, line)
                                                      : lackey_record(&r, line);
        if (why) {
            mt_error_set(err, "%s:%llu: %s", path, (unsigned long long)lineno, why);
            rc = -1;
        }
    }
    if (rc == 0 && ferror(fp)) {
        mt_error_set(err, "%s: read error", path);
        rc = -1;
    }
    if (rc == 0 && !counts->records) {
        mt_error_set(err, "%s: no %s record in the trace", path,
                     format == MT_TRACE_DIN ? "din" : "lackey");
        rc = -1;
    }
    free(line);
    fclose(fp);
    return rc;
}

/* ---- records of a tracing copy ---- */

/* Operands waiting for the rest of their instruction's records, per thread
 * (a small open-addressed table: a thread's slot is found by its id; when
 * every slot is taken, the oldest thread's pending operands are
 * overwritten, at worst one instruction mis-expanded): rep operands wait
 * for their count, a gather's base for its mask and indices. */
#define PENDING_THREADS 256
typedef struct {
    uint64_t base, mask;
    uint64_t index[8];             /* the index vector, 8 bytes a record */
    uint32_t code;
    uint16_t size;                 /* bytes per element */
    uint8_t kind;                  /* MT_TRACE_GATHER or MT_TRACE_SCATTER; 0: none pending */
    uint8_t elements, index_width, scale, words, words_left;
} vector_pending;
typedef struct {
    int32_t tid;
    bool used;
    uint32_t size;                /* bytes per element */
    uint64_t source, dest;
    uint32_t source_data, dest_data; /* their data objects */
    vector_pending vector;
    uint64_t policy_nodes;        /* of the SET_POLICY or MBIND to come */
    uint64_t bind_length;         /* of the MBIND to come */
    uint32_t bind_flags;
    bool interrupted;             /* another thread's records came since its frame's STAMP */
} rep_pending;

struct mt_trace_feed {
    mt_sim *sim;
    mt_trace_data_of data_of;
    void *data_ctx;
    mt_trace_feed_counts counts;
    int32_t last_tid;              /* the thread of the records fed last */
    rep_pending pending[PENDING_THREADS];
};

mt_trace_feed *mt_trace_feed_new(mt_sim *s)
{
    mt_trace_feed *f = mt_xcalloc(1, sizeof *f);
    f->sim = s;
    return f;
}

void mt_trace_feed_free(mt_trace_feed *f) { free(f); }

void mt_trace_feed_set_data(mt_trace_feed *f, mt_trace_data_of data_of, void *ctx)
{
    f->data_of = data_of;
    f->data_ctx = ctx;
}

const mt_trace_feed_counts *mt_trace_feed_counts_of(const mt_trace_feed *f) { return &f->counts; }

static rep_pending *pending_of(mt_trace_feed *f, int32_t tid)
{
    uint32_t h = (uint32_t)tid * 2654435761u % PENDING_THREADS;
    for (uint32_t k = 0; k < PENDING_THREADS; k++) {
        rep_pending *p = &f->pending[(h + k) % PENDING_THREADS];
        if (!p->used || p->tid == tid) {
            p->used = true;
            p->tid = tid;
            return p;
        }
    }
    return &f->pending[h];
}

/* A rep instruction's elements: `which` says whether source (1) and
 * destination (2) were recorded before the count. */
static void expand_rep(mt_trace_feed *f, const rep_pending *p, const mt_trace_record *r)
{
    uint32_t size = p->size ? p->size : 1;
    bool source = r->size & 1, dest = r->size & 2;
    for (uint64_t i = 0; i < r->addr; i++) {
        if (source)
            sim_access(f->sim, p->source + i * size, size, MT_SIM_READ, r->code,
                          p->source_data, 0);
        if (dest)
            sim_access(f->sim, p->dest + i * size, size, MT_SIM_WRITE, r->code,
                          p->dest_data, 0);
    }
    f->counts.rep_elements += r->addr;
    f->counts.reads += source ? r->addr : 0;
    f->counts.writes += dest ? r->addr : 0;
}

/* The data object of one element of a gather or scatter (data_of takes
 * it as a reference of its own). */
static uint32_t element_data(mt_trace_feed *f, int32_t tid, uint64_t addr, const vector_pending *v)
{
    if (!f->data_of)
        return 0;
    mt_trace_record e = {.addr = addr, .code = v->code, .size = (uint16_t)v->size,
                         .kind = v->kind == MT_TRACE_SCATTER ? MT_TRACE_WRITE : MT_TRACE_READ};
    return f->data_of(f->data_ctx, tid, &e);
}

/* A gather's or scatter's elements, in element order (Valgrind's), those
 * whose mask bit is set: base + sign-extended index x scale. */
static void expand_vector(mt_trace_feed *f, int32_t tid, const vector_pending *v)
{
    const uint8_t *bytes = (const uint8_t *)v->index;
    bool write = v->kind == MT_TRACE_SCATTER;
    for (unsigned e = 0; e < v->elements; e++) {
        if (!(v->mask >> e & 1))
            continue;
        int64_t index;
        if (v->index_width == 4) {
            int32_t i32;
            memcpy(&i32, bytes + 4 * e, sizeof i32);
            index = i32;
        } else {
            memcpy(&index, bytes + 8 * e, sizeof index);
        }
        uint64_t addr = v->base + (uint64_t)index * v->scale;
        sim_access(f->sim, addr, v->size, write ? MT_SIM_WRITE : MT_SIM_READ, v->code,
                      element_data(f, tid, addr, v), 0);
        f->counts.vector_elements++;
        *(write ? &f->counts.writes : &f->counts.reads) += 1;
    }
}

/* One record of a gather's group; a record out of its place (its
 * predecessors lost to a damaged frame) is counted as damaged. */
static void feed_vector_record(mt_trace_feed *f, int32_t tid, vector_pending *v,
                               const mt_trace_record *r)
{
    switch (r->kind) {
    case MT_TRACE_GATHER:
    case MT_TRACE_SCATTER:
        *v = (vector_pending){.base = r->addr, .code = r->code, .size = r->size, .kind = r->kind};
        return;
    case MT_TRACE_VECTOR_MASK: {
        unsigned elements = r->size & 0xff, width = r->size >> 8 & 15, scale = r->size >> 12;
        if (!v->kind || v->words || !elements || elements > 16 || (width != 4 && width != 8) ||
            !scale || (scale & (scale - 1)) || elements * width > sizeof v->index) {
            f->counts.damaged++;
            v->kind = 0;
            return;
        }
        v->mask = r->addr;
        v->elements = (uint8_t)elements;
        v->index_width = (uint8_t)width;
        v->scale = (uint8_t)scale;
        v->words_left = (uint8_t)((elements * width + 7) / 8);
        return;
    }
    default: /* MT_TRACE_VECTOR_INDEX */
        if (!v->kind || !v->words_left) {
            f->counts.damaged++;
            return;
        }
        v->index[v->words++] = r->addr;
        if (--v->words_left == 0) {
            expand_vector(f, tid, v);
            v->kind = 0;
        }
    }
}

/* The program's placement events (timer.h), the others (the heap's, the
 * stamps) left to data_of and the merge. */
static void feed_placement(mt_trace_feed *f, rep_pending *p, const mt_trace_record *r)
{
    switch (r->kind) {
    case MT_TRACE_POLICY_NODES:
        p->policy_nodes = r->addr;
        break;
    case MT_TRACE_SET_POLICY:
        mt_sim_set_policy(f->sim, r->code, p->policy_nodes);
        break;
    case MT_TRACE_MBIND_LENGTH:
        p->bind_length = r->addr;
        p->bind_flags = r->code;
        break;
    case MT_TRACE_MBIND:
        mt_sim_bind(f->sim, r->addr, p->bind_length, r->code, p->policy_nodes, p->bind_flags);
        break;
    case MT_TRACE_MOVE_PAGE:
        mt_sim_move_page(f->sim, r->addr, r->code);
        break;
    case MT_TRACE_THREAD_PARENT:
        mt_sim_inherit_policy(f->sim, (int32_t)r->addr);
        break;
    default:
        break;
    }
}

/* A HITS record (timer.h's filter). */
static void feed_hits(mt_trace_feed *f, const rep_pending *p, const mt_trace_record *r)
{
    const uint64_t bits = MT_TRACE_HITS_BITS, mask = (1ull << bits) - 1;
    uint64_t reads = r->addr & mask, writes = r->addr >> bits & mask,
             modifies = r->addr >> 2 * bits & mask, refs = reads + writes + modifies;
    if (r->size || r->addr >> 3 * bits || !refs || !f->sim->fast || f->data_of ||
        !sim_fast_hits(f->sim->fast, r->code, reads, writes, modifies)) {
        f->counts.records++;
        f->counts.damaged++;
        return;
    }
    f->counts.records += refs;
    f->counts.reads += reads + modifies;
    f->counts.writes += writes + modifies;
    f->counts.modifies += modifies;
    f->counts.hits += refs;
    if (p->interrupted)
        f->counts.hits_interleaved += refs;
}

void mt_trace_feed_records(mt_trace_feed *f, int32_t tid, const mt_trace_record *r, uint32_t n)
{
    mt_sim_set_tid(f->sim, tid); /* the frame's thread: its simulated CPU */
    /* A run of a frame (the merge's: never two frames) starts it, at its
     * STAMP, or goes on with it, interrupted if another thread's came
     * between. */
    rep_pending *thread = pending_of(f, tid);
    if (n && r->kind == MT_TRACE_STAMP)
        thread->interrupted = false;
    else if (n && f->last_tid != tid)
        thread->interrupted = true;
    f->last_tid = tid;
    /* Misses only, no data objects: runs of plain references go to the
     * misses-only simulator in a batch (fast.c, sim_fast_records), the
     * other records one by one below. */
    bool batch = (f->sim->fast || f->sim->fast_mp) && !f->data_of;
    for (uint32_t i = 0; i < n; i++, r++) {
        if (batch) {
            uint32_t k = f->sim->fast ? sim_fast_records(f->sim->fast, r, n - i, &f->counts)
                                      : sim_fast_mp_records(f->sim->fast_mp, r, n - i, &f->counts);
            i += k;
            r += k;
            if (i == n)
                break;
        }
        if (r->kind == MT_TRACE_HITS) {
            feed_hits(f, thread, r);
            continue;
        }
        f->counts.records++;
        bool event = r->kind >= MT_TRACE_LOAD_BIAS;
        if (r->kind >= MT_TRACE_KINDS || (!event && r->size == 0)) {
            f->counts.damaged++;
            continue;
        }
        uint32_t data = f->data_of ? f->data_of(f->data_ctx, tid, r) : 0;
        switch (r->kind) {
        case MT_TRACE_READ:
        case MT_TRACE_MODIFY:
            f->counts.reads++;
            sim_access(f->sim, r->addr, r->size, MT_SIM_READ, r->code, data, 0);
            if (r->kind == MT_TRACE_READ)
                break;
            f->counts.modifies++;
            __attribute__((fallthrough)); /* the write of a modify */
        case MT_TRACE_WRITE:
            f->counts.writes++;
            sim_access(f->sim, r->addr, r->size, MT_SIM_WRITE, r->code, data, 0);
            break;
        case MT_TRACE_REP_SOURCE:
        case MT_TRACE_REP_DEST: {
            bool source = r->kind == MT_TRACE_REP_SOURCE;
            *(source ? &thread->source : &thread->dest) = r->addr;
            *(source ? &thread->source_data : &thread->dest_data) = data;
            thread->size = r->size;
            break;
        }
        case MT_TRACE_REP_COUNT:
            expand_rep(f, thread, r);
            break;
        default:
            if (event) {
                f->counts.events++;
                feed_placement(f, thread, r);
            } else {
                feed_vector_record(f, tid, &thread->vector, r);
            }
        }
    }
}

/* ---- the threads' frames merged (sim.h, "the merge") ---- */

typedef struct {
    mt_trace_record *records;
    uint32_t n, next;
    uint64_t start, ticks;     /* its STAMP's: TSC, ticks to its sending (0: not sent) */
    uint64_t seq;              /* its arrival */
} held_frame;

typedef struct {
    int32_t tid;
    held_frame *frames;        /* [head, n): in arrival order, hence in time */
    size_t head, n, cap;
    uint64_t fast_ticks;       /* its fastest frame yet: ticks over records */
    uint32_t fast_records;
} merge_thread;

struct mt_trace_merge {
    mt_trace_order order;
    uint32_t window;
    mt_trace_sink sink;
    void *ctx;
    merge_thread *threads;
    size_t nthreads, cap_threads;
    size_t held, held_records;
    uint64_t seq, last_time;   /* the time of the last record out */
};

int mt_trace_order_of(const char *name, mt_trace_order *o)
{
    static const char *const names[] = {"stamps", "frames", "arrival"};
    for (size_t k = 0; k < MT_ARRAY_LEN(names); k++)
        if (!strcmp(name, names[k])) {
            *o = (mt_trace_order)k;
            return 0;
        }
    return -1;
}

mt_trace_merge *mt_trace_merge_new(mt_trace_order order, uint32_t window, mt_trace_sink sink,
                                   void *ctx)
{
    mt_trace_merge *m = mt_xcalloc(1, sizeof *m);
    *m = (mt_trace_merge){.order = order, .window = window, .sink = sink, .ctx = ctx};
    return m;
}

static merge_thread *thread_of(mt_trace_merge *m, int32_t tid)
{
    for (size_t k = 0; k < m->nthreads; k++) /* a handful of threads */
        if (m->threads[k].tid == tid)
            return &m->threads[k];
    merge_thread t = {.tid = tid};
    MT_PUSH(m->threads, m->nthreads, m->cap_threads, t);
    return &m->threads[m->nthreads - 1];
}

/* The time of record i of thread t's frame f: its STAMP's, plus its
 * share of the frame's ticks, at most at the thread's fastest pace (by
 * frames: the STAMP's for all).  A frame that took longer than that pace
 * had its thread descheduled somewhere in it: spread over the gap, its
 * records would interleave with what the other threads did meanwhile,
 * which they did not (docs/SIMULATOR.md, "Threads").  The pace is the
 * fastest of the thread's frames held or gone: a thread's first frame
 * (slowed by its start) takes the pace of those after it. */
static uint64_t record_time(const mt_trace_merge *m, const merge_thread *t, const held_frame *f,
                            uint32_t i)
{
    if (m->order == MT_TRACE_BY_FRAMES || f->n <= 1)
        return f->start;
    uint64_t span = f->ticks;
    if (t->fast_records) {
        uint64_t paced = t->fast_ticks * f->n / t->fast_records;
        span = span && span < paced ? span : paced;
    }
    return f->start + span * i / (f->n - 1);
}

/* A frame's STAMP, and its thread's pace, from frames of PACE_RECORDS or
 * more (the few records of a frame sent early, the first one's load bias,
 * a free's, say nothing of the pace: the time went to the runtime); a
 * frame without a STAMP (damaged) at once, after the last record out. */
#define PACE_RECORDS 64
static void frame_times(mt_trace_merge *m, merge_thread *t, held_frame *f)
{
    const mt_trace_record *stamp = f->records;
    if (!f->n || stamp->kind != MT_TRACE_STAMP) {
        f->start = m->last_time;
        return;
    }
    f->start = stamp->addr;
    f->ticks = stamp->code | (uint64_t)stamp->size << 32;
    if (f->ticks && f->n >= PACE_RECORDS && (!t->fast_records ||
                     f->ticks * t->fast_records < t->fast_ticks * (uint64_t)f->n)) {
        t->fast_ticks = f->ticks;
        t->fast_records = f->n;
    }
}

/* Whether record i of thread t's frame f comes before thread u's next
 * record (u NULL: no other thread holds one): before it in time, or at the
 * same time from a frame that arrived first. */
static bool before_next(const mt_trace_merge *m, const merge_thread *t, const held_frame *f,
                        uint32_t i, const merge_thread *u)
{
    if (!u)
        return true;
    const held_frame *g = &u->frames[u->head];
    uint64_t ti = record_time(m, t, f, i), until = record_time(m, u, g, g->next);
    return ti < until || (ti == until && f->seq < g->seq);
}

/* Whether thread a's next record comes before thread b's. */
static bool earlier(const mt_trace_merge *m, const merge_thread *a, const merge_thread *b)
{
    const held_frame *fa = &a->frames[a->head];
    return before_next(m, a, fa, fa->next, b);
}

/* Out: the run of the earliest thread's records up to the next thread's
 * next one.  A frame's record times never decrease (record_time is linear
 * in the index), so where the run ends is found by bisection, not record
 * by record: callgrind, `mtool sim --misses-only --cachegrind --
 * phases-gcc-O2 400` (one thread, 5.06 M records), emit_run 172.5 -> 0.3
 * million instructions (34 a record: a division per record_time). */
static void emit_run(mt_trace_merge *m)
{
    merge_thread *first = NULL, *second = NULL;
    for (size_t k = 0; k < m->nthreads; k++) {
        merge_thread *t = &m->threads[k];
        if (t->head == t->n)
            continue;
        if (!first || earlier(m, t, first)) {
            second = first;
            first = t;
        } else if (!second || earlier(m, t, second)) {
            second = t;
        }
    }
    held_frame *f = &first->frames[first->head];
    uint32_t from = f->next, lo = from + 1, hi = f->n; /* the run ends in [lo, hi] */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (before_next(m, first, f, mid, second))
            lo = mid + 1;
        else
            hi = mid;
    }
    f->next = lo;
    m->last_time = record_time(m, first, f, lo - 1);
    m->sink(m->ctx, first->tid, f->records + from, f->next - from);
    if (f->next < f->n)
        return;
    free(f->records);
    m->held--;
    m->held_records -= f->n;
    if (++first->head == first->n)
        first->head = first->n = 0;
}

void mt_trace_merge_frame(mt_trace_merge *m, int32_t tid, const mt_trace_record *r, uint32_t n)
{
    if (m->order == MT_TRACE_BY_ARRIVAL) {
        m->sink(m->ctx, tid, r, n);
        return;
    }
    if (!n)
        return;
    mt_trace_record *copy = mt_xmalloc(n * sizeof *r);
    memcpy(copy, r, n * sizeof *r);
    mt_trace_merge_take(m, tid, copy, n);
}

void mt_trace_merge_take(mt_trace_merge *m, int32_t tid, mt_trace_record *r, uint32_t n)
{
    if (m->order == MT_TRACE_BY_ARRIVAL || !n) {
        mt_trace_merge_frame(m, tid, r, n);
        free(r);
        return;
    }
    merge_thread *t = thread_of(m, tid);
    held_frame f = {.records = r, .n = n, .seq = m->seq++};
    frame_times(m, t, &f);
    if (t->head && t->n == t->cap) { /* the frames gone make room: a busy thread's
                                        queue never empties */
        memmove(t->frames, t->frames + t->head, (t->n - t->head) * sizeof *t->frames);
        t->n -= t->head;
        t->head = 0;
    }
    MT_PUSH(t->frames, t->n, t->cap, f);
    size_t held = ++m->held;
    m->held_records += n;
    while (m->held_records > m->window && m->held == held)
        emit_run(m);
}

/* Whether a frame of thread tid's can go out as it comes, held by
 * nothing: no other thread has sent one yet, and it is a lone thread's
 * (longer than a frame of several threads': timer.h).  A thread or
 * process started later records after the frame its creator sent before
 * starting it (the runtime's wrappers), and its creator's frames are short
 * from then on. */
static bool lone_frame(const mt_trace_merge *m, int32_t tid, uint32_t n)
{
    return m->order != MT_TRACE_BY_ARRIVAL && n > MT_TRACE_SHARED_RECORDS &&
           (!m->nthreads || (m->nthreads == 1 && m->threads[0].tid == tid));
}

void mt_trace_merge_lend(mt_trace_merge *m, int32_t tid, const mt_trace_record *r, uint32_t n)
{
    if (!lone_frame(m, tid, n)) {
        mt_trace_merge_frame(m, tid, r, n);
        return;
    }
    mt_trace_merge_drain(m); /* the thread's earlier frames, in order */
    merge_thread *t = thread_of(m, tid);
    held_frame f = {.records = (mt_trace_record *)r, .n = n, .seq = m->seq++};
    frame_times(m, t, &f);
    m->last_time = record_time(m, t, &f, n - 1);
    m->sink(m->ctx, tid, r, n);
}

void mt_trace_merge_drain(mt_trace_merge *m)
{
    while (m->held)
        emit_run(m);
}

void mt_trace_merge_free(mt_trace_merge *m)
{
    if (!m)
        return;
    for (size_t k = 0; k < m->nthreads; k++) {
        for (size_t i = m->threads[k].head; i < m->threads[k].n; i++)
            free(m->threads[k].frames[i].records);
        free(m->threads[k].frames);
    }
    free(m->threads);
    free(m);
}
