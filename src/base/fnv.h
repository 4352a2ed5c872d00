/* fnv.h -- FNV-1a, the library's one hash (of settings, of machine ids). */
#ifndef SPARCML_FNV_H
#define SPARCML_FNV_H

#include <stddef.h>
#include <stdint.h>

#define FNV_OFFSET UINT64_C(1469598103934665603)

/* h extended by n bytes at p. */
static inline uint64_t fnv_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * UINT64_C(1099511628211);
    return h;
}

#endif
