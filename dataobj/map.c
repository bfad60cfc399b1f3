/* dataobj/map.c — the data object of every reference of a traced run
 * (dataobj.h), kept up to date by the run's events: the load bias, where
 * each traced library lies (its base, its TLS block in each thread), the
 * allocator's blocks, and each thread's shadow call stack, built from the
 * return addresses calls push and rets pop (timer.h, MT_TRACE_F_CALL and
 * MT_TRACE_F_RET).
 *
 * Conventions: a code object belongs to a module, the executable (module
 * 0: ids up to its last, mt_code_object_split's) or a shared library
 * traced with it (ids code_base + its own); a procedure is (module, index
 * in that module's analysis), index nprocs of the executable standing for
 * no known procedure.  Call sites are link-time addresses of their module:
 * the executable's CALL_SITE records are run-time (minus the load bias), a
 * library copy's are link-time already (rewriter/trace.c). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Callers named in a heap object's call path, after the site's procedure. */
#define PATH_DEPTH 3
/* Shadow stack entries kept per thread (deeper recursion is not pushed:
 * the entries are found by address, so the frames above stay right). */
#define MAX_SHADOW 65536

/* A call in progress: the return address's slot on the stack, the code
 * object that called (its procedure owns the frame above the slot), and
 * for a call of an allocator its link-time address (else 0). */
typedef struct {
    uint64_t slot, pc;
    uint32_t code;
} shadow_entry;

typedef struct {
    int32_t tid;
    shadow_entry *calls;       /* outermost first: slots decrease */
    size_t ncalls, cap;
    uint64_t stack_lo, stack_hi; /* addresses of flagged stack references seen */
    uint64_t tls_lo, tls_len;  /* its TLS block and TCB (TLS_BASE), tls_len 0 unknown */
    uint64_t *library_tls;     /* per module, its TLS block's start in this thread
                                  (LIBRARY_TLS; 0 unknown), NULL: none known */
    uint64_t library_tls_lo, library_tls_span; /* [lo, lo + span) holds them all */
    uint64_t site;             /* CALL_SITE's link-time address, for the call that follows */
    uint64_t alloc_size;       /* of the ALLOC to come */
} thread_state;

typedef struct {
    char *key;
    uint32_t id;
} site_slot;

/* A module's variables: its globals and statics at link-time addresses,
 * its TLS variables at offsets into its TLS block. */
typedef struct {
    dataobj_statics statics, tls_vars;
    size_t last_static, last_tls; /* the variables of the last lookups */
    uint64_t lo, span;         /* [lo, lo + span): the statics' link-time addresses */
    uint64_t tls_size;         /* its PT_TLS block, rounded up to its alignment */
} module_data;

/* The executable or a library traced with it (conventions above). */
typedef struct {
    const mt_program *prog;
    char *name;                /* a library's (program-derived), NULL: the executable */
    uint32_t code_base, ncodes; /* a library's objects: (code_base, code_base + ncodes) */
    uint32_t *stack_ids;       /* per procedure, then one for none; 0 = not made yet */
    /* A library's own data (the executable's is the map's exe): */
    module_data data;
    uint32_t id;               /* its copy's counter_base, which LIBRARY_* events name */
    bool placed;               /* LIBRARY_BASE seen: `base` holds */
    uint64_t base;             /* run-time minus link-time addresses */
} code_module;

/* A procedure of a module. */
typedef struct {
    uint32_t module, proc;
} proc_ref;

struct mt_data_map {
    const mt_program *prog;
    code_module *modules;      /* [0]: the executable's */
    size_t nmodules, cap_modules;
    module_data exe;           /* the executable's variables */
    dataobj_heap *heap;
    uint64_t bias;             /* run-time minus link-time addresses (LOAD_BIAS) */
    mt_data_object *objs;
    size_t nobjs, cap_objs;
    thread_state *threads;
    size_t nthreads, cap_threads, last_thread; /* threads[last_thread]: the last record's */
    site_slot *sites;          /* open addressing, a power of two, at most half full */
    size_t nsites, cap_sites;
    uint32_t tls_id;
    uint64_t tls_below;        /* the executable's TLS block: bytes below the thread pointer */
};

