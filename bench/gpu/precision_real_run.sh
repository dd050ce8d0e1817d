#!/usr/bin/env bash
# Exact against fast-exact on real stacks, every metric: Fashion-MNIST (test
# and train), simulated diffraction (noiseless and photon-counted, a hostile
# mix, 128 x 128 patterns) and random rows, each case `manifold bench
# --precision exact,fast-exact` on one GPU. The data is made on the GPU
# machine (the simulator on every core).
#   bash bench/gpu/precision_real_run.sh MANIFOLD_RUNNER OUT_DIR FASHION_DIR PDB_FILE
# MANIFOLD_RUNNER runs the CLI (e.g. ".device/b/run manifold"); FASHION_DIR
# holds Debian's dataset-fashion-mnist files (*-images-idx3-ubyte.gz).
# CASES (default below): "DATA:METRICS:KS:REPEATS ..." with DATA one of
# fashion10k fashion60k sim0 sim1 sim2 sim3 random, METRICS and KS comma lists.
# Writes OUT_DIR/prec_DATA_METRIC.json per case (manifold bench's JSON) and
# the table (bench/gpu/precision_real_table.py) to stdout.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage="usage: precision_real_run.sh MANIFOLD_RUNNER OUT_DIR FASHION_DIR PDB_FILE"
runner=${1:?$usage}
out=${2:?$usage}
fashion=${3:?$usage}
pdb=${4:?$usage}
work=${TMPDIR:-/tmp}/manifold-precision-real
mkdir -p "$out" "$work"
cases=${CASES:-"fashion10k:euclidean,cosine,pearson:10,100:3 fashion60k:euclidean,cosine,pearson:10,100,1000:3
  sim0:euclidean,cosine,pearson:10,100:3 sim1:euclidean,cosine,pearson:10,100:3 sim2:euclidean,cosine,pearson:10:3
  sim3:euclidean,cosine,pearson:10:3 random:euclidean,cosine:20:3"}

# The simulated stacks (1ubq unless PDB_FILE says otherwise).
simulate() {
  local name=$1
  shift
  [ -e "$work/$name.npy" ] || $runner simulate diffraction --pdb "$pdb" -q -o "$work/$name.npy" "$@"
}

data_of() {
  case $1 in
    fashion10k) echo "--data $fashion/t10k-images-idx3-ubyte.gz" ;;
    fashion60k) echo "--data $fashion/train-images-idx3-ubyte.gz" ;;
    sim0) simulate sim0 --count 50000 --size 64 --photons 0 --axis random && echo "--data $work/sim0.npy" ;;
    sim1) simulate sim1 --count 50000 --size 64 --axis y && echo "--data $work/sim1.npy" ;;
    sim2) simulate sim2 --count 30000 --size 64 --axis random --photons 1000 --background 50 --fluence-jitter 0.3 \
      --mix blank=0.1,single=0.8,double=0.1 && echo "--data $work/sim2.npy" ;;
    sim3) simulate sim3 --count 10000 --size 128 --axis random && echo "--data $work/sim3.npy" ;;
    random) echo "-n 100000 -d 256" ;;
  esac
}

for c in $cases; do
  IFS=: read -r name metrics ks reps <<<"$c"
  data=$(data_of "$name")
  for m in ${metrics//,/ }; do
    timeout 300 $runner bench --backend gpu --devices 0 $data --metric "$m" -k "$ks" --precision exact,fast-exact \
      --repeats "$reps" --warmup 1 --sgemm 0 -q --json "$out/prec_${name}_${m}.json" > /dev/null 2>> "$out/errors.log" ||
      echo "$name $m: rc $?" >> "$out/errors.log"
  done
done
python3 "$here/precision_real_table.py" "$out"/prec_*.json
