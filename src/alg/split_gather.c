/* split_gather.c -- the split algorithms' allgather of one message of any
 * size per rank (split_phases.h, split_allgather_messages): by the
 * vendor's MPI_Allgatherv, or by the library's own exchange in one of two
 * patterns, as the cost model plans it for the bytes gathered
 * (cost_gather_plan; the call carries the plan, select_gather_plan, so
 * every rank compares the same agreed numbers and picks alike).
 *
 * Algorithm: the sizes are allgathered first unless every rank can compute
 *   them (unquantized slices); then every message gets its place in
 *   POOL_GATHER, in rank order.
 *   Vendor: MPI_Allgatherv, the messages padded to a common slot where that
 *   costs at most 1/16 more bytes (common_slot says why).
 *   Library: the messages travel straight between the places in
 *   POOL_GATHER.  Doubling, ceil(log2 P) rounds: P a power of two,
 *   recursive doubling -- in round k each rank swaps the 2^k messages its
 *   group holds with the partner rank ^ 2^k (pairwise: a round pairs ranks
 *   off, where Bruck's chains them); other P, Bruck's dissemination -- in
 *   round k rank r, holding messages r .. r+2^k-1 (mod P), sends min(2^k,
 *   P - 2^k) of them to rank r - 2^k and receives as many from rank r +
 *   2^k; a range that wraps past rank P-1 travels as two messages, each
 *   into its final place, so no rotation follows.  Ring, P - 1 rounds: in
 *   round k rank r passes message r - k to rank r + 1 and takes r - k - 1
 *   from rank r - 1.
 * Restrictions: none (any P, messages of any size; in place,
 *   split_allgather_in_place, DSAR_Split_allgather's dense slices: value
 *   arrays of any length, straight into recvbuf).
 * Cost (cost_doubling_allgather, cost_ring_allgather, against
 *   cost_vendor_allgather): ceil(log2 P) alpha + (1 + 1/8) beta (P-1)/P
 *   bytes for doubling -- over TCP its rounds to a new partner each move
 *   large gathers slower than a ring -- and (P - 1) alpha + beta (P-1)/P
 *   bytes for the ring.  MPICH runs a ring of P - 1 rounds from 512 KiB in
 *   all (80 KiB when P is not a power of two) and recursive doubling or
 *   Bruck below.  So where the calibration measured the vendor's gather
 *   slower than the library's doubling (vendor_gather above 9/8) the
 *   library's gathers at every size; else the vendor's below its ring, and
 *   the library's from there: doubling up to where the ring prices lower,
 *   its ring beyond (cost_gather_plan says why not the vendor's).
 *   For P not a power of two Bruck keeps both optima: recursive doubling
 *   with the surplus ranks folded in and out adds two rounds and moves the
 *   folded ranks' messages twice.  On shared memory SSAR and DSAR split
 *   run faster with the library's gathers than with MPICH's allgatherv
 *   (bench/RESULTS.md, "Split gathers").
 * Memory: POOL_GATHER, the messages in place (no padding on the library's
 *   path); the vendor's padded slot in POOL_SLOT (split_scratch).
 * Rounds: one allgather of sizes (quantized slices only), then one
 *   allgatherv, or ceil(log2 P) rounds of at most two sends and two
 *   receives per rank, or P - 1 rounds of one send and one receive. */
#include "config.h"

#include <string.h>

#include "alg/split_phases.h"

/* MPICH's ring MPI_Allgatherv for long messages cuts every block into
 * chunks of the smallest count.  When the counts differ, the block a rank
 * sends and the one it receives end at different chunks, and from there on
 * each sendrecv moves a whole chunk one way and a remainder the other: half
 * the link (bench/RESULTS.md, "Split gathers", equal slots).  Equal counts keep the chunks in step, so when padding
 * every message to the largest costs at most 1/16 more bytes, all travel in
 * slots of that size.  Every rank knows every count: all choose alike. */
