// Maps keyed by a trace's names, looked up by std::string_view without
// making a std::string: the parser and the interpreter look names up for
// every statement of a trace (millions in a large one), and an ordered map
// compared the name's bytes at every level of its tree
// (docs/PERFORMANCE.md, "Parsing"). Only for maps nothing iterates in an
// order a user sees: reports list names sorted, from their own maps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace streamcheck::tools {

struct NameHash {
  using is_transparent = void;
  // FNV-1a, inline: a trace's names are a few bytes, where std::hash made
  // a call into the library for each (docs/PERFORMANCE.md, "fewer lookups").
  std::size_t operator()(std::string_view name) const noexcept {
    std::uint64_t h = 14695981039346656037ULL;
    for (const char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    return static_cast<std::size_t>(h);
  }
};

struct NameEqual {
  using is_transparent = void;
  // Compared inline, byte by byte: std::equal_to's == called memcmp for
  // names of a few bytes, about a twentieth of a traced check's time
  // (docs/PERFORMANCE.md, "Names compared inline").
  bool operator()(std::string_view a, std::string_view b) const noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i]) return false;
    return true;
  }
};

template <class Value>
using NameMap = std::unordered_map<std::string, Value, NameHash, NameEqual>;
using NameSet = std::unordered_set<std::string, NameHash, NameEqual>;

}  // namespace streamcheck::tools
