// multireduce/match/detail/wgmma_kernel.cuh -- the warpgroup tensor-core matcher (sm_90a: H100,
// H200). wgmma.mma_async m64n128k256 on b1 operands with .and.popc gives popc(a AND b) for a 64 x
// 128 tile of (query, training row) pairs per instruction and warpgroup; the queries stay in
// registers (A), the training rows come into shared memory (B) as tiles that a small tiling kernel
// lays out beforehand (wgmma's layout, the rows' popcounts beside them), one bulk copy a tile,
// so that no search block copies rows or counts bits. The epilogue works on two
// pairs per instruction: the distances less the query's popcount, biased to be non-negative, fit
// 16 bits with room for the column's place in the thread's words (its *key*: the value times 16
// plus the word, up to 768 bits), so a pair of columns is one packed word, one byte-permute and
// one multiply-add make it, and a three-way 16-bit min (VIMNMX3.U16x2) folds two words into the
// row's least key over the lane's 32 columns of a 128-column part. For k <= 2 up to 768 bits (the
// row lists) that least key of each half, the least of a *group* of 16 columns, is all a part
// gives: each lane keeps its two least group keys, and at the end of the slice a row's nearest is
// its least group key and its second the lesser of its second least group key and the second of
// the first's group, which the row's four lanes compute from the rows themselves. A slice's
// first 64 parts take every group key; after them only a row whose least key beats the second of
// its row goes on (rare once the lists fill), and the row's new limit comes from its four lanes.
// For larger k (or 1024 bits, whose values leave no room for the column) a row whose least key
// beats the k-th best of its row gives a bit mask of its columns below the limit and an exact
// insertion each into the lane's own list. Either way the
// lists are the mma.sync kernel's, bit for bit.
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

/// The key of a pair: its biased value popc(b) + bias - 2 popc(a AND b) (the distance less the
/// query's popcount, in [0, 2 bias]), shifted left by wgmma_key_shift with the pair's word in the
/// thread's 16 words of a 128-column part below it (columns 8j + 2t and + 1 share word j), so that
/// the least key of a half is its nearest column and says which one; 1024-bit descriptors have no
/// room for the word (shift 0). Padding rows past the training set's end get wgmma_padding, and a
/// list that is not full has the limit wgmma_open: above every real key, not above the padding, and
/// below 2^15 (halves_below's condition).
__host__ __device__ inline constexpr int wgmma_key_shift(int chunks) { return chunks <= 3 ? 4 : 0; }
__host__ __device__ inline constexpr std::uint32_t wgmma_bias(int chunks) { return chunks <= 3 ? 256u * chunks : 1024u; }
inline constexpr std::uint32_t wgmma_open = 0x7fff, wgmma_padding = wgmma_open;
static_assert((2 * wgmma_bias(3) << wgmma_key_shift(3)) + 15 < wgmma_open && 2 * wgmma_bias(4) < wgmma_open &&
              wgmma_open < 0x8000);
/// The most training rows a slice of the wgmma kernel may have: its row lists' slice keys keep a
/// column's place in the slice in 21 bits (wgmma_rows::slice_value_shift). The plans cut longer
/// training sets into more slices; a collection with a longer image takes mma.sync.
inline constexpr std::int64_t wgmma_slice_rows_most = std::int64_t(1) << 21;

#if defined(MULTIREDUCE_MATCH_WGMMA_BODY)

/// A wgmma shared-memory descriptor without swizzling: 8 x 16-byte core matrices, `k_step` bytes
/// apart along K (the leading dimension), `row_step` bytes apart along N.
__device__ __forceinline__ std::uint64_t wgmma_descriptor(const void* start, std::uint32_t k_step, std::uint32_t row_step) {
  const auto address = static_cast<std::uint32_t>(__cvta_generic_to_shared(start));
  return std::uint64_t((address & 0x3ffff) >> 4) | (std::uint64_t(k_step >> 4) << 16) | (std::uint64_t(row_step >> 4) << 32);
}

/// Adds one to a shared counter (its shared address) with acquire and release semantics at block
/// scope and returns its value before: one fence and ATOMS, where __threadfence_block on both
/// sides of atomicAdd gives two sequentially consistent fences.
__device__ __forceinline__ int arrive_counting(std::uint32_t counter) {
  int before;
  asm volatile("atom.acq_rel.cta.shared::cta.add.u32 %0, [%1], 1;" : "=r"(before) : "r"(counter) : "memory");
  return before;
}

