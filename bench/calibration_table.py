#!/usr/bin/env python3
"""calibration_table.py CSV [--choice] [--min-idle PCT] -- the selector's regret with the
calibration at MPI_Init and with the built-in defaults, as a Markdown table:
one row per (indices, density), one column per P, each cell
"calibrated / defaults" (the median over rounds), regret = auto's time over the fastest forced
algorithm's.  With --choice the forced time of the algorithm auto ran takes
the place of auto's own time (for runs too noisy to compare single times).
With --min-idle a point's runs count only where the CPUs were at least PCT
% idle just before and just after them (columns idle_before, idle_after;
rows without them count).
Reads scripts/bench_calibration.sh's CSVs and scripts/smpi_sweep.sh's
(SMPI_COST=calibrated|defaults)."""
import collections
import csv
import sys

FORCED = ("ssar_recursive_double", "ssar_split_allgather", "dsar_split_allgather")
AUTOS = ("auto_calibrated", "auto_defaults")


def load(path, min_idle=0):
    runs = collections.defaultdict(dict)
    for r in csv.DictReader(open(path)):
        t = r.get("median_s", "")
        if t in ("", "NA"):
            continue
        if any(r.get(c) not in (None, "") and float(r[c]) < min_idle for c in ("idle_before", "idle_after")):
            continue
        method = r["method"].replace("sparcml_", "")
        key = (r["pattern"], float(r["density"]), int(r["P"]))
        runs[key].setdefault(method, []).append((float(t), r.get("algorithm", "")))
    # Several rounds: the median time, the algorithm auto ran most often.
    for v in runs.values():
        for m, rs in v.items():
            times = sorted(t for t, _ in rs)
            algs = [a for _, a in rs]
            v[m] = (times[len(times) // 2] if len(times) % 2 else sum(times[len(times) // 2 - 1:][:2]) / 2,
                    max(set(algs), key=algs.count))
    return runs


def cell(v, auto, choice):
    forced = {m: v[m][0] for m in FORCED if m in v}
    if not forced or auto not in v:
        return "-"
    best = min(forced.values())
    t, alg = v[auto]
    if choice:
        return "%.2f" % (forced[alg] / best) if alg in forced else "-"
    return "%.2f" % (t / best)


def main():
    args = sys.argv[2:]
    min_idle = float(args[args.index("--min-idle") + 1]) if "--min-idle" in args else 0
    runs = load(sys.argv[1], min_idle)
    choice = "--choice" in args
    Ps = sorted({k[2] for k in runs})
    rows = sorted({k[:2] for k in runs})
    print("| indices, d | " + " | ".join("P = %d" % p for p in Ps) + " |")
    print("|---|" + "---|" * len(Ps))
    for pat, d in rows:
        cells = []
        for p in Ps:
            v = runs.get((pat, d, p), {})
            cells.append(" / ".join(cell(v, a, choice) for a in AUTOS))
        print("| %s, %g | %s |" % (pat, d, " | ".join(cells)))


main()
