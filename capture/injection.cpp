// libstreamcheck_capture.so: the capture layer for unmodified CUDA programs
// (SPEC §10, docs/CAPTURE.md). The CUDA driver loads it into the program
// when CUDA_INJECTION64_PATH names it, and calls InitializeInjection at
// cuInit. It subscribes to CUPTI's runtime-API callbacks (and driver-API
// ones, for the driver calls a program makes itself) and, at each call's
// exit, hands what the call did to the TraceWriter; at process exit it writes
// the trace to $STREAMCHECK_CAPTURE_OUT.
//
// Why CUPTI injection and not an LD_PRELOAD interposer: nvcc links the
// runtime statically by default, so there is no libcudart.so symbol to
// interpose, while the driver loads an injection library into every CUDA
// program; CUPTI hands us typed parameter structs and the kernel's symbol.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "capture/fatbin.h"
#include "capture/kernel_access.h"
#include "capture/ptx_access.h"
#include "capture/trace_writer.h"

namespace {

using namespace streamcheck::capture;

// __cudaLaunchKernel (CUDA 13's <<<>>> launch path) has no parameter struct
// in the generated headers; its parameters are cudaLaunchKernel's with a
// cudaKernel_t first (crt/device_functions.h).
struct KernelHandleLaunchParams {
  cudaKernel_t kernel;
  dim3 gridDim;
  dim3 blockDim;
  void** args;
  size_t sharedMem;
  cudaStream_t stream;
};
// __cudaGetKernel (the <<<>>> stub's first call): the kernel handle it
// returns for the host stub at entryFuncAddr, which tells whose file the
// kernel is in.
struct GetKernelParams {
  cudaKernel_t* kernelPtr;
  const void* entryFuncAddr;
};

/// How one parameter is read out of a launch's `args`.
struct ParamSlot {
  std::size_t size = 0;
  ParamKind kind = ParamKind::Other;
  Access access = Access::ReadWrites;
};

/// What a launch names its kernel by: the runtime's host stub, the kernel
/// handle CUDA 13's <<<>>> path launches, or a driver-API CUfunction.
enum class KernelRef { kStub, kKernelHandle, kDriverFunction };

struct KernelInfo {
  std::string signature;   // demangled, or the symbol as it is
  std::string trace_name;  // kernel_trace_name(signature)
  std::vector<ParamSlot> params;
};

using ParamInfoFn = CUresult (*)(void*, size_t, size_t*, size_t*);
// cudaGetFuncBySymbol, when the program's runtime exports it (a shared
// libcudart, as PyTorch's); a static runtime (nvcc's default) does not, and
// the library must not need it to load.
using FuncBySymbolFn = cudaError_t (*)(cudaFunction_t*, const void*);

/// Everything the callbacks share; made at injection, never destroyed (the
/// runtime may still call after exit handlers ran).
struct Capture {
  std::mutex mutex;
  TraceWriter writer{static_cast<ThreadId>(getpid())};
  KernelTable table;
  PtxKernelTable ptx;  // STREAMCHECK_PTX_KERNELS
  std::unordered_map<const void*, KernelInfo> kernels;
  ParamInfoFn func_param_info = nullptr;    // cuFuncGetParamInfo
  ParamInfoFn kernel_param_info = nullptr;  // cuKernelGetParamInfo
  FuncBySymbolFn func_by_symbol = nullptr;  // cudaGetFuncBySymbol
  /// The host stub of each kernel handle __cudaGetKernel returned.
  std::unordered_map<const void*, const void*> stub_of_kernel;
  /// ELF files whose PTX is in `ptx` (canonical names): those `streamcheck
  /// capture` read before the run (STREAMCHECK_PTX_READ) and those read here.
  std::unordered_set<std::string> ptx_files_read;
  /// Read the PTX of a launched kernel's file when no table has the kernel
  /// (off with STREAMCHECK_NO_PTX=1, as `capture --no-ptx` sets).
  bool ptx_at_run_time = true;
  bool verbose = false;  // STREAMCHECK_CAPTURE_VERBOSE
  std::string out_path;
  bool written = false;
  /// Every runtime call the program made, by callback id: the trace's
  /// footer lists them, so what was seen and what became statements can be
  /// compared.
  std::vector<std::uint64_t> calls = std::vector<std::uint64_t>(CUPTI_RUNTIME_TRACE_CBID_SIZE, 0);
};

Capture* g_capture = nullptr;
// STREAMCHECK_CAPTURE_CALLBACKS_ONLY=1: the callbacks return at once, so a
// run measures what CUPTI's callbacks cost apart from the trace writer
// (docs/PERFORMANCE.md); the trace then has no statements.
bool g_callbacks_only = false;

std::mutex& annotations_mutex() {
  static std::mutex m;
  return m;
}
KernelTable& annotations() {
  static auto* table = new KernelTable;  // never destroyed: annotations may outlive exit handlers
  return *table;
}
thread_local int t_runtime_depth = 0;  // inside a runtime call (its driver calls are its own)
thread_local bool t_inside_capture = false;

ThreadId this_thread() {
  thread_local const auto id = static_cast<ThreadId>(syscall(SYS_gettid));
  return id;
}

StreamArg stream_arg(cudaStream_t s, bool per_thread) { return StreamArg{reinterpret_cast<Handle>(s), per_thread}; }
Handle handle(const void* p) { return reinterpret_cast<Handle>(p); }

bool ends_with(const char* s, const char* suffix) {
  const std::size_t n = std::strlen(s), m = std::strlen(suffix);
  return n >= m && std::strcmp(s + n - m, suffix) == 0;
}

/// Adds the kernels of `file`'s PTX to the table, once per file; a note
/// says which file was read here, or why it could not be.
void read_ptx_of(Capture& c, const std::filesystem::path& file) {
  std::error_code ec;
  const std::string name = std::filesystem::weakly_canonical(file, ec).string();
  if (ec || !c.ptx_files_read.insert(name).second) return;
  try {
    const EmbeddedPtx embedded = embedded_ptx(name);
    std::size_t kernels = 0;
    for (const auto& module : embedded.modules)
      for (const auto& k : derive_ptx_accesses(module))
        if (c.ptx.find(k.symbol) == nullptr) {
          c.ptx.add(k);
          ++kernels;
        }
    if (kernels > 0)
      c.writer.note("kernel accesses derived from the PTX of " + name +
                    " when the program first launched a kernel of it (a library it opened, or one in the system's "
                    "directories)");
  } catch (const std::exception& e) {
    c.writer.note(std::string("PTX not read: ") + e.what());
  }
}

/// The file a loaded object came from: the program's for the program
/// itself (the loader names it ""), none for one without a file
/// (linux-vdso.so.1).
std::optional<std::filesystem::path> object_file(const char* loader_name) {
  if (loader_name == nullptr || loader_name[0] == '\0') return std::filesystem::path("/proc/self/exe");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(loader_name, ec)) return std::nullopt;
  return std::filesystem::path(loader_name);
}

