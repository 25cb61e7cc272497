// bench.cpp -- the suite registry and `multireduce bench SUITE` (bench.hpp).
#include "bench.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace multireduce::bench {

namespace {
std::vector<suite>& registry() {
  static std::vector<suite> suites;  // filled at static initialisation, read-only afterwards
  return suites;
}
}  // namespace

bool register_suite(const suite& s) {
  auto& all = registry();
  all.insert(std::upper_bound(all.begin(), all.end(), s,
                              [](const suite& a, const suite& b) { return std::string(a.name) < std::string(b.name); }),
             s);
  return true;
}

const std::vector<suite>& suites() { return registry(); }

std::string suite_names() {
  std::string names;
  for (const auto& s : suites()) names += (names.empty() ? "" : ", ") + std::string(s.name);
  return names;
}

int run(const options& opts) {
  const auto& all = suites();
  const auto found = std::find_if(all.begin(), all.end(), [&](const suite& s) { return opts.suite == s.name; });
  if (found == all.end()) {
    const bool gpu_suites = std::any_of(all.begin(), all.end(), [](const suite& s) { return s.needs_gpu; });
    std::fprintf(stderr, "multireduce bench: unknown suite '%s' (this build has: %s%s)\n", opts.suite.c_str(),
                 suite_names().c_str(), gpu_suites ? "" : "; the GPU suites need a build with CUDA");
    return 2;
  }
  nlohmann::json record;
  int status = 1;
  try {
    status = found->run(opts, record);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "multireduce bench: error: %s\n", e.what());
    return 1;
  }
  if (!opts.json_path.empty()) {
    std::ofstream out(opts.json_path);
    out << record.dump(2) << '\n';
    if (!out) {
      std::fprintf(stderr, "multireduce bench: could not write %s\n", opts.json_path.c_str());
      return status != 0 ? status : 1;
    }
    std::printf("wrote %s\n", opts.json_path.c_str());
  }
  return status;
}

}  // namespace multireduce::bench
