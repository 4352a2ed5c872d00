#ifndef SPARCML_TEST_SUITES_H
#define SPARCML_TEST_SUITES_H
#include <check.h>

/* A passing assertion marks nothing.  Check's own ck_assert_msg records
 * every passing one as the test's last known point (a write to its
 * results pipe, so that a crash can be located); the entry-by-entry loops
 * here pass millions of assertions, and under valgrind those system calls
 * would be most of the suite's time.  A failing assertion still reports its
 * file, line and message; a crash is located by valgrind or the
 * sanitizers' stack trace.  Every assertion macro of check.h expands to
 * this one. */
#undef ck_assert_msg
#define ck_assert_msg(expr, ...) \
    ((expr) ? (void)0 : _ck_assert_failed(__FILE__, __LINE__, "Assertion '" #expr "' failed", ##__VA_ARGS__))
Suite *stream_suite(void);
Suite *settings_suite(void);
Suite *registry_suite(void);
Suite *select_suite(void);
Suite *qsgd_suite(void);
Suite *topk_suite(void);
Suite *agree_suite(void);
Suite *calibrate_suite(void);
Suite *builders_portable_suite(void);
#endif
