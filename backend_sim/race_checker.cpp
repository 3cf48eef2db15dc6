#include "backend_sim/race_checker.h"

#include <algorithm>

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

void RaceChecker::enqueued(OpRef q, const std::vector<OpAccess>& accesses) {
  if (ops_.size() <= q.stream.value) ops_.resize(q.stream.value + 1);
  auto& on_stream = ops_[q.stream.value];
  on_stream.resize(std::max<std::size_t>(on_stream.size(), q.index + 1));
  OpRecord& rec = on_stream[q.index];
  rec.stamp = next_stamp_++;
  for (const OpAccess& a : accesses) rec.accesses.push_back(Checked{a, {}});
  for (Checked& acc : rec.accesses) check(q, acc);
}

bool RaceChecker::ordered(const ShadowAccess& p, OpRef q, AllocationIndex q_allocation) const {
  if (p.op == q || hb_.happens_before(p.op, q)) return true;
  // R7: the pool guarantees that a reused range is not handed out before
  // the previous occupant's free (and everything ordered before it) is done.
  const Allocation& a = pool_.allocation(q_allocation);
  if (p.allocation != q_allocation && a.fence) return p.op == *a.fence || hb_.happens_before(p.op, *a.fence);
  return false;
}

FindingKind RaceChecker::classify(const ShadowAccess& p, OpRef q, AllocationIndex q_allocation) const {
  if (p.allocation != q_allocation) return FindingKind::ReuseRace;
  const OpKind pk = hb_.op(p.op).kind;
  const OpKind qk = hb_.op(q).kind;
  if (pk == OpKind::Alloc) return FindingKind::UseBeforeReady;
  if (pk == OpKind::Free || qk == OpKind::Free) return FindingKind::UseAfterFree;
  return FindingKind::DataRace;
}

void RaceChecker::report(FindingKind kind, OpRef first, std::optional<OpRef> second, ByteRange bytes, bool definite) {
  for (auto& f : findings_) {
    if (f.kind == kind && f.first == first && f.second == second && f.definite == definite) {
      add_range(f.bytes, bytes);
      return;
    }
  }
  findings_.push_back(Finding{kind, first, second, {bytes}, definite});
}

void RaceChecker::check(OpRef q, Checked& checked) {
  const OpAccess& acc = checked.access;
  const Allocation& target = pool_.allocation(acc.allocation);
  if (hb_.op(q).kind == OpKind::Kernel && target.free_op && hb_.happens_before(*target.free_op, q))
    report(FindingKind::UseAfterFree, *target.free_op, q, acc.range, true);

  shadow_.for_range(acc.range.lo, acc.range.hi, Shadow{}, [&](std::uint64_t lo, std::uint64_t hi, Shadow& sh) {
    const ByteRange seg{lo, hi};
    if (sh.last_write) {
      if (ordered(*sh.last_write, q, acc.allocation)) {
        if (reads(acc.access)) checked.expected.emplace_back(seg, record(sh.last_write->op).stamp);
      } else if (sh.last_write->op != q) {
        report(classify(*sh.last_write, q, acc.allocation), sh.last_write->op, q, seg, false);
      }
    }
    if (writes(acc.access)) {
      for (const auto& r : sh.reads)
        if (!ordered(r, q, acc.allocation)) report(classify(r, q, acc.allocation), r.op, q, seg, false);
    }
    // Reads ordered before q are subsumed by q; racing reads stay so that
    // later ops of a reused range are checked against them too.
    std::erase_if(sh.reads, [&](const ShadowAccess& r) { return ordered(r, q, acc.allocation); });
    if (writes(acc.access))
      sh.last_write = ShadowAccess{q, acc.allocation};
    else
      sh.reads.push_back(ShadowAccess{q, acc.allocation});
  });
}

void RaceChecker::executed(OpRef r) {
  const OpRecord& rec = record(r);
  for (const auto& acc : rec.accesses) {
    if (!reads(acc.access.access)) continue;
    for (const auto& expected : acc.expected) {
      const std::uint64_t stamp = expected.second;  // a named copy: clang 14 cannot capture a structured binding
      memory_.for_range(expected.first.lo, expected.first.hi, 0,
                        [&](std::uint64_t lo, std::uint64_t hi, std::uint64_t& v) {
                          if (v != stamp) mismatches_.push_back(ValueMismatch{r, ByteRange{lo, hi}, stamp, v});
                        });
    }
  }
  for (const auto& acc : rec.accesses)
    if (writes(acc.access.access))
      memory_.for_range(acc.access.range.lo, acc.access.range.hi, 0,
                        [&](std::uint64_t, std::uint64_t, std::uint64_t& v) { v = rec.stamp; });
}

std::vector<OpAccess> RaceChecker::accesses(OpRef r) const {
  std::vector<OpAccess> out;
  if (r.stream.value >= ops_.size() || r.index >= ops_[r.stream.value].size()) return out;
  for (const Checked& c : ops_[r.stream.value][r.index].accesses) out.push_back(c.access);
  return out;
}

void RaceChecker::leaked(const Allocation& a) {
  report(FindingKind::Leak, a.alloc_op, std::nullopt, ByteRange{a.range.lo, a.range.lo + a.bytes}, false);
}

}  // namespace streamcheck::sim
