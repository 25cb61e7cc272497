// multireduce/cpu.hpp -- the CPU backend of the device-wide algorithms: reduce, transform_reduce,
// argmin/argmax, statistics, segmented, fixed-length segmented and sliding-window reductions over host memory,
// on all cores (OpenMP; plain serial C++ without it). It is also the reference the GPU tests
// compare against.
//
// Conventions, shared with the CUDA backend:
// - Element counts are std::int64_t. Inputs are random-access iterators or pointers, only read;
//   outputs are random-access iterators or pointers, written once per result.
// - The accumulator type Acc is the type of `init` (CUB): every element is converted with
//   static_cast<Acc>(in[i]) and combined as acc = op(acc, x). `op` must be associative and callable
//   on const operands; it is never assumed commutative unless is_commutative_v<Op> says so, and
//   partial results are always combined left to right.
// - Deterministic: the input is cut into chunks of chunk_elements whatever the number of threads,
//   so results (floating-point rounding included) are the same with 1 thread or many.
// - Bad arguments throw std::invalid_argument before any work starts. An exception thrown by `op`
//   inside a parallel region terminates the program (OpenMP rule).
//
// Performance notes:
// - Commutative operators fold each chunk with 8 interleaved accumulators, which the compiler
//   vectorises; others fold strictly left to right (one dependent operation per element).
//   minimum/maximum over contiguous arithmetic input use GCC vector extensions (GCC 12 leaves the
//   NaN-aware select scalar): about 4x faster for float; other compilers get the portable fold.
// - argmin/argmax find each chunk's extreme with the vectorised fold, then its first position by
//   re-reading the chunk from cache.
// - Segmented reductions split work by element count (empty segments count one unit), so one huge
//   segment and millions of tiny ones both use every core.
// - Windows: direct folds up to W = 4, then van Herk / Gil-Werman (4 operations per element
//   whatever W: suffix, prefix, join, init; no inverse operator needed, so min/max windows are O(n)).
#pragma once

#include "cpu/transform_iterator.hpp"
#include "cpu/reduce.hpp"
#include "cpu/segmented_reduce.hpp"
#include "cpu/statistics.hpp"
#include "cpu/window_reduce.hpp"
