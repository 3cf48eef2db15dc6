// Checking a trace: one execution (check), many schedules or executions
// (explore: random, PCT or exhaustive DFS, through sim::explore), or a given
// schedule string (replay).
// Each gives a typed Report (tools/report.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tools/report.h"
#include "tools/trace.h"

namespace streamcheck::tools {

/// Random: seeded random schedules. Dfs: every execution (the device makes
/// progress only where the host observes it; schedules that differ only in
/// the order independent device work completes are one execution).
/// DfsSchedules: every schedule, each device step a choice (the naive
/// enumeration Dfs replaced; kept to compare with). Pct: probabilistic
/// concurrency testing of depth `pct_depth` (sim::Pct), with the bound it
/// guarantees in the coverage.
enum class Strategy : std::uint8_t { Random, Dfs, DfsSchedules, Pct };

struct TraceCheckOptions {
  Strategy strategy = Strategy::Random;
  std::uint64_t seed = 1;
  /// Random, Pct: schedules to run. DFS: the bound (exploration stops there).
  std::uint64_t max_schedules = 1000;
  /// Pct: the bug depth each run is drawn for (its change points + 1).
  std::uint32_t pct_depth = 3;
  /// `--shard I/N`: run only part I of N of the exploration (sim::Shard);
  /// the report then lists what `streamcheck merge` needs.
  std::optional<sim::Shard> shard;
  bool faults = false;
  /// Report the waits and syncs that order nothing new (Report::redundant).
  bool redundant = false;
  /// Overrides of the trace's own pool switches (--policy NAME=VALUE).
  std::vector<std::pair<std::string, std::string>> policy_overrides;
  /// How the device progresses; nullopt: as the command needs (check and
  /// Dfs: OnObservation, else EveryStep). A replayed schedule's header sets it.
  std::optional<sim::DeviceProgress> progress;
};

/// Applies NAME=VALUE pool switch overrides; throws std::invalid_argument
/// with the offending text.
PoolPolicy apply_policy_overrides(PoolPolicy p, const std::vector<std::pair<std::string, std::string>>& overrides);

/// What one run of `trace` needs from the options: the pool (the trace's
/// switches with the overrides applied) and --faults.
TraceRunOptions run_options_of(const Trace& trace, const TraceCheckOptions& options);
/// An op of a run as a report names it (its stream, statement, description).
ReportOp report_op(const Execution& run, sim::OpRef op);

using Progress = std::function<void(std::uint64_t schedules, std::size_t findings)>;

/// One run under the seed, the device progressing on observation unless
/// `options.progress` says otherwise: one execution, exhaustive when the run
/// made no choice.
Report check_trace(const Trace& trace, const TraceCheckOptions& options);
/// `check` of trace file `path`: check_trace of the whole trace, unless one
/// streamed run shows the trace clean with no statement near miss, when
/// that run's report is the whole one's and the trace is never held
/// (docs/TRACES.md, "`check` streams a trace first").
Report check_trace_file(const std::string& path, const TraceCheckOptions& options);
/// check_trace_file's report of a trace one streamed run shows clean: the
/// run found nothing and noted nothing, and no statement may be a statement
/// near miss (StatementNearMissWatch), the one thing a clean whole-trace
/// report adds. The run executes each op at once and, at its first choice
/// or query, starts again as check_trace's own (its seed, the device
/// progressing on observation): a run that made no choice and asked no
/// query has every schedule's verdict (exhaustive, as check_streamed says),
/// one whose choices are pool reuses and query answers alone lists them as
/// check_trace's report does. nullopt, and the trace is to be checked
/// whole: anything else (another kind of choice included), options that
/// need the whole run (--faults, --redundant, a shard, another device
/// progress), a path that is not a regular file (a pipe is read once), or
/// input the streamed read refuses (the whole read says why when it is an
/// error). The read stops at the first finding or possible near miss.
std::optional<Report> clean_by_streaming(const std::string& path, const TraceCheckOptions& options);
/// `check --stream` (docs/TRACES.md, "Streamed checks"): trace file `path`
/// read and run a statement at a time (TraceReader), every op executed as
/// soon as it is enqueued (sim::DeviceProgress::AtOnce), the records of
/// executed ops nothing names dropped as it goes: memory grows with what
/// the trace holds at once (names, buffers, allocations, the shadow of its
/// bytes, findings), not with its length. One execution; exhaustive when
/// it made no choice and asked no query. Findings carry no schedule, no
/// near miss and no edits, and a fix that could change what a read sees
/// says it is unchecked (ReportFinding::producer_unchecked). Throws
/// TraceError for input it cannot stream (TraceReader), and
/// std::invalid_argument for --faults and --redundant (which need the whole
/// run kept).
Report check_streamed(const std::string& path, const TraceCheckOptions& options);
Report explore_trace(const Trace& trace, const TraceCheckOptions& options, const Progress& progress = {});
struct ScheduleToReplay;  // tools/schedule_io.h
/// Runs exactly the schedule, with the options it was recorded with
/// (schedule_to_replay). Throws sim::ScheduleMismatch, saying where, when it
/// does not fit the program.
Report replay_trace(const Trace& trace, const ScheduleToReplay& replay);
/// As above for a schedule string, `options` as a command line without
/// --faults would give them (std::invalid_argument when malformed).
Report replay_trace(const Trace& trace, const std::string& schedule, const TraceCheckOptions& options);

/// One schedule (the seed's, or a schedule to replay), kept for rendering;
/// the chooser lives as long as the run that refers to it, and the trace
/// must (the run's origins point into its statements).
struct HeldRun {
  std::unique_ptr<sim::Chooser> chooser;
  std::unique_ptr<Execution> run;
  std::string schedule;
  /// The run's findings and notes (coverage: one schedule, or replay).
  Report report;
};
HeldRun run_one(const Trace& trace, const TraceCheckOptions& options);

/// What `streamcheck merge` read from the shards' reports (tools/merge.h):
/// the runs that first showed a finding or note in any shard, and the
/// totals. merge_shards replays those runs in run order, as one exploration
/// would have met them, and puts the totals in: the report one unsharded
/// exploration gives.
struct ShardTotals {
  std::vector<ShardFirstRun> first_runs;  // sorted by run
  std::uint64_t explored = 0;
  /// Per finding (finding_key), the runs that showed it, over all shards.
  std::map<std::string, std::uint64_t> finding_runs;
  std::optional<sim::ExploreResult::PctRuns> pct;
  /// Dfs: every shard ran all of its part; if not, the fewest deviations
  /// every shard covered.
  bool exhaustive = false;
  std::uint32_t deviations_covered = 0;
};
Report merge_shards(const Trace& trace, const TraceCheckOptions& options, const ShardTotals& totals);
/// A finding's identity across shards: its kind, whether definite, and its
/// ops by stream name and index.
std::string finding_key(const ReportFinding& f);
HeldRun replay_one(const Trace& trace, const ScheduleToReplay& replay);

}  // namespace streamcheck::tools
