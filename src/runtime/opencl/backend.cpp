// runtime/opencl/backend.cpp -- the backend "opencl": the runtime's jobs on any OpenCL device (a GPU
// through its vendor's OpenCL, a CPU through PoCL), host arrays in, read piece by piece into the
// device's memory (algorithms.hpp has the device side); or arrays already in an OpenCL context's
// memory (PyOpenCL's), read in place on the caller's queue. Host data runs here only when named:
// "auto" keeps to CUDA and the CPU backend; data in OpenCL memory runs here with "auto" too.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <variant>
#include <vector>

#include <multireduce/cpu/statistics.hpp>
#include <multireduce/match/match.hpp>
#include <multireduce/operators.hpp>
#include <multireduce/statistics.hpp>

#include "../backend.hpp"
#include "../bad_offset.hpp"
#include "../pieces.hpp"
#include "algorithms.hpp"
#include "device.hpp"

namespace multireduce::runtime {
namespace {

using namespace opencl;

/// The type elements of T are reduced in on the device: float16 as float.
template <class T>
using value_t = std::conditional_t<std::is_same_v<T, float16_bits>, float, T>;

constexpr std::int64_t no_position = std::numeric_limits<std::int64_t>::max();

/// Calls f(op_functor, identity) with the host operator of `op` over values of E and its identity
/// as the device's accumulator (argmin/argmax: key_value<E, int64>).
template <class E, class F>
void with_operator(op_kind op, F&& f) {
  using kv = key_value<E, std::int64_t>;
  if (op == op_kind::argmin) return f(multireduce::argmin{}, multireduce::argmin::identity<kv>());
  if (op == op_kind::argmax) return f(multireduce::argmax{}, multireduce::argmax::identity<kv>());
  visit_value_op<E>(op, std::forward<F>(f));
}

template <class Acc>
std::span<const std::byte> bytes_of(const Acc& a) {
  return {reinterpret_cast<const std::byte*>(&a), sizeof(Acc)};
}

/// An accumulator's position moved by `offset` (positions of a piece, or rows of a part).
template <class Acc>
Acc shifted(Acc a, std::int64_t offset) {
  if constexpr (requires { a.index; }) {
    if (a.index >= 0 && a.index != no_position) a.index += offset;
  }
  return a;
}

/// Writes n device outputs (float accumulators of float16 rounded to float16, the others as they
/// are: uint64 sums land as int64 with the same bits) to the sink.
template <class T>
void write_outputs(const std::vector<std::byte>& device_out, std::int64_t n, std::size_t bytes, output_sink& out) {
  if (n == 0) return;
  if constexpr (std::is_same_v<T, float16_bits>) {
    if (bytes == sizeof(float)) {
      std::vector<float16_bits> h(static_cast<std::size_t>(n));
      const auto* f = reinterpret_cast<const float*>(device_out.data());
      for (std::int64_t i = 0; i < n; ++i) h[std::size_t(i)] = to_float16(f[i]);
      return out.write(h.data(), n);
    }
  }
  out.write(device_out.data(), n);
}

/// A device buffer that grows to the largest piece it has held.
struct growing_buffer {
  cl::Buffer buffer;
  std::size_t bytes = 0;
  const char* what;
  const cl::Buffer& at_least(device& d, std::size_t needed) {
    if (needed > bytes || bytes == 0) {
      buffer = allocate(d, std::max<std::size_t>(needed, 1), what);
      bytes = std::max<std::size_t>(needed, 1);
    }
    return buffer;
  }
};

void upload(device& d, const cl::Buffer& b, const void* data, std::size_t bytes) {
  if (bytes > 0) d.queue.enqueueWriteBuffer(b, CL_TRUE, 0, bytes, data);
}
std::vector<std::byte> download(device& d, const cl::Buffer& b, std::size_t bytes) {
  std::vector<std::byte> host(bytes);
  if (bytes > 0) d.queue.enqueueReadBuffer(b, CL_TRUE, 0, bytes, host.data());
  return host;
}

/// Element i of an array of T downloaded as bytes (accumulators, states).
template <class T>
T element_at(const std::vector<std::byte>& host, std::size_t i) {
  T x;
  std::memcpy(&x, host.data() + i * sizeof(T), sizeof(T));
  return x;
}

/// How a job on one device went: kernel time (events), and the rest of the wall time but the
/// programs built on the way (copies to and from the device, reading the input). PoCL compiles a
/// kernel at its first launch, not when its program is built: that time still counts as the rest.
/// An untimed clock (a caller's queue, which may not profile) adds no kernel time.
struct job_clock {
  explicit job_clock(const device& d, bool timed = true) : building_before(d.seconds_building()), timed(timed) {}
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  double building_before;
  bool timed;
  double kernels = 0;
  void add(const events& ev) {
    if (timed) kernels += elapsed_seconds(ev);
  }
  void report_to(report& r, device& d, int ordinal) const {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double building = d.seconds_building() - building_before;  // programs built on first use
    r.device = ordinal;
    r.device_name = d.name;
    r.seconds = kernels;
    r.transfer_seconds = std::max(0.0, wall - kernels - building);
  }
};

/// Elements a piece holds: the source's piece, at most 2^27 and what the device allocates at once.
std::int64_t piece_cap(const device& d, const array_source& in) {
  const std::int64_t most = std::int64_t(d.max_alloc / std::max<std::size_t>(size_of(in.type()), 1)) / 2;
  return std::clamp<std::int64_t>(in.piece_elements(), std::int64_t{1} << 16,
                                  std::max<std::int64_t>(1, std::min<std::int64_t>(std::int64_t{1} << 27, most)));
}

/// A job's input as buffers in the device's memory, piece by piece: a host source uploaded a piece
/// at a time, or an array already there (one piece: the whole array).
class device_input {
 public:
  virtual ~device_input() = default;
  virtual dtype type() const = 0;
  virtual std::int64_t count() const = 0;
  /// Elements a piece holds.
  virtual std::int64_t cap() const = 0;
  /// Elements [first, first + n) in host memory, at most 64 of them (n <= 64): what the statistics
  /// take their shift from. Valid until the next call.
  virtual const void* head(std::int64_t first, std::int64_t n) = 0;
  /// A buffer that holds elements [first, first + n) from its start (n <= cap()), valid until the
  /// next call; `first` never goes back.
  virtual const cl::Buffer& load(std::int64_t first, std::int64_t n) = 0;
};

/// A host source, uploaded piece by piece into one growing buffer.
class uploaded_input final : public device_input {
 public:
  uploaded_input(device& d, array_source& in) : d_(d), in_(in), cap_(piece_cap(d, in)) {}
  dtype type() const override { return in_.type(); }
  std::int64_t count() const override { return in_.count(); }
  std::int64_t cap() const override { return cap_; }
  const void* head(std::int64_t first, std::int64_t n) override { return in_.read(first, n); }
  const cl::Buffer& load(std::int64_t first, std::int64_t n) override {
    const std::size_t bytes = std::size_t(n) * size_of(type());
    const cl::Buffer& b = buffer_.at_least(d_, bytes);
    upload(d_, b, n > 0 ? in_.read(first, n) : nullptr, bytes);
    return b;
  }

