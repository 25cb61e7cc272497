// runtime/opencl/collection.cpp -- the collection matcher on an OpenCL device: the collection's
// rows (in host memory) uploaded once, then every pair searched in list order (and back, for the
// cross check), each pair's kept matches handed out as it is read back.
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <multireduce/match/match.hpp>

#include "context.hpp"
#include "jobs.hpp"

namespace multireduce::runtime::opencl_backend_detail {

void collection_on_device(const collection_job& job, const pair_matches_callback& done, const execution& exec,
                          report& r) {
  if (!job.where.is_host()) throw std::invalid_argument("the OpenCL backend matches collections in host memory");
  const descriptor_collection& c = job.collection;
  check_match_rule(job.rule);
  check_collection(c, job.pairs, job.k);
  if ((job.rule.ratio > 0 || job.rule.margin >= 0) && job.k < 2)
    throw std::invalid_argument("the ratio and margin tests need k >= 2");
  const int ordinal = exec.devices.first();
  on_device(ordinal, "the collection matcher", [&](device& d) {
    job_clock clock{d};
    const std::int64_t rows = c.offsets.empty() ? 0 : c.offsets.back();
    const std::size_t bytes = std::size_t(rows) * std::size_t(c.bytes);
    cl::Buffer all = allocate(d, bytes, "the collection's descriptors");
    upload(d, all, c.rows, bytes);
    std::int64_t total = 0, compared = 0;
    for (const image_pair& p : job.pairs) total += c.rows_of(p.first) * c.rows_of(p.second);
    std::vector<std::int32_t> idx, dist, reverse, reverse_dist;
    for (std::size_t i = 0; i < job.pairs.size(); ++i) {
      const image_pair p = job.pairs[i];
      const std::int64_t queries = c.rows_of(p.first), trains = c.rows_of(p.second);
      const std::int64_t q0 = c.offsets[std::size_t(p.first)], t0 = c.offsets[std::size_t(p.second)];
      knn_on_device(d, all, q0, queries, all, t0, trains, c.bytes, job.k, idx, dist, clock);
      if (job.rule.cross_check)
        knn_on_device(d, all, t0, trains, all, q0, queries, c.bytes, 1, reverse, reverse_dist, clock);
      const auto kept = accept_matches(idx.data(), dist.data(), queries, job.k, job.rule,
                                       job.rule.cross_check ? reverse.data() : nullptr);
      done(std::int64_t(i), kept);
      compared += queries * trains;
      if (exec.progress) exec.progress(compared, total);
    }
    clock.report_to(r, d, ordinal);
  });
}

}  // namespace multireduce::runtime::opencl_backend_detail
