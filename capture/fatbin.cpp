#include "capture/fatbin.h"

#include <elf.h>
#include <zstd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace streamcheck::capture {

namespace {

constexpr std::uint32_t kFatbinMagic = 0xBA55ED50;
constexpr std::uint16_t kPtxKind = 1;
constexpr std::uint64_t kZstdCompressed = 0x8000;
constexpr std::uint64_t kOtherCompression = 0x2000;  // older toolkits' compression, not read here
constexpr std::size_t kContainerHeader = 16;
constexpr std::size_t kEntryHeaderMin = 64;
// A PTX module's text larger than this is taken for a misread header.
constexpr std::uint64_t kLargestModule = std::uint64_t{1} << 30;

template <typename T>
T read_at(const unsigned char* data, std::size_t offset) {
  T value;
  std::memcpy(&value, data + offset, sizeof value);
  return value;
}

std::string text_until_nul(const unsigned char* data, std::size_t size) {
  const auto* begin = reinterpret_cast<const char*>(data);
  const auto* nul = static_cast<const char*>(std::memchr(begin, '\0', size));
  return std::string(begin, nul == nullptr ? size : static_cast<std::size_t>(nul - begin));
}

}  // namespace

EmbeddedPtx ptx_of_fatbin(const unsigned char* data, std::size_t size) {
  EmbeddedPtx out;
  std::size_t container = 0;
  while (container + kContainerHeader <= size) {
    if (read_at<std::uint32_t>(data, container) != kFatbinMagic) break;  // padding after the last container
    const auto body = read_at<std::uint64_t>(data, container + 8);
    const std::size_t end = container + kContainerHeader + body;
    if (body > size || end > size) throw std::runtime_error("a fat binary container runs past its section");
    std::size_t entry = container + kContainerHeader;
    while (entry + kEntryHeaderMin <= end) {
      const auto kind = read_at<std::uint16_t>(data, entry);
      const auto header = read_at<std::uint32_t>(data, entry + 4);
      const auto payload = read_at<std::uint64_t>(data, entry + 8);
      if (header < kEntryHeaderMin || payload > end || entry + header + payload > end)
        throw std::runtime_error("a fat binary entry runs past its container");
      const unsigned char* bytes = data + entry + header;
      if (kind == kPtxKind) {
        const auto compressed = read_at<std::uint32_t>(data, entry + 16);
        const auto flags = read_at<std::uint64_t>(data, entry + 40);
        const auto uncompressed = read_at<std::uint64_t>(data, entry + 56);
        if ((flags & kZstdCompressed) != 0 && compressed <= payload && uncompressed <= kLargestModule) {
          std::string text(uncompressed, '\0');
          const std::size_t n = ZSTD_decompress(text.data(), text.size(), bytes, compressed);
          if (ZSTD_isError(n) != 0) {
            ++out.undecodable;
          } else {
            text.resize(n);
            out.modules.push_back(text_until_nul(reinterpret_cast<const unsigned char*>(text.data()), text.size()));
          }
        } else if ((flags & (kZstdCompressed | kOtherCompression)) != 0) {
          ++out.undecodable;
        } else {
          out.modules.push_back(text_until_nul(bytes, payload));
        }
      }
      entry += header + payload;
    }
    container = end;
  }
  return out;
}

