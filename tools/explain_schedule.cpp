#include "tools/explain_schedule.h"

#include <fmt/format.h>

#include <iterator>
#include <optional>
#include <vector>

#include "backend_sim/device_model.h"
#include "tools/explain.h"
#include "tools/trace_check.h"

namespace streamcheck::tools {

namespace {

/// One choice as it was asked: the device state it needs read there, the
/// rest is read from the finished run.
struct Step {
  sim::Choice choice;
  int line = 0;
  /// DeviceStep: the stream head the answer completed; nullopt: none (the
  /// host went on).
  std::optional<sim::OpRef> completes;
  /// PoolRange: the allocation the answer placed.
  std::optional<sim::AllocationIndex> allocation;
};

/// The stream heads that may execute now, in the order DeviceModel offers
/// them (device_steps: answer k > 0 completes heads[k - 1]; finish: answer k
/// completes heads[k]).
std::vector<sim::StreamIndex> ready_heads(const sim::DeviceModel& model) {
  std::vector<sim::StreamIndex> heads;
  const sim::HbState& hb = model.hb();
  for (std::uint32_t s = 0; s < hb.stream_count(); ++s) {
    const sim::StreamIndex stream{s};
    const std::uint32_t next = hb.executed_count(stream);
    if (next < hb.op_count(stream) && hb.ready(sim::OpRef{stream, next})) heads.push_back(stream);
  }
  return heads;
}

Step step_at(const sim::DeviceModel& model, const sim::Choice& c, int line) {
  Step s{c, line, std::nullopt, std::nullopt};
  if (c.kind == sim::ChoiceKind::DeviceStep) {
    const auto heads = ready_heads(model);
    const bool host_may_go_on = c.options == heads.size() + 1;  // device_steps; else finish
    if (host_may_go_on && c.taken == 0) return s;
    const sim::StreamIndex stream = heads.at(host_may_go_on ? c.taken - 1 : c.taken);
    s.completes = sim::OpRef{stream, model.hb().executed_count(stream)};
  } else if (c.kind == sim::ChoiceKind::PoolRange) {
    s.allocation = sim::AllocationIndex{model.pool().count()};
  }
  return s;
}

std::string where(const Trace& trace, int line) {
  if (line == 0) return "after the last line, while the device drains";
  for (const auto& st : trace.statements)
    if (source(st).line == line) return fmt::format("line {} ({})", line, source(st).text);
  return fmt::format("line {}", line);
}

std::string what_it_did(const Execution& run, const Step& s) {
  const auto op = [&](sim::OpRef r) { return describe(report_op(run, r)); };
  switch (s.choice.kind) {
    case sim::ChoiceKind::DeviceStep:
      if (!s.completes) return "no stream head completes; the host goes on";
      return fmt::format("{} completes {}", run.model().stream_name(s.completes->stream), op(*s.completes));
    case sim::ChoiceKind::PoolRange: {
      const sim::Allocation& a = run.model().pool().allocation(*s.allocation);
      if (a.reuse == sim::ReuseKind::Fresh) return fmt::format("the pool gives {} fresh memory", op(a.alloc_op));
      return fmt::format("the pool gives {} the range freed by {} (reuse: {})", op(a.alloc_op), op(*a.fence),
                         sim::to_string(a.reuse));
    }
    case sim::ChoiceKind::Fault:
      return s.choice.taken == 1 ? "a fault is injected: this resource backend call fails, and the program retries it"
                                 : "no fault";
    case sim::ChoiceKind::Client:
      return "a client choice";
    case sim::ChoiceKind::QueryAnswer:
      return s.choice.taken == 1 ? "the query finds its event's work done (that work runs first)"
                                 : "the query finds its event's work not done yet";
    case sim::ChoiceKind::HostStep:
      return s.choice.taken == 0 ? "the running host thread takes the next step"
                                 : fmt::format("host thread option {} takes the next step", s.choice.taken);
  }
  return {};
}

}  // namespace

std::string explain_schedule(const Trace& trace, const ScheduleToReplay& replay) {
  const TraceRunOptions run_options = run_options_of(trace, replay.options);
  sim::ReplayChooser chooser(replay.schedule.runs, sim::ReplayChooser::PastTheEnd::Refuse);
  const sim::DeviceModel* model = nullptr;
  std::vector<Step> steps;
  chooser.observe([&](std::uint64_t, const sim::Choice& c) { steps.push_back(step_at(*model, c, chooser.line())); });
  const Execution run =
      replay_on_simulator(trace, chooser, run_options, [&](const sim::DeviceModel& m) { model = &m; });

  std::string out;
  auto line = std::back_inserter(out);
  fmt::format_to(line, "streamcheck explain: {}: {} choices; faults {}; pool {}\n", trace.file, steps.size(),
                 run_options.faults ? "on" : "off", run_options.policy.describe());
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const Step& s = steps[k];
    fmt::format_to(line, "choice {}, {}: {}, {} options, answer {}: {}\n", k + 1, where(trace, s.line),
                   sim::to_string(s.choice.kind), s.choice.options, s.choice.taken, what_it_did(run, s));
  }
  return out;
}

}  // namespace streamcheck::tools
