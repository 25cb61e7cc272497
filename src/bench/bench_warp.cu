// bench_warp.cu -- suite "warp": the paper's section-7 benchmark, the sums of all 32-element windows
// of an array, one warp-level reduction routine per kernel.
//
// Each warp computes its windows in rounds of 32: in a round starting at window `first`, lane l
// loads in[first + w + l] for w = 0..31 (value w belongs to window first + w; for each w the lanes
// read consecutive elements, so every load is coalesced, and the 32 loads of a round overlap in
// the cache), a warp routine reduces the 32 batches over the 32 lanes so that lane l holds window
// first + l, and lane l writes it (coalesced). The windows overlap so much that the kernels are
// bound by the reduction, not by memory: that is the point of the benchmark.
//
// All kernels share the load code, the window assignment and (but for CUB) the store; only the
// reduction differs. One kernel instantiation per (type, variant), named
// window_sums_kernel<T, via_VARIANT>, so `cuobjdump --dump-sass` shows one function per variant
// (scripts/count_shfl.sh counts their SHFL).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <cub/warp/warp_reduce.cuh>
#include <nlohmann/json.hpp>

#include <multireduce/cuda/detail/launch.cuh>
#include <multireduce/cuda_lane.cuh>
#include <multireduce/multireduce.hpp>

#include "bench_util.cuh"

namespace multireduce::bench {

namespace warp_suite {

constexpr int window = 32;                                  ///< elements per window = lanes per warp
constexpr int block_threads = 256;                          ///< the paper's block size
constexpr int warps_per_block = block_threads / window;
constexpr int windows_per_block = 1 << 14;                  ///< the paper's 16384 windows per block
constexpr int rounds_per_warp = windows_per_block / block_threads;  ///< 64 rounds of 32 windows
static_assert(windows_per_block % (2 * block_threads) == 0, "a warp's rounds must pair up for online-x2");
constexpr std::uint64_t input_seed = 20170127;              ///< fixed so runs are comparable; printed
constexpr int input_magnitude = 8;                          ///< inputs uniform in [-8, 8]: every sum is exact
constexpr int poison_byte = 0x7f;  ///< not 0xFF: all-ones is the int -1, a possible window sum; 0x7f7f... is none

}  // namespace warp_suite

/// Shared memory a variant keeps per warp; the shuffle-based ones need none.
struct no_warp_storage {};

/// Loads the 32 values of one round: value w of this lane (window first + w) for w = 0..31.
template <class T, class ValueOf>
__device__ __forceinline__ array<T, warp_suite::window> load_round(ValueOf value_of, int stream) {
  array<T, warp_suite::window> x;
  detail::for_each_index<warp_suite::window>([&](auto w) { x[decltype(w)::value] = value_of(stream, w); });
  return x;
}

// ---- the variants: one tag per warp routine ------------------------------------------------------
// A variant says how many rounds it reduces at once (`rounds`), its per-warp shared memory, and
// reduce(lane, storage, value_of) -> array<T, rounds> with lane l holding window first_s + l of
// each round s; value_of(s, w) loads value w of round s. CUB's variant instead returns the 32 sums
// of one round in lane 0 (results_in_lane_zero).

/// One of the library's warp_multi_reduce algorithms on one round.
template <multi_reduce_algorithm Algorithm>
struct via_library_algorithm {
  static constexpr bool is_multi_reduce = Algorithm != multi_reduce_algorithm::butterfly;
  static constexpr bool results_in_lane_zero = false;
  static constexpr int rounds = 1;
  template <class T>
  using storage = std::conditional_t<Algorithm == multi_reduce_algorithm::shared_exchange,
                                     warp_exchange_storage<T>, no_warp_storage>;

