// runtime/opencl/device.cpp -- the OpenCL devices, their programs and the errors of OpenCL calls.
#include "device.hpp"

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "../runtime.hpp"

namespace multireduce::runtime::opencl {

std::string_view to_string(exchange_form f) {
  switch (f) {
    case exchange_form::local_memory: return "local";
    case exchange_form::subgroup_shuffle: return "subgroup";
    case exchange_form::ptx_shuffle: return "ptx";
  }
  return "?";
}

std::optional<exchange_form> parse_exchange_form(std::string_view name) {
  for (exchange_form f : {exchange_form::local_memory, exchange_form::subgroup_shuffle, exchange_form::ptx_shuffle})
    if (to_string(f) == name) return f;
  return std::nullopt;
}

std::string status_name(int status) {
  switch (status) {
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
    case CL_DEVICE_NOT_AVAILABLE: return "CL_DEVICE_NOT_AVAILABLE";
    case CL_COMPILER_NOT_AVAILABLE: return "CL_COMPILER_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_BUILD_OPTIONS: return "CL_INVALID_BUILD_OPTIONS";
    case CL_INVALID_KERNEL_NAME: return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_ARG_SIZE: return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_WORK_ITEM_SIZE: return "CL_INVALID_WORK_ITEM_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE: return "CL_INVALID_GLOBAL_WORK_SIZE";
    case CL_PLATFORM_NOT_FOUND_KHR: return "CL_PLATFORM_NOT_FOUND_KHR (no OpenCL platform)";
    default: return "OpenCL status " + std::to_string(status);
  }
}

void fail(const cl::Error& e, const std::string& what) {
  const int status = e.err();
  const std::string text = "OpenCL: " + what + " failed: " + e.what() + " returned " + status_name(status);
  if (status == CL_MEM_OBJECT_ALLOCATION_FAILURE || status == CL_OUT_OF_RESOURCES ||
      status == CL_OUT_OF_HOST_MEMORY || status == CL_INVALID_BUFFER_SIZE)
    throw device_memory_error(status, text + " (the device is out of memory)");
  throw device_error(status, text);
}

namespace {

bool has_extension(const std::string& extensions, std::string_view name) {
  std::size_t at = 0;
  while ((at = extensions.find(name, at)) != std::string::npos) {
    const std::size_t end = at + name.size();
    if ((at == 0 || extensions[at - 1] == ' ') && (end == extensions.size() || extensions[end] == ' ')) return true;
    at = end;
  }
  return false;
}

/// The devices, found once. `why`: why there are none.
struct device_list {
  std::vector<std::unique_ptr<device>> devices;
  std::string why;
};

device_list find_devices() {
  device_list list;
  std::vector<cl::Platform> platforms;
  try {
    cl::Platform::get(&platforms);
  } catch (const cl::Error& e) {
    list.why = "there is no OpenCL platform here (" + status_name(e.err()) +
               "): install an OpenCL driver (Debian: pocl-opencl-icd for the CPU; NVIDIA's OpenCL comes with its "
               "driver, made visible with OCL_ICD_FILENAMES=libnvidia-opencl.so.1; docs/opencl.md)";
    return list;
  }
  for (const cl::Platform& p : platforms) {
    std::vector<cl::Device> ids;
    try {
      p.getDevices(CL_DEVICE_TYPE_ALL, &ids);
    } catch (const cl::Error&) {
      continue;  // a platform without devices
    }
    for (const cl::Device& id : ids) {
      auto d = std::make_unique<device>();
      try {
        d->id = id;
        d->context = cl::Context(id);
        d->queue = cl::CommandQueue(d->context, id, CL_QUEUE_PROFILING_ENABLE);
        d->name = id.getInfo<CL_DEVICE_NAME>();
        d->platform = p.getInfo<CL_PLATFORM_NAME>();
        d->vendor = id.getInfo<CL_DEVICE_VENDOR>();
        d->version = id.getInfo<CL_DEVICE_VERSION>();
        const std::string extensions = id.getInfo<CL_DEVICE_EXTENSIONS>();
        d->fp64 = has_extension(extensions, "cl_khr_fp64");
        d->subgroup_shuffle =
            has_extension(extensions, "cl_khr_subgroups") && has_extension(extensions, "cl_khr_subgroup_shuffle");
        d->nvidia = d->platform.find("NVIDIA") != std::string::npos;
        d->cpu = (id.getInfo<CL_DEVICE_TYPE>() & CL_DEVICE_TYPE_CPU) != 0;
        d->local_bytes = id.getInfo<CL_DEVICE_LOCAL_MEM_SIZE>();
        d->max_alloc = id.getInfo<CL_DEVICE_MAX_MEM_ALLOC_SIZE>();
        d->global_bytes = id.getInfo<CL_DEVICE_GLOBAL_MEM_SIZE>();
        d->max_group = id.getInfo<CL_DEVICE_MAX_WORK_GROUP_SIZE>();
        d->compute_units = id.getInfo<CL_DEVICE_MAX_COMPUTE_UNITS>();
      } catch (const cl::Error&) {
        continue;  // a device that cannot be opened is not listed
      }
      // Trailing blanks and NULs that some drivers leave in names.
      for (std::string* s : {&d->name, &d->platform, &d->vendor, &d->version})
        while (!s->empty() && (s->back() == '\0' || s->back() == ' ')) s->pop_back();
      list.devices.push_back(std::move(d));
    }
  }
  if (list.devices.empty())
    list.why = "the OpenCL platforms here have no usable device (" + std::to_string(platforms.size()) +
               " platform" + (platforms.size() == 1 ? "" : "s") + "; docs/opencl.md says how to install one)";
  return list;
}

device_list& devices() {
  static device_list list = find_devices();
  return list;
}

}  // namespace

std::vector<exchange_form> device::forms() const {
  std::vector<exchange_form> f;
  if (nvidia) f.push_back(exchange_form::ptx_shuffle);
  if (subgroup_shuffle) f.push_back(exchange_form::subgroup_shuffle);
  f.push_back(exchange_form::local_memory);
  return f;
}

std::string device::describe(int ordinal) const {
  return "device " + std::to_string(ordinal) + ", " + name + " (" + platform + ", " + version + ")";
}

cl::Kernel device::kernel(std::string_view file, const std::string& options, const char* kernel_name) {
  const std::string key = std::string(file) + '\n' + options;
  cl::Program program;
  {
    const std::lock_guard<std::mutex> lock(programs_->building);
    auto found = programs_->programs.find(key);
    if (found == programs_->programs.end()) {
      std::string source;
      if (file != "knn") source = std::string(kernel_source("common")) + '\n';
      source += kernel_source(file);
      cl::Program built(context, source);
      const auto started = std::chrono::steady_clock::now();
      try {
        built.build({id}, options.c_str());
        programs_->building_nanoseconds += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count();
      } catch (const cl::BuildError& e) {
        std::string log;
        for (const auto& [dev, text] : e.getBuildLog()) log += text;
        throw device_error(e.err(), "OpenCL: building the program '" + std::string(file) + "' for " + name + " with \"" +
                                        options + "\" failed (" + status_name(e.err()) + "); the build log:\n" + log);
      } catch (const cl::Error& e) {
        fail(e, "building the program '" + std::string(file) + "' for " + name);
      }
      found = programs_->programs.emplace(key, std::move(built)).first;
    }
    program = found->second;
  }
  try {
    return cl::Kernel(program, kernel_name);
  } catch (const cl::Error& e) {
    fail(e, std::string("creating the kernel ") + kernel_name);
  }
}

int device_count() { return static_cast<int>(devices().devices.size()); }

device& device_at(int ordinal) {
  device_list& list = devices();
  if (list.devices.empty()) throw unsupported_error("opencl", list.why);
  if (ordinal < 0 || ordinal >= int(list.devices.size()))
    throw unsupported_error("opencl", "there is no OpenCL device " + std::to_string(ordinal) + " (this machine has " +
                                          std::to_string(list.devices.size()) + ")");
  return *list.devices[std::size_t(ordinal)];
}

std::string why_no_device() { return devices().why; }

lanes choose_lanes(const device& d) {
  lanes l;
  l.form = d.forms().front();
  l.width = d.vendor.find("Advanced Micro Devices") != std::string::npos && l.form == exchange_form::local_memory ? 64 : 32;
  if (const char* form = std::getenv("MULTIREDUCE_OPENCL_FORM"); form && *form) {
    const auto f = parse_exchange_form(form);
    if (!f) throw unsupported_error("opencl", "MULTIREDUCE_OPENCL_FORM=" + std::string(form) + " is not a form: local, subgroup or ptx");
    bool takes = false;
    for (exchange_form g : d.forms()) takes = takes || g == *f;
    if (!takes) throw unsupported_error("opencl", "MULTIREDUCE_OPENCL_FORM=" + std::string(form) + ": " + d.name + " does not take the " + std::string(to_string(*f)) + " form");
    l.form = *f;
  }
  if (const char* width = std::getenv("MULTIREDUCE_OPENCL_WIDTH"); width && *width) {
    const std::string w = width;
    if (w != "32" && w != "64") throw unsupported_error("opencl", "MULTIREDUCE_OPENCL_WIDTH=" + w + " is not a warp width: 32 or 64");
    l.width = std::stoi(w);
  }
  if (l.form == exchange_form::ptx_shuffle && l.width != 32)
    throw unsupported_error("opencl", "the ptx form exchanges within a 32-lane warp: width 64 takes the local form");
  return l;
}

namespace {

/// The caller's queue `handle` checked (valid, in order), its context and the ordinal of its device
/// among the backend's; throws as on_queue.
int queue_ordinal(void* handle, cl_context& context) {
  if (handle == nullptr)
    throw std::invalid_argument("OpenCL: arrays in OpenCL memory need the queue their work goes on (exec.stream)");
  const auto queue = static_cast<cl_command_queue>(handle);
  cl_device_id id = nullptr;
  cl_command_queue_properties properties = 0;
  if (clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof context, &context, nullptr) != CL_SUCCESS ||
      clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof id, &id, nullptr) != CL_SUCCESS ||
      clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof properties, &properties, nullptr) != CL_SUCCESS)
    throw std::invalid_argument("OpenCL: the queue is not a valid cl_command_queue (released?)");
  if ((properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) != 0)
    throw std::invalid_argument("OpenCL: the queue runs its commands out of order; pass an in-order queue (a job's "
                                "kernels read what the ones before them wrote)");
  device_list& list = devices();
  for (std::size_t i = 0; i < list.devices.size(); ++i)
    if (list.devices[i]->id() == id) return int(i);
  std::string name = "?";
  try {
    name = cl::Device(id, true).getInfo<CL_DEVICE_NAME>();
  } catch (const cl::Error&) {
  }
  throw unsupported_error("opencl", "the queue's device (" + name + ") is not one of the OpenCL devices this process "
                                    "lists (multireduce --version lists them)");
}

}  // namespace

