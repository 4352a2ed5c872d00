#!/usr/bin/python3
"""table.py -- markdown tables of the SMPI sweep (scripts/smpi_sweep.sh table).

usage: table.py CSV...
       table.py --calibration RIG_CSV[,RIG_CSV...] SMPI_CSV...
Per platform, index pattern and density, a row per P: the time of auto and
the algorithm it chose, the fastest forced sparse algorithm and the regret
(auto / fastest; only where recursive doubling and SSAR split both ran, so
that a point with one forced algorithm does not read as no regret), auto
against the Lemma 5.1 bound that applies, the allgather baseline and
SMPI's dense allreduce against auto.  Runs that did not finish show their
cause: "mem" (stopped by the memory watchdog),
"timeout"; points not run are "-".
With --calibration, several rig runs (comma-separated) give the median of
their medians and, after "±", half their spread (max - min) relative to it.
"""
import csv
import sys
from collections import defaultdict

FORCED = {
    "sparcml_ssar_recursive_double": "RD",
    "sparcml_ssar_split_allgather": "SSAR",
    "sparcml_dsar_split_allgather": "DSAR",
}
SHORT = {"ssar_recursive_double": "RD", "ssar_split_allgather": "SSAR",
         "dsar_split_allgather": "DSAR", "dense": "dense"}


def calibration(rig_path, paths):
    """Simulated against measured, per P and method: the rig's P sweep."""
    rig_paths = rig_path.split(",")
    runs = defaultdict(list)  # (method, P) -> [(median_s, algorithm)] over the rig runs
    for one in rig_paths:
        with open(one, newline="") as f:
            for r in csv.DictReader(f):
                runs[(r["method"], int(r["P"]))].append((float(r["median_s"]), r["algorithm"]))
    rig, spread = {}, {}
    for key, v in runs.items():
        v.sort()
        rig[key] = v[(len(v) - 1) // 2]
        spread[key] = (v[-1][0] - v[0][0]) / 2 / rig[key][0]
    methods = ["allgather", "sparcml_ssar_recursive_double", "sparcml_ssar_split_allgather", "dense",
               "sparcml_auto"]
    for path in paths:
        with open(path, newline="") as f:
            rows = [r for r in csv.DictReader(f) if r["rc"] == "0"]
        within = total = 0
        print("\n`%s`: simulated / measured (ms) = ratio\n" % path.split("/")[-1])
        print("| P | allgather | recursive doubling | SSAR split | vendor dense | auto (sim / rig choice) |")
        print("|---|---|---|---|---|---|")
        for P in sorted({int(r["P"]) for r in rows}):
            cells = []
            for m in methods:
                sim = [r for r in rows if r["method"] == m and int(r["P"]) == P]
                if not sim or (m, P) not in rig:
                    cells.append("-")
                    continue
                t, (tr, alg) = float(sim[0]["median_s"]), rig[(m, P)]
                q = t / tr
                if m != "sparcml_auto":
                    total += 1
                    within += abs(q - 1) <= 0.25
                extra = " (%s / %s)" % (SHORT.get(sim[0]["algorithm"], "?"), SHORT.get(alg, "?")) \
                    if m == "sparcml_auto" else ""
                rig_cell = "%.3g" % (tr * 1e3) + (" ±%.0f%%" % (100 * spread[(m, P)]) if len(rig_paths) > 1 else "")
                cells.append("%.3g / %s = %s%.2f%s%s" % (t * 1e3, rig_cell, "" if abs(q - 1) <= 0.25 else "**",
                                                          q, "" if abs(q - 1) <= 0.25 else "**", extra))
            print("| %d | %s |" % (P, " | ".join(cells)))
        print("\nWithin 25 %%: %d of %d forced, baseline and dense points." % (within, total))


def main():
    if sys.argv[1] == "--calibration":
        calibration(sys.argv[2], sys.argv[3:])
        return
    cell = defaultdict(dict)  # (plat, pattern, d, P) -> method -> row
    for path in sys.argv[1:]:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                cell[(r["platform"], r["pattern"], float(r["density"]), int(r["P"]))][r["method"]] = r
    groups = sorted({k[:3] for k in cell})
    for plat, pat, d in groups:
        print("\n**%s, %s indices, d = %g** (ms)\n" % (plat, pat, d))
        print("| P | auto (choice) | fastest forced | regret | auto / bound | allgather | allgather / auto | dense | dense / auto |")
        print("|---|---|---|---|---|---|---|---|---|")
        for P in sorted(k[3] for k in cell if k[:3] == (plat, pat, d)):
            c = cell[(plat, pat, d, P)]

            def t(m):
                r = c.get(m)
                if not r:
                    return None
                return float(r["median_s"]) if r["rc"] == "0" and r["median_s"] != "NA" else r["rc"]

            def fmt(x):
                if x is None:
                    return "-"
                if isinstance(x, str):
                    return {"137": "mem", "124": "timeout"}.get(x, "rc %s" % x)
                return "%.3g" % (x * 1e3)

            auto = t("sparcml_auto")
            forced = {FORCED[m]: t(m) for m in FORCED if isinstance(t(m), float)}
            best = min(forced.items(), key=lambda kv: kv[1]) if forced else None
            comparable = "RD" in forced and "SSAR" in forced
            ok = isinstance(auto, float)
            choice = SHORT.get(c["sparcml_auto"]["algorithm"], "?") if ok else ""
            bound = None
            if ok:
                b = c["sparcml_auto"]["bound_identical_s" if pat == "identical" else "bound_disjoint_s"]
                bound = float(b)
            ag, dn = t("allgather"), t("dense")
            print("| %d | %s%s | %s | %s | %s | %s | %s | %s | %s |" % (
                P, fmt(auto), " (%s)" % choice if ok else "",
                "%s %s" % (best[0], fmt(best[1])) if best else "-",
                "%.2f" % (auto / best[1]) if ok and comparable else "-",
                "%.2f" % (auto / bound) if ok and bound else "-",
                fmt(ag), "%.2f" % (ag / auto) if ok and isinstance(ag, float) else "-",
                fmt(dn), "%.0f" % (dn / auto) if ok and isinstance(dn, float) else "-"))


if __name__ == "__main__":
    main()
