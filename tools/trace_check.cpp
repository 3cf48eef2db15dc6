#include "tools/trace_check.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>
#include <variant>

#include "backend_sim/explain.h"
#include "backend_sim/explorer.h"
#include "tools/fix_plan.h"
#include "tools/near_miss.h"
#include "tools/producers.h"
#include "tools/schedule_io.h"

namespace streamcheck::tools {

PoolPolicy apply_policy_overrides(PoolPolicy p, const std::vector<std::pair<std::string, std::string>>& overrides) {
  for (const auto& [name, value] : overrides) {
    const auto problem = set_pool_switch(p, name, value, [&](std::string_view) -> std::uint64_t {
      const ParsedNumber n = parse_number(value);
      if (n.problem)
        throw std::invalid_argument(
            "--policy release_threshold needs a number (decimal or 0x hexadecimal, at most "
            "2^64-1), got '" +
            shown_input(value) + "'");
      return n.value;
    });
    if (problem == PoolSwitchProblem::ValueNotOnOff)
      throw std::invalid_argument("--policy " + shown_input(name) + " needs on or off, got '" + shown_input(value) +
                                  "'");
    if (problem == PoolSwitchProblem::UnknownSwitch)
      throw std::invalid_argument("unknown pool switch '" + shown_input(name) + "' (" + std::string(kPoolSwitchNames) +
                                  ")");
  }
  return p;
}

TraceRunOptions run_options_of(const Trace& trace, const TraceCheckOptions& o) {
  const auto by_strategy =
      o.strategy == Strategy::Dfs ? sim::DeviceProgress::OnObservation : sim::DeviceProgress::EveryStep;
  return TraceRunOptions{apply_policy_overrides(trace.policy, o.policy_overrides), o.faults,
                         o.progress.value_or(by_strategy)};
}

ReportOp report_op(const Execution& run, sim::OpRef op) {
  std::optional<OpOrigin> origin = run.origin(op);
  // Only an op of no statement is named by its description (a racy loop's
  // report made one per op it names, each its own string).
  OutOfLine<std::string> description;
  if (!origin) description = sim::describe(run.model(), op);
  return ReportOp{op, run.shared_text(run.model().stream_name(op.stream)), std::move(origin), std::move(description)};
}

namespace {

/// The finding's bytes, named by the buffers of `first`'s accesses where
/// several buffers hold them (a block handed out again, R10).
std::vector<ReportBytes> report_bytes(const Execution& run, sim::OpRef first,
                                      const std::vector<sim::ByteRange>& ranges) {
  const std::vector<sim::OpAccess> accesses = run.model().accesses(first);
  std::vector<ReportBytes> out;
  for (const sim::ByteRange& r : ranges) {
    std::optional<std::uint32_t> prefer;
    for (const sim::OpAccess& a : accesses)
      if (a.range.lo < r.hi && r.lo < a.range.hi) prefer = a.allocation.value;
    for (ReportBytes& piece : run.name_bytes(r, prefer)) out.push_back(std::move(piece));
  }
  return out;
}

/// Whether the finding's op `op` touches its bytes `how` (writes or reads).
bool touches_the_bytes(const sim::DeviceModel& model, const sim::Finding& f, sim::OpRef op, bool (*how)(Access)) {
  const auto accesses = model.accesses(op);
  return std::any_of(accesses.begin(), accesses.end(), [&](const sim::OpAccess& a) {
    return how(a.access) && std::any_of(f.bytes.begin(), f.bytes.end(),
                                        [&](sim::ByteRange r) { return a.range.lo < r.hi && r.lo < a.range.hi; });
  });
}

/// When `first` writes bytes that `second` reads, and the original trace
/// already orders a write of those bytes before `second` (its producer), the
/// edge first -> second would make `second` read first's data instead: that
/// producer. The other edge, second -> first, inverts the enqueue order.
std::optional<sim::OpRef> producer_an_edge_would_replace(const sim::DeviceModel& model, const ProducerIndex& producers,
                                                         const sim::Finding& f) {
  if (!f.second || f.definite || !touches_the_bytes(model, f, f.first, writes)) return std::nullopt;
  const auto overlaps = [&](sim::ByteRange b) {
    return std::any_of(f.bytes.begin(), f.bytes.end(), [&](sim::ByteRange r) { return b.lo < r.hi && r.lo < b.hi; });
  };
  for (const Produced& p : producers.of(*f.second))
    if (overlaps(p.bytes) && std::find(p.writers.begin(), p.writers.end(), f.first) == p.writers.end())
      return p.writers.front();
  return std::nullopt;
}

/// R12: a race with the host's own access is fixed by the host, not by an
/// event between streams: the host synchronizes with the first op's stream
/// before its access (an edit, when the trace can name that stream on the
/// host's line), or, across host threads, the threads are ordered.
void host_fix(ReportFinding& out) {
  const bool first_host = is_host_stream(out.first.stream);
  const bool second_host = is_host_stream(out.second->stream);
  if (!first_host && !second_host) return;
  if (first_host || !out.second->origin) {
    out.fix = Fix::OrderTheHostThreads;
    return;
  }
  out.fix = Fix::SyncBeforeHostUse;
  const std::string thread = out.second->stream.str().substr(kHostStreamPrefix.size() + 1);
  // A per-thread default stream is written `per_thread` on its own thread's
  // lines only: another thread cannot name it.
  const std::string stream = trace_name_of(out.first.stream);
  if (is_graph_branch(stream)) return;  // R14b: no statement can name it
  if (stream == kPerThreadStream && out.first.stream != fmt::format("{}{}{}", kPerThreadStream, kThreadMark, thread))
    return;
  const std::string prefix = thread == kMainThread ? "" : fmt::format("{}{} ", kThreadMark, thread);
  out.edits = {TraceEdit::insert_before(out.second->origin->line, prefix + "sync stream " + stream)};
}

/// R9c: when one stream got the other's handle (directly or through
/// streams between), what that means; nullopt otherwise.
std::optional<std::string> shared_handle(const Execution& run, const std::string& a, const std::string& b) {
  const auto& reuses = run.handle_reuses();
  for (const auto& [newer, older] : {std::pair{a, b}, std::pair{b, a}}) {
    std::string at = newer;
    int line = 0;
    for (auto it = reuses.find(at); it != reuses.end(); it = reuses.find(at)) {
      line = line == 0 ? it->second.line : line;
      at = it->second.older;
      if (at == older)
        return fmt::format(
            "{} was created with the handle {} had (line {}): code keyed by the handle (an allocator's per-stream "
            "free list, a per-stream event cache) takes the two for one stream, but nothing orders {} after {}'s "
            "work (R9c)",
            newer, older, line, newer, older);
    }
  }
  return std::nullopt;
}

/// `producers`: the run's; null for a streamed run, which keeps no earlier
/// writes: a fix that could replace what the second op reads is then marked
/// unchecked instead of checked (ReportFinding::producer_unchecked).
ReportFinding report_finding(const Execution& run, const sim::Finding& f, const SharedText& schedule,
                             const ProducerIndex* producers) {
  ReportFinding out{.kind = f.kind,
                    .definite = f.definite,
                    .severity = f.kind == sim::FindingKind::Leak ? Severity::Warning : Severity::Error,
                    .first = report_op(run, f.first),
                    .second = std::nullopt,
                    .bytes = report_bytes(run, f.first, f.bytes),
                    .order = Ordering::NeverFreed,
                    .fix = Fix::FreeTheBuffer,
                    .near_miss = std::nullopt,
                    .edits = {},
                    .producer = std::nullopt,
                    .branches = run.branches(),
                    .schedule = schedule,
                    .schedule_file = std::nullopt,
                    .schedules = 1};
  if (!f.second) return out;  // a leak
  out.second = report_op(run, *f.second);
  out.same_handle = shared_handle(run, out.first.stream, out.second->stream);
  out.order = f.definite ? Ordering::FreedBeforeUse : Ordering::MissingEdge;
  out.fix = f.definite ? Fix::KeepAliveUntilUse : Fix::RecordEventAndWait;
  if (!f.definite) host_fix(out);
  if (producers == nullptr) {
    out.producer_unchecked = !f.definite && touches_the_bytes(run.model(), f, f.first, writes) &&
                             touches_the_bytes(run.model(), f, *f.second, reads);
  } else if (const auto producer = producer_an_edge_would_replace(run.model(), *producers, f)) {
    out.fix = Fix::ReorderOrDoubleBuffer;
    out.producer = report_op(run, *producer);
  }
  return out;
}

/// The choices of `run` made before its `end`-th choice, as a report names
/// them (the first kMaxListedChoices of each kind listed, the rest counted);
/// queries asked then too. Queries count only when device steps (or the
/// query itself, when the device progresses on observation) could have
/// changed their answer.
ChoiceSummary summarize(const std::vector<ChoicePoint>& choices, const std::vector<QueryAnswer>& queries,
                        std::size_t end) {
  ChoiceSummary s;
  bool query_choices = false;
  for (std::size_t i = 0; i < std::min(end, choices.size()); ++i) {
    const ChoicePoint& c = choices[i];
    switch (c.kind) {
      case sim::ChoiceKind::PoolRange:
        s.list(s.pool_reuse, c);
        break;
      case sim::ChoiceKind::Fault:
        s.list(s.faults, c);
        break;
      case sim::ChoiceKind::DeviceStep:
      case sim::ChoiceKind::Client:
      case sim::ChoiceKind::HostStep:
        ++s.device_steps;
        break;
      case sim::ChoiceKind::QueryAnswer:
        query_choices = true;
        break;
    }
  }
  if (s.device_steps > 0 || query_choices)
    for (const auto& q : queries)
      if (q.after_choices <= end) s.list(s.queries, q);
  return s;
}

/// What would explore the rest of one schedule's run that made choices.
void add_one_schedule_next_steps(Coverage& c, const std::string& file, const std::string& same) {
  c.to_finish.push_back({fmt::format("streamcheck explore {}{}", file, same),
                         "random schedules vary every choice point (1000 by default)"});
  c.to_finish.push_back({fmt::format("streamcheck explore {} --strategy dfs{}", file, same),
                         "every execution, exhaustive if it finishes within --schedules"});
}

/// The command line options of `o` that change what a run does, as they are
/// typed, so a suggested command explores the same program.
std::string run_options_text(const TraceCheckOptions& o) {
  std::string out;
  if (o.faults) out += " --faults on";
  for (const auto& [name, value] : o.policy_overrides) out += " --policy " + name + "=" + value;
  return out;
}

/// Adds the findings and notes of each run to one report, each once, and
/// keeps what its coverage needs; a finding keeps the first schedule that
/// showed it, with the header that makes it replay (tools/schedule_io.h).
class Collector {
 public:
  Collector(const Trace& trace, const TraceCheckOptions& o, Coverage::How how)
      : trace_(trace),
        options_(o),
        near_misses_(trace),
        run_options_(run_options_of(trace, o)),
        header_(schedule_header(trace, run_options_)) {
    report_.file = trace.file;
    if (o.redundant) report_.redundant.emplace();
    for (NearMiss& n : near_misses_.statement_near_misses()) add_near_miss(std::move(n));
    report_.coverage.how = how;
    report_.coverage.seed = o.seed;
    report_.coverage.executions = run_options_.progress == sim::DeviceProgress::OnObservation;
    report_.policy = run_options_.policy;
  }
  const TraceRunOptions& run_options() const { return run_options_; }
  std::string schedule_of(const sim::Chooser& chooser) const { return sim::encode_schedule(header_, chooser.taken()); }

