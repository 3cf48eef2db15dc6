// A half-open range of simulated device addresses, [lo, hi), and sets of
// them kept as sorted, disjoint lists.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace streamcheck::sim {

struct ByteRange {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  std::uint64_t size() const { return hi - lo; }
  friend constexpr bool operator==(ByteRange, ByteRange) = default;
};

/// A ByteRange kept in 32-bit words: 16 bytes aligned to 4, so a record
/// that adds a 32-bit field to it takes 20 bytes, not 24 (the race checker
/// keeps one per access and one per pending read of a run: millions in a
/// long trace).
class PackedByteRange {
 public:
  PackedByteRange() = default;
  explicit PackedByteRange(ByteRange r) {
    std::memcpy(&words_[0], &r.lo, sizeof r.lo);
    std::memcpy(&words_[2], &r.hi, sizeof r.hi);
  }
  ByteRange get() const {
    ByteRange r;
    std::memcpy(&r.lo, &words_[0], sizeof r.lo);
    std::memcpy(&r.hi, &words_[2], sizeof r.hi);
    return r;
  }

 private:
  std::uint32_t words_[4] = {};
};
static_assert(sizeof(PackedByteRange) == 16 && alignof(PackedByteRange) == 4);

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
