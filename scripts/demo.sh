#!/bin/sh
# The main job on a fresh clone, in one command: build the tool alone (no tests, so no GoogleTest;
# with CUDA when nvcc is on PATH), then match the sample image pair's ORB descriptors with OpenCV's
# ratio test, write the matches to matches.csv and check them against the pair's true homography.
# Extra arguments go to `multireduce match` (for example --backend cpu).
set -eu
cd "$(dirname "$0")/.."
cuda=OFF
if command -v nvcc >/dev/null 2>&1; then cuda=ON; fi
cmake -S . -B build/demo -G Ninja -DCMAKE_BUILD_TYPE=Release -DMULTIREDUCE_BUILD_TESTS=OFF \
      -DMULTIREDUCE_ENABLE_CUDA="$cuda" >/dev/null
cmake --build build/demo --target multireduce_cli
D=tests/data/match/astronaut_warp
exec build/demo/src/multireduce match "$D/query_orb256.npy" "$D/train_orb256.npy" --ratio 0.8 -o matches.csv \
     --homography "$D/H.npy" --query-xy "$D/query_orb256_xy.npy" --train-xy "$D/train_orb256_xy.npy" --timing "$@"
