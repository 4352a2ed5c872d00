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

Suite *select_suite(void)
{
    Suite *s = suite_create("select");
    TCase *tc = tcase_create("model");
    tcase_add_test(tc, union_estimate_endpoints);
    tcase_add_test(tc, learning_inverts_the_estimate);
    tcase_add_test(tc, forced_algorithm_wins);
    tcase_add_test(tc, regimes);
    suite_add_tcase(s, tc);
    return s;
}
