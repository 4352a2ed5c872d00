/* no_shim.c -- a tagged call WITHOUT the shim must fail loudly, never compute
 * garbage: MPICH rejects MPI_SUM on a derived datatype (MPI_ERR_OP), which
 * the contract relies on deliberately.  With the shim (argument "shim") the
 * same call must succeed and give the right sum. */
#include <string.h>

#include "testlib.h"

int main(int argc, char **argv)
{
    int with_shim = argc > 1 && strcmp(argv[1], "shim") == 0, rank, size, rc, cls, ok;
    MPI_Datatype t;
    MPI_Count count = sparcml_capacity(16, SPARCML_INT64);
    void *send, *recv;
    uint64_t idx[1];
    int64_t v = 1, dense[16];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    sparcml_type_create(SPARCML_INT64, &t);
    send = t_alloc_words(count);
    recv = t_alloc_words(count);
    memset(recv, 0, (size_t)count * 8);
    idx[0] = (uint64_t)rank % 16;
    sparcml_stream_from_sorted(send, count, 16, SPARCML_INT64, 1, idx, &v);
    rc = MPI_Allreduce(send, recv, (int)count, t, MPI_SUM, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    if (with_shim) {
        ok = rc == MPI_SUCCESS && sparcml_stream_to_dense(recv, dense, 16) == SPARCML_OK;
        for (int i = 0; ok && i < 16; i++) ok = dense[i] == size / 16 + (i < size % 16);
    } else {
        ok = rc != MPI_SUCCESS;
    }
    if (!ok) fprintf(stderr, "no_shim: rank %d: rc=%d class=%d (%s shim)\n", rank, rc, cls,
                     with_shim ? "with" : "without");
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0)
        printf("no_shim: %s shim: tagged MPI_Allreduce %s (error class %d)\n",
               with_shim ? "with" : "without", with_shim ? "summed correctly" : "was rejected", cls);
    MPI_Type_free(&t);
    free(send);
    free(recv);
    MPI_Finalize();
    return ok ? 0 : 1;
}
