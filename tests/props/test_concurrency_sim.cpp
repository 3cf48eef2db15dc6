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
// thread that could go on; sleep sets are off under a bound). Without a
// bound it has more than 1.1 million executions (docs/DESIGN.md "Host
// threads as choices"). The sanitizer run takes a bound of 2
// (tests/test_scale.h): 4,033 executions instead of 56,352.
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
  EXPECT_EQ(r.executions, acceptance_bound() == 3 ? 56352u : 4033u);  // every run within the bound, none cut
  EXPECT_EQ(r.sleep_blocked, 0u);
}

// Every mutant is caught by the acceptance program within the bound too.
TEST(P8, AcceptanceProgramCatchesEachConcurrencyMutant) {
  P8Options options;
  options.preemption_bound = acceptance_bound();
  EXPECT_TRUE(explore_concurrent<MutantSet<MutantId::M19>>(two_threads_by_six_calls(), options).violation);
  EXPECT_TRUE(explore_concurrent<MutantSet<MutantId::M20>>(two_threads_by_six_calls(), options).violation);
  EXPECT_TRUE(explore_concurrent<MutantSet<MutantId::M21>>(two_threads_by_six_calls(), options).violation);
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
  const ConcurrentProgram program = *gen_program(3);
  P8Options with;
  with.max_runs = 3000;
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
