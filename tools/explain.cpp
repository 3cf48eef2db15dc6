#include "tools/explain.h"

#include <fmt/format.h>

#include "backend_sim/explain.h"

namespace streamcheck::tools {

std::string op_name(const ReportOp& op) { return fmt::format("{}#{}", op.stream, op.ref.index); }

std::string line_ref(const ReportOp& op) {
  if (op.origin) return fmt::format("line {} ({})", op.origin->line, op.origin->text);
  return op.description;
}

std::string describe(const ReportOp& op) {
  if (op.origin) return fmt::format("{} [{}]", line_ref(op), op_name(op));
  return op.description;
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

std::string describe_fix(const ReportFinding& f) {
  switch (f.fix) {
    case Fix::FreeTheBuffer:
      return "free the buffer (free/deallocate) once its last use is enqueued";
    case Fix::KeepAliveUntilUse:
      return fmt::format("keep the buffer alive until after {}, or use a live buffer", line_ref(*f.second));
    case Fix::RecordEventAndWait:
      return fmt::format("record an event on {} after {}; make {} wait on it before {}", f.first.stream,
                         line_ref(f.first), f.second->stream, line_ref(*f.second));
  }
  return {};
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
  }
  return {};
}

std::string describe(const Note& note) { return fmt::format("line {}: {}", note.line, note.message); }

std::string host_action_short(const sim::DeviceModel& model, const sim::LogEntry& entry) {
  using Kind = sim::LogEntry::Kind;
  switch (entry.kind) {
    case Kind::SyncStream:
      return "sync " + model.stream_name(entry.stream);
    case Kind::SyncEvent:
      return "sync " + sim::event_name(entry.event);
    case Kind::SyncDevice:
      return "sync device";
    case Kind::QueryDone:
      return fmt::format("query {}: done", sim::event_name(entry.event));
    case Kind::QueryNotDone:
      return fmt::format("query {}: busy", sim::event_name(entry.event));
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
