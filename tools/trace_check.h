// Checking a trace: one schedule (check), many (explore: random or
// exhaustive DFS), or a given schedule string (replay); and the reports,
// as text for people and JSON for tools (schema in docs/TRACES.md).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tools/trace.h"

namespace streamcheck::tools {

enum class Strategy : std::uint8_t { Random, Dfs };

struct TraceCheckOptions {
  Strategy strategy = Strategy::Random;
  std::uint64_t seed = 1;
  /// Random: schedules to run. DFS: the bound (exploration stops there).
  std::uint64_t max_schedules = 1000;
  bool faults = false;
  /// Overrides of the trace's own pool switches (--policy NAME=VALUE).
  std::vector<std::pair<std::string, std::string>> policy_overrides;
};

struct TraceFinding {
  std::string kind;  // "data race", "use before ready", ...
  bool definite = false;
  bool warning = false;  // leaks
  std::string first;     // "line 4 (launch K1 on s1 writes A) [s1#0]"
  std::string second;    // empty for a leak
  int first_line = 0;
  std::uint32_t first_stream = 0;  // the first op as (stream index, op index on it)
  std::uint32_t first_index = 0;
  std::string first_op;  // the first op as the report names it: "s1#0"
  int second_line = 0;
  std::string bytes;  // "A[0:4096]"
  std::string order;  // the HB path, or its absence
  std::string fix;
  std::string schedule;         // the first schedule that showed it
  std::uint64_t schedules = 0;  // how many schedules showed it
};

struct TraceReport {
  std::string file;
  std::string strategy;
  std::uint64_t seed = 0;
  std::uint64_t schedules = 0;
  bool exhaustive = false;  // DFS explored every schedule
  std::string policy;
  std::vector<TraceFinding> findings;
  std::vector<std::string> notes;  // "line 8: deallocate refused: ..."
  /// 0 clean (leaks are warnings), 1 findings.
  int exit_code() const;
};

/// Applies NAME=VALUE pool switch overrides; throws std::invalid_argument
/// with the offending text.
PoolPolicy apply_policy_overrides(PoolPolicy p, const std::vector<std::pair<std::string, std::string>>& overrides);

using Progress = std::function<void(std::uint64_t schedules, std::size_t findings)>;

TraceReport check_trace(const Trace& trace, const TraceCheckOptions& options);  // one schedule
TraceReport explore_trace(const Trace& trace, const TraceCheckOptions& options, const Progress& progress = {});
TraceReport replay_trace(const Trace& trace, const std::string& schedule, const TraceCheckOptions& options);

std::string report_text(const TraceReport& r);
std::string report_json(const TraceReport& r);

/// One schedule (the seed's, or the given schedule string), kept for
/// rendering; the chooser lives as long as the run that refers to it.
struct HeldRun {
  std::unique_ptr<sim::Chooser> chooser;
  std::unique_ptr<TraceRun> run;
  std::string schedule;
};
HeldRun run_one(const Trace& trace, const TraceCheckOptions& options, const std::optional<std::string>& schedule);

}  // namespace streamcheck::tools
