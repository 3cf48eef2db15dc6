#include "tools/merge.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tools/trace_check.h"

namespace streamcheck::tools {

namespace {

using Json = nlohmann::json;

/// A finding's identity as finding_key() writes it, read from its JSON.
std::string json_finding_key(const Json& f) {
  std::string key = fmt::format("{}|{}|{}#{}", f.at("kind").get<std::string>(), f.at("definite").get<bool>(),
                                f.at("first").at("stream").get<std::string>(), f.at("first").at("index").get<int>());
  if (f.contains("second"))
    key += fmt::format("|{}#{}", f.at("second").at("stream").get<std::string>(), f.at("second").at("index").get<int>());
  return key;
}

/// What every shard of one exploration must share.
struct Exploration {
  std::string file;
  std::string strategy;
  std::uint64_t seed = 0;
  bool executions = false;  // dfs: by executions (--strategy dfs), not schedules
  std::uint32_t count = 0;
  Json options;
  bool operator==(const Exploration&) const = default;
};

}  // namespace

Report merge_reports(const std::vector<std::string>& texts, const std::vector<std::string>& names) {
  if (texts.empty()) throw MergeError("merge: name the JSON reports of every shard");
  std::optional<Exploration> first;
  std::vector<bool> seen;
  ShardTotals totals;
  bool all_exhaustive = true;
  TraceCheckOptions options;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const std::string& name = names.at(i);
    Json j;
    try {
      j = Json::parse(texts[i]);
      const Json& c = j.at("coverage");
      if (!c.contains("shard"))
        throw MergeError(
            fmt::format("merge: {} is not the report of a shard (run `streamcheck explore FILE --shard "
                        "I/N --json`)",
                        name));
      const Json& shard = c.at("shard");
      const Exploration e{j.at("file").get<std::string>(),        c.at("strategy").get<std::string>(),
                          c.at("seed").get<std::uint64_t>(),      c.contains("executions"),
                          shard.at("count").get<std::uint32_t>(), shard.at("options")};
      if (!first) {
        first = e;
        seen.assign(e.count, false);
      } else if (!(e == *first)) {
        throw MergeError(fmt::format(
            "merge: {} comes from another exploration than {} (file, strategy, seed, shard count and options must "
            "all agree)",
            name, names.front()));
      }
      const auto index = shard.at("index").get<std::uint32_t>();
      if (index >= e.count) throw MergeError(fmt::format("merge: {} says shard {} of {}", name, index, e.count));
      if (seen[index]) throw MergeError(fmt::format("merge: shard {} of {} is given twice ({})", index, e.count, name));
      seen[index] = true;
      totals.explored += c.at("schedules").get<std::uint64_t>();
      for (const Json& r : shard.at("first_runs"))
        totals.first_runs.push_back(
            ShardFirstRun{r.at("run").get<std::uint64_t>(), r.at("schedule").get<std::string>()});
      for (const Json& f : j.at("findings"))
        totals.finding_runs[json_finding_key(f)] += f.at("schedules").get<std::uint64_t>();
      if (!c.at("exhaustive").get<bool>()) {
        const std::uint32_t covered = c.contains("dfs") ? c.at("dfs").at("deviations_covered").get<std::uint32_t>() : 0;
        totals.deviations_covered = all_exhaustive ? covered : std::min(totals.deviations_covered, covered);
        all_exhaustive = false;
      }
      if (c.contains("pct")) {
        const Json& p = c.at("pct");
        auto& merged = totals.pct;
        if (!merged) {
          merged = sim::ExploreResult::PctRuns{};
          merged->depth = p.at("depth").get<std::uint32_t>();
          merged->steps = p.at("steps").get<std::uint64_t>();
        }
        merged->agents = std::max(merged->agents, p.at("agents").get<std::uint32_t>());
        merged->runs_at_depth += p.at("runs_at_depth").get<std::uint64_t>();
      }
    } catch (const Json::exception& e) {
      throw MergeError(fmt::format("merge: {} is not a streamcheck JSON report: {}", name, e.what()));
    }
  }
  for (std::uint32_t s = 0; s < first->count; ++s)
    if (!seen[s])
      throw MergeError(
          fmt::format("merge: the report of shard {} of {} is missing; give all {}", s, first->count, first->count));
  std::sort(totals.first_runs.begin(), totals.first_runs.end(),
            [](const ShardFirstRun& a, const ShardFirstRun& b) { return a.run < b.run; });

  if (first->strategy == "random")
    options.strategy = Strategy::Random;
  else if (first->strategy == "pct")
    options.strategy = Strategy::Pct;
  else if (first->strategy == "dfs")
    options.strategy = first->executions ? Strategy::Dfs : Strategy::DfsSchedules;
  else
    throw MergeError(fmt::format("merge: strategy {} is not sharded", first->strategy));
  totals.exhaustive = all_exhaustive;
  options.seed = first->seed;
  options.max_schedules = first->options.at("schedules").get<std::uint64_t>();
  options.pct_depth = first->options.at("depth").get<std::uint32_t>();
  options.faults = first->options.at("faults").get<bool>();
  for (const Json& p : first->options.at("policy"))
    options.policy_overrides.emplace_back(p.at(0).get<std::string>(), p.at(1).get<std::string>());
  const Trace trace = load_trace(first->file);
  return merge_shards(trace, options, totals);
}

}  // namespace streamcheck::tools
