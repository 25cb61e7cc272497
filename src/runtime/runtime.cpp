// runtime/runtime.cpp -- job checks, the backend choice from the table (backend.hpp), and the
// source and sink of arrays in host memory (runtime.hpp).
#include "runtime.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <variant>

#include <multireduce/match/match.hpp>

#include "backend.hpp"
#include "bad_offset.hpp"

namespace multireduce::runtime {

namespace {

std::string text(std::int64_t v) { return std::to_string(v); }

/// The backend that runs a job on host data: the one named, or for "auto" the first of the table
/// that takes host data automatically and runs the job (why it passed the others over goes into
/// r.passed_over). reason(backend) is the backend's refusal, empty when it runs the job.
/// Throws std::invalid_argument for a device set that names no device.
void check_devices(const execution& exec) {
  if (exec.devices.ordinals.empty()) throw std::invalid_argument("the device set is empty: name at least one device");
  for (int d : exec.devices.ordinals)
    if (d < 0) throw std::invalid_argument("device " + std::to_string(d) + " is not a device number (0 or more)");
}

template <class Reason>
const backend& for_host_data(const execution& exec, Reason&& reason, report& r) {
  check_devices(exec);
  if (exec.backend != "auto") {
    const backend& b = find_backend(exec.backend);
    if (const refusal no = reason(b); !no.empty()) throw unsupported_error(b.name(), no.why, no.dtype);
    return b;
  }
  for (const backend* b : *backend_table()) {
    if (!b->automatic_for_host_data()) continue;
    const refusal no = reason(*b);
    if (no.empty()) return *b;
    r.passed_over += (r.passed_over.empty() ? "not " : "; not ") + std::string(b->noun()) + ": " + no.why;
  }
  throw unsupported_error("auto", "no backend runs this job (" + r.passed_over + ")");
}

/// The backend whose device memory holds `where`: the only one that runs a job on it. Throws
/// unsupported_error when another backend is named, or it cannot run the job (reason(backend)).
template <class Reason>
const backend& for_device_memory(memory where, const execution& exec, Reason&& reason) {
  check_devices(exec);
  const backend* owner = nullptr;
  for (const backend* b : *backend_table())
    if (b->device_memory() == where) owner = b;
  if (owner == nullptr)
    throw std::invalid_argument("no backend reads " + where.describe() + " (the backends are " + backend_list() + ")");
  auto readers = [&] {  // (made only for an error: a small call's time is mostly host time)
    return "the arrays are in " + where.describe() + ", which only the " + std::string(owner->name()) +
           " backend reads";
  };
  if (exec.backend != "auto" && exec.backend != owner->name()) {
    check_backend_name(exec.backend);
    throw unsupported_error(exec.backend, readers());
  }
  if (const refusal no = reason(*owner); !no.empty())
    throw unsupported_error(owner->name(), no.why + "; " + readers(), no.dtype);
  return *owner;
}

/// a * b, or nullopt past int64.
std::optional<std::int64_t> product(std::int64_t a, std::int64_t b) {
  std::int64_t p = 0;
  if (__builtin_mul_overflow(a, b, &p)) return std::nullopt;
  return p;
}

/// The outputs of a job in host memory, written in order; counts them (a job must write exactly
/// its outputs) and the bytes.
class memory_sink final : public output_sink {
 public:
  explicit memory_sink(const output_view& out) : out_(out) {}
  void write(const void* values, std::int64_t n) override {
    if (n < 0 || n > out_.count - written_) throw std::logic_error("multireduce runtime: a job wrote past its outputs");
    const std::size_t size = size_of(out_.type);
    if (n > 0) std::memcpy(static_cast<std::byte*>(out_.data) + std::size_t(written_) * size, values, std::size_t(n) * size);
    written_ += n;
  }
  std::int64_t written() const { return written_; }

 private:
  output_view out_;
  std::int64_t written_ = 0;
};

/// Passes outputs on to the caller's sink, counting them.
class counting_sink final : public output_sink {
 public:
  explicit counting_sink(output_sink& to) : to_(to) {}
  void write(const void* values, std::int64_t n) override {
    to_.write(values, n);
    written += n;
  }
  std::int64_t written = 0;

