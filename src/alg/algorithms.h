/* algorithms.h -- the table of the algorithms.
 *
 * One row per algorithm: its id (SPARCML_ALG_<ID>), its SPARCML_ALGORITHM
 * name and its file's stem.  The file alg/<stem>.c defines
 *   int sparcml_<stem>(sched *s)       the first step of its schedule;
 *   int <stem>_restriction(problem)    SPARCML_R_OK where it can run the
 *                                      problem, else the reason it cannot;
 *   double <stem>_cost(model, problem) its modelled time in seconds;
 *   void <stem>_scratch(call, problem, need) the most bytes each scratch
 *                                      pool may have to hold (alg/scratch.h);
 * and opens with Algorithm / Restrictions / Cost / Memory / Rounds.  The
 * enum, the settings' names, the selector and the dispatch all come from
 * this list: adding an algorithm is one file and one row. */
#ifndef SPARCML_ALGORITHMS_H
#define SPARCML_ALGORITHMS_H

#include "alg/cost_model.h"
#include "alg/scratch.h"
#include "runtime/schedule.h"

#define SPARCML_ALGORITHM_LIST(X)                                             \
    X(RECURSIVE_DOUBLE, "ssar_recursive_double", ssar_recursive_double)       \
    X(SSAR_SPLIT_ALLGATHER, "ssar_split_allgather", ssar_split_allgather)     \
    X(DSAR_SPLIT_ALLGATHER, "dsar_split_allgather", dsar_split_allgather)     \
    X(DENSE, "dense", dense_allreduce)

typedef enum sparcml_algorithm {
    SPARCML_ALG_AUTO = 0, /* SPARCML_ALGORITHM=auto: the selector's choice */
#define SPARCML_ALG_ENUM(ID, NAME, STEM) SPARCML_ALG_##ID,
    SPARCML_ALGORITHM_LIST(SPARCML_ALG_ENUM)
#undef SPARCML_ALG_ENUM
    SPARCML_ALG_COUNT_
} sparcml_algorithm;
_Static_assert((int)SPARCML_ALG_COUNT_ == (int)COST_ALGORITHMS, "cost_model.h's COST_ALGORITHMS counts the algorithms");

#define SPARCML_ALG_DECLARE(ID, NAME, STEM)                                   \
    int sparcml_##STEM(sched *s);                                             \
    int STEM##_restriction(const sparcml_problem *p);                         \
    double STEM##_cost(const cost_model *m, const sparcml_problem *p);          \
    void STEM##_scratch(const sparcml_call *c, const sparcml_problem *p, uint64_t *need);
SPARCML_ALGORITHM_LIST(SPARCML_ALG_DECLARE)
#undef SPARCML_ALG_DECLARE

typedef struct sparcml_algorithm_desc {
    const char *name;
    sched_step first;
    int (*restriction)(const sparcml_problem *p);
    double (*cost)(const cost_model *m, const sparcml_problem *p);
    void (*scratch)(const sparcml_call *c, const sparcml_problem *p, uint64_t *need);
} sparcml_algorithm_desc;

/* Indexed by sparcml_algorithm; row 0 is "auto" (no step, no cost). */
extern const sparcml_algorithm_desc sparcml_algorithms[SPARCML_ALG_COUNT_];

/* "ssar_split_allgather", ...; "invalid" out of range. */
const char *sparcml_algorithm_name(sparcml_algorithm a);

/* The split algorithms from the end of their reduce-scatter
 * (split_phases.h), which the agreement's exchange ran (core/op.c): the
 * rest of their schedule. */
int ssar_split_allgather_after_reduce_scatter(sched *s);
int dsar_split_allgather_after_reduce_scatter(sched *s);

/* Recursive doubling's chunks per round (1: not pipelined; select.h). */
int ssar_recursive_double_chunks(const cost_model *m, const sparcml_problem *p);

#endif
