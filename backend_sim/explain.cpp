#include "backend_sim/explain.h"

#include <fmt/core.h>

namespace streamcheck::sim {

std::string_view to_string(OpKind k) {
  switch (k) {
    case OpKind::Alloc:
      return "alloc";
    case OpKind::Free:
      return "free";
    case OpKind::Kernel:
      return "kernel";
  }
  return "?";
}

std::string ref_name(const DeviceModel& model, OpRef op) {
  return fmt::format("{}#{}", model.stream_name(op.stream), op.index);
}

std::string describe(const DeviceModel& model, OpRef op) {
  return fmt::format("{} {} \"{}\"", ref_name(model, op), to_string(model.op_kind(op)), model.op_label(op));
}

std::string host_action(const DeviceModel& model, const LogEntry& entry) {
  switch (entry.kind()) {
    case LogEntry::Kind::Enqueue:
      return "enqueue " + describe(model, entry.op());
    case LogEntry::Kind::Record:
      return fmt::format("record {} on {}", model.event_name(entry.event()), model.stream_name(entry.stream));
    case LogEntry::Kind::Wait:
      return fmt::format("{} waits for {}", model.stream_name(entry.stream), model.event_name(entry.event()));
    case LogEntry::Kind::SyncStream:
      return "synchronize " + model.stream_name(entry.stream);
    case LogEntry::Kind::SyncEvent:
      return "synchronize " + model.event_name(entry.event());
    case LogEntry::Kind::SyncDevice:
      return "synchronize device";
    case LogEntry::Kind::QueryDone:
      return fmt::format("query {} -> done", model.event_name(entry.event()));
    case LogEntry::Kind::QueryNotDone:
      return fmt::format("query {} -> not done", model.event_name(entry.event()));
    case LogEntry::Kind::HostRelease:
      return "hand off to another host thread";
    case LogEntry::Kind::HostAcquire:
      return fmt::format("take over from host{}", model.log().at(*entry.released_by()).host().value);
  }
  return "?";
}

std::string describe(const std::vector<ByteRange>& ranges) {
  std::string out;
  for (const ByteRange& r : ranges) out += fmt::format("{}[{:#x}, {:#x})", out.empty() ? "" : ", ", r.lo, r.hi);
  return out;
}

std::string finding_label(const Finding& f) {
  std::string s(to_string(f.kind));
  if (f.kind == FindingKind::UseAfterFree) s += f.definite ? " (definite)" : " (racing)";
  return s;
}

std::string suggested_fix(const DeviceModel& model, const Finding& f) {
  if (f.kind == FindingKind::Leak) return "deallocate the block before the program ends";
  if (!f.second) return {};
  const OpRef p = f.first;
  const OpRef q = *f.second;
  if (f.definite)
    return fmt::format(
        "the use is ordered after the free: keep the allocation alive until {} has been enqueued, or "
        "use a live allocation",
        describe(model, q));
  return fmt::format("record an event on {} after {}; make {} wait on it before {}", model.stream_name(p.stream),
                     describe(model, p), model.stream_name(q.stream), describe(model, q));
}

std::string format(const DeviceModel& model, const Finding& f) {
  std::string what;
  if (f.kind == FindingKind::Leak) {
    what = fmt::format(" (warning): {} is never freed; bytes {}", describe(model, f.first), describe(f.bytes));
  } else {
    const std::string why = f.definite ? std::string("the free is ordered before the use")
                                       : fmt::format("neither is ordered before the other (missing edge {} -> {})",
                                                     ref_name(model, f.first), ref_name(model, *f.second));
    what = fmt::format(": {} and {} touch bytes {} ({} bytes); {}", describe(model, f.first),
                       describe(model, *f.second), describe(f.bytes), total_size(f.bytes), why);
  }
  return fmt::format("{}{}\n  fix: {}", finding_label(f), what, suggested_fix(model, f));
}

std::string describe(const DeviceModel& model, const ValueMismatch& m) {
  return fmt::format("{} read the value of op stamp {} where the last write ordered before it has stamp {}",
                     describe(model, m.read), m.observed, m.expected);
}

}  // namespace streamcheck::sim
