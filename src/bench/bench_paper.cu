// bench_paper.cu -- `multireduce bench paper`: the multi-reduction paper (Parker & MacKinnon)
// re-measured: Figure 2 (sums of all 32-element windows, int/float/double, 1/2/4/8 blocks per SM,
// the butterfly "naive" kernel against every multi-reduction form; the `warp` suite) and the
// section-8 matcher (the CUDAK2NN-style popcount kernel against the tensor-core path) over problem
// sizes from 1024^2 to 65536^2 at 256 and 512 bits.
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_util.cuh"

namespace multireduce::bench {
namespace {

int run_paper(const options& opts, const device_info& device, nlohmann::json& record) {
  std::printf("== Figure 2: window-32 sums, every multi-reduction form against the butterfly ==\n");
  nlohmann::json figure2;
  bool ok = run_warp_suite(opts, device, figure2) == 0;
  record["figure2"] = figure2;

  std::printf("\n== Section 8: 2-NN Hamming matching, throughput against problem size ==\n");
  std::vector<match_config> configs;
  const std::vector<std::int64_t> sides =
      opts.quick ? std::vector<std::int64_t>{1024, 4096} : std::vector<std::int64_t>{1024, 4096, 16384, 65536};
  for (int bytes : {32, 64})
    for (std::int64_t side : sides) configs.push_back({side, side, bytes});
  nlohmann::json rows = nlohmann::json::array();
  ok = match_throughput(opts, configs, rows) && ok;
  record["matcher"] = rows;
  return ok ? 0 : 1;
}

const bool registered = register_suite(
    {"paper",
     "Parker & MacKinnon, the multi-reduction paper: Figure 2 (window-32 sums at 1-8 blocks/SM) and the section-8 "
     "matcher over problem sizes",
     true, &on_gpu<run_paper>});

}  // namespace
}  // namespace multireduce::bench
