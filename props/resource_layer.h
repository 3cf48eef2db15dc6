// How the harness's client reaches the resource: directly, or through one
// of the decorators, so that P1-P9 are checked through each of them too
// (RMM runs its resource tests through every adaptor the same way), and
// optionally through the debug tier (DebugGuardResource) under them, where
// the harness has a guard memory for it.
//
// The layer is a run-time choice (LayerChoice) held by one front type,
// LayeredResource, not a template parameter of the harness: one harness
// instantiation per protocol serves every layer, which keeps the property
// binaries' build (16 protocols) within what CI's two cores can compile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "model/budget_resource.h"
#include "model/debug_guard.h"
#include "model/logging_resource.h"
#include "model/memory_resource.h"
#include "model/mutants.h"
#include "props/log_reader.h"

namespace streamcheck::props {

/// A layer chosen at run time: generated properties and the explore job
/// draw one per run, so every property is checked through each decorator.
struct LayerChoice {
  enum class Kind : std::uint8_t {
    Direct,          // the client calls the resource itself
    Budgeted,        // a BudgetResource of `budget` bytes over it (P7 as well)
    Logged,          // a LoggingResource over it (its log is read back: log fidelity)
    LoggedBudgeted,  // a LoggingResource over a BudgetResource of `budget` bytes over it
  };
  Kind kind = Kind::Direct;
  std::size_t budget = 0;  // the limit, for Kind::Budgeted
  /// The debug tier (DebugGuardResource) between the resource and the
  /// kind's decorators: P1-P9 are then checked through it, its own books
  /// as P3, and any finding of it as a false alarm (the client makes no
  /// out-of-bounds or stale write). Only harnesses given a guard memory.
  bool guarded = false;
  friend bool operator==(const LayerChoice&, const LayerChoice&) = default;
};

inline std::string describe(const LayerChoice& c) {
  const std::string over = c.guarded ? " over the debug tier" : "";
  switch (c.kind) {
    case LayerChoice::Kind::Direct:
      return c.guarded ? "the debug tier" : "the resource itself";
    case LayerChoice::Kind::Budgeted:
      return "a BudgetResource of " + std::to_string(c.budget) + " bytes" + over;
    case LayerChoice::Kind::Logged:
      return "a LoggingResource" + over;
    case LayerChoice::Kind::LoggedBudgeted:
      return "a LoggingResource over a BudgetResource of " + std::to_string(c.budget) + " bytes" + over;
  }
  return "?";
}

/// The one mutant protocol `P` holds, for the log's `resource` line (nullopt
/// for the correct protocol).
template <class P>
std::optional<MutantId> mutant_of() {
  for (const auto& m : kMutants)
    if (P::has(m.id)) return m.id;
  return std::nullopt;
}

/// The decorators a LayerChoice's kind puts over `Base` (built in place:
/// they hold a mutex and do not move), and the outermost of them.
template <MemoryResource Base>
class Decorators {
 public:
  Decorators(Base& base, const LayerChoice& choice, std::ostream& log, std::optional<MutantId> mutant) : base_(base) {
    switch (choice.kind) {
      case LayerChoice::Kind::Budgeted:
        budgeted_.emplace(base, choice.budget);
        break;
      case LayerChoice::Kind::Logged:
        logged_.emplace(base, log, mutant);
        break;
      case LayerChoice::Kind::LoggedBudgeted:
        budgeted_.emplace(base, choice.budget);
        logged_budget_.emplace(*budgeted_, log, mutant);
        break;
      case LayerChoice::Kind::Direct:
        break;
    }
  }
  Decorators(const Decorators&) = delete;
  Decorators& operator=(const Decorators&) = delete;

