// Schedules that always replay (issue 10 item 3): the v2 header carries the
// options that change the choice space, a schedule that does not fit is an
// error that says where, long schedules go to a file the report names, and
// `explain` words each choice. As the real command, for exit codes and text.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "tests/temp_dir.h"
#include "tests/tools/schedule_test_util.h"

namespace streamcheck::tools {
namespace {

using tests::FreshTempDir;

// S3: a schedule printed by `explore --faults on` replays as printed, with
// no option on the replay command line: the header carries --faults.
TEST(Schedules, FaultSchedulesReplayAsPrinted) {
  std::size_t replayed = 0;
  for (const char* name : {"10_resource_mutant_m4.trace", "11_resource_mutant_m1.trace"}) {
    const std::string trace = example(name);
    const auto explored = json_of("explore " + trace + " --faults on --schedules 50", 1);
    for (const auto& f : explored["findings"]) {
      const std::string schedule = schedule_of(explored, f);
      EXPECT_TRUE(schedule.starts_with("v2,faults:")) << schedule;
      const auto again = json_of("replay " + trace + " --schedule " + schedule, 1);
      bool same = false;
      for (const auto& g : again["findings"])
        same = same || (g["kind"] == f["kind"] && g["first"] == f["first"] &&
                        g.value("second", nlohmann::json()) == f.value("second", nlohmann::json()) &&
                        schedule_of(again, g) == schedule);
      EXPECT_TRUE(same) << name << ": " << f.dump() << "\nnot reproduced by replay:\n" << again.dump();
      ++replayed;
    }
  }
  EXPECT_GE(replayed, 2u);
}

// S3: extra characters after the program finished are refused (exit 2),
// as is a schedule that ends early; each says where.
TEST(Schedules, ScheduleThatDoesNotFitIsRefusedSayingWhere) {
  const std::string trace = example("01_missing_wait.trace");
  const std::string schedule = "v2:0101000";  // 7 choices, a data race
  ASSERT_EQ(run_command("replay " + trace + " --schedule " + schedule).exit_code, 1);

  const auto extra = run_command("replay " + trace + " --schedule " + schedule + "0");
  EXPECT_EQ(extra.exit_code, 2) << extra.out;
  EXPECT_TRUE(contains(extra.out, "the program finished after 7 choices, but the schedule has 1 more")) << extra.out;
  EXPECT_FALSE(contains(extra.out, "verdict")) << extra.out;

  const auto early = run_command("replay " + trace + " --schedule v2:0101");
  EXPECT_EQ(early.exit_code, 2) << early.out;
  EXPECT_TRUE(contains(early.out,
                       "it ends after 4 choices, but choice 5 (a device step, asked at line 9 (record consumed on "
                       "s2)) has 2 options (0-1)"))
      << early.out;

  const auto wrong = run_command("render " + trace + " --format text --schedule v2:0101005");
  EXPECT_EQ(wrong.exit_code, 2) << wrong.out;
  EXPECT_TRUE(contains(wrong.out,
                       "choice 7 (a device step, asked at line 11 (free A on s1)) has 2 options (0-1), but the "
                       "schedule gives 5"))
      << wrong.out;
}

// The header decides the run; the command line may repeat it, not change it.
TEST(Schedules, CommandLineThatContradictsTheHeaderIsRefused) {
  const std::string trace = example("01_missing_wait.trace");
  const auto r = json_of("check " + trace + " --policy opportunistic=off", 1);
  const std::string schedule = schedule_of(r, r["findings"][0]);
  EXPECT_TRUE(schedule.starts_with("v2,observed,opportunistic=off:")) << schedule;
  EXPECT_EQ(run_command("replay " + trace + " --schedule " + schedule).exit_code, 1);
  EXPECT_EQ(run_command("replay " + trace + " --schedule " + schedule + " --policy opportunistic=off").exit_code, 1);
  EXPECT_EQ(run_command("replay " + trace + " --schedule " + schedule + " --faults off").exit_code, 1);
  const auto policy = run_command("replay " + trace + " --schedule " + schedule + " --policy opportunistic=on");
  EXPECT_EQ(policy.exit_code, 2) << policy.out;
  EXPECT_TRUE(contains(policy.out, "leave --policy out: the header sets it")) << policy.out;
  const auto faults = run_command("replay " + trace + " --schedule " + schedule + " --faults on");
  EXPECT_EQ(faults.exit_code, 2) << faults.out;
  EXPECT_TRUE(contains(faults.out, "recorded with --faults off")) << faults.out;
  const auto unknown = run_command("replay " + trace + " --schedule v2,bogus=on:0");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.out;
  EXPECT_TRUE(contains(unknown.out, "unknown pool switch 'bogus'")) << unknown.out;
}

// A schedule written before version 2 has no header: it replays with the
// options of the command line, as it always did.
TEST(Schedules, HeaderlessScheduleReplaysWithTheCommandLineOptions) {
  const std::string trace = example("11_resource_mutant_m1.trace");
  const auto r = json_of("explore " + trace + " --faults on --schedules 50", 1);
  const std::string schedule = schedule_of(r, r["findings"][0]);
  const std::string body = schedule.substr(schedule.find(':') + 1);
  const auto again = json_of("replay " + trace + " --schedule " + body + " --faults on", 1);
  EXPECT_EQ(schedule_of(again, again["findings"][0]), schedule);
  EXPECT_EQ(run_command("replay " + trace + " --schedule " + body).exit_code, 2);  // without its --faults: no fit
}

// S8c: each finding prints its schedule once (it used to print it twice:
// `schedule: X  (streamcheck replay FILE --schedule X)`).
TEST(Schedules, EachFindingPrintsItsScheduleOnce) {
  const std::string trace = example("11_resource_mutant_m1.trace");
  const auto json = json_of("explore " + trace + " --faults on --schedules 50", 1);
  const auto text = run_command("explore " + trace + " --faults on --schedules 50");
  ASSERT_EQ(text.exit_code, 1) << text.out;
  std::map<std::string, std::size_t> findings_with;
  for (const auto& f : json["findings"]) ++findings_with[schedule_of(json, f)];
  for (const auto& [schedule, n] : findings_with) {
    EXPECT_EQ(count(text.out, schedule), n) << schedule << " in\n" << text.out;
    EXPECT_EQ(count(text.out, "--schedule " + schedule + "\n"), n) << text.out;
  }
}

// A loop with a race in each iteration: its findings share the schedule of
// the run that showed them, which the JSON lists once in `schedule_texts`
// and each finding names by its index (schema_version 3; each finding
// repeated the whole text before, quadratic in the loop's iterations).
TEST(Schedules, JsonListsEachScheduleOnceAndEachFindingReplaysFromItsIndex) {
  const FreshTempDir dir("schedule-once");
  std::string t = "stream s1\nstream s2\nevent e\nbuffer A 4096 on s1\n";
  for (int i = 0; i < 30; ++i) t += "launch produce on s1 writes A\nrecord e on s1\nlaunch consume on s2 reads A\n";
  t += "sync device\nfree A on s1\n";
  const std::string trace = dir.write("loop.trace", t).string();
  const auto json = json_of("explore " + trace + " --schedules 20", 1);
  const auto& texts = json["schedule_texts"];
  const auto& findings = json["findings"];
  ASSERT_GE(findings.size(), 50u) << findings.size();
  std::set<std::string> distinct;
  for (const auto& text : texts) distinct.insert(text.get<std::string>());
  EXPECT_EQ(distinct.size(), texts.size()) << texts.dump();
  std::set<std::size_t> named;
  for (const auto& f : findings) named.insert(f["schedule"].get<std::size_t>());
  EXPECT_EQ(named.size(), texts.size()) << "a listed schedule no finding names";
  for (std::size_t i = 0; i < findings.size(); i += 13) {
    const auto& f = findings[i];
    const std::string schedule = schedule_of(json, f);
    const auto again = json_of("replay " + trace + " --schedule " + schedule, 1);
    bool same = false;
    for (const auto& g : again["findings"])
      same = same || (g["kind"] == f["kind"] && g["first"] == f["first"] && g["second"] == f["second"] &&
                      schedule_of(again, g) == schedule);
    EXPECT_TRUE(same) << f.dump() << "\nnot reproduced by its schedule " << schedule;
  }
}

/// A trace whose schedule is long: `launches` kernels on each of 4 streams,
/// and a reader on s1 that never waits for s0's writer.
std::string long_trace(int launches) {
  std::string t = "stream s0\nstream s1\nstream s2\nstream s3\nevent e\n";
  for (int s = 0; s < 4; ++s) t += "buffer B" + std::to_string(s) + " 4096 on s" + std::to_string(s) + "\n";
  for (int i = 0; i < launches; ++i)
    for (int s = 0; s < 4; ++s)
      t += "launch k" + std::to_string(s) + " on s" + std::to_string(s) + " writes B" + std::to_string(s) + "\n";
  t += "launch peek on s1 reads B0\nrecord e on s1\nwait e on s0\n";
  for (int s = 0; s < 4; ++s) t += "free B" + std::to_string(s) + " on s" + std::to_string(s) + "\n";
  return t;
}

// S8c: a long schedule goes to a file that the text report names, with the
// command that replays it; JSON keeps the whole schedule (it is data), once.
// `explore` makes it: every device step of a random schedule is a choice,
// where `check` steps the device only on observation (the test below).
TEST(Schedules, LongScheduleGoesToAFileThatReplays) {
  const FreshTempDir dir("long-schedule");
  const std::string trace = dir.write("long.trace", long_trace(200)).string();
  const std::string save = " --save-schedules " + dir.path().string();
  const auto check = run_command("explore " + trace + " --schedules 1" + save);
  ASSERT_EQ(check.exit_code, 1) << check.out;
  const std::string file = dir.file("long.trace.1.schedule").string();
  EXPECT_TRUE(contains(check.out, "replay:   streamcheck replay " + trace + " --schedule-file " + file + "\n"))
      << check.out;
  EXPECT_LE(longest_line(check.out), 300u) << check.out;
  const auto json = json_of("explore " + trace + " --schedules 1", 1);
  const std::string schedule = schedule_of(json, json["findings"][0]);
  EXPECT_GT(schedule.size(), 200u);
  EXPECT_EQ(read_file(file), schedule + "\n");

  const auto replay = run_command("replay " + trace + " --schedule-file " + file + save);
  EXPECT_EQ(replay.exit_code, 1) << replay.out;
  EXPECT_EQ(findings_before_coverage(replay.out), findings_before_coverage(check.out));
  const auto render = run_command("render " + trace + " --format text --schedule-file " + file);
  EXPECT_EQ(render.exit_code, 1) << render.out;
  EXPECT_EQ(run_command("explain " + trace + " --schedule-file " + file).exit_code, 0);
  EXPECT_EQ(run_command("replay " + trace + " --schedule-file " + dir.file("none").string()).exit_code, 2);
  EXPECT_EQ(run_command("replay " + trace + " --schedule-file " + file + " --schedule v2:0").exit_code, 2);
}

// `check` steps the device only where the host observes it: a trace that
// observes nothing (no query, no pool reuse of a pending free) makes no
// choice, so its one run is its only execution, said so, and its schedule
// is the header alone, shown inline and replaying the same findings.
TEST(Schedules, CheckOfATraceThatObservesNothingIsItsOnlyExecution) {
  const FreshTempDir dir("observes-nothing");
  const std::string trace = dir.write("long.trace", long_trace(200)).string();
  const auto json = json_of("check " + trace, 1);
  EXPECT_EQ(json["coverage"]["exhaustive"], true) << json["coverage"];
  EXPECT_EQ(json["coverage"]["executions"], 1) << json["coverage"];
  EXPECT_EQ(json["coverage"]["unexplored"]["device_steps"], 0) << json["coverage"];
  const std::string schedule = schedule_of(json, json["findings"][0]);
  EXPECT_EQ(schedule, "v2,observed:-");
  const auto check = run_command("check " + trace);
  ASSERT_EQ(check.exit_code, 1) << check.out;
  EXPECT_TRUE(contains(check.out, "replay:   streamcheck replay " + trace + " --schedule " + schedule + "\n"))
      << check.out;
  EXPECT_TRUE(contains(check.out, "coverage: exhaustive: the run made no choice")) << check.out;
  EXPECT_TRUE(contains(check.out, "this execution is the trace's only one")) << check.out;
  const auto replay = run_command("replay " + trace + " --schedule " + schedule);
  EXPECT_EQ(replay.exit_code, 1) << replay.out;
  EXPECT_EQ(findings_part(replay.out), findings_part(check.out));
  const auto dfs = json_of("explore " + trace + " --strategy dfs", 1);
  EXPECT_EQ(dfs["coverage"]["executions"], 1) << "dfs agrees: one execution";
  EXPECT_EQ(dfs["findings"].size(), json["findings"].size());
}

// `explain` words every choice: the line that asked it and what it did.
TEST(Schedules, ExplainWordsEachChoice) {
  const std::string reuse = example("05_opportunistic_reuse.trace");
  const auto r = run_command("explain " + reuse + " --schedule v2:01111110");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(count(r.out, "\nchoice "), 8u) << r.out;
  EXPECT_TRUE(contains(r.out,
                       "choice 6, line 16 (buffer B 4096 on s2): pool range, 2 options, answer 1: the pool gives line "
                       "16 (buffer B 4096 on s2) [s2#0] the range freed by line 15 (free A on s0) [s0#2] (reuse: "
                       "opportunistic)"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "device step, 2 options, answer 0: no stream head completes; the host goes on")) << r.out;
  EXPECT_TRUE(contains(r.out, ": s0 completes line 10 (buffer A 4096 on s0) [s0#0]")) << r.out;

  EXPECT_TRUE(contains(run_command("explain " + reuse + " --schedule v2:010100002110").out,
                       "choice 9, after the last line, while the device drains: device step, 3 options, answer 2: s2 "
                       "completes line 16 (buffer B 4096 on s2) [s2#0]"));

  // `check --faults on --seed 2`'s schedule, its last choice turned to 1: a
  // fault fires at the last resource call.
  const auto f =
      run_command("explain " + example("11_resource_mutant_m1.trace") + " --schedule v2,faults:0110000100100010000011");
  EXPECT_EQ(f.exit_code, 0) << f.out;
  EXPECT_TRUE(contains(f.out,
                       "choice 22, line 13 (reap): fault point, 2 options, answer 1: a fault is injected: this "
                       "resource backend call fails, and the program retries it"))
      << f.out;
  EXPECT_EQ(run_command("explain " + reuse + " --schedule v2:011111100").exit_code, 2);
}

}  // namespace
}  // namespace streamcheck::tools
