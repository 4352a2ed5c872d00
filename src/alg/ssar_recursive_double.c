/* ssar_recursive_double.c -- SSAR_Recursive_double (SparCML, SC'19, 5.2).
 *
 * Algorithm: log2(P) rounds; in round j every rank exchanges its current
 *   stream with partner rank XOR 2^j and merge-adds.  Latency-optimal: the
 *   right choice for small k, where the alpha term dominates.
 *   Non-power-of-two P is folded as in MPICH's recursive doubling: with
 *   p2 = 2^floor(log2 P) and rem = P - p2, each even rank r < 2 rem first
 *   sends its stream to r + 1 and sits out; the p2 remaining ranks run the
 *   rounds; finally each odd rank r < 2 rem sends the result back to r - 1.
 *   Pipelined (the call's plan, alg/plan.h: pipeline_chunks = C > 1): the
 *   sum is kept as C range streams (stream_range: consecutive index
 *   ranges, whole dimension), a round sends all C at once and merges chunk
 *   i of the partner's message while chunk i + 1 travels (its receive is
 *   started before the merge).
 * Restrictions: none (any P, any dim, every value type).  Pipelining only
 *   where the caller's chunk count allows it (select_pipeline_chunks, or
 *   for the agreement's exchange core/op_ride.c, ride_chunks): no chunk can go
 *   dense, no QSGD.
 *   A round's chunks after the first travel bare (wire.bare): records the
 *   caller carries on the messages (call.h) ride on the first.
 * Cost (ssar_recursive_double_cost): per round alpha + beta (size of
 *   the group's union so far) + gamma merging both operands; 2 alpha + beta
 *   (input + result) more for the fold when P is not a power of two.
 *   Disjoint indices: log2(P) alpha + (P-1) k beta; identical: log2(P)
 *   (alpha + k beta).  Pipelined: C alpha + max(beta, gamma terms) +
 *   min(beta, gamma terms) / C per round (the copies into chunks and out
 *   of them go unpriced: the smaller merges of chunks save about as much
 *   on the simulated fat tree, bench/RESULTS.md); C alpha + both terms
 *   where bytes move as copies on the cores that merge (shared cores, or
 *   one node: cost_model.copy_bound).
 * Memory (ssar_recursive_double_scratch): two accumulators (pool
 *   ACC0/ACC1) of the union's size, the received stream, QSGD's encoded
 *   and decoded messages; while the caller's records ride
 *   (ssar_recursive_double_ride_scratch), room for one in front of every
 *   message and sum, outgoing ones framed in POOL_FRAME.  Pipelined: two
 *   sets of C chunks (POOL_RD_PART) of the union's size in all, two
 *   received chunks (POOL_RECV, POOL_RECV_NEXT).  At most 3 D (the row's
 *   memory_bound; D the dense result), with inputs just below the
 *   sparse/dense line.
 * Rounds: ceil(log2 P) exchanges (+2 for the fold), one step each;
 *   pipelined, C steps each.
 *
 * Bitwise identical results: in every addition the stream of the lower
 * rank is the left operand, so partners compute the very same sums.  With
 * QSGD a rank quantizes its message once and then adds, in place of its own
 * exact stream, the decoded message its partner adds: both sides sum the
 * same two quantized operands.  The final fold-out message is exact.
 *
 * An operand may be absent (sv_absent: a rank whose message carries only
 * what the caller adds to it, runtime/p2p.c): any sum with an absent
 * stream, or of streams that do not match, is absent, and the caller
 * decides what an absent result means. */
#include "config.h"

#include <math.h>

#include "alg/algorithms.h"

typedef struct rd_state {
    sv cur, other;
    int cur_pool, newrank, rem, p2, mask, round;
    /* cur lies behind room for the rider's record (combine): its message
     * is framed in place (p2p_frame) */
    int room;
    wire w;
    /* pipelined rounds: the sum as `chunks` range streams, in set `set` of
     * the chunks' part[][] (the other set receives the next sums); `got`
     * chunks of the partner's message merged so far */
    int chunks, set, got;
} rd_state;

