// The interface every resource, decorator and the LaunchRecorder agree on.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "model/types.h"

namespace streamcheck {

template <class R>
concept MemoryResource = requires(R& r, const R& cr, std::size_t bytes, StreamId s, AllocTag tag,
                                  const DeviceBlock& block, BlockId id, Access access) {
  { r.allocate(bytes, s, tag) } -> std::same_as<Result<DeviceBlock>>;
  { r.deallocate(block) } -> std::same_as<Status>;
  { r.prepare_block_use(id, s, access) } -> std::same_as<Status>;
  { r.finish_block_use(id, s, access) } -> std::same_as<Status>;
  { r.record_block_use(block, s) } -> std::same_as<Status>;
  { r.reap_pending() } -> std::same_as<Status>;
  { cr.supports_block_use_tracking() } -> std::same_as<bool>;
  { cr.bytes_outstanding() } -> std::same_as<std::size_t>;
  { cr.device_ordinal() } -> std::same_as<std::uint32_t>;
};

/// The least a MemoryResource provides (plus the Mutex type the decorators
/// lock with), declared and never defined: the decorators' headers assert
/// their concept over it at their end.
struct MemoryResourceArchetype {
  using Mutex = std::mutex;
  Result<DeviceBlock> allocate(std::size_t bytes, StreamId stream, AllocTag tag = {});
  Status deallocate(const DeviceBlock& block);
  Status prepare_block_use(BlockId id, StreamId stream, Access access);
  Status finish_block_use(BlockId id, StreamId stream, Access access);
  Status record_block_use(const DeviceBlock& block, StreamId stream);
  Status reap_pending();
  bool supports_block_use_tracking() const;
  std::size_t bytes_outstanding() const;
  std::uint32_t device_ordinal() const;
};
static_assert(MemoryResource<MemoryResourceArchetype>,
              "MemoryResourceArchetype must satisfy the streamcheck::MemoryResource concept it stands for");

}  // namespace streamcheck
