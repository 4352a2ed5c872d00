/* sparse_errors.c -- malformed input on all ranks or on a single rank.
 *
 * For every row of the table, the bad input is given on every rank, and
 * then on one rank only (the last).  Every rank must return an MPI error
 * (MPI_ERRORS_RETURN is set) of the class sparcml(7) documents, nothing may
 * be written outside the buffers (guard words), recvbuf must be left as it
 * was (but after MPI_ERR_TRUNCATE), and a correct call right after must
 * still work.  Each bad call follows a correct one with the same count, so
 * under SPARCML_ALGORITHM=ssar_recursive_double most of them take the path
 * where data travels with the agreement records (errors.sh checks that).  The script runs this under `timeout`: a hang is a
 * failure. */
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define DIM 64
#define GUARD 0x5a5a5a5a5a5a5a5aull

typedef struct args {
    const void *send;
    void *recv;
    MPI_Count count;
    MPI_Datatype type;
    MPI_Op op;
    int use_c; /* MPI_Allreduce_c (for a negative count) */
} args;

static MPI_Datatype t_float, t_double;
static MPI_Op user_op;
static int rank, size, failures;

/* Buffers: [count words][4 guard words], 8-byte aligned, +1 byte slack for
 * the unaligned cases. */
static uint64_t *sendw, *recvw;
static MPI_Count cap;

static void user_fn(void *a, void *b, int *n, MPI_Datatype *t) { (void)a; (void)b; (void)n; (void)t; }

/* A valid float stream of rank r: 3 entries. */
static void good_input(void *buf)
{
    uint64_t idx[3] = {1, 10 + (uint64_t)rank % 7, 40};
    float v[3] = {1, 2, 3};
    sparcml_stream_from_sorted(buf, cap, DIM, SPARCML_FLOAT, 3, idx, v);
}

static void set_u64(void *buf, size_t off, uint64_t v) { memcpy((char *)buf + off, &v, 8); }
static void set_u32(void *buf, size_t off, uint32_t v) { memcpy((char *)buf + off, &v, 4); }

/* Each mutator turns the default (good) arguments into a bad call. */
typedef void (*mutate_fn)(args *a);
static void m_magic(args *a) { set_u32(sendw, 0, 0x12345678); (void)a; }
static void m_version(args *a) { ((unsigned char *)sendw)[4] = 7; (void)a; }
static void m_vtype(args *a) { ((unsigned char *)sendw)[5] = 0; (void)a; }
static void m_tag(args *a) { ((unsigned char *)sendw)[5] = SPARCML_INT32; (void)a; }
static void m_width(args *a) { ((unsigned char *)sendw)[6] = 8; (void)a; }
static void m_format(args *a) { ((unsigned char *)sendw)[7] = 3; (void)a; }
static void m_reserved(args *a) { set_u64(sendw, 24, 1); (void)a; }
static void m_nnz_gt_dim(args *a) { set_u64(sendw, 16, DIM + 1); (void)a; }
static void m_dense_nnz(args *a) { ((unsigned char *)sendw)[7] = SPARCML_DENSE; (void)a; }
static void m_dim_huge(args *a) { set_u64(sendw, 8, UINT64_MAX); (void)a; }
static void m_index_ge_dim(args *a) { set_u32(sendw, 32 + 8, DIM); (void)a; }
static void m_unsorted(args *a) { set_u32(sendw, 32, 30); (void)a; }
static void m_duplicate(args *a) { set_u32(sendw, 32 + 4, 1); (void)a; }
static void m_overflow(args *a) { set_u64(sendw, 16, DIM / 2); a->count = 8; }
static void m_short(args *a) { a->count = 2; }
static void m_negative(args *a) { a->count = -1; a->use_c = 1; }
static void m_null_send(args *a) { a->send = NULL; }
static void m_null_recv(args *a) { a->recv = NULL; }
static void m_unaligned_send(args *a) { a->send = (char *)sendw + 4; }
static void m_unaligned_recv(args *a) { a->recv = (char *)recvw + 4; }
static void m_aliased(args *a) { a->send = a->recv; }
static void m_op_max(args *a) { a->op = MPI_MAX; }
static void m_op_prod(args *a) { a->op = MPI_PROD; }
static void m_op_user(args *a) { a->op = user_op; }
static void m_inplace_recv(args *a) { a->recv = MPI_IN_PLACE; }
static void m_inplace_both(args *a) { a->send = MPI_IN_PLACE; a->recv = MPI_IN_PLACE; }
static void m_inplace_bad(args *a) { good_input(recvw); set_u32(recvw, 0, 0); a->send = MPI_IN_PLACE; }
static void m_dim_differs(args *a) { uint64_t i = 0; float v = 1; sparcml_stream_from_sorted(sendw, cap, DIM + 1, SPARCML_FLOAT, 1, &i, &v); (void)a; }
static void m_type_differs(args *a)
{
    uint64_t i = 0;
    double v = 1;
    sparcml_stream_from_sorted(sendw, cap, DIM, SPARCML_DOUBLE, 1, &i, &v);
    a->type = t_double;
}
static void m_count_differs(args *a) { a->count = cap - 1; }
/* Every rank's own stream fits, the sum does not (ranks 0 and 1 hold
 * different indices; every index below DIM at any P). */