  void add(const Execution& run, const sim::Chooser& chooser) {
    ++report_.coverage.explored;
    const std::size_t findings_before = report_.findings.size(), notes_before = report_.notes.size();
    std::optional<SharedText> schedule;          // encoded once, when a new finding needs it: every finding shares it
    const ProducerIndex producers(run.model());  // indexed when a new finding asks first
    // Room for every finding of the run at once: a loop's finding in each
    // iteration would otherwise move every finding (hundreds of bytes each) at
    // each growth and fault in the new array's pages (a tenth of `check`).
    auto& findings = report_.findings;
    if (const std::size_t most = findings.size() + run.model().findings().size(); most > findings.capacity())
      findings.reserve(std::max(most, 2 * findings.capacity()));
    // Only earlier runs' findings are looked up: a run's own are each
    // distinct (RaceChecker::findings), so the first run, and `check`'s
    // only one, makes no index (a map node a finding, 5 % of a racy loop's
    // check at its peak). The report's findings are each distinct too, so
    // the index holds its first index_.size() of them.
    for (std::size_t i = index_.size(); i < findings_before; ++i) {
      const ReportFinding& f = findings[i];
      const Key k{f.kind, f.first.ref, f.second ? std::optional(f.second->ref) : std::nullopt, f.definite};
      if (!index_.emplace(k, i).second)
        throw std::logic_error("Collector: internal error: a run showed one finding twice");
    }
    for (const auto& f : run.model().findings()) {
      if (!index_.empty())
        if (auto it = index_.find(Key{f.kind, f.first, f.second, f.definite}); it != index_.end()) {
          ++findings[it->second].schedules;
          continue;
        }
      if (!schedule) schedule = schedule_of(chooser);
      ReportFinding& added = findings.emplace_back(report_finding(run, f, *schedule, &producers));
      // Only a finding whose fix would be a new event gets one of the trace's
      // own lines instead; a fix that says no edge is right stays.
      if (auto fix = added.fix == Fix::RecordEventAndWait ? near_misses_.fix_of(added) : std::nullopt) {
        added.fix = fix->fix;
        added.edits = std::move(fix->edits);
        added.near_miss = fix->near_miss;
        // A record never waited is a near miss only for the finding that
        // needs the wait, whose fix says so: listed apart too, a loop's would
        // add one an iteration (20,000 lines of the report, 40 MB, for a
        // 20,000-iteration loop).
        if (fix->near_miss && fix->near_miss->kind != NearMiss::Kind::RecordNeverWaited)
          add_near_miss(std::move(*fix->near_miss));
      }
    }
    for (const auto& n : run.notes())
      if (notes_seen_.insert({n.line, n.message}).second) report_.notes.push_back(n);
    last_choices_ = run.choices();
    last_queries_ = run.query_answers();
    auto& shard = report_.coverage.shard;
    if (shard && (report_.findings.size() > findings_before || report_.notes.size() > notes_before))
      shard->first_runs.push_back(
          ShardFirstRun{chooser.run_number(), schedule ? schedule->str() : schedule_of(chooser)});
    if (auto& redundant = report_.redundant) {
      // Redundant only when redundant in every schedule run that ran it.
      redundant_runs_.add_run(redundant_calls(trace_, run), run.executed_lines());
      *redundant = redundant_runs_.calls();
    }
  }
  Report& report() { return report_; }
  /// After the last run (`last`): says how far the exploration got and what
  /// would explore the rest.
  Report& finish(bool exhaustive, std::uint32_t deviations_covered = 0) {
    group_findings(trace_, report_, options_);
    Coverage& c = report_.coverage;
    c.exhaustive = exhaustive;
    const std::string file = report_.file;
    const std::string same = run_options_text(options_);
    switch (c.how) {
      case Coverage::How::OneSchedule:
      case Coverage::How::Replay:
        c.unexplored = summarize(last_choices_, last_queries_, last_choices_.size());
        c.exhaustive = last_choices_.empty();
        if (!c.exhaustive) add_one_schedule_next_steps(c, file, same);
        break;
      case Coverage::How::Pct:
        c.to_finish.push_back({fmt::format("streamcheck explore {} --strategy pct --depth {} --schedules {}{}", file,
                                           options_.pct_depth, options_.max_schedules * 10, same),
                               "more runs lower the chance of missing a bug of that depth"});
        [[fallthrough]];
      case Coverage::How::Random:
        c.to_finish.push_back(
            {fmt::format("streamcheck explore {} --strategy dfs --schedules {}{}", file, options_.max_schedules, same),
             "every execution, exhaustive if it finishes within --schedules"});
        break;
      case Coverage::How::Streamed:
        throw std::logic_error("Collector: a streamed check makes its report itself (check_streamed)");
      case Coverage::How::Dfs:
        if (exhaustive) break;
        c.bound = options_.max_schedules;
        c.dfs = Coverage::DfsDepth{last_choices_.size(), deviations_covered};
        c.to_finish.push_back({fmt::format("streamcheck explore {} --strategy {} --schedules {}{}", file,
                                           c.executions ? "dfs" : "dfs-schedules", options_.max_schedules * 10, same),
                               "a larger bound"});
        c.to_finish.push_back(
            {fmt::format("streamcheck explore {}{}", file, same), "random schedules, any number of deviations"});
        break;
    }
    return report_;
  }

