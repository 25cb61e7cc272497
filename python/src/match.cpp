// python/src/match.cpp -- the matcher's bindings of multireduce._core: the k-NN search, the rules,
// and the collection matcher (match_all), over the runtime's jobs.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <multireduce/match/collection.hpp>
#include <multireduce/match/match.hpp>

#include "records.hpp"

namespace multireduce::python_core {
namespace {

/// The k-NN search of the operands query against train (uint8 rows of `bytes`): host arrays
/// (either backend; reverse_out non-zero: also every training row's nearest query, written there)
/// or arrays in one device's memory (queued on query's stream, not waited for). idx and dist are
/// (queries, k) int32 arrays in query's memory.
outcome knn(const nb::tuple& query, const nb::tuple& train, int bytes, int k, std::uintptr_t idx, std::uintptr_t dist,
            std::uintptr_t reverse_out, const std::string& backend, const std::vector<int>& devices) {
  const rt::array_view q = array_of(query), t = array_of(train);
  const rt::execution exec = execution_of(backend, q, query, devices);
  rt::knn_sets sets;
  sets.query = static_cast<const std::uint8_t*>(q.data);
  sets.queries = bytes > 0 ? q.count / bytes : 0;
  sets.train = static_cast<const std::uint8_t*>(t.data);
  sets.trains = bytes > 0 ? t.count / bytes : 0;
  sets.bytes = bytes;
  sets.k = k;
  if (!q.where.is_host()) {
    rt::knn_device_job job{sets};
    job.where = q.where;
    job.idx = reinterpret_cast<std::int32_t*>(idx);
    job.dist = reinterpret_cast<std::int32_t*>(dist);
    return without_gil([&] { return outcome_of(rt::knn(job, exec)); });
  }
  rt::knn_job job{sets};
  job.reverse = reverse_out != 0;
  return without_gil([&] {
    rt::knn_result result;
    const rt::report r = rt::knn(job, result, exec);
    const std::size_t n = std::size_t(sets.queries) * std::size_t(k) * sizeof(std::int32_t);
    if (n > 0) {
      std::memcpy(reinterpret_cast<void*>(idx), result.idx.data(), n);
      std::memcpy(reinterpret_cast<void*>(dist), result.dist.data(), n);
    }
    if (job.reverse && sets.trains > 0 && !result.reverse_nearest.empty())
      std::memcpy(reinterpret_cast<void*>(reverse_out), result.reverse_nearest.data(),
                  std::size_t(sets.trains) * sizeof(std::int32_t));
    return outcome_of(r);
  });
}

/// The matches kept by the rule from host k-NN lists (and the reverse search's nearest queries, or
/// 0), written as (query, train, distance) rows to `out` (room for `queries` rows); their number.
std::int64_t accept(std::uintptr_t idx, std::uintptr_t dist, std::int64_t queries, int k, double ratio, int margin,
                    int max_distance, bool cross_check, std::uintptr_t reverse_nearest, std::uintptr_t out) {
  const multireduce::match_rule rule{ratio, margin, max_distance, cross_check};
  const auto kept = multireduce::accept_matches(reinterpret_cast<const std::int32_t*>(idx),
                                                reinterpret_cast<const std::int32_t*>(dist), queries, k, rule,
                                                reinterpret_cast<const std::int32_t*>(reverse_nearest));
  auto* rows = reinterpret_cast<std::int32_t*>(out);
  for (std::size_t i = 0; i < kept.size(); ++i) {
    rows[3 * i] = kept[i].query;
    rows[3 * i + 1] = kept[i].train;
    rows[3 * i + 2] = kept[i].distance;
  }
  return static_cast<std::int64_t>(kept.size());
}

void check_match_rule(double ratio, int margin, int max_distance, bool cross_check) {
  multireduce::check_match_rule(multireduce::match_rule{ratio, margin, max_distance, cross_check});
}

/// The collection matcher on the operand `rows` (every image's uint8 rows, one after the other;
/// host or device memory): image n's rows at offsets[n]..offsets[n + 1] (`images` + 1 int64 at
/// the host address `offsets`), the `pair_count` pairs at the host address `pairs` ((i, j) int32
/// rows, i < j). Returns the offsets of each pair's matches (pair_count + 1 int64) and the matches
/// ((query, train, distance) int32 rows), as bytes, in pair order, and the outcome.
std::tuple<nb::bytes, nb::bytes, outcome> match_all(const nb::tuple& rows, std::uintptr_t offsets, std::int64_t images,
                                                   std::uintptr_t pairs, std::int64_t pair_count, int bytes, int k,
                                                   double ratio, int margin, int max_distance, bool cross_check,
                                                   std::int64_t memory_budget, const std::string& backend,
                                                   const std::vector<int>& devices) {
  const rt::array_view r = array_of(rows);
  const rt::execution exec = execution_of(backend, r, rows, devices);
  if (images < 0 || pair_count < 0 || memory_budget < 0) throw std::invalid_argument("negative counts");
  rt::collection_job job;
  job.collection = descriptor_collection{static_cast<const std::uint8_t*>(r.data),
                                         {reinterpret_cast<const std::int64_t*>(offsets), std::size_t(images + 1)},
                                         bytes};
  job.pairs = {reinterpret_cast<const image_pair*>(pairs), std::size_t(pair_count)};
  job.k = k;
  job.rule = match_rule{ratio, margin, max_distance, cross_check};
  job.where = r.where;
  job.memory_budget = std::size_t(memory_budget);
  collection_matches found;
  const rt::report how = without_gil([&] {
    collection_collector collector{std::size_t(pair_count)};
    const rt::report report = rt::match_collection(job, collector.callback(), exec);
    found = collector.take();
    return report;
  });
  static_assert(sizeof(match) == 12 && sizeof(image_pair) == 8);
  return {nb::bytes(found.offsets.data(), found.offsets.size() * sizeof(std::int64_t)),
          nb::bytes(found.matches.data(), found.matches.size() * sizeof(match)), outcome_of(how)};
}

}  // namespace

void bind_matcher(nb::module_& m) {
  using release = nb::call_guard<nb::gil_scoped_release>;
  m.def("knn", &knn, nb::arg("query"), nb::arg("train"), nb::arg("bytes"), nb::arg("k"), nb::arg("idx"),
        nb::arg("dist"), nb::arg("reverse_out"), nb::arg("backend"), nb::arg("devices") = std::vector<int>{});
  m.def("accept", &accept, release(), nb::arg("idx"), nb::arg("dist"), nb::arg("queries"), nb::arg("k"),
        nb::arg("ratio"), nb::arg("margin"), nb::arg("max_distance"), nb::arg("cross_check"),
        nb::arg("reverse_nearest"), nb::arg("out"));
  m.def("check_match_rule", &check_match_rule, nb::arg("ratio"), nb::arg("margin"), nb::arg("max_distance"),
        nb::arg("cross_check"));
  m.def("match_all", &match_all, nb::arg("rows"), nb::arg("offsets"), nb::arg("images"), nb::arg("pairs"),
        nb::arg("pair_count"), nb::arg("bytes"), nb::arg("k"), nb::arg("ratio"), nb::arg("margin"),
        nb::arg("max_distance"), nb::arg("cross_check"), nb::arg("memory_budget"), nb::arg("backend"),
        nb::arg("devices") = std::vector<int>{});
}

}  // namespace multireduce::python_core
