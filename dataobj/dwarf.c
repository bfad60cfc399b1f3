/* dataobj/dwarf.c — global and static variables from DWARF: every
 * DW_TAG_variable whose location is one DW_OP_addr, with its name, size,
 * type and the fields of its type (DW_TAG_member with a constant
 * DW_AT_data_member_location; nested structs flattened to "a.b.c"; an
 * array's elements folded, so that every element's `next` is one field
 * "nodes.next").
 *
 * libdwarf runs in a child process (mt_run_isolated), as for the line
 * tables (analyzer/lines.c): libdwarf 20210528 has known memory-safety
 * bugs on corrupt DWARF.  The child sends the variables back as bytes,
 * which the parent checks field by field. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <libdwarf.h>

#include "internal.h"

/* Bounds that keep a malformed file's cycles and sizes from running away. */
#define MAX_TYPE_DEPTH 16
#define MAX_DIE_DEPTH 64
#define MAX_FIELDS 4096
#define MAX_NAME 512

typedef struct {
    Dwarf_Debug dbg;
    dataobj_statics *out;
} walker;

/* A type as far as data objects care: its bytes, the element that repeats
 * in it (an array's, all indices folded), that element's fields. */
typedef struct {
    uint64_t size, elem;
    char type[MAX_NAME];
    dataobj_field *fields;
    size_t nfields, cap;
} type_info;

static void drop(Dwarf_Debug dbg, Dwarf_Error *err)
{
    if (*err) {
        dwarf_dealloc_error(dbg, *err);
        *err = NULL;
    }
}

static bool die_udata(Dwarf_Debug dbg, Dwarf_Die die, Dwarf_Half at, uint64_t *out)
{
    Dwarf_Error err = NULL;
    Dwarf_Attribute attr = NULL;
    if (dwarf_attr(die, at, &attr, &err) != DW_DLV_OK) {
        drop(dbg, &err);
        return false;
    }
    Dwarf_Unsigned v = 0;
    Dwarf_Signed sv = 0;
    bool ok = dwarf_formudata(attr, &v, &err) == DW_DLV_OK;
    drop(dbg, &err);
    /* DW_FORM_implicit_const (gcc 12's pointer sizes): formsdata only */
    if (!ok && dwarf_formsdata(attr, &sv, &err) == DW_DLV_OK && sv >= 0) {
        v = (Dwarf_Unsigned)sv;
        ok = true;
    }
    drop(dbg, &err);
    dwarf_dealloc(dbg, attr, DW_DLA_ATTR);
    *out = v;
    return ok;
}

static Dwarf_Die die_at_ref(Dwarf_Debug dbg, Dwarf_Die die, Dwarf_Half at)
{
    Dwarf_Error err = NULL;
    Dwarf_Attribute attr = NULL;
    Dwarf_Off off = 0;
    Dwarf_Die to = NULL;
    if (dwarf_attr(die, at, &attr, &err) != DW_DLV_OK) {
        drop(dbg, &err);
        return NULL;
    }
    if (dwarf_global_formref(attr, &off, &err) != DW_DLV_OK ||
        dwarf_offdie_b(dbg, off, 1, &to, &err) != DW_DLV_OK)
        to = NULL;
    drop(dbg, &err);
    dwarf_dealloc(dbg, attr, DW_DLA_ATTR);
    return to;
}

static void copy_name(Dwarf_Debug dbg, Dwarf_Die die, char *buf, size_t n)
{
    Dwarf_Error err = NULL;
    char *name = NULL;
    buf[0] = 0;
    if (dwarf_diename(die, &name, &err) == DW_DLV_OK && name)
        snprintf(buf, n, "%s", name);
    drop(dbg, &err);
}

static Dwarf_Half die_tag(Dwarf_Debug dbg, Dwarf_Die die)
{
    Dwarf_Error err = NULL;
    Dwarf_Half tag = 0;
    if (dwarf_tag(die, &tag, &err) != DW_DLV_OK)
        tag = 0;
    drop(dbg, &err);
    return tag;
}

static void resolve(walker *w, Dwarf_Die type, int depth, type_info *t);

