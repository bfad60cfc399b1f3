/* rewriter/rewrite.c — the driver: choose procedures, relocate them, lay
 * out the output file and write it atomically.
 *
 * Output layout (everything original stays at its offset and address):
 *
 *   [original file, unchanged]
 *   [RX segment: relocated code | runtime text]      new PT_LOAD, R+X
 *   [RW segment: runtime data and bss]               new PT_LOAD, R+W
 *   [R  segment: program headers | entry jumps | unwind info]  new PT_LOAD, R
 *   [counter map + trailer]                          not loaded
 *
 * The entry jumps into the copies are written by the runtime at start-up
 * (timer.h, mt_rt_patch), not into the file.
 *
 * The program-header table moves into the R segment so any number of
 * headers fit (the kernel finds AT_PHDR through the PT_LOAD that maps
 * e_phoff).  PT_PHDR and PT_GNU_EH_FRAME are pointed at the new copies. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/progress.h"
#include "internal.h"
#include "rewriter.h"

#define PAGE 4096u
#define MAP_MAGIC 0x3150414d4c4f544dull  /* "MTOOLMAP1" trailer: counters */
#define MAP2_MAGIC 0x3250414d4c4f544dull /* "MTOOLMAP2" trailer: counters, then timers */
#define MAP3_MAGIC 0x3350414d4c4f544dull /* "MTOOLMAP3" trailer: ... then call sites */
#define MAP4_MAGIC 0x3450414d4c4f544dull /* "MTOOLMAP4" trailer: ... then flow equations */
#define NEW_LOADS 3

typedef struct {
    uint64_t map_offset;   /* file offset of the uint64_t addresses */
    uint32_t ncounters;
    uint32_t version;
    uint8_t binary_hash[32];
    uint64_t magic;
} map_trailer;

/* Versions 2 and 3 (files with timers or recorded call sites): after the
 * counter addresses, ntimers pairs (procedure entry, loop header or 0),
 * then (version 3) the address of each call site, then this trailer. */
typedef struct {
    uint32_t ntimers;
    uint32_t ncall_sites;      /* 0 in version 2 */
    map_trailer v1;            /* with MAP2_MAGIC, MAP3_MAGIC or MAP4_MAGIC */
} map2_trailer;

/* Version 4 (files with derived blocks, counters.c): after the call sites,
 * nequation_words words of flow equations (mt_counter_map), then this. */
typedef struct {
    uint64_t nequation_words;
    map2_trailer v2;           /* v1 with MAP4_MAGIC */
} map4_trailer;

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/* ---- the embedded runtime ---------------------------------------------- */

typedef struct {
    const mt_rt_header *hdr;
    const uint8_t *bytes;
    size_t size;
} runtime_blob;

/* Whether the timer events' code and the fields the copy patches lie
 * inside the blob's code (timers.c copies them unchecked). */
static bool event_code_fits(const mt_rt_header *h)
{
    for (int e = 0; e < MT_RT_EVENT_COUNT; e++) {
        const mt_rt_event_code *ec = &h->event_code[e];
        if ((uint64_t)ec->offset + ec->len > h->data_offset || ec->routine >= h->data_offset ||
            ec->record + 4u > ec->len || ec->push + 4u > ec->len || ec->call + 4u > ec->len)
            return false;
    }
    return true;
}

static int load_runtime(runtime_blob *rt, mt_error *err)
{
    rt->bytes = mt_runtime_blob;
    rt->size = (size_t)mt_runtime_blob_size;
    rt->hdr = (const mt_rt_header *)(const void *)mt_runtime_blob;
    const mt_rt_header *h = rt->hdr;
    if (rt->size < sizeof *h || h->magic != MT_RT_MAGIC || h->version != MT_RT_VERSION ||
        h->blob_size != rt->size || h->params_offset + sizeof(mt_rt_params) > rt->size ||
        h->entry_offset >= rt->size || h->data_offset > rt->size || h->data_offset % PAGE ||
        !event_code_fits(h)) {
        mt_error_set(err, "internal error: the embedded runtime blob is inconsistent");
        return -1;
    }
    return 0;
}

/* ---- choosing procedures -------------------------------------------------- */

/* IFUNC resolvers of a dynamically linked executable run inside the dynamic
 * loader, before the runtime has set up counters: they stay uninstrumented.
 * They are the addends of R_X86_64_IRELATIVE relocations; sorted. */
static uint64_t *ifunc_resolvers(const mt_elf_file *in, size_t *n)
{
    uint64_t *v = NULL;
    size_t cap = 0;
    *n = 0;
    for (size_t i = 0; i < in->nsections; i++) {
        const mt_elf_section *s = &in->sections[i];
        Elf64_Rela r;
        for (size_t k = 0; mt_elf_file_rela(in, s, k, &r); k++)
            if (ELF64_R_TYPE(r.r_info) == R_X86_64_IRELATIVE) {
                uint64_t addr = (uint64_t)r.r_addend;
                MT_PUSH(v, *n, cap, addr);
            }
    }
    if (*n)
        qsort(v, *n, sizeof *v, mt_compare_u64);
    return v;
}

