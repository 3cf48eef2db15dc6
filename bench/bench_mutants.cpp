// Time to kill each mutant (SPEC §8: median ≤ 1 s): `streamcheck explore
// --mutant Mk` from a fresh seed until the first violation, shrinking
// included. Each repetition uses the next seed, so the median is over
// different random client programs, not over one lucky run.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "model/mutants.h"
#include "tools/explore.h"

namespace streamcheck::bench {
namespace {

void kill(benchmark::State& state, MutantId mutant) {
  static std::uint64_t next_seed[static_cast<std::size_t>(MutantId::M22) + 1] = {};
  std::uint64_t explored = 0;
  for (auto _ : state) {
    tools::ExploreOptions options;
    options.seed = ++next_seed[static_cast<std::size_t>(mutant)];
    options.mutant = mutant;
    std::uint64_t n = 0;
    const auto found = tools::find_counterexample(options, &n);
    if (!found)
      throw std::logic_error(std::string("bench_mutants: ") + std::string(info(mutant).name) +
                             " survived the default exploration bounds; the property suite has lost its teeth");
    explored += n;
  }
  state.counters["schedules_to_kill"] = static_cast<double>(explored) / static_cast<double>(state.iterations());
}

int register_all() {
  for (const MutantInfo& m : kMutants)
    benchmark::RegisterBenchmark((std::string("BM_TimeToKill/") + std::string(m.name)).c_str(),
                                 [id = m.id](benchmark::State& s) { kill(s, id); })
        ->Iterations(1)
        ->Repetitions(7)
        ->ReportAggregatesOnly(true)
        ->Unit(benchmark::kMillisecond);
  return 0;
}
const int registered = register_all();

}  // namespace
}  // namespace streamcheck::bench

BENCHMARK_MAIN();
