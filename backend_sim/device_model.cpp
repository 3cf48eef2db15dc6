#include "backend_sim/device_model.h"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

#include "backend_sim/explain.h"

namespace streamcheck::sim {

namespace {
constexpr std::uint64_t kPoolBase = std::uint64_t{1} << 20;  // addresses never start at 0
constexpr std::uint64_t kGranule = 256;
}  // namespace

std::string_view to_string(ReuseKind k) {
  switch (k) {
    case ReuseKind::Fresh:
      return "fresh";
    case ReuseKind::SameStream:
      return "same-stream";
    case ReuseKind::HostSynced:
      return "host-synced";
    case ReuseKind::EventDependency:
      return "event-dependency";
    case ReuseKind::Opportunistic:
      return "opportunistic";
    case ReuseKind::InternalDependency:
      return "internal-dependency";
  }
  return "?";
}

std::string_view to_string(FindingKind k) {
  switch (k) {
    case FindingKind::DataRace:
      return "data race";
    case FindingKind::UseBeforeReady:
      return "use before ready";
    case FindingKind::UseAfterFree:
      return "use after free";
    case FindingKind::ReuseRace:
      return "reuse race";
    case FindingKind::Leak:
      return "leak";
  }
  return "?";
}

DeviceModel::DeviceModel(Chooser& chooser, PoolPolicy policy) : chooser_(chooser), policy_(policy), bump_(kPoolBase) {
  create_host_thread();
}

StreamIndex DeviceModel::create_stream(std::string name) {
  const StreamIndex id{static_cast<std::uint32_t>(streams_.size())};
  Stream st;
  st.name = name.empty() ? fmt::format("s{}", id.value) : std::move(name);
  st.agent = next_agent_++;
  streams_.push_back(std::move(st));
  return id;
}

const std::string& DeviceModel::stream_name(StreamIndex s) const {
  check_stream(s);
  return streams_[s.value].name;
}

EventIndex DeviceModel::create_event() {
  events_.push_back(Event{});
  ++live_events_;
  return EventIndex{static_cast<std::uint32_t>(events_.size() - 1)};
}

void DeviceModel::destroy_event(EventIndex e) {
  check_event(e);
  if (!events_[e.value].live) throw std::logic_error(fmt::format("DeviceModel: event {} destroyed twice", e.value));
  events_[e.value].live = false;
  --live_events_;
}

HostThread DeviceModel::create_host_thread() {
  VectorClock start = hosts_.empty() ? VectorClock{} : host_vc();  // R6: creation orders the child
  hosts_.push_back(std::move(start));
  host_agents_.push_back(next_agent_++);
  return HostThread{static_cast<std::uint32_t>(hosts_.size() - 1)};
}

void DeviceModel::set_host_thread(HostThread h) {
  if (h.value >= hosts_.size()) throw std::out_of_range(fmt::format("DeviceModel: unknown host thread {}", h.value));
  current_host_ = h;
}

void DeviceModel::check_stream(StreamIndex s) const {
  if (s.value >= streams_.size())
    throw std::out_of_range(fmt::format("DeviceModel: unknown stream {} ({} created)", s.value, streams_.size()));
}

void DeviceModel::check_event(EventIndex e) const {
  if (e.value >= events_.size()) throw std::out_of_range(fmt::format("DeviceModel: unknown event {}", e.value));
}

OpRef DeviceModel::enqueue(StreamIndex stream, Op o) {
  Stream& st = streams_[stream.value];
  host_tick();
  st.vc.join(host_vc());  // R5: the host's past is ordered before this op
  st.vc.tick(st.agent);   // R1: the own component counts this stream's ops
  o.vc = st.vc;
  o.stamp = next_stamp_++;
  const OpRef ref{stream, static_cast<std::uint32_t>(st.ops.size())};
  LogEntry entry{LogEntry::Kind::Enqueue, current_host_, stream, {}, ref, o.pool_dep};
  st.ops.push_back(std::move(o));
  log_.push_back(entry);
  return ref;
}

void DeviceModel::record(EventIndex event, StreamIndex stream) {
  check_event(event);
  check_stream(stream);
  if (!events_[event.value].live)
    throw std::logic_error(fmt::format("DeviceModel: record on destroyed event {}", event.value));
  host_tick();
  Stream& st = streams_[stream.value];
  st.vc.join(host_vc());
  events_[event.value].capture = st.vc;  // R2: the capture is replaced, never merged
  log_.push_back(LogEntry{LogEntry::Kind::Record, current_host_, stream, event, {}, {}});
}

void DeviceModel::wait(StreamIndex stream, EventIndex event) {
  check_event(event);
  check_stream(stream);
  if (!events_[event.value].live)
    throw std::logic_error(fmt::format("DeviceModel: wait on destroyed event {}", event.value));
  host_tick();
  Stream& st = streams_[stream.value];
  st.vc.join(host_vc());
  // R3: later work on the stream is ordered after the capture as of now; a
  // never-recorded event orders nothing.
  if (events_[event.value].capture) st.vc.join(*events_[event.value].capture);
  log_.push_back(LogEntry{LogEntry::Kind::Wait, current_host_, stream, event, {}, {}});
}

AllocationIndex DeviceModel::allocation_at(std::uint64_t ptr) const {
  for (std::size_t i = allocations_.size(); i-- > 0;) {
    const auto& a = allocations_[i];
    if (a.range.lo <= ptr && ptr < a.range.hi) return AllocationIndex{static_cast<std::uint32_t>(i)};
  }
  throw std::invalid_argument(fmt::format("DeviceModel: address {:#x} is not inside any allocation", ptr));
}

OpRef DeviceModel::launch(StreamIndex stream, const std::vector<KernelAccess>& accesses, std::string label) {
  check_stream(stream);
  Op o{OpKind::Kernel, {}, std::move(label), {}, std::nullopt, 0};
  for (const auto& a : accesses) {
    if (a.bytes == 0)
      throw std::invalid_argument(fmt::format("DeviceModel::launch: zero-byte access in '{}'", o.label));
    const AllocationIndex alloc = a.allocation ? AllocationIndex{*a.allocation} : allocation_at(a.ptr);
    if (alloc.value >= allocations_.size())
      throw std::invalid_argument(fmt::format("DeviceModel::launch: unknown allocation {}", alloc.value));
    o.accesses.push_back(OpAccess{ByteRange{a.ptr, a.ptr + a.bytes}, a.access, alloc, {}});
  }
  const OpRef ref = enqueue(stream, std::move(o));
  for (auto& acc : op(ref).accesses) check_access(ref, acc);
  return ref;
}

bool DeviceModel::happens_before(OpRef a, OpRef b) const {
  if (a == b) return false;
  const Op& ob = op(b);
  (void)op(a);  // validates a
  return ob.vc.covers(agent_of_stream(a.stream), a.index + 1);
}

bool DeviceModel::host_after(OpRef a) const {
  (void)op(a);
  return host_vc().covers(agent_of_stream(a.stream), a.index + 1);
}

bool DeviceModel::completed(OpRef a) const {
  (void)op(a);
  return streams_[a.stream.value].completed > a.index;
}

bool DeviceModel::ordered(const ShadowAccess& p, OpRef q, AllocationIndex q_allocation) const {
  if (p.op == q || happens_before(p.op, q)) return true;
  // R7: the pool guarantees that a reused range is not handed out before
  // the previous occupant's free (and everything ordered before it) is done.
  const Allocation& a = allocations_[q_allocation.value];
  if (p.allocation != q_allocation && a.fence) return p.op == *a.fence || happens_before(p.op, *a.fence);
  return false;
}

FindingKind DeviceModel::classify(const ShadowAccess& p, OpRef q, AllocationIndex q_allocation) const {
  if (p.allocation != q_allocation) return FindingKind::ReuseRace;
  const OpKind pk = op(p.op).kind;
  const OpKind qk = op(q).kind;
  if (pk == OpKind::Alloc) return FindingKind::UseBeforeReady;
  if (pk == OpKind::Free || qk == OpKind::Free) return FindingKind::UseAfterFree;
  return FindingKind::DataRace;
}

void DeviceModel::report(FindingKind kind, OpRef first, std::optional<OpRef> second, ByteRange bytes, bool definite) {
  for (auto& f : findings_) {
    if (f.kind == kind && f.first == first && f.second == second && f.definite == definite) {
      f.bytes.lo = std::min(f.bytes.lo, bytes.lo);
      f.bytes.hi = std::max(f.bytes.hi, bytes.hi);
      return;
    }
  }
  findings_.push_back(Finding{kind, first, second, bytes, definite});
}

void DeviceModel::check_access(OpRef qref, OpAccess& acc) {
  const Op& q = op(qref);
  const Allocation& target = allocations_[acc.allocation.value];
  if (q.kind == OpKind::Kernel && target.free_op && happens_before(*target.free_op, qref))
    report(FindingKind::UseAfterFree, *target.free_op, qref, acc.range, true);

  shadow_.for_range(acc.range.lo, acc.range.hi, Shadow{}, [&](std::uint64_t lo, std::uint64_t hi, Shadow& sh) {
    const ByteRange seg{lo, hi};
    if (sh.last_write) {
      if (ordered(*sh.last_write, qref, acc.allocation)) {
        if (reads(acc.access)) acc.expected.emplace_back(seg, op(sh.last_write->op).stamp);
      } else if (sh.last_write->op != qref) {
        report(classify(*sh.last_write, qref, acc.allocation), sh.last_write->op, qref, seg, false);
      }
    }
    if (writes(acc.access)) {
      for (const auto& r : sh.reads)
        if (!ordered(r, qref, acc.allocation)) report(classify(r, qref, acc.allocation), r.op, qref, seg, false);
    }
    // Reads ordered before q are subsumed by q; racing reads stay so that
    // later ops of a reused range are checked against them too.
    std::erase_if(sh.reads, [&](const ShadowAccess& r) { return ordered(r, qref, acc.allocation); });
    if (writes(acc.access))
      sh.last_write = ShadowAccess{qref, acc.allocation};
    else
      sh.reads.push_back(ShadowAccess{qref, acc.allocation});
    if (q.kind == OpKind::Alloc) {
      sh.allocation = acc.allocation;
      sh.freed = false;
    } else if (q.kind == OpKind::Free) {
      sh.freed = true;
    }
  });
}

std::optional<AllocResult> DeviceModel::alloc(StreamIndex stream, std::uint64_t bytes, std::string label) {
  check_stream(stream);
  if (bytes == 0) throw std::invalid_argument("DeviceModel::alloc: zero bytes");
  const std::uint64_t rounded = std::max(kGranule, (bytes + kGranule - 1) / kGranule * kGranule);
  VectorClock at = streams_[stream.value].vc;
  at.join(host_vc());

  struct Candidate {
    std::size_t index;
    ReuseKind kind;
  };
  std::vector<Candidate> candidates;
  for (std::size_t i = 0; i < free_ranges_.size(); ++i) {
    const FreeRange& fr = free_ranges_[i];
    if (fr.range.size() < rounded) continue;
    const OpRef f = fr.free_op;
    // R7: which reuses the pool may make, in order of preference.
    if (f.stream == stream)
      candidates.push_back({i, ReuseKind::SameStream});
    else if (host_after(f))
      candidates.push_back({i, ReuseKind::HostSynced});
    else if (policy_.follow_event_dependencies && at.covers(agent_of_stream(f.stream), f.index + 1))
      candidates.push_back({i, ReuseKind::EventDependency});
    else if (policy_.opportunistic && completed(f))
      candidates.push_back({i, ReuseKind::Opportunistic});
    else if (policy_.internal_dependencies)
      candidates.push_back({i, ReuseKind::InternalDependency});
  }
  std::optional<std::size_t> released_fit;
  for (std::size_t i = 0; i < released_.size() && !released_fit; ++i)
    if (released_[i].size() >= rounded) released_fit = i;
  const bool fresh = released_fit || bump_ - kPoolBase + rounded <= policy_.capacity;
  const std::uint32_t options = static_cast<std::uint32_t>(candidates.size()) + (fresh ? 1 : 0);
  if (options == 0) return std::nullopt;  // out of memory
  const std::uint32_t pick = chooser_.choose(ChoiceKind::PoolRange, options);

  Allocation a{};
  a.bytes = bytes;
  a.stream = stream;
  std::optional<OpRef> pool_dep;
  if (fresh && pick == 0) {
    a.reuse = ReuseKind::Fresh;
    if (released_fit) {
      ByteRange& r = released_[*released_fit];
      a.range = ByteRange{r.lo, r.lo + rounded};
      r.lo += rounded;
      if (r.lo == r.hi) released_.erase(released_.begin() + static_cast<std::ptrdiff_t>(*released_fit));
    } else {
      a.range = ByteRange{bump_, bump_ + rounded};
      bump_ += rounded;
    }
  } else {
    const Candidate c = candidates[pick - (fresh ? 1 : 0)];
    FreeRange& fr = free_ranges_[c.index];
    a.range = ByteRange{fr.range.lo, fr.range.lo + rounded};
    a.fence = fr.free_op;
    a.reuse = c.kind;
    if (c.kind == ReuseKind::InternalDependency) pool_dep = fr.free_op;
    fr.range.lo += rounded;
    if (fr.range.lo == fr.range.hi) free_ranges_.erase(free_ranges_.begin() + static_cast<std::ptrdiff_t>(c.index));
  }
  const AllocationIndex id{static_cast<std::uint32_t>(allocations_.size())};
  allocations_.push_back(a);
  Op o{OpKind::Alloc, {}, std::move(label), {}, pool_dep, 0};
  o.accesses.push_back(OpAccess{a.range, Access::Write, id, {}});
  const OpRef ref = enqueue(stream, std::move(o));
  allocations_[id.value].alloc_op = ref;
  check_access(ref, op(ref).accesses.front());
  return AllocResult{a.range.lo, id, a.reuse};
}

bool DeviceModel::free(StreamIndex stream, std::uint64_t ptr, std::string label) {
  check_stream(stream);
  std::optional<AllocationIndex> id;
  for (std::size_t i = allocations_.size(); i-- > 0 && !id;)
    if (allocations_[i].range.lo == ptr && !allocations_[i].free_op)
      id = AllocationIndex{static_cast<std::uint32_t>(i)};
  if (!id) return false;
  Op o{OpKind::Free, {}, std::move(label), {}, std::nullopt, 0};
  o.accesses.push_back(OpAccess{allocations_[id->value].range, Access::Write, *id, {}});
  const OpRef ref = enqueue(stream, std::move(o));
  allocations_[id->value].free_op = ref;
  check_access(ref, op(ref).accesses.front());
  free_ranges_.push_back(FreeRange{allocations_[id->value].range, ref});
  return true;
}

bool DeviceModel::ready(OpRef r) const {
  const Stream& st = streams_[r.stream.value];
  if (r.index != st.completed) return false;
  const Op& o = st.ops[r.index];
  for (std::uint32_t u = 0; u < streams_.size(); ++u)
    if (u != r.stream.value && streams_[u].completed < o.vc.get(streams_[u].agent)) return false;
  return !o.pool_dep || completed(*o.pool_dep);
}

void DeviceModel::execute(OpRef r) {
  if (!ready(r))
    throw std::logic_error(
        fmt::format("DeviceModel: internal error: executing {} before its dependencies", describe(*this, r)));
  Op& o = op(r);
  for (const auto& acc : o.accesses) {
    if (!reads(acc.access)) continue;
    for (const auto& expected : acc.expected) {
      const std::uint64_t stamp = expected.second;  // a named copy: clang 14 cannot capture a structured binding
      memory_.for_range(expected.first.lo, expected.first.hi, 0,
                        [&](std::uint64_t lo, std::uint64_t hi, std::uint64_t& v) {
                          if (v != stamp) mismatches_.push_back(ValueMismatch{r, ByteRange{lo, hi}, stamp, v});
                        });
    }
  }
  for (const auto& acc : o.accesses)
    if (writes(acc.access))
      memory_.for_range(acc.range.lo, acc.range.hi, 0,
                        [&](std::uint64_t, std::uint64_t, std::uint64_t& v) { v = o.stamp; });
  o.done = true;
  o.completion = next_completion_++;
  ++streams_[r.stream.value].completed;
}

void DeviceModel::complete_through(StreamIndex stream, std::uint32_t count) {
  while (streams_[stream.value].completed < count) {
    const OpRef r{stream, streams_[stream.value].completed};
    const Op& o = op(r);
    for (std::uint32_t u = 0; u < streams_.size(); ++u) {
      const std::uint32_t need = o.vc.get(streams_[u].agent);
      if (u != stream.value && streams_[u].completed < need) complete_through(StreamIndex{u}, need);
    }
    if (o.pool_dep && !completed(*o.pool_dep)) complete_through(o.pool_dep->stream, o.pool_dep->index + 1);
    execute(r);
  }
}

void DeviceModel::complete_covered(const VectorClock& vc) {
  for (std::uint32_t s = 0; s < streams_.size(); ++s) complete_through(StreamIndex{s}, vc.get(streams_[s].agent));
}

void DeviceModel::host_joins(const VectorClock& vc) { host_vc().join(vc); }

void DeviceModel::host_tick() { host_vc().tick(host_agents_[current_host_.value]); }

void DeviceModel::release_idle_ranges() {
  std::uint64_t idle = 0;
  for (const auto& fr : free_ranges_)
    if (completed(fr.free_op) && host_after(fr.free_op)) idle += fr.range.size();
  for (std::size_t i = 0; i < free_ranges_.size() && idle > policy_.release_threshold;) {
    const FreeRange& fr = free_ranges_[i];
    if (completed(fr.free_op) && host_after(fr.free_op)) {
      idle -= fr.range.size();
      released_.push_back(fr.range);
      free_ranges_.erase(free_ranges_.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
}

void DeviceModel::sync_stream(StreamIndex stream) {
  check_stream(stream);
  host_tick();
  const VectorClock target = streams_[stream.value].vc;
  complete_covered(target);
  host_joins(target);  // R4
  release_idle_ranges();
  log_.push_back(LogEntry{LogEntry::Kind::SyncStream, current_host_, stream, {}, {}, {}});
}

void DeviceModel::sync_event(EventIndex event) {
  check_event(event);
  host_tick();
  if (events_[event.value].capture) {
    const VectorClock target = *events_[event.value].capture;
    complete_covered(target);
    host_joins(target);  // R4
    release_idle_ranges();
  }
  log_.push_back(LogEntry{LogEntry::Kind::SyncEvent, current_host_, {}, event, {}, {}});
}

void DeviceModel::sync_device() {
  host_tick();
  for (std::uint32_t s = 0; s < streams_.size(); ++s) {
    const VectorClock target = streams_[s].vc;
    complete_covered(target);
    host_joins(target);  // R4
  }
  release_idle_ranges();
  log_.push_back(LogEntry{LogEntry::Kind::SyncDevice, current_host_, {}, {}, {}, {}});
}

bool DeviceModel::query_event(EventIndex event) {
  check_event(event);
  host_tick();
  bool done = true;
  if (events_[event.value].capture) {
    const VectorClock& cap = *events_[event.value].capture;
    for (const auto& st : streams_)
      if (st.completed < cap.get(st.agent)) done = false;
    if (done) host_joins(cap);  // R4: only a "done" answer orders the host
  }
  log_.push_back(
      LogEntry{done ? LogEntry::Kind::QueryDone : LogEntry::Kind::QueryNotDone, current_host_, {}, event, {}, {}});
  return done;
}

void DeviceModel::device_steps() {
  std::vector<std::uint32_t> heads;
  for (;;) {
    heads.clear();
    for (std::uint32_t s = 0; s < streams_.size(); ++s)
      if (streams_[s].completed < streams_[s].ops.size() && ready(OpRef{StreamIndex{s}, streams_[s].completed}))
        heads.push_back(s);
    if (heads.empty()) return;
    const std::uint32_t c = chooser_.choose(ChoiceKind::DeviceStep, static_cast<std::uint32_t>(heads.size()) + 1);
    if (c == 0) return;
    execute(OpRef{StreamIndex{heads[c - 1]}, streams_[heads[c - 1]].completed});
  }
}

void DeviceModel::finish() {
  if (finished_) return;
  std::vector<std::uint32_t> heads;
  for (;;) {
    heads.clear();
    bool pending = false;
    for (std::uint32_t s = 0; s < streams_.size(); ++s) {
      if (streams_[s].completed >= streams_[s].ops.size()) continue;
      pending = true;
      if (ready(OpRef{StreamIndex{s}, streams_[s].completed})) heads.push_back(s);
    }
    if (!pending) break;
    if (heads.empty()) throw std::logic_error("DeviceModel: internal error: pending work but no stream can run");
    const std::uint32_t c = chooser_.choose(ChoiceKind::DeviceStep, static_cast<std::uint32_t>(heads.size()));
    execute(OpRef{StreamIndex{heads[c]}, streams_[heads[c]].completed});
  }
  for (const auto& a : allocations_)
    if (!a.free_op)
      report(FindingKind::Leak, a.alloc_op, std::nullopt, ByteRange{a.range.lo, a.range.lo + a.bytes}, false);
  finished_ = true;
}

std::uint32_t DeviceModel::op_count(StreamIndex stream) const {
  check_stream(stream);
  return static_cast<std::uint32_t>(streams_[stream.value].ops.size());
}

OpKind DeviceModel::op_kind(OpRef r) const { return op(r).kind; }
std::optional<std::uint64_t> DeviceModel::completion_index(OpRef r) const { return op(r).completion; }
const std::string& DeviceModel::op_label(OpRef r) const { return op(r).label; }

ReuseKind DeviceModel::allocation_reuse(AllocationIndex allocation) const {
  return allocations_.at(allocation.value).reuse;
}
ByteRange DeviceModel::allocation_range(AllocationIndex allocation) const {
  return allocations_.at(allocation.value).range;
}

}  // namespace streamcheck::sim
