/* agree.c -- the agreement record: maxima, minima (as maxima of negated
 * values) and sums of what each rank knows. */
#include "config.h"

#include <string.h>

#include "base/errors.h"
#include "core/agree.h"

enum {
    F_REASON, /* reason << 24 | (2^24 - 1 - rank): the lowest rank wins ties */
    F_DIM_MAX, F_DIM_NEG,
    F_VTYPE_MAX, F_VTYPE_NEG,
    F_COUNT_MAX, F_COUNT_NEG,
    F_NNZ_MAX,
    F_HASH_MAX, F_HASH_NEG,
    F_PIGGYBACK_MAX, F_PIGGYBACK_NEG,
    F_EXACT_MAX, F_SEQUENCE_MAX, F_DECLINED_MAX,
    F_TIMED_NEG, /* one per route but auto (route - 1); INT64_MIN: none timed */
    F_TIMED_LAST_ = F_TIMED_NEG + COST_ROUTES - 2,
    F_NNZ_SUM, /* the summed fields: keep them last */
    F_UNION_SUM,
    F_COUNT_
};
_Static_assert((int)F_COUNT_ == (int)AGREE_FIELDS, "agree.h's AGREE_FIELDS is the number of fields");

#define RANK_BITS 24

static int64_t reason_field(int reason, int rank)
{
    if (reason == 0) return 0;
    return ((int64_t)reason << RANK_BITS) | (int64_t)((1 << RANK_BITS) - 1 - rank);
}

void agree_record_init(agree_record *r, int rank, const sparcml_local *l)
{
    int64_t *v = r->v;
    v[F_REASON] = reason_field(l->reason, rank);
    v[F_DIM_MAX] = (int64_t)l->dim;        v[F_DIM_NEG] = -(int64_t)l->dim;
    v[F_VTYPE_MAX] = l->vtype;             v[F_VTYPE_NEG] = -l->vtype;
    v[F_COUNT_MAX] = (int64_t)l->count;    v[F_COUNT_NEG] = -(int64_t)l->count;
    v[F_NNZ_MAX] = (int64_t)l->nnz;
    v[F_HASH_MAX] = (int64_t)l->settings_hash; v[F_HASH_NEG] = -(int64_t)l->settings_hash;
    v[F_PIGGYBACK_MAX] = l->piggyback;     v[F_PIGGYBACK_NEG] = -l->piggyback;
    v[F_EXACT_MAX] = l->exact;
    v[F_SEQUENCE_MAX] = (int64_t)l->sequence;
    v[F_DECLINED_MAX] = l->declined;
    for (int a = 1; a < COST_ROUTES; a++)
        v[F_TIMED_NEG + a - 1] = l->timed_ppm[a] ? -(int64_t)(l->timed_ppm[a] & INT64_MAX) : INT64_MIN;
    v[F_NNZ_SUM] = (int64_t)l->nnz;
    v[F_UNION_SUM] = (int64_t)l->union_part;
}

void agree_record_clear(agree_record *r)
{
    for (int f = 0; f < F_NNZ_SUM; f++) r->v[f] = INT64_MIN;
    for (int f = F_NNZ_SUM; f < F_COUNT_; f++) r->v[f] = 0;
}

void agree_record_merge(agree_record *inout, const agree_record *in)
{
    for (int f = 0; f < F_NNZ_SUM; f++)
        if (in->v[f] > inout->v[f]) inout->v[f] = in->v[f];
    for (int f = F_NNZ_SUM; f < F_COUNT_; f++) /* wraps, never undefined */
        inout->v[f] = (int64_t)((uint64_t)in->v[f] + (uint64_t)inout->v[f]);
}

void agree_record_read(const agree_record *r, sparcml_agreed *out)
{
    const int64_t *v = r->v;
    out->reason = (int)(v[F_REASON] >> RANK_BITS);
    out->reason_rank = out->reason ? (1 << RANK_BITS) - 1 - (int)(v[F_REASON] & ((1 << RANK_BITS) - 1)) : -1;
    out->dim = (uint64_t)v[F_DIM_MAX];
    out->vtype = (int)v[F_VTYPE_MAX];
    out->count = (MPI_Count)v[F_COUNT_MAX];
    out->k_max = (uint64_t)v[F_NNZ_MAX];
    out->k_sum = (uint64_t)v[F_NNZ_SUM];
    out->union_sum = (uint64_t)v[F_UNION_SUM];
    out->exact = (int)v[F_EXACT_MAX];
    out->sequence = (uint64_t)v[F_SEQUENCE_MAX];
    out->declined = (int)v[F_DECLINED_MAX];
    out->timed_ppm[0] = 0;
    for (int a = 1; a < COST_ROUTES; a++)
        out->timed_ppm[a] = v[F_TIMED_NEG + a - 1] == INT64_MIN ? 0 : (uint64_t)-v[F_TIMED_NEG + a - 1];
    if (out->reason) return;
    /* Arguments valid everywhere: do the ranks agree with each other?  The
     * piggyback decision follows from count, value type, settings and the
     * history of the communicator, so it can differ only when one of those
     * does: it comes last. */
    if (v[F_DIM_MAX] != -v[F_DIM_NEG]) out->reason = SPARCML_R_DIM_MISMATCH;
    else if (v[F_VTYPE_MAX] != -v[F_VTYPE_NEG]) out->reason = SPARCML_R_VALUE_TYPE_MISMATCH;
    else if (v[F_COUNT_MAX] != -v[F_COUNT_NEG]) out->reason = SPARCML_R_COUNT_MISMATCH;
    else if (v[F_HASH_MAX] != -v[F_HASH_NEG]) out->reason = SPARCML_R_CONFIG_MISMATCH;
    else if (v[F_PIGGYBACK_MAX] != -v[F_PIGGYBACK_NEG]) out->reason = SPARCML_R_HISTORY_MISMATCH;
}

/* A received record may sit anywhere in the message buffer: copied out. */
static void rider_merge(void *record, const void *in, int complete)
{
    agree_record r;
    memcpy(&r, in, sizeof r);
    if (complete) agree_record_clear(record);
    agree_record_merge(record, &r);
}

/* A record that combines every rank's lets the call deliver its result
 * when the agreement's verdict will: no failure, and nobody's data stayed
 * back (core/op.c). */
static int rider_settled(const void *record)
{
    sparcml_agreed a;
    agree_record_read(record, &a);
    return a.reason == SPARCML_R_OK && !a.declined;
}

call_rider agree_rider(agree_record *r, const agree_record *own)
{
    return (call_rider){.record = r, .own = own, .bytes = sizeof *r, .merge = rider_merge, .settled = rider_settled};
}
