// The GPU the `gpu` tests run on, or why there is none: a test that finds
// unavailable() set reports Skipped (GTEST_SKIP), never a vacuous pass.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "backend_cuda/cuda_backend.h"

namespace streamcheck::cuda {

class GpuDevice {
 public:
  using BackendType = CudaBackend;

  explicit GpuDevice(CudaBackendOptions options = {}) {
    auto b = CudaBackend::create(options);
    if (b) {
      backend_ = std::move(b).value();
    } else {
      unavailable_ = "no usable GPU: " + b.error().to_string();
    }
  }

  std::optional<std::string> unavailable() const { return unavailable_; }
  /// Only when unavailable() is nullopt.
  CudaBackend& backend() { return *backend_; }

 private:
  std::unique_ptr<CudaBackend> backend_;
  std::optional<std::string> unavailable_;
};

}  // namespace streamcheck::cuda
