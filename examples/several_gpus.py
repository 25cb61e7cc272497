"""Every pair of an image collection matched on every GPU of the machine (devices="all"), and the
statistics of a large host array read by all of them at once: the same answers as one GPU's, byte
for byte. Run: python examples/several_gpus.py (it says so and exits without a GPU)."""
import sys
import time

import numpy as np

import multireduce as mr

if not mr.cuda_available():
    print("no CUDA GPU here: nothing to split")
    sys.exit(0)

rng = np.random.default_rng(1)
images = [rng.integers(0, 256, (int(n), 32), dtype=np.uint8) for n in rng.integers(500, 3000, 40)]

start = time.perf_counter()
one = mr.match_all(images, ratio=0.8, backend="cuda")            # one GPU
t_one = time.perf_counter() - start
start = time.perf_counter()
every = mr.match_all(images, ratio=0.8, devices="all")          # every GPU: pairs handed out as they finish
t_every = time.perf_counter() - start
assert every.matches.tobytes() == one.matches.tobytes() and every.offsets.tobytes() == one.offsets.tobytes()
print(f"{len(one.pairs)} pairs, {len(one.matches)} matches kept: one GPU {t_one:.3f} s, "
      f"devices='all' {t_every:.3f} s, the same matches")

x = rng.standard_normal(300_000_000, dtype=np.float32)          # 1.2 GB of host memory
s = mr.statistics(x, devices="all")                            # pieces read by every GPU at once
assert all(np.asarray(a).tobytes() == np.asarray(b).tobytes() for a, b in zip(s, mr.statistics(x, backend="cuda")))
print(f"statistics of {x.size} floats on every GPU: mean {float(s.mean):.6f}, std {float(s.std):.6f}, "
      f"max {float(s.max):.3f} at {int(s.argmax)}, bit for bit one GPU's")
