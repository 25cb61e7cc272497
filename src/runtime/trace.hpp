// runtime/trace.hpp -- the paper's lane tables: a multi-reduction run on the host warp emulator with
// symbolic values, and which partial reduction every lane holds after every step.
#pragma once

#include <string>

#include <multireduce/warp/warp_multi_reduce.hpp>

namespace multireduce::runtime {

struct trace_options {
  multi_reduce_algorithm algorithm = multi_reduce_algorithm::select_merge;
  int batches = 4;
  int width = 8;
};

/// Batch counts and widths the trace was compiled for (the warp code's sizes are template
/// parameters): batches 1..16, 32 and 64; widths 2, 4, 8, 16 and 32.
bool trace_supported(int batches, int width);
/// "1..16, 32 or 64" and "2, 4, 8, 16 or 32", for messages.
inline constexpr const char* trace_batches_text = "1..16, 32 or 64";
inline constexpr const char* trace_widths_text = "2, 4, 8, 16 or 32";

/// The table and the per-warp counts, as text ending in a newline. Throws std::invalid_argument
/// for sizes trace_supported() refuses.
std::string trace_table(const trace_options& opts);

}  // namespace multireduce::runtime
