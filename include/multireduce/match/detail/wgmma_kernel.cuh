// multireduce/match/detail/wgmma_kernel.cuh -- the warpgroup tensor-core matcher (sm_90a: H100,
// H200). wgmma.mma_async m64n128k256 on b1 operands with .and.popc gives popc(a AND b) for a 64 x
// 128 tile of (query, training row) pairs per instruction and warpgroup; the queries stay in
// registers (A), the training rows are staged in shared memory (B). The epilogue works on two
// pairs per instruction: the distances less the query's popcount, biased to be non-negative, fit
// 16 bits, so a pair of columns is one packed word, one byte-permute and one multiply-add make it,
// and a three-way 16-bit min (VIMNMX3.U16x2) folds two words into the row's minimum over the tile.
// Only a row whose minimum beats the k-th best of its row (rare once the lists fill; the four lanes
// that share a row merge their lists' bests for it) marks its columns below it in a bit mask and
// inserts those exactly, so the lists are the mma.sync kernel's, bit for bit.
//
// The kernel exists only in code built for sm_90a (CMAKE_CUDA_ARCHITECTURES 90a-real): elsewhere
// its body is empty and has no shared memory, which is how the host tells (wgmma_kernel_built).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "../../cuda/detail/ptx.cuh"
#include "../../cuda_lane.cuh"
#include "search.cuh"
#include "tuning.cuh"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MULTIREDUCE_MATCH_WGMMA_BODY 1
#endif

namespace multireduce::cuda::detail {

/// The biased distance of a pair less its query's popcount: popc(b) + bias - 2 popc(a AND b), in
/// [0, 2 bias] for descriptors of up to 1024 bits; padding rows past the training set's end get
/// wgmma_padding, and a list that is not full has the limit wgmma_open: above every real value,
/// not above the padding, and below 2^15 (halves_below's condition).
inline constexpr std::uint32_t wgmma_bias = 1024, wgmma_open = 0x7fff, wgmma_padding = wgmma_open;
static_assert(2 * wgmma_bias < wgmma_open && wgmma_open < 0x8000);

#if defined(MULTIREDUCE_MATCH_WGMMA_BODY)

/// Copies the 16 bytes at `from` (valid_bytes of them; zeros for the rest) into shared memory.
__device__ __forceinline__ void copy_async16_fill(void* to, const void* from, int valid_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(to))),
               "l"(from), "r"(valid_bytes)
               : "memory");
}

/// A wgmma shared-memory descriptor without swizzling: 8 x 16-byte core matrices, `k_step` bytes
/// apart along K (the leading dimension), `row_step` bytes apart along N.
__device__ __forceinline__ std::uint64_t wgmma_descriptor(const void* start, std::uint32_t k_step, std::uint32_t row_step) {
  const auto address = static_cast<std::uint32_t>(__cvta_generic_to_shared(start));
  return std::uint64_t((address & 0x3ffff) >> 4) | (std::uint64_t(k_step >> 4) << 16) | (std::uint64_t(row_step >> 4) << 32);
}

/// Keeps the compiler from moving reads or writes of an accumulator across the wgmma fences.
__device__ __forceinline__ void wgmma_fence_operand(std::uint32_t& r) { asm volatile("" : "+r"(r)::"memory"); }

/// D (+)= A x B for a 64 x 256 b1 A in registers (the mma.sync m16n8k256 fragment of each warp's
/// 16 rows) and a 128 x 256 b1 B in shared memory, with AND and popcount. accumulate == 0: D = A x B.
__device__ __forceinline__ void wgmma_and_popc(std::uint32_t (&d)[64], const std::uint32_t (&a)[4], std::uint64_t b,
                                               int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %68, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k256.s32.b1.b1.and.popc "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, "
      "%23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, "
      "%45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, %69, p;\n}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]),
        "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]),
        "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]),
        "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]),
        "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]),
        "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]),
        "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), "+r"(d[56]),
        "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(accumulate), "l"(b));
}

#endif  // MULTIREDUCE_MATCH_WGMMA_BODY

