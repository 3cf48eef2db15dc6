// Renderers of one simulated run (SPEC §7, `streamcheck render`): the same
// DeviceModel -- its streams, ops, API log and findings -- as plain text,
// Graphviz DOT, an SVG swimlane diagram and a Chrome / Perfetto trace.
//
// Every renderer is a pure function of the model: no clock, no pointers, no
// unordered containers, so the same model always gives byte-identical output
// (and so do two models built by the same program under the same schedule).
//
//   render_text      per stream its ops in enqueue order ("s1#0 kernel \"K1\"",
//                    with the op's position in the execution order), then the
//                    host actions from the log (record / wait / synchronize /
//                    query), then every finding as sim::format (backend_sim/explain.h) words it.
//   render_dot       sim::HbGraph(model).write_dot, plus: the racing ops of
//                    every finding filled red, and the missing edge drawn
//                    dashed red from finding.first to finding.second, labelled
//                    "missing" ("freed before use" for a definite use after free).
//   render_svg       swimlanes: one lane per stream, then one per host thread
//                    that synchronized or queried ("host", or "host N" when
//                    several). One column per API call (x = position in the
//                    log, so the enqueue order across lanes is visible); ops are
//                    boxes labelled kind + label, record / wait marks diamonds.
//                    Blue arrows: event edges (record -> wait, R3); grey dotted
//                    arrows: host synchronization (R4). The ops of each finding
//                    get a red outline and the missing edge a dashed red arrow
//                    labelled with the finding kind; the formatted findings are
//                    listed under the lanes. Self-contained SVG 1.1.
//   render_perfetto  {"traceEvents":[...]} for ui.perfetto.dev or
//                    chrome://tracing: one thread per stream (tid = stream + 1,
//                    named by a thread_name metadata event), each op a complete
//                    event ("ph":"X") at ts = 10 x its position in the execution
//                    order (DeviceModel::completion_index; ops that never ran
//                    follow the executed ones), dur 8; each finding an instant
//                    event ("ph":"i") on the lane of its second op (the
//                    allocation's lane for a leak) with the formatted finding.
//
// Viewing the SVG as a PNG: `rsvg-convert -o run.png run.svg` (Debian
// librsvg2-bin); tests/tools/test_render_png.cpp does exactly that with
// `streamcheck render --format svg` and checks the lanes and the racing pair
// pixel by pixel. Headless Chromium also opens it:
//   chromium --headless --no-sandbox --disable-gpu --screenshot=run.png --window-size=1200,600 run.svg
// and the DOT: `dot -Tpng -o run.png run.dot` (package graphviz).
#pragma once

#include <string>

#include "backend_sim/device_model.h"

namespace streamcheck::tools {

std::string render_text(const sim::DeviceModel& model);
std::string render_dot(const sim::DeviceModel& model);
std::string render_svg(const sim::DeviceModel& model);
std::string render_perfetto(const sim::DeviceModel& model);

}  // namespace streamcheck::tools
