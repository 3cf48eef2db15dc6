// The op labels of a run (kernel names, "record e", ...), each kept once and
// named by its position. A label was kept twice: as an element of a vector
// and as the key of the map that finds its position. Here the map's keys view
// into the stored labels, which never move (ChunkedDeque), and a copy of the
// table builds its own map over its own labels.
//
// Each op record holds a reference to its label (intern, retain), and a
// label no record holds any more goes (release): its position is given to
// the next new label. A trace with a fresh buffer name for every block
// makes two labels a block ("buffer bN", "free bN"), and a long run's
// retention pass drops the records of most of those ops; their labels were
// kept for ever, the largest single part of what such a run kept
// (docs/PERFORMANCE.md, "A freed block's alloc op dropped").
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backend_sim/chunked_deque.h"

namespace streamcheck::sim {

class LabelTable {
 public:
  LabelTable() = default;
  LabelTable(const LabelTable& other)
      : labels_(other.labels_), refs_(other.refs_), unused_(other.unused_), last_(other.last_) {
    index_all();
  }
  LabelTable& operator=(const LabelTable& other) {
    if (this != &other) {
      labels_ = other.labels_;
      refs_ = other.refs_;
      unused_ = other.unused_;
      last_ = other.last_;
      index_all();
    }
    return *this;
  }
  // Moving keeps the labels where they are, so the moved map's views stay true.
  LabelTable(LabelTable&&) noexcept = default;
  LabelTable& operator=(LabelTable&&) noexcept = default;

  /// The label's position, added if new; the caller holds a reference to
  /// it until release().
  std::uint32_t intern(std::string_view label) {
    // A program's ops come in runs of one label (a loop's kernel): the last
    // label answers most calls with one comparison, not a hash.
    if (last_ < labels_.size() && refs_[last_] != 0 && same_text(labels_[last_], label)) return retain(last_);
    if (const auto known = ids_.find(label); known != ids_.end()) return retain(last_ = known->second);
    std::uint32_t id;
    if (!unused_.empty()) {
      id = unused_.back();
      unused_.pop_back();
      labels_[id].assign(label);
    } else {
      id = static_cast<std::uint32_t>(labels_.size());
      labels_.push_back(std::string(label));
      refs_.push_back(0);
    }
    ids_.emplace(labels_[id], id);
    return retain(last_ = id);
  }
  /// One more reference to label `id` (a copy of an op record).
  std::uint32_t retain(std::uint32_t id) {
    ++refs_.at(id);
    return id;
  }
  /// Gives back a reference; the label goes with its last one.
  void release(std::uint32_t id) {
    std::uint32_t& refs = refs_.at(id);
    if (refs == 0) throw std::logic_error("LabelTable: internal error: a label released more often than it was held");
    if (--refs != 0) return;
    ids_.erase(std::string_view(labels_[id]));
    std::string().swap(labels_[id]);  // its heap block, if any, goes now
    unused_.push_back(id);
  }
  /// Label `id`: std::out_of_range for a position never given,
  /// std::logic_error for a label released (the op naming it was dropped).
  const std::string& at(std::uint32_t id) const {
    if (refs_.at(id) == 0) throw std::logic_error("LabelTable: internal error: a released label was asked for");
    return labels_[id];
  }
  /// How many labels some op record holds.
  std::size_t size() const { return ids_.size(); }

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
    for (std::uint32_t id = 0; id < labels_.size(); ++id)
      if (refs_[id] != 0) ids_.emplace(labels_[id], id);
  }

  ChunkedDeque<std::string, 6> labels_;                      // every label once; never moved
  std::vector<std::uint32_t> refs_;                          // by position: the op records holding it
  std::vector<std::uint32_t> unused_;                        // released positions, given again first
  std::unordered_map<std::string_view, std::uint32_t> ids_;  // views into labels_ (held labels only)
  std::uint32_t last_ = 0;                                   // the position intern() gave last
};

}  // namespace streamcheck::sim