/// The value, which the compiler can no longer see through (so that it keeps it in a register
/// rather than computing it again where it is used).
__device__ __forceinline__ std::uint32_t opaque(std::uint32_t x) {
  asm volatile("mov.b32 %0, %0;" : "+r"(x));
  return x;
}
__device__ __forceinline__ std::uint64_t opaque(std::uint64_t x) {
  asm volatile("mov.b64 %0, %0;" : "+l"(x));
  return x;
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
/// warp's 16): the top-k lists, the popcounts and each row's limit on the keys (a pair enters row
/// h's list when its key is below limit[h]). The four lanes of a group hold the same rows (each a
/// quarter of the columns) and share one limit a row. `row_lists` (k <= 2, that is Kcap 2, up to
/// 768 bits): the four lanes keep the row's list alike; else each lane keeps the list of its own
/// columns, and the four are merged at the end.
template <int C, int Kcap>
struct wgmma_rows {
  static constexpr int shift = wgmma_key_shift(C);
  static constexpr std::uint32_t bias = wgmma_bias(C);
  static constexpr bool row_lists = shift != 0 && Kcap == 2;
  key_list<Kcap> best[2];  // per-lane lists
  // Row lists. A *group* is the 16 columns of a lane's half in one part (columns 8j + 2t + half,
  // j = 0..15), and its least key is what the packed minimum gives for free. Each lane keeps the
  // two least group keys it has seen, as slice keys: value << slice_value_shift | the column's
  // place in the slice (part << 7 | column in the part), so that the keys order pairs by distance,
  // then by index (0xffffffff: none). The row's two nearest are its least group key and the lesser
  // of its second least group key and the second least key of the first's group: end_slice finds
  // that one from the rows themselves, once a slice, so no part ever looks for a second least.
  // A slice has at most wgmma_slice_rows_most rows (the place's bits).
  static constexpr int slice_value_shift = 21;
  static_assert(std::int64_t(1) << slice_value_shift == wgmma_slice_rows_most, "a slice's places fit the slice keys");
  static constexpr std::uint32_t slice_place_mask = (1u << slice_value_shift) - 1u;
  static constexpr std::uint32_t row_empty = wgmma_open >> shift;  // above every real value, not the padding's
  std::uint32_t pair_key[2][2];
  // The row's list at the end of the slice (end_slice): values (row_empty: none) and indices.
  std::uint32_t near_value[2][2];
  std::int32_t near_index[2][2];
  std::int32_t query_popc[2];
  std::uint32_t limit[2];

  __device__ __forceinline__ void clear(int h) {
    best[h].clear();
    pair_key[h][0] = pair_key[h][1] = 0xffffffffu;
    near_value[h][0] = near_value[h][1] = row_empty, near_index[h][0] = near_index[h][1] = 0;
    limit[h] = wgmma_open;
  }
  /// The row's list as whole (distance, index) keys.
  __device__ __forceinline__ key_list<Kcap> list(int h) const {
    if constexpr (row_lists) {
      key_list<Kcap> out;
#pragma unroll
      for (int j = 0; j < 2; ++j)
        out.key[j] = near_value[h][j] == row_empty
                         ? empty_key
                         : match_key(std::int32_t(near_value[h][j]) - std::int32_t(bias) + query_popc[h], near_index[h][j]);
      return out;
    } else {
      return best[h];
    }
  }

  /// The limit a distance bound gives row h (no_limit: wgmma_open): the keys of smaller distances.
  __device__ __forceinline__ std::uint32_t limit_of(int h, std::int32_t distance) const {
    return distance == no_limit ? wgmma_open : std::uint32_t(distance - query_popc[h] + std::int32_t(bias)) << shift;
  }

  /// The keys of columns 8j + 2t (low half) and 8j + 2t + 1 (high half) of the part, row g (e[0])
  /// and row g + 8 (e[1]); no half borrows from the other (each stays in [0, 2 bias] << shift,
  /// plus the word, or is the padding).
  __device__ __forceinline__ static void make_keys(const std::uint32_t (&d)[64], const std::uint32_t (&pb)[16],
                                                   std::uint32_t (&e)[2][16]) {
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      e[0][j] = pb[j] - (2u << shift) * __byte_perm(d[4 * j], d[4 * j + 1], 0x5410);
      e[1][j] = pb[j] - (2u << shift) * __byte_perm(d[4 * j + 2], d[4 * j + 3], 0x5410);
    }
  }

  /// A row's least key a half over the lane's 32 columns: two chains of three-way 16-bit mins.
  __device__ __forceinline__ static std::uint32_t row_least(const std::uint32_t (&e)[16]) {
    std::uint32_t low = __vimin3_u16x2(e[0], e[1], e[2]), high = __vimin3_u16x2(e[3], e[4], e[5]);
    low = __vimin3_u16x2(low, e[6], e[7]), high = __vimin3_u16x2(high, e[8], e[9]);
    low = __vimin3_u16x2(low, e[10], e[11]), high = __vimin3_u16x2(high, e[12], e[13]);
    low = __vimin3_u16x2(low, e[14], e[15]);
    return __vminu2(low, high);
  }

  /// Row lists: a group's least key (key16: value << 4 | word, wgmma_key_shift 4) as a slice key,
  /// value << slice_value_shift | word << 3 | `place` (part << 7 | 2t + half): (value << 4) x (2^17
  /// - 8) + key16 x 8 + place, two multiply-adds.
  __device__ __forceinline__ static std::uint32_t slice_key(std::uint32_t key16, std::uint32_t place) {
    static_assert(slice_value_shift == 21, "value << 4 times 2^17 is value << 21");
    return (key16 & 0xfff0u) * ((1u << 17) - 8u) + key16 * 8u + place;
  }

  /// Row lists: the two group keys of row h's part (`least`: its least key a half) into the
  /// lane's two least; `place`: part << 7 | 2t.
  __device__ __forceinline__ void take_groups(int h, std::uint32_t least, std::uint32_t place) {
    const std::uint32_t low = slice_key(least & 0xffffu, place), high = slice_key(least >> 16, place + 1u);
    merge_two_smallest(pair_key[h][0], pair_key[h][1], min(low, high), max(low, high));
  }

  /// Row lists: the row's two least group keys (the four lanes' merged, alike in the four; their
  /// columns differ, so no key comes twice).
  __device__ __forceinline__ void row_pair(cuda_lane& lane, int h, std::uint32_t& k1, std::uint32_t& k2) const {
    k1 = pair_key[h][0], k2 = pair_key[h][1];
    merge_two_smallest(k1, k2, shuffle_xor(lane, k1, 1, 32), shuffle_xor(lane, k2, 1, 32));
    merge_two_smallest(k1, k2, shuffle_xor(lane, k1, 2, 32), shuffle_xor(lane, k2, 2, 32));
  }

  /// Row lists: the limit of row h, the value of its second least group key: a later column must
  /// be strictly nearer to enter (the group keys have 2047, row_empty, for padding and none).
  __device__ __forceinline__ void limit_from(int h, std::uint32_t k2) {
    limit[h] = (k2 >> slice_value_shift) << shift;
  }

  /// Row lists, the first fill: a slice's first parts (knn_tuning::wgmma_fill_parts), where a row's
  /// two least group keys change so often that nearly every warp would take the slow path, give
  /// every group key to the lanes' two least (no shuffles, no limits); end_fill then gives the rows
  /// their limits. `part`: the part's place in the slice.
  __device__ __forceinline__ void fill_part(const std::uint32_t (&d)[64], const std::uint32_t (&pb)[16], int t,
                                            int part) {
    const std::uint32_t place = (static_cast<std::uint32_t>(part) << 7) | (2u * static_cast<std::uint32_t>(t));
    std::uint32_t e[2][16];
    make_keys(d, pb, e);
#pragma unroll
    for (int h = 0; h < 2; ++h) take_groups(h, row_least(e[h]), place);
  }

  /// Row lists: the end of the first fill: each row's limit from its four lanes' group keys.
  __device__ __forceinline__ void end_fill(cuda_lane& lane) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      std::uint32_t k1, k2;
      row_pair(lane, h, k1, k2);
      limit_from(h, k2);
    }
  }

  /// Row lists: column j (0..15) of the group of the column `first` (a place in the slice): 8j +
  /// first % 8 of first's part.
  __device__ __forceinline__ static std::uint32_t group_column(std::uint32_t first, int j) {
    return (first & ~0x78u) | (static_cast<std::uint32_t>(j) << 3);
  }

  /// A lane's quarter of a row (words [w0, w0 + 2C) of its `words`, zeros past them): whole
  /// vectors (`Vectors`: the rows allow them; each vector then all in the row or all past it), or words.
  template <bool Vectors>
  __device__ __forceinline__ static void quarter_of(const std::uint32_t* row, int w0, int words, std::uint32_t (&x)[2 * C]) {
    constexpr int vector = C % 2 == 0 ? 4 : 2;
    if constexpr (Vectors) {
#pragma unroll
      for (int v = 0; v < 2 * C; v += vector) {
        if constexpr (vector == 4) {
          const uint4 y = w0 + v < words ? __ldg(reinterpret_cast<const uint4*>(row + w0 + v)) : make_uint4(0, 0, 0, 0);
          x[v] = y.x, x[v + 1] = y.y, x[v + 2] = y.z, x[v + 3] = y.w;
        } else {
          const uint2 y = w0 + v < words ? __ldg(reinterpret_cast<const uint2*>(row + w0 + v)) : make_uint2(0, 0);
          x[v] = y.x, x[v + 1] = y.y;
        }
      }
    } else {
#pragma unroll
      for (int v = 0; v < 2 * C; ++v) x[v] = w0 + v < words ? __ldg(row + w0 + v) : 0u;
    }
  }

  /// Row lists: the lane's quarter (words from w0) of the distances from `query_row` to the 16
  /// columns 8j + (first % 8) of the first's part (`slice`: the slice's first row; a column past
  /// its `rows` reads the first's row instead). The query's quarter first, then the columns' in
  /// turns whose loads are in flight together (all 16 at 256 bits, 8 at 512, 4 above: registers).
  template <bool Vectors>
  __device__ __forceinline__ static void group_distances(const std::uint32_t* query_row, const std::uint32_t* slice,
                                                         std::uint32_t first, std::int64_t rows, int words, int w0,
                                                         int (&part_distance)[16]) {
    constexpr int turn = C == 1 ? 16 : C == 2 ? 8 : 4;
    std::uint32_t query_words[2 * C], x[turn][2 * C];
    quarter_of<Vectors>(query_row, w0, words, query_words);
#pragma unroll
    for (int j0 = 0; j0 < 16; j0 += turn) {
#pragma unroll
      for (int j = 0; j < turn; ++j) {
        const std::uint32_t column = group_column(first, j0 + j);
        quarter_of<Vectors>(slice + std::int64_t(column < rows ? column : first) * words, w0, words, x[j]);
      }
#pragma unroll
      for (int j = 0; j < turn; ++j) {
        int distance = 0;
#pragma unroll
        for (int v = 0; v < 2 * C; ++v) distance += __popc(query_words[v] ^ x[j][v]);
        part_distance[j0 + j] = distance;
      }
    }
  }

  /// Row lists: the end of a slice (rows [begin, begin + rows) of `train`, `words` words a row; its
  /// first index `column0`): the rows' lists. Row h's nearest is its least group key; its second
  /// the lesser of the second least group key (every group the screen left out has a least key
  /// above it) and the second least key of the first's group, computed from the rows: each of the
  /// row's four lanes reads a quarter of the query row and of each of the group's 16 rows (a load
  /// of the warp touches one row a group of four lanes), and the partial distances are summed over
  /// the four lanes. All the loads are issued before any is used: the warp waits for memory once.
  __device__ __forceinline__ void end_slice(cuda_lane& lane, const std::uint32_t* query, std::int64_t queries,
                                            const std::uint32_t* train, int words, std::int64_t row0,
                                            std::int64_t begin, std::int64_t rows, std::int32_t column0, int t) {
    constexpr int quarter = 2 * C, vector = C % 2 == 0 ? 4 : 2;  // a lane's words of a row; its loads
    std::uint32_t k1[2], k2[2], first[2], second[2] = {0xffffffffu, 0xffffffffu};
#pragma unroll
    for (int h = 0; h < 2; ++h) row_pair(lane, h, k1[h], k2[h]), first[h] = k1[h] & slice_place_mask;
    const bool vectors = words % vector == 0 &&
                         (reinterpret_cast<std::uintptr_t>(train) | reinterpret_cast<std::uintptr_t>(query)) % (4 * vector) == 0;
    const int w0 = quarter * t;
    const bool odd = (t & 1) != 0, upper = (t & 2) != 0;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (rows == 0) break;  // (the block's slice, so the same in the warp; rows, so a first among them)
      int part_distance[16];  // the lane's quarter of the distance to column j
      const std::uint32_t* query_row = query + (row0 + 8 * h < queries ? row0 + 8 * h : queries - 1) * words;
      if (vectors) group_distances<true>(query_row, train + begin * words, first[h], rows, words, w0, part_distance);
      else group_distances<false>(query_row, train + begin * words, first[h], rows, words, w0, part_distance);
      // Summed over the four lanes: lane t ends with columns j = 8 (t & 1) + 4 (t >> 1) + i.
      int half_sum[8], sum[4];
      // (The halves sent are values, not a reference into the arrays: shuffle_xor takes a
      // reference, and one chosen at run time puts the whole array in local memory.)
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int kept = odd ? part_distance[8 + i] : part_distance[i];
        const int sent = odd ? part_distance[i] : part_distance[8 + i];
        half_sum[i] = kept + shuffle_xor(lane, sent, 1, 32);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int kept = upper ? half_sum[4 + i] : half_sum[i];
        const int sent = upper ? half_sum[i] : half_sum[4 + i];
        sum[i] = kept + shuffle_xor(lane, sent, 2, 32);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const std::uint32_t column = group_column(first[h], 8 * (t & 1) + 4 * (t >> 1) + i);
        const std::uint32_t key = (std::uint32_t(sum[i] - query_popc[h] + std::int32_t(bias)) << slice_value_shift) | column;
        if (column != first[h] && column < rows) second[h] = min(second[h], key);
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      second[h] = min(second[h], shuffle_xor(lane, second[h], 1, 32));
      second[h] = min(second[h], shuffle_xor(lane, second[h], 2, 32));
      const std::uint32_t k = min(k2[h], second[h]);
      near_value[h][0] = min(k1[h] >> slice_value_shift, row_empty), near_value[h][1] = min(k >> slice_value_shift, row_empty);
      near_index[h][0] = column0 + std::int32_t(first[h]), near_index[h][1] = column0 + std::int32_t(k & slice_place_mask);
    }
  }

  /// The epilogue of one 128-column part of a tile (its columns from `column0` on; accumulators d;
  /// the part's row popcounts as keys, a word per column pair, in pb): two pairs per word and a
  /// packed minimum per row; only when a lane of the warp holds a row whose least key beats its
  /// limit (rare once the lists are full) does the warp go on to the lists and the new limits.
  /// `spill`: this thread's 16 words of shared memory, 4 x 16 bytes `stride` uint4 apart (per-lane
  /// lists only).
  __device__ __forceinline__ void search_tile(cuda_lane& lane, const std::uint32_t (&d)[64],
                                              const std::uint32_t (&pb)[16], std::int32_t column0, int part, int t,
                                              uint4* spill, int stride) {
    std::uint32_t e[2][16];
    make_keys(d, pb, e);
    // Per-lane lists (1024 bits), k = 2: a list that is not full yet (the slice's first tile) would
    // take every column: the limit becomes one more than the row's second least key in this tile,
    // so that only the two smallest (and their ties) are inserted; a column above it is farther
    // than both. (Row lists take a row's two least keys outright.)
    if constexpr (!row_lists && Kcap == 2) {
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
          merge_two_smallest(s1, s2, shuffle_xor(lane, s1, 1, 32), shuffle_xor(lane, s2, 1, 32));
          merge_two_smallest(s1, s2, shuffle_xor(lane, s1, 2, 32), shuffle_xor(lane, s2, 2, 32));
          limit[h] = min(limit[h], min(s2 + 1u, wgmma_open));
        }
      }
    }
    bool hit[2];
    std::uint32_t least[2];  // per half, the row's least key over the lane's 32 columns
    const std::uint32_t limits[2] = {limit[0] * 0x10001u, limit[1] * 0x10001u};  // in both halves
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      least[h] = row_least(e[h]);
      hit[h] = halves_below(least[h], limits[h]) != 0;
    }
    if (!__any_sync(0xffffffffu, hit[0] || hit[1])) return;
    if constexpr (row_lists) {
      // A row half that hits: each lane's two group keys into its two least, and the row's new
      // limit from the four lanes'. Both halves at once where both hit (a slice's first screened
      // parts), so that their shuffles interleave.
      const std::uint32_t place = (static_cast<std::uint32_t>(part) << 7) | (2u * static_cast<std::uint32_t>(t));
      const bool first = __any_sync(0xffffffffu, hit[0]), second = __any_sync(0xffffffffu, hit[1]);
      std::uint32_t k1, k2;
      if (first && second) {
        take_groups(0, least[0], place);
        take_groups(1, least[1], place);
        std::uint32_t j1, j2;
        row_pair(lane, 0, k1, k2);
        row_pair(lane, 1, j1, j2);
        limit_from(0, k2);
        limit_from(1, j2);
      } else if (first) {
        take_groups(0, least[0], place);
        row_pair(lane, 0, k1, k2);
        limit_from(0, k2);
      } else {
        take_groups(1, least[1], place);
        row_pair(lane, 1, k1, k2);
        limit_from(1, k2);
      }
    } else {
#pragma unroll
      for (int h = 0; h < 2; ++h)
        if (hit[h]) insert_below(e[h], h, limits[h], column0 + 2 * t, spill, stride);
      share_limits(lane);
    }
  }

  /// Per-lane lists: inserts row h's columns below its limit (`limits`: in both halves; `column0`:
  /// the lane's first column). A bit per column below it (word j's halves go to bits 2j and 2j + 16
  /// for j < 8, 2(j - 8) + 1 and 2(j - 8) + 17 above: one shift and one OR a word), the words parked
  /// in shared memory, and one insertion loop over the bits (a single copy of the insertion, and no
  /// local memory). The keys are whole (distance, index), so the order of the insertions does not
  /// matter.
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
      const std::uint32_t v = ((word >> (16 * half)) & 0xffffu) >> shift;
      best[h].insert(match_key(std::int32_t(v) - std::int32_t(bias) + query_popc[h], column0 + 8 * j + half));
    }
    // k <= 2: share_limits takes the union's bound, which is below this list's.
    if constexpr (Kcap != 2) limit[h] = min(limit[h], limit_of(h, best[h].threshold()));
  }

  /// Per-lane lists, after insertions: each row's limit from the four lanes' lists. Later columns
  /// are higher than every column seen, so a pair must beat the k-th best of the four lists
  /// together. k <= 2: merged exactly from the lanes' two best, the same in the four lanes (so are
  /// their limits before: the shared one, or the first tile's, less their own lists' thresholds,
  /// which the union's is below); else the smallest of the four lanes' limits.
  __device__ __forceinline__ void share_limits(cuda_lane& lane) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if constexpr (Kcap == 2) {
        // The keys' high words: the distances, and 0xffffffff (above them all) for an empty entry.
        std::uint32_t a0 = static_cast<std::uint32_t>(best[h].key[0] >> 32), a1 = static_cast<std::uint32_t>(best[h].key[1] >> 32);
        merge_two_smallest(a0, a1, shuffle_xor(lane, a0, 1, 32), shuffle_xor(lane, a1, 1, 32));
        merge_two_smallest(a0, a1, shuffle_xor(lane, a0, 2, 32), shuffle_xor(lane, a1, 2, 32));
        if (a1 != 0xffffffffu) limit[h] = min(limit[h], limit_of(h, std::int32_t(a1)));
      } else {
        std::uint32_t bound = limit[h];
        bound = min(bound, shuffle_xor(lane, bound, 1, 32));
        limit[h] = min(bound, shuffle_xor(lane, bound, 2, 32));
      }
    }
  }
};

