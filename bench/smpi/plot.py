#!/usr/bin/python3
"""plot.py -- time against P from the SMPI sweep (scripts/smpi_sweep.sh plot).

usage: plot.py [--tag TAG] [--dense CSV] OUTDIR CSV...
One PNG per index pattern (smpi_random.png, smpi_identical.png, or
smpi_TAG_random.png ... with --tag, e.g. network_only): a row per
platform, a column per density, log-log time against P for every method,
and the Lemma 5.1 bound that applies (disjoint indices for random ones,
identical for identical ones), as the benchmark computed it from the
platform's alpha and beta.  Runs that did not finish (rc != 0) are left out.
--dense CSV: dense allreduce runs (smpi_sweep.sh's dense method), drawn in
every panel of their platform: a dense allreduce of N floats does not
depend on the density or the pattern.
"""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {
    "sparcml_auto": ("auto", "k", "o", "-"),
    "sparcml_ssar_recursive_double": ("SSAR recursive doubling", "tab:blue", "^", "--"),
    "sparcml_ssar_split_allgather": ("SSAR split allgather", "tab:green", "v", "--"),
    "sparcml_dsar_split_allgather": ("DSAR split allgather", "tab:purple", "s", "--"),
    "allgather": ("allgather baseline", "tab:orange", "x", ":"),
    "dense": ("SMPI dense allreduce", "tab:red", "D", ":"),
    "dense_any_d": ("dense allreduce, Rabenseifner (any d)", "tab:red", "D", ":"),
}
PLATFORMS = {"gige": "1 Gbit/s, alpha 20 us", "fattree": "100 Gbit/s fat tree, alpha 1.5 us"}


def load(paths):
    rows = []
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r["rc"] == "0" and r["median_s"] not in ("", "NA"):
                    rows.append(r)
    return rows


def plot_pattern(rows, dense, pattern, out, what):
    sel = [r for r in rows if r["pattern"] == pattern and r["platform"] in PLATFORMS]
    dens = sorted({float(r["density"]) for r in sel})
    plats = [p for p in PLATFORMS if any(r["platform"] == p for r in sel)]
    if not dens or not plats:
        return
    fig, axes = plt.subplots(len(plats), len(dens), figsize=(4.6 * len(dens), 3.8 * len(plats)),
                             squeeze=False)
    for i, plat in enumerate(plats):
        for j, d in enumerate(dens):
            ax = axes[i][j]
            series = defaultdict(dict)
            bound = {}
            for r in sel:
                if r["platform"] != plat or float(r["density"]) != d:
                    continue
                P = int(r["P"])
                series[r["method"]][P] = float(r["median_s"])
                b = r["bound_identical_s"] if pattern == "identical" else r["bound_disjoint_s"]
                bound[P] = float(b)
            for r in dense:
                if r["platform"] == plat:
                    series["dense_any_d"][int(r["P"])] = float(r["median_s"])
            for m, (label, color, marker, ls) in STYLE.items():
                if m in series:
                    ps = sorted(series[m])
                    ax.plot(ps, [series[m][p] for p in ps], ls, color=color, marker=marker,
                            label=label, markersize=4)
            if bound:
                ps = sorted(bound)
                ax.plot(ps, [bound[p] for p in ps], "-", color="0.6", linewidth=3, alpha=0.5,
                        label="Lemma 5.1 bound (%s)" % ("identical" if pattern == "identical" else "disjoint"))
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title("%s, d = %g" % (PLATFORMS[plat], d), fontsize=9)
            ax.set_xlabel("P")
            ax.set_ylabel("time per allreduce (s)")
            ax.grid(True, which="both", alpha=0.3)
    # One legend for every method drawn in any panel.
    labelled = {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            labelled.setdefault(lab, h)
    axes[0][0].legend(list(labelled.values()), list(labelled), fontsize=7)
    fig.suptitle("SMPI: N = 16M floats, %s indices%s" % (pattern, what))
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main():
    args = sys.argv[1:]
    tag, dense = "", []
    while args[0] in ("--tag", "--dense"):
        if args[0] == "--tag":
            tag = args[1]
        else:
            dense = load([args[1]])
        args = args[2:]
    rows = load(args[1:])
    what = ", " + tag.replace("_", " ") if tag else ""
    for pattern in ("random", "identical"):
        plot_pattern(rows, dense, pattern, "%s/smpi_%s%s.png" % (args[0], tag + "_" if tag else "", pattern), what)


if __name__ == "__main__":
    main()
