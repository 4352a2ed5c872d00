/* settings.c -- parsing and validation of the SPARCML_* environment. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fnv.h"
#include "core/settings.h"

extern char **environ;

typedef enum {
    KIND_BOOL, KIND_ALGORITHM, KIND_POSITIVE, KIND_QBITS, KIND_UINT, KIND_AUTO_OR_NUMBER, KIND_COMPRESS, KIND_GATHER
} kind;

/* Where a setting must have the same value (as MPICH's MPI_T scopes):
 *  SCOPE_RANK  may differ between ranks;
 *  SCOPE_CALL  equal on every rank: it steers each call's choices, and the
 *              agreement of every call compares the hash of these rows
 *              (a mismatch fails that call on every rank);
 *  SCOPE_JOB   equal on every rank: it decides collective calls outside
 *              any agreement (whether tags register, the report's
 *              collectives at MPI_Finalize, which untagged calls
 *              transparent mode takes over), so MPI_Init compares these
 *              rows and stops the job on a mismatch. */
typedef enum { SCOPE_RANK, SCOPE_CALL, SCOPE_JOB } scope;

/* Every variable: name, scope, kind, default text, field, and for numbers
 * the unit scale to seconds and the accepted range (in the variable's own
 * unit).  man/sparcml.7 documents each row. */
