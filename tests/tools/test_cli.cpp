// The streamcheck command line (CLI11): help on every verb, --version, and the
// one exit-code table -- the same bad input exits 2 whichever verb reads it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/tools/command.h"

namespace streamcheck::tools {
namespace {

CommandResult run_command(const std::string& args) { return run_shell(std::string(STREAMCHECK_BIN) + " " + args); }
std::string example(const std::string& name) { return std::string(STREAMCHECK_EXAMPLES_DIR) + "/" + name; }

TEST(Cli, VersionIsTheProjectVersion) {
  const auto r = run_command("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, std::string(STREAMCHECK_VERSION) + "\n");
}

TEST(Cli, EveryVerbHasHelpAndTheTopLevelListsTheExitCodes) {
  for (const char* verb : {"check", "explore", "replay", "render", "counterexamples"}) {
    const auto r = run_command(std::string(verb) + " --help");
    EXPECT_EQ(r.exit_code, 0) << verb;
    EXPECT_NE(r.out.find(std::string("usage: streamcheck ") + verb), std::string::npos) << r.out;
  }
  const auto top = run_command("--help");
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("Exit: 0 clean; 1 findings; 2 usage or input error; 3 streamcheck itself failed."),
            std::string::npos)
      << top.out;
}

TEST(Cli, MalformedScheduleIsAUsageErrorForEveryVerb) {
  const std::string trace = example("01_missing_wait.trace");
  for (const char* schedule : {"'!'", "zzzz"}) {
    const auto replay = run_command("replay " + trace + " --schedule " + schedule);
    EXPECT_EQ(replay.exit_code, 2) << replay.out;
    const auto render = run_command("render " + trace + " --format text --schedule " + schedule);
    EXPECT_EQ(render.exit_code, 2) << render.out;
    EXPECT_EQ(render.out.find("internal error"), std::string::npos) << render.out;
  }
}

TEST(Cli, UsageErrorsExit2) {
  const std::string trace = example("01_missing_wait.trace");
  for (const std::string& args : std::vector<std::string>{
           "", "nosuchverb", "check", "check " + trace + " --seed x", "check " + trace + " --faults maybe",
           "check " + trace + " --bogus 1", "check " + trace + " extra", "explore " + trace + " --schedules 0",
           "explore " + trace + " --programs 3", "explore --json", "explore --policy opportunistic=on",
           "explore --schedules 100001", "explore --mutant M99", "render " + trace, "render " + trace + " --format png",
           "render " + trace + " --format svg --seed 1 --schedule 0", "replay " + trace + " --backend tpu --schedule 0",
           "check " + trace + " --policy opportunistic", "counterexamples /nonexistent-dir"}) {
    const auto r = run_command(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.out;
    EXPECT_EQ(r.out.find("verdict"), std::string::npos) << "nothing may run: " << args << ": " << r.out;
  }
}

TEST(Cli, RepeatedPolicySwitchesApplyInOrder) {
  const auto r = run_command("check " + example("01_missing_wait.trace") +
                             " --policy opportunistic=off --policy release_threshold=64 --policy opportunistic=on");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("opportunistic=on internal-dependencies=on release-threshold=64"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace streamcheck::tools
