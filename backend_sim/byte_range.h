// A half-open range of simulated device addresses, [lo, hi).
#pragma once

#include <cstdint>

namespace streamcheck::sim {

struct ByteRange {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  std::uint64_t size() const { return hi - lo; }
  friend constexpr bool operator==(ByteRange, ByteRange) = default;
};

}  // namespace streamcheck::sim
