// Explicit instantiations of every template in model/ over the simulated
// backend, for the correct protocol and every mutant, so that template code
// nothing else instantiates still has to compile (under -Werror), and the
// MemoryResource concept asserted for every resource and decorator over a
// real backend (each header asserts it over the archetypes too). RMM's
// adaptor_tests.cpp does the same. The tests below then run each
// instantiation once.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "backend_sim/sim_backend.h"
#include "model/budget_resource.h"
#include "model/launch_recorder.h"
#include "model/logging_resource.h"
#include "model/memory_resource.h"
#include "model/mutants.h"
#include "model/non_tracking_resource.h"
#include "model/resource.h"
#include "tests/model/sim_fixture.h"

namespace sc = streamcheck;
using SimB = sc::sim::SimBackend;
template <sc::MutantId M>
using Mut = sc::MutantSet<M>;

// --- Resource: the correct protocol and every mutant.
template class sc::Resource<SimB, sc::CorrectProtocol>;
template class sc::Resource<SimB, Mut<sc::MutantId::M1>>;
template class sc::Resource<SimB, Mut<sc::MutantId::M2>>;
template class sc::Resource<SimB, Mut<sc::MutantId::M3>>;
template class sc::Resource<SimB, Mut<sc::MutantId::M4>>;
template class sc::Resource<SimB, Mut<sc::MutantId::M5>>;
template class sc::Resource<SimB, Mut<sc::MutantId::M6>>;
template class sc::Resource<SimB, Mut<sc::MutantId::M7>>;
template class sc::Resource<SimB, Mut<sc::MutantId::M8>>;
template class sc::Resource<SimB, Mut<sc::MutantId::M9>>;
template class sc::Resource<SimB, Mut<sc::MutantId::M10>>;
template class sc::Resource<SimB, Mut<sc::MutantId::M11>>;
template class sc::Resource<SimB, Mut<sc::MutantId::M12>>;
template class sc::Resource<SimB, Mut<sc::MutantId::M13>>;
template class sc::Resource<SimB, Mut<sc::MutantId::M14>>;
template class sc::Resource<SimB, Mut<sc::MutantId::M15>>;
template class sc::Resource<SimB, Mut<sc::MutantId::M16>>;
template class sc::Resource<SimB, Mut<sc::MutantId::M17>>;
template class sc::Resource<SimB, Mut<sc::MutantId::M18>>;
template class sc::Resource<SimB, Mut<sc::MutantId::M19>>;
template class sc::Resource<SimB, Mut<sc::MutantId::M20>>;
template class sc::Resource<SimB, Mut<sc::MutantId::M21>>;
template class sc::Resource<SimB, Mut<sc::MutantId::M22>>;
// Several mutants at once must compose too.
template class sc::Resource<SimB, sc::MutantSet<sc::MutantId::M1, sc::MutantId::M4, sc::MutantId::M11>>;

// --- The other resources and the decorators over each.
template class sc::NonTrackingResource<SimB>;
template class sc::BudgetResource<sc::Resource<SimB>>;
template class sc::BudgetResource<sc::NonTrackingResource<SimB>>;
template class sc::BudgetResource<sc::BudgetResource<sc::Resource<SimB>>>;
template class sc::LoggingResource<sc::Resource<SimB>>;
template class sc::LoggingResource<sc::NonTrackingResource<SimB>>;
template class sc::LoggingResource<sc::BudgetResource<sc::Resource<SimB>>>;

// --- Every resource and decorator is a MemoryResource.
static_assert(sc::MemoryResource<sc::Resource<SimB>>, "Resource<SimBackend> is not a MemoryResource");
static_assert(sc::MemoryResource<sc::Resource<SimB, Mut<sc::MutantId::M1>>>,
              "a mutant Resource<SimBackend, M1> is not a MemoryResource");
static_assert(sc::MemoryResource<sc::NonTrackingResource<SimB>>,
              "NonTrackingResource<SimBackend> is not a MemoryResource");
static_assert(sc::MemoryResource<sc::BudgetResource<sc::Resource<SimB>>>,
              "BudgetResource<Resource<SimBackend>> is not a MemoryResource");
static_assert(sc::MemoryResource<sc::BudgetResource<sc::NonTrackingResource<SimB>>>,
              "BudgetResource<NonTrackingResource<SimBackend>> is not a MemoryResource");
static_assert(sc::MemoryResource<sc::LoggingResource<sc::Resource<SimB>>>,
              "LoggingResource<Resource<SimBackend>> is not a MemoryResource");
static_assert(sc::MemoryResource<sc::LoggingResource<sc::NonTrackingResource<SimB>>>,
              "LoggingResource<NonTrackingResource<SimBackend>> is not a MemoryResource");
static_assert(sc::MemoryResource<sc::LoggingResource<sc::BudgetResource<sc::Resource<SimB>>>>,
              "LoggingResource<BudgetResource<Resource<SimBackend>>> is not a MemoryResource");

// --- LaunchRecorder and its member templates over every resource kind.
template class sc::LaunchRecorder<sc::CorrectProtocol>;
template class sc::LaunchRecorder<Mut<sc::MutantId::M9>>;

#define STREAMCHECK_INSTANTIATE_RECORDER(P, R)                 \
  template sc::Status sc::LaunchRecorder<P>::preflight<R>(R&); \
  template sc::Status sc::LaunchRecorder<P>::commit<R>(R&);

