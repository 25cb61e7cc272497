// The arrays of a collection matcher's .npz, small and known: test_npz.cpp parses the archive back
// with libzip, write_npz.cpp writes it for check_npz.py, which reads it with numpy.load and checks
// every value against the same formulas.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "npy/npz.hpp"

namespace mr_test {

struct sample_npz {
  /// Four images; non-ASCII names, the longest 9 code points ("Ansicht_ä": 10 bytes of UTF-8).
  std::vector<std::string> names{"view_0", "Ansicht_\xc3\xa4", "\xe8\xa7\x86\xe5\x9b\xbe_2",
                                 "emoji_\xf0\x9f\x98\x80"};
  std::vector<std::int32_t> pairs;    ///< (6, 2): every pair i < j of the 4 images
  std::vector<std::int64_t> offsets;  ///< (7,): pair p's matches are rows offsets[p] .. offsets[p + 1]
  std::vector<std::int32_t> matches;  ///< (10, 3): row r is (r * 7 % 13, r * 5 % 11, 3 * r - 5)
  std::vector<float> xy;              ///< (3, 2): r + c / 4 - 1.5
  std::vector<std::uint8_t> bits;     ///< (2, 32): (r * 32 + c) * 37 % 256
  std::vector<std::byte> name_storage;

  sample_npz() {
    for (std::int32_t i = 0; i < 4; ++i)
      for (std::int32_t j = i + 1; j < 4; ++j) pairs.insert(pairs.end(), {i, j});
    const std::int64_t per_pair[6] = {3, 0, 2, 1, 0, 4};
    offsets.push_back(0);
    for (const std::int64_t n : per_pair) offsets.push_back(offsets.back() + n);
    for (std::int32_t r = 0; r < 10; ++r) matches.insert(matches.end(), {r * 7 % 13, r * 5 % 11, 3 * r - 5});
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 2; ++c) xy.push_back(static_cast<float>(r) + static_cast<float>(c) / 4 - 1.5f);
    for (int i = 0; i < 64; ++i) bits.push_back(static_cast<std::uint8_t>(i * 37 % 256));
  }

  /// The entries, in this order: names, pairs, offsets, matches, empty_matches (0, 3), xy, bits_ä.
  std::vector<multireduce::npy::npz_entry> entries() {
    using multireduce::npy::npz_entry;
    std::vector<npz_entry> out;
    out.push_back(multireduce::npy::string_entry("names", names, name_storage));
    out.push_back({"pairs", "<i4", {6, 2}, std::as_bytes(std::span(pairs))});
    out.push_back({"offsets", "<i8", {7}, std::as_bytes(std::span(offsets))});
    out.push_back({"matches", "<i4", {10, 3}, std::as_bytes(std::span(matches))});
    out.push_back({"empty_matches", "<i4", {0, 3}, {}});
    out.push_back({"xy", "<f4", {3, 2}, std::as_bytes(std::span(xy))});
    out.push_back({"bits_\xc3\xa4", "|u1", {2, 32}, std::as_bytes(std::span(bits))});  // a UTF-8 name
    return out;
  }
};

}  // namespace mr_test
