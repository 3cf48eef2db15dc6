// SPEC §5: each mutant must be killed by the property suite. A test passes
// only if the stateful property FAILS against its mutant; RapidCheck prints
// the shrunk counterexample (the command sequence) on stdout.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <string>

#include "props/sim_protocol_property.h"

namespace streamcheck::props {
namespace {

template <MutantId Id>
void expect_killed() {
  const auto& m = info(Id);
  const bool survived = rc::check(std::string(m.name) + " (" + std::string(m.description) + ") against P1-P5, P9",
                                  [] { sim_protocol_property<MutantSet<Id>>(); });
  EXPECT_FALSE(survived) << "mutant " << m.name << " survived the property suite: " << m.description;
}

TEST(Mutants, M1) { expect_killed<MutantId::M1>(); }
TEST(Mutants, M2) { expect_killed<MutantId::M2>(); }
TEST(Mutants, M3) { expect_killed<MutantId::M3>(); }
TEST(Mutants, M4) { expect_killed<MutantId::M4>(); }
TEST(Mutants, M5) { expect_killed<MutantId::M5>(); }
TEST(Mutants, M6) { expect_killed<MutantId::M6>(); }
TEST(Mutants, M7) { expect_killed<MutantId::M7>(); }
TEST(Mutants, M8) { expect_killed<MutantId::M8>(); }
TEST(Mutants, M9) { expect_killed<MutantId::M9>(); }
TEST(Mutants, M10) { expect_killed<MutantId::M10>(); }
TEST(Mutants, M11) { expect_killed<MutantId::M11>(); }
TEST(Mutants, M12) { expect_killed<MutantId::M12>(); }
TEST(Mutants, M13) { expect_killed<MutantId::M13>(); }
TEST(Mutants, M14) { expect_killed<MutantId::M14>(); }
TEST(Mutants, M15) { expect_killed<MutantId::M15>(); }

}  // namespace
}  // namespace streamcheck::props
