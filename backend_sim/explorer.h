// The exploration loop: runs a deterministic program once per schedule,
// choosing the schedules by a strategy, until the bound is reached, the
// schedules are exhausted (DFS) or the caller asks to stop.
//
// This is the one loop behind every exploration in streamcheck: the CLI's
// `check --explore` and `explore`, the property tests, the litmus tests, the
// bench and the GPU validator. What a run does (and what it found) is the
// caller's business; the loop only picks schedules and counts them. Compare
// GenMC, whose driver keeps exploration apart from the state it explores.
#pragma once

#include <cstdint>
#include <functional>
#include <type_traits>
#include <variant>

#include "backend_sim/schedule.h"

namespace streamcheck::sim {

/// Seeded random schedules: run k uses a RandomChooser seeded with the k-th
/// value of SplitMix64(seed), so a run is reproduced from (seed, k) or from
/// the schedule string its chooser recorded.
struct Random {
  std::uint64_t seed = 1;
  RandomChooserOptions options = {};
};

/// Every schedule of the program, depth first (DfsEnumerator), each once.
struct Dfs {};

using Strategy = std::variant<Random, Dfs>;

struct Bounds {
  /// Runs at most this many schedules.
  std::uint64_t max_runs = 1000;
};

/// Runs the program once with the chooser it is given; returns true to stop
/// the exploration (e.g. on the first finding), false to go on.
using RunFn = std::function<bool(Chooser&)>;

struct ExploreResult {
  /// Schedules run.
  std::uint64_t explored = 0;
  /// DFS ran every schedule of the program (never true for Random).
  bool exhaustive = false;
  /// The RunFn asked to stop.
  bool stopped_early = false;
};

ExploreResult explore(const Strategy& strategy, const Bounds& bounds, const RunFn& run);

}  // namespace streamcheck::sim
