// How the harness's client reaches the resource: directly, or through one
// of the decorators, so that P1-P9 are checked through each of them too
// (RMM runs its resource tests through every adaptor the same way).
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <sstream>
#include <string>

#include "model/budget_resource.h"
#include "model/logging_resource.h"

namespace streamcheck::props {

/// The client calls the resource itself.
struct Direct {};
/// The client calls a BudgetResource over it (P7 is checked as well).
struct Budgeted {
  std::size_t limit;
};
/// The client calls a LoggingResource over it, which writes to `out`.
struct Logged {
  std::ostream* out;
};

/// `type` is what the client calls for layer `L` over resource `R`; `make`
/// builds it (in place: the decorators hold a mutex and do not move).
template <class R, class L>
struct Layered;

template <class R>
struct Layered<R, Direct> {
  using type = R&;
  static R& make(R& inner, const Direct&) { return inner; }
};

template <class R>
struct Layered<R, Budgeted> {
  using type = BudgetResource<R>;
  static type make(R& inner, const Budgeted& b) { return type(inner, b.limit); }
};

template <class R>
struct Layered<R, Logged> {
  using type = LoggingResource<R>;
  static type make(R& inner, const Logged& l) { return type(inner, *l.out); }
};

/// A layer chosen at run time: generated properties and the explore job
/// draw one per run, so every property is checked through each decorator.
struct LayerChoice {
  enum class Kind : std::uint8_t { Direct, Budgeted, Logged };
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

/// Calls `fn(layer)` with the layer value `c` names (Direct, Budgeted or
/// Logged; a Logged layer writes to a stream that lives during the call).
template <class Fn>
decltype(auto) with_layer(const LayerChoice& c, Fn&& fn) {
  switch (c.kind) {
    case LayerChoice::Kind::Budgeted:
      return fn(Budgeted{c.budget});
    case LayerChoice::Kind::Logged: {
      std::ostringstream log;
      return fn(Logged{&log});
    }
    case LayerChoice::Kind::Direct:
      break;
  }
  return fn(Direct{});
}

}  // namespace streamcheck::props
