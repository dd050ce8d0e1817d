#!/usr/bin/env python3
"""The JSON of bench/gpu/scaling/two_gpus_ab.sh's runs: for each build and
run (one GPU, two GPUs, a quarter of the rows on one GPU) and round, the
median wall time, each device's tile loop and seed phase, the stages after
the loop; then per build the medians over rounds, two GPUs' speed-up over
one and streaming's share of the in-memory throughput.
    two_gpus_summary.py OUT_DIR DEVICE_NOTE > OUT.json"""
import glob
import json
import os
import re
import statistics
import sys


def run_row(path):
    with open(path) as f:
        case = json.load(f)["cases"][0]
    ex = case.get("extra", {})
    per = ex.get("per_device", [])
    return {
        "median_wall_s": case["median_wall_s"],
        "loop_s_per_device": [round(p["loop_s"], 4) for p in per],
        "seed_s_per_device": [round(p["seed_s"], 4) for p in per],
        "stages_s": {k: round(v, 4) for k, v in case.get("median_stage_s", {}).items()},
        "resident": ex.get("resident"),
        "tile_kernel": ex.get("tile_kernel"),
    }


def main(out, note):
    runs = {}
    for path in sorted(glob.glob(os.path.join(out, "*_*_[0-9]*.json"))):
        m = re.match(r"(.+)_(one|two|quarter)_(\d+)\.json$", os.path.basename(path))
        if m:
            runs.setdefault(m[1], {}).setdefault(m[2], []).append(run_row(path))
    builds = {}
    for name, by_run in runs.items():
        med = {r: statistics.median(x["median_wall_s"] for x in rows) for r, rows in by_run.items()}
        builds[name] = {"median_wall_s": med, "runs": by_run}
        if "one" in med and "two" in med:
            builds[name]["two_gpus_speedup"] = round(med["one"] / med["two"], 3)
        if "one" in med and "quarter" in med:
            builds[name]["quarter_rows_share"] = round(med["one"] / med["quarter"], 3)
    json.dump({"device": note, "command": "bash bench/gpu/scaling/two_gpus_ab.sh OUT NAME=RUNNER ...",
               "builds": builds}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")
