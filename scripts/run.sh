#!/bin/bash
# run.sh -- the README's main command: install what is missing, build, then
# run the main job -- examples/topk_sgd, data-parallel SGD on a URL-like
# synthetic sparse data set -- with P = 4: once with the dense MPI_FLOAT
# allreduce (no shim), and with libsparcml preloaded in lossless sparse and
# in top-k mode; then a side-by-side summary; then the Python main job
# (python/examples/topk_sgd.py, mpi4py on Open MPI) dense and sparse; then
# the PyTorch job (python/examples/torch_ddp.py, DDP with sparcml.torch).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh"
b="$top/build"
export HYDRA_CONFIG_FILE=/dev/null
P=4
common=(--epochs=5 --seed=1)
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

run() { # name, preload, extra env..., -- args...
    local name=$1 preload=$2
    shift 2
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    echo
    echo "== $name: mpiexec -n $P ${preload:+env LD_PRELOAD=libsparcml.so }${envs[*]:+${envs[*]} }topk_sgd $*"
    timeout 600 mpiexec.mpich -n "$P" env ${preload:+LD_PRELOAD="$preload"} ${envs[@]+"${envs[@]}"} \
        "$b/examples/topk_sgd" "$@" "${common[@]}" | tee "$logs/$name"
}

shim="$b/src/.libs/libsparcml.so"
run dense "" -- --sync=dense
run sparse "$shim" -- --sync=sparse
run topk "$shim" SPARCML_STATS=1 -- --sync=topk --density=0.001

field() { grep '^summary ' "$logs/$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
echo
echo "== summary (P=$P, same data, same seed)"
printf '%-8s %12s %10s %10s %14s %18s\n' mode final_loss accuracy comm_s bytes/rank "comm speedup"
dense_comm=$(field dense comm_s)
for m in dense sparse topk; do
    printf '%-8s %12s %10s %10s %14s %18s\n' "$m" "$(field $m final_loss)" "$(field $m final_acc)" \
        "$(field $m comm_s)" "$(field $m bytes)" \
        "$(awk -v d="$dense_comm" -v c="$(field $m comm_s)" 'BEGIN { printf "%.1fx", d / c }')"
done
# The Python main job (NumPy + mpi4py, which Debian builds for Open MPI):
# the same model, dense and sparse gradients, side by side.
ompi_shim="$top/build-openmpi/src/.libs/libsparcml.so"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
for m in dense sparse; do
    echo
    if [ "$m" = sparse ]; then pre=(-x LD_PRELOAD="$ompi_shim"); else pre=(); fi
    echo "== python $m: mpirun.openmpi -n $P ${pre[*]:+-x LD_PRELOAD=libsparcml.so (Open MPI build) }python3 python/examples/topk_sgd.py --sync=$m"
    timeout 600 mpirun.openmpi -n "$P" "${pre[@]}" /usr/bin/python3 "$top/python/examples/topk_sgd.py" \
        --sync=$m --seed=1 | tee "$logs/py_$m"
done
echo
echo "== python summary (P=$P)"
for m in dense sparse; do
    grep '^summary ' "$logs/py_$m" | sed 's/^summary /  /'
done

# The PyTorch job (python/examples/torch_ddp.py): DDP on the digits data set
# with an embedding-heavy model, gloo's allreduce against sparcml.torch's
# hook without the library, in transparent mode, compressed (topk, cltk),
# and with sparse embedding gradients.
if /usr/bin/python3 -c "import torch, sklearn" 2>/dev/null; then
    tex="$top/python/examples/torch_ddp.py"
    truns=("gloo||--mode=gloo" "hook||--mode=hook" "transparent|SPARCML_TRANSPARENT=1|--mode=hook"
           "topk|SPARCML_COMPRESS=topk|--mode=hook" "cltk|SPARCML_COMPRESS=cltk|--mode=hook" "sparse|-|--mode=sparse")
    for r in "${truns[@]}"; do
        IFS='|' read -r name envs targs <<<"$r"
        pre=() disp=""
        if [ -n "$envs" ]; then pre=(-x LD_PRELOAD="$ompi_shim") disp="-x LD_PRELOAD=libsparcml.so "; fi
        if [ -n "$envs" ] && [ "$envs" != - ]; then pre+=(-x "$envs") disp+="-x $envs "; fi
        echo
        echo "== torch $name: mpirun.openmpi -n $P ${disp}python3 python/examples/torch_ddp.py $targs"
        timeout 300 mpirun.openmpi -n "$P" "${pre[@]}" /usr/bin/python3 "$tex" $targs --label="$name" | tee "$logs/torch_$name"
    done
    echo
    echo "== torch summary (P=$P, DDP on digits, embedding model, same data, same seed)"
    tfield() { grep '^summary ' "$logs/torch_$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
    printf '%-12s %8s %9s %8s %8s %9s %14s %14s\n' mode library test_acc loss comm_s step_s bytes/rank "comm speedup"
    gloo_comm=$(tfield gloo comm_s)
    for r in "${truns[@]}"; do
        m=${r%%|*}
        printf '%-12s %8s %9s %8s %8s %9s %14s %14s\n' "$m" "$(tfield "$m" library)" "$(tfield "$m" test_acc)" \
            "$(tfield "$m" loss)" "$(tfield "$m" comm_s)" "$(tfield "$m" step_s)" "$(tfield "$m" bytes)" \
            "$(awk -v d="$gloo_comm" -v c="$(tfield "$m" comm_s)" 'BEGIN { printf "%.1fx", d / c }')"
    done
fi

cat <<MSG

The library ran without relinking: topk_sgd is a plain mpicc program.  On this
shared-memory machine the vector moves at memory speed; on a network the
difference is much larger.  To run the same on the emulated Gigabit cluster
(MPI_Init measures its latency and bandwidth for the cost model):
  scripts/netsim.sh up $P 1gbit
  LD_PRELOAD=$shim scripts/netsim.sh run $P -- $b/examples/topk_sgd --sync=topk --density=0.001
  scripts/netsim.sh down
(see docs/netsim.md and bench/RESULTS.md).
MSG
