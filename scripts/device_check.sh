#!/usr/bin/env bash
# Everything the GPU machine checks, in one device call that fits the tool's 10 minutes: the GPU
# test programs, the benchmarks, the Python package (pip install, pytest, python -m
# multireduce.bench), then the sanitizers, the CLI's NumPy cases and the consumer project with
# whatever time is left (they take the longest and rarely change). Logs under OUTDIR.
# Prepare here: cmake --preset default && cmake --build --preset default, then
#   bash scripts/stage_device_build.sh          (build/carry/full.tar.xz: the built tree, packed)
# and run there, carrying build/carry:
#   bash scripts/device_check.sh OUTDIR [SUITES...]   (suites default: segmented kepler harris reduce)
set -uo pipefail
out=${1:-${OUT:-/tmp/multireduce-out}}
shift || true
suites=${*:-segmented kepler harris reduce}
mkdir -p "$out"
t0=$(date +%s)
elapsed() { echo $(( $(date +%s) - t0 )); }
# The staged tree, its CTest files pointed at this checkout (only the .cmake text files: the
# binaries' own strings must keep their lengths).
tar xJf build/carry/full.tar.xz -C build || exit 1
staged_from=$(cat build/full/.staged_from 2>/dev/null)
[ -n "$staged_from" ] || { echo "build/full/.staged_from is missing: stage with scripts/stage_device_build.sh" >&2; exit 1; }
find build/full -name '*.cmake' -print0 | xargs -0 sed -i "s|$staged_from/|$PWD/|g"
export BIN=build/full QUIET=1
TESTS=programs bash scripts/device_run.sh "$out" $suites 2>&1 | tee "$out/run.log" | grep -E "exit|PASSED|FAILED|SKIPPED|^NVIDIA"
echo "[$(elapsed) s] the GPU test programs and the benchmarks"
PYTHONUNBUFFERED=1 bash scripts/device_python.sh "$out"
echo "[$(elapsed) s] the Python package"
left=$(( 520 - $(elapsed) ))
if [ "$left" -gt 120 ]; then
  TESTS=slow timeout "$left" bash scripts/device_run.sh "$out/slow" none > "$out/slow_tests.log" 2>&1
  echo "[$(elapsed) s] sanitizers, CLI cases, consumer"
  grep -E "exit|passed|ERROR SUMMARY|RACECHECK SUMMARY" "$out/slow_tests.log"
fi
