#include "tools/near_miss.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <variant>

#include "tools/name_map.h"

namespace streamcheck::tools {

namespace {

/// `statement` as a trace line run by the host thread of `like`.
std::string on_thread_of(const ast::Source& like, const std::string& statement) {
  return like.thread == "main" ? statement : fmt::format("@{} {}", like.thread, statement);
}

/// The positions in `sorted` that lie in [lo, hi).
std::pair<std::vector<std::size_t>::const_iterator, std::vector<std::size_t>::const_iterator> between(
    const std::vector<std::size_t>& sorted, std::size_t lo, std::size_t hi) {
  return {std::lower_bound(sorted.begin(), sorted.end(), lo), std::lower_bound(sorted.begin(), sorted.end(), hi)};
}

const std::vector<std::size_t> kNone;

const std::vector<std::size_t>& positions_of(const NameMap<std::vector<std::size_t>>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? kNone : it->second;
}

}  // namespace

/// The trace's statements in file order (statement i), with, per name, the
/// sorted positions of the statements that matter to near misses.
class NearMissAnalysis::Program {
 public:
  explicit Program(const Trace& t) : t_(t) {
    lines_.reserve(t.statements.size());
    for (std::size_t i = 0; i < t.statements.size(); ++i) {
      lines_.push_back(source(t.statements[i]).line);
      threaded_ = threaded_ || source(t.statements[i]).thread != kMainThread;
      std::visit([&](const auto& s) { index(i, s); }, t.statements[i]);
    }
  }

  template <class S>
  const S* get(std::size_t i) const {
    return std::get_if<S>(&t_.statements[i]);
  }
  std::size_t size() const { return t_.statements.size(); }
  int line(std::size_t i) const { return lines_[i]; }
  const ast::Source& src(std::size_t i) const { return source(t_.statements[i]); }
  TraceLine trace_line(std::size_t i) const { return TraceLine{src(i).line, texts_(src(i).text)}; }
  const Trace& trace() const { return t_; }
  std::optional<std::size_t> index_of(int line) const {
    auto it = std::lower_bound(lines_.begin(), lines_.end(), line);
    if (it == lines_.end() || *it != line) return std::nullopt;
    return static_cast<std::size_t>(it - lines_.begin());
  }
  const std::vector<std::size_t>& waits_on(const std::string& stream) const { return positions_of(waits_on_, stream); }
  const std::vector<std::size_t>& records_on(const std::string& stream) const {
    return positions_of(records_on_, stream);
  }
  /// True when a statement in (lo, hi) destroys `event`.
  bool event_destroyed_between(const std::string& event, std::size_t lo, std::size_t hi) const {
    const auto [first, last] = between(positions_of(destroyed_events_, event), lo + 1, hi);
    return first != last;
  }
  /// True when a statement in (lo, hi) destroys `stream`.
  bool stream_destroyed_between(const std::string& stream, std::size_t lo, std::size_t hi) const {
    const auto [first, last] = between(positions_of(destroyed_streams_, stream), lo + 1, hi);
    return first != last;
  }
  /// Whether the file order is the run order of every statement: one host
  /// thread and no `if done` (on other threads, or in a branch not taken,
  /// a statement may run in another place or not at all).
  bool runs_in_file_order() const { return !threaded_ && !branches_; }

