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
#include <vector>

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
/// A bound stops it having varied only the deepest choices. Sharded, each
/// part enters only the subtrees it owns (ShardSet).
struct Dfs {};

/// Every schedule of the program, each once, fewest deviations first. A
/// deviation is a choice that takes another option than its first (a device
/// step instead of letting the host go on, a reused range instead of a fresh
/// one, a fault that fires, another host thread than the first in file
/// order; under sleep sets, than the first awake one). Round k runs, depth first, the schedules with
/// exactly k deviations, deviating as early as it can first; so a bound stops
/// it after every schedule with fewer deviations anywhere in the run -- an
/// early pool reuse or query answer included -- where Dfs varies only the
/// deepest choices (preemption bounding, as CHESS does, over every choice
/// kind). Exhaustive, it runs the same schedules as Dfs. Stateless like Dfs:
/// to find its way it re-runs a few schedules of earlier rounds (those that
/// run out of choices before k deviations); they are not counted in
/// `explored`, and the RunFn can tell them by repeats_earlier_round().
/// Sharded, like Dfs: a part enters only the subtrees it owns, and runs of
/// another part that it needs to find its way are not counted() either.
/// Sleep sets (host-thread steps) apply as in Dfs: an asleep option is never
/// entered. A bound then covers every execution that has a run with at most
/// k deviations among those the sleep sets keep.
struct DeviationDfs {};

/// Probabilistic concurrency testing (PctChooser) over the host and the
/// streams, under DeviceProgress::EveryStep: run 0 is a probe of depth 1
/// that counts the device steps k; every later run draws its depth - 1
/// change points from 1..k. Run r is seeded with the r-th value of
/// SplitMix64(seed), as Random is, so a shard can run any subset.
struct Pct {
  std::uint64_t seed = 1;
  std::uint32_t depth = 3;
  RandomChooserOptions options = {};
};

using Strategy = std::variant<Random, Dfs, DeviationDfs, Pct>;

/// The choices of `run` that took another option than their first.
std::uint32_t deviations(const Chooser& run);

struct Bounds {
  /// Runs at most this many schedules. Random and Pct, sharded: of the
  /// whole exploration (a shard runs its part of them); Dfs and
  /// DeviationDfs, sharded: this shard counts at most this many.
  std::uint64_t max_runs = 1000;
  /// Which part of the exploration to run (schedule.h: Shard).
  Shard shard = {};
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
    std::uint64_t steps = 0;          // k: the probe's device steps, where the change points are drawn
    std::uint64_t runs_at_depth = 0;  // the runs after the probe
    /// 1 / (n * k^(d-1)): one run finds a given bug of depth <= d within the
    /// first k device steps at least this often.
    double per_run() const;
    /// (1 - per_run())^runs_at_depth: every run missed it at most this often.
    double missed() const;
  };
  std::optional<PctRuns> pct;
};

/// Whether DeviationDfs runs the complete run `a` before `b` (fewer
/// deviations first, then depth first with the options of each choice in
/// the order 1, 2, ..., n-1, 0): how `streamcheck merge` puts the runs of
/// DFS shards back in the order one exploration meets them.
bool deviation_dfs_before(const std::vector<Choice>& a, const std::vector<Choice>& b);

/// DeviationDfs: true while `run` (its chooser, after the run) repeats a
/// schedule of an earlier round -- it has fewer deviations than the round,
/// so it was run and reported before.
bool repeats_earlier_round(const Chooser& run);

ExploreResult explore(const Strategy& strategy, const Bounds& bounds, const RunFn& run);

}  // namespace streamcheck::sim
