// COLMAP's text files: the raw matches matches_importer reads (colmap::write_matches_text) and the
// image pair list (colmap::read_pair_list): its comments, blank lines, swapped pairs, duplicates,
// and a file:line message for every line it refuses.
#include <stdexcept>

#include "../common/scratch_dir.hpp"
#include "colmap_test_util.hpp"

namespace {

using namespace mr_test;
namespace fs = std::filesystem;
using pair_list = std::vector<std::array<std::int32_t, 2>>;

using colmap_text = scratch_dir;

const std::vector<std::string> names = {"a.jpg", "b.jpg", "dir/c.jpg", "d.jpg"};

TEST_F(colmap_text, matches_text_format) {
  collection c;
  c.names = names;
  c.add(0, 2, {{4, 5}, {10, 0}});
  c.add(1, 3, {});
  c.add(2, 3, {{123456, 7}});
  const fs::path file = dir / "matches.txt";
  write_text(file, "an older file, replaced whole");
  colmap::write_matches_text(file, c.view());
  EXPECT_EQ(file_bytes(file), "a.jpg dir/c.jpg\n4 5\n10 0\n\nb.jpg d.jpg\n\ndir/c.jpg d.jpg\n123456 7\n\n");
  EXPECT_EQ(colmap::matches_text(c.view()), file_bytes(file));
  EXPECT_EQ(listing(), std::vector<std::string>{"matches.txt"});
}

TEST_F(colmap_text, matches_text_random_round_trip) {
  const std::uint64_t seed = colmap_seed(3);
  SCOPED_TRACE(::testing::Message() << "seed " << seed << " (MULTIREDUCE_TEST_SEED=" << base_seed() << ")");
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> counts;
  const collection c = random_collection(9, counts, rng);
  colmap::write_matches_text(dir / "m.txt", c.view());
  // Read back as COLMAP does: a pair line, match lines up to an empty line.
  std::ifstream in(dir / "m.txt");
  std::string line;
  for (std::size_t p = 0; p < c.pairs.size() / 2; ++p) {
    ASSERT_TRUE(std::getline(in, line));
    EXPECT_EQ(line, c.names[c.pairs[2 * p]] + " " + c.names[c.pairs[2 * p + 1]]);
    for (std::int64_t r = c.offsets[p]; r < c.offsets[p + 1]; ++r) {
      ASSERT_TRUE(std::getline(in, line));
      EXPECT_EQ(line, std::to_string(c.matches[3 * r]) + " " + std::to_string(c.matches[3 * r + 1]));
    }
    ASSERT_TRUE(std::getline(in, line));
    EXPECT_EQ(line, "");
  }
  EXPECT_FALSE(std::getline(in, line));
}

TEST_F(colmap_text, matches_text_refuses_names_colmap_cannot_read) {
  collection c;
  c.names = {"a b.jpg", "c.jpg"};
  c.add(0, 1, {{0, 0}});
  write_text(dir / "m.txt", "old");
  EXPECT_THROW(colmap::write_matches_text(dir / "m.txt", c.view()), std::invalid_argument);
  EXPECT_THROW(colmap::matches_text(c.view()), std::invalid_argument);
  c.names[0] = "";
  EXPECT_THROW(colmap::write_matches_text(dir / "m.txt", c.view()), std::invalid_argument);
  EXPECT_EQ(file_bytes(dir / "m.txt"), "old");
  c.names[0] = "a.jpg";
  EXPECT_THROW(colmap::write_matches_text(dir / "no/such/dir.txt", c.view()), std::runtime_error);
  EXPECT_EQ(listing(), std::vector<std::string>{"m.txt"});
}

TEST_F(colmap_text, pair_list) {
  const fs::path file = dir / "pairs.txt";
  write_text(file,
             "# pairs to match\n"
             "\n"
             "a.jpg b.jpg\n"
             "  d.jpg\ta.jpg  \r\n"   // swapped, tabs and a Windows line end
             "   # an indented comment\n"
             "b.jpg a.jpg\n"          // the first pair again, other way round: dropped
             "dir/c.jpg d.jpg\n"
             "a.jpg b.jpg\n"          // and again
             "   \n");
  std::int64_t duplicates = -1;
  EXPECT_EQ(colmap::read_pair_list(file, names, &duplicates), (pair_list{{0, 1}, {0, 3}, {2, 3}}));
  EXPECT_EQ(duplicates, 2);
  EXPECT_EQ(colmap::read_pair_list(file, names), (pair_list{{0, 1}, {0, 3}, {2, 3}}));

  write_text(file, "");
  EXPECT_EQ(colmap::read_pair_list(file, names, &duplicates), pair_list{});
  EXPECT_EQ(duplicates, 0);
  write_text(file, "a.jpg b.jpg");  // no newline at the end
  EXPECT_EQ(colmap::read_pair_list(file, names), (pair_list{{0, 1}}));
}

TEST_F(colmap_text, pair_list_errors_name_file_and_line) {
  const fs::path file = dir / "pairs.txt";
  const auto message = [&](const std::string& text) {
    write_text(file, text);
    try {
      colmap::read_pair_list(file, names);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("nothing thrown");
  };
  const std::string where = file.string();
  EXPECT_EQ(message("# x\na.jpg b.jpg\na.jpg e.jpg\n"), where + ":3: the image 'e.jpg' is not in the collection");
  EXPECT_EQ(message("\n\nd.jpg d.jpg\n"), where + ":3: pairs the image 'd.jpg' with itself");
  EXPECT_EQ(message("a.jpg\n"), where + ":1: expected two image names, found 1 words");
  EXPECT_EQ(message("a.jpg b.jpg\na.jpg b.jpg d.jpg\n"), where + ":2: expected two image names, found 3 words");
  EXPECT_EQ(message("a.jpg b.jpg # trailing\n"), where + ":1: expected two image names, found 4 words");

  const std::vector<std::string> twice = {"a.jpg", "a.jpg"};
  write_text(file, "a.jpg b.jpg\n");
  EXPECT_THROW(colmap::read_pair_list(file, twice), std::invalid_argument);
  EXPECT_THROW(colmap::read_pair_list(dir / "absent.txt", names), std::runtime_error);
}

}  // namespace
