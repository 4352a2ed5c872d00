/* The cost model and the selection rule. */
#include <math.h>

#include "select.h"
#include "sparcml.h"
#include "suites.h"

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
    sparcml_problem p = {P, dim, SPARCML_FLOAT, k, k * (uint64_t)P, 1, overlap, 0, 0, 0};
    return p;
}

START_TEST(union_estimate_endpoints)
{
    sparcml_problem p = problem(8, 1000000, 1000, 0);
    ck_assert_double_eq_tol(select_union_estimate(&p, 8), 1000, 1e-6);
    p.overlap = 2;
    ck_assert_double_eq_tol(select_union_estimate(&p, 8), 8000, 1e-6);
    p.overlap = 1; /* random: 1e6 (1 - (1 - 1e-3)^8) */
    ck_assert_double_eq_tol(select_union_estimate(&p, 8), 1e6 * (1 - pow(1 - 1e-3, 8)), 1e-3);
    p = problem(8, 100, 100, 1); /* dense inputs: the union is everything */
    ck_assert_double_eq_tol(select_union_estimate(&p, 3), 100, 1e-9);
}
END_TEST

START_TEST(learning_inverts_the_estimate)
{
    for (double o = 0.05; o < 2; o += 0.1) {
        sparcml_problem p = problem(6, 5000000, 20000, o);
        double u = select_union_estimate(&p, 6);
        p.overlap = 1;
        ck_assert_double_eq_tol(select_learn_overlap(&p, (uint64_t)llround(u)), o, 1e-3);
    }
}
END_TEST

START_TEST(forced_algorithm_wins)
{
    sparcml_settings s = defaults();
    sparcml_problem p = problem(4, 1000, 1, 1);
    for (int a = 1; a < SPARCML_ALG_COUNT_; a++) {
        s.algorithm = a;
        ck_assert_int_eq(select_algorithm(&s, &p), a);
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
    ck_assert_int_eq(select_algorithm(&s, &p), SPARCML_ALG_RECURSIVE_DOUBLE);
    /* Everything dense already: no sparse algorithm can beat the vendor's
     * dense allreduce by much; never SSAR with its index overhead. */
    p = problem(8, 1u << 20, 1u << 20, 1);
    ck_assert_int_ne(select_algorithm(&s, &p), SPARCML_ALG_SSAR_SPLIT_ALLGATHER);
    ck_assert_int_ne(select_algorithm(&s, &p), SPARCML_ALG_RECURSIVE_DOUBLE);
    /* A result that does not fit as dense excludes the dense outputs. */
    p.dense_fits = 0;
    select_costs(&s, &p, c);
    ck_assert(isinf(c[SPARCML_ALG_DENSE]) && isinf(c[SPARCML_ALG_DSAR_SPLIT_ALLGATHER]));
    ck_assert(select_algorithm(&s, &p) == SPARCML_ALG_RECURSIVE_DOUBLE
              || select_algorithm(&s, &p) == SPARCML_ALG_SSAR_SPLIT_ALLGATHER);
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

/* The choices the model makes on the 1 Gbit/s rig (bench/RESULTS.md) for
 * P = 8, N = 16M floats, random indices, with the rig's measured alpha and
 * beta and the default gamma, must be the algorithms measured fastest there
 * (bench/results/sweep_rig_density_s2.csv, 2026-11-22, quiet machine):
 * recursive doubling at d = 1e-3 (11.8 ms against 13.1 ms for SSAR split),
 * SSAR split at d = 0.05 (485 ms against 646 ms for recursive doubling
 * and 613 ms for DSAR), DSAR split at d = 0.1 (703 against 760 ms SSAR) and
 * 0.25 (868 against 915 ms SSAR).  At d = 0.5, DSAR, SSAR and the dense
 * allreduce were within the run-to-run noise (1.18-1.27 s): only a
 * bandwidth-bound choice is required there. */
START_TEST(rig_measured_ordering)
{
    sparcml_settings s = defaults();
    const uint64_t N = 16u << 20;
    s.alpha = 17.1e-6;
    s.beta = 8.31e-9;
    s.gamma = 5e-9;
    struct { double d; sparcml_algorithm best; } pts[] = {
        {1e-3, SPARCML_ALG_RECURSIVE_DOUBLE},
        {0.05, SPARCML_ALG_SSAR_SPLIT_ALLGATHER},
        {0.1, SPARCML_ALG_DSAR_SPLIT_ALLGATHER},
        {0.25, SPARCML_ALG_DSAR_SPLIT_ALLGATHER},
    };
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
        sparcml_problem p = problem(8, N, (uint64_t)(pts[i].d * (double)N), 1);
        ck_assert_msg(select_algorithm(&s, &p) == pts[i].best, "d = %g: chose %d, measured best %d",
                      pts[i].d, (int)select_algorithm(&s, &p), (int)pts[i].best);
    }
    {
        sparcml_problem p = problem(8, N, N / 2, 1);
        ck_assert_int_ne(select_algorithm(&s, &p), SPARCML_ALG_RECURSIVE_DOUBLE);
    }
}
END_TEST

/* With QSGD the model must count the CPU time of encoding and decoding: on
 * the rig at d = 0.01 (bench/results/qsgd_rig_s2.csv) DSAR with 4 and 2
 * bits sends fewer bytes than recursive doubling (8.6 and 5.0 MB against
 * 9.3 MB per rank) but took 289-351 ms and 253-261 ms against 126-128 ms:
 * encoding and decoding all N values costs more than the bytes saved.
 * There 8 ranks share 2 cores, so a rank's CPU work takes 4 times as long
 * as the per-core default gamma says (recursive doubling at d = 1e-3 spent
 * 4.1 ms above the 7.7 ms of its bare message exchange on 235K merged
 * entries: 17 ns per entry), so this ordering is checked with gamma = 20 ns,
 * the value a user of such a machine sets (SPARCML_GAMMA_NS_PER_ENTRY). */
START_TEST(rig_measured_ordering_qsgd)
{
    sparcml_settings s = defaults();
    const uint64_t N = 16u << 20;
    s.alpha = 17.1e-6;
    s.beta = 8.31e-9;
    s.gamma = 20e-9;
    for (int bits = 2; bits <= 4; bits += 2) {
        sparcml_problem p = problem(8, N, N / 100, 1);
        p.qbits = bits;
        p.qbucket = 512;
        /* (SSAR split sends these slices sparse, unquantized: the same as
         * without QSGD, and close to recursive doubling) */
        ck_assert_msg(select_algorithm(&s, &p) != SPARCML_ALG_DSAR_SPLIT_ALLGATHER,
                      "bits = %d: chose DSAR", bits);
    }
}
END_TEST

Suite *select_suite(void)
{
    Suite *s = suite_create("select");
    TCase *tc = tcase_create("model");
    tcase_add_test(tc, union_estimate_endpoints);
    tcase_add_test(tc, learning_inverts_the_estimate);
    tcase_add_test(tc, forced_algorithm_wins);
    tcase_add_test(tc, regimes);
    tcase_add_test(tc, rig_measured_ordering);
    tcase_add_test(tc, rig_measured_ordering_qsgd);
    suite_add_tcase(s, tc);
    return s;
}
