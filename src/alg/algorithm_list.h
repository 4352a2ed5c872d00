/* algorithm_list.h -- the rows of the table of algorithms (algorithms.h).
 *
 * One row per algorithm: X(ID, STEM), ID naming SPARCML_ALG_<ID> and STEM
 * the file alg/<STEM>.c, which defines the row's descriptor
 * sparcml_alg_<STEM>.  Everything that counts or indexes the algorithms
 * (the enum, the cost model's and the agreement's per-algorithm fields)
 * is derived from this list. */
#ifndef SPARCML_ALGORITHM_LIST_H
#define SPARCML_ALGORITHM_LIST_H

#define SPARCML_ALGORITHM_LIST(X)                                             \
    X(RECURSIVE_DOUBLE, ssar_recursive_double)                                \
    X(SSAR_SPLIT_ALLGATHER, ssar_split_allgather)                             \
    X(DSAR_SPLIT_ALLGATHER, dsar_split_allgather)                             \
    X(DENSE, dense_allreduce)

#endif
