// Host threads as choices (R6, SPEC P8): a cooperative scheduler in the
// style of loom and Shuttle.
//
// A HostScheduler runs N host-thread bodies, only one at a time: a thread
// runs until its next scheduling point, where it says what its next step
// touches (a Footprint), and the chooser picks which thread takes the next
// step (ChoiceKind::HostStep). Scheduling points are every lock and atomic
// operation of the simulated backend's Mutex and Atomic types (SchedMutex,
// SchedAtomic: what the core uses as Backend::Mutex and Backend::Atomic) and
// every call into the simulated device (SimBackend). So one step is exactly
// one shared operation plus the thread-local code after it (and the unlocks
// in it: a release matters only to threads waiting for the mutex, which
// cannot step until it is free), and the footprint declared at the point
// names all that the step shares -- what partial-order reduction (sleep
// sets, Chooser::choose_host_step) needs to be sound.
//
// The bodies must touch nothing shared outside those points: their own
// bookkeeping stays per thread until run() returns.
//
// Host threads are fibers (ucontext) on the calling OS thread: a switch is a
// swapcontext, no kernel round trip, so an exploration makes hundreds of
// thousands of runs a minute. The fibers tell AddressSanitizer and
// ThreadSanitizer about each switch (their fiber interfaces), so the
// sanitizer builds check the bodies as ordinary code.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backend_sim/footprint.h"
#include "backend_sim/schedule.h"

namespace streamcheck::sim {

/// The kinds of SharedObject that host steps touch in the simulator.
namespace shared {
inline constexpr std::uint8_t kMutex = 1;
inline constexpr std::uint8_t kAtomic = 2;
inline constexpr std::uint8_t kStream = 3;
inline constexpr std::uint8_t kEvent = 4;
/// The memory pool and the device memory it hands out (R7).
inline constexpr std::uint8_t kPool = 5;
/// The table of event handles: creating and destroying events only draws
/// and returns handles, whose numbers nothing checked depends on.
inline constexpr std::uint8_t kEventTable = 6;
/// What a mutex guards (index: the mutex's number), entry by entry as the
/// critical section says (GuardedMap, tell_guarded_touch); `whole`: every
/// entry, not the side value below.
inline constexpr std::uint8_t kGuarded = 7;
/// The side value a mutex guards apart from its map's entries (index: the
/// mutex's number; GuardedMap's `Side`, tell_guarded_side_touch).
inline constexpr std::uint8_t kGuardedSide = 8;
}  // namespace shared

/// Thrown from a scheduling point into a body when the run is abandoned
/// (another body threw, the chooser refused, a deadlock): the body unwinds.
struct HostRunAbandoned {};

class HostScheduler {
 public:
  using Body = std::function<void()>;

  explicit HostScheduler(Chooser& chooser);
  ~HostScheduler();
  HostScheduler(const HostScheduler&) = delete;
  HostScheduler& operator=(const HostScheduler&) = delete;

  /// Called, with the thread's number, whenever another thread takes the
  /// baton (the simulator's current host thread follows it).
  void on_switch(std::function<void(std::uint32_t)> fn) { on_switch_ = std::move(fn); }

  /// Runs bodies[i] as host thread i, one thread at a time, until every body
  /// has returned. Threads start in order, each running to its first
  /// scheduling point before the next starts (that code is thread-local, so
  /// its order is unobservable). Throws what a body threw first, or
  /// std::runtime_error on a deadlock (the message names the threads and
  /// the mutexes they wait for). Call once, not from inside a body.
  void run(std::vector<Body> bodies);

  /// The scheduler whose host thread is running on this OS thread; null
  /// outside the bodies (the Sched* types then act as plain std:: types).
  static HostScheduler* current();

  /// A scheduling point before a step that touches `footprint`.
  void step(Footprint footprint);
  /// A scheduling point for locking `mutex`: the thread may take it only
  /// while no thread holds it. Throws std::logic_error when the thread
  /// already holds it (the std::mutex contract).
  void lock(const void* mutex);
  bool try_lock(const void* mutex);
  void unlock(const void* mutex);
  /// A stable number for a mutex or atomic, in order of first use.
  std::uint32_t object_index(const void* address);

  /// Lock-aware reduction (R6, P8): two lock steps of one mutex are not
  /// ordered by the mutex itself but by what their critical sections touch.
  /// Each critical section's footprint -- the union of its steps' and of the
  /// guarded entries it says it touches (SchedMutex::note_guarded) -- goes
  /// to Chooser::section_ended when it unlocks. Set before run().
  void set_lock_aware(bool on) { lock_aware_ = on; }
  /// What the running thread's critical sections touch in what `mutex`
  /// guards: entry `key`, or `whole`.
  void note_guarded(const void* mutex, std::uint64_t key, bool whole, bool write);
  /// ... or the side value it guards apart from the entries.
  void note_guarded_side(const void* mutex, bool write);
  /// The running thread's critical section on `mutex` says entry by entry
  /// what it touches: one that then says nothing touched nothing guarded.
  void note_guarded_keyed(const void* mutex);

