// Host threads as choices (R6): the cooperative scheduler and sleep sets.
// Litmus programs over SchedMutex / SchedAtomic with their exact execution
// counts under depth-first exploration, each with its reasoning.
#include "backend_sim/host_scheduler.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backend_sim/schedule.h"
#include "model/guarded.h"

namespace streamcheck::sim {
namespace {

struct Counts {
  std::uint64_t executions = 0;
  std::uint64_t blocked = 0;
  std::set<std::string> outcomes;
};

/// Explores every execution of the program `make` builds (called once per
/// run: fresh shared state), collecting what `outcome` says at the end.
Counts explore(const std::function<std::vector<HostScheduler::Body>(std::function<std::string()>&)>& make,
               bool sleep_sets, std::optional<std::uint32_t> preemption_bound = std::nullopt, bool lock_aware = false) {
  Counts c;
  DfsEnumerator dfs;
  while (!dfs.done()) {
    auto chooser = dfs.next_run();
    if (sleep_sets) chooser.enable_sleep_sets();
    chooser.set_preemption_bound(preemption_bound);
    std::function<std::string()> outcome;
    auto bodies = make(outcome);
    HostScheduler s(chooser);
    s.set_lock_aware(lock_aware);
    s.run(std::move(bodies));
    if (chooser.counted()) {
      ++c.executions;
      c.outcomes.insert(outcome());
    } else {
      ++c.blocked;
    }
    dfs.finished(chooser);
  }
  return c;
}

/// Two threads, each `x = x + 1` as a load then a store on one atomic; the
/// outcome is x.
std::vector<HostScheduler::Body> lost_update_program(std::function<std::string()>& outcome) {
  struct State {
    SchedAtomic<int> x{0};
  };
  auto st = std::make_shared<State>();
  outcome = [st] { return std::to_string(st->x.load()); };
  auto inc = [st] { st->x.store(st->x.load() + 1); };
  return {inc, inc};
}

// Two threads, each `x = x + 1` as a load then a store on one atomic.
// Steps per thread: load, store (each a scheduling point). Without
// reduction the runs are the interleavings of two sequences of two,
// C(4,2) = 6. The two loads commute (reads), so L0 L1 S0 S1 and
// L1 L0 S0 S1 are one execution, as are L0 L1 S1 S0 and L1 L0 S1 S0:
// sleep sets leave 4 (the Mazurkiewicz traces). Outcomes: 2 when one
// thread's load follows the other's store, else 1 (the lost update).
TEST(HostSchedulerLitmus, LostUpdateSixExecutionsBothOutcomes) {
  const auto make = lost_update_program;
  const Counts naive = explore(make, false);
  EXPECT_EQ(naive.executions, 6u);
  EXPECT_EQ(naive.outcomes, (std::set<std::string>{"1", "2"}));
  const Counts reduced = explore(make, true);
  EXPECT_EQ(reduced.executions, 4u);
  EXPECT_EQ(reduced.outcomes, (std::set<std::string>{"1", "2"}));
}

// Two threads each storing to their own atomic, twice. Without reduction:
// C(4,2) = 6 interleavings. The steps of different threads touch different
// objects and all commute: with sleep sets, one execution, and the other
// five runs are cut where every enabled thread sleeps.
TEST(HostSchedulerLitmus, IndependentThreadsOneExecutionWithSleepSets) {
  struct State {
    SchedAtomic<int> a{0};
    SchedAtomic<int> b{0};
  };
  auto make = [](std::function<std::string()>& outcome) {
    auto st = std::make_shared<State>();
    outcome = [st] { return std::to_string(st->a.load()) + "," + std::to_string(st->b.load()); };
    return std::vector<HostScheduler::Body>{[st] { st->a.store(1), st->a.store(2); },
                                            [st] { st->b.store(1), st->b.store(2); }};
  };
  const Counts naive = explore(make, false);
  EXPECT_EQ(naive.executions, 6u);
  const Counts reduced = explore(make, true);
  EXPECT_EQ(reduced.executions, 1u);
  EXPECT_EQ(reduced.outcomes, (std::set<std::string>{"2,2"}));
}

// Two threads each `lock m; x = x + 1 (load, store); unlock m`. A thread
// cannot lock while the other holds m, so the critical sections never
// overlap: only the order in which they run differs. Each thread's steps
// are lock, load, store, unlock; once a thread holds m the other may still
// be scheduled only while its next step is its lock... which is disabled.
// So the executions are exactly the 2 orders of the critical sections, and
// x is always 2 (no lost update under the lock).
TEST(HostSchedulerLitmus, MutexOrdersCriticalSectionsTwoExecutions) {
  struct State {
    SchedMutex m;
    SchedAtomic<int> x{0};
  };
  auto make = [](std::function<std::string()>& outcome) {
    auto st = std::make_shared<State>();
    outcome = [st] { return std::to_string(st->x.load()); };
    auto inc = [st] {
      std::lock_guard<SchedMutex> g(st->m);
      st->x.store(st->x.load() + 1);
    };
    return std::vector<HostScheduler::Body>{inc, inc};
  };
  for (bool sleep : {false, true}) {
    const Counts c = explore(make, sleep);
    EXPECT_EQ(c.executions, 2u) << "sleep sets " << sleep;
    EXPECT_EQ(c.outcomes, std::set<std::string>{"2"});
  }
}

// Lock-aware sleep sets (HostScheduler::set_lock_aware): two threads each
// lock one GuardedMap and write an entry. Ordered by the mutex, the two
// critical sections are 2 executions; lock-aware, sections on different
// entries commute (1 execution), sections on the same entry do not (2, and
// the last writer decides: 2 outcomes).
TEST(HostSchedulerLitmus, LockAwareSectionsOnDifferentEntriesCommute) {
  struct State {
    GuardedMap<std::map<int, int>, SchedMutex> map;
  };
  auto program = [](int key_a, int key_b) {
    return [key_a, key_b](std::function<std::string()>& outcome) {
      auto st = std::make_shared<State>();
      outcome = [st] {
        std::string out;
        for (const auto& [k, v] : st->map.lock().all()) out += std::to_string(k) + "=" + std::to_string(v) + " ";
        return out;
      };
      return std::vector<HostScheduler::Body>{[st, key_a] { st->map.lock()[key_a] = 1; },
                                              [st, key_b] { st->map.lock()[key_b] = 2; }};
    };
  };
  EXPECT_EQ(explore(program(1, 2), true).executions, 2u);
  const Counts different = explore(program(1, 2), true, std::nullopt, true);
  EXPECT_EQ(different.executions, 1u);
  EXPECT_EQ(different.outcomes, std::set<std::string>{"1=1 2=2 "});
  const Counts same = explore(program(1, 1), true, std::nullopt, true);
  EXPECT_EQ(same.executions, 2u);
  EXPECT_EQ(same.outcomes, (std::set<std::string>{"1=1 ", "1=2 "}));
}

// A GuardedMap's side value (the resource's pending tally beside its live
// blocks) is one more thing its mutex guards, apart from the entries:
// lock-aware, a section on an entry commutes with a section on the side
// alone (1 execution), and so does a section over every entry (`all`); two
// sections that both change the side do not (side = 2 * side + id, from 0:
// id 1 first gives 4, id 2 first 5).
TEST(HostSchedulerLitmus, LockAwareSideValueIsApartFromTheEntries) {
  struct State {
    GuardedMap<std::map<int, int>, SchedMutex, int> map;
  };
  using Section = std::function<void(State&)>;
  auto program = [](Section a, Section b) {
    return [a, b](std::function<std::string()>& outcome) {
      auto st = std::make_shared<State>();
      outcome = [st] { return std::to_string(st->map.lock().side()); };
      return std::vector<HostScheduler::Body>{[st, a] { a(*st); }, [st, b] { b(*st); }};
    };
  };
  const Section write_entry = [](State& st) { st.map.lock()[1] = 1; };
  const Section read_all = [](State& st) { (void)st.map.lock().all().size(); };
  auto write_side = [](int id) {
    return Section([id](State& st) {
      auto m = st.map.lock();
      m.side_for_update() = 2 * m.side() + id;
    });
  };
  EXPECT_EQ(explore(program(write_entry, write_side(1)), true).executions, 2u);  // ordered by the mutex
  EXPECT_EQ(explore(program(write_entry, write_side(1)), true, std::nullopt, true).executions, 1u);
  EXPECT_EQ(explore(program(read_all, write_side(1)), true, std::nullopt, true).executions, 1u);
  const Counts both = explore(program(write_side(1), write_side(2)), true, std::nullopt, true);
  EXPECT_EQ(both.executions, 2u);
  EXPECT_EQ(both.outcomes, (std::set<std::string>{"4", "5"}));
}

// A section that does not say what it touches (a bare lock_guard over
// plain data) is taken as writing all the mutex guards: lock-aware, the
// two orders of `x = 2x + id` under the lock are still 2 executions with 2
// outcomes: from x = 0, id 1 first gives 2*(2*0+1)+2 = 4, id 2 first
// 2*(2*0+2)+1 = 5.
TEST(HostSchedulerLitmus, LockAwareSectionThatSaysNothingTouchesAll) {
  struct State {
    SchedMutex m;
    int x = 0;  // guarded by m, which is told nothing of it
  };
  auto make = [](std::function<std::string()>& outcome) {
    auto st = std::make_shared<State>();
    outcome = [st] { return std::to_string(st->x); };
    auto body = [st](int id) {
      return [st, id] {
        std::lock_guard<SchedMutex> g(st->m);
        st->x = 2 * st->x + id;
      };
    };
    return std::vector<HostScheduler::Body>{body(1), body(2)};
  };
  const Counts c = explore(make, true, std::nullopt, true);
  EXPECT_EQ(c.executions, 2u);
  EXPECT_EQ(c.outcomes, (std::set<std::string>{"4", "5"}));
}

// Why a thread asleep before a lock wakes when another thread could take a
// step its critical section conflicts with. Thread 0: lock m, write entry
// 2, unlock; then read x. Thread 1: lock m, write entry 1, store x = 1,
// store x = 2, unlock. Thread 1 is offered first (it started last).
// Every interleaving: thread 1's section first, then thread 0 (x = 2): 1;
// thread 0's section first, then its load among thread 1's lock and two
// stores (4 places: x = 0, 0, 1, 2): 4. So 5 runs, outcomes 0, 1, 2.
// Sleep sets ordering the sections by the mutex merge the load before and
// after thread 1's lock: 4. Lock-aware: thread 1 sleeps while thread 0's
// section runs (the sections touch different entries); then thread 0's
// load conflicts with what thread 1's section touches (x), so thread 1
// wakes before it, and its lock is tried there: 1 run with thread 1 first,
// then load first (x = 0), load after the first store (1) and after the
// second (2): 4 runs. Kept asleep until the load had run, thread 1 could
// never lock before it: 2 runs, and outcome 1 -- the load between the two
// stores -- would be lost.
TEST(HostSchedulerLitmus, LockAwareWakesASleeperBeforeAStepInsideItsSection) {
  struct State {
    GuardedMap<std::map<int, int>, SchedMutex> map;
    SchedAtomic<int> x{0};
    int seen = -1;
  };
  auto make = [](std::function<std::string()>& outcome) {
    auto st = std::make_shared<State>();
    outcome = [st] { return std::to_string(st->seen); };
    return std::vector<HostScheduler::Body>{[st] {
                                              st->map.lock()[2] = 1;
                                              st->seen = st->x.load();
                                            },
                                            [st] {
                                              auto entries = st->map.lock();
                                              entries[1] = 1;
                                              st->x.store(1);
                                              st->x.store(2);
                                            }};
  };
  const std::set<std::string> all{"0", "1", "2"};
  const Counts naive = explore(make, false);
  EXPECT_EQ(naive.executions, 5u);
  EXPECT_EQ(naive.outcomes, all);
  EXPECT_EQ(explore(make, true).executions, 4u);
  const Counts lock_aware = explore(make, true, std::nullopt, true);
  EXPECT_EQ(lock_aware.executions, 4u);
  EXPECT_EQ(lock_aware.outcomes, all);
}

// Three threads, one store each to the same atomic: every order is an
// execution, 3! = 6, and the last writer decides the outcome (3 outcomes).
TEST(HostSchedulerLitmus, ThreeWritersSixExecutions) {
  struct State {
    SchedAtomic<int> x{0};
  };
  auto make = [](std::function<std::string()>& outcome) {
    auto st = std::make_shared<State>();
    outcome = [st] { return std::to_string(st->x.load()); };
    std::vector<HostScheduler::Body> bodies;
    for (int v = 1; v <= 3; ++v) bodies.emplace_back([st, v] { st->x.store(v); });
    return bodies;
  };
  const Counts c = explore(make, true);
  EXPECT_EQ(c.executions, 6u);
  EXPECT_EQ(c.outcomes, (std::set<std::string>{"1", "2", "3"}));
}

// Reads commute with reads: two threads each loading x twice have one
// execution with sleep sets (C(4,2) = 6 without).
TEST(HostSchedulerLitmus, ReadersCommute) {
  struct State {
    SchedAtomic<int> x{7};
  };
  auto make = [](std::function<std::string()>& outcome) {
    auto st = std::make_shared<State>();
    outcome = [] { return std::string("7"); };
    auto read = [st] { (void)(st->x.load() + st->x.load()); };
    return std::vector<HostScheduler::Body>{read, read};
  };
  EXPECT_EQ(explore(make, false).executions, 6u);
  EXPECT_EQ(explore(make, true).executions, 1u);
}

// A preemption bound of 0 leaves only the schedules in which a thread runs
// until it ends or blocks: for the lost-update program, the two serial
// orders (x = 2 both times); bound 1 adds L0 L1 S1 S0 and L1 L0 S0 S1
// (one switch away from a thread that could go on, then the other runs to
// its end): 4 runs, and the lost update is among them. The first choice,
// once every thread has started, is no preemption.
TEST(HostSchedulerLitmus, PreemptionBound) {
  const auto make = lost_update_program;
  const Counts none = explore(make, false, 0);
  EXPECT_EQ(none.executions, 2u);
  EXPECT_EQ(none.outcomes, std::set<std::string>{"2"});
  const Counts one = explore(make, false, 1);
  EXPECT_EQ(one.executions, 4u);
  EXPECT_EQ(one.outcomes, (std::set<std::string>{"1", "2"}));
}

// Locks taken in opposite orders deadlock in some schedule: the run then
// throws, naming the threads and the mutexes they wait for.
TEST(HostScheduler, DeadlockIsReportedNotHung) {
  bool saw_deadlock = false;
  DfsEnumerator dfs;
  while (!dfs.done()) {
    auto chooser = dfs.next_run();
    SchedMutex a, b;
    HostScheduler s(chooser);
    try {
      s.run({[&] {
               std::lock_guard<SchedMutex> ga(a);
               std::lock_guard<SchedMutex> gb(b);
             },
             [&] {
               std::lock_guard<SchedMutex> gb(b);
               std::lock_guard<SchedMutex> ga(a);
             }});
    } catch (const std::runtime_error& e) {
      saw_deadlock = true;
      EXPECT_NE(std::string(e.what()).find("deadlock"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("waits for mutex"), std::string::npos) << e.what();
    }
    dfs.finished(chooser);
  }
  EXPECT_TRUE(saw_deadlock);
}

// A body's exception ends the run and comes out of run(); the other
// threads unwind at their next lock.
TEST(HostScheduler, BodyExceptionPropagates) {
  ReplayChooser chooser(std::vector<std::uint32_t>{});
  SchedMutex m;
  HostScheduler s(chooser);
  EXPECT_THROW(s.run({[] { throw std::invalid_argument("boom"); },
                      [&] {
                        for (int i = 0; i < 3; ++i) std::lock_guard<SchedMutex> g(m);
                      }}),
               std::invalid_argument);
}

// Outside a scheduler the Sched types are plain: a mutex excludes real
// threads (no scheduler current, no choices made).
TEST(HostScheduler, PlainOutsideAScheduler) {
  EXPECT_EQ(HostScheduler::current(), nullptr);
  SchedMutex m;
  SchedAtomic<std::size_t> n{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        std::lock_guard<SchedMutex> g(m);
        n.store(n.load() + 1);
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(n.load(), 4000u);
}

}  // namespace
}  // namespace streamcheck::sim
