#!/usr/bin/env bash
# Before and after a change, on one GPU machine: the older build and this tree's, in the same call.
# Prepare here (carry build/carry and build/base):
#   cmake --preset default && cmake --build --preset default && bash scripts/stage_device_build.sh
#   build/base/multireduce.xz    the older tool (stripped, xz: the device tool carries 64 MiB; a tool
#                                whose benchmarks are a program of their own needs its multireduce-bench
#                                beside it: build/base/multireduce-bench.xz), and
#   build/base/src.tar.gz        its sources (git archive --prefix=baseline_src/ OLD -- python CMakeLists.txt cmake
#                                include src pyproject.toml README.md docs/python.md), for its Python package.
# Usage, from the repository root there:
#   bash scripts/device_compare.sh OUTDIR cpp      the GPU test programs, then bench SUITES (default reduce
#                                                  segmented stats window match), the older tool's run of each suite
#                                                  right before this tree's
#   bash scripts/device_compare.sh OUTDIR python   both Python packages installed (pip, built there), this tree's
#                                                  pytest (SKIP_PYTEST=1: none), then python -m multireduce.bench of
#                                                  each, older first
set -uo pipefail
out=${1:-${OUT:-/tmp/multireduce-out}}
mode=${2:-cpp}
shift 2 || true
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
case "$mode" in
  cpp)
    tar xJf build/carry/full.tar.xz -C build || exit 1
    staged_from=$(cat build/full/.staged_from 2>/dev/null)
    [ -n "$staged_from" ] || { echo "build/full/.staged_from is missing" >&2; exit 1; }
    find build/full -name '*.cmake' -print0 | xargs -0 sed -i "s|$staged_from/|$PWD/|g"
    xz -dkf build/base/multireduce.xz && chmod +x build/base/multireduce || exit 1
    if [ -f build/base/multireduce-bench.xz ]; then
      xz -dkf build/base/multireduce-bench.xz && chmod +x build/base/multireduce-bench || exit 1
    fi
    BIN=build/full QUIET=1 TESTS=programs BASELINE=build/base/multireduce \
      bash scripts/device_run.sh "$out" ${*:-reduce segmented stats window match} 2>&1 | tee "$out/run.log"
    ;;
  python)
    export PATH=/usr/local/cuda/bin:$PATH CMAKE_BUILD_PARALLEL_LEVEL=8 PYTHONUNBUFFERED=1
    tar xzf build/base/src.tar.gz -C /tmp || exit 1
    start=$(date +%s)
    for side in before after; do  # (both at once, 8 compile jobs each)
      src=$PWD; [ "$side" = before ] && src=/tmp/baseline_src
      python3 -m pip install --no-build-isolation --no-deps --no-cache-dir --target "/tmp/site_$side" "$src" \
        > "$out/pip_$side.txt" 2>&1 &
    done
    wait
    echo "pip install (before and after): $(( $(date +%s) - start )) s"; tail -n 2 "$out"/pip_*.txt
    if [ -z "${SKIP_PYTEST:-}" ]; then
      (cd python/tests && PYTHONPATH=/tmp/site_after timeout "${PYTEST_TIMEOUT:-300}" python3 -m pytest -q -p no:cacheprovider -rs) \
        > "$out/pytest.txt" 2>&1
      echo "pytest: exit $?"; tail -n 12 "$out/pytest.txt"
    fi
    for side in before after; do
      (cd /tmp && PYTHONPATH=/tmp/site_$side python3 -m multireduce.bench --json "$out/peers_$side.json") \
        > "$out/peers_$side.txt" 2>&1
      echo "peers ($side): exit $?"; cat "$out/peers_$side.txt"
    done
    ;;
  *) echo "mode must be cpp or python" >&2; exit 2 ;;
esac
# Everything in one file (the device tool brings back at most 8).
[ -n "${OUT:-}" ] && [ "$out" != "$OUT" ] && tar czf "$OUT/compare_$mode.tgz" -C "$out" . 2>/dev/null
exit 0
