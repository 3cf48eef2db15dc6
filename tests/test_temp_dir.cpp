// tests/temp_dir.h: each FreshTempDir is a new folder of its own, and it is
// gone (with what the test wrote into it) when the object is.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/temp_dir.h"

namespace streamcheck::tests {
namespace {

TEST(FreshTempDir, EachIsANewFolderRemovedWithItsFiles) {
  std::filesystem::path first_path, written;
  {
    const FreshTempDir first("temp-dir-test");
    const FreshTempDir second("temp-dir-test");
    first_path = first.path();
    EXPECT_NE(first.path(), second.path());
    EXPECT_TRUE(std::filesystem::is_directory(first.path()));
    EXPECT_TRUE(std::filesystem::is_empty(first.path())) << "a fresh folder starts empty";
    EXPECT_EQ(first.path().parent_path(), std::filesystem::temp_directory_path());
    written = first.write("a.trace", "stream s1\n");
    EXPECT_EQ(written, first.file("a.trace"));
    std::ostringstream back;
    back << std::ifstream(written).rdbuf();
    EXPECT_EQ(back.str(), "stream s1\n");
    EXPECT_FALSE(std::filesystem::exists(second.file("a.trace")));
  }
  EXPECT_FALSE(std::filesystem::exists(written));
  EXPECT_FALSE(std::filesystem::exists(first_path));
}

}  // namespace
}  // namespace streamcheck::tests
