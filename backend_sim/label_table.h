// The op labels of a run (kernel names, "record e", ...), each kept once and
// named by its position. A label was kept twice: as an element of a vector
// and as the key of the map that finds its position. Here the map's keys view
// into the stored labels, which never move (ChunkedDeque), and a copy of the
// table builds its own map over its own labels.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "backend_sim/chunked_deque.h"

namespace streamcheck::sim {

class LabelTable {
 public:
  LabelTable() = default;
  LabelTable(const LabelTable& other) : labels_(other.labels_), last_(other.last_) { index_all(); }
  LabelTable& operator=(const LabelTable& other) {
    if (this != &other) {
      labels_ = other.labels_;
      last_ = other.last_;
      index_all();
    }
    return *this;
  }
  // Moving keeps the labels where they are, so the moved map's views stay true.
  LabelTable(LabelTable&&) noexcept = default;
  LabelTable& operator=(LabelTable&&) noexcept = default;

  /// The label's position, added if new.
  std::uint32_t intern(std::string_view label) {
    // A program's ops come in runs of one label (a loop's kernel): the last
    // label answers most calls with one comparison, not a hash.
    if (last_ < labels_.size() && same_text(labels_[last_], label)) return last_;
    if (const auto known = ids_.find(label); known != ids_.end()) return last_ = known->second;
    const auto id = static_cast<std::uint32_t>(labels_.size());
    labels_.push_back(std::string(label));
    ids_.emplace(labels_.back(), id);
    return last_ = id;
  }
  const std::string& at(std::uint32_t id) const { return labels_.at(id); }
  std::size_t size() const { return labels_.size(); }

 private:
  // A label is a kernel name of a few to a few dozen characters: compared
  // here in a loop, where std::string's == called memcmp (with ==, the
  // checker alone was 1.03-1.05x slower: docs/PERFORMANCE.md).
  static bool same_text(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i]) return false;
    return true;
  }
  void index_all() {
    ids_.clear();
    for (std::uint32_t id = 0; id < labels_.size(); ++id) ids_.emplace(labels_[id], id);
  }

  ChunkedDeque<std::string, 6> labels_;                      // every label once; never moved
  std::unordered_map<std::string_view, std::uint32_t> ids_;  // views into labels_
  std::uint32_t last_ = 0;                                   // the position intern() gave last
};

}  // namespace streamcheck::sim
