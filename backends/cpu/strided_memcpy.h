#ifndef TESSERA_BACKENDS_CPU_STRIDED_MEMCPY_H_
#define TESSERA_BACKENDS_CPU_STRIDED_MEMCPY_H_

// StridedMemcpy: executes a StridedCopy between two host-addressable regions,
// split across the threads of the calling oneTBB task arena when it is large.
//
//   StridedMemcpy(src_base, dst_base, copy);   // src_base + copy.src_offset
//   ... -> dst_base + ...
//
// The regions must not overlap. Thread-safe (it touches only the given memory).

#include <cstdint>

#include "ifrt/strided_copy.h"

namespace tessera::cpu {

// Copies below this many bytes run on the calling thread alone.
inline constexpr int64_t kParallelCopyThresholdBytes = int64_t{1} << 20;

void StridedMemcpy(const void* src_base, void* dst_base, const StridedCopy& copy);

}  // namespace tessera::cpu

#endif  // TESSERA_BACKENDS_CPU_STRIDED_MEMCPY_H_
