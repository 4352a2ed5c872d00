/* select.c -- cost model of each algorithm (SparCML, SC'19, 5.3; Lemma 5.1:
 * log2(P) alpha + (P-1) k beta for disjoint indices, log2(P) alpha +
 * 2 (P-1)/P k beta when they coincide).
 *
 * The unknown is how much the P index sets overlap, which decides how fast
 * the sum fills in.  The union of m streams of k entries is modelled as
 *   overlap 0: k (identical sets)
 *   overlap 1: N (1 - (1 - k/N)^m) (independent uniformly random sets)
 *   overlap 2: min(N, m k) (disjoint sets)
 * interpolated linearly in between.  It starts at 1 and is re-fitted after
 * every call from the result's nnz, which all ranks know identically. */
#include "config.h"

#include <math.h>

#include "core/select.h"
#include "sparcml.h"

static double clamp(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }

static double union_at(const sparcml_problem *p, double m, double overlap)
{
    double N = (double)p->dim, k = (double)p->k_sum / p->P;
    double same = k, disjoint = fmin(N, m * k), random;
    if (N <= 0) return 0;
    random = k >= N ? N : -N * expm1(m * log1p(-k / N));
    random = clamp(random, same, disjoint);
    if (overlap <= 1) return same + overlap * (random - same);
    return random + (overlap - 1) * (disjoint - random);
}

double select_union_estimate(const sparcml_problem *p, double m)
{
    return union_at(p, m, clamp(p->overlap, 0, 2));
}

double select_learn_overlap(const sparcml_problem *p, uint64_t result_nnz)
{
    /* union_at is monotone in overlap: bisect. */
    double lo = 0, hi = 2, u = (double)result_nnz;
    for (int i = 0; i < 30; i++) {
        double mid = (lo + hi) / 2;
        if (union_at(p, p->P, mid) < u) lo = mid; else hi = mid;
    }
    return (lo + hi) / 2;
}

static int ceil_log2(int P)
{
    int l = 0;
    while ((1 << l) < P) l++;
    return l;
}

/* Bytes on the wire per value: exact, or QSGD bits plus a scale per bucket. */
static double wire_value_bytes(const sparcml_problem *p, int quantized)
{
    double vs = (double)sparcml_value_size(p->vtype);
    return quantized && p->qbits ? p->qbits / 8.0 + vs / p->qbucket : vs;
}

/* A message of n entries of a range of d elements travels dense when that
 * is smaller unquantized, then maybe quantized.  This is stream.c's rule
 * (sparcml_prefers_dense) in floating point, except that it prices indices
 * at the full vector's width, where a slice of a vector longer than 2^32
 * may use 4-byte indices. */
static int msg_is_dense(const sparcml_problem *p, double n, double d)
{
    double vs = (double)sparcml_value_size(p->vtype);
    return n * (sparcml_index_width(p->dim) + vs) >= d * vs;
}

/* Bytes of a message of n entries of a range of d elements, in a format. */
static double msg_bytes_as(const sparcml_problem *p, int dense, double n, double d)
{
    if (dense) return SPARCML_HEADER_BYTES + d * wire_value_bytes(p, 1);
    return SPARCML_HEADER_BYTES + n * (sparcml_index_width(p->dim) + wire_value_bytes(p, p->qsparse));
}

/* Bytes of a message holding n entries of a range of d elements. */
static double msg_bytes(const sparcml_problem *p, double n, double d)
{
    return msg_bytes_as(p, msg_is_dense(p, n, d), n, d);
}

/* No rank's input alone makes the result dense: the algorithms that sum
 * densely must first learn the union's size to pick the result's format
 * (dense_allreduce.c, dsar_split_allgather.c). */
static int format_uncertain(const sparcml_problem *p)
{
    return !msg_is_dense(p, (double)p->k_max, (double)p->dim);
}

