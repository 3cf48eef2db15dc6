// PoolResource (model/pool_backend.h) on the simulated backend: the core's
// property suite (P1-P5, P7, P9, log fidelity, the pool's own accounting as
// P3) through the pool, the pool's rules one by one, and its mutants PM1-PM5,
// each of which some property here must kill.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend_sim/explorer.h"
#include "backend_sim/sim_backend.h"
#include "model/pool_backend.h"
#include "props/protocol_property.h"
#include "props/sim_protocol_property.h"
#include "tests/props/every_policy.h"

namespace streamcheck::props {
namespace {

template <class Q>
using Pooled = PooledBackend<sim::SimBackend, Q>;

/// The core's stateful property with the pool under the resource: schedule,
/// pool policy of the upstream and the layer the client calls through are
/// generated, as for the resource alone (sim_protocol_property).
template <class Q>
void pool_protocol_property() {
  const auto choices = *gen_sim_run_choices();
  sim::ByteChooser chooser(choices.schedule);
  sim::DeviceModel model(chooser, sim::PoolPolicy::from_bits(choices.policy));
  Pooled<Q> backend(PoolOptions{}, model);
  Harness<Pooled<Q>> harness(backend, choices.layer);
  check_protocol(harness);
}

RC_GTEST_PROP(PoolSim, TheCorePropertiesHoldThroughThePool, ()) { pool_protocol_property<CorrectPool>(); }

/// A small world for the pool's own rules: a device model that completes
/// work only when asked, the pool (protocol Q) over it, the core Resource
/// over that.
template <class Q>
struct PoolWorldOf {
  explicit PoolWorldOf(PoolOptions options = {}) : backend(options, model) {}
  sim::RandomChooser chooser{1};
  sim::DeviceModel model{chooser};
  Pooled<Q> backend;
  PoolResource<sim::SimBackend, CorrectProtocol, Q> resource{backend};

