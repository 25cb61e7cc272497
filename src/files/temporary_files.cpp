// temporary_files.cpp -- see temporary_files.hpp.
#include "files/temporary_files.hpp"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <mutex>
#include <string_view>

namespace multireduce::files {
namespace {

/// This machine's name as it stands in temporaries' names.
const std::string& host_tag() {
  static const std::string tag = [] {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return std::string("host");
    std::string t(name);
    for (char& c : t)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_'))
        c = '_';
    return t;
  }();
  return tag;
}

std::string prefix_of(const std::string& name) { return "." + name + ".tmp-" + host_tag() + "-"; }

// ---- files removed when a signal ends the process ----------------------------------------------
// Fixed slots (nothing allocated in the handler): 0 free, 1 being written, 2 listed. The handler
// unlinks what is listed (unlink is async-signal-safe), then raises the signal again: SA_RESETHAND
// has put the default action back, and the signal, blocked while the handler runs, ends the process
// as soon as it returns -- as it would have without the handler.
struct removal_slot {
  std::atomic<int> state{0};
  char path[PATH_MAX] = {};
};
constexpr int removal_slots = 32;
removal_slot removals[removal_slots];
constexpr int ending_signals[] = {SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTERM, SIGXCPU, SIGXFSZ};

// Deferrals alive (any thread), and the signal held while there are.
std::atomic<int> deferrals{0};
std::atomic<int> held_signal{0};

void remove_listed() {
  for (const removal_slot& r : removals)
    if (r.state.load(std::memory_order_acquire) == 2) ::unlink(r.path);
}

extern "C" void on_ending_signal(int sig) {
  const int saved_errno = errno;
  if (deferrals.load(std::memory_order_acquire) > 0) {
    int none = 0;
    held_signal.compare_exchange_strong(none, sig, std::memory_order_acq_rel);
    errno = saved_errno;
    return;  // SA_RESETHAND: a second one ends the process at once
  }
  remove_listed();
  ::raise(sig);
  errno = saved_errno;
}

void install_removal_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_handler = on_ending_signal;
    action.sa_flags = SA_RESETHAND;
    sigemptyset(&action.sa_mask);
    for (const int s : ending_signals) sigaddset(&action.sa_mask, s);
    for (const int s : ending_signals) {
      struct sigaction now {};
      if (::sigaction(s, nullptr, &now) != 0) continue;
      // Ignored from the start (nohup, a background job): it stays ignored. A handler of someone
      // else's (a program linking this code): theirs.
      if ((now.sa_flags & SA_SIGINFO) != 0 || now.sa_handler != SIG_DFL) continue;
      ::sigaction(s, &action, nullptr);
    }
  });
}

/// Whether `rest` (what follows ".NAME.tmp-HOST-") is "PID-N" or "PID-N-journal" of a process
/// that no longer runs.
bool left_by_a_dead_process(std::string_view rest) {
  if (rest.ends_with("-journal")) rest.remove_suffix(8);
  const std::size_t dash = rest.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == rest.size()) return false;
  long pid = 0;
  unsigned long n = 0;
  const char* end = rest.data() + dash;
  if (auto r = std::from_chars(rest.data(), end, pid); r.ec != std::errc() || r.ptr != end || pid <= 0) return false;
  const char* last = rest.data() + rest.size();
  if (auto r = std::from_chars(end + 1, last, n); r.ec != std::errc() || r.ptr != last) return false;
  if (pid == ::getpid()) return false;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

}  // namespace

std::string temporary_name(const std::string& dir, const std::string& name) {
  static std::atomic<unsigned> counter{0};
  std::string path = dir;
  if (!path.empty() && path.back() != '/') path += '/';
  return path + prefix_of(name) + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
}

int list_for_removal(const std::string& path) {
  if (path.empty() || path.size() >= PATH_MAX) return -1;
  install_removal_handler();
  for (int i = 0; i < removal_slots; ++i) {
    int expected = 0;
    if (!removals[i].state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) continue;
    std::memcpy(removals[i].path, path.c_str(), path.size() + 1);
    removals[i].state.store(2, std::memory_order_release);
    return i;
  }
  return -1;
}

void unlist_for_removal(int handle) {
  if (handle >= 0 && handle < removal_slots) removals[handle].state.store(0, std::memory_order_release);
}

signal_deferral::signal_deferral() {
  install_removal_handler();
  deferrals.fetch_add(1, std::memory_order_acq_rel);
}

signal_deferral::~signal_deferral() {
  if (deferrals.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (const int sig = held_signal.exchange(0, std::memory_order_acq_rel); sig != 0) {
    remove_listed();
    ::raise(sig);  // the default action now (SA_RESETHAND): the process ends of it
  }
}

int deferred_signal() { return held_signal.load(std::memory_order_acquire); }

int remove_stale_temporaries(const std::string& dir, const std::string& name) {
  DIR* d = ::opendir(dir.empty() ? "." : dir.c_str());
  if (d == nullptr) return 0;
  const std::string prefix = prefix_of(name);
  int removed = 0;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view file(e->d_name);
    if (!file.starts_with(prefix) || !left_by_a_dead_process(file.substr(prefix.size()))) continue;
    std::string path = dir.empty() ? "." : dir;
    if (path.back() != '/') path += '/';
    path += file;
    if (::unlink(path.c_str()) == 0) ++removed;
  }
  ::closedir(d);
  return removed;
}

}  // namespace multireduce::files
