// runtime/opencl/context.hpp -- what every job of the OpenCL backend runs in: the device chosen
// (and OpenCL's errors turned into the runtime's), the job's clock, device buffers that grow to
// the largest piece, a job's input as buffers in device memory piece by piece (a host source
// uploaded, or an array already there), and the buffers and results of arrays in an OpenCL
// context's memory (PyOpenCL's), read and written on the caller's queue.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "../runtime.hpp"
#include "algorithms.hpp"
#include "device.hpp"

namespace multireduce::runtime::opencl_backend_detail {

// The backend's files are written against the devices and algorithms of namespace opencl.
using namespace opencl;

/// The type elements of T are reduced in on the device: float16 as float.
template <class T>
using value_t = std::conditional_t<std::is_same_v<T, float16_bits>, float, T>;

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

inline void upload(device& d, const cl::Buffer& b, const void* data, std::size_t bytes) {
  if (bytes > 0) d.queue.enqueueWriteBuffer(b, CL_TRUE, 0, bytes, data);
}
inline std::vector<std::byte> download(device& d, const cl::Buffer& b, std::size_t bytes) {
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
inline std::int64_t piece_cap(const device& d, const array_source& in) {
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

// ---- arrays in an OpenCL context's memory (PyOpenCL's), on the caller's queue -----------------------

/// The buffer `handle` (a cl_mem, retained) of d's context, at least `bytes` long; for a null handle
/// (an empty array) a buffer of one byte. Throws std::invalid_argument naming `what` for a handle
/// that is no buffer, a buffer of another context or one too small.
inline cl::Buffer buffer_at(device& d, const void* handle, std::size_t bytes, const std::string& what) {
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
inline void deliver(device& d, const output_view& out, const cl::Buffer& buffer, const std::vector<std::byte>& bytes) {
  if (bytes.empty()) return;
  if (out.where.is_host()) std::memcpy(out.data, bytes.data(), bytes.size());
  else d.queue.enqueueWriteBuffer(buffer, CL_TRUE, 0, bytes.size(), bytes.data());
}

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

}  // namespace multireduce::runtime::opencl_backend_detail
