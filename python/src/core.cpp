// python/src/core.cpp -- multireduce._core: the runtime (src/runtime) for the Python package.
//
// The compiled core is deliberately small: it takes arrays and jobs as the front's named records
// (operand_fields, job_fields below), reads them, and runs one runtime job per call with the GIL
// released. Everything about frameworks (DLPack capsules, streams, allocating results in the
// input's framework) is the pure-Python front's (python/multireduce/_arrays.py and _results.py), except reading a
// DLPack capsule, which needs its C structs (dlpack_info below).
//
// Errors: std::invalid_argument -> ValueError, runtime::dtype_error -> TypeError,
// runtime::unsupported_error -> multireduce._core.Unsupported, as UnsupportedDtype (a TypeError)
// when the element type is why, else UnsupportedJob (a ValueError): the front falls back to the
// host for "auto" or lets it through; runtime::device_memory_error -> MemoryError,
// runtime::device_error -> multireduce.CudaError.
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

#include "runtime/backend.hpp"
#include "runtime/runtime.hpp"
#include "records.hpp"
#include "runtime/trace.hpp"

namespace nb = nanobind;
namespace rt = multireduce::runtime;

namespace {

// ---- DLPack (the structs of dlpack.h, v1.0: a stable C ABI) ---------------------------------------

struct dl_device {
  std::int32_t device_type;  // DLDeviceType: which backend's memory it is, the table says (backend_table)
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

// ---- the front's records -------------------------------------------------------------------------
// The pure-Python front passes arrays and jobs as named tuples whose fields the core names here, so
// the two sides cannot disagree on positions: the front makes its records from operand_fields and
// job_fields (python/multireduce/_records.py).

/// An array as the front imported it: its framework and object, its address, dtype name, shape and
/// element count, the memory it is in ("host", or the memory a backend of the table reads: its
/// backend_table entry's memory), its device, the stream its work is queued on, and what keeps it
/// alive.
const char* const operand_fields[] = {"framework", "obj", "address", "dtype", "shape", "size",
                                      "memory", "device", "stream", "keep"};
constexpr std::size_t op_address = 2, op_dtype = 3, op_size = 5, op_memory = 6, op_device = 7, op_stream = 8;

/// A reduction: the operator's name, the shape's name (runtime::to_string(shape_kind)), its
/// extents, the offsets (an operand, or None), whether offsets in device memory are checked, and
/// whether the output was made for this call.
const char* const job_fields[] = {"op", "shape", "length", "segments", "inner", "offsets", "check_offsets",
                                  "new_output"};
constexpr std::size_t jb_op = 0, jb_shape = 1, jb_length = 2, jb_segments = 3, jb_inner = 4, jb_offsets = 5,
                      jb_check_offsets = 6, jb_new_output = 7;

nb::tuple field_names(const char* const* names, std::size_t count) {
  nb::list l;
  for (std::size_t i = 0; i < count; ++i) l.append(nb::str(names[i]));
  return nb::tuple(l);
}

rt::dtype parse_dtype(std::string_view name) {
  for (rt::dtype d : rt::all_dtypes)
    if (rt::name_of(d) == name) return d;
  throw rt::dtype_error("dtype " + std::string(name) +
                        " is not one of multireduce's (int8..int64, uint8..uint64, float16, float32, float64)");
}

rt::op_kind parse_op(std::string_view name) {
  if (auto op = rt::parse_op(name)) return *op;
  throw std::invalid_argument("op must be one of " + rt::op_names(", ") + ", not '" + std::string(name) + "'");
}

}  // namespace

// The helpers the matcher's bindings (match.cpp) share (records.hpp).
namespace multireduce::python_core {

std::string_view text_of(nb::handle h) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(h.ptr(), &size);
  if (data == nullptr) throw nb::python_error();
  return {data, std::size_t(size)};
}
/// An int field of a record (the front makes them Python ints; anything else is a TypeError).
std::int64_t int_of(nb::handle h) {
  const long long v = PyLong_AsLongLong(h.ptr());
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  return v;
}
std::uintptr_t address_of(nb::handle h) {
  const unsigned long long v = PyLong_AsUnsignedLongLong(h.ptr());
  if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) throw nb::python_error();
  return static_cast<std::uintptr_t>(v);
}

/// Where an operand's memory is: host memory, or the memory the named backend reads (backend_table's memory).
rt::memory memory_of(std::string_view name) { return name == "host" ? rt::memory::host() : rt::memory::of(name); }

/// The operand's array (its memory's name must outlive the view: the operand holds it).
rt::array_view array_of(const nb::tuple& x) {
  return rt::array_view{parse_dtype(text_of(x[op_dtype])), reinterpret_cast<const void*>(address_of(x[op_address])),
                        int_of(x[op_size]), memory_of(text_of(x[op_memory])), static_cast<int>(int_of(x[op_device]))};
}

