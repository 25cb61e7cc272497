// The emulator itself: PTX shfl semantics, value exchange, and the divergent collectives it reports
// instead of hanging.
#include "../common/host_runner.hpp"

namespace mr_test {
namespace {

host_runner runner;

// ---- PTX shfl semantics ---------------------------------------------------------------------------
TEST(ShuffleSemantics, MatchesPtx) {
  using m = shuffle_mode;
  EXPECT_EQ(shuffle_source_lane(m::bfly, 5, 1, 32, 32), 4);
  EXPECT_EQ(shuffle_source_lane(m::bfly, 3, 8, 8, 32), 3);    // later group: own value
  EXPECT_EQ(shuffle_source_lane(m::bfly, 11, 8, 8, 32), 3);   // earlier group: readable
  EXPECT_EQ(shuffle_source_lane(m::down, 6, 1, 8, 32), 7);
  EXPECT_EQ(shuffle_source_lane(m::down, 7, 1, 8, 32), 7);    // clamped at the segment end
  EXPECT_EQ(shuffle_source_lane(m::up, 8, 1, 8, 32), 8);      // clamped at the segment start
  EXPECT_EQ(shuffle_source_lane(m::up, 9, 1, 8, 32), 8);
  EXPECT_EQ(shuffle_source_lane(m::idx, 13, 3, 8, 32), 11);
  EXPECT_EQ(shuffle_source_lane(m::idx, 13, 11, 8, 32), 11);  // source index wraps within the width
  EXPECT_EQ(shuffle_source_lane(m::idx, 13, 35, 32, 32), 3);  // only b[4:0] counts
  EXPECT_EQ(shuffle_source_lane(m::bfly, 40, 32, 64, 64), 8);
  EXPECT_EQ(shuffle_source_lane(m::down, 63, 1, 64, 64), 63);
  EXPECT_EQ(shuffle_source_lane(m::idx, 50, 70, 64, 64), 6);
}
TEST(ShuffleSemantics, EmulatedWarpExchangesValues) {
  std::vector<std::uint32_t> got(64);
  runner.block_for(64, 1).run([&](host_lane& lane) {
    const auto x = shuffle_idx(lane, static_cast<std::uint32_t>(lane.id() * 10), 63 - lane.id(), 64);
    got[static_cast<std::size_t>(lane.id())] = x + static_cast<std::uint32_t>(lane.ballot(lane.id() == 5) == 32);
  });
  for (int l = 0; l < 64; ++l) EXPECT_EQ(got[static_cast<std::size_t>(l)], static_cast<std::uint32_t>((63 - l) * 10 + 1));
}

// ---- the emulator reports what would hang a GPU -------------------------------------------------
TEST(Emulator, ReportsDivergentCollectives) {
  host_block block(32, 1);
  EXPECT_THROW(block.run([](host_lane& lane) {
                 if (lane.id() == 3) return;
                 (void)lane.shfl_xor(1u, 1, 32);
               }),
               std::logic_error);
  EXPECT_THROW(block.run([](host_lane& lane) {
                 if (lane.id() == 0) lane.sync();
                 else (void)lane.ballot(true);
               }),
               std::logic_error);
  EXPECT_THROW(block.run([](host_lane& lane) { (void)lane.shfl_xor(1u, 1, 3); }), std::invalid_argument);
  EXPECT_THROW(block.run([](host_lane& lane) {
                 if (lane.id() == 9) throw std::runtime_error("lane failure");
               }),
               std::runtime_error);
  block.run([](host_lane& lane) { (void)lane.shfl_xor(1u, 1, 32); });  // usable again afterwards
  EXPECT_EQ(block.counts().shuffles, 1u);
}

}  // namespace
}  // namespace mr_test