STREAMCHECK_INSTANTIATE_RECORDER(sc::CorrectProtocol, sc::Resource<SimB>)
STREAMCHECK_INSTANTIATE_RECORDER(sc::CorrectProtocol, sc::NonTrackingResource<SimB>)
STREAMCHECK_INSTANTIATE_RECORDER(sc::CorrectProtocol, sc::BudgetResource<sc::Resource<SimB>>)
STREAMCHECK_INSTANTIATE_RECORDER(sc::CorrectProtocol, sc::BudgetResource<sc::NonTrackingResource<SimB>>)
STREAMCHECK_INSTANTIATE_RECORDER(sc::CorrectProtocol, sc::LoggingResource<sc::Resource<SimB>>)
STREAMCHECK_INSTANTIATE_RECORDER(Mut<sc::MutantId::M9>, sc::Resource<SimB>)
using ResourceM9 = sc::Resource<SimB, Mut<sc::MutantId::M9>>;
STREAMCHECK_INSTANTIATE_RECORDER(Mut<sc::MutantId::M9>, ResourceM9)
#undef STREAMCHECK_INSTANTIATE_RECORDER

namespace streamcheck {
namespace {

// Every protocol variant, reached through with_protocol as the tools do,
// runs a clean allocate / cross-stream use / free / reap cycle with the
// same observable accounting (no mutant changes a fault-free round trip's
// counters).
class EveryProtocol : public ::testing::TestWithParam<std::optional<MutantId>> {};

TEST_P(EveryProtocol, CleanRoundTripAccounting) {
  testing::SimEnv env;
  const bool ok = with_protocol(GetParam(), [&]<class P>() {
    Resource<sim::SimBackend, P> r(env.backend);
    auto b = r.allocate(256, env.s0);
    if (!b.ok()) return false;
    LaunchRecorder<P> rec(env.s1, RecorderMode::Strict);
    rec.read_write(&b.value());
    if (!rec.preflight(r).ok() || !rec.commit(r).ok()) return false;
    EXPECT_EQ(r.live_bytes(), 256u);
    EXPECT_EQ(r.live_block_count(), 1u);
    if (!r.deallocate(b.value()).ok()) return false;
    EXPECT_EQ(r.pending_free_bytes(), 256u);
    EXPECT_EQ(r.pending_per_stream_total(), 256u);
    if (!r.reap_pending().ok()) return false;
    EXPECT_EQ(r.bytes_outstanding(), 0u);
    return true;
  });
  EXPECT_TRUE(ok);
  EXPECT_EQ(env.backend.live_event_count(), 0u) << "every event given back";
}

std::string protocol_name(const ::testing::TestParamInfo<std::optional<MutantId>>& info) {
  return info.param ? std::string(streamcheck::info(*info.param).name) : std::string("Correct");
}

INSTANTIATE_TEST_SUITE_P(Model, EveryProtocol,
                         ::testing::Values(std::nullopt, MutantId::M1, MutantId::M2, MutantId::M3, MutantId::M4,
                                           MutantId::M5, MutantId::M6, MutantId::M7, MutantId::M8, MutantId::M9,
                                           MutantId::M10, MutantId::M11, MutantId::M12, MutantId::M13, MutantId::M14,
                                           MutantId::M15, MutantId::M16, MutantId::M17, MutantId::M18, MutantId::M19,
                                           MutantId::M20, MutantId::M21, MutantId::M22),
                         protocol_name);

TEST(Instantiate, MutantTableMatchesIds) {
  // M1..M18 by number, then M22 (added after the concurrency mutants took
  // M19..M21): each named after its id, and info() finds each.
  ASSERT_EQ(kMutants.size(), 19u);
  for (std::size_t i = 0; i < kMutants.size(); ++i) {
    const std::size_t id = i < 18 ? i + 1 : 22;
    EXPECT_EQ(static_cast<std::size_t>(kMutants[i].id), id);
    EXPECT_EQ(kMutants[i].name, "M" + std::to_string(id));
    EXPECT_EQ(parse_mutant(kMutants[i].name), std::optional<MutantId>(kMutants[i].id));
    EXPECT_EQ(info(kMutants[i].id).name, kMutants[i].name);
  }
  // The concurrency mutants are named by their own table, not parsed: the
  // single-threaded tools that parse a mutant id cannot kill them.
  EXPECT_EQ(parse_mutant("M19"), std::nullopt);
  for (std::size_t i = 0; i < kConcurrencyMutants.size(); ++i) {
    EXPECT_EQ(static_cast<std::size_t>(kConcurrencyMutants[i].id), 19 + i);
    EXPECT_EQ(info(kConcurrencyMutants[i].id).name, kConcurrencyMutants[i].name);
  }
  EXPECT_TRUE(CorrectProtocol::is_correct);
  EXPECT_FALSE(MutantSet<MutantId::M3>::is_correct);
}

TEST(Instantiate, NestedBudgetTakesTheTighterLimit) {
  testing::SimEnv env;
  Resource<sim::SimBackend> r(env.backend);
  BudgetResource<Resource<sim::SimBackend>> outer_inner(r, 300);
  BudgetResource<BudgetResource<Resource<sim::SimBackend>>> outer(outer_inner, 1000);
  auto a = outer.allocate(400, env.s0);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().kind, ErrorKind::OutOfBudget);
  EXPECT_EQ(a.error().remaining, 300u);
  EXPECT_TRUE(outer.allocate(300, env.s0).ok());
  EXPECT_EQ(r.live_bytes(), 300u);
}

}  // namespace
}  // namespace streamcheck
