/* select.c -- the choice of algorithm (select.h): the settings' alpha,
 * beta and gamma adjusted for the machine, every algorithm's cost
 * function (alg/algorithms.h) on the agreed problem, the cheapest that
 * applies. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "core/select.h"
#include "sparcml.h"

double select_learn_overlap(const sparcml_problem *p, uint64_t result_nnz)
{
    return cost_overlap_of_union(p, p->P, (double)result_nnz);
}

/* Moving a byte from one rank's memory to another's costs CPU time too:
 * it is copied into and out of a shared segment or a socket buffer.  Where
 * ranks share cores that, not the link, sets the pace: a dense allreduce
 * there moves a byte far slower than a 2-rank ping-pong's beta says.  So
 * where ranks share cores a byte costs at least 1/8 of a merged 8-byte
 * entry (SELECT_BYTE_PER_MERGE of gamma, scaled by the same sharing);
 * where the link is slower than that (a Gigabit network) nothing changes.  A rank with a core of its own
 * copies at the speed its measured beta already holds, so no floor
 * applies there: one would overprice every byte of a fast network and turn
 * the choice between recursive doubling and SSAR split the wrong way.
 *
 * Where that floor binds, the copy runs on the very cores the merges
 * need, all of them busy: it cannot travel while a merge runs, so
 * recursive doubling's pipelined rounds hide nothing and only add
 * messages.  Ranks on one node with a core each move bytes the same way,
 * through shared memory on the cores that merge: where a byte costs no
 * more than such a copy, recursive doubling runs whole messages too.  A
 * rig whose ranks share one node but talk TCP keeps its link's beta.
 * Measurements: bench/RESULTS.md, "Cost model: the measurements behind the
 * design" and "Pipelined recursive doubling". */
cost_model select_model(const sparcml_settings *s, const sparcml_problem *p)
{
    double share = p->ranks_per_core > 1 ? p->ranks_per_core : 1;
    /* alpha and gamma are for a rank with a core of its own
     * (base/placement.h); where ranks share cores both grow with the
     * sharing: a collective round waits for its partner to be scheduled,
     * and a merge shares its core (bench/RESULTS.md, "Cost model: the
     * measurements behind the design"). */
    cost_model m = {.alpha = s->alpha * share, .beta = s->beta, .link_beta = s->beta,
                    .gamma = s->gamma * share, .pipeline_chunks = s->pipeline_chunks, .gather = s->split_gather,
                    .vendor_gather = s->vendor_gather};
    if (share > 1 || p->one_node) m.copy_bound = s->beta <= SELECT_BYTE_PER_MERGE * m.gamma;
    if (share > 1) m.beta = fmax(s->beta, SELECT_BYTE_PER_MERGE * m.gamma);
    return m;
}

static double price_in(const cost_model *m, const sparcml_problem *p, sparcml_algorithm a)
{
    return sparcml_algorithm_restriction(a, p) == SPARCML_R_OK ? sparcml_algorithms[a]->cost(m, p) : INFINITY;
}

void select_costs(const sparcml_settings *s, const sparcml_problem *p,
                  double cost[SPARCML_ALG_COUNT_])
{
    cost_model m = select_model(s, p);
    cost[SPARCML_ALG_AUTO] = INFINITY;
    for (int a = SPARCML_ALG_AUTO + 1; a < SPARCML_ALG_COUNT_; a++) cost[a] = price_in(&m, p, a);
}

double select_price(const sparcml_settings *s, const sparcml_problem *p, sparcml_algorithm a)
{
    cost_model m = select_model(s, p);
    return price_in(&m, p, a);
}

int select_pipeline_chunks(const sparcml_settings *s, const sparcml_problem *p, sparcml_algorithm a)
{
    cost_model m = select_model(s, p);
    return sparcml_algorithms[a]->chunks ? sparcml_algorithms[a]->chunks(&m, p) : 1;
}

alg_gather_plan select_gather_plan(const sparcml_settings *s, const sparcml_problem *p)
{
    cost_model m = select_model(s, p);
    return cost_gather_plan(&m, p);
}

