#include "backend_sim/pool.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace streamcheck::sim {

namespace {
constexpr std::uint64_t kPoolBase = std::uint64_t{1} << 20;  // addresses never start at 0
constexpr std::uint64_t kGranule = 256;
// R12a: host buffers live far above the pool (whose capacity is at most
// 2^48 bytes, as a trace's buffers): no host address is ever a device one.
constexpr std::uint64_t kHostBase = std::uint64_t{1} << 56;
// In Pool::newest_: a segment made for an allocation whose adding failed.
constexpr std::uint32_t kNoAllocation = std::numeric_limits<std::uint32_t>::max();
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
    case ReuseKind::SubAllocated:
      return "sub-allocated";
    case ReuseKind::HostMemory:
      return "host memory";
  }
  return "?";
}

Pool::Pool(PoolPolicy policy) : policy_(policy), bump_(kPoolBase), host_bump_(kHostBase) {}

Pool::Offer Pool::offered(const FreeRange& fr, StreamIndex stream, const VectorClock& at, const HbState& hb,
                          bool may_complete_frees) const {
  Offer offer;
  const auto add = [&](ReuseKind k) { offer.kinds[offer.count++] = k; };
  const OpRef f = fr.free_op;
  // R7: which reuses the pool may make, in order of preference.
  if (f.stream == stream)
    add(ReuseKind::SameStream);
  else if (hb.host_after(f))
    add(ReuseKind::HostSynced);
  else if (policy_.follow_event_dependencies && hb.covers(at, f))
    add(ReuseKind::EventDependency);
  else if (policy_.opportunistic && hb.completed(f))
    add(ReuseKind::Opportunistic);
  else {
    // Not run yet: in some interleaving it has run by now (the caller
    // then runs it), and the pool may instead make the allocation wait.
    if (may_complete_frees && policy_.opportunistic) add(ReuseKind::Opportunistic);
    if (policy_.internal_dependencies) add(ReuseKind::InternalDependency);
  }
  return offer;
}

bool Pool::every_range_offers_one(StreamIndex stream, const VectorClock& at, const HbState& hb,
                                  bool may_complete_frees) const {
  if (scan_every_range_) return false;
  // A free that none of offered()'s first four cases takes offers this
  // many: with exactly one, every range offers one, whatever its free.
  const int otherwise = (may_complete_frees && policy_.opportunistic ? 1 : 0) + (policy_.internal_dependencies ? 1 : 0);
  if (otherwise == 1) return true;
  // Otherwise every stream's frees must fall in those four cases. Each is
  // a prefix of the stream's ops (a clock covers, and a stream runs, in
  // stream order), so the newest free of the stream says it for all.
  for (std::uint32_t t = 0; t < newest_free_.size(); ++t) {
    if (newest_free_[t] == 0 || t == stream.value) continue;
    const OpRef newest{StreamIndex{t}, newest_free_[t] - 1};
    if (hb.host_after(newest)) continue;
    if (policy_.follow_event_dependencies && hb.covers(at, newest)) continue;
    if (policy_.opportunistic && hb.completed(newest)) continue;
    return false;
  }
  return true;
}

