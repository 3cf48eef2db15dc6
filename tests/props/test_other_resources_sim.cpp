// Properties of what model/ ships besides Resource, on the simulated
// backend: NonTrackingResource (SPEC §2, seed 002: tracking calls refused,
// allocation and free synchronize, so a client that orders its own
// cross-stream work is race free) and PoolPolicy, the checker's own
// configuration, read back from what it prints.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend_sim/sim_backend.h"
#include "model/fault_injecting.h"
#include "model/launch_recorder.h"
#include "model/non_tracking_resource.h"
#include "model/pool_policy.h"
#include "model/resource.h"
#include "props/error_text.h"

namespace streamcheck::props {
namespace {

/// One step of a client of a NonTrackingResource: which op, and small
/// numbers it picks its arguments from (handles are taken modulo the count).
struct Step {
  std::uint8_t op;  // see run_non_tracking
  std::uint32_t a;
  std::uint32_t b;
};

inline void showValue(const Step& st, std::ostream& os) {
  os << "{op " << int(st.op) << ", " << st.a << ", " << st.b << "}";
}

}  // namespace
}  // namespace streamcheck::props

namespace rc {
template <>
struct Arbitrary<streamcheck::props::Step> {
  static Gen<streamcheck::props::Step> arbitrary() {
    return gen::build<streamcheck::props::Step>(
        gen::set(&streamcheck::props::Step::op, gen::inRange<std::uint8_t>(0, 9)),
        gen::set(&streamcheck::props::Step::a, gen::inRange<std::uint32_t>(0, 4097)),
        gen::set(&streamcheck::props::Step::b, gen::inRange<std::uint32_t>(0, 8)));
  }
};
}  // namespace rc

