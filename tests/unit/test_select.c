/* The cost model and the selection rule. */
#include <math.h>
#include <string.h>

#include "alg/split_phases.h"
#include "core/op.h"
#include "core/select.h"
#include "core/settings.h"
#include "sparcml.h"
#include "suites.h"

/* No timed prices, no trials: the model alone (core/select.h). */
static const select_timed untimed;

static sparcml_settings defaults(void)
{
    sparcml_settings s = {0};
    s.algorithm = SPARCML_ALG_AUTO;
    s.alpha = 3e-6;
    s.beta = 0.25e-9;
    s.gamma = 1e-9;
    return s;
}

static sparcml_problem problem(int P, uint64_t dim, uint64_t k, double overlap)
{
    return (sparcml_problem){.P = P, .dim = dim, .vtype = SPARCML_FLOAT, .k_max = k, .k_sum = k * (uint64_t)P,
                             .dense_fits = 1, .overlap = overlap, .ranks_per_core = 1};
}

START_TEST(union_estimate_endpoints)
{
    sparcml_problem p = problem(8, 1000000, 1000, 0);
    ck_assert_double_eq_tol(cost_union_estimate(&p, 8), 1000, 1e-6);
    p.overlap = 2;
    ck_assert_double_eq_tol(cost_union_estimate(&p, 8), 8000, 1e-6);
    p.overlap = 1; /* random: 1e6 (1 - (1 - 1e-3)^8) */
    ck_assert_double_eq_tol(cost_union_estimate(&p, 8), 1e6 * (1 - pow(1 - 1e-3, 8)), 1e-3);
    p = problem(8, 100, 100, 1); /* dense inputs: the union is everything */
    ck_assert_double_eq_tol(cost_union_estimate(&p, 3), 100, 1e-9);
}
END_TEST

START_TEST(learning_inverts_the_estimate)
{
    for (double o = 0.05; o < 2; o += 0.1) {
        sparcml_problem p = problem(6, 5000000, 20000, o);
        double u = cost_union_estimate(&p, 6);
        p.overlap = 1;
        ck_assert_double_eq_tol(select_learn_overlap(&p, (uint64_t)llround(u)), o, 1e-3);
    }
}
END_TEST

/* The union of 8 streams of 1000 of 1e6 indices: 1000 identical, 8000
 * disjoint, 1e6 (1 - (1 - 1e-3)^8) random; the overlap of a union size
 * on the line between two of them, the smallest where a size recurs. */
START_TEST(learning_at_the_anchors)
{
    sparcml_problem p = problem(8, 1000000, 1000, 1);
    double random = 1e6 * (1 - pow(1 - 1e-3, 8));
    ck_assert_double_eq(cost_overlap_of_union(&p, 8, 500), 0);
    ck_assert_double_eq(cost_overlap_of_union(&p, 8, 1000), 0);
    ck_assert_double_eq_tol(cost_overlap_of_union(&p, 8, 1000 + 0.5 * (random - 1000)), 0.5, 1e-9);
    ck_assert_double_eq_tol(cost_overlap_of_union(&p, 8, random), 1, 1e-9);
    ck_assert_double_eq_tol(cost_overlap_of_union(&p, 8, random + 0.25 * (8000 - random)), 1.25, 1e-9);
    ck_assert_double_eq(cost_overlap_of_union(&p, 8, 8000), 2);
    ck_assert_double_eq(cost_overlap_of_union(&p, 8, 9000), 2);
    p = problem(8, 100, 100, 1); /* dense inputs: every overlap gives 100 */
    ck_assert_double_eq(cost_overlap_of_union(&p, 8, 100), 0);
    ck_assert_double_eq(cost_overlap_of_union(&p, 8, 101), 2);
    p = problem(8, 0, 0, 1);
    ck_assert_double_eq(cost_overlap_of_union(&p, 8, 0), 0);
    ck_assert_double_eq(cost_overlap_of_union(&p, 8, 1), 2);
}
END_TEST

START_TEST(forced_algorithm_wins)
{
    sparcml_settings s = defaults();
    sparcml_problem p = problem(4, 1000, 1, 1);
    for (int a = 1; a < SPARCML_ALG_COUNT_; a++) {
        s.algorithm = a;
        ck_assert_int_eq(select_algorithm(&s, &p, &untimed), a);
    }
}
END_TEST

START_TEST(regimes)
{
    sparcml_settings s = defaults();
    sparcml_problem p;
    double c[SPARCML_ALG_COUNT_];
    /* Tiny k on a huge vector: latency-bound, recursive doubling. */
    p = problem(8, 16u << 20, 16, 1);
    ck_assert_int_eq(select_algorithm(&s, &p, &untimed), SPARCML_ALG_RECURSIVE_DOUBLE);
    /* Everything dense already: no sparse algorithm can beat the vendor's
     * dense allreduce by much; never SSAR with its index overhead. */
    p = problem(8, 1u << 20, 1u << 20, 1);
    ck_assert_int_ne(select_algorithm(&s, &p, &untimed), SPARCML_ALG_SSAR_SPLIT_ALLGATHER);
    ck_assert_int_ne(select_algorithm(&s, &p, &untimed), SPARCML_ALG_RECURSIVE_DOUBLE);
    /* A result that does not fit as dense excludes the dense outputs. */
    p.dense_fits = 0;
    select_costs(&s, &p, c);
    ck_assert(isinf(c[SPARCML_ALG_DENSE]) && isinf(c[SPARCML_ALG_DSAR_SPLIT_ALLGATHER]));
    ck_assert(select_algorithm(&s, &p, &untimed) == SPARCML_ALG_RECURSIVE_DOUBLE
              || select_algorithm(&s, &p, &untimed) == SPARCML_ALG_SSAR_SPLIT_ALLGATHER);
    /* Costs grow with k. */
    for (int a = 1; a < SPARCML_ALG_COUNT_; a++) {
        double c2[SPARCML_ALG_COUNT_];
        sparcml_problem q = problem(8, 1u << 24, 1000, 1), r = problem(8, 1u << 24, 100000, 1);
        select_costs(&s, &q, c);
        select_costs(&s, &r, c2);
        ck_assert(c[a] <= c2[a]);
    }
}
END_TEST

/* The price a run is timed against is the one the selector compares,
 * restrictions included (INFINITY where one rules the problem out). */
START_TEST(one_price_is_the_selectors)
{
    sparcml_settings s = defaults();
    sparcml_problem ps[3] = {problem(8, 16u << 20, 16, 1), problem(3, 1u << 20, 1u << 20, 1),
                             problem(4, 1u << 24, 100000, 1)};
    ps[1].dense_fits = 0;
    for (int i = 0; i < 3; i++) {
        double c[SPARCML_ALG_COUNT_];
        select_costs(&s, &ps[i], c);
        for (int a = 1; a < SPARCML_ALG_COUNT_; a++) {
            double one = select_price(&s, &ps[i], (sparcml_algorithm)a);
            ck_assert(one == c[a] || (isinf(one) && isinf(c[a])));
        }
    }
}
END_TEST

/* Pipelined rounds: none where they cannot apply (QSGD, a sum that could
 * go dense, P = 1) or where nothing is worth hiding (tiny messages); the
 * most chunks where alpha is negligible; SPARCML_PIPELINE_CHUNKS forces a
 * count only where pipelining applies, and 1 turns it off.  The cost of
 * recursive doubling falls with pipelining exactly when chunks are chosen. */