  StreamId stream() { return backend.add_stream(); }
  typename Pooled<Q>::StreamRef ref(StreamId s) { return *backend.resolve_stream(s); }
  /// A kernel on `s` writing the whole of `block`.
  void write(const DeviceBlock& block, StreamId s) {
    backend.launch(ref(s), {KernelAccess{block.ptr, block.bytes, Access::Write, {}}}, "write");
  }
};
using PoolWorld = PoolWorldOf<CorrectPool>;

/// Q-steal's failure path, aimed at each of its calls: a steal whose
/// create, record or wait fails leaves the pool as it was (the block cached
/// once, on its donor's list; P3 for the pool) and a retry gets the block.
/// What is off, or nullopt. The generated programs reach this path only
/// when a fault lands on a steal's own call (PM5: about 1 run in 100 of
/// 100 cases misses it), so the mutant tests run it as well.
template <class Q>
std::optional<std::string> failed_steal_problem() {
  for (const char* call : {"create_event", "record_event", "wait_event"}) {
    PoolWorldOf<Q> w;
    const StreamId a = w.stream(), b = w.stream();
    auto block = w.resource.allocate(512, a).value();
    if (!w.resource.deallocate(block)) return std::string("deallocate failed");
    w.backend.arm_fault(0, call);
    auto failed = w.backend.alloc_async(512, w.ref(b));
    const std::string when = std::string("a steal whose ") + call + " failed: ";
    if (failed.ok() || !failed.error().injected) return when + "the allocation did not fail with the injected fault";
    if (w.backend.cached_bytes() != 512u)
      return when + std::to_string(w.backend.cached_bytes()) + " bytes cached, not 512";
    if (w.backend.in_use_bytes() != 0u) return when + std::to_string(w.backend.in_use_bytes()) + " bytes in use";
    if (auto off = w.backend.pool_accounting_error()) return when + *off;
    // Still a's: b gets it once the calls succeed.
    auto retry = w.backend.alloc_async(512, w.ref(b));
    if (!retry.ok() || retry.value() != block.ptr) return when + "the retry did not get the block";
  }
  return std::nullopt;
}

TEST(PoolRules, ABlockFreedOnAStreamIsReusedThereAtOnceAndElsewhereOnlyAfterAWait) {
  PoolWorld w;
  const StreamId a = w.stream(), b = w.stream();
  auto first = w.resource.allocate(1000, a).value();
  w.write(first, a);
  const std::size_t events = w.backend.live_event_count();
  ASSERT_TRUE(w.resource.deallocate(first));
  // Q-free makes no driver call, and Q-same none either: the same stream
  // gets the same block back (the 1024 bucket).
  auto again = w.resource.allocate(700, a).value();
  EXPECT_EQ(again.ptr, first.ptr);
  EXPECT_EQ(w.backend.block_bytes(again.ptr), 1024u);
  EXPECT_EQ(w.backend.steals(), 0u);
  w.write(again, a);
  ASSERT_TRUE(w.resource.deallocate(again));
  // Q-steal: another stream gets it too, after a wait on an event recorded
  // on a: its write is ordered after a's (no finding when the device runs).
  auto stolen = w.resource.allocate(1024, b).value();
  EXPECT_EQ(stolen.ptr, first.ptr);
  EXPECT_EQ(w.backend.steals(), 1u);
  w.write(stolen, b);
  ASSERT_TRUE(w.resource.deallocate(stolen));
  ASSERT_TRUE(w.resource.reap_pending());
  // No block is live and the steal's event is given back: none is left
  // (same-stream blocks hold no allocation-ready event, P-alloc).
  EXPECT_EQ(events, 0u);
  EXPECT_EQ(w.backend.live_event_count(), 0u);
  EXPECT_EQ(w.backend.pool_accounting_error(), std::nullopt);
  EXPECT_EQ(w.backend.upstream_bytes(), 1024u);  // one upstream allocation served all three
  EXPECT_EQ(w.backend.cached_bytes(), 1024u);
  w.backend.drain();
  EXPECT_TRUE(w.model.findings().empty()) << sim::format(w.model, w.model.findings().front());
  EXPECT_EQ(w.backend.upstream_bytes(), 0u);
}

TEST(PoolRules, AHostSyncMakesTheStreamsFreedBlocksIdleForEveryStream) {
  PoolWorld w;
  const StreamId a = w.stream(), b = w.stream();
  auto block = w.resource.allocate(300, a).value();
  w.write(block, a);
  ASSERT_TRUE(w.resource.deallocate(block));
  ASSERT_TRUE(w.resource.reap_pending());  // synchronizes a: Q-idle
  auto on_b = w.resource.allocate(300, b).value();
  EXPECT_EQ(on_b.ptr, block.ptr);
  EXPECT_EQ(w.backend.steals(), 0u);  // no record, no wait: the host already is after a's work
  w.write(on_b, b);
  ASSERT_TRUE(w.resource.deallocate(on_b));
  ASSERT_TRUE(w.resource.reap_pending());
  ASSERT_TRUE(w.backend.trim(w.ref(a)));  // idle again: given back
  EXPECT_EQ(w.backend.upstream_bytes(), 0u);
  EXPECT_EQ(w.backend.pool_accounting_error(), std::nullopt);
  w.backend.drain();
  EXPECT_TRUE(w.model.findings().empty()) << sim::format(w.model, w.model.findings().front());
}

TEST(PoolRules, LargeRequestsGoStraightToTheUpstreamAndBucketsNeverOverflow) {
  PoolWorld w(PoolOptions{256, 4096, std::size_t{1} << 20});
  const StreamId a = w.stream();
  auto large = w.resource.allocate(5000, a).value();
  EXPECT_EQ(w.backend.block_bytes(large.ptr), 5000u);
  ASSERT_TRUE(w.resource.deallocate(large));
  EXPECT_EQ(w.backend.upstream_bytes(), 0u);  // not cached
  // A request the bucket rounding could not hold is the upstream's to
  // refuse, as it is: never a small block.
  auto huge = w.backend.alloc_async(std::numeric_limits<std::size_t>::max() - 5, w.ref(a));
  EXPECT_FALSE(huge.ok());
  EXPECT_EQ(w.backend.pool_accounting_error(), std::nullopt);
  EXPECT_THROW(Pooled<CorrectPool>(PoolOptions{300, 4096, 0}, w.model), std::invalid_argument);
}

TEST(PoolRules, AStealWhoseCallsFailLeavesThePoolAsItWas) {
  EXPECT_EQ(failed_steal_problem<CorrectPool>(), std::nullopt);
}

/// One step of a client that makes and destroys streams while the pool
/// holds blocks they freed (Q-dead): each block is written on its
/// allocation stream, so a race is a pool rule broken.
struct StreamLifeStep {
  std::uint8_t op = 0;  // 0: new stream, 1: destroy one, 2: allocate+write, 3: free, 4: reap
  std::uint32_t pick = 0;
  std::uint32_t bytes = 0;
};

inline void showValue(const StreamLifeStep& st, std::ostream& os) {
  os << "{op " << int(st.op) << ", pick " << st.pick << ", " << st.bytes << " bytes}";
}

}  // namespace
}  // namespace streamcheck::props

