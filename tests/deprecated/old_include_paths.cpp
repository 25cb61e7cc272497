// Every include path of 0.1 that moved still compiles (with a deprecation message) for one more
// release, and what it declared is still there.
#include <multireduce/block_reduce.hpp>
#include <multireduce/cpu/detail.hpp>
#include <multireduce/cpu/indexed_iterator.hpp>
#include <multireduce/host_warp.hpp>
#include <multireduce/match.hpp>
#include <multireduce/online_multi_reduce.hpp>
#include <multireduce/warp_multi_reduce.hpp>
#include <multireduce/warp_reduce.hpp>

int main() {
  int wrong = 0;
  multireduce::emulate_warp(32, [&](multireduce::host_lane& lane) {
    wrong += multireduce::warp_reduce<32>(lane, 1, multireduce::sum{}) != 32 && lane.id() == 0;
  });
  const int xs[] = {3, 1, 2};
  wrong += multireduce::cpu::indexed(xs)[1].index != 1;
  const std::uint8_t q[4] = {0, 0, 0, 1}, t[4] = {0, 0, 0, 3};
  std::int32_t idx = -1, dist = -1;
  multireduce::cpu::knn_hamming(q, 1, t, 1, 4, 1, &idx, &dist);
  return wrong + (idx != 0) + (dist != 1);
}
