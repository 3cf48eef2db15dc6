#include "tools/trace_check.h"

#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "tools/render.h"

namespace streamcheck::tools {

int TraceReport::exit_code() const {
  if (!notes.empty()) return 1;
  for (const auto& f : findings)
    if (!f.warning) return 1;
  return 0;
}

PoolPolicy apply_policy_overrides(PoolPolicy p, const std::vector<std::pair<std::string, std::string>>& overrides) {
  for (const auto& [name, value] : overrides) {
    if (name == "release_threshold") {
      std::size_t used = 0;
      try {
        p.release_threshold = std::stoull(value, &used, 0);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != value.size() || value.empty())
        throw std::invalid_argument("--policy release_threshold needs a number, got '" + value + "'");
      continue;
    }
    if (value != "on" && value != "off")
      throw std::invalid_argument("--policy " + name + " needs on or off, got '" + value + "'");
    const bool on = value == "on";
    if (name == "follow_event_dependencies")
      p.follow_event_dependencies = on;
    else if (name == "opportunistic")
      p.opportunistic = on;
    else if (name == "internal_dependencies")
      p.internal_dependencies = on;
    else
      throw std::invalid_argument("unknown pool switch '" + name +
                                  "' (follow_event_dependencies, opportunistic, internal_dependencies, "
                                  "release_threshold)");
  }
  return p;
}

namespace {

using Key = std::tuple<sim::FindingKind, sim::OpRef, std::optional<sim::OpRef>, bool>;

std::string line_ref(const TraceRun& run, sim::OpRef op) {
  if (auto o = run.origin(op)) return "line " + std::to_string(o->line) + " (" + o->text + ")";
  return run.model().describe(op);
}

TraceFinding describe(const TraceRun& run, const sim::Finding& f, const std::string& schedule) {
  const auto& m = run.model();
  TraceFinding out;
  out.kind = std::string(sim::to_string(f.kind));
  out.definite = f.definite;
  out.warning = f.kind == sim::FindingKind::Leak;
  out.first = run.describe_op(f.first);
  out.first_stream = f.first.stream;
  out.first_index = f.first.index;
  out.first_op = m.stream_name(f.first.stream) + "#" + std::to_string(f.first.index);
  if (auto o = run.origin(f.first)) out.first_line = o->line;
  out.bytes = run.describe_bytes(f.bytes);
  out.schedule = schedule;
  if (out.warning) {
    out.order = "the allocation is never freed";
    out.fix = "free the buffer (free/deallocate) once its last use is enqueued";
    return out;
  }
  const sim::OpRef q = *f.second;
  out.second = run.describe_op(q);
  if (auto o = run.origin(q)) out.second_line = o->line;
  const std::string ps = m.stream_name(f.first.stream), qs = m.stream_name(q.stream);
  if (f.definite) {
    out.order = "the free at " + line_ref(run, f.first) + " happens before the use";
    out.fix = "keep the buffer alive until after " + line_ref(run, q) + ", or use a live buffer";
  } else {
    out.order = "no happens-before path between them: nothing orders " + ps + "#" + std::to_string(f.first.index) +
                " before " + qs + "#" + std::to_string(q.index) + " (missing edge)";
    out.fix = "record an event on " + ps + " after " + line_ref(run, f.first) + "; make " + qs + " wait on it before " +
              line_ref(run, q);
  }
  return out;
}

struct Collector {
  TraceReport report;
  std::map<Key, std::size_t> index;
  std::map<std::pair<int, std::string>, bool> notes_seen;

