// PoolResource (SPEC §11; seed 002's performance tier, seed 004's pools): a
// stream-ordered, sub-allocating pool over any backend.
//
// It is written as a backend adapter. PooledBackend<B> is a B whose
// alloc_async / free_async hand out and take back blocks of power-of-two
// buckets cached per stream, and PoolResource<B> is the core Resource over
// it: the core's protocol (P-alloc … P-free) runs unchanged, so by the time
// the Resource calls free_async(ptr, s), s already waits for every use of
// the block. What the pool adds is when a freed block may be handed out
// again, on which stream, and at what price. Its rules, in HB terms:
//   Q-bucket  a request of n ≤ max_bucket bytes gets a block of the smallest
//             power of two ≥ max(n, min_bucket); a larger request goes to the
//             upstream backend as it is (the large path). n is bounded before
//             it is rounded, so the rounding cannot overflow (PM4 rounds first).
//   Q-free    free_async(ptr, s) puts the block on s's list, keyed by the
//             stream's identity (StreamId), never by a handle the driver
//             reuses (PM3). It makes no driver call: R1 orders whatever s does
//             next after the free, and so after the waits the Resource queued
//             before it.
//   Q-same    a block freed on s is handed out on s at once (R1).
//   Q-steal   a block on another stream d's list is handed out on s only
//             after the pool records an event on d and s waits on it (R2+R3:
//             the capture covers every free enqueued on d before; PM1 records
//             it on s, PM2 makes neither call). The rest of d's list of that
//             bucket then joins s's list: freed on d before the record, those
//             blocks are ordered before s's later work too, and are s's own.
//   Q-idle    once synchronize_stream(s) returned, every block freed on s
//             before the call is ordered before the host (R4), hence before
//             any later work: it is handed out on any stream at once.
//   Q-dead    before a stream is removed the pool records an event on it; its
//             lists become orphans that any stream takes after a wait on that
//             event (events outlive their stream). If the record fails the
//             pool synchronizes the stream (its blocks then are idle); if
//             that fails too, they are stranded: never handed out again.
//   Q-grow    with nothing cached, the bucket is allocated from the upstream
//             on s (R7). Q-release: a free that would cache more than
//             max_cached_bytes gives the block back to the upstream instead,
//             stream-ordered on s; trim(s) gives back every idle block.
// Same-stream reuse, the common case, makes no driver call at all; a steal
// makes three (create, record, wait), the event given back at once.
// Accounting is exact: upstream = cached + in use + large, each the sum of
// its blocks, no block twice; pool_accounting_error() says what is off.
//
// The pool's state is behind one mutex of the backend's (Backend::Mutex); no
// backend call is made with it held, and a failed backend call leaves the
// pool's books as they were (P4: a failed steal puts the donor's blocks back).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "model/backend.h"
#include "model/guarded.h"
#include "model/mutants.h"
#include "model/resource.h"
#include "model/types.h"

namespace streamcheck {

struct PoolOptions {
  /// The smallest bucket, in bytes (a power of two).
  std::size_t min_bucket = 256;
  /// The largest bucket (a power of two); larger requests take the large path.
  std::size_t max_bucket = std::size_t{1} << 20;
  /// Freed bytes the pool keeps; a free beyond it goes back to the upstream.
  std::size_t max_cached_bytes = std::size_t{1} << 30;
};

/// The pool over an upstream backend it does not own: itself a Backend
/// (resolve, events, waits and device go to the upstream; alloc_async,
/// free_async and synchronize_stream are the pool's), so the core's
/// Resource runs over it. The trace interpreter puts one over its backend
/// for `resource pool`; PooledBackend is a backend with one inside.
template <Backend B, class Q = CorrectPool>
class StreamOrderedPool {
 public:
  using Upstream = B;
  using PoolProtocol = Q;
  using Event = typename B::Event;
  using Mutex = typename B::Mutex;
  template <class T>
  using Atomic = typename B::template Atomic<T>;

