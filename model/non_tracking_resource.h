// A resource that allocates but does not track cross-stream uses (seed 002's
// "direct" resource). Its tracking calls fail with StreamMisuse on purpose: a
// silent no-op would let a LaunchRecorder believe a dependency was queued.
//
// Memory ordering: allocate synchronizes the alloc stream before returning,
// and deallocate synchronizes it before queueing the free, so a block is
// ready for any stream once returned, and its work on its stream is done
// once deallocate returns (the free itself is stream-ordered after it; a
// failed synchronize leaves the block live). Ordering the caller's own
// cross-stream work is the caller's job.
#pragma once

#include <mutex>
#include <string>
#include <unordered_map>

#include "model/backend.h"
#include "model/guarded.h"
#include "model/memory_resource.h"
#include "model/types.h"

namespace streamcheck {

template <Backend B>
class NonTrackingResource {
 public:
  using BackendType = B;
  using Mutex = typename B::Mutex;

  explicit NonTrackingResource(B& backend) : backend_(backend) {}

  Result<DeviceBlock> allocate(std::size_t bytes, StreamId stream, AllocTag tag = {}) {
    if (bytes == 0) return ResourceError::driver("NonTrackingResource::allocate: zero-byte allocation not supported");
    auto s = backend_.resolve_stream(stream);
    if (!s) return unknown("allocate", stream);
    auto ptr = backend_.alloc_async(bytes, *s);
    if (!ptr) return ResourceError::driver_caused_by("NonTrackingResource::allocate", ptr.error());
    if (auto synced = backend_.synchronize_stream(*s); !synced) {
      (void)backend_.free_async(ptr.value(), *s);
      return ResourceError::driver_caused_by("NonTrackingResource::allocate: synchronize", synced.error());
    }
    const Generation generation = Generation::next();
    auto tally = tally_.lock();
    // The backend handed out an address still live here (a driver bug):
    // refuse, and never free it, which would release the live block there.
    if (!tally->live.try_emplace(ptr.value(), Entry{generation, bytes}).second)
      return ResourceError::driver("NonTrackingResource::allocate: the backend returned the address " +
                                   std::to_string(ptr.value()) + " of a live block");
    tally->live_bytes += bytes;
    return DeviceBlock{ptr.value(), backend_.device_ordinal(), stream, bytes, 1, tag, generation, BlockState::Live};
  }

  Status deallocate(const DeviceBlock& block) {
    auto s = backend_.resolve_stream(block.alloc_stream);
    if (!s) return unknown("deallocate", block.alloc_stream);
    auto tally = tally_.lock();
    auto it = tally->live.find(block.ptr);
    if (it == tally->live.end() || it->second.generation != block.generation)
      return ResourceError::use_after_free(block.generation);
    // Synchronize before the free: the block's work on its stream is done,
    // and a failure leaves the block live and the tally as it was (P4).
    if (auto synced = backend_.synchronize_stream(*s); !synced)
      return ResourceError::driver_caused_by("NonTrackingResource::deallocate: synchronize", synced.error());
    if (auto freed = backend_.free_async(block.ptr, *s); !freed)
      return ResourceError::driver_caused_by("NonTrackingResource::deallocate", freed.error());
    tally->live_bytes -= it->second.bytes;
    tally->live.erase(it);
    return {};
  }

  Status prepare_block_use(BlockId, StreamId, Access) { return unsupported("prepare_block_use"); }
  Status finish_block_use(BlockId, StreamId, Access) { return unsupported("finish_block_use"); }
  Status record_block_use(const DeviceBlock&, StreamId) { return unsupported("record_block_use"); }
  Status reap_pending() { return {}; }
  bool supports_block_use_tracking() const { return false; }
  std::size_t bytes_outstanding() const { return tally_.lock()->live_bytes; }
  std::uint32_t device_ordinal() const { return backend_.device_ordinal(); }

 private:
  struct Entry {
    Generation generation;
    std::size_t bytes;
  };
  static ResourceError unsupported(const char* fn) {
    return ResourceError::stream_misuse(std::string(fn) +
                                        " unsupported by NonTrackingResource: it does not track cross-stream uses; "
                                        "use Resource, or order cross-stream work yourself");
  }
  static ResourceError unknown(const char* fn, StreamId s) {
    return ResourceError::stream_misuse(std::string("NonTrackingResource::") + fn + ": unknown StreamId(" +
                                        std::to_string(s.value) + ")");
  }

  struct Tally {
    std::unordered_map<std::uint64_t, Entry> live;
    std::size_t live_bytes = 0;
  };

  B& backend_;
  Guarded<Tally, Mutex> tally_;
};

static_assert(MemoryResource<NonTrackingResource<BackendArchetype>>,
              "NonTrackingResource<B> must satisfy the streamcheck::MemoryResource concept (model/memory_resource.h)");

}  // namespace streamcheck
