#!/usr/bin/env bash
# netsim.sh - an emulated Gigabit-Ethernet cluster on one Linux machine.
#
# P network namespaces (one per MPI rank) are plugged into one Linux bridge
# that lives in its own namespace; every veth end is shaped with tc tbf, so
# both directions of every host link are limited to RATE.  MPI ranks run
# inside their namespace and talk MPICH/UCX over TCP only (no shared memory).
# Everything lives in namespaces this script creates: the private addresses
# used (10.201.0.0/24) exist nowhere else and there is no route out.
#
# See docs/netsim.md for the design, the environment set for the ranks and
# the measured alpha/beta of the rig.
set -euo pipefail

readonly PREFIX="${NETSIM_PREFIX:-spcml}"     # namespace name prefix
readonly BR_NS="${PREFIX}-br"                # namespace holding the bridge
readonly HOST_NS="${PREFIX}-h"               # + rank number
readonly BRIDGE=br0
readonly SUBNET=10.201.0                     # host i gets .(i+1)/24
readonly RANK_DEV=eth0                       # veth name inside host ns
readonly MAX_P=250
readonly STATE_DIR=/run/sparcml-netsim
readonly STATE_FILE="${STATE_DIR}/${PREFIX}.state"
readonly RUN_TIMEOUT="${NETSIM_TIMEOUT:-300}" # seconds, per mpiexec run
readonly TBF="${NETSIM_TBF:-burst}"           # burst | line (see shape_dev)
readonly CC="${NETSIM_CC:-cubic}"             # TCP congestion control (see set_cc)
readonly CACHE_DIR="${NETSIM_CACHE_DIR:-${XDG_CACHE_HOME:-/tmp}/sparcml-netsim}"

SELF="$(readlink -f "${BASH_SOURCE[0]}")"
readonly SELF
REPO_DIR="$(cd "$(dirname "$SELF")/.." && pwd)"
readonly REPO_DIR
readonly SUPPORT_DIR="${REPO_DIR}/bench/support"

die() { echo "netsim: error: $*" >&2; exit 1; }
info() { echo "netsim: $*" >&2; }

usage() {
    cat >&2 <<EOF
usage: $(basename "$0") COMMAND [ARGS]

  check                       check prerequisites (root, tools, kernel features)
  up P [RATE] [DELAY]         create P hosts on one bridge, links shaped to RATE
                              (tc syntax, default 1gbit; 'off' = unshaped) and
                              one-way DELAY (default 0; needs netem, ignored if
                              the kernel has none)
  down                        remove all namespaces of the rig (idempotent)
  status                      show the rig's state, links and qdiscs
  run P -- CMD [ARGS...]      mpiexec.mpich -n P, rank i inside host i, over TCP
  measure P                   print alpha_us=, beta_ns_per_byte=, bandwidth_MBps=
                              (8-byte and 16 MiB ping-pong between ranks 0 and 1)
  measure P sizes             one-way time of every power of two from 1 KiB to
                              16 MiB (CSV size_bytes,oneway_us; ranks 0 and 1)
  validate P [COUNT] [REPS]   time a dense MPI_Allreduce of COUNT floats
                              (default 16777216) and print the link model's time
  build                       compile the helper and benchmarks, print paths

environment: NETSIM_TIMEOUT (s, default 300), NETSIM_CACHE_DIR,
  NETSIM_PREFIX (default spcml), NETSIM_ENTER (ip|nsenter, default ip),
  NETSIM_TBF (burst: tbf burst max(RATE x 1 ms, 128 KiB), the default; line:
  a burst of RATE x 120 us, at least 3028 bytes (15000 at 1gbit), and
  segments below it, at most 9000 bytes, so no message passes faster than
  RATE; used to calibrate SimGrid's model of the rig),
  NETSIM_CC (TCP congestion control of every host, default cubic, Linux's
  default; 'kernel' keeps this machine's default, which may differ, e.g.
  bbr), NETSIM_FIX_* (helper knobs, see docs/netsim.md); all other variables
  (SPARCML_*, LD_PRELOAD, ...) are passed through to the ranks.
EOF
    exit 2
}

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }

need_root() {
    [[ "$(id -u)" -eq 0 ]] || die "must run as root (network namespaces, tc)"
}