static void skip(mt_rewrite_report *r, uint32_t proc, char *reason)
{
    r->skipped = mt_xrealloc(r->skipped, (r->nskipped + 1) * sizeof *r->skipped);
    r->skipped[r->nskipped++] = (mt_rewrite_skip){.proc = proc, .reason = reason};
}

static bool asked_to_skip(const mt_rewrite_options *opt, uint32_t proc)
{
    for (uint32_t k = 0; k < opt->nskip; k++)
        if (opt->skip[k] == proc)
            return true;
    return false;
}

/* A procedure the rewriter tries to relocate (rw_code_add may still refuse it). */
static bool relocatable(const mt_procedure *p)
{
    return !p->is_plt && p->nblocks && p->resolved && !p->code_as_data;
}

void mt_rewrite_bounds(const mt_program *prog, uint32_t *counters, uint32_t *call_sites)
{
    *counters = *call_sites = 0;
    for (uint32_t i = 0; i < prog->nprocs; i++) {
        const mt_procedure *p = &prog->procs[i];
        if (!relocatable(p))
            continue;
        /* rw_code_add: one counter a block, one a table's checked load */
        *counters += p->nblocks + p->ntables;
        /* add_call_sites: one record a call or tail jump through a pointer */
        for (uint32_t k = 0; k < p->ncalls; k++)
            *call_sites += p->calls[k].kind == MT_CALL_INDIRECT;
    }
}

static void choose_procedures(rw_code *c, bool dynamic, const mt_rewrite_options *opt,
                              mt_rewrite_report *r)
{
    const mt_program *prog = c->prog;
    size_t nresolvers = 0;
    uint64_t *resolvers = dynamic ? ifunc_resolvers(c->in, &nresolvers) : NULL;
    uint32_t *todo = mt_xmalloc((prog->nprocs + 1) * sizeof *todo);
    size_t ntodo = 0;
    for (uint32_t i = 0; i < prog->nprocs; i++)
        if (relocatable(&prog->procs[i]))
            todo[ntodo++] = i;
    rw_code_predecode(c, todo, ntodo);
    free(todo);
    mt_progress_stage("instrumenting: relocating procedures", prog->nprocs);
    for (uint32_t i = 0; i < prog->nprocs; i++) {
        const mt_procedure *p = &prog->procs[i];
        mt_progress_add(1);
        if (p->is_plt || p->nblocks == 0)
            continue;
        r->nprocs_candidates++;
        r->nblocks_candidates += p->nblocks;
        char *why = NULL;
        if (p->code_as_data)
            why = mt_xstrdup(p->code_as_data);
        else if (!p->resolved)
            why = mt_xasprintf("unresolved: %s", p->unresolved_reason ? p->unresolved_reason : "?");
        else if (asked_to_skip(opt, i))
            why = mt_xstrdup("left as it is on request (--skip)");
        else if (nresolvers &&
                 bsearch(&p->entry, resolvers, nresolvers, sizeof *resolvers, mt_compare_u64))
            why = mt_xstrdup("IFUNC resolver: runs in the dynamic loader before the runtime");
        if (why || !rw_code_add(c, i, &why)) {
            skip(r, i, why);
            continue;
        }
        r->nprocs_instrumented++;
    }
    free(resolvers);
    r->nblocks_instrumented = c->ncounters - c->counter_base - c->ntable_checks;
    r->ntable_checks = c->ntable_checks;
}

/* The runtime wraps thread and process creation, and in tracing copies the
 * allocator (the heap's data objects): find their callees (PLT stubs of dynamic executables, the procedures themselves in static
 * ones, found by any alias of their symbol, or the GOT slots that calls of
 * code built with -fno-plt go through).  Before relocation: calls through
 * those slots become direct calls to the wrappers.  A library copy's calls
 * too: its blob's wrappers hand them to the executable's runtime, so the
 * threads a library starts get slots of their own (timer/runtime.c,
 * SERVING). */
static void find_wrapped_callees(rw_code *c, const runtime_blob *rt)
{
    static const char *const names[] = {
#define MT_RT_WRAP_NAME(id, name) name,
        MT_RT_WRAPPERS(MT_RT_WRAP_NAME)
#undef MT_RT_WRAP_NAME
    };
    for (int w = 0; w < MT_RT_WRAP_COUNT; w++) {
        char plt[160];
        snprintf(plt, sizeof plt, "%s@plt", names[w]);
        uint32_t p = mt_find_procedure(c->prog, plt);
        uint64_t symbol = p == MT_NONE && !MT_RT_IMPORT_ONLY(w) ? rw_input_function(c->in, names[w]) : 0;
        if (symbol) {
            p = mt_procedure_at(c->prog, symbol);
            if (p != MT_NONE && c->prog->procs[p].entry != symbol)
                p = MT_NONE;
        }
        if (rt->hdr->wrapper_offset[w] == 0 || (w >= MT_RT_WRAP_MALLOC && !c->trace))
            continue;
        if (p != MT_NONE)
            c->wrap_real[w] = c->prog->procs[p].entry;
        else
            c->wrap_got[w] = rw_input_got_slot(c->in, names[w]);
    }
}

