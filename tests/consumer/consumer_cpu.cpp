// Uses the installed CPU backend through multireduce::cpu: a sum and the statistics of 2^20
// numbers, and (where the package promised OpenMP) checks that the backend runs in parallel.
#include <multireduce/cpu.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

int main() {
  std::vector<double> x(std::size_t(1) << 20);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = double(i % 1000);
  const double sum = multireduce::cpu::reduce(x.data(), std::int64_t(x.size()), multireduce::sum{}, 0.0);
  const auto s = multireduce::cpu::statistics(x.data(), std::int64_t(x.size()));
  if (sum != s.sum || s.count != std::int64_t(x.size())) return 1;
#if defined(CONSUMER_EXPECT_OPENMP) && !defined(_OPENMP)
  std::puts("multireduce::cpu did not bring OpenMP: the CPU backend would run serially");
  return 2;
#endif
  std::printf("multireduce::cpu: %d thread(s)\n", multireduce::cpu::max_threads());
  return 0;
}
