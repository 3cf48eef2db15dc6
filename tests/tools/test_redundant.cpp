// `--redundant` over the examples (issue 10 item 9), both directions:
//  - what it flags is exactly what each example declares on its
//    `# redundant: LINE, ...` line (none when it has no such line);
//  - removing the flagged statements changes no ordering: the HB order of
//    every pair of ops and the findings stay the same (a needed wait or sync
//    is never called redundant), also on variants with a wait or sync
//    repeated, where the repeat must be flagged (a redundant one is found);
//  - the verdict and exit code never change with --redundant.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "backend_sim/schedule.h"
#include "tests/tools/command.h"
#include "tests/tools/example_files.h"
#include "tools/report.h"
#include "tools/trace_check.h"

namespace streamcheck::tools {
namespace {

using Lines = std::vector<std::string>;  // a trace's text, line i + 1 at [i]

Lines read_lines(const std::string& path) {
  std::ifstream in(path);
  Lines out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

Trace parse(const Lines& lines, const std::string& name) {
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  return parse_trace(text, name);
}

/// The lines an example declares redundant: `# redundant: 14, 16`.
std::set<int> declared_redundant(const Lines& lines) {
  const std::string prefix = "# redundant: ";
  std::set<int> out;
  for (const auto& l : lines)
    if (l.rfind(prefix, 0) == 0) {
      std::stringstream ss(l.substr(prefix.size()));
      for (std::string n; std::getline(ss, n, ',');) out.insert(std::stoi(n));
    }
  return out;
}

std::set<int> flagged_lines(const Trace& trace) {
  TraceCheckOptions o;
  o.redundant = true;
  o.max_schedules = 100;
  std::set<int> out;
  const Report r = explore_trace(trace, o);
  for (const auto& c : *r.redundant) out.insert(c.call.line);
  return out;
}

/// Whether the statement on this line is a `wait` or a `sync`.
bool is_wait_or_sync(const std::string& line) { return line.rfind("wait ", 0) == 0 || line.rfind("sync ", 0) == 0; }

/// One run where the device completes work only when the host waits for it
/// (every choice 0): the HB order of every pair of ops, and the findings by
/// their lines. Removing a call that orders nothing must leave it unchanged.
std::string order_and_findings(const Trace& trace) {
  sim::ReplayChooser first_choices("");
  const Execution run = run_on_simulator(trace, first_choices, TraceRunOptions{trace.policy, false});
  const sim::DeviceModel& m = run.model();
  std::vector<sim::OpRef> ops;
  for (std::uint32_t s = 0; s < m.stream_count(); ++s)
    for (std::uint32_t i = 0; i < m.op_count(sim::StreamIndex{s}); ++i) ops.push_back({sim::StreamIndex{s}, i});
  std::string out;
  for (const auto a : ops)
    for (const auto b : ops)
      if (m.happens_before(a, b))
        out += std::to_string(a.stream.value) + "#" + std::to_string(a.index) + "<" + std::to_string(b.stream.value) +
               "#" + std::to_string(b.index) + " ";
  for (const auto& f : m.findings())
    out += "\n" + std::string(sim::to_string(f.kind)) + " " + std::to_string(run.origin(f.first)->line) + " " +
           (f.second ? std::to_string(run.origin(*f.second)->line) : "-");
  return out;
}

using FindingKey = std::tuple<std::string, int, int, bool>;

/// Every finding of every schedule (DFS), by kind and lines; nullopt when
/// there are too many schedules to run them all here.
std::optional<std::set<FindingKey>> all_findings(const Trace& trace) {
  TraceCheckOptions o;
  o.strategy = Strategy::Dfs;
  o.max_schedules = 3000;
  const Report r = explore_trace(trace, o);
  if (!r.coverage.exhaustive) return std::nullopt;
  std::set<FindingKey> out;
  for (const auto& f : r.findings)
    out.insert({std::string(sim::to_string(f.kind)), f.first.origin ? f.first.origin->line : 0,
                f.second && f.second->origin ? f.second->origin->line : 0, f.definite});
  return out;
}

/// The trace with the statements on `lines` turned into comments (the line
/// numbers of everything else stay).
Lines without(Lines text, const std::set<int>& lines) {
  for (const int l : lines) text.at(static_cast<std::size_t>(l - 1)) = "# removed: " + text.at(l - 1);
  return text;
}

/// The example, and one variant per wait or sync statement with that
/// statement repeated on the next line (the line of the repeat: second).
std::vector<std::pair<Lines, int>> with_repeats(const Lines& text) {
  std::vector<std::pair<Lines, int>> out{{text, 0}};
  for (std::size_t i = 0; i < text.size(); ++i)
    if (is_wait_or_sync(text[i])) {
      Lines twice = text;
      twice.insert(twice.begin() + static_cast<std::ptrdiff_t>(i) + 1, text[i].substr(0, text[i].find('#')));
      out.push_back({twice, static_cast<int>(i) + 2});
    }
  return out;
}

TEST(Redundant, EachExampleFlagsExactlyTheLinesItDeclares) {
  std::size_t declared = 0;
  for (const auto& path : example_files()) {
    const Lines text = read_lines(path);
    declared += declared_redundant(text).size();
    EXPECT_EQ(flagged_lines(parse(text, path)), declared_redundant(text)) << path;
  }
  EXPECT_GE(declared, 4u) << "examples/24_redundant_wait.trace declares its redundant lines";
}

TEST(Redundant, RemovingTheFlaggedStatementsChangesNoOrderAndNoFinding) {
  std::size_t checked = 0, exhaustive = 0;
  for (const auto& path : example_files()) {
    for (const auto& [text, repeat] : with_repeats(read_lines(path))) {
      const Trace trace = parse(text, path);
      const std::set<int> flagged = flagged_lines(trace);
      if (flagged.empty()) continue;
      SCOPED_TRACE(path + (repeat ? ", line " + std::to_string(repeat - 1) + " repeated" : std::string()));
      const Trace removed = parse(without(text, flagged), path);
      ++checked;
      EXPECT_EQ(order_and_findings(removed), order_and_findings(trace));
      // Every schedule, where there are few enough.
      if (const auto before = all_findings(trace)) {
        const auto after = all_findings(removed);
        ASSERT_TRUE(after) << "fewer calls, fewer choices: the trace without them must be as small";
        ++exhaustive;
        EXPECT_EQ(*after, *before);
      }
    }
  }
  EXPECT_GE(checked, 30u);
  EXPECT_GE(exhaustive, 12u);
}

/// The stream a statement enqueues device work on, if any.
std::optional<std::string> enqueues_on(const Statement& st) {
  return std::visit(
      [](const auto& s) -> std::optional<std::string> {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, ast::BufferDecl> || std::is_same_v<S, ast::Free>)
          return s.stream;
        else if constexpr (std::is_same_v<S, ast::Launch> || std::is_same_v<S, ast::Copy> ||
                           std::is_same_v<S, ast::Run> || std::is_same_v<S, ast::Allocate>)
          return s.stream;
        else
          return std::nullopt;
      },
      st);
}

/// Whether the wait or sync on `line` names work: a `wait`/`sync event` on an
/// event recorded after an op of its stream, a `sync stream` of a stream with
/// work or a wait, a `sync device`. One that names none orders nothing at all
/// (a near-miss, which the redundancy notes leave alone).
bool names_work(const Trace& trace, int line) {
  std::map<std::string, bool> stream_has_work, capture_has_work;
  std::map<std::string, DeviceNumber> stream_device, event_device;  // R13d: a record across devices is not made
  const auto device_of = [&](const std::string& stream) -> DeviceNumber {
    if (const auto mark = stream.find(kDeviceMark); mark != std::string::npos)
      return std::stoul(stream.substr(mark + 1));
    return stream_device[stream];
  };
  for (const Statement& st : trace.statements) {
    if (const auto* d = std::get_if<ast::StreamDecl>(&st)) stream_device[d->name] = d->device;
    if (const auto* d = std::get_if<ast::EventDecl>(&st)) event_device[d->name] = d->device;
    if (source(st).line == line) {
      if (const auto* w = std::get_if<ast::Wait>(&st)) return capture_has_work[w->event];
      if (const auto* s = std::get_if<ast::SyncEvent>(&st)) return capture_has_work[s->event];
      if (const auto* s = std::get_if<ast::SyncStream>(&st)) return stream_has_work[s->stream];
      return true;  // sync device: the trace's own buffers are work
    }
    if (const auto s = enqueues_on(st)) stream_has_work[*s] = true;
    if (const auto* w = std::get_if<ast::Wait>(&st)) stream_has_work[w->stream] = true;
    if (const auto* r = std::get_if<ast::Record>(&st); r && device_of(r->stream) == event_device[r->event])
      capture_has_work[r->event] = stream_has_work[r->stream];
    // R9b: after its destroy the event is no work (the statement is not run).
    if (const auto* d = std::get_if<ast::DestroyEvent>(&st)) capture_has_work[d->event] = false;
    if (const auto* d = std::get_if<ast::DestroyStream>(&st)) stream_has_work[d->stream] = false;
  }
  return false;
}

/// Whether a host thread other than main runs a statement (O1 is off then).
bool has_host_threads(const Trace& trace) {
  return std::any_of(trace.statements.begin(), trace.statements.end(),
                     [](const Statement& st) { return std::holds_alternative<ast::ThreadDecl>(st); });
}

TEST(Redundant, AWaitOrSyncRepeatedOnTheNextLineIsFlagged) {
  std::size_t repeats = 0;
  for (const auto& path : example_files()) {
    const Lines text = read_lines(path);
    for (const auto& [twice, repeat] : with_repeats(text)) {
      if (!repeat) continue;
      const Trace trace = parse(twice, path);
      if (!names_work(trace, repeat)) continue;
      // A captured wait is an edge of its graph, never noted (R14a).
      if (std::any_of(trace.statements.begin(), trace.statements.end(),
                      [&](const Statement& st) { return source(st).line == repeat && source(st).captured_by != 0; }))
        continue;
      if (has_host_threads(trace) && twice[repeat - 1].rfind("wait ", 0) == 0) continue;
      ++repeats;
      const std::set<int> flagged = flagged_lines(trace);
      EXPECT_TRUE(flagged.contains(repeat)) << path << ": line " << repeat - 1 << " (" << twice[repeat - 1]
                                            << ") repeated on line " << repeat << " was not flagged";
    }
  }
  EXPECT_GE(repeats, 30u);
}

// --------------------------------------------------------------- the command

CommandResult streamcheck(const std::string& args) { return run_shell(std::string(STREAMCHECK_BIN) + " " + args); }
std::string example(const char* name) { return std::string(STREAMCHECK_EXAMPLES_DIR) + "/" + name; }

TEST(RedundantCommand, NotesNeverChangeTheVerdictOrTheExitCode) {
  for (const char* verb : {"check", "explore"})
    for (const char* name : {"24_redundant_wait.trace", "01_missing_wait.trace", "08_pipeline.trace"}) {
      const auto plain = streamcheck(std::string(verb) + " " + example(name));
      const auto noted = streamcheck(std::string(verb) + " " + example(name) + " --redundant");
      EXPECT_EQ(noted.exit_code, plain.exit_code) << verb << " " << name << ": " << noted.out;
      const auto verdict = [](const std::string& out) { return out.substr(out.rfind("verdict:")); };
      EXPECT_EQ(verdict(noted.out), verdict(plain.out)) << noted.out;
    }
  const auto r = streamcheck("check " + example("24_redundant_wait.trace") + " --redundant");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("note: redundant wait at line 14 (wait loaded on compute): compute already waits for "
                       "loaded's capture (line 11: record loaded on load) through line 12 (wait loaded on compute)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("note: redundant sync at line 18 (sync event loaded): the host already waits for loaded's "
                       "capture (line 11: record loaded on load) through line 17 (sync stream compute)"),
            std::string::npos)
      << r.out;
}

TEST(RedundantCommand, OffByDefaultAndInTheJsonWhenAsked) {
  const auto plain = streamcheck("check " + example("24_redundant_wait.trace") + " --json");
  EXPECT_EQ(plain.out.find("\"redundant\""), std::string::npos) << plain.out;
  const auto text = streamcheck("check " + example("24_redundant_wait.trace"));
  EXPECT_EQ(text.out.find("note: "), std::string::npos) << text.out;
  const auto json = streamcheck("check " + example("24_redundant_wait.trace") + " --redundant --json");
  EXPECT_EQ(json.exit_code, 0) << json.out;
  EXPECT_NE(json.out.find(R"("redundant":[{"rule":"O1 covered wait","line":14,"statement":"wait loaded on compute",)"
                          R"("covered_by":[{"line":12,"statement":"wait loaded on compute"}],)"),
            std::string::npos)
      << json.out;
}

}  // namespace
}  // namespace streamcheck::tools
