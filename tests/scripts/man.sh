#!/bin/bash
# The man pages render without warnings, and every SPARCML_* variable the
# config module knows is documented in sparcml(7).
. "$(dirname "$0")/common.sh"
for page in "$SRCDIR"/man/*.7; do
    w=$(groff -ww -t -man -z "$page" 2>&1)
    check "$(basename "$page") renders without groff warnings" '[ -z "$w" ]'
    w=$(man -l --warnings=w "$page" 2>&1 >/dev/null)
    check "$(basename "$page") renders without man warnings" '[ -z "$w" ]'
done
for var in $(grep -o '"SPARCML_[A-Z][A-Z_]*"' "$SRCDIR/src/core/settings.c" | tr -d '"' | sort -u); do
    check "$var is documented in sparcml.7" 'grep -q "^\.B $var\$" "$SRCDIR/man/sparcml.7"'
done
finish
