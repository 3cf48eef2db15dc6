// P1-P5, P7 and P9 on the simulated backend, for the correct protocol,
// directly and through the decorators.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <sstream>

#include "backend_sim/explorer.h"
#include "props/sim_protocol_property.h"

namespace streamcheck::props {
namespace {

// The stateful property, through a generated layer (the resource itself,
// a BudgetResource whose limit is reached, a LoggingResource). It runs the
// protocol STREAMCHECK_PROTOCOL names (the correct one when unset), so
// `STREAMCHECK_PROTOCOL=Mk ctest -L props` shows the suite kill mutant Mk.
RC_GTEST_PROP(ProtocolSim, SelectedProtocolKeepsEveryProperty, ()) {
#ifdef STREAMCHECK_CORRECT_PROTOCOL_ONLY
  // A sanitizer build (STREAMCHECK_PROTOCOL_MUTANT_TESTS=OFF) has the
  // correct protocol only: asked for a mutant, it says so and fails rather
  // than run the correct one under the mutant's name.
  if (const auto mutant = selected_protocol())
    RC_FAIL("STREAMCHECK_PROTOCOL=" + std::string(info(*mutant).name) +
            ": this build has no protocol mutants (STREAMCHECK_PROTOCOL_MUTANT_TESTS=OFF)");
  sim_protocol_property<CorrectProtocol>();
#else
  with_protocol(selected_protocol(), []<class P>() { sim_protocol_property<P>(); });
#endif
}

// The same property through the explore job's generator: many programs,
// each under several random schedules and every pool policy. A generated
// program holds no op the harness would skip: the model and the harness
// resolve handles the same way.
TEST(ProtocolSim, GeneratedProgramsUnderAllPoolPolicies) {
  rc::Random programs(2026);
  const auto generator = gen_client_program();
  for (std::uint32_t p = 0; p < 40; ++p) {
    rc::Random random = programs.split();
    const ClientProgram program = generator(random.split(), 59).value();
    // One run per pool policy (16 switch settings), each under its own
    // random schedule.
    std::uint32_t policy = 0;
    const sim::ExploreResult explored =
        sim::explore(sim::Random{random.next()}, sim::Bounds{16}, [&](sim::Chooser& chooser) {
          sim::DeviceModel model(chooser, sim::PoolPolicy::from_bits(policy++));
          sim::SimBackend backend(model);
          Harness<sim::SimBackend> harness(backend);
          for (const auto& op : program) {
            auto v = harness.apply(op);
            EXPECT_FALSE(v) << *v << "\nprogram:\n" << show(program) << "schedule: " << chooser.schedule();
            if (v) return true;
          }
          EXPECT_EQ(harness.no_ops(), 0u) << show(program);
          auto v = harness.finish();
          EXPECT_FALSE(v) << *v << "\nschedule: " << chooser.schedule();
          return v.has_value();
        });
    ASSERT_FALSE(explored.stopped_early);
    ASSERT_EQ(explored.explored, 16u);
  }
}

// A program that exercises every client op kind at least once finishes
// clean, and the harness really did the work (not a vacuous pass).
TEST(ProtocolSim, HandWrittenPipelineIsCleanAndDoesWork) {
  sim::RandomChooser chooser(7);
  sim::DeviceModel model(chooser);
  sim::SimBackend backend(model);
  Harness<sim::SimBackend> harness(backend);
  const ClientProgram program = {
      AllocateOp{256, 0},
      AllocateOp{512, 1},
      BeginLaunchOp{1, {{1, Access::Write}, {0, Access::Read}}, true},
      CommitOp{0},
      BeginLaunchOp{2, {{1, Access::Read}}, false},
      BeginLaunchOp{0, {{1, Access::Read}}, true},
      CommitOp{1},
      CommitOp{0},
      DeallocateOp{1},
      StaleUseOp{0, StaleHow::PrepareWrite},
      InjectFaultOp{0},
      ReapOp{},
      SyncStreamOp{2},
      MisuseOp{MisuseHow::UnknownStreamAllocate, 0},
  };
  for (const auto& op : program) {
    auto v = harness.apply(op);
    ASSERT_FALSE(v) << *v;
  }
  EXPECT_EQ(harness.live_count(), 1u);
  EXPECT_EQ(harness.freed_count(), 1u);
  EXPECT_EQ(harness.in_flight_count(), 0u);
  EXPECT_GE(backend.faults_fired(), 1u);
  EXPECT_GT(
      model.op_count(sim::StreamIndex{0}) + model.op_count(sim::StreamIndex{1}) + model.op_count(sim::StreamIndex{2}),
      5u);
  auto v = harness.finish();
  EXPECT_FALSE(v) << *v;
  EXPECT_EQ(harness.resource().bytes_outstanding(), 0u);
  EXPECT_EQ(backend.live_event_count(), 0u);
}

// The harness must notice a broken property: a read on s2 of a block
// written on s1 without going through the resource is a race (P1).
TEST(ProtocolSim, HarnessReportsARaceTheResourceCannotSee) {
  sim::RandomChooser chooser(1);
  sim::DeviceModel model(chooser);
  sim::SimBackend backend(model);
  Harness<sim::SimBackend> harness(backend);
  ASSERT_FALSE(harness.apply(AllocateOp{256, 0}));
  ASSERT_FALSE(harness.apply(BeginLaunchOp{1, {{0, Access::Write}}, true}));
  // In flight: the write on s1 has no use event yet. Bypass the discipline
  // by launching directly on s2.
  backend.launch(*backend.resolve_stream(StreamId{2}),
                 {KernelAccess{model.allocation_range(sim::AllocationIndex{0}).lo, 256, Access::Read, {}}},
                 "rogue read");
  auto v = harness.apply(SyncStreamOp{0});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->property, Property::P1RaceFreedom) << *v;
  ASSERT_FALSE(model.findings().empty());
  EXPECT_EQ(model.findings().front().kind, sim::FindingKind::DataRace);
}

// P2, the value oracle, on a read the race checker also flags: a write on
// s0 completes, a read on s1 is ordered after it (so it must see that
// write's stamp), and a rogue write on s2 that nothing orders lands first.
// The read sees the rogue stamp: P2 reports the wrong value, besides P1's
// race. The device steps only when a sync asks (every choice answers 0).
TEST(ProtocolSim, ValueOracleReportsTheStampARogueWriteLeft) {
  sim::ReplayChooser chooser(std::vector<std::uint32_t>{});
  sim::DeviceModel model(chooser);
  sim::SimBackend backend(model);
  Harness<sim::SimBackend> harness(backend);
  ASSERT_FALSE(harness.apply(AllocateOp{256, 0}));
  ASSERT_FALSE(harness.apply(BeginLaunchOp{0, {{0, Access::Write}}, true}));
  ASSERT_FALSE(harness.apply(CommitOp{0}));
  ASSERT_FALSE(harness.apply(SyncStreamOp{0}));
  ASSERT_FALSE(harness.apply(BeginLaunchOp{1, {{0, Access::Read}}, true}));
  backend.launch(*backend.resolve_stream(StreamId{2}),
                 {KernelAccess{model.allocation_range(sim::AllocationIndex{0}).lo, 256, Access::Write, {}}},
                 "rogue write");
  (void)harness.apply(SyncStreamOp{2});
  (void)harness.apply(SyncStreamOp{1});
  ASSERT_FALSE(model.findings().empty());
  ASSERT_EQ(model.value_mismatches().size(), 1u);
  EXPECT_NE(model.value_mismatches().front().expected, model.value_mismatches().front().observed);
}

// Through a LoggingResource, a protocol variant's log names it (`resource
// mutant M5`), so replaying the log runs the same variant.
TEST(ProtocolSim, ALoggedVariantSaysWhichVariantItIs) {
  sim::RandomChooser chooser(1);
  sim::DeviceModel model(chooser);
  sim::SimBackend backend(model);
  Harness<sim::SimBackend, MutantSet<MutantId::M5>> harness(backend, LayerChoice{LayerChoice::Kind::Logged, 0});
  EXPECT_FALSE(harness.apply(AllocateOp{256, 0}));
  EXPECT_NE(harness.front().log().find("resource mutant M5\n"), std::string::npos) << harness.front().log();
}

// A broken protocol can refuse to free a block for good (M10 drops the entry
// when the free fails); teardown must still end, and say so.
TEST(ProtocolSim, TeardownEndsWhenABlockCannotBeFreed) {
  sim::RandomChooser chooser(1);
  sim::DeviceModel model(chooser);
  sim::SimBackend backend(model);
  Harness<sim::SimBackend, MutantSet<MutantId::M10>> harness(backend);
  ASSERT_FALSE(harness.apply(AllocateOp{256, 0}));
  ASSERT_FALSE(harness.apply(InjectFaultOp{0}));
  auto v = harness.apply(DeallocateOp{0});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->property, Property::P4ErrorAtomicity) << *v;
  auto end = harness.finish();
  ASSERT_TRUE(end);
  EXPECT_EQ(harness.live_count(), 0u);
}

}  // namespace
}  // namespace streamcheck::props