static const struct var {
    const char *name;
    scope scope;
    kind kind;
    const char *def;
    size_t offset;
    double scale, min, max;
} vars[] = {
    {"SPARCML_DISABLE", SCOPE_JOB, KIND_BOOL, "0", offsetof(sparcml_settings, disable), 0, 0, 0},
    {"SPARCML_ALGORITHM", SCOPE_CALL, KIND_ALGORITHM, "auto", offsetof(sparcml_settings, algorithm), 0, 0, 0},
    {"SPARCML_VERBOSE", SCOPE_RANK, KIND_BOOL, "0", offsetof(sparcml_settings, verbose), 0, 0, 0},
    {"SPARCML_STATS", SCOPE_JOB, KIND_BOOL, "0", offsetof(sparcml_settings, stats), 0, 0, 0},
    /* Cost-model defaults: alpha and beta measured on the benchmark rig (the
     * emulated 1 Gbit/s cluster, bench/results/rig_alpha_beta.txt), gamma
     * from the merge-add throughput on this machine (bench/RESULTS.md
     * "Kernels", docs/design.md). */
    {"SPARCML_ALPHA_US", SCOPE_CALL, KIND_POSITIVE, "20", offsetof(sparcml_settings, alpha), 1e-6, 1e-3, 1e6},
    {"SPARCML_BETA_NS_PER_BYTE", SCOPE_CALL, KIND_POSITIVE, "8.3", offsetof(sparcml_settings, beta), 1e-9,
     1e-4, 1e6},
    {"SPARCML_GAMMA_NS_PER_ENTRY", SCOPE_CALL, KIND_POSITIVE, "2.5", offsetof(sparcml_settings, gamma), 1e-9,
     1e-4, 1e6},
    /* Whether MPI_Init measures the cost-model parameters the user leaves
     * unset (core/calibrate.c): a collective at start-up, so job-wide. */
    {"SPARCML_CALIBRATE", SCOPE_JOB, KIND_BOOL, "1", offsetof(sparcml_settings, calibrate), 0, 0, 0},
    /* Every choice from agreed numbers and fixed parameters only: no
     * calibration, no timed prices (core/calibrate.h, core/timed.h).  The
     * calibration is a collective at start-up: job-wide. */
    {"SPARCML_REPRODUCIBLE", SCOPE_JOB, KIND_BOOL, "0", offsetof(sparcml_settings, reproducible), 0, 0, 0},
    {"SPARCML_QSGD_BITS", SCOPE_CALL, KIND_QBITS, "0", offsetof(sparcml_settings, qsgd_bits), 0, 0, 0},
    {"SPARCML_QSGD_BUCKET", SCOPE_CALL, KIND_UINT, "512", offsetof(sparcml_settings, qsgd_bucket), 0, 1,
     16777216},
    {"SPARCML_QSGD_SEED", SCOPE_CALL, KIND_UINT, "0", offsetof(sparcml_settings, qsgd_seed), 0, 0,
     18446744073709551615.0},
    {"SPARCML_QSGD_SPARSE", SCOPE_CALL, KIND_BOOL, "0", offsetof(sparcml_settings, qsgd_sparse), 0, 0, 0},
    {"SPARCML_PIGGYBACK", SCOPE_CALL, KIND_BOOL, "1", offsetof(sparcml_settings, piggyback), 0, 0, 0},
    /* "auto" is stored as 0: detected per communicator (base/placement.c). */
    {"SPARCML_RANKS_PER_CORE", SCOPE_CALL, KIND_AUTO_OR_NUMBER, "auto", offsetof(sparcml_settings, ranks_per_core), 1,
     1, 4096},
    /* Below 1 MiB the detour (a scan and the agreement's log2(P) rounds)
     * costs a noticeable share of the vendor's allreduce of dense data
     * (bench/RESULTS.md, "Transparent mode"). */
    {"SPARCML_TRANSPARENT", SCOPE_JOB, KIND_BOOL, "0", offsetof(sparcml_settings, transparent), 0, 0, 0},
    {"SPARCML_TRANSPARENT_MIN_BYTES", SCOPE_JOB, KIND_UINT, "1048576",
     offsetof(sparcml_settings, transparent_min_bytes), 0, 1, 18446744073709551615.0},
    /* Off by default: a thread needs MPI_THREAD_MULTIPLE and a core to run
     * on (bench/RESULTS.md, "Non-blocking calls"). */
    {"SPARCML_PROGRESS_US", SCOPE_RANK, KIND_UINT, "0", offsetof(sparcml_settings, progress_us), 0, 0, 1000000},
    /* 0: the cost model picks the chunks of pipelined recursive doubling
     * (core/select.c); 1 turns pipelining off; 2..8 force that many chunks. */
    {"SPARCML_PIPELINE_CHUNKS", SCOPE_CALL, KIND_UINT, "0", offsetof(sparcml_settings, pipeline_chunks), 0, 0,
     SPARCML_PIPELINE_CHUNKS_MAX},
    /* auto: the cost model picks, per call, the vendor's allgatherv or the
     * library's own exchange for the split algorithms' gathers
     * (alg/split_gather.c); vendor, doubling and ring force one. */
    {"SPARCML_SPLIT_GATHER", SCOPE_CALL, KIND_GATHER, "auto", offsetof(sparcml_settings, split_gather), 0, 0, 0},
    /* Compression decides which untagged calls the library takes over: a
     * job-wide choice, as transparent mode's.  The density's default is the
     * sparsest of the measured densities that keeps both example programs'
     * final loss within the targets (bench/RESULTS.md, "Compression").  The
     * feedback memory may differ between ranks: whether a call is summed
     * exactly when a rank reaches it is agreed per call. */
    {"SPARCML_COMPRESS", SCOPE_JOB, KIND_COMPRESS, "off", offsetof(sparcml_settings, compress), 0, 0, 0},
    {"SPARCML_COMPRESS_DENSITY", SCOPE_CALL, KIND_POSITIVE, "0.01", offsetof(sparcml_settings, compress_density), 1,
     1e-9, 1},
    {"SPARCML_COMPRESS_MIN_BYTES", SCOPE_JOB, KIND_UINT, "1048576", offsetof(sparcml_settings, compress_min_bytes),
     0, 1, 18446744073709551615.0},
    {"SPARCML_COMPRESS_FEEDBACK", SCOPE_CALL, KIND_BOOL, "1", offsetof(sparcml_settings, compress_feedback), 0, 0,
     0},
    {"SPARCML_COMPRESS_MAX_BYTES", SCOPE_RANK, KIND_UINT, "4294967296",
     offsetof(sparcml_settings, compress_max_bytes), 0, 0, 18446744073709551615.0},
};
#define NVARS (sizeof vars / sizeof vars[0])

static int parse_bool(const char *v, int *out)
{
    if (strcmp(v, "0") == 0) { *out = 0; return 0; }
    if (strcmp(v, "1") == 0) { *out = 1; return 0; }
    return -1;
}

