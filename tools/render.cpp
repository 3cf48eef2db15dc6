#include "tools/render.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "backend_sim/explain.h"
#include "backend_sim/hb_graph.h"
#include "tools/explain.h"

namespace streamcheck::tools {
namespace {

using sim::DeviceModel;
using sim::Finding;
using sim::FindingKind;
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

using sim::event_name;
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

/// Keeps at most `n` bytes (cut at a UTF-8 boundary), marking a cut with "...".
std::string shorten(const std::string& s, std::size_t n) {
  if (s.size() <= n) return s;
  std::size_t cut = n - 1;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "\xE2\x80\xA6";  // U+2026 HORIZONTAL ELLIPSIS
}

/// Approximate display width in characters (UTF-8 continuation bytes excluded).
std::size_t display_chars(const std::string& s) {
  std::size_t n = 0;
  for (const char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  return n;
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

/// Every op of the model, stream by stream, in enqueue order.
std::vector<OpRef> all_ops(const DeviceModel& m) {
  std::vector<OpRef> out;
  for (std::uint32_t s = 0; s < m.stream_count(); ++s)
    for (std::uint32_t i = 0; i < m.op_count(sim::StreamIndex{s}); ++i) out.push_back(OpRef{sim::StreamIndex{s}, i});
  return out;
}

}  // namespace

// ---------------------------------------------------------------- text

std::string render_text(const DeviceModel& m) {
  std::string out;
  put(out, "streams ({}):\n", m.stream_count());
  for (std::uint32_t n = 0; n < m.stream_count(); ++n) {
    const sim::StreamIndex s{n};
    put(out, "  {} ({} {}):\n", m.stream_name(s), m.op_count(s), m.op_count(s) == 1 ? "op" : "ops");
    for (std::uint32_t i = 0; i < m.op_count(s); ++i) {
      const OpRef r{s, i};
      if (const auto c = m.completion_index(r))
        put(out, "    {}  [executed #{}]\n", sim::describe(m, r), *c);
      else
        put(out, "    {}  [not executed]\n", sim::describe(m, r));
    }
  }
  std::vector<std::string> actions;
  for (std::size_t i = 0; i < m.log().size(); ++i) {
    const LogEntry& e = m.log()[i];
    if (e.kind == LogEntry::Kind::Enqueue) continue;
    actions.push_back(fmt::format("  @{} host{}: {}", i, e.host.value, host_action(m, e)));
  }
  put(out, "host actions ({}):\n", actions.size());
  for (const auto& a : actions) put(out, "{}\n", a);
  put(out, "findings ({}):\n", m.findings().size());
  for (const Finding& f : m.findings())
    for (const auto& line : split_lines(sim::format(m, f))) put(out, "  {}\n", line);
  return out;
}

// ---------------------------------------------------------------- DOT

std::string render_dot(const DeviceModel& m) {
  const sim::HbGraph g(m);
  // The findings: their ops filled red, then each missing edge dashed red.
  sim::HbGraph::Highlight highlight;
  if (!m.findings().empty()) highlight.comment = "findings: racing ops in red, the missing edge dashed red";
  for (const Finding& f : m.findings()) {
    highlight.red.insert(g.vertex(f.first));
    if (!f.second) continue;
    highlight.red.insert(g.vertex(*f.second));
    highlight.dashed.push_back(
        {g.vertex(f.first), g.vertex(*f.second), f.definite ? "freed before use" : "missing", sim::format(m, f)});
  }
  std::ostringstream dot;
  g.write_dot(dot, highlight);
  return dot.str();
}

// ---------------------------------------------------------------- SVG

namespace {

struct SvgLayout {
  static constexpr int kTop = 70;      // title and room for arcs over the first lane
  static constexpr int kLabelW = 120;  // lane labels
  static constexpr int kColW = 132;    // one column per log entry
  static constexpr int kBoxW = 118;
  static constexpr int kBoxH = 44;
  static constexpr int kLaneH = 104;
  static constexpr int kDiamond = 9;  // half-diagonal of record / wait marks
  static constexpr std::size_t kBoxChars = 17;

  static int cx(std::size_t col) { return kLabelW + static_cast<int>(col) * kColW + kColW / 2; }
  static int lane_top(std::size_t lane) { return kTop + static_cast<int>(lane) * kLaneH; }
  static int lane_mid(std::size_t lane) { return lane_top(lane) + kLaneH / 2; }
};

/// Where a log entry is drawn: its column, lane, and half-height of its shape.
struct Place {
  std::size_t col = 0;
  std::size_t lane = 0;
  int half_h = 0;
};

void svg_text(std::string& out, int x, int y, const std::string& text, const char* extra_attrs = "") {
  put(out, "<text x=\"{}\" y=\"{}\"{}>{}</text>\n", x, y, extra_attrs, xml_escape(text));
}

/// A straight arrow between two placed entries, leaving / entering through the
/// side facing the other lane (or arcing over the lane when both share it).
std::string arrow_path(const Place& a, const Place& b, int bulge) {
  using L = SvgLayout;
  const int x1 = L::cx(a.col), x2 = L::cx(b.col);
  if (a.lane == b.lane) {
    const int y1 = L::lane_mid(a.lane) - a.half_h, y2 = L::lane_mid(b.lane) - b.half_h;
    return fmt::format("M {} {} Q {} {} {} {}", x1, y1, (x1 + x2) / 2, std::min(y1, y2) - bulge, x2, y2);
  }
  const bool down = b.lane > a.lane;
  const int y1 = L::lane_mid(a.lane) + (down ? a.half_h : -a.half_h);
  const int y2 = L::lane_mid(b.lane) + (down ? -b.half_h : b.half_h);
  return fmt::format("M {} {} L {} {}", x1, y1, x2, y2);
}

}  // namespace

namespace {

/// Where everything of the swimlane diagram goes, worked out before drawing.
struct SvgPlan {
  std::vector<std::string> lane_names;  // the streams, then the host threads that synchronized or queried
  std::map<sim::HostThread, std::size_t> host_lane;
  std::vector<Place> place;  // per log entry
  std::map<OpRef, std::size_t> op_entry;
  // HB edges the diagram shows, as (from entry, to entry): event edges (R3)
  // and host synchronization (R4).
  std::vector<std::pair<std::size_t, std::size_t>> event_edges, sync_edges;
  std::set<std::size_t> red;                                  // entries of the findings' ops
  std::map<std::size_t, std::vector<std::string>> leak_tags;  // entry -> labels
  std::vector<std::string> finding_lines;
  int lanes_bottom = 0, legend_y = 0, findings_y = 0, width = 0, height = 0;
  static constexpr int line_h = 17;
};

void plan_lanes(const DeviceModel& m, SvgPlan& plan) {
  const auto& log = m.log();
  auto& lane_names = plan.lane_names;
  auto& host_lane = plan.host_lane;
  std::set<sim::HostThread> hosts;
  for (const LogEntry& e : log)
    if (is_host_side(e.kind)) hosts.insert(e.host);
  for (std::uint32_t s = 0; s < m.stream_count(); ++s) lane_names.push_back(m.stream_name(sim::StreamIndex{s}));
  for (const auto h : hosts) {
    host_lane[h] = lane_names.size();
    lane_names.push_back(hosts.size() == 1 ? std::string("host") : "host " + std::to_string(h.value));
  }
}

/// Places every log entry: stream-side entries (ops, record and wait marks)
/// on their stream's lane, host actions on their thread's lane.
void plan_entries(const DeviceModel& m, SvgPlan& plan) {
  using L = SvgLayout;
  const auto& log = m.log();
  plan.place.resize(log.size());
  for (std::size_t i = 0; i < log.size(); ++i) {
    const LogEntry& e = log[i];
    Place& p = plan.place[i];
    p.col = i;
    switch (e.kind) {
      case LogEntry::Kind::Enqueue:
        p.lane = e.stream.value;
        p.half_h = L::kBoxH / 2;
        plan.op_entry[e.op] = i;
        break;
      case LogEntry::Kind::Record:
      case LogEntry::Kind::Wait:
        p.lane = e.stream.value;
        p.half_h = L::kDiamond;
        break;
      default:
        p.lane = plan.host_lane.at(e.host);
        p.half_h = L::kBoxH / 2 - 6;
    }
  }
}

/// The HB graph's event edges (R3) and host synchronization edges (R4) as
/// (from entry, to entry), in program order (sim::visit_hb_edges).
void plan_hb_edges(const DeviceModel& m, SvgPlan& plan) {
  sim::visit_hb_edges(m.log(), m.stream_count(), [&](sim::HbRule rule, sim::HbNode from, sim::HbNode to) {
    if (rule == sim::HbRule::R3) plan.event_edges.emplace_back(from.entry, to.entry);
    if (rule == sim::HbRule::R4) plan.sync_edges.emplace_back(from.entry, to.entry);
  });
}

/// The findings' ops (red outline), the leaks' tags and the findings' text.
void plan_findings(const DeviceModel& m, SvgPlan& plan) {
  const auto& op_entry = plan.op_entry;
  auto& red = plan.red;
  auto& leak_tags = plan.leak_tags;
  for (const Finding& f : m.findings()) {
    if (auto it = op_entry.find(f.first); it != op_entry.end()) {
      red.insert(it->second);
      if (!f.second) leak_tags[it->second].push_back(finding_label(f));
    }
    if (f.second)
      if (auto it = op_entry.find(*f.second); it != op_entry.end()) red.insert(it->second);
  }

  for (std::size_t k = 0; k < m.findings().size(); ++k) {
    const auto lines = split_lines(sim::format(m, m.findings()[k]));
    for (std::size_t j = 0; j < lines.size(); ++j)
      plan.finding_lines.push_back((j == 0 ? std::to_string(k + 1) + ". " : "   ") + lines[j]);
  }
}

/// The diagram's size: the lanes, then the legend and the findings' text under them.
void plan_size(const DeviceModel& m, SvgPlan& plan) {
  using L = SvgLayout;
  const auto& log = m.log();
  const auto& finding_lines = plan.finding_lines;
  const int line_h = SvgPlan::line_h;
  plan.lanes_bottom = L::lane_top(plan.lane_names.size());
  plan.legend_y = plan.lanes_bottom + 28;
  plan.findings_y = plan.legend_y + 34;
  std::size_t widest_line = 0;
  for (const auto& l : finding_lines) widest_line = std::max(widest_line, display_chars(l));
  const int lanes_w = L::kLabelW + static_cast<int>(std::max<std::size_t>(log.size(), 1)) * L::kColW + 20;
  const int text_w = 20 + static_cast<int>(widest_line) * 8 + 20;  // 13px monospace ~ 7.8px a char
  plan.width = std::max({lanes_w, text_w, 760});
  plan.height =
      plan.findings_y + (finding_lines.empty() ? line_h : static_cast<int>(finding_lines.size() + 1) * line_h) + 12;
}

void draw_header(std::string& out, const DeviceModel& m, const SvgPlan& plan) {
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
  const std::size_t nf = m.findings().size();
  svg_text(out, 12, 26,
           fmt::format("streamcheck run: {} stream{}, {} op{}, {} finding{}", m.stream_count(),
                       m.stream_count() == 1 ? "" : "s", ops, ops == 1 ? "" : "s", nf, nf == 1 ? "" : "s"),
           " font-size=\"16\" font-weight=\"bold\" fill=\"#222222\"");
  svg_text(out, 12, 46, "columns: API calls in program order (left to right)", " font-size=\"12\" fill=\"#666666\"");
}

void draw_lanes(std::string& out, const DeviceModel& m, const SvgPlan& plan) {
  using L = SvgLayout;
  out += "<g id=\"lanes\">\n";
  for (std::size_t l = 0; l < plan.lane_names.size(); ++l) {
    const bool host = l >= m.stream_count();
    put(out, "<rect x=\"0\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#d0d7de\"/>\n", L::lane_top(l),
        plan.width, L::kLaneH, host ? "#fff8e6" : (l % 2 == 0 ? "#f3f6fa" : "#ffffff"));
    svg_text(out, 12, L::lane_mid(l) + 5, shorten(plan.lane_names[l], 14),
             " class=\"lane-label\" font-size=\"15\" font-weight=\"bold\" fill=\"#222222\"");
  }
  put(out, "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#b0b7bf\"/>\n", L::kLabelW - 6, L::kTop,
      plan.lanes_bottom);
  out += "</g>\n";
}

/// HB edges under the boxes: event edges (R3) and host synchronization (R4).
void draw_hb_edges(std::string& out, const SvgPlan& plan) {
  const auto& place = plan.place;
  out += "<g id=\"hb-edges\" fill=\"none\">\n";
  for (const auto& [a, b] : plan.event_edges)
    put(out,
        "<path class=\"event-edge\" d=\"{}\" stroke=\"#1f5fbf\" stroke-width=\"2\" "
        "marker-end=\"url(#arrow-event)\"/>\n",
        arrow_path(place[a], place[b], 30));
  for (const auto& [a, b] : plan.sync_edges)
    put(out,
        "<path class=\"sync-edge\" d=\"{}\" stroke=\"#777777\" stroke-width=\"1.5\" stroke-dasharray=\"2,3\" "
        "marker-end=\"url(#arrow-sync)\"/>\n",
        arrow_path(place[a], place[b], 30));
  out += "</g>\n";
}

void draw_entries(std::string& out, const DeviceModel& m, const SvgPlan& plan) {
  using L = SvgLayout;
  const auto& log = m.log();
  out += "<g id=\"ops\">\n";
  for (std::size_t i = 0; i < log.size(); ++i) {
    const LogEntry& e = log[i];
    const Place& p = plan.place[i];
    const int x = L::cx(p.col), y = L::lane_mid(p.lane);
    const bool is_red = plan.red.count(i) != 0;
    switch (e.kind) {
      case LogEntry::Kind::Enqueue: {
        const OpKind k = m.op_kind(e.op);
        const char* fill = k == OpKind::Kernel ? "#dbe9ff" : k == OpKind::Alloc ? "#ddf4dd" : "#f1e4fb";
        put(out, "<g class=\"op{}\">\n<title>{}</title>\n", is_red ? " finding" : "",
            xml_escape(sim::describe(m, e.op)));
        put(out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"4\" fill=\"{}\" stroke=\"{}\" "
            "stroke-width=\"{}\"/>\n",
            x - L::kBoxW / 2, y - L::kBoxH / 2, L::kBoxW, L::kBoxH, fill, is_red ? "#d62728" : "#5a6b7d",
            is_red ? 3 : 1);
        svg_text(out, x, y - 5, fmt::format("#{} {}", e.op.index, sim::to_string(k)),
                 " text-anchor=\"middle\" font-size=\"11\" fill=\"#555555\"");
        svg_text(out, x, y + 13, shorten(m.op_label(e.op), L::kBoxChars),
                 " text-anchor=\"middle\" font-size=\"13\" fill=\"#111111\"");
        out += "</g>\n";
        if (auto it = plan.leak_tags.find(i); it != plan.leak_tags.end())
          svg_text(out, x, y - L::kBoxH / 2 - 5, fmt::format("{}", fmt::join(it->second, ", ")),
                   " text-anchor=\"middle\" font-size=\"12\" font-weight=\"bold\" fill=\"#d62728\"");
        break;
      }
      case LogEntry::Kind::Record:
      case LogEntry::Kind::Wait: {
        const bool rec = e.kind == LogEntry::Kind::Record;
        const int d = L::kDiamond;
        put(out, "<g class=\"{}\">\n<title>{}</title>\n", rec ? "record" : "wait", xml_escape(host_action(m, e)));
        put(out, "<polygon points=\"{},{} {},{} {},{} {},{}\" fill=\"{}\" stroke=\"#1f5fbf\" stroke-width=\"2\"/>\n", x,
            y - d, x + d, y, x, y + d, x - d, y, rec ? "#1f5fbf" : "#ffffff");
        svg_text(out, x + d + 4, y + 4, (rec ? "record " : "wait ") + event_name(e.event),
                 " font-size=\"12\" fill=\"#1f5fbf\"");
        out += "</g>\n";
        break;
      }
      default: {
        const int h = p.half_h;
        put(out, "<g class=\"host-action\">\n<title>{}</title>\n",
            xml_escape(fmt::format("host{}: {}", e.host.value, host_action(m, e))));
        put(out, "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"{}\" fill=\"#ffe9b3\" stroke=\"#b58900\"/>\n",
            x - L::kBoxW / 2, y - h, L::kBoxW, 2 * h, h);
        svg_text(out, x, y + 5, shorten(host_action_short(m, e), L::kBoxChars),
                 " text-anchor=\"middle\" font-size=\"12\" fill=\"#111111\"");
        out += "</g>\n";
      }
    }
  }
  out += "</g>\n";
}

/// The findings' missing edges, over the boxes.
void draw_missing_edges(std::string& out, const DeviceModel& m, const SvgPlan& plan) {
  using L = SvgLayout;
  const auto& op_entry = plan.op_entry;
  out += "<g id=\"missing-edges\" fill=\"none\">\n";
  std::map<std::pair<std::size_t, std::size_t>, int> seen_pairs;  // stacks labels of one pair
  for (const Finding& f : m.findings()) {
    if (!f.second) continue;
    const auto ia = op_entry.find(f.first), ib = op_entry.find(*f.second);
    if (ia == op_entry.end() || ib == op_entry.end()) continue;
    const Place& a = plan.place[ia->second];
    const Place& b = plan.place[ib->second];
    const int nth = seen_pairs[{ia->second, ib->second}]++;
    put(out, "<g class=\"missing-edge\">\n<title>{}</title>\n", xml_escape(sim::format(m, f)));
    put(out,
        "<path d=\"{}\" stroke=\"#d62728\" stroke-width=\"2.5\" stroke-dasharray=\"7,5\" "
        "marker-end=\"url(#arrow-missing)\"/>\n",
        arrow_path(a, b, 44 + 10 * nth));
    // Label on a white plate beside the middle of the arrow (on the side the
    // arrow leaves free), or over the apex of an arc within one lane.
    const std::string label = finding_label(f) + (f.definite ? "" : ": missing edge");
    const int w = static_cast<int>(display_chars(label)) * 7 + 10;
    const int mid_x = (L::cx(a.col) + L::cx(b.col)) / 2;
    int left = 0, base = 0;
    if (a.lane == b.lane) {
      left = mid_x - w / 2;
      base = L::lane_mid(a.lane) - a.half_h - (44 + 10 * nth) / 2 - 6 - 18 * nth;
    } else {
      const int mid_y = (L::lane_mid(a.lane) + L::lane_mid(b.lane)) / 2;
      left = mid_x + 8;
      base = (b.lane > a.lane ? mid_y - 8 : mid_y + 18) + 18 * nth;
    }
    put(out,
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"18\" rx=\"3\" fill=\"#ffffff\" fill-opacity=\"0.9\" "
        "stroke=\"#d62728\" stroke-width=\"1\"/>\n",
        left, base - 13, w);
    svg_text(out, left + w / 2, base, label,
             " text-anchor=\"middle\" font-size=\"12\" font-weight=\"bold\" fill=\"#d62728\" stroke=\"none\"");
    out += "</g>\n";
  }
  out += "</g>\n";
}

void draw_legend(std::string& out, const SvgPlan& plan) {
  const int legend_y = plan.legend_y;
  out += "<g id=\"legend\" font-size=\"12\" fill=\"#333333\">\n";
  int lx = 12;
  const auto legend = [&](const char* stroke, const char* dash, const char* marker, const std::string& text) {
    put(out,
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"{} "
        "marker-end=\"url(#{})\"/>\n",
        lx, legend_y - 4, lx + 34, legend_y - 4, stroke, dash, marker);
    svg_text(out, lx + 42, legend_y, text);
    lx += 42 + static_cast<int>(display_chars(text)) * 7 + 24;
  };
  legend("#1f5fbf", "", "arrow-event", "event edge (record \xE2\x86\x92 wait)");
  legend("#777777", " stroke-dasharray=\"2,3\"", "arrow-sync", "host synchronize");
  legend("#d62728", " stroke-dasharray=\"7,5\"", "arrow-missing", "missing edge of a finding");
  out += "</g>\n";
}

void draw_findings(std::string& out, const SvgPlan& plan) {
  const auto& finding_lines = plan.finding_lines;
  const int findings_y = plan.findings_y;
  out += "<g id=\"findings\" font-family=\"DejaVu Sans Mono, monospace\" font-size=\"13\">\n";
  if (finding_lines.empty()) {
    svg_text(out, 12, findings_y, "no findings", " fill=\"#2a7a2a\"");
  } else {
    svg_text(out, 12, findings_y, "findings:", " font-weight=\"bold\" fill=\"#d62728\"");
    for (std::size_t j = 0; j < finding_lines.size(); ++j)
      put(out, "<text x=\"12\" y=\"{}\" xml:space=\"preserve\" fill=\"#222222\">{}</text>\n",
          findings_y + static_cast<int>(j + 1) * SvgPlan::line_h, xml_escape(finding_lines[j]));
  }
  out += "</g>\n";
}

}  // namespace

std::string render_svg(const DeviceModel& m) {
  SvgPlan plan;
  plan_lanes(m, plan);
  plan_entries(m, plan);
  plan_hb_edges(m, plan);
  plan_findings(m, plan);
  plan_size(m, plan);
  std::string out;
  draw_header(out, m, plan);
  draw_lanes(out, m, plan);
  draw_hb_edges(out, plan);
  draw_entries(out, m, plan);
  draw_missing_edges(out, m, plan);
  draw_legend(out, plan);
  draw_findings(out, plan);
  out += "</svg>\n";
  return out;
}

// ---------------------------------------------------------------- Perfetto

std::string render_perfetto(const DeviceModel& m) {
  constexpr std::uint64_t kStep = 10;  // microseconds between execution slots
  constexpr std::uint64_t kDur = 8;
  const std::vector<OpRef> ops = all_ops(m);

  // Execution slot of every op: completion order; never-run ops after those,
  // in enqueue (log) order.
  std::map<OpRef, std::uint64_t> slot;
  std::uint64_t next = 0;
  for (const OpRef r : ops)
    if (const auto c = m.completion_index(r)) {
      slot[r] = *c;
      next = std::max(next, *c + 1);
    }
  for (const LogEntry& e : m.log())
    if (e.kind == LogEntry::Kind::Enqueue && !slot.count(e.op)) slot[e.op] = next++;
  for (const OpRef r : ops)
    if (!slot.count(r)) slot[r] = next++;

  // One event per line, so that a diff of two traces reads event by event.
  std::string out = "{\"traceEvents\":[";
  std::string sep = "\n";
  const auto event = [&](const Json& e) {
    out += sep + e.dump(-1, ' ', false, Json::error_handler_t::replace);
    sep = ",\n";
  };
  event({{"ph", "M"}, {"pid", 1}, {"tid", 0}, {"name", "process_name"}, {"args", {{"name", "streamcheck sim"}}}});
  for (std::uint32_t s = 0; s < m.stream_count(); ++s) {
    const std::uint32_t tid = s + 1;
    event({{"ph", "M"},
           {"pid", 1},
           {"tid", tid},
           {"name", "thread_name"},
           {"args", {{"name", m.stream_name(sim::StreamIndex{s})}}}});
    event({{"ph", "M"}, {"pid", 1}, {"tid", tid}, {"name", "thread_sort_index"}, {"args", {{"sort_index", tid}}}});
  }
  for (const OpRef r : ops) {
    const std::string kind(sim::to_string(m.op_kind(r)));
    const auto c = m.completion_index(r);
    Json args = {{"op", ref_name(m, r)}, {"kind", kind}, {"label", m.op_label(r)}, {"executed", c.has_value()}};
    if (c) args["completion_index"] = *c;
    event({{"ph", "X"},
           {"pid", 1},
           {"tid", r.stream.value + 1},
           {"ts", slot.at(r) * kStep},
           {"dur", kDur},
           {"cat", kind},
           {"name", kind + " " + m.op_label(r)},
           {"args", std::move(args)}});
  }
  for (const Finding& f : m.findings()) {
    const OpRef at = f.second ? *f.second : f.first;
    Json args = {{"finding", sim::format(m, f)}, {"first", ref_name(m, f.first)}};
    if (f.second) args["second"] = ref_name(m, *f.second);
    event({{"ph", "i"},
           {"s", "t"},
           {"pid", 1},
           {"tid", at.stream.value + 1},
           {"ts", slot.at(at) * kStep},
           {"cat", "finding"},
           {"name", finding_label(f)},
           {"args", std::move(args)}});
  }
  out += "\n]}\n";
  return out;
}

}  // namespace streamcheck::tools
