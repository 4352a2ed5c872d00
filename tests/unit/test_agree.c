/* The agreement record (agree.c) and the piggyback memo (select.c). */
#include <string.h>

#include "core/agree.h"
#include "core/memo.h"
#include "base/errors.h"
#include "core/select.h"
#include "sparcml.h"
#include "suites.h"

static sparcml_local valid(uint64_t nnz)
{
    sparcml_local l = {.reason = SPARCML_R_OK, .dim = 1000, .vtype = SPARCML_FLOAT, .count = 300, .nnz = nnz,
                       .settings_hash = 42, .piggyback = 1};
    return l;
}

/* Combine records the way a P-rank exchange may: left to right. */
static void combine_linear(const sparcml_local *l, int P, agree_record *out)
{
    agree_record r;
    agree_record_init(out, 0, &l[0]);
    for (int i = 1; i < P; i++) {
        agree_record_init(&r, i, &l[i]);
        agree_record_merge(out, &r);
    }
}

/* ... and as recursive doubling does: pairs, then pairs of pairs. */
static void combine_tree(const sparcml_local *l, int P, agree_record *out)
{
    agree_record r[8];
    for (int i = 0; i < P; i++) agree_record_init(&r[i], i, &l[i]);
    for (int step = 1; step < P; step *= 2)
        for (int i = 0; i + step < P; i += 2 * step) agree_record_merge(&r[i], &r[i + step]);
    *out = r[0];
}

START_TEST(record_combines_max_min_sum)
{
    sparcml_local l[8];
    agree_record a, b;
    sparcml_agreed v;
    uint64_t kmax = 0, ksum = 0;
    for (int i = 0; i < 8; i++) {
        l[i] = valid((uint64_t)(i * 37 % 11 + 3));
        l[i].union_part = (uint64_t)i;
        if (l[i].nnz > kmax) kmax = l[i].nnz;
        ksum += l[i].nnz;
    }
    combine_linear(l, 8, &a);
    combine_tree(l, 8, &b);
    ck_assert_int_eq(memcmp(&a, &b, sizeof a), 0); /* order does not matter */
    agree_record_clear(&b);
    agree_record_merge(&b, &a);
    ck_assert_int_eq(memcmp(&a, &b, sizeof a), 0); /* merging into a cleared record copies */
    agree_record_read(&a, &v);
    ck_assert_int_eq(v.reason, SPARCML_R_OK);
    ck_assert_int_eq(v.reason_rank, -1);
    ck_assert_uint_eq(v.dim, 1000);
    ck_assert_int_eq(v.vtype, SPARCML_FLOAT);
    ck_assert_int_eq((int)v.count, 300);
    ck_assert_uint_eq(v.k_max, kmax);
    ck_assert_uint_eq(v.k_sum, ksum);
    ck_assert_uint_eq(v.union_sum, 28);
    for (int route = 0; route < COST_ROUTES; route++) ck_assert_uint_eq(v.timed_ppm[route], 0); /* nobody timed */
}
END_TEST

/* Each route's time (each algorithm's, the vendor's): the fastest any rank
 * timed, independently per route; a rank without one (0) does not count,
 * and a time beyond 2^63 stays positive. */
START_TEST(record_keeps_the_fastest_times)
{
    static const uint64_t ppm[][4] = {
        {0, 7000, 0, 5000}, {9, 0, 0, 0}, {UINT64_MAX, 3, 0, 0}, {0, 0, 0, 0},
    };
    static const uint64_t want[] = {5000, 9, 3, 0};
    for (int alg = 1; alg < COST_ROUTES; alg++)
        for (size_t c = 0; c < sizeof want / sizeof want[0]; c++) {
            sparcml_local l[4];
            agree_record a;
            sparcml_agreed v;
            for (int i = 0; i < 4; i++) {
                l[i] = valid(10);
                l[i].timed_ppm[alg] = ppm[c][i];
                l[i].timed_ppm[alg == 1 ? 2 : 1] = 1000 + (uint64_t)i; /* another algorithm's: 1000 */
            }
            combine_tree(l, 4, &a);
            agree_record_read(&a, &v);
            ck_assert_int_eq(v.reason, SPARCML_R_OK);
            ck_assert_uint_eq(v.timed_ppm[alg], want[c]);
            ck_assert_uint_eq(v.timed_ppm[alg == 1 ? 2 : 1], 1000);
            ck_assert_uint_eq(v.timed_ppm[0], 0);
        }
}
END_TEST

