#!/usr/bin/env bash
# One call on the GPU machine: the GPU tests, the benchmarks and the SASS shuffle counts.
# Usage (from the repository root, with the default preset built here and its binaries carried):
#   bash scripts/device_run.sh OUTDIR [SUITES...]     (suites default: warp reduce segmented stats window match)
# SKIP_TESTS=1 runs only the benchmarks (to split a long session over two calls). With the segmented
# suite, CUB 3.1's fixed-size overload is timed too when $CUB_FIXED_BIN (default
# build/cub31/src/multireduce_bench_cub_fixed, see docs/results.md) was built and carried.
set -uo pipefail
out=${1:-${OUT:-/tmp/multireduce-out}}
shift || true
suites=${*:-warp reduce segmented stats window match}
mkdir -p "$out"
bin=${BIN:-build/default}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total --format=csv | tee "$out/gpu.txt"
export MULTIREDUCE_MATCH_DATA=${MULTIREDUCE_MATCH_DATA:-$PWD/tests/data/match}
tests=${SKIP_TESTS:+no}
for t in multireduce_cuda_tests multireduce_cuda_device_tests; do
  [ -n "$tests" ] && break
  if [ -x "$bin/tests/$t" ]; then
    "$bin/tests/$t" --gtest_brief=1 > "$out/$t.txt" 2>&1; echo "$t: exit $?"; grep -E "PASSED|FAILED|SKIPPED" "$out/$t.txt" | tail -n 5
  fi
done
if [ -z "$tests" ] && [ -x "$bin/tests/multireduce_cuda_device_tests" ]; then
  compute-sanitizer --tool memcheck "$bin/tests/multireduce_cuda_device_tests" --gtest_brief=1 \
    --gtest_filter='CudaDeviceReduce.NonCommutative*:CudaDeviceStatistics.*:CudaDeviceSegmented.Offsets*:CudaDeviceWindow.*:CudaDeviceBadInput.*:CudaMatch.BothPathsReproduceOpenCv:CudaMatch.BadArgumentsAreErrors:CudaMatch.Batched*:CudaMatch.Pieces*' \
    > "$out/memcheck.txt" 2>&1; echo "memcheck: exit $?"; tail -n 2 "$out/memcheck.txt"
  compute-sanitizer --tool racecheck "$bin/tests/multireduce_cuda_device_tests" --gtest_brief=1 \
    --gtest_filter='CudaDeviceSegmented.*:CudaDeviceWindow.*' > "$out/racecheck.txt" 2>&1
  echo "racecheck: exit $?"; tail -n 2 "$out/racecheck.txt"
fi
for s in $suites; do
  "$bin/src/multireduce" bench "$s" --json "$out/bench_$s.json" > "$out/bench_$s.txt" 2>&1; echo "bench $s: exit $?"
  cat "$out/bench_$s.txt"
done
cub_fixed=${CUB_FIXED_BIN:-build/cub31/src/multireduce_bench_cub_fixed}
if [[ " $suites " == *" segmented "* ]] && [ -x "$cub_fixed" ]; then
  "$cub_fixed" --json "$out/bench_cub_fixed.json" > "$out/bench_cub_fixed.txt" 2>&1; echo "bench cub fixed-size: exit $?"
  cat "$out/bench_cub_fixed.txt"
fi
if [[ " $suites " == *" warp "* ]]; then
  bash scripts/count_shfl.sh "$bin/src/multireduce" > "$out/shfl.txt" 2>&1; cat "$out/shfl.txt"
fi
# The CLI's NumPy cases on the GPU machine (auto picks the GPU there), when $bin/tests/cli came
# along; cmake lives elsewhere there, so the carried test file is pointed at it.
if [ -z "$tests" ] && [ -f "$bin/tests/cli/CTestTestfile.cmake" ]; then
  sed -i "s|\"[^\"]*/cmake\" \"-DCLI=|\"$(command -v cmake)\" \"-DCLI=|" "$bin/tests/cli/CTestTestfile.cmake"
  (cd "$bin/tests/cli" && ctest -j8 --output-on-failure) > "$out/cli_tests.txt" 2>&1; echo "cli tests: exit $?"
  grep -E "tests passed|Failed" "$out/cli_tests.txt" | tail -n 5
fi
