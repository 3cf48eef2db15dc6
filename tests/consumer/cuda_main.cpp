// Links streamcheck::cuda from the installed package and opens the GPU
// backend. Without a GPU (or driver) CudaBackend::create fails with a
// Driver error, which is the expected outcome there: exit 0 either way,
// non-zero only if the package does not build or link.
#include <cstdio>

#include "backend_cuda/cuda_backend.h"
#include "model/resource.h"

int main() {
  using namespace streamcheck;
  auto backend = cuda::CudaBackend::create();
  if (!backend) {
    std::printf("streamcheck::cuda linked; no usable GPU here: %s\n", backend.error().to_string().c_str());
    return 0;
  }
  Resource<cuda::CudaBackend> resource(*backend.value());
  std::printf("streamcheck::cuda linked; %s, %zu bytes outstanding\n", backend.value()->device_description().c_str(),
              resource.bytes_outstanding());
  return 0;
}
