/* passthrough.c -- untagged allreduces through the shim return exactly what
 * the vendor returns: the same call via PMPI_Allreduce (which the shim does
 * not intercept) is the reference, compared byte for byte. */
#include <string.h>

#include "testlib.h"

static int failures;

static void user_max(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        if (((double *)in)[i] > ((double *)inout)[i]) ((double *)inout)[i] = ((double *)in)[i];
}

static void compare(const char *what, MPI_Datatype type, int count, size_t elem, MPI_Op op,
                    int inplace, MPI_Comm comm)
{
    int rank;
    size_t bytes = (size_t)count * elem;
    unsigned char *in = malloc(bytes + 1), *a = malloc(bytes + 1), *b = malloc(bytes + 1);
    MPI_Comm_rank(comm, &rank);
    for (size_t i = 0; i < bytes; i++) in[i] = (unsigned char)t_rand((uint64_t)rank, i);
    if (type == MPI_FLOAT || type == MPI_DOUBLE) /* keep floats finite */
        for (size_t i = 0; i < bytes; i += elem) in[i + elem - 1] &= 0x3f;
    memcpy(a, in, bytes);
    memcpy(b, in, bytes);
    if (inplace) {
        MPI_Allreduce(MPI_IN_PLACE, a, count, type, op, comm);
        PMPI_Allreduce(MPI_IN_PLACE, b, count, type, op, comm);
    } else {
        MPI_Allreduce(in, a, count, type, op, comm);
        PMPI_Allreduce(in, b, count, type, op, comm);
    }
    if (memcmp(a, b, bytes) != 0) {
        failures++;
        fprintf(stderr, "FAIL rank %d: %s count=%d differs from the vendor\n", rank, what, count);
    }
    free(in); free(a); free(b);
}

int main(int argc, char **argv)
{
    MPI_Datatype pair, named, renamed;
    MPI_Op op;
    char name[MPI_MAX_OBJECT_NAME];
    int len, rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Op_create(user_max, 1, &op);
    MPI_Type_contiguous(2, MPI_DOUBLE, &pair);
    MPI_Type_commit(&pair);
    /* An ordinary name: not ours, the type stays untagged. */
    MPI_Type_contiguous(2, MPI_INT, &named);
    MPI_Type_commit(&named);
    MPI_Type_set_name(named, "my pair of ints");
    MPI_Type_get_name(named, name, &len);
    if (strcmp(name, "my pair of ints") != 0) failures++;
    /* Tagged, then renamed: untagged again. */
    MPI_Type_contiguous(8, MPI_BYTE, &renamed);
    MPI_Type_commit(&renamed);
    MPI_Type_set_name(renamed, "sparcml:v1:float");
    MPI_Type_set_name(renamed, "plain bytes");
    for (int n = 1; n <= 1 << 18; n *= 8) {
        for (int inplace = 0; inplace < 2; inplace++) {
            compare("MPI_INT/SUM", MPI_INT, n, 4, MPI_SUM, inplace, MPI_COMM_WORLD);
            compare("MPI_FLOAT/SUM", MPI_FLOAT, n, 4, MPI_SUM, inplace, MPI_COMM_WORLD);
            compare("MPI_DOUBLE/MAX", MPI_DOUBLE, n, 8, MPI_MAX, inplace, MPI_COMM_WORLD);
            compare("MPI_BYTE/BOR", MPI_BYTE, n, 1, MPI_BOR, inplace, MPI_COMM_WORLD);
            compare("pair/user op", pair, n, 16, op, inplace, MPI_COMM_WORLD);
            compare("named ints/user op", named, n, 8, op, inplace, MPI_COMM_WORLD);
            compare("renamed bytes/user op", renamed, n, 8, op, inplace, MPI_COMM_WORLD);
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("passthrough: failures=%d\n", failures);
    MPI_Type_free(&pair);
    MPI_Type_free(&named);
    MPI_Type_free(&renamed);
    MPI_Op_free(&op);
    MPI_Finalize();
    return failures ? 1 : 0;
}