# Convert a tc rate (bare number = bit/s; bit/kbit/mbit/gbit/tbit;
# bps/kbps/mbps/gbps/tbps = bytes/s) to bytes per second, printed as integer.
rate_bytes_per_s() {
    local r="${1,,}" num unit mult
    [[ "$r" =~ ^([0-9]+(\.[0-9]+)?)([a-z]*)$ ]] || return 1
    num="${BASH_REMATCH[1]}"
    unit="${BASH_REMATCH[3]}"
    case "$unit" in
        ""|bit) mult=0.125 ;;
        kbit) mult=125 ;;
        mbit) mult=125000 ;;
        gbit) mult=125000000 ;;
        tbit) mult=125000000000 ;;
        bps) mult=1 ;;
        kbps) mult=1000 ;;
        mbps) mult=1000000 ;;
        gbps) mult=1000000000 ;;
        tbps) mult=1000000000000 ;;
        *) return 1 ;;
    esac
    awk -v n="$num" -v m="$mult" 'BEGIN { printf "%.0f\n", n * m }'
}

is_zero_delay() { [[ "$1" =~ ^0+(\.0+)?(s|ms|us)?$ ]]; }

# Does this kernel have sch_netem?  Probed in a throw-away network namespace
# (unshare -n) so that nothing has to be cleaned up and no real device is
# touched.  There is no modprobe on the target machines; if the module is
# neither built in nor auto-loadable the add fails with "unknown qdisc".
have_netem() {
    unshare --net tc qdisc add dev lo root netem delay 1ms >/dev/null 2>&1
}

# List our namespaces (exact names only, never a foreign one).
our_namespaces() {
    ip netns list 2>/dev/null | awk '{print $1}' |
        grep -E "^${PREFIX}-(br|h[0-9]+)\$" | sort -V || true
}

# Remove every namespace of the rig.  Deleting a namespace destroys the veth
# ends inside it, and thus their peers.  Processes still inside (ranks left
# over by a killed mpiexec) would keep the namespace alive invisibly, so they
# are terminated, by pid, first.
teardown() {
    local ns pids
    for ns in $(our_namespaces); do
        pids="$(ip netns pids "$ns" 2>/dev/null || true)"
        if [[ -n "$pids" ]]; then
            info "terminating leftover processes in $ns: $(echo "$pids" | tr '\n' ' ')"
            # shellcheck disable=SC2086 # word splitting of the pid list is intended
            kill -TERM $pids 2>/dev/null || true
            sleep 1
            pids="$(ip netns pids "$ns" 2>/dev/null || true)"
            # shellcheck disable=SC2086
            [[ -z "$pids" ]] || kill -KILL $pids 2>/dev/null || true
        fi
        ip netns delete "$ns"
    done
    rm -f "$STATE_FILE"
}

# Shape egress of one device in one namespace.
#   tbf: burst must hold at least one GSO super-packet (64 KiB) and should
#   cover ~1 ms at the target rate so the token bucket does not depend on
#   timer granularity; latency bounds the queue (rate * 10 ms).
#   netem (only if present and DELAY != 0): root netem with tbf as child,
#   the classic tc-netem(8) arrangement.
#   NETSIM_TBF=line: a burst of 120 us at the rate instead (15000 bytes at
#   1 Gbit/s; at least two 1514-byte frames), which needs the device's
#   segmentation offload capped below the burst (gso_max_size, at most
#   9000; a GSO super-packet larger than the burst would never pass): then
#   a burst moves no message faster than the rate (128 KiB at 1 Gbit/s:
#   1.16 ms one way, 1.06 ms at the rate, where the default burst passes it
#   in 0.55 ms).
shape_dev() {
    local ns="$1" dev="$2" rate="$3" delay="$4" bytes burst gso parent
    [[ "$rate" == off ]] && [[ -z "$delay" ]] && return 0
    parent=(root)
    if [[ -n "$delay" ]]; then
        ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: \
            netem delay "$delay" limit 100000
        parent=(parent 1:1)
    fi
    [[ "$rate" == off ]] && return 0
    bytes="$(rate_bytes_per_s "$rate")"
    burst=$((bytes / 1000))
    ((burst >= 131072)) || burst=131072
    if [[ "$TBF" == line ]]; then
        burst=$((bytes * 12 / 100000))
        ((burst >= 3028)) || burst=3028
        gso=$((burst - 128))
        ((gso <= 9000)) || gso=9000
        ip -n "$ns" link set dev "$dev" gso_max_size "$gso"
    fi
    ip netns exec "$ns" tc qdisc add dev "$dev" "${parent[@]}" handle 10: \
        tbf rate "$rate" burst "$burst" latency 10ms
}

