#!/usr/bin/env bash
# count_shfl.sh -- counts the warp-exchange instructions of each window_sums kernel in the SASS of a
# binary built with the "warp" bench suite (src/bench/bench_warp.cu): multireduce-bench (a tool
# built before the benchmarks became a program of their own: multireduce itself).
#
# usage: scripts/count_shfl.sh path/to/multireduce-bench
#
# The kernels' round loop is not unrolled, so a kernel's static count is the count of one pass:
# 32 windows (64 for online-x2, which reduces two rounds per pass). Expected SHFL per 32 windows
# for 32-bit T (double: twice as many): butterfly 160, select-merge 62, swap 31, order-preserving
# 62, shared-exchange 0 (it uses STS/LDS), online-x2 62 per stream (124 in its 64-window pass), cub 160
# (int: 0 -- CUB 3.0.1 sums int with one REDUX per window on sm_80+).
# Columns: SHFL (the figure the paper counts), REDUX, STS and LDS (shared-memory exchange).
set -euo pipefail

if [[ $# -ne 1 || ! -f $1 ]]; then
  echo "usage: $0 BINARY (the multireduce-bench executable)" >&2
  exit 2
fi
binary=$1
command -v cuobjdump >/dev/null || { echo "$0: cuobjdump not found (it comes with the CUDA toolkit)" >&2; exit 2; }

if command -v c++filt >/dev/null; then demangle=c++filt; else demangle=cat; fi

# cuobjdump prints "code for sm_XX" before each architecture's SASS and "Function : NAME" before
# each function; every instruction is one line.
cuobjdump --dump-sass "$binary" | awk '
  /code for sm_/ { arch = $NF }
  /Function : / {
    name = $0; sub(/.*Function : /, "", name); sub(/[ \t]+$/, "", name)
    keep = index(name, "window_sums_kernel") > 0
    if (keep) { key = arch " " name; order[++n] = key; shfl[key] = redux[key] = sts[key] = lds[key] = 0 }
    next
  }
  keep && /^[ \t]*\/\*[0-9a-f]+\*\// {
    if (/SHFL/) shfl[key]++
    if (/REDUX/) redux[key]++
    if (/[^A-Z]STS[ .]/) sts[key]++
    if (/[^A-Z]LDS[ .]/) lds[key]++
  }
  END {
    for (i = 1; i <= n; ++i) {
      k = order[i]; split(k, part, " ")
      printf "%s\t%d\t%d\t%d\t%d\t%s\n", part[1], shfl[k], redux[k], sts[k], lds[k], substr(k, length(part[1]) + 2)
    }
  }' | $demangle | sort -t$'\t' -k6,6 | {
  printf '%-6s %5s %5s %5s %5s  %s\n' arch SHFL REDUX STS LDS kernel
  count=0
  while IFS=$'\t' read -r arch shfl redux sts lds name; do
    printf '%-6s %5d %5d %5d %5d  %s\n' "$arch" "$shfl" "$redux" "$sts" "$lds" "$name"
    count=$((count + 1))
  done
  if [[ $count -eq 0 ]]; then
    echo "$0: no window_sums_kernel in $binary (built without CUDA, or without the warp suite?)" >&2
    exit 1
  fi
}
