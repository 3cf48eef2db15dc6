// DebugGuardResource (model/debug_guard.h) on the simulated backend: its
// rules one by one (G-canary ... G-host), generated multi-stream programs
// in which every out-of-bounds and stale write the program makes is found
// and nothing else is (and the simulator finds no race in the tier's own
// device work), small programs explored exhaustively, and the mutants GM1,
// GM2, each of which some property here must kill.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "backend_sim/explain.h"
#include "backend_sim/sim_backend.h"
#include "backend_sim/sim_guard_memory.h"
#include "model/debug_guard.h"
#include "model/resource.h"
#include "props/protocol_property.h"
#include "props/sim_protocol_property.h"
#include "tests/props/every_policy.h"

namespace streamcheck {
namespace {

using sim::SimBackend;
using sim::SimGuardMemory;

/// One step of a client program. Blocks and streams are picked modulo what
/// exists, so every generated program is valid.
struct GuardStep {
  enum class Kind : std::uint8_t { Allocate, Use, Deallocate, Reap, OutOfBounds, StaleWrite };
  Kind kind = Kind::Allocate;
  std::uint32_t pick = 0;    // a block
  std::uint32_t stream = 0;  // a stream
  std::uint32_t bytes = 1;   // Allocate: size; OutOfBounds: overhang (negative side when `front`)
  Access access = Access::Read;
  bool front = false;  // OutOfBounds: before the block, not past it; StaleWrite: after a reap
};

std::string show(const std::vector<GuardStep>& steps) {
  std::string s;
  for (const auto& st : steps)
    s += "  kind " + std::to_string(static_cast<int>(st.kind)) + " pick " + std::to_string(st.pick) + " stream " +
         std::to_string(st.stream) + " bytes " + std::to_string(st.bytes) + " access " +
         std::string(to_string(st.access)) + (st.front ? " front" : "") + "\n";
  return s;
}

/// What a finding says that a test can predict.
using Expected = std::tuple<GuardFindingKind, std::uint64_t /*generation*/, std::int64_t, std::uint64_t>;

Expected key(const GuardFinding& f) { return {f.kind, f.generation.value, f.first_changed, f.changed_bytes}; }

constexpr std::uint32_t kStreams = 3;

/// Runs `steps` through DebugGuardResource<Resource<SimBackend>> and returns
/// what is wrong: a simulator finding (a race, a use after free the tier let
/// through), a guard finding that the program's planted bugs do not explain
/// or a planted bug not found, or wrong accounting. nullopt: all as it must be.
template <GuardMutant M>
std::optional<std::string> run_guarded(const std::vector<GuardStep>& steps, sim::Chooser& chooser, std::uint32_t policy,
                                       std::size_t quarantine_frees,
                                       sim::DeviceProgress progress = sim::DeviceProgress::EveryStep) {
  sim::DeviceModel model(chooser, sim::PoolPolicy::from_bits(policy), progress);
  SimBackend backend(model);
  Resource<SimBackend> resource(backend);
  SimGuardMemory memory(backend);
  DebugGuardOptions options;
  options.quarantine_frees = quarantine_frees;
  std::optional<DebugGuardResource<Resource<SimBackend>, SimGuardMemory, M>> guarded;
  guarded.emplace(resource, memory, options);
  DebugGuardResource<Resource<SimBackend>, SimGuardMemory, M>& tier = *guarded;

  std::vector<StreamId> streams;
  for (std::uint32_t i = 0; i < kStreams; ++i) streams.push_back(backend.add_stream());
  auto ref = [&](StreamId s) { return *backend.resolve_stream(s); };
  std::vector<DeviceBlock> live;
  std::vector<Expected> expected;
  std::optional<DeviceBlock> just_freed;  // freed by the step before (StaleWrite's target)

  auto forget = [&](const DeviceBlock& b) {
    std::erase_if(live, [&](const DeviceBlock& x) { return x.generation == b.generation; });
  };
  auto write = [&](StreamId s, std::uint64_t ptr, std::uint64_t bytes, const char* label) {
    backend.launch(ref(s), {KernelAccess{ptr, bytes, Access::Write, {}}}, label);
  };
  for (const auto& st : steps) {
    const StreamId s = streams[st.stream % kStreams];
    std::optional<DeviceBlock> target;
    if (!live.empty()) target = live[st.pick % live.size()];
    switch (st.kind) {
      case GuardStep::Kind::Allocate: {
        auto block = tier.allocate(st.bytes, s);
        if (!block) return "allocate: " + block.error().to_string();
        live.push_back(block.value());
        just_freed.reset();
        break;
      }
      case GuardStep::Kind::Use:
        if (target) {
          const BlockId id = BlockId::of(*target);
          if (auto p = tier.prepare_block_use(id, s, st.access); !p) return "prepare: " + p.error().to_string();
          backend.launch(ref(s), {KernelAccess{target->ptr, target->bytes, st.access, {}}}, "use");
          if (auto f = tier.finish_block_use(id, s, st.access); !f) return "finish: " + f.error().to_string();
        }
        just_freed.reset();
        break;
      case GuardStep::Kind::OutOfBounds:
        // A kernel on the block's alloc stream that writes past its end (or
        // before its start) by 1..canary bytes: G-check must report exactly
        // those bytes at the block's free.
        if (target) {
          const std::uint64_t over = 1 + st.bytes % tier.options().canary_bytes;
          const BlockId id = BlockId::of(*target);
          const StreamId home = target->alloc_stream;
          if (auto p = tier.prepare_block_use(id, home, Access::Write); !p) return "prepare: " + p.error().to_string();
          if (st.front) {
            write(home, target->ptr - over, over, "out of bounds");
            expected.emplace_back(GuardFindingKind::CanaryOverwritten, target->generation.value,
                                  -static_cast<std::int64_t>(over), over);
          } else {
            write(home, target->ptr + target->bytes, over, "out of bounds");
            expected.emplace_back(GuardFindingKind::CanaryOverwritten, target->generation.value,
                                  static_cast<std::int64_t>(target->bytes), over);
          }
          if (auto f = tier.finish_block_use(id, home, Access::Write); !f) return "finish: " + f.error().to_string();
          // Planted once a block: a second overhang would merge with the first.
          forget(*target);
          if (auto d = tier.deallocate(*target); !d) return "deallocate: " + d.error().to_string();
        }
        just_freed.reset();
        break;
      case GuardStep::Kind::Deallocate:
        if (target) {
          forget(*target);
          if (auto d = tier.deallocate(*target); !d) return "deallocate: " + d.error().to_string();
          just_freed = *target;
        }
        break;
      case GuardStep::Kind::StaleWrite:
        // A stale pointer written on the block's alloc stream after its free
        // (with reaps between them, perhaps): with K >= 1 and no later free
        // the block is still in quarantine (G-quarantine), so G-stale must
        // report every byte of it.
        if (just_freed && quarantine_frees >= 1) {
          // Half of them after a reap: it gives back no block that no later
          // free has passed (G-quarantine), so the block is still poison.
          if (st.front)
            if (auto r = tier.reap_pending(); !r) return "reap: " + r.error().to_string();
          write(just_freed->alloc_stream, just_freed->ptr, just_freed->bytes, "stale write");
          expected.emplace_back(GuardFindingKind::WriteAfterFree, just_freed->generation.value, 0, just_freed->bytes);
        }
        just_freed.reset();
        break;
      case GuardStep::Kind::Reap:
        // A reap gives back no block that no later free has passed.
        if (auto r = tier.reap_pending(); !r) return "reap: " + r.error().to_string();
        break;
    }
    for (const auto& f : model.findings())
      if (f.kind != sim::FindingKind::Leak) return "the simulator found: " + sim::format(model, f);
  }
  for (const auto& b : live)
    if (auto d = tier.deallocate(b); !d) return "deallocate: " + d.error().to_string();
  if (auto r = tier.release_quarantine(); !r) return "release: " + r.error().to_string();
  if (tier.quarantined_blocks() != 0) return "blocks left in quarantine";
  if (auto r = tier.reap_pending(); !r) return "reap: " + r.error().to_string();
  if (tier.bytes_outstanding() != 0 || tier.held_bytes() != 0)
    return std::to_string(tier.bytes_outstanding()) + " bytes outstanding, " + std::to_string(tier.held_bytes()) +
           " held from the resource below, after everything was freed and reaped";
  std::vector<Expected> found;
  for (const auto& f : tier.findings()) found.push_back(key(f));
  guarded.reset();
  backend.drain();
  for (const auto& f : model.findings())
    if (f.kind != sim::FindingKind::Leak) return "the simulator found: " + sim::format(model, f);
  std::sort(found.begin(), found.end());
  std::sort(expected.begin(), expected.end());
  if (found != expected)
    return "the tier reported " + std::to_string(found.size()) + " finding(s), the program planted " +
           std::to_string(expected.size());
  return std::nullopt;
}

rc::Gen<GuardStep> gen_step(bool plant_bugs) {
  using K = GuardStep::Kind;
  auto kinds = plant_bugs ? rc::gen::element(K::Allocate, K::Allocate, K::Use, K::Use, K::Deallocate, K::Reap,
                                             K::OutOfBounds, K::StaleWrite)
                          : rc::gen::element(K::Allocate, K::Allocate, K::Use, K::Use, K::Deallocate, K::Reap);
  return rc::gen::build<GuardStep>(
      rc::gen::set(&GuardStep::kind, kinds), rc::gen::set(&GuardStep::pick, rc::gen::inRange<std::uint32_t>(0, 8)),
      rc::gen::set(&GuardStep::stream, rc::gen::inRange<std::uint32_t>(0, kStreams)),
      rc::gen::set(&GuardStep::bytes, rc::gen::inRange<std::uint32_t>(1, 300)),
      rc::gen::set(&GuardStep::access, rc::gen::element(Access::Read, Access::Write, Access::ReadWrite)),
      rc::gen::set(&GuardStep::front, rc::gen::arbitrary<bool>()));
}

template <GuardMutant M>
void guarded_programs_property(bool plant_bugs) {
  const auto steps = *rc::gen::container<std::vector<GuardStep>>(gen_step(plant_bugs));
  const auto schedule = *rc::gen::container<std::vector<std::uint8_t>>(rc::gen::arbitrary<std::uint8_t>());
  const auto policy = *rc::gen::inRange<std::uint32_t>(0, 16);
  const auto k = *rc::gen::inRange<std::size_t>(0, 4);
  sim::ByteChooser chooser(schedule);
  const auto wrong = run_guarded<M>(steps, chooser, policy, k);
  if (wrong) RC_FAIL(*wrong + "\n" + show(steps));
}

// Correct multi-stream programs: the tier's own fills and checks race with
// nothing (every schedule the bytes choose), it reports nothing, and
// everything goes back to the inner resource.
RC_GTEST_PROP(DebugGuardSim, CorrectProgramsGetNoFindingsAndNoRaces, ()) {
  guarded_programs_property<GuardMutant::None>(false);
}

// Programs with planted out-of-bounds and stale writes: exactly those are
// reported, with their bytes.
RC_GTEST_PROP(DebugGuardSim, EveryPlantedOutOfBoundsAndStaleWriteIsReportedExactly, ()) {
  guarded_programs_property<GuardMutant::None>(true);
}

/// The core's stateful property (protocol_property.h: P1-P5, P7, P9, event
/// economy, log fidelity) with the client calling the debug tier, itself or
/// through a BudgetResource, a LoggingResource, or both; the tier's books
/// checked against the resource underneath (P3) and any out-of-bounds or
/// stale-write finding a false alarm. Schedule, pool policy and layer are
/// generated, as for the resource alone.
template <GuardMutant M>
void core_properties_through_the_tier() {
  const auto choices = *rc::gen::map(props::gen_sim_run_choices(), [](props::SimRunChoices c) {
    c.layer.guarded = true;
    return c;
  });
  sim::ByteChooser chooser(choices.schedule);
  sim::DeviceModel model(chooser, sim::PoolPolicy::from_bits(choices.policy));
  SimBackend backend(model);
  props::Harness<SimBackend, CorrectProtocol, SimGuardMemory, M> harness(backend, choices.layer);
  props::check_protocol(harness);
}

RC_GTEST_PROP(DebugGuardSim, TheCorePropertiesHoldThroughTheTier, ()) {
  core_properties_through_the_tier<GuardMutant::None>();
}

/// A small world for the rules one by one.
struct GuardWorld {
  explicit GuardWorld(std::size_t k = 2) : tier(resource, memory, options_with(k)) {}
  static DebugGuardOptions options_with(std::size_t k) {
    DebugGuardOptions o;
    o.quarantine_frees = k;
    return o;
  }
  sim::RandomChooser chooser{1};
  sim::DeviceModel model{chooser};
  SimBackend backend{model};
  Resource<SimBackend> resource{backend};
  SimGuardMemory memory{backend};
  DebugGuardResource<Resource<SimBackend>, SimGuardMemory> tier;

