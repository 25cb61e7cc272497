// A sum and the statistics of an array sharded over GPUs, one process per GPU, NCCL underneath:
// every rank gets the same result, whatever the number of ranks or the shard lengths.
//   ./example_nccl_ranks /tmp/nccl.id    (starts itself once per GPU, a rank each; exits 77 without a GPU)
#include <cuda_runtime.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <multireduce/nccl.cuh>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace mr = multireduce;

// One rank: rank 0 publishes NCCL's unique id in `id_file` (written, then renamed), the others read it.
static int rank_main(int rank, int ranks, const std::string& id_file) {
  cudaSetDevice(rank);
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
  ncclCommInitRank(&comm, ranks, id, rank);
  cudaStream_t stream;
  cudaStreamCreate(&stream);

  // Rank r holds 1000 + r elements of the global array x[i] = i % 10.
  const std::int64_t n = 1000 + rank, first = std::int64_t(rank) * 1000 + std::int64_t(rank) * (rank - 1) / 2;
  std::vector<float> host(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) host[static_cast<std::size_t>(i)] = float((first + i) % 10);
  mr::cuda::device_buffer<float> mine(host.size());
  cudaMemcpy(mine.data(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);

  const float total = mr::nccl::reduce(comm, stream, mine.data(), n, mr::sum{}, 0.0f);
  const auto s = mr::nccl::statistics(comm, stream, mine.data(), n);
  std::printf("rank %d of %d: sum %.1f, count %lld, mean %.4f, first max at %lld\n", rank, ranks, total,
              static_cast<long long>(s.count), s.mean, static_cast<long long>(s.argmax));

  ncclCommDestroy(comm);
  cudaStreamDestroy(stream);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[2]) == "--rank") return rank_main(std::atoi(argv[3]), std::atoi(argv[4]), argv[1]);
  const std::string id_file = argc > 1 ? argv[1] : "nccl_ranks.id";
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    std::printf("no CUDA GPU: skipped\n");
    return 77;
  }
  std::remove(id_file.c_str());
  std::vector<pid_t> children;
  for (int r = 0; r < gpus; ++r) {  // one process per GPU: this program again (a fresh CUDA context)
    const pid_t pid = fork();
    if (pid == 0) {
      const std::string rank = std::to_string(r), ranks = std::to_string(gpus);
      execl("/proc/self/exe", argv[0], id_file.c_str(), "--rank", rank.c_str(), ranks.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    children.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  std::remove(id_file.c_str());
  return failed;
}
