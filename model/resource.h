// The stream-ordered memory resource with cross-stream use tracking
// (SPEC §2, seed 000).
//
// Memory ordering — the contract this class enforces, in HB terms:
//   P-alloc  allocate(bytes, s) orders the allocation on s and records no
//            event. A prepare on another stream while the block has no
//            last_write records an allocation-ready event on s and waits for
//            it (R2, R3): same-stream allocate/use/free, the common case,
//            makes no event at all. Recorded later than the allocation, it
//            orders more than needed, never less (R1); it belongs to that
//            call alone (the block's state does not change). If the alloc
//            stream is gone by then, that prepare is refused (StreamMisuse).
//   P-read   prepare(id, s, Read) makes s wait on last_write when it was
//            recorded on another stream.
//   P-write  prepare(id, s, Write|ReadWrite) also makes s wait on every
//            outstanding read recorded on another stream.
//   P-finish finish(id, s, a) records an event on s after the work: a write
//            replaces last_write and clears the reads (the writer waited on
//            all of them, so the new event covers them transitively); a read
//            is appended.
//   P-free   deallocate(block) makes the alloc stream wait on last_write and
//            every read from other streams, then queues the free there.
//   Same-stream events are never waited on: R1 already orders them.
//   P-elide  a stream that already waited on an event's current record is
//            not made to wait on it again (R3 then R1: its later work is
//            ordered after that capture already). Every record of an event
//            forgets who waited on it (M22 does not, on a re-record).
// Using a block on another stream without going through prepare/finish (or
// a LaunchRecorder) is undefined: the resource cannot see that work.
//
// Thread safety: every public member may be called from many host threads
// at once. Locks and atomics come from the backend (Backend::Mutex/Atomic).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "model/address_map.h"
#include "model/backend.h"
#include "model/guarded.h"
#include "model/memory_resource.h"
#include "model/mutants.h"
#include "model/types.h"

namespace streamcheck {

template <Backend B, class P = CorrectProtocol>
class Resource {
 public:
  using BackendType = B;
  using Protocol = P;
  using Mutex = typename B::Mutex;

  explicit Resource(B& backend) : backend_(backend), device_ordinal_(backend.device_ordinal()) {}
  Resource(const Resource&) = delete;
  Resource& operator=(const Resource&) = delete;

  Result<DeviceBlock> allocate(std::size_t bytes, StreamId stream, AllocTag tag = {});
  Status deallocate(const DeviceBlock& block);
  Status prepare_block_use(BlockId id, StreamId use_stream, Access access);
  Status finish_block_use(BlockId id, StreamId use_stream, Access access);
  /// Compatibility shim: finish(Read) only. It queues no pre-launch wait, so
  /// it is unsafe for use-after-write on another stream.
  Status record_block_use(const DeviceBlock& block, StreamId use_stream) {
    return finish_block_use(BlockId::of(block), use_stream, Access::Read);
  }
  Status reap_pending();

  bool supports_block_use_tracking() const { return true; }
  std::uint32_t device_ordinal() const { return device_ordinal_; }
  std::size_t bytes_outstanding() const { return live_bytes() + pending_free_bytes(); }
  std::size_t live_bytes() const { return live_bytes_.load(); }
  std::size_t pending_free_bytes() const { return pending_bytes_.load(); }
  std::size_t pending_per_stream_total() const;
  /// Outstanding reads plus last_write (0 or 1) of the live block at `ptr`;
  /// nullopt when nothing is live there.
  std::optional<std::size_t> pending_use_event_count(std::uint64_t ptr) const;
  std::size_t live_block_count() const;
  /// Whether a call is inside the block map's critical section right now:
  /// a test hook running another thread's calls from inside a backend call
  /// asks it (props/harness.h), since such a thread would wait at the lock.
  bool block_map_locked() const { return live_.locked(); }