# The hosts' TCP congestion control is a property of the emulated cluster, not
# of the machine the rig runs on: a kernel whose default is bbr paces each
# connection by its own bandwidth estimate, and a message pattern that follows
# another on different connections then ran 10-35 % slower (measured, see
# docs/netsim.md); cubic, Linux's default, showed no such history.  A network
# namespace may only take a default from the allowed list, which lives in the
# initial namespace, so CC is added to it there when missing.
check_cc() {
    [[ "$CC" == kernel ]] && return 0
    [[ "$CC" =~ ^[a-z0-9_]+$ ]] || die "NETSIM_CC must be a congestion control name or 'kernel', not '$CC'"
    local allowed
    allowed="$(sysctl -n net.ipv4.tcp_allowed_congestion_control)"
    [[ " $allowed " == *" $CC "* ]] && return 0
    sysctl -qw net.ipv4.tcp_allowed_congestion_control="$allowed $CC" 2>/dev/null ||
        die "congestion control '$CC' is not available in this kernel ($(sysctl -n net.ipv4.tcp_available_congestion_control)); set NETSIM_CC to one of those or to 'kernel'"
    info "added $CC to net.ipv4.tcp_allowed_congestion_control (was: $allowed)"
}

set_cc() { # NS
    [[ "$CC" == kernel ]] && return 0
    ip netns exec "$1" sysctl -qw net.ipv4.tcp_congestion_control="$CC" ||
        die "cannot set TCP congestion control '$CC' in $1"
}

# EXIT trap of cmd_up: a failed 'up' leaves no half-built rig behind.
up_cleanup() {
    local rc=$?
    if ((rc != 0)); then
        info "up failed (rc=$rc), cleaning up"
        teardown
    fi
}

cmd_up() {
    (($# >= 1 && $# <= 3)) || usage
    local p="$1" rate="${2:-1gbit}" delay="${3:-0}" netem=0 eff_delay="" i ns cc_now
    [[ "$TBF" == burst || "$TBF" == line ]] || die "NETSIM_TBF must be burst or line, not '$TBF'"
    if ! is_uint "$p" || ((p < 1 || p > MAX_P)); then die "P must be 1..$MAX_P"; fi
    if [[ "${rate,,}" == off || "${rate,,}" == none ]]; then
        rate=off
    else
        rate_bytes_per_s "$rate" >/dev/null || die "bad RATE '$rate' (e.g. 1gbit, 100mbit, 10gbit, off)"
    fi
    [[ "$delay" =~ ^[0-9]+(\.[0-9]+)?(s|ms|us)?$ ]] || die "bad DELAY '$delay' (e.g. 0, 50us, 1ms)"
    need_root
    if ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
        die "need iproute2 (ip, tc); run '$0 check'"
    fi
    check_cc

    # Idempotent: always start from nothing.
    teardown

    # If anything below fails, leave no half-built rig behind.
    trap up_cleanup EXIT

    if have_netem; then
        netem=1
        is_zero_delay "$delay" || eff_delay="$delay"
    elif ! is_zero_delay "$delay"; then
        info "WARNING: kernel has no netem qdisc: DELAY '$delay' is IGNORED (no delay emulated)"
    fi

    mkdir -p /run/netns "$STATE_DIR"
    ip netns add "$BR_NS"
    ip -n "$BR_NS" link set lo up
    # STP off and no forward delay: ports forward as soon as they are up.
    ip -n "$BR_NS" link add "$BRIDGE" type bridge stp_state 0 forward_delay 0
    ip -n "$BR_NS" link set "$BRIDGE" up
    for ((i = 0; i < p; i++)); do
        ns="${HOST_NS}${i}"
        ip netns add "$ns"
        ip -n "$ns" link set lo up
        set_cc "$ns"
        # Create the pair in the bridge ns and move the peer straight into the
        # host ns under the name UCX_NET_DEVICES will use.
        ip -n "$BR_NS" link add "h${i}" type veth peer name "$RANK_DEV" netns "$ns"
        ip -n "$BR_NS" link set "h${i}" master "$BRIDGE" up
        ip -n "$ns" addr add "${SUBNET}.$((i + 1))/24" dev "$RANK_DEV"
        ip -n "$ns" link set "$RANK_DEV" up
        # Both ends: host egress limits host->bridge, bridge-port egress
        # limits bridge->host.  DELAY only on the host side, so a one-way
        # host-to-host trip gets DELAY once.
        shape_dev "$ns" "$RANK_DEV" "$rate" "$eff_delay"
        shape_dev "$BR_NS" "h${i}" "$rate" ""
    done

    cc_now="$(ip netns exec "${HOST_NS}0" sysctl -n net.ipv4.tcp_congestion_control)"
    cat >"$STATE_FILE" <<EOF
P=$p
RATE=$rate
DELAY=${eff_delay:-0}
DELAY_REQUESTED=$delay
NETEM=$netem
TBF=$TBF
CC=$cc_now
CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
EOF
    trap - EXIT
    echo "netsim: up: P=$p hosts ${HOST_NS}0..${HOST_NS}$((p - 1)) on bridge $BRIDGE in $BR_NS, ${SUBNET}.1-$p/24"
    if [[ "$rate" == off ]]; then
        echo "netsim: rate=off (links not shaped)"
    else
        echo "netsim: rate=$rate (tbf on both ends of every veth, NETSIM_TBF=$TBF)"
    fi
    echo "netsim: TCP congestion control $cc_now (NETSIM_CC=$CC)"
    if ((netem)); then
        echo "netsim: delay=${eff_delay:-0} one-way (netem on host egress)"
    else
        echo "netsim: delay: not emulated (no netem in this kernel)$(is_zero_delay "$delay" || echo "; requested '$delay' IGNORED")"
    fi
}

cmd_down() {
    (($# == 0)) || usage
    need_root
    teardown
    echo "netsim: down"
}

# Read the state written by cmd_up into P, RATE, DELAY, NETEM (parsed, not
# sourced: only these keys are accepted).
P="" RATE="" DELAY="" NETEM=""
load_state() {
    local key val
    [[ -r "$STATE_FILE" ]] || die "rig is not up (run '$0 up P' first)"
    while IFS='=' read -r key val; do
        case "$key" in
            P) P="$val" ;;
            RATE) RATE="$val" ;;
            DELAY) DELAY="$val" ;;
            NETEM) NETEM="$val" ;;
        esac
    done <"$STATE_FILE"
    is_uint "$P" || die "corrupt state file $STATE_FILE; run '$0 down'"
}

