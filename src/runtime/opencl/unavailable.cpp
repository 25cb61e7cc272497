// runtime/opencl/unavailable.cpp -- the backend "opencl" in a build without OpenCL's headers and ICD
// loader: no devices, every job unsupported with the reason and what to install.
#include "../unavailable.hpp"

namespace multireduce::runtime {

const backend& opencl_backend() {
  static const unavailable_backend the_backend{
      "opencl", "any OpenCL device (not in this build)", "the OpenCL device", memory::host(), false, "OpenCL device",
      "this build has no OpenCL support: install the OpenCL headers, the Khronos C++ bindings and the ICD loader "
      "(Debian: opencl-c-headers opencl-clhpp-headers ocl-icd-opencl-dev) and configure again"};
  return the_backend;
}

}  // namespace multireduce::runtime
