// bench_cpu.hpp -- suite "cpu": the CPU backend (multireduce/cpu.hpp) on this machine's cores.
#pragma once

#include <nlohmann/json_fwd.hpp>

namespace multireduce::bench {

/// Measures the read bandwidth of all cores (a plain streaming float sum over 1 GiB, best of
/// several runs), then times cpu::reduce, cpu::stats, cpu::fixed_segmented_reduce and
/// cpu::window_reduce (median of `repetitions` runs after a warm-up), each verified against a
/// straightforward loop first; prints a table and fills `record` ("threads", "read_bandwidth",
/// "results"). `quick`: smaller inputs and fewer runs.
/// @return 0 when every result verified, 1 otherwise (failed cases are not timed).
int run_cpu_suite(int repetitions, bool quick, nlohmann::json& record);

}  // namespace multireduce::bench