  StreamId stream() { return backend.add_stream(); }
  void write(StreamId s, std::uint64_t ptr, std::uint64_t bytes) {
    backend.launch(*backend.resolve_stream(s), {KernelAccess{ptr, bytes, Access::Write, {}}}, "write");
  }
};

TEST(DebugGuardRules, AnOutOfBoundsWriteIsReportedAtTheFreeWithItsBytes) {
  GuardWorld w;
  const StreamId a = w.stream();
  auto block = w.tier.allocate(100, a).value();
  w.write(a, block.ptr, block.bytes + 12);  // 12 bytes past the end
  ASSERT_TRUE(w.tier.deallocate(block));
  ASSERT_TRUE(w.tier.release_quarantine());
  const auto findings = w.tier.findings();
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, GuardFindingKind::CanaryOverwritten);
  EXPECT_EQ(findings[0].first_changed, 100);
  EXPECT_EQ(findings[0].changed_bytes, 12u);
  EXPECT_NE(findings[0].to_string().find("canary overwritten: block b"), std::string::npos) << findings[0].to_string();
}

TEST(DebugGuardRules, AFindingNoOneReadIsToldOnStderrAtTheEnd) {
  testing::internal::CaptureStderr();
  {
    GuardWorld w;
    const StreamId a = w.stream();
    auto block = w.tier.allocate(40, a).value();
    w.write(a, block.ptr - 8, 8);  // 8 bytes before the block
    ASSERT_TRUE(w.tier.deallocate(block));
  }  // never asked for its findings
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("a finding never read: canary overwritten"), std::string::npos) << err;
  EXPECT_NE(err.find("8 byte(s) changed, the first at offset -8"), std::string::npos) << err;
}