  /// Calls `fn` with the outermost layer (const where `self` is const).
  template <class Self, class Call>
  static auto outermost(Self& self, Call& fn) {
    if (self.logged_budget_) return fn(*self.logged_budget_);
    if (self.budgeted_) return fn(*self.budgeted_);
    if (self.logged_) return fn(*self.logged_);
    return fn(self.base_);
  }
  /// A kernel the client launched itself: the LoggingResource writes it.
  void note_launch(const std::string& kernel, StreamId stream,
                   const std::vector<std::pair<const DeviceBlock*, Access>>& uses) {
    if (logged_) logged_->note_launch(kernel, stream, uses);
    if (logged_budget_) logged_budget_->note_launch(kernel, stream, uses);
  }
  bool logs() const { return logged_.has_value() || logged_budget_.has_value(); }
  std::optional<std::size_t> limit() const {
    if (budgeted_) return budgeted_->limit();
    return std::nullopt;
  }
  /// What the budget counts: the bytes outstanding of the layer under it.
  std::size_t base_outstanding() const { return base_.bytes_outstanding(); }

 private:
  Base& base_;
  std::optional<BudgetResource<Base>> budgeted_;
  std::optional<LoggingResource<Base>> logged_;
  std::optional<LoggingResource<BudgetResource<Base>>> logged_budget_;
};

/// The debug tier over `R` and the decorators over it, where a guard memory
/// type `G` is given (nothing otherwise: nothing of the tier is compiled
/// into harnesses that cannot run it).
template <class R, class G, GuardMutant M>
struct TierSlots {
  using Tier = DebugGuardResource<R, G, M>;
  std::optional<Tier> tier;
  std::optional<Decorators<Tier>> over;
};
template <class R, GuardMutant M>
struct TierSlots<R, void, M> {};

/// The debug tier's figures that the harness compares with the resource
/// underneath (P3 for the tier).
struct TierBooks {
  std::size_t live_bytes = 0;      // handed out, as the client sees them
  std::size_t live_blocks = 0;     // handed out
  std::size_t held_blocks = 0;     // of the resource underneath: live or quarantined
  std::size_t held_bytes = 0;      // of those, canaries included
  std::uint64_t canary_bytes = 0;  // on each side of a block
};

/// What the client calls: resource `R` itself, or the decorator over it
/// that `choice` names, over the debug tier where `choice.guarded` (which
/// needs a guard memory of type `G`; `M`: the tier's mutant, if any). A
/// MemoryResource itself, so a LaunchRecorder takes it too.
template <MemoryResource R, class G = void, GuardMutant M = GuardMutant::None>
class LayeredResource {
 public:
  using Mutex = typename R::Mutex;
  using Protocol = protocol_of_t<R>;
  static constexpr bool kCanGuard = !std::is_void_v<G>;

  LayeredResource(R& inner, const LayerChoice& choice, G* guard_memory = nullptr) : inner_(inner), choice_(choice) {
    if (!choice.guarded) {
      plain_.emplace(inner, choice, log_, mutant_of<Protocol>());
      return;
    }
    if constexpr (kCanGuard) {
      if (!guard_memory) throw std::invalid_argument("LayeredResource: the debug tier needs a guard memory");
      DebugGuardOptions options;
      // One later free is enough to let a block go: programs of a few
      // dozen calls then give quarantined blocks back, not only hold them.
      options.quarantine_frees = 1;
      tiers_.tier.emplace(inner, *guard_memory, options);
      tiers_.over.emplace(*tiers_.tier, choice, log_, mutant_of<Protocol>());
    } else {
      throw std::invalid_argument("LayeredResource: " + describe(choice) +
                                  " asked of a harness without a guard memory for the debug tier");
    }
  }
  LayeredResource(const LayeredResource&) = delete;
  LayeredResource& operator=(const LayeredResource&) = delete;
  /// The harness reads the tier's findings itself: none is left for the
  /// tier's destructor to print, and the quarantine goes back first.
  ~LayeredResource() {
    if constexpr (kCanGuard) {
      if (tiers_.tier) {
        tiers_.over.reset();
        (void)tiers_.tier->release_quarantine();
        (void)tiers_.tier->findings();
      }
    }
  }

