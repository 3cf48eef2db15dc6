// A kernel that lives in a shared library, not in the program that launches
// it: libstreamcheck_corpus_kernels.so, linked by shared_library_readers
// with RUNPATH $ORIGIN (tests/capture/CMakeLists.txt). `streamcheck capture`
// and `streamcheck kernels` read the fat binaries of the libraries a program
// links from its own directories (docs/CAPTURE.md), so its accesses come
// from its PTX: `in` is read, though the signature says read-write.
// dlopen_library_readers opens it with dlopen instead: the capture library
// reads its PTX when its kernel is first launched.
#include <cuda_runtime.h>

__global__ void library_scale_into(float* in, float* out, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * factor;
}

void launch_library_scale_into(float* in, float* out, float factor, int n, int blocks, int threads,
                               cudaStream_t stream) {
  library_scale_into<<<blocks, threads, 0, stream>>>(in, out, factor, n);
}

// What dlopen_library_readers looks up with dlsym (a name without mangling).
extern "C" void streamcheck_corpus_launch_scale_into(float* in, float* out, float factor, int n, int blocks,
                                                     int threads, cudaStream_t stream) {
  launch_library_scale_into(in, out, factor, n, blocks, threads, stream);
}