 private:
  device& d_;
  array_source& in_;
  std::int64_t cap_;
  growing_buffer buffer_{{}, 0, "a piece of the input"};
};

/// An array in the device's memory: the whole array is the one piece.
class resident_input final : public device_input {
 public:
  resident_input(device& d, const array_view& a, cl::Buffer buffer) : d_(d), a_(a), buffer_(std::move(buffer)) {}
  dtype type() const override { return a_.type; }
  std::int64_t count() const override { return a_.count; }
  std::int64_t cap() const override { return std::max<std::int64_t>(a_.count, 1); }
  const void* head(std::int64_t first, std::int64_t n) override {
    head_.resize(std::size_t(n) * size_of(a_.type));
    if (n > 0) d_.queue.enqueueReadBuffer(buffer_, CL_TRUE, std::size_t(first) * size_of(a_.type), head_.size(), head_.data());
    return head_.data();
  }
  const cl::Buffer& load(std::int64_t first, std::int64_t n) override {
    if (first != 0 || n > a_.count) throw std::logic_error("resident_input: an array in device memory is one piece");
    return buffer_;
  }

 private:
  device& d_;
  array_view a_;
  cl::Buffer buffer_;
  std::vector<std::byte> head_;
};

// ---- reductions -----------------------------------------------------------------------------------

template <class T>
void reduce_whole(device& d, lanes l, const reduce_job& job, device_input& in, output_sink& out, job_clock& clock,
                  const progress_report& progress) {
  using E = value_t<T>;
  const dtype type = in.type();
  with_operator<E>(job.op, [&](auto op, auto init) {
    using Acc = decltype(init);
    const std::int64_t n = in.count(), cap = in.cap();
    growing_buffer partials{{}, 0, "the parts' folds"};
    Acc total = init;
    for (std::int64_t first = 0; first < n; first += cap) {
      const std::int64_t count = std::min(cap, n - first);
      const cl::Buffer& b = in.load(first, count);
      const std::int64_t parts = whole_parts(d, count);
      const cl::Buffer& p = partials.at_least(d, std::size_t(parts) * sizeof(Acc));
      events ev;
      reduce_parts(d, l, type, job.op, bytes_of(init), b, count, p, &ev);
      clock.add(ev);
      const auto host = download(d, p, std::size_t(parts) * sizeof(Acc));
      for (std::int64_t g = 0; g < parts; ++g) total = op(total, shifted(element_at<Acc>(host, std::size_t(g)), first));
      progress(first + count);
    }
    if constexpr (requires { total.index; }) {
      const std::int64_t index = total.index == no_position ? -1 : total.index;
      out.write(&index, 1);
    } else if constexpr (std::is_same_v<T, float16_bits>) {
      const float16_bits h = to_float16(total);
      out.write(&h, 1);
    } else {
      out.write(&total, 1);
    }
  });
}

/// Accumulators as outputs: positions (-1 for none), float16 rounded, or as they are.
template <class T, class Acc>
void write_accumulators(const std::vector<Acc>& acc, output_sink& out) {
  if (acc.empty()) return;
  if constexpr (requires { acc[0].index; }) {
    std::vector<std::int64_t> index(acc.size());
    for (std::size_t i = 0; i < acc.size(); ++i) index[i] = acc[i].index == no_position ? -1 : acc[i].index;
    out.write(index.data(), std::int64_t(index.size()));
  } else if constexpr (std::is_same_v<T, float16_bits>) {
    std::vector<float16_bits> h(acc.size());
    for (std::size_t i = 0; i < acc.size(); ++i) h[i] = to_float16(acc[i]);
    out.write(h.data(), std::int64_t(h.size()));
  } else {
    out.write(acc.data(), std::int64_t(acc.size()));
  }
}

/// An axis that is not the last: columns folded row after row, in whole outer blocks per piece
/// where one fits, else in runs of rows of one block, their folds taken on the host in order.
template <class T>
void reduce_columns_job(device& d, lanes l, const reduce_job& job, device_input& in, output_sink& out, job_clock& clock,
                        const progress_report& progress) {
  using E = value_t<T>;
  const dtype type = in.type();
  with_operator<E>(job.op, [&](auto op, auto init) {
    using Acc = decltype(init);
    const std::int64_t outer = job.segments, rows = job.length, inner = job.inner, cap = in.cap();
    const std::int64_t block = rows * inner;
    growing_buffer partials{{}, 0, "the columns' folds"};
    // Folds `count` rows (row_offset the first's row) of `blocks` blocks read from element `first`
    // into acc (blocks x inner accumulators).
    auto fold = [&](std::int64_t first, std::int64_t blocks, std::int64_t count, std::int64_t row_offset,
                    std::vector<Acc>& acc) {
      const cl::Buffer& b = in.load(first, blocks * count * inner);
      const std::int64_t parts = column_parts(blocks, count, inner), outputs = blocks * inner;
      const cl::Buffer& p = partials.at_least(d, std::size_t(parts * outputs) * sizeof(Acc));
      events ev;
      reduce_columns(d, l, type, job.op, bytes_of(init), b, blocks, count, inner, p, &ev);
      clock.add(ev);
      const auto host = download(d, p, std::size_t(parts * outputs) * sizeof(Acc));
      for (std::int64_t part = 0; part < parts; ++part)
        for (std::int64_t i = 0; i < outputs; ++i)
          acc[std::size_t(i)] =
              op(acc[std::size_t(i)], shifted(element_at<Acc>(host, std::size_t(part * outputs + i)), row_offset));
    };
    if (block <= cap) {
      const std::int64_t per = std::max<std::int64_t>(1, cap / std::max<std::int64_t>(block, 1));
      for (std::int64_t o = 0; o < outer; o += per) {
        const std::int64_t blocks = std::min(per, outer - o);
        std::vector<Acc> acc(std::size_t(blocks * inner), init);
        if (block > 0) fold(o * block, blocks, rows, 0, acc);
        write_accumulators<T>(acc, out);
        progress((o + blocks) * block);
      }
      return;
    }
    const std::int64_t rows_per_piece = std::max<std::int64_t>(1, cap / inner);
    for (std::int64_t o = 0; o < outer; ++o) {
      std::vector<Acc> acc(std::size_t(inner), init);
      for (std::int64_t k = 0; k < rows; k += rows_per_piece) {
        const std::int64_t count = std::min(rows_per_piece, rows - k);
        fold((o * rows + k) * inner, 1, count, k, acc);
        progress((o * rows + k + count) * inner);
      }
      write_accumulators<T>(acc, out);
    }
  });
}

/// Segments and windows: each piece (whole segments, whole windows) in device memory, its outputs
/// back to the sink in order.
template <class T>
void reduce_pieces(device& d, lanes l, const reduce_job& job, array_source& in, output_sink& out, job_clock& clock,
                   const progress_report& progress) {
  using E = value_t<T>;
  const dtype type = in.type();
  with_operator<E>(job.op, [&](auto, auto init) {
    const std::size_t out_bytes = output_bytes(type, job.op);
    growing_buffer input{{}, 0, "a piece of the input"}, offsets{{}, 0, "the segments' offsets"},
        outputs{{}, 0, "the outputs"};
    pieces::for_each(job, piece_cap(d, in), [&](pieces::piece& p) {
      const std::size_t bytes = std::size_t(p.count) * size_of(type);
      const cl::Buffer& b = input.at_least(d, bytes);
      upload(d, b, p.count > 0 ? in.read(p.first, p.count) : nullptr, bytes);
      const std::int64_t n_out = output_count(p.sub);
      const cl::Buffer& o = outputs.at_least(d, std::size_t(n_out) * out_bytes);
      events ev;
      if (job.shape == shape_kind::window) {
        reduce_windows(d, l, type, job.op, bytes_of(init), b, p.count, job.length, o, &ev);
      } else {
        segment_shape shape;
        shape.segments = p.sub.segments;
        shape.length = p.sub.length;
        if (job.shape == shape_kind::offsets) {
          const cl::Buffer& ob = offsets.at_least(d, p.offsets.size() * 8);
          upload(d, ob, p.offsets.data(), p.offsets.size() * 8);
          shape.offsets = &ob;
          for (std::size_t s = 0; s + 1 < p.offsets.size(); ++s)
            shape.longest = std::max(shape.longest, p.offsets[s + 1] - p.offsets[s]);
        }
        reduce_segments(d, l, type, job.op, bytes_of(init), b, p.count, shape, o, &ev);
      }
      clock.add(ev);
      write_outputs<T>(download(d, o, std::size_t(n_out) * out_bytes), n_out, out_bytes, out);
      progress(p.first + p.count);
    });
  });
}

// ---- statistics -------------------------------------------------------------------------------------

/// statistics.cl's stats_state.
template <class E>
struct device_state {
  std::int64_t count;
  std::conditional_t<std::is_floating_point_v<E>, double, std::uint64_t> sum;
  double s1, s2, l1, squares;
  key_value<E, std::int64_t> min, max;
};

template <class T>
any_statistics statistics_typed(device& d, device_input& in, job_clock& clock, const progress_report& progress) {
  using E = value_t<T>;
  using state = device_state<E>;
  using accumulator = statistics_accumulator<E>;
  static_assert(sizeof(state) == 80, "statistics.cl's stats_state");
  const dtype type = in.type();
  const std::int64_t n = in.count(), cap = in.cap();
  growing_buffer states{{}, 0, "the parts' statistics"};
  accumulator total;
  for (std::int64_t first = 0; first < n; first += cap) {
    const std::int64_t count = std::min(cap, n - first);
    const void* data = in.head(first, std::min<std::int64_t>(count, 64));
    double shift = 0;  // the piece's first finite value: near the data
    for (std::int64_t i = 0; i < std::min<std::int64_t>(count, 64); ++i) {
      double v;
      if constexpr (std::is_same_v<T, float16_bits>) v = to_float(static_cast<const float16_bits*>(data)[i]);
      else v = static_cast<double>(static_cast<const T*>(data)[i]);
      if (std::isfinite(v)) {
        shift = v;
        break;
      }
    }
    const cl::Buffer& b = in.load(first, count);
    const std::int64_t parts = statistics_parts(d, count);
    const cl::Buffer& s = states.at_least(d, std::size_t(parts) * sizeof(state));
    events ev;
    opencl::statistics(d, type, b, count, shift, s, &ev);
    clock.add(ev);
    const auto host = download(d, s, std::size_t(parts) * sizeof(state));
    auto part_state = [&](const state& st) {
      const auto sum = static_cast<typename accumulator::sum_type>(st.sum);
      return accumulator::from_shifted_sums(st.count, shift, st.s1, st.s2, sum, st.l1, st.squares, st.min.value,
                                            st.min.index + first, st.max.value, st.max.index + first);
    };
    // float64: values near double's largest, an inf or a NaN can make a part's count shift + s1
    // inf - inf (statistics.hpp). Then the piece is taken again on the host by the CPU backend,
    // whose chunks take the scaled cold path, as the runtime's pieces are merged.
    [[maybe_unused]] const accumulator before = total;
    [[maybe_unused]] bool overflowed = false;
    for (std::int64_t g = 0; g < parts; ++g) {
      const state st = element_at<state>(host, std::size_t(g));
      if (st.count == 0) continue;
      total = accumulator::merge(total, part_state(st));
      if constexpr (accumulator::shifted_sums_may_overflow)
        overflowed = overflowed || accumulator::shifted_sums_overflowed(st.count, shift, st.s1, st.s2) ||
                     !(st.sum - st.sum == 0);
    }
    if constexpr (accumulator::shifted_sums_may_overflow) {
      if (overflowed) {
        std::vector<E> values(static_cast<std::size_t>(count));
        std::memcpy(values.data(), download(d, b, values.size() * sizeof(E)).data(), values.size() * sizeof(E));
        const auto piece = multireduce::cpu::statistics(values.data(), count);
        total = accumulator::merge(before, accumulator::of_result(piece, first));
      }
    }
    progress(first + count);
  }
  return total.result();
}

// ---- arrays in an OpenCL context's memory (PyOpenCL's), on the caller's queue -----------------------

/// The buffer `handle` (a cl_mem, retained) of d's context, at least `bytes` long; for a null handle
/// (an empty array) a buffer of one byte. Throws std::invalid_argument naming `what` for a handle
/// that is no buffer, a buffer of another context or one too small.
cl::Buffer buffer_at(device& d, const void* handle, std::size_t bytes, const std::string& what) {
  if (handle == nullptr) {
    if (bytes > 0) throw std::invalid_argument(what + " has no buffer (a null cl_mem)");
    return allocate(d, 1, "an empty array's buffer");
  }
  const auto mem = static_cast<cl_mem>(const_cast<void*>(handle));
  cl_context context = nullptr;
  std::size_t size = 0;
  if (clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof context, &context, nullptr) != CL_SUCCESS ||
      clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, nullptr) != CL_SUCCESS)
    throw std::invalid_argument(what + " is not a valid OpenCL buffer (released?)");
  if (context != d.context())
    throw std::invalid_argument(what + " is a buffer of another OpenCL context than the queue's: put the arrays of "
                                       "one call in one context");
  if (size < bytes)
    throw std::invalid_argument(what + " is a buffer of " + std::to_string(size) + " bytes, fewer than the " +
                                std::to_string(bytes) + " it must hold");
  return cl::Buffer(mem, true);
}

