#!/bin/sh
# Diffusion-map eigensolve against SciPy's eigsh on the same matrix, same
# tolerance and number of eigenpairs, in alternating rounds on the same
# machine (other load hits both alike), plus the re-embedding latency
# (rediffuse: warm LOBPCG to the tolerance and to 1e-6, against the full solve).
# Writes bench/diffusion/results.json.
#
#   bench/diffusion/run.sh [BUILD_DIR]        (default: build)
#   env: N (100000) K (20) ROUNDS (3) TOL (1e-10) WORK (scratch folder, keeps the graph)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
manifold=$build/app/manifold
[ -x "$manifold" ] || { echo "run.sh: $manifold not found; build the manifold target first" >&2; exit 1; }
N=${N:-100000}
K=${K:-20}
ROUNDS=${ROUNDS:-3}
TOL=${TOL:-1e-10}
WORK=${WORK:-${TMPDIR:-/tmp}/manifold-bench-diffusion}
mkdir -p "$WORK"

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import scipy' 2>/dev/null; then
  # Debian's python3-scipy lives with the system interpreter.
  PYTHON=/usr/bin/python3
  "$PYTHON" -c 'import scipy' 2>/dev/null || { echo "run.sh: SciPy not found (apt-get install python3-scipy)" >&2; exit 1; }
fi

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
r=1
while [ "$r" -le "$ROUNDS" ]; do
  echo "== round $r of $ROUNDS"
  "$manifold" bench embed -n "$N" -k "$K" --repeats 1 --tolerance "$TOL" --graph "$WORK/graph" \
    --matrix "$WORK/matrix" --json "$WORK/manifold-$r.json"
  "$PYTHON" "$here/scipy_eigsh.py" --matrix "$WORK/matrix" --tolerance "$TOL" --repeats 1 --json "$WORK/scipy-$r.json"
  r=$((r + 1))
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

"$PYTHON" - "$WORK" "$ROUNDS" "$here/results.json" "$load_before" "$load_after" <<'PY'
import json, os, platform, statistics, sys
work, rounds, out, load0, load1 = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
ours = [json.load(open(os.path.join(work, "manifold-%d.json" % r))) for r in range(1, rounds + 1)]
scipy = [json.load(open(os.path.join(work, "scipy-%d.json" % r))) for r in range(1, rounds + 1)]
med = lambda xs: statistics.median(xs)
t_ours = [o["eigensolve"]["runs_s"][0] for o in ours]
t_bare = [o["eigensolve_without_lock_check"]["runs_s"][0] for o in ours]
t_scipy = [s["runs_s"][0] for s in scipy]
ev_ours, ev_scipy = ours[-1]["eigensolve"]["eigenvalues"], scipy[-1]["eigenvalues"]
cpu = ""
try:
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
except OSError:
    pass
