// The tool's parts on their own: output files (atomic replacement, links, FIFOs, descriptors, the
// checks made before anything is written), the progress bar (with a clock of the test's), and
// values printed with their shortest digits.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "../common/scratch_dir.hpp"
#include "cli/command_common.hpp"
#include "cli/format.hpp"
#include "cli/output_file.hpp"
#include "cli/progress.hpp"
#include "files/temporary_files.hpp"

namespace {

namespace cli = multireduce::cli;
namespace files = multireduce::files;
namespace fs = std::filesystem;

/// A fresh directory per test, removed afterwards.
class output_files : public mr_test::scratch_dir {
 protected:
  static std::string text_of(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  static void write(cli::output_file& f, const std::string& s) { cli::write_whole(f, s.data(), s.size()); }
};

/// The message of the command_error `body` throws; fails the test if it throws none.
template <class F>
std::string error_of(F&& body) {
  try {
    body();
  } catch (const cli::command_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

TEST_F(output_files, a_regular_file_is_replaced_only_when_committed) {
  const fs::path path = dir / "out.npy";
  std::ofstream(path) << "old";
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  {
    cli::output_file f("-o", path.string());
    EXPECT_FALSE(f.direct());
    f.write("new", 3);
    EXPECT_EQ(text_of(path), "old") << "not replaced before the commit";
    EXPECT_LE(listing().size(), 2u) << "the temporary file, while it has a name, sits next to it";
    f.commit();
  }
  EXPECT_EQ(text_of(path), "new");
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read)
      << "the old file's permissions are kept";
  {
    cli::output_file f("-o", path.string());
    f.write("half", 4);
  }  // not committed: as if the command failed
  EXPECT_EQ(text_of(path), "new");
  EXPECT_EQ(listing(), std::vector<std::string>{"out.npy"}) << "no temporary file left";
}

TEST_F(output_files, bad_paths_are_refused_before_anything_is_written) {
  EXPECT_NE(error_of([&] { cli::output_file("--knn-dist", (dir / "no" / "x.npy").string()); })
                .find("--knn-dist " + (dir / "no" / "x.npy").string() + ": directory"),
            std::string::npos);
  EXPECT_NE(error_of([&] { cli::output_file("-o", dir.string()); }).find("is a directory"), std::string::npos);
  EXPECT_NE(error_of([&] { cli::output_file("-o", ""); }).find("no file name"), std::string::npos);
  EXPECT_NE(error_of([&] { cli::output_file("-o", (dir / "").string()); }).find("is a directory"), std::string::npos);
  if (::geteuid() != 0) {  // root writes anywhere
    fs::create_directory(dir / "locked");
    fs::permissions(dir / "locked", fs::perms::owner_read | fs::perms::owner_exec);
    EXPECT_NE(error_of([&] { cli::output_file("-o", (dir / "locked" / "x").string()); }).find("cannot write in"),
              std::string::npos);
    fs::permissions(dir / "locked", fs::perms::owner_all);
  }
  EXPECT_TRUE(fs::is_empty(dir) || listing() == std::vector<std::string>{"locked"});
}

TEST_F(output_files, a_bare_name_goes_to_the_current_directory) {
  const fs::path old = fs::current_path();
  fs::current_path(dir);
  {
    cli::output_file f("-o", "plain.csv");
    write(f, "a,b\n");
  }
  fs::current_path(old);
  EXPECT_EQ(text_of(dir / "plain.csv"), "a,b\n");
}

TEST_F(output_files, links_are_written_through) {
  std::ofstream(dir / "target") << "old";
  fs::create_symlink(dir / "target", dir / "link");
  fs::create_symlink("link", dir / "link_to_link");  // relative, two hops
  {
    cli::output_file f("-o", (dir / "link_to_link").string());
    write(f, "new");
  }
  EXPECT_TRUE(fs::is_symlink(dir / "link"));
  EXPECT_TRUE(fs::is_symlink(dir / "link_to_link"));
  EXPECT_EQ(text_of(dir / "target"), "new");
  fs::create_symlink(dir / "loop_a", dir / "loop_b");
  fs::create_symlink(dir / "loop_b", dir / "loop_a");
  EXPECT_NE(error_of([&] { cli::output_file("-o", (dir / "loop_a").string()); }).find("too many levels"),
            std::string::npos);
}

TEST_F(output_files, a_fifo_is_written_directly) {
  const fs::path fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);
    got.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  });
  {
    cli::output_file f("-o", fifo.string());
    EXPECT_TRUE(f.direct());
    f.write("first,", 6);
    f.write("second", 6);
    f.commit();
  }
  reader.join();
  EXPECT_EQ(got, "first,second");
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "still a FIFO, not replaced by a file";
}