/* The pipelined rounds' chunks, beside rd_state in the schedule's state:
 * rd_chunk sets them up, so a call of one chunk writes none of them. */
typedef struct rd_chunks {
    uint64_t bounds[SPARCML_PIPELINE_CHUNKS_MAX + 1];
    sv part[2][SPARCML_PIPELINE_CHUNKS_MAX];
} rd_chunks;
typedef struct rd_room {
    rd_state st; /* first: sched_state(s) is the rd_state */
    rd_chunks ch;
} rd_room;
SCHED_STATE_FITS(rd_room);

static rd_chunks *rd_chunks_of(sched *s) { return &((rd_room *)sched_state(s))->ch; }

/* Real rank of the rank numbered `newrank` among the p2 active ones. */
static int active_rank(int newrank, int rem)
{
    return newrank < rem ? 2 * newrank + 1 : newrank + rem;
}

/* Can a and b be added?  Else their sum is absent (see above). */
static int operands_match(const sv *a, const sv *b)
{
    return !sv_is_absent(a) && !sv_is_absent(b) && a->dim == b->dim && a->vtype == b->vtype;
}

/* cur (in pool cur_pool, or the caller's buffer when cur_pool < 0)
 * becomes cur + other, with other's rank on the left when other_is_lower.
 * The last sum of the call goes straight into recvbuf when it surely fits
 * and recvbuf is not an operand (under MPI_IN_PLACE it holds the input):
 * that saves copying the result once more at the end (when the call lets
 * it: call_may_write_result).  While a rider rides, a sum in a pool is
 * written behind room for its record, so that sending it copies nothing. */
static int combine(sparcml_call *c, rd_state *st, const sv *other, int other_is_lower, int last)
{
    sv *cur = &st->cur;
    uint64_t room = c->rider ? c->rider->bytes : 0, bound;
    int out_pool;
    char *out;
    if (!operands_match(cur, other)) {
        *cur = sv_absent();
        st->room = 0;
        return MPI_SUCCESS;
    }
    if (cur->dense && st->cur_pool >= 0) {
        stream_accumulate(cur, other, other_is_lower);
        return MPI_SUCCESS;
    }
    bound = stream_merge_bound(cur, other);
    out_pool = st->cur_pool == POOL_ACC0 ? POOL_ACC1 : POOL_ACC0;
    if (last && call_may_write_result(c) && bound <= c->recv_bytes && cur->base != c->recvbuf) {
        out = c->recvbuf;
        out_pool = -1;
        room = 0;
    } else {
        out = ctx_buffer(c->ctx, out_pool, room + bound);
        if (out) out += room;
    }
    if (!out) return call_nomem(c);
    *cur = other_is_lower ? stream_merge_add(other, cur, out) : stream_merge_add(cur, other, out);
    st->cur_pool = out_pool;
    st->room = room > 0;
    return MPI_SUCCESS;
}

/* The message of cur, as p2p_encode made it: framed where it lies behind
 * room for the rider's record (and goes unquantized). */
static void frame_in_place(const sparcml_call *c, rd_state *st)
{
    if (st->room && st->w.buf == st->cur.base) p2p_frame(c, &st->w);
}

/* Steps.  An even rank of the fold contributes, then receives the result;
 * an odd one adds its partner's stream and joins the rounds; after the
 * rounds, odd ranks of the fold send the result back. */
static int rd_deliver(sched *s)
{
    rd_state *st = sched_state(s);
    return call_deliver(s->c, &st->cur);
}

/* ----------------------------------------------------- pipelined rounds */

static int rd_part_pool(int set, int i) { return POOL_RD_PART + set * SPARCML_PIPELINE_CHUNKS_MAX + i; }

/* Cut the sum into chunks (set 0) before the first round; an absent sum
 * into absent chunks. */
