#!/bin/bash
# The stream fuzz target (tests/fuzz/fuzz_stream.c) on its seed corpus and on
# every regression input scripts/fuzz.sh has saved, through a plain driver
# (tests/fuzz/replay.c, built with the project's compiler: under ASan and
# UBSan in the sanitizer build).
. "$(dirname "$0")/common.sh"
replay="$TESTBIN/../fuzz/replay"
for dir in corpus regressions; do
    n=$(find "$SRCDIR/tests/fuzz/$dir" -maxdepth 1 -type f ! -name README | wc -l)
    timeout -k 10 "$TIMEOUT" "$replay" "$SRCDIR/tests/fuzz/$dir" >"$out" 2>"$err"
    rc=$?
    check "fuzz $dir replays without a failure ($n inputs)" \
        '[ "$rc" -eq 0 ] && grep -qx "replay: $n inputs, no failures" "$out" && ! grep -qv "^replay: " "$err"'
done
finish
