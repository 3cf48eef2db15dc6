// The interface every resource, decorator and the LaunchRecorder agree on.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>

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

}  // namespace streamcheck
