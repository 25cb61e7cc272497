// multireduce/emulator/host_warp.hpp -- a host emulator of one thread block of warps of 32 or 64 lanes.
//
// Every lane runs the caller's function as a cooperative fiber (POSIX ucontext) on the calling
// thread. A lane that reaches a warp-collective call (shuffle, ballot, sync) or the block barrier
// waits; when all lanes of its warp wait at the same collective, the emulator resolves it at once
// for the whole warp, exactly as PTX defines shfl.sync (width, segment clamping, out-of-range source
// lanes read their own value), and resumes them. The emulator counts, per warp, the 32-bit shuffles,
// ballots and syncs the warp issued and the operator applications and lane-selects (the largest
// count over its lanes: what a SIMT warp would issue), and can record a trace of every operator
// application and select for `multireduce trace`.
//
// Divergent collectives (lanes of one warp at different collectives, a lane that returns while the
// others wait, a block barrier not reached by all) are reported as std::logic_error instead of the
// hang or undefined behaviour they would be on a GPU. An exception thrown inside a lane ends the run
// and is rethrown from run(); objects on the other lanes' stacks are then not destroyed.
#pragma once

#include <ucontext.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../lane.hpp"

namespace multireduce {

/// What one warp did during a host_block::run.
struct warp_counts {
  std::uint64_t shuffles = 0;               ///< 32-bit shfl instructions (a double costs 2)
  std::uint64_t operator_applications = 0;  ///< lane.apply calls, the most of any lane
  std::uint64_t selects = 0;                ///< lane.select calls (merges, swaps), the most of any lane
  std::uint64_t ballots = 0;
  std::uint64_t syncs = 0;  ///< warp barriers
};

/// The PTX shfl modes.
enum class shuffle_mode { idx, up, down, bfly };

/// The lane a PTX shfl.sync reads from, or `lane` itself when the source is out of range; follows
/// the PTX ISA pseudo-code with the clamp operand the CUDA intrinsics build from `width`.
/// warp_size is 32 or 64 (lane fields of 5 or 6 bits); width is a power of two <= warp_size.
constexpr int shuffle_source_lane(shuffle_mode mode, int lane, int b, int width, int warp_size) {
  const int mask = warp_size - 1;
  const int c = ((warp_size - width) << 8) | (mode == shuffle_mode::up ? 0 : mask);
  const int bval = b & mask, cval = c & mask, segmask = (c >> 8) & mask;
  const int max_lane = (lane & segmask) | (cval & ~segmask & mask);
  const int min_lane = lane & segmask;
  int j = lane;
  bool in_range = false;
  switch (mode) {
    case shuffle_mode::up: j = lane - bval; in_range = j >= max_lane; break;
    case shuffle_mode::down: j = lane + bval; in_range = j <= max_lane; break;
    case shuffle_mode::bfly: j = lane ^ bval; in_range = j <= max_lane; break;
    case shuffle_mode::idx: j = min_lane | (bval & ~segmask & mask); in_range = j <= max_lane; break;
  }
  return in_range ? j : lane;
}

/// One recorded operator application or select, for traces.
struct trace_event {
  enum class kind { op, select };
  int thread;         ///< thread rank in the block
  kind what;
  std::string after;  ///< the last shuffle this lane made before it ("shfl_xor 1"), or ""
  std::string value;  ///< the result, formatted by to_trace_string(value) when T has one
};

class host_block;

/// One lane of an emulated warp: the host implementation of the lane seam (lane.hpp).
class host_lane {
 public:
  /// Emulated warps have 32 or 64 lanes (which one is a run-time choice of the host_block).
  static constexpr int max_warp_size = 64;
  int id() const { return rank_ % warp_size_; }
  int warp_size() const { return warp_size_; }
  int warp_id() const { return rank_ / warp_size_; }
  int thread_rank() const { return rank_; }
  int block_size() const;

