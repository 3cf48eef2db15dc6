#pragma once
// A value reachable only with its mutex held.
//
// Why: a forgotten lock is a bug that single-threaded properties cannot see
// (the mutation run's lock-drop mutants all survived them). With the state
// behind Guarded, `lock()` is the one way to it, so code that forgets the
// lock does not compile. What is done between two locks (a re-validation
// after an unlocked window) is still the properties' job, and P8's.
#include <mutex>
#include <utility>

namespace streamcheck {

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
    Locked(Mutex& mutex, Value& value) : lock_(mutex), value_(&value) {}
    std::lock_guard<Mutex> lock_;
    Value* value_;
  };

  template <class... Args>
  explicit Guarded(Args&&... args) : value_(std::forward<Args>(args)...) {}
  Guarded(const Guarded&) = delete;
  Guarded& operator=(const Guarded&) = delete;

  Locked<T> lock() { return Locked<T>(mutex_, value_); }
  Locked<const T> lock() const { return Locked<const T>(mutex_, value_); }

 private:
  mutable Mutex mutex_;
  T value_;
};

}  // namespace streamcheck
