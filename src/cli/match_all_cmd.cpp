// match_all_cmd.cpp -- `multireduce match-all` (see match_all_cmd.hpp).
#include "match_all_cmd.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <multireduce/match/collection.hpp>

#include "colmap/colmap.hpp"
#include "command_common.hpp"
#include "files/temporary_files.hpp"
#include "match_cmd.hpp"
#include "npy/npy.hpp"
#include "npy/npz.hpp"
#include "output_file.hpp"
#include "progress.hpp"
#include "runtime/runtime.hpp"

namespace multireduce::cli {
namespace {

namespace fs = std::filesystem;

/// The images of a collection folder: NAME.npy descriptor files (not NAME.xy.npy), sorted by name.
struct collection_folder {
  std::vector<std::string> names;
  std::vector<fs::path> descriptors, keypoints;  // keypoints: "" where the image has none
};

/// Refuses a NAME.npy or NAME.xy.npy of the folder that is not a regular file (through its links):
/// a FIFO or a device would hang or read without end, a dangling link names nothing -- quietly
/// leaving the image out would match another collection than the folder shows.
void check_collection_file(const fs::path& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) {
    if (fs::is_symlink(fs::symlink_status(path, ec)))
      throw command_error(fmt::format("{}: a symbolic link to nothing ({} does not exist): remove it or make it "
                                      "name the file", path.string(), fs::read_symlink(path, ec).string()));
    throw command_error(fmt::format("{}: cannot be read: {}", path.string(), ec ? ec.message() : "it vanished"));
  }
  if (!fs::is_regular_file(st)) {
    const char* what = fs::is_directory(st) ? "a directory" : fs::is_fifo(st) ? "a FIFO" : fs::is_socket(st) ? "a socket"
                       : fs::is_character_file(st) || fs::is_block_file(st) ? "a device" : "not a regular file";
    throw command_error(fmt::format("{}: {}, not a .npy file: a collection folder holds one regular file per image "
                                    "(move it out of the folder)", path.string(), what));
  }
}

collection_folder list_folder(const std::string& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    throw command_error(fmt::format("{}: not a folder (match-all takes a folder of NAME.npy descriptor files)", folder));
  collection_folder c;
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) {
    const std::string file = entry.path().filename().string();
    if (!file.ends_with(".npy") || file.size() == 4) continue;
    check_collection_file(entry.path());
    if (file.ends_with(".xy.npy")) continue;
    names.push_back(file.substr(0, file.size() - 4));
  }
  std::sort(names.begin(), names.end());
  if (names.empty())
    throw command_error(fmt::format("{}: no descriptor files (NAME.npy, uint8 rows) in the folder", folder));
  for (const auto& name : names) {
    c.names.push_back(name);
    c.descriptors.push_back(fs::path(folder) / (name + ".npy"));
    const fs::path xy = fs::path(folder) / (name + ".xy.npy");
    c.keypoints.push_back(fs::exists(fs::symlink_status(xy, ec)) ? xy : fs::path());
  }
  return c;
}

/// A field of the CSV table as RFC 4180 writes it: quoted (quotes doubled) when it holds a comma,
/// a quote or a line break.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + '"';
}

/// Every image's rows in one array (all of one width), with the offsets of each image.
struct collection_rows {
  std::vector<std::uint8_t> rows;
  std::vector<std::int64_t> offsets{0};
  int bytes = 0;
};

collection_rows read_collection(const collection_folder& folder) {
  collection_rows c;
  std::string first_path;
  for (const auto& path : folder.descriptors) {
    const npy::array a = read_descriptors(path.string());
    if (c.bytes == 0) c.bytes = static_cast<int>(a.shape[1]), first_path = path.string();
    if (a.shape[1] != c.bytes)
      throw command_error(fmt::format("mixed descriptor widths: {} has {} bytes, {} has {}", first_path, c.bytes,
                                      path.string(), a.shape[1]));
    if (a.shape[0] > INT32_MAX) throw command_error(fmt::format("{}: more than 2^31-1 descriptors", path.string()));
    const auto values = a.values<std::uint8_t>();
    c.rows.insert(c.rows.end(), values.begin(), values.end());
    c.offsets.push_back(c.offsets.back() + a.shape[0]);
  }
  return c;
}

