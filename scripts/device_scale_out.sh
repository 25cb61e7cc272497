#!/usr/bin/env bash
# Several GPUs on the GPU machine, in one device call: the device-set tests (every GPU, and two
# workers on one), the NCCL front's tests and example (one process per GPU), the tool's match-all
# and stats with --devices against one GPU's output, byte for byte, then `multireduce bench devices`
# (the collection matcher on 1 and N GPUs; the statistics of a 64 GiB mapped .npy against the read
# ceiling) and multireduce-bench-nccl (weak scaling, 2^30 float32 per rank). Logs and JSON records
# under OUTDIR (the device tool brings 8 files back: they are packed into scale-out.tar.gz too).
# Prepare here: the default preset built, then bash scripts/stage_device_build.sh; run there with
# build/carry carried:  bash scripts/device_scale_out.sh OUTDIR [LOG2_FILE=34] [LOG2_NCCL=30]
set -uo pipefail
out=${1:-${OUT:-/tmp/multireduce-out}}
log2_file=${2:-34}
log2_nccl=${3:-30}
mkdir -p "$out/logs"
export NCCL_NVLS_ENABLE=0
tar xJf build/carry/full.tar.xz -C build || exit 1
staged_from=$(cat build/full/.staged_from)
find build/full -name '*.cmake' -print0 | xargs -0 sed -i "s|$staged_from/|$PWD/|g"
# NCCL: the machine's own (PyTorch's wheel carries one) where the loader does not find it.
libs=$PWD/build/full/lib
if ldd build/full/tests/multireduce_nccl_tests | grep -q "libnccl.*not found"; then
  nccl=$(find / -name 'libnccl.so.2*' -not -path '/proc/*' 2>/dev/null | head -n 1)
  [ -n "$nccl" ] && libs=$libs:$(dirname "$nccl")
fi
if ldd build/full/src/multireduce | grep -q "not found" || [ "$libs" != "$PWD/build/full/lib" ]; then
  export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
{
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv
  nvidia-smi topo -m
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"; nproc; free -g; df -h /tmp
} > "$out/logs/machine.txt" 2>&1
head -n 5 "$out/logs/machine.txt"
export MULTIREDUCE_MATCH_DATA=$PWD/tests/data/match
for t in multireduce_devices_tests multireduce_runtime_tests; do
  timeout 600 "build/full/tests/$t" > "$out/logs/$t.log" 2>&1
  echo "$t: exit $? $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' "$out/logs/$t.log" | tr '\n' ' ')"
done
for n in 1 2 4; do
  timeout 600 build/full/tests/multireduce_nccl_tests --ranks $n --id-dir /tmp > "$out/logs/nccl_ranks$n.log" 2>&1
  echo "nccl front, $n ranks: exit $? $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' "$out/logs/nccl_ranks$n.log" | tr '\n' ' ')"
done
timeout 300 build/full/tests/example_nccl_ranks /tmp/example_nccl.id 2>&1 | tee "$out/logs/example_nccl.log"

# The tool: match-all and stats on every GPU, byte for byte the one GPU's output.
C=tests/data/match/collection
T=build/full/src/multireduce
$T match-all $C --ratio 0.8 -o /tmp/one.npz --timing 2>&1 | tee "$out/logs/cli.log"
$T match-all $C --ratio 0.8 -o /tmp/all.npz --devices all --timing 2>&1 | tee -a "$out/logs/cli.log"
$T match-all $C --ratio 0.8 -o /tmp/twice.npz --devices 0,0 --timing 2>&1 | tee -a "$out/logs/cli.log"
for f in all twice; do cmp /tmp/one.npz /tmp/$f.npz && echo "match-all --devices ($f): the same bytes as one GPU's"; done \
  | tee -a "$out/logs/cli.log"
python3 -c "import numpy as np; np.save('/tmp/x.npy', np.random.default_rng(5).standard_normal(300_000_000).astype(np.float32))"
$T stats /tmp/x.npy --timing > /tmp/one.txt 2>> "$out/logs/cli.log"
$T stats /tmp/x.npy --devices all --timing > /tmp/all.txt 2>> "$out/logs/cli.log"
cmp /tmp/one.txt /tmp/all.txt && echo "stats --devices all: the same output as one GPU's" | tee -a "$out/logs/cli.log"
$T stats /tmp/x.npy --devices 0,7 > /dev/null 2>> "$out/logs/cli.log"; echo "stats --devices 0,7: exit $?" | tee -a "$out/logs/cli.log"
rm -f /tmp/x.npy /tmp/one.npz /tmp/all.npz /tmp/twice.npz

# The benchmarks.
MULTIREDUCE_BENCH_DEVICES_LOG2=$log2_file $T bench devices --json "$out/devices.json" 2>&1 | tee "$out/logs/bench_devices.txt"
build/full/src/multireduce-bench-nccl --log2 "$log2_nccl" --json "$out/nccl.json" 2>&1 | tee "$out/logs/bench_nccl.txt"
tar czf "$out/scale-out.tar.gz" -C "$out" logs
