// The streamcheck command line (CLI11): help on every verb, --version, and the
// one exit-code table -- the same bad input exits 2 whichever verb reads it.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/temp_dir.h"
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

// STREAMCHECK_JEMALLOC: the command runs on jemalloc with transparent huge
// pages (tools/allocator_config.cpp). jemalloc prints its options at exit
// when MALLOC_CONF asks; the C library's malloc ignores the variable.
TEST(Cli, TheCommandRunsOnJemallocWithHugePages) {
  if (!STREAMCHECK_JEMALLOC_LINKED) GTEST_SKIP() << "built with STREAMCHECK_JEMALLOC off (a sanitizer preset)";
  const auto r = run_shell("MALLOC_CONF=stats_print:true " + std::string(STREAMCHECK_BIN) + " --version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("opt.thp: \"always\""), std::string::npos) << r.out.substr(0, 2000);
  EXPECT_NE(r.out.find("opt.metadata_thp: \"auto\""), std::string::npos) << r.out.substr(0, 2000);
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
    // Nothing ran: no report (with --json the error is a JSON object whose
    // verdict is "input error", issue 10 S6; it has no coverage).
    EXPECT_EQ(r.out.find("verdict:"), std::string::npos) << "nothing may run: " << args << ": " << r.out;
    EXPECT_EQ(r.out.find("\"coverage\""), std::string::npos) << "nothing may run: " << args << ": " << r.out;
  }
}

/// Each verb that reads a trace, with the options it needs to run, and FILE in the middle.
std::vector<std::string> trace_verbs(const std::string& file) {
  return {"check " + file, "explore " + file + " --schedules 3", "replay " + file + " --schedule 0",
          "render " + file + " --format text"};
}

// S2 and S7: a directory, an empty or comment-only file and /dev/null were
// "verdict: clean", exit 0; a missing file was `FILE:0:0: cannot read the
// file` (or CLI11's "File does not exist") without the OS's reason.
TEST(Cli, CaptureRefusesWhatItCannotDoWithExit2) {
  // docs/CAPTURE.md: no program, a malformed --kernels file (read before
  // anything runs), a --library that is not there, and a program run where it
  // cannot be captured: without a driver or GPU (the CPU machines) the
  // command stops before running it; with one, `true` makes no CUDA call and
  // leaves no trace. Never an empty program explored as clean.
  const tests::FreshTempDir temp("cli-capture");
  const std::string kernels = (temp.path() / "kernels.txt").string();
  { std::ofstream(kernels) << "scale | reads writes -\nbroken line\n"; }
  const auto none = run_command("capture");
  EXPECT_EQ(none.exit_code, 2) << none.out;
  const auto bad_kernels = run_command("capture --kernels " + kernels + " -- true");
  EXPECT_EQ(bad_kernels.exit_code, 2) << bad_kernels.out;
  EXPECT_NE(bad_kernels.out.find(kernels + ":2: expected 'KERNEL | ACCESS ...'"), std::string::npos) << bad_kernels.out;
  const auto no_library = run_command("capture --library /nonexistent/libx.so -- true");
  EXPECT_EQ(no_library.exit_code, 2) << no_library.out;
  EXPECT_NE(no_library.out.find("--library /nonexistent/libx.so: no such file"), std::string::npos) << no_library.out;
  // --ptx: a missing file, and text that is not PTX, before anything runs.
  const auto no_ptx_file = run_command("capture --ptx /nonexistent/k.ptx -- true");
  EXPECT_EQ(no_ptx_file.exit_code, 2) << no_ptx_file.out;
  EXPECT_NE(no_ptx_file.out.find("--ptx /nonexistent/k.ptx: no such file"), std::string::npos) << no_ptx_file.out;
  const auto not_ptx = run_command("capture --ptx " + kernels + " -- true");
  EXPECT_EQ(not_ptx.exit_code, 2) << not_ptx.out;
  EXPECT_NE(not_ptx.out.find(kernels + ": not PTX text"), std::string::npos) << not_ptx.out;
  const auto kernels_of_text = run_command("kernels " + kernels);
  EXPECT_EQ(kernels_of_text.exit_code, 2) << kernels_of_text.out;
  EXPECT_NE(kernels_of_text.out.find(kernels + ": not PTX text"), std::string::npos) << kernels_of_text.out;
  const auto no_cuda = run_command("capture --trace " + (temp.path() / "t.trace").string() + " -- true");
  EXPECT_EQ(no_cuda.exit_code, 2) << no_cuda.out;
  const bool refused_here = no_cuda.out.find("streamcheck capture: cannot capture here: ") != std::string::npos;
  const bool nothing_captured = no_cuda.out.find("no trace was written: it made no CUDA call") != std::string::npos;
  EXPECT_TRUE(refused_here || nothing_captured) << no_cuda.out;
  EXPECT_EQ(no_cuda.out.find("verdict"), std::string::npos) << no_cuda.out;
}

