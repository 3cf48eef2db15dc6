#include "tools/fix_plan.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backend_sim/schedule.h"
#include "tools/explain.h"

namespace streamcheck::tools {

namespace {

/// Every name the trace uses (a new event must not take one).
std::set<std::string> used_names(const Trace& trace) {
  std::set<std::string> names;
  for (const Statement& st : trace.statements)
    std::visit(
        [&](const auto& s) {
          if constexpr (requires { s.name; }) names.insert(s.name);
          if constexpr (requires { s.kernel; }) names.emplace(s.kernel);
          if constexpr (requires { s.buffer; }) names.insert(s.buffer);
        },
        st);
  return names;
}

/// "@worker " for a statement on a host thread other than main.
std::string thread_prefix(const Trace& trace, int line) {
  const auto at = statements_at(trace, line);
  if (at.empty() || source(at.front()).thread == kMainThread) return "";
  return fmt::format("@{} ", source(at.front()).thread);
}

/// The trace's text rebuilt from its statements, each on its own line
/// (comments and blank lines left empty): what the report's edits apply to
/// when the report checks them.
std::string trace_text(const Trace& trace) {
  std::vector<std::string> lines;
  for (const Statement& st : trace.statements) {
    const ast::Source& src = source(st);
    if (static_cast<int>(lines.size()) < src.line) lines.resize(static_cast<std::size_t>(src.line));
    lines[static_cast<std::size_t>(src.line - 1)] = src.text;
  }
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

/// A finding a new event fixes: first's line on its stream, second's on its.
struct Edge {
  // Views of the trace's names or the report's stream names (both outlive
  // grouping): two copies a finding were a tenth of a racy loop's grouping.
  std::string_view from_stream, to_stream;
  int from_line = 0, to_line = 0;
};

/// The device of a stream as a report calls it (R13): a default stream's
/// name says it (`legacy:1`); a declared one is the device of its newest
/// declaration up to a line. Indexed once per report: a scan of the trace
/// for each group was quadratic in a loop with a race in each iteration.
class StreamDevices {
 public:
  explicit StreamDevices(const Trace& trace) {
    for (const Statement& st : trace.statements)
      if (const auto* decl = std::get_if<ast::StreamDecl>(&st))
        declared_[decl->name].push_back({decl->line, decl->device});  // lines ascend
  }
  DeviceNumber of(const std::string& reported, int line) const {
    if (const auto mark = reported.find(kDeviceMark); mark != std::string::npos)
      return static_cast<DeviceNumber>(std::stoul(reported.substr(mark + 1)));
    const auto it = declared_.find(trace_name_of(reported));
    if (it == declared_.end()) return 0;
    const auto& decls = it->second;
    const auto after =
        std::upper_bound(decls.begin(), decls.end(), line, [](int l, const Declaration& d) { return l < d.line; });
    return after == decls.begin() ? 0 : std::prev(after)->device;
  }

 private:
  struct Declaration {
    int line;
    DeviceNumber device;
  };
  std::map<std::string, std::vector<Declaration>> declared_;
};

/// R14a: the capture (the line of its `capture begin`) that took the
/// statement at `line`, and the stream it was captured from; 0 and "" for
/// a statement that ran.
std::pair<int, std::string_view> capture_of(const Trace& trace, int line) {
  for (const Statement& st : statements_at(trace, line))
    if (source(st).captured_by != 0)
      return {source(st).captured_by, std::visit(
                                          [](const auto& s) -> std::string_view {
                                            if constexpr (requires { s.stream; })
                                              if constexpr (std::is_same_v<std::decay_t<decltype(s.stream)>, Name>)
                                                return s.stream;
                                            return {};
                                          },
                                          st)};
  return {0, {}};
}

std::optional<Edge> missing_edge(const Trace& trace, const ReportFinding& f) {
  if (f.fix != Fix::RecordEventAndWait || !f.edits.empty() || !f.second || !f.first.origin || !f.second->origin)
    return std::nullopt;
  // A graph's op (R14b) runs at each launch from a line inside its capture.
  // Two ops of one graph are ordered by a record and a wait captured with
  // them, on the streams they were captured from; a graph's op and an op
  // outside it by nothing written on their lines (a record there would be
  // captured, a forked branch is no stream a statement names).
  const auto [first_capture, first_stream] = capture_of(trace, f.first.origin->line);
  const auto [second_capture, second_stream] = capture_of(trace, f.second->origin->line);
  if (first_capture != 0 && second_capture != 0) {
    if (first_capture != second_capture || first_stream.empty() || second_stream.empty()) return std::nullopt;
    return Edge{first_stream, second_stream, f.first.origin->line, f.second->origin->line};
  }
  // One op of a graph: the edge goes to or from the whole launch, on its
  // stream (every branch is joined into it before the capture ended).
  const auto launch_stream = [&](const OpOrigin& o) -> std::optional<std::string_view> {
    for (const Statement& st : statements_at(trace, o.graph_launch))
      if (const auto* l = std::get_if<ast::GraphLaunch>(&st)) return l->stream;
    return std::nullopt;
  };
  if (first_capture != 0) {
    const auto on = launch_stream(*f.first.origin);
    if (!on) return std::nullopt;
    return Edge{*on, trace_name_in(f.second->stream), f.first.origin->graph_launch, f.second->origin->line};
  }
  if (second_capture != 0) {
    const auto on = launch_stream(*f.second->origin);
    if (!on) return std::nullopt;
    return Edge{trace_name_in(f.first.stream), *on, f.first.origin->line, f.second->origin->graph_launch};
  }
  // A stream declared again after its destroy is reported as NAME'k; the
  // edit names it as the trace does (at that line NAME is that incarnation).
  return Edge{trace_name_in(f.first.stream), trace_name_in(f.second->stream), f.first.origin->line,
              f.second->origin->line};
}

/// Each finding's missing edge (nullopt: not a missing edge), by its index
/// in the report: found once, since grouping asks for each many times.
using Edges = std::vector<std::optional<Edge>>;
Edges missing_edges(const Trace& trace, const Report& report) {
  Edges edges;
  edges.reserve(report.findings.size());
  for (const ReportFinding& f : report.findings) edges.push_back(missing_edge(trace, f));
  return edges;
}

/// The record after the last first op and the wait before the earliest
/// second op of a group of missing edges, on `event`.
std::vector<TraceEdit> edge_edits(const Trace& trace, const Report& report, const Edges& edges,
                                  const StreamDevices& devices, const FindingGroup& g, const std::string& event) {
  int record_after = 0, wait_before = 0;
  for (const std::size_t i : g.findings) {
    const Edge& e = *edges[i];
    record_after = std::max(record_after, e.from_line);
    wait_before = wait_before == 0 ? e.to_line : std::min(wait_before, e.to_line);
  }
  const ReportFinding& first = report.findings[g.findings.front()];
  const Edge& head = *edges[g.findings.front()];
  const DeviceNumber device = devices.of(first.first.stream, head.from_line);
  std::vector<TraceEdit> edits;
  // R13d: only streams of the event's device may record it; declarations
  // come first, where main's current device is 0.
  if (device != 0) edits.push_back(TraceEdit::declare(fmt::format("device {}", device)));
  edits.push_back(TraceEdit::declare("event " + event));
  if (device != 0) edits.push_back(TraceEdit::declare("device 0"));
  edits.push_back(TraceEdit::insert_after(
      record_after, fmt::format("{}record {} on {}", thread_prefix(trace, record_after), event, head.from_stream)));
  edits.push_back(TraceEdit::insert_before(
      wait_before, fmt::format("{}wait {} on {}", thread_prefix(trace, wait_before), event, head.to_stream)));
  return edits;
}

/// The first read of `was` that reads other writes in `now` (nullopt: none).
std::optional<ProducerChange> changed_producer(const ReadProducers& was, const ReadProducers& now) {
  for (const auto& [read, writers] : was) {
    const auto it = now.find(read);
    if (it == now.end() || it->second != writers)
      return ProducerChange{read, writers, it == now.end() ? std::set<int>{} : it->second};
  }
  return std::nullopt;
}

/// Edits checked against the producers of a trace, on one schedule.
class ProducerCheck {
 public:
  ProducerCheck(const Trace& trace, std::string text, const TraceCheckOptions& options)
      : trace_(trace),
        text_(std::move(text)),
        seed_(options.seed),
        run_options_{apply_policy_overrides(trace.policy, options.policy_overrides), false},
        was_(producers_of(trace, {})) {}

  /// The first read whose producer the edited trace changes (nullopt:
  /// none). Throws std::invalid_argument for
  /// edits that do not apply, TraceError for edits whose trace does not parse.
  std::optional<ProducerChange> change(std::span<const TraceEdit> edits) const {
    return change(apply_edits(text_, edits));
  }
  std::optional<ProducerChange> change(const EditedTrace& edited) const {
    return changed_producer(was_, producers_of(parse_trace(edited.text, trace_.file), edited.to_original()));
  }

 private:
  ReadProducers producers_of(const Trace& t, std::span<const int> to_original) const {
    sim::RandomChooser chooser(seed_);
    return read_producers(run_on_simulator(t, chooser, run_options_), to_original);
  }

  const Trace& trace_;
  std::string text_;
  std::uint64_t seed_;
  TraceRunOptions run_options_;
  ReadProducers was_;
};

/// Findings into groups: missing edges per (from stream, to stream) cut into
/// the fewest groups that one record and one wait fix; findings with their
/// own edits by those edits; every other finding alone. Edge groups get
/// their edits later (edge_edits), once their events are named.
std::vector<FindingGroup> partition(const Report& report, const Edges& edges) {
  const auto& findings = report.findings;
  std::vector<FindingGroup> groups;
  groups.reserve(findings.size());  // at most one each: no growth moves them
  std::map<std::pair<std::string_view, std::string_view>, std::vector<std::size_t>> by_streams;
  std::map<std::vector<TraceEdit>, std::size_t> by_edits;  // -> index in groups
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const ReportFinding& f = findings[i];
    if (const auto& e = edges[i]) {
      by_streams[{e->from_stream, e->to_stream}].push_back(i);
    } else if (!f.edits.empty()) {
      const auto [it, fresh] = by_edits.try_emplace(f.edits, groups.size());
      if (fresh) groups.push_back(FindingGroup{{}, f.edits, std::nullopt});
      groups[it->second].findings.push_back(i);
    } else {
      groups.push_back(FindingGroup{{i}, {}, std::nullopt});
    }
  }
  // A record after the last first op and a wait before the earliest second
  // op fix every finding whose first op is enqueued before that wait: the
  // fewest such cuts, greedily by the second op's line.
  for (auto& [streams, members] : by_streams) {
    std::sort(members.begin(), members.end(), [&](std::size_t a, std::size_t b) {
      return std::tuple(edges[a]->to_line, a) < std::tuple(edges[b]->to_line, b);
    });
    const std::size_t first_of_pair = groups.size();
    for (const std::size_t i : members) {
      if (groups.size() > first_of_pair && edges[i]->from_line < edges[groups.back().findings.front()]->to_line) {
        groups.back().findings.push_back(i);
        continue;
      }
      groups.push_back(FindingGroup{{i}, {}, std::nullopt});
    }
  }
  return groups;
}

}  // namespace

void group_findings(const Trace& trace, Report& report, const TraceCheckOptions& options) {
  // No finding, no group: a clean trace skips the walk below that collects
  // every name it uses (about 5 % of checking a clean million-statement
  // trace, docs/PERFORMANCE.md).
  if (report.findings.empty()) {
    report.groups.clear();
    return;
  }
  const Edges edges = missing_edges(trace, report);
  const StreamDevices devices(trace);
  std::vector<FindingGroup> groups = partition(report, edges);
  const auto is_edge_group = [&](const FindingGroup& g) {
    return g.edits.empty() && edges[g.findings.front()].has_value();
  };
  // Each edge checked against the producers (the event's name does not
  // matter): a group whose edge changes what some read reads is split into
  // its findings, and a finding whose own edge does too gets no edge.
  const std::set<std::string> taken = used_names(trace);
  int next_event = 1;
  const auto fresh_event = [&] {
    std::string event;
    do event = "fix_" + std::to_string(next_event++);
    while (taken.contains(event));
    return event;
  };
  const std::string checking_event = fresh_event();
  next_event = 1;
  const bool small = trace.statements.size() <= kMaxStatementsCheckedForProducers;
  std::optional<ProducerCheck> check;  // made when the first edge is checked
  const auto change = [&](const FindingGroup& one) -> std::optional<ProducerChange> {
    if (!check) check.emplace(trace, trace_text(trace), options);
    try {
      return check->change(edge_edits(trace, report, edges, devices, one, checking_event));
    } catch (const std::invalid_argument&) {
      return std::nullopt;  // edits that do not apply: `streamcheck fix` says so
    } catch (const TraceError&) {
      return std::nullopt;
    }
  };
  std::vector<FindingGroup> checked;
  if (!small) {
    checked = std::move(groups);  // no edge is checked, so no group splits
  } else {
    checked.reserve(groups.size());
    for (FindingGroup& g : groups) {
      if (!is_edge_group(g) || !change(g)) {
        checked.push_back(std::move(g));
        continue;
      }
      for (const std::size_t i : g.findings) {
        FindingGroup alone{{i}, {}, std::nullopt};
        alone.breaks_producer = change(alone);
        checked.push_back(std::move(alone));
      }
    }
  }
  for (FindingGroup& g : checked)
    if (is_edge_group(g) && !g.breaks_producer) g.edits = edge_edits(trace, report, edges, devices, g, fresh_event());
  for (FindingGroup& g : checked) std::sort(g.findings.begin(), g.findings.end());
  std::sort(checked.begin(), checked.end(),
            [](const FindingGroup& a, const FindingGroup& b) { return a.findings.front() < b.findings.front(); });
  report.groups = std::move(checked);
}

AppliedFixes apply_fixes_one_at_a_time(std::string_view text, const Trace& trace, const Report& report,
                                       const TraceCheckOptions& options) {
  std::optional<ProducerCheck> check;
  if (trace.statements.size() <= kMaxStatementsCheckedForProducers) check.emplace(trace, std::string(text), options);
  AppliedFixes out;
  out.trace = apply_edits(text, {});
  std::vector<TraceEdit> kept;
  for (std::size_t g = 0; g < report.groups.size(); ++g) {
    const FindingGroup& group = report.groups[g];
    if (group.edits.empty()) {
      out.not_applied.push_back({g, describe_fix(report, group)});
      continue;
    }
    std::vector<TraceEdit> candidate = kept;
    candidate.insert(candidate.end(), group.edits.begin(), group.edits.end());
    try {
      EditedTrace edited = apply_edits(text, candidate);
      (void)parse_trace(edited.text, trace.file);
      if (const auto change = check ? check->change(edited) : std::nullopt) {
        out.not_applied.push_back({g, describe(*change)});
        continue;
      }
      kept = std::move(candidate);
      out.trace = std::move(edited);
      out.applied.push_back(g);
    } catch (const std::invalid_argument& e) {
      out.not_applied.push_back({g, e.what()});
    } catch (const TraceError& e) {
      out.not_applied.push_back({g, std::string("the edits make a trace that does not parse: ") + e.what()});
    }
  }
  return out;
}

namespace {

std::vector<std::string_view> words_of(std::string_view text) {
  std::vector<std::string_view> words;
  while (!text.empty()) {
    const auto space = text.find(' ');
    if (space != 0) words.push_back(text.substr(0, space));
    text.remove_prefix(space == std::string_view::npos ? text.size() : space + 1);
  }
  return words;
}

/// Whether one parse of every group's edits together decides what keeping
/// them one at a time decides: each group only declares events of its own
/// (on the device it names, main's device set back to 0 after them) and
/// adds records and waits of those events, or waits on the trace's own
/// events, in a trace with no capture.
/// Outside a capture such a line changes nothing the parser knows that
/// another line depends on: R14a joins a stream through a wait only while
/// a capture is open, and no other line names the group's events. So the
/// edits of any set of groups parse when those of all groups do, and one
/// at a time every group would be kept.
bool parsed_together_decides(const Trace& trace, const Report& report) {
  if (std::any_of(trace.statements.begin(), trace.statements.end(),
                  [](const Statement& st) { return std::holds_alternative<ast::CaptureBegin>(st); }))
    return false;
  const std::set<std::string> taken = used_names(trace);
  std::set<std::string, std::less<>> declared;  // by every group so far
  for (const FindingGroup& g : report.groups) {
    std::set<std::string, std::less<>> own;
    std::string_view device = "0";
    for (const TraceEdit& e : g.edits) {
      const std::vector<std::string_view> w = words_of(e.text);
      if (e.kind == TraceEdit::Kind::Declare) {
        if (w.size() == 2 && w[0] == "device") {
          device = w[1];
          continue;
        }
        const std::string event(w.size() == 2 && w[0] == "event" ? w[1] : "");
        if (event.empty() || taken.contains(event) || !declared.insert(event).second) return false;
        own.insert(event);
        continue;
      }
      if (e.kind != TraceEdit::Kind::InsertBefore && e.kind != TraceEdit::Kind::InsertAfter) return false;
      const std::size_t verb = !w.empty() && w[0].starts_with('@') ? 1 : 0;
      if (w.size() != verb + 4 || w[verb + 2] != "on") return false;
      const std::string event(w[verb + 1]);
      const bool own_record = w[verb] == "record" && own.contains(event);
      // A wait on an event of the trace itself (a record never waited):
      // whether it parses depends on the trace's lines alone, since no group
      // declares, records or destroys a name the trace uses.
      const bool wait = w[verb] == "wait" && (own.contains(event) || taken.contains(event));
      if (!own_record && !wait) return false;
    }
    if (device != "0") return false;
  }
  return true;
}

}  // namespace

AppliedFixes apply_fixes(std::string_view text, const Trace& trace, const Report& report,
                         const TraceCheckOptions& options) {
  // One at a time, each kept edit is applied and parsed again for every
  // group: quadratic in a loop with a race in each iteration (8.8 s for
  // 2,000 iterations, docs/PERFORMANCE.md). Where one parse decides, and no
  // producer is checked (that check is per group), all are kept at once.
  if (trace.statements.size() > kMaxStatementsCheckedForProducers && parsed_together_decides(trace, report)) {
    AppliedFixes out;
    std::vector<TraceEdit> all;
    for (std::size_t g = 0; g < report.groups.size(); ++g) {
      const FindingGroup& group = report.groups[g];
      if (group.edits.empty()) {
        out.not_applied.push_back({g, describe_fix(report, group)});
        continue;
      }
      all.insert(all.end(), group.edits.begin(), group.edits.end());
      out.applied.push_back(g);
    }
    try {
      out.trace = apply_edits(text, all);
      (void)parse_trace(out.trace.text, trace.file);
      return out;
    } catch (const std::invalid_argument&) {
    } catch (const TraceError&) {
    }
    // Some group's edits do not apply or parse: one at a time says which.
  }
  return apply_fixes_one_at_a_time(text, trace, report, options);
}

}  // namespace streamcheck::tools