/* Each route's price (cost[], COST_ROUTES of them: INFINITY where a route
 * cannot run) at least what it was timed at on calls like this
 * one (core/timed.h): the model's price times the agreed multiple, where it
 * exceeds 1.  Only upwards: a model's price is what an algorithm takes
 * where nothing else gets in its way.  An algorithm never timed here keeps
 * its model's price, the lowest it could be, but where another has been
 * timed it competes only while a trial may start: running it is the only
 * way to learn its price, and a call that runs it may take many times the
 * best known price; the rationing bounds how many calls do (timed.h).  The
 * trial under way (t->trying) is the only route while it can run: its
 * verdict waits for all its timed runs, not the first alone. */
static void timed_prices(const select_timed *t, double cost[COST_ROUTES])
{
    int timed = 0, trial = t->trying != SPARCML_ALG_AUTO && cost[t->trying] < INFINITY;
    for (int a = SPARCML_ALG_AUTO + 1; a < COST_ROUTES; a++) {
        if (t->timed_over[a] > 1) cost[a] *= t->timed_over[a];
        timed |= t->timed_over[a] > 0 && cost[a] < INFINITY;
    }
    for (int a = SPARCML_ALG_AUTO + 1; timed && a < COST_ROUTES; a++)
        if (trial ? a != t->trying : t->timed_over[a] == 0 && !t->may_try) cost[a] = INFINITY;
}

/* The cheapest route of cost[]: `first` unless another costs less; among
 * other routes of equal cost the one whose name sorts first, so that the
 * choice never depends on the rows' order. */
static cost_route cheapest(const double cost[COST_ROUTES], cost_route first)
{
    cost_route best = first;
    for (int a = SPARCML_ALG_AUTO + 1; a < SPARCML_ALG_COUNT_; a++) {
        if (a == (int)first || cost[a] > cost[best]) continue;
        int named_first = best != first && strcmp(sparcml_algorithms[a]->name, sparcml_algorithms[best]->name) < 0;
        if (cost[a] < cost[best] || named_first) best = a;
    }
    return best;
}

cost_route select_algorithm(const sparcml_settings *s, const sparcml_problem *p, const select_timed *t)
{
    double cost[COST_ROUTES];
    sparcml_algorithm best = sparcml_exchange_algorithm();
    if (s->algorithm != SPARCML_ALG_AUTO) return s->algorithm;
    if (p->P == 1) return best; /* zero rounds: a copy */
    select_costs(s, p, cost);
    cost[COST_VENDOR] = INFINITY; /* a tagged call's buffers are streams */
    timed_prices(t, cost);
    return cheapest(cost, best);
}

static double vendor_price(const cost_model *m, const sparcml_problem *p)
{
    return cost_vendor_allreduce(m, p, (double)p->dim * (double)sparcml_value_size(p->vtype));
}

double select_vendor_price(const sparcml_settings *s, const sparcml_problem *p)
{
    cost_model m = select_model(s, p);
    return vendor_price(&m, p);
}

/* The cheapest sparse algorithm whose route beats the vendor's allreduce
 * of the original buffers, else COST_VENDOR.  A route costs its
 * algorithm's price and `detour`, the kind's own work on the buffers;
 * with `detour_timed` the algorithms' timed multiples cover the detour too
 * (the kind times its routes whole), else they scale the algorithm's
 * price alone.  On a buffer that is dense already, the dense algorithm's
 * allreduce is the vendor's of the buffers: a forced one means the
 * vendor.  The vendor's price holds a byte's transfer and add as measured
 * on messages that stay in the cache; large buffers on shared memory,
 * which the vendor moves through its own copies, were timed at many times
 * that (bench/RESULTS.md, "Transparent mode", Timed prices): the timed
 * multiple corrects it. */
