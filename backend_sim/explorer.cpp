#include "backend_sim/explorer.h"

namespace streamcheck::sim {

namespace {

ExploreResult explore_random(const Random& random, const Bounds& bounds, const RunFn& run) {
  ExploreResult result;
  SplitMix64 seeds(random.seed);
  while (result.explored < bounds.max_runs) {
    RandomChooser chooser(seeds.next(), random.options);
    ++result.explored;
    if (run(chooser)) {
      result.stopped_early = true;
      break;
    }
  }
  return result;
}

ExploreResult explore_dfs(const Bounds& bounds, const RunFn& run) {
  ExploreResult result;
  DfsEnumerator dfs;
  while (!dfs.done() && result.explored < bounds.max_runs) {
    auto chooser = dfs.next_run();
    ++result.explored;
    const bool stop = run(chooser);
    dfs.finished(chooser);
    if (stop) {
      result.stopped_early = true;
      break;
    }
  }
  result.exhaustive = dfs.done();
  return result;
}

}  // namespace

ExploreResult explore(const Strategy& strategy, const Bounds& bounds, const RunFn& run) {
  return std::visit(
      [&](const auto& s) {
        if constexpr (std::is_same_v<std::decay_t<decltype(s)>, Dfs>)
          return explore_dfs(bounds, run);
        else
          return explore_random(s, bounds, run);
      },
      strategy);
}

}  // namespace streamcheck::sim
