/* Parsing and validation of the SPARCML_* variables. */
#include <math.h>
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

/* What module systems and Spack set is ignored without a word; other
 * unknown names are kept for the warning; neither is an error. */
START_TEST(module_suffixes_are_ignored)
{
    static const char *const ignored[] = {
        "SPARCML_ROOT", "SPARCML_DIR", "SPARCML_HOME", "SPARCML_PREFIX", "SPARCML_PATH",
        "SPARCML_VERSION", "SPARCML_LIB", "SPARCML_INC", "SPARCML_INCLUDE", "SPARCML_BIN",
        "SPARCML_PKG_CONFIG_PATH", "SPARCML_INSTALL_DIR",
    };
    static const char *const kept[] = {
        "SPARCML_ROOTS", "SPARCML_ROOT_", "SPARCML_DIRECTORY", "SPARCML_LIBS", "SPARCML_BINARY",
        "SPARCML_root", "SPARCML_TRANSPARNT", "SPARCML_",
    };
    sparcml_settings s;
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) {
        ck_assert_int_eq(settings_ignored_name(ignored[i]), 1);
        ck_assert_int_eq(parse_with(&s, ignored[i], "/opt/sparcml"), 0);
        ck_assert_int_eq(s.unknown_count, 0);
    }
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        ck_assert_int_eq(settings_ignored_name(kept[i]), 0);
        ck_assert_int_eq(parse_with(&s, kept[i], "1"), 0);
        ck_assert_int_eq(s.unknown_count, 1);
        ck_assert_str_eq(s.unknown[0], kept[i]);
    }
    ck_assert_int_eq(s.transparent, 0); /* a misspelt name sets nothing */
}
END_TEST

/* Every unknown name is kept (up to SETTINGS_UNKNOWN_MAX), known ones not,
 * and an invalid value still fails beside them. */
START_TEST(unknown_names_are_kept_not_errors)
{
    const char *names[] = {"SPARCML_A1", "SPARCML_VERBOSE", "SPARCML_A2", "SPARCML_ROOT", "SPARCML_A3",
                           "SPARCML_A4", "SPARCML_A5", "SPARCML_A6", "SPARCML_A7", "SPARCML_A8",
                           "SPARCML_A9", NULL};
    sparcml_settings s;
    memset(fake, 0, sizeof fake);
    fake[0] = "SPARCML_VERBOSE";
    fake[1] = "1";
    ck_assert_int_eq(settings_parse(&s, lookup, names), 0);
    ck_assert_int_eq(s.verbose, 1);
    ck_assert_int_eq(s.unknown_count, 8);
    ck_assert_str_eq(s.unknown[0], "SPARCML_A1");
    ck_assert_str_eq(s.unknown[1], "SPARCML_A2");
    ck_assert_str_eq(s.unknown[7], "SPARCML_A8");
    fake[1] = "2";
    ck_assert_int_eq(settings_parse(&s, lookup, names), -1);
    ck_assert_ptr_nonnull(strstr(s.error, "SPARCML_VERBOSE"));
    ck_assert_int_eq(s.unknown_count, 8);
}
END_TEST

/* The nearest known name for a typo (a letter missing, swapped, extra or
 * wrong, any case); none for a name nothing resembles. */
