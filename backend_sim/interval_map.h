// A map from disjoint half-open byte ranges to values, split on demand.
// Used for the race checker's shadow state and for simulated memory.
#pragma once

#include <array>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <utility>

namespace streamcheck::sim {

template <class T>
class IntervalMap {
 public:
  struct Segment {
    std::uint64_t hi;
    T value;
  };
  using Map = std::map<std::uint64_t, Segment>;

  IntervalMap() = default;
  // A copy or a move starts with no remembered starts: they name the other
  // map's nodes.
  IntervalMap(const IntervalMap& other) : map_(other.map_) {}
  IntervalMap(IntervalMap&& other) noexcept : map_(std::move(other.map_)) { other.forget_starts(); }
  IntervalMap& operator=(const IntervalMap& other) {
    if (this != &other) {
      map_ = other.map_;
      forget_starts();
    }
    return *this;
  }
  IntervalMap& operator=(IntervalMap&& other) noexcept {
    if (this != &other) {
      map_ = std::move(other.map_);
      forget_starts();
      other.forget_starts();
    }
    return *this;
  }
  ~IntervalMap() = default;

  /// Makes [lo, hi) exactly covered by segments (missing parts get
  /// `fill`), and calls fn(lo, hi, value&) for each in address order.
  /// At most one search of the tree (none for a remembered start,
  /// segment_starting_at): the checker calls this for every access and
  /// every executed read and write, and three searches (a split at each
  /// end, then the first segment) were a tenth of its time.
  template <class Fn>
  void for_range(std::uint64_t lo, std::uint64_t hi, const T& fill, Fn&& fn) {
    if (lo >= hi) return;
    auto it = segment_starting_at(lo, hi, fill);
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

  void clear() {
    map_.clear();
    forget_starts();
  }
  std::size_t segment_count() const { return map_.size(); }

 private:
  /// The segment that starts at `lo`, made so if none does: the one `lo` is
  /// inside is split there, or the gap `lo` is in is filled with `fill` up
  /// to the next segment or `hi`. Recent starts are remembered: the checker
  /// asks for the same buffers again and again, and the tree search was
  /// most of a lookup (docs/PERFORMANCE.md). A remembered node stays valid:
  /// nodes are never erased (a split shortens a segment and adds its right
  /// part), and a node's key never changes; only clear() drops them.
  typename Map::iterator segment_starting_at(std::uint64_t lo, std::uint64_t hi, const T& fill) {
    RememberedStart& remembered = starts_[(lo * 0x9E3779B97F4A7C15ULL) >> (64 - kStartBits)];
    if (remembered.lo == lo) return remembered.segment;
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
    if (it == map_.end() || it->first > lo)  // lo is in a gap
      it = map_.emplace_hint(it, lo, Segment{it == map_.end() ? hi : std::min(hi, it->first), fill});
    remembered = RememberedStart{lo, it};
    return it;
  }
  void forget_starts() { starts_.fill(RememberedStart{}); }

  static constexpr unsigned kStartBits = 6;
  struct RememberedStart {
    std::uint64_t lo = std::numeric_limits<std::uint64_t>::max();  // none: no range starts there
    typename Map::iterator segment{};
  };
  Map map_;
  std::array<RememberedStart, std::size_t{1} << kStartBits> starts_{};
};

}  // namespace streamcheck::sim