namespace {

/// A 64-bit ELF file's section headers, and the bytes of any section read
/// on demand; every failure names the file.
class ElfSections {
 public:
  explicit ElfSections(const std::filesystem::path& file) : file_(file), in_(file, std::ios::binary) {
    if (!in_) throw std::runtime_error(file.string() + ": cannot be read");
    Elf64_Ehdr elf{};
    if (!in_.read(reinterpret_cast<char*>(&elf), sizeof elf) || std::memcmp(elf.e_ident, ELFMAG, SELFMAG) != 0 ||
        elf.e_ident[EI_CLASS] != ELFCLASS64)
      throw fail("not a 64-bit ELF file");
    if (elf.e_shentsize != sizeof(Elf64_Shdr) || elf.e_shstrndx >= elf.e_shnum) return;  // no sections
    headers_.resize(elf.e_shnum);
    in_.seekg(static_cast<std::streamoff>(elf.e_shoff));
    if (!in_.read(reinterpret_cast<char*>(headers_.data()),
                  static_cast<std::streamsize>(headers_.size() * sizeof(Elf64_Shdr))))
      throw fail("its section headers are cut off");
    names_ = contents(headers_[elf.e_shstrndx]);
  }
  const std::vector<Elf64_Shdr>& headers() const { return headers_; }
  std::string name(const Elf64_Shdr& s) const {
    if (s.sh_name >= names_.size()) return {};
    return text_until_nul(names_.data() + s.sh_name, names_.size() - s.sh_name);
  }
  std::vector<unsigned char> contents(const Elf64_Shdr& s) {
    if (s.sh_type == SHT_NOBITS) return {};
    std::vector<unsigned char> bytes(s.sh_size);
    in_.seekg(static_cast<std::streamoff>(s.sh_offset));
    if (!in_.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size())))
      throw fail("a section is cut off");
    return bytes;
  }
  std::runtime_error fail(const std::string& why) const { return std::runtime_error(file_.string() + ": " + why); }

 private:
  std::filesystem::path file_;
  std::ifstream in_;
  std::vector<Elf64_Shdr> headers_;
  std::vector<unsigned char> names_;
};

}  // namespace

DynamicLinks dynamic_links(const std::filesystem::path& file) {
  ElfSections elf(file);
  DynamicLinks out;
  for (const auto& s : elf.headers()) {
    if (s.sh_type != SHT_DYNAMIC) continue;
    if (s.sh_link >= elf.headers().size()) throw elf.fail("its dynamic section names no string table");
    const std::vector<unsigned char> strings = elf.contents(elf.headers()[s.sh_link]);
    const std::vector<unsigned char> bytes = elf.contents(s);
    auto text = [&](std::uint64_t offset) {
      if (offset >= strings.size()) throw elf.fail("a dynamic entry points past its string table");
      return text_until_nul(strings.data() + offset, strings.size() - offset);
    };
    for (std::size_t at = 0; at + sizeof(Elf64_Dyn) <= bytes.size(); at += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d{};
      std::memcpy(&d, bytes.data() + at, sizeof d);
      if (d.d_tag == DT_NULL) break;
      if (d.d_tag == DT_NEEDED) out.needed.push_back(text(d.d_un.d_val));
      if (d.d_tag == DT_RPATH) out.rpath = text(d.d_un.d_val);
      if (d.d_tag == DT_RUNPATH) out.runpath = text(d.d_un.d_val);
    }
  }
  return out;
}

EmbeddedPtx ptx_of_module_image(const void* image) {
  constexpr std::uint32_t kFatbinWrapperMagic = 0x466243B1;
  const auto* bytes = static_cast<const unsigned char*>(image);
  const auto magic = read_at<std::uint32_t>(bytes, 0);
  if (magic == kFatbinWrapperMagic) {
    const auto* fatbin = read_at<const unsigned char*>(bytes, 8);
    return fatbin != nullptr ? ptx_of_module_image(fatbin) : EmbeddedPtx{};
  }
  if (magic == kFatbinMagic) {
    const auto body = read_at<std::uint64_t>(bytes, 8);
    if (body > kLargestModule) throw std::runtime_error("a fat binary image whose header gives no believable size");
    return ptx_of_fatbin(bytes, kContainerHeader + body);
  }
  if (std::memcmp(bytes, ELFMAG, SELFMAG) == 0) return {};  // a cubin: machine code only
  EmbeddedPtx out;
  out.modules.emplace_back(reinterpret_cast<const char*>(bytes));
  return out;
}

EmbeddedPtx embedded_ptx(const std::filesystem::path& file) {
  ElfSections elf(file);
  auto fail = [&](const std::string& why) { return elf.fail(why); };
  EmbeddedPtx out;
  for (const auto& s : elf.headers()) {
    if (s.sh_type == SHT_NOBITS || elf.name(s) != ".nv_fatbin") continue;
    const std::vector<unsigned char> bytes = elf.contents(s);
    try {
      EmbeddedPtx found = ptx_of_fatbin(bytes.data(), bytes.size());
      for (auto& m : found.modules) out.modules.push_back(std::move(m));
      out.undecodable += found.undecodable;
    } catch (const std::runtime_error& e) {
      throw fail(e.what());
    }
  }
  return out;
}

}  // namespace streamcheck::capture
