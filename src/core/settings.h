/* settings.h -- the one module that owns every SPARCML_* environment variable.
 *
 * Variables are read once (settings_get) and validated: an invalid value is
 * reported with a message naming the variable, never replaced by a default.
 * An unknown SPARCML_* name is not an error: the ones module systems set
 * (SPARCML_ROOT, ...) are ignored, the others kept for one warning at
 * MPI_Init.  Keyword values are case-insensitive.
 * Adding a variable: add a field, a row in settings.c's table, and a
 * paragraph in man/sparcml.7. */
#ifndef SPARCML_SETTINGS_H
#define SPARCML_SETTINGS_H

#include <mpi.h>
#include <stdint.h>

#include "alg/algorithms.h"


/* SPARCML_COMPRESS: which lossy compression untagged gradient sums get. */
typedef enum { COMPRESS_OFF, COMPRESS_TOPK, COMPRESS_CLTK } sparcml_compress;

/* The unknown names a rank keeps for its warning, and their longest. */
enum { SETTINGS_UNKNOWN_MAX = 8, SETTINGS_NAME_BYTES = 128 };

/* Bits of sparcml_settings.cost_set. */
enum { SETTINGS_SET_ALPHA = 1, SETTINGS_SET_BETA = 2, SETTINGS_SET_GAMMA = 4, SETTINGS_SET_MODEL = 7 };

typedef struct sparcml_settings {
    int disable;                 /* SPARCML_DISABLE: 0/1 */
    sparcml_algorithm algorithm; /* SPARCML_ALGORITHM */
    int verbose;                 /* SPARCML_VERBOSE: 0/1 */
    int stats;                   /* SPARCML_STATS: 0/1 */
    double alpha;                /* SPARCML_ALPHA_US, stored in seconds */
    double beta;                 /* SPARCML_BETA_NS_PER_BYTE, stored in s/byte */
    double gamma;                /* SPARCML_GAMMA_NS_PER_ENTRY, stored in s/entry */
    int calibrate;               /* SPARCML_CALIBRATE: 0/1, measure what is not set */
    int reproducible;            /* SPARCML_REPRODUCIBLE: 0/1, no choice from a timing */
    int qsgd_bits;               /* SPARCML_QSGD_BITS: 0 (off), 2, 4 or 8 */
    uint64_t qsgd_bucket;        /* SPARCML_QSGD_BUCKET: values per bucket */
    uint64_t qsgd_seed;          /* SPARCML_QSGD_SEED */
    int qsgd_sparse;             /* SPARCML_QSGD_SPARSE: 0/1, quantize sparse values too */
    int piggyback;               /* SPARCML_PIGGYBACK: 0/1, data rides on the agreement */
    double ranks_per_core;       /* SPARCML_RANKS_PER_CORE: >= 1, or 0 for "auto" (detect) */
    int transparent;             /* SPARCML_TRANSPARENT: 0/1, untagged dense sums too */
    uint64_t transparent_min_bytes; /* SPARCML_TRANSPARENT_MIN_BYTES: smallest such call */
    uint64_t progress_us;        /* SPARCML_PROGRESS_US: progress thread's period, 0: no thread */
    uint64_t pipeline_chunks;    /* SPARCML_PIPELINE_CHUNKS: 0 (the model), 1 (off), 2..MAX */
    int split_gather;            /* SPARCML_SPLIT_GATHER: cost_gather (auto, vendor, doubling, ring) */
    int compress;                /* SPARCML_COMPRESS: sparcml_compress */
    double compress_density;     /* SPARCML_COMPRESS_DENSITY: k / N, in (0, 1] */
    uint64_t compress_min_bytes; /* SPARCML_COMPRESS_MIN_BYTES: smallest compressed call */
    int compress_feedback;       /* SPARCML_COMPRESS_FEEDBACK: 0/1, error feedback */
    uint64_t compress_max_bytes; /* SPARCML_COMPRESS_MAX_BYTES: error-feedback memory per rank */
    unsigned cost_set;           /* SETTINGS_SET_*: cost-model variables the user set */
    unsigned measured;           /* SETTINGS_SET_*: unset ones holding values measured at MPI_Init */
    double vendor_gather;        /* the vendor's gathers over their price: 1, or measured (core/calibrate.h) */
    uint64_t hash;               /* of everything that steers selection */
    int unknown_count;           /* unknown SPARCML_* names kept (at most SETTINGS_UNKNOWN_MAX) */
    char unknown[SETTINGS_UNKNOWN_MAX][SETTINGS_NAME_BYTES]; /* them, for MPI_Init's warning */
    char error[512];             /* non-empty: the settings are invalid */
} sparcml_settings;

