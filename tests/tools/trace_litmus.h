// Helpers of the trace-language litmus tests (lifetimes, sub-allocators,
// branches): explore a trace text exhaustively and count its findings.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "tools/trace.h"
#include "tools/trace_check.h"

namespace streamcheck::tools {

/// `explore --strategy dfs` of `text`, which must finish (exhaustive).
inline Report explore_text(const std::string& text) {
  TraceCheckOptions o;
  o.strategy = Strategy::Dfs;
  o.max_schedules = 10000;
  Report r = explore_trace(parse_trace(text, "t.trace"), o);
  EXPECT_TRUE(r.coverage.exhaustive) << text;
  return r;
}

inline std::size_t count_kind(const Report& r, sim::FindingKind kind) {
  return static_cast<std::size_t>(
      std::count_if(r.findings.begin(), r.findings.end(), [&](const ReportFinding& f) { return f.kind == kind; }));
}

/// The findings that are errors (all but leaks, which are warnings).
inline std::size_t errors(const Report& r) {
  return static_cast<std::size_t>(std::count_if(r.findings.begin(), r.findings.end(),
                                                [](const ReportFinding& f) { return f.severity == Severity::Error; }));
}

/// The first finding of `kind`; throws when there is none.
inline const ReportFinding& first_of(const Report& r, sim::FindingKind kind) {
  const auto it =
      std::find_if(r.findings.begin(), r.findings.end(), [&](const ReportFinding& f) { return f.kind == kind; });
  if (it == r.findings.end()) throw std::logic_error("no finding of that kind");
  return *it;
}

}  // namespace streamcheck::tools