 private:
  output_sink& to_;
};

/// The shape checks of validate(), without the data pointer (a source has none).
void validate_shape(const reduce_job& job);

/// The job as the backends run it: an axis with nothing after it is fixed-length segments.
reduce_job normalized(const reduce_job& job) {
  reduce_job j = job;
  if (j.shape == shape_kind::axis && j.inner == 1) j.shape = shape_kind::fixed_segments;
  return j;
}

}  // namespace

memory_source::memory_source(const array_view& a)
    : array_source(a.type, a.count), data_(static_cast<const std::byte*>(a.data)) {
  if (!a.where.is_host())
    throw std::invalid_argument("the array is in " + a.where.describe() + ", not host memory; copy it to the host first");
  if (a.count < 0) throw std::invalid_argument("the array has a negative element count (" + text(a.count) + ")");
  if (a.count > 0 && a.data == nullptr) throw std::invalid_argument("the array's data pointer is null");
}

std::int64_t memory_source::piece_elements() const { return std::max<std::int64_t>(count(), 1); }

std::unique_ptr<array_source> memory_source::open_part(std::int64_t first, std::int64_t n) const {
  if (first < 0 || n < 0 || first > count() || n > count() - first)
    throw std::logic_error("multireduce runtime: a part past the end of its source");
  return std::make_unique<memory_source>(array_view{type(), data_ + std::size_t(first) * size_of(type()), n});
}

const void* memory_source::read(std::int64_t first, std::int64_t n) {
  if (first < 0 || n < 0 || first > count() || n > count() - first)
    throw std::logic_error("multireduce runtime: a job read past its input");
  return data_ + std::size_t(first) * size_of(type());
}

reduce_job axis_job(const array_view& input, op_kind op, std::span<const std::int64_t> shape, std::int64_t axis) {
  const auto ndim = static_cast<std::int64_t>(shape.size());
  if (ndim == 0) throw std::invalid_argument("a 0-d array has no axis");
  if (axis < -ndim || axis >= ndim)
    throw std::invalid_argument("axis " + text(axis) + " is out of bounds for an array of " + text(ndim) +
                                " dimension" + (ndim == 1 ? "" : "s") + " (axes " + text(-ndim) + " to " +
                                text(ndim - 1) + ")");
  const std::int64_t a = axis < 0 ? axis + ndim : axis;
  std::int64_t outer = 1, inner = 1;
  std::optional<std::int64_t> all = 1;
  for (std::int64_t d = 0; d < ndim; ++d) {
    const std::int64_t extent = shape[std::size_t(d)];
    if (extent < 0) throw std::invalid_argument("negative dimension " + text(extent) + " in the shape");
    if (all) all = product(*all, extent);
    if (d == a) continue;
    const auto grown = product(d < a ? outer : inner, extent);
    if (!grown) throw std::invalid_argument("the result would have more than 2^63 elements");
    (d < a ? outer : inner) = *grown;
  }
  if (!all || *all != input.count)
    throw std::invalid_argument("the shape does not hold the array's " + text(input.count) + " elements");
  reduce_job job;
  job.input = input;
  job.op = op;
  job.shape = shape_kind::axis;
  job.segments = outer;
  job.length = shape[std::size_t(a)];
  job.inner = inner;
  return job;
}

std::int64_t output_count(const reduce_job& job) {
  switch (job.shape) {
    case shape_kind::whole: return 1;
    case shape_kind::axis: return product(job.segments, job.inner).value_or(-1);
    case shape_kind::fixed_segments:
    case shape_kind::offsets: return job.segments;
    case shape_kind::window: return job.input.count >= job.length ? job.input.count - job.length + 1 : 0;
  }
  return 0;
}

dtype output_dtype(const reduce_job& job) { return result_dtype(job.op, job.input.type); }

void validate(const reduce_job& job) {
  if (job.input.count > 0 && job.input.data == nullptr) throw std::invalid_argument("the input's data pointer is null");
  if (job.shape == shape_kind::offsets && !job.offsets_where.is_host() && job.offsets_where != job.input.where)
    throw std::invalid_argument("offsets in " + job.offsets_where.describe() + " need the input there too, not in " +
                                job.input.where.describe());
  validate_shape(job);
}

namespace {
void validate_shape(const reduce_job& job) {
  const std::int64_t n = job.input.count;
  if (n < 0) throw std::invalid_argument("the input has a negative element count (" + text(n) + ")");
  if (info(job.op).integers_only && is_floating(job.input.type))
    throw dtype_error(std::string(name_of(job.op)) + " needs an integer dtype, not " +
                      std::string(name_of(job.input.type)));
  switch (job.shape) {
    case shape_kind::whole:
      break;
    case shape_kind::axis: {
      if (job.segments < 0 || job.length < 0 || job.inner < 0)
        throw std::invalid_argument("the axis' extents must not be negative");
      const auto outputs = product(job.segments, job.inner);
      const auto elements = outputs ? product(*outputs, job.length) : std::nullopt;
      if (!outputs) throw std::invalid_argument("the result would have more than 2^63 elements");
      if (!elements || *elements != n)
        throw std::invalid_argument(text(job.segments) + " x " + text(job.length) + " x " + text(job.inner) +
                                    " is not the " + text(n) + " elements of the input");
      break;
    }
    case shape_kind::fixed_segments:
      if (job.length < 0 || job.segments < 0)
        throw std::invalid_argument("segment length and count must not be negative");
      if (job.segments * job.length != n && !(job.length == 0 && n == 0))
        throw std::invalid_argument(text(job.segments) + " segments of length " + text(job.length) + " are not the " +
                                    text(n) + " elements of the input");
      break;
    case shape_kind::window:
      if (job.length < 1) throw std::invalid_argument("the window must be at least 1 element, got " + text(job.length));
      break;
    case shape_kind::offsets: {
      if (job.segments < 0) throw std::invalid_argument("the segment count must not be negative");
      const std::int64_t* o = job.offsets;
      if (o == nullptr) throw std::invalid_argument("offsets: none given (S + 1 offsets for S segments)");
      if (!job.offsets_where.is_host()) break;  // checked on the device (src/runtime/cuda/offsets.cu)
      for (std::int64_t s = 0; s <= job.segments; ++s)
        if ((s == 0 ? o[0] < 0 : o[s] < o[s - 1]) || (s == job.segments && o[s] > n))
          throw_bad_offset(s, s > 0 ? o[s - 1] : 0, o[s], n);
      break;
    }
  }
}

}  // namespace

report reduce(const reduce_job& job, const output_view& out, const execution& exec) {
  validate(job);
  if (out.type != output_dtype(job) || out.count != output_count(job) || (out.count > 0 && out.data == nullptr))
    throw std::invalid_argument("the output must hold " + text(output_count(job)) + " elements of " +
                                std::string(name_of(output_dtype(job))));
  if (job.input.where.is_host() && out.where.is_host()) {
    memory_source in(job.input);
    memory_sink sink(out);
    return reduce(job, in, sink, exec);
  }
  const reduce_job j = normalized(job);
  const backend& b = for_device_memory(job.input.where.is_host() ? out.where : job.input.where, exec,
                                       [&](const backend& c) { return c.unsupported(j, exec.devices); });
  report r;
  r.backend = b.name();
  b.reduce(j, out, exec, r);
  r.bytes_written = out.count * std::int64_t(size_of(out.type));
  return r;
}

report reduce(const reduce_job& job, array_source& in, output_sink& out, const execution& exec) {
  reduce_job j = normalized(job);
  j.input = array_view{in.type(), nullptr, in.count(), memory::host(), 0};
  if (job.input.type != in.type() || job.input.count != in.count())
    throw std::invalid_argument("the job's input is " + text(job.input.count) + " elements of " +
                                std::string(name_of(job.input.type)) + ", the source's " + text(in.count()) + " of " +
                                std::string(name_of(in.type())));
  validate_shape(j);
  report r;
  const backend& b = for_host_data(exec, [&](const backend& c) { return c.unsupported(j, exec.devices); }, r);
  r.backend = b.name();
  counting_sink counted(out);
  b.reduce(j, in, counted, exec, r);
  if (counted.written != output_count(j))
    throw std::logic_error("multireduce runtime: a job wrote " + text(counted.written) + " of its " +
                           text(output_count(j)) + " outputs");
  r.bytes_written = counted.written * std::int64_t(size_of(output_dtype(j)));
  return r;
}

report statistics(const array_view& in, any_statistics& out, const execution& exec) {
  if (in.count < 0) throw std::invalid_argument("the input has a negative element count (" + text(in.count) + ")");
  if (in.where.is_host()) {
    memory_source source(in);
    return statistics(source, out, exec);
  }
  // A device array, its statistics to the host: through a host record of their bytes.
  return visit(in.type, [&](auto element) {
    using E = decltype(element);
    using T = std::conditional_t<std::is_same_v<E, float16_bits>, float, E>;
    multireduce::statistics<T> s{};
    const report r = statistics(in, output_view{dtype::uint8, &s, std::int64_t(sizeof s), memory::host(), 0}, exec);
    out = s;
    return r;
  });
}

report statistics(array_source& in, any_statistics& out, const execution& exec) {
  report r;
  const backend& b =
      for_host_data(exec, [&](const backend& c) { return c.unsupported_statistics(in.type(), exec.devices); }, r);
  r.backend = b.name();
  b.statistics(in, out, exec, r);
  return r;
}

std::size_t statistics_bytes(dtype type) {
  return visit(type, [](auto element) -> std::size_t {
    using T = decltype(element);
    if constexpr (std::is_same_v<T, float16_bits>) return sizeof(multireduce::statistics<float>);
    else return sizeof(multireduce::statistics<T>);
  });
}

report statistics(const array_view& in, const output_view& out, const execution& exec) {
  const auto bytes = static_cast<std::int64_t>(statistics_bytes(in.type));
  if (out.type != dtype::uint8 || out.count != bytes || out.data == nullptr)
    throw std::invalid_argument("the statistics of " + std::string(name_of(in.type)) + " need an output of " +
                                text(bytes) + " bytes (uint8)");
  if (in.count < 0) throw std::invalid_argument("the input has a negative element count (" + text(in.count) + ")");
  if (in.where.is_host() && out.where.is_host()) {
    any_statistics result;
    report r = statistics(in, result, exec);
    std::visit([&](const auto& s) { std::memcpy(out.data, &s, sizeof(s)); }, result);
    return r;
  }
  const backend& b = for_device_memory(in.where.is_host() ? out.where : in.where, exec,
                                       [&](const backend& c) { return c.unsupported_statistics(in.type, exec.devices); });
  report r;
  r.backend = b.name();
  b.statistics(in, out, exec, r);
  return r;
}

report knn(const knn_device_job& job, const execution& exec) {
  check_match_arguments(job.queries, job.trains, job.bytes, job.k);
  if ((job.queries > 0 && (job.query == nullptr || job.idx == nullptr || job.dist == nullptr)) ||
      (job.trains > 0 && job.train == nullptr))
    throw std::invalid_argument("a null pointer among the search's arrays");
  if (job.where.is_host()) throw std::invalid_argument("a device search's arrays must be in a device's memory");
  const backend& b =
      for_device_memory(job.where, exec, [&](const backend& c) { return c.unsupported_knn(job.bytes, exec.devices); });
  report r;
  r.backend = b.name();
  b.knn(job, exec, r);
  return r;
}

report knn(const knn_job& job, knn_result& out, const execution& exec) {
  check_match_arguments(job.queries, job.trains, job.bytes, job.k);
  report r;
  const backend& b =
      for_host_data(exec, [&](const backend& c) { return c.unsupported_knn(job.bytes, exec.devices); }, r);
  r.backend = b.name();
  b.knn(job, out, exec, r);
  return r;
}

report match_collection(const collection_job& job, const pair_matches_callback& done, const execution& exec) {
  check_match_rule(job.rule);
  check_collection(job.collection, job.pairs, job.k);
  const auto refuses = [&](const backend& c) { return c.unsupported_knn(job.collection.bytes, exec.devices); };
  report r;
  const backend& b = job.where.is_host() ? for_host_data(exec, refuses, r) : for_device_memory(job.where, exec, refuses);
  r.backend = b.name();
  // Progress: the comparisons of the pairs handed out so far.
  std::int64_t total = 0, done_so_far = 0;
  for (const image_pair& p : job.pairs) total += job.collection.rows_of(p.first) * job.collection.rows_of(p.second);
  const pair_matches_callback counted = [&](std::int64_t pair, std::span<const match> kept) {
    done(pair, kept);
    const image_pair p = job.pairs[std::size_t(pair)];
    done_so_far += job.collection.rows_of(p.first) * job.collection.rows_of(p.second);
    if (exec.progress) exec.progress(done_so_far, total);
  };
  b.match_collection(job, counted, exec, r);
  r.bytes_read = job.collection.total_rows() * job.collection.bytes;
  return r;
}

}  // namespace multireduce::runtime

namespace multireduce::runtime {

void throw_bad_offset(std::int64_t s, std::int64_t previous, std::int64_t value, std::int64_t n) {
  const std::string at = "offsets[" + std::to_string(s) + "] = " + std::to_string(value);
  if (s == 0 && value < 0) throw std::invalid_argument(at + " is negative");
  if (s > 0 && value < previous)
    throw std::invalid_argument("offsets must be non-decreasing, but offsets[" + std::to_string(s - 1) + "] = " +
                                std::to_string(previous) + " > " + at);
  throw std::invalid_argument(at + " is past the end of the input (" + std::to_string(n) + " elements)");
}

}  // namespace multireduce::runtime
