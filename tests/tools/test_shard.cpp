// Sharded explorations (issue 12): `explore --shard I/N` runs part I of N of
// an exploration (random and pct: every N-th run; dfs: the subtrees of the
// choice tree the part owns), and `merge` combines the parts' JSON reports
// into the report the unsharded exploration gives, byte for byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/tools/example_files.h"
#include "tests/tools/trace_generator.h"
#include "tools/merge.h"
#include "tools/trace_check.h"

namespace streamcheck::tools {
namespace {

/// The JSON reports of the N shards of `o`'s exploration of `trace`.
std::vector<std::string> shard_reports(const Trace& trace, TraceCheckOptions o, std::uint32_t n) {
  std::vector<std::string> out;
  for (std::uint32_t i = 0; i < n; ++i) {
    o.shard = sim::Shard{i, n};
    out.push_back(report_json(explore_trace(trace, o)));
  }
  return out;
}

std::vector<std::string> names(std::size_t n) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back("shard" + std::to_string(i) + ".json");
  return out;
}

TEST(Shard, MergedReportsAreTheUnshardedReportForOneTwoAndFourShards) {
  // Every example, random and pct (faults on, depth 2, a policy override):
  // the merge of 1, 2 or 4 shards is byte-identical to the report one
  // exploration gives, as JSON and as text.
  std::size_t compared = 0;
  for (const std::string& file : example_files()) {
    const Trace trace = load_trace(file);
    for (const Strategy strategy : {Strategy::Random, Strategy::Pct}) {
      TraceCheckOptions o;
      o.strategy = strategy;
      o.max_schedules = 60;
      o.seed = 7;
      if (strategy == Strategy::Pct) {
        o.faults = true;
        o.pct_depth = 2;
        o.policy_overrides = {{"opportunistic", "off"}};
      }
      const Report whole = explore_trace(trace, o);
      for (const std::uint32_t n : {1u, 2u, 4u}) {
        const auto parts = shard_reports(trace, o, n);
        const Report merged = merge_reports(parts, names(n));
        EXPECT_EQ(report_json(merged), report_json(whole)) << file << ", " << n << " shards";
        EXPECT_EQ(report_text(merged), report_text(whole)) << file << ", " << n << " shards";
        ++compared;
      }
    }
  }
  EXPECT_GE(compared, 25u * 2 * 3);
}

/// Merges 1, 2 and 4 shards of `o`'s exploration of `trace` and compares
/// each with the whole; returns whether the whole was exhaustive.
bool expect_merges_to_whole(const Trace& trace, const TraceCheckOptions& o, const std::string& what) {
  const Report whole = explore_trace(trace, o);
  for (const std::uint32_t n : {1u, 2u, 4u}) {
    const Report merged = merge_reports(shard_reports(trace, o, n), names(n));
    EXPECT_EQ(report_json(merged), report_json(whole)) << what << ", " << n << " shards";
    EXPECT_EQ(report_text(merged), report_text(whole)) << what << ", " << n << " shards";
  }
  return whole.coverage.exhaustive;
}

TEST(Shard, ExhaustiveDfsShardsMergeToTheUnshardedReport) {
  // dfs (executions, faults on so that resource traces branch) on every
  // example, and dfs-schedules where its every-step enumeration finishes
  // within 2000 schedules: the merge of 1, 2 or 4 shards is the report of
  // one exploration, byte for byte.
  std::size_t exhaustive = 0;
  for (const std::string& file : example_files()) {
    const Trace trace = load_trace(file);
    TraceCheckOptions o;
    o.strategy = Strategy::Dfs;
    o.faults = true;
    o.max_schedules = 100000;
    exhaustive += expect_merges_to_whole(trace, o, file + " dfs") ? 1 : 0;
    o.strategy = Strategy::DfsSchedules;
    o.faults = false;
    o.max_schedules = 2000;
    if (explore_trace(trace, o).coverage.exhaustive)
      exhaustive += expect_merges_to_whole(trace, o, file + " dfs-schedules") ? 1 : 0;
  }
  EXPECT_GE(exhaustive, 30u);
}

TEST(Shard, DfsShardsOfGeneratedProgramsMergeToTheUnshardedReport) {
  // Programs with several queries and pool reuses have trees of executions
  // worth splitting: the merge is the whole's report, and the shards share
  // the executions out (no shard runs them all).
  // merge reads the trace again from the file its reports name.
  const tests::FreshTempDir folder("shard");
  const auto file = folder.file("generated.trace");
  std::size_t split = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    std::ofstream(file) << generate_observing_program(seed);
    const Trace trace = load_trace(file.string());
    TraceCheckOptions o;
    o.strategy = Strategy::Dfs;
    o.faults = trace.uses_resource;
    o.max_schedules = 5000;
    if (!expect_merges_to_whole(trace, o, "generated program " + std::to_string(seed))) continue;
    const Report whole = explore_trace(trace, o);
    o.shard = sim::Shard{0, 2};
    if (whole.coverage.explored >= 4 && explore_trace(trace, o).coverage.explored < whole.coverage.explored) ++split;
  }
  EXPECT_GE(split, 10u) << "too few generated programs had executions to split";
}

