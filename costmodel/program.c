/* costmodel/program.c — predictions for every block of an analyzed program,
 * and count x cycles sums over procedures and loops.
 *
 * The analysis keeps no instruction bytes (analyzer/ARCHITECTURE: blocks
 * only), so the executable segments are mapped again here. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "costmodel.h"

typedef struct {
    const uint8_t *data;
    size_t size;
    const Elf64_Phdr *phdrs;
    unsigned nphdrs;
} code_image;

static int image_open(code_image *im, const char *path, mt_error *err)
{
    memset(im, 0, sizeof *im);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        mt_error_set(err, "%s: cannot read: %s", path, fd < 0 ? strerror(errno) : "too small");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        mt_error_set(err, "%s: cannot map: %s", path, strerror(errno));
        return -1;
    }
    im->data = p;
    im->size = (size_t)st.st_size;
    const Elf64_Ehdr *eh = p;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_phentsize != sizeof(Elf64_Phdr) ||
        eh->e_phoff > im->size || (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > im->size - eh->e_phoff) {
        mt_error_set(err, "%s: not an ELF file with valid program headers", path);
        munmap(p, im->size);
        return -1;
    }
    im->phdrs = (const Elf64_Phdr *)(im->data + eh->e_phoff);
    im->nphdrs = eh->e_phnum;
    return 0;
}

static void image_close(code_image *im)
{
    if (im->data)
        munmap((void *)im->data, im->size);
}

static const uint8_t *image_bytes(const code_image *im, uint64_t vaddr, uint64_t len)
{
    for (unsigned i = 0; i < im->nphdrs; i++) {
        const Elf64_Phdr *ph = &im->phdrs[i];
        if (ph->p_type != PT_LOAD || vaddr < ph->p_vaddr || len > ph->p_filesz ||
            vaddr - ph->p_vaddr > ph->p_filesz - len || ph->p_offset > im->size ||
            ph->p_filesz > im->size - ph->p_offset)
            continue;
        return im->data + ph->p_offset + (vaddr - ph->p_vaddr);
    }
    return NULL;
}

/* A block ends with a taken branch when its conditional branch closes a
 * loop: the taken edge goes to the header of a loop containing the block. */
static bool ends_with_back_edge(const mt_procedure *proc, uint32_t b)
{
    const mt_block *blk = &proc->blocks[b];
    for (uint32_t e = blk->first_succ; e < blk->first_succ + blk->nsucc; e++) {
        const mt_edge *ed = &proc->edges[e];
        if (ed->kind != MT_EDGE_COND_TAKEN || ed->dst == MT_NONE)
            continue;
        for (uint32_t l = blk->loop; l != MT_NONE; l = proc->loops[l].parent)
            if (proc->loops[l].header == ed->dst)
                return true;
    }
    return false;
}

/* The body of loop l as executed every iteration: its own blocks (not
 * those of nested loops) laid out from the header to the end of the last
 * block with a back edge.  Blocks placed after that are out-of-line paths
 * the compiler expected to be cold.  Returns the number of blocks. */
static size_t loop_body(const mt_procedure *proc, uint32_t l, uint32_t *out)
{
    const mt_loop *lp = &proc->loops[l];
    uint64_t lo = proc->blocks[lp->header].start, hi = proc->blocks[lp->header].end;
    for (uint32_t k = 0; k < lp->nback_edges; k++) {
        const mt_block *src = &proc->blocks[proc->edges[lp->back_edges[k]].src];
        if (src->start >= lo && src->end > hi)
            hi = src->end;
    }
    size_t n = 0;
    for (uint32_t k = 0; k < lp->nblocks; k++) {
        const mt_block *b = &proc->blocks[lp->blocks[k]];
        if (b->loop == l && b->start >= lo && b->end <= hi)
            out[n++] = lp->blocks[k];
    }
    return n;
}

