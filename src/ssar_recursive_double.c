/* ssar_recursive_double.c -- SSAR_Recursive_double (SparCML, SC'19, 5.2).
 *
 * log2(P) rounds; in round j every rank exchanges its current stream with
 * partner rank XOR 2^j and merge-adds.  Latency-optimal: the right choice
 * for small k, where the alpha term dominates.
 *
 * Non-power-of-two P is folded as in MPICH's recursive doubling: with
 * p2 = 2^floor(log2 P) and rem = P - p2, each even rank r < 2 rem first
 * sends its stream to r + 1 and sits out; the p2 remaining ranks run the
 * rounds; finally each odd rank r < 2 rem sends the result back to r - 1.
 *
 * Bitwise identical results: in every addition the stream of the lower
 * rank is the left operand, so partners compute the very same sums.  With
 * QSGD a rank quantizes its message once and then adds, in place of its own
 * exact stream, the decoded message its partner adds: both sides sum the
 * same two quantized operands.  The final fold-out message is exact.
 *
 * The same schedule carries the agreement records (allreduce.c): then a
 * rank may have no stream (sv_absent), and any sum with an absent stream,
 * or of streams that do not match, is absent: the records, complete at the
 * end, report why, and nothing is delivered. */
#include "config.h"

#include "call.h"

/* Real rank of the rank numbered `newrank` among the p2 active ones. */
static int active_rank(int newrank, int rem)
{
    return newrank < rem ? 2 * newrank + 1 : newrank + rem;
}

/* cur (in pool *cur_pool, or the caller's buffer when *cur_pool < 0)
 * becomes cur + other, with other's rank on the left when other_is_lower.
 * The last sum of the call goes straight into recvbuf when it surely fits
 * and recvbuf is not an operand (under MPI_IN_PLACE it holds the input):
 * that saves copying the result once more at the end.  Not while recording:
 * recvbuf stays untouched until the records say the call succeeded. */
static int combine(sparcml_call *c, sv *cur, int *cur_pool, const sv *other, int other_is_lower,
                   int last)
{
    int out_pool;
    void *out;
    uint64_t bound;
    if (sv_is_absent(cur) || sv_is_absent(other) || cur->dim != other->dim
        || cur->vtype != other->vtype) {
        *cur = sv_absent();
        return MPI_SUCCESS;
    }
    if (cur->dense && *cur_pool >= 0) {
        stream_accumulate(cur, other, other_is_lower);
        return MPI_SUCCESS;
    }
    bound = stream_merge_bound(cur, other);
    out_pool = *cur_pool == POOL_ACC0 ? POOL_ACC1 : POOL_ACC0;
    if (last && !c->recording && bound <= c->recv_bytes && cur->base != c->recvbuf) {
        out = c->recvbuf;
        out_pool = -1;
    } else {
        out = ctx_buffer(c->ctx, out_pool, bound);
    }
    if (!out) return CALL_NOMEM(c);
    *cur = other_is_lower ? stream_merge_add(other, cur, out) : stream_merge_add(cur, other, out);
    *cur_pool = out_pool;
    return MPI_SUCCESS;
}

/* An even rank of the fold: contribute, then receive the result. */
static int folded_rank(sparcml_call *c)
{
    int rank = c->ctx->rank, rc;
    sv result;
    wire w;
    /* Blocking send: under MPI_IN_PLACE the input lives in recvbuf, which
     * the result will overwrite. */
    rc = p2p_encode(c, &c->input, (uint64_t)rank, (uint64_t)TAG_FOLD_IN << 32, POOL_QMSG, &w);
    if (rc == MPI_SUCCESS) rc = p2p_send(c, &w, rank + 1, TAG_FOLD_IN);
    /* The result comes with the complete record, this rank's part included. */
    if (c->recording) agree_record_clear(&c->record);
    if (rc == MPI_SUCCESS) rc = p2p_recv(c, rank + 1, TAG_FOLD_OUT, POOL_RECV, POOL_QDEC, &result, NULL);
    if (rc != MPI_SUCCESS) return rc;
    return call_deliver(c, &result);
}

/* One round: exchange cur with partner and add.  Before round j, cur is the
 * sum of the group of 2^j active ranks newrank >> j, identical on all its
 * members: that group, not this rank, names the quantization key. */
static int exchange(sparcml_call *c, sv *cur, int *cur_pool, int partner, int newrank, int round,
                    int last)
{
    MPI_Request req;
    sv other, own;
    wire w;
    int rc = p2p_encode(c, cur, (uint64_t)(newrank >> round),
                        (uint64_t)TAG_RECURSIVE_DOUBLE << 32 | (uint64_t)round, POOL_QMSG, &w);
    if (rc != MPI_SUCCESS) return rc;
    rc = p2p_isend(c, &w, partner, TAG_RECURSIVE_DOUBLE, &req);
    if (rc != MPI_SUCCESS) return rc;
    rc = p2p_recv(c, partner, TAG_RECURSIVE_DOUBLE, POOL_RECV, POOL_QDEC, &other, NULL);
    /* cur may be updated in place: the send must be complete first. */
    {
        int wrc = PMPI_Wait(&req, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS) rc = wrc;
    }
    if (rc == MPI_SUCCESS && w.quantized) {
        rc = p2p_decode_own(c, cur, &w, POOL_QOWN, &own);
        *cur = own;
        *cur_pool = POOL_QOWN;
    }
    if (rc != MPI_SUCCESS) return rc;
    return combine(c, cur, cur_pool, &other, partner < c->ctx->rank, last);
}

int sparcml_ssar_recursive_double(sparcml_call *c)
{
    int P = c->ctx->size, rank = c->ctx->rank, p2 = 1, rem, newrank, rc, round = 0;
    int cur_pool = -1;
    sv cur = c->input, other;
    while (p2 * 2 <= P) p2 *= 2;
    rem = P - p2;

    if (rank < 2 * rem) {
        if (rank % 2 == 0) return folded_rank(c);
        rc = p2p_recv(c, rank - 1, TAG_FOLD_IN, POOL_RECV, POOL_QDEC, &other, NULL);
        if (rc == MPI_SUCCESS) rc = combine(c, &cur, &cur_pool, &other, 1, p2 == 1);
        if (rc != MPI_SUCCESS) return rc;
        newrank = rank / 2;
    } else {
        newrank = rank - rem;
    }

    for (int mask = 1; mask < p2; mask <<= 1) {
        rc = exchange(c, &cur, &cur_pool, active_rank(newrank ^ mask, rem), newrank, round++,
                      mask * 2 >= p2);
        if (rc != MPI_SUCCESS) return rc;
    }

    if (rank < 2 * rem) {
        wire w = wire_of(&cur);
        rc = p2p_send(c, &w, rank - 1, TAG_FOLD_OUT);
        if (rc != MPI_SUCCESS) return rc;
    }
    return call_deliver(c, &cur);
}
