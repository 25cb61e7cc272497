// Uses the installed headers: 4 batches on a logical warp of 8 lanes, on the host emulator.
#include <multireduce/emulator/host_warp.hpp>
#include <multireduce/multireduce.hpp>

int main() {
  int wrong = 0;
  multireduce::emulate_warp(32, [&](multireduce::host_lane& lane) {
    const multireduce::array<int, 4> v{{1, 2, 3, lane.id()}};
    const int r = multireduce::warp_multi_reduce<4, 8>(lane, v, multireduce::sum{})[0];
    const int logical = lane.id() % 8, group = lane.id() / 8;
    const int expected[4] = {8, 16, 24, 8 * group * 8 + 28};
    if (logical < 4 && r != expected[logical]) ++wrong;
  });
  return wrong;
}