  void add(const TraceRun& run, const std::string& schedule) {
    ++report.schedules;
    for (const auto& f : run.model().findings()) {
      const Key k{f.kind, f.first, f.second, f.definite};
      auto it = index.find(k);
      if (it == index.end()) {
        index[k] = report.findings.size();
        report.findings.push_back(describe(run, f, schedule));
        report.findings.back().schedules = 1;
      } else {
        ++report.findings[it->second].schedules;
      }
    }
    for (const auto& n : run.notes()) {
      if (notes_seen[{n.line, n.message}]) continue;
      notes_seen[{n.line, n.message}] = true;
      report.notes.push_back("line " + std::to_string(n.line) + ": " + n.message);
    }
  }
};

TraceRunOptions run_options(const Trace& trace, const TraceCheckOptions& o) {
  return TraceRunOptions{apply_policy_overrides(trace.policy, o.policy_overrides), o.faults};
}

TraceReport start(const Trace& trace, const TraceCheckOptions& o, const char* strategy) {
  TraceReport r;
  r.file = trace.file;
  r.strategy = strategy;
  r.seed = o.seed;
  r.policy = apply_policy_overrides(trace.policy, o.policy_overrides).describe();
  return r;
}

}  // namespace

TraceReport check_trace(const Trace& trace, const TraceCheckOptions& o) {
  Collector c{start(trace, o, "one schedule"), {}, {}};
  sim::RandomChooser chooser(o.seed);
  TraceRun run(trace, chooser, run_options(trace, o));
  c.add(run, chooser.schedule());
  return c.report;
}

TraceReport replay_trace(const Trace& trace, const std::string& schedule, const TraceCheckOptions& o) {
  Collector c{start(trace, o, "replay"), {}, {}};
  sim::ReplayChooser chooser(schedule);  // throws std::invalid_argument on a malformed string
  TraceRun run(trace, chooser, run_options(trace, o));
  c.add(run, chooser.schedule());
  return c.report;
}

TraceReport explore_trace(const Trace& trace, const TraceCheckOptions& o, const Progress& progress) {
  Collector c{start(trace, o, o.strategy == Strategy::Dfs ? "dfs" : "random"), {}, {}};
  const TraceRunOptions ro = run_options(trace, o);
  if (o.strategy == Strategy::Random) {
    sim::SplitMix64 seeds(o.seed);
    for (std::uint64_t i = 0; i < o.max_schedules; ++i) {
      sim::RandomChooser chooser(seeds.next());
      TraceRun run(trace, chooser, ro);
      c.add(run, chooser.schedule());
      if (progress && (i + 1) % 100 == 0) progress(i + 1, c.report.findings.size());
    }
    return c.report;
  }
  sim::DfsEnumerator dfs;
  while (!dfs.done() && c.report.schedules < o.max_schedules) {
    auto chooser = dfs.next_run();
    TraceRun run(trace, chooser, ro);
    c.add(run, chooser.schedule());
    dfs.finished(chooser);
    if (progress && c.report.schedules % 100 == 0) progress(c.report.schedules, c.report.findings.size());
  }
  c.report.exhaustive = dfs.done();
  return c.report;
}

HeldRun run_one(const Trace& trace, const TraceCheckOptions& o, const std::optional<std::string>& schedule) {
  HeldRun held;
  if (schedule)
    held.chooser = std::make_unique<sim::ReplayChooser>(*schedule);
  else
    held.chooser = std::make_unique<sim::RandomChooser>(o.seed);
  held.run = std::make_unique<TraceRun>(trace, *held.chooser, run_options(trace, o));
  held.schedule = held.chooser->schedule();
  return held;
}

std::string report_text(const TraceReport& r) {
  std::ostringstream os;
  os << "streamcheck: " << r.file << ": " << r.schedules << " schedule" << (r.schedules == 1 ? "" : "s") << " ("
     << r.strategy << (r.exhaustive ? ", exhaustive" : "") << ", seed " << r.seed << "), pool " << r.policy << "\n";
  std::size_t errors = 0, warnings = 0;
  for (const auto& f : r.findings) (f.warning ? warnings : errors)++;
  for (const auto& f : r.findings) {
    os << "\n" << (f.warning ? "warning: " : "") << f.kind;
    if (f.kind == "use after free") os << (f.definite ? " (definite)" : " (racing)");
    os << "  [in " << f.schedules << " of " << r.schedules << " schedules]\n";
    os << "  first:    " << f.first << "\n";
    if (!f.second.empty()) os << "  second:   " << f.second << "\n";
    os << "  bytes:    " << f.bytes << "\n";
    os << "  order:    " << f.order << "\n";
    os << "  fix:      " << f.fix << "\n";
    os << "  schedule: " << f.schedule << "  (streamcheck replay " << r.file << " --schedule " << f.schedule << ")\n";
  }
  for (const auto& n : r.notes) os << "\nerror: " << n << "\n";
  os << "\n";
  if (errors == 0 && r.notes.empty())
    os << "verdict: clean"
       << (warnings ? " (" + std::to_string(warnings) + " warning" + (warnings > 1 ? "s" : "") + ")" : "") << "\n";
  else
    os << "verdict: " << errors + r.notes.size() << " finding" << (errors + r.notes.size() == 1 ? "" : "s")
       << (warnings ? ", " + std::to_string(warnings) + " warning" + (warnings > 1 ? "s" : "") : "") << "\n";
  return os.str();
}

namespace {
std::string json_string(const std::string& s) { return "\"" + json_escape(s) + "\""; }
}  // namespace

std::string report_json(const TraceReport& r) {
  std::ostringstream os;
  os << "{\"tool\":\"streamcheck\",\"schema\":1,\"file\":" << json_string(r.file)
     << ",\"strategy\":" << json_string(r.strategy) << ",\"seed\":" << r.seed << ",\"schedules\":" << r.schedules
     << ",\"exhaustive\":" << (r.exhaustive ? "true" : "false") << ",\"policy\":" << json_string(r.policy)
     << ",\"verdict\":" << json_string(r.exit_code() == 0 ? "clean" : "findings") << ",\"findings\":[";
  for (std::size_t i = 0; i < r.findings.size(); ++i) {
    const auto& f = r.findings[i];
    os << (i ? "," : "") << "{\"kind\":" << json_string(f.kind) << ",\"definite\":" << (f.definite ? "true" : "false")
       << ",\"severity\":" << json_string(f.warning ? "warning" : "error")
       << ",\"first\":{\"op\":" << json_string(f.first) << ",\"line\":" << f.first_line << "}";
    if (!f.second.empty())
      os << ",\"second\":{\"op\":" << json_string(f.second) << ",\"line\":" << f.second_line << "}";
    os << ",\"bytes\":" << json_string(f.bytes) << ",\"order\":" << json_string(f.order)
       << ",\"fix\":" << json_string(f.fix) << ",\"schedule\":" << json_string(f.schedule)
       << ",\"schedules\":" << f.schedules << "}";
  }
  os << "],\"notes\":[";
  for (std::size_t i = 0; i < r.notes.size(); ++i) os << (i ? "," : "") << json_string(r.notes[i]);
  os << "]}\n";
  return os.str();
}

}  // namespace streamcheck::tools
