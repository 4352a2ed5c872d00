/* algorithms.c -- the table of algorithms.h, made from its list. */
#include "config.h"

#include "alg/algorithms.h"

const sparcml_algorithm_desc sparcml_algorithms[SPARCML_ALG_COUNT_] = {
    [SPARCML_ALG_AUTO] = {.name = "auto"},
#define SPARCML_ALG_ROW(ID, NAME, STEM)                                                                \
    [SPARCML_ALG_##ID] = {.name = NAME, .first = sparcml_##STEM, .restriction = STEM##_restriction,    \
                          .cost = STEM##_cost, .scratch = STEM##_scratch},
    SPARCML_ALGORITHM_LIST(SPARCML_ALG_ROW)
#undef SPARCML_ALG_ROW
};

const char *sparcml_algorithm_name(sparcml_algorithm a)
{
    return a >= 0 && a < SPARCML_ALG_COUNT_ ? sparcml_algorithms[a].name : "invalid";
}
