// Renderers of one simulated run (SPEC §7, `streamcheck render`): the same
// run -- its streams, ops, API log and findings -- as plain text, Graphviz
// DOT, an SVG swimlane diagram and a Chrome / Perfetto trace.
//
// Every renderer is a pure function of its input: no clock, no pointers, no
// unordered containers, so the same run always gives byte-identical output
// (and so do two runs of the same program under the same schedule).
//
// Names are the user's: streams and events as the trace declares them (the
// model keeps them: DeviceModel::stream_name / event_name), the resource's
// own events and pool ops by the block they serve ("A ready", "produce done",
// "allocate A"), buffers by name in the findings' words and in every op's
// trace statement. A lane is drawn only for a stream or host thread that has
// something drawn on it; the hidden stream of plain `buffer` / `free`
// (cudaMalloc / cudaFree) is labelled as such.
//
//   render_text      per stream its ops in enqueue order ("s1#0 kernel \"K1\"",
//                    with the op's position in the execution order and its
//                    trace line), then the host actions from the log (record /
//                    wait / synchronize / query, "@N" = API call N), then every
//                    finding, numbered as `render --finding N` takes them.
//   render_dot       sim::HbGraph(model).write_dot (clusters named by stream),
//                    plus: the racing ops of every finding filled red, and the
//                    missing edge drawn dashed red from finding.first to
//                    finding.second, labelled "missing" ("freed before use"
//                    for a definite use after free).
//   render_svg       swimlanes: one lane per stream, then one per host thread
//                    that synchronized or queried ("host", or "host N" when
//                    several). One column per API call drawn (in program order,
//                    so the enqueue order across lanes is visible), folded into
//                    bands of at most SvgLimits::kBandColumns columns; ops are
//                    boxes labelled kind + label, record / wait marks diamonds.
//                    Blue arrows: event edges (record -> wait, R3); grey dotted
//                    arrows: host synchronization (R4). The ops of each finding
//                    get a red outline and the missing edge a dashed red arrow
//                    labelled with the finding kind; the findings are listed
//                    under the lanes. Labels never overlap: each is cut (with
//                    "…") to the room it has, the full text in a <title>
//                    tooltip, and the missing edges' labels are staggered until
//                    they hit no other label. Self-contained SVG 1.1.
//   render_perfetto  {"traceEvents":[...]} for ui.perfetto.dev or
//                    chrome://tracing: one thread per stream with ops drawn
//                    (tid = stream + 1, named by a thread_name metadata event),
//                    each op a complete event ("ph":"X") at ts = 10 x its
//                    position in the execution order (DeviceModel::
//                    completion_index; ops that never ran follow the executed
//                    ones), dur 8; each record / wait an instant event
//                    ("cat":"record" / "wait", named by the event) at the end
//                    of the op before it on its stream; each finding an
//                    instant event ("cat":"finding") on the lane of its second
//                    op (the allocation's lane for a leak) with the finding in
//                    words.
//
// What is drawn (RenderOptions): everything, or only the ops that explain one
// finding (`--finding N`: its two ops, every HB path between them, the
// synchronization the program does between them on their streams, their
// neighbours on their streams, and the missing edge), or a window of API calls
// (`--window FROM:TO`). An SVG of a long run is a window of at most
// SvgLimits::kMaxColumns calls (the first ones unless told otherwise), which
// the picture's header says, so that any run gives a picture rsvg-convert can
// rasterize.
//
// Viewing the SVG as a PNG: `rsvg-convert -o run.png run.svg` (Debian
// librsvg2-bin); tests/tools/test_render_png.cpp does exactly that with
// `streamcheck render --format svg` and checks the lanes and the racing pair
// pixel by pixel. Headless Chromium also opens it:
//   chromium --headless --no-sandbox --disable-gpu --screenshot=run.png --window-size=1200,600 run.svg
// and the DOT: `dot -Tpng -o run.png run.dot` (package graphviz).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "backend_sim/device_model.h"
#include "tools/report.h"
#include "tools/trace.h"

namespace streamcheck::tools {

/// One finding as a picture draws it: its ops and its words.
struct RenderFinding {
  sim::FindingKind kind = sim::FindingKind::DataRace;
  bool definite = false;
  sim::OpRef first;
  std::optional<sim::OpRef> second;  // nullopt for a leak
  std::string label;                 // "data race", "use after free (definite)"
  std::vector<std::string> lines;    // the finding in words: what, then the order and the fix
};

/// What a renderer draws: one run of the simulator and its findings.
struct RenderInput {
  const sim::DeviceModel* model = nullptr;
  /// The run's record when it ran a trace (trace lines of the ops); else null.
  const Execution* run = nullptr;
  std::vector<RenderFinding> findings;
  /// The interpreter's hidden stream of plain `buffer` / `free`, if any.
  std::optional<sim::StreamIndex> plain_alloc_stream;
};

/// A run of no trace (the built-in protocol): findings in sim::format's words.
RenderInput render_input(const sim::DeviceModel& model);
/// A run of a trace and the report of that run: findings in the report's order
/// and words (trace lines, buffer names); `render --finding N` numbers them so.
RenderInput render_input(const Execution& run, const Report& report);

/// Which API calls to draw (log entries, 0-based, `to` exclusive).
struct CallWindow {
  std::size_t from = 0;
  std::size_t to = 0;
};

struct RenderOptions {
  /// 1-based: draw only what explains this finding. Throws std::out_of_range
  /// (with what to do) when the run has fewer findings.
  std::optional<std::size_t> finding;
  /// Draw only these API calls (clamped to the log).
  std::optional<CallWindow> window;
};

/// What an SVG draws at most: larger runs are windowed, bands folded.
struct SvgLimits {
  static constexpr std::size_t kMaxColumns = 240;
  static constexpr std::size_t kBandColumns = 40;
};

/// Parses "FROM:TO" (`--window`); throws std::invalid_argument saying what is
/// wrong (CLI11 puts the option's name before it).
CallWindow parse_call_window(const std::string& text);

std::string render_text(const RenderInput& input, const RenderOptions& options = {});
std::string render_dot(const RenderInput& input, const RenderOptions& options = {});
std::string render_svg(const RenderInput& input, const RenderOptions& options = {});
std::string render_perfetto(const RenderInput& input, const RenderOptions& options = {});

// A run of no trace, findings in sim::format's words.
inline std::string render_text(const sim::DeviceModel& m) { return render_text(render_input(m)); }
inline std::string render_dot(const sim::DeviceModel& m) { return render_dot(render_input(m)); }
inline std::string render_svg(const sim::DeviceModel& m) { return render_svg(render_input(m)); }
inline std::string render_perfetto(const sim::DeviceModel& m) { return render_perfetto(render_input(m)); }

}  // namespace streamcheck::tools