namespace streamcheck::props {
namespace {

using NonTracking = NonTrackingResource<sim::SimBackend>;

/// The client of a non-tracking resource orders its own cross-stream work:
/// it synchronizes the stream of every kernel that touched a block before
/// freeing it. Then nothing races (P1), the counters are exact (P3), every
/// refusal changes nothing and a retry after an injected fault succeeds
/// (P4), stale frees are UseAfterFree (P5), a driver that hands out a live
/// address is refused (P5), tracking calls and a recorder are refused, and
/// at the end nothing is left (P9).
void run_non_tracking(const std::vector<Step>& steps, std::uint32_t seed) {
  sim::RandomChooser chooser(seed);
  sim::DeviceModel model(chooser);
  sim::SimBackend backend(model);
  NonTracking res(backend);
  std::vector<StreamId> streams;
  for (int i = 0; i < 3; ++i) streams.push_back(backend.add_stream("s" + std::to_string(i)));
  std::vector<DeviceBlock> live, freed;
  std::map<std::uint64_t, std::vector<StreamId>> used_on;  // ptr -> streams whose kernels touched it
  auto outstanding = [&] {
    std::size_t sum = 0;
    for (const auto& b : live) sum += b.bytes;
    return sum;
  };
  // The client's own synchronization is not a resource call: no fault hits it.
  auto client_sync = [&](StreamId u) {
    return backend.without_faults([&] { return backend.synchronize_stream(*backend.resolve_stream(u)); }).ok();
  };
  // A refused call must change nothing; an injected fault must clear.
  auto retried = [&](auto call) {
    const std::size_t before = res.bytes_outstanding();
    auto r = call();
    if (r.ok()) return r;
    RC_ASSERT(res.bytes_outstanding() == before);
    RC_ASSERT(r.error().injected);
    r = call();
    RC_ASSERT(r.ok());
    return r;
  };
  for (const Step& st : steps) {
    const StreamId s = streams[st.b % streams.size()];
    switch (st.op) {
      case 0:
      case 1: {  // allocate, then write it from another stream right away
        auto r = retried([&] { return res.allocate(st.a + 1, s); });
        // What was asked for: the size on the stream, byte alignment
        // (allocate takes none), a live block.
        const DeviceBlock& got = r.value();
        RC_ASSERT(got.bytes == st.a + 1 && got.alloc_stream == s && got.align == 1u && got.ptr != 0u);
        RC_ASSERT(got.state == BlockState::Live);
        live.push_back(r.value());
        const StreamId other = streams[(st.b + 1) % streams.size()];
        backend.launch(*backend.resolve_stream(other),
                       {KernelAccess{r.value().ptr, r.value().bytes, Access::Write, {}}}, "init");
        // The client orders its own work: the block is initialized before
        // anything else uses it.
        RC_ASSERT(client_sync(other));
        used_on[r.value().ptr] = {};
        break;
      }
      case 2: {  // read a live block on some stream
        if (live.empty()) break;
        const DeviceBlock& blk = live[st.a % live.size()];
        backend.launch(*backend.resolve_stream(s), {KernelAccess{blk.ptr, blk.bytes, Access::Read, {}}}, "read");
        used_on[blk.ptr].push_back(s);
        break;
      }
      case 3: {  // deallocate, after ordering the kernels that used it
        if (live.empty()) break;
        const std::size_t k = st.a % live.size();
        const DeviceBlock blk = live[k];
        for (StreamId u : used_on[blk.ptr]) RC_ASSERT(client_sync(u));
        // P4: a failed deallocate (its synchronize or its free) leaves the
        // block live and the tally as it was; the retry frees it.
        (void)retried([&] { return res.deallocate(blk); });
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
        freed.push_back(blk);
        used_on.erase(blk.ptr);
        break;
      }
      case 4: {  // a stale free
        if (freed.empty()) break;
        const DeviceBlock& blk = freed[st.a % freed.size()];
        const std::size_t before = res.bytes_outstanding();
        auto r = res.deallocate(blk);
        if (!r.ok() && r.error().injected) r = res.deallocate(blk);
        RC_ASSERT(!r.ok());
        RC_ASSERT(r.error().kind == ErrorKind::UseAfterFree);
        RC_ASSERT(r.error().generation == blk.generation);
        RC_ASSERT(res.bytes_outstanding() == before);
        break;
      }
      case 5: {  // tracking calls and a recorder are refused; reap has nothing to do
        RC_ASSERT(!res.supports_block_use_tracking());
        if (!live.empty()) {
          const DeviceBlock& blk = live[st.a % live.size()];
          const auto id = BlockId::of(blk);
          for (auto r : {res.prepare_block_use(id, s, Access::Read), res.finish_block_use(id, s, Access::Write),
                         res.record_block_use(blk, s)}) {
            RC_ASSERT(!r.ok());
            RC_ASSERT(r.error().kind == ErrorKind::StreamMisuse);
          }
          LaunchRecorder<> rec(s, RecorderMode::Permissive);
          rec.read(&blk);
          auto p = rec.preflight(res);
          RC_ASSERT(!p.ok());
          RC_ASSERT(p.error().kind == ErrorKind::StreamMisuse);
          RC_ASSERT(!rec.preflighted());
        }
        RC_ASSERT(res.reap_pending().ok());
        break;
      }
      case 6:  // a fault on one of the next backend calls
        backend.arm_fault(st.a % 3);
        break;
      case 7: {  // misuse: zero bytes, an unknown stream
        const std::size_t before = res.bytes_outstanding();
        auto zero = res.allocate(0, s);
        RC_ASSERT(!zero.ok());
        RC_ASSERT(zero.error().kind == ErrorKind::Driver);
        auto unknown = res.allocate(64, StreamId{0xdead});
        RC_ASSERT(!unknown.ok());
        RC_ASSERT(unknown.error().kind == ErrorKind::StreamMisuse);
        if (!live.empty()) {
          DeviceBlock stray = live[st.a % live.size()];
          stray.alloc_stream = StreamId{0xdead};
          auto r = res.deallocate(stray);
          RC_ASSERT(!r.ok());
          RC_ASSERT(r.error().kind == ErrorKind::StreamMisuse);
        }
        RC_ASSERT(res.bytes_outstanding() == before);
        break;
      }
      case 8: {  // the driver hands out a live block's address
        if (live.empty()) break;
        backend.disarm_fault();
        const DeviceBlock& blk = live[st.a % live.size()];
        const std::size_t before = res.bytes_outstanding();
        backend.arm_collision(blk.ptr);
        auto r = res.allocate(st.a + 1, s);
        RC_ASSERT(!r.ok());
        RC_ASSERT(res.bytes_outstanding() == before);
        break;
      }
      default:
        break;
    }
    RC_ASSERT(res.bytes_outstanding() == outstanding());
    RC_ASSERT(model.findings().empty());
  }
  backend.disarm_fault();
  for (const auto& blk : live) {
    for (StreamId u : used_on[blk.ptr]) RC_ASSERT(client_sync(u));
    RC_ASSERT(res.deallocate(blk).ok());
  }
  RC_ASSERT(res.bytes_outstanding() == 0u);
  for (const auto& f : model.findings()) RC_LOG() << "finding: " << to_string(f.kind) << "\n";
  RC_ASSERT(model.findings().empty());
  RC_ASSERT(backend.live_event_count() == 0u);
}

RC_GTEST_PROP(NonTrackingSim, AClientThatOrdersItsOwnWorkIsRaceFreeAndEveryRefusalChangesNothing,
              (const std::vector<Step>& steps, std::uint32_t seed)) {
  run_non_tracking(steps, seed);
}

// PoolPolicy is what both backends are told (the simulator's reuse choices,
// the GPU pool's attributes) and what every report prints. Property: each
// of the 16 settings sets exactly its switches, and describe() names each
// switch with its value, so a report read back gives the setting again.
RC_GTEST_PROP(PoolPolicySettings, EachSettingSetsItsSwitchesAndReadsBackFromItsDescription, ()) {
  const auto k = *rc::gen::inRange<std::uint32_t>(0, 16);
  const PoolPolicy p = PoolPolicy::from_bits(k);
  RC_ASSERT(p.follow_event_dependencies == ((k & 1) != 0));
  RC_ASSERT(p.opportunistic == ((k & 2) != 0));
  RC_ASSERT(p.internal_dependencies == ((k & 4) != 0));
  RC_ASSERT(p.release_threshold == ((k & 8) != 0 ? p.capacity : 0));
  RC_ASSERT(p.capacity == PoolPolicy{}.capacity);
  const std::string text = p.describe();
  auto says = [&](const std::string& s) { return text.find(s) != std::string::npos; };
  RC_ASSERT(says(std::string("follow-event-dependencies=") + (p.follow_event_dependencies ? "on" : "off")));
  RC_ASSERT(says(std::string(" opportunistic=") + (p.opportunistic ? "on" : "off")));
  RC_ASSERT(says(std::string(" internal-dependencies=") + (p.internal_dependencies ? "on" : "off")));
  RC_ASSERT(says(" release-threshold=" + std::to_string(p.release_threshold)));
  // Distinct settings are distinct policies with distinct descriptions.
  const auto other = *rc::gen::inRange<std::uint32_t>(0, 16);
  RC_ASSERT((PoolPolicy::from_bits(other) == p) == (other == k));
  RC_ASSERT((PoolPolicy::from_bits(other).describe() == text) == (other == k));
}

// The default policy is the one a CUDA device's default pool starts with:
// all three reuse switches on and a release threshold of 0; the simulated
// pool holds 1 GiB of address space (docs/DESIGN.md §3).
TEST(PoolPolicySettings, TheDefaultIsTheCudaDefaultPoolWithOneGibibyte) {
  EXPECT_EQ(PoolPolicy{}, PoolPolicy::from_bits(7));
  sim::RandomChooser chooser(1);
  sim::DeviceModel model(chooser);
  const std::uint64_t gib = std::uint64_t{1} << 30;
  model.create_stream("s0");
  const auto whole = model.alloc(sim::StreamIndex{0}, gib);
  ASSERT_TRUE(whole) << "the default pool cannot hold 1 GiB";
  EXPECT_FALSE(model.alloc(sim::StreamIndex{0}, 1)) << "the default pool holds more than 1 GiB";
}

// SPEC §9 fault injection, against a reference written from its header
// comment: an armed fault fires at the nth fault point from the arming (of
// one call's points, when armed for that call), once; unarmed, a point fires
// when the explore decision says so, while fewer than the bound have fired
// that way (the decision is not asked past the bound, nor while armed);
// every point counts as a call; a fired point returns an injected Driver
// error naming the call.
RC_GTEST_PROP(FaultInjectingSim, FaultPointsFireWhenArmedOrExploredUpToTheBound, ()) {
  const auto bound = *rc::gen::inRange<std::uint32_t>(0, 4);
  // Each step: 0 arm(n), 1 disarm, 2 arm(n) for call "a" only, 3.. a fault
  // point of call "a" or "b" whose explore answer is `answer`.
  const auto steps = *rc::gen::container<std::vector<std::pair<std::uint8_t, std::uint32_t>>>(
      rc::gen::pair(rc::gen::inRange<std::uint8_t>(0, 7), rc::gen::inRange<std::uint32_t>(0, 5)));
  bool answer = false;
  std::uint32_t asked = 0;
  FaultInjecting faults(bound, [&] {
    ++asked;
    return answer;
  });
  std::int64_t armed = -1;  // the reference's countdown; -1: not armed
  std::string armed_call;   // empty: every call counts down
  std::uint32_t fired = 0, explored = 0, expected_asks = 0;
  std::uint64_t calls = 0;
  for (const auto& [op, n] : steps) {
    if (op == 0 || op == 2) {
      armed_call = op == 2 ? "a" : "";
      faults.arm_fault(n, armed_call);
      armed = n;
    } else if (op == 1) {
      faults.disarm_fault();
      armed = -1;
    } else {
      answer = (n & 1) != 0;
      const std::string call = (n & 2) != 0 ? "a" : "b";
      const auto fault = faults.fault_at(call);
      ++calls;
      bool fire = false;
      if (armed >= 0 && !armed_call.empty() && armed_call != call) {
        // armed for the other call: nothing happens
      } else if (armed >= 0) {
        fire = armed == 0;
        --armed;
      } else if (explored < bound) {
        ++expected_asks;
        fire = answer;
        explored += fire ? 1 : 0;
      }
      fired += fire ? 1 : 0;
      RC_ASSERT(fault.has_value() == fire);
      if (fault) {
        RC_ASSERT(fault->injected);
        RC_ASSERT(fault->kind == ErrorKind::Driver);
        RC_ASSERT(fault->message.find(call) != std::string::npos);
      }
    }
    RC_ASSERT(faults.fault_armed() == (armed >= 0));
    RC_ASSERT(faults.faults_fired() == fired);
    RC_ASSERT(faults.calls() == calls);
    RC_ASSERT(asked == expected_asks);
  }
}

// The null values: what a zero-initialised handle holds, and what the docs
// promise of each default. Generation 0 is never handed out, so a default
// DeviceBlock or BlockId names no block, and every call refuses it as a use
// after free of generation 0, changing nothing.
TEST(NullValues, DefaultsAreTheNullOnesAndTheResourceRefusesTheNullBlock) {
  const DeviceBlock null_block{};
  EXPECT_EQ(null_block.ptr, 0u);
  EXPECT_EQ(null_block.device_ordinal, 0u);
  EXPECT_EQ(null_block.alloc_stream, StreamId{0});
  EXPECT_EQ(null_block.bytes, 0u);
  EXPECT_EQ(null_block.align, 1u);
  EXPECT_EQ(null_block.generation, Generation{0});
  EXPECT_EQ(null_block.state, BlockState::Live);
  EXPECT_EQ(BlockId{}, BlockId::of(null_block));
  const ResourceError error{};
  EXPECT_EQ(error.kind, ErrorKind::Driver);
  EXPECT_EQ(error.requested, 0u);
  EXPECT_EQ(error.remaining, 0u);
  EXPECT_EQ(error.generation, Generation{0});
  EXPECT_FALSE(error.injected);

  sim::RandomChooser chooser(1);
  sim::DeviceModel model(chooser);
  sim::SimBackend backend(model);
  backend.add_stream("s0");
  Resource<sim::SimBackend> res(backend);
  auto live = res.allocate(256, StreamId{0});
  ASSERT_TRUE(live.ok());
  EXPECT_GT(live.value().generation, Generation{0});
  const std::size_t events = backend.live_event_count();
  for (Status st : {res.deallocate(null_block), res.prepare_block_use(BlockId{}, StreamId{0}, Access::Write),
                    res.finish_block_use(BlockId{}, StreamId{0}, Access::Write)}) {
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().kind, ErrorKind::UseAfterFree) << st.error();
    EXPECT_EQ(st.error().generation, Generation{0});
  }
  EXPECT_EQ(res.live_bytes(), 256u);
  EXPECT_EQ(backend.live_event_count(), events);
  ASSERT_TRUE(res.deallocate(live.value()).ok());
}

// Every kind of error, with arbitrary figures, says its kind in words and
// no other kind's, and its figures (props/error_text.h): what a user reads
// when a call is refused.
RC_GTEST_PROP(ErrorText, EveryErrorSaysItsKindAndItsFigures,
              (std::size_t requested, std::size_t remaining, std::uint64_t generation)) {
  const std::string message = *rc::gen::nonEmpty(rc::gen::string<std::string>());
  const ResourceError cause = ResourceError::injected_fault(message);
  for (const ResourceError& e :
       {ResourceError::out_of_budget(requested, remaining), ResourceError::driver(message),
        ResourceError::driver_caused_by("context", cause), ResourceError::stream_misuse(message),
        ResourceError::use_after_free(Generation{generation}), ResourceError::out_of_bounds(Generation{generation})}) {
    const auto wrong = misreads(e);
    if (wrong) RC_LOG() << *wrong << "\n";
    RC_ASSERT(!wrong);
  }
  RC_ASSERT(ResourceError::driver_caused_by("context", cause).injected);
}

}  // namespace
}  // namespace streamcheck::props
