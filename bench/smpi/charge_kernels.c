/*
 * charge_kernels.c -- deterministic computation for the SMPI sweep
 * (scripts/smpi_sweep.sh, SMPI_CHARGE=kernels; not part of the library).
 *
 * SMPI charges the computation between MPI calls by timing it on the host
 * (smpi/simulate-computation): on this shared 2-core machine that time
 * carries the host's noise, one 20-345 us burst per rank and call at
 * P = 256, which the algorithms' dependent rounds amplify until it is half
 * or more of the simulated time (bench/RESULTS.md, "The probe's polling
 * quantum, and what the charged split runs measure").  This file charges
 * instead a fixed price per entry or byte for the stream kernels that do
 * the library's per-entry work, linked with -Wl,--wrap=stream_... around
 * every call from another file of the library (calls inside stream.c are
 * not wrapped and are part of their caller's price).  The run then has
 * smpi/simulate-computation off: only these prices are charged.
 *
 * Prices: a core of its own, float values with 32-bit indices,
 * bench/RESULTS.md "Kernels" (bench/results/kernels.csv, 16K-256K entries,
 * where the sums of these sweeps sit):
 *   merge-add   2.5 ns per input entry (disjoint 2.5-2.7, half shared
 *               2.3-2.4; 2.4-2.7 ns per merged entry in SMPI traces of the
 *               library in place, identical indices, P = 256)
 *   scatter-add 0.8 ns per added entry (0.73-0.95)
 *   densify     0.15 ns per dense element written (1.19-1.26 ns per entry
 *               at density 1/8)
 *   copies      0.17 ns per byte written (slice: 1.33 ns per 8-byte entry)
 *               for slicing, ranges, concatenation, copies and selection
 */
#include <mpi.h>
#include <smpi/smpi.h>
#include <stdio.h>

#include "kernel/stream.h"

#define MERGE_NS_PER_INPUT_ENTRY 2.5
#define ACCUMULATE_NS_PER_ENTRY 0.8
#define DENSIFY_NS_PER_ELEMENT 0.15
#define COPY_NS_PER_BYTE 0.17

/* The kernels themselves (the linker's --wrap names them __real_). */
sv __real_stream_merge_add(const sv *a, const sv *b, void *outbuf);
void __real_stream_accumulate(sv *acc, const sv *b, int b_left);
void __real_stream_densify(const sv *s, void *dense);
sv __real_stream_slice(const sv *s, uint64_t lo, uint64_t hi, void *outbuf);
sv __real_stream_range(const sv *s, uint64_t lo, uint64_t hi, void *outbuf);
sv __real_stream_concat(const sv *parts, const uint64_t *lo, int n, uint64_t dim, int dense, void *outbuf);
sv __real_stream_copy(const sv *s, void *dst);
sv __real_stream_select(const sv *s, const uint64_t *present, uint64_t n, void *outbuf);
sv __real_stream_from_values(const sv *v, uint64_t nnz, void *outbuf);

static void charge_ns(double ns)
{
    if (ns > 0) smpi_execute_benched(ns * 1e-9);
}

/* A copy's price: the bytes of the stream it wrote (none when it failed). */
static sv charge_written(sv out)
{
    if (!sv_is_absent(&out)) charge_ns(COPY_NS_PER_BYTE * (double)stream_bytes(&out));
    return out;
}

/* The price is for two sparse operands; the kernel benchmark has none for a
 * dense one (an element-wise add), so such a run stops rather than being
 * priced wrongly: the charged sweeps keep every sum sparse. */
sv __wrap_stream_merge_add(const sv *a, const sv *b, void *outbuf)
{
    sv out;
    if (a->dense || b->dense) {
        fprintf(stderr, "charge_kernels: no price for a merge-add with a dense operand\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    out = __real_stream_merge_add(a, b, outbuf);
    charge_ns(MERGE_NS_PER_INPUT_ENTRY * (double)(a->nnz + b->nnz));
    return out;
}

void __wrap_stream_accumulate(sv *acc, const sv *b, int b_left)
{
    __real_stream_accumulate(acc, b, b_left);
    charge_ns(ACCUMULATE_NS_PER_ENTRY * (double)b->nnz);
}

void __wrap_stream_densify(const sv *s, void *dense)
{
    __real_stream_densify(s, dense);
    charge_ns(DENSIFY_NS_PER_ELEMENT * (double)s->dim);
}

sv __wrap_stream_slice(const sv *s, uint64_t lo, uint64_t hi, void *outbuf)
{
    return charge_written(__real_stream_slice(s, lo, hi, outbuf));
}

sv __wrap_stream_range(const sv *s, uint64_t lo, uint64_t hi, void *outbuf)
{
    return charge_written(__real_stream_range(s, lo, hi, outbuf));
}

sv __wrap_stream_concat(const sv *parts, const uint64_t *lo, int n, uint64_t dim, int dense, void *outbuf)
{
    return charge_written(__real_stream_concat(parts, lo, n, dim, dense, outbuf));
}

sv __wrap_stream_copy(const sv *s, void *dst)
{
    return charge_written(__real_stream_copy(s, dst));
}

sv __wrap_stream_select(const sv *s, const uint64_t *present, uint64_t n, void *outbuf)
{
    return charge_written(__real_stream_select(s, present, n, outbuf));
}

sv __wrap_stream_from_values(const sv *v, uint64_t nnz, void *outbuf)
{
    return charge_written(__real_stream_from_values(v, nnz, outbuf));
}
