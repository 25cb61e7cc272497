// runtime/cuda/offsets.cuh -- the check of offsets in GPU memory: a kernel that marks the first bad
// one, and the mark's verdict read back (the one wait of a queued job).
#pragma once

#include <cstdint>

#include "context.cuh"

namespace multireduce::runtime::cuda_backend_detail {

/// Waits for the stream and reads the mark of a check of offsets in GPU memory (~0: good); when it
/// names a bad offset, sets the mark back to ~0 and throws as validate() does for host offsets
/// (throw_bad_offset words both), with the two offsets it names read back.
void read_offsets_verdict(const std::int64_t* o, std::int64_t n, unsigned long long* mark,
                          unsigned long long* host_word, cudaStream_t stream);

/// Checks offsets in GPU memory before anything reads them: one kernel marking the stream state's
/// mark, then its verdict read back (read_offsets_verdict).
void check_offsets_on_gpu(const std::int64_t* o, std::int64_t segments, std::int64_t n, stream_state& state,
                          cudaStream_t stream);

}  // namespace multireduce::runtime::cuda_backend_detail
