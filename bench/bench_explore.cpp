// Exploration rates (SPEC §8): schedules per second on the litmus examples,
// seeded random, exhaustive DFS over executions (issue 12) and the older DFS
// over every device-step schedule, side by side; how many runs each needs
// against naive enumeration of every interleaving that keeps only stream
// order (R1): (Σ n_s)! / Π n_s! for n_s device ops on stream s; and bare
// executions per second (the run loop without a report).
//
// Besides the examples, two programs issue 12 names: an 11-stream event
// chain (one writer, ten readers each waiting on the previous one) and
// examples/05 with 24 independent kernels appended.
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

#include "backend_sim/explorer.h"
#include "tools/trace.h"
#include "tools/trace_check.h"

namespace streamcheck::bench {
namespace {

std::string example_text(const std::string& name) {
  const char* dir = std::getenv("STREAMCHECK_EXAMPLES");
  const std::string path = std::string(dir ? dir : "examples") + "/" + name + ".trace";
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("bench_explore: cannot read " + path +
                             "; run from the repository root or set STREAMCHECK_EXAMPLES to the examples/ folder");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// One writer on s0, then ten readers, each on its own stream waiting on
/// the event its predecessor recorded.
std::string event_chain_11() {
  std::string t;
  for (int s = 0; s <= 10; ++s) t += "stream s" + std::to_string(s) + "\nevent e" + std::to_string(s) + "\n";
  t += "buffer A 4096\nlaunch w on s0 writes A\nrecord e0 on s0\n";
  for (int s = 1; s <= 10; ++s)
    t += "wait e" + std::to_string(s - 1) + " on s" + std::to_string(s) + "\nlaunch r" + std::to_string(s) + " on s" +
         std::to_string(s) + " reads A\nrecord e" + std::to_string(s) + " on s" + std::to_string(s) + "\n";
  return t + "sync device\nfree A\n";
}

/// examples/05 and 24 kernels after it, 8 per stream on a buffer of that
/// stream's own: they race with nothing.
std::string reuse_with_24_kernels() {
  std::string t = example_text("05_opportunistic_reuse");
  for (int s = 0; s < 3; ++s) {
    const std::string stream = "s" + std::to_string(s);
    t += "buffer C" + stream + " 2048 on " + stream + "\n";
    for (int k = 0; k < 8; ++k)
      t += "launch k" + stream + "_" + std::to_string(k) + " on " + stream + " writes C" + stream + "[" +
           std::to_string(k * 256) + ":" + std::to_string((k + 1) * 256) + "]\n";
  }
  return t;
}

tools::Trace load(const std::string& name) {
  if (name == "event_chain_11") return tools::parse_trace(event_chain_11(), name);
  if (name == "05_plus_24_kernels") return tools::parse_trace(reuse_with_24_kernels(), name);
  return tools::parse_trace(example_text(name), name);
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

/// The bound of the schedule enumeration on the two programs it cannot
/// finish (3,000,000 schedules of the chain took 83-135 s).
constexpr std::uint64_t kScheduleBound = 200'000;

void explore(benchmark::State& state, const std::string& name, tools::Strategy strategy) {
  const tools::Trace trace = load(name);
  tools::TraceCheckOptions options;
  options.strategy = strategy;
  options.max_schedules = strategy == tools::Strategy::Random                        ? 2000
                          : name == "event_chain_11" || name == "05_plus_24_kernels" ? kScheduleBound
                                                                                     : 1'000'000;
  std::uint64_t schedules = 0;
  bool exhaustive = false;
  for (auto _ : state) {
    const tools::Report report = tools::explore_trace(trace, options);
    schedules += report.coverage.explored;
    exhaustive = report.coverage.exhaustive;
    benchmark::DoNotOptimize(report.findings.size());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(schedules));
  state.counters["runs"] = static_cast<double>(schedules) / static_cast<double>(state.iterations());
  if (strategy != tools::Strategy::Random) {
    state.counters["exhaustive"] = exhaustive ? 1 : 0;
    state.counters["log10_naive"] = log10_naive_interleavings(trace);
  }
}

/// Complete executions per second: every execution of the program run to
/// its end on the simulator (the statements, the device's completions, the
/// findings), over and over, with no report built around them. Plain DFS:
/// each run is a new execution (DeviationDfs re-runs a few).
void executions(benchmark::State& state, const std::string& name) {
  const tools::Trace trace = load(name);
  const tools::TraceRunOptions options{trace.policy, false, sim::DeviceProgress::OnObservation};
  std::uint64_t runs = 0;
  for (auto _ : state) {
    const auto result = sim::explore(sim::Dfs{}, sim::Bounds{1'000'000}, [&](sim::Chooser& chooser) {
      const tools::Execution run = tools::run_on_simulator(trace, chooser, options);
      benchmark::DoNotOptimize(run.model().findings().size());
      ++runs;
      return false;
    });
    if (!result.exhaustive) state.SkipWithError("not exhaustive");
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(runs));
  state.counters["executions"] = static_cast<double>(runs) / static_cast<double>(state.iterations());
}

constexpr const char* kLitmus[] = {
    "01_missing_wait", "03_rerecorded_event", "05_opportunistic_reuse", "08_pipeline",    "09_resource_clean",
    "15_host_sync",    "16_query_not_done",   "19_partial_overlap",     "event_chain_11", "05_plus_24_kernels"};

int register_all() {
  for (const char* name : kLitmus) {
    benchmark::RegisterBenchmark((std::string("BM_ExploreRandom/") + name).c_str(), [name](benchmark::State& s) {
      explore(s, name, tools::Strategy::Random);
    })->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("BM_ExploreDfs/") + name).c_str(), [name](benchmark::State& s) {
      explore(s, name, tools::Strategy::Dfs);
    })->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("BM_ExploreDfsSchedules/") + name).c_str(), [name](benchmark::State& s) {
      explore(s, name, tools::Strategy::DfsSchedules);
    })->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("BM_Executions/") + name).c_str(), [name](benchmark::State& s) {
      executions(s, name);
    })->Unit(benchmark::kMicrosecond);
  }
  return 0;
}
const int registered = register_all();

}  // namespace
}  // namespace streamcheck::bench

BENCHMARK_MAIN();
