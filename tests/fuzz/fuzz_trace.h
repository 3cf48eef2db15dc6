// One fuzz input through the trace pipeline, as `streamcheck check` and
// `explore --faults on` would run it (SPEC §9). The contract under test: any
// text either gives a verdict or a TraceError (exit 2 with FILE:LINE:COL, or
// FILE: for an input without a statement);
// every other exception is a bug in streamcheck (exit 3), and it escapes
// from here so that the fuzzer, or the corpus test, reports it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "tools/trace.h"
#include "tools/trace_check.h"

namespace streamcheck::fuzz {

/// Inputs longer than this are ignored: long traces find nothing new and
/// slow the fuzzer down.
inline constexpr std::size_t kMaxInput = 4096;

inline void run_trace_input(const std::uint8_t* data, std::size_t size) {
  if (size > kMaxInput) return;
  const std::string text(reinterpret_cast<const char*>(data), size);
  tools::Trace trace;
  try {
    trace = tools::parse_trace(text, "fuzz.trace");
  } catch (const tools::TraceError& e) {
    // A parse error must point inside the input; only an input without a
    // statement is an error of the whole input.
    if (e.kind() == tools::TraceError::Kind::NoStatements) return;
    if (!e.has_position() || e.line() < 1 || e.col() < 1)
      throw std::logic_error(std::string("TraceError without a position: ") + e.what());
    return;
  }
  try {
    tools::TraceCheckOptions one;
    (void)tools::check_trace(trace, one);
    tools::TraceCheckOptions explore;
    explore.max_schedules = 3;
    explore.faults = true;
    (void)tools::explore_trace(trace, explore);
  } catch (const tools::TraceError&) {
    // Errors found while running (a use of a destroyed event, say) are
    // input errors too.
  }
}

}  // namespace streamcheck::fuzz
