// multireduce/match/detail/tuning.cuh -- the GPU matcher's shapes and plans, with the
// measurement that chose each (GPU, date, command, figure; the runs: docs/tuning-log.md).
#pragma once

#include <cstdint>

namespace multireduce::cuda::detail {

/// The GPU matcher's shapes and plans, chosen on the H200 (sm_90, 132 SMs, CUDA 13.0), random
/// descriptors, k = 2, 65,536 x 65,536 unless said ("bench match" is `multireduce bench match`;
/// docs/tuning-log.md, "Matcher", has the runs, docs/match.md the design). Standing: mma.sync
/// 3.345 / 2.493 T comparisons/s at 256 / 512 bits (an H100, 2026-11-28T01:48Z, bench match,
/// docs/results/h100/match.json; the H200 gave 3.346 / 2.456 the day before).
///  - popcount_block_threads = 256: not tuned: 8 warps of 32 queries (groups of 8 lanes, 8 queries
///    each); no run with another block size is recorded.
///  - tensor_block_threads = 128, tensor_train_tile = 128: 4 warps, each with 16 x m_tiles queries'
///    A fragments in registers; 128 training rows per shared-memory tile, one row per thread. The
///    4-warp, 128-row shape is not tuned (no run with another is recorded); its double buffering
///    took 2.65 -> 3.36 T/s at 256 bits and 1.62 -> 1.91 at 512 (H200, 2026-11-21, bench match).
///  - tensor_m_tiles: 16-query tiles per warp, 2 when k <= 2; 4 for descriptors of up to 512 bits
///    and at least 32768 queries (more MMAs per B fragment: 2.32 -> 2.68 T/s at 256 bits, 1.91 ->
///    2.45 at 512; H200, 2026-11-21, bench match; with few queries the fewer blocks cost more). k >
///    2: 1, not tuned: the registers of the longer lists.
///  - popcount_blocks_per_sm = 32, tensor_blocks_per_sm = 8: the blocks a call wants; the popcount
///    kernel gains from many (a short last wave; no figure is recorded), the tensor-core kernel
///    from fewer, longer ones: 4x more training slices took it to 2.24 / 1.39 T/s, not kept (H200,
///    2026-11-21, bench match, before the double buffering); whole-wave slices with 32-query warps
///    at 512 bits: 1.88 against 1.91 T/s (H200, 2026-11-21, bench match). The value 8 itself: no
///    run with another is recorded.
///  - min_slice_rows = 512 (mma.sync, popcount, batches; a lone wgmma search: slices_for_wgmma,
///    slices of a tile or more): not tuned: the shortest training slice, when the queries alone cannot
///    fill the GPU; no run with another minimum is recorded.
///  - whole_wave_fill = 0.95: a lone mma.sync search takes the fewest slices whose blocks fill
///    the resident slots in whole waves to 95% (a mostly empty last wave cost up to a fifth):
///    10,000^2 at 512 bits 0.81 -> 0.90 T/s (H200, 2026-11-21, bench match).
///  - finish_threads = 256: not tuned: the finish kernel merges the slices' lists, a thread per
///    query, and reads slices x queries x k keys once.
/// The warpgroup (wgmma, sm_90a) kernel, measured on the H200 (nvidia-h200 kind): first 2026-11-26,
/// a probe of knn_hamming at 65,536^2 and 10,000^2, k = 2, random descriptors, median of 10,
/// against the mma.sync kernel in the same process (3.32 / 2.44 T/s at 256 / 512 bits, 65,536^2;
/// 0.95 / 0.86 at 10,000^2); then 2026-11-27, the same probe (the epilogue's changes, the
/// pipeline, the slices, the loop's own instructions, the ring's size, the tiling kernel), and
/// `bash scripts/device_match.sh OUT tests bench ncu match-all` (2026-11-27T23:05Z, H200: 7.782 /
/// 6.720 T/s at 65,536^2, 3.070 / 2.768 at 10,000^2, the batch of 1000 pairs 2.507; with the
/// two-warpgroup shape for batches, 2026-11-28T01:48Z, H100: 7.776 / 6.776, 3.091 / 2.775, the
/// batch 2.641); the standing run, with 512-row tiles and the first fill, `bash
/// scripts/device_match.sh OUT match-all tests bench ncu` (2026-11-28T04:44-04:53Z, an H100, the
/// nvidia-h100-x1 kind): 8.418 / 7.147, 3.408 / 2.902, the batch 2.964, record
/// docs/results/h100/match.json; ncu: the tensor pipe 29.1% busy, issue slots 57%; with the row
/// lists of group keys, `bash scripts/device_match.sh OUT tests bench ncu` (2026-11-28T12:04Z, an
/// H200, the nvidia-h200 kind): 8.961 / 7.555, 3.738 / 3.116, the batch 2.961, record
/// docs/results/h200/match.json; ncu: the tensor pipe 31.2% busy, issue slots 60%. The runs, and
/// what was tried and not kept, in docs/tuning-log.md:
///  - wgmma_train_tile = 512 rows: four parts of 128 rows a tile (an m64n128k256 wgmma per 256-bit
///    chunk and part), the loop over them unrolled, so that the ring's bookkeeping (the wait for a
///    tile, the count of the warps done with it, the refill) comes once every four parts, and the
///    compiler schedules across them. Against 256-row tiles, same call (probe, H200,
///    2026-11-28T04:35Z, with the first fill): 65,536^2 8.374 / 7.095 T/s against 7.861 / 6.741,
///    10,000^2 3.442 / 2.932 against 3.321 / 2.943, the probe's batch of 155 pairs 2.659 against
///    2.565, 32 x 8192^2 in one batch 5.965 against 5.667, a collection of 200 x 8192 6.194 against
///    5.848. The four parts in a loop not unrolled: 7.891 (256-row tiles so: 7.410); two tiles a
///    loop turn (eight parts, unrolled): 8.312, the collection 5.527 (twice the code).
///  - wgmma_lone_warpgroups = 4 (512 threads, 256 queries a block, one block an SM; lone searches):
///    each training tile is read by a block once per 256 queries. With the epilogue removed (and
///    each block copying and popcounting its tiles, before the tiling kernel)
///    the kernel ran 4.1 / 2.3 T/s with 64 queries a block, 7.8 / 4.4 with 128 and 14.9 / 8.4 with
///    256 (the raw wgmma rate: 30.3 / 15.2); with it, 4.19 / 3.56 T/s at 65,536^2 (128 queries a
///    block: 3.53 / 2.92) (2026-11-26). Two m64n64 wgmmas into two accumulator sets in turn (the
///    next 64 rows' wgmmas in flight during a search): 4.20 / 3.62 against 4.71 / 4.07, not kept
///    (2026-11-27).
///  - wgmma_many_warpgroups = 2 (256 threads, 128 queries, two blocks an SM, whose starts and ends
///    overlap; rings of 5 tiles at 256 bits, 3 at 512): batches and collections of k <= 2 up to
///    512 bits, whose slices are short. Against the four-warpgroup shape in the same call (probe,
///    H200, 2026-11-28T01:27Z): 32 pairs of 8192^2 in one batch 5.47 / 5.48 against 4.69 / 4.68
///    T/s, the probe's batch of 155 pairs of 500..3000 2.34 / 2.36 against 2.33 / 2.32, a
///    collection of 200 x 8192 5.74 / 5.78 against 5.62 / 5.55 T/s; lone searches lose with it
///    (65,536^2 7.60 against 7.80, 10,000^2 2.95 against 3.09: one shape for all, same call), so
///    they keep four. (The next part's wgmma issued before this part's search, for this shape
///    only, with both of the above: the collection 6.239 / 6.227 against 6.244 / 6.240, the batch
///    2.572 against 2.668; not kept: H200, 2026-11-28T04:43Z.)
///  - wgmma_fill_parts = 64 (row lists: k <= 2 up to 768 bits): a slice's first 64 parts of 128
///    rows give every group key (a lane's 16 columns of a half) to the lanes' two least, unscreened
///    (the first fill); the screen and its slow path take the rest. Chosen with the row lists of
///    group keys (each part's least key a half only, the first's group's second found from the rows
///    at the slice's end), against the lists that looked for each part's second least key, same
///    call (probe, H200, the nvidia-h200 kind, 2026-11-28T11:43Z), 64 / 128 / all parts against the
///    old lists with 16: 65,536^2 9.062 / 9.114 / 8.793 and 7.649 / 7.633 / 7.494 T/s against 8.373
///    and 7.106, 10,000^2 3.734 / 3.756 / 3.743 and 3.094 / 3.100 / 3.097 against 3.415 and 2.934,
///    the probe's batch of 155 pairs 2.724 / 2.752 / 2.736 against 2.686, 32 x 8192^2 7.164 / 7.117
///    / 7.177 against 5.977, a collection of 200 x 8192 7.377 / 7.384 / 7.499 against 6.287 (64
///    again: 8.997, 7.564, 3.734, 3.070, 2.729, 7.097, 7.472 against the old's 8.437, 7.152, 3.445,
///    2.954, 2.701, 6.018, 6.227). 16 and 32 parts (11:35Z, those lists with the second from the
///    tiles): 65,536^2 8.910 / 8.887, 32 x 8192^2 6.218 / 6.394, the collection 6.542 / 6.704 against
///    64's 9.010, 6.640, 6.999. (The old lists, 2026-11-28T04:31Z, 256-row tiles, 8 / 16 / 24 parts
///    against none: the collection of 200 x 8192 5.862 / 5.895 / 5.883 against 5.688.)
///  - `automatic` takes the wgmma kernel wherever it is usable: with the 2026-11-27 epilogue (measured
///    while the slow path still had the group-of-four mask and the slices' cost counted single
///    rows: both changes since made it faster) it is the faster at every size measured, 1000^2 (0.043 against 0.019 T/s), 3000^2 (0.356 / 0.205),
///    10,000^2 (1.562 / 0.952), 256-bit, 512-bit alike (probe, 2026-11-27), and 65,536^2 (7.78 /
///    3.35, the standing run). (Before, at 10,000^2 its 256-query blocks lost: 0.80 against 0.95 T/s.)
///  - wgmma_stages: the ring of tiles in shared memory, in tiles of 512 rows: 5 up to 512 bits, 3 at
///    768, 2 at 1024 (the two-warpgroup shape, two blocks an SM: 5 at 256 bits, 3 at 512), about
///    the rows in flight of the rings of 256-row tiles measured below (10 up to 512 bits, 7 at 768,
///    5 at 1024; 10 and 6 for two warpgroups). With 512-row tiles, 6 for two warpgroups at 256 bits:
///    the collection of 200 x 8192 6.247 against 6.312 / 6.265 with 5 (probe, H200, 04:38Z). The
///    256-row rings:
///    each refilled by one bulk copy of the tile a ring later, which the last warp done with it
///    issues (since 2026-11-27T22:30Z when it next looks at the count, a tile later). With the
///    tiling kernel and those copies (2026-11-27T15:17Z, probe, 65,536^2 /
///    10,000^2 / the probe's batch of 155 pairs, 256 bits): 6, 8, 10 and 12 tiles (11 at 512 bits)
///    within 0.3% of each other (6.378 / 6.384 / 6.369 / 6.379 T/s; 10,000^2 2.32-2.34; the batch
///    1.62-1.64); 10 kept. Before them, with each thread copying its half row and marking it in (its
///    popcount, a proxy fence, an mbarrier), 10 tiles took 5.496 / 4.654 T/s against 5.438 / 4.605
///    with 7 (2026-11-27T12:36Z). At 768 and 1024 bits 10 tiles do not fit the shared memory (227
///    KB a block, with the 32 KB of parked words of the per-lane lists; the row lists of k <= 2 up
///    to 768 bits need none, which would leave room for 8 tiles at 768: not timed).
///  - wgmma_block_overhead_rows = 512: a lone search takes the slices that minimise waves x (rows
///    of a slice in wgmmas of 128 + 512) (slices_for_wgmma; at least a tile's rows each, 256 when measured):
///    10,000^2 picks 3 slices, the best of the 11 counts measured from 1 to 20 (1.743 T/s at 256 bits; 6 slices 1.486,
///    13 slices, the whole-wave rule's choice, 1.269; 512-bit alike), 3000^2 picks 8, the best
///    measured there (0.432 T/s; 5 slices 0.357) (2026-11-27, probe sweeping the slices).
///  - Registers: at most 128 a thread (512 threads, one block an SM): k <= 2 fits without spills
///    up to 512 bits (ptxas -v for sm_90a, CUDA 13.0, 2026-11-28, the row lists of group keys: 108
///    registers at 256 bits in both shapes, 128 at 512, and at 768 bits 128 with 88 bytes of stack;
///    before them 115 and 111 at 256 bits, 119 at 768; 121 at 1024 with the per-lane lists); k > 2
///    spills (ptxas -v for sm_90a, CUDA 13.0, 2026-11-27T18:33Z: 88 bytes of stack at 256 bits,
///    128 at 1024, unchanged by the keys; 88 and 136 before the tiling kernel, 80 and 128 before
///    the ring's counters). The next part's wgmma issued before the screen (its keys made, the
///    accumulators free) needs all 128 with 4-24 bytes of spills, and ran slower (6.50 / 5.84
///    against 6.91 / 6.06 T/s, 2026-11-27T18:39Z, probe).
struct knn_tuning {
  static constexpr int popcount_block_threads = 256, tensor_block_threads = 128, tensor_train_tile = 128;
  static constexpr int wgmma_train_tile = 512;
  /// The wgmma kernel's block shapes: 4 warpgroups, one block an SM (lone searches), or 2, two
  /// blocks an SM (batches and collections of k <= 2 up to 512 bits).
  static constexpr int wgmma_lone_warpgroups = 4, wgmma_many_warpgroups = 2;
  __host__ __device__ static constexpr int wgmma_block_threads(int warpgroups) { return 128 * warpgroups; }
  __host__ __device__ static constexpr int wgmma_block_queries(int warpgroups) { return 64 * warpgroups; }
  __host__ __device__ static constexpr int wgmma_blocks_per_sm(int warpgroups) { return 4 / warpgroups; }
  static constexpr double wgmma_block_overhead_rows = 512;
  /// The parts of 128 rows at the start of a slice that the first fill takes (row lists).
  static constexpr int wgmma_fill_parts = 64;
  /// Shared-memory buffers of the wgmma kernel's ring of tiles (two blocks an SM share its 227 KB).
  __host__ __device__ static constexpr int wgmma_stages(int chunks, int warpgroups = wgmma_lone_warpgroups) {
    return warpgroups == wgmma_lone_warpgroups ? (chunks <= 2 ? 5 : chunks == 3 ? 3 : 2) : (chunks <= 1 ? 5 : chunks == 2 ? 3 : 2);
  }
  static constexpr int popcount_blocks_per_sm = 32, tensor_blocks_per_sm = 8, finish_threads = 256;
  static constexpr std::int64_t min_slice_rows = 512;
  static constexpr double whole_wave_fill = 0.95;
  static int tensor_m_tiles(int kcap, int chunks, std::int64_t queries) {
    return kcap > 2 ? 1 : chunks <= 2 && queries >= 32768 ? 4 : 2;
  }
};

/// The GPU collection matcher's rounds (match/collection_cuda.cuh). Its searches take the kernels and
/// shapes above (mma.sync's m_tiles chosen on queries x training images, the lists a launch fills).
///  - round_rows = 2^22: pair-query rows a round searches (the lists, the rules' rows and their
///    compaction): 512 pairs of 8192-row images, launches of thousands of blocks while the round
///    before is read back; a round's buffers (about 90 bytes a row at k = 2) stay under half a GiB.
///    Not tuned: no run with another value is recorded.
///  - round_pairs = 8192: the most pairs a round takes (the accept kernel's grid.y, a search's
///    slices); not tuned.
///  - accept_threads = 256: the accept kernel's block; not tuned (it reads each list once).
///  - free_memory_share = 0.8: the budget when none is given, of the free GPU memory; not tuned.
///  - first_upload_share = 1/8: a collection that fits, rows in host memory, goes up in two pieces:
///    the first images, whose rows reach this share, then the rest on a helper thread while the
///    pairs among the first images are searched (about 1/64 of the work: for 1000 x 8192 some 80 ms
///    of searching against 28 ms of copying the rest). Before, the 262 MB of 1000 x 8192 went up
///    in one pageable copy, 32 ms in which no search ran (of 51 ms before the first search; 19 ms
///    allocating), and the collection took 5.221 / 5.211 s against 5.194 / 5.188 with the two
///    pieces (H200, the nvidia-h200 kind, 2026-11-28T08:27Z, the development probe, wgmma).
/// `automatic` takes the wgmma kernel for the searches where it is usable, as for lone searches
/// (its two-warpgroup shape): 1000 x 8192, all pairs, 256-bit: wgmma 4.310 s, mma.sync 10.127 s;
/// 512-bit: 5.300 s against 14.857 (an H200, the nvidia-h200 kind, 2026-11-28T11:55Z, bash
/// scripts/device_match.sh OUT tests match-all, the row lists of group keys; before them an H100,
/// the nvidia-h100-x1 kind, 08:33Z: 5.048 s against 9.914, 5.858 against 14.605; another H100 of that kind at 04:45Z, the rows in
/// one piece: 5.028 s against 9.970, 5.832 against 14.617; with 256-row tiles and no first fill,
/// the same H100 kind three hours before: 5.47 s against 9.82, 6.17 against 14.39; four
/// warpgroups a block, the H200 the day before: 5.78 s against 10.16). Rows from pageable host
/// memory staged through pinned buffers by eight threads instead of one pageable copy: 5.040 s,
/// the 100-image collection 0.067 s against 0.058 (not kept; H100, 2026-11-28T04:59Z). With the
/// 2026-11-26 wgmma kernel it lost at 256 bits (12.69 against 10.18 s), and the collection kept
/// mma.sync there. Rows already on the GPU whose tiles do not fit the budget beside the rounds
/// take mma.sync (`automatic`).
struct collection_tuning {
  static constexpr std::int64_t round_rows = std::int64_t(1) << 22;
  static constexpr int round_pairs = 8192, accept_threads = 256;
  static constexpr double free_memory_share = 0.8;
  static constexpr double first_upload_share = 0.125;
};

}  // namespace multireduce::cuda::detail
