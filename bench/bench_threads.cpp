// Host threads as choices (R6, P8): executions per second of the P8
// exploration (props/concurrency_property.h) on the fiber scheduler, and
// what sleep sets save -- ordering critical sections by their mutex, or
// lock-aware (DESIGN.md "Lock-aware reduction") -- side by side on the same
// program; the acceptance program with no bound (lock-aware) and within
// preemption bounds. Counters: executions (runs counted), runs (all runs, the
// sleep-blocked ones cut early included), and their rates.
#include <benchmark/benchmark.h>

#include "props/concurrency_property.h"

namespace streamcheck::bench {
namespace {

using props::ConcurrentProgram;
using props::ThreadCall;
using K = ThreadCall::Kind;

/// Two threads, 3 calls each over one shared block (P8's litmus size).
ConcurrentProgram two_by_three() {
  ConcurrentProgram p;
  p.shared_blocks = {256};
  p.threads = {{ThreadCall{K::Allocate, 512, true, 0, Access::Read},
                ThreadCall{K::Deallocate, 0, true, 0, Access::Read}, ThreadCall{}},
               {ThreadCall{K::Use, 0, true, 0, Access::Write}, ThreadCall{K::Deallocate, 0, true, 0, Access::Read},
                ThreadCall{}}};
  return p;
}

/// The acceptance program cut to its first `calls` calls per thread.
ConcurrentProgram acceptance_prefix(std::size_t calls) {
  ConcurrentProgram p = props::two_threads_by_six_calls();
  for (auto& thread : p.threads) thread.resize(calls);
  return p;
}

enum class Reduction { None, MutexOrdered, LockAware };

void explore(benchmark::State& state, const ConcurrentProgram& program, Reduction reduction,
             std::optional<std::uint32_t> bound) {
  props::P8Options options;
  options.sleep_sets = reduction != Reduction::None;
  options.lock_aware = reduction == Reduction::LockAware;
  options.preemption_bound = bound;
  options.max_runs = 10'000'000;
  std::uint64_t executions = 0, runs = 0;
  for (auto _ : state) {
    const props::P8Result r = props::explore_concurrent<CorrectProtocol>(program, options);
    if (r.violation || !r.exhaustive) state.SkipWithError("the correct core violated P8, or the run cap was hit");
    executions += r.executions;
    runs += r.executions + r.sleep_blocked;
  }
  state.counters["executions"] = benchmark::Counter(static_cast<double>(executions) / state.iterations());
  state.counters["runs"] = benchmark::Counter(static_cast<double>(runs) / state.iterations());
  state.counters["executions/s"] = benchmark::Counter(static_cast<double>(executions), benchmark::Counter::kIsRate);
  state.counters["runs/s"] = benchmark::Counter(static_cast<double>(runs), benchmark::Counter::kIsRate);
}

constexpr auto kMs = benchmark::kMillisecond;
BENCHMARK_CAPTURE(explore, two_by_three_sleep_sets_lock_aware, two_by_three(), Reduction::LockAware, std::nullopt)
    ->Unit(kMs);
BENCHMARK_CAPTURE(explore, two_by_three_sleep_sets_mutex_ordered, two_by_three(), Reduction::MutexOrdered, std::nullopt)
    ->Unit(kMs);
BENCHMARK_CAPTURE(explore, two_by_three_naive, two_by_three(), Reduction::None, std::nullopt)->Unit(kMs);
BENCHMARK_CAPTURE(explore, acceptance_4_calls_lock_aware, acceptance_prefix(4), Reduction::LockAware, std::nullopt)
    ->Unit(kMs);
BENCHMARK_CAPTURE(explore, acceptance_4_calls_mutex_ordered, acceptance_prefix(4), Reduction::MutexOrdered,
                  std::nullopt)
    ->Unit(kMs);
BENCHMARK_CAPTURE(explore, acceptance_6_calls_lock_aware, acceptance_prefix(6), Reduction::LockAware, std::nullopt)
    ->Unit(kMs);
// Under a preemption bound sleep sets are off (Chooser::set_preemption_bound).
BENCHMARK_CAPTURE(explore, acceptance_6_calls_bound3, acceptance_prefix(6), Reduction::None, 3)->Unit(kMs);
BENCHMARK_CAPTURE(explore, acceptance_6_calls_bound2, acceptance_prefix(6), Reduction::None, 2)->Unit(kMs);

}  // namespace
}  // namespace streamcheck::bench

BENCHMARK_MAIN();
