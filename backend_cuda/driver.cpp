#include "backend_cuda/driver.h"

#include <dlfcn.h>

#include <mutex>
#include <stdexcept>

namespace streamcheck::cuda {

namespace {

struct Loaded {
  const Driver* driver = nullptr;
  std::string why;
};

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

template <class Fn>
bool resolve(GetProcAddress get_proc, void* lib, const char* name, Fn& out, std::string& why) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status{};
  // 12000: the entry points with CUDA 12.0 semantics (the _v2 variants).
  if (get_proc && get_proc(name, &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status) == CUDA_SUCCESS && fn) {
    out = reinterpret_cast<Fn>(fn);
    return true;
  }
  fn = dlsym(lib, name);
  if (!fn) {
    why = std::string("the CUDA driver has no entry point ") + name + " (driver too old? CUDA 12 or newer is needed)";
    return false;
  }
  out = reinterpret_cast<Fn>(fn);
  return true;
}

}  // namespace

class DriverLoader {
 public:
  static Loaded load() {
    Loaded result;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      result.why = std::string("no CUDA driver: dlopen(libcuda.so.1) failed: ") + dlerror();
      return result;
    }
    auto get_proc = reinterpret_cast<GetProcAddress>(dlsym(lib, "cuGetProcAddress_v2"));
    auto* d = new Driver();  // lives for the whole process, like the library
    DriverApi& a = d->api_;
    std::string why;
    const bool ok = resolve(get_proc, lib, "cuInit", a.init, why) &&
                    resolve(get_proc, lib, "cuDriverGetVersion", a.driver_get_version, why) &&
                    resolve(get_proc, lib, "cuDeviceGet", a.device_get, why) &&
                    resolve(get_proc, lib, "cuDeviceGetCount", a.device_get_count, why) &&
                    resolve(get_proc, lib, "cuDeviceGetName", a.device_get_name, why) &&
                    resolve(get_proc, lib, "cuDevicePrimaryCtxRetain", a.primary_ctx_retain, why) &&
                    resolve(get_proc, lib, "cuDevicePrimaryCtxRelease", a.primary_ctx_release, why) &&
                    resolve(get_proc, lib, "cuCtxSetCurrent", a.ctx_set_current, why) &&
                    resolve(get_proc, lib, "cuCtxGetCurrent", a.ctx_get_current, why) &&
                    resolve(get_proc, lib, "cuCtxPushCurrent", a.ctx_push_current, why) &&
                    resolve(get_proc, lib, "cuCtxPopCurrent", a.ctx_pop_current, why) &&
                    resolve(get_proc, lib, "cuCtxSynchronize", a.ctx_synchronize, why) &&
                    resolve(get_proc, lib, "cuStreamCreate", a.stream_create, why) &&
                    resolve(get_proc, lib, "cuStreamDestroy", a.stream_destroy, why) &&
                    resolve(get_proc, lib, "cuStreamSynchronize", a.stream_synchronize, why) &&
                    resolve(get_proc, lib, "cuStreamWaitEvent", a.stream_wait_event, why) &&
                    resolve(get_proc, lib, "cuStreamQuery", a.stream_query, why) &&
                    resolve(get_proc, lib, "cuEventCreate", a.event_create, why) &&
                    resolve(get_proc, lib, "cuEventDestroy", a.event_destroy, why) &&
                    resolve(get_proc, lib, "cuEventRecord", a.event_record, why) &&
                    resolve(get_proc, lib, "cuEventQuery", a.event_query, why) &&
                    resolve(get_proc, lib, "cuEventSynchronize", a.event_synchronize, why) &&
                    resolve(get_proc, lib, "cuMemPoolCreate", a.mem_pool_create, why) &&
                    resolve(get_proc, lib, "cuMemPoolDestroy", a.mem_pool_destroy, why) &&
                    resolve(get_proc, lib, "cuMemPoolSetAttribute", a.mem_pool_set_attribute, why) &&
                    resolve(get_proc, lib, "cuMemPoolTrimTo", a.mem_pool_trim_to, why) &&
                    resolve(get_proc, lib, "cuMemAllocFromPoolAsync", a.mem_alloc_from_pool_async, why) &&
                    resolve(get_proc, lib, "cuMemAllocAsync", a.mem_alloc_async, why) &&
                    resolve(get_proc, lib, "cuMemFreeAsync", a.mem_free_async, why) &&
                    resolve(get_proc, lib, "cuMemAlloc", a.mem_alloc, why) &&
                    resolve(get_proc, lib, "cuMemFree", a.mem_free, why) &&
                    resolve(get_proc, lib, "cuMemcpyDtoH", a.memcpy_dtoh, why) &&
                    resolve(get_proc, lib, "cuMemsetD8", a.memset_d8, why) &&
                    resolve(get_proc, lib, "cuMemsetD8Async", a.memset_d8_async, why) &&
                    resolve(get_proc, lib, "cuModuleLoadData", a.module_load_data, why) &&
                    resolve(get_proc, lib, "cuModuleUnload", a.module_unload, why) &&
                    resolve(get_proc, lib, "cuModuleGetFunction", a.module_get_function, why) &&
                    resolve(get_proc, lib, "cuLaunchKernel", a.launch_kernel, why) &&
                    resolve(get_proc, lib, "cuLaunchHostFunc", a.launch_host_func, why) &&
                    resolve(get_proc, lib, "cuMemHostAlloc", a.mem_host_alloc, why) &&
                    resolve(get_proc, lib, "cuMemFreeHost", a.mem_free_host, why) &&
                    resolve(get_proc, lib, "cuDeviceCanAccessPeer", a.device_can_access_peer, why) &&
                    resolve(get_proc, lib, "cuCtxEnablePeerAccess", a.ctx_enable_peer_access, why) &&
                    resolve(get_proc, lib, "cuMemPoolSetAccess", a.mem_pool_set_access, why) &&
                    resolve(get_proc, lib, "cuStreamGetCtx", a.stream_get_ctx, why) &&
                    resolve(get_proc, lib, "cuGetErrorName", a.get_error_name, why) &&
                    resolve(get_proc, lib, "cuGetErrorString", a.get_error_string, why);
    if (!ok) {
      result.why = why;
      delete d;
      return result;
    }
    if (CUresult r = a.init(0); r != CUDA_SUCCESS) {
      result.why = "cuInit failed: " + d->describe(r) + " (no usable GPU on this machine?)";
      delete d;
      return result;
    }
    int count = 0;
    if (a.device_get_count(&count) != CUDA_SUCCESS || count == 0) {
      result.why = "the CUDA driver reports no device";
      delete d;
      return result;
    }
    d->device_count_ = count;
    a.driver_get_version(&d->version_);
    result.driver = d;
    return result;
  }
};

const Driver* Driver::get(std::string* why) {
  static const Loaded loaded = DriverLoader::load();
  if (!loaded.driver && why) *why = loaded.why;
  return loaded.driver;
}

std::string Driver::describe(CUresult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api_.get_error_name) api_.get_error_name(r, &name);
  if (api_.get_error_string) api_.get_error_string(r, &text);
  std::string out = name ? name : ("CUresult " + std::to_string(static_cast<int>(r)));
  if (text) out += std::string(": ") + text;
  return out;
}

Status Driver::check(CUresult r, const char* call) const {
  if (r == CUDA_SUCCESS) return {};
  return ResourceError::driver(std::string(call) + ": " + describe(r));
}

const Driver& driver() {
  std::string why;
  const Driver* d = Driver::get(&why);
  if (!d) throw std::runtime_error("streamcheck: GPU work requested but " + why + "; run on a machine with a GPU");
  return *d;
}

}  // namespace streamcheck::cuda
