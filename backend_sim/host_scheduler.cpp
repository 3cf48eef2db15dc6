#include "backend_sim/host_scheduler.h"

#include <ucontext.h>

#include <cstddef>
#include <stdexcept>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define STREAMCHECK_ASAN_FIBERS 1
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define STREAMCHECK_TSAN_FIBERS 1
#endif

namespace streamcheck::sim {

namespace {
thread_local HostScheduler* tls_scheduler = nullptr;
thread_local HostScheduler* tls_starting = nullptr;  // the scheduler whose fiber is entered for the first time
thread_local std::uint32_t tls_starting_thread = 0;

#if defined(STREAMCHECK_ASAN_FIBERS)
// ASan's stack frames are larger, and its fake stacks live beside them.
constexpr std::size_t kFiberStack = std::size_t{1} << 20;
#else
constexpr std::size_t kFiberStack = std::size_t{256} << 10;
#endif

/// Fiber stacks kept for the next run on this OS thread: an exploration
/// makes many thousand runs, and a stack this large would otherwise be
/// mapped and unmapped by the allocator for each fiber of each.
thread_local std::vector<std::unique_ptr<char[]>> tls_spare_stacks;

std::unique_ptr<char[]> take_stack() {
  if (tls_spare_stacks.empty()) return std::unique_ptr<char[]>(new char[kFiberStack]);  // not zeroed
  auto stack = std::move(tls_spare_stacks.back());
  tls_spare_stacks.pop_back();
#if defined(STREAMCHECK_ASAN_FIBERS)
  // The frames of the fiber that last ran here left their redzones poisoned.
  ASAN_UNPOISON_MEMORY_REGION(stack.get(), kFiberStack);
#endif
  return stack;
}
}  // namespace

struct HostScheduler::Fiber {
  ucontext_t context{};
  std::unique_ptr<char[]> stack;  // none for run()'s own context
  std::size_t stack_size = 0;
  Pending pending;
  /// The HostStep choice (its place among the run's choices) that chose the
  /// pending step; none when it was forced.
  std::optional<std::size_t> pending_choice;
  std::vector<Section> sections;  // innermost last (lock-aware runs)
  bool done = false;
#if defined(STREAMCHECK_ASAN_FIBERS)
  void* fake_stack = nullptr;
  const void* bottom = nullptr;  // where the stack of run()'s context is, as ASan says
  std::size_t size = 0;
#endif
#if defined(STREAMCHECK_TSAN_FIBERS)
  void* tsan = nullptr;
#endif
};

namespace {
/// Switches from `from` to `to`, telling the sanitizers. `from_ends`: the
/// fiber `from` never runs again (ASan then drops its fake stack).
template <class F>
void switch_context(F& from, F& to, bool from_ends) {
#if defined(STREAMCHECK_ASAN_FIBERS)
  const void* bottom = to.stack ? static_cast<const void*>(to.stack.get()) : to.bottom;
  const std::size_t size = to.stack ? to.stack_size : to.size;
  __sanitizer_start_switch_fiber(from_ends ? nullptr : &from.fake_stack, bottom, size);
#else
  (void)from_ends;
#endif
#if defined(STREAMCHECK_TSAN_FIBERS)
  __tsan_switch_to_fiber(to.tsan, 0);
#endif
  swapcontext(&from.context, &to.context);
#if defined(STREAMCHECK_ASAN_FIBERS)
  __sanitizer_finish_switch_fiber(from.fake_stack, nullptr, nullptr);
#endif
}
}  // namespace

HostScheduler::HostScheduler(Chooser& chooser) : chooser_(chooser) {}
HostScheduler::~HostScheduler() {
  for (auto& f : fibers_) {
#if defined(STREAMCHECK_TSAN_FIBERS)
    if (f->tsan) __tsan_destroy_fiber(f->tsan);
#endif
    // A fiber never started or ended holds no frame; one abandoned in the
    // middle (run() threw before unwinding it) is not reused.
    if (f->stack && (f->done || f->pending.kind == Pending::Kind::Start))
      tls_spare_stacks.push_back(std::move(f->stack));
  }
}

HostScheduler* HostScheduler::current() { return tls_scheduler; }

std::uint32_t HostScheduler::object_index(const void* address) {
  return objects_.try_emplace(address, static_cast<std::uint32_t>(objects_.size())).first->second;
}

void HostScheduler::fiber_entry() {
  HostScheduler* self = tls_starting;
  const std::uint32_t me = tls_starting_thread;
#if defined(STREAMCHECK_ASAN_FIBERS)
  // First entry: learn where run()'s stack is, to switch back to it.
  __sanitizer_finish_switch_fiber(nullptr, &self->loop_->bottom, &self->loop_->size);
#endif
  try {
    (*self->bodies_)[me]();
  } catch (const HostRunAbandoned&) {
    // unwound on purpose: the reason, if any, is already in failure_
  } catch (...) {
    self->abandon(std::current_exception());
  }
  self->fibers_[me]->done = true;
  // A thread that ends holding a lock leaves it held: a later lock of it is
  // then a deadlock, reported as one.
  tls_scheduler = nullptr;
  switch_context(*self->fibers_[me], *self->loop_, true);
}

void HostScheduler::resume(std::uint32_t t) {
  if (last_ran_ != t && on_switch_) on_switch_(t);
  last_ran_ = t;
  running_ = t;
  tls_scheduler = this;
  switch_context(*loop_, *fibers_[t], false);
  tls_scheduler = nullptr;
}

void HostScheduler::yield_to_loop() {
  tls_scheduler = nullptr;
  switch_context(*fibers_[running_], *loop_, false);
  tls_scheduler = this;
}

void HostScheduler::run(std::vector<Body> bodies) {
  const auto n = static_cast<std::uint32_t>(bodies.size());
  if (n == 0) return;
  bodies_ = &bodies;
  loop_ = std::make_unique<Fiber>();
#if defined(STREAMCHECK_TSAN_FIBERS)
  loop_->tsan = __tsan_get_current_fiber();
#endif
  for (std::uint32_t t = 0; t < n; ++t) {
    auto f = std::make_unique<Fiber>();
    f->stack_size = kFiberStack;
    f->stack = take_stack();
    getcontext(&f->context);
    f->context.uc_stack.ss_sp = f->stack.get();
    f->context.uc_stack.ss_size = f->stack_size;
    f->context.uc_link = nullptr;
    makecontext(&f->context, &HostScheduler::fiber_entry, 0);
#if defined(STREAMCHECK_TSAN_FIBERS)
    f->tsan = __tsan_create_fiber(0);
#endif
    fibers_.push_back(std::move(f));
  }
  // Start-up: each thread runs to its first scheduling point, in order.
  for (std::uint32_t t = 0; t < n && !abandoned_; ++t) {
    tls_starting = this;
    tls_starting_thread = t;
    resume(t);
  }
  while (!abandoned_) {
    const auto next = choose_next();
    if (!next) break;
    if (lock_aware_) {
      // The step about to run belongs to every critical section its thread
      // is in (a lock step: the sections around the one it opens).
      Fiber& f = *fibers_[*next];
      Footprint fp = f.pending.kind == Pending::Kind::Step ? f.pending.footprint : Footprint{};
      if (f.pending.kind == Pending::Kind::Lock)
        fp.touch(SharedObject{shared::kMutex, object_index(f.pending.mutex)}, Touch::Write);
      for (Section& section : f.sections) section.footprint.merge(fp);
    }
    resume(*next);
  }
  // Abandoned (a failure, or a sleep-blocked run): every thread not yet
  // ended runs on without switching, and unwinds at its next lock. A thread
  // never started is not started.
  for (std::uint32_t t = 0; t < n; ++t) {
    if (fibers_[t]->done || fibers_[t]->pending.kind == Pending::Kind::Start) continue;
    resume(t);
  }
  for (std::uint32_t t = 0; t < n; ++t)
    if (!fibers_[t]->done && fibers_[t]->pending.kind != Pending::Kind::Start)
      throw std::logic_error("HostScheduler: a host thread did not end after the run was abandoned");
  if (failure_) std::rethrow_exception(failure_);
}

bool HostScheduler::enabled(std::uint32_t t) const {
  const Fiber& f = *fibers_[t];
  if (f.done) return false;
  return f.pending.kind != Pending::Kind::Lock || !owner_of_.contains(f.pending.mutex);
}

void HostScheduler::abandon(std::exception_ptr why) {
  if (!failure_) failure_ = std::move(why);
  abandoned_ = true;
}

std::optional<std::uint32_t> HostScheduler::choose_next() {
  const auto n = static_cast<std::uint32_t>(fibers_.size());
  std::vector<HostStep> steps;
  std::vector<std::uint32_t> who;
  auto offer = [&](std::uint32_t t) {
    const Pending& p = fibers_[t]->pending;
    Footprint fp = p.kind == Pending::Kind::Step ? p.footprint : Footprint{};
    std::optional<std::uint32_t> lock;
    if (p.kind == Pending::Kind::Lock) {
      fp.touch(SharedObject{shared::kMutex, object_index(p.mutex)}, Touch::Write);
      if (lock_aware_) lock = object_index(p.mutex);
    }
    steps.push_back(HostStep{t, std::move(fp), lock});
    who.push_back(t);
  };
  // The thread that stepped last is offered first; the first choice (who
  // goes first once all have started) preempts nobody.
  const bool first_continues = last_ran_ && enabled(*last_ran_) && chosen_before_;
  chosen_before_ = true;
  if (last_ran_ && enabled(*last_ran_)) offer(*last_ran_);
  for (std::uint32_t t = 0; t < n; ++t)
    if (t != last_ran_ && enabled(t)) offer(t);
  if (steps.empty()) {
    for (std::uint32_t t = 0; t < n; ++t)
      if (!fibers_[t]->done) {
        abandon(std::make_exception_ptr(std::runtime_error(deadlock_message())));
        break;
      }
    return std::nullopt;
  }
  try {
    const std::size_t choices_before = chooser_.choice_count();
    const std::uint32_t next = who[chooser_.choose_host_step(steps, first_continues)];
    fibers_[next]->pending_choice.reset();
    if (chooser_.choice_count() > choices_before) fibers_[next]->pending_choice = choices_before;
    if (chooser_.sleep_blocked()) {
      // Every run from here only reorders commuting steps of one explored
      // before: stop it.
      cut_ = true;
      abandoned_ = true;
      return std::nullopt;
    }
    return next;
  } catch (...) {
    abandon(std::current_exception());
    return std::nullopt;
  }
}

void HostScheduler::point(Pending pending) {
  const Pending::Kind kind = pending.kind;
  const void* mutex = pending.mutex;
  if (!abandoned_) {
    fibers_[running_]->pending = std::move(pending);
    yield_to_loop();
  }
  // Steps may be reached from destructors and may not throw; a lock unwinds
  // the body once the run is abandoned.
  if (abandoned_ && kind == Pending::Kind::Lock && std::uncaught_exceptions() == 0) throw HostRunAbandoned{};
  if (kind == Pending::Kind::Lock) {
    owner_of_[mutex] = running_;
    open_section(mutex);
  }
}

void HostScheduler::open_section(const void* mutex) {
  if (!lock_aware_) return;
  Fiber& f = *fibers_[running_];
  f.sections.push_back(Section{mutex, f.pending_choice, {}});
}

void HostScheduler::note_guarded_keyed(const void* mutex) {
  if (!lock_aware_ || abandoned_) return;
  for (Section& section : fibers_[running_]->sections) section.told = section.told || section.mutex == mutex;
}

void HostScheduler::note_guarded(const void* mutex, std::uint64_t key, bool whole, bool write) {
  note_guarded_object(mutex, SharedObject{shared::kGuarded, 0, whole ? 0 : key, whole}, write);
}

void HostScheduler::note_guarded_side(const void* mutex, bool write) {
  note_guarded_object(mutex, SharedObject{shared::kGuardedSide}, write);
}

void HostScheduler::note_guarded_object(const void* mutex, SharedObject object, bool write) {
  if (!lock_aware_ || abandoned_) return;
  object.index = object_index(mutex);
  // Every section the thread is in takes it: the outer ones cover the inner.
  for (Section& section : fibers_[running_]->sections) {
    section.footprint.touch(object, write ? Touch::Write : Touch::Read);
    section.told = section.told || section.mutex == mutex;
  }
}

void HostScheduler::step(Footprint footprint) { point(Pending{Pending::Kind::Step, nullptr, std::move(footprint)}); }

void HostScheduler::lock(const void* mutex) {
  if (auto it = owner_of_.find(mutex); it != owner_of_.end() && it->second == running_)
    throw std::logic_error("host thread " + std::to_string(running_) + " locks mutex #" +
                           std::to_string(object_index(mutex)) + " that it already holds");
  point(Pending{Pending::Kind::Lock, mutex, {}});
}

bool HostScheduler::try_lock(const void* mutex) {
  step(Footprint().touch(SharedObject{shared::kMutex, object_index(mutex)}, Touch::Write));
  if (owner_of_.contains(mutex)) return false;
  owner_of_[mutex] = running_;
  fibers_[running_]->pending_choice.reset();  // a try_lock's section has no lock step of its own
  open_section(mutex);
  return true;
}

// Not a scheduling point: the release is part of the step that began at the
// thread's last point. Only threads waiting for the mutex can tell, and
// they are disabled (not asleep) until it is free; what the thread does
// after the unlock and before its next point is thread-local.
void HostScheduler::unlock(const void* mutex) {
  owner_of_.erase(mutex);
  if (!lock_aware_) return;
  auto& sections = fibers_[running_]->sections;
  for (auto it = sections.rbegin(); it != sections.rend(); ++it) {
    if (it->mutex != mutex) continue;
    Section done = std::move(*it);
    sections.erase(std::next(it).base());
    if (!done.told) {
      // Everything the mutex guards: every entry and the side value.
      for (const SharedObject all : {SharedObject{shared::kGuarded, object_index(mutex)},
                                     SharedObject{shared::kGuardedSide, object_index(mutex)}}) {
        done.footprint.touch(all, Touch::Write);
        for (Section& outer : sections) outer.footprint.touch(all, Touch::Write);
      }
    }
    if (!abandoned_) chooser_.section_ended(running_, object_index(mutex), done.footprint, done.choice);
    return;
  }
}

std::string HostScheduler::deadlock_message() const {
  std::string out = "deadlock: no host thread can step:";
  for (std::uint32_t t = 0; t < fibers_.size(); ++t) {
    const Fiber& f = *fibers_[t];
    if (f.done || f.pending.kind != Pending::Kind::Lock) continue;
    const auto object = objects_.find(f.pending.mutex);
    out += " host thread " + std::to_string(t) + " waits for mutex #" +
           std::to_string(object == objects_.end() ? 0 : object->second);
    if (auto owner = owner_of_.find(f.pending.mutex); owner != owner_of_.end())
      out += " held by host thread " + std::to_string(owner->second) +
             (fibers_[owner->second]->done ? " (which has ended)" : "");
    out += ";";
  }
  out.pop_back();
  return out;
}

}  // namespace streamcheck::sim