  /// A resolved stream with its identity: the pool keys its lists by the
  /// identity, and the reference converts to the upstream's for every call
  /// the pool does not take over.
  class StreamRef {
   public:
    StreamRef(typename B::StreamRef ref, StreamId id) : ref_(ref), id_(id) {}
    operator typename B::StreamRef() const { return ref_; }
    typename B::StreamRef upstream() const { return ref_; }
    StreamId id() const { return id_; }

   private:
    typename B::StreamRef ref_;
    StreamId id_;
  };

  explicit StreamOrderedPool(B& upstream, PoolOptions options = {}) : upstream_(upstream), options_(checked(options)) {}
  StreamOrderedPool(const StreamOrderedPool&) = delete;
  StreamOrderedPool& operator=(const StreamOrderedPool&) = delete;

  // --- the Backend concept: the upstream's, but for the three calls below
  std::optional<StreamRef> resolve_stream(StreamId id) const {
    auto ref = upstream_.resolve_stream(id);
    if (!ref) return std::nullopt;
    return StreamRef(*ref, id);
  }
  Result<Event> create_event() { return upstream_.create_event(); }
  Status record_event(Event& e, StreamRef s) { return upstream_.record_event(e, s.upstream()); }
  Status wait_event(StreamRef s, const Event& e) { return upstream_.wait_event(s.upstream(), e); }
  std::uint32_t device_ordinal() const { return upstream_.device_ordinal(); }
  /// Q-bucket, Q-same, Q-idle, Q-steal, Q-dead, Q-grow; the large path.
  Result<std::uint64_t> alloc_async(std::size_t bytes, StreamRef s);
  /// Q-free, Q-release; the large path.
  Status free_async(std::uint64_t ptr, StreamRef s);
  /// Q-idle.
  Status synchronize_stream(StreamRef s);

  /// Q-dead: stream `id` is about to be removed from the upstream (call it
  /// while the stream still resolves).
  void stream_removed(StreamId id);
  /// Q-release: gives every idle block back to the upstream, stream-ordered
  /// on `s` (idle blocks are ordered before the host, so any stream will
  /// do). On a failure the blocks not yet given back stay idle.
  Status trim(StreamRef s);
  /// Gives every cached block back to the upstream, each on the stream it
  /// was freed on, ignoring failures: for the end of a run, when the
  /// upstream is about to finish all work (its leak check then sees only
  /// what the client holds).
  void give_back_all() {
    for (const auto& block : take_all_cached()) (void)upstream_.free_async(block.ptr, block.freed_on.upstream());
  }

  /// What is off in the pool's accounting, if anything (P3 for the pool).
  std::optional<std::string> pool_accounting_error() const;
  std::size_t cached_bytes() const { return state_.lock()->cached_bytes; }
  std::size_t in_use_bytes() const { return state_.lock()->in_use_bytes; }
  std::size_t upstream_bytes() const { return state_.lock()->upstream_bytes; }
  /// Blocks handed out again on another stream than the one that freed
  /// them (each cost a record and a wait), and their donors' blocks merged.
  std::size_t steals() const { return state_.lock()->steals; }
  /// The bytes of the block handed out at `ptr` (its bucket, or its size on
  /// the large path); nullopt when none is.
  std::optional<std::size_t> block_bytes(std::uint64_t ptr) const {
    auto state = state_.lock();
    if (auto it = state->in_use.find(ptr); it != state->in_use.end()) return it->second;
    if (auto it = state->large.find(ptr); it != state->large.end()) return it->second;
    return std::nullopt;
  }
  const PoolOptions& options() const { return options_; }
  /// The next allocation grows from the upstream (a test corner: the
  /// upstream then returns what it was armed with).
  void grow_next() { state_.lock()->grow_next = true; }
  /// The next allocation takes the cached block at `ptr` when its bucket
  /// fits (address reuse on demand), by the same rules as any other.
  void prefer_address(std::uint64_t ptr) { state_.lock()->preferred = ptr; }

