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
#include "sparcml.h"

double cost_clamp(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }

double cost_union_at(const sparcml_problem *p, double m, double overlap)
{
    double N = (double)p->dim, k = (double)p->k_sum / p->P;
    double same = k, disjoint = fmin(N, m * k), random;
    if (N <= 0) return 0;
    random = k >= N ? N : -N * expm1(m * log1p(-k / N));
    random = cost_clamp(random, same, disjoint);
    if (overlap <= 1) return same + overlap * (random - same);
    return random + (overlap - 1) * (disjoint - random);
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

/* The vendor's allgather of `bytes` in all.  Both vendors gather short
 * vectors in ceil(log2 P) rounds (recursive doubling, Bruck) and long ones
 * in O(P): MPICH 4.0 runs a ring from 512 KiB in all when P is a power of
 * two, from 80 KiB otherwise (its default collective selection); Open MPI
 * 4.1 a ring or neighbour exchange (P/2 rounds) above a few KiB per rank.
 * MPICH's rule is modelled: its P - 1 rounds are also the upper bound.
 * Where the calibration measured the vendor's gather slower than that
 * price (MPICH on shared memory: 2-3 times an exchange of the same bytes,
 * its temporary buffers' copies), its factor scales the price. */
#define VENDOR_RING_BYTES_POW2 524288.0
#define VENDOR_RING_BYTES 81920.0

static double vendor_ring_bytes(const sparcml_problem *p)
{
    return cost_largest_power_of_two(p->P) == p->P ? VENDOR_RING_BYTES_POW2 : VENDOR_RING_BYTES;
}

double cost_vendor_allgather(const cost_model *m, const sparcml_problem *p, double bytes)
{
    double P = p->P, moved = (P - 1) / P * bytes;
    double rounds = bytes >= vendor_ring_bytes(p) ? P - 1 : cost_ceil_log2(p->P);
    double price = rounds * m->alpha + m->beta * moved;
    double link_beta = m->link_beta > 0 ? m->link_beta : m->beta;
    if (!(m->vendor_gather > 1)) return price;
    /* The factor was measured against the price at the link's beta (core/
     * calibrate.c), and the timed gathers hold whatever the cores' sharing
     * added: so it scales that price, never below what any transfer pays. */
    return fmax(price, m->vendor_gather * (rounds * m->alpha + link_beta * moved));
}

/* Recursive doubling (P a power of two) or Bruck's dissemination: ceil(log2
 * P) rounds, and every rank receives every part but its own, once. */
double cost_library_allgather(const cost_model *m, const sparcml_problem *p, double bytes)
{
    double P = p->P;
    return cost_ceil_log2(p->P) * m->alpha + m->beta * (P - 1) / P * bytes;
}

/* Both gathers move the same bytes in no more rounds for the library's.
 * So where the vendor's was measured slower than its price (a factor
 * above 1) the library's is the cheaper at every size; else exactly where
 * the vendor's ring runs and takes more rounds than ceil(log2 P) (P >= 4);
 * where both take the same rounds the vendor's keeps it: its rounds run
 * inside the MPI library, not as steps of the schedule. */
uint64_t cost_library_gather_min_bytes(const cost_model *m, const sparcml_problem *p)
{
    if (m->gather != COST_GATHER_MODEL) return m->gather == COST_GATHER_LIBRARY ? 0 : UINT64_MAX;
    if (m->vendor_gather > 1) return 0;
    if (p->P - 1 <= cost_ceil_log2(p->P)) return UINT64_MAX;
    return (uint64_t)vendor_ring_bytes(p);
}

int cost_gather_by_library(const cost_model *m, const sparcml_problem *p, double bytes)
{
    uint64_t from = cost_library_gather_min_bytes(m, p);
    return from != UINT64_MAX && bytes >= (double)from;
}

double cost_split_gather(const cost_model *m, const sparcml_problem *p, double bytes)
{
    return cost_gather_by_library(m, p, bytes) ? cost_library_allgather(m, p, bytes)
                                               : cost_vendor_allgather(m, p, bytes);
}

/* The vendor picks recursive doubling or Rabenseifner; assume the better. */
double cost_vendor_allreduce(const cost_model *m, const sparcml_problem *p, double bytes)
{
    double P = p->P, L = cost_ceil_log2(p->P);
    double rd = L * (m->alpha + m->beta * bytes);
    double rab = 2 * L * m->alpha + 2 * (P - 1) / P * m->beta * bytes;
    return fmin(rd, rab);
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

