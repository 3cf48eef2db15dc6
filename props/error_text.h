// What an error must say to the person reading it: its kind in words, no
// other kind's words, and its figures (the generation of a use after free,
// the request and the remainder of an out-of-budget refusal, the message of
// a driver or contract error). The harness checks every error a client is
// given; a property checks every kind with arbitrary figures. The phrases
// are written here, not taken from model/, which is under test.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "model/types.h"

namespace streamcheck::props {

/// Why `e.to_string()` misreads `e`, or nullopt when it says what it is.
inline std::optional<std::string> misreads(const ResourceError& e) {
  static constexpr std::pair<ErrorKind, std::string_view> kPhrases[] = {
      {ErrorKind::OutOfBudget, "out of budget"},
      {ErrorKind::Driver, "driver error"},
      {ErrorKind::StreamMisuse, "stream-ordered contract violated"},
      {ErrorKind::UseAfterFree, "use after free"},
      {ErrorKind::OutOfBounds, "out-of-bounds"}};
  const std::string text = e.to_string();
  auto says = [&](std::string_view s) { return text.find(s) != std::string::npos; };
  for (const auto& [kind, phrase] : kPhrases)
    if (says(phrase) != (kind == e.kind))
      return "the error reads \"" + text + "\": " + (kind == e.kind ? "it does not say \"" : "it says \"") +
             std::string(phrase) + "\"";
  const bool figures = e.kind == ErrorKind::OutOfBudget ? says(std::to_string(e.requested) + " bytes") &&
                                                              says(std::to_string(e.remaining) + " bytes")
                       : e.kind == ErrorKind::UseAfterFree || e.kind == ErrorKind::OutOfBounds
                           ? says("generation " + std::to_string(e.generation.value))
                           : says(e.message);
  if (!figures) return "the error reads \"" + text + "\": its figures or message are missing";
  return std::nullopt;
}

}  // namespace streamcheck::props
