/* ssar_recursive_double.c -- SSAR_Recursive_double (SparCML, SC'19, 5.2).
 *
 * Algorithm: log2(P) rounds; in round j every rank exchanges its current
 *   stream with partner rank XOR 2^j and merge-adds.  Latency-optimal: the
 *   right choice for small k, where the alpha term dominates.
 *   Non-power-of-two P is folded as in MPICH's recursive doubling: with
 *   p2 = 2^floor(log2 P) and rem = P - p2, each even rank r < 2 rem first
 *   sends its stream to r + 1 and sits out; the p2 remaining ranks run the
 *   rounds; finally each odd rank r < 2 rem sends the result back to r - 1.
 * Restrictions: none (any P, any dim, every value type).
 * Cost (select.c, cost_recursive_double): per round alpha + beta (size of
 *   the group's union so far) + gamma merging both operands; 2 alpha + beta
 *   (input + result) more for the fold when P is not a power of two.
 *   Disjoint indices: log2(P) alpha + (P-1) k beta; identical: log2(P)
 *   (alpha + k beta).
 * Memory: two accumulators (pool ACC0/ACC1) of the union's size, the
 *   received stream, QSGD's encoded and decoded messages.
 * Rounds: ceil(log2 P) exchanges (+2 for the fold), one step each.
 *
 * Bitwise identical results: in every addition the stream of the lower
 * rank is the left operand, so partners compute the very same sums.  With
 * QSGD a rank quantizes its message once and then adds, in place of its own
 * exact stream, the decoded message its partner adds: both sides sum the
 * same two quantized operands.  The final fold-out message is exact.
 *
 * The agreement stage runs this schedule with the records riding on its
 * messages (allreduce.c, p2p.c): then a rank may have no stream
 * (sv_absent), and any sum with an absent stream, or of streams that do
 * not match, is absent: the records, complete at the end, report why, and
 * nothing is delivered. */
#include "config.h"

#include "schedule.h"

/* Real rank of the rank numbered `newrank` among the p2 active ones. */
static int active_rank(int newrank, int rem)
{
    return newrank < rem ? 2 * newrank + 1 : newrank + rem;
}

/* cur (in pool *cur_pool, or the caller's buffer when *cur_pool < 0)
 * becomes cur + other, with other's rank on the left when other_is_lower.
 * The last sum of the call goes straight into recvbuf when it surely fits
 * and recvbuf is not an operand (under MPI_IN_PLACE it holds the input):
 * that saves copying the result once more at the end (when the call lets
 * it: call_may_write_result). */
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
    if (last && call_may_write_result(c) && bound <= c->recv_bytes && cur->base != c->recvbuf) {
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

/* Steps.  An even rank of the fold contributes, then receives the result;
 * an odd one adds its partner's stream and joins the rounds; after the
 * rounds, odd ranks of the fold send the result back. */
static int rd_round(sched *s);

static int rd_deliver(sched *s)
{
    return call_deliver(s->c, &s->u.rd.cur);
}

static int rd_folded_rank(sched *s)
{
    struct rd_state *st = &s->u.rd;
    sparcml_call *c = s->c;
    int rank = c->ctx->rank;
    /* The send completes before the result is delivered: under
     * MPI_IN_PLACE the input lives in recvbuf, which the result overwrites. */
    int rc = p2p_encode(c, &c->input, (uint64_t)rank, (uint64_t)TAG_FOLD_IN << 32, POOL_QMSG, &st->w);
    if (rc == MPI_SUCCESS) rc = sched_send(s, &st->w, rank + 1, TAG_FOLD_IN);
    if (rc == MPI_SUCCESS) rc = sched_recv_stream(s, rank + 1, TAG_FOLD_OUT, POOL_RECV, POOL_QDEC, &st->cur, NULL);
    sched_next_after_sends(s, rd_deliver);
    return rc;
}

static int rd_fold_added(sched *s)
{
    struct rd_state *st = &s->u.rd;
    int rc = combine(s->c, &st->cur, &st->cur_pool, &st->other, 1, st->p2 == 1);
    st->newrank = s->c->ctx->rank / 2;
    return rc == MPI_SUCCESS ? rd_round(s) : rc;
}

/* A round is complete: add.  Before round j, cur is the sum of the group of
 * 2^j active ranks newrank >> j, identical on all its members: that group,
 * not this rank, names the quantization key (rd_round). */
static int rd_round_done(sched *s)
{
    struct rd_state *st = &s->u.rd;
    int partner = active_rank(st->newrank ^ st->mask, st->rem), rc = MPI_SUCCESS;
    sv own;
    /* cur may be updated in place now: its send is complete. */
    if (st->w.quantized) {
        rc = p2p_decode_own(s->c, &st->cur, &st->w, POOL_QOWN, &own);
        st->cur = own;
        st->cur_pool = POOL_QOWN;
    }
    if (rc == MPI_SUCCESS)
        rc = combine(s->c, &st->cur, &st->cur_pool, &st->other, partner < s->c->ctx->rank, st->mask * 2 >= st->p2);
    st->mask <<= 1;
    st->round++;
    return rc == MPI_SUCCESS ? rd_round(s) : rc;
}

/* Exchange cur with the partner of this round, or finish. */
static int rd_round(sched *s)
{
    struct rd_state *st = &s->u.rd;
    sparcml_call *c = s->c;
    int rank = c->ctx->rank, partner, rc;
    if (st->mask >= st->p2) {
        if (rank >= 2 * st->rem) return rd_deliver(s);
        st->w = wire_of(&st->cur);
        sched_next_after_sends(s, rd_deliver);
        return sched_send(s, &st->w, rank - 1, TAG_FOLD_OUT);
    }
    partner = active_rank(st->newrank ^ st->mask, st->rem);
    rc = p2p_encode(c, &st->cur, (uint64_t)(st->newrank >> st->round),
                    (uint64_t)TAG_RECURSIVE_DOUBLE << 32 | (uint64_t)st->round, POOL_QMSG, &st->w);
    if (rc == MPI_SUCCESS) rc = sched_send(s, &st->w, partner, TAG_RECURSIVE_DOUBLE);
    if (rc == MPI_SUCCESS)
        rc = sched_recv_stream(s, partner, TAG_RECURSIVE_DOUBLE, POOL_RECV, POOL_QDEC, &st->other, NULL);
    sched_next_after_sends(s, rd_round_done);
    return rc;
}

int sparcml_ssar_recursive_double(sched *s)
{
    struct rd_state *st = &s->u.rd;
    int P = s->c->ctx->size, rank = s->c->ctx->rank;
    *st = (struct rd_state){.cur = s->c->input, .cur_pool = -1, .p2 = 1, .mask = 1};
    while (st->p2 * 2 <= P) st->p2 *= 2;
    st->rem = P - st->p2;
    if (rank >= 2 * st->rem) {
        st->newrank = rank - st->rem;
        return rd_round(s);
    }
    if (rank % 2 == 0) return rd_folded_rank(s);
    sched_next(s, rd_fold_added);
    return sched_recv_stream(s, rank - 1, TAG_FOLD_IN, POOL_RECV, POOL_QDEC, &st->other, NULL);
}