/* Where the wrappers, timer entry points and the routines of the timer
 * events' rare paths are, once the runtime's address is known. */
static void place_wrappers(rw_code *c, const runtime_blob *rt, uint64_t blob_vaddr)
{
    for (int w = 0; w < MT_RT_WRAP_COUNT; w++)
        if (c->wrap_real[w] || c->wrap_got[w])
            c->wrap_new[w] = blob_vaddr + rt->hdr->wrapper_offset[w];
    for (int t = 0; t < MT_RT_TIMER_COUNT; t++)
        c->timer_entry[t] = blob_vaddr + rt->hdr->timer_offset[t];
    for (int e = 0; e < MT_RT_EVENT_COUNT; e++)
        c->event_routine[e] = blob_vaddr + rt->hdr->event_code[e].routine;
}

/* ---- output ------------------------------------------------------------- */

typedef struct {
    uint64_t rx_vaddr, rx_off;  /* relocated code, then the runtime's text */
    uint64_t code_size;
    uint64_t blob_vaddr;
    uint64_t rw_vaddr, rw_off, rw_filesz, rw_memsz;
    uint64_t r_vaddr, r_off;    /* program headers, entry jumps, then unwind info */
    uint64_t patches_vaddr;
    uint32_t npatches;
    uint64_t images_vaddr;      /* mt_rt_image[nimages], after the entry jumps */
    uint32_t nimages;
    uint64_t params_file_offset;
    uint64_t phdr_size;
    size_t nphdrs;
    bool add_eh_frame_hdr;      /* the original has .eh_frame but no PT_GNU_EH_FRAME */
} layout;

static uint64_t highest_load_end(const mt_elf_file *in)
{
    uint64_t end = 0;
    for (size_t i = 0; i < in->nphdrs; i++)
        if (in->phdrs[i].p_type == PT_LOAD && in->phdrs[i].p_vaddr + in->phdrs[i].p_memsz > end)
            end = in->phdrs[i].p_vaddr + in->phdrs[i].p_memsz;
    return end;
}

static Elf64_Phdr load_header(uint32_t flags, uint64_t off, uint64_t vaddr, uint64_t filesz,
                              uint64_t memsz)
{
    return (Elf64_Phdr){.p_type = PT_LOAD, .p_flags = flags, .p_offset = off, .p_vaddr = vaddr,
                        .p_paddr = vaddr, .p_filesz = filesz, .p_memsz = memsz, .p_align = PAGE};
}

/* The new program-header table: the original's, with the new PT_LOADs
 * after the last PT_LOAD (loads must stay sorted by address), PT_PHDR
 * moved, and PT_GNU_EH_FRAME on the new .eh_frame_hdr when there is one.
 * A binary linked without --eh-frame-hdr (static ones often are) gets a
 * PT_GNU_EH_FRAME of its own at the end: without it the unwinder (static
 * glibc's dl_iterate_phdr) would never find the relocated code's FDEs. */
static void build_phdrs(const mt_elf_file *in, const layout *L, const rw_unwind_out *uw,
                        rw_buf *out)
{
    size_t last_load = 0;
    for (size_t i = 0; i < in->nphdrs; i++)
        if (in->phdrs[i].p_type == PT_LOAD)
            last_load = i;
    Elf64_Phdr loads[NEW_LOADS] = {
        load_header(PF_R | PF_X, L->rx_off, L->rx_vaddr, L->rw_off - L->rx_off,
                    L->rw_vaddr - L->rx_vaddr),
        load_header(PF_R | PF_W, L->rw_off, L->rw_vaddr, L->rw_filesz, L->rw_memsz),
        load_header(PF_R, L->r_off, L->r_vaddr, 0, 0), /* sizes patched by the caller */
    };
    for (size_t i = 0; i < in->nphdrs; i++) {
        Elf64_Phdr ph = in->phdrs[i];
        if (ph.p_type == PT_PHDR) {
            ph.p_offset = L->r_off;
            ph.p_vaddr = ph.p_paddr = L->r_vaddr;
            ph.p_filesz = ph.p_memsz = L->phdr_size;
        } else if (ph.p_type == PT_GNU_EH_FRAME && uw->hdr_size) {
            ph.p_offset = L->r_off + (uw->hdr_vaddr - L->r_vaddr);
            ph.p_vaddr = ph.p_paddr = uw->hdr_vaddr;
            ph.p_filesz = ph.p_memsz = uw->hdr_size;
        }
        rw_buf_put(out, &ph, sizeof ph);
        if (i == last_load)
            rw_buf_put(out, loads, sizeof loads);
    }
    if (L->add_eh_frame_hdr) {
        Elf64_Phdr eh = {.p_type = PT_NULL};
        if (uw->hdr_size)
            eh = (Elf64_Phdr){.p_type = PT_GNU_EH_FRAME, .p_flags = PF_R,
                              .p_offset = L->r_off + (uw->hdr_vaddr - L->r_vaddr),
                              .p_vaddr = uw->hdr_vaddr, .p_paddr = uw->hdr_vaddr,
                              .p_filesz = uw->hdr_size, .p_memsz = uw->hdr_size, .p_align = 4};
        rw_buf_put(out, &eh, sizeof eh);
    }
}