/// The 16-bit halves of `x` below `limit` (each half of x and the limit below 2^15; the limit in
/// both halves of `limits`): bit 15 / bit 31 set. (x | 0x8000) - limit cannot borrow across the
/// halves and has bit 15 clear exactly when x < limit.
__device__ __forceinline__ std::uint32_t halves_below(std::uint32_t x, std::uint32_t limits) {
  return ~((x | 0x80008000u) - limits) & 0x80008000u;
}

#if defined(MULTIREDUCE_MATCH_WGMMA_BODY)

/// The two smallest of two sorted pairs (a0 <= a1, b0 <= b1), into a0 <= a1.
__device__ __forceinline__ void merge_two_smallest(std::uint32_t& a0, std::uint32_t& a1, std::uint32_t b0, std::uint32_t b1) {
  const std::uint32_t low = min(a0, b0);
  a1 = min(max(a0, b0), min(a1, b1));
  a0 = low;
}

/// What a warpgroup thread of the wgmma kernel keeps for its two query rows (g and g + 8 of its
/// warp's 16): the top-k lists, the popcounts and each row's limit on the biased values. The four
/// lanes of a group hold the same rows (each a quarter of the columns) and share one limit a row.
template <int Kcap>
struct wgmma_rows {
  key_list<Kcap> best[2];
  std::int32_t query_popc[2];
  std::uint32_t limit[2];  // a pair enters row h's list when its biased value is below limit[h]

  /// The biased form of a distance bound (no_limit: wgmma_open).
  __device__ __forceinline__ std::uint32_t biased(int h, std::int32_t distance) const {
    return distance == no_limit ? wgmma_open : std::uint32_t(distance - query_popc[h] + std::int32_t(wgmma_bias));
  }

  /// The epilogue of one tile (columns column0 + 8j and + 1 of accumulators d, the biased row
  /// popcounts of the tile's column pairs in pb): two pairs per word and a packed minimum per row;
  /// only when a lane of the warp holds a row whose minimum beats its limit (rare once the lists
  /// are full) does the warp take the exact insertions, and then the new limits.
  /// `spill`: this thread's 16 words of shared memory, 4 x 16 bytes `stride` uint4 apart.
  __device__ __forceinline__ void search_tile(const std::uint32_t (&d)[64], const std::uint32_t (&pb)[16],
                                              std::int32_t column0, uint4* spill, int stride) {
    // e = popc(b) + bias - 2 popc(a AND b) for columns 8j + 2t (low half) and 8j + 2t + 1 (high
    // half); no half borrows from the other (each stays in [0, 2 bias], or is the padding).
    std::uint32_t e[2][16];
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      e[0][j] = pb[j] - 2u * __byte_perm(d[4 * j], d[4 * j + 1], 0x5410);
      e[1][j] = pb[j] - 2u * __byte_perm(d[4 * j + 2], d[4 * j + 3], 0x5410);
    }
    // A list that is not full yet (the slice's first tile) would take every column: with k <= 2
    // the limit becomes one more than the row's second smallest value in this tile, so that only
    // the two smallest (and their ties) are inserted; a column above it is farther than both.
    if constexpr (Kcap == 2) {
      if (__any_sync(0xffffffffu, limit[0] == wgmma_open || limit[1] == wgmma_open)) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          std::uint32_t m1 = e[h][0], m2 = 0xffffffffu;  // per half: the smallest and the second
#pragma unroll
          for (int j = 1; j < 16; ++j) {
            m2 = __vminu2(m2, __vmaxu2(m1, e[h][j]));
            m1 = __vminu2(m1, e[h][j]);
          }
          std::uint32_t s1 = min(m1 & 0xffffu, m1 >> 16), s2 = min(max(m1 & 0xffffu, m1 >> 16), min(m2 & 0xffffu, m2 >> 16));
          merge_two_smallest(s1, s2, __shfl_xor_sync(0xffffffffu, s1, 1), __shfl_xor_sync(0xffffffffu, s2, 1));
          merge_two_smallest(s1, s2, __shfl_xor_sync(0xffffffffu, s1, 2), __shfl_xor_sync(0xffffffffu, s2, 2));
          limit[h] = min(limit[h], min(s2 + 1u, wgmma_open));
        }
      }
    }
    bool hit[2];
    const std::uint32_t limits[2] = {limit[0] * 0x10001u, limit[1] * 0x10001u};  // in both halves
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      // The row's 16-bit minimum over its 32 columns: two chains of three-way mins.
      std::uint32_t low = __vimin3_u16x2(e[h][0], e[h][1], e[h][2]), high = __vimin3_u16x2(e[h][3], e[h][4], e[h][5]);
      low = __vimin3_u16x2(low, e[h][6], e[h][7]), high = __vimin3_u16x2(high, e[h][8], e[h][9]);
      low = __vimin3_u16x2(low, e[h][10], e[h][11]), high = __vimin3_u16x2(high, e[h][12], e[h][13]);
      low = __vimin3_u16x2(low, e[h][14], e[h][15]);
      hit[h] = halves_below(__vminu2(low, high), limits[h]) != 0;
    }
    if (!__any_sync(0xffffffffu, hit[0] || hit[1])) return;
