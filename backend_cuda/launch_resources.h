// Pooled streams and events with bounded caches and leases (seed 003):
// acquiring takes a cached handle or creates one; a lease gives its handle
// back when dropped; a cache that is full destroys what it cannot keep.
// Keeps record/wait on the hot path close to bare driver speed (SPEC §8).
#pragma once

#include <cstddef>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "backend_cuda/handles.h"

namespace streamcheck::cuda {

template <class Handle>
class BoundedCache : public std::enable_shared_from_this<BoundedCache<Handle>> {
 public:
  /// Gives `Handle` back to its cache when dropped.
  class Lease {
   public:
    Lease(Lease&& o) noexcept = default;
    Lease& operator=(Lease&& o) noexcept {
      if (this != &o) {
        give_back();
        cache_ = std::move(o.cache_);
        handle_ = std::move(o.handle_);
      }
      return *this;
    }
    Lease(const Lease&) = delete;
    ~Lease() { give_back(); }
    const Handle& get() const { return *handle_; }

   private:
    friend class BoundedCache;
    Lease(std::shared_ptr<BoundedCache> cache, Handle h) : cache_(std::move(cache)), handle_(std::move(h)) {}
    void give_back() {
      if (cache_ && handle_) cache_->release(std::move(*handle_));
      handle_.reset();
      cache_.reset();
    }
    std::shared_ptr<BoundedCache> cache_;
    std::optional<Handle> handle_;
  };

  static std::shared_ptr<BoundedCache> create(std::size_t max_cached) {
    return std::shared_ptr<BoundedCache>(new BoundedCache(max_cached == 0 ? 1 : max_cached));
  }

  Result<Lease> acquire() {
    {
      std::lock_guard lock(mutex_);
      if (!cached_.empty()) {
        Handle h = std::move(cached_.back());
        cached_.pop_back();
        ++leased_;
        return Lease(this->shared_from_this(), std::move(h));
      }
    }
    auto created = Handle::create();
    if (!created) return created.error();
    std::lock_guard lock(mutex_);
    ++leased_;
    return Lease(this->shared_from_this(), std::move(created).value());
  }

  std::size_t cached() const {
    std::lock_guard lock(mutex_);
    return cached_.size();
  }
  std::size_t leased() const {
    std::lock_guard lock(mutex_);
    return leased_;
  }
  std::size_t max_cached() const { return max_cached_; }

 private:
  explicit BoundedCache(std::size_t max_cached) : max_cached_(max_cached) {}
  void release(Handle h) {
    std::lock_guard lock(mutex_);
    --leased_;
    if (cached_.size() < max_cached_) cached_.push_back(std::move(h));
    // else: `h` is destroyed here, outside the cache
  }

  const std::size_t max_cached_;
  mutable std::mutex mutex_;
  std::vector<Handle> cached_;
  std::size_t leased_ = 0;
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