/* The TCB above the thread pointer that %fs operands read (its self
 * pointer, the stack protector's canary at 0x28...): glibc's tcbhead_t
 * up to the canary's cache line. */
#define TCB_BYTES 64

const char *mt_data_kind_name(mt_data_kind k)
{
    static const char *const names[] = {"other", "global", "field", "heap", "stack", "tls"};
    return k <= MT_DATA_TLS ? names[k] : "?";
}

static uint32_t add_object(mt_data_map *m, mt_data_object o)
{
    MT_PUSH(m->objs, m->nobjs, m->cap_objs, o);
    return (uint32_t)(m->nobjs - 1);
}

/* Ids for every variable and field of `vars`, in address order: kind
 * `kind` (global or tls), their fields MT_DATA_FIELD. */
static void number_statics(mt_data_map *m, dataobj_statics *vars, mt_data_kind kind)
{
    for (size_t i = 0; i < vars->n; i++) {
        dataobj_static *v = &vars->v[i];
        mt_data_object o = {.name = mt_xstrdup(v->name), .kind = kind,
                            .type = v->type ? mt_xstrdup(v->type) : NULL, .start = v->start,
                            .size = v->size};
        v->id = add_object(m, o);
        for (uint32_t k = 0; k < v->nfields; k++) {
            o.name = mt_xstrdup(v->fields[k].name);
            o.kind = MT_DATA_FIELD;
            o.type = v->type ? mt_xstrdup(v->type) : NULL;
            v->fields[k].id = add_object(m, o);
        }
    }
}

static code_module *add_module(mt_data_map *m, const mt_program *prog, const char *name,
                               uint32_t code_base)
{
    code_module c = {.prog = prog, .name = name ? mt_xstrdup(name) : NULL,
                     .code_base = code_base,
                     .ncodes = mt_code_object_loops(prog, prog->nprocs),
                     .stack_ids = mt_xcalloc((size_t)prog->nprocs + 1, sizeof *c.stack_ids)};
    MT_PUSH(m->modules, m->nmodules, m->cap_modules, c);
    return &m->modules[m->nmodules - 1];
}

/* The variables of the module in `path` (its DWARF and symbol tables; a
 * DWARF libdwarf cannot read gives one warning on `log` and the symbols
 * only), named "PREFIX:NAME" with a prefix; -1 with err when the file
 * cannot be opened. */
static int read_module_data(const char *path, const char *prefix, module_data *d, FILE *log,
                            mt_error *err)
{
    mt_elf_file img;
    if (mt_elf_file_open(&img, path, err) != 0)
        return -1;
    if (!dataobj_read_dwarf(&img, &d->statics) && log) {
        char shown[1024];
        mt_escape_text(shown, sizeof shown, path);
        fprintf(log, "mtool: warning: %s: DWARF could not be read (libdwarf failed on it); "
                     "globals by symbol only, without fields\n", shown);
    }
    dataobj_read_symbols(&img, &d->statics);
    dataobj_read_tls_symbols(&img, &d->tls_vars);
    /* x86-64's TLS variant II: a block starts its rounded size below where
     * the next one (the executable's: the thread pointer) starts. */
    const Elf64_Phdr *tls = mt_elf_file_phdr(&img, PT_TLS);
    if (tls && tls->p_memsz < (1ull << 32)) {
        uint64_t align = tls->p_align > 1 && tls->p_align < (1ull << 32) ? tls->p_align : 1;
        d->tls_size = (tls->p_memsz + align - 1) / align * align;
    }
    mt_elf_file_close(&img);
    dataobj_statics_finish(&d->statics);
    dataobj_statics_finish(&d->tls_vars);
    if (prefix) {
        dataobj_statics_prefix(&d->statics, prefix);
        dataobj_statics_prefix(&d->tls_vars, prefix);
    }
    if (d->statics.n) {
        const dataobj_static *last = &d->statics.v[d->statics.n - 1];
        d->lo = d->statics.v[0].start;
        d->span = last->start + last->size - d->lo;
    }
    return 0;
}