/* Adds the loop's recurrence to its header (see costmodel.h). */
static void add_loop_recurrence(mt_predictor *p, const code_image *im, const mt_procedure *proc,
                                uint32_t l, mt_block_cost *costs, uint32_t *body,
                                mt_code_range *ranges)
{
    size_t n = loop_body(proc, l, body);
    double others = 0;
    uint32_t header = proc->loops[l].header;
    for (size_t k = 0; k < n; k++) {
        const mt_block *b = &proc->blocks[body[k]];
        ranges[k] = (mt_code_range){image_bytes(im, b->start, b->end - b->start),
                                    b->end - b->start, b->start};
        if (!ranges[k].code)
            return;
        if (body[k] != header)
            others += costs[body[k]].cycles;
    }
    mt_block_cost *hc = &costs[header];
    double need = mt_predict_recurrence(p, ranges, n) - others;
    hc->bounds[MT_BOUND_RECURRENCE] = need > 0 ? need : 0;
    if (hc->bounds[MT_BOUND_RECURRENCE] > hc->cycles) {
        hc->cycles = hc->bounds[MT_BOUND_RECURRENCE];
        hc->limit = MT_BOUND_RECURRENCE;
    }
}

static void predict_procedure(mt_predictor *p, const code_image *im, const mt_procedure *proc,
                              mt_block_cost *costs)
{
    for (uint32_t b = 0; b < proc->nblocks; b++) {
        const mt_block *blk = &proc->blocks[b];
        const uint8_t *code = image_bytes(im, blk->start, blk->end - blk->start);
        mt_block_context ctx = {.throughput_only = blk->loop != MT_NONE,
                                .taken_exit = ends_with_back_edge(proc, b)};
        if (code)
            mt_predict_block(p, code, blk->end - blk->start, blk->start, &ctx, &costs[b]);
    }
    if (!proc->nloops)
        return;
    uint32_t *body = mt_xcalloc(proc->nblocks, sizeof *body);
    mt_code_range *ranges = mt_xcalloc(proc->nblocks, sizeof *ranges);
    for (uint32_t l = 0; l < proc->nloops; l++)
        if (!proc->loops[l].irreducible)
            add_loop_recurrence(p, im, proc, l, costs, body, ranges);
    free(body);
    free(ranges);
}

int mt_predict_program(const mt_machine *m, const mt_program *prog, mt_program_costs *out,
                       mt_error *err)
{
    memset(out, 0, sizeof *out);
    code_image im;
    if (image_open(&im, prog->path, err) != 0)
        return -1;
    mt_predictor *p = mt_predictor_new(m, err);
    if (!p) {
        image_close(&im);
        return -1;
    }
    out->nprocs = prog->nprocs;
    out->first = mt_xcalloc(prog->nprocs + 1, sizeof *out->first);
    for (uint32_t i = 0; i < prog->nprocs; i++)
        out->first[i + 1] = out->first[i] + prog->procs[i].nblocks;
    out->costs = mt_xcalloc(out->first[prog->nprocs] + 1, sizeof *out->costs);
    for (uint32_t i = 0; i < prog->nprocs; i++)
        predict_procedure(p, &im, &prog->procs[i], &out->costs[out->first[i]]);
    mt_predictor_free(p);
    image_close(&im);
    return 0;
}

void mt_program_costs_free(mt_program_costs *c)
{
    free(c->costs);
    free(c->first);
    memset(c, 0, sizeof *c);
}

double mt_predicted_cycles_proc(const mt_program *prog, const mt_program_costs *c,
                                const uint64_t *counts, uint32_t proc)
{
    double sum = 0;
    for (uint64_t i = c->first[proc]; i < c->first[proc] + prog->procs[proc].nblocks; i++)
        sum += (double)counts[i] * c->costs[i].cycles;
    return sum;
}

double mt_predicted_cycles_loop(const mt_program *prog, const mt_program_costs *c,
                                const uint64_t *counts, uint32_t proc, uint32_t loop)
{
    const mt_loop *l = &prog->procs[proc].loops[loop];
    double sum = 0;
    for (uint32_t k = 0; k < l->nblocks; k++) {
        uint64_t i = c->first[proc] + l->blocks[k];
        sum += (double)counts[i] * c->costs[i].cycles;
    }
    return sum;
}
