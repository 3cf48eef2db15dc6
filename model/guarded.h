#pragma once
// A value reachable only with its mutex held.
//
// Why: a forgotten lock is a bug that single-threaded properties cannot see
// (the mutation run's lock-drop mutants all survived them). With the state
// behind Guarded, `lock()` is the one way to it, so code that forgets the
// lock does not compile. What is done between two locks (a re-validation
// after an unlocked window) is still the properties' job, and P8's.
//
// What a critical section touches is told to mutexes that listen (the
// simulator's SchedMutex), for lock-aware partial-order reduction (R6, P8):
// two critical sections of one mutex that touch disjoint parts of what it
// guards need not be explored in both orders. Guarded::lock() tells "the
// whole value" (written, or read through a const Guarded); GuardedMap tells
// the entry each call touches, or its side value. Other mutexes
// (std::mutex) hear nothing.
#include <atomic>
#include <concepts>
#include <cstdint>
#include <functional>
#include <mutex>
#include <type_traits>
#include <utility>

namespace streamcheck {

/// Tells `mutex`, when it listens, that the critical section it guards
/// touches entry `key` (or, `whole`, every entry: not a GuardedMap's side
/// value, which tell_guarded_side_touch tells), reading or writing it.
template <class Mutex>
void tell_guarded_touch(Mutex& mutex, std::uint64_t key, bool whole, bool write) {
  if constexpr (requires { mutex.note_guarded(key, whole, write); }) mutex.note_guarded(key, whole, write);
}
/// Tells `mutex`, when it listens, that the critical section touches the
/// side value it guards beside its map's entries (GuardedMap's `Side`).
template <class Mutex>
void tell_guarded_side_touch(Mutex& mutex, bool write) {
  if constexpr (requires { mutex.note_guarded_side(write); }) mutex.note_guarded_side(write);
}
/// Tells `mutex`, when it listens, that this critical section says entry by
/// entry what it touches (a section that says nothing touched nothing).
template <class Mutex>
void tell_guarded_keyed(Mutex& mutex) {
  if constexpr (requires { mutex.note_guarded_keyed(); }) mutex.note_guarded_keyed();
}

/// Adds `delta` to `counter`, whose every writer holds one mutex (the
/// caller holds it now), so no other write can come between the load and
/// the store: a std::atomic then needs no locked read-modify-write, which
/// costs the resource's allocate/deallocate path about as much as a lock
/// (docs/PERFORMANCE.md). Readers that hold no lock still see whole values.
/// Any other atomic (the simulator's, a scheduling point per operation) is
/// given the one fetch_add it had, so exploration sees what it saw.
template <class Counter, class T>
void add_holding_lock(Counter& counter, T delta) {
  if constexpr (std::is_same_v<Counter, std::atomic<T>>)
    counter.store(counter.load(std::memory_order_relaxed) + delta, std::memory_order_release);
  else
    counter.fetch_add(delta);
}
/// add_holding_lock, subtracting.
template <class Counter, class T>
void sub_holding_lock(Counter& counter, T delta) {
  if constexpr (std::is_same_v<Counter, std::atomic<T>>)
    counter.store(counter.load(std::memory_order_relaxed) - delta, std::memory_order_release);
  else
    counter.fetch_sub(delta);
}

template <class T, class Mutex>
class Guarded {
 public:
  /// Holds the lock for as long as it lives; the value is reached through it.
  template <class Value>
  class Locked {
   public:
    Locked(const Locked&) = delete;
    Locked& operator=(const Locked&) = delete;
    Value& operator*() const { return *value_; }
    Value* operator->() const { return value_; }

   private:
    friend class Guarded;
    Locked(Mutex& mutex, Value& value) : lock_(mutex), value_(&value) {
      tell_guarded_touch(mutex, 0, true, !std::is_const_v<Value>);
    }
    std::lock_guard<Mutex> lock_;
    Value* value_;
  };

  template <class... Args>
  explicit Guarded(Args&&... args) : value_(std::forward<Args>(args)...) {}
  Guarded(const Guarded&) = delete;
  Guarded& operator=(const Guarded&) = delete;

  /// Touches the whole value: a write, or a read through a const Guarded.
  Locked<T> lock() { return Locked<T>(mutex_, value_); }
  Locked<const T> lock() const { return Locked<const T>(mutex_, value_); }

 private:
  mutable Mutex mutex_;
  T value_;
};

/// No side value (GuardedMap's default).
struct NoSide {};

/// A map reachable only with its mutex held, through calls that each say
/// which entry they touch (tell_guarded_touch): a critical section over one
/// block's entry then commutes with one over another block's, for the
/// simulator's lock-aware exploration. There is no raw access to the map
/// except whole-map calls, which say so; a call that says too little would
/// make that exploration unsound.
///
/// `Side` is one more value under the same mutex, apart from the entries
/// (side(), side_for_update(): tell_guarded_side_touch). Why: state that
/// changes together with an entry (the resource's pending tally, moved in
/// the same section that retires a block) then costs no second lock, and a
/// section on one entry still commutes with a section on the side alone.
template <class Map, class Mutex, class Side = NoSide>
class GuardedMap {
 public:
  using key_type = typename Map::key_type;

