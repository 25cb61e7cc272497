// tests/ranks/rank_cases.hpp -- what the MPI and NCCL fronts' tests share: the whole array every
// rank builds from one seed, the shard plans (how the global array is cut over the ranks), and a
// bitwise comparison.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <multireduce/statistics.hpp>

namespace rank_test {

/// The base seed: MULTIREDUCE_TEST_SEED, or a fixed default (printed by the programs' main).
inline std::uint64_t base_seed() {
  static const std::uint64_t seed = [] {
    const char* env = std::getenv("MULTIREDUCE_TEST_SEED");
    return env ? std::strtoull(env, nullptr, 10) : std::uint64_t{20261201};
  }();
  return seed;
}

/// How values are drawn: sums (small integers or reals), products (near 1 or +-1), bitwise ops
/// (all bits), extremes (reals with NaNs, ties).
enum class values { sum, product, bits, extreme };

/// The whole global array, the same on every rank (seeded by base_seed() + salt).
template <class T>
std::vector<T> whole_array(std::int64_t n, values kind, std::uint64_t salt) {
  std::mt19937_64 rng(base_seed() * 1000003u + salt);
  std::vector<T> x(static_cast<std::size_t>(n));
  std::uniform_real_distribution<double> real(-100.0, 100.0);
  for (auto& v : x) {
    if constexpr (std::is_floating_point_v<T>) {
      if (kind == values::product) v = static_cast<T>(1.0 + real(rng) * 1e-4);
      else if (kind == values::extreme) v = static_cast<T>(std::floor(real(rng)));  // ties
      else v = static_cast<T>(real(rng) + 1000.0);  // a mean far from 0: the statistics' shift matters
    } else if (kind == values::bits) {
      v = static_cast<T>(rng());
    } else if (kind == values::product) {
      if constexpr (std::is_signed_v<T>) v = static_cast<T>(rng() % 2 ? 1 : -1);
      else v = static_cast<T>(rng() % 7 + 1);  // unsigned products wrap: defined
    } else {
      v = static_cast<T>(static_cast<std::int64_t>(rng() % 201) - 100);  // sums of any type, no signed overflow past int8/16
      if constexpr (std::is_unsigned_v<T>) v = static_cast<T>(rng() % 100);
    }
  }
  return x;
}

/// A shard plan: every rank's length, in rank order.
struct plan {
  std::string name;
  std::vector<std::int64_t> lengths;
  std::int64_t start(int r) const {
    std::int64_t s = 0;
    for (int q = 0; q < r; ++q) s += lengths[std::size_t(q)];
    return s;
  }
};

/// The plans every test runs for `ranks` ranks and a global length n: equal shards, odd lengths,
/// an empty shard in the middle, everything on the last rank, everything on the first, tiny
/// shards (1, 0, 3, ...) before a long one.
inline std::vector<plan> plans(std::int64_t n, int ranks) {
  std::vector<plan> out;
  const auto R = std::size_t(ranks);
  {
    plan p{"equal", std::vector<std::int64_t>(R, n / ranks)};
    p.lengths.back() += n % ranks;
    out.push_back(p);
  }
  {
    plan p{"odd", std::vector<std::int64_t>(R, 0)};
    std::int64_t weights = 0;
    for (std::size_t r = 0; r < R; ++r) weights += std::int64_t(2 * r + 1);
    std::int64_t left = n;
    for (std::size_t r = 0; r + 1 < R; ++r) {
      p.lengths[r] = n * std::int64_t(2 * r + 1) / weights + (r % 2 ? 3 : -3);
      p.lengths[r] = std::max<std::int64_t>(0, std::min(left, p.lengths[r]));
      left -= p.lengths[r];
    }
    p.lengths.back() = left;
    out.push_back(p);
  }
  if (ranks > 2) {
    plan p{"empty-middle", std::vector<std::int64_t>(R, n / (ranks - 1))};
    p.lengths[1] = 0;
    std::int64_t used = 0;
    for (auto l : p.lengths) used += l;
    p.lengths.back() += n - used;
    out.push_back(p);
  }
  if (ranks > 1) {
    plan last{"all-on-last", std::vector<std::int64_t>(R, 0)};
    last.lengths.back() = n;
    out.push_back(last);
    plan first{"all-on-first", std::vector<std::int64_t>(R, 0)};
    first.lengths.front() = n;
    out.push_back(first);
    plan tiny{"tiny-first", std::vector<std::int64_t>(R, 0)};
    std::int64_t left = n;
    const std::int64_t small[] = {1, 0, 3};
    for (std::size_t r = 0; r + 1 < R; ++r) {
      tiny.lengths[r] = std::min(left, small[r % 3]);
      left -= tiny.lengths[r];
    }
    tiny.lengths.back() = left;
    out.push_back(tiny);
  }
  return out;
}

/// Bitwise equality (NaN payloads and signed zeros included).
template <class T>
bool same_bits(const T& a, const T& b) {
  static_assert(std::is_trivially_copyable_v<T>);
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

/// Every field of two statistics, bitwise (the struct has padding, so not memcmp of the whole).
template <class T>
bool same_statistics(const multireduce::statistics<T>& a, const multireduce::statistics<T>& b) {
  return same_bits(a.count, b.count) && same_bits(a.sum, b.sum) && same_bits(a.mean, b.mean) && same_bits(a.var, b.var) &&
         same_bits(a.std, b.std) && same_bits(a.min, b.min) && same_bits(a.argmin, b.argmin) && same_bits(a.max, b.max) &&
         same_bits(a.argmax, b.argmax) && same_bits(a.l1, b.l1) && same_bits(a.l2, b.l2);
}

}  // namespace rank_test
