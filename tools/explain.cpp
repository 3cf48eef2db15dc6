#include "tools/explain.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iterator>
#include <set>
#include <span>
#include <vector>

#include "backend_sim/explain.h"

namespace streamcheck::tools {

std::string op_name(const ReportOp& op) { return fmt::format("{}#{}", op.stream, op.ref.index); }

std::string short_ref(const ReportOp& op) { return op.origin ? fmt::format("line {}", op.origin->line) : op_name(op); }

std::string line_ref(const ReportOp& op) {
  if (op.origin) return fmt::format("line {} ({})", op.origin->line, op.origin->text);
  return op.description.value_or("");
}

std::string describe(const ReportOp& op) {
  if (op.origin) return fmt::format("{} [{}]", line_ref(op), op_name(op));
  return op.description.value_or("");
}

std::string describe(const ReportBytes& bytes) {
  if (const auto& b = bytes.in_buffer) return fmt::format("{}[{}:{}]", b->buffer, b->lo, b->hi);
  return fmt::format("[{:#x}, {:#x})", bytes.address.lo, bytes.address.hi);
}

std::string describe(const std::vector<ReportBytes>& bytes) {
  std::string out;
  for (const ReportBytes& b : bytes) out += (out.empty() ? "" : ", ") + describe(b);
  return out;
}

std::string finding_label(const ReportFinding& f) {
  return sim::finding_label(sim::Finding{.kind = f.kind,
                                         .first = f.first.ref,
                                         .second = f.second ? std::optional(f.second->ref) : std::nullopt,
                                         .bytes = {},
                                         .definite = f.definite});
}

std::string describe_order(const ReportFinding& f) {
  switch (f.order) {
    case Ordering::NeverFreed:
      return "the allocation is never freed";
    case Ordering::FreedBeforeUse:
      return fmt::format("the free at {} happens before the use", line_ref(f.first));
    case Ordering::MissingEdge:
      return fmt::format("no happens-before path between them: nothing orders {} before {} (missing edge)",
                         op_name(f.first), op_name(*f.second));
  }
  return {};
}

namespace {

std::string short_line(const ReportOp& op) { return op.origin ? fmt::format("line {}", op.origin->line) : op_name(op); }

/// The fix of a finding a near miss explains: the edit, then why it works.
std::string fix_of_near_miss(const ReportFinding& f) {
  const NearMiss& n = *f.near_miss;
  const std::string edits = describe(std::span<const TraceEdit>(f.edits));
  switch (n.kind) {
    case NearMiss::Kind::RecordTooEarly:
      return fmt::format(
          "{}: the record at line {} is too early; after {} it captures {}, and the wait at line {} "
          "orders {} after it",
          edits, n.statement.line, describe(*n.op), short_line(f.first), n.seen_by->line, short_line(*f.second));
    case NearMiss::Kind::WaitNeverRecorded:
      return fmt::format("{}: the wait at line {} orders nothing where it is; after {} it orders {} after {}", edits,
                         n.statement.line, describe(*n.op), short_line(*f.second), short_line(f.first));
    case NearMiss::Kind::StaleCapture:
      return fmt::format(
          "{}: the wait at line {} sees the capture of line {}, which replaced that of {}; waiting "
          "right after line {} orders {} after {}",
          edits, n.statement.line, n.seen_by->line, describe(*n.op), n.op->line, short_line(*f.second),
          short_line(f.first));
    case NearMiss::Kind::RecordNeverWaited:
      return fmt::format(
          "{}: the record at line {} captures {} on {}, but nothing on {} waits on it; waiting before {} orders it "
          "after {}",
          edits, n.statement.line, short_line(f.first), f.first.stream, f.second->stream, short_line(*f.second),
          short_line(f.first));
    case NearMiss::Kind::PrepareWithoutFinish:
      return fmt::format(
          "{}: {} is never finished, so the resource does not know of {} and does not order {} "
          "after it",
          edits, describe(n.statement), short_line(f.first), short_line(*f.second));
  }
  return edits;
}

}  // namespace

std::string describe_fix(const ReportFinding& f) {
  switch (f.fix) {
    case Fix::FreeTheBuffer:
      return "free the buffer (free/deallocate) once its last use is enqueued";
    case Fix::KeepAliveUntilUse:
      return fmt::format("keep the buffer alive until after {}, or use a live buffer", line_ref(*f.second));
    case Fix::RecordEventAndWait: {
      std::string fix = fmt::format("record an event on {} after {}; make {} wait on it before {}", f.first.stream,
                                    line_ref(f.first), f.second->stream, line_ref(*f.second));
      if (f.producer_unchecked)
        fix += fmt::format(
            " (not checked: {} reads what {} writes, and a streamed check keeps no earlier write; if one is ordered "
            "before {}, this edge makes it read {}'s data instead: check the trace without --stream to know)",
            short_ref(*f.second), short_ref(f.first), short_ref(*f.second), short_ref(f.first));
      return fix;
    }
    case Fix::SyncBeforeHostUse:
      return fmt::format(
          "synchronize {} (or an event recorded after {}) before {}: the host touches bytes that {} may not have "
          "finished with",
          f.first.stream, short_ref(f.first), line_ref(*f.second), line_ref(f.first));
    case Fix::OrderTheHostThreads:
      return fmt::format(
          "{} and {} run on different host threads: order the threads (join, lock, send/receive) so that {} comes "
          "after {}{}",
          line_ref(f.first), line_ref(*f.second), short_ref(*f.second), short_ref(f.first),
          is_host_stream(f.first.stream)
              ? ""
              : ", and have the first thread synchronize with the device before it hands on");
    case Fix::MoveRecordAfterFirst:
    case Fix::MoveWaitAfterRecord:
    case Fix::WaitBeforeReRecord:
    case Fix::WaitOnTheRecord:
    case Fix::FinishTheUse:
      return fix_of_near_miss(f);
    case Fix::PrepareAndFinishTheLaunch:
      return fmt::format("{}: a raw kernel on a resource block must tell the resource of its use, as `run` does",
                         describe(std::span<const TraceEdit>(f.edits)));
    case Fix::ResourceOrdersThem:
      return fmt::format(
          "both are the resource's own calls, which must order them: the trace's `resource mutant` breaks that; no "
          "edit of its calls fixes it (without the mutant the resource orders {} before {})",
          short_line(f.first), short_line(*f.second));
    case Fix::ReorderOrDoubleBuffer: {
      const std::string write = short_ref(f.first), read = short_ref(*f.second);
      return fmt::format(
          "no edge keeps what {} reads: ordering {} before it would make it read {}'s write instead of {}'s (its "
          "producer), and the race-free order, {} before {}, inverts the enqueue order. Reorder the host code "
          "(enqueue {} after {}, then order it after {} with an event), or double-buffer (give {}'s write its own "
          "buffer)",
          line_ref(*f.second), line_ref(f.first), write, f.producer ? short_ref(*f.producer) : "the earlier write",
          read, write, write, read, read, write);
    }
  }
  return {};
}

std::string describe(const TraceLine& line) { return fmt::format("line {} ({})", line.line, line.text); }

std::string to_string(NearMiss::Kind kind) {
  switch (kind) {
    case NearMiss::Kind::RecordTooEarly:
      return "record too early";
    case NearMiss::Kind::WaitNeverRecorded:
      return "wait never recorded";
    case NearMiss::Kind::StaleCapture:
      return "stale capture";
    case NearMiss::Kind::RecordNeverWaited:
      return "record never waited";
    case NearMiss::Kind::PrepareWithoutFinish:
      return "prepare without finish";
  }
  return {};
}

std::string describe(const NearMiss& n) {
  const std::string what = describe(n.statement);
  switch (n.kind) {
    case NearMiss::Kind::RecordTooEarly:
      return fmt::format("{} captures its stream before {}, which the wait at {} needs", what, describe(*n.op),
                         describe(*n.seen_by));
    case NearMiss::Kind::WaitNeverRecorded:
      return fmt::format("{} orders nothing: its event is not recorded before it{}", what,
                         n.op ? fmt::format("; {} records it later", describe(*n.op)) : std::string(" nor after it"));
    case NearMiss::Kind::StaleCapture:
      return fmt::format("{} sees the capture of {}, which replaced the capture of {}", what, describe(*n.seen_by),
                         describe(*n.op));
    case NearMiss::Kind::RecordNeverWaited:
      return fmt::format("{} captures {}, but nothing waits on it before {}, which needed it", what, describe(*n.op),
                         describe(*n.seen_by));
    case NearMiss::Kind::PrepareWithoutFinish:
      return fmt::format("{} has no matching finish{}: the resource never learns of the use", what,
                         n.seen_by ? fmt::format(" before {}", describe(*n.seen_by)) : std::string());
  }
  return what;
}

std::string describe_cause(const Report& r, const FindingGroup& g) {
  const ReportFinding& head = r.findings.at(g.findings.front());
  if (!g.edits.empty() && head.edits.empty() && head.second)
    return fmt::format("nothing orders {} before {} (one missing edge)", head.first.stream, head.second->stream);
  if (g.breaks_producer)
    return fmt::format("nothing orders {} before {}, and no edge may: it would change what line {} reads",
                       short_ref(head.first), short_ref(*head.second), g.breaks_producer->read.line);
  if (head.fix == Fix::ReorderOrDoubleBuffer)
    return fmt::format(
        "{} writes before {} reads the earlier data (the only race-free order inverts the enqueue order)",
        short_ref(head.first), short_ref(*head.second));
  if (head.near_miss && head.near_miss->kind == NearMiss::Kind::RecordNeverWaited)
    return fmt::format("{} never waits on the record at line {} (record never waited)", head.second->stream,
                       head.near_miss->statement.line);
  return finding_label(head);
}

std::string describe_pairs(const Report& r, const FindingGroup& g, std::size_t at_most) {
  std::string out;
  for (std::size_t k = 0; k < g.findings.size() && k < at_most; ++k) {
    const ReportFinding& f = r.findings.at(g.findings[k]);
    out += (out.empty() ? "" : ", ") +
           (f.second ? short_ref(f.first) + " -> " + short_ref(*f.second) : short_ref(f.first));
  }
  if (g.findings.size() > at_most) out += fmt::format(", ... ({} in all)", g.findings.size());
  return out;
}

std::string describe(const ProducerChange& change) {
  const auto lines = [](const std::set<int>& writers) {
    std::string out;
    for (const int w : writers) out += (out.empty() ? "line " : " and line ") + std::to_string(w);
    return out.empty() ? std::string("no ordered write") : out;
  };
  const ReadBytes& r = change.read;
  return fmt::format("it would change what line {} reads of {}[{}:{}]: {} instead of {}", r.line, r.buffer, r.lo, r.hi,
                     lines(change.now), lines(change.was));
}

std::string describe_fix(const Report& r, const FindingGroup& g) {
  if (!g.edits.empty()) return describe(g.edits);
  if (const auto& change = g.breaks_producer) {
    const ReportFinding& f = r.findings.at(g.findings.front());
    return fmt::format(
        "no edge: ordering {} before {} (a record after one, a wait before the other) is race-free, but {}. "
        "Reorder the host code so that the reads are enqueued before the writes they must not see, or "
        "double-buffer (give the later write its own buffer)",
        short_ref(f.first), short_ref(*f.second), describe(*change));
  }
  return describe_fix(r.findings.at(g.findings.front()));
}

std::string to_string(Coverage::How how) {
  switch (how) {
    case Coverage::How::OneSchedule:
      return "one schedule";
    case Coverage::How::Replay:
      return "replay";
    case Coverage::How::Random:
      return "random";
    case Coverage::How::Dfs:
      return "dfs";
    case Coverage::How::Pct:
      return "pct";
    case Coverage::How::Streamed:
      return "streamed";
  }
  return {};
}

std::string describe(const Note& note) { return fmt::format("line {}: {}", note.line, note.message); }

namespace {

std::string at_line(int line) { return line > 0 ? fmt::format("line {}", line) : "the end (device drain)"; }

}  // namespace

std::string describe(const ChoiceSummary& s) {
  std::vector<std::string> parts;
  for (const auto& c : s.pool_reuse)
    parts.push_back(fmt::format("pool reuse at {} (took option {} of {})", at_line(c.line), c.taken, c.options));
  for (const auto& q : s.queries)
    parts.push_back(fmt::format("query at {} answered \"{}\"", at_line(q.line), q.done ? "done" : "not done"));
  for (const auto& c : s.faults)
    parts.push_back(fmt::format("fault point at {} ({})", at_line(c.line), c.taken ? "fired" : "did not fire"));
  if (s.device_steps > 0)
    parts.push_back(fmt::format("{} device step{} (which stream head completes next)", s.device_steps,
                                s.device_steps == 1 ? "" : "s"));
  if (s.not_listed > 0)
    parts.push_back(
        fmt::format("{} more choice{} not listed (pool reuses, queries and faults past the first {} of "
                    "each kind)",
                    s.not_listed, s.not_listed == 1 ? "" : "s", kMaxListedChoices));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string describe_coverage(const Coverage& c) {
  std::string out;
  auto line = std::back_inserter(out);
  switch (c.how) {
    case Coverage::How::OneSchedule:
    case Coverage::How::Replay:
      if (c.exhaustive && c.executions)
        fmt::format_to(line,
                       "coverage: exhaustive: the run made no choice (nothing it observed could have turned out "
                       "otherwise), so this execution is the trace's only one and every schedule has its verdict\n");
      else if (c.exhaustive)
        fmt::format_to(line, "coverage: exhaustive: the run made no choice, so this schedule is the only one\n");
      else
        fmt::format_to(line, "coverage: NOT exhaustive: one {}; it made choices that were not explored: {}\n",
                       c.executions ? "execution" : "schedule", describe(c.unexplored));
      break;
    case Coverage::How::Random:
      fmt::format_to(line, "coverage: NOT exhaustive: {} random schedules (seed {}), a sample\n", c.explored, c.seed);
      break;
    case Coverage::How::Pct: {
      const auto p = c.pct.value_or(sim::ExploreResult::PctRuns{});
      fmt::format_to(line,
                     "coverage: NOT exhaustive: {} PCT schedules of depth {} (seed {}; the first a probe of depth 1 "
                     "that counted k = {} device steps)\n",
                     c.explored, p.depth, c.seed, p.steps);
      fmt::format_to(line,
                     "  PCT bound: one run finds a given bug of depth <= {} that lies in the first {} device steps "
                     "with probability >= 1/(n*k^{}) = {:.3g} (n = {} agents: the host and the streams); all {} runs "
                     "after the probe miss it with probability <= {:.3g}\n",
                     p.depth, p.steps, p.depth == 0 ? 0 : p.depth - 1, p.per_run(), p.agents, p.runs_at_depth,
                     p.missed());
      break;
    }
    case Coverage::How::Streamed: {
      const std::string run = fmt::format(
          "one execution, streamed: {} statements read and run one at a time, {} ops, each executed as soon as it "
          "was enqueued; {} op records held at the end",
          c.streamed ? c.streamed->statements : 0, c.streamed ? c.streamed->ops : 0,
          c.streamed ? c.streamed->held_ops : 0);
      if (c.exhaustive)
        fmt::format_to(line,
                       "coverage: exhaustive: {}. The run made no choice and asked no query (nothing it observed "
                       "could have turned out otherwise), so every schedule has its verdict\n",
                       run);
      else
        fmt::format_to(line,
                       "coverage: NOT exhaustive: {}; so every query answered done and every free had run when the "
                       "pool was asked. Choices not explored: {}\n",
                       run, describe(c.unexplored));
      fmt::format_to(line,
                     "  not in a streamed check: near misses, fixes as edits, and whether a fix's edge would change "
                     "which write a read sees (each needs the whole trace)\n");
      break;
    }
    case Coverage::How::Dfs: {
      const char* unit = c.executions ? "execution" : "schedule";
      if (c.exhaustive) {
        fmt::format_to(line, "coverage: exhaustive: dfs ran every {} of the trace ({})\n", unit, c.explored);
        if (c.executions)
          fmt::format_to(line,
                         "  (an execution: one outcome of every query, pool reuse and fault, and one order of the "
                         "host threads' statements that touch a common object; schedules that differ only in the "
                         "order independent device work completes, or independent host statements run, are one "
                         "execution, with one verdict)\n");
        break;
      }
      fmt::format_to(line,
                     "coverage: NOT exhaustive: dfs stopped at its bound of {} {}{}; it runs the {}s fewest "
                     "deviations first (a deviation: a choice that took another option than its first, of the {} "
                     "choices a run makes) and had run every {} with at most {} deviation{}\n",
                     c.explored, unit, c.explored == 1 ? "" : "s", unit, c.dfs ? c.dfs->choices_per_run : 0, unit,
                     c.dfs ? c.dfs->deviations_covered : 0, c.dfs && c.dfs->deviations_covered == 1 ? "" : "s");
      break;
    }
  }
  if (c.shard)
    fmt::format_to(line,
                   "  shard {} of {}: these are its runs only; `streamcheck merge` the --json reports of all {} shards "
                   "for the whole exploration's report\n",
                   c.shard->index, c.shard->count, c.shard->count);
  for (const auto& s : c.to_finish) fmt::format_to(line, "  to explore the rest: {}  ({})\n", s.command, s.why);
  return out;
}

std::string_view to_string(Severity s) { return s == Severity::Warning ? "warning" : "error"; }

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::Clean:
      return "clean";
    case Verdict::Findings:
      return "findings";
    case Verdict::Errors:
      return "errors";
  }
  return {};
}

