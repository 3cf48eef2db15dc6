// The debug tier (seed 002's DebugGuardResource): canaries around every
// block, poison over every freed block, and a quarantine that keeps freed
// bytes from being handed out again while a stale writer may still hit them.
// A decorator over any MemoryResource; the device work it needs (fill bytes,
// count bytes unlike a pattern) comes from a GuardMemory: real kernels on the
// GPU (backend_cuda/guard_memory.h), the race checker's shadow memory in the
// simulator (backend_sim/sim_guard_memory.h).
//
// Guarantees, in HB terms (docs/DESIGN.md §3, "The debug tier"):
//   G-canary     allocate(bytes, s) takes bytes + 2*canary from Inner and
//                hands out the middle; both canaries are filled on s as a
//                write through Inner's prepare/finish, so every later use of
//                the block, on any stream, is ordered after the fill (P-write,
//                P-finish of Inner).
//   G-check      deallocate(block) first makes the alloc stream wait for
//                every tracked use (Inner's prepare(Write): the waits of
//                P-free), then checks both canaries there: a changed byte is
//                a CanaryOverwritten finding, an out-of-bounds write by work
//                ordered before the free.
//   G-poison     then fills the block with the poison pattern, ordered after
//                every tracked use by the same waits. Nothing that can fail
//                comes after it (a failed deallocate must leave the block's
//                data as it was), so it is not finished as a tracked write:
//                the block has no uses left, and Inner frees it on the alloc
//                stream, after the poison in stream order (R1).
//   G-quarantine the inner block is not given back until the free-time check
//                has completed on the device and `quarantine_frees` later
//                deallocations have passed, by the first reap_pending()
//                after both: no allocation can be handed the bytes
//                meanwhile, so a stale write lands in poison, not in
//                another block's data.
//   G-stale      on release the poison is checked on the alloc stream, just
//                before Inner's deallocate: a changed byte is a
//                WriteAfterFree finding (work wrote the block after its free).
//   G-host       prepare/finish/deallocate naming a quarantined block is
//                refused (UseAfterFree) and reported as a HostUseAfterFree
//                finding. Any other id that is not live is refused the same
//                way, as the core refuses it (P5: a block given back to
//                Inner is as stale as one in quarantine), without a finding.
// What it cannot see: reads of a freed block (they read the poison: 0xFB
// bytes are a NaN as float, a huge value as an integer), a stale write that
// restores the poison pattern, and writes after the release (the bytes then
// belong to someone else: Inner's P-rules order those).
//
// Over an Inner that does not track uses (NonTrackingResource) the tier
// makes no prepare/finish calls into it: that resource's client orders every
// use after the allocation and before the free on the alloc stream itself,
// and the tier's fills and checks run on the alloc stream under the same
// promise.
//
// Findings are data (findings()); a call that cannot be done returns an
// error and changes nothing the caller can observe: a failed allocate gives
// the inner block back, a failed deallocate leaves the block live (it can be
// deallocated again). Quarantined blocks are given back by reap_pending()
// (and release_quarantine()); a release that fails keeps the block in
// quarantine and its error is that call's.
//
// Thread safety: every call runs under one mutex (Inner's Mutex type), held
// across the calls into Inner, as BudgetResource's allocate does.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/guarded.h"
#include "model/memory_resource.h"
#include "model/mutants.h"
#include "model/types.h"

