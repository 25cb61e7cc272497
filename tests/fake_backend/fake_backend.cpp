// tests/fake_backend/fake_backend.cpp -- a fourth backend, "fake", registered in the runtime's table
// by this file alone: linked into a test build of the tool (multireduce_fake_backend_cli) and of the
// Python core (the fake package's multireduce._core), it shows that a backend is its code plus one
// registration line: the CLI's --backend, --device and --help and the Python package's backend=
// read everything else from the table. It sums whole float64 and float32 arrays on the host and
// answers 1000 + the sum, so that a test sees that it ran; it refuses every other job with why.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "runtime/backend.hpp"

namespace {

namespace rt = multireduce::runtime;

/// The sum of `count` elements of T read from the source front to back, plus 1000.
template <class T>
T marked_sum(rt::array_source& in) {
  T total = 1000;
  const std::int64_t n = in.count(), piece = std::max<std::int64_t>(1, in.piece_elements());
  for (std::int64_t first = 0; first < n; first += piece) {
    const std::int64_t count = std::min(piece, n - first);
    const auto* x = static_cast<const T*>(in.read(first, count));
    for (std::int64_t i = 0; i < count; ++i) total += x[i];
  }
  return total;
}

class fake_backend final : public rt::backend {
 public:
  std::string_view name() const override { return "fake"; }
  std::string_view summary() const override { return "a backend of the tests (whole float sums, plus 1000)"; }
  std::string_view noun() const override { return "the fake backend"; }
  bool automatic_for_host_data() const override { return false; }  // only when named
  int device_count() const override { return 1; }
  std::string_view device_noun() const override { return "fake device"; }
  std::string describe_device(int ordinal) const override { return "fake device " + std::to_string(ordinal); }

  rt::refusal unsupported(const rt::reduce_job& job, const rt::device_set& devices) const override {
    if (!devices.single() || devices.first() != 0) return {"the fake backend has one device, fake device 0"};
    if (job.shape != rt::shape_kind::whole || job.op != rt::op_kind::sum) return {"the fake backend sums whole arrays only"};
    if (job.input.type != rt::dtype::float64 && job.input.type != rt::dtype::float32)
      return {"the fake backend sums float64 and float32 only", true};
    return {};
  }
  rt::refusal unsupported_statistics(rt::dtype, const rt::device_set&) const override {
    return {"the fake backend has no statistics"};
  }
  rt::refusal unsupported_knn(int, const rt::device_set&) const override { return {"the fake backend does not match"}; }

  void reduce(const rt::reduce_job&, rt::array_source& in, rt::output_sink& out, const rt::execution&,
              rt::report& r) const override {
    if (in.type() == rt::dtype::float64) {
      const double total = marked_sum<double>(in);
      out.write(&total, 1);
    } else {
      const float total = marked_sum<float>(in);
      out.write(&total, 1);
    }
    r.device = 0;
    r.device_name = "fake device 0";
    r.bytes_read = in.count() * std::int64_t(rt::size_of(in.type()));
  }
  void statistics(rt::array_source&, rt::any_statistics&, const rt::execution&, rt::report&) const override {
    throw std::logic_error("never asked: the fake backend refuses statistics");
  }
  void knn(const rt::knn_job&, rt::knn_result&, const rt::execution&, rt::report&) const override {
    throw std::logic_error("never asked: the fake backend refuses the search");
  }
  void match_collection(const rt::collection_job&, const multireduce::pair_matches_callback&, const rt::execution&,
                        rt::report&) const override {
    throw std::logic_error("never asked: the fake backend refuses the search");
  }
  using backend::knn;
  using backend::reduce;
  using backend::statistics;
};

const fake_backend the_fake;

// The registration line: at the end of the table, so that "auto" chooses as it did without it.
[[maybe_unused]] const bool registered = (rt::register_backend(the_fake), true);

}  // namespace
