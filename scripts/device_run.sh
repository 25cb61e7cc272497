#!/usr/bin/env bash
# One call on the GPU machine: the GPU tests, the benchmarks and the SASS shuffle counts.
# Usage (from the repository root, with the default preset already built and carried):
#   bash scripts/device_run.sh OUTDIR
set -uo pipefail
out=${1:-${OUT:-/tmp/multireduce-out}}
mkdir -p "$out"
bin=build/default
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total --format=csv | tee "$out/gpu.txt"
"$bin/tests/multireduce_cuda_tests" --gtest_brief=1 2>&1 | tee "$out/cuda_tests.txt" | tail -n 5
"$bin/tests/multireduce_host_tests" --gtest_brief=1 2>&1 | tail -n 3
compute-sanitizer --tool memcheck "$bin/tests/multireduce_cuda_tests" --gtest_filter='CudaBlock.*:CudaOnline*' \
  --gtest_brief=1 > "$out/memcheck.txt" 2>&1; tail -n 3 "$out/memcheck.txt"
"$bin/src/multireduce" bench warp --json "$out/warp.json" 2>&1 | tee "$out/bench_warp.txt"
bash scripts/count_shfl.sh "$bin/src/multireduce" > "$out/shfl.txt" 2>&1; cat "$out/shfl.txt"