static int parse_algorithm(const char *v, int *out)
{
    for (int a = 0; a < SPARCML_ALG_COUNT_; a++)
        if (strcasecmp(v, sparcml_algorithms[a]->name) == 0) { *out = a; return 0; }
    return -1;
}

/* Name i of n to the list in buf ("a, b or c"), used bytes so far. */
static void append_choice(char *buf, size_t len, size_t *used, int i, int n, const char *name)
{
    if (*used < len)
        *used += (size_t)snprintf(buf + *used, len - *used, "%s%s", i == 0 ? "" : i + 1 < n ? ", " : " or ", name);
}

/* "auto, ssar_recursive_double, ... or dense": the accepted names. */
static const char *algorithm_choices(char *buf, size_t len)
{
    size_t used = 0;
    for (int a = 0; a < SPARCML_ALG_COUNT_; a++)
        append_choice(buf, len, &used, a, SPARCML_ALG_COUNT_, sparcml_algorithms[a]->name);
    return buf;
}

/* The names of KIND_COMPRESS and KIND_GATHER values, in enum order. */
static const char *const compress_names[] = {"off", "topk", "cltk", NULL};
static const char *const gather_names[] = {"auto", "vendor", "doubling", "ring", NULL};

/* Keywords are case-insensitive, as SPARCML_ALGORITHM's names are. */
static int parse_name(const char *v, const char *const *names, int *out)
{
    for (int m = 0; names[m]; m++)
        if (strcasecmp(v, names[m]) == 0) { *out = m; return 0; }
    return -1;
}

/* "off, topk or cltk": the names a parse_name list accepts. */
static const char *name_choices(const char *const *names, char *buf, size_t len)
{
    size_t used = 0;
    int n = 0;
    while (names[n]) n++;
    for (int m = 0; m < n; m++) append_choice(buf, len, &used, m, n, names[m]);
    return buf;
}

static int parse_number(const char *v, double min, double max, double *out)
{
    char *end;
    double x;
    errno = 0;
    x = strtod(v, &end);
    if (end == v || *end != '\0' || errno != 0 || !isfinite(x) || x < min || x > max) return -1;
    *out = x;
    return 0;
}

/* A decimal integer in [min, max], nothing else (no sign, no suffix). */
static int parse_uint(const char *v, double min, double max, uint64_t *out)
{
    char *end;
    unsigned long long x;
    if (*v < '0' || *v > '9') return -1;
    errno = 0;
    x = strtoull(v, &end, 10);
    if (*end != '\0' || errno != 0 || (double)x < min || (double)x > max) return -1;
    *out = x;
    return 0;
}

/* An integer bound as text: the largest double below 2^64 is 2^64 itself,
 * which %.0f would print; the largest accepted value is 2^64 - 1. */
static const char *uint_bound(double x, char *buf, size_t len)
{
    if (x >= 18446744073709551615.0) snprintf(buf, len, "%llu", (unsigned long long)UINT64_MAX);
    else snprintf(buf, len, "%.0f", x);
    return buf;
}

