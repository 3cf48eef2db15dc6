// Two streams read one buffer at once through a kernel that takes it as a
// non-const pointer (as much code written before const-correctness does),
// each writing an output of its own; both wait for the producer, and the
// first stream waits for both before freeing. Expected: clean. The C++
// signature alone makes `in` read-write, and two unordered read-writes are
// a data race; the kernel's PTX shows it only reads (docs/CAPTURE.md), and
// `streamcheck capture --no-ptx` shows the report the signature gives
// (expected.txt: shared_input_readers@no-ptx).
#include "corpus.h"

#if defined(STREAMCHECK_KERNEL_IN_LIBRARY)
// shared_library_readers.cu: the same program, its kernel in a library.
void launch_library_scale_into(float* in, float* out, float factor, int n, int blocks, int threads,
                               cudaStream_t stream);
#define SCALE_INTO(in, out, factor, stream) \
  launch_library_scale_into(in, out, factor, kElements, kBlocks, kThreads, stream)
#elif defined(STREAMCHECK_KERNEL_OPENED)
// dlopen_library_readers.cu: the same program, its kernel in a library it
// opens with dlopen from its own directory (no DT_NEEDED entry names it).
#include <dlfcn.h>

#include <filesystem>

using LaunchScaleInto = void (*)(float*, float*, float, int, int, int, cudaStream_t);
LaunchScaleInto opened_launch_scale_into() {
  static LaunchScaleInto launch = [] {
    const auto lib = std::filesystem::read_symlink("/proc/self/exe").parent_path() / "libstreamcheck_corpus_kernels.so";
    void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    void* symbol = handle != nullptr ? dlsym(handle, "streamcheck_corpus_launch_scale_into") : nullptr;
    if (symbol == nullptr) {
      std::fprintf(stderr, "cannot open %s: %s\n", lib.c_str(), dlerror());
      std::exit(1);
    }
    return reinterpret_cast<LaunchScaleInto>(symbol);
  }();
  return launch;
}
#define SCALE_INTO(in, out, factor, stream) \
  opened_launch_scale_into()(in, out, factor, kElements, kBlocks, kThreads, stream)
#else
__global__ void scale_into(float* in, float* out, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * factor;
}
#define SCALE_INTO(in, out, factor, stream) scale_into<<<kBlocks, kThreads, 0, stream>>>(in, out, factor, kElements)
#endif

int main() {
  cudaStream_t s1, s2, s3;
  cudaEvent_t produced, done2, done3;
  CHECK(cudaStreamCreate(&s1));
  CHECK(cudaStreamCreate(&s2));
  CHECK(cudaStreamCreate(&s3));
  CHECK(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&done2, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&done3, cudaEventDisableTiming));
  float *a = nullptr, *b = nullptr, *c = nullptr;
  CHECK(cudaMallocAsync(&a, kElements * sizeof(float), s1));
  CHECK(cudaMallocAsync(&b, kElements * sizeof(float), s1));
  CHECK(cudaMallocAsync(&c, kElements * sizeof(float), s1));
  produce<<<kBlocks, kThreads, 0, s1>>>(a, kElements);
  CHECK(cudaEventRecord(produced, s1));
  CHECK(cudaStreamWaitEvent(s2, produced, 0));
  CHECK(cudaStreamWaitEvent(s3, produced, 0));
  SCALE_INTO(a, b, 2.0f, s2);
  SCALE_INTO(a, c, 3.0f, s3);
  CHECK(cudaEventRecord(done2, s2));
  CHECK(cudaEventRecord(done3, s3));
  CHECK(cudaStreamWaitEvent(s1, done2, 0));
  CHECK(cudaStreamWaitEvent(s1, done3, 0));
  CHECK(cudaFreeAsync(a, s1));
  CHECK(cudaFreeAsync(b, s1));
  CHECK(cudaFreeAsync(c, s1));
  CHECK(cudaStreamSynchronize(s1));
  CHECK(cudaEventDestroy(produced));
  CHECK(cudaEventDestroy(done2));
  CHECK(cudaEventDestroy(done3));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaStreamDestroy(s3));
  return 0;
}