std::optional<AllocationIndex> Pool::place(StreamIndex stream, std::uint64_t bytes, const HbState& hb, Chooser& chooser,
                                           std::optional<std::uint64_t> preferred, bool may_complete_frees) {
  if (bytes == 0) throw std::invalid_argument("DeviceModel::alloc: zero bytes");
  // More than the pool holds never fits (and rounding a size near 2^64 up to
  // the granule would wrap to a small one).
  if (bytes > policy_.capacity) return std::nullopt;
  const std::uint64_t rounded = std::max(kGranule, (bytes + kGranule - 1) / kGranule * kGranule);
  VectorClock at = hb.stream_clock(stream);
  at.join(hb.host_clock());

  // The candidates, in freed order, each range's offers in turn. When every
  // range offers one reuse, the n-th candidate is the n-th range that fits,
  // found in the tree; otherwise every range that fits is asked.
  struct Candidate {
    FreeRanges::Slot slot;
    ReuseKind kind;
  };
  const bool one_each = !preferred && every_range_offers_one(stream, at, hb, may_complete_frees);
  std::vector<Candidate> candidates;
  std::size_t candidate_count = 0;
  if (one_each) {
    candidate_count = free_ranges_.count_fitting(rounded);
  } else {
    free_ranges_.for_each([&](FreeRanges::Slot slot, const FreeRange& fr) {
      if (fr.range.size() < rounded) return;
      const Offer offer = offered(fr, stream, at, hb, may_complete_frees);
      for (std::uint8_t k = 0; k < offer.count; ++k) candidates.push_back({slot, offer.kinds[k]});
    });
    candidate_count = candidates.size();
  }
  std::optional<std::size_t> released_fit;
  for (std::size_t i = 0; i < released_.size() && !released_fit; ++i)
    if (released_[i].size() >= rounded) released_fit = i;
  const bool fresh = released_fit || bump_ - kPoolBase + rounded <= policy_.capacity;
  const std::uint32_t options = static_cast<std::uint32_t>(candidate_count) + (fresh ? 1 : 0);
  if (options == 0) return std::nullopt;  // out of memory
  std::optional<std::uint32_t> forced;
  for (std::size_t c = 0; preferred && c < candidates.size() && !forced; ++c)
    if (free_ranges_[candidates[c].slot].range.lo == *preferred)
      forced = static_cast<std::uint32_t>(c) + (fresh ? 1 : 0);
  const std::uint32_t pick = forced ? *forced : chooser.choose(ChoiceKind::PoolRange, options);

  Allocation a{};
  a.bytes = bytes;
  a.stream = stream;
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
    const std::size_t n = pick - (fresh ? 1 : 0);
    Candidate c{};
    if (one_each) {
      const FreeRanges::Slot slot = free_ranges_.nth_fitting(rounded, n);
      const Offer offer = offered(free_ranges_[slot], stream, at, hb, may_complete_frees);
      if (offer.count != 1)
        throw std::logic_error(
            fmt::format("Pool: internal error: a freed range offered {} reuses, not one", offer.count));
      c = Candidate{slot, offer.kinds[0]};
    } else {
      c = candidates.at(n);
    }
    const FreeRange& fr = free_ranges_[c.slot];
    a.range = ByteRange{fr.range.lo, fr.range.lo + rounded};
    a.fence = fr.free_op;
    a.reuse = c.kind;
    free_ranges_.take_front(c.slot, rounded);
  }
  return added(a);
}

AllocationIndex Pool::added(const Allocation& a) {
  if (count() >= kNoAllocation)
    throw std::length_error("Pool: more than 2^32 - 1 allocations in one run; split the trace");
  const std::uint32_t index = count();
  // What may fail (std::bad_alloc) comes first, and undoes itself or leaves
  // nothing that answers wrong: the record, the index's segments over the
  // range (new ones name no allocation), the live start. Writing the index
  // into segments that then all exist cannot fail.
  held_.push_back(a);
  try {
    newest_.for_range(a.range.lo, a.range.hi, kNoAllocation, [](std::uint64_t, std::uint64_t, std::uint32_t&) {});
    if (!a.parent) live_starts_[a.range.lo] = index;
  } catch (...) {
    held_.pop_back();
    throw;
  }
  newest_.for_range(a.range.lo, a.range.hi, kNoAllocation,
                    [&](std::uint64_t, std::uint64_t, std::uint32_t& v) { v = index; });
  return AllocationIndex{index};
}

void Pool::forget_live(AllocationIndex a) {
  // Only if it is the one there: a second free of a range handed out again
  // must not forget its new occupant.
  const auto it = live_starts_.find(at(a).range.lo);
  if (it != live_starts_.end() && it->second == a.value) live_starts_.erase(it);
}

std::optional<AllocationIndex> Pool::live_at(std::uint64_t ptr) const {
  const auto it = live_starts_.find(ptr);
  if (it == live_starts_.end()) return std::nullopt;
  return AllocationIndex{it->second};
}

