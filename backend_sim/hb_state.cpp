#include "backend_sim/hb_state.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace streamcheck::sim {

LogEntry LogEntry::host_acquire(HostThread host, std::size_t released_by) {
  if (released_by >= std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("HbState: a host release past the 2^32nd API call of a run; split the trace");
  return LogEntry(Kind::HostAcquire, host, {}, static_cast<std::uint32_t>(released_by));
}

HbState::HbState() { create_host_thread(); }

StreamIndex HbState::create_stream(std::string name, StreamKind kind, DeviceNumber device) {
  const StreamIndex id{static_cast<std::uint32_t>(streams_.size())};
  if (kind == StreamKind::LegacyDefault && !legacy_.emplace(device, id).second)
    throw std::logic_error(
        fmt::format("DeviceModel: a second legacy default stream on device {} (a device has one)", device));
  Stream st;
  st.name = name.empty() ? fmt::format("s{}", id.value) : std::move(name);
  st.kind = kind;
  st.device = device;
  st.agent = next_agent_++;
  streams_.push_back(std::move(st));
  return id;
}

void HbState::check_stream(StreamIndex s) const {
  if (s.value >= streams_.size())
    throw std::out_of_range(fmt::format("DeviceModel: unknown stream {} ({} created)", s.value, streams_.size()));
}

HbState::Stream& HbState::stream(StreamIndex s) {
  check_stream(s);
  return streams_[s.value];
}

const HbState::Stream& HbState::stream(StreamIndex s) const {
  check_stream(s);
  return streams_[s.value];
}

const std::string& HbState::stream_name(StreamIndex s) const { return stream(s).name; }

std::vector<StreamShape> HbState::stream_shapes() const {
  std::vector<StreamShape> shapes;
  shapes.reserve(streams_.size());
  for (const Stream& st : streams_) shapes.push_back(StreamShape{st.kind, st.device});
  return shapes;
}

void HbState::default_stream_barrier(Stream& s) {
  auto legacy = legacy_.find(s.device);  // R13a: a device's legacy stream orders that device's streams only
  if (legacy == legacy_.end()) return;
  if (s.kind == StreamKind::LegacyDefault) {
    for (const Stream& other : streams_)
      if (other.kind == StreamKind::Blocking && other.device == s.device)
        s.vc.join(other.vc);  // R8: legacy after the blocking streams
  } else if (s.kind == StreamKind::Blocking) {
    s.vc.join(streams_[legacy->second.value].vc);  // R8: a blocking stream after the legacy stream
  }
}

const VectorClock& HbState::stream_clock(StreamIndex s) const { return stream(s).vc; }

EventIndex HbState::create_event(std::string name) {
  const EventIndex id{static_cast<std::uint32_t>(events_.size())};
  events_.push_back(Event{name.empty() ? fmt::format("e{}", id.value) : std::move(name), true, std::nullopt});
  ++live_events_;
  return id;
}

const std::string& HbState::event_name(EventIndex e) const {
  check_event(e);
  return events_[e.value].name;
}

void HbState::check_event(EventIndex e) const {
  if (e.value >= events_.size()) throw std::out_of_range(fmt::format("DeviceModel: unknown event {}", e.value));
}

HbState::Event& HbState::live_event(EventIndex e, const char* call) {
  check_event(e);
  if (!events_[e.value].live)
    throw std::logic_error(fmt::format("DeviceModel: {} on destroyed event {}", call, e.value));
  return events_[e.value];
}

void HbState::destroy_event(EventIndex e) {
  check_event(e);
  if (!events_[e.value].live) throw std::logic_error(fmt::format("DeviceModel: event {} destroyed twice", e.value));
  events_[e.value].live = false;
  --live_events_;
}

const std::optional<VectorClock>& HbState::capture(EventIndex e) const {
  check_event(e);
  return events_[e.value].capture;
}

HostThread HbState::create_host_thread() {
  if (hosts_.size() >= LogEntry::kMaxHostThreads)
    throw std::length_error("HbState: more than 2^28 host threads in one run; split the trace");
  VectorClock start = hosts_.empty() ? VectorClock{} : host_clock();  // R6: creation orders the child
  hosts_.push_back(std::move(start));
  host_agents_.push_back(next_agent_++);
  return HostThread{static_cast<std::uint32_t>(hosts_.size() - 1)};
}

void HbState::set_host_thread(HostThread h) {
  if (h.value >= hosts_.size()) throw std::out_of_range(fmt::format("DeviceModel: unknown host thread {}", h.value));
  current_host_ = h;
}

HbState::HostTick HbState::host_tick() {
  const AgentId agent = host_agents_.at(current_host_.value);
  return HostTick{agent, hosts_.at(current_host_.value).tick(agent)};
}

void HbState::host_tick_into(VectorClock& vc) {
  vc.join(host_clock());             // R5: the host's past ...
  const HostTick now = host_tick();  // ... and this call (R6)
  vc.raise(now.agent, now.count);
}

std::size_t HbState::host_release() {
  host_tick();
  const std::size_t entry = log_entries_;
  log(LogEntry::host_call(LogEntry::Kind::HostRelease, current_host_, {}, {}));
  releases_.emplace(entry, host_clock());
  return entry;
}

void HbState::host_acquire(std::size_t entry) {
  auto it = releases_.find(entry);
  if (it == releases_.end())
    throw std::out_of_range(fmt::format("DeviceModel: log entry {} is not a host release", entry));
  host_tick();
  host_joins(it->second);  // R6: ordered after the releaser's past
  log(LogEntry::host_acquire(current_host_, entry));
}

void HbState::log_host(LogEntry::Kind kind, StreamIndex stream, EventIndex event) {
  log(LogEntry::host_call(kind, current_host_, stream, event));
}

const Log& HbState::log() const {
  if (!keep_log_) throw std::logic_error("HbState: this run keeps no API log (a streamed check): nothing may read it");
  return log_;
}

OpRef HbState::enqueue(StreamIndex s, OpKind kind, std::string_view label, std::optional<OpRef> pool_dep) {
  Stream& st = stream(s);
  host_tick_into(st.vc);       // R5, R6
  default_stream_barrier(st);  // R8
  st.vc.tick(st.agent);        // R1: the own component counts this stream's ops
  const OpRef ref{s, st.count()};
  if (st.vc.get(st.agent) != ref.index + 1)
    throw std::logic_error(fmt::format("HbState: internal error: op {} of stream {} counts {} ops of its stream",
                                       ref.index, s.value, st.vc.get(st.agent)));
  if (enqueued_ == std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("HbState: more than 2^32 - 1 ops enqueued in one run; split the trace");
  const std::uint32_t label_id = intern(label);
  // The op's clock by difference (Op::clock_base): a new base only when
  // another stream's component changed.
  if (!st.last_base || !same_other_streams(*st.last_base, st.vc, s)) st.last_base = store_base(st.vc);
  st.ops.push_back(Op{kind, pool_dep.has_value(), label_id, *st.last_base, 0, ++enqueued_});
  if (pool_dep) pool_deps_.emplace(ref, *pool_dep);
  log(LogEntry::enqueue(current_host_, ref));
  return ref;
}

void HbState::record(EventIndex event, StreamIndex s) {
  Event& ev = live_event(event, "record");
  Stream& st = stream(s);
  host_tick_into(st.vc);       // R5, R6
  default_stream_barrier(st);  // R8
  ev.capture = st.vc;          // R2: the capture is replaced, never merged
  log_host(LogEntry::Kind::Record, s, event);
}

void HbState::wait(StreamIndex s, EventIndex event) {
  const Event& ev = live_event(event, "wait");
  Stream& st = stream(s);
  host_tick_into(st.vc);       // R5, R6
  default_stream_barrier(st);  // R8
  // R3: later work on the stream is ordered after the capture as of now; a
  // never-recorded event orders nothing.
  if (ev.capture) st.vc.join(*ev.capture);
  log_host(LogEntry::Kind::Wait, s, event);
}

void HbState::sync_stream(StreamIndex s) {
  const VectorClock& target = stream(s).vc;
  host_tick();
  host_joins(target);  // R4
  log_host(LogEntry::Kind::SyncStream, s, {});
}

void HbState::sync_event(EventIndex event) {
  check_event(event);
  host_tick();
  if (const auto& cap = events_[event.value].capture) host_joins(*cap);  // R4
  log_host(LogEntry::Kind::SyncEvent, {}, event);
}

void HbState::sync_device(DeviceNumber device) {
  host_tick();
  for (const Stream& st : streams_)
    if (st.device == device) host_joins(st.vc);  // R4, R13c: that device's streams only
  log(LogEntry::sync_device(current_host_, device));
}

bool HbState::query_event(EventIndex event) {
  check_event(event);
  host_tick();
  bool done = true;
  if (const auto& cap = events_[event.value].capture) {
    done = executed_all(*cap);
    if (done) host_joins(*cap);  // R4: only a "done" answer orders the host
  }
  log_host(done ? LogEntry::Kind::QueryDone : LogEntry::Kind::QueryNotDone, {}, event);
  return done;
}

void HbState::mark_executed(StreamIndex s, std::uint64_t completion) {
  Stream& st = stream(s);
  if (completion >= std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("HbState: more than 2^32 - 1 ops executed in one run; split the trace");
  st.at(st.executed).executed_as = static_cast<std::uint32_t>(completion + 1);
  ++st.executed;
}

bool HbState::covers(const VectorClock& vc, OpRef a) const {
  check_op(a);
  return vc.covers(stream(a.stream).agent, a.index + 1);
}

std::uint32_t HbState::store_base(const VectorClock& vc) {
  constexpr std::size_t kChunk = std::size_t{1} << kClockChunkLog2;
  const std::size_t words = streams_.size() + 1;
  if (words > kChunk) {
    if (wide_bases_.size() >= kWideBase)
      throw std::length_error("HbState: more than 2^31 wide op clocks in one run; split the trace");
    std::vector<std::uint32_t>& base = wide_bases_.emplace_back();
    base.reserve(words);
    append_base(base, vc);
    return kWideBase | static_cast<std::uint32_t>(wide_bases_.size() - 1);
  }
  // A base never spans two chunks (OpClock reads it as one array): the
  // rest of a chunk too small for it stays unused.
  for (std::size_t room = kChunk - (clock_words_.size() & (kChunk - 1)); room < words; --room)
    clock_words_.push_back(0);
  if (clock_words_.size() + words > kKeptBase)
    throw std::length_error("HbState: more than 2^30 words of op clocks held in one run; split the trace");
  const auto start = static_cast<std::uint32_t>(clock_words_.size());
  append_base(clock_words_, vc);
  return start;
}

template <class Words>
void HbState::append_base(Words& out, const VectorClock& vc) const {
  out.push_back(static_cast<std::uint32_t>(streams_.size()));
  for (const Stream& st : streams_) out.push_back(vc.get(st.agent));
}

std::pair<const std::uint32_t*, std::uint32_t> HbState::base_components(std::uint32_t base) const {
  if (base & kWideBase) {
    const std::vector<std::uint32_t>& wide = wide_bases_[base & ~kWideBase];
    return {wide.data() + 1, wide[0]};
  }
  if (base & kKeptBase) {
    const std::uint32_t at = base & ~kKeptBase;
    return {&kept_bases_[at + 1], kept_bases_[at]};
  }
  return {&clock_words_[base + 1], clock_words_[base]};
}

HbState::OpClock HbState::clock_of(OpRef r, const Op& o) const {
  const auto [components, streams] = base_components(o.clock_base);
  return OpClock(r.stream, r.index + 1, components, streams);
}

HbState::OpClock HbState::op_clock(OpRef r) const { return clock_of(r, op(r)); }

bool HbState::same_other_streams(std::uint32_t base, const VectorClock& vc, StreamIndex own) const {
  const auto [components, streams] = base_components(base);
  for (std::uint32_t u = 0; u < streams_.size(); ++u) {
    if (u == own.value) continue;
    const std::uint32_t in_base = u < streams ? components[u] : 0;
    if (in_base != vc.get(streams_[u].agent)) return false;
  }
  return true;
}

bool HbState::happens_before(OpRef a, OpRef b) const {
  check_op(a);
  return a != b && op_clock(b).get(a.stream) >= a.index + 1;
}

bool HbState::host_after(OpRef a) const { return covers(host_clock(), a); }

bool HbState::completed(OpRef a) const {
  check_op(a);
  return stream(a.stream).executed > a.index;
}

bool HbState::executed_all(const VectorClock& vc) const {
  for (const Stream& st : streams_)
    if (st.executed < vc.get(st.agent)) return false;
  return true;
}

std::optional<OpRef> HbState::pool_dep(OpRef r) const {
  if (!op(r).has_pool_dep) return std::nullopt;
  return pool_deps_.at(r);
}

std::uint64_t HbState::unmet_dependency_packed(OpRef r) const {
  const Op& o = op(r);
  const auto [components, base_streams] = base_components(o.clock_base);
  // The op's own stream is met (R1: it is ordered after its earlier ops
  // only); every other stream made before its base must have run as far
  // as the base says, and one made after it holds nothing it waits for.
  const std::uint32_t streams = std::min(base_streams, static_cast<std::uint32_t>(streams_.size()));
  for (std::uint32_t u = 0; u < streams; ++u) {
    if (u == r.stream.value) continue;
    const std::uint32_t need = components[u];
    if (streams_[u].executed < need) return (std::uint64_t{u} << 32) | (need - 1);
  }
  if (o.has_pool_dep)
    if (const OpRef dep = pool_deps_.at(r); !completed(dep)) return (std::uint64_t{dep.stream.value} << 32) | dep.index;
  return kNoDependency;
}

bool HbState::ready(OpRef r) const { return r.index == stream(r.stream).executed && !unmet_dependency(r); }

}  // namespace streamcheck::sim

namespace streamcheck::sim {

void HbState::check_op(OpRef a) const {
  if (a.index >= stream(a.stream).count())
    throw std::out_of_range(
        fmt::format("DeviceModel: op {} of stream {}, which has {} ops", a.index, a.stream.value, op_count(a.stream)));
}

const HbState::Op& HbState::kept_op(OpRef r) const {
  check_op(r);
  const auto it = kept_ops_.find(packed(r));
  if (it == kept_ops_.end())
    throw std::logic_error(fmt::format(
        "HbState: internal error: the record of op {} of stream {} was dropped (nothing named it when it went)",
        r.index, r.stream.value));
  return it->second;
}

void HbState::add_named(std::vector<OpRef>& named) const {
  for (const auto& [op, dep] : pool_deps_) named.push_back(dep);
}

void HbState::drop(const Retention& r) {
  // The kept ops' records and bases, the old side table's as well as the
  // window's, copied into new tables (a base several kept ops share, once).
  std::unordered_map<std::uint64_t, Op> kept;
  std::vector<std::uint32_t> bases;
  std::unordered_map<std::uint32_t, std::uint32_t> moved;  // old clock_base -> new
  for (const OpRef ref : r.kept) {
    if (!r.drops(ref)) continue;
    Op o = op(ref);  // throws when an earlier pass dropped it: a root was missed
    const auto [it, fresh] = moved.try_emplace(o.clock_base, o.clock_base);
    if (fresh && !(o.clock_base & kWideBase)) {  // wide bases stay where they are
      const auto [components, streams] = base_components(o.clock_base);
      if (bases.size() + streams + 1 >= kKeptBase)
        throw std::length_error("HbState: more than 2^30 words of kept op clocks in one run; split the trace");
      it->second = kKeptBase | static_cast<std::uint32_t>(bases.size());
      bases.push_back(streams);
      bases.insert(bases.end(), components, components + streams);
    }
    o.clock_base = it->second;
    if (kept.emplace(packed(ref), o).second) labels_.retain(o.label_id);  // one reference a record
  }
  for (auto it = pool_deps_.begin(); it != pool_deps_.end();)
    it = r.drops(it->first) && !r.keeps(it->first) ? pool_deps_.erase(it) : std::next(it);
  // Each stream's window starts at its new point; whole chunks below it go.
  constexpr std::uint32_t kChunk = static_cast<std::uint32_t>(ChunkedDeque<Op>::chunk_size());
  for (std::uint32_t s = 0; s < streams_.size() && s < r.dropped_before.size(); ++s) {
    Stream& st = streams_[s];
    const std::uint32_t point = r.dropped_before[s];
    if (point > st.executed)
      throw std::logic_error(
          fmt::format("HbState: internal error: dropping op {} of stream {} before it executed", point - 1, s));
    if (point <= st.dropped) continue;
    st.dropped = point;
    const std::uint32_t chunks = (st.dropped - st.held_from) / kChunk;
    for (std::size_t i = 0; i < std::size_t{chunks} * kChunk; ++i) labels_.release(st.ops[i].label_id);
    st.ops.drop_front_chunks(chunks);
    st.held_from += chunks * kChunk;
  }
  for (const auto& [ref, o] : kept_ops_) labels_.release(o.label_id);  // the old side table's records
  kept_ops_ = std::move(kept);
  kept_bases_ = std::move(bases);
  // The clock words no window op and no stream's next op reads go, in whole
  // chunks (a base never spans two), and the positions above them move down.
  std::size_t lowest = clock_words_.size();
  const auto note_base = [&](std::uint32_t base) {
    if (!(base & (kWideBase | kKeptBase))) lowest = std::min<std::size_t>(lowest, base);
  };
  for (Stream& st : streams_) {
    if (st.dropped < st.count()) note_base(st.at(st.dropped).clock_base);
    if (st.last_base) note_base(*st.last_base);
  }
  constexpr std::size_t kWordChunk = decltype(clock_words_)::chunk_size();
  const std::size_t word_chunks = lowest / kWordChunk;
  if (word_chunks == 0) return;
  clock_words_.drop_front_chunks(word_chunks);
  const auto down = static_cast<std::uint32_t>(word_chunks * kWordChunk);
  const auto move_down = [&](std::uint32_t& base) {
    if (!(base & (kWideBase | kKeptBase))) base -= down;
  };
  for (Stream& st : streams_) {
    for (std::uint32_t i = st.dropped; i < st.count(); ++i) move_down(st.at(i).clock_base);
    if (st.last_base) move_down(*st.last_base);
  }
}

}  // namespace streamcheck::sim