static int rd_chunk(sched *s)
{
    rd_state *st = sched_state(s);
    rd_chunks *ch = rd_chunks_of(s);
    st->set = 0;
    if (sv_is_absent(&st->cur)) {
        for (int i = 0; i < st->chunks; i++) ch->part[0][i] = sv_absent();
        return MPI_SUCCESS;
    }
    stream_split_bounds(st->cur.dim, st->chunks, ch->bounds);
    for (int i = 0; i < st->chunks; i++) {
        uint64_t lo = ch->bounds[i], hi = ch->bounds[i + 1];
        void *buf = ctx_buffer(s->c->ctx, rd_part_pool(0, i), stream_range_bytes(&st->cur, lo, hi));
        if (!buf) return call_nomem(s->c);
        ch->part[0][i] = stream_range(&st->cur, lo, hi, buf);
    }
    return MPI_SUCCESS;
}

/* Join the chunks into cur after the last round: straight into recvbuf
 * when the call lets it (the input, copied into chunks, is not needed);
 * absent if a chunk is. */
static int rd_join(sched *s)
{
    rd_state *st = sched_state(s);
    sparcml_call *c = s->c;
    const sv *parts = rd_chunks_of(s)->part[st->set];
    uint64_t nnz = 0, at_zero[SPARCML_PIPELINE_CHUNKS_MAX] = {0}, bytes;
    void *out = c->recvbuf;
    int absent = 0;
    st->room = 0; /* cur becomes the chunks joined */
    for (int i = 0; i < st->chunks; i++) {
        absent |= sv_is_absent(&parts[i]);
        nnz += parts[i].nnz;
    }
    if (absent) {
        st->cur = sv_absent();
        st->chunks = 1;
        return MPI_SUCCESS;
    }
    bytes = sparcml_sparse_bytes(st->cur.dim, st->cur.vtype, nnz);
    st->cur_pool = -1;
    if (!call_may_write_result(c) || bytes > c->recv_bytes) {
        st->cur_pool = POOL_ACC0;
        out = ctx_buffer(c->ctx, POOL_ACC0, bytes);
        if (!out) return call_nomem(c);
    }
    st->cur = stream_concat(parts, at_zero, st->chunks, st->cur.dim, 0, out);
    st->chunks = 1;
    return MPI_SUCCESS;
}

static int rd_round(sched *s);

/* Chunk `got` of the partner's message is in: start receiving the next,
 * then add this one (the lower rank's chunk on the left; absent where
 * either is). */
static int rd_chunk_arrived(sched *s)
{
    rd_state *st = sched_state(s);
    rd_chunks *ch = rd_chunks_of(s);
    sparcml_call *c = s->c;
    int i = st->got, partner = active_rank(st->newrank ^ st->mask, st->rem), rc = MPI_SUCCESS;
    const sv in = st->other, *mine = &ch->part[st->set][i];
    sv *sum = &ch->part[!st->set][i];
    void *out;
    if (i + 1 < st->chunks)
        rc = sched_recv_chunk(s, partner, TAG_RECURSIVE_DOUBLE, i % 2 ? POOL_RECV : POOL_RECV_NEXT, POOL_QDEC,
                              &st->other);
    if (rc != MPI_SUCCESS) return rc;
    if (operands_match(mine, &in)) {
        out = ctx_buffer(c->ctx, rd_part_pool(!st->set, i), stream_merge_bound(mine, &in));
        if (!out) return call_nomem(c);
        *sum = partner < c->ctx->rank ? stream_merge_add(&in, mine, out) : stream_merge_add(mine, &in, out);
    } else {
        *sum = sv_absent();
    }
    if (++st->got < st->chunks) {
        sched_next(s, rd_chunk_arrived);
        return MPI_SUCCESS;
    }
    /* The next round's sums go where this round's chunks were sent from. */
    st->set = !st->set;
    st->mask <<= 1;
    st->round++;
    sched_next_after_sends(s, rd_round);
    return MPI_SUCCESS;
}