#pragma unroll
    for (int h = 0; h < 2; ++h)
      if (hit[h]) insert_below(e[h], h, limits[h], column0, spill, stride);
    share_limits();
  }

  /// Inserts row h's columns below its limit (`limits`: in both halves). A bit per column below it (word j's halves go to
  /// bits 2j and 2j + 16 for j < 8, 2(j - 8) + 1 and 2(j - 8) + 17 above: one shift and one OR a
  /// word), the words parked in shared memory, and one insertion loop over the bits (a single copy
  /// of the insertion, and no local memory). The keys are whole (distance, index), so the order of
  /// the insertions does not matter.
  __device__ __forceinline__ void insert_below(const std::uint32_t (&e)[16], int h, std::uint32_t limits,
                                               std::int32_t column0, uint4* spill, int stride) {
    std::uint32_t below = 0;
#pragma unroll
    for (int j = 0; j < 16; ++j) below |= halves_below(e[j], limits) >> (j < 8 ? 15 - 2 * j : 14 - 2 * (j - 8));
#pragma unroll
    for (int q = 0; q < 4; ++q) spill[q * stride] = make_uint4(e[4 * q], e[4 * q + 1], e[4 * q + 2], e[4 * q + 3]);
    while (below != 0) {
      const int bit = __ffs(below) - 1;
      below &= below - 1;
      const int half = bit >> 4, r = bit & 15, j = (r >> 1) | ((r & 1) << 3);
      const std::uint32_t word = reinterpret_cast<const std::uint32_t*>(spill + (j >> 2) * stride)[j & 3];
      const std::uint32_t v = (word >> (16 * half)) & 0xffffu;
      best[h].insert(match_key(std::int32_t(v) - std::int32_t(wgmma_bias) + query_popc[h], column0 + 8 * j + half));
    }
    // k <= 2: share_limits takes the union's bound, which is below this list's.
    if constexpr (Kcap != 2) limit[h] = min(limit[h], biased(h, best[h].threshold()));
  }

  /// After insertions: each row's limit from the four lanes' lists. Later columns are higher than
  /// every column seen, so a pair must beat the k-th best of the four lists together. k <= 2:
  /// merged exactly from the lanes' two best, the same in the four lanes (so are their limits
  /// before: the shared one, or the first tile's, less their own lists' thresholds, which the
  /// union's is below); else the smallest of the four lanes' limits.
  __device__ __forceinline__ void share_limits() {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if constexpr (Kcap == 2) {
        // The keys' high words: the distances, and 0xffffffff (above them all) for an empty entry.
        std::uint32_t a0 = static_cast<std::uint32_t>(best[h].key[0] >> 32), a1 = static_cast<std::uint32_t>(best[h].key[1] >> 32);
        merge_two_smallest(a0, a1, __shfl_xor_sync(0xffffffffu, a0, 1), __shfl_xor_sync(0xffffffffu, a1, 1));
        merge_two_smallest(a0, a1, __shfl_xor_sync(0xffffffffu, a0, 2), __shfl_xor_sync(0xffffffffu, a1, 2));
        if (a1 != 0xffffffffu) limit[h] = min(limit[h], a1 - query_popc[h] + wgmma_bias);
      } else {
        std::uint32_t bound = limit[h];
        bound = min(bound, __shfl_xor_sync(0xffffffffu, bound, 1));
        limit[h] = min(bound, __shfl_xor_sync(0xffffffffu, bound, 2));
      }
    }
  }
};

