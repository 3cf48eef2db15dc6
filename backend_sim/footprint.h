// What one step of a host thread touches, for partial-order reduction over
// host threads (R6).
//
// Two steps of different host threads commute -- running them in either
// order reaches the same state and the same findings -- when their
// footprints do not conflict: no shared object that one of them writes, and
// no object that one reads while the other accumulates into it. A runner of
// host threads (the trace interpreter, the fiber scheduler of the core's own
// threads) describes each thread's next step by its footprint; the DFS
// choosers then skip interleavings that only swap commuting steps (sleep
// sets, Godefroid 1996: Chooser::choose_host_step).
//
// A footprint must name everything the step may touch, whatever the choices
// made inside it: a footprint that says too little prunes interleavings that
// differ (unsound), one that says too much only explores more.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace streamcheck::sim {

/// How a step touches an object. Reads commute with reads; accumulations
/// (monotone joins whose order cannot be seen, like completing device work)
/// commute with accumulations; a write commutes with nothing.
enum class Touch : std::uint8_t { Read, Accumulate, Write };

/// An object steps can share: a kind the runner names (a stream, an event, a
/// mutex, ...) and its number among objects of that kind; for an object with
/// entries (what a mutex guards: GuardedMap), the entry `key`, or `whole`:
/// every entry. Two touches meet when they name one object and one entry
/// (or either names the whole).
struct SharedObject {
  std::uint8_t kind = 0;
  std::uint32_t index = 0;
  std::uint64_t key = 0;
  bool whole = true;
  friend constexpr bool operator==(SharedObject, SharedObject) = default;
  constexpr bool meets(SharedObject other) const {
    return kind == other.kind && index == other.index && (whole || other.whole || key == other.key);
  }
};

class Footprint {
 public:
  Footprint& touch(SharedObject object, Touch how) {
    for (const Entry& e : entries_)
      if (e.object == object && e.how == how) return *this;
    entries_.push_back(Entry{object, how});
    return *this;
  }
  /// Adds what `other` touches (a critical section's footprint is the union
  /// of its steps').
  Footprint& merge(const Footprint& other) {
    everything_ = everything_ || other.everything_;
    for (const Entry& e : other.entries_) touch(e.object, e.how);
    return *this;
  }
  /// The step may touch anything (a device-wide synchronization, a step the
  /// runner cannot describe): it conflicts with every step that touches
  /// something.
  Footprint& touch_everything() {
    everything_ = true;
    return *this;
  }
  bool empty() const { return entries_.empty() && !everything_; }

  bool conflicts_with(const Footprint& other) const {
    if ((everything_ && !other.empty()) || (other.everything_ && !empty())) return true;
    for (const Entry& a : entries_)
      for (const Entry& b : other.entries_)
        if (a.object.meets(b.object) && conflict(a.how, b.how)) return true;
    return false;
  }

 private:
  struct Entry {
    SharedObject object;
    Touch how;
  };
  static bool conflict(Touch a, Touch b) {
    if (a == Touch::Write || b == Touch::Write) return true;
    return a != b;  // a read against an accumulation
  }

  std::vector<Entry> entries_;
  bool everything_ = false;
};

/// A host thread that may take a step now, and what that step touches.
struct HostStep {
  std::uint32_t thread = 0;
  Footprint footprint;
  /// Lock-aware reduction (HostScheduler::set_lock_aware): the step locks
  /// the mutex with this number. Two such steps on one mutex are ordered
  /// only when the critical sections they open conflict
  /// (Chooser::section_ended), not by the lock itself.
  std::optional<std::uint32_t> lock;
};

}  // namespace streamcheck::sim
