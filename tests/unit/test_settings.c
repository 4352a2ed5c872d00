/* Parsing and validation of the SPARCML_* variables. */
#include <string.h>

#include "core/settings.h"
#include "suites.h"

/* A fake environment: pairs of name, value. */
static const char *fake[16];

static const char *lookup(const char *name)
{
    for (int i = 0; fake[i]; i += 2)
        if (strcmp(fake[i], name) == 0) return fake[i + 1];
    return NULL;
}

static int parse_with(sparcml_settings *s, const char *n1, const char *v1)
{
    const char *names[2] = {n1, NULL};
    memset(fake, 0, sizeof fake);
    fake[0] = n1;
    fake[1] = v1;
    return settings_parse(s, lookup, n1 ? names : NULL);
}

START_TEST(defaults)
{
    sparcml_settings s;
    ck_assert_int_eq(parse_with(&s, NULL, NULL), 0);
    ck_assert_int_eq(s.disable, 0);
    ck_assert_int_eq(s.algorithm, SPARCML_ALG_AUTO);
    ck_assert_int_eq(s.verbose, 0);
    ck_assert_int_eq(s.stats, 0);
    ck_assert_double_eq_tol(s.alpha, 20e-6, 1e-12);
    ck_assert_double_eq_tol(s.beta, 8.3e-9, 1e-15);
    ck_assert_double_eq_tol(s.gamma, 2.5e-9, 1e-15);
    ck_assert_int_eq(s.piggyback, 1);
    ck_assert(s.ranks_per_core == 0); /* auto */
    ck_assert_str_eq(s.error, "");
}
END_TEST

START_TEST(valid_values)
{
    sparcml_settings s;
    ck_assert_int_eq(parse_with(&s, "SPARCML_ALGORITHM", "dsar_split_allgather"), 0);
    ck_assert_int_eq(s.algorithm, SPARCML_ALG_DSAR_SPLIT_ALLGATHER);
    ck_assert_int_eq(parse_with(&s, "SPARCML_ALGORITHM", "SSAR_Recursive_double"), 0);
    ck_assert_int_eq(s.algorithm, SPARCML_ALG_RECURSIVE_DOUBLE);
    ck_assert_int_eq(parse_with(&s, "SPARCML_VERBOSE", "1"), 0);
    ck_assert_int_eq(s.verbose, 1);
    ck_assert_int_eq(parse_with(&s, "SPARCML_ALPHA_US", "50"), 0);
    ck_assert_double_eq_tol(s.alpha, 50e-6, 1e-12);
    ck_assert_int_eq(parse_with(&s, "SPARCML_BETA_NS_PER_BYTE", "8"), 0);
    ck_assert_double_eq_tol(s.beta, 8e-9, 1e-15);
    ck_assert_int_eq(parse_with(&s, "SPARCML_RANKS_PER_CORE", "4"), 0);
    ck_assert_double_eq_tol(s.ranks_per_core, 4, 1e-12);
    ck_assert_int_eq(parse_with(&s, "SPARCML_RANKS_PER_CORE", "auto"), 0);
    ck_assert(s.ranks_per_core == 0);
    ck_assert_int_eq(parse_with(&s, "SPARCML_PIGGYBACK", "0"), 0);
    ck_assert_int_eq(s.piggyback, 0);
    ck_assert_int_eq(parse_with(&s, "SPARCML_SPLIT_GATHER", "vendor"), 0);
    ck_assert_int_eq(s.split_gather, COST_GATHER_VENDOR);
    ck_assert_int_eq(parse_with(&s, "SPARCML_SPLIT_GATHER", "doubling"), 0);
    ck_assert_int_eq(s.split_gather, COST_GATHER_DOUBLING);
    ck_assert_int_eq(parse_with(&s, "SPARCML_SPLIT_GATHER", "ring"), 0);
    ck_assert_int_eq(s.split_gather, COST_GATHER_RING);
    ck_assert_int_eq(parse_with(&s, "SPARCML_SPLIT_GATHER", "auto"), 0);
    ck_assert_int_eq(s.split_gather, COST_GATHER_MODEL);
}
END_TEST

START_TEST(invalid_values_name_the_variable)
{
    static const char *const bad[][2] = {
        {"SPARCML_DISABLE", "yes"},       {"SPARCML_DISABLE", ""},
        {"SPARCML_VERBOSE", "2"},         {"SPARCML_STATS", "on"},
        {"SPARCML_ALGORITHM", "ring"},    {"SPARCML_ALGORITHM", ""},
        {"SPARCML_ALPHA_US", "-1"},       {"SPARCML_ALPHA_US", "abc"},
        {"SPARCML_ALPHA_US", "5us"},      {"SPARCML_BETA_NS_PER_BYTE", "nan"},
        {"SPARCML_BETA_NS_PER_BYTE", "inf"}, {"SPARCML_GAMMA_NS_PER_ENTRY", "0"},
        {"SPARCML_RANKS_PER_CORE", "0.5"}, {"SPARCML_RANKS_PER_CORE", "automatic"},
        {"SPARCML_RANKS_PER_CORE", ""},   {"SPARCML_PIGGYBACK", "on"},
        {"SPARCML_PIPELINE_CHUNKS", "9"}, {"SPARCML_PIPELINE_CHUNKS", "-1"},
        {"SPARCML_PIPELINE_CHUNKS", "auto"}, {"SPARCML_SPLIT_GATHER", "Library"},
        {"SPARCML_SPLIT_GATHER", "library"}, {"SPARCML_SPLIT_GATHER", ""},
        /* Booleans are 0 or 1, in any case: no words. */
        {"SPARCML_TRANSPARENT", "TRUE"},  {"SPARCML_COMPRESS_FEEDBACK", "On"},
        {"SPARCML_COMPRESS", "TOP"},      {"SPARCML_QSGD_BITS", "auto"},
    };

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sparcml_settings s;
        ck_assert_int_eq(parse_with(&s, bad[i][0], bad[i][1]), -1);
        ck_assert_ptr_nonnull(strstr(s.error, bad[i][0]));
    }
}
END_TEST

