// multireduce/cuda/segmented_reduce.cuh on the GPU against sequential folds: empty, huge and skewed
// segments, one offsets array or two, the staged kernel's tiles, queue overflow, groups narrower
// than a vector's head. Outputs poisoned; skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <multireduce/cuda.cuh>

#include "../common/device_test.cuh"

namespace mr_test {
namespace {

namespace mc = multireduce::cuda;
using multireduce::key_value;

TEST(CudaDeviceSegmented, GroupsNarrowerThanTheHeadBeforeAVector) {
  MR_REQUIRE_GPU();
  const std::uint64_t seed = seed_for("narrow groups");
  std::mt19937_64 g(seed);
  std::vector<std::uint8_t> bytes(1 << 20);
  for (auto& x : bytes) x = static_cast<std::uint8_t>(g());
  const auto ints = random_ints(1 << 20, seed);
  auto in8 = on_device<std::uint8_t>(bytes);
  auto in32 = on_device<int>(ints);
  mc::workspace ws;
  for (std::int64_t L : {17, 23, 32, 33, 50, 64}) {
    SCOPED_TRACE(::testing::Message() << "uint8 L=" << L);
    const std::int64_t segments = std::int64_t(bytes.size()) / L;
    std::vector<std::int64_t> b(static_cast<std::size_t>(segments)), e(static_cast<std::size_t>(segments));
    for (std::int64_t s = 0; s < segments; ++s) b[std::size_t(s)] = s * L, e[std::size_t(s)] = s * L + L;
    auto out = on_device<long long>(static_cast<std::size_t>(segments));
    ws.fixed_segmented_reduce_async(in8.data(), out.data(), segments, L, multireduce::sum{}, 0LL);
    EXPECT_EQ(host_copy(out), reference_segments(bytes, b, e, multireduce::sum{}, 0LL));
  }
  for (int longest : {15, 40}) {
    std::vector<std::int64_t> b, e;
    for (std::int64_t at = 0;;) {
      const std::int64_t length = std::int64_t(g() % std::uint64_t(longest + 1));
      if (at + length > std::int64_t(bytes.size())) break;
      b.push_back(at), e.push_back(at + length);
      at += length;
    }
    auto d_b = on_device<std::int64_t>(b);
    auto d_e = on_device<std::int64_t>(e);
    auto out = on_device<long long>(b.size());
    SCOPED_TRACE(::testing::Message() << "lengths 0.." << longest << ", " << b.size() << " segments");
    ws.segmented_reduce_async(in8.data(), std::int64_t(bytes.size()), out.data(), std::int64_t(b.size()), d_b.data(), d_e.data(),
                        multireduce::sum{}, 0LL);
    EXPECT_EQ(host_copy(out), reference_segments(bytes, b, e, multireduce::sum{}, 0LL));
    ws.segmented_reduce_async(in32.data(), std::int64_t(ints.size()), out.data(), std::int64_t(b.size()), d_b.data(), d_e.data(),
                        multireduce::sum{}, 0LL);
    EXPECT_EQ(host_copy(out), reference_segments(ints, b, e, multireduce::sum{}, 0LL));
  }
}

TEST(CudaDeviceSegmented, OffsetsEmptyHugeSkewed) {
  MR_REQUIRE_GPU();
  const std::uint64_t seed = seed_for("offset segments");
  const auto v = random_ints(1 << 22, seed);
  auto in = on_device<int>(v);
  mc::workspace ws;
  std::mt19937_64 g(seed);
  auto run_case = [&](const char* name, std::vector<std::int64_t> lengths) {
    SCOPED_TRACE(name);
    std::vector<std::int64_t> off{0};
    for (auto l : lengths) off.push_back(std::min<std::int64_t>(off.back() + l, std::int64_t(v.size())));
    const std::vector<std::int64_t> b(off.begin(), off.end() - 1), e(off.begin() + 1, off.end());
    auto d_off = on_device<std::int64_t>(off);
    auto out = on_device<long long>(b.size());
    ws.segmented_reduce_async(in.data(), std::int64_t(v.size()), out.data(), std::int64_t(b.size()), d_off.data(), d_off.data() + 1,
                        multireduce::sum{}, 3LL);
    EXPECT_EQ(host_copy(out), reference_segments(v, b, e, multireduce::sum{}, 3LL));
    // int32 offsets, separate begin/end arrays.
    std::vector<int> b32(b.begin(), b.end()), e32(e.begin(), e.end());
    auto d_b = on_device<int>(b32);
    auto d_e = on_device<int>(e32);
    auto out_min = on_device<int>(b.size());
    ws.segmented_reduce_async(in.data(), std::int64_t(v.size()), out_min.data(), std::int64_t(b.size()), d_b.data(), d_e.data(),
                        multireduce::minimum{}, INT32_MAX);
    EXPECT_EQ(host_copy(out_min), reference_segments(v, b, e, multireduce::minimum{}, INT32_MAX));
  };
  std::vector<std::int64_t> uniform(100000);
  for (auto& l : uniform) l = std::int64_t(g() % 65);
  run_case("uniform 0..64", uniform);
  std::vector<std::int64_t> skewed;
  for (int i = 0; i < 20000; ++i) {  // power law: most tiny, some up to 2^20
    const double u = std::uniform_real_distribution<double>(0, 1)(g);
    skewed.push_back(std::int64_t(std::pow(2.0, 20.0 * u * u * u * u)) - 1);
  }
  run_case("power law", skewed);
  run_case("one huge", {std::int64_t(v.size())});
  run_case("empties and a huge", {0, 0, 5, 0, 3'000'000, 0, 1, 0});
  run_case("all empty", std::vector<std::int64_t>(5000, 0));
  run_case("length one", std::vector<std::int64_t>(300000, 1));
}

// One offsets array (CSR): offsets that start past 0 and stop short of n,
// int32 and int64, long and empty segments, and a non-commutative operator.
TEST(CudaDeviceSegmented, OffsetsInOneArray) {
  MR_REQUIRE_GPU();
  const std::uint64_t seed = seed_for("merge path segments");
  std::mt19937_64 g(seed);
  const auto v = random_ints(1 << 21, seed);
  auto in = on_device<int>(v);
  mc::workspace ws;
  for (int shape = 0; shape < 4; ++shape) {
    std::vector<std::int64_t> off{std::int64_t(g() % 5000)};
    while (true) {
      const std::int64_t l = shape == 0 ? std::int64_t(g() % 65)
                           : shape == 1 ? std::int64_t(std::pow(2.0, 18.0 * std::pow(std::uniform_real_distribution<double>(0, 1)(g), 4))) - 1
                           : shape == 2 ? std::int64_t(g() % 3 == 0 ? 0 : g() % 9000)
                                        : std::int64_t(g() % 2);
      if (off.back() + l > std::int64_t(v.size()) - 777) break;
      off.push_back(off.back() + l);
    }
    SCOPED_TRACE(::testing::Message() << "shape " << shape << ", " << off.size() - 1 << " segments from " << off.front());
    const std::vector<std::int64_t> b(off.begin(), off.end() - 1), e(off.begin() + 1, off.end());
    const std::int64_t segments = std::int64_t(b.size());
    auto d_off = on_device<std::int64_t>(off);
    auto out = on_device<long long>(b.size());
    ws.segmented_reduce_async(in.data(), std::int64_t(v.size()), out.data(), segments, d_off.data(), d_off.data() + 1, multireduce::sum{}, 3LL);
    EXPECT_EQ(host_copy(out), reference_segments(v, b, e, multireduce::sum{}, 3LL));
    std::vector<int> off32(off.begin(), off.end());
    auto d_off32 = on_device<int>(off32);
    auto out_max = on_device<int>(b.size());
    ws.segmented_reduce_async(in.data(), std::int64_t(v.size()), out_max.data(), segments, d_off32.data(), d_off32.data() + 1,
                        multireduce::maximum{}, INT32_MIN);
    EXPECT_EQ(host_copy(out_max), reference_segments(v, b, e, multireduce::maximum{}, INT32_MIN));
  }
  const auto m = random_mats(1 << 20, seed_for("merge path mat"));
  auto min = on_device<mat2_mod>(m);
  std::vector<std::int64_t> off{3};
  while (off.back() < std::int64_t(m.size()) - 70000) off.push_back(off.back() + std::int64_t(g() % 5 == 0 ? g() % 60000 : g() % 40));
  const std::vector<std::int64_t> b(off.begin(), off.end() - 1), e(off.begin() + 1, off.end());
  auto d_off = on_device<std::int64_t>(off);
  auto out = on_device<mat2_mod>(b.size());
  ws.segmented_reduce_async(min.data(), std::int64_t(m.size()), out.data(), std::int64_t(b.size()), d_off.data(), d_off.data() + 1, mat2_mod_product{},
                      mat_identity);
  const auto got = host_copy(out);
  const auto want = reference_segments(m, b, e, mat2_mod_product{}, mat_identity);
  for (std::size_t s = 0; s < want.size(); ++s) ASSERT_TRUE(got[s] == want[s]) << "mat2 segment " << s;
}

// A 4-byte non-commutative element, x -> a*x + b (mod 65521), composed left to right: four of
// them fill one 16-byte vector of the staged kernel's copies.
struct affine16 {
  std::uint16_t a, b;
  bool operator==(const affine16&) const = default;
};
struct affine16_then {  // g after f
  __host__ __device__ affine16 operator()(const affine16& f, const affine16& g) const {
    constexpr std::uint32_t p = 65521;
    return affine16{std::uint16_t(std::uint32_t(f.a) * g.a % p), std::uint16_t((std::uint32_t(f.b) * g.a + g.b) % p)};
  }
};

// The staged kernel (short segments in one offsets array, copied into shared memory a tile at a
// time): the input 0-3 elements past a 16-byte boundary, tiles with a segment too long for
// shared memory among the short ones (folded from global memory, those over 2048 queued), and a
// non-commutative 4-byte operator, so that the elements before a tile's first and after its last
// 16-byte boundary must be folded in order with those in shared memory.
TEST(CudaDeviceSegmented, OffsetsStagedTilesMisalignedAndNonCommutative) {
  MR_REQUIRE_GPU();
  const std::uint64_t seed = seed_for("staged segments");
  std::mt19937_64 g(seed);
  const std::size_t n = (1 << 20) + 16;
  const auto v = random_ints(n, seed);
  std::vector<affine16> f(n);
  for (auto& x : f) x = affine16{std::uint16_t(1 + g() % 65520), std::uint16_t(g() % 65521)};
  auto in = on_device<int>(v);
  auto fin = on_device<affine16>(f);
  mc::workspace ws;
  for (int shift = 0; shift < 4; ++shift) {
    const std::int64_t size = std::int64_t(n) - shift;
    std::vector<std::int64_t> off{std::int64_t(g() % 7)};
    while (true) {
      const std::int64_t l = g() % 3000 == 0 ? std::int64_t(3000 + g() % 30000) : std::int64_t(g() % 41);
      if (off.back() + l > size) break;
      off.push_back(off.back() + l);
    }
    const std::int64_t segments = std::int64_t(off.size()) - 1;
    SCOPED_TRACE(::testing::Message() << "input shifted by " << shift << ", " << segments << " segments");
    const std::vector<std::int64_t> b(off.begin(), off.end() - 1), e(off.begin() + 1, off.end());
    const std::vector<int> vs(v.begin() + shift, v.end());
    const std::vector<affine16> fs(f.begin() + shift, f.end());
    std::vector<int> off32(off.begin(), off.end());
    auto d_off32 = on_device<int>(off32);
    auto d_off = on_device<std::int64_t>(off);
    auto out = on_device<long long>(std::size_t(segments));
    ws.segmented_reduce_async(in.data() + shift, size, out.data(), segments, d_off32.data(), d_off32.data() + 1, multireduce::sum{}, 3LL);
    EXPECT_EQ(host_copy(out), reference_segments(vs, b, e, multireduce::sum{}, 3LL));
    auto out_f = on_device<affine16>(std::size_t(segments));
    ws.segmented_reduce_async(fin.data() + shift, size, out_f.data(), segments, d_off.data(), d_off.data() + 1, affine16_then{}, affine16{1, 0});
    const auto got = host_copy(out_f);
    const auto want = reference_segments(fs, b, e, affine16_then{}, affine16{1, 0});
    for (std::size_t s = 0; s < want.size(); ++s)
      ASSERT_TRUE(got[s] == want[s]) << "segment " << s << " [" << b[s] << ", " << e[s] << ")";
  }
}

// Overlapping long segments (separate begin and end arrays) need more queue pieces than any
// disjoint set: the reservations past the capacity are left unused and their groups fold them.
TEST(CudaDeviceSegmented, OffsetsOverlappingLongSegmentsOverflowTheQueue) {
  MR_REQUIRE_GPU();
  const auto v = random_ints(1 << 22, seed_for("overlapping segments"));
  auto in = on_device<int>(v);
  mc::workspace ws;
  auto check = [&](const char* name, const std::vector<std::int64_t>& b, const std::vector<std::int64_t>& e) {
    SCOPED_TRACE(name);
    auto d_b = on_device<std::int64_t>(b);
    auto d_e = on_device<std::int64_t>(e);
    auto out = on_device<long long>(b.size());
    ws.segmented_reduce_async(in.data(), std::int64_t(v.size()), out.data(), std::int64_t(b.size()), d_b.data(), d_e.data(), multireduce::sum{}, 1LL);
    EXPECT_EQ(host_copy(out), reference_segments(v, b, e, multireduce::sum{}, 1LL));
  };
  std::vector<std::int64_t> b, e;
  for (int i = 0; i < 100; ++i) b.push_back(5 + i), e.push_back(5 + i + (1 << 20));
  b.push_back(7), e.push_back(7);  // and an empty one
  check("100 of 2^20 elements", b, e);
  // More long segments than the queue has slots (2112 for 2^22 elements) and more pieces than it
  // holds (2304), in random order: reservations past the room are left unused, and
  // (with a read of the header first) refused once the header shows no room.
  std::mt19937_64 g(seed_for("overlapping segments order"));
  b.clear(), e.clear();
  for (int i = 0; i < 2400; ++i) {
    const std::int64_t length = i % 100 == 0 ? 600000 + std::int64_t(g() % 1000) : 2049 + std::int64_t(g() % 6000);
    const std::int64_t begin = std::int64_t(g() % (v.size() - std::size_t(length)));
    b.push_back(begin), e.push_back(begin + length);
  }
  check("2400 in random order", b, e);
  // The same among 2^24 segments (the rest empty): enough that the queue reads its header for room
  // before every reservation (with fewer, reservations cannot wrap it and go without the read).
  b.resize(std::size_t(1) << 24, 0), e.resize(std::size_t(1) << 24, 0);
  check("2400 in random order among 2^24", b, e);
}

// Unchecked offsets (workspace::segmented_reduce_async with a mark): good ones leave the mark ~0
// and give the checked call's results; a bad one is marked (the first bad index), nothing outside
// the input is read, and the next call on the workspace (its queue header kept zero) is right.
TEST(CudaDeviceSegmented, UncheckedOffsetsAreMarkedAndClamped) {
  MR_REQUIRE_GPU();
  if (mc::detail::device_major() < 9) GTEST_SKIP() << "unchecked offsets take the staged kernel (sm_90)";
  const std::uint64_t seed = seed_for("unchecked offsets");
  const auto v = random_ints(1 << 20, seed);
  auto in = on_device<int>(v);
  mc::workspace ws;
  std::mt19937_64 g(seed);
  std::vector<std::int64_t> off{0};
  while (off.back() < std::int64_t(v.size()) - 5000) off.push_back(off.back() + std::int64_t(g() % 41));
  off.push_back(off.back() + 3000);  // one long segment among them: queued
  const std::int64_t segments = std::int64_t(off.size()) - 1;
  const std::vector<std::int64_t> b(off.begin(), off.end() - 1), e(off.begin() + 1, off.end());
  const auto want = reference_segments(v, b, e, multireduce::sum{}, 0LL);
  auto mark = on_device<unsigned long long>(std::vector<unsigned long long>{~0ull});
  auto run = [&](const std::vector<std::int64_t>& offsets) {
    auto d_off = on_device<std::int64_t>(offsets);
    auto out = on_device<long long>(std::vector<long long>(std::size_t(segments), -7));
    ws.segmented_reduce_async(in.data(), std::int64_t(v.size()), out.data(), segments, d_off.data(), d_off.data() + 1,
                              multireduce::sum{}, 0LL, mark.data());
    return host_copy(out);
  };
  EXPECT_EQ(run(off), want);
  EXPECT_EQ(host_copy(mark)[0], ~0ull);
  for (const auto& [s, value] : {std::pair<std::int64_t, std::int64_t>{segments / 2, std::int64_t(1) << 40},
                                 {segments / 3, -(std::int64_t(1) << 40)}, {0, -1}, {segments, std::int64_t(v.size()) + 1}}) {
    SCOPED_TRACE(s);
    auto bad = off;
    bad[std::size_t(s)] = value;
    run(bad);  // values meaningless; no fault
    // a huge offset breaks the rule at the one after it (o[s + 1] < o[s]), unless it is the last
    const std::int64_t first_bad = value > std::int64_t(v.size()) && s < segments ? s + 1 : s;
    EXPECT_EQ(host_copy(mark)[0], static_cast<unsigned long long>(first_bad));
    mark = on_device<unsigned long long>(std::vector<unsigned long long>{~0ull});
    EXPECT_EQ(run(off), want);  // the workspace's queue header is zero again
    EXPECT_EQ(host_copy(mark)[0], ~0ull);
  }
}

}  // namespace
}  // namespace mr_test
