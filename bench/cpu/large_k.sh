#!/usr/bin/env bash
# The CPU backend at large k, one build against another on the same data in
# one run, alternating, so a shared machine's drift hits both alike:
#   bash bench/cpu/large_k.sh NEW_MANIFOLD OLD_MANIFOLD [ROUNDS] [K,K...]
# Data: Fashion-MNIST's t10k images (Debian's dataset-fashion-mnist).
# Writes bench/cpu/large_k.json: every run's wall time and stages, and the
# medians per build and k.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
new=${1:?usage: large_k.sh NEW_MANIFOLD OLD_MANIFOLD [ROUNDS] [K,K...]}
old=${2:?usage: large_k.sh NEW_MANIFOLD OLD_MANIFOLD [ROUNDS] [K,K...]}
rounds=${3:-3}; ks=${4:-10,100,1000,4096}
data=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$rounds"); do
  for build in new old; do
    bin=$new; [ "$build" = old ] && bin=$old
    "$bin" bench --backend cpu --data "$data" -n 10000 -k "$ks" --repeats 1 --warmup 0 --json "$tmp/$build-$r.json" >/dev/null
  done
done
python3 - "$tmp" "$rounds" "$here/large_k.json" <<'PY'
import json, os, platform, statistics, sys
tmp, rounds, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
runs = {b: [json.load(open(os.path.join(tmp, "%s-%d.json" % (b, r)))) for r in range(1, rounds + 1)] for b in ("new", "old")}
table = {}
for b, rs in runs.items():
    for r in rs:
        for c in r["cases"]:
            e = table.setdefault(str(c["k"]), {}).setdefault(b, {"wall_s": [], "stages": []})
            e["wall_s"].append(c["median_wall_s"])
            e["stages"].append(c["median_stage_s"])
for k, e in table.items():
    for b in e.values():
        b["median_wall_s"] = statistics.median(b["wall_s"])
    e["old_over_new"] = e["old"]["median_wall_s"] / e["new"]["median_wall_s"]
result = {"machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()},
          "data": "Fashion-MNIST t10k, 10000 x 784", "rounds": rounds, "k": table}
json.dump(result, open(out, "w"), indent=2)
print("| k | old s | new s | old / new |")
print("|---|---|---|---|")
for k in sorted(table, key=int):
    e = table[k]
    print("| %s | %.3f | %.3f | %.2fx |" % (k, e["old"]["median_wall_s"], e["new"]["median_wall_s"], e["old_over_new"]))
PY