static MPI_Count common_slot(const sparcml_ctx *ctx)
{
    MPI_Count largest = 0, total = 0;
    for (int r = 0; r < ctx->size; r++) {
        total += ctx->counts[r];
        if (ctx->counts[r] > largest) largest = ctx->counts[r];
    }
    return largest * ctx->size - total <= total / 16 ? largest : 0;
}

/* This rank's message in a slot of `slot` bytes, the tail zeroed. */
static int fill_slot(sparcml_call *c, split_state *st, MPI_Count slot)
{
    char *padded;
    if (slot == st->my_bytes) return MPI_SUCCESS;
    padded = ctx_buffer(c->ctx, POOL_SLOT, (uint64_t)slot);
    if (!padded) return call_nomem(c);
    memcpy(padded, st->w.buf, (size_t)st->my_bytes);
    memset(padded + st->my_bytes, 0, (size_t)(slot - st->my_bytes));
    st->w.buf = padded;
    st->my_bytes = slot;
    return MPI_SUCCESS;
}

/* Places for the messages in rank order (ctx->displs), and POOL_GATHER to
 * hold them all. */
static int place_messages(sparcml_call *c, split_state *st, MPI_Count *total)
{
    sparcml_ctx *ctx = c->ctx;
    *total = 0;
    for (int r = 0; r < ctx->size; r++) {
        ctx->displs[r] = (MPI_Aint)*total;
        *total += ctx->counts[r];
    }
    st->gathered = ctx_buffer(ctx, POOL_GATHER, (uint64_t)*total);
    return st->gathered ? MPI_SUCCESS : call_nomem(c);
}

static int vendor_gather(sched *s)
{
    split_state *st = sched_state(s);
    sparcml_call *c = s->c;
    sparcml_ctx *ctx = c->ctx;
    MPI_Count total, slot = common_slot(ctx);
    int rc = slot ? fill_slot(c, st, slot) : MPI_SUCCESS;
    for (int r = 0; slot && r < ctx->size; r++) ctx->counts[r] = slot;
    if (rc == MPI_SUCCESS) rc = place_messages(c, st, &total);
    if (rc != MPI_SUCCESS) return rc;
    c->plan->gather_run = ALG_GATHER_VENDOR;
    sched_next(s, st->phase_then);
    return sched_allgatherv_bytes(s, st->w.buf, st->my_bytes, st->gathered, ctx->counts, ctx->displs);
}

/* A round of the library's exchange: this rank sends messages send ..
 * send+n-1 (mod P) to dest and receives recv .. recv+n-1 from src. */
typedef struct gather_round {
    int send, recv, n, dest, src;
} gather_round;

/* Round k of the ring: pass message r - k on to rank r + 1, take r - k - 1
 * from rank r - 1 (mod P). */
static gather_round ring_round(int P, int r, int k)
{
    return (gather_round){.send = (r - k + P) % P, .recv = (r - k - 1 + 2 * P) % P, .n = 1, .dest = (r + 1) % P,
                          .src = (r - 1 + P) % P};
}

static gather_round doubling_round(int P, int r, int k)
{
    int d = 1 << k, group = r & ~(d - 1);
    if ((P & (P - 1)) == 0)
        return (gather_round){.send = group, .recv = group ^ d, .n = d, .dest = r ^ d, .src = r ^ d};
    return (gather_round){.send = r, .recv = (r + d) % P, .n = d < P - d ? d : P - d, .dest = (r - d + P) % P,
                          .src = (r + d) % P};
}

/* Send (to peer) or receive (from peer) messages first .. first+n-1 (mod
 * P) where they lie in POOL_GATHER: one message per contiguous run. */
static int post_messages(sched *s, int first, int n, int peer, int sending)
{
    split_state *st = sched_state(s);
    const sparcml_ctx *ctx = s->c->ctx;
    int rc = MPI_SUCCESS;
    while (n > 0 && rc == MPI_SUCCESS) {
        int end = first + n < ctx->size ? first + n : ctx->size;
        MPI_Aint at = ctx->displs[first];
        MPI_Count bytes = ctx->displs[end - 1] + ctx->counts[end - 1] - at;
        wire w = {.buf = st->gathered + at, .bytes = (uint64_t)bytes};
        if (bytes > 0)
            rc = sending ? sched_send(s, &w, peer, TAG_ALLGATHER)
                         : sched_recv_bytes(s, st->gathered + at, bytes, peer, TAG_ALLGATHER);
        n -= end - first;
        first = 0;
    }
    return rc;
}

