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

#include "model/budget_resource.h"
#include "model/logging_resource.h"
#include "model/memory_resource.h"
#include "model/mutants.h"

namespace streamcheck::props {

/// A layer chosen at run time: generated properties and the explore job
/// draw one per run, so every property is checked through each decorator.
struct LayerChoice {
  enum class Kind : std::uint8_t {
    Direct,    // the client calls the resource itself
    Budgeted,  // a BudgetResource of `budget` bytes over it (P7 as well)
    Logged,    // a LoggingResource over it (its log is read back: P10)
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
      case LayerChoice::Kind::Direct:
        break;
    }
  }
  LayeredResource(const LayeredResource&) = delete;
  LayeredResource& operator=(const LayeredResource&) = delete;

  Result<DeviceBlock> allocate(std::size_t bytes, StreamId stream, AllocTag tag = {}) {
    return call([&](auto& r) { return r.allocate(bytes, stream, tag); });
  }
  Status deallocate(const DeviceBlock& block) {
    return call([&](auto& r) { return r.deallocate(block); });
  }
  Status prepare_block_use(BlockId id, StreamId stream, Access access) {
    return call([&](auto& r) { return r.prepare_block_use(id, stream, access); });
  }
  Status finish_block_use(BlockId id, StreamId stream, Access access) {
    return call([&](auto& r) { return r.finish_block_use(id, stream, access); });
  }
  Status record_block_use(const DeviceBlock& block, StreamId stream) {
    return call([&](auto& r) { return r.record_block_use(block, stream); });
  }
  Status reap_pending() {
    return call([&](auto& r) { return r.reap_pending(); });
  }
  bool supports_block_use_tracking() const { return inner_.supports_block_use_tracking(); }
  std::size_t bytes_outstanding() const { return inner_.bytes_outstanding(); }
  std::uint32_t device_ordinal() const { return inner_.device_ordinal(); }

  const LayerChoice& choice() const { return choice_; }
  /// The budget's limit, through a BudgetResource.
  std::optional<std::size_t> limit() const {
    if (budgeted_) return budgeted_->limit();
    return std::nullopt;
  }
  /// Through a LoggingResource, which holds its lock across each forwarded
  /// call: no other thread's call can land inside one of the client's.
  bool serialises_calls() const { return logged_.has_value(); }
  /// What the LoggingResource wrote so far ("" for the other layers).
  std::string log() const { return log_.str(); }

 private:
  template <class Call>
  auto call(Call&& fn) {
    if (budgeted_) return fn(*budgeted_);
    if (logged_) return fn(*logged_);
    return fn(inner_);
  }

  R& inner_;
  LayerChoice choice_;
  std::ostringstream log_;  // before logged_, which writes to it
  std::optional<BudgetResource<R>> budgeted_;
  std::optional<LoggingResource<R>> logged_;
};

}  // namespace streamcheck::props
