// Vector clocks over "agents": every stream and every host thread owns one
// component. An op's clock says how many ops of each stream it is ordered
// after, so "a happens before b" is one comparison (SPEC §3).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace streamcheck::sim {

using AgentId = std::uint32_t;

class VectorClock {
 public:
  std::uint32_t get(AgentId a) const { return a < c_.size() ? c_[a] : 0; }
  void set(AgentId a, std::uint32_t v) {
    if (a >= c_.size()) c_.resize(a + 1, 0);
    c_[a] = v;
  }
  std::uint32_t tick(AgentId a) {
    set(a, get(a) + 1);
    return c_[a];
  }
  void join(const VectorClock& o) {
    if (o.c_.size() > c_.size()) c_.resize(o.c_.size(), 0);
    for (std::size_t i = 0; i < o.c_.size(); ++i) c_[i] = std::max(c_[i], o.c_[i]);
  }
  /// True when this clock has seen the first `count` events of agent `a`.
  bool covers(AgentId a, std::uint32_t count) const { return get(a) >= count; }
  std::size_t size() const { return c_.size(); }
  friend bool operator==(const VectorClock& a, const VectorClock& b) {
    const std::size_t n = std::max(a.c_.size(), b.c_.size());
    for (std::size_t i = 0; i < n; ++i)
      if (a.get(static_cast<AgentId>(i)) != b.get(static_cast<AgentId>(i))) return false;
    return true;
  }

 private:
  std::vector<std::uint32_t> c_;
};

}  // namespace streamcheck::sim
