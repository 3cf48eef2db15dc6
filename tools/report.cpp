#include "tools/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tools/explain.h"

namespace streamcheck::tools {

Severity severity(NoteKind kind) {
  switch (kind) {
    case NoteKind::OutOfMemory:
    case NoteKind::NotLive:
    case NoteKind::Refused:
    case NoteKind::NotAResourceBlock:
    case NoteKind::Skipped:
    case NoteKind::BackendFailed:
    case NoteKind::Deadlock:
    case NoteKind::UseAfterDestroy:
    case NoteKind::DoubleHandOut:
    case NoteKind::WrongDevice:
    case NoteKind::GuardFinding:
      return Severity::Error;
  }
  return Severity::Error;
}

Verdict Report::verdict() const {
  for (const auto& f : findings)
    if (f.severity == Severity::Error) return Verdict::Findings;
  bool errors = gpu && (gpu->mismatching_words > 0 || gpu->wrong_final_words > 0);
  for (const auto& n : notes) errors = errors || severity(n.kind) == Severity::Error;
  return errors ? Verdict::Errors : Verdict::Clean;
}

namespace {

std::string plural(std::size_t n, const char* noun) { return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s"); }

/// A cause's racing pairs in the text report: the first few, then the count.
constexpr std::size_t kPairsShown = 8;

/// The items (findings or causes) the text report folds into the first of
/// their shape: a loop with a bug in each iteration shows the same finding,
/// on the same statements at other lines, once an iteration (40,000 blocks,
/// 30 MB of text, for a 20,000-iteration loop that misses one wait). Built
/// one item at a time, keeping each distinct shape once: a racy loop's
/// findings have a handful of shapes, and holding every item's shape string
/// at once was half of the memory its check held at its peak.
class Folds {
 public:
  static constexpr std::size_t kNoShape = std::numeric_limits<std::size_t>::max();
  /// Files the next item under `shape`; an empty shape never folds.
  void add(const std::string& shape) {
    const std::size_t i = first_.size();
    if (shape.empty()) {
      first_.push_back(kNoShape);
      return;
    }
    const auto [it, fresh] = first_of_.try_emplace(shape, i);
    first_.push_back(it->second);
    if (!fresh) later_[it->second].push_back(i);
  }
  /// The first item of `i`'s shape (itself, or kNoShape).
  std::size_t first(std::size_t i) const { return first_[i]; }
  /// Whether item `i` folds into an earlier one of its shape.
  bool folded(std::size_t i) const { return first_[i] != kNoShape && first_[i] != i; }
  /// The later items of `i`'s shape, when `i` is the first of it.
  const std::vector<std::size_t>& later(std::size_t i) const {
    static const std::vector<std::size_t> none;
    const auto it = later_.find(i);
    return it == later_.end() ? none : it->second;
  }

 private:
  std::vector<std::size_t> first_;                                   // by item
  std::unordered_map<std::string, std::size_t> first_of_;            // by distinct shape
  std::unordered_map<std::size_t, std::vector<std::size_t>> later_;  // by first item of a shape that repeats
};

/// `text` with every number after "line " or "fix_" (the lines an edit
/// names, the events a fix declares) made '#': a cause's shape. Copies the
/// text between those words in runs: each finding's fix text is masked
/// once, and a racy loop's check spent a tenth of its time here copying
/// it a character at a time.
std::string without_lines(std::string_view text) {
  static constexpr std::string_view kLine = "line ", kFix = "fix_";
  std::string out;
  out.reserve(text.size());
  std::size_t at = 0;
  std::size_t next_line = text.find(kLine), next_fix = text.find(kFix);
  while (at < text.size()) {
    if (next_line != std::string_view::npos && next_line < at) next_line = text.find(kLine, at);
    if (next_fix != std::string_view::npos && next_fix < at) next_fix = text.find(kFix, at);
    const std::size_t word = std::min(next_line, next_fix);
    if (word == std::string_view::npos) {
      out.append(text.substr(at));
      break;
    }
    const std::size_t after = word + (word == next_line ? kLine.size() : kFix.size());
    out.append(text.substr(at, after - at));
    at = after;
    if (at == text.size() || std::isdigit(static_cast<unsigned char>(text[at])) == 0) continue;
    out += '#';
    while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])) != 0) ++at;
  }
  return out;
}