#endif  // MULTIREDUCE_MATCH_WGMMA_BODY

/// Block: wgmma_block_threads / 128 warpgroups, each with 64 queries' A fragments in registers
/// (warp w of the block holds rows 16w .. 16w + 15 of the block's queries), sharing the training
/// tiles of wgmma_train_tile rows, searched 128 rows at a time (one wgmma per 256-bit chunk).
/// The tiles come through shared memory (dynamic, wgmma_shared_bytes) in a ring of `stages`
/// buffers, laid out as wgmma's no-swizzle K-major core matrices: for 256-bit chunk c, row r's half
/// h (16 bytes) at c x 32 x tile + (r / 8) x 256 + h x 128 + (r % 8) x 16. Beside each tile, the
/// biased popcounts of its rows, packed two columns (2p, 2p + 1) per word and ordered so that lane t
/// of a group reads its 16 words of each 128 rows with four 16-byte loads.
/// cp.async copies tile j + ahead + copy_ahead while tile j is searched (knn_tuning); mbarriers,
/// not block barriers, say when a tile is in and when its buffer is free.
/// Accumulator layout (lane: g = lane / 4, t = lane % 4): d[4j], d[4j+1] = row g, columns 8j + 2t
/// and + 1; d[4j+2], d[4j+3] = row g + 8, the same columns.
template <int C, int Kcap>
__global__ void __launch_bounds__(knn_tuning::wgmma_block_threads, knn_tuning::wgmma_blocks_per_sm)
    knn_wgmma_kernel(const __grid_constant__ knn_launch launch, int words) {
#if defined(MULTIREDUCE_MATCH_WGMMA_BODY)
  constexpr int tile = knn_tuning::wgmma_train_tile, chunk_bytes = tile * 32;
  constexpr int stages = knn_tuning::wgmma_stages(C);
  constexpr int threads = knn_tuning::wgmma_block_threads, warps = threads / 32;
  static_assert(threads == 2 * tile && tile % 128 == 0, "one half of a training row per thread, wgmmas of 128 rows");
  constexpr int parts = tile / 128;  // wgmmas (and searches) of 128 rows a tile
  extern __shared__ __align__(128) std::uint8_t rows[];  // stages x C x chunk_bytes
  __shared__ __align__(16) std::uint32_t packed_popc[stages][tile / 2];  // 64 words per 128 rows
  __shared__ uint4 spill[4][threads];  // the epilogue's parked words, thread-minor (no bank conflicts)
  const knn_block at = locate_block<true>(launch);  // always a 1-D grid over the launch's table
  const knn_problem& p = launch.problem[at.problem];
  const std::uint32_t* query = p.query;
  const std::uint32_t* train = p.train;
  const std::int64_t queries = p.queries;
  cuda_lane lane;
  const int g = lane.id() >> 2, t = lane.id() & 3;
  const std::int64_t row0 = std::int64_t(at.query_block) * knn_tuning::wgmma_block_queries + lane.warp_id() * 16 + g;
  std::uint32_t a[C][4];
  wgmma_rows<Kcap> mine;
  {
    load_query_fragments<C>(query, queries, words, row0, t, a, mine.query_popc);
#pragma unroll
    for (int h = 0; h < 2; ++h) mine.best[h].clear(), mine.limit[h] = wgmma_open;
  }

  std::int64_t begin, end;
  slice_rows(p, at.slice, begin, end);
  const int slice_size = static_cast<int>(end - begin);  // the counts fit int32
  // Thread i copies half i % 2 of row i / 2 of a tile, every chunk: 16-byte copies when the rows
  // are 16-byte aligned, else word by word (zeros past the slice's end and the row's words).
  const int my_row = threadIdx.x >> 1, my_half = threadIdx.x & 1;
  const bool wide = words % 4 == 0 && (reinterpret_cast<std::uintptr_t>(train) & 15) == 0;
  const int my_piece = (my_row >> 3) * 256 + my_half * 128 + (my_row & 7) * 16;
  auto piece = [&](int buf, int c) { return rows + (buf * C + c) * chunk_bytes + my_piece; };
  // Copies this thread's half row into buffer buf: the row at word `offset` of the training set,
  // if `in` (else zeros).
  auto stage = [&](std::int64_t offset, bool in, int buf) {
    const std::uint32_t* from = train + (in ? offset : 0);
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int w0 = c * 8 + my_half * 4;
      if (wide) {
        const bool any = in && w0 < words;
        copy_async16_fill(piece(buf, c), from + (any ? w0 : 0), any ? 16 : 0);
      } else {
#pragma unroll
        for (int w = 0; w < 4; ++w)
          copy_word_async(reinterpret_cast<std::uint32_t*>(piece(buf, c)) + w, from + (w0 + w < words ? w0 + w : 0),
                          in && w0 + w < words);
      }
    }
  };
  // The ring: tile j in buffer j % stages, use j / stages of that buffer (kept as counters that
  // wrap: a division of 64-bit tile numbers cost some 60 instructions a tile). Two mbarriers a buffer,
  // so that the warps never wait for each other at a block-wide barrier: `full` completes when
  // all the block's threads have their half row of the tile in (and its popcount packed beside
  // it), `empty` when all its warps have searched the tile, so that its buffer can take tile j +
  // stages.
  __shared__ __align__(8) std::uint64_t full[stages], empty[stages];
  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < stages; ++s) {
      ::cuda::ptx::mbarrier_init(&full[s], threads);
      ::cuda::ptx::mbarrier_init(&empty[s], warps);
    }
    ::cuda::ptx::fence_mbarrier_init(::cuda::ptx::sem_release, ::cuda::ptx::scope_cluster);
  }
  __syncthreads();
  auto wait_phase = [](std::uint64_t* bar, std::uint32_t parity) {
    while (!::cuda::ptx::mbarrier_try_wait_parity(bar, parity)) {
    }
  };
  // This thread's part of the next tile to mark in (in buffer arrive_buf; the slice has arrive_left
  // rows from its first on), once its copies have landed (the caller waits): its row's popcount is
  // packed beside the tile (a pair of rows by the first of its four lanes), and the copies are made
  // visible to wgmma's async proxy.
  int arrive_left = slice_size, arrive_buf = 0;
  auto arrive_next = [&]() {
    if (arrive_left > 0) {
      int ones = 0;
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const uint4 v = *reinterpret_cast<const uint4*>(piece(arrive_buf, c));
        ones += __popc(v.x) + __popc(v.y) + __popc(v.z) + __popc(v.w);
      }
      ones += __shfl_xor_sync(0xffffffffu, ones, 1);  // the row's two halves
      const std::uint32_t biased = my_row < arrive_left ? std::uint32_t(ones) + wgmma_bias : wgmma_padding;
      const std::uint32_t next = __shfl_xor_sync(0xffffffffu, biased, 2);
      const int pair = my_row >> 1;
      if ((threadIdx.x & 3) == 0)
        packed_popc[arrive_buf][(pair >> 6) * 64 + (pair & 3) * 16 + ((pair & 63) >> 2)] = biased | (next << 16);
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      (void)::cuda::ptx::mbarrier_arrive(&full[arrive_buf]);
    }
    arrive_left -= tile;
    if (++arrive_buf == stages) arrive_buf = 0;
  };
  // The next tile's copies (copy_left rows of the slice from its first on; this thread's row at
  // word copy_offset), into buffer copy_buf once the tile that used it before (copy_round - 1
  // uses ago) is searched; one copy group per tile.
  int copy_left = slice_size, copy_buf = 0, copy_round = 0;
  std::int64_t copy_offset = (begin + my_row) * words;
  auto copy_next = [&]() {
    if (copy_left > 0) {
      if (copy_round > 0) wait_phase(&empty[copy_buf], static_cast<std::uint32_t>(copy_round - 1) & 1u);
      stage(copy_offset, my_row < copy_left, copy_buf);
    }
    commit_copies();
    copy_left -= tile;
    copy_offset += std::int64_t(tile) * words;
    if (++copy_buf == stages) copy_buf = 0, ++copy_round;
  };
  auto issue = [&](std::uint32_t (&d)[64], int buf, int part) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int c = 0; c < C; ++c)
      wgmma_and_popc(d, a[c], wgmma_descriptor(rows + (buf * C + c) * chunk_bytes + part * 4096, 128, 256), c);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  };
  auto search = [&](std::uint32_t (&d)[64], std::uint32_t column0, int buf, int part) {
#pragma unroll
    for (int i = 0; i < 64; ++i) wgmma_fence_operand(d[i]);
    std::uint32_t pb[16];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const uint4 v = *reinterpret_cast<const uint4*>(&packed_popc[buf][part * 64 + t * 16 + 4 * q]);
      pb[4 * q] = v.x, pb[4 * q + 1] = v.y, pb[4 * q + 2] = v.z, pb[4 * q + 3] = v.w;
    }
    mine.search_tile(d, pb, static_cast<std::int32_t>(column0 + part * 128 + 2 * t), &spill[0][threadIdx.x], threads);
  };
  // The pipeline: tile j + ahead + copy_ahead is copied while tile j is searched, and each thread
  // marks its part of tile j + ahead in, so that a warp waits for the others only when they are
  // `ahead` tiles behind (and a buffer is refilled `stages - ahead - copy_ahead` tiles after its
  // search).
  constexpr int ahead = knn_tuning::wgmma_arrive_ahead(C), copy_ahead = knn_tuning::wgmma_copy_ahead(C);
  static_assert(stages >= ahead + copy_ahead + 1, "a buffer is refilled only after its tile's search");
  for (int i = 0; i < ahead + copy_ahead; ++i) copy_next();
  wait_copies<copy_ahead>();
  for (int i = 0; i < ahead; ++i) arrive_next();
  // A tile at a time: its wgmma, then the search of its distances; the other warpgroups keep the
  // tensor cores busy meanwhile.
  std::uint32_t d[64];
  int buf = 0;
  std::uint32_t parity = 0;  // of the buffer's use: (tile / stages) % 2
  // The tile's first training index (first_train_index + row fits int32; unsigned, so that the
  // step past the last tile, which may pass INT32_MAX, is no signed overflow) and the slice's rows
  // left.
  std::uint32_t column0 = static_cast<std::uint32_t>(begin + p.first_train_index);
  for (int left = slice_size; left > 0; left -= tile, column0 += tile) {
    wait_copies<copy_ahead - 1>();
    arrive_next();  // tile j + ahead
    copy_next();    // tile j + ahead + copy_ahead
    wait_phase(&full[buf], parity);
#pragma unroll
    for (int part = 0; part < parts; ++part) {
      if (part > 0 && part * 128 >= left) break;  // only padding left
      issue(d, buf, part);
      asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
      search(d, column0, buf, part);
    }
    __syncwarp();
    if (lane.id() == 0) (void)::cuda::ptx::mbarrier_arrive(&empty[buf]);
    if (++buf == stages) buf = 0, parity ^= 1u;
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    mine.best[h].merge_lanes(1);
    mine.best[h].merge_lanes(2);
    const std::int64_t q = row0 + 8 * h;
    if (t == 0 && q < queries) store_list(p.partials, queries, at.slice, q, mine.best[h]);
  }
#else
  (void)launch, (void)words;
#endif
}

/// The dynamic shared memory of knn_wgmma_kernel<C, ...>: its ring of training tiles.
inline constexpr int wgmma_shared_bytes(int chunks) {
  return knn_tuning::wgmma_stages(chunks) * chunks * knn_tuning::wgmma_train_tile * 32;
}

/// Whether the device's code of a wgmma kernel is the sm_90a one (the others have no shared memory).
inline bool wgmma_kernel_built(const void* kernel) {
  cudaFuncAttributes attributes{};
  if (cudaFuncGetAttributes(&attributes, kernel) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attributes.sharedSizeBytes > 0;
}

}  // namespace multireduce::cuda::detail
