// The runtime's table of backends, seen from a test binary of its own that registers a fake
// backend: "auto" chooses it where it runs the job and passes it over (saying why) where it does
// not; the lists of backends in errors name it; the memory it names is its own to read. Nothing
// outside this file knows the fake backend.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/backend.hpp"
#include "runtime/runtime.hpp"

namespace rt = multireduce::runtime;

namespace {

/// Sums whole float arrays, in host memory or its own ("fake"), and answers 1000 + the true sum so
/// that a test sees which backend ran.
class fake_backend final : public rt::backend {
 public:
  std::string_view name() const override { return "fake"; }
  std::string_view summary() const override { return "a backend of the test"; }
  rt::memory device_memory() const override { return rt::memory::of("fake"); }
  int device_count() const override { return 1; }
  std::string describe_device(int ordinal) const override { return "fake device " + std::to_string(ordinal); }
  rt::refusal unsupported(const rt::reduce_job& job, const rt::device_set&) const override {
    if (job.shape != rt::shape_kind::whole || job.op != rt::op_kind::sum || job.input.type != rt::dtype::float32)
      return {"the fake backend sums whole float32 arrays only"};
    return {};
  }
  rt::refusal unsupported_statistics(rt::dtype, const rt::device_set&) const override {
    return {"the fake backend has no statistics", true};
  }
  rt::refusal unsupported_knn(int, const rt::device_set&) const override { return {"the fake backend does not match"}; }

  void reduce(const rt::reduce_job&, rt::array_source& in, rt::output_sink& out, const rt::execution&,
              rt::report& r) const override {
    const auto* x = static_cast<const float*>(in.read(0, in.count()));
    const float total = 1000.0f + std::accumulate(x, x + in.count(), 0.0f);
    r.device = 0;
    out.write(&total, 1);
  }
  void reduce(const rt::reduce_job& job, const rt::output_view& out, const rt::execution&, rt::report& r) const override {
    const auto* x = static_cast<const float*>(job.input.data);
    *static_cast<float*>(out.data) = 1000.0f + std::accumulate(x, x + job.input.count, 0.0f);
    r.device = 0;
  }
  void statistics(rt::array_source&, rt::any_statistics&, const rt::execution&, rt::report&) const override {
    throw std::logic_error("never asked: it refuses statistics");
  }
  void knn(const rt::knn_job&, rt::knn_result&, const rt::execution&, rt::report&) const override {
    throw std::logic_error("never asked: it refuses the search");
  }
  void match_collection(const rt::collection_job&, const multireduce::pair_matches_callback&, const rt::execution&,
                        rt::report&) const override {
    throw std::logic_error("never asked: it refuses the search");
  }
  using backend::knn;
  using backend::statistics;
};

const fake_backend fake;

class BackendTable : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { rt::register_backend(fake, 0); }  // first: "auto" tries it before the others
};

rt::execution on(std::string_view backend) {
  rt::execution e;
  e.backend = backend;
  return e;
}

float run_sum(const std::vector<float>& x, const rt::execution& exec, rt::report* how = nullptr) {
  rt::reduce_job job;
  job.input = rt::array_view{rt::dtype::float32, x.data(), std::int64_t(x.size())};
  float out = -1;
  const rt::report r = rt::reduce(job, rt::output_view{rt::dtype::float32, &out, 1}, exec);
  if (how) *how = r;
  return out;
}

TEST_F(BackendTable, ListsTheRegisteredBackendInOrder) {
  EXPECT_EQ(rt::backend_names(), (std::vector<std::string>{"auto", "fake", "cuda", "cpu", "opencl"}));
  EXPECT_EQ(rt::backend_list(), "auto, fake, cuda, cpu, opencl");
  EXPECT_EQ(&rt::find_backend("fake"), &fake);
  EXPECT_EQ(rt::device_count("fake"), 1);
}

TEST_F(BackendTable, AutomaticChoosesItWhereItRunsTheJob) {
  rt::report how;
  EXPECT_EQ(run_sum({1, 2, 3}, on("auto"), &how), 1006.0f);
  EXPECT_EQ(how.backend, "fake");
  EXPECT_EQ(rt::describe_device(how), "fake device 0");
  EXPECT_EQ(run_sum({1, 2, 3}, on("cpu"), &how), 6.0f);
  EXPECT_EQ(how.backend, "cpu");
}