TEST(DebugGuardRules, AWriteToAQuarantinedBlockIsReportedWhenItLeaves) {
  GuardWorld w(1);
  const StreamId a = w.stream();
  auto block = w.tier.allocate(256, a).value();
  ASSERT_TRUE(w.tier.deallocate(block));
  EXPECT_EQ(w.tier.quarantined_blocks(), 1u);
  w.write(a, block.ptr + 8, 16);  // a stale pointer
  // Its bytes are not handed out meanwhile (G-quarantine).
  auto other = w.tier.allocate(256, a).value();
  EXPECT_NE(other.ptr, block.ptr);
  ASSERT_TRUE(w.tier.deallocate(other));
  ASSERT_TRUE(w.tier.release_quarantine());
  const auto findings = w.tier.findings();
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, GuardFindingKind::WriteAfterFree);
  EXPECT_EQ(findings[0].generation, block.generation);
  EXPECT_EQ(findings[0].first_changed, 8);
  EXPECT_EQ(findings[0].changed_bytes, 16u);
  w.backend.drain();
  // The simulator itself sees no use after free: the inner block was live.
  for (const auto& f : w.model.findings()) EXPECT_EQ(f.kind, sim::FindingKind::Leak) << sim::format(w.model, f);
}

TEST(DebugGuardRules, ABlockLeavesQuarantineAfterKFreesAndItsCheckRan) {
  GuardWorld w(2);
  const StreamId a = w.stream();
  auto first = w.tier.allocate(64, a).value();
  ASSERT_TRUE(w.tier.deallocate(first));
  ASSERT_TRUE(w.backend.synchronize_stream(*w.backend.resolve_stream(a)));  // its check ran
  ASSERT_TRUE(w.tier.deallocate(w.tier.allocate(64, a).value()));
  // One later free: not yet (K = 2 must pass).
  ASSERT_TRUE(w.tier.reap_pending());
  EXPECT_EQ(w.tier.quarantined_blocks(), 2u);
  ASSERT_TRUE(w.tier.deallocate(w.tier.allocate(64, a).value()));
  EXPECT_EQ(w.tier.quarantined_blocks(), 3u);  // a deallocate gives nothing back
  ASSERT_TRUE(w.tier.reap_pending());
  EXPECT_EQ(w.tier.quarantined_blocks(), 2u);  // `first` left
  ASSERT_TRUE(w.tier.release_quarantine());
  EXPECT_EQ(w.tier.quarantined_blocks(), 0u);
  EXPECT_TRUE(w.tier.findings().empty());
}

