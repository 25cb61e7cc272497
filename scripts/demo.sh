#!/bin/sh
# The main job on a fresh clone, in one command: build the tool alone (the CLI and the runtime: no
# tests, so no GoogleTest, and no benchmarks; with CUDA when nvcc is on PATH), then match every pair
# of the sample collection (8 views of one image, ORB descriptors) with OpenCV's ratio test, write
# the matches to matches.npz and to a new COLMAP database, matches.db (images, cameras, keypoints,
# matches), and check them against the views' true homographies.
# Usage: scripts/demo.sh [--cpu-only | --cuda] [multireduce match-all options...]
#   --cpu-only   build without CUDA even where nvcc is on PATH (faster to build; matches on the CPU)
#   --cuda       build with CUDA even where no GPU is visible (to copy the tool to a machine with one)
# Without either: with CUDA when nvcc is on PATH and a GPU is visible (nvidia-smi), else for the CPU.
# Other arguments go to `multireduce match-all` (for example --backend cpu: a CUDA build matching on the CPU).
set -eu
cd "$(dirname "$0")/.."
cpu_only=no
want_cuda=no
for arg in "$@"; do
  if [ "$arg" = --cpu-only ]; then cpu_only=yes; fi
  if [ "$arg" = --cuda ]; then want_cuda=yes; fi
done
if [ "$cpu_only" = yes ] && [ "$want_cuda" = yes ]; then
  echo "scripts/demo.sh: --cpu-only and --cuda contradict each other: give one" >&2
  exit 2
fi
# The rest, without --cpu-only and --cuda, for `multireduce match-all`.
for arg in "$@"; do
  shift
  if [ "$arg" != --cpu-only ] && [ "$arg" != --cuda ]; then set -- "$@" "$arg"; fi
done

for tool in cmake ninja; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    package=$tool; [ "$tool" = ninja ] && package=ninja-build
    echo "scripts/demo.sh: $tool not found (Debian/Ubuntu: sudo apt-get install $package)" >&2
    exit 1
  fi
done
if [ "$cpu_only" = yes ]; then
  cuda=OFF why="for the CPU only: --cpu-only given"
elif ! nvcc=$(command -v nvcc 2>/dev/null); then
  cuda=OFF why="for the CPU only: no nvcc on PATH"
  [ "$want_cuda" = yes ] && { echo "scripts/demo.sh: --cuda needs nvcc on PATH (export PATH=/usr/local/cuda/bin:\$PATH)" >&2; exit 1; }
elif [ "$want_cuda" = yes ]; then
  cuda=ON why="with CUDA: --cuda given, nvcc found at $nvcc"
elif nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  cuda=ON why="with CUDA: nvcc found at $nvcc and a GPU is visible"
else
  cuda=OFF why="for the CPU only: nvcc is here but no GPU is visible (nvidia-smi), so the match would run on the CPU anyway; --cuda builds CUDA too (minutes more)"
fi

started=$(date +%s)
mkdir -p build/demo
log=build/demo/configure.log
if ! cmake -S . -B build/demo -G Ninja -DCMAKE_BUILD_TYPE=Release -DMULTIREDUCE_BUILD_TESTS=OFF \
           -DMULTIREDUCE_BUILD_PYTHON=OFF -DMULTIREDUCE_ENABLE_CUDA="$cuda" > "$log" 2>&1; then
  cat "$log" >&2
  echo "scripts/demo.sh: configuring build/demo failed (above; also in $log)" >&2
  exit 1
fi
echo "scripts/demo.sh: building the multireduce tool $why"
# One compile per core (Ninja's default runs two more): the runtime's few long compiles then get a
# core each instead of sharing one, which on 2 cores ends the build sooner.
jobs=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}
if ! cmake --build build/demo --target multireduce_cli --parallel "$jobs"; then
  [ "$cuda" = ON ] && echo "scripts/demo.sh: the CUDA build failed; scripts/demo.sh --cpu-only builds without CUDA" >&2
  exit 1
fi
echo "scripts/demo.sh: built $why ($(( $(date +%s) - started )) s): build/demo/src/multireduce"
# The database is made anew each time (--image-size makes a new one and refuses to replace a file).
rm -f matches.db
exec build/demo/src/multireduce match-all tests/data/match/collection --ratio 0.8 -o matches.npz \
     --colmap-db matches.db --image-size 512 512 --homographies tests/data/match/collection_homographies.npy \
     --timing "$@"