/// The files of the loaded objects: every one, or (`address` given) the one
/// whose segments hold that address.
std::vector<std::filesystem::path> loaded_files(const void* address = nullptr) {
  struct Search {
    std::uintptr_t address;
    std::vector<std::filesystem::path> files;
  } search{reinterpret_cast<std::uintptr_t>(address), {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto& s = *static_cast<Search*>(data);
        bool holds = s.address == 0;
        for (int i = 0; i < info->dlpi_phnum && !holds; ++i) {
          const ElfW(Phdr)& segment = info->dlpi_phdr[i];
          const std::uintptr_t start = info->dlpi_addr + segment.p_vaddr;
          holds = segment.p_type == PT_LOAD && s.address >= start && s.address < start + segment.p_memsz;
        }
        if (!holds) return 0;
        if (auto file = object_file(info->dlpi_name)) s.files.push_back(std::move(*file));
        return s.address == 0 ? 0 : 1;  // one object holds an address
      },
      &search);
  return search.files;
}

/// For a kernel no table has: the PTX of the file its host stub is in, or,
/// where the stub is not known, of every loaded file not read yet. Covers
/// what `streamcheck capture` cannot see before the run: libraries opened
/// with dlopen, and those in the system's directories.
void read_ptx_at_launch(Capture& c, const void* stub) {
  std::vector<std::filesystem::path> files =
      stub != nullptr ? loaded_files(stub) : std::vector<std::filesystem::path>{};
  if (files.empty()) files = loaded_files();
  for (const auto& file : files) read_ptx_of(c, file);
}

