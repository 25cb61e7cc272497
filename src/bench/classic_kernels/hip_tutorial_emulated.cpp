// classic_kernels/hip_tutorial_emulated.cpp -- emulate_every_version (hip_tutorial_emulated.hpp).
#include "hip_tutorial_emulated.hpp"

#include <multireduce/operators.hpp>

namespace multireduce::bench::hip_tutorial {

emulated_sums emulate_every_version(const std::vector<unsigned>& input) {
  emulated_sums sums;
  for_each_version([&]<version V>() {
    sums.warp64.push_back(emulate<V, 64>(input, multireduce::sum{}, 0u));
    sums.warp32.push_back(emulate<V, 32>(input, multireduce::sum{}, 0u));
  });
  return sums;
}

}  // namespace multireduce::bench::hip_tutorial
