/* timer/audit.c — the audit library (glibc's rtld-audit(7), LD_AUDIT) that
 * loads the rewritten copies of a program's shared libraries instead of the
 * originals, for one run only: the system's files stay untouched
 * (docs/ARCHITECTURE.md, "Shared libraries").
 *
 * $MTOOL_LIBS lists "ORIGINAL<TAB>COPY" lines; la_objsearch, asked first
 * with the name as the program gave it (LA_SER_ORIG: a DT_NEEDED entry, a
 * dlopen argument), answers the copy when that name is an original's path
 * or its file name.  An absolute DT_NEEDED or dlopen path, which a search
 * path cannot redirect, is redirected all the same.  $MTOOL_ORIGIN,
 * "COPY_DIR<TAB>ORIGINAL_DIR", turns the candidates of a search in the
 * executable copy's $ORIGIN back into the original's: a library the
 * program dlopens beside itself is found as by the original.
 *
 * Nothing here touches counters: the executable's runtime (timer/runtime.c)
 * starts when la_activity first reports the loader's list consistent (every
 * object mapped and relocated, before any constructor runs; the program's
 * entry would be too late for them), sets %gs and writes the copies' entry
 * jumps; and after every dlopen that mapped objects, which la_activity
 * reports to it, writes theirs.
 * Objects dlopen maps that are no copy are written to $MTOOL_LIBS_SEEN, one
 * path a line, for mtool to report and to count from its next run. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/uio.h>
#include <unistd.h>

#include "timer.h"

unsigned int la_version(unsigned int version)
{
    return version < LAV_CURRENT ? version : LAV_CURRENT;
}

/* The line of $MTOOL_LIBS whose ORIGINAL (which = 0) or COPY (which = 1)
 * is `name` (for an original also: ends with "/name"); its COPY into
 * `out`.  False when there is none. */
static bool listed(const char *name, int which, char *out, size_t cap)
{
    const char *list = getenv("MTOOL_LIBS");
    size_t n = strlen(name);
    for (const char *line = list; line && *line;) {
        const char *tab = strchr(line, '\t'), *end = strchrnul(line, '\n');
        if (!tab || tab > end)
            return false;
        const char *from = which ? tab + 1 : line, *to = which ? end : tab;
        size_t len = (size_t)(to - from);
        bool same = (len == n || (!which && len > n && to[-n - 1] == '/')) &&
                    memcmp(to - n, name, n) == 0;
        size_t copy = (size_t)(end - tab - 1);
        if (same && copy < cap) {
            memcpy(out, tab + 1, copy);
            out[copy] = '\0';
            return true;
        }
        line = *end ? end + 1 : end;
    }
    return false;
}

/* A candidate in the executable copy's directory ($ORIGIN), moved to the
 * original's; NULL when it is not in that directory. */
static char *in_original_dir(const char *name, char *out, size_t cap)
{
    const char *map = getenv("MTOOL_ORIGIN"), *tab = map ? strchr(map, '\t') : NULL;
    size_t n = tab ? (size_t)(tab - map) : 0;
    if (!tab || strncmp(name, map, n) != 0 || name[n] != '/' ||
        strlen(tab + 1) + strlen(name + n) >= cap)
        return NULL;
    strcpy(out, tab + 1);
    strcat(out, name + n);
    return out;
}

char *la_objsearch(const char *name, uintptr_t *cookie, unsigned int flag)
{
    (void)cookie;
    static char found[4096];
    if (strchr(name, '\n'))
        return (char *)name;
    if (flag == LA_SER_ORIG)
        return listed(name, 0, found, sizeof found) ? found : (char *)name;
    if (flag == LA_SER_RUNPATH && in_original_dir(name, found, sizeof found))
        return found;
    return (char *)name;
}

/* ---- the executable's runtime, and what dlopen maps -------------------------- */

/* n bytes at `at`, which may be unmapped: false instead of a fault. */
static bool read_safely(uintptr_t at, void *buf, size_t n)
{
    struct iovec local = {buf, n}, remote = {(void *)at, n};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)n;
}

/* The activation entry of the executable's runtime, when the executable
 * is a counting copy of a set with libraries (its e_entry is its blob's
 * entry stub, the blob's page-aligned header a few pages below); else NULL. */
static void (*runtime_activation(void))(long *)
{
    enum { PAGE = 4096, MAX_BLOB_PAGES = 256 };
    uintptr_t entry = getauxval(AT_ENTRY), at = entry & ~(uintptr_t)(PAGE - 1);
    for (int k = 0; k < MAX_BLOB_PAGES && at >= PAGE; k++, at -= PAGE) {
        mt_rt_header h;
        mt_rt_params p;
        if (!read_safely(at, &h, sizeof h))
            return NULL;
        if (h.magic != MT_RT_MAGIC || at + h.entry_offset != entry)
            continue;
        if (h.version != MT_RT_VERSION || !read_safely(at + h.params_offset, &p, sizeof p) ||
            !p.libs_set || p.is_library)
            return NULL;
        return (void (*)(long *))(at + h.timer_offset[MT_RT_TIMER_ACTIVATE_LIBRARIES]);
    }
    return NULL;
}

static struct {
    bool started;             /* the start-up's objects are all mapped */
    void (*activate)(long *); /* the runtime's entry, NULL: no counting copy */
} audit;

/* One line of $MTOOL_LIBS_SEEN, written at once (O_APPEND: the lines of
 * several processes never mix); the program's errno is left as it was. */
static void note_seen(const char *path)
{
    const char *file = getenv("MTOOL_LIBS_SEEN");
    char copy[4096], moved[4096];
    if (!file || !*file || strchr(path, '\n') || listed(path, 1, copy, sizeof copy))
        return;
    /* the loader names an object by the candidate la_objsearch was asked */
    if (in_original_dir(path, moved, sizeof moved))
        path = moved;
    size_t n = strlen(path);
    if (n + 1 >= sizeof copy)
        return;
    int saved = errno, fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
        memcpy(copy, path, n);
        copy[n] = '\n';
        if (write(fd, copy, n + 1) < 0) { /* nothing to do: mtool reports what it got */
        }
        close(fd);
    }
    errno = saved;
}

unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
    (void)cookie;
    if (audit.started && audit.activate && lmid == LM_ID_BASE && map->l_name && map->l_name[0])
        note_seen(map->l_name);
    return 0; /* no symbol bindings to audit */
}

/* The initial stack (argc, argv..., envp..., auxv), which the loader
 * keeps (glibc's ld.so exports it). */
extern void *__libc_stack_end;

/* The loader's list is consistent: at start-up, after relocation and
 * before the constructors (glibc's dl_main calls it once every object is
 * relocated: its 2018 and 2021 sources, and what tests/libs.sh sees of
 * Debian 12's 2.36), where the executable's runtime starts; then after
 * each dlopen that mapped objects, before their relocation and
 * constructors. */
void la_activity(uintptr_t *cookie, unsigned int flag)
{
    (void)cookie;
    if (flag != LA_ACT_CONSISTENT)
        return;
    if (!audit.started) {
        audit.started = true;
        audit.activate = runtime_activation();
    }
    if (audit.activate)
        audit.activate((long *)__libc_stack_end);
}