  template <class T, class ValueOf>
  __device__ __forceinline__ static array<T, 1> reduce(cuda_lane& lane, storage<T>& warp_storage, ValueOf value_of) {
    const array<T, warp_suite::window> x = load_round<T>(value_of, 0);
    if constexpr (Algorithm == multi_reduce_algorithm::shared_exchange) {
      return warp_multi_reduce<warp_suite::window, warp_suite::window>(lane, x, sum{}, warp_storage);
    } else {
      (void)warp_storage;
      return warp_multi_reduce<warp_suite::window, warp_suite::window, Algorithm>(lane, x, sum{});
    }
  }
};

/// The baseline: one xor butterfly per window (160 SHFL per round for 32-bit T, 320 for double).
struct via_butterfly : via_library_algorithm<multi_reduce_algorithm::butterfly> {
  static constexpr const char* name = "butterfly";
};
/// 62 SHFL and 31 merges per round (paper section 2).
struct via_select_merge : via_library_algorithm<multi_reduce_algorithm::select_merge> {
  static constexpr const char* name = "select-merge";
};
/// 31 SHFL and 62 selects per round (paper section 4).
struct via_swap : via_library_algorithm<multi_reduce_algorithm::swap> {
  static constexpr const char* name = "swap";
};
/// select_merge keeping lane order (paper section 5); for sum it should cost what select_merge does.
struct via_order_preserving : via_library_algorithm<multi_reduce_algorithm::order_preserving> {
  static constexpr const char* name = "order-preserving";
};
/// select_merge through shared memory: 62 STS and 31 LDS per round, no SHFL (paper section 6).
struct via_shared_exchange : via_library_algorithm<multi_reduce_algorithm::shared_exchange> {
  static constexpr const char* name = "shared-exchange";
};

/// The online (iterative) multi-reducer of paper section 3, "doubled up" as in the paper's
/// benchmark: two interleaved streams, stream 0 = round r and stream 1 = round r + 1, value w of
/// both pushed at step w (62 SHFL per stream per round for 32-bit T).
struct via_online_two_streams {
  static constexpr const char* name = "online-x2";
  static constexpr bool is_multi_reduce = true;
  static constexpr bool results_in_lane_zero = false;
  static constexpr int rounds = 2;
  template <class T>
  using storage = no_warp_storage;

  template <class T, class ValueOf>
  __device__ __forceinline__ static array<T, 2> reduce(cuda_lane& lane, storage<T>&, ValueOf value_of) {
    online_multi_reducer<T, sum, warp_suite::window, 6, 2> reducer;
    detail::for_each_index<warp_suite::window>([&](auto step) {
      reducer.template push<decltype(step)::value>(lane, array<T, 2>{{value_of(0, step), value_of(1, step)}});
    });
    return reducer.results();
  }
};

/// CUB's baseline: 32 separate cub::WarpReduce<T>::Sum calls per round. (CUB 3.0.1 has no batched
/// warp reduction; WarpReduceBatched first ships with CUDA 13.4.) Sum's result is defined in lane
/// 0 only: for float and double the other lanes hold partial shfl.down sums, so handing window w
/// to lane w would cost one more broadcast SHFL per window. Lane 0 therefore keeps the 32 sums and
/// writes them itself with 16-byte stores (8 per round for 32-bit T, 16 for double) -- the cheapest
/// honest store for this baseline. For int on sm_80+, CUB's Sum is one REDUX.SUM (no SHFL at all).
struct via_cub_warp_reduce {
  static constexpr const char* name = "cub";
  static constexpr bool is_multi_reduce = false;
  static constexpr bool results_in_lane_zero = true;
  static constexpr int rounds = 1;
  template <class T>
  using storage = typename cub::WarpReduce<T>::TempStorage;

