// Statistics of an array sharded over MPI ranks: every rank holds a piece, every rank gets the
// statistics of the whole array -- bitwise what multireduce::cpu::statistics gives in one process.
//   mpirun -np 2 ./example_mpi_statistics
#include <mpi.h>

#include <multireduce/mpi.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);

  // The global array x[i] = (i % 1000) * 0.001, i < 1000001, cut into uneven pieces in rank order.
  const std::int64_t total = 1000001;
  const std::int64_t first = total * rank / ranks, last = total * (rank + 1) / ranks;
  std::vector<double> mine(static_cast<std::size_t>(last - first));
  for (std::int64_t i = first; i < last; ++i) mine[static_cast<std::size_t>(i - first)] = double(i % 1000) * 0.001;

  const auto s = multireduce::mpi::statistics(MPI_COMM_WORLD, mine.data(), static_cast<std::int64_t>(mine.size()));
  const auto top = multireduce::mpi::argmax(MPI_COMM_WORLD, mine.data(), static_cast<std::int64_t>(mine.size()));
  std::printf("rank %d: count %lld, mean %.6f, std %.6f, first max at %lld (%.3f)\n", rank,
              static_cast<long long>(s.count), s.mean, s.std, static_cast<long long>(top.index), top.value);

  MPI_Finalize();
  return 0;
}