START_TEST(pipeline_chunks)
{
    sparcml_settings s = defaults();
    sparcml_problem big = problem(8, 16u << 20, 1u << 17, 1), p;
    double with[SPARCML_ALG_COUNT_], without[SPARCML_ALG_COUNT_];
    /* The three rounds' messages hold u = 131072, 261120 and 518176 random
     * entries, 8 bytes each: beta m = 2 gamma u = 2 ns per entry, so 1.82 ms
     * can be hidden; C = sqrt(1.82 ms / (3 alpha)), rounded: 14.2 (at most
     * 8) at alpha = 3 us, 3.9 at 40 us, 2.5 at 100 us. */
    ck_assert_int_eq(select_pipeline_chunks(&s, &big, SPARCML_ALG_RECURSIVE_DOUBLE), SPARCML_PIPELINE_CHUNKS_MAX);
    /* Rows without a chunks function never pipeline, whatever the problem. */
    for (int a = SPARCML_ALG_AUTO + 1; a < SPARCML_ALG_COUNT_; a++)
        if (!sparcml_algorithms[a]->chunks) ck_assert_int_eq(select_pipeline_chunks(&s, &big, a), 1);
    s.alpha = 40e-6;
    ck_assert_int_eq(select_pipeline_chunks(&s, &big, SPARCML_ALG_RECURSIVE_DOUBLE), 4);
    s.alpha = 100e-6;
    ck_assert_int_eq(select_pipeline_chunks(&s, &big, SPARCML_ALG_RECURSIVE_DOUBLE), 2);
    p = problem(8, 16u << 20, 16, 1);
    ck_assert_int_eq(select_pipeline_chunks(&s, &p, SPARCML_ALG_RECURSIVE_DOUBLE), 1);
    s.alpha = 1e-9;
    p = big;
    p.qbits = 4;
    ck_assert_int_eq(select_pipeline_chunks(&s, &p, SPARCML_ALG_RECURSIVE_DOUBLE), 1);
    p = problem(8, 1u << 20, 1u << 17, 1); /* 8 x 2^17 entries could fill 2^20: dense */
    ck_assert_int_eq(select_pipeline_chunks(&s, &p, SPARCML_ALG_RECURSIVE_DOUBLE), 1);
    p = problem(1, 16u << 20, 1u << 17, 1);
    ck_assert_int_eq(select_pipeline_chunks(&s, &p, SPARCML_ALG_RECURSIVE_DOUBLE), 1);
    s.pipeline_chunks = 3;
    ck_assert_int_eq(select_pipeline_chunks(&s, &big, SPARCML_ALG_RECURSIVE_DOUBLE), 3);
    p = big;
    p.qbits = 4;
    ck_assert_int_eq(select_pipeline_chunks(&s, &p, SPARCML_ALG_RECURSIVE_DOUBLE), 1);
    s = defaults();
    select_costs(&s, &big, with);
    s.pipeline_chunks = 1;
    select_costs(&s, &big, without);
    ck_assert(with[SPARCML_ALG_RECURSIVE_DOUBLE] < without[SPARCML_ALG_RECURSIVE_DOUBLE]);
    ck_assert(with[SPARCML_ALG_SSAR_SPLIT_ALLGATHER] == without[SPARCML_ALG_SSAR_SPLIT_ALLGATHER]);
}
END_TEST

/* The 1 Gbit/s rig of bench/RESULTS.md with its measured alpha, beta and
 * gamma: 8 ranks share 2 cores there, so a rank's merge costs about 4 times
 * the per-core default (recursive doubling at d = 1e-3 spent 3.4-4.1 ms
 * above the 7.7 ms of its bare message exchange on 235K merged entries:
 * 14-17 ns per entry). */
static sparcml_settings rig_settings(void)
{
    sparcml_settings s = defaults();
    s.alpha = 17.1e-6;
    s.beta = 8.31e-9;
    s.gamma = 17e-9;
    return s;
}

#define ALG_BIT(a) (1u << (a))

/* For P = 8, N = 16M floats, random indices, the model must choose among
 * what was measured fastest on the rig (bench/results/
 * sweep_rig_density_r2.csv and _r3.csv, 2026-11-22, quiet machine); where
 * two algorithms were within run-to-run noise (< 10 %), either is right:
 * d = 1e-3: recursive doubling 11.1-11.8 ms, SSAR split 10.5-13.1 ms;
 * d = 1e-2: SSAR split 107 ms, recursive doubling 122 ms (13 % slower);
 *           pipelined (SPARCML_PIPELINE_CHUNKS, 2026-11-23) recursive
 *           doubling 125-132 ms against SSAR's 129-158 ms and whole-message
 *           rounds' 138-149 ms in the same run (bench/results/
 *           pipeline_rig.csv, 3 rounds): either;
 * d = 0.05: SSAR split 482-485 ms, DSAR 609-613 ms, recursive doubling
 *           592-646 ms; pipelined recursive doubling 505-536 ms against
 *           SSAR's 519-526 ms and whole-message rounds' 638-665 ms in one
 *           run (bench/results/pipeline_rig_d005.txt): either;
 * d = 0.1 and 0.25: DSAR 703-712 and 868 ms, SSAR 750-760 and 915 ms,
 *           recursive doubling 1080-1105 and 1927 ms;
 * d = 0.5: DSAR, SSAR, dense within noise (1.18-1.27 s), recursive
 *           doubling 2.15 s. */
static void check_rig_points(const sparcml_settings *s, double ranks_per_core)
{
    const uint64_t N = 16u << 20;
    const unsigned rd = ALG_BIT(SPARCML_ALG_RECURSIVE_DOUBLE), ssar = ALG_BIT(SPARCML_ALG_SSAR_SPLIT_ALLGATHER),
                   dsar = ALG_BIT(SPARCML_ALG_DSAR_SPLIT_ALLGATHER), dense = ALG_BIT(SPARCML_ALG_DENSE);
    struct { double d; unsigned right; } pts[] = {
        {1e-3, rd | ssar}, {1e-2, rd | ssar}, {0.05, rd | ssar}, {0.1, dsar | ssar}, {0.25, dsar | ssar},
        {0.5, dsar | ssar | dense},
    };
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
        sparcml_problem p = problem(8, N, (uint64_t)(pts[i].d * (double)N), 1);
        sparcml_algorithm a;
        p.ranks_per_core = ranks_per_core;
        a = select_algorithm(s, &p, &untimed);
        ck_assert_msg(ALG_BIT(a) & pts[i].right, "d = %g, %g ranks per core: chose %d", pts[i].d,
                      ranks_per_core, (int)a);
    }
}

/* A row says how the records ride on it and, exactly where they do, the
 * room they take in the pools (core/op_ride.c calls ride_scratch of every
 * row that rides) and, riding its first phase, from where it resumes. */
START_TEST(riding_rows_say_their_room)
{
    for (int a = SPARCML_ALG_AUTO + 1; a < SPARCML_ALG_COUNT_; a++) {
        const sparcml_algorithm_desc *d = sparcml_algorithms[a];
        ck_assert_int_eq(d->ride != ALG_RIDES_NOT, d->ride_scratch != NULL);
        ck_assert_int_eq(d->ride == ALG_RIDES_PHASE, d->ride_phase && d->resume);
    }
}
END_TEST

START_TEST(rig_measured_ordering)
{
    sparcml_settings s = rig_settings();
    check_rig_points(&s, 1);
}
END_TEST

/* The library's own defaults (settings.c: alpha 20 us, beta 8.3 ns/B, gamma
 * 2.5 ns, for a rank with a core of its own) on the rig, where 8 ranks share
 * 2 cores: scaled by the 4 ranks per core the library detects, they choose
 * what was measured fastest too (sweep_rig_density_r3.csv). */
static const char *no_variables(const char *name)
{
    (void)name;
    return NULL;
}

START_TEST(rig_defaults_scaled_by_ranks_per_core)
{
    sparcml_settings s;
    ck_assert_int_eq(settings_parse(&s, no_variables, NULL), 0);
    check_rig_points(&s, 4);
}
END_TEST

/* With QSGD the model must count the CPU time of encoding and decoding: on
 * the rig at d = 0.01 (bench/results/qsgd_rig_r2.csv) DSAR with 4 and 2
 * bits sends fewer bytes than recursive doubling (8.6 and 5.0 MB against
 * 9.3 MB per rank) but took 289-351 ms and 253-261 ms against 126-128 ms:
 * encoding and decoding all N values costs more than the bytes saved.
 * (SSAR split sends these slices sparse and unquantized, as without QSGD.) */
