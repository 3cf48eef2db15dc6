// Maps keyed by a trace's names, looked up by std::string_view without
// making a std::string: the parser and the interpreter look names up for
// every statement of a trace (millions in a large one), and an ordered map
// compared the name's bytes at every level of its tree
// (docs/PERFORMANCE.md, "Parsing"). Only for maps nothing iterates in an
// order a user sees: reports list names sorted, from their own maps.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace streamcheck::tools {

struct NameHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view name) const noexcept { return std::hash<std::string_view>{}(name); }
};

template <class Value>
using NameMap = std::unordered_map<std::string, Value, NameHash, std::equal_to<>>;
using NameSet = std::unordered_set<std::string, NameHash, std::equal_to<>>;

}  // namespace streamcheck::tools