/// Adds the kernels of a module the program loads itself with the driver
/// API to the PTX table, and says where they came from (or that the module
/// had no PTX, so its kernels' accesses come from their signatures).
void read_ptx_of_module(Capture& c, const void* image, const char* path, const char* api) {
  if (!c.ptx_at_run_time) return;
  const std::string from = std::string(api) + (path != nullptr ? std::string(" of ") + path : std::string());
  try {
    std::vector<std::string> modules;
    if (path != nullptr) {
      std::ifstream in(path, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (bytes.size() >= SELFMAG && std::memcmp(bytes.data(), ELFMAG, SELFMAG) == 0)
        modules = embedded_ptx(path).modules;  // a cubin (none), or an ELF file with a fat binary
      else if (bytes.size() >= 16)
        modules = ptx_of_module_image(bytes.c_str()).modules;
      else
        modules = {bytes};
    } else if (image != nullptr) {
      modules = ptx_of_module_image(image).modules;
    }
    std::size_t kernels = 0;
    for (const auto& module : modules)
      for (const auto& k : derive_ptx_accesses(module)) {
        c.ptx.add(k);
        ++kernels;
      }
    c.writer.note(kernels > 0 ? "kernel accesses derived from the PTX of a module the program loaded (" + from + ")"
                              : "a module the program loaded (" + from +
                                    ") with no PTX (a cubin): its kernels' accesses come from their signatures");
  } catch (const std::exception& e) {
    c.writer.note("PTX of a module the program loaded (" + from + ") not read: " + e.what());
  }
}

/// The parameters of a kernel, from the sidecar table or annotations, its
/// signature, and the driver's parameter sizes.
KernelInfo describe_kernel(Capture& c, const char* symbol, const void* function, KernelRef ref) {
  KernelInfo info;
  const auto demangled = demangle(symbol);
  info.signature = demangled ? *demangled : (symbol != nullptr ? symbol : "kernel");
  info.trace_name = kernel_trace_name(info.signature);
  // Parameter sizes from the driver (CUDA 12.4+), when it has them.
  std::vector<std::size_t> sizes;
  ParamInfoFn param_info = ref == KernelRef::kKernelHandle ? c.kernel_param_info : c.func_param_info;
  void* driver_function = const_cast<void*>(function);
  if (ref == KernelRef::kStub && param_info != nullptr) {
    cudaFunction_t f = nullptr;
    if (c.func_by_symbol != nullptr && c.func_by_symbol(&f, function) == cudaSuccess)
      driver_function = f;
    else
      param_info = nullptr;
  }
  for (std::size_t i = 0; param_info != nullptr && i < 4096; ++i) {
    std::size_t offset = 0, size = 0;
    if (param_info(driver_function, i, &offset, &size) != CUDA_SUCCESS) break;
    sizes.push_back(size);
  }
  const auto kinds = demangled ? parameter_kinds(*demangled) : std::nullopt;
  const std::size_t count = kinds ? kinds->size() : sizes.size();
  const std::string key = kernel_key(info.signature);
  const std::vector<Access>* listed = c.table.find(key);
  if (listed == nullptr && symbol != nullptr) listed = c.table.find(symbol);
  std::vector<Access> annotated;
  if (listed == nullptr) {
    std::lock_guard lock(annotations_mutex());
    if (const auto* a = annotations().find(key)) annotated = *a;
    if (!annotated.empty()) listed = &annotated;
  }
  if (listed != nullptr && listed->size() != count) {
    c.writer.note("a kernel listed with a number of accesses other than its parameters': its listing is not used");
    listed = nullptr;
  }
  // Below the sidecar and annotations, above the signature: what the
  // kernel's PTX does through each parameter (`streamcheck capture` derived
  // it from the program's fat binary before running it).
  const PtxKernel* derived = listed == nullptr && symbol != nullptr ? c.ptx.find(symbol) : nullptr;
  // A driver-API kernel's PTX was read when its module was loaded (it has
  // no host stub, and its module no file the loader lists).
  if (derived == nullptr && listed == nullptr && symbol != nullptr && c.ptx_at_run_time &&
      ref != KernelRef::kDriverFunction) {
    const void* stub = function;
    if (ref == KernelRef::kKernelHandle) {
      const auto it = c.stub_of_kernel.find(function);
      stub = it != c.stub_of_kernel.end() ? it->second : nullptr;
    }
    read_ptx_at_launch(c, stub);
    derived = c.ptx.find(symbol);
  }
  if (derived != nullptr && derived->params.size() != count) {
    c.writer.note("a kernel whose PTX has a number of parameters other than the driver's: its PTX is not used");
    derived = nullptr;
  }
  for (std::size_t i = 0; i < count; ++i) {
    ParamSlot slot;
    slot.kind = kinds ? (*kinds)[i] : ParamKind::Other;
    slot.size = i < sizes.size() ? sizes[i] : (slot.kind == ParamKind::Other ? 0 : sizeof(void*));
    if (listed != nullptr) {
      slot.access = (*listed)[i];
    } else if (derived != nullptr && derived->params[i].access) {
      slot.access = *derived->params[i].access;
    } else if (slot.kind == ParamKind::ConstPointer) {
      slot.access = Access::Reads;
    } else if (slot.kind == ParamKind::Scalar) {
      slot.access = Access::None;
    } else {
      slot.access = Access::ReadWrites;
      c.writer.note(slot.kind == ParamKind::Pointer
                        ? "a non-const pointer parameter taken as read-write (list the kernel in --kernels to say "
                          "it only writes)"
                        : "a parameter the signature does not type as a pointer, searched for addresses and taken "
                          "as read-write");
    }
    info.params.push_back(slot);
  }
  if (!kinds && sizes.empty()) c.writer.note("a kernel whose parameters could not be read: its accesses are unknown");
  return info;
}

void launch(Capture& c, const CUpti_CallbackData* cb, const void* function, KernelRef ref, void** args,
            StreamArg stream) {
  auto it = c.kernels.find(function);
  if (it == c.kernels.end()) it = c.kernels.emplace(function, describe_kernel(c, cb->symbolName, function, ref)).first;
  const KernelInfo& info = it->second;
  thread_local std::vector<KernelArg> found;  // reused: one allocation per thread, not per launch
  found.clear();
  for (std::size_t i = 0; i < info.params.size() && args != nullptr; ++i) {
    const ParamSlot& p = info.params[i];
    if (p.access == Access::None || args[i] == nullptr) continue;
    if (p.kind == ParamKind::Pointer || p.kind == ParamKind::ConstPointer) {
      Handle value = 0;
      std::memcpy(&value, args[i], sizeof value);
      found.push_back(KernelArg{value, p.access});
    } else {
      // A struct passed by value: every aligned word may be an address.
      for (std::size_t off = 0; off + sizeof(Handle) <= p.size; off += sizeof(Handle)) {
        Handle value = 0;
        std::memcpy(&value, static_cast<const char*>(args[i]) + off, sizeof value);
        found.push_back(KernelArg{value, p.access});
      }
    }
  }
  c.writer.launch(this_thread(), stream, info.trace_name, info.signature, found, CallSite{cb->functionName, {}});
}

/// Runtime calls the trace language cannot say, counted so the verdict can
/// name what it did not see.
bool unmodelled_runtime_call(const char* name) {
  static constexpr const char* kPrefixes[] = {"cudaMemcpy",
                                              "cudaMemset",
                                              "cudaMalloc",
                                              "cudaGraphAdd",
                                              "cudaGraphExec",
                                              "cudaMemPool",
                                              "cudaIpc",
                                              "cudaLaunchCooperative",
                                              "cudaSignalExternal",
                                              "cudaWaitExternal",
                                              "cudaMemPrefetch",
                                              "cudaStreamAttachMemAsync",
                                              "cudaStreamBeginCaptureToGraph",
                                              "cudaGraphInstantiate",
                                              "cudaStreamCopyAttributes",
                                              "cudaUserObject",
                                              "cudaGraphUpload"};
  if (std::strstr(name, "Destroy") != nullptr || std::strstr(name, "Get") != nullptr) return false;
  for (const char* prefix : kPrefixes)
    if (std::strncmp(name, prefix, std::strlen(prefix)) == 0) return true;
  return false;
}

void on_runtime_exit(Capture& c, CUpti_CallbackId id, const CUpti_CallbackData* cb) {
  const void* params = cb->functionParams;
  const ThreadId me = this_thread();
  const CallSite site{cb->functionName, {}};
  const bool pt = ends_with(cb->functionName, "_ptsz") || ends_with(cb->functionName, "_ptds");
  std::lock_guard lock(c.mutex);
  if (id < c.calls.size()) ++c.calls[id];
  if (cb->functionReturnValue == nullptr) return;
  const cudaError_t result = *static_cast<const cudaError_t*>(cb->functionReturnValue);
  if (result != cudaSuccess) {
    // A failed call did nothing (cudaEventQuery/cudaStreamQuery answering
    // "not ready" included: the program's path for that answer is its own).
    return;
  }
  // Calls without parameters: CUPTI hands no parameter struct for them.
  if (id == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020 ||
      id == CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020) {
    c.writer.sync_device(me, site);
    return;
  }
  if (params == nullptr) {
    if (!unmodelled_runtime_call(cb->functionName) && std::strncmp(cb->functionName, "__cudaLaunch", 12) != 0) return;
    c.writer.not_modelled(cb->functionName, "CUPTI gave no parameters");
    return;
  }
#define SC_PARAMS(type) const auto* p = static_cast<const type*>(params)
  switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020: {
      SC_PARAMS(cudaSetDevice_v3020_params);
      c.writer.set_device(me, p->device, site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreate_v3020: {
      SC_PARAMS(cudaStreamCreate_v3020_params);
      c.writer.stream_created(me, handle(*p->pStream), false, site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithFlags_v5000: {
      SC_PARAMS(cudaStreamCreateWithFlags_v5000_params);
      c.writer.stream_created(me, handle(*p->pStream), (p->flags & cudaStreamNonBlocking) != 0, site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithPriority_v5050: {
      SC_PARAMS(cudaStreamCreateWithPriority_v5050_params);
      c.writer.stream_created(me, handle(*p->pStream), (p->flags & cudaStreamNonBlocking) != 0, site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v5050: {
      SC_PARAMS(cudaStreamDestroy_v5050_params);
      c.writer.stream_destroyed(me, handle(p->stream), site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventCreate_v3020: {
      SC_PARAMS(cudaEventCreate_v3020_params);
      c.writer.event_created(me, handle(*p->event), site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventCreateWithFlags_v3020: {
      SC_PARAMS(cudaEventCreateWithFlags_v3020_params);
      c.writer.event_created(me, handle(*p->event), site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventDestroy_v3020: {
      SC_PARAMS(cudaEventDestroy_v3020_params);
      c.writer.event_destroyed(me, handle(p->event), site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000: {
      SC_PARAMS(cudaEventRecord_v3020_params);
      c.writer.record(me, handle(p->event), stream_arg(p->stream, pt), site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010: {
      SC_PARAMS(cudaEventRecordWithFlags_v11010_params);
      c.writer.record(me, handle(p->event), stream_arg(p->stream, pt), site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000: {
      SC_PARAMS(cudaStreamWaitEvent_v3020_params);
      c.writer.wait(me, stream_arg(p->stream, pt), handle(p->event), site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000: {
      SC_PARAMS(cudaStreamSynchronize_v3020_params);
      c.writer.sync_stream(me, stream_arg(p->stream, pt), site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020: {
      SC_PARAMS(cudaEventSynchronize_v3020_params);
      c.writer.sync_event(me, handle(p->event), site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_ptsz_v7000: {
      SC_PARAMS(cudaStreamQuery_v3020_params);
      c.writer.query_done(me, stream_arg(p->stream, pt), std::nullopt, site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020: {
      SC_PARAMS(cudaEventQuery_v3020_params);
      c.writer.query_done(me, std::nullopt, handle(p->event), site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020: {
      SC_PARAMS(cudaMalloc_v3020_params);
      c.writer.device_alloc(me, handle(*p->devPtr), p->size, std::nullopt, site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000: {
      SC_PARAMS(cudaMallocManaged_v6000_params);
      c.writer.note("managed memory taken as device memory (the host's own accesses to it are not captured)");
      c.writer.device_alloc(me, handle(*p->devPtr), p->size, std::nullopt, site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020: {
      SC_PARAMS(cudaMallocAsync_v11020_params);
      c.writer.device_alloc(me, handle(*p->devPtr), p->size, stream_arg(p->hStream, pt), site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020: {
      SC_PARAMS(cudaMallocFromPoolAsync_v11020_params);
      c.writer.note("cudaMallocFromPoolAsync taken as cudaMallocAsync (one pool per device in the model)");
      c.writer.device_alloc(me, handle(*p->ptr), p->size, stream_arg(p->stream, pt), site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020: {
      SC_PARAMS(cudaMallocHost_v3020_params);
      c.writer.host_alloc(me, handle(*p->ptr), p->size, site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020: {
      SC_PARAMS(cudaHostAlloc_v3020_params);
      c.writer.host_alloc(me, handle(*p->pHost), p->size, site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020: {
      SC_PARAMS(cudaFree_v3020_params);
      c.writer.free(me, handle(p->devPtr), std::nullopt, site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020: {
      SC_PARAMS(cudaFreeHost_v3020_params);
      c.writer.free(me, handle(p->ptr), std::nullopt, site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020: {
      SC_PARAMS(cudaFreeAsync_v11020_params);
      c.writer.free(me, handle(p->devPtr), stream_arg(p->hStream, pt), site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000: {
      SC_PARAMS(cudaLaunchKernel_v7000_params);
      launch(c, cb, p->func, KernelRef::kStub, p->args, stream_arg(p->stream, pt));
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID___cudaGetKernel_v13000: {
      SC_PARAMS(GetKernelParams);
      if (p->kernelPtr != nullptr) c.stub_of_kernel[*p->kernelPtr] = p->entryFuncAddr;
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000: {
      SC_PARAMS(KernelHandleLaunchParams);
      launch(c, cb, p->kernel, KernelRef::kKernelHandle, p->args, stream_arg(p->stream, pt));
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
      SC_PARAMS(cudaLaunchKernelExC_v11060_params);
      launch(c, cb, p->func, KernelRef::kStub, p->args, stream_arg(p->config->stream, pt));
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000: {
      SC_PARAMS(cudaMemcpyAsync_v3020_params);
      c.writer.copy(me, stream_arg(p->stream, pt), handle(p->dst), handle(p->src), p->count, false, site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000: {
      SC_PARAMS(cudaMemcpy_v3020_params);
      c.writer.copy(me, stream_arg(nullptr, pt), handle(p->dst), handle(p->src), p->count, true, site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000: {
      SC_PARAMS(cudaMemsetAsync_v3020_params);
      c.writer.memset(me, stream_arg(p->stream, pt), handle(p->devPtr), p->count, site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000: {
      SC_PARAMS(cudaMemset_v3020_params);
      c.writer.memset(me, stream_arg(nullptr, pt), handle(p->devPtr), p->count, site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_ptsz_v10000: {
      SC_PARAMS(cudaLaunchHostFunc_v10000_params);
      c.writer.host_function(me, stream_arg(p->stream, pt), site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamAddCallback_v5000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamAddCallback_ptsz_v7000: {
      SC_PARAMS(cudaStreamAddCallback_v5000_params);
      c.writer.host_function(me, stream_arg(p->stream, pt), site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_ptsz_v10000: {
      SC_PARAMS(cudaStreamBeginCapture_v10000_params);
      if (p->mode != cudaStreamCaptureModeGlobal)
        c.writer.note("a stream capture in a mode other than global, taken as global");
      c.writer.capture_begin(me, stream_arg(p->stream, pt), site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_ptsz_v10000: {
      SC_PARAMS(cudaStreamEndCapture_v10000_params);
      c.writer.capture_end(me, stream_arg(p->stream, pt), handle(*p->pGraph), site);
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040: {
      SC_PARAMS(cudaGraphInstantiate_v12000_params);
      c.writer.graph_instantiated(handle(*p->pGraphExec), handle(p->graph));
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_v12000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_ptsz_v12000: {
      SC_PARAMS(cudaGraphInstantiateWithParams_v12000_params);
      c.writer.graph_instantiated(handle(*p->pGraphExec), handle(p->graph));
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000: {
      SC_PARAMS(cudaGraphLaunch_v10000_params);
      c.writer.graph_launch(me, handle(p->graphExec), stream_arg(p->stream, pt), site);
      return;
    }
    default:
      if (unmodelled_runtime_call(cb->functionName)) c.writer.not_modelled(cb->functionName, "not modelled");
      return;
  }
#undef SC_PARAMS
}

/// A driver-API call the program made itself (not one a runtime call made):
/// the same statements its runtime counterpart writes. Calls not listed
/// here are counted as not followed, so the verdict names them.
void on_driver_exit(Capture& c, CUpti_CallbackId id, const CUpti_CallbackData* cb) {
  const void* params = cb->functionParams;
  const ThreadId me = this_thread();
  const CallSite site{cb->functionName, {}};
  const bool pt = ends_with(cb->functionName, "_ptsz") || ends_with(cb->functionName, "_ptds");
  std::lock_guard lock(c.mutex);
  if (cb->functionReturnValue == nullptr || *static_cast<const CUresult*>(cb->functionReturnValue) != CUDA_SUCCESS)
    return;  // a failed call did nothing (a query's "not ready" included)
  if (id == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize || id == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2) {
    c.writer.sync_device(me, site);
    return;
  }
  if (params == nullptr) {
    c.writer.not_modelled(cb->functionName, "driver API: CUPTI gave no parameters");
    return;
  }
#define SC_PARAMS(type) const auto* p = static_cast<const type*>(params)
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuStreamCreate: {
      SC_PARAMS(cuStreamCreate_params);
      c.writer.stream_created(me, handle(*p->phStream), (p->Flags & CU_STREAM_NON_BLOCKING) != 0, site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamCreateWithPriority: {
      SC_PARAMS(cuStreamCreateWithPriority_params);
      c.writer.stream_created(me, handle(*p->phStream), (p->flags & CU_STREAM_NON_BLOCKING) != 0, site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy_v2: {
      SC_PARAMS(cuStreamDestroy_v2_params);
      c.writer.stream_destroyed(me, handle(p->hStream), site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuEventCreate: {
      SC_PARAMS(cuEventCreate_params);
      c.writer.event_created(me, handle(*p->phEvent), site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuEventDestroy_v2: {
      SC_PARAMS(cuEventDestroy_v2_params);
      c.writer.event_destroyed(me, handle(p->hEvent), site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecord:
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz: {
      SC_PARAMS(cuEventRecord_params);
      c.writer.record(me, handle(p->hEvent), stream_arg(p->hStream, pt), site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz: {
      SC_PARAMS(cuEventRecordWithFlags_params);
      c.writer.record(me, handle(p->hEvent), stream_arg(p->hStream, pt), site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz: {
      SC_PARAMS(cuStreamWaitEvent_params);
      c.writer.wait(me, stream_arg(p->hStream, pt), handle(p->hEvent), site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz: {
      SC_PARAMS(cuStreamSynchronize_params);
      c.writer.sync_stream(me, stream_arg(p->hStream, pt), site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize: {
      SC_PARAMS(cuEventSynchronize_params);
      c.writer.sync_event(me, handle(p->hEvent), site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamQuery:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamQuery_ptsz: {
      SC_PARAMS(cuStreamQuery_params);
      c.writer.query_done(me, stream_arg(p->hStream, pt), std::nullopt, site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuEventQuery: {
      SC_PARAMS(cuEventQuery_params);
      c.writer.query_done(me, std::nullopt, handle(p->hEvent), site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
      SC_PARAMS(cuMemAlloc_v2_params);
      c.writer.device_alloc(me, static_cast<Handle>(*p->dptr), p->bytesize, std::nullopt, site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
      SC_PARAMS(cuMemAllocAsync_params);
      c.writer.device_alloc(me, static_cast<Handle>(*p->dptr), p->bytesize, stream_arg(p->hStream, pt), site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
      SC_PARAMS(cuMemAllocFromPoolAsync_params);
      c.writer.note("cuMemAllocFromPoolAsync taken as cuMemAllocAsync (one pool per device in the model)");
      c.writer.device_alloc(me, static_cast<Handle>(*p->dptr), p->bytesize, stream_arg(p->hStream, pt), site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2: {
      SC_PARAMS(cuMemAllocHost_v2_params);
      c.writer.host_alloc(me, handle(*p->pp), p->bytesize, site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc: {
      SC_PARAMS(cuMemHostAlloc_params);
      c.writer.host_alloc(me, handle(*p->pp), p->bytesize, site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2: {
      SC_PARAMS(cuMemFree_v2_params);
      c.writer.free(me, static_cast<Handle>(p->dptr), std::nullopt, site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost: {
      SC_PARAMS(cuMemFreeHost_params);
      c.writer.free(me, handle(p->p), std::nullopt, site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz: {
      SC_PARAMS(cuMemFreeAsync_params);
      c.writer.free(me, static_cast<Handle>(p->dptr), stream_arg(p->hStream, pt), site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      SC_PARAMS(cuLaunchKernel_params);
      if (p->kernelParams == nullptr && p->extra != nullptr) {
        c.writer.not_modelled(cb->functionName, "its arguments came packed in `extra`: the launch is not followed");
        return;
      }
      launch(c, cb, p->f, KernelRef::kDriverFunction, p->kernelParams, stream_arg(p->hStream, pt));
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      SC_PARAMS(cuLaunchKernelEx_params);
      if (p->kernelParams == nullptr && p->extra != nullptr) {
        c.writer.not_modelled(cb->functionName, "its arguments came packed in `extra`: the launch is not followed");
        return;
      }
      launch(c, cb, p->f, KernelRef::kDriverFunction, p->kernelParams, stream_arg(p->config->hStream, pt));
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz: {
      SC_PARAMS(cuMemcpyHtoDAsync_v2_params);
      c.writer.copy(me, stream_arg(p->hStream, pt), static_cast<Handle>(p->dstDevice), handle(p->srcHost), p->ByteCount,
                    false, site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz: {
      SC_PARAMS(cuMemcpyDtoHAsync_v2_params);
      c.writer.copy(me, stream_arg(p->hStream, pt), handle(p->dstHost), static_cast<Handle>(p->srcDevice), p->ByteCount,
                    false, site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz: {
      SC_PARAMS(cuMemcpyDtoDAsync_v2_params);
      c.writer.copy(me, stream_arg(p->hStream, pt), static_cast<Handle>(p->dstDevice),
                    static_cast<Handle>(p->srcDevice), p->ByteCount, false, site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz: {
      SC_PARAMS(cuMemcpyAsync_params);
      c.writer.copy(me, stream_arg(p->hStream, pt), static_cast<Handle>(p->dst), static_cast<Handle>(p->src),
                    p->ByteCount, false, site);
      return;
    }
    // The synchronous copies: on the default stream, returning once done.
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds: {
      SC_PARAMS(cuMemcpyHtoD_v2_params);
      c.writer.copy(me, stream_arg(nullptr, pt), static_cast<Handle>(p->dstDevice), handle(p->srcHost), p->ByteCount,
                    true, site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds: {
      SC_PARAMS(cuMemcpyDtoH_v2_params);
      c.writer.copy(me, stream_arg(nullptr, pt), handle(p->dstHost), static_cast<Handle>(p->srcDevice), p->ByteCount,
                    true, site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds: {
      SC_PARAMS(cuMemcpyDtoD_v2_params);
      c.writer.copy(me, stream_arg(nullptr, pt), static_cast<Handle>(p->dstDevice), static_cast<Handle>(p->srcDevice),
                    p->ByteCount, true, site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds: {
      SC_PARAMS(cuMemcpy_params);
      c.writer.copy(me, stream_arg(nullptr, pt), static_cast<Handle>(p->dst), static_cast<Handle>(p->src), p->ByteCount,
                    true, site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz: {
      SC_PARAMS(cuMemsetD8Async_params);
      c.writer.memset(me, stream_arg(p->hStream, pt), static_cast<Handle>(p->dstDevice), p->N, site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz: {
      SC_PARAMS(cuMemsetD16Async_params);
      c.writer.memset(me, stream_arg(p->hStream, pt), static_cast<Handle>(p->dstDevice), 2 * p->N, site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz: {
      SC_PARAMS(cuMemsetD32Async_params);
      c.writer.memset(me, stream_arg(p->hStream, pt), static_cast<Handle>(p->dstDevice), 4 * p->N, site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds: {
      SC_PARAMS(cuMemsetD8_v2_params);
      c.writer.memset(me, stream_arg(nullptr, pt), static_cast<Handle>(p->dstDevice), p->N, site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds: {
      SC_PARAMS(cuMemsetD16_v2_params);
      c.writer.memset(me, stream_arg(nullptr, pt), static_cast<Handle>(p->dstDevice), 2 * p->N, site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds: {
      SC_PARAMS(cuMemsetD32_v2_params);
      c.writer.memset(me, stream_arg(nullptr, pt), static_cast<Handle>(p->dstDevice), 4 * p->N, site);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc_ptsz: {
      SC_PARAMS(cuLaunchHostFunc_params);
      c.writer.host_function(me, stream_arg(p->hStream, pt), site);
      return;
    }
    // Modules: nothing runs, but their kernels' PTX says what they access.
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoad: {
      SC_PARAMS(cuModuleLoad_params);
      read_ptx_of_module(c, nullptr, p->fname, "cuModuleLoad");
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData: {
      SC_PARAMS(cuModuleLoadData_params);
      read_ptx_of_module(c, p->image, nullptr, "cuModuleLoadData");
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx: {
      SC_PARAMS(cuModuleLoadDataEx_params);
      read_ptx_of_module(c, p->image, nullptr, "cuModuleLoadDataEx");
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary: {
      SC_PARAMS(cuModuleLoadFatBinary_params);
      read_ptx_of_module(c, p->fatCubin, nullptr, "cuModuleLoadFatBinary");
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData: {
      SC_PARAMS(cuLibraryLoadData_params);
      read_ptx_of_module(c, p->code, nullptr, "cuLibraryLoadData");
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadFromFile: {
      SC_PARAMS(cuLibraryLoadFromFile_params);
      read_ptx_of_module(c, nullptr, p->fileName, "cuLibraryLoadFromFile");
      return;
    }
    default:
      c.writer.not_modelled(cb->functionName, "driver API: not followed");
      return;
  }
#undef SC_PARAMS
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  Capture* c = g_capture;
  if (c == nullptr || t_inside_capture) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (cb->callbackSite == CUPTI_API_ENTER) {
      ++t_runtime_depth;
      return;
    }
    --t_runtime_depth;
    if (t_runtime_depth > 0 || g_callbacks_only) return;  // a runtime call made by another runtime call
    t_inside_capture = true;
    on_runtime_exit(*c, id, cb);
    t_inside_capture = false;
    return;
  }
  // Driver calls the program made itself (not inside a runtime call): the
  // statements of their runtime counterparts, or counted as not followed.
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cb->callbackSite == CUPTI_API_EXIT && t_runtime_depth == 0 &&
      !g_callbacks_only) {
    t_inside_capture = true;
    on_driver_exit(*c, id, cb);
    t_inside_capture = false;
  }
}

std::string program_name() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (char& ch : text)
    if (ch == '\0') ch = ' ';
  while (!text.empty() && text.back() == ' ') text.pop_back();
  for (char& ch : text)
    if (ch == '\n') ch = ' ';
  return text;
}

void write_trace() {
  Capture* c = g_capture;
  if (c == nullptr) return;
  std::lock_guard lock(c->mutex);
  if (c->written) return;
  c->written = true;
  std::string text = c->writer.text(program_name());
  for (CUpti_CallbackId id = 0; id < c->calls.size(); ++id) {
    const char* name = nullptr;
    if (c->calls[id] == 0 || cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, id, &name) != CUPTI_SUCCESS) continue;
    text +=
        "# runtime calls: " + std::string(name != nullptr ? name : "?") + " x" + std::to_string(c->calls[id]) + "\n";
  }
  text += "# end of capture\n";
  // Never over another process's trace: when TRACE is there already (a
  // program run before this one by the same shell wrote it), this one is
  // TRACE.PID.
  std::FILE* f = std::fopen(c->out_path.c_str(), "wx");
  if (f == nullptr && errno == EEXIST) {
    c->out_path += "." + std::to_string(getpid());
    f = std::fopen(c->out_path.c_str(), "w");
  }
  if (f == nullptr || std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fclose(f) != 0) {
    std::fprintf(stderr, "streamcheck capture: cannot write the trace to %s: %s\n", c->out_path.c_str(),
                 std::strerror(errno));
    return;
  }
  if (c->verbose)
    std::fprintf(stderr, "streamcheck capture: wrote %llu statements to %s\n",
                 static_cast<unsigned long long>(c->writer.statements()), c->out_path.c_str());
}

/// A forked child shares the parent's capture in memory but not its run
/// (CUDA does not work across fork): it writes nothing, so the parent's trace
/// is the parent's alone.
void forget_capture_in_child() { g_capture = nullptr; }

void enable_driver_callbacks(CUpti_SubscriberHandle subscriber) {
  // Only the driver calls that order work, touch memory or load kernels: a
  // program's own use of them is followed (on_driver_exit) or named as not.
  static constexpr const char* kOrdering[] = {
      "cuLaunch",         "cuMemAlloc",         "cuMemFree",     "cuMemHostAlloc",       "cuStreamWaitEvent",
      "cuEventRecord",    "cuMemcpy",           "cuMemset",      "cuStreamCreate",       "cuStreamDestroy",
      "cuEventCreate",    "cuEventDestroy",     "cuGraphLaunch", "cuStreamBeginCapture", "cuStreamSynchronize",
      "cuCtxSynchronize", "cuEventSynchronize", "cuStreamQuery", "cuEventQuery",         "cuModuleLoad",
      "cuLibraryLoad"};
  for (CUpti_CallbackId id = 0; id < CUPTI_DRIVER_TRACE_CBID_SIZE; ++id) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, id, &name) != CUPTI_SUCCESS || name == nullptr) continue;
    for (const char* prefix : kOrdering)
      if (std::strncmp(name, prefix, std::strlen(prefix)) == 0) {
        cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
        break;
      }
  }
}

/// Parses the file the environment variable `name` names into `table`;
/// false (and a message) for a malformed file, which `streamcheck capture`
/// checked before the run, so only a hand-set variable gets here.
template <typename Table>
bool load_table_from_env(const char* name, Table& table) {
  const char* path = std::getenv(name);
  if (path == nullptr || *path == '\0') return true;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  try {
    table = Table::parse(text.str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "streamcheck capture: %s:%s\n", path, e.what());
    return false;
  }
  return true;
}

}  // namespace

extern "C" {

/// Called by annotations compiled into the program (streamcheck/annotate.h),
/// possibly before the driver loads the capture: kept apart from the sidecar
/// table, which wins.
__attribute__((visibility("default"))) int streamcheck_capture_annotate(const char* kernel, const char* accesses) {
  try {
    auto list = KernelTable::parse_accesses(accesses);
    std::lock_guard lock(annotations_mutex());
    if (annotations().find(kernel) == nullptr) annotations().add(kernel, std::move(list));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "streamcheck annotate: kernel %s: %s\n", kernel, e.what());
    return 1;
  }
}

/// The driver calls this at cuInit when CUDA_INJECTION64_PATH names us.
__attribute__((visibility("default"))) int InitializeInjection(void) {
  if (g_capture != nullptr) return 1;
  auto* c = new Capture;
  const char* out = std::getenv("STREAMCHECK_CAPTURE_OUT");
  c->out_path = out != nullptr && *out != '\0' ? out : "streamcheck-capture-" + std::to_string(getpid()) + ".trace";
  // The first process captured names itself; a process it starts (which
  // inherits the environment) writes TRACE.PID instead of overwriting TRACE.
  const std::string pid = std::to_string(getpid());
  if (const char* root = std::getenv("STREAMCHECK_CAPTURE_ROOT_PID"); root == nullptr)
    setenv("STREAMCHECK_CAPTURE_ROOT_PID", pid.c_str(), 1);
  else if (pid != root)
    c->out_path += "." + pid;
  if (!load_table_from_env("STREAMCHECK_KERNELS", c->table) || !load_table_from_env("STREAMCHECK_PTX_KERNELS", c->ptx))
    return 0;
  if (const char* read = std::getenv("STREAMCHECK_PTX_READ"); read != nullptr) {
    std::string_view list(read);
    while (!list.empty()) {
      const auto end = std::min(list.find(':'), list.size());
      if (end > 0) c->ptx_files_read.emplace(list.substr(0, end));
      list.remove_prefix(std::min(end + 1, list.size()));
    }
  }
  const char* no_ptx = std::getenv("STREAMCHECK_NO_PTX");
  c->ptx_at_run_time = no_ptx == nullptr || std::strcmp(no_ptx, "1") != 0;
  // The driver is loaded (it is loading us): find what it has by name, so
  // that an older driver without them still captures.
  c->verbose = std::getenv("STREAMCHECK_CAPTURE_VERBOSE") != nullptr;
  c->func_by_symbol = reinterpret_cast<FuncBySymbolFn>(dlsym(RTLD_DEFAULT, "cudaGetFuncBySymbol"));
  if (void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)) {
    c->func_param_info = reinterpret_cast<ParamInfoFn>(dlsym(cuda, "cuFuncGetParamInfo"));
    c->kernel_param_info = reinterpret_cast<ParamInfoFn>(dlsym(cuda, "cuKernelGetParamInfo"));
  }
  CUpti_SubscriberHandle subscriber = nullptr;
  if (cuptiSubscribe(&subscriber, reinterpret_cast<CUpti_CallbackFunc>(on_callback), nullptr) != CUPTI_SUCCESS) {
    std::fprintf(stderr,
                 "streamcheck capture: cuptiSubscribe failed (another CUPTI client such as a profiler or "
                 "compute-sanitizer may hold it): nothing is captured\n");
    return 0;
  }
  cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
  // Watching the driver API costs two more callbacks a call (the runtime's
  // own driver calls fire them too); STREAMCHECK_CAPTURE_DRIVER=0 trades that
  // watch for speed, and the trace says so.
  const char* driver = std::getenv("STREAMCHECK_CAPTURE_DRIVER");
  if (driver != nullptr && std::strcmp(driver, "0") == 0)
    c->writer.not_modelled("driver API calls the program makes itself", "not watched: STREAMCHECK_CAPTURE_DRIVER=0");
  else
    enable_driver_callbacks(subscriber);
  const char* only = std::getenv("STREAMCHECK_CAPTURE_CALLBACKS_ONLY");
  g_callbacks_only = only != nullptr && std::strcmp(only, "1") == 0;
  if (g_callbacks_only) c->writer.not_modelled("every call", "STREAMCHECK_CAPTURE_CALLBACKS_ONLY=1 (a measurement)");
  g_capture = c;
  std::atexit(write_trace);
  pthread_atfork(nullptr, nullptr, forget_capture_in_child);
  if (c->verbose)
    std::fprintf(stderr, "streamcheck capture: injected into process %d, writing %s at exit\n",
                 static_cast<int>(getpid()), c->out_path.c_str());
  return 1;
}

}  // extern "C"
