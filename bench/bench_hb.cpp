// HB checking throughput and HB query cost (SPEC §8), side by side:
//   - the vector-clock checker driven directly, the device running nothing
//     before the teardown (BM_HbCheckModel) or stepping before every call
//     as `explore`'s random schedules do (BM_HbCheckModelStepping),
//   - the same program as a trace, checked (BM_TraceCheck; with kernel names
//     as long as captured ones, BM_TraceCheckLongNames), parsed alone
//     (BM_TraceParse) and parsed + checked (BM_TraceParseAndCheck) as
//     `streamcheck check` does (the device stepping only on observation),
//     and both checks with every device step a choice (…EveryStep), and
//     the streamed check of the same program from a file
//     (BM_TraceStreamCheck, `check --stream`),
//   - a program of many blocks (BM_HbCheckManyBlocks): what a launch that
//     names no allocation, and a free, cost as the run's allocations grow,
//   - "does a happen before b" by vector clocks (BM_HbQueryVectorClock) and
//     by Boost.Graph reachability on the same run (BM_HbQueryBoostGraph),
//     the test oracle.
// Items are trace ops (statements of the steady-state loop) or queries.
#include <benchmark/benchmark.h>
#include <stdlib.h>  // mkdtemp (POSIX)

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "backend_sim/hb_graph.h"
#include "bench/workload.h"
#include "tools/trace.h"
#include "tools/trace_check.h"

