#!/usr/bin/env python3
"""callgrind_calls.py -- per-call event counts from callgrind dumps.

usage: scripts/callgrind_calls.py [--lib NAME] DUMP...

The dumps are those of one process run with --dump-after=FUNCTION (one per
call of FUNCTION; scripts/bench_cold.sh with CALLGRIND=1 makes them around
sparcml_bench's timed calls, the first a warm-up).  Prints, for the cold
calls (even dump numbers: sparcml_bench --cold times a cold call, then a
warm one) and the warm ones (odd), the median over the calls of each event
(Ir, the cache misses of --cache-sim=yes): over the whole process and over
the library alone (the object whose path contains NAME, default
libsparcml), and the bytes of the distinct cache lines a cold call
brought in from memory (LL misses times 64).
"""
import re
import statistics
import sys


def exclusive_costs(path):
    """Events and {(object, function): [costs]} of one dump (self costs)."""
    names = {'ob': {}, 'fn': {}, 'fl': {}}
    cur = {'ob': '?', 'fn': '?'}
    events, acc, skip = [], {}, False

    def resolve(kind, val):
        m = re.match(r'\((\d+)\)(?: (.*))?', val)
        if not m:
            return val
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
        return names[kind].get(m.group(1), '?')

    for line in open(path):
        line = line.rstrip('\n')
        if line.startswith('events:'):
            events = line.split()[1:]
            continue
        m = re.match(r'^(c?)(ob|fn|fl|fi|fe)=(.*)$', line)
        if m:
            kind = m.group(2) if m.group(2) in ('ob', 'fn') else 'fl'
            value = resolve(kind, m.group(3))
            if not m.group(1) and kind in cur:
                cur[kind] = value
            continue
        if line.startswith('calls='):
            skip = True  # the next cost line is the call's inclusive cost
            continue
        if line and (line[0].isdigit() or line[0] in '+-*'):
            if skip:
                skip = False
                continue
            vals = [int(x) for x in line.split()[1:]]
            row = acc.setdefault((cur['ob'], cur['fn']), [0] * len(events))
            for i, x in enumerate(vals):
                row[i] += x
    return events, acc


def main(paths, lib_name):
    calls = {'cold': [], 'warm': []}
    events = []
    for path in sorted(paths, key=lambda p: int(p.rsplit('.', 1)[1])):
        n = int(path.rsplit('.', 1)[1])
        if n == 1:
            continue  # the warm-up
        events, acc = exclusive_costs(path)
        total = [sum(v[i] for v in acc.values()) for i in range(len(events))]
        lib = [sum(v[i] for (ob, _), v in acc.items() if lib_name in ob) for i in range(len(events))]
        calls['cold' if n % 2 == 0 else 'warm'].append((total, lib))
    for cache in ('warm', 'cold'):
        if not calls[cache]:
            continue
        for j, part in enumerate(('process', 'library')):
            med = {e: statistics.median(c[j][i] for c in calls[cache]) for i, e in enumerate(events)}
            line = ' '.join('%s=%d' % (e, med[e]) for e in events)
            lines = sum(med.get(e, 0) for e in ('ILmr', 'DLmr', 'DLmw'))
            print('%s %s calls=%d %s memory_bytes=%d' % (cache, part, len(calls[cache]), line, 64 * lines))


if __name__ == '__main__':
    args = sys.argv[1:]
    lib_name = 'libsparcml'
    if args[:1] == ['--lib'] and len(args) > 1:
        lib_name, args = args[1], args[2:]
    if not args:
        sys.exit(__doc__)
    main(args, lib_name)