/// An output of `type` and `count` at `address`, in the operand's memory.
rt::output_view output_like(const rt::array_view& x, std::uintptr_t address, rt::dtype type, std::int64_t count) {
  return rt::output_view{type, reinterpret_cast<void*>(address), count, x.where, x.device};
}

rt::execution execution_of(std::string_view backend, const rt::array_view& x, const nb::tuple& operand,
                           const std::vector<int>& devices) {
  rt::check_backend_name(backend);
  rt::execution exec;
  exec.backend = backend;
  exec.devices = devices.empty() ? rt::device_set{{x.where.is_host() ? 0 : x.device}} : rt::device_set{devices};
  exec.stream = reinterpret_cast<void*>(address_of(operand[op_stream]));
  return exec;
}

outcome outcome_of(const rt::report& r) { return {r.backend, r.passed_over}; }

}  // namespace multireduce::python_core

namespace {

using namespace multireduce::python_core;

// ---- the jobs -----------------------------------------------------------------------------------------

/// A reduction of the operand x (job: a job_fields record) into the array at `out` (in x's memory),
/// on `backend`, queued on x's stream when everything is in device memory. Returns nothing (a small
/// call's time is mostly host time: no result object is made).
void reduce(const nb::tuple& x, const nb::tuple& job_record, std::uintptr_t out, const std::string& backend,
            const std::vector<int>& devices) {
  rt::reduce_job job;
  job.input = array_of(x);
  job.op = parse_op(text_of(job_record[jb_op]));
  const auto shape = rt::parse_shape(text_of(job_record[jb_shape]));
  if (!shape) throw std::invalid_argument("no such shape: " + std::string(text_of(job_record[jb_shape])));
  job.shape = *shape;
  job.length = int_of(job_record[jb_length]);
  job.segments = int_of(job_record[jb_segments]);
  job.inner = int_of(job_record[jb_inner]);
  if (!job_record[jb_offsets].is_none()) {
    const rt::array_view offsets = array_of(nb::borrow<nb::tuple>(job_record[jb_offsets]));
    if (offsets.type != rt::dtype::int64) throw std::invalid_argument("the core takes int64 offsets");
    job.offsets = static_cast<const std::int64_t*>(offsets.data);
    job.offsets_where = offsets.where;
  }
  job.check_offsets = nb::cast<bool>(job_record[jb_check_offsets]);
  job.output_is_new = nb::cast<bool>(job_record[jb_new_output]);
  rt::validate(job);
  const rt::output_view o = output_like(job.input, out, rt::output_dtype(job), rt::output_count(job));
  const rt::execution exec = execution_of(backend, job.input, x, devices);
  without_gil([&] { rt::reduce(job, o, exec); });
}

std::string result_dtype(const std::string& op, const std::string& dtype) {
  const rt::op_kind k = parse_op(op);
  const rt::dtype t = parse_dtype(dtype);
  if (rt::info(k).integers_only && rt::is_floating(t))
    throw rt::dtype_error(op + " needs an integer dtype, not " + dtype);
  return std::string(rt::name_of(rt::result_dtype(k, t)));
}

/// The statistics of the operand x as a multireduce::statistics<T> record at `out` (in x's memory).
void statistics(const nb::tuple& x, std::uintptr_t out, const std::string& backend, const std::vector<int>& devices) {
  const rt::array_view in = array_of(x);
  const auto bytes = static_cast<std::int64_t>(rt::statistics_bytes(in.type));
  const rt::output_view o = output_like(in, out, rt::dtype::uint8, bytes);
  const rt::execution exec = execution_of(backend, in, x, devices);
  without_gil([&] { rt::statistics(in, o, exec); });
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

// ---- the table of backends, as the front reads it (python/multireduce/_backends.py) ---------------

/// What each entry of the runtime's table declares (backend.hpp): its name, its --help summary, what
/// it is in a sentence, its memory ("host", or the name of the memory it reads in place), how a
/// device of it is named ("" where it numbers none), whether it splits a job over several devices,
/// the DLPack device types of its memory, and whether "auto" runs host data on it.
const char* const backend_fields[] = {"name", "summary", "noun", "memory", "device_noun", "splits_over_devices",
                                      "dlpack_device_types", "automatic_for_host_data"};

nb::list backend_table() {
  nb::list entries;
  for (const rt::backend* b : *rt::backend_table()) {
    const rt::memory where = b->device_memory();
    nb::list types;
    for (int t : b->dlpack_device_types()) types.append(t);
    entries.append(nb::make_tuple(std::string(b->name()), std::string(b->summary()), std::string(b->noun()),
                                  where.is_host() ? std::string("host") : std::string(where.backend()),
                                  std::string(b->device_noun()), b->splits_over_devices(), nb::tuple(types),
                                  b->automatic_for_host_data()));
  }
  return entries;
}

/// The name of a backend the table gives for a call to `backend` (nullptr: None).
std::optional<std::string> name_or_none(const rt::backend* b) {
  return b ? std::optional<std::string>(std::string(b->name())) : std::nullopt;
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
  m.attr("operand_fields") = field_names(operand_fields, std::size(operand_fields));
  m.attr("job_fields") = field_names(job_fields, std::size(job_fields));
  m.attr("backend_fields") = field_names(backend_fields, std::size(backend_fields));
  m.attr("host_memory") = "host";  // an operand's memory field for host memory (memory_of)
  {
    nb::list shapes;
    for (rt::shape_kind k : rt::all_shape_kinds) shapes.append(nb::str(std::string(rt::to_string(k)).c_str()));
    m.attr("shapes") = nb::tuple(shapes);
  }

  // A job a backend does not run: Unsupported, and TypeError when the element type is why
  // (UnsupportedDtype), else ValueError (UnsupportedJob); the message names the backend.
  static nb::exception<rt::unsupported_error> unsupported(m, "Unsupported", PyExc_RuntimeError);
  static nb::object unsupported_dtype, unsupported_job;
  {
    nb::object type = nb::module_::import_("builtins").attr("type");
    unsupported_dtype = type("UnsupportedDtype", nb::make_tuple(unsupported, nb::handle(PyExc_TypeError)), nb::dict());
    unsupported_job = type("UnsupportedJob", nb::make_tuple(unsupported, nb::handle(PyExc_ValueError)), nb::dict());
    unsupported_dtype.attr("__module__") = "multireduce._core";
    unsupported_job.attr("__module__") = "multireduce._core";
    m.attr("UnsupportedDtype") = unsupported_dtype;
    m.attr("UnsupportedJob") = unsupported_job;
  }
  static nb::exception<rt::device_error> cuda_error(m, "CudaError", PyExc_RuntimeError);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const rt::dtype_error& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const rt::unsupported_error& e) {
      const std::string message = "backend='" + e.backend + "': " + e.what();
      PyErr_SetString((e.dtype ? unsupported_dtype : unsupported_job).ptr(), message.c_str());
    } catch (const rt::device_memory_error& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const rt::device_error& e) {
      PyErr_SetString(cuda_error.ptr(), e.what());
    }
  });

  using release = nb::call_guard<nb::gil_scoped_release>;
  m.def("dlpack_info", &dlpack_info, nb::arg("capsule"));
  m.def("backends", [] { return rt::backend_names(); }, "auto, then the runtime's backends in the order auto tries them");
  m.def("backend_table", &backend_table,
        "the runtime's backends in the order auto tries them, each a tuple of backend_fields");
  m.def(
      "numbering_devices_for", [](const std::string& backend) { return name_or_none(rt::numbering_devices_for(backend)); },
      nb::arg("backend"), "the backend whose devices a device number names on a call to `backend` (or None)");
  m.def(
      "splitting_devices_for", [](const std::string& backend) { return name_or_none(rt::splitting_devices_for(backend)); },
      nb::arg("backend"), "the backend whose devices a set of several (devices=) names on a call to `backend` (or None)");
  m.def("device_count", [](const std::string& backend) { return rt::device_count(backend); }, release(),
        nb::arg("backend"));
  m.def("device_of_stream",
        [](const std::string& backend, std::uintptr_t stream) {
          return rt::device_of_stream(backend, reinterpret_cast<void*>(stream));
        },
        release(), nb::arg("backend"), nb::arg("stream"),
        "the ordinal of the backend's device that runs the queue `stream` (where a backend's queue names its device); "
        "-1 where the backend's streams name no device");
  m.def("result_dtype", &result_dtype, nb::arg("op"), nb::arg("dtype"));
  m.def("reduce", &reduce, nb::arg("x"), nb::arg("job"), nb::arg("out"), nb::arg("backend"),
        nb::arg("devices") = std::vector<int>{});
  m.def("statistics", &statistics, nb::arg("x"), nb::arg("out"), nb::arg("backend"),
        nb::arg("devices") = std::vector<int>{});
  m.def("statistics_layout", &statistics_layout, nb::arg("dtype"));
  multireduce::python_core::bind_matcher(m);
  m.def("trace", &trace, nb::arg("algorithm"), nb::arg("batches"), nb::arg("width"));
}
