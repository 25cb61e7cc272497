// CUDA graphs: the library's calls captured with cudaStreamBeginCapture and replayed with new data
// in the same buffers. The workspace (the C++ API), with storage reserved before the capture, and
// the runtime's queued jobs on device arrays (what the Python package calls), whose temporaries
// become the graph's own memory nodes. Every replay's results equal an eager call's on the same
// data, every element; what cannot be captured (a workspace that must grow, checked offsets) is
// refused with the reason and leaves the capture intact.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <multireduce/cuda.cuh>
#include <multireduce/match/cuda.cuh>

#include "../common/device_test.cuh"
#include "runtime/runtime.hpp"

namespace {

namespace mc = multireduce::cuda;
namespace rt = multireduce::runtime;
using mr_test::on_device;
using mr_test::seed_for;

/// A stream of its own (capture cannot start on the legacy default stream).
struct owned_stream {
  cudaStream_t s = nullptr;
  owned_stream() { mc::check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream"); }
  ~owned_stream() { cudaStreamDestroy(s); }
};

/// The graph captured from record() on `stream`, instantiated.
template <class Record>
cudaGraphExec_t capture(cudaStream_t stream, Record&& record) {
  cudaGraph_t graph = nullptr;
  mc::check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "begin capture");
  record();
  mc::check(cudaStreamEndCapture(stream, &graph), "end capture");
  cudaGraphExec_t exec = nullptr;
  mc::check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  cudaGraphDestroy(graph);
  return exec;
}

/// Copies v to d and waits for the copy (a copy from pageable memory may return before its DMA
/// ends, and the graph runs on a stream that does not wait for the legacy default stream).
template <class T>
void upload(mc::device_buffer<T>& d, const std::vector<T>& v) {
  mc::check(cudaMemcpy(d.data(), v.data(), sizeof(T) * v.size(), cudaMemcpyHostToDevice), "upload");
  mc::check(cudaDeviceSynchronize(), "upload");
}

TEST(GraphCapture, WorkspaceCallsReplayWithNewData) {
  MR_REQUIRE_GPU();
  const std::int64_t n = 1 << 20, w = 77;
  owned_stream stream;
  mc::workspace ws(stream.s);
  auto x = on_device<float>(std::size_t(n));
  auto sum = on_device<float>(1), windows = on_device<float>(std::size_t(n - w + 1));
  auto stats = on_device<multireduce::statistics<float>>(1);
  // The storage every call needs, before the capture: the calls once.
  upload(x, mr_test::random_floats(std::size_t(n), 1));
  ws.reduce_async(x.data(), n, sum.data(), multireduce::sum{}, 0.0f);
  ws.statistics_async(x.data(), n, stats.data());
  ws.window_reduce_async(x.data(), n, w, windows.data(), multireduce::maximum{}, -INFINITY);
  mc::check(cudaStreamSynchronize(stream.s), "warm-up");
  const cudaGraphExec_t graph = capture(stream.s, [&] {
    ws.reduce_async(x.data(), n, sum.data(), multireduce::sum{}, 0.0f);
    ws.statistics_async(x.data(), n, stats.data());
    ws.window_reduce_async(x.data(), n, w, windows.data(), multireduce::maximum{}, -INFINITY);
  });
  mc::workspace eager;  // the same calls on the default stream, same kernels and grids
  const std::uint64_t seed = seed_for("GraphCapture.WorkspaceCallsReplayWithNewData");
  for (int replay = 0; replay < 100; ++replay) {
    upload(x, mr_test::random_floats(std::size_t(n), seed + replay));
    mc::check(cudaGraphLaunch(graph, stream.s), "replay");
    mc::check(cudaStreamSynchronize(stream.s), "replay");
    ASSERT_EQ(sum.download(1)[0], eager.reduce(x.data(), n, multireduce::sum{}, 0.0f)) << "replay " << replay;
    const auto s = stats.download(1)[0], e = eager.statistics(x.data(), n);
    ASSERT_EQ(s.sum, e.sum);
    ASSERT_EQ(s.min, e.min);
    ASSERT_EQ(s.argmax, e.argmax);
    ASSERT_EQ(s.var, e.var);
    auto ref = on_device<float>(std::size_t(n - w + 1));
    eager.window_reduce_async(x.data(), n, w, ref.data(), multireduce::maximum{}, -INFINITY);
    ASSERT_EQ(windows.download(std::size_t(n - w + 1)), ref.download(std::size_t(n - w + 1))) << "replay " << replay;
  }
  cudaGraphExecDestroy(graph);
}

TEST(GraphCapture, AWorkspaceThatMustGrowSaysSoAndLeavesTheCaptureIntact) {
  MR_REQUIRE_GPU();
  owned_stream stream;
  mc::workspace ws(stream.s);
  auto x = on_device<float>(1 << 20);
  auto out = on_device<float>(1);
  cudaGraph_t graph = nullptr;
  mc::check(cudaStreamBeginCapture(stream.s, cudaStreamCaptureModeGlobal), "begin capture");
  try {
    ws.reduce_async(x.data(), 1 << 20, out.data(), multireduce::sum{}, 0.0f);
    ADD_FAILURE() << "the workspace grew under capture";
  } catch (const mc::error& e) {
    EXPECT_NE(std::string(e.what()).find("reserve()"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cudaStreamEndCapture(stream.s, &graph), cudaSuccess);  // still a valid (empty) capture
  if (graph) cudaGraphDestroy(graph);
  ws.reserve(1 << 16);
  EXPECT_GE(ws.reserved_bytes(), std::size_t(1) << 16);
}

// ---- the runtime's queued jobs ----------------------------------------------------------------------

rt::array_view on_gpu(rt::dtype type, const void* p, std::int64_t n) {
  return rt::array_view{type, p, n, rt::memory::of("cuda"), 0};
}
rt::output_view out_on_gpu(rt::dtype type, void* p, std::int64_t n) {
  return rt::output_view{type, p, n, rt::memory::of("cuda"), 0};
}

TEST(GraphCapture, RuntimeJobsReplayWithNewData) {
  MR_REQUIRE_GPU();
  const std::int64_t n = 3 << 18, length = 24, segments = n / length, w = 9;
  owned_stream stream;
  rt::execution exec;
  exec.backend = "cuda";
  exec.stream = stream.s;
  auto x = on_device<float>(std::size_t(n));
  auto o = on_device<std::int64_t>(std::size_t(segments + 1));
  std::vector<std::int64_t> offsets(std::size_t(segments + 1));
  for (std::int64_t s = 0; s <= segments; ++s) offsets[std::size_t(s)] = s * length - (s > 0 && s < segments ? s % 7 : 0);
  upload(o, offsets);

  rt::reduce_job whole, argmax, fixed, by_offsets, window;
  whole.input = argmax.input = fixed.input = by_offsets.input = window.input = on_gpu(rt::dtype::float32, x.data(), n);
  argmax.op = rt::op_kind::argmax;
  fixed.shape = rt::shape_kind::fixed_segments, fixed.length = length, fixed.segments = segments;
  by_offsets.shape = rt::shape_kind::offsets, by_offsets.segments = segments, by_offsets.offsets = o.data();
  by_offsets.offsets_where = rt::memory::of("cuda");
  by_offsets.check_offsets = false;  // vouched for: the staged kernel clamps them
  window.shape = rt::shape_kind::window, window.length = w, window.op = rt::op_kind::max;
  const std::vector<rt::reduce_job> jobs{whole, argmax, fixed, by_offsets, window};
  std::vector<mc::device_buffer<std::byte>> outs, refs;
  for (const auto& job : jobs) {
    const std::size_t bytes = rt::size_of(rt::output_dtype(job)) * std::size_t(rt::output_count(job));
    outs.push_back(on_device<std::byte>(bytes));
    refs.push_back(on_device<std::byte>(bytes));
  }
  const std::size_t stats_bytes = rt::statistics_bytes(rt::dtype::float32);
  auto stats = on_device<std::byte>(stats_bytes), stats_ref = on_device<std::byte>(stats_bytes);
  const int bytes = 32, nq = 300, nt = 1000, k = 2;
  auto q = on_device<std::uint8_t>(std::size_t(nq) * bytes), t = on_device<std::uint8_t>(std::size_t(nt) * bytes);
  auto idx = on_device<std::int32_t>(std::size_t(nq) * k), dist = on_device<std::int32_t>(std::size_t(nq) * k);
  auto idx_ref = on_device<std::int32_t>(std::size_t(nq) * k), dist_ref = on_device<std::int32_t>(std::size_t(nq) * k);
  rt::knn_device_job knn;
  knn.query = q.data(), knn.queries = nq, knn.train = t.data(), knn.trains = nt, knn.bytes = bytes, knn.k = k;
  knn.where = rt::memory::of("cuda");

  auto run_all = [&](const rt::execution& on, std::vector<mc::device_buffer<std::byte>>& to, std::byte* s,
                     std::int32_t* i, std::int32_t* d) {
    for (std::size_t j = 0; j < jobs.size(); ++j)
      rt::reduce(jobs[j], out_on_gpu(rt::output_dtype(jobs[j]), to[j].data(), rt::output_count(jobs[j])), on);
    rt::statistics(on_gpu(rt::dtype::float32, x.data(), n), out_on_gpu(rt::dtype::uint8, s, std::int64_t(stats_bytes)), on);
    rt::knn_device_job search = knn;
    search.idx = i, search.dist = d;
    rt::knn(search, on);
  };
  const cudaGraphExec_t graph = capture(stream.s, [&] { run_all(exec, outs, stats.data(), idx.data(), dist.data()); });

  rt::execution eager;
  eager.backend = "cuda";
  const std::uint64_t seed = seed_for("GraphCapture.RuntimeJobsReplayWithNewData");
  std::mt19937_64 g(seed);
  for (int replay = 0; replay < 100; ++replay) {
    upload(x, mr_test::random_floats(std::size_t(n), seed + replay));
    std::vector<std::uint8_t> qt(std::size_t(nq + nt) * bytes);
    for (auto& b : qt) b = static_cast<std::uint8_t>(g());
    mc::check(cudaMemcpy(q.data(), qt.data(), std::size_t(nq) * bytes, cudaMemcpyHostToDevice), "upload");
    mc::check(cudaMemcpy(t.data(), qt.data() + std::size_t(nq) * bytes, std::size_t(nt) * bytes, cudaMemcpyHostToDevice),
              "upload");
    mc::check(cudaDeviceSynchronize(), "upload");
    mc::check(cudaGraphLaunch(graph, stream.s), "replay");
    mc::check(cudaStreamSynchronize(stream.s), "replay");
    run_all(eager, refs, stats_ref.data(), idx_ref.data(), dist_ref.data());
    mc::check(cudaDeviceSynchronize(), "eager calls");
    for (std::size_t j = 0; j < jobs.size(); ++j)
      ASSERT_EQ(outs[j].download(outs[j].size()), refs[j].download(refs[j].size())) << "job " << j << ", replay " << replay;
    ASSERT_EQ(stats.download(stats_bytes), stats_ref.download(stats_bytes)) << "replay " << replay;
    ASSERT_EQ(idx.download(idx.size()), idx_ref.download(idx_ref.size())) << "replay " << replay;
    ASSERT_EQ(dist.download(dist.size()), dist_ref.download(dist_ref.size())) << "replay " << replay;
  }
  cudaGraphExecDestroy(graph);
}

TEST(GraphCapture, CheckedOffsetsAreRefusedWithTheWayOut) {
  MR_REQUIRE_GPU();
  owned_stream stream;
  auto x = on_device<float>(100);
  auto o = on_device(std::vector<std::int64_t>{0, 50, 100});
  auto out = on_device<float>(2);
  rt::reduce_job job;
  job.input = on_gpu(rt::dtype::float32, x.data(), 100);
  job.shape = rt::shape_kind::offsets, job.segments = 2, job.offsets = o.data();
  job.offsets_where = rt::memory::of("cuda");
  rt::execution exec;
  exec.stream = stream.s;
  cudaGraph_t graph = nullptr;
  mc::check(cudaStreamBeginCapture(stream.s, cudaStreamCaptureModeGlobal), "begin capture");
  try {
    rt::reduce(job, out_on_gpu(rt::dtype::float32, out.data(), 2), exec);
    ADD_FAILURE() << "checked offsets ran under capture";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("check_offsets=False"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cudaStreamEndCapture(stream.s, &graph), cudaSuccess);
  if (graph) cudaGraphDestroy(graph);
}

}  // namespace
