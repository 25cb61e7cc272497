#!/usr/bin/env bash
# The collection matcher on the GPU machine, in one device call: the GPU test programs, the tool's
# match-all on the sample collection against OpenCV's answer (every pair, and again in image blocks
# with 1 MiB of GPU memory), then `multireduce bench match-all` (or the suites named). Logs and the
# JSON record under OUTDIR. The tool links libzip and SQLite: where the machine lacks them, the
# copies staged in build/full/lib are used.
# Prepare here: the default preset built, then bash scripts/stage_device_build.sh; run there with
# build/carry carried:  bash scripts/device_match_all.sh OUTDIR [SUITES...]  (default: match-all)
set -uo pipefail
out=${1:-${OUT:-/tmp/multireduce-out}}
shift || true
suites=${*:-match-all}
mkdir -p "$out"
tar xJf build/carry/full.tar.xz -C build || exit 1
staged_from=$(cat build/full/.staged_from)
find build/full -name '*.cmake' -print0 | xargs -0 sed -i "s|$staged_from/|$PWD/|g"
if ldd build/full/src/multireduce | grep -q "not found"; then export LD_LIBRARY_PATH=$PWD/build/full/lib; fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
export MULTIREDUCE_MATCH_DATA=$PWD/tests/data/match
for t in multireduce_cuda_tests multireduce_cuda_device_tests multireduce_runtime_tests multireduce_backend_table_tests \
         multireduce_capture_tests; do
  timeout 300 "build/full/tests/$t" > "$out/$t.log" 2>&1
  echo "$t: exit $? $(grep -E '^\[  (PASSED|FAILED)' "$out/$t.log" | tr '\n' ' ')"
done
C=tests/data/match/collection
for budget in "" "--gpu-memory 1"; do
  build/full/src/multireduce match-all $C --ratio 0.8 -o "$out/collection.npz" --timing $budget \
    --homographies tests/data/match/collection_homographies.npy 2>&1 | tee -a "$out/cli.log"
  python3 -c "
import numpy as np, sys
a, b = np.load('$out/collection.npz'), np.load('tests/data/match/collection_opencv.npz')
ok = all((a[k] == b[k]).all() for k in ('names', 'pairs', 'offsets', 'matches'))
print('match-all $budget: every pair equal to OpenCV:', ok); sys.exit(0 if ok else 1)" | tee -a "$out/cli.log"
done
build/full/src/multireduce match-all $C --ratio 0.8 --cross-check -o "$out/cross.npz" --timing 2>&1 | tee -a "$out/cli.log"
python3 -c "
import numpy as np
a, b = np.load('$out/cross.npz'), np.load('tests/data/match/collection_opencv.npz')
print('match-all --cross-check: every pair equal to OpenCV:', all((a[k] == b['cross_' + k]).all() for k in ('pairs', 'offsets', 'matches')))" \
  | tee -a "$out/cli.log"
for s in $suites; do
  build/full/src/multireduce bench "$s" --json "$out/$s.json" > "$out/bench_$s.txt" 2>&1
  echo "bench $s: exit $?"; cat "$out/bench_$s.txt"
done