/* CPU cost of QSGD per value relative to merge-adding one entry (gamma,
 * 2.5 ns).  Encoding draws a random number, divides and rounds per value:
 * 6.3-8.4 ns (bench/RESULTS.md "Kernels"), priced 6.75 ns.  Decoding looks
 * up and multiplies: 2.3-3.6 ns per value at 16K values and 5.4-5.8 ns from
 * 128K in the kernel benchmark, but less in place: on the rig (DSAR, 4 bits,
 * d = 0.5, 8 ranks on 2 cores) the whole call took 0.64-0.68 s where the
 * model without any decoding gives 0.60 s; priced 1.8 ns. */
#define QSGD_ENCODE_PER_MERGE 2.7
#define QSGD_DECODE_PER_MERGE 0.72

/* Values QSGD encodes for a message of n entries of a range of d elements
 * (and decodes at the other end): all d when the message travels dense,
 * its n values when sparse values are quantized too, else none. */
static double msg_quantized_values(const sparcml_problem *p, double n, double d)
{
    if (!p->qbits) return 0;
    if (msg_is_dense(p, n, d)) return d;
    return p->qsparse ? n : 0;
}

/* The parameters the costs are computed with: the settings' alpha, beta
 * and gamma as select_costs adjusts them for the machine. */
typedef struct model {
    double alpha, beta, gamma;
} model;

static int largest_power_of_two(int P)
{
    int p2 = 1;
    while (p2 * 2 <= P) p2 *= 2;
    return p2;
}

/* Entries of the message of a recursive-doubling round among groups of
 * `group` ranks. */
static double rd_round_entries(const sparcml_problem *p, int group)
{
    return fmax(select_union_estimate(p, group), group == 1 ? (double)p->k_max : 0);
}

/* Can rounds be pipelined at all (select.h)?  A chunk is a range stream of
 * the whole dimension (stream_range): none goes dense while the result's
 * union, at most k_sum entries, is sparse. */
static int pipeline_applies(const sparcml_problem *p)
{
    uint64_t most = p->k_sum < p->dim ? p->k_sum : p->dim;
    return p->P >= 2 && !p->qbits && p->dim >= SPARCML_PIPELINE_CHUNKS_MAX
           && !sparcml_prefers_dense(p->dim, p->vtype, most);
}

static int pipeline_chunks(const sparcml_settings *s, const model *m, const sparcml_problem *p)
{
    double hidden = 0, rounds = 0, N = (double)p->dim, c;
    if (!pipeline_applies(p) || s->pipeline_chunks == 1) return 1;
    if (s->pipeline_chunks) return (int)s->pipeline_chunks;
    for (int group = 1; group < largest_power_of_two(p->P); group *= 2, rounds++) {
        double u = rd_round_entries(p, group);
        hidden += fmin(m->beta * msg_bytes(p, u, N), m->gamma * 2 * u);
    }
    c = floor(sqrt(hidden / (rounds * m->alpha)) + 0.5);
    return (int)clamp(c, 1, SPARCML_PIPELINE_CHUNKS_MAX);
}

/* Per round a rank encodes its message, decodes its partner's and decodes
 * its own (both sides must add the same quantized operands).  Pipelined in
 * C chunks, a round costs C alpha and the larger of transfer and merge,
 * plus a chunk's share of the smaller (select.h). */
static double cost_recursive_double(const sparcml_settings *s, const model *m, const sparcml_problem *p)
{
    int p2 = largest_power_of_two(p->P), C = pipeline_chunks(s, m, p);
    double t = 0, N = (double)p->dim;
    if (p2 != p->P) /* fold in and out */
        t += 2 * m->alpha + m->beta * (msg_bytes(p, (double)p->k_max, N)
                                       + msg_bytes(p, select_union_estimate(p, p->P), N));
    for (int group = 1; group < p2; group *= 2) {
        double u = rd_round_entries(p, group), send = m->beta * msg_bytes(p, u, N), merge = m->gamma * 2 * u;
        t += C * m->alpha + fmax(send, merge) + fmin(send, merge) / C
             + m->gamma * (QSGD_ENCODE_PER_MERGE + 2 * QSGD_DECODE_PER_MERGE) * msg_quantized_values(p, u, N);
    }
    return t;
}