queue_device on_queue(void* handle) {
  cl_context context = nullptr;
  const int ordinal = queue_ordinal(handle, context);
  const device& base = *devices().devices[std::size_t(ordinal)];
  queue_device q{base, ordinal};
  q.d.queue = cl::CommandQueue(static_cast<cl_command_queue>(handle), true);
  if (base.context() == context) return q;
  q.d.context = cl::Context(context, true);
  // The programs of this context and device, kept (with the context) for the life of the process:
  // a context the jobs ran in, not one only asked about (ordinal_of_queue).
  static std::mutex caches_lock;
  static std::map<std::pair<cl_context, cl_device_id>, std::pair<cl::Context, std::shared_ptr<program_cache>>> caches;
  const std::lock_guard<std::mutex> lock(caches_lock);
  auto& cache = caches[{context, base.id()}];
  if (!cache.second) cache = {q.d.context, std::make_shared<program_cache>()};
  q.d.programs_ = cache.second;
  return q;
}

int ordinal_of_queue(void* queue) {
  cl_context context = nullptr;
  return queue_ordinal(queue, context);
}

cl::Buffer allocate(device& d, std::size_t bytes, const char* what) {
  bytes = std::max<std::size_t>(bytes, 1);
  if (bytes > d.max_alloc)
    throw device_memory_error(CL_INVALID_BUFFER_SIZE, "OpenCL: " + std::string(what) + " needs " + std::to_string(bytes) +
                                                          " bytes, more than " + d.name + " allocates at once (" +
                                                          std::to_string(d.max_alloc) + ")");
  try {
    return cl::Buffer(d.context, CL_MEM_READ_WRITE, bytes);
  } catch (const cl::Error& e) {
    fail(e, std::string("allocating ") + what);
  }
}

}  // namespace multireduce::runtime::opencl
