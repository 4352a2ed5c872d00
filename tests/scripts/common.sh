# common.sh -- sourced by the test scripts (run by `make check`, which
# exports MPIEXEC, SHIM, YIELD, TESTBIN, SRCDIR).
set -u
: "${MPIEXEC:=mpiexec.mpich}"
: "${TIMEOUT:=300}"
# Open MPI gives the strings of added error codes back (sparcml(7), ERRORS);
# MPICH 4.0.2 does not, and the library returns the bare class there: an
# argument of run_mpi for tests/mpi/sparse_errors.
error_strings=EXPECT_ERROR_STRINGS=
case $MPIEXEC in *openmpi*) error_strings=EXPECT_ERROR_STRINGS=1 ;; esac
# Waiting ranks sleep 50 us at a time once yielding has found nothing for a
# while (tests/support/yield_preload.c): less CPU spun beside a second test.
# Exported for the scripts' own launcher lines (hydra forwards the
# environment) and passed by run_mpi (mpirun.openmpi forwards none).
: "${YIELD_SLEEP_US:=50}"
export YIELD_SLEEP_US
HYDRA_CONFIG_FILE=/dev/null
export HYDRA_CONFIG_FILE
npass=0
nfail=0

# run_mpi P PRELOAD [VAR=value ...] -- program args...
# Runs under `timeout`: a hang is a failure, not a stuck CI.  Output goes to
# $out and $err.
out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
run_mpi() {
    local p=$1 preload=$2
    shift 2
    local envs=()
    while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    timeout -k 10 "$TIMEOUT" "$MPIEXEC" -n "$p" env ${preload:+LD_PRELOAD="$preload"} \
        YIELD_SLEEP_US="$YIELD_SLEEP_US" ${envs[@]+"${envs[@]}"} "$@" >"$out" 2>"$err"
}

# occurrences PATTERN FILE: how often PATTERN occurs in FILE.  Messages the
# launcher forwarded from several ranks are counted this way, not as lines:
# it forwards each rank's output in chunks cut at any byte, so two ranks'
# lines may end up joined in one.
occurrences() { grep -o -- "$1" "$2" | wc -l; }

ok() { npass=$((npass + 1)); echo "ok - $*"; }
not_ok() {
    nfail=$((nfail + 1))
    echo "not ok - $*"
    sed 's/^/#   stdout: /' "$out" | head -20
    sed 's/^/#   stderr: /' "$err" | head -20
}

# check DESCRIPTION 'SHELL CONDITION': records ok / not ok.
check() {
    if eval "$2"; then ok "$1"; else not_ok "$1"; fi
}

# finish: the summary line, after the script's wall time (appended to
# $TEST_TIMES too when set: scripts/test.sh lists each pass's slowest).
finish() {
    echo "# $(basename "$0"): ${SECONDS} s"
    [ -n "${TEST_TIMES:-}" ] && echo "${SECONDS} $(basename "$0")" >>"$TEST_TIMES"
    echo "$npass passed, $nfail failed"
    [ "$nfail" -eq 0 ]
}

with_shim="$YIELD:$SHIM"
# The cost model's defaults (sparcml(7)) set whole: neither measured at
# MPI_Init nor corrected by timed calls, for checks derived from them.
default_model="SPARCML_ALPHA_US=20 SPARCML_BETA_NS_PER_BYTE=8.3 SPARCML_GAMMA_NS_PER_ENTRY=2.5"

# algorithms: the library's algorithms (SPARCML_ALGORITHM's values but
# auto), as the library itself lists them when the variable is invalid:
# scripts that run every algorithm take a new one without a change.  The
# preload as run_mpi's (YIELD first: the sanitizer build's runtime).
algorithms() {
    timeout -k 10 60 "$MPIEXEC" -n 1 env LD_PRELOAD="$YIELD:$SHIM" SPARCML_ALGORITHM=? "$TESTBIN/no_shim" shim 2>&1 |
        sed -n "s/.*invalid SPARCML_ALGORITHM='?' (expected auto, \(.*\))\$/\1/p" | sed 's/,//g; s/ or / /'
}

# algorithms_where KEY=VALUE...: the algorithms of the library's table
# (tests/support/algorithm_table.c prints a row's properties: sparse, ride,
# pipelines, dense_recv) that have every property given, KEY!=VALUE for
# those that do not, on one line in the table's order, as algorithms: the
# scripts pick by properties, not names, so that a new row is tested
# without a change to them.  A key the table does not have is an error
# (nothing printed, status 1).
algorithms_where() {
    "${ALGTABLE:?}" | awk -v want="$*" '
        BEGIN { n = split(want, w, " ") }
        NR == 1 { for (i = 1; i <= n; i++) { key = w[i]; sub(/!?=.*/, "", key)
                      if (index(" " $0, " " key "=") == 0) { print "algorithms_where: no property " key >"/dev/stderr"; bad = 1; exit 1 } } }
        { keep = 1
          for (i = 1; i <= n; i++) { kv = w[i]; neg = sub(/!=/, "=", kv)
              if ((index(" " $0 " ", " " kv " ") > 0) == neg) keep = 0 }
          if (keep) names = names (names == "" ? "" : " ") $1 }
        END { if (!bad) print names }'
}
