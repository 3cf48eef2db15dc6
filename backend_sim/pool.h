// The simulated stream-ordered pool (R7): where an allocation goes. It keeps
// the allocations, the freed ranges waiting for reuse, the ranges released
// back past the release threshold, and the bump pointer for fresh memory.
//
//   R7 pool - alloc and free are ops on their stream writing the whole
//             range; reuse of a freed range is a choice point, allowed per
//             PoolPolicy (see ReuseKind and Pool::place). The pool
//             guarantees that a reused range is handed out only after the
//             previous occupant's free: the free is the new allocation's
//             fence (RaceChecker uses it), and an internal dependency is an
//             execution edge that user code must not rely on.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend_sim/byte_range.h"
#include "backend_sim/free_ranges.h"
#include "backend_sim/hb_state.h"
#include "backend_sim/ids.h"
#include "backend_sim/interval_map.h"
#include "backend_sim/schedule.h"
#include "model/pool_policy.h"

namespace streamcheck::sim {

/// The pool's reuse switches are shared with the GPU backend (model/pool_policy.h).
using PoolPolicy = streamcheck::PoolPolicy;

/// How an allocation got its range.
enum class ReuseKind : std::uint8_t {
  Fresh,               // never handed out, or released back
  SameStream,          // freed on the allocating stream (always allowed)
  HostSynced,          // the free is HB-before the host (always allowed)
  EventDependency,     // the free is HB-before the allocation via events
  Opportunistic,       // the free already executed; adds no HB edge
  InternalDependency,  // the pool inserts a free -> alloc wait
  SubAllocated,        // bytes of a parent allocation, handed out by a user-space allocator (R10a)
  HostMemory,          // host memory (malloc, cudaMallocHost): its own addresses, never reused (R12a)
};
std::string_view to_string(ReuseKind k);

struct Allocation {
  ByteRange range;      // rounded range owned by this allocation
  std::uint64_t bytes;  // requested bytes
  StreamIndex stream;
  OpRef alloc_op;
  std::optional<OpRef> free_op;
  std::optional<OpRef> fence;  // free of the previous occupant (pool order)
  ReuseKind reuse;
  /// R10a: the allocation whose bytes a user-space allocator handed out as
  /// this block (nullopt: the pool's own allocation).
  std::optional<AllocationIndex> parent;
  /// R10c: the last op of each `record_stream` stream when the block was
  /// given back; an op ordered before one of them is ordered before the
  /// block's free (the allocator hands the bytes out only once they ran).
  std::vector<OpRef> released_after;
  /// The free the pool made this allocation wait for (InternalDependency).
  std::optional<OpRef> pool_dep() const { return reuse == ReuseKind::InternalDependency ? fence : std::nullopt; }
};

class Pool {
 public:
  explicit Pool(PoolPolicy policy);