TEST(DebugGuardRules, AHostUseOfAFreedBlockIsRefusedAndReported) {
  GuardWorld w;
  const StreamId a = w.stream(), b = w.stream();
  auto block = w.tier.allocate(32, a).value();
  ASSERT_TRUE(w.tier.deallocate(block));
  auto prepared = w.tier.prepare_block_use(BlockId::of(block), b, Access::Read);
  ASSERT_FALSE(prepared);
  EXPECT_EQ(prepared.error().kind, ErrorKind::UseAfterFree);
  EXPECT_FALSE(w.tier.deallocate(block));
  const auto findings = w.tier.findings();
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].kind, GuardFindingKind::HostUseAfterFree);
  EXPECT_NE(findings[0].to_string().find("prepare after its deallocate"), std::string::npos) << findings[0].to_string();
  EXPECT_EQ(findings[1].call, "deallocate");
  // Something never handed out is refused as the core refuses it (P5), but
  // is no finding: nothing of the tier's was used.
  DeviceBlock stranger = block;
  stranger.ptr += 4096;
  EXPECT_EQ(w.tier.deallocate(stranger).error().kind, ErrorKind::UseAfterFree);
  EXPECT_EQ(w.tier.findings().size(), 2u);
  // A live block's copy claiming another stream or device is refused and
  // changes nothing.
  auto live = w.tier.allocate(32, a).value();
  DeviceBlock elsewhere = live;
  elsewhere.alloc_stream = b;
  EXPECT_EQ(w.tier.deallocate(elsewhere).error().kind, ErrorKind::StreamMisuse);
  elsewhere = live;
  elsewhere.device_ordinal += 1;
  EXPECT_EQ(w.tier.deallocate(elsewhere).error().kind, ErrorKind::Driver);
  BlockId other_device = BlockId::of(live);
  other_device.device_ordinal += 1;
  EXPECT_EQ(w.tier.prepare_block_use(other_device, b, Access::Read).error().kind, ErrorKind::Driver);
  EXPECT_EQ(w.tier.live_block_count(), 1u);
  EXPECT_TRUE(w.tier.deallocate(live));
}

