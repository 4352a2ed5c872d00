/*
 * topk_sgd.c -- data-parallel mini-batch SGD for sparse binary classification
 * (logistic regression or hinge-loss linear SVM), in the style of the SparCML
 * paper's MPI-OPT experiments on URL / Webspam.
 *
 * The program is a plain MPI program.  It is never linked against libsparcml:
 * it only includes sparcml.h to tag a datatype and build/read streams.  The
 * sparse synchronisation modes need the shim preloaded:
 *
 *   mpicc.mpich -std=c11 -O2 -Wall -Wextra -I include examples/topk_sgd.c \
 *       -o topk_sgd -lm
 *   mpiexec.mpich -n 4 ./topk_sgd --sync=dense
 *   mpiexec.mpich -n 4 env LD_PRELOAD=.../libsparcml.so ./topk_sgd --sync=topk
 *
 * Synchronisation modes (every rank holds a full replica of the model w, and
 * g_i is rank i's mean gradient over its mini-batch, divided by the nominal
 * per-rank batch size B, so that sum_i g_i / P is the global mini-batch mean):
 *
 *   dense   G = MPI_Allreduce(g_i) with MPI_FLOAT over all N entries;
 *           w -= lr * G / P.                          (baseline, no shim needed)
 *   sparse  the same, but g_i is sent as a tagged sparse stream holding exactly
 *           the touched entries: lossless, the same model as dense up to the
 *           order of the float additions.
 *   topk    "sparsified SGD with memory" (SparCML, Stich et al. 2018):
 *             acc_i = eps_i + lr * g_i
 *             s_i   = TopK(acc_i)           (k largest |values|, O(N) select)
 *             eps_i = acc_i - s_i
 *             G     = MPI_Allreduce(s_i)    (tagged stream; <= P*k non-zeros)
 *             w    -= G / P
 *           The learning rate is folded into the accumulator (as in the
 *           SparCML paper) and the sum is divided by P, so that with k = N the
 *           update is exactly the dense one: w -= lr * sum_i g_i / P.
 *   cltk    ScaleCom's cyclic local top-k (CLT-k) with low-pass filtered
 *           error feedback, see cltk_step() for the reading of the paper.
 *
 * L2 regularisation (--l2) is applied as weight decay w *= (1 - lr*l2) on the
 * replicated model by every rank identically; it is not communicated, so the
 * communicated gradient stays sparse in every mode.
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sparcml.h"

#define PROG "topk_sgd"

enum { SYNC_DENSE, SYNC_SPARSE, SYNC_TOPK, SYNC_CLTK };
enum { LOSS_LOGISTIC, LOSS_HINGE };
static const char *const sync_names[] = {"dense", "sparse", "topk", "cltk"};
static const char *const loss_names[] = {"logistic", "hinge"};

/* Largest model dimension: indices fit in 32 bits and every count in an int. */
#define MAX_FEATURES ((long long)INT_MAX - 64)

typedef struct {
    int sync, loss;
    const char *data;
    long long features;
    int features_set;
    long long samples;
    long long nnz;
    double zipf, noise, truth_density;
    unsigned long long seed;
    long long epochs, batch;
    double lr, l2, density, beta;
    long long k;
    int k_set;
    int cltk_floats; /* cltk: reduce the k values with a plain MPI_FLOAT allreduce */
    int in_place;    /* stream modes: MPI_IN_PLACE */
    int unit_rows;   /* synthetic: each sample scaled to unit L2 norm */
    long long chunks; /* sparse: the batch's gradient in this many non-blocking allreduces */
    int help;
} options;

static int g_rank = 0, g_size = 1;
static MPI_Datatype g_stream_type = MPI_DATATYPE_NULL; /* freed before MPI_Finalize */

static void finalize(void)
{
    if (g_stream_type != MPI_DATATYPE_NULL) MPI_Type_free(&g_stream_type);
    MPI_Finalize();
}

/* ------------------------------------------------------------------------ */
/* errors                                                                   */

/* Every rank calls this with the same decision: rank 0 prints, all exit 2. */
static void die_collective(const char *fmt, ...)
{
    if (g_rank == 0) {
        va_list ap;
        fprintf(stderr, PROG ": error: ");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        fflush(stderr);
    }
    finalize();
    exit(2);
}

/* A local, unrecoverable error in the middle of the run: abort everything. */
static void die_local(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, PROG ": rank %d: ", g_rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
    exit(3);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) die_local("out of memory (%zu bytes)", n);
    return p;
}

static void *xcalloc(size_t n, size_t s)
{
    void *p = calloc(n ? n : 1, s ? s : 1);
    if (!p) die_local("out of memory (%zu bytes)", n * s);
    return p;
}

static void mpi_check(int rc, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0, cls = rc;
    if (rc == MPI_SUCCESS) return;
    MPI_Error_class(rc, &cls);
    MPI_Error_string(cls, msg, &len);
    die_local("%s failed: %s", what, msg);
}

/* Decide collectively on a local error: the lowest rank that has one prints
 * its message, then every rank finalizes and exits 2. */
static void agree_or_die(int local_err, const char *msg)
{
    int who = local_err ? g_rank : g_size, first;
    MPI_Allreduce(&who, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == g_size) return;
    if (first == g_rank) {
        fprintf(stderr, PROG ": error: %s\n", msg);
        fflush(stderr);
    }
    finalize();
    exit(2);
}

/* ------------------------------------------------------------------------ */
/* random numbers: splitmix64 seeding xoshiro256**                           */

typedef struct { uint64_t s[4]; } rng_t;

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint64_t hash3(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t x = a;
    uint64_t h = splitmix64(&x);
    x = h ^ b;
    h = splitmix64(&x);
    x = h ^ c;
    return splitmix64(&x);
}