static void module_data_free(module_data *d)
{
    dataobj_statics_free(&d->statics);
    dataobj_statics_free(&d->tls_vars);
}

mt_data_map *mt_data_map_new(const mt_program *prog, FILE *log, mt_error *err)
{
    module_data exe = {0};
    if (read_module_data(prog->path, NULL, &exe, log, err) != 0)
        return NULL;
    mt_data_map *m = mt_xcalloc(1, sizeof *m);
    m->prog = prog;
    m->exe = exe;
    m->tls_below = exe.tls_size;
    add_object(m, (mt_data_object){.name = mt_xstrdup("(other)"), .kind = MT_DATA_OTHER});
    number_statics(m, &m->exe.statics, MT_DATA_GLOBAL);
    number_statics(m, &m->exe.tls_vars, MT_DATA_TLS);
    m->heap = dataobj_heap_new();
    add_module(m, prog, NULL, 0);
    return m;
}

void mt_data_map_add_library(mt_data_map *m, const char *name, const mt_program *prog,
                             uint32_t code_base, uint32_t id, FILE *log)
{
    code_module *c = add_module(m, prog, name, code_base);
    c->id = id;
    mt_error err;
    if (read_module_data(prog->path, name, &c->data, log, &err) != 0) {
        if (log)
            fprintf(log, "mtool: warning: %s; its globals and TLS are \"other\"\n", err.msg);
        return;
    }
    number_statics(m, &c->data.statics, MT_DATA_GLOBAL);
    number_statics(m, &c->data.tls_vars, MT_DATA_TLS);
}

void mt_data_map_free(mt_data_map *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nobjs; i++) {
        free(m->objs[i].name);
        free(m->objs[i].type);
        free(m->objs[i].path);
    }
    free(m->objs);
    for (size_t i = 0; i < m->nthreads; i++) {
        free(m->threads[i].calls);
        free(m->threads[i].library_tls);
    }
    free(m->threads);
    for (size_t i = 0; i < m->cap_sites; i++)
        free(m->sites[i].key);
    free(m->sites);
    for (size_t i = 0; i < m->nmodules; i++) {
        free(m->modules[i].name);
        free(m->modules[i].stack_ids);
        module_data_free(&m->modules[i].data);
    }
    free(m->modules);
    dataobj_heap_free(m->heap);
    module_data_free(&m->exe);
    free(m);
}

uint32_t mt_data_map_count(const mt_data_map *m) { return (uint32_t)m->nobjs; }

const mt_data_object *mt_data_map_object(const mt_data_map *m, uint32_t id)
{
    return id < m->nobjs ? &m->objs[id] : NULL;
}

static thread_state *thread_of(mt_data_map *m, int32_t tid)
{
    for (size_t i = 0; i < m->nthreads; i++)
        if (m->threads[i].tid == tid) {
            m->last_thread = i;
            return &m->threads[i];
        }
    thread_state t = {.tid = tid, .stack_lo = UINT64_MAX};
    MT_PUSH(m->threads, m->nthreads, m->cap_threads, t);
    m->last_thread = m->nthreads - 1;
    return &m->threads[m->last_thread];
}

/* ---- globals ---- */

/* The variable (or field) of `s` holding `a`, 0 for none; *last: the
 * variable of the last lookup, tried first. */