TEST_F(output_files, descriptors_and_devices) {
  // /dev/null: written directly, stays a device; any number of outputs may go there.
  cli::output_file a("--knn-idx", "/dev/null"), b("--knn-dist", "/dev/null");
  EXPECT_TRUE(a.direct());
  EXPECT_NO_THROW(cli::check_outputs({&a, &b}, {}));
  write(a, "x");
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // A descriptor of the process: /dev/fd/N writes to N itself.
  const fs::path path = dir / "fd.txt";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  {
    cli::output_file f("-o", "/dev/fd/" + std::to_string(fd));
    EXPECT_TRUE(f.direct());
    write(f, "through the descriptor");
  }
  ::close(fd);
  EXPECT_EQ(text_of(path), "through the descriptor");
  EXPECT_NE(error_of([&] { cli::output_file("-o", "/dev/fd/987"); }).find("is not open"), std::string::npos);
}

TEST_F(output_files, two_outputs_on_one_file_or_an_output_on_an_input_are_refused) {
  std::ofstream(dir / "in.npy") << "input";
  fs::create_symlink(dir / "in.npy", dir / "alias.npy");
  const cli::output_file a("--knn-idx", (dir / "x.npy").string()), b("--knn-dist", (dir / "." / "x.npy").string());
  EXPECT_NE(error_of([&] { cli::check_outputs({&a, &b}, {}); }).find("are the same file"), std::string::npos);
  const cli::output_file c("-o", (dir / "alias.npy").string());
  const std::string message =
      error_of([&] { cli::check_outputs({&a, &c}, {{"the query set", (dir / "in.npy").string(), nullptr}}); });
  EXPECT_NE(message.find("-o " + (dir / "alias.npy").string() + ": that is the query set"), std::string::npos)
      << message;
  const cli::output_file d("-o", (dir / "y.npy").string());
  EXPECT_NO_THROW(cli::check_outputs({&a, &d}, {{"the query set", (dir / "in.npy").string(), nullptr}}));
}

// ---- a signal that ends the process mid-write ------------------------------------------------------