cmd_status() {
    local ns
    need_root
    if [[ ! -r "$STATE_FILE" ]]; then
        echo "netsim: down"
        return 0
    fi
    cat "$STATE_FILE"
    for ns in $(our_namespaces); do
        echo "== $ns"
        ip -n "$ns" -br addr
        ip netns exec "$ns" tc qdisc show | grep -E 'qdisc (tbf|netem)' || true
    done
}

# Safe cache dir: we are root and /tmp is world-writable, so refuse a
# directory (or symlink) someone else planted there.
prepare_cache() {
    mkdir -p "$(dirname "$CACHE_DIR")"
    [[ -d "$CACHE_DIR" ]] || mkdir -m 700 "$CACHE_DIR"
    [[ -d "$CACHE_DIR" && ! -L "$CACHE_DIR" && -O "$CACHE_DIR" ]] ||
        die "cache dir $CACHE_DIR is not a directory owned by $(id -un)"
}

# compile OUT SRC CMD... : run CMD -o tmp when OUT is missing or older than
# SRC; the rename makes concurrent runs safe.
compile() {
    local out="$1" src="$2" tmp
    shift 2
    [[ -r "$src" ]] || die "missing source $src"
    if [[ ! -e "$out" || "$src" -nt "$out" ]]; then
        tmp="$(mktemp "${CACHE_DIR}/.build.XXXXXX")"
        if ! "$@" "$src" -o "$tmp" -ldl >&2; then
            rm -f "$tmp"
            die "compiling $src failed"
        fi
        mv -f "$tmp" "$out"
    fi
}

HELPER_SO="${CACHE_DIR}/ucx_tcp_fix.so"
build_helper() {
    prepare_cache
    compile "$HELPER_SO" "${SUPPORT_DIR}/ucx_tcp_fix.c" \
        gcc -shared -fPIC -O2 -Wall -Wextra -Werror
}

build_prog() { # NAME -> prints path
    prepare_cache
    compile "${CACHE_DIR}/$1" "${SUPPORT_DIR}/$1.c" \
        mpicc.mpich -O2 -Wall -Wextra
    echo "${CACHE_DIR}/$1"
}