START_TEST(record_reports_the_failing_rank)
{
    sparcml_local l[6];
    agree_record a;
    sparcml_agreed v;
    for (int i = 0; i < 6; i++) l[i] = valid(5);
    l[4].reason = SPARCML_R_UNSORTED;
    l[2].reason = SPARCML_R_UNSORTED;
    combine_tree(l, 6, &a);
    agree_record_read(&a, &v);
    ck_assert_int_eq(v.reason, SPARCML_R_UNSORTED);
    ck_assert_int_eq(v.reason_rank, 2); /* the lowest of the ranks with that reason */
    l[5].reason = SPARCML_R_NULL_BUFFER;
    combine_linear(l, 6, &a);
    agree_record_read(&a, &v);
    ck_assert_int_eq(v.reason, SPARCML_R_UNSORTED); /* the larger code wins */
    ck_assert_int_eq(v.reason_rank, 2);
}
END_TEST

START_TEST(record_finds_mismatches)
{
    static const struct {
        int field, reason;
    } cases[] = {{0, SPARCML_R_DIM_MISMATCH}, {1, SPARCML_R_VALUE_TYPE_MISMATCH},
                 {2, SPARCML_R_COUNT_MISMATCH}, {3, SPARCML_R_CONFIG_MISMATCH},
                 {4, SPARCML_R_HISTORY_MISMATCH}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        sparcml_local l[3] = {valid(1), valid(2), valid(3)};
        agree_record a;
        sparcml_agreed v;
        switch (cases[c].field) {
        case 0: l[1].dim++; break;
        case 1: l[1].vtype = SPARCML_DOUBLE; break;
        case 2: l[1].count--; break;
        case 3: l[1].settings_hash++; break;
        case 4: l[1].piggyback = 0; break;
        }
        combine_linear(l, 3, &a);
        agree_record_read(&a, &v);
        ck_assert_int_eq(v.reason, cases[c].reason);
        ck_assert_int_eq(v.reason_rank, -1);
    }
    {   /* a count mismatch makes ranks predict differently: count is named */
        sparcml_local l[2] = {valid(1), valid(1)};
        agree_record a;
        sparcml_agreed v;
        l[1].count++;
        l[1].piggyback = 0;
        combine_linear(l, 2, &a);
        agree_record_read(&a, &v);
        ck_assert_int_eq(v.reason, SPARCML_R_COUNT_MISMATCH);
    }
}
END_TEST

START_TEST(memo_remembers_recursive_doubling_only)
{
    sparcml_memo m = {0};
    ck_assert(!memo_hit(&m, 100, SPARCML_FLOAT, NULL, NULL));
    memo_note(&m, 100, &(sparcml_problem){.vtype = SPARCML_FLOAT, .k_max = 100}, SPARCML_ALG_RECURSIVE_DOUBLE, 1, 1);
    ck_assert(memo_hit(&m, 100, SPARCML_FLOAT, NULL, NULL));
    ck_assert(!memo_hit(&m, 100, SPARCML_DOUBLE, NULL, NULL));
    ck_assert(!memo_hit(&m, 101, SPARCML_FLOAT, NULL, NULL));
    memo_note(&m, 100, &(sparcml_problem){.vtype = SPARCML_FLOAT, .k_max = 100}, SPARCML_ALG_RECURSIVE_DOUBLE, 1, 1); /* no duplicate */
    ck_assert_int_eq(m.used, 1);
    {   /* the latest call's dimension and k_max */
        uint64_t dim = 0, k_max = 0;
        memo_note(&m, 100, &(sparcml_problem){.vtype = SPARCML_FLOAT, .dim = 5000, .k_max = 9},
                         SPARCML_ALG_RECURSIVE_DOUBLE, 1, 1);
        ck_assert(memo_hit(&m, 100, SPARCML_FLOAT, &dim, &k_max));
        ck_assert_uint_eq(dim, 5000);
        ck_assert_uint_eq(k_max, 9);
        ck_assert_int_eq(m.used, 1);
    }
    for (int a = SPARCML_ALG_SSAR_SPLIT_ALLGATHER; a < SPARCML_ALG_COUNT_; a++) {
        memo_note(&m, 100, &(sparcml_problem){.vtype = SPARCML_FLOAT, .k_max = 100}, SPARCML_ALG_RECURSIVE_DOUBLE, 1, 1);
        memo_note(&m, 100, &(sparcml_problem){.vtype = SPARCML_FLOAT, .k_max = 100}, (sparcml_algorithm)a, 1, 1);
        ck_assert(!memo_hit(&m, 100, SPARCML_FLOAT, NULL, NULL));
    }
}
END_TEST

