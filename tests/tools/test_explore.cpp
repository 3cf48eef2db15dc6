// The `streamcheck explore` job: in-process for exact output, and as the
// real command for exit codes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "tests/temp_dir.h"
#include "tests/test_scale.h"
#include "tests/tools/command.h"
#include "tests/tools/malformed_traces.h"
#include "tools/explore.h"
#include "tools/tool_protocols.h"

namespace streamcheck::tools {
namespace {

CommandResult run_command(const std::string& args) { return run_shell(std::string(STREAMCHECK_BIN) + " " + args); }

std::string explore_text(const ExploreOptions& o, int& code) {
  std::ostringstream os;
  code = explore(o, os);
  return os.str();
}

TEST(Explore, CorrectProtocolHasNoFindings) {
  ExploreOptions o;
  o.programs = 60;
  int code = -1;
  const std::string out = explore_text(o, code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("coverage: 60 programs, 960 schedules (random schedules: not exhaustive)"), std::string::npos)
      << out;
  EXPECT_NE(out.find("findings: none"), std::string::npos) << out;
}

TEST(Explore, SameSeedSameBytes) {
  if (!tools_have(MutantId::M11)) GTEST_SKIP() << mutant_not_built("M11");
  ExploreOptions o;
  o.programs = 60;
  o.seed = 99;
  o.mutant = MutantId::M11;
  int c1 = -1, c2 = -1;
  const std::string a = explore_text(o, c1);
  const std::string b = explore_text(o, c2);
  EXPECT_EQ(c1, 1);
  EXPECT_EQ(a, b);
}

TEST(Explore, EveryMutantGivesAShrunkCounterexample) {
  std::size_t explored = 0;
  for (const auto& m : kMutants) {
    if (!tools_have(m.id)) continue;  // a sanitizer build: M1 and M4 (tools/tool_protocols.h)
    ++explored;
    ExploreOptions o;
    o.mutant = m.id;
    int code = -1;
    const std::string out = explore_text(o, code);
    EXPECT_EQ(code, 1) << m.name << "\n" << out;
    EXPECT_NE(out.find("counterexample after"), std::string::npos) << m.name << "\n" << out;
    EXPECT_NE(out.find("schedule: "), std::string::npos) << m.name;
    EXPECT_NE(out.find("reproduce: streamcheck explore --seed 1 --mutant " + std::string(m.name)), std::string::npos)
        << m.name;
  }
  EXPECT_EQ(explored, kToolsHaveEveryMutant ? kMutants.size() : kSubsetMutants.size());
}

// The shrunk counterexample is one value (program, schedule bytes, pool
// policy): replaying it gives the same run, and RapidCheck shrank every
// field of it, not only the number of ops.
TEST(Explore, CounterexampleIsShrunkAsOneValueAndReplaysExactly) {
  ExploreOptions o;
  o.mutant = MutantId::M1;
  const auto c = find_counterexample(o);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->violation.property, props::Property::P1RaceFreedom);
  ASSERT_TRUE(c->race);
  EXPECT_LE(c->shrunk.program.size(), 4u);
  EXPECT_LT(c->shrunk.program.size(), c->original.size());
  EXPECT_EQ(c->shrunk.policy_index, 0u);
  for (std::uint8_t b : c->shrunk.schedule) EXPECT_EQ(b, 0u);
  for (const auto& op : c->shrunk.program) {
    if (const auto* a = std::get_if<props::AllocateOp>(&op)) {
      EXPECT_EQ(a->bytes, 1u);
    }
  }
  EXPECT_EQ(counterexample_svg(*c, o.mutant), counterexample_svg(*c, o.mutant));
  EXPECT_NE(counterexample_svg(*c, o.mutant).find("</svg>"), std::string::npos);
}

TEST(Explore, ReproduceLineCarriesEveryNonDefaultOption) {
  ExploreOptions o;
  o.seed = 3;
  o.schedules_per_program = 4;
  o.program_length = 30;
  o.mutant = MutantId::M5;
  if (!tools_have(*o.mutant)) GTEST_SKIP() << mutant_not_built("M5");
  int code = -1;
  const std::string out = explore_text(o, code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("reproduce: streamcheck explore --seed 3 --schedules 4 --length 30 --mutant M5\n"),
            std::string::npos)
      << out;
}

TEST(Explore, RaceMutantReportNamesThePairAndTheFix) {
  ExploreOptions o;
  o.mutant = MutantId::M1;
  int code = -1;
  const std::string out = explore_text(o, code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("P1 race freedom: data race"), std::string::npos) << out;
  EXPECT_NE(out.find("missing edge"), std::string::npos) << out;
  EXPECT_NE(out.find("fix: record an event on"), std::string::npos) << out;
}

TEST(ExploreCommand, ExitCodes) {
  EXPECT_EQ(run_command("explore --programs 20").exit_code, 0);
  const auto killed = run_command("explore --mutant M4");
  EXPECT_EQ(killed.exit_code, 1) << killed.out;
  EXPECT_EQ(run_command("explore --mutant M99").exit_code, 2);
  // A mutant this build lacks is refused, never run as the correct protocol.
  const auto m5 = run_command("explore --mutant M5");
  if (kToolsHaveEveryMutant) {
    EXPECT_EQ(m5.exit_code, 1) << m5.out;
  } else {
    EXPECT_EQ(m5.exit_code, 2) << m5.out;
    EXPECT_NE(m5.out.find("mutant M5 is not in this build"), std::string::npos) << m5.out;
    const tests::FreshTempDir dir("refused-pages");
    const auto pages = run_command("counterexamples " + dir.path().string());
    EXPECT_EQ(pages.exit_code, 2) << pages.out;
    EXPECT_NE(pages.out.find("counterexamples needs every mutant"), std::string::npos) << pages.out;
    EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "nothing is written before the refusal";
  }
  EXPECT_EQ(run_command("explore --seed banana").exit_code, 2);
  EXPECT_EQ(run_command("frobnicate").exit_code, 2);
  EXPECT_EQ(run_command("").exit_code, 2);
  EXPECT_EQ(run_command("explore --help").exit_code, 0);
}

TEST(ExploreCommand, SameSeedByteIdenticalAcrossProcesses) {
  const auto a = run_command("explore --seed 5 --programs 40");
  const auto b = run_command("explore --seed 5 --programs 40");
  EXPECT_EQ(a.exit_code, 0);
  EXPECT_EQ(a.out, b.out);
  if (!tools_have(MutantId::M2)) GTEST_SKIP() << mutant_not_built("M2");
  const auto c = run_command("explore --seed 5 --mutant M2");
  const auto d = run_command("explore --seed 5 --mutant M2");
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_EQ(c.out, d.out);
}

std::string examples(const std::string& file) { return std::string(STREAMCHECK_EXAMPLES_DIR) + "/" + file; }

TEST(CounterexamplePages, DocsAreUpToDate) {
  if (!kToolsHaveEveryMutant) GTEST_SKIP() << "the pages need every mutant: " << kSubsetBuild;
  const tests::FreshTempDir tmp("counterexamples");
  const std::string dir = tmp.path().string();
  const auto files = write_counterexample_pages(dir);
  EXPECT_EQ(files.size(), 2 * kMutants.size() + 1);  // Mk.md + Mk.svg for every mutant, and the index
  for (const auto& name : files) {
    auto slurp = [](const std::string& p) {
      std::ifstream f(p, std::ios::binary);
      std::ostringstream ss;
      ss << f.rdbuf();
      return ss.str();
    };
    EXPECT_EQ(slurp(dir + "/" + name), slurp(std::string(STREAMCHECK_DOCS_DIR) + "/counterexamples/" + name))
        << "docs/counterexamples/" << name
        << " is stale: regenerate with `build/default/tools/streamcheck counterexamples docs/counterexamples`";
  }
}

TEST(TraceCommand, VerbsExitCodes) {
  EXPECT_EQ(run_command("check " + examples("08_pipeline.trace")).exit_code, 0);
  EXPECT_EQ(run_command("check " + examples("01_missing_wait.trace")).exit_code, 1);
  const auto racy = run_command("explore " + examples("01_missing_wait.trace") + " --schedules 50");
  EXPECT_EQ(racy.exit_code, 1);
  EXPECT_NE(racy.out.find("data race"), std::string::npos) << racy.out;
  EXPECT_NE(racy.out.find("fix:      record an event on"), std::string::npos) << racy.out;
  EXPECT_EQ(run_command("explore " + examples("15_host_sync.trace") + " --strategy dfs").exit_code, 0);
  EXPECT_EQ(run_command("explore " + examples("14_leak.trace")).exit_code, 0);  // a leak is a warning
  EXPECT_EQ(run_command("explore " + examples("01_missing_wait.trace") + " --strategy bfs").exit_code, 2);
  EXPECT_EQ(run_command("explore " + examples("01_missing_wait.trace") + " --policy bogus=on").exit_code, 2);
  EXPECT_EQ(run_command("check /nonexistent.trace").exit_code, 2);
  EXPECT_EQ(run_command("replay " + examples("01_missing_wait.trace")).exit_code, 2);  // no --schedule
  EXPECT_EQ(run_command("replay " + examples("01_missing_wait.trace") + " --schedule '!'").exit_code, 2);
}

TEST(TraceCommand, ReplayOfAReportedScheduleReproducesIt) {
  const auto r = run_command("check " + examples("01_missing_wait.trace") + " --seed 3");
  const auto at = r.out.find(" --schedule ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string schedule = r.out.substr(at + 12, r.out.find('\n', at + 12) - at - 12);
  const auto again = run_command("replay " + examples("01_missing_wait.trace") + " --schedule " + schedule);
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.out.find("data race"), std::string::npos) << again.out;
}

TEST(TraceCommand, EveryVerbHasHelp) {
  for (const char* verb : {"check", "explore", "replay", "render"}) {
    const auto r = run_command(std::string(verb) + " --help");
    EXPECT_EQ(r.exit_code, 0) << verb;
    EXPECT_NE(r.out.find(std::string("usage: streamcheck ") + verb), std::string::npos) << r.out;
  }
}

TEST(TraceCommand, MalformedInputGivesFileLineColumnAndExit2) {
  const tests::FreshTempDir tmp("malformed");
  const std::string path = tmp.write("malformed.trace", "stream s1\nbuffer A 64 on s1\nlaunch K on s2 writes A\n");
  const auto r = run_command("check " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find(path + ":3:13: unknown stream 's2'"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("verdict"), std::string::npos) << "nothing may run: " << r.out;
}

TEST(TraceCommand, EveryKindOfMalformedInputExits2WithItsPosition) {
  const tests::FreshTempDir tmp("malformed-kinds");
  // A sanitized streamcheck takes about 0.3 s to start, and this sweep
  // started it twice for each of about 140 kinds (96 s under ASan): the
  // sanitizer run (tests/test_scale.h) sends every fourth kind through the
  // command. Every kind is still parsed there in-process (Trace/
  // MalformedTrace, tests/tools/test_trace.cpp); the default build runs
  // them all through the command.
  const std::size_t every = tests::sanitizer_scale() ? 4 : 1;
  const std::size_t all_kinds = std::size(kMalformed);
  std::size_t kinds = 0, index = 0;
  for (const Malformed& m : kMalformed) {
    if (index++ % every != 0) continue;
    const std::string path = tmp.write(std::string(m.name) + ".trace", m.text);
    for (const char* verb : {"check", "explore"}) {
      const auto r = run_command(std::string(verb) + " " + path);
      EXPECT_EQ(r.exit_code, 2) << m.name << " " << verb << ": " << r.out;
      const std::string where = path + ":" + std::to_string(m.line) + ":" + std::to_string(m.col) + ": ";
      EXPECT_NE(r.out.find(where), std::string::npos) << m.name << ": " << r.out;
      EXPECT_NE(r.out.find(m.message), std::string::npos) << m.name << ": " << r.out;
      EXPECT_EQ(r.out.find("verdict"), std::string::npos) << "nothing may run: " << r.out;
    }
    ++kinds;
  }
  EXPECT_GE(all_kinds, 15u);
  EXPECT_EQ(kinds, (all_kinds + every - 1) / every);
}

TEST(TraceCommand, JsonAndRenderings) {
  const auto j = run_command("explore " + examples("04_free_while_reading.trace") + " --json --schedules 20");
  EXPECT_EQ(j.exit_code, 1);
  EXPECT_EQ(j.out.rfind("{\"tool\":\"streamcheck\",\"schema_version\":3", 0), 0u) << j.out;
  const auto svg = run_command("render " + examples("01_missing_wait.trace") + " --format svg");
  EXPECT_NE(svg.out.find("<svg"), std::string::npos);
  EXPECT_NE(svg.out.find("</svg>"), std::string::npos);
  const auto dot = run_command("render " + examples("01_missing_wait.trace") + " --format dot");
  EXPECT_NE(dot.out.find("digraph"), std::string::npos);
  const auto perfetto = run_command("render " + examples("01_missing_wait.trace") + " --format perfetto");
  EXPECT_EQ(perfetto.out.rfind("{\"traceEvents\":[", 0), 0u);
  EXPECT_EQ(run_command("render " + examples("01_missing_wait.trace") + " --format png").exit_code, 2);
  EXPECT_EQ(run_command("render " + examples("01_missing_wait.trace") + " --format svg").out,
            run_command("render " + examples("01_missing_wait.trace") + " --format svg").out);
}

}  // namespace
}  // namespace streamcheck::tools
