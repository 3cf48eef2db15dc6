#include "tools/redundant.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <variant>

namespace streamcheck::tools {

namespace {

/// The names a wait or sync statement gives; nullopt for any other statement.
struct Named {
  std::string stream, event;
};

std::optional<Named> wait_or_sync(const Statement& st) {
  if (const auto* w = std::get_if<ast::Wait>(&st)) return Named{w->stream, w->event};
  if (const auto* s = std::get_if<ast::SyncStream>(&st)) return Named{s->stream, {}};
  if (const auto* s = std::get_if<ast::SyncEvent>(&st)) return Named{{}, s->event};
  if (std::holds_alternative<ast::SyncDevice>(st)) return Named{};
  return std::nullopt;
}

std::string line_and_text(const OpOrigin& o) { return fmt::format("line {} ({})", o.line, o.text); }

/// " through line 12 (wait e1 on s2) and line 10 (sync device)", or nothing.
std::string through(const RedundantCall& c) {
  std::string out;
  for (const auto& o : c.covered_by) out += (out.empty() ? " through " : " and ") + line_and_text(o);
  return out;
}

std::string record_ref(const RedundantCall& c) {
  return c.record ? fmt::format(" (line {}: {})", c.record->line, c.record->text) : "";
}

}  // namespace

std::vector<RedundantCall> redundant_calls(const Trace& trace, const Execution& run) {
  std::map<int, const Statement*> at_line;
  for (const auto& st : trace.statements) at_line[source(st).line] = &st;
  const auto& log = run.model().log();
  std::vector<RedundantCall> out;
  for (const sim::RedundantSync& r : sim::find_redundant_syncs(log, run.model().hb().stream_shapes())) {
    const auto call = run.log_origin(r.entry);
    if (!call) continue;
    const Statement& st = *at_line.at(call->line);
    // A graph's record or wait (R14a) is an edge of the graph, and a wait
    // there may be what makes a stream join the capture: removing it
    // changes the graph, not only its order.
    if (source(st).captured_by != 0) continue;
    const auto names = wait_or_sync(st);
    if (!names) continue;  // made inside another statement
    RedundantCall c;
    c.rule = r.rule;
    c.call = *call;
    c.same_stream = r.same_stream;
    c.stream = names->stream;
    c.event = names->event;
    for (const std::size_t e : r.covered_by)
      if (auto by = run.log_origin(e); by && std::none_of(c.covered_by.begin(), c.covered_by.end(),
                                                          [&](const OpOrigin& o) { return o.line == by->line; }))
        c.covered_by.push_back(*by);
    std::sort(c.covered_by.begin(), c.covered_by.end(),
              [](const OpOrigin& a, const OpOrigin& b) { return a.line < b.line; });
    if (r.record) c.record = run.log_origin(*r.record);
    out.push_back(std::move(c));
  }
  return out;
}

void RedundantInEveryRun::add_run(const std::vector<RedundantCall>& calls, const std::set<int>& executed) {
  std::set<int> noted;
  for (const RedundantCall& c : calls) {
    noted.insert(c.call.line);
    if (!refuted_.contains(c.call.line)) kept_.try_emplace(c.call.line, c);
  }
  for (const int line : executed)
    if (!noted.contains(line)) {
      refuted_.insert(line);
      kept_.erase(line);
    }
}

std::vector<RedundantCall> RedundantInEveryRun::calls() const {
  std::vector<RedundantCall> out;
  for (const auto& [line, call] : kept_) out.push_back(call);
  return out;
}

std::string redundant_label(const RedundantCall& c) {
  return c.rule == sim::OversyncRule::O1CoveredWait ? "redundant wait" : "redundant sync";
}

std::string describe_why(const RedundantCall& c) {
  if (c.rule == sim::OversyncRule::O1CoveredWait) {
    if (c.same_stream)
      return fmt::format("{} was recorded on {} itself{}: stream order already puts that work first", c.event, c.stream,
                         record_ref(c));
    return fmt::format("{} already waits for {}'s capture{}{}", c.stream, c.event, record_ref(c), through(c));
  }
  if (!c.stream.empty()) return fmt::format("the host already waits for all work on {}{}", c.stream, through(c));
  if (!c.event.empty())
    return fmt::format("the host already waits for {}'s capture{}{}", c.event, record_ref(c), through(c));
  return fmt::format("the host already waits for all work enqueued so far{}", through(c));
}

}  // namespace streamcheck::tools
