// Vocabulary types of the stream-ordered memory protocol (SPEC §2).
//
// Everything here is plain data: identities of streams and blocks, the
// access kinds, and the error values every protocol call can return.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace streamcheck {

/// Identifies a stream known to the backend. Identities, not raw handles:
/// driver handles are recycled, ids are not (an ABA bug class RMM fixed).
struct StreamId {
  std::uint32_t value = 0;
  friend constexpr bool operator==(StreamId, StreamId) = default;
  friend constexpr auto operator<=>(StreamId, StreamId) = default;
};

/// Process-wide, strictly increasing allocation generation. Distinct under
/// concurrency: two blocks at the same address never share a generation.
struct Generation {
  std::uint64_t value = 0;
  friend constexpr bool operator==(Generation, Generation) = default;
  friend constexpr auto operator<=>(Generation, Generation) = default;

  static Generation next() {
    static std::atomic<std::uint64_t> counter{1};
    return Generation{counter.fetch_add(1, std::memory_order_relaxed)};
  }
};

/// Caller-supplied label carried by a block, for logs and reports.
struct AllocTag {
  std::string_view name = "untagged";
  friend constexpr bool operator==(AllocTag, AllocTag) = default;
};

enum class Access : std::uint8_t { Read, Write, ReadWrite };

constexpr bool reads(Access a) { return a == Access::Read || a == Access::ReadWrite; }
constexpr bool writes(Access a) { return a == Access::Write || a == Access::ReadWrite; }

/// The strongest-access lattice used by the recorder's dedup:
/// Read + Write = ReadWrite; equal kinds stay as they are.
constexpr Access combine(Access a, Access b) {
  if (a == b) return a;
  return Access::ReadWrite;
}

constexpr std::string_view to_string(Access a) {
  switch (a) {
    case Access::Read:
      return "read";
    case Access::Write:
      return "write";
    case Access::ReadWrite:
      return "read_write";
  }
  return "?";
}

/// How a stream is ordered against the legacy default stream (R8):
/// cudaStreamCreate makes a Blocking stream, cudaStreamNonBlocking a
/// NonBlocking one, and stream 0 / cudaStreamLegacy is the LegacyDefault
/// stream. Work on the legacy stream waits for the work enqueued before it
/// on every blocking stream, and work on a blocking stream waits for the
/// work enqueued before it on the legacy stream; non-blocking streams are
/// ordered by nothing implicit. A per-thread default stream
/// (cudaStreamPerThread) is a Blocking stream of its host thread.
enum class StreamKind : std::uint8_t { NonBlocking, Blocking, LegacyDefault };

/// A GPU of the program (R13): the ordinal cudaSetDevice takes. Streams,
/// events and device buffers belong to one; host threads start on 0.
using DeviceNumber = std::uint32_t;
/// The device of the streams that belong to none: a host thread's own host
/// stream (R12), which `sync device` never covers.
inline constexpr DeviceNumber kNoDevice = UINT32_MAX;
/// What the implicit rules need to know of a stream: its kind (R8) and
/// its device (R13a: the legacy stream orders the blocking streams of its
/// own device only).
struct StreamShape {
  StreamKind kind = StreamKind::NonBlocking;
  DeviceNumber device = 0;
};

constexpr std::string_view to_string(StreamKind k) {
  switch (k) {
    case StreamKind::NonBlocking:
      return "nonblocking";
    case StreamKind::Blocking:
      return "blocking";
    case StreamKind::LegacyDefault:
      return "legacy";
  }
  return "?";
}

enum class BlockState : std::uint8_t { Live, Retired, Quarantined, Freed };

/// One outstanding allocation, owned by the caller until deallocated.
struct DeviceBlock {
  std::uint64_t ptr = 0;
  std::uint32_t device_ordinal = 0;
  StreamId alloc_stream{};
  std::size_t bytes = 0;
  std::size_t align = 1;
  AllocTag tag{};
  Generation generation{};
  BlockState state = BlockState::Live;
};

/// A block's identity, snapshotted so it can outlive the block: the
/// generation guard rejects it once the allocation is gone.
struct BlockId {
  std::uint64_t ptr = 0;
  Generation generation{};
  StreamId alloc_stream{};
  std::uint32_t device_ordinal = 0;

  static constexpr BlockId of(const DeviceBlock& b) {
    return BlockId{b.ptr, b.generation, b.alloc_stream, b.device_ordinal};
  }
  friend constexpr bool operator==(const BlockId&, const BlockId&) = default;
};

