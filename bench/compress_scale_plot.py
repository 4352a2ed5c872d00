#!/usr/bin/python3
"""compress_scale_plot.py -- the scale table of scripts/bench_compress_speed.sh
as a picture: bytes per rank per call (left) and time per call (right)
against P, log-log, for SPARCML_COMPRESS=topk and cltk on shared memory and
on the emulated 1 Gbit/s cluster, with the vendor's dense allreduce of the
same gradient for the time.  cltk's bytes include the broadcast of the
leader's indices (computed; SPARCML_STATS does not count it).

usage: compress_scale_plot.py CSV PNG
"""
import csv
import sys
from statistics import mean

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import ScalarFormatter  # noqa: E402

COLOR = {"topk": "tab:red", "cltk": "tab:blue", "vendor": "tab:gray"}
STYLE = {"shm": "-", "rig": "--"}
MARK = {"shm": "o", "rig": "s"}


def label_of(where, rows):
    n = int(rows[0]["N"])
    size = "%dM" % (n >> 20) if n >= 1 << 20 else str(n)
    return ("shared memory" if where == "shm" else "1 Gbit/s rig") + ", N = %s" % size


def main(src, png):
    rows = list(csv.DictReader(open(src)))
    fig, (axb, axt) = plt.subplots(1, 2, figsize=(11, 4.5))
    for where in ("shm", "rig"):
        here = [r for r in rows if r["where"] == where]
        if not here:
            continue
        name = label_of(where, here)
        for mode in ("topk", "cltk"):
            rs = sorted((r for r in here if r["mode"] == mode), key=lambda r: int(r["P"]))
            if not rs:
                continue
            p = [int(r["P"]) for r in rs]
            by = [float(r["bytes_per_rank_call"]) for r in rs]  # the broadcast's share included
            ms = [float(r["compressed_median_ms"]) for r in rs]
            kw = dict(color=COLOR[mode], linestyle=STYLE[where], marker=MARK[where])
            axb.plot(p, by, label="%s, %s" % (mode, name), **kw)
            axt.plot(p, ms, label="%s, %s" % (mode, name), **kw)
        # The vendor's time: the mean of its medians in the runs of both modes.
        vp = sorted({int(r["P"]) for r in here})
        vms = [mean(float(r["vendor_median_ms"]) for r in here if int(r["P"]) == q) for q in vp]
        axt.plot(vp, vms, color=COLOR["vendor"], linestyle=STYLE[where], marker=MARK[where],
                 label="vendor dense, %s" % name)
    ps = sorted({int(r["P"]) for r in rows})
    for ax in (axb, axt):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ps)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.set_yscale("log")
        ax.set_xlabel("P (ranks)")
        ax.grid(True, which="both", alpha=0.3)
    axb.set_ylabel("bytes sent per rank per call")
    axb.set_title("bytes (cltk: with the index broadcast)")
    axt.set_ylabel("ms per call (median, slowest rank)")
    axt.set_title("time per call")
    axb.legend(fontsize=8)
    axt.legend(fontsize=7)
    fig.suptitle("SPARCML_COMPRESS at density 1e-3, dense float gradient (all P ranks on 2 cores)")
    fig.tight_layout()
    fig.savefig(png, dpi=100)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
