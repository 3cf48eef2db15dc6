// tools/render.h: text, DOT, SVG swimlanes and Perfetto JSON of one run.
#include <gtest/gtest.h>

#include <cctype>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "backend_sim/device_model.h"
#include "backend_sim/hb_graph.h"
#include "backend_sim/schedule.h"
#include "tools/render.h"

namespace streamcheck::tools {
namespace {

using sim::DeviceModel;
using sim::OpRef;

KernelAccess wr(std::uint64_t p, std::uint64_t n) { return KernelAccess{p, n, Access::Write, {}}; }
KernelAccess rd(std::uint64_t p, std::uint64_t n) { return KernelAccess{p, n, Access::Read, {}}; }

/// A model together with the chooser it borrows.
struct SimRun {
  explicit SimRun(std::uint64_t seed) : chooser(seed), model(chooser) {}
  sim::RandomChooser chooser;
  DeviceModel model;
};

/// s1 allocates and writes K1; s2 is ordered after the allocation through e0
/// but reads K2 without waiting for K1: one data race, missing K1 -> K2.
std::unique_ptr<SimRun> racy(std::uint64_t seed = 1, std::string k1 = "K1") {
  auto r = std::make_unique<SimRun>(seed);
  DeviceModel& m = r->model;
  const auto s1 = m.create_stream("s1");
  const auto s2 = m.create_stream("s2");
  const auto e0 = m.create_event();
  const auto a = m.alloc(s1, 512);
  m.record(e0, s1);
  m.wait(s2, e0);
  m.launch(s1, {wr(a->ptr, 512)}, std::move(k1));
  m.launch(s2, {rd(a->ptr, 256)}, "K2");
  m.sync_device();
  m.free(s1, a->ptr);
  m.finish();
  return r;
}

/// The same program with the missing edge added: no finding.
std::unique_ptr<SimRun> clean() {
  auto r = std::make_unique<SimRun>(1);
  DeviceModel& m = r->model;
  const auto s1 = m.create_stream("s1");
  const auto s2 = m.create_stream("s2");
  const auto e0 = m.create_event();
  const auto a = m.alloc(s1, 512);
  m.launch(s1, {wr(a->ptr, 512)}, "K1");
  m.record(e0, s1);
  m.wait(s2, e0);
  m.launch(s2, {rd(a->ptr, 256)}, "K2");
  m.sync_stream(s2);
  m.free(s1, a->ptr);
  m.finish();
  return r;
}

/// One stream, an allocation never freed: a leak (a finding without a second op).
std::unique_ptr<SimRun> leaky() {
  auto r = std::make_unique<SimRun>(1);
  DeviceModel& m = r->model;
  const auto s = m.create_stream("main");
  const auto a = m.alloc(s, 128, "buf");
  m.launch(s, {wr(a->ptr, 128)}, "init");
  m.finish();
  return r;
}

std::size_t count(std::string_view hay, std::string_view needle) {
  std::size_t n = 0;
  for (auto pos = hay.find(needle); pos != std::string_view::npos; pos = hay.find(needle, pos + needle.size())) ++n;
  return n;
}

std::vector<OpRef> ops_of(const DeviceModel& m) {
  std::vector<OpRef> out;
  for (std::uint32_t s = 0; s < m.stream_count(); ++s)
    for (std::uint32_t i = 0; i < m.op_count(sim::StreamIndex{s}); ++i) out.push_back(OpRef{sim::StreamIndex{s}, i});
  return out;
}

// ------------------------------------------------------------ checkers

/// Every `<x ...>` is closed by a matching `</x>` (properly nested) or is
/// self-closed; `<?...?>` and `<!--...-->` are skipped. Returns "" when
/// balanced, else what is wrong.
std::string tag_balance(std::string_view s) {
  std::vector<std::string> open;
  std::size_t i = 0;
  while ((i = s.find('<', i)) != std::string_view::npos) {
    if (s.substr(i, 4) == "<!--") {
      const auto e = s.find("-->", i);
      if (e == std::string_view::npos) return "unterminated comment";
      i = e + 3;
      continue;
    }
    const auto e = s.find('>', i);
    if (e == std::string_view::npos) return "unterminated tag at " + std::to_string(i);
    const std::string_view tag = s.substr(i + 1, e - i - 1);
    i = e + 1;
    if (tag.empty()) return "empty tag";
    if (tag.front() == '?') continue;
    if (tag.find('<') != std::string_view::npos) return "'<' inside a tag";
    if (tag.front() == '/') {
      const std::string name(tag.substr(1));
      if (open.empty() || open.back() != name) return "unexpected </" + name + ">";
      open.pop_back();
      continue;
    }
    if (tag.back() == '/') continue;  // self-closed
    std::size_t n = 0;
    while (n < tag.size() && !std::isspace(static_cast<unsigned char>(tag[n]))) ++n;
    open.emplace_back(tag.substr(0, n));
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  return "";
}

TEST(RenderCheckers, TagBalanceHasTeeth) {
  EXPECT_EQ(tag_balance("<?xml?><svg><g><rect/></g><text>a</text></svg>"), "");
  EXPECT_NE(tag_balance("<svg><g></svg>"), "");
  EXPECT_NE(tag_balance("<svg><g></g>"), "");
  EXPECT_NE(tag_balance("<svg></g></svg>"), "");
}

// ------------------------------------------------------------ the model

TEST(RenderModel, RacyProgramHasOneDataRace) {
  const auto r = racy();
  const DeviceModel& m = r->model;
  ASSERT_EQ(m.findings().size(), 1u);
  EXPECT_EQ(m.findings()[0].kind, sim::FindingKind::DataRace);
  EXPECT_EQ(m.findings()[0].first, (OpRef{sim::StreamIndex{0}, 1}));
  ASSERT_TRUE(m.findings()[0].second.has_value());
  EXPECT_EQ(*m.findings()[0].second, (OpRef{sim::StreamIndex{1}, 0}));
  EXPECT_TRUE(clean()->model.findings().empty());
}

TEST(RenderModel, CompletionIndexIsAPermutationConsistentWithStreamOrder) {
  const auto r = racy(7);
  const DeviceModel& m = r->model;
  std::set<std::uint64_t> seen;
  const auto ops = ops_of(m);
  for (const OpRef op : ops) {
    const auto c = m.completion_index(op);
    ASSERT_TRUE(c.has_value());
    EXPECT_TRUE(seen.insert(*c).second);
    if (op.index > 0) {
      EXPECT_LT(*m.completion_index(OpRef{op.stream, op.index - 1}), *c);  // R1
    }
  }
  EXPECT_EQ(*seen.rbegin(), ops.size() - 1);
}

/// Always picks option 0: at an enqueue, "no device step"; so work runs only
/// when the host synchronizes or the run finishes.
class Lazy final : public sim::Chooser {
 protected:
  std::uint32_t pick(sim::ChoiceKind, std::uint32_t) override { return 0; }
};

TEST(RenderModel, CompletionIndexIsEmptyBeforeExecution) {
  Lazy chooser;
  DeviceModel m(chooser);
  const auto s = m.create_stream("s");
  const auto t = m.create_stream("t");
  m.launch(t, {}, "T");
  m.launch(s, {}, "S");
  EXPECT_FALSE(m.completion_index(OpRef{sim::StreamIndex{0}, 0}).has_value());
  EXPECT_FALSE(m.completion_index(OpRef{sim::StreamIndex{1}, 0}).has_value());
  m.sync_stream(s);
  EXPECT_EQ(m.completion_index(OpRef{sim::StreamIndex{0}, 0}), std::optional<std::uint64_t>(0));
  EXPECT_FALSE(m.completion_index(OpRef{sim::StreamIndex{1}, 0}).has_value());
  const std::string before = render_perfetto(m);  // t's op has not run: placed after
  EXPECT_NE(before.find("\"tid\":2,\"ts\":10,"), std::string::npos) << before;
  EXPECT_NE(before.find("\"executed\":false"), std::string::npos);
  m.finish();
  EXPECT_EQ(m.completion_index(OpRef{sim::StreamIndex{1}, 0}), std::optional<std::uint64_t>(1));
}

// ------------------------------------------------------------ text

TEST(RenderText, NamesEveryOpHostActionAndFinding) {
  const auto r = racy();
  const DeviceModel& m = r->model;
  const std::string t = render_text(m);
  for (const OpRef op : ops_of(m)) EXPECT_NE(t.find(sim::describe(m, op)), std::string::npos) << sim::describe(m, op);
  EXPECT_NE(t.find("s1#1 kernel \"K1\""), std::string::npos);
  EXPECT_NE(t.find("s2#0 kernel \"K2\""), std::string::npos);
  EXPECT_NE(t.find("record e0 on s1"), std::string::npos);
  EXPECT_NE(t.find("s2 waits for e0"), std::string::npos);
  EXPECT_NE(t.find("synchronize device"), std::string::npos);
  EXPECT_NE(t.find("findings (1):"), std::string::npos);
  const std::string f = sim::format(m, m.findings()[0]);
  EXPECT_NE(t.find(f.substr(0, f.find('\n'))), std::string::npos);
  EXPECT_NE(t.find("fix: record an event on s1 after s1#1 kernel \"K1\""), std::string::npos);
  // Streams come before host actions, host actions before findings.
  EXPECT_LT(t.find("streams ("), t.find("host actions ("));
  EXPECT_LT(t.find("host actions ("), t.find("findings ("));
}

TEST(RenderText, CleanRunSaysNoFindings) {
  const std::string t = render_text(clean()->model);
  EXPECT_NE(t.find("findings (0):"), std::string::npos);
  EXPECT_NE(t.find("synchronize s2"), std::string::npos);
}

// ------------------------------------------------------------ DOT

TEST(RenderDot, DrawsTheMissingEdgeDashedRedAndTheRacingPairRed) {
  const auto r = racy();
  const DeviceModel& m = r->model;
  const std::string d = render_dot(m);
  const sim::HbGraph g(m);
  const auto a = g.vertex(m.findings()[0].first);
  const auto b = g.vertex(*m.findings()[0].second);
  const std::string edge = "n" + std::to_string(a) + " -> n" + std::to_string(b) + " [style=dashed, color=red";
  EXPECT_NE(d.find(edge), std::string::npos) << d;
  EXPECT_NE(d.find("label=\"missing\""), std::string::npos);
  EXPECT_NE(d.find("  n" + std::to_string(a) + " [color=red"), std::string::npos);
  EXPECT_NE(d.find("  n" + std::to_string(b) + " [color=red"), std::string::npos);
  EXPECT_EQ(count(d, "[color=red"), 2u);
  EXPECT_EQ(d.rfind("digraph hb {", 0), 0u);
  EXPECT_EQ(d.substr(d.size() - 2), "}\n");
  EXPECT_EQ(count(d, "{"), count(d, "}"));
  // Everything write_dot produces is kept.
  std::ostringstream base;
  g.write_dot(base);
  const std::string b_str = base.str();
  EXPECT_EQ(d.substr(0, b_str.size() - 2), b_str.substr(0, b_str.size() - 2));
}

TEST(RenderDot, CleanRunHasNoRed) {
  const std::string d = render_dot(clean()->model);
  EXPECT_EQ(d.find("red"), std::string::npos);
}

TEST(RenderDot, LeakHighlightsTheAllocationWithoutAnEdge) {
  const auto r = leaky();
  const std::string d = render_dot(r->model);
  EXPECT_EQ(count(d, "[color=red"), 1u);
  EXPECT_EQ(d.find("style=dashed"), std::string::npos);
}

// ------------------------------------------------------------ SVG

TEST(RenderSvg, IsWellFormedWithOneLaneLabelPerStream) {
  for (const auto& r : {racy(), clean(), leaky()}) {
    const DeviceModel& m = r->model;
    const std::string s = render_svg(m);
    EXPECT_EQ(tag_balance(s), "") << s;
    EXPECT_EQ(s.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "version=\"1.1\" width=\"",
                      0),
              0u);
    for (std::uint32_t st = 0; st < m.stream_count(); ++st)
      EXPECT_EQ(count(s, "class=\"lane-label\" font-size=\"15\" font-weight=\"bold\" fill=\"#222222\">" +
                             m.stream_name(sim::StreamIndex{st}) + "</text>"),
                1u)
          << m.stream_name(sim::StreamIndex{st});
    // One box per op.
    std::size_t ops = 0;
    for (std::uint32_t st = 0; st < m.stream_count(); ++st) ops += m.op_count(sim::StreamIndex{st});
    EXPECT_EQ(count(s, "<g class=\"op"), ops);
  }
}

TEST(RenderSvg, HighlightsTheRacingPairAndDrawsTheMissingEdgeDashedRed) {
  const auto r = racy();
  const DeviceModel& m = r->model;
  const std::string s = render_svg(m);
  EXPECT_EQ(count(s, "<g class=\"op finding\">"), 2u);
  EXPECT_EQ(count(s, "stroke=\"#d62728\" stroke-width=\"3\""), 2u);
  EXPECT_EQ(count(s, "<g class=\"missing-edge\">"), 1u);
  EXPECT_NE(s.find("stroke=\"#d62728\" stroke-width=\"2.5\" stroke-dasharray=\"7,5\""), std::string::npos);
  EXPECT_NE(s.find(">data race: missing edge</text>"), std::string::npos);
  // The event edge record e0 -> wait e0, a host lane with the device sync.
  EXPECT_EQ(count(s, "class=\"event-edge\""), 1u);
  EXPECT_NE(s.find(">host</text>"), std::string::npos);
  EXPECT_NE(s.find(">sync device</text>"), std::string::npos);
  EXPECT_EQ(count(s, "class=\"sync-edge\""), 2u);  // from the last node of each stream
  // The boxes' labels: kind + label.
  EXPECT_NE(s.find(">#1 kernel</text>"), std::string::npos);
  EXPECT_NE(s.find(">K1</text>"), std::string::npos);
}

TEST(RenderSvg, CleanRunHasNoRed) {
  const std::string s = render_svg(clean()->model);
  EXPECT_EQ(count(s, "<g class=\"op finding\">"), 0u);
  EXPECT_EQ(count(s, "<g class=\"missing-edge\">"), 0u);
  EXPECT_NE(s.find("no findings"), std::string::npos);
}

TEST(RenderSvg, SizeGrowsWithContent) {
  const auto size_of = [](const std::string& s) {
    const auto w = s.find("width=\"");
    const auto h = s.find("height=\"");
    return std::pair{std::stoi(s.substr(w + 7)), std::stoi(s.substr(h + 8))};
  };
  const auto small = size_of(render_svg(leaky()->model));
  const auto large = size_of(render_svg(racy()->model));
  EXPECT_GT(large.first, small.first);
  EXPECT_GT(large.second, small.second);
}

TEST(RenderSvg, EscapesText) {
  const auto r = racy(1, "a<b & \"c\">");
  const std::string s = render_svg(r->model);
  EXPECT_EQ(tag_balance(s), "");
  EXPECT_EQ(s.find("a<b"), std::string::npos);
  EXPECT_EQ(s.find("\"c\""), std::string::npos);
  EXPECT_NE(s.find("a&lt;b &amp; &quot;c&quot;&gt;"), std::string::npos);
}

// ------------------------------------------------------------ Perfetto

TEST(RenderPerfetto, IsValidTraceJsonWithOneCompleteEventPerOp) {
  for (const auto& r : {racy(), clean(), leaky(), racy(3, "we\"ird\\\n")}) {
    const DeviceModel& m = r->model;
    const std::string j = render_perfetto(m);
    EXPECT_EQ(j.rfind("{\"traceEvents\":[", 0), 0u);
    EXPECT_TRUE(nlohmann::json::accept(j)) << j;
    EXPECT_EQ(count(j, "\"ph\":\"X\""), ops_of(m).size());
    EXPECT_EQ(count(j, "\"ph\":\"i\""), m.findings().size());
    EXPECT_EQ(count(j, "\"name\":\"thread_name\""), m.stream_count());
    for (std::uint32_t s = 0; s < m.stream_count(); ++s)
      EXPECT_NE(j.find("\"tid\":" + std::to_string(s + 1) + ",\"name\":\"thread_name\",\"args\":{\"name\":\"" +
                       m.stream_name(sim::StreamIndex{s}) + "\"}"),
                std::string::npos);
  }
}

TEST(RenderPerfetto, TimestampsFollowTheExecutionOrder) {
  const auto r = racy(5);
  const DeviceModel& m = r->model;
  const std::string j = render_perfetto(m);
  for (const OpRef op : ops_of(m)) {
    const std::string ev = "\"ph\":\"X\",\"pid\":1,\"tid\":" + std::to_string(op.stream.value + 1) +
                           ",\"ts\":" + std::to_string(*m.completion_index(op) * 10) + ",\"dur\":8";
    const auto at = j.find(ev);
    ASSERT_NE(at, std::string::npos) << ev;
    const auto line_end = j.find('\n', at);
    const std::string line = j.substr(at, line_end - at);
    EXPECT_NE(line.find("\"label\":\"" + m.op_label(op) + "\""), std::string::npos) << line;
    EXPECT_NE(line.find("\"op\":\"" + m.stream_name(op.stream) + "#" + std::to_string(op.index) + "\""),
              std::string::npos)
        << line;
  }
  // The finding sits on the lane of its second op (s2: tid 2).
  const auto at = j.find("\"ph\":\"i\"");
  ASSERT_NE(at, std::string::npos);
  EXPECT_NE(j.find("\"tid\":2", at), std::string::npos);
  EXPECT_NE(j.find("\"finding\":\"data race: ", at), std::string::npos);
}

// ------------------------------------------------------------ determinism

TEST(RenderDeterminism, SameModelAndSameProgramGiveIdenticalBytes) {
  for (std::uint64_t seed : {1u, 2u, 3u, 11u}) {
    const auto a = racy(seed);
    const auto b = racy(seed);
    EXPECT_EQ(render_text(a->model), render_text(a->model));
    EXPECT_EQ(render_dot(a->model), render_dot(a->model));
    EXPECT_EQ(render_svg(a->model), render_svg(a->model));
    EXPECT_EQ(render_perfetto(a->model), render_perfetto(a->model));
    EXPECT_EQ(render_text(a->model), render_text(b->model));
    EXPECT_EQ(render_dot(a->model), render_dot(b->model));
    EXPECT_EQ(render_svg(a->model), render_svg(b->model));
    EXPECT_EQ(render_perfetto(a->model), render_perfetto(b->model));
  }
}

}  // namespace
}  // namespace streamcheck::tools
