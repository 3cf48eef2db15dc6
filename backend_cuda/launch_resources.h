// Pooled streams and events with bounded caches and leases (seed 003):
// acquiring takes a cached handle or creates one; a lease gives its handle
// back when dropped; a cache that is full destroys what it cannot keep.
// Keeps record/wait on the hot path close to bare driver speed (SPEC §8).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>

#include "backend_cuda/handles.h"

namespace streamcheck::cuda {

/// At most `max_cached` handles of one kind (an owner such as Event or
/// Stream: create(), into_raw(), from_raw()) kept in a fixed array of
/// slots, each empty or holding one raw handle. Taking a handle is one
/// exchange on a slot and giving one back one compare-exchange, so host
/// threads never wait for each other and a lease costs no reference count:
/// the std::mutex and shared_ptr per lease this replaces took 2.4x as long
/// on one host thread and 3.7-5.8x on two (bench_launch_cache;
/// docs/PERFORMANCE.md, "GPU: the event cache without a lock").
///
/// Where to look first is a hint of each host thread's: the slot below the
/// last one it took or filled, so one thread's leases use the slots as a
/// stack and find a handle (or room) at the first look, and each thread
/// starts 64 slots on from the last one's, so that threads leasing at once
/// mostly touch cache lines of their own. A handle is found wherever it is:
/// the hint only says where to start. The counts that tests and P9 read
/// (cached(), leased()) are derived from the slots and two counters touched
/// only when a handle is created or destroyed, never on a lease.
///
/// A lease must end before its cache's owner lets it go (the backend's
/// leases end in its destructor). One that does not is still safe: the
/// cache is then closed instead of freed, each late lease destroys its
/// handle when it ends, and the last one frees the cache (a message on
/// stderr says so).
template <class Handle>
class BoundedCache {
 public:
  using Raw = decltype(std::declval<Handle>().into_raw());

  /// Gives `Handle` back to its cache when dropped.
  class Lease {
   public:
    Lease(Lease&& o) noexcept : cache_(std::exchange(o.cache_, nullptr)), handle_(std::move(o.handle_)) {}
    Lease& operator=(Lease&& o) noexcept {
      if (this != &o) {
        give_back();
        cache_ = std::exchange(o.cache_, nullptr);
        handle_ = std::move(o.handle_);
      }
      return *this;
    }
    Lease(const Lease&) = delete;
    ~Lease() { give_back(); }
    const Handle& get() const { return handle_; }

   private:
    friend class BoundedCache;
    Lease(BoundedCache* cache, Handle h) : cache_(cache), handle_(std::move(h)) {}
    void give_back() noexcept {
      if (cache_) std::exchange(cache_, nullptr)->give_back(std::move(handle_).into_raw());
    }
    BoundedCache* cache_;  // null once given back or moved from
    Handle handle_;
  };

  /// Closes the cache when its owner lets it go: see the class comment.
  struct Closer {
    void operator()(BoundedCache* cache) const noexcept { cache->close(); }
  };
  using Owner = std::unique_ptr<BoundedCache, Closer>;

  /// A cache keeping at most `max_cached` handles (at least one). A miss
  /// creates the handle with `context` current on the calling thread
  /// (cuEventCreate and cuStreamCreate need one) when it is given.
  static Owner create(std::size_t max_cached, const Context* context = nullptr) {
    return Owner(new BoundedCache(max_cached == 0 ? 1 : max_cached, context));
  }

  Result<Lease> acquire() {
    const std::size_t top = std::min(hint(), max_cached_);
    for (std::size_t i = top; i-- > 0;)
      if (Raw raw = take(i)) return lease_from(i, raw);
    for (std::size_t i = max_cached_; i-- > top;)
      if (Raw raw = take(i)) return lease_from(i, raw);
    return create_one();
  }