  /// The run was stopped at a sleep-blocked choice (Chooser::sleep_blocked):
  /// the bodies were unwound early, and their state means nothing.
  bool cut() const { return cut_; }

 private:
  struct Pending {
    enum class Kind : std::uint8_t { Start, Step, Lock } kind = Kind::Start;
    const void* mutex = nullptr;
    Footprint footprint;
  };
  struct Fiber;
  /// A critical section a thread is in (lock-aware runs): the mutex, the
  /// HostStep choice that chose its lock step (none when forced), and what
  /// it has touched so far.
  struct Section {
    const void* mutex = nullptr;
    std::optional<std::size_t> choice;
    Footprint footprint;
    /// Whether the section said what it touched of what `mutex` guards; one
    /// that said nothing (a bare lock_guard) is taken as writing all of it.
    bool told = false;
  };
  void open_section(const void* mutex);
  /// note_guarded's and note_guarded_side's common part: `object`, of what
  /// `mutex` guards, joins each open section's footprint.
  void note_guarded_object(const void* mutex, SharedObject object, bool write);

  static void fiber_entry();
  void point(Pending pending);
  bool enabled(std::uint32_t t) const;
  /// Runs fiber `t` until its next scheduling point or its end.
  void resume(std::uint32_t t);
  /// Back from the running fiber to run()'s loop.
  void yield_to_loop();
  /// The next thread to step (a HostStep choice); nullopt when none can.
  std::optional<std::uint32_t> choose_next();
  void abandon(std::exception_ptr why);
  std::string deadlock_message() const;

  Chooser& chooser_;
  std::function<void(std::uint32_t)> on_switch_;
  std::vector<std::unique_ptr<Fiber>> fibers_;
  std::unique_ptr<Fiber> loop_;  // run()'s own context
  std::vector<Body>* bodies_ = nullptr;
  std::optional<std::uint32_t> last_ran_;
  std::uint32_t running_ = 0;
  bool chosen_before_ = false;
  bool abandoned_ = false;
  bool cut_ = false;
  bool lock_aware_ = false;
  std::exception_ptr failure_;
  std::map<const void*, std::uint32_t> owner_of_;  // mutex -> the thread holding it
  std::map<const void*, std::uint32_t> objects_;
};

/// Backend::Mutex of the simulator: a scheduling point at every lock and
/// unlock under a HostScheduler, a std::mutex outside one.
class SchedMutex {
 public:
  void lock() {
    if (auto* s = HostScheduler::current())
      s->lock(this);
    else
      plain_.lock();
  }
  bool try_lock() {
    if (auto* s = HostScheduler::current()) return s->try_lock(this);
    return plain_.try_lock();
  }
  void unlock() {
    if (auto* s = HostScheduler::current())
      s->unlock(this);
    else
      plain_.unlock();
  }
  /// What the critical section touches of what this mutex guards (GuardedMap
  /// says it through tell_guarded_touch): lock-aware reduction's data.
  void note_guarded(std::uint64_t key, bool whole, bool write) {
    if (auto* s = HostScheduler::current()) s->note_guarded(this, key, whole, write);
  }
  /// The critical section touches the side value this mutex guards.
  void note_guarded_side(bool write) {
    if (auto* s = HostScheduler::current()) s->note_guarded_side(this, write);
  }
  /// The critical section says entry by entry what it touches (GuardedMap).
  void note_guarded_keyed() {
    if (auto* s = HostScheduler::current()) s->note_guarded_keyed(this);
  }

 private:
  std::mutex plain_;
};

/// Backend::Atomic of the simulator: every operation a scheduling point under
/// a HostScheduler (a load reads the atomic, anything else writes it).
template <class T>
class SchedAtomic {
 public:
  SchedAtomic(T v = T{}) : value_(v) {}  // NOLINT: Atomic<T> x{0} as for std::atomic
  SchedAtomic(const SchedAtomic&) = delete;
  SchedAtomic& operator=(const SchedAtomic&) = delete;

  T load() const {
    point(Touch::Read);
    return value_.load();
  }
  void store(T v) {
    point(Touch::Write);
    value_.store(v);
  }
  T fetch_add(T v) {
    point(Touch::Write);
    return value_.fetch_add(v);
  }
  T fetch_sub(T v) {
    point(Touch::Write);
    return value_.fetch_sub(v);
  }
  T exchange(T v) {
    point(Touch::Write);
    return value_.exchange(v);
  }

 private:
  void point(Touch how) const {
    if (auto* s = HostScheduler::current())
      s->step(Footprint().touch(SharedObject{shared::kAtomic, s->object_index(this)}, how));
  }
  std::atomic<T> value_;
};

}  // namespace streamcheck::sim
