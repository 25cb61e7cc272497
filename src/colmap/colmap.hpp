// multireduce::colmap -- a collection's matches for COLMAP (structure from motion).
//
// Three ways in, as COLMAP reads them:
//  - write_database: the matches into a COLMAP database (SQLite), by image name; or a new database
//    with a camera, rig, frame and keypoints per image, as COLMAP's feature extractor makes one;
//  - write_matches_text: the text `colmap matches_importer --match_type raw` imports;
//  - read_pair_list: COLMAP's image pair list ("name1 name2" per line), to match only those pairs.
// The schema of a new database is the one COLMAP 4.2.1 writes (pycolmap 4.2.1: user_version
// 4020100; COLMAP's scene/database_sqlite.cc); matches are COLMAP's `matches` table: one row per
// pair, id pair_id(image_id1, image_id2), rows x 2 uint32 keypoint indices, the smaller image_id's
// index first. docs/colmap.md has the whole path from descriptors to COLMAP's mapper.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace multireduce::colmap {

/// The matches of a collection as match-all hands them out: `names` (one per image, in the
/// collection's order), pairs (P x 2 int32 row-major: image indices into names, first < second),
/// offsets (P + 1 int64: pair p's rows at [offsets[p], offsets[p+1])), matches (M x 3 int32
/// row-major: index of the keypoint in image `first`, index in image `second`, Hamming distance).
/// COLMAP keeps no distances: the third column is not written anywhere.
struct collection_matches {
  std::span<const std::string> names;
  std::span<const std::int32_t> pairs;
  std::span<const std::int64_t> offsets;
  std::span<const std::int32_t> matches;
  /// Each image's descriptor count, one per name (empty: not known). Where given, every image's
  /// keypoints -- in an existing database or handed to a new one -- must be exactly as many: the
  /// i-th keypoint is the i-th descriptor's, and matches index both.
  std::span<const std::int64_t> image_rows = {};
};

/// Keypoints of one image: rows x cols float32 row-major (x, y first; cols >= 2). COLMAP reads 2,
/// 4 or 6 columns (x, y, then its affine shape): those are written as they are; of any other
/// width, x and y alone.
struct keypoints {
  std::vector<float> values;
  std::int64_t rows = 0;
  int cols = 2;
};

/// What a new database gets besides the matches: every image is W x H pixels, one SIMPLE_RADIAL
/// camera per image (COLMAP's default prior focal length 1.2 * max(W, H), principal point at the
/// centre, k = 0; has_prior_focal_length false, as for an image without EXIF focal length), a rig
/// and a frame per image (as COLMAP's feature extractor writes them), and its keypoints.
struct new_database {
  int width = 0, height = 0;
  std::vector<keypoints> image_keypoints;  ///< one per name
};

/// A write into a COLMAP database that is done but not yet made: every check passed and every row
/// written, inside a transaction (an existing database) or into a temporary file beside it (a new
/// one). commit() makes it the database; destroyed without commit() it leaves the database as it
/// was (ROLLBACK, the rollback journal applied before the connection closes) or no file (the
/// temporary removed). A caller with other outputs writes them between stage_database and
/// commit(), so that either all of them change or none does.
class staged_database {
 public:
  staged_database(staged_database&&) noexcept;
  staged_database& operator=(staged_database&&) noexcept;
  ~staged_database();
  /// COMMIT, or the new file renamed into place (never over a file that appeared meanwhile).
  /// @throws std::runtime_error naming the database when it cannot be (a full disk, a lock): the
  ///   database is then as it was, or there is none.
  void commit();

  struct state;

 private:
  explicit staged_database(std::unique_ptr<state> s);
  std::unique_ptr<state> state_;
  friend staged_database stage_database(const std::filesystem::path&, const collection_matches&, const new_database*);
};