TEST(Cli, ATraceFileWithNothingToCheckIsAnInputErrorWithTheOsReason) {
  const tests::FreshTempDir temp("cli-input");
  const std::string dir = temp.path().string();
  temp.write("empty.trace", "");
  temp.write("comments.trace", "# only a comment\n\n   \n");
  const std::string no_statements = "the trace has no statements";
  const std::pair<std::string, std::string> cases[] = {
      {dir + "/empty.trace", no_statements},
      {dir + "/comments.trace", no_statements},
      {"/dev/null", no_statements},
      {dir, std::string("cannot read the trace: ") + std::strerror(EISDIR)},
      {dir + "/missing.trace", std::string("cannot read the trace: ") + std::strerror(ENOENT)},
  };
  for (const auto& [file, why] : cases)
    for (const std::string& args : trace_verbs(file)) {
      const auto r = run_command(args);
      EXPECT_EQ(r.exit_code, 2) << args << ": " << r.out;
      EXPECT_NE(r.out.find(file + ": " + why), std::string::npos) << args << ": " << r.out;
      EXPECT_EQ(r.out.find(":0:0:"), std::string::npos) << args << ": " << r.out;
      EXPECT_EQ(r.out.find("verdict"), std::string::npos) << "nothing may run: " << args << ": " << r.out;
    }
}

// S7: an unknown option was reported as the value of the option before it
// ("Could not convert"), as a missing FILE, or as a FILE that does not exist.
TEST(Cli, AnUnknownOptionIsReportedAsUnknownForEveryVerb) {
  const std::string trace = example("01_missing_wait.trace");
  const std::pair<const char*, const char*> unknown[] = {
      {" --bogus", "--bogus"}, {" --bogus 1", "--bogus"}, {" --bogus=1", "--bogus=1"}, {" -x", "-x"}};
  for (const std::string& verb : trace_verbs(trace))
    for (const auto& [suffix, shown] : unknown) {
      const auto r = run_command(verb + suffix);
      EXPECT_EQ(r.exit_code, 2) << verb + suffix << ": " << r.out;
      EXPECT_NE(r.out.find(std::string("unknown option '") + shown + "' for `streamcheck " +
                           verb.substr(0, verb.find(' ')) + "`"),
                std::string::npos)
          << verb + suffix << ": " << r.out;
    }
  for (const std::string& args : {std::string("check --bogus"), "check --bogus " + trace, "check --Seed 3 " + trace,
                                  "check --seed --bogus " + trace, std::string("explore --bogus"),
                                  std::string("counterexamples --bogus"), "--bogus check " + trace}) {
    const auto r = run_command(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find("unknown option '--"), std::string::npos) << args << ": " << r.out;
    EXPECT_EQ(r.out.find("required"), std::string::npos) << args << ": " << r.out;
    EXPECT_EQ(r.out.find("does not exist"), std::string::npos) << args << ": " << r.out;
    EXPECT_EQ(r.out.find("convert"), std::string::npos) << args << ": " << r.out;
  }
  const auto missing_value = run_command("check " + trace + " --seed --json");
  EXPECT_EQ(missing_value.exit_code, 2);
  EXPECT_NE(missing_value.out.find("--seed needs a value, but the next argument is the option '--json'"),
            std::string::npos)
      << missing_value.out;
}

TEST(Cli, NegativeAndOversizedNumbersAreRefusedNotWrapped) {
  const std::string trace = example("01_missing_wait.trace");
  for (const std::string& args :
       {"check " + trace + " --seed=-1", "check " + trace + " --seed 18446744073709551616",
        "explore " + trace + " --schedules -1", "check " + trace + " --policy release_threshold=-1"}) {
    const auto r = run_command(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.out;
    EXPECT_EQ(r.out.find("verdict"), std::string::npos) << "nothing may run: " << args << ": " << r.out;
  }
}

// S7: what a usage message quotes of an argument is escaped and cut.
TEST(Cli, ArgumentsAreQuotedEscapedAndCut) {
  const std::string trace = example("01_missing_wait.trace");
  const auto control = run_command("check " + trace + " --faults \"$(printf 'on\\033[31m')\"");
  EXPECT_EQ(control.exit_code, 2) << control.out;
  EXPECT_EQ(control.out.find('\x1b'), std::string::npos) << control.out;
  EXPECT_NE(control.out.find("on\\x1B[31m"), std::string::npos) << control.out;
  const auto long_value = run_command("check " + trace + " --policy opportunistic=" + std::string(100000, 'y'));
  EXPECT_EQ(long_value.exit_code, 2);
  EXPECT_LT(long_value.out.size(), 1000u) << long_value.out.substr(0, 1000);
  EXPECT_NE(long_value.out.find("... (100000 bytes)"), std::string::npos) << long_value.out.substr(0, 1000);
}

TEST(Cli, RenderFindingAndWindowOutOfRangeAreUsageErrorsThatSayWhy) {
  const std::string render = "render " + example("01_missing_wait.trace") + " --format svg";
  const auto beyond = run_command(render + " --finding 2");
  EXPECT_EQ(beyond.exit_code, 2) << beyond.out;
  EXPECT_NE(beyond.out.find("--finding 2: this schedule has 1 finding"), std::string::npos) << beyond.out;
  for (const char* bad : {" --finding 0", " --window 3", " --window 4:2", " --window a:b"}) {
    const auto r = run_command(render + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.out;
    EXPECT_EQ(r.out.find("<svg"), std::string::npos) << bad << ": " << r.out;
  }
  const auto one = run_command(render + " --finding 1 --window 0:3");
  EXPECT_EQ(one.exit_code, 1) << one.out;  // the schedule's findings, drawn or not
  EXPECT_NE(one.out.find("finding 1 of 1: only the calls that explain it; API calls [0, 3) of 6"), std::string::npos)
      << one.out;
}

TEST(Cli, RepeatedPolicySwitchesApplyInOrder) {
  const auto r = run_command("check " + example("01_missing_wait.trace") +
                             " --policy opportunistic=off --policy release_threshold=64 --policy opportunistic=on");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("opportunistic=on internal-dependencies=on release-threshold=64"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace streamcheck::tools
