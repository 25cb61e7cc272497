#include <multireduce/emulator/host_warp.hpp>
#include <multireduce/multireduce.hpp>
struct not_a_reduction { int operator()(int a) const { return a; } };
void f(multireduce::host_lane& lane) { (void)multireduce::warp_reduce<32>(lane, 1, not_a_reduction{}); }
