// bench_classic.cu -- `multireduce bench harris|kepler|shared-vs-warp`: the classic reduction
// ladders of the published kernels (src/bench/classic_kernels/: Harris 2007 as Crovella 2020
// re-tells it, Luitjens 2014, the shared memory against warp shuffles post of 2020) re-measured on
// this GPU, each followed by CUB and this library's reduce on the same input in the same process,
// beside the read ceiling measured in the same run (read_floor_us). Every kernel's value is checked
// exactly before it is timed (run_ladder).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <multireduce/cuda.cuh>

#include "bench_util.cuh"
#include "classic_kernels/harris.cuh"
#include "classic_kernels/kepler.cuh"
#include "classic_kernels/shared_vs_warp.cuh"

namespace multireduce::bench {
namespace {

namespace mc = multireduce::cuda;

/// The sizes of the harris and kepler tables: the slides' 2^22 ints, their "32M elements" (2^25),
/// and 2^28 (1 GiB, where the read ceiling is the HBM's).
std::vector<std::int64_t> ladder_sizes(const options& opts) {
  if (opts.quick) return {std::int64_t(1) << 20};
  return {std::int64_t(1) << 22, std::int64_t(1) << 25, std::int64_t(1) << 28};
}

/// The harris and kepler input: ints uniform in [-4, 4] (no partial sum of 2^28 of them overflows).
constexpr std::uint64_t int_input_seed = 2007;
std::vector<int> int_input(std::int64_t n) {
  std::mt19937_64 g(int_input_seed);
  std::uniform_int_distribution<int> d(-4, 4);
  std::vector<int> v(static_cast<std::size_t>(n));
  for (int& x : v) x = d(g);
  return v;
}

/// Launches a Harris kernel over its own partial sums until one value is left (kernels 1-6): each
/// block reduces `per_block` values; the last level writes to `out`.
template <class Kernel>
void recursive_passes(Kernel kernel, unsigned per_block, const int* in, std::int64_t n, int* a, int* b, int* out) {
  const int* src = in;
  std::int64_t m = n;
  int level = 0;
  do {
    const std::int64_t grid = (m + per_block - 1) / per_block;
    int* dst = grid == 1 ? out : (level % 2 == 0 ? a : b);
    MULTIREDUCE_BENCH_CHECK(cuda::launch(kernel, static_cast<unsigned>(grid), harris::block_size, 0, nullptr, src, dst,
                                         static_cast<unsigned>(m)));
    src = dst;
    m = grid;
    ++level;
  } while (m > 1);
}

int run_harris(const options& opts, const device_info& device, nlohmann::json& record) {
  const auto sizes = ladder_sizes(opts);
  const auto host = int_input(sizes.back());
  device_buffer<int> in(host.size());
  in.upload(host);
  const std::int64_t max_n = sizes.back();
  device_buffer<int> a(std::size_t(max_n / harris::block_size + 1)), b(std::size_t(max_n / harris::block_size + 1));
  device_buffer<int> out(3);  // the kernels' result, CUB's, ours
  device_buffer<char> cub_temp(0);
  mc::workspace ws;
  std::printf("input: ints uniform in [-4, 4], std::mt19937_64 seed %llu; blocks of %u threads for kernels 1-7, "
              "%u for versions 8-9 and the shuffle kernel (grids of %d and %d blocks)\n",
              (unsigned long long)int_input_seed, harris::block_size, harris::crovella_block, device.sm_count * 16,
              device.sm_count * 8);
  // Kernel 7 and versions 8-9: "choose number of blocks sized to the GPU": as many blocks as fit
  // at once (16 blocks of 128 threads or 8 of 256 per SM of 2048 threads).
  const int grid7 = device.sm_count * 16, grid8 = device.sm_count * 8;
  // The slides' table: 2^22 ints on a G80 (GeForce 8800 GTX).
  const double published[] = {2.083, 4.854, 9.741, 17.377, 31.289, 43.996, 62.671};
  nlohmann::json rows = nlohmann::json::array(), ceilings = nlohmann::json::array(), bars = nlohmann::json::array();
  bool ok = true;
  for (const std::int64_t n : sizes) {
    long long want = 0;
    for (std::int64_t i = 0; i < n; ++i) want += host[std::size_t(i)];
    const int* d_in = in.data();
    int *pa = a.data(), *pb = b.data(), *o = out.data();
    std::vector<ladder_step<int>> steps = {
        {"kernel 1: interleaved addressing, divergent branching", "Harris 2007, 'Reduction #1'",
         [=] { recursive_passes(harris::reduce1, harris::block_size, d_in, n, pa, pb, o); }, o},
        {"kernel 2: interleaved addressing, bank conflicts", "Harris 2007, 'Reduction #2'",
         [=] { recursive_passes(harris::reduce2, harris::block_size, d_in, n, pa, pb, o); }, o},
        {"kernel 3: sequential addressing", "Harris 2007, 'Reduction #3'",
         [=] { recursive_passes(harris::reduce3, harris::block_size, d_in, n, pa, pb, o); }, o},
        {"kernel 4: first add during global load", "Harris 2007, 'Reduction #4'",
         [=] { recursive_passes(harris::reduce4, 2 * harris::block_size, d_in, n, pa, pb, o); }, o},
        {"kernel 5: unroll the last warp", "Harris 2007, 'Reduction #5'",
         [=] { recursive_passes(harris::reduce5, 2 * harris::block_size, d_in, n, pa, pb, o); }, o},
        {"kernel 6: completely unrolled", "Harris 2007, 'Reduction #6'",
         [=] { recursive_passes(harris::reduce6<harris::block_size>, 2 * harris::block_size, d_in, n, pa, pb, o); }, o},
        {"kernel 7: multiple elements per thread", "Harris 2007, 'Reduction #7', 'Final Optimized Kernel'",
         [=] {
           MULTIREDUCE_BENCH_CHECK(cuda::launch(harris::reduce7<harris::block_size>, grid7, harris::block_size, 0,
                                                nullptr, d_in, pa, static_cast<unsigned>(n)));
           MULTIREDUCE_BENCH_CHECK(cuda::launch(harris::reduce7<harris::block_size>, 1, harris::block_size, 0, nullptr,
                                                static_cast<const int*>(pa), o, static_cast<unsigned>(grid7)));
         },
         o},
        {"version 8: grid-stride loop, partials in a 2nd pass", "Crovella 2020, 'Reduce version 8'",
         [=] {
           MULTIREDUCE_BENCH_CHECK(cuda::launch(harris::reduce8, grid8, harris::crovella_block, 0, nullptr, d_in, pa, n));
           MULTIREDUCE_BENCH_CHECK(cuda::launch(harris::reduce8, 1, harris::crovella_block, 0, nullptr,
                                                static_cast<const int*>(pa), o, std::int64_t(grid8)));
         },
         o},
        {"version 9: grid-stride loop, atomicAdd finish", "Crovella 2020, 'Reduce version 9'",
         [=] {
           MULTIREDUCE_BENCH_CHECK(cudaMemsetAsync(o, 0, sizeof(int)));
           MULTIREDUCE_BENCH_CHECK(cuda::launch(harris::reduce9, grid8, harris::crovella_block, 0, nullptr, d_in, o, n));
         },
         o},
        {"warp shuffle + atomicAdd (reduce_ws)", "Crovella 2020, 'Warp shuffle reduction'",
         [=] {
           MULTIREDUCE_BENCH_CHECK(cudaMemsetAsync(o, 0, sizeof(int)));
           MULTIREDUCE_BENCH_CHECK(cuda::launch(harris::reduce_ws, grid8, harris::crovella_block, 0, nullptr, d_in, o, n));
         },
         o},
    };
    for (int k = 0; k < 7; ++k) steps[std::size_t(k)].published_gb_per_s = published[k];
    ok = finish_size<int>(steps, d_in, n, static_cast<int>(want), o + 1, o + 2, device, opts, cub_temp, ws, rows,
                          ceilings, bars) && ok;
  }
  record["input"] = {{"type", "int32"}, {"values", "uniform in [-4, 4]"}, {"seed", int_input_seed}};
  record["published"] = {{"gpu", "G80 (GeForce 8800 GTX)"}, {"n", 1 << 22},
                         {"source", "Harris 2007, 'Performance for 4M element reduction'"}};
  record["rows"] = rows;
  record["read_ceiling"] = ceilings;
  record["bars"] = bars;
  return ok ? 0 : 1;
}

template <int Width>
void kepler_two_pass(const int* in, int n, int* partial, int* out) {
  const int blocks = kepler::blocks_for(n, Width);
  MULTIREDUCE_BENCH_CHECK(cuda::launch(kepler::device_reduce_kernel<Width>, blocks, kepler::threads, 0, nullptr, in, partial, n));
  MULTIREDUCE_BENCH_CHECK(cuda::launch(kepler::device_reduce_kernel<1>, 1, 1024, 0, nullptr,
                                       static_cast<const int*>(partial), out, blocks));
}

template <int Width, bool PerWarp>
void kepler_atomic(const int* in, int n, int* out) {
  MULTIREDUCE_BENCH_CHECK(cudaMemsetAsync(out, 0, sizeof(int)));
  auto kernel = PerWarp ? kepler::device_reduce_warp_atomic_kernel<Width> : kepler::device_reduce_block_atomic_kernel<Width>;
  MULTIREDUCE_BENCH_CHECK(cuda::launch(kernel, kepler::blocks_for(n, Width), kepler::threads, 0, nullptr, in, out, n));
}

int run_kepler(const options& opts, const device_info& device, nlohmann::json& record) {
  const auto sizes = ladder_sizes(opts);
  const auto host = int_input(sizes.back());
  device_buffer<int> in(host.size());
  in.upload(host);
  device_buffer<int> partial(kepler::max_blocks), out(3);
  device_buffer<char> cub_temp(0);
  mc::workspace ws;
  std::printf("input: ints uniform in [-4, 4], std::mt19937_64 seed %llu; %d threads per block, at most %d blocks "
              "(the post's launch)\n",
              (unsigned long long)int_input_seed, kepler::threads, kepler::max_blocks);
  nlohmann::json rows = nlohmann::json::array(), ceilings = nlohmann::json::array(), bars = nlohmann::json::array();
  bool ok = true;
  for (const std::int64_t n64 : sizes) {
    const int n = static_cast<int>(n64);
    long long want = 0;
    for (int i = 0; i < n; ++i) want += host[std::size_t(i)];
    const int* d_in = in.data();
    int *p = partial.data(), *o = out.data();
    std::vector<ladder_step<int>> steps = {
        {"two-pass deviceReduceKernel (int)", "Luitjens 2014, deviceReduce",
         [=] { kepler_two_pass<1>(d_in, n, p, o); }, o},
        {"two-pass deviceReduceKernel (int2)", "Luitjens 2014, vectorised",
         [=] { kepler_two_pass<2>(d_in, n, p, o); }, o},
        {"two-pass deviceReduceKernel (int4)", "Luitjens 2014, vectorised",
         [=] { kepler_two_pass<4>(d_in, n, p, o); }, o},
        {"warp reduce + atomicAdd per warp (int)", "Luitjens 2014, deviceReduceWarpAtomicKernel",
         [=] { kepler_atomic<1, true>(d_in, n, o); }, o},
        {"warp reduce + atomicAdd per warp (int2)", "Luitjens 2014, vectorised",
         [=] { kepler_atomic<2, true>(d_in, n, o); }, o},
        {"warp reduce + atomicAdd per warp (int4)", "Luitjens 2014, vectorised",
         [=] { kepler_atomic<4, true>(d_in, n, o); }, o},
        {"block reduce + atomicAdd per block (int)", "Luitjens 2014, deviceReduceBlockAtomicKernel",
         [=] { kepler_atomic<1, false>(d_in, n, o); }, o},
        {"block reduce + atomicAdd per block (int2)", "Luitjens 2014, vectorised",
         [=] { kepler_atomic<2, false>(d_in, n, o); }, o},
        {"block reduce + atomicAdd per block (int4)", "Luitjens 2014, vectorised",
         [=] { kepler_atomic<4, false>(d_in, n, o); }, o},
    };
    ok = finish_size<int>(steps, d_in, n64, static_cast<int>(want), o + 1, o + 2, device, opts, cub_temp, ws, rows,
                          ceilings, bars) && ok;
  }
  record["input"] = {{"type", "int32"}, {"values", "uniform in [-4, 4]"}, {"seed", int_input_seed}};
  record["published"] = {{"gpu", "Tesla K20X"},
                         {"source", "Luitjens 2014, Figures 3 and 4 (a chart; no figures in the text)"}};
  record["rows"] = rows;
  record["read_ceiling"] = ceilings;
  record["bars"] = bars;
  return ok ? 0 : 1;
}

/// The post's host loops: levels that divide the length by Reduce (1024 for shared memory, 32 for
/// warps), laid out in dst from the last level (dst[0], the sum) back to the first.
template <bool Warp>
void shared_vs_warp_levels(const unsigned* src_d, unsigned* dst_d, std::size_t n) {
  constexpr std::size_t reduce = Warp ? shared_vs_warp::warp_size : shared_vs_warp::block_size;
  const unsigned* src = src_d;
  unsigned* dst = dst_d;
  for (std::size_t len = n; len > 1; len = (len + reduce - 1) / reduce) dst += (len + reduce - 1) / reduce;
  for (std::size_t len = n; len > 1; len = (len + reduce - 1) / reduce) {
    dst -= (len + reduce - 1) / reduce;
    if constexpr (Warp) {
      const std::size_t threads = std::min(len, shared_vs_warp::block_size);
      MULTIREDUCE_BENCH_CHECK(cuda::launch(shared_vs_warp::reduce_warp_kernel<shared_vs_warp::warp_size>,
                                           static_cast<unsigned>(len / threads), static_cast<unsigned>(threads), 0,
                                           nullptr, src, dst, len));
    } else {
      const std::size_t blocks = (len + shared_vs_warp::block_size - 1) / shared_vs_warp::block_size;
      MULTIREDUCE_BENCH_CHECK(cuda::launch(shared_vs_warp::reduce_shared_kernel<shared_vs_warp::block_size>,
                                           static_cast<unsigned>(blocks), static_cast<unsigned>(shared_vs_warp::block_size),
                                           shared_vs_warp::block_size * sizeof(unsigned), nullptr, src, dst, len));
    }
    src = dst;
  }
}

int run_shared_vs_warp(const options& opts, const device_info& device, nlohmann::json& record) {
  const std::size_t n = opts.quick ? std::size_t(1) << 25 : std::size_t(1) << 30;
  std::vector<unsigned> host(n);
  shared_vs_warp::msws generator;
  unsigned checksum = 0;
  for (auto& x : host) x = generator(), checksum += x;
  std::printf("input: %zu values of the post's msws() generator; checksum %u", n, checksum);
  if (n == std::size_t(1) << 30)
    std::printf(" (the post: %u, %s)", shared_vs_warp::published_checksum,
                checksum == shared_vs_warp::published_checksum ? "the same" : "DIFFERENT");
  std::printf("\n");
  device_buffer<unsigned> in(n);
  in.upload(host);
  host = {};
  device_buffer<unsigned> dst(n / 31 + 64), out(2);
  device_buffer<char> cub_temp(0);
  mc::workspace ws;
  const unsigned* d_in = in.data();
  unsigned *d = dst.data(), *o = out.data();
  std::vector<ladder_step<unsigned>> steps = {
      {"shared memory: levels of 1024 (reduce_shared)", "the shared memory against warp shuffles post, reduce_shared",
       [=] { shared_vs_warp_levels<false>(d_in, d, n); }, d},
      {"warp shuffles: levels of 32 (reduce_warp)", "the shared memory against warp shuffles post, reduce_warp",
       [=] { shared_vs_warp_levels<true>(d_in, d, n); }, d},
  };
  // The post's times (V100): 13.997696 ms and 6.570784 ms for 2^30 values.
  steps[0].published_gb_per_s = double(std::size_t(1) << 30) * 4 / 13.997696e-3 / 1e9;
  steps[1].published_gb_per_s = double(std::size_t(1) << 30) * 4 / 6.570784e-3 / 1e9;
  nlohmann::json rows = nlohmann::json::array(), ceilings = nlohmann::json::array(), bars = nlohmann::json::array();
  const bool ok = finish_size<unsigned>(steps, d_in, std::int64_t(n), checksum, o, o + 1, device, opts, cub_temp, ws,
                                        rows, ceilings, bars);
  record["input"] = {{"type", "uint32"}, {"values", "the post's msws() sequence"}, {"checksum", checksum},
                     {"published_checksum", shared_vs_warp::published_checksum}};
  record["published"] = {{"gpu", "Tesla V100-SXM2"}, {"n", 1 << 30},
                         {"source", "the shared memory against warp shuffles post, its last run"}};
  record["rows"] = rows;
  record["read_ceiling"] = ceilings;
  record["bars"] = bars;
  return ok ? 0 : 1;
}

const bool registered =
    register_suite({"harris",
                    "Harris, Optimizing Parallel Reduction in CUDA (2007): kernels 1-7, then Crovella's versions 8-9 "
                    "and shuffle kernel (2020), CUB and ours",
                    true, &on_gpu<run_harris>}) &&
    register_suite({"kepler",
                    "Luitjens, Faster Parallel Reductions on Kepler (2014): shuffle + atomics, two-pass, int2/int4 "
                    "loads, then CUB and ours",
                    true, &on_gpu<run_kepler>}) &&
    register_suite({"shared-vs-warp",
                    "the shared memory against warp shuffles post (2020): 2^30 unsigned, shared-memory levels "
                    "against warp-shuffle levels",
                    true, &on_gpu<run_shared_vs_warp>});

}  // namespace
}  // namespace multireduce::bench