static uint32_t variable_at(const dataobj_statics *s, size_t *last, uint64_t a)
{
    const dataobj_static *v = *last < s->n ? &s->v[*last] : NULL;
    if (!v || a - v->start >= v->size) {
        size_t i = mt_upper_bound_u64(s->v, s->n, sizeof *s->v, offsetof(dataobj_static, start), a);
        if (!i || a - s->v[i - 1].start >= s->v[i - 1].size)
            return 0;
        *last = i - 1;
        v = &s->v[i - 1];
    }
    if (!v->nfields)
        return v->id;
    uint64_t off = (a - v->start) % v->elem;
    size_t k = mt_upper_bound_u64(v->fields, v->nfields, sizeof *v->fields,
                                  offsetof(dataobj_field, off), off);
    return k && off - v->fields[k - 1].off < v->fields[k - 1].size ? v->fields[k - 1].id : v->id;
}

/* The variable or field of a placed library holding run-time address
 * `addr`, 0 for none. */
static uint32_t library_variable_at(mt_data_map *m, uint64_t addr)
{
    for (size_t i = 1; i < m->nmodules; i++) {
        code_module *c = &m->modules[i];
        if (c->placed && addr - c->base - c->data.lo < c->data.span)
            return variable_at(&c->data.statics, &c->data.last_static, addr - c->base);
    }
    return 0;
}

/* The traced library whose copy's counter_base is `id`, NULL for none. */
static code_module *library_named(mt_data_map *m, uint32_t id)
{
    for (size_t i = 1; i < m->nmodules; i++)
        if (m->modules[i].id == id)
            return &m->modules[i];
    return NULL;
}

/* ---- the stack ---- */

/* The module whose code objects hold `code`: the executable's first,
 * then the libraries' (few: a scan); 0 for none, as the executable's. */
static uint32_t module_of(const mt_data_map *m, uint32_t code, uint32_t *own)
{
    *own = code;
    if (code < m->modules[0].ncodes)
        return 0;
    for (size_t i = 1; i < m->nmodules; i++) {
        const code_module *c = &m->modules[i];
        if (code > c->code_base && code - c->code_base < c->ncodes) {
            *own = code - c->code_base;
            return (uint32_t)i;
        }
    }
    return 0;
}

static proc_ref procedure_of(const mt_data_map *m, uint32_t code)
{
    uint32_t own, p, l;
    uint32_t k = module_of(m, code, &own);
    const mt_program *prog = m->modules[k].prog;
    if (mt_code_object_split(prog, own, &p, &l))
        return (proc_ref){k, p};
    return (proc_ref){0, m->prog->nprocs};
}

/* "PROC", a library's "LIB:PROC", or "(unknown)" (malloc'd). */
static char *procedure_name(const mt_data_map *m, proc_ref r)
{
    const code_module *c = &m->modules[r.module];
    if (r.proc >= c->prog->nprocs)
        return mt_xstrdup("(unknown)");
    return c->name ? mt_xasprintf("%s:%s", c->name, c->prog->procs[r.proc].name)
                   : mt_xstrdup(c->prog->procs[r.proc].name);
}

static uint32_t stack_object(mt_data_map *m, proc_ref r)
{
    uint32_t *id = &m->modules[r.module].stack_ids[r.proc];
    if (!*id) {
        char *name = procedure_name(m, r);
        *id = add_object(m, (mt_data_object){.name = mt_xasprintf("stack:%s", name),
                                             .kind = MT_DATA_STACK});
        free(name);
    }
    return *id;
}

/* The frame holding `addr`: the caller of the outermost call whose return
 * slot is at or below it owns [slot, the slot of the call before); below
 * every slot, the running procedure (`code`'s) does. */
