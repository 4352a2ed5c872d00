#!/bin/bash
# torch_ddp.sh -- DDP with sparcml.torch against gloo and PyTorch's own
# compression hooks (python/examples/torch_ddp.py), the measurements of
# bench/RESULTS.md, "PyTorch DDP".  Needs Open MPI's build
# (build-openmpi/, scripts/setup.sh), python3-torch and python3-sklearn.
#
#   bench/torch_ddp.sh shm [REPS]   P = 4 on this machine, the dense MLP
#                                   (1.1M parameters, gradient density 1):
#                                   gloo, the hook without the library
#                                   (non-blocking and blocking), the hook in
#                                   transparent mode; REPS runs each (3)
#   bench/torch_ddp.sh rig [STEPS]  P = 8 on the emulated Gigabit cluster
#                                   (scripts/netsim.sh up 8 1gbit first; root):
#                                   the embedding model with a 1M x 16 table
#                                   (16.8M parameters): gloo, fp16_compress_hook,
#                                   powerSGD_hook, the hook in transparent mode
#                                   (non-blocking and blocking),
#                                   with topk (density 1e-2) and cltk (1e-3),
#                                   sparse gradients; STEPS steps (60)
# Prints the summary lines and writes them to bench/results/torch_ddp_<part>.txt.
#
# The rig under Open MPI: mpirun runs in host 0's namespace with a hostfile of
# the hosts' addresses and an rsh agent that starts each host's orted in its
# namespace (ip netns exec), so every rank runs on its own shaped link and
# Open MPI's TCP transport (pml ob1, btl tcp) and gloo (GLOO_SOCKET_IFNAME=eth0)
# both cross it; a waiting rank yields its core (mpi_yield_when_idle: 8
# ranks share 2 cores, and Open MPI does not know it).  (scripts/netsim.sh run starts MPICH ranks only; Debian's
# mpi4py is built for Open MPI.)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
ex="$top/python/examples/torch_ddp.py"
shim="$top/build-openmpi/src/.libs/libsparcml.so"
part=${1:-shm}
out="$top/bench/results/torch_ddp_$part.txt"
mkdir -p "$top/bench/results"
: >"$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

case $part in
shm)
    reps=${2:-3}
    for rep in $(seq "$reps"); do
        for run in "gloo||--mode=gloo" "hook||--mode=hook" "hook-blocking||--mode=hook --blocking" \
                   "transparent|SPARCML_TRANSPARENT=1|--mode=hook" \
                   "transparent-blocking|SPARCML_TRANSPARENT=1|--mode=hook --blocking"; do
            IFS='|' read -r name env args <<<"$run"
            pre=()
            [ -n "$env" ] && pre=(-x LD_PRELOAD="$shim" -x "$env")
            # shellcheck disable=SC2086
            mpirun.openmpi --oversubscribe -n 4 "${pre[@]}" /usr/bin/python3 "$ex" --model=mlp --steps=100 \
                $args --label="$name" | grep '^summary' | sed "s/\$/ rep=$rep/" | tee -a "$out"
        done
    done
    ;;
rig)
    steps=${2:-60}
    ip netns list | grep -q spcml-h7 || { echo "torch_ddp.sh rig: bring the rig up first: scripts/netsim.sh up 8 1gbit" >&2; exit 1; }
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    cat >"$tmp/agent" <<'AGENT'
#!/bin/bash
# mpirun's rsh agent on the rig: host 10.201.0.N is namespace spcml-h(N-1);
# each host's own TMPDIR, as every namespace has the same host name (the
# session directories would collide).
host=$1; shift
n=${host##*.}
mkdir -p "/tmp/netsim-ompi-h$n"
exec ip netns exec "spcml-h$((n - 1))" env TMPDIR="/tmp/netsim-ompi-h$n" /bin/sh -c "$*"
AGENT
    chmod +x "$tmp/agent"
    for i in $(seq 1 8); do echo "10.201.0.$i slots=1"; done >"$tmp/hosts"
    common=(--model=embedding --rows=1048576 --dim=16 --steps="$steps" --master-addr=10.201.0.1)
    for run in "gloo||--mode=gloo" "fp16||--mode=fp16" "powersgd||--mode=powersgd --rank-powersgd=1" \
               "transparent|SPARCML_TRANSPARENT=1|--mode=hook" \
               "transparent-blocking|SPARCML_TRANSPARENT=1|--mode=hook --blocking" \
               "topk|SPARCML_COMPRESS=topk|--mode=hook" \
               "cltk-1e-3|SPARCML_COMPRESS=cltk SPARCML_COMPRESS_DENSITY=0.001|--mode=hook" \
               "sparse|-|--mode=sparse"; do
        IFS='|' read -r name env args <<<"$run"
        pre=()
        if [ -n "$env" ]; then
            pre=(-x LD_PRELOAD="$shim")
            if [ "$env" != - ]; then for e in $env; do pre+=(-x "$e"); done; fi
        fi
        # shellcheck disable=SC2086
        timeout 1800 ip netns exec spcml-h0 mpirun.openmpi -n 8 --hostfile "$tmp/hosts" \
            --mca plm_rsh_agent "$tmp/agent" --mca routed direct --mca oob_tcp_if_include eth0 --mca pml ob1 --mca mpi_yield_when_idle 1 \
            --mca btl tcp,self --mca btl_tcp_if_include eth0 -x GLOO_SOCKET_IFNAME=eth0 "${pre[@]}" \
            /usr/bin/python3 "$ex" "${common[@]}" $args --label="$name" | grep '^summary' | tee -a "$out"
    done
    ;;
*)
    echo "usage: $0 shm [REPS] | rig [STEPS]" >&2
    exit 2
    ;;
esac