static int rd_round_pipelined(sched *s, int partner)
{
    rd_state *st = sched_state(s);
    sv *parts = rd_chunks_of(s)->part[st->set];
    sparcml_call *c = s->c;
    wire w[SPARCML_PIPELINE_CHUNKS_MAX];
    int rc = MPI_SUCCESS;
    for (int i = 0; i < st->chunks; i++) w[i] = wire_of(&parts[i]);
    /* The first round's chunks are parts of the input unless a rank folded in. */
    if (c->input_block && st->round == 0 && st->cur.base == c->input.base)
        rc = p2p_encode_input_parts(c, parts, st->chunks, -1, w);
    for (int i = 1; i < st->chunks; i++) w[i].bare = 1;
    for (int i = 0; i < st->chunks && rc == MPI_SUCCESS; i++) rc = sched_send(s, &w[i], partner, TAG_RECURSIVE_DOUBLE);
    st->got = 0;
    if (rc == MPI_SUCCESS) rc = sched_recv_stream(s, partner, TAG_RECURSIVE_DOUBLE, POOL_RECV, POOL_QDEC, &st->other, NULL);
    sched_next(s, rd_chunk_arrived);
    return rc;
}

/* ---------------------------------------------------------------- rounds */

static int rd_folded_rank(sched *s)
{
    rd_state *st = sched_state(s);
    sparcml_call *c = s->c;
    int rank = c->ctx->rank;
    /* The send completes before the result is delivered: under
     * MPI_IN_PLACE the input lives in recvbuf, which the result overwrites. */
    int rc = p2p_encode(c, &c->input, (uint64_t)rank, (uint64_t)TAG_FOLD_IN << 32, POOL_QMSG, &st->w);
    if (rc == MPI_SUCCESS) rc = sched_send(s, &st->w, rank + 1, TAG_FOLD_IN);
    if (rc == MPI_SUCCESS) rc = sched_recv_stream(s, rank + 1, TAG_FOLD_OUT, POOL_RECV, POOL_QDEC, &st->cur, NULL);
    if (rc == MPI_SUCCESS) sched_recv_complete(s); /* the result, after every rank's record took part */
    sched_next_after_sends(s, rd_deliver);
    return rc;
}

/* The rank's sum enters the rounds (chunked when they are pipelined). */
static int rd_rounds(sched *s)
{
    const rd_state *st = sched_state(s);
    int rc = st->chunks > 1 ? rd_chunk(s) : MPI_SUCCESS;
    return rc == MPI_SUCCESS ? rd_round(s) : rc;
}

static int rd_fold_added(sched *s)
{
    rd_state *st = sched_state(s);
    int rc = combine(s->c, st, &st->other, 1, st->p2 == 1);
    st->newrank = s->c->ctx->rank / 2;
    return rc == MPI_SUCCESS ? rd_rounds(s) : rc;
}

/* A round is complete: add.  Before round j, cur is the sum of the group of
 * 2^j active ranks newrank >> j, identical on all its members: that group,
 * not this rank, names the quantization key (rd_round). */
static int rd_round_done(sched *s)
{
    rd_state *st = sched_state(s);
    int partner = active_rank(st->newrank ^ st->mask, st->rem), rc = MPI_SUCCESS;
    sv own;
    /* cur may be updated in place now: its send is complete. */
    if (st->w.quantized) {
        rc = p2p_decode_own(s->c, &st->cur, &st->w, POOL_QOWN, &own);
        st->cur = own;
        st->cur_pool = POOL_QOWN;
        st->room = 0;
    }
    if (rc == MPI_SUCCESS)
        rc = combine(s->c, st, &st->other, partner < s->c->ctx->rank, st->mask * 2 >= st->p2);
    st->mask <<= 1;
    st->round++;
    return rc == MPI_SUCCESS ? rd_round(s) : rc;
}

/* Exchange cur with the partner of this round, or finish. */
static int rd_round(sched *s)
{
    rd_state *st = sched_state(s);
    sparcml_call *c = s->c;
    int rank = c->ctx->rank, partner, rc;
    if (st->mask >= st->p2) {
        rc = st->chunks > 1 ? rd_join(s) : MPI_SUCCESS;
        if (rc != MPI_SUCCESS) return rc;
        if (rank >= 2 * st->rem) return rd_deliver(s);
        st->w = wire_of(&st->cur);
        frame_in_place(c, st);
        sched_next_after_sends(s, rd_deliver);
        return sched_send(s, &st->w, rank - 1, TAG_FOLD_OUT);
    }
    partner = active_rank(st->newrank ^ st->mask, st->rem);
    if (st->chunks > 1) return rd_round_pipelined(s, partner);
    rc = p2p_encode(c, &st->cur, (uint64_t)(st->newrank >> st->round),
                    (uint64_t)TAG_RECURSIVE_DOUBLE << 32 | (uint64_t)st->round, POOL_QMSG, &st->w);
    if (rc == MPI_SUCCESS) frame_in_place(c, st);
    if (rc == MPI_SUCCESS) rc = sched_send(s, &st->w, partner, TAG_RECURSIVE_DOUBLE);
    if (rc == MPI_SUCCESS)
        rc = sched_recv_stream(s, partner, TAG_RECURSIVE_DOUBLE, POOL_RECV, POOL_QDEC, &st->other, NULL);
    sched_next_after_sends(s, rd_round_done);
    return rc;
}

