#!/usr/bin/env python3
"""Speed-up of the GPU backend over its GPU count (issue 10), from the JSON
files `manifold bench --devices 0,..,G-1` wrote (bench/gpu/scaling/run.sh):
per case, the median time on G GPUs, the speed-up over one GPU of the same
run, the efficiency (speed-up / G, target >= 0.9), the per-device tile-loop
times (balance) and the rate N^2 d / time. Writes OUT.json and a plot.

    summarize.py OUT.json OUT.png scale_*.json
"""
import json
import sys


def main():
    out_json, out_png, inputs = sys.argv[1], sys.argv[2], sys.argv[3:]
    rows = []
    for path in inputs:
        with open(path) as f:
            j = json.load(f)
        for c in j.get("cases", []):
            if "median_wall_s" not in c:
                continue
            ex = c.get("extra", {})
            devices = ex.get("devices", [])
            rows.append({
                "n": c["n"], "d": c["d"], "k": c["k"], "gpus": len(devices), "devices": devices,
                "device_names": ex.get("device_names"), "median_s": c["median_wall_s"], "wall_s": c["wall_s"],
                "stages_s": c.get("median_stage_s", {}),
                "loop_s_per_device": [p.get("loop_s") for p in ex.get("per_device", [])],
                "tile_kernel": ex.get("tile_kernel"), "sgemm_tflops": c.get("sgemm_tflops"),
                "tflops": c["n"] ** 2 * c["d"] / c["median_wall_s"] / 1e12, "file": path.rsplit("/", 1)[-1],
            })
    rows.sort(key=lambda r: (r["n"], r["d"], r["k"], r["gpus"]))
    for r in rows:
        base = next((b for b in rows if (b["n"], b["d"], b["k"], b["gpus"]) == (r["n"], r["d"], r["k"], 1)), None)
        if base:
            r["speedup"] = base["median_s"] / r["median_s"]
            r["efficiency"] = r["speedup"] / r["gpus"]
    with open(out_json, "w") as f:
        json.dump({"rows": rows}, f, indent=1)
        f.write("\n")
    print("| N | d | k | GPUs | median s | speed-up | efficiency | N^2 d / time (TFLOP/s) | tile loop s per GPU |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        loops = ", ".join(f"{x:.2f}" for x in r["loop_s_per_device"] if x is not None)
        print(f"| {r['n']} | {r['d']} | {r['k']} | {r['gpus']} | {r['median_s']:.3f} | "
              f"{r.get('speedup', float('nan')):.2f}x | {r.get('efficiency', float('nan')):.2f} | "
              f"{r['tflops']:.1f} | {loops} |")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no matplotlib: no plot")
        return
    fig, ax = plt.subplots(figsize=(5.5, 4.4))
    cases = sorted({(r["n"], r["d"], r["k"]) for r in rows})
    gmax = max(r["gpus"] for r in rows)
    ax.plot([1, gmax], [1, gmax], color="grey", lw=0.8, label="ideal")
    ax.plot([1, gmax], [0.9, 0.9 * gmax], color="grey", lw=0.8, ls="--", label="0.9 x G (target)")
    for n, d, k in cases:
        pts = [r for r in rows if (r["n"], r["d"], r["k"]) == (n, d, k) and "speedup" in r]
        ax.plot([r["gpus"] for r in pts], [r["speedup"] for r in pts], marker="o",
                label=f"N={n:,} d={d} k={k}")
    ax.set_xlabel("GPUs")
    ax.set_ylabel("speed-up over 1 GPU (same run)")
    names = {n for r in rows for n in (r["device_names"] or [])}
    ax.set_title("exact k-NN graph, " + ", ".join(sorted(names)), fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_png, dpi=120)
    print("wrote", out_png)


if __name__ == "__main__":
    main()
