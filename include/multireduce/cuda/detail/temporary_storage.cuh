// multireduce/cuda/detail/temporary_storage.cuh -- the one carve-up of a CUB-style call's
// temporary storage (CUB's alias_temporaries).
//
// Every device-wide algorithm answers a call with temp_storage == nullptr by writing the bytes it
// needs to temp_bytes, and otherwise runs in the storage given. It lists its pieces once:
//
//   detail::temporary_storage<2> temp{{ticket_bytes, sizeof(Part) * blocks}};
//   if (cudaError_t status; !temp.bind(temp_storage, temp_bytes, status)) return status;
//   auto* ticket = temp.get<unsigned>(0);
//
// bind() answers the query (temp_bytes = the total, status cudaSuccess) or refuses too little
// storage (cudaErrorInvalidValue); both return false, and the algorithm returns the status.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace multireduce::cuda::detail {

/// bytes rounded up to a multiple of `alignment`.
inline constexpr std::size_t round_up(std::size_t bytes, std::size_t alignment = 256) {
  return (bytes + alignment - 1) / alignment * alignment;
}

template <int Pieces>
class temporary_storage {
 public:
  /// Each piece starts on a 256-byte boundary (every piece is naturally aligned for any type).
  static constexpr std::size_t alignment = 256;

  explicit temporary_storage(const std::size_t (&piece_bytes)[Pieces]) {
    for (int i = 0; i < Pieces; ++i) {
      offset_[i] = total_;
      total_ += round_up(piece_bytes[i], alignment);
    }
  }

  /// The bytes the call needs (at least 1, as CUB answers: a null pointer stays the query).
  std::size_t bytes() const { return total_ > 0 ? total_ : 1; }

  /// The CUB protocol's two phases: storage == nullptr writes bytes() to temp_bytes; storage
  /// with fewer than bytes() bytes is refused (status cudaErrorInvalidValue). Both return false.
  /// Otherwise the pieces are placed in `storage` and bind returns true.
  bool bind(void* storage, std::size_t& temp_bytes, cudaError_t& status) {
    status = cudaSuccess;
    if (storage == nullptr) {
      temp_bytes = bytes();
      return false;
    }
    if (temp_bytes < total_) {
      status = cudaErrorInvalidValue;
      return false;
    }
    base_ = static_cast<char*>(storage);
    return true;
  }

  /// Piece `i`, once bound.
  template <class T>
  T* get(int i) const {
    return reinterpret_cast<T*>(base_ + offset_[i]);
  }

 private:
  std::size_t offset_[Pieces] = {};
  std::size_t total_ = 0;
  char* base_ = nullptr;
};

}  // namespace multireduce::cuda::detail