/* Copying an entry, or adding it into a dense sum in place, costs about a
 * quarter of merge-adding it (gamma, 2.5 ns): 0.6 ns per 8-byte entry,
 * between a memcpy's 0.2-0.5 ns per entry and the scatter-add's 0.7-1.6 ns
 * up to 256K entries (bench/RESULTS.md "Kernels"; from 1M entries both
 * leave the cache: 0.3-1.7 and 1.9-4.2 ns).  At half of gamma the model
 * would prefer recursive doubling to SSAR split on shared memory at
 * d = 1e-2, where SSAR was measured 1.15-1.28x faster. */
#define COPY_PER_MERGE 0.25

/* The sparse reduce-scatter both split algorithms share.  The owner of a
 * slice adds the P-1 incoming parts of about k/P entries one after the
 * other into a growing sum: merge-adding costs the entries of both
 * operands, in all about k + u/2 entries for a union of u (P k/2 + k when
 * disjoint, 2 k when identical); but once the sum is dense (split_phases.c)
 * a part is added into it in place, at the cost of copying its entries. */
static double cost_reduce_scatter(const model *m, const sparcml_problem *p)
{
    double P = p->P, N = (double)p->dim, k = (double)p->k_max / P, merged = 0;
    /* A slice keeps its input's format (stream_slice): sparse input, when
     * k_max is, sends sparse parts even where a dense slice is smaller. */
    double part = msg_bytes_as(p, msg_is_dense(p, (double)p->k_max, N), k, N / P);
    double quantized = msg_quantized_values(p, k, N / P);
    for (int j = 1; j < p->P; j++) {
        double sum = select_union_estimate(p, j) / P; /* of the slice, after j parts */
        merged += msg_is_dense(p, sum, N / P) ? COPY_PER_MERGE * k : sum + k;
    }
    return (P - 1) * (m->alpha + m->beta * part) + m->gamma * merged
           + m->gamma * (QSGD_ENCODE_PER_MERGE + QSGD_DECODE_PER_MERGE) * (P - 1) * quantized;
}

/* The vendor's allgather of `bytes` in all.  Both vendors gather short
 * vectors in ceil(log2 P) rounds (recursive doubling, Bruck) and long ones
 * in O(P): MPICH 4.0 runs a ring from 512 KiB in all when P is a power of
 * two, from 80 KiB otherwise (its default collective selection); Open MPI
 * 4.1 a ring or neighbour exchange (P/2 rounds) above a few KiB per rank.
 * MPICH's rule is modelled: its P - 1 rounds are also the upper bound. */
#define VENDOR_RING_BYTES_POW2 524288.0
#define VENDOR_RING_BYTES 81920.0

static double cost_vendor_allgather(const model *m, const sparcml_problem *p, double bytes)
{
    double P = p->P;
    int pow2 = largest_power_of_two(p->P) == p->P;
    int ring = bytes >= (pow2 ? VENDOR_RING_BYTES_POW2 : VENDOR_RING_BYTES);
    return (ring ? P - 1 : ceil_log2(p->P)) * m->alpha + m->beta * (P - 1) / P * bytes;
}

/* The union sizes travel in a short allgather; the gathered slices are
 * only copied into place (stream_concat). */
static double cost_ssar_split(const model *m, const sparcml_problem *p)
{
    double P = p->P, N = (double)p->dim, u = select_union_estimate(p, P);
    double gathered = msg_bytes(p, u, N) + (P - 1) * SPARCML_HEADER_BYTES;
    /* the owner encodes its slice, every rank decodes all P */
    double quantized = msg_quantized_values(p, u / P, N / P);
    return cost_reduce_scatter(m, p) + ceil_log2(p->P) * m->alpha
           + cost_vendor_allgather(m, p, gathered) + COPY_PER_MERGE * m->gamma * u
           + m->gamma * (QSGD_ENCODE_PER_MERGE + P * QSGD_DECODE_PER_MERGE) * quantized;
}

