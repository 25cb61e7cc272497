#!/usr/bin/env bash
# One call on the GPU machine for the published kernels re-measured (docs/seeds.md): every benchmark
# suite in one `multireduce bench` run (JSON and CSV, the JSON rewritten after each suite), CUB
# 3.1's fixed-size segmented overload (multireduce_bench_cub_fixed, compiled there against the CCCL
# headers CuPy bundles, meanwhile), and with RACECHECK=1 compute-sanitizer racecheck over the
# published kernels (src/bench/classic_kernels/).
# Usage, from the repository root: BIN=path/to/multireduce [JSON_INCLUDE=dir] bash scripts/device_seeds.sh OUTDIR
# (the benchmarks run as multireduce-bench beside BIN; an older tool without one, as BIN bench)
# Then, anywhere with the Python package: python -m multireduce.plot OUTDIR/run.json OUTDIR/cub_fixed.json -o DIR
set -uo pipefail
out=${1:?usage: device_seeds.sh OUTDIR}
bin=${BIN:-build/default/src/multireduce}
bench=("$(dirname "$bin")/multireduce-bench")
[ -x "${bench[0]}" ] || bench=("$bin" bench)
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv | tee "$out/gpu.txt"
cccl=$(python3 -c 'import cupy, os; print(os.path.join(os.path.dirname(cupy.__file__), "_core", "include", "cupy", "_cccl"))')
(nvcc -std=c++20 -O3 -arch=sm_90 -I"$cccl/cub" -I"$cccl/thrust" -I"$cccl/libcudacxx" -Iinclude \
   -I"${JSON_INCLUDE:-/usr/include}" src/bench/bench_cub_fixed_segmented.cu -o /tmp/multireduce_bench_cub_fixed \
   > "$out/cub_fixed.txt" 2>&1) &
builder=$!
start=$(date +%s)
"${bench[@]}" --json "$out/run.json" --csv "$out/run.csv" > "$out/bench.txt" 2>&1
echo "bench (every suite): exit $? after $(( $(date +%s) - start )) s"
grep -E "^==== |multireduce:|VERIFY|FAIL|checksum|wave64" "$out/bench.txt"
wait $builder
echo "cub fixed-size build: exit $?"
if [ -x /tmp/multireduce_bench_cub_fixed ]; then
  /tmp/multireduce_bench_cub_fixed --json "$out/cub_fixed.json" >> "$out/cub_fixed.txt" 2>&1
  echo "cub fixed-size: exit $?"
fi
[ -n "${RACECHECK:-}" ] || exit 0  # RACECHECK=1: also the sanitizer (a few minutes)
for s in harris kepler hip-tutorial; do
  timeout 120 compute-sanitizer --tool racecheck "${bench[@]}" "$s" --quick --repetitions 1 --warmup 0 >> "$out/racecheck.txt" 2>&1
  echo "racecheck $s: exit $?"
done
grep -E "RACECHECK SUMMARY|ERROR SUMMARY" "$out/racecheck.txt"
