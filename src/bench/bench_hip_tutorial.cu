// bench_hip_tutorial.cu -- `multireduce bench hip-tutorial`: the HIP reduction tutorial's nine
// kernels (classic_kernels/hip_tutorial.hpp) as CUDA kernels with 32-lane warps, each verified
// exactly and timed at 2^22, 2^25 and 2^28 unsigned ints, then CUB and this library's reduce,
// beside the read ceiling. Before that, the same source with 64-lane warps (the wavefront the
// tutorial was written for) runs on the host emulator over a small input, and every version's
// wave64 and wave32 results must equal the GPU's.
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <multireduce/cuda.cuh>
#include <multireduce/cuda_lane.cuh>

#include "bench_util.cuh"
#include "classic_kernels/hip_tutorial_emulated.hpp"

namespace multireduce::bench {

namespace ht = hip_tutorial;

/// One pass of version V: every block reduces its share of front into back[blockIdx.x]. (The
/// tutorial adds __launch_bounds__ at v5; one kernel template serves every version here, so all of
/// them carry it.)
template <ht::version V, int WarpSize>
__global__ __launch_bounds__(ht::block_size) void hip_tutorial_kernel(const unsigned* front, unsigned* back,
                                                                        std::uint32_t front_size) {
  __shared__ unsigned shared[ht::block_size];
  cuda_lane lane;
  ht::reduce_block<V, ht::block_size, WarpSize, ht::items_per_thread>(lane, blockIdx.x, gridDim.x, shared, front, back,
                                                                      front_size, multireduce::sum{}, 0u);
}

namespace {

namespace mc = multireduce::cuda;

/// The tutorial's device-side loop: passes until one value is left, the last into `out`.
template <ht::version V>
void run_passes(const unsigned* in, std::uint32_t n, unsigned* a, unsigned* b, unsigned* out) {
  const unsigned* src = in;
  int level = 0;
  ht::passes(V, n, ht::block_size, ht::items_per_thread, [&](std::uint32_t front_size, std::uint32_t grid) {
    unsigned* dst = grid == 1 ? out : (level++ % 2 == 0 ? a : b);
    MULTIREDUCE_BENCH_CHECK(cuda::launch(hip_tutorial_kernel<V, 32>, grid, ht::block_size, 0, nullptr, src, dst, front_size));
    src = dst;
  });
}

/// The wave64 and wave32 forms on the emulator against the GPU's 32-lane kernels, on n values.
bool check_emulated_warps(std::uint32_t n, nlohmann::json& record) {
  std::mt19937_64 g(64);
  std::vector<unsigned> host(n);
  for (auto& x : host) x = static_cast<unsigned>(g());
  unsigned want = 0;
  for (unsigned x : host) want += x;
  device_buffer<unsigned> in(n), a(n), b(n), out(1);
  in.upload(host);
  const ht::emulated_sums emulated = ht::emulate_every_version(host);
  bool ok = true;
  nlohmann::json rows = nlohmann::json::array();
  int index = 0;
  ht::for_each_version([&]<ht::version V>() {
    out.fill_bytes(0x7f);
    run_passes<V>(in.data(), n, a.data(), b.data(), out.data());
    const unsigned gpu = out.download(1)[0];
    const unsigned wave64 = emulated.warp64[std::size_t(index)], wave32 = emulated.warp32[std::size_t(index)];
    ++index;
    const bool equal = gpu == want && wave64 == want && wave32 == want;
    ok = ok && equal;
    rows.push_back({{"version", ht::version_name(V)}, {"n", n}, {"gpu_warp32", gpu}, {"emulated_warp32", wave32},
                    {"emulated_warp64", wave64}, {"expected", want}, {"equal", equal}});
    if (!equal)
      std::printf("EMULATOR CHECK FAILED %s: GPU %u, wave32 %u, wave64 %u, expected %u\n", ht::version_name(V), gpu,
                  wave32, wave64, want);
  });
  std::printf("wave64 forms on the host emulator, n = %u: %s\n", n,
              ok ? "all 9 versions equal the 32-lane GPU kernels and the exact sum" : "MISMATCH");
  record["emulator_check"] = rows;
  return ok;
}

int run_hip_tutorial(const options& opts, const device_info& device, nlohmann::json& record) {
  bool ok = check_emulated_warps(5003, record);
  const std::vector<std::int64_t> sizes =
      opts.quick ? std::vector<std::int64_t>{std::int64_t(1) << 20}
                 : std::vector<std::int64_t>{std::int64_t(1) << 22, std::int64_t(1) << 25, std::int64_t(1) << 28};
  constexpr std::uint64_t seed = 2024;
  std::vector<unsigned> host(static_cast<std::size_t>(sizes.back()));
  std::mt19937_64 g(seed);
  for (auto& x : host) x = static_cast<unsigned>(g());
  device_buffer<unsigned> in(host.size());
  in.upload(host);
  device_buffer<unsigned> a(host.size() / ht::block_size + 1), b(host.size() / ht::block_size + 1), out(3);
  device_buffer<char> cub_temp(0);
  mc::workspace ws;
  std::printf("input: uint32 from std::mt19937_64 seed %llu, sums modulo 2^32; blocks of %d threads, %d items per "
              "thread for v7-v8\n",
              (unsigned long long)seed, ht::block_size, ht::items_per_thread);
  nlohmann::json rows = nlohmann::json::array(), ceilings = nlohmann::json::array(), bars = nlohmann::json::array();
  for (const std::int64_t n : sizes) {
    unsigned want = 0;
    for (std::int64_t i = 0; i < n; ++i) want += host[std::size_t(i)];
    const unsigned* d_in = in.data();
    unsigned *pa = a.data(), *pb = b.data(), *o = out.data();
    std::vector<ladder_step<unsigned>> steps;
    ht::for_each_version([&]<ht::version V>() {
      steps.push_back({ht::version_name(V), "the HIP reduction tutorial",
                       [=] { run_passes<V>(d_in, static_cast<std::uint32_t>(n), pa, pb, o); }, o});
    });
    ok = finish_size<unsigned>(steps, d_in, n, want, o + 1, o + 2, device, opts, cub_temp, ws, rows, ceilings, bars) && ok;
  }
  record["input"] = {{"type", "uint32"}, {"values", "std::mt19937_64"}, {"seed", seed}};
  record["published"] = {{"gpu", "none"}, {"source", "the HIP reduction tutorial gives no timings"}};
  record["rows"] = rows;
  record["read_ceiling"] = ceilings;
  record["bars"] = bars;
  return ok ? 0 : 1;
}

const bool registered = register_suite(
    {"hip-tutorial", "the HIP reduction tutorial: its nine kernels (wave64 forms checked on the emulator), CUB, ours",
     true, &on_gpu<run_hip_tutorial>});

}  // namespace
}  // namespace multireduce::bench
