#!/usr/bin/env bash
# Sets up (as root: Debian packages), builds, and runs the built-in demo:
# the desktop application when a display is present, else the command line
# (simulated ubiquitin diffraction -> exact k-NN graph -> diffusion map).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ]; then bash scripts/setup-debian.sh; fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$(nproc)"
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -x build/app/manifold-explorer ]; then
  # Debian's VTK starts OpenGL through GLEW/GLX: use the X11 platform plugin.
  QT_QPA_PLATFORM=xcb exec build/app/manifold-explorer --demo
fi
out=${MANIFOLD_DEMO_OUT:-demo-output}
build/app/manifold run --demo -o "$out"
echo "demo output in $out/ (indices.npy, distances.npy, graph.json, embedding.npy, embedding.csv, embedding.vtp, ...)"
