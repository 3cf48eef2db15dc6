// How the harness's client reaches the resource: directly, or through one
// of the decorators, so that P1-P9 are checked through each of them too
// (RMM runs its resource tests through every adaptor the same way).
#pragma once

#include <cstddef>
#include <ostream>

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

}  // namespace streamcheck::props