/* The elements of an array type: the product of its subranges' counts. */
static uint64_t array_count(walker *w, Dwarf_Die array)
{
    Dwarf_Error err = NULL;
    Dwarf_Die child = NULL;
    uint64_t count = 1;
    if (dwarf_child(array, &child, &err) != DW_DLV_OK) {
        drop(w->dbg, &err);
        return 0;
    }
    for (int k = 0; child && k < 16; k++) {
        uint64_t n = 0, upper = 0;
        if (die_tag(w->dbg, child) == DW_TAG_subrange_type) {
            if (die_udata(w->dbg, child, DW_AT_count, &n) ||
                (die_udata(w->dbg, child, DW_AT_upper_bound, &upper) && upper < UINT32_MAX &&
                 (n = upper + 1)))
                count = n && count <= UINT64_MAX / n ? count * n : 0;
            else
                count = 0; /* a flexible or variable-length array: no size */
        }
        Dwarf_Die next = NULL;
        int rc = dwarf_siblingof_b(w->dbg, child, 1, &next, &err);
        drop(w->dbg, &err);
        dwarf_dealloc(w->dbg, child, DW_DLA_DIE);
        child = rc == DW_DLV_OK ? next : NULL;
    }
    if (child)
        dwarf_dealloc(w->dbg, child, DW_DLA_DIE);
    return count;
}

static void add_field(type_info *t, uint64_t off, uint64_t size, const char *prefix,
                      const char *name)
{
    if (t->nfields >= MAX_FIELDS || !size)
        return;
    dataobj_field f = {.off = off, .size = size, .name = mt_xasprintf("%s%s", prefix, name)};
    MT_PUSH(t->fields, t->nfields, t->cap, f);
}

/* The members of a struct or class: fields of t (a nested struct's own
 * fields, prefixed "member."; anything else, arrays included, one field). */
static void add_members(walker *w, Dwarf_Die s, int depth, type_info *t)
{
    Dwarf_Error err = NULL;
    Dwarf_Die child = NULL;
    if (dwarf_child(s, &child, &err) != DW_DLV_OK) {
        drop(w->dbg, &err);
        return;
    }
    while (child) {
        uint64_t off = 0;
        Dwarf_Die mtype = NULL;
        char name[MAX_NAME];
        copy_name(w->dbg, child, name, sizeof name);
        if (die_tag(w->dbg, child) == DW_TAG_member && name[0] &&
            die_udata(w->dbg, child, DW_AT_data_member_location, &off) &&
            (mtype = die_at_ref(w->dbg, child, DW_AT_type))) {
            type_info m = {0};
            resolve(w, mtype, depth + 1, &m);
            if (m.nfields && m.elem == m.size)
                for (size_t i = 0; i < m.nfields; i++) {
                    char prefix[MAX_NAME + 2];
                    snprintf(prefix, sizeof prefix, "%s.", name);
                    add_field(t, off + m.fields[i].off, m.fields[i].size, prefix,
                              m.fields[i].name);
                }
            else
                add_field(t, off, m.size, "", name);
            for (size_t i = 0; i < m.nfields; i++)
                free(m.fields[i].name);
            free(m.fields);
            dwarf_dealloc(w->dbg, mtype, DW_DLA_DIE);
        }
        Dwarf_Die next = NULL;
        int rc = dwarf_siblingof_b(w->dbg, child, 1, &next, &err);
        drop(w->dbg, &err);
        dwarf_dealloc(w->dbg, child, DW_DLA_DIE);
        child = rc == DW_DLV_OK ? next : NULL;
    }
}

/* Fills t for type DIE `type` (typedefs and qualifiers seen through; the
 * first name met on the way is the type's name). */
static void resolve(walker *w, Dwarf_Die type, int depth, type_info *t)
{
    if (depth > MAX_TYPE_DEPTH)
        return;
    Dwarf_Half tag = die_tag(w->dbg, type);
    if (!t->type[0]) {
        copy_name(w->dbg, type, t->type, sizeof t->type);
        if (t->type[0] && (tag == DW_TAG_structure_type || tag == DW_TAG_class_type ||
                           tag == DW_TAG_union_type)) {
            char tagged[MAX_NAME];
            snprintf(tagged, sizeof tagged, "%s %.400s", tag == DW_TAG_union_type ? "union" : "struct",
                     t->type);
            snprintf(t->type, sizeof t->type, "%s", tagged);
        }
    }
    Dwarf_Die inner = NULL;
    switch (tag) {
    case DW_TAG_typedef:
    case DW_TAG_const_type:
    case DW_TAG_volatile_type:
    case DW_TAG_restrict_type:
    case DW_TAG_atomic_type:
        if ((inner = die_at_ref(w->dbg, type, DW_AT_type))) {
            resolve(w, inner, depth + 1, t);
            dwarf_dealloc(w->dbg, inner, DW_DLA_DIE);
        }
        return;
    case DW_TAG_array_type: {
        uint64_t n = array_count(w, type);
        type_info e = {0};
        if ((inner = die_at_ref(w->dbg, type, DW_AT_type))) {
            resolve(w, inner, depth + 1, &e);
            dwarf_dealloc(w->dbg, inner, DW_DLA_DIE);
        }
        if (!t->type[0])
            snprintf(t->type, sizeof t->type, "%.400s[%llu]", e.type[0] ? e.type : "?",
                     (unsigned long long)n);
        t->size = e.size && n <= UINT64_MAX / e.size ? e.size * n : 0;
        t->elem = e.elem;
        t->fields = e.fields;
        t->nfields = e.nfields;
        t->cap = e.cap;
        return;
    }
    default:
        break;
    }
    uint64_t size = 0;
    die_udata(w->dbg, type, DW_AT_byte_size, &size);
    t->size = t->elem = size;
    if (tag == DW_TAG_structure_type || tag == DW_TAG_class_type)
        add_members(w, type, depth, t);
}