static uint32_t stack_at(mt_data_map *m, const thread_state *t, uint64_t addr, uint32_t code)
{
    size_t lo = 0, hi = t->ncalls; /* first entry with slot <= addr (slots decrease) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->calls[mid].slot <= addr)
            hi = mid;
        else
            lo = mid + 1;
    }
    return stack_object(m, procedure_of(m, lo < t->ncalls ? t->calls[lo].code : code));
}

/* Calls and rets: entries at or below the slot are over (a call's callee
 * returned without a traced ret: a library, longjmp). */
static void track_calls(thread_state *t, const mt_trace_record *r)
{
    while (t->ncalls && t->calls[t->ncalls - 1].slot <= r->addr)
        t->ncalls--;
    if ((r->flags & MT_TRACE_F_CALL) && t->ncalls < MAX_SHADOW) {
        shadow_entry e = {.slot = r->addr, .pc = t->site, .code = r->code};
        MT_PUSH(t->calls, t->ncalls, t->cap, e);
    }
    if (r->flags & MT_TRACE_F_CALL)
        t->site = 0;
}

/* ---- the heap ---- */

static const char *allocator_name(uint32_t wrap)
{
    switch (wrap) {
    case MT_RT_WRAP_NEW:
        return "new";
    case MT_RT_WRAP_NEW_ARRAY:
        return "new[]";
    default: {
        static const char *const names[] = {
#define MT_RT_WRAP_NAME(id, name) name,
            MT_RT_WRAPPERS(MT_RT_WRAP_NAME)
#undef MT_RT_WRAP_NAME
        };
        return wrap < MT_RT_WRAP_COUNT ? names[wrap] : "alloc";
    }
    }
}

/* "PROC:LINE" (the call's line), "PROC+0xOFF" or "PROC" for the call at
 * link-time address `pc` (of its module) in procedure `r` (pc 0: unknown);
 * PROC is a library's "LIB:PROC". */
static char *site_name(const mt_data_map *m, proc_ref r, uint64_t pc)
{
    const mt_program *prog = m->modules[r.module].prog;
    char *name = procedure_name(m, r), *site;
    if (r.proc >= prog->nprocs)
        return name;
    const mt_procedure *p = &prog->procs[r.proc];
    size_t c = pc ? mt_upper_bound_u64(p->calls, p->ncalls, sizeof *p->calls,
                                       offsetof(mt_call_site, addr), pc) : 0;
    uint32_t b = pc ? mt_block_at(p, pc) : MT_NONE; /* a call the analysis did not list */
    if (c && p->calls[c - 1].addr == pc && p->calls[c - 1].line)
        site = mt_xasprintf("%s:%u", name, p->calls[c - 1].line);
    else if (b != MT_NONE && p->blocks[b].line)
        site = mt_xasprintf("%s:%u", name, p->blocks[b].line);
    else if (pc)
        site = mt_xasprintf("%s+0x%llx", name, (unsigned long long)(pc - p->entry));
    else
        return name;
    free(name);
    return site;
}

/* The callers above the allocation's own call, innermost first. */
static char *call_path(const mt_data_map *m, const thread_state *t)
{
    char *path = mt_xstrdup("");
    for (size_t k = 1; k <= PATH_DEPTH && k < t->ncalls; k++) {
        proc_ref p = procedure_of(m, t->calls[t->ncalls - 1 - k].code);
        char *name = p.proc < m->modules[p.module].prog->nprocs ? procedure_name(m, p)
                                                                  : mt_xstrdup("?");
        char *longer = mt_xasprintf("%s%s%s", path, k > 1 ? " <- " : "", name);
        free(name);
        free(path);
        path = longer;
    }
    return path;
}

static uint64_t hash_key(const char *s)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static void grow_sites(mt_data_map *m)
{
    size_t cap = m->cap_sites ? m->cap_sites * 2 : 64;
    site_slot *old = m->sites, *fresh = mt_xcalloc(cap, sizeof *fresh);
    for (size_t i = 0; i < m->cap_sites; i++)
        if (old[i].key) {
            size_t k = hash_key(old[i].key) & (cap - 1);
            while (fresh[k].key)
                k = (k + 1) & (cap - 1);
            fresh[k] = old[i];
        }
    free(old);
    m->sites = fresh;
    m->cap_sites = cap;
}

/* The object of an allocation by `wrap` at the thread's innermost call
 * (the allocator's, when the program called it) and call path, made on
 * its first block. */
static uint32_t heap_object(mt_data_map *m, const thread_state *t, uint32_t wrap)
{
    const shadow_entry *top = t->ncalls ? &t->calls[t->ncalls - 1] : NULL;
    proc_ref proc = top ? procedure_of(m, top->code) : (proc_ref){0, m->prog->nprocs};
    uint64_t pc = top ? top->pc : 0;
    char *path = call_path(m, t);
    char *key = mt_xasprintf("%u|%llx|%u|%u|%s", wrap, (unsigned long long)pc, proc.module,
                             proc.proc, path);
    if (2 * (m->nsites + 1) > m->cap_sites)
        grow_sites(m);
    size_t k = hash_key(key) & (m->cap_sites - 1);
    while (m->sites[k].key && strcmp(m->sites[k].key, key))
        k = (k + 1) & (m->cap_sites - 1);
    if (m->sites[k].key) {
        free(key);
        free(path);
        return m->sites[k].id;
    }
    char *site = site_name(m, proc, pc);
    mt_data_object o = {.name = mt_xasprintf("%s@%s", allocator_name(wrap), site),
                        .kind = MT_DATA_HEAP, .path = path};
    free(site);
    m->sites[k] = (site_slot){key, add_object(m, o)};
    m->nsites++;
    return m->sites[k].id;
}

static void allocated(mt_data_map *m, thread_state *t, const mt_trace_record *r)
{
    uint32_t id = heap_object(m, t, r->code);
    mt_data_object *o = &m->objs[id];
    o->blocks++;
    if (t->alloc_size > o->size)
        o->size = t->alloc_size;
    dataobj_heap_insert(m->heap, r->addr, t->alloc_size ? t->alloc_size : 1, id);
    t->alloc_size = 0;
}

/* ---- records ---- */

/* The TLS variable of a traced library at `addr`, in a block the thread
 * was told of (LIBRARY_TLS); 0 for none. */
static uint32_t library_tls_at(mt_data_map *m, const thread_state *t, uint64_t addr)
{
    for (size_t i = 1; t->library_tls && i < m->nmodules; i++) {
        module_data *d = &m->modules[i].data;
        uint64_t block = t->library_tls[i];
        if (block && addr - block < d->tls_size)
            return variable_at(&d->tls_vars, &d->last_tls, addr - block);
    }
    return 0;
}

/* A TLS reference: the executable's variable at that offset of the
 * thread's block when the block is known (TLS_BASE), or a traced
 * library's, else "(tls)" (another module's TLS, the TCB, or the main
 * thread of a static program). */
static uint32_t tls_object(mt_data_map *m, const thread_state *t, uint64_t addr)
{
    uint32_t id = t->tls_len ? variable_at(&m->exe.tls_vars, &m->exe.last_tls, addr - t->tls_lo)
                             : 0;
    if (!id)
        id = library_tls_at(m, t, addr);
    if (id)
        return id;
    if (!m->tls_id)
        m->tls_id = add_object(m, (mt_data_object){.name = mt_xstrdup("(tls)"),
                                                    .kind = MT_DATA_TLS});
    return m->tls_id;
}

static uint32_t reference(mt_data_map *m, thread_state *t, const mt_trace_record *r)
{
    if (r->flags & (MT_TRACE_F_CALL | MT_TRACE_F_RET))
        track_calls(t, r);
    if ((r->flags & MT_TRACE_F_TLS) || r->addr - t->tls_lo < t->tls_len)
        return tls_object(m, t, r->addr);
    if (r->flags & MT_TRACE_F_STACK) {
        t->stack_lo = r->addr < t->stack_lo ? r->addr : t->stack_lo;
        t->stack_hi = r->addr > t->stack_hi ? r->addr : t->stack_hi;
        return stack_at(m, t, r->addr, r->code);
    }
    /* A library's block reached without %fs (a TLS descriptor's answer
     * added to the thread pointer, or a block ld.so allocated) before the
     * heap: another thread's static TLS lies in the mapping glibc made for
     * its stack, a heap object of its own (mmap@...:pthread_create) when
     * libc is traced, and a dynamic block in a malloc'd one. */
    uint32_t id =
        r->addr - t->library_tls_lo < t->library_tls_span ? library_tls_at(m, t, r->addr) : 0;
    if (!id)
        id = dataobj_heap_find(m->heap, r->addr);
    if (!id)
        id = variable_at(&m->exe.statics, &m->exe.last_static, r->addr - m->bias);
    if (!id && m->nmodules > 1)
        id = library_variable_at(m, r->addr);
    if (!id && r->addr >= t->stack_lo && r->addr <= t->stack_hi)
        id = stack_at(m, t, r->addr, r->code);
    return id;
}

/* LIBRARY_BASE: where a traced library's statics lie. */
static void place_library(mt_data_map *m, const mt_trace_record *r)
{
    code_module *c = library_named(m, r->code);
    if (c) {
        c->base = r->addr;
        c->placed = true;
    }
}

/* LIBRARY_TLS: where a traced library's TLS block lies in this thread. */
static void place_library_tls(mt_data_map *m, thread_state *t, const mt_trace_record *r)
{
    code_module *c = library_named(m, r->code);
    if (!c || !c->data.tls_vars.n)
        return;
    if (!t->library_tls)
        t->library_tls = mt_xcalloc(m->nmodules, sizeof *t->library_tls);
    t->library_tls[c - m->modules] = r->addr;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 1; i < m->nmodules; i++)
        if (t->library_tls[i]) {
            lo = t->library_tls[i] < lo ? t->library_tls[i] : lo;
            uint64_t end = t->library_tls[i] + m->modules[i].data.tls_size;
            hi = end > hi ? end : hi;
        }
    t->library_tls_lo = lo;
    t->library_tls_span = hi - lo;
}

