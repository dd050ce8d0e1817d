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
fastest GPU pipeline. Later files win for a cell measured twice in the
table, and where several runs measured a cell, auto's pick is the strategy
with the smallest worst-case total over those runs relative to each run's
best (see below).
Selection time: the tile loop's filter + selection kernels (stage `select`)
plus, for heap and quick, ordering the lists for the final step
(`order_lists`). Cases the bench skipped (predicted too slow to win) or
measured once for auto and its pick (`measured_as`) are kept as such.

With --write-auto-table FILE (gpu/select/auto_table.cpp) the kBest rows in
FILE are rewritten from the table, so the committed table is derived from
committed JSON: the files in bench/gpu/select/auto_table_inputs/, in the
order and with the N filters bench/gpu/select/RESULTS.md gives, reproduce it.
Cells not measured take the pick of the nearest smaller N (marked).

With --write-table-file FILE the same picks go to FILE in the format
MANIFOLD_SELECT_TABLE reads, so a table measured on the GPU at hand can be
used without rebuilding. BENCH.json:N1,N2 takes only those N's cases.

    make_table.py [--write-auto-table FILE] [--write-table-file FILE] OUT.json BENCH.json[:N,...]...
"""
import json
import os
import re
import sys

STRATEGIES = ["warp", "merge", "quick", "sort", "heap", "bitonic", "auto"]
GPU_STAGES = ["prepare", "setup", "distances+select", "final"]
NS = [10000, 100000, 1000000]
KS = [1, 16, 128, 1024, 4096]


def main():
    args = sys.argv[1:]
    auto_file = table_file = None
    while args and args[0] in ("--write-auto-table", "--write-table-file"):
        if args[0] == "--write-auto-table":
            auto_file = args[1]
        else:
            table_file = args[1]
        args = args[2:]
    out, inputs = args[0], args[1:]
    runs, cases = [], []
    for spec in inputs:
        # PATH:N1,N2 takes only those N's cases from PATH.
        path, only_n = spec, None
        m = re.fullmatch(r"(.*):([0-9,]+)", spec)
        if m and not os.path.exists(spec):
            path, only_n = m.group(1), {int(x) for x in m.group(2).split(",") if x}
        try:
            with open(path) as f:
                j = json.load(f)
        except (OSError, ValueError) as e:
            print(f"skipping {path}: {e}")
            continue
        if only_n is not None:
            j = dict(j)
            j["cases"] = [c for c in j.get("cases", []) if c.get("n") in only_n]
        if "runs" in j:  # a merged results file: its runs and cases as they are
            base = len(runs)
            runs.extend(j["runs"])
            for c in j.get("cases", []):
                c = dict(c)
                c["run"] = base + c.get("run", 0)
                cases.append(c)
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
            row = {"n": n, "k": k, "total_s": {}, "select_s": {}, "gpu_s": {}, "final_s": {}, "errors": {},
                   "skipped": {}}
            for s in STRATEGIES:
                c = cell.get((n, k, s))
                if c is None:
                    continue
                if "error" in c:
                    row["errors"][s] = c["error"]
                    continue
                if "skipped" in c:
                    row["skipped"][s] = c["skipped"]
                    continue
                row["total_s"][s] = c["median_wall_s"]
                st = c.get("median_stage_s", {})
                sel = st.get("select")
                row["select_s"][s] = None if sel is None else sel + st.get("order_lists", 0.0)
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
                if "auto" in row["total_s"]:
                    row["auto_over_best"] = row["total_s"]["auto"] / row["best_s"]
                    ca = cell.get((n, k, "auto"), {})
                    row["auto_ran"] = ca.get("auto_pick") or ca.get("strategy")
            table.append(row)
    # Several runs measuring the same cell: auto's pick is the strategy whose
    # worst total over those runs, relative to each run's best, is smallest
    # (timings of ~5 ms cells, and of host-bound large-k cells, move by 10-30%
    # between runs; one run's winner is then a coin toss). A strategy a run
    # skipped as a predicted loser does not qualify.
    per_run = {}
    for c in cases:
        if "error" in c or "skipped" in c or c.get("select") == "auto" or "median_wall_s" not in c:
            continue
        per_run.setdefault((c["n"], c["k"]), {}).setdefault(c["run"], {})[c["select"]] = c["median_wall_s"]
    for c in cases:  # auto's own run is a measurement of its pick where the pick was not run again
        pick = c.get("auto_pick") if c.get("select") == "auto" else None
        if pick and "median_wall_s" in c and "skipped" not in c:
            per_run.setdefault((c["n"], c["k"]), {}).setdefault(c["run"], {}).setdefault(pick, c["median_wall_s"])
    for row in table:
        runs_here = per_run.get((row["n"], row["k"]), {})
        if len(runs_here) < 2:
            continue
        regret = {}
        for s in {s for r in runs_here.values() for s in r}:
            if all(s in r for r in runs_here.values()):
                regret[s] = max(r[s] / min(r.values()) for r in runs_here.values())
        if regret:
            row["auto_pick"] = min(regret, key=regret.get)
            row["auto_pick_worst_over_best"] = regret[row["auto_pick"]]
    device = next((r["sgemm"]["device_name"] for r in runs if r.get("sgemm")), None)
    with open(out, "w") as f:
        json.dump({"device": device, "runs": runs, "table": table, "cases": cases}, f, indent=1)
        f.write("\n")

    print(f"device: {device}; total / selection time in ms (median); * = winner")
    head = ("| N | k | " + " | ".join(STRATEGIES) +
            " | winner (total) | fastest GPU pipeline | auto table | auto ran | auto / best |")
    print(head)
    print("|" + "---|" * (len(STRATEGIES) + 7))
    for row in table:
        cells = []
        for s in STRATEGIES:
            if s in row["total_s"]:
                sel = row["select_s"].get(s)
                mark = "*" if row.get("winner") == s else ""
                cells.append(f"{mark}{row['total_s'][s] * 1e3:.1f} / " + (f"{sel * 1e3:.1f}" if sel is not None else "-"))
            elif s in row["errors"]:
                cells.append("refused")
            elif s in row["skipped"]:
                cells.append("skipped")
            else:
                cells.append("-")
        print(f"| {row['n']} | {row['k']} | " + " | ".join(cells) +
              f" | {row.get('winner', '-')} | {row.get('gpu_winner', '-')} | {row.get('auto_pick', '-')}"
              f" | {row.get('auto_ran', '-')} | " +
              (f"{row['auto_over_best']:.3f}" if "auto_over_best" in row else "-") + " |")
    robust = [(r["n"], r["k"], r["auto_pick"], round(r["auto_pick_worst_over_best"], 3))
              for r in table if "auto_pick_worst_over_best" in r]
    if robust:
        print("\nauto table from several runs (pick, its worst total over the runs / that run's best):", robust)
    over = [r for r in table if r.get("auto_over_best", 0) > 1.05]
    print(f"\nauto within 5% of the best total: {sum(1 for r in table if 'auto_over_best' in r) - len(over)} cells;"
          f" over: {[(r['n'], r['k'], round(r['auto_over_best'], 3)) for r in over]}")

    # kBest: the pick per (N, k) bucket; an unmeasured cell takes the nearest smaller N's pick.
    rows, notes = [], []
    for i, n in enumerate(NS):
        names = []
        for k in KS:
            r = next((r for r in table if r["n"] == n and r["k"] == k and "auto_pick" in r), None)
            if r is None:
                prev = next((r for m in reversed(NS[:i]) for r in table
                             if r["n"] == m and r["k"] == k and "auto_pick" in r), None)
                names.append(prev["auto_pick"] if prev else "warp")
                notes.append(f"N={n} k={k}")
            else:
                names.append(r["auto_pick"])
        rows.append(names)
    print("\nkBest rows (gpu/select/auto_table.cpp):")
    text = "".join("    {" + ", ".join(f'"{x}"' for x in names) + "},  // N = " + str(n) + "\n"
                   for n, names in zip(NS, rows))
    print(text, end="")
    if notes:
        print("not measured (nearest smaller N's pick):", ", ".join(notes))
    if table_file:  # the format MANIFOLD_SELECT_TABLE reads (gpu/select/auto_table.h)
        with open(table_file, "w") as f:
            f.write("# --select auto table from " + ", ".join(os.path.basename(x) for x in inputs) + "\n")
            if notes:
                f.write("# not measured, the nearest smaller N's pick: " + ", ".join(notes) + "\n")
            f.write("k " + " ".join(str(k) for k in KS) + "\n")
            for n, names in zip(NS, rows):
                f.write(f"{n} " + " ".join(names) + "\n")
        print("wrote", table_file)
    if auto_file:
        with open(auto_file) as f:
            src = f.read()
        begin = src.index("// BEGIN kBest")
        end = src.index("    // END kBest")
        line_end = src.index("\n", begin) + 1
        note = ("    // not measured, the nearest smaller N's pick: " + ", ".join(notes) + "\n") if notes else ""
        src = src[:line_end] + note + text + src[end:]
        with open(auto_file, "w") as f:
            f.write(src)
        print("rewrote", auto_file)


if __name__ == "__main__":
    main()
