#!/usr/bin/env python3
"""Combines the per-case JSON of run.sh into one file and prints the table
(Markdown) quoted in bench/gpu/RESULTS.md."""
import glob
import json
import os
import sys

out_dir, out_file = sys.argv[1], sys.argv[2]
rows = []
for path in sorted(glob.glob(os.path.join(out_dir, "ours_*.json")) + glob.glob(os.path.join(out_dir, "alt_*.json"))):
    prefix = os.path.basename(path).split("_")[0] + "_"
    tag = os.path.basename(path)[len(prefix):-len(".json")]
    peer_tag = "_".join(tag.split("_")[:3])  # N_D_K: the peers run once whatever the precision
    ours = json.load(open(path))
    torch_path = os.path.join(out_dir, "torch_%s.json" % peer_tag)
    base = json.load(open(torch_path)) if os.path.exists(torch_path) else None
    faiss_path = os.path.join(out_dir, "faiss_%s.json" % peer_tag)
    faiss = json.load(open(faiss_path)) if os.path.exists(faiss_path) else None
    c = ours["cases"][0]
    if "error" in c:
        rows.append({"n": c["n"], "d": c["d"], "k": c["k"], "error": c["error"]})
        continue
    r = {"run": "default" if prefix == "ours_" else "MANIFOLD_GPU_GEMM=cublas",
         "n": c["n"], "d": c["d"], "k": c["k"], "device": ours["sgemm"]["device_name"],
         "sgemm_tflops": ours["sgemm"]["tflops"], "sgemm_math": ours["sgemm"]["math_mode"],
         "sgemm_tile_tflops": c.get("sgemm_tile_tflops"), "floor_s": c["floor_s"],
         "ours_median_s": c["median_wall_s"], "ours_wall_s": c["wall_s"], "over_floor": c["over_floor"],
         "stages_s": c["median_stage_s"], "extra": c["extra"],
         "precision": c["extra"].get("precision", "exact")}
    if base:
        r["torch_median_s"] = base["median_wall_s"]
        r["torch_wall_s"] = base["wall_s"]
        r["torch_version"] = base["torch"]
        r["speedup_over_torch"] = base["median_wall_s"] / c["median_wall_s"]
    if faiss:
        if "median_s" in faiss:
            r["faiss_median_s"] = faiss["median_s"]
            r["speedup_over_faiss"] = faiss["median_s"] / c["median_wall_s"]
        else:
            r["faiss_error"] = faiss.get("error", "no result")
    rows.append(r)
json.dump({"cases": rows}, open(out_file, "w"), indent=2)
print("| N | d | k | SGEMM TFLOP/s | floor s | ours s | ours / floor | of which hash wait s | ours w/o hash / floor "
      "| tile kernel | dot products s | select s | PyTorch s | speed-up |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    if "error" in r:
        print("| %d | %d | %d | error: %s |" % (r["n"], r["d"], r["k"], r["error"]))
        continue
    st = r["stages_s"]
    wait = st.get("fingerprint_wait", 0.0)
    print("| %d | %d | %d | %.1f | %.3f | %.3f | %.2f | %.3f | %.2f | %s | %.3f | %.3f | %s | %s |" % (
        r["n"], r["d"], r["k"], r["sgemm_tflops"], r["floor_s"], r["ours_median_s"], r["over_floor"], wait,
        (r["ours_median_s"] - wait) / r["floor_s"], r["extra"].get("tile_kernel", "?").split(" ")[0],
        st.get("gemm", 0), st.get("select", 0),
        "%.3f" % r["torch_median_s"] if "torch_median_s" in r else "-",
        "%.2fx" % r["speedup_over_torch"] if "speedup_over_torch" in r else "-"))

if any("faiss_median_s" in r or "faiss_error" in r for r in rows):
    print()
    print("| N | d | k | precision | FAISS s | fp32 floor s | ours s | ours / floor | vs FAISS | PyTorch s | vs PyTorch |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            continue
        faiss_s = "%.3f" % r["faiss_median_s"] if "faiss_median_s" in r else "refused" if "faiss_error" in r else "-"
        print("| %d | %d | %d | %s | %s | %.3f | %.3f | %.2f | %s | %s | %s |" % (
            r["n"], r["d"], r["k"], r["precision"], faiss_s, r["floor_s"], r["ours_median_s"], r["over_floor"],
            "%.2fx" % r["speedup_over_faiss"] if "speedup_over_faiss" in r else "-",
            "%.3f" % r["torch_median_s"] if "torch_median_s" in r else "-",
            "%.2fx" % r["speedup_over_torch"] if "speedup_over_torch" in r else "-"))
