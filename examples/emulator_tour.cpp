// The README's tour on the host emulator: 32 windows summed with the swap form, counted.
#include <multireduce/emulator/host_warp.hpp>
#include <multireduce/multireduce.hpp>

#include <cstdio>
#include <vector>

using namespace multireduce;

int main() {
  std::vector<float> in(64);
  for (int i = 0; i < 64; ++i) in[static_cast<std::size_t>(i)] = static_cast<float>(i % 7);
  std::vector<float> out(32);
  host_block warp(32);
  warp.run([&](host_lane& lane) {  // the same body as the README's CUDA kernel
    array<float, 32> v;
    for (int w = 0; w < 32; ++w) v[w] = in[static_cast<std::size_t>(w + lane.id())];
    out[static_cast<std::size_t>(lane.id())] = warp_multi_reduce<32, 32, multi_reduce_algorithm::swap>(lane, v, sum{})[0];
  });
  int wrong = 0;
  for (int w = 0; w < 32; ++w) {
    float expected = 0;
    for (int l = 0; l < 32; ++l) expected += in[static_cast<std::size_t>(w + l)];
    wrong += out[static_cast<std::size_t>(w)] != expected;
  }
  std::printf("window sums: %d wrong; %llu shuffles, %llu selects per warp\n", wrong,
              static_cast<unsigned long long>(warp.counts().shuffles), static_cast<unsigned long long>(warp.counts().selects));
  return wrong == 0 && warp.counts().shuffles == 31 ? 0 : 1;
}