/// Runs `body` in a child process; @return its wait status.
template <class F>
int status_of_child(F&& body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    body();
    std::_Exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

/// Whether `sig` would reach a handler here (a signal ignored since the test started stays ignored).
bool not_ignored(int sig) {
  struct sigaction now {};
  return ::sigaction(sig, nullptr, &now) == 0 && ((now.sa_flags & SA_SIGINFO) != 0 || now.sa_handler != SIG_IGN);
}

TEST_F(output_files, a_signal_that_ends_the_process_mid_write_leaves_the_old_file_and_no_temporary) {
  const fs::path path = dir / "out.npy";
  std::ofstream(path) << "old";
  for (const int sig : {SIGTERM, SIGINT, SIGHUP}) {
    if (!not_ignored(sig)) continue;
    const int status = status_of_child([&] {
      cli::output_file f("-o", path.string());
      f.write("half", 4);
      ::raise(sig);
      ::pause();  // (a handler that returned: the test fails on the exit status below)
    });
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "signal " << sig << ", status " << status;
    EXPECT_EQ(text_of(path), "old");
    EXPECT_EQ(listing(), std::vector<std::string>{"out.npy"}) << "signal " << sig << " left a temporary file";
  }
}

TEST_F(output_files, the_signal_handler_removes_what_is_listed_and_nothing_else) {
  // The named temporaries (file systems without O_TMPFILE, and the instant of the commit between
  // linkat and rename) are listed for the handler; it removes them, then the signal ends the process.
  for (const char* name : {"listed", "unlisted", "not_listed"}) std::ofstream(dir / name) << name;
  const int status = status_of_child([&] {
    const int kept = files::list_for_removal((dir / "unlisted").string());
    if (files::list_for_removal((dir / "listed").string()) < 0 || kept < 0) std::_Exit(3);
    files::unlist_for_removal(kept);
    ::raise(SIGTERM);
    ::pause();
  });
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << "status " << status;
  EXPECT_EQ(listing(), (std::vector<std::string>{"not_listed", "unlisted"}));
  EXPECT_EQ(files::list_for_removal(std::string(5000, 'x')), -1) << "a path too long is not listed";
}

// ---- standard output, checked ----------------------------------------------------------------------

TEST(standard_output, a_full_disk_is_an_error_with_its_reason) {
  // In a child whose standard output is /dev/full: exit code 0 when every check held.
  const int status = status_of_child([] {
    if (std::freopen("/dev/full", "w", stdout) == nullptr) std::_Exit(2);
    cli::print_stdout("3.5\n");  // buffered: no error yet
    try {
      cli::flush_stdout();
      std::_Exit(3);
    } catch (const cli::command_error& e) {
      if (std::string(e.what()) != "writing standard output: No space left on device") std::_Exit(4);
    }
    try {  // more than the buffer: the write itself fails
      cli::print_stdout(std::string(1 << 20, 'x'));
      std::_Exit(5);
    } catch (const cli::command_error& e) {
      if (std::string(e.what()) != "writing standard output: No space left on device") std::_Exit(6);
    }
    std::fprintf(stdout, "unchecked");
    if (cli::close_stdout("multireduce", 0) != 1) std::_Exit(7);
    std::_Exit(0);
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  // A standard output closed from the start, with nothing written to it: no failure.
  const int closed = status_of_child([] {
    ::close(1);
    std::_Exit(cli::close_stdout("multireduce", 0));
  });
  EXPECT_TRUE(WIFEXITED(closed) && WEXITSTATUS(closed) == 0);
}

// ---- the progress bar ----------------------------------------------------------------------------

TEST(progress_bar, only_after_two_seconds_at_most_ten_times_a_second_and_cleared) {
  using clock = cli::progress_bar::clock;
  clock::time_point t0{};
  clock::time_point now = t0;
  std::vector<std::string> drawn;
  {
    cli::progress_bar bar("multireduce reduce", "B", true, [&](const std::string& s) { drawn.push_back(s); },
                          [&] { return now; });
    now = t0 + std::chrono::milliseconds(1500);
    bar.update(100, 1000);
    EXPECT_TRUE(drawn.empty()) << "nothing for work shorter than two seconds";
    now = t0 + std::chrono::seconds(2);
    bar.update(400, 1000);
    ASSERT_EQ(drawn.size(), 1u);
    EXPECT_EQ(drawn[0], "\rmultireduce reduce [#########               ] 40%  200 B/s  ETA 3s\033[K");
    now += std::chrono::milliseconds(50);
    bar.update(450, 1000);
    EXPECT_EQ(drawn.size(), 1u) << "at most every 100 ms";
    now = t0 + std::chrono::seconds(4);
    bar.update(1000, 1000);
    ASSERT_EQ(drawn.size(), 2u);
    EXPECT_NE(drawn[1].find("100%  250 B/s\033[K"), std::string::npos) << drawn[1];
  }
  ASSERT_EQ(drawn.size(), 3u);
  EXPECT_EQ(drawn[2], "\r\033[K") << "the bar is cleared when the work ends";
}

TEST(progress_bar, nothing_at_all_when_disabled) {
  int calls = 0;
  {
    cli::progress_bar bar("x", "B", false, [&](const std::string&) { ++calls; },
                          [] { return cli::progress_bar::clock::time_point{} + std::chrono::hours(1); });
    bar.update(1, 2);
  }
  EXPECT_EQ(calls, 0);
}

TEST(progress_bar, rates_and_times_in_words) {
  const cli::progress_bar bar("m", "comparisons", false);
  EXPECT_EQ(bar.line(3'000'000'000, 9'000'000'000, 2.0), "m [########                ] 33%  1.50 G comparisons/s  ETA 4s");
  EXPECT_NE(bar.line(1000, 100000, 10.0).find("100 comparisons/s  ETA 16m30s"), std::string::npos) << bar.line(1000, 100000, 10.0);
  EXPECT_NE(bar.line(1, 100000, 10.0).find("ETA 277h46m"), std::string::npos) << bar.line(1, 100000, 10.0);
}

// ---- values as printed ---------------------------------------------------------------------------

TEST(format, shortest_digits_of_each_type) {
  using multireduce::runtime::to_float16;
  EXPECT_EQ(cli::format_value(to_float16(0.6f)), "0.6");  // its float32 value is 0.60009766
  EXPECT_EQ(cli::format_value(to_float16(65504.0f)), "65500");
  EXPECT_EQ(cli::format_value(to_float16(-0.0f)), "-0");
  EXPECT_EQ(cli::format_value(to_float16(1.0f / 0.0f)), "inf");
  EXPECT_EQ(cli::format_value(0.1f), "0.1");
  EXPECT_EQ(cli::format_value(0.1), "0.1");
  EXPECT_EQ(cli::json_value(0.1f), "0.1") << "JSON has the text's digits";
  EXPECT_EQ(cli::json_value(std::nan("")), "null");
  EXPECT_EQ(cli::format_value(std::int8_t{-128}), "-128");
  EXPECT_EQ(cli::format_value(std::uint64_t{18446744073709551615ull}), "18446744073709551615");
  // Every float16 reads back to itself from its text.
  for (unsigned bits = 0; bits < 0x10000; ++bits) {
    const multireduce::runtime::float16_bits h{static_cast<std::uint16_t>(bits)};
    if (!std::isfinite(multireduce::runtime::to_float(h))) continue;
    const std::string text = cli::format_value(h);
    ASSERT_EQ(to_float16(std::strtof(text.c_str(), nullptr)).bits, h.bits) << text;
    ASSERT_LE(text.size(), 12u) << text;
  }
}

TEST(numbers, ranges_in_words) {
  EXPECT_EQ(cli::range_words(1, INT64_MAX), "an integer of at least 1");
  EXPECT_EQ(cli::range_words(0, 7), "an integer from 0 to 7");
  EXPECT_EQ(cli::range_words(INT64_MIN, INT64_MAX), "an integer");
}

}  // namespace