START_TEST(rig_measured_ordering_qsgd)
{
    sparcml_settings s = rig_settings();
    for (int bits = 2; bits <= 4; bits += 2) {
        sparcml_problem p = problem(8, 16u << 20, (16u << 20) / 100, 1);
        p.qbits = bits;
        p.qbucket = 512;
        ck_assert_msg(select_algorithm(&s, &p, &untimed) != SPARCML_ALG_DSAR_SPLIT_ALLGATHER,
                      "bits = %d: chose DSAR", bits);
    }
}
END_TEST

/* Where ranks share cores and the beta floor binds, a byte moves as a copy
 * on the cores the merges need, so pipelined rounds hide nothing: on shared
 * memory (4 and 8 ranks on 2 cores, N = 4M floats, d = 1e-3 and 1e-2, the
 * calibrated alpha, beta and gamma below) the model's 3 to 8 chunks made
 * recursive doubling 1.11-1.46 times slower than whole messages
 * (bench/results/pipeline_shm_calibrated.csv).  The same values with a core
 * each, and the rig's 1 Gbit/s links shared 4 ways (where 8 chunks paid
 * 17-21 % at d = 0.05), still pipeline; with a core each on one node
 * (shared memory) they do where a byte costs more than a copy, not where
 * it costs no more (bench/results/pipeline_copies_compare_shm.csv); a
 * forced count still holds, and then only adds latencies. */
START_TEST(pipeline_off_where_copies_share_cores)
{
    sparcml_settings s = defaults();
    double one[SPARCML_ALG_COUNT_], three[SPARCML_ALG_COUNT_];
    s.alpha = 0.5e-6;
    s.beta = 0.3e-9;
    s.gamma = 1.7e-9;
    for (int P = 4; P <= 8; P *= 2)
        for (double d = 1e-3; d < 0.02; d *= 10) {
            sparcml_problem p = problem(P, 4u << 20, (uint64_t)(d * (4u << 20)), 1);
            p.ranks_per_core = P / 2;
            ck_assert_int_eq(select_pipeline_chunks(&s, &p, SPARCML_ALG_RECURSIVE_DOUBLE), 1);
            p.ranks_per_core = 1;
            ck_assert_int_gt(select_pipeline_chunks(&s, &p, SPARCML_ALG_RECURSIVE_DOUBLE), 1);
            /* a core each on one node: bytes at 0.3 ns/B cost more than a
             * copy (gamma / 8 = 0.21), at 0.2 no more: shared memory */
            p.one_node = 1;
            ck_assert_int_gt(select_pipeline_chunks(&s, &p, SPARCML_ALG_RECURSIVE_DOUBLE), 1);
            s.beta = 0.2e-9;
            ck_assert_int_eq(select_pipeline_chunks(&s, &p, SPARCML_ALG_RECURSIVE_DOUBLE), 1);
            s.beta = 0.3e-9;
        }
    {
        sparcml_problem p = problem(8, 4u << 20, 4194, 1), rig = problem(8, 16u << 20, (16u << 20) / 20, 1);
        p.ranks_per_core = 4;
        s.pipeline_chunks = 3;
        ck_assert_int_eq(select_pipeline_chunks(&s, &p, SPARCML_ALG_RECURSIVE_DOUBLE), 3);
        select_costs(&s, &p, three);
        s.pipeline_chunks = 1;
        select_costs(&s, &p, one);
        ck_assert_double_eq_tol(three[SPARCML_ALG_RECURSIVE_DOUBLE] - one[SPARCML_ALG_RECURSIVE_DOUBLE],
                                (3 - 1) * 3 * 4 * s.alpha, 1e-12); /* (C - 1) alpha, 3 rounds, 4 per core */
        s = rig_settings();
        s.gamma = 2.5e-9;
        rig.ranks_per_core = 4;
        ck_assert_int_gt(select_pipeline_chunks(&s, &rig, SPARCML_ALG_RECURSIVE_DOUBLE), 1);
    }
}
END_TEST

/* Shared memory, 8 ranks on 2 cores (bench/results/shm_alpha_beta.txt:
 * collective alpha 16.7 us, 2-rank ping-pong beta 0.21 ns/B; gamma 17 ns as
 * on the rig), P = 8, N = 16M floats, random indices: the model must choose
 * among what was measured fastest there (bench/results/
 * sweep_shm_density_r4.csv; within 10 % either is right):
 * d = 1e-5: recursive doubling 0.24 ms, SSAR 0.68;
 * d = 1e-4, 1e-3: SSAR 0.87, 5.59 ms, recursive doubling 0.96, 5.98;
 * d = 1e-2: SSAR 46 ms, recursive doubling 59;
 * d = 0.05: SSAR 180 ms, DSAR 182, recursive doubling 287, dense 301;
 * d = 0.1, 0.25: DSAR 250, 250 ms; SSAR 294, 305; dense 392, 311;
 * d = 0.5: dense 365 ms, DSAR 385, SSAR 429.
 * Before the copy floor on beta (select.c, BYTE_PER_MERGE) the model chose
 * the dense allreduce from d = 0.05 on: 1.24-1.67x slower.  The 8 ranks
 * share 2 cores, so the measured alpha and gamma are 4 times a core's own
 * and the floor applies. */
START_TEST(shm_measured_ordering)
{
    sparcml_settings s = defaults();
    const uint64_t N = 16u << 20;
    const unsigned rd = ALG_BIT(SPARCML_ALG_RECURSIVE_DOUBLE), ssar = ALG_BIT(SPARCML_ALG_SSAR_SPLIT_ALLGATHER),
                   dsar = ALG_BIT(SPARCML_ALG_DSAR_SPLIT_ALLGATHER), dense = ALG_BIT(SPARCML_ALG_DENSE);
    struct { double d; unsigned right; } pts[] = {
        {1e-5, rd}, {1e-4, rd | ssar}, {1e-3, rd | ssar}, {1e-2, ssar}, {0.05, ssar | dsar},
        {0.1, dsar}, {0.25, dsar}, {0.5, dense | dsar},
    };
    s.alpha = 16.66e-6 / 4;
    s.beta = 0.2138e-9;
    s.gamma = 17e-9 / 4;
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
        sparcml_problem p = problem(8, N, (uint64_t)(pts[i].d * (double)N), 1);
        sparcml_algorithm a;
        p.ranks_per_core = 4;
        a = select_algorithm(&s, &p, &untimed);
        ck_assert_msg(ALG_BIT(a) & pts[i].right, "d = %g: chose %d", pts[i].d, (int)a);
    }
}
END_TEST

/* Transparent mode, P = 2 on shared memory (a core each), 16M floats at
 * random positions, the model as the calibration measured it there
 * (alpha 4.6-6.0 us, beta 0.032-0.044 ns/B, gamma 1.3-1.7 ns): every
 * sparse algorithm beat the vendor (bench/results/
 * transparent_vendor_timed_shm.csv; medians over 3 rounds, ms):
 * d = 1e-3: 7.1-13.4 against 234;  d = 1e-2: 18.7-46.1 against 269;
 * d = 0.1: 38.0-58.5 against 231;  d = 1: 53.8-81.0 against 206.
 * Which sparse algorithm is the tagged selector's business (tested above);
 * here the vendor must lose.  The model alone prices its allreduce of 64
 * MiB at about 6 ms, so at d = 0.1 and 1 it loses only with its time as
 * the calls measured it (t.timed_over: 170 ms, the fastest run's
 * median, over the model's price), on a call the rationing lets try a
 * sparse algorithm never timed (t.may_try; without it the timed vendor
 * stays: core/timed.h). */