#endif  // MULTIREDUCE_MATCH_WGMMA_BODY

/// One training tile as the wgmma kernel reads it (the tiling kernel writes them, the search
/// copies each whole into shared memory): its wgmma_train_tile rows' C 256-bit chunks laid out as
/// wgmma's no-swizzle K-major core matrices (chunk c, row r, half h of 16 bytes at c x 32 x
/// wgmma_train_tile + (r / 8) x 256 + h x 128 + (r % 8) x 16), then the rows' keys with no AND counted (wgmma_key_shift), two rows (2p, 2p + 1) a word,
/// ordered so that lane t of a group reads its 16 words of each 128 rows with four 16-byte loads.
/// Rows past the slice's end are zeros with the popcount wgmma_padding.
__host__ __device__ inline constexpr int wgmma_tile_bytes(int chunks) {
  return chunks * knn_tuning::wgmma_train_tile * 32 + knn_tuning::wgmma_train_tile / 2 * 4;
}

/// Where slice s of a search (rows [begin, end) of its training set) has its tiles: from tile
/// begin / wgmma_train_tile + s of the search's tiles on, or where the slice's bounds say (the
/// collection's images). The first rule never lets two slices' tiles overlap (slice s has at
/// most (end - begin) / wgmma_train_tile + 1 tiles), whatever the bounds, and a set of `trains` rows in `slices` slices
/// takes at most wgmma_tiles_bound tiles.
__host__ __device__ inline std::int64_t wgmma_even_first_tile(std::int64_t begin, int slice) {
  return begin / knn_tuning::wgmma_train_tile + slice;
}
__device__ __forceinline__ std::int64_t wgmma_first_tile(const knn_problem& p, int slice, std::int64_t begin) {
  return p.slice_bounds != nullptr ? p.slice_bounds[3 * slice + 2] : wgmma_even_first_tile(begin, slice);
}
inline std::int64_t wgmma_tiles_bound(std::int64_t trains, std::int64_t slices) {
  return trains / knn_tuning::wgmma_train_tile + slices + 1;
}

