// Benchmarks need a GPU: this build has no CUDA.
#include <cstdio>

#include "bench.hpp"

namespace multireduce::bench {
int run(const options&) {
  std::fprintf(stderr, "multireduce bench: this build has no CUDA support (configure with MULTIREDUCE_ENABLE_CUDA=ON)\n");
  return 2;
}
std::string suites() { return ""; }
}  // namespace multireduce::bench
