#!/usr/bin/env bash
# The Python package on a machine with several GPUs, in one device call: Dask, distributed and
# dask_cuda installed from wheels carried in build/wheels (the machine has no network), `pip install .`
# of this checkout, the tests of devices= and multireduce.dask (CuPy chunks on a LocalCUDACluster),
# then python -m multireduce.bench_dask. The wheels: pip download "dask-cuda==26.10.*" for
# Python 3.12 manylinux x86_64 into build/wheels, less NumPy. Logs and the JSON record under OUTDIR.
# Prepare here: pip download the wheels into build/wheels (docs/scale-out.md says which); run there
# with build/wheels carried:  bash scripts/device_dask.sh OUTDIR [LOG2=32]
set -uo pipefail
out=${1:-${OUT:-/tmp/multireduce-out}}
log2=${2:-32}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-16} NCCL_NVLS_ENABLE=0
# --no-deps: the machine's own NumPy (and the rest it has) stay; the wheels are the others.
python3 -m pip install --no-index --no-deps --target /tmp/dask-site build/wheels/*.whl > "$out/pip_dask.txt" 2>&1
echo "pip install dask distributed dask-cuda: exit $?"; tail -n 2 "$out/pip_dask.txt"
start=$(date +%s)
python3 -m pip install --no-build-isolation --no-deps --no-cache-dir --target /tmp/multireduce-site . \
  > "$out/pip_install.txt" 2>&1
echo "pip install .: exit $? ($(( $(date +%s) - start )) s)"; tail -n 3 "$out/pip_install.txt"
export PYTHONPATH=/tmp/multireduce-site:/tmp/dask-site
python3 -c "import multireduce as mr, dask, dask_cuda; print('multireduce', mr.__version__, 'dask', dask.__version__, 'dask_cuda', dask_cuda.__version__)"
(cd python/tests && timeout 900 python3 -m pytest -q -p no:cacheprovider -rs test_devices.py test_dask.py) > "$out/pytest.txt" 2>&1
echo "pytest test_devices.py test_dask.py: exit $?"; tail -n 12 "$out/pytest.txt"
timeout 900 python3 -m multireduce.bench_dask --log2 "$log2" --json "$out/dask.json" > "$out/bench_dask.txt" 2>&1
echo "bench_dask: exit $?"; cat "$out/bench_dask.txt" | grep -v "^$" | tail -n 20