  /// Chooses where `bytes` on `stream` go (a choice point among fresh memory
  /// and the allowed reuses) and takes the range; nullopt when out of memory.
  /// Its alloc_op is set by set_alloc_op() once the alloc is enqueued.
  /// `preferred`: when a reuse the policy allows starts at this address, it
  /// is taken without asking the chooser (a test forcing address reuse).
  /// `may_complete_frees` (DeviceProgress::OnObservation): a free that has
  /// not run yet is an opportunistic candidate too, besides an internal
  /// dependency; the caller then runs it (the reuse observed it done).
  std::optional<AllocationIndex> place(StreamIndex stream, std::uint64_t bytes, const HbState& hb, Chooser& chooser,
                                       std::optional<std::uint64_t> preferred = std::nullopt,
                                       bool may_complete_frees = false);
  void set_alloc_op(AllocationIndex a, OpRef op) { at(a).alloc_op = op; }
  /// The live allocation that starts at ptr; nullopt when there is none.
  std::optional<AllocationIndex> live_at(std::uint64_t ptr) const;
  /// The newest allocation whose range holds ptr; throws when none does.
  AllocationIndex containing(std::uint64_t ptr) const;
  /// Records the free op; its range becomes a reuse candidate.
  void freed(AllocationIndex a, OpRef free_op);
  /// R10a: a user-space allocator's block, bytes `block` of live allocation
  /// `parent` (the pool neither chooses nor reuses them); its alloc_op is
  /// set by set_alloc_op().
  AllocationIndex sub_allocated(AllocationIndex parent, ByteRange block, std::uint64_t bytes, StreamIndex stream);
  /// R10b/R10c: the block given back by its allocator (never a pool reuse
  /// candidate: the allocator hands its bytes out again itself).
  void sub_freed(AllocationIndex a, OpRef free_op, std::vector<OpRef> released_after);
  /// R12a: host memory (pageable or pinned) of `bytes` for the host thread
  /// whose host stream is `stream`: addresses of their own, above every
  /// device address, never handed out again; its alloc_op is set by
  /// set_alloc_op().
  AllocationIndex host_allocated(std::uint64_t bytes, StreamIndex stream);
  /// R12a: host memory given back (free, cudaFreeHost): never a reuse
  /// candidate.
  void host_freed(AllocationIndex a, OpRef free_op);
  /// Whether `a` is `b` or one of `b`'s sub-blocks, at any depth (R10a).
  bool within(AllocationIndex a, AllocationIndex b) const;
  /// Releases freed ranges that are idle (executed and host-synced) once
  /// more than the release threshold of them is held.
  void release_idle_ranges(const HbState& hb);

  // --- retention (retention.h)
  /// Adds the ops the pool names to `named`: every held allocation's
  /// fence and release points, its free once freed (its alloc while live:
  /// nothing asks a freed one's alloc op, but explain_schedule of a whole
  /// run), and each freed range's free.
  void add_named(std::vector<OpRef>& named) const;
  /// Drops the record of every allocation but those something may still
  /// ask about: the live ones, `named` (what the caller's parts hold: the
  /// checker's shadow, the names a trace binds), the newest allocation
  /// over each byte (containing()'s answers), and the parents of all
  /// these (within()). A freed allocation nothing names is never asked
  /// about again: its bytes are reached through the newest one over them.
  /// Returns how many records it walked, for the caller's pacing. Asking
  /// for a dropped allocation afterwards is a std::logic_error, never a
  /// wrong answer.
  std::size_t drop_unnamed(std::vector<AllocationIndex> named);
  /// How many allocations' records drop_unnamed() let go.
  std::uint32_t dropped_count() const { return held_from_ - static_cast<std::uint32_t>(kept_.size()); }

  /// How many allocations the run made (dropped ones included).
  std::uint32_t count() const { return held_from_ + static_cast<std::uint32_t>(held_.size()); }
  /// Allocation `a`'s record; std::out_of_range for one never made,
  /// std::logic_error for one drop_unnamed() let go.
  const Allocation& allocation(AllocationIndex a) const {
    if (a.value >= held_from_) return held_.at(a.value - held_from_);
    // The kept ones a check asks for again and again (a streamed check's
    // live buffers, its segment and blocks: several times an access) are
    // found in line, in a direct-mapped cache of kept_'s records.
    const KeptSlot& slot = kept_cache_[a.value % kKeptCache];
    if (slot.index == a.value) return *slot.record;
    return kept(a);
  }
  /// Every allocation in index order; std::logic_error once drop_unnamed()
  /// let one go (a long run's caller visits the held ones instead).
  const std::vector<Allocation>& allocations() const;
  /// Calls fn(index, allocation) for every allocation whose record is
  /// held, in index order.
  template <class Fn>
  void visit_held(Fn&& fn) const {
    for (std::size_t i = 0; i < kept_.size(); ++i) fn(AllocationIndex{kept_indexes_[i]}, kept_[i]);
    for (std::size_t i = 0; i < held_.size(); ++i)
      fn(AllocationIndex{held_from_ + static_cast<std::uint32_t>(i)}, held_[i]);
  }
  const PoolPolicy& policy() const { return policy_; }
  /// place() asks offered() of every range, never the tree's counts: the
  /// plain scan that tests compare the counted candidates with.
  void scan_every_range() { scan_every_range_ = true; }

