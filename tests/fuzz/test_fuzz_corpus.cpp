// Every input the fuzzer kept (tests/fuzz/corpus/) and every example goes
// through the fuzz target's function: a verdict or a TraceError, nothing
// else. Inputs that once crashed are added to the corpus as regressions.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "tests/fuzz/fuzz_trace.h"

namespace streamcheck::fuzz {
namespace {

std::vector<std::filesystem::path> inputs() {
  std::vector<std::filesystem::path> out;
  for (const char* dir : {STREAMCHECK_FUZZ_CORPUS, STREAMCHECK_EXAMPLES_DIR})
    for (const auto& entry : std::filesystem::directory_iterator(dir))
      if (entry.is_regular_file()) out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(FuzzCorpus, EveryInputGivesAVerdictOrATraceError) {
  const auto files = inputs();
  ASSERT_GE(files.size(), 20u) << "the corpus and the examples should not be empty";
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    SCOPED_TRACE(path.string());
    EXPECT_NO_THROW(run_trace_input(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  }
}

}  // namespace
}  // namespace streamcheck::fuzz
