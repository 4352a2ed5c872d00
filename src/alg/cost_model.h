/* cost_model.h -- the problem an allreduce poses, as the cost functions
 * of the algorithms see it, and the model they price it with (alpha: a
 * message's latency, beta: a byte's transfer, gamma: a merged entry).
 *
 * Every input comes from the agreement step or from state that is
 * identical on all ranks, so every rank computes the same costs bit for
 * bit and picks the same algorithm (a mismatch would deadlock). */
#ifndef SPARCML_COST_MODEL_H
#define SPARCML_COST_MODEL_H

#include <stdint.h>

#include "alg/algorithm_list.h"
#include "alg/plan.h"
#include "runtime/call.h"

/* The algorithms' ids (alg/algorithms.h): auto and one per row of the
 * list.  What the selector prices a call's sum by (a route) is an
 * algorithm, or COST_VENDOR, the vendor's allreduce of the application's
 * own buffers (cost_vendor_allreduce of the values; transparent mode's
 * vendor route), which is no row of the table.  Routes index the tables
 * kept per route above (the selector's timed prices, the statistics). */
#define COST_ALGORITHM_ROW(ID, STEM) +1
enum { COST_ALGORITHMS = 1 SPARCML_ALGORITHM_LIST(COST_ALGORITHM_ROW), COST_VENDOR = COST_ALGORITHMS, COST_ROUTES };
#undef COST_ALGORITHM_ROW
typedef int cost_route;

typedef struct sparcml_problem {
    int P;
    uint64_t dim;
    int vtype;
    uint64_t k_max, k_sum;
    int dense_fits;  /* recv capacity holds a dense result */
    double overlap;  /* 0: all index sets coincide, 1: random, 2: disjoint */
    int qbits;       /* QSGD bits per value on the wire (0: exact values) */
    uint32_t qbucket;
    int qsparse;     /* sparse values are quantized too */
    double ranks_per_core; /* alpha and gamma scale with it (<= 1: a core each) */
    int one_node;          /* bytes move through shared memory: copies by the ranks' cores */
} sparcml_problem;

/* The parameters the costs are computed with (core/select.c adjusts the
 * settings' alpha, beta and gamma for the machine), in seconds. */
/* SPARCML_SPLIT_GATHER: who gathers the split algorithms' messages. */
typedef enum cost_gather { COST_GATHER_MODEL, COST_GATHER_VENDOR, COST_GATHER_DOUBLING, COST_GATHER_RING } cost_gather;

typedef struct cost_model {
    double alpha, beta, gamma;
    double link_beta; /* beta before the floor for shared cores (core/select.c); 0: beta */
    uint64_t pipeline_chunks; /* SPARCML_PIPELINE_CHUNKS: 0 the model, 1 off, else forced */
    int gather;               /* cost_gather: the model's choice or a forced one */
    int copy_bound; /* a byte moves as a copy on the cores that merge (shared cores, one node): no overlap */
    double vendor_gather; /* the vendor's allgather(v) over its price here (>= 1; 0 counts as 1) */
} cost_model;

/* CPU cost of QSGD per value relative to merge-adding one entry (gamma,
 * which the calibration measures by timing the merge).  Encoding draws a
 * random number and rounds per value (8 values a step where the CPU has
 * AVX2): the kernel's float time over the merge's.  Decoding multiplies a
 * level by the bucket's step, or looks it up, and in a call writes the
 * dense result: the price is what DSAR calls with QSGD need to meet their
 * prices.  Doubles take twice that; gamma is a float merge and so are
 * these prices.  Measurements: bench/RESULTS.md, "QSGD on the dense parts"
 * and "Kernels". */
#define COST_QSGD_ENCODE_PER_MERGE 0.65
#define COST_QSGD_DECODE_PER_MERGE 0.37

/* Copying an entry, or adding it into a dense sum in place, costs about a
 * quarter of merge-adding it (gamma): between a memcpy's and the
 * scatter-add's time per entry.  At half of gamma the model would prefer
 * recursive doubling to SSAR split on shared memory where SSAR is faster
 * (bench/RESULTS.md, "Kernels" and "Cost model: the measurements behind
 * the design"). */
#define COST_COPY_PER_MERGE 0.25


double cost_clamp(double x, double lo, double hi);
int cost_ceil_log2(int P);
int cost_largest_power_of_two(int P);

/* Distinct indices in the sum of m of the P streams at a given overlap,
 * and at the problem's. */
double cost_union_at(const sparcml_problem *p, double m, double overlap);
double cost_union_estimate(const sparcml_problem *p, double m);
/* The smallest overlap in [0, 2] at which the union of m streams has at
 * least u indices (2 where it never has). */
double cost_overlap_of_union(const sparcml_problem *p, double m, double u);

/* The CPU time of QSGD for `encoded` values encoded and `decoded` decoded,
 * in merged entries (times gamma: seconds). */
double cost_qsgd(double encoded, double decoded);

/* Bytes on the wire per value: exact, or QSGD bits plus a scale per bucket. */
double cost_wire_value_bytes(const sparcml_problem *p, int quantized);

/* A message of n entries of a range of d elements: whether it travels
 * dense, its bytes in a given format and in its own, and the values QSGD
 * encodes for it. */
int cost_msg_is_dense(const sparcml_problem *p, double n, double d);
double cost_msg_bytes_as(const sparcml_problem *p, int dense, double n, double d);
double cost_msg_bytes(const sparcml_problem *p, double n, double d);
double cost_msg_quantized_values(const sparcml_problem *p, double n, double d);

/* No rank's input alone makes the result dense. */
int cost_format_uncertain(const sparcml_problem *p);

/* The vendor's allgather of `bytes` in all, and its allreduce of `bytes`. */
double cost_vendor_allgather(const cost_model *m, const sparcml_problem *p, double bytes);
double cost_vendor_allreduce(const cost_model *m, const sparcml_problem *p, double bytes);

/* The library's own allgather of parts of any sizes, `bytes` in all
 * (alg/split_gather.c), by recursive doubling (Bruck's where P is not a
 * power of two) and by a ring; who gathers which bytes (forced, or where
 * the model prices it lowest); and what the gather that runs costs. */
double cost_doubling_allgather(const cost_model *m, const sparcml_problem *p, double bytes);
double cost_ring_allgather(const cost_model *m, const sparcml_problem *p, double bytes);
alg_gather_plan cost_gather_plan(const cost_model *m, const sparcml_problem *p);
double cost_split_gather(const cost_model *m, const sparcml_problem *p, double bytes);

#endif