 private:
  struct CachedBlock {
    std::uint64_t ptr = 0;
    std::size_t bytes = 0;       // its bucket
    StreamRef freed_on;          // the stream of its free (for Q-idle, and to give it back)
    std::uint64_t free_seq = 0;  // Q-idle: the frees before a sync are covered
  };
  using Buckets = std::map<std::size_t, std::vector<CachedBlock>>;
  /// Q-dead: the lists of one removed stream and the event recorded on it.
  struct Orphans {
    std::shared_ptr<Event> removed;
    Buckets buckets;
  };
  struct State {
    std::map<std::uint64_t, Buckets> lists;       // stream key -> its free lists
    Buckets idle;                                 // Q-idle: any stream, no wait
    std::vector<Orphans> orphans;                 // Q-dead: any stream, after a wait
    Buckets stranded;                             // Q-dead without an event or a sync: never again
    Buckets transit;                              // taken for a steal whose calls are under way
    std::map<std::uint64_t, std::size_t> in_use;  // ptr -> bucket
    std::map<std::uint64_t, std::size_t> large;   // ptr -> bytes
    std::size_t upstream_bytes = 0, cached_bytes = 0, in_use_bytes = 0, large_bytes = 0;
    std::uint64_t free_seq = 0;
    std::size_t steals = 0;
    bool grow_next = false;
    std::optional<std::uint64_t> preferred;
    // PM3: stream handles as a driver hands them out, the lowest free first.
    std::map<std::uint32_t, std::uint64_t> slot_of;
    std::set<std::uint64_t> free_slots;
    std::uint64_t next_slot = 0;
  };
  /// A block chosen for an allocation, and what handing it out needs.
  struct Choice {
    enum class Kind : std::uint8_t { Ready, Steal, Orphan } kind = Kind::Ready;
    std::uint64_t ptr = 0;
    std::uint64_t donor_key = 0;     // Steal: whose list
    std::optional<StreamRef> donor;  // Steal: where to record
    std::shared_ptr<Event> removed;  // Orphan: what to wait on
    std::vector<CachedBlock> moved;  // Steal: the donor's list of the bucket, in transit

    static Choice of(Kind kind, std::uint64_t ptr) {
      Choice c;
      c.kind = kind;
      c.ptr = ptr;
      return c;
    }
  };

  static PoolOptions checked(PoolOptions o) {
    if (!std::has_single_bit(o.min_bucket) || !std::has_single_bit(o.max_bucket) || o.min_bucket > o.max_bucket)
      throw std::invalid_argument("PoolOptions: min_bucket and max_bucket must be powers of two, min <= max (got " +
                                  std::to_string(o.min_bucket) + ", " + std::to_string(o.max_bucket) + ")");
    return o;
  }
  static std::string where(const char* fn) { return std::string("PoolResource::") + fn; }
  static ResourceError live_address(std::uint64_t ptr) {
    return ResourceError::driver(where("alloc_async") + ": the upstream returned address " + std::to_string(ptr) +
                                 ", which the pool has handed out (nothing taken, nothing freed)");
  }

  /// The list key of stream `id`: its identity, or (PM3) a handle the
  /// pool's model of the driver recycles.
  static std::uint64_t key_of(State& state, StreamId id) {
    if constexpr (!Q::has(PoolMutantId::PM3)) {
      return id.value;
    } else {
      if (auto it = state.slot_of.find(id.value); it != state.slot_of.end()) return it->second;
      std::uint64_t slot = state.next_slot;
      if (!state.free_slots.empty()) {
        slot = *state.free_slots.begin();
        state.free_slots.erase(state.free_slots.begin());
      } else {
        ++state.next_slot;
      }
      state.slot_of[id.value] = slot;
      return slot;
    }
  }