namespace rc {
template <>
struct Arbitrary<streamcheck::props::StreamLifeStep> {
  static Gen<streamcheck::props::StreamLifeStep> arbitrary() {
    using streamcheck::props::StreamLifeStep;
    return gen::build<StreamLifeStep>(gen::set(&StreamLifeStep::op, gen::inRange<std::uint8_t>(0, 5)),
                                      gen::set(&StreamLifeStep::pick, gen::inRange<std::uint32_t>(0, 8)),
                                      gen::set(&StreamLifeStep::bytes, gen::inRange<std::uint32_t>(1, 2049)));
  }
};
}  // namespace rc

namespace streamcheck::props {
namespace {

/// Runs `steps` against a pool of protocol Q; returns what went wrong.
template <class Q>
std::optional<std::string> run_stream_lives(const std::vector<StreamLifeStep>& steps,
                                            const std::vector<std::uint8_t>& schedule) {
  sim::ByteChooser chooser(schedule);
  sim::DeviceModel model(chooser);
  Pooled<Q> backend(PoolOptions{}, model);
  PoolResource<sim::SimBackend, CorrectProtocol, Q> resource(backend);
  std::vector<StreamId> streams{backend.add_stream()};
  std::vector<DeviceBlock> live;
  for (const auto& st : steps) {
    switch (st.op) {
      case 0:
        streams.push_back(backend.add_stream());
        break;
      case 1:
        if (streams.size() > 1) {
          const std::size_t i = st.pick % streams.size();
          // Its blocks must be freed first (the resource frees on the
          // allocation stream); the pool keeps what they freed.
          bool holds = false;
          for (const auto& b : live) holds |= b.alloc_stream == streams[i];
          if (!holds) {
            backend.remove_stream(streams[i]);
            streams.erase(streams.begin() + static_cast<std::ptrdiff_t>(i));
          }
        }
        break;
      case 2: {
        const StreamId s = streams[st.pick % streams.size()];
        auto block = resource.allocate(st.bytes, s);
        if (!block) return "allocate: " + block.error().to_string();
        backend.launch(*backend.resolve_stream(s), {KernelAccess{block.value().ptr, st.bytes, Access::Write, {}}},
                       "write");
        live.push_back(block.value());
        break;
      }
      case 3:
        if (!live.empty()) {
          const std::size_t i = st.pick % live.size();
          if (auto freed = resource.deallocate(live[i]); !freed) return "deallocate: " + freed.error().to_string();
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
        }
        break;
      default:
        if (auto reaped = resource.reap_pending(); !reaped) return "reap: " + reaped.error().to_string();
        break;
    }
    if (!model.findings().empty()) return sim::format(model, model.findings().front());
    if (auto wrong = backend.pool_accounting_error()) return "pool accounting: " + *wrong;
  }
  for (const auto& b : live)
    if (auto freed = resource.deallocate(b); !freed) return "deallocate: " + freed.error().to_string();
  if (auto reaped = resource.reap_pending(); !reaped) return "reap: " + reaped.error().to_string();
  backend.drain();
  for (const auto& f : model.findings())
    if (f.kind != sim::FindingKind::Leak) return sim::format(model, f);
  return std::nullopt;
}

template <class Q>
void stream_lives_property() {
  const auto steps = *rc::gen::arbitrary<std::vector<StreamLifeStep>>();
  const auto schedule = *rc::gen::container<std::vector<std::uint8_t>>(rc::gen::arbitrary<std::uint8_t>());
  const auto wrong = run_stream_lives<Q>(steps, schedule);
  RC_ASSERT(wrong == std::nullopt);
}

RC_GTEST_PROP(PoolSim, StreamsThatDieWithCachedBlocksLoseNoOrdering, ()) { stream_lives_property<CorrectPool>(); }

/// Whatever is asked, a block handed out holds the request (Q-bucket).
template <class Q>
void handed_out_blocks_hold_the_request() {
  const auto bytes = *rc::gen::oneOf(rc::gen::inRange<std::size_t>(1, 1 << 21),
                                     rc::gen::inRange<std::size_t>(std::numeric_limits<std::size_t>::max() - 4096,
                                                                   std::numeric_limits<std::size_t>::max()),
                                     rc::gen::element<std::size_t>((std::size_t{1} << 63) + 1));
  sim::RandomChooser chooser(1);
  sim::DeviceModel model(chooser);
  Pooled<Q> backend(PoolOptions{}, model);
  const StreamId s = backend.add_stream();
  auto ptr = backend.alloc_async(bytes, *backend.resolve_stream(s));
  if (!ptr.ok()) return;  // refused: the upstream could not hold it
  const auto held = backend.block_bytes(ptr.value());
  RC_ASSERT(held.has_value());
  RC_ASSERT(*held >= bytes);
}

RC_GTEST_PROP(PoolSim, AHandedOutBlockHoldsTheRequest, ()) { handed_out_blocks_hold_the_request<CorrectPool>(); }

/// Small multi-stream programs through the pool, each explored exhaustively:
/// every device schedule (DFS) under every upstream pool policy.
std::vector<ClientProgram> small_programs() {
  const UseSpec write_newest{0, Access::Write};
  return {
      // A block freed on s0 and handed out on s1 (Q-steal).
      {AllocateOp{513, 0}, BeginLaunchOp{0, {write_newest}, true}, CommitOp{0}, DeallocateOp{0}, AllocateOp{600, 1},
       BeginLaunchOp{1, {write_newest}, true}, CommitOp{0}, DeallocateOp{0}, ReapOp{}},
      // The same, with the steal's wait failing first (P4), then again.
      {AllocateOp{513, 0}, BeginLaunchOp{0, {write_newest}, true}, CommitOp{0}, DeallocateOp{0},
       InjectFaultOp{0, FaultCall::WaitEvent}, AllocateOp{600, 1}, AllocateOp{600, 1},
       BeginLaunchOp{1, {write_newest}, true}, CommitOp{0}, ReapOp{}},
      // Reused on s0 at once (Q-same), then reaped and reused on s1 (Q-idle).
      {AllocateOp{300, 0}, BeginLaunchOp{0, {write_newest}, true}, CommitOp{0}, DeallocateOp{0}, AllocateOp{256, 0},
       BeginLaunchOp{0, {write_newest}, true}, CommitOp{0}, DeallocateOp{0}, ReapOp{}, AllocateOp{256, 1},
       BeginLaunchOp{1, {write_newest}, true}, CommitOp{0}},
  };
}

/// What the first schedule that breaks a property says, or why the
/// exploration was not exhaustive; nullopt when every schedule is clean.
template <class Q>
std::optional<std::string> explore_exhaustively(const ClientProgram& program, std::uint64_t* schedules = nullptr) {
  return tests::explore_every_policy(
      3,
      [&](sim::Chooser& chooser, std::uint32_t policy) -> std::optional<std::string> {
        sim::DeviceModel model(chooser, sim::PoolPolicy::from_bits(policy));
        Pooled<Q> backend(PoolOptions{}, model);
        Harness<Pooled<Q>> harness(backend);
        for (const auto& op : program)
          if (auto v = harness.apply(op)) return to_string(*v);
        if (auto v = harness.finish()) return to_string(*v);
        return std::nullopt;
      },
      schedules);
}

TEST(PoolExhaustive, SmallMultiStreamProgramsAreCleanInEverySchedule) {
  for (const auto& program : small_programs()) {
    std::uint64_t schedules = 0;
    EXPECT_EQ(explore_exhaustively<CorrectPool>(program, &schedules), std::nullopt) << show(program);
    // Device completion orders really were explored (not one run a policy).
    EXPECT_GT(schedules, 6u * 10u) << show(program);
    std::cout << "  " << schedules << " schedules, every one clean\n";
  }
}

template <class Q>
bool some_small_program_breaks() {
  for (const auto& program : small_programs())
    if (auto found = explore_exhaustively<Q>(program)) {
      std::cout << "  " << *found << "\n" << show(program);
      return true;
    }
  return false;
}

#ifndef STREAMCHECK_CORRECT_PROTOCOL_ONLY
// A sanitizer build (STREAMCHECK_PROTOCOL_MUTANT_TESTS=OFF) builds none of
// the mutants: they test this suite, which the default build runs.
// The mutants a client of the resource can meet (PM3 needs a stream
// destroyed, PM4 a request near the size limit: the properties below).
TEST(PoolExhaustive, TheMutantsOfClientProgramsAreFoundInSmallProgramsToo) {
  EXPECT_TRUE(some_small_program_breaks<PoolMutantSet<PoolMutantId::PM1>>());
  EXPECT_TRUE(some_small_program_breaks<PoolMutantSet<PoolMutantId::PM2>>());
  EXPECT_TRUE(some_small_program_breaks<PoolMutantSet<PoolMutantId::PM5>>());
}

// The pool mutants (model/mutants.h): some property of this file must fail
// against each. A test passes only when RapidCheck finds (and prints) a
// counterexample.
template <class Q>
bool survives_every_property() {
  const bool core = rc::check("the core properties through the pool", [] { pool_protocol_property<Q>(); });
  const bool lives = rc::check("streams that die with cached blocks", [] { stream_lives_property<Q>(); });
  const bool sizes = rc::check("handed-out blocks hold the request", [] { handed_out_blocks_hold_the_request<Q>(); });
  const auto steal = failed_steal_problem<Q>();
  if (steal) std::cout << "Q-steal's failure path: " << *steal << "\n";
  return core && lives && sizes && !steal;
}

TEST(PoolMutant, PM1) { EXPECT_FALSE(survives_every_property<PoolMutantSet<PoolMutantId::PM1>>()); }
TEST(PoolMutant, PM2) { EXPECT_FALSE(survives_every_property<PoolMutantSet<PoolMutantId::PM2>>()); }
TEST(PoolMutant, PM3) { EXPECT_FALSE(survives_every_property<PoolMutantSet<PoolMutantId::PM3>>()); }
TEST(PoolMutant, PM4) { EXPECT_FALSE(survives_every_property<PoolMutantSet<PoolMutantId::PM4>>()); }
TEST(PoolMutant, PM5) { EXPECT_FALSE(survives_every_property<PoolMutantSet<PoolMutantId::PM5>>()); }
#endif  // STREAMCHECK_CORRECT_PROTOCOL_ONLY

}  // namespace
}  // namespace streamcheck::props