namespace streamcheck {

/// What a device check of a byte range found: how many bytes differ from the
/// pattern and the offset of the first (into the checked range).
struct GuardOutcome {
  std::uint64_t changed_bytes = 0;
  std::uint64_t first_changed = 0;
  friend bool operator==(const GuardOutcome&, const GuardOutcome&) = default;
};

/// The device work the debug tier needs. fill(s, ptr, bytes, pattern) and
/// check(s, ptr, bytes, pattern) are device work on stream s, ordered like
/// any kernel there (R1); check's verdict is read later: outcome(probe,
/// wait) is nullopt while the check has not run (wait = false), the verdict
/// once it has (wait = true blocks the host until then).
template <class G>
concept GuardMemory = requires(G& g, StreamId s, std::uint64_t ptr, std::uint64_t bytes, std::uint8_t pattern,
                               typename G::Probe& probe) {
  typename G::Probe;
  requires std::movable<typename G::Probe>;
  { g.fill(s, ptr, bytes, pattern) } -> std::same_as<Status>;
  { g.check(s, ptr, bytes, pattern) } -> std::same_as<Result<typename G::Probe>>;
  { g.outcome(probe, true) } -> std::same_as<Result<std::optional<GuardOutcome>>>;
};

enum class GuardFindingKind : std::uint8_t {
  CanaryOverwritten,  // G-check: a byte around the block changed before its free
  WriteAfterFree,     // G-stale: a byte of the block changed while it was in quarantine
  HostUseAfterFree,   // G-host: a call named the block after its deallocate
};

constexpr std::string_view to_string(GuardFindingKind k) {
  switch (k) {
    case GuardFindingKind::CanaryOverwritten:
      return "canary overwritten";
    case GuardFindingKind::WriteAfterFree:
      return "write after free";
    case GuardFindingKind::HostUseAfterFree:
      return "host use after free";
  }
  return "?";
}

struct GuardFinding {
  GuardFindingKind kind = GuardFindingKind::CanaryOverwritten;
  Generation generation{};
  std::uint64_t ptr = 0;  // the block as it was handed out
  std::uint64_t bytes = 0;
  StreamId alloc_stream{};
  /// The first changed byte, relative to ptr: negative in the front canary,
  /// >= bytes in the back one.
  std::int64_t first_changed = 0;
  std::uint64_t changed_bytes = 0;  // in the checked range (one canary, or the block)
  std::string call;                 // HostUseAfterFree: the call that named the block

  std::string to_string() const {
    std::string s = std::string(streamcheck::to_string(kind)) + ": block b" + std::to_string(generation.value) + " (" +
                    std::to_string(bytes) + " bytes at " + std::to_string(ptr) + ", allocated on StreamId(" +
                    std::to_string(alloc_stream.value) + "))";
    if (kind == GuardFindingKind::HostUseAfterFree) return s + ": " + call + " after its deallocate";
    return s + ": " + std::to_string(changed_bytes) + " byte(s) changed, the first at offset " +
           std::to_string(first_changed);
  }
};

struct DebugGuardOptions {
  std::uint64_t canary_bytes = 64;  // on each side; a multiple of 8 keeps the block 8-byte aligned
  std::uint8_t canary = 0xCA;
  std::uint8_t poison = 0xFB;
  std::size_t quarantine_frees = 4;  // K: later deallocations a freed block waits for
};

/// The debug tier's mutants (docs/DESIGN.md §6): the property suite of
/// tests/props/test_debug_guard_sim.cpp must kill each.
enum class GuardMutant : std::uint8_t {
  None,
  GM1,  // deallocate poisons without the free's waits (no prepare(Write) first)
  GM2,  // a quarantined block is given back by the first reap (K and completion ignored)
};

template <MemoryResource Inner, GuardMemory G, GuardMutant M = GuardMutant::None>
class DebugGuardResource {
 public:
  using Mutex = typename Inner::Mutex;
  using Protocol = protocol_of_t<Inner>;

  DebugGuardResource(Inner& inner, G& guard, DebugGuardOptions options = {})
      : inner_(inner), guard_(guard), options_(options) {}
  DebugGuardResource(const DebugGuardResource&) = delete;
  DebugGuardResource& operator=(const DebugGuardResource&) = delete;

