#!/usr/bin/env bash
# Copies what scripts/device_run.sh needs out of a build of the default preset: the tool and the
# benchmarks beside it (src/multireduce, src/multireduce-bench: `multireduce bench` runs the latter), the GPU
# test programs and the CLI's NumPy cases (their test file pointed at the copy), host symbols
# stripped, and packs the copy as build/carry/full.tar.xz (about 32 MB: the device tool carries 64
# MiB, the copy itself is larger), which scripts/device_check.sh unpacks on the GPU machine.
# Usage, from the repository root: bash scripts/stage_device_build.sh [FROM=build/default] [TO=build/full]
set -euo pipefail
from=${1:-build/default}
to=${2:-build/full}
rm -rf "$to"
mkdir -p "$to/src" "$to/tests/cli/out"
cp "$from/src/multireduce" "$from/src/multireduce-bench" "$to/src/"
cp "$from/tests/multireduce_cuda_tests" "$from/tests/multireduce_cuda_device_tests" "$from/tests/multireduce_runtime_tests" \
   "$from/tests/multireduce_backend_table_tests" "$from/tests/multireduce_capture_tests" \
   "$from/tests/multireduce_devices_tests" "$to/tests/"
# Several GPUs: the NCCL front's tests and example, and its benchmark, where NCCL was found.
for f in "$from/tests/ranks/multireduce_nccl_tests" "$from/tests/ranks/example_nccl_ranks"; do
  [ -f "$f" ] && cp "$f" "$to/tests/"
done
[ -f "$from/src/multireduce-bench-nccl" ] && cp "$from/src/multireduce-bench-nccl" "$to/src/"
cp "$from/tests/cli/multireduce_cli_check" "$from/tests/cli/multireduce_cli_parts_tests" "$to/tests/cli/"
# The tests of tests/cli (and the parts' discovered tests), pointed at the copy; the sanitized
# copies stay here (device_run.sh leaves their tests out).
for f in "$from"/tests/cli/CTestTestfile.cmake "$from"/tests/cli/multireduce_cli_parts_tests*.cmake; do
  sed "s|$PWD/$from/|$PWD/$to/|g" "$f" > "$to/tests/cli/$(basename "$f")"
done
# The libraries the tool links that a GPU machine may lack (libzip and SQLite, with theirs), used
# there only where the tool finds none of its own (scripts/device_match_all.sh).
mkdir -p "$to/lib"
ldd "$from/src/multireduce" | awk '/lib(zip|sqlite3|bz2|crypto)\./ {print $3}' | xargs -r -I{} cp -L {} "$to/lib/"
strip "$to"/src/multireduce* "$to"/tests/multireduce_* "$to"/tests/example_* "$to"/tests/cli/multireduce_cli_check \
  "$to"/tests/cli/multireduce_cli_parts_tests 2>/dev/null || true
echo "$PWD" > "$to/.staged_from"  # (device_check.sh points the CTest files at its own checkout)
mkdir -p build/carry
tar cJf build/carry/full.tar.xz -C "$(dirname "$to")" "$(basename "$to")"
du -sh "$to" build/carry/full.tar.xz
