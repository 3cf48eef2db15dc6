// Each public header of model/ has a translation unit that includes only it
// (header_<name>.cpp, linked into this binary); this test checks that no
// header in model/ lacks one.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

namespace streamcheck::header_check {
const char* header_address_map();
const char* header_backend();
const char* header_budget_resource();
const char* header_debug_guard();
const char* header_fault_injecting();
const char* header_guarded();
const char* header_kernel_access();
const char* header_launch_recorder();
const char* header_logging_resource();
const char* header_memory_resource();
const char* header_mutants();
const char* header_non_tracking_resource();
const char* header_pool_backend();
const char* header_pool_policy();
const char* header_resource();
const char* header_trace_keywords();
const char* header_types();
}  // namespace streamcheck::header_check

namespace {

std::set<std::string> checked_headers() {
  using namespace streamcheck::header_check;
  return {header_address_map(),
          header_backend(),
          header_budget_resource(),
          header_debug_guard(),
          header_fault_injecting(),
          header_guarded(),
          header_kernel_access(),
          header_launch_recorder(),
          header_logging_resource(),
          header_memory_resource(),
          header_mutants(),
          header_non_tracking_resource(),
          header_pool_backend(),
          header_pool_policy(),
          header_resource(),
          header_trace_keywords(),
          header_types()};
}

TEST(ModelHeaders, EveryHeaderHasAStandaloneTranslationUnit) {
  std::set<std::string> on_disk;
  for (const auto& entry : std::filesystem::directory_iterator(STREAMCHECK_MODEL_DIR))
    if (entry.path().extension() == ".h") on_disk.insert(entry.path().filename().string());
  ASSERT_FALSE(on_disk.empty()) << "no headers found in " << STREAMCHECK_MODEL_DIR;
  const auto checked = checked_headers();
  for (const auto& h : on_disk)
    EXPECT_TRUE(checked.contains(h)) << "model/" << h << " has no tests/model/header_" << h.substr(0, h.size() - 2)
                                     << ".cpp";
  for (const auto& h : checked) EXPECT_TRUE(on_disk.contains(h)) << h << " is checked but no longer exists";
}

}  // namespace