  /// Q-bucket: the bucket of a request, or nullopt for the large path.
  std::optional<std::size_t> bucket_of(std::size_t bytes) const {
    if constexpr (Q::has(PoolMutantId::PM4)) {
      // Rounds first, in a width that wraps to 0 above 2^63, then compares.
      const auto wide = static_cast<unsigned __int128>(1) << std::bit_width(bytes - 1);
      const auto bucket = static_cast<std::size_t>(wide);
      if (bucket > options_.max_bucket) return std::nullopt;
      return std::max(bucket, options_.min_bucket);
    } else {
      if (bytes > options_.max_bucket) return std::nullopt;
      return std::max(std::bit_ceil(bytes), options_.min_bucket);
    }
  }

  /// Index of the block to take from `list`: the preferred address if it
  /// is there, else the last freed; nullopt when the list cannot serve.
  static std::optional<std::size_t> pick(const State& state, const std::vector<CachedBlock>& list) {
    if (list.empty()) return std::nullopt;
    if (!state.preferred) return list.size() - 1;
    for (std::size_t i = 0; i < list.size(); ++i)
      if (list[i].ptr == *state.preferred) return i;
    return std::nullopt;
  }
  static CachedBlock take(std::vector<CachedBlock>& list, std::size_t at) {
    CachedBlock block = std::move(list[at]);
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(at));
    return block;
  }
  void hand_out(State& state, std::uint64_t ptr, std::size_t bucket) {
    state.cached_bytes -= bucket;
    state.in_use_bytes += bucket;
    state.in_use[ptr] = bucket;
  }
  /// Chooses a cached block of `bucket` for stream key `key`: Q-same and
  /// Q-idle hand it out now; a steal takes the donor's list into transit and
  /// an orphan is taken, both handed out by complete() after their calls.
  std::optional<Choice> choose(State& state, std::uint64_t key, std::size_t bucket);
  Status complete(Choice& choice, StreamRef s, std::uint64_t key, std::size_t bucket);
  std::vector<CachedBlock> take_all_cached();
  static void count(const Buckets& buckets, std::size_t& bytes, std::set<std::uint64_t>& seen,
                    std::optional<std::string>& twice);

  B& upstream_;
  const PoolOptions options_;
  Guarded<State, Mutex> state_;
};

template <Backend B, class Q>
std::optional<typename StreamOrderedPool<B, Q>::Choice> StreamOrderedPool<B, Q>::choose(State& state, std::uint64_t key,
                                                                                        std::size_t bucket) {
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) {
      if (!state.preferred) break;
      state.preferred.reset();  // not cached (or not in this bucket): any block
    }
    if (auto& own = state.lists[key][bucket]; auto at = pick(state, own)) {  // Q-same
      const CachedBlock block = take(own, *at);
      hand_out(state, block.ptr, bucket);
      return Choice::of(Choice::Kind::Ready, block.ptr);
    }
    if (auto& idle = state.idle[bucket]; auto at = pick(state, idle)) {  // Q-idle
      const CachedBlock block = take(idle, *at);
      hand_out(state, block.ptr, bucket);
      return Choice::of(Choice::Kind::Ready, block.ptr);
    }
    for (auto& [donor_key, buckets] : state.lists) {  // Q-steal
      auto it = buckets.find(bucket);
      if (donor_key == key || it == buckets.end()) continue;
      auto at = pick(state, it->second);
      if (!at) continue;
      Choice choice = Choice::of(Choice::Kind::Steal, it->second[*at].ptr);
      choice.donor_key = donor_key;
      choice.donor = it->second[*at].freed_on;
      // The preferred block last, so that complete() hands it out.
      std::swap(it->second[*at], it->second.back());
      choice.moved = std::move(it->second);
      it->second.clear();
      for (const auto& block : choice.moved) state.transit[bucket].push_back(block);
      return choice;
    }
    for (auto& orphans : state.orphans) {  // Q-dead
      auto it = orphans.buckets.find(bucket);
      if (it == orphans.buckets.end()) continue;
      if (auto at = pick(state, it->second)) {
        const CachedBlock block = take(it->second, *at);
        hand_out(state, block.ptr, bucket);
        Choice choice = Choice::of(Choice::Kind::Orphan, block.ptr);
        choice.removed = orphans.removed;
        return choice;
      }
    }
  }
  state.preferred.reset();
  return std::nullopt;
}