  template <class T, class ValueOf>
  __device__ __forceinline__ static array<T, warp_suite::window> reduce(cuda_lane&, storage<T>& temp,
                                                                        ValueOf value_of) {
    const array<T, warp_suite::window> x = load_round<T>(value_of, 0);
    array<T, warp_suite::window> sums;
    detail::for_each_index<warp_suite::window>([&](auto w) {
      constexpr int i = decltype(w)::value;  // integral_constant's conversion is host-only without relaxed constexpr
      sums[i] = cub::WarpReduce<T>(temp).Sum(x[i]);
    });
    return sums;
  }
};

/// Writes a round's 32 sums held by one lane, as 16-byte vector stores (`out` is 128-byte aligned:
/// rounds start at multiples of 32 windows).
template <class T>
__device__ __forceinline__ void store_from_one_lane(T* out, const array<T, warp_suite::window>& sums) {
  static_assert(16 % sizeof(T) == 0, "store_from_one_lane: T must divide 16 bytes");
  constexpr int per_vector = 16 / static_cast<int>(sizeof(T));
  detail::for_each_index<warp_suite::window / per_vector>([&](auto v) {
    int4 packed;
    std::memcpy(&packed, &sums.elements[decltype(v)::value * per_vector], sizeof packed);
    reinterpret_cast<int4*>(out)[decltype(v)::value] = packed;
  });
}

/// Sums of the windows of 32 elements: block b owns windows [b * 2^14, (b+1) * 2^14); in round r
/// warp w of the block computes the 32 windows starting at b * 2^14 + r * 256 + w * 32, so the
/// block's warps work on neighbouring data at the same time. The grid covers the windows exactly
/// (the host sizes it so): no bounds checks.
template <class T, class Variant>
__global__ void __launch_bounds__(warp_suite::block_threads)
    window_sums_kernel(const T* __restrict__ in, T* __restrict__ out) {
  using storage_type = typename Variant::template storage<T>;
  __shared__ storage_type warp_storage[warp_suite::warps_per_block];
  cuda_lane lane;
  storage_type& storage = warp_storage[lane.warp_id()];
  constexpr int streams = Variant::rounds;
  const std::int64_t warp_first = std::int64_t(blockIdx.x) * warp_suite::windows_per_block +
                                  std::int64_t(lane.warp_id()) * warp_suite::window;
  // Pointers advance by whole rounds, so the loop carries two pointers and no 64-bit index math.
  const T* lane_in = in + warp_first + lane.id();  // this lane's value 0 of the current round
  T* round_out = out + warp_first;                  // the current round's first window
  // One loop iteration per `streams` rounds, not unrolled: the SASS of one iteration is one pass
  // of the reduction, which is what count_shfl.sh counts.
#pragma unroll 1
  for (int round = 0; round < warp_suite::rounds_per_warp; round += streams) {
    // Value w of round s of this pass: this lane's element of window first + s * 256 + w.
    const auto value_of = [lane_in](int s, auto w) -> T {
      return __ldg(lane_in + s * warp_suite::block_threads + decltype(w)::value);
    };
    const auto sums = Variant::template reduce<T>(lane, storage, value_of);
    if constexpr (Variant::results_in_lane_zero) {
      if (lane.id() == 0) store_from_one_lane(round_out, sums);
    } else {
#pragma unroll
      for (int s = 0; s < streams; ++s) round_out[s * warp_suite::block_threads + lane.id()] = sums[s];
    }
    lane_in += streams * warp_suite::block_threads;
    round_out += streams * warp_suite::block_threads;
  }
}

// ---- host side -----------------------------------------------------------------------------------

namespace {

template <class... Variants>
struct variant_list {
  /// Calls f(std::type_identity<V>{}) for each variant in order.
  template <class F>
  static void for_each(F&& f) {
    (f(std::type_identity<Variants>{}), ...);
  }
};

/// The kernels of every table, baseline first (the speedups are against it).
using warp_variants = variant_list<via_butterfly, via_select_merge, via_swap, via_order_preserving,
                                   via_shared_exchange, via_online_two_streams, via_cub_warp_reduce>;

template <class T>
constexpr const char* type_name() {
  if constexpr (std::is_same_v<T, int>) return "int";
  else if constexpr (std::is_same_v<T, float>) return "float";
  else return "double";
}

/// The first wrong element of a verification run, and how many there were.
struct verification {
  std::size_t mismatches = 0;
  std::size_t first_index = 0;
  double got = 0, expected = 0;
};

template <class T>
verification compare_exactly(const std::vector<T>& got, const std::vector<T>& expected) {
  verification v;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] == expected[i]) continue;  // the poison (NaN for float and double, huge for int) fails here
    if (v.mismatches++ == 0) {
      v.first_index = i;
      v.got = static_cast<double>(got[i]);
      v.expected = static_cast<double>(expected[i]);
    }
  }
  return v;
}

/// One kernel's outcome for one blocks/SM setting.
struct measurement {
  bool verified = false;
  timing time;
};

