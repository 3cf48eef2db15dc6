#include "tools/input_text.h"

#include <fmt/format.h>

namespace streamcheck::tools {

namespace {

/// The length of the well-formed UTF-8 sequence (2..4 bytes) that starts
/// `text`, or 0 if it does not start with one (RFC 3629: no overlong forms,
/// no surrogates, nothing above U+10FFFF).
std::size_t utf8_sequence_length(std::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const auto continuation = [&](std::size_t i) { return i < text.size() && (byte(i) & 0xC0) == 0x80; };
  const unsigned char lead = byte(0);
  if (lead >= 0xC2 && lead <= 0xDF) return continuation(1) ? 2 : 0;
  if (lead >= 0xE0 && lead <= 0xEF) {
    if (!continuation(1) || !continuation(2)) return 0;
    if (lead == 0xE0 && byte(1) < 0xA0) return 0;  // overlong
    if (lead == 0xED && byte(1) > 0x9F) return 0;  // surrogate
    return 3;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    if (!continuation(1) || !continuation(2) || !continuation(3)) return 0;
    if (lead == 0xF0 && byte(1) < 0x90) return 0;  // overlong
    if (lead == 0xF4 && byte(1) > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

std::string shown_input(std::string_view input, std::size_t max_bytes) {
  std::string out;
  std::size_t i = 0;
  while (i < input.size() && i < max_bytes) {
    const auto c = static_cast<unsigned char>(input[i]);
    if (c == '\\') {
      out += "\\\\";
      ++i;
    } else if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
      ++i;
    } else if (const std::size_t n = c >= 0x80 ? utf8_sequence_length(input.substr(i)) : 0;
               n > 0 && i + n <= max_bytes) {
      out.append(input.substr(i, n));
      i += n;
    } else if (n > 0) {
      break;  // a sequence that would cross the cut is cut whole
    } else {
      out += fmt::format("\\x{:02X}", c);
      ++i;
    }
  }
  if (i < input.size()) out += fmt::format("... ({} bytes)", input.size());
  return out;
}

}  // namespace streamcheck::tools
