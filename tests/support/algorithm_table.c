/* algorithm_table.c -- test support only: prints the library's table of
 * algorithms (src/alg/algorithms.h), one line per row but auto, in the
 * table's order:
 *
 *   NAME sparse=0|1 ride=exchange|phase|never pipelines=0|1 dense_recv=0|1 memory=BOUND|none
 *
 * sparse: it sums streams (0: the vendor's dense allreduce of the values);
 * ride: how the agreement's records may ride on it; pipelines: it has a
 * chunks function; dense_recv: its restriction refuses a recv buffer that
 * cannot hold the dense result (a call of dimension 2^40 that fits only
 * sparse), and only that; memory: its memory_bound in dense results
 * (none: it claims none).  The test scripts pick the algorithms a check
 * applies to by these properties (tests/scripts/common.sh,
 * algorithms_where), so that a new row is tested without a change to them. */
#include "config.h"

#include <stdio.h>

#include "alg/algorithms.h"

static const char *ride_name(alg_ride r)
{
    switch (r) {
    case ALG_RIDES_EXCHANGE: return "exchange";
    case ALG_RIDES_PHASE: return "phase";
    case ALG_RIDES_NOT: return "never";
    }
    return "invalid";
}

/* Whether the row's restriction refuses a result that fits only sparse,
 * and nothing else of an ordinary problem. */
static int needs_dense_recv(sparcml_algorithm a)
{
    sparcml_problem p = {
        .P = 4, .dim = (uint64_t)1 << 40, .vtype = SPARCML_FLOAT, .k_max = 64, .k_sum = 256,
        .dense_fits = 1, .overlap = 1, .ranks_per_core = 1,
    };
    int fits = sparcml_algorithm_restriction(a, &p) == SPARCML_R_OK;
    p.dense_fits = 0;
    return fits && sparcml_algorithm_restriction(a, &p) != SPARCML_R_OK;
}

int main(void)
{
    for (int a = SPARCML_ALG_AUTO + 1; a < SPARCML_ALG_COUNT_; a++) {
        const sparcml_algorithm_desc *d = sparcml_algorithms[a];
        printf("%s sparse=%d ride=%s pipelines=%d dense_recv=%d ", d->name, d->sparse != 0, ride_name(d->ride),
               d->chunks != NULL, needs_dense_recv((sparcml_algorithm)a));
        if (d->memory_bound > 0) printf("memory=%g\n", d->memory_bound);
        else printf("memory=none\n");
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
