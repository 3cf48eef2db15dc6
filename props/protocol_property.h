// The resource protocol as a RapidCheck stateful property (P1-P5, P9),
// written once over the backend: the simulator instantiates it here, the
// GPU validator instantiates it again with its own harness fixture.
//
// Each command wraps one ClientOp; its arguments come from a generated seed
// (shrinkable), it refers to blocks and launches by relative handles, and
// `show` prints the op so a counterexample reads like a program.
#pragma once

#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <cstdint>
#include <ostream>
#include <vector>

#include "backend_sim/sim_backend.h"
#include "props/client_program.h"
#include "props/harness.h"

namespace streamcheck::props {

/// The pure model: how many ops ran. The harness carries the real checks,
/// because relative handles resolve against the system's own state.
struct RcModel {
  std::size_t ops = 0;
};

template <class H, OpKind K>
struct OpCommand final : rc::state::Command<RcModel, H> {
  ClientOp op;

  OpCommand() {
    sim::SplitMix64 rng(*rc::gen::arbitrary<std::uint64_t>());
    op = make_op(K, rng);
  }
  explicit OpCommand(const RcModel&) : OpCommand() {}

  void apply(RcModel& m) const override { ++m.ops; }
  void run(const RcModel&, H& harness) const override {
    if (auto violation = harness.apply(op)) RC_FAIL(*violation);
  }
  void show(std::ostream& os) const override { os << props::show(op); }
};

/// Commands weighted like random_program: launches and commits dominate.
template <class H>
auto client_commands() {
  return rc::state::gen::execOneOfWithArgs<
      OpCommand<H, OpKind::Allocate>, OpCommand<H, OpKind::Allocate>, OpCommand<H, OpKind::BeginLaunch>,
      OpCommand<H, OpKind::BeginLaunch>, OpCommand<H, OpKind::BeginLaunch>, OpCommand<H, OpKind::Commit>,
      OpCommand<H, OpKind::Commit>, OpCommand<H, OpKind::Commit>, OpCommand<H, OpKind::Deallocate>,
      OpCommand<H, OpKind::Deallocate>, OpCommand<H, OpKind::Reap>, OpCommand<H, OpKind::SyncStream>,
      OpCommand<H, OpKind::StaleUse>, OpCommand<H, OpKind::InjectFault>, OpCommand<H, OpKind::Misuse>>();
}

/// Runs generated commands on `harness`, then its teardown checks.
template <class H>
void check_protocol(H& harness) {
  rc::state::check(RcModel{}, harness, client_commands<H>());
  if (auto violation = harness.finish()) RC_FAIL(*violation);
}

/// The property on the simulator: the schedule (device steps, pool choices)
/// and the pool policy are generated, shrinkable values too.
template <class Protocol>
void sim_protocol_property() {
  const auto schedule = *rc::gen::container<std::vector<std::uint8_t>>(rc::gen::arbitrary<std::uint8_t>());
  const auto policy = *rc::gen::inRange<std::uint32_t>(0, 16);
  sim::ByteChooser chooser(schedule);
  sim::DeviceModel model(chooser, sim::PoolPolicy::from_bits(policy));
  sim::SimBackend backend(model);
  Harness<sim::SimBackend, Protocol> harness(backend);
  check_protocol(harness);
}

}  // namespace streamcheck::props
