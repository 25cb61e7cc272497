// runtime/cuda/statistics.cu -- the statistics of an array on the GPU (every dtype but float16),
// in one form: the record of multireduce::statistics<T> written in GPU memory, queued on the
// caller's stream; arrays in host memory are staged around it, a host source goes through it piece
// by piece and the pieces merge in order (Chan et al.; one piece: exactly as the device computed it).
#include <cstring>
#include <optional>
#include <type_traits>

#include "context.cuh"
#include "jobs.cuh"
#include "staging.cuh"

namespace multireduce::runtime::cuda_backend_detail {
namespace {

template <class T>
void statistics_queued(const T* d, std::int64_t n, multireduce::statistics<T>* out, cudaStream_t stream) {
  if (capturing(stream))
    return run_queued("statistics", stream,
                      [&](void* t, std::size_t& b) { return mc::statistics(t, b, d, out, n, stream); });
  if (n == 0) {  // pageable host memory: staged before the call returns
    const multireduce::statistics<T> empty = statistics_accumulator<T>{}.result();
    mc::check(cudaMemcpyAsync(out, &empty, sizeof empty, cudaMemcpyHostToDevice, stream), "writing the result");
    return;
  }
  const std::shared_ptr<stream_state> state = state_of(stream);  // one launch, no allocation
  const std::lock_guard<std::mutex> lock(state->busy);
  state->ws.statistics_async(d, n, out);
}

/// The queued job with the input uploaded (host memory) and the record downloaded (host memory).
template <class T>
void statistics_staged(const array_view& in, const output_view& out, cudaStream_t stream, report& r) {
  using S = multireduce::statistics<T>;
  if (in.count == 0 && out.where.is_host()) {
    const S empty = statistics_accumulator<T>{}.result();
    std::memcpy(out.data, &empty, sizeof empty);
    return;
  }
  event_timer timer(stream);
  const T* d = static_cast<const T*>(in.data);
  std::optional<stream_storage> input, record;
  if (in.where.is_host()) {
    input.emplace(sizeof(T) * std::size_t(in.count), stream);
    upload(input->get(), in.data, sizeof(T) * std::size_t(in.count), stream, timer, r);
    d = input->as<const T>();
  }
  S* result = static_cast<S*>(out.data);
  if (out.where.is_host()) {
    record.emplace(sizeof(S), stream);
    result = record->as<S>();
  }
  timer.start();
  statistics_queued(d, in.count, result, stream);
  r.seconds += timer.stop();
  if (out.where.is_host()) {
    timer.start();
    mc::check(cudaMemcpyAsync(out.data, result, sizeof(S), cudaMemcpyDeviceToHost, stream), "downloading the result");
    mc::check(cudaStreamSynchronize(stream), "downloading the result");
    r.transfer_seconds += timer.stop();
  }
}

template <class T>
struct statistics_piece {
  multireduce::statistics<T> result;
  std::int64_t first;
};

template <class T>
multireduce::statistics<T> merged(const std::vector<statistics_piece<T>>& parts) {
  if (parts.empty()) return statistics_accumulator<T>{}.result();
  if (parts.size() == 1) return parts[0].result;
  statistics_accumulator<T> acc;
  for (const auto& p : parts)
    acc = statistics_accumulator<T>::merge(acc, statistics_accumulator<T>::of_result(p.result, p.first));
  return acc.result();
}

/// f(T{}) for the input's element type (the GPU statistics take no float16).
template <class F>
void on_element_type(dtype type, F&& f) {
  visit(type, [&](auto element) {
    if constexpr (std::is_same_v<decltype(element), float16_bits>)
      throw unsupported_error("cuda", "the GPU statistics take no float16", true);
    else f(element);
  });
}

}  // namespace

void statistics_arrays(const array_view& in, const output_view& out, const execution& exec, report& r) {
  const cudaStream_t stream = stream_of(exec);
  r.bytes_read = in.count * std::int64_t(size_of(in.type));
  translating_errors("statistics", [&] {
    on_element_type(in.type, [&](auto element) {
      using T = decltype(element);
      if (!in.where.is_host() && !out.where.is_host())
        statistics_queued(static_cast<const T*>(in.data), in.count, static_cast<multireduce::statistics<T>*>(out.data),
                          stream);
      else statistics_staged<T>(in, out, stream, r);
    });
  });
}

void statistics_source(array_source& in, any_statistics& out, const execution& exec, report& r) {
  translating_errors("statistics", [&] {
    on_element_type(in.type(), [&](auto element) {
      using T = decltype(element);
      using S = multireduce::statistics<T>;
      const std::int64_t piece = std::min(in.piece_elements(), chunk_elements(in.count(), sizeof(T)));
      const auto parts = fold_pieces<T>(in, even_pieces(in.count(), piece), r, exec,
                                        [&](const T* d, std::int64_t count, std::int64_t first, cudaStream_t s) {
                                          return statistics_piece<T>{
                                              result_of<S>([&](S* slot) { statistics_queued(d, count, slot, s); }, s),
                                              first};
                                        });
      out = merged<T>(parts);
    });
  });
}

}  // namespace multireduce::runtime::cuda_backend_detail
