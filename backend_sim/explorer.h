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
#include <optional>
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

/// Probabilistic concurrency testing (PctChooser) over the host and the
/// streams, under DeviceProgress::EveryStep: run 0 is a probe of depth 1
/// that counts the device steps k; every later run draws its depth - 1
/// change points from 1..k, k the most steps any earlier run took. Run k
/// is seeded with the k-th value of SplitMix64(seed), as Random is.
struct Pct {
  std::uint64_t seed = 1;
  std::uint32_t depth = 3;
  RandomChooserOptions options = {};
};

using Strategy = std::variant<Random, Dfs, DeviationDfs, Pct>;

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
  /// Pct: what its guarantee is stated over.
  struct PctRuns {
    std::uint32_t depth = 0;
    std::uint32_t agents = 0;         // n: the host and every stream seen
    std::uint64_t steps_covered = 0;  // the probe's device steps: every run drew from at least 1..this
    std::uint64_t steps_drawn = 0;    // K: the widest range a run drew its change points from
    std::uint64_t runs_at_depth = 0;  // the runs after the probe
    /// 1 / (n * K^(d-1)): one run finds a given bug of depth <= d within the
    /// first steps_covered device steps at least this often.
    double per_run() const;
    /// (1 - per_run())^runs_at_depth: every run missed it at most this often.
    double missed() const;
  };
  std::optional<PctRuns> pct;
};

/// DeviationDfs: true while `run` (its chooser, after the run) repeats a
/// schedule of an earlier round -- it has fewer deviations than the round,
/// so it was run and reported before.
bool repeats_earlier_round(const Chooser& run);

ExploreResult explore(const Strategy& strategy, const Bounds& bounds, const RunFn& run);

}  // namespace streamcheck::sim