/// A finding's shape: everything its text block says but its lines and
/// stream positions (and its schedule, which the JSON keeps for each).
std::string finding_shape(const ReportFinding& f) {
  if (!f.first.origin || (f.second && !f.second->origin)) return {};
  std::string branches;  // the answers its `if done`s took, not their lines
  for (const BranchTaken& b : f.branches) branches += b.done ? 'd' : 'n';
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", static_cast<int>(f.severity), finding_label(f),
                     f.first.stream, f.first.origin->text, f.second ? f.second->stream : "",
                     f.second ? f.second->origin->text : "", describe(f.bytes), static_cast<int>(f.order),
                     without_lines(describe_fix(f)), f.schedules, f.same_handle.value_or(""), branches);
}

}  // namespace

std::string report_text(const Report& r) {
  std::string out;
  auto line = std::back_inserter(out);
  const Coverage& c = r.coverage;
  const char* unit = c.executions ? "execution" : "schedule";  // what one run was
  fmt::format_to(line, "streamcheck: {}: {} ({}{}, seed {}), pool {}\n", r.file, plural(c.explored, unit),
                 to_string(c.how), c.exhaustive ? ", exhaustive" : "", c.seed, r.policy.describe());
  std::size_t errors = 0, warnings = 0;
  for (const auto& f : r.findings) (f.severity == Severity::Warning ? warnings : errors)++;
  // Each finding's shape, made once: a cause's shape is its findings'.
  Folds finding_folds;
  for (const ReportFinding& f : r.findings) finding_folds.add(finding_shape(f));
  for (std::size_t i = 0; i < r.findings.size(); ++i) {
    if (finding_folds.folded(i)) continue;
    const ReportFinding& f = r.findings[i];
    fmt::format_to(line, "\n{}{}  [in {} of {} {}s]\n", f.severity == Severity::Warning ? "warning: " : "",
                   finding_label(f), f.schedules, c.explored, unit);
    fmt::format_to(line, "  first:    {}\n", describe(f.first));
    if (f.second) fmt::format_to(line, "  second:   {}\n", describe(*f.second));
    fmt::format_to(line, "  bytes:    {}\n", describe(f.bytes));
    fmt::format_to(line, "  order:    {}\n", describe_order(f));
    if (f.same_handle) fmt::format_to(line, "  handle:   {}\n", *f.same_handle);
    fmt::format_to(line, "  fix:      {}\n", describe_fix(f));
    if (!f.branches.empty()) {
      std::string taken;
      for (const BranchTaken& b : f.branches)
        taken += fmt::format("{}line {} {}", taken.empty() ? "" : ", ", b.line, b.done ? "done" : "not done");
      fmt::format_to(line, "  branches: {} (the 'if done' answers of its first run)\n", taken);
    }
    if (c.how == Coverage::How::Streamed)  // its execution is the seed's, every op run at once: no schedule string
      fmt::format_to(line, "  rerun:    streamcheck check --stream {} --seed {}\n", r.file, c.seed);
    else if (f.schedule_file)
      fmt::format_to(line, "  replay:   streamcheck replay {} --schedule-file {}\n", r.file, *f.schedule_file);
    else
      fmt::format_to(line, "  replay:   streamcheck replay {} --schedule {}\n", r.file, f.schedule.str());
    if (const auto& later = finding_folds.later(i); !later.empty())
      fmt::format_to(line, "  repeats:  {} more like it, the same statements at other lines (--json lists each): {}\n",
                     later.size(), describe_pairs(r, FindingGroup{later, {}, std::nullopt}, kPairsShown));
  }
  for (const auto& n : r.near_misses) fmt::format_to(line, "\nnear miss ({}): {}\n", to_string(n.kind), describe(n));
  // A cause folds into an earlier one with the same findings' shapes (each
  // named by the first finding of it) and the same fix but for its lines
  // and new events' numbers. Its fix's text is made again when it is shown.
  Folds cause_folds;
  std::string shape;
  for (std::size_t k = 0; k < r.groups.size(); ++k) {
    shape = without_lines(describe_fix(r, r.groups[k]));
    for (const std::size_t i : r.groups[k].findings) {
      if (finding_folds.first(i) == Folds::kNoShape) {
        shape.clear();
        break;
      }
      fmt::format_to(std::back_inserter(shape), "\n{}", finding_folds.first(i));
    }
    cause_folds.add(shape);
  }
  for (std::size_t k = 0; k < r.groups.size(); ++k) {
    if (cause_folds.folded(k)) continue;
    const FindingGroup& g = r.groups[k];
    fmt::format_to(line, "\ncause {} of {}: {}: {}\n", k + 1, r.groups.size(), plural(g.findings.size(), "finding"),
                   describe_cause(r, g));
    fmt::format_to(line, "  pairs:    {}\n", describe_pairs(r, g, kPairsShown));
    fmt::format_to(line, "  fix:      {}\n", describe_fix(r, g));
    if (const auto& later = cause_folds.later(k); !later.empty()) {
      FindingGroup heads;  // the first finding of each later cause
      for (const std::size_t other : later) heads.findings.push_back(r.groups[other].findings.front());
      fmt::format_to(line, "  repeats:  {} like it, the same fix at the lines of their pairs (--json lists each): {}\n",
                     plural(later.size(), "more cause"), describe_pairs(r, heads, kPairsShown));
    }
  }
  std::size_t error_notes = 0;
  for (const auto& n : r.notes) {
    const bool error = severity(n.kind) == Severity::Error;
    error_notes += error ? 1 : 0;
    warnings += error ? 0 : 1;
    fmt::format_to(line, "\n{}: {}\n", error ? "error" : "warning", describe(n));
  }
  if (r.redundant) {
    for (const auto& rc : *r.redundant)
      fmt::format_to(line, "\nnote: {} at line {} ({}): {}; removing it changes no ordering\n", redundant_label(rc),
                     rc.call.line, rc.call.text, describe_why(rc));
    if (r.redundant->empty()) fmt::format_to(line, "\nnote: no redundant wait or sync\n");
  }
  fmt::format_to(line, "\n{}", describe_coverage(c));
  const std::string warned = warnings ? plural(warnings, "warning") : "";
  switch (r.verdict()) {
    case Verdict::Clean:
      fmt::format_to(line, "\nverdict: clean{}{}\n", warned.empty() ? "" : " (" + warned + ")",
                     c.exhaustive ? "" : fmt::format(" in the {}s run (not exhaustive: see coverage)", unit));
      break;
    case Verdict::Findings:
      fmt::format_to(line, "\nverdict: {}{}{}\n", plural(errors, "finding"),
                     error_notes ? ", " + plural(error_notes, "error") : "", warned.empty() ? "" : ", " + warned);
      break;
    case Verdict::Errors:
      fmt::format_to(line, "\nverdict: {}{}\n", error_notes ? plural(error_notes, "error") : "corrupted reads",
                     warned.empty() ? "" : ", " + warned);
      break;
  }
  if (const auto& g = r.gpu) {
    fmt::format_to(
        line,
        "GPU replay on {}: {} runs (held back: {}), runs with mismatching reads: {}, mismatching words: {}; runs "
        "whose final contents are not the last writes': {}, such words: {}\n",
        g->device, g->runs, held_back(r), g->runs_with_mismatches, g->mismatching_words,
        g->runs_with_wrong_final_contents, g->wrong_final_words);
    for (const auto& n : g->notes) fmt::format_to(line, "  on the GPU: {}\n", n);
  }
  return out;
}