 private:
  using Event = typename B::Event;
  /// P-elide: the streams that queued a wait on an event since it was last
  /// recorded, up to three. A stream past the third is not remembered and
  /// waits every time: a wait too many, never one too few. StreamIds are
  /// never reused by a backend, so a remembered id is the stream that waited.
  class Waiters {
   public:
    bool contains(StreamId stream) const {
      return std::find(ids_.begin(), ids_.begin() + count_, stream) != ids_.begin() + count_;
    }
    void add(StreamId stream) {
      if (count_ < ids_.size()) ids_[count_++] = stream;
    }
    void clear() { count_ = 0; }

   private:
    std::array<StreamId, 3> ids_{};
    std::uint8_t count_ = 0;
  };
  struct StreamEvent {
    StreamId stream;
    Event event;
    Waiters waited{};  // P-elide: who has waited on this record of `event`
  };
  /// A block's recorded uses: its last write and its outstanding reads.
  struct BlockUses {
    std::optional<StreamEvent> last_write;
    std::vector<StreamEvent> reads;
  };
  /// A live block: 24 bytes, its uses out of line and made at the first
  /// finish that records one. Same-stream allocate/deallocate, the common
  /// case, then moves a small entry in and out of the map and touches
  /// one cache line of it; with the uses inline (88 bytes) the entry was
  /// most of what the core's allocate + deallocate cost on the GPU, its
  /// lines found cold after each driver call (docs/PERFORMANCE.md).
  struct LiveEntry {
    Generation generation;
    std::size_t bytes;
    std::unique_ptr<BlockUses> uses;  // null: no use recorded yet
  };
  /// `entry`'s uses, const when `entry` is; null when it has none.
  template <class Entry>
  static auto* uses_of(Entry& entry) {
    if constexpr (std::is_const_v<Entry>)
      return static_cast<const BlockUses*>(entry.uses.get());
    else
      return entry.uses.get();
  }
  static bool has_last_write(const LiveEntry& entry) { return entry.uses && entry.uses->last_write; }
  /// `entry`'s uses, made empty if it had none (under live_'s lock).
  static BlockUses& uses_for_update(LiveEntry& entry) {
    if (!entry.uses) entry.uses = std::make_unique<BlockUses>();
    return *entry.uses;
  }