/// An image's keypoints: float32 (rows, >= 2).
colmap::keypoints read_keypoints(const fs::path& path, std::int64_t rows) {
  const npy::array a = npy::read(path);
  if (a.type != npy::dtype::float32 || a.shape.size() != 2 || a.shape[1] < 2 || a.shape[0] != rows)
    throw command_error(fmt::format("{}: keypoints must be a float32 array of shape ({}, 2 or more), got {} of shape {}",
                                    path.string(), rows, npy::name_of(a.type), shape_string(a.shape)));
  colmap::keypoints k;
  const auto values = a.values<float>();
  k.values.assign(values.begin(), values.end());
  k.rows = a.shape[0];
  k.cols = static_cast<int>(a.shape[1]);
  return k;
}

/// How many kept matches land within `px` of where the homographies put them: image n's pixel is
/// H[n] applied to the reference's, so pair (i, j) maps by H[j] inverse(H[i]).
std::int64_t count_collection_inliers(const std::vector<double>& h, const std::vector<colmap::keypoints>& xy,
                           std::span<const image_pair> pairs, const collection_matches& found, double px) {
  auto at = [&](std::int64_t n) { return h.data() + 9 * n; };
  std::int64_t inliers = 0;
  for (std::size_t p = 0; p < pairs.size(); ++p) {
    const double* a = at(pairs[p].first);
    const double* b = at(pairs[p].second);
    // inverse(A) by the adjugate, then M = B inverse(A).
    const double inv[9] = {a[4] * a[8] - a[5] * a[7], a[2] * a[7] - a[1] * a[8], a[1] * a[5] - a[2] * a[4],
                           a[5] * a[6] - a[3] * a[8], a[0] * a[8] - a[2] * a[6], a[2] * a[3] - a[0] * a[5],
                           a[3] * a[7] - a[4] * a[6], a[1] * a[6] - a[0] * a[7], a[0] * a[4] - a[1] * a[3]};
    double m[9];
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) m[3 * r + c] = b[3 * r] * inv[c] + b[3 * r + 1] * inv[3 + c] + b[3 * r + 2] * inv[6 + c];
    const colmap::keypoints &from = xy[std::size_t(pairs[p].first)], &to = xy[std::size_t(pairs[p].second)];
    for (const match& k : found.pair(std::int64_t(p))) {
      const double x = from.values[std::size_t(k.query) * from.cols], y = from.values[std::size_t(k.query) * from.cols + 1];
      const double w = m[6] * x + m[7] * y + m[8];
      const double dx = (m[0] * x + m[1] * y + m[2]) / w - to.values[std::size_t(k.train) * to.cols];
      const double dy = (m[3] * x + m[4] * y + m[5]) / w - to.values[std::size_t(k.train) * to.cols + 1];
      inliers += dx * dx + dy * dy <= px * px;
    }
  }
  return inliers;
}

/// The .npz: names, pairs (P, 2) int32, offsets (P + 1) int64, matches (M, 3) int32.
std::vector<std::byte> collection_npz(const std::vector<std::string>& names, const std::vector<std::int32_t>& pair_rows,
                                      const collection_matches& found) {
  std::vector<std::byte> name_storage;
  auto as_bytes = [](const auto& v) { return std::as_bytes(std::span(v.data(), v.size())); };
  static_assert(sizeof(match) == 3 * sizeof(std::int32_t));
  const std::int64_t pairs = std::int64_t(found.offsets.size()) - 1, kept = std::int64_t(found.matches.size());
  const npy::npz_entry entries[] = {
      npy::string_entry("names", names, name_storage),
      {"pairs", "<i4", {pairs, 2}, as_bytes(pair_rows)},
      {"offsets", "<i8", {pairs + 1}, as_bytes(found.offsets)},
      {"matches", "<i4", {kept, 3}, as_bytes(found.matches)},
  };
  return npy::encode_npz(entries);
}

