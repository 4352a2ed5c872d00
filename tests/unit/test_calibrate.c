/* The arithmetic of the calibration at MPI_Init (core/calibrate.h) and how
 * its values enter the settings: deterministic, no timing. */
#include <math.h>
#include <string.h>

#include "core/calibrate.h"
#include "core/select.h"
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

/* A round of `bytes` taking alpha_r + beta bytes (the small one alpha_r),
 * as totals of P ranks over an exchange of ceil(log2 P) rounds, every
 * repetition alike. */
static void set_rounds(calib_totals *t, int64_t P, int rounds, double alpha_r, double beta)
{
    t->exchangers = P;
    t->reps = P * CALIB_ROUND_REPS;
    for (int r = 0; r < CALIB_ROUND_REPS; r++) {
        t->small_ps[r] = P * calib_ps(rounds * alpha_r);
        t->mid_ps[r] = P * calib_ps(rounds * (alpha_r + beta * CALIB_MID_BYTES));
        t->large_ps[r] = P * calib_ps(rounds * (alpha_r + beta * CALIB_LARGE_BYTES));
    }
}

/* Totals of 8 ranks on a rig-like network: a round takes 80 us (4 ranks
 * per core waiting 20 us each) plus 8.3 ns per byte, 3 rounds an exchange;
 * 8 ranks merging at 2.5 ns/entry. */
static calib_totals rig_like(void)
{
    calib_totals t = {.merge_ps = 8 * calib_ps(2.5e-9 * 2 * CALIB_MERGE_ENTRIES)};
    set_rounds(&t, 8, 3, 80e-6, 8.3e-9);
    return t;
}

START_TEST(derive)
{
    calib_totals t = rig_like();
    calib_values v = calib_derive(&t, 1, 1);
    ck_assert_double_eq_tol(v.alpha, 80e-6, 1e-12);
    ck_assert_double_eq_tol(v.beta, 8.3e-9, 1e-14);
    ck_assert_double_eq_tol(v.gamma, 2.5e-9, 1e-14);
    ck_assert(!v.shared_cores);
    ck_assert(calib_derive(&t, 0.5, 1).alpha == v.alpha); /* below 1 counts as 1 */
    ck_assert(calib_derive(&t, 1, 0).alpha == v.alpha);   /* several nodes: the same */
    /* Ranks that differ: the line through their mean rounds.  Rank 0's
     * rounds take 60 + 1 ns/B, rank 1's 100 + 3 ns/B (us): the mean is
     * 80 us + 2 ns/B. */
    set_rounds(&t, 2, 1, 0, 0);
    for (int r = 0; r < CALIB_ROUND_REPS; r++) {
        t.mid_ps[r] = calib_ps(60e-6 + 1e-9 * CALIB_MID_BYTES) + calib_ps(100e-6 + 3e-9 * CALIB_MID_BYTES);
        t.large_ps[r] = calib_ps(60e-6 + 1e-9 * CALIB_LARGE_BYTES) + calib_ps(100e-6 + 3e-9 * CALIB_LARGE_BYTES);
    }
    v = calib_derive(&t, 1, 1);
    ck_assert_double_eq_tol(v.alpha, 80e-6, 1e-12);
    ck_assert_double_eq_tol(v.beta, 2e-9, 1e-14);
}
END_TEST

/* A link that lets a burst pass faster than its rate: the mid-size round
 * (20 us) is below what the small one (30 us) and the rate (8 ns/B from
 * the large one) say; the line's origin, 20 - 131 us, is below 0, and
 * alpha is the small round's. */
START_TEST(derive_burst)
{
    calib_totals t = {0};
    set_rounds(&t, 2, 1, 0, 0);
    for (int r = 0; r < CALIB_ROUND_REPS; r++) {
        t.small_ps[r] = 2 * calib_ps(30e-6);
        t.mid_ps[r] = 2 * calib_ps(20e-6);
        t.large_ps[r] = 2 * calib_ps(20e-6 + 8e-9 * (CALIB_LARGE_BYTES - CALIB_MID_BYTES));
    }
    ck_assert_double_eq_tol(calib_derive(&t, 1, 1).beta, 8e-9, 1e-15);
    ck_assert_double_eq_tol(calib_derive(&t, 1, 1).alpha, 30e-6, 1e-12);
}
END_TEST