  Result<DeviceBlock> allocate(std::size_t bytes, StreamId stream, AllocTag tag = {}) {
    auto state = state_.lock();
    const std::uint64_t canary = options_.canary_bytes;
    if (bytes == 0 || bytes > std::numeric_limits<std::size_t>::max() - 2 * canary)
      return ResourceError::driver(where("allocate") + ": cannot guard a block of " + std::to_string(bytes) +
                                   " bytes (zero, or too large to add two canaries of " + std::to_string(canary) + ")");
    auto held = inner_.allocate(static_cast<std::size_t>(bytes + 2 * canary), stream, tag);
    if (!held) return held.error();
    const DeviceBlock inner_block = held.value();
    DeviceBlock outer = inner_block;
    outer.ptr = inner_block.ptr + canary;
    outer.bytes = bytes;
    // G-canary: the fill is a write through Inner, so every later use is
    // ordered after it.
    Status filled = fill_canaries(inner_block, outer);
    if (!filled) {
      auto undone = inner_.deallocate(inner_block);
      ResourceError err = filled.error();
      if (!undone) err.message += " (and giving the block back failed: " + undone.error().message + ")";
      return err;
    }
    state->live.emplace(outer.ptr, Held{inner_block, outer});
    state->live_bytes += bytes;
    return outer;
  }

  Status deallocate(const DeviceBlock& block) {
    auto state = state_.lock();
    auto it = state->live.find(block.ptr);
    if (it == state->live.end() || it->second.outer.generation != block.generation)
      return refused(*state, "deallocate", block.ptr, block.generation);
    const Held held = it->second;
    // The free runs on the stream and device the block says (as the core's
    // deallocate does): a copy claiming others is refused, not freed
    // somewhere else.
    if (block.device_ordinal != held.outer.device_ordinal)
      return ResourceError::driver(where("deallocate") + ": block device " + std::to_string(block.device_ordinal) +
                                   " != resource device " + std::to_string(held.outer.device_ordinal));
    if (block.alloc_stream != held.outer.alloc_stream)
      return ResourceError::stream_misuse(where("deallocate") + ": the block was allocated on StreamId(" +
                                          std::to_string(held.outer.alloc_stream.value) + "), not StreamId(" +
                                          std::to_string(block.alloc_stream.value) + ")");
    auto checks = free_time_work(held);
    if (!checks) return checks.error();
    state->live.erase(it);
    state->live_bytes -= held.outer.bytes;
    state->quarantined.emplace(held.outer.ptr, held.outer.generation);
    state->quarantine.push_back(Quarantined{held, std::move(checks).value(), state->frees});
    ++state->frees;
    // Older blocks are given back by reap_pending(), not here: a deallocate
    // makes no driver call but its own block's (P4: a failure fails the
    // call that made it).
    return {};
  }

  Status prepare_block_use(BlockId id, StreamId stream, Access access) {
    auto state = state_.lock();
    auto inner_id = inner_of(*state, "prepare", id);
    if (!inner_id) return inner_id.error();
    return inner_.prepare_block_use(inner_id.value(), stream, access);
  }
  Status finish_block_use(BlockId id, StreamId stream, Access access) {
    auto state = state_.lock();
    auto inner_id = inner_of(*state, "finish", id);
    if (!inner_id) return inner_id.error();
    return inner_.finish_block_use(inner_id.value(), stream, access);
  }
  Status record_block_use(const DeviceBlock& block, StreamId stream) {
    return finish_block_use(BlockId::of(block), stream, Access::Read);
  }

  /// Collects the checks that have run, gives back the quarantined blocks
  /// that are due (G-quarantine), then reaps Inner. A release that fails
  /// keeps its block, and the ones after it, in quarantine and is returned;
  /// Inner is reaped all the same.
  Status reap_pending() {
    auto state = state_.lock();
    Status released = release_due(*state, false);
    Status reaped = inner_.reap_pending();
    if (!released) return released;
    return reaped;
  }

  /// Checks and gives back every quarantined block now, then waits for every
  /// outstanding check: after it, findings() holds everything the checks
  /// saw. For the end of a run (the destructor does it too).
  Status release_quarantine() {
    auto state = state_.lock();
    if (Status released = release_due(*state, true); !released) return released;
    return collect(*state, true);
  }

  /// For an owner whose backend can run no more device work (a simulated
  /// run ended by an exception: its schedule ran out): forgets the
  /// quarantine, its checks and the unread findings without a call into the
  /// device or Inner, so that the destructor makes none either. The
  /// quarantined blocks are not given back to Inner.
  void abandon() {
    auto state = state_.lock();
    state->quarantine.clear();
    state->quarantined.clear();
    state->released_checks.clear();
    state->read_findings = state->findings.size();
  }

