// bench.cpp -- the suite registry and `multireduce bench SUITE` (bench.hpp).
#include "bench.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cli/command_common.hpp"
#include "cli/output_file.hpp"

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
    if (std::find(gpu_suite_names.begin(), gpu_suite_names.end(), opts.suite) != gpu_suite_names.end()) {
      std::fprintf(stderr, "multireduce bench: the %s suite runs on a GPU, and this build has no CUDA support\n",
                   opts.suite.c_str());
      return 1;
    }
    std::fprintf(stderr, "multireduce bench: unknown suite '%s' (the suites: %s)\n", opts.suite.c_str(),
                 suite_names().c_str());
    return 2;
  }
  // The JSON record's file is checked before the suite runs (not after minutes of benchmarks).
  std::optional<cli::output_file> json;
  try {
    if (!opts.json_path.empty()) json.emplace("--json", opts.json_path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "multireduce bench: error: %s\n", e.what());
    return 1;
  }
  nlohmann::json record;
  int status = 1;
  try {
    status = found->run(opts, record);
    if (json) {
      const std::string text = record.dump(2) + "\n";
      cli::write_whole(*json, text.data(), text.size());
      std::printf("wrote %s\n", opts.json_path.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "multireduce bench: error: %s\n", e.what());
    return 1;
  }
  return status;
}

}  // namespace multireduce::bench
