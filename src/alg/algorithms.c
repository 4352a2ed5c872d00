/* algorithms.c -- the table of algorithms.h, made from its list. */
#include "config.h"

#include "alg/algorithms.h"
#include "base/errors.h"

static const sparcml_algorithm_desc auto_row = {.name = "auto"};

const sparcml_algorithm_desc *const sparcml_algorithms[SPARCML_ALG_COUNT_] = {
    [SPARCML_ALG_AUTO] = &auto_row,
#define SPARCML_ALG_ROW(ID, STEM) [SPARCML_ALG_##ID] = &sparcml_alg_##STEM,
    SPARCML_ALGORITHM_LIST(SPARCML_ALG_ROW)
#undef SPARCML_ALG_ROW
};

const char *sparcml_algorithm_name(sparcml_algorithm a)
{
    return a >= 0 && a < SPARCML_ALG_COUNT_ ? sparcml_algorithms[a]->name : "invalid";
}

int sparcml_algorithm_send_slots(int P)
{
    return P > SPARCML_PIPELINE_CHUNKS_MAX ? P : SPARCML_PIPELINE_CHUNKS_MAX;
}

int sparcml_algorithm_restriction(sparcml_algorithm a, const sparcml_problem *p)
{
    const sparcml_algorithm_desc *d = sparcml_algorithms[a];
    return d->restriction ? d->restriction(p) : SPARCML_R_OK;
}

/* The one row that rides on its whole exchange (the list has exactly one). */
sparcml_algorithm sparcml_exchange_algorithm(void)
{
    for (int a = SPARCML_ALG_AUTO + 1; a < SPARCML_ALG_COUNT_; a++)
        if (sparcml_algorithms[a]->ride == ALG_RIDES_EXCHANGE) return (sparcml_algorithm)a;
    return SPARCML_ALG_AUTO;
}