static void rng_seed(rng_t *r, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t x = hash3(a, b, c);
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t res = rotl64(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return res;
}

/* uniform in [0, 1) */
static double rng_u01(rng_t *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }
static double u01_of(uint64_t h) { return (double)(h >> 11) * 0x1.0p-53; }

/* ------------------------------------------------------------------------ */
/* options                                                                  */

static void usage(FILE *f)
{
    fprintf(f,
"usage: mpiexec -n P [env LD_PRELOAD=libsparcml.so] " PROG " [options]\n"
"\n"
"Data-parallel mini-batch SGD for sparse binary classification.\n"
"\n"
"Synchronisation (--sync):\n"
"  dense    MPI_Allreduce of the full N-float gradient (baseline; no shim needed)\n"
"  sparse   the exact sparse gradient as a tagged sparcml stream (lossless)\n"
"  topk     TopK with error feedback: acc=eps+lr*g; s=TopK(acc); eps=acc-s;\n"
"           w -= allreduce(s)/P   (k=N gives exactly the dense update)\n"
"  cltk     ScaleCom cyclic local top-k: leader t%%P picks the top-k indices of\n"
"           its memory m+lr*g, MPI_Bcast's them, all ranks reduce their values at\n"
"           those indices; m = (1-beta)*m + beta*(m+lr*g - CLT(m+lr*g))\n"
"  The sparse modes need libsparcml preloaded (without it they exit with an error).\n"
"\n"
"Options (--opt=value or --opt value):\n"
"  --sync=dense|sparse|topk|cltk  synchronisation mode (default dense)\n"
"  --loss=logistic|hinge          model: logistic regression or linear SVM (logistic)\n"
"  --data=FILE                    LIBSVM file (labels +-1 or 0/1, 1-based idx:val);\n"
"                                 rank r trains on data lines i with i %% P == r\n"
"                                 (i counts from 0; blank and #-comment lines skipped)\n"
"  --features=N                   model dimension (synthetic default 3000000; with\n"
"                                 --data default = largest index in FILE)\n"
"  --samples=S                    synthetic: samples per rank (default 5000)\n"
"  --nnz=Z                        synthetic: mean non-zeros per sample (default 100)\n"
"  --zipf=S                       synthetic: feature popularity exponent (default 1.1)\n"
"  --noise=F                      synthetic: label flip probability (default 0.05)\n"
"  --truth-density=F              synthetic: non-zero fraction of the hidden\n"
"                                 weight vector (default 0.2)\n"
"  --seed=S                       random seed (default 1); rank r's synthetic shard\n"
"                                 depends only on (seed, r)\n"
"  --epochs=E                     passes over the data (default 5)\n"
"  --batch=B                      mini-batch size per rank (default 250)\n"
"  --lr=F                         learning rate (default 1.0)\n"
"  --l2=F                         L2 weight (applied as local weight decay; default 0)\n"
"  --density=F                    topk/cltk: k = ceil(F*N), 0 < F <= 1 (default 0.01)\n"
"  --k=K                          topk/cltk: k directly, 1 <= K <= N\n"
"  --beta=F                       cltk: low-pass filter factor, 0 < F <= 1 (default 0.1)\n"
"  --cltk-reduce=stream|floats    cltk: reduce the k values as a tagged stream\n"
"                                 (default) or as k plain MPI_FLOATs (no shim needed)\n"
"  --in-place                     stream modes: use MPI_IN_PLACE\n"
"  --chunks=C                     sparse: split each mini-batch into C parts; the\n"
"                                 gradient of part c is reduced with MPI_Iallreduce\n"
"                                 (in place) while part c+1 is computed, testing\n"
"                                 the requests every 16 samples (default 1: one\n"
"                                 blocking MPI_Allreduce per step)\n"
"  --unit-rows                    synthetic: scale each sample to unit L2 norm (as in\n"
"                                 Webspam; keeps lr = 1 stable with thousands of\n"
"                                 non-zeros per sample)\n"
"  --help                         this text\n"
"\n"
"Output (rank 0): one line per epoch with the training loss and accuracy over\n"
"all ranks' shards (evaluated after the epoch; epoch 0 = initial model), the\n"
"compute and communication seconds of the epoch (mean over ranks; evaluation\n"
"time excluded) and the bytes sent per rank in the epoch, then a line\n"
"  summary mode=M P=P final_loss=L final_acc=A comm_s=C compute_s=T bytes=B\n"
"with totals.  Bytes sent per rank (mean over ranks) are defined as:\n"
"  dense: 4*N*2*(P-1)/P per step (ring-allreduce equivalent);\n"
"  sparse/topk/cltk: the size of the stream passed to MPI_Allreduce (32-byte\n"
"  header + padded 4-byte indices + 4-byte values); cltk adds 4*(k+1) bytes\n"
"  of the index MPI_Bcast per step (4*k for --cltk-reduce=floats values).\n"
"\n"
"Exit status: 0 on success, 2 on a usage or data error, 3 on a runtime error.\n");
}

static int parse_ll(const char *s, long long *out)
{
    char *end;
    long long v;
    if (!s || !*s || isspace((unsigned char)*s)) return -1;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

static int parse_d(const char *s, double *out)
{
    char *end;
    double v;
    if (!s || !*s || isspace((unsigned char)*s)) return -1;
    errno = 0;
    v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

static void parse_options(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->sync = SYNC_DENSE;
    o->loss = LOSS_LOGISTIC;
    o->features = 3000000;
    o->samples = 5000;
    o->nnz = 100;
    o->zipf = 1.1;
    o->noise = 0.05;
    o->truth_density = 0.2;
    o->seed = 1;
    o->epochs = 5;
    o->batch = 250;
    o->lr = 1.0;
    o->l2 = 0.0;
    o->density = 0.01;
    o->beta = 0.1;
    o->chunks = 1;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        char name[64];
        size_t nl;
        long long ll;
        double d;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { o->help = 1; continue; }
        if (strncmp(a, "--", 2) != 0) die_collective("unexpected argument '%s' (try --help)", a);
        a += 2;
        nl = strcspn(a, "=");
        if (nl == 0 || nl >= sizeof name) die_collective("unknown option '%s' (try --help)", argv[i]);
        memcpy(name, a, nl);
        name[nl] = 0;
        if (a[nl] == '=') val = a + nl + 1;

        if (!strcmp(name, "in-place")) {
            if (val) die_collective("--in-place takes no value");
            o->in_place = 1;
            continue;
        }
        if (!strcmp(name, "unit-rows")) {
            if (val) die_collective("--unit-rows takes no value");
            o->unit_rows = 1;
            continue;
        }
        if (!strcmp(name, "help")) die_collective("--help takes no value");
        {
            static const char *const known[] = {
                "sync", "loss", "data", "features", "samples", "nnz", "zipf", "noise",
                "truth-density", "seed", "epochs", "batch", "lr", "l2", "density", "k",
                "beta", "cltk-reduce", "chunks", NULL};
            int ok = 0;
            for (int j = 0; known[j]; j++) ok |= !strcmp(name, known[j]);
            if (!ok) die_collective("unknown option '--%s' (try --help)", name);
        }
        if (!val) {
            if (i + 1 >= argc) die_collective("option --%s needs a value", name);
            val = argv[++i];
        }

#define NEED(cond, what) \
    do { if (!(cond)) die_collective("bad value '%s' for --%s: %s", val, name, what); } while (0)
        if (!strcmp(name, "sync")) {
            int m = -1;
            for (int j = 0; j < 4; j++) if (!strcmp(val, sync_names[j])) m = j;
            NEED(m >= 0, "expected dense, sparse, topk or cltk");
            o->sync = m;
        } else if (!strcmp(name, "loss")) {
            int m = -1;
            for (int j = 0; j < 2; j++) if (!strcmp(val, loss_names[j])) m = j;
            NEED(m >= 0, "expected logistic or hinge");
            o->loss = m;
        } else if (!strcmp(name, "cltk-reduce")) {
            NEED(!strcmp(val, "stream") || !strcmp(val, "floats"), "expected stream or floats");
            o->cltk_floats = !strcmp(val, "floats");
        } else if (!strcmp(name, "data")) {
            NEED(*val, "empty file name");
            o->data = val;
        } else if (!strcmp(name, "features")) {
            NEED(parse_ll(val, &ll) == 0 && ll >= 1 && ll <= MAX_FEATURES,
                 "expected an integer in [1, 2147483583]");
            o->features = ll;
            o->features_set = 1;
        } else if (!strcmp(name, "samples")) {
            NEED(parse_ll(val, &ll) == 0 && ll >= 1 && ll <= 100000000, "expected an integer in [1, 1e8]");
            o->samples = ll;
        } else if (!strcmp(name, "nnz")) {
            NEED(parse_ll(val, &ll) == 0 && ll >= 1 && ll <= 100000, "expected an integer in [1, 100000]");
            o->nnz = ll;
        } else if (!strcmp(name, "zipf")) {
            NEED(parse_d(val, &d) == 0 && d >= 0 && d <= 10, "expected a number in [0, 10]");
            o->zipf = d;
        } else if (!strcmp(name, "noise")) {
            NEED(parse_d(val, &d) == 0 && d >= 0 && d <= 0.5, "expected a probability in [0, 0.5]");
            o->noise = d;
        } else if (!strcmp(name, "truth-density")) {
            NEED(parse_d(val, &d) == 0 && d > 0 && d <= 1, "expected a fraction in (0, 1]");
            o->truth_density = d;
        } else if (!strcmp(name, "seed")) {
            NEED(parse_ll(val, &ll) == 0 && ll >= 0, "expected a non-negative integer");
            o->seed = (unsigned long long)ll;
        } else if (!strcmp(name, "epochs")) {
            NEED(parse_ll(val, &ll) == 0 && ll >= 1 && ll <= 1000000, "expected an integer in [1, 1e6]");
            o->epochs = ll;
        } else if (!strcmp(name, "batch")) {
            NEED(parse_ll(val, &ll) == 0 && ll >= 1 && ll <= 100000000, "expected an integer in [1, 1e8]");
            o->batch = ll;
        } else if (!strcmp(name, "lr")) {
            NEED(parse_d(val, &d) == 0 && d > 0, "expected a positive number");
            o->lr = d;
        } else if (!strcmp(name, "l2")) {
            NEED(parse_d(val, &d) == 0 && d >= 0, "expected a non-negative number");
            o->l2 = d;
        } else if (!strcmp(name, "density")) {
            NEED(parse_d(val, &d) == 0 && d > 0 && d <= 1, "expected a fraction in (0, 1]");
            o->density = d;
        } else if (!strcmp(name, "k")) {
            /* the range against N is checked once N is known */
            NEED(parse_ll(val, &ll) == 0, "expected an integer");
            o->k = ll;
            o->k_set = 1;
        } else if (!strcmp(name, "chunks")) {
            NEED(parse_ll(val, &ll) == 0 && ll >= 1 && ll <= 64, "expected an integer in [1, 64]");
            o->chunks = ll;
        } else if (!strcmp(name, "beta")) {
            NEED(parse_d(val, &d) == 0 && d > 0 && d <= 1, "expected a number in (0, 1]");
            o->beta = d;
        }
#undef NEED
    }
    if (o->chunks > 1 && o->sync != SYNC_SPARSE) die_collective("--chunks applies to --sync=sparse only");
    if (o->l2 > 0 && o->lr * o->l2 >= 1)
        die_collective("--lr * --l2 must be < 1 (weight decay factor 1 - lr*l2 would be <= 0)");
}

/* ------------------------------------------------------------------------ */
/* data: CSR rows with labels +-1                                           */

typedef struct {
    size_t n, nnz, cap_rows, cap_nnz;
    size_t *rowptr;
    uint32_t *col;
    float *val;
    float *y;
} dataset;

static void ds_init(dataset *d)
{
    memset(d, 0, sizeof *d);
    d->cap_rows = 1024;
    d->cap_nnz = 65536;
    d->rowptr = xmalloc((d->cap_rows + 1) * sizeof *d->rowptr);
    d->y = xmalloc(d->cap_rows * sizeof *d->y);
    d->col = xmalloc(d->cap_nnz * sizeof *d->col);
    d->val = xmalloc(d->cap_nnz * sizeof *d->val);
    d->rowptr[0] = 0;
}

static void ds_reserve_nnz(dataset *d, size_t extra)
{
    if (d->nnz + extra <= d->cap_nnz) return;
    while (d->nnz + extra > d->cap_nnz) d->cap_nnz *= 2;
    d->col = realloc(d->col, d->cap_nnz * sizeof *d->col);
    d->val = realloc(d->val, d->cap_nnz * sizeof *d->val);
    if (!d->col || !d->val) die_local("out of memory");
}

static void ds_push(dataset *d, uint32_t c, float v)
{
    ds_reserve_nnz(d, 1);
    d->col[d->nnz] = c;
    d->val[d->nnz] = v;
    d->nnz++;
}

static void ds_end_row(dataset *d, float y)
{
    if (d->n + 1 >= d->cap_rows) {
        d->cap_rows *= 2;
        d->rowptr = realloc(d->rowptr, (d->cap_rows + 1) * sizeof *d->rowptr);
        d->y = realloc(d->y, d->cap_rows * sizeof *d->y);
        if (!d->rowptr || !d->y) die_local("out of memory");
    }
    d->y[d->n] = y;
    d->n++;
    d->rowptr[d->n] = d->nnz;
}

static void ds_free(dataset *d)
{
    free(d->rowptr);
    free(d->col);
    free(d->val);
    free(d->y);
}

typedef struct { uint32_t c; float v; } colval;

static int colval_cmp(const void *a, const void *b)
{
    uint32_t x = ((const colval *)a)->c, y = ((const colval *)b)->c;
    return (x > y) - (x < y);
}

/* Read rank's shard of a LIBSVM file.  Returns 0, or -1 with a message in
 * err.  *maxidx receives the largest 1-based feature index of the shard. */
static int load_libsvm(const char *path, dataset *d, long long *maxidx, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0, rowcap = 256;
    ssize_t len;
    long long lineno = 0, dataline = 0;
    colval *row = xmalloc(rowcap * sizeof *row);
    int rc = 0;

    *maxidx = 0;
    if (!f) {
        snprintf(err, errlen, "cannot open data file '%s': %s", path, strerror(errno));
        free(row);
        return -1;
    }
    while ((len = getline(&line, &cap, f)) != -1) {
        char *p = line, *e;
        double lab;
        size_t m = 0;
        lineno++;
        if ((size_t)len != strlen(line)) {
            snprintf(err, errlen, "%s:%lld: malformed line: contains a NUL byte", path, lineno);
            rc = -1;
            break;
        }
        while (isspace((unsigned char)*p)) p++;
        if (*p == 0 || *p == '#') continue; /* blank or comment line */
        if (dataline++ % g_size != g_rank) continue;

        errno = 0;
        lab = strtod(p, &e);
        if (e == p || errno || (*e && !isspace((unsigned char)*e))) {
            snprintf(err, errlen, "%s:%lld: malformed line: expected a numeric label, got '%.20s'",
                     path, lineno, p);
            rc = -1;
            break;
        }
        if (lab != 1.0 && lab != -1.0 && lab != 0.0) {
            snprintf(err, errlen, "%s:%lld: label %g is not +1/-1 or 0/1 (binary classification only)",
                     path, lineno, lab);
            rc = -1;
            break;
        }
        p = e;
        for (;;) {
            unsigned long long idx;
            double v;
            while (isspace((unsigned char)*p)) p++;
            if (*p == 0 || *p == '#') break;
            if (!isdigit((unsigned char)*p)) {
                snprintf(err, errlen, "%s:%lld: malformed feature '%.20s': expected idx:value",
                         path, lineno, p);
                rc = -1;
                goto out;
            }
            errno = 0;
            idx = strtoull(p, &e, 10);
            if (e == p || *e != ':' || errno) {
                snprintf(err, errlen, "%s:%lld: malformed feature '%.20s': expected idx:value",
                         path, lineno, p);
                rc = -1;
                goto out;
            }
            if (idx < 1 || idx > (unsigned long long)MAX_FEATURES) {
                snprintf(err, errlen, "%s:%lld: feature index %llu out of range [1, %lld]", path,
                         lineno, idx, MAX_FEATURES);
                rc = -1;
                goto out;
            }
            p = e + 1;
            errno = 0;
            v = strtod(p, &e);
            if (e == p || errno || !isfinite(v) || (*e && !isspace((unsigned char)*e) && *e != '#')) {
                snprintf(err, errlen, "%s:%lld: malformed value for feature %llu: '%.20s'", path,
                         lineno, idx, p);
                rc = -1;
                goto out;
            }
            p = e;
            if (m == rowcap) {
                rowcap *= 2;
                row = realloc(row, rowcap * sizeof *row);
                if (!row) die_local("out of memory");
            }
            row[m].c = (uint32_t)(idx - 1);
            row[m].v = (float)v;
            m++;
            if ((long long)idx > *maxidx) *maxidx = (long long)idx;
        }
        {
            int sorted = 1;
            for (size_t j = 1; j < m; j++) sorted &= row[j].c > row[j - 1].c;
            if (!sorted) {
                qsort(row, m, sizeof *row, colval_cmp);
                for (size_t j = 1; j < m; j++)
                    if (row[j].c == row[j - 1].c) {
                        snprintf(err, errlen, "%s:%lld: duplicate feature index %lu", path, lineno,
                                 (unsigned long)row[j].c + 1);
                        rc = -1;
                        goto out;
                    }
            }
        }
        for (size_t j = 0; j < m; j++)
            if (row[j].v != 0.0f) ds_push(d, row[j].c, row[j].v);
        ds_end_row(d, lab > 0 ? 1.0f : -1.0f);
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "error reading '%s': %s", path, strerror(errno));
        rc = -1;
    }
out:
    free(line);
    free(row);
    fclose(f);
    return rc;
}

/* Hidden true weight of feature j: non-zero with probability truth_density,
 * then a standard normal (Box-Muller), all from (seed, j) only. */
static double true_weight(uint64_t seed, uint64_t j, double truth_density)
{
    double u1, u2;
    if (u01_of(hash3(seed, j, 0x7275746877ULL)) >= truth_density) return 0.0;
    u1 = u01_of(hash3(seed, j, 1)) + 0x1.0p-54;
    u2 = u01_of(hash3(seed, j, 2));
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#define ZIPF_OFFSET 50.0

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) { uint64_t t = a % b; a = b; b = t; }
    return a;
}