START_TEST(memo_keeps_the_latest_pairs)
{
    sparcml_memo m = {0};
    uint64_t n = MEMO_SLOTS + 3;
    for (uint64_t c = 1; c <= n; c++) memo_note(&m, c, &(sparcml_problem){.vtype = SPARCML_INT32, .k_max = c}, SPARCML_ALG_RECURSIVE_DOUBLE, 1, 1);
    for (uint64_t c = 1; c <= n; c++)
        ck_assert_int_eq(memo_hit(&m, c, SPARCML_INT32, NULL, NULL), c > n - MEMO_SLOTS);
    memo_note(&m, n, &(sparcml_problem){.vtype = SPARCML_INT32, .k_max = n}, SPARCML_ALG_DENSE, 1, 1); /* drop one in the middle */
    ck_assert(!memo_hit(&m, n, SPARCML_INT32, NULL, NULL));
    for (uint64_t c = n - MEMO_SLOTS + 1; c < n; c++) ck_assert(memo_hit(&m, c, SPARCML_INT32, NULL, NULL));
    memo_note(&m, 1000, &(sparcml_problem){.vtype = SPARCML_INT32, .k_max = 1000}, SPARCML_ALG_RECURSIVE_DOUBLE, 1, 1); /* fills the hole */
    for (uint64_t c = n - MEMO_SLOTS + 1; c < n; c++) ck_assert(memo_hit(&m, c, SPARCML_INT32, NULL, NULL));
    ck_assert(memo_hit(&m, 1000, SPARCML_INT32, NULL, NULL));
    /* each pair keeps its own latest k_max (the slot moved into the hole too) */
    for (uint64_t c = n - MEMO_SLOTS + 1; c < n; c++) {
        uint64_t k_max = 0;
        ck_assert(memo_hit(&m, c, SPARCML_INT32, NULL, &k_max));
        ck_assert_uint_eq(k_max, c);
    }
    memo_forget(&m);
    ck_assert(!memo_hit(&m, 1000, SPARCML_INT32, NULL, NULL));
}
END_TEST

/* The latest call's exchange, whatever its count: a split choice sets it
 * with that call's count, value type, dimension and k_max; any other
 * choice but pipelined recursive doubling, and a failure, clear it; the
 * recursive-doubling slots go on as before. */
START_TEST(memo_split_is_the_latest_call)
{
    sparcml_memo m = {0};
    const sparcml_problem f = {.vtype = SPARCML_FLOAT, .dim = 5000, .k_max = 9};
    ck_assert_int_eq(m.latest.alg, SPARCML_ALG_AUTO);
    memo_note(&m, 100, &f, SPARCML_ALG_RECURSIVE_DOUBLE, 1, 1);
    ck_assert_int_eq(m.latest.alg, SPARCML_ALG_AUTO);
    memo_note(&m, 200, &(sparcml_problem){.vtype = SPARCML_DOUBLE, .dim = 7000, .k_max = 30},
                     SPARCML_ALG_DSAR_SPLIT_ALLGATHER, 1, 1);
    ck_assert_int_eq(m.latest.alg, SPARCML_ALG_DSAR_SPLIT_ALLGATHER);
    ck_assert_uint_eq(m.latest.count, 200);
    ck_assert_int_eq(m.latest.vtype, SPARCML_DOUBLE);
    ck_assert_uint_eq(m.latest.dim, 7000);
    ck_assert_uint_eq(m.latest.k_max, 30);
    ck_assert(memo_hit(&m, 100, SPARCML_FLOAT, NULL, NULL)); /* another pair's slot stays */
    memo_note(&m, 100, &f, SPARCML_ALG_SSAR_SPLIT_ALLGATHER, 1, 1);
    ck_assert_int_eq(m.latest.alg, SPARCML_ALG_SSAR_SPLIT_ALLGATHER);
    ck_assert_uint_eq(m.latest.count, 100);
    ck_assert(!memo_hit(&m, 100, SPARCML_FLOAT, NULL, NULL)); /* its own slot is dropped */
    for (int a = SPARCML_ALG_AUTO; a < SPARCML_ALG_COUNT_; a++) {
        if (a == SPARCML_ALG_SSAR_SPLIT_ALLGATHER || a == SPARCML_ALG_DSAR_SPLIT_ALLGATHER) continue;
        memo_note(&m, 100, &f, SPARCML_ALG_SSAR_SPLIT_ALLGATHER, 1, 1);
        memo_note(&m, 300, &f, (sparcml_algorithm)a, 1, 1);
        ck_assert_int_eq(m.latest.alg, SPARCML_ALG_AUTO);
    }
    memo_note(&m, 100, &f, SPARCML_ALG_SSAR_SPLIT_ALLGATHER, 1, 1);
    memo_forget(&m);
    ck_assert_int_eq(m.latest.alg, SPARCML_ALG_AUTO);
}
END_TEST

/* Recursive doubling pipelined is kept as the latest call, with its chunks
 * per round, and not in the slots (its own pair's slot is dropped); in
 * whole messages it sets the slot and clears the latest call. */
