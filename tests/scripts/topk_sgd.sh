#!/bin/bash
# The main job, examples/topk_sgd, under the shim: lossless sparse sync
# equals dense, top-k and cyclic local top-k converge to the dense loss, and
# its error handling (tests/topk_sgd_test.sh has the details).
exec bash "$SRCDIR/tests/topk_sgd_test.sh" "$EXAMPLES/topk_sgd" "$SHIM"
