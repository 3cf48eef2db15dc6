// The race checker: every byte's last write and the reads since, checked at
// enqueue time against happens-before (P1), and the value oracle that checks,
// as ops execute in the chosen order, that every read sees the last write
// ordered before it (P2). Findings are data, never exceptions.
//
// An access races with an earlier one to the same bytes when at least one
// writes and neither is ordered before the other: by HB (HbState), or, for
// bytes a reused allocation took over, by the pool's guarantee that the range
// is handed out only after the previous occupant's free (R7's fence).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend_sim/byte_range.h"
#include "backend_sim/chunked_deque.h"
#include "backend_sim/hb_state.h"
#include "backend_sim/ids.h"
#include "backend_sim/interval_map.h"
#include "backend_sim/pool.h"
#include "backend_sim/retention.h"
#include "model/types.h"

namespace streamcheck::sim {

enum class FindingKind : std::uint8_t { DataRace, UseBeforeReady, UseAfterFree, ReuseRace, Leak };
std::string_view to_string(FindingKind k);

/// What the checker found in the program: data, never an exception.
struct Finding {
  FindingKind kind;
  OpRef first;                  // the earlier-enqueued op (or the allocation for a leak)
  std::optional<OpRef> second;  // the later-enqueued op
  /// Every byte both ops touch, as sorted disjoint ranges: two ops that
  /// overlap on several ranges (copy halves, strided accesses, two buffers)
  /// race on those ranges only, never on the bytes between them.
  std::vector<ByteRange> bytes;
  bool definite = false;  // use after free: the free is HB-before the use
};

/// A read that observed a value other than the last write HB-before it (P2).
struct ValueMismatch {
  OpRef read;
  ByteRange bytes;
  std::uint64_t expected;  // stamp of the op whose write the read must see
  std::uint64_t observed;
};

/// One access of an op: its bytes, how, and which allocation it means.
struct OpAccess {
  ByteRange range;
  Access access;
  AllocationIndex allocation;
};

class RaceChecker {
 public:
  RaceChecker(const HbState& hb, const Pool& pool) : hb_(hb), pool_(pool) {}

  /// Checks the accesses of op `q`, just enqueued (P1), and notes for each
  /// read the write it must see when it executes (P2).
  /// `changes_memory`: false for an op that is checked as a write but
  /// leaves every byte as it was (a sub-block given back to its allocator).
  void enqueued(OpRef q, std::span<const OpAccess> accesses, bool changes_memory = true);
  /// An op with one access (an allocation, a free, a give-back).
  void enqueued(OpRef q, const OpAccess& access, bool changes_memory = true) {
    enqueued(q, std::span<const OpAccess>(&access, 1), changes_memory);
  }
  /// The value oracle (P2) as op `r` executes: its reads must see the
  /// stamps noted at enqueue; its writes leave its own stamp.
  void executed(OpRef r);
  /// Off: no value oracle from now on (no stamps noted, none checked). For
  /// a run nothing asks its value mismatches of (a streamed check: reports
  /// of traces never read them; the property tests do, and keep it on).
  void set_value_oracle(bool on) { value_oracle_ = on; }
  /// Hints that op r executes soon (prefetch.h), in two steps a few ops
  /// apart, each reading what the one before brought in: where its records
  /// start (its HB record already in), then its accesses and expected stamps.
  void prefetch_starts(OpRef r) const {
    const std::uint32_t stamp = stamp_of(r);
    if (stamp > dropped_stamps_) prefetch(&starts_of(stamp));
  }
  void prefetch_records(OpRef r) const {
    const std::uint32_t stamp = stamp_of(r);
    if (stamp <= dropped_stamps_) return;
    const Starts& starts = starts_of(stamp);
    if (starts.accesses < checked_.size()) prefetch(&checked_[starts.accesses]);
    if (starts.expected >= expected_base_ && starts.expected - expected_base_ < expected_.size())
      prefetch(&expected_[starts.expected - expected_base_]);
  }
  /// An allocation never freed: a leak (a warning).
  void leaked(const Allocation& a);

