// Exploration rates (SPEC §8): schedules per second on the litmus examples,
// seeded random and exhaustive DFS, side by side; and how many schedules DFS
// needs against naive enumeration of every interleaving that keeps only
// stream order (R1): (Σ n_s)! / Π n_s! for n_s device ops on stream s.
//
// Reads the examples from $STREAMCHECK_EXAMPLES (default: ./examples).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "tools/trace.h"
#include "tools/trace_check.h"

namespace streamcheck::bench {
namespace {

tools::Trace load(const std::string& name) {
  const char* dir = std::getenv("STREAMCHECK_EXAMPLES");
  const std::string path = std::string(dir ? dir : "examples") + "/" + name + ".trace";
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("bench_explore: cannot read " + path +
                             "; run from the repository root or set STREAMCHECK_EXAMPLES to the examples/ folder");
  std::stringstream text;
  text << in.rdbuf();
  return tools::parse_trace(text.str(), path);
}

/// log10 of the number of interleavings that keep only stream order.
double log10_naive_interleavings(const tools::Trace& trace) {
  const tools::HeldRun held = tools::run_one(trace, {});
  const sim::DeviceModel& m = held.run->model();
  double total = 0, log_fact_parts = 0;
  for (std::uint32_t s = 0; s < m.stream_count(); ++s) {
    total += m.op_count(sim::StreamIndex{s});
    log_fact_parts += std::lgamma(m.op_count(sim::StreamIndex{s}) + 1.0);
  }
  return (std::lgamma(total + 1.0) - log_fact_parts) / std::log(10.0);
}

void explore(benchmark::State& state, const std::string& name, tools::Strategy strategy) {
  const tools::Trace trace = load(name);
  tools::TraceCheckOptions options;
  options.strategy = strategy;
  options.max_schedules = strategy == tools::Strategy::Dfs ? 1'000'000 : 2000;
  std::uint64_t schedules = 0;
  bool exhaustive = false;
  for (auto _ : state) {
    const tools::Report report = tools::explore_trace(trace, options);
    schedules += report.coverage.explored;
    exhaustive = report.coverage.exhaustive;
    benchmark::DoNotOptimize(report.findings.size());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(schedules));
  state.counters["schedules"] = static_cast<double>(schedules) / static_cast<double>(state.iterations());
  if (strategy == tools::Strategy::Dfs) {
    state.counters["exhaustive"] = exhaustive ? 1 : 0;
    state.counters["log10_naive"] = log10_naive_interleavings(trace);
  }
}

constexpr const char* kLitmus[] = {"01_missing_wait",   "03_rerecorded_event", "05_opportunistic_reuse", "08_pipeline",
                                   "09_resource_clean", "15_host_sync",        "19_partial_overlap"};

int register_all() {
  for (const char* name : kLitmus) {
    benchmark::RegisterBenchmark((std::string("BM_ExploreRandom/") + name).c_str(), [name](benchmark::State& s) {
      explore(s, name, tools::Strategy::Random);
    })->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("BM_ExploreDfs/") + name).c_str(), [name](benchmark::State& s) {
      explore(s, name, tools::Strategy::Dfs);
    })->Unit(benchmark::kMillisecond);
  }
  return 0;
}
const int registered = register_all();

}  // namespace
}  // namespace streamcheck::bench

BENCHMARK_MAIN();
