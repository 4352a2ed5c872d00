#!/bin/bash
# fuzz.sh -- fuzz the stream validator, merge-add, slice and concat
# (tests/fuzz/fuzz_stream.c) with libFuzzer, ASan and UBSan.
#
# usage: scripts/fuzz.sh [SECONDS [JOBS]]   fuzz (default 60 s, 1 process;
#                                           JOBS > 1 runs libFuzzer -fork=JOBS
#                                           and keeps going after a crash)
#        scripts/fuzz.sh --seed             rewrite tests/fuzz/corpus from
#                                           tests/fuzz/gen_corpus.c
#
# Builds build-fuzz/fuzz_stream with clang (installed from Debian if missing)
# from src/kernel/stream.c + src/base/errors.c + the target, compiled directly (MPICH's
# mpicc wrapper with MPICH_CC=clang, for <mpi.h>).  New interesting inputs go
# to build-fuzz/corpus (not committed; the committed seeds in
# tests/fuzz/corpus are only read).  Every crash libFuzzer reports is copied
# to tests/fuzz/regressions/, which `make check` replays with a plain driver
# (tests/scripts/fuzz_replay.sh): commit it with the fix.  Exits non-zero
# when a crash was found.  Not part of scripts/test.sh (which only replays).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
work=${FUZZ_WORK:-$top/build-fuzz}
mkdir -p "$work"

if [ "${1:-}" = --seed ]; then
    mpicc.mpich -std=c11 -Wall -Wextra -Werror -I"$top/include" -o "$work/gen_corpus" \
        "$top/tests/fuzz/gen_corpus.c"
    rm -f "$top"/tests/fuzz/corpus/*
    "$work/gen_corpus" "$top/tests/fuzz/corpus"
    echo "fuzz: wrote $(ls "$top/tests/fuzz/corpus" | wc -l) seeds to tests/fuzz/corpus"
    exit 0
fi
secs=${1:-60}
jobs=${2:-1}

# clang and its libFuzzer runtime (Debian 12: clang-14, libclang-rt-14-dev).
missing=()
for p in clang libclang-rt-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "fuzz: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# A stub config.h: stream.c and errors.c include it but use nothing from it.
echo '/* fuzz build: nothing configured */' >"$work/config.h"
MPICH_CC=clang mpicc.mpich -std=c11 -g -O1 -fno-omit-frame-pointer \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -Wall -Wextra -Werror -D_GNU_SOURCE -I"$work" -I"$top/include" -I"$top/src" \
    -o "$work/fuzz_stream" "$top/tests/fuzz/fuzz_stream.c" "$top/src/kernel/stream.c" "$top/src/base/errors.c" -lm

mkdir -p "$work/corpus" "$work/crashes"
rm -f "$work"/crashes/*
opts=(-max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048
      -print_final_stats=1 -artifact_prefix="$work/crashes/")
[ "$jobs" -gt 1 ] && opts+=(-fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
set +e
"$work/fuzz_stream" "${opts[@]}" "$work/corpus" "$top/tests/fuzz/corpus" \
    "$top/tests/fuzz/regressions" 2>&1 | tee "$work/fuzz.log" | grep -E '^(#[0-9]+ +(DONE|INITED|pulse)|INFO: (fuzzed|Done|-fork)|stat::|==[0-9]+==ERROR|SUMMARY|fuzz_stream: check failed)'
set -e
found=0
for c in "$work"/crashes/*; do
    [ -f "$c" ] || continue
    cp "$c" "$top/tests/fuzz/regressions/"
    echo "fuzz: crash input saved as tests/fuzz/regressions/$(basename "$c")"
    found=$((found + 1))
done
runs=$(grep -Eo 'stat::number_of_executed_units: [0-9]+|^#[0-9]+' "$work/fuzz.log" | tail -1 | grep -Eo '[0-9]+$' || true)
echo "fuzz: ${secs}s x ${jobs} job(s): ${runs:-?} executions, $found crash(es), corpus $(ls "$work/corpus" | wc -l) inputs (log: $work/fuzz.log)"
[ "$found" -eq 0 ]