TEST(Shard, MergePutsTheRunsOfDfsShardsBackInTheOrderOfOneExploration) {
  // C may get fresh memory, A's range or B's (5 executions with the two
  // frees): each reuse is a reuse race of its own. Split in two, shard 0
  // owns C placed fresh and in B's range, shard 1 C in A's range, which one
  // exploration meets in between: merged in shard order, the findings would
  // come out in another order than the whole's.
  const tests::FreshTempDir folder("shard-order");
  const auto file = folder.file("three_placements.trace");
  std::ofstream(file) << "policy follow_event_dependencies = off\npolicy opportunistic = on\n"
                         "policy internal_dependencies = off\n"
                         "stream s0\nstream s1\nstream s2\nstream r0\nstream r1\nevent filledA\nevent filledB\n"
                         "buffer A 4096 on s0\nlaunch fillA on s0 writes A\nrecord filledA on s0\n"
                         "wait filledA on r0\nlaunch readA on r0 reads A\nfree A on s0\n"
                         "buffer B 4096 on s1\nlaunch fillB on s1 writes B\nrecord filledB on s1\n"
                         "wait filledB on r1\nlaunch readB on r1 reads B\nfree B on s1\n"
                         "buffer C 4096 on s2\nlaunch useC on s2 writes C\nfree C on s2\n";
  const Trace trace = load_trace(file.string());
  TraceCheckOptions o;
  o.strategy = Strategy::Dfs;
  EXPECT_TRUE(expect_merges_to_whole(trace, o, "three placements"));
  const auto parts = shard_reports(trace, o, 2);
  EXPECT_EQ(explore_trace(trace, o).coverage.explored, 5u);
  for (const std::string& part : parts)
    EXPECT_NE(part.find("\"first_runs\":[{"), std::string::npos) << "each shard first shows some finding: " << part;
}

TEST(Shard, BoundedDfsShardsMergeIntoAReportThatIsNotExhaustive) {
  // 05 with dfs-schedules has 11,580 schedules: shards bounded at 50 each do
  // not finish, and the merge says so, with the deviations every shard
  // covered and the runs they made.
  const Trace trace = load_trace(std::string(STREAMCHECK_EXAMPLES_DIR) + "/05_opportunistic_reuse.trace");
  TraceCheckOptions o;
  o.strategy = Strategy::DfsSchedules;
  o.max_schedules = 50;
  const Report merged = merge_reports(shard_reports(trace, o, 3), names(3));
  EXPECT_FALSE(merged.coverage.exhaustive);
  EXPECT_EQ(merged.coverage.explored, 150u);
  ASSERT_TRUE(merged.coverage.dfs.has_value());
  EXPECT_NE(report_text(merged).find("NOT exhaustive"), std::string::npos) << report_text(merged);
}

TEST(Shard, AShardRunsItsPartOfTheRunsAndSaysWhichPart) {
  const Trace trace = load_trace(std::string(STREAMCHECK_EXAMPLES_DIR) + "/05_opportunistic_reuse.trace");
  TraceCheckOptions o;
  o.max_schedules = 10;
  o.shard = sim::Shard{1, 4};
  const Report r = explore_trace(trace, o);
  EXPECT_EQ(r.coverage.explored, 3u) << "runs 1, 5 and 9 of 0..9";
  ASSERT_TRUE(r.coverage.shard.has_value());
  EXPECT_EQ(r.coverage.shard->index, 1u);
  EXPECT_EQ(r.coverage.shard->count, 4u);
  for (const auto& first : r.coverage.shard->first_runs) EXPECT_EQ(first.run % 4, 1u);
  EXPECT_NE(report_text(r).find("shard 1 of 4"), std::string::npos);
}

TEST(Shard, MergeRefusesReportsThatAreNotOneExploration) {
  const Trace trace = load_trace(std::string(STREAMCHECK_EXAMPLES_DIR) + "/01_missing_wait.trace");
  TraceCheckOptions o;
  o.max_schedules = 20;
  const auto two = shard_reports(trace, o, 2);
  const auto expect_refused = [](const std::vector<std::string>& texts, const std::string& says) {
    try {
      (void)merge_reports(texts, names(texts.size()));
      ADD_FAILURE() << "merged, but should say: " << says;
    } catch (const MergeError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  expect_refused({two[0]}, "shard 1 of 2 is missing");
  expect_refused({two[0], two[0]}, "shard 0 of 2 is given twice");
  TraceCheckOptions other = o;
  other.seed = 2;
  expect_refused({two[0], shard_reports(trace, other, 2)[1]}, "comes from another exploration");
  expect_refused({report_json(explore_trace(trace, o))}, "is not the report of a shard");
  expect_refused({"{not json"}, "is not a streamcheck JSON report");
  expect_refused({}, "name the JSON reports");
  TraceCheckOptions dfs = o;
  dfs.strategy = Strategy::Dfs;
  expect_refused({two[0], shard_reports(trace, dfs, 2)[1]}, "comes from another exploration");
  TraceCheckOptions redundant = o;
  redundant.redundant = true;
  redundant.shard = sim::Shard{0, 2};
  EXPECT_THROW((void)explore_trace(trace, redundant), std::invalid_argument);
}

}  // namespace
}  // namespace streamcheck::tools
