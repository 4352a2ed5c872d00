/* The arithmetic of the calibration at MPI_Init (core/calibrate.h) and how
 * its values enter the settings: deterministic, no timing. */
#include <math.h>
#include <string.h>

#include "core/calibrate.h"
#include "core/settings.h"
#include "suites.h"

static const char *fake[8];

static const char *lookup(const char *name)
{
    for (int i = 0; fake[i]; i += 2)
        if (strcmp(fake[i], name) == 0) return fake[i + 1];
    return NULL;
}

static void parse_env(sparcml_settings *s, const char *name, const char *value)
{
    memset(fake, 0, sizeof fake);
    fake[0] = name;
    fake[1] = value;
    ck_assert_int_eq(settings_parse(s, lookup, NULL), 0);
}

START_TEST(picoseconds)
{
    ck_assert_int_eq(calib_ps(20e-6), 20000000);
    ck_assert_int_eq(calib_ps(1.4e-12), 1);
    ck_assert_int_eq(calib_ps(-1), 0);
    ck_assert_int_eq(calib_ps(NAN), 0);
}
END_TEST

/* Totals of 8 ranks on a rig-like network: every rank takes 240 us for
 * each exchange of 3 rounds (80 us a round: 4 ranks per core waiting 20 us
 * each), 4 pairs with a 40 us small round trip and a large one of 40 us
 * plus 2 beta per byte at 8.3 ns/B, 8 ranks merging at 2.5 ns/entry. */
static calib_totals rig_like(void)
{
    double large = 40e-6 + 2 * 8.3e-9 * (CALIB_LARGE_BYTES - CALIB_SMALL_BYTES);
    calib_totals t = {.exchangers = 8, .pairs = 4, .small_ps = 4 * calib_ps(40e-6), .large_ps = 4 * calib_ps(large),
                      .ranks = 8, .merge_ps = 8 * calib_ps(2.5e-9 * 2 * CALIB_MERGE_ENTRIES)};
    for (int r = 0; r < CALIB_ROUND_REPS; r++) t.round_ps[r] = 8 * calib_ps(240e-6);
    return t;
}

START_TEST(derive)
{
    calib_totals t = rig_like();
    calib_values v = calib_derive(&t, 1), shared = calib_derive(&t, 4);
    ck_assert_double_eq_tol(v.alpha, 80e-6, 1e-12); /* 240 us over 3 rounds */
    ck_assert_double_eq_tol(v.beta, 8.3e-9, 1e-14);
    ck_assert_double_eq_tol(v.gamma, 2.5e-9, 1e-14);
    /* Sharing cores: the model multiplies alpha by the ranks per core, so
     * the measured round, which holds the wait, is divided by them. */
    ck_assert_double_eq_tol(shared.alpha, 20e-6, 1e-12);
    ck_assert(shared.beta == v.beta && shared.gamma == v.gamma);
    ck_assert(calib_derive(&t, 0.5).alpha == v.alpha); /* below 1 counts as 1 */
    /* Pairs that differ: beta from the mean of their fastest round trips;
     * alpha is the exchange's alone. */
    t.pairs = 2;
    t.small_ps = calib_ps(30e-6) + calib_ps(50e-6);
    t.large_ps = t.small_ps + 2 * 2 * calib_ps(2e-9 * (CALIB_LARGE_BYTES - CALIB_SMALL_BYTES));
    v = calib_derive(&t, 1);
    ck_assert_double_eq_tol(v.alpha, 80e-6, 1e-12);
    ck_assert_double_eq_tol(v.beta, 2e-9, 1e-14);
    /* A loaded machine: every small round trip held up (500 us) beyond
     * the fastest large one (300 us).  Not a byte for free: a quarter of
     * the large round trip per byte, 0.572 ns/B. */
    t.pairs = 1;
    t.small_ps = calib_ps(500e-6);
    t.large_ps = calib_ps(300e-6);
    ck_assert_double_eq_tol(calib_derive(&t, 1).beta, 300e-6 / 4 / CALIB_LARGE_BYTES, 1e-15);
    /* Barely slower (the excess 1 us): the same floor. */
    t.small_ps = calib_ps(299e-6);
    ck_assert_double_eq_tol(calib_derive(&t, 1).beta, 300e-6 / 4 / CALIB_LARGE_BYTES, 1e-15);
}
END_TEST

/* The repetitions' totals of 4 ranks (2 rounds), in us per rank: most
 * are held up by other processes to some degree; the fastest, 10 us, is
 * 5 us a round, whichever ranks paid the delays. */
START_TEST(derive_fastest_round)
{
    static const double us[] = {30, 12, 900, 10.5, 14, 11, 2000, 13, 16, 25, 10, 400, 18, 12, 11, 60};
    calib_totals t = {.exchangers = 4};
    _Static_assert(sizeof us / sizeof us[0] == CALIB_ROUND_REPS, "one time a repetition");
    for (int r = 0; r < CALIB_ROUND_REPS; r++) t.round_ps[r] = 4 * calib_ps(us[r] * 1e-6);
    ck_assert_double_eq_tol(calib_derive(&t, 1).alpha, 5e-6, 1e-12);
    ck_assert_double_eq_tol(calib_derive(&t, 2).alpha, 2.5e-6, 1e-12);
    /* Without pairs or merges, only alpha. */
    ck_assert(isnan(calib_derive(&t, 1).beta) && isnan(calib_derive(&t, 1).gamma));
}
END_TEST

