/* stream.h -- sparse/dense streams: validation, merge-add, slicing, assembly.
 *
 * A stream is the wire format of include/sparcml.h: header, then sorted
 * indices and values (sparse) or dim values (dense).  Every message the
 * algorithms exchange is itself a stream, so a message is sparse or dense
 * independently and its header says which. */
#ifndef SPARCML_STREAM_H
#define SPARCML_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "sparcml.h"
#include "base/errors.h"

/* A parsed view of a stream that lives in some buffer. */
typedef struct sv {
    void *base;      /* the header */
    void *idx;       /* sparse: nnz indices of width iw; dense: NULL */
    void *val;       /* values */
    uint64_t dim;
    uint64_t nnz;    /* stored entries (== dim when dense) */
    int vtype;       /* enum sparcml_value_type */
    unsigned iw;     /* index width in bytes */
    unsigned vs;     /* value size in bytes */
    int dense;
} sv;

/* "No stream": what a rank contributes while only its agreement record
 * travels (core/op_ride.c), and what any sum with it becomes. */
static inline sv sv_absent(void) { sv s = {0}; return s; }
static inline int sv_is_absent(const sv *s) { return s->base == NULL; }

/* Validate the stream at buf, at most avail bytes long, whose value type
 * must be want_vtype.  Returns SPARCML_R_OK or the reason it is malformed;
 * *where receives the offending entry (for unsorted/out-of-range indices). */
int stream_parse(const void *buf, uint64_t avail, int want_vtype, sv *out, uint64_t *where);

/* View of a stream that this library wrote (no validation). */
sv stream_view(const void *buf);

/* Write a header for (dim, vtype, nnz, dense) at buf and return its view.
 * Index padding is zeroed; indices and values are left for the caller. */
sv stream_init(void *buf, uint64_t dim, int vtype, uint64_t nnz, int dense);

/* Total bytes of the stream, and rounded up to 8 (the size we send). */
uint64_t stream_bytes(const sv *s);

/* Upper bound of the bytes merge_add(a, b) may write. */
uint64_t stream_merge_bound(const sv *a, const sv *b);

/* out = a + b (element-wise; `a` is always the left operand of every
 * addition, which keeps NaN payloads identical wherever the same pair is
 * merged).  outbuf needs stream_merge_bound(a, b) bytes and must not
 * overlap a or b; where a and b have the same indices nothing is written
 * beyond the result.  The result is dense when either input is dense or
 * when its sparse form would not be smaller. */
sv stream_merge_add(const sv *a, const sv *b, void *outbuf);

/* acc += b in place, acc dense.  b_left: b is the left operand. */
void stream_accumulate(sv *acc, const sv *b, int b_left);

/* Entries of s with index in [lo, hi), re-based to start at 0: a stream of
 * dimension hi - lo in the format of s.  A sparse slice stays sparse even
 * where a dense one would be smaller: its indices say which entries a rank
 * supplied, which a dense slice could not (a stored zero is not an absent
 * index).  stream_slice_bytes gives the exact size slice would write. */
uint64_t stream_slice_bytes(const sv *s, uint64_t lo, uint64_t hi);
sv stream_slice(const sv *s, uint64_t lo, uint64_t hi, void *outbuf);

/* Entries of sparse s with index in [lo, hi), indices and dimension kept:
 * a chunk of a pipelined exchange (ssar_recursive_double.c).  Range streams
 * of consecutive ranges join back into one with stream_concat (all lo 0). */
uint64_t stream_range_bytes(const sv *s, uint64_t lo, uint64_t hi);
sv stream_range(const sv *s, uint64_t lo, uint64_t hi, void *outbuf);

/* Write the dim values of s (zeros where nothing is stored) to dense:
 * one sweep, each element written once. */
void stream_densify(const sv *s, void *dense);

/* Presence bitmaps: bit x of present[x / 64] says index x is in a union of
 * index sets.  A dense sum keeps one beside it, because its zeros cannot
 * tell a sum that cancelled (an entry of a sparse result) from an index
 * nobody supplied (not an entry). */
void stream_mark_present(const sv *s, uint64_t *present); /* s sparse */
uint64_t stream_count_present(const uint64_t *present, uint64_t dim);

/* The n entries of dense s whose bit is set in present (NULL: all of
 * them), as a sparse stream at outbuf (sparcml_sparse_bytes(dim, vtype, n)). */
sv stream_select(const sv *s, const uint64_t *present, uint64_t n, void *outbuf);

/* Concatenate the consecutive slices parts[0..n) (part r covers [lo[r],
 * lo[r] + parts[r].dim)) into one stream of dimension dim: dense, or sparse
 * (then every part must be sparse). */
sv stream_concat(const sv *parts, const uint64_t *lo, int n, uint64_t dim, int dense, void *outbuf);

/* Copy a stream to dst (may not overlap). */
sv stream_copy(const sv *s, void *dst);

/* Number of nonzero values among elements [lo, hi) of a dense stream
 * (NaN counts as nonzero). */
uint64_t stream_count_nonzero(const sv *s, uint64_t lo, uint64_t hi);

/* A dense vector of dim values at `values`, with no header (transparent
 * mode): only val is meaningful, for the functions below. */
sv stream_dense_view(const void *values, uint64_t dim, int vtype);

/* The most entries stream_gather_nonzero may gather into a buffer of
 * `bytes` for a vector of dim values: as many as a sparse stream of that
 * size holds, and no more than a sparse stream of dim may hold (beyond
 * that the dense form is smaller).  0 when bytes is below a header. */
uint64_t stream_gather_capacity(uint64_t dim, int vtype, uint64_t bytes);

/* One read of the dense vector v (stream_dense_view): counts its nonzeros
 * (as stream_count_nonzero) and gathers them into a sparse stream at
 * outbuf, of at most cap entries (stream_gather_capacity of outbuf's
 * bytes).  Returns the count; *out receives the stream -- the bytes
 * stream_from_values writes for that count -- or is absent when the count
 * exceeds cap (outbuf then holds scratch).  Zeros of either sign are
 * dropped, so every value gathered is nonzero (NaN and Inf included). */
uint64_t stream_gather_nonzero(const sv *v, uint64_t cap, void *outbuf, sv *out);

/* The stream of a dense vector v with nnz nonzeros (stream_count_nonzero):
 * sparse, holding exactly the nonzeros, while that is smaller, else dense.
 * Zeros of either sign become +0.0 (sparcml(7), transparent mode).  Absent
 * only when v has more than nnz nonzeros and the sparse form was chosen. */
sv stream_from_values(const sv *v, uint64_t nnz, void *outbuf);

/* Tests and benchmarks (the result is the same either way): nonzero makes
 * the merge-add, the gather, the densify sweep, QSGD's encoder and decoder
 * and the top-k filter (kernel/topk.h) run their portable loops even where
 * the CPU has AVX2; 0 restores the run-time choice. */
void stream_force_portable(int on);

/* Whether the AVX2 kernels run (checked per call: a few loads). */
int stream_avx2_runs(void);

/* The bytes of a presence bitmap of dim indices (whole 64-bit words). */
static inline uint64_t stream_presence_bytes(uint64_t dim) { return (dim + 63) / 64 * 8; }

/* The bounds of P nearly equal ranges of [0, dim): offsets[0..P] (the
 * split algorithms' slices, pipelined chunks). */
void stream_split_bounds(uint64_t dim, int P, uint64_t *offsets);

#endif
