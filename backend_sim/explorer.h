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
/// A bound stops it having varied only the deepest choices.
struct Dfs {};

/// Every schedule of the program, each once, fewest deviations first. A
/// deviation is a choice that takes another option than its first (a device
/// step instead of letting the host go on, a reused range instead of a fresh
/// one, a fault that fires). Round k runs, depth first, the schedules with
/// exactly k deviations, deviating as early as it can first; so a bound stops
/// it after every schedule with fewer deviations anywhere in the run -- an
/// early pool reuse or query answer included -- where Dfs varies only the
/// deepest choices (preemption bounding, as CHESS does, over every choice
/// kind). Exhaustive, it runs the same schedules as Dfs. Stateless like Dfs:
/// to find its way it re-runs a few schedules of earlier rounds (those that
/// run out of choices before k deviations); they are not counted in
/// `explored`, and the RunFn can tell them by repeats_earlier_round().
struct DeviationDfs {};

using Strategy = std::variant<Random, Dfs, DeviationDfs>;

/// The choices of `run` that took another option than their first.
std::uint32_t deviations(const Chooser& run);

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
  /// DeviationDfs stopped by the bound: every schedule with at most this
  /// many deviations was run (and some with one more).
  std::uint32_t deviations_covered = 0;
};

/// DeviationDfs: true while `run` (its chooser, after the run) repeats a
/// schedule of an earlier round -- it has fewer deviations than the round,
/// so it was run and reported before.
bool repeats_earlier_round(const Chooser& run);

ExploreResult explore(const Strategy& strategy, const Bounds& bounds, const RunFn& run);

}  // namespace streamcheck::sim
