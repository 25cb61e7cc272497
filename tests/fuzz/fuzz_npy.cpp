// libFuzzer target for npy::parse (run by run_fuzz.cmake as the CTest test fuzz_npy_reader).
// npy::error is the only acceptable way to reject an input; any other exception, a sanitizer
// report, a hang or a huge allocation is a bug. Accepted inputs must also survive a round trip
// through npy::encode unchanged.
#include <cstddef>
#include <cstdint>
#include <span>

#include "npy/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace npy = multireduce::npy;
  npy::array a;
  try {
    a = npy::parse(std::span(reinterpret_cast<const std::byte*>(data), size), "fuzz input");
  } catch (const npy::error&) {
    return 0;
  }
  if (a.data.size() != static_cast<std::size_t>(a.count()) * npy::size_of(a.type)) __builtin_trap();
  // What was accepted is written back and must read the same (throwing here is a bug too).
  const npy::array b = npy::parse(npy::encode(a.type, a.shape, a.data.data()), "round trip");
  if (b.type != a.type || b.shape != a.shape || b.data != a.data) __builtin_trap();
  return 0;
}