static int parse_one(sparcml_settings *s, const struct var *v, const char *text)
{
    char *field = (char *)s + v->offset, bound[32];
    double x;
    switch (v->kind) {
    case KIND_BOOL:
        if (parse_bool(text, (int *)field) == 0) return 0;
        snprintf(s->error, sizeof s->error, "invalid %s='%s' (expected 0 or 1)", v->name, text);
        return -1;
    case KIND_ALGORITHM: {
        int a;
        if (parse_algorithm(text, &a) == 0) { *(sparcml_algorithm *)field = a; return 0; }
        char choices[256];
        snprintf(s->error, sizeof s->error, "invalid %s='%s' (expected %s)", v->name, text,
                 algorithm_choices(choices, sizeof choices));
        return -1;
    }
    case KIND_POSITIVE:
        if (parse_number(text, v->min, v->max, &x) == 0) { *(double *)field = x * v->scale; return 0; }
        snprintf(s->error, sizeof s->error, "invalid %s='%s' (expected a number in [%g, %g])",
                 v->name, text, v->min, v->max);
        return -1;
    case KIND_AUTO_OR_NUMBER:
        if (strcasecmp(text, "auto") == 0) { *(double *)field = 0; return 0; }
        if (parse_number(text, v->min, v->max, &x) == 0) { *(double *)field = x * v->scale; return 0; }
        snprintf(s->error, sizeof s->error, "invalid %s='%s' (expected auto or a number in [%g, %g])",
                 v->name, text, v->min, v->max);
        return -1;
    case KIND_QBITS:
        if (strcmp(text, "0") == 0 || strcmp(text, "2") == 0 || strcmp(text, "4") == 0
            || strcmp(text, "8") == 0) {
            *(int *)field = atoi(text);
            return 0;
        }
        snprintf(s->error, sizeof s->error, "invalid %s='%s' (expected 0, 2, 4 or 8)", v->name, text);
        return -1;
    case KIND_COMPRESS:
        if (parse_name(text, compress_names, (int *)field) == 0) return 0;
        snprintf(s->error, sizeof s->error, "invalid %s='%s' (expected %s)", v->name, text,
                 name_choices(compress_names, bound, sizeof bound));
        return -1;
    case KIND_GATHER:
        if (parse_name(text, gather_names, (int *)field) == 0) return 0;
        snprintf(s->error, sizeof s->error, "invalid %s='%s' (expected %s)", v->name, text,
                 name_choices(gather_names, bound, sizeof bound));
        return -1;
    case KIND_UINT:
        if (parse_uint(text, v->min, v->max, (uint64_t *)field) == 0) return 0;
        snprintf(s->error, sizeof s->error, "invalid %s='%s' (expected an integer in [%.0f, %s])",
                 v->name, text, v->min, uint_bound(v->max, bound, sizeof bound));
        return -1;
    }
    return -1;
}

static int known_name(const char *name)
{
    for (size_t i = 0; i < NVARS; i++)
        if (strcmp(name, vars[i].name) == 0) return 1;
    return 0;
}

/* The bytes of a variable's field. */
static size_t field_bytes(kind k)
{
    switch (k) {
    case KIND_BOOL: case KIND_QBITS: case KIND_COMPRESS: case KIND_GATHER: return sizeof(int);
    case KIND_ALGORITHM: return sizeof(sparcml_algorithm);
    case KIND_POSITIVE: case KIND_AUTO_OR_NUMBER: return sizeof(double);
    case KIND_UINT: return sizeof(uint64_t);
    }
    return 0;
}

/* FNV-1a over the fields of the variables of one scope, in table order;
 * shifted so that the agreement step may negate it (far from INT64_MIN). */
static uint64_t scope_hash(const sparcml_settings *s, scope sc, size_t only)
{
    uint64_t h = FNV_OFFSET;
    for (size_t i = 0; i < NVARS; i++)
        if (vars[i].scope == sc && (only == NVARS || only == i))
            h = fnv_bytes(h, (const char *)s + vars[i].offset, field_bytes(vars[i].kind));
    return h >> 2;
}

/* Of everything that steers selection: the call-scope variables, the
 * measured vendor_gather and whether the calls are timed. */
static uint64_t settings_hash(const sparcml_settings *s)
{
    int timed = settings_timed_prices(s);
    uint64_t vendor = fnv_bytes(FNV_OFFSET, (const char *)&s->vendor_gather, sizeof s->vendor_gather);
    uint64_t timing = fnv_bytes(FNV_OFFSET, (const char *)&timed, sizeof timed);
    return scope_hash(s, SCOPE_CALL, NVARS) ^ (vendor >> 2) ^ (timing >> 2);
}

int settings_ignored_name(const char *name)
{
    /* What module systems and Spack set for a package (<PKG>_ROOT, ...). */
    static const char *const suffixes[] = {"_ROOT", "_DIR", "_HOME", "_PREFIX", "_PATH", "_VERSION",
                                           "_LIB", "_INC", "_INCLUDE", "_BIN"};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        size_t k = strlen(suffixes[i]);
        if (n >= k && strcmp(name + n - k, suffixes[i]) == 0) return 1;
    }
    return 0;
}

/* The optimal-string-alignment distance (Levenshtein with transpositions
 * of neighbours, the commonest typo) of a and b, ignoring case; strings of
 * SETTINGS_NAME_BYTES or more count as far from everything. */