START_TEST(memo_pipelined_doubling_is_the_latest_call)
{
    sparcml_memo m = {0};
    const sparcml_problem f = {.vtype = SPARCML_FLOAT, .dim = 5000, .k_max = 9};
    memo_note(&m, 100, &f, SPARCML_ALG_RECURSIVE_DOUBLE, 1, 1);
    memo_note(&m, 300, &f, SPARCML_ALG_RECURSIVE_DOUBLE, 1, 1);
    memo_note(&m, 100, &f, SPARCML_ALG_RECURSIVE_DOUBLE, 4, 1);
    ck_assert_int_eq(m.latest.alg, SPARCML_ALG_RECURSIVE_DOUBLE);
    ck_assert_int_eq(m.latest.chunks, 4);
    ck_assert_uint_eq(m.latest.count, 100);
    ck_assert_uint_eq(m.latest.dim, 5000);
    ck_assert_uint_eq(m.latest.k_max, 9);
    ck_assert(!memo_hit(&m, 100, SPARCML_FLOAT, NULL, NULL));
    ck_assert(memo_hit(&m, 300, SPARCML_FLOAT, NULL, NULL));
    memo_note(&m, 100, &f, SPARCML_ALG_RECURSIVE_DOUBLE, 1, 1);
    ck_assert_int_eq(m.latest.alg, SPARCML_ALG_AUTO);
    ck_assert_int_eq(m.latest.chunks, 1);
    ck_assert(memo_hit(&m, 100, SPARCML_FLOAT, NULL, NULL));
    memo_note(&m, 100, &f, SPARCML_ALG_DENSE, 4, 1); /* chunks count for recursive doubling only */
    ck_assert_int_eq(m.latest.alg, SPARCML_ALG_AUTO);
    ck_assert_int_eq(m.latest.chunks, 1);
}
END_TEST

/* What a call keeps: the vendor's route nothing (its pair's slot and the
 * latest call are cleared); a kind whose data does not ride only the whole
 * exchange in whole messages, never a first phase or chunks. */
START_TEST(memo_keeps_by_route_and_kind)
{
    sparcml_memo m = {0};
    const sparcml_problem f = {.vtype = SPARCML_FLOAT, .dim = 5000, .k_max = 9};
    sparcml_algorithm rd = SPARCML_ALG_RECURSIVE_DOUBLE, split = SPARCML_ALG_SSAR_SPLIT_ALLGATHER;
    ck_assert_int_eq(memo_keeps(COST_VENDOR, 1, 1), SPARCML_ALG_AUTO);
    ck_assert_int_eq(memo_keeps(rd, 1, 0), rd);
    ck_assert_int_eq(memo_keeps(rd, 4, 0), SPARCML_ALG_AUTO);
    ck_assert_int_eq(memo_keeps(rd, 4, 1), rd);
    ck_assert_int_eq(memo_keeps(split, 1, 0), SPARCML_ALG_AUTO);
    ck_assert_int_eq(memo_keeps(split, 1, 1), split);
    memo_note(&m, 100, &f, rd, 1, 0);
    ck_assert(memo_hit(&m, 100, SPARCML_FLOAT, NULL, NULL));
    memo_note(&m, 200, &f, split, 1, 1);
    memo_note(&m, 100, &f, rd, 4, 0); /* pipelined, data not riding: nothing kept */
    ck_assert(!memo_hit(&m, 100, SPARCML_FLOAT, NULL, NULL));
    ck_assert_int_eq(m.latest.alg, SPARCML_ALG_AUTO);
    memo_note(&m, 100, &f, rd, 1, 1);
    memo_note(&m, 200, &f, split, 1, 1);
    memo_note(&m, 100, &f, COST_VENDOR, 1, 1);
    ck_assert(!memo_hit(&m, 100, SPARCML_FLOAT, NULL, NULL));
    ck_assert_int_eq(m.latest.alg, SPARCML_ALG_AUTO);
}
END_TEST

Suite *agree_suite(void)
{
    Suite *s = suite_create("agree");
    TCase *t = tcase_create("record");
    tcase_add_test(t, record_combines_max_min_sum);
    tcase_add_test(t, record_keeps_the_fastest_times);
    tcase_add_test(t, record_reports_the_failing_rank);
    tcase_add_test(t, record_finds_mismatches);
    tcase_add_test(t, memo_remembers_recursive_doubling_only);
    tcase_add_test(t, memo_keeps_the_latest_pairs);
    tcase_add_test(t, memo_split_is_the_latest_call);
    tcase_add_test(t, memo_pipelined_doubling_is_the_latest_call);
    tcase_add_test(t, memo_keeps_by_route_and_kind);
    suite_add_tcase(s, t);
    return s;
}