/* The vendor's gather: 4 ranks (2 rounds a round trip of the exchange:
 * alpha 5 us a round, beta 0.1 ns/B) gather 128 KiB in all; the model
 * prices MPICH's recursive doubling there at 2 alpha + beta 3/4 128 KiB,
 * 19.83 us.  Measured at twice that (the fastest of the repetitions): a
 * factor of 2; measured faster than the price, or less than 5 % slower:
 * 1. */
START_TEST(derive_vendor_gather)
{
    calib_totals t = {0};
    double price = 2 * 5e-6 + 0.1e-9 * 0.75 * CALIB_LARGE_BYTES;
    set_rounds(&t, 4, 2, 5e-6, 0.1e-9);
    t.vendor_bytes = 4 * CALIB_LARGE_BYTES;
    for (int r = 0; r < CALIB_ROUND_REPS; r++) t.vendor_ps[r] = 4 * calib_ps((r == 3 ? 2 : 3) * price);
    ck_assert_double_eq_tol(calib_derive(&t, 1, 1).vendor_gather, 2, 1e-6);
    for (int r = 0; r < CALIB_ROUND_REPS; r++) t.vendor_ps[r] = 4 * calib_ps(0.5 * price);
    ck_assert(calib_derive(&t, 1, 1).vendor_gather == 1);
    /* within the margin of its price: 1; just beyond it: as measured */
    for (int r = 0; r < CALIB_ROUND_REPS; r++) t.vendor_ps[r] = 4 * calib_ps(1.04 * price);
    ck_assert(calib_derive(&t, 1, 1).vendor_gather == 1);
    for (int r = 0; r < CALIB_ROUND_REPS; r++) t.vendor_ps[r] = 4 * calib_ps(1.06 * price);
    ck_assert_double_eq_tol(calib_derive(&t, 1, 1).vendor_gather, 1.06, 1e-6);
    set_rounds(&t, 1, 1, 5e-6, 0.1e-9);
    ck_assert(isnan(calib_derive(&t, 1, 1).vendor_gather));
}
END_TEST

/* Where ranks share cores no round is timed, whatever the totals hold:
 * on one node a round costs CALIB_SHARED_ALPHA with a core each and a byte
 * an eighth of the measured merged entry (2.5 ns: 0.3125 ns/B), below the
 * model's floor for the sharing, which then prices every byte as a copy
 * on the shared cores (4 per core: 1.25 ns/B, alpha 20 us a round); the
 * vendor's gathers keep their default; on several nodes alpha and beta
 * keep theirs (a network's), gamma is measured either way. */
START_TEST(derive_shared_cores)
{
    calib_totals t = rig_like();
    calib_values one = calib_derive(&t, 4, 1), nodes = calib_derive(&t, 4, 0);
    sparcml_problem p = {.P = 8, .ranks_per_core = 4, .one_node = 1};
    sparcml_settings s;
    cost_model m;
    ck_assert(one.shared_cores && nodes.shared_cores);
    ck_assert_double_eq_tol(one.alpha, 5e-6, 1e-15);
    ck_assert_double_eq_tol(one.beta, 0.3125e-9, 1e-18);
    ck_assert_double_eq_tol(one.gamma, 2.5e-9, 1e-18);
    ck_assert(isnan(one.vendor_gather) && one.reps == 0 && isnan(one.spread));
    ck_assert(isnan(nodes.alpha) && isnan(nodes.beta) && isnan(nodes.vendor_gather));
    ck_assert(nodes.gamma == one.gamma);
    parse_env(&s, NULL, NULL);
    settings_calibrate(&s, one.alpha, one.beta, one.gamma, one.vendor_gather);
    m = select_model(&s, &p);
    ck_assert(m.copy_bound);
    ck_assert_double_eq_tol(m.beta, 1.25e-9, 1e-18);
    ck_assert_double_eq_tol(m.alpha, 20e-6, 1e-15);
    ck_assert(s.vendor_gather == 1);
}
END_TEST

