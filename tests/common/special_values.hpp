// Inputs with infinities, NaN and huge values at random places, for the statistics' NumPy rules
// (the CPU, CUDA and OpenCL suites).
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace mr_test {

/// Writes `specials` into xs at distinct random places -- the first special now and then at index
/// 0, where the statistics take their shift.
template <class T>
void place_specials(std::vector<T>& xs, const std::vector<T>& specials, std::mt19937_64& g) {
  std::uniform_int_distribution<std::int64_t> at(0, static_cast<std::int64_t>(xs.size()) - 1);
  std::vector<std::int64_t> taken;
  for (std::size_t k = 0; k < specials.size(); ++k) {
    std::int64_t i = k == 0 && g() % 3 == 0 ? 0 : at(g);
    while (std::find(taken.begin(), taken.end(), i) != taken.end()) i = at(g);
    taken.push_back(i);
    xs[static_cast<std::size_t>(i)] = specials[k];
  }
}

/// n uniform values in (-1, 1) from g, then `specials` placed by place_specials.
inline std::vector<double> with_specials(std::int64_t n, const std::vector<double>& specials, std::mt19937_64& g) {
  std::vector<double> v(static_cast<std::size_t>(n));
  std::uniform_real_distribution<double> d(-1, 1);
  for (auto& x : v) x = d(g);
  place_specials(v, specials, g);
  return v;
}

}  // namespace mr_test