  /// The records of `event` after statement `after` (all from the first
  /// when none) and before statement `before` (events are never declared
  /// twice): a wait at `before` sees the capture of the last of them.
  std::pair<std::vector<std::size_t>::const_iterator, std::vector<std::size_t>::const_iterator> records_between(
      const std::string& event, std::optional<std::size_t> after, std::size_t before) const {
    return between(positions_of(records_, event), after ? *after + 1 : 0, before);
  }
  /// The first record of `event` in (after, before) on `stream` (any stream
  /// when empty).
  std::optional<std::size_t> record_after(const std::string& event, std::size_t after, std::size_t before,
                                          const std::string& stream = {}) const {
    const auto [lo, hi] = between(positions_of(records_, event), after + 1, before);
    const auto r =
        std::find_if(lo, hi, [&](std::size_t i) { return stream.empty() || get<ast::Record>(i)->stream == stream; });
    if (r == hi) return std::nullopt;
    return *r;
  }
  /// True when a statement strictly between `lo` and `hi` waits for,
  /// synchronizes on or queries `event`: moving a record of it across them
  /// would change what they see.
  bool event_used_between(const std::string& event, std::size_t lo, std::size_t hi) const {
    const auto [first, last] = between(positions_of(event_uses_, event), lo + 1, hi);
    return first != last;
  }
  bool stream_declared_before(const std::string& stream, std::size_t i) const {
    auto it = stream_decls_.find(stream);
    return it != stream_decls_.end() && it->second < i;
  }
  bool is_resource_block(const std::string& buffer) const { return blocks_.contains(buffer); }

  /// The resource blocks a raw kernel (`launch` or `copy`) at statement `i`
  /// uses, with the access of each; empty for any other statement.
  std::map<std::string, Access> raw_block_uses(std::size_t i) const {
    // A launch's accesses are read in place; a copy makes its two.
    std::vector<BufferAccess> copy_accesses;
    AccessList accesses;
    if (const auto* l = get<ast::Launch>(i)) accesses = l->accesses;
    if (const auto* c = get<ast::Copy>(i)) accesses = copy_accesses = c->accesses();
    std::map<std::string, Access> out;
    for (const auto& [access, ref] : accesses) {
      if (!is_resource_block(ref.buffer)) continue;
      auto [it, fresh] = out.try_emplace(ref.buffer, access);
      if (!fresh) it->second = combine(it->second, access);
    }
    return out;
  }
  /// The stream of a raw kernel at statement `i`.
  std::optional<std::string> raw_stream(std::size_t i) const {
    if (const auto* l = get<ast::Launch>(i)) return l->stream;
    if (const auto* c = get<ast::Copy>(i)) return c->stream;
    return std::nullopt;
  }
  /// True for the statements that are calls of the resource.
  bool is_resource_call(std::size_t i) const {
    return get<ast::Run>(i) || get<ast::Allocate>(i) || get<ast::Deallocate>(i) || get<ast::Prepare>(i) ||
           get<ast::Finish>(i) || get<ast::Reap>(i);
  }

  /// The prepare of `block` on `stream` still open (no finish of it on that
  /// stream, and no new allocate of it, since) at statement `at`.
  std::optional<std::size_t> open_prepare(const std::string& block, const std::string& stream, std::size_t at) const {
    const auto [first, last] = between(positions_of(block_calls_, block), 0, at);
    for (auto it = last; it != first;) {
      const std::size_t i = *--it;
      if (get<ast::Allocate>(i)) return std::nullopt;
      if (const auto* f = get<ast::Finish>(i); f && f->stream == stream) return std::nullopt;
      if (const auto* p = get<ast::Prepare>(i); p && p->stream == stream) return i;
    }
    return std::nullopt;
  }
  /// Where the use the prepare at statement `i` opened must be finished by:
  /// the next call that makes the resource look at the block's uses on that
  /// stream again (its deallocate, a new prepare, a new allocate), or none.
  std::optional<std::size_t> finish_deadline(std::size_t i) const {
    const auto& p = *get<ast::Prepare>(i);
    const auto [first, last] = between(positions_of(block_calls_, p.buffer), i + 1, size());
    const auto end = std::find_if(first, last, [&](std::size_t k) {
      const auto* q = get<ast::Prepare>(k);
      return get<ast::Deallocate>(k) || get<ast::Allocate>(k) || (q && q->stream == p.stream);
    });
    if (end == last) return std::nullopt;
    return *end;
  }
  /// The finish that matches the prepare at statement `i`, before its deadline.
  std::optional<std::size_t> matching_finish(std::size_t i) const {
    const auto& p = *get<ast::Prepare>(i);
    const auto [first, last] =
        between(positions_of(block_calls_, p.buffer), i + 1, finish_deadline(i).value_or(size()));
    const auto f = std::find_if(first, last, [&](std::size_t k) {
      const auto* fin = get<ast::Finish>(k);
      return fin && fin->stream == p.stream && fin->access == p.access;
    });
    if (f == last) return std::nullopt;
    return *f;
  }
  /// The last raw kernel on `stream` that uses `block` in [from, before).
  std::size_t last_raw_use(const std::string& block, const std::string& stream, std::size_t from,
                           std::size_t before) const {
    std::size_t last_use = from;
    const auto [first, last] = between(positions_of(raw_uses_, block), from, before);
    for (auto it = first; it != last; ++it)
      if (raw_stream(*it) == stream) last_use = *it;
    return last_use;
  }

