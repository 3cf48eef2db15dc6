// How a message shows bytes that came from the user (a trace token, a file
// path, a command-line argument): the one helper every message that echoes
// input goes through, so that a NUL or a control byte can neither cut nor
// garble the message, and a 100 kB token is not echoed whole.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace streamcheck::tools {

/// Input longer than this many bytes is shown cut (see shown_input).
inline constexpr std::size_t kShownInputBytes = 64;
/// A file path is shown whole up to this many bytes (PATH_MAX on Linux): a
/// cut path could not be opened from the message.
inline constexpr std::size_t kShownPathBytes = 4096;

/// `input` as a message may show it: printable ASCII and well-formed UTF-8
/// as they are, a backslash as \\, every other byte (NUL, control bytes, DEL,
/// bytes of malformed UTF-8) as \xNN; input longer than `max_bytes` bytes is
/// cut to its first `max_bytes` bytes (never inside a UTF-8 sequence)
/// followed by "... (N bytes)".
std::string shown_input(std::string_view input, std::size_t max_bytes = kShownInputBytes);

}  // namespace streamcheck::tools
