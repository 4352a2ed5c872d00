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

# edges TREE: "includer included" per include of a library header, in
# any form (quotes or angle brackets, #include_next, spaces around the
# '#', a directive continued with a backslash; -I puts src/ on the path,
# so <core/op.h> reaches the library's header too), from every source
# file in the layer folders and their sub-folders, modules named by path
# without the extension.  An angle-bracket include is the library's when
# it names a layer folder, a file of the tree or a parent folder; one
# whose header is a macro is named "?macro NAME", which no layer holds.
edges() {
    local tree=$1 f inc rest
    find "$tree" -mindepth 2 -type f \( -name '*.[ch]' -o -name '*.inc' -o -name '*.def' \) | sort | while read -r f; do
        awk '{ while (/\\$/) { sub(/\\$/, ""); if ((getline l) <= 0) break; $0 = $0 l } print }' "$f" |
            sed -n 's/^[[:space:]]*#[[:space:]]*include\(_next\)\{0,1\}[[:space:]]*\(.*\)$/\2/p' | while read -r rest; do
            inc=$(printf '%s\n' "$rest" | sed -n 's/^\(["<][^">]*[">]\).*/\1/p')
            [ -n "$inc" ] || { echo "${f#"$tree"/} ?macro:${rest%% *}"; continue; }
            local name=${inc:1:${#inc}-2}
            case $name in config.h | sparcml.h | mpi-ext.h) continue ;; esac
            if [ "${inc:0:1}" = "<" ] && [ "$(rank "${name%%/*}")" -lt 0 ] && [ ! -e "$tree/$name" ] \
               && [[ $name != *..* ]]; then
                continue # a system header
            fi
            echo "${f#"$tree"/} $name"
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
    printf '#include <stdio.h>\n# include <core/x.h>\n' >"$t/base/w.c"
    check "an upward include in angle brackets, spaced, is found; a system header is not" \
        'upward "$t" | grep -q "base/w.c includes core/x.h" && ! upward "$t" | grep -q stdio'
    printf '#include_next "core/x.h"\n' >"$t/base/n.c"
    check "an upward #include_next is found" 'upward "$t" | grep -q "base/n.c includes core/x.h"'
    printf '#define H "core/x.h"\n#include H\n' >"$t/base/m.c"
    check "an include of a macro is found" 'upward "$t" | grep -q "base/m.c includes ?macro:H"'
    printf '#include \\\n    "core/x.h"\n' >"$t/base/c.c"
    check "an include continued on the next line is found" 'upward "$t" | grep -q "base/c.c includes core/x.h"'
    mkdir -p "$t/base/sub"
    printf '#include <../core/x.h>\n' >"$t/base/sub/s.inc"
    check "an include from a sub-folder, through a parent folder, is found" \
        'upward "$t" | grep -q "base/sub/s.inc includes ../core/x.h"'
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
check "the layer checks catch an upward include (any form), a missing folder and a cycle" \
    'echo "$sf" | grep -q "^8 passed, 0 failed$"'
finish