  /// Everything the checks that have run found so far (non-blocking).
  std::vector<GuardFinding> findings() {
    auto state = state_.lock();
    (void)collect(*state, false);
    state->read_findings = state->findings.size();
    return state->findings;
  }

  std::size_t quarantined_blocks() const { return state_.lock()->quarantine.size(); }
  /// The tier's books of what it holds from Inner, to compare with Inner's
  /// own (the property harness's P3): the blocks live or in quarantine and
  /// their bytes, canaries included.
  std::size_t held_block_count() const {
    auto state = state_.lock();
    return state->live.size() + state->quarantine.size();
  }
  std::size_t held_block_bytes() const {
    auto state = state_.lock();
    std::size_t bytes = 0;
    for (const auto& [ptr, held] : state->live) bytes += held.inner.bytes;
    for (const auto& entry : state->quarantine) bytes += entry.held.inner.bytes;
    return bytes;
  }
  std::size_t live_block_count() const { return state_.lock()->live.size(); }
  bool supports_block_use_tracking() const { return inner_.supports_block_use_tracking(); }
  /// The client's view, as every MemoryResource reports it: the bytes of
  /// the blocks handed out and not deallocated. What the tier holds from
  /// Inner (canaries and quarantine included) is held_bytes().
  std::size_t bytes_outstanding() const { return state_.lock()->live_bytes; }
  /// Inner's bytes_outstanding(): live blocks with their canaries, the
  /// quarantine, and what Inner has not reaped yet.
  std::size_t held_bytes() const { return inner_.bytes_outstanding(); }
  std::uint32_t device_ordinal() const { return inner_.device_ordinal(); }
  const DebugGuardOptions& options() const { return options_; }

  /// Hands every quarantined block back to Inner (nothing is lost), and
  /// says on stderr what no one will hear otherwise: a release that failed,
  /// and findings that findings() never returned.
  ~DebugGuardResource() {
    if (Status released = release_quarantine(); !released)
      std::cerr << "streamcheck: DebugGuardResource: giving the quarantine back failed: "
                << released.error().to_string() << "\n";
    auto state = state_.lock();
    for (std::size_t i = state->read_findings; i < state->findings.size(); ++i)
      std::cerr << "streamcheck: DebugGuardResource: a finding never read: " << state->findings[i].to_string() << "\n";
  }

 private:
  using Probe = typename G::Probe;
  struct Held {
    DeviceBlock inner;
    DeviceBlock outer;
  };
  /// One device check and whether its verdict was read (a probe is read
  /// once: the GPU's gives its result slot back then).
  struct Check {
    GuardFindingKind kind;
    DeviceBlock outer;
    std::int64_t offset;  // of the checked range, relative to outer.ptr
    Probe probe;
    bool read = false;
  };
  struct Quarantined {
    Held held;
    std::vector<Check> canary_checks;  // front, back: their completion is the free-time point
    std::size_t freed_at = 0;          // state.frees when it entered
  };
  struct State {
    std::unordered_map<std::uint64_t, Held> live;               // by the handed-out ptr
    std::unordered_map<std::uint64_t, Generation> quarantined;  // G-host
    std::deque<Quarantined> quarantine;                         // in deallocation order
    std::vector<Check> released_checks;                         // of given-back blocks, not read yet
    std::vector<GuardFinding> findings;
    std::size_t read_findings = 0;  // how many findings() returned
    std::size_t frees = 0;
    std::size_t live_bytes = 0;  // of the blocks in `live`, as handed out
  };

  static std::string where(const char* fn) { return std::string("DebugGuardResource::") + fn; }

  static ResourceError caused(const char* fn, const char* what, const ResourceError& cause) {
    return ResourceError::driver_caused_by(where(fn) + ": " + what, cause);
  }

