// Issue 10 acceptance: a 1 M-op trace with findings -- its text report is
// at most 1 MB, and its schedule, saved to a file, replays byte-identically.
// Its own binary (label slow): ~20 s in the default preset; under ASan it
// runs 100 k ops.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "tests/temp_dir.h"
#include "tests/tools/schedule_test_util.h"

namespace streamcheck::tools {
namespace {

using tests::FreshTempDir;

/// The acceptance trace: 8 streams, each writing its own buffer, and every
/// 10 000 rounds a reader that misses its wait (then orders the writer's
/// stream after itself, so one missing wait is one finding).
std::string acceptance_trace(std::size_t ops) {
  std::string t;
  t.reserve(ops * 26);
  for (int s = 0; s < 8; ++s) t += "stream s" + std::to_string(s) + "\n";
  for (int s = 0; s < 8; ++s) t += "event e" + std::to_string(s) + "\n";
  for (int s = 0; s < 8; ++s) t += "buffer B" + std::to_string(s) + " 4096 on s" + std::to_string(s) + "\n";
  std::size_t n = 8;
  for (std::size_t round = 1; n < ops; ++round) {
    for (int s = 0; s < 8; ++s)
      t += "launch k" + std::to_string(s) + " on s" + std::to_string(s) + " writes B" + std::to_string(s) + "\n";
    n += 8;
    if (round % 10000 == 0) {
      const std::size_t w = (round / 10000) % 8, r = (w + 1) % 8;
      t += "launch peek on s" + std::to_string(r) + " reads B" + std::to_string(w) + "\nrecord e" + std::to_string(r) +
           " on s" + std::to_string(r) + "\nwait e" + std::to_string(r) + " on s" + std::to_string(w) + "\n";
      ++n;
    }
  }
  for (int s = 0; s < 8; ++s) t += "free B" + std::to_string(s) + " on s" + std::to_string(s) + "\n";
  return t;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr std::size_t kAcceptanceOps = 100000;  // ASan: ~3x slower and bigger; the 1 M case runs in the default preset
#else
constexpr std::size_t kAcceptanceOps = 1000000;
#endif

TEST(Schedules, MillionOpTraceReportIsSmallAndReplaysFromAFile) {
  const FreshTempDir dir("million-ops");
  const std::string trace = dir.write("million.trace", acceptance_trace(kAcceptanceOps)).string();
  const std::string save = " --save-schedules " + dir.path().string();
  const auto start = std::chrono::steady_clock::now();
  // `explore`'s random schedule: a choice at every device step, as `check`
  // made before it stepped the device only on observation (issue 16).
  const auto check = run_command("explore " + trace + " --schedules 1" + save);
  const auto checked = std::chrono::steady_clock::now();
  ASSERT_EQ(check.exit_code, 1) << check.out.substr(0, 4000);
  EXPECT_LE(check.out.size(), 1000000u);
  EXPECT_LE(longest_line(check.out), 400u);
  // Every 100,000 ops a race; those on the same statements fold into one
  // block of the text (`repeats:`), and the verdict counts them all.
  EXPECT_GE(count(check.out, "\ndata race "), 1u) << check.out.substr(0, 4000);
  const auto verdict = check.out.find("\nverdict: ");
  ASSERT_NE(verdict, std::string::npos) << check.out.substr(0, 4000);
  EXPECT_GE(std::stoul(check.out.substr(verdict + 10)), kAcceptanceOps / 100000) << check.out.substr(verdict);
  const std::string file = dir.file("million.trace.1.schedule").string();
  ASSERT_TRUE(contains(check.out, "--schedule-file " + file + "\n")) << check.out.substr(0, 4000);
  const auto replay = run_command("replay " + trace + " --schedule-file " + file + save);
  const auto replayed = std::chrono::steady_clock::now();
  EXPECT_EQ(replay.exit_code, 1);
  EXPECT_EQ(findings_before_coverage(replay.out), findings_before_coverage(check.out));
  const auto seconds = [](auto d) { return std::chrono::duration<double>(d).count(); };
  std::printf("%zu ops: report %zu bytes, schedule file %zu bytes; check %.1f s, replay %.1f s\n", kAcceptanceOps,
              check.out.size(), read_file(file).size(), seconds(checked - start), seconds(replayed - checked));
}

}  // namespace
}  // namespace streamcheck::tools