static int name_distance(const char *a, const char *b)
{
    int d[3][SETTINGS_NAME_BYTES + 1]; /* rows i - 2, i - 1, i, mod 3 */
    size_t na = strlen(a), nb = strlen(b);
    if (na >= SETTINGS_NAME_BYTES || nb >= SETTINGS_NAME_BYTES) return INT_MAX;
    for (size_t j = 0; j <= nb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        int *row = d[i % 3], *up = d[(i - 1) % 3], *up2 = d[(i + 1) % 3];
        row[0] = (int)i;
        for (size_t j = 1; j <= nb; j++) {
            int ca = toupper((unsigned char)a[i - 1]), cb = toupper((unsigned char)b[j - 1]);
            int best = up[j - 1] + (ca != cb);
            if (up[j] + 1 < best) best = up[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            if (i > 1 && j > 1 && ca == toupper((unsigned char)b[j - 2])
                && toupper((unsigned char)a[i - 2]) == cb && up2[j - 2] + 1 < best)
                best = up2[j - 2] + 1;
            row[j] = best;
        }
    }
    return d[na % 3][nb];
}

const char *settings_nearest_name(const char *name)
{
    /* The shared "SPARCML_" is left out, and a third of the rest may be
     * wrong (at least one edit): TRANSPARNT is a typo of TRANSPARENT, FOO
     * of nothing. */
    const size_t prefix = 8;
    const char *best = NULL;
    int best_d = INT_MAX, limit;
    if (strncmp(name, "SPARCML_", prefix) != 0) return NULL;
    limit = (int)(strlen(name + prefix) / 3);
    if (limit < 1) limit = 1;
    for (size_t i = 0; i < NVARS; i++) {
        int d = name_distance(name + prefix, vars[i].name + prefix);
        if (d <= limit && d < best_d) { best = vars[i].name; best_d = d; }
    }
    return best;
}

void settings_unknown_warning(const char *name, char *line, size_t len)
{
    const char *near = settings_nearest_name(name);
    if (near)
        snprintf(line, len, "sparcml: warning: unknown variable %s ignored (did you mean %s?)", name, near);
    else
        snprintf(line, len, "sparcml: warning: unknown variable %s ignored (see sparcml(7) for the SPARCML_* variables)",
                 name);
}

/* Unknown names: those of module systems are dropped, the others kept for
 * the warning at MPI_Init (where the ranks are known: settings_agree). */
static void keep_unknown(sparcml_settings *s, const char *const *names)
{
    for (size_t i = 0; names && names[i]; i++) {
        if (known_name(names[i]) || settings_ignored_name(names[i])) continue;
        if (s->unknown_count == SETTINGS_UNKNOWN_MAX) break;
        snprintf(s->unknown[s->unknown_count++], SETTINGS_NAME_BYTES, "%s", names[i]);
    }
}

int settings_parse(sparcml_settings *s, const char *(*lookup)(const char *name),
                   const char *const *names)
{
    memset(s, 0, sizeof *s);
    keep_unknown(s, names); /* first: a typo is worth its warning beside a bad value */
    for (size_t i = 0; i < NVARS; i++) {
        const char *text = lookup(vars[i].name);
        if (parse_one(s, &vars[i], vars[i].def) != 0) return -1; /* defaults are valid */
        if (text && parse_one(s, &vars[i], text) != 0) return -1;
        if (text && vars[i].offset == offsetof(sparcml_settings, alpha)) s->cost_set |= SETTINGS_SET_ALPHA;
        if (text && vars[i].offset == offsetof(sparcml_settings, beta)) s->cost_set |= SETTINGS_SET_BETA;
        if (text && vars[i].offset == offsetof(sparcml_settings, gamma)) s->cost_set |= SETTINGS_SET_GAMMA;
    }
    s->vendor_gather = 1;
    s->hash = settings_hash(s);
    return 0;
}

/* The two of the SETTINGS_WARN_SLOTS slots of an unknown name. */
static void warn_slots(const char *name, size_t slot[2])
{
    uint64_t h = fnv_bytes(FNV_OFFSET, name, strlen(name));
    slot[0] = (size_t)(h % SETTINGS_WARN_SLOTS);
    slot[1] = (size_t)((h >> 32) % SETTINGS_WARN_SLOTS);
}

/* One MPI_MAX allreduce of int64 carries it all; "none" is INT64_MIN.
 *  [0]                   -(the rank), on a rank that objects: the lowest.
 *  [1, 1 + NVARS)        per SCOPE_JOB variable the hash h of its field,
 *  [1 + NVARS, 1 + 2N)   and -h: the maxima show whether the ranks differ.
 *  then the warn slots:  -(the rank) in both slots of each unknown name it
 *                        holds.  The lowest rank holding a name is the
 *                        lowest in both its slots unless lower ranks hold
 *                        other names there: it prints when it is the
 *                        lowest in either slot, a rank above it never, so
 *                        a name is warned about at most once per job and
 *                        missed only when other names collide with it in
 *                        both slots on lower ranks (ranks may differ in
 *                        their environment). */
enum { AGREE_JOB = 1, AGREE_WARN = 1 + 2 * NVARS, AGREE_N = AGREE_WARN + SETTINGS_WARN_SLOTS };

int settings_agree(const sparcml_settings *s, int objects, MPI_Comm comm, settings_verdict *v)
{
    int64_t mine[AGREE_N], all[AGREE_N];
    size_t n = 0, slot[2];
    int rank, rc = PMPI_Comm_rank(comm, &rank);
    if (rc != MPI_SUCCESS) return rc;
    for (size_t i = 0; i < AGREE_N; i++) mine[i] = INT64_MIN;
    if (objects) mine[0] = -(int64_t)rank;
    for (size_t i = 0; i < NVARS; i++) {
        if (vars[i].scope != SCOPE_JOB) continue;
        mine[AGREE_JOB + n] = (int64_t)scope_hash(s, SCOPE_JOB, i);
        mine[AGREE_JOB + NVARS + n++] = -(int64_t)scope_hash(s, SCOPE_JOB, i);
    }
    for (int k = 0; k < s->unknown_count; k++) {
        warn_slots(s->unknown[k], slot);
        mine[AGREE_WARN + slot[0]] = mine[AGREE_WARN + slot[1]] = -(int64_t)rank;
    }
    rc = PMPI_Allreduce(mine, all, AGREE_N, MPI_INT64_T, MPI_MAX, comm);
    if (rc != MPI_SUCCESS) return rc;
    v->first_objecting = all[0] == INT64_MIN ? -1 : (int)-all[0];
    v->differs = NULL;
    for (size_t i = 0, j = 0; i < NVARS && !v->differs; i++) {
        if (vars[i].scope != SCOPE_JOB) continue;
        if (all[AGREE_JOB + j] != -all[AGREE_JOB + NVARS + j]) v->differs = vars[i].name;
        j++;
    }
    for (int k = 0; k < SETTINGS_UNKNOWN_MAX; k++) {
        v->warns[k] = 0;
        if (k >= s->unknown_count) continue;
        warn_slots(s->unknown[k], slot);
        v->warns[k] = all[AGREE_WARN + slot[0]] == -(int64_t)rank || all[AGREE_WARN + slot[1]] == -(int64_t)rank;
    }
    return MPI_SUCCESS;
}

/* A field in the variable's unit: the shortest text that, set in the
 * variable, gives the field (parse_one stores text * scale), so that
 * different fields never give the same text; a field no text gives (a
 * measured value) is written in full, its stored value (in seconds) after
 * it. */
static void number_text(double x, double scale, char *buf, size_t len)
{
    int used;
    for (int digits = 1; digits <= 17; digits++) {
        double t;
        snprintf(buf, len, "%.*g", digits, x / scale);
        t = strtod(buf, NULL);
        if (t * scale != x) continue;
        /* %g writes 20 as 2e+01: an exponent above the digits is an integer */
        if (strchr(buf, 'e') && fabs(t) >= 1 && fabs(t) < 1e17) snprintf(buf, len, "%.0f", t);
        return;
    }
    used = snprintf(buf, len, "%.17g", x / scale);
    if (used >= 0 && (size_t)used < len) snprintf(buf + used, len - (size_t)used, " (%.17g s)", x);
}

/* The i-th name of a NULL-terminated list, or the number for a value out
 * of range (never happens for parsed settings). */
static void keyword_text(const char *const *names, int i, char *buf, size_t len)
{
    int count = 0;
    while (names[count]) count++;
    if (i >= 0 && i < count) snprintf(buf, len, "%s", names[i]);
    else snprintf(buf, len, "%d", i);
}

/* A variable's field as text, in the terms the variable is set in. */
static void field_text(const sparcml_settings *s, const struct var *v, char *buf, size_t len)
{
    const char *field = (const char *)s + v->offset;
    switch (v->kind) {
    case KIND_BOOL: case KIND_QBITS: snprintf(buf, len, "%d", *(const int *)field); return;
    case KIND_ALGORITHM: {
        int a = (int)*(const sparcml_algorithm *)field;
        if (a >= 0 && a < SPARCML_ALG_COUNT_) snprintf(buf, len, "%s", sparcml_algorithms[a]->name);
        else snprintf(buf, len, "%d", a);
        return;
    }
    case KIND_COMPRESS: keyword_text(compress_names, *(const int *)field, buf, len); return;
    case KIND_GATHER: keyword_text(gather_names, *(const int *)field, buf, len); return;
    case KIND_UINT: snprintf(buf, len, "%" PRIu64, *(const uint64_t *)field); return;
    case KIND_AUTO_OR_NUMBER:
        if (*(const double *)field == 0) { snprintf(buf, len, "auto"); return; }
        number_text(*(const double *)field, v->scale, buf, len);
        return;
    case KIND_POSITIVE: number_text(*(const double *)field, v->scale, buf, len); return;
    }
    snprintf(buf, len, "?");
}

/* "name=value\n" at *used in out, whose last byte stays NUL. */
static void digest_line(char *out, size_t *used, const char *name, const char *value)
{
    if (*used + 1 >= SETTINGS_DIGEST_BYTES) return;
    int n = snprintf(out + *used, SETTINGS_DIGEST_BYTES - 1 - *used, "%s=%s\n", name, value);
    if (n > 0) *used += (size_t)n;
}

/* Whether variable v holds a value MPI_Init measured (a cost-model
 * parameter the user left unset, which the calibration trusted). */
static int measured(const sparcml_settings *s, const struct var *v)
{
    unsigned bit = v->offset == offsetof(sparcml_settings, alpha)   ? SETTINGS_SET_ALPHA
                   : v->offset == offsetof(sparcml_settings, beta)  ? SETTINGS_SET_BETA
                   : v->offset == offsetof(sparcml_settings, gamma) ? SETTINGS_SET_GAMMA
                                                                    : 0;
    return bit && (s->measured & bit);
}

/* Every variable as set (or its default) in table order, "measured" for
 * a value MPI_Init measured, then the measured values: where ranks differ
 * in a setting and, through it, in what they measured (ranks per core
 * scale the measured alpha), the first difference is the setting. */
static void scope_digest(const sparcml_settings *s, scope sc, char out[SETTINGS_DIGEST_BYTES])
{
    char value[96], name[64];
    size_t used = 0;
    memset(out, 0, SETTINGS_DIGEST_BYTES);
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < NVARS; i++) {
            if (vars[i].scope != sc || (pass && !measured(s, &vars[i]))) continue;
            if (!pass && measured(s, &vars[i])) snprintf(value, sizeof value, "measured");
            else field_text(s, &vars[i], value, sizeof value);
            snprintf(name, sizeof name, "%s%s", vars[i].name, pass ? " (measured)" : "");
            digest_line(out, &used, name, value);
        }
    if (sc == SCOPE_CALL) { /* settings_hash covers them too */
        number_text(s->vendor_gather, 1, value, sizeof value);
        digest_line(out, &used, "vendor_gather", value);
        digest_line(out, &used, "timed prices", settings_timed_prices(s) ? "1" : "0");
    }
}

