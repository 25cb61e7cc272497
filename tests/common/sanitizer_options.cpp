// Linked into every sanitized test program (cmake/multireduceSanitized.cmake): the sanitizers'
// settings, built in so that they hold however the program is started (ctest, test discovery).
// Leak checking is off: it needs ptrace, which containers often deny.
extern "C" const char* __asan_default_options() { return "detect_leaks=0:abort_on_error=0"; }
extern "C" const char* __ubsan_default_options() { return "print_stacktrace=1:halt_on_error=1"; }
