/* tags.c -- a datatype's name and its tag never disagree, and there is no
 * limit on the number of tagged types:
 *  - 1000 tagged types alive at once, the first, a middle and the last one
 *    used in a sum; freed, then as many again (handles are reused);
 *  - a tagged int64 type renamed to a malformed tag: MPI_ERR_TYPE, and both
 *    its name and its tag stay int64 (a sum still works);
 *  - renamed to a plain name: untagged (the vendor rejects the sum, as
 *    without the shim);
 *  - MPI_Type_dup of a tagged type: tagged exactly when its name is a tag;
 *  - sparcml_type_create with an unknown value type leaves nothing behind;
 *  - untagged calls made while nothing is tagged (the shim sends them to
 *    the vendor after one test) leave a type tagged afterwards the
 *    library's, through MPI_Allreduce, MPI_Iallreduce and the large-count
 *    call, and once it is freed untagged calls are the vendor's again.
 * Run with the shim preloaded; prints "tags: P=.. failures=N". */
#include <string.h>

#include "testlib.h"

enum { TYPES = 1000, DIM = 16 };
static int failures;

static void expect(int cond, const char *what)
{
    int rank;
    if (cond) return;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "FAIL rank %d: %s\n", rank, what);
    failures++;
}

/* The program's entry points an allreduce may come through. */
enum entry { VIA_ALLREDUCE, VIA_IALLREDUCE, VIA_ALLREDUCE_C };

static int allreduce_via(enum entry via, const void *in, void *out, MPI_Count count, MPI_Datatype t, MPI_Op op)
{
    MPI_Request r;
    int rc;
    if (via == VIA_ALLREDUCE_C) return t_allreduce_c(in, out, count, t, op, MPI_COMM_WORLD);
    if (via == VIA_ALLREDUCE) return MPI_Allreduce(in, out, (int)count, t, op, MPI_COMM_WORLD);
    rc = MPI_Iallreduce(in, out, (int)count, t, op, MPI_COMM_WORLD, &r);
    return rc == MPI_SUCCESS ? MPI_Wait(&r, MPI_STATUS_IGNORE) : rc;
}

/* A sum of a one-entry stream per rank through type t; 1 when it gave the
 * right answer, 0 when it failed with an MPI error. */
static int sums_right_via(enum entry via, MPI_Datatype t, int vtype)
{
    int rank, P, rc;
    uint64_t idx = 3;
    MPI_Count cap = sparcml_capacity(DIM, vtype);
    void *in = t_alloc_words(cap), *out = t_alloc_words(cap);
    int64_t one64 = 1, dense64[DIM];
    float one = 1.0f, dense[DIM];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    sparcml_stream_from_sorted(in, cap, DIM, vtype, 1, &idx, vtype == SPARCML_INT64 ? (void *)&one64 : (void *)&one);
    rc = allreduce_via(via, in, out, cap, t, MPI_SUM);
    if (rc == MPI_SUCCESS) {
        if (vtype == SPARCML_INT64) {
            sparcml_stream_to_dense(out, dense64, DIM);
            rc = dense64[3] == P ? MPI_SUCCESS : MPI_ERR_OTHER;
        } else {
            sparcml_stream_to_dense(out, dense, DIM);
            rc = dense[3] == (float)P ? MPI_SUCCESS : MPI_ERR_OTHER;
        }
        expect(rc == MPI_SUCCESS, "a tagged sum gave a wrong value");
    }
    free(in);
    free(out);
    return rc == MPI_SUCCESS;
}

static int sums_right(MPI_Datatype t, int vtype)
{
    return sums_right_via(VIA_ALLREDUCE, t, vtype);
}

/* An untagged MPI_INT sum of one per rank through each entry point is P. */
static int untagged_sums_right(int P)
{
    int ok = 1;
    for (enum entry via = VIA_ALLREDUCE; via <= VIA_ALLREDUCE_C; via++) {
        int one = 1, sum = 0;
        ok &= allreduce_via(via, &one, &sum, 1, MPI_INT, MPI_SUM) == MPI_SUCCESS && sum == P;
    }
    return ok;
}

static void untagged_then_tagged(int P)
{
    MPI_Datatype t;
    expect(untagged_sums_right(P), "an untagged sum before any tag is wrong");
    expect(sparcml_type_create(SPARCML_FLOAT, &t) == MPI_SUCCESS, "a tagged type could not be created");
    for (enum entry via = VIA_ALLREDUCE; via <= VIA_ALLREDUCE_C; via++)
        expect(sums_right_via(via, t, SPARCML_FLOAT), "a type tagged after untagged calls is not the library's");
    expect(untagged_sums_right(P), "an untagged sum beside a tagged type is wrong");
    MPI_Type_free(&t);
    expect(untagged_sums_right(P), "an untagged sum after the last tag was freed is wrong");
}

static void many_types(void)
{
    MPI_Datatype *t = malloc(TYPES * sizeof *t);
    for (int round = 0; round < 2; round++) {
        int made = 0;
        for (int i = 0; i < TYPES; i++) made += sparcml_type_create(SPARCML_FLOAT, &t[i]) == MPI_SUCCESS;
        expect(made == TYPES, "not every tagged type could be created");
        if (made != TYPES) break;
        expect(sums_right(t[0], SPARCML_FLOAT), "the first of 1000 tagged types does not sum");
        expect(sums_right(t[TYPES / 2], SPARCML_FLOAT), "a middle one of 1000 tagged types does not sum");
        expect(sums_right(t[TYPES - 1], SPARCML_FLOAT), "the last of 1000 tagged types does not sum");
        for (int i = 0; i < TYPES; i++) MPI_Type_free(&t[i]);
    }
    free(t);
}

static void renames(void)
{
    MPI_Datatype t, dup;
    char name[MPI_MAX_OBJECT_NAME];
    int len, rc, cls = MPI_SUCCESS;
    sparcml_type_create(SPARCML_INT64, &t);
    rc = MPI_Type_set_name(t, "sparcml:v1:bogus");
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    expect(cls == MPI_ERR_TYPE, "a malformed tag is not MPI_ERR_TYPE");
    MPI_Type_get_name(t, name, &len);
    expect(strcmp(name, "sparcml:v1:int64") == 0, "a rejected tag changed the name");
    expect(sums_right(t, SPARCML_INT64), "a rejected tag changed the tag");

    MPI_Type_dup(t, &dup);
    MPI_Type_get_name(dup, name, &len);
    /* MPICH gives a duplicate no name: untagged, the vendor's error. */
    expect(sums_right(dup, SPARCML_INT64) == (strcmp(name, "sparcml:v1:int64") == 0),
           "a duplicate's tag disagrees with its name");
    MPI_Type_free(&dup);

    expect(MPI_Type_set_name(t, "plain name") == MPI_SUCCESS, "renaming to a plain name failed");
    MPI_Type_get_name(t, name, &len);
    expect(strcmp(name, "plain name") == 0, "the plain name was not set");
    expect(!sums_right(t, SPARCML_INT64), "a type renamed to a plain name is still tagged");
    MPI_Type_free(&t);

    t = MPI_FLOAT;
    expect(sparcml_type_create(99, &t) == MPI_ERR_ARG && t == MPI_DATATYPE_NULL,
           "sparcml_type_create with an unknown value type left a type behind");
}

int main(int argc, char **argv)
{
    int rank, P, all;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN); /* datatype errors go there */
    untagged_then_tagged(P);
    many_types();
    renames();
    PMPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("tags: P=%d failures=%d\n", P, all);
    MPI_Finalize();
    return all != 0;
}
