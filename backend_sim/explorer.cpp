#include "backend_sim/explorer.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

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

ExploreResult explore_pct(const Pct& pct, const Bounds& bounds, const RunFn& run) {
  ExploreResult result;
  ExploreResult::PctRuns stats;
  stats.depth = pct.depth;
  SplitMix64 seeds(pct.seed);
  while (result.explored < bounds.max_runs) {
    const bool probe = result.explored == 0;
    PctChooser chooser(seeds.next(), probe ? 1 : pct.depth, stats.steps_drawn, pct.options);
    ++result.explored;
    const bool stop = run(chooser);
    stats.agents = std::max(stats.agents, chooser.agents());
    if (probe)
      stats.steps_covered = chooser.steps();
    else
      ++stats.runs_at_depth;
    stats.steps_drawn = std::max(stats.steps_drawn, chooser.steps());
    if (stop) {
      result.stopped_early = true;
      break;
    }
  }
  result.pct = stats;
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

/// The chooser of one DeviationDfs run: follows its prefix, then deviates
/// (option 1) while the round allows, then takes the first option.
class DeviationChooser final : public Chooser {
 public:
  DeviationChooser(std::vector<std::uint32_t> prefix, std::uint32_t round)
      : prefix_(std::move(prefix)), round_(round) {}
  std::uint32_t round() const { return round_; }

 protected:
  std::uint32_t pick(ChoiceKind, std::uint32_t) override {
    std::uint32_t option = 0;
    if (next_ < prefix_.size())
      option = prefix_[next_];
    else if (deviated_ < round_)
      option = 1;
    ++next_;
    if (option != 0) ++deviated_;
    return option;
  }

 private:
  std::vector<std::uint32_t> prefix_;
  std::uint32_t round_;
  std::size_t next_ = 0;
  std::uint32_t deviated_ = 0;
};

/// The prefix of the next schedule of the round after `run`, depth first;
/// at each choice with deviations left the options go 1, 2, ..., n-1, 0.
/// nullopt when the round is done.
std::optional<std::vector<std::uint32_t>> next_in_round(const Chooser& run, std::uint32_t round) {
  const auto& taken = run.taken();
  std::vector<std::uint32_t> before(taken.size() + 1, 0);  // deviations before choice i
  for (std::size_t i = 0; i < taken.size(); ++i) before[i + 1] = before[i] + (taken[i].taken != 0 ? 1 : 0);
  for (std::size_t i = taken.size(); i-- > 0;) {
    if (before[i] >= round || taken[i].taken == 0) continue;  // only option 0 here, or tried them all
    std::vector<std::uint32_t> prefix;
    for (std::size_t j = 0; j < i; ++j) prefix.push_back(taken[j].taken);
    prefix.push_back(taken[i].taken + 1 < taken[i].options ? taken[i].taken + 1 : 0);
    return prefix;
  }
  return std::nullopt;
}

ExploreResult explore_deviations(const Bounds& bounds, const RunFn& run) {
  ExploreResult result;
  for (std::uint32_t round = 0;; ++round) {
    bool any_in_round = false;
    std::optional<std::vector<std::uint32_t>> prefix = std::vector<std::uint32_t>{};
    while (prefix) {
      if (result.explored >= bounds.max_runs) {
        result.deviations_covered = round == 0 ? 0 : round - 1;
        return result;
      }
      DeviationChooser chooser(std::move(*prefix), round);
      const bool stop = run(chooser);
      if (!repeats_earlier_round(chooser)) {
        ++result.explored;
        any_in_round = true;
      }
      if (stop) {
        result.stopped_early = true;
        return result;
      }
      prefix = next_in_round(chooser, round);
    }
    if (!any_in_round) {
      result.exhaustive = true;  // no schedule has `round` deviations: every one was run
      return result;
    }
  }
}

}  // namespace

double ExploreResult::PctRuns::per_run() const {
  const double k = static_cast<double>(std::max<std::uint64_t>(steps_drawn, 1));
  return 1.0 / (std::max<std::uint32_t>(agents, 1) * std::pow(k, depth == 0 ? 0.0 : depth - 1.0));
}

double ExploreResult::PctRuns::missed() const { return std::pow(1.0 - per_run(), static_cast<double>(runs_at_depth)); }

std::uint32_t deviations(const Chooser& run) {
  std::uint32_t n = 0;
  for (const auto& c : run.taken()) n += c.taken != 0 ? 1 : 0;
  return n;
}

bool repeats_earlier_round(const Chooser& run) {
  const auto* d = dynamic_cast<const DeviationChooser*>(&run);
  return d != nullptr && deviations(run) < d->round();
}

ExploreResult explore(const Strategy& strategy, const Bounds& bounds, const RunFn& run) {
  return std::visit(
      [&](const auto& s) {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, Dfs>)
          return explore_dfs(bounds, run);
        else if constexpr (std::is_same_v<S, DeviationDfs>)
          return explore_deviations(bounds, run);
        else if constexpr (std::is_same_v<S, Pct>)
          return explore_pct(s, bounds, run);
        else
          return explore_random(s, bounds, run);
      },
      strategy);
}

}  // namespace streamcheck::sim