/* An exchange of P ranks has ceil(log2 P) rounds: 1 at P = 2, 2 at 3 and
 * 4, 3 at 5 to 8, 4 at 9; each rank 12 us an exchange. */
START_TEST(derive_rounds_of_p)
{
    static const struct { int P; double alpha; } cases[] = {{2, 12e-6}, {3, 6e-6}, {4, 6e-6}, {5, 4e-6},
                                                            {8, 4e-6}, {9, 3e-6}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        calib_totals t = {.exchangers = cases[i].P};
        for (int r = 0; r < CALIB_ROUND_REPS; r++) t.round_ps[r] = cases[i].P * calib_ps(12e-6);
        ck_assert_double_eq_tol(calib_derive(&t, 1).alpha, cases[i].alpha, 1e-12);
    }
}
END_TEST

START_TEST(derive_without_samples)
{
    calib_totals t = {0};
    calib_values v = calib_derive(&t, 1);
    ck_assert(isnan(v.alpha) && isnan(v.beta) && isnan(v.gamma));
    t.exchangers = 1; /* one rank: no round */
    t.round_ps[0] = calib_ps(1e-6);
    ck_assert(isnan(calib_derive(&t, 1).alpha));
}
END_TEST

START_TEST(same_totals_same_settings)
{
    /* Every rank derives from the same totals: identical values, hash. */
    calib_totals t = rig_like();
    sparcml_settings a, b;
    calib_values va = calib_derive(&t, 4), vb = calib_derive(&t, 4);
    parse_env(&a, NULL, NULL);
    parse_env(&b, NULL, NULL);
    settings_calibrate(&a, va.alpha, va.beta, va.gamma);
    settings_calibrate(&b, vb.alpha, vb.beta, vb.gamma);
    ck_assert(memcmp(&va, &vb, sizeof va) == 0);
    ck_assert_uint_eq(a.hash, b.hash);
    ck_assert_int_eq(a.calibrated, 1);
}
END_TEST

START_TEST(user_setting_wins)
{
    sparcml_settings s, plain;
    uint64_t before;
    parse_env(&s, "SPARCML_BETA_NS_PER_BYTE", "0.08");
    parse_env(&plain, NULL, NULL);
    ck_assert_uint_eq(s.cost_set, SETTINGS_SET_BETA);
    ck_assert_uint_eq(plain.cost_set, 0);
    before = s.hash;
    settings_calibrate(&s, 1.5e-6, 9e-9, 3e-9);
    ck_assert_double_eq_tol(s.alpha, 1.5e-6, 1e-15);
    ck_assert_double_eq_tol(s.beta, 0.08e-9, 1e-18); /* the user's */
    ck_assert_double_eq_tol(s.gamma, 3e-9, 1e-18);
    ck_assert_uint_ne(s.hash, before); /* the calls' agreement compares them */
}
END_TEST

START_TEST(clamped_to_the_accepted_range)
{
    sparcml_settings s;
    parse_env(&s, NULL, NULL);
    settings_calibrate(&s, 0, -1, NAN); /* free merges (SMPI), beta below 0 */
    ck_assert_double_eq_tol(s.alpha, 1e-3 * 1e-6, 1e-18);
    ck_assert_double_eq_tol(s.beta, 1e-4 * 1e-9, 1e-20);
    ck_assert_double_eq_tol(s.gamma, 1e-4 * 1e-9, 1e-20);
    settings_calibrate(&s, 10, 1, 1);
    ck_assert_double_eq_tol(s.alpha, 1e6 * 1e-6, 1e-9);
}
END_TEST

START_TEST(calibrate_setting)
{
    sparcml_settings s;
    parse_env(&s, NULL, NULL);
    ck_assert_int_eq(s.calibrate, 1);
    parse_env(&s, "SPARCML_CALIBRATE", "0");
    ck_assert_int_eq(s.calibrate, 0);
    memset(fake, 0, sizeof fake);
    fake[0] = "SPARCML_CALIBRATE";
    fake[1] = "yes";
    ck_assert_int_eq(settings_parse(&s, lookup, NULL), -1);
    ck_assert_ptr_nonnull(strstr(s.error, "SPARCML_CALIBRATE"));
}
END_TEST

Suite *calibrate_suite(void)
{
    Suite *s = suite_create("calibrate");
    TCase *tc = tcase_create("arithmetic");
    tcase_add_test(tc, picoseconds);
    tcase_add_test(tc, derive);
    tcase_add_test(tc, derive_fastest_round);
    tcase_add_test(tc, derive_rounds_of_p);
    tcase_add_test(tc, derive_without_samples);
    tcase_add_test(tc, same_totals_same_settings);
    tcase_add_test(tc, user_setting_wins);
    tcase_add_test(tc, clamped_to_the_accepted_range);
    tcase_add_test(tc, calibrate_setting);
    suite_add_tcase(s, tc);
    return s;
}