 private:
  void index(std::size_t i, const ast::StreamDecl& s) { stream_decls_.try_emplace(s.name, i); }
  void index(std::size_t i, const ast::Record& s) {
    records_[s.event].push_back(i);
    records_on_[s.stream].push_back(i);
  }
  void index(std::size_t i, const ast::DestroyEvent& s) { destroyed_events_[s.event].push_back(i); }
  void index(std::size_t i, const ast::DestroyStream& s) { destroyed_streams_[s.stream].push_back(i); }
  void index(std::size_t, const ast::IfDone&) { branches_ = true; }
  void index(std::size_t i, const ast::Wait& s) {
    event_uses_[s.event].push_back(i);
    waits_on_[s.stream].push_back(i);
  }
  void index(std::size_t i, const ast::SyncEvent& s) { event_uses_[s.event].push_back(i); }
  void index(std::size_t i, const ast::Query& s) { event_uses_[s.event].push_back(i); }
  void index(std::size_t i, const ast::Allocate& s) {
    blocks_.insert(s.buffer);
    block_calls_[s.buffer].push_back(i);
  }
  void index(std::size_t i, const ast::Deallocate& s) { block_calls_[s.buffer].push_back(i); }
  void index(std::size_t i, const ast::Prepare& s) { block_calls_[s.buffer].push_back(i); }
  void index(std::size_t i, const ast::Finish& s) { block_calls_[s.buffer].push_back(i); }
  void index(std::size_t i, const ast::Launch& s) { index_raw(i, s.accesses); }
  void index(std::size_t i, const ast::Copy& s) { index_raw(i, s.accesses()); }
  template <class Other>
  void index(std::size_t, const Other&) {}
  void index_raw(std::size_t i, AccessList accesses) {
    // Only resource_fix reads this index (last_raw_use), and only in a
    // trace that uses the resource: any other trace would pay a hash
    // insert per buffer of every launch for nothing.
    if (!t_.uses_resource) return;
    // Each buffer once: a kernel names a handful, so a scan of those
    // before it beats a set made for every launch of the trace.
    std::vector<Name> named;
    for (const auto& [access, ref] : accesses) {
      if (std::any_of(named.begin(), named.end(), [&](const Name& n) { return n == ref.buffer; })) continue;
      named.push_back(ref.buffer);
      raw_uses_[ref.buffer].push_back(i);
    }
  }

