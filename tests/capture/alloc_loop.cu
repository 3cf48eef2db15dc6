// A loop that allocates its buffers stream-ordered, uses them and frees them
// (cudaMallocAsync / kernels / cudaFreeAsync on one stream), as code on a
// stream-ordered allocator does. The capture names each iteration's blocks
// with the names the last one gave back (docs/CAPTURE.md), so a check of a
// long run keeps nothing an allocation. `alloc_loop [ITERATIONS]` (default 4:
// few enough for every schedule of the pool's choices to be explored).
// Expected: clean.
#include "corpus.h"

int main(int argc, char** argv) {
  const long iterations = argc > 1 ? std::atol(argv[1]) : 4;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (long i = 0; i < iterations; ++i) {
    float *a = nullptr, *b = nullptr;
    CHECK(cudaMallocAsync(&a, kElements * sizeof(float), s));
    CHECK(cudaMallocAsync(&b, kElements * sizeof(float), s));
    produce<<<kBlocks, kThreads, 0, s>>>(a, kElements);
    consume<<<kBlocks, kThreads, 0, s>>>(a, b, kElements);
    CHECK(cudaFreeAsync(a, s));
    CHECK(cudaFreeAsync(b, s));
  }
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaStreamDestroy(s));
  return 0;
}
