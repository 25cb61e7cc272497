// Writes sample_npz.hpp's arrays as an .npz file, for check_npz.py to read with numpy.load.
// Usage: multireduce_write_npz OUT.npz
#include <cstdio>
#include <exception>
#include <fstream>

#include "npy/npz.hpp"
#include "sample_npz.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.npz\n", argv[0]);
    return 2;
  }
  try {
    mr_test::sample_npz sample;
    const auto bytes = multireduce::npy::encode_npz(sample.entries());
    std::ofstream out(argv[1], std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) {
      std::fprintf(stderr, "cannot write %s\n", argv[1]);
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