static int sparcml_ssar_recursive_double(sched *s)
{
    rd_state *st = sched_state(s);
    int P = s->c->ctx->size, rank = s->c->ctx->rank;
    *st = (rd_state){.cur = s->c->input, .cur_pool = -1, .mask = 1, .chunks = 1};
    if (s->c->plan->pipeline_chunks > 1) st->chunks = s->c->plan->pipeline_chunks;
    s->c->plan->chunks_run = st->chunks;
    st->p2 = cost_largest_power_of_two(P);
    st->rem = P - st->p2;
    if (rank >= 2 * st->rem) {
        st->newrank = rank - st->rem;
        return rd_rounds(s);
    }
    if (rank % 2 == 0) return rd_folded_rank(s);
    sched_next(s, rd_fold_added);
    return sched_recv_stream(s, rank - 1, TAG_FOLD_IN, POOL_RECV, POOL_QDEC, &st->other, NULL);
}

/* Entries of the message of a recursive-doubling round among groups of
 * `group` ranks. */
static double rd_round_entries(const sparcml_problem *p, int group)
{
    return fmax(cost_union_estimate(p, group), group == 1 ? (double)p->k_max : 0);
}

/* Can rounds be pipelined at all (core/select.h)?  A chunk is a range stream of
 * the whole dimension (stream_range): none goes dense while the result's
 * union, at most k_sum entries, is sparse. */
static int pipeline_applies(const sparcml_problem *p)
{
    uint64_t most = p->k_sum < p->dim ? p->k_sum : p->dim;
    return p->P >= 2 && !p->qbits && p->dim >= SPARCML_PIPELINE_CHUNKS_MAX
           && !sparcml_prefers_dense(p->dim, p->vtype, most);
}

static int ssar_recursive_double_chunks(const cost_model *m, const sparcml_problem *p)
{
    double hidden = 0, rounds = 0, N = (double)p->dim, c;
    if (!pipeline_applies(p) || m->pipeline_chunks == 1) return 1;
    if (m->pipeline_chunks) return (int)m->pipeline_chunks;
    if (m->copy_bound) return 1; /* nothing travels during a merge */
    for (int group = 1; group < cost_largest_power_of_two(p->P); group *= 2, rounds++) {
        double u = rd_round_entries(p, group);
        hidden += fmin(m->beta * cost_msg_bytes(p, u, N), m->gamma * 2 * u);
    }
    c = floor(sqrt(hidden / (rounds * m->alpha)) + 0.5);
    return (int)cost_clamp(c, 1, SPARCML_PIPELINE_CHUNKS_MAX);
}

/* Per round a rank encodes its message, decodes its partner's and decodes
 * its own (both sides must add the same quantized operands).  Pipelined in
 * C chunks, a round costs C alpha and the larger of transfer and merge,
 * plus a chunk's share of the smaller (core/select.h); where the transfer
 * is a copy on the cores the merges share (cost_model.copy_bound), both in
 * full. */
static double ssar_recursive_double_cost(const cost_model *m, const sparcml_problem *p)
{
    int p2 = cost_largest_power_of_two(p->P), C = ssar_recursive_double_chunks(m, p);
    double t = 0, N = (double)p->dim;
    if (p2 != p->P) /* fold in and out */
        t += 2 * m->alpha + m->beta * (cost_msg_bytes(p, (double)p->k_max, N)
                                       + cost_msg_bytes(p, cost_union_estimate(p, p->P), N));
    for (int group = 1; group < p2; group *= 2) {
        double u = rd_round_entries(p, group), send = m->beta * cost_msg_bytes(p, u, N), merge = m->gamma * 2 * u;
        double quantized = cost_msg_quantized_values(p, u, N);
        t += C * m->alpha + (m->copy_bound ? send + merge : fmax(send, merge) + fmin(send, merge) / C)
             + m->gamma * cost_qsgd(quantized, 2 * quantized);
    }
    return t;
}

