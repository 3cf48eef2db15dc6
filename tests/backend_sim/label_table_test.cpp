// LabelTable: each label kept once under one position, and a copied (or
// moved) table that finds its labels after the table it came from is gone;
// a label goes with the last reference to it, and its position is given to
// the next new label.
#include "backend_sim/label_table.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>

namespace streamcheck::sim {
namespace {

// Longer than a std::string holds inline, so each lives in a heap block of
// its own: a view left pointing into a freed one would not find it again.
const std::string kLongA = "fused_attention_forward_kernel_bf16_causal_tile128x64";
const std::string kLongB = "layer_norm_backward_weight_grad_kernel_fp32_vectorized";

TEST(LabelTable, GivesALabelOnePositionHoweverOftenItComes) {
  LabelTable t;
  const auto a = t.intern(kLongA);
  const auto b = t.intern(kLongB);
  EXPECT_NE(a, b);
  EXPECT_EQ(t.intern(kLongA), a);                                   // not the last one interned: found by the map
  EXPECT_EQ(t.intern(kLongA), a);                                   // the last one
  EXPECT_EQ(t.intern(std::string_view(kLongB).substr(0, 10)), 2u);  // a prefix is another label
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.at(a), kLongA);
  EXPECT_EQ(t.at(b), kLongB);
  EXPECT_THROW((void)t.at(3), std::out_of_range);
}

TEST(LabelTable, ACopyFindsItsLabelsAfterTheOriginalIsGone) {
  auto original = std::make_unique<LabelTable>();
  const auto a = original->intern(kLongA);
  const auto b = original->intern(kLongB);
  LabelTable copied(*original);
  LabelTable assigned;
  assigned.intern("other");
  assigned = *original;
  original.reset();
  for (LabelTable* t : {&copied, &assigned}) {
    EXPECT_EQ(t->intern(kLongA), a);
    EXPECT_EQ(t->intern(kLongB), b);
    EXPECT_EQ(t->size(), 2u);
    EXPECT_EQ(t->at(a), kLongA);
  }
}

TEST(LabelTable, AMovedTableKeepsItsLabels) {
  LabelTable from;
  const auto a = from.intern(kLongA);
  const auto b = from.intern(kLongB);
  LabelTable moved(std::move(from));
  EXPECT_EQ(moved.intern(kLongB), b);
  EXPECT_EQ(moved.intern(kLongA), a);
  EXPECT_EQ(moved.size(), 2u);
}

TEST(LabelTable, ALabelGoesWithItsLastReferenceAndItsPositionIsGivenAgain) {
  LabelTable t;
  const auto a = t.intern(kLongA);
  EXPECT_EQ(t.intern(kLongA), a);  // two references (two op records)
  const auto b = t.intern(kLongB);
  t.release(a);
  EXPECT_EQ(t.at(a), kLongA);  // one left
  EXPECT_EQ(t.size(), 2u);
  t.release(a);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_THROW((void)t.at(a), std::logic_error);  // a dropped op's label: an error, never another label
  EXPECT_THROW(t.release(a), std::logic_error);
  EXPECT_EQ(t.at(b), kLongB);
  const auto c = t.intern("launch k");
  EXPECT_EQ(c, a);  // the position again
  EXPECT_EQ(t.at(c), "launch k");
  EXPECT_NE(t.intern(kLongA), a);  // a new position: the old one holds another label now
  EXPECT_EQ(t.size(), 3u);
}

TEST(LabelTable, TheLastLabelReleasedIsNotFoundAgainByTheFastPath) {
  LabelTable t;
  const auto a = t.intern(kLongA);
  t.release(a);  // a was the last label interned
  const auto again = t.intern(kLongA);
  EXPECT_EQ(t.at(again), kLongA);
  t.release(again);
  EXPECT_EQ(t.size(), 0u);  // one reference, given back: nothing held
  EXPECT_THROW(t.release(again), std::logic_error);
  // A released position's text is empty: the empty label is a new one.
  const auto empty = t.intern("");
  const auto other = t.intern("other");
  EXPECT_NE(empty, other);
  EXPECT_EQ(t.at(empty), "");
  EXPECT_EQ(t.at(other), "other");
}

TEST(LabelTable, ACopyKeepsTheReferencesAndTheReleasedPositions) {
  LabelTable t;
  const auto a = t.intern(kLongA);
  const auto b = t.intern(kLongB);
  t.release(a);
  const LabelTable copied(t);
  EXPECT_EQ(copied.size(), 1u);
  EXPECT_THROW((void)copied.at(a), std::logic_error);
  EXPECT_EQ(copied.at(b), kLongB);
  LabelTable again(copied);
  EXPECT_EQ(again.intern("free b1"), a);  // the released position, given again in the copy
  again.release(b);
  EXPECT_THROW((void)again.at(b), std::logic_error);
  EXPECT_EQ(copied.at(b), kLongB);  // the copy it came from still holds b
}

TEST(LabelTable, AgreesWithAMapOverManyInternsAndReleases) {
  // Labels interned and released at random: the index (open addressing,
  // entries moved back on release) must find each held label at its
  // position, whatever collided with it and went before.
  LabelTable t;
  std::map<std::string, std::pair<std::uint32_t, std::uint32_t>> held;  // label -> position, references
  std::mt19937 random(7);
  for (int step = 0; step < 50000; ++step) {
    const std::string label = "free b" + std::to_string(random() % 700);
    auto it = held.find(label);
    if (it != held.end() && random() % 2 == 0) {
      t.release(it->second.first);
      if (--it->second.second == 0) held.erase(it);
    } else {
      const std::uint32_t id = t.intern(label);
      if (it != held.end()) {
        ASSERT_EQ(id, it->second.first) << label;
        ++it->second.second;
      } else {
        held.emplace(label, std::make_pair(id, 1u));
      }
    }
    if (step % 97 == 0) {
      ASSERT_EQ(t.size(), held.size());
      for (const auto& [text, entry] : held) ASSERT_EQ(t.at(entry.first), text);
    }
  }
}

}  // namespace
}  // namespace streamcheck::sim
