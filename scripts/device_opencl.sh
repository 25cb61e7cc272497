#!/usr/bin/env bash
# The OpenCL backend on the GPU machine through NVIDIA's OpenCL, in one device call: the OpenCL
# tests (every job against the CPU backend and the CUDA backend), `multireduce bench opencl` (the
# paper's section 7 in every form; reduce, statistics, segmented and windows beside the CUDA backend
# on the same GPU) and the tool with --backend opencl. Logs under OUTDIR.
# NVIDIA's driver ships libnvidia-opencl.so.1 without an ICD file on that machine (whose
# OCL_ICD_FILENAMES lists PoCL and it, but only PoCL loads): an ICD file of our own in a folder that
# OCL_ICD_VENDORS names makes NVIDIA's OpenCL the one platform. The ICD loader is carried from here
# (libOpenCL.so.1) with the other libraries.
# Prepare here: cmake --build --preset default --target multireduce multireduce_bench multireduce_opencl_tests,
#   bash scripts/device_opencl.sh --stage     (build/carry/opencl.tar.xz)
# and run there, carrying build/carry:  bash scripts/device_opencl.sh OUTDIR [STEPS]
# (steps default: tests bench cli).
set -uo pipefail
if [ "${1:-}" = "--stage" ]; then
  rm -rf build/opencl && mkdir -p build/opencl/lib build/carry
  cp build/default/src/multireduce build/default/src/multireduce-bench build/default/tests/multireduce_opencl_tests build/opencl/
  strip build/opencl/multireduce* 2>/dev/null || true
  ldd build/default/src/multireduce-bench | awk '/lib(zip|sqlite3|bz2|crypto|fmt|OpenCL)\./ {print $3}' |
    xargs -r -I{} cp -L {} build/opencl/lib/
  tar cJf build/carry/opencl.tar.xz -C build opencl && du -sh build/carry/opencl.tar.xz
  exit 0
fi
out=${1:-${OUT:-/tmp/multireduce-out}}
shift || true
steps=${*:-tests bench cli}
mkdir -p "$out"
tar xJf build/carry/opencl.tar.xz -C build || exit 1
export LD_LIBRARY_PATH=$PWD/build/opencl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# NVIDIA's OpenCL alone, by its full path.
icd=$(ldconfig -p | awk '/libnvidia-opencl\.so\.1/ {print $NF; exit}')
mkdir -p /tmp/multireduce-vendors && echo "${icd:-libnvidia-opencl.so.1}" > /tmp/multireduce-vendors/nvidia.icd
unset OCL_ICD_FILENAMES
export OCL_ICD_VENDORS=/tmp/multireduce-vendors
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
build/opencl/multireduce --version | tee -a "$out/gpu.txt"
t0=$(date +%s)
for step in $steps; do
  case $step in
    tests) build/opencl/multireduce_opencl_tests > "$out/tests.log" 2>&1; echo "tests exit $?"
           grep -E "^\[ *(OK|FAILED|SKIPPED|PASSED) " "$out/tests.log" | tail -12 ;;
    bench) build/opencl/multireduce-bench opencl --json "$out/opencl.json" 2>&1 | tee "$out/bench.log" ;;
    cli)
      python3 - <<'EOF'
import numpy as np
rng = np.random.default_rng(7)
np.save("/tmp/x.npy", rng.random(1 << 24, dtype=np.float32))
EOF
      for op in sum argmax; do
        build/opencl/multireduce reduce /tmp/x.npy --op $op --backend opencl --timing 2>&1 | tee -a "$out/cli.log"
        build/opencl/multireduce reduce /tmp/x.npy --op $op --backend cuda 2>&1 | tee -a "$out/cli.log"
      done ;;
  esac
  echo "[$(( $(date +%s) - t0 )) s] $step"
done
