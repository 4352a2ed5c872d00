/*
 * softmax_sgd.c -- data-parallel mini-batch SGD with a dense gradient: a
 * classifier with a softmax output (a one-hidden-layer ReLU network, or
 * multinomial softmax regression with --hidden=0) on synthetic dense data.
 *
 * The program is a plain MPI program: it is never linked against libsparcml
 * and does not include sparcml.h.  Each step sums the gradient of all the
 * weights with one
 *
 *   MPI_Allreduce(MPI_IN_PLACE, grad, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD)
 *
 * (n = 1 066 000 floats, 4.3 MB, with the defaults), which makes it the
 * unmodified training program that libsparcml's compressed allreduce
 * (SPARCML_COMPRESS=topk or cltk, see sparcml(7)) applies to.  The loss and
 * accuracy are summed with small MPI_DOUBLE allreduces, which stay exact.
 *
 *   mpicc.mpich -std=c11 -O2 -Wall -Wextra examples/softmax_sgd.c -o softmax_sgd -lm
 *   mpiexec.mpich -n 4 ./softmax_sgd --verbose
 *   mpiexec.mpich -n 4 env LD_PRELOAD=.../libsparcml.so SPARCML_COMPRESS=topk \
 *       SPARCML_COMPRESS_DENSITY=0.01 ./softmax_sgd --verbose
 *
 * Data: S samples (--samples, the whole data set) in C classes, a Gaussian
 * mixture in a K-dimensional latent space (--latent) seen through a fixed
 * random linear map into D dense features: class c has a latent mean mu_c
 * with N(0, 1) entries; sample i has a uniform class y_i and the latent
 * vector v_i = mu_{y_i} + noise * N(0, I_K); its features are x_i = A v_i,
 * with A a D x K matrix of N(0, 1) entries, scaled so that every feature has
 * unit variance.  The classes overlap, so the training loss levels off
 * (near 0.5, accuracy 83 %, with the defaults) instead of falling towards
 * zero as it does when the noise spans all D features, which lets the
 * network learn the data set by heart.  Sample i depends only on (seed, i) and is generated
 * whenever it is used, so no rank stores the data set.
 *
 * Training (a distributed sampler, as in common data-parallel frameworks):
 * every epoch all ranks draw the same permutation of the S samples (from the
 * seed and the epoch); mini-batch t is the next B of them (--batch, global),
 * and rank r takes every P-th one, starting at the r-th.  Rank r's gradient
 * is P/b times the sum of its samples' gradients (b = the mini-batch's size,
 * B except at the end of an epoch), so that the allreduced sum divided by P is
 * the mini-batch mean.  Every rank updates its replica of the weights with
 * w -= lr_t * sum / P, where lr_t decays linearly from lr at the first step
 * to lr / T at the last of the T steps (the last epochs refine instead of
 * jumping around the minimum).  The same run on any P is thus the same SGD up
 * to the order of the float additions.
 *
 * Model: h = relu(W1 x + b1), logits = W2 h + b2 (without the hidden layer:
 * logits = W x + b), loss = cross-entropy of softmax(logits).  W1 starts
 * He-normal from the seed; the output layer starts at zero, so the initial
 * loss is ln C.
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "softmax_sgd"

/* Largest weight count: the gradient goes out in one int-count allreduce. */
#define MAX_PARAMS 2000000000LL
#define MAX_LATENT 1024

typedef struct {
    long long features, classes, hidden, latent, samples, epochs, batch;
    double lr, noise;
    unsigned long long seed;
    int verbose, help;
} options;

static int g_rank = 0, g_size = 1;

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
    MPI_Finalize();
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

/* ------------------------------------------------------------------------ */
/* random numbers: splitmix64 seeding xoshiro256**                           */

