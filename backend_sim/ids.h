// Strong index types for the simulator: a stream, an event, an allocation
// and a host thread are each numbered from 0 in creation order, and each
// number has its own type. They are made from the integer only explicitly and
// never convert back implicitly, so record(EventIndex, StreamIndex) and
// wait(StreamIndex, EventIndex) cannot be called with their arguments
// swapped. Read the number with `.value`.
#pragma once

#include <algorithm>
#include <compare>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace streamcheck::sim {

template <class Tag>
struct Index {
  std::uint32_t value = 0;

  constexpr Index() = default;
  constexpr explicit Index(std::uint32_t v) : value(v) {}

  friend constexpr bool operator==(Index, Index) = default;
  friend constexpr auto operator<=>(Index, Index) = default;
};

using StreamIndex = Index<struct StreamIndexTag>;
using EventIndex = Index<struct EventIndexTag>;
using AllocationIndex = Index<struct AllocationIndexTag>;
using HostThread = Index<struct HostThreadTag>;

/// An op is named by its stream and its position on that stream.
struct OpRef {
  StreamIndex stream;
  std::uint32_t index = 0;
  friend constexpr bool operator==(OpRef, OpRef) = default;
  friend constexpr auto operator<=>(OpRef, OpRef) = default;
};

/// An op as one 64-bit key (side tables of kept records hash it), and back.
inline std::uint64_t packed(OpRef r) { return (std::uint64_t{r.stream.value} << 32) | r.index; }
inline OpRef unpacked(std::uint64_t p) {
  return OpRef{StreamIndex{static_cast<std::uint32_t>(p >> 32)}, static_cast<std::uint32_t>(p)};
}

/// A trace line per op, by stream and index: one int an op, where a map
/// keyed by op cost a tree node and an allocation each (docs/PERFORMANCE.md,
/// "HB checking"). A retention pass (backend_sim/retention.h) drops a
/// prefix of each stream's lines, keeping those of the ops it keeps aside.
class OpLines {
 public:
  void set(OpRef op, int line) {
    if (by_stream_.size() <= op.stream.value) by_stream_.resize(op.stream.value + 1);
    Lines& lines = by_stream_[op.stream.value];
    if (op.index < lines.from)
      throw std::logic_error("OpLines: internal error: a line set for an op whose lines were dropped");
    const std::size_t at = op.index - lines.from;
    if (lines.held.size() <= at) lines.held.resize(at + 1, kNone);
    lines.held[at] = line;
  }
  std::optional<int> get(OpRef op) const {
    if (op.stream.value >= by_stream_.size()) return std::nullopt;
    const Lines& lines = by_stream_[op.stream.value];
    if (op.index < lines.from) {
      const auto kept = kept_.find(packed(op));
      return kept == kept_.end() ? std::nullopt : std::optional<int>(kept->second);
    }
    const std::size_t at = op.index - lines.from;
    if (at >= lines.held.size() || lines.held[at] == kNone) return std::nullopt;
    return lines.held[at];
  }
  /// Drops the lines of each stream s's ops [0, dropped_before[s]) but for
  /// `keeps(op)` (a Retention's dropped_before and keeps).
  template <class Keeps>
  void drop(const std::vector<std::uint32_t>& dropped_before, Keeps&& keeps) {
    std::unordered_map<std::uint64_t, int> kept;
    for (const auto& [op, line] : kept_)
      if (keeps(unpacked(op))) kept.emplace(op, line);
    for (std::uint32_t s = 0; s < by_stream_.size() && s < dropped_before.size(); ++s) {
      Lines& lines = by_stream_[s];
      if (dropped_before[s] <= lines.from) continue;
      const std::size_t n = std::min<std::size_t>(dropped_before[s] - lines.from, lines.held.size());
      for (std::size_t i = 0; i < n; ++i) {
        const OpRef op{StreamIndex{s}, static_cast<std::uint32_t>(lines.from + i)};
        if (lines.held[i] != kNone && keeps(op)) kept.emplace(packed(op), lines.held[i]);
      }
      lines.held.erase(lines.held.begin(), lines.held.begin() + static_cast<std::ptrdiff_t>(n));
      lines.from = dropped_before[s];
    }
    kept_ = std::move(kept);
  }

 private:
  static constexpr int kNone = std::numeric_limits<int>::min();
  struct Lines {
    std::uint32_t from = 0;  // held[i] is op from + i's line
    std::vector<int> held;
  };
  std::vector<Lines> by_stream_;
  std::unordered_map<std::uint64_t, int> kept_;  // dropped ops' lines kept aside, by packed op
};

}  // namespace streamcheck::sim
