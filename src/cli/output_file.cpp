// output_file.cpp -- see output_file.hpp.
#include "output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>

#include "command_common.hpp"
#include "files/temporary_files.hpp"

namespace multireduce::cli {
namespace {

namespace fs = std::filesystem;
using files::list_for_removal;
using files::temporary_name;
using files::unlist_for_removal;

std::string errno_text(int e) { return std::strerror(e); }

npy::file_identity identity_of(const struct stat& st) {
  return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

bool is_null_device(const struct stat& st) { return S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3); }

/// The descriptor a path names: "-", /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N.
std::optional<int> descriptor_named(const std::string& path) {
  if (path == "-" || path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  for (const std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (!path.starts_with(prefix) || path.size() == prefix.size()) continue;
    int fd = -1;
    const char* first = path.data() + prefix.size();
    const auto [end, ec] = std::from_chars(first, path.data() + path.size(), fd);
    if (ec == std::errc() && end == path.data() + path.size()) return fd;
  }
  return std::nullopt;
}

/// The directory a file of `path` lives in ("." for a bare name).
std::string directory_of(const std::string& path) {
  const std::string dir = fs::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

/// The path under which the kernel names an open descriptor (linkat names an O_TMPFILE file by it).
std::string descriptor_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

}  // namespace

output_file::output_file(std::string flag, std::string path) : flag_(std::move(flag)), path_(std::move(path)) {
  const auto fail = [&](const std::string& why) { throw command_error(flag_ + " " + path_ + ": " + why); };
  if (path_.empty()) throw command_error(flag_ + ": no file name given");
  if (const auto fd = descriptor_named(path_)) {
    kind_ = kind::descriptor;
    fd_ = *fd;
    struct stat st {};
    if (::fstat(fd_, &st) != 0) fail("descriptor " + std::to_string(fd_) + " is not open");
    const int flags = ::fcntl(fd_, F_GETFL);
    if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) fail("descriptor " + std::to_string(fd_) + " is not open for writing");
    identity_ = identity_of(st);
    has_identity_ = true;
    null_device_ = is_null_device(st);
    character_device_ = S_ISCHR(st.st_mode);
    return;
  }
  // Follow symbolic links to the file they name (up to 40, as the kernel does).
  std::string target = path_;
  struct stat st {};
  bool exists = false;
  for (int hops = 0;; ++hops) {
    if (hops > 40) fail("too many levels of symbolic links");
    if (::lstat(target.c_str(), &st) != 0) {
      if (errno == ENOENT) break;
      fail("cannot access: " + errno_text(errno));
    }
    if (!S_ISLNK(st.st_mode)) {
      exists = true;
      break;
    }
    std::error_code ec;
    const fs::path link = fs::read_symlink(target, ec);
    if (ec) fail("cannot read the link: " + ec.message());
    target = link.is_absolute() ? link.string() : (fs::path(directory_of(target)) / link).string();
    if (const auto fd = descriptor_named(target)) {  // a link to /dev/stdout and the like
      kind_ = kind::descriptor;
      fd_ = *fd;
      if (::fstat(fd_, &st) != 0) fail("descriptor " + std::to_string(fd_) + " is not open");
      identity_ = identity_of(st);
      has_identity_ = true;
      null_device_ = is_null_device(st);
    character_device_ = S_ISCHR(st.st_mode);
      return;
    }
  }
  target_ = target;
  if (exists) {
    if (S_ISDIR(st.st_mode)) fail("is a directory");
    identity_ = identity_of(st);
    has_identity_ = true;
    null_device_ = is_null_device(st);
    character_device_ = S_ISCHR(st.st_mode);
    if (!S_ISREG(st.st_mode)) {
      kind_ = kind::special;
      return;
    }
    keep_mode_ = static_cast<unsigned>(st.st_mode & 07777);
  }
  // A regular file, new or replaced: the temporary file goes next to it.
  const std::string name = fs::path(target).filename().string();
  if (name.empty() || name == "." || name == "..") fail("not a file name");
  const std::string dir = directory_of(target);
  struct stat dir_st {};
  if (::stat(dir.c_str(), &dir_st) != 0) {
    if (errno == ENOENT) fail("directory '" + dir + "' does not exist");
    fail("cannot access directory '" + dir + "': " + errno_text(errno));
  }
  if (!S_ISDIR(dir_st.st_mode)) fail("'" + dir + "' is not a directory");
  if (::access(dir.c_str(), W_OK) != 0) fail("cannot write in directory '" + dir + "': " + errno_text(errno));
  directory_ = identity_of(dir_st);
  name_ = name;
}

bool output_file::lands_in(const std::string& dir) const {
  struct stat st {};
  return kind_ == kind::regular && ::stat(dir.c_str(), &st) == 0 && identity_of(st) == directory_;
}

output_file::~output_file() {
  if (kind_ == kind::descriptor) return;
  if (fd_ >= 0) ::close(fd_);
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
  unlist_for_removal(listed_);
}

void output_file::open() {
  if (kind_ == kind::descriptor) {
    if (fd_ == 1) flush_stdout();  // what was printed before goes first (and must have gone out)
    else std::fflush(fd_ == 2 ? stderr : nullptr);
    return;
  }
  if (fd_ >= 0) return;
  const auto fail = [&](const std::string& why) { throw command_error(flag_ + " " + path_ + ": " + why); };
  if (kind_ == kind::special) {
    fd_ = ::open(target_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) fail("cannot open: " + errno_text(errno));
    return;
  }
  const std::string dir = directory_of(target_);
  files::remove_stale_temporaries(dir, name_);  // what a killed run of this output left behind
#ifdef O_TMPFILE
  // No name at all until the commit, where the file system can: nothing to leave behind whatever
  // ends the process. linkat names it through /proc/self/fd, so that must be there too.
  fd_ = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
  if (fd_ >= 0 && ::access(descriptor_path(fd_).c_str(), F_OK) != 0) ::close(std::exchange(fd_, -1));
  unnamed_ = fd_ >= 0;
#endif
  // Else a hidden name, listed for the signal handler before it exists.
  for (int attempt = 0; fd_ < 0; ++attempt) {
    std::string candidate = temporary_name(dir, name_);
    const int listed = list_for_removal(candidate);
    fd_ = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0) {
      temporary_ = std::move(candidate);
      listed_ = listed;
    } else {
      const int e = errno;
      unlist_for_removal(listed);
      if (e != EEXIST || attempt > 100) fail("cannot create a temporary file in '" + dir + "': " + errno_text(e));
    }
  }
  if (keep_mode_ != 0 && ::fchmod(fd_, keep_mode_) != 0) fail("cannot set the permissions: " + errno_text(errno));
}

void output_file::write(const void* data, std::size_t bytes) {
  open();
  const auto* p = static_cast<const std::byte*>(data);
  for (std::size_t done = 0; done < bytes;) {
    const ::ssize_t n = ::write(fd_, p + done, bytes - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw command_error(flag_ + " " + path_ + ": cannot write: " + errno_text(n < 0 ? errno : EIO));
    done += static_cast<std::size_t>(n);
  }
}

void output_file::finish() {
  open();  // an empty output is still written
  const auto fail = [&](const std::string& why) { throw command_error(flag_ + " " + path_ + ": " + why); };
  if (kind_ == kind::descriptor) return;
  if (kind_ == kind::special) {
    if (fd_ >= 0 && ::close(std::exchange(fd_, -1)) != 0) fail("cannot close: " + errno_text(errno));
    return;
  }
  if (!finished_ && ::fsync(fd_) != 0) fail("cannot flush: " + errno_text(errno));
  finished_ = true;
}

void output_file::commit() {
  finish();
  const auto fail = [&](const std::string& why) { throw command_error(flag_ + " " + path_ + ": " + why); };
  if (kind_ != kind::regular) return;
  // An unnamed temporary gets its hidden name now (listed for the signal handler first): rename
  // replaces the path atomically, linkat cannot.
  for (int attempt = 0; unnamed_ && temporary_.empty(); ++attempt) {
    std::string candidate = temporary_name(directory_of(target_), name_);
    const int listed = list_for_removal(candidate);
    if (::linkat(AT_FDCWD, descriptor_path(fd_).c_str(), AT_FDCWD, candidate.c_str(), AT_SYMLINK_FOLLOW) == 0) {
      temporary_ = std::move(candidate);
      listed_ = listed;
    } else {
      const int e = errno;
      unlist_for_removal(listed);
      if (e != EEXIST || attempt > 100) fail("cannot name the temporary file: " + errno_text(e));
    }
  }
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail("cannot close: " + errno_text(errno));
  if (::rename(temporary_.c_str(), target_.c_str()) != 0) fail("cannot rename the temporary file to it: " + errno_text(errno));
  temporary_.clear();
  unlist_for_removal(std::exchange(listed_, -1));
}

struct output_check {
  // (a terminal or /dev/null may be an input and an output at once: writing it clobbers nothing)
  static bool same(const output_file& a, const output_file& b) {
    if (a.has_identity_ && b.has_identity_) return a.identity_ == b.identity_ && !a.null_device_;
    if (!a.has_identity_ && !b.has_identity_) return a.directory_ == b.directory_ && a.name_ == b.name_;
    return false;  // one exists, the other does not yet
  }
};

void check_outputs(const std::vector<const output_file*>& outputs, const std::vector<named_input>& inputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (output_check::same(*outputs[i], *outputs[j]))
        throw command_error(outputs[j]->flag() + " " + outputs[j]->path() + " and " + outputs[i]->flag() + " " +
                            outputs[i]->path() + " are the same file: give each output its own");
  for (const auto& in : inputs) {
    npy::file_identity id;
    if (in.file != nullptr) {
      id = in.file->identity();
    } else {
      struct stat st {};
      if (in.path.empty() || ::stat(in.path.c_str(), &st) != 0) continue;  // reading it will say what is wrong
      id = identity_of(st);
    }
    for (const output_file* out : outputs)
      if (out->identity() != nullptr && *out->identity() == id && !out->character_device_)
        throw command_error(out->flag() + " " + out->path() + ": that is " + in.label + " (" + in.path +
                            "); inputs are never overwritten");
  }
}

void write_whole(output_file& out, const void* data, std::size_t bytes) {
  out.open();
  out.write(data, bytes);
  out.commit();
}

// ---- standard output ------------------------------------------------------------------------------

namespace {
/// The reason of a failed write to standard output: errno, or (a write that failed earlier
/// unchecked: the C library keeps only the error flag) no reason.
[[noreturn]] void standard_output_failed(int e) {
  throw command_error("writing standard output: " + (e != 0 ? errno_text(e) : std::string("an earlier write failed")));
}
}  // namespace

void print_stdout(std::string_view text) {
  if (text.empty()) return;
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) standard_output_failed(errno);
}

void flush_stdout() {
  errno = 0;
  if (std::fflush(stdout) != 0) standard_output_failed(errno);
  if (std::ferror(stdout) != 0) standard_output_failed(0);
}

int close_stdout(const char* program, int status) {
  std::string why;
  try {
    flush_stdout();
  } catch (const command_error& e) {
    why = e.what();
  }
  // A descriptor closed from the start (`>&-`) with nothing written to it is no failure (EBADF).
  errno = 0;
  if (std::fclose(stdout) != 0 && why.empty() && errno != EBADF)
    why = "writing standard output: " + errno_text(errno);
  if (why.empty() || status != 0) return status;
  std::fprintf(stderr, "%s: error: %s\n", program, why.c_str());
  return 1;
}

}  // namespace multireduce::cli
