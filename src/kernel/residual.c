/* residual.c -- error feedback's loops over dense values (contract in
 * kernel/residual.h).  Each is an always_inline body over the value type
 * vt (and for the sparse ones the index width iw), instantiated per type
 * by one-line wrappers that pass them as constants (stream_impl.h), so
 * that each instance is the plain loop of its types. */
#include "config.h"

#include "kernel/residual.h"
#include "kernel/stream_impl.h"

/* out[i] = a[i] + b[i] in the value type. */
KERNEL_INLINE void sum_at(int vt, void *out, const void *a, const void *b, uint64_t i)
{
    if (is_f64(vt)) ((double *)out)[i] = ((const double *)a)[i] + ((const double *)b)[i];
    else ((float *)out)[i] = ((const float *)a)[i] + ((const float *)b)[i];
}

/* eps[i] = rest, what eps[i] kept beyond v[j] (zero where they have the
 * same bits); returns rest^2 - eps[i]^2, in double. */
KERNEL_INLINE double rest_at(int vt, void *eps, uint64_t i, const void *v, uint64_t j)
{
    if (is_f64(vt)) {
        double *e = (double *)eps + i, sent = ((const double *)v)[j];
        double rest = memcmp(e, &sent, sizeof sent) == 0 ? 0.0 : *e - sent, change = rest * rest - *e * *e;
        return *e = rest, change;
    }
    float *e = (float *)eps + i, sent = ((const float *)v)[j];
    float rest = memcmp(e, &sent, sizeof sent) == 0 ? 0.0f : *e - sent;
    double change = (double)rest * rest - (double)*e * *e;
    return *e = rest, change;
}

KERNEL_INLINE void add_body(int vt, void *out, const void *a, const void *b, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) sum_at(vt, out, a, b, i);
}

KERNEL_INLINE void move_body(int vt, void *out, void *eps, const void *g, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        sum_at(vt, out, eps, g, i);
        value_put(eps, value_size(vt), i, 0);
    }
}

KERNEL_INLINE double hold_back_body(int vt, unsigned iw, void *eps, const sv *sent)
{
    double change = 0;
    for (uint64_t j = 0; j < sent->nnz; j++) change += rest_at(vt, eps, index_at(sent->idx, iw, j), sent->val, j);
    return change;
}

KERNEL_INLINE void values_at_body(int vt, unsigned iw, sv *s, const void *acc)
{
    for (uint64_t j = 0; j < s->nnz; j++) value_copy(vt, s->val, j, acc, index_at(s->idx, iw, j));
}

static void add_f32(void *out, const void *a, const void *b, uint64_t n) { add_body(SPARCML_FLOAT, out, a, b, n); }
static void add_f64(void *out, const void *a, const void *b, uint64_t n) { add_body(SPARCML_DOUBLE, out, a, b, n); }
static void move_f32(void *out, void *eps, const void *g, uint64_t n) { move_body(SPARCML_FLOAT, out, eps, g, n); }
static void move_f64(void *out, void *eps, const void *g, uint64_t n) { move_body(SPARCML_DOUBLE, out, eps, g, n); }
static double hold_back_f32_i32(void *eps, const sv *s) { return hold_back_body(SPARCML_FLOAT, 4, eps, s); }
static double hold_back_f32_i64(void *eps, const sv *s) { return hold_back_body(SPARCML_FLOAT, 8, eps, s); }
static double hold_back_f64_i32(void *eps, const sv *s) { return hold_back_body(SPARCML_DOUBLE, 4, eps, s); }
static double hold_back_f64_i64(void *eps, const sv *s) { return hold_back_body(SPARCML_DOUBLE, 8, eps, s); }
static void values_at_f32_i32(sv *s, const void *acc) { values_at_body(SPARCML_FLOAT, 4, s, acc); }
static void values_at_f32_i64(sv *s, const void *acc) { values_at_body(SPARCML_FLOAT, 8, s, acc); }
static void values_at_f64_i32(sv *s, const void *acc) { values_at_body(SPARCML_DOUBLE, 4, s, acc); }
static void values_at_f64_i64(sv *s, const void *acc) { values_at_body(SPARCML_DOUBLE, 8, s, acc); }

void residual_add(void *out, const void *a, const void *b, uint64_t n, int vtype)
{
    is_f64(vtype) ? add_f64(out, a, b, n) : add_f32(out, a, b, n);
}

void residual_move(void *out, void *eps, const void *g, uint64_t n, int vtype)
{
    is_f64(vtype) ? move_f64(out, eps, g, n) : move_f32(out, eps, g, n);
}

double residual_hold_back(void *eps, const sv *sent)
{
    if (is_f64(sent->vtype)) return sent->iw == 8 ? hold_back_f64_i64(eps, sent) : hold_back_f64_i32(eps, sent);
    return sent->iw == 8 ? hold_back_f32_i64(eps, sent) : hold_back_f32_i32(eps, sent);
}

void residual_gather(sv *s, const void *acc)
{
    if (is_f64(s->vtype)) s->iw == 8 ? values_at_f64_i64(s, acc) : values_at_f64_i32(s, acc);
    else s->iw == 8 ? values_at_f32_i64(s, acc) : values_at_f32_i32(s, acc);
}