template <Backend B, class Q>
Status StreamOrderedPool<B, Q>::complete(Choice& choice, StreamRef s, std::uint64_t key, std::size_t bucket) {
  Status ordered;
  if (choice.kind == Choice::Kind::Orphan) {
    ordered = upstream_.wait_event(s.upstream(), *choice.removed);
    if (!ordered) {
      // Back where it was (the orphans it came from may have emptied).
      auto state = state_.lock();
      state->in_use.erase(choice.ptr);
      state->in_use_bytes -= bucket;
      state->cached_bytes += bucket;
      state->orphans.push_back(Orphans{choice.removed, {}});
      state->orphans.back().buckets[bucket].push_back(CachedBlock{choice.ptr, bucket, s, 0});
      return ResourceError::driver_caused_by(where("alloc_async") + ": wait on a removed stream's last event",
                                             ordered.error());
    }
    return {};  // handed out when chosen
  } else if constexpr (!Q::has(PoolMutantId::PM2)) {
    // Q-steal: an event on the donor now covers every free it enqueued;
    // PM1 records it on the stream that takes the blocks instead.
    const StreamRef on = Q::has(PoolMutantId::PM1) ? s : *choice.donor;
    auto event = upstream_.create_event();
    if (!event) {
      ordered = event.error();
    } else if (auto recorded = upstream_.record_event(event.value(), on.upstream()); !recorded) {
      ordered = recorded;
    } else {
      ordered = upstream_.wait_event(s.upstream(), event.value());
    }
  }
  auto state = state_.lock();
  auto& transit = state->transit[bucket];
  for (const auto& block : choice.moved)
    std::erase_if(transit, [&](const CachedBlock& t) { return t.ptr == block.ptr; });
  if (!ordered) {
    // Back on the donor's list, where another steal may find them.
    auto& donor = state->lists[choice.donor_key][bucket];
    for (auto& block : choice.moved) donor.push_back(block);
    if constexpr (Q::has(PoolMutantId::PM5)) {
      // And on ours as well: cached twice.
      for (auto& block : choice.moved) state->lists[key][bucket].push_back(block);
      state->cached_bytes += bucket * choice.moved.size();
    }
    return ResourceError::driver_caused_by(where("alloc_async") + ": order a block freed on another stream",
                                           ordered.error());
  }
  // The donor's other blocks of this bucket are ours now (freed on the
  // donor before the record); the last one is handed out.
  choice.moved.pop_back();
  auto& mine = state->lists[key][bucket];
  for (auto& block : choice.moved) mine.push_back(CachedBlock{block.ptr, bucket, s, 0});
  hand_out(*state, choice.ptr, bucket);
  ++state->steals;
  return {};
}

template <Backend B, class Q>
Result<std::uint64_t> StreamOrderedPool<B, Q>::alloc_async(std::size_t bytes, StreamRef s) {
  const auto bucket = bucket_of(bytes);
  if (!bucket) {
    // The large path: the upstream's own allocation, as it is.
    auto ptr = upstream_.alloc_async(bytes, s.upstream());
    if (!ptr) return ptr;
    auto state = state_.lock();
    if (state->in_use.contains(ptr.value()) || state->large.contains(ptr.value())) return live_address(ptr.value());
    state->large[ptr.value()] = bytes;
    state->large_bytes += bytes;
    state->upstream_bytes += bytes;
    return ptr;
  }
  std::optional<Choice> choice;
  std::uint64_t key = 0;
  {
    auto state = state_.lock();
    key = key_of(*state, s.id());
    if (!std::exchange(state->grow_next, false)) choice = choose(*state, key, *bucket);
  }
  if (choice) {
    if (choice->kind != Choice::Kind::Ready) {
      auto done = complete(*choice, s, key, *bucket);
      if (!done) return done.error();
    }
    return choice->ptr;
  }
  // Q-grow.
  auto ptr = upstream_.alloc_async(*bucket, s.upstream());
  if (!ptr) return ptr;
  auto state = state_.lock();
  if (state->in_use.contains(ptr.value()) || state->large.contains(ptr.value())) return live_address(ptr.value());
  state->in_use[ptr.value()] = *bucket;
  state->in_use_bytes += *bucket;
  state->upstream_bytes += *bucket;
  return ptr;
}

