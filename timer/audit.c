/* timer/audit.c — the audit library (glibc's rtld-audit(7), LD_AUDIT) that
 * loads the rewritten copies of a program's shared libraries instead of the
 * originals, for one run only: the system's files stay untouched
 * (docs/ARCHITECTURE.md, "Shared libraries").
 *
 * $MTOOL_LIBS lists "ORIGINAL<TAB>COPY" lines; la_objsearch, asked first
 * with the name as the program gave it (LA_SER_ORIG: a DT_NEEDED entry, a
 * dlopen argument), answers the copy when that name is an original's path
 * or its file name.  An absolute DT_NEEDED or dlopen path, which a search
 * path cannot redirect, is redirected all the same.  Nothing here touches
 * counters: the copies' entry jumps are written later by the executable's
 * runtime (timer/runtime.c, activate_libraries), so code that runs before
 * the program's entry (constructors) runs the original bytes. */
#define _GNU_SOURCE
#include <link.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

unsigned int la_version(unsigned int version)
{
    return version < LAV_CURRENT ? version : LAV_CURRENT;
}

/* The copy of `name`, or NULL: the entry's copy when ORIGINAL is `name`
 * or ends with "/name". */
static char *copy_of(const char *name)
{
    const char *list = getenv("MTOOL_LIBS");
    static char found[4096];
    size_t n = strlen(name);
    for (const char *line = list; line && *line;) {
        const char *tab = strchr(line, '\t'), *end = strchrnul(line, '\n');
        if (!tab || tab > end)
            return NULL;
        size_t orig = (size_t)(tab - line);
        bool same = (orig == n || (orig > n && line[orig - n - 1] == '/')) &&
                    memcmp(tab - n, name, n) == 0;
        size_t len = (size_t)(end - tab - 1);
        if (same && len < sizeof found) {
            memcpy(found, tab + 1, len);
            found[len] = '\0';
            return found;
        }
        line = *end ? end + 1 : end;
    }
    return NULL;
}

char *la_objsearch(const char *name, uintptr_t *cookie, unsigned int flag)
{
    (void)cookie;
    if (flag != LA_SER_ORIG || strchr(name, '\n'))
        return (char *)name;
    char *copy = copy_of(name);
    return copy ? copy : (char *)name;
}
