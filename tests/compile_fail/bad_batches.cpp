#include <multireduce/emulator/host_warp.hpp>
#include <multireduce/multireduce.hpp>
void f(multireduce::host_lane& lane) {
  multireduce::array<int, 3> v{{1, 2, 3}};
  (void)multireduce::warp_multi_reduce<4>(lane, v, multireduce::sum{});
}
