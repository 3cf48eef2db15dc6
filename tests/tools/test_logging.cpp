// LoggingResource (model/logging_resource.h): a logged run reads back as a
// trace (docs/TRACES.md) that streamcheck explores to the same verdict as
// the simulated run itself, and the log text is exactly the documented one.
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backend_sim/device_model.h"
#include "backend_sim/schedule.h"
#include "backend_sim/sim_backend.h"
#include "model/budget_resource.h"
#include "model/kernel_access.h"
#include "model/logging_resource.h"
#include "model/memory_resource.h"
#include "model/mutants.h"
#include "model/resource.h"
#include "tools/trace.h"
#include "tools/trace_check.h"

namespace streamcheck {
namespace {

using sim::SimBackend;
static_assert(MemoryResource<LoggingResource<Resource<SimBackend>>>);
static_assert(MemoryResource<LoggingResource<BudgetResource<Resource<SimBackend>>>>);
static_assert(MemoryResource<BudgetResource<LoggingResource<Resource<SimBackend>>>>);

struct Sim {
  sim::RandomChooser c{1};
  sim::DeviceModel m{c};
  sim::SimBackend b{m};
  StreamId s0 = b.add_stream("s0");
  StreamId s1 = b.add_stream("s1");

  std::set<std::string> finding_kinds() const {
    std::set<std::string> out;
    for (const auto& f : m.findings()) out.insert(std::string(sim::to_string(f.kind)));
    return out;
  }
};

// The client: a block allocated on s0 is written on `writer`, then read on
// `reader`, then deallocated and reaped. Every kernel is the client's own
// raw launch, bracketed by prepare/finish and noted in the log.
template <class R>
void client(Sim& sim, LoggingResource<R>& log, StreamId writer, StreamId reader) {
  auto blk = log.allocate(4096, sim.s0);
  ASSERT_TRUE(blk.ok()) << blk.error();
  const DeviceBlock& b = blk.value();
  const BlockId id = BlockId::of(b);

  ASSERT_TRUE(log.prepare_block_use(id, writer, Access::Write).ok());
  sim.b.launch(*sim.b.resolve_stream(writer), {KernelAccess{b.ptr, b.bytes, Access::Write, {}}}, "K");
  log.note_launch("K", writer, {{&b, Access::Write}});
  ASSERT_TRUE(log.finish_block_use(id, writer, Access::Write).ok());

  ASSERT_TRUE(log.prepare_block_use(id, reader, Access::Read).ok());
  sim.b.launch(*sim.b.resolve_stream(reader), {KernelAccess{b.ptr, b.bytes, Access::Read, {}}}, "K2");
  log.note_launch("K2", reader, {{&b, Access::Read}});
  ASSERT_TRUE(log.finish_block_use(id, reader, Access::Read).ok());

  ASSERT_TRUE(log.deallocate(b).ok());
  ASSERT_TRUE(log.reap_pending().ok());
  sim.b.drain();
}

tools::Report explore_log(const std::string& text) {
  const tools::Trace trace = tools::parse_trace(text, "logged.trace");
  tools::TraceCheckOptions o;
  o.strategy = tools::Strategy::Dfs;
  o.max_schedules = 20000;
  return tools::explore_trace(trace, o);
}

std::set<std::string> finding_kinds(const tools::Report& r) {
  std::set<std::string> out;
  for (const auto& f : r.findings)
    if (f.severity == tools::Severity::Error) out.insert(std::string(sim::to_string(f.kind)));
  return out;
}

template <class T>
std::string joined(const std::vector<T>& v) {
  std::ostringstream out;
  for (const auto& s : v) out << s << "\n";
  return out.str();
}

TEST(LoggingResource, CleanClientReadsBackClean) {
  Sim sim;
  Resource<SimBackend> res(sim.b);
  std::ostringstream os;
  LoggingResource<Resource<SimBackend>> log(res, os);
  client(sim, log, /*writer=*/sim.s1, /*reader=*/sim.s0);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_TRUE(sim.finding_kinds().empty()) << joined(sim.b.new_problems());

  const tools::Report r = explore_log(os.str());
  EXPECT_TRUE(finding_kinds(r).empty()) << tools::report_text(r) << "\n" << os.str();
  EXPECT_TRUE(r.notes.empty()) << tools::report_text(r);
  EXPECT_EQ(r.verdict(), tools::Verdict::Clean) << tools::report_text(r);
  EXPECT_TRUE(r.coverage.exhaustive) << r.coverage.explored << " schedules";
}

TEST(LoggingResource, CorrectProtocolWaitsForTheCrossStreamRead) {
  // The M4 client below, under the correct protocol: nothing to find.
  Sim sim;
  Resource<SimBackend> res(sim.b);
  std::ostringstream os;
  LoggingResource<Resource<SimBackend>> log(res, os);
  client(sim, log, /*writer=*/sim.s0, /*reader=*/sim.s1);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_TRUE(sim.finding_kinds().empty()) << joined(sim.b.new_problems());
  const tools::Report r = explore_log(os.str());
  EXPECT_TRUE(finding_kinds(r).empty()) << tools::report_text(r);
}

TEST(LoggingResource, MutantM4ReadsBackAsTheSameMutant) {
  using M4 = MutantSet<MutantId::M4>;
  Sim sim;
  Resource<SimBackend, M4> res(sim.b);
  std::ostringstream os;
  LoggingResource<Resource<SimBackend, M4>> log(res, os, MutantId::M4);
  // deallocate (on s0) skips the wait on the read on s1.
  client(sim, log, /*writer=*/sim.s0, /*reader=*/sim.s1);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_TRUE(sim.finding_kinds().contains("use after free")) << joined(sim.b.new_problems());

  const std::string text = os.str();
  EXPECT_EQ(text.rfind("resource mutant M4\n", 0), 0u) << text;
  const tools::Trace trace = tools::parse_trace(text, "logged.trace");
  EXPECT_EQ(trace.mutant, std::optional<MutantId>(MutantId::M4));
  const tools::Report r = explore_log(text);
  EXPECT_TRUE(finding_kinds(r).contains("use after free")) << tools::report_text(r) << "\n" << text;
  EXPECT_EQ(r.verdict(), tools::Verdict::Findings);
  EXPECT_EQ(finding_kinds(r), sim.finding_kinds()) << tools::report_text(r);
}

TEST(LoggingResource, ExactLogText) {
  Sim sim;
  const StreamId s2 = sim.b.add_stream("s2");
  Resource<SimBackend> res(sim.b);
  std::ostringstream os;
  LoggingResource<Resource<SimBackend>> log(res, os);

  auto refused = log.allocate(0, sim.s1);  // refused: no statement, no stream line
  ASSERT_FALSE(refused.ok());
  auto unknown = log.allocate(64, StreamId{99});  // unknown stream: not declared
  ASSERT_FALSE(unknown.ok());
  auto blk = log.allocate(256, sim.s1);
  ASSERT_TRUE(blk.ok());
  const DeviceBlock& b = blk.value();
  const BlockId id = BlockId::of(b);
  const std::string B = "b" + std::to_string(b.generation.value);

  ASSERT_TRUE(log.prepare_block_use(id, s2, Access::ReadWrite).ok());
  log.note_launch("K", s2, {{&b, Access::Read}, {&b, Access::Write}, {&b, Access::ReadWrite}});
  ASSERT_TRUE(log.finish_block_use(id, s2, Access::ReadWrite).ok());
  ASSERT_TRUE(log.prepare_block_use(id, sim.s1, Access::Read).ok());  // s1 already declared
  log.note_launch("my kernel", sim.s1, {{&b, Access::Read}, {&b, Access::Read}});
  log.note_launch("reads", sim.s1, {{&b, Access::Read}});
  log.note_launch("Empty", sim.s1, {});
  ASSERT_TRUE(log.record_block_use(b, sim.s1).ok());
  ASSERT_TRUE(log.deallocate(b).ok());
  EXPECT_FALSE(log.prepare_block_use(id, sim.s0, Access::Write).ok());  // use after free: a comment
  ASSERT_TRUE(log.reap_pending().ok());
  sim.b.drain();

  const std::string expected =
      "resource\n"
      "# allocate 0 on s1 failed: driver error: Resource::allocate: zero-byte allocation not supported\n"
      "# allocate 64 on s99 failed: stream-ordered contract violated: Resource::allocate: unknown StreamId(99)\n"
      "stream s1\n"
      "allocate " +
      B +
      " 256 on s1\n"
      "stream s2\n"
      "prepare " +
      B +
      " on s2 read_write\n"
      "launch K on s2 reads " +
      B + " writes " + B + " readwrites " + B +
      "\n"
      "finish " +
      B +
      " on s2 read_write\n"
      "prepare " +
      B +
      " on s1 read\n"
      "launch my_kernel on s1 reads " +
      B + "," + B +
      "  # kernel \"my kernel\"\n"
      "launch reads_ on s1 reads " +
      B +
      "  # kernel \"reads\"\n"
      "# launch Empty on s1 (not replayable: no block uses)\n"
      "finish " +
      B +
      " on s1 read\n"
      "deallocate " +
      B +
      "\n"
      "# prepare " +
      B + " on s0 write failed: use after free of generation " + std::to_string(b.generation.value) +
      "\n"
      "reap\n";
  EXPECT_EQ(os.str(), expected);

  const tools::Trace t = tools::parse_trace(os.str(), "exact.trace");
  EXPECT_EQ(t.streams, (std::vector<std::string>{"s1", "s2"}));
  EXPECT_EQ(t.statements.size(), 13u);  // resource, 2 streams, 10 logged calls
}

TEST(LoggingResource, BudgetIsWrittenAndForwardersPassThrough) {
  Sim sim;
  Resource<SimBackend> res(sim.b);
  BudgetResource<Resource<SimBackend>> budget(res, 1024);
  std::ostringstream os;
  LoggingResource<BudgetResource<Resource<SimBackend>>> log(budget, os, MutantId::M1);
  EXPECT_TRUE(log.supports_block_use_tracking());
  EXPECT_EQ(log.device_ordinal(), 0u);
  EXPECT_FALSE(log.allocate(2048, sim.s0).ok());
  auto blk = log.allocate(512, sim.s0);
  ASSERT_TRUE(blk.ok());
  EXPECT_EQ(log.bytes_outstanding(), 512u);
  EXPECT_EQ(os.str(),
            "resource budget 1024 mutant M1\n"
            "# allocate 2048 on s0 failed: out of budget: requested 2048 bytes, remaining 1024 bytes\n"
            "stream s0\n"
            "allocate b" +
                std::to_string(blk.value().generation.value) + " 512 on s0\n");
  const tools::Trace t = tools::parse_trace(os.str(), "budget.trace");
  EXPECT_EQ(t.budget, std::optional<std::uint64_t>(1024));
  EXPECT_EQ(t.mutant, std::optional<MutantId>(MutantId::M1));
  ASSERT_TRUE(log.deallocate(blk.value()).ok());
}

TEST(LoggingResource, ConcurrentCallsWriteWholeLines) {
  Sim sim;
  Resource<SimBackend> res(sim.b);
  std::ostringstream os;
  LoggingResource<Resource<SimBackend>> log(res, os);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      const StreamId s = t % 2 ? sim.s1 : sim.s0;
      for (int i = 0; i < 20; ++i) {
        auto blk = log.allocate(64, s);
        if (!blk) continue;
        (void)log.prepare_block_use(BlockId::of(blk.value()), s, Access::Write);
        log.note_launch("K", s, {{&blk.value(), Access::Write}});
        (void)log.finish_block_use(BlockId::of(blk.value()), s, Access::Write);
        (void)log.deallocate(blk.value());
      }
    });
  for (auto& th : threads) th.join();
  ASSERT_TRUE(log.reap_pending().ok());
  sim.b.drain();
  // Every line is whole, so the log parses; each stream is declared once.
  const tools::Trace t = tools::parse_trace(os.str(), "threads.trace");
  EXPECT_EQ(t.streams.size(), 2u);
  EXPECT_EQ(t.statements.size(), 1u + 2u + 4u * 20u * 5u + 1u);
}

}  // namespace
}  // namespace streamcheck
