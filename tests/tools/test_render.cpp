// tools/render.h: text, DOT, SVG swimlanes and Perfetto JSON of one run.
#include <gtest/gtest.h>

#include <cctype>
#include <cstddef>
#include <cstdlib>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "backend_sim/device_model.h"
#include "backend_sim/hb_graph.h"
#include "backend_sim/schedule.h"
#include "tools/render.h"
#include "tools/trace.h"
#include "tools/trace_check.h"

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
  // Every node and edge write_dot draws is kept; the clusters are named by stream.
  std::ostringstream base;
  g.write_dot(base);
  std::istringstream lines(base.str());
  for (std::string line; std::getline(lines, line);)
    if (line.find(" [label=") != std::string::npos) {
      EXPECT_NE(d.find(line), std::string::npos) << line;
    }
  EXPECT_NE(d.find("subgraph cluster_stream1 {\n    label=\"s2\";"), std::string::npos) << d;
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
      EXPECT_EQ(count(s, "<g class=\"lane-label\"><title>stream " + m.stream_name(sim::StreamIndex{st}) + "</title>"),
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
  EXPECT_NE(s.find(">1. data race: missing edge</text>"), std::string::npos);
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
    EXPECT_EQ(count(j, "\"cat\":\"finding\""), m.findings().size());
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
  const auto at = j.find("\"cat\":\"finding\"");
  ASSERT_NE(at, std::string::npos);
  EXPECT_NE(j.rfind("\"tid\":2", at), std::string::npos);
  EXPECT_GT(j.rfind("\"tid\":2", at), j.rfind("\n", at));
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

// ------------------------------------------------------------ trace runs: the user's names

/// One schedule of a trace, as `streamcheck render` draws it.
struct DrawnTrace {
  explicit DrawnTrace(const std::string& text) : trace(parse_trace(text, "t.trace")) {
    held = run_one(trace, TraceCheckOptions{});
  }
  RenderInput input() const { return render_input(*held.run, held.report); }
  const DeviceModel& model() const { return held.run->model(); }
  Trace trace;
  HeldRun held;
};

/// A copy engine stream uploads weights that the math stream reads without
/// waiting for the upload: one race, on Weights; the event is recorded, and
/// waited on, only after the read.
constexpr const char* kNamedRace = R"(stream copy_engine
stream math
event weights_uploaded
buffer Staging 4096 on copy_engine
buffer Weights 4096 on copy_engine
launch stage on copy_engine writes Staging
copy upload_weights on copy_engine from Staging to Weights
launch matmul on math reads Weights
record weights_uploaded on copy_engine
wait weights_uploaded on math
free Staging on copy_engine
free Weights on math
)";

TEST(RenderNames, EveryFormatNamesEventsStreamsBuffersAndCopiesAsTheTraceDoes) {
  const DrawnTrace t(kNamedRace);
  ASSERT_EQ(t.input().findings.size(), 1u);
  const auto in = t.input();
  const std::string text = render_text(in), svg = render_svg(in), dot = render_dot(in), json = render_perfetto(in);
  for (const auto& [format, out] :
       std::map<std::string, std::string>{{"text", text}, {"svg", svg}, {"dot", dot}, {"perfetto", json}}) {
    // The event by its name, never the simulator's number.
    EXPECT_NE(out.find("weights_uploaded"), std::string::npos) << format << "\n" << out;
    EXPECT_EQ(out.find(" e0"), std::string::npos) << format << "\n" << out;
    // Streams, the copy and the buffers by name.
    for (const char* name : {"copy_engine", "math", "upload_weights", "Weights", "Staging"})
      EXPECT_NE(out.find(name), std::string::npos) << format << " lacks " << name << "\n" << out;
    // The legacy default stream carries nothing here: no lane.
    EXPECT_EQ(out.find("legacy"), std::string::npos) << format << "\n" << out;
  }
  // The finding names the bytes by buffer, in every format.
  for (const auto* out : {&text, &svg, &dot, &json}) EXPECT_NE(out->find("Weights[0:4096]"), std::string::npos) << *out;
  EXPECT_NE(text.find("record weights_uploaded on copy_engine"), std::string::npos) << text;
  EXPECT_NE(svg.find(">weights_uploaded</text>"), std::string::npos) << svg;
  EXPECT_NE(dot.find("label=\"wait weights_uploaded\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("label=\"copy_engine\""), std::string::npos) << dot;  // the cluster
  EXPECT_NE(json.find("\"statement\":\"copy upload_weights on copy_engine from Staging to Weights\""),
            std::string::npos)
      << json;
}

