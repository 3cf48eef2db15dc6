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
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

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
  /// The Name of `text` when it was interned; nullopt otherwise.
  std::optional<Name> find(std::string_view text) const {
    const auto it = index_.find(text);
    if (it == index_.end()) return std::nullopt;
    return Name(it->second);
  }
  /// How many names it holds: every id is below it.
  std::size_t size() const noexcept { return entries_.size(); }

 private:
  std::deque<Name::Entry> entries_;  // never moved: Names and index_ point into it
  std::unordered_map<std::string_view, const Name::Entry*, NameHash, NameEqual> index_;
};

/// A map keyed by the names of one trace, for the lookups made for every
/// statement (the interpreter's streams, events and buffers): a slot per
/// Name::id, where a NameMap hashed the name's text at each lookup
/// (docs/PERFORMANCE.md, "Streamed checks"). A key given as text is looked
/// up in the trace's table first: every name a trace uses is interned there
/// (a text it never interned is in no such map). A value's address is valid
/// until a value for a new name is inserted (the slots may move then).
template <class T>
class NameIndexed {
 public:
  explicit NameIndexed(const NameTable& names) : names_(&names) {}
  T* find(const Name& name) {
    const std::uint32_t id = name.id();
    return id < slots_.size() && slots_[id] ? &*slots_[id] : nullptr;
  }
  const T* find(const Name& name) const { return const_cast<NameIndexed&>(*this).find(name); }
  T* find(std::string_view text) {
    const auto name = names_->find(text);
    return name ? find(*name) : nullptr;
  }
  const T* find(std::string_view text) const { return const_cast<NameIndexed&>(*this).find(text); }
  template <class Key>
  bool contains(const Key& key) const {
    return find(key) != nullptr;
  }
  /// std::out_of_range when the name has no value.
  template <class Key>
  T& at(const Key& key) {
    if (T* value = find(key)) return *value;
    throw std::out_of_range(fmt::format("no value for the name '{}'", std::string_view(key)));
  }
  template <class Key>
  const T& at(const Key& key) const {
    return const_cast<NameIndexed&>(*this).at(key);
  }
  T& insert_or_assign(const Name& name, T value) {
    const std::uint32_t id = name.id();
    if (id == Name::kNoId) throw std::logic_error("NameIndexed: a value for the empty name");
    if (id >= slots_.size()) slots_.resize(id + 1);
    return slots_[id].emplace(std::move(value));
  }
  T& insert_or_assign(std::string_view text, T value) { return insert_or_assign(interned(text), std::move(value)); }
  template <class Key>
  void erase(const Key& key) {
    if (find(key) != nullptr) slots_[name_of(key).id()].reset();
  }

 private:
  Name interned(std::string_view text) const {
    const auto name = names_->find(text);
    if (!name) throw std::logic_error(fmt::format("NameIndexed: '{}' is no name of the trace", text));
    return *name;
  }
  static const Name& name_of(const Name& name) { return name; }
  Name name_of(std::string_view text) const { return interned(text); }
  const NameTable* names_;
  std::vector<std::optional<T>> slots_;
};

}  // namespace streamcheck::tools

template <>
struct fmt::formatter<streamcheck::tools::Name> : fmt::formatter<std::string_view> {
  template <class Context>
  auto format(const streamcheck::tools::Name& name, Context& ctx) const {
    return fmt::formatter<std::string_view>::format(std::string_view(name.str()), ctx);
  }
};
