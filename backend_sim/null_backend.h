// A backend whose calls succeed at once and order nothing: events and
// addresses are counters. It checks nothing, so it serves only where the
// core itself is under test: measuring the core's own cost (bench_core) and
// running the core from many host threads at once under TSan
// (tests/model/test_concurrency.cpp). Thread-safe: every counter is atomic.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>

#include "model/backend.h"
#include "model/types.h"

namespace streamcheck::sim {

class NullBackend {
 public:
  using StreamRef = std::uint32_t;
  /// Move-only, as a real event owner is; counts the live ones (P9).
  class Event {
   public:
    Event(Event&& o) noexcept : live_(std::exchange(o.live_, nullptr)), id_(o.id_) {}
    Event& operator=(Event&& o) noexcept {
      if (this != &o) {
        release();
        live_ = std::exchange(o.live_, nullptr);
        id_ = o.id_;
      }
      return *this;
    }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    ~Event() { release(); }
    std::uint64_t id() const { return id_; }

   private:
    friend class NullBackend;
    Event(std::atomic<std::size_t>* live, std::uint64_t id) : live_(live), id_(id) { live_->fetch_add(1); }
    void release() {
      if (live_) live_->fetch_sub(1);
      live_ = nullptr;
    }
    std::atomic<std::size_t>* live_;
    std::uint64_t id_;
  };
  using Mutex = std::mutex;
  template <class T>
  using Atomic = std::atomic<T>;

  static constexpr std::uint32_t kStreams = 8;

  std::optional<StreamRef> resolve_stream(StreamId id) const {
    if (id.value >= kStreams) return std::nullopt;
    return static_cast<StreamRef>(id.value);
  }
  Result<Event> create_event() { return Event(&live_events_, next_event_.fetch_add(1)); }
  Status record_event(Event&, StreamRef) {
    records_.fetch_add(1, std::memory_order_relaxed);
    return {};
  }
  Status wait_event(StreamRef, const Event&) {
    waits_.fetch_add(1, std::memory_order_relaxed);
    return {};
  }
  Result<std::uint64_t> alloc_async(std::size_t bytes, StreamRef) {
    return next_address_.fetch_add((bytes + 255) & ~std::uint64_t{255});
  }
  Status free_async(std::uint64_t, StreamRef) { return {}; }
  Status synchronize_stream(StreamRef) { return {}; }
  std::uint32_t device_ordinal() const { return 0; }

  std::size_t live_event_count() const { return live_events_.load(); }
  std::uint64_t waits() const { return waits_.load(); }
  std::uint64_t records() const { return records_.load(); }

 private:
  std::atomic<std::size_t> live_events_{0};
  std::atomic<std::uint64_t> next_event_{1};
  std::atomic<std::uint64_t> next_address_{std::uint64_t{1} << 20};
  std::atomic<std::uint64_t> waits_{0};
  std::atomic<std::uint64_t> records_{0};
};
static_assert(Backend<NullBackend>);

}  // namespace streamcheck::sim
