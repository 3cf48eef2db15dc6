#include "backend_sim/race_checker.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace streamcheck::sim {

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

std::uint32_t RaceChecker::position(std::size_t size) {
  if (size >= (std::size_t{1} << 31))
    throw std::length_error("RaceChecker: more than 2^31 ops, accesses or expected stamps in one run; split the trace");
  return static_cast<std::uint32_t>(size);
}

RaceChecker::Ends RaceChecker::ends(std::uint32_t stamp) const {
  if (stamp < stamps()) return Ends{starts_of(stamp + 1).accesses, starts_of(stamp + 1).expected};
  return Ends{checked_.size(), std::size_t{expected_base_} + expected_.size()};
}

void RaceChecker::enqueued(OpRef q, std::span<const OpAccess> accesses, bool changes_memory) {
  // Stamps are the HB state's enqueue order (HbState::Op::enqueued_as):
  // every op the device model enqueues is checked here at once, in order.
  const HbState::Op& op = hb_.op(q);
  const std::uint32_t stamp = position(std::size_t{stamps()} + 1);
  if (op.enqueued_as != stamp)
    throw std::logic_error(
        fmt::format("RaceChecker: internal error: op {}:{} is the HB state's enqueue number {} but the checker's {}",
                    q.stream.value, q.index, op.enqueued_as, stamp));
  Starts starts{};
  starts.accesses = position(checked_.size());
  starts.changes_memory = changes_memory ? 1 : 0;
  starts.expected = position(std::size_t{expected_base_} + expected_.size());
  starts_.push_back(starts);
  if (!current_finding_at_.empty()) current_finding_at_.clear();  // q is every later finding's second
  checking_ = q;
  const bool q_is_kernel = op.kind == OpKind::Kernel;
  const HbState::OpClock q_clock = hb_.op_clock(q);
  for (const OpAccess& a : accesses) {
    if (a.allocation.value >= (std::uint32_t{1} << 30))
      throw std::length_error("RaceChecker: more than 2^30 allocations in one run; split the trace");
    checked_.push_back(
        StoredAccess{PackedByteRange(a.range), (a.allocation.value << 2) | static_cast<std::uint32_t>(a.access)});
    check(q, q_is_kernel, q_clock, a);
  }
  position(std::size_t{expected_base_} + expected_.size());  // the next op's start must fit too
}

RaceChecker::Orderer RaceChecker::orderer(const HbState::OpClock& q_clock, AllocationIndex q_allocation) const {
  // R7: the pool guarantees that a reused range is not handed out before
  // the previous occupant's free (and everything ordered before it) is done;
  // a sub-block's bytes were handed out by the pool to its outermost parent.
  const Allocation* from_pool = &pool_.allocation(q_allocation);
  while (from_pool->parent) from_pool = &pool_.allocation(*from_pool->parent);
  return Orderer{q_clock, q_allocation, from_pool->fence};
}

bool RaceChecker::ordered(const ShadowAccess& p, const Orderer& o) const {
  if (hb_.covers(o.q_clock, p.op)) return true;  // p is q, or happens before it
  // R7: an access of the range's previous occupant (an allocation q's does
  // not share bytes with) is ordered before q when it is ordered before the
  // previous occupant's free.
  if (o.pool_fence && !related(p.allocation, o.q_allocation))
    return p.op == *o.pool_fence || hb_.happens_before(p.op, *o.pool_fence);
  return false;
}

bool RaceChecker::released_before(const ShadowAccess& p, OpRef q, AllocationIndex q_allocation) const {
  const Allocation& a = pool_.allocation(q_allocation);
  if (a.free_op != q || !pool_.within(p.allocation, q_allocation)) return false;
  return std::any_of(a.released_after.begin(), a.released_after.end(),
                     [&](OpRef r) { return p.op == r || hb_.happens_before(p.op, r); });
}

FindingKind RaceChecker::classify(const ShadowAccess& p, OpRef q, AllocationIndex q_allocation) const {
  if (!related(p.allocation, q_allocation)) return FindingKind::ReuseRace;
  const OpKind pk = hb_.op(p.op).kind;
  const OpKind qk = hb_.op(q).kind;
  if (pk == OpKind::Alloc) return FindingKind::UseBeforeReady;
  if (pk == OpKind::Free || qk == OpKind::Free) return FindingKind::UseAfterFree;
  return FindingKind::DataRace;
}

void RaceChecker::report(FindingKind kind, OpRef first, std::optional<OpRef> second, ByteRange bytes, bool definite) {
  if (second && second != checking_)  // what lets current_finding_at_ forget an op's findings
    throw std::logic_error(
        fmt::format("RaceChecker: internal error: a finding's second op {}:{} is not the op being checked",
                    second->stream.value, second->index));
  const FindingKey key{packed(first), second ? packed(*second) : ~std::uint64_t{0}, kind, definite};
  if (const auto at = current_finding_at_.find(key); at != current_finding_at_.end()) {
    add_range(findings_[at->second].bytes, bytes);
    return;
  }
  findings_.push_back(Finding{kind, first, second, {bytes}, definite});
  current_finding_at_.emplace(key, findings_.size() - 1);
}