AllocationIndex Pool::containing(std::uint64_t ptr) const {
  // The newest few allocations first, newest first: a program's launches
  // mostly touch blocks it made lately, and a scan of a few records beat
  // the index's tree search (BM_HbCheckModel, whose 16 blocks all fit
  // here, was 1.02-1.03x slower with the index alone). One of them that
  // holds ptr is the newest that does.
  constexpr std::size_t kScanned = 16;
  const std::size_t scan_end = held_.size() > kScanned ? held_.size() - kScanned : 0;
  for (std::size_t i = held_.size(); i-- > scan_end;) {
    const ByteRange& r = held_[i].range;
    if (r.lo <= ptr && ptr < r.hi) return AllocationIndex{held_from_ + static_cast<std::uint32_t>(i)};
  }
  std::optional<std::uint32_t> newest;
  if (ptr < std::numeric_limits<std::uint64_t>::max())
    newest_.visit(ptr, ptr + 1, [&](std::uint64_t, std::uint64_t, std::uint32_t v) {
      if (v != kNoAllocation) newest = v;
    });
  if (!newest) throw std::invalid_argument(fmt::format("DeviceModel: address {:#x} is not inside any allocation", ptr));
  return AllocationIndex{*newest};
}

void Pool::freed(AllocationIndex a, OpRef free_op) {
  Allocation& alloc = at(a);
  alloc.free_op = free_op;
  forget_live(a);
  free_ranges_.push_back(FreeRange{alloc.range, free_op});
  if (free_op.stream.value >= newest_free_.size()) newest_free_.resize(free_op.stream.value + 1, 0);
  newest_free_[free_op.stream.value] = std::max(newest_free_[free_op.stream.value], free_op.index + 1);
}

AllocationIndex Pool::sub_allocated(AllocationIndex parent, ByteRange block, std::uint64_t bytes, StreamIndex stream) {
  const Allocation& p = at(parent);
  if (block.lo < p.range.lo || block.hi > p.range.hi || block.lo >= block.hi || bytes > block.hi - block.lo)
    throw std::invalid_argument(
        fmt::format("Pool: sub-block [{:#x}, {:#x}) of {} bytes is not inside its parent "
                    "[{:#x}, {:#x})",
                    block.lo, block.hi, bytes, p.range.lo, p.range.hi));
  Allocation a{};
  a.range = block;
  a.bytes = bytes;
  a.stream = stream;
  a.reuse = ReuseKind::SubAllocated;
  a.parent = parent;
  return added(a);
}

void Pool::sub_freed(AllocationIndex a, OpRef free_op, std::vector<OpRef> released_after) {
  Allocation& alloc = at(a);
  alloc.free_op = free_op;
  alloc.released_after = std::move(released_after);
}

AllocationIndex Pool::host_allocated(std::uint64_t bytes, StreamIndex stream) {
  if (bytes == 0 || bytes > (std::uint64_t{1} << 48))
    throw std::invalid_argument("Pool: a host buffer of 1 to 2^48 bytes");
  const std::uint64_t rounded = (bytes + kGranule - 1) / kGranule * kGranule;
  if (host_bump_ > UINT64_MAX - rounded)
    throw std::length_error("Pool: host addresses exhausted (more than 2^63 bytes of host buffers made in one run)");
  Allocation a{};
  a.range = ByteRange{host_bump_, host_bump_ + rounded};
  a.bytes = bytes;
  a.stream = stream;
  a.reuse = ReuseKind::HostMemory;
  host_bump_ += rounded;
  return added(a);
}

void Pool::host_freed(AllocationIndex a, OpRef free_op) {
  Allocation& alloc = at(a);
  alloc.free_op = free_op;
  forget_live(a);
}

bool Pool::within(AllocationIndex a, AllocationIndex b) const {
  for (std::optional<AllocationIndex> at = a; at; at = allocation(*at).parent)
    if (*at == b) return true;
  return false;
}

