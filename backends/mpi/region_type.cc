#include "backends/mpi/region_type.h"

#include <cstdint>
#include <limits>

namespace tessera::mpi {
namespace {

constexpr int64_t kMaxCount = std::numeric_limits<int>::max();
constexpr int64_t kChunk = int64_t{1} << 30;

// `first` at displacement 0, then `second` at `displacement` bytes; frees both.
MPI_Datatype Pair(MPI_Datatype first, MPI_Aint displacement, MPI_Datatype second) {
  int lengths[2] = {1, 1};
  MPI_Aint displacements[2] = {0, displacement};
  MPI_Datatype types[2] = {first, second};
  MPI_Datatype out;
  MPI_Type_create_struct(2, lengths, displacements, types, &out);
  MPI_Type_free(&first);
  MPI_Type_free(&second);
  return out;
}

// `bytes` contiguous bytes.
MPI_Datatype Bytes(int64_t bytes) {
  MPI_Datatype out;
  if (bytes <= kMaxCount) {
    MPI_Type_contiguous(static_cast<int>(bytes), MPI_BYTE, &out);
    return out;
  }
  MPI_Datatype chunk, chunks;
  MPI_Type_contiguous(static_cast<int>(kChunk), MPI_BYTE, &chunk);
  MPI_Type_contiguous(static_cast<int>(bytes / kChunk), chunk, &chunks);
  MPI_Type_free(&chunk);
  return Pair(chunks, static_cast<MPI_Aint>(bytes / kChunk * kChunk), Bytes(bytes % kChunk));
}

// `count` items of `type`, the i-th at i * `stride` bytes. Does not free `type`.
MPI_Datatype Repeat(int64_t count, int64_t stride, MPI_Datatype type) {
  MPI_Datatype out;
  if (count <= kMaxCount) {
    MPI_Type_create_hvector(static_cast<int>(count), 1, static_cast<MPI_Aint>(stride), type, &out);
    return out;
  }
  MPI_Datatype chunk = Repeat(kChunk, stride, type);
  MPI_Datatype chunks = Repeat(count / kChunk, stride * kChunk, chunk);
  MPI_Type_free(&chunk);
  return Pair(chunks, static_cast<MPI_Aint>(count / kChunk * kChunk * stride),
              Repeat(count % kChunk, stride, type));
}

}  // namespace

MPI_Datatype RegionType(const HostRegion& r) {
  int64_t run = r.element_bytes;
  int d = static_cast<int>(r.extent.size()) - 1;
  while (d >= 0 && (r.extent[d] == 1 || r.byte_strides[d] == run)) {
    run *= r.extent[d];
    --d;
  }
  MPI_Datatype type = Bytes(run);
  for (; d >= 0; --d) {
    MPI_Datatype outer = Repeat(r.extent[d], r.byte_strides[d], type);
    MPI_Type_free(&type);
    type = outer;
  }
  MPI_Type_commit(&type);
  return type;
}

}  // namespace tessera::mpi
