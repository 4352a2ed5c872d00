#!/bin/bash
# The layout of src/ is its architecture: each folder is a layer, and a
# file includes headers of its own layer or of the layers below it, never
# above (shim > core > alg > runtime > kernel > base).  Every include of a
# library header names its folder, and the modules (a .c with its .h)
# form no cycle through their includes.  `layers.sh --self-test` shows
# that both checks catch what they are meant to catch.
. "$(dirname "$0")/common.sh"
layers="base kernel runtime alg core shim"

rank() { # LAYER: its height, or -1 for no layer
    local i=0 l
    for l in $layers; do
        [ "$l" = "$1" ] && { echo $i; return; }
        i=$((i + 1))
    done
    echo -1
}

# edges TREE: "includer included" per quoted include of a library header,
# modules named by path without the extension.
edges() {
    local tree=$1 f inc
    for f in "$tree"/*/*.[ch]; do
        grep -o '^#include "[^"]*"' "$f" | sed 's/^#include "//; s/"$//' | while read -r inc; do
            case $inc in config.h | sparcml.h | mpi-ext.h) continue ;; esac
            echo "${f#"$tree"/} $inc"
        done
    done
}

# upward TREE: the includes that go up or name no layer.
upward() {
    edges "$1" | while read -r from inc; do
        local lf li
        lf=$(rank "${from%%/*}")
        li=$(rank "${inc%%/*}")
        case $inc in */*) ;; *) li=-1 ;; esac
        if [ "$li" -lt 0 ] || [ "$li" -gt "$lf" ]; then echo "$from includes $inc"; fi
    done
}

# cycles TREE: non-empty when the module graph has a cycle (tsort's report).
cycles() {
    edges "$1" | while read -r from inc; do
        local a=${from%.*} b=${inc%.*}
        [ "$a" != "$b" ] && echo "$a $b"
    done | tsort 2>&1 >/dev/null
}

if [ "${1:-}" = --self-test ]; then
    t=$(mktemp -d)
    mkdir -p "$t/base" "$t/core"
    printf '#include "core/x.h"\n' >"$t/base/y.c"
    printf '#include "base/y.h"\n' >"$t/core/x.c"
    check "an upward include is found" '[ -n "$(upward "$t")" ]'
    printf '#include "x.h"\n' >"$t/core/z.c"
    check "an include without a folder is found" 'upward "$t" | grep -q "core/z.c includes x.h"'
    check "a cycle is found" '[ -n "$(cycles "$t")" ]'
    rm -rf "$t"
    finish
    exit
fi

src=$SRCDIR/src
bad=$(upward "$src")
check "src/ includes go downward only (shim > core > alg > runtime > kernel > base)${bad:+: $bad}" '[ -z "$bad" ]'
loop=$(cycles "$src")
check "src/ modules form no include cycle${loop:+: $loop}" '[ -z "$loop" ]'
n=$(ls "$src"/*.[ch] 2>/dev/null | wc -l)
check "every source file of src/ is in a layer folder" '[ "$n" -eq 0 ]'
sf=$(TEST_TIMES= bash "$0" --self-test 2>&1)
check "the layer checks catch an upward include, a missing folder and a cycle" \
    'echo "$sf" | grep -q "^3 passed, 0 failed$"'
finish
