/* analyzer/plt.c — name the PLT stubs ("malloc@plt").
 *
 * A stub is a jump through a GOT slot: `jmp *disp(%rip)`, possibly after
 * endbr64 and with a bnd prefix.  The slot's dynamic relocation names the
 * import: R_X86_64_JUMP_SLOT (.rela.plt) or R_X86_64_GLOB_DAT (.rela.dyn,
 * for .plt.got), or R_X86_64_IRELATIVE in static binaries ("*ABS*+0xADDR@plt"
 * as objdump prints it).
 *
 * Stub layouts differ (16-byte lazy entries, 8-byte .plt.got and static
 * entries, 16-byte IBT entries, sh_entsize sometimes 0), so instead of
 * trusting a stride the section is decoded linearly and split into stubs at
 * each endbr64 and at each GOT jump that would be a stub's second one.
 * Lazy-binding entries of an IBT .plt (`endbr64; push N; jmp PLT0`) are not
 * reported: code calls the matching .plt.sec stub. */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <stdlib.h>
#include <string.h>

#include "../common/x86_decode.h"
#include "internal.h"

#ifndef R_X86_64_IRELATIVE
#define R_X86_64_IRELATIVE 37
#endif

/* GOT slot address -> name of the import it holds. */
typedef struct {
    uint64_t slot;
    char *name;
} slot_name;

typedef struct {
    slot_name *items;
    size_t n, cap;
    const mt_elf_section *rela_plt; /* for lazy entries named by relocation index */
} slot_map;

static char *reloc_target_name(const mt_elf_file *img, const mt_elf_section *rela,
                               const Elf64_Rela *r)
{
    uint32_t type = (uint32_t)ELF64_R_TYPE(r->r_info);
    if (type == R_X86_64_IRELATIVE)
        return mt_xasprintf("*ABS*+0x%llx", (unsigned long long)r->r_addend);
    if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
        return NULL;
    Elf64_Sym sym;
    const char *name;
    const mt_elf_section *symtab = mt_elf_file_linked_section(img, rela);
    if (!mt_elf_file_symbol(img, symtab, ELF64_R_SYM(r->r_info), &sym, &name) || !*name)
        return NULL;
    return mt_xstrdup(name);
}

static int compare_slots(const void *a, const void *b)
{
    uint64_t x = ((const slot_name *)a)->slot, y = ((const slot_name *)b)->slot;
    return x < y ? -1 : x > y;
}

/* Reads every allocated RELA section: dynamic relocations only (static
 * relocations kept by --emit-relocs are not loaded and describe code). */
static void build_slot_map(const mt_elf_file *img, slot_map *map)
{
    memset(map, 0, sizeof *map);
    map->rela_plt = mt_elf_file_section(img, ".rela.plt");
    for (size_t s = 0; s < img->nsections; s++) {
        const mt_elf_section *rela = &img->sections[s];
        if (rela->type != SHT_RELA || !(rela->flags & SHF_ALLOC))
            continue;
        size_t count = mt_elf_file_rela_count(rela);
        for (size_t i = 0; i < count; i++) {
            Elf64_Rela r;
            mt_elf_file_rela(img, rela, i, &r);
            char *name = reloc_target_name(img, rela, &r);
            if (name) {
                slot_name sn = {r.r_offset, name};
                MT_PUSH(map->items, map->n, map->cap, sn);
            }
        }
    }
    if (map->n)
        qsort(map->items, map->n, sizeof *map->items, compare_slots);
}

static const char *slot_lookup(const slot_map *map, uint64_t slot)
{
    size_t lo = mt_lower_bound_u64(map->items, map->n, sizeof *map->items,
                                   offsetof(__typeof__(*map->items), slot), slot);
    return lo < map->n && map->items[lo].slot == slot ? map->items[lo].name : NULL;
}

static void free_slot_map(slot_map *map)
{
    for (size_t i = 0; i < map->n; i++)
        free(map->items[i].name);
    free(map->items);
}

/* What one stub does, as far as naming it is concerned. */
typedef struct {
    uint64_t start;
    bool has_slot, has_push_index, is_plt0;
    uint64_t slot;        /* GOT slot it jumps through */
    uint64_t push_index;  /* relocation index pushed by a lazy entry */
} stub_state;

typedef struct {
    const mt_elf_file *img;
    const slot_map *map;
    mt_plt_stub *out;
    size_t n, cap;
} stub_list;

/* The symbol the stub's GOT slot's relocation names (by the slot, else by
 * the relocation index a lazy entry pushes), or NULL: PLT0, an IRELATIVE
 * slot (no symbol: "*ABS*+0xADDR"), a slot no relocation names. */
static char *stub_target(const stub_list *list, const stub_state *st)
{
    if (st->is_plt0)
        return NULL;
    const char *name = st->has_slot ? slot_lookup(list->map, st->slot) : NULL;
    Elf64_Rela r;
    if (name)
        return mt_xstrdup(name);
    if (st->has_push_index && mt_elf_file_rela(list->img, list->map->rela_plt, st->push_index, &r))
        return reloc_target_name(list->img, list->map->rela_plt, &r);
    return NULL;
}