void RaceChecker::check(OpRef q, bool q_is_kernel, const HbState::OpClock& q_clock, const OpAccess& acc) {
  // A kernel ordered after the free of its block, or of a block it is a
  // sub-block of (R10a), uses freed memory whatever else orders it. A
  // sub-block is given back by the host (R10b): a kernel enqueued after
  // that uses freed memory even where nothing orders it after the give-back
  // (racing).
  if (q_is_kernel)
    for (const Allocation* target = &pool_.allocation(acc.allocation);;) {  // one lookup a level
      if (target->free_op) {
        const bool after = hb_.happens_before(*target->free_op, q);
        if (after || target->parent) {
          report(FindingKind::UseAfterFree, *target->free_op, q, acc.range, after);
          break;
        }
      }
      if (!target->parent) break;
      target = &pool_.allocation(*target->parent);
    }

  const Orderer order = orderer(q_clock, acc.allocation);
  shadow_.for_range(acc.range.lo, acc.range.hi, Shadow{}, [&](std::uint64_t lo, std::uint64_t hi, Shadow& sh) {
    const ByteRange seg{lo, hi};
    // R10c: a use on a record_stream stream is no race with the block's
    // give-back, but the give-back does not order it before anything else:
    // it stays in the shadow (a write stays the bytes' last write) until an
    // op ordered after it -- the next hand-out, after its host sync -- subsumes it.
    bool keeps_last_write = false;
    if (sh.last_write) {
      if (ordered(*sh.last_write, order)) {
        if (value_oracle_ && reads(acc.access))
          expected_.push_back(Expected{PackedByteRange(seg), stamp_of(sh.last_write->op)});
      } else if (released_before(*sh.last_write, q, acc.allocation)) {
        keeps_last_write = true;
      } else if (sh.last_write->op != q) {
        report(classify(*sh.last_write, q, acc.allocation), sh.last_write->op, q, seg, false);
      }
    }
    if (writes(acc.access)) {
      for (const auto& r : sh.reads)
        if (!ordered(r, order) && !released_before(r, q, acc.allocation))
          report(classify(r, q, acc.allocation), r.op, q, seg, false);
    }
    // Reads ordered before q are subsumed by q; racing reads stay so that
    // later ops of a reused range are checked against them too.
    std::erase_if(sh.reads, [&](const ShadowAccess& r) { return ordered(r, order); });
    if (writes(acc.access) && !keeps_last_write)
      sh.last_write = ShadowAccess{q, acc.allocation};
    else
      sh.reads.push_back(ShadowAccess{q, acc.allocation});
  });
}

void RaceChecker::executed(OpRef r) {
  if (!value_oracle_) return;
  const std::uint32_t stamp = stamp_of(r);
  if (stamp == 0) return;  // never checked: nothing to see, nothing written
  if (stamp <= dropped_stamps_)
    throw std::logic_error("RaceChecker: internal error: an op executes after its records were dropped");
  const Starts& starts = starts_of(stamp);
  const Ends end = ends(stamp);
  // An op executes once, and an expected stamp is marked seen (0) when its
  // read is, and dropped when every one before it is: a second call of an
  // op asks nothing again.
  for (std::size_t e = std::max<std::size_t>(starts.expected, expected_base_); e < end.expected; ++e) {
    Expected& expected = expected_[e - expected_base_];
    if (expected.stamp == 0) continue;
    const ByteRange bytes = expected.bytes.get();
    memory_.for_range(bytes.lo, bytes.hi, 0, [&](std::uint64_t lo, std::uint64_t hi, std::uint64_t& v) {
      if (v != expected.stamp) mismatches_.push_back(ValueMismatch{r, ByteRange{lo, hi}, expected.stamp, v});
    });
    expected.stamp = 0;  // seen
  }
  // The stamps no read waits for any more go.
  while (!expected_.empty() && expected_.front().stamp == 0) {
    expected_.pop_front();
    ++expected_base_;
  }
  if (!starts.changes_memory) return;
  for (std::size_t i = starts.accesses; i < end.accesses; ++i) {
    const OpAccess acc = checked_[i].get();
    if (writes(acc.access))
      memory_.for_range(acc.range.lo, acc.range.hi, 0,
                        [&](std::uint64_t, std::uint64_t, std::uint64_t& v) { v = stamp; });
  }
}

std::vector<OpAccess> RaceChecker::accesses(OpRef r) const {
  std::vector<OpAccess> out;
  if (r.stream.value >= hb_.stream_count() || r.index >= hb_.op_count(r.stream)) return out;
  const std::uint32_t stamp = stamp_of(r);
  if (stamp == 0) return out;
  if (stamp <= dropped_stamps_) {
    const auto kept = kept_accesses_.find(stamp);
    if (kept == kept_accesses_.end())
      throw std::logic_error("RaceChecker: internal error: the accesses of a dropped op were asked for");
    for (const StoredAccess& a : kept->second) out.push_back(a.get());
    return out;
  }
  const Ends end = ends(stamp);
  for (std::size_t i = starts_of(stamp).accesses; i < end.accesses; ++i) out.push_back(checked_[i].get());
  return out;
}

