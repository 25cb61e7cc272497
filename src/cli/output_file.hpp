// output_file.hpp -- the tool's outputs, as Unix tools treat them.
//
// Every output is planned before any work starts, so that a bad one costs nothing: its directory
// must exist, it must not be a directory, two outputs must not land on one file, and no output may
// land on an input (the message names the option). Then, by what the path is:
//  - a regular file, or a name that does not exist yet: written to a temporary file in the same
//    directory, flushed, and renamed over the path only when the command succeeds (commit): a
//    failure leaves no half-written file and the old one untouched; the old file's permission bits
//    are kept. The temporary has no name until the commit where the file system can (O_TMPFILE,
//    named by linkat): then nothing is left behind whatever ends the process, even SIGKILL. Else it
//    is a hidden ".NAME.tmp-HOST-PID-N" next to the path, removed if the command fails and, should
//    SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTERM, SIGXCPU or SIGXFSZ end the process, by a handler
//    that then lets the signal end it as it would have (the exit status still names the signal);
//    a signal the process was started ignoring stays ignored; one that SIGKILL left is removed by
//    the next run that writes the same output (files/temporary_files.hpp);
//  - a symbolic link: followed, and its target written as above (the link stays a link);
//  - "-", /dev/stdout, /dev/stderr, /dev/fd/N: that descriptor, written directly;
//  - anything else (a device such as /dev/null, a FIFO): opened and written directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "npy/input_file.hpp"

namespace multireduce::cli {

struct named_input;

class output_file {
 public:
  /// Plans an output at `path`, given by option `flag` ("-o", "--knn-idx", ...); throws
  /// command_error when it cannot be written.
  output_file(std::string flag, std::string path);
  ~output_file();  // an output not committed is removed (its temporary file), never half-written
  output_file(const output_file&) = delete;
  output_file& operator=(const output_file&) = delete;

  const std::string& flag() const { return flag_; }
  const std::string& path() const { return path_; }
  /// Written directly: standard output, a device, a FIFO.
  bool direct() const { return kind_ != kind::regular; }
  /// Whether it is a regular file (new or replaced) in the directory `dir`.
  bool lands_in(const std::string& dir) const;
  /// The name of the regular file it lands on (the last link followed); empty for other kinds.
  const std::string& file_name() const { return name_; }
  /// The file it lands on, when there is one already (regular files, devices, descriptors).
  const npy::file_identity* identity() const { return has_identity_ ? &identity_ : nullptr; }

  /// Opens it for writing: the temporary file, or the special file itself.
  void open();
  /// Appends bytes (opens first if needed).
  void write(const void* data, std::size_t bytes);
  /// Everything written is on disk (fsync of the temporary; a special file closed): only the
  /// rename is left, so that a command with several outputs can fail before any of them replaces
  /// its path.
  void finish();
  /// Makes it the output: finish, then rename (a regular file).
  void commit();

 private:
  enum class kind { regular, descriptor, special };
  std::string flag_, path_;
  kind kind_ = kind::regular;
  std::string target_;       // regular: the file renamed over; special: the path opened
  int fd_ = -1;              // open descriptor (a descriptor output: the process's own)
  std::string temporary_;    // regular: the temporary file's name while open (empty: it has none)
  int listed_ = -1;          // its place in the list the signal handler removes (-1: none)
  bool unnamed_ = false;     // regular: an O_TMPFILE temporary, named only at the commit
  bool finished_ = false;    // regular: the temporary is flushed to disk
  unsigned keep_mode_ = 0;   // regular: permission bits of the file replaced (0: a new file)
  npy::file_identity identity_;
  bool has_identity_ = false;
  // A new regular file: its directory's identity and its name, to tell two new outputs apart.
  npy::file_identity directory_;
  std::string name_;
  bool null_device_ = false;       // /dev/null: any number of outputs may go there
  bool character_device_ = false;  // a terminal, /dev/null: may be an input too
  friend struct output_check;
  friend void check_outputs(const std::vector<const output_file*>&, const std::vector<named_input>&);
};

/// An input, for check_outputs: what it is called in messages ("the query", "--offsets") and its
/// path, or the open file itself.
struct named_input {
  std::string label;
  std::string path;
  const npy::input_file* file = nullptr;
};

/// Refuses two outputs on one file (other than /dev/null) and an output on an input; the message
/// names the options. Throws command_error.
void check_outputs(const std::vector<const output_file*>& outputs, const std::vector<named_input>& inputs);

/// Writes a whole output at once: open, write, commit.
void write_whole(output_file& out, const void* data, std::size_t bytes);

// ---- standard output, checked ---------------------------------------------------------------------
// Results printed to standard output fail like any other output: a full disk, a closed descriptor
// or a pipe whose reader left (SIGPIPE ignored) is "writing standard output: REASON", exit code 1.

/// Writes `text` to standard output; throws command_error when it cannot.
void print_stdout(std::string_view text);
/// Flushes standard output and checks that everything written to it so far went out; throws
/// command_error when not.
void flush_stdout();
/// At the end of main: flushes and closes standard output. A command that succeeded (`status` 0)
/// but whose output did not all go out fails: "PROGRAM: error: writing standard output: REASON",
/// @return 1; else @return status.
int close_stdout(const char* program, int status);

}  // namespace multireduce::cli
