/* The datatype-name grammar. */
#include "shim/registry.h"
#include "sparcml.h"
#include "suites.h"

START_TEST(grammar_accepts_the_four_value_types)
{
    ck_assert_int_eq(registry_parse_name("sparcml:v1:float"), SPARCML_FLOAT);
    ck_assert_int_eq(registry_parse_name("sparcml:v1:double"), SPARCML_DOUBLE);
    ck_assert_int_eq(registry_parse_name("sparcml:v1:int32"), SPARCML_INT32);
    ck_assert_int_eq(registry_parse_name("sparcml:v1:int64"), SPARCML_INT64);
}
END_TEST

START_TEST(grammar_ignores_other_names)
{
    ck_assert_int_eq(registry_parse_name(""), 0);
    ck_assert_int_eq(registry_parse_name("MPI_FLOAT"), 0);
    ck_assert_int_eq(registry_parse_name("my sparse type"), 0);
    ck_assert_int_eq(registry_parse_name("sparcml"), 0);
    ck_assert_int_eq(registry_parse_name("SPARCML:v1:float"), 0);
}
END_TEST

START_TEST(grammar_rejects_malformed_tags)
{
    ck_assert_int_eq(registry_parse_name("sparcml:"), -1);
    ck_assert_int_eq(registry_parse_name("sparcml:v2:float"), -1);
    ck_assert_int_eq(registry_parse_name("sparcml:v1:"), -1);
    ck_assert_int_eq(registry_parse_name("sparcml:v1:Float"), -1);
    ck_assert_int_eq(registry_parse_name("sparcml:v1:float "), -1);
    ck_assert_int_eq(registry_parse_name("sparcml:v1:int16"), -1);
}
END_TEST

Suite *registry_suite(void)
{
    Suite *s = suite_create("registry");
    TCase *tc = tcase_create("name grammar");
    tcase_add_test(tc, grammar_accepts_the_four_value_types);
    tcase_add_test(tc, grammar_ignores_other_names);
    tcase_add_test(tc, grammar_rejects_malformed_tags);
    suite_add_tcase(s, tc);
    return s;
}
