#!/usr/bin/env python3
"""Markdown tables of the matrix (matrix.py's JSON): eigensolve seconds per
cell (or the failure), the slowest cells, and whether every degenerate or
failed cell said so.   python3 table.py cpu.json [gpu.json ...]"""
import json
import sys

EPS = ["median", "auto", "0.1x", "10x"]


def cell_text(c):
    if c["exit"] != 0:
        return "budget" if "no convergence within the budget" in c.get("error", "") else "FAIL"
    t = "%.2f" % c["eigensolve_s"]
    flags = []
    if c["weakly_joined_points"]:
        flags.append("-%d" % c["weakly_joined_points"])
    if c["localised_coordinates"]:
        flags.append("L%d" % len(c["localised_coordinates"]))
    return t + (" (" + ", ".join(flags) + ")" if flags else "")


for path in sys.argv[1:]:
    r = json.load(open(path))
    cells = r["cells"]
    print("### %s (eigensolver %s, %s)\n" % (path, r["eigensolver"], r.get("gpu", r["host"])))
    print("| data | metric | k | " + " | ".join("ε " + e for e in EPS) + " |")
    print("|---|---|---|" + "---|" * len(EPS))
    rows = {}
    for c in cells:
        rows.setdefault((c["data"], c["metric"], c["k"]), {})[c["epsilon_rule"]] = c
    for (data, metric, k), row in rows.items():
        print("| %s | %s | %d | %s |" % (data, metric, k, " | ".join(cell_text(row[e]) if e in row else "" for e in EPS)))
    ok = [c for c in cells if c["exit"] == 0]
    silent = [c for c in ok if (c["localised_coordinates"] or c["weakly_joined_points"] or c["near_one_coordinates"])
              and c["warned_on_stderr"] == 0]
    unexplained = [c for c in cells if c["exit"] != 0 and c.get("error_lines") != 1]
    default = [c for c in ok if c["epsilon_rule"] == "median"]
    print("\nDefault-ε cells: %d, slowest eigensolve %.3f s; all cells: %d, %d stopped at the budget (each with its "
          "one line: %s), degenerate results without a warning: %d.\n" %
          (len(default), max(c["eigensolve_s"] for c in default), len(cells), sum(c["exit"] != 0 for c in cells),
           "yes" if not unexplained else "NO", len(silent)))
    print("Slowest cells: " + "; ".join("%s %s k=%d ε %s %.2f s" % (c["data"], c["metric"], c["k"], c["epsilon_rule"],
                                                                   c["eigensolve_s"])
                                        for c in sorted(ok, key=lambda c: -c["eigensolve_s"])[:5]) + ".\n")
