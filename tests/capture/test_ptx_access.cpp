// Kernel accesses derived from PTX (capture/ptx_access.h) and the PTX read
// out of a program's fat binary (capture/fatbin.h). nvcc's own output for
// tests/capture/ptx_kernels.cu where the toolkit is here; hand-written PTX
// for each rule of the taint, including every way a parameter is left
// undecided rather than guessed.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "capture/fatbin.h"
#include "capture/ptx_access.h"
#include "tests/temp_dir.h"

namespace streamcheck::capture {
namespace {

constexpr std::string_view kHeader = ".version 8.0\n.target sm_90\n.address_size 64\n";

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

PtxKernelTable table_of(std::string_view ptx) {
  PtxKernelTable t;
  for (const auto& k : derive_ptx_accesses(ptx)) t.add(k);
  return t;
}

/// The words of one kernel's line in PtxKernelTable::format().
std::string words_of(const PtxKernelTable& t, std::string_view symbol) {
  const PtxKernel* k = t.find(symbol);
  if (k == nullptr) return "(no kernel " + std::string(symbol) + ")";
  PtxKernelTable one;
  one.add(*k);
  std::string line = one.format();
  line = line.substr(line.find('|') + 1);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  while (!line.empty() && line.front() == ' ') line.erase(0, 1);
  return line;
}

// --- nvcc's PTX for tests/capture/ptx_kernels.cu ---------------------------

const std::filesystem::path kFixtures = STREAMCHECK_PTX_FIXTURES;

void need_fixtures() {
  if (kFixtures.empty() || !std::filesystem::exists(kFixtures / "ptx_kernels.ptx"))
    GTEST_SKIP() << "nvcc was not found at configure time: no PTX fixtures were built";
}

TEST(PtxAccess, DerivesWhatEachKernelOfNvccOutputDoes) {
  need_fixtures();
  const PtxKernelTable t = table_of(read_file(kFixtures / "ptx_kernels.ptx"));
  // A struct's pointers: read through p.in, written through p.out.
  EXPECT_EQ(words_of(t, "_Z9by_struct4Pair"), "readwrites");
  // A non-const pointer the kernel only reads is a read (the signature says read-write).
  EXPECT_EQ(words_of(t, "_Z15nonconst_readerPfS_i"), "reads writes -");
  // A pointer never dereferenced is no memory.
  EXPECT_EQ(words_of(t, "_Z6unusedPfS_"), "- writes");
  EXPECT_EQ(words_of(t, "_Z10atomic_addPiPKi"), "readwrites reads");
  // Shared memory is not a parameter's.
  EXPECT_EQ(words_of(t, "_Z13shared_reducePKfPfi"), "reads writes -");
  // Through a __noinline__ device function: its summary.
  EXPECT_EQ(words_of(t, "_Z8via_callPf"), "writes");
  // A local array, indexed by what the kernel read.
  EXPECT_EQ(words_of(t, "_Z11local_arrayPKiPf"), "reads writes");
  EXPECT_EQ(words_of(t, "plain_c"), "readwrites");
  EXPECT_EQ(words_of(t, "_Z10ldg_readerPKfPf"), "reads writes");
  // A table of pointers is read; what it points to is named by no argument.
  EXPECT_EQ(words_of(t, "_Z5chasePPfi"), "reads -");
  EXPECT_TRUE(t.find("_Z5chasePPfi")->accesses_loaded_addresses);
  EXPECT_FALSE(t.find("_Z15nonconst_readerPfS_i")->accesses_loaded_addresses);
  // The .func is not a kernel.
  EXPECT_EQ(t.find("_Z8store_itPff"), nullptr);
  EXPECT_EQ(t.size(), 10u);
}

TEST(PtxAccess, CompressedAndPlainFatBinariesCarryTheSamePtx) {
  need_fixtures();
  const std::string from_text = table_of(read_file(kFixtures / "ptx_kernels.ptx")).format();
  for (const char* program : {"ptx_kernels_compressed", "ptx_kernels_plain"}) {
    SCOPED_TRACE(program);
    const EmbeddedPtx embedded = embedded_ptx(kFixtures / program);
    ASSERT_EQ(embedded.modules.size(), 1u);
    EXPECT_EQ(embedded.undecodable, 0u);
    EXPECT_EQ(table_of(embedded.modules[0]).format(), from_text);
  }
}

// --- fat binaries and ELF files ------------------------------------------

TEST(FatBinary, AFileThatIsNotElfIsAnError) {
  const tests::FreshTempDir dir("fatbin");
  const auto path = dir.path() / "script.sh";
  std::ofstream(path) << "#!/bin/sh\necho hi\n";
  EXPECT_THROW((void)embedded_ptx(path), std::runtime_error);
  EXPECT_THROW((void)embedded_ptx("/nonexistent/streamcheck/program"), std::runtime_error);
}

TEST(FatBinary, AContainerCutShortIsAnError) {
  // magic, version 1, header 16, then a size that runs past the bytes.
  const unsigned char bytes[16] = {0x50, 0xed, 0x55, 0xba, 1, 0, 0x10, 0, 0xff, 0xff, 0, 0, 0, 0, 0, 0};
  EXPECT_THROW((void)ptx_of_fatbin(bytes, sizeof bytes), std::runtime_error);
}

/// A fat binary of one container holding one plain (uncompressed) PTX entry.
std::vector<unsigned char> fatbin_of_plain_ptx(const std::string& ptx) {
  std::vector<unsigned char> entry(64, 0);
  entry[0] = 1;   // PTX
  entry[4] = 64;  // its header's size
  const std::size_t payload = (ptx.size() + 1 + 7) / 8 * 8;
  entry[8] = static_cast<unsigned char>(payload);
  std::vector<unsigned char> bytes = {0x50, 0xed, 0x55, 0xba, 1, 0, 0x10, 0};
  const std::uint64_t body = entry.size() + payload;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<unsigned char>(body >> (8 * i)));
  bytes.insert(bytes.end(), entry.begin(), entry.end());
  bytes.insert(bytes.end(), ptx.begin(), ptx.end());
  bytes.resize(bytes.size() + payload - ptx.size(), 0);
  return bytes;
}

TEST(FatBinary, APlainPtxEntryIsReadUpToItsNul) {
  std::string ptx = std::string(kHeader) + ".visible .entry k(.param .u64 p){ret;}";
  std::vector<unsigned char> bytes = fatbin_of_plain_ptx(ptx);
  const EmbeddedPtx got = ptx_of_fatbin(bytes.data(), bytes.size());
  ASSERT_EQ(got.modules.size(), 1u);
  EXPECT_EQ(got.modules[0], ptx);
  // The same entry marked compressed in a way this reader does not know.
  bytes[16 + 40] = 0x00;
  bytes[16 + 41] = 0x20;
  const EmbeddedPtx other = ptx_of_fatbin(bytes.data(), bytes.size());
  EXPECT_TRUE(other.modules.empty());
  EXPECT_EQ(other.undecodable, 1u);
}

TEST(FatBinary, AModuleImageIsPtxTextAFatBinaryItsWrapperOrACubin) {
  // What cuModuleLoadData and its kin are handed, without a size.
  const std::string ptx = std::string(kHeader) + ".visible .entry k(.param .u64 p){ret;}";
  EmbeddedPtx got = ptx_of_module_image(ptx.c_str());
  ASSERT_EQ(got.modules.size(), 1u);
  EXPECT_EQ(got.modules[0], ptx);
  // A fat binary of one plain PTX entry: its size from its own header.
  std::vector<unsigned char> fatbin = fatbin_of_plain_ptx(ptx);
  fatbin.resize(fatbin.size() + 64, 0xee);  // what follows the image is not read
  got = ptx_of_module_image(fatbin.data());
  ASSERT_EQ(got.modules.size(), 1u);
  EXPECT_EQ(got.modules[0], ptx);
  // nvcc's wrapper: magic, version, the fat binary's address.
  unsigned char wrapper[24] = {0xb1, 0x43, 0x62, 0x46, 1, 0, 0, 0};
  const unsigned char* address = fatbin.data();
  std::memcpy(wrapper + 8, &address, sizeof address);
  got = ptx_of_module_image(wrapper);
  ASSERT_EQ(got.modules.size(), 1u);
  EXPECT_EQ(got.modules[0], ptx);
  // A cubin is ELF: no PTX in it.
  const unsigned char cubin[16] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  EXPECT_TRUE(ptx_of_module_image(cubin).modules.empty());
}

// --- the taint, rule by rule ----------------------------------------------

TEST(PtxAccess, AValueStoredToMemoryIsUndecidedWhereLoadedAddressesAreUsed) {
  // k_param_1 is spilled to local memory and loaded back as an address (as
  // a -G build does): the taint cannot follow it through memory.
  const auto t = table_of(std::string(kHeader) + R"(
.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)
{
  .local .align 8 .b8 __local_depot0[8];
  .reg .b64 %SPL;
  .reg .b64 %rd<6>;
  mov.u64 %SPL, __local_depot0;
  ld.param.u64 %rd1, [k_param_0];
  ld.param.u64 %rd2, [k_param_1];
  cvta.to.global.u64 %rd3, %rd1;
  st.global.u32 [%rd3], 1;
  st.local.u64 [%SPL], %rd2;
  ld.local.u64 %rd4, [%SPL];
  st.global.u32 [%rd4], 2;
  ret;
})");
  const PtxKernel* k = t.find("k");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->params[0].access, Access::Writes);
  EXPECT_FALSE(k->params[1].access.has_value());
  EXPECT_NE(k->params[1].undecided_because.find("stored to memory"), std::string::npos);
  EXPECT_TRUE(k->accesses_loaded_addresses);
}

