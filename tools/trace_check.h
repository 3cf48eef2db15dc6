// Checking a trace: one schedule (check), many (explore: random or
// exhaustive DFS, through sim::explore), or a given schedule string (replay).
// Each gives a typed Report (tools/report.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tools/report.h"
#include "tools/trace.h"

namespace streamcheck::tools {

enum class Strategy : std::uint8_t { Random, Dfs };

struct TraceCheckOptions {
  Strategy strategy = Strategy::Random;
  std::uint64_t seed = 1;
  /// Random: schedules to run. DFS: the bound (exploration stops there).
  std::uint64_t max_schedules = 1000;
  bool faults = false;
  /// Report the waits and syncs that order nothing new (Report::redundant).
  bool redundant = false;
  /// Overrides of the trace's own pool switches (--policy NAME=VALUE).
  std::vector<std::pair<std::string, std::string>> policy_overrides;
};

/// Applies NAME=VALUE pool switch overrides; throws std::invalid_argument
/// with the offending text.
PoolPolicy apply_policy_overrides(PoolPolicy p, const std::vector<std::pair<std::string, std::string>>& overrides);

using Progress = std::function<void(std::uint64_t schedules, std::size_t findings)>;

Report check_trace(const Trace& trace, const TraceCheckOptions& options);  // one schedule
Report explore_trace(const Trace& trace, const TraceCheckOptions& options, const Progress& progress = {});
/// Throws std::invalid_argument on a malformed schedule string and
/// sim::ScheduleMismatch on one recorded for another program.
Report replay_trace(const Trace& trace, const std::string& schedule, const TraceCheckOptions& options);

/// One schedule (the seed's, or the given schedule string), kept for
/// rendering; the chooser lives as long as the run that refers to it.
struct HeldRun {
  std::unique_ptr<sim::Chooser> chooser;
  std::unique_ptr<Execution> run;
  std::string schedule;
  /// The run's findings and notes (coverage: one schedule, or replay).
  Report report;
};
HeldRun run_one(const Trace& trace, const TraceCheckOptions& options, const std::optional<std::string>& schedule);

}  // namespace streamcheck::tools
