#!/usr/bin/env bash
# One call on the GPU machine: the GPU tests, the sanitizers, the CLI's NumPy cases, the CUDA
# consumer, the benchmarks and the SASS shuffle counts.
# Usage (from the repository root, with the default preset built here and its binaries staged by
# scripts/stage_device_build.sh):
#   bash scripts/device_run.sh OUTDIR [SUITES...]     (suites default: warp reduce segmented stats window match)
# TESTS picks the tests: all (the default), programs (the GPU test programs alone), slow (the
# sanitizers, the CLI cases and the consumer alone) or none (SKIP_TESTS=1 says the same); a hung
# test program is stopped after TEST_TIMEOUT seconds (300). The suite `none` runs no benchmark.
# The benchmarks run as `$BIN/src/multireduce bench SUITE`, which runs $BIN/src/multireduce-bench
# (staged beside it). BASELINE=path runs every suite with that older `multireduce` binary too (one
# of this layout with its multireduce-bench beside it), right before this tree's, in the same
# call (the before/after table of a refactoring). With the segmented suite, CUB 3.1's fixed-size
# overload is timed too when $CUB_FIXED_BIN (default build/cub31/src/multireduce_bench_cub_fixed,
# see docs/results.md) was built and carried.
set -uo pipefail
out=${1:-${OUT:-/tmp/multireduce-out}}
shift || true
suites=${*:-warp reduce segmented stats window match}
[ "$suites" = none ] && suites=""
mkdir -p "$out"
bin=${BIN:-build/default}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv | tee "$out/gpu.txt"
export MULTIREDUCE_MATCH_DATA=${MULTIREDUCE_MATCH_DATA:-$PWD/tests/data/match}
tests=${TESTS:-all}
[ -n "${SKIP_TESTS:-}" ] && tests=none
case "$tests" in all|programs|slow|none) ;; *) echo "TESTS must be all, programs, slow or none" >&2; exit 2 ;; esac
if [ "$tests" = all ] || [ "$tests" = programs ]; then
  for t in multireduce_cuda_tests multireduce_cuda_device_tests multireduce_runtime_tests multireduce_backend_table_tests \
           multireduce_capture_tests; do
    if [ -x "$bin/tests/$t" ]; then
      timeout "${TEST_TIMEOUT:-300}" "$bin/tests/$t" --gtest_brief=1 > "$out/$t.txt" 2>&1; echo "$t: exit $?"
      grep -E "PASSED|FAILED|SKIPPED" "$out/$t.txt" | tail -n 5
    fi
  done
fi
if [ "$tests" = all ] || [ "$tests" = slow ]; then
  if [ -x "$bin/tests/multireduce_cuda_device_tests" ]; then
    compute-sanitizer --tool memcheck "$bin/tests/multireduce_cuda_device_tests" --gtest_brief=1 \
      --gtest_filter='CudaDeviceReduce.NonCommutative*:CudaDeviceStatistics.*:CudaDeviceSegmented.Offsets*:CudaDeviceWindow.*:CudaDeviceBadInput.*:CudaMatch.BothPathsReproduceOpenCv:CudaMatch.BadArgumentsAreErrors:CudaMatch.Batched*:CudaMatch.Pieces*' \
      > "$out/memcheck.txt" 2>&1; echo "memcheck: exit $?"; tail -n 2 "$out/memcheck.txt"
    compute-sanitizer --tool racecheck "$bin/tests/multireduce_cuda_device_tests" --gtest_brief=1 \
      --gtest_filter='CudaDeviceSegmented.*:CudaDeviceWindow.*' > "$out/racecheck.txt" 2>&1
    echo "racecheck: exit $?"; tail -n 2 "$out/racecheck.txt"
  fi
  # The CLI's NumPy cases on the GPU machine (auto picks the GPU there), when $bin/tests/cli came
  # along; cmake lives elsewhere there, so the carried test file is pointed at it.
  if [ -f "$bin/tests/cli/CTestTestfile.cmake" ]; then
    sed -i "s|\"[^\"]*/cmake\" \"-DCLI=|\"$(command -v cmake)\" \"-DCLI=|" "$bin/tests/cli/CTestTestfile.cmake"
    (cd "$bin/tests/cli" && ctest -j8 --output-on-failure -E '^sanitized\.') > "$out/cli_tests.txt" 2>&1
    echo "cli tests: exit $?"
    grep -E "tests passed|Failed" "$out/cli_tests.txt" | tail -n 5
  fi
  # A project with nothing but find_package(multireduce): its .cu file built and run on the GPU.
  cmake -DSOURCE="$PWD" -DWORK=/tmp/consumer_work -DGENERATOR=Ninja -DCUDA=ON -P tests/consumer/run_consumer.cmake \
    > "$out/consumer.txt" 2>&1; echo "consumer: exit $?"; tail -n 3 "$out/consumer.txt"
fi
for s in $suites; do
  if [ -n "${BASELINE:-}" ]; then
    "$BASELINE" bench "$s" --json "$out/bench_${s}_before.json" > "$out/bench_${s}_before.txt" 2>&1
    echo "bench $s (before): exit $?"
  fi
  "$bin/src/multireduce" bench "$s" --json "$out/bench_$s.json" > "$out/bench_$s.txt" 2>&1; echo "bench $s: exit $?"
  [ -z "${QUIET:-}" ] && cat "$out/bench_$s.txt"
done
cub_fixed=${CUB_FIXED_BIN:-build/cub31/src/multireduce_bench_cub_fixed}
if [[ " $suites " == *" segmented "* ]] && [ -x "$cub_fixed" ]; then
  "$cub_fixed" --json "$out/bench_cub_fixed.json" > "$out/bench_cub_fixed.txt" 2>&1; echo "bench cub fixed-size: exit $?"
  cat "$out/bench_cub_fixed.txt"
fi
if [[ " $suites " == *" warp "* ]]; then
  bash scripts/count_shfl.sh "$bin/src/multireduce-bench" > "$out/shfl.txt" 2>&1; tail -n 12 "$out/shfl.txt"
fi
