/* The header's builders on their portable loops: the cases test_stream.c
 * runs on the SIMD ones (builders_cases.h), with SPARCML_NO_SIMD. */
#define SPARCML_NO_SIMD
#include "sparcml.h"
#ifdef SPARCML_SSE2_
#error "SPARCML_NO_SIMD must select the portable loops"
#endif
#include "builders_cases.h"
#include "suites.h"

START_TEST(from_sorted_portable_loops)
{
    from_sorted_cases();
}
END_TEST

START_TEST(from_dense_portable_loops)
{
    from_dense_cases();
}
END_TEST

Suite *builders_portable_suite(void)
{
    Suite *s = suite_create("builders_portable");
    TCase *tc = tcase_create("from_sorted");
    tcase_add_test(tc, from_sorted_portable_loops);
    tcase_add_test(tc, from_dense_portable_loops);
    tcase_set_timeout(tc, 120); /* about 1 s each, 2-4 s under the sanitizers */
    suite_add_tcase(s, tc);
    return s;
}