START_TEST(transparent_shm_measured)
{
    sparcml_settings s = defaults();
    const uint64_t N = 16u << 20;
    const unsigned sparse = ALG_BIT(SPARCML_ALG_RECURSIVE_DOUBLE) | ALG_BIT(SPARCML_ALG_SSAR_SPLIT_ALLGATHER)
                            | ALG_BIT(SPARCML_ALG_DSAR_SPLIT_ALLGATHER);
    struct { double d, vendor; } pts[] = {{1e-3, 0}, {1e-2, 0}, {1e-3, 0.170}, {0.1, 0.170}, {1, 0.170}};
    static const double models[][3] = {{4.6e-6, 0.032e-9, 1.3e-9}, {6.0e-6, 0.044e-9, 1.7e-9}};
    for (size_t m = 0; m < 2; m++)
        for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
            sparcml_problem p = problem(2, N, (uint64_t)(pts[i].d * (double)N), 1);
            cost_route a;
            s.alpha = models[m][0];
            s.beta = models[m][1];
            s.gamma = models[m][2];
            select_timed t = {.may_try = 1};
            t.timed_over[COST_VENDOR] = pts[i].vendor / select_vendor_price(&s, &p);
            a = select_transparent(&s, &p, &t);
            ck_assert_msg(ALG_BIT(a) & sparse, "d = %g, vendor %g s: chose %d", pts[i].d, pts[i].vendor, (int)a);
        }
}
END_TEST

/* Transparent mode's choice is the cheapest route, whatever the rows'
 * order: each sparse algorithm at its model price times its timed multiple
 * plus the gather and the dense result's write (a copy of the k nonzeros
 * and of the N values, 8 bytes a copy, at the model's gamma), against the
 * vendor at its price times its multiple. */
START_TEST(transparent_cheapest_route)
{
    sparcml_settings s = defaults();
    const double ds[] = {1e-4, 1e-3, 1e-2, 0.1, 0.5};
    const int Ps[] = {2, 3, 4, 8, 16};
    unsigned seed = 7;
    for (size_t i = 0; i < sizeof Ps / sizeof Ps[0]; i++)
        for (size_t j = 0; j < sizeof ds / sizeof ds[0]; j++)
            for (int o = 0; o <= 2; o++)
                for (int t = 0; t < 8; t++) {
                    sparcml_problem p = problem(Ps[i], 1u << 22, (uint64_t)(ds[j] * (1u << 22)), o);
                    select_timed tm = {0};
                    double cost[COST_ROUTES], detour;
                    cost_route want = COST_VENDOR;
                    for (int a = SPARCML_ALG_AUTO + 1; a < COST_ROUTES; a++)
                        tm.timed_over[a] = 1 + 2.0 * (double)(rand_r(&seed) % 1000) / 1000;
                    select_costs(&s, &p, cost);
                    detour = COST_COPY_PER_MERGE * select_model(&s, &p).gamma * ((double)p.k_max + (double)p.dim / 2);
                    cost[COST_VENDOR] = select_vendor_price(&s, &p) * tm.timed_over[COST_VENDOR];
                    for (int a = SPARCML_ALG_AUTO + 1; a < SPARCML_ALG_COUNT_; a++)
                        if (sparcml_algorithms[a]->sparse && cost[a] * tm.timed_over[a] + detour < cost[want])
                            want = a, cost[a] = cost[a] * tm.timed_over[a] + detour;
                    ck_assert_msg(select_transparent(&s, &p, &tm) == want, "P = %d, d = %g, overlap %d, draw %d: "
                                  "chose %d, cheapest %d", Ps[i], ds[j], o, t, (int)select_transparent(&s, &p, &tm),
                                  (int)want);
                }
}
END_TEST

/* The density bands of the timed multiples: a factor of 4 each, the
 * boundaries on the side of the sparser band; 1e-3 and 1e-4 of 16M apart,
 * 0.3 and 1 together; no entries, and the sparsest, in the last. */
START_TEST(timed_bands_by_density)
{
    const uint64_t M16 = UINT64_C(1) << 24;
    ck_assert_int_eq(timed_band(65536, 65536), 0);
    ck_assert_int_eq(timed_band(65536, 16385), 0);
    ck_assert_int_eq(timed_band(65536, 16384), 1);
    ck_assert_int_eq(timed_band(65536, 4097), 1);
    ck_assert_int_eq(timed_band(65536, 4096), 2);
    ck_assert_int_eq(timed_band(M16, M16 / 10 * 3), timed_band(M16, M16));
    ck_assert_int_eq(timed_band(M16, M16 / 1000), 4);  /* (1/1024, 1/256] */
    ck_assert_int_eq(timed_band(M16, M16 / 10000), 6); /* (1/16384, 1/4096] */
    ck_assert_int_eq(timed_band(M16, 1), TIMED_BANDS - 1);
    ck_assert_int_eq(timed_band(M16, 0), TIMED_BANDS - 1);
    ck_assert_int_eq(timed_band(3, 1), 0); /* below 4 entries: one band */
}
END_TEST

/* One rank's timed table driven as op.c drives it, for `calls` calls of
 * one key: each agreement carries the rank's own lookup (timed_lower),
 * the kind's selector chooses under the rationing, and the run takes
 * odd_ms[route] on the odd calls, even_ms[route] on the even ones
 * (ms[COST_VENDOR]: transparent mode's vendor).  Every call checks the
 * rationing's bound (trial calls at most the larger of TIMED_TRIAL_CALLS
 * and 1 + calls / 4), counting as a
 * trial the calls the rule makes one: a call that runs a route its
 * agreement carried no multiple of while it carried some starts a trial,
 * and the trial's next TIMED_TRIAL_CALLS - 1 calls of that route are
 * its.  Returns the last choice, *trials the trial calls, and each call's
 * choice in ran[] (unless NULL).  Compression times a selection route
 * whole: its price holds the route's passes (select_compress_detour). */
static cost_route drive_alternating(const sparcml_settings *s, sparcml_problem p, const double odd_ms[COST_ROUTES],
                                    const double even_ms[COST_ROUTES], select_route select, int calls,
                                    int *trials, cost_route *ran)
{
    static timed_table table;
    timed_key key = {.kind = &table, .count = (MPI_Count)p.dim, .vtype = p.vtype};
    cost_route a = SPARCML_ALG_AUTO, trying = SPARCML_ALG_AUTO;
    int trial_left = 0;
    memset(&table, 0, sizeof table);
    *trials = 0;
    for (int call = 1; call <= calls; call++) {
        uint64_t ppm[COST_ROUTES];
        double price[COST_ROUTES];
        int timed = 0;
        timed_trial trial;
        select_timed t;
        timed_lookup(&table, key, p.dim, p.k_max, ppm);
        trial = timed_lower(&table, key, p.dim, p.k_max, ppm);
        t = (select_timed){.may_try = trial.may_start, .trying = trial.trying};
        for (int i = 0; i < COST_ROUTES; i++) {
            t.timed_over[i] = 1e-6 * (double)ppm[i];
            timed |= ppm[i] != 0;
        }
        a = select(s, &p, &t);
        if (ran) ran[call - 1] = a;
        if (trial_left == 0 || a != trying) {
            trying = a;
            trial_left = timed && ppm[a] == 0 ? TIMED_TRIAL_CALLS : 0;
        }
        if (trial_left > 0) (*trials)++, trial_left--;
        ck_assert_msg(*trials <= TIMED_TRIAL_CALLS || *trials <= 1 + call / TIMED_TRIAL_SHARE,
                      "call %d: %d trial calls", call, *trials);
        select_costs(s, &p, price);
        price[COST_VENDOR] = select_vendor_price(s, &p);
        if (select == select_compressed && a != COST_VENDOR) price[a] += select_compress_detour(s, &p);
        timed_note_run(&table, &(timed_run){.key = key, .dim = p.dim, .k_max = p.k_max, .route = a,
                                            .seconds = 1e-3 * (call % 2 ? odd_ms : even_ms)[a], .price = price[a]});
    }
    return a;
}

/* Every call of a route as fast as the others (ms[route]). */
static cost_route drive(const sparcml_settings *s, sparcml_problem p, const double ms[COST_ROUTES],
                        select_route select, int calls, int *trials, cost_route *ran)
{
    return drive_alternating(s, p, ms, ms, select, calls, trials, ran);
}