  /// Each (kind, first, second, definite) at most once: report merges a
  /// repeat's bytes into the first (tools' Collector looks up only earlier
  /// runs' findings, relying on it).
  const std::vector<Finding>& findings() const { return findings_; }
  const std::vector<ValueMismatch>& value_mismatches() const { return mismatches_; }
  /// The accesses op `r` was enqueued with (none for an op never checked).
  std::vector<OpAccess> accesses(OpRef r) const;
  /// The last write enqueued to each part of `range`, in address order
  /// (nullopt where none was): whose value a device check of those bytes
  /// enqueued now reads, when nothing races with it (the debug tier's
  /// canary and poison checks, backend_sim/sim_guard_memory.h).
  std::vector<std::pair<ByteRange, std::optional<OpRef>>> last_writes(ByteRange range) const;

  // --- retention (backend_sim/retention.h)
  /// Adds the ops the checker names to `named`: its shadow's accesses, its
  /// findings' ops and its value mismatches' reads; and to
  /// `named_allocations` those it asks the pool about: its shadow's
  /// (ordered() and classify() walk their parents), in the same walk. Its
  /// records of ops name allocations too, but only as numbers nothing looks
  /// up: counting them as roots kept every allocation whose ops the pool
  /// named (the pool names the ops of those it keeps, and the checker keeps
  /// those ops' records).
  void add_named(std::vector<OpRef>& named, std::vector<AllocationIndex>& named_allocations) const;
  /// Drops the records (accesses, where they start) of the ops `r` drops,
  /// but for r.kept, once every op enqueued before them is dropped too (the
  /// records are in enqueue order); the HB state must have applied `r`
  /// first (the checker reads the stamps of its window there).
  void drop(const Retention& r);

 private:
  /// What the checker keeps of each op, access and read lives in deques,
  /// an op's parts found by position: a vector of its own per op and per
  /// read was two heap blocks an op, and the largest part of the checker's
  /// time at 1 M ops was the allocator and the fresh pages it asked for
  /// (docs/PERFORMANCE.md, "HB checking"). Deques, not vectors: they grow by
  /// small blocks the allocator reuses, never by copying all. Each record
  /// is as small as its fields allow (a 1 M-op trace keeps millions):
  /// positions are 32 bits, and a run of 2^31 ops, accesses or expected
  /// stamps is a std::length_error (position()).
  ///
  /// Where op number `stamp` (stamps are given in enqueue order, from 1)
  /// begins in checked_ and in the expected stamps; it ends where op
  /// `stamp + 1` begins, since an op's accesses and expected stamps are
  /// added at its enqueue, all together.
  struct Starts {
    std::uint32_t accesses : 31;
    /// False for an op that leaves every byte as it was (enqueued's
    /// `changes_memory`).
    std::uint32_t changes_memory : 1;
    std::uint32_t expected;
  };
  /// An access as checked_ keeps it: 20 bytes, the allocation and the
  /// access's kind in one word.
  struct StoredAccess {
    PackedByteRange range;
    std::uint32_t allocation_and_access;  // allocation index << 2 | Access
    OpAccess get() const {
      return OpAccess{range.get(), static_cast<Access>(allocation_and_access & 3),
                      AllocationIndex{allocation_and_access >> 2}};
    }
  };
  /// P2: the stamp of the write a pending read must see in `bytes`.
  struct Expected {
    PackedByteRange bytes;
    std::uint32_t stamp;  // 0: seen (no write leaves stamp 0)
  };
  struct ShadowAccess {
    OpRef op;
    AllocationIndex allocation;
  };
  struct Shadow {
    std::optional<ShadowAccess> last_write;
    std::vector<ShadowAccess> reads;  // at most one per stream, plus reads a write raced with
  };
  /// Where op `stamp`'s records end in checked_ and the expected stamps.
  struct Ends {
    std::size_t accesses;
    std::size_t expected;
  };