/// One tile of the tiling kernel: rows [first, first + 256) of `train` that are below `end` (the
/// rest zeros with the padding popcount), a thread a row, at `to`.
template <int C>
__device__ __forceinline__ void tile_rows(cuda_lane& lane, const std::uint32_t* train, std::int64_t first,
                                          std::int64_t end, int words, std::uint8_t* to) {
  constexpr int chunk_bytes = knn_tuning::wgmma_train_tile * 32;
  const int r = static_cast<int>(threadIdx.x);
  const bool in = first + r < end;
  const std::uint32_t* from = train + (in ? (first + r) * words : 0);
  int ones = 0;
#pragma unroll
  for (int c = 0; c < C; ++c) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      std::uint32_t v[4];
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const int word = c * 8 + h * 4 + w;
        v[w] = in && word < words ? __ldg(from + word) : 0u;
        ones += __popc(v[w]);
      }
      *reinterpret_cast<uint4*>(to + c * chunk_bytes + (r >> 3) * 256 + h * 128 + (r & 7) * 16) =
          make_uint4(v[0], v[1], v[2], v[3]);
    }
  }
  // The row's key with no AND counted: its biased popcount, and its word (r % 128) / 8 (row pairs
  // 2p, 2p + 1 share a word; columns 8j + 2t and + 1 of a part go to word j of lane t).
  constexpr int shift = wgmma_key_shift(C);
  const std::uint32_t key = in ? ((std::uint32_t(ones) + wgmma_bias(C)) << shift) | (shift != 0 ? std::uint32_t((r & 127) >> 3) : 0u)
                               : wgmma_padding;
  const std::uint32_t next = shuffle_down(lane, key, 1, 32);  // row r + 1
  if ((r & 1) == 0) {
    const int pair = r >> 1;
    reinterpret_cast<std::uint32_t*>(to + C * chunk_bytes)[(pair >> 6) * 64 + (pair & 3) * 16 + ((pair & 63) >> 2)] =
        key | (next << 16);
  }
}

