// What a stream/event backend must provide for the core (SPEC §1–§2).
//
// The core (Resource, LaunchRecorder, decorators) is written once against
// this concept; backend_sim/ and backend_cuda/ each end their header with a
// static_assert that they satisfy it.
//
// Contract, stated as the happens-before rules the core relies on (the
// simulator implements exactly these; docs/DESIGN.md gives examples):
//   R1 stream order  - work on one stream runs in enqueue order.
//   R2 record        - record_event(e, s) captures the work enqueued on s so
//                      far; recording again replaces the capture.
//   R3 wait          - wait_event(s, e) orders all later work on s after e's
//                      capture as of the call; a never-recorded e is a no-op.
//   R4 host sync     - synchronize_stream(s) returns after all work enqueued
//                      on s so far has completed.
//   R5 enqueue       - a host action is ordered before device work the same
//                      host thread enqueues after it.
//   R7 pool          - alloc_async/free_async are device work on their
//                      stream; the backend decides when a freed range may be
//                      handed out again.
#pragma once

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>

#include "model/types.h"

namespace streamcheck {

template <class B>
concept Backend = requires(B& b, const B& cb, StreamId id, typename B::StreamRef s, typename B::Event& event,
                           const typename B::Event& cevent, std::size_t bytes, std::uint64_t ptr) {
  // A cheap, copyable reference to a resolved stream.
  typename B::StreamRef;
  requires std::copyable<typename B::StreamRef>;
  // A move-only owner of an event; destroying it gives the event back.
  typename B::Event;
  requires std::movable<typename B::Event>;
  // Synchronisation primitives the core uses, so that a backend can make
  // every lock and atomic step of the core an explorable choice (P8).
  typename B::Mutex;
  typename B::template Atomic<std::size_t>;

  { b.resolve_stream(id) } -> std::same_as<std::optional<typename B::StreamRef>>;
  { b.create_event() } -> std::same_as<Result<typename B::Event>>;
  { b.record_event(event, s) } -> std::same_as<Status>;
  { b.wait_event(s, cevent) } -> std::same_as<Status>;
  { b.alloc_async(bytes, s) } -> std::same_as<Result<std::uint64_t>>;
  { b.free_async(ptr, s) } -> std::same_as<Status>;
  { b.synchronize_stream(s) } -> std::same_as<Status>;
  { cb.device_ordinal() } -> std::same_as<std::uint32_t>;
};

/// The least a Backend provides, declared and never defined. The headers of
/// templates over a backend (Resource, NonTrackingResource) assert their
/// concept over it at their end, so a template that stops satisfying its
/// concept fails where it is written, not in a distant instantiation.
struct BackendArchetype {
  struct StreamRef {};
  struct Event {
    Event(Event&&) noexcept;
    Event& operator=(Event&&) noexcept;
  };
  using Mutex = std::mutex;
  template <class T>
  using Atomic = std::atomic<T>;

  std::optional<StreamRef> resolve_stream(StreamId) const;
  Result<Event> create_event();
  Status record_event(Event&, StreamRef);
  Status wait_event(StreamRef, const Event&);
  Result<std::uint64_t> alloc_async(std::size_t, StreamRef);
  Status free_async(std::uint64_t, StreamRef);
  Status synchronize_stream(StreamRef);
  std::uint32_t device_ordinal() const;
};
static_assert(Backend<BackendArchetype>,
              "BackendArchetype must satisfy the streamcheck::Backend concept it stands for");

}  // namespace streamcheck
