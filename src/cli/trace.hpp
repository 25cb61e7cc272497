// trace.hpp -- `multireduce trace`: the paper's lane tables, from the host warp emulator.
#pragma once

#include <string>

#include <multireduce/warp_multi_reduce.hpp>

namespace multireduce::cli {

struct trace_options {
  multi_reduce_algorithm algorithm = multi_reduce_algorithm::select_merge;
  int batches = 4;
  int width = 8;
};

/// Batch counts and widths the trace was compiled for (the warp code's sizes are template
/// parameters): batches 1..16, 32 and 64; widths 2, 4, 8, 16 and 32.
bool trace_supported(int batches, int width);

/// Prints the table and the operation counts. @return a process exit code.
int run_trace(const trace_options& opts);

}  // namespace multireduce::cli
