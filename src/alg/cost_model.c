/* cost_model.c -- the alpha-beta-gamma cost model the algorithms' cost
 * functions share (SparCML, SC'19, 5.3; Lemma 5.1: log2(P) alpha +
 * (P-1) k beta for disjoint indices, log2(P) alpha + 2 (P-1)/P k beta when
 * they coincide).
 *
 * The unknown is how much the P index sets overlap, which decides how fast
 * the sum fills in.  The union of m streams of k entries is modelled as
 *   overlap 0: k (identical sets)
 *   overlap 1: N (1 - (1 - k/N)^m) (independent uniformly random sets)
 *   overlap 2: min(N, m k) (disjoint sets)
 * interpolated linearly in between (core/select.c re-fits it after every
 * call from the result's nnz, which all ranks know identically). */
#include "config.h"

#include <math.h>

#include "alg/cost_model.h"
#include "base/mpi_flavour.h"
#include "sparcml.h"

double cost_clamp(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }

/* The union of m streams at overlap 0, 1 and 2 (dimension > 0). */
typedef struct union_anchors {
    double same, random, disjoint;
} union_anchors;

static union_anchors anchors(const sparcml_problem *p, double m)
{
    double N = (double)p->dim, k = (double)p->k_sum / p->P;
    double disjoint = fmin(N, m * k), random = k >= N ? N : -N * expm1(m * log1p(-k / N));
    return (union_anchors){.same = k, .random = cost_clamp(random, k, disjoint), .disjoint = disjoint};
}

double cost_union_at(const sparcml_problem *p, double m, double overlap)
{
    union_anchors a;
    if (p->dim == 0) return 0;
    a = anchors(p, m);
    if (overlap <= 1) return a.same + overlap * (a.random - a.same);
    return a.random + (overlap - 1) * (a.disjoint - a.random);
}

/* The inverse of the two lines of cost_union_at.  Each division happens
 * only where u lies strictly above the segment's start and at most at its
 * end: its length is positive. */
double cost_overlap_of_union(const sparcml_problem *p, double m, double u)
{
    union_anchors a;
    if (p->dim == 0) return u > 0 ? 2 : 0;
    a = anchors(p, m);
    if (u <= a.same) return 0;
    if (u <= a.random) return (u - a.same) / (a.random - a.same);
    if (u < a.disjoint) return 1 + (u - a.random) / (a.disjoint - a.random);
    return 2;
}

double cost_union_estimate(const sparcml_problem *p, double m)
{
    return cost_union_at(p, m, cost_clamp(p->overlap, 0, 2));
}

int cost_ceil_log2(int P)
{
    int l = 0;
    while ((1 << l) < P) l++;
    return l;
}

/* Bytes on the wire per value: exact, or QSGD bits plus a scale per bucket. */
double cost_wire_value_bytes(const sparcml_problem *p, int quantized)
{
    double vs = (double)sparcml_value_size(p->vtype);
    return quantized && p->qbits ? p->qbits / 8.0 + vs / p->qbucket : vs;
}

/* A message of n entries of a range of d elements travels dense when that
 * is smaller unquantized, then maybe quantized.  This is stream.c's rule
 * (sparcml_prefers_dense) in floating point, except that it prices indices
 * at the full vector's width, where a slice of a vector longer than 2^32
 * may use 4-byte indices. */
int cost_msg_is_dense(const sparcml_problem *p, double n, double d)
{
    double vs = (double)sparcml_value_size(p->vtype);
    return n * (sparcml_index_width(p->dim) + vs) >= d * vs;
}

/* Bytes of a message of n entries of a range of d elements, in a format. */
double cost_msg_bytes_as(const sparcml_problem *p, int dense, double n, double d)
{
    if (dense) return SPARCML_HEADER_BYTES + d * cost_wire_value_bytes(p, 1);
    return SPARCML_HEADER_BYTES + n * (sparcml_index_width(p->dim) + cost_wire_value_bytes(p, p->qsparse));
}

