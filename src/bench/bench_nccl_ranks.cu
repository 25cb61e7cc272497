// bench_nccl_ranks.cu -- multireduce-bench-nccl: the NCCL front's statistics under weak scaling,
// one process per GPU (this program started again with --rank, NCCL's unique id shared through a
// file), for N = 1, 2, 4, ... up to the GPUs of the machine, 2^30 float32 per rank by default:
// each rank's median time of nccl::statistics (11 timed calls after 2 warm-ups; the call is
// blocking) against N = 1's, the bar being <= 1.1x, and the plain one-GPU call on the rank's shard
// beside it. Before a time counts, every rank's result must be bitwise the same as every other
// rank's and the same in every call (run to run).
//   multireduce-bench-nccl [--log2 30] [--json FILE]
// NVLink multicast stays off (NCCL_NVLS_ENABLE=0 unless the environment says otherwise).
#include <cuda_runtime.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <multireduce/cuda.cuh>
#include <multireduce/nccl.cuh>

namespace {

namespace mr = multireduce;

/// x[i] of the global array: a hash of i mapped to [-1, 1).
__global__ void fill(float* x, std::int64_t n, std::int64_t first) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    std::uint64_t h = std::uint64_t(first + i) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    x[i] = float(h >> 40) / float(1 << 23) - 1.0f;
  }
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string hex(const void* p, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    const auto b = static_cast<const unsigned char*>(p)[i];
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

/// One rank: writes "seconds plain_seconds same_every_call result_hex" to out_file.
int rank_main(int rank, int ranks, int log2, const std::string& id_file, const std::string& out_file) {
  int gpus = 0;
  check(cudaGetDeviceCount(&gpus), "counting GPUs");
  check(cudaSetDevice(rank % gpus), "choosing the GPU");
  ncclUniqueId id;
  if (rank == 0) {
    ncclGetUniqueId(&id);
    std::ofstream(id_file + ".tmp", std::ios::binary).write(reinterpret_cast<const char*>(&id), sizeof id);
    std::rename((id_file + ".tmp").c_str(), id_file.c_str());
  } else {
    for (std::ifstream in; !(in = std::ifstream(id_file, std::ios::binary)) || !in.read(reinterpret_cast<char*>(&id), sizeof id);)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, ranks, id, rank) != ncclSuccess) {
    std::fprintf(stderr, "rank %d: ncclCommInitRank failed\n", rank);
    return 1;
  }
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "creating a stream");
  const std::int64_t n = std::int64_t(1) << log2;
  mr::cuda::device_buffer<float> x(static_cast<std::size_t>(n));
  fill<<<1024, 256, 0, stream>>>(x.data(), n, n * rank);
  check(cudaStreamSynchronize(stream), "filling the shard");

  using S = mr::statistics<float>;
  std::vector<S> results;
  std::vector<double> times, plain_times;
  for (int call = 0; call < 13; ++call) {
    const auto start = std::chrono::steady_clock::now();
    const S s = mr::nccl::statistics(comm, stream, x.data(), n);
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (call >= 2) times.push_back(t);
    results.push_back(s);
  }
  mr::cuda::workspace ws(stream);
  for (int call = 0; call < 13; ++call) {
    const auto start = std::chrono::steady_clock::now();
    (void)ws.statistics(x.data(), n);
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (call >= 2) plain_times.push_back(t);
  }
  bool same = true;
  for (const S& s : results) same = same && std::memcmp(&s, &results[0], sizeof s) == 0;
  std::ofstream(out_file) << median(times) << ' ' << median(plain_times) << ' ' << (same ? 1 : 0) << ' '
                          << hex(&results[0], sizeof(S)) << '\n';
  ncclCommDestroy(comm);
  cudaStreamDestroy(stream);
  return 0;
}

struct rank_result {
  double seconds = 0, plain_seconds = 0;
  bool same_every_call = false;
  std::string result;
};

