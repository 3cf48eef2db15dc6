// The op labels of a run (kernel names, "record e", ...), each kept once and
// named by its position. A label was kept twice: as an element of a vector
// and as the key of the map that finds its position. Here the index holds
// positions only, so a copy of the table is a copy of its parts.
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
#include <vector>

#include "backend_sim/chunked_deque.h"
#include "backend_sim/short_text.h"

namespace streamcheck::sim {

class LabelTable {
 public:
  /// The label's position, added if new; the caller holds a reference to
  /// it until release().
  std::uint32_t intern(std::string_view label) {
    // A program's ops come in runs of one label (a loop's kernel): the last
    // label answers most calls with one comparison, not a hash.
    if (last_ < labels_.size() && refs_[last_] != 0 && same_short_text(labels_[last_], label)) return retain(last_);
    const std::size_t slot = slot_of(label);
    if (slots_[slot] != kEmpty) return retain(last_ = slots_[slot] - 1);
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
    slots_[slot] = id + 1;
    if (++held_ * 2 > slots_.size()) grow();
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
    unindex(slot_of(labels_[id]));
    std::string().swap(labels_[id]);  // its heap block, if any, goes now
    unused_.push_back(id);
    --held_;
  }
  /// Label `id`: std::out_of_range for a position never given,
  /// std::logic_error for a label released (the op naming it was dropped).
  const std::string& at(std::uint32_t id) const {
    if (refs_.at(id) == 0) throw std::logic_error("LabelTable: internal error: a released label was asked for");
    return labels_[id];
  }
  /// How many labels some op record holds.
  std::size_t size() const { return held_; }

 private:
  static std::size_t hash(std::string_view label) {
    const std::uint64_t h = short_text_hash(label);
    return static_cast<std::size_t>(h ^ (h >> 29));  // the high bits into the mask's
  }
  /// The slot that holds `label`'s position, or the empty one where it
  /// would go (linear probing; the table is never more than half full).
  std::size_t slot_of(std::string_view label) const {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = hash(label) & mask;; i = (i + 1) & mask)
      if (slots_[i] == kEmpty || same_short_text(labels_[slots_[i] - 1], label)) return i;
  }
  /// Empties slot `i`, moving back each later entry of its probe run that
  /// an empty slot here would hide (deletion without tombstones).
  void unindex(std::size_t i) {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t j = (i + 1) & mask; slots_[j] != kEmpty; j = (j + 1) & mask) {
      const std::size_t home = hash(labels_[slots_[j] - 1]) & mask;
      // Entry j may move to i when its home is not in (i, j], cyclically.
      if (((j - home) & mask) >= ((j - i) & mask)) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = kEmpty;
  }
  void grow() {
    std::vector<std::uint32_t> old(slots_.size() * 2, kEmpty);
    old.swap(slots_);
    for (const std::uint32_t entry : old)
      if (entry != kEmpty) slots_[slot_of(labels_[entry - 1])] = entry;
  }

  static constexpr std::uint32_t kEmpty = 0;
  ChunkedDeque<std::string, 6> labels_;  // by position; a released one is empty
  std::vector<std::uint32_t> refs_;      // by position: the op records holding it
  std::vector<std::uint32_t> unused_;    // released positions, given again first
  /// Open addressing over the held labels: position + 1, or kEmpty. It
  /// was a std::unordered_map of views into labels_, about 50 bytes a
  /// label more, the part of a fresh-name trace's labels the map held
  /// (docs/PERFORMANCE.md, "A freed block's alloc op dropped").
  std::vector<std::uint32_t> slots_ = std::vector<std::uint32_t>(16, kEmpty);
  std::size_t held_ = 0;    // labels with a reference
  std::uint32_t last_ = 0;  // the position intern() gave last
};

}  // namespace streamcheck::sim