/* URL-like synthetic shard: each sample has ~nnz distinct binary features
 * drawn from a power law over feature popularity ranks (rank r with density
 * ~ 1/(r+50)^zipf), mapped to indices by a fixed pseudo-random permutation,
 * all values 1; label = sign(<w*, x>) flipped with probability
 * noise, w* a hidden sparse Gaussian vector. */
static void make_synthetic(const options *o, uint64_t N, dataset *d)
{
    rng_t r;
    uint64_t seed = o->seed, mul, add;
    /* rank density ~ (r + q)^-s on [0, N) (Zipf-Mandelbrot, continuous):
     * the offset q keeps the most popular feature in ~10-20% of the rows
     * instead of nearly all of them, which keeps the problem well
     * conditioned while the tail stays heavy. */
    const double s = o->zipf, q = ZIPF_OFFSET, Nq = (double)N + q;
    const double head = s == 1.0 ? 0.0 : pow(q, 1.0 - s);
    const double tail = s == 1.0 ? 0.0 : pow(Nq, 1.0 - s);
    size_t hcap = 16;
    uint32_t *hset, *feat;
    size_t zmax = (size_t)(o->nnz + o->nnz / 2 + 1);

    if ((uint64_t)zmax > N) zmax = (size_t)N;
    while (hcap < 4 * zmax) hcap *= 2;
    hset = xmalloc(hcap * sizeof *hset);
    feat = xmalloc(zmax * sizeof *feat);

    /* index = (rank * mul + add) mod N, a bijection when gcd(mul, N) == 1 */
    mul = (hash3(seed, 0x6d756cULL, 0) % N) | 1;
    while (gcd64(mul, N) != 1) mul = (mul + 2) % N ? (mul + 2) % N : 1;
    add = hash3(seed, 0x616464ULL, 0) % N;

    rng_seed(&r, seed, (uint64_t)g_rank, 0x64617461ULL);
    for (long long i = 0; i < o->samples; i++) {
        /* target non-zeros uniform in [nnz/2, 3nnz/2] */
        size_t z = (size_t)(o->nnz / 2) + (size_t)(rng_next(&r) % (uint64_t)(o->nnz + 1));
        size_t m = 0, tries = 0;
        double margin = 0.0;
        float label, xv;
        if (z < 1) z = 1;
        if (z > zmax) z = zmax;
        memset(hset, 0xff, hcap * sizeof *hset);
        while (m < z && tries < 50 * z) {
            double u = rng_u01(&r), x;
            uint64_t rank, idx, h;
            tries++;
            x = s == 1.0 ? q * pow(Nq / q, u) : pow(head - u * (head - tail), 1.0 / (1.0 - s));
            rank = x < q ? 0 : (uint64_t)(x - q);
            if (rank >= N) rank = N - 1;
            idx = (rank * mul + add) % N; /* < 2^62: no overflow */
            h = (idx * UINT64_C(0x9e3779b97f4a7c15)) >> 20;
            for (;;) {
                h &= hcap - 1;
                if (hset[h] == UINT32_MAX) { hset[h] = (uint32_t)idx; feat[m++] = (uint32_t)idx; break; }
                if (hset[h] == (uint32_t)idx) break;
                h++;
            }
        }
        qsort(feat, m, sizeof *feat, cmp_u32); /* Webspam-like rows are thousands long */
        /* binary features, like most of URL's; or all equal with unit norm */
        xv = o->unit_rows ? (float)(1.0 / sqrt((double)m)) : 1.0f;
        for (size_t a = 0; a < m; a++) {
            margin += true_weight(seed, feat[a], o->truth_density) * xv;
            ds_push(d, feat[a], xv);
        }
        label = margin > 0 ? 1.0f : margin < 0 ? -1.0f : (rng_next(&r) & 1 ? 1.0f : -1.0f);
        if (rng_u01(&r) < o->noise) label = -label;
        ds_end_row(d, label);
    }
    free(hset);
    free(feat);
}