std::string_view to_string(Ordering o) {
  switch (o) {
    case Ordering::NeverFreed:
      return "never freed";
    case Ordering::FreedBeforeUse:
      return "freed before use";
    case Ordering::MissingEdge:
      return "missing edge";
  }
  return {};
}

std::string_view to_string(Fix f) {
  switch (f) {
    case Fix::FreeTheBuffer:
      return "free the buffer";
    case Fix::KeepAliveUntilUse:
      return "keep alive until use";
    case Fix::RecordEventAndWait:
      return "record event and wait";
    case Fix::MoveRecordAfterFirst:
      return "move record after first";
    case Fix::MoveWaitAfterRecord:
      return "move wait after record";
    case Fix::WaitBeforeReRecord:
      return "wait before re-record";
    case Fix::WaitOnTheRecord:
      return "wait on the record";
    case Fix::FinishTheUse:
      return "finish the use";
    case Fix::PrepareAndFinishTheLaunch:
      return "prepare and finish the launch";
    case Fix::ResourceOrdersThem:
      return "resource orders them";
    case Fix::ReorderOrDoubleBuffer:
      return "reorder or double-buffer";
    case Fix::SyncBeforeHostUse:
      return "sync before host use";
    case Fix::OrderTheHostThreads:
      return "order the host threads";
  }
  return {};
}

