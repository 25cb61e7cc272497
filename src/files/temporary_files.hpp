// temporary_files.hpp -- the hidden temporary files the tool's outputs and new COLMAP databases are
// written to before they are renamed into place, and what removes them when the process is ended.
//
// A temporary is ".NAME.tmp-HOST-PID-N" beside the file it becomes (NAME its name, HOST and PID
// the machine and the process that made it, N a count). Listed here, it is removed should SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTERM,
// SIGXCPU or SIGXFSZ end the process: a handler unlinks what is listed, then lets the signal end the
// process as it would have (the exit status still names the signal); a signal the process was
// started ignoring stays ignored. What no handler can catch (SIGKILL, a power cut) leaves the file;
// the next process of the same machine that makes a temporary for the same NAME in that directory
// removes those whose process is no longer running (remove_stale_temporaries).
#pragma once

#include <string>

namespace multireduce::files {

/// A fresh name for a temporary of `name` in `dir`: "DIR/.NAME.tmp-HOST-PID-N" (HOST: the host
/// name, characters other than letters, digits, '.' and '_' as '_').
std::string temporary_name(const std::string& dir, const std::string& name);

/// Lists `path` for removal should one of the signals above end the process (installing the
/// handler on first use). @return the handle for unlist_for_removal, -1 when it could not be
/// listed (all slots taken, a path too long).
int list_for_removal(const std::string& path);
/// Takes a path off the list (after it was renamed or removed); -1 is ignored.
void unlist_for_removal(int handle);

/// While one of these lives, a signal of the list above that arrives is held instead of ending the
/// process at once: work that must not stop half-way (a database transaction and the renames that
/// go with it) asks deferred_signal() at its safe points, stops there -- a transaction rolled back,
/// temporaries removed -- and when the last deferral ends the signal ends the process as it would
/// have (what is listed removed first). A second signal ends the process at once (the handler
/// is reset by the first). Deferrals nest; they install the handler, and do nothing where the
/// program has a handler of its own for these signals.
class signal_deferral {
 public:
  signal_deferral();
  ~signal_deferral();
  signal_deferral(const signal_deferral&) = delete;
  signal_deferral& operator=(const signal_deferral&) = delete;
};

/// The signal held by a deferral, 0 when none arrived.
int deferred_signal();

/// Removes the temporaries of `name` in `dir` (".NAME.tmp-HOST-PID-N" of this host, and their
/// SQLite "-journal") left by processes that are no longer running (SIGKILL, a crash). Those of
/// other hosts (a shared file system) are left alone; so are those of a process this one cannot
/// see that shares the host name (a container with its own process ids: give it its own host
/// name). @return how many files were removed.
int remove_stale_temporaries(const std::string& dir, const std::string& name);

}  // namespace multireduce::files