/* Parse the settings from a lookup function (getenv in production, a table
 * in the unit tests); `names` lists every variable present in the
 * environment that starts with SPARCML_ (NULL-terminated): the unknown
 * ones that settings_ignored_name does not ignore are kept in s->unknown.
 * Returns 0, or -1 with s->error set. */
int settings_parse(sparcml_settings *s, const char *(*lookup)(const char *name),
                   const char *const *names);

/* 1 if an unknown name ends in a suffix of module systems and Spack
 * (SPARCML_ROOT, SPARCML_DIR, ...): such names are not meant for the
 * library and are ignored without a word. */
int settings_ignored_name(const char *name);

/* The known variable nearest to an unknown name (Damerau-Levenshtein,
 * case-insensitive), or NULL when none is close enough to be a typo. */
const char *settings_nearest_name(const char *name);

/* The warning for an unknown name, without a newline: "sparcml: warning:
 * unknown variable NAME ignored (did you mean KNOWN?)". */
void settings_unknown_warning(const char *name, char *line, size_t len);

/* What the ranks agree on at MPI_Init, in one allreduce. */
enum { SETTINGS_WARN_SLOTS = 64 };
typedef struct settings_verdict {
    int first_objecting;   /* lowest rank that objected, or -1: none did */
    const char *differs;   /* first SCOPE_JOB variable that differs between ranks, or NULL */
    int warns[SETTINGS_UNKNOWN_MAX]; /* 1: this rank prints the warning for s->unknown[i] */
} settings_verdict;

/* Collective over comm: `objects` is 1 on a rank that objects to its
 * settings (s->error, or a requirement MPI_Init finds unmet).  Returns an
 * MPI error code; v is valid on MPI_SUCCESS only. */
int settings_agree(const sparcml_settings *s, int objects, MPI_Comm comm, settings_verdict *v);

/* A canonical text of the settings that must be equal on all ranks:
 * "NAME=value\n" lines in table order, NUL-padded to the full size.
 * settings_digest covers everything that enters s->hash (the SCOPE_CALL
 * variables' effective values and the measured vendor_gather, named
 * "vendor_gather"): equal text iff equal fields.  settings_job_digest
 * covers the SCOPE_JOB variables, which MPI_Init compares. */
enum { SETTINGS_DIGEST_BYTES = 1024 };
void settings_digest(const sparcml_settings *s, char out[SETTINGS_DIGEST_BYTES]);
void settings_job_digest(const sparcml_settings *s, char out[SETTINGS_DIGEST_BYTES]);

/* Compares two digests (of rank_a and rank_b; each read up to
 * SETTINGS_DIGEST_BYTES): 1 and the first differing line, in table order,
 * as "SPARCML_ALGORITHM is auto on rank 0 and dense on rank 2" in line
 * (truncated to len), or 0 if they are identical. */
int settings_digest_difference(const char *a, int rank_a, const char *b, int rank_b, char *line, size_t len);

/* Whether blocking calls time their runs and the selector uses the
 * times (core/timed.h): not with SPARCML_REPRODUCIBLE, nor where the user
 * set the whole model.  It enters the settings' hash: the rationing of
 * trials counts calls on every rank alike only where every rank times. */
static inline int settings_timed_prices(const sparcml_settings *s)
{
    return !s->reproducible && (s->cost_set & SETTINGS_SET_MODEL) != SETTINGS_SET_MODEL;
}

/* The ranks per core the cost model assumes: SPARCML_RANKS_PER_CORE when
 * set, else what the communicator's placement detected. */
static inline double settings_ranks_per_core(const sparcml_settings *s, double detected)
{
    return s->ranks_per_core > 0 ? s->ranks_per_core : detected;
}

/* Measured cost-model parameters (seconds, s/byte, s/entry) replace the
 * defaults of the variables the user did not set (a set one wins), each
 * clamped to its variable's accepted range; vendor_gather (>= 1) is taken
 * as it is; a NaN (not measured, or not to be trusted: core/calibrate.h)
 * leaves its value as it was; the hash follows. */
void settings_calibrate(sparcml_settings *s, double alpha, double beta, double gamma, double vendor_gather);

/* The same on the process-wide settings: at MPI_Init only, before any
 * call of the library reads them (core/calibrate.h). */
void settings_calibrate_process(double alpha, double beta, double gamma, double vendor_gather);

/* The process-wide settings, parsed from the environment on first use
 * (thread-safe, never changes afterwards). */
const sparcml_settings *settings_get(void);

#endif