/* The timed prices at work: each call runs the selector's choice, which
 * then costs at least the multiple of its model price it was timed at.
 * Transparent mode, P = 2 on shared memory, 16M floats, the two
 * calibrated models above, the times each route took there
 * (bench/results/transparent_vendor_timed_shm.csv, medians, ms: RD, SSAR
 * split, DSAR split, the vendor): once the other three routes could each
 * have had their trial (the first at once, the k-th from call
 * TIMED_TRIAL_SHARE * (k * TIMED_TRIAL_CALLS - 1): trial_share), the call after the third's
 * last runs the fastest route of the measurement, having tried at most a
 * quarter of the calls (plus one), and so do all later ones. */
START_TEST(timed_prices_settle_on_the_fastest)
{
    sparcml_settings s = defaults();
    const uint64_t N = 16u << 20;
    static const double models[][3] = {{4.6e-6, 0.032e-9, 1.3e-9}, {6.0e-6, 0.044e-9, 1.7e-9}};
#define MS(rd, ssar, dsar, vendor)                                                      \
    {[SPARCML_ALG_RECURSIVE_DOUBLE] = rd, [SPARCML_ALG_SSAR_SPLIT_ALLGATHER] = ssar,    \
     [SPARCML_ALG_DSAR_SPLIT_ALLGATHER] = dsar, [COST_VENDOR] = vendor}
    struct { double d, ms[COST_ROUTES]; cost_route fastest; } pts[] = {
        {1e-3, MS(7.1, 11.0, 13.4, 234), SPARCML_ALG_RECURSIVE_DOUBLE},
        {1e-2, MS(46.1, 36.3, 18.7, 269), SPARCML_ALG_DSAR_SPLIT_ALLGATHER},
        {0.1, MS(38.0, 56.9, 58.5, 231), SPARCML_ALG_RECURSIVE_DOUBLE},
        {1, MS(53.8, 62.2, 81.0, 206), SPARCML_ALG_RECURSIVE_DOUBLE},
    };
#undef MS
    for (size_t m = 0; m < 2; m++)
        for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
            sparcml_problem p = problem(2, N, (uint64_t)(pts[i].d * (double)N), 1);
            const int settled = TIMED_TRIAL_SHARE * (3 * TIMED_TRIAL_CALLS - 1) + TIMED_TRIAL_CALLS;
            int trials, more;
            s.alpha = models[m][0];
            s.beta = models[m][1];
            s.gamma = models[m][2];
            ck_assert_msg(drive(&s, p, pts[i].ms, select_transparent, settled, &trials, NULL) == pts[i].fastest,
                          "model %zu, d = %g: not settled", m, pts[i].d);
            ck_assert_int_eq(drive(&s, p, pts[i].ms, select_transparent, 2 * settled, &more, NULL), pts[i].fastest);
            ck_assert_int_eq(more, trials); /* nothing left to try */
        }
}
END_TEST

/* Compression's route (select_compressed) with timed prices, driven as
 * op.c and compress.c drive it, every sparse algorithm's route taking the
 * mode's time.  Measured (ms per call):
 *  - shared memory, P = 4 on 2 cores, a 4.5 MiB gradient (1179555 floats,
 *    d = 1e-2), the model as calibrated there: the vendor 8.7, topk's
 *    route 17.7, cltk's 11.2 (a training loop with mpi4py: 2.60, 5.30 and
 *    3.35 s for 300 steps): it settles on the vendor, for either mode;
 *  - the emulated Gigabit cluster, P = 8 (4 ranks per core), 16M floats,
 *    d = 1e-3, the rig's model: the vendor 1168, cltk 43.3, topk 68.5
 *    (bench/RESULTS.md, Compression): it settles on the selections. */
START_TEST(compression_settles_on_the_faster_route)
{
    struct { int P; uint64_t N; double d, rpc, alpha, beta, gamma, vendor, route[2]; int selections; } pts[] = {
        {4, 1179555, 1e-2, 2, 11.6e-6, 0.343e-9, 0.95e-9, 8.7, {17.7, 11.2}, 0},
        {8, 16u << 20, 1e-3, 4, 17.1e-6, 8.31e-9, 17e-9 / 4, 1168, {68.5, 43.3}, 1},
    };
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++)
        for (int mode = 0; mode < 2; mode++) {
            sparcml_settings s = defaults();
            sparcml_problem p = problem(pts[i].P, pts[i].N, (uint64_t)ceil(pts[i].d * (double)pts[i].N), 1);
            double ms[COST_ROUTES];
            int trials;
            cost_route a;
            s.alpha = pts[i].alpha, s.beta = pts[i].beta, s.gamma = pts[i].gamma;
            s.compress = mode ? COMPRESS_CLTK : COMPRESS_TOPK;
            p.ranks_per_core = pts[i].rpc;
            for (int r = 0; r < COST_ROUTES; r++) ms[r] = r == COST_VENDOR ? pts[i].vendor : pts[i].route[mode];
            a = drive(&s, p, ms, select_compressed, 32, &trials, NULL);
            ck_assert_msg((a != COST_VENDOR) == pts[i].selections, "case %zu, mode %d: settled on %d", i, mode,
                          (int)a);
        }
}
END_TEST

/* Untimed: the tests' models (tests/scripts/compress.sh).  As for a
 * Gigabit network (the defaults set whole) the selections pay at P > 1;
 * where a message costs next to nothing and a pass over the buffer much,
 * the vendor; at P = 1 the vendor's copy; a forced sparse algorithm is
 * run, the forced dense one means the vendor. */
START_TEST(compression_untimed)
{
    sparcml_settings pays = defaults(), dear = defaults();
    pays.alpha = 20e-6, pays.beta = 8.3e-9, pays.gamma = 2.5e-9;
    dear.alpha = 1e-6, dear.beta = 0.01e-9, dear.gamma = 100e-9;
    for (int mode = COMPRESS_TOPK; mode <= COMPRESS_CLTK; mode++)
        for (int P = 1; P <= 8; P++) {
            sparcml_problem p = problem(P, 16384, 164, 1);
            pays.compress = dear.compress = mode;
            ck_assert_int_eq(select_compressed(&pays, &p, &untimed) != COST_VENDOR, P > 1);
            ck_assert_int_eq(select_compressed(&dear, &p, &untimed), COST_VENDOR);
            dear.algorithm = SPARCML_ALG_SSAR_SPLIT_ALLGATHER;
            ck_assert_int_eq(select_compressed(&dear, &p, &untimed), SPARCML_ALG_SSAR_SPLIT_ALLGATHER);
            dear.algorithm = SPARCML_ALG_DENSE;
            ck_assert_int_eq(select_compressed(&pays, &p, &untimed) != COST_VENDOR, P > 1);
            ck_assert_int_eq(select_compressed(&dear, &p, &untimed), COST_VENDOR);
            dear.algorithm = SPARCML_ALG_AUTO;
        }
}
END_TEST

/* A learnt vendor choice (select_learnt): the next `skip` calls of its
 * pair skip, then none; a choice of the selections for the pair ends it,
 * one for another pair leaves it. */
START_TEST(learnt_vendor_choice)
{
    select_learnt l = {0};
    int skipped = 0;
    ck_assert_int_eq(select_learnt_skips(&l, 0, 0), 0);
    select_learn_vendor(&l, 4096, SPARCML_FLOAT, 3);
    ck_assert_int_eq(select_learnt_skips(&l, 4096, SPARCML_DOUBLE), 0);
    ck_assert_int_eq(select_learnt_skips(&l, 2048, SPARCML_FLOAT), 0);
    while (select_learnt_skips(&l, 4096, SPARCML_FLOAT)) skipped++;
    ck_assert_int_eq(skipped, 3);
    ck_assert(select_learnt_vendor(&l, 4096, SPARCML_FLOAT));
    select_learn_sparse(&l, 2048, SPARCML_FLOAT);
    ck_assert(select_learnt_vendor(&l, 4096, SPARCML_FLOAT));
    select_learn_sparse(&l, 4096, SPARCML_FLOAT);
    ck_assert(!select_learnt_vendor(&l, 4096, SPARCML_FLOAT));
}
END_TEST