TEST_F(BackendTable, AutomaticPassesItOverSayingWhy) {
  const std::vector<float> x{5, 1, 4};
  rt::reduce_job job;
  job.input = rt::array_view{rt::dtype::float32, x.data(), 3};
  job.op = rt::op_kind::max;
  float out = -1;
  const rt::report how = rt::reduce(job, rt::output_view{rt::dtype::float32, &out, 1}, on("auto"));
  EXPECT_EQ(out, 5.0f);
  EXPECT_NE(how.backend, "fake");
  EXPECT_NE(how.passed_over.find("not fake: the fake backend sums whole float32 arrays only"), std::string::npos)
      << how.passed_over;
}

TEST_F(BackendTable, NamingItRunsItOrSaysWhyNot) {
  EXPECT_EQ(run_sum({1, 2}, on("fake")), 1003.0f);
  rt::any_statistics s;
  const std::vector<float> x{1, 2};
  try {
    rt::statistics(rt::array_view{rt::dtype::float32, x.data(), 2}, s, on("fake"));
    FAIL() << "the fake backend ran statistics";
  } catch (const rt::unsupported_error& e) {
    EXPECT_EQ(e.backend, "fake");
    EXPECT_TRUE(e.dtype);
    EXPECT_STREQ(e.what(), "the fake backend has no statistics");
  }
}

TEST_F(BackendTable, UnknownNamesAreRefusedWithEveryName) {
  try {
    run_sum({1}, on("nope"));
    FAIL() << "an unknown backend ran";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "unknown backend 'nope': the backends are auto, fake, cuda, cpu, opencl");
  }
  EXPECT_THROW(rt::check_backend_name("gpu"), std::invalid_argument);
  EXPECT_NO_THROW(rt::check_backend_name("fake"));
  EXPECT_THROW(rt::register_backend(fake), std::invalid_argument);  // the name is taken
}

TEST_F(BackendTable, ItsMemoryIsItsOwnToRead) {
  const std::vector<float> x{1, 2, 3};
  rt::reduce_job job;
  job.input = rt::array_view{rt::dtype::float32, x.data(), 3, rt::memory::of("fake"), 0};
  float out = -1;
  const rt::output_view o{rt::dtype::float32, &out, 1, rt::memory::of("fake"), 0};
  rt::report how = rt::reduce(job, o, on("auto"));
  EXPECT_EQ(how.backend, "fake");
  EXPECT_EQ(out, 1006.0f);
  try {
    rt::reduce(job, o, on("cpu"));
    FAIL() << "the CPU read fake memory";
  } catch (const rt::unsupported_error& e) {
    EXPECT_STREQ(e.what(), "the arrays are in fake memory, which only the fake backend reads");
  }
  job.op = rt::op_kind::max;
  try {
    rt::reduce(job, o, on("auto"));
    FAIL() << "the fake backend ran a max";
  } catch (const rt::unsupported_error& e) {
    EXPECT_EQ(e.backend, "fake");
  }
}

// What the fronts read (the CLI's --device and --devices, Python's devices=): a device number names a
// device of the named backend where it numbers its own, else of the first that does and runs host
// data under "auto"; a set of several, of the first that splits jobs. The same in a build without
// CUDA, whose stand-in declares what the backend would.
TEST_F(BackendTable, TheFrontsReadWhoseDevicesANumberNames) {
  EXPECT_EQ(rt::numbering_devices_for("auto")->name(), "cuda");
  EXPECT_EQ(rt::numbering_devices_for("cpu")->name(), "cuda");
  EXPECT_EQ(rt::numbering_devices_for("fake")->name(), "cuda");  // it numbers no devices of its own
  EXPECT_EQ(rt::numbering_devices_for("opencl")->name(), "opencl");
  EXPECT_EQ(rt::find_backend("opencl").device_noun(), "OpenCL device");
  EXPECT_EQ(rt::splitting_devices_for("auto")->name(), "cuda");
  EXPECT_EQ(rt::splitting_devices_for("opencl")->name(), "cuda");
  EXPECT_THROW(rt::numbering_devices_for("nope"), std::invalid_argument);
  EXPECT_TRUE(fake.dlpack_device_types().empty());  // the defaults: nothing declared
  EXPECT_FALSE(fake.splits_over_devices());
}

}  // namespace
