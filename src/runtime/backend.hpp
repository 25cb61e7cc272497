// runtime/backend.hpp -- what a backend is to the runtime, and the table of backends it reads.
//
// A backend runs the runtime's jobs on its devices: the CPU (src/runtime/cpu/), NVIDIA GPUs
// through CUDA (src/runtime/cuda/), any OpenCL device (src/runtime/opencl/). It registers once, in
// the table (backend_table.cpp), with its name, the device memory it reads in place, the devices
// it sees and, for every job, whether it runs it and why not. The entry points of runtime.hpp read the table: "auto" takes the first
// backend in table order that runs the job where its data lives; an unknown name is refused with
// the list of names; the CLI's --backend, its --help and the Python package's backend= read the
// same list. What the fronts present and route is the table's too: how a backend names its devices
// (--device N, the errors), whether it splits a job over several (--devices, devices=), and which
// DLPack device types its memory is (the Python package's routing of arrays), so that neither front
// names a backend. Adding a backend: docs/architecture.md, "Adding a backend".
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime.hpp"

namespace multireduce::runtime {

/// Why a backend does not run a job: empty when it does. `dtype`: the element type is why.
struct refusal {
  std::string why;
  bool dtype = false;
  bool empty() const { return why.empty(); }
};

class backend {
 public:
  virtual ~backend() = default;

  /// The name users type (--backend NAME, backend="NAME").
  virtual std::string_view name() const = 0;
  /// What it runs on, in a few words ("NVIDIA GPUs through CUDA"), for --help.
  virtual std::string_view summary() const = 0;
  /// What it is in a sentence ("the GPU", "the CPU"): "auto" reports "not the GPU: why".
  virtual std::string_view noun() const { return name(); }
  /// The device memory it reads in place (memory::of(name())), or host memory for a backend that
  /// reads only host memory (the CPU). What a device array's array_view::data is, and what
  /// execution::stream is for it, is the backend's: CUDA, a device pointer and a cudaStream_t;
  /// OpenCL, a cl_mem of the queue's context (element 0 at its start) and a cl_command_queue.
  virtual memory device_memory() const { return memory::host(); }
  /// The ordinal of the device that runs `stream` (a queue of this backend), where the stream names
  /// its device (an OpenCL queue does); -1 where it does not (a CUDA stream, or no device memory).
  virtual int device_of_stream(void* stream) const {
    (void)stream;
    return -1;
  }
  /// Whether "auto" may choose it for data in host memory (a backend of devices that are slower
  /// than the CPU for reductions says no and runs only when named).
  virtual bool automatic_for_host_data() const { return true; }
  /// The devices it sees now (0: none usable, or not built in).
  virtual int device_count() const = 0;
  /// How the fronts name one of its devices ("CUDA device", "OpenCL device"): --device N is checked
  /// against its device_count() ("there is no CUDA device here"). Empty for a backend that numbers
  /// no devices of its own (the CPU): a device number then names one of numbering_devices_for().
  virtual std::string_view device_noun() const { return {}; }
  /// Whether it runs the jobs that split on a set of several of its devices (--devices LIST,
  /// devices=[...]; device_set).
  virtual bool splits_over_devices() const { return false; }
  /// The DLPack device types (DLDeviceType) of the memory it reads in place, device_memory(): the
  /// Python package hands an array in memory of one of these types (a DLPack capsule, a framework's
  /// array in that memory) to the runtime as in device_memory(). CUDA's: kDLCUDA (2) and
  /// kDLCUDAManaged (13); OpenCL's buffers: kDLOpenCL (4); the CPU's, host memory: kDLCPU (1) and
  /// kDLCUDAHost (3, pinned host memory).
  virtual std::span<const int> dlpack_device_types() const { return {}; }
  /// A device in words for --timing and --version ("device 0, NVIDIA H200"; "2 CPU threads").
  virtual std::string describe_device(int ordinal) const = 0;

  /// Empty when it runs the job on `devices`, else why not, in words (a sentence without the
  /// backend's name: the runtime adds it).
  virtual refusal unsupported(const reduce_job& job, const device_set& devices) const = 0;
  virtual refusal unsupported_statistics(dtype type, const device_set& devices) const = 0;
  virtual refusal unsupported_knn(int bytes, const device_set& devices) const = 0;

  // The jobs, called only where unsupported*() said "". Each fills in the report's device, times and
  // bytes (the runtime fills in backend, passed_over and bytes_written).

  /// Host data read front to back from a source, outputs to a sink as they are produced.
  virtual void reduce(const reduce_job& job, array_source& in, output_sink& out, const execution& exec,
                      report& r) const = 0;
  virtual void statistics(array_source& in, any_statistics& out, const execution& exec, report& r) const = 0;
  virtual void knn(const knn_job& job, knn_result& out, const execution& exec, report& r) const = 0;
  /// Every pair of a collection (its rows in host memory, or in device_memory()), refused where
  /// unsupported_knn refuses the width; each pair's matches to `done` as they are ready.
  virtual void match_collection(const collection_job& job, const pair_matches_callback& done, const execution& exec,
                                report& r) const = 0;

  /// Arrays of which at least one is in device_memory() (the others in host memory): queued on
  /// exec.stream where everything is in device memory, else staged. Backends without device
  /// memory are never asked.
  virtual void reduce(const reduce_job& job, const output_view& out, const execution& exec, report& r) const;
  virtual void statistics(const array_view& in, const output_view& out, const execution& exec, report& r) const;
  virtual void knn(const knn_device_job& job, const execution& exec, report& r) const;
};

/// The table, in the order "auto" tries the backends: the built-in ones (cuda, cpu, opencl), with those
/// registered at run time where they were put.
std::vector<const backend*> backends();
/// The same table as a shared snapshot (what each call of the runtime reads: no copy, no lock).
std::shared_ptr<const std::vector<const backend*>> backend_table();
/// Adds `b` (which must outlive every call) to the table at `position` (by default the end: "auto"
/// then tries it last); throws std::invalid_argument when its name is "auto", empty or taken.
void register_backend(const backend& b, std::size_t position = std::size_t(-1));
/// The backend named `name`; throws std::invalid_argument naming every backend when there is none.
const backend& find_backend(std::string_view name);

// ---- the table as the fronts read it ----------------------------------------------------------------

/// The backend whose devices a device number names on a call to backend `name` (--device N): the
/// named one where it numbers its devices (a device_noun()); else (auto, the CPU) the first of the
/// table that does and that "auto" runs host data on; nullptr where there is none. Throws
/// std::invalid_argument for an unknown name.
const backend* numbering_devices_for(std::string_view name);
/// The backend whose devices a set of several names on a call to backend `name` (--devices,
/// devices=): the named one where it splits over devices, else the first of the table that does;
/// nullptr where there is none. Throws std::invalid_argument for an unknown name.
const backend* splitting_devices_for(std::string_view name);

}  // namespace multireduce::runtime