  /// Over an Inner that does not track uses (NonTrackingResource) the tier
  /// makes no prepare/finish calls: its client orders every use after the
  /// allocation and before the free on the alloc stream itself (that
  /// resource's contract), and the tier's fills and checks run on the alloc
  /// stream, so the same promise orders them.
  bool inner_tracks() const { return inner_.supports_block_use_tracking(); }

  Status fill_canaries(const DeviceBlock& inner_block, const DeviceBlock& outer) {
    const BlockId id = BlockId::of(inner_block);
    const StreamId s = inner_block.alloc_stream;
    if (!inner_tracks()) return fill_canary_bytes(s, inner_block, outer);
    if (auto p = inner_.prepare_block_use(id, s, Access::Write); !p)
      return caused("allocate", "prepare canaries", p.error());
    if (Status filled = fill_canary_bytes(s, inner_block, outer); !filled) return filled;
    if (auto f = inner_.finish_block_use(id, s, Access::Write); !f)
      return caused("allocate", "finish canaries", f.error());
    return {};
  }

  Status fill_canary_bytes(StreamId s, const DeviceBlock& inner_block, const DeviceBlock& outer) {
    const std::uint64_t canary = options_.canary_bytes;
    if (canary > 0) {
      if (auto f = guard_.fill(s, inner_block.ptr, canary, options_.canary); !f)
        return caused("allocate", "fill front canary", f.error());
      if (auto f = guard_.fill(s, outer.ptr + outer.bytes, canary, options_.canary); !f)
        return caused("allocate", "fill back canary", f.error());
    }
    return {};
  }

  /// G-check and G-poison on the alloc stream, after the free's waits.
  /// Nothing is kept on failure: the block stays live.
  Result<std::vector<Check>> free_time_work(const Held& held) {
    const BlockId id = BlockId::of(held.inner);
    const StreamId s = held.inner.alloc_stream;
    if constexpr (M != GuardMutant::GM1) {
      if (inner_tracks())
        if (auto p = inner_.prepare_block_use(id, s, Access::Write); !p)
          return caused("deallocate", "wait for uses", p.error());
    }
    std::vector<Check> checks;
    const std::uint64_t canary = options_.canary_bytes;
    if (canary > 0) {
      const std::int64_t front = -static_cast<std::int64_t>(canary);
      const auto back = static_cast<std::int64_t>(held.outer.bytes);
      for (std::int64_t offset : {front, back}) {
        auto probe = guard_.check(s, held.outer.ptr + static_cast<std::uint64_t>(offset), canary, options_.canary);
        if (!probe) return caused("deallocate", "check canary", probe.error());
        checks.push_back(Check{GuardFindingKind::CanaryOverwritten, held.outer, offset, std::move(probe).value()});
      }
    }
    // G-poison: the last step, so that a failure before it leaves the
    // block's bytes untouched (the waits queued meanwhile only add order).
    if (auto f = guard_.fill(s, held.outer.ptr, held.outer.bytes, options_.poison); !f)
      return caused("deallocate", "poison", f.error());
    return checks;
  }

  /// A call naming a block that is not live: a use after free, as in the
  /// core (P5); a finding too when the block is in quarantine (G-host).
  ResourceError refused(State& state, const char* call, std::uint64_t ptr, Generation generation) {
    auto q = state.quarantined.find(ptr);
    if (q == state.quarantined.end() || q->second != generation) return ResourceError::use_after_free(generation);
    GuardFinding f;
    f.kind = GuardFindingKind::HostUseAfterFree;
    f.generation = generation;
    f.ptr = ptr;
    for (const auto& entry : state.quarantine)
      if (entry.held.outer.ptr == ptr) {
        f.bytes = entry.held.outer.bytes;
        f.alloc_stream = entry.held.outer.alloc_stream;
      }
    f.call = call;
    state.findings.push_back(f);
    return ResourceError::use_after_free(generation);
  }

  Result<BlockId> inner_of(State& state, const char* call, BlockId id) {
    auto it = state.live.find(id.ptr);
    if (it == state.live.end() || it->second.outer.generation != id.generation)
      return refused(state, call, id.ptr, id.generation);
    // The caller's stream and device go with it: Inner refuses a copy of
    // the block that claims others, as it would refuse the block itself.
    BlockId inner = BlockId::of(it->second.inner);
    inner.alloc_stream = id.alloc_stream;
    inner.device_ordinal = id.device_ordinal;
    return inner;
  }