typedef struct {
    uint64_t s[4];
    double spare; /* the second normal of the last Box-Muller pair */
    int has_spare;
} rng_t;

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static void rng_seed(rng_t *r, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t x = a;
    x = splitmix64(&x) ^ b;
    x = splitmix64(&x) ^ c;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
    r->has_spare = 0;
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

/* uniform in (0, 1) */
static double rng_u01(rng_t *r) { return ((double)(rng_next(r) >> 11) + 0.5) * 0x1.0p-53; }

/* standard normal (Box-Muller, both values of each pair used) */
static double rng_normal(rng_t *r)
{
    double u1, u2, rad;
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    u1 = rng_u01(r);
    u2 = rng_u01(r);
    rad = sqrt(-2.0 * log(u1));
    r->spare = rad * sin(6.283185307179586 * u2);
    r->has_spare = 1;
    return rad * cos(6.283185307179586 * u2);
}

/* Random-stream tags: the same seed drives independent streams. */
enum { TAG_MEANS = 1, TAG_SAMPLE, TAG_INIT, TAG_EPOCH };

/* ------------------------------------------------------------------------ */
/* options                                                                  */

static void usage(FILE *f)
{
    fprintf(f,
"usage: mpiexec -n P [env LD_PRELOAD=libsparcml.so SPARCML_COMPRESS=topk] " PROG " [options]\n"
"\n"
"Data-parallel mini-batch SGD of a softmax classifier (one hidden ReLU layer,\n"
"or softmax regression with --hidden=0) on synthetic dense data (a Gaussian\n"
"mixture in K latent dimensions, linearly embedded in D features).  Each step\n"
"sums the gradient of all the weights with one MPI_Allreduce(MPI_IN_PLACE, ...,\n"
"MPI_FLOAT, MPI_SUM) over MPI_COMM_WORLD; every rank updates its replica with\n"
"w -= lr_t * sum / P.  The run on any P is the same SGD up to float rounding.\n"
"\n"
"Options (--opt=value or --opt value):\n"
"  --features=D     input dimension (default 1024)\n"
"  --classes=C      number of classes, >= 2 (default 16)\n"
"  --hidden=H       hidden ReLU units; 0: softmax regression (default 1024)\n"
"  --samples=S      data set size, all ranks together (default 8192)\n"
"  --latent=K       dimension of the latent space of the classes (default 32)\n"
"  --noise=F        latent noise around the class means, whose entries are\n"
"                   N(0, 1) (default 2: the classes overlap)\n"
"  --seed=S         random seed of the data, the initial weights and the\n"
"                   sampling order (default 1)\n"
"  --epochs=E       passes over the data (default 5)\n"
"  --batch=B        global mini-batch size, split across the ranks (default 256)\n"
"  --lr=F           learning rate of the first step, decaying linearly to\n"
"                   lr/T at the last of the T steps (default 0.1)\n"
"  --verbose        print the loss and accuracy after every epoch\n"
"  --help           this text\n"
"\n"
"Weights: H*(D+1) + C*(H+1) floats (D*C + C with --hidden=0); the defaults give\n"
"1066000 (4.3 MB).\n"
"\n"
"Output (rank 0): a '#' line with the configuration; with --verbose one line\n"
"per epoch (epoch 0 = initial model)\n"
"  epoch E  loss L  acc A  seconds T  comm_s C\n"
"with the mean cross-entropy and the accuracy over the whole data set, the\n"
"epoch's training seconds and the part of them in the gradient allreduce\n"
"(evaluation excluded; the slowest rank's); then always\n"
"  summary P=P params=N epochs=E steps=T initial_loss=L0 final_loss=L\n"
"          final_acc=A seconds=T comm_s=C\n"
"on one line, with the totals.\n"
"\n"
"Exit status: 0 on success, 2 on a usage error, 3 on a runtime error.\n");
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

static void set_defaults(options *o)
{
    memset(o, 0, sizeof *o);
    o->features = 1024;
    o->classes = 16;
    o->hidden = 1024;
    o->latent = 32;
    o->samples = 8192;
    o->noise = 2.0;
    o->seed = 1;
    o->epochs = 5;
    o->batch = 256;
    o->lr = 0.1;
}

/* Stores the value of option `name`; every rank decides alike. */
static void set_option(options *o, const char *name, const char *val)
{
    long long ll;
    double d;
#define NEED(cond, what) \
    do { if (!(cond)) die_collective("bad value '%s' for --%s: %s", val, name, what); } while (0)
#define INT_IN(lo, hi, field)                                                                  \
    do {                                                                                       \
        NEED(parse_ll(val, &ll) == 0 && ll >= (lo) && ll <= (hi),                              \
             "expected an integer in [" #lo ", " #hi "]");                                     \
        o->field = ll;                                                                         \
    } while (0)
    if (!strcmp(name, "features")) INT_IN(1, 100000000, features);
    else if (!strcmp(name, "classes")) INT_IN(2, 1000000, classes);
    else if (!strcmp(name, "hidden")) INT_IN(0, 100000000, hidden);
    else if (!strcmp(name, "latent")) INT_IN(1, 1024, latent);
    else if (!strcmp(name, "samples")) INT_IN(1, 1000000000, samples);
    else if (!strcmp(name, "epochs")) INT_IN(1, 1000000, epochs);
    else if (!strcmp(name, "batch")) INT_IN(1, 100000000, batch);
    else if (!strcmp(name, "seed")) {
        NEED(parse_ll(val, &ll) == 0 && ll >= 0, "expected a non-negative integer");
        o->seed = (unsigned long long)ll;
    } else if (!strcmp(name, "lr")) {
        NEED(parse_d(val, &d) == 0 && d > 0, "expected a positive number");
        o->lr = d;
    } else if (!strcmp(name, "noise")) {
        NEED(parse_d(val, &d) == 0 && d >= 0, "expected a non-negative number");
        o->noise = d;
    } else {
        die_collective("unknown option '--%s' (try --help)", name);
    }
#undef INT_IN
#undef NEED
}

static int known_option(const char *name)
{
    static const char *const known[] = {"features", "classes", "hidden", "latent", "samples", "noise",
                                        "seed",     "epochs",  "batch",  "lr",      NULL};
    for (int j = 0; known[j]; j++)
        if (!strcmp(name, known[j])) return 1;
    return 0;
}

static void parse_options(int argc, char **argv, options *o)
{
    set_defaults(o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        char name[64];
        size_t nl;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { o->help = 1; continue; }
        if (!strcmp(a, "--verbose")) { o->verbose = 1; continue; }
        if (strncmp(a, "--", 2) != 0) die_collective("unexpected argument '%s' (try --help)", a);
        a += 2;
        nl = strcspn(a, "=");
        if (nl == 0 || nl >= sizeof name) die_collective("unknown option '%s' (try --help)", argv[i]);
        memcpy(name, a, nl);
        name[nl] = 0;
        if (a[nl] == '=') val = a + nl + 1;
        if (!strcmp(name, "help") || !strcmp(name, "verbose"))
            die_collective("--%s takes no value", name);
        if (!known_option(name)) die_collective("unknown option '--%s' (try --help)", name);
        if (!val) {
            if (i + 1 >= argc) die_collective("option --%s needs a value", name);
            val = argv[++i];
        }
        set_option(o, name, val);
    }
    if (o->batch > o->samples)
        die_collective("--batch=%lld is larger than --samples=%lld", o->batch, o->samples);
}

/* ------------------------------------------------------------------------ */
/* data                                                                     */

typedef struct {
    size_t D, C, K;
    float *means; /* C x K: the class means in the latent space */
    float *embed; /* D x K: the random embedding into feature space */
    float noise, scale;
    uint64_t seed;
} data_gen;

static void data_init(data_gen *g, const options *o)
{
    rng_t r;
    g->D = (size_t)o->features;
    g->C = (size_t)o->classes;
    g->K = (size_t)o->latent;
    g->noise = (float)o->noise;
    /* unit variance per feature: the latent vectors have K * (1 + noise^2) */
    g->scale = (float)(1.0 / sqrt((double)g->K * (1.0 + o->noise * o->noise)));
    g->seed = o->seed;
    g->means = xcalloc(g->C * g->K, sizeof *g->means);
    g->embed = xcalloc(g->D * g->K, sizeof *g->embed);
    rng_seed(&r, o->seed, TAG_MEANS, 0);
    for (size_t j = 0; j < g->C * g->K; j++) g->means[j] = (float)rng_normal(&r);
    for (size_t j = 0; j < g->D * g->K; j++) g->embed[j] = (float)rng_normal(&r);
}

/* Sample i: its features into x[0..D), its class returned. */
static int make_sample(const data_gen *g, uint64_t i, float *x)
{
    rng_t r;
    float v[MAX_LATENT];
    size_t y;
    rng_seed(&r, g->seed, TAG_SAMPLE, i);
    y = (size_t)(rng_next(&r) % g->C);
    for (size_t k = 0; k < g->K; k++)
        v[k] = g->scale * (g->means[y * g->K + k] + g->noise * (float)rng_normal(&r));
    for (size_t d = 0; d < g->D; d++) {
        const float *a = g->embed + d * g->K;
        float acc = 0.0f;
        for (size_t k = 0; k < g->K; k++) acc += a[k] * v[k];
        x[d] = acc;
    }
    return (int)y;
}

/* ------------------------------------------------------------------------ */
/* model                                                                    */

/* A fully connected layer: out = W^T in + b, W stored nin x nout (row i holds
 * input i's weights), with its gradient at the same offsets of the gradient
 * vector. */
typedef struct {
    size_t nin, nout;
    float *W, *b, *gW, *gb;
} layer;

typedef struct {
    size_t n;     /* number of weights */
    float *w, *g; /* the weights and their gradient, each n floats */
    layer l[2];
    int nl;
} model;

/* Places the layers in w and g; returns the number of weights. */
static size_t layout(model *m, size_t D, size_t H, size_t C)
{
    size_t off = 0;
    m->nl = H ? 2 : 1;
    for (int k = 0; k < m->nl; k++) {
        layer *l = &m->l[k];
        l->nin = k == 0 ? D : H;
        l->nout = k + 1 == m->nl ? C : H;
        if (m->w) {
            l->W = m->w + off;
            l->b = l->W + l->nin * l->nout;
            l->gW = m->g + off;
            l->gb = l->gW + l->nin * l->nout;
        }
        off += (l->nin + 1) * l->nout;
    }
    return off;
}

/* He-normal hidden weights from the seed; zero biases and output layer. */
static void model_init(model *m, const options *o)
{
    const size_t D = (size_t)o->features, H = (size_t)o->hidden, C = (size_t)o->classes;
    memset(m, 0, sizeof *m);
    m->n = layout(m, D, H, C);
    m->w = xcalloc(m->n, sizeof *m->w);
    m->g = xcalloc(m->n, sizeof *m->g);
    layout(m, D, H, C);
    if (m->nl == 2) {
        rng_t r;
        const double sd = sqrt(2.0 / (double)D);
        rng_seed(&r, o->seed, TAG_INIT, 0);
        for (size_t j = 0; j < D * H; j++) m->l[0].W[j] = (float)(sd * rng_normal(&r));
    }
}

/* y += a * x (unrolled so that the compiler vectorizes it at -O2) */
static void axpy(float *restrict y, const float *restrict x, float a, size_t n)
{
    size_t k = 0;
    for (; k + 8 <= n; k += 8) {
        y[k] += a * x[k];
        y[k + 1] += a * x[k + 1];
        y[k + 2] += a * x[k + 2];
        y[k + 3] += a * x[k + 3];
        y[k + 4] += a * x[k + 4];
        y[k + 5] += a * x[k + 5];
        y[k + 6] += a * x[k + 6];
        y[k + 7] += a * x[k + 7];
    }
    for (; k < n; k++) y[k] += a * x[k];
}

#define ROW_BLOCK 64 /* rows of W kept in cache across the batch */

/* out[s] = b + W^T in[s] for the m rows of in (m x nin) and out (m x nout). */
static void layer_forward(const layer *l, const float *in, size_t m, float *out)
{
    for (size_t s = 0; s < m; s++) memcpy(out + s * l->nout, l->b, l->nout * sizeof *out);
    for (size_t i0 = 0; i0 < l->nin; i0 += ROW_BLOCK) {
        size_t i1 = i0 + ROW_BLOCK < l->nin ? i0 + ROW_BLOCK : l->nin;
        for (size_t s = 0; s < m; s++)
            for (size_t i = i0; i < i1; i++)
                axpy(out + s * l->nout, l->W + i * l->nout, in[s * l->nin + i], l->nout);
    }
}

/* gW += in^T dout, gb += column sums of dout. */
static void layer_grad(layer *l, const float *in, size_t m, const float *dout)
{
    for (size_t s = 0; s < m; s++) axpy(l->gb, dout + s * l->nout, 1.0f, l->nout);
    for (size_t i = 0; i < l->nin; i++)
        for (size_t s = 0; s < m; s++)
            axpy(l->gW + i * l->nout, dout + s * l->nout, in[s * l->nin + i], l->nout);
}

/* din[s] = (W dout[s]) masked by the ReLU: zero where the activation a[s] is. */
static void layer_back_relu(const layer *l, const float *dout, const float *a, size_t m, float *din)
{
    for (size_t s = 0; s < m; s++)
        for (size_t i = 0; i < l->nin; i++) {
            const float *w = l->W + i * l->nout, *d = dout + s * l->nout;
            float acc = 0.0f;
            if (a[s * l->nin + i] > 0.0f)
                for (size_t k = 0; k < l->nout; k++) acc += w[k] * d[k];
            din[s * l->nin + i] = acc;
        }
}

/* Per-batch work space: m samples' inputs, activations and logits. */
typedef struct {
    size_t cap;
    float *x, *h, *z, *dh;
    int *y;
} batch;

static void batch_init(batch *bt, size_t cap, const model *m)
{
    bt->cap = cap;
    bt->x = xcalloc(cap * m->l[0].nin, sizeof *bt->x);
    bt->h = m->nl == 2 ? xcalloc(cap * m->l[0].nout, sizeof *bt->h) : NULL;
    bt->dh = m->nl == 2 ? xcalloc(cap * m->l[0].nout, sizeof *bt->dh) : NULL;
    bt->z = xcalloc(cap * m->l[m->nl - 1].nout, sizeof *bt->z);
    bt->y = xcalloc(cap, sizeof *bt->y);
}

static void batch_free(batch *bt)
{
    free(bt->x); free(bt->h); free(bt->dh); free(bt->z); free(bt->y);
}

/* Logits of the m samples in bt->x into bt->z. */
static void forward(const model *m, batch *bt, size_t n)
{
    if (m->nl == 1) {
        layer_forward(&m->l[0], bt->x, n, bt->z);
        return;
    }
    layer_forward(&m->l[0], bt->x, n, bt->h);
    for (size_t j = 0; j < n * m->l[0].nout; j++) bt->h[j] = bt->h[j] > 0.0f ? bt->h[j] : 0.0f;
    layer_forward(&m->l[1], bt->h, n, bt->z);
}

/* Cross-entropy of softmax(z) against y for the n rows of bt->z: adds the
 * loss sum and the number of correct argmaxes to sums[0..1].  With scale
 * != 0 each row becomes scale * (softmax(z) - onehot(y)), its gradient. */
static void softmax_xent(batch *bt, size_t n, size_t C, float scale, double *sums)
{
    for (size_t s = 0; s < n; s++) {
        float *z = bt->z + s * C;
        size_t arg = 0;
        double sum = 0.0;
        for (size_t c = 1; c < C; c++) arg = z[c] > z[arg] ? c : arg;
        for (size_t c = 0; c < C; c++) sum += exp((double)z[c] - z[arg]);
        sums[0] += log(sum) - ((double)z[bt->y[s]] - z[arg]);
        sums[1] += arg == (size_t)bt->y[s];
        if (scale == 0.0f) continue;
        for (size_t c = 0; c < C; c++) {
            double p = exp((double)z[c] - z[arg]) / sum;
            z[c] = scale * (float)(p - (c == (size_t)bt->y[s]));
        }
    }
}

/* Adds the gradient of the n samples (dlogits in bt->z) to m->g. */
static void backward(model *m, batch *bt, size_t n)
{
    if (m->nl == 1) {
        layer_grad(&m->l[0], bt->x, n, bt->z);
        return;
    }
    layer_grad(&m->l[1], bt->h, n, bt->z);
    layer_back_relu(&m->l[1], bt->z, bt->h, n, bt->dh);
    layer_grad(&m->l[0], bt->x, n, bt->dh);
}

/* ------------------------------------------------------------------------ */
/* training                                                                 */

typedef struct {
    const options *o;
    data_gen data;
    model m;
    batch bt;
    size_t *perm;
    long long step, steps; /* steps taken, steps of the whole run */
    double comm_s;         /* seconds in the gradient allreduce */
} trainer;

/* Mean loss and accuracy over the whole data set (rank r evaluates the
 * samples i with i % P == r; the sums travel in one small allreduce). */
static void evaluate(trainer *t, double *loss, double *acc)
{
    double loc[3] = {0, 0, 0}, glob[3];
    size_t n = 0, S = (size_t)t->o->samples, C = t->data.C;
    for (size_t i = (size_t)g_rank; i < S; i += (size_t)g_size) {
        t->bt.y[n] = make_sample(&t->data, i, t->bt.x + n * t->data.D);
        if (++n < t->bt.cap && i + (size_t)g_size < S) continue;
        forward(&t->m, &t->bt, n);
        softmax_xent(&t->bt, n, C, 0.0f, loc);
        loc[2] += (double)n;
        n = 0;
    }
    mpi_check(MPI_Allreduce(loc, glob, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce of the loss");
    *loss = glob[0] / glob[2];
    *acc = glob[1] / glob[2];
}

/* One SGD step on the mini-batch perm[lo, lo + b): this rank's share, the
 * gradient allreduce, the update. */
static void sgd_step(trainer *t, size_t lo, size_t b)
{
    model *m = &t->m;
    /* the learning rate decays linearly from lr (first step) to lr / steps */
    const float step = (float)(t->o->lr * (double)(t->steps - t->step) / (double)t->steps / g_size);
    double sums[2] = {0, 0}, t0;
    size_t n = 0;
    int rc;
    for (size_t j = (size_t)g_rank; j < b; j += (size_t)g_size, n++)
        t->bt.y[n] = make_sample(&t->data, t->perm[lo + j], t->bt.x + n * t->data.D);
    if (n > 0) {
        forward(m, &t->bt, n);
        softmax_xent(&t->bt, n, t->data.C, (float)((double)g_size / (double)b), sums);
        backward(m, &t->bt, n);
    }
    t0 = MPI_Wtime();
    rc = MPI_Allreduce(MPI_IN_PLACE, m->g, (int)m->n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    t->comm_s += MPI_Wtime() - t0;
    mpi_check(rc, "MPI_Allreduce of the gradient");
    for (size_t j = 0; j < m->n; j++) {
        m->w[j] -= step * m->g[j];
        m->g[j] = 0.0f;
    }
    t->step++;
}

/* One pass over the data in the epoch's order (the same on every rank). */
static void train_epoch(trainer *t, long long ep)
{
    const size_t S = (size_t)t->o->samples, B = (size_t)t->o->batch;
    rng_t r;
    for (size_t i = 0; i < S; i++) t->perm[i] = i;
    rng_seed(&r, t->o->seed, TAG_EPOCH, (uint64_t)ep);
    for (size_t i = S; i > 1; i--) {
        size_t j = (size_t)(rng_next(&r) % i), tmp = t->perm[i - 1];
        t->perm[i - 1] = t->perm[j];
        t->perm[j] = tmp;
    }
    for (size_t lo = 0; lo < S; lo += B) sgd_step(t, lo, S - lo < B ? S - lo : B);
}

static void print_header(const trainer *t, long long steps)
{
    const options *o = t->o;
    if (g_rank != 0) return;
    printf("# " PROG ": P=%d D=%lld C=%lld H=%lld params=%zu samples=%lld batch=%lld "
           "steps/epoch=%lld epochs=%lld lr=%g noise=%g seed=%llu\n",
           g_size, o->features, o->classes, o->hidden, t->m.n, o->samples, o->batch, steps,
           o->epochs, o->lr, o->noise, o->seed);
    fflush(stdout);
}

static void print_epoch(long long ep, double loss, double acc, double sec, double comm)
{
    if (g_rank != 0) return;
    printf("epoch %3lld  loss %.6f  acc %.4f  seconds %.3f  comm_s %.3f\n", ep, loss, acc, sec, comm);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    options o;
    trainer t;
    model count = {0};
    long long steps;
    double loss, acc, loss0, tot[2] = {0, 0};

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
    if ((double)layout(&count, (size_t)o.features, (size_t)o.hidden, (size_t)o.classes) > MAX_PARAMS)
        die_collective("the model has more than %lld weights (lower --features, --hidden or --classes)",
                       MAX_PARAMS);

    memset(&t, 0, sizeof t);
    t.o = &o;
    data_init(&t.data, &o);
    model_init(&t.m, &o);
    batch_init(&t.bt, (size_t)((o.batch + g_size - 1) / g_size), &t.m);
    t.perm = xcalloc((size_t)o.samples, sizeof *t.perm);
    steps = (o.samples + o.batch - 1) / o.batch;
    t.steps = steps * o.epochs;
    print_header(&t, steps);

    evaluate(&t, &loss0, &acc);
    if (o.verbose) print_epoch(0, loss0, acc, 0.0, 0.0);
    for (long long ep = 1; ep <= o.epochs; ep++) {
        double loc[2], glob[2], t0 = MPI_Wtime(), c0 = t.comm_s;
        train_epoch(&t, ep);
        loc[0] = MPI_Wtime() - t0;
        loc[1] = t.comm_s - c0;
        mpi_check(MPI_Allreduce(loc, glob, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD),
                  "MPI_Allreduce of the times");
        tot[0] += glob[0];
        tot[1] += glob[1];
        if (o.verbose || ep == o.epochs) evaluate(&t, &loss, &acc);
        if (o.verbose) print_epoch(ep, loss, acc, glob[0], glob[1]);
    }
    if (g_rank == 0) {
        printf("summary P=%d params=%zu epochs=%lld steps=%lld initial_loss=%.9g final_loss=%.9g "
               "final_acc=%.6f seconds=%.4f comm_s=%.4f\n",
               g_size, t.m.n, o.epochs, steps * o.epochs, loss0, loss, acc, tot[0], tot[1]);
        fflush(stdout);
    }

    batch_free(&t.bt);
    free(t.perm); free(t.data.means); free(t.data.embed); free(t.m.w); free(t.m.g);
    MPI_Finalize();
    return 0;
}