void Pool::release_idle_ranges(const HbState& hb) {
  const auto idle = [&](const FreeRange& fr) { return hb.completed(fr.free_op) && hb.host_after(fr.free_op); };
  std::uint64_t idle_bytes = 0;
  free_ranges_.for_each([&](FreeRanges::Slot, const FreeRange& fr) {
    if (idle(fr)) idle_bytes += fr.range.size();
  });
  std::vector<FreeRanges::Slot> released;
  free_ranges_.for_each([&](FreeRanges::Slot slot, const FreeRange& fr) {
    if (idle_bytes <= policy_.release_threshold || !idle(fr)) return;
    idle_bytes -= fr.range.size();
    released_.push_back(fr.range);
    released.push_back(slot);
  });
  for (const FreeRanges::Slot slot : released) free_ranges_.erase(slot);
}

const Allocation& Pool::kept(AllocationIndex a) const {
  const auto it = std::lower_bound(kept_indexes_.begin(), kept_indexes_.end(), a.value);
  if (it == kept_indexes_.end() || *it != a.value)
    throw std::logic_error(
        fmt::format("Pool: internal error: allocation {} was asked for after a retention pass dropped it", a.value));
  const Allocation& record = kept_[static_cast<std::size_t>(it - kept_indexes_.begin())];
  kept_cache_[a.value % kKeptCache] = KeptSlot{a.value, &record};
  return record;
}

const std::vector<Allocation>& Pool::allocations() const {
  if (held_from_ > 0)
    throw std::logic_error("Pool: every allocation was asked for, and a retention pass dropped some (visit_held)");
  return held_;
}

void Pool::add_named(std::vector<OpRef>& named) const {
  visit_held([&](AllocationIndex, const Allocation& a) {
    // A live allocation's alloc op is what a leak report names. A freed
    // one's is asked about by nothing a long run reports (a use of the
    // block is checked against its free): it goes with the executed ops, so
    // a trace with a fresh name for every block keeps one op a name, not
    // two (docs/PERFORMANCE.md, "A freed block's alloc op dropped").
    if (a.free_op)
      named.push_back(*a.free_op);
    else
      named.push_back(a.alloc_op);
    if (a.fence) named.push_back(*a.fence);
    named.insert(named.end(), a.released_after.begin(), a.released_after.end());
  });
  free_ranges_.for_each([&](FreeRanges::Slot, const FreeRange& fr) { named.push_back(fr.free_op); });
}

std::size_t Pool::drop_unnamed(std::vector<AllocationIndex> named) {
  // The roots: the caller's, the live allocations, containing()'s answers.
  // The live ones are the newest over their bytes or a parent of one (no
  // allocation gets a live one's bytes but its sub-blocks), so they would
  // stay without being named here; they are, since finish() reports those
  // left as leaks, and a dropped one would be a leak missed, not an error.
  std::vector<AllocationIndex>& roots = named;
  visit_held([&](AllocationIndex index, const Allocation& a) {
    if (!a.free_op) roots.push_back(index);
  });
  newest_.visit(0, std::numeric_limits<std::uint64_t>::max(), [&](std::uint64_t, std::uint64_t, std::uint32_t v) {
    if (v != kNoAllocation) roots.push_back(AllocationIndex{v});
  });
  // Their parents, at any depth (within() walks them).
  for (std::size_t i = 0; i < roots.size(); ++i)
    if (const auto parent = allocation(roots[i]).parent) roots.push_back(*parent);
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  // Every record goes to the side table or away; allocation() throws for
  // a root that an earlier pass let go (a root was missed then).
  std::vector<std::uint32_t> indexes;
  std::vector<Allocation> kept;
  indexes.reserve(roots.size());
  kept.reserve(roots.size());
  for (const AllocationIndex r : roots) {
    kept.push_back(std::move(at(r)));
    indexes.push_back(r.value);
  }
  const std::size_t walked = kept_.size() + held_.size() + roots.size();
  held_from_ = count();
  held_.clear();
  kept_indexes_ = std::move(indexes);
  kept_ = std::move(kept);
  kept_cache_.fill(KeptSlot{});
  return walked;
}

}  // namespace streamcheck::sim