/// Outputs collected in host memory as a job produces them (bytes of the output's dtype).
class collected_sink final : public output_sink {
 public:
  explicit collected_sink(dtype type) : size_(size_of(type)) {}
  void write(const void* values, std::int64_t n) override {
    const auto* b = static_cast<const std::byte*>(values);
    bytes.insert(bytes.end(), b, b + std::size_t(n) * size_);
  }
  std::vector<std::byte> bytes;

 private:
  std::size_t size_;
};

/// Results finished on the host to where the output is: its buffer (written on the queue, waited
/// for: `bytes` is the caller's) or host memory.
void deliver(device& d, const output_view& out, const cl::Buffer& buffer, const std::vector<std::byte>& bytes) {
  if (bytes.empty()) return;
  if (out.where.is_host()) std::memcpy(out.data, bytes.data(), bytes.size());
  else d.queue.enqueueWriteBuffer(buffer, CL_TRUE, 0, bytes.size(), bytes.data());
}

/// The segments' offsets as a buffer on d (device offsets as they are, host offsets uploaded),
/// read back and checked (the runtime checks offsets in device memory where they are read);
/// `longest` gets the longest segment.
cl::Buffer checked_offsets(device& d, const reduce_job& job, std::int64_t& longest) {
  const std::size_t bytes = std::size_t(job.segments + 1) * 8;
  std::vector<std::int64_t> o(std::size_t(job.segments + 1));
  cl::Buffer buffer;
  if (job.offsets_where.is_host()) {
    std::memcpy(o.data(), job.offsets, bytes);
    buffer = allocate(d, bytes, "the segments' offsets");
    upload(d, buffer, o.data(), bytes);
  } else {
    buffer = buffer_at(d, job.offsets, bytes, "the offsets");
    d.queue.enqueueReadBuffer(buffer, CL_TRUE, 0, bytes, o.data());
  }
  longest = 0;
  for (std::int64_t s = 0; s <= job.segments; ++s) {
    const std::int64_t v = o[std::size_t(s)], previous = s > 0 ? o[std::size_t(s - 1)] : 0;
    if ((s == 0 ? v < 0 : v < previous) || (s == job.segments && v > job.input.count))
      throw_bad_offset(s, previous, v, job.input.count);
    if (s > 0) longest = std::max(longest, v - previous);
  }
  return buffer;
}