/* A loaded machine: every mid-size round held up (500 us) beyond the
 * fastest large one (300 us).  Not a byte for free: a quarter of the large
 * round per byte, 0.572 ns/B, and alpha what the mid round leaves. */
START_TEST(derive_loaded)
{
    calib_totals t = {.exchangers = 2, .reps = 2 * CALIB_ROUND_REPS};
    double beta = 300e-6 / 4 / CALIB_LARGE_BYTES;
    /* small_ps 0: a small round of no time, which no alpha goes below */
    for (int r = 0; r < CALIB_ROUND_REPS; r++) {
        t.mid_ps[r] = 2 * calib_ps(500e-6);
        t.large_ps[r] = 2 * calib_ps(300e-6);
    }
    ck_assert_double_eq_tol(calib_derive(&t, 1, 1).beta, beta, 1e-15);
    ck_assert_double_eq_tol(calib_derive(&t, 1, 1).alpha, 500e-6 - beta * CALIB_MID_BYTES, 1e-12);
    /* Barely faster large rounds than the floor's line: the same floor. */
    for (int r = 0; r < CALIB_ROUND_REPS; r++) t.mid_ps[r] = 2 * calib_ps(299e-6);
    ck_assert_double_eq_tol(calib_derive(&t, 1, 1).beta, beta, 1e-15);
    /* Large rounds far beyond the mid ones' line: alpha the small round's. */
    for (int r = 0; r < CALIB_ROUND_REPS; r++) {
        t.small_ps[r] = 2 * calib_ps(3e-6);
        t.mid_ps[r] = 2 * calib_ps(10e-6);
    }
    ck_assert_double_eq_tol(calib_derive(&t, 1, 1).alpha, 3e-6, 1e-12);
    ck_assert_double_eq_tol(calib_derive(&t, 1, 1).beta, 290e-6 / (CALIB_LARGE_BYTES - CALIB_MID_BYTES), 1e-15);
}
END_TEST

/* The repetitions' totals of 4 ranks (2 rounds), in us per rank: most
 * are held up by other processes to some degree; the fastest of each
 * size counts, whichever ranks paid the delays: 10 us (mid) and 24 us
 * (large), 5 and 12 us a round: beta 7 us over 112 KiB, alpha 5 us less
 * the mid size's 16 KiB at that rate, 4 us. */
START_TEST(derive_fastest_round)
{
    static const double mid[] = {30, 12, 900, 10.5, 14, 10, 2000, 13};
    static const double large[] = {31, 40, 90, 24, 44, 41, 200, 43};
    calib_totals t = {.exchangers = 4, .reps = 4 * CALIB_ROUND_REPS}; /* small rounds of no time */
    _Static_assert(sizeof mid / sizeof mid[0] == CALIB_ROUND_REPS, "one time a repetition");
    _Static_assert(sizeof large / sizeof large[0] == CALIB_ROUND_REPS, "one time a repetition");
    for (int r = 0; r < CALIB_ROUND_REPS; r++) {
        t.mid_ps[r] = 4 * calib_ps(mid[r] * 1e-6);
        t.large_ps[r] = 4 * calib_ps(large[r] * 1e-6);
    }
    ck_assert_double_eq_tol(calib_derive(&t, 1, 1).beta, 7e-6 / (CALIB_LARGE_BYTES - CALIB_MID_BYTES), 1e-15);
    ck_assert_double_eq_tol(calib_derive(&t, 1, 1).alpha, 4e-6, 1e-12);
    /* Without merges, no gamma. */
    ck_assert(isnan(calib_derive(&t, 1, 1).gamma));
}
END_TEST

/* An exchange of P ranks has ceil(log2 P) rounds: 1 at P = 2, 2 at 3 and
 * 4, 3 at 5 to 8, 4 at 9; each rank 12 us plus 12 ns/B an exchange. */
START_TEST(derive_rounds_of_p)
{
    static const struct { int P; double per_round; } cases[] = {{2, 12e-6}, {3, 6e-6}, {4, 6e-6}, {5, 4e-6},
                                                                {8, 4e-6}, {9, 3e-6}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        calib_totals t = {0};
        calib_values v;
        set_rounds(&t, cases[i].P, 1, 12e-6, 12e-9);
        v = calib_derive(&t, 1, 1);
        ck_assert_double_eq_tol(v.alpha, cases[i].per_round, 1e-12);
        ck_assert_double_eq_tol(v.beta, cases[i].per_round * 1e-3, 1e-15);
    }
}
END_TEST

