#ifndef SPARCML_TEST_SUITES_H
#define SPARCML_TEST_SUITES_H
#include <check.h>
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
