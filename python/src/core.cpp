// python/src/core.cpp -- multireduce._core: the runtime (src/runtime) for the Python package.
//
// The compiled core is deliberately small: it takes arrays as (address, dtype, element count,
// device) with the device -1 for host memory, and runs one runtime job per call with the GIL
// released. Everything about frameworks (DLPack capsules, streams, allocating results in the
// input's framework) is the pure-Python front's (python/multireduce/_interop.py), except reading a
// DLPack capsule, which needs its C structs (dlpack_info below).
//
// Errors: std::invalid_argument -> ValueError, runtime::dtype_error -> TypeError,
// runtime::unsupported_error -> multireduce._core.Unsupported (the front falls back or names the
// backend), runtime::device_memory_error -> MemoryError, runtime::device_error ->
// multireduce.CudaError.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <multireduce/match/match.hpp>

#include "runtime/runtime.hpp"
#include "runtime/trace.hpp"

namespace nb = nanobind;
namespace rt = multireduce::runtime;

namespace {

// ---- DLPack (the structs of dlpack.h, v1.0: a stable C ABI) ---------------------------------------

struct dl_device {
  std::int32_t device_type;  // 1 CPU, 2 CUDA, 3 CUDA pinned host, 13 CUDA managed
  std::int32_t device_id;
};
struct dl_data_type {
  std::uint8_t code;  // 0 int, 1 uint, 2 float, 4 bfloat, 6 bool
  std::uint8_t bits;
  std::uint16_t lanes;
};
struct dl_tensor {
  void* data;
  dl_device device;
  std::int32_t ndim;
  dl_data_type dtype;
  std::int64_t* shape;
  std::int64_t* strides;  // in elements; null: C order
  std::uint64_t byte_offset;
};
struct dl_managed_tensor {
  dl_tensor tensor;
  void* manager_ctx;
  void (*deleter)(dl_managed_tensor*);
};
struct dl_managed_tensor_versioned {
  std::uint32_t major, minor;
  void* manager_ctx;
  void (*deleter)(dl_managed_tensor_versioned*);
  std::uint64_t flags;  // bit 0: read-only
  dl_tensor tensor;
};

std::string dl_dtype_name(const dl_data_type& t) {
  if (t.lanes != 1) return "a vector dtype";
  const std::string bits = std::to_string(t.bits);
  switch (t.code) {
    case 0: return "int" + bits;
    case 1: return "uint" + bits;
    case 2: return "float" + bits;
    case 4: return "bfloat" + bits;
    case 5: return "complex" + bits;
    case 6: return "bool";
    default: return "DLPack type code " + std::to_string(t.code);
  }
}

/// (address, dtype name, shape, strides or None, device type, device id, read-only) of the tensor in
/// a DLPack capsule, which stays unconsumed: its producer frees it when the capsule goes.
nb::tuple dlpack_info(nb::handle capsule) {
  PyObject* o = capsule.ptr();
  const dl_tensor* t = nullptr;
  bool read_only = false;
  if (PyCapsule_IsValid(o, "dltensor_versioned")) {
    auto* m = static_cast<dl_managed_tensor_versioned*>(PyCapsule_GetPointer(o, "dltensor_versioned"));
    if (m->major != 1) throw std::invalid_argument("DLPack version " + std::to_string(m->major) + " is not supported");
    t = &m->tensor;
    read_only = (m->flags & 1u) != 0;
  } else if (PyCapsule_IsValid(o, "dltensor")) {
    t = &static_cast<dl_managed_tensor*>(PyCapsule_GetPointer(o, "dltensor"))->tensor;
  } else {
    throw nb::type_error("not an unconsumed DLPack capsule");
  }
  nb::list shape, strides;
  for (int d = 0; d < t->ndim; ++d) {
    shape.append(t->shape[d]);
    if (t->strides != nullptr) strides.append(t->strides[d]);
  }
  const auto address = reinterpret_cast<std::uintptr_t>(static_cast<const char*>(t->data) + t->byte_offset);
  return nb::make_tuple(address, dl_dtype_name(t->dtype), nb::tuple(shape),
                        t->strides != nullptr ? nb::object(nb::tuple(strides)) : nb::none(), t->device.device_type,
                        t->device.device_id, read_only);
}

// ---- arrays as the front passes them ----------------------------------------------------------------

rt::dtype parse_dtype(const std::string& name) {
  for (rt::dtype d : rt::all_dtypes)
    if (rt::name_of(d) == name) return d;
  throw rt::dtype_error("dtype " + name + " is not one of multireduce's (int8..int64, uint8..uint64, float16, "
                        "float32, float64)");
}

rt::op_kind parse_op(const std::string& name) {
  if (auto op = rt::parse_op(name)) return *op;
  throw std::invalid_argument("op must be one of " + rt::op_names(", ") + ", not '" + name + "'");
}

rt::backend parse_backend(const std::string& name) {
  if (auto b = rt::parse_backend(name)) return *b;
  throw std::invalid_argument("backend must be 'auto', 'cpu' or 'cuda', not '" + name + "'");
}

/// device < 0: host memory; else that CUDA device's memory.
rt::memory where(int device) { return device < 0 ? rt::memory::host : rt::memory::cuda; }
/// The GPU ordinal a job names (host memory: device 0, which the runtime then does not use for it).
int ordinal(int device) { return device < 0 ? 0 : device; }

rt::array_view input_of(std::uintptr_t x, rt::dtype type, std::int64_t count, int device) {
  return rt::array_view{type, reinterpret_cast<const void*>(x), count, where(device), ordinal(device)};
}
rt::output_view output_of(std::uintptr_t out, rt::dtype type, std::int64_t count, int device) {
  return rt::output_view{type, reinterpret_cast<void*>(out), count, where(device), ordinal(device)};
}

rt::execution execution_of(const std::string& backend, int device, std::uintptr_t stream) {
  rt::execution exec;
  exec.requested = parse_backend(backend);
  exec.device = ordinal(device);
  exec.stream = reinterpret_cast<void*>(stream);
  return exec;
}

/// (backend used, why the GPU did not run it: "" when it did or was not asked to)
using outcome = std::pair<std::string, std::string>;
outcome outcome_of(const rt::report& r) { return {std::string(rt::to_string(r.used)), r.not_cuda}; }

// ---- the jobs -----------------------------------------------------------------------------------------

outcome reduce(std::uintptr_t x, const std::string& x_dtype, std::int64_t count, int device, const std::string& op,
               const std::string& shape, std::int64_t length, std::int64_t segments, std::int64_t inner,
               std::uintptr_t offsets, std::uintptr_t out, const std::string& backend, std::uintptr_t stream,
               bool new_output, bool check_offsets) {
  rt::reduce_job job;
  job.input = input_of(x, parse_dtype(x_dtype), count, device);
  job.op = parse_op(op);
  if (shape == "whole") job.shape = rt::shape_kind::whole;
  else if (shape == "axis") job.shape = rt::shape_kind::axis;
  else if (shape == "fixed") job.shape = rt::shape_kind::fixed_segments;
  else if (shape == "offsets") job.shape = rt::shape_kind::offsets;
  else if (shape == "window") job.shape = rt::shape_kind::window;
  else throw std::invalid_argument("no such shape: " + shape);
  job.length = length;
  job.segments = segments;
  job.inner = inner;
  job.offsets = reinterpret_cast<const std::int64_t*>(offsets);
  job.offsets_where = where(device);
  job.output_is_new = new_output;
  job.check_offsets = check_offsets;
  rt::validate(job);
  const rt::output_view o = output_of(out, rt::output_dtype(job), rt::output_count(job), device);
  return outcome_of(rt::reduce(job, o, execution_of(backend, device, stream)));
}

/// A whole-array reduce of GPU memory into GPU memory, queued on `stream`: the Python package's
/// hot path (a small job's time is mostly host time), without the report.
void reduce_whole(std::uintptr_t x, const std::string& x_dtype, std::int64_t count, int device, const std::string& op,
                  std::uintptr_t out, std::uintptr_t stream) {
  reduce(x, x_dtype, count, device, op, "whole", 0, 0, 1, 0, out, "cuda", stream, true, true);
}

std::string result_dtype(const std::string& op, const std::string& dtype) {
  const rt::op_kind k = parse_op(op);
  const rt::dtype t = parse_dtype(dtype);
  if (rt::info(k).integers_only && rt::is_floating(t))
    throw rt::dtype_error(op + " needs an integer dtype, not " + dtype);
  return std::string(rt::name_of(rt::result_dtype(k, t)));
}

outcome statistics(std::uintptr_t x, const std::string& x_dtype, std::int64_t count, int device, std::uintptr_t out,
                   const std::string& backend, std::uintptr_t stream) {
  const rt::dtype t = parse_dtype(x_dtype);
  const auto bytes = static_cast<std::int64_t>(rt::statistics_bytes(t));
  return outcome_of(rt::statistics(input_of(x, t, count, device), output_of(out, rt::dtype::uint8, bytes, device),
                                   execution_of(backend, device, stream)));
}

/// The fields of multireduce::statistics<T> for an input dtype: (name, byte offset, dtype name), and
/// the struct's size.
std::pair<std::vector<std::tuple<std::string, std::size_t, std::string>>, std::size_t> statistics_layout(
    const std::string& dtype) {
  return rt::visit(parse_dtype(dtype), [](auto element) {
    using E = decltype(element);
    using T = std::conditional_t<std::is_same_v<E, rt::float16_bits>, float, E>;
    using S = multireduce::statistics<T>;
    const std::string value(rt::name_of(rt::dtype_of<T>()));
    const std::string sum(rt::name_of(rt::dtype_of<multireduce::statistics_sum_t<T>>()));
    std::vector<std::tuple<std::string, std::size_t, std::string>> fields = {
        {"count", offsetof(S, count), "int64"}, {"sum", offsetof(S, sum), sum},
        {"mean", offsetof(S, mean), "float64"}, {"var", offsetof(S, var), "float64"},
        {"std", offsetof(S, std), "float64"},   {"min", offsetof(S, min), value},
        {"argmin", offsetof(S, argmin), "int64"}, {"max", offsetof(S, max), value},
        {"argmax", offsetof(S, argmax), "int64"}, {"l1", offsetof(S, l1), "float64"},
        {"l2", offsetof(S, l2), "float64"}};
    return std::make_pair(fields, sizeof(S));
  });
}

/// The k-NN search: host arrays (either backend; `reverse` also finds every training row's nearest
/// query, written to reverse_out) or arrays on one GPU (queued on the stream, not waited for).
outcome knn(std::uintptr_t query, std::int64_t queries, std::uintptr_t train, std::int64_t trains, int bytes, int k,
            int device, std::uintptr_t idx, std::uintptr_t dist, std::uintptr_t reverse_out, const std::string& backend,
            std::uintptr_t stream) {
  const rt::execution exec = execution_of(backend, device, stream);
  rt::knn_sets sets;
  sets.query = reinterpret_cast<const std::uint8_t*>(query);
  sets.queries = queries;
  sets.train = reinterpret_cast<const std::uint8_t*>(train);
  sets.trains = trains;
  sets.bytes = bytes;
  sets.k = k;
  if (device >= 0) {
    rt::knn_device_job job{sets};
    job.idx = reinterpret_cast<std::int32_t*>(idx);
    job.dist = reinterpret_cast<std::int32_t*>(dist);
    return outcome_of(rt::knn(job, exec));
  }
  rt::knn_job job{sets};
  job.reverse = reverse_out != 0;
  rt::knn_result result;
  const rt::report r = rt::knn(job, result, exec);
  const std::size_t n = std::size_t(queries) * std::size_t(k) * sizeof(std::int32_t);
  if (n > 0) {
    std::memcpy(reinterpret_cast<void*>(idx), result.idx.data(), n);
    std::memcpy(reinterpret_cast<void*>(dist), result.dist.data(), n);
  }
  if (job.reverse && trains > 0 && !result.reverse_nearest.empty())
    std::memcpy(reinterpret_cast<void*>(reverse_out), result.reverse_nearest.data(),
                std::size_t(trains) * sizeof(std::int32_t));
  return outcome_of(r);
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

std::string trace(const std::string& algorithm, int batches, int width) {
  rt::trace_options opts;
  if (!multireduce::parse(algorithm, opts.algorithm)) {
    std::string names;
    for (auto a : multireduce::all_multi_reduce_algorithms)
      names += (names.empty() ? "'" : ", '") + std::string(multireduce::to_string(a)) + "'";
    throw std::invalid_argument("algorithm must be one of " + names + ", not '" + algorithm + "'");
  }
  if (!rt::trace_supported(batches, width))
    throw std::invalid_argument(std::string("batches must be ") + rt::trace_batches_text + " and width " +
                                rt::trace_widths_text + ", not " + std::to_string(batches) + " and " +
                                std::to_string(width));
  opts.batches = batches;
  opts.width = width;
  return rt::trace_table(opts);
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "multireduce's compiled core (use the multireduce package, not this module)";
  m.attr("__version__") = MULTIREDUCE_VERSION;
  m.attr("match_max_k") = multireduce::match_max_k;

  static nb::exception<rt::unsupported_error> unsupported(m, "Unsupported", PyExc_RuntimeError);
  static nb::exception<rt::device_error> cuda_error(m, "CudaError", PyExc_RuntimeError);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const rt::dtype_error& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const rt::unsupported_error& e) {
      PyErr_SetString(unsupported.ptr(), e.what());
    } catch (const rt::device_memory_error& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const rt::device_error& e) {
      PyErr_SetString(cuda_error.ptr(), e.what());
    }
  });

  using release = nb::call_guard<nb::gil_scoped_release>;
  m.def("dlpack_info", &dlpack_info, nb::arg("capsule"));
  m.def("cuda_device_count", &rt::cuda_device_count, release());
  m.def("result_dtype", &result_dtype, nb::arg("op"), nb::arg("dtype"));
  m.def("reduce", &reduce, release(), nb::arg("x"), nb::arg("dtype"), nb::arg("count"), nb::arg("device"),
        nb::arg("op"), nb::arg("shape"), nb::arg("length"), nb::arg("segments"), nb::arg("inner"), nb::arg("offsets"),
        nb::arg("out"), nb::arg("backend"), nb::arg("stream"), nb::arg("new_output") = false,
        nb::arg("check_offsets") = true);
  m.def("reduce_whole", &reduce_whole, release(), nb::arg("x"), nb::arg("dtype"), nb::arg("count"), nb::arg("device"),
        nb::arg("op"), nb::arg("out"), nb::arg("stream"));
  m.def("statistics", &statistics, release(), nb::arg("x"), nb::arg("dtype"), nb::arg("count"), nb::arg("device"),
        nb::arg("out"), nb::arg("backend"), nb::arg("stream"));
  m.def("statistics_layout", &statistics_layout, nb::arg("dtype"));
  m.def("knn", &knn, release(), nb::arg("query"), nb::arg("queries"), nb::arg("train"), nb::arg("trains"),
        nb::arg("bytes"), nb::arg("k"), nb::arg("device"), nb::arg("idx"), nb::arg("dist"), nb::arg("reverse_out"),
        nb::arg("backend"), nb::arg("stream"));
  m.def("accept", &accept, release(), nb::arg("idx"), nb::arg("dist"), nb::arg("queries"), nb::arg("k"),
        nb::arg("ratio"), nb::arg("margin"), nb::arg("max_distance"), nb::arg("cross_check"),
        nb::arg("reverse_nearest"), nb::arg("out"));
  m.def("check_match_rule", &check_match_rule, nb::arg("ratio"), nb::arg("margin"), nb::arg("max_distance"),
        nb::arg("cross_check"));
  m.def("trace", &trace, nb::arg("algorithm"), nb::arg("batches"), nb::arg("width"));
}
