// runtime/unavailable.hpp -- the stand-in of a backend this build lacks (its toolkit was not found
// at configure time): in the table under its name, with no devices, every job refused with the
// reason and what to install, so that "auto" passes it over and naming it says why.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "backend.hpp"

namespace multireduce::runtime {

class unavailable_backend final : public backend {
 public:
  /// What the real backend declares in the table (backend.hpp), so that the fronts present and
  /// route the stand-in as they would the backend, and why this build has none.
  struct declaration {
    std::string_view name, summary, noun;
    memory device_memory;
    bool automatic_for_host_data;
    std::string_view device_noun;  ///< also how --version and reports name an ordinal ("CUDA device 0")
    bool splits_over_devices;
    std::span<const int> dlpack_device_types;
    std::string_view why;
  };
  explicit unavailable_backend(const declaration& d) : d_(d), why_(d.why) {}
  std::string_view name() const override { return d_.name; }
  std::string_view summary() const override { return d_.summary; }
  std::string_view noun() const override { return d_.noun; }
  memory device_memory() const override { return d_.device_memory; }
  bool automatic_for_host_data() const override { return d_.automatic_for_host_data; }
  int device_count() const override { return 0; }
  std::string_view device_noun() const override { return d_.device_noun; }
  bool splits_over_devices() const override { return d_.splits_over_devices; }
  std::span<const int> dlpack_device_types() const override { return d_.dlpack_device_types; }
  std::string describe_device(int ordinal) const override { return std::string(d_.device_noun) + " " + std::to_string(ordinal); }
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
  [[noreturn]] void refuse() const { throw unsupported_error(d_.name, why_); }
  declaration d_;
  std::string why_;
};

}  // namespace multireduce::runtime
