// npy/input_file.cpp -- see input_file.hpp.
#include "npy/input_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

namespace multireduce::npy {
namespace {

[[noreturn]] void fail(const std::string& name, const std::string& what) { throw error(name + ": " + what); }

std::string errno_text(int e) { return std::strerror(e); }

/// Reads up to `n` bytes (fewer only at the end of the file). Throws error on a read error.
std::size_t read_up_to(int fd, std::byte* to, std::size_t n, const std::string& name) {
  std::size_t done = 0;
  while (done < n) {
    const ::ssize_t got = ::read(fd, to + done, n - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(name, "read error: " + errno_text(errno));
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  return done;
}

void swap_elements(std::byte* data, std::size_t bytes, std::size_t size) {
  if (size == 1) return;
  for (std::size_t i = 0; i + size <= bytes; i += size) std::reverse(data + i, data + i + size);
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

std::size_t page_size() {
  static const auto size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

// ---- files cut short under their mapping ----------------------------------------------------------
// The mappings of open input files, for the SIGBUS handler: a fault inside one means the file lost
// the page (it was cut short); the handler maps zero pages over everything past the file's new end,
// marks the mapping and returns, and the faulting read goes on with zeros. Slots are claimed and
// freed by input_files (any thread); the handler only reads them, and sets `shrank`.
struct mapping_slot {
  std::atomic<bool> claimed{false};
  std::atomic<std::uintptr_t> begin{0}, end{0};  // begin == 0: not listed
  std::atomic<int> fd{-1};
  std::atomic<bool> shrank{false};
};
constexpr int mapping_slots = 64;
mapping_slot mappings[mapping_slots];
std::uintptr_t fault_page_bytes = 4096;
struct sigaction previous_sigbus {};

void on_sigbus(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (mapping_slot& m : mappings) {
    const std::uintptr_t begin = m.begin.load(std::memory_order_acquire);
    const std::uintptr_t end = m.end.load(std::memory_order_acquire);
    if (begin == 0 || address < begin || address >= end) continue;
    // Zeros from the faulting page on, or from the first page wholly past the file's new end when
    // that comes before it (other threads fault there next); fstat and mmap are plain system calls.
    std::uintptr_t from = address / fault_page_bytes * fault_page_bytes;
    struct stat st {};
    if (::fstat(m.fd.load(std::memory_order_relaxed), &st) == 0 && st.st_size >= 0) {
      const auto size = static_cast<std::uintptr_t>(st.st_size);
      if (size < end - begin) {
        const std::uintptr_t cut = begin + (size + fault_page_bytes - 1) / fault_page_bytes * fault_page_bytes;
        from = std::min(from, cut);
      }
    }
    if (::mmap(reinterpret_cast<void*>(from), end - from, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) !=
        MAP_FAILED) {
      m.shrank.store(true, std::memory_order_release);
      errno = saved_errno;
      return;
    }
    break;
  }
  errno = saved_errno;
  // Not a mapping of ours (or it could not be mended): what would have happened without this handler.
  if ((previous_sigbus.sa_flags & SA_SIGINFO) != 0 && previous_sigbus.sa_sigaction != nullptr) {
    previous_sigbus.sa_sigaction(sig, info, context);
  } else if (previous_sigbus.sa_handler != SIG_DFL && previous_sigbus.sa_handler != SIG_IGN) {
    previous_sigbus.sa_handler(sig);
  } else {
    ::signal(sig, SIG_DFL);  // the fault happens again on return, now with the default action
  }
}

/// Installs the SIGBUS handler once; false when it could not be.
bool sigbus_handler_installed() {
  static const bool installed = [] {
    fault_page_bytes = page_size();
    struct sigaction action {};
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    return ::sigaction(SIGBUS, &action, &previous_sigbus) == 0;
  }();
  return installed;
}

/// Lists a mapping for the handler; -1 when every slot is taken.
int list_mapping(const std::byte* map, std::size_t bytes, int fd) {
  for (int i = 0; i < mapping_slots; ++i) {
    mapping_slot& m = mappings[i];
    if (m.claimed.exchange(true, std::memory_order_acq_rel)) continue;
    m.shrank.store(false, std::memory_order_relaxed);
    m.fd.store(fd, std::memory_order_relaxed);
    m.end.store(reinterpret_cast<std::uintptr_t>(map) + bytes, std::memory_order_release);
    m.begin.store(reinterpret_cast<std::uintptr_t>(map), std::memory_order_release);
    return i;
  }
  return -1;
}

void unlist_mapping(int slot) {
  mapping_slot& m = mappings[slot];
  m.begin.store(0, std::memory_order_release);
  m.end.store(0, std::memory_order_release);
  m.fd.store(-1, std::memory_order_relaxed);
  m.claimed.store(false, std::memory_order_release);
}

}  // namespace

std::unique_ptr<input_file> input_file::open(const std::string& path) {
  const bool standard_input = path == "-";
  const std::string name = standard_input ? "standard input" : path;
  int fd = 0;
  if (!standard_input) {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int e = errno;
      if (e == ENOENT) fail(name, "no such file");
      fail(name, "cannot open: " + errno_text(e));
    }
  }
  struct closer {
    int fd;
    bool own;
    ~closer() {
      if (own && fd >= 0) ::close(fd);
    }
  } guard{fd, !standard_input};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(name, "cannot stat: " + errno_text(errno));
  if (S_ISDIR(st.st_mode)) fail(name, "is a directory, not a .npy file");

  // The header: its fixed prefix, then exactly the length it gives.
  std::vector<std::byte> bytes(header_prefix_bytes);
  bytes.resize(read_up_to(fd, bytes.data(), bytes.size(), name));
  const std::size_t total = header_size(bytes, name);
  const std::size_t have = bytes.size();
  if (total > have) {
    bytes.resize(total);
    bytes.resize(have + read_up_to(fd, bytes.data() + have, total - have, name));
  }
  header h = parse_header(bytes, name);  // a short read reports the truncated header

  const bool regular = S_ISREG(st.st_mode);
  auto file = std::unique_ptr<input_file>(
      new input_file(name, fd, !standard_input, std::move(h), regular,
                     {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)}));
  guard.own = false;  // the input_file closes it now
  if (regular) file->map_regular(static_cast<std::uint64_t>(st.st_size));
  return file;
}

namespace {

/// Elements [first, first + n) of a file opened again: a part that a job on several devices reads
/// on a thread of its own.
class file_part final : public runtime::array_source {
 public:
  file_part(std::unique_ptr<input_file> file, std::int64_t first, std::int64_t n)
      : array_source(file->type(), n), file_(std::move(file)), first_(first) {}
  std::int64_t piece_elements() const override { return file_->piece_elements(); }
  const void* read(std::int64_t first, std::int64_t n) override {
    if (first < 0 || n < 0 || first > count() || n > count() - first)
      throw std::logic_error("npy::input_file: a part read past its end");
    return file_->read(first_ + first, n);
  }

 private:
  std::unique_ptr<input_file> file_;
  std::int64_t first_;
};

}  // namespace

std::unique_ptr<runtime::array_source> input_file::open_part(std::int64_t first, std::int64_t n) const {
  if (!regular_ || !own_fd_) return nullptr;  // a pipe, or standard input (no path to open again)
  if (first < 0 || n < 0 || first > count() || n > count() - first)
    throw std::logic_error("npy::input_file: a part past the end of the array");
  std::unique_ptr<input_file> again = open(path_);
  if (again->identity() != identity_ || again->count() != count() || again->type() != type())
    fail(path_, "the file was replaced while it was read");
  return std::make_unique<file_part>(std::move(again), first, n);
}

input_file::input_file(std::string path, int fd, bool own_fd, header h, bool regular, file_identity id)
    : array_source(h.type, h.count()),
      path_(std::move(path)),
      fd_(fd),
      own_fd_(own_fd),
      header_(std::move(h)),
      regular_(regular),
      identity_(id),
      element_size_(size_of(header_.type)) {}

input_file::~input_file() {
  if (slot_ >= 0) unlist_mapping(slot_);
  if (map_ != nullptr) ::munmap(const_cast<std::byte*>(map_), map_bytes_);
  if (own_fd_ && fd_ >= 0) ::close(fd_);
}

void input_file::map_regular(std::uint64_t file_size) {
  const auto needed = static_cast<std::uint64_t>(header_.data_bytes());
  const std::uint64_t available = file_size - std::min<std::uint64_t>(file_size, header_.data_offset);
  const std::string what = "shape " + shape_text(header_.shape) + " of " + std::string(name_of(header_.type));
  if (needed > available)
    fail(path_, "truncated data: " + what + " needs " + std::to_string(needed) + " bytes, only " +
                    std::to_string(available) + " follow the header");
  if (needed < available)
    fail(path_, std::to_string(available - needed) + " unexpected bytes after the data (" + what + " needs " +
                    std::to_string(needed) + " bytes)");
  opened_bytes_ = file_size;
  if (needed == 0) return;
  // Without the handler (or a free slot for it) a cut in the file would kill the process: read the
  // file as a stream instead (it is positioned at the data), where a cut is a short read.
  if (!sigbus_handler_installed()) return;
  map_bytes_ = static_cast<std::size_t>(file_size);
  void* p = ::mmap(nullptr, map_bytes_, PROT_READ, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) fail(path_, "cannot map the file: " + errno_text(errno));
  slot_ = list_mapping(static_cast<const std::byte*>(p), map_bytes_, fd_);
  if (slot_ < 0) {
    ::munmap(p, map_bytes_);
    map_bytes_ = 0;
    return;
  }
  map_ = static_cast<const std::byte*>(p);
  ::madvise(p, map_bytes_, MADV_SEQUENTIAL);
}

void input_file::check_intact() const {
  if (!regular_) return;
  const bool faulted = slot_ >= 0 && mappings[slot_].shrank.load(std::memory_order_acquire);
  struct stat st {};
  const bool stat_ok = ::fstat(fd_, &st) == 0;
  const auto now = stat_ok ? static_cast<std::uint64_t>(st.st_size) : opened_bytes_;
  if (!faulted && now >= opened_bytes_) return;
  fail(path_, "the input shrank while it was read (" +
                  (now < opened_bytes_ ? std::to_string(now) + " bytes now, " : std::string("cut short, ")) +
                  std::to_string(opened_bytes_) + " when it was opened)");
}

std::int64_t input_file::piece_elements() const {
  return std::max<std::int64_t>(1, input_piece_bytes / static_cast<std::int64_t>(element_size_));
}

const void* input_file::read(std::int64_t first, std::int64_t n) {
  if (first < last_first_ || n < 0 || first > count() || n > count() - first)
    throw std::logic_error("npy::input_file: pieces must be read front to back within the array");
  last_first_ = first;
  if (n == 0) return buffer_.data();
  return map_ != nullptr ? read_mapped(first, n) : read_stream(first, n);
}

const void* input_file::read_mapped(std::int64_t first, std::int64_t n) {
  const std::size_t page = page_size();
  const std::size_t begin = header_.data_offset + std::size_t(first) * element_size_;
  const std::size_t end = begin + std::size_t(n) * element_size_;
  // Give back the pages before this piece (they are the file's: dropping them costs nothing but a
  // fault should they be read again, which they are not), then map this piece's pages in one call.
  const std::size_t keep_from = begin / page * page;
  if (keep_from > released_) {
    ::madvise(const_cast<std::byte*>(map_) + released_, keep_from - released_, MADV_DONTNEED);
    released_ = keep_from;
  }
  check_intact();  // a file cut short since it was opened (one fstat a piece)
#ifdef MADV_POPULATE_READ
  if (::madvise(const_cast<std::byte*>(map_) + keep_from, end - keep_from, MADV_POPULATE_READ) != 0) {
    if (errno == EFAULT) check_intact();  // the pages are past the file's end: cut meanwhile
    ::madvise(const_cast<std::byte*>(map_) + keep_from, end - keep_from, MADV_WILLNEED);
  }
#else
  ::madvise(const_cast<std::byte*>(map_) + keep_from, end - keep_from, MADV_WILLNEED);
#endif
  const std::byte* p = map_ + begin;
  if (!header_.swap && reinterpret_cast<std::uintptr_t>(p) % element_size_ == 0) return p;
  buffer_.assign(p, p + (end - begin));  // converted copies: the other byte order, or misaligned
  check_intact();                        // the copy is whole: the file was not cut while it was made
  if (header_.swap) swap_elements(buffer_.data(), buffer_.size(), element_size_);
  return buffer_.data();
}

const void* input_file::read_stream(std::int64_t first, std::int64_t n) {
  // Keep what is at or after `first` (skipping what lies before it unread), then read up to
  // first + n: never a byte past the data.
  const std::int64_t drop = std::min(first - buffer_first_, buffer_count_);
  if (drop > 0) {
    std::memmove(buffer_.data(), buffer_.data() + std::size_t(drop) * element_size_,
                 std::size_t(buffer_count_ - drop) * element_size_);
    buffer_count_ -= drop;
  }
  for (std::int64_t skip = first - (buffer_first_ + drop); skip > 0;) {
    std::byte scratch[1 << 16];
    const std::int64_t step = std::min<std::int64_t>(skip, std::int64_t(sizeof scratch / element_size_));
    const std::size_t want = std::size_t(step) * element_size_;
    if (read_up_to(fd_, scratch, want, path_) < want) {
      check_intact();  // a regular file (not mapped) that was cut short
      fail(path_, "truncated data: the input ended before element " + std::to_string(first));
    }
    skip -= step;
  }
  buffer_first_ = first;
  const std::int64_t missing = first + n - (buffer_first_ + buffer_count_);
  if (missing > 0) {
    buffer_.resize(std::size_t(n) * element_size_);
    std::byte* to = buffer_.data() + std::size_t(buffer_count_) * element_size_;
    const std::size_t want = std::size_t(missing) * element_size_;
    const std::size_t got = read_up_to(fd_, to, want, path_);
    if (got < want) {
      check_intact();  // a regular file (not mapped) that was cut short
      const std::uint64_t read_so_far = std::uint64_t(first + buffer_count_) * element_size_ + got;
      fail(path_, "truncated data: shape " + shape_text(header_.shape) + " of " + std::string(name_of(header_.type)) +
                      " needs " + std::to_string(header_.data_bytes()) + " bytes, the input ended after " +
                      std::to_string(read_so_far));
    }
    if (header_.swap) swap_elements(to, want, element_size_);
    buffer_count_ += missing;
  }
  return buffer_.data();
}

array input_file::read_all() {
  array a;
  a.type = header_.type;
  a.shape = header_.shape;
  const std::int64_t n = count();
  const auto* p = static_cast<const std::byte*>(read(0, n));
  a.data.assign(p, p + std::size_t(n) * element_size_);
  check_intact();  // the copy is whole: the file was not cut while it was made
  if (header_.fortran_order) a.data = fortran_to_c_order(a.data, a.shape, element_size_);
  return a;
}

array read(const std::filesystem::path& path) { return input_file::open(path.string())->read_all(); }

}  // namespace multireduce::npy