  std::uint32_t shfl_xor(std::uint32_t word, int lane_mask, int width) { return shuffle(shuffle_mode::bfly, word, lane_mask, width); }
  std::uint32_t shfl_down(std::uint32_t word, int delta, int width) { return shuffle(shuffle_mode::down, word, delta, width); }
  std::uint32_t shfl_up(std::uint32_t word, int delta, int width) { return shuffle(shuffle_mode::up, word, delta, width); }
  std::uint32_t shfl_idx(std::uint32_t word, int src_lane, int width) { return shuffle(shuffle_mode::idx, word, src_lane, width); }
  std::uint64_t ballot(bool predicate);
  void sync();
  void barrier();

  template <class Op, class T>
  T apply(const Op& op, const T& a, const T& b) {
    ++operator_applications_;
    T result = op(a, b);
    record(trace_event::kind::op, result);
    return result;
  }
  template <class T>
  T select(bool predicate, const T& if_true, const T& if_false) {
    ++selects_;
    T result = predicate ? if_true : if_false;
    record(trace_event::kind::select, result);
    return result;
  }

 private:
  friend class host_block;
  enum class waiting { none, shuffle, ballot, sync, barrier };

  std::uint32_t shuffle(shuffle_mode mode, std::uint32_t word, int b, int width);
  void wait(waiting what);
  template <class T>
  void record(trace_event::kind what, const T& value);

  host_block* block_ = nullptr;
  int rank_ = 0;
  int warp_size_ = 32;
  bool done_ = false;
  waiting waiting_ = waiting::none;
  shuffle_mode mode_ = shuffle_mode::bfly;
  int b_ = 0, width_ = 32;
  std::uint32_t word_ = 0;
  bool predicate_ = false;
  std::uint64_t result_ = 0;
  std::uint64_t operator_applications_ = 0, selects_ = 0;
  std::string last_shuffle_;
  ucontext_t context_{};
};

/// A thread block of `num_warps` warps of `warp_size` (32 or 64) lanes, emulated on the host.
class host_block {
 public:
  explicit host_block(int warp_size = 32, int num_warps = 1) : warp_size_(warp_size), num_warps_(num_warps) {
    if (warp_size != 32 && warp_size != 64) throw std::invalid_argument("host_block: warp_size must be 32 or 64");
    if (num_warps < 1 || num_warps * warp_size > 1024)
      throw std::invalid_argument("host_block: 1 to 1024/warp_size warps per block");
    lanes_.resize(static_cast<std::size_t>(warp_size * num_warps));
    stacks_.resize(lanes_.size());
    counts_.resize(static_cast<std::size_t>(num_warps));
  }
  host_block(const host_block&) = delete;
  host_block& operator=(const host_block&) = delete;

  int warp_size() const { return warp_size_; }
  int num_warps() const { return num_warps_; }
  int size() const { return warp_size_ * num_warps_; }

  /// Runs body(host_lane&) in every lane of the block until all return. Rethrows the first
  /// exception a lane threw; throws std::logic_error for divergent collectives.
  template <class Body>
  void run(Body&& body) {
    std::function<void(host_lane&)> erased = std::ref(body);
    run_erased(erased);
  }

  /// What warp `warp` did in the last run.
  const warp_counts& counts(int warp = 0) const { return counts_.at(static_cast<std::size_t>(warp)); }

  /// Record every apply/select of the next runs (cleared at each run).
  void set_tracing(bool on) { tracing_ = on; }
  const std::vector<trace_event>& trace() const { return trace_; }

 private:
  friend class host_lane;
  static constexpr std::size_t stack_bytes = 256 * 1024;

  static void trampoline();
  void run_erased(std::function<void(host_lane&)>& body);
  void suspend(host_lane& lane) { swapcontext(&lane.context_, &scheduler_); }
  bool resolve_warp(int warp);
  bool resolve_barrier();
  [[noreturn]] void report_stall() const;

