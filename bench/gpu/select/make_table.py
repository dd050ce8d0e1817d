#!/usr/bin/env python3
"""Merges `manifold bench --select ...` JSON files into one results file and
prints the table of issue 7: per (N, k), each strategy's median total time
and selection time, and the winner (the smallest total; `auto` is not a
candidate). Also prints the rows of gpu/select/auto_table.cpp's kBest.

The pick for `--select auto` is the winner by total time, except where the
totals are set by the host rather than the GPU: when even the fastest GPU
pipeline (setup, tiles, refinement or certificate, download: `gpu_s` below)
takes less than half the best total, the rest is the host faulting in the
result's pages (seconds for large N k, the same for every strategy, and
hidden longer behind a slower loop), and the pick is the strategy with the
fastest GPU pipeline. Later files win for a cell measured twice.

    make_table.py OUT.json BENCH.json...
"""
import json
import os
import sys

STRATEGIES = ["warp", "merge", "quick", "sort", "heap", "bitonic", "auto"]
GPU_STAGES = ["prepare", "setup", "distances+select", "refine", "certify", "fallback", "merge_devices", "download"]
NS = [10000, 100000, 1000000]
KS = [1, 16, 128, 1024, 4096]


def main():
    out, inputs = sys.argv[1], sys.argv[2:]
    runs, cases = [], []
    for path in inputs:
        try:
            with open(path) as f:
                j = json.load(f)
        except (OSError, ValueError) as e:
            print(f"skipping {path}: {e}")
            continue
        run = {k: j.get(k) for k in ("host", "sgemm", "repeats", "warmup", "data", "cpu_threads")}
        run["file"] = os.path.basename(path)
        runs.append(run)
        for c in j.get("cases", []):
            c = dict(c)
            c["run"] = len(runs) - 1
            cases.append(c)
    cell = {}
    for c in cases:
        cell[(c["n"], c["k"], c["select"])] = c
    table = []
    for n in sorted({c["n"] for c in cases}):
        for k in sorted({c["k"] for c in cases if c["n"] == n}):
            row = {"n": n, "k": k, "total_s": {}, "select_s": {}, "gpu_s": {}, "final_s": {}, "errors": {}}
            for s in STRATEGIES:
                c = cell.get((n, k, s))
                if c is None:
                    continue
                if "error" in c:
                    row["errors"][s] = c["error"]
                    continue
                row["total_s"][s] = c["median_wall_s"]
                st = c.get("median_stage_s", {})
                row["select_s"][s] = st.get("select")
                row["gpu_s"][s] = sum(st.get(x, 0.0) for x in GPU_STAGES)
                row["final_s"][s] = st.get("final", 0.0)
            cands = {s: t for s, t in row["total_s"].items() if s != "auto"}
            if cands:
                row["winner"] = min(cands, key=cands.get)
                row["best_s"] = cands[row["winner"]]
                gpu = {s: row["gpu_s"][s] for s in cands}
                row["gpu_winner"] = min(gpu, key=gpu.get)
                host_bound = gpu[row["gpu_winner"]] < 0.5 * row["best_s"]
                row["auto_pick"] = row["gpu_winner"] if host_bound else row["winner"]
            table.append(row)
    device = next((r["sgemm"]["device_name"] for r in runs if r.get("sgemm")), None)
    with open(out, "w") as f:
        json.dump({"device": device, "runs": runs, "table": table, "cases": cases}, f, indent=1)
        f.write("\n")

    print(f"device: {device}; total / selection time in ms (median); * = winner")
    head = "| N | k | " + " | ".join(STRATEGIES) + " | winner (total) | fastest GPU pipeline | auto table |"
    print(head)
    print("|" + "---|" * (len(STRATEGIES) + 5))
    for row in table:
        cells = []
        for s in STRATEGIES:
            if s in row["total_s"]:
                sel = row["select_s"].get(s)
                mark = "*" if row.get("winner") == s else ""
                cells.append(f"{mark}{row['total_s'][s] * 1e3:.1f} / " + (f"{sel * 1e3:.1f}" if sel is not None else "-"))
            elif s in row["errors"]:
                cells.append("refused")
            else:
                cells.append("-")
        print(f"| {row['n']} | {row['k']} | " + " | ".join(cells) +
              f" | {row.get('winner', '-')} | {row.get('gpu_winner', '-')} | {row.get('auto_pick', '-')} |")
    print("\nkBest rows (gpu/select/auto_table.cpp), '?' where not measured:")
    for n in NS:
        names = []
        for k in KS:
            r = next((r for r in table if r["n"] == n and r["k"] == k and "winner" in r), None)
            names.append(f'"{r["auto_pick"]}"' if r else '"?"')
        print("    {" + ", ".join(names) + "},  // N = " + str(n))


if __name__ == "__main__":
    main()