template <Backend B, class Q>
Status StreamOrderedPool<B, Q>::free_async(std::uint64_t ptr, StreamRef s) {
  std::size_t bytes = 0;
  {
    auto state = state_.lock();
    if (auto used = state->in_use.find(ptr); used != state->in_use.end()) {
      const std::size_t bucket = used->second;
      if (state->cached_bytes + bucket <= options_.max_cached_bytes) {
        // Q-free: on s's list; no driver call.
        state->in_use.erase(used);
        state->in_use_bytes -= bucket;
        state->cached_bytes += bucket;
        state->lists[key_of(*state, s.id())][bucket].push_back(CachedBlock{ptr, bucket, s, ++state->free_seq});
        return {};
      }
      bytes = bucket;
    } else if (auto it = state->large.find(ptr); it != state->large.end()) {
      bytes = it->second;
    } else {
      return ResourceError::driver(where("free_async") + ": address " + std::to_string(ptr) +
                                   " is not a block the pool handed out");
    }
  }
  // The large path, or Q-release: the upstream frees it, ordered on s.
  auto freed = upstream_.free_async(ptr, s.upstream());
  if (!freed) return freed;
  auto state = state_.lock();
  if (state->large.erase(ptr)) {
    state->large_bytes -= bytes;
  } else {
    state->in_use.erase(ptr);
    state->in_use_bytes -= bytes;
  }
  state->upstream_bytes -= bytes;
  return {};
}

template <Backend B, class Q>
Status StreamOrderedPool<B, Q>::synchronize_stream(StreamRef s) {
  const std::uint64_t covered = state_.lock()->free_seq;
  auto synced = upstream_.synchronize_stream(s.upstream());
  if (!synced) return synced;
  auto state = state_.lock();
  // Q-idle: s's own blocks freed before the call. Blocks a steal merged
  // into s's list were freed elsewhere (free_seq 0): they stay s's.
  for (auto& [bucket, list] : state->lists[key_of(*state, s.id())]) {
    for (auto it = list.begin(); it != list.end();) {
      if (it->free_seq != 0 && it->free_seq <= covered) {
        state->idle[bucket].push_back(*it);
        it = list.erase(it);
      } else {
        ++it;
      }
    }
  }
  return {};
}

template <Backend B, class Q>
void StreamOrderedPool<B, Q>::stream_removed(StreamId id) {
  std::optional<StreamRef> dying = resolve_stream(id);
  std::shared_ptr<Event> last;
  bool synced = false;
  if constexpr (!Q::has(PoolMutantId::PM3)) {
    if (dying) {
      // Q-dead: the stream's last event, or (failing that) a host sync.
      if (auto event = upstream_.create_event(); event && upstream_.record_event(event.value(), dying->upstream()))
        last = std::make_shared<Event>(std::move(event).value());
      else
        synced = upstream_.synchronize_stream(dying->upstream()).ok();
    }
  }
  auto state = state_.lock();
  const std::uint64_t key = key_of(*state, id);
  if constexpr (Q::has(PoolMutantId::PM3)) {
    // The handle goes back to the driver; its lists stay under it.
    state->free_slots.insert(key);
    state->slot_of.erase(id.value);
  } else {
    Buckets buckets = std::move(state->lists[key]);
    state->lists.erase(key);
    if (last) {
      state->orphans.push_back(Orphans{std::move(last), std::move(buckets)});
    } else {
      Buckets& to = synced ? state->idle : state->stranded;
      for (auto& [bucket, list] : buckets) to[bucket].insert(to[bucket].end(), list.begin(), list.end());
    }
  }
}