/// Segments and windows of an array in device memory: the kernels write the outputs into the
/// output's buffer, queued and not waited for, where they are the output's dtype; float16's (floats
/// on the device) and outputs to host memory are finished on the host.
template <class T>
void segments_in_place(device& d, lanes l, const reduce_job& job, const cl::Buffer& in, const output_view& out,
                       const cl::Buffer& out_buffer) {
  using E = value_t<T>;
  const dtype type = job.input.type;
  const std::int64_t n = job.input.count, outputs = output_count(job);
  if (outputs == 0) return;
  with_operator<E>(job.op, [&](auto, auto init) {
    const std::size_t each = output_bytes(type, job.op);
    const bool direct = !out.where.is_host() && each == size_of(out.type);
    const cl::Buffer target = direct ? out_buffer : allocate(d, std::size_t(outputs) * each, "the outputs");
    if (job.shape == shape_kind::window) {
      reduce_windows(d, l, type, job.op, bytes_of(init), in, n, job.length, target);
    } else {
      segment_shape shape;
      shape.segments = job.segments;
      shape.length = job.length;
      cl::Buffer offsets;
      if (job.shape == shape_kind::offsets) {
        offsets = checked_offsets(d, job, shape.longest);
        shape.offsets = &offsets;
      }
      reduce_segments(d, l, type, job.op, bytes_of(init), in, n, shape, target);
    }
    if (direct) return;
    collected_sink host(out.type);
    write_outputs<T>(download(d, target, std::size_t(outputs) * each), outputs, each, host);
    deliver(d, out, out_buffer, host.bytes);
  });
}

