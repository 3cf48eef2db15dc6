// The resource protocol as a RapidCheck stateful property (P1-P5, P7, P9),
// written once over the harness, whatever its backend: the simulator's
// instance is in sim_protocol_property.h, the GPU tests make their own.
//
// The model (ProtocolModel) holds the client's real state: live and freed
// blocks and the launches in flight. Commands draw their handles from it,
// checkPreconditions discards the ones that would do nothing, and `show`
// prints the op so a counterexample reads like a program.
#pragma once

#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include "props/client_gen.h"
#include "props/harness.h"
#include "props/protocol_model.h"

namespace streamcheck::props {

/// Runs generated commands on `harness` (op kinds drawn from a generated
/// swarm mask), then its teardown checks.
template <class H>
void check_protocol(H& harness) {
  const ProtocolModel::OpKindMask enabled = *gen_swarm();
  rc::state::check(ProtocolModel{enabled}, harness, [](const ProtocolModel& m) { return gen_client_command<H>(m); });
  if (auto violation = harness.finish()) RC_FAIL(to_string(*violation));
}

}  // namespace streamcheck::props
