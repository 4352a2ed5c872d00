#!/usr/bin/env python3
"""auto_alone_table.py CSV -- scripts/bench_auto_alone.sh's runs as a Markdown
table: per point the median over rounds of each run's median call (ms) of
recursive doubling forced, SSAR split forced and auto, auto's over the faster
forced one's, and each auto run's calls by algorithm (R RD, S SSAR split,
D DSAR split, V dense; the most first)."""
import collections
import csv
import statistics
import sys

SHORT = {'ssar_recursive_double': 'R', 'ssar_split_allgather': 'S', 'dsar_split_allgather': 'D', 'dense': 'V'}
WHERE = {'shm': 'shared memory', 'rig': 'emulated cluster'}


def calls(ran):
    parts = sorted((p.split('*') for p in ran.split('+')), key=lambda p: -int(p[1]))
    return ' '.join('%s%s' % (SHORT[a], n) for a, n in parts)


def main(path):
    times, ran = collections.defaultdict(list), collections.defaultdict(list)
    for r in csv.DictReader(open(path)):
        if r['median_s'] == 'NA':
            continue
        point = (r['env'], int(r['P']), r['pattern'], r['density'])
        times[point + (r['alg'],)].append(float(r['median_s']))
        if r['alg'] == 'auto':
            ran[point].append(calls(r['ran']))
    print('| platform | P | indices, d | RD forced | SSAR split forced | auto | auto / best | auto ran (each run) |')
    print('|---|---|---|---|---|---|---|---|')
    for point in sorted(ran, key=lambda p: (p[0] == 'rig', p[1], p[2] != 'random', float(p[3]))):
        rd, ss, auto = (statistics.median(times[point + (a,)]) for a in
                        ('ssar_recursive_double', 'ssar_split_allgather', 'auto'))
        print('| %s | %d | %s %s | %.3g | %.3g | %.3g | %.2f | %s |' % (
            WHERE[point[0]], point[1], point[2], point[3], 1e3 * rd, 1e3 * ss, 1e3 * auto, auto / min(rd, ss),
            ', '.join(ran[point])))


if __name__ == '__main__':
    main(sys.argv[1])