// ---- the matcher --------------------------------------------------------------------------------------

/// k nearest training rows of each query row, the sets already in device memory.
void knn_on_device(device& d, const cl::Buffer& query, std::int64_t query_first, std::int64_t queries,
                   const cl::Buffer& train, std::int64_t train_first, std::int64_t trains, int bytes, int k,
                   std::vector<std::int32_t>& idx, std::vector<std::int32_t>& dist, job_clock& clock) {
  idx.assign(std::size_t(queries * k), -1);
  dist.assign(idx.size(), -1);
  if (queries == 0) return;
  cl::Buffer idx_d = allocate(d, idx.size() * 4, "the neighbours"), dist_d = allocate(d, idx.size() * 4, "the distances");
  events ev;
  knn_hamming(d, query, query_first, queries, train, train_first, trains, bytes, k, idx_d, dist_d, &ev);
  clock.add(ev);
  d.queue.enqueueReadBuffer(idx_d, CL_TRUE, 0, idx.size() * 4, idx.data());
  d.queue.enqueueReadBuffer(dist_d, CL_TRUE, 0, dist.size() * 4, dist.data());
}

// ---- the backend --------------------------------------------------------------------------------------

/// Runs `job` on device `ordinal` and turns OpenCL's errors into the runtime's.
template <class F>
void on_device(int ordinal, const char* what, F&& job) {
  device& d = device_at(ordinal);
  try {
    job(d);
  } catch (const cl::Error& e) {
    fail(e, what + std::string(" on ") + d.name);
  }
}

