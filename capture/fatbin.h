// The PTX a CUDA program carries in its ELF file (docs/CAPTURE.md): nvcc
// embeds a fat binary in the `.nv_fatbin` section, with the PTX of each
// virtual architecture it compiled for beside the cubins; CUDA 13's nvcc
// compresses it with zstd by default. `streamcheck capture` reads it before
// running the program, to derive kernel accesses (capture/ptx_access.h).
//
// The fat binary's layout is not documented by NVIDIA; what is read here was
// checked against nvcc 13.0's output (compressed and `-no-compress`): a
// container is a 16-byte header (magic 0xBA55ED50, a version, the size of
// what follows) and entries, each a header (kind 1 = PTX; its own size; the
// payload's size at 8; the compressed size at 16; flags at 40, 0x8000 =
// zstd; the uncompressed size at 56) followed by its payload.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace streamcheck::capture {

struct EmbeddedPtx {
  std::vector<std::string> modules;  // PTX texts, in the order found
  /// PTX entries this reader could not decode (a compression it does not
  /// know), counted so a caller can say what was not derived.
  std::size_t undecodable = 0;
};

/// The PTX modules in `file`'s `.nv_fatbin` sections; none for an ELF file
/// without one. Throws std::runtime_error, with the file's name, for a file
/// that cannot be read or is not ELF, and for a fat binary cut short.
EmbeddedPtx embedded_ptx(const std::filesystem::path& file);

/// The same, from the bytes of one `.nv_fatbin` section.
EmbeddedPtx ptx_of_fatbin(const unsigned char* data, std::size_t size);

/// The PTX modules of an image a program hands the driver itself
/// (cuModuleLoadData, cuModuleLoadFatBinary, cuLibraryLoadData): PTX text
/// (up to its NUL), a fat binary (its size from its own header: images
/// come without one), the wrapper nvcc puts around a fat binary (magic
/// 0x466243B1, a version, the fat binary's address), or a cubin, which is
/// ELF and carries none. Throws std::runtime_error as ptx_of_fatbin does.
EmbeddedPtx ptx_of_module_image(const void* image);

/// What an ELF program or library asks of the dynamic loader: the
/// libraries it needs (DT_NEEDED) and where it says to look for them
/// (DT_RPATH, DT_RUNPATH: colon-separated lists, as written). Empty for a
/// file without a dynamic section (a static program). Throws
/// std::runtime_error, with the file's name, as embedded_ptx does.
struct DynamicLinks {
  std::vector<std::string> needed;
  std::string rpath;
  std::string runpath;
};
DynamicLinks dynamic_links(const std::filesystem::path& file);

}  // namespace streamcheck::capture