TEST(PtxAccess, AValueAFunctionStoresToMemoryIsTheCallersToo) {
  // f writes its argument into a table; the kernel then stores through a
  // pointer it loads from that table: k_param_0 may be that pointer.
  const auto t = table_of(std::string(kHeader) + R"(
.func f(.param .b64 f_param_0, .param .b64 f_param_1)
{
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [f_param_0];
  ld.param.u64 %rd2, [f_param_1];
  st.global.u64 [%rd2], %rd1;
  ret;
}
.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)
{
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [k_param_0];
  ld.param.u64 %rd2, [k_param_1];
  { .param .b64 param0; .param .b64 param1; st.param.b64 [param0+0], %rd1; st.param.b64 [param1+0], %rd2;
    call.uni f, (param0, param1); }
  ld.global.u64 %rd3, [%rd2];
  st.global.u32 [%rd3], 1;
  ret;
})");
  const PtxKernel* k = t.find("k");
  ASSERT_NE(k, nullptr);
  EXPECT_FALSE(k->params[0].access.has_value());
  EXPECT_EQ(k->params[1].access, Access::ReadWrites);  // the table: written by f, read by k
}

TEST(PtxAccess, AValueStoredToMemoryIsHarmlessWhereNoLoadedAddressIsUsed) {
  // The kernel writes its scalar argument out; nothing it loads is used as
  // an address, so the stored value cannot come back as one.
  const auto t = table_of(std::string(kHeader) + R"(
.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)
{
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [k_param_0];
  ld.param.u64 %rd2, [k_param_1];
  cvta.to.global.u64 %rd3, %rd1;
  st.global.u64 [%rd3], %rd2;
  ret;
})");
  const PtxKernel* k = t.find("k");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->params[0].access, Access::Writes);
  EXPECT_EQ(k->params[1].access, Access::None);
  EXPECT_FALSE(k->accesses_loaded_addresses);
}