/* A pipelined round's chunk of a sum: its share of the range, whichever
 * operand's entries make it up (stream_merge_bound of two chunks). */
static uint64_t chunk_bytes(const sparcml_problem *p, int chunks)
{
    uint64_t range = (p->dim + (uint64_t)chunks - 1) / (uint64_t)chunks;
    return scratch_sum_bytes(p->dim, p->vtype, 2 * range < p->k_sum ? 2 * range : p->k_sum);
}

/* Messages are the input (the fold, the first round), group sums and the
 * result; each may travel as QSGD codes. */
static void ssar_recursive_double_scratch(const sparcml_call *c, const sparcml_problem *p, uint64_t *need)
{
    uint64_t sum = scratch_sum_bytes(p->dim, p->vtype, p->k_sum), in = scratch_input_bytes(p);
    uint64_t plain = sum > in ? sum : in, msg = plain;
    int chunks = c->plan->pipeline_chunks > 1 ? c->plan->pipeline_chunks : 1;
    qsgd_params q = scratch_wire_q(p);
    if (q.bits) {
        scratch_need(need, POOL_QMSG, scratch_coded_bytes(p->dim, p->vtype, p->k_sum, &q, 1));
        scratch_need(need, POOL_QDEC, plain);
        scratch_need(need, POOL_QOWN, plain);
    }
    if (c->input_q.bits) {
        uint64_t coded = qsgd_grid_bound(p->k_max, sparcml_index_width(p->dim), p->vtype, &c->input_q,
                                         (uint64_t)chunks);
        scratch_need(need, POOL_QMSG, coded);
        scratch_need(need, POOL_QDEC, plain);
        if (coded > msg) msg = coded;
    }
    if (need[POOL_QMSG] > msg) msg = need[POOL_QMSG];
    scratch_need(need, POOL_ACC0, sum);
    scratch_need(need, POOL_ACC1, sum);
    scratch_need(need, POOL_RECV, msg);
    if (p->P == 1) scratch_need(need, POOL_SEND, in); /* the input expanded from a copy (call_deliver) */
    if (chunks > 1) {
        uint64_t chunk = chunk_bytes(p, chunks);
        /* every chunk's pool, whatever C: a call in other chunks finds them held */
        for (int i = 0; i < 2 * SPARCML_PIPELINE_CHUNKS_MAX; i++) scratch_need(need, POOL_RD_PART + i, chunk);
        scratch_need(need, POOL_RECV, chunk);
        scratch_need(need, POOL_RECV_NEXT, chunk > msg ? chunk : msg);
    }
}

/* Riding the whole exchange, every message is behind a record: one
 * received, a round's outgoing message framed in POOL_FRAME (any message
 * this rank receives fits there), a sum sent in place behind room for it
 * in its accumulator. */
static void ssar_recursive_double_ride_scratch(const sparcml_call *c, const sparcml_problem *p, uint64_t record,
                                               uint64_t *need)
{
    (void)c;
    (void)p;
    need[POOL_RECV] += record;
    need[POOL_FRAME] = need[POOL_RECV];
    need[POOL_ACC0] += record;
    need[POOL_ACC1] += record;
}

const sparcml_algorithm_desc sparcml_alg_ssar_recursive_double = {
    .name = "ssar_recursive_double",
    .memory_bound = 3,
    .sparse = 1,
    .first = sparcml_ssar_recursive_double,
    .cost = ssar_recursive_double_cost,
    .scratch = ssar_recursive_double_scratch,
    .ride_scratch = ssar_recursive_double_ride_scratch,
    .chunks = ssar_recursive_double_chunks,
    .ride = ALG_RIDES_EXCHANGE,
};
