// The typed result of checking a trace (check, explore, replay): every
// finding, note and figure as data. Sinks only format it -- report_text for
// people, report_json for tools (docs/report.schema.json, docs/TRACES.md);
// the words of each part come from tools/explain.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend_sim/device_model.h"
#include "backend_sim/explorer.h"
#include "model/pool_policy.h"
#include "tools/fix.h"
#include "tools/out_of_line.h"
#include "tools/producers.h"
#include "tools/redundant.h"
#include "tools/shared_text.h"
#include "tools/trace.h"

namespace streamcheck::tools {

enum class Severity : std::uint8_t { Error, Warning };

/// An op as the report names it: its place in the simulator, the trace's name
/// of its stream, and the trace statement that enqueued it.
struct ReportOp {
  sim::OpRef ref;
  SharedText stream;  // the trace's name of ref.stream: one copy for the ops of each stream
  /// The statement that enqueued the op; nullopt for an op of no statement
  /// (inside the resource), which `description` then names.
  std::optional<OpOrigin> origin;
  /// The simulator's description of the op, set only when no statement
  /// names it (`origin`): the only case that reads it. Out of line: a
  /// racy loop's report holds two ops a finding, each of a statement.
  OutOfLine<std::string> description;
};

/// One range of the bytes both ops touch: offsets into the trace buffer that
/// holds it, else device addresses.
using ReportBytes = NamedBytes;

/// How the two ops are (not) ordered.
enum class Ordering : std::uint8_t {
  NeverFreed,      // a leak: no free at all
  FreedBeforeUse,  // the free happens before the use (a definite use after free)
  MissingEdge,     // no happens-before path from first to second
};

/// The change that removes the finding.
enum class Fix : std::uint8_t {
  FreeTheBuffer,       // free it once its last use is enqueued
  KeepAliveUntilUse,   // keep the buffer alive until after the second op
  RecordEventAndWait,  // record an event after first; make second's stream wait on it
  /// first writes what second reads, and second already reads an earlier
  /// write (its producer): the edge first -> second would make it read the
  /// wrong data, and the edge second -> first inverts the enqueue order.
  /// Reorder the host code or double-buffer (no edit is offered).
  ReorderOrDoubleBuffer,
  // The trace's own synchronization almost orders the pair (a NearMiss
  // explains the finding); the fix names its line instead of a new event.
  MoveRecordAfterFirst,  // RecordTooEarly: move the record after first's line
  MoveWaitAfterRecord,   // WaitNeverRecorded: move the wait after the record of first
  WaitBeforeReRecord,    // StaleCapture: wait on the event before the re-record replaces the capture
  WaitOnTheRecord,       // RecordNeverWaited: wait on the record of first before second
  // Resource mode (`resource`): the fix in resource calls, not raw CUDA.
  FinishTheUse,               // PrepareWithoutFinish: add the missing `finish` after the raw use
  PrepareAndFinishTheLaunch,  // a raw launch on a resource block: bracket it with `prepare`/`finish`
  /// Both ops are the resource's own calls under a `mutant`: the resource
  /// should order them; no edit of the trace does.
  ResourceOrdersThem,
  /// R12: the second op is the host's own access (a host stream's op) and
  /// the first a stream's: the host must synchronize with that stream (or an
  /// event recorded after the first op) before it touches the bytes.
  SyncBeforeHostUse,
  /// R12: one op is a host thread's own access and the other was enqueued
  /// or done by another host thread: order the threads (join, lock,
  /// send/receive) so that the first's thread has finished with the bytes,
  /// synchronizing with the device where the first op is device work.
  OrderTheHostThreads,
};

/// A statement of the trace: its line and text.
using TraceLine = OpOrigin;

/// Synchronization the trace has that almost does what the program needs:
/// computed from the trace's statements in file order (record, wait,
/// prepare, finish). A note of its own, never counted as a finding; when one
/// explains a finding, the finding's fix names its line.
struct NearMiss {
  enum class Kind : std::uint8_t {
    /// `record E on P` comes before `op`, which a later `wait E` on the
    /// racing stream (`seen_by`) needed in the capture: moved after `op`,
    /// the record would order it.
    RecordTooEarly,
    /// `wait E on S` with no `record E` before it: it orders nothing. `op`:
    /// the first record of E after it, when there is one.
    WaitNeverRecorded,
    /// A wait (`statement`) saw the capture of a re-record (`seen_by`) of
    /// its event that replaced the capture it needed (`op`'s record).
    StaleCapture,
    /// `record E on P` comes after `op` (the first op, on P) and before
    /// `seen_by` (the second), and is E's last record before it, but no
    /// wait on the second op's stream sees it: the missing `wait E`.
    RecordNeverWaited,
    /// `prepare B on S ACCESS` with no matching `finish` before `seen_by`
    /// (the deallocate or next use), or ever: the resource never learns of
    /// the use, so it orders nothing after it.
    PrepareWithoutFinish,
  };
  Kind kind = Kind::WaitNeverRecorded;
  TraceLine statement;  // the record, wait or prepare that misses
  /// RecordTooEarly: the op it should follow; WaitNeverRecorded: the record
  /// after the wait; StaleCapture: the record whose capture was replaced;
  /// RecordNeverWaited: the op it captures.
  std::optional<TraceLine> op;
  /// RecordTooEarly: the wait that needed it; StaleCapture: the re-record;
  /// RecordNeverWaited: the op that needed a wait on it;
  /// PrepareWithoutFinish: the statement the missing finish had to precede.
  std::optional<TraceLine> seen_by;
  friend bool operator==(const NearMiss&, const NearMiss&) = default;
};

struct ReportFinding {
  sim::FindingKind kind;
  bool definite = false;  // use after free: the free is HB-before the use
  Severity severity = Severity::Error;
  ReportOp first;
  std::optional<ReportOp> second;  // nullopt for a leak
  /// Every range both ops touch, in address order, each in one buffer (or
  /// in none): never their hull.
  std::vector<ReportBytes> bytes;
  Ordering order = Ordering::MissingEdge;
  Fix fix = Fix::RecordEventAndWait;
  /// The near miss the fix moves or completes (MoveRecordAfterFirst ..
  /// FinishTheUse); nullopt for the other fixes.
  OutOfLine<NearMiss> near_miss;
  /// The fix as edits of the trace, when it names lines of its own (a
  /// near-miss move, a resource call); empty: the group's edits (record and
  /// wait a new event) fix it, or no edit does (ReorderOrDoubleBuffer).
  std::vector<TraceEdit> edits;
  /// ReorderOrDoubleBuffer: the write `second` reads today (its last
  /// HB-ordered writer of these bytes, tools/producers.h).
  OutOfLine<ReportOp> producer;
  /// A streamed check, which keeps no earlier writes: `first` writes bytes
  /// `second` reads, and whether an earlier write ordered before `second`
  /// (which the fix's edge would replace, ReorderOrDoubleBuffer) exists was
  /// not checked. The fix names it; a check without --stream tells.
  bool producer_unchecked = false;
  /// The branch that first schedule took at each `if done` it reached (R11).
  std::vector<BranchTaken> branches;
  SharedText schedule;  // the first schedule that showed it; empty for a streamed check's (its seed runs it)
  /// Where save_long_schedules wrote `schedule` (tools/schedule_io.h); the
  /// text report then names the file instead of printing a long schedule.
  OutOfLine<std::string> schedule_file;
  std::uint64_t schedules = 0;  // how many schedules showed it
  /// R9c: when the two ops' streams shared a handle (`stream B handle A`),
  /// what that means for code keyed by the handle.
  OutOfLine<std::string> same_handle{};
};

/// Findings with one root cause: the ones one edit set removes (one missing
/// edge: a record after the last racing op on one stream and a wait before
/// the first racing op on the other).
struct FindingGroup {
  std::vector<std::size_t> findings;  // indices into Report::findings, ascending
  /// The fix of them all, applied by `streamcheck fix`; empty when no edit is
  /// offered (the findings' fix says why: ReorderOrDoubleBuffer, a leak).
  std::vector<TraceEdit> edits;
  /// Set (and no edits) when the record/wait pair that would remove the
  /// finding changes which write some read sees: the first such read. Out
  /// of line: rarely set, and 160 bytes inline in every group of a racy
  /// loop's report, where each finding is a group of its own.
  OutOfLine<ProducerChange> breaks_producer;
};

/// A command that would explore what this run did not.
struct NextStep {
  std::string command;  // a whole command line, e.g. "streamcheck explore F --strategy dfs --schedules 10000"
  std::string why;
};

/// A run of a sharded exploration that first showed a finding or a note:
/// its number in the whole exploration and its schedule.
struct ShardFirstRun {
  std::uint64_t run = 0;
  std::string schedule;
};

/// What was explored, whether that was everything, and if not, how far it
/// got and what would finish it (issue 10: never a silent "clean").
struct Coverage {
  /// Streamed: one execution of a trace read and run a statement at a time
  /// (check --stream), every op executed as soon as it was enqueued
  /// (sim::DeviceProgress::AtOnce).
  enum class How : std::uint8_t { OneSchedule, Replay, Random, Dfs, Pct, Streamed };
  How how = How::OneSchedule;
  std::uint64_t seed = 0;
  std::uint64_t explored = 0;  // schedules run
  /// Runs over executions (DeviceProgress::OnObservation: `check`, dfs,
  /// a replay of an `observed` schedule): each run was one execution, one
  /// outcome of every observation (query answers, pool reuses, faults); the
  /// runs that differ only in the order independent device work completes
  /// were not run, their verdict being the same. False: every device step
  /// was a choice of its own (dfs-schedules, random, pct).
  bool executions = false;
  /// Every schedule of the trace was run (or, with `executions`, every
  /// execution): DFS finished, or the one run (check, replay) was the only
  /// one (it made no choice).
  bool exhaustive = false;
  /// The --schedules bound that stopped an exploration short of exhausting
  /// the schedules; nullopt when it ran to its end (or ran one schedule).
  std::optional<std::uint64_t> bound;
  /// One schedule (check, replay): the choices its run made and did not
  /// explore.
  ChoiceSummary unexplored;
  /// DFS stopped by its bound: how far it got. DFS runs the schedules fewest
  /// deviations first (sim::DeviationDfs; a deviation is a choice that took
  /// another option than its first); it ran every schedule with at most
  /// `deviations_covered` deviations, of runs of about `choices_per_run`
  /// choices (its last run's).
  struct DfsDepth {
    std::uint64_t choices_per_run = 0;
    std::uint32_t deviations_covered = 0;
  };
  std::optional<DfsDepth> dfs;
  /// Pct: the runs its probability bound is stated over.
  std::optional<sim::ExploreResult::PctRuns> pct;
  /// `--shard I/N`: which part this was, the options every part must share,
  /// and the runs of this part that first showed a finding or a note (what
  /// `streamcheck merge` replays). nullopt when not sharded.
  struct ShardPart {
    std::uint32_t index = 0;
    std::uint32_t count = 1;
    std::uint64_t max_schedules = 0;
    std::uint32_t pct_depth = 0;
    bool faults = false;
    std::vector<std::pair<std::string, std::string>> policy_overrides;
    std::vector<ShardFirstRun> first_runs;
  };
  std::optional<ShardPart> shard;
  /// What would explore the rest; empty when exhaustive.
  std::vector<NextStep> to_finish;
  /// Streamed: the ops the run enqueued, and how many records of them it
  /// held at the end (those something still named, and those since its
  /// last retention pass): what its memory grew with.
  struct StreamedRun {
    std::uint64_t statements = 0;
    std::uint64_t ops = 0;
    std::uint64_t held_ops = 0;
  };
  std::optional<StreamedRun> streamed;
};

/// `replay --backend cuda`: the trace run on the GPU with the first op of
/// every finding held back.
struct GpuReplay {
  std::string device;
  std::uint32_t runs = 0;
  std::uint32_t runs_with_mismatches = 0;
  std::uint64_t mismatching_words = 0;
  std::uint32_t runs_with_wrong_final_contents = 0;  // a live buffer's last write did not land last
  std::uint64_t wrong_final_words = 0;
  std::vector<std::string> notes;  // resource calls refused on the GPU
};

/// Clean: no error finding and no error note. Findings: at least one error
/// finding (the JSON `findings` array is then never empty). Errors: no error
/// finding, but the run itself went wrong (an error note: a refused resource
/// call, a double free; or corrupted reads on the GPU). Findings and Errors
/// exit 1.
enum class Verdict : std::uint8_t { Clean, Findings, Errors };

/// Whether a note of this kind makes the run fail (Severity::Error) or only
/// informs (Severity::Warning). A new NoteKind must say which here.
Severity severity(NoteKind kind);

struct Report {
  std::string file;
  Coverage coverage;
  PoolPolicy policy;
  std::vector<ReportFinding> findings;
  /// Every finding in exactly one group, in the order of their first finding.
  std::vector<FindingGroup> groups;
  std::vector<Note> notes;  // what went wrong that is no HB finding, with its line
  /// Synchronization that almost orders what it should, each once, by line;
  /// notes that do not count towards the verdict.
  std::vector<NearMiss> near_misses;
  std::optional<GpuReplay> gpu;
  /// --redundant: the `wait` and `sync` statements that ordered nothing new
  /// in every schedule run; nullopt when not asked for. Warnings: they never
  /// change the verdict.
  std::optional<std::vector<RedundantCall>> redundant;

  /// Findings when an error finding was found; else Errors when an error
  /// note or a corrupted read on the GPU was; else Clean (leaks and warning
  /// notes alone are clean).
  Verdict verdict() const;
};

std::string report_text(const Report& r);
/// The JSON report, docs/report.schema.json (kReportSchemaVersion).
std::string report_json(const Report& r);

/// The version of docs/report.schema.json that report_json writes (its
/// `schema_version` field and the version in its `$id`).
inline constexpr int kReportSchemaVersion = 3;

/// Why a run gave no report: the input or the command line was wrong
/// (exit 2). With --json this is printed as a JSON object of the same schema
/// (verdict "input error").
struct InputError {
  enum class Kind : std::uint8_t { Usage, Trace, Schedule };
  Kind kind = Kind::Usage;
  std::string file;  // empty when no trace file was named
  int line = 0;      // 0: not at a line of the file
  int col = 0;
  std::string message;  // as printed on stderr
};
std::string input_error_json(const InputError& e);

}  // namespace streamcheck::tools
