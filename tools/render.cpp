#include "tools/render.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend_sim/explain.h"
#include "backend_sim/hb_graph.h"
#include "tools/explain.h"

namespace streamcheck::tools {
namespace {

using sim::DeviceModel;
using sim::LogEntry;
using sim::OpKind;
using sim::OpRef;
/// Keys in the order written, so that the trace reads like the format's documentation.
using Json = nlohmann::ordered_json;

/// Appends to `out` what fmt::format would return.
template <class... Args>
void put(std::string& out, fmt::format_string<Args...> format, Args&&... args) {
  fmt::format_to(std::back_inserter(out), format, std::forward<Args>(args)...);
}

using sim::host_action;
using sim::ref_name;

bool is_host_side(LogEntry::Kind k) {
  return k != LogEntry::Kind::Enqueue && k != LogEntry::Kind::Record && k != LogEntry::Kind::Wait;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::string line;
  std::istringstream in(s);
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

/// Approximate display width in characters (UTF-8 continuation bytes excluded).
std::size_t display_chars(const std::string& s) {
  std::size_t n = 0;
  for (const char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  return n;
}

/// Keeps at most `n` characters (cut at a UTF-8 boundary), the last one "…" when cut.
std::string shorten(const std::string& s, std::size_t n) {
  if (display_chars(s) <= n) return s;
  if (n == 0) return {};
  std::string out;
  std::size_t chars = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const bool starts_char = (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
    if (starts_char && ++chars == n) break;
    out.push_back(s[i]);
  }
  return out + "\xE2\x80\xA6";  // U+2026 HORIZONTAL ELLIPSIS
}

std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        // XML 1.0 forbids most control characters, escaped or not.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n')
          out.push_back('?');
        else
          out.push_back(c);
    }
  }
  return out;
}

std::string plural(std::size_t n, std::string_view word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); }

// ---------------------------------------------------------------- what is drawn

/// The API calls (log entries) a rendering draws, and the findings it lists
/// (indexes into RenderInput::findings).
struct Selection {
  std::vector<bool> call;  // per log entry
  std::vector<std::size_t> findings;
  /// What the picture leaves out, in words ("" when it draws everything).
  std::string note;
  bool drawn(std::size_t entry) const { return call[entry]; }
};

/// The log entry of every op.
std::map<OpRef, std::size_t> op_entries(const DeviceModel& m) {
  std::map<OpRef, std::size_t> out;
  for (std::size_t i = 0; i < m.log().size(); ++i)
    if (m.log()[i].kind() == LogEntry::Kind::Enqueue) out[m.log()[i].op()] = i;
  return out;
}

/// The HB graph's nodes as numbers (entry * 2 + side) with their edges both ways.
struct NodeGraph {
  static std::size_t id(sim::HbNode n) { return n.entry * 2 + (n.side == sim::HbNode::Side::Stream ? 1 : 0); }
  std::vector<std::vector<std::size_t>> succ, pred;
  std::vector<std::optional<std::size_t>> event_source;  // per wait entry: its record entry (R3)

  explicit NodeGraph(const DeviceModel& m)
      : succ(m.log().size() * 2), pred(m.log().size() * 2), event_source(m.log().size()) {
    sim::visit_hb_edges(m.log(), m.hb().stream_shapes(), [&](sim::HbRule rule, sim::HbNode from, sim::HbNode to) {
      succ[id(from)].push_back(id(to));
      pred[id(to)].push_back(id(from));
      if (rule == sim::HbRule::R3) event_source[to.entry] = from.entry;
    });
  }
  /// Every node reachable from `start` along `edges`.
  static std::vector<bool> reach(const std::vector<std::vector<std::size_t>>& edges, std::size_t start) {
    std::vector<bool> seen(edges.size());
    std::deque<std::size_t> todo{start};
    seen[start] = true;
    while (!todo.empty()) {
      const std::size_t n = todo.front();
      todo.pop_front();
      for (const std::size_t next : edges[n])
        if (!seen[next]) todo.push_back(next), seen[next] = true;
    }
    return seen;
  }
};

/// How many of the program's own synchronization calls between a finding's
/// two ops a picture shows on each side (the nearest ones).
constexpr std::size_t kSyncContext = 8;

