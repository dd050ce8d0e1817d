#!/usr/bin/env python3
"""Plots results.json (make_table.py): for each N, the median total time
(solid) and selection time (dashed) of every strategy against k.

    plot.py results.json OUT.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STRATEGIES = ["warp", "merge", "quick", "sort", "heap", "bitonic"]


def main():
    with open(sys.argv[1]) as f:
        res = json.load(f)
    table = res["table"]
    ns = sorted({r["n"] for r in table})
    fig, axes = plt.subplots(1, len(ns), figsize=(5.2 * len(ns), 4.4), squeeze=False)
    colors = dict(zip(STRATEGIES, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for ax, n in zip(axes[0], ns):
        rows = sorted((r for r in table if r["n"] == n), key=lambda r: r["k"])
        if len(rows) == 1:
            # One k measured (the 1M column): bars, total and selection.
            r = rows[0]
            names = [s for s in STRATEGIES if s in r["total_s"]]
            xs = range(len(names))
            ax.bar(xs, [r["total_s"][s] for s in names], color=[colors[s] for s in names], label="total")
            ax.bar(xs, [r["select_s"].get(s) or 0 for s in names], color="none", edgecolor="black", hatch="//",
                   label="selection")
            ax.set_xticks(list(xs), names)
            ax.set_ylabel("seconds")
            ax.set_title(f"N = {n:,}, d = 256, k = {r['k']}")
            ax.legend(fontsize=8)
            continue
        for s in STRATEGIES:
            pts = [(r["k"], r["total_s"][s], r["select_s"].get(s)) for r in rows if s in r["total_s"]]
            if not pts:
                continue
            ks = [p[0] for p in pts]
            ax.plot(ks, [p[1] for p in pts], "o-", color=colors[s], label=f"{s} total")
            sel = [(p[0], p[2]) for p in pts if p[2]]
            if sel:
                ax.plot([p[0] for p in sel], [p[1] for p in sel], "x--", color=colors[s], alpha=0.6)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("k")
        ax.set_ylabel("seconds (solid: total, dashed: selection)")
        ax.set_title(f"N = {n:,}, d = 256")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"GPU k-NN graph, selection strategies ({res.get('device') or 'GPU'})")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
