#include "backend_sim/explorer.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

namespace streamcheck::sim {

namespace {

bool in_shard(std::uint64_t run_number, const Shard& shard) { return run_number % shard.count == shard.index; }

ExploreResult explore_random(const Random& random, const Bounds& bounds, const RunFn& run) {
  ExploreResult result;
  SplitMix64 seeds(random.seed);
  for (std::uint64_t r = 0; r < bounds.max_runs; ++r) {
    const std::uint64_t seed = seeds.next();  // every run's seed is drawn, so a shard's runs are the whole's
    if (!in_shard(r, bounds.shard)) continue;
    RandomChooser chooser(seed, random.options);
    chooser.set_run_number(r);
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
  for (std::uint64_t r = 0; r < bounds.max_runs; ++r) {
    const std::uint64_t seed = seeds.next();
    const bool probe = r == 0;
    const bool mine = in_shard(r, bounds.shard);
    if (!mine && !probe) continue;
    PctChooser chooser(seed, probe ? 1 : pct.depth, stats.steps, pct.options);
    chooser.set_run_number(r);
    chooser.set_counted(mine);  // every shard runs the probe to learn k; one counts it
    if (mine) ++result.explored;
    const bool stop = run(chooser);
    if (mine) stats.agents = std::max(stats.agents, chooser.agents());
    if (probe)
      stats.steps = chooser.steps();
    else
      ++stats.runs_at_depth;
    if (stop && mine) {
      result.stopped_early = true;
      break;
    }
  }
  result.pct = stats;
  return result;
}

ExploreResult explore_dfs(const Bounds& bounds, const RunFn& run) {
  ExploreResult result;
  DfsEnumerator dfs(bounds.shard);
  while (!dfs.done() && result.explored < bounds.max_runs) {
    auto chooser = dfs.next_run();
    chooser.set_run_number(result.explored);
    const bool stop = run(chooser);
    dfs.finished(chooser);
    if (!chooser.counted()) continue;  // another shard's run, made to find the way
    ++result.explored;
    if (stop) {
      result.stopped_early = true;
      break;
    }
  }
  result.exhaustive = dfs.done();
  return result;
}

/// The option a choice takes when it does not deviate: its first, or at a
/// host step under sleep sets its first awake one (an asleep option is never
/// taken, so a run that skips it deviates from nothing).
std::uint32_t default_option(const Choice& c) {
  std::uint32_t option = 0;
  while (option + 1 < c.options && Chooser::is_asleep(c.asleep, option)) ++option;
  return option;
}

/// The chooser of one DeviationDfs run: follows its prefix, then deviates
/// (the first awake option after the default, or the first of them that a
/// shard owns) while the round allows, then takes the default option.
class DeviationChooser final : public Chooser {
 public:
  DeviationChooser(std::vector<std::uint32_t> prefix, std::uint32_t round)
      : prefix_(std::move(prefix)), round_(round) {}
  std::uint32_t round() const { return round_; }

 protected:
  std::uint32_t pick(ChoiceKind, std::uint32_t options) override { return pick_host_step(options, 0); }
  std::uint32_t pick_host_step(std::uint32_t options, SleepMask asleep) override {
    const std::uint32_t first = default_option(Choice{ChoiceKind::HostStep, options, 0, asleep});
    std::uint32_t option = first;
    if (next_ < prefix_.size())
      option = prefix_[next_];
    else if (deviated_ < round_)
      option = first_owned_deviation(options, asleep, first);
    ++next_;
    if (option != first) ++deviated_;
    return option;
  }
  // Sleep sets (Chooser::enable_sleep_sets) apply: the rounds never enter
  // an asleep option, so every run they make is one no earlier sibling
  // covers.
  bool enumerates() const override { return true; }

 private:
  /// The first awake deviation after `first` the shard owns; `first` when
  /// only it is the shard's, the next awake one when none is (the run left
  /// its part).
  std::uint32_t first_owned_deviation(std::uint32_t options, SleepMask asleep, std::uint32_t first) const {
    std::optional<std::uint32_t> any;
    for (std::uint32_t option = first + 1; option < options; ++option) {
      if (is_asleep(asleep, option)) continue;
      if (keeps_shard(options, option)) return option;
      if (!any) any = option;
    }
    return keeps_shard(options, first) ? first : any.value_or(first);
  }

  std::vector<std::uint32_t> prefix_;
  std::uint32_t round_;
  std::size_t next_ = 0;
  std::uint32_t deviated_ = 0;
};

/// The order DeviationDfs tries the options of a choice in: the awake ones
/// after the default ascending, then the default.
std::uint32_t deviation_rank(const Choice& c) { return c.taken == default_option(c) ? c.options : c.taken; }

/// The prefix of the next schedule of the round after `run`, depth first;
/// at each choice with deviations left the options go in deviation_rank
/// order, skipping asleep ones and those whose subtree `shard` does not
/// own. Choices after a sleep-blocked point are never varied. nullopt when
/// the round is done.
std::optional<std::vector<std::uint32_t>> next_in_round(const Chooser& run, std::uint32_t round, const Shard& shard) {
  const auto& taken = run.taken();
  std::vector<std::uint32_t> before(taken.size() + 1, 0);  // deviations before choice i
  for (std::size_t i = 0; i < taken.size(); ++i)
    before[i + 1] = before[i] + (taken[i].taken != default_option(taken[i]) ? 1 : 0);
  const bool split = shard.count > 1;
  const std::vector<ShardSet> owners = split ? owners_along(taken, shard.count) : std::vector<ShardSet>{};
  for (std::size_t i = run.explorable_choices(); i-- > 0;) {
    if (before[i] >= round) continue;  // only the default here
    const std::uint32_t first = default_option(taken[i]);
    for (std::uint32_t option = taken[i].taken; option != first;) {  // the options after taken[i], in rank order
      option = option + 1 < taken[i].options ? option + 1 : first;
      if (Chooser::is_asleep(taken[i].asleep, option)) continue;
      if (split && !owners[i].narrow(taken[i].options, option).contains(shard.index)) continue;
      std::vector<std::uint32_t> prefix;
      for (std::size_t j = 0; j < i; ++j) prefix.push_back(taken[j].taken);
      prefix.push_back(option);
      return prefix;
    }
  }
  return std::nullopt;
}

ExploreResult explore_deviations(const Bounds& bounds, const RunFn& run) {
  ExploreResult result;
  for (std::uint32_t round = 0;; ++round) {
    // Whether any run of the round has exactly `round` deviations, owned by
    // this shard or not: when none has, no run has more (the last deviation
    // of one would have been found as option 0 of this round), and every run
    // this shard owns was run.
    bool any_in_round = false;
    std::optional<std::vector<std::uint32_t>> prefix = std::vector<std::uint32_t>{};
    while (prefix) {
      if (result.explored >= bounds.max_runs) {
        result.deviations_covered = round == 0 ? 0 : round - 1;
        return result;
      }
      DeviationChooser chooser(std::move(*prefix), round);
      if (bounds.shard.count > 1) chooser.set_shard(bounds.shard);
      chooser.set_run_number(result.explored);
      const bool stop = run(chooser);
      const bool counted = !repeats_earlier_round(chooser) && chooser.counted();
      if (!repeats_earlier_round(chooser)) any_in_round = true;
      if (counted) ++result.explored;
      if (stop && counted) {
        result.stopped_early = true;
        return result;
      }
      prefix = next_in_round(chooser, round, bounds.shard);
    }
    if (!any_in_round) {
      result.exhaustive = true;  // no schedule has `round` deviations: every one was run
      return result;
    }
  }
}

}  // namespace

double ExploreResult::PctRuns::per_run() const {
  const double k = static_cast<double>(std::max<std::uint64_t>(steps, 1));
  return 1.0 / (std::max<std::uint32_t>(agents, 1) * std::pow(k, depth == 0 ? 0.0 : depth - 1.0));
}

double ExploreResult::PctRuns::missed() const { return std::pow(1.0 - per_run(), static_cast<double>(runs_at_depth)); }

std::uint32_t deviations(const Chooser& run) {
  std::uint32_t n = 0;
  for (const auto& c : run.taken()) n += c.taken != default_option(c) ? 1 : 0;
  return n;
}

bool deviation_dfs_before(const std::vector<Choice>& a, const std::vector<Choice>& b) {
  const auto deviations_of = [](const std::vector<Choice>& run) {
    return std::count_if(run.begin(), run.end(), [](const Choice& c) { return c.taken != default_option(c); });
  };
  if (const auto da = deviations_of(a), db = deviations_of(b); da != db) return da < db;
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), [](const Choice& x, const Choice& y) {
    return deviation_rank(x) < deviation_rank(y);
  });
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
