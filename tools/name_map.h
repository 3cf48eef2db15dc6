// Maps keyed by a trace's names, looked up by std::string_view without
// making a std::string: the parser and the interpreter look names up for
// every statement of a trace (millions in a large one), and an ordered map
// compared the name's bytes at every level of its tree
// (docs/PERFORMANCE.md, "Parsing"). Only for maps nothing iterates in an
// order a user sees: reports list names sorted, from their own maps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "backend_sim/short_text.h"

namespace streamcheck::tools {

// Hashed and compared inline (backend_sim/short_text.h says why).
struct NameHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view name) const noexcept {
    return static_cast<std::size_t>(sim::short_text_hash(name));
  }
};

struct NameEqual {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const noexcept { return sim::same_short_text(a, b); }
};

template <class Value>
using NameMap = std::unordered_map<std::string, Value, NameHash, NameEqual>;

/// A map of names for the lookups a parser makes for every word that names
/// something (millions in a large trace): open addressing over a
/// power-of-two table, so that a lookup is a hash, a mask and one or two
/// probes. std::unordered_map divided by a prime for every lookup and
/// walked a node list: the largest single cost of parsing a statement
/// (docs/PERFORMANCE.md, "Streamed checks"). Entries are never erased; a
/// pointer find() returns is valid until the next insert of a new name
/// (the entries are one vector, one index from a slot).
template <class Value>
class FlatNameMap {
 public:
  struct Entry {
    std::string key;
    Value value;
  };
  Entry* find(std::string_view key) {
    if (slots_.empty()) return nullptr;
    const std::uint64_t h = NameHash{}(key);
    for (std::size_t i = h & mask();; i = (i + 1) & mask()) {
      const std::uint64_t slot = slots_[i];
      if (slot == 0) return nullptr;
      if ((slot >> 32) == (h >> 32)) {
        Entry& e = entries_[(slot & 0xffffffffu) - 1];
        if (NameEqual{}(e.key, key)) return &e;
      }
    }
  }
  const Entry* find(std::string_view key) const { return const_cast<FlatNameMap&>(*this).find(key); }
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  Entry& insert_or_assign(std::string_view key, Value value) {
    if (Entry* e = find(key)) {
      e->value = std::move(value);
      return *e;
    }
    if (2 * (entries_.size() + 1) > slots_.size()) grow();
    Entry& e = entries_.emplace_back(Entry{std::string(key), std::move(value)});
    place(NameHash{}(e.key), entries_.size());
    return e;
  }
  std::size_t size() const { return entries_.size(); }

 private:
  std::size_t mask() const { return slots_.size() - 1; }
  /// Puts entry `index` (from 1) in the first free slot from its hash's.
  void place(std::uint64_t h, std::size_t index) {
    std::size_t i = h & mask();
    while (slots_[i] != 0) i = (i + 1) & mask();
    slots_[i] = (h & ~std::uint64_t{0xffffffffu}) | index;
  }
  void grow() {
    slots_.assign(slots_.empty() ? 64 : 2 * slots_.size(), 0);
    for (std::size_t k = 0; k < entries_.size(); ++k) place(NameHash{}(entries_[k].key), k + 1);
  }
  std::deque<Entry> entries_;
  /// The hash's high 32 bits, then the entry's index + 1; 0: free.
  std::vector<std::uint64_t> slots_;
};
using NameSet = std::unordered_set<std::string, NameHash, NameEqual>;

}  // namespace streamcheck::tools
