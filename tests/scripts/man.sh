#!/bin/bash
# The man pages render without warnings (groff, man, and mandoc's lint at
# style level where mandoc is installed), every SPARCML_* variable the
# config module knows is documented in sparcml(7), every public helper of
# sparcml.h in sparcml(3), the SYNOPSIS preloads the library by a path, and
# sparcml(7) and docs/design.md stay references (at most 600 and 450 lines).
. "$(dirname "$0")/common.sh"
for page in "$SRCDIR"/man/*.[37]; do
    w=$(groff -ww -t -man -z "$page" 2>&1)
    check "$(basename "$page") renders without groff warnings" '[ -z "$w" ]'
    w=$(man -l --warnings=w "$page" 2>&1 >/dev/null)
    check "$(basename "$page") renders without man warnings" '[ -z "$w" ]'
    if command -v mandoc >/dev/null 2>&1; then
        w=$(mandoc -Tlint -W style "$page" 2>&1)
        check "$(basename "$page") is clean under mandoc -Tlint -W style" '[ -z "$w" ]'
    fi
done
for var in $(grep -o '"SPARCML_[A-Z][A-Z_]*"' "$SRCDIR/src/core/settings.c" | tr -d '"' | sort -u); do
    check "$var is documented in sparcml.7" 'grep -q "^\.B $var\$" "$SRCDIR/man/sparcml.7"'
done
# Public: a static inline function or typedef of the header whose name does
# not end in "_" (internal helpers do).
for fn in $(sed -n 's/^\(static inline\|typedef\) .*\b\(sparcml_[a-z0-9_]*[a-z0-9]\)\( *(\|;\).*/\2/p' \
    "$SRCDIR/include/sparcml.h" | sort -u); do
    check "$fn is in sparcml(3)'s SYNOPSIS" \
        'sed -n "/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/p" "$SRCDIR/man/sparcml.3" | grep -q "$fn("'
done
check "sparcml(7)'s SYNOPSIS preloads the library by a path, never a bare name" \
    'sed -n "/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/p" "$SRCDIR/man/sparcml.7" | grep -q "LD_PRELOAD.*/libsparcml\.so" &&
     ! sed -n "/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/p" "$SRCDIR/man/sparcml.7" | grep -qE "LD_PRELOAD[= ]libsparcml"'
lines=$(wc -l <"$SRCDIR/man/sparcml.7")
check "sparcml(7) is at most 600 lines ($lines)" '[ "$lines" -le 600 ]'
lines=$(wc -l <"$SRCDIR/docs/design.md")
check "docs/design.md is at most 450 lines ($lines)" '[ "$lines" -le 450 ]'
finish
