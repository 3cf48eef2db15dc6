// A decorator that caps the bytes outstanding in the resource it wraps
// (seed 002's budget). Tracking calls are forwarded unchanged.
//
// P7: bytes_outstanding() never exceeds the limit; a refusal reports the
// exact request and the exact remaining budget. Allocations are checked and
// made under one lock, so concurrent callers cannot overshoot together.
#pragma once

#include <mutex>

#include "model/guarded.h"
#include "model/memory_resource.h"
#include "model/mutants.h"
#include "model/types.h"

namespace streamcheck {

template <MemoryResource Inner>
class BudgetResource {
 public:
  using Mutex = typename Inner::Mutex;

  BudgetResource(Inner& inner, std::size_t limit) : inner_(inner), limit_(limit), allocator_(&inner) {}

  Result<DeviceBlock> allocate(std::size_t bytes, StreamId stream, AllocTag tag = {}) {
    auto allocator = allocator_.lock();
    Inner& inner = **allocator;
    const std::size_t used = inner.bytes_outstanding();
    const std::size_t remaining = used >= limit_ ? 0 : limit_ - used;
    // M14 compares the request with the whole limit.
    const std::size_t allowed = protocol_of_t<Inner>::has(MutantId::M14) ? limit_ : remaining;
    if (bytes > allowed) return ResourceError::out_of_budget(bytes, remaining);
    return inner.allocate(bytes, stream, tag);
  }
  Status deallocate(const DeviceBlock& block) { return inner_.deallocate(block); }
  Status prepare_block_use(BlockId id, StreamId s, Access a) { return inner_.prepare_block_use(id, s, a); }
  Status finish_block_use(BlockId id, StreamId s, Access a) { return inner_.finish_block_use(id, s, a); }
  Status record_block_use(const DeviceBlock& block, StreamId s) { return inner_.record_block_use(block, s); }
  Status reap_pending() { return inner_.reap_pending(); }
  bool supports_block_use_tracking() const { return inner_.supports_block_use_tracking(); }
  std::size_t bytes_outstanding() const { return inner_.bytes_outstanding(); }
  std::uint32_t device_ordinal() const { return inner_.device_ordinal(); }
  std::size_t limit() const { return limit_; }

 private:
  Inner& inner_;
  const std::size_t limit_;
  // The inner resource as allocate reaches it: only under the lock that
  // makes the budget check and the allocation one step, so two threads
  // cannot both see room and overshoot together.
  Guarded<Inner*, Mutex> allocator_;
};

static_assert(MemoryResource<BudgetResource<MemoryResourceArchetype>>,
              "BudgetResource<Inner> must satisfy the streamcheck::MemoryResource concept (model/memory_resource.h)");

}  // namespace streamcheck