/// The tiling kernel: block (x, y, z) writes tile x of slices y, y + gridDim.y, ... of search z of
/// the launch into the search's tiles (knn_problem::tiles), a thread a row (its popcount with
/// it), so that the search reads each tile with one bulk copy and counts no bits. Blocks past a
/// slice's tiles, a search's slices or the launch's searches do nothing.
template <int C>
__global__ void __launch_bounds__(knn_tuning::wgmma_train_tile)
    knn_wgmma_tile_kernel(const __grid_constant__ knn_launch launch, int words) {
  constexpr int tile = knn_tuning::wgmma_train_tile;
  allow_next_grid();  // the search's blocks start meanwhile, and wait for this grid's end to read
  if (static_cast<int>(blockIdx.z) >= launch.count) return;
  cuda_lane lane;
  const knn_problem& p = launch.problem[blockIdx.z];
  for (int slice = static_cast<int>(blockIdx.y); slice < p.slices; slice += static_cast<int>(gridDim.y)) {
    std::int64_t begin, end;
    slice_rows(p, slice, begin, end);
    const std::int64_t first = begin + std::int64_t(blockIdx.x) * tile;
    if (first < end)  // the same in the block
      tile_rows<C>(lane, p.train, first, end, words,
                   p.tiles + (wgmma_first_tile(p, slice, begin) + blockIdx.x) * wgmma_tile_bytes(C));
  }
}
/// Block: `Warpgroups` warpgroups (knn_tuning's shapes: 4, one block an SM, for lone searches; 2,
/// two blocks an SM, whose starts and ends overlap, for the short slices of batches and
/// collections), each with 64 queries' A fragments in registers
/// (warp w of the block holds rows 16w .. 16w + 15 of the block's queries), sharing the training
/// tiles of wgmma_train_tile rows, searched 128 rows at a time (one wgmma per 256-bit chunk).
/// The tiles (wgmma_tile_bytes, as the tiling kernel wrote them) come through shared memory
/// (dynamic, wgmma_shared_bytes) in a ring of `stages` buffers, each filled by one bulk copy, which
/// the last warp done with a buffer issues for its next tile; an mbarrier a buffer, not block
/// barriers, says when its tile is in.
/// Accumulator layout (lane: g = lane / 4, t = lane % 4): d[4j], d[4j+1] = row g, columns 8j + 2t
/// and + 1; d[4j+2], d[4j+3] = row g + 8, the same columns.
template <int C, int Kcap, int Warpgroups>
__global__ void __launch_bounds__(knn_tuning::wgmma_block_threads(Warpgroups), knn_tuning::wgmma_blocks_per_sm(Warpgroups))
    knn_wgmma_kernel(const __grid_constant__ knn_launch launch, int words) {
#if defined(MULTIREDUCE_MATCH_WGMMA_BODY)
  constexpr int tile = knn_tuning::wgmma_train_tile, chunk_bytes = tile * 32, tile_bytes = wgmma_tile_bytes(C);
  constexpr int stages = knn_tuning::wgmma_stages(C, Warpgroups);
  constexpr int threads = knn_tuning::wgmma_block_threads(Warpgroups);
  constexpr int block_queries = knn_tuning::wgmma_block_queries(Warpgroups);
  static_assert(tile % 128 == 0 && tile_bytes % 128 == 0, "wgmmas of 128 rows, tiles 128-byte aligned");
  static_assert(stages >= 2, "a buffer is refilled a tile after its last search: a ring of two or more");
  constexpr int parts = tile / 128;  // wgmmas (and searches) of 128 rows a tile
  extern __shared__ __align__(128) std::uint8_t ring[];  // stages x tile_bytes
  // The per-lane lists' parked words, thread-minor (no bank conflicts); unused (and left out by
  // the compiler) with row lists.
  __shared__ uint4 spill[4][threads];
  const knn_block at = locate_block<true>(launch);  // always a 1-D grid over the launch's table
  const knn_problem& p = launch.problem[at.problem];
  cuda_lane lane;
  const int g = lane.id() >> 2, t = lane.id() & 3;
  const std::int64_t row0 = std::int64_t(at.query_block) * block_queries + lane.warp_id() * 16 + g;
  std::uint32_t a[C][4];
  wgmma_rows<C, Kcap> mine;
  {
    load_query_fragments<C>(lane, p.query, p.queries, words, row0, t, a, mine.query_popc);
#pragma unroll
    for (int h = 0; h < 2; ++h) mine.clear(h);
  }

  std::int64_t begin, end;
  slice_rows(p, at.slice, begin, end);
  const int slice_tiles = static_cast<int>((end - begin + tile - 1) / tile);  // the counts fit int32
  const std::uint8_t* tiles = p.tiles + wgmma_first_tile(p, at.slice, begin) * tile_bytes;
  // The ring: tile j in buffer j % stages (positions kept as counters that wrap: a division of
  // tile numbers cost some 60 instructions a tile). `full` completes when the tile's bulk copy has
  // landed; `searched` counts the warps done with the buffer's tile, and the last of them refills
  // the buffer with tile j + stages (when it next looks, a tile later), so that no warp ever waits
  // for a free buffer and a warp waits for a tile only when it is some `stages` tiles ahead of the
  // slowest.
  __shared__ __align__(8) std::uint64_t full[stages];
  __shared__ int searched[stages];
  auto load = [&](int tile_index, int into) {  // by one thread
    stage_expect(&full[into], tile_bytes);
    stage_bulk_copy(ring + into * tile_bytes, tiles + std::int64_t(tile_index) * tile_bytes, tile_bytes, &full[into]);
  };
  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < stages; ++s) ::cuda::ptx::mbarrier_init(&full[s], 1), searched[s] = 0;
    ::cuda::ptx::fence_mbarrier_init(::cuda::ptx::sem_release, ::cuda::ptx::scope_cluster);
  }
  __syncthreads();
  // A search's last query block may leave whole warpgroups without queries (a batch's pairs, or
  // 10,000 queries: 16 rows in the last block): those leave now, so that the others have the SM's
  // issue slots, and the warps done with a buffer are counted up to the busy ones.
  const std::int64_t queries_left = p.queries - std::int64_t(at.query_block) * block_queries;
  const int busy_warps = queries_left >= block_queries ? threads / 32 : 4 * static_cast<int>((queries_left + 63) / 64);
  if (lane.warp_id() >= busy_warps) return;
  // Lone searches and batches launch it overlapping their tiling kernel (programmatic dependent
  // launch): everything above ran meanwhile, and the tiles are read only once that has completed
  // (the collection's were made before: the wait returns at once).
  if (threadIdx.x == 0) {
    wait_for_previous_grid();
    for (int j = 0; j < stages && j < slice_tiles; ++j) load(j, j);
  }
  // The buffers' addresses made once (their conversions to shared addresses and descriptors cost
  // a dozen instructions a tile, and a read of the block's shared window): the descriptor of
  // buffer 0 (a buffer's is tile_bytes / 16 on, the 14-bit address field never carries), and the
  // shared addresses of the first barrier and the first counter.
  // (Passed through an opaque move, or the compiler makes them again at every use.)
  const std::uint64_t ring_descriptor = opaque(wgmma_descriptor(ring, 128, 256));
  const std::uint32_t full_at = opaque(static_cast<std::uint32_t>(__cvta_generic_to_shared(full)));
  const std::uint32_t searched_at = opaque(static_cast<std::uint32_t>(__cvta_generic_to_shared(searched)));
  auto issue = [&](std::uint32_t (&d)[64], int buf, int part) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int c = 0; c < C; ++c)
      wgmma_and_popc(d, a[c], ring_descriptor + std::uint32_t((buf * tile_bytes + c * chunk_bytes + part * 4096) >> 4), c);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  };
  // A part's accumulators, once its wgmma is waited for, and the keys of its rows' popcounts.
  auto part_operands = [&](std::uint32_t (&d)[64], int buf, int part, std::uint32_t (&pb)[16]) {
#pragma unroll
    for (int i = 0; i < 64; ++i) wgmma_fence_operand(d[i]);
    const auto* popc = reinterpret_cast<const uint4*>(ring + buf * tile_bytes + C * chunk_bytes) + part * 16 + t * 4;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const uint4 v = popc[q];
      pb[4 * q] = v.x, pb[4 * q + 1] = v.y, pb[4 * q + 2] = v.z, pb[4 * q + 3] = v.w;
    }
  };
  auto search = [&](std::uint32_t (&d)[64], std::uint32_t column0, int buf, int part, int slice_part) {
    std::uint32_t pb[16];
    part_operands(d, buf, part, pb);
    mine.search_tile(lane, d, pb, static_cast<std::int32_t>(column0 + part * 128), slice_part, t,
                     &spill[0][threadIdx.x], threads);
  };
  auto fill = [&](std::uint32_t (&d)[64], int buf, int part, int slice_part) {
    std::uint32_t pb[16];
    part_operands(d, buf, part, pb);
    mine.fill_part(d, pb, t, slice_part);
  };
  constexpr bool first_fill = wgmma_rows<C, Kcap>::row_lists;
  constexpr int fill_parts = knn_tuning::wgmma_fill_parts;
  static_assert(fill_parts >= 1, "the row lists' limits come from the first fill");
  // A tile at a time: its wgmma, then the search of its distances; the other warpgroups keep the
  // tensor cores busy meanwhile.
  std::uint32_t d[64];
  int buf = 0;
  std::uint32_t parity = 0;  // of the buffer's use: (tile / stages) % 2
  // The tile's first training index (first_train_index + row fits int32; unsigned, so that the
  // step past the last tile, which may pass INT32_MAX, is no signed overflow) and the slice's rows
  // left.
  std::uint32_t column0 = static_cast<std::uint32_t>(begin + p.first_train_index);
  int next_tile = stages;  // the tile that follows this one in its buffer
  // The last tile's count of the warps done with its buffer before this warp (lane 0's), that
  // buffer, and the tile it is to hold next.
  int ticket = 0, ticket_buffer = 0, ticket_tile = 0;
  const auto slice_column0 = static_cast<std::int32_t>(column0);
  int slice_part = 0;  // the slice's parts searched
  for (int left = static_cast<int>(end - begin); left > 0; left -= tile, column0 += tile) {
    stage_wait(full_at + 8u * static_cast<std::uint32_t>(buf), parity);
#pragma unroll
    for (int part = 0; part < parts; ++part) {
      if (part > 0 && part * 128 >= left) break;  // only padding left
      issue(d, buf, part);
      asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
      if constexpr (first_fill) {
        if (slice_part < fill_parts) {
          fill(d, buf, part, slice_part);
          if (++slice_part == fill_parts) mine.end_fill(lane);
          continue;
        }
      }
      search(d, column0, buf, part, slice_part++);
    }
    // The warp is done with the buffer (its wgmmas waited for, its popcounts read) and says so
    // (an atomic count with release and acquire: the others' reads come before the copy); the
    // count is read a tile later, when it has long come back (waiting for it cost some 4% of the
    // stall samples), and the last warp of a buffer refills it then.
    __syncwarp();
    if (lane.id() == 0) {
      if (ticket == busy_warps - 1) {
        searched[ticket_buffer] = 0;
        if (ticket_tile < slice_tiles) load(ticket_tile, ticket_buffer);
      }
      ticket = arrive_counting(searched_at + 4u * static_cast<std::uint32_t>(buf));
    }
    ticket_buffer = buf, ticket_tile = next_tile;
    ++next_tile;
    if (++buf == stages) buf = 0, parity ^= 1u;
  }
  if constexpr (first_fill)
    mine.end_slice(lane, p.query, p.queries, p.train, words, row0, begin, end - begin, slice_column0, t);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if constexpr (!wgmma_rows<C, Kcap>::row_lists) mine.best[h].merge_lanes(lane, 1), mine.best[h].merge_lanes(lane, 2);
    const std::int64_t q = row0 + 8 * h;
    if (t == 0 && q < p.queries) store_list(p.partials, p.queries, at.slice, q, mine.list(h));
  }
#else
  (void)launch, (void)words;
#endif
}

/// The dynamic shared memory of knn_wgmma_kernel<C, Kcap, Warpgroups>: its ring of training tiles.
inline constexpr int wgmma_shared_bytes(int chunks, int warpgroups) {
  return knn_tuning::wgmma_stages(chunks, warpgroups) * wgmma_tile_bytes(chunks);
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
