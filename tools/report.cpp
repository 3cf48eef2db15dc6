#include "tools/report.h"

#include <fmt/format.h>

#include <iterator>
#include <nlohmann/json.hpp>

#include "tools/explain.h"

namespace streamcheck::tools {

Verdict Report::verdict() const {
  bool errors = !notes.empty() || (gpu && gpu->mismatching_words > 0);
  for (const auto& f : findings) errors = errors || f.severity == Severity::Error;
  return errors ? Verdict::Findings : Verdict::Clean;
}

namespace {

std::string plural(std::size_t n, const char* noun) { return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s"); }

}  // namespace

std::string report_text(const Report& r) {
  std::string out;
  auto line = std::back_inserter(out);
  const Coverage& c = r.coverage;
  fmt::format_to(line, "streamcheck: {}: {} ({}{}, seed {}), pool {}\n", r.file, plural(c.explored, "schedule"),
                 to_string(c.how), c.exhaustive ? ", exhaustive" : "", c.seed, r.policy.describe());
  std::size_t errors = 0, warnings = 0;
  for (const auto& f : r.findings) (f.severity == Severity::Warning ? warnings : errors)++;
  for (const auto& f : r.findings) {
    fmt::format_to(line, "\n{}{}  [in {} of {} schedules]\n", f.severity == Severity::Warning ? "warning: " : "",
                   finding_label(f), f.schedules, c.explored);
    fmt::format_to(line, "  first:    {}\n", describe(f.first));
    if (f.second) fmt::format_to(line, "  second:   {}\n", describe(*f.second));
    fmt::format_to(line, "  bytes:    {}\n", describe(f.bytes));
    fmt::format_to(line, "  order:    {}\n", describe_order(f));
    fmt::format_to(line, "  fix:      {}\n", describe_fix(f));
    fmt::format_to(line, "  schedule: {}  (streamcheck replay {} --schedule {})\n", f.schedule, r.file, f.schedule);
  }
  for (const auto& n : r.notes) fmt::format_to(line, "\nerror: {}\n", describe(n));
  const std::string warned = warnings ? plural(warnings, "warning") : "";
  if (errors == 0 && r.notes.empty())
    fmt::format_to(line, "\nverdict: clean{}\n", warned.empty() ? "" : " (" + warned + ")");
  else
    fmt::format_to(line, "\nverdict: {}{}\n", plural(errors + r.notes.size(), "finding"),
                   warned.empty() ? "" : ", " + warned);
  if (const auto& g = r.gpu) {
    fmt::format_to(
        line, "GPU replay on {}: {} runs (held back: {}), runs with mismatching reads: {}, mismatching words: {}\n",
        g->device, g->runs, held_back(r), g->runs_with_mismatches, g->mismatching_words);
    for (const auto& n : g->notes) fmt::format_to(line, "  on the GPU: {}\n", n);
  }
  return out;
}

namespace {

nlohmann::ordered_json op_json(const ReportOp& op) {
  return {{"op", describe(op)}, {"line", op.origin ? op.origin->line : 0}};
}

/// One range: its addresses, and the buffer with the offsets into it when it lies in one.
nlohmann::ordered_json bytes_json(const ReportBytes& b) {
  nlohmann::ordered_json o;
  if (b.in_buffer) {
    o["buffer"] = b.in_buffer->buffer;
    o["offsets"] = {b.in_buffer->lo, b.in_buffer->hi};
  }
  o["address"] = {b.address.lo, b.address.hi};
  return o;
}

}  // namespace

std::string report_json(const Report& r) {
  nlohmann::ordered_json j;
  j["tool"] = "streamcheck";
  j["schema"] = 1;
  j["file"] = r.file;
  j["strategy"] = to_string(r.coverage.how);
  j["seed"] = r.coverage.seed;
  j["schedules"] = r.coverage.explored;
  j["exhaustive"] = r.coverage.exhaustive;
  j["policy"] = r.policy.describe();
  j["verdict"] = r.verdict() == Verdict::Clean ? "clean" : "findings";
  j["findings"] = nlohmann::ordered_json::array();
  for (const auto& f : r.findings) {
    nlohmann::ordered_json o;
    o["kind"] = sim::to_string(f.kind);
    o["definite"] = f.definite;
    o["severity"] = f.severity == Severity::Warning ? "warning" : "error";
    o["first"] = op_json(f.first);
    if (f.second) o["second"] = op_json(*f.second);
    o["bytes"] = describe(f.bytes);
    o["ranges"] = nlohmann::ordered_json::array();
    for (const auto& b : f.bytes) o["ranges"].push_back(bytes_json(b));
    o["order"] = describe_order(f);
    o["fix"] = describe_fix(f);
    o["schedule"] = f.schedule;
    o["schedules"] = f.schedules;
    j["findings"].push_back(std::move(o));
  }
  j["notes"] = nlohmann::ordered_json::array();
  for (const auto& n : r.notes) j["notes"].push_back(describe(n));
  if (const auto& g = r.gpu)
    j["gpu"] = {{"runs", g->runs},
                {"runs_with_mismatches", g->runs_with_mismatches},
                {"mismatching_words", g->mismatching_words}};
  // Invalid UTF-8 in a trace's text becomes U+FFFD instead of failing the report.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace streamcheck::tools
