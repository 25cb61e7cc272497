// runtime/cuda/reduce.cu -- reductions on the GPU: the whole array (every dtype but float16, every
// operator that fits it), fixed-length segments, offsets and sliding windows (float32, float64,
// int32 and int64 with sum, min or max). One queued form each (input, offsets and output in GPU
// memory, on the caller's stream, not waited for); arrays in host memory are staged around it, and
// a host source goes through it piece by piece (pieces of at most half the free GPU memory).
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "../pairwise.hpp"
#include "../pieces.hpp"
#include "context.cuh"
#include "jobs.cuh"
#include "offsets.cuh"
#include "staging.cuh"

namespace multireduce::runtime::cuda_backend_detail {
namespace {

// ---- the queued jobs ------------------------------------------------------------------------------

/// The smallest or largest element of d[0, n) and its index into *found.
template <class T>
void arg_extreme_queued(op_kind op, const T* d, std::int64_t n, key_value<T>* found, cudaStream_t stream) {
  const bool smallest = op == op_kind::argmin;
  if (capturing(stream)) {
    return run_queued("reduce", stream, [&](void* t, std::size_t& b) {
      return smallest ? mc::argmin(t, b, d, found, n, stream) : mc::argmax(t, b, d, found, n, stream);
    });
  }
  const std::shared_ptr<stream_state> state = state_of(stream);
  const std::lock_guard<std::mutex> lock(state->busy);
  if (smallest) state->ws.argmin_async(d, n, found);
  else state->ws.argmax_async(d, n, found);
}

/// The whole array's result into *d_out: the reduction (of the accumulator's type), or for
/// argmin/argmax the index (int64).
template <class T>
void whole_reduce_queued(op_kind op, const T* d, std::int64_t n, void* d_out, cudaStream_t stream) {
  if (info(op).positional) {  // {value, index} in temporary storage; the index is the output
    stream_storage pair(sizeof(key_value<T>), stream);
    auto* found = pair.as<key_value<T>>();
    arg_extreme_queued(op, d, n, found, stream);
    mc::check(cudaMemcpyAsync(d_out, &found->index, sizeof(std::int64_t), cudaMemcpyDeviceToDevice, stream),
              "writing the result");
    return;
  }
  visit_value_op<T>(op, [&](auto o, auto init) {
    using Acc = decltype(init);
    auto* out = static_cast<Acc*>(d_out);
    if (capturing(stream))
      return run_queued("reduce", stream, [&](void* t, std::size_t& b) { return mc::reduce(t, b, d, out, n, o, init, stream); });
    const std::shared_ptr<stream_state> state = state_of(stream);  // one launch, no allocation
    const std::lock_guard<std::mutex> lock(state->busy);
    state->ws.reduce_async(d, n, out, o, init);
  });
}

/// A segmented reduce over one offsets array in the stream state's workspace, through its own
/// entry point (the queue header kept zero: no zeroing kernel), or in pool storage when it needs
/// more than the workspace keeps. bad_offset: null, or the mark of unchecked offsets.
template <class T, class Acc, class Op>
void segmented_on_stream(stream_state& state, cudaStream_t stream, const T* in, std::int64_t n, Acc* out,
                         std::int64_t segments, const std::int64_t* o, Op op, Acc init,
                         unsigned long long* bad_offset) {
  auto algorithm = [&](void* t, std::size_t& b) {
    return mc::detail::segmented_reduce(t, b, in, n, out, segments, o, o + 1, op, init, stream, bad_offset);
  };
  std::size_t bytes = 0;
  mc::check(algorithm(nullptr, bytes), "segmented reduce");
  if (bytes > stream_state_tuning::workspace_bytes_max) return run_queued("segmented reduce", stream, algorithm);
  state.ws.segmented_reduce_async(in, n, out, segments, o, o + 1, op, init, bad_offset);
}

constexpr const char* capture_needs_device_offsets =
    "while the stream is captured into a CUDA graph the offsets must be in GPU memory (a copy from host memory "
    "cannot be replayed)";
constexpr const char* capture_cannot_check_offsets =
    "while the stream is captured into a CUDA graph offsets cannot be checked (the check reads its verdict back); "
    "pass check_offsets=False (reduce_job::check_offsets = false) for offsets you vouch for";
constexpr const char* capture_needs_staged_kernel =
    "while the stream is captured into a CUDA graph unchecked offsets run only through the kernel that clamps them "
    "into the input (many short segments: a mean length of at most 40, on sm_90 or newer); these segments would be "
    "read as the offsets say, so they must be checked, which capture cannot do";

/// A segments job over offsets, input and output in GPU memory (host offsets are uploaded).
template <class T, class Acc, class Op>
void offsets_reduce_queued(const reduce_job& job, const T* in, Acc* result, Op op, Acc init, cudaStream_t stream) {
  const std::int64_t n = job.input.count;
  const std::int64_t* o = job.offsets;
  if (capturing(stream)) {
    if (job.offsets_where.is_host()) throw std::invalid_argument(capture_needs_device_offsets);
    if (job.check_offsets) throw std::invalid_argument(capture_cannot_check_offsets);
    if (!mc::detail::segmented_reduce_is_staged(in, n, job.segments, o, o + 1))
      throw std::invalid_argument(capture_needs_staged_kernel);
    stream_storage mark(sizeof(unsigned long long), stream);  // never read
    mc::check(cudaMemsetAsync(mark.get(), 0xff, sizeof(unsigned long long), stream), "segmented reduce");
    return run_queued("segmented reduce", stream, [&](void* t, std::size_t& b) {
      return mc::detail::segmented_reduce(t, b, in, n, result, job.segments, o, o + 1, op, init, stream,
                                          mark.as<unsigned long long>());
    });
  }
  const std::shared_ptr<stream_state> state = state_of(stream);
  const std::lock_guard<std::mutex> lock(state->busy);
  std::optional<stream_storage> uploaded;
  if (job.offsets_where.is_host()) {  // checked on the host (validate)
    const std::size_t offset_bytes = sizeof(std::int64_t) * std::size_t(job.segments + 1);
    uploaded.emplace(offset_bytes, stream);
    mc::check(cudaMemcpyAsync(uploaded->get(), job.offsets, offset_bytes, cudaMemcpyHostToDevice, stream),
              "uploading the offsets");
    o = uploaded->as<const std::int64_t>();
  } else if ((job.output_is_new || !job.check_offsets) &&
             mc::detail::segmented_reduce_is_staged(in, n, job.segments, o, o + 1)) {
    // The staged kernel checks the offsets as it reads them (reading only inside the input
    // whatever they say): no check kernel and no wait before the reduction. The verdict is read
    // after it (bad offsets leave garbage only in an output made for this call), or not at all
    // when the caller vouches for the offsets.
    unsigned long long* mark = job.check_offsets ? state->bad_offset.data() : state->unread_mark.data();
    segmented_on_stream(*state, stream, in, n, result, job.segments, o, op, init, mark);
    if (job.check_offsets) read_offsets_verdict(o, n, state->bad_offset.data(), state->bad_offset_host.data(), stream);
    return;
  } else {
    check_offsets_on_gpu(o, job.segments, n, *state, stream);
  }
  segmented_on_stream(*state, stream, in, n, result, job.segments, o, op, init, nullptr);
}

/// A segmented or window job, input, offsets and output in GPU memory (host offsets are uploaded).
template <class T>
void shaped_reduce_queued(const reduce_job& job, void* d_out, cudaStream_t stream) {
  if constexpr (shaped_type<T>) {
    visit_value_op<T, shaped_ops>(job.op, [&](auto op, auto init) {
      using Acc = decltype(init);
      const T* in = static_cast<const T*>(job.input.data);
      Acc* result = static_cast<Acc*>(d_out);
      const std::int64_t n = job.input.count;
      if (job.shape == shape_kind::offsets) {
        offsets_reduce_queued(job, in, result, op, init, stream);
      } else if (job.shape == shape_kind::fixed_segments) {
        run_on_stream("segmented reduce", stream, [&](void* t, std::size_t& b) {
          return mc::fixed_segmented_reduce(t, b, in, result, job.segments, job.length, op, init, stream);
        });
      } else {
        run_on_stream("window reduce", stream, [&](void* t, std::size_t& b) {
          return mc::window_reduce(t, b, in, n, job.length, result, op, init, stream);
        });
      }
    });
  } else {
    throw unsupported_error("cuda", "the GPU runs no segmented or window reductions of " + std::string(name_of(dtype_of<T>())), true);
  }
}

/// The one form of every reduction: all arrays in GPU memory, queued.
template <class T>
void reduce_queued(const reduce_job& job, void* d_out, cudaStream_t stream) {
  if (job.shape == shape_kind::whole)
    whole_reduce_queued<T>(job.op, static_cast<const T*>(job.input.data), job.input.count, d_out, stream);
  else shaped_reduce_queued<T>(job, d_out, stream);
}

// ---- staging: arrays in host memory -------------------------------------------------------------

/// The queued job with its input uploaded (when in host memory) and its outputs downloaded (when
/// out is in host memory), waited for; the job timed as the algorithm, the copies as transfers.
template <class T>
void reduce_staged(const reduce_job& job, const output_view& out, cudaStream_t stream, report& r) {
  event_timer timer(stream);
  reduce_job on_gpu = job;
  std::optional<stream_storage> input, result;
  if (job.input.where.is_host()) {
    const std::size_t bytes = sizeof(T) * std::size_t(job.input.count);
    input.emplace(bytes, stream);
    upload(input->get(), job.input.data, bytes, stream, timer, r);
    on_gpu.input.data = input->get();
    on_gpu.input.where = cuda_memory;
  }
  const std::size_t out_bytes = size_of(out.type) * std::size_t(out.count);
  void* d_out = out.data;
  if (out.where.is_host()) {
    result.emplace(out_bytes, stream);
    d_out = result->get();
  }
  timer.start();
  if (out.count > 0 || job.shape == shape_kind::whole) reduce_queued<T>(on_gpu, d_out, stream);
  r.seconds += timer.stop();
  if (out.where.is_host() && out_bytes > 0) {
    timer.start();
    mc::check(cudaMemcpyAsync(out.data, d_out, out_bytes, cudaMemcpyDeviceToHost, stream), "downloading the result");
    mc::check(cudaStreamSynchronize(stream), "downloading the result");
    r.transfer_seconds += timer.stop();
  }
}

// ---- a host source, piece by piece ---------------------------------------------------------------

/// A whole-array job on a host source. A float sum is NumPy's pairwise tree over the pieces (each
/// piece's sum is the GPU's), so that pieces combine pairwise, not one after another.
template <class T>
void whole_reduce_source(const reduce_job& job, array_source& in, output_sink& out, report& r, const execution& exec) {
  const std::int64_t n = in.count();
  const std::int64_t piece = std::min(in.piece_elements(), chunk_elements(n, sizeof(T)));
  if constexpr (std::is_floating_point_v<T>) {
    if (job.op == op_kind::sum) {
      // NumPy's pairwise tree over pieces: the leaves (pieces of at most `block`) summed on the
      // GPU(s), then the tree above them on the host.
      const std::int64_t block = std::max(piece, pairwise::block);
      std::vector<piece_range> leaves;
      pairwise::over_pieces<T>(0, n, block, [&](std::int64_t first, std::int64_t count) {
        if (count > 0) leaves.push_back({first, count});
        return T(0);
      });
      const std::vector<T> sums = fold_pieces<T>(in, leaves, r, exec, [&](const T* d, std::int64_t count, std::int64_t,
                                                                           cudaStream_t s) {
        return result_of<T>([&](T* slot) { whole_reduce_queued<T>(job.op, d, count, slot, s); }, s);
      });
      std::size_t next = 0;
      const T total = T(0) + pairwise::over_pieces<T>(0, n, block, [&](std::int64_t, std::int64_t count) {
        return count == 0 ? T(0) : sums[next++];
      });
      return out.write(&total, 1);
    }
  }
  const std::vector<piece_range> pieces = even_pieces(n, piece);
  if (info(job.op).positional) {
    const auto parts = fold_pieces<T>(in, pieces, r, exec, [&](const T* d, std::int64_t count, std::int64_t first,
                                                               cudaStream_t s) {
      key_value<T> found = result_of<key_value<T>>(
          [&](key_value<T>* slot) { arg_extreme_queued<T>(job.op, d, count, slot, s); }, s);
      found.index += first;
      return found;
    });
    std::int64_t index = -1;
    key_value<T> best{};
    for (const auto& p : parts) {
      best = index < 0 ? p : job.op == op_kind::argmin ? multireduce::argmin{}(best, p) : multireduce::argmax{}(best, p);
      index = best.index;
    }
    return out.write(&index, 1);
  }
  visit_value_op<T>(job.op, [&](auto op, auto init) {
    using Acc = decltype(init);
    const auto parts = fold_pieces<T>(in, pieces, r, exec, [&](const T* d, std::int64_t count, std::int64_t,
                                                               cudaStream_t s) {
      return result_of<Acc>([&](Acc* slot) { whole_reduce_queued<T>(job.op, d, count, slot, s); }, s);
    });
    auto acc = init;
    for (const auto& p : parts) acc = op(acc, p);
    out.write(&acc, 1);
  });
}

/// A segmented or window job on a host source: piece by piece, each piece's outputs to the sink
/// as soon as they are back.
template <class T>
void shaped_reduce_source(const reduce_job& job, array_source& in, output_sink& out, cudaStream_t stream, report& r,
                          const execution& exec) {
  const std::size_t out_size = size_of(output_dtype(job));
  const std::int64_t cap = std::min(in.piece_elements(), chunk_elements(in.count(), sizeof(T)));
  std::vector<std::byte> outputs;
  pieces::for_each(job, cap, [&](pieces::piece& p) {
    p.sub.input.data = in.read(p.first, p.count);
    p.sub.input.where = memory::host();
    const std::int64_t count = output_count(p.sub);
    outputs.resize(std::size_t(count) * out_size);
    r.bytes_read += p.count * std::int64_t(sizeof(T)) + (p.sub.shape == shape_kind::offsets ? (count + 1) * 8 : 0);
    reduce_staged<T>(p.sub, output_view{output_dtype(job), outputs.data(), count, memory::host(), 0}, stream, r);
    out.write(outputs.data(), count);
    if (exec.progress) exec.progress(p.first + p.count, in.count());
  });
}

/// f(T{}) for the job's element type (float16 is the CPU's alone).
template <class F>
void on_element_type(dtype type, F&& f) {
  visit(type, [&](auto element) {
    if constexpr (std::is_same_v<decltype(element), float16_bits>)
      throw unsupported_error("cuda", "float16 runs on the CPU backend only", true);
    else f(element);
  });
}

}  // namespace

void reduce_arrays(const reduce_job& job, const output_view& out, const execution& exec, report& r) {
  r.bytes_read = job.input.count * std::int64_t(size_of(job.input.type)) +
                 (job.shape == shape_kind::offsets ? (job.segments + 1) * 8 : 0);
  const cudaStream_t stream = stream_of(exec);
  translating_errors("reduce", [&] {
    on_element_type(job.input.type, [&](auto element) {
      using T = decltype(element);
      if (!job.input.where.is_host() && !out.where.is_host()) reduce_queued<T>(job, out.data, stream);
      else reduce_staged<T>(job, out, stream, r);
    });
  });
}

void reduce_source(const reduce_job& job, array_source& in, output_sink& out, const execution& exec, report& r) {
  const cudaStream_t stream = stream_of(exec);
  translating_errors("reduce", [&] {
    on_element_type(job.input.type, [&](auto element) {
      using T = decltype(element);
      if (job.shape == shape_kind::whole) whole_reduce_source<T>(job, in, out, r, exec);
      else shaped_reduce_source<T>(job, in, out, stream, r, exec);
    });
  });
}

}  // namespace multireduce::runtime::cuda_backend_detail