uint64_t mt_timer_set_id(const uint64_t *procs, const uint64_t *loops, uint32_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint32_t i = 0; i < 2 * n; i++) {
        uint64_t v = i % 2 ? loops[i / 2] : procs[i / 2];
        for (int b = 0; b < 8; b++) {
            h ^= (v >> (8 * b)) & 0xff;
            h *= 0x100000001b3ull;
        }
    }
    return h;
}

uint64_t mt_call_graph_id(const mt_program *prog)
{
    size_t n = prog->ncg_edges;
    uint64_t *callers = mt_xcalloc(n + prog->nprocs + 1, sizeof *callers);
    uint64_t *callees = mt_xcalloc(n + prog->nprocs + 1, sizeof *callees);
    for (uint32_t e = 0; e < prog->ncg_edges; e++) {
        callers[e] = prog->procs[prog->cg_edges[e].caller].entry;
        callees[e] = prog->procs[prog->cg_edges[e].callee].entry;
    }
    for (uint32_t p = 0; p < prog->nprocs; p++)
        if (prog->procs[p].known_import || prog->procs[p].known_export || prog->procs[p].binds_own) {
            callers[n] = prog->procs[p].entry;
            callees[n++] = (uint64_t)prog->procs[p].known_import | (uint64_t)prog->procs[p].known_export << 1 |
                           (uint64_t)prog->procs[p].binds_own << 2;
        }
    uint64_t id = mt_timer_set_id(callers, callees, (uint32_t)n);
    free(callers);
    free(callees);
    return id;
}

/* The (procedure entry, object key) pairs of a copy's timer records:
 * `base` pairs 0 (other objects' records) then its own objects'. */
static uint32_t timer_pairs(const mt_program *prog, const mt_timed_object *timed, uint32_t n,
                            uint32_t base, uint64_t **procs, uint64_t **keys)
{
    *procs = mt_xcalloc((size_t)base + n + 1, sizeof **procs);
    *keys = mt_xcalloc((size_t)base + n + 1, sizeof **keys);
    for (uint32_t o = 0; o < n; o++) {
        (*procs)[base + o] = prog->procs[timed[o].proc].entry;
        (*keys)[base + o] = mt_timed_object_key(prog, &timed[o]);
    }
    return base + n;
}

static uint64_t timer_pairs_id(const mt_program *prog, const mt_timed_object *timed, uint32_t n,
                               uint32_t base)
{
    uint64_t *procs, *keys;
    uint64_t id = mt_timer_set_id(procs, keys, timer_pairs(prog, timed, n, base, &procs, &keys));
    free(procs);
    free(keys);
    return id;
}

uint64_t mt_timed_objects_id(const mt_program *prog, const mt_timed_object *timed, uint32_t n)
{
    return timer_pairs_id(prog, timed, n, 0);
}

/* The records a copy's own params and map describe: a library its own, an
 * executable the whole slot's (the libraries' before its own). */
static uint32_t map_timer_base(const rw_code *c) { return c->library ? 0 : c->timer_base; }

static void fill_params(uint8_t *blob, const runtime_blob *rt, const layout *L, const rw_code *c,
                        const mt_elf_file *in, const mt_rewrite_options *opt,
                        const uint8_t hash[32])
{
    mt_rt_params params;
    memset(&params, 0, sizeof params);
    params.blob_vaddr = L->blob_vaddr;
    params.original_entry = in->ehdr.e_entry;
    for (int w = 0; w < MT_RT_WRAP_COUNT; w++) {
        params.wrap_real[w] = c->wrap_new[w] ? c->wrap_real[w] : 0;
        params.wrap_got[w] = c->wrap_new[w] ? c->wrap_got[w] : 0;
    }
    params.ncounters = c->ncounters;
    params.counter_base = c->counter_base;
    params.libs_set = opt->libs_set;
    params.is_library = c->library;
    params.ncall_sites = c->ncall_sites;
    params.call_site_base = c->call_site_base;
    params.trace_records = c->trace ? MT_TRACE_RECORDS : 0;
    params.patches_vaddr = L->patches_vaddr;
    params.npatches = L->npatches;
    params.images_vaddr = L->images_vaddr;
    params.nimages = L->nimages;
    params.params_file_offset = L->params_file_offset;
    params.ntimers = map_timer_base(c) + c->ntimed;
    params.timers_id = timer_pairs_id(c->prog, c->timed, c->ntimed, map_timer_base(c));
    params.timer_base = c->timer_base;
    params.slot_ncounters = c->slot_ncounters;
    params.slot_ncall_sites = c->trace ? c->slot_ncall_sites : 0;
    memcpy(params.binary_hash, hash, 32);
    snprintf(params.default_dir, sizeof params.default_dir, "%s", opt->profile_dir);
    snprintf(params.program_name, sizeof params.program_name, "%s", opt->program_name);
    memcpy(blob + rt->hdr->params_offset, &params, sizeof params);
}