/* The rationing's rule: a key's first trial of TIMED_TRIAL_CALLS calls
 * may start at any call; a later one only where the trial calls stay at
 * most 1 + calls / TIMED_TRIAL_SHARE at each of its calls, counting the
 * call that starts it.  Where one may start, running the whole trial keeps
 * the bound (the first: at most TIMED_TRIAL_CALLS); the boundary cases:
 * with `trials` > 0 trial calls before, the first call that may start one
 * is TIMED_TRIAL_SHARE * (trials + TIMED_TRIAL_CALLS - 1). */
START_TEST(trial_share)
{
    for (uint64_t calls = 1; calls <= 1300; calls++) ck_assert(timed_may_start(calls, 0));
    for (uint64_t trials = 1; trials <= 300; trials++) {
        uint64_t first = TIMED_TRIAL_SHARE * (trials + TIMED_TRIAL_CALLS - 1);
        ck_assert_msg(timed_may_start(first, trials) && !timed_may_start(first - 1, trials), "trials %llu",
                      (unsigned long long)trials);
        for (uint64_t calls = 1; calls <= 1300; calls++) {
            if (!timed_may_start(calls, trials)) continue;
            for (uint64_t j = 1; j <= TIMED_TRIAL_CALLS; j++)
                ck_assert_msg(trials + j <= 1 + (calls + j - 1) / TIMED_TRIAL_SHARE, "calls %llu, trials %llu",
                              (unsigned long long)calls, (unsigned long long)trials);
        }
    }
    ck_assert(!timed_may_start(TIMED_TRIAL_SHARE * (2 * TIMED_TRIAL_CALLS - 1) - 1, TIMED_TRIAL_CALLS));
    ck_assert(timed_may_start(1000, 200) && !timed_may_start(1000, 1000 / TIMED_TRIAL_SHARE));
}
END_TEST

/* The rationing at work on one key, tagged calls: the model prefers
 * recursive doubling, which runs 4 times its price; the other three run
 * at theirs.  Recursive doubling runs first (nothing timed: the model
 * alone), timed from its second call; from call 3 its agreed multiple
 * prices it above the others, and the key's first trial may start at
 * once (trial_share): the cheapest of the others by the model runs its
 * TIMED_TRIAL_CALLS trial calls and, at its price, to the end
 * (TIMED_TRIAL_CALLS trial calls in 24).  Then an accurate model (every
 * algorithm at its price): nothing beats the first algorithm's timed
 * price, and nothing is tried. */
START_TEST(trials_rationed)
{
    sparcml_settings s = defaults();
    sparcml_problem p = problem(8, 1u << 20, 1u << 10, 1);
    double price[SPARCML_ALG_COUNT_], ms[COST_ROUTES] = {0};
    select_timed t = {0};
    cost_route first = select_algorithm(&s, &p, &t), ran[24];
    const int start = 3; /* the first trial call, from 1: the call after the first timed one */
    int trials;
    ck_assert_int_eq(first, SPARCML_ALG_RECURSIVE_DOUBLE);
    select_costs(&s, &p, price);
    for (int a = 0; a < SPARCML_ALG_COUNT_; a++) ms[a] = 1e3 * price[a] * (a == (int)first ? 4 : 1);
    drive(&s, p, ms, select_algorithm, 24, &trials, ran);
    for (int call = 0; call < start - 1; call++) ck_assert_int_eq(ran[call], first);
    ck_assert_int_ne(ran[start - 1], first);
    for (int call = start; call < 24; call++) ck_assert_int_eq(ran[call], ran[start - 1]);
    ck_assert_int_eq(trials, TIMED_TRIAL_CALLS);
    /* an accurate model: nothing tried */
    for (int a = 0; a < SPARCML_ALG_COUNT_; a++) ms[a] = 1e3 * price[a];
    ck_assert_int_eq(drive(&s, p, ms, select_algorithm, 40, &trials, NULL), first);
    ck_assert_int_eq(trials, 0);
    /* untried and no trial allowed: out of the running; a trial under way
     * the only route, untimed or timed at any multiple */
    t.timed_over[SPARCML_ALG_DENSE] = 1;
    ck_assert_int_eq(select_algorithm(&s, &p, &t), SPARCML_ALG_DENSE);
    t.trying = SPARCML_ALG_SSAR_SPLIT_ALLGATHER;
    ck_assert_int_eq(select_algorithm(&s, &p, &t), SPARCML_ALG_SSAR_SPLIT_ALLGATHER);
    t.timed_over[SPARCML_ALG_SSAR_SPLIT_ALLGATHER] = 1000;
    ck_assert_int_eq(select_algorithm(&s, &p, &t), SPARCML_ALG_SSAR_SPLIT_ALLGATHER);
    t.timed_over[SPARCML_ALG_SSAR_SPLIT_ALLGATHER] = 0;
    t.trying = SPARCML_ALG_AUTO;
    t.may_try = 1;
    ck_assert_int_eq(select_algorithm(&s, &p, &t), first);
}
END_TEST

/* A trial's verdict is not one run's.  As trials_rationed, but the calls
 * alternate cold and warm (sparcml_bench --cold-mib): a cold call of any
 * route takes 10 times a warm one's time.  Recursive doubling's multiple
 * is its warm runs' 4; the trial's route warm runs at its price (1), cold
 * at 10 times it, above 4 times recursive doubling's (the route costs at
 * least recursive doubling by the model, which chose that first).  Its
 * first trial call is never timed, and its other calls (at least 2)
 * follow each other, so whichever calls are cold one of them is warm: the
 * route wins, and runs to the end, in both orders of cold and warm.  A
 * trial that rested on one timed run would, in one of the orders, time
 * only a cold one, and keep recursive doubling. */
START_TEST(trial_verdict_from_more_runs)
{
    sparcml_settings s = defaults();
    sparcml_problem p = problem(8, 1u << 20, 1u << 10, 1);
    double price[SPARCML_ALG_COUNT_], warm[COST_ROUTES] = {0}, cold[COST_ROUTES] = {0};
    cost_route first = select_algorithm(&s, &p, &untimed), ran[32];
    int trials;
    select_costs(&s, &p, price);
    for (int a = 0; a < SPARCML_ALG_COUNT_; a++) {
        warm[a] = 1e3 * price[a] * (a == (int)first ? 4 : 1);
        cold[a] = 10 * warm[a];
    }
    for (int odd_cold = 0; odd_cold < 2; odd_cold++) {
        cost_route last = drive_alternating(&s, p, odd_cold ? cold : warm, odd_cold ? warm : cold, select_algorithm,
                                            32, &trials, ran);
        ck_assert_msg(last != first, "cold calls %s: kept the first algorithm", odd_cold ? "odd" : "even");
        for (int call = 24; call < 32; call++) ck_assert_int_eq(ran[call], last);
    }
}
END_TEST

/* The simulated clusters of bench/RESULTS.md (SimGrid SMPI, one rank per
 * host, the stream kernels charged at fixed prices, network time exact:
 * bench/results/smpi_kernels_charged_{fattree,gige}.csv), N = 16M floats:
 * the model, given each platform's alpha and beta, must choose the faster
 * of recursive doubling and SSAR split at every point simulated (times in
 * ms, the faster first; within 10 % either is right).  The closest calls,
 * about 15 % apart: the fat tree's identical d = 1e-3 at P = 512 and
 * Gigabit's random d = 1e-4 points. */
/* The split owners' merging as the model prices it (split_phases.c), with
 * no alpha or beta and gamma 1: every rank packs its k entries (a copy
 * each); at P = 4 an owner's slice receives 4 parts of k/4 entries.
 * Disjoint parts: the counter merges parts 0 and 1 (k/2 entries), then 2
 * and 3 and the two pairs (k/2 + k), 2 k in all, and copies the first
 * pair's sum and part 2 while they wait (k/2 + k/4).  Identical parts:
 * one growing sum of k/4 entries takes 3 parts of k/4, 3 k/2 merged. */