  // The error values, each built out of line ([[gnu::cold]]): the calls'
  // hot paths then hold a compare and a call where they held the string
  // building, which was much of the core's own code on allocate +
  // deallocate (docs/PERFORMANCE.md, "GPU: the core's error paths out of
  // line").
  static std::string where(const char* fn) { return std::string("Resource::") + fn; }
  [[gnu::cold, gnu::noinline]] ResourceError wrong_device(const char* fn, std::uint32_t ordinal) const {
    return ResourceError::driver(where(fn) + ": block device " + std::to_string(ordinal) + " != resource device " +
                                 std::to_string(device_ordinal_));
  }
  [[gnu::cold, gnu::noinline]] static ResourceError unknown_stream(const char* fn, StreamId id) {
    return ResourceError::stream_misuse(where(fn) + ": unknown StreamId(" + std::to_string(id.value) + ")");
  }
  /// The Driver error of `fn` whose backend call `what` failed with `cause`.
  [[gnu::cold, gnu::noinline]] static ResourceError failed(const char* fn, const char* what,
                                                           const ResourceError& cause) {
    return ResourceError::driver_caused_by(where(fn) + ": " + what, cause);
  }
  [[gnu::cold, gnu::noinline]] static ResourceError zero_bytes() {
    return ResourceError::driver(where("allocate") + ": zero-byte allocation not supported");
  }
  [[gnu::cold, gnu::noinline]] static ResourceError alloc_stream_gone(StreamId alloc_stream) {
    return ResourceError::stream_misuse(where("prepare_block_use") + ": the block's alloc stream StreamId(" +
                                        std::to_string(alloc_stream.value) +
                                        ") is gone, so the allocation-ready event this first use on another "
                                        "stream waits for cannot be recorded (P-alloc)");
  }
  [[gnu::cold, gnu::noinline]] static ResourceError gone(Generation generation) {
    return ResourceError::use_after_free(generation);
  }
  // The same-stream skip: an event recorded on `event_stream` needs no wait
  // from `use_stream` when they are one stream (R1). M6 compares the wrong
  // pair of streams.
  static bool needs_wait(StreamId event_stream, StreamId use_stream, StreamId alloc_stream) {
    if constexpr (P::has(MutantId::M6)) return event_stream != alloc_stream;
    (void)alloc_stream;
    return event_stream != use_stream;
  }
  /// The event `entry` holds for a use of this kind on `stream`: a read's
  /// among the reads, a write's as last_write; null when it holds none.
  template <class Entry>
  static auto* same_stream_event(Entry& entry, StreamId stream, Access access) {
    auto* uses = uses_of(entry);
    decltype(&*uses->last_write) found = nullptr;
    if (uses == nullptr) return found;
    if (writes(access)) {
      if (uses->last_write && uses->last_write->stream == stream) found = &*uses->last_write;
    } else {
      for (auto& r : uses->reads)
        if (r.stream == stream) found = &r;
    }
    return found;
  }
  [[gnu::cold, gnu::noinline]] static ResourceError collision(std::uint64_t ptr) {
    return ResourceError::driver(where("allocate") + ": pointer collision on allocation at address " +
                                 std::to_string(ptr) + " (a live block is there; the address is not released)");
  }
  /// Calls fn(use, is_read) for each event of `entry` that `target_id` must
  /// wait on, while fn returns true: last_write (when `wait_last_write`) and
  /// the reads (when `wait_reads`), recorded on another stream (needs_wait)
  /// and not waited on by `target_id` since their last record (P-elide).
  /// `Entry` is LiveEntry or const LiveEntry (to ask whether any wait is
  /// left). Returns false when fn stopped it.
  template <class Entry, class Fn>
  static bool for_each_wait(Entry& entry, StreamId target_id, StreamId alloc_stream, bool wait_last_write,
                            bool wait_reads, Fn&& fn) {
    const auto unwaited = [&](auto& use) {
      return needs_wait(use.stream, target_id, alloc_stream) && !use.waited.contains(target_id);
    };
    auto* uses = uses_of(entry);
    if (uses == nullptr) return true;
    if (wait_last_write && uses->last_write && unwaited(*uses->last_write) && !fn(*uses->last_write, false))
      return false;
    if (wait_reads)
      for (auto& read : uses->reads)
        if (unwaited(read) && !fn(read, true)) return false;
    return true;
  }
  /// Queues target_id's waits on the uses for_each_wait names, and notes
  /// each one queued (P-elide).
  Status wait_for_uses(const char* fn, LiveEntry& entry, typename B::StreamRef target, StreamId target_id,
                       StreamId alloc_stream, bool wait_last_write, bool wait_reads);
  /// Records `use`'s event again on `stream` (P-rerecord): the new record
  /// has had no waiters yet (M22 keeps the old record's).
  Status record_again(StreamEvent& use, typename B::StreamRef stream) {
    auto again = backend_.record_event(use.event, stream);
    if constexpr (!P::has(MutantId::M22))
      if (again) use.waited.clear();
    return again;
  }

