#include <multireduce/emulator/host_warp.hpp>
#include <multireduce/multireduce.hpp>
void f(multireduce::host_lane& lane) { (void)multireduce::warp_reduce<12>(lane, 1, multireduce::sum{}); }
