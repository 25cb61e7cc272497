// A logical warp of 64 lanes on a hip_lane of a wave32 target (gfx1030, 32-lane wavefronts): a
// compile error with a message, not shuffles out of range at run time. (On gfx90a it compiles.)
#include <multireduce/hip_lane.hip.hpp>
#include <multireduce/multireduce.hpp>
__global__ void k(int* out) {
  multireduce::hip_lane lane;
  *out = multireduce::warp_reduce<64>(lane, 1, multireduce::sum{});
}