START_TEST(split_counter_cost)
{
    const cost_model m = {.gamma = 1};
    const double k = 1000, copy = COST_COPY_PER_MERGE;
    sparcml_problem disjoint = problem(4, 16u << 20, (uint64_t)k, 2), identical = problem(4, 16u << 20, (uint64_t)k, 0);
    ck_assert_double_eq_tol(split_reduce_scatter_cost(&m, &disjoint), copy * k + 2 * k + copy * 3 * k / 4, 1e-6);
    ck_assert_double_eq_tol(split_reduce_scatter_cost(&m, &identical), copy * k + 3 * k / 2, 1e-6);
}
END_TEST

START_TEST(smpi_charged_ordering)
{
    const unsigned rd = ALG_BIT(SPARCML_ALG_RECURSIVE_DOUBLE), ssar = ALG_BIT(SPARCML_ALG_SSAR_SPLIT_ALLGATHER);
    struct { int fattree, P; double d, overlap; unsigned right; } pts[] = {
        {1, 64, 1e-4, 1, ssar},    /* 0.354 vs 0.709 */
        {1, 64, 1e-3, 0, ssar},    /* 0.272 vs 0.579 */
        {1, 64, 1e-2, 0, ssar},    /* 1.72 vs 5.69 */
        {1, 128, 1e-2, 0, ssar},   /* 1.96 vs 6.63 */
        {1, 256, 1e-4, 0, rd},     /* 0.0983 vs 0.446 */
        {1, 256, 1e-4, 1, ssar},   /* 1.32 vs 2.78 */
        {1, 256, 1e-3, 0, ssar},   /* 0.601 vs 0.758 */
        {1, 256, 1e-2, 0, ssar},   /* 2.40 vs 7.58 */
        {1, 512, 1e-4, 0, rd},     /* 0.110 vs 0.861 */
        {1, 512, 1e-4, 1, ssar},   /* 3.41 vs 5.50 */
        {1, 512, 1e-3, 0, rd},     /* 0.866 vs 1.03 */
        {1, 512, 1e-2, 0, ssar},   /* 3.24 vs 8.53 */
        {1, 1024, 1e-4, 0, rd},    /* 0.123 vs 1.69 */
        {1, 1024, 1e-3, 0, rd},    /* 0.962 vs 1.87 */
        {1, 1024, 1e-2, 0, ssar},  /* 4.89 vs 9.48 */
        {0, 64, 1e-4, 0, rd},      /* 0.829 vs 2.05 */
        {0, 64, 1e-4, 1, rd},      /* 7.44 vs 8.77 */
        {0, 64, 1e-3, 0, ssar},    /* 5.01 vs 7.13 */
        {0, 64, 1e-2, 0, ssar},    /* 30.5 vs 69.6 */
        {0, 256, 1e-4, 0, rd},     /* 1.11 vs 6.41 */
        {0, 256, 1e-4, 1, rd},     /* 29.1 vs 34.1 */
        {0, 256, 1e-3, 0, rd | ssar}, /* 9.21 vs 9.49 */
        {0, 256, 1e-2, 0, ssar},   /* 42.5 vs 92.8 */
        {0, 512, 1e-4, 0, rd},     /* 1.24 vs 12.1 */
        {0, 512, 1e-3, 0, rd},     /* 10.6 vs 15.1 */
    };
    sparcml_settings s;
    ck_assert_int_eq(settings_parse(&s, no_variables, NULL), 0);
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
        sparcml_problem p = problem(pts[i].P, 16u << 20, (uint64_t)llround(pts[i].d * (16u << 20)), pts[i].overlap);
        sparcml_algorithm a;
        s.alpha = pts[i].fattree ? 1.5e-6 : 20e-6;
        s.beta = pts[i].fattree ? 0.08e-9 : 8e-9;
        a = select_algorithm(&s, &p, &untimed);
        ck_assert_msg(ALG_BIT(a) & pts[i].right, "%s P = %d, d = %g, overlap %g: chose %d",
                      pts[i].fattree ? "fat tree" : "Gigabit", pts[i].P, pts[i].d, pts[i].overlap, (int)a);
    }
}
END_TEST

/* With no bandwidth or CPU terms, the split algorithms cost their rounds'
 * latencies: P - 1 sends of the reduce-scatter, then the allgather in
 * ceil(log2 P) rounds: the vendor's for a short vector, the library's
 * exchange for a long one (4 MiB: from 512 KiB at a power of two, 80 KiB
 * otherwise, MPICH's ring would take P - 1 steps; at P = 2 the ring is one
 * step too); forced to the vendor's, a ring of P - 1 steps for the long
 * one.  SSAR split first allgathers the union sizes.  Dense inputs make
 * the format certain (no sizes for DSAR). */
START_TEST(split_rounds)
{
    sparcml_settings s = defaults();
    double c[SPARCML_ALG_COUNT_];
    const double a = 1e-6;
    s.alpha = a;
    s.beta = 0;
    s.gamma = 0;
    const int Ps[] = {2, 6, 8, 13, 64, 100, 512, 1024};
    for (size_t i = 0; i < sizeof Ps / sizeof Ps[0]; i++) {
        int P = Ps[i], L = 0;
        sparcml_problem dense_long = problem(P, 1u << 20, 1u << 20, 1);  /* 4 MiB */
        sparcml_problem dense_short = problem(P, 4096, 4096, 1);         /* 16 KiB */
        sparcml_problem sparse_short = problem(P, 16u << 20, 16, 0);     /* one 16-entry slice */
        while ((1 << L) < P) L++;
        select_costs(&s, &dense_long, c);
        ck_assert_double_eq_tol(c[SPARCML_ALG_DSAR_SPLIT_ALLGATHER], (P - 1 + L) * a, 1e-12);
        s.split_gather = COST_GATHER_VENDOR;
        select_costs(&s, &dense_long, c);
        ck_assert_double_eq_tol(c[SPARCML_ALG_DSAR_SPLIT_ALLGATHER], 2 * (P - 1) * a, 1e-12);
        s.split_gather = COST_GATHER_MODEL;
        select_costs(&s, &dense_short, c);
        ck_assert_double_eq_tol(c[SPARCML_ALG_DSAR_SPLIT_ALLGATHER], (P - 1 + L) * a, 1e-12);
        select_costs(&s, &sparse_short, c);
        ck_assert_double_eq_tol(c[SPARCML_ALG_SSAR_SPLIT_ALLGATHER], (P - 1 + 2 * L) * a, 1e-12);
    }
}
END_TEST

static int plan_is(alg_gather_plan g, uint64_t from, uint64_t ring)
{
    return g.library_from == from && g.ring_from == ring;
}

/* The vendor's gather measured slower than its price (core/calibrate.h:
 * MPICH on shared memory, 1.3-5): the library's exchange, which moves
 * the same bytes, gathers at every size and P, as a ring from where the
 * plain rule's would (P >= 4; at P = 2 and 3, where the plain rule never
 * gathers by the library, the ring's extra rounds are none and it runs
 * throughout); the vendor's gathers that remain (forced, or DSAR's dense
 * one) cost the factor more; a factor of 1 is the plain rule, as one of 0
 * (unmeasured), and so is one of 1.1: the vendor's bytes still price no
 * higher than the library's recursive doubling's (9/8). */
START_TEST(split_gather_measured_vendor)
{
    for (int P = 2; P <= 9; P++) {
        sparcml_settings s = defaults();
        sparcml_problem p = problem(P, 16u << 20, 65536, 1);
        double plain[SPARCML_ALG_COUNT_], slow[SPARCML_ALG_COUNT_];
        alg_gather_plan rule;
        s.split_gather = COST_GATHER_VENDOR;
        select_costs(&s, &p, plain);
        s.vendor_gather = 2;
        select_costs(&s, &p, slow);
        ck_assert_double_gt(slow[SPARCML_ALG_SSAR_SPLIT_ALLGATHER], plain[SPARCML_ALG_SSAR_SPLIT_ALLGATHER]);
        ck_assert_double_gt(slow[SPARCML_ALG_DSAR_SPLIT_ALLGATHER], plain[SPARCML_ALG_DSAR_SPLIT_ALLGATHER]);
        ck_assert(slow[SPARCML_ALG_RECURSIVE_DOUBLE] == plain[SPARCML_ALG_RECURSIVE_DOUBLE]);
        s.split_gather = COST_GATHER_MODEL;
        s.vendor_gather = 0;
        s.alpha = 600e-6; /* a ring threshold within reach */
        s.beta = 7e-9;
        rule = select_gather_plan(&s, &p);
        ck_assert(P > 3 ? rule.library_from != UINT64_MAX && rule.ring_from != UINT64_MAX
                        : rule.library_from == UINT64_MAX);
        s.vendor_gather = 2;
        ck_assert(plan_is(select_gather_plan(&s, &p), 0, P > 3 ? rule.ring_from : 0));
        s.vendor_gather = 1;
        ck_assert(plan_is(select_gather_plan(&s, &p), rule.library_from, rule.ring_from));
        s.vendor_gather = 1.1;
        ck_assert(plan_is(select_gather_plan(&s, &p), rule.library_from, rule.ring_from));
        s.vendor_gather = 1.13;
        ck_assert(plan_is(select_gather_plan(&s, &p), 0, P > 3 ? rule.ring_from : 0));
    }
}
END_TEST

