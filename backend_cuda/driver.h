// The CUDA driver API, loaded at run time (SPEC §6).
//
// Nothing here links libcuda: the library is opened with dlopen and every
// entry point is looked up with cuGetProcAddress, so a binary that uses this
// starts (and its GPU tests report skipped) on a machine with no driver.
// cuda.h is included for its types and prototypes only.
#pragma once

#include <cuda.h>

#include <memory>
#include <optional>
#include <string>

#include "model/types.h"

namespace streamcheck::cuda {

/// The entry points streamcheck uses, resolved for CUDA 12.0 semantics.
struct DriverApi {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDriverGetVersion) driver_get_version = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetCount) device_get_count = nullptr;
  decltype(&::cuDeviceGetName) device_get_name = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primary_ctx_retain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) primary_ctx_release = nullptr;
  decltype(&::cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&::cuCtxGetCurrent) ctx_get_current = nullptr;
  decltype(&::cuCtxPushCurrent) ctx_push_current = nullptr;
  decltype(&::cuCtxPopCurrent) ctx_pop_current = nullptr;
  decltype(&::cuCtxSynchronize) ctx_synchronize = nullptr;
  decltype(&::cuStreamCreate) stream_create = nullptr;
  decltype(&::cuStreamDestroy) stream_destroy = nullptr;
  decltype(&::cuStreamSynchronize) stream_synchronize = nullptr;
  decltype(&::cuStreamWaitEvent) stream_wait_event = nullptr;
  decltype(&::cuStreamQuery) stream_query = nullptr;
  decltype(&::cuEventCreate) event_create = nullptr;
  decltype(&::cuEventDestroy) event_destroy = nullptr;
  decltype(&::cuEventRecord) event_record = nullptr;
  decltype(&::cuEventQuery) event_query = nullptr;
  decltype(&::cuEventSynchronize) event_synchronize = nullptr;
  decltype(&::cuMemPoolCreate) mem_pool_create = nullptr;
  decltype(&::cuMemPoolDestroy) mem_pool_destroy = nullptr;
  decltype(&::cuMemPoolSetAttribute) mem_pool_set_attribute = nullptr;
  decltype(&::cuMemPoolTrimTo) mem_pool_trim_to = nullptr;
  decltype(&::cuMemAllocFromPoolAsync) mem_alloc_from_pool_async = nullptr;
  decltype(&::cuMemAllocAsync) mem_alloc_async = nullptr;
  decltype(&::cuMemFreeAsync) mem_free_async = nullptr;
  decltype(&::cuMemAlloc) mem_alloc = nullptr;
  decltype(&::cuMemFree) mem_free = nullptr;
  decltype(&::cuMemcpyDtoH) memcpy_dtoh = nullptr;
  decltype(&::cuMemsetD8) memset_d8 = nullptr;
  decltype(&::cuMemsetD8Async) memset_d8_async = nullptr;
  decltype(&::cuModuleLoadData) module_load_data = nullptr;
  decltype(&::cuModuleUnload) module_unload = nullptr;
  decltype(&::cuModuleGetFunction) module_get_function = nullptr;
  decltype(&::cuLaunchKernel) launch_kernel = nullptr;
  decltype(&::cuLaunchHostFunc) launch_host_func = nullptr;
  decltype(&::cuMemHostAlloc) mem_host_alloc = nullptr;
  decltype(&::cuMemFreeHost) mem_free_host = nullptr;
  // Several devices (R13 on several GPUs): peer access and pool access.
  decltype(&::cuDeviceCanAccessPeer) device_can_access_peer = nullptr;
  decltype(&::cuCtxEnablePeerAccess) ctx_enable_peer_access = nullptr;
  decltype(&::cuMemPoolSetAccess) mem_pool_set_access = nullptr;
  decltype(&::cuStreamGetCtx) stream_get_ctx = nullptr;
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuGetErrorString) get_error_string = nullptr;
};

/// The loaded driver: one per process, never unloaded.
class Driver {
 public:
  /// Loads libcuda.so.1 and calls cuInit(0) once. Returns nullptr and sets
  /// `why` when there is no usable driver (no library, no device, cuInit
  /// failed): callers skip GPU work then.
  static const Driver* get(std::string* why = nullptr);
  /// The number of GPUs the driver reports (at least 1 once get() succeeded).
  int device_count() const { return device_count_; }

  const DriverApi& api() const { return api_; }
  int version() const { return version_; }

  /// "CUDA_ERROR_X: description" for a driver result.
  std::string describe(CUresult r) const;
  /// Maps a driver result to Status: success, or Driver("<call>: <name>: ...").
  Status check(CUresult r, const char* call) const;

 private:
  friend class DriverLoader;
  Driver() = default;
  DriverApi api_{};
  int version_ = 0;
  int device_count_ = 0;
};

/// Shorthand for the process driver; throws std::runtime_error (a tool
/// failure, with what to do) when there is none. Only for code that has
/// already checked Driver::get().
const Driver& driver();

}  // namespace streamcheck::cuda