/* The address of a variable located by one DW_OP_addr, else false. */
static bool fixed_address(walker *w, Dwarf_Die var, uint64_t *addr)
{
    Dwarf_Error err = NULL;
    Dwarf_Attribute attr = NULL;
    if (dwarf_attr(var, DW_AT_location, &attr, &err) != DW_DLV_OK) {
        drop(w->dbg, &err);
        return false;
    }
    Dwarf_Half form = 0;
    Dwarf_Unsigned len = 0;
    Dwarf_Ptr expr = NULL;
    bool ok = dwarf_whatform(attr, &form, &err) == DW_DLV_OK && form == DW_FORM_exprloc &&
              dwarf_formexprloc(attr, &len, &expr, &err) == DW_DLV_OK && len == 9 &&
              ((const uint8_t *)expr)[0] == DW_OP_addr;
    if (ok)
        memcpy(addr, (const uint8_t *)expr + 1, 8);
    drop(w->dbg, &err);
    dwarf_dealloc(w->dbg, attr, DW_DLA_ATTR);
    return ok && *addr;
}

/* A variable DIE: its name and type may be on the declaration its
 * DW_AT_specification names (a definition of a declared global). */
static void add_variable(walker *w, Dwarf_Die var)
{
    uint64_t addr = 0;
    if (!fixed_address(w, var, &addr))
        return;
    Dwarf_Die spec = die_at_ref(w->dbg, var, DW_AT_specification);
    char name[MAX_NAME];
    copy_name(w->dbg, var, name, sizeof name);
    if (!name[0] && spec)
        copy_name(w->dbg, spec, name, sizeof name);
    Dwarf_Die type = die_at_ref(w->dbg, var, DW_AT_type);
    if (!type && spec)
        type = die_at_ref(w->dbg, spec, DW_AT_type);
    type_info t = {0};
    if (type) {
        resolve(w, type, 0, &t);
        dwarf_dealloc(w->dbg, type, DW_DLA_DIE);
    }
    if (spec)
        dwarf_dealloc(w->dbg, spec, DW_DLA_DIE);
    if (!name[0] || !t.size) {
        for (size_t i = 0; i < t.nfields; i++)
            free(t.fields[i].name);
        free(t.fields);
        return;
    }
    /* Field names are whole: "var.field". */
    for (size_t i = 0; i < t.nfields; i++) {
        char *whole = mt_xasprintf("%s.%s", name, t.fields[i].name);
        free(t.fields[i].name);
        t.fields[i].name = whole;
    }
    dataobj_static v = {.start = addr, .size = t.size, .elem = t.elem ? t.elem : t.size,
                        .name = mt_xstrdup(name), .type = mt_xstrdup(t.type[0] ? t.type : "?"),
                        .fields = t.fields, .nfields = (uint32_t)t.nfields};
    MT_PUSH(w->out->v, w->out->n, w->out->cap, v);
}

/* Every variable under `die` (function statics live in subprograms and
 * lexical blocks). */
static void walk(walker *w, Dwarf_Die die, int depth)
{
    Dwarf_Error err = NULL;
    Dwarf_Die child = NULL;
    if (depth > MAX_DIE_DEPTH || dwarf_child(die, &child, &err) != DW_DLV_OK) {
        drop(w->dbg, &err);
        return;
    }
    while (child) {
        Dwarf_Half tag = die_tag(w->dbg, child);
        if (tag == DW_TAG_variable)
            add_variable(w, child);
        else if (tag == DW_TAG_subprogram || tag == DW_TAG_lexical_block ||
                 tag == DW_TAG_namespace)
            walk(w, child, depth + 1);
        Dwarf_Die next = NULL;
        int rc = dwarf_siblingof_b(w->dbg, child, 1, &next, &err);
        drop(w->dbg, &err);
        dwarf_dealloc(w->dbg, child, DW_DLA_DIE);
        child = rc == DW_DLV_OK ? next : NULL;
    }
}