TEST(PtxAccess, AnArgumentOfAFunctionWithoutABodyIsUndecided) {
  const auto t = table_of(std::string(kHeader) + R"(
.extern .func ext(.param .b64 ext_param_0);
.visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1)
{
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [k_param_0];
  { // callseq 0, 0
  .param .b64 param0;
  st.param.b64 [param0+0], %rd1;
  call.uni ext, (param0);
  } // callseq 0
  ret;
})");
  const PtxKernel* k = t.find("k");
  ASSERT_NE(k, nullptr);
  EXPECT_FALSE(k->params[0].access.has_value());
  EXPECT_NE(k->params[0].undecided_because.find("ext"), std::string::npos);
  EXPECT_EQ(k->params[1].access, Access::None);
}

TEST(PtxAccess, RecursionLeavesTheArgumentUndecided) {
  const auto t = table_of(std::string(kHeader) + R"(
.func f(.param .b64 f_param_0)
{
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [f_param_0];
  st.global.u32 [%rd1], 0;
  add.s64 %rd2, %rd1, 4;
  { .param .b64 param0; st.param.b64 [param0+0], %rd2; call.uni f, (param0); }
  ret;
}
.visible .entry k(.param .u64 k_param_0)
{
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [k_param_0];
  { .param .b64 param0; st.param.b64 [param0+0], %rd1; call.uni f, (param0); }
  ret;
})");
  ASSERT_NE(t.find("k"), nullptr);
  EXPECT_FALSE(t.find("k")->params[0].access.has_value());
}

TEST(PtxAccess, AGenericLoadOfAParameterCarriesItsValue) {
  // The kernel takes its parameter's address (cvta.param) and loads the
  // pointer through it: the store goes through the parameter's value.
  const auto t = table_of(std::string(kHeader) + R"(
.visible .entry k(.param .u64 k_param_0)
{
  .reg .b64 %rd<4>;
  mov.b64 %rd1, k_param_0;
  cvta.param.u64 %rd2, %rd1;
  ld.u64 %rd3, [%rd2];
  st.u32 [%rd3], 7;
  ret;
})");
  ASSERT_NE(t.find("k"), nullptr);
  EXPECT_EQ(t.find("k")->params[0].access, Access::Writes);
}

