// A failing stateful property shrinks to small arguments, not only to fewer
// commands (issue 9): the commands, the schedule bytes and the pool policy
// are generated values, and RapidCheck shrinks each field of each one. The
// shrink is pinned on its structure, never on its text.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <variant>

#include "props/overload.h"
#include "props/sim_protocol_property.h"

namespace streamcheck::props {
namespace {

using Case = std::pair<ClientProgram, SimRunChoices>;

/// The property's run of one generated case: the first violation, if any.
template <class Protocol>
std::optional<Violation> run(const Case& c) {
  sim::ByteChooser chooser(c.second.schedule);
  sim::DeviceModel model(chooser, sim::PoolPolicy::from_bits(c.second.policy));
  sim::SimBackend backend(model);
  Harness<sim::SimBackend, Protocol> harness(backend);
  for (const auto& op : c.first)
    if (auto v = harness.apply(op)) return v;
  return harness.finish();
}

/// Generates cases as the property does (size 50, fixed seeds) until one
/// fails, then shrinks it with RapidCheck's own findLocalMin.
template <class Protocol>
Case shrunk_counterexample() {
  const auto gen = rc::gen::pair(gen_client_program(), gen_sim_run_choices());
  rc::Random random(2026);
  for (int attempt = 0; attempt < 2000; ++attempt) {
    const auto shrinkable = gen(random.split(), 50);
    if (!run<Protocol>(shrinkable.value())) continue;
    return rc::shrinkable::findLocalMin(shrinkable, [](const Case& c) { return run<Protocol>(c).has_value(); }).first;
  }
  ADD_FAILURE() << "no failing case in 2000 generated ones";
  return {};
}

TEST(Shrink, MissingReadWaitShrinksToOneByteBlockAndZeroHandles) {
  const Case c = shrunk_counterexample<MutantSet<MutantId::M1>>();
  const auto v = run<MutantSet<MutantId::M1>>(c);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->property, Property::P1RaceFreedom) << *v;
  // The smallest race M1 allows: allocate, read it on one stream, commit,
  // write it on another.
  const ClientProgram& program = c.first;
  ASSERT_EQ(program.size(), 4u) << show(program);
  EXPECT_EQ(program[0], (ClientOp{AllocateOp{1, 0}})) << show(program);
  const auto* read = std::get_if<BeginLaunchOp>(&program[1]);
  ASSERT_NE(read, nullptr) << show(program);
  ASSERT_EQ(read->uses.size(), 1u);
  EXPECT_EQ(read->uses[0], (UseSpec{0, Access::Read}));
  EXPECT_EQ(program[2], (ClientOp{CommitOp{0}})) << show(program);
  const auto* write = std::get_if<BeginLaunchOp>(&program[3]);
  ASSERT_NE(write, nullptr) << show(program);
  ASSERT_EQ(write->uses.size(), 1u);
  EXPECT_EQ(write->uses[0].block, 0u);
  EXPECT_TRUE(writes(write->uses[0].access));
  EXPECT_NE(read->stream, write->stream);
  // The schedule and the policy shrank to their smallest values too.
  for (std::uint8_t b : c.second.schedule) EXPECT_EQ(b, 0u);
  EXPECT_EQ(c.second.policy, 0u);
}

// Shrinking stops at a local minimum, so for M10 the exact program is not
// pinned; its arguments are: 1-byte blocks, every handle 0, few ops (the
// stream may stay above s0: a fault on a wait needs a use on another one).
TEST(Shrink, FailedFreeThatForgetsTheBlockShrinksToSmallArguments) {
  const Case c = shrunk_counterexample<MutantSet<MutantId::M10>>();
  const auto v = run<MutantSet<MutantId::M10>>(c);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->property, Property::P4ErrorAtomicity) << *v;
  const ClientProgram& program = c.first;
  EXPECT_LE(program.size(), 5u) << show(program);
  for (const auto& op : program) {
    std::visit(Overload{
                   [](const AllocateOp& o) {
                     EXPECT_EQ(o.bytes, 1u);
                     EXPECT_FALSE(o.at_freed_address);
                     EXPECT_FALSE(o.fill_budget);
                   },
                   [](const BeginLaunchOp& o) {
                     for (const auto& u : o.uses) EXPECT_EQ(u.block, 0u);
                   },
                   [](const CommitOp& o) { EXPECT_EQ(o.launch, 0u); },
                   [](const DeallocateOp& o) { EXPECT_EQ(o.block, 0u); },
                   [](const auto&) {},
               },
               op);
  }
  EXPECT_TRUE(std::any_of(program.begin(), program.end(), [](const ClientOp& op) {
    return std::holds_alternative<InjectFaultOp>(op);
  })) << show(program);
}

}  // namespace
}  // namespace streamcheck::props
