// progress.hpp -- the progress bar every command shows on stderr for work that takes longer than
// about two seconds (big files, matching large sets, benchmarks): how far, how fast, how long to go.
// Only when stderr is a terminal; nothing at all when it is piped or redirected. Header-only.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace multireduce::cli {

class progress_bar {
 public:
  using clock = std::chrono::steady_clock;
  /// Where the bar goes (tests catch it; the tool writes to stderr).
  using writer = std::function<void(const std::string&)>;

  /// A bar for `label` ("multireduce reduce"), counting `unit` ("B" for bytes, "comparisons").
  /// Shown only when `enabled` (by default: stderr is a terminal).
  progress_bar(std::string label, std::string unit, bool enabled = ::isatty(2) == 1, writer out = to_stderr,
               std::function<clock::time_point()> now = clock::now)
      : label_(std::move(label)), unit_(std::move(unit)), enabled_(enabled), out_(std::move(out)), now_(std::move(now)),
        start_(now_()) {}
  ~progress_bar() { finish(); }
  progress_bar(const progress_bar&) = delete;
  progress_bar& operator=(const progress_bar&) = delete;

  /// Whether it draws at all (stderr a terminal, by default).
  bool enabled() const { return enabled_; }
  /// `done` of `total` units so far (`note`, if any, after the percentage: "12/45 pairs"). Draws
  /// only after `delay` and at most every `interval`.
  void update(std::int64_t done, std::int64_t total, const std::string& note = "") {
    if (!enabled_) return;
    const clock::time_point t = now_();
    if (t - start_ < delay || (drawn_ && t - last_ < interval)) return;
    last_ = t;
    drawn_ = true;
    out_("\r" + line(done, total, std::chrono::duration<double>(t - start_).count(), note) + "\033[K");
  }
  /// Clears the bar (if it was drawn): what follows on stderr starts on a clean line.
  void finish() {
    if (drawn_) out_("\r\033[K");
    drawn_ = false;
  }

  /// The bar's text: "multireduce reduce [######        ]  43%  1.21 GB/s  ETA 3s".
  std::string line(std::int64_t done, std::int64_t total, double seconds, const std::string& note = "") const {
    constexpr int width = 24;
    const double fraction = total > 0 ? std::clamp(double(done) / double(total), 0.0, 1.0) : 0.0;
    const int filled = static_cast<int>(fraction * width);
    const double rate = seconds > 0 ? double(done) / seconds : 0.0;
    std::string text = label_ + " [" + std::string(std::size_t(filled), '#') + std::string(std::size_t(width - filled), ' ') +
                       "] " + fixed(100 * fraction, 0) + "%  " + (note.empty() ? "" : note + "  ") + scaled(rate, unit_) + "/s";
    if (rate > 0 && done < total) text += "  ETA " + duration(double(total - done) / rate);
    return text;
  }

  static constexpr auto delay = std::chrono::seconds(2);
  static constexpr auto interval = std::chrono::milliseconds(100);

 private:
  static void to_stderr(const std::string& s) {
    std::fputs(s.c_str(), stderr);
    std::fflush(stderr);
  }
  static std::string fixed(double x, int digits) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.*f", digits, x);
    return buffer;
  }
  /// 1234567 B -> "1.23 MB", 1234567 comparisons -> "1.23 M comparisons" (SI prefixes).
  static std::string scaled(double x, const std::string& unit) {
    static constexpr const char* prefixes[] = {"", "k", "M", "G", "T", "P"};
    int p = 0;
    while (x >= 1000 && p < 5) x /= 1000, ++p;
    const bool word = unit.size() > 2;
    return fixed(x, x < 10 ? 2 : x < 100 ? 1 : 0) + " " + prefixes[p] + (word && p > 0 ? " " : "") + unit;
  }
  /// 75 -> "1m15s".
  static std::string duration(double seconds) {
    const auto s = static_cast<long long>(std::ceil(seconds));
    if (s < 60) return std::to_string(s) + "s";
    if (s < 3600) return std::to_string(s / 60) + "m" + std::to_string(s % 60) + "s";
    return std::to_string(s / 3600) + "h" + std::to_string(s / 60 % 60) + "m";
  }

  std::string label_, unit_;
  bool enabled_;
  writer out_;
  std::function<clock::time_point()> now_;
  clock::time_point start_, last_{};
  bool drawn_ = false;
};

}  // namespace multireduce::cli