int match_all_body(const match_all_options& o) {
  const command_clock clock;
  match_rule rule;
  if (o.ratio) rule.ratio = *o.ratio;
  if (o.margin) rule.margin = *o.margin;
  if (o.max_distance) rule.max_distance = *o.max_distance;
  rule.cross_check = o.cross_check;
  check_match_rule(rule);
  const int k_search = (rule.ratio > 0 || rule.margin >= 0) ? std::max(o.k, 2) : o.k;
  const bool new_database = !o.image_size.empty();
  if (new_database && o.colmap_db.empty()) throw command_error("--image-size goes with --colmap-db (a new database)");

  // Every output is planned before anything is read or computed, and checked against every input
  // -- the folder's descriptor and keypoint files among them -- by what the paths name (device and
  // inode: links and hard links included). The database is an output too: it must not be an input
  // or another output, and it is checked for what it must be (a file that exists, or a new name).
  std::optional<output_file> npz, text, database;
  if (!o.output.empty()) npz.emplace("-o", o.output);
  if (!o.colmap_txt.empty()) text.emplace("--colmap-txt", o.colmap_txt);
  if (!o.colmap_db.empty()) {
    database.emplace("--colmap-db", o.colmap_db);
    if (database->direct())
      throw command_error(fmt::format("--colmap-db {}: not a regular file (a COLMAP database is an SQLite file)",
                                      o.colmap_db));
    const bool exists = database->identity() != nullptr;
    if (new_database && exists)
      throw command_error(fmt::format("--colmap-db {}: exists already (--image-size makes a new database; without it "
                                      "the matches go into the existing one)", o.colmap_db));
    if (!new_database && !exists)
      throw command_error(fmt::format("--colmap-db {}: no such database (give --image-size W H to make a new one)",
                                      o.colmap_db));
  }
  std::vector<const output_file*> outputs;
  for (const auto* f : {&npz, &text, &database})
    if (*f) outputs.push_back(&**f);

  const collection_folder folder = list_folder(o.folder);
  std::vector<named_input> inputs = {{"--pairs", o.pairs_file, nullptr}, {"--homographies", o.homographies, nullptr}};
  for (std::size_t n = 0; n < folder.names.size(); ++n) {
    inputs.push_back({"the descriptors of image " + folder.names[n], folder.descriptors[n].string(), nullptr});
    if (!folder.keypoints[n].empty())
      inputs.push_back({"the keypoints of image " + folder.names[n], folder.keypoints[n].string(), nullptr});
  }
  check_outputs(outputs, inputs);
  // A new NAME.npy in the folder would be read as an image's descriptors by the next run.
  for (const output_file* out : outputs)
    if (out->lands_in(o.folder) && out->file_name().ends_with(".npy"))
      throw command_error(fmt::format("{} {}: a .npy file in the collection folder would be taken for an image's "
                                      "descriptors by the next run: write it elsewhere", out->flag(), out->path()));

  const collection_rows rows = read_collection(folder);
  const std::int64_t images = std::int64_t(folder.names.size());
  std::vector<image_pair> pairs;
  std::int64_t duplicates = 0;
  if (!o.pairs_file.empty()) {
    for (const auto& [i, j] : colmap::read_pair_list(o.pairs_file, folder.names, &duplicates)) pairs.push_back({i, j});
  } else {
    pairs = o.sequential ? sequential_pairs(images, *o.sequential) : all_pairs(images);
  }
  std::vector<colmap::keypoints> keypoints;
  const bool geometry = !o.homographies.empty();
  if (new_database || geometry) {
    for (std::size_t n = 0; n < folder.names.size(); ++n) {
      if (folder.keypoints[n].empty())
        throw command_error(fmt::format("{}: no keypoints ({}.xy.npy) for image {} ({} needs them)", o.folder,
                                        folder.names[n], folder.names[n], new_database ? "a new database" : "--homographies"));
      keypoints.push_back(read_keypoints(folder.keypoints[n], rows.offsets[n + 1] - rows.offsets[n]));
    }
  }
  std::vector<double> h;
  if (geometry) {
    const npy::array a = npy::read(o.homographies);
    if (a.type != npy::dtype::float64 || a.shape != std::vector<std::int64_t>{images, 3, 3})
      throw command_error(fmt::format("{}: the homographies must be float64 of shape ({}, 3, 3), got {} of shape {}",
                                      o.homographies, images, npy::name_of(a.type), shape_string(a.shape)));
    const auto v = a.values<double>();
    h.assign(v.begin(), v.end());
  }

  runtime::collection_job job;
  job.collection = descriptor_collection{rows.rows.data(), rows.offsets, rows.bytes};
  job.pairs = pairs;
  job.k = k_search;
  job.rule = rule;
  job.memory_budget = std::size_t(o.gpu_memory_mib) << 20;
  runtime::execution exec = o.backend.execution();
  progress_bar bar("multireduce match-all", "comparisons");
  std::int64_t pairs_done = 0;
  if (bar.enabled())  // (a terminal: the pairs' count is formatted only where the bar is drawn)
    exec.progress = [&](std::int64_t done, std::int64_t total) {
      bar.update(done, total, fmt::format("{}/{} pairs", ++pairs_done, pairs.size()));
    };
  collection_collector collector(pairs.size());
  const runtime::report how = runtime::match_collection(job, collector.callback(), exec);
  bar.finish();
  const collection_matches found = collector.take();

  // All or nothing: everything that can fail on bad input happens before the first output is
  // written. The database is staged (its transaction holds every row; a new one is complete in its
  // temporary file), the files are written and flushed to their temporaries (special files and
  // standard output directly), then the database is committed, and only then are the files renamed
  // over their paths: a failure anywhere before leaves every output as it was.
  std::vector<std::int32_t> pair_rows;
  for (const image_pair& p : pairs) pair_rows.push_back(p.first), pair_rows.push_back(p.second);
  const std::int64_t inliers = geometry ? count_collection_inliers(h, keypoints, pairs, found, o.inlier_px) : 0;
  std::vector<std::int64_t> image_rows(folder.names.size());
  for (std::size_t n = 0; n < image_rows.size(); ++n) image_rows[n] = rows.offsets[n + 1] - rows.offsets[n];
  const colmap::collection_matches for_colmap{
      folder.names, pair_rows, found.offsets,
      std::span(reinterpret_cast<const std::int32_t*>(found.matches.data()), found.matches.size() * 3), image_rows};
  std::vector<std::pair<output_file*, std::vector<std::byte>>> writes;
  if (npz) writes.emplace_back(&*npz, collection_npz(folder.names, pair_rows, found));
  if (text) {
    const std::string t = colmap::matches_text(for_colmap);
    const auto* b = reinterpret_cast<const std::byte*>(t.data());
    writes.emplace_back(&*text, std::vector<std::byte>(b, b + t.size()));
  }
  // A signal from here on waits for a safe point -- a pair of the database, the commit, the end --
  // where what was staged is undone (or all of it is done), then ends the process.
  const files::signal_deferral defer;
  std::optional<colmap::staged_database> staged;
  if (database) {
    colmap::new_database create;
    if (new_database) create = {o.image_size[0], o.image_size[1], std::move(keypoints)};
    staged.emplace(colmap::stage_database(o.colmap_db, for_colmap, new_database ? &create : nullptr));
  }
  for (auto& [file, data] : writes) file->write(data.data(), data.size());
  for (auto& [file, data] : writes) file->finish();
  if (const int sig = files::deferred_signal(); sig != 0)
    throw command_error(fmt::format("stopped by signal {} before any output was changed", sig));
  if (staged) staged->commit();
  for (auto& [file, data] : writes) file->commit();
  if (!npz && !text && !database) {
    std::string table = "image1,image2,matches\n";
    for (std::size_t p = 0; p < pairs.size(); ++p)
      table += fmt::format("{},{},{}\n", csv_field(folder.names[std::size_t(pairs[p].first)]),
                           csv_field(folder.names[std::size_t(pairs[p].second)]), found.offsets[p + 1] - found.offsets[p]);
    print_stdout(table);
    flush_stdout();
  }

  double comparisons = 0;
  for (const image_pair& p : pairs)
    comparisons += double(rows.offsets[p.first + 1] - rows.offsets[p.first]) *
                   double(rows.offsets[p.second + 1] - rows.offsets[p.second]);
  fmt::print(stderr, "multireduce match-all: {} matches kept in {} pairs of {} images ({} descriptors of {} bits){}\n",
             found.matches.size(), pairs.size(), images, rows.offsets.back(), rows.bytes * 8,
             duplicates > 0 ? fmt::format("; {} repeated pairs in {} matched once", duplicates, o.pairs_file) : "");
  if (geometry)
    fmt::print(stderr, "multireduce match-all: {} of them ({:.1f}%) agree with the homographies (within {:g} px)\n",
               inliers, found.matches.empty() ? 0.0 : 100.0 * double(inliers) / double(found.matches.size()),
               o.inlier_px);
  if (o.backend.timing) {
    const std::string why = how.passed_over.empty() ? "" : "; " + how.passed_over;
    fmt::print(stderr, "multireduce match-all: backend {} ({}{}): matching {:.3f} s, {:.3g} comparisons/s{}\n",
               how.backend, runtime::describe_device(how), why, how.seconds,
               how.seconds > 0 ? comparisons * (rule.cross_check ? 2 : 1) / how.seconds : 0.0,
               rule.cross_check ? " (both directions)" : "");
    fmt::print(stderr, "multireduce match-all: {:.3f} s in all (reading, matching, writing)\n", clock.seconds());
  }
  return 0;
}

}  // namespace

