/* dataobj/statics.c — a module's variables from its symbol tables, and
 * the sorted, disjoint list of variables lookups search. */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A defined, named, sized symbol of ELF type `type` as a variable at
 * [st_value, st_value + st_size). */
static void add_variable(dataobj_statics *out, const Elf64_Sym *sym, const char *name,
                         unsigned type)
{
    if (ELF64_ST_TYPE(sym->st_info) != type || !sym->st_size || !name[0] ||
        sym->st_shndx == SHN_UNDEF || sym->st_value + sym->st_size < sym->st_value)
        return;
    dataobj_static v = {.start = sym->st_value, .size = sym->st_size, .elem = sym->st_size,
                        .name = mt_xstrdup(name)};
    MT_PUSH(out->v, out->n, out->cap, v);
}

static void add_symbol(void *ctx, const Elf64_Sym *sym, const char *name)
{
    if (sym->st_value) /* an object at address 0 is no variable of the executable */
        add_variable(ctx, sym, name, STT_OBJECT);
}

void dataobj_read_symbols(const mt_elf_file *img, dataobj_statics *out)
{
    mt_elf_file_each_symbol(img, SHT_SYMTAB, add_symbol, out);
    mt_elf_file_each_symbol(img, SHT_DYNSYM, add_symbol, out);
}

/* A TLS symbol's value is its offset in the PT_TLS template (0 is the
 * first variable's: kept). */
static void add_tls_symbol(void *ctx, const Elf64_Sym *sym, const char *name)
{
    add_variable(ctx, sym, name, STT_TLS);
}

void dataobj_read_tls_symbols(const mt_elf_file *img, dataobj_statics *out)
{
    mt_elf_file_each_symbol(img, SHT_SYMTAB, add_tls_symbol, out);
    mt_elf_file_each_symbol(img, SHT_DYNSYM, add_tls_symbol, out); /* a stripped libc's errno */
}

static int by_start(const void *a, const void *b)
{
    const dataobj_static *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (!x->type != !y->type) /* DWARF's (typed) before the symbol's */
        return x->type ? -1 : 1;
    return x->size > y->size ? -1 : x->size < y->size;
}

static int by_offset(const void *a, const void *b)
{
    const dataobj_field *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

void dataobj_static_release(dataobj_static *v)
{
    for (uint32_t k = 0; k < v->nfields && v->fields; k++)
        free(v->fields[k].name);
    free(v->fields);
    free(v->name);
    free(v->type);
}

void dataobj_statics_free(dataobj_statics *s)
{
    for (size_t i = 0; i < s->n; i++)
        dataobj_static_release(&s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* Fields sorted; one overlapping the field before it (a union's members
 * seen through a struct) is dropped. */
static void tidy_fields(dataobj_static *v)
{
    if (v->nfields > 1)
        qsort(v->fields, v->nfields, sizeof *v->fields, by_offset);
    uint32_t kept = 0;
    for (uint32_t k = 0; k < v->nfields; k++) {
        if (kept && v->fields[k].off < v->fields[kept - 1].off + v->fields[kept - 1].size) {
            free(v->fields[k].name);
            continue;
        }
        v->fields[kept++] = v->fields[k];
    }
    v->nfields = kept;
}

void dataobj_statics_finish(dataobj_statics *s)
{
    if (s->n > 1)
        qsort(s->v, s->n, sizeof *s->v, by_start);
    size_t kept = 0;
    for (size_t i = 0; i < s->n; i++) {
        dataobj_static *v = &s->v[i];
        if (kept && v->start < s->v[kept - 1].start + s->v[kept - 1].size) {
            dataobj_static_release(v); /* the same variable again (its symbol), or an alias */
            continue;
        }
        tidy_fields(v);
        s->v[kept++] = *v;
    }
    s->n = kept;
}

static char *prefixed(char *name, const char *prefix)
{
    char *longer = mt_xasprintf("%s:%s", prefix, name);
    free(name);
    return longer;
}

void dataobj_statics_prefix(dataobj_statics *s, const char *prefix)
{
    for (size_t i = 0; i < s->n; i++) {
        dataobj_static *v = &s->v[i];
        v->name = prefixed(v->name, prefix);
        for (uint32_t k = 0; k < v->nfields; k++)
            v->fields[k].name = prefixed(v->fields[k].name, prefix);
    }
}