/* Events and rep counts: no data object of their own. */
static __attribute__((noinline)) void event(mt_data_map *m, thread_state *t,
                                            const mt_trace_record *r)
{
    switch (r->kind) {
    case MT_TRACE_LOAD_BIAS:
        m->bias = r->addr;
        return;
    case MT_TRACE_TLS_BASE:
        t->tls_lo = r->addr - m->tls_below;
        t->tls_len = m->tls_below + TCB_BYTES;
        return;
    case MT_TRACE_LIBRARY_BASE:
        place_library(m, r);
        return;
    case MT_TRACE_LIBRARY_TLS:
        place_library_tls(m, t, r);
        return;
    case MT_TRACE_CALL_SITE: { /* a library's is link-time already */
        uint32_t own;
        t->site = module_of(m, r->code, &own) ? r->addr : r->addr - m->bias;
        return;
    }
    case MT_TRACE_ALLOC_SIZE:
        t->alloc_size = r->addr;
        return;
    case MT_TRACE_ALLOC:
        allocated(m, t, r);
        return;
    case MT_TRACE_FREE:
        dataobj_heap_remove(m->heap, r->addr);
        return;
    default: /* REP_COUNT, a gather's group: the feed expands them */
        return;
    }
}

uint32_t mt_data_map_observe(mt_data_map *m, int32_t tid, const mt_trace_record *r)
{
    thread_state *t = m->nthreads && m->threads[m->last_thread].tid == tid
                          ? &m->threads[m->last_thread]
                          : thread_of(m, tid);
    if (r->kind <= MT_TRACE_REP_DEST)
        return reference(m, t, r);
    event(m, t, r);
    return 0;
}
