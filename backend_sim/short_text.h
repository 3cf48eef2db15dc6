// Hashing and comparing the short texts a trace names things by (kernel
// names, buffer and stream names): a few to a few dozen bytes, looked up
// for every op or statement. Inline, byte by byte: std::hash made a call
// into the library for each (docs/PERFORMANCE.md, "fewer lookups"), and
// std::string's == called memcmp (with it the checker alone was 1.03-1.05x
// slower, and names compared so were about a twentieth of a traced check's
// time: docs/PERFORMANCE.md, "Names compared inline"). One definition for
// the op-label table (backend_sim/label_table.h) and the trace's name maps
// (tools/name_map.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace streamcheck::sim {

/// FNV-1a of `text`.
inline std::uint64_t short_text_hash(std::string_view text) noexcept {
  std::uint64_t h = 14695981039346656037ULL;
  for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

/// Whether `a` and `b` hold the same bytes.
inline bool same_short_text(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

}  // namespace streamcheck::sim