/// The API calls that explain finding `f`: its ops, every HB path between
/// them (either way), the record / wait / synchronize calls the program makes
/// between them that touch their streams (the nearest kSyncContext after the
/// first and before the second, each wait with the record it waits for), and
/// the ops just before and after each of them on its stream.
std::vector<bool> explaining_calls(const DeviceModel& m, const RenderFinding& f) {
  const auto& log = m.log();
  std::vector<bool> keep(log.size());
  const auto entries = op_entries(m);
  const auto entry_of = [&](OpRef op) -> std::optional<std::size_t> {
    auto it = entries.find(op);
    if (it == entries.end()) return std::nullopt;
    return it->second;
  };
  const auto ea = entry_of(f.first);
  const auto eb = f.second ? entry_of(*f.second) : std::nullopt;
  std::set<std::uint32_t> streams;
  for (const auto& e : {ea, eb})
    if (e) {
      keep[*e] = true;
      streams.insert(log[*e].stream.value);
    }
  const NodeGraph g(m);
  if (ea && eb) {
    const std::size_t a = NodeGraph::id({*ea, sim::HbNode::Side::Stream});
    const std::size_t b = NodeGraph::id({*eb, sim::HbNode::Side::Stream});
    for (const auto& [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
      const auto forward = NodeGraph::reach(g.succ, from);
      const auto backward = NodeGraph::reach(g.pred, to);
      if (!forward[to]) continue;
      for (std::size_t n = 0; n < forward.size(); ++n)
        if (forward[n] && backward[n]) keep[n / 2] = true;
    }
    // The synchronization the program did write between them, on their streams.
    const std::size_t lo = std::min(*ea, *eb), hi = std::max(*ea, *eb);
    const auto touches = [&](const LogEntry& e) {
      switch (e.kind()) {
        case LogEntry::Kind::Record:
        case LogEntry::Kind::Wait:
        case LogEntry::Kind::SyncStream:
          return streams.count(e.stream.value) != 0;
        case LogEntry::Kind::Enqueue:
          return false;
        default:
          return true;  // device / event synchronize, query
      }
    };
    std::vector<std::size_t> between;
    for (std::size_t i = lo + 1; i < hi; ++i)
      if (touches(log[i])) between.push_back(i);
    for (std::size_t k = 0; k < between.size(); ++k)
      if (k < kSyncContext || k + kSyncContext >= between.size()) {
        keep[between[k]] = true;
        if (const auto source = g.event_source[between[k]]) keep[*source] = true;
      }
  }
  // Context: each op's neighbours on its stream.
  for (const auto& e : {ea, eb}) {
    if (!e) continue;
    const auto stream = log[*e].stream;
    for (std::size_t i = *e; i-- > 0;)
      if (!is_host_side(log[i].kind()) && log[i].stream == stream) {
        keep[i] = true;
        break;
      }
    for (std::size_t i = *e + 1; i < log.size(); ++i)
      if (!is_host_side(log[i].kind()) && log[i].stream == stream) {
        keep[i] = true;
        break;
      }
  }
  return keep;
}

Selection select(const RenderInput& in, const RenderOptions& o) {
  const DeviceModel& m = *in.model;
  const std::size_t calls = m.log().size();
  Selection s{std::vector<bool>(calls, true), {}, {}};
  if (o.finding) {
    const std::size_t n = *o.finding;
    if (n == 0 || n > in.findings.size())
      throw std::out_of_range(
          fmt::format("--finding {}: this run has {}; pick one of 1..{} (render --format text "
                      "lists them)",
                      n, plural(in.findings.size(), "finding"), in.findings.size()));
    s.call = explaining_calls(m, in.findings[n - 1]);
    s.findings = {n - 1};
    s.note = fmt::format("finding {} of {}: only the calls that explain it", n, in.findings.size());
  } else {
    for (std::size_t k = 0; k < in.findings.size(); ++k) s.findings.push_back(k);
  }
  if (o.window) {
    const std::size_t from = std::min(o.window->from, calls), to = std::min(o.window->to, calls);
    for (std::size_t i = 0; i < calls; ++i) s.call[i] = s.call[i] && i >= from && i < to;
    s.note += fmt::format("{}API calls [{}, {}) of {}", s.note.empty() ? "" : "; ", from, to, calls);
  }
  return s;
}

/// Caps a selection at `max` calls (the first ones), saying so.
void cap(Selection& s, std::size_t max) {
  std::size_t n = 0, last = 0;
  for (std::size_t i = 0; i < s.call.size(); ++i) {
    if (!s.call[i]) continue;
    if (n == max) {
      for (std::size_t j = i; j < s.call.size(); ++j) s.call[j] = false;
      s.note += fmt::format("{}drew the first {} (API calls up to {}); --window FROM:TO or --finding N draws others",
                            s.note.empty() ? "" : "; ", plural(max, "call"), last);
      return;
    }
    ++n;
    last = i;
  }
}

bool stream_drawn(const DeviceModel& m, const Selection& s, sim::StreamIndex stream) {
  for (std::size_t i = 0; i < m.log().size(); ++i)
    if (s.drawn(i) && !is_host_side(m.log()[i].kind()) && m.log()[i].stream == stream) return true;
  return false;
}

/// How a lane names its stream: the trace's name (the legacy default stream's is `legacy`).
std::string lane_name(const RenderInput& in, sim::StreamIndex s) { return in.model->stream_name(s); }

/// "line 7: launch produce on s1 writes A", or nothing for an op of no trace statement.
std::optional<std::string> statement_of(const RenderInput& in, OpRef op) {
  if (!in.run) return std::nullopt;
  const auto origin = in.run->origin(op);
  if (!origin) return std::nullopt;
  return fmt::format("line {}: {}", origin->line, origin->text);
}

/// The numbered lines of the findings a rendering lists.
std::vector<std::string> finding_lines(const RenderInput& in, const Selection& s) {
  std::vector<std::string> out;
  for (const std::size_t k : s.findings) {
    const auto& lines = in.findings[k].lines;
    for (std::size_t j = 0; j < lines.size(); ++j)
      out.push_back((j == 0 ? std::to_string(k + 1) + ". " : "   ") + lines[j]);
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------- input

RenderInput render_input(const sim::DeviceModel& model) {
  RenderInput in;
  in.model = &model;
  for (const sim::Finding& f : model.findings())
    in.findings.push_back(
        {f.kind, f.definite, f.first, f.second, sim::finding_label(f), split_lines(sim::format(model, f))});
  return in;
}

RenderInput render_input(const Execution& run, const Report& report) {
  RenderInput in;
  in.model = &run.model();
  in.run = &run;
  in.plain_alloc_stream = run.plain_alloc_stream();
  for (const ReportFinding& f : report.findings) {
    RenderFinding r{f.kind, f.definite, f.first.ref, std::nullopt, finding_label(f), {}};
    if (f.second) {
      r.second = f.second->ref;
      r.lines.push_back(
          fmt::format("{}: {} and {} on {}", r.label, describe(f.first), describe(*f.second), describe(f.bytes)));
    } else {
      r.lines.push_back(
          fmt::format("{} (warning): {} is never freed ({})", r.label, describe(f.first), describe(f.bytes)));
    }
    r.lines.push_back("  order: " + describe_order(f));
    r.lines.push_back("  fix: " + describe_fix(f));
    in.findings.push_back(std::move(r));
  }
  return in;
}

CallWindow parse_call_window(const std::string& text) {
  const auto colon = text.find(':');
  const auto number = [&](const std::string& part) -> std::size_t {
    if (part.empty() || part.size() > 18 || part.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument("takes FROM:TO (API call numbers, as render --format text numbers them @N), got '" +
                                  text + "'");
    return std::stoull(part);
  };
  if (colon == std::string::npos) number("");
  const CallWindow w{number(text.substr(0, colon)), number(text.substr(colon + 1))};
  if (w.to <= w.from) throw std::invalid_argument("FROM:TO needs FROM < TO, got '" + text + "'");
  return w;
}

// ---------------------------------------------------------------- text

std::string render_text(const RenderInput& in, const RenderOptions& o) {
  const DeviceModel& m = *in.model;
  const Selection sel = select(in, o);
  std::string out;
  if (!sel.note.empty()) put(out, "drawn: {}\n", sel.note);
  std::vector<sim::StreamIndex> lanes;
  for (std::uint32_t n = 0; n < m.stream_count(); ++n)
    if (stream_drawn(m, sel, sim::StreamIndex{n})) lanes.push_back(sim::StreamIndex{n});
  put(out, "streams ({}):\n", lanes.size());
  const auto entries = op_entries(m);
  for (const sim::StreamIndex s : lanes) {
    std::vector<OpRef> ops;
    for (std::uint32_t i = 0; i < m.op_count(s); ++i)
      if (sel.drawn(entries.at(OpRef{s, i}))) ops.push_back(OpRef{s, i});
    put(out, "  {} ({}):\n", lane_name(in, s), plural(ops.size(), "op"));
    for (const OpRef r : ops) {
      const auto c = m.completion_index(r);
      const std::string when = c ? fmt::format("executed #{}", *c) : std::string("not executed");
      const auto statement = statement_of(in, r);
      put(out, "    {}  [{}]{}\n", sim::describe(m, r), when, statement ? "  " + *statement : "");
    }
  }
  std::vector<std::string> actions;
  for (std::size_t i = 0; i < m.log().size(); ++i) {
    const LogEntry& e = m.log()[i];
    if (e.kind() == LogEntry::Kind::Enqueue || !sel.drawn(i)) continue;
    actions.push_back(fmt::format("  @{} host{}: {}", i, e.host().value, host_action(m, e)));
  }
  put(out, "host actions ({}):\n", actions.size());
  for (const auto& a : actions) put(out, "{}\n", a);
  put(out, "findings ({}):\n", sel.findings.size());
  for (const auto& line : finding_lines(in, sel)) put(out, "  {}\n", line);
  return out;
}

// ---------------------------------------------------------------- DOT

std::string render_dot(const RenderInput& in, const RenderOptions& o) {
  const DeviceModel& m = *in.model;
  const Selection sel = select(in, o);
  const sim::HbGraph g(m);
  sim::HbGraph::Highlight highlight;
  if (!sel.note.empty()) {
    highlight.only.emplace();
    for (sim::HbGraph::Vertex v = 0; v < boost::num_vertices(g.graph()); ++v) {
      const auto& node = g.graph()[v];
      const bool host_node = node.kind == sim::HbGraph::NodeKind::Host;
      // A host node of an enqueue, record or wait only repeats its stream-side node.
      if (sel.drawn(node.entry) && (!host_node || is_host_side(m.log()[node.entry].kind()))) highlight.only->insert(v);
    }
  }
  for (std::uint32_t s = 0; s < m.stream_count(); ++s)
    highlight.cluster_labels["stream" + std::to_string(s)] = lane_name(in, sim::StreamIndex{s});
  if (in.run)
    for (sim::HbGraph::Vertex v = 0; v < boost::num_vertices(g.graph()); ++v) {
      const auto& node = g.graph()[v];
      if (node.kind != sim::HbGraph::NodeKind::Op) continue;
      if (const auto statement = statement_of(in, node.op)) highlight.notes[v] = *statement;
    }
  // The findings: their ops filled red, then each missing edge dashed red.
  if (!sel.findings.empty()) highlight.comment = "findings: racing ops in red, the missing edge dashed red";
  for (const std::size_t k : sel.findings) {
    const RenderFinding& f = in.findings[k];
    highlight.red.insert(g.vertex(f.first));
    if (!f.second) continue;
    highlight.red.insert(g.vertex(*f.second));
    std::string words;
    for (const auto& line : f.lines) words += (words.empty() ? "" : "\n") + line;
    highlight.dashed.push_back(
        {g.vertex(f.first), g.vertex(*f.second), f.definite ? "freed before use" : "missing", words});
  }
  std::ostringstream dot;
  if (!sel.note.empty()) dot << "// drawn: " << sel.note << "\n";
  g.write_dot(dot, highlight);
  return dot.str();
}

// ---------------------------------------------------------------- SVG

namespace {

/// Approximate text extents (DejaVu Sans / Mono): wide enough that a label
/// measured so never runs into its neighbour.
struct Font {
  double size = 12;
  bool bold = false;
  bool mono = false;
  double char_w() const { return size * (mono ? 0.61 : bold ? 0.68 : 0.62); }
  double width(const std::string& s) const { return static_cast<double>(display_chars(s)) * char_w(); }
  /// The most characters that fit in `px`.
  std::size_t fits(double px) const { return static_cast<std::size_t>(std::max(0.0, px / char_w())); }
};

struct Rect {
  double x0, y0, x1, y1;
  bool overlaps(const Rect& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

struct SvgLayout {
  static constexpr int kTop = 78;      // title and room for arcs over the first lane
  static constexpr int kLabelW = 170;  // lane labels
  static constexpr int kColW = 150;    // one column per API call drawn
  static constexpr int kBoxW = 136;
  static constexpr int kBoxH = 44;
  static constexpr int kLaneH = 104;
  static constexpr int kBandGap = 64;  // between folded bands: room for the next band's arcs
  static constexpr int kDiamond = 9;   // half-diagonal of record / wait marks
  static constexpr int kPad = 5;       // inside a box, each side
};

/// Where a log entry is drawn.
struct Place {
  std::size_t band = 0;
  std::size_t col = 0;  // within its band
  std::size_t lane = 0;
  int half_h = 0;
};

/// Everything of the swimlane diagram, worked out before drawing.
struct SvgPlan {
  std::vector<std::string> lane_names;  // drawn streams, then the host threads that synchronized or queried
  std::vector<std::string> lane_tooltips;
  std::vector<bool> lane_is_host;
  std::map<std::uint32_t, std::size_t> stream_lane;
  std::map<sim::HostThread, std::size_t> host_lane;
  std::map<std::size_t, Place> place;  // per drawn log entry
  std::map<OpRef, std::size_t> op_entry;
  // HB edges the diagram shows, as (from entry, to entry): event edges (R3)
  // and host synchronization (R4), both ends drawn.
  std::vector<std::pair<std::size_t, std::size_t>> event_edges, sync_edges;
  std::set<std::size_t> red;                                  // entries of the findings' ops
  std::map<std::size_t, std::vector<std::string>> leak_tags;  // entry -> labels
  std::vector<std::string> finding_lines;
  std::string note;
  std::size_t bands = 1, columns = 0;
  int lanes_bottom = 0, legend_y = 0, findings_y = 0, width = 0, height = 0;
  static constexpr int line_h = 17;
  /// Every text drawn so far (for the labels that must find a free place).
  std::vector<Rect> taken;

  int band_h() const { return static_cast<int>(lane_names.size()) * SvgLayout::kLaneH + SvgLayout::kBandGap; }
  int band_top(std::size_t band) const { return SvgLayout::kTop + static_cast<int>(band) * band_h(); }
  int lane_top(std::size_t band, std::size_t lane) const {
    return band_top(band) + static_cast<int>(lane) * SvgLayout::kLaneH;
  }
  int lane_mid(std::size_t band, std::size_t lane) const { return lane_top(band, lane) + SvgLayout::kLaneH / 2; }
  int x(const Place& p) const {
    return SvgLayout::kLabelW + static_cast<int>(p.col) * SvgLayout::kColW + SvgLayout::kColW / 2;
  }
  int y(const Place& p) const { return lane_mid(p.band, p.lane); }
};

/// A text of at most `max_px` width (cut with "…"), with its full text as a
/// tooltip when cut; `anchor_middle` centres it on x. Records where it went.
void svg_label(std::string& out, SvgPlan& plan, double x, double y, const std::string& text, const Font& font,
               double max_px, std::string_view attrs, bool anchor_middle) {
  const std::string shown = shorten(text, font.fits(max_px));
  const double w = font.width(shown);
  const double left = anchor_middle ? x - w / 2 : x;
  plan.taken.push_back({left, y - font.size, left + w, y + font.size * 0.3});
  put(out, "<text x=\"{}\" y=\"{}\"{}{} font-size=\"{}\"{}>", x, y, anchor_middle ? " text-anchor=\"middle\"" : "",
      font.bold ? " font-weight=\"bold\"" : "", font.size, attrs);
  if (shown != text) put(out, "<title>{}</title>", xml_escape(text));
  put(out, "{}</text>\n", xml_escape(shown));
}

/// A straight arrow between two placed entries, leaving / entering through the
/// side facing the other (or arcing over the lane when both share a lane row).
std::string arrow_path(const SvgPlan& plan, const Place& a, const Place& b, int bulge) {
  const int x1 = plan.x(a), x2 = plan.x(b);
  if (a.band == b.band && a.lane == b.lane) {
    const int y1 = plan.y(a) - a.half_h, y2 = plan.y(b) - b.half_h;
    return fmt::format("M {} {} Q {} {} {} {}", x1, y1, (x1 + x2) / 2, std::min(y1, y2) - bulge, x2, y2);
  }
  const bool down = plan.y(b) > plan.y(a);
  const int y1 = plan.y(a) + (down ? a.half_h : -a.half_h);
  const int y2 = plan.y(b) + (down ? -b.half_h : b.half_h);
  return fmt::format("M {} {} L {} {}", x1, y1, x2, y2);
}

void plan_lanes(const RenderInput& in, const Selection& sel, SvgPlan& plan) {
  const DeviceModel& m = *in.model;
  for (std::uint32_t s = 0; s < m.stream_count(); ++s) {
    if (!stream_drawn(m, sel, sim::StreamIndex{s})) continue;
    plan.stream_lane[s] = plan.lane_names.size();
    plan.lane_names.push_back(lane_name(in, sim::StreamIndex{s}));
    plan.lane_tooltips.push_back(in.plain_alloc_stream == sim::StreamIndex{s}
                                     ? "the legacy default stream (stream 0; R8), which plain buffer / free "
                                       "(cudaMalloc / cudaFree) run on: " +
                                           m.stream_name(sim::StreamIndex{s})
                                     : "stream " + m.stream_name(sim::StreamIndex{s}));
    plan.lane_is_host.push_back(false);
  }
  std::set<sim::HostThread> hosts;
  for (std::size_t i = 0; i < m.log().size(); ++i)
    if (sel.drawn(i) && is_host_side(m.log()[i].kind())) hosts.insert(m.log()[i].host());
  for (const auto h : hosts) {
    plan.host_lane[h] = plan.lane_names.size();
    plan.lane_names.push_back(hosts.size() == 1 ? std::string("host") : "host " + std::to_string(h.value));
    plan.lane_tooltips.push_back("host thread " + std::to_string(h.value) + ": synchronize and query calls");
    plan.lane_is_host.push_back(true);
  }
}

/// Places every drawn log entry: columns in program order, folded into bands;
/// stream-side entries (ops, record and wait marks) on their stream's lane,
/// host actions on their thread's lane.
void plan_entries(const DeviceModel& m, const Selection& sel, SvgPlan& plan) {
  using L = SvgLayout;
  const auto& log = m.log();
  std::size_t n = 0;
  for (std::size_t i = 0; i < log.size(); ++i) {
    if (!sel.drawn(i)) continue;
    const LogEntry& e = log[i];
    Place p{n / SvgLimits::kBandColumns, n % SvgLimits::kBandColumns, 0, 0};
    ++n;
    switch (e.kind()) {
      case LogEntry::Kind::Enqueue:
        p.lane = plan.stream_lane.at(e.stream.value);
        p.half_h = L::kBoxH / 2;
        plan.op_entry[e.op()] = i;
        break;
      case LogEntry::Kind::Record:
      case LogEntry::Kind::Wait:
        p.lane = plan.stream_lane.at(e.stream.value);
        p.half_h = L::kDiamond;
        break;
      default:
        p.lane = plan.host_lane.at(e.host());
        p.half_h = L::kBoxH / 2 - 6;
    }
    plan.place[i] = p;
  }
  plan.columns = std::min<std::size_t>(std::max<std::size_t>(n, 1), SvgLimits::kBandColumns);
  plan.bands = std::max<std::size_t>((n + SvgLimits::kBandColumns - 1) / SvgLimits::kBandColumns, 1);
}

/// The HB graph's event edges (R3) and host synchronization edges (R4) with
/// both ends drawn, in program order (sim::visit_hb_edges).
void plan_hb_edges(const DeviceModel& m, SvgPlan& plan) {
  sim::visit_hb_edges(m.log(), m.hb().stream_shapes(), [&](sim::HbRule rule, sim::HbNode from, sim::HbNode to) {
    if (!plan.place.count(from.entry) || !plan.place.count(to.entry)) return;
    if (rule == sim::HbRule::R3) plan.event_edges.emplace_back(from.entry, to.entry);
    if (rule == sim::HbRule::R4) plan.sync_edges.emplace_back(from.entry, to.entry);
  });
}

/// The findings' ops (red outline), the leaks' tags and the findings' text.
void plan_findings(const RenderInput& in, const Selection& sel, SvgPlan& plan) {
  const auto& op_entry = plan.op_entry;
  for (const std::size_t k : sel.findings) {
    const RenderFinding& f = in.findings[k];
    if (auto it = op_entry.find(f.first); it != op_entry.end()) {
      plan.red.insert(it->second);
      if (!f.second) plan.leak_tags[it->second].push_back(f.label);
    }
    if (f.second)
      if (auto it = op_entry.find(*f.second); it != op_entry.end()) plan.red.insert(it->second);
  }
  plan.finding_lines = finding_lines(in, sel);
}

const Font kTitleFont{16, true};
const Font kSubtitleFont{12};
const Font kLaneFont{13, true};
const Font kOpKindFont{11};
const Font kOpLabelFont{12.5};
const Font kMarkFont{12};
const Font kMarkVerbFont{11};
const Font kTagFont{12, true};
const Font kLegendFont{12};
const Font kFindingsFont{13, false, true};

/// The diagram's size: the bands of lanes, then the legend and the findings' text under them.
void plan_size(SvgPlan& plan) {
  using L = SvgLayout;
  plan.lanes_bottom = plan.band_top(plan.bands) - L::kBandGap;
  plan.legend_y = plan.lanes_bottom + 28;
  plan.findings_y = plan.legend_y + 34;
  double widest = 0;
  for (const auto& l : plan.finding_lines) widest = std::max(widest, kFindingsFont.width(l));
  widest = std::max(widest, kSubtitleFont.width(plan.note));
  const int lanes_w = L::kLabelW + static_cast<int>(plan.columns) * L::kColW + 20;
  const int text_w = 12 + static_cast<int>(std::ceil(widest)) + 20;
  plan.width = std::max({lanes_w, text_w, 760});
  const int line_h = SvgPlan::line_h;
  plan.height = plan.findings_y +
                (plan.finding_lines.empty() ? line_h : static_cast<int>(plan.finding_lines.size() + 1) * line_h) + 12;
}

void draw_header(std::string& out, const RenderInput& in, SvgPlan& plan) {
  const DeviceModel& m = *in.model;
  const int width = plan.width, height = plan.height;
  put(out,
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans, Arial, sans-serif\">\n",
      width, height);
  out += "<defs>\n";
  for (const auto& [id, color] : std::vector<std::pair<const char*, const char*>>{
           {"arrow-event", "#1f5fbf"}, {"arrow-sync", "#777777"}, {"arrow-missing", "#d62728"}})
    put(out,
        "<marker id=\"{}\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" "
        "orient=\"auto\"><path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"{}\"/></marker>\n",
        id, color);
  out += "</defs>\n";
  put(out, "<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", width, height);
  std::size_t ops = 0;
  for (std::uint32_t s = 0; s < m.stream_count(); ++s) ops += m.op_count(sim::StreamIndex{s});
  std::size_t streams = 0;
  for (std::uint32_t s = 0; s < m.stream_count(); ++s)
    if (m.op_count(sim::StreamIndex{s}) > 0 || in.plain_alloc_stream != sim::StreamIndex{s}) ++streams;
  out += "<g id=\"header\">\n";
  svg_label(out, plan, 12, 26,
            fmt::format("streamcheck run: {}, {}, {}", plural(streams, "stream"), plural(ops, "op"),
                        plural(in.findings.size(), "finding")),
            kTitleFont, plan.width - 24, " fill=\"#222222\"", false);
  svg_label(out, plan, 12, 46, "columns: API calls in program order (left to right)", kSubtitleFont, plan.width - 24,
            " fill=\"#666666\"", false);
  if (!plan.note.empty())
    svg_label(out, plan, 12, 62, "drawn: " + plan.note, kSubtitleFont, plan.width - 24, " fill=\"#b35900\"", false);
  out += "</g>\n";
}

void draw_lanes(std::string& out, SvgPlan& plan) {
  using L = SvgLayout;
  out += "<g id=\"lanes\">\n";
  for (std::size_t band = 0; band < plan.bands; ++band)
    for (std::size_t l = 0; l < plan.lane_names.size(); ++l) {
      put(out, "<rect x=\"0\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#d0d7de\"/>\n",
          plan.lane_top(band, l), plan.width, L::kLaneH,
          plan.lane_is_host[l] ? "#fff8e6" : (l % 2 == 0 ? "#f3f6fa" : "#ffffff"));
      put(out, "<g class=\"lane-label\"><title>{}</title>\n", xml_escape(plan.lane_tooltips[l]));
      svg_label(out, plan, 12, plan.lane_mid(band, l) + 5, plan.lane_names[l], kLaneFont, L::kLabelW - 24,
                " fill=\"#222222\"", false);
      out += "</g>\n";
    }
  for (std::size_t band = 0; band < plan.bands; ++band)
    put(out, "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#b0b7bf\"/>\n", L::kLabelW - 6,
        plan.band_top(band), plan.band_top(band) + plan.band_h() - L::kBandGap);
  out += "</g>\n";
}

/// HB edges under the boxes: event edges (R3) and host synchronization (R4).
void draw_hb_edges(std::string& out, const SvgPlan& plan) {
  out += "<g id=\"hb-edges\" fill=\"none\">\n";
  for (const auto& [a, b] : plan.event_edges)
    put(out,
        "<path class=\"event-edge\" d=\"{}\" stroke=\"#1f5fbf\" stroke-width=\"2\" "
        "marker-end=\"url(#arrow-event)\"/>\n",
        arrow_path(plan, plan.place.at(a), plan.place.at(b), 30));
  for (const auto& [a, b] : plan.sync_edges)
    put(out,
        "<path class=\"sync-edge\" d=\"{}\" stroke=\"#777777\" stroke-width=\"1.5\" stroke-dasharray=\"2,3\" "
        "marker-end=\"url(#arrow-sync)\"/>\n",
        arrow_path(plan, plan.place.at(a), plan.place.at(b), 30));
  out += "</g>\n";
}

void draw_entries(std::string& out, const RenderInput& in, SvgPlan& plan) {
  using L = SvgLayout;
  const DeviceModel& m = *in.model;
  const auto& log = m.log();
  constexpr double inner = L::kBoxW - 2 * L::kPad;
  out += "<g id=\"ops\">\n";
  for (const auto& [i, p] : plan.place) {
    const LogEntry& e = log[i];
    const int x = plan.x(p), y = plan.y(p);
    const bool is_red = plan.red.count(i) != 0;
    switch (e.kind()) {
      case LogEntry::Kind::Enqueue: {
        const OpKind k = m.op_kind(e.op());
        const char* fill = k == OpKind::Kernel ? "#dbe9ff" : k == OpKind::Alloc ? "#ddf4dd" : "#f1e4fb";
        const auto statement = statement_of(in, e.op());
        put(out, "<g class=\"op{}\">\n<title>{}</title>\n", is_red ? " finding" : "",
            xml_escape(sim::describe(m, e.op()) + (statement ? "\n" + *statement : "")));
        put(out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"4\" fill=\"{}\" stroke=\"{}\" "
            "stroke-width=\"{}\"/>\n",
            x - L::kBoxW / 2, y - L::kBoxH / 2, L::kBoxW, L::kBoxH, fill, is_red ? "#d62728" : "#5a6b7d",
            is_red ? 3 : 1);
        svg_label(out, plan, x, y - 5, fmt::format("#{} {}", e.op().index, sim::to_string(k)), kOpKindFont, inner,
                  " fill=\"#555555\"", true);
        svg_label(out, plan, x, y + 13, m.op_label(e.op()), kOpLabelFont, inner, " fill=\"#111111\"", true);
        out += "</g>\n";
        if (auto it = plan.leak_tags.find(i); it != plan.leak_tags.end())
          svg_label(out, plan, x, y - L::kBoxH / 2 - 5, fmt::format("{}", fmt::join(it->second, ", ")), kTagFont,
                    L::kColW - 8, " fill=\"#d62728\"", true);
        break;
      }
      case LogEntry::Kind::Record:
      case LogEntry::Kind::Wait: {
        const bool rec = e.kind() == LogEntry::Kind::Record;
        const int d = L::kDiamond;
        put(out, "<g class=\"{}\">\n<title>{}</title>\n", rec ? "record" : "wait", xml_escape(host_action(m, e)));
        put(out, "<polygon points=\"{},{} {},{} {},{} {},{}\" fill=\"{}\" stroke=\"#1f5fbf\" stroke-width=\"2\"/>\n", x,
            y - d, x + d, y, x, y + d, x - d, y, rec ? "#1f5fbf" : "#ffffff");
        // Under the mark, centred in its column (the room a column has): what, then the event's name.
        svg_label(out, plan, x, y + d + 13, rec ? "record" : "wait", kMarkVerbFont, L::kColW - 8, " fill=\"#1f5fbf\"",
                  true);
        svg_label(out, plan, x, y + d + 28, m.event_name(e.event()), kMarkFont, L::kColW - 8, " fill=\"#1f5fbf\"",
                  true);
        out += "</g>\n";
        break;
      }
      default: {
        const int h = p.half_h;
        put(out, "<g class=\"host-action\">\n<title>{}</title>\n",
            xml_escape(fmt::format("host{}: {}", e.host().value, host_action(m, e))));
        put(out, "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"{}\" fill=\"#ffe9b3\" stroke=\"#b58900\"/>\n",
            x - L::kBoxW / 2, y - h, L::kBoxW, 2 * h, h);
        svg_label(out, plan, x, y + 5, host_action_short(m, e), kMarkFont, inner, " fill=\"#111111\"", true);
        out += "</g>\n";
      }
    }
  }
  out += "</g>\n";
}

/// The findings' missing edges, over the boxes; each label staggered until it
/// hits no text drawn before it.
void draw_missing_edges(std::string& out, const RenderInput& in, const Selection& sel, SvgPlan& plan) {
  using L = SvgLayout;
  out += "<g id=\"missing-edges\" fill=\"none\">\n";
  std::map<std::pair<std::size_t, std::size_t>, int> seen_pairs;  // bulges the arcs of one pair apart
  for (const std::size_t k : sel.findings) {
    const RenderFinding& f = in.findings[k];
    if (!f.second) continue;
    const auto ia = plan.op_entry.find(f.first), ib = plan.op_entry.find(*f.second);
    if (ia == plan.op_entry.end() || ib == plan.op_entry.end()) continue;
    const Place& a = plan.place.at(ia->second);
    const Place& b = plan.place.at(ib->second);
    const int nth = seen_pairs[{ia->second, ib->second}]++;
    std::string words;
    for (const auto& line : f.lines) words += (words.empty() ? "" : "\n") + line;
    put(out, "<g class=\"missing-edge\">\n<title>{}</title>\n", xml_escape(words));
    const int bulge = 44 + 10 * nth;
    put(out,
        "<path d=\"{}\" stroke=\"#d62728\" stroke-width=\"2.5\" stroke-dasharray=\"7,5\" "
        "marker-end=\"url(#arrow-missing)\"/>\n",
        arrow_path(plan, a, b, bulge));
    // Label on a white plate beside the middle of the arrow (on the side the
    // arrow leaves free), or over the apex of an arc within one lane; moved
    // down (or up, over an arc) in steps until it overlaps no other text.
    const std::string label = std::to_string(k + 1) + ". " + f.label + (f.definite ? "" : ": missing edge");
    const Font font = kTagFont;
    const double w = font.width(label) + 10;
    const int mid_x = (plan.x(a) + plan.x(b)) / 2;
    const bool arc = a.band == b.band && a.lane == b.lane;
    double left = arc ? mid_x - w / 2 : mid_x + 8;
    double base = arc ? plan.y(a) - a.half_h - bulge / 2 - 6 : (plan.y(a) + plan.y(b)) / 2.0 - 8;
    const double step = arc ? -20 : 20;
    for (int tries = 0; tries < 16; ++tries) {
      const Rect plate{left, base - 13, left + w, base + 5};
      if (std::none_of(plan.taken.begin(), plan.taken.end(), [&](const Rect& r) { return r.overlaps(plate); })) break;
      base += step;
      if (arc && base < plan.band_top(a.band) - L::kBandGap + 20) {
        base = plan.y(a) - a.half_h - bulge / 2 - 6;  // no room above: step sideways instead
        left += w + 6;
      }
    }
    put(out,
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"18\" rx=\"3\" fill=\"#ffffff\" fill-opacity=\"0.9\" "
        "stroke=\"#d62728\" stroke-width=\"1\"/>\n",
        left, base - 13, w);
    svg_label(out, plan, left + w / 2, base, label, font, w, " fill=\"#d62728\" stroke=\"none\"", true);
    out += "</g>\n";
  }
  out += "</g>\n";
}

void draw_legend(std::string& out, SvgPlan& plan) {
  const int legend_y = plan.legend_y;
  out += "<g id=\"legend\" fill=\"#333333\">\n";
  double lx = 12;
  const auto legend = [&](const char* stroke, const char* dash, const char* marker, const std::string& text) {
    put(out,
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"{} "
        "marker-end=\"url(#{})\"/>\n",
        lx, legend_y - 4, lx + 34, legend_y - 4, stroke, dash, marker);
    svg_label(out, plan, lx + 42, legend_y, text, kLegendFont, kLegendFont.width(text), "", false);
    lx += 42 + kLegendFont.width(text) + 24;
  };
  legend("#1f5fbf", "", "arrow-event", "event edge (record \xE2\x86\x92 wait)");
  legend("#777777", " stroke-dasharray=\"2,3\"", "arrow-sync", "host synchronize");
  legend("#d62728", " stroke-dasharray=\"7,5\"", "arrow-missing", "missing edge of a finding");
  out += "</g>\n";
}

void draw_findings(std::string& out, SvgPlan& plan) {
  const int findings_y = plan.findings_y;
  const double room = plan.width - 24;
  out += "<g id=\"findings\" font-family=\"DejaVu Sans Mono, monospace\">\n";
  if (plan.finding_lines.empty()) {
    svg_label(out, plan, 12, findings_y, "no findings", kFindingsFont, room, " fill=\"#2a7a2a\"", false);
  } else {
    svg_label(out, plan, 12, findings_y, "findings:", Font{13, true, true}, room, " fill=\"#d62728\"", false);
    for (std::size_t j = 0; j < plan.finding_lines.size(); ++j)
      svg_label(out, plan, 12, findings_y + static_cast<int>(j + 1) * SvgPlan::line_h, plan.finding_lines[j],
                kFindingsFont, room, " xml:space=\"preserve\" fill=\"#222222\"", false);
  }
  out += "</g>\n";
}

}  // namespace

std::string render_svg(const RenderInput& in, const RenderOptions& o) {
  Selection sel = select(in, o);
  cap(sel, SvgLimits::kMaxColumns);
  SvgPlan plan;
  plan.note = sel.note;
  plan_lanes(in, sel, plan);
  plan_entries(*in.model, sel, plan);
  plan_hb_edges(*in.model, plan);
  plan_findings(in, sel, plan);
  plan_size(plan);
  std::string out;
  draw_header(out, in, plan);
  draw_lanes(out, plan);
  draw_hb_edges(out, plan);
  draw_entries(out, in, plan);
  draw_missing_edges(out, in, sel, plan);
  draw_legend(out, plan);
  draw_findings(out, plan);
  out += "</svg>\n";
  return out;
}

// ---------------------------------------------------------------- Perfetto

std::string render_perfetto(const RenderInput& in, const RenderOptions& o) {
  const DeviceModel& m = *in.model;
  const Selection sel = select(in, o);
  constexpr std::uint64_t kStep = 10;  // microseconds between execution slots
  constexpr std::uint64_t kDur = 8;
  const auto entries = op_entries(m);
  std::vector<OpRef> ops;  // drawn, stream by stream, in enqueue order
  for (const auto& [op, entry] : entries)
    if (sel.drawn(entry)) ops.push_back(op);

  // Execution slot of every op: completion order; never-run ops after those,
  // in enqueue (log) order.
  std::map<OpRef, std::uint64_t> slot;
  std::uint64_t next = 0;
  for (const auto& [op, entry] : entries)
    if (const auto c = m.completion_index(op)) {
      slot[op] = *c;
      next = std::max(next, *c + 1);
    }
  for (const LogEntry& e : m.log())
    if (e.kind() == LogEntry::Kind::Enqueue && !slot.count(e.op())) slot[e.op()] = next++;

  // One event per line, so that a diff of two traces reads event by event.
  std::string out = "{\"traceEvents\":[";
  std::string sep = "\n";
  const auto event = [&](const Json& e) {
    out += sep + e.dump(-1, ' ', false, Json::error_handler_t::replace);
    sep = ",\n";
  };
  event({{"ph", "M"}, {"pid", 1}, {"tid", 0}, {"name", "process_name"}, {"args", {{"name", "streamcheck sim"}}}});
  if (!sel.note.empty())
    event({{"ph", "M"}, {"pid", 1}, {"tid", 0}, {"name", "process_labels"}, {"args", {{"labels", sel.note}}}});
  std::set<std::uint32_t> lanes;
  for (const OpRef r : ops) lanes.insert(r.stream.value);
  for (const std::uint32_t s : lanes) {
    const std::uint32_t tid = s + 1;
    event({{"ph", "M"},
           {"pid", 1},
           {"tid", tid},
           {"name", "thread_name"},
           {"args", {{"name", lane_name(in, sim::StreamIndex{s})}}}});
    event({{"ph", "M"}, {"pid", 1}, {"tid", tid}, {"name", "thread_sort_index"}, {"args", {{"sort_index", tid}}}});
  }
  for (const OpRef r : ops) {
    const std::string kind(sim::to_string(m.op_kind(r)));
    const auto c = m.completion_index(r);
    Json args = {{"op", ref_name(m, r)}, {"kind", kind}, {"label", m.op_label(r)}, {"executed", c.has_value()}};
    if (c) args["completion_index"] = *c;
    if (in.run)
      if (const auto origin = in.run->origin(r)) {
        args["line"] = origin->line;
        args["statement"] = origin->text;
      }
    event({{"ph", "X"},
           {"pid", 1},
           {"tid", r.stream.value + 1},
           {"ts", slot.at(r) * kStep},
           {"dur", kDur},
           {"cat", kind},
           {"name", kind + " " + m.op_label(r)},
           {"args", std::move(args)}});
  }
  // Record and wait marks, by the event's name: an instant at the end of the
  // op before them on their stream (what a record captures, what a wait
  // follows), at 0 when there is none.
  std::vector<std::optional<OpRef>> last_op(m.stream_count());
  for (std::size_t i = 0; i < m.log().size(); ++i) {
    const LogEntry& e = m.log()[i];
    if (e.kind() == LogEntry::Kind::Enqueue) last_op[e.stream.value] = e.op();
    if ((e.kind() != LogEntry::Kind::Record && e.kind() != LogEntry::Kind::Wait) || !sel.drawn(i)) continue;
    if (!lanes.count(e.stream.value)) continue;  // a mark alone on a lane with no op drawn
    const bool rec = e.kind() == LogEntry::Kind::Record;
    const auto& before = last_op[e.stream.value];
    event({{"ph", "i"},
           {"s", "t"},
           {"pid", 1},
           {"tid", e.stream.value + 1},
           {"ts", before ? slot.at(*before) * kStep + kDur : 0},
           {"cat", rec ? "record" : "wait"},
           {"name", (rec ? "record " : "wait ") + m.event_name(e.event())},
           {"args", {{"call", i}, {"event", m.event_name(e.event())}, {"action", host_action(m, e)}}}});
  }
  for (const std::size_t k : sel.findings) {
    const RenderFinding& f = in.findings[k];
    const OpRef at = f.second ? *f.second : f.first;
    std::string words;
    for (const auto& line : f.lines) words += (words.empty() ? "" : "\n") + line;
    Json args = {{"finding", words}, {"number", k + 1}, {"first", ref_name(m, f.first)}};
    if (f.second) args["second"] = ref_name(m, *f.second);
    event({{"ph", "i"},
           {"s", "t"},
           {"pid", 1},
           {"tid", at.stream.value + 1},
           {"ts", slot.at(at) * kStep},
           {"cat", "finding"},
           {"name", f.label},
           {"args", std::move(args)}});
  }
  out += "\n]}\n";
  return out;
}

}  // namespace streamcheck::tools