TEST(DebugGuardRules, AFailedCallChangesNothing) {
  GuardWorld w;
  const StreamId a = w.stream(), b = w.stream();
  // allocate: the canaries' finish needs an event; make creating it fail.
  const std::size_t outstanding = w.tier.bytes_outstanding(), held = w.tier.held_bytes();
  int refusals = 0;
  for (std::uint32_t nth = 1; nth <= 8; ++nth) {
    w.backend.arm_fault(nth);
    auto refused = w.tier.allocate(100, a);
    w.backend.disarm_fault();
    if (refused) {
      ASSERT_TRUE(w.tier.deallocate(refused.value()));
      continue;
    }
    ++refusals;
    EXPECT_EQ(w.tier.live_block_count(), 0u);
  }
  // The canaries' finish: its event's create and record (the fault count
  // starts after alloc_async, and allocate records no other event: P-alloc).
  EXPECT_GE(refusals, 2);
  ASSERT_TRUE(w.tier.release_quarantine());
  ASSERT_TRUE(w.tier.reap_pending());
  EXPECT_EQ(w.tier.bytes_outstanding(), outstanding);
  EXPECT_EQ(w.tier.held_bytes(), held);
  // deallocate: a failed free-time wait leaves the block live; a retry frees it.
  auto block = w.tier.allocate(100, a).value();
  ASSERT_TRUE(w.tier.prepare_block_use(BlockId::of(block), b, Access::Read));
  ASSERT_TRUE(w.tier.finish_block_use(BlockId::of(block), b, Access::Read));
  w.backend.arm_fault(1);
  auto failed = w.tier.deallocate(block);
  w.backend.disarm_fault();
  ASSERT_FALSE(failed);
  EXPECT_EQ(w.tier.live_block_count(), 1u);
  EXPECT_EQ(w.tier.quarantined_blocks(), 0u);
  EXPECT_EQ(w.tier.bytes_outstanding(), 100u);
  ASSERT_TRUE(w.tier.deallocate(block));
  EXPECT_EQ(w.tier.bytes_outstanding(), 0u);
  EXPECT_GT(w.tier.held_bytes(), 100u);  // the block and its canaries, in quarantine
  ASSERT_TRUE(w.tier.release_quarantine());
  ASSERT_TRUE(w.tier.reap_pending());
  EXPECT_EQ(w.tier.bytes_outstanding(), 0u);
  EXPECT_EQ(w.tier.held_bytes(), 0u);
  EXPECT_TRUE(w.tier.findings().empty());
}