  const Trace& t_;
  std::vector<int> lines_;                               // statement -> its line (ascending)
  NameMap<std::size_t> stream_decls_;                    // stream -> its declaration
  NameMap<std::vector<std::size_t>> records_;            // event -> its records
  NameMap<std::vector<std::size_t>> records_on_;         // stream -> the records on it
  NameMap<std::vector<std::size_t>> destroyed_events_;   // event -> its destroys
  NameMap<std::vector<std::size_t>> destroyed_streams_;  // stream -> its destroys
  bool threaded_ = false;                                // a statement on a thread other than main
  bool branches_ = false;                                // an `if done` block
  NameMap<std::vector<std::size_t>> event_uses_;         // event -> waits, syncs, queries of it
  NameMap<std::vector<std::size_t>> waits_on_;           // stream -> the waits on it
  NameSet blocks_;                                       // buffers made by `allocate`
  NameMap<std::vector<std::size_t>> block_calls_;        // block -> allocate, deallocate, prepare, finish
  NameMap<std::vector<std::size_t>> raw_uses_;           // buffer -> launches and copies naming it
  /// Each text trace_line gives, once: a near miss per finding of a racy
  /// loop names the same few statements' texts at other lines.
  mutable TextInterner texts_;
};

namespace {

using Program = NearMissAnalysis::Program;

NearMiss wait_never_recorded(const Program& p, std::size_t wait) {
  NearMiss n{.kind = NearMiss::Kind::WaitNeverRecorded, .statement = p.trace_line(wait), .op = {}, .seen_by = {}};
  if (const auto r = p.record_after(p.get<ast::Wait>(wait)->event, wait, p.size())) n.op = p.trace_line(*r);
  return n;
}

NearMiss prepare_without_finish(const Program& p, std::size_t prepare) {
  NearMiss n{.kind = NearMiss::Kind::PrepareWithoutFinish, .statement = p.trace_line(prepare), .op = {}, .seen_by = {}};
  if (const auto end = p.finish_deadline(prepare)) n.seen_by = p.trace_line(*end);
  return n;
}

/// The two ops of a missing-edge finding as statements of the trace.
struct Pair {
  std::size_t first;   // statement of the earlier-enqueued op
  std::size_t second;  // and of the later one
  const std::string& first_stream;
  const std::string& second_stream;
};

/// (a)-(c): a wait on the second op's stream before it, whose event's
/// record almost captured the first op. The latest such wait wins.
std::optional<TraceFix> event_near_miss(const Program& p, const Pair& pair) {
  const auto [earliest, after_last] = between(p.waits_on(pair.second_stream), 0, pair.second);
  for (auto it = after_last; it != earliest;) {
    const std::size_t w = *--it;
    const auto& wait = *p.get<ast::Wait>(w);
    const auto [first_record, end_records] = p.records_between(wait.event, std::nullopt, w);
    if (first_record == end_records) {
      // (b) The wait orders nothing; moved after a record of the first op's
      // stream that comes after the first op, it orders the pair.
      const auto r = p.record_after(wait.event, std::max(w, pair.first), pair.second, pair.first_stream);
      if (!r) continue;
      return TraceFix{
          Fix::MoveWaitAfterRecord, wait_never_recorded(p, w), {TraceEdit::move_after(p.line(w), p.line(*r))}};
    }
    const std::size_t last = *std::prev(end_records);
    const auto& rec = *p.get<ast::Record>(last);
    if (rec.stream == pair.first_stream && last < pair.first && pair.first < w &&
        !p.event_used_between(wait.event, last, pair.first)) {
      // (a) The record captured the first op's stream just before the first
      // op; moved after it, the wait sees it.
      NearMiss n{.kind = NearMiss::Kind::RecordTooEarly,
                 .statement = p.trace_line(last),
                 .op = p.trace_line(pair.first),
                 .seen_by = p.trace_line(w)};
      return TraceFix{Fix::MoveRecordAfterFirst, n, {TraceEdit::move_after(p.line(last), p.line(pair.first))}};
    }
    if (rec.stream != pair.first_stream) {
      // (c) An earlier record captured the first op, and a record on another
      // stream replaced that capture before the wait: wait on the event
      // while it still holds the first op. Only the records after the first
      // op are searched: a search of all before the wait, for each wait on
      // the stream, was a quarter of `check` of a million-statement trace
      // with two findings (docs/PERFORMANCE.md).
      const auto [after_first, before_wait] = p.records_between(wait.event, pair.first, w);
      const auto needed =
          std::find_if(std::make_reverse_iterator(before_wait), std::make_reverse_iterator(after_first),
                       [&](std::size_t r) { return p.get<ast::Record>(r)->stream == pair.first_stream; });
      if (needed == std::make_reverse_iterator(after_first) || !p.stream_declared_before(wait.stream, *needed))
        continue;
      NearMiss n{.kind = NearMiss::Kind::StaleCapture,
                 .statement = p.trace_line(w),
                 .op = p.trace_line(*needed),
                 .seen_by = p.trace_line(last)};
      const std::string again =
          on_thread_of(p.src(w), fmt::format("wait {} on {}", wait.event, trace_name_of(wait.stream)));
      return TraceFix{Fix::WaitBeforeReRecord, n, {TraceEdit::insert_after(p.line(*needed), again)}};
    }
  }
  return std::nullopt;
}

/// At most this many records on the first op's stream after it are asked
/// (e) whether a wait would see them: each costs a binary search, and a
/// finding of a trace with many records in between keeps the new event.
constexpr std::size_t kRecordsAsked = 16;

/// (e) A record on the first op's stream after the first op, the last of
/// its event before the second op, that nothing on the second op's stream
/// waits on: `wait E` right before the second op sees its capture, which
/// holds the first op (R2, R3), so it orders the pair. The first such
/// record wins: it is the nearest the first op. Only where the file order
/// is the run order, none of the three is captured, and the event and the
/// stream are the ones the names meant throughout (no destroy between; the
/// parser has made `legacy` the current device's stream already, R13).
std::optional<TraceFix> unwaited_record(const Program& p, const Pair& pair) {
  if (!p.runs_in_file_order()) return std::nullopt;
  // The wait goes right before the read, on its thread, naming its stream
  // as the trace does there (`legacy` is the current device's: R13).
  const auto second_stream = p.raw_stream(pair.second);
  if (!second_stream) return std::nullopt;
  if (p.src(pair.first).captured_by != 0 || p.src(pair.second).captured_by != 0) return std::nullopt;
  const auto [lo, hi] = between(p.records_on(pair.first_stream), pair.first + 1, pair.second);
  for (auto it = lo; it != hi && it - lo < static_cast<std::ptrdiff_t>(kRecordsAsked); ++it) {
    const std::size_t r = *it;
    const auto& rec = *p.get<ast::Record>(r);
    const auto [later, end] = p.records_between(rec.event, r, pair.second);
    if (later != end || p.src(r).captured_by != 0 || p.event_destroyed_between(rec.event, r, pair.second) ||
        p.stream_destroyed_between(pair.first_stream, pair.first, r))
      continue;
    NearMiss n{.kind = NearMiss::Kind::RecordNeverWaited,
               .statement = p.trace_line(r),
               .op = p.trace_line(pair.first),
               .seen_by = p.trace_line(pair.second)};
    const std::string wait = fmt::format("wait {} on {}", rec.event, trace_name_of(*second_stream));
    return TraceFix{Fix::WaitOnTheRecord, n, {TraceEdit::insert_before(p.line(pair.second), wait)}};
  }
  return std::nullopt;
}

/// The buffers a finding's bytes lie in.
std::set<std::string> buffers_of(const ReportFinding& f) {
  std::set<std::string> out;
  for (const auto& b : f.bytes)
    if (b.in_buffer) out.insert(b.in_buffer->buffer);
  return out;
}

/// (d) and resource mode: a raw kernel on a resource block, on either side
/// of the pair, gets the resource calls it lacks.
std::optional<TraceFix> resource_fix(const Program& p, const Pair& pair, const ReportFinding& f) {
  const std::set<std::string> raced = buffers_of(f);
  for (const std::size_t raw : {pair.first, pair.second}) {
    const auto stream = p.raw_stream(raw);
    if (!stream) continue;
    for (const auto& [block, access] : p.raw_block_uses(raw)) {
      if (!raced.contains(block)) continue;
      const auto open = p.open_prepare(block, *stream, raw);
      const ast::Source& at = p.src(raw);
      if (!open) {
        // Bracket the raw kernel, as `run` would.
        const std::string use = fmt::format("{} on {} {}", block, trace_name_of(*stream), to_string(access));
        return TraceFix{Fix::PrepareAndFinishTheLaunch,
                        std::nullopt,
                        {TraceEdit::insert_before(at.line, on_thread_of(at, "prepare " + use)),
                         TraceEdit::insert_after(at.line, on_thread_of(at, "finish " + use))}};
      }
      if (raw != pair.first || p.matching_finish(*open)) continue;
      // The prepare is open and never finished: finish it after its last raw
      // use before the other op of the pair.
      const std::size_t last_use = p.last_raw_use(block, *stream, raw, pair.second);
      const std::string finish = fmt::format("finish {} on {} {}", block, trace_name_of(*stream),
                                             to_string(p.get<ast::Prepare>(*open)->access));
      return TraceFix{Fix::FinishTheUse,
                      prepare_without_finish(p, *open),
                      {TraceEdit::insert_after(p.line(last_use), on_thread_of(p.src(last_use), finish))}};
    }
  }
  if ((p.trace().mutant || p.trace().pool_mutant) && p.is_resource_call(pair.first) && p.is_resource_call(pair.second))
    return TraceFix{Fix::ResourceOrdersThem, std::nullopt, {}};
  return std::nullopt;
}

}  // namespace

NearMissAnalysis::NearMissAnalysis(const Trace& trace) : trace_(trace) {}
NearMissAnalysis::~NearMissAnalysis() = default;

const NearMissAnalysis::Program& NearMissAnalysis::program() const {
  std::call_once(program_made_, [&] { program_ = std::make_unique<Program>(trace_); });
  return *program_;
}

bool StatementNearMissWatch::may_be_near_miss(const Statement& st) {
  // By Name::id + 1: the empty name's id (kNoId) wraps to slot 0.
  if (const auto* r = std::get_if<ast::Record>(&st)) {
    const std::uint32_t slot = r->event.id() + 1;
    if (slot >= recorded_.size()) recorded_.resize(slot + 1);
    recorded_[slot] = true;
    return false;
  }
  if (const auto* w = std::get_if<ast::Wait>(&st)) {
    const std::uint32_t slot = w->event.id() + 1;
    return slot >= recorded_.size() || !recorded_[slot];
  }
  return std::holds_alternative<ast::Prepare>(st);
}

std::vector<NearMiss> NearMissAnalysis::statement_near_misses() const {
  // One pass with the events recorded so far: the index (program()) is made
  // only for what needs more -- a near miss found, a prepare to match.
  std::vector<NearMiss> out;
  StatementNearMissWatch watch;
  const auto& statements = trace_.statements;
  for (std::size_t i = 0; i < statements.size(); ++i) {
    if (!watch.may_be_near_miss(statements[i])) continue;
    if (std::holds_alternative<ast::Wait>(statements[i]))
      out.push_back(wait_never_recorded(program(), i));
    else if (!program().matching_finish(i))
      out.push_back(prepare_without_finish(program(), i));
  }
  return out;
}

std::optional<TraceFix> NearMissAnalysis::fix_of(const ReportFinding& f) const {
  if (!f.second || f.definite || f.order != Ordering::MissingEdge || !f.first.origin || !f.second->origin)
    return std::nullopt;
  const Program& p = program();
  const auto first = p.index_of(f.first.origin->line);
  const auto second = p.index_of(f.second->origin->line);
  if (!first || !second || *first >= *second) return std::nullopt;
  const Pair pair{*first, *second, f.first.stream, f.second->stream};
  if (auto fix = event_near_miss(p, pair)) return fix;
  if (p.trace().uses_resource)
    if (auto fix = resource_fix(p, pair, f)) return fix;
  return unwaited_record(p, pair);
}

}  // namespace streamcheck::tools