/* Bytes of a message holding n entries of a range of d elements. */
double cost_msg_bytes(const sparcml_problem *p, double n, double d)
{
    return cost_msg_bytes_as(p, cost_msg_is_dense(p, n, d), n, d);
}

/* No rank's input alone makes the result dense: the algorithms that sum
 * densely must first learn the union's size to pick the result's format
 * (dense_allreduce.c, dsar_split_allgather.c). */
int cost_format_uncertain(const sparcml_problem *p)
{
    return !cost_msg_is_dense(p, (double)p->k_max, (double)p->dim);
}

int cost_largest_power_of_two(int P)
{
    int p2 = 1;
    while (p2 * 2 <= P) p2 *= 2;
    return p2;
}

/* The vendor's allgather of `bytes` in all: ceil(log2 P) rounds for short
 * vectors, a ring of P - 1 from its threshold on (base/mpi_flavour.h,
 * which gives MPICH's rule for both MPIs).  Where the calibration measured
 * the vendor's gather slower than that price (MPICH on shared memory, its
 * temporary buffers' copies: bench/RESULTS.md, "Split gathers"), its
 * factor scales the price. */
double cost_vendor_allgather(const cost_model *m, const sparcml_problem *p, double bytes)
{
    double P = p->P, moved = (P - 1) / P * bytes;
    double rounds = bytes >= (double)flv_allgather_ring_bytes(p->P) ? P - 1 : cost_ceil_log2(p->P);
    double price = rounds * m->alpha + m->beta * moved;
    double link_beta = m->link_beta > 0 ? m->link_beta : m->beta;
    if (!(m->vendor_gather > 1)) return price;
    /* The factor was measured against the price at the link's beta (core/
     * calibrate.c), and the timed gathers hold whatever the cores' sharing
     * added: so it scales that price, never below what any transfer pays. */
    return fmax(price, m->vendor_gather * (rounds * m->alpha + link_beta * moved));
}

/* The library's exchange (alg/split_gather.c) gathers in either of two
 * patterns, every rank receiving every part but its own once:
 *  - recursive doubling (P a power of two) or Bruck's dissemination:
 *    ceil(log2 P) rounds, each to a new partner, the last ones carrying
 *    half the bytes;
 *  - a ring: P - 1 rounds of one part each, always the same two partners.
 * Over TCP links the ring moves large gathers faster, on shared memory the
 * two are about alike (bench/RESULTS.md, "Split gathers").  So
 * recursive doubling's bytes are priced COST_DOUBLING_BYTE_PENALTY dearer,
 * and the ring runs from where its extra rounds cost at most that
 * fraction of the bytes' time. */
#define COST_DOUBLING_BYTE_PENALTY (1.0 / 8)

double cost_doubling_allgather(const cost_model *m, const sparcml_problem *p, double bytes)
{
    double P = p->P;
    return cost_ceil_log2(p->P) * m->alpha + (1 + COST_DOUBLING_BYTE_PENALTY) * m->beta * (P - 1) / P * bytes;
}

double cost_ring_allgather(const cost_model *m, const sparcml_problem *p, double bytes)
{
    double P = p->P;
    return (P - 1) * m->alpha + m->beta * (P - 1) / P * bytes;
}

/* A byte count priced in double as a gather plan's size (beyond 2^63:
 * never reached). */
static uint64_t plan_bytes(double bytes) { return bytes < 0x1p63 ? (uint64_t)bytes : UINT64_MAX; }

/* The fewest bytes in all the ring gathers as cheaply as recursive
 * doubling: (P - 1 - ceil(log2 P)) alpha <= penalty beta (P-1)/P bytes. */
static uint64_t ring_from(const cost_model *m, const sparcml_problem *p)
{
    double extra = (p->P - 1 - cost_ceil_log2(p->P)) * m->alpha;
    if (extra <= 0) return 0;
    if (!(m->beta > 0)) return UINT64_MAX;
    return plan_bytes(ceil(extra / (COST_DOUBLING_BYTE_PENALTY * m->beta) * p->P / (p->P - 1)));
}