  /// The op's stamp: the value its writes leave in memory (its place in
  /// the enqueue order, HbState::Op::enqueued_as); 0 for an op the HB state
  /// has and this checker was never told of (a call that failed between
  /// the two). Throws std::out_of_range for an op the HB state does not have.
  std::uint32_t stamp_of(OpRef r) const {
    const std::uint32_t stamp = hb_.op(r).enqueued_as;
    return stamp <= stamps() ? stamp : 0;
  }
  /// How many ops the checker was told of (the last stamp).
  std::uint32_t stamps() const { return starts_from_ + static_cast<std::uint32_t>(starts_.size()); }
  /// Where the records of op `stamp` start; the stamp must be above
  /// dropped_stamps_.
  const Starts& starts_of(std::uint32_t stamp) const { return starts_[stamp - 1 - starts_from_]; }
  Ends ends(std::uint32_t stamp) const;
  /// P1 for one access of op `q`, a kernel or not, whose clock is
  /// `q_clock`: both are looked up once per op, not per access (the HB
  /// state does not change while q is checked).
  void check(OpRef q, bool q_is_kernel, const HbState::OpClock& q_clock, const OpAccess& acc);
  static std::uint32_t position(std::size_t size);
  /// What decides whether an earlier access is ordered before an access of
  /// op q, looked up once per access of q (not per shadow entry: the entries
  /// of a buffer many streams read are mostly unordered, and each asked the
  /// pool for q's allocation and its parents again).
  struct Orderer {
    HbState::OpClock q_clock;         // HbState::op_clock(q)
    AllocationIndex q_allocation;     // the allocation q's access means
    std::optional<OpRef> pool_fence;  // R7: the fence of the pool allocation q's bytes came from
  };
  Orderer orderer(const HbState::OpClock& q_clock, AllocationIndex q_allocation) const;
  /// Whether access `p` is ordered before the access of op q that `o`
  /// describes, or is q's own.
  bool ordered(const ShadowAccess& p, const Orderer& o) const;
  /// Whether two allocations share live bytes: the same one, or one a
  /// sub-block of the other (R10a).
  bool related(AllocationIndex a, AllocationIndex b) const { return pool_.within(a, b) || pool_.within(b, a); }
  /// R10c: `q` is the give-back of a block with record_stream streams, and
  /// `p`, a use of it, is ordered before one of their recorded points.
  bool released_before(const ShadowAccess& p, OpRef q, AllocationIndex q_allocation) const;
  FindingKind classify(const ShadowAccess& p, OpRef q, AllocationIndex q_allocation) const;
  void report(FindingKind kind, OpRef first, std::optional<OpRef> second, ByteRange bytes, bool definite);

  const HbState& hb_;
  const Pool& pool_;
  ChunkedDeque<Starts> starts_;         // [stamp - 1 - starts_from_]
  ChunkedDeque<StoredAccess> checked_;  // the held ops' accesses, in enqueue order
  /// Retention (drop()): the records of stamps 1 .. dropped_stamps_ are
  /// gone but for those kept aside (kept_accesses_); starts_ holds stamps
  /// from starts_from_ + 1 on (a multiple of its chunk size), and the
  /// positions in it are positions in checked_ as it is now.
  std::uint32_t dropped_stamps_ = 0;
  std::uint32_t starts_from_ = 0;
  std::unordered_map<std::uint32_t, std::vector<StoredAccess>> kept_accesses_;  // by stamp
  /// P2: the stamps reads not executed yet must see, from position
  /// expected_base_ on; an executed read's are marked seen (stamp 0: no
  /// write leaves it) and dropped from the front.
  ChunkedDeque<Expected> expected_;
  std::uint32_t expected_base_ = 0;
  IntervalMap<Shadow> shadow_;
  IntervalMap<std::uint64_t> memory_;  // P2: the stamp each byte holds
  std::vector<Finding> findings_;
  /// What report() merges a finding's bytes on: its kind, ops and
  /// definiteness, packed.
  struct FindingKey {
    std::uint64_t first;
    std::uint64_t second;  // packed(*second), or ~0 for none (a leak)
    FindingKind kind;
    bool definite;
    friend bool operator==(const FindingKey&, const FindingKey&) = default;
  };
  struct FindingKeyHash {
    std::size_t operator()(const FindingKey& k) const {
      return std::hash<std::uint64_t>{}(k.first * 0x9e3779b97f4a7c15ULL ^ k.second) ^
             (static_cast<std::size_t>(k.kind) << 1 | k.definite);
    }
  };
  /// The position in findings_ of each finding of the op being checked
  /// (and, once the run ends, of each leak). Every finding but a leak has
  /// the op being checked as its second, so no later op's report can merge
  /// into an earlier op's finding: the map is emptied at each enqueued op.
  /// A scan of every finding at each report made a run with a race in every
  /// iteration of a loop quadratic, and a map of every finding held 64 bytes
  /// for each (docs/PERFORMANCE.md).
  std::unordered_map<FindingKey, std::size_t, FindingKeyHash> current_finding_at_;
  std::optional<OpRef> checking_;  // the op enqueued() checks, or last checked
  std::vector<ValueMismatch> mismatches_;
  bool value_oracle_ = true;
};

}  // namespace streamcheck::sim
