// npy/input_file.hpp -- a .npy input of any size, read as the runtime asks for it.
//
// The header is read and checked first, before any data: a file that is not a .npy file (an
// endless pipe, /dev/zero) is refused at once. Then:
//  - a regular file is memory-mapped read-only, after checking that it is exactly as long as its
//    header says; the pages behind the piece being read are given back to the system, so a job
//    holds about one piece (input_piece_bytes) of the file in memory whatever its size;
//  - anything else (standard input as "-", a pipe, a FIFO, a device) is read as a stream: only
//    the bytes the header declares, a piece at a time.
// Big-endian data, and data not aligned to its element size, are converted a piece at a time.
// Files are opened read-only; nothing here writes.
//
// A regular file cut short while it is read (truncated, rewritten in place by another program) is
// an error, never a crash: reading a mapped page past a file's end raises SIGBUS, in whichever
// thread touches it (the CPU backend's threads, the CUDA driver copying a piece to the GPU). A
// SIGBUS handler, installed with the first mapping, maps zero pages over what the file lost and lets
// the read go on; the input_file then says "PATH: the input shrank while it was read" at its next
// read and at check_intact(), which the tool calls before any output made from the data leaves it.
// Each read also compares the file's size with the size it had when it was opened. A fault outside
// the mappings goes to the handler there was before (or the default action).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "npy/npy.hpp"
#include "runtime/runtime.hpp"

namespace multireduce::npy {

/// What a job holds of an input at a time: 64 MiB (the bandwidth of a sum over a memory-mapped
/// file levels off from 16 MiB pieces on; docs/results.md, "Big files").
inline constexpr std::int64_t input_piece_bytes = std::int64_t{64} << 20;

/// A file's identity: equal for two paths of one file (links, /dev/stdin and "-").
struct file_identity {
  std::uint64_t device = 0, inode = 0;
  bool operator==(const file_identity&) const = default;
};

class input_file final : public runtime::array_source {
 public:
  /// Opens `path` ("-": standard input) and reads its header. Throws error naming the path.
  static std::unique_ptr<input_file> open(const std::string& path);
  ~input_file() override;

  const header& info() const { return header_; }
  const std::string& path() const { return path_; }
  file_identity identity() const { return identity_; }
  /// Not a regular file: read front to back once, never mapped.
  bool is_stream() const { return map_ == nullptr && !regular_; }

  std::int64_t piece_elements() const override;
  /// A piece of the data. A regular file that lost data since it was opened throws error ("PATH:
  /// the input shrank while it was read") instead; a piece that was handed out already and loses
  /// its pages to such a cut reads as zeros from then on, and check_intact() says so.
  const void* read(std::int64_t first, std::int64_t n) override;
  /// A regular file: the same file opened again (the same file by identity, else error), read from
  /// `first` for `n` elements on its own mapping; nullptr for a stream.
  std::unique_ptr<runtime::array_source> open_part(std::int64_t first, std::int64_t n) const override;
  /// Throws error ("PATH: the input shrank while it was read ...") when a regular file is shorter
  /// than when it was opened, or a piece handed out met the cut (its lost pages read as zeros):
  /// call it after a job and before its outputs leave. Nothing for a stream (read errors say it).
  void check_intact() const;

  /// The whole array in memory, C order (Fortran-order data transposed), native byte order.
  array read_all();

 private:
  input_file(std::string path, int fd, bool own_fd, header h, bool regular, file_identity id);
  void map_regular(std::uint64_t file_size);
  const void* read_mapped(std::int64_t first, std::int64_t n);
  const void* read_stream(std::int64_t first, std::int64_t n);

  std::string path_;
  int fd_ = -1;
  bool own_fd_ = true;
  header header_;
  bool regular_ = false;
  file_identity identity_;
  std::size_t element_size_ = 1;
  std::uint64_t opened_bytes_ = 0;  // a regular file: its size when opened
  // A mapped regular file, listed for the SIGBUS handler in slot_ (-1: not listed, read as a stream).
  int slot_ = -1;
  const std::byte* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  std::size_t released_ = 0;  // bytes at the start of the mapping given back
  // A stream: elements [buffer_first_, buffer_first_ + buffer_count_) are in buffer_.
  std::vector<std::byte> buffer_;
  std::int64_t buffer_first_ = 0, buffer_count_ = 0;
  std::int64_t last_first_ = 0;
};

}  // namespace multireduce::npy
