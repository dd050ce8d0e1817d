#!/usr/bin/env bash
# On the GPU machine: `manifold run` end to end, the issue's case (1M x 128
# random normal float32 rows, k = 20, 10 coordinates, GPU backend), with two
# binaries of one bundle run in turn: each run's `steps:` line (the
# breakdown) and process wall time; then the two results compared byte for
# byte, what one fsync per output file would add, and the process's start
# and exit alone (`manifold --version`). The table is printed last.
#   bash bench/e2e/run.sh BUNDLE_DIR OUT_DIR [REPS]
# BUNDLE_DIR: made by shared/tools/device-bundle with bin/manifold-before
# and bin/manifold (the binaries compared). N and D override the shape,
# X names an existing .npy instead, BACKEND the backend (default gpu).
set -uo pipefail
bundle=$(cd "${1:?usage: run.sh BUNDLE_DIR OUT_DIR [REPS]}" && pwd)
out=${2:?usage: run.sh BUNDLE_DIR OUT_DIR [REPS]}
reps=${3:-3}
n=${N:-1000000}
d=${D:-128}
backend=${BACKEND:-gpu}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc; free -g; df -h "$work"; } \
  > "$out/machine.txt" 2>&1
if [[ -n "${X:-}" ]]; then
  ln -s "$(cd "$(dirname "$X")" && pwd)/$(basename "$X")" "$work/x.npy"
else
  python3 -c "import numpy as np, sys; np.save(sys.argv[1], np.random.default_rng(7).standard_normal(($n, $d), dtype=np.float32))" \
    "$work/x.npy" || exit 1
fi
for b in manifold-before manifold; do  # the process alone: loading its libraries, exiting
  for i in 1 2 3; do /usr/bin/time -f "$b %e" -a -o "$out/start.txt" "$bundle/run" "$b" --help > /dev/null; done
done
for i in $(seq "$reps"); do
  for b in manifold-before manifold; do
    /usr/bin/time -f "wall %e s" "$bundle/run" "$b" run "$work/x.npy" -k 20 --components 10 --backend "$backend" --overwrite \
      -o "$work/r_$b" > "$out/${b}_$i.txt" 2>&1
    echo "$b run $i: rc $?"
    cp "$work/r_$b/embedding.json" "$out/${b}_$i.json"
  done
done
# One fsync per file of the result just written (the last run's, dirty in the page cache).
python3 - "$work/r_manifold" > "$out/fsync.txt" <<'PY'
import os, sys, time
t = time.monotonic()
for name in sorted(os.listdir(sys.argv[1])):
    fd = os.open(os.path.join(sys.argv[1], name), os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
print("one fsync per file of the result: %.3f s" % (time.monotonic() - t))
PY
ls -l "$work/r_manifold" > "$out/files.txt"
for f in indices.npy distances.npy eigenvalues.npy embedding.npy point_index.npy embedding.csv embedding.vtp; do
  cmp -s "$work/r_manifold-before/$f" "$work/r_manifold/$f" && echo "$f identical" || echo "$f DIFFERS"
done > "$out/compare.txt"
python3 "$here/table.py" "$out" "$reps" | tee "$out/table.md"