/* ------------------------------------------------------------------------ */
/* model                                                                    */

/* Loss of margin m = y*z, and its derivative with respect to z. */
static double loss_and_coef(int loss, double z, double y, double *coef)
{
    double m = y * z;
    if (loss == LOSS_LOGISTIC) {
        /* log(1 + exp(-m)), d/dz = -y * sigmoid(-m) */
        if (m > 0) {
            double e = exp(-m);
            *coef = -y * e / (1.0 + e);
            return log1p(e);
        } else {
            double e = exp(m);
            *coef = -y / (1.0 + e);
            return -m + log1p(e);
        }
    }
    *coef = m < 1.0 ? -y : 0.0;
    return m < 1.0 ? 1.0 - m : 0.0;
}

static double dot_row(const dataset *d, size_t i, const float *w)
{
    double z = 0.0;
    for (size_t p = d->rowptr[i]; p < d->rowptr[i + 1]; p++) z += (double)w[d->col[p]] * d->val[p];
    return z;
}

/* Training objective and accuracy over all ranks' shards. */
static void evaluate(const options *o, const dataset *d, const float *w, uint64_t N, double *loss,
                     double *acc)
{
    double loc[3] = {0, 0, (double)d->n}, glob[3];
    for (size_t i = 0; i < d->n; i++) {
        double coef, z = dot_row(d, i, w);
        loc[0] += loss_and_coef(o->loss, z, d->y[i], &coef);
        loc[1] += ((z >= 0) ? 1.0f : -1.0f) == d->y[i];
    }
    MPI_Allreduce(loc, glob, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    *loss = glob[2] > 0 ? glob[0] / glob[2] : 0.0;
    *acc = glob[2] > 0 ? glob[1] / glob[2] : 0.0;
    if (o->l2 > 0) {
        double s = 0;
        for (uint64_t j = 0; j < N; j++) s += (double)w[j] * w[j];
        *loss += 0.5 * o->l2 * s;
    }
}

/* ------------------------------------------------------------------------ */
/* O(n) selection                                                           */

/* The k-th largest value (1 <= k <= n) of a[0..n); a is permuted.
 * Quickselect with a median-of-three random pivot and a three-way partition
 * (so runs of equal values cost nothing): expected O(n). */
static float kth_largest(float *a, size_t n, size_t k, rng_t *r)
{
    size_t lo = 0, hi = n, want = n - k; /* ascending position of the answer */
    while (hi - lo > 1) {
        size_t len = hi - lo;
        float x = a[lo + rng_next(r) % len], y = a[lo + rng_next(r) % len],
              z = a[lo + rng_next(r) % len], piv;
        piv = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        /* [lo, lt) < piv, [lt, i) == piv, [gt, hi) > piv */
        size_t lt = lo, i = lo, gt = hi;
        while (i < gt) {
            float v = a[i];
            if (v < piv) { a[i] = a[lt]; a[lt] = v; lt++; i++; }
            else if (v > piv) { gt--; a[i] = a[gt]; a[gt] = v; }
            else i++;
        }
        if (want < lt) hi = lt;
        else if (want >= gt) lo = gt;
        else return piv;
    }
    return a[lo];
}

/* Indices (ascending) of the k entries of v[0..N) with the largest |value|,
 * ignoring zeros (so fewer than k when v has fewer non-zeros).  Ties at the
 * threshold are broken by lower index.  scratch: N floats.  O(N). */
static size_t topk_indices(const float *v, uint64_t N, size_t k, float *scratch, uint32_t *out,
                           rng_t *r)
{
    size_t nz = 0, m = 0, gt = 0, eq_left;
    float thr;
    for (uint64_t j = 0; j < N; j++)
        if (v[j] != 0.0f) scratch[nz++] = fabsf(v[j]);
    if (nz <= k) {
        for (uint64_t j = 0; j < N; j++)
            if (v[j] != 0.0f) out[m++] = (uint32_t)j;
        return m;
    }
    thr = kth_largest(scratch, nz, k, r);
    for (uint64_t j = 0; j < N; j++) gt += fabsf(v[j]) > thr;
    eq_left = k - gt;
    for (uint64_t j = 0; j < N; j++) {
        float a = fabsf(v[j]);
        if (a > thr || (a == thr && eq_left > 0 && (eq_left--, 1))) out[m++] = (uint32_t)j;
    }
    return m;
}

/* ------------------------------------------------------------------------ */
/* streams                                                                  */

/* Sparse float stream of dimension N with entries (idx[i], src[idx[i]]). */
static uint64_t build_stream(void *buf, MPI_Count cap_words, uint64_t N, const uint32_t *idx,
                             size_t n, const float *src)
{
    void *ip, *vp;
    float *vals;
    uint64_t bytes = sparcml_sparse_bytes(N, SPARCML_FLOAT, n);
    if (bytes > (uint64_t)cap_words * 8) die_local("internal error: stream does not fit");
    sparcml_write_header(buf, N, SPARCML_FLOAT, n, SPARCML_SPARSE);
    sparcml_stream_arrays(buf, &ip, &vp);
    memcpy(ip, idx, n * sizeof *idx); /* index width is 4: N < 2^32 */
    memset((char *)ip + n * 4, 0, sparcml_round8(n * 4) - n * 4);
    vals = vp;
    for (size_t i = 0; i < n; i++) vals[i] = src[idx[i]];
    return bytes;
}

/* w[j] -= scale * G[j] for the stream G returned by the library. */
static void apply_stream(const void *buf, uint64_t N, float *w, float scale)
{
    sparcml_header h;
    void *ip, *vp;
    const float *vals;
    if (sparcml_stream_header(buf, &h) != SPARCML_OK)
        die_local("libsparcml returned an invalid stream header (magic 0x%08x)", h.magic);
    if (h.dim != N || h.value_type != SPARCML_FLOAT)
        die_local("libsparcml returned a stream of dim %llu type %d, expected dim %llu float",
                  (unsigned long long)h.dim, h.value_type, (unsigned long long)N);
    sparcml_stream_arrays(buf, &ip, &vp);
    vals = vp;
    if (!ip) {
        for (uint64_t j = 0; j < N; j++) w[j] -= scale * vals[j];
        return;
    }
    for (uint64_t i = 0; i < h.nnz; i++) {
        uint64_t j = sparcml_get_index(ip, h.index_width, i);
        if (j >= N || (i > 0 && j <= sparcml_get_index(ip, h.index_width, i - 1)))
            die_local("libsparcml returned a stream with bad index %llu at entry %llu",
                      (unsigned long long)j, (unsigned long long)i);
        w[j] -= scale * vals[i];
    }
}

/* Check up front that tagged allreduces work (i.e. the shim is preloaded) and
 * give a correct sum on a tiny input, deciding collectively. */
static void probe_shim(MPI_Datatype st)
{
    enum { D = 16 };
    MPI_Count cap = sparcml_capacity(D, SPARCML_FLOAT);
    uint64_t send[16], recv[16];
    uint32_t idx[2] = {(uint32_t)(g_rank % 15), 15};
    float one[D], got[D], want[D];
    char msg[MPI_MAX_ERROR_STRING + 200];
    int rc, len = 0, bad = 0;

    if (cap > 16) die_local("internal error: probe capacity");
    for (int j = 0; j < D; j++) { one[j] = 1.0f; want[j] = 0.0f; }
    for (int r = 0; r < g_size; r++) want[r % 15] += 1.0f;
    want[15] = (float)g_size;
    build_stream(send, cap, D, idx, 2, one);
    rc = MPI_Allreduce(send, recv, (int)cap, st, MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        char es[MPI_MAX_ERROR_STRING];
        int cls = rc;
        MPI_Error_class(rc, &cls); /* the class string is one line */
        MPI_Error_string(cls, es, &len);
        snprintf(msg, sizeof msg,
                 "the tagged-stream MPI_Allreduce failed (%.120s); the sparse sync modes need "
                 "libsparcml: run with LD_PRELOAD=/path/to/libsparcml.so", es);
        bad = 1;
    } else if (sparcml_stream_to_dense(recv, got, D) != SPARCML_OK) {
        snprintf(msg, sizeof msg, "libsparcml probe: result is not a valid float stream of dim 16");
        bad = 1;
    } else {
        for (int j = 0; j < D && !bad; j++)
            if (got[j] != want[j]) {
                snprintf(msg, sizeof msg, "libsparcml probe: wrong sum at index %d: got %g, want %g",
                         j, got[j], want[j]);
                bad = 1;
            }
    }
    agree_or_die(bad, msg);
}

/* ------------------------------------------------------------------------ */
/* training                                                                 */

typedef struct {
    const options *o;
    uint64_t N;
    size_t k;
    MPI_Datatype st;   /* tagged stream type */
    MPI_Count cap;     /* stream capacity in words */
    float *w;          /* model */
    float *grad;       /* local mini-batch gradient (dense array, sparse content) */
    uint8_t *mark;     /* touched flags */
    uint32_t *touched; /* touched indices */
    size_t ntouched;
    float *mem;        /* topk: eps;  cltk: memory m */
    float *recvf;      /* dense mode result */
    float *scratch;    /* selection scratch, N floats */
    uint32_t *sel;     /* selected indices (N) */
    uint32_t *bc;      /* cltk broadcast buffer (k+1) */
    float *vals;       /* cltk floats: k values */
    float *valsum;
    uint64_t *sendbuf, *recvbuf;
    uint64_t **chunkbuf;   /* --chunks: one in-place stream buffer per part */
    MPI_Request *chunkreq;
    rng_t sel_rng;
    double comm_s;
    double bytes;
    long long step;
} trainer;

static int u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Gradient of the mean loss over the nominal batch B (sum / B); every 16
 * samples the first `pending` chunk requests are tested (--chunks), so that
 * their allreduces advance while this part is computed. */
static void compute_gradient(trainer *t, const dataset *d, const size_t *perm, size_t lo, size_t hi,
                             int pending)
{
    const float invB = (float)(1.0 / (double)t->o->batch);
    t->ntouched = 0;
    for (size_t s = lo; s < hi; s++) {
        for (int c = 0; c < pending && (s - lo) % 16 == 15; c++) {
            int flag;
            mpi_check(MPI_Test(&t->chunkreq[c], &flag, MPI_STATUS_IGNORE), "MPI_Test of a part");
        }
        size_t i = perm[s];
        double coef, z = dot_row(d, i, t->w);
        float c;
        loss_and_coef(t->o->loss, z, d->y[i], &coef);
        if (coef == 0.0) continue;
        c = (float)coef * invB;
        for (size_t p = d->rowptr[i]; p < d->rowptr[i + 1]; p++) {
            uint32_t j = d->col[p];
            if (!t->mark[j]) { t->mark[j] = 1; t->touched[t->ntouched++] = j; }
            t->grad[j] += c * d->val[p];
        }
    }
}

static void clear_gradient(trainer *t)
{
    for (size_t i = 0; i < t->ntouched; i++) {
        t->grad[t->touched[i]] = 0.0f;
        t->mark[t->touched[i]] = 0;
    }
    t->ntouched = 0;
}

/* Tagged-stream allreduce of the stream already in t->sendbuf. */
static void stream_allreduce(trainer *t, uint64_t bytes, const char *what)
{
    double t0 = MPI_Wtime();
    int rc;
    if (t->o->in_place) {
        memcpy(t->recvbuf, t->sendbuf, bytes);
        rc = MPI_Allreduce(MPI_IN_PLACE, t->recvbuf, (int)t->cap, t->st, MPI_SUM, MPI_COMM_WORLD);
    } else {
        rc = MPI_Allreduce(t->sendbuf, t->recvbuf, (int)t->cap, t->st, MPI_SUM, MPI_COMM_WORLD);
    }
    t->comm_s += MPI_Wtime() - t0;
    mpi_check(rc, what);
    t->bytes += (double)bytes;
}

static void dense_step(trainer *t)
{
    const float scale = (float)(t->o->lr / g_size);
    double t0 = MPI_Wtime();
    int rc = MPI_Allreduce(t->grad, t->recvf, (int)t->N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    t->comm_s += MPI_Wtime() - t0;
    mpi_check(rc, "MPI_Allreduce(MPI_FLOAT) of the dense gradient");
    t->bytes += 4.0 * (double)t->N * 2.0 * (g_size - 1) / g_size;
    for (uint64_t j = 0; j < t->N; j++) t->w[j] -= scale * t->recvf[j];
    clear_gradient(t);
}

static void sparse_step(trainer *t)
{
    const float scale = (float)(t->o->lr / g_size);
    uint64_t bytes;
    qsort(t->touched, t->ntouched, sizeof *t->touched, u32_cmp);
    bytes = build_stream(t->sendbuf, t->cap, t->N, t->touched, t->ntouched, t->grad);
    stream_allreduce(t, bytes, "MPI_Allreduce of the sparse gradient stream");
    apply_stream(t->recvbuf, t->N, t->w, scale);
    clear_gradient(t);
}

/* --chunks=C: the batch's gradient in C parts, each reduced in place with
 * MPI_Iallreduce while the next part is computed; the model is updated
 * once all are complete (the same gradient as one allreduce of the whole
 * batch, summed in another order). */
static void sparse_chunked_step(trainer *t, const dataset *d, const size_t *perm, size_t lo, size_t hi)
{
    const float scale = (float)(t->o->lr / g_size);
    const int C = (int)t->o->chunks;
    double t0;
    for (int c = 0; c < C; c++) {
        size_t clo = lo + (hi - lo) * (size_t)c / (size_t)C, chi = lo + (hi - lo) * (size_t)(c + 1) / (size_t)C;
        compute_gradient(t, d, perm, clo, chi, c);
        qsort(t->touched, t->ntouched, sizeof *t->touched, u32_cmp);
        t->bytes += (double)build_stream(t->chunkbuf[c], t->cap, t->N, t->touched, t->ntouched, t->grad);
        clear_gradient(t);
        t0 = MPI_Wtime();
        mpi_check(MPI_Iallreduce(MPI_IN_PLACE, t->chunkbuf[c], (int)t->cap, t->st, MPI_SUM, MPI_COMM_WORLD,
                                 &t->chunkreq[c]),
                  "MPI_Iallreduce of a gradient part");
        t->comm_s += MPI_Wtime() - t0;
    }
    t0 = MPI_Wtime();
    for (int c = 0; c < C; c++) mpi_check(MPI_Wait(&t->chunkreq[c], MPI_STATUS_IGNORE), "MPI_Wait of a part");
    t->comm_s += MPI_Wtime() - t0;
    for (int c = 0; c < C; c++) apply_stream(t->chunkbuf[c], t->N, t->w, scale);
}

static void topk_step(trainer *t)
{
    const float lr = (float)t->o->lr;
    const float scale = (float)(1.0 / g_size);
    float *eps = t->mem;
    size_t n;
    uint64_t bytes;
    /* acc = eps + lr * g (kept in eps) */
    for (size_t i = 0; i < t->ntouched; i++) eps[t->touched[i]] += lr * t->grad[t->touched[i]];
    clear_gradient(t);
    n = topk_indices(eps, t->N, t->k, t->scratch, t->sel, &t->sel_rng);
    bytes = build_stream(t->sendbuf, t->cap, t->N, t->sel, n, eps);
    /* eps = acc - TopK(acc) */
    for (size_t i = 0; i < n; i++) eps[t->sel[i]] = 0.0f;
    stream_allreduce(t, bytes, "MPI_Allreduce of the top-k stream");
    apply_stream(t->recvbuf, t->N, t->w, scale);
}

/*
 * ScaleCom (Chen et al., NeurIPS 2020), "cyclic local top-k" with low-pass
 * filtered error feedback.  The seed material available to us
 * (/work/shared/seeds, the NeurIPS reviews) describes it as: "a cyclic local
 * top-k compressor, CLT-k, which picks a leading worker and shares its top-k
 * indices across all workers. The leading worker is selected in a cyclic
 * order"; "to compute CLT_j^k(.) at worker i, it is required that the worker
 * j = mod(t, n) computes its gradient, finds its sparsity pattern, and then
 * shares it with other workers"; and the memory m_i^t is updated with "error
 * feedback with low-pass filtering" with factor beta (0.1 in the large-batch
 * experiments), which reviewers relate to weighted error feedback ("setting
 * m^t = beta r_t ... the same equations").  Our reading of Algorithm 1:
 *
 *   x_i      = m_i + lr * g_i                  (error-feedback gradient)
 *   I        = top-k indices of x_j, j = t mod P   (leader; MPI_Bcast of I)
 *   c_i      = x_i restricted to I             (CLT^k_j(x_i); same I on all i)
 *   m_i     <- (1 - beta) * m_i + beta * (x_i - c_i)        (low-pass filter)
 *   w       <- w - (1/P) * sum_i c_i          (allreduce of the c_i)
 *
 * (The reviews do not reproduce Algorithm 1 itself; the memory update above
 * is the one of the paper's Eq. 5 / Alg. 1 line 6 as we read it, and a public
 * third-party re-implementation of ScaleCom computes the same
 * (1-beta)*m + beta*(m + g - CLT(m + g)).)
 *
 * With beta = 1 this is plain error feedback (m = x - c); with k = N and
 * beta = 1 it is exactly the dense update.  The learning rate is folded into
 * x as in the topk mode (equivalent for a constant learning rate).  Note that
 * with beta < 1 the memory takes in only beta of each unsent gradient, and an
 * index that was sent keeps (1 - beta) of its old memory, which drains over
 * the following steps: the filter delays (smooths) the residual by ~1/beta
 * steps but does not rescale it.  A residual at an index that no leader ever
 * selects is never applied, so CLT-k lags dense SGD more than topk when the
 * ranks' gradients differ (here: rare features seen by one rank only).
 *
 * In-place computation: mem holds m; after mem += lr*g it holds x.  For
 * touched j not in I the new memory is (1-b) m + b x = x - (1-b) lr g; for
 * j in I it is (1-b) m = (1-b)(x - lr g); elsewhere it stays m (= x).
 */
static void cltk_step(trainer *t)
{
    const float lr = (float)t->o->lr, b1 = (float)(1.0 - t->o->beta);
    const float scale = (float)(1.0 / g_size);
    const int leader = (int)(t->step % g_size);
    float *mem = t->mem;
    size_t n;
    uint64_t bytes = 0;
    double t0;
    int rc;

    for (size_t i = 0; i < t->ntouched; i++) mem[t->touched[i]] += lr * t->grad[t->touched[i]];
    if (g_rank == leader) {
        n = topk_indices(mem, t->N, t->k, t->scratch, t->bc + 1, &t->sel_rng);
        t->bc[0] = (uint32_t)n;
    }
    t0 = MPI_Wtime();
    rc = MPI_Bcast(t->bc, (int)t->k + 1, MPI_UINT32_T, leader, MPI_COMM_WORLD);
    t->comm_s += MPI_Wtime() - t0;
    mpi_check(rc, "MPI_Bcast of the CLT-k indices");
    t->bytes += 4.0 * ((double)t->k + 1);
    n = t->bc[0];
    if (n > t->k) die_local("internal error: broadcast index count %zu > k", n);
    for (size_t i = 1; i <= n; i++)
        if (t->bc[i] >= t->N || (i > 1 && t->bc[i] <= t->bc[i - 1]))
            die_local("internal error: bad broadcast index");

    for (size_t i = 0; i < n; i++) t->vals[i] = mem[t->bc[1 + i]]; /* c_i = x_i on I */
    if (!t->o->cltk_floats) bytes = build_stream(t->sendbuf, t->cap, t->N, t->bc + 1, n, mem);
    /* memory update (see above), needs g, so before clear_gradient */
    for (size_t i = 0; i < t->ntouched; i++) {
        uint32_t j = t->touched[i];
        mem[j] -= b1 * lr * t->grad[j];
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t j = t->bc[1 + i];
        float v = b1 * (t->vals[i] - lr * t->grad[j]);
        mem[j] = fabsf(v) < FLT_MIN ? 0.0f : v; /* no denormals from the geometric decay */
    }
    clear_gradient(t);

    if (t->o->cltk_floats) {
        t0 = MPI_Wtime();
        rc = MPI_Allreduce(t->vals, t->valsum, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        t->comm_s += MPI_Wtime() - t0;
        mpi_check(rc, "MPI_Allreduce(MPI_FLOAT) of the CLT-k values");
        t->bytes += 4.0 * (double)n;
        for (size_t i = 0; i < n; i++) t->w[t->bc[1 + i]] -= scale * t->valsum[i];
    } else {
        stream_allreduce(t, bytes, "MPI_Allreduce of the CLT-k stream");
        apply_stream(t->recvbuf, t->N, t->w, scale);
    }
}

int main(int argc, char **argv)
{
    options o;
    dataset d;
    trainer t;
    uint64_t N;
    long long nmax_ll, nloc, steps_per_epoch, total_samples;
    size_t *perm;
    char errmsg[1024] = "";
    double tot_comp = 0, tot_comm = 0, tot_bytes = 0, loss = 0, acc = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    parse_options(argc, argv, &o);
    if (o.help) {
        if (g_rank == 0) usage(stdout);
        MPI_Finalize();
        return 0;
    }

    /* ---- data ---- */
    ds_init(&d);
    if (o.data) {
        long long maxidx = 0, gmax;
        int bad = load_libsvm(o.data, &d, &maxidx, errmsg, sizeof errmsg) != 0;
        agree_or_die(bad, errmsg);
        MPI_Allreduce(&maxidx, &gmax, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
        if (o.features_set && o.features < gmax)
            die_collective("--features=%lld is smaller than the largest feature index %lld in '%s'",
                           o.features, gmax, o.data);
        if (!o.features_set) o.features = gmax > 0 ? gmax : 1;
    }
    N = (uint64_t)o.features;
    if (!o.data) make_synthetic(&o, N, &d);
    nloc = (long long)d.n;
    MPI_Allreduce(&nloc, &nmax_ll, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&nloc, &total_samples, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (total_samples == 0) die_collective("no samples in '%s'", o.data ? o.data : "(synthetic)");
    steps_per_epoch = (nmax_ll + o.batch - 1) / o.batch;

    /* ---- k ---- */
    memset(&t, 0, sizeof t);
    if (o.k_set) {
        if (o.k < 1 || (uint64_t)o.k > N)
            die_collective("impossible --k=%lld: need 1 <= k <= N = %llu", o.k, (unsigned long long)N);
        t.k = (size_t)o.k;
    } else {
        double kk = ceil(o.density * (double)N);
        t.k = kk < 1 ? 1 : kk > (double)N ? (size_t)N : (size_t)kk;
    }

    /* ---- state ---- */
    t.o = &o;
    t.N = N;
    t.w = xcalloc(N, sizeof *t.w);
    t.grad = xcalloc(N, sizeof *t.grad);
    t.mark = xcalloc(N, 1);
    t.touched = xmalloc(N * sizeof *t.touched);
    rng_seed(&t.sel_rng, o.seed, (uint64_t)g_rank, 0x73656cULL);
    if (o.sync == SYNC_DENSE) {
        t.recvf = xmalloc(N * sizeof *t.recvf);
    } else {
        int bad = sparcml_type_create(SPARCML_FLOAT, &g_stream_type) != MPI_SUCCESS;
        agree_or_die(bad, "cannot create the tagged stream datatype");
        t.st = g_stream_type;
        t.cap = sparcml_capacity(N, SPARCML_FLOAT);
        if (t.cap > INT_MAX) die_collective("--features too large for an int count");
        if (!(o.sync == SYNC_CLTK && o.cltk_floats)) {
            t.sendbuf = xmalloc((size_t)t.cap * 8);
            t.recvbuf = xmalloc((size_t)t.cap * 8);
            probe_shim(t.st);
        }
        if (o.chunks > 1) {
            t.chunkbuf = xmalloc((size_t)o.chunks * sizeof *t.chunkbuf);
            t.chunkreq = xmalloc((size_t)o.chunks * sizeof *t.chunkreq);
            for (long long c = 0; c < o.chunks; c++) t.chunkbuf[c] = xmalloc((size_t)t.cap * 8);
        }
    }
    if (o.sync == SYNC_TOPK || o.sync == SYNC_CLTK) {
        t.mem = xcalloc(N, sizeof *t.mem);
        t.scratch = xmalloc(N * sizeof *t.scratch);
    }
    if (o.sync == SYNC_TOPK) t.sel = xmalloc(N * sizeof *t.sel);
    if (o.sync == SYNC_CLTK) {
        t.bc = xmalloc((t.k + 1) * sizeof *t.bc);
        t.vals = xmalloc(t.k * sizeof *t.vals);
        if (o.cltk_floats) t.valsum = xmalloc(t.k * sizeof *t.valsum);
    }
    perm = xmalloc(d.n * sizeof *perm);

    if (g_rank == 0) {
        printf("# " PROG ": sync=%s loss=%s P=%d N=%llu data=%s samples=%lld batch/rank=%lld "
               "steps/epoch=%lld lr=%g l2=%g",
               sync_names[o.sync], loss_names[o.loss], g_size, (unsigned long long)N,
               o.data ? o.data : "synthetic", total_samples, o.batch, steps_per_epoch, o.lr, o.l2);
        if (o.sync == SYNC_TOPK || o.sync == SYNC_CLTK) printf(" k=%zu", t.k);
        if (o.chunks > 1) printf(" chunks=%lld", o.chunks);
        if (o.sync == SYNC_CLTK) printf(" beta=%g", o.beta);
        printf("\n");
        fflush(stdout);
    }

    evaluate(&o, &d, t.w, N, &loss, &acc);
    if (g_rank == 0) {
        printf("epoch %3d  loss %.6f  acc %.4f  compute_s %.3f  comm_s %.3f  bytes %.0f\n", 0, loss,
               acc, 0.0, 0.0, 0.0);
        fflush(stdout);
    }

    for (long long ep = 1; ep <= o.epochs; ep++) {
        rng_t pr;
        double t_start = MPI_Wtime(), comm0 = t.comm_s, bytes0 = t.bytes, loc[3], glob[3];
        for (size_t i = 0; i < d.n; i++) perm[i] = i;
        rng_seed(&pr, o.seed, (uint64_t)g_rank, 0x65706f6368ULL + (uint64_t)ep);
        for (size_t i = d.n; i > 1; i--) {
            size_t j = (size_t)(rng_next(&pr) % i), tmp = perm[i - 1];
            perm[i - 1] = perm[j];
            perm[j] = tmp;
        }
        for (long long s = 0; s < steps_per_epoch; s++, t.step++) {
            size_t lo = (size_t)(s * o.batch), hi = lo + (size_t)o.batch;
            if (lo > d.n) lo = d.n;
            if (hi > d.n) hi = d.n;
            if (o.l2 > 0) {
                const float decay = (float)(1.0 - o.lr * o.l2);
                for (uint64_t j = 0; j < N; j++) t.w[j] *= decay;
            }
            if (o.chunks > 1) {
                sparse_chunked_step(&t, &d, perm, lo, hi);
                continue;
            }
            compute_gradient(&t, &d, perm, lo, hi, 0);
            switch (o.sync) {
            case SYNC_DENSE: dense_step(&t); break;
            case SYNC_SPARSE: sparse_step(&t); break;
            case SYNC_TOPK: topk_step(&t); break;
            default: cltk_step(&t); break;
            }
        }
        loc[0] = MPI_Wtime() - t_start - (t.comm_s - comm0); /* compute */
        loc[1] = t.comm_s - comm0;
        loc[2] = t.bytes - bytes0;
        MPI_Allreduce(loc, glob, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < 3; i++) glob[i] /= g_size;
        tot_comp += glob[0];
        tot_comm += glob[1];
        tot_bytes += glob[2];
        evaluate(&o, &d, t.w, N, &loss, &acc);
        if (g_rank == 0) {
            printf("epoch %3lld  loss %.6f  acc %.4f  compute_s %.3f  comm_s %.3f  bytes %.0f\n", ep,
                   loss, acc, glob[0], glob[1], glob[2]);
            fflush(stdout);
        }
    }
    if (g_rank == 0) {
        printf("summary mode=%s P=%d final_loss=%.9g final_acc=%.6f comm_s=%.4f compute_s=%.4f "
               "bytes=%.0f\n",
               sync_names[o.sync], g_size, loss, acc, tot_comm, tot_comp, tot_bytes);
        fflush(stdout);
    }

    free(t.w); free(t.grad); free(t.mark); free(t.touched); free(t.recvf); free(t.mem);
    free(t.scratch); free(t.sel); free(t.bc); free(t.vals); free(t.valsum); free(t.sendbuf);
    free(t.recvbuf); free(perm);
    for (long long c = 0; t.chunkbuf && c < o.chunks; c++) free(t.chunkbuf[c]);
    free(t.chunkbuf); free(t.chunkreq);
    ds_free(&d);
    finalize();
    return 0;
}