  B& backend_;
  const std::uint32_t device_ordinal_;
  // Bytes freed and not yet reaped, per alloc stream; ordered by stream id
  // so reap visits streams in a reproducible order.
  using PendingTally = std::map<StreamId, std::size_t>;
  // The live blocks, keyed (GuardedMap): a critical section says which
  // block it touches, so the simulator's lock-aware exploration (P8) need
  // not order sections on different blocks. The pending tally is its side
  // value, under the same lock: deallocate moves a block's bytes from live
  // to pending in one section, with no second lock to take (the nested
  // lock was most of what the core's locks cost allocate + deallocate on
  // the GPU: docs/PERFORMANCE.md), and a section on the tally alone (reap's
  // drain) still commutes with sections on blocks.
  GuardedMap<AddressMap<LiveEntry>, Mutex, PendingTally> live_;
  // Written only with live_'s lock held (M19 breaks that for the pending
  // total), read without one: add_holding_lock / sub_holding_lock.
  typename B::template Atomic<std::size_t> live_bytes_{0};
  typename B::template Atomic<std::size_t> pending_bytes_{0};
};

template <Backend B, class P>
Result<DeviceBlock> Resource<B, P>::allocate(std::size_t bytes, StreamId stream, AllocTag tag) {
  if (bytes == 0) [[unlikely]]
    return zero_bytes();
  const auto s = backend_.resolve_stream(stream);
  if (!s) [[unlikely]]
    return unknown_stream("allocate", stream);
  auto ptr = backend_.alloc_async(bytes, *s);
  if (!ptr) [[unlikely]]
    return failed("allocate", "alloc_async", ptr.error());
  // P-alloc: no event yet; prepare_block_use records the allocation-ready
  // event when the block is first used on another stream. Nothing below can
  // fail but a collision, which must not free the address (P5).
  const Generation generation = Generation::next();
  LiveEntry entry{generation, bytes, nullptr};
  auto live = live_.lock();
  if constexpr (P::has(MutantId::M13)) {
    // M13 overwrites the live entry at an address the backend handed out twice.
    live.insert_or_assign(ptr.value(), std::move(entry));
  } else if (!live.try_emplace(ptr.value(), std::move(entry)).second) {
    // The backend handed out an address we still track (a driver bug):
    // refuse, and never free it, which would release the live block there
    // (P5); the live entry is untouched (try_emplace leaves it).
    return collision(ptr.value());
  }
  add_holding_lock(live_bytes_, bytes);  // every writer holds live_'s lock
  return DeviceBlock{ptr.value(), device_ordinal_, stream, bytes, 1, tag, generation, BlockState::Live};
}

template <Backend B, class P>
Status Resource<B, P>::wait_for_uses(const char* fn, LiveEntry& entry, typename B::StreamRef target, StreamId target_id,
                                     StreamId alloc_stream, bool wait_last_write, bool wait_reads) {
  std::optional<ResourceError> failure;
  for_each_wait(entry, target_id, alloc_stream, wait_last_write, wait_reads, [&](StreamEvent& use, bool is_read) {
    auto w = backend_.wait_event(target, use.event);
    if (w) {
      use.waited.add(target_id);  // P-elide: target_id's later work is ordered after this record
      return true;
    }
    // M17 goes on past a failed wait on a read, as if it had been queued.
    if (P::has(MutantId::M17) && is_read) return true;
    failure = failed(fn, is_read ? "wait on outstanding read" : "wait on last_write", w.error());
    return false;
  });
  if (failure) return *failure;
  return {};
}

template <Backend B, class P>
Status Resource<B, P>::prepare_block_use(BlockId id, StreamId use_stream, Access access) {
  if (id.device_ordinal != device_ordinal_) [[unlikely]]
    return wrong_device("prepare_block_use", id.device_ordinal);
  const auto s = backend_.resolve_stream(use_stream);
  if (!s) [[unlikely]]
    return unknown_stream("prepare_block_use", use_stream);
  auto live = live_.lock();
  auto it = live.find(id.ptr);
  if (it == live.end() || it->second.generation != id.generation) [[unlikely]]
    return gone(id.generation);
  const LiveEntry& entry = it->second;
  // P-alloc: a use on another stream of a block nothing has written yet
  // waits for an allocation-ready event recorded now on the alloc stream
  // (M3 records none). The event is this call's alone, given back when it
  // returns (the wait keeps what it captured): the block's state does not
  // change, so a failed prepare, or a launch whose later prepare fails,
  // leaves nothing behind.
  std::optional<typename B::Event> ready;
  if constexpr (!P::has(MutantId::M3)) {
    if (!has_last_write(entry) && use_stream != id.alloc_stream) {
      auto home = backend_.resolve_stream(id.alloc_stream);
      if (!home) return alloc_stream_gone(id.alloc_stream);
      auto ev = backend_.create_event();
      if (!ev) return failed("prepare_block_use", "create allocation-ready event", ev.error());
      auto rec = backend_.record_event(ev.value(), *home);
      if (!rec) return failed("prepare_block_use", "record allocation-ready event", rec.error());
      ready.emplace(std::move(ev).value());
    }
  }
  // P-read: every access waits on last_write, or on the allocation-ready
  // event before the first write (M2: a read skips it).
  const bool wait_last_write = !(P::has(MutantId::M2) && access == Access::Read);
  if (ready && wait_last_write && needs_wait(id.alloc_stream, use_stream, id.alloc_stream)) {
    auto w = backend_.wait_event(*s, *ready);
    if (!w) return failed("prepare_block_use", "wait on allocation-ready event", w.error());
  }
  // P-write: a writing access also waits on every outstanding read (M1 skips).
  const bool wait_reads = writes(access) && !P::has(MutantId::M1);
  // P-elide: when use_stream has waited on every one of them since its
  // last record, nothing is queued and the entry is only read; else the
  // waits queued are noted in it (told to the map as a change).
  const bool none_left = for_each_wait(entry, use_stream, id.alloc_stream, wait_last_write, wait_reads,
                                       [](const StreamEvent&, bool) { return false; });
  if (none_left) return {};
  return wait_for_uses("prepare_block_use", live.for_update(it)->second, *s, use_stream, id.alloc_stream,
                       wait_last_write, wait_reads);
}

template <Backend B, class P>
Status Resource<B, P>::finish_block_use(BlockId id, StreamId use_stream, Access access) {
  if (id.device_ordinal != device_ordinal_) [[unlikely]]
    return wrong_device("finish_block_use", id.device_ordinal);
  const auto s = backend_.resolve_stream(use_stream);
  if (!s) [[unlikely]]
    return unknown_stream("finish_block_use", use_stream);
  {
    // Validate before creating an event we would only have to give back.
    auto live = live_.lock();
    auto it = live.find(id.ptr);
    if (it == live.end() || it->second.generation != id.generation) [[unlikely]]
      return gone(id.generation);
    // P-rerecord: the block already holds an event of this use's kind on
    // this stream (a read's among the reads, or a write's as last_write):
    // recording that same event again now captures everything the old
    // record did and this use too (R1: one stream's work is ordered), and a
    // wait already queued on it keeps what it captured then (R2). So the
    // event is re-recorded in place, under the lock (a concurrent use
    // of the block must not see it moved), instead of a new one leased and
    // the old one given back. A failed record leaves the block's events
    // as they were. (M11 re-records one event across streams: wrong; M16
    // keeps every read's event and M5 makes a read replace last_write: both
    // keep their own finish, so they do not re-record.)
    if constexpr (!P::has(MutantId::M11) && !P::has(MutantId::M16) && !P::has(MutantId::M5)) {
      if (same_stream_event(it->second, use_stream, access) != nullptr) {
        LiveEntry& entry = live.for_update(it)->second;  // the same entry, now told as changed
        auto again = record_again(*same_stream_event(entry, use_stream, access), *s);
        if (!again) return failed("finish_block_use", "record event", again.error());
        if (writes(access)) entry.uses->reads.clear();  // P-finish (write): its event subsumes them
        return {};
      }
    }
  }
  // Record outside the lock: the driver call may block.
  auto ev = backend_.create_event();
  if (!ev) [[unlikely]]
    return failed("finish_block_use", "create event", ev.error());
  auto rec = backend_.record_event(ev.value(), *s);
  if (!rec) [[unlikely]]
    return failed("finish_block_use", "record event", rec.error());

  auto live = live_.lock();
  auto it = live.find_for_update(id.ptr);
  // Re-validate: a racing deallocate may have removed the entry, and a
  // racing allocate may have put a new block at the same address (P5); the
  // event is then released when `ev` goes out of scope. M15 checks the
  // address only.
  const bool same_block = it != live.end() && (P::has(MutantId::M15) || it->second.generation == id.generation);
  if (!same_block) [[unlikely]]
    return gone(id.generation);
  BlockUses& uses = uses_for_update(it->second);
  if (writes(access)) {
    // P-finish (write): the writer waited on everything, so its event
    // subsumes the previous state.
    uses.last_write.emplace(StreamEvent{use_stream, std::move(ev).value(), {}});
    uses.reads.clear();
  } else if constexpr (P::has(MutantId::M5)) {
    uses.last_write.emplace(StreamEvent{use_stream, std::move(ev).value(), {}});
  } else if constexpr (P::has(MutantId::M11)) {
    // One event per block, re-recorded on each read: the new capture
    // replaces the old one and drops the earlier reader's dependency.
    if (uses.reads.empty()) {
      uses.reads.push_back(StreamEvent{use_stream, std::move(ev).value(), {}});
    } else {
      auto again = record_again(uses.reads.front(), *s);
      if (!again) return failed("finish_block_use", "re-record", again.error());
      uses.reads.front().stream = use_stream;
    }
  } else {
    // Read subsumption (R1+R2): the new event on `use_stream` captures every
    // earlier read recorded there, so those events are given back. The list
    // holds at most one read per stream: a block read every iteration by the
    // same stream does not grow it.
    // M16 keeps them: the list grows with every read.
    if constexpr (!P::has(MutantId::M16))
      std::erase_if(uses.reads, [&](const StreamEvent& r) { return r.stream == use_stream; });
    uses.reads.push_back(StreamEvent{use_stream, std::move(ev).value(), {}});
  }
  return {};
}

template <Backend B, class P>
Status Resource<B, P>::deallocate(const DeviceBlock& block) {
  if (block.device_ordinal != device_ordinal_) [[unlikely]]
    return wrong_device("deallocate", block.device_ordinal);
  // Resolve first: on failure the entry and the counters stay untouched.
  const auto s = backend_.resolve_stream(block.alloc_stream);
  if (!s) [[unlikely]]
    return unknown_stream("deallocate", block.alloc_stream);

  // The entry once it leaves the map. Not a std::optional<LiveEntry>: g++
  // fills an empty one with a `rep stos` of its whole size, which cost
  // deallocate about as much as its map lookup (docs/PERFORMANCE.md).
  LiveEntry retired{};
  bool is_retired = false;
  if constexpr (P::has(MutantId::M21)) {
    // Validates, then lets go of the lock; the second locked step below
    // takes whatever entry is at the address, and frees it even when a
    // concurrent deallocate already did.
    auto live = live_.lock();
    auto it = live.find(block.ptr);
    if (it == live.end() || it->second.generation != block.generation) return gone(block.generation);
  }
  {
    auto live = live_.lock();
    auto it = live.find_for_update(block.ptr);
    const bool found = it != live.end() && (P::has(MutantId::M21) || it->second.generation == block.generation);
    if (!found && !P::has(MutantId::M21)) [[unlikely]]
      return gone(block.generation);
    if constexpr (P::has(MutantId::M10)) {
      // Removes the entry before the waits are known to have succeeded.
      retired = std::move(it->second);
      is_retired = true;
      live.erase(it);
    }
    if (found) {
      LiveEntry& entry = is_retired ? retired : it->second;
      // P-free: the alloc stream waits for last_write and every read (M4
      // skips the reads). If a wait fails the entry stays and nothing moves.
      auto waited =
          wait_for_uses("deallocate", entry, *s, block.alloc_stream, block.alloc_stream, true, !P::has(MutantId::M4));
      if (!waited) [[unlikely]]
        return waited;
    }
    auto freed = backend_.free_async(block.ptr, *s);
    if (!freed) [[unlikely]]
      return failed("deallocate", "free_async", freed.error());
    if (found && !is_retired) {
      retired = std::move(it->second);
      is_retired = true;
      live.erase(it);
    }
    const std::size_t bytes = is_retired ? retired.bytes : block.bytes;
    // Move the bytes from live to pending, the per-stream tally and the
    // total together in this section, so a concurrent reap either sees
    // both or neither (M19 updates the total after the lock).
    sub_holding_lock(live_bytes_, bytes);
    live.side_for_update()[block.alloc_stream] += bytes;
    if constexpr (!P::has(MutantId::M19)) add_holding_lock(pending_bytes_, bytes);  // every writer holds live_'s lock
  }
  if constexpr (P::has(MutantId::M19)) pending_bytes_.store(pending_bytes_.load() + block.bytes);
  // `retired` (and its events) is released here, after the free is queued:
  // the waits are already part of the stream.
  return {};
}

template <Backend B, class P>
Status Resource<B, P>::reap_pending() {
  PendingTally drained;
  if constexpr (P::has(MutantId::M20)) {
    drained = live_.lock().side();
    live_.lock().side_for_update().clear();
  } else {
    drained.swap(live_.lock().side_for_update());
  }
  if (drained.empty()) return {};
  std::size_t synced = 0;
  std::optional<ResourceError> failure;
  std::vector<std::pair<StreamId, std::size_t>> unsynced;
  for (auto it = drained.begin(); it != drained.end(); ++it) {
    // M12 synchronizes the first pending stream for every entry.
    const StreamId to_sync = P::has(MutantId::M12) ? drained.begin()->first : it->first;
    auto stream = backend_.resolve_stream(to_sync);
    // A stream that no longer resolves has nothing left to wait for.
    Status st = stream ? backend_.synchronize_stream(*stream) : Status{};
    if (st) {
      synced += it->second;
      continue;
    }
    failure = ResourceError::driver_caused_by(
        where("reap_pending") + ": synchronize StreamId(" + std::to_string(it->first.value) + ")", st.error());
    // Put back the failing entry and every entry not yet tried (M8 forgets).
    if constexpr (!P::has(MutantId::M8)) unsynced.assign(it, drained.end());
    // M18 goes on: the later streams are counted synchronized and put back.
    if constexpr (P::has(MutantId::M18)) continue;
    break;
  }
  auto live = live_.lock();
  for (const auto& [stream, bytes] : unsynced) live.side_for_update()[stream] += bytes;
  if constexpr (P::has(MutantId::M7)) {
    pending_bytes_.store(0);
  } else {
    // Subtract only what was synchronized; a concurrent deallocate's bytes
    // stay counted.
    sub_holding_lock(pending_bytes_, synced);
  }
  if (failure) return *failure;
  return {};
}

template <Backend B, class P>
std::size_t Resource<B, P>::pending_per_stream_total() const {
  auto live = live_.lock();
  std::size_t total = 0;
  for (const auto& [stream, bytes] : live.side()) total += bytes;
  return total;
}

template <Backend B, class P>
std::optional<std::size_t> Resource<B, P>::pending_use_event_count(std::uint64_t ptr) const {
  auto live = live_.lock();
  auto it = live.find(ptr);
  if (it == live.end()) return std::nullopt;
  const BlockUses* uses = uses_of(std::as_const(it->second));
  return uses ? uses->reads.size() + (uses->last_write ? 1 : 0) : 0;
}

template <Backend B, class P>
std::size_t Resource<B, P>::live_block_count() const {
  return live_.lock().size();
}

// Resource is a MemoryResource over any Backend (checked over the archetype,
// so a broken member fails here rather than in a client's instantiation).
static_assert(MemoryResource<Resource<BackendArchetype>>,
              "Resource<B> must satisfy the streamcheck::MemoryResource concept (model/memory_resource.h)");

}  // namespace streamcheck