static double cost_dsar_split(const model *m, const sparcml_problem *p)
{
    double P = p->P, N = (double)p->dim, D = N * wire_value_bytes(p, 1);
    /* quantized: the owner encodes its dense slice, every rank decodes all */
    double quantized = p->qbits ? N / P : 0;
    double unions = format_uncertain(p) ? ceil_log2(p->P) * m->alpha : 0;
    return cost_reduce_scatter(m, p) + cost_vendor_allgather(m, p, D) + unions
           + m->gamma * (QSGD_ENCODE_PER_MERGE + P * QSGD_DECODE_PER_MERGE) * quantized;
}

/* The vendor picks recursive doubling or Rabenseifner; assume the better. */
static double cost_vendor_allreduce(const model *m, const sparcml_problem *p, double bytes)
{
    double P = p->P, L = ceil_log2(p->P);
    double rd = L * (m->alpha + m->beta * bytes);
    double rab = 2 * L * m->alpha + 2 * (P - 1) / P * m->beta * bytes;
    return fmin(rd, rab);
}

/* When the format is uncertain the index sets are OR-ed as bitmaps first
 * (N/8 bytes) and a sparse result is selected out of the dense sum. */
static double cost_dense(const model *m, const sparcml_problem *p)
{
    double N = (double)p->dim, D = N * sparcml_value_size(p->vtype);
    double bitmap = format_uncertain(p)
                        ? cost_vendor_allreduce(m, p, N / 8) + COPY_PER_MERGE * m->gamma * N : 0;
    return cost_vendor_allreduce(m, p, D) + bitmap + m->gamma * (double)p->k_max;
}

/* Moving a byte from one rank's memory to another's costs CPU time too:
 * it is copied into and out of a shared segment or a socket buffer.  Where
 * ranks share cores that, not the link, sets the pace: with 8 ranks on 2
 * cores (shared memory, bench/RESULTS.md) the vendor's dense allreduce of
 * 16M floats took 256-392 ms, about 2.2 ns per byte it moves, ten times the
 * 2-rank ping-pong's 0.21 ns/B, and DSAR's dense allgather was priced 2x
 * too low (re-measured 2026-11-25: 163-186 ms, 1.5-1.7 ns/B).
 * Where ranks share cores a byte costs at least 1/8 of a merged 8-byte
 * entry (gamma, scaled by the same sharing): 1.25 ns/B at the default
 * 2.5 ns and 4 ranks per core.  Where the link is slower than that (the
 * 1 Gbit/s rig: 8.3 ns/B, or the defaults) nothing changes.  A rank with a
 * core of its own copies at the speed its ping-pong beta already measures
 * (0.21 ns/B on shared memory); a floor there priced every byte of the
 * simulated 100 Gbit/s fat tree (0.08 ns/B, copies not charged) at
 * 0.31 ns/B and, with the vendor's ring allgathers priced, chose SSAR split
 * over the faster recursive doubling or the reverse at 4 of the 25
 * kernel-charged points (bench/RESULTS.md, "The vendor's ring in the
 * model"). */
#define BYTE_PER_MERGE 0.125

static model model_of(const sparcml_settings *s, const sparcml_problem *p)
{
    double share = p->ranks_per_core > 1 ? p->ranks_per_core : 1;
    /* alpha and gamma are for a rank with a core of its own (placement.h);
     * measured on the benchmark rig with 4 ranks per core: alpha 95 us per
     * collective round against a 19 us ping-pong; gamma 14-17 ns per merged
     * entry with the first merge kernel (5.5 ns on a core of its own), about
     * 6 ns (3.5-8.8) with the current one (bench/RESULTS.md "Kernels"). */
    model m = {.alpha = s->alpha * share, .beta = s->beta, .gamma = s->gamma * share};
    if (share > 1) m.beta = fmax(s->beta, BYTE_PER_MERGE * m.gamma);
    return m;
}