std::string_view to_string(NoteKind k) {
  switch (k) {
    case NoteKind::OutOfMemory:
      return "out of memory";
    case NoteKind::NotLive:
      return "not live";
    case NoteKind::Refused:
      return "refused";
    case NoteKind::NotAResourceBlock:
      return "not a resource block";
    case NoteKind::Skipped:
      return "skipped";
    case NoteKind::BackendFailed:
      return "backend failed";
    case NoteKind::Deadlock:
      return "deadlock";
    case NoteKind::UseAfterDestroy:
      return "use after destroy";
    case NoteKind::DoubleHandOut:
      return "double hand-out";
    case NoteKind::WrongDevice:
      return "wrong device";
    case NoteKind::GuardFinding:
      return "debug tier";
  }
  return {};
}

std::string_view to_string(InputError::Kind k) {
  switch (k) {
    case InputError::Kind::Usage:
      return "usage";
    case InputError::Kind::Trace:
      return "trace";
    case InputError::Kind::Schedule:
      return "schedule";
  }
  return {};
}

std::string host_action_short(const sim::DeviceModel& model, const sim::LogEntry& entry) {
  using Kind = sim::LogEntry::Kind;
  switch (entry.kind()) {
    case Kind::SyncStream:
      return "sync " + model.stream_name(entry.stream);
    case Kind::SyncEvent:
      return "sync " + model.event_name(entry.event());
    case Kind::SyncDevice:
      return "sync device";
    case Kind::QueryDone:
      return fmt::format("query {}: done", model.event_name(entry.event()));
    case Kind::QueryNotDone:
      return fmt::format("query {}: busy", model.event_name(entry.event()));
    default:
      return sim::host_action(model, entry);
  }
}

std::string held_back(const Report& r) {
  std::string held;
  for (const auto& f : r.findings)
    if (f.severity == Severity::Error) held += (held.empty() ? "" : ", ") + op_name(f.first);
  return held.empty() ? "nothing" : held;
}

}  // namespace streamcheck::tools
