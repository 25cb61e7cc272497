// runtime/opencl/reduce.cpp -- reductions on an OpenCL device: the whole array, an axis (the last:
// segments of its length; any other: columns folded row after row), fixed-length segments, offsets
// and sliding windows, of every dtype the device takes. Host data goes through the device a piece
// at a time (whole segments and windows a piece), the parts' folds finished on the host in order;
// an array in OpenCL memory is the one piece, on the caller's queue.
#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include <multireduce/operators.hpp>

#include "../bad_offset.hpp"
#include "../pieces.hpp"
#include "context.hpp"
#include "jobs.hpp"

namespace multireduce::runtime::opencl_backend_detail {
namespace {

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

// ---- host data, piece by piece ------------------------------------------------------------------

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

// ---- arrays in OpenCL memory, on the caller's queue ---------------------------------------------

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

}  // namespace

void reduce_source(const reduce_job& job, array_source& in, output_sink& out, const execution& exec, report& r) {
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

void reduce_arrays(const reduce_job& job, const output_view& out, const execution& exec, report& r) {
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

}  // namespace multireduce::runtime::opencl_backend_detail
