#!/usr/bin/python3
"""table.py -- markdown tables of the SMPI sweep (scripts/smpi_sweep.sh table).

usage: table.py CSV...
Per platform, index pattern and density, a row per P: the time of auto and
the algorithm it chose, the fastest forced sparse algorithm and the regret
(auto / fastest), auto against the Lemma 5.1 bound that applies, the
allgather baseline and SMPI's dense allreduce against auto.  Runs that did
not finish (rc != 0) show as "-"; runs stopped by the memory watchdog as
"mem".
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


def main():
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
                    return "mem" if x == "137" else "rc %s" % x
                return "%.3g" % (x * 1e3)

            auto = t("sparcml_auto")
            forced = {FORCED[m]: t(m) for m in FORCED if isinstance(t(m), float)}
            best = min(forced.items(), key=lambda kv: kv[1]) if forced else None
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
                "%.2f" % (auto / best[1]) if ok and best else "-",
                "%.2f" % (auto / bound) if ok and bound else "-",
                fmt(ag), "%.2f" % (ag / auto) if ok and isinstance(ag, float) else "-",
                fmt(dn), "%.0f" % (dn / auto) if ok and isinstance(dn, float) else "-"))


if __name__ == "__main__":
    main()
