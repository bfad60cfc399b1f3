/* dataobj/dataobj.h — data objects: what each traced memory reference
 * touched, as the opaque 32-bit id the simulator tallies by
 * (docs/SIMULATOR.md, "Data objects").
 *
 * Sits between the analyzer (the program's procedures, lines, ELF file)
 * and run/trace.c, which hands it every record of a traced run in order;
 * it reads the record format of timer/timer.h and includes nothing of sim/
 * or ui/.
 *
 * Kinds, looked up in this order:
 *  - heap: a block the runtime's allocator wrappers reported (malloc,
 *    calloc, realloc, aligned_alloc, posix_memalign, memalign, valloc,
 *    operator new/new[], mmap), until its free/delete/munmap; one object per
 *    allocation site and call path, named FUNC@PROC:LINE (FUNC@PROC+0xOFF
 *    without a line; a traced library's PROC is LIB:PROC);
 *  - global: a variable of the executable at a fixed address (DWARF
 *    DW_OP_addr, else an OBJECT symbol with a size), or one of its struct
 *    fields, every array index folded away ("records.key"); a traced
 *    library's the same at its load base once LIBRARY_BASE said it,
 *    "LIB:records.key";
 *  - tls: an %fs-relative reference or one into the thread's TLS blocks:
 *    the executable's TLS variable there (by its STT_TLS symbol), or a
 *    traced library's in the block LIBRARY_TLS gave the thread
 *    ("LIB:NAME"), else "(tls)";
 *  - stack: a reference flagged as the stack's, or inside the range of
 *    them the thread has made: the frame of the procedure whose frame holds
 *    the address, by the shadow call stack the call and ret records build
 *    ("stack:PROC", "stack:LIB:PROC" for a traced library's procedure);
 *  - other: everything else (id 0): untraced libraries' data, the loader,
 *    blocks the untraced libraries allocate themselves. */
#ifndef MTOOL_DATAOBJ_H
#define MTOOL_DATAOBJ_H

#include <stdbool.h>
#include <stdint.h>

#include "../analyzer/analyzer.h"
#include "../common/util.h"
#include "../timer/timer.h"

typedef enum {
    MT_DATA_OTHER,
    MT_DATA_GLOBAL,  /* a whole variable */
    MT_DATA_FIELD,   /* a field of a variable's struct type */
    MT_DATA_HEAP,
    MT_DATA_STACK,
    MT_DATA_TLS,
} mt_data_kind;

typedef struct {
    char *name;              /* program-derived: escape it when printing */
    mt_data_kind kind;
    char *type;              /* DWARF type of a global or field's variable, else NULL */
    uint64_t start, size;    /* globals, fields: link-time start and bytes of the variable;
                                heap: bytes of the largest block of the site */
    char *path;              /* heap: the call path, innermost first ("build <- main") */
    uint64_t blocks;         /* heap: blocks allocated at this site and path */
} mt_data_object;

typedef struct mt_data_map mt_data_map;

/* The static data objects of the analyzed program `prog` (its DWARF and
 * symbol tables; a DWARF libdwarf cannot read gives one warning on `log`
 * and the symbols only).  NULL with err when the file cannot be opened. */
mt_data_map *mt_data_map_new(const mt_program *prog, FILE *log, mt_error *err);
void mt_data_map_free(mt_data_map *m);
/* A shared library traced with the program, its name `name` (as the
 * program needs it: program-derived), analyzed as `prog`: its code objects
 * are code_base + its own (mt_code_object_split's of prog), so its
 * allocation sites, call paths and stack frames are named by its
 * procedures, "LIB:PROC".  Its globals, statics and TLS variables (read
 * from prog's file as the executable's) are "LIB:NAME", placed when the
 * trace's LIBRARY_BASE and LIBRARY_TLS events with code `id` (its copy's
 * counter_base) say where; a file that cannot be read is said on `log`,
 * its variables left "other". */
void mt_data_map_add_library(mt_data_map *m, const char *name, const mt_program *prog,
                             uint32_t code_base, uint32_t id, FILE *log);
/* Takes the next record of thread `tid` (in the order the thread made
 * them): events update the map and return 0; a reference returns its data
 * object's id. */
uint32_t mt_data_map_observe(mt_data_map *m, int32_t tid, const mt_trace_record *r);
/* Ids run from 0 ("other") to count - 1. */
uint32_t mt_data_map_count(const mt_data_map *m);
const mt_data_object *mt_data_map_object(const mt_data_map *m, uint32_t id);
const char *mt_data_kind_name(mt_data_kind k);

#endif