static cost_route sparse_or_vendor(const sparcml_settings *s, const sparcml_problem *p, const select_timed *t,
                                   double detour, int detour_timed)
{
    double cost[COST_ROUTES];
    cost_model m = select_model(s, p);
    cost_route best = COST_VENDOR;
    if (s->algorithm != SPARCML_ALG_AUTO) return sparcml_algorithms[s->algorithm]->sparse ? (cost_route)s->algorithm : best;
    if (p->P == 1) return best; /* the vendor's copy */
    select_costs(s, p, cost);
    cost[COST_VENDOR] = vendor_price(&m, p);
    for (int a = SPARCML_ALG_AUTO + 1; a < SPARCML_ALG_COUNT_; a++)
        if (sparcml_algorithms[a]->sparse && detour_timed) cost[a] += detour;
    timed_prices(t, cost);
    for (int a = SPARCML_ALG_AUTO + 1; a < SPARCML_ALG_COUNT_; a++)
        cost[a] = !sparcml_algorithms[a]->sparse ? INFINITY : cost[a] + (detour_timed ? 0 : detour);
    return cheapest(cost, best);
}

cost_route select_transparent(const sparcml_settings *s, const sparcml_problem *p, const select_timed *t)
{
    cost_model m = select_model(s, p);
    double N = (double)p->dim, vs = (double)sparcml_value_size(p->vtype);
    /* Gathering the k nonzeros into a stream copies them; the dense result
     * is written in full (N values, at the cost of copies of 8 bytes). */
    return sparse_or_vendor(s, p, t, COST_COPY_PER_MERGE * m.gamma * ((double)p->k_max + N * vs / 8), 0);
}

/* A compressed call's passes over its N values on each rank: acc = eps +
 * g with the selection's threshold pass (kernel/topk.h, topk_select_sum),
 * and the dense result.  Each is priced as a copy of the buffer; the timed
 * multiples say what they take beyond that (out of the cache, on shared
 * cores). */
enum { COMPRESS_PASSES = 2 };

double select_compress_detour(const sparcml_settings *s, const sparcml_problem *p)
{
    cost_model m = select_model(s, p);
    double N = (double)p->dim, vs = (double)sparcml_value_size(p->vtype), k = (double)p->k_max;
    double passes = COST_COPY_PER_MERGE * m.gamma * COMPRESS_PASSES * N * vs / 8;
    /* CLT-k: the leader's k indices, broadcast (a binomial tree). */
    double bcast = cost_ceil_log2(p->P) * (m.alpha + m.beta * k * sparcml_index_width(p->dim));
    return passes + (s->compress == COMPRESS_CLTK ? bcast : 0);
}

cost_route select_compressed(const sparcml_settings *s, const sparcml_problem *p, const select_timed *t)
{
    return sparse_or_vendor(s, p, t, select_compress_detour(s, p), 1);
}

select_basis select_basis_of(const sparcml_settings *s, const sparcml_problem *p, const select_timed *t,
                             cost_route chosen, select_route select)
{
    select_timed model = *t;
    int timed = 0;
    if (s->algorithm != SPARCML_ALG_AUTO) return SELECT_BY_FORCED;
    for (int a = SPARCML_ALG_AUTO + 1; a < COST_ROUTES; a++) {
        timed |= t->timed_over[a] > 0;
        model.timed_over[a] = 0;
    }
    if (timed && (t->timed_over[chosen] == 0 || t->trying == chosen)) return SELECT_BY_TRIAL;
    if (select(s, p, &model) != chosen) return SELECT_BY_TIMED;
    return s->measured ? SELECT_BY_CALIBRATED : SELECT_BY_MODEL;
}

int select_learnt_vendor(const select_learnt *l, MPI_Count count, int vtype)
{
    return l->count == count && l->vtype == vtype;
}

int select_learnt_skips(select_learnt *l, MPI_Count count, int vtype)
{
    if (l->skip == 0 || !select_learnt_vendor(l, count, vtype)) return 0;
    l->skip--;
    return 1;
}

void select_learn_vendor(select_learnt *l, MPI_Count count, int vtype, int skip)
{
    *l = (select_learnt){.count = count, .vtype = vtype, .skip = skip};
}

void select_learn_sparse(select_learnt *l, MPI_Count count, int vtype)
{
    if (select_learnt_vendor(l, count, vtype)) *l = (select_learnt){0};
}

void select_learn(select_learnt *l, MPI_Count count, int vtype, cost_route route)
{
    if (route == COST_VENDOR) select_learn_vendor(l, count, vtype, SELECT_LEARNT_SKIP);
    else select_learn_sparse(l, count, vtype);
}
