#!/usr/bin/env bash
# Installs every Debian package Manifold Explorer needs to build, test and run
# its demos (clang, its sanitizer and libFuzzer runtimes, lld and llvm's
# llvm-symbolizer are for the sanitized build and the fuzzing in
# scripts/test.sh). Run as root on Debian 12 (bookworm). Idempotent.
set -euo pipefail
if [ "$(id -u)" != 0 ]; then echo "setup-debian.sh: run as root (apt-get needs it)" >&2; exit 2; fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends \
  build-essential cmake ninja-build pkg-config git ca-certificates \
  libeigen3-dev libspectra-dev libopenblas-dev \
  libhdf5-dev libtiff-dev libpng-dev zlib1g-dev libminizip-dev \
  libavformat-dev libavcodec-dev libswscale-dev libavutil-dev \
  libopenmpi-dev openmpi-bin slurm-wlm munge \
  libgtest-dev nlohmann-json3-dev libxxhash-dev libcli11-dev clang-format \
  qt6-base-dev libqt6opengl6-dev libvtk9-dev libgl1-mesa-dri xvfb xauth \
  libfontconfig-dev fonts-dejavu-core \
  dataset-fashion-mnist freesasa \
  python3 python3-numpy python3-scipy \
  clang libclang-rt-14-dev llvm lld