static void m_capacity(args *a)
{
    uint64_t idx[4];
    float v[4] = {1, 1, 1, 1};
    for (int i = 0; i < 4; i++) idx[i] = (uint64_t)rank * 4 % (DIM - 4) + (uint64_t)i;
    a->count = sparcml_sparse_capacity(DIM, SPARCML_FLOAT, 4);
    if (sparcml_stream_from_sorted(sendw, a->count, DIM, SPARCML_FLOAT, 4, idx, v) != SPARCML_OK) {
        fprintf(stderr, "sparse_errors: rank %d: m_capacity's stream refused\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

static const struct row {
    const char *name;
    mutate_fn mutate;
    int expect_class;
    int all_ranks;   /* meaningful with the bad input on every rank */
    int one_rank;    /* meaningful with the bad input on one rank */
    int min_ranks;
} rows[] = {
    {"bad magic", m_magic, MPI_ERR_ARG, 1, 1, 1},
    {"bad version", m_version, MPI_ERR_ARG, 1, 1, 1},
    {"bad value type", m_vtype, MPI_ERR_ARG, 1, 1, 1},
    {"value type differs from tag", m_tag, MPI_ERR_TYPE, 1, 1, 1},
    {"bad index width", m_width, MPI_ERR_ARG, 1, 1, 1},
    {"bad format flag", m_format, MPI_ERR_ARG, 1, 1, 1},
    {"reserved not zero", m_reserved, MPI_ERR_ARG, 1, 1, 1},
    {"nnz > dim", m_nnz_gt_dim, MPI_ERR_ARG, 1, 1, 1},
    {"dense with nnz != dim", m_dense_nnz, MPI_ERR_ARG, 1, 1, 1},
    {"dim too large", m_dim_huge, MPI_ERR_ARG, 1, 1, 1},
    {"index >= dim", m_index_ge_dim, MPI_ERR_ARG, 1, 1, 1},
    {"unsorted indices", m_unsorted, MPI_ERR_ARG, 1, 1, 1},
    {"duplicate index", m_duplicate, MPI_ERR_ARG, 1, 1, 1},
    {"stream longer than count", m_overflow, MPI_ERR_COUNT, 1, 0, 1},
    {"count too small for a header", m_short, MPI_ERR_COUNT, 1, 0, 1},
    {"negative count", m_negative, MPI_ERR_COUNT, 1, 0, 1},
    {"null sendbuf", m_null_send, MPI_ERR_BUFFER, 1, 1, 1},
    {"null recvbuf", m_null_recv, MPI_ERR_BUFFER, 1, 1, 1},
    {"unaligned sendbuf", m_unaligned_send, MPI_ERR_BUFFER, 1, 1, 1},
    {"unaligned recvbuf", m_unaligned_recv, MPI_ERR_BUFFER, 1, 1, 1},
    {"sendbuf == recvbuf", m_aliased, MPI_ERR_BUFFER, 1, 1, 1},
    {"op MPI_MAX", m_op_max, MPI_ERR_OP, 1, 1, 1},
    {"op MPI_PROD", m_op_prod, MPI_ERR_OP, 1, 1, 1},
    {"user-defined op", m_op_user, MPI_ERR_OP, 1, 1, 1},
    {"MPI_IN_PLACE with a bad stream in recvbuf", m_inplace_bad, MPI_ERR_ARG, 1, 1, 1},
    {"MPI_IN_PLACE as recvbuf", m_inplace_recv, MPI_ERR_BUFFER, 1, 1, 1},
    {"MPI_IN_PLACE as sendbuf and recvbuf", m_inplace_both, MPI_ERR_BUFFER, 1, 1, 1},
    {"dim differs between ranks", m_dim_differs, MPI_ERR_ARG, 0, 1, 2},
    {"value type differs between ranks", m_type_differs, MPI_ERR_TYPE, 0, 1, 2},
    {"count differs between ranks", m_count_differs, MPI_ERR_COUNT, 0, 1, 2},
    {"recv capacity too small for the result", m_capacity, MPI_ERR_TRUNCATE, 1, 0, 2},
};

static int call(const args *a)
{
    if (a->use_c) return t_allreduce_c(a->send, a->recv, a->count, a->type, a->op, MPI_COMM_WORLD);
    return MPI_Allreduce(a->send, a->recv, (int)a->count, a->type, a->op, MPI_COMM_WORLD);
}

static void reset(args *a)
{
    for (MPI_Count i = 0; i < cap + 4; i++) sendw[i] = recvw[i] = GUARD;
    good_input(sendw);
    a->send = sendw;
    a->recv = recvw;
    a->count = cap;
    a->type = t_float;
    a->op = MPI_SUM;
    a->use_c = 0;
}

static void expect(const char *name, const char *mode, int cond, const char *what)
{
    if (cond) return;
    failures++;
    fprintf(stderr, "FAIL rank %d: %s (%s): %s\n", rank, name, mode, what);
}

/* With EXPECT_ERROR_STRINGS=1 (an MPI that gives added error strings
 * back: errors.sh sets it for Open MPI), the code's string says what
 * happened, on every rank: the library's line, naming the rank at fault
 * when one rank's own input is at fault.  Otherwise the code is the bare
 * class. */
static void check_error_string(const struct row *r, const char *mode, int rc, int only_last)
{
    char s[MPI_MAX_ERROR_STRING], at[32];
    int len = 0;
    const char *expect_strings = getenv("EXPECT_ERROR_STRINGS");
    if (!expect_strings || !*expect_strings) {
        expect(r->name, mode, rc == r->expect_class, "the code is not the bare class");
        return;
    }
    MPI_Error_string(rc, s, &len);
    snprintf(at, sizeof at, "rank %d: ", size - 1);
    expect(r->name, mode, strncmp(s, "sparcml: MPI_Allreduce: ", 24) == 0, "the error string is not the library's line");
    /* Mismatches (rows meaningful on one rank only) have no rank at fault. */
    if (only_last && r->all_ranks && r->expect_class != MPI_ERR_TRUNCATE)
        expect(r->name, mode, strstr(s, at) != NULL, "the error string does not name the rank at fault");
}

static void run_row(const struct row *r, int only_last)
{
    const char *mode = only_last ? "one rank" : "all ranks";
    int rc, cls = MPI_SUCCESS;
    uint64_t *before = t_alloc_words(cap + 5);
    args a;
    reset(&a);
    if (!only_last || rank == size - 1) r->mutate(&a);
    memcpy(before, recvw, (size_t)(cap + 5) * 8);
    rc = call(&a);
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    expect(r->name, mode, rc != MPI_SUCCESS, "the call succeeded");
    expect(r->name, mode, rc == MPI_SUCCESS || cls == r->expect_class, "unexpected error class");
    if (rc != MPI_SUCCESS) check_error_string(r, mode, rc, only_last);
    for (int g = 0; g < 4; g++) {
        expect(r->name, mode, sendw[cap + g] == GUARD, "wrote past sendbuf");
        expect(r->name, mode, recvw[cap + g] == GUARD, "wrote past recvbuf");
    }
    if (r->expect_class != MPI_ERR_TRUNCATE)
        expect(r->name, mode, memcmp(before, recvw, (size_t)(cap + 5) * 8) == 0, "recvbuf changed");
    free(before);
    /* The library must still work. */
    reset(&a);
    expect(r->name, mode, call(&a) == MPI_SUCCESS, "a correct call after the error failed");
}

int main(int argc, char **argv)
{
    int nrows = (int)(sizeof rows / sizeof rows[0]), tried = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    sparcml_type_create(SPARCML_FLOAT, &t_float);
    sparcml_type_create(SPARCML_DOUBLE, &t_double);
    MPI_Op_create(user_fn, 1, &user_op);
    cap = sparcml_capacity(DIM, SPARCML_FLOAT);
    sendw = t_alloc_words(cap + 5);
    recvw = t_alloc_words(cap + 5);
    for (int i = 0; i < nrows; i++) {
        if (size < rows[i].min_ranks) continue;
        if (rows[i].all_ranks) { run_row(&rows[i], 0); tried++; }
        if (rows[i].one_rank) { run_row(&rows[i], 1); tried++; }
    }
    /* An inter-communicator between the two halves. */
    if (size >= 2) {
        MPI_Comm half, inter;
        args a;
        int rc, cls = 0;
        MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2, rank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank < size / 2 ? size / 2 : 0, 7, &inter);
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        reset(&a);
        rc = MPI_Allreduce(a.send, a.recv, (int)a.count, a.type, MPI_SUM, inter);
        if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
        expect("inter-communicator", "all ranks", rc != MPI_SUCCESS && cls == MPI_ERR_COMM,
               "no MPI_ERR_COMM");
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
        tried++;
    }
    MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("sparse_errors: P=%d cases=%d failures=%d\n", size, tried, failures);
    MPI_Op_free(&user_op);
    MPI_Type_free(&t_float);
    MPI_Type_free(&t_double);
    free(sendw);
    free(recvw);
    MPI_Finalize();
    return failures ? 1 : 0;
}
