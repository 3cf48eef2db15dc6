// Kernel access annotations for `streamcheck capture` (docs/CAPTURE.md).
//
//   #include <streamcheck/annotate.h>
//   __global__ void scale(const float* in, float* out, int n);
//   STREAMCHECK_KERNEL(scale, "reads writes -");
//
// One word per parameter: reads, writes, readwrites, or - (not memory). The
// name is the kernel's as C++ spells it without parameters (`ns::scale` or
// `scale<float>` for an instance of a template; one whose arguments hold a
// comma cannot be a macro argument: list it in the --kernels file instead). Without the capture the
// annotation costs one getenv at start-up and does nothing; under it, it
// tells the capture library what the kernel's signature cannot (a pointer
// that is only written, a struct that carries pointers). A listing in the
// sidecar file (`--kernels`) wins over an annotation.
#pragma once

#include <dlfcn.h>

#include <cstdlib>

namespace streamcheck::annotate {

/// Hands one annotation to the capture library, loading it first when the
/// driver has not yet (annotations run before main, the driver at the first
/// CUDA call); both load the same file, so it is the same library.
inline int register_kernel(const char* kernel, const char* accesses) {
  using Annotate = int (*)(const char*, const char*);
  void* symbol = dlsym(RTLD_DEFAULT, "streamcheck_capture_annotate");
  if (symbol == nullptr) {
    const char* library = std::getenv("CUDA_INJECTION64_PATH");
    if (library == nullptr || *library == '\0') return 0;
    void* handle = dlopen(library, RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr) return 0;
    symbol = dlsym(handle, "streamcheck_capture_annotate");
    if (symbol == nullptr) return 0;
  }
  return reinterpret_cast<Annotate>(symbol)(kernel, accesses);
}

}  // namespace streamcheck::annotate

#define STREAMCHECK_ANNOTATE_CAT2(a, b) a##b
#define STREAMCHECK_ANNOTATE_CAT(a, b) STREAMCHECK_ANNOTATE_CAT2(a, b)
/// Declares what each parameter of `kernel` does to memory.
#define STREAMCHECK_KERNEL(kernel, accesses)                                                      \
  [[maybe_unused]] static const int STREAMCHECK_ANNOTATE_CAT(streamcheck_annotation_, __LINE__) = \
      ::streamcheck::annotate::register_kernel(#kernel, accesses)