template <Backend B, class Q>
Status StreamOrderedPool<B, Q>::trim(StreamRef s) {
  std::vector<CachedBlock> idle;
  {
    auto state = state_.lock();
    for (auto& [bucket, list] : state->idle) idle.insert(idle.end(), list.begin(), list.end());
    state->idle.clear();
    // Their bytes stay counted as cached until each is given back.
    for (const auto& block : idle) state->transit[block.bytes].push_back(block);
  }
  std::size_t given_back = 0;
  Status status;
  for (; given_back < idle.size(); ++given_back) {
    status = upstream_.free_async(idle[given_back].ptr, s.upstream());
    if (!status) break;
  }
  auto state = state_.lock();
  for (std::size_t i = 0; i < idle.size(); ++i) {
    std::erase_if(state->transit[idle[i].bytes], [&](const CachedBlock& t) { return t.ptr == idle[i].ptr; });
    if (i < given_back) {
      state->cached_bytes -= idle[i].bytes;
      state->upstream_bytes -= idle[i].bytes;
    } else {
      state->idle[idle[i].bytes].push_back(idle[i]);
    }
  }
  if (!status) return ResourceError::driver_caused_by(where("trim") + ": give a block back", status.error());
  return {};
}

template <Backend B, class Q>
std::vector<typename StreamOrderedPool<B, Q>::CachedBlock> StreamOrderedPool<B, Q>::take_all_cached() {
  std::vector<CachedBlock> all;
  std::vector<std::shared_ptr<Event>> events;  // given back outside the lock
  auto state = state_.lock();
  auto take = [&](Buckets& buckets) {
    for (auto& [bucket, list] : buckets) all.insert(all.end(), list.begin(), list.end());
    buckets.clear();
  };
  for (auto& [key, buckets] : state->lists) take(buckets);
  take(state->idle);
  take(state->stranded);
  for (auto& orphans : state->orphans) {
    take(orphans.buckets);
    events.push_back(std::move(orphans.removed));
  }
  state->orphans.clear();
  for (const auto& block : all) {
    state->cached_bytes -= block.bytes;
    state->upstream_bytes -= block.bytes;
  }
  return all;
}

template <Backend B, class Q>
void StreamOrderedPool<B, Q>::count(const Buckets& buckets, std::size_t& bytes, std::set<std::uint64_t>& seen,
                                    std::optional<std::string>& twice) {
  for (const auto& [bucket, list] : buckets)
    for (const auto& block : list) {
      bytes += block.bytes;
      if (!seen.insert(block.ptr).second) twice = "the block at " + std::to_string(block.ptr) + " is cached twice";
    }
}

template <Backend B, class Q>
std::optional<std::string> StreamOrderedPool<B, Q>::pool_accounting_error() const {
  auto state = state_.lock();
  std::size_t cached = 0, in_use = 0, large = 0;
  std::set<std::uint64_t> seen;
  std::optional<std::string> twice;
  for (const auto& [key, buckets] : state->lists) count(buckets, cached, seen, twice);
  count(state->idle, cached, seen, twice);
  count(state->stranded, cached, seen, twice);
  count(state->transit, cached, seen, twice);
  for (const auto& orphans : state->orphans) count(orphans.buckets, cached, seen, twice);
  for (const auto& [ptr, bytes] : state->in_use) {
    in_use += bytes;
    if (seen.contains(ptr)) twice = "the block at " + std::to_string(ptr) + " is both cached and in use";
  }
  for (const auto& [ptr, bytes] : state->large) large += bytes;
  if (twice) return twice;
  if (cached != state->cached_bytes)
    return "cached_bytes " + std::to_string(state->cached_bytes) + " != sum of cached blocks " + std::to_string(cached);
  if (in_use != state->in_use_bytes)
    return "in_use_bytes " + std::to_string(state->in_use_bytes) + " != sum of blocks in use " + std::to_string(in_use);
  if (large != state->large_bytes)
    return "large_bytes " + std::to_string(state->large_bytes) + " != sum of large blocks " + std::to_string(large);
  if (state->upstream_bytes != cached + in_use + large)
    return "upstream_bytes " + std::to_string(state->upstream_bytes) + " != cached " + std::to_string(cached) +
           " + in use " + std::to_string(in_use) + " + large " + std::to_string(large);
  return std::nullopt;
}