  /// Handles kept for the next acquire (a snapshot while others lease).
  std::size_t cached() const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < max_cached_; ++i) n += slots_[i].load(std::memory_order_relaxed) ? 1 : 0;
    return n;
  }
  /// Handles out on a lease (exact once no lease is changing hands).
  std::size_t leased() const {
    return created_.load(std::memory_order_relaxed) - 1 - destroyed_.load(std::memory_order_relaxed) - cached();
  }
  std::size_t max_cached() const { return max_cached_; }

 private:
  BoundedCache(std::size_t max_cached, const Context* context)
      : max_cached_(max_cached), context_(context), slots_(new std::atomic<Raw>[max_cached]) {
    for (std::size_t i = 0; i < max_cached_; ++i) slots_[i].store(Raw{}, std::memory_order_relaxed);
  }
  ~BoundedCache() = default;  // only count_destroyed() deletes: no handle is left by then

  /// The handle in slot `i`, which is empty then; null when there was none.
  Raw take(std::size_t i) {
    if (!slots_[i].load(std::memory_order_relaxed)) return Raw{};
    return slots_[i].exchange(Raw{}, std::memory_order_acquire);
  }
  Lease lease_from(std::size_t slot, Raw raw) {
    hint() = slot;
    return Lease(this, Handle::from_raw(raw));
  }
  [[gnu::noinline]] Result<Lease> create_one() {
    std::optional<Context::OnThisThread> current;
    if (context_) {
      auto on_this_thread = context_->current_on_this_thread();
      if (!on_this_thread) return on_this_thread.error();
      current.emplace(std::move(on_this_thread).value());
    }
    auto created = Handle::create();
    if (!created) return created.error();
    created_.fetch_add(1, std::memory_order_relaxed);
    return Lease(this, std::move(created).value());
  }

  void give_back(Raw raw) noexcept {
    if (!closed_.load(std::memory_order_acquire)) {
      const std::size_t top = std::min(hint(), max_cached_);
      for (std::size_t i = top; i < max_cached_; ++i)
        if (put(i, raw)) return;
      for (std::size_t i = 0; i < top; ++i)
        if (put(i, raw)) return;
    }
    destroy(raw);
  }
  /// Puts `raw` in slot `i` if it is empty.
  bool put(std::size_t i, Raw raw) {
    if (slots_[i].load(std::memory_order_relaxed)) return false;
    Raw empty{};
    if (!slots_[i].compare_exchange_strong(empty, raw, std::memory_order_release, std::memory_order_relaxed))
      return false;
    hint() = i + 1;
    return true;
  }
  void destroy(Raw raw) noexcept {
    Handle::from_raw(raw);  // destroyed here: its destructor reports a failure on stderr
    count_destroyed();
  }
  /// created_ counts the owner as one more, which close() counts destroyed:
  /// the two meet once the owner has let go and no handle is left, and the
  /// count that makes them meet (one exactly) frees the cache.
  void count_destroyed() noexcept {
    if (destroyed_.fetch_add(1, std::memory_order_acq_rel) + 1 == created_.load(std::memory_order_relaxed)) delete this;
  }

  void close() noexcept {
    closed_.store(true, std::memory_order_release);
    for (std::size_t i = 0; i < max_cached_; ++i)
      if (Raw raw = slots_[i].exchange(Raw{}, std::memory_order_acquire)) destroy(raw);
    if (const std::size_t still_leased = leased(); still_leased != 0)
      std::cerr << "streamcheck: " << still_leased
                << " pooled handle(s) still leased when their cache was let go; each is destroyed when its lease"
                   " ends (a lease must end before the backend that made it is destroyed)\n";
    count_destroyed();  // the owner's
  }

  /// Where this thread's acquire and give_back look first (one hint per
  /// thread for all caches of this kind; a cache smaller than the hint
  /// starts at its top). Regions 64 slots (512 bytes) apart: at 16 apart
  /// two threads on the 2-core CI machine took 1.6x as long a lease as at
  /// 64 (bench_launch_cache), lines fetched in pairs bouncing between them.
  static std::size_t& hint() {
    static std::atomic<std::size_t> next_region{0};
    thread_local std::size_t slot = next_region.fetch_add(64, std::memory_order_relaxed) % 256;
    return slot;
  }

  const std::size_t max_cached_;
  const Context* const context_;
  std::unique_ptr<std::atomic<Raw>[]> slots_;
  std::atomic<std::size_t> created_{1};  // the owner and every handle made
  std::atomic<std::size_t> destroyed_{0};
  std::atomic<bool> closed_{false};
};

using EventCache = BoundedCache<Event>;
using StreamCache = BoundedCache<Stream>;

/// A pending dispatch fenced by a completion event (seed 004): recorded on
/// the stream after the work; `is_ready` queries it, `wait` synchronizes on
/// it, and dropping an unfinished fence synchronizes too, so memory the work
/// uses is never released under it.
class CompletionFence {
 public:
  static Result<CompletionFence> after(EventCache& events, StreamRef stream) {
    auto lease = events.acquire();
    if (!lease) return lease.error();
    if (auto st = record_event(lease.value().get().ref().get(), stream.get()); !st) return st.error();
    return CompletionFence(std::move(lease).value());
  }
  // A moved-from fence holds no event, so its destructor waits for nothing.
  CompletionFence(CompletionFence&& o) noexcept : lease_(std::exchange(o.lease_, std::nullopt)), done_(o.done_) {}
  CompletionFence& operator=(CompletionFence&&) = delete;
  CompletionFence(const CompletionFence&) = delete;
  /// Synchronizes an unfinished fence; a failure goes to stderr.
  ~CompletionFence() {
    if (!lease_ || done_) return;
    if (auto st = synchronize_event(lease_->get().ref().get()); !st)
      std::cerr << "streamcheck: dropping a completion fence: " << st.error().to_string() << "\n";
  }
  Result<bool> is_ready() {
    auto r = query_event(lease_->get().ref().get());
    if (r.ok() && r.value()) done_ = true;
    return r;
  }
  Status wait() {
    auto st = synchronize_event(lease_->get().ref().get());
    if (st) done_ = true;
    return st;
  }

 private:
  explicit CompletionFence(EventCache::Lease lease) : lease_(std::move(lease)) {}
  std::optional<EventCache::Lease> lease_;
  bool done_ = false;
};

}  // namespace streamcheck::cuda