void RaceChecker::leaked(const Allocation& a) {
  report(FindingKind::Leak, a.alloc_op, std::nullopt, ByteRange{a.range.lo, a.range.lo + a.bytes}, false);
}

std::vector<std::pair<ByteRange, std::optional<OpRef>>> RaceChecker::last_writes(ByteRange range) const {
  std::vector<std::pair<ByteRange, std::optional<OpRef>>> out;
  std::uint64_t at = range.lo;
  shadow_.visit(range.lo, range.hi, [&](std::uint64_t lo, std::uint64_t hi, const Shadow& sh) {
    if (at < lo) out.emplace_back(ByteRange{at, lo}, std::nullopt);
    std::optional<OpRef> writer;
    if (sh.last_write) writer = sh.last_write->op;
    out.emplace_back(ByteRange{lo, hi}, writer);
    at = hi;
  });
  if (at < range.hi) out.emplace_back(ByteRange{at, range.hi}, std::nullopt);
  return out;
}

void RaceChecker::add_named(std::vector<OpRef>& named, std::vector<AllocationIndex>& named_allocations) const {
  shadow_.visit(0, std::numeric_limits<std::uint64_t>::max(), [&](std::uint64_t, std::uint64_t, const Shadow& sh) {
    if (sh.last_write) {
      named.push_back(sh.last_write->op);
      named_allocations.push_back(sh.last_write->allocation);
    }
    for (const ShadowAccess& r : sh.reads) {
      named.push_back(r.op);
      named_allocations.push_back(r.allocation);
    }
  });
  for (const Finding& f : findings_) {
    named.push_back(f.first);
    if (f.second) named.push_back(*f.second);
  }
  for (const ValueMismatch& m : mismatches_) named.push_back(m.read);
}

void RaceChecker::drop(const Retention& r) {
  // The stamps whose ops are all dropped: those below the first op each
  // stream still holds (stamps are given in enqueue order).
  std::uint32_t upto = stamps();
  for (std::uint32_t s = 0; s < hb_.stream_count(); ++s) {
    const StreamIndex stream{s};
    const std::uint32_t first_held = hb_.dropped_count(stream);
    if (first_held < hb_.op_count(stream)) upto = std::min(upto, hb_.op(OpRef{stream, first_held}).enqueued_as - 1);
  }
  if (upto <= dropped_stamps_) return;
  // The kept ops' accesses, copied aside (the old side table's too).
  std::unordered_map<std::uint32_t, std::vector<StoredAccess>> kept;
  for (const OpRef ref : r.kept) {
    const std::uint32_t stamp = stamp_of(ref);
    if (stamp == 0 || stamp > upto) continue;
    std::vector<StoredAccess>& out = kept[stamp];
    if (stamp <= dropped_stamps_) {
      const auto old = kept_accesses_.find(stamp);
      if (old == kept_accesses_.end())
        throw std::logic_error("RaceChecker: internal error: a kept op's accesses were dropped before");
      out = old->second;
    } else {
      for (std::size_t i = starts_of(stamp).accesses, end = ends(stamp).accesses; i < end; ++i)
        out.push_back(checked_[i]);
    }
  }
  kept_accesses_ = std::move(kept);
  // Whole chunks of starts below the first held stamp go; so do the
  // accesses before that stamp's, and the positions above them move down.
  const std::size_t lowest_access = upto < stamps() ? starts_of(upto + 1).accesses : checked_.size();
  dropped_stamps_ = upto;
  constexpr std::size_t kStartsChunk = decltype(starts_)::chunk_size();
  const std::size_t start_chunks = (dropped_stamps_ - starts_from_) / kStartsChunk;
  starts_.drop_front_chunks(start_chunks);
  starts_from_ += static_cast<std::uint32_t>(start_chunks * kStartsChunk);
  constexpr std::size_t kAccessChunk = decltype(checked_)::chunk_size();
  const std::size_t access_chunks = lowest_access / kAccessChunk;
  checked_.drop_front_chunks(access_chunks);
  const auto down = static_cast<std::uint32_t>(access_chunks * kAccessChunk);
  // The expected stamps' positions start again from 0 too (a long run's
  // reads would pass 2^31 positions otherwise).
  const std::uint32_t expected_down = expected_base_;
  expected_base_ = 0;
  expected_.forget_popped_chunks();
  for (Starts& st : starts_) {
    st.accesses = st.accesses >= down ? st.accesses - down : 0;
    st.expected = st.expected >= expected_down ? st.expected - expected_down : 0;
  }
}

}  // namespace streamcheck::sim
