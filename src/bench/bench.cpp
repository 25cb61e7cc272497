// bench.cpp -- the suite registry and `multireduce bench SUITE` (bench.hpp).
#include "bench.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

namespace {

int (*gpu_probe)() = nullptr;  // set by bench.cu in a build with CUDA

/// Runs one suite, catching what it throws; @return its exit code.
int run_one(const suite& s, const options& opts, nlohmann::json& record) {
  try {
    options one = opts;
    one.suite = s.name;
    return s.run(one, record);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "multireduce bench %s: error: %s\n", s.name, e.what());
    record["error"] = e.what();
    return 1;
  }
}

/// Every suite of this build in turn (the GPU ones only with a GPU), each with a progress line;
/// the records under "suites", handed to `checkpoint` after each suite (so that a long run that is
/// stopped still leaves the suites it finished). @return 0 when every suite that ran verified.
int run_all(const options& opts, nlohmann::json& record, const std::function<void(const nlohmann::json&)>& checkpoint) {
  const int gpus = gpu_probe ? gpu_probe() : 0;
  std::vector<const suite*> runnable;
  std::vector<std::string> skipped;
  std::string named_only;
  for (const auto& s : suites()) {
    if (s.only_when_named) {
      named_only += (named_only.empty() ? "" : ", ") + std::string(s.name);
      continue;
    }
    if (s.needs_gpu && gpus == 0) skipped.emplace_back(s.name);
    else runnable.push_back(&s);
  }
  if (!gpu_probe)
    for (auto name : gpu_suite_names) skipped.emplace_back(name);
  if (!skipped.empty()) {
    std::string names;
    for (const auto& n : skipped) names += (names.empty() ? "" : ", ") + n;
    std::printf("multireduce bench: %s, so these GPU suites are skipped: %s\n",
                gpu_probe ? "no CUDA device is available" : "this build has no CUDA support", names.c_str());
  }
  if (!named_only.empty()) std::printf("multireduce bench: these suites run only when named: %s\n", named_only.c_str());
  record["skipped"] = skipped;
  record["suites"] = nlohmann::json::object();
  int status = 0;
  const auto started = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < runnable.size(); ++i) {
    const suite& s = *runnable[i];
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::printf("\n==== [%zu/%zu] %s: %s (%.0f s so far) ====\n", i + 1, runnable.size(), s.name, s.description, elapsed);
    std::fflush(stdout);
    nlohmann::json one;
    const int code = run_one(s, opts, one);
    one["exit_code"] = code;
    record["suites"][s.name] = std::move(one);
    checkpoint(record);
    if (code != 0) {
      std::printf("==== %s: exit %d ====\n", s.name, code);
      status = 1;
    }
  }
  std::printf("\nmultireduce bench: %zu suites ran, %zu skipped, %s\n", runnable.size(), skipped.size(),
              status == 0 ? "every result verified" : "SOME SUITES FAILED (exit codes in the record)");
  return status;
}

std::string csv_field(const nlohmann::json& v) {
  std::string text = v.is_string() ? v.get<std::string>() : v.dump();
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

/// Collects every array of objects under `node` (the path joined by '.') as table rows.
void collect_rows(const std::string& path, const nlohmann::json& node,
                  std::vector<std::pair<std::string, const nlohmann::json*>>& rows) {
  if (node.is_array()) {
    for (const auto& item : node)
      if (item.is_object()) rows.emplace_back(path, &item);
    return;
  }
  if (!node.is_object()) return;
  for (const auto& [key, value] : node.items())
    if (key != "device" && key != "options") collect_rows(path.empty() ? key : path + "." + key, value, rows);
}

void append_suite_csv(const std::string& suite_name, const nlohmann::json& record, std::vector<std::string>& columns,
                      std::vector<std::vector<std::pair<std::string, std::string>>>& lines) {
  std::vector<std::pair<std::string, const nlohmann::json*>> rows;
  collect_rows("", record, rows);
  for (const auto& [table, row] : rows) {
    std::vector<std::pair<std::string, std::string>> line = {{"suite", suite_name}, {"table", table}};
    for (const auto& [key, value] : row->items()) {
      if (std::find(columns.begin(), columns.end(), key) == columns.end()) columns.push_back(key);
      line.emplace_back(key, csv_field(value));
    }
    lines.push_back(std::move(line));
  }
}

}  // namespace

