// Strong index types for the simulator: a stream, an event, an allocation
// and a host thread are each numbered from 0 in creation order, and each
// number has its own type. They are made from the integer only explicitly and
// never convert back implicitly, so record(EventIndex, StreamIndex) and
// wait(StreamIndex, EventIndex) cannot be called with their arguments
// swapped. Read the number with `.value`.
#pragma once

#include <compare>
#include <cstdint>

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

}  // namespace streamcheck::sim