/* The message gives the accepted range exactly (2^64 - 1, not 2^64). */
START_TEST(uint_range_is_exact_in_the_message)
{
    sparcml_settings s;
    ck_assert_int_eq(parse_with(&s, "SPARCML_QSGD_SEED", "-1"), -1);
    ck_assert_ptr_nonnull(strstr(s.error, "[0, 18446744073709551615]"));
    ck_assert_int_eq(parse_with(&s, "SPARCML_QSGD_SEED", "18446744073709551615"), 0);
    ck_assert_uint_eq(s.qsgd_seed, UINT64_MAX);
}
END_TEST

/* The message lists exactly the values the variable accepts. */
START_TEST(name_messages_list_the_accepted_names)
{
    sparcml_settings s;
    ck_assert_int_eq(parse_with(&s, "SPARCML_SPLIT_GATHER", "library"), -1);
    ck_assert_ptr_nonnull(strstr(s.error, "(expected auto, vendor, doubling or ring)"));
    ck_assert_int_eq(parse_with(&s, "SPARCML_COMPRESS", "on"), -1);
    ck_assert_ptr_nonnull(strstr(s.error, "(expected off, topk or cltk)"));
}
END_TEST

/* Keywords in any case: the same field as in lower case. */
START_TEST(keywords_are_case_insensitive)
{
    static const struct { const char *name, *value; size_t offset; int want; } cases[] = {
        {"SPARCML_COMPRESS", "TOPK", offsetof(sparcml_settings, compress), COMPRESS_TOPK},
        {"SPARCML_COMPRESS", "Cltk", offsetof(sparcml_settings, compress), COMPRESS_CLTK},
        {"SPARCML_COMPRESS", "OFF", offsetof(sparcml_settings, compress), COMPRESS_OFF},
        {"SPARCML_SPLIT_GATHER", "Ring", offsetof(sparcml_settings, split_gather), COST_GATHER_RING},
        {"SPARCML_SPLIT_GATHER", "VENDOR", offsetof(sparcml_settings, split_gather), COST_GATHER_VENDOR},
        {"SPARCML_SPLIT_GATHER", "dOUBLING", offsetof(sparcml_settings, split_gather), COST_GATHER_DOUBLING},
        {"SPARCML_SPLIT_GATHER", "AUTO", offsetof(sparcml_settings, split_gather), COST_GATHER_MODEL},
        {"SPARCML_ALGORITHM", "DENSE", offsetof(sparcml_settings, algorithm), SPARCML_ALG_DENSE},
    };
    sparcml_settings s;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_int_eq(parse_with(&s, cases[i].name, cases[i].value), 0);
        ck_assert_int_eq(*(const int *)((const char *)&s + cases[i].offset), cases[i].want);
    }
    ck_assert_int_eq(parse_with(&s, "SPARCML_RANKS_PER_CORE", "2"), 0);
    ck_assert_int_eq(parse_with(&s, "SPARCML_RANKS_PER_CORE", "AUTO"), 0);
    ck_assert(s.ranks_per_core == 0);
    ck_assert_int_eq(parse_with(&s, "SPARCML_RANKS_PER_CORE", "Auto"), 0);
    ck_assert(s.ranks_per_core == 0);
}
END_TEST

START_TEST(unknown_variable_is_an_error)
{
    sparcml_settings s;
    ck_assert_int_eq(parse_with(&s, "SPARCML_ALGORTHM", "dense"), -1);
    ck_assert_ptr_nonnull(strstr(s.error, "SPARCML_ALGORTHM"));
}
END_TEST

START_TEST(hash_tracks_selection_settings)
{
    sparcml_settings a, b, c;
    parse_with(&a, "SPARCML_ALGORITHM", "dense");
    parse_with(&b, "SPARCML_ALGORITHM", "auto");
    parse_with(&c, "SPARCML_VERBOSE", "1"); /* does not steer selection */
    ck_assert_uint_ne(a.hash, b.hash);
    ck_assert_uint_eq(b.hash, c.hash);
    parse_with(&a, "SPARCML_RANKS_PER_CORE", "2");
    parse_with(&c, "SPARCML_PIGGYBACK", "0");
    ck_assert_uint_ne(a.hash, b.hash);
    ck_assert_uint_ne(c.hash, b.hash);
    parse_with(&a, "SPARCML_SPLIT_GATHER", "ring");
    ck_assert_uint_ne(a.hash, b.hash);
}
END_TEST

Suite *settings_suite(void)
{
    Suite *s = suite_create("settings");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, defaults);
    tcase_add_test(tc, valid_values);
    tcase_add_test(tc, invalid_values_name_the_variable);
    tcase_add_test(tc, uint_range_is_exact_in_the_message);
    tcase_add_test(tc, name_messages_list_the_accepted_names);
    tcase_add_test(tc, keywords_are_case_insensitive);
    tcase_add_test(tc, unknown_variable_is_an_error);
    tcase_add_test(tc, hash_tracks_selection_settings);
    suite_add_tcase(s, tc);
    return s;
}