bool set_gpu_probe(int (*probe)()) {
  gpu_probe = probe;
  return true;
}

std::string csv_of(const nlohmann::json& record) {
  std::vector<std::string> columns = {"suite", "table"};
  std::vector<std::vector<std::pair<std::string, std::string>>> lines;
  if (record.contains("suites")) {
    for (const auto& [name, one] : record["suites"].items()) append_suite_csv(name, one, columns, lines);
  } else {
    append_suite_csv(record.value("suite", std::string("?")), record, columns, lines);
  }
  std::string out;
  for (std::size_t c = 0; c < columns.size(); ++c) out += (c ? "," : "") + csv_field(columns[c]);
  out += "\n";
  for (const auto& line : lines) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (c) out += ",";
      for (const auto& [key, value] : line)
        if (key == columns[c]) {
          out += value;
          break;
        }
    }
    out += "\n";
  }
  return out;
}

int run(const options& opts) {
  if (opts.list) {
    for (const auto& s : suites()) std::printf("%-15s %s%s\n", s.name, s.description, s.needs_gpu ? " (GPU)" : "");
    if (!gpu_probe)
      for (auto name : gpu_suite_names) std::printf("%-15s (needs a build with CUDA)\n", std::string(name).c_str());
    return 0;
  }
  const suite* found = nullptr;
  if (!opts.suite.empty()) {
    const auto& all = suites();
    const auto it = std::find_if(all.begin(), all.end(), [&](const suite& s) { return opts.suite == s.name; });
    if (it == all.end()) {
      if (std::find(gpu_suite_names.begin(), gpu_suite_names.end(), opts.suite) != gpu_suite_names.end()) {
        std::fprintf(stderr, "multireduce bench: the %s suite runs on a GPU, and this build has no CUDA support\n",
                     opts.suite.c_str());
        return 1;
      }
      std::fprintf(stderr, "multireduce bench: unknown suite '%s' (the suites: %s)\n", opts.suite.c_str(),
                   suite_names().c_str());
      return 2;
    }
    found = &*it;
  }
  // The output files are checked before any suite runs (not after minutes of benchmarks).
  std::optional<cli::output_file> json, csv;
  try {
    if (!opts.json_path.empty()) json.emplace("--json", opts.json_path);
    if (!opts.csv_path.empty()) csv.emplace("--csv", opts.csv_path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "multireduce bench: error: %s\n", e.what());
    return 1;
  }
  nlohmann::json record;
  int status = 1;
  try {
    // A run of every suite rewrites its JSON record after each suite (atomically: the file always
    // holds whole suites).
    auto checkpoint = [&](const nlohmann::json& so_far) {
      if (opts.json_path.empty() || !json || json->direct()) return;
      const std::string text = so_far.dump(2) + "\n";
      cli::output_file partial("--json", opts.json_path);
      cli::write_whole(partial, text.data(), text.size());
    };
    status = found ? found->run(opts, record) : run_all(opts, record, checkpoint);
    if (json) {
      const std::string text = record.dump(2) + "\n";
      cli::write_whole(*json, text.data(), text.size());
      std::printf("wrote %s\n", opts.json_path.c_str());
    }
    if (csv) {
      const std::string text = csv_of(record);
      cli::write_whole(*csv, text.data(), text.size());
      std::printf("wrote %s\n", opts.csv_path.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "multireduce bench: error: %s\n", e.what());
    return 1;
  }
  return status;
}

}  // namespace multireduce::bench
