// match_cmd.cpp -- `multireduce match` (see match_cmd.hpp).
#include "match_cmd.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <multireduce/match/match.hpp>

#include "command_common.hpp"
#include "npy/input_file.hpp"
#include "npy/npy.hpp"
#include "output_file.hpp"
#include "progress.hpp"
#include "runtime/runtime.hpp"

namespace multireduce::cli {
namespace {

std::string matches_csv(const std::vector<match>& kept) {
  std::string text = "query,train,distance\n";
  for (const auto& m : kept) text += fmt::format("{},{},{}\n", m.query, m.train, m.distance);
  return text;
}

/// The .npy bytes of a (rows, columns) int32 array.
std::vector<std::byte> int32_npy(std::int64_t rows, std::int64_t columns, const std::int32_t* data) {
  const std::int64_t shape[2] = {rows, columns};
  return npy::encode(npy::dtype::int32, shape, data);
}

std::vector<std::byte> bytes_of(const std::string& text) {
  const auto* p = reinterpret_cast<const std::byte*>(text.data());
  return {p, p + text.size()};
}

/// The k nearest as a (queries, k) slice of the (queries, k_search) lists.
std::vector<std::int32_t> first_columns(const std::vector<std::int32_t>& v, std::int64_t rows, int from, int k) {
  std::vector<std::int32_t> out(std::size_t(rows) * std::size_t(k));
  for (std::int64_t r = 0; r < rows; ++r)
    for (int j = 0; j < k; ++j) out[std::size_t(r * k + j)] = v[std::size_t(r * from + j)];
  return out;
}

/// An (N, columns) float32 or float64 array as doubles.
std::vector<double> read_table(const std::string& path, std::int64_t rows, std::int64_t columns, const char* what) {
  const npy::array a = npy::read(path);
  if (a.shape.size() != 2 || a.shape[0] != rows || a.shape[1] != columns ||
      (a.type != npy::dtype::float32 && a.type != npy::dtype::float64))
    throw command_error(fmt::format("{}: {} must be a float32/float64 array of shape ({}, {}), got {} of shape {}",
                                            path, what, rows, columns, npy::name_of(a.type), shape_string(a.shape)));
  std::vector<double> v(std::size_t(rows * columns));
  if (a.type == npy::dtype::float32) std::copy_n(a.values<float>().data(), v.size(), v.data());
  else std::copy_n(a.values<double>().data(), v.size(), v.data());
  return v;
}

/// How many kept matches land within `px` pixels of where the homography puts their query point.
std::int64_t count_inliers(const std::vector<match>& kept, const match_options& o, std::int64_t nq, std::int64_t nt) {
  const auto h = read_table(o.homography, 3, 3, "the homography");
  const auto qxy = read_table(o.query_xy, nq, 2, "the query keypoints");
  const auto txy = read_table(o.train_xy, nt, 2, "the train keypoints");
  std::int64_t inliers = 0;
  for (const auto& m : kept) {
    const double x = qxy[std::size_t(2 * m.query)], y = qxy[std::size_t(2 * m.query + 1)];
    const double w = h[6] * x + h[7] * y + h[8];
    const double px = (h[0] * x + h[1] * y + h[2]) / w, py = (h[3] * x + h[4] * y + h[5]) / w;
    const double dx = px - txy[std::size_t(2 * m.train)], dy = py - txy[std::size_t(2 * m.train + 1)];
    inliers += dx * dx + dy * dy <= o.inlier_px * o.inlier_px;
  }
  return inliers;
}

int match_body(const match_options& o) {
  const command_clock clock;
  match_rule rule;
  if (o.ratio) rule.ratio = *o.ratio;
  if (o.margin) rule.margin = *o.margin;
  if (o.max_distance) rule.max_distance = *o.max_distance;
  rule.cross_check = o.cross_check;
  check_match_rule(rule);
  if (o.knn_idx.empty() != o.knn_dist.empty()) throw command_error("--knn-idx and --knn-dist go together");
  const bool geometry = !o.homography.empty();
  if (geometry && (o.query_xy.empty() || o.train_xy.empty()))
    throw command_error("--homography needs --query-xy and --train-xy");

  // Every output is planned before anything is read or computed.
  std::optional<output_file> output, knn_idx, knn_dist;
  if (!o.output.empty()) output.emplace("-o", o.output);
  if (!o.knn_idx.empty()) knn_idx.emplace("--knn-idx", o.knn_idx), knn_dist.emplace("--knn-dist", o.knn_dist);
  std::string format = o.format;
  if (output && format.empty()) {
    format = o.output.ends_with(".csv") ? "csv" : o.output.ends_with(".npy") ? "npy" : output->direct() ? "csv" : "";
    if (format.empty())
      throw command_error(fmt::format("-o {}: the matches are written as .csv or .npy (or say which with --format)",
                                      o.output));
  }
  std::vector<const output_file*> outputs;
  for (const auto* f : {&output, &knn_idx, &knn_dist})
    if (*f) outputs.push_back(&**f);
  check_outputs(outputs, {{"the query set", o.query, nullptr},
                          {"the training set", o.train, nullptr},
                          {"--homography", o.homography, nullptr},
                          {"--query-xy", o.query_xy, nullptr},
                          {"--train-xy", o.train_xy, nullptr}});

  const npy::array query = read_descriptors(o.query), train = read_descriptors(o.train);
  if (query.shape[1] != train.shape[1])
    throw command_error(fmt::format("the descriptor widths differ: {} has {} bytes, {} has {}", o.query,
                                    query.shape[1], o.train, train.shape[1]));
  const int bytes = static_cast<int>(query.shape[1]);
  const std::int64_t nq = query.shape[0], nt = train.shape[0];
  check_match_arguments(nq, nt, bytes, o.k);
  // The ratio and margin tests look at the second nearest whatever k is asked for.
  const int k_search = (rule.ratio > 0 || rule.margin >= 0) ? std::max(o.k, 2) : o.k;

  runtime::knn_job job;
  job.query = query.values<std::uint8_t>().data();
  job.queries = nq;
  job.train = train.values<std::uint8_t>().data();
  job.trains = nt;
  job.bytes = bytes;
  job.k = k_search;
  job.reverse = rule.cross_check;
  job.train_chunk = o.train_chunk;
  runtime::knn_result found;
  runtime::execution exec = o.backend.execution();
  progress_bar bar("multireduce match", "comparisons");
  exec.progress = [&bar](std::int64_t done, std::int64_t total) { bar.update(done, total); };
  const runtime::report how = runtime::knn(job, found, exec);
  bar.finish();
  const std::vector<std::int32_t>& idx = found.idx;
  const std::vector<std::int32_t>& dist = found.dist;
  const std::vector<match> kept =
      accept_matches(idx.data(), dist.data(), nq, k_search, rule, rule.cross_check ? found.reverse_nearest.data() : nullptr);

  // Everything that can fail on bad input happens before the first file is written; then every
  // output is written in full before any replaces its path.
  const std::int64_t inliers = geometry ? count_inliers(kept, o, nq, nt) : 0;
  std::vector<std::pair<output_file*, std::vector<std::byte>>> writes;
  if (knn_idx) {
    writes.emplace_back(&*knn_idx, int32_npy(nq, o.k, first_columns(idx, nq, k_search, o.k).data()));
    writes.emplace_back(&*knn_dist, int32_npy(nq, o.k, first_columns(dist, nq, k_search, o.k).data()));
  }
  if (output && format == "csv") {
    writes.emplace_back(&*output, bytes_of(matches_csv(kept)));
  } else if (output) {
    std::vector<std::int32_t> rows(kept.size() * 3);
    for (std::size_t i = 0; i < kept.size(); ++i)
      rows[3 * i] = kept[i].query, rows[3 * i + 1] = kept[i].train, rows[3 * i + 2] = kept[i].distance;
    writes.emplace_back(&*output, int32_npy(std::int64_t(kept.size()), 3, rows.data()));
  } else {
    print_stdout(matches_csv(kept));
    flush_stdout();
  }
  for (auto& [file, data] : writes) file->write(data.data(), data.size());
  for (auto& [file, data] : writes) file->commit();
  fmt::print(stderr, "multireduce match: {} matches kept of {} queries ({} training descriptors, {} bits)\n",
             kept.size(), nq, nt, bytes * 8);
  if (geometry)
    fmt::print(stderr, "multireduce match: {} of them ({:.1f}%) agree with the homography (within {:g} px)\n", inliers,
               kept.empty() ? 0.0 : 100.0 * double(inliers) / double(kept.size()), o.inlier_px);
  if (o.backend.timing) {
    const double comparisons = double(nq) * double(nt) * (rule.cross_check ? 2.0 : 1.0);
    const bool gpu = how.device >= 0;
    const std::string why = how.passed_over.empty() ? "" : "; " + how.passed_over;
    fmt::print(stderr, "multireduce match: backend {} ({}{}): search {:.3f} ms, {:.3g} comparisons/s{}\n", how.backend,
               runtime::describe_device(how), why, how.seconds * 1e3,
               how.seconds > 0 ? comparisons / how.seconds : 0.0,
               !gpu ? ""
               : found.streamed_chunk > 0
                   ? fmt::format(", training set streamed {} rows at a time (copies included), GPU memory {:.1f} MiB",
                                 found.streamed_chunk, double(found.device_bytes) / (1 << 20))
                   : fmt::format(", peak GPU memory {:.1f} MiB", double(found.device_bytes) / (1 << 20)));
    fmt::print(stderr, "multireduce match: {:.3f} s in all (reading, matching, writing)\n", clock.seconds());
  }
  return 0;
}

}  // namespace

/// Reads a descriptor set: a 2-d uint8 array of rows whose width is a positive multiple of 4.
npy::array read_descriptors(const std::string& path) {
  npy::array a = npy::read(path);
  if (a.type != npy::dtype::uint8 || a.shape.size() != 2)
    throw command_error(fmt::format("{}: descriptors must be a 2-d uint8 array (rows of bytes), got {} of shape {}",
                                            path, npy::name_of(a.type), shape_string(a.shape)));
  if (a.shape[1] <= 0 || a.shape[1] % 4 != 0)
    throw command_error(
        fmt::format("{}: the descriptor width must be a positive multiple of 4 bytes, got {}", path, a.shape[1]));
  return a;
}

void add_match_rule_options(CLI::App& cmd, int& k, std::optional<double>& ratio, std::optional<int>& margin,
                            std::optional<int>& max_distance, bool& cross_check, const char* k_help) {
  constexpr auto max_int = std::numeric_limits<int>::max();
  add_integer(cmd, "--k", [&k](std::int64_t v) { k = int(v); }, k_help, 1, match_max_k, "a neighbour count");
  add_number(
      cmd, "--ratio", [&ratio](double v) { ratio = v; },
      "keep a match when nearest < R x second nearest (Lowe's ratio test), 0 < R <= 1", 0, 1, true, "a ratio");
  add_integer(
      cmd, "--margin", [&margin](std::int64_t v) { margin = int(v); },
      "keep a match when second nearest - nearest > M bits (the paper's rule)", 0, max_int, "a margin in bits");
  add_integer(
      cmd, "--max-distance", [&max_distance](std::int64_t v) { max_distance = int(v); },
      "keep a match when nearest <= D bits", 0, max_int, "a distance in bits");
  // (The rules combine, as the library's match_rule and Python's keywords do: a match is kept when
  // it passes every rule given.)
  cmd.add_flag("--cross-check", cross_check, "keep a match only when the query is its train's nearest query too");
}

CLI::App* add_match_command(CLI::App& app, match_options& opts) {
  auto* cmd = app.add_subcommand("match", "brute-force Hamming matching of binary descriptors (.npy, uint8 rows)");
  cmd->add_option("query", opts.query, "query descriptors: a (N, bytes) uint8 .npy (bytes a multiple of 4)")->required();
  cmd->add_option("train", opts.train, "training descriptors: a (M, bytes) uint8 .npy of the same width")->required();
  constexpr auto max = std::numeric_limits<std::int64_t>::max();
  add_match_rule_options(*cmd, opts.k, opts.ratio, opts.margin, opts.max_distance, opts.cross_check,
                         "neighbours listed per query (default 2)");
  add_integer(
      *cmd, "--train-chunk", [&opts](std::int64_t v) { opts.train_chunk = v; },
      "stream the training set through the GPU this many rows at a time (default: only when it does not fit in the "
      "free GPU memory)",
      1, max, "a row count");
  cmd->add_option("-o,--output", opts.output,
                  "write the accepted matches to this .csv (query,train,distance) or .npy (int32, M x 3), atomically "
                  "(- or a device/FIFO: directly, CSV unless --format npy); without -o they are printed as CSV");
  cmd->add_option("--format", opts.format, "the format of -o when its name does not say: csv or npy")
      ->check(CLI::IsMember({"csv", "npy"}));
  cmd->add_option("--knn-idx", opts.knn_idx, "write the k nearest train indices to this .npy (int32, N x k; -1: none)");
  cmd->add_option("--knn-dist", opts.knn_dist, "write their Hamming distances to this .npy (int32, N x k; -1: none)");
  add_backend_options(*cmd, opts.backend,
                      "print the backend, the search's time, comparisons per second, GPU memory and the whole "
                      "command's time to stderr");
  auto* homography = cmd->add_option("--homography", opts.homography,
                                     "a 3 x 3 .npy homography (query (x, y, 1) -> train): also print how many kept "
                                     "matches land within --inlier-px of where it puts them");
  cmd->add_option("--query-xy", opts.query_xy, "the query keypoints' (x, y), an (N, 2) float .npy (with --homography)")
      ->needs(homography);
  cmd->add_option("--train-xy", opts.train_xy, "the train keypoints' (x, y), an (M, 2) float .npy (with --homography)")
      ->needs(homography);
  add_number(
      *cmd, "--inlier-px", [&opts](double v) { opts.inlier_px = v; }, "pixel tolerance of the homography check (3)",
      0, 1e9, true, "a tolerance in pixels")
      ->needs(homography);
  // Standard input holds one stream: both sets from it is a usage error, not an empty second file.
  cmd->parse_complete_callback([&opts] {
    const auto standard_input = [](const std::string& path) { return path == "-" || path == "/dev/stdin"; };
    if (standard_input(opts.query) && standard_input(opts.train))
      throw CLI::ValidationError("train", fmt::format("standard input given twice (query {}, train {}): at most one "
                                                      "of the two sets can come from it",
                                                      opts.query, opts.train));
  });
  cmd->footer(
      "Neighbours are listed by distance, ties by the lower training index (OpenCV's BFMatcher order);\n"
      "-1 fills the places past the training set's size. Without a rule every query's nearest is kept;\n"
      "rules combine (--ratio, --margin, --max-distance, --cross-check): a match must pass each one given.\n"
      "A query with no second neighbour (one training descriptor) passes the ratio and margin tests.\n"
      "The GPU takes descriptors of up to 128 bytes (binary tensor cores on sm_80+, else CUDA cores);\n"
      "the CPU any width. Exit codes: 0 done, 1 bad data or options that do not fit the data, 2 usage errors.");
  return cmd;
}

int run_match(const match_options& opts) {
  return guarded("match", [&] { return match_body(opts); });
}

}  // namespace multireduce::cli
