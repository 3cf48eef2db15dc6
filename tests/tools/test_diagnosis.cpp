// Reports that point at the cause (issue 10 item 4): the bytes of a finding
// range by range, each named by its buffer, never their hull (S8b).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend_sim/byte_range.h"
#include "tools/explain.h"
#include "tools/trace.h"
#include "tools/trace_check.h"

namespace streamcheck::tools {
namespace {

Report check_text(const std::string& text) { return check_trace(parse_trace(text, "t.trace"), TraceCheckOptions{}); }

const ReportFinding& only_error(const Report& r) {
  std::vector<const ReportFinding*> errors;
  for (const auto& f : r.findings)
    if (f.severity == Severity::Error) errors.push_back(&f);
  EXPECT_EQ(errors.size(), 1u) << report_text(r);
  return *errors.at(0);
}

TEST(ByteRanges, AddKeepsTheUnionSortedNeverTheHull) {
  std::vector<sim::ByteRange> r;
  sim::add_range(r, {128, 192});
  sim::add_range(r, {0, 64});
  EXPECT_EQ(r, (std::vector<sim::ByteRange>{{0, 64}, {128, 192}}));
  sim::add_range(r, {64, 100});  // touches [0, 64): merged with it
  EXPECT_EQ(r, (std::vector<sim::ByteRange>{{0, 100}, {128, 192}}));
  sim::add_range(r, {90, 130});  // bridges both
  EXPECT_EQ(r, (std::vector<sim::ByteRange>{{0, 192}}));
  sim::add_range(r, {300, 300});  // empty: nothing
  EXPECT_EQ(sim::total_size(r), 192u);
}

// S8b: two ops that overlap on A[0:64], A[128:192] and all of C were
// reported on their hull, [A+0, C+256) as raw addresses, naming the bytes
// A[64:128], A[192:256] and the whole of B that nobody races on.
constexpr const char* kStridedOverTwoBuffers =
    "stream s1\n"
    "stream s2\n"
    "buffer A 256 on s1\n"
    "buffer B 256 on s1\n"
    "buffer C 256 on s1\n"
    "sync device\n"
    "launch k1 on s1 writes A[0:64], A[128:192], C\n"
    "launch k2 on s2 reads A, C\n"
    "sync device\n"
    "free A on s1\nfree B on s1\nfree C on s1\n";

TEST(ByteRanges, DisjointRangesOfOnePairAreNamedOneByOneByTheirBuffers) {
  const Report r = check_text(kStridedOverTwoBuffers);
  const ReportFinding& f = only_error(r);
  ASSERT_EQ(f.bytes.size(), 3u) << describe(f.bytes);
  for (const auto& b : f.bytes) ASSERT_TRUE(b.in_buffer) << describe(f.bytes);
  EXPECT_EQ(f.bytes[0].in_buffer->buffer, "A");
  EXPECT_EQ(f.bytes[0].in_buffer->lo, 0u);
  EXPECT_EQ(f.bytes[0].in_buffer->hi, 64u);
  EXPECT_EQ(f.bytes[1].in_buffer->lo, 128u);
  EXPECT_EQ(f.bytes[1].in_buffer->hi, 192u);
  EXPECT_EQ(f.bytes[2].in_buffer->buffer, "C");
  EXPECT_EQ(describe(f.bytes), "A[0:64], A[128:192], C[0:256]");
  EXPECT_NE(report_text(r).find("  bytes:    A[0:64], A[128:192], C[0:256]\n"), std::string::npos) << report_text(r);

  const auto j = nlohmann::json::parse(report_json(r));
  const auto& ranges = j["findings"][0]["ranges"];
  ASSERT_EQ(ranges.size(), 3u) << j.dump();
  EXPECT_EQ(ranges[1]["buffer"], "A");
  EXPECT_EQ(ranges[1]["offsets"], nlohmann::json::array({128, 192}));
  EXPECT_EQ(ranges[1]["address"][1].get<std::uint64_t>() - ranges[1]["address"][0].get<std::uint64_t>(), 64u);
  EXPECT_EQ(j["findings"][0]["bytes"], "A[0:64], A[128:192], C[0:256]");
}

TEST(ByteRanges, ACopyRacesOnlyOnTheBytesTheWriterWrote) {
  // The copy reads all of X; the kernel wrote X's first and last quarter:
  // the race is on those two, not on X[64:192] between them.
  const Report r = check_text(
      "stream s1\nstream s2\nbuffer X 256 on s1\nbuffer Y 256 on s1\nsync device\n"
      "launch fill on s1 writes X[0:64], X[192:256]\n"
      "copy back on s2 from X to Y\n"
      "sync device\nfree X on s1\nfree Y on s1\n");
  EXPECT_EQ(describe(only_error(r).bytes), "X[0:64], X[192:256]") << report_text(r);
}

}  // namespace
}  // namespace streamcheck::tools