/// A backend B with a pool inside: B's own calls, but alloc_async,
/// free_async and synchronize_stream go through the pool, and removing a
/// stream tells it first (Q-dead). Whatever else B offers (the simulator's
/// launches and faults, the harness's hooks) passes through, so the
/// property harness and the GPU tests run over it as over B.
template <Backend B, class Q = CorrectPool>
class PooledBackend : public B {
 public:
  using Pool = StreamOrderedPool<B, Q>;
  using StreamRef = typename Pool::StreamRef;

  template <class... Args>
  explicit PooledBackend(PoolOptions options, Args&&... upstream_args)
      : B(std::forward<Args>(upstream_args)...), pool_(static_cast<B&>(*this), options) {}
  PooledBackend(const PooledBackend&) = delete;
  PooledBackend& operator=(const PooledBackend&) = delete;

  std::optional<StreamRef> resolve_stream(StreamId id) const { return pool_.resolve_stream(id); }
  Result<std::uint64_t> alloc_async(std::size_t bytes, StreamRef s) { return pool_.alloc_async(bytes, s); }
  Status free_async(std::uint64_t ptr, StreamRef s) { return pool_.free_async(ptr, s); }
  Status synchronize_stream(StreamRef s) { return pool_.synchronize_stream(s); }
  void remove_stream(StreamId id) requires requires(B& b) { b.remove_stream(id); }
  {
    pool_.stream_removed(id);
    B::remove_stream(id);
  }

  Pool& pool() { return pool_; }
  const Pool& pool() const { return pool_; }
  Status trim(StreamRef s) { return pool_.trim(s); }
  std::optional<std::string> pool_accounting_error() const { return pool_.pool_accounting_error(); }
  std::size_t cached_bytes() const { return pool_.cached_bytes(); }
  std::size_t in_use_bytes() const { return pool_.in_use_bytes(); }
  std::size_t upstream_bytes() const { return pool_.upstream_bytes(); }
  std::size_t steals() const { return pool_.steals(); }
  std::optional<std::size_t> block_bytes(std::uint64_t ptr) const { return pool_.block_bytes(ptr); }

  // Test corners the property harness drives, where the upstream has them.
  /// The next allocation grows from the upstream, which returns `live_ptr`
  /// (a driver bug): the pool must refuse it and change nothing.
  void arm_collision(std::uint64_t live_ptr) requires requires(B& b) { b.arm_collision(live_ptr); }
  {
    B::arm_collision(live_ptr);
    pool_.grow_next();
  }
  void prefer_address(std::uint64_t ptr) { pool_.prefer_address(ptr); }
  /// The upstream's last free is not the pool's: reap ordering is the
  /// pool's own rule (Q-idle), checked by its tests.
  void last_free() const = delete;
  /// Lets the device finish, the pool's cached blocks given back first.
  void drain() requires requires(B& b) { b.drain(); }
  {
    pool_.give_back_all();
    B::drain();
  }

 private:
  Pool pool_;
};

/// The pool with the core's protocol over it: a MemoryResource.
template <Backend B, class P = CorrectProtocol, class Q = CorrectPool>
using PoolResource = Resource<PooledBackend<B, Q>, P>;

static_assert(Backend<StreamOrderedPool<BackendArchetype>>,
              "StreamOrderedPool<B> must satisfy the streamcheck::Backend concept it stands for");
static_assert(Backend<PooledBackend<BackendArchetype>>,
              "PooledBackend<B> must satisfy the streamcheck::Backend concept it stands for");
static_assert(MemoryResource<PoolResource<BackendArchetype>>,
              "PoolResource<B> must satisfy the streamcheck::MemoryResource concept (model/memory_resource.h)");

}  // namespace streamcheck