  int warp_size_, num_warps_;
  std::vector<host_lane> lanes_;
  std::vector<std::unique_ptr<char[]>> stacks_;
  std::vector<warp_counts> counts_;
  std::vector<trace_event> trace_;
  bool tracing_ = false;
  std::function<void(host_lane&)>* body_ = nullptr;
  std::exception_ptr error_;
  ucontext_t scheduler_{};
  static inline thread_local host_block* starting_block_ = nullptr;
  static inline thread_local int starting_lane_ = 0;
};

// ----------------------------------------------------------------------------------------------
// host_lane

inline int host_lane::block_size() const { return block_->size(); }

inline std::uint32_t host_lane::shuffle(shuffle_mode mode, std::uint32_t word, int b, int width) {
  if (width < 1 || width > warp_size_ || (width & (width - 1)) != 0)
    throw std::invalid_argument("shuffle width must be a power of two no larger than the warp size, got " +
                                std::to_string(width));
  mode_ = mode;
  word_ = word;
  b_ = b;
  width_ = width;
  static constexpr const char* names[] = {"shfl_idx", "shfl_up", "shfl_down", "shfl_xor"};
  if (block_->tracing_) last_shuffle_ = std::string(names[static_cast<int>(mode)]) + " " + std::to_string(b);
  wait(waiting::shuffle);
  return static_cast<std::uint32_t>(result_);
}

inline std::uint64_t host_lane::ballot(bool predicate) {
  predicate_ = predicate;
  wait(waiting::ballot);
  return result_;
}
inline void host_lane::sync() { wait(waiting::sync); }
inline void host_lane::barrier() { wait(waiting::barrier); }

inline void host_lane::wait(waiting what) {
  waiting_ = what;
  block_->suspend(*this);
}

template <class T>
void host_lane::record(trace_event::kind what, const T& value) {
  if (!block_->tracing_) return;
  std::string text;
  if constexpr (requires { { to_trace_string(value) } -> std::convertible_to<std::string>; }) text = to_trace_string(value);
  block_->trace_.push_back(trace_event{rank_, what, last_shuffle_, std::move(text)});
  last_shuffle_.clear();
}

// ----------------------------------------------------------------------------------------------
// host_block

inline void host_block::trampoline() {
  host_block* self = starting_block_;
  host_lane& lane = self->lanes_[static_cast<std::size_t>(starting_lane_)];
  try {
    (*self->body_)(lane);
  } catch (...) {
    if (!self->error_) self->error_ = std::current_exception();
  }
  lane.done_ = true;
  lane.waiting_ = host_lane::waiting::none;
  // returning resumes uc_link, the scheduler
}

inline void host_block::run_erased(std::function<void(host_lane&)>& body) {
  body_ = &body;
  error_ = nullptr;
  trace_.clear();
  for (auto& c : counts_) c = warp_counts{};
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    host_lane& lane = lanes_[i];
    lane = host_lane{};
    lane.block_ = this;
    lane.rank_ = static_cast<int>(i);
    lane.warp_size_ = warp_size_;
    if (!stacks_[i]) stacks_[i].reset(new char[stack_bytes]);  // not zeroed: a stack needs no init
    getcontext(&lane.context_);
    lane.context_.uc_stack.ss_sp = stacks_[i].get();
    lane.context_.uc_stack.ss_size = stack_bytes;
    lane.context_.uc_link = &scheduler_;
    makecontext(&lane.context_, &host_block::trampoline, 0);
  }
  // Start every lane; each runs until its first collective or its end.
  for (std::size_t i = 0; i < lanes_.size() && !error_; ++i) {
    starting_block_ = this;
    starting_lane_ = static_cast<int>(i);
    swapcontext(&scheduler_, &lanes_[i].context_);
  }
  while (!error_) {
    bool all_done = true;
    for (const auto& lane : lanes_) all_done = all_done && lane.done_;
    if (all_done) break;
    bool progress = false;
    for (int w = 0; w < num_warps_ && !error_; ++w) progress = resolve_warp(w) || progress;
    if (!error_) progress = resolve_barrier() || progress;
    if (!progress && !error_) report_stall();
  }
  for (int w = 0; w < num_warps_; ++w) {
    for (int l = 0; l < warp_size_; ++l) {
      const host_lane& lane = lanes_[static_cast<std::size_t>(w * warp_size_ + l)];
      counts_[w].operator_applications = std::max(counts_[w].operator_applications, lane.operator_applications_);
      counts_[w].selects = std::max(counts_[w].selects, lane.selects_);
    }
  }
  if (error_) std::rethrow_exception(error_);
}

