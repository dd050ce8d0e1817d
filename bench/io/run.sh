#!/usr/bin/env bash
# Builds bench_io against the project's core library and times what `run`
# spends around the graph and the embedding (see RESULTS.md).
#   bash bench/io/run.sh [BUILD_DIR] [OUT_JSON] [bench_io options: -n -d -k -m --repeats --dir]
# BUILD_DIR (default build) must hold a built core/libmanifold_core.a.
# With REV=<git revision> the writers and readers timed (embedding_io, npy)
# are that revision's, compiled here and linked ahead of the library: the
# "before" of a change, on the same machine in the same session.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
json=${2:-$root/bench/io/results.json}
shift $(( $# > 2 ? 2 : $# ))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(-O3 -DNDEBUG -std=c++20)
includes=(-I"$root/core/include")
objects=()
if [[ -n "${REV:-}" ]]; then
  mkdir -p "$work/include/manifold"
  git -C "$root" show "$REV:core/include/manifold/embedding_io.h" > "$work/include/manifold/embedding_io.h"
  includes=(-I"$work/include" "${includes[@]}")
  for f in core/src/diffusion/embedding_io.cpp core/src/npy.cpp; do
    git -C "$root" show "$REV:$f" > "$work/$(basename "$f")"
    c++ "${flags[@]}" "${includes[@]}" -c "$work/$(basename "$f")" -o "$work/$(basename "$f" .cpp).o"
    objects+=("$work/$(basename "$f" .cpp).o")
  done
fi
c++ "${flags[@]}" "${includes[@]}" "$root/bench/io/bench_io.cpp" "${objects[@]}" "$build/core/libmanifold_core.a" \
  -lxxhash -lpng -ltiff -lz -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5 -lopenblas -lpthread -o "$work/bench_io"
"$work/bench_io" --json "$json" "$@"
