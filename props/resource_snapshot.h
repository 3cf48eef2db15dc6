// One snapshot of everything a Resource and its backend expose about the
// resource's state, for the checks that a call changed nothing: P4 (a failed
// call is atomic) and P5 (a refused stale id touches nothing). The property
// harness and the model/ tests compare the same figures.
//
// Standard library and model/ only: any resource with Resource's counters and
// any backend with live_event_count() will do.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <ranges>
#include <string>
#include <vector>

namespace streamcheck::props {

struct ResourceSnapshot {
  std::size_t live_bytes = 0;
  std::size_t pending_free_bytes = 0;
  std::size_t pending_per_stream = 0;
  std::size_t live_blocks = 0;
  std::size_t live_events = 0;
  /// pending_use_event_count() of each block asked about, in the order asked
  /// (nullopt: nothing is live at that address).
  std::vector<std::optional<std::size_t>> use_events;
  /// Through the debug tier: what it holds of the resource underneath,
  /// live or in quarantine (blocks, bytes with canaries).
  struct Tier {
    std::size_t held_blocks = 0;
    std::size_t held_bytes = 0;
    friend bool operator==(const Tier&, const Tier&) = default;
  };
  std::optional<Tier> tier;

  friend bool operator==(const ResourceSnapshot&, const ResourceSnapshot&) = default;
};

/// The figures in one line; counterexample pages quote it, so keep the format.
inline std::string to_string(const ResourceSnapshot& s) {
  std::string out = "live=" + std::to_string(s.live_bytes) + " pending=" + std::to_string(s.pending_free_bytes) +
                    " per_stream=" + std::to_string(s.pending_per_stream) + " blocks=" + std::to_string(s.live_blocks) +
                    " events=" + std::to_string(s.live_events) + " use_events=[";
  for (const auto& u : s.use_events) out += (u ? std::to_string(*u) : std::string("gone")) + " ";
  out += "]";
  if (s.tier)
    out += " tier_held_blocks=" + std::to_string(s.tier->held_blocks) +
           " tier_held_bytes=" + std::to_string(s.tier->held_bytes);
  return out;
}

inline std::ostream& operator<<(std::ostream& os, const ResourceSnapshot& s) {
  return os << "{" << to_string(s) << "}";
}

/// What a resource must expose to be snapshotted (Resource does).
template <class R>
concept SnapshotResource = requires(const R& r, std::uint64_t ptr) {
  { r.live_bytes() } -> std::convertible_to<std::size_t>;
  { r.pending_free_bytes() } -> std::convertible_to<std::size_t>;
  { r.pending_per_stream_total() } -> std::convertible_to<std::size_t>;
  { r.live_block_count() } -> std::convertible_to<std::size_t>;
  { r.pending_use_event_count(ptr) } -> std::same_as<std::optional<std::size_t>>;
};

/// The state of `resource` and `backend`, with the use events of the blocks
/// at `ptrs` (any range of addresses).
template <SnapshotResource R, class B, std::ranges::input_range Ptrs>
requires std::convertible_to<std::ranges::range_reference_t<const Ptrs>, std::uint64_t> ResourceSnapshot
snapshot_of(const R& resource, const B& backend, const Ptrs& ptrs) {
  ResourceSnapshot s{resource.live_bytes(),
                     resource.pending_free_bytes(),
                     resource.pending_per_stream_total(),
                     resource.live_block_count(),
                     backend.live_event_count(),
                     {},
                     std::nullopt};
  for (std::uint64_t ptr : ptrs) s.use_events.push_back(resource.pending_use_event_count(ptr));
  return s;
}

/// The state of `resource` and `backend`, with the use events of one block.
template <SnapshotResource R, class B>
ResourceSnapshot snapshot_of(const R& resource, const B& backend, std::uint64_t ptr) {
  const std::uint64_t ptrs[] = {ptr};
  return snapshot_of(resource, backend, ptrs);
}

}  // namespace streamcheck::props