START_TEST(derive_without_samples)
{
    calib_totals t = {0};
    calib_values v = calib_derive(&t, 1, 1);
    ck_assert(isnan(v.alpha) && isnan(v.beta) && isnan(v.gamma));
    set_rounds(&t, 1, 1, 1e-6, 1e-9); /* one rank: no round */
    v = calib_derive(&t, 1, 1);
    ck_assert(isnan(v.alpha) && isnan(v.beta));
}
END_TEST

START_TEST(same_totals_same_settings)
{
    /* Every rank derives from the same totals: identical values, hash. */
    calib_totals t = rig_like();
    sparcml_settings a, b;
    calib_values va = calib_derive(&t, 1, 1), vb = calib_derive(&t, 1, 1);
    parse_env(&a, NULL, NULL);
    parse_env(&b, NULL, NULL);
    settings_calibrate(&a, va.alpha, va.beta, va.gamma, va.vendor_gather);
    settings_calibrate(&b, vb.alpha, vb.beta, vb.gamma, vb.vendor_gather);
    ck_assert(va.alpha == vb.alpha && va.beta == vb.beta && va.gamma == vb.gamma);
    ck_assert(va.vendor_gather == vb.vendor_gather && va.spread == vb.spread && va.reps == vb.reps);
    ck_assert_uint_eq(a.hash, b.hash);
    ck_assert_uint_eq(a.measured, SETTINGS_SET_MODEL);
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
    settings_calibrate(&s, 1.5e-6, 9e-9, 3e-9, 1);
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
    settings_calibrate(&s, 0, -1, 0, 1); /* free merges (SMPI), beta below 0 */
    ck_assert_double_eq_tol(s.alpha, 1e-3 * 1e-6, 1e-18);
    ck_assert_double_eq_tol(s.beta, 1e-4 * 1e-9, 1e-20);
    ck_assert_double_eq_tol(s.gamma, 1e-4 * 1e-9, 1e-20);
    settings_calibrate(&s, 10, 1, 1, 0.5);
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

/* A busy machine: 4 ranks, 2 rounds; the steady repetitions take 10 us
 * (mid) and 24 us (large) a rank, the others are held up by time slices.
 * Two outliers in eight leave the median near the fastest: the fastest
 * counts, as on a quiet machine.  Most repetitions held up (the median
 * over 2 times the fastest): alpha, beta and the vendor's factor are not
 * to be trusted (NaN: the defaults stay), gamma still counts; the same
 * with fewer than CALIB_MIN_REPS repetitions (the budget ran out), and
 * only the repetitions that ran count, whatever the other slots hold. */
START_TEST(derive_robust)
{
    static const double steady_mid[] = {10, 10.5, 5000, 11, 10.2, 12, 800, 10.8};
    static const double steady_large[] = {24, 25, 26, 9000, 24.5, 25.5, 24.2, 700};
    static const double busy_mid[] = {10, 250, 31, 4700, 195, 40, 22, 900};
    static const double busy_large[] = {24, 300, 70, 9000, 64, 27, 500, 51};
    calib_totals t = {.exchangers = 4, .merge_ps = 4 * calib_ps(2e-9 * 2 * CALIB_MERGE_ENTRIES)};
    calib_values v;
    sparcml_settings s;
    _Static_assert(sizeof busy_mid / sizeof busy_mid[0] == CALIB_ROUND_REPS, "one time a repetition");
    set_rounds(&t, 4, 2, 0, 0);
    t.vendor_bytes = 4 * CALIB_LARGE_BYTES;
    for (int r = 0; r < CALIB_ROUND_REPS; r++) {
        t.mid_ps[r] = 4 * calib_ps(steady_mid[r] * 1e-6);
        t.large_ps[r] = 4 * calib_ps(steady_large[r] * 1e-6);
        t.vendor_ps[r] = 4 * calib_ps(100e-6);
    }
    v = calib_derive(&t, 1, 1);
    ck_assert_int_eq(v.reps, CALIB_ROUND_REPS);
    ck_assert_double_le(v.spread, CALIB_SPREAD_MAX);
    ck_assert_double_eq_tol(v.beta, 14e-6 / 2 / (CALIB_LARGE_BYTES - CALIB_MID_BYTES), 1e-15);
    ck_assert(!isnan(v.alpha) && !isnan(v.vendor_gather));
    for (int r = 0; r < CALIB_ROUND_REPS; r++) {
        t.mid_ps[r] = 4 * calib_ps(busy_mid[r] * 1e-6);
        t.large_ps[r] = 4 * calib_ps(busy_large[r] * 1e-6);
    }
    v = calib_derive(&t, 1, 1);
    ck_assert_double_gt(v.spread, CALIB_SPREAD_MAX);
    ck_assert(isnan(v.alpha) && isnan(v.beta) && isnan(v.vendor_gather));
    ck_assert_double_eq_tol(v.gamma, 2e-9, 1e-15);
    /* too few repetitions: the totals hold their number, no times (the
     * verbose line's "spread -", never inf) */
    {
        calib_totals few = {.exchangers = 4, .reps = 4 * (CALIB_MIN_REPS - 1), .merge_ps = t.merge_ps};
        calib_values vf = calib_derive(&few, 1, 1);
        ck_assert_int_eq(vf.reps, CALIB_MIN_REPS - 1);
        ck_assert(isnan(vf.spread) && isnan(vf.alpha) && isnan(vf.beta) && isnan(vf.vendor_gather));
    }
    parse_env(&s, NULL, NULL);
    settings_calibrate(&s, v.alpha, v.beta, v.gamma, v.vendor_gather);
    ck_assert_double_eq_tol(s.alpha, 20e-6, 1e-15); /* the defaults */
    ck_assert_double_eq_tol(s.beta, 8.3e-9, 1e-18);
    ck_assert(s.vendor_gather == 1);
    ck_assert_uint_eq(s.measured, SETTINGS_SET_GAMMA);
    /* the steady repetitions, but only CALIB_MIN_REPS - 1 ran */
    for (int r = 0; r < CALIB_ROUND_REPS; r++) {
        t.mid_ps[r] = 4 * calib_ps(steady_mid[r] * 1e-6);
        t.large_ps[r] = 4 * calib_ps(steady_large[r] * 1e-6);
    }
    t.reps = 4 * (CALIB_MIN_REPS - 1);
    v = calib_derive(&t, 1, 1);
    ck_assert_int_eq(v.reps, CALIB_MIN_REPS - 1);
    ck_assert(isnan(v.alpha) && isnan(v.beta));
    /* three ran, steady; the slots after them hold anything */
    t.reps = 4 * 3;
    for (int r = 3; r < CALIB_ROUND_REPS; r++) t.mid_ps[r] = t.large_ps[r] = 1;
    v = calib_derive(&t, 1, 1);
    ck_assert_double_eq_tol(v.beta, 14e-6 / 2 / (CALIB_LARGE_BYTES - CALIB_MID_BYTES), 1e-15);
    ck_assert_double_eq_tol(v.alpha, 5e-6 - v.beta * CALIB_MID_BYTES, 1e-12);
}
END_TEST

Suite *calibrate_suite(void)
{
    Suite *s = suite_create("calibrate");
    TCase *tc = tcase_create("arithmetic");
    tcase_add_test(tc, picoseconds);
    tcase_add_test(tc, derive);
    tcase_add_test(tc, derive_burst);
    tcase_add_test(tc, derive_vendor_gather);
    tcase_add_test(tc, derive_shared_cores);
    tcase_add_test(tc, derive_loaded);
    tcase_add_test(tc, derive_fastest_round);
    tcase_add_test(tc, derive_robust);
    tcase_add_test(tc, derive_rounds_of_p);
    tcase_add_test(tc, derive_without_samples);
    tcase_add_test(tc, same_totals_same_settings);
    tcase_add_test(tc, user_setting_wins);
    tcase_add_test(tc, clamped_to_the_accepted_range);
    tcase_add_test(tc, calibrate_setting);
    suite_add_tcase(s, tc);
    return s;
}