/// Runs and reports one element type; appends to record["kernels"] and record["results"].
/// @return true when every kernel verified.
template <class T>
bool run_type(const options& opts, const device_info& device, const std::vector<int>& values,
              const std::vector<int>& blocks_per_sm, int repetitions, nlohmann::json& record) {
  using namespace warp_suite;
  const std::size_t max_windows =
      std::size_t(*std::max_element(blocks_per_sm.begin(), blocks_per_sm.end())) * device.sm_count * windows_per_block;
  const std::size_t elements = max_windows + window - 1;

  std::vector<T> host_in(elements);
  std::transform(values.begin(), values.begin() + std::ptrdiff_t(elements), host_in.begin(),
                 [](int v) { return static_cast<T>(v); });
  // Exact reference: the sums of small integers are exact in every T, so the GPU must match bit for bit.
  std::vector<T> reference(max_windows);
  std::int64_t running = 0;
  for (int i = 0; i < window; ++i) running += values[std::size_t(i)];
  for (std::size_t i = 0; i < max_windows; ++i) {
    if (i > 0) running += values[i + window - 1] - values[i - 1];
    reference[i] = static_cast<T>(running);
  }

  device_buffer<T> in(elements);
  device_buffer<T> out(max_windows);
  in.upload(host_in);

  std::printf("\n%s: %zu windows of %d at %d blocks/SM, %d-thread blocks, %d windows per block; "
              "median of %d launches after %d warm-up (ms), speedup vs butterfly\n",
              type_name<T>(), max_windows, window, *std::max_element(blocks_per_sm.begin(), blocks_per_sm.end()),
              block_threads, windows_per_block, repetitions, opts.warmup);

  // Registers per thread (and spills, which would distort the comparison) of each kernel.
  std::printf("registers/thread:");
  warp_variants::for_each([&](auto tag) {
    using V = typename decltype(tag)::type;
    cudaFuncAttributes attributes{};
    MULTIREDUCE_BENCH_CHECK(cudaFuncGetAttributes(&attributes, window_sums_kernel<T, V>));
    std::printf(" %s %d%s", V::name, attributes.numRegs, attributes.localSizeBytes > 0 ? " (local memory!)" : "");
    record["kernels"].push_back({{"type", type_name<T>()},
                                 {"kernel", V::name},
                                 {"registers", attributes.numRegs},
                                 {"local_bytes", attributes.localSizeBytes},
                                 {"static_shared_bytes", attributes.sharedSizeBytes},
                                 {"streams", V::rounds}});
  });
  std::printf("\n");

  constexpr int cell_width = 17;
  std::printf("%-10s %-10s", "blocks/SM", "windows");
  warp_variants::for_each([&](auto tag) { std::printf(" %-*s", cell_width, decltype(tag)::type::name); });
  std::printf(" %s\n", "best multi-reduce");

  bool all_verified = true;
  for (const int bps : blocks_per_sm) {
    const int grid = bps * device.sm_count;
    const std::size_t windows = std::size_t(grid) * windows_per_block;
    std::vector<measurement> row;
    std::vector<std::string> failures;

    warp_variants::for_each([&](auto tag) {
      using V = typename decltype(tag)::type;
      const auto launch = [&] {
        MULTIREDUCE_BENCH_CHECK(cuda::launch(window_sums_kernel<T, V>, grid, block_threads, 0, nullptr, in.data(), out.data()));
      };
      measurement m;
      out.fill_bytes(poison_byte);
      launch();
      MULTIREDUCE_BENCH_CHECK(cudaDeviceSynchronize());
      const std::vector<T> got = out.download(windows);
      const std::vector<T> expected(reference.begin(), reference.begin() + std::ptrdiff_t(windows));
      const verification v = compare_exactly(got, expected);
      m.verified = v.mismatches == 0;
      if (m.verified) {
        m.time = time_launches(launch, opts.warmup, repetitions);
      } else {
        char text[256];
        std::snprintf(text, sizeof text,
                      "FAIL %s %s at %d blocks/SM: %zu of %zu windows wrong, first [%zu] = %.17g, expected %.17g",
                      type_name<T>(), V::name, bps, v.mismatches, windows, v.first_index, v.got, v.expected);
        failures.emplace_back(text);
      }
      row.push_back(m);
    });

    // Print the row and record it.
    const measurement& baseline = row.front();
    std::printf("%-10d %-10zu", bps, windows);
    std::optional<double> best_speedup;
    const char* best_name = "";
    int index = 0;
    warp_variants::for_each([&](auto tag) {
      using V = typename decltype(tag)::type;
      const measurement& m = row[std::size_t(index++)];
      std::optional<double> speedup;
      if (m.verified && baseline.verified) speedup = baseline.time.median_ms / m.time.median_ms;
      char cell[64];
      if (!m.verified) std::snprintf(cell, sizeof cell, "%8s", "FAIL");
      else if (speedup) std::snprintf(cell, sizeof cell, "%8.4f %5.2fx", m.time.median_ms, *speedup);
      else std::snprintf(cell, sizeof cell, "%8.4f     -", m.time.median_ms);
      std::printf(" %-*s", cell_width, cell);
      if (V::is_multi_reduce && speedup && (!best_speedup || *speedup > *best_speedup)) {
        best_speedup = speedup;
        best_name = V::name;
      }
      nlohmann::json entry = {{"type", type_name<T>()}, {"kernel", V::name}, {"blocks_per_sm", bps},
                              {"grid", grid},           {"windows", windows}, {"verified", m.verified}};
      entry["median_ms"] = m.verified ? nlohmann::json(m.time.median_ms) : nlohmann::json(nullptr);
      entry["min_ms"] = m.verified ? nlohmann::json(m.time.min_ms) : nlohmann::json(nullptr);
      entry["speedup_vs_butterfly"] = speedup ? nlohmann::json(*speedup) : nlohmann::json(nullptr);
      entry["repetitions"] = m.verified ? repetitions : 0;
      record["results"].push_back(entry);
    });
    if (best_speedup) std::printf(" %5.2fx %s\n", *best_speedup, best_name);
    else std::printf(" -\n");
    for (const auto& f : failures) std::printf("  %s\n", f.c_str());
    all_verified = all_verified && failures.empty();
  }
  return all_verified;
}

}  // namespace