res = {
    "what": "top eigenpairs of the diffusion operator D^-1/2 K D^-1/2, manifold (Spectra, multi-threaded CSR) vs SciPy eigsh (ARPACK)",
    "machine": {"cpu": cpu, "cores": os.cpu_count(), "loadavg_before": load0, "loadavg_after": load1,
                "python": platform.python_version(), "scipy": scipy[-1]["scipy"]},
    "data": ours[-1]["data"],
    "matrix": ours[-1]["matrix"],
    "eigenpairs": ours[-1]["eigensolve"]["eigenpairs"],
    "tolerance": ours[-1]["eigensolve"]["tolerance"],
    "rounds": rounds,
    "manifold": {"runs_s": t_ours, "median_s": med(t_ours), "matvecs": ours[-1]["eigensolve"]["matvecs"],
                 "lock_check_matvecs": ours[-1]["eigensolve"]["lock_check_matvecs"],
                 "lock_check_recovered": ours[-1]["eigensolve"]["lock_check_recovered"],
                 "lock_check_settled": ours[-1]["eigensolve"]["lock_check_settled"],
                 "ncv": ours[-1]["eigensolve"]["ncv"], "max_residual": ours[-1]["eigensolve"]["max_residual"],
                 "lock_check": True},
    "manifold_without_lock_check": {"runs_s": t_bare, "median_s": med(t_bare),
                                    "matvecs": ours[-1]["eigensolve_without_lock_check"]["matvecs"],
                                    "max_residual": ours[-1]["eigensolve_without_lock_check"]["max_residual"]},
    "scipy": {"runs_s": t_scipy, "median_s": med(t_scipy), "matvecs": scipy[-1]["matvecs"], "ncv": scipy[-1]["ncv"],
              "max_residual": scipy[-1]["max_residual"]},
    "ratio_manifold_over_scipy": med(t_ours) / med(t_scipy),
    "ratio_without_lock_check": med(t_bare) / med(t_scipy),
    "max_eigenvalue_difference": max(abs(a - b) for a, b in zip(ev_ours, ev_scipy)),
    "reembed": {
        change: {
            "parameters": {"k": ours[-1]["reembed"][change]["k"], "epsilon": ours[-1]["reembed"][change]["epsilon"]},
            "full_median_s": med([o["reembed"][change]["full"]["runs_s"][0] for o in ours]),
            "full_matvecs": ours[-1]["reembed"][change]["full"]["solver"]["matvecs"],
            "full_max_residual": ours[-1]["reembed"][change]["full"]["solver"]["max_residual"],
            "full_stages_s": ours[-1]["reembed"][change]["full"]["stages_s"],
            # The to-the-tolerance solve's 1e-6 iterate, handed over on the way (RediffusePreview).
            "warm_iterate_1e-6_shown_runs_s": [o["reembed"][change]["warm"].get("iterate_1e-6_shown", {}).get("runs_s", [None])[0]
                                               for o in ours],
            **{
                prefix + key: value
                for prefix, part in (("warm_", "warm"), ("warm_1e-6_", "warm_1e-6"))
                for key, value in {
                    "median_s": med([o["reembed"][change][part]["runs_s"][0] for o in ours]),
                    "runs_s": [o["reembed"][change][part]["runs_s"][0] for o in ours],
                    "tolerance": ours[-1]["reembed"][change][part]["solver"]["tolerance"],
                    "converged": ours[-1]["reembed"][change][part]["solver"]["converged"],
                    "max_residual": ours[-1]["reembed"][change][part]["solver"]["max_residual"],
                    "iterations": ours[-1]["reembed"][change][part]["solver"].get("iterations"),
                    "matvecs": ours[-1]["reembed"][change][part]["solver"]["matvecs"],
                    "preconditioner_applies": ours[-1]["reembed"][change][part]["solver"].get("preconditioner_applies"),
                    "preconditioner_setup_s": ours[-1]["reembed"][change][part]["solver"].get("preconditioner_setup_s"),
                    "preconditioner_s": ours[-1]["reembed"][change][part]["solver"].get("preconditioner_s"),
                    "amg_level_rows": ours[-1]["reembed"][change][part]["solver"].get("amg_level_rows"),
                    "worst_abs_cos_to_full": ours[-1]["reembed"][change][part]["worst_abs_cos_to_full"],
                    "clusters": ours[-1]["reembed"][change][part]["clusters"],
                    "largest_cluster": ours[-1]["reembed"][change][part]["largest_cluster"],
                    "max_eigenvalue_difference_to_full":
                        ours[-1]["reembed"][change][part]["max_eigenvalue_difference_to_full"],
                    "max_rel_error_1_minus_lambda": ours[-1]["reembed"][change][part]["max_rel_error_1_minus_lambda"],
                    "stages_s": ours[-1]["reembed"][change][part]["stages_s"],
                }.items()
            },
        }
        for change in ("k_change", "epsilon_change")
    },
}
for change in ("k_change", "epsilon_change"):
    shown = [t for t in res["reembed"][change]["warm_iterate_1e-6_shown_runs_s"] if t is not None]
    res["reembed"][change]["warm_iterate_1e-6_shown_median_s"] = med(shown) if shown else None
json.dump(res, open(out, "w"), indent=2)
print("eigensolve: manifold %.3f s (without lock check %.3f s), scipy %.3f s: ratio %.2f (%.2f); mat-vecs %d (lock check %d) vs %d"
      % (res["manifold"]["median_s"], res["manifold_without_lock_check"]["median_s"], res["scipy"]["median_s"],
         res["ratio_manifold_over_scipy"], res["ratio_without_lock_check"], res["manifold"]["matvecs"],
         res["manifold"]["lock_check_matvecs"], res["scipy"]["matvecs"]))
for change in ("k_change", "epsilon_change"):
    r = res["reembed"][change]
    print("re-embed (%s): full solve %.3f s (residual %.1e); rediffuse %.3f s (%s iterations, residual %.1e, worst cos "
          "to full %.10f); rediffuse to 1e-6 %.3f s (residual %.1e, worst cos %.10f)"
          % (change, r["full_median_s"], r["full_max_residual"], r["warm_median_s"], r["warm_iterations"],
             r["warm_max_residual"], r["warm_worst_abs_cos_to_full"], r["warm_1e-6_median_s"],
             r["warm_1e-6_max_residual"], r["warm_1e-6_worst_abs_cos_to_full"]))
    if r["warm_iterate_1e-6_shown_median_s"] is not None:
        print("  the to-the-tolerance solve handed its 1e-6 iterate over at %.3f s" % r["warm_iterate_1e-6_shown_median_s"])
print("eigenvalues agree to %.1e; written %s" % (res["max_eigenvalue_difference"], out))
PY
