// Host threads as choices (R6, P8): executions per second of the P8
// exploration (props/concurrency_property.h) on the fiber scheduler, and
// what sleep sets save, side by side on the same program; the acceptance
// program within preemption bounds. Counters: executions (runs counted), runs (all runs, the
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

void explore(benchmark::State& state, const ConcurrentProgram& program, bool sleep_sets,
             std::optional<std::uint32_t> bound) {
  props::P8Options options;
  options.sleep_sets = sleep_sets;
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

BENCHMARK_CAPTURE(explore, two_by_three_sleep_sets, two_by_three(), true, std::nullopt)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(explore, two_by_three_naive, two_by_three(), false, std::nullopt)->Unit(benchmark::kMillisecond);
// Under a preemption bound sleep sets are off (Chooser::set_preemption_bound).
BENCHMARK_CAPTURE(explore, two_by_six_bound3, props::two_threads_by_six_calls(), false, 3)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(explore, two_by_six_bound2, props::two_threads_by_six_calls(), false, 2)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace streamcheck::bench

BENCHMARK_MAIN();