/* Round st->round, or the phase's end once every rank holds all P. */
static int exchange_round(sched *s)
{
    split_state *st = sched_state(s);
    const sparcml_ctx *ctx = s->c->ctx;
    int P = ctx->size, k = st->round++, ring = s->c->plan->gather_run == ALG_GATHER_RING, rc;
    gather_round g;
    if (k >= (ring ? P - 1 : cost_ceil_log2(P))) return st->phase_then(s);
    g = ring ? ring_round(P, ctx->rank, k) : doubling_round(P, ctx->rank, k);
    /* The sends leave from POOL_GATHER, which stays as it is: waiting for
     * them costs nothing, as their receivers post in the same round. */
    sched_next_after_sends(s, exchange_round);
    rc = post_messages(s, g.recv, g.n, g.src, 0);
    return rc == MPI_SUCCESS ? post_messages(s, g.send, g.n, g.dest, 1) : rc;
}

/* The library's exchange in the pattern given, from its first round (this
 * rank's part in place). */
static int start_exchange(sched *s, alg_gather pattern)
{
    split_state *st = sched_state(s);
    s->c->plan->gather_run = pattern;
    st->round = 0;
    return exchange_round(s);
}

static int library_gather(sched *s, alg_gather pattern)
{
    split_state *st = sched_state(s);
    sparcml_call *c = s->c;
    MPI_Count total;
    int rc = place_messages(c, st, &total);
    if (rc != MPI_SUCCESS) return rc;
    memcpy(st->gathered + c->ctx->displs[c->ctx->rank], st->w.buf, (size_t)st->my_bytes);
    return start_exchange(s, pattern);
}

int split_allgather_in_place(sched *s, char *base, uint64_t vs, sched_step then)
{
    split_state *st = sched_state(s);
    sparcml_call *c = s->c;
    sparcml_ctx *ctx = c->ctx;
    alg_gather pattern = alg_gather_for(&c->plan->gather, c->dim * vs);
    st->phase_then = then;
    st->gathered = base;
    if (pattern != ALG_GATHER_VENDOR) return start_exchange(s, pattern);
    c->plan->gather_run = ALG_GATHER_VENDOR;
    sched_next(s, then);
    return sched_allgatherv_bytes(s, MPI_IN_PLACE, 0, base, ctx->counts, ctx->displs);
}

/* The sizes are known: gather the messages as the call's plan says for
 * their bytes in all (every rank compares the same total). */
static int gather_messages(sched *s)
{
    const sparcml_ctx *ctx = s->c->ctx;
    uint64_t total = 0;
    alg_gather pattern;
    for (int r = 0; r < ctx->size; r++) total += (uint64_t)ctx->counts[r];
    pattern = alg_gather_for(&s->c->plan->gather, total);
    return pattern == ALG_GATHER_VENDOR ? vendor_gather(s) : library_gather(s, pattern);
}

int split_allgather_messages(sched *s, int sizes_known, sched_step then)
{
    split_state *st = sched_state(s);
    sparcml_ctx *ctx = s->c->ctx;
    st->my_bytes = (MPI_Count)sparcml_round8(st->w.bytes);
    st->phase_then = then;
    /* Whole words, so every gathered message starts 8-byte aligned; zero the
     * tail so no uninitialised byte goes on the wire (every pool buffer is
     * allocated in multiples of 64 bytes, so the tail is there). */
    memset((char *)st->w.buf + st->w.bytes, 0, (size_t)st->my_bytes - st->w.bytes);
    if (sizes_known) return gather_messages(s);
    sched_next(s, gather_messages);
    return sched_allgather(s, &st->my_bytes, (int)sizeof st->my_bytes, ctx->counts);
}
