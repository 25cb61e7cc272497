// runtime/unavailable.hpp -- the stand-in of a backend this build lacks (its toolkit was not found
// at configure time): in the table under its name, with no devices, every job refused with the
// reason and what to install, so that "auto" passes it over and naming it says why.
#pragma once

#include <string>
#include <string_view>

#include "backend.hpp"

namespace multireduce::runtime {

class unavailable_backend final : public backend {
 public:
  /// `device_noun`: how --version and reports name an ordinal ("GPU", "OpenCL device").
  unavailable_backend(std::string_view name, std::string_view summary, std::string_view noun, memory device_memory,
                      bool automatic, std::string_view device_noun, std::string_view why)
      : name_(name), summary_(summary), noun_(noun), memory_(device_memory), automatic_(automatic),
        device_noun_(device_noun), why_(why) {}
  std::string_view name() const override { return name_; }
  std::string_view summary() const override { return summary_; }
  std::string_view noun() const override { return noun_; }
  memory device_memory() const override { return memory_; }
  bool automatic_for_host_data() const override { return automatic_; }
  int device_count() const override { return 0; }
  std::string describe_device(int ordinal) const override { return std::string(device_noun_) + " " + std::to_string(ordinal); }
  refusal unsupported(const reduce_job&, const device_set&) const override { return {why_}; }
  refusal unsupported_statistics(dtype, const device_set&) const override { return {why_}; }
  refusal unsupported_knn(int, const device_set&) const override { return {why_}; }
  void reduce(const reduce_job&, array_source&, output_sink&, const execution&, report&) const override { refuse(); }
  void statistics(array_source&, any_statistics&, const execution&, report&) const override { refuse(); }
  void knn(const knn_job&, knn_result&, const execution&, report&) const override { refuse(); }
  void match_collection(const collection_job&, const pair_matches_callback&, const execution&, report&) const override {
    refuse();
  }
  using backend::knn;
  using backend::reduce;
  using backend::statistics;

 private:
  [[noreturn]] void refuse() const { throw unsupported_error(name_, why_); }
  std::string_view name_, summary_, noun_;
  memory memory_;
  bool automatic_;
  std::string_view device_noun_;
  std::string why_;
};

}  // namespace multireduce::runtime