class opencl_runtime_backend final : public backend {
 public:
  std::string_view name() const override { return "opencl"; }
  std::string_view summary() const override {
    return "any OpenCL device: a GPU through its vendor's OpenCL, the CPU through PoCL (host arrays only when "
           "named; PyOpenCL arrays in place)";
  }
  std::string_view noun() const override { return "the OpenCL device"; }
  memory device_memory() const override { return memory::of("opencl"); }
  bool automatic_for_host_data() const override { return false; }
  int device_of_stream(void* stream) const override { return ordinal_of_queue(stream); }
  int device_count() const override { return opencl::device_count(); }
  std::string describe_device(int ordinal) const override {
    if (ordinal < 0 || ordinal >= opencl::device_count()) return "OpenCL device " + std::to_string(ordinal);
    return device_at(ordinal).describe(ordinal);
  }

  refusal unsupported(const reduce_job& job, const device_set& devices) const override {
    if (refusal r = unusable(devices); !r.empty()) return r;
    if (const std::string why = unsupported_type(device_at(devices.first()), job.input.type); !why.empty())
      return {why, true};
    return {};
  }
  refusal unsupported_statistics(dtype type, const device_set& devices) const override {
    if (refusal r = unusable(devices); !r.empty()) return r;
    const device& d = device_at(devices.first());
    if (!d.fp64) return {"the statistics add in float64 (cl_khr_fp64), which " + d.name + " does not have", true};
    (void)type;
    return {};
  }
  refusal unsupported_knn(int, const device_set& devices) const override { return unusable(devices); }

  void reduce(const reduce_job& job, array_source& in, output_sink& out, const execution& exec,
              report& r) const override {
    const int ordinal = exec.devices.first();
    on_device(ordinal, "a reduction", [&](device& d) {
      const lanes l = choose_lanes(d);
      job_clock clock{d};
      const progress_report progress{exec, in.count()};
      uploaded_input pieces{d, in};
      visit(in.type(), [&](auto element) {
        using T = decltype(element);
        switch (job.shape) {
          case shape_kind::whole: return reduce_whole<T>(d, l, job, pieces, out, clock, progress);
          case shape_kind::axis:
            if (job.inner == 1) {  // the rows of the last axis: segments of the axis' length
              reduce_job rows = job;
              rows.shape = shape_kind::fixed_segments;
              return reduce_pieces<T>(d, l, rows, in, out, clock, progress);
            }
            return reduce_columns_job<T>(d, l, job, pieces, out, clock, progress);
          default: return reduce_pieces<T>(d, l, job, in, out, clock, progress);
        }
      });
      clock.report_to(r, d, ordinal);
    });
    r.bytes_read = in.count() * std::int64_t(size_of(in.type())) +
                   (job.shape == shape_kind::offsets ? (job.segments + 1) * 8 : 0);
  }