enum class ErrorKind : std::uint8_t { OutOfBudget, Driver, StreamMisuse, UseAfterFree, OutOfBounds };

constexpr std::string_view to_string(ErrorKind k) {
  switch (k) {
    case ErrorKind::OutOfBudget:
      return "OutOfBudget";
    case ErrorKind::Driver:
      return "Driver";
    case ErrorKind::StreamMisuse:
      return "StreamMisuse";
    case ErrorKind::UseAfterFree:
      return "UseAfterFree";
    case ErrorKind::OutOfBounds:
      return "OutOfBounds";
  }
  return "?";
}

/// An error value returned by a protocol call. Which fields are meaningful
/// depends on `kind`: message for Driver/StreamMisuse, requested/remaining
/// for OutOfBudget, generation for UseAfterFree/OutOfBounds. `injected`
/// marks a Driver error that a test injected (model/fault_injecting.h), also
/// after the core wrapped it in its own context; tests and harnesses tell an
/// injected fault from a real failure by this flag, never by the message.
struct ResourceError {
  ErrorKind kind = ErrorKind::Driver;
  std::string message;
  std::size_t requested = 0;
  std::size_t remaining = 0;
  Generation generation{};
  bool injected = false;

  static ResourceError driver(std::string msg) { return {ErrorKind::Driver, std::move(msg), 0, 0, {}}; }
  /// The Driver error of a failed backend call `call`, injected by a test.
  static ResourceError injected_fault(std::string_view call) {
    ResourceError e = driver("injected fault at " + std::string(call));
    e.injected = true;
    return e;
  }
  /// A Driver error "context: cause" for a backend call that failed with
  /// `cause`; an injected cause stays marked injected.
  static ResourceError driver_caused_by(std::string context, const ResourceError& cause) {
    ResourceError e = driver(std::move(context) + ": " + cause.message);
    e.injected = cause.injected;
    return e;
  }
  static ResourceError stream_misuse(std::string msg) { return {ErrorKind::StreamMisuse, std::move(msg), 0, 0, {}}; }
  static ResourceError use_after_free(Generation g) { return {ErrorKind::UseAfterFree, {}, 0, 0, g}; }
  static ResourceError out_of_bounds(Generation g) { return {ErrorKind::OutOfBounds, {}, 0, 0, g}; }
  static ResourceError out_of_budget(std::size_t requested, std::size_t remaining) {
    return {ErrorKind::OutOfBudget, {}, requested, remaining, {}};
  }

  std::string to_string() const {
    switch (kind) {
      case ErrorKind::OutOfBudget:
        return "out of budget: requested " + std::to_string(requested) + " bytes, remaining " +
               std::to_string(remaining) + " bytes";
      case ErrorKind::Driver:
        return "driver error: " + message;
      case ErrorKind::StreamMisuse:
        return "stream-ordered contract violated: " + message;
      case ErrorKind::UseAfterFree:
        return "use after free of generation " + std::to_string(generation.value);
      case ErrorKind::OutOfBounds:
        return "out-of-bounds write on generation " + std::to_string(generation.value);
    }
    return "error of unknown kind " + std::to_string(static_cast<int>(kind));
  }
};

inline std::ostream& operator<<(std::ostream& os, const ResourceError& e) { return os << e.to_string(); }

/// Thrown when a Result is read the wrong way: a tool failure, never a
/// finding. The message says what the caller did wrong.
class BadResultAccess : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// Either a value or a ResourceError (C++20 has no std::expected).
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Result(ResourceError error) : v_(std::in_place_index<1>, std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    if (!ok()) throw BadResultAccess("Result::value() on an error: " + error().to_string());
    return std::get<0>(v_);
  }
  const T& value() const& {
    if (!ok()) throw BadResultAccess("Result::value() on an error: " + error().to_string());
    return std::get<0>(v_);
  }
  T&& value() && {
    if (!ok()) throw BadResultAccess("Result::value() on an error: " + error().to_string());
    return std::get<0>(std::move(v_));
  }
  const ResourceError& error() const {
    if (ok()) throw BadResultAccess("Result::error() on a success value");
    return std::get<1>(v_);
  }

 private:
  std::variant<T, ResourceError> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(ResourceError error) : error_(std::move(error)) {}

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const ResourceError& error() const {
    if (ok()) throw BadResultAccess("Status::error() on a success value");
    return *error_;
  }

 private:
  std::optional<ResourceError> error_;
};

using Status = Result<void>;

}  // namespace streamcheck