/// Writes the matches into a COLMAP database, up to the commit (staged_database::commit).
///
/// create == nullptr: an existing database (the usual case: images and keypoints already there),
/// images found by name; every name must be there, with a keypoints row that COLMAP can read
/// (rows >= 0, 2, 4 or 6 columns, rows x cols float32 of data) and, where `m.image_rows` is given,
/// as many keypoints as the image has descriptors. Each pair's row replaces that pair's matches if
/// it had any, and the pair's verified geometry (its `two_view_geometries` row, computed from the
/// matches replaced) is deleted, so that the next geometric verification verifies the new matches.
/// Everything is written in one transaction (BEGIN IMMEDIATE). create != nullptr: `db` must not
/// exist; a new database with COLMAP's schema, written to a hidden temporary file beside it
/// (".NAME.tmp-HOST-PID-N": removed should a signal end the process, and by the next new database
/// of that name should SIGKILL have; files/temporary_files.hpp). Image ids follow `names` (1, 2, ...).
///
/// @throws std::invalid_argument when `m` or `create` is malformed (sizes that disagree, an image
///   index out of range, first >= second, a pair listed twice, duplicate names, a name that is not
///   UTF-8, keypoints whose values are not rows x cols, a keypoint that is not finite, keypoint
///   counts that are not the image's descriptor counts).
/// @throws std::runtime_error naming `db` when it cannot be written: missing (existing) or
///   present (new), a directory, read-only or locked, not a COLMAP database (not SQLite, or a table
///   or column missing), names not in it (the message lists the first ones), an image without
///   keypoints or with keypoints that do not fit its descriptors (the message names the image and
///   both counts), a keypoint index out of range of that image's keypoint rows or negative.
staged_database stage_database(const std::filesystem::path& db, const collection_matches& m, const new_database* create);

/// stage_database, then commit(): a failure leaves the database as it was, or no file.
void write_database(const std::filesystem::path& db, const collection_matches& m, const new_database* create);

/// Writes the text `colmap matches_importer --match_type raw` reads: per pair a line
/// "name1 name2", then one "i j" line per match (i in name1, j in name2), then an empty line.
/// Written to a temporary file beside `file` and renamed over it (no half-written file).
/// @throws std::invalid_argument when `m` is malformed, or a name is empty or holds whitespace
///   (COLMAP splits the line at whitespace); std::runtime_error when the file cannot be written.
void write_matches_text(const std::filesystem::path& file, const collection_matches& m);

/// The text write_matches_text writes, for a caller that writes it itself (the tool's outputs);
/// the same checks and exceptions.
std::string matches_text(const collection_matches& m);

/// Reads COLMAP's image pair list (one "name1 name2" per line; blank lines and lines starting with
/// '#' skipped; leading and trailing whitespace ignored; names separated by spaces or tabs) into
/// pairs of indices into `names`, ordered first < second (swapped when the line has them the other
/// way), in the order of the file.
///
/// A pair listed twice (either order) is matched once, at its first line; `duplicates` (if not
/// null) gets how many lines were dropped so.
/// @throws std::invalid_argument naming the file and the line number ("pairs.txt:7: ...") for a
///   line naming an image not in `names`, a line with other than two names, or a pair of an image
///   with itself (COLMAP logs these and stops, or skips the line); also for duplicate names in
///   `names`. std::runtime_error when the file cannot be read.
std::vector<std::array<std::int32_t, 2>> read_pair_list(const std::filesystem::path& file,
                                                        std::span<const std::string> names,
                                                        std::int64_t* duplicates = nullptr);

/// pair_id as COLMAP computes it (util/types.h, ImagePairToPairId): 2147483647 * min(id1, id2) +
/// max(id1, id2); image ids are below 2147483647, so it fits in 63 bits.
constexpr std::int64_t pair_id(std::int64_t id1, std::int64_t id2) {
  constexpr std::int64_t max_images = 2147483647;
  return id1 < id2 ? max_images * id1 + id2 : max_images * id2 + id1;
}

}  // namespace multireduce::colmap
