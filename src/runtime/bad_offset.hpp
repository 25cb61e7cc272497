// runtime/bad_offset.hpp -- the one wording of a bad offset, for offsets checked on the host
// (runtime.cpp) and on a device (a backend's own check).
#pragma once

#include <cstdint>

namespace multireduce::runtime {

/// Throws std::invalid_argument for offsets whose first bad entry is s (s == 0: o[0] < 0; else
/// o[s] < o[s - 1], or s == segments and o[s] > n), naming the entries. `previous` is o[s - 1]
/// (unused for s = 0).
[[noreturn]] void throw_bad_offset(std::int64_t s, std::int64_t previous, std::int64_t value, std::int64_t n);

}  // namespace multireduce::runtime
