// P8 concurrency (SPEC §4): the resource core called from 2-4 host threads,
// every interleaving of its lock, unlock, atomic and backend steps explored
// on the simulator (props/concurrency_property.h), and the concurrency
// mutants M19-M21 killed by it.
//
// STREAMCHECK_P8_RUNS caps the runs per generated program (default 2000).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "props/concurrency_property.h"
#include "tests/test_scale.h"

namespace streamcheck::props {
namespace {

using Kind = ThreadCall::Kind;

ThreadCall allocate(std::size_t bytes) { return ThreadCall{Kind::Allocate, bytes, true, 0, Access::Read}; }
ThreadCall use_shared(std::uint32_t b, Access a) { return ThreadCall{Kind::Use, 0, true, b, a}; }
ThreadCall free_shared(std::uint32_t b) { return ThreadCall{Kind::Deallocate, 0, true, b, Access::Read}; }
ThreadCall reap() { return ThreadCall{}; }

std::uint64_t runs_per_program() {
  if (const char* v = std::getenv("STREAMCHECK_P8_RUNS")) return std::strtoull(v, nullptr, 10);
  return 2000;
}

rc::Gen<ThreadCall> gen_call() {
  return rc::gen::build<ThreadCall>(
      rc::gen::set(&ThreadCall::kind,
                   rc::gen::weightedElement<Kind>(
                       {{3, Kind::Deallocate}, {2, Kind::Allocate}, {2, Kind::Use}, {2, Kind::Reap}})),
      rc::gen::set(&ThreadCall::bytes, rc::gen::element<std::size_t>(256, 512, 4096)),
      rc::gen::set(&ThreadCall::shared, rc::gen::arbitrary<bool>()),
      rc::gen::set(&ThreadCall::block, rc::gen::inRange<std::uint32_t>(0, 2)),
      rc::gen::set(&ThreadCall::access, rc::gen::element(Access::Read, Access::Write, Access::ReadWrite)));
}

/// A vector of lo..hi-1 elements of `gen` (shrinking drops and simplifies
/// elements).
template <class T>
rc::Gen<std::vector<T>> vector_of(std::size_t lo, std::size_t hi, rc::Gen<T> gen) {
  return rc::gen::mapcat(rc::gen::inRange<std::size_t>(lo, hi),
                         [gen](std::size_t n) { return rc::gen::container<std::vector<T>>(n, gen); });
}

/// 2-3 threads of 1 to `max_calls` calls over 0-2 shared blocks: small
/// enough that the exploration of each program usually finishes within the
/// run cap.
rc::Gen<ConcurrentProgram> gen_program(std::size_t max_calls = 4) {
  return rc::gen::build<ConcurrentProgram>(
      rc::gen::set(&ConcurrentProgram::shared_blocks,
                   vector_of<std::size_t>(0, 3, rc::gen::element<std::size_t>(256, 1024))),
      rc::gen::set(&ConcurrentProgram::threads,
                   vector_of<std::vector<ThreadCall>>(2, 4, vector_of(1, max_calls + 1, gen_call()))));
}

/// The property: no P8 violation in any explored execution. A failure
/// prints the program, the violation and the schedule that replays it.
template <class P>
void check_p8(const ConcurrentProgram& program) {
  P8Options options;
  options.max_runs = runs_per_program();
  const P8Result r = explore_concurrent<P>(program, options);
  if (r.violation)
    RC_FAIL(show(program) + r.violation.value() + "\nafter " + std::to_string(r.executions) + " executions; schedule " +
            r.schedule);
}

RC_GTEST_PROP(P8, CorrectCoreKeepsP8OnGeneratedPrograms, ()) { check_p8<CorrectProtocol>(*gen_program()); }

// The acceptance program (two_threads_by_six_calls) explored exhaustively
// within a preemption bound of 3 (CHESS: at most 3 switches away from a
// thread that could go on; sleep sets are off under a bound, so this is
// every schedule within it). The sanitizer run takes a bound of 2
// (tests/test_scale.h): 2,260 executions instead of 24,649.
std::size_t acceptance_bound() { return tests::sanitizer_scale() ? 2 : 3; }

TEST(P8, CorrectCoreExhaustiveTwoThreadsBySixCallsWithinThreePreemptions) {
  P8Options options;
  options.max_runs = 1'000'000;
  options.preemption_bound = acceptance_bound();
  const P8Result r = explore_concurrent<CorrectProtocol>(two_threads_by_six_calls(), options);
  std::cout << "2 threads x 6 calls, at most " << acceptance_bound() << " preemptions: " << r.executions
            << " executions, " << r.sleep_blocked
            << " sleep-blocked runs, exhaustive: " << (r.exhaustive ? "yes" : "no") << "\n";
  EXPECT_FALSE(r.violation) << *r.violation << "\nschedule " << r.schedule;
  EXPECT_TRUE(r.exhaustive);
  EXPECT_EQ(r.executions, acceptance_bound() == 3 ? 24649u : 2260u);  // every run within the bound, none cut
  EXPECT_EQ(r.sleep_blocked, 0u);
}

// The acceptance program explored exhaustively with no bound, by
// lock-aware sleep sets (docs/DESIGN.md "Lock-aware reduction"): the two
// threads' critical sections on the block map are run in both orders only
// where they touch one block or the pending tally (the map's side value), or
// their backend steps conflict. With the mutex ordering every pair of
// sections, the exploration had not finished after 1.1 million executions.
// The sanitizer run explores the program cut to 5 calls per thread.
TEST(P8, CorrectCoreExhaustiveTwoThreadsBySixCallsLockAware) {
  ConcurrentProgram program = two_threads_by_six_calls();
  const std::size_t calls = tests::sanitizer_scale() ? 5 : 6;
  for (auto& thread : program.threads) thread.resize(calls);
  P8Options options;
  options.max_runs = 1'000'000;
  const P8Result r = explore_concurrent<CorrectProtocol>(program, options);
  std::cout << "2 threads x " << calls << " calls, lock-aware, no bound: " << r.executions << " executions, "
            << r.sleep_blocked << " sleep-blocked runs, exhaustive: " << (r.exhaustive ? "yes" : "no") << "\n";
  EXPECT_FALSE(r.violation) << *r.violation << "\nschedule " << r.schedule;
  EXPECT_TRUE(r.exhaustive);
  EXPECT_EQ(r.executions, calls == 6 ? 28113u : 1327u);
}

// Every mutant is caught by the acceptance program within the bound, and
// with no bound by the lock-aware exploration (M21 after 9,211
// executions; not in the sanitizer run, where that alone takes minutes).
TEST(P8, AcceptanceProgramCatchesEachConcurrencyMutant) {
  P8Options bounded;
  bounded.preemption_bound = acceptance_bound();
  P8Options lock_aware;
  lock_aware.max_runs = 1'000'000;
  std::vector<P8Options> explorations{bounded};
  if (!tests::sanitizer_scale()) explorations.push_back(lock_aware);
  for (const P8Options& options : explorations) {
    EXPECT_TRUE(explore_concurrent<MutantSet<MutantId::M19>>(two_threads_by_six_calls(), options).violation);
    EXPECT_TRUE(explore_concurrent<MutantSet<MutantId::M20>>(two_threads_by_six_calls(), options).violation);
    EXPECT_TRUE(explore_concurrent<MutantSet<MutantId::M21>>(two_threads_by_six_calls(), options).violation);
  }
}

// Two threads x 3 calls, no bound: exhaustive.
TEST(P8, CorrectCoreExhaustiveTwoThreadsByThreeCalls) {
  ConcurrentProgram p;
  p.shared_blocks = {256};
  p.threads = {{allocate(512), free_shared(0), reap()}, {use_shared(0, Access::Write), free_shared(0), reap()}};
  const P8Result r = explore_concurrent<CorrectProtocol>(p, P8Options{});
  std::cout << "2 threads x 3 calls: " << r.executions << " executions, exhaustive " << (r.exhaustive ? "yes" : "no")
            << "\n";
  EXPECT_FALSE(r.violation) << *r.violation;
  EXPECT_TRUE(r.exhaustive);
}

// P-rerecord under two threads: each uses shared b0 twice the same way on
// its own stream, so every second finish re-records its stream's event in
// place under the block lock, while the other thread's prepare waits on it,
// its finish re-records its own, or its deallocate retires the events.
// Exhaustive and clean: no schedule deadlocks on the lock the finish now
// holds across its record, and P8's invariants hold in every one. (That
// only the same stream's event is re-recorded is the protocol properties'
// to check: ProtocolSim fails when a read re-records another stream's.)
TEST(P8, RerecordedEventsUnderTwoThreads) {
  ConcurrentProgram p;
  p.shared_blocks = {256};
  p.threads = {{use_shared(0, Access::Read), use_shared(0, Access::Read), use_shared(0, Access::Write),
                use_shared(0, Access::Write), free_shared(0)},
               {use_shared(0, Access::Read), use_shared(0, Access::Read), free_shared(0), reap()}};
  // Under ASan + UBSan one write fewer (tests/test_scale.h): the same
  // re-records, a few minutes less of schedules; the full program runs in
  // the default suite.
  if (tests::sanitizer_scale()) p.threads[0].erase(p.threads[0].begin() + 3);
  P8Options options;
  options.max_runs = 200'000;
  const P8Result r = explore_concurrent<CorrectProtocol>(p, options);
  std::cout << "re-records, 2 threads: " << r.executions << " executions, exhaustive " << (r.exhaustive ? "yes" : "no")
            << "\n";
  EXPECT_FALSE(r.violation) << show(p) << *r.violation << "\nschedule " << r.schedule;
  EXPECT_TRUE(r.exhaustive);
}

// Three and four host threads: exhaustive on small programs.
TEST(P8, CorrectCoreExhaustiveThreeAndFourThreads) {
  ConcurrentProgram three;
  three.shared_blocks = {256};
  three.threads = {{free_shared(0), reap()}, {use_shared(0, Access::Write), allocate(256)}, {free_shared(0)}};
  ConcurrentProgram four;
  four.shared_blocks = {256};
  four.threads = {{free_shared(0)}, {free_shared(0)}, {use_shared(0, Access::Write)}, {allocate(256)}};
  for (const ConcurrentProgram& p : {three, four}) {
    P8Options options;
    options.max_runs = 200'000;
    const P8Result r = explore_concurrent<CorrectProtocol>(p, options);
    std::cout << p.threads.size() << " threads: " << r.executions << " executions, exhaustive "
              << (r.exhaustive ? "yes" : "no") << "\n";
    EXPECT_FALSE(r.violation) << show(p) << *r.violation;
    EXPECT_TRUE(r.exhaustive);
  }
}

// A violation's schedule replays exactly: the same violation again.
TEST(P8, ViolationScheduleReplays) {
  using M21 = MutantSet<MutantId::M21>;
  ConcurrentProgram p;
  p.shared_blocks = {256};
  p.threads = {{free_shared(0)}, {free_shared(0)}};
  const P8Result r = explore_concurrent<M21>(p);
  ASSERT_TRUE(r.violation);
  sim::ReplayChooser replay(r.schedule, sim::ReplayChooser::PastTheEnd::Refuse);
  EXPECT_EQ(run_concurrent<M21>(p, replay), r.violation);
}

// Sleep sets change how many runs an exploration makes, never its verdict
// or the outcomes it reaches: on generated programs, the exploration with
// and without them agrees on whether a mutant is caught.
RC_GTEST_PROP(P8, SleepSetsKeepTheVerdict, ()) {
  const ConcurrentProgram program = *gen_program(tests::sanitizer_scale() ? 2 : 3);
  P8Options with;
  with.max_runs = tests::sanitizer_scale() ? 1000 : 3000;
  P8Options without = with;
  without.sleep_sets = false;
  using M19 = MutantSet<MutantId::M19>;
  const P8Result a = explore_concurrent<M19>(program, with);
  const P8Result b = explore_concurrent<M19>(program, without);
  RC_PRE(a.exhaustive || a.violation);
  RC_PRE(b.exhaustive || b.violation);
  RC_ASSERT(a.violation.has_value() == b.violation.has_value());
  RC_ASSERT(a.executions + a.sleep_blocked <= b.executions + b.sleep_blocked || a.violation);
}

// Lock-aware sleep sets reach exactly the outcomes (which calls succeeded,
// which blocks each thread holds, the device's live ranges) that sleep sets
// ordering every pair of critical sections reach, on generated programs
// whose explorations both finish; and those that the exploration of every
// interleaving reaches, on programs small enough for it. The reduction only
// drops runs that reorder commuting sections. (It is not minimal: waking a
// thread asleep before a lock whenever another thread could take a step its
// section conflicts with can keep a run that the mutex order had pruned, so
// on a rare small program it makes a run or two more.)
// Programs whose explorations exceed the cap are discarded (RC_PRE); the
// sanitizer run takes a lower cap and programs of a call less.
P8Result outcomes_of(const ConcurrentProgram& program, bool sleep_sets, bool lock_aware) {
  P8Options options;
  options.max_runs = tests::sanitizer_scale() ? 1000 : 20000;
  options.sleep_sets = sleep_sets;
  options.lock_aware = lock_aware;
  options.collect_outcomes = true;
  return explore_concurrent<CorrectProtocol>(program, options);
}

RC_GTEST_PROP(P8, LockAwareReachesEveryOutcomeOfMutexOrderedSleepSets, ()) {
  const ConcurrentProgram program = *gen_program(tests::sanitizer_scale() ? 3 : 4);
  const P8Result lock_aware = outcomes_of(program, true, true);
  const P8Result mutex_ordered = outcomes_of(program, true, false);
  RC_PRE(lock_aware.exhaustive && mutex_ordered.exhaustive);
  RC_ASSERT(!lock_aware.violation && !mutex_ordered.violation);
  RC_ASSERT(lock_aware.outcomes == mutex_ordered.outcomes);
}

RC_GTEST_PROP(P8, LockAwareReachesEveryOutcomeOfEveryInterleaving, ()) {
  const ConcurrentProgram program = *gen_program(tests::sanitizer_scale() ? 2 : 3);
  const P8Result lock_aware = outcomes_of(program, true, true);
  const P8Result every = outcomes_of(program, false, false);
  RC_PRE(lock_aware.exhaustive && every.exhaustive);
  RC_ASSERT(!lock_aware.violation && !every.violation);
  RC_ASSERT(lock_aware.outcomes == every.outcomes);
}

// The concurrency mutants (model/mutants.h): P8 on generated programs must
// fail against each. A test passes only when RapidCheck finds (and prints)
// a counterexample.
template <class P>
void expect_killed(const char* id) {
  const bool survived = rc::check(std::string("P8 against ") + id, [] { check_p8<P>(*gen_program()); });
  EXPECT_FALSE(survived) << id << " survived P8";
}

TEST(P8Mutant, M19) { expect_killed<MutantSet<MutantId::M19>>("M19"); }
TEST(P8Mutant, M20) { expect_killed<MutantSet<MutantId::M20>>("M20"); }
TEST(P8Mutant, M21) { expect_killed<MutantSet<MutantId::M21>>("M21"); }

}  // namespace
}  // namespace streamcheck::props