  Result<DeviceBlock> allocate(std::size_t bytes, StreamId stream, AllocTag tag = {}) {
    auto r = call([&](auto& res) { return res.allocate(bytes, stream, tag); });
    LoggedCall c = logged(LoggedCall::Kind::Allocate, stream, r.ok() ? r.value().generation : Generation{});
    c.bytes = bytes;
    // The tier fills the canaries as a tracked write of the block (G-canary):
    // its last write from the start.
    if (r.ok() && guarded() && inner_.supports_block_use_tracking()) uses_[r.value().generation.value].written = true;
    return noted(std::move(c), std::move(r));
  }
  Status deallocate(const DeviceBlock& block) {
    return noted(logged(LoggedCall::Kind::Deallocate, {}, block.generation),
                 call([&](auto& res) { return res.deallocate(block); }));
  }
  Status prepare_block_use(BlockId id, StreamId stream, Access access) {
    return noted(logged(LoggedCall::Kind::Prepare, stream, id.generation, access),
                 call([&](auto& res) { return res.prepare_block_use(id, stream, access); }));
  }
  Status finish_block_use(BlockId id, StreamId stream, Access access) {
    return used(id.generation, stream, access,
                noted(logged(LoggedCall::Kind::Finish, stream, id.generation, access),
                      call([&](auto& res) { return res.finish_block_use(id, stream, access); })));
  }
  Status record_block_use(const DeviceBlock& block, StreamId stream) {
    return used(block.generation, stream, Access::Read,
                noted(logged(LoggedCall::Kind::Record, stream, block.generation),
                      call([&](auto& res) { return res.record_block_use(block, stream); })));
  }
  Status reap_pending() {
    return noted(logged(LoggedCall::Kind::Reap), call([&](auto& res) { return res.reap_pending(); }));
  }
  /// A kernel the client launched itself: the LoggingResource writes it as
  /// a `launch` line; the other layers have nothing to do.
  void note_launch(const std::string& kernel, StreamId stream,
                   const std::vector<std::pair<const DeviceBlock*, Access>>& uses) {
    decorators([&](auto& d) { d.note_launch(kernel, stream, uses); });
    if (!serialises_calls()) return;
    LoggedCall c = logged(LoggedCall::Kind::Launch, stream);
    c.kernel = kernel;
    for (const auto& [block, access] : uses)
      c.uses.emplace_back(block ? std::optional(block->generation) : std::nullopt, access);
    journal_.push_back(std::move(c));
  }
  bool supports_block_use_tracking() const {
    return call([](const auto& res) { return res.supports_block_use_tracking(); });
  }
  std::size_t bytes_outstanding() const {
    return call([](const auto& res) { return res.bytes_outstanding(); });
  }
  std::uint32_t device_ordinal() const {
    return call([](const auto& res) { return res.device_ordinal(); });
  }

