// Vector clocks over "agents": every stream and every host thread owns one
// component. An op's clock says how many ops of each stream it is ordered
// after, so "a happens before b" is one comparison (SPEC §3).
//
// The first kInlineAgents components live inside the clock, the rest in a
// vector that stays empty (no heap block) for programs with fewer agents:
// every op keeps a clock, and a heap block per op was a third of the
// checker's time at 1 M ops (docs/PERFORMANCE.md, "HB checking").
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace streamcheck::sim {

using AgentId = std::uint32_t;

class VectorClock {
 public:
  static constexpr std::size_t kInlineAgents = 12;

  std::uint32_t get(AgentId a) const {
    if (a < kInlineAgents) return inline_[a];
    const std::size_t i = a - kInlineAgents;
    return i < overflow_.size() ? overflow_[i] : 0;
  }
  void set(AgentId a, std::uint32_t v) {
    if (a < kInlineAgents) {
      inline_[a] = v;
    } else {
      const std::size_t i = a - kInlineAgents;
      if (i >= overflow_.size()) overflow_.resize(i + 1, 0);
      overflow_[i] = v;
    }
    size_ = std::max<std::size_t>(size_, std::size_t{a} + 1);
  }
  /// Component `a` becomes at least `v` (a join of that component alone).
  void raise(AgentId a, std::uint32_t v) {
    if (get(a) < v) set(a, v);
  }
  std::uint32_t tick(AgentId a) {
    set(a, get(a) + 1);
    return get(a);
  }
  void join(const VectorClock& o) {
    for (std::size_t i = 0; i < kInlineAgents; ++i) inline_[i] = std::max(inline_[i], o.inline_[i]);
    if (o.overflow_.size() > overflow_.size()) overflow_.resize(o.overflow_.size(), 0);
    for (std::size_t i = 0; i < o.overflow_.size(); ++i) overflow_[i] = std::max(overflow_[i], o.overflow_[i]);
    size_ = std::max(size_, o.size_);
  }
  /// True when this clock has seen the first `count` events of agent `a`.
  bool covers(AgentId a, std::uint32_t count) const { return get(a) >= count; }
  /// One more than the highest agent ever set (or joined in).
  std::size_t size() const { return size_; }
  friend bool operator==(const VectorClock& a, const VectorClock& b) {
    const std::size_t n = std::max(a.size_, b.size_);
    for (std::size_t i = 0; i < n; ++i)
      if (a.get(static_cast<AgentId>(i)) != b.get(static_cast<AgentId>(i))) return false;
    return true;
  }

 private:
  std::array<std::uint32_t, kInlineAgents> inline_{};
  std::vector<std::uint32_t> overflow_;
  std::size_t size_ = 0;
};

}  // namespace streamcheck::sim