namespace streamcheck::bench {
namespace {

// A benchmark of a program that is not race-free measures the wrong thing:
// the checker would be building findings. This is a tool failure.
void require_clean(std::size_t findings, const char* what) {
  if (findings != 0)
    throw std::logic_error(std::string(what) + ": the bench workload produced findings; fix workload.h");
}

void check_model(benchmark::State& state, DeviceSteps steps, const char* what) {
  const auto ops = static_cast<std::uint64_t>(state.range(0));
  for (auto _ : state) {
    sim::RandomChooser chooser(1);
    sim::DeviceModel m(chooser);
    ModelWorkload w(m, steps);
    for (std::uint64_t i = 0; i < ops; ++i) w.run(i);
    w.teardown();
    require_clean(m.findings().size(), what);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
// The device runs nothing before the teardown: every op's records are kept
// to the end.
void BM_HbCheckModel(benchmark::State& state) { check_model(state, DeviceSteps::AtTheEnd, "BM_HbCheckModel"); }
BENCHMARK(BM_HbCheckModel)->Arg(4096)->Arg(1 << 20)->Unit(benchmark::kMillisecond);
// The device steps before every call, as in `streamcheck check`.
void BM_HbCheckModelStepping(benchmark::State& state) {
  check_model(state, DeviceSteps::BeforeEveryCall, "BM_HbCheckModelStepping");
}
BENCHMARK(BM_HbCheckModelStepping)->Arg(4096)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

// A program of many blocks, as a caching allocator's user makes: N blocks
// allocated on one stream, a kernel writing each, then each freed. Each
// launch names its block by address only, as the resource's launches over
// the simulator do, so the pool finds the allocation that holds it; each
// free finds the live block by its address. Items are ops (3 N).
void BM_HbCheckManyBlocks(benchmark::State& state) {
  const auto blocks = static_cast<std::uint64_t>(state.range(0));
  constexpr std::uint64_t kBlockBytes = 512;
  for (auto _ : state) {
    sim::RandomChooser chooser(1);
    sim::DeviceModel m(chooser);
    const sim::StreamIndex s = m.create_stream();
    std::vector<std::uint64_t> ptrs;
    ptrs.reserve(blocks);
    for (std::uint64_t i = 0; i < blocks; ++i) {
      const auto block = m.alloc(s, kBlockBytes);
      if (!block) throw std::logic_error("BM_HbCheckManyBlocks: the simulated pool is out of memory");
      ptrs.push_back(block->ptr);
      m.launch(s, {KernelAccess{block->ptr, kBlockBytes, Access::Write, {}}}, "fill");
    }
    for (const std::uint64_t ptr : ptrs)
      if (!m.free(s, ptr)) throw std::logic_error("BM_HbCheckManyBlocks: a live block could not be freed");
    m.finish();
    require_clean(m.findings().size(), "BM_HbCheckManyBlocks");
  }
  state.SetItemsProcessed(state.iterations() * state.range(0) * 3);
}
BENCHMARK(BM_HbCheckManyBlocks)->Arg(1024)->Arg(16384)->Unit(benchmark::kMillisecond);

void check_parsed_trace(benchmark::State& state, std::string_view kernel_prefix, const char* what,
                        std::optional<sim::DeviceProgress> progress = std::nullopt) {
  const tools::Trace trace =
      tools::parse_trace(workload_trace(static_cast<std::uint64_t>(state.range(0)), kernel_prefix), "bench");
  tools::TraceCheckOptions options;
  options.progress = progress;
  for (auto _ : state) {
    const tools::Report report = tools::check_trace(trace, options);
    require_clean(report.findings.size(), what);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
void BM_TraceCheck(benchmark::State& state) { check_parsed_trace(state, {}, "BM_TraceCheck"); }
BENCHMARK(BM_TraceCheck)->Arg(4096)->Arg(1 << 20)->Unit(benchmark::kMillisecond);
// The same check with every device step a choice (DeviceProgress::EveryStep,
// as `explore`'s random schedules run, and `check` before issue 16): side
// by side with BM_TraceCheck, whose device steps only on observation.
void BM_TraceCheckEveryStep(benchmark::State& state) {
  check_parsed_trace(state, {}, "BM_TraceCheckEveryStep", sim::DeviceProgress::EveryStep);
}
BENCHMARK(BM_TraceCheckEveryStep)->Arg(4096)->Arg(1 << 20)->Unit(benchmark::kMillisecond);
// The same check with kernel names as long as captured ones (kLongKernelPrefix).
void BM_TraceCheckLongNames(benchmark::State& state) {
  check_parsed_trace(state, kLongKernelPrefix, "BM_TraceCheckLongNames");
}
BENCHMARK(BM_TraceCheckLongNames)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

void BM_TraceParse(benchmark::State& state) {
  const std::string text = workload_trace(static_cast<std::uint64_t>(state.range(0)));
  for (auto _ : state) {
    const tools::Trace trace = tools::parse_trace(text, "bench");
    benchmark::DoNotOptimize(trace.statements.size());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_TraceParse)->Arg(4096)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

void parse_and_check(benchmark::State& state, const char* what,
                     std::optional<sim::DeviceProgress> progress = std::nullopt) {
  const std::string text = workload_trace(static_cast<std::uint64_t>(state.range(0)));
  tools::TraceCheckOptions options;
  options.progress = progress;
  for (auto _ : state) {
    const tools::Report report = tools::check_trace(tools::parse_trace(text, "bench"), options);
    require_clean(report.findings.size(), what);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
void BM_TraceParseAndCheck(benchmark::State& state) { parse_and_check(state, "BM_TraceParseAndCheck"); }
BENCHMARK(BM_TraceParseAndCheck)->Arg(4096)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

/// A file of the workload's trace in a folder of its own, gone with it.
class WorkloadFile {
 public:
  explicit WorkloadFile(std::uint64_t ops) {
    std::string dir = (std::filesystem::temp_directory_path() / "streamcheck-bench-XXXXXX").string();
    if (::mkdtemp(dir.data()) == nullptr) throw std::runtime_error("bench_hb: cannot make a temporary folder");
    dir_ = dir;
    std::ofstream out(path(), std::ios::binary);
    write_workload_trace(ops, {}, [&](std::string_view piece) { out << piece; });
    if (!out.flush()) throw std::runtime_error("bench_hb: cannot write " + path());
  }
  ~WorkloadFile() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  WorkloadFile(const WorkloadFile&) = delete;
  WorkloadFile& operator=(const WorkloadFile&) = delete;
  std::string path() const { return (dir_ / "workload.trace").string(); }

 private:
  std::filesystem::path dir_;
};

// `streamcheck check --stream` of the same program, from a file: read, parsed
// and run a statement at a time, every op executed at once, the records of
// executed ops nothing names dropped as it goes (tools::check_streamed).
// Side by side with BM_TraceParseAndCheck (which parses a text in memory).
void BM_TraceStreamCheck(benchmark::State& state) {
  const WorkloadFile file(static_cast<std::uint64_t>(state.range(0)));
  for (auto _ : state) {
    const tools::Report report = tools::check_streamed(file.path(), {});
    require_clean(report.findings.size(), "BM_TraceStreamCheck");
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_TraceStreamCheck)->Arg(4096)->Arg(1 << 20)->Unit(benchmark::kMillisecond);
// As BM_TraceCheckEveryStep, with the parse.
void BM_TraceParseAndCheckEveryStep(benchmark::State& state) {
  parse_and_check(state, "BM_TraceParseAndCheckEveryStep", sim::DeviceProgress::EveryStep);
}
BENCHMARK(BM_TraceParseAndCheckEveryStep)->Arg(4096)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

/// One run of the workload and a fixed list of random op pairs to query.
struct QueryFixture {
  explicit QueryFixture(std::uint64_t ops) : chooser(1), model(chooser), workload(model) {
    for (std::uint64_t i = 0; i < ops; ++i) workload.run(i);
    std::vector<sim::OpRef> all;
    for (std::uint32_t s = 0; s < model.stream_count(); ++s)
      for (std::uint32_t k = 0; k < model.op_count(sim::StreamIndex{s}); ++k) all.push_back({sim::StreamIndex{s}, k});
    sim::SplitMix64 rng(7);
    for (int q = 0; q < 4096; ++q)
      pairs.emplace_back(all[rng.below(static_cast<std::uint32_t>(all.size()))],
                         all[rng.below(static_cast<std::uint32_t>(all.size()))]);
  }
  sim::RandomChooser chooser;
  sim::DeviceModel model;
  ModelWorkload workload;
  std::vector<std::pair<sim::OpRef, sim::OpRef>> pairs;
};

void BM_HbQueryVectorClock(benchmark::State& state) {
  QueryFixture f(static_cast<std::uint64_t>(state.range(0)));
  std::size_t q = 0, ordered = 0;
  for (auto _ : state) {
    const auto& [a, b] = f.pairs[q++ % f.pairs.size()];
    ordered += f.model.happens_before(a, b);
    benchmark::DoNotOptimize(ordered);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["ordered_share"] = static_cast<double>(ordered) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_HbQueryVectorClock)->Arg(4096)->Arg(1 << 16);

void BM_HbQueryBoostGraph(benchmark::State& state) {
  QueryFixture f(static_cast<std::uint64_t>(state.range(0)));
  const sim::HbGraph graph(f.model);
  // The oracle and the checker must agree on every pair timed here.
  for (const auto& [a, b] : f.pairs)
    if (graph.reaches(a, b) != f.model.happens_before(a, b))
      throw std::logic_error("BM_HbQueryBoostGraph: vector clocks and Boost.Graph disagree on " + describe(f.model, a) +
                             " -> " + describe(f.model, b));
  std::size_t q = 0, ordered = 0;
  for (auto _ : state) {
    const auto& [a, b] = f.pairs[q++ % f.pairs.size()];
    ordered += graph.reaches(a, b);
    benchmark::DoNotOptimize(ordered);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["ordered_share"] = static_cast<double>(ordered) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_HbQueryBoostGraph)->Arg(4096);

}  // namespace
}  // namespace streamcheck::bench

BENCHMARK_MAIN();