  /// Reads the verdicts of the checks that have run (all of them, waiting,
  /// when `wait`) into findings.
  Status collect(State& state, bool wait) {
    Status first;
    auto read = [&](Check& check) {
      if (auto done = verdict(state, check, wait); !done && first) first = done;
    };
    for (auto& entry : state.quarantine)
      for (auto& check : entry.canary_checks) read(check);
    for (auto& check : state.released_checks) read(check);
    std::erase_if(state.released_checks, [](const Check& c) { return c.read; });
    return first;
  }

  /// Reads one check once its verdict is in; a changed byte is a finding.
  Status verdict(State& state, Check& check, bool wait) {
    if (check.read) return {};
    auto outcome = guard_.outcome(check.probe, wait);
    if (!outcome) return caused("collect", "read a guard check", outcome.error());
    if (!outcome.value()) return {};
    check.read = true;
    const GuardOutcome& o = *outcome.value();
    if (o.changed_bytes == 0) return {};
    GuardFinding f;
    f.kind = check.kind;
    f.generation = check.outer.generation;
    f.ptr = check.outer.ptr;
    f.bytes = check.outer.bytes;
    f.alloc_stream = check.outer.alloc_stream;
    f.first_changed = check.offset + static_cast<std::int64_t>(o.first_changed);
    f.changed_bytes = o.changed_bytes;
    state.findings.push_back(f);
    return {};
  }

  /// G-quarantine, G-stale: gives back the quarantined blocks whose free-time
  /// checks completed and that K later frees passed (every one, `all`).
  Status release_due(State& state, bool all) {
    if (Status seen = collect(state, false); !seen) return seen;
    while (!state.quarantine.empty()) {
      Quarantined& oldest = state.quarantine.front();
      if constexpr (M != GuardMutant::GM2) {
        if (!all) {
          if (state.frees - oldest.freed_at <= options_.quarantine_frees) break;
          bool completed = true;
          for (const auto& check : oldest.canary_checks) completed = completed && check.read;
          if (!completed) break;
        }
      }
      const Held& held = oldest.held;
      auto stale = guard_.check(held.inner.alloc_stream, held.outer.ptr, held.outer.bytes, options_.poison);
      if (!stale) return caused("release", "check poison", stale.error());
      if (auto freed = inner_.deallocate(held.inner); !freed)
        return caused("release", "give the block back", freed.error());
      state.released_checks.push_back(Check{GuardFindingKind::WriteAfterFree, held.outer, 0, std::move(stale).value()});
      for (auto& check : oldest.canary_checks)
        if (!check.read) state.released_checks.push_back(std::move(check));
      state.quarantined.erase(held.outer.ptr);
      state.quarantine.pop_front();
    }
    return {};
  }

  Inner& inner_;
  G& guard_;
  const DebugGuardOptions options_;
  Guarded<State, Mutex> state_;
};

/// The least a GuardMemory provides, declared and never defined (for the
/// concept check below).
struct GuardMemoryArchetype {
  struct Probe {
    Probe(Probe&&) noexcept;
    Probe& operator=(Probe&&) noexcept;
  };
  Status fill(StreamId, std::uint64_t, std::uint64_t, std::uint8_t);
  Result<Probe> check(StreamId, std::uint64_t, std::uint64_t, std::uint8_t);
  Result<std::optional<GuardOutcome>> outcome(Probe&, bool);
};
static_assert(GuardMemory<GuardMemoryArchetype>,
              "GuardMemoryArchetype must satisfy the streamcheck::GuardMemory concept it stands for");
static_assert(MemoryResource<DebugGuardResource<MemoryResourceArchetype, GuardMemoryArchetype>>,
              "DebugGuardResource<Inner, G> must satisfy the streamcheck::MemoryResource concept "
              "(model/memory_resource.h)");

}  // namespace streamcheck
