// LabelTable: each label kept once under one position, and a copied (or
// moved) table that finds its labels after the table it came from is gone.
#include "backend_sim/label_table.h"

#include <gtest/gtest.h>

#include <memory>
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

}  // namespace
}  // namespace streamcheck::sim
