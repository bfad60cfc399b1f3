/* rewriter/images.c — the original code's pages that carry entry jumps,
 * stored in the instrumented file with the jumps already written
 * (timer.h, mt_rt_image).  Writing the jumps at start-up made a private
 * copy of every such page in every process; the runtime maps these
 * instead, shared through the page cache. */
#define _GNU_SOURCE
#include <string.h>

#include "internal.h"

#define PAGE 4096u

static uint64_t page_down(uint64_t v) { return v & ~(uint64_t)(PAGE - 1); }
static uint64_t page_up(uint64_t v) { return page_down(v + PAGE - 1); }

uint32_t rw_segment_prot(const Elf64_Phdr *ph)
{
    return ((ph->p_flags & PF_R) ? 1u : 0u) | ((ph->p_flags & PF_W) ? 2u : 0u) |
           ((ph->p_flags & PF_X) ? 4u : 0u);
}

/* A segment whose every page the loader maps straight from the file, with
 * offsets congruent to addresses (as the ELF loader requires); the view
 * checked at open that a PT_LOAD's file image lies in the file. */
static bool file_backed(const Elf64_Phdr *ph)
{
    return ph->p_filesz == ph->p_memsz && ph->p_offset % PAGE == ph->p_vaddr % PAGE;
}

size_t rw_images_plan(const mt_elf_file *in, const mt_rt_patch *patches, size_t npatches,
                      rw_buf *images)
{
    uint64_t flags, textrel;
    if (mt_elf_file_dynamic(in, DT_TEXTREL, &textrel) ||
        (mt_elf_file_dynamic(in, DT_FLAGS, &flags) && (flags & DF_TEXTREL)))
        return 0;
    size_t n = 0;
    const Elf64_Phdr *seg = NULL;
    mt_rt_image cur = {0};
    for (size_t i = 0; i < npatches; i++) {
        const Elf64_Phdr *ph = mt_elf_file_load_at(in, patches[i].vaddr, 0);
        if (!ph || !file_backed(ph) ||
            patches[i].vaddr + patches[i].len > ph->p_vaddr + ph->p_memsz) {
            images->len = 0;
            return 0;
        }
        if (ph != seg) {
            if (seg)
                rw_buf_put(images, &cur, sizeof cur), n++;
            seg = ph;
            cur = (mt_rt_image){.vaddr = page_down(patches[i].vaddr), .prot = rw_segment_prot(ph)};
        }
        cur.size = page_up(patches[i].vaddr + patches[i].len) - cur.vaddr;
    }
    if (seg)
        rw_buf_put(images, &cur, sizeof cur), n++;
    return n;
}

void rw_images_emit(const mt_elf_file *in, const mt_rt_patch *patches, size_t npatches,
                    mt_rt_image *images, size_t nimages, rw_buf *file)
{
    size_t k = 0;
    for (size_t i = 0; i < nimages; i++) {
        mt_rt_image *im = &images[i];
        const Elf64_Phdr *ph = mt_elf_file_load_at(in, patches[k].vaddr, 0); /* its first jump's */
        rw_buf_align(file, PAGE, 0);
        im->file_offset = file->len;
        /* The segment's first page may start before p_vaddr, its last end
         * after p_filesz: the loader maps whole file pages, so do we. */
        uint64_t from = ph->p_offset + im->vaddr - ph->p_vaddr; /* congruent: >= 0 */
        uint64_t avail = from < in->size ? in->size - from : 0;
        rw_buf_put(file, in->data + from, avail < im->size ? avail : im->size);
        while (file->len < im->file_offset + im->size)
            rw_buf_u8(file, 0);
        for (; k < npatches && patches[k].vaddr < im->vaddr + im->size; k++)
            memcpy(file->data + im->file_offset + (patches[k].vaddr - im->vaddr), patches[k].bytes,
                   patches[k].len);
    }
}