static int write_output(const char *path, mode_t mode, const rw_buf *file, mt_error *err)
{
    char *tmp = mt_xasprintf("%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    bool ok = fd >= 0;
    for (size_t done = 0; ok && done < file->len;) {
        ssize_t n = write(fd, file->data + done, file->len - done);
        if (n <= 0)
            ok = false;
        else
            done += (size_t)n;
    }
    int saved = errno;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    if (ok && (fchmodat(AT_FDCWD, tmp, mode, 0) != 0 || rename(tmp, path) != 0)) {
        ok = false;
        saved = errno;
    }
    if (!ok) {
        mt_error_set(err, "%s: cannot write: %s", path, strerror(saved));
        unlink(tmp);
    }
    free(tmp);
    return ok ? 0 : -1;
}

static void pad_to(rw_buf *b, uint64_t len)
{
    while (b->len < len)
        rw_buf_u8(b, 0);
}

static void append_map(rw_buf *file, const rw_code *c, const uint8_t hash[32])
{
    rw_buf_align(file, 8, 0);
    uint64_t *procs, *keys;
    uint32_t ntimers = timer_pairs(c->prog, c->timed, c->ntimed, map_timer_base(c), &procs, &keys);
    uint32_t version = c->nequation_words ? 4 : ntimers || c->ncall_sites ? 3 : 1;
    static const uint64_t magic[] = {0, MAP_MAGIC, 0, MAP3_MAGIC, MAP4_MAGIC};
    map_trailer t = {.map_offset = file->len, .ncounters = c->ncounters, .version = version,
                     .magic = magic[version]};
    memcpy(t.binary_hash, hash, 32);
    for (uint32_t i = 0; i < c->ncounters; i++)
        rw_buf_u64(file, c->counter_addrs[i]);
    for (uint32_t i = 0; version > 1 && i < ntimers; i++) {
        rw_buf_u64(file, procs[i]);
        rw_buf_u64(file, keys[i]);
    }
    free(procs);
    free(keys);
    if (version == 1) {
        rw_buf_put(file, &t, sizeof t);
        return;
    }
    for (uint32_t i = 0; i < c->ncall_sites; i++)
        rw_buf_u64(file, c->call_site_addrs[i]);
    for (size_t i = 0; i < c->nequation_words; i++)
        rw_buf_u64(file, c->equations[i]);
    map4_trailer t4 = {.nequation_words = c->nequation_words,
                       .v2 = {.ntimers = ntimers, .ncall_sites = c->ncall_sites, .v1 = t}};
    if (version == 4)
        rw_buf_put(file, &t4, sizeof t4);
    else
        rw_buf_put(file, &t4.v2, sizeof t4.v2);
}

static int build_file(rw_code *c, const mt_elf_file *in, const runtime_blob *rt,
                      const mt_rewrite_options *opt, const uint8_t hash[32], rw_buf *file,
                      mt_rewrite_report *r, mt_error *err)
{
    layout L = {0};
    L.rx_vaddr = align_up(highest_load_end(in), PAGE);
    L.rx_off = align_up(in->size, PAGE);
    L.blob_vaddr = align_up(rw_code_assign(c, L.rx_vaddr), PAGE);
    L.code_size = L.blob_vaddr - L.rx_vaddr;
    L.rw_vaddr = L.blob_vaddr + rt->hdr->data_offset;
    L.rw_off = L.rx_off + (L.rw_vaddr - L.rx_vaddr);
    L.rw_filesz = rt->size - rt->hdr->data_offset;
    L.rw_memsz = L.rw_filesz + rt->hdr->bss_size;
    L.r_vaddr = align_up(L.rw_vaddr + L.rw_memsz, PAGE);
    L.r_off = align_up(L.rw_off + L.rw_filesz, PAGE);
    L.add_eh_frame_hdr = !mt_elf_file_phdr(in, PT_GNU_EH_FRAME);
    L.nphdrs = in->nphdrs + NEW_LOADS + (L.add_eh_frame_hdr ? 1 : 0);
    L.phdr_size = L.nphdrs * sizeof(Elf64_Phdr);
    place_wrappers(c, rt, L.blob_vaddr);

    /* The original file, then the RX segment. */
    rw_buf_put(file, in->data, in->size);
    pad_to(file, L.rx_off);
    rw_buf code = {0}, patches = {0};
    if (rw_code_emit(c, L.rx_vaddr, &code, &patches, err) != 0) {
        rw_buf_free(&code);
        rw_buf_free(&patches);
        return -1;
    }
    rw_buf_put(file, code.data, code.len);
    r->code_bytes = code.len;
    rw_buf_free(&code);
    pad_to(file, L.rx_off + (L.blob_vaddr - L.rx_vaddr));
    size_t blob_at = file->len;
    rw_buf_put(file, rt->bytes, rt->size);

    /* The R segment: the program headers, which need the unwind result, go
     * in front; the entry jumps and unwind info (which needs its own
     * address) after them. */
    rw_buf ro = {0};
    pad_to(&ro, L.phdr_size);
    rw_buf_align(&ro, 8, 0);
    L.patches_vaddr = L.r_vaddr + ro.len;
    L.npatches = (uint32_t)(patches.len / sizeof(mt_rt_patch));
    rw_buf_put(&ro, patches.data, patches.len);
    rw_buf images = {0};
    /* A library's pages are not /proc/self/exe's: its jumps are written. */
    L.nimages = c->library ? 0
                           : (uint32_t)rw_images_plan(in, (const mt_rt_patch *)(void *)patches.data,
                                                      L.npatches, &images);
    L.images_vaddr = L.r_vaddr + ro.len;
    size_t images_at = ro.len; /* their file offsets are known once `ro` is complete */
    rw_buf_put(&ro, images.data, images.len);
    L.params_file_offset = blob_at + rt->hdr->params_offset;
    fill_params(file->data + blob_at, rt, &L, c, in, opt, hash);
    rw_unwind_out uw = {0};
    size_t nmoved;
    rw_moved *moved = rw_code_moved(c, &nmoved);
    int rc = rw_unwind_build(in, moved, nmoved, &ro, L.r_vaddr, &uw, err);
    rw_moved_free(moved, nmoved);
    if (rc != 0) {
        rw_buf_free(&ro);
        rw_buf_free(&images);
        rw_buf_free(&patches);
        return -1;
    }
    r->nfdes = uw.nfdes_written;
    rw_buf ph = {0};
    build_phdrs(in, &L, &uw, &ph);
    memcpy(ro.data, ph.data, ph.len);
    rw_buf_free(&ph);
    /* Patch the R segment's own sizes into its header. */
    for (size_t i = 0; i < L.nphdrs; i++) {
        Elf64_Phdr *p = (Elf64_Phdr *)(void *)(ro.data + i * sizeof(Elf64_Phdr));
        if (p->p_type == PT_LOAD && p->p_vaddr == L.r_vaddr)
            p->p_filesz = p->p_memsz = ro.len;
    }
    pad_to(file, L.r_off);
    rw_buf_put(file, ro.data, ro.len);
    rw_buf_free(&ro);
    /* The images after every segment, their table (in the R segment) told
     * where they landed. */
    rw_images_emit(in, (const mt_rt_patch *)(void *)patches.data, L.npatches,
                   (mt_rt_image *)(void *)images.data, L.nimages, file);
    if (images.len) /* a library's copy has none */
        memcpy(file->data + L.r_off + images_at, images.data, images.len);
    rw_buf_free(&images);
    rw_buf_free(&patches);

    Elf64_Ehdr *eh = (Elf64_Ehdr *)(void *)file->data;
    eh->e_phoff = L.r_off;
    eh->e_phnum = (Elf64_Half)L.nphdrs;
    /* A library's e_entry, unused by the loader, marks the copy for the
     * executable's runtime the same way (instrumented_by_mtool). */
    eh->e_entry = L.blob_vaddr + rt->hdr->entry_offset;
    append_map(file, c, hash);
    return 0;
}

/* Objects whose procedure was relocated: their edges carry timer events. */
static uint32_t count_timed(const rw_code *c)
{
    uint32_t n = 0;
    for (uint32_t o = 0; o < c->ntimed; o++)
        for (size_t i = 0; i < c->nprocs; i++)
            if (c->procs[i].proc == c->timed[o].proc) {
                n++;
                break;
            }
    return n;
}

/* ---- inputs refused ---------------------------------------------------------- */

/* The entry of an instrumented file is the runtime's stub, inside the blob
 * whose page-aligned start holds mt_rt_header (any version): instrumenting
 * it again would make each process write two profiles. */
static bool instrumented_by_mtool(const mt_elf_file *in)
{
    enum { MAX_BLOB = 1u << 20 };
    uint64_t entry = in->ehdr.e_entry;
    for (uint64_t page = entry & ~(uint64_t)(PAGE - 1); entry - page < MAX_BLOB; page -= PAGE) {
        const uint8_t *at = mt_elf_file_bytes(in, page, sizeof(mt_rt_header));
        mt_rt_header h;
        if (!at)
            return false;
        memcpy(&h, at, sizeof h);
        if (h.magic == MT_RT_MAGIC && page + h.entry_offset == entry)
            return true;
        if (page == 0)
            return false;
    }
    return false;
}

/* A shared library: position-independent, with neither an interpreter (a
 * dynamically linked PIE has one) nor DF_1_PIE (a static PIE has that). */
static bool shared_library(const mt_elf_file *in)
{
    uint64_t flags_1;
    mt_elf_file_dynamic(in, DT_FLAGS_1, &flags_1);
    return in->ehdr.e_type == ET_DYN && !mt_elf_file_phdr(in, PT_INTERP) && !(flags_1 & DF_1_PIE);
}

/* What the loader can load as a library: position-independent, not a PIE.
 * An interpreter is allowed: libc.so.6 has one so that it runs as a program
 * (it prints its version), and it is loaded as a library all the same. */
static bool loadable_library(const mt_elf_file *in)
{
    uint64_t flags_1;
    mt_elf_file_dynamic(in, DT_FLAGS_1, &flags_1);
    return in->ehdr.e_type == ET_DYN && !(flags_1 & DF_1_PIE);
}

/* NULL, or why `in` cannot be instrumented. */
static const char *refused(const mt_elf_file *in, bool library)
{
    if (shared_library(in) && !library)
        return "a shared library: instrument it with the program that loads it "
               "(mtool count --libs)";
    if (!loadable_library(in) && library)
        return "not a shared library";
    if (instrumented_by_mtool(in))
        return "already instrumented by mtool: instrument the original binary";
    return NULL;
}

int mt_rewrite_counts(const mt_program *prog, const char *out_path, const mt_rewrite_options *opt,
                      mt_rewrite_report *report, mt_error *err)
{
    memset(report, 0, sizeof *report);
    runtime_blob rt;
    if (load_runtime(&rt, err) != 0)
        return -1;
    mt_elf_file in;
    if (mt_elf_file_open(&in, prog->path, err) != 0)
        return -1;
    int rc = -1;
    rw_code c;
    rw_buf file = {0};
    struct stat st;
    const char *why = refused(&in, opt->library);
    if (!why && opt->library && opt->trace && !opt->slot_counters)
        why = "a shared library's trace records need the executable's counters (slot_counters)";
    if (!why && opt->library && opt->ntimed && !opt->slot_counters)
        why = "a shared library's timers need the executable's counters (slot_counters)";
    if (why) {
        mt_error_set(err, "%s: %s", prog->path, why);
        goto out_input;
    }
    if (in.nphdrs + NEW_LOADS + 1 > PAGE / sizeof(Elf64_Phdr)) {
        mt_error_set(err, "%s: too many program headers (%zu)", prog->path, in.nphdrs);
        goto out_input;
    }
    if (mt_file_sha256(prog->path, report->binary_hash, err) != 0 || stat(prog->path, &st) != 0)
        goto out_input;
    if (rw_code_init(&c, prog, &in, err) != 0)
        goto out_input;
    c.loop_registers = !opt->no_loop_registers;
    c.derive_counts = !opt->no_derived_counts;
    c.timers_only = opt->timers_only;
    c.trace = opt->trace;
    c.traced = opt->traced;
    c.ntraced = opt->ntraced;
    c.library = opt->library;
    c.counter_base = opt->counter_base;
    c.timer_base = opt->timer_base;
    c.slot_ncounters = opt->library ? opt->slot_counters : 0;
    c.slot_ncall_sites = opt->library ? opt->slot_call_sites : 0;
    c.code_base = opt->code_base;
    for (uint32_t k = 0; k < opt->counter_base; k++) /* the other objects' counters */
        MT_PUSH(c.counter_addrs, c.ncounters, c.cap_counters, (uint64_t)0);
    c.call_site_base = opt->call_site_base;
    for (uint32_t k = 0; k < opt->call_site_base; k++) /* ... and call-site records */
        MT_PUSH(c.call_site_addrs, c.ncall_sites, c.cap_call_sites, (uint64_t)0);
    find_wrapped_callees(&c, &rt);
    rw_timers_init(&c, rt.bytes, opt->timed, opt->ntimed);
    choose_procedures(&c, !prog->static_linked, opt, report);
    report->ntimed = count_timed(&c);
    mt_progress_stage("instrumenting: laying out and writing the file", 0);
    if (build_file(&c, &in, &rt, opt, report->binary_hash, &file, report, err) == 0 &&
        write_output(out_path, (st.st_mode & 07777) | 0100, &file, err) == 0)
        rc = 0;
    report->nprobes_saving_flags = c.nprobes_saving_flags;
    report->nloop_registers = c.nloop_registers;
    report->nderived = c.nderived;
    report->nwrapped_calls = c.nwrapped_calls;
    report->ntask_hooks = c.ntask_hooks;
    report->ncall_sites = c.ncall_sites - c.call_site_base;
    report->ntimer_events = c.nevents_placed;
    report->ntimer_events_saving_flags = c.nevents_saving_flags;
    report->ntrampolines = (uint32_t)c.ntramps;
    report->ntrace_sites = c.ntrace_sites;
    report->ntrace_bare = c.ntrace_bare;
    report->ntrace_refs = (uint32_t)c.ntrace_refs;
    report->ntrace_untraced = c.ntrace_untraced;
    rw_buf_free(&file);
    rw_code_free(&c);
    mt_progress_end();
out_input:
    mt_elf_file_close(&in);
    return rc;
}

void mt_rewrite_report_free(mt_rewrite_report *report)
{
    for (uint32_t i = 0; i < report->nskipped; i++)
        free(report->skipped[i].reason);
    free(report->skipped);
    memset(report, 0, sizeof *report);
}

/* ---- reading the counter map back ------------------------------------------ */

/* Whether every equation derives a block counter once, from counters that
 * are either counted or derived by an earlier equation: evaluated in order,
 * each then reads final values. */
static bool equations_valid(const mt_counter_map *map)
{
    uint8_t *state = mt_xcalloc((size_t)map->ncounters + 1, 1); /* 1: derived later, 2: done */
    bool ok = true;
    for (uint32_t k = 0; ok && k < map->nequation_words;) {
        uint32_t d = (uint32_t)map->equations[k], n = (uint32_t)(map->equations[k] >> 32);
        ok = d < map->ncounters && !state[d] && !(map->addrs[d] & MT_COUNTER_FALLBACK) &&
             n <= map->nequation_words - k - 1;
        if (ok)
            state[d] = 1;
        k += 1 + (ok ? n : 0);
    }
    for (uint32_t k = 0; ok && k < map->nequation_words;) {
        uint32_t d = (uint32_t)map->equations[k], n = (uint32_t)(map->equations[k] >> 32);
        for (uint32_t j = 1; ok && j <= n; j++) {
            uint64_t m = map->equations[k + j];
            ok = m < map->ncounters && state[m] != 1; /* not derived later (or here) */
        }
        state[d] = 2;
        k += 1 + n;
    }
    free(state);
    return ok;
}

int mt_counter_map_read(const char *path, mt_counter_map *map, mt_error *err)
{
    memset(map, 0, sizeof *map);
    mt_elf_file in;
    if (mt_elf_file_open(&in, path, err) != 0)
        return -1;
    map_trailer t;
    int rc = -1;
    if (in.size < sizeof t) {
        mt_error_set(err, "%s: no mtool counter map (not instrumented by mtool)", path);
        goto out;
    }
    memcpy(&t, in.data + in.size - sizeof t, sizeof t);
    map4_trailer t4 = {0};
    size_t tail = 0;
    if (t.magic == MAP_MAGIC && t.version == 1)
        tail = sizeof t;
    else if (((t.magic == MAP2_MAGIC && t.version == 2) ||
              (t.magic == MAP3_MAGIC && t.version == 3)) && in.size >= sizeof t4.v2) {
        memcpy(&t4.v2, in.data + in.size - sizeof t4.v2, sizeof t4.v2);
        if (t.version == 2)
            t4.v2.ncall_sites = 0;
        tail = sizeof t4.v2;
    } else if (t.magic == MAP4_MAGIC && t.version == 4 && in.size >= sizeof t4) {
        memcpy(&t4, in.data + in.size - sizeof t4, sizeof t4);
        tail = sizeof t4;
    }
    if (!tail) {
        mt_error_set(err, "%s: no valid mtool counter map (not instrumented by mtool?)", path);
        goto out;
    }
    map2_trailer t2 = t4.v2;
    uint64_t words = (uint64_t)t.ncounters + 2ull * t2.ntimers + t2.ncall_sites;
    if (t.map_offset > in.size - tail || (in.size - tail - t.map_offset) % 8 ||
        t4.nequation_words > UINT32_MAX ||
        (in.size - tail - t.map_offset) / 8 != words + t4.nequation_words) {
        mt_error_set(err, "%s: corrupt mtool counter map", path);
        goto out;
    }
    memcpy(map->binary_hash, t.binary_hash, 32);
    map->ncounters = t.ncounters;
    map->addrs = mt_xmalloc((size_t)t.ncounters * 8 + 1);
    memcpy(map->addrs, in.data + t.map_offset, (size_t)t.ncounters * 8);
    map->ntimers = t2.ntimers;
    map->timer_procs = mt_xmalloc((size_t)t2.ntimers * 8 + 1);
    map->timer_loops = mt_xmalloc((size_t)t2.ntimers * 8 + 1);
    const uint8_t *pairs = in.data + t.map_offset + (size_t)t.ncounters * 8;
    for (uint32_t i = 0; i < t2.ntimers; i++) {
        memcpy(&map->timer_procs[i], pairs + 16 * (size_t)i, 8);
        memcpy(&map->timer_loops[i], pairs + 16 * (size_t)i + 8, 8);
    }
    map->timers_id = mt_timer_set_id(map->timer_procs, map->timer_loops, map->ntimers);
    map->ncall_sites = t2.ncall_sites;
    map->call_sites = mt_xmalloc((size_t)t2.ncall_sites * 8 + 1);
    memcpy(map->call_sites, pairs + 16 * (size_t)t2.ntimers, (size_t)t2.ncall_sites * 8);
    map->nequation_words = (uint32_t)t4.nequation_words;
    map->equations = mt_xmalloc((size_t)t4.nequation_words * 8 + 1);
    memcpy(map->equations, pairs + 16 * (size_t)t2.ntimers + 8 * (size_t)t2.ncall_sites,
           (size_t)t4.nequation_words * 8);
    if (!equations_valid(map)) {
        mt_error_set(err, "%s: corrupt mtool counter map (flow equations)", path);
        mt_counter_map_free(map);
        goto out;
    }
    rc = 0;
out:
    mt_elf_file_close(&in);
    return rc;
}

void mt_counter_map_derive(const mt_counter_map *map, uint64_t *counts)
{
    for (uint32_t k = 0; k < map->nequation_words;) {
        uint32_t d = (uint32_t)map->equations[k], n = (uint32_t)(map->equations[k] >> 32);
        uint64_t sum = 0;
        for (uint32_t j = 1; j <= n; j++)
            sum += counts[map->equations[k + j]];
        counts[d] = sum;
        k += 1 + n;
    }
}

void mt_counter_map_free(mt_counter_map *map)
{
    free(map->addrs);
    free(map->equations);
    free(map->timer_procs);
    free(map->timer_loops);
    free(map->call_sites);
    memset(map, 0, sizeof *map);
}
