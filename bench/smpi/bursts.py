#!/usr/bin/env python3
"""Attribute SMPI 'computing' states (Paje trace) to the MPI calls around them.
Usage: bench/smpi/bursts.py TRACE [nreps [min_us]]  (a trace of scripts/smpi_sweep.sh with
SMPI_CFG="-trace --cfg=tracing/smpi/computing:yes --cfg=tracing/filename:FILE")
Per rank, states form a sequence; a timed window starts after each PMPI_Barrier
and ends at the next PMPI_Allreduce (the benchmark's check_rc).  Reports, for the
last nreps windows, the simulated time spent computing vs in MPI, and the
computing bursts grouped by (previous MPI call, next MPI call).  With min_us,
also where in the window the bursts of at least min_us fall, by tenths of the
window's MPI calls: work the algorithm does at a fixed step sits in one tenth
on every rank, host noise is spread over all of them."""
import bisect, sys, collections
path = sys.argv[1]; nreps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
min_us = float(sys.argv[3]) if len(sys.argv) > 3 else None
names = {}; cont = {}
seq = collections.defaultdict(list)   # container -> [(name, start, end)]
stack = collections.defaultdict(list)
for line in open(path):
    if line.startswith('%') or line.startswith('#'): continue
    f = line.split()
    if not f: continue
    if f[0] == '5': names[f[1]] = f[3]
    elif f[0] == '6': cont[f[2]] = f[5].strip('"')
    elif f[0] == '12': stack[f[3]].append((names.get(f[4], f[4]), float(f[1])))
    elif f[0] == '13':
        n, t0 = stack[f[3]].pop(); seq[f[3]].append((n, t0, float(f[1])))
groups = collections.defaultdict(lambda: [0, 0.0, 0.0])
win_comp = []; win_tot = []
tenths = collections.defaultdict(lambda: [0] * 10)   # (prev, next) -> long bursts per tenth
for c, s in seq.items():
    s.sort(key=lambda x: x[1])
    # windows: after a Barrier until the next PMPI_Allreduce
    wins = []
    i = 0
    while i < len(s):
        if s[i][0] == 'PMPI_Barrier':
            j = i + 1
            while j < len(s) and s[j][0] != 'PMPI_Allreduce': j += 1
            wins.append((i, j)); i = j
        else: i += 1
    wins = [w for w in wins if w[1] < len(s)][-nreps:]
    for (i, j) in wins:
        t0 = s[i][2]; t1 = s[j][1]
        comp = 0.0
        calls = [k for k in range(i + 1, j) if s[k][0] != 'computing']
        for k in range(i + 1, j):
            n, a, b = s[k]
            if n != 'computing': continue
            comp += b - a
            prev = next((s[m][0] for m in range(k - 1, i - 1, -1) if s[m][0] != 'computing'), '?')
            nxt = next((s[m][0] for m in range(k + 1, j + 1) if s[m][0] != 'computing'), '?')
            g = groups[(prev, nxt)]; g[0] += 1; g[1] += b - a; g[2] = max(g[2], b - a)
            if min_us is not None and 1e6 * (b - a) >= min_us:
                before = bisect.bisect_left(calls, k)   # calls is in trace order
                tenths[(prev, nxt)][min(9, 10 * before // max(1, len(calls)))] += 1
        win_comp.append(comp); win_tot.append(t1 - t0)
R = len(win_tot)
print(f"windows (rank x rep): {R}; mean window {1e6*sum(win_tot)/R:.1f} us, mean computing in it {1e6*sum(win_comp)/R:.1f} us "
      f"({100*sum(win_comp)/sum(win_tot):.0f}%), max computing per window {1e6*max(win_comp):.1f} us")
print(f"{'prev -> next':45s} {'count/win':>9s} {'us/win':>8s} {'mean_us':>8s} {'max_us':>8s}")
for (p, n), (cnt, tot, mx) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
    print(f"{p+' -> '+n:45s} {cnt/R:9.2f} {1e6*tot/R:8.2f} {1e6*tot/cnt:8.2f} {1e6*mx:8.2f}")
if min_us is not None:
    print(f"bursts of at least {min_us:g} us per tenth of the window's MPI calls (all windows):")
    for (p, n), t in sorted(tenths.items(), key=lambda kv: -sum(kv[1])):
        print(f"{p+' -> '+n:45s} " + " ".join(f"{x:4d}" for x in t))
