/* failalloc_preload.c -- test support only (never part of libsparcml).
 *
 * Makes aligned_allocs fail on purpose, as if this rank ran out of
 * memory: the next FAILALLOC_ARM ones (a number; any other value is 1) of
 * at least FAILALLOC_MIN_BYTES (default 1 MiB) and at most
 * FAILALLOC_MAX_BYTES (default: no limit) after the program set
 * FAILALLOC_ARM in its environment (the test sets it on one rank, right
 * before the call that is to fail); those return NULL with ENOMEM, and the
 * last disarms.  Every other allocation is served by posix_memalign, so
 * that a sanitizer's allocator stays in charge. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

void *aligned_alloc(size_t alignment, size_t size);

void *aligned_alloc(size_t alignment, size_t size)
{
    const char *min = getenv("FAILALLOC_MIN_BYTES"), *max = getenv("FAILALLOC_MAX_BYTES");
    const char *arm = getenv("FAILALLOC_ARM");
    void *p = NULL;
    if (arm && size >= (min ? strtoull(min, NULL, 10) : 1u << 20) && (!max || size <= strtoull(max, NULL, 10))) {
        long left = strtol(arm, NULL, 10) - 1;
        char more[24];
        if (left > 0) {
            snprintf(more, sizeof more, "%ld", left);
            setenv("FAILALLOC_ARM", more, 1);
        } else {
            unsetenv("FAILALLOC_ARM");
        }
        errno = ENOMEM;
        return NULL;
    }
    if (alignment < sizeof(void *)) alignment = sizeof(void *);
    if (posix_memalign(&p, alignment, size) != 0) {
        errno = ENOMEM;
        return NULL;
    }
    return p;
}
