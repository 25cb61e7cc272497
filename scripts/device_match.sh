#!/usr/bin/env bash
# The matcher's kernels on the GPU machine, in one device call: the matcher tests (every kernel
# this GPU runs against the brute force), `multireduce bench match` (wgmma, mma.sync and popcount
# side by side), `bench match-all` with the wgmma kernel and with the mma.sync baseline, and an
# ncu reading of the tensor pipe for both tensor-core kernels. Logs under OUTDIR.
# Prepare here: cmake --build --preset default --target multireduce_cuda_device_tests multireduce-bench,
#   bash scripts/device_match.sh --stage     (build/carry/match.tar.xz)
# and run there, carrying build/carry:  bash scripts/device_match.sh OUTDIR [STEPS]
# (steps default: tests bench match-all ncu).
set -uo pipefail
if [ "${1:-}" = "--stage" ]; then
  rm -rf build/match && mkdir -p build/match build/carry
  cp build/default/src/multireduce-bench build/default/tests/multireduce_cuda_device_tests build/match/
  strip build/match/* 2>/dev/null || true
  # The libraries the benchmarks link that a GPU machine may lack (libzip and SQLite, with theirs).
  mkdir -p build/match/lib
  ldd build/default/src/multireduce-bench | awk '/lib(zip|sqlite3|bz2|crypto|fmt)\./ {print $3}' | xargs -r -I{} cp -L {} build/match/lib/
  tar cJf build/carry/match.tar.xz -C build match && du -sh build/carry/match.tar.xz
  exit 0
fi
out=${1:-${OUT:-/tmp/multireduce-out}}
shift || true
steps=${*:-tests bench match-all ncu}
mkdir -p "$out"
tar xJf build/carry/match.tar.xz -C build || exit 1
export LD_LIBRARY_PATH=$PWD/build/match/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
t0=$(date +%s)
for step in $steps; do
  case $step in
    tests) MULTIREDUCE_MATCH_DATA=$PWD/tests/data/match build/match/multireduce_cuda_device_tests \
             --gtest_filter='CudaMatch*:CudaCollection*' > "$out/tests.log" 2>&1; tail -5 "$out/tests.log" ;;
    bench) build/match/multireduce-bench match --json "$out/match.json" 2>&1 | tee "$out/bench_match.log" ;;
    match-all)
      for kernel in wgmma mma_sync; do
        build/match/multireduce-bench match-all --kernel $kernel --json "$out/match_all_$kernel.json" 2>&1 |
          tee "$out/match_all_$kernel.log"
      done ;;
    ncu)
      # The tensor pipe's share of the cycles (gmma: wgmma; imma: mma.sync) and the issue slots of
      # each tensor-core kernel's first 65,536^2 search at 256 bits (the bench's verification run).
      for pair in wgmma:knn_wgmma_kernel mma_sync:knn_tensor_kernel; do
        timeout 240 ncu --metrics regex:'sm__pipe_tensor_op_(gmma|imma)_cycles_active.avg.pct_of_peak_sustained_active',sm__inst_issued.avg.pct_of_peak_sustained_active,gpu__time_duration.sum \
          -k regex:"${pair#*:}" --launch-count 1 build/match/multireduce-bench match --kernel "${pair%%:*}" --repetitions 1 \
          --warmup 0 > "$out/ncu_${pair%%:*}.log" 2>&1
        grep -E "knn_|pipe_tensor|inst_issued|duration" "$out/ncu_${pair%%:*}.log" | head -8
      done ;;
  esac
  echo "[$(( $(date +%s) - t0 )) s] $step"
done