// Resolves the collective all lanes of warp `w` wait at, if they all wait at the same one.
inline bool host_block::resolve_warp(int w) {
  host_lane* first = &lanes_[static_cast<std::size_t>(w * warp_size_)];
  const auto kind = first->waiting_;
  if (kind == host_lane::waiting::none || kind == host_lane::waiting::barrier) return false;
  for (int l = 0; l < warp_size_; ++l) {
    const host_lane& lane = first[l];
    if (lane.waiting_ != kind) return false;  // not all there yet (or diverged: reported as a stall)
    if (kind == host_lane::waiting::shuffle && lane.mode_ != first->mode_) return false;
  }
  warp_counts& counts = counts_[static_cast<std::size_t>(w)];
  switch (kind) {
    case host_lane::waiting::shuffle: {
      ++counts.shuffles;
      std::array<std::uint32_t, 64> words{};
      for (int l = 0; l < warp_size_; ++l) words[static_cast<std::size_t>(l)] = first[l].word_;
      for (int l = 0; l < warp_size_; ++l)
        first[l].result_ = words[static_cast<std::size_t>(
            shuffle_source_lane(first[l].mode_, l, first[l].b_, first[l].width_, warp_size_))];
      break;
    }
    case host_lane::waiting::ballot: {
      ++counts.ballots;
      std::uint64_t mask = 0;
      for (int l = 0; l < warp_size_; ++l) mask |= std::uint64_t{first[l].predicate_} << l;
      for (int l = 0; l < warp_size_; ++l) first[l].result_ = mask;
      break;
    }
    default: ++counts.syncs; break;
  }
  for (int l = 0; l < warp_size_ && !error_; ++l) {
    first[l].waiting_ = host_lane::waiting::none;
    swapcontext(&scheduler_, &first[l].context_);
  }
  return true;
}

inline bool host_block::resolve_barrier() {
  for (const auto& lane : lanes_)
    if (lane.waiting_ != host_lane::waiting::barrier) return false;
  for (auto& lane : lanes_) {
    if (error_) break;
    lane.waiting_ = host_lane::waiting::none;
    swapcontext(&scheduler_, &lane.context_);
  }
  return true;
}

inline void host_block::report_stall() const {
  static constexpr const char* names[] = {"running", "a shuffle", "a ballot", "a warp sync", "the block barrier"};
  std::string what = "host_block: lanes diverged at warp-collective calls (a hang or undefined behaviour on a GPU):";
  int shown = 0;
  for (const auto& lane : lanes_) {
    if (shown++ == 8) break;
    what += " thread " + std::to_string(lane.rank_) + (lane.done_ ? " returned;" : " waits at " + std::string(names[static_cast<int>(lane.waiting_)]) + ";");
  }
  throw std::logic_error(what);
}

/// Runs body(host_lane&) in every lane of one emulated warp of `warp_size` lanes and returns what
/// the warp did. Convenience for host_block(warp_size, 1).run(body).
template <class Body>
warp_counts emulate_warp(int warp_size, Body&& body) {
  host_block block(warp_size, 1);
  block.run(std::forward<Body>(body));
  return block.counts(0);
}

}  // namespace multireduce