void select_costs(const sparcml_settings *s, const sparcml_problem *p,
                  double cost[SPARCML_ALG_COUNT_])
{
    model m = model_of(s, p);
    cost[SPARCML_ALG_AUTO] = INFINITY;
    cost[SPARCML_ALG_RECURSIVE_DOUBLE] = cost_recursive_double(s, &m, p);
    cost[SPARCML_ALG_SSAR_SPLIT_ALLGATHER] = cost_ssar_split(&m, p);
    cost[SPARCML_ALG_DSAR_SPLIT_ALLGATHER] = p->dense_fits ? cost_dsar_split(&m, p) : INFINITY;
    cost[SPARCML_ALG_DENSE] = p->dense_fits ? cost_dense(&m, p) : INFINITY;
}

int select_pipeline_chunks(const sparcml_settings *s, const sparcml_problem *p)
{
    model m = model_of(s, p);
    return pipeline_chunks(s, &m, p);
}

sparcml_algorithm select_algorithm(const sparcml_settings *s, const sparcml_problem *p)
{
    double cost[SPARCML_ALG_COUNT_];
    sparcml_algorithm best = SPARCML_ALG_RECURSIVE_DOUBLE;
    if (s->algorithm != SPARCML_ALG_AUTO) return s->algorithm;
    if (p->P == 1) return SPARCML_ALG_RECURSIVE_DOUBLE; /* zero rounds: a copy */
    select_costs(s, p, cost);
    for (int a = SPARCML_ALG_RECURSIVE_DOUBLE; a < SPARCML_ALG_COUNT_; a++)
        if (cost[a] < cost[best]) best = a;
    return best;
}

sparcml_algorithm select_transparent(const sparcml_settings *s, const sparcml_problem *p)
{
    double cost[SPARCML_ALG_COUNT_];
    model m = model_of(s, p);
    double N = (double)p->dim, vs = (double)sparcml_value_size(p->vtype);
    /* Gathering the k nonzeros into a stream copies them; the dense result
     * is written in full (N values, at the cost of copies of 8 bytes). */
    double detour = COPY_PER_MERGE * m.gamma * ((double)p->k_max + N * vs / 8);
    sparcml_algorithm best = SPARCML_ALG_DENSE;
    if (s->algorithm != SPARCML_ALG_AUTO) return s->algorithm;
    if (p->P == 1) return SPARCML_ALG_DENSE; /* the vendor's copy */
    select_costs(s, p, cost);
    cost[SPARCML_ALG_DENSE] = cost_vendor_allreduce(&m, p, N * vs); /* on the original buffers */
    for (int a = SPARCML_ALG_RECURSIVE_DOUBLE; a < SPARCML_ALG_DENSE; a++)
        if (cost[a] + detour < cost[best]) best = a;
    return best;
}

static int memo_find(const sparcml_rd_memo *m, uint64_t count, int vtype)
{
    for (int i = 0; i < m->used; i++)
        if (m->count[i] == count && m->vtype[i] == vtype) return i;
    return -1;
}

int select_memo_hit(const sparcml_rd_memo *m, uint64_t count, int vtype)
{
    return memo_find(m, count, vtype) >= 0;
}

void select_memo_note(sparcml_rd_memo *m, uint64_t count, int vtype, sparcml_algorithm chosen)
{
    int i = memo_find(m, count, vtype);
    if (chosen != SPARCML_ALG_RECURSIVE_DOUBLE) {
        if (i < 0) return;
        m->used--; /* move the last slot into the hole */
        m->count[i] = m->count[m->used];
        m->vtype[i] = m->vtype[m->used];
        if (m->next > m->used) m->next = m->used;
        return;
    }
    if (i >= 0) return;
    if (m->used < SELECT_MEMO_SLOTS) i = m->used++;
    else { i = m->next; m->next = (m->next + 1) % SELECT_MEMO_SLOTS; }
    m->count[i] = count;
    m->vtype[i] = vtype;
}

void select_memo_forget(sparcml_rd_memo *m)
{
    m->used = 0;
    m->next = 0;
}
