/* dataobj/internal.h — shared by the files of dataobj/ (public: dataobj.h). */
#ifndef MTOOL_DATAOBJ_INTERNAL_H
#define MTOOL_DATAOBJ_INTERNAL_H

#include "../common/elf_file.h"
#include "dataobj.h"

/* A field of a static object: bytes [off, off + size) of each element, its
 * data object id once the map has given it one. */
typedef struct {
    uint64_t off, size;
    char *name;                   /* the whole name: "records.key", "pool.node.next" */
    uint32_t id;
} dataobj_field;

/* A global or static variable: [start, start + size) at link time, made of
 * elements of `elem` bytes (the size itself unless it is an array) whose
 * fields repeat in every element: an array's index is folded away. */
typedef struct {
    uint64_t start, size, elem;
    char *name, *type;            /* type: NULL when only the symbol table knew it */
    dataobj_field *fields;        /* sorted by off, disjoint, inside [0, elem) */
    uint32_t nfields;
    uint32_t id;
} dataobj_static;

typedef struct {
    dataobj_static *v;
    size_t n, cap;
} dataobj_statics;

/* DWARF's variables with a fixed address (DW_OP_addr), with their types'
 * fields, read by libdwarf in a child process (a malformed file may crash
 * libdwarf, never mtool).  False when DWARF could not be read (the child
 * failed): *out then holds nothing. */
bool dataobj_read_dwarf(const mt_elf_file *img, dataobj_statics *out);
/* The symbol tables' OBJECT symbols with a size, for the variables DWARF
 * did not describe. */
void dataobj_read_symbols(const mt_elf_file *img, dataobj_statics *out);
/* The symbol table's TLS symbols: [start, start + size) an offset into the
 * module's TLS block (x86-64 variant II: the executable's starts at the
 * thread pointer minus its rounded size, a library's further below). */
void dataobj_read_tls_symbols(const mt_elf_file *img, dataobj_statics *out);
/* Every variable's and field's name preceded by "PREFIX:" (a library's). */
void dataobj_statics_prefix(dataobj_statics *s, const char *prefix);
/* Sorted by start, overlaps dropped (the first, DWARF's, kept). */
void dataobj_statics_finish(dataobj_statics *s);
void dataobj_statics_free(dataobj_statics *s);
/* Frees what one variable holds. */
void dataobj_static_release(dataobj_static *v);

/* Heap blocks by address: a treap (heap.c). */
typedef struct dataobj_heap dataobj_heap;
dataobj_heap *dataobj_heap_new(void);
void dataobj_heap_free(dataobj_heap *h);
/* Adds [start, start + size) of data object `id`, replacing a block at the
 * same start. */
void dataobj_heap_insert(dataobj_heap *h, uint64_t start, uint64_t size, uint32_t id);
/* Retires the block at `start`, if any. */
void dataobj_heap_remove(dataobj_heap *h, uint64_t start);
/* The data object of the block holding `addr`, 0 for none. */
uint32_t dataobj_heap_find(dataobj_heap *h, uint64_t addr);

#endif