/// The largest image side --image-size takes: COLMAP keeps sizes as int, and no camera is near it.
constexpr std::int64_t max_image_side = 1 << 20;

CLI::App* add_match_all_command(CLI::App& app, match_all_options& opts) {
  auto* cmd = app.add_subcommand(
      "match-all", "match every pair of a collection of images (a folder of NAME.npy descriptor files)");
  cmd->add_option("folder", opts.folder,
                  "the collection: one NAME.npy per image (uint8, N x bytes), optionally NAME.xy.npy (float32 "
                  "keypoints, N x 2 or more); images in sorted name order")
      ->required();
  constexpr auto max_int = std::numeric_limits<int>::max();
  auto* pairs = cmd->add_option("--pairs", opts.pairs_file,
                                "match only the pairs of this COLMAP pair list (\"name1 name2\" per line, # comments)");
  auto* sequential = add_integer(
      *cmd, "--sequential", [&opts](std::int64_t v) { opts.sequential = v; },
      "match each image with the next W images (in name order) instead of every pair", 1, max_int, "a window");
  pairs->excludes(sequential);
  add_match_rule_options(*cmd, opts.k, opts.ratio, opts.margin, opts.max_distance, opts.cross_check,
                         "neighbours searched per query (default 2)");
  cmd->add_option("-o,--output", opts.output,
                  "write names, pairs, offsets and matches to this .npz (written whole, atomically)");
  cmd->add_option("--colmap-db", opts.colmap_db,
                  "write the matches into this COLMAP database (images found by name; one transaction)");
  cmd->add_option("--image-size", opts.image_size,
                  "W H: make --colmap-db a new database: one SIMPLE_RADIAL camera per image, the images, and the "
                  "keypoints from NAME.xy.npy")
      ->expected(2)
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            std::int64_t v = 0;
            const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
            if (ec != std::errc() || end != value.data() + value.size() || v < 1 || v > max_image_side)
              return fmt::format("{} is not an image side in pixels (a whole number from 1 to {})", value,
                                 max_image_side);
            return {};
          },
          "PIXELS"));
  cmd->add_option("--colmap-txt", opts.colmap_txt,
                  "write the matches as the text `colmap matches_importer --match_type raw` reads");
  auto* homographies = cmd->add_option(
      "--homographies", opts.homographies,
      "an (N, 3, 3) float64 .npy, image n's pixel = H[n] x reference pixel: print how many kept matches agree");
  add_number(
      *cmd, "--inlier-px", [&opts](double v) { opts.inlier_px = v; }, "pixel tolerance of the homography check (3)",
      0, 1e9, true, "a tolerance in pixels")
      ->needs(homographies);
  add_integer(
      *cmd, "--gpu-memory", [&opts](std::int64_t v) { opts.gpu_memory_mib = v; },
      "MiB of GPU memory to use (default: most of the free memory); a collection larger than that is matched in "
      "image blocks",
      1, std::int64_t(1) << 30, "a size in MiB");
  add_backend_options(*cmd, opts.backend,
                      "print the backend, the matching time, comparisons per second and the whole command's time");
  cmd->footer(
      "Pair (i, j), i < j in name order, is matched as `match i.npy j.npy` would: image i's descriptors are the\n"
      "queries. Without an output option, prints each pair's match count as CSV. A pair listed twice in --pairs\n"
      "(either order) is matched once. COLMAP's mapper reads verified matches: after --colmap-db run\n"
      "`colmap geometric_verifier` (or matches_importer with --colmap-txt); docs/colmap.md says more.\n"
      "No output may be an input; the outputs change together or not at all (the database is committed\n"
      "last, the files renamed after it), and a signal while they are written undoes what was staged.\n"
      "Exit codes: 0 done, 1 bad data or options that do not fit the data, 2 usage errors.");
  return cmd;
}

int run_match_all(const match_all_options& opts) {
  return guarded("match-all", [&] { return match_all_body(opts); });
}

}  // namespace multireduce::cli
