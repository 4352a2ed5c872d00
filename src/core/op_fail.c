/* op_fail.c -- how a call of the library ends when it fails.
 *
 * A failure every rank knows of (the agreement's verdict, a reservation no
 * rank could make, a result that does not fit recvbuf) is settled in a few
 * more steps of the call's schedule, run by every rank alike, so that no
 * rank leaves the protocol alone:
 *  1. one allreduce (maxima of bytes) hands every rank the detail of the
 *     rank at fault and, for a mismatch across ranks, rank 0's facts
 *     ("count=1000", the settings' digest ...);
 *  2. for a mismatch, the lowest rank whose facts differ from rank 0's
 *     (an allreduce) sends them too (another), and the detail names both
 *     ranks' values;
 *  3. the lines are printed: each rank whose own input is at fault prints
 *     its own; else the rank the failure is about (rank 0 for what every
 *     rank finds alike) prints the call's; and where the
 *     communicator's handler aborts the job, every rank that has not
 *     printed yet prints the call's line;
 *  4. a last allreduce: once any rank has left the schedule, every rank
 *     has printed, so a rank that aborts next cannot cut off another's
 *     line.
 * The outcome is then final on every rank; the call that completes the
 * program's call raises it (sparcml_raise).  A failure one rank meets
 * alone (an MPI error, a pool that cannot grow within an algorithm) stops
 * its schedule at once; its outcome is settled by sparcml_op_finish. */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "alg/algorithms.h"
#include "base/errors.h"
#include "core/op.h"
#include "core/stats.h"

/* The facts a mismatch across ranks is about, as "name=value" lines in
 * the settings digest's form (the same text on every rank that agrees, so
 * that settings_digest_difference names the first that differs); "" for
 * other reasons. */
static void mismatch_facts(const sparcml_op *op, int reason, char buf[OP_FACTS_BYTES], size_t len)
{
    memset(buf, 0, len); /* the whole buffer travels (op_fail) */
    switch (reason) {
    case SPARCML_R_DIM_MISMATCH:
        snprintf(buf, len, "dim=%llu\n", (unsigned long long)op->local.dim);
        break;
    case SPARCML_R_VALUE_TYPE_MISMATCH:
        snprintf(buf, len, "value type=%s\n", sparcml_value_type_name(op->local.vtype));
        break;
    case SPARCML_R_COUNT_MISMATCH:
        snprintf(buf, len, "count=%lld\n", (long long)op->local.count);
        break;
    case SPARCML_R_CONFIG_MISMATCH:
        settings_digest(op->set, buf);
        break;
    default: break;
    }
}

static int failure_ended(sched *s)
{
    (void)s;
    return MPI_SUCCESS;
}

/* Step 3 and 4. */
static int failure_print(sched *s)
{
    sparcml_op *op = op_of(s);
    int at_fault = op->local.reason != SPARCML_R_OK, speaker = op->outcome.rank >= 0 ? op->outcome.rank : 0;
    if (at_fault) {
        sparcml_outcome own = {.reason = op->local.reason, .rank = op->rank};
        snprintf(own.detail, sizeof own.detail, "%s", op->detail);
        sparcml_outcome_print(&own, op->call, op->rank);
        op->outcome.printed = 1;
    } else if (op->rank == speaker || sparcml_handler_aborts(op->comm)) {
        sparcml_outcome_print(&op->outcome, op->call, op->rank);
    }
    op->room->fail.which = 0;
    sched_next(s, failure_ended);
    return sched_allreduce(s, &op->room->fail.which, 1, MPI_INT, MPI_MIN);
}

static int failure_values(sched *s)
{
    sparcml_op *op = op_of(s);
    op_failure *f = &op->room->fail;
    f->said[sizeof f->said - 1] = '\0';
    settings_digest_difference(f->facts0, 0, (const char *)f->said, f->which, op->outcome.detail,
                               sizeof op->outcome.detail);
    return failure_print(s);
}

/* Step 2. */
static int failure_which(sched *s)
{
    sparcml_op *op = op_of(s);
    op_failure *f = &op->room->fail;
    if (f->which == INT_MAX) return failure_print(s); /* facts alike: the reason says it all */
    memset(f->said, 0, sizeof f->said);
    if (op->rank == f->which) memcpy(f->said, f->mine, sizeof f->mine);
    sched_next(s, failure_values);
    return sched_allreduce(s, f->said, OP_FACTS_BYTES, MPI_UNSIGNED_CHAR, MPI_MAX);
}

/* After step 1. */
static int failure_said(sched *s)
{
    sparcml_op *op = op_of(s);
    op_failure *f = &op->room->fail;
    memcpy(op->outcome.detail, f->said, sizeof op->outcome.detail);
    op->outcome.detail[sizeof op->outcome.detail - 1] = '\0';
    memcpy(f->facts0, f->said + SPARCML_DETAIL_BYTES, sizeof f->facts0);
    f->facts0[sizeof f->facts0 - 1] = '\0';
    if (!f->facts0[0]) return failure_print(s); /* not a mismatch (on every rank: the reason is agreed) */
    f->which = strcmp(f->mine, f->facts0) != 0 ? op->rank : INT_MAX;
    sched_next(s, failure_which);
    return sched_allreduce(s, &f->which, 1, MPI_INT, MPI_MIN);
}

int op_fail(sched *s, int reason, int rank, const char *detail)
{
    sparcml_op *op = op_of(s);
    op_failure *f = &op->room->fail;
    int speaker = rank >= 0 ? rank : 0;
    op->c.ctx->sealed = 0;
    s->then = NULL; /* the call ends with the steps below */
    memo_forget(&op_policy_of(op->c.ctx)->memo);
    stats_record_error(op->rank, reason);
    sparcml_outcome_set(&op->outcome, reason, rank, NULL);
    mismatch_facts(op, reason, f->mine, sizeof f->mine);
    memset(f->said, 0, sizeof f->said);
    if (op->rank == speaker && detail) snprintf((char *)f->said, SPARCML_DETAIL_BYTES, "%s", detail);
    if (op->rank == 0) memcpy(f->said + SPARCML_DETAIL_BYTES, f->mine, sizeof f->mine);
    sched_next(s, failure_said);
    return sched_allreduce(s, f->said, sizeof f->said, MPI_UNSIGNED_CHAR, MPI_MAX);
}

sparcml_outcome *sparcml_op_finish(sparcml_op *op)
{
    sparcml_call *c = &op->c;
    char detail[SPARCML_DETAIL_BYTES];
    if (op->s.rc == MPI_SUCCESS || sparcml_outcome_failed(&op->outcome)) return &op->outcome;
    memo_forget(&op_policy_of(c->ctx)->memo);
    if (c->reason == SPARCML_R_OK) {
        sparcml_outcome_set_code(&op->outcome, op->s.rc, op->rank);
        return &op->outcome;
    }
    snprintf(detail, sizeof detail, "algorithm %s", sparcml_algorithm_name(op->alg));
    sparcml_outcome_set(&op->outcome, c->reason, op->rank, detail);
    stats_record_error(op->rank, c->reason);
    return &op->outcome;
}
