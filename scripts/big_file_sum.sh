#!/bin/sh
# The big-file measurement of docs/results.md: a 3 GB float32 .npy (750,000,000 normal values, made
# once with NumPy), summed by `multireduce reduce --op sum` and by NumPy's np.load(mmap_mode='r').sum(),
# each 5 times with the file in the page cache; prints every run's wall time and peak memory
# (/usr/bin/time), and both sums (they must be equal: NumPy's pairwise sum, bit for bit).
#   scripts/big_file_sum.sh MULTIREDUCE PYTHON [FILE]   (PYTHON: an interpreter with NumPy)
set -eu
tool=$1
python=$2
file=${3:-/tmp/multireduce_big_3GB.npy}
if [ ! -f "$file" ]; then
  "$python" - "$file" <<'PY'
import sys
import numpy as np
n = 750_000_000
a = np.lib.format.open_memmap(sys.argv[1], mode="w+", dtype=np.float32, shape=(n,))
rng = np.random.default_rng(7)
for i in range(0, n, 50_000_000):
    a[i:i + 50_000_000] = rng.standard_normal(min(50_000_000, n - i), dtype=np.float32)
a.flush()
PY
fi
cat "$file" > /dev/null  # into the page cache: both read the same cached file
for i in 1 2 3 4 5; do
  /usr/bin/time -f "multireduce: %e s, %M KiB peak" "$tool" reduce "$file" --op sum --backend cpu
done
for i in 1 2 3 4 5; do
  /usr/bin/time -f "numpy: %e s, %M KiB peak" "$python" -c \
    "import numpy as np, sys; print(np.load(sys.argv[1], mmap_mode='r').sum())" "$file"
done
