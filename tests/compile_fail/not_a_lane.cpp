// A type that is not a lane (it lacks barrier(), select() and the rest): the warp layer refuses it
// through the `lane` concept, naming the unmet requirement.
#include <cstdint>
#include <multireduce/multireduce.hpp>
struct half_a_lane {
  static constexpr int max_warp_size = 32;
  int id() { return 0; }
  int warp_size() { return 32; }
  std::uint32_t shfl_xor(std::uint32_t w, int, int) { return w; }
  std::uint32_t shfl_down(std::uint32_t w, int, int) { return w; }
  std::uint32_t shfl_up(std::uint32_t w, int, int) { return w; }
  std::uint32_t shfl_idx(std::uint32_t w, int, int) { return w; }
  std::uint64_t ballot(bool) { return 0; }
  void sync() {}
};
int f(half_a_lane& l) { return multireduce::warp_reduce<32>(l, 1, multireduce::sum{}); }
