/* Unit tests of the pure modules (no MPI_Init needed). */
#include <stdlib.h>

#include "suites.h"

int main(void)
{
    SRunner *sr = srunner_create(stream_suite());
    int failed;
    srunner_add_suite(sr, settings_suite());
    srunner_add_suite(sr, registry_suite());
    srunner_add_suite(sr, select_suite());
    srunner_add_suite(sr, qsgd_suite());
    srunner_add_suite(sr, topk_suite());
    srunner_add_suite(sr, agree_suite());
    srunner_add_suite(sr, calibrate_suite());
    srunner_add_suite(sr, builders_portable_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
