// The pool's freed ranges waiting for reuse (R7), in the order they were
// freed. That order is the order of Pool::place()'s candidates, which a
// schedule's pool choices index, so it is kept as it is; a tree of counts
// and sizes over it answers how many ranges fit an allocation and which is
// the n-th that does in a few steps when the ranges are alike (those a
// `buffer`/`free` loop leaves behind). A scan of every range at every
// allocation made a streamed check of n allocations cost about n^1.5: the
// random schedule leaves about sqrt(2n) ranges (docs/PERFORMANCE.md,
// "Freed ranges found by count").
#pragma once

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "backend_sim/byte_range.h"
#include "backend_sim/ids.h"

namespace streamcheck::sim {

struct FreeRange {
  ByteRange range;
  OpRef free_op;
};

class FreeRanges {
 public:
  /// A range's place in freed order. Stays valid until the next push_back,
  /// which may pack the ranges left (keeping their order).
  using Slot = std::size_t;

  void push_back(const FreeRange& r) {
    if (r.range.lo >= r.range.hi) throw std::logic_error("FreeRanges: internal error: an empty range was freed");
    if (slots_.size() == leaves_) rebuild(live_ + 1);
    slots_.push_back(r);
    ++live_;
    set_leaf(slots_.size() - 1);
  }
  /// How many ranges are held.
  std::size_t size() const { return live_; }
  const FreeRange& operator[](Slot s) const { return slots_.at(s); }
  /// Calls fn(slot, range) for each range held, in freed order.
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (Slot s = 0; s < slots_.size(); ++s)
      if (held(s)) fn(s, slots_[s]);
  }
  /// Takes `bytes` off the front of range `s` (an allocation placed
  /// there); the range goes when nothing is left of it.
  void take_front(Slot s, std::uint64_t bytes) {
    ByteRange& r = held_range(s);
    if (bytes > r.size()) throw std::logic_error("FreeRanges: internal error: took more than a range holds");
    r.lo += bytes;
    if (r.lo == r.hi) --live_;
    set_leaf(s);
  }
  /// Drops range `s` (released back past the threshold).
  void erase(Slot s) {
    ByteRange& r = held_range(s);
    r.lo = r.hi;
    --live_;
    set_leaf(s);
  }
  /// How many ranges hold at least `bytes`.
  std::size_t count_fitting(std::uint64_t bytes) const { return tree_.empty() ? 0 : fitting_under(1, bytes); }
  /// The slot of the n-th range (from 0, in freed order) that holds at
  /// least `bytes`; n must be below count_fitting(bytes).
  Slot nth_fitting(std::uint64_t bytes, std::size_t n) const {
    if (n >= count_fitting(bytes))
      throw std::logic_error(
          fmt::format("FreeRanges: internal error: asked for fitting range {} of {}", n, count_fitting(bytes)));
    std::size_t node = 1;
    while (node < leaves_) {
      const std::size_t left = fitting_under(2 * node, bytes);
      if (n < left) {
        node = 2 * node;
      } else {
        n -= left;
        node = 2 * node + 1;
      }
    }
    return node - leaves_;
  }

 private:
  // A subtree's held ranges: how many, and their smallest and largest
  // sizes (an empty one: max 0, min the largest value), so that a subtree
  // whose ranges all fit, or none does, is answered without going down.
  struct Node {
    std::size_t count = 0;
    std::uint64_t min = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t max = 0;
  };

  bool held(Slot s) const { return slots_[s].range.lo < slots_[s].range.hi; }
  ByteRange& held_range(Slot s) {
    if (s >= slots_.size() || !held(s))
      throw std::logic_error(fmt::format("FreeRanges: internal error: slot {} holds no range", s));
    return slots_[s].range;
  }
  std::size_t fitting_under(std::size_t node, std::uint64_t bytes) const {
    const Node& n = tree_[node];
    if (n.count == 0 || n.max < bytes) return 0;
    if (n.min >= bytes) return n.count;
    return fitting_under(2 * node, bytes) + fitting_under(2 * node + 1, bytes);
  }
  static Node joined(const Node& a, const Node& b) {
    return Node{a.count + b.count, std::min(a.min, b.min), std::max(a.max, b.max)};
  }
  void set_leaf(Slot s) {
    std::size_t node = leaves_ + s;
    tree_[node] = held(s) ? Node{1, slots_[s].range.size(), slots_[s].range.size()} : Node{};
    for (node /= 2; node >= 1; node /= 2) tree_[node] = joined(tree_[2 * node], tree_[2 * node + 1]);
  }
  // Packs the held ranges to the front, in order, and sizes the tree for
  // at least twice `wanted` leaves: a rebuild comes at most once every
  // half a tree's worth of push_backs.
  void rebuild(std::size_t wanted) {
    std::erase_if(slots_, [](const FreeRange& r) { return r.range.lo >= r.range.hi; });
    leaves_ = std::bit_ceil(std::max<std::size_t>(16, 2 * wanted));
    tree_.assign(2 * leaves_, Node{});
    for (Slot s = 0; s < slots_.size(); ++s)
      tree_[leaves_ + s] = Node{1, slots_[s].range.size(), slots_[s].range.size()};
    for (std::size_t node = leaves_ - 1; node >= 1; --node) tree_[node] = joined(tree_[2 * node], tree_[2 * node + 1]);
  }

  std::vector<FreeRange> slots_;  // in freed order; one taken or erased whole is empty (lo == hi)
  std::vector<Node> tree_;        // node i's children are 2i and 2i + 1; slot s is leaf leaves_ + s
  std::size_t leaves_ = 0;
  std::size_t live_ = 0;
};

}  // namespace streamcheck::sim