 private:
  /// Keeps each near miss once (by kind and line), in line order.
  /// A binary search: a loop with a race in each iteration that a near miss
  /// explains adds one an iteration, mostly at the end, and a scan of those
  /// before each was quadratic in them.
  void add_near_miss(NearMiss n) {
    auto& all = report_.near_misses;
    const auto [from, to] = std::equal_range(all.begin(), all.end(), n, [](const NearMiss& a, const NearMiss& b) {
      return a.statement.line < b.statement.line;
    });
    if (std::any_of(from, to, [&](const NearMiss& m) { return m.kind == n.kind; })) return;
    all.insert(to, std::move(n));
  }

  using Key = std::tuple<sim::FindingKind, sim::OpRef, std::optional<sim::OpRef>, bool>;
  const Trace& trace_;
  TraceCheckOptions options_;
  NearMissAnalysis near_misses_;
  TraceRunOptions run_options_;
  sim::ScheduleHeader header_;
  Report report_;
  std::map<Key, std::size_t> index_;  // the findings of the runs before the last one added, by key
  std::set<std::pair<int, std::string>> notes_seen_;
  RedundantInEveryRun redundant_runs_;
  std::vector<ChoicePoint> last_choices_;  // of the last run added
  std::vector<QueryAnswer> last_queries_;
};

}  // namespace

Report check_trace(const Trace& trace, const TraceCheckOptions& options) {
  // One run, one execution: findings are made at enqueue from vector clocks,
  // so the device completes work only where the host observes it (a query,
  // a pool reuse, a sync). A run that observes nothing then makes no choice
  // and its verdict is every schedule's; the device's own steps would only
  // cost a choice each.
  TraceCheckOptions o = options;
  if (!o.progress) o.progress = sim::DeviceProgress::OnObservation;
  Collector c(trace, o, Coverage::How::OneSchedule);
  {
    // The run's model (every op, its clocks, accesses and log) is freed
    // before the findings are grouped, which needs only the report: grouping
    // a racy loop's findings then reuses the model's memory.
    sim::RandomChooser chooser(o.seed);
    const Execution run = run_on_simulator(trace, chooser, c.run_options());
    c.add(run, chooser);
  }
  return std::move(c.finish(false));
}

namespace {

/// One streamed run of trace file `path` (check --stream): every op
/// executed as soon as it is enqueued, the records nothing names dropped as
/// it goes; `observe` sees each statement as it is read.
struct StreamedExecution {
  TraceRunOptions run;
  std::unique_ptr<sim::RandomChooser> chooser;  // the run's model asks it: it outlives exec
  Execution exec;
  std::uint64_t statements = 0;
};
StreamedExecution run_streamed(const std::string& path, const TraceCheckOptions& o,
                               std::unique_ptr<sim::RandomChooser> chooser = nullptr,
                               std::function<void(const Statement&)> observe = {},
                               const std::function<void(const sim::DeviceModel&)>& on_model = {},
                               sim::DeviceProgress progress = sim::DeviceProgress::AtOnce) {
  if (!chooser) chooser = std::make_unique<sim::RandomChooser>(o.seed);
  TraceReader reader(path);
  if (observe) reader.observe_statements(std::move(observe));
  reader.read_declarations();  // the pool and the resource, made before the first statement runs
  TraceRunOptions run{apply_policy_overrides(reader.trace().policy, o.policy_overrides), false, progress};
  run.retain_only_named = true;
  run.value_oracle = false;
  Execution exec = run_streamed_on_simulator(reader, *chooser, run, on_model);
  return StreamedExecution{std::move(run), std::move(chooser), std::move(exec), reader.statements_read()};
}

/// Why stream_for_check stopped before the trace's end; its statement
/// watch throws it to stop the read.
enum class StreamStop {
  AtAChoice,        // a run executing each op at once made a choice or came to a query, which check's own run must
                    // make or answer instead
  NeedsWholeTrace,  // a finding, a possible near miss or an error: only the whole check can say
};

/// One streamed run of clean_by_streaming, its device progressing as
/// `progress` says; a run executing each op at once stops at its first
/// choice.
std::variant<StreamedExecution, StreamStop> stream_for_check(const std::string& path, const TraceCheckOptions& o,
                                                             sim::DeviceProgress progress) {
  StatementNearMissWatch watch;
  auto chooser = std::make_unique<sim::RandomChooser>(o.seed);
  const sim::Chooser& choices = *chooser;
  const sim::DeviceModel* model = nullptr;
  const bool stop_at_a_choice = progress == sim::DeviceProgress::AtOnce;
  try {
    // Each statement comes once the one before it ran: a finding or a
    // possible near miss ends the read there (each would be in the run at
    // its end too: this only stops early, so that a trace with a finding
    // near its start is not run twice through). A run executing each op at
    // once answers every query done, where check's own run may answer not
    // done: it stops before a `query` line, as at a choice, so that the
    // rest is not read for nothing (clean_by_streaming runs again after
    // any query, those no line names included).
    const auto watch_statement = [&](const Statement& st) {
      if ((model != nullptr && !model->findings().empty()) || watch.may_be_near_miss(st))
        throw StreamStop::NeedsWholeTrace;
      if (stop_at_a_choice && (choices.choice_count() > 0 || std::holds_alternative<ast::Query>(st)))
        throw StreamStop::AtAChoice;
    };
    return run_streamed(
        path, o, std::move(chooser), watch_statement, [&](const sim::DeviceModel& m) { model = &m; }, progress);
  } catch (const StreamStop why) {
    return why;
  } catch (const TraceError&) {
    return StreamStop::NeedsWholeTrace;  // the whole read says what is wrong, as it would have
  } catch (const std::invalid_argument&) {
    return StreamStop::NeedsWholeTrace;  // a --policy the whole check refuses too, after any error in the trace itself
  }
}

}  // namespace

std::optional<Report> clean_by_streaming(const std::string& path, const TraceCheckOptions& o) {
  if (o.faults || o.redundant || o.shard || (o.progress && *o.progress != sim::DeviceProgress::OnObservation))
    return std::nullopt;
  // A pipe (`check <(zcat t.gz)`, /dev/stdin) is read once: the whole read
  // after a streamed one would find it empty.
  std::error_code not_a_file;
  if (!std::filesystem::is_regular_file(path, not_a_file)) return std::nullopt;
  // First with every op executed as soon as it is enqueued, so that the
  // retention pass drops what ran (a device that progresses only on
  // observation runs nothing a trace never observes, and holds it all): a
  // run that makes no choice has every schedule's verdict, check's own
  // included. At its first choice or query the read starts again as
  // check's own run (its seed's chooser, the device progressing on
  // observation), so that each pool reuse is chosen and each query answered
  // as there.
  auto run = stream_for_check(path, o, sim::DeviceProgress::AtOnce);
  const auto* stop = std::get_if<StreamStop>(&run);
  // A query no statement names (the debug tier's `reap` asks its events)
  // was answered done by the device that executes each op at once; check's
  // own run may answer it not done.
  const auto* at_once = std::get_if<StreamedExecution>(&run);
  if ((stop && *stop == StreamStop::AtAChoice) || (at_once && !at_once->exec.choice_summary().queries.empty()))
    run = stream_for_check(path, o, sim::DeviceProgress::OnObservation);
  const auto* streamed = std::get_if<StreamedExecution>(&run);
  if (streamed == nullptr) return std::nullopt;
  const Execution& exec = streamed->exec;
  if (!exec.model().findings().empty() || !exec.notes().empty()) return std::nullopt;
  // Pool reuses and query answers: the streamed run lists and counts them
  // as the whole check's summary does (ChoiceSummary::list, in the order
  // they were made; queries only where an answer was a choice). A fault or
  // any other choice: the whole check says which it lists.
  const ChoiceSummary& choices = exec.choice_summary();
  if (!choices.faults.empty() || choices.device_steps > 0) return std::nullopt;
  // What Collector makes of a one-schedule run with no finding or note
  // (check_trace).
  Report r;
  r.file = path;
  r.policy = streamed->run.policy;
  Coverage& c = r.coverage;
  c.how = Coverage::How::OneSchedule;
  c.seed = o.seed;
  c.executions = true;  // the device progresses on observation, as check_trace's run
  c.explored = 1;
  c.unexplored = choices;
  c.exhaustive = choices.empty();
  if (!c.exhaustive) add_one_schedule_next_steps(c, path, run_options_text(o));
  return r;
}

Report check_trace_file(const std::string& path, const TraceCheckOptions& options) {
  if (auto clean = clean_by_streaming(path, options)) return std::move(*clean);
  return check_trace(load_trace(path), options);
}

Report check_streamed(const std::string& path, const TraceCheckOptions& o) {
  if (o.faults)
    throw std::invalid_argument(
        "--faults explores a fault at each resource call, and a streamed check runs one execution: check the trace "
        "without --stream");
  if (o.redundant)
    throw std::invalid_argument(
        "--redundant reads the run's whole API log, which a streamed check does not keep: check the trace without "
        "--stream");
  StreamedExecution streamed = run_streamed(path, o);
  Execution& exec = streamed.exec;
  const sim::DeviceModel& model = exec.model();
  // The findings' lines, read again from the file: nothing kept their texts.
  std::vector<int> lines;
  lines.reserve(2 * model.findings().size());
  for (const sim::Finding& f : model.findings())
    for (const std::optional<sim::OpRef> op : {std::optional(f.first), f.second})
      if (const auto line = op ? exec.origin_line(*op) : std::nullopt) lines.push_back(*line);
  std::sort(lines.begin(), lines.end());
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  exec.set_origin_texts(statement_texts(path, lines));

  Report r;
  r.file = path;
  r.policy = streamed.run.policy;
  // Placed once (as Collector::add places a run's): a loop's finding in
  // each iteration moved every finding at each growth.
  r.findings.reserve(model.findings().size());
  r.groups.reserve(model.findings().size());
  for (const sim::Finding& f : model.findings()) {
    r.findings.push_back(report_finding(exec, f, {}, /*producers=*/nullptr));
    r.findings.back().schedules = 1;
    r.groups.push_back(FindingGroup{{r.findings.size() - 1}, {}, std::nullopt});
  }
  r.notes = exec.notes();
  Coverage& c = r.coverage;
  c.how = Coverage::How::Streamed;
  c.seed = o.seed;
  c.explored = 1;
  c.executions = true;
  // A query answered done only because the device ran everything at once:
  // another execution may answer not done, so it counts as a choice here.
  c.unexplored = exec.choice_summary();
  c.exhaustive = c.unexplored.empty();
  std::uint64_t held = model.hb().kept_op_count();
  for (std::uint32_t s = 0; s < model.stream_count(); ++s)
    held += model.op_count(sim::StreamIndex{s}) - model.hb().dropped_count(sim::StreamIndex{s});
  c.streamed = Coverage::StreamedRun{streamed.statements, model.hb().enqueued_count(), held};
  if (!c.exhaustive)
    c.to_finish.push_back({fmt::format("streamcheck explore {} --strategy dfs{}", path, run_options_text(o)),
                           "every execution, exhaustive if it finishes within --schedules; it holds the whole trace "
                           "in memory"});
  return r;
}

Report replay_trace(const Trace& trace, const ScheduleToReplay& replay) {
  Collector c(trace, replay.options, Coverage::How::Replay);
  sim::ReplayChooser chooser(replay.schedule.runs, sim::ReplayChooser::PastTheEnd::Refuse);
  const Execution run = replay_on_simulator(trace, chooser, c.run_options());
  c.add(run, chooser);
  return std::move(c.finish(false));
}

Report replay_trace(const Trace& trace, const std::string& schedule, const TraceCheckOptions& o) {
  return replay_trace(trace, schedule_to_replay(trace, schedule, o, false));
}

Report explore_trace(const Trace& trace, const TraceCheckOptions& o, const Progress& progress) {
  const bool dfs = o.strategy == Strategy::Dfs || o.strategy == Strategy::DfsSchedules;
  const bool pct = o.strategy == Strategy::Pct;
  if (o.shard) {
    if (o.redundant) throw std::invalid_argument("--shard cannot be combined with --redundant");
    if (o.shard->count == 0 || o.shard->index >= o.shard->count)
      throw std::invalid_argument("--shard I/N needs 0 <= I < N");
  }
  Collector c(trace, o, dfs ? Coverage::How::Dfs : pct ? Coverage::How::Pct : Coverage::How::Random);
  if (o.shard)
    c.report().coverage.shard = Coverage::ShardPart{
        o.shard->index, o.shard->count, o.max_schedules, o.pct_depth, o.faults, o.policy_overrides, {}};
  // DFS fewest deviations first: a bound then stops it having tried every
  // choice point (issue 10 S5), where plain DFS varies only the deepest.
  const sim::Strategy strategy = dfs   ? sim::Strategy{sim::DeviationDfs{}}
                                 : pct ? sim::Strategy{sim::Pct{o.seed, o.pct_depth}}
                                       : sim::Strategy{sim::Random{o.seed}};
  const auto explored =
      sim::explore(strategy, sim::Bounds{o.max_schedules, o.shard.value_or(sim::Shard{})}, [&](sim::Chooser& chooser) {
        const Execution run = run_on_simulator(trace, chooser, c.run_options());
        if (sim::repeats_earlier_round(chooser)) return false;  // run and reported before
        if (!chooser.counted()) return false;                   // another shard's run (the PCT probe)
        c.add(run, chooser);
        const std::uint64_t n = c.report().coverage.explored;
        if (progress && n % 100 == 0) progress(n, c.report().findings.size());
        return false;
      });
  c.report().coverage.pct = explored.pct;
  return std::move(c.finish(explored.exhaustive, explored.deviations_covered));
}

std::string finding_key(const ReportFinding& f) {
  std::string key = fmt::format("{}|{}|{}#{}", sim::to_string(f.kind), f.definite, f.first.stream, f.first.ref.index);
  if (f.second) key += fmt::format("|{}#{}", f.second->stream, f.second->ref.index);
  return key;
}

Report merge_shards(const Trace& trace, const TraceCheckOptions& o, const ShardTotals& totals) {
  const bool dfs = o.strategy == Strategy::Dfs || o.strategy == Strategy::DfsSchedules;
  const bool pct = o.strategy == Strategy::Pct;
  Collector c(trace, o, dfs ? Coverage::How::Dfs : pct ? Coverage::How::Pct : Coverage::How::Random);
  struct Replayed {
    std::uint64_t number;
    std::unique_ptr<sim::ReplayChooser> chooser;
    Execution run;
  };
  std::vector<Replayed> firsts;
  for (const ShardFirstRun& first : totals.first_runs) {
    const ScheduleToReplay replay = schedule_to_replay(trace, first.schedule, o, false);
    auto chooser = std::make_unique<sim::ReplayChooser>(replay.schedule.runs, sim::ReplayChooser::PastTheEnd::Refuse);
    chooser->set_run_number(first.run);
    Execution run = replay_on_simulator(trace, *chooser, c.run_options());
    firsts.push_back(Replayed{first.run, std::move(chooser), std::move(run)});
  }
  // The first runs, in the order one exploration meets them (random and
  // pct: by run number; dfs: as DeviationDfs orders its runs), add every
  // finding and note in that order; the runs in between added nothing new.
  std::stable_sort(firsts.begin(), firsts.end(), [dfs](const Replayed& a, const Replayed& b) {
    return dfs ? sim::deviation_dfs_before(a.chooser->taken(), b.chooser->taken()) : a.number < b.number;
  });
  for (const Replayed& first : firsts) c.add(first.run, *first.chooser);
  Report& r = c.report();
  for (ReportFinding& f : r.findings) {
    const auto it = totals.finding_runs.find(finding_key(f));
    if (it == totals.finding_runs.end())
      throw std::invalid_argument(
          fmt::format("merge: no shard counted the finding its first run shows ({}); the "
                      "reports do not belong to one exploration",
                      finding_key(f)));
    f.schedules = it->second;
  }
  r.coverage.explored = totals.explored;
  r.coverage.pct = totals.pct;
  return std::move(c.finish(totals.exhaustive, totals.deviations_covered));
}

HeldRun run_one(const Trace& trace, const TraceCheckOptions& o) {
  Collector c(trace, o, Coverage::How::OneSchedule);
  HeldRun held;
  held.chooser = std::make_unique<sim::RandomChooser>(o.seed);
  held.run = std::make_unique<Execution>(run_on_simulator(trace, *held.chooser, c.run_options()));
  held.schedule = c.schedule_of(*held.chooser);
  c.add(*held.run, *held.chooser);
  held.report = std::move(c.finish(false));
  return held;
}

HeldRun replay_one(const Trace& trace, const ScheduleToReplay& replay) {
  Collector c(trace, replay.options, Coverage::How::Replay);
  HeldRun held;
  auto chooser = std::make_unique<sim::ReplayChooser>(replay.schedule.runs, sim::ReplayChooser::PastTheEnd::Refuse);
  held.run = std::make_unique<Execution>(replay_on_simulator(trace, *chooser, c.run_options()));
  held.chooser = std::move(chooser);
  held.schedule = c.schedule_of(*held.chooser);
  c.add(*held.run, *held.chooser);
  held.report = std::move(c.finish(false));
  return held;
}

}  // namespace streamcheck::tools