namespace {

using Json = nlohmann::ordered_json;

/// A trace line, or null for an op or choice of no statement.
Json line_or_null(int line) { return line > 0 ? Json(line) : Json(nullptr); }

Json op_json(const ReportOp& op) {
  return {{"stream", op.stream},
          {"index", op.ref.index},
          {"line", op.origin ? Json(op.origin->line) : Json(nullptr)},
          {"statement", op.origin ? Json(op.origin->text) : Json(nullptr)},
          {"op", describe(op)}};
}

Json near_miss_json(const NearMiss& n) {
  return {{"kind", to_string(n.kind)},
          {"line", n.statement.line},
          {"statement", n.statement.text},
          {"message", describe(n)}};
}

/// One range: its addresses, and the buffer with the offsets into it when it lies in one.
Json range_json(const ReportBytes& b) {
  Json o;
  if (b.in_buffer) {
    o["buffer"] = b.in_buffer->buffer;
    o["offsets"] = {b.in_buffer->lo, b.in_buffer->hi};
  }
  o["address"] = {b.address.lo, b.address.hi};
  return o;
}

std::string to_string(TraceEdit::Kind k) {
  switch (k) {
    case TraceEdit::Kind::Declare:
      return "declare";
    case TraceEdit::Kind::InsertBefore:
      return "insert before";
    case TraceEdit::Kind::InsertAfter:
      return "insert after";
    case TraceEdit::Kind::MoveBefore:
      return "move before";
    case TraceEdit::Kind::MoveAfter:
      return "move after";
    case TraceEdit::Kind::Remove:
      return "remove";
  }
  return {};
}

Json edits_json(const std::vector<TraceEdit>& edits) {
  auto out = Json::array();
  for (const TraceEdit& e : edits) {
    Json o{{"kind", to_string(e.kind)}, {"line", e.line}};
    if (!e.text.empty()) o["text"] = e.text;
    if (e.anchor != 0) o["anchor"] = e.anchor;
    out.push_back(std::move(o));
  }
  return out;
}

/// `schedule`: the finding's index into the report's `schedule_texts`, or
/// null (a streamed check's, which has none).
Json finding_json(const ReportFinding& f, Json schedule) {
  Json o;
  o["kind"] = sim::to_string(f.kind);
  o["definite"] = f.definite;
  o["severity"] = to_string(f.severity);
  o["first"] = op_json(f.first);
  if (f.second) o["second"] = op_json(*f.second);
  o["bytes"] = describe(f.bytes);
  o["ranges"] = Json::array();
  for (const auto& b : f.bytes) o["ranges"].push_back(range_json(b));
  o["order"] = {{"kind", to_string(f.order)}, {"text", describe_order(f)}};
  o["fix"] = {{"kind", to_string(f.fix)}, {"text", describe_fix(f)}};
  if (f.near_miss) o["near_miss"] = near_miss_json(*f.near_miss);
  if (!f.edits.empty()) o["edits"] = edits_json(f.edits);
  if (f.producer) o["producer"] = op_json(*f.producer);
  if (f.producer_unchecked) o["producer_unchecked"] = true;
  if (f.same_handle) o["same_handle"] = *f.same_handle;
  if (!f.branches.empty()) {
    o["branches"] = Json::array();
    for (const BranchTaken& b : f.branches) o["branches"].push_back({{"line", b.line}, {"done", b.done}});
  }
  o["schedule"] = std::move(schedule);
  o["schedules"] = f.schedules;
  return o;
}

Json note_json(const Note& n) {
  return {{"line", line_or_null(n.line)},
          {"kind", to_string(n.kind)},
          {"severity", to_string(severity(n.kind))},
          {"message", n.message}};
}

/// A wait or sync that orders nothing new (--redundant), and the statements
/// that already ordered what it orders.
Json redundant_json(const RedundantCall& c) {
  Json o;
  o["rule"] = sim::to_string(c.rule);
  o["line"] = c.call.line;
  o["statement"] = c.call.text;
  o["covered_by"] = Json::array();
  for (const auto& by : c.covered_by) o["covered_by"].push_back({{"line", by.line}, {"statement", by.text}});
  o["why"] = describe_why(c);
  return o;
}

Json choice_json(const ChoicePoint& c) {
  return {{"line", line_or_null(c.line)}, {"options", c.options}, {"taken", c.taken}};
}

Json choices_json(const ChoiceSummary& s) {
  Json j{{"pool_reuse", Json::array()}, {"queries", Json::array()}, {"faults", Json::array()}};
  for (const auto& c : s.pool_reuse) j["pool_reuse"].push_back(choice_json(c));
  for (const auto& q : s.queries)
    j["queries"].push_back({{"line", line_or_null(q.line)}, {"answer", q.done ? "done" : "not done"}});
  for (const auto& c : s.faults) j["faults"].push_back(choice_json(c));
  j["device_steps"] = s.device_steps;
  if (s.not_listed > 0) j["not_listed"] = s.not_listed;
  return j;
}

Json coverage_json(const Coverage& c) {
  Json j;
  j["strategy"] = to_string(c.how);
  j["seed"] = c.seed;
  j["schedules"] = c.explored;
  if (c.executions) j["executions"] = c.explored;
  if (c.shard) {
    Json runs = Json::array();
    for (const auto& r : c.shard->first_runs) runs.push_back({{"run", r.run}, {"schedule", r.schedule}});
    Json policy = Json::array();
    for (const auto& [name, value] : c.shard->policy_overrides) policy.push_back({name, value});
    j["shard"] = {{"index", c.shard->index},
                  {"count", c.shard->count},
                  {"options",
                   {{"schedules", c.shard->max_schedules},
                    {"depth", c.shard->pct_depth},
                    {"faults", c.shard->faults},
                    {"policy", policy}}},
                  {"first_runs", runs}};
  }
  if (c.pct)
    j["pct"] = {{"depth", c.pct->depth},       {"agents", c.pct->agents},
                {"steps", c.pct->steps},       {"runs_at_depth", c.pct->runs_at_depth},
                {"per_run", c.pct->per_run()}, {"missed", c.pct->missed()}};
  j["exhaustive"] = c.exhaustive;
  j["bound"] = c.bound ? Json(*c.bound) : Json(nullptr);
  j["unexplored"] = choices_json(c.unexplored);
  if (c.dfs)
    j["dfs"] = {{"choices_per_run", c.dfs->choices_per_run}, {"deviations_covered", c.dfs->deviations_covered}};
  if (c.streamed)
    j["streamed"] = {
        {"statements", c.streamed->statements}, {"ops", c.streamed->ops}, {"held_ops", c.streamed->held_ops}};
  j["to_finish"] = Json::array();
  for (const auto& s : c.to_finish) j["to_finish"].push_back({{"command", s.command}, {"why", s.why}});
  return j;
}

/// `j` on one line. Invalid UTF-8 in a trace's text becomes U+FFFD instead
/// of failing the report.
std::string compact(const Json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

std::string dump(const Json& j) { return compact(j) + "\n"; }

}  // namespace

std::string report_json(const Report& r) {
  // Written a part at a time, each finding and group as its own small
  // document: one document of the whole report held every finding's JSON
  // tree at once (4.5 GB to write the 530 MB report of a 200,000-iteration
  // racy loop). The bytes are the one document's, keys in the same order.
  std::string out = "{";
  const auto name = [&](std::string_view key) {  // keys are plain ASCII: no escape needed
    if (out.size() > 1) out += ',';
    out += '"';
    out += key;
    out += "\":";
  };
  const auto field = [&](std::string_view key, const Json& value) {
    name(key);
    out += compact(value);
  };
  const auto array_field = [&](std::string_view key, std::size_t n, const auto& element_of) {
    name(key);
    out += '[';
    for (std::size_t i = 0; i < n; ++i) {
      if (i > 0) out += ',';
      out += compact(element_of(i));
    }
    out += ']';
  };
  field("tool", "streamcheck");
  field("schema_version", kReportSchemaVersion);
  field("file", r.file);
  field("verdict", to_string(r.verdict()));
  field("coverage", coverage_json(r.coverage));
  field("policy", r.policy.describe());
  // Each schedule once, its findings naming it by index: the findings a
  // run showed first share its schedule, and a loop with a bug in each
  // iteration has thousands, each of which repeated a schedule as long as
  // the run (37 MB for `explore --json` of 2,000 iterations, quadratic).
  Json texts = Json::array();
  std::unordered_map<const std::string*, std::size_t> index_of_copy;  // the findings sharing one copy
  std::unordered_map<std::string_view, std::size_t> index_of_text;    // equal schedules of different runs
  array_field("findings", r.findings.size(), [&](std::size_t i) {
    const ReportFinding& f = r.findings[i];
    Json schedule;  // null: a streamed check's
    if (!f.schedule.empty()) {
      const std::string& text = f.schedule.str();
      auto copy = index_of_copy.find(&text);
      if (copy == index_of_copy.end()) {
        const auto [same, fresh] = index_of_text.try_emplace(text, texts.size());
        if (fresh) texts.push_back(text);
        copy = index_of_copy.emplace(&text, same->second).first;
      }
      schedule = copy->second;
    }
    return finding_json(f, std::move(schedule));
  });
  field("schedule_texts", texts);
  array_field("groups", r.groups.size(), [&](std::size_t k) {
    const FindingGroup& g = r.groups[k];
    return Json{{"cause", describe_cause(r, g)},
                {"count", g.findings.size()},
                {"findings", g.findings},
                {"fix", describe_fix(r, g)},
                {"edits", edits_json(g.edits)}};
  });
  array_field("notes", r.notes.size(), [&](std::size_t i) { return note_json(r.notes[i]); });
  array_field("near_misses", r.near_misses.size(), [&](std::size_t i) { return near_miss_json(r.near_misses[i]); });
  if (r.redundant)
    array_field("redundant", r.redundant->size(), [&](std::size_t i) { return redundant_json((*r.redundant)[i]); });
  if (const auto& g = r.gpu)
    field("gpu", {{"runs", g->runs},
                  {"runs_with_mismatches", g->runs_with_mismatches},
                  {"mismatching_words", g->mismatching_words},
                  {"runs_with_wrong_final_contents", g->runs_with_wrong_final_contents},
                  {"wrong_final_words", g->wrong_final_words}});
  out += "}\n";
  return out;
}

std::string input_error_json(const InputError& e) {
  Json j;
  j["tool"] = "streamcheck";
  j["schema_version"] = kReportSchemaVersion;
  j["verdict"] = "input error";
  Json err{{"kind", to_string(e.kind)}};
  err["file"] = e.file.empty() ? Json(nullptr) : Json(e.file);
  err["line"] = line_or_null(e.line);
  err["col"] = e.line > 0 && e.col > 0 ? Json(e.col) : Json(nullptr);
  err["message"] = e.message;
  j["error"] = std::move(err);
  return dump(j);
}

}  // namespace streamcheck::tools