cmd_build() {
    (($# == 0)) || usage
    local pp dat ef
    build_helper
    pp="$(build_prog pingpong)"
    dat="$(build_prog dense_allreduce_time)"
    ef="$(build_prog exchange_floor)"
    echo "helper=$HELPER_SO"
    echo "pingpong=$pp"
    echo "dense_allreduce_time=$dat"
    echo "exchange_floor=$ef"
}

# run P CMD...: the heart of the rig.  mpiexec.mpich (always MPICH's hydra,
# never the 'mpiexec' alternative, which may be Open MPI) starts this script
# as the rank program ('_rank'); hydra exports PMI_RANK to each rank, which
# picks its namespace and then execs CMD there.  The PMI channel to the
# hydra proxy is an inherited socketpair (PMI_FD), so it keeps working
# across the namespace switch.
run_mpi() {
    local p="$1"
    shift
    load_state
    if ! is_uint "$p" || ((p < 1)); then die "P must be a positive integer"; fi
    ((p <= P)) || die "rig has only $P hosts (asked for $p); run '$0 up $p'"
    build_helper
    command -v mpiexec.mpich >/dev/null || die "mpiexec.mpich missing (apt-get install mpich)"
    # timeout: nothing may hang forever (-k: SIGKILL 10 s after SIGTERM).
    # HYDRA_CONFIG_FILE=/dev/null: ignore any stray system hydra config.
    local rc=0
    HYDRA_CONFIG_FILE=/dev/null NETSIM_HELPER_SO="$HELPER_SO" \
        timeout -k 10 "$RUN_TIMEOUT" \
        mpiexec.mpich -n "$p" "$SELF" _rank "$@" || rc=$?
    if ((rc == 124 || rc == 137)); then
        info "run timed out after ${RUN_TIMEOUT}s (NETSIM_TIMEOUT) and was killed"
    fi
    return "$rc"
}

cmd_run() {
    if (($# < 3)) || [[ "$2" != "--" ]]; then usage; fi
    local p="$1"
    shift 2
    run_mpi "$p" "$@"
}

# Executed by hydra once per rank (not meant to be called by hand).
cmd_rank() {
    local rank="${PMI_RANK:-}" ns
    is_uint "$rank" || die "_rank: PMI_RANK not set (only mpiexec should call this)"
    ns="${HOST_NS}${rank}"
    [[ -e "/run/netns/$ns" ]] || die "_rank: namespace $ns missing"
    # MPI over TCP only.  Across namespaces UCX would still find the peers'
    # shared memory (same kernel, same /dev/shm), so restrict the transports
    # to tcp (+ self for messages to oneself) on the veth, and stop MPICH's
    # own shared-memory path for "local" ranks.
    export UCX_TLS=tcp,self
    export UCX_NET_DEVICES="$RANK_DEV"
    export MPIR_CVAR_NOLOCAL=1
    # UCX's rendezvous protocol over tcp intermittently halves throughput;
    # send everything eagerly unless the caller chose otherwise.
    export UCX_RNDV_THRESH="${UCX_RNDV_THRESH:-inf}"
    # Finalize-hang and busy-poll fixes, after whatever the caller preloads
    # (e.g. the sparcml shim).
    if [[ -n "${NETSIM_HELPER_SO:-}" ]]; then
        export LD_PRELOAD="${LD_PRELOAD:+${LD_PRELOAD}:}${NETSIM_HELPER_SO}"
    fi
    unset NETSIM_HELPER_SO
    # An LD_PRELOAD set by the rank command itself would replace the helper
    # (8 busy-polling ranks on 2 cores run collectives 20x slower).
    if [[ "$1" == env ]] && printf '%s\n' "$@" | grep -q '^LD_PRELOAD='; then
        die "_rank: set LD_PRELOAD before netsim.sh, not in the rank command (it would drop the rig's helper)"
    fi
    case "${NETSIM_ENTER:-ip}" in
        # ip netns exec also remounts /sys for the namespace, so UCX's device
        # scan of /sys/class/net sees the namespace's eth0, not the host's.
        ip) exec ip netns exec "$ns" "$@" ;;
        nsenter) exec nsenter --net="/run/netns/$ns" -- "$@" ;;
        *) die "NETSIM_ENTER must be ip or nsenter" ;;
    esac
}

cmd_measure() {
    (($# == 1)) || { (($# == 2)) && [[ "$2" == sizes ]]; } || usage
    local p="$1" prog
    if ! is_uint "$p" || ((p < 2)); then die "measure needs P >= 2"; fi
    load_state
    prog="$(build_prog pingpong)"
    if (($# == 2)); then
        run_mpi "$p" "$prog" --sizes 1024 16777216
        return
    fi
    echo "rate=$RATE"
    echo "delay=$DELAY"
    echo "netem=$NETEM"
    run_mpi "$p" "$prog"
}

cmd_validate() {
    (($# >= 1 && $# <= 3)) || usage
    local p="$1" count="${2:-16777216}" reps="${3:-3}" prog bytes
    if ! is_uint "$p" || ! is_uint "$count" || ! is_uint "$reps"; then usage; fi
    load_state
    prog="$(build_prog dense_allreduce_time)"
    echo "rate=$RATE"
    if [[ "$RATE" != off ]]; then
        bytes="$(rate_bytes_per_s "$RATE")"
        # Bandwidth term of a ring allreduce: each rank sends and receives
        # 2(P-1)/P of the vector over its own link.
        awk -v p="$p" -v n="$count" -v b="$bytes" \
            'BEGIN { printf "model_ring_s=%.4f\n", 2 * (p - 1) / p * n * 4 / b }'
    fi
    run_mpi "$p" "$prog" "$count" "$reps"
}

# check: report every missing prerequisite with its Debian package.
cmd_check() {
    local missing=() pkgs=() t pkg ok=1
    if [[ "$(id -u)" -ne 0 ]]; then
        echo "MISSING: root privileges (namespaces and tc need root)"
        ok=0
    else
        echo "ok: running as root"
    fi
    for t in ip:iproute2 tc:iproute2 nsenter:util-linux unshare:util-linux \
        timeout:coreutils awk:mawk mpiexec.mpich:mpich \
        mpicc.mpich:"mpich libmpich-dev" gcc:gcc; do
        pkg="${t#*:}"
        t="${t%%:*}"
        if command -v "$t" >/dev/null 2>&1; then
            echo "ok: $t ($(command -v "$t"))"
        else
            echo "MISSING: $t (Debian package: $pkg)"
            missing+=("$t")
            pkgs+=("$pkg")
        fi
    done
    # (no grep -q on a pipe: with pipefail its early exit fails the pipe)
    if [[ "$(ldconfig -p 2>/dev/null)" == *libucp.so.0* ]]; then
        echo "ok: libucp.so.0 (UCX)"
    else
        echo "MISSING: libucp.so.0 (Debian package: libucx0)"
        missing+=(libucp)
        pkgs+=(libucx0)
    fi
    if [[ "$(id -u)" -eq 0 ]] && command -v unshare >/dev/null && command -v tc >/dev/null; then
        # Kernel features, probed in a throw-away namespace.
        if unshare --net sh -c 'ip link add vA type veth peer name vB &&
                ip link add bX type bridge &&
                tc qdisc add dev vA root tbf rate 1gbit burst 131072 latency 10ms' \
                >/dev/null 2>&1; then
            echo "ok: kernel supports veth, bridge, tbf"
        else
            echo "MISSING: kernel support for veth/bridge/tbf (cannot be installed by apt)"
            ok=0
        fi
        if have_netem; then
            echo "ok: netem available (DELAY will be emulated)"
        else
            echo "note: no netem qdisc in this kernel: DELAY cannot be emulated (rate shaping still works)"
        fi
    fi
    if ((${#missing[@]})); then
        echo "install with: apt-get install -y $(printf '%s\n' "${pkgs[@]}" | tr ' ' '\n' | sort -u | tr '\n' ' ')"
        ok=0
    fi
    if ((ok)); then
        echo "netsim: all prerequisites present"
    else
        echo "netsim: prerequisites missing"
        return 1
    fi
}

main() {
    (($# >= 1)) || usage
    local cmd="$1"
    shift
    case "$cmd" in
        check) cmd_check "$@" ;;
        up) cmd_up "$@" ;;
        down) cmd_down "$@" ;;
        status) cmd_status "$@" ;;
        run) cmd_run "$@" ;;
        measure) cmd_measure "$@" ;;
        validate) cmd_validate "$@" ;;
        build) cmd_build "$@" ;;
        _rank) cmd_rank "$@" ;;
        -h|--help|help) usage ;;
        *) usage ;;
    esac
}

main "$@"
