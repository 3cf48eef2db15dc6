// Ref/owner pairs for driver handles (SPEC §6, seed 003).
//
// A `*Ref` is trivially copyable and never null: the only way to make one
// from a raw handle is `from()`, which rejects null. There is no constructor
// from an integer or nullptr. The owners are move-only and destroy their
// handle; a destructor cannot throw, so a failure there is written to stderr
// (with what to do) and otherwise ignored.
//
// The null stream and null events are rejected before any driver call by
// the raw-handle operations below: the resource never runs on the legacy
// default stream, whose implicit synchronization (R8) it does not rely on. A
// trace that names the legacy stream gets CU_STREAM_LEGACY, a handle that
// is not null (CudaBackend::add_stream).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <optional>
#include <utility>

#include "backend_cuda/driver.h"
#include "model/types.h"

namespace streamcheck::cuda {

class StreamRef {
 public:
  static std::optional<StreamRef> from(CUstream s) {
    if (!s) return std::nullopt;
    return StreamRef(s);
  }
  StreamRef(std::nullptr_t) = delete;
  CUstream get() const { return s_; }
  friend bool operator==(StreamRef, StreamRef) = default;

 private:
  explicit StreamRef(CUstream s) : s_(s) {}
  CUstream s_;
};

class EventRef {
 public:
  static std::optional<EventRef> from(CUevent e) {
    if (!e) return std::nullopt;
    return EventRef(e);
  }
  EventRef(std::nullptr_t) = delete;
  CUevent get() const { return e_; }
  friend bool operator==(EventRef, EventRef) = default;

 private:
  explicit EventRef(CUevent e) : e_(e) {}
  CUevent e_;
};

// --- raw-handle operations: null is refused before the driver is touched
Status record_event(CUevent event, CUstream stream);
Status wait_event(CUstream stream, CUevent event);
Status synchronize_stream(CUstream stream);
Status synchronize_event(CUevent event);
/// true: all captured work is done; false: not yet.
Result<bool> query_event(CUevent event);
Result<bool> query_stream(CUstream stream);

/// The primary context of one device, retained for the owner's lifetime
/// and made current on the creating thread.
class Context {
 public:
  static Result<Context> primary(int ordinal);
  Context(Context&& o) noexcept : ctx_(std::exchange(o.ctx_, nullptr)), device_(o.device_), ordinal_(o.ordinal_) {}
  Context& operator=(Context&&) = delete;
  Context(const Context&) = delete;
  ~Context();  // releases the primary context; a failure goes to stderr
  CUcontext get() const { return ctx_; }
  int ordinal() const { return ordinal_; }
  /// Makes the context current on the calling thread.
  Status make_current() const;

  /// This context current on the calling thread for as long as it lives,
  /// and then the thread's own again: pushed only when the thread had
  /// another (or none), so a caller's thread keeps the device it chose.
  class OnThisThread {
   public:
    OnThisThread(OnThisThread&& o) noexcept : pushed_(std::exchange(o.pushed_, false)) {}
    OnThisThread& operator=(OnThisThread&&) = delete;
    OnThisThread(const OnThisThread&) = delete;
    ~OnThisThread();  // pops what it pushed; a failure goes to stderr

   private:
    friend class Context;
    explicit OnThisThread(bool pushed) : pushed_(pushed) {}
    bool pushed_;
  };
  /// The calls that need a current context (cuEventCreate, cuStreamCreate)
  /// made from a thread other than the creating one need this first.
  Result<OnThisThread> current_on_this_thread() const;

 private:
  Context(CUcontext ctx, CUdevice device, int ordinal) : ctx_(ctx), device_(device), ordinal_(ordinal) {}
  CUcontext ctx_;
  CUdevice device_;
  int ordinal_;
};

/// A stream of its own: non-blocking (never ordered with the legacy default
/// stream; the resource's streams) unless `blocking` (cudaStreamCreate's
/// default flags: R8 orders it with the legacy default stream).
class Stream {
 public:
  static Result<Stream> create(bool blocking = false);
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  ~Stream();  // destroys the stream; a failure goes to stderr
  StreamRef ref() const { return *StreamRef::from(s_); }
  /// Gives the handle up: the caller owns it now (a cache slot keeps it raw).
  CUstream into_raw() && noexcept { return std::exchange(s_, nullptr); }
  /// Owns a handle that into_raw() gave up.
  static Stream from_raw(CUstream s) noexcept { return Stream(s); }

 private:
  explicit Stream(CUstream s) : s_(s) {}
  void reset();
  CUstream s_;
};

/// An event created with timing disabled (cheaper record and wait).
class Event {
 public:
  static Result<Event> create();
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  ~Event();  // destroys the event; a failure goes to stderr
  EventRef ref() const { return *EventRef::from(e_); }
  /// Gives the handle up: the caller owns it now (a cache slot keeps it raw).
  CUevent into_raw() && noexcept { return std::exchange(e_, nullptr); }
  /// Owns a handle that into_raw() gave up.
  static Event from_raw(CUevent e) noexcept { return Event(e); }

 private:
  explicit Event(CUevent e) : e_(e) {}
  void reset();
  CUevent e_;
};

}  // namespace streamcheck::cuda
