// multireduce/cuda/detail/reduce/tuning.cuh -- reduce's launch shape, with the measurement that
// chose each value (GPU, date, command, figure; docs/tuning-log.md has the runs).
#pragma once

#include <cstdint>

#include "../load.cuh"

namespace multireduce::cuda::detail {

/// reduce's launch shape, chosen on the H200 (sm_90, 132 SMs, CUDA 13.0); other GPUs take the same
/// shape, sized by their SM count. "bench reduce" is `multireduce bench reduce` (through
/// scripts/device_run.sh); a "probe" is a stand-alone program that launches reduce_kernel directly
/// (docs/tuning-log.md, "reduce", has every run). Each value, and what chose it:
///  - block_threads = 512: 1024-thread blocks with the acquire-release ticket were no better (H200,
///    2026-11-21, probe); 256, 512 and 1024 threads on 1 to 528 blocks at 2^14 to 2^22 floats came
///    within 0.3 to 0.6 us of this shape, faster at some sizes and slower at others (H200,
///    2026-11-23, probe beside bench reduce); at 2^25 ints 256/512/1024 threads x 1-8 blocks per SM
///    took 35.52-46.3 us against 35.65-35.81 for 512 x 4 (H200, 2026-11-24, probe, 51 runs after
///    5).
///  - blocks_per_sm = 4: 4 x 512 = 2048 threads, the SM's limit; 2^26 / 2^28 floats at 1.02 / 1.00x
///    CUB 3.0.1 (64.64 / 236.67 us; H200, 2026-11-23T23:07Z, bench reduce, record
///    docs/results/h200/reduce.json). 8 per SM (1056 blocks, two waves) was faster for ints but
///    mixed for floats: 36.00 against 35.65 us at 2^25, 65.22 against 64.67 at 2^26, 236.45 against
///    236.93-237.06 at 2^28 (H200, 2026-11-24T12:04Z, probe, 8 rounds of 25 launches), so not
///    taken.
///  - vectors_in_flight = 4: 16-byte loads a thread issues before it folds them (64 bytes per
///    thread, 128 KiB per SM). Not tuned on its own: at 2^28 floats the kernel already runs within
///    1.1% of the fastest of 9 shapes of a kernel that only reads (236.6 against 234.0 us; H200,
///    2026-11-23T16:49Z, bench reduce).
///  - rounds_per_thread = 2: not tuned: a grid gets one block per block_threads x vectors_in_flight
///    x 2 vectors below the cap, so that small inputs run on few blocks (one up to 2^14 floats) and
///    the last block's fold of the partials stays short.
///  - ordered_items = 4: not tuned: operators not declared commutative fold 4 consecutive items per
///    thread and tile; that path is for correctness, not speed.
struct reduce_tuning {
  static constexpr int block_threads = 512, blocks_per_sm = 4, vectors_in_flight = 4;
  static constexpr int rounds_per_thread = 2, ordered_items = 4;
};

/// Blocks for n elements of T: enough that each thread loads a few vectors, at most
/// blocks_per_sm per SM.
template <class T>
inline int reduce_grid_size(std::int64_t n, int sms) {
  using tuning = reduce_tuning;
  const std::int64_t per_block =
      std::int64_t(tuning::block_threads) * vector_elements<T> * tuning::vectors_in_flight * tuning::rounds_per_thread;
  std::int64_t blocks = (n + per_block - 1) / per_block;
  const std::int64_t most = std::int64_t(sms) * tuning::blocks_per_sm;
  if (blocks > most) blocks = most;
  return blocks < 1 ? 1 : static_cast<int>(blocks);
}

}  // namespace multireduce::cuda::detail