/* The split algorithms' gather with the vendor as fast as its price: the
 * vendor's where MPICH's allgather takes ceil(log2 P) rounds (below 512
 * KiB in all at a power of two, 80 KiB otherwise, and at P = 2 and 3
 * throughout); above, the library's recursive doubling up to where its
 * byte penalty (1/8) outweighs a ring's P - 1 - ceil(log2 P) extra
 * rounds, and the library's ring from there.  At alpha 600 us and beta 7
 * ns/B, 8 alpha / beta = 685714.29 bytes moved per extra round, times P
 * / (P - 1) in all: P = 4, 1 extra round: 914285.7; P = 5, 1: 857142.9;
 * P = 8, 4: 3134693.9; P = 12, 7: 5236363.6.  At the defaults (3 us, 0.25
 * ns/B: 96000 bytes per extra round) the ring starts at 733090.9 at P =
 * 12, and at P = 4 (128000) and 8 (438857.1) below the vendor's
 * threshold: there the library's gathers by the ring only.
 * SPARCML_SPLIT_GATHER forces one; the split algorithm's cost follows the
 * gather it runs. */
START_TEST(split_gather_choice)
{
    sparcml_settings s = defaults();
    const uint64_t never = UINT64_MAX;
    const struct { int P; uint64_t from, ring; } pts[] = {
        {2, never, never}, {3, never, never},     {4, 524288, 914286},
        {5, 81920, 857143}, {8, 524288, 3134694}, {12, 81920, 5236364},
    };
    alg_gather_plan g;
    for (int P = 4; P <= 8; P += 4) {
        sparcml_problem p = problem(P, 16u << 20, 16384, 1);
        g = select_gather_plan(&s, &p);
        ck_assert_int_eq(alg_gather_for(&g, 524287), ALG_GATHER_VENDOR);
        ck_assert_int_eq(alg_gather_for(&g, 524288), ALG_GATHER_RING);
    }
    sparcml_problem p12 = problem(12, 16u << 20, 16384, 1);
    ck_assert(plan_is(select_gather_plan(&s, &p12), 81920, 733091));
    s.alpha = 600e-6;
    s.beta = 7e-9;
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
        sparcml_problem p = problem(pts[i].P, 16u << 20, 16384, 1);
        g = select_gather_plan(&s, &p);
        ck_assert_msg(plan_is(g, pts[i].from, pts[i].ring), "P = %d: %llu, %llu", pts[i].P,
                      (unsigned long long)g.library_from, (unsigned long long)g.ring_from);
        ck_assert_int_eq(alg_gather_for(&g, 0), ALG_GATHER_VENDOR);
        if (pts[i].from == never) continue;
        ck_assert_int_eq(alg_gather_for(&g, pts[i].from - 1), ALG_GATHER_VENDOR);
        ck_assert_int_eq(alg_gather_for(&g, pts[i].from), ALG_GATHER_DOUBLING);
        ck_assert_int_eq(alg_gather_for(&g, pts[i].ring - 1), ALG_GATHER_DOUBLING);
        ck_assert_int_eq(alg_gather_for(&g, pts[i].ring), ALG_GATHER_RING);
        ck_assert_int_eq(alg_gather_for(&g, never - 1), ALG_GATHER_RING);
    }
    s = defaults();
    for (int P = 1; P <= 9; P++) {
        sparcml_problem p = problem(P, 16u << 20, 65536, 1);
        double c[SPARCML_ALG_COUNT_], forced, forced_dsar;
        s.split_gather = COST_GATHER_VENDOR;
        ck_assert(plan_is(select_gather_plan(&s, &p), never, never));
        select_costs(&s, &p, c);
        forced = c[SPARCML_ALG_SSAR_SPLIT_ALLGATHER];
        forced_dsar = c[SPARCML_ALG_DSAR_SPLIT_ALLGATHER];
        s.split_gather = COST_GATHER_RING;
        ck_assert(plan_is(select_gather_plan(&s, &p), 0, 0));
        select_costs(&s, &p, c);
        /* P 64K entries gathered, at least 512 KiB, and DSAR's 64 MiB of
         * dense slices: the vendor's ring, and the library's, priced alike */
        ck_assert_double_eq_tol(c[SPARCML_ALG_SSAR_SPLIT_ALLGATHER], forced, 1e-12 * forced);
        ck_assert_double_eq_tol(c[SPARCML_ALG_DSAR_SPLIT_ALLGATHER], forced_dsar, 1e-12 * forced_dsar);
        s.split_gather = COST_GATHER_DOUBLING;
        ck_assert(plan_is(select_gather_plan(&s, &p), 0, never));
        select_costs(&s, &p, c);
        /* recursive doubling: fewer rounds where P - 1 > ceil(log2 P), its
         * bytes 1/8 dearer; at the defaults the bytes outweigh (P = 1: no
         * rounds, no bytes) */
        if (P > 1) {
            ck_assert_double_gt(c[SPARCML_ALG_SSAR_SPLIT_ALLGATHER], forced);
            ck_assert_double_gt(c[SPARCML_ALG_DSAR_SPLIT_ALLGATHER], forced_dsar);
        }
        s.split_gather = COST_GATHER_MODEL;
    }
}
END_TEST

Suite *select_suite(void)
{
    Suite *s = suite_create("select");
    TCase *tc = tcase_create("model");
    tcase_add_test(tc, union_estimate_endpoints);
    tcase_add_test(tc, learning_inverts_the_estimate);
    tcase_add_test(tc, learning_at_the_anchors);
    tcase_add_test(tc, forced_algorithm_wins);
    tcase_add_test(tc, regimes);
    tcase_add_test(tc, one_price_is_the_selectors);
    tcase_add_test(tc, pipeline_chunks);
    tcase_add_test(tc, riding_rows_say_their_room);
    tcase_add_test(tc, rig_measured_ordering);
    tcase_add_test(tc, rig_measured_ordering_qsgd);
    tcase_add_test(tc, shm_measured_ordering);
    tcase_add_test(tc, transparent_shm_measured);
    tcase_add_test(tc, transparent_cheapest_route);
    tcase_add_test(tc, timed_prices_settle_on_the_fastest);
    tcase_add_test(tc, compression_settles_on_the_faster_route);
    tcase_add_test(tc, compression_untimed);
    tcase_add_test(tc, learnt_vendor_choice);
    tcase_add_test(tc, trial_share);
    tcase_add_test(tc, trials_rationed);
    tcase_add_test(tc, trial_verdict_from_more_runs);
    tcase_add_test(tc, timed_bands_by_density);
    tcase_add_test(tc, pipeline_off_where_copies_share_cores);
    tcase_add_test(tc, rig_defaults_scaled_by_ranks_per_core);
    tcase_add_test(tc, split_counter_cost);
    tcase_add_test(tc, smpi_charged_ordering);
    tcase_add_test(tc, split_rounds);
    tcase_add_test(tc, split_gather_choice);
    tcase_add_test(tc, split_gather_measured_vendor);
    suite_add_tcase(s, tc);
    return s;
}