TEST(PtxAccess, AnInstructionTheAnalysisDoesNotModelLeavesItsAddressUndecided) {
  const auto t = table_of(std::string(kHeader) + R"(
.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1, .param .u64 k_param_2)
{
  .reg .b64 %rd<4>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [k_param_0];
  ld.param.u64 %rd2, [k_param_1];
  ld.param.u64 %rd3, [k_param_2];
  cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r1], 128;
  prefetch.global.L2 [%rd2];
  cp.async.cg.shared.global [%r1], [%rd3], 16;
  ret;
})");
  const PtxKernel* k = t.find("k");
  ASSERT_NE(k, nullptr);
  EXPECT_FALSE(k->params[0].access.has_value());
  EXPECT_NE(k->params[0].undecided_because.find("cp.async.bulk"), std::string::npos);
  EXPECT_EQ(k->params[1].access, Access::None);   // a prefetch touches no data
  EXPECT_EQ(k->params[2].access, Access::Reads);  // cp.async copies from global to shared
}

TEST(PtxAccess, TaintReachesAnAccessEarlierInTheTextThroughALoop) {
  // %rd3 is defined after the store that uses it (a loop's back edge): the
  // flow-insensitive fixpoint still sees the parameter in it.
  const auto t = table_of(std::string(kHeader) + R"(
.visible .entry k(.param .u64 k_param_0)
{
  .reg .pred %p<2>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [k_param_0];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u64 %rd3, 0;
$L__BB0_1:
  @%p1 st.global.f32 [%rd3+4], 0f00000000;
  add.s64 %rd3, %rd2, 8;
  @%p1 bra $L__BB0_1;
  ret;
})");
  ASSERT_NE(t.find("k"), nullptr);
  EXPECT_EQ(t.find("k")->params[0].access, Access::Writes);
}

TEST(PtxAccess, AtomicsReadAndWriteAndVectorLoadsTaintEveryRegister) {
  const auto t = table_of(std::string(kHeader) + R"(
.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1, .param .u64 k_param_2)
{
  .reg .b64 %rd<8>;
  .reg .b32 %r<4>;
  ld.param.u64 %rd1, [k_param_0];
  ld.param.u64 %rd2, [k_param_1];
  ld.param.v2.u64 {%rd3, %rd4}, [k_param_2];
  red.global.add.u32 [%rd1], 1;
  ld.global.v2.u32 {%r1, %r2}, [%rd2];
  st.global.u32 [%rd4+8], %r1;
  ret;
})");
  const PtxKernel* k = t.find("k");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->params[0].access, Access::ReadWrites);
  EXPECT_EQ(k->params[1].access, Access::Reads);
  EXPECT_EQ(k->params[2].access, Access::Writes);
}

TEST(PtxAccess, TextThatIsNotPtxOrIsCutOffIsAnError) {
  EXPECT_THROW((void)derive_ptx_accesses("hello"), std::invalid_argument);
  EXPECT_THROW((void)derive_ptx_accesses(std::string(kHeader) + ".visible .entry k(.param .u64 p) { ret;"),
               std::invalid_argument);
}

// --- the table ------------------------------------------------------------

TEST(PtxKernelTable, ModulesJoinAndDisagreementsAreUndecided) {
  PtxKernelTable t;
  t.add({"k", {{Access::Reads, ""}, {Access::None, ""}}, false});
  t.add({"k", {{Access::Writes, ""}, {std::nullopt, "why"}}, true});
  EXPECT_EQ(words_of(t, "k"), "readwrites ?");
  EXPECT_TRUE(t.find("k")->accesses_loaded_addresses);
  t.add({"k", {{Access::Reads, ""}}, false});  // another parameter count
  EXPECT_EQ(words_of(t, "k"), "? ?");
}

TEST(PtxKernelTable, FormatAndParseRoundTrip) {
  PtxKernelTable t;
  t.add({"_Z1fPfS_", {{Access::Reads, ""}, {Access::Writes, ""}}, false});
  t.add({"g", {{Access::ReadWrites, ""}, {Access::None, ""}, {std::nullopt, "x"}}, false});
  const std::string text = t.format();
  EXPECT_EQ(text, "_Z1fPfS_ | reads writes\ng | readwrites - ?\n");
  EXPECT_EQ(PtxKernelTable::parse(text).format(), text);
  EXPECT_THROW((void)PtxKernelTable::parse("k | reads sometimes\n"), std::invalid_argument);
  EXPECT_THROW((void)PtxKernelTable::parse("k reads\n"), std::invalid_argument);
}

}  // namespace
}  // namespace streamcheck::capture