START_TEST(did_you_mean)
{
    static const char *const near[][2] = {
        {"SPARCML_TRANSPARNT", "SPARCML_TRANSPARENT"},
        {"SPARCML_ALGORTIHM", "SPARCML_ALGORITHM"},
        {"SPARCML_SATTS", "SPARCML_STATS"}, /* a swap is one edit, two letters wrong two */
        {"SPARCML_ALGORITM", "SPARCML_ALGORITHM"},
        {"SPARCML_VERBOSEE", "SPARCML_VERBOSE"},
        {"SPARCML_verbose", "SPARCML_VERBOSE"},
        {"SPARCML_STAT", "SPARCML_STATS"},
        {"SPARCML_TRANSPARENT_MIN_BYTE", "SPARCML_TRANSPARENT_MIN_BYTES"},
        {"SPARCML_COMPRESS_DENSTY", "SPARCML_COMPRESS_DENSITY"},
        {"SPARCML_QSGD_BIT", "SPARCML_QSGD_BITS"},
        {"SPARCML_PROGRES_US", "SPARCML_PROGRESS_US"},
    };
    static const char *const far[] = {"SPARCML_FOO", "SPARCML_X", "SPARCML_", "SPARCML_DEBUG",
                                      "SPARCML_NUM_THREADS", "SPARCML_LOG_LEVEL", "SPARCML_TRANSPORT_LAYER"};
    char line[256];
    for (size_t i = 0; i < sizeof near / sizeof near[0]; i++) {
        const char *got = settings_nearest_name(near[i][0]);
        ck_assert_msg(got && strcmp(got, near[i][1]) == 0, "%s: got %s, want %s", near[i][0],
                      got ? got : "none", near[i][1]);
    }
    for (size_t i = 0; i < sizeof far / sizeof far[0]; i++)
        ck_assert_msg(settings_nearest_name(far[i]) == NULL, "%s: got %s", far[i], settings_nearest_name(far[i]));
    settings_unknown_warning("SPARCML_TRANSPARNT", line, sizeof line);
    ck_assert_str_eq(line, "sparcml: warning: unknown variable SPARCML_TRANSPARNT ignored "
                           "(did you mean SPARCML_TRANSPARENT?)");
    settings_unknown_warning("SPARCML_FOO", line, sizeof line);
    ck_assert_ptr_null(strstr(line, "did you mean"));
    ck_assert_ptr_nonnull(strstr(line, "unknown variable SPARCML_FOO ignored"));
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

/* The digest of the defaults, written out from sparcml(7)'s defaults. */
START_TEST(digest_of_the_defaults)
{
    static const char want[] = "SPARCML_ALGORITHM=auto\nSPARCML_ALPHA_US=20\nSPARCML_BETA_NS_PER_BYTE=8.3\n"
                               "SPARCML_GAMMA_NS_PER_ENTRY=2.5\nSPARCML_QSGD_BITS=0\nSPARCML_QSGD_BUCKET=512\n"
                               "SPARCML_QSGD_SEED=0\nSPARCML_QSGD_SPARSE=0\nSPARCML_PIGGYBACK=1\n"
                               "SPARCML_RANKS_PER_CORE=auto\nSPARCML_PIPELINE_CHUNKS=0\nSPARCML_SPLIT_GATHER=auto\n"
                               "SPARCML_COMPRESS_DENSITY=0.01\nSPARCML_COMPRESS_FEEDBACK=1\nvendor_gather=1\n"
                               "timed prices=1\n";
    static const char want_job[] = "SPARCML_DISABLE=0\nSPARCML_STATS=0\nSPARCML_CALIBRATE=1\nSPARCML_REPRODUCIBLE=0\n"
                                   "SPARCML_TRANSPARENT=0\n"
                                   "SPARCML_TRANSPARENT_MIN_BYTES=1048576\nSPARCML_COMPRESS=off\n"
                                   "SPARCML_COMPRESS_MIN_BYTES=1048576\n";
    sparcml_settings s;
    char d[SETTINGS_DIGEST_BYTES];
    parse_with(&s, NULL, NULL);
    memset(d, 'x', sizeof d);
    settings_digest(&s, d);
    ck_assert_str_eq(d, want);
    for (size_t i = strlen(d); i < sizeof d; i++) ck_assert_int_eq(d[i], 0); /* NUL-padded */
    settings_job_digest(&s, d);
    ck_assert_str_eq(d, want_job);
}
END_TEST

/* Whether calls are timed (settings_timed_prices) is in the hash and the
 * digest: the rationing of trials counts alike only where every rank
 * times.  Not with SPARCML_REPRODUCIBLE=1 nor the whole model set; the
 * whole model set at the defaults' values differs from the defaults
 * only there. */
START_TEST(timed_prices_in_the_hash)
{
    sparcml_settings plain, repro, whole;
    char dp[SETTINGS_DIGEST_BYTES], dw[SETTINGS_DIGEST_BYTES], line[256];
    parse_with(&plain, NULL, NULL);
    parse_with(&repro, "SPARCML_REPRODUCIBLE", "1");
    memset(fake, 0, sizeof fake);
    fake[0] = "SPARCML_ALPHA_US"; fake[1] = "20";
    fake[2] = "SPARCML_BETA_NS_PER_BYTE"; fake[3] = "8.3";
    fake[4] = "SPARCML_GAMMA_NS_PER_ENTRY"; fake[5] = "2.5";
    ck_assert_int_eq(settings_parse(&whole, lookup, NULL), 0);
    ck_assert(settings_timed_prices(&plain) && !settings_timed_prices(&repro) && !settings_timed_prices(&whole));
    ck_assert_uint_ne(plain.hash, whole.hash);
    ck_assert_uint_eq(repro.hash, whole.hash); /* job scope: compared at MPI_Init, not here */
    settings_digest(&plain, dp);
    settings_digest(&whole, dw);
    ck_assert_int_eq(settings_digest_difference(dp, 0, dw, 1, line, sizeof line), 1);
    ck_assert_str_eq(line, "timed prices is 1 on rank 0 and 0 on rank 1");
}
END_TEST

/* Two ranks' digests: the first differing variable in table order, with
 * both values and ranks; nothing for equal settings. */
START_TEST(digest_difference_names_variable_and_values)
{
    sparcml_settings a, b;
    char da[SETTINGS_DIGEST_BYTES], db[SETTINGS_DIGEST_BYTES], line[256];
    parse_with(&a, NULL, NULL);
    parse_with(&b, "SPARCML_VERBOSE", "1"); /* SCOPE_RANK: not in the digest */
    settings_digest(&a, da);
    settings_digest(&b, db);
    strcpy(line, "untouched");
    ck_assert_int_eq(settings_digest_difference(da, 0, db, 2, line, sizeof line), 0);
    ck_assert_str_eq(line, "untouched");
    parse_with(&b, "SPARCML_ALGORITHM", "SSAR_SPLIT_ALLGATHER");
    settings_digest(&b, db);
    ck_assert_int_eq(settings_digest_difference(da, 0, db, 2, line, sizeof line), 1);
    ck_assert_str_eq(line, "SPARCML_ALGORITHM is auto on rank 0 and ssar_split_allgather on rank 2");
    ck_assert_int_eq(settings_digest_difference(db, 5, da, 1, line, sizeof line), 1);
    ck_assert_str_eq(line, "SPARCML_ALGORITHM is ssar_split_allgather on rank 5 and auto on rank 1");
    /* Two differ: the first in table order. */
    memset(fake, 0, sizeof fake);
    fake[0] = "SPARCML_COMPRESS_FEEDBACK"; fake[1] = "0";
    fake[2] = "SPARCML_QSGD_BUCKET"; fake[3] = "64";
    ck_assert_int_eq(settings_parse(&b, lookup, NULL), 0);
    settings_digest(&b, db);
    ck_assert_int_eq(settings_digest_difference(da, 3, db, 1, line, sizeof line), 1);
    ck_assert_str_eq(line, "SPARCML_QSGD_BUCKET is 512 on rank 3 and 64 on rank 1");
    /* Truncated to len, NUL-terminated. */
    ck_assert_int_eq(settings_digest_difference(da, 3, db, 1, line, 12), 1);
    ck_assert_str_eq(line, "SPARCML_QSG");
    /* The SCOPE_JOB digest, which MPI_Init compares. */
    parse_with(&b, "SPARCML_COMPRESS", "TopK");
    settings_job_digest(&a, da);
    settings_job_digest(&b, db);
    ck_assert_int_eq(settings_digest_difference(da, 0, db, 1, line, sizeof line), 1);
    ck_assert_str_eq(line, "SPARCML_COMPRESS is off on rank 0 and topk on rank 1");
}
END_TEST

/* Everything that enters the hash enters the digest: measured values and
 * vendor_gather, and doubles one unit in the last place apart. */
START_TEST(digest_follows_the_hash)
{
    sparcml_settings a, b;
    char da[SETTINGS_DIGEST_BYTES], db[SETTINGS_DIGEST_BYTES], line[256];
    parse_with(&a, NULL, NULL);
    parse_with(&b, NULL, NULL);
    settings_calibrate(&a, 3e-6, 2e-9, 4e-9, 1.5);
    settings_calibrate(&b, 3e-6, 2e-9, 4e-9, 1.5);
    settings_digest(&a, da);
    settings_digest(&b, db);
    ck_assert_uint_eq(a.hash, b.hash);
    ck_assert_int_eq(settings_digest_difference(da, 0, db, 1, line, sizeof line), 0);
    settings_calibrate(&b, 3e-6, 2e-9, 4e-9, 1.75);
    settings_digest(&b, db);
    ck_assert_uint_ne(a.hash, b.hash);
    ck_assert_int_eq(settings_digest_difference(da, 0, db, 1, line, sizeof line), 1);
    ck_assert_str_eq(line, "vendor_gather is 1.5 on rank 0 and 1.75 on rank 1");
    settings_calibrate(&b, 3e-6, 2e-9, 4e-9, 1.5);
    parse_with(&a, "SPARCML_ALPHA_US", "12.5"); /* set: the measurement leaves it */
    settings_calibrate(&a, 3e-6, 2e-9, 4e-9, 1.5);
    settings_digest(&a, da);
    settings_digest(&b, db);
    ck_assert_int_eq(settings_digest_difference(da, 0, db, 1, line, sizeof line), 1);
    ck_assert_str_eq(line, "SPARCML_ALPHA_US is 12.5 on rank 0 and measured on rank 1");
    /* A setting that changes what is measured is named, not the measured
     * value that follows from it. */
    parse_with(&a, "SPARCML_RANKS_PER_CORE", "2");
    settings_calibrate(&a, 6e-6, 2e-9, 4e-9, 1.5);
    settings_digest(&a, da);
    ck_assert_int_eq(settings_digest_difference(da, 0, db, 1, line, sizeof line), 1);
    ck_assert_str_eq(line, "SPARCML_RANKS_PER_CORE is 2 on rank 0 and auto on rank 1");
    /* A measured value alone that differs is named as measured. */
    parse_with(&a, NULL, NULL);
    settings_calibrate(&a, 6e-6, 2e-9, 4e-9, 1.5);
    settings_digest(&a, da);
    ck_assert_int_eq(settings_digest_difference(da, 0, db, 1, line, sizeof line), 1);
    ck_assert_str_eq(line, "SPARCML_ALPHA_US (measured) is 6 on rank 0 and 3 on rank 1");
    /* The measured gamma and its neighbour double: different text. */
    parse_with(&a, NULL, NULL);
    settings_calibrate(&a, 3e-6, 2e-9, 4e-9, 1.5);
    settings_calibrate(&b, 3e-6, 2e-9, nextafter(4e-9, 1), 1.5);
    settings_digest(&a, da);
    settings_digest(&b, db);
    ck_assert_uint_ne(a.hash, b.hash);
    ck_assert_int_eq(settings_digest_difference(da, 0, db, 1, line, sizeof line), 1);
    ck_assert_msg(strncmp(line, "SPARCML_GAMMA_NS_PER_ENTRY (measured) is 4 on rank 0 and ", 57) == 0, "%s", line);
    /* Consecutive doubles, measured (no text sets some of them): each
     * digest differs from the one before. */
    for (int i = 0; i < 256; i++) {
        double alpha = a.alpha, gamma = a.gamma;
        settings_calibrate(&b, nextafter(alpha, 1), 2e-9, nextafter(gamma, 1), 1.5);
        settings_digest(&b, db);
        ck_assert_int_eq(settings_digest_difference(da, 0, db, 1, line, sizeof line), 1);
        ck_assert_ptr_nonnull(strstr(line, "SPARCML_ALPHA_US (measured) is "));
        memcpy(da, db, sizeof da);
        a = b;
    }
}
END_TEST

/* The longest values of every variable fit, with room to spare. */
START_TEST(digest_fits)
{
    sparcml_settings s;
    char d[SETTINGS_DIGEST_BYTES];
    parse_with(&s, "SPARCML_ALGORITHM", "ssar_recursive_double");
    s.qsgd_seed = UINT64_MAX;
    s.qsgd_bucket = UINT64_MAX;
    s.pipeline_chunks = UINT64_MAX;
    s.ranks_per_core = nextafter(1.0 / 3, 1);
    s.compress_density = nextafter(1.0 / 3, 0);
    settings_calibrate(&s, nextafter(1.0 / 3e5, 1), nextafter(1.0 / 3e8, 1), nextafter(1.0 / 7e8, 0),
                       nextafter(4.0 / 3, 2));
    settings_digest(&s, d);
    ck_assert_uint_lt(strlen(d), SETTINGS_DIGEST_BYTES - 100);
    ck_assert_ptr_nonnull(strstr(d, "\nvendor_gather="));
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
    tcase_add_test(tc, module_suffixes_are_ignored);
    tcase_add_test(tc, unknown_names_are_kept_not_errors);
    tcase_add_test(tc, did_you_mean);
    tcase_add_test(tc, digest_of_the_defaults);
    tcase_add_test(tc, timed_prices_in_the_hash);
    tcase_add_test(tc, digest_difference_names_variable_and_values);
    tcase_add_test(tc, digest_follows_the_hash);
    tcase_add_test(tc, digest_fits);
    tcase_add_test(tc, hash_tracks_selection_settings);
    suite_add_tcase(s, tc);
    return s;
}
