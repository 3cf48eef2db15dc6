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
#include <string>
#include <vector>

#include "model/kernel_access.h"
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

/// What replaying a trace program (tools/trace_interpreter.h) needs beyond
/// the core's calls: the program's own streams, host threads, kernels and
/// host synchronisation, and two hooks for reports. add_stream(name, kind,
/// device) makes a stream of the kind a trace declares (R8: blocking,
/// non-blocking, or the legacy default stream) on a device (R13; kNoDevice
/// for a host thread's host stream); remove_stream(id) is the trace's
/// `destroy stream` (R9a: work already enqueued still runs). Every call returns what
/// it could not do as a value (Status, Result), never by throwing.
///   R4 host sync   - synchronize_event / synchronize_device(device) return
///                    after the covered work (R13c: one device's) completed; query_event answers whether it
///                    has (only a "done" answer orders the host).
///   R6 host threads - set_host_thread(h) makes h the thread that issues
///                    the calls that follow; add_host_thread() starts one.
/// Hooks: set_op_origin(line) tags every device op enqueued from now on with
/// the trace line that enqueued it; set_op_label(label) names the next pool op;
/// set_event_label(label) names every event created from now on (the trace's
/// name of an event, or what the resource made it for; empty: the backend's own);
/// allocation_of(ptr) is the backend's own index of the live allocation at
/// ptr (nullopt where the backend has none); suballoc(parent, ptr,
/// block_bytes, bytes, s) and subfree(block, s, released_after) are a
/// user-space allocator handing out bytes of a live allocation and taking
/// them back (R10: `parent`/`block` are allocation_of indexes); without_faults(f) runs f with
/// no fault point firing (the program's own calls are not where --faults
/// injects: that is the resource's calls).
template <class B>
concept ReplayBackend = Backend<B> &&
    requires(B& b, std::string name, typename B::StreamRef s, const std::vector<KernelAccess>& accesses,
             const typename B::Event& cevent, typename B::HostThread h, int line, std::uint64_t ptr, StreamId id) {
  typename B::HostThread;
  { b.add_stream(name, StreamKind::Blocking, DeviceNumber{0}) } -> std::same_as<StreamId>;
  b.remove_stream(id);
  { b.add_host_thread() } -> std::same_as<typename B::HostThread>;
  { b.main_host_thread() } -> std::same_as<typename B::HostThread>;
  b.set_host_thread(h);
  b.launch(s, accesses, name);
  { b.synchronize_event(cevent) } -> std::same_as<Status>;
  { b.synchronize_device(DeviceNumber{0}) } -> std::same_as<Status>;
  { b.query_event(cevent) } -> std::same_as<Result<bool>>;
  b.set_op_origin(line);
  b.set_op_label(name);
  b.set_event_label(name);
  { b.allocation_of(ptr) } -> std::same_as<std::optional<std::uint32_t>>;
  // R10: a user-space allocator's blocks (`suballoc` / `subfree`).
  { b.suballoc(std::optional<std::uint32_t>{}, ptr, ptr, ptr, s) } -> std::same_as<Result<std::uint64_t>>;
  { b.subfree(std::optional<std::uint32_t>{}, s, std::vector<typename B::StreamRef>{}) } -> std::same_as<Status>;
  // R12: host memory and host functions (`buffer … pageable|pinned`, `host`,
  // `callback`); `s` as the running host thread's host stream.
  { b.host_alloc(ptr, true, s) } -> std::same_as<Result<std::uint64_t>>;
  { b.host_free(ptr, s) } -> std::same_as<Status>;
  b.host_access(s, accesses, name);
  b.host_function(s, accesses, name);
  {
    b.without_faults([] { return Status{}; })
    } -> std::same_as<Status>;
  b.drain();
};

}  // namespace streamcheck
