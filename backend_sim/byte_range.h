// A half-open range of simulated device addresses, [lo, hi), and sets of
// them kept as sorted, disjoint lists.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace streamcheck::sim {

struct ByteRange {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  std::uint64_t size() const { return hi - lo; }
  friend constexpr bool operator==(ByteRange, ByteRange) = default;
};

/// Adds `r` to `ranges` (sorted by address, disjoint, none adjacent),
/// merging it with the ranges it overlaps or touches: the union, never the
/// hull, so bytes between two disjoint ranges stay out.
inline void add_range(std::vector<ByteRange>& ranges, ByteRange r) {
  if (r.lo >= r.hi) return;
  auto first = std::lower_bound(ranges.begin(), ranges.end(), r.lo,
                                [](const ByteRange& x, std::uint64_t lo) { return x.hi < lo; });
  auto last = first;
  while (last != ranges.end() && last->lo <= r.hi) {
    r.lo = std::min(r.lo, last->lo);
    r.hi = std::max(r.hi, last->hi);
    ++last;
  }
  ranges.insert(ranges.erase(first, last), r);
}

/// How many bytes the ranges hold together.
inline std::uint64_t total_size(const std::vector<ByteRange>& ranges) {
  std::uint64_t n = 0;
  for (const ByteRange& r : ranges) n += r.size();
  return n;
}

}  // namespace streamcheck::sim
