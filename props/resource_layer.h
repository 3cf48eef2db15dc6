// How the harness's client reaches the resource: directly, or through one
// of the decorators, so that P1-P9 are checked through each of them too
// (RMM runs its resource tests through every adaptor the same way).
//
// The layer is a run-time choice (LayerChoice) held by one front type,
// LayeredResource, not a template parameter of the harness: one harness
// instantiation per protocol serves every layer, which keeps the property
// binaries' build (16 protocols) within what CI's two cores can compile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "model/budget_resource.h"
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
  friend bool operator==(const LayerChoice&, const LayerChoice&) = default;
};

inline std::string describe(const LayerChoice& c) {
  switch (c.kind) {
    case LayerChoice::Kind::Direct:
      return "the resource itself";
    case LayerChoice::Kind::Budgeted:
      return "a BudgetResource of " + std::to_string(c.budget) + " bytes";
    case LayerChoice::Kind::Logged:
      return "a LoggingResource";
    case LayerChoice::Kind::LoggedBudgeted:
      return "a LoggingResource over a BudgetResource of " + std::to_string(c.budget) + " bytes";
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

/// What the client calls: resource `R` itself, or the decorator over it
/// that `choice` names (built in place: the decorators hold a mutex and do
/// not move). A MemoryResource itself, so a LaunchRecorder takes it too.
template <MemoryResource R>
class LayeredResource {
 public:
  using Mutex = typename R::Mutex;
  using Protocol = protocol_of_t<R>;

  LayeredResource(R& inner, const LayerChoice& choice) : inner_(inner), choice_(choice) {
    switch (choice.kind) {
      case LayerChoice::Kind::Budgeted:
        budgeted_.emplace(inner, choice.budget);
        break;
      case LayerChoice::Kind::Logged:
        logged_.emplace(inner, log_, mutant_of<Protocol>());
        break;
      case LayerChoice::Kind::LoggedBudgeted:
        budgeted_.emplace(inner, choice.budget);
        logged_budget_.emplace(*budgeted_, log_, mutant_of<Protocol>());
        break;
      case LayerChoice::Kind::Direct:
        break;
    }
  }
  LayeredResource(const LayeredResource&) = delete;
  LayeredResource& operator=(const LayeredResource&) = delete;

  Result<DeviceBlock> allocate(std::size_t bytes, StreamId stream, AllocTag tag = {}) {
    auto r = call([&](auto& res) { return res.allocate(bytes, stream, tag); });
    LoggedCall c = logged(LoggedCall::Kind::Allocate, stream, r.ok() ? r.value().generation : Generation{});
    c.bytes = bytes;
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
    if (logged_) logged_->note_launch(kernel, stream, uses);
    if (logged_budget_) logged_budget_->note_launch(kernel, stream, uses);
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
    if (budgeted_) return budgeted_->limit();
    return std::nullopt;
  }
  /// Through a LoggingResource, which holds its lock across each forwarded
  /// call: no other thread's call can land inside one of the client's.
  bool serialises_calls() const { return logged_.has_value() || logged_budget_.has_value(); }
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

  /// Calls `fn` with the outermost layer (const where this is const).
  template <class Call>
  auto call(Call&& fn) {
    return outermost(*this, fn);
  }
  template <class Call>
  auto call(Call&& fn) const {
    return outermost(*this, fn);
  }
  template <class Self, class Call>
  static auto outermost(Self& self, Call& fn) {
    if (self.logged_budget_) return fn(*self.logged_budget_);
    if (self.budgeted_) return fn(*self.budgeted_);
    if (self.logged_) return fn(*self.logged_);
    return fn(self.inner_);
  }

  R& inner_;
  LayerChoice choice_;
  std::ostringstream log_;  // before logged_, which writes to it
  std::optional<BudgetResource<R>> budgeted_;
  std::optional<LoggingResource<R>> logged_;
  std::optional<LoggingResource<BudgetResource<R>>> logged_budget_;
  std::vector<LoggedCall> journal_;
  /// What the successful calls did to one block since its last write.
  struct UsesSinceWrite {
    bool written = false;             // it has a last_write
    std::set<std::uint32_t> readers;  // streams that read it since
  };
  std::map<std::uint64_t, UsesSinceWrite> uses_;  // by generation
};

}  // namespace streamcheck::props