void settings_digest(const sparcml_settings *s, char out[SETTINGS_DIGEST_BYTES])
{
    scope_digest(s, SCOPE_CALL, out);
}

void settings_job_digest(const sparcml_settings *s, char out[SETTINGS_DIGEST_BYTES])
{
    scope_digest(s, SCOPE_JOB, out);
}

/* The length of the line at p (up to its newline or end). */
static size_t line_length(const char *p, const char *end)
{
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    return (size_t)((nl ? nl : end) - p);
}

int settings_digest_difference(const char *a, int rank_a, const char *b, int rank_b, char *line, size_t len)
{
    const char *pa = a, *pb = b, *ea = a + strnlen(a, SETTINGS_DIGEST_BYTES), *eb = b + strnlen(b, SETTINGS_DIGEST_BYTES);
    while (pa < ea || pb < eb) {
        size_t la = line_length(pa, ea), lb = line_length(pb, eb);
        const char *eq = memchr(pa, '=', la);
        size_t name = eq ? (size_t)(eq - pa) : 0;
        if (la == lb && memcmp(pa, pb, la) == 0) {
            pa += la + (pa + la < ea);
            pb += lb + (pb + lb < eb);
            continue;
        }
        if (eq && lb > name && memcmp(pa, pb, name + 1) == 0) /* the same variable */
            snprintf(line, len, "%.*s is %.*s on rank %d and %.*s on rank %d", (int)name, pa,
                     (int)(la - name - 1), eq + 1, rank_a, (int)(lb - name - 1), pb + name + 1, rank_b);
        else
            snprintf(line, len, "settings '%.*s' on rank %d and '%.*s' on rank %d", (int)la, pa, rank_a,
                     (int)lb, pb, rank_b);
        return 1;
    }
    return 0;
}