 private:
  /// The reuses range `fr` offers an allocation on `stream` whose clock is
  /// `at` (R7, in order of preference): none, one, or, for a free that has
  /// not run, an opportunistic reuse and an internal dependency.
  struct Offer {
    std::array<ReuseKind, 2> kinds{};
    std::uint8_t count = 0;
  };
  Offer offered(const FreeRange& fr, StreamIndex stream, const VectorClock& at, const HbState& hb,
                bool may_complete_frees) const;
  /// Whether every held range offers exactly one reuse to an allocation on
  /// `stream` at clock `at`. place() then counts the ranges that fit and
  /// finds the one picked in free_ranges_'s tree, instead of asking
  /// offered() of every range (the ranges a loop on one stream leaves, or
  /// any whose frees have run under AtOnce).
  bool every_range_offers_one(StreamIndex stream, const VectorClock& at, const HbState& hb,
                              bool may_complete_frees) const;

  /// Every allocation goes through here, so that the two indexes below
  /// hold it.
  AllocationIndex added(const Allocation& a);
  /// `a` is no longer live (freed): live_at no longer answers it.
  void forget_live(AllocationIndex a);
  Allocation& at(AllocationIndex a) { return const_cast<Allocation&>(allocation(a)); }
  /// allocation() below held_from_: a search of the kept indexes.
  const Allocation& kept(AllocationIndex a) const;

  PoolPolicy policy_;
  /// The records of allocations held_from_ on, in index order; those
  /// below it that drop_unnamed() kept are in kept_, their indexes in
  /// kept_indexes_, ascending (a long run keeps few: the live ones and the
  /// ones something names). The indexes apart: a search of them reads a
  /// few cache lines, where one of the records read one per step, and the
  /// blocks a streamed check's every access asks for (a segment, its
  /// sub-blocks) are kept ones (perf: 7 % of a check in the search).
  std::vector<Allocation> held_;
  std::uint32_t held_from_ = 0;
  std::vector<std::uint32_t> kept_indexes_;
  /// kept()'s last answers, by index modulo kKeptCache; emptied when kept_
  /// changes (drop_unnamed). Filled by a const lookup: a run that keeps
  /// records is one host thread's (retain_only_named: a streamed check).
  struct KeptSlot {
    std::uint32_t index = std::numeric_limits<std::uint32_t>::max();  // no allocation's
    const Allocation* record = nullptr;
  };
  static constexpr std::size_t kKeptCache = 64;
  mutable std::array<KeptSlot, kKeptCache> kept_cache_{};
  std::vector<Allocation> kept_;
  /// containing()'s answer for every byte an allocation ever held: the
  /// newest allocation over it (a reuse or a sub-block takes over its
  /// bytes). A scan of every allocation made in the run, newest first, was
  /// the pool's answer before: a launch that names no allocation cost as
  /// much as the run had allocations (docs/PERFORMANCE.md).
  IntervalMap<std::uint32_t> newest_;
  /// live_at()'s answer: each live pool or host allocation by its start
  /// (never a sub-block). Live ones do not overlap, so one starts at each
  /// address at most.
  std::unordered_map<std::uint64_t, std::uint32_t> live_starts_;
  FreeRanges free_ranges_;
  /// By stream: 1 + the index of the newest free whose range went into
  /// free_ranges_ (0: none yet), for every_range_offers_one().
  std::vector<std::uint32_t> newest_free_;
  bool scan_every_range_ = false;
  std::vector<ByteRange> released_;
  std::uint64_t bump_;
  std::uint64_t host_bump_;  // R12a: the next host address
};

}  // namespace streamcheck::sim