  const LayerChoice& choice() const { return choice_; }
  /// The budget's limit, through a BudgetResource.
  std::optional<std::size_t> limit() const {
    return decorators([](const auto& d) { return d.limit(); });
  }
  /// What the budget counts against its limit: the bytes outstanding of the
  /// layer under it (the resource's, or the debug tier's, which counts the
  /// blocks handed out and not its quarantine).
  std::size_t budgeted_bytes() const {
    return decorators([](const auto& d) { return d.base_outstanding(); });
  }
  /// Through a LoggingResource, which holds its lock across each forwarded
  /// call: no other thread's call can land inside one of the client's.
  bool serialises_calls() const {
    return decorators([](const auto& d) { return d.logs(); });
  }
  /// Through the debug tier, which holds its lock across the calls it makes
  /// into the resource: no other thread's call can land inside one of them.
  bool guarded() const { return choice_.guarded; }
  /// The address the backend handed out for `block`: the debug tier hands
  /// out the middle of its block, past the front canary.
  std::uint64_t backend_address(const DeviceBlock& block) const {
    if constexpr (kCanGuard) {
      if (tiers_.tier) return block.ptr - tiers_.tier->options().canary_bytes;
    }
    return block.ptr;
  }
  /// The debug tier's books (nullopt without it).
  std::optional<TierBooks> tier_books() const {
    if constexpr (kCanGuard) {
      if (const auto& t = tiers_.tier)
        return TierBooks{t->bytes_outstanding(), t->live_block_count(), t->held_block_count(), t->held_block_bytes(),
                         t->options().canary_bytes};
    }
    return std::nullopt;
  }
  /// What the debug tier's checks found so far (nothing without it).
  std::vector<GuardFinding> tier_findings() {
    if constexpr (kCanGuard) {
      if (tiers_.tier) return tiers_.tier->findings();
    }
    return {};
  }
  /// Gives back the debug tier's quarantine and waits for its checks (the
  /// end of a run); nothing to do without it.
  Status release_quarantine() {
    if constexpr (kCanGuard) {
      if (tiers_.tier) return tiers_.tier->release_quarantine();
    }
    return {};
  }
  /// What the LoggingResource wrote so far ("" for the other layers).
  std::string log() const { return log_.str(); }
  /// The calls made through the LoggingResource, with their outcomes
  /// (empty for the other layers): what its log must say.
  const std::vector<LoggedCall>& journal() const { return journal_; }
  /// How many streams read the block of generation `g` since its last
  /// write, by the successful finish and record calls made through this
  /// layer: with its last write, the use events the resource must hold for
  /// it (R1+R2 read subsumption; the economy check).
  std::size_t readers_since_last_write(Generation g) const {
    auto it = uses_.find(g.value);
    return it == uses_.end() ? 0 : it->second.readers.size();
  }
  /// Whether the block of generation `g` has a last_write event by the
  /// successful calls made through this layer: a finished write (before
  /// one it has none: P-alloc records no event that the block keeps).
  bool has_last_write(Generation g) const {
    auto it = uses_.find(g.value);
    return it != uses_.end() && it->second.written;
  }

 private:
  static LoggedCall logged(LoggedCall::Kind kind, StreamId stream = {}, Generation generation = {},
                           Access access = Access::Read) {
    LoggedCall c;
    c.kind = kind;
    c.stream = stream;
    c.generation = generation;
    c.access = access;
    return c;
  }

  /// Notes a successful use: a write ends every earlier read, a read adds
  /// its stream.
  Status used(Generation g, StreamId stream, Access access, Status status) {
    if (!status.ok()) return status;
    UsesSinceWrite& uses = uses_[g.value];
    if (access == Access::Read) {
      uses.readers.insert(stream.value);
    } else {
      uses.readers.clear();
      uses.written = true;
    }
    return status;
  }

  /// Notes a call made through the LoggingResource and what it returned.
  template <class R2>
  R2 noted(LoggedCall c, R2 result) {
    if (!serialises_calls()) return result;
    if (!result.ok()) c.error = result.error().to_string();
    journal_.push_back(std::move(c));
    return result;
  }

  /// Calls `fn` with the decorators in use (const where this is const).
  template <class Fn>
  auto decorators(Fn&& fn) {
    if constexpr (kCanGuard)
      if (tiers_.over) return fn(*tiers_.over);
    return fn(*plain_);
  }
  template <class Fn>
  auto decorators(Fn&& fn) const {
    if constexpr (kCanGuard)
      if (tiers_.over) return fn(std::as_const(*tiers_.over));
    return fn(std::as_const(*plain_));
  }
  /// Calls `fn` with the outermost layer (const where this is const).
  template <class Call>
  auto call(Call&& fn) {
    return decorators([&](auto& d) { return std::remove_cvref_t<decltype(d)>::outermost(d, fn); });
  }
  template <class Call>
  auto call(Call&& fn) const {
    return decorators([&](const auto& d) { return std::remove_cvref_t<decltype(d)>::outermost(d, fn); });
  }

  R& inner_;
  LayerChoice choice_;
  std::ostringstream log_;  // before the decorators, which write to it
  std::optional<Decorators<R>> plain_;
  TierSlots<R, G, M> tiers_;
  std::vector<LoggedCall> journal_;
  /// What the successful calls did to one block since its last write.
  struct UsesSinceWrite {
    bool written = false;             // it has a last_write
    std::set<std::uint32_t> readers;  // streams that read it since
  };
  std::map<std::uint64_t, UsesSinceWrite> uses_;  // by generation
};

}  // namespace streamcheck::props