/// Small programs, every device schedule under every pool policy.
std::vector<std::vector<GuardStep>> small_programs() {
  using K = GuardStep::Kind;
  auto step = [](K kind, std::uint32_t stream, Access access = Access::Read, std::uint32_t bytes = 100) {
    GuardStep s;
    s.kind = kind;
    s.stream = stream;
    s.access = access;
    s.bytes = bytes;
    return s;
  };
  return {
      // Written on s0, read on s1 and s2, freed (the poison waits for both
      // reads); another block on s1 freed after it, past the quarantine.
      {step(K::Allocate, 0), step(K::Use, 0, Access::Write), step(K::Use, 1), step(K::Use, 2), step(K::Deallocate, 0),
       step(K::Allocate, 1), step(K::Deallocate, 0), step(K::Reap, 0)},
      // Written on s1, freed and reaped, then a stale write on s0; another
      // block freed after it, past the quarantine.
      {step(K::Allocate, 0), step(K::Use, 1, Access::Write), step(K::Deallocate, 0), step(K::Reap, 0),
       step(K::StaleWrite, 0), step(K::Allocate, 1), step(K::Deallocate, 0), step(K::Reap, 0)},
  };
}

template <GuardMutant M>
std::optional<std::string> explore_small(const std::vector<GuardStep>& program, std::uint64_t* schedules = nullptr) {
  return tests::explore_every_policy(
      5,
      [&](sim::Chooser& chooser, std::uint32_t policy) {
        return run_guarded<M>(program, chooser, policy, 1, sim::DeviceProgress::OnObservation);
      },
      schedules);
}

TEST(DebugGuardExhaustive, SmallMultiStreamProgramsAreCleanAndTheirBugsFoundInEverySchedule) {
  for (const auto& program : small_programs()) {
    std::uint64_t schedules = 0;
    EXPECT_EQ(explore_small<GuardMutant::None>(program, &schedules), std::nullopt) << show(program);
    EXPECT_GT(schedules, 16u * 10u) << show(program);
    std::cout << "  " << schedules << " schedules, every one as expected\n";
  }
}

#ifndef STREAMCHECK_CORRECT_PROTOCOL_ONLY
// A sanitizer build (STREAMCHECK_PROTOCOL_MUTANT_TESTS=OFF) builds none of
// the mutants: they test this suite, which the default build runs.

// The tier's mutants: some property of this file must fail against each
// (a test passes only when RapidCheck finds and prints a counterexample).
template <GuardMutant M>
bool survives_every_property() {
  const bool clean = rc::check("correct programs", [] { guarded_programs_property<M>(false); });
  const bool planted = rc::check("planted bugs", [] { guarded_programs_property<M>(true); });
  return clean && planted;
}

TEST(GuardMutant, GM1) { EXPECT_FALSE(survives_every_property<GuardMutant::GM1>()); }
// The core's property through the tier finds GM1 too: its poison races
// with the client's reads on other streams (P1).
TEST(GuardMutant, GM1ThroughTheCoreProperties) {
  EXPECT_FALSE(rc::check("the core's properties through the tier",
                         [] { core_properties_through_the_tier<GuardMutant::GM1>(); }));
}
TEST(GuardMutant, GM2) { EXPECT_FALSE(survives_every_property<GuardMutant::GM2>()); }

TEST(DebugGuardExhaustive, TheMutantsAreFoundInSmallProgramsToo) {
  for (bool gm1 : {true, false}) {
    bool found = false;
    auto programs = small_programs();
    if (!gm1) std::reverse(programs.begin(), programs.end());  // the stale write first
    for (const auto& program : programs) {
      auto wrong = gm1 ? explore_small<GuardMutant::GM1>(program) : explore_small<GuardMutant::GM2>(program);
      if (wrong) {
        std::cout << "  " << (gm1 ? "GM1" : "GM2") << ": " << *wrong << "\n";
        found = true;
        break;
      }
    }
    EXPECT_TRUE(found) << (gm1 ? "GM1" : "GM2");
  }
}
#endif  // STREAMCHECK_CORRECT_PROTOCOL_ONLY

}  // namespace
}  // namespace streamcheck
