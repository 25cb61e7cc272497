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
    const Body body{in.data(), out.data()};
    run(warp_size, threads, &body, &call_body<Body>);
  }
  multireduce::host_block& block_for(int warp_size, int warps) {
    auto& slot = blocks_[{warp_size, warps}];
    if (!slot) slot = std::make_unique<multireduce::host_block>(warp_size, warps);
    return *slot;
  }
  multireduce::warp_counts last_counts;

 private:
  // The part of a launch that does not depend on the body (one copy, not one per body type).
  using body_call = void (*)(const void* body, multireduce::host_lane& lane, unsigned char* shared);
  template <class Body>
  static void call_body(const void* body, multireduce::host_lane& lane, unsigned char* shared) {
    (*static_cast<const Body*>(body))(lane, shared);
  }
  void run(int warp_size, int threads, const void* body, body_call call) {
    auto& block = block_for(warp_size, threads / warp_size);
    std::vector<unsigned char> shared(shared_bytes);
    block.run([&](multireduce::host_lane& lane) { call(body, lane, shared.data()); });
    last_counts = block.counts(0);
  }

  std::map<std::pair<int, int>, std::unique_ptr<multireduce::host_block>> blocks_;
};

}  // namespace mr_test
