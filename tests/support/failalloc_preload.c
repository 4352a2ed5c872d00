/* failalloc_preload.c -- test support only (never part of libsparcml).
 *
 * Makes one aligned_alloc fail on purpose, as if this rank ran out of
 * memory: the first one of at least FAILALLOC_MIN_BYTES (default 1 MiB)
 * after the program set FAILALLOC_ARM in its environment (the test sets it
 * on one rank, right before the call that is to fail); that one returns
 * NULL with ENOMEM and disarms.  Every other allocation is served by
 * posix_memalign, so that a sanitizer's allocator stays in charge. */
#include <errno.h>
#include <stdlib.h>

void *aligned_alloc(size_t alignment, size_t size);

void *aligned_alloc(size_t alignment, size_t size)
{
    const char *min = getenv("FAILALLOC_MIN_BYTES");
    void *p = NULL;
    if (getenv("FAILALLOC_ARM") && size >= (min ? strtoull(min, NULL, 10) : 1u << 20)) {
        unsetenv("FAILALLOC_ARM");
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
