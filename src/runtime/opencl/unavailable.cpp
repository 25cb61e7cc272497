// runtime/opencl/unavailable.cpp -- the backend "opencl" in a build without OpenCL's headers and ICD
// loader: no devices, every job unsupported with the reason and what to install.
#include "../unavailable.hpp"

namespace multireduce::runtime {

const backend& opencl_backend() {
  static constexpr int dlpack_device_types[] = {4};  // kDLOpenCL (opencl/backend.cpp)
  static const unavailable_backend the_backend{{
      .name = "opencl",
      .summary = "any OpenCL device (not in this build)",
      .noun = "the OpenCL device",
      .device_memory = memory::of("opencl"),
      .automatic_for_host_data = false,
      .device_noun = "OpenCL device",
      .splits_over_devices = false,
      .dlpack_device_types = dlpack_device_types,
      .why = "this build has no OpenCL support: install the OpenCL headers, the Khronos C++ bindings and the ICD "
             "loader (Debian: opencl-c-headers opencl-clhpp-headers ocl-icd-opencl-dev) and configure again",
  }};
  return the_backend;
}

}  // namespace multireduce::runtime