int run_warp_suite(const options& opts, const device_info& device, nlohmann::json& record) {
  using namespace warp_suite;
  const std::vector<int> blocks_per_sm = opts.quick ? std::vector<int>{8} : std::vector<int>{1, 2, 4, 8};
  const int repetitions = opts.quick ? 5 : opts.repetitions;

  // One input of small integers for every type, so int, float and double sums are all exact.
  const std::size_t max_windows = std::size_t(blocks_per_sm.back()) * device.sm_count * windows_per_block;
  std::vector<int> values(max_windows + window - 1);
  std::mt19937_64 generator(input_seed);
  std::uniform_int_distribution<int> distribution(-input_magnitude, input_magnitude);
  for (int& v : values) v = distribution(generator);
  std::printf("input: %zu values uniform in [%d, %d] from std::mt19937_64 seed %llu\n", values.size(),
              -input_magnitude, input_magnitude, static_cast<unsigned long long>(input_seed));

  record["seed"] = input_seed;
  record["config"] = {{"window", window},
                      {"block_threads", block_threads},
                      {"windows_per_block", windows_per_block},
                      {"blocks_per_sm", blocks_per_sm},
                      {"repetitions", repetitions},
                      {"warmup", opts.warmup},
                      {"input", "integers uniform in [-8, 8], std::mt19937_64"},
                      {"cub_version", CUB_VERSION},
                      {"cub_store", "lane 0 writes the 32 sums of a round (16-byte stores)"}};
  record["kernels"] = nlohmann::json::array();
  record["results"] = nlohmann::json::array();

  bool ok = true;
  ok = run_type<int>(opts, device, values, blocks_per_sm, repetitions, record) && ok;
  ok = run_type<float>(opts, device, values, blocks_per_sm, repetitions, record) && ok;
  ok = run_type<double>(opts, device, values, blocks_per_sm, repetitions, record) && ok;
  if (!ok) std::printf("\nsome kernels FAILED verification: no time is reported for them\n");
  return ok ? 0 : 1;
}

namespace {

const bool registered = register_suite({"warp", "the paper's section 7: sums of all 32-element windows, every multi-reduce "
                                                "form against the butterfly and CUB", true, &on_gpu<run_warp_suite>});

}  // namespace

}  // namespace multireduce::bench
