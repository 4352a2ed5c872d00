/* stream_format.c -- views of streams, and the validation of a received one.
 *
 * A view (sv) locates a stream's header, indices and values in its
 * buffer.  stream_parse is the one gate for bytes from outside: it checks
 * every field of the header, the size against the buffer and, for a
 * sparse stream, that the indices are strictly increasing and below dim,
 * and names the first fault (sparcml(7), errors).  The other views trust
 * streams this library wrote. */
#include "config.h"

#include "kernel/stream_impl.h"

/* ------------------------------------------------------------------ views */

static void stream_set_pointers(sv *s)
{
    char *p = (char *)s->base + SPARCML_HEADER_BYTES;
    if (s->dense) {
        s->idx = NULL;
        s->val = p;
    } else {
        s->idx = p;
        s->val = p + sparcml_round8(s->nnz * s->iw);
    }
}

sv stream_view(const void *buf)
{
    sparcml_header h;
    memcpy(&h, buf, sizeof h);
    sv s = {.base = (void *)buf,
            .dim = h.dim,
            .nnz = h.nnz,
            .vtype = h.value_type,
            .iw = h.index_width,
            .vs = (unsigned)sparcml_value_size(h.value_type),
            .dense = h.format == SPARCML_DENSE};
    stream_set_pointers(&s);
    return s;
}

sv stream_init(void *buf, uint64_t dim, int vtype, uint64_t nnz, int dense)
{
    sv s;
    sparcml_write_header(buf, dim, vtype, nnz, dense ? SPARCML_DENSE : SPARCML_SPARSE);
    s = stream_view(buf);
    if (!dense) memset((char *)s.idx + nnz * s.iw, 0, sparcml_round8(nnz * s.iw) - nnz * s.iw);
    return s;
}

uint64_t stream_bytes(const sv *s)
{
    return s->dense ? sparcml_dense_bytes(s->dim, s->vtype)
                    : sparcml_sparse_bytes(s->dim, s->vtype, s->nnz);
}

sv stream_copy(const sv *s, void *dst)
{
    memcpy(dst, s->base, stream_bytes(s));
    return stream_view(dst);
}

/* ------------------------------------------------------------- validation */

static int header_reason(const sparcml_header *h, int want_vtype)
{
    if (h->magic != SPARCML_MAGIC) return SPARCML_R_BAD_MAGIC;
    if (h->version != SPARCML_VERSION) return SPARCML_R_BAD_VERSION;
    if (sparcml_value_size(h->value_type) == 0) return SPARCML_R_BAD_VALUE_TYPE;
    if (h->value_type != want_vtype) return SPARCML_R_VALUE_TYPE_TAG;
    if (h->format > SPARCML_DENSE) return SPARCML_R_BAD_FORMAT;
    if (h->reserved != 0) return SPARCML_R_BAD_RESERVED;
    if (h->dim > SPARCML_MAX_DIM) return SPARCML_R_DIM_TOO_LARGE;
    if (h->index_width != sparcml_index_width(h->dim)) return SPARCML_R_BAD_INDEX_WIDTH;
    if (h->nnz > h->dim) return SPARCML_R_NNZ_GT_DIM;
    if (h->format == SPARCML_DENSE && h->nnz != h->dim) return SPARCML_R_DENSE_NNZ;
    return SPARCML_R_OK;
}

/* The first fault of n indices of width iw: not below dim, or not above
 * the one before (a duplicate or out of order); *where gets its entry. */
KERNEL_INLINE int check_indices(unsigned iw, const void *ix, uint64_t n, uint64_t dim, uint64_t *where)
{
    for (uint64_t i = 0; i < n; i++) {
        uint64_t x = index_at(ix, iw, i), before = i > 0 ? index_at(ix, iw, i - 1) : 0;
        if (x >= dim) { *where = i; return SPARCML_R_INDEX_GE_DIM; }
        if (i > 0 && x <= before) {
            *where = i;
            return x == before ? SPARCML_R_DUPLICATE : SPARCML_R_UNSORTED;
        }
    }
    return SPARCML_R_OK;
}

/* Whether n indices of width iw are strictly increasing and below dim: in
 * blocks of a fixed count without a branch, which compilers vectorize (a
 * fraction of check_indices' instructions per entry); a stream that fails
 * is checked again by check_indices, which names the first fault. */
enum { INDEX_BLOCK = 32 };
KERNEL_INLINE int indices_valid(unsigned iw, const void *ix, uint64_t n, uint64_t dim)
{
    uint64_t i = 1;
    if (n == 0) return 1;
    for (; i + INDEX_BLOCK <= n; i += INDEX_BLOCK) {
        int bad = 0;
        for (unsigned j = 0; j < INDEX_BLOCK; j++) bad |= index_at(ix, iw, i + j) <= index_at(ix, iw, i + j - 1);
        if (bad) return 0;
    }
    for (; i < n; i++)
        if (index_at(ix, iw, i) <= index_at(ix, iw, i - 1)) return 0;
    return index_at(ix, iw, n - 1) < dim; /* increasing: the last is the largest */
}

static int parse_indices(unsigned iw, const void *ix, uint64_t n, uint64_t dim, uint64_t *where)
{
    if (iw == 4 ? indices_valid(4, ix, n, dim) : indices_valid(8, ix, n, dim)) return SPARCML_R_OK;
    return iw == 4 ? check_indices(4, ix, n, dim, where) : check_indices(8, ix, n, dim, where);
}

int stream_parse(const void *buf, uint64_t avail, int want_vtype, sv *out, uint64_t *where)
{
    sparcml_header h;
    int reason;
    *where = 0;
    if (!buf) return SPARCML_R_NULL_BUFFER;
    if ((uintptr_t)buf % SPARCML_WORD_BYTES) return SPARCML_R_UNALIGNED;
    if (avail < SPARCML_HEADER_BYTES) return SPARCML_R_SHORT_BUFFER;
    memcpy(&h, buf, sizeof h);
    reason = header_reason(&h, want_vtype);
    if (reason != SPARCML_R_OK) return reason;
    *out = stream_view(buf);
    if (stream_bytes(out) > avail) return SPARCML_R_STREAM_OVERFLOW;
    if (out->dense) return SPARCML_R_OK;
    return parse_indices(out->iw, out->idx, out->nnz, out->dim, where);
}