  /// The map locked for as long as this lives; `M` is Map or const Map.
  template <class M>
  class Access {
    static constexpr bool kWritable = !std::is_const_v<M>;

   public:
    using iterator = std::conditional_t<kWritable, typename Map::iterator, typename Map::const_iterator>;
    using const_iterator = typename Map::const_iterator;

    Access(const Access&) = delete;
    Access& operator=(const Access&) = delete;

    const_iterator find(const key_type& key) const {
      tell(key, false);
      return map_->find(key);
    }
    /// find, for a caller that changes the entry (or erases it).
    iterator find_for_update(const key_type& key) const requires kWritable {
      tell(key, true);
      return map_->find(key);
    }
    /// The entry `found` (from find) for a caller that now changes it: the
    /// same as find_for_update of its key, without looking the key up again.
    iterator for_update(const_iterator found) const requires kWritable {
      tell(found->first, true);
      if constexpr (requires { map_->mutable_iterator(found); })
        return map_->mutable_iterator(found);
      else
        return map_->erase(found, found);  // erases nothing: a const_iterator made mutable
    }
    bool contains(const key_type& key) const {
      tell(key, false);
      return map_->contains(key);
    }
    const_iterator end() const { return map_->cend(); }
    template <class... Args>
    auto try_emplace(const key_type& key, Args&&... args) const requires kWritable {
      tell(key, true);
      return map_->try_emplace(key, std::forward<Args>(args)...);
    }
    template <class V>
    auto insert_or_assign(const key_type& key, V&& value) const requires kWritable {
      tell(key, true);
      return map_->insert_or_assign(key, std::forward<V>(value));
    }
    auto& operator[](const key_type& key) const requires kWritable {
      tell(key, true);
      return (*map_)[key];
    }
    /// Erases at an iterator from find_for_update (that call told the key).
    void erase(iterator it) const requires kWritable { map_->erase(it); }
    std::size_t size() const {
      tell_whole(false);
      return map_->size();
    }
    /// The whole map, read (to iterate or copy it).
    const Map& all() const {
      tell_whole(false);
      return *map_;
    }
    /// The whole map, to change as a whole (swap, clear).
    Map& all_for_update() const requires kWritable {
      tell_whole(true);
      return *map_;
    }
    /// The side value, read.
    const Side& side() const {
      tell_guarded_side_touch(*mutex_, false);
      return *side_;
    }
    /// The side value, to change.
    Side& side_for_update() const requires kWritable {
      tell_guarded_side_touch(*mutex_, true);
      return *side_;
    }

   private:
    friend class GuardedMap;
    using SideRef = std::conditional_t<kWritable, Side, const Side>;
    Access(Mutex& mutex, M& map, SideRef& side, std::atomic<int>& holders)
        : lock_(mutex), mutex_(&mutex), map_(&map), side_(&side), holders_(&holders) {
      tell_guarded_keyed(mutex);
      // Changed only under the mutex: a load and a store, no locked RMW.
      holders_->store(holders_->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
    static std::uint64_t key_bits(const key_type& key) {
      if constexpr (std::integral<key_type>)
        return static_cast<std::uint64_t>(key);
      else if constexpr (requires { key.value; })
        return static_cast<std::uint64_t>(key.value);
      else
        return std::hash<key_type>{}(key);
    }
    void tell(const key_type& key, bool write) const { tell_guarded_touch(*mutex_, key_bits(key), false, write); }
    void tell_whole(bool write) const { tell_guarded_touch(*mutex_, 0, true, write); }

    std::lock_guard<Mutex> lock_;
    Mutex* mutex_;
    M* map_;
    SideRef* side_;
    std::atomic<int>* holders_;

   public:
    ~Access() {  // before lock_ lets go
      holders_->store(holders_->load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
    }
  };

  GuardedMap() = default;
  GuardedMap(const GuardedMap&) = delete;
  GuardedMap& operator=(const GuardedMap&) = delete;

  Access<Map> lock() { return Access<Map>(mutex_, map_, side_, holders_); }
  Access<const Map> lock() const { return Access<const Map>(mutex_, map_, side_, holders_); }
  /// Whether a critical section is open on this map now (a count, not the
  /// mutex: asking costs no lock and cannot block). For test hooks that run
  /// "another thread's" calls from inside a backend call: such a thread
  /// would wait at this lock, so it cannot land there.
  bool locked() const { return holders_.load(std::memory_order_relaxed) > 0; }

 private:
  mutable Mutex mutex_;
  mutable std::atomic<int> holders_{0};
  Map map_;
  Side side_{};
};

}  // namespace streamcheck
