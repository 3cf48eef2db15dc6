// The `streamcheck explore` job: in-process for exact output, and as the
// real command for exit codes.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <sstream>
#include <string>
#include <sys/wait.h>

#include "tools/explore.h"

namespace streamcheck::tools {
namespace {

struct CommandResult {
  int exit_code;
  std::string out;
};

CommandResult run_command(const std::string& args) {
  const std::string cmd = std::string(STREAMCHECK_BIN) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed for " + cmd);
  std::string out;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), pipe)) out += buf.data();
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

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
  EXPECT_NE(out.find("explored 960 schedules"), std::string::npos) << out;
  EXPECT_NE(out.find("findings: none"), std::string::npos) << out;
}

TEST(Explore, SameSeedSameBytes) {
  ExploreOptions o;
  o.programs = 30;
  o.seed = 99;
  o.mutant = MutantId::M11;
  int c1 = -1, c2 = -1;
  const std::string a = explore_text(o, c1);
  const std::string b = explore_text(o, c2);
  EXPECT_EQ(c1, 1);
  EXPECT_EQ(a, b);
}

TEST(Explore, EveryMutantGivesAShrunkCounterexample) {
  for (const auto& m : kMutants) {
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
}

TEST(Explore, ReproduceLineCarriesEveryNonDefaultOption) {
  ExploreOptions o;
  o.seed = 3;
  o.schedules_per_program = 4;
  o.program_length = 30;
  o.mutant = MutantId::M5;
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
  EXPECT_EQ(run_command("explore --mutant M12").exit_code, 2);
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
  const auto c = run_command("explore --seed 5 --mutant M2");
  const auto d = run_command("explore --seed 5 --mutant M2");
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_EQ(c.out, d.out);
}

}  // namespace
}  // namespace streamcheck::tools
