/* residual.h -- error feedback's loops over a buffer's dense values, for
 * compression (core/compress.c): acc = eps + g where it is not formed in
 * the selection's pass (kernel/topk.h), a held residual joining eps, what
 * a contribution leaves behind in eps, and acc's values at indices another
 * rank chose.  Float and double values, added and subtracted in their
 * type, so the results are those of the plain C loops, bit for bit. */
#ifndef SPARCML_RESIDUAL_H
#define SPARCML_RESIDUAL_H

#include <stdint.h>

#include "kernel/stream.h"

/* out = a + b over n values of vtype (out may be a or b). */
void residual_add(void *out, const void *a, const void *b, uint64_t n, int vtype);

/* out = eps + g and eps = 0, in one pass over n values (out may be g). */
void residual_move(void *out, void *eps, const void *g, uint64_t n, int vtype);

/* eps at the indices of the contribution `sent` (sparse, of eps's value
 * type): what eps kept beyond the value sent, eps - sent (with QSGD the
 * quantization error), and zero where the value went unchanged (the same
 * bits, even an infinity's).
 * Returns the change of ||eps||^2, in double. */
double residual_hold_back(void *eps, const sv *sent);

/* s's values (sparse, its indices set) from acc, dense, at its indices. */
void residual_gather(sv *s, const void *acc);

#endif
