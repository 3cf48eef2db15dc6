// Strong index types for the simulator: a stream, an event, an allocation
// and a host thread are each numbered from 0 in creation order, and each
// number has its own type. They are made from the integer only explicitly and
// never convert back implicitly, so record(EventIndex, StreamIndex) and
// wait(StreamIndex, EventIndex) cannot be called with their arguments
// swapped. Read the number with `.value`.
#pragma once

#include <compare>
#include <cstdint>
#include <limits>
#include <optional>
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

/// A trace line per op, by stream and index: one int an op, where a map
/// keyed by op cost a tree node and an allocation each (docs/PERFORMANCE.md,
/// "HB checking").
class OpLines {
 public:
  void set(OpRef op, int line) {
    if (by_stream_.size() <= op.stream.value) by_stream_.resize(op.stream.value + 1);
    auto& lines = by_stream_[op.stream.value];
    if (lines.size() <= op.index) lines.resize(op.index + 1, kNone);
    lines[op.index] = line;
  }
  std::optional<int> get(OpRef op) const {
    if (op.stream.value >= by_stream_.size()) return std::nullopt;
    const auto& lines = by_stream_[op.stream.value];
    if (op.index >= lines.size() || lines[op.index] == kNone) return std::nullopt;
    return lines[op.index];
  }

 private:
  static constexpr int kNone = std::numeric_limits<int>::min();
  std::vector<std::vector<int>> by_stream_;
};

}  // namespace streamcheck::sim