  void statistics(array_source& in, any_statistics& out, const execution& exec, report& r) const override {
    const int ordinal = exec.devices.first();
    on_device(ordinal, "the statistics", [&](device& d) {
      job_clock clock{d};
      const progress_report progress{exec, in.count()};
      uploaded_input pieces{d, in};
      visit(in.type(), [&](auto element) { out = statistics_typed<decltype(element)>(d, pieces, clock, progress); });
      clock.report_to(r, d, ordinal);
    });
    r.bytes_read = in.count() * std::int64_t(size_of(in.type()));
  }

  void knn(const knn_job& job, knn_result& out, const execution& exec, report& r) const override {
    check_match_arguments(job.queries, job.trains, job.bytes, job.k);
    const int ordinal = exec.devices.first();
    on_device(ordinal, "the k-NN search", [&](device& d) {
      job_clock clock{d};
      const std::size_t qb = std::size_t(job.queries) * std::size_t(job.bytes), tb = std::size_t(job.trains) * std::size_t(job.bytes);
      cl::Buffer query = allocate(d, qb, "the queries"), train = allocate(d, tb, "the training set");
      upload(d, query, job.query, qb);
      upload(d, train, job.train, tb);
      knn_on_device(d, query, 0, job.queries, train, 0, job.trains, job.bytes, job.k, out.idx, out.dist, clock);
      if (job.reverse) {
        std::vector<std::int32_t> reverse_dist;
        knn_on_device(d, train, 0, job.trains, query, 0, job.queries, job.bytes, 1, out.reverse_nearest, reverse_dist,
                      clock);
      }
      if (exec.progress) exec.progress(job.queries * job.trains, job.queries * job.trains);
      clock.report_to(r, d, ordinal);
    });
    r.bytes_read = (job.queries + job.trains) * job.bytes;
    r.bytes_written = 2 * job.queries * job.k * 4;
  }

  void match_collection(const collection_job& job, const pair_matches_callback& done, const execution& exec,
                        report& r) const override {
    if (!job.where.is_host()) throw std::invalid_argument("the OpenCL backend matches collections in host memory");
    const descriptor_collection& c = job.collection;
    check_match_rule(job.rule);
    check_collection(c, job.pairs, job.k);
    if ((job.rule.ratio > 0 || job.rule.margin >= 0) && job.k < 2)
      throw std::invalid_argument("the ratio and margin tests need k >= 2");
    const int ordinal = exec.devices.first();
    on_device(ordinal, "the collection matcher", [&](device& d) {
      job_clock clock{d};
      const std::int64_t rows = c.offsets.empty() ? 0 : c.offsets.back();
      const std::size_t bytes = std::size_t(rows) * std::size_t(c.bytes);
      cl::Buffer all = allocate(d, bytes, "the collection's descriptors");
      upload(d, all, c.rows, bytes);
      std::int64_t total = 0, compared = 0;
      for (const image_pair& p : job.pairs) total += c.rows_of(p.first) * c.rows_of(p.second);
      std::vector<std::int32_t> idx, dist, reverse, reverse_dist;
      for (std::size_t i = 0; i < job.pairs.size(); ++i) {
        const image_pair p = job.pairs[i];
        const std::int64_t queries = c.rows_of(p.first), trains = c.rows_of(p.second);
        const std::int64_t q0 = c.offsets[std::size_t(p.first)], t0 = c.offsets[std::size_t(p.second)];
        knn_on_device(d, all, q0, queries, all, t0, trains, c.bytes, job.k, idx, dist, clock);
        if (job.rule.cross_check)
          knn_on_device(d, all, t0, trains, all, q0, queries, c.bytes, 1, reverse, reverse_dist, clock);
        const auto kept = accept_matches(idx.data(), dist.data(), queries, job.k, job.rule,
                                         job.rule.cross_check ? reverse.data() : nullptr);
        done(std::int64_t(i), kept);
        compared += queries * trains;
        if (exec.progress) exec.progress(compared, total);
      }
      clock.report_to(r, d, ordinal);
    });
  }
  // Arrays in an OpenCL context's memory: array_view::data and output_view::data are cl_mem handles
  // of that context (element 0 at the buffer's start), exec.stream the cl_command_queue (of that
  // context) that every command goes on, in order. Segments and windows into a device output are
  // queued and not waited for; whole-array and axis results and statistics are finished on the host
  // from the parts' folds (a few KiB read back), so those calls wait for the queue.