/* Forced, one gather runs at every size.  By the model: where the
 * calibration measured the vendor's gather slower than the library's
 * recursive doubling prices its bytes (a factor above 1 + the penalty),
 * the library's exchange at every size: doubling below the ring's point,
 * the ring above.
 * Else the vendor's runs its own recursive doubling or Bruck below its
 * ring's threshold, priced no higher than the library's (its factor at
 * most the penalty, and no steps of the schedule); above it the library's,
 * by recursive doubling, which saves the ring's extra rounds, up to where
 * its ring prices lower, and by the ring from there.  The library's ring
 * prices no higher than the vendor's, and is the one measured no slower:
 * on shared memory MPICH's ring copies through temporary buffers (which
 * the calibration's 128 KiB, gathered by MPICH's recursive doubling where
 * P is a power of two, need not show), on the emulated cluster the two
 * are alike (bench/RESULTS.md, "Split gathers"). */
alg_gather_plan cost_gather_plan(const cost_model *m, const sparcml_problem *p)
{
    const uint64_t never = UINT64_MAX;
    switch (m->gather) {
    case COST_GATHER_VENDOR: return (alg_gather_plan){.library_from = never, .ring_from = never};
    case COST_GATHER_DOUBLING: return (alg_gather_plan){.library_from = 0, .ring_from = never};
    case COST_GATHER_RING: return (alg_gather_plan){.library_from = 0, .ring_from = 0};
    default: break;
    }
    if (m->vendor_gather > 1 + COST_DOUBLING_BYTE_PENALTY)
        return (alg_gather_plan){.library_from = 0, .ring_from = ring_from(m, p)};
    if (p->P - 1 <= cost_ceil_log2(p->P))
        return (alg_gather_plan){.library_from = never, .ring_from = never};
    return (alg_gather_plan){.library_from = flv_allgather_ring_bytes(p->P), .ring_from = ring_from(m, p)};
}

double cost_split_gather(const cost_model *m, const sparcml_problem *p, double bytes)
{
    alg_gather_plan g = cost_gather_plan(m, p);
    switch (alg_gather_for(&g, plan_bytes(bytes))) {
    case ALG_GATHER_DOUBLING: return cost_doubling_allgather(m, p, bytes);
    case ALG_GATHER_RING: return cost_ring_allgather(m, p, bytes);
    default: return cost_vendor_allgather(m, p, bytes);
    }
}

/* The vendor picks recursive doubling or Rabenseifner; assume the better.
 * Either also sums what it receives, a dense add in place of every byte
 * in every round (priced as a copy of 8 bytes, COST_COPY_PER_MERGE gamma)
 * for recursive doubling, of (P-1)/P of them for Rabenseifner's reduce-
 * scatter: the term that decides on shared memory, where a byte's transfer
 * costs about as little as adding it.  Without it the vendor's allreduce
 * on shared memory priced as little as transparent mode's dense write of
 * the result alone, and the calibrated model chose the vendor where the
 * sparse run is many times faster (bench/RESULTS.md, "Cost model: the
 * measurements behind the design"). */
double cost_vendor_allreduce(const cost_model *m, const sparcml_problem *p, double bytes)
{
    double P = p->P, L = cost_ceil_log2(p->P), add = COST_COPY_PER_MERGE * m->gamma * bytes / 8;
    double rd = L * (m->alpha + m->beta * bytes + add);
    double rab = 2 * L * m->alpha + (P - 1) / P * (2 * m->beta * bytes + add);
    return fmin(rd, rab);
}

double cost_qsgd(double encoded, double decoded)
{
    return COST_QSGD_ENCODE_PER_MERGE * encoded + COST_QSGD_DECODE_PER_MERGE * decoded;
}

/* Values QSGD encodes for a message of n entries of a range of d elements
 * (and decodes at the other end): all d when the message travels dense,
 * its n values when sparse values are quantized too, else none. */
double cost_msg_quantized_values(const sparcml_problem *p, double n, double d)
{
    if (!p->qbits) return 0;
    if (cost_msg_is_dense(p, n, d)) return d;
    return p->qsparse ? n : 0;
}