/// Starts N ranks (this program again) and reads what each wrote; empty when a rank failed.
std::vector<rank_result> run_ranks(const char* self, int ranks, int log2) {
  const std::string base = "/tmp/multireduce_bench_nccl_" + std::to_string(::getpid()) + "_" + std::to_string(ranks);
  const std::string id_file = base + ".id";
  std::remove(id_file.c_str());
  std::vector<pid_t> children;
  for (int r = 0; r < ranks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      const std::string rank = std::to_string(r), count = std::to_string(ranks), l = std::to_string(log2),
                        out = base + "." + rank + ".out";
      execl("/proc/self/exe", self, "--rank", rank.c_str(), count.c_str(), l.c_str(), id_file.c_str(), out.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    children.push_back(pid);
  }
  bool failed = false;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    failed = failed || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  std::remove(id_file.c_str());
  std::vector<rank_result> out;
  for (int r = 0; r < ranks && !failed; ++r) {
    const std::string file = base + "." + std::to_string(r) + ".out";
    std::ifstream in(file);
    rank_result rr;
    int same = 0;
    if (!(in >> rr.seconds >> rr.plain_seconds >> same >> rr.result)) failed = true;
    rr.same_every_call = same == 1;
    out.push_back(rr);
    std::remove(file.c_str());
  }
  if (failed) out.clear();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 7 && std::string(argv[1]) == "--rank")
    return rank_main(std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]), argv[5], argv[6]);
  int log2 = 30;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--log2" && i + 1 < argc) log2 = std::atoi(argv[++i]);
    else if (a == "--json" && i + 1 < argc) json_path = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--log2 K] [--json FILE]\n", argv[0]);
      return 2;
    }
  }
  if (log2 < 10 || log2 > 34) {
    std::fprintf(stderr, "--log2 must be 10..34, got %d\n", log2);
    return 2;
  }
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    std::printf("no CUDA GPU: nothing to measure\n");
    return 77;
  }
  // No CUDA context in this process before the fork (cudaGetDeviceCount makes none that the
  // children inherit: each rank execs afresh).
  std::printf("NCCL front, statistics of 2^%d float32 per rank (weak scaling), one process per GPU, median of 11 "
              "calls\n",
              log2);
  nlohmann::json rows = nlohmann::json::array();
  bool ok = true;
  double one = 0;
  for (int ranks = 1; ranks <= gpus; ranks *= 2) {
    const auto results = run_ranks(argv[0], ranks, log2);
    if (results.empty()) {
      std::printf("%d ranks: a rank failed\n", ranks);
      ok = false;
      continue;
    }
    double slowest = 0, plain = 0;
    bool same = true;
    for (const auto& r : results) {
      slowest = std::max(slowest, r.seconds);
      plain = std::max(plain, r.plain_seconds);
      same = same && r.same_every_call && r.result == results[0].result;
    }
    if (ranks == 1) one = slowest;
    ok = ok && same;
    const double ratio = slowest / one;
    std::printf("%d rank%s  %9.3f ms  (one GPU's plain call on its shard %9.3f ms)  %.3fx the 1-rank time (bar <= 1.1)%s%s\n",
                ranks, ranks == 1 ? " " : "s", slowest * 1e3, plain * 1e3, ratio,
                ranks > 1 && ratio > 1.1 ? "  ABOVE THE BAR" : "", same ? "" : "  VERIFY FAILED (ranks or calls differ)");
    rows.push_back({{"ranks", ranks}, {"elements_per_rank", std::int64_t(1) << log2}, {"seconds", slowest},
                    {"plain_one_gpu_seconds", plain}, {"ratio_to_one_rank", ratio}, {"bitwise_same", same},
                    {"result_hex", results[0].result}});
  }
  if (!json_path.empty()) std::ofstream(json_path) << nlohmann::json{{"nccl_statistics_weak_scaling", rows}}.dump(2) << '\n';
  return ok ? 0 : 1;
}
