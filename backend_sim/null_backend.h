// A backend whose calls succeed at once and order nothing: events and
// addresses come from a counter. It checks nothing, so it serves only where the
// core itself is under test: measuring the core's own cost (bench_core) and
// running the core from many host threads at once under TSan
// (tests/model/test_concurrency.cpp). Thread-safe: every counter is atomic.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "model/backend.h"
#include "model/types.h"

namespace streamcheck::sim {

class NullBackend {
 public:
  using StreamRef = std::uint32_t;
  /// Move-only, as a real event owner is; destroying one gives it back, so
  /// the backend counts the live ones (P9).
  struct GiveBack {
    void operator()(std::atomic<std::size_t>* live) const { live->fetch_sub(1); }
  };
  using Event = std::unique_ptr<std::atomic<std::size_t>, GiveBack>;
  using Mutex = std::mutex;
  template <class T>
  using Atomic = std::atomic<T>;

  static constexpr std::uint32_t kStreams = 8;

  std::optional<StreamRef> resolve_stream(StreamId id) const {
    if (id.value >= kStreams) return std::nullopt;
    return static_cast<StreamRef>(id.value);
  }
  Result<Event> create_event() {
    live_events_.fetch_add(1);
    return Event(&live_events_);
  }
  Status record_event(Event&, StreamRef) { return {}; }
  Status wait_event(StreamRef, const Event&) { return {}; }
  Result<std::uint64_t> alloc_async(std::size_t bytes, StreamRef) {
    return next_address_.fetch_add((bytes + 255) & ~std::uint64_t{255});
  }
  Status free_async(std::uint64_t, StreamRef) { return {}; }
  Status synchronize_stream(StreamRef) { return {}; }
  std::uint32_t device_ordinal() const { return 0; }

  std::size_t live_event_count() const { return live_events_.load(); }

 private:
  std::atomic<std::size_t> live_events_{0};
  std::atomic<std::uint64_t> next_address_{std::uint64_t{1} << 20};
};
static_assert(Backend<NullBackend>);

}  // namespace streamcheck::sim