  void reduce(const reduce_job& job, const output_view& out, const execution& exec, report& r) const override {
    if (job.input.where.is_host())
      throw std::invalid_argument("the OpenCL backend takes an output in OpenCL memory only for an input there too");
    queue_device q = on_queue(exec.stream);
    device& d = q.d;
    try {
      const lanes l = choose_lanes(d);
      const cl::Buffer in = buffer_at(d, job.input.data, std::size_t(job.input.count) * size_of(job.input.type), "the input");
      const std::size_t out_bytes = std::size_t(out.count) * size_of(out.type);
      const cl::Buffer out_buffer = out.where.is_host() ? cl::Buffer() : buffer_at(d, out.data, out_bytes, "the output");
      job_clock clock{d, false};
      const progress_report progress{exec, job.input.count};
      visit(job.input.type, [&](auto element) {
        using T = decltype(element);
        if (job.shape == shape_kind::whole || job.shape == shape_kind::axis) {
          resident_input whole{d, job.input, in};
          collected_sink results(out.type);
          if (job.shape == shape_kind::whole) reduce_whole<T>(d, l, job, whole, results, clock, progress);
          else reduce_columns_job<T>(d, l, job, whole, results, clock, progress);
          deliver(d, out, out_buffer, results.bytes);
        } else {
          segments_in_place<T>(d, l, job, in, out, out_buffer);
        }
      });
    } catch (const cl::Error& e) {
      fail(e, "a reduction on " + d.name);
    }
    r.device = q.ordinal;
    r.device_name = d.name;
    r.bytes_read = job.input.count * std::int64_t(size_of(job.input.type)) +
                   (job.shape == shape_kind::offsets ? (job.segments + 1) * 8 : 0);
  }

  void statistics(const array_view& in, const output_view& out, const execution& exec, report& r) const override {
    if (in.where.is_host())
      throw std::invalid_argument("the OpenCL backend takes an output in OpenCL memory only for an input there too");
    queue_device q = on_queue(exec.stream);
    device& d = q.d;
    try {
      resident_input whole{d, in, buffer_at(d, in.data, std::size_t(in.count) * size_of(in.type), "the input")};
      const cl::Buffer out_buffer =
          out.where.is_host() ? cl::Buffer() : buffer_at(d, out.data, std::size_t(out.count), "the output");
      job_clock clock{d, false};
      const progress_report progress{exec, in.count};
      visit(in.type, [&](auto element) {
        const any_statistics result = statistics_typed<decltype(element)>(d, whole, clock, progress);
        std::visit(
            [&](const auto& s) {
              const auto* b = reinterpret_cast<const std::byte*>(&s);
              deliver(d, out, out_buffer, std::vector<std::byte>(b, b + sizeof s));
            },
            result);
      });
    } catch (const cl::Error& e) {
      fail(e, "the statistics on " + d.name);
    }
    r.device = q.ordinal;
    r.device_name = d.name;
    r.bytes_read = in.count * std::int64_t(size_of(in.type));
    r.bytes_written = out.count;
  }

  void knn(const knn_device_job& job, const execution& exec, report& r) const override {
    queue_device q = on_queue(exec.stream);
    device& d = q.d;
    const std::size_t rows = std::size_t(job.queries) * std::size_t(job.k) * 4, bytes = std::size_t(job.bytes);
    try {
      const cl::Buffer query = buffer_at(d, job.query, std::size_t(job.queries) * bytes, "the queries");
      const cl::Buffer train = buffer_at(d, job.train, std::size_t(job.trains) * bytes, "the training set");
      const cl::Buffer idx = buffer_at(d, job.idx, rows, "the neighbours' output");
      const cl::Buffer dist = buffer_at(d, job.dist, rows, "the distances' output");
      if (job.queries > 0) knn_hamming(d, query, 0, job.queries, train, 0, job.trains, job.bytes, job.k, idx, dist);
    } catch (const cl::Error& e) {
      fail(e, "the k-NN search on " + d.name);
    }
    r.device = q.ordinal;
    r.device_name = d.name;
    r.bytes_read = (job.queries + job.trains) * job.bytes;
    r.bytes_written = 2 * job.queries * job.k * 4;
  }

 private:
  static refusal unusable(const device_set& devices) {
    if (opencl::device_count() == 0) return {why_no_device()};
    if (!devices.single()) return {"runs a job on one OpenCL device at a time (--device N)"};
    const int d = devices.first();
    if (d < 0 || d >= opencl::device_count())
      return {"there is no OpenCL device " + std::to_string(d) + " (this machine has " +
              std::to_string(opencl::device_count()) + "; multireduce --version lists them)"};
    return {};
  }
};

}  // namespace

const backend& opencl_backend() {
  static const opencl_runtime_backend the_backend;
  return the_backend;
}

}  // namespace multireduce::runtime