TEST(RenderNames, ResourceEventsAndBlocksAreNamedByTheBlockTheyServe) {
  const DrawnTrace t(R"(resource
stream s0
stream s1
allocate A 4096 on s0
run produce on s1 writes A
run consume on s0 reads A
deallocate A
reap
)");
  const std::string text = render_text(t.input());
  // A's first use on another stream waits for its allocation (P-alloc).
  for (const char* expected : {"alloc \"allocate A\"", "free \"deallocate A\"", "record A ready on s0",
                               "s1 waits for A ready", "record produce done on s1", "s0 waits for produce done"})
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  EXPECT_EQ(std::regex_search(text, std::regex(R"(\be[0-9]+\b)")), false) << text;
}

TEST(RenderNames, LegacyStreamIsALaneOnlyWhenItCarriesOpsAndThenSaysWhatItIs) {
  const DrawnTrace plain(R"(stream s1
buffer A 256
launch k on s1 writes A
free A
)");
  const std::string svg = render_svg(plain.input());
  EXPECT_NE(svg.find(">legacy</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find("the legacy default stream (stream 0; R8)"), std::string::npos) << svg;  // its tooltip
  EXPECT_EQ(count(svg, "<g class=\"lane-label\">"), 3u) << svg;  // legacy, s1, host (the cudaFree sync)
  const std::string text = render_text(plain.input());
  EXPECT_NE(text.find("legacy (2 ops)"), std::string::npos) << text;

  const DrawnTrace stream_ordered(R"(stream s1
stream idle
buffer A 256 on s1
launch k on s1 writes A
free A on s1
)");
  for (const auto& out : {render_svg(stream_ordered.input()), render_text(stream_ordered.input()),
                          render_perfetto(stream_ordered.input()), render_dot(stream_ordered.input())}) {
    EXPECT_EQ(out.find("legacy"), std::string::npos) << out;
    EXPECT_EQ(out.find("idle"), std::string::npos) << out;  // declared, never used: no lane
  }
}

// ------------------------------------------------------------ --finding N

/// Two unrelated races: pair_a on streams a1/a2 over A, pair_b on b1/b2 over
/// B, with ordered work around them.
constexpr const char* kTwoRaces = R"(stream a1
stream a2
stream b1
stream b2
event a_done
event b_done
buffer A 1024 on a1
buffer B 1024 on b1
launch before_a on a1 writes A
record a_done on a1
wait a_done on a2
launch write_a on a1 writes A
launch read_a on a2 reads A
launch write_b on b1 writes B
record b_done on b1
wait b_done on b2
launch read_b on b2 reads B
launch write_b_again on b1 writes B
launch read_b_again on b2 reads B
sync device
free A on a1
free B on b1
)";

TEST(RenderFinding, DrawsOnlyTheOpsThatExplainTheFindingInEveryFormat) {
  const DrawnTrace t(kTwoRaces);
  const auto in = t.input();
  ASSERT_GE(in.findings.size(), 2u);
  const RenderFinding& f = in.findings[0];
  ASSERT_TRUE(f.second.has_value());
  const std::string first = t.model().op_label(f.first), second = t.model().op_label(*f.second);
  const std::set<std::uint32_t> its_streams{f.first.stream.value, f.second->stream.value};
  RenderOptions one;
  one.finding = 1;
  const std::string svg = render_svg(in, one), text = render_text(in, one), dot = render_dot(in, one),
                    json = render_perfetto(in, one);
  // Both ops, in red, and the missing edge between them.
  EXPECT_EQ(count(svg, "<g class=\"op finding\">"), 2u) << svg;
  EXPECT_EQ(count(svg, "<g class=\"missing-edge\">"), 1u) << svg;
  EXPECT_EQ(count(dot, "style=dashed, color=red"), 1u) << dot;
  EXPECT_EQ(count(json, "\"cat\":\"finding\""), 1u) << json;
  for (const auto* out : {&svg, &text, &dot, &json}) {
    EXPECT_NE(out->find(first), std::string::npos) << *out;
    EXPECT_NE(out->find(second), std::string::npos) << *out;
    EXPECT_NE(out->find("finding 1 of"), std::string::npos) << *out;
  }
  // Nothing from the streams of the other race: no lane, no op.
  for (std::uint32_t s = 0; s < t.model().stream_count(); ++s) {
    if (its_streams.count(s)) continue;
    const std::string name = t.model().stream_name(sim::StreamIndex{s});
    for (std::uint32_t i = 0; i < t.model().op_count(sim::StreamIndex{s}); ++i) {
      const std::string label = t.model().op_label(OpRef{sim::StreamIndex{s}, i});
      EXPECT_EQ(svg.find(">" + label + "</text>"), std::string::npos) << label;
      EXPECT_EQ(json.find("\"label\":\"" + label + "\""), std::string::npos) << label;
      EXPECT_EQ(text.find("\"" + label + "\""), std::string::npos) << label;
      EXPECT_EQ(dot.find("\\\"" + label + "\\\""), std::string::npos) << label;
    }
  }
  // Fewer ops than the whole run.
  EXPECT_LT(count(svg, "<g class=\"op"), count(render_svg(in), "<g class=\"op"));
  // Out of range: says how many there are.
  RenderOptions beyond;
  beyond.finding = in.findings.size() + 1;
  EXPECT_THROW((void)render_svg(in, beyond), std::out_of_range);
}

TEST(RenderFinding, KeepsTheHappensBeforePathOfADefiniteUseAfterFree) {
  // The free is ordered before the use through the event: the whole path is
  // what explains the finding.
  const DrawnTrace t(R"(stream s1
stream s2
event freed
buffer A 256 on s1
free A on s1
record freed on s1
wait freed on s2
launch late_use on s2 reads A
)");
  const auto in = t.input();
  ASSERT_EQ(in.findings.size(), 1u);
  ASSERT_TRUE(in.findings[0].definite);
  RenderOptions one;
  one.finding = 1;
  const std::string svg = render_svg(in, one);
  EXPECT_NE(svg.find("<title>record freed on s1</title>"), std::string::npos) << svg;
  EXPECT_NE(svg.find("<title>s2 waits for freed</title>"), std::string::npos) << svg;
  EXPECT_EQ(count(svg, "class=\"event-edge\""), 1u) << svg;
}

// ------------------------------------------------------------ no overlapping labels

/// A `<text>` of an SVG and the box it covers, measured from its attributes
/// (x, y, font-size, text-anchor, bold) and its characters at a width per
/// character no renderer of DejaVu Sans exceeds much.
struct TextBox {
  std::string text;
  double x0, y0, x1, y1;
};

std::vector<TextBox> text_boxes(const std::string& svg) {
  static const std::regex element(R"re(<text ([^>]*)>(?:<title>[^<]*</title>)?([^<]*)</text>)re");
  static const std::regex attr(R"re((\w[\w:-]*)="([^"]*)")re");
  std::vector<TextBox> out;
  for (std::sregex_iterator it(svg.begin(), svg.end(), element), end; it != end; ++it) {
    std::map<std::string, std::string> a;
    const std::string attrs = (*it)[1];
    for (std::sregex_iterator at(attrs.begin(), attrs.end(), attr); at != std::sregex_iterator(); ++at)
      a[(*at)[1]] = (*at)[2];
    std::string text = (*it)[2];
    for (const auto& [entity, c] : std::vector<std::pair<std::string, std::string>>{
             {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&amp;", "&"}})
      for (auto pos = text.find(entity); pos != std::string::npos; pos = text.find(entity, pos))
        text.replace(pos, entity.size(), c);
    std::size_t chars = 0;
    for (const char c : text)
      if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++chars;
    const double size = a.count("font-size") ? std::stod(a["font-size"]) : 16;
    const double w = static_cast<double>(chars) * size * (a.count("font-weight") ? 0.62 : 0.56);
    const double x = std::stod(a["x"]), y = std::stod(a["y"]);
    const double left = a["text-anchor"] == "middle" ? x - w / 2 : x;
    out.push_back({text, left, y - size * 0.75, left + w, y + size * 0.2});
  }
  return out;
}

TEST(RenderSvg, NoTwoLabelsOverlapEvenWithLongNames) {
  const std::string long_event = "the_event_with_a_really_quite_long_descriptive_name";
  const DrawnTrace t(
      "stream a_stream_with_a_very_long_name_indeed\n"
      "stream second_stream_named_at_length\n"
      "event " +
      long_event +
      "\n"
      "buffer TheInputBufferOfTheWholePipeline 4096 on a_stream_with_a_very_long_name_indeed\n"
      "launch a_kernel_with_a_name_longer_than_any_box on a_stream_with_a_very_long_name_indeed writes "
      "TheInputBufferOfTheWholePipeline\n"
      "record " +
      long_event +
      " on a_stream_with_a_very_long_name_indeed\n"
      "wait " +
      long_event +
      " on second_stream_named_at_length\n"
      "launch reader_one on second_stream_named_at_length reads TheInputBufferOfTheWholePipeline\n"
      "launch writer_two on a_stream_with_a_very_long_name_indeed writes TheInputBufferOfTheWholePipeline\n"
      "launch reader_three on second_stream_named_at_length reads TheInputBufferOfTheWholePipeline\n"
      "sync device\n"
      "free TheInputBufferOfTheWholePipeline on a_stream_with_a_very_long_name_indeed\n");
  const auto in = t.input();
  ASSERT_GE(in.findings.size(), 2u) << render_text(in);
  const std::string svg = render_svg(in);
  EXPECT_EQ(tag_balance(svg), "") << svg;
  const auto boxes = text_boxes(svg);
  ASSERT_GT(boxes.size(), 20u) << svg;
  for (std::size_t i = 0; i < boxes.size(); ++i)
    for (std::size_t j = i + 1; j < boxes.size(); ++j) {
      const TextBox& p = boxes[i];
      const TextBox& q = boxes[j];
      const bool overlap = p.x0 < q.x1 && q.x0 < p.x1 && p.y0 < q.y1 && q.y0 < p.y1;
      EXPECT_FALSE(overlap) << "'" << p.text << "' at (" << p.x0 << ", " << p.y0 << ") overlaps '" << q.text << "' at ("
                            << q.x0 << ", " << q.y0 << ")";
    }
  // A label cut to fit keeps its full text in a tooltip.
  EXPECT_NE(svg.find("<title>" + long_event + "</title>"), std::string::npos) << svg;
  EXPECT_NE(svg.find("\xE2\x80\xA6</text>"), std::string::npos) << svg;
}

// ------------------------------------------------------------ windows and folds

TEST(RenderSvg, ALongRunIsWindowedAndFoldedIntoBands) {
  std::string text = "stream s\nbuffer A 64 on s\n";
  for (int i = 0; i < 600; ++i) text += "launch k" + std::to_string(i) + " on s writes A\n";
  text += "free A on s\n";
  const DrawnTrace t(text);
  const std::string svg = render_svg(t.input());
  EXPECT_EQ(count(svg, "<g class=\"op"), SvgLimits::kMaxColumns);
  EXPECT_EQ(count(svg, "<g class=\"lane-label\">"), SvgLimits::kMaxColumns / SvgLimits::kBandColumns);
  EXPECT_NE(svg.find("drew the first 240 calls"), std::string::npos);
  RenderOptions window;
  window.window = CallWindow{500, 510};
  const std::string part = render_svg(t.input(), window);
  EXPECT_EQ(count(part, "<g class=\"op"), 10u);
  EXPECT_NE(part.find(">k499</text>"), std::string::npos) << part;  // call 0 made the buffer
  EXPECT_NE(part.find("API calls [500, 510) of 602"), std::string::npos) << part;
  EXPECT_EQ(count(render_text(t.input(), window), "kernel \"k"), 10u);
}

TEST(RenderWindow, ParsesFromColonTo) {
  EXPECT_EQ(parse_call_window("3:7").from, 3u);
  EXPECT_EQ(parse_call_window("3:7").to, 7u);
  for (const char* bad : {"", "3", "7:3", "3:3", "a:4", "-1:4", "3:", ":4", "1:2:3"})
    EXPECT_THROW((void)parse_call_window(bad), std::invalid_argument) << bad;
}

}  // namespace
}  // namespace streamcheck::tools
