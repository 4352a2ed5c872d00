#!/usr/bin/python3
"""headline_plot.py -- the end-to-end table of scripts/bench_headline.sh as
a picture: seconds per epoch (compute and communication stacked) for each
data set and mode, with the speedup over dense written on each bar.

usage: headline_plot.py CSV PNG
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MODES = ["dense", "sparse", "topk"]
LABEL = {"dense": "dense (vendor)", "sparse": "sparse (lossless)", "topk": "top-k 0.1 %"}


def main(src, png):
    tot = {}
    epochs = {}
    for r in csv.DictReader(open(src)):
        key = (r["dataset"], r["mode"])
        if r["epoch"] == "total":
            tot[key] = (float(r["compute_s"]), float(r["comm_s"]))
        else:
            epochs[key] = max(epochs.get(key, 0), int(r["epoch"]))
    datasets = [d for d in ("url", "webspam") if (d, "dense") in tot]
    fig, axes = plt.subplots(1, len(datasets), figsize=(5 * len(datasets), 4.5), squeeze=False)
    for ax, d in zip(axes[0], datasets):
        modes = [m for m in MODES if (d, m) in tot]
        comp = [tot[d, m][0] / epochs[d, m] for m in modes]
        comm = [tot[d, m][1] / epochs[d, m] for m in modes]
        x = range(len(modes))
        ax.bar(x, comp, color="tab:gray", label="compute")
        ax.bar(x, comm, bottom=comp, color="tab:blue", label="communication")
        dense = comp[0] + comm[0]
        for i, (a, b) in enumerate(zip(comp, comm)):
            ax.text(i, a + b, "%.1f s\n%.1fx" % (a + b, dense / (a + b)), ha="center", va="bottom")
        ax.set_xticks(list(x))
        ax.set_xticklabels([LABEL[m] for m in modes])
        ax.set_ylim(0, dense * 1.25)
        ax.set_ylabel("seconds per epoch")
        ax.set_title("%s-like, P = 8" % d)
        ax.legend(loc="upper right")
    fig.suptitle("examples/topk_sgd on the emulated 1 Gbit/s cluster (8 ranks on 2 cores)")
    fig.tight_layout()
    fig.savefig(png, dpi=100)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