static void walk_units(walker *w)
{
    Dwarf_Error err = NULL;
    for (;;) {
        Dwarf_Unsigned next_cu = 0;
        Dwarf_Half cu_type = 0;
        int rc = dwarf_next_cu_header_d(w->dbg, 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                        NULL, &next_cu, &cu_type, &err);
        if (rc != DW_DLV_OK) {
            drop(w->dbg, &err);
            return;
        }
        Dwarf_Die cu = NULL;
        rc = dwarf_siblingof_b(w->dbg, NULL, 1, &cu, &err);
        drop(w->dbg, &err);
        if (rc == DW_DLV_OK) {
            walk(w, cu, 0);
            dwarf_dealloc(w->dbg, cu, DW_DLA_DIE);
        }
    }
}

/* Wire format, per variable: u64 start, size, elem; u32 nfields; the name
 * and the type (u32 length + bytes each); per field u64 off, size and its
 * name. */
static bool send_string(int fd, const char *s)
{
    uint32_t len = (uint32_t)strlen(s);
    return mt_write_all(fd, &len, 4) && mt_write_all(fd, s, len);
}

static bool send_statics(int fd, const dataobj_statics *s)
{
    bool ok = true;
    for (size_t i = 0; ok && i < s->n; i++) {
        const dataobj_static *v = &s->v[i];
        ok = mt_write_all(fd, &v->start, 8) && mt_write_all(fd, &v->size, 8) &&
             mt_write_all(fd, &v->elem, 8) && mt_write_all(fd, &v->nfields, 4) &&
             send_string(fd, v->name) && send_string(fd, v->type);
        for (uint32_t k = 0; ok && k < v->nfields; k++)
            ok = mt_write_all(fd, &v->fields[k].off, 8) &&
                 mt_write_all(fd, &v->fields[k].size, 8) && send_string(fd, v->fields[k].name);
    }
    return ok;
}

/* Child side: read and send (ctx: the ELF file). */
static bool read_and_send(void *ctx, int fd)
{
    const mt_elf_file *img = ctx;
    Dwarf_Error err = NULL;
    walker w = {0};
    dataobj_statics mine = {0};
    w.out = &mine;
    int rc = dwarf_init_b(img->fd, DW_DLC_READ, DW_GROUPNUMBER_ANY, NULL, NULL, &w.dbg, &err);
    if (rc != DW_DLV_OK) {
        if (rc == DW_DLV_ERROR)
            dwarf_dealloc_error(w.dbg, err);
        return true; /* no DWARF: no variables */
    }
    walk_units(&w);
    dwarf_finish(w.dbg, &err);
    return send_statics(fd, &mine);
}

static char *take_string(mt_byte_reader *r)
{
    uint32_t len = 0;
    if (!mt_take(r, &len, 4) || len > MAX_NAME * 2 || len > (size_t)(r->end - r->p))
        return NULL;
    char *s = mt_xmalloc((size_t)len + 1);
    memcpy(s, r->p, len);
    s[len] = 0;
    r->p += len;
    return s;
}

/* One variable from the child's bytes; false at the first inconsistency
 * (fields outside their element, an element not dividing the size, ...). */
static bool take_static(mt_byte_reader *r, dataobj_static *v)
{
    memset(v, 0, sizeof *v);
    if (!mt_take(r, &v->start, 8) || !mt_take(r, &v->size, 8) || !mt_take(r, &v->elem, 8) ||
        !mt_take(r, &v->nfields, 4) || v->nfields > MAX_FIELDS)
        return false;
    v->name = take_string(r);
    v->type = take_string(r);
    bool ok = v->name && v->type && v->size && v->elem && v->elem <= v->size &&
              v->size % v->elem == 0 && v->start + v->size > v->start;
    if (ok && v->nfields)
        v->fields = mt_xcalloc(v->nfields, sizeof *v->fields);
    for (uint32_t k = 0; ok && k < v->nfields; k++) {
        dataobj_field *f = &v->fields[k];
        ok = mt_take(r, &f->off, 8) && mt_take(r, &f->size, 8) && (f->name = take_string(r)) &&
             f->size && f->off < v->elem && f->size <= v->elem - f->off;
    }
    return ok;
}

bool dataobj_read_dwarf(const mt_elf_file *img, dataobj_statics *out)
{
    if (!mt_elf_file_section(img, ".debug_info"))
        return true;
    size_t size = 0;
    uint8_t *buf = mt_run_isolated(read_and_send, (void *)img, &size);
    if (!buf)
        return false;
    mt_byte_reader r = {buf, buf + size};
    bool ok = true;
    while (ok && r.p < r.end) {
        dataobj_static v;
        ok = take_static(&r, &v);
        if (ok)
            MT_PUSH(out->v, out->n, out->cap, v);
        else
            dataobj_static_release(&v);
    }
    free(buf);
    return ok;
}
