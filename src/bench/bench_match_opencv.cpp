// bench_match_opencv.cpp -- the CPU matcher against OpenCV's cv::BFMatcher(NORM_HAMMING).knnMatch
// (k = 2) on the same machine and cores. Built only when OpenCV is installed (Debian:
// libopencv-dev); OpenCV is used here and nowhere else. Random descriptors; OpenCV's neighbours
// are checked against multireduce's (same order, same distances) before anything is timed.
//   multireduce_bench_opencv [--quick]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/features2d.hpp>

#include <multireduce/match/cpu.hpp>

namespace {

double median_seconds(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
double time_runs(int runs, F&& f) {
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return median_seconds(t);
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const int threads = omp_get_max_threads();
  cv::setNumThreads(threads);
  std::printf("OpenCV %s (%d threads), multireduce CPU matcher (OpenMP, %d threads), k = 2\n", CV_VERSION,
              cv::getNumThreads(), threads);
  std::printf("%8s %8s %5s %14s %14s %8s\n", "queries", "train", "bits", "OpenCV G/s", "ours G/s", "x OpenCV");
  std::mt19937_64 rng(20261121);
  bool ok = true;
  const int n = quick ? 2000 : 10000;
  for (int bytes : {32, 64}) {
    cv::Mat q(n, bytes, CV_8U), t(n, bytes, CV_8U);
    for (int i = 0; i < n * bytes; ++i) q.data[i] = static_cast<std::uint8_t>(rng()), t.data[i] = static_cast<std::uint8_t>(rng());
    cv::BFMatcher matcher(cv::NORM_HAMMING);
    std::vector<std::vector<cv::DMatch>> knn;
    std::vector<std::int32_t> idx(std::size_t(n) * 2), dist(idx.size());
    matcher.knnMatch(q, t, knn, 2);
    multireduce::cpu::knn_hamming(q.data, n, t.data, n, bytes, 2, idx.data(), dist.data());
    for (int i = 0; i < n && ok; ++i)
      for (int j = 0; j < 2; ++j)
        if (knn[std::size_t(i)][std::size_t(j)].trainIdx != idx[std::size_t(2 * i + j)] ||
            int(knn[std::size_t(i)][std::size_t(j)].distance) != dist[std::size_t(2 * i + j)]) {
          std::printf("MISMATCH query %d neighbour %d: OpenCV (%d, %g), ours (%d, %d)\n", i, j,
                      knn[std::size_t(i)][std::size_t(j)].trainIdx, double(knn[std::size_t(i)][std::size_t(j)].distance),
                      idx[std::size_t(2 * i + j)], dist[std::size_t(2 * i + j)]);
          ok = false;
        }
    const int runs = quick ? 3 : 5;
    const double cv_s = time_runs(runs, [&] { matcher.knnMatch(q, t, knn, 2); });
    const double our_s = time_runs(runs, [&] { multireduce::cpu::knn_hamming(q.data, n, t.data, n, bytes, 2, idx.data(), dist.data()); });
    const double comparisons = double(n) * double(n);
    std::printf("%8d %8d %5d %14.3f %14.3f %8.2f\n", n, n, bytes * 8, comparisons / cv_s / 1e9, comparisons / our_s / 1e9,
                cv_s / our_s);
  }
  return ok ? 0 : 1;
}
