// Built with --default-stream per-thread: `<<<>>>` without a stream goes to
// the thread's own default stream, which does not wait for other streams'
// work nor they for it. A non-blocking stream reads what the per-thread
// stream writes, with no event between. Expected: data race.
#include "corpus.h"

int main() {
  cudaStream_t s2;
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  float *a = nullptr, *b = nullptr;
  CHECK(cudaMalloc(&a, kElements * sizeof(float)));
  CHECK(cudaMalloc(&b, kElements * sizeof(float)));
  produce<<<kBlocks, kThreads>>>(a, kElements);            // the per-thread default stream
  consume<<<kBlocks, kThreads, 0, s2>>>(a, b, kElements);  // BUG: nothing orders it after produce
  static float host[kElements];
  CHECK(cudaMemcpy(host, b, sizeof host, cudaMemcpyDeviceToHost));  // on the per-thread stream
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaStreamDestroy(s2));
  return 0;
}
