// The names a parsed trace's statements hold (streams, events, buffers,
// threads, mutexes, channels, graphs): each interned once in the trace's
// NameTable, and a statement's field one pointer to it. A std::string a
// field made a launch 112 bytes and every statement 144 (the largest kind
// decides a std::variant's size), the largest record a parsed trace keeps
// (docs/PERFORMANCE.md, "Names interned").
#pragma once

#include <fmt/format.h>

#include <compare>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>

#include "tools/name_map.h"

namespace streamcheck::tools {

/// A name interned in a NameTable: 8 bytes, read as the std::string it
/// points to (implicitly, so code that reads a statement's names as
/// strings reads these unchanged). Two Names are equal when their texts
/// are. Valid while the table lives (a Trace shares its table with its
/// copies). A default-constructed Name is the empty name.
class Name {
 public:
  Name() = default;
  const std::string& str() const noexcept { return entry_ ? entry_->text : empty_text(); }
  operator const std::string&() const noexcept { return str(); }  // NOLINT: read as a string on purpose
  operator std::string_view() const noexcept { return str(); }    // NOLINT
  /// Its number in its table: 0, 1, ... in the order of first interning,
  /// so that a map of a trace's names can be a vector indexed by it.
  /// kNoId for the empty name.
  std::uint32_t id() const noexcept { return entry_ ? entry_->id : kNoId; }
  static constexpr std::uint32_t kNoId = ~std::uint32_t{0};
  bool empty() const noexcept { return str().empty(); }
  std::size_t size() const noexcept { return str().size(); }
  const char* data() const noexcept { return str().data(); }

  friend bool operator==(const Name& a, const Name& b) noexcept { return a.entry_ == b.entry_ || a.str() == b.str(); }
  friend bool operator==(const Name& a, std::string_view b) noexcept { return a.str() == b; }
  friend std::strong_ordering operator<=>(const Name& a, const Name& b) noexcept { return a.str() <=> b.str(); }
  friend std::strong_ordering operator<=>(const Name& a, std::string_view b) noexcept {
    return std::string_view(a.str()) <=> b;
  }

 private:
  friend class NameTable;
  struct Entry {
    std::string text;
    std::uint32_t id;
  };
  explicit Name(const Entry* entry) : entry_(entry) {}
  static const std::string& empty_text() noexcept {
    static const std::string empty;
    return empty;
  }
  const Entry* entry_ = nullptr;
};
static_assert(sizeof(Name) == 8, "a Name is held by every statement field that names something: keep it a pointer");

/// Every name of one trace, once. Not thread-safe: only the parser interns.
class NameTable {
 public:
  NameTable() = default;
  NameTable(const NameTable&) = delete;  // Names point into it
  NameTable& operator=(const NameTable&) = delete;
  /// The Name of `text`, added if new.
  Name intern(std::string_view text) {
    if (auto it = index_.find(text); it != index_.end()) return Name(it->second);
    const Name::Entry& e =
        entries_.emplace_back(Name::Entry{std::string(text), static_cast<std::uint32_t>(entries_.size())});
    index_.emplace(std::string_view(e.text), &e);
    return Name(&e);
  }
  /// How many names it holds: every id is below it.
  std::size_t size() const noexcept { return entries_.size(); }

 private:
  std::deque<Name::Entry> entries_;  // never moved: Names and index_ point into it
  std::unordered_map<std::string_view, const Name::Entry*, NameHash, NameEqual> index_;
};

}  // namespace streamcheck::tools

template <>
struct fmt::formatter<streamcheck::tools::Name> : fmt::formatter<std::string_view> {
  template <class Context>
  auto format(const streamcheck::tools::Name& name, Context& ctx) const {
    return fmt::formatter<std::string_view>::format(std::string_view(name.str()), ctx);
  }
};
