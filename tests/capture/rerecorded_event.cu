// One event for two producers: the second record replaces the first capture,
// so s3's combine is ordered after fill on s2 only. Expected: data race.
#include "corpus.h"

__global__ void combine(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

int main() {
  cudaStream_t s1, s2, s3;
  cudaEvent_t ready;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  float *a = nullptr, *b = nullptr, *c = nullptr;
  CHECK(cudaMalloc(&a, kElements * sizeof(float)));
  CHECK(cudaMalloc(&b, kElements * sizeof(float)));
  CHECK(cudaMalloc(&c, kElements * sizeof(float)));
  produce<<<kBlocks, kThreads, 0, s1>>>(a, kElements);
  CHECK(cudaEventRecord(ready, s1));
  produce<<<kBlocks, kThreads, 0, s2>>>(b, kElements);
  CHECK(cudaEventRecord(ready, s2));  // BUG: replaces the capture of s1
  CHECK(cudaStreamWaitEvent(s3, ready, 0));
  combine<<<kBlocks, kThreads, 0, s3>>>(a, b, c, kElements);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
  CHECK(cudaEventDestroy(ready));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaStreamDestroy(s3));
  return 0;
}
