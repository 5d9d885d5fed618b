// tests/fuzz/fuzz_input.h: FuzzInput, a reader of structured values from a
// libFuzzer input. Borrows the bytes for its lifetime; not thread-safe. Once
// the bytes run out every read returns its lowest value, so every input, even
// an empty one, decodes to some valid structure.
#ifndef TESSERA_TESTS_FUZZ_FUZZ_INPUT_H_
#define TESSERA_TESTS_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <limits>

namespace tessera::fuzzing {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  // The next byte, or 0 at the end.
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  bool Bool() { return (Byte() & 1) != 0; }
  // An integer in [lo, hi] (precondition: lo <= hi, hi - lo < 2^31).
  int64_t Int(int64_t lo, int64_t hi) {
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    uint64_t v = Byte();
    if (span > 256) v = v << 8 | Byte();
    if (span > 65536) v = v << 16 | (uint64_t{Byte()} << 8 | Byte());
    return lo + static_cast<int64_t>(v % span);
  }
  // An int32 from a byte: small values around 0 most of the time, the extremes sometimes.
  int32_t EdgyInt() {
    static constexpr int32_t kEdges[] = {
        std::numeric_limits<int32_t>::min(),     std::numeric_limits<int32_t>::min() + 1, -2, -1,
        std::numeric_limits<int32_t>::max() - 1, std::numeric_limits<int32_t>::max()};
    const uint8_t b = Byte();
    if (b >= 250) return kEdges[b - 250];
    return static_cast<int32_t>(b % 12) - 1;  // -1..10
  }
  bool empty() const { return pos_ >= size_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace tessera::fuzzing

#endif  // TESSERA_TESTS_FUZZ_FUZZ_INPUT_H_
