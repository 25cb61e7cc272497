#!/usr/bin/env bash
# The Python package on the GPU machine, in one call: `pip install .` there (it has CUDA,
# scikit-build-core, nanobind, NumPy, CuPy, PyTorch and JAX, and no network, hence
# --no-build-isolation), then the pytest suite (the GPU tests run there), then the peers benchmark
# (python -m multireduce.bench: PyTorch and CuPy in the same process).
# Usage, from the repository root there: bash scripts/device_python.sh OUTDIR
set -uo pipefail
out=${1:-${OUT:-/tmp/multireduce-out}}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-16}
rm -rf /tmp/multireduce-site
start=$(date +%s)
python3 -m pip install --no-build-isolation --no-deps --no-cache-dir --target /tmp/multireduce-site . \
  > "$out/pip_install.txt" 2>&1
echo "pip install .: exit $? ($(( $(date +%s) - start )) s)"; tail -n 3 "$out/pip_install.txt"
export PYTHONPATH=/tmp/multireduce-site
python3 -c "import multireduce as mr; print('multireduce', mr.__version__, 'cuda_available', mr.cuda_available())"
(cd python/tests && python3 -m pytest -q -p no:cacheprovider -rs) > "$out/pytest.txt" 2>&1
echo "pytest: exit $?"; tail -n 15 "$out/pytest.txt"
if [ -z "${SKIP_BENCH:-}" ]; then
  python3 -m multireduce.bench --profile --json "$out/peers.json" > "$out/peers.txt" 2>&1; echo "peers: exit $?"
  cat "$out/peers.txt"
fi
