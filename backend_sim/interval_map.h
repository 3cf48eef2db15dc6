// A map from disjoint half-open byte ranges to values, split on demand.
// Used for the race checker's shadow state and for simulated memory.
#pragma once

#include <cstdint>
#include <iterator>
#include <map>

namespace streamcheck::sim {

template <class T>
class IntervalMap {
 public:
  struct Segment {
    std::uint64_t hi;
    T value;
  };
  using Map = std::map<std::uint64_t, Segment>;

  /// Makes [lo, hi) exactly covered by segments (missing parts get
  /// `fill`), and calls fn(lo, hi, value&) for each in address order.
  /// One search of the tree: the checker calls this for every access and
  /// every executed read and write, and three searches (a split at each
  /// end, then the first segment) were a tenth of its time.
  template <class Fn>
  void for_range(std::uint64_t lo, std::uint64_t hi, const T& fill, Fn&& fn) {
    if (lo >= hi) return;
    auto it = map_.upper_bound(lo);  // the first segment that starts past lo
    if (it != map_.begin()) {
      const auto before = std::prev(it);
      if (before->second.hi > lo) {  // lo is inside it: split it there
        if (before->first < lo) {
          Segment right{before->second.hi, before->second.value};
          before->second.hi = lo;
          it = map_.emplace_hint(it, lo, std::move(right));
        } else {
          it = before;
        }
      }
    }
    // Here `it` is the end or a segment that starts at or past `at`.
    std::uint64_t at = lo;
    while (at < hi) {
      if (it == map_.end() || it->first > at) {
        const std::uint64_t gap_end = (it == map_.end()) ? hi : std::min(hi, it->first);
        it = map_.emplace_hint(it, at, Segment{gap_end, fill});
      } else if (it->second.hi > hi) {  // it ends past hi: split it there
        Segment right{it->second.hi, it->second.value};
        it->second.hi = hi;
        map_.emplace_hint(std::next(it), hi, std::move(right));
      }
      fn(it->first, it->second.hi, it->second.value);
      at = it->second.hi;
      ++it;
    }
  }

  /// Visits existing segments overlapping [lo, hi) without changing them.
  template <class Fn>
  void visit(std::uint64_t lo, std::uint64_t hi, Fn&& fn) const {
    auto it = map_.upper_bound(lo);
    if (it != map_.begin()) --it;
    for (; it != map_.end() && it->first < hi; ++it) {
      if (it->second.hi <= lo) continue;
      fn(std::max(lo, it->first), std::min(hi, it->second.hi), it->second.value);
    }
  }

  void clear() { map_.clear(); }
  std::size_t segment_count() const { return map_.size(); }

 private:
  Map map_;
};

}  // namespace streamcheck::sim
