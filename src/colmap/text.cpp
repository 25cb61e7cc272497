// COLMAP's text files: the raw matches matches_importer imports, and the image pair list.

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "colmap/colmap.hpp"
#include "colmap/detail.hpp"
#include "files/temporary_files.hpp"

namespace multireduce::colmap {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view whitespace = " \t\r\n\v\f";

}  // namespace

std::string matches_text(const collection_matches& m) {
  detail::check_collection(m);
  for (const std::string& name : m.names) {
    if (name.empty() || name.find_first_of(whitespace) != std::string::npos) {
      throw std::invalid_argument("colmap: the image name '" + name + "' " +
                                  (name.empty() ? "is empty" : "holds whitespace") +
                                  ": COLMAP's text files cannot name it (it reads names up to a space)");
    }
  }
  std::string text;
  for (std::size_t p = 0; p + 1 < m.offsets.size(); ++p) {
    text += m.names[m.pairs[2 * p]];
    text += ' ';
    text += m.names[m.pairs[2 * p + 1]];
    text += '\n';
    for (std::int64_t r = m.offsets[p]; r < m.offsets[p + 1]; ++r) {
      text += std::to_string(m.matches[3 * r]);
      text += ' ';
      text += std::to_string(m.matches[3 * r + 1]);
      text += '\n';
    }
    text += '\n';
  }
  return text;
}

void write_matches_text(const fs::path& file, const collection_matches& m) {
  const std::string text = matches_text(m);
  const std::string dir = file.parent_path().empty() ? std::string(".") : file.parent_path().string();
  const std::string temporary = files::temporary_name(dir, file.filename().string());
  // Removed on the way out (after the rename it is gone already) and should a signal end the process.
  struct remove_on_exit {
    const std::string& file;
    int listed = files::list_for_removal(file);
    ~remove_on_exit() {
      std::error_code ignored;
      fs::remove(file, ignored);
      files::unlist_for_removal(listed);
    }
  } cleanup{temporary};
  const auto fail = [&](const std::string& what) { throw std::runtime_error(file.string() + ": " + what); };
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) fail(std::string("cannot create it: ") + std::strerror(errno));
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) fail(std::string("cannot write it: ") + std::strerror(errno));
  }
  std::error_code ec;
  fs::rename(temporary, file, ec);
  if (ec) fail("cannot rename the temporary file to it: " + ec.message());
}

std::vector<std::array<std::int32_t, 2>> read_pair_list(const fs::path& file, std::span<const std::string> names,
                                                        std::int64_t* duplicates) {
  std::unordered_map<std::string_view, std::int32_t> index;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!index.emplace(names[i], static_cast<std::int32_t>(i)).second) {
      throw std::invalid_argument("colmap: the image name '" + names[i] + "' is given twice");
    }
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error(file.string() + ": cannot open it: " + std::strerror(errno));

  std::vector<std::array<std::int32_t, 2>> pairs;
  std::set<std::pair<std::int32_t, std::int32_t>> seen;
  std::int64_t dropped = 0;
  std::string line;
  for (std::int64_t number = 1; std::getline(in, line); ++number) {
    const auto bad = [&](const std::string& what) {
      throw std::invalid_argument(file.string() + ":" + std::to_string(number) + ": " + what);
    };
    std::vector<std::string_view> words;
    for (std::size_t at = line.find_first_not_of(whitespace); at != std::string::npos;
         at = line.find_first_not_of(whitespace, at)) {
      const std::size_t end = std::min(line.find_first_of(whitespace, at), line.size());
      words.emplace_back(line.data() + at, end - at);
      at = end;
    }
    if (words.empty() || words[0].front() == '#') continue;
    if (words.size() != 2) {
      bad("expected two image names, found " + std::to_string(words.size()) + " words");
    }
    std::array<std::int32_t, 2> pair{};
    for (int side = 0; side < 2; ++side) {
      const auto found = index.find(words[side]);
      if (found == index.end()) bad("the image '" + std::string(words[side]) + "' is not in the collection");
      pair[side] = found->second;
    }
    if (pair[0] == pair[1]) bad("pairs the image '" + std::string(words[0]) + "' with itself");
    if (pair[0] > pair[1]) std::swap(pair[0], pair[1]);
    if (seen.emplace(pair[0], pair[1]).second) {
      pairs.push_back(pair);
    } else {
      ++dropped;
    }
  }
  if (in.bad()) throw std::runtime_error(file.string() + ": cannot read it: " + std::strerror(errno));
  if (duplicates != nullptr) *duplicates = dropped;
  return pairs;
}

}  // namespace multireduce::colmap
