// multireduce: GPU reductions and the multi-reduction pattern.
// config.hpp -- portability macros shared by host (.hpp) and device (.cuh) code.
#pragma once

#if defined(__CUDACC__) || defined(__HIP__)
/// Marks a function callable from host and device code (nvcc, or hipcc for AMD GPUs).
#define MULTIREDUCE_HOST_DEVICE __host__ __device__
#define MULTIREDUCE_FORCEINLINE __forceinline__
#else
#define MULTIREDUCE_HOST_DEVICE
#define MULTIREDUCE_FORCEINLINE inline
#endif

/// Unrolls the next loop fully: device code needs compile-time register indices. (Only in the
/// device pass: host compilers do not know the pragma.)
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define MULTIREDUCE_UNROLL _Pragma("unroll")
#else
#define MULTIREDUCE_UNROLL
#endif

/// True when the CUDA half and bfloat16 types can be used (the toolkit headers are reachable; never
/// under hipcc, whose device code cannot use them).
#if !defined(__HIP__) && __has_include(<cuda_fp16.h>) && __has_include(<cuda_bf16.h>)
#define MULTIREDUCE_HAS_CUDA_FP16 1
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#else
#define MULTIREDUCE_HAS_CUDA_FP16 0
#endif

/// numeric_limits usable in host and device code (libcu++'s under nvcc).
#if defined(__CUDACC__)
#include <cuda/std/limits>
namespace multireduce::detail {
template <class T>
using limits = ::cuda::std::numeric_limits<T>;
}
#else
#include <limits>
namespace multireduce::detail {
template <class T>
using limits = std::numeric_limits<T>;
}
#endif

#define MULTIREDUCE_VERSION_MAJOR 0
#define MULTIREDUCE_VERSION_MINOR 1
#define MULTIREDUCE_VERSION_PATCH 0
