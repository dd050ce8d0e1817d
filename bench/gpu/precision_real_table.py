#!/usr/bin/env python3
"""The table of precision_real_run.sh: for each data set, metric and k, the
exact and fast-exact walls (medians), their ratio and the rows each left
uncertified by its list (rescanned or scanned exactly).
  python3 bench/gpu/precision_real_table.py OUT/prec_*.json [--json FILE]"""
import json
import os
import sys

args = sys.argv[1:]
out_json = None
if "--json" in args:
    i = args.index("--json")
    out_json = args[i + 1]
    del args[i:i + 2]

rows = {}
device = None
for path in args:
    name = os.path.basename(path)[len("prec_"):-len(".json")].rsplit("_", 1)[0]
    run = json.load(open(path))
    device = device or run.get("sgemm", {}).get("device_name")
    for c in run["cases"]:
        key = (name, c["metric"], c["k"])
        r = rows.setdefault(key, {"data": name, "n": c["n"], "d": c["d"], "metric": c["metric"], "k": c["k"]})
        if "error" in c:
            r[c.get("precision", "exact") + "_error"] = c["error"]
            continue
        e = c["extra"]
        r[c["precision"]] = {"median_s": c["median_wall_s"], "wall_s": c["wall_s"],
                             "uncertified_rows": e.get("uncertified_rows"),
                             "rescanned_rows": e.get("rescanned_rows"), "fallback_rows": e.get("fallback_rows"),
                             "translated_columns": e.get("translated_columns"),
                             "translation_norm_ratio": e.get("translation_norm_ratio")}

print("device:", device)
print("| data (N x d) | metric | k | exact s | fast-exact s | exact / fast-exact | uncertified rows exact, fast-exact "
      "| translated columns |")
print("|---|---|---|---|---|---|---|---|")
for key in sorted(rows):
    r = rows[key]
    ex, fe = r.get("exact"), r.get("fast-exact")
    if not ex or not fe:
        print("| %s (%d x %d) | %s | %d | %s |" % (r["data"], r["n"], r["d"], r["metric"], r["k"],
                                                  r.get("exact_error") or r.get("fast-exact_error") or "missing"))
        continue
    print("| %s (%d x %d) | %s | %d | %.4f | %.4f | %.2f | %s, %s | %s |" % (
        r["data"], r["n"], r["d"], r["metric"], r["k"], ex["median_s"], fe["median_s"],
        ex["median_s"] / fe["median_s"], ex["uncertified_rows"], fe["uncertified_rows"], ex["translated_columns"]))
if out_json:
    json.dump({"device": device, "cases": [rows[k] for k in sorted(rows)]}, open(out_json, "w"), indent=1)
