#!/usr/bin/env python3
"""Tables (Markdown) of the issue 8 and 9 benchmarks from the JSON that
device_run.sh writes (manifold bench --json): p9_*.json and p8_*.json in DIR.
   python3 bench/gpu/summarize_8_9.py DIR [--json OUT]"""
import glob
import json
import os
import sys

d = sys.argv[1]


def load(name):
    p = os.path.join(d, name)
    return json.load(open(p)) if os.path.exists(p) else None


combined = {}
print("### fast-exact vs exact (one GPU, same process, same data)\n")
print("| N | d | k | precision | median s | / FP32 floor | re-evaluated per row (max) | rows rescanned / exact scan "
      "| bound use | GEMM TFLOP/s | certify + rescan s | speed-up |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for path in sorted(glob.glob(os.path.join(d, "p9_*.json"))):
    r = json.load(open(path))
    combined[os.path.basename(path)] = r
    speed = {(s["n"], s["k"]): s["speedup"] for s in r.get("precision_speedup", [])}
    for c in r["cases"]:
        if "error" in c:
            print("| %d | %d | %d | %s | error: %s |" % (c["n"], c["d"], c["k"], c.get("precision"), c["error"]))
            continue
        e, st = c["extra"], c["median_stage_s"]
        print("| %d | %d | %d | %s | %.3f | %.2f | %.1f (%d) | %s / %d | %.3f | %.1f | %.3f + %.3f | %s |" % (
            c["n"], c["d"], c["k"], c["precision"], c["median_wall_s"], c.get("over_floor", 0),
            e["reevaluated_per_row"], e["reevaluated_max"], e.get("rescanned_rows", "-"), e["fallback_rows"],
            e["error_bound_max_use"], e["gemm_tflops"], st.get("certify", 0), st.get("rescan", 0),
            "%.2fx" % speed[(c["n"], c["k"])] if c["precision"] == "fast-exact" and (c["n"], c["k"]) in speed else "-"))

runs = [("1 GPU, in memory", "p8_1gpu.json"), ("2 GPUs, in memory", "p8_2gpu.json"),
        ("1 GPU, --gpu-memory for a quarter of the rows", "p8_stream.json")]
base = None
print("\n### N = 1M, d = 256, k = 32 (exact)\n")
print("| run | median s | N^2 d / time (TFLOP/s) | vs 1 GPU in memory | rows on device | copied to GPUs "
      "| tile loop s per device | certify s |")
print("|---|---|---|---|---|---|---|---|")
for label, name in runs:
    r = load(name)
    if not r:
        print("| %s | not run |" % label)
        continue
    combined[name] = r
    c = r["cases"][0]
    if "error" in c:
        print("| %s | error: %s |" % (label, c["error"]))
        continue
    e = c["extra"]
    t = c["median_wall_s"]
    useful = float(c["n"]) ** 2 * c["d"]
    if base is None:
        base = t
    rows_bytes = c["n"] * (c["d"] + 1) * 4
    ratio = base / t
    rel = ("%.2fx speed-up" % ratio) if "2 GPUs" in label else ("%.0f%% of its throughput" % (100 * ratio)
                                                                  if "quarter" in label else "1")
    print("| %s | %.3f | %.1f | %s | %.0f%% | %.2f GB | %s | %.3f |" % (
        label, t, useful / t / 1e12, rel, 100.0 * min(e["rows_on_device_bytes"], rows_bytes) / rows_bytes,
        e["h2d_bytes"] / 1e9, ", ".join("%.2f" % p["loop_s"] for p in e.get("per_device", [])),
        c["median_stage_s"].get("certify", 0)))
if "--json" in sys.argv:
    json.dump(combined, open(sys.argv[sys.argv.index("--json") + 1], "w"), indent=1)