/* A measured value within the variable's accepted range (in seconds). */
static double in_range(size_t offset, double x)
{
    for (size_t i = 0; i < NVARS; i++) {
        if (vars[i].offset != offset) continue;
        if (!(x >= vars[i].min * vars[i].scale)) return vars[i].min * vars[i].scale;
        return x > vars[i].max * vars[i].scale ? vars[i].max * vars[i].scale : x;
    }
    return x;
}

/* A measured value x into the unset variable at `offset` (`bit` of
 * cost_set); NaN keeps the variable's value. */
static void take_measured(sparcml_settings *s, size_t offset, unsigned bit, double x)
{
    if ((s->cost_set & bit) || isnan(x)) return;
    *(double *)((char *)s + offset) = in_range(offset, x);
    s->measured |= bit;
}

void settings_calibrate(sparcml_settings *s, double alpha, double beta, double gamma, double vendor_gather)
{
    take_measured(s, offsetof(sparcml_settings, alpha), SETTINGS_SET_ALPHA, alpha);
    take_measured(s, offsetof(sparcml_settings, beta), SETTINGS_SET_BETA, beta);
    take_measured(s, offsetof(sparcml_settings, gamma), SETTINGS_SET_GAMMA, gamma);
    if (!isnan(vendor_gather)) s->vendor_gather = vendor_gather;
    s->hash = settings_hash(s);
}

static sparcml_settings process_settings;
static pthread_once_t settings_once = PTHREAD_ONCE_INIT;

static const char *env_lookup(const char *name) { return getenv(name); }

static void settings_load(void)
{
    /* Names of the SPARCML_* variables present, to catch misspellings. */
    static char names_buf[4096];
    const char *names[64];
    size_t n = 0, used = 0;
    for (char **e = environ; e && *e && n + 1 < sizeof names / sizeof names[0]; e++) {
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
        if (strncmp(*e, "SPARCML_", 8) != 0 || used + len + 1 > sizeof names_buf) continue;
        memcpy(names_buf + used, *e, len);
        names_buf[used + len] = '\0';
        names[n++] = names_buf + used;
        used += len + 1;
    }
    names[n] = NULL;
    settings_parse(&process_settings, env_lookup, names);
}

const sparcml_settings *settings_get(void)
{
    pthread_once(&settings_once, settings_load);
    return &process_settings;
}

void settings_calibrate_process(double alpha, double beta, double gamma, double vendor_gather)
{
    pthread_once(&settings_once, settings_load);
    settings_calibrate(&process_settings, alpha, beta, gamma, vendor_gather);
}