/* An imported symbol's name: not the made-up "*ABS*+0xADDR" of IRELATIVE. */
static bool is_symbol(const char *target)
{
    return target && strncmp(target, "*ABS*", strlen("*ABS*")) != 0;
}

/* Records the stub that ends at `end` if it jumps through a GOT slot (or is
 * the PLT0 header); lazy-only entries are dropped. */
static void close_stub(stub_list *list, stub_state *st, uint64_t end)
{
    if (end > st->start && (st->has_slot || st->is_plt0)) {
        char *target = stub_target(list, st);
        mt_plt_stub stub = {st->start, end - st->start,
                            st->is_plt0 ? mt_xstrdup("_plt0")
                            : target    ? mt_xasprintf("%s@plt", target)
                                        : mt_xasprintf("sub_%llx@plt", (unsigned long long)st->start),
                            is_symbol(target) ? target : NULL};
        if (!stub.import)
            free(target);
        MT_PUSH(list->out, list->n, list->cap, stub);
    }
    memset(st, 0, sizeof *st);
    st->start = end;
}

static bool rip_memory_operand(const cs_insn *insn, uint64_t *addr)
{
    const cs_x86 *x = &insn->detail->x86;
    if (x->op_count != 1 || x->operands[0].type != X86_OP_MEM)
        return false;
    const x86_op_mem *m = &x->operands[0].mem;
    if (m->base != X86_REG_RIP || m->index != X86_REG_INVALID)
        return false;
    *addr = insn->address + insn->size + (uint64_t)m->disp;
    return true;
}

static bool is_endbr64(const uint8_t *p, size_t avail)
{
    static const uint8_t endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
    return avail >= 4 && memcmp(p, endbr64, 4) == 0;
}

/* Feeds one decoded instruction to the stub splitter. */
static void step(stub_list *list, stub_state *st, const cs_insn *insn)
{
    uint64_t mem;
    const cs_x86 *x = &insn->detail->x86;
    if (insn->id == X86_INS_JMP && rip_memory_operand(insn, &mem)) {
        if (st->has_slot)
            close_stub(list, st, insn->address);
        st->has_slot = true;
        st->slot = mem;
    } else if (insn->id == X86_INS_PUSH && rip_memory_operand(insn, &mem)) {
        if (st->has_slot || st->has_push_index || st->is_plt0)
            close_stub(list, st, insn->address);
        st->is_plt0 = true; /* push GOT+8: the lazy-binding header */
    } else if (insn->id == X86_INS_PUSH && x->op_count == 1 && x->operands[0].type == X86_OP_IMM) {
        if (st->has_push_index)
            close_stub(list, st, insn->address);
        st->has_push_index = true;
        st->push_index = (uint64_t)x->operands[0].imm;
    }
}

static void scan_section(stub_list *list, csh cs, cs_insn *insn, const mt_elf_section *sec)
{
    const uint8_t *bytes = mt_elf_file_section_bytes(list->img, sec);
    if (!bytes || !(sec->flags & SHF_EXECINSTR))
        return;
    stub_state st = {.start = sec->addr};
    size_t off = 0;
    while (off < sec->size) {
        if (is_endbr64(bytes + off, sec->size - off)) {
            close_stub(list, &st, sec->addr + off);
            off += 4;
            continue;
        }
        const uint8_t *code = bytes + off;
        size_t avail = sec->size - off;
        uint64_t addr = sec->addr + off;
        if (!mt_x86_decode_iter(cs, &code, &avail, &addr, insn)) {
            close_stub(list, &st, sec->addr + off + 1); /* undecodable byte: drop the stub */
            off++;
            continue;
        }
        step(list, &st, insn);
        off += insn->size;
    }
    close_stub(list, &st, sec->addr + sec->size);
}

size_t mt_find_plt_stubs(const mt_elf_file *img, mt_program *prog, mt_plt_stub **out)
{
    static const char *const plt_sections[] = {".plt", ".plt.sec", ".plt.got", ".plt.bnd"};
    *out = NULL;
    csh cs;
    if (!mt_x86_open(&cs)) {
        mt_warn(prog, "%s: capstone unavailable; PLT stubs are not named", img->path);
        return 0;
    }
    cs_insn *insn = cs_malloc(cs);
    slot_map map;
    build_slot_map(img, &map);
    stub_list list = {img, &map, NULL, 0, 0};
    for (size_t i = 0; i < MT_ARRAY_LEN(plt_sections); i++)
        scan_section(&list, cs, insn, mt_elf_file_section(img, plt_sections[i]));
    free_slot_map(&map);
    cs_free(insn, 1);
    cs_close(&cs);
    *out = list.out;
    return list.n;
}
