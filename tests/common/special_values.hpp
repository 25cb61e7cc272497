// Inputs with infinities, NaN and huge values at random places, for the statistics' NumPy rules
// (the CUDA and OpenCL suites; the CPU suite has its own cases).
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace mr_test {

/// n uniform values in (-1, 1) with `specials` written at distinct random places -- the first
/// special now and then at index 0, where the statistics take their shift.
inline std::vector<double> with_specials(std::int64_t n, const std::vector<double>& specials, std::mt19937_64& g) {
  std::vector<double> v(static_cast<std::size_t>(n));
  std::uniform_real_distribution<double> d(-1, 1);
  for (auto& x : v) x = d(g);
  std::uniform_int_distribution<std::int64_t> at(0, n - 1);
  std::vector<std::int64_t> taken;
  for (std::size_t k = 0; k < specials.size(); ++k) {
    std::int64_t i = k == 0 && g() % 3 == 0 ? 0 : at(g);
    while (std::find(taken.begin(), taken.end(), i) != taken.end()) i = at(g);
    taken.push_back(i);
    v[static_cast<std::size_t>(i)] = specials[k];
  }
  return v;
}

}  // namespace mr_test
