// Runs a test body on the host warp emulator.
#pragma once

#include <multireduce/emulator/host_warp.hpp>

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "warp_cases.hpp"

namespace mr_test {

class host_runner {
 public:
  /// Runs Body{in, out} in a block of `threads` lanes made of warps of `warp_size`.
  template <class Body, class In, class Out>
  void launch(int warp_size, int threads, const std::vector<In>& in, std::vector<Out>& out) {
    auto& block = block_for(warp_size, threads / warp_size);
    Body body{in.data(), out.data()};
    std::vector<unsigned char> shared(shared_bytes);
    block.run([&](multireduce::host_lane& lane) { body(lane, shared.data()); });
    last_counts = block.counts(0);
  }
  multireduce::host_block& block_for(int warp_size, int warps) {
    auto& slot = blocks_[{warp_size, warps}];
    if (!slot) slot = std::make_unique<multireduce::host_block>(warp_size, warps);
    return *slot;
  }
  multireduce::warp_counts last_counts;

 private:
  std::map<std::pair<int, int>, std::unique_ptr<multireduce::host_block>> blocks_;
};

}  // namespace mr_test
